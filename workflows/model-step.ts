/** Pi's "stream one assistant response", on Temporal: the `callModel` activity, with failures turned into messages. */
import { ActivityFailure, ApplicationFailure, isCancellation, patched, TimeoutFailure } from '@temporalio/workflow';
import { heartbeatUsage } from '../common/events.js';
import { ErrorType, malformedModelOutput, OPERATION_ABORTED } from '../common/errors.js';
import { assistantMessageProblem, usageProblem } from '../common/message-checks.js';
import { addUsage, emptyUsage, type AssistantMessage, type Usage } from '../common/messages.js';
import { modelActivities } from './activities.js';
import { afterModelCall, budgetLeft, stopBeforeModelCall } from './budget.js';
import { workflowNow } from './clock.js';
import { compactIfNeeded } from './compaction.js';
import { PATCH } from './patches.js';
import { runCancellable, type Session } from './session.js';
import { publishDetails } from './visibility.js';

/**
 * Calls the model with a reference to the transcript. Never throws: when the call is aborted the message has stopReason
 * `aborted`; when Temporal's retries are exhausted (or the failure is non-retryable) it has stopReason `error` and the
 * provider's message (as Pi's Agent synthesises for a thrown stream). Undefined when the run's budget allows no
 * further request, before the call or because the call's failed attempts spent it (`lastError` says which limit).
 * Before the call the context may be compacted (workflows/compaction.ts); a call refused as too long
 * (`ModelError.ContextOverflow`) is retried once after a compaction, as Pi does — the refused reply is not kept.
 */
export async function streamAssistant(s: Session): Promise<AssistantMessage | undefined> {
  if ((await compactIfNeeded(s, 'threshold')) === 'budget') return undefined;
  const first = await callOnce(s);
  if (!first?.overflow) return first?.message;
  const compacted = await compactIfNeeded(s, 'overflow');
  if (compacted === 'budget') return undefined;
  if (compacted === 'skipped') return first.message;
  return (await callOnce(s))?.message;
}

/** One `callModel` activity (after the budget check); `overflow`: the provider refused the context as too long. */
async function callOnce(s: Session): Promise<{ message: AssistantMessage; overflow?: boolean } | undefined> {
  const { config, transcript } = s.state;
  const turn = s.state.turns + 1;
  if (stopBeforeModelCall(s)) return undefined;
  s.modelCallSince = workflowNow();
  publishDetails(s);
  try {
    const result = await runCancellable(s, () =>
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
          ...budgetLeft(s),
        },
      ]),
    );
    const problem =
      assistantMessageProblem(result.message) ??
      (result.failedAttemptsUsage ? usageProblem(result.failedAttemptsUsage) : undefined);
    if (problem && patched(PATCH.malformedModelOutput))
      return { message: errorMessage(s, malformedModelOutput(problem), emptyUsage(), false) };
    s.state.usage = addUsage(addUsage(s.state.usage, result.message.usage), result.failedAttemptsUsage);
    afterModelCall(s);
    s.toolSummaries = result.toolSummaries ?? {};
    return { message: result.message };
  } catch (err) {
    const aborted = isCancellation(err);
    const reported = failedUsage(err);
    const usage = reported && !usageProblem(reported) ? reported : undefined;
    s.state.usage = addUsage(s.state.usage, usage);
    afterModelCall(s);
    if (isFailure(err, ErrorType.BudgetExceeded) && stopBeforeModelCall(s)) return undefined;
    const text = aborted
      ? OPERATION_ABORTED
      : err instanceof ActivityFailure && err.cause
        ? err.cause.message
        : String(err);
    const message = errorMessage(s, text, usage ?? emptyUsage(), aborted);
    return { message, ...(isFailure(err, ErrorType.ContextOverflow) ? { overflow: true } : {}) };
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
 * worker), in its last heartbeat (`{ failedUsage, partial }`).
 */
function failedUsage(err: unknown): Usage | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (cause instanceof ApplicationFailure) return (cause.details?.[0] as { usage?: Usage } | undefined)?.usage;
  if (cause instanceof TimeoutFailure) {
    const details = cause.lastHeartbeatDetails as { failedUsage?: Usage } | undefined;
    // 0.1.0 counted only `failedUsage`; the streamed usage of the lost last attempt is counted from this patch on
    return patched(LOST_ATTEMPT_USAGE_PATCH) ? heartbeatUsage(details) : details?.failedUsage;
  }
  return undefined;
}

/** Guards counting the lost last attempt's streamed usage (its heartbeat's `partial.usage`) in the run's usage. */
export const LOST_ATTEMPT_USAGE_PATCH = 'keel-lost-attempt-usage';

/** The activity failed with an `ApplicationFailure` of this type. */
function isFailure(err: unknown, type: string): boolean {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === type;
}
