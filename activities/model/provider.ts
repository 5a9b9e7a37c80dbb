import type { AssistantMessage, Message } from '../../common/messages.js';
import type { JsonSchema } from '../tools/define-tool.js';

/** Per-run model options; they travel in the run input. Never secrets. */
export interface ModelOptions {
  maxTokens?: number;
  temperature?: number;
  reasoning?: 'off' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';
}

/** One model request, built by the `callModel` activity from the transcript it read by reference. */
export interface ModelRequest {
  /** The provider prefix of `model`, e.g. `anthropic` for `anthropic/claude-sonnet-4-5`. */
  provider: string;
  /** The model id after the prefix, e.g. `claude-sonnet-4-5`. */
  modelId: string;
  systemPrompt: string;
  messages: Message[];
  tools: { name: string; description: string; parameters: JsonSchema }[];
  options: ModelOptions;
}

/**
 * A model provider. `callModel` picks one by the run's `model` prefix (`scripted/…`, `anthropic/…`).
 *
 * Contract: `stream` resolves with the final assistant message. When `signal` aborts it must stop at once and resolve
 * with stopReason `aborted` and the partial content received so far. Provider failures are thrown: an
 * `ApplicationFailure` decides retryability (dotted types such as `ModelError.RateLimit`); any other thrown error is
 * retried by Temporal. `onPartial` receives snapshots of the partial message as it streams (heartbeated, throttled).
 */
export interface ModelProvider {
  stream(
    request: ModelRequest,
    signal: AbortSignal,
    onPartial: (partial: AssistantMessage) => void,
  ): Promise<AssistantMessage>;
  /** Checks a model id at run start. Returns an error text that says how to name a model, or undefined when it is known. */
  checkModel?(modelId: string): string | undefined;
  /** The model's context window in tokens, from its catalog; undefined when unknown (compaction is then off unless configured). */
  contextWindow?(modelId: string): number | undefined;
}

/** Providers by prefix. The key `*` serves every prefix without its own entry. */
export type ModelRegistry = Record<string, ModelProvider>;
