/**
 * Reads a run's transcript by reference (keel.md §4.3). The workflow holds the transcript; activities ask for the
 * messages they miss through the `messages` query and keep them in a bounded per-worker cache, so a model call
 * fetches only the messages added since the previous one.
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

export class TranscriptCache {
  private readonly runs = new Map<string, Message[]>();

  constructor(
    private readonly source: TranscriptSource,
    private readonly maxRuns = 256,
  ) {}

  /** transcript[0, count) of the run. */
  async messages(run: RunRef, count: number): Promise<Message[]> {
    const key = `${run.workflowId}/${run.runKey}`;
    let cached = this.runs.get(key) ?? [];
    this.runs.delete(key);
    if (cached.length > count) cached = cached.slice(0, count);
    while (cached.length < count) {
      const page = await this.source.read(run.workflowId, cached.length, count - cached.length);
      if (page.messages.length === 0 || page.from !== cached.length) {
        throw new Error(`transcript of ${run.workflowId} has ${page.total} messages, expected at least ${count}`);
      }
      cached = cached.concat(page.messages.slice(0, count - cached.length));
    }
    this.runs.set(key, cached);
    if (this.runs.size > this.maxRuns) this.runs.delete(this.runs.keys().next().value as string);
    return cached.slice(0, count);
  }

  /** transcript[index] of the run. */
  async message(run: RunRef, index: number): Promise<Message> {
    const messages = await this.messages(run, index + 1);
    return messages[index];
  }
}
