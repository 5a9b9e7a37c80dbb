/**
 * A worker-local ledger of finished tool outcomes, keyed by the call's idempotency key (`<workflowId>/<toolCallId>`).
 *
 * Why: when Temporal cannot be reached while a tool finishes (an outage longer than the SDK's retries), the
 * completion is lost, the attempt times out, and Temporal dispatches the call again. A re-dispatched attempt that
 * lands on this worker returns the recorded outcome instead of executing the tool a second time.
 *
 * Contract: `withLedger(tools, ledger)` wraps each tool's `execute`: a retry (attempt > 1) whose key is in the ledger
 * returns the recorded result without calling the tool; a first attempt always executes (a later call that reuses a
 * tool call id, e.g. a scripted model's in a long session, is never answered from an old entry); a successful
 * execution is recorded before it is returned (a tool that throws is not recorded: its retry runs it again, as before).
 * The ledger is in memory, bounded (least recently finished entries go first), and lives as long as the worker.
 *
 * Non-idempotent tools are retried only on the run's home worker (worker affinity, workflows/tool-batch.ts), and a
 * retry never executes them: it returns the recorded outcome, waits for the first attempt when that is still running
 * here, and otherwise answers with the interrupted text (the call may have partially run on a worker that is gone).
 */
import type { AgentToolResult, ToolDefinition } from '../activities/tools/define-tool.js';
import { toolInterrupted } from '../common/errors.js';

export class ToolLedger {
  private readonly entries = new Map<string, AgentToolResult<unknown>>();
  /** Executions in progress on this worker, by key. */
  readonly running = new Map<string, Promise<AgentToolResult<unknown>>>();

  constructor(private readonly maxEntries = 2_000) {}

  get(key: string): AgentToolResult<unknown> | undefined {
    return this.entries.get(key);
  }

  record(key: string, result: AgentToolResult<unknown>): void {
    this.entries.delete(key);
    this.entries.set(key, result);
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
  }

  get size(): number {
    return this.entries.size;
  }
}

export function withLedger(tools: ToolDefinition[], ledger: ToolLedger): ToolDefinition[] {
  return tools.map((tool) => {
    const execute: ToolDefinition['execute'] = async (toolCallId, args, signal, onUpdate, context) => {
      const key = context.idempotencyKey;
      if (context.attempt > 1) {
        const recorded = ledger.get(key) ?? (await ledger.running.get(key)?.catch(() => undefined));
        if (recorded) return recorded;
        // a non-idempotent call is never executed twice: its earlier attempt did not finish here
        if (tool.idempotent !== true) throw new Error(toolInterrupted(tool.name));
      }
      const execution = tool.execute(toolCallId, args, signal, onUpdate, context);
      ledger.running.set(key, execution);
      try {
        const result = await execution;
        ledger.record(key, result);
        return result;
      } finally {
        if (ledger.running.get(key) === execution) ledger.running.delete(key);
      }
    };
    // the tool itself stays the prototype: its other fields and methods (summary, prepareArguments…) are untouched
    return Object.assign(Object.create(tool) as ToolDefinition, { execute });
  });
}
