/**
 * Large payloads out of history (README "Large transcripts"): the SDK's External Storage (experimental in SDK 1.21+)
 * with Keel's embedded default, a content-addressed filesystem driver. The one place that builds Keel's data
 * converter: the worker, its activities' client, `AgentClient`, the CLI and `keel dev` all take it from here, so every
 * party can read what another offloaded.
 *
 * A payload over the threshold (default 256 KiB: a continue-as-new input carrying a long transcript, a large tool
 * result, a `messages` page, the result) is written to the driver, and history holds a small reference instead.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  ExternalStorage,
  StorageDriverClaim,
  type DataConverter,
  type Payload,
  type StorageDriver,
} from '@temporalio/common';
import proto from '@temporalio/proto';

// a CommonJS module: named imports fail under plain Node ESM (the CLI)
const { Payload: PayloadProto } = proto.temporal.api.common.v1;

/** `payloadStorage` of the worker and client options: Keel's filesystem driver (default), another driver, or off. */
export type PayloadStorageOption =
  | false
  | {
      /** Directory of the filesystem driver. Default `$KEEL_PAYLOAD_DIR` or `.keel/payloads` under the working directory. */
      dir?: string;
      /** Any `StorageDriver` instead (e.g. the SDK's S3 driver); every worker and client must be given the same. */
      driver?: StorageDriver;
      /** Payloads larger than this many bytes are offloaded. Default 256 KiB. */
      thresholdBytes?: number;
    };

export const DEFAULT_PAYLOAD_DIR = '.keel/payloads';

/**
 * Content-addressed files: a payload is stored once under `<dir>/<sha256[0,2]>/<sha256>` (its protobuf encoding), and
 * the claim is `{ sha256 }`. Writes go to a temporary file renamed into place, so a reader never sees half a payload.
 * Every process that reads these runs (workers, clients) must see the same directory: one machine, or a shared volume.
 */
export class FileStorageDriver implements StorageDriver {
  readonly type = 'keel.filesystem';
  readonly dir: string;

  constructor(
    dir: string = process.env.KEEL_PAYLOAD_DIR ?? DEFAULT_PAYLOAD_DIR,
    readonly name = 'keel-fs',
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
        mkdirSync(join(this.dir, sha256.slice(0, 2)), { recursive: true });
        const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
        writeFileSync(tmp, bytes);
        renameSync(tmp, file);
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
        return PayloadProto.decode(bytes) as Payload;
      }),
    );
  }
}

/** The external storage of an option; undefined when off. */
export function externalStorageOf(option: PayloadStorageOption | undefined): ExternalStorage | undefined {
  if (option === false) return undefined;
  const driver = option?.driver ?? new FileStorageDriver(option?.dir);
  return new ExternalStorage({
    drivers: [driver],
    ...(option?.thresholdBytes !== undefined ? { payloadSizeThreshold: option.thresholdBytes } : {}),
  });
}

/** Keel's data converter: the default converters plus external storage (unless `payloadStorage` is `false`). */
export function keelDataConverter(option?: PayloadStorageOption): DataConverter {
  const externalStorage = externalStorageOf(option);
  return externalStorage ? { externalStorage } : {};
}
