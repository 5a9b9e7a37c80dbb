/** Activities of the bench-only workflows: the engine floor's no-ops and the naive loop's model and tool calls. */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { scriptedModel } from '../activities/model/scripted.js';
import type { AssistantMessage, Message, ToolCall, ToolResultMessage } from '../common/messages.js';
import { BENCH_TOOLS, SCRIPTS } from './fixtures.js';
import { parametersSchema } from '../activities/tools/define-tool.js';

/** Per-activity extras of the floor variants (see bench/floor-workflow.ts). */
export interface FloorActivityOptions {
  heartbeat?: boolean;
  query?: boolean;
}

export function createBenchActivities(deps: { client: Client }) {
  const model = scriptedModel(SCRIPTS);
  const tools = new Map(BENCH_TOOLS.map((t) => [t.name, t]));
  async function extras(opts: FloorActivityOptions | undefined): Promise<void> {
    const ctx = Context.current();
    if (opts?.heartbeat) ctx.heartbeat();
    if (opts?.query)
      await deps.client.workflow
        .getHandle(ctx.info.workflowExecution?.workflowId ?? '')
        .query('messages', { from: 0, limit: 1 });
  }
  return {
    async floorModel(turn: number, opts?: FloorActivityOptions): Promise<{ toolCallId: string }> {
      await extras(opts);
      return { toolCallId: `call_${turn}_1` };
    },
    async floorTool(_toolCallId: string, opts?: FloorActivityOptions): Promise<{ ok: true }> {
      await extras(opts);
      return { ok: true };
    },
    /** The whole transcript comes in as the activity input (the naive design). */
    async naiveCallModel(input: { model: string; messages: Message[]; tools: string[] }): Promise<AssistantMessage> {
      const slash = input.model.indexOf('/');
      const defs = input.tools.flatMap((n) => {
        const t = tools.get(n);
        return t ? [{ name: t.name, description: t.description, parameters: parametersSchema(t.parameters) }] : [];
      });
      return model.stream(
        {
          provider: input.model.slice(0, slash),
          modelId: input.model.slice(slash + 1),
          systemPrompt: '',
          messages: input.messages,
          tools: defs,
          options: {},
        },
        Context.current().cancellationSignal,
        () => {},
      );
    },
    async naiveRunTool(call: ToolCall): Promise<ToolResultMessage> {
      const tool = tools.get(call.name);
      const base = { role: 'toolResult' as const, toolCallId: call.id, toolName: call.name, timestamp: Date.now() };
      if (!tool)
        return {
          ...base,
          content: [{ type: 'text', text: `Tool ${call.name} not found` }],
          details: {},
          isError: true,
        };
      const ctx = Context.current();
      const context = {
        workflowId: ctx.info.workflowExecution?.workflowId ?? '',
        runId: ctx.info.workflowExecution?.runId ?? '',
        idempotencyKey: call.id,
        attempt: ctx.info.attempt,
        metadata: {},
      };
      const r = await tool.execute(call.id, call.arguments, ctx.cancellationSignal, () => {}, context);
      return { ...base, content: r.content ?? [], details: r.details, isError: false };
    },
  };
}

export type BenchActivities = ReturnType<typeof createBenchActivities>;
