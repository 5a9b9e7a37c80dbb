/** Pi's "stream one assistant response", on Temporal: the `callModel` activity, with failures turned into messages. */
import { patched } from '@temporalio/workflow';
import { malformedModelOutput } from '../../common/errors.js';
import { modelCallFailure } from '../failure-outcomes.js';
import { assistantMessageProblem, hasStringArguments, usageProblem } from '../../common/message-checks.js';
import { addUsage, emptyUsage, type AssistantMessage, type Usage } from '../../common/messages.js';
import { modelActivities } from '../activities.js';
import { afterModelCall, budgetLeft, stopBeforeModelCall } from './budget.js';
import { workflowNow } from '../clock.js';
import { compact, compactionDue } from './compaction.js';
import { PATCH } from '../patches.js';
import { runCancellable, type Session } from './session.js';
import { publishDetails } from './visibility.js';

/**
 * Calls the model with a reference to the transcript. Never throws: when the call is aborted the message has stopReason
 * `aborted`; when Temporal's retries are exhausted (or the failure is non-retryable) it has stopReason `error` and the
 * provider's message (as Pi's Agent synthesises for a thrown stream). Undefined when the run's budget allows no
 * further request, before the call or because the call's failed attempts spent it (`lastError` says which limit).
 * Before the call the context may be compacted (workflows/agent/compaction.ts); a call refused as too long
 * (`ModelError.ContextOverflow`) is retried once after a compaction, as Pi does — the refused reply is not kept.
 */
export async function streamAssistant(s: Session): Promise<AssistantMessage | undefined> {
  const due = compactionDue(s, 'threshold');
  if (due && (await compact(s, due)) === 'budget') return undefined;
  const first = await callOnce(s);
  if (!first?.overflow) return first?.message;
  const overflow = compactionDue(s, 'overflow');
  const compacted = overflow ? await compact(s, overflow) : 'skipped';
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
    // a tool call whose arguments are a JSON string is kept and answered by its validation, as Pi does (was: the
    // whole message refused as malformed)
    const stringArguments = hasStringArguments(result.message) && patched(PATCH.stringToolArguments);
    const problem =
      assistantMessageProblem(result.message, { stringArguments }) ??
      (result.failedAttemptsUsage ? usageProblem(result.failedAttemptsUsage) : undefined);
    if (problem && patched(PATCH.malformedModelOutput))
      return { message: errorMessage(s, malformedModelOutput(problem), emptyUsage(), false) };
    s.state.usage = addUsage(addUsage(s.state.usage, result.message.usage), result.failedAttemptsUsage);
    afterModelCall(s);
    s.toolSummaries = result.toolSummaries ?? {};
    return { message: result.message };
  } catch (err) {
    const failure = modelCallFailure(err);
    s.state.usage = addUsage(s.state.usage, failure.usage);
    afterModelCall(s);
    if (failure.budgetExceeded && stopBeforeModelCall(s)) return undefined;
    const message = errorMessage(s, failure.text, failure.usage ?? emptyUsage(), failure.aborted);
    return { message, ...(failure.contextOverflow ? { overflow: true } : {}) };
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
