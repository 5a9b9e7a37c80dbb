import type { Context } from '@temporalio/activity';

/**
 * Keeps an activity heartbeating: once a second (so cancellation and a lost worker are noticed) and on progress, at
 * most once per `spacingMs` (default 250), with the latest details. `initial` details (e.g. usage carried from earlier
 * attempts) are sent at once. Progress counts from the activity's start as from a heartbeat: what comes within
 * `spacingMs` of the start (or of the last heartbeat) is sent once they have passed, so an activity that ends sooner
 * sends none (0.12.0: a fast model call was one heartbeat RPC a turn, 1.18× the engine floor's turn in bench section 1;
 * a real model's first token comes later than that, and goes out at once).
 * `details` may be a function that builds them, called only when a heartbeat goes out (a stream's many deltas cost
 * nothing until then). `stop()` must be called when the activity settles.
 */
export function startHeartbeat(
  ctx: Context,
  initial?: unknown,
  spacingMs = 250,
): { update(details: unknown): void; stop(): void } {
  let latest = initial;
  let lastSent = performance.now();
  const send = () => {
    lastSent = performance.now();
    ctx.heartbeat(typeof latest === 'function' ? (latest as () => unknown)() : latest);
  };
  if (initial !== undefined) send();
  const timer = setInterval(send, 1000);
  // progress held back by the spacing goes out when it ends, not at the next 1 s tick
  let trailing: ReturnType<typeof setTimeout> | undefined;
  return {
    update(details) {
      latest = details;
      const wait = spacingMs - (performance.now() - lastSent);
      if (wait <= 0) send();
      else
        trailing ??= setTimeout(() => {
          trailing = undefined;
          send();
        }, wait);
    },
    stop() {
      clearInterval(timer);
      if (trailing) clearTimeout(trailing);
    },
  };
}
