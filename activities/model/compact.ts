import { ApplicationFailure } from '@temporalio/common';
import {
  isCompactionEntry,
  messagesToSummarize,
  compactionSummaryText,
  summaryRequestText,
  SUMMARY_SYSTEM_PROMPT,
} from '../../common/compaction.js';
import { messageText, toolCallsOf } from '../../common/messages.js';
import type { CompactInput, CompactResult } from '../../common/wire.js';
import type { TranscriptCache } from '../transcript.js';
import { accountedAttempt, requireProvider } from './call-model.js';
import type { ModelRegistry } from './provider.js';
import { ErrorType } from '../../common/errors.js';
import type { ProviderLimitsGate } from '../limits/gate.js';
import { estimateRequest } from '../limits/estimate.js';

/**
 * Activity `compact`: reads the transcript by reference and asks the run's model for a summary of
 * transcript[from, keepFrom) (compaction entries left out), merged into the summary of entry `previous` when there is
 * one — one user message holding the conversation as text, Pi's way, so the model summarises instead of continuing it.
 * No tools. Usage is accounted like `callModel`'s (failed and lost attempts, `budgetLeft`). A reply that is an error,
 * cut at the token limit, or calls a tool fails non-retryably (`CompactionFailed`): the run then goes on uncompacted.
 */
export function createCompact(deps: {
  models: ModelRegistry;
  transcript: TranscriptCache;
  limits?: ProviderLimitsGate;
}) {
  return async function compact(input: CompactInput): Promise<CompactResult> {
    const limits = deps.limits?.forAttempt(input.model, input.priority);
    const { message, prior } = await accountedAttempt(
      input.budgetLeft,
      async (onPartial, signal) => {
        const { provider, prefix, modelId } = requireProvider(deps.models, input.model);
        const messages = await deps.transcript.messages(input.run, input.messageCount, input.digest);
        const previous = input.previous !== undefined ? messages[input.previous] : undefined;
        const text = summaryRequestText(
          messagesToSummarize(messages, input),
          isCompactionEntry(previous) ? compactionSummaryText(previous) : undefined,
        );
        const request = [{ role: 'user' as const, content: [{ type: 'text' as const, text }], timestamp: Date.now() }];
        if (limits) await limits.acquire(...estimateRequest(request, SUMMARY_SYSTEM_PROMPT, [], input.options));
        return provider.stream(
          {
            provider: prefix,
            modelId,
            systemPrompt: SUMMARY_SYSTEM_PROMPT,
            messages: request,
            tools: [],
            options: input.options,
          },
          signal,
          onPartial,
        );
      },
      undefined,
      input.treeBudget,
      limits,
    );
    const failed = (why: string) =>
      ApplicationFailure.create({
        message: `Summarization failed: ${why}`,
        type: ErrorType.CompactionFailed,
        nonRetryable: true,
        details: [{ usage: message.usage }],
      });
    if (message.stopReason === 'error' || message.stopReason === 'aborted')
      throw failed(message.errorMessage ?? message.stopReason);
    if (message.stopReason === 'length') throw failed('generation hit the token cap and the summary is incomplete');
    if (toolCallsOf(message).length > 0) throw failed('the model called a tool');
    return { summary: messageText(message), usage: message.usage, ...(prior ? { failedAttemptsUsage: prior } : {}) };
  };
}
