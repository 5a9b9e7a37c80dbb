/** Pi's "stream one assistant response", on Temporal: the `callModel` activity, with failures turned into messages. */

import { malformedModelOutput } from '../../common/errors.js';
import { modelCallFailure } from '../failure-outcomes.js';
import { assistantMessageProblem, hasStringArguments, usageProblem } from '../../common/message-checks.js';
import { emptyUsage, type AssistantMessage, type Usage } from '../../common/messages.js';
import { transcriptTail } from '../../common/transcript-tail.js';
import type { CallModelResult } from '../../common/wire.js';
import { modelActivities } from '../activities.js';
import { workflowNow } from '../clock.js';
import { compact, compactionDue, type CompactionDue } from './compaction.js';
import { PATCH } from '../patches.js';
import { activeModel, countModelUsage, switchAfter } from './fallback.js';
import type { ModelContext } from './model-context.js';
import { relayModelCall } from './stream-relay.js';
import { since } from '../since.js';

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
 *
 * A turn without compaction is one `then` on the activity's promise (no async function awaiting another): the workflow
 * code's promises are most of its CPU per turn (bench/replay-cost.ts), and the commands are the same.
 */
export function streamAssistant(ctx: ModelContext): Promise<ModelStep | undefined> {
  const due = compactionDue(ctx, 'threshold');
  return due ? compactThenCall(ctx, due) : callOnce(ctx, true);
}

/** A compaction due before the call (the context passed its threshold), then the call. */
async function compactThenCall(ctx: ModelContext, due: CompactionDue): Promise<ModelStep | undefined> {
  if ((await compact(ctx, due)) === 'budget') return undefined;
  return callOnce(ctx, true);
}

/** After a call refused as too long: one compaction and one more call; the refused reply is the step when none is due. */
async function afterOverflow(ctx: ModelContext, refused: AssistantMessage): Promise<ModelStep | undefined> {
  const overflow = compactionDue(ctx, 'overflow');
  const compacted = overflow ? await compact(ctx, overflow) : 'skipped';
  if (compacted === 'budget') return undefined;
  if (compacted === 'skipped') return { message: refused };
  return callOnce(ctx, false);
}

/** A model step, or the provider refused the context as too long (`overflow`). */
type Called = (ModelStep & { overflow?: boolean }) | undefined;

/**
 * One `callModel` activity (after the budget check). `retryOverflow`: a refusal as too long goes on to `afterOverflow`
 * once the call has settled (its own request released, the details updated), as the step's second part.
 */
function callOnce(ctx: ModelContext, retryOverflow: boolean): Promise<Called> {
  const st = ctx.state;
  const { config, transcript } = st;
  const turn = st.turns + 1;
  if (ctx.budget.stopBeforeModelCall()) return Promise.resolve(undefined);
  const now = workflowNow();
  const model = activeModel(st, now); // `config.model` unless the run moved to a fallback model (fallback.ts)
  ctx.modelCalling(now);
  const left = ctx.budget.left();
  ctx.budget.holdOwnRequest();
  const settle = (called: () => Called): Called | Promise<Called> => {
    let step: Called;
    try {
      step = called();
    } finally {
      ctx.budget.releaseOwnRequest();
      ctx.modelCalling(undefined);
    }
    return step?.overflow && retryOverflow ? afterOverflow(ctx, step.message) : step;
  };
  relayModelCall(transcript.length, ctx.events.seq);
  return ctx
    .runCancellable(() =>
      modelActivities(config).callModel.executeWithOptions({ summary: `model ${model} · turn ${turn}` }, [
        {
          run: ctx.run,
          messageCount: transcript.length,
          digest: ctx.digests[transcript.length],
          ...transcriptTail(transcript), // the input payload only: no patch (docs/versioning.md)
          model,
          systemPrompt: config.systemPrompt ?? '',
          tools: st.tools.map((t) => t.name),
          options: config.modelOptions ?? {},
          turn,
          ...left,
          ...ctx.providerPriority(), // the input payload only, and only for a run with a priority: no patch
        },
      ]),
    )
    .then(
      (result) =>
        settle(() => {
          try {
            return replied(ctx, result, model);
          } catch (err) {
            return failed(ctx, err, model);
          }
        }),
      (err: unknown) => {
        const next = switchAfter(ctx, model, err, workflowNow());
        if (next === undefined) return settle(() => failed(ctx, err, model));
        void settle(() => spentBeforeSwitch(ctx, err, model)); // undefined: no step, no overflow
        return callOnce(ctx, retryOverflow); // the next model takes the request
      },
    );
}

/** A request whose provider was down and that the next model takes: its failed attempts' usage counts. */
function spentBeforeSwitch(ctx: ModelContext, err: unknown, model: string): Called {
  const { usage } = modelCallFailure(err);
  ctx.budget.spend(usage);
  countModelUsage(ctx.state, model, usage);
  return undefined;
}

/** The model's reply: checked (a malformed one becomes an error message), its usage spent. */
function replied(ctx: ModelContext, result: CallModelResult, model: string): Called {
  // a tool call whose arguments are a JSON string is kept and answered by its validation, as Pi does (was: the
  // whole message refused as malformed)
  const stringArguments = hasStringArguments(result.message) && since(PATCH.stringToolArguments);
  const problem =
    assistantMessageProblem(result.message, { stringArguments }) ??
    (result.failedAttemptsUsage ? usageProblem(result.failedAttemptsUsage) : undefined);
  if (problem && since(PATCH.malformedModelOutput))
    return { message: errorMessage(model, malformedModelOutput(problem), emptyUsage(), false) };
  ctx.budget.spend(result.message.usage, result.failedAttemptsUsage);
  countModelUsage(ctx.state, model, result.message.usage, result.failedAttemptsUsage);
  return { message: result.message, toolSummaries: result.toolSummaries ?? {} };
}

/** A failed call: its usage spent, the run stopped when a budget says so, else Pi's error message. */
function failed(ctx: ModelContext, err: unknown, model: string): Called {
  const failure = modelCallFailure(err);
  ctx.budget.releaseOwnRequest();
  ctx.budget.spend(failure.usage);
  countModelUsage(ctx.state, model, failure.usage);
  if (failure.treeBudget) ctx.budget.stopWith(failure.treeBudget);
  if ((failure.budgetExceeded || failure.treeBudget) && ctx.budget.stopBeforeModelCall()) return undefined;
  const message = errorMessage(model, failure.text, failure.usage ?? emptyUsage(), failure.aborted);
  return { message, ...(failure.contextOverflow ? { overflow: true } : {}) };
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
