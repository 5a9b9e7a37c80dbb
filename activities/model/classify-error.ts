/**
 * Maps a failed model call to the Temporal `ApplicationFailure` that decides its retry (spec §4.2).
 *
 * Inputs, most structured first: the HTTP status and headers of the failed response (captured with pi-ai's
 * `onResponse` and the `fetch` hook), a transport error thrown by `fetch` (connection refused/reset, timeout),
 * pi-ai's own helpers (`isContextOverflow`, `isRetryableAssistantError`) and the message's `rawStopReason`. Error text
 * is read only where pi-ai's helpers read it, or when no status was captured at all.
 *
 * | condition                                  | type                      | retry                     |
 * |--------------------------------------------|---------------------------|---------------------------|
 * | context overflow (pi-ai) or HTTP 413       | ModelError.ContextOverflow | non-retryable            |
 * | 429                                        | ModelError.RateLimit      | retryable, `retry-after`  |
 * | 429 that pi-ai calls quota/billing         | ModelError.QuotaExceeded  | non-retryable             |
 * | 408                                        | ModelError.Timeout        | retryable, `retry-after`  |
 * | 409                                        | ModelError.Conflict       | retryable, `retry-after`  |
 * | 5xx                                        | ModelError.Server         | retryable, `retry-after`  |
 * | 400, 422, other 4xx                        | ModelError.BadRequest     | non-retryable             |
 * | 401, 403                                   | ModelError.Auth           | non-retryable             |
 * | 404                                        | ModelError.NotFound       | non-retryable             |
 * | no response: fetch threw (reset, refused)  | ModelError.Network / .Timeout | retryable             |
 * | stream broke after a 2xx, or no status and pi-ai calls it transient | ModelError.Network / .Timeout / .RateLimit / .Server | retryable |
 * | refusal / content filter stop              | ModelError.ContentFilter  | non-retryable             |
 * | anything else pi-ai does not call transient | ModelError.Unknown       | non-retryable             |
 * | a thrown TypeError / ReferenceError / SyntaxError (not JSON.parse's) | ModelError.ProgrammingError | non-retryable |
 *
 * The failure's message is the provider's message (pi-ai's `errorMessage`), with any API key replaced by
 * `[REDACTED]`; its `details[0]` is a {@link ModelErrorDetails} that carries the failed attempt's `usage`.
 */
import {
  isContextOverflow,
  isRetryableAssistantError,
  type AssistantMessage as PiAssistantMessage,
} from '@earendil-works/pi-ai';
import { ApplicationFailure } from '@temporalio/common';
import { ErrorType, type ModelErrorType } from '../../common/errors.js';
import { emptyUsage, type AssistantMessage, type Usage } from '../../common/messages.js';

/** `details[0]` of every model failure. Plain JSON. */
export interface ModelErrorDetails {
  /** Usage of the failed attempt (zeros when the provider reported none); the workflow adds it to the run's usage. */
  usage: Usage;
  provider?: string;
  api?: string;
  model?: string;
  /** HTTP status of the failed response, when there was one. */
  status?: number;
  /** The provider's requested delay (`retry-after-ms` / `retry-after`), also set as `nextRetryDelay`. */
  retryAfterMs?: number;
}

/** Status and headers of the last HTTP response of the attempt (header names lower-case). */
export interface CapturedResponse {
  status: number;
  headers: Record<string, string>;
}

export interface ClassifyInput {
  /** The failed final message (stopReason `error`); pi-ai's extra fields such as `rawStopReason` are read too. */
  message?: AssistantMessage & { rawStopReason?: string };
  /** A thrown error, when there is no failed message. */
  error?: unknown;
  /** The last HTTP response of the attempt, if any arrived. */
  response?: CapturedResponse;
  /** What `fetch` threw when no response arrived (connection refused/reset, DNS, timeout). */
  transportError?: unknown;
  /** Values that must never appear in the failure (API keys). */
  secrets?: readonly string[];
  /** The model's context window, for pi-ai's silent-overflow check. */
  contextWindow?: number;
}

const CONTENT_FILTER_STOPS = new Set(['refusal', 'sensitive', 'content_filter', 'incomplete.content_filter']);

