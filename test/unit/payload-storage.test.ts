/** Keel's filesystem storage driver (node-common/payload-storage.ts): content-addressed, round-trips payloads exactly. */
import { chmodSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StorageDriverClaim } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { NoKeyRingCodec } from '../../node-common/encryption.js';
import {
  FileStorageDriver,
  keelClientDataConverter,
  keelDataConverter,
  payloadStorageFromEnv,
  PayloadStoreMissingError,
} from '../../node-common/payload-storage.js';

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

  it('writes payload files 0600 and their directories 0700', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'keel-payloads-')), 'store');
    const [claim] = await new FileStorageDriver(dir).store({}, [payload('{"secret":true}')]);
    const sha256 = claim.claimData.sha256;
    expect(statSync(join(dir, sha256.slice(0, 2), sha256)).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, sha256.slice(0, 2))).mode & 0o777).toBe(0o700);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('a payload file an older release left 0644 in a 0755 directory is tightened to 0600 / 0700 when stored again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-payloads-'));
    const driver = new FileStorageDriver(dir);
    const [claim] = await driver.store({}, [payload('{"secret":"old"}')]);
    const sha256 = claim.claimData.sha256;
    const file = join(dir, sha256.slice(0, 2), sha256);
    chmodSync(join(dir, sha256.slice(0, 2)), 0o755); // as release 0.4.1 wrote them
    chmodSync(file, 0o644);
    await driver.store({}, [payload('{"secret":"old"}')]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, sha256.slice(0, 2))).mode & 0o777).toBe(0o700);
  });

  it('refuses a payload file whose bytes do not hash to its name, and decodes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-payloads-'));
    const driver = new FileStorageDriver(dir);
    const [genuine, other] = await driver.store({}, [payload('{"n":1}'), payload('{"n":2}')]);
    const sha256 = genuine.claimData.sha256;
    const file = join(dir, sha256.slice(0, 2), sha256);
    // a valid payload of other content put in its place: it would decode, so only the digest can tell
    const otherFile = join(dir, other.claimData.sha256.slice(0, 2), other.claimData.sha256);
    writeFileSync(file, readFileSync(otherFile));
    await expect(driver.retrieve({}, [genuine])).rejects.toThrow(
      `keel-fs: payload ${sha256} at ${file} has sha256 ${other.claimData.sha256}: the file was changed or damaged; it is not used (restore it from a backup, or end the runs that need it)`,
    );
  });

  it('payloadStorage false: a plain data converter', () => {
    expect(keelDataConverter(false)).toEqual({ payloadCodecs: [new NoKeyRingCodec()] }); // Keel's codec is always last
    expect(keelDataConverter().externalStorage?.drivers.map((d) => d.type)).toEqual(['keel.filesystem']);
  });
});

describe('which store (payloadStorageFromEnv)', () => {
  it('KEEL_PAYLOAD_S3_BUCKET selects the SDK S3 driver, else the filesystem under KEEL_PAYLOAD_DIR', () => {
    expect(payloadStorageFromEnv({})).toEqual({});
    expect(payloadStorageFromEnv({ KEEL_PAYLOAD_DIR: '/srv/payloads' })).toEqual({ dir: '/srv/payloads' });
    expect(payloadStorageFromEnv({ KEEL_PAYLOAD_S3_BUCKET: 'keel-payloads', KEEL_PAYLOAD_DIR: '/x' })).toEqual({
      s3: { bucket: 'keel-payloads' },
    });
    expect(
      payloadStorageFromEnv({ KEEL_PAYLOAD_S3_BUCKET: 'keel-payloads', KEEL_PAYLOAD_S3_FORCE_PATH_STYLE: 'true' }),
    ).toEqual({ s3: { bucket: 'keel-payloads', forcePathStyle: true } });
    expect(() =>
      payloadStorageFromEnv({ KEEL_PAYLOAD_S3_BUCKET: 'keel-payloads', KEEL_PAYLOAD_S3_FORCE_PATH_STYLE: 'yes' }),
    ).toThrow('KEEL_PAYLOAD_S3_FORCE_PATH_STYLE must be 1, true, 0 or false (got "yes")');
  });

  it('an s3 option gives the SDK driver (name and type aws.s3driver); a threshold alone keeps the default store', () => {
    const drivers = keelDataConverter({ s3: { bucket: 'keel-payloads', region: 'us-east-1' } }).externalStorage
      ?.drivers;
    expect(drivers?.map((d) => [d.name, d.type])).toEqual([['aws.s3driver', 'aws.s3driver']]);
    const own = keelDataConverter({ thresholdBytes: 1024 }).externalStorage;
    expect([own?.payloadSizeThreshold, own?.drivers.map((d) => d.type)]).toEqual([1024, ['keel.filesystem']]);
  });
});

describe('a client without the store (keelClientDataConverter)', () => {
  it('stands in for the stores it lacks; stores only to its own, nothing with payloadStorage false', () => {
    const none = keelClientDataConverter(false).externalStorage!;
    expect(none.drivers.map((d) => [d.name, d.type])).toEqual([
      ['aws.s3driver', 'keel.missing'],
      ['keel-fs', 'keel.missing'],
    ]);
    expect(none.driverSelector({}, {})).toBeNull();
    const fs = keelClientDataConverter({ dir: mkdtempSync(join(tmpdir(), 'keel-payloads-')) }).externalStorage!;
    expect(fs.drivers.map((d) => [d.name, d.type])).toEqual([
      ['keel-fs', 'keel.filesystem'],
      ['aws.s3driver', 'keel.missing'],
    ]);
    expect(fs.driverSelector({}, {})?.type).toBe('keel.filesystem');
    expect(fs.payloadSizeThreshold).toBe(256 * 1024);
    const s3 = keelClientDataConverter({ s3: { bucket: 'b', region: 'us-east-1' } }).externalStorage!;
    expect(s3.drivers.map((d) => [d.name, d.type])).toEqual([
      ['aws.s3driver', 'aws.s3driver'],
      ['keel-fs', 'keel.missing'],
    ]);
  });

  it("reading a payload of Keel's payload directory without one names the option and the variable", async () => {
    const read = keelClientDataConverter({ s3: { bucket: 'b', region: 'us-east-1' } })
      .externalStorage!.getDriver('keel-fs')!
      .retrieve({}, [new StorageDriverClaim({ sha256: 'a'.repeat(64) })]);
    await expect(read).rejects.toBeInstanceOf(PayloadStoreMissingError);
    await expect(read).rejects.toThrow(
      `This run's payload is stored in Keel's payload directory (payload ${'a'.repeat(64)}) and this client has no ` +
        `payload directory: connect with AgentClient.connect({ payloadStorage: { dir: '<the workers' payload ` +
        `directory>' } }), or for the keel CLI set KEEL_PAYLOAD_DIR (default .keel/payloads under the working directory)`,
    );
  });
});
