/**
 * docs/architecture.md#history-stays-linear: history stays linear. Model activities carry a reference to the transcript, never the transcript;
 * history is cut by continue-as-new at a turn boundary, transparently for clients.
 */
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptedReply } from '../../activities/model/scripted.js';
import { historyText, startKeel, type Keel } from './harness.js';
import { blobTool } from './tool-fixtures.js';

function replies(turns: number, kb: number): ScriptedReply[] {
  const out: ScriptedReply[] = [];
  for (let n = 1; n < turns; n++) out.push({ toolCalls: [{ name: 'blob', arguments: { kb, n } }] });
  out.push({ text: 'all done' });
  return out;
}

describe('history stays linear', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({
      scripts: {
        fifty: { replies: replies(50, 24) },
        thirty: { replies: replies(30, 8) },
        huge: { replies: replies(20, 400) },
        big: { replies: replies(20, 200) },
      },
      tools: [blobTool],
    });
  });
  afterAll(() => keel?.stop());

  it('a 50-turn run whose transcript grows past 1 MB schedules every activity with an input of a few KB', async () => {
    const h = await keel.start({ model: 'scripted/fifty', prompt: 'go', tools: ['blob'] });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(r.turns).toBe(50);
    const transcriptBytes = Buffer.byteLength(JSON.stringify(await h.allMessages()));
    expect(transcriptBytes).toBeGreaterThan(1024 * 1024);
    const history = await h.workflow.fetchHistory();
    const scheduled = history.events!.filter(
      (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    );
    expect(scheduled.length).toBe(1 + 50 + 49); // startRun, 50 model calls, 49 tool calls
    const inputSizes = scheduled.map((e) =>
      e.activityTaskScheduledEventAttributes!.input!.payloads!.reduce((n, p) => n + (p.data?.length ?? 0), 0),
    );
    const modelInputs = scheduled
      .filter((e) => e.activityTaskScheduledEventAttributes!.activityType!.name === 'callModel')
      .map((e) => e.activityTaskScheduledEventAttributes!.input!.payloads![0].data!.length);
    expect(Math.max(...inputSizes)).toBeLessThan(2048);
    // the 50th model call's input is as small as the first: independent of transcript length
    expect(modelInputs[49] - modelInputs[0]).toBeLessThan(16);
    console.log(
      `[history] 50 turns: transcript ${transcriptBytes} B, history payloads ${Buffer.byteLength(historyText(history))} B in ${history.events!.length} events, largest activity input ${Math.max(...inputSizes)} B, model input turn 1 ${modelInputs[0]} B / turn 50 ${modelInputs[49]} B`,
    );
  });

  it('continues-as-new at a turn boundary when history passes the limit; clients follow the chain and nothing is lost', async () => {
    const h = await keel.start({
      model: 'scripted/thirty',
      prompt: 'go',
      tools: ['blob'],
      continueAsNewAfterBytes: 65536,
    });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(r.turns).toBe(30);
    expect(r.finalText).toBe('all done');
    expect(r.newMessages.map((m) => m.role)).toEqual([
      'user',
      ...Array.from({ length: 29 }, () => ['assistant', 'toolResult']).flat(),
      'assistant',
    ]);
    const toolNumbers = r.newMessages
      .filter((m) => m.role === 'toolResult')
      .map((m) => Number((m.content[0] as { text: string }).text.split(':')[0]));
    expect(toolNumbers).toEqual(Array.from({ length: 29 }, (_, i) => i + 1));
    const state = await h.state();
    expect(state.continuedAsNew).toBeGreaterThanOrEqual(2);
    const events = await h.events({ after: 0, limit: 10_000 });
    expect(events.events[events.events.length - 1].type).toBe('agent_end');
    // sequence numbers go on across runs
    expect(events.firstSeq).toBeGreaterThan(1);
  });

  it('continues-as-new when this run grew by the limit, not after every turn once the carried transcript exceeds it', async () => {
    // 29 tool results of 8 KB: the carried transcript passes 64 KiB after the first continue-as-new
    const h = await keel.start({
      model: 'scripted/thirty',
      prompt: 'go',
      tools: ['blob'],
      continueAsNewAfterBytes: 65536,
    });
    const r = await h.result();
    expect(r.turns).toBe(30);
    const continued = (await h.state()).continuedAsNew;
    // ≈ 240 KB of growth at 64 KiB per run: 3 or 4 runs; continuing after every turn would be 20 and more
    expect(continued).toBeGreaterThanOrEqual(2);
    expect(continued).toBeLessThanOrEqual(5);
  });

  it("without external storage: stops the run cleanly, before the server's history limit, when the transcript is too large to continue-as-new", async () => {
    const inline = await startKeel({
      scripts: { huge: { replies: replies(20, 400) } },
      tools: [blobTool],
      payloadStorage: false,
    });
    const h = await inline.start({
      model: 'scripted/huge',
      prompt: 'go',
      tools: ['blob'],
      continueAsNewAfterBytes: 65536,
      maxHistoryBytes: 1024 * 1024,
    });
    const r = await h.result();
    expect(r.status).toBe('stopped');
    expect(r.turns).toBe(4); // continued-as-new after turns 1-3; after turn 4 the 1.6 MB transcript no longer fits a payload
    expect(r.error).toMatch(
      /^History reached \d+\.\d MB of the 1\.0 MB this run allows, and the transcript \(1\.\d MB\) is too large to carry into a continued run \(1\.4 MB at most\)\. Start a new run with a shortened transcript in `messages`\.$/,
    );
    expect(r.newMessagesOmitted).toEqual({ count: 9, fromIndex: 0 });
    expect((await h.state()).continuedAsNew).toBe(3);
    await inline.stop();
  });

  it('with external storage (the default): a 4 MB transcript is carried across continue-as-new by reference; every run of the chain stays small', async () => {
    // 200 KB results stay inline (under the 256 KiB threshold), so history passes 64 KiB every turn and the run
    // continues-as-new carrying the whole transcript — over the 1.5 MB that fits a payload from the fifth turn on
    const h = await keel.start({
      model: 'scripted/big',
      prompt: 'go',
      tools: ['blob'],
      continueAsNewAfterBytes: 65536,
    });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(r.turns).toBe(20);
    expect(r.newMessages).toHaveLength(40);
    expect(r.newMessagesOmitted).toBeUndefined();
    const all = await h.allMessages();
    expect(all).toHaveLength(40);
    expect(Buffer.byteLength(JSON.stringify(all))).toBeGreaterThan(3.5 * 1024 * 1024);
    const state = await h.state();
    expect(state.continuedAsNew).toBe(19);
    // every run of the chain: history holds a reference to the carried transcript, not the transcript
    const client = keel.client.client;
    const sizes: number[] = [];
    for await (const wf of client.workflow.list({ query: `WorkflowId = '${h.workflow.workflowId}'` })) {
      const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
      sizes.push(Buffer.byteLength(historyText(history)));
    }
    expect(sizes.length).toBe(state.continuedAsNew + 1);
    expect(Math.max(...sizes)).toBeLessThan(600 * 1024);
  });
});
