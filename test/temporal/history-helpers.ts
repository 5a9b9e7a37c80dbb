/** Reading a run's history in tests: the activity failures it recorded, and its failed workflow tasks. */
import { temporal } from '@temporalio/proto';
import type { AgentRunHandle } from '../../client/agent-client.js';

const { EventType } = temporal.api.enums.v1;

/** Each failed activity attempt as `[message, failure type, nonRetryable]`, and the failed workflow tasks. */
export async function failuresOf(
  h: AgentRunHandle,
): Promise<{ activities: [string, string, boolean][]; workflowTasksFailed: number }> {
  const events = (await h.workflow.fetchHistory()).events ?? [];
  const activities = events
    .filter((e) => e.activityTaskFailedEventAttributes)
    .map((e) => e.activityTaskFailedEventAttributes!.failure!)
    .map((f): [string, string, boolean] => [
      f.message ?? '',
      f.applicationFailureInfo?.type ?? '',
      f.applicationFailureInfo?.nonRetryable === true,
    ]);
  return {
    activities,
    workflowTasksFailed: events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED).length,
  };
}
