/**
 * Payload encryption (README "Encryption"): a `PayloadCodec` that seals every payload a Keel party writes — workflow
 * input and result, activity arguments and results, signals, Updates, queries, heartbeats, failure details, External
 * Storage objects (the SDK stores payloads after the codecs ran, so the store only ever sees ciphertext) — with
 * AES-256-GCM from Node's `crypto`.
 *
 * Format (the one Temporal's encryption samples use, so a codec in another language can read it):
 * - metadata `encoding: binary/encrypted`, `encryption-key-id: <id>`, `encryption-cipher: AES-256-GCM`;
 * - data = 12-byte IV ‖ ciphertext ‖ 16-byte tag, of the original payload serialised as a `temporal.api.common.v1.Payload`
 *   protobuf; the additional authenticated data is the key id, so a payload cannot be passed off as sealed by another key.
 *
 * A key ring: one primary key encrypts, every key in the ring decrypts (by the id in the payload's metadata), so old
 * payloads stay readable after a rotation. A payload without `binary/encrypted` (written before encryption was turned
 * on, or by a party without the codec) is passed through unchanged on decode: a mixed namespace keeps working.
 *
 * Never imported by workflow code (Node's crypto); the worker and every client take it through one option.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { registerWorkerSecretFile } from './worker-secrets.js';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

// a CommonJS module: named imports fail under plain Node ESM (the CLI)
const { Payload: PayloadProto } = proto.temporal.api.common.v1;

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';
export const CIPHER_METADATA = 'encryption-cipher';
export const CIPHER = 'AES-256-GCM';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
/** Payloads from this size on are remembered once sealed (see EncryptionCodec.recent): those that may be offloaded. */
const RECENT_MIN_BYTES = 64 * 1024;
const RECENT_LIMIT = 16;

/** The environment variable naming the key file (JSON, see {@link parseKeyRing}). */
export const KEYS_FILE_ENV = 'KEEL_ENCRYPTION_KEYS_FILE';

/** The line a run started without encryption on an encrypting worker fails with (`Invalid AgentRunInput: …`). */
export const UNSEALED_START =
  'encryption: this run was started without encryption, so its input is in clear text in Temporal history, and this ' +
  'worker encrypts; start runs with the worker’s key ring: AgentClient.connect({ encryption: { keysFile } }), ' +
  `\`keel --encryption-keys <file>\`, or $${KEYS_FILE_ENV}`;

/** The same for a batch (`Invalid AgentBatchInput: …`, since 0.6.2): its task list is what is in clear. */
export const UNSEALED_BATCH_START =
  'encryption: this batch was started without encryption, so its task list is in clear text in Temporal history, and ' +
  'this worker encrypts; start batches with the worker’s key ring: AgentClient.connect({ encryption: { keysFile } }), ' +
  `\`keel --encryption-keys <file>\`, or $${KEYS_FILE_ENV}`;
/** The environment variable holding the key file's JSON itself (e.g. injected from a secret manager). */
export const KEYS_ENV = 'KEEL_ENCRYPTION_KEYS';

/** Keys by id; `primary` encrypts, all of them decrypt. */
export interface KeyRing {
  readonly primary: string;
  readonly keys: ReadonlyMap<string, Buffer>;
}

/**
 * The key file: `{ "primary": "<id>", "keys": { "<id>": "<32 bytes, base64>", … } }`. Rotation: add a new key, make it
 * primary, keep the old ones for as long as a run (or a stored payload) written with them may be read.
 * Throws an error that says what is wrong and never contains key material.
 */
export function parseKeyRing(text: string, source: string): KeyRing {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new Error(
      `${source}: not JSON; expected { "primary": "<key id>", "keys": { "<key id>": "<32 bytes, base64>" } }`,
    );
  }
  const obj = raw as { primary?: unknown; keys?: unknown };
  if (!obj || typeof obj !== 'object' || !obj.keys || typeof obj.keys !== 'object' || Array.isArray(obj.keys))
    throw new Error(`${source}: "keys" must be an object of key id → 32 bytes in base64`);
  const keys = new Map<string, Buffer>();
  for (const [id, value] of Object.entries(obj.keys as Record<string, unknown>)) {
    if (!/^[A-Za-z0-9._:-]{1,64}$/.test(id))
      throw new Error(`${source}: key id ${JSON.stringify(id)} must be 1–64 of A–Z a–z 0–9 . _ : -`);
    const bytes = typeof value === 'string' ? Buffer.from(value, 'base64') : undefined;
    if (!bytes || bytes.length !== KEY_BYTES)
      throw new Error(
        `${source}: key ${JSON.stringify(id)} must be ${KEY_BYTES} bytes in base64 (generate one with \`keel encryption keygen\`)`,
      );
    keys.set(id, bytes);
  }
  if (keys.size === 0) throw new Error(`${source}: "keys" is empty; add at least one key`);
  if (typeof obj.primary !== 'string' || !keys.has(obj.primary))
    throw new Error(
      `${source}: "primary" must name one of the keys (${[...keys.keys()].join(', ')}), got ${JSON.stringify(obj.primary)}`,
    );
  return { primary: obj.primary, keys };
}

