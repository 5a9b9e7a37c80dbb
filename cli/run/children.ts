/**
 * `keel watch` nests sub-agents (README "Sub-agents"): for each sub-agent call the parent's events show
 * (`tool_execution_start` with `childWorkflowId`), the child run is followed too, its lines indented under the call
 * as `  <sub-agent> › <toolCallId> │ …`, and its own sub-agents one level further in.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { LoggedEvent } from '../../common/events.js';
import { sleep } from '../context.js';
import { RunRenderer, type Sink } from '../render.js';
import { followRun } from './follow.js';

/** How long a child that the parent's events name may take to appear (its start is recorded after the event). */
const CHILD_APPEARS_MS = 30_000;

export class ChildFollower {
  private readonly following = new Map<string, Promise<void>>();

  constructor(
    private readonly handleOf: (workflowId: string) => WorkflowHandle,
    private readonly sink: Sink,
    private readonly signal?: AbortSignal,
  ) {}

  /** Feed it every event of the parent: a sub-agent call's start begins following its child. */
  onEvent(e: LoggedEvent): void {
    if (e.type !== 'tool_execution_start' || !e.childWorkflowId || this.following.has(e.childWorkflowId)) return;
    const sink = indented(this.sink, `  ${e.toolName} › ${e.toolCallId} │ `);
    this.following.set(e.childWorkflowId, this.follow(e.childWorkflowId, sink));
  }

  /** Resolves once every child followed so far (and their children) has been followed to its end. */
  async done(): Promise<void> {
    let n = -1;
    while (n !== this.following.size) {
      n = this.following.size;
      await Promise.allSettled([...this.following.values()]);
    }
  }

  private async follow(id: string, sink: Sink): Promise<void> {
    const handle = this.handleOf(id);
    const deadline = Date.now() + CHILD_APPEARS_MS;
    for (;;) {
      if (this.signal?.aborted) return;
      try {
        await handle.describe();
        break;
      } catch {
        if (Date.now() > deadline) return sink.write(`(sub-agent run ${id} did not appear)\n`);
        await sleep(200);
      }
    }
    const nested = new ChildFollower(this.handleOf, sink, this.signal);
    await followRun(handle, new RunRenderer(sink), { signal: this.signal, onEvent: (e) => nested.onEvent(e) });
    await nested.done();
  }
}

/** A sink that starts every line with `prefix` (never in-place streaming: lines of several runs interleave). */
export function indented(sink: Sink, prefix: string): Sink {
  let atLineStart = true;
  return {
    tty: false,
    color: false,
    width: Math.max(40, sink.width - prefix.length),
    write(text: string) {
      let out = '';
      for (const ch of text) {
        if (atLineStart) out += prefix;
        out += ch;
        atLineStart = ch === '\n';
      }
      sink.write(out);
    },
  };
}
