// The optional packages (S3 payload store, MCP): a clear error when a feature is used without its package, resolved
// through a loader pointed at a directory where nothing is installed; and package.json pins them as optional peers.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  importOptional,
  MissingOptionalPackageError,
  OPTIONAL_PACKAGES,
  requireOptional,
} from '../../node-common/optional-packages.js';
import pkg from '../../package.json' with { type: 'json' };

// a directory with no node_modules above it (tmpdir holds none): every package is missing there
const empty = mkdtempSync(join(tmpdir(), 'keel-no-packages-'));
const requireFromEmpty = createRequire(join(empty, 'x.js'));
afterAll(() => rmSync(empty, { recursive: true, force: true }));

describe('optional packages', () => {
  it('the S3 payload store says what to install when @aws-sdk/client-s3 is missing', () => {
    expect(() => requireOptional('@aws-sdk/client-s3', '@aws-sdk/client-s3', requireFromEmpty)).toThrow(
      new MissingOptionalPackageError('@aws-sdk/client-s3', undefined),
    );
    expect(() => requireOptional('@aws-sdk/client-s3', '@aws-sdk/client-s3', requireFromEmpty)).toThrow(
      'The S3 payload store needs @aws-sdk/client-s3: npm install @aws-sdk/client-s3@3.1175.0',
    );
    expect(() =>
      requireOptional('@temporalio/external-storage-s3', '@temporalio/external-storage-s3', requireFromEmpty),
    ).toThrow(
      'The S3 payload store needs @temporalio/external-storage-s3: npm install @temporalio/external-storage-s3@1.22.0',
    );
  });

  it('MCP servers say what to install when @modelcontextprotocol/sdk is missing (an ES module subpath)', async () => {
    const load = async (s: string) => import(requireFromEmpty.resolve(s));
    await expect(
      importOptional('@modelcontextprotocol/sdk', '@modelcontextprotocol/sdk/client/index.js', load),
    ).rejects.toThrow(
      'MCP support (mcpServers, --mcp) needs @modelcontextprotocol/sdk: npm install @modelcontextprotocol/sdk@1.32.2',
    );
  });

  it('the fleet stream transport says what to install when ioredis is missing', () => {
    expect(() => requireOptional('ioredis', 'ioredis', requireFromEmpty)).toThrow(
      'The fleet stream transport (stream: { redis }, $KEEL_STREAM_REDIS_URL) needs ioredis: npm install ioredis@6.1.0',
    );
  });

  it('loads an installed package, and passes through any other failure unchanged', async () => {
    expect(requireOptional<{ S3Client: unknown }>('@aws-sdk/client-s3').S3Client).toBeTypeOf('function');
    const sdk = await importOptional<{ Client: unknown }>(
      '@modelcontextprotocol/sdk',
      '@modelcontextprotocol/sdk/client/index.js',
    );
    expect(sdk.Client).toBeTypeOf('function');
    // a dependency missing inside the package is not the package missing
    const inner = Object.assign(new Error("Cannot find module 'tslib'"), { code: 'MODULE_NOT_FOUND' });
    expect(() =>
      requireOptional('@aws-sdk/client-s3', '@aws-sdk/client-s3', () => {
        throw inner;
      }),
    ).toThrow(inner);
    const broken = new SyntaxError('Unexpected token');
    await expect(
      importOptional('@modelcontextprotocol/sdk', '@modelcontextprotocol/sdk/client/index.js', () =>
        Promise.reject(broken),
      ),
    ).rejects.toBe(broken);
  });

  it('each is an optional peer dependency at the pinned version, and a dev dependency for the tests', () => {
    for (const [name, { version }] of Object.entries(OPTIONAL_PACKAGES)) {
      expect(pkg.peerDependencies[name as keyof typeof pkg.peerDependencies], name).toBe(version);
      expect(pkg.peerDependenciesMeta[name as keyof typeof pkg.peerDependenciesMeta], name).toEqual({ optional: true });
      expect(pkg.devDependencies[name as keyof typeof pkg.devDependencies], name).toBe(version);
      expect(Object.keys(pkg.dependencies), name).not.toContain(name);
    }
  });
});
