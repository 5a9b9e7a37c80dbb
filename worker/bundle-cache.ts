/**
 * The workflow bundle of a source checkout, built once and kept on disk: `bundleWorkflowCode` (webpack, a few seconds
 * of CPU) runs only when one of the bundle's inputs changed since the last build.
 *
 * Contract: `cachedWorkflowBundle(inputs)` returns the code `bundleWorkflowCode(inputs)` would return now. The cache
 * keeps, per set of bundle options (`inputs`, the SDK's version), a manifest of every file webpack read for the last
 * bundle with the SHA-256 of its content, the entries of the folders those files are in, and the paths webpack
 * reported missing; the bundle is reused only while every one of those files has the same content, every folder the
 * same entries and every missing path is still missing — any edit, `npm install` of another SDK version or a file
 * added or removed next to an input (which could change what an import resolves to) builds it again. A bundle one of
 * whose inputs was modified while webpack ran is used but not kept. Files are written under a temporary name and
 * renamed, so processes sharing the cache never read half a file. A cache that cannot be written (read-only
 * directory) only costs the build. The directory: `$KEEL_WORKFLOW_BUNDLE_CACHE`, else
 * `node_modules/.cache/keel/workflow-bundles` of this checkout; `KEEL_WORKFLOW_BUNDLE_CACHE=off` bundles every time.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type BundleOptions, type Logger } from '@temporalio/worker';

/** What the bundle is built from: the options `Worker.create` passes its bundler for a Keel worker. */
export interface BundleInputs {
  workflowsPath: string;
  failureConverterPath?: string;
  payloadConverterPath?: string;
}

/**
 * One cached bundle: the files webpack read (content SHA-256, null: unreadable), the folders they are in (a hash of
 * their entries' names) and the paths webpack reported missing.
 */
interface Manifest {
  files: Record<string, string | null>;
  dirs: Record<string, string | null>;
  missing: string[];
  bundle: string;
}

const SDK_VERSION = (
  createRequire(import.meta.url)('@temporalio/worker/package.json') as {
    version: string;
  }
).version;

const DEFAULT_DIR = fileURLToPath(new URL('../node_modules/.cache/keel/workflow-bundles', import.meta.url));

/** The cache directory (see the file comment); undefined when the cache is off. */
export function bundleCacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const setting = env.KEEL_WORKFLOW_BUNDLE_CACHE;
  if (setting === 'off') return undefined;
  return setting || DEFAULT_DIR;
}

/** Bundles being read or built in this process, by cache file: a second caller meanwhile waits for the same one. */
const inFlight = new Map<string, Promise<{ code: string }>>();

/**
 * The workflow code built from `inputs`: the cached bundle while its inputs are unchanged, else a new one (cached).
 * Calls for the same bundle while one is being read or built share it (e.g. the demo starts it beside its dev server).
 */
export function cachedWorkflowBundle(
  inputs: BundleInputs,
  logger?: Logger,
  dir = bundleCacheDir(),
): Promise<{ code: string }> {
  const options = [SDK_VERSION, inputs.workflowsPath, inputs.failureConverterPath, inputs.payloadConverterPath];
  const key = createHash('sha256').update(JSON.stringify(options)).digest('hex').slice(0, 24);
  const id = `${dir ?? ''}\0${key}`;
  const pending = inFlight.get(id);
  if (pending) return pending;
  const bundle = readOrBuild(inputs, logger, dir, key).finally(() => inFlight.delete(id));
  inFlight.set(id, bundle);
  return bundle;
}

async function readOrBuild(
  inputs: BundleInputs,
  logger: Logger | undefined,
  dir: string | undefined,
  key: string,
): Promise<{ code: string }> {
  if (!dir) return { code: (await bundleWorkflowCode({ ...inputs, logger })).code };
  const cached = readCached(dir, key);
  if (cached !== undefined) return { code: cached };
  const started = performance.timeOrigin + performance.now();
  const deps = { files: [] as string[], missing: [] as string[] };
  const { code } = await bundleWorkflowCode({ ...inputs, logger, webpackConfigHook: recordingInputs(deps) });
  // an input edited while webpack ran: the bundle may hold the old text, so it is not kept (the next start builds)
  if (!deps.files.some((path) => modifiedSince(path, started))) store(dir, key, code, deps);
  return { code };
}

/** The cached code of `key` when every input recorded in its manifest is unchanged; undefined otherwise. */
function readCached(dir: string, key: string): string | undefined {
  try {
    const manifest = JSON.parse(readFileSync(join(dir, `${key}.json`), 'utf8')) as Manifest;
    const changed =
      Object.entries(manifest.files).some(([path, hash]) => contentHash(path) !== hash) ||
      Object.entries(manifest.dirs).some(([path, hash]) => entriesHash(path) !== hash) ||
      manifest.missing.some((path) => existsSync(path));
    if (changed) return undefined;
    return readFileSync(join(dir, manifest.bundle), 'utf8');
  } catch {
    return undefined; // no manifest yet, or its bundle was just replaced by another process: build it
  }
}

/** Writes the bundle, then its manifest (each by rename), and removes this key's older bundles. */
function store(dir: string, key: string, code: string, deps: { files: string[]; missing: string[] }): void {
  try {
    mkdirSync(dir, { recursive: true });
    const bundle = `${key}-${createHash('sha256').update(code).digest('hex').slice(0, 16)}.js`;
    writeAtomically(join(dir, bundle), code);
    const files = Object.fromEntries(deps.files.map((path) => [path, contentHash(path)]));
    const dirs = Object.fromEntries(
      [...new Set(deps.files.map((path) => dirname(path)))].map((d) => [d, entriesHash(d)]),
    );
    const manifest: Manifest = { files, dirs, missing: deps.missing, bundle };
    writeAtomically(join(dir, `${key}.json`), JSON.stringify(manifest));
    for (const name of readdirSync(dir))
      if (name.startsWith(`${key}-`) && name.endsWith('.js') && name !== bundle)
        rmSync(join(dir, name), { force: true });
  } catch {
    // a cache that cannot be written only costs the next start a build
  }
}

function writeAtomically(path: string, content: string): void {
  const tmp = `${path}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, content);
  renameSync(tmp, path);
}

function modifiedSince(path: string, ms: number): boolean {
  try {
    return statSync(path).mtimeMs > ms;
  } catch {
    return false;
  }
}

/** A hash of the names in folder `path` (null: unreadable). */
function entriesHash(path: string): string | null {
  try {
    return createHash('sha256').update(readdirSync(path).sort().join('\n')).digest('hex');
  } catch {
    return null;
  }
}

function contentHash(path: string): string | null {
  try {
    return createHash('sha256').update(readFileSync(path)).digest('hex');
  } catch {
    return null; // e.g. the bundler's generated entry point, which lives in memory
  }
}

/** A webpack config hook that records the files the compilation read and the paths it probed and did not find. */
function recordingInputs(deps: {
  files: string[];
  missing: string[];
}): NonNullable<BundleOptions['webpackConfigHook']> {
  interface Stats {
    compilation: { fileDependencies: Iterable<string>; missingDependencies: Iterable<string> };
  }
  const plugin = {
    apply(compiler: { hooks: { done: { tap(name: string, fn: (stats: Stats) => void): void } } }) {
      compiler.hooks.done.tap('keel-bundle-cache', ({ compilation }) => {
        deps.files = [...compilation.fileDependencies];
        deps.missing = [...compilation.missingDependencies];
      });
    },
  };
  return (config) => ({ ...config, plugins: [...(config.plugins ?? []), plugin as never] });
}
