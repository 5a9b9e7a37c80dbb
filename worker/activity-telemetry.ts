/**
 * Keel's own telemetry for its model and tool activities, as an activity inbound interceptor (installed by
 * keelPlugin), so the activities themselves stay free of it:
 *
 * - a span per model call (`chat <model>`) and per tool call (`execute_tool <tool>`) with OpenTelemetry GenAI
 *   semantic-convention attributes (gen_ai.request.model, gen_ai.usage.input_tokens / output_tokens,
 *   gen_ai.response.finish_reasons, gen_ai.tool.name, gen_ai.tool.call.id) plus `keel.cost_usd` and, for a call of an
 *   MCP tool that reached its server, `keel.mcp.server`; the spans use the
 *   global OpenTelemetry tracer, so they are no-ops unless a tracer provider is registered (worker/tracing.ts), and
 *   nest under the `RunActivity:*` span of Temporal's OpenTelemetry interceptor when that one runs first;
 * - metrics through the activity `metricMeter` (the Temporal runtime's exporter, e.g. `keel worker --metrics-port`):
 *   keel_model_tokens (counter; model, kind=input|output|cache_read|cache_write), keel_model_cost_usd (histogram; its
 *   _sum is the spend), keel_model_latency (histogram, ms; model), keel_tool_calls (counter; tool, is_error),
 *   keel_tool_latency (histogram, ms; tool);
 * - one activity-logger line per model call and tool call.
 *
 * Approvals (requested, decided) are counted by the workflow itself, through its replay-safe `metricMeter`
 * (workflows/agent/approvals.ts).
 *
 * Contract: never changes an activity's arguments, result or failure; a telemetry error is swallowed.
 */
import { SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import type { ActivityInboundCallsInterceptor, ActivityInterceptorsFactory } from '@temporalio/worker';
import type { Context } from '@temporalio/activity';
import type { CallModelInput, CallModelResult, RunToolCallResult, ToolCallRef, ToolOutcome } from '../common/wire.js';
import { TOOL_CALL_ACTIVITIES } from '../common/task-queues.js';

export const keelActivityTelemetry: ActivityInterceptorsFactory = (ctx) => ({
  inbound: new KeelActivityTelemetry(ctx),
});

class KeelActivityTelemetry implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: Context) {}

  async execute(
    input: Parameters<NonNullable<ActivityInboundCallsInterceptor['execute']>>[0],
    next: Parameters<NonNullable<ActivityInboundCallsInterceptor['execute']>>[1],
  ): Promise<unknown> {
    const type = this.ctx.info.activityType;
    if (type === 'callModel')
      return this.observe(input.args[0] as CallModelInput, next.bind(undefined, input), modelCall);
    if (TOOL_CALL_ACTIVITIES.has(type))
      return this.observe(input.args[0] as ToolCallRef, next.bind(undefined, input), toolCall);
    return next(input);
  }

  private async observe<I>(arg: I, run: () => Promise<unknown>, kind: Kind<I>): Promise<unknown> {
    const tracer = trace.getTracer('keel');
    return tracer.startActiveSpan(kind.spanName(arg), { attributes: kind.start(arg) }, async (span: Span) => {
      const started = performance.now();
      try {
        const result = await run();
        safely(() => {
          const attributes = kind.end(arg, result);
          span.setAttributes(attributes);
          kind.record(this.ctx, arg, result, performance.now() - started);
          this.ctx.log.info(`${kind.spanName(arg)} finished`, {
            ...attributes,
            durationMs: Math.round(performance.now() - started),
          });
        });
        return result;
      } catch (err) {
        safely(() => {
          span.recordException(err as Error);
          span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
          span.setAttribute('error.type', (err as Error)?.name ?? 'Error');
        });
        throw err;
      } finally {
        span.end();
      }
    });
  }
}

interface Kind<I> {
  spanName(arg: I): string;
  start(arg: I): Attributes;
  end(arg: I, result: unknown): Attributes;
  record(ctx: Context, arg: I, result: unknown, ms: number): void;
}

const modelCall: Kind<CallModelInput> = {
  spanName: (a) => `chat ${a.model}`,
  start: (a) => ({
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': a.model.split('/')[0] ?? a.model,
    'gen_ai.request.model': a.model,
    'keel.turn': a.turn,
    'keel.workflow_id': a.run.workflowId,
  }),
  end(_a, result) {
    const m = (result as CallModelResult).message;
    return {
      'gen_ai.response.model': m.model,
      'gen_ai.usage.input_tokens': m.usage.input,
      'gen_ai.usage.output_tokens': m.usage.output,
      // OTel GenAI semantic conventions' prompt-cache attributes, when the provider reported any
      ...(m.usage.cacheRead > 0 ? { 'gen_ai.usage.cache_read.input_tokens': m.usage.cacheRead } : {}),
      ...(m.usage.cacheWrite > 0 ? { 'gen_ai.usage.cache_creation.input_tokens': m.usage.cacheWrite } : {}),
      'gen_ai.response.finish_reasons': [m.stopReason],
      'keel.cost_usd': m.usage.cost.total,
    };
  },
  record(ctx, a, result, ms) {
    const m = (result as CallModelResult).message;
    const meter = ctx.metricMeter.withTags({ model: a.model });
    const tokens = meter.createCounter('keel_model_tokens', 'tokens', 'Tokens of model calls, by kind');
    for (const [kind, n] of [
      ['input', m.usage.input],
      ['output', m.usage.output],
      ['cache_read', m.usage.cacheRead],
      ['cache_write', m.usage.cacheWrite],
    ] as const) {
      if (n > 0) tokens.add(n, { kind });
    }
    meter.createHistogram('keel_model_cost_usd', 'float', 'USD', 'Cost of each model call').record(m.usage.cost.total);
    meter.createHistogram('keel_model_latency', 'int', 'ms', 'Duration of each model call').record(Math.round(ms));
  },
};

const toolCall: Kind<ToolCallRef> = {
  spanName: (a) => `execute_tool ${a.toolName}`,
  start: (a) => ({
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': a.toolName,
    'gen_ai.tool.call.id': a.toolCallId,
    'keel.workflow_id': a.run.workflowId,
  }),
  end: (a, result) => {
    const outcome = toolOutcomeOf(result);
    const server = mcpServerOf(a.toolName, outcome.details);
    return { 'keel.tool.is_error': outcome.isError, ...(server ? { 'keel.mcp.server': server } : {}) };
  },
  record(ctx, a, result, ms) {
    const meter = ctx.metricMeter.withTags({ tool: a.toolName });
    meter
      .createCounter('keel_tool_calls', 'calls', 'Tool calls')
      .add(1, { is_error: String(toolOutcomeOf(result).isError) });
    meter.createHistogram('keel_tool_latency', 'int', 'ms', 'Duration of each tool call').record(Math.round(ms));
  },
};

/** The MCP server of a call of `<server>__<tool>` (activities/mcp/ puts `server` in the result's details). */
function mcpServerOf(toolName: string, details: unknown): string | undefined {
  const server = (details as { server?: unknown } | undefined)?.server;
  return typeof server === 'string' && toolName.startsWith(`${server}__`) ? server : undefined;
}

/** `executeToolCall` returns the outcome, `runToolCall` wraps it. */
function toolOutcomeOf(result: unknown): ToolOutcome {
  const r = result as RunToolCallResult | ToolOutcome;
  return 'outcome' in r && r.outcome ? r.outcome : (r as ToolOutcome);
}

function safely(fn: () => void): void {
  try {
    fn();
  } catch {
    // telemetry must never change what an activity returns
  }
}
