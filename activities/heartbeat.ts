import type { Context } from '@temporalio/activity';

/**
 * Keeps an activity heartbeating: once a second (so cancellation and a lost worker are noticed) and on progress, at
 * most four times a second, with the latest details. `initial` details (e.g. usage carried from earlier attempts) are
 * sent at once; otherwise the first heartbeat waits a second (one at start costs ~3 ms and cannot carry a cancellation).
 * `details` may be a function that builds them, called only when a heartbeat goes out (a stream's many deltas cost
 * nothing until then). `stop()` must be called when the activity settles.
 */
export function startHeartbeat(ctx: Context, initial?: unknown): { update(details: unknown): void; stop(): void } {
  let latest = initial;
  let lastSent = 0;
  const send = () => {
    lastSent = performance.now();
    ctx.heartbeat(typeof latest === 'function' ? (latest as () => unknown)() : latest);
  };
  if (initial !== undefined) send();
  const timer = setInterval(send, 1000);
  return {
    update(details) {
      latest = details;
      if (performance.now() - lastSent >= 250) send();
    },
    stop() {
      clearInterval(timer);
    },
  };
}
