import type { Context } from '@temporalio/activity';

/**
 * Keeps an activity heartbeating: once a second (so cancellation and a lost worker are noticed) and on progress, at
 * most four times a second, with the latest details. `initial` details (e.g. usage carried from earlier attempts) are
 * sent at once; progress that came too soon after the last heartbeat is sent once `spacingMs` (default 250) have passed since it; otherwise the first heartbeat waits a second (one at start costs ~3 ms and cannot carry a cancellation).
 * `details` may be a function that builds them, called only when a heartbeat goes out (a stream's many deltas cost
 * nothing until then). `stop()` must be called when the activity settles.
 */
export function startHeartbeat(
  ctx: Context,
  initial?: unknown,
  spacingMs = 250,
): { update(details: unknown): void; stop(): void } {
  let latest = initial;
  let lastSent = 0;
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
