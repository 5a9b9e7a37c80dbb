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
 * Note: today only idempotent tools are retried; non-idempotent ones get their retry with worker affinity.
 */
import type { AgentToolResult, ToolDefinition } from '../activities/tools/define-tool.js';

export class ToolLedger {
  private readonly entries = new Map<string, AgentToolResult<unknown>>();

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
      const recorded = context.attempt > 1 ? ledger.get(context.idempotencyKey) : undefined;
      if (recorded) return recorded;
      const result = await tool.execute(toolCallId, args, signal, onUpdate, context);
      ledger.record(context.idempotencyKey, result);
      return result;
    };
    // the tool itself stays the prototype: its other fields and methods (summary, prepareArguments…) are untouched
    return Object.assign(Object.create(tool) as ToolDefinition, { execute });
  });
}
