/**
 * Large payloads out of history (README "Large transcripts"): the SDK's External Storage (experimental in SDK 1.21+)
 * with Keel's embedded default, a content-addressed filesystem driver. The one place that builds Keel's data
 * converter: the worker, its activities' client, `AgentClient`, the CLI and `keel dev` all take it from here, so every
 * party can read what another offloaded. In common/ because clients and workers both need it (the `keel/client` entry
 * must not reach into worker/); what only a worker does with the store (writing a finished tool's outcome durably) is
 * worker/store-finished-outcome.ts.
 *
 * A payload over the threshold (default 256 KiB: a continue-as-new input carrying a long transcript, a large tool
 * result, a `messages` page, the result) is written to the driver, and history holds a small reference instead.
 *
 * Which driver, when the caller passes no `payloadStorage`: the SDK's S3 driver when `$KEEL_PAYLOAD_S3_BUCKET` is set
 * (`payloadStorageFromEnv`), else the filesystem driver. Every process reads the same environment variables, so a
 * worker, `keel dev`, the CLI and an `AgentClient` configured alike use the same store.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  ExternalStorage,
  StorageDriverClaim,
  type DataConverter,
  type Duration,
  type Payload,
  type StorageDriver,
} from '@temporalio/common';
import proto from '@temporalio/proto';
import { EncryptionCodec, isKeelCodec, keelCodecOf, type EncryptionOption } from './encryption.js';
import { requireOptional } from './optional-packages.js';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import type { S3StorageDriver } from '@temporalio/external-storage-s3';
import type { AwsSdkS3StorageDriverClient } from '@temporalio/external-storage-s3-aws-sdk';

// a CommonJS module: named imports fail under plain Node ESM (the CLI)
const { Payload: PayloadProto } = proto.temporal.api.common.v1;

/** `payloadStorage` of the worker and client options: Keel's filesystem driver (default), another driver, or off. */
export type PayloadStorageOption =
  | false
  | {
      /** Directory of the filesystem driver. Default `$KEEL_PAYLOAD_DIR` or `.keel/payloads` under the working directory. */
      dir?: string;
      /** The SDK's S3 driver (`@temporalio/external-storage-s3`) on this bucket instead of the filesystem. */
      s3?: S3PayloadStorage;
      /** Any other `StorageDriver` instead; every worker and client must be given the same. */
      driver?: StorageDriver;
      /** Payloads larger than this many bytes are offloaded. Default 256 KiB. */
      thresholdBytes?: number;
      /**
       * Workers: the backoff of a finished tool's outcome writes while the store fails (an S3 outage): retried from
       * `initialInterval` (1 s) doubling up to `maximumInterval` (30 s) until the store is back or the run is cancelled.
       */
      storeRetry?: StoreRetry;
    };

/** Backoff of a finished tool's outcome writes while the store fails: `initialInterval` doubling up to `maximumInterval` (worker/store-finished-outcome.ts). */
export interface StoreRetry {
  /** Default 1 s. */
  initialInterval?: Duration;
  /** Default 30 s. */
  maximumInterval?: Duration;
}

export const DEFAULT_PAYLOAD_DIR = '.keel/payloads';

/** The name the SDK's S3 driver registers under (its default), and Keel's filesystem driver's. */
export const S3_DRIVER_NAME = 'aws.s3driver';
export const FS_DRIVER_NAME = 'keel-fs';

/**
 * The S3 store. Credentials never go here: the AWS SDK's default chain reads them (`AWS_ACCESS_KEY_ID` /
 * `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`, `AWS_PROFILE`, an instance or task role…), as do the region
 * (`AWS_REGION`) and an S3-compatible server's endpoint (`AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`) when not set here.
 */
export interface S3PayloadStorage {
  bucket: string;
  region?: string;
  /** An S3-compatible server instead of AWS, e.g. `http://127.0.0.1:9000`. */
  endpoint?: string;
  /** Path-style URLs (`<endpoint>/<bucket>/<key>`), which most S3-compatible servers need. Default false. */
  forcePathStyle?: boolean;
  /** An `S3Client` of your own instead (then region, endpoint and forcePathStyle are its business). */
  client?: S3Client;
  /**
   * The largest payload stored (one PUT). Default 512 MiB: the SDK driver's own default, 50 MiB, is less than the
   * continue-as-new input of a 2,000-turn run with 50 KB tool results (≈100 MB).
   */
  maxPayloadBytes?: number;
}

export const DEFAULT_S3_MAX_PAYLOAD_BYTES = 512 * 1024 * 1024;

