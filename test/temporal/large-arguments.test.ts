/**
 * Issue 33 item 1: a large tool-call argument must not freeze the worker. A model streams one `write` call whose
 * arguments are 64 KiB, 1 MiB or 3 MiB of JSON, through the scripted model and through pi-ai's Anthropic provider
 * (test/mock-providers/anthropic.ts, `input_json_delta` pieces of 64 characters); a one-reply run starts 1 s later on
 * the same worker. The big run settles within 60 s, the small one within 15 s, and the event loop of this process —
 * which hosts the worker (and the mock provider) — stays free: its delay p99 (`monitorEventLoopDelay`, 10 ms
 * resolution) is at most 100 ms. 64 KiB and 1 MiB are written whole; 3 MiB is over what a reply may be (2,000,000
 * characters, one Temporal payload), so the model call is stopped and the run fails with an exact text, non-retryably.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { WorkflowFailedError } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { piAiProvider } from '../../activities/model/pi-ai.js';
import { scriptedModel, type Script } from '../../activities/model/scripted.js';
import { builtinTools } from '../../activities/tools/builtin/index.js';
import type { AgentRunHandle } from '../../client/agent-client.js';
import { ErrorType } from '../../common/errors.js';
import { toolCallsOf, type AssistantMessage } from '../../common/messages.js';
import { startMockProvider, type MockProviderServer } from '../mock-providers/server.js';
import { failuresOf } from './history-helpers.js';
import { startKeel, type Keel } from './harness.js';

const KiB = 1024;
const SIZES = [64 * KiB, 1024 * KiB, 3072 * KiB];
const TOO_LARGE =
  'Model reply too large: the arguments of tool call "write" passed 2,000,000 characters; a reply must fit one Temporal payload (2 MB). It was refused and no tool ran: ask for less at once (e.g. a large file in several writes).';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const label = (size: number) => (size < 1024 * KiB ? `${size / KiB} KiB` : `${size / 1024 / KiB} MiB`);
/** The `write` arguments of a case: `content` is `size` characters. */
const writeArgs = (size: number, path: string) => ({ path, content: 'y'.repeat(size) });

