/**
 * Reads a run's transcript by reference (keel.md §4.3). The workflow holds the transcript; activities ask for the
 * messages they miss through the `messages` query and keep them in a per-worker cache bounded in bytes (least recently
 * used runs go first), so a model call fetches only the messages added since the previous one.
 */
import type { Client } from '@temporalio/client';
import type { Message } from '../common/messages.js';
import type { MessagesPage } from '../common/run.js';
import type { RunRef } from '../common/wire.js';

/** Where transcript pages come from. The default asks the workflow; tests may pass a fake. */
export interface TranscriptSource {
  read(workflowId: string, from: number, limit: number): Promise<MessagesPage>;
}

export function queryTranscriptSource(client: Client): TranscriptSource {
  return {
    read: (workflowId, from, limit) => client.workflow.getHandle(workflowId).query<MessagesPage, [{ from: number; limit: number }]>('messages', { from, limit }),
  };
}

interface Entry {
  messages: Message[];
  /** JSON size of `messages`, in characters. */
  chars: number;
}

export class TranscriptCache {
  /** Insertion order is recency order: a hit moves the run to the end. */
  private readonly runs = new Map<string, Entry>();
  private chars = 0;

  /** `maxChars`: JSON characters kept across all runs (default 256 Mi). */
  constructor(
    private readonly source: TranscriptSource,
    private readonly maxChars = 256 * 1024 * 1024,
  ) {}

  /** transcript[0, count) of the run. */
  async messages(run: RunRef, count: number): Promise<Message[]> {
    const key = `${run.workflowId}/${run.runKey}`;
    const entry = this.take(key) ?? { messages: [], chars: 0 };
    if (entry.messages.length > count) {
      entry.messages = entry.messages.slice(0, count);
      entry.chars = JSON.stringify(entry.messages).length;
    }
    while (entry.messages.length < count) {
      const page = await this.source.read(run.workflowId, entry.messages.length, count - entry.messages.length);
      if (page.messages.length === 0 || page.from !== entry.messages.length) {
        throw new Error(`transcript of ${run.workflowId} has ${page.total} messages, expected at least ${count}`);
      }
      const added = page.messages.slice(0, count - entry.messages.length);
      entry.messages = entry.messages.concat(added);
      entry.chars += JSON.stringify(added).length;
    }
    this.put(key, entry);
    return entry.messages.slice(0, count);
  }

  /** transcript[index] of the run. */
  async message(run: RunRef, index: number): Promise<Message> {
    const messages = await this.messages(run, index + 1);
    return messages[index];
  }

  /** Characters held, for tests and metrics. */
  get size(): { runs: number; chars: number } {
    return { runs: this.runs.size, chars: this.chars };
  }

  private take(key: string): Entry | undefined {
    const entry = this.runs.get(key);
    if (entry) {
      this.runs.delete(key);
      this.chars -= entry.chars;
    }
    return entry;
  }

  private put(key: string, entry: Entry): void {
    this.runs.set(key, entry);
    this.chars += entry.chars;
    for (const [k, e] of this.runs) {
      if (this.chars <= this.maxChars || k === key) break;
      this.runs.delete(k);
      this.chars -= e.chars;
    }
  }
}
