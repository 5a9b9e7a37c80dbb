/**
 * Packages of optional features: peer dependencies marked optional in package.json, so `npm install keel` leaves them
 * out (the AWS SDK and the MCP SDK's server-side dependencies are most of the production tree; a Redis client only a fleet needs). A feature loads its
 * package when it is used; when the package is missing, the operator gets one line saying what to install.
 */
import { createRequire } from 'node:module';

/** Each optional package, the feature that needs it and the exact version Keel is tested with (package.json). */
export const OPTIONAL_PACKAGES = {
  '@aws-sdk/client-s3': { feature: 'The S3 payload store', version: '3.1175.0' },
  '@temporalio/external-storage-s3': { feature: 'The S3 payload store', version: '1.22.0' },
  '@temporalio/external-storage-s3-aws-sdk': { feature: 'The S3 payload store', version: '1.22.0' },
  '@modelcontextprotocol/sdk': { feature: 'MCP support (mcpServers, --mcp)', version: '1.32.2' },
  ioredis: { feature: 'The fleet stream transport (stream: { redis }, $KEEL_STREAM_REDIS_URL)', version: '6.1.0' },
} as const;

export type OptionalPackage = keyof typeof OPTIONAL_PACKAGES;

/** Thrown when a feature is used but its optional package is not installed; the message says what to install. */
export class MissingOptionalPackageError extends Error {
  override name = 'MissingOptionalPackageError';
  constructor(pkg: OptionalPackage, cause: unknown) {
    const { feature, version } = OPTIONAL_PACKAGES[pkg];
    super(`${feature} needs ${pkg}: npm install ${pkg}@${version}`, { cause });
  }
}

/** Whether `err` says that `pkg` itself (not something inside it) could not be found. */
function isNotFound(err: unknown, pkg: string): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') return false;
  const message = (err as Error).message;
  return message.includes(`'${pkg}'`) || message.includes(`'${pkg}/`);
}

const requireCjs = createRequire(import.meta.url);

/**
 * `require(specifier)` of a CommonJS optional package (`specifier` is `pkg` or a subpath of it), or
 * {@link MissingOptionalPackageError} when `pkg` is not installed. `load` is the loader (a test points it at a name
 * that is missing).
 */
export function requireOptional<T>(
  pkg: OptionalPackage,
  specifier: string = pkg,
  load: (specifier: string) => unknown = requireCjs,
): T {
  try {
    return load(specifier) as T;
  } catch (err) {
    throw isNotFound(err, pkg) ? new MissingOptionalPackageError(pkg, err) : err;
  }
}

/**
 * `import(specifier)` of an ES module of an optional package (`specifier` is `pkg` or a subpath of it), or
 * {@link MissingOptionalPackageError} when `pkg` is not installed. `load` is the loader, as for {@link requireOptional}.
 */
export async function importOptional<T>(
  pkg: OptionalPackage,
  specifier: string,
  load: (specifier: string) => Promise<unknown> = (s) => import(s),
): Promise<T> {
  try {
    return (await load(specifier)) as T;
  } catch (err) {
    throw isNotFound(err, pkg) ? new MissingOptionalPackageError(pkg, err) : err;
  }
}
