/**
 * Following a run through a Temporal outage (library code: `AgentRunHandle.stream()` and the CLI use it):
 * `throughOutage(fn)` retries `fn` while Temporal cannot be reached (gRPC UNAVAILABLE or DEADLINE_EXCEEDED, directly
 * or as a ServiceError's cause), with backoff from 250 ms to 5 s, and says so on stderr once per outage
 * ("reconnecting…", then "reconnected after N s").
 *
 * Contract: any other error is rethrown at once; after `maxOutageMs` (default `$KEEL_RECONNECT_TIMEOUT` seconds, 900)
 * of one outage the last error is rethrown (the CLI then exits 3); an aborted `signal` ends the wait with that error.
 */
import { isGrpcServiceError } from '@temporalio/client';

const UNAVAILABLE = 14;
const DEADLINE_EXCEEDED = 4;

export interface OutageOptions {
  signal?: AbortSignal;
  maxOutageMs?: number;
  /** Default: stderr. */
  say?: (line: string) => void;
}

/** Whether `err` means "Temporal cannot be reached right now" (and not "the request was wrong"). */
export function isUnreachable(err: unknown): boolean {
  const code = (e: unknown) =>
    isGrpcServiceError(e) || (e as { code?: unknown })?.code !== undefined ? (e as { code?: number }).code : undefined;
  const c =
    code(err) ?? ((err as Error)?.name === 'ServiceError' ? code((err as { cause?: unknown }).cause) : undefined);
  return c === UNAVAILABLE || c === DEADLINE_EXCEEDED;
}

export async function throughOutage<T>(fn: () => Promise<T>, opts: OutageOptions = {}): Promise<T> {
  const say = opts.say ?? ((line: string) => process.stderr.write(`${line}\n`));
  const maxOutageMs = opts.maxOutageMs ?? Number(process.env.KEEL_RECONNECT_TIMEOUT ?? 900) * 1000;
  let since: number | undefined;
  let delay = 250;
  for (;;) {
    try {
      const value = await fn();
      if (since !== undefined) say(`keel: reconnected after ${((Date.now() - since) / 1000).toFixed(0)} s`);
      return value;
    } catch (err) {
      if (!isUnreachable(err) || opts.signal?.aborted) throw err;
      if (since === undefined) {
        since = Date.now();
        say(`keel: Temporal unreachable (${(err as Error).message.split('\n')[0]}); reconnecting…`);
      } else if (Date.now() - since > maxOutageMs) {
        throw err;
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 5000);
    }
  }
}
