import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, ExternalStorage, type PayloadCodec } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import {
  DecryptionError,
  EncryptionCodec,
  isEncrypted,
  keelCodecOf,
  keyRingFromEnv,
  keyRingOf,
  NoKeyRingCodec,
  newKeyRingJson,
  parseKeyRing,
} from '../../node-common/encryption.js';
import { encrypts, FileStorageDriver, keelDataConverter, withKeelCodec } from '../../node-common/payload-storage.js';

const ring = (primary: string, ...ids: string[]) =>
  parseKeyRing(
    JSON.stringify({ primary, keys: Object.fromEntries(ids.map((id) => [id, randomBytes(32).toString('base64')])) }),
    'test',
  );

describe('payload encryption: AES-256-GCM over a key ring', () => {
  const value = { prompt: 'the secret prompt', n: 1 };

  it('seals a payload so that no plaintext remains, and opens it back to the same value', async () => {
    const codec = new EncryptionCodec(ring('k1', 'k1'));
    const [sealed] = await codec.encode([defaultPayloadConverter.toPayload(value)]);
    expect(isEncrypted(sealed)).toBe(true);
    expect(Buffer.from(sealed.metadata!['encryption-key-id']!).toString()).toBe('k1');
    expect(Buffer.from(sealed.data!).toString('latin1')).not.toContain('secret');
    const [opened] = await codec.decode([sealed]);
    expect(defaultPayloadConverter.fromPayload(opened)).toEqual(value);
  });

  it('opens payloads sealed by an older key after a rotation, and seals new ones with the new primary', async () => {
    const old = ring('k1', 'k1');
    const rotated = parseKeyRing(newKeyRingJson('k2', old), 'rotated');
    expect(rotated.primary).toBe('k2');
    const [byOld] = await new EncryptionCodec(old).encode([defaultPayloadConverter.toPayload(value)]);
    const codec = new EncryptionCodec(rotated);
    expect(defaultPayloadConverter.fromPayload((await codec.decode([byOld]))[0])).toEqual(value);
    const [byNew] = await codec.encode([defaultPayloadConverter.toPayload(value)]);
    expect(Buffer.from(byNew.metadata!['encryption-key-id']!).toString()).toBe('k2');
  });

  it('passes a payload in clear through on decode (a mixed namespace)', async () => {
    const clear = defaultPayloadConverter.toPayload(value);
    expect(await new EncryptionCodec(ring('k1', 'k1')).decode([clear])).toEqual([clear]);
  });

  it('refuses a payload of an unknown key, and one that was altered, naming the key id and what to do', async () => {
    const [sealed] = await new EncryptionCodec(ring('k0', 'k0')).encode([defaultPayloadConverter.toPayload(value)]);
    await expect(new EncryptionCodec(ring('k1', 'k1')).decode([sealed])).rejects.toThrow(
      'payload encrypted with key "k0", which is not in this key ring (k1): add that key to the key file ($KEEL_ENCRYPTION_KEYS_FILE) under its id',
    );
    const other = ring('k0', 'k0');
    await expect(new EncryptionCodec(other).decode([sealed])).rejects.toThrow(
      new DecryptionError(
        'payload encrypted with key "k0" does not decrypt: the key file has other bytes under that id, or the payload was altered',
        'k0',
      ),
    );
  });

  it('says what is wrong with a key file, without key material', () => {
    expect(() => parseKeyRing('{', 'keys.json')).toThrow(
      'keys.json: not JSON; expected { "primary": "<key id>", "keys": { "<key id>": "<32 bytes, base64>" } }',
    );
    expect(() => parseKeyRing('{"primary":"a","keys":{"a":"c2hvcnQ="}}', 'keys.json')).toThrow(
      'keys.json: key "a" must be 32 bytes in base64 (generate one with `keel encryption keygen`)',
    );
    expect(() => parseKeyRing(newKeyRingJson('a').replace('"primary": "a"', '"primary": "b"'), 'keys.json')).toThrow(
      'keys.json: "primary" must name one of the keys (a), got "b"',
    );
    expect(keyRingFromEnv({})).toBeUndefined();
    expect(keyRingFromEnv({ KEEL_ENCRYPTION_KEYS: newKeyRingJson('x') })?.primary).toBe('x');
  });
});

