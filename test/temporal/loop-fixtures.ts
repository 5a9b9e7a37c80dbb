/** Fixtures shared by the loop conformance suites (loop-a1, loop-a5): Pi's "echo" tool and transcript builders. */
import { scriptedModel, type Script } from '../../activities/model/scripted.js';
import {
  defineTool,
  type AgentToolResult,
  type ToolContext,
  type ToolDefinition,
} from '../../activities/tools/define-tool.js';
import type { AgentHooks } from '../../activities/hooks.js';
import type { LoggedEvent } from '../../common/events.js';
import { recordingModel, startKeel } from './harness.js';

export const ECHO_PARAMETERS = { type: 'object', properties: { value: { type: 'string' } }, required: ['value'] };

/** Executed values per workflow id (tools run in this process). */

export type Log = Map<string, unknown[]>;

export function note(log: Log, ctx: ToolContext, value: unknown): void {
  log.set(ctx.workflowId, [...(log.get(ctx.workflowId) ?? []), value]);
}

/** The A.1 "echo" tool: content `echoed: <value>`, details {value}. Options add the per-case behaviour. */

export function echo(
  log: Log,
  opts: {
    name?: string;
    executionMode?: 'sequential' | 'parallel';
    before?: (value: unknown, ctx: ToolContext) => Promise<void>;
    extra?: (value: unknown) => Partial<AgentToolResult>;
  } = {},
) {
  const name = opts.name ?? 'echo';
  return defineTool<{ value: unknown }>({
    name,
    description: 'Echoes its value.',
    parameters: ECHO_PARAMETERS,
    ...(opts.executionMode ? { executionMode: opts.executionMode } : {}),
    execute: async (_id, args, _signal, _onUpdate, ctx) => {
      note(log, ctx, name === 'echo' ? args.value : `${name}:${String(args.value)}`);
      await opts.before?.(args.value, ctx);
      return {
        content: [{ type: 'text', text: `echoed: ${args.value}` }],
        details: { value: args.value },
        ...opts.extra?.(args.value),
      };
    },
  });
}

export const call = (id: string, name: string, args: Record<string, unknown>) => ({ id, name, arguments: args });

// Expected transcript entries, as `strip` leaves them.

export const user = (text: string) => ({ role: 'user', content: [{ type: 'text', text }] });

export const reply = (text: string, stopReason = 'stop') => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  stopReason,
});

export const toolUse = (
  calls: { id: string; name: string; arguments: Record<string, unknown> }[],
  stopReason = 'toolUse',
) => ({
  role: 'assistant',
  content: calls.map((c) => ({ type: 'toolCall', ...c })),
  stopReason,
});

export const result = (id: string, name: string, text: string, details: unknown, isError = false) => ({
  role: 'toolResult',
  toolCallId: id,
  toolName: name,
  content: [{ type: 'text', text }],
  details,
  isError,
});

export const teeOf = (events: LoggedEvent[]) =>
  events.flatMap((e) =>
    e.type === 'tool_execution_end' ? [{ id: e.toolCallId, isError: e.isError, result: e.result }] : [],
  );

/** Starts a Keel with a recording scripted model under `scripted/…`. */

export async function keelWith(opts: {
  scripts: Record<string, Script>;
  tools?: ToolDefinition[];
  hooks?: AgentHooks;
}) {
  const model = recordingModel(scriptedModel(opts.scripts));
  const keel = await startKeel({ models: { scripted: model }, tools: opts.tools, hooks: opts.hooks });
  return { keel, model };
}