/**
 * Whether `error` is a bug in code (a provider's or a hook's) that fails the same way on every attempt: a `TypeError`,
 * `ReferenceError`, or a `SyntaxError` other than `JSON.parse`'s (a malformed response may be transient).
 */
export function isProgrammingError(error: unknown): error is Error {
  if (error instanceof TypeError || error instanceof ReferenceError) return true;
  return error instanceof SyntaxError && !/\bat JSON\.parse\b/.test(error.stack ?? '');
}

/**
 * The non-retryable failure for a programming error: type `ModelError.ProgrammingError`, message `<name>: <message>`,
 * `secrets` redacted from its message, stack and cause.
 */
export function programmingErrorFailure(
  error: Error,
  usage: Usage = emptyUsage(),
  secrets: readonly string[] = [],
): ApplicationFailure {
  const redact = (text: string) => redactSecrets(text, secrets);
  let cause = error;
  if (redact(error.message) !== error.message || (error.stack && redact(error.stack) !== error.stack)) {
    cause = new Error(redact(error.message));
    cause.name = error.name;
    cause.stack = error.stack && redact(error.stack);
  }
  const failure = ApplicationFailure.create({
    message: redact(`${error.name}: ${error.message}`),
    type: ErrorType.ModelProgrammingError,
    nonRetryable: true,
    cause,
    details: [{ usage } satisfies ModelErrorDetails],
  });
  if (error.stack) failure.stack = redact(error.stack);
  return failure;
}

/** Builds the `ApplicationFailure` for a failed model attempt. Never throws. */
export function classifyModelError(input: ClassifyInput): ApplicationFailure {
  if (input.error instanceof ApplicationFailure) return input.error;
  if (isProgrammingError(input.error))
    return programmingErrorFailure(input.error, input.message?.usage, input.secrets ?? []);
  const secrets = input.secrets ?? [];
  const message = input.message;
  const rawText = message?.errorMessage ?? describeThrown(input.error) ?? 'Model call failed';
  const text = redactSecrets(rawText, secrets) || 'Model call failed';
  // pi-ai's helpers read `stopReason` + `errorMessage`; a thrown error is judged as the message it would have produced.
  const judged: PiAssistantMessage = {
    role: 'assistant',
    content: [],
    api: message?.api ?? 'unknown',
    provider: message?.provider ?? 'unknown',
    model: message?.model ?? 'unknown',
    usage: message?.usage ?? emptyUsage(),
    timestamp: message?.timestamp ?? 0,
    ...(message as Partial<PiAssistantMessage> | undefined),
    stopReason: 'error',
    errorMessage: rawText,
  };
  const errorStatus = input.response && input.response.status >= 400 ? input.response.status : undefined;
  const streamStarted = input.response !== undefined && errorStatus === undefined;
  const delay = errorStatus !== undefined && input.response ? retryAfterMs(input.response.headers) : undefined;
  const details: ModelErrorDetails = {
    usage: message?.usage ?? emptyUsage(),
    ...(message ? { provider: message.provider, api: message.api, model: message.model } : {}),
    ...(errorStatus !== undefined ? { status: errorStatus } : {}),
    ...(delay !== undefined ? { retryAfterMs: delay } : {}),
  };
  const retryable = (type: ModelErrorType) =>
    ApplicationFailure.create({
      message: text,
      type,
      nonRetryable: false,
      details: [details],
      ...(delay !== undefined ? { nextRetryDelay: delay } : {}),
    });
  const nonRetryable = (type: ModelErrorType) =>
    ApplicationFailure.create({ message: text, type, nonRetryable: true, details: [details] });

  if (errorStatus === 413 || isContextOverflow(judged, input.contextWindow))
    return nonRetryable(ErrorType.ModelContextOverflow);

  if (errorStatus !== undefined) {
    if (errorStatus === 429) {
      // pi-ai tells quota/billing exhaustion (resets after hours) from a transient throttle.
      return isRetryableAssistantError(judged)
        ? retryable(ErrorType.ModelRateLimit)
        : nonRetryable(ErrorType.ModelQuotaExceeded);
    }
    if (errorStatus === 408) return retryable(ErrorType.ModelTimeout);
    if (errorStatus === 409) return retryable(ErrorType.ModelConflict);
    if (errorStatus >= 500) return retryable(ErrorType.ModelServer);
    if (errorStatus === 401 || errorStatus === 403) return nonRetryable(ErrorType.ModelAuth);
    if (errorStatus === 404) return nonRetryable(ErrorType.ModelNotFound);
    return nonRetryable(ErrorType.ModelBadRequest);
  }

  if (input.transportError !== undefined && !streamStarted) {
    return retryable(isTimeoutError(input.transportError) ? ErrorType.ModelTimeout : ErrorType.ModelNetwork);
  }

  if (message?.rawStopReason !== undefined && CONTENT_FILTER_STOPS.has(message.rawStopReason)) {
    return nonRetryable(ErrorType.ModelContentFilter);
  }

  // No HTTP status: the stream broke after a 2xx, or no response was captured. pi-ai decides whether it is
  // transient; the type is then refined from its text.
  if (
    isRetryableAssistantError(judged) ||
    (input.transportError !== undefined && !isAbortError(input.transportError))
  ) {
    if (/rate.?limit|too many requests/i.test(rawText)) return retryable(ErrorType.ModelRateLimit);
    if (/overloaded|server.?error|internal.?error|service.?unavailable|api_error/i.test(rawText)) {
      return retryable(ErrorType.ModelServer);
    }
    if (isTimeoutError(input.transportError) || /timed? ?out|timeout|ETIMEDOUT/i.test(rawText)) {
      return retryable(ErrorType.ModelTimeout);
    }
    return retryable(ErrorType.ModelNetwork);
  }
  return nonRetryable(ErrorType.ModelUnknown);
}

