/**
 * One `describe` of a run for the stream reader (client/run-stream/reader.ts), at the cost of the RPC alone: the
 * workflow service's raw answer, without what `WorkflowHandle.describe()` adds on every call (its memo, search
 * attributes and summaries decoded through the data converter), which the reader never looks at. A reader asks this
 * many times a second while a model call streams.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { isReferencePayload } from '@temporalio/common/lib/internal-non-workflow/index.js';
import type { temporal } from '@temporalio/proto';
import { isUnreachable } from '../reconnect.js';

type Raw = temporal.api.workflowservice.v1.IDescribeWorkflowExecutionResponse;

/** What the reader reads of a run: its run id, status, history length and the raw answer (pending activities). */
export interface RunDescription {
  runId: string;
  /** `RUNNING`, `CONTINUED_AS_NEW`, or another (closed) status. */
  status: 'RUNNING' | 'CONTINUED_AS_NEW' | 'CLOSED';
  historyLength: number;
  raw: Raw;
}

const RUNNING = 1;
const CONTINUED_AS_NEW = 6;

/**
 * The run of `handle` (its latest run when the handle names none), described through the workflow service. An
 * unreachable server (UNAVAILABLE, DEADLINE_EXCEEDED after the SDK's own retries) is thrown as it is; another error,
 * or a heartbeat held in the payload store (a reference, which only the SDK's describe fetches), takes the handle's
 * own `describe()`, so what it throws (a `WorkflowNotFoundError`, a `ServiceError` around an unreachable server) and
 * what it returns are the SDK's.
 */
export async function describeRun(handle: WorkflowHandle): Promise<RunDescription> {
  const { client } = handle;
  let raw: Raw;
  try {
    raw = await client.workflowService.describeWorkflowExecution({
      namespace: client.options.namespace,
      execution: { workflowId: handle.workflowId, runId: (handle as { runId?: string }).runId },
    });
  } catch (err) {
    // an unreachable server is the caller's to handle now (keel run says "reconnecting…"): asked again through the
    // handle, the same outage would first wait out a second round of the SDK's gRPC retries (≈ 20 s more, in silence)
    if (isUnreachable(err)) throw err;
    raw = (await handle.describe()).raw;
  }
  if (holdsReference(raw)) raw = (await handle.describe()).raw;
  const info = raw.workflowExecutionInfo;
  const code = info?.status;
  return {
    runId: info?.execution?.runId ?? '',
    status: code === RUNNING ? 'RUNNING' : code === CONTINUED_AS_NEW ? 'CONTINUED_AS_NEW' : 'CLOSED',
    historyLength: Number(info?.historyLength ?? 0),
    raw,
  };
}

/** Whether a pending activity's heartbeat details are a reference to the payload store. */
function holdsReference(raw: Raw): boolean {
  return (raw.pendingActivities ?? []).some((a) => {
    const p = a.heartbeatDetails?.payloads?.[0];
    return !!p && isReferencePayload(p as Payload);
  });
}
