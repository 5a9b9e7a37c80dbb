/**
 * Reads a run's transcript by reference (docs/architecture.md#history-stays-linear). The workflow holds the transcript; activities keep a per-worker
 * copy, bounded in bytes (least recently used runs go first). Activities also remember what they produce (the
 * assistant message, tool results) as *tentative* entries. The workflow sends the digest of the prefix an activity needs
 * (common/transcript-digest.ts): when the copy has that digest it is served without asking the workflow; otherwise the
 * tentative part is dropped and the missing messages are read through the `messages` query. From 0.8.0 an input may also
 * carry the newest messages (`tail`, common/transcript-tail.ts): a copy that has the messages before them takes them
 * without a query when the digest then matches, so a turn that ran its tools on another worker costs no query.
 */
import type { Client } from '@temporalio/client';
import type { Message } from '../common/messages.js';
import type { MessagesPage } from '../common/run.js';
import { EMPTY_DIGEST, nextDigest } from '../common/transcript-digest.js';
import type { RunRef } from '../common/wire.js';

/** Where transcript pages come from. The default asks the workflow; tests may pass a fake. */
export interface TranscriptSource {
  read(workflowId: string, from: number, limit: number): Promise<MessagesPage>;
}

export function queryTranscriptSource(client: Client): TranscriptSource {
  return {
    read: (workflowId, from, limit) =>
      client.workflow
        .getHandle(workflowId)
        .query<MessagesPage, [{ from: number; limit: number }]>('messages', { from, limit }),
  };
}

interface Entry {
  messages: Message[];
  /** `digests[i]`: digest of messages[0, i). */
  digests: number[];
  /** messages[0, confirmed) came from the workflow or matched its digest; the rest is tentative. */
  confirmed: number;
  /** JSON size of `messages`, in characters. */
  chars: number;
  /** When the run was last read or written (the cache's clock). */
  used: number;
}

/** How long a run's copy is kept unused: a finished run's copy would otherwise stay until the byte budget is full. */
export interface CacheIdle {
  /** Default 10 minutes: a run waiting longer for input reads its transcript again (one query). */
  ms: number;
  now(): number;
}

export class TranscriptCache {
  /** Insertion order is recency order: a use moves the run to the end. */
  private readonly runs = new Map<string, Entry>();
  private chars = 0;
  private queries = 0;

  /**
   * `maxChars`: JSON characters kept across all runs (default 256 Mi); `idle`: runs unused for longer are dropped (a
   * worker's heap would otherwise keep every finished run's transcript up to `maxChars`, and its collector slow down).
   */
  constructor(
    private readonly source: TranscriptSource,
    private readonly maxChars = 256 * 1024 * 1024,
    private readonly idle: CacheIdle = { ms: 10 * 60_000, now: () => performance.now() },
  ) {}

  /**
   * transcript[0, count) of the run. With `digest` (of that prefix) a matching copy is served without a query; with
   * `tail` (transcript[count - tail.length, count)) too, a copy that has the messages before the tail.
   */
  async messages(run: RunRef, count: number, digest?: number, tail?: readonly Message[]): Promise<Message[]> {
    const key = keyOf(run);
    const entry = this.take(key) ?? { messages: [], digests: [EMPTY_DIGEST], confirmed: 0, chars: 0, used: 0 };
    try {
      if (matches(entry, count, digest) || (digest !== undefined && tail && extend(entry, count, digest, tail))) {
        entry.confirmed = Math.max(entry.confirmed, count);
        return entry.messages.slice(0, count);
      }
      if (entry.messages.length > entry.confirmed) truncate(entry, entry.confirmed);
      if (entry.messages.length > count) truncate(entry, count);
      while (entry.messages.length < count) {
        this.queries += 1;
        const page = await this.source.read(run.workflowId, entry.messages.length, count - entry.messages.length);
        if (page.messages.length === 0 || page.from !== entry.messages.length) {
          throw new Error(`transcript of ${run.workflowId} has ${page.total} messages, expected at least ${count}`);
        }
        for (const m of page.messages.slice(0, count - entry.messages.length)) append(entry, m);
      }
      entry.confirmed = count;
      return entry.messages.slice(0, count);
    } finally {
      this.put(key, entry);
    }
  }

  /** transcript[index] of the run when this worker's copy has it (`digest` covers transcript[0, index + 1)), else undefined: no query. */
  held(run: RunRef, index: number, digest: number): Message | undefined {
    const entry = this.runs.get(keyOf(run));
    return entry && matches(entry, index + 1, digest) ? entry.messages[index] : undefined;
  }

  /** transcript[index] of the run; `digest` covers transcript[0, index + 1). */
  async message(run: RunRef, index: number, digest?: number): Promise<Message> {
    const messages = await this.messages(run, index + 1, digest);
    return messages[index];
  }

  /**
   * Records a message this worker produced, expected at `index` of the run's transcript (tentative until a digest from
   * the workflow confirms it). Ignored when the copy does not reach `index`.
   */
  remember(run: RunRef, index: number, message: Message): void {
    const key = keyOf(run);
    const entry = this.take(key);
    if (!entry) return;
    if (index >= entry.confirmed && index <= entry.messages.length) {
      truncate(entry, index);
      append(entry, message);
    }
    this.put(key, entry);
  }

  /** Runs and characters held, and queries made: for tests and metrics. */
  get stats(): { runs: number; chars: number; queries: number } {
    return { runs: this.runs.size, chars: this.chars, queries: this.queries };
  }

  private take(key: string): Entry | undefined {
    const entry = this.runs.get(key);
    if (entry) {
      this.runs.delete(key);
      this.chars -= entry.chars;
    }
    return entry;
  }

  /** Puts the run last (most recent), then drops the least recent runs while over budget or idle too long. */
  private put(key: string, entry: Entry): void {
    const now = this.idle.now();
    entry.used = now;
    this.runs.set(key, entry);
    this.chars += entry.chars;
    for (const [k, e] of this.runs) {
      if ((this.chars <= this.maxChars && now - e.used <= this.idle.ms) || k === key) break;
      this.runs.delete(k);
      this.chars -= e.chars;
    }
  }
}

/** The copy has transcript[0, count): confirmed, or with the workflow's digest of it. */
function matches(entry: Entry, count: number, digest: number | undefined): boolean {
  return (
    entry.messages.length >= count &&
    (digest === undefined ? count <= entry.confirmed : entry.digests[count] === digest)
  );
}

/**
 * Puts `tail` at count - tail.length when the copy reaches there and the result has `digest`; else leaves the copy as
 * it was and returns false.
 */
function extend(entry: Entry, count: number, digest: number, tail: readonly Message[]): boolean {
  const from = count - tail.length;
  if (from < 0 || entry.messages.length < from) return false;
  let d = entry.digests[from];
  for (const m of tail) d = nextDigest(d, m);
  if (d !== digest) return false;
  truncate(entry, from);
  for (const m of tail) append(entry, m);
  return true;
}

function keyOf(run: RunRef): string {
  return `${run.workflowId}/${run.runKey}`;
}

function append(entry: Entry, m: Message): void {
  entry.messages.push(m);
  entry.digests.push(nextDigest(entry.digests[entry.digests.length - 1], m));
  entry.chars += JSON.stringify(m).length;
}

function truncate(entry: Entry, length: number): void {
  if (entry.messages.length <= length) return;
  entry.messages.length = length;
  entry.digests.length = length + 1;
  entry.chars = JSON.stringify(entry.messages).length;
  entry.confirmed = Math.min(entry.confirmed, length);
}
