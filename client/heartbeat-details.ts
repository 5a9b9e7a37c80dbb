/**
 * Decoding the heartbeat details that a `describe` shows, once per distinct payload, through the client's data
 * converter: its codecs first (an encrypting worker seals its heartbeats like every payload, README "Encryption"), then
 * its payload converter. A stream reader polls `describe` in step with the model heartbeats (client/run-stream/cadence.ts),
 * and a model call's details carry its whole live delta window (up to 16,384 characters of delta text, tens of KB of
 * JSON): opening and parsing it again at every poll that finds it unchanged was the largest cost of Keel's own code in a
 * reader of a long call (docs/architecture.md "Measured").
 */
import type { LoadedDataConverter, Payload } from '@temporalio/common';
import { decodeOptionalSinglePayload } from '@temporalio/common/lib/internal-non-workflow/index.js';

interface Decoded {
  encoding?: Uint8Array | null;
  data: Uint8Array;
  value: unknown;
}

/**
 * Decodes pending activities' heartbeat details with `converter` (rejects on a payload it cannot open or convert:
 * not Keel's, or sealed under a key the client does not have), remembering the last value of each activity (`key`,
 * e.g. `runId/activityId`): a payload with the same encoding and bytes as the one last decoded for its key returns that
 * very value (callers must not modify it). `poll()` forgets the keys not decoded since the previous `poll()`.
 */
export class HeartbeatDetailsDecoder {
  #previous = new Map<string, Decoded>();
  #current = new Map<string, Decoded>();

  constructor(private readonly converter: LoadedDataConverter) {}

  /** Starts a poll: what was not decoded since the previous `poll()` is forgotten. */
  poll(): void {
    this.#previous = this.#current;
    this.#current = new Map();
  }

  /** The value of `payload`, the details of activity `key`. */
  async decode(key: string, payload: Payload): Promise<unknown> {
    const encoding = payload.metadata?.encoding;
    const data = payload.data;
    const last = this.#current.get(key) ?? this.#previous.get(key);
    if (data && last && sameBytes(last.data, data) && sameBytes(last.encoding, encoding)) {
      this.#current.set(key, last);
      return last.value;
    }
    const value: unknown = await decodeOptionalSinglePayload(this.converter, payload);
    if (data) this.#current.set(key, { encoding, data, value });
    return value;
  }
}

const sameBytes = (a: Uint8Array | null | undefined, b: Uint8Array | null | undefined): boolean =>
  a === b || (!!a && !!b && a.byteLength === b.byteLength && Buffer.compare(a, b) === 0);
