import type { AssistantMessage, Message } from '../../common/messages.js';
import type { PartialGrowth } from '../../common/stream.js';
import type { JsonSchema } from '../tools/define-tool.js';

/** Per-run model options; they travel in the run input. Never secrets. */
export interface ModelOptions {
  maxTokens?: number;
  temperature?: number;
  reasoning?: 'off' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';
  /** The provider's prompt cache: pi-ai's `cacheRetention` (docs/models.md#prompt-caching). Default `short`. */
  cacheRetention?: 'none' | 'short' | 'long';
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
  /**
   * The conversation's stable id (the run's workflow id: the same on every attempt and after continue-as-new), for
   * providers that key their prompt cache or routing by session (pi-ai's `sessionId`). Absent: no session key.
   */
  sessionId?: string;
}

/**
 * A model provider. `callModel` picks one by the run's `model` prefix (`scripted/…`, `anthropic/…`).
 *
 * Contract: `stream` resolves with the final assistant message. When `signal` aborts it must stop at once and resolve
 * with stopReason `aborted` and the partial content received so far. Provider failures are thrown: an
 * `ApplicationFailure` decides retryability (dotted types such as `ModelError.RateLimit`); any other thrown error is
 * retried by Temporal. `onPartial` receives snapshots of the partial message as it streams (heartbeated, throttled).
 *
 * Snapshots. A snapshot is not changed after it was passed (copy what later deltas change; strings are immutable, so
 * a shallow copy of the message and its blocks is enough). A streaming tool call's `arguments` may be the JSON text
 * received so far (a string); an arguments object is read once, so changed arguments must be a new object. Pass
 * `grew` when you know what the snapshot added to the last one (block `block`'s text, thinking or arguments text grew
 * by `text` at its end): Keel's live stream then costs O(delta) for that block; without it, it compares a changed
 * block's whole text with the last snapshot's, which is quadratic in a block that streams in many small deltas.
 *
 * Size. A reply whose blocks stream more than 2,000,000 characters (or whose final message is more than 2,000,000
 * bytes of JSON) is refused: `callModel` aborts the request through `signal` and fails non-retryably with
 * `ModelError.ResponseTooLarge` (docs/errors.md).
 */
export interface ModelProvider {
  stream(
    request: ModelRequest,
    signal: AbortSignal,
    onPartial: (partial: AssistantMessage, grew?: PartialGrowth) => void,
  ): Promise<AssistantMessage>;
  /** Checks a model id at run start. Returns an error text that says how to name a model, or undefined when it is known. */
  checkModel?(modelId: string): string | undefined;
  /** The model's context window in tokens, from its catalog; undefined when unknown (compaction is then off unless configured). */
  contextWindow?(modelId: string): number | undefined;
}

export type { PartialGrowth } from '../../common/stream.js';

/**
 * The `signal.reason` when `callModel` stops a reply over the size limit: the attempt fails with its own error, so a
 * provider may resolve at once without building the aborted message from the partial content (O(reply)).
 */
export const REPLY_TOO_LARGE = new Error('the reply is over the size limit');

/** Providers by prefix. The key `*` serves every prefix without its own entry. */
export type ModelRegistry = Record<string, ModelProvider>;