describe('a large tool-call argument does not stall the worker', () => {
  let keel: Keel;
  let mock: MockProviderServer;
  let ws: string;
  const scripts: Record<string, Script> = {
    small: { replies: [{ text: 'small reply' }] },
    warm: { replies: [{ toolCall: { name: 'write', arguments: writeArgs(1, 'warm.txt') } }, { text: 'warm' }] },
  };
  for (const size of SIZES)
    scripts[`big${size}`] = {
      replies: [
        { toolCall: { name: 'write', arguments: writeArgs(size, `scripted-${size}.txt`) } },
        { text: 'wrote it' },
      ],
    };

  beforeAll(async () => {
    ws = realpathSync(mkdtempSync(join(tmpdir(), 'keel-large-args-')));
    mock = await startMockProvider('anthropic');
    keel = await startKeel({
      tools: builtinTools({ cwd: ws }),
      models: {
        scripted: scriptedModel(scripts),
        '*': piAiProvider({ baseUrls: { anthropic: mock.url }, env: { ANTHROPIC_API_KEY: 'sk-ant-test' } }),
      },
    });
    // what a worker does once, whatever the size, is not what is measured here: pi-ai loads its Anthropic client at the
    // first request (~0.5 s of compiling modules), and the first `write` compiles its argument schema (~0.15 s)
    mock.enqueue({ reply: { blocks: [{ type: 'text', text: 'warm' }] } });
    await (await keel.start({ model: 'anthropic/claude-sonnet-4-5', prompt: 'warm up' })).result();
    await (await keel.start({ model: 'scripted/warm', prompt: 'warm up', tools: ['write'] })).result();
  });
  afterAll(async () => {
    await keel?.stop();
    await mock?.close();
    if (ws) rmSync(ws, { recursive: true, force: true });
  });

  /**
   * Starts the big run (`startBig`), then a one-reply run 1 s later; returns both outcomes, how long each took to
   * settle and the event-loop delay of this process meanwhile.
   */
  async function beside(startBig: () => Promise<AgentRunHandle>) {
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    await sleep(50); // the monitor's timer runs from the next turn of the loop on
    const settle = async (h: AgentRunHandle, since: number) => {
      const outcome = await h.result().catch((error: unknown) => error);
      return { h, outcome, ms: performance.now() - since };
    };
    const bigAt = performance.now();
    const big = settle(await startBig(), bigAt);
    await sleep(1000);
    const smallAt = performance.now();
    const small = settle(await keel.start({ model: 'scripted/small', prompt: 'hi' }), smallAt);
    const [b, s] = await Promise.all([big, small]);
    delay.disable();
    const ms = (ns: number) => Math.round(ns / 1e6);
    const loop = { p99: ms(delay.percentile(99)), p50: ms(delay.percentile(50)), max: ms(delay.max) };
    return { big: b, small: s, loop };
  }

  /** What a case must show, whichever provider streamed it. */
  async function expectCase(
    size: number,
    file: string,
    r: Awaited<ReturnType<typeof beside>>,
    provider: string,
  ): Promise<void> {
    console.log(
      `[large-arguments] ${provider} ${label(size)}: big run ${(r.big.ms / 1000).toFixed(1)} s, one-reply run ${(r.small.ms / 1000).toFixed(1)} s, event-loop delay p50 ${r.loop.p50} ms p99 ${r.loop.p99} ms max ${r.loop.max} ms`,
    );
    expect(r.small.outcome).toMatchObject({ status: 'completed' });
    expect(r.small.ms).toBeLessThan(15_000);
    expect(r.big.ms).toBeLessThan(60_000);
    expect(r.loop.p99).toBeLessThanOrEqual(100);
    const transcript = await r.big.h.allMessages();
    if (size < 2_000_000) {
      expect(r.big.outcome).toMatchObject({ status: 'completed' });
      expect(readFileSync(join(ws, file), 'utf8')).toBe('y'.repeat(size));
      const [call] = toolCallsOf(transcript[1] as AssistantMessage);
      expect(call.arguments).toEqual(writeArgs(size, file));
      return;
    }
    // over the limit: the call is stopped, non-retryably, and the run fails saying why
    expect(r.big.outcome).toMatchObject({ status: 'failed', error: TOO_LARGE });
    const failure = await r.big.h.workflow.result().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause as ApplicationFailure;
    expect([cause.type, cause.message]).toEqual([ErrorType.AgentRunFailed, TOO_LARGE]);
    expect(await failuresOf(r.big.h)).toEqual({
      activities: [[TOO_LARGE, ErrorType.ModelResponseTooLarge, true]],
      workflowTasksFailed: 0,
    });
    expect(transcript.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'error', errorMessage: TOO_LARGE });
    expect(toolCallsOf(transcript.at(-1) as AssistantMessage)).toEqual([]);
  }

  for (const size of SIZES) {
    it(`scripted model, ${label(size)} of arguments`, { timeout: 120_000 }, async () => {
      const r = await beside(() => keel.start({ model: `scripted/big${size}`, prompt: 'write it', tools: ['write'] }));
      await expectCase(size, `scripted-${size}.txt`, r, 'scripted');
    });
  }

  for (const size of SIZES) {
    it(`Anthropic provider (mock server), a streamed write of ${label(size)}`, { timeout: 120_000 }, async () => {
      const file = `anthropic-${size}.txt`;
      // the JSON text is made before the measured window, as a remote server would have it
      const args = JSON.stringify(writeArgs(size, file));
      mock.enqueue({
        reply: {
          blocks: [{ type: 'toolCall', id: `toolu_${randomUUID().slice(0, 8)}`, name: 'write', arguments: args }],
          chunkSize: 64,
        },
      });
      if (size < 2_000_000) mock.enqueue({ reply: { blocks: [{ type: 'text', text: 'wrote it' }] } });
      const r = await beside(() =>
        keel.start({ model: 'anthropic/claude-sonnet-4-5', prompt: 'write it', tools: ['write'] }),
      );
      await expectCase(size, file, r, 'anthropic');
      expect(mock.pending()).toBe(0);
    });
  }
});