/**
 * The storage the environment selects (what `keelDataConverter()` uses when given no option):
 * `KEEL_PAYLOAD_S3_BUCKET` set → the S3 driver on that bucket (`KEEL_PAYLOAD_S3_FORCE_PATH_STYLE=1` for path-style
 * URLs; region, endpoint and credentials from the standard `AWS_*` variables, read by the AWS SDK); else the
 * filesystem driver under `KEEL_PAYLOAD_DIR` (default `.keel/payloads`).
 */
export function payloadStorageFromEnv(env: NodeJS.ProcessEnv = process.env): Exclude<PayloadStorageOption, false> {
  const bucket = env.KEEL_PAYLOAD_S3_BUCKET?.trim();
  if (!bucket) return env.KEEL_PAYLOAD_DIR ? { dir: env.KEEL_PAYLOAD_DIR } : {};
  const pathStyle = (env.KEEL_PAYLOAD_S3_FORCE_PATH_STYLE ?? '').trim().toLowerCase();
  if (pathStyle && !['1', 'true', '0', 'false'].includes(pathStyle))
    throw new Error(`KEEL_PAYLOAD_S3_FORCE_PATH_STYLE must be 1, true, 0 or false (got ${JSON.stringify(pathStyle)})`);
  return { s3: { bucket, ...(pathStyle === '1' || pathStyle === 'true' ? { forcePathStyle: true } : {}) } };
}

/**
 * The SDK's S3 driver (`@temporalio/external-storage-s3` with its `@aws-sdk/client-s3` adapter). Keys follow the
 * SDK's cross-language layout, `v0/ns/<namespace>/wt/<workflow type>/wi/<workflow id>/ri/<run id>/d/sha256/<hex>`
 * (`at`/`ai` for activities), and the claim holds `{ bucket, key, hashAlgorithm, hashValue }`, so any SDK's S3 driver
 * reads what Keel stored; payloads are checked against their sha256 when read.
 */
export function s3StorageDriver(o: S3PayloadStorage): StorageDriver {
  if (!o.bucket) throw new Error('payloadStorage.s3.bucket: a bucket name is required');
  // loaded only when S3 is chosen (optional CommonJS packages; the AWS SDK takes a while to load)
  const { S3Client: Client } = requireOptional<{ S3Client: new (c: S3ClientConfig) => S3Client }>('@aws-sdk/client-s3');
  const { S3StorageDriver: Driver } = requireOptional<{ S3StorageDriver: typeof S3StorageDriver }>(
    '@temporalio/external-storage-s3',
  );
  const { AwsSdkS3StorageDriverClient: Adapter } = requireOptional<{
    AwsSdkS3StorageDriverClient: typeof AwsSdkS3StorageDriverClient;
  }>('@temporalio/external-storage-s3-aws-sdk');
  const client =
    o.client ??
    new Client({
      ...(o.region ? { region: o.region } : {}),
      ...(o.endpoint ? { endpoint: o.endpoint } : {}),
      ...(o.forcePathStyle ? { forcePathStyle: true } : {}),
    });
  return new Driver({
    client: new Adapter(client),
    bucket: o.bucket,
    maxPayloadSize: o.maxPayloadBytes ?? DEFAULT_S3_MAX_PAYLOAD_BYTES,
  });
}
/**
 * Content-addressed files: a payload is stored once under `<dir>/<sha256[0,2]>/<sha256>` (its protobuf encoding), and
 * the claim is `{ sha256 }`. Writes go to a temporary file renamed into place, so a reader never sees half a payload.
 * Files are created 0600 and directories 0700 (transcripts are private to the user the worker runs as), and a file an
 * older release left readable to others is tightened when its payload is stored again; what is read
 * back must hash to its name, else `retrieve` fails with {@link payloadDigestMismatch} and decodes nothing.
 * Every process that reads these runs (workers, clients) must see the same directory: one machine, or a shared volume.
 */
export class FileStorageDriver implements StorageDriver {
  readonly type = 'keel.filesystem';
  readonly dir: string;

  constructor(
    dir: string = process.env.KEEL_PAYLOAD_DIR ?? DEFAULT_PAYLOAD_DIR,
    readonly name = FS_DRIVER_NAME,
  ) {
    this.dir = resolve(dir);
  }

  private path(sha256: string): string {
    return join(this.dir, sha256.slice(0, 2), sha256);
  }

