/**
 * Where a batch reads its tasks: inline in its input, or from the page holders of a page reference
 * (`agentBatchPageWorkflow`, workflows/batch/page-holder.ts), asked by signal for chunks of `PAGE_CHUNK` tasks and prefetched
 * before the buffer runs dry. Registers the `pageReply` handler; its only commands are the `pageRequest` and
 * `pageRelease` signals it sends.
 */
import { condition, getExternalWorkflowHandle, isCancellation, setHandler } from '@temporalio/workflow';
import type { AgentRunInput } from '../../common/run.js';
import {
  pageReleaseSignal,
  pageReplySignal,
  pageRequestSignal,
  type AgentBatchInput,
  type BatchPageRef,
  type BatchPageRequest,
} from './definitions.js';

/** Tasks asked of a page holder at once. */
const PAGE_CHUNK = 64;

export class BatchTasks {
  readonly total: number;
  private readonly inline: AgentRunInput[] | undefined;
  private readonly pages: BatchPageRef['pages'];
  private readonly pageStarts: number[] = [];
  private readonly buffer = new Map<number, AgentRunInput>();
  private requestedUpTo: number;
  private lastRequestStart = -1;

  /** `next()`: the first task index not launched yet (replies for earlier tasks are dropped). */
  constructor(
    input: AgentBatchInput,
    private readonly batchId: string,
    private readonly concurrency: number,
    private readonly next: () => number,
  ) {
    this.inline = Array.isArray(input.tasks) ? input.tasks : undefined;
    this.pages = this.inline ? [] : (input.tasks as BatchPageRef).pages;
    let total = this.inline?.length ?? 0;
    if (!this.inline) for (const p of this.pages) (this.pageStarts.push(total), (total += p.count));
    this.total = total;
    this.requestedUpTo = next();
    setHandler(pageReplySignal, (reply) => {
      const base = this.pageStarts[reply.page];
      if (base === undefined) return;
      reply.tasks.forEach((t, k) => {
        const i = base + reply.from + k;
        if (i >= this.next()) this.buffer.set(i, t);
      });
      // a reply cut short (too many bytes) leaves the rest to be asked for again
      if (base + reply.from === this.lastRequestStart)
        this.requestedUpTo = Math.min(this.requestedUpTo, base + reply.from + reply.tasks.length);
    });
  }

  private locate(i: number): { page: number; offset: number } {
    let p = this.pageStarts.length - 1;
    while (p > 0 && this.pageStarts[p] > i) p--;
    return { page: p, offset: i - this.pageStarts[p] };
  }

  /** The workflow id of the page holder of task `i` (for error texts). */
  holderOf(i: number): string | undefined {
    return this.pages[this.locate(i).page]?.workflowId;
  }

  /** Asks the holder of task `i`'s page for a chunk from `i`; false when the holder is gone. */
  private async request(i: number): Promise<boolean> {
    const { page, offset } = this.locate(i);
    const limit = Math.min(PAGE_CHUNK, this.pages[page].count - offset);
    const req: BatchPageRequest = { replyTo: this.batchId, page, from: offset, limit };
    this.requestedUpTo = Math.max(this.requestedUpTo, i + limit);
    this.lastRequestStart = i;
    try {
      await getExternalWorkflowHandle(this.pages[page].workflowId).signal(pageRequestSignal, req);
      return true;
    } catch (err) {
      if (isCancellation(err)) throw err;
      return false;
    }
  }

  /** Task `i`, or undefined when its page holder did not answer five requests a minute apart. */
  async taskAt(i: number): Promise<AgentRunInput | undefined> {
    if (this.inline) return this.inline[i];
    for (let attempt = 0; !this.buffer.has(i); attempt++) {
      if (attempt >= 5) return undefined;
      // ask unless a request covering i is on its way (a prefetch); after a minute without an answer ask again
      if ((attempt > 0 || this.requestedUpTo <= i) && !(await this.request(i))) return undefined;
      await condition(() => this.buffer.has(i), '1 minute');
    }
    const task = this.buffer.get(i)!;
    this.buffer.delete(i);
    // prefetch the next chunk before the buffer runs dry
    if (this.requestedUpTo < this.total && this.requestedUpTo - i <= this.concurrency)
      void this.request(this.requestedUpTo);
    return task;
  }

  /** Tells every page holder the batch is finished (each completes); failures are ignored. */
  async release(): Promise<void> {
    for (const p of this.pages)
      await getExternalWorkflowHandle(p.workflowId)
        .signal(pageReleaseSignal)
        .catch(() => undefined);
  }
}
