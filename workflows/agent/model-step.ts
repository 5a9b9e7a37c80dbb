/** Pi's "stream one assistant response", on Temporal: the `callModel` activity, with failures turned into messages. */
import { patched } from '@temporalio/workflow';
import { malformedModelOutput } from '../../common/errors.js';
import { modelCallFailure } from '../failure-outcomes.js';
import { assistantMessageProblem, hasStringArguments, usageProblem } from '../../common/message-checks.js';
import { emptyUsage, type AssistantMessage, type Usage } from '../../common/messages.js';
import { transcriptTail } from '../../common/transcript-tail.js';
import { modelActivities } from '../activities.js';
import { workflowNow } from '../clock.js';
import { compact, compactionDue } from './compaction.js';
import { PATCH } from '../patches.js';
import type { ModelContext } from './model-context.js';

/** The assistant message of a model step, with the activity summaries of its tool calls (for the tool batch). */
export interface ModelStep {
  message: AssistantMessage;
  toolSummaries?: Record<string, string>;
}

/**
 * Calls the model with a reference to the transcript. Never throws: when the call is aborted the message has stopReason
 * `aborted`; when Temporal's retries are exhausted (or the failure is non-retryable) it has stopReason `error` and the
 * provider's message (as Pi's Agent synthesises for a thrown stream). Undefined when the run's budget allows no
 * further request, before the call or because the call's failed attempts spent it (`lastError` says which limit).
 * Before the call the context may be compacted (workflows/agent/compaction.ts); a call refused as too long
 * (`ModelError.ContextOverflow`) is retried once after a compaction, as Pi does — the refused reply is not kept.
 * The usage of every request counts in `ctx.state` (the budget checks it before the next one).
 */
export async function streamAssistant(ctx: ModelContext): Promise<ModelStep | undefined> {
  const due = compactionDue(ctx, 'threshold');
  if (due && (await compact(ctx, due)) === 'budget') return undefined;
  const first = await callOnce(ctx);
  if (!first?.overflow) return first;
  const overflow = compactionDue(ctx, 'overflow');
  const compacted = overflow ? await compact(ctx, overflow) : 'skipped';
  if (compacted === 'budget') return undefined;
  if (compacted === 'skipped') return { message: first.message };
  return callOnce(ctx);
}

/** One `callModel` activity (after the budget check); `overflow`: the provider refused the context as too long. */
async function callOnce(ctx: ModelContext): Promise<(ModelStep & { overflow?: boolean }) | undefined> {
  const st = ctx.state;
  const { config, transcript } = st;
  const turn = st.turns + 1;
  if (ctx.budget.stopBeforeModelCall()) return undefined;
  ctx.modelCalling(workflowNow());
  const left = ctx.budget.left();
  ctx.budget.holdOwnRequest();
  try {
    const result = await ctx.runCancellable(() =>
      modelActivities(config).callModel.executeWithOptions({ summary: `model ${config.model} · turn ${turn}` }, [
        {
          run: ctx.run,
          messageCount: transcript.length,
          digest: ctx.digests[transcript.length],
          ...(patched(PATCH.transcriptTail) ? transcriptTail(transcript) : {}),
          model: config.model,
          systemPrompt: config.systemPrompt ?? '',
          tools: st.tools.map((t) => t.name),
          options: config.modelOptions ?? {},
          turn,
          ...left,
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
      return { message: errorMessage(config.model, malformedModelOutput(problem), emptyUsage(), false) };
    ctx.budget.spend(result.message.usage, result.failedAttemptsUsage);
    return { message: result.message, toolSummaries: result.toolSummaries ?? {} };
  } catch (err) {
    const failure = modelCallFailure(err);
    ctx.budget.releaseOwnRequest();
    ctx.budget.spend(failure.usage);
    if (failure.treeBudget) ctx.budget.stopWith(failure.treeBudget);
    if ((failure.budgetExceeded || failure.treeBudget) && ctx.budget.stopBeforeModelCall()) return undefined;
    const message = errorMessage(config.model, failure.text, failure.usage ?? emptyUsage(), failure.aborted);
    return { message, ...(failure.contextOverflow ? { overflow: true } : {}) };
  } finally {
    ctx.budget.releaseOwnRequest();
    ctx.modelCalling(undefined);
  }
}

/** The assistant message Keel records for a model call that produced none (Pi's synthesised error message). */
function errorMessage(model: string, text: string, usage: Usage, aborted: boolean): AssistantMessage {
  const [provider, ...rest] = model.split('/');
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
