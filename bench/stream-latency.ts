/**
 * Section 10, stream (issue 26): token → consumer latency of `AgentRunHandle.stream()` and what streaming costs.
 *
 * A ticking provider (in this process, so one clock) emits numbered tokens `t<i> ` every BENCH_STREAM_TICK_MS (default
 * 10) and stamps each as it leaves; a `handle.stream()` consumer in the same process stamps each token when its event
 * arrives (a delta, or the message's `message_end` for the last ones a heartbeat did not carry before the call
 * completed). Beside it, the same provider consumed directly (its `onPartial`). BENCH_STREAM_RUNS runs (default 4) of
 * 300 tokens: ≥ 1,000 tokens. Then the cost, once those runs warmed the worker and the reader up, in
 * BENCH_STREAM_COST_RUNS rounds (default 6) of one run of each kind: history bytes per turn and CPU per turn (the median
 * over the rounds; this process: worker and consumer, the bench's own history fetch left out) of runs whose provider
 * streams and is read by a consumer, against runs whose provider streams with nobody reading (what the deltas cost the
 * worker) and runs whose provider returns the whole message at once (no deltas, no consumer). Before 0.13.1 the first
 * measured runs were the process's first and the history fetch was inside the timed spans: the streamed-and-read
 * figure carried the warm-up (803 ms against 279).
 *
 * The profile (one more run, not counted in the figures above): a probe describes the run every 5 ms beside the
 * consumer and stamps when each token's delta item first shows in the server's heartbeat details, which splits the
 * latency into token → heartbeat held by the server (the activity's spacing, the SDK's throttle, the RPC) and server →
 * consumer (the reader's poll wait and its `describe`), and times the `describe` round trip itself.
 */
import { randomUUID } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { AgentClient, type AgentRunHandle } from '../client/agent-client.js';
import type { ModelHeartbeat } from '../common/events.js';
import { createAgentWorker } from '../worker/create-worker.js';
import type { ModelProvider } from '../activities/model/provider.js';
import { emptyUsage, type AssistantMessage } from '../common/messages.js';
import type { Bench } from './context.js';
import { fetchChain, eventBytes } from './history.js';
import { percentile, summarize } from './stats.js';
import { StreamOffset } from '../common/stream.js';

export interface Percentiles {
  n: number;
  p50: number;
  p95: number;
  p99: number;
}

export interface StreamResult {
  tokens: number;
  /** ms from a token leaving the provider to its event at a `handle.stream()` consumer. */
  streamMs: Percentiles;
  /** The same provider consumed directly. */
  directMs: Percentiles;
  /** Tokens that arrived with the call's tail (not carried by a heartbeat before the call completed) or `message_end`. */
  viaMessageEnd: number;
  historyBytesPerTurn: { streaming: number; whole: number };
  /** The profile of the first run: token → heartbeat on the server, server → consumer, and one describe's round trip. */
  profile: { toServerMs: Percentiles; serverToConsumerMs: Percentiles; describeMs: Percentiles };
  /**
   * CPU of this process (worker and consumer) per turn: streaming with a `handle.stream()` reader, streaming with
   * nobody reading, and the whole message at once with nobody reading.
   */
  cpuMsPerTurn: { streaming: number; unread: number; whole: number };
}

const TICK_MS = Number(process.env.BENCH_STREAM_TICK_MS ?? 10);
const RUNS = Math.max(1, Number(process.env.BENCH_STREAM_RUNS ?? 4));
/** Rounds of the cost runs (one of each kind a round): their CPU is the median (one run in eight took 5× the others). */
const COST_ROUNDS = Math.max(1, Number(process.env.BENCH_STREAM_COST_RUNS ?? 6));
const medianOf = (xs: number[]) => summarize(xs).median;
const TOKENS = 300;

/** Stamps of tokens as they leave the provider, by run (model id) and token number. */
const sent = new Map<string, number[]>();

function ticker(whole: boolean): ModelProvider {
  return {
    async stream(request, signal, onPartial) {
      const stamps: number[] = [];
      sent.set(request.modelId, stamps);
      const message: AssistantMessage = {
        role: 'assistant',
        content: [{ type: 'text', text: '' }],
        api: 'bench',
        provider: 'bench',
        model: request.modelId,
        usage: emptyUsage(),
        stopReason: 'stop',
        timestamp: Date.now(),
      };
      const block = message.content[0] as { type: 'text'; text: string };
      for (let i = 0; i < TOKENS && !signal.aborted; i++) {
        await new Promise((r) => setTimeout(r, TICK_MS));
        const token = `t${i} `;
        block.text += token;
        stamps[i] = performance.now();
        // a snapshot as Keel's providers pass one (pi-ai.ts, scripted.ts): a shallow copy, and what grew
        if (!whole) onPartial({ ...message, content: [{ ...block }] }, { block: 0, text: token });
      }
      return message;
    },
  };
}

const tokensIn = (text: string): number[] => [...text.matchAll(/t(\d+) /g)].map((m) => Number(m[1]));

/** p50/p95/p99 of `xs` (no samples kept: they are thousands). */
const percentiles = (xs: number[]): Percentiles => {
  const sorted = [...xs].sort((a, b) => a - b);
  return { n: xs.length, p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99) };
};

/**
 * Describes `h`'s run every 5 ms until `stop`, stamping when each token first shows in the pending `callModel`'s
 * heartbeat (the stamp: the describe's midpoint) and timing each describe.
 */
