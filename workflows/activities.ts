/** Activity stubs with Keel's options. Type-only import of the activities: nothing with side effects enters the bundle. */
import { ActivityCancellationType, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import { msToNumber, type ActivityOptions, type LocalActivityOptions, type RetryPolicy } from '@temporalio/common';
import type { KeelActivities } from '../activities/index.js';
import type { AgentRunInput } from '../common/run.js';
import type { ToolInfo } from '../common/wire.js';

const DEFAULT_HEARTBEAT_TIMEOUT = '30s';

/** Quick bookkeeping activities (input check, cancel request): a lost worker is noticed within 30 s. */
export const setupActivities = proxyActivities<KeelActivities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 5 },
});

/** The same bookkeeping as local activities (the cancel request): run inside the workflow task, recorded as a marker. */
export const localSetupActivities = proxyLocalActivities<KeelActivities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 5 },
});

/** A sub-agent call attached to a run already holding its child id: as long as the run lasts, a lost worker noticed in 30 s. */
export const subAgentActivities = proxyActivities<KeelActivities>({
  startToCloseTimeout: '3650d',
  heartbeatTimeout: '30s',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

/** A batch's reconciliation (describes its running children): retried, a lost worker noticed within a minute. */
export const batchActivities = proxyActivities<KeelActivities>({
  startToCloseTimeout: '1m',
  retry: { maximumAttempts: 5 },
});

export function modelActivities(config: Omit<AgentRunInput, 'prompt' | 'messages'>) {
  const r = config.modelRetry ?? {};
  const retry: RetryPolicy = {
    maximumAttempts: r.maximumAttempts ?? 10,
    initialInterval: r.initialInterval ?? '1s',
    maximumInterval: r.maximumInterval ?? '60s',
    backoffCoefficient: r.backoffCoefficient ?? 2,
  };
  return proxyActivities<KeelActivities>({
    startToCloseTimeout: '10m',
    heartbeatTimeout: config.heartbeatTimeout ?? DEFAULT_HEARTBEAT_TIMEOUT,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry,
  });
}

/** Options of one tool activity: only idempotent tools are retried after infrastructure failures (docs/architecture.md#retries). */
export function toolActivityOptions(
  config: Omit<AgentRunInput, 'prompt' | 'messages'>,
  tool: ToolInfo | undefined,
  summary: string,
): ActivityOptions {
  const retry: RetryPolicy = tool?.idempotent
    ? {
        maximumAttempts: tool.retry?.maximumAttempts ?? 5,
        initialInterval: tool.retry?.initialInterval ?? '1s',
        backoffCoefficient: tool.retry?.backoffCoefficient ?? 2,
        maximumInterval: tool.retry?.maximumInterval ?? '30s',
      }
    : { maximumAttempts: 1 };
  return {
    startToCloseTimeout: tool?.timeout ?? '10m',
    heartbeatTimeout: config.heartbeatTimeout ?? DEFAULT_HEARTBEAT_TIMEOUT,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry,
    summary,
  };
}

export const toolActivities = proxyActivities<KeelActivities>({ startToCloseTimeout: '10m' });

/** The tool activities as local activities (docs/local-tools.md), with {@link localToolActivityOptions} per call. */
export const localToolActivities = proxyLocalActivities<KeelActivities>({ startToCloseTimeout: '30s' });

const LOCAL_TOOL_TIMEOUT = '30s';
const LOCAL_TOOL_SCHEDULE_TO_CLOSE = '1m';

/**
 * Options of one tool call placed as a local activity (docs/local-tools.md): start-to-close is the tool's `timeout` or
 * 30 s, all attempts together at most 1 minute (or the tool's timeout when longer); the tool's retry policy as for
 * its activity (only idempotent tools are placed locally). No heartbeat timeout: local activities do not heartbeat.
 */
export function localToolActivityOptions(tool: ToolInfo, summary: string): LocalActivityOptions {
  const timeout = tool.timeout ?? LOCAL_TOOL_TIMEOUT;
  return {
    startToCloseTimeout: timeout,
    scheduleToCloseTimeout: tool.timeout === undefined ? LOCAL_TOOL_SCHEDULE_TO_CLOSE : longer(timeout),
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      maximumAttempts: tool.retry?.maximumAttempts ?? 5,
      initialInterval: tool.retry?.initialInterval ?? '1s',
      backoffCoefficient: tool.retry?.backoffCoefficient ?? 2,
      maximumInterval: tool.retry?.maximumInterval ?? '30s',
    },
    summary,
  };
}

/** Options of a batch's preparation as a local activity: as a local tool call's without a tool timeout. */
export function localPreparationOptions(summary: string): LocalActivityOptions {
  return localToolActivityOptions({ name: 'prepareToolCalls', executionMode: 'parallel', idempotent: true }, summary);
}

/** The larger of the tool's timeout and the default schedule-to-close (a single attempt must fit). */
function longer(timeout: NonNullable<ToolInfo['timeout']>): NonNullable<ToolInfo['timeout']> {
  return msToNumber(timeout) > msToNumber(LOCAL_TOOL_SCHEDULE_TO_CLOSE) ? timeout : LOCAL_TOOL_SCHEDULE_TO_CLOSE;
}

/** `read src/app.ts`, `bash npm test`, `edit src/x.ts (2 edits)`: the tool name, its first string argument, array sizes. */
export function toolSummary(name: string, args: unknown): string {
  const parts = [name];
  if (args && typeof args === 'object') {
    const values = Object.entries(args as Record<string, unknown>);
    const text = values.find(([, v]) => typeof v === 'string')?.[1] as string | undefined;
    if (text !== undefined) parts.push(firstLineClipped(text, 80));
    for (const [key, v] of values) if (Array.isArray(v)) parts.push(`(${v.length} ${key})`);
  }
  return parts.join(' ');
}

/** The first line of `text`, at most `max` characters; `…` marks a cut or a dropped rest. */
function firstLineClipped(text: string, max: number): string {
  const first = text.split('\n', 1)[0];
  return first.length > max || text.includes('\n') ? `${first.slice(0, max)}…` : first;
}
