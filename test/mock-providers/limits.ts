/**
 * Rate limits as a provider enforces them (Anthropic's token buckets, OpenAI's shorter periods): requests and input
 * tokens per minute, each a bucket of `burstSeconds` of the limit that refills continuously. A request over a limit
 * is answered 429 with `retry-after` (seconds until it would fit), as the real APIs do; nothing of it is counted.
 */
export interface MockLimitsOptions {
  requestsPerMinute?: number;
  inputTokensPerMinute?: number;
  /** Seconds' worth of each limit a bucket holds (default 60). */
  burstSeconds?: number;
}

/** Input tokens of a request body as the mock counts them: its system prompt's and messages' text, 4 characters a token. */
export function inputTokensOf(body: any): number {
  let chars = 0;
  const text = (c: unknown): void => {
    if (typeof c === 'string') chars += c.length;
    else if (Array.isArray(c)) c.forEach(text);
    else if (c && typeof c === 'object') {
      const o = c as Record<string, unknown>;
      if (typeof o.text === 'string') chars += o.text.length;
      if (o.content !== undefined) text(o.content);
      if (o.input !== undefined) chars += JSON.stringify(o.input).length;
    }
  };
  text(body?.system);
  text(body?.messages);
  return Math.max(1, Math.ceil(chars / 4));
}

export class MockLimits {
  private used = { requests: 0, input: 0 };
  private at = performance.now();
  /** Requests answered 429. */
  rejected = 0;
  /** When each accepted request came (ms, performance.now()) and its input tokens. */
  readonly accepted: { at: number; input: number }[] = [];

  constructor(private readonly opts: MockLimitsOptions) {}

  /** Counts the request when it fits (undefined), else the 429's `retry-after` in seconds. */
  admit(input: number): number | undefined {
    const now = performance.now();
    const burst = (this.opts.burstSeconds ?? 60) / 60;
    const dims = [
      ['requests', this.opts.requestsPerMinute, 1],
      ['input', this.opts.inputTokensPerMinute, input],
    ] as const;
    for (const [dim, per] of dims)
      if (per !== undefined) this.used[dim] = Math.max(0, this.used[dim] - (per / 60_000) * (now - this.at));
    this.at = now;
    for (const [dim, per, need] of dims) {
      if (per === undefined || this.used[dim] + need <= per * burst) continue;
      this.rejected += 1;
      return Math.max(1, Math.ceil(((this.used[dim] + need - per * burst) / per) * 60));
    }
    for (const [dim, , need] of dims) this.used[dim] += need;
    this.accepted.push({ at: now, input });
    return undefined;
  }
}