describe("Keel's data converter with encryption (node-common/payload-storage.ts)", () => {
  const keys = ring('k1', 'k1');
  const marker: PayloadCodec = {
    encode: async (ps) => ps.map((p) => ({ ...p, metadata: { ...p.metadata, marked: Buffer.from('1') } })),
    decode: async (ps) => ps,
  };

  it("keeps the caller's converter: its codecs first, encryption last, its converter paths and external storage", () => {
    const externalStorage = new ExternalStorage({ drivers: [new FileStorageDriver('/tmp/x')] });
    const base = {
      payloadCodecs: [marker],
      payloadConverterPath: '/p.js',
      failureConverterPath: '/f.js',
      externalStorage,
    };
    const dc = keelDataConverter(undefined, { encryption: { keyRing: keys }, base });
    expect(dc.payloadCodecs).toHaveLength(2);
    expect(dc.payloadCodecs![0]).toBe(marker);
    expect(dc.payloadCodecs![1]).toBeInstanceOf(EncryptionCodec);
    expect([dc.payloadConverterPath, dc.failureConverterPath, dc.externalStorage]).toEqual([
      '/p.js',
      '/f.js',
      externalStorage,
    ]);
    expect(encrypts(dc)).toBe(true);
    // composing again (createAgentWorker, then keelPlugin) adds nothing
    expect(withKeelCodec(dc, { keyRing: keys })).toBe(dc);
  });

  it('refuses a caller externalStorage together with payloadStorage', () => {
    const externalStorage = new ExternalStorage({ drivers: [new FileStorageDriver('/tmp/x')] });
    expect(() => keelDataConverter({ dir: '/tmp/y' }, { base: { externalStorage } })).toThrow(
      'workerOptions.dataConverter.externalStorage and payloadStorage both name a payload store: give one of them (leave payloadStorage out to use your externalStorage)',
    );
  });

  it('default: the key ring of the environment; false or none: a codec that refuses sealed payloads saying what to pass', async () => {
    expect(keyRingOf(undefined, { KEEL_ENCRYPTION_KEYS: newKeyRingJson('env') })?.primary).toBe('env');
    expect(keyRingOf(false, { KEEL_ENCRYPTION_KEYS: newKeyRingJson('env') })).toBeUndefined();
    const none = keelCodecOf(undefined, {});
    expect(none).toBeInstanceOf(NoKeyRingCodec);
    const [sealed] = await new EncryptionCodec(keys).encode([defaultPayloadConverter.toPayload('x')]);
    await expect(none.decode([sealed])).rejects.toThrow(
      'this run\'s payloads are encrypted (key "k1") and this process has no encryption key ring: give this process the key ring: `--encryption-keys <file>`',
    );
    const clear = defaultPayloadConverter.toPayload('x');
    expect(await none.decode([clear])).toEqual([clear]);
    expect(await none.encode([clear])).toEqual([clear]);
  });

  it('seals a large payload sealed moments ago to the same bytes (one content-addressed object), small ones afresh', async () => {
    const codec = new EncryptionCodec(keys);
    const big = defaultPayloadConverter.toPayload('b'.repeat(100_000));
    const [a] = await codec.encode([big]);
    const [b] = await codec.encode([{ ...big }]);
    expect(Buffer.from(b.data!).equals(Buffer.from(a.data!))).toBe(true);
    const small = defaultPayloadConverter.toPayload('s');
    const [c] = await codec.encode([small]);
    const [d] = await codec.encode([small]);
    expect(Buffer.from(c.data!).equals(Buffer.from(d.data!))).toBe(false);
  });
});