/** Reads a key file ({@link parseKeyRing}). Throws when it cannot be read or is not a key ring. */
export function readKeyRing(file: string): KeyRing {
  let text: string;
  try {
    registerWorkerSecretFile(file);
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(
      `cannot read the encryption key file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  return parseKeyRing(text, file);
}

/**
 * The key ring the environment names: `$KEEL_ENCRYPTION_KEYS` (the JSON itself) or `$KEEL_ENCRYPTION_KEYS_FILE` (a
 * path); undefined when neither is set. Throws when one is set but is not a key ring.
 */
export function keyRingFromEnv(env: NodeJS.ProcessEnv = process.env): KeyRing | undefined {
  if (env[KEYS_ENV]) return parseKeyRing(env[KEYS_ENV], `$${KEYS_ENV}`);
  if (env[KEYS_FILE_ENV]) return readKeyRing(env[KEYS_FILE_ENV]);
  return undefined;
}

/** A new key file's content with one fresh random key `id` as primary (`keel encryption keygen`). */
export function newKeyRingJson(id: string, existing?: KeyRing): string {
  const keys: Record<string, string> = {};
  for (const [k, v] of existing?.keys ?? []) keys[k] = v.toString('base64');
  keys[id] = randomBytes(KEY_BYTES).toString('base64');
  return JSON.stringify({ primary: id, keys }, null, 2) + '\n';
}

/** Whether a payload is sealed by this codec's format (whatever the key). */
export function isEncrypted(payload: Payload): boolean {
  const enc = payload.metadata?.[METADATA_ENCODING_KEY];
  return enc !== undefined && Buffer.from(enc).toString() === ENCRYPTED_ENCODING;
}

/** The error of a payload this key ring cannot open: it names the key id and what to do, never key material. */
export class DecryptionError extends Error {
  constructor(
    message: string,
    readonly keyId: string | undefined,
  ) {
    super(message);
    this.name = 'DecryptionError';
  }
}

/**
 * AES-256-GCM payload codec over a key ring. `encode` seals every payload with the primary key; `decode` opens sealed
 * payloads with the key their metadata names and passes other payloads through unchanged.
 * `decode` throws {@link DecryptionError} when the key id is not in the ring or the payload does not authenticate.
 */
export class EncryptionCodec implements PayloadCodec {
  /**
   * The last few large payloads sealed, by the sha256 of their plaintext: sealing one again (a finished tool's outcome
   * is written to the payload store by Keel, then encoded again by the SDK, worker/store-finished-outcome.ts) gives the
   * same bytes, so both land on the same content-addressed object. Reveals only that two large payloads sealed within
   * moments of each other were equal (their store keys already are content hashes).
   */
  private readonly recent = new Map<string, Payload>();

  constructor(readonly ring: KeyRing) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => this.seal(p));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => (isEncrypted(p) ? this.open(p) : p));
  }

  seal(payload: Payload): Payload {
    const id = this.ring.primary;
    const key = this.ring.keys.get(id)!;
    const plain = PayloadProto.encode(payload).finish();
    const large = plain.length >= RECENT_MIN_BYTES;
    const digest = large ? `${id}:${createHash('sha256').update(plain).digest('hex')}` : '';
    const seen = large ? this.recent.get(digest) : undefined;
    if (seen) return seen;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(id));
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    const out: Payload = {
      metadata: {
        [METADATA_ENCODING_KEY]: Buffer.from(ENCRYPTED_ENCODING),
        [KEY_ID_METADATA]: Buffer.from(id),
        [CIPHER_METADATA]: Buffer.from(CIPHER),
      },
      data: sealed,
    };
    if (large) {
      this.recent.set(digest, out);
      if (this.recent.size > RECENT_LIMIT) this.recent.delete(this.recent.keys().next().value!);
    }
    return out;
  }

  open(payload: Payload): Payload {
    const idBytes = payload.metadata?.[KEY_ID_METADATA];
    const id = idBytes ? Buffer.from(idBytes).toString() : undefined;
    const key = id !== undefined ? this.ring.keys.get(id) : undefined;
    if (!key)
      throw new DecryptionError(
        id === undefined
          ? 'encrypted payload without an encryption-key-id; it was not written by Keel’s codec'
          : `payload encrypted with key ${JSON.stringify(id)}, which is not in this key ring (${[...this.ring.keys.keys()].join(', ')}): add that key to the key file ($${KEYS_FILE_ENV}) under its id`,
        id,
      );
    const data = Buffer.from(payload.data ?? []);
    if (data.length < IV_BYTES + TAG_BYTES)
      throw new DecryptionError(`payload encrypted with key ${JSON.stringify(id)} is truncated`, id);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(id!));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const plain = Buffer.concat([
        decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
        decipher.final(),
      ]);
      return PayloadProto.decode(plain);
    } catch {
      throw new DecryptionError(
        `payload encrypted with key ${JSON.stringify(id)} does not decrypt: the key file has other bytes under that id, or the payload was altered`,
        id,
      );
    }
  }
}

/**
 * The `encryption` option of `createAgentWorker`, `keelPlugin`, `AgentClient.connect` and the CLI:
 * - not given (or `{}`): the key ring the environment names (`$KEEL_ENCRYPTION_KEYS`, else
 *   `$KEEL_ENCRYPTION_KEYS_FILE`), like `payloadStorage` defaults to the environment's store; none named → no encryption;
 * - `{ keyRing }` or `{ keysFile }`: that key ring;
 * - `false`: off, whatever the environment says.
 *
 * A party without a key ring still recognises sealed payloads and refuses them with {@link NoKeyRingError}, whose
 * message says what to pass.
 */
export type EncryptionOption = false | { keyRing?: KeyRing; keysFile?: string };

/** The key ring an option selects (see {@link EncryptionOption}); undefined when off. Throws on a bad key file. */
export function keyRingOf(
  option: EncryptionOption | undefined,
  env: NodeJS.ProcessEnv = process.env,
): KeyRing | undefined {
  if (option === false) return undefined;
  if (option?.keyRing && option.keysFile) throw new Error('encryption: give keyRing or keysFile, not both');
  if (option?.keyRing) return option.keyRing;
  if (option?.keysFile) return readKeyRing(option.keysFile);
  return keyRingFromEnv(env);
}

/** What a party without the key ring must be given to read sealed payloads (worker, `AgentClient`, CLI alike). */
export const NO_KEY_RING_HINT =
  'give this process the key ring: `--encryption-keys <file>` (the keel CLI, keel worker, keel dev), ' +
  `$${KEYS_FILE_ENV} or $${KEYS_ENV} (any Keel process), or the encryption option (createAgentWorker, keelPlugin, AgentClient.connect)`;

/** A sealed payload met by a party that has no key ring. */
export class NoKeyRingError extends Error {
  constructor(readonly keyId: string | undefined) {
    super(
      `this run's payloads are encrypted (key ${JSON.stringify(keyId ?? '?')}) and this process has no encryption key ring: ${NO_KEY_RING_HINT}`,
    );
    this.name = 'NoKeyRingError';
  }
}

/**
 * The codec of a party without a key ring: writes payloads as they are, and turns a sealed payload it reads into a
 * {@link NoKeyRingError} (was: the payload converter's `Unknown encoding: binary/encrypted`).
 */
export class NoKeyRingCodec implements PayloadCodec {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads;
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    const sealed = payloads.find(isEncrypted);
    if (sealed) {
      const id = sealed.metadata?.[KEY_ID_METADATA];
      throw new NoKeyRingError(id ? Buffer.from(id).toString() : undefined);
    }
    return payloads;
  }
}

/** Keel's codec for an option: an {@link EncryptionCodec} over the ring it selects, else a {@link NoKeyRingCodec}. */
export function keelCodecOf(option: EncryptionOption | undefined, env: NodeJS.ProcessEnv = process.env): PayloadCodec {
  const ring = keyRingOf(option, env);
  return ring ? new EncryptionCodec(ring) : new NoKeyRingCodec();
}

/** Whether a codec is Keel's own (either kind): composing a converter twice adds it once. */
export const isKeelCodec = (codec: PayloadCodec): boolean =>
  codec instanceof EncryptionCodec || codec instanceof NoKeyRingCodec;