async function probe(h: AgentRunHandle, stop: () => boolean): Promise<{ seen: number[]; describeMs: number[] }> {
  const seen: number[] = [];
  const describeMs: number[] = [];
  while (!stop()) {
    const t0 = performance.now();
    const d = await h.workflow.describe().catch(() => undefined);
    const t1 = performance.now();
    describeMs.push(t1 - t0);
    for (const a of d?.raw.pendingActivities ?? []) {
      const payload = a.heartbeatDetails?.payloads?.[0];
      if (!payload) continue;
      const items = (defaultPayloadConverter.fromPayload(payload) as ModelHeartbeat | undefined)?.deltas?.items ?? [];
      for (const item of items) if (item.t === 'delta') for (const i of tokensIn(item.d)) seen[i] ??= (t0 + t1) / 2;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  return { seen, describeMs };
}

export async function streamSection(bench: Bench): Promise<StreamResult> {
  const taskQueue = `bench-stream-${randomUUID()}`;
  const worker = await createAgentWorker({
    address: bench.server.address,
    taskQueue,
    models: { tick: ticker(false), whole: ticker(true) },
    workflowBundle: { codePath: bench.keelBundlePath },
  });
  const running = worker.run();
  await worker.ready();
  const client = await AgentClient.connect({ address: bench.server.address, taskQueue });
  try {
    // latency through the stream
    const streamMs: number[] = [];
    let viaMessageEnd = 0;
    let profile: StreamResult['profile'] | undefined;
    // the last run (not counted in the figures) is the profile's: its probe describes every 5 ms
    for (let r = 0; r <= RUNS; r++) {
      const profiling = r === RUNS;
      const id = `stream-${r}-${randomUUID()}`;
      const h = await client.start({ model: `tick/${id}`, prompt: 'go' });
      const seen = new Set<number>();
      const arrived: number[] = [];
      let done = false;
      const probing = profiling ? probe(h, () => done) : undefined;
      for await (const e of h.stream()) {
        const now = performance.now();
        const text =
          e.type === 'message_update'
            ? e.delta
            : e.type === 'message_end' && e.message.role === 'assistant'
              ? ''
              : null;
        if (text === null) continue;
        const ids =
          e.type === 'message_end' ? tokensIn((e.message.content[0] as { text: string }).text) : tokensIn(text);
        for (const i of ids) {
          if (seen.has(i)) continue;
          seen.add(i);
          arrived[i] = now;
          if (profiling) continue;
          streamMs.push(now - sent.get(id)![i]);
          if (e.type === 'message_end' || StreamOffset.parse(e.offset ?? 0).kind === 'tail') viaMessageEnd += 1;
        }
      }
      done = true;
      if (probing) {
        const { seen: onServer, describeMs } = await probing;
        const stamps = sent.get(id)!;
        const ok = stamps.flatMap((t, i) => (onServer[i] !== undefined && arrived[i] !== undefined ? [i] : []));
        profile = {
          toServerMs: percentiles(ok.map((i) => onServer[i] - stamps[i])),
          serverToConsumerMs: percentiles(ok.map((i) => arrived[i] - onServer[i])),
          describeMs: percentiles(describeMs),
        };
        break;
      }
    }
    bench.log(`stream: ${streamMs.length} tokens through handle.stream()`);

    // the same provider, consumed directly
    const directMs: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const id = `direct-${r}`;
      await ticker(false).stream(
        { provider: 'tick', modelId: id, systemPrompt: '', messages: [], tools: [], options: {} },
        new AbortController().signal,
        (partial) => {
          const now = performance.now();
          const ids = tokensIn((partial.content[0] as { text: string }).text);
          const last = ids[ids.length - 1];
          directMs.push(now - sent.get(id)![last]);
        },
      );
    }

    // the cost (see the top): each run timed alone, its history fetched for its bytes outside the timed span
    const cpu: Record<'streaming' | 'unread' | 'whole', number[]> = { streaming: [], unread: [], whole: [] };
    const history = { streaming: 0, whole: 0 };
    const kinds = [
      ['streaming', 'tick', true],
      ['unread', 'tick', false],
      ['whole', 'whole', false],
    ] as const;
    for (let r = 0; r < COST_ROUNDS; r++) {
      for (const [kind, provider, read] of kinds) {
        const c0 = process.cpuUsage();
        const h = await client.start({
          model: `${provider}/${`${kind}-${r}`.padEnd(12, '-')}-${randomUUID()}`,
          prompt: 'go',
        });
        if (read) for await (const e of h.stream()) void e;
        else await h.result();
        const used = process.cpuUsage(c0);
        cpu[kind].push((used.user + used.system) / 1000);
        if (kind === 'unread') continue;
        history[kind] += (await fetchChain(bench.client, h.workflowId)).events.reduce((n, ev) => n + eventBytes(ev), 0);
      }
    }
    return {
      tokens: streamMs.length,
      streamMs: percentiles(streamMs),
      directMs: percentiles(directMs),
      viaMessageEnd,
      profile: profile!,
      historyBytesPerTurn: { streaming: history.streaming / COST_ROUNDS, whole: history.whole / COST_ROUNDS },
      cpuMsPerTurn: { streaming: medianOf(cpu.streaming), unread: medianOf(cpu.unread), whole: medianOf(cpu.whole) },
    };
  } finally {
    await client.close();
    await worker.shutdown();
    await running.catch(() => {});
  }
}
