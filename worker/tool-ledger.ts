/**
 * A worker-local ledger of finished tool outcomes, keyed by the call's idempotency key (`<workflowId>/<toolCallId>`).
 *
 * Why: when Temporal cannot be reached while a tool finishes (an outage longer than the SDK's retries), the
 * completion is lost, the attempt times out, and Temporal dispatches the call again. A re-dispatched attempt that
 * lands on this worker returns the recorded outcome instead of executing the tool a second time.
 *
 * Contract: `withLedger(tools, ledger)` wraps each tool's `execute`: a retry (attempt > 1) whose key is in the ledger
 * returns the recorded result without calling the tool; a retry while an earlier attempt still runs here waits for
 * it and returns its outcome; a first attempt always executes (a later call that reuses a tool call id, e.g. a
 * scripted model's in a long session, is never answered from an old entry); a successful execution is recorded
 * before it is returned. An idempotent tool that throws is not recorded (its retry runs it again, as before).
 * The ledger is in memory, bounded (least recently finished entries go first), and lives as long as the worker.
 *
 * Non-idempotent tools are retried only on the run's home worker (worker affinity, workflows/agent/tool-batch.ts): every
 * attempt of such a call lands on this process, so the ledger knows whether the tool ran. A retry returns the
 * recorded result (or throws the recorded error), runs the tool when no attempt ever reached it here (it never ran),
 * and answers with the interrupted text only when an attempt started it and no outcome was kept.
 */
import type { AgentToolResult, ToolDefinition } from '../activities/tools/define-tool.js';
import { toolInterrupted } from '../common/errors.js';

type Entry = { result: AgentToolResult<unknown> } | { error: unknown } | { started: true };

export class ToolLedger {
  private readonly entries = new Map<string, Entry>();
  /** Executions in progress on this worker, by key. */
  readonly running = new Map<string, Promise<AgentToolResult<unknown>>>();

  constructor(private readonly maxEntries = 2_000) {}

  /** The recorded result of a call that finished here. */
  get(key: string): AgentToolResult<unknown> | undefined {
    const e = this.entries.get(key);
    return e && 'result' in e ? e.result : undefined;
  }

  /** What this worker knows of a call: finished (result or error), started without an outcome, or nothing. */
  entry(key: string): Entry | undefined {
    return this.entries.get(key);
  }

  record(key: string, result: AgentToolResult<unknown>): void {
    this.put(key, { result });
  }

  recordError(key: string, error: unknown): void {
    this.put(key, { error });
  }

  markStarted(key: string): void {
    this.put(key, { started: true });
  }

  get size(): number {
    return this.entries.size;
  }

  private put(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
  }
}

export function withLedger(tools: ToolDefinition[], ledger: ToolLedger): ToolDefinition[] {
  return tools.map((tool) => {
    const idempotent = tool.idempotent === true;
    const execute: ToolDefinition['execute'] = async (toolCallId, args, signal, onUpdate, context) => {
      const key = context.idempotencyKey;
      if (context.attempt > 1) {
        const inFlight = ledger.running.get(key);
        if (inFlight) await inFlight.catch(() => undefined);
        const known = ledger.entry(key);
        if (known && 'result' in known) return known.result;
        if (!idempotent && known && 'error' in known) throw known.error;
        // a non-idempotent call is never executed twice: an earlier attempt started it here and left no outcome
        if (!idempotent && known) throw new Error(toolInterrupted(tool.name));
      }
      const execution = tool.execute(toolCallId, args, signal, onUpdate, context);
      ledger.running.set(key, execution);
      if (!idempotent) ledger.markStarted(key);
      try {
        const result = await execution;
        ledger.record(key, result);
        return result;
      } catch (err) {
        // an attempt aborted mid-run (cancelled, its heartbeat lost) has no outcome: its retry gets the interrupted text
        if (!idempotent && !signal.aborted) ledger.recordError(key, err);
        throw err;
      } finally {
        if (ledger.running.get(key) === execution) ledger.running.delete(key);
      }
    };
    // the tool itself stays the prototype: its other fields and methods (summary, prepareArguments…) are untouched
    return Object.assign(Object.create(tool) as ToolDefinition, { execute });
  });
}
