/** The provider limits' ledger (common/limits/ledger.ts): buckets, the line by priority, the minimum share, leases. */
import { describe, expect, it } from 'vitest';
import { limitFor, limitSpec, parseLimitSpecs, type Priority } from '../../common/limits/definition.js';
import {
  CLIENT_LEASE_MS,
  LimiterLedger,
  newLedger,
  PICKUP_MS,
  SHARE_EVERY,
  TICKET_LEASE_MS,
  type LimitAsk,
  type LimitSettle,
} from '../../common/limits/ledger.js';

const SPEC = 'rpm=60';
const ask = (request: string, priority: Priority, input = 10): LimitAsk => ({
  request,
  attempt: 1,
  priority,
  input,
  outputCap: 100,
  holdMs: 600_000,
  spec: SPEC,
  workflowId: request,
});

describe('provider limits ledger', () => {
  it('grants within a bucket, then waits with the limit named, then grants as it refills', () => {
    const l = new LimiterLedger(newLedger('anthropic', { inputTokensPerMinute: 100_000 }, 0));
    expect(l.reserve({ ...ask('a', 2, 97_000), spec: 'itpm=100000' }, 0)).toMatchObject({ granted: true });
    const waiting = l.reserve({ ...ask('b', 2, 2_000), spec: 'itpm=100000' }, 0);
    expect(waiting).toMatchObject({
      granted: false,
      wait: 'waiting for anthropic tokens/min: 97,000 of 100,000 in use',
      position: 0,
    });
    // 100,000 a minute refill: after 2 s there is room for 2,000 more (less the slack kept for the request's way)
    expect(l.reserve({ ...ask('b', 2, 2_000), spec: 'itpm=100000' }, 2_000)).toMatchObject({ granted: true });
  });

  it('grants the waiting line by priority, the oldest getting one grant in SHARE_EVERY', () => {
    const l = new LimiterLedger(newLedger('k', { concurrentRequests: 1 }, 0));
    expect(l.reserve({ ...ask('first', 2), spec: 'concurrent=1' }, 0)).toMatchObject({ granted: true });
    // a batch task asks first, then interactive ones
    l.reserve({ ...ask('batch', 4), spec: 'concurrent=1' }, 1);
    for (let i = 0; i < 10; i++) l.reserve({ ...ask(`i${i}`, 2), spec: 'concurrent=1' }, 2 + i);
    const order: string[] = [];
    let holder = 'first';
    for (let n = 0; n < 6; n++) {
      l.settle({ request: holder, attempt: 1, usage: { input: 10, output: 5 } }, 100 + n);
      holder = Object.keys(l.st.inFlight)[0];
      order.push(holder);
      l.reserve({ ...ask(holder, holder === 'batch' ? 4 : 2), spec: 'concurrent=1' }, 100 + n); // picked up
    }
    // interactive first, and the batch task within SHARE_EVERY grants
    expect(order.indexOf('batch')).toBeGreaterThanOrEqual(0);
    expect(order.indexOf('batch')).toBeLessThan(SHARE_EVERY);
    expect(order[0]).toBe('i0');
  });

  it('a ticket not asked about again is dropped; a newer attempt of a granted request keeps its place', () => {
    const l = new LimiterLedger(newLedger('k', { concurrentRequests: 1 }, 0));
    l.reserve({ ...ask('a', 2), spec: 'concurrent=1' }, 0);
    l.reserve({ ...ask('b', 2), spec: 'concurrent=1' }, 1);
    expect(l.snapshot(2).waiting).toMatchObject([{ priority: 2, count: 1 }]);
    l.advance(TICKET_LEASE_MS + 10);
    expect(l.snapshot(TICKET_LEASE_MS + 10).waiting).toEqual([]);
    // a's worker died: its next attempt releases the lost one's slot and is granted in its place
    expect(l.reserve({ ...ask('a', 2), attempt: 2, spec: 'concurrent=1' }, TICKET_LEASE_MS + 20)).toMatchObject({
      granted: true,
    });
    l.settle({ request: 'a', attempt: 2, usage: { input: 1, output: 1 } }, TICKET_LEASE_MS + 30);
    expect(l.snapshot(TICKET_LEASE_MS + 30).inUse.concurrent).toBe(0);
  });

  it('a retry-after holds every request back until it passes', () => {
    const l = new LimiterLedger(newLedger('k', { requestsPerMinute: 600 }, 0));
    l.backoff(5_000, 0);
    expect(l.reserve({ ...ask('a', 2), spec: 'rpm=600' }, 1_000)).toMatchObject({
      granted: false,
      wait: 'waiting for k: the provider asked to retry after 4 s',
    });
    expect(l.reserve({ ...ask('a', 2), spec: 'rpm=600' }, 5_001)).toMatchObject({ granted: true });
  });

  it('a worker with another definition is told which one is enforced', () => {
    const l = new LimiterLedger(newLedger('anthropic', { requestsPerMinute: 60 }, 0));
    expect(l.reserve({ ...ask('a', 2), spec: 'rpm=120' }, 0)).toMatchObject({
      granted: true,
      conflict:
        "Provider limits for anthropic differ: this namespace's limiter enforces rpm=60, this worker was given rpm=120",
    });
  });

  it('parses specs and matches the most specific key', () => {
    const limits = parseLimitSpecs('anthropic:rpm=60,itpm=100000; anthropic/claude-haiku-*:rpm=500,concurrent=5');
    expect(limitSpec(limits.anthropic)).toBe('rpm=60,itpm=100000');
    expect(limitFor(limits, 'anthropic/claude-haiku-4-5')?.key).toBe('anthropic/claude-haiku-*');
    expect(limitFor(limits, 'anthropic/claude-sonnet-4-5')?.key).toBe('anthropic');
    expect(limitFor(limits, 'openai/gpt-5')).toBeUndefined();
    expect(() => parseLimitSpecs('anthropic:rpm=fast')).toThrow(
      'Provider limit "anthropic:rpm=fast": "rpm=fast" is not a limit (write it as <provider or model pattern>:rpm=60,itpm=100000,otpm=20000,concurrent=10)',
    );
  });

  it("a worker's batch: settles first, its asks' grants handed to it alone, its tickets' leases renewed", () => {
    const l = new LimiterLedger(newLedger('k', { concurrentRequests: 2 }, 0));
    const batch = (client: string, asks: LimitAsk[], settles: LimitSettle[] = [], now = 0) =>
      l.batch({ client, spec: 'concurrent=2', asks, settles }, now);
    const one = batch('w1', [ask('a', 2), ask('b', 2), ask('c', 4)]);
    expect(Object.keys(one.granted)).toEqual(['a', 'b']);
    expect(one).toMatchObject({ wait: 'waiting for k concurrent requests: 2 of 2 in use' });
    // another worker's batch is not answered with w1's grants; it waits behind c
    expect(batch('w2', [ask('d', 4)], [], 1).granted).toEqual({});
    // w1 polls with nothing new for longer than a lease: its ticket stays, w2's lapses
    batch('w1', [], [], TICKET_LEASE_MS / 2);
    batch('w1', [], [], TICKET_LEASE_MS + 10);
    expect(l.snapshot(TICKET_LEASE_MS + 10).waiting).toMatchObject([{ priority: 4, count: 1, workflowIds: ['c'] }]);
    // a settles and c is granted in the same batch; asking again is harmless (the same grants)
    const settled = batch(
      'w1',
      [],
      [{ request: 'a', attempt: 1, usage: { input: 10, output: 5 } }],
      TICKET_LEASE_MS + 20,
    );
    expect(Object.keys(settled.granted).sort()).toEqual(['b', 'c']);
    expect(batch('w1', [], [], TICKET_LEASE_MS + 30).granted).toEqual(settled.granted);
  });

  it("a newOnly batch is answered with what its client was not handed yet, and a repeated ask's grant", () => {
    const l = new LimiterLedger(newLedger('k', { concurrentRequests: 2 }, 0));
    const bare = (request: string): LimitAsk => ({ ...ask(request, 2), spec: undefined, workflowId: undefined });
    const batch = (asks: LimitAsk[], settles: LimitSettle[], now: number) =>
      l.batch({ client: 'w1', spec: 'concurrent=2', asks, settles, newOnly: true }, now);
    expect(batch([bare('wf/run/1'), bare('wf/run/2'), bare('a/b/run/3')], [], 0)).toEqual({
      granted: { 'wf/run/1': { attempt: 1 }, 'wf/run/2': { attempt: 1 } },
      wait: 'waiting for k concurrent requests: 2 of 2 in use',
      retryInMs: 250,
      inUse: 20,
      waiting: 1,
    });
    // the waiting ticket's workflow is its request's (without runId and activityId)
    expect(l.snapshot(0).waiting).toMatchObject([{ priority: 2, count: 1, workflowIds: ['a/b'] }]);
    // handed grants are not repeated; a settlement frees room and the new grant is handed once
    const settled = batch([], [{ request: 'wf/run/1', attempt: 1, usage: { input: 10, output: 5 } }], 1);
    expect(settled.granted).toEqual({ 'a/b/run/3': { attempt: 1 } });
    expect(settled.waiting).toBeUndefined();
    expect(batch([], [], 2).granted).toEqual({});
    // a client that lost an answer asks again: its grant is answered again
    expect(batch([bare('a/b/run/3')], [], 3).granted).toEqual({ 'a/b/run/3': { attempt: 1 } });
  });

  it('an attempt that gave up waiting (keep) leaves its ticket for its next attempt, in its place', () => {
    const l = new LimiterLedger(newLedger('k', { concurrentRequests: 1 }, 0));
    const batch = (asks: LimitAsk[], settles: LimitSettle[], now: number) =>
      l.batch({ client: 'w1', spec: 'concurrent=1', asks, settles }, now);
    batch([ask('a', 2), ask('b', 4), ask('c', 4)], [], 0);
    batch([], [{ request: 'b', attempt: 1, keep: true }], 1);
    batch([], [{ request: 'c', attempt: 1 }], 2); // cancelled: its ticket goes
    expect(l.snapshot(3).waiting).toMatchObject([{ priority: 4, count: 1, workflowIds: ['b'] }]);
    l.settle({ request: 'a', attempt: 1, usage: { input: 1, output: 1 } }, 4);
    expect(batch([{ ...ask('b', 4), attempt: 2 }], [], 5).granted).toMatchObject({ b: { attempt: 2 } });
  });

  it("a stale attempt's ask (its request has a newer one) takes nothing from the newer attempt", () => {
    const l = new LimiterLedger(newLedger('k', { concurrentRequests: 1 }, 0));
    const batch = (client: string, asks: LimitAsk[], now: number) =>
      l.batch({ client, spec: 'concurrent=1', asks, settles: [] }, now);
    batch('w1', [ask('a', 2)], 0);
    batch('w1', [ask('b', 2)], 1); // waits
    // b's attempt 1 timed out on w1 (still alive); attempt 2 asks from w2, then w1 sends its waiting asks again
    batch('w2', [{ ...ask('b', 2), attempt: 2 }], 2);
    batch('w1', [ask('b', 2)], 3);
    l.settle({ request: 'a', attempt: 1, usage: { input: 1, output: 1 } }, 4);
    expect(batch('w1', [], 5).granted).toEqual({});
    expect(batch('w2', [], 6).granted).toMatchObject({ b: { attempt: 2 } });
  });

  it("a silent client's grants are reclaimed after its lease (its worker died after its attempts ended)", () => {
    const l = new LimiterLedger(newLedger('k', { concurrentRequests: 2 }, 0));
    const batch = (client: string, asks: LimitAsk[], now: number) =>
      l.batch({ client, spec: 'concurrent=2', asks, settles: [] }, now);
    expect(l.nextLapse()).toBeUndefined(); // nothing held: the limiter sets no timer
    expect(Object.keys(batch('w1', [ask('a', 2)], 0).granted)).toEqual(['a']);
    expect(l.nextLapse()).toBe(CLIENT_LEASE_MS); // w1's lease on a (its deadline is 600 s)
    expect(Object.keys(batch('w2', [ask('b', 2), ask('c', 2)], 0).granted)).toEqual(['b']);
    // w1 keeps sending (a keep-alive): its grant holds past the lease; w2 went silent (killed) and c waits behind b
    batch('w1', [], CLIENT_LEASE_MS);
    // the limiter's timer is set for w2's lease on b (a query changes nothing)
    expect(l.nextLapse()).toBe(CLIENT_LEASE_MS);
    expect(l.snapshot(CLIENT_LEASE_MS + 1).inUse.concurrent).toBe(2);
    expect(Object.keys(l.st.inFlight).sort()).toEqual(['a', 'b']);
    // the next batch reclaims b: c (its ticket keeps its place for its next attempt) gets b's slot, d waits
    expect(batch('w3', [ask('d', 2)], CLIENT_LEASE_MS + 1).granted).toEqual({});
    expect(Object.keys(l.st.inFlight).sort()).toEqual(['a', 'c']);
    expect(l.st.clients).toEqual({ w1: CLIENT_LEASE_MS, w3: CLIENT_LEASE_MS + 1 });
    // the limiter's next wake: c's grant, made for a ticket, must be picked up within PICKUP_MS
    expect(l.nextLapse()).toBe(CLIENT_LEASE_MS + 1 + PICKUP_MS);
    // c's next attempt asks through w3 and takes the slot kept for it
    expect(batch('w3', [{ ...ask('c', 2), attempt: 2 }], CLIENT_LEASE_MS + 2).granted).toMatchObject({
      c: { attempt: 2 },
    });
  });
});
