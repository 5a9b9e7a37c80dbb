/** Pi's "stream one assistant response", on Temporal: the `callModel` activity, with failures turned into messages. */
import { ActivityFailure, ApplicationFailure, isCancellation, patched, TimeoutFailure } from '@temporalio/workflow';
import type { ModelHeartbeat } from '../common/events.js';
import { malformedModelOutput, OPERATION_ABORTED } from '../common/errors.js';
import { assistantMessageProblem, usageProblem } from '../common/message-checks.js';
import { PATCH } from './patches.js';
import { publishDetails } from './visibility.js';
import { addUsage, emptyUsage, type AssistantMessage, type Usage } from '../common/messages.js';
import { modelActivities } from './activities.js';
import { workflowNow } from './clock.js';
import { inflight, type Session } from './session.js';

/**
 * Calls the model with a reference to the transcript. Never throws: when the call is aborted the message has stopReason
 * `aborted`; when Temporal's retries are exhausted (or the failure is non-retryable) it has stopReason `error` and the
 * provider's message (as Pi's Agent synthesises for a thrown stream).
 */
export async function streamAssistant(s: Session): Promise<AssistantMessage> {
  const { config, transcript } = s.state;
  const turn = s.state.turns + 1;
  s.modelCallSince = workflowNow();
  publishDetails(s);
  try {
    const result = await inflight(s, () =>
      modelActivities(config).callModel.executeWithOptions({ summary: `model ${config.model} · turn ${turn}` }, [
        {
          run: s.run,
          messageCount: transcript.length,
          digest: s.digests[transcript.length],
          model: config.model,
          systemPrompt: config.systemPrompt ?? '',
          tools: s.state.tools.map((t) => t.name),
          options: config.modelOptions ?? {},
          turn,
        },
      ]),
    );
    const problem = assistantMessageProblem(result.message) ?? (result.failedAttemptsUsage ? usageProblem(result.failedAttemptsUsage) : undefined);
    if (problem && patched(PATCH.malformedModelOutput)) return errorMessage(s, malformedModelOutput(problem), emptyUsage(), false);
    s.state.usage = addUsage(addUsage(s.state.usage, result.message.usage), result.failedAttemptsUsage);
    s.toolSummaries = result.toolSummaries ?? {};
    return result.message;
  } catch (err) {
    const aborted = isCancellation(err);
    const reported = failedUsage(err);
    const usage = reported && !usageProblem(reported) ? reported : undefined;
    s.state.usage = addUsage(s.state.usage, usage);
    return errorMessage(s, aborted ? OPERATION_ABORTED : err instanceof ActivityFailure && err.cause ? err.cause.message : String(err), usage ?? emptyUsage(), aborted);
  } finally {
    s.modelCallSince = undefined;
    publishDetails(s);
  }
}

/** The assistant message Keel records for a model call that produced none (Pi's synthesised error message). */
function errorMessage(s: Session, text: string, usage: Usage, aborted: boolean): AssistantMessage {
  const [provider, ...rest] = s.state.config.model.split('/');
  return {
    role: 'assistant',
    content: [{ type: 'text', text: '' }],
    api: 'keel',
    provider,
    model: rest.join('/'),
    usage,
    stopReason: aborted ? 'aborted' : 'error',
    errorMessage: text,
    timestamp: workflowNow(),
  };
}

/**
 * Usage of failed attempts: in the provider failure's details (`{ usage }`), or, when the last attempt timed out (a lost
 * worker), in its last heartbeat (`{ failedUsage }`).
 */
function failedUsage(err: unknown): Usage | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (cause instanceof ApplicationFailure) return (cause.details?.[0] as { usage?: Usage } | undefined)?.usage;
  if (cause instanceof TimeoutFailure) return (cause.lastHeartbeatDetails as ModelHeartbeat | undefined)?.failedUsage;
  return undefined;
}