  async store(_context: unknown, payloads: Payload[]): Promise<StorageDriverClaim[]> {
    return payloads.map((p) => {
      const bytes = PayloadProto.encode(p).finish();
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      const file = this.path(sha256);
      if (!existsSync(file)) {
        mkdirSync(join(this.dir, sha256.slice(0, 2)), { recursive: true, mode: 0o700 });
        const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
        writeFileSync(tmp, bytes, { mode: 0o600, flag: 'wx' });
        renameSync(tmp, file);
      } else {
        tighten(file, 0o600);
        tighten(join(this.dir, sha256.slice(0, 2)), 0o700);
      }
      return new StorageDriverClaim({ sha256 });
    });
  }

  async retrieve(_context: unknown, claims: StorageDriverClaim[]): Promise<Payload[]> {
    return Promise.all(
      claims.map(async (c) => {
        const sha256 = c.claimData.sha256;
        if (!sha256 || !/^[0-9a-f]{64}$/.test(sha256))
          throw new Error(`keel-fs: bad claim ${JSON.stringify(c.claimData)}`);
        const bytes = await readFile(this.path(sha256)).catch((err: NodeJS.ErrnoException) => {
          throw new Error(
            `keel-fs: payload ${sha256} not found under ${this.dir} (${err.code}); every worker and client must share the payload directory`,
          );
        });
        const actual = createHash('sha256').update(bytes).digest('hex');
        if (actual !== sha256) throw new Error(payloadDigestMismatch(sha256, this.path(sha256), actual));
        return PayloadProto.decode(bytes) as Payload;
      }),
    );
  }
}

/**
 * Takes group and other permissions off `path` (a payload file or directory an older release wrote 0644 / 0755), to
 * `mode`. Best effort: a file of another user (a shared volume) is left as it is.
 */
function tighten(path: string, mode: number): void {
  try {
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, mode);
  } catch {
    // not ours to change, or gone: reading it is what matters, and retrieve checks its digest
  }
}

/** The error of a stored payload whose bytes do not hash to its name (a changed or damaged file): nothing is decoded. */
export function payloadDigestMismatch(sha256: string, file: string, actual: string): string {
  return `keel-fs: payload ${sha256} at ${file} has sha256 ${actual}: the file was changed or damaged; it is not used (restore it from a backup, or end the runs that need it)`;
}

/** The external storage of an option (naming no store: `payloadStorageFromEnv()`'s); undefined when off. */
export function externalStorageOf(given: PayloadStorageOption | undefined): ExternalStorage | undefined {
  if (given === false) return undefined;
  // no store named (none given, or only a threshold): the environment's
  const option = given?.driver || given?.s3 || given?.dir ? given : { ...payloadStorageFromEnv(), ...given };
  const driver = option.driver ?? (option.s3 ? s3StorageDriver(option.s3) : new FileStorageDriver(option.dir));
  return new ExternalStorage({
    drivers: [driver],
    ...(option.thresholdBytes !== undefined ? { payloadSizeThreshold: option.thresholdBytes } : {}),
  });
}

/** What Keel's data converter is made of besides the payload store. */
export interface KeelConverterParts {
  /** Payload encryption (node-common/encryption.ts, README "Encryption"); default: the key ring the environment names. */
  encryption?: EncryptionOption;
  /**
   * The caller's own data converter (`workerOptions.dataConverter`), kept: its `payloadConverterPath` and
   * `failureConverterPath`, its `payloadCodecs` (run before Keel's codec, so encryption seals what they produced), and
   * its `externalStorage` when no `payloadStorage` is given (both at once is refused).
   */
  base?: DataConverter;
}

/**
 * Keel's data converter: the default converters (or the caller's, `parts.base`) plus external storage (unless
 * `payloadStorage` is `false`; with no option, the storage the environment selects, `payloadStorageFromEnv`) and, last
 * of the payload codecs, Keel's codec (`encryption`: an `EncryptionCodec` when a key ring is selected, else a codec that
 * refuses sealed payloads with a text saying what to pass). The SDK runs External Storage after the codecs, so what is
 * stored is what the codecs sealed.
 */
export function keelDataConverter(option?: PayloadStorageOption, parts: KeelConverterParts = {}): DataConverter {
  const base = parts.base ?? {};
  if (base.externalStorage && option !== undefined && option !== false)
    throw new Error(
      'workerOptions.dataConverter.externalStorage and payloadStorage both name a payload store: give one of them ' +
        '(leave payloadStorage out to use your externalStorage)',
    );
  const externalStorage = base.externalStorage ?? externalStorageOf(option);
  return withKeelCodec({ ...base, ...(externalStorage ? { externalStorage } : {}) }, parts.encryption);
}

/**
 * `converter` with Keel's codec (see {@link keelDataConverter}) appended to its payload codecs, unless one is there
 * already (a converter Keel composed before: `createAgentWorker` and then `keelPlugin`).
 */