/**
 * The delay a response asks for, in ms: `retry-after-ms` (milliseconds), else `retry-after` as seconds or as an HTTP
 * date. Undefined when absent, unparsable, or not in the future.
 */
export function retryAfterMs(
  headers: Record<string, string> | undefined,
  now: number = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const get = (name: string) => {
    for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value.trim();
    return undefined;
  };
  const ms = get('retry-after-ms');
  if (ms && /^\d+(\.\d+)?$/.test(ms)) {
    const value = Math.ceil(Number(ms));
    if (value > 0) return value;
  }
  const after = get('retry-after');
  if (!after) return undefined;
  if (/^\d+(\.\d+)?$/.test(after)) {
    const value = Math.ceil(Number(after) * 1000);
    return value > 0 ? value : undefined;
  }
  const date = Date.parse(after);
  if (Number.isNaN(date)) return undefined;
  const value = date - now;
  return value > 0 ? value : undefined;
}

/**
 * Replaces every occurrence of each secret with `[REDACTED]`: the secret as it is, trimmed, JSON-escaped (a key with a
 * newline or NUL quoted in an error), and each of its pieces between control characters. Forms shorter than 8
 * characters are left (they would redact ordinary words).
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  const forms = new Set<string>();
  for (const secret of secrets) {
    for (const form of [
      secret,
      secret.trim(),
      JSON.stringify(secret).slice(1, -1),
      ...secret.split(/[\u0000-\u001f\u007f]+/),
    ]) {
      if (form.length >= 8) forms.add(form);
    }
  }
  let out = text;
  for (const form of [...forms].sort((a, b) => b.length - a.length)) out = out.split(form).join('[REDACTED]');
  return out;
}

/** A thrown provider error's text: an Error's message, a string as it is, anything else as JSON. */
function describeThrown(error: unknown): string | undefined {
  if (error === undefined) return undefined;
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}

function errorChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  let current = error;
  for (let depth = 0; depth < 6 && current !== undefined && current !== null; depth++) {
    chain.push(current);
    current = (current as { cause?: unknown }).cause;
  }
  return chain;
}

function isTimeoutError(error: unknown): boolean {
  return errorChain(error).some((e) => {
    const name = (e as { name?: unknown }).name;
    const code = (e as { code?: unknown }).code;
    return name === 'TimeoutError' || code === 'ETIMEDOUT' || (typeof code === 'string' && /TIMEOUT/.test(code));
  });
}

function isAbortError(error: unknown): boolean {
  return errorChain(error).some((e) => (e as { name?: unknown }).name === 'AbortError');
}
