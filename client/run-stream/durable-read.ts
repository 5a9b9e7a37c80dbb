/**
 * One read of a run's durable events (the `events` query), running beside the stream reader's `describe` polls
 * (client/run-stream/reader.ts): the events after `after` up to those of run `runId`, and of the runs before it (its
 * continue-as-new chain) that still hold some.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { EventsPage, LoggedEvent } from '../../common/events.js';
import { eventsQuery } from '../../workflows/definitions.js';

/** The reader's poll count: polls started and finished (numbered from 1). */
export interface PollCount {
  started: number;
  finished: number;
}

/** The `events` page of run `runId`, bounded by a deadline (no worker may be polling). */
function query(handle: WorkflowHandle, runId: string, after: number, limit: number): Promise<EventsPage> {
  const h = handle.client.getHandle(handle.workflowId, runId);
  return handle.client.connection.withDeadline(Date.now() + 5000, () => h.query(eventsQuery, { after, limit }));
}

/** The run that `runId` continued as new from, from its first history event. */
async function previousRun(handle: WorkflowHandle, runId: string): Promise<string | undefined> {
  const res = await handle.client.workflowService.getWorkflowExecutionHistory({
    namespace: handle.client.options.namespace,
    execution: { workflowId: handle.workflowId, runId },
    maximumPageSize: 1,
  });
  return res.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
}

export class DurableRead {
  /** The last poll finished when the last page of `runId` was asked, and the last poll started when it was answered. */
  queryTick: number;
  doneTick = 0;
  done = false;
  /** The events read; undefined when the read failed (it is asked again later). */
  events?: LoggedEvent[];
  /** The last durable event of `runId` when it was asked. */
  lastSeq: number;
  readonly promise: Promise<void>;

  constructor(
    private readonly handle: WorkflowHandle,
    readonly runId: string,
    /** The describe (`runId/historyLength`) it was started after. */
    readonly at: string,
    private readonly after: number,
    private readonly polls: PollCount,
    /** The events after `after` are all in run `runId` (the read before read it): its chain is not looked up. */
    private readonly sameRun = false,
  ) {
    this.queryTick = polls.finished;
    this.lastSeq = after;
    this.promise = this.run();
  }

  private async run(): Promise<void> {
    try {
      const out = await this.read(await this.chain());
      this.events = out;
      this.lastSeq = out.at(-1)?.seq ?? this.after;
    } catch {
      // no worker answered in time, the run had not run its first task, or Temporal is away: asked again later
    } finally {
      this.done = true;
      this.doneTick = this.polls.started;
    }
  }

  /**
   * The runs to read, oldest first: `runId` and those before it that hold events after `after`; with the first page of
   * `runId` when that was asked to find out (a run that holds them all, the usual case, costs the worker one query).
   */
  private async chain(): Promise<{ runs: string[]; first?: EventsPage }> {
    const runs: string[] = [this.runId];
    if (this.sameRun) return { runs };
    const tick = this.polls.finished;
    const first = await query(this.handle, this.runId, this.after, PAGE);
    if (first.firstSeq <= this.after + 1) {
      this.queryTick = tick;
      return { runs, first };
    }
    for (;;) {
      const before = await previousRun(this.handle, runs[0]);
      if (!before) return { runs };
      runs.unshift(before);
      const page = await query(this.handle, before, this.after, 1);
      if (page.firstSeq <= this.after + 1) return { runs };
    }
  }

  /** The events of `runs` after `after`, in order (`first`: the first page of the only run, already read). */
  private async read({ runs, first }: { runs: string[]; first?: EventsPage }): Promise<LoggedEvent[]> {
    const out: LoggedEvent[] = [];
    for (const id of runs) {
      for (let given = first; ; given = undefined) {
        const last = out.at(-1)?.seq ?? this.after;
        if (id === this.runId && !given) this.queryTick = this.polls.finished;
        const page = given ?? (await query(this.handle, id, last, PAGE));
        out.push(...page.events.filter((e) => e.seq > (out.at(-1)?.seq ?? this.after)));
        if (page.events.length < PAGE) break;
      }
    }
    return out;
  }
}

/** Events per `events` query. */
const PAGE = 500;