export function withKeelCodec(converter: DataConverter, encryption?: EncryptionOption): DataConverter {
  const codecs = converter.payloadCodecs ?? [];
  if (codecs.some(isKeelCodec)) return converter;
  return { ...converter, payloadCodecs: [...codecs, keelCodecOf(encryption)] };
}

/** Whether a converter seals payloads with Keel's `EncryptionCodec`. */
export function encrypts(converter: DataConverter | undefined): boolean {
  return (converter?.payloadCodecs ?? []).some((c) => c instanceof EncryptionCodec);
}

/**
 * A client asked for an offloaded payload (a large result, `messages` page, state) of a store it was not given. The
 * message names the store and the option that reaches it: `AgentClient.connect({ payloadStorage: … })`, or for the
 * CLI (and any Keel process) the environment variable.
 */
export class PayloadStoreMissingError extends Error {
  constructor(
    message: string,
    /** The driver name in the payload's reference (`aws.s3driver`, `keel-fs`). */
    readonly driverName: string,
  ) {
    super(message);
    this.name = 'PayloadStoreMissingError';
  }
}

/** What to pass to read a payload this driver stored, from its claim. */
function missingStoreText(driverName: string, claim: Record<string, string> | undefined): string {
  if (driverName === S3_DRIVER_NAME) {
    const bucket = claim?.bucket ?? '<bucket>';
    return (
      `This run's payload is stored in S3 (bucket ${JSON.stringify(bucket)}) and this client has no S3 payload store: ` +
      `connect with AgentClient.connect({ payloadStorage: { s3: { bucket: ${JSON.stringify(bucket)} } } }), or for ` +
      `the keel CLI set KEEL_PAYLOAD_S3_BUCKET=${bucket} (with AWS_REGION, AWS_ENDPOINT_URL_S3 and credentials that ` +
      `reach it)`
    );
  }
  return (
    `This run's payload is stored in Keel's payload directory (payload ${claim?.sha256 ?? '?'}) and this client ` +
    `has no payload directory: connect with AgentClient.connect({ payloadStorage: { dir: '<the workers' payload ` +
    `directory>' } }), or for the keel CLI set KEEL_PAYLOAD_DIR (default .keel/payloads under the working directory)`
  );
}

/** The `type` of Keel's stand-in drivers: a client that has them stores nothing. */
export const MISSING_STORE_DRIVER_TYPE = 'keel.missing';

/** Stands in on a client for a known store it was not given: reading from it says what to pass. Never stores. */
class MissingStoreDriver implements StorageDriver {
  readonly type = MISSING_STORE_DRIVER_TYPE;
  constructor(readonly name: string) {}

  async store(): Promise<StorageDriverClaim[]> {
    throw new Error(`${this.name}: this client has no such payload store`);
  }

  async retrieve(_context: unknown, claims: StorageDriverClaim[]): Promise<Payload[]> {
    throw new PayloadStoreMissingError(missingStoreText(this.name, claims[0]?.claimData), this.name);
  }
}

/**
 * The data converter of a client (`AgentClient.connect`, the CLI): `keelDataConverter(option, { encryption })`, and for the known
 * stores it was not given (S3, Keel's filesystem; all of them with `payloadStorage: false`) a stand-in that turns a
 * read of their payloads into a {@link PayloadStoreMissingError} naming the option to pass (was: the SDK's
 * `TMPRL1105 … external storage is not configured` or `No driver registered with name 'aws.s3driver'`). What the
 * client writes is unchanged: offloaded to its own store, or inline when it has none.
 */
export function keelClientDataConverter(option?: PayloadStorageOption, encryption?: EncryptionOption): DataConverter {
  const codecs = keelDataConverter(false, { encryption }).payloadCodecs!;
  const own = externalStorageOf(option);
  const ownNames = new Set(own?.drivers.map((d) => d.name) ?? []);
  const standIns = [S3_DRIVER_NAME, FS_DRIVER_NAME]
    .filter((name) => !ownNames.has(name))
    .map((name) => new MissingStoreDriver(name));
  if (standIns.length === 0) return own ? { externalStorage: own, payloadCodecs: codecs } : { payloadCodecs: codecs };
  return {
    payloadCodecs: codecs,
    externalStorage: new ExternalStorage({
      drivers: [...(own?.drivers ?? []), ...standIns],
      driverSelector: own ? (context, payload) => own.driverSelector(context, payload) : () => null,
      ...(own ? { payloadSizeThreshold: own.payloadSizeThreshold } : {}),
    }),
  };
}
