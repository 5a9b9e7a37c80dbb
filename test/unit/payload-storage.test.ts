/** Keel's filesystem storage driver (worker/payload-storage.ts): content-addressed, round-trips payloads exactly. */
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StorageDriverClaim } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { FileStorageDriver, keelDataConverter } from '../../worker/payload-storage.js';

const payload = (text: string) => ({
  metadata: { encoding: new TextEncoder().encode('json/plain') },
  data: new TextEncoder().encode(text),
});

describe('FileStorageDriver', () => {
  it('stores a payload once under its sha256 and reads it back byte for byte', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-payloads-'));
    const driver = new FileStorageDriver(dir);
    const [a, b, c] = await driver.store({}, [payload('{"n":1}'), payload('{"n":1}'), payload('{"n":2}')]);
    expect(a.claimData).toEqual(b.claimData);
    expect(a.claimData.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(c.claimData.sha256).not.toBe(a.claimData.sha256);
    const files = readdirSync(dir, { recursive: true }).filter((f) => String(f).length > 2);
    expect(files).toHaveLength(2);
    const [back] = await driver.retrieve({}, [c]);
    expect(new TextDecoder().decode(back.data!)).toBe('{"n":2}');
    expect(new TextDecoder().decode(back.metadata!.encoding!)).toBe('json/plain');
  });

  it('a claim whose file is missing says that workers and clients must share the directory', async () => {
    const driver = new FileStorageDriver(mkdtempSync(join(tmpdir(), 'keel-payloads-')));
    await expect(driver.retrieve({}, [new StorageDriverClaim({ sha256: 'a'.repeat(64) })])).rejects.toThrow(
      /^keel-fs: payload a{64} not found under .+ \(ENOENT\); every worker and client must share the payload directory$/,
    );
    await expect(driver.retrieve({}, [new StorageDriverClaim({ sha256: '../etc' })])).rejects.toThrow(
      'keel-fs: bad claim {"sha256":"../etc"}',
    );
  });

  it('payloadStorage false: a plain data converter', () => {
    expect(keelDataConverter(false)).toEqual({});
    expect(keelDataConverter().externalStorage?.drivers.map((d) => d.type)).toEqual(['keel.filesystem']);
  });
});
