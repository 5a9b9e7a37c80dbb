/**
 * Issue 37 item 3, counterfactual replay: 50 recorded runs (a graded batch) replayed with the same scripted model give
 * 50/50 identical final answers with every tool call served from the record (the tools' effect logs stay empty); a
 * changed script names the first diverging turn of each run, and with `liveTools: 'none'` nothing runs even where the
 * calls diverge ("not in the record", exact text); `idempotent` runs only the idempotent tool live, `all` every one;
 * a direct sub-agent call is served from the record without starting its child (counted from the server), and an
 * unmatched one follows `liveTools`; a running session replays through queries; a batch replay's graded summaries match a hand count; `keel replay` as a child process prints the report and its
 * hint commands work when pasted. Also (item 1): batch results carry a completed task's typed output on request.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { defineAgent } from '../../activities/agents/define-agent.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import { defineGrader } from '../../activities/graders.js';
import { scriptedModel } from '../../activities/model/scripted.js';
import type { Message, ToolResultMessage } from '../../common/messages.js';
import { keelAt, keelCli } from './cli-child.js';
import { startKeel, until, type Keel } from './harness.js';

const effects: string[] = [];
const add = defineTool({
  name: 'add',
  description: 'Adds a number to a ledger (a side effect).',
  parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
  execute: async (_id, args) => {
    effects.push(`add ${String(args.n)}`);
    return { content: [{ type: 'text', text: `added ${String(args.n)}` }] };
  },
});
const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a word up (idempotent).',
  parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  idempotent: true,
  execute: async (_id, args) => {
    effects.push(`lookup ${String(args.q)}`);
    return { content: [{ type: 'text', text: `found ${String(args.q)}` }] };
  },
});
const call = (name: string, args: Record<string, unknown>) => ({ toolCalls: [{ name, arguments: args }] });
/** A sub-agent that nothing on the worker sees before its child starts (a direct call, 0.8.0). */
const helper = defineAgent({
  name: 'helper',
  description: 'Sums two numbers.',
  systemPrompt: 'You sum.',
  tools: [],
  model: 'scripted/child',
});

describe('counterfactual replay', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({
      models: {
        scripted: scriptedModel({
          orig: { replies: [call('add', { n: 1 }), call('lookup', { q: 'x' }), { text: 'done' }] },
          changed: { replies: [call('add', { n: 1 }), call('add', { n: 2 }), { text: 'changed' }] },
          json: { replies: [{ text: '{"ok": true}' }] },
          idem: {
            replies: [call('add', { n: 1 }), call('lookup', { q: 'y' }), call('add', { n: 3 }), { text: 'idem' }],
          },
          delegate: { replies: [call('helper', { task: 'sum 2 2' }), { text: 'delegated' }] },
          redelegate: { replies: [call('helper', { task: 'sum 3 3' }), { text: 'delegated again' }] },
          child: { rules: [{ match: 'sum 2 2', text: 'four' }, { text: 'six' }] },
        }),
      },
      tools: [add, lookup],
      agents: [helper],
    });
  });
  afterAll(async () => keel?.stop());

  const task = (i: number, expected = 'done') => ({
    model: 'scripted/orig',
    prompt: `task ${i}`,
    tools: ['add', 'lookup'],
    expected,
  });
  const transcript = async (id: string): Promise<Message[]> => keel.client.getHandle(id).allMessages();
  const results = (messages: Message[]) =>
    messages
      .filter((m): m is ToolResultMessage => m.role === 'toolResult')
      .map((m) => (m.content[0] as { text: string }).text);

  let originals: string[] = [];
  let batchId = '';
  it('50 runs replayed with the same model: 50/50 same answers, every tool call from the record, none executed', async () => {
    batchId = `replay-src-${randomUUID().slice(0, 8)}`;
    const batch = await keel.client.startBatch(
      Array.from({ length: 50 }, (_, i) => task(i)),
      { batchId, concurrency: 25 },
    );
    const before = await batch.result();
    expect(before.done).toBe(50);
    expect(effects).toHaveLength(100);
    effects.length = 0;
    const replay = await keel.client.replay({ batch: batchId }, { concurrency: 25 });
    originals = replay.originals;
    const report = await replay.report();
    expect(report.runs).toHaveLength(50);
    expect(report.sameAnswers).toBe(50);
    expect(report.runs.filter((r) => r.divergedAtTurn !== undefined)).toEqual([]);
    expect(report.tools).toEqual({ record: 100, live: 0, notInRecord: 0 });
    expect(effects).toEqual([]);
    // the graded summaries, old and new, as the batch's grader counted them
    expect(report.grading?.old).toMatchObject({ graded: 50, passed: 50, passRate: 1 });
    expect(report.grading?.new).toMatchObject({ graded: 50, passed: 50, passRate: 1 });
    expect(report.runs[0].new.tokens).toBe(report.runs[0].old.tokens);
  });

  it('a changed script: the first diverging turn per run; with liveTools none no tool runs ("not in the record")', async () => {
    const ids = originals.slice(0, 3);
    const report = await (await keel.client.replay({ runs: ids }, { model: 'scripted/changed' })).report();
    expect(report.runs.map((r) => r.divergedAtTurn)).toEqual([2, 2, 2]);
    expect(report.runs.map((r) => r.sameAnswer)).toEqual([false, false, false]);
    expect(report.tools).toEqual({ record: 3, live: 0, notInRecord: 3 });
    expect(effects).toEqual([]);
    expect(results(await transcript(report.runs[0].replay))).toEqual([
      'added 1',
      `Not in the record: run ${ids[0]} made no call of add with these arguments at turn 2 or before; this replay runs no tool live (--live-tools none). The tool did not run.`,
    ]);
  });

  it('liveTools idempotent runs only idempotent tools live; all runs every unmatched call', async () => {
    const id = originals[0];
    const idem = await (
      await keel.client.replay({ runs: [id] }, { model: 'scripted/idem', liveTools: 'idempotent' })
    ).report();
    expect(idem.tools).toEqual({ record: 1, live: 1, notInRecord: 1 });
    expect(effects).toEqual(['lookup y']);
    expect(results(await transcript(idem.runs[0].replay))[2]).toBe(
      `Not in the record: run ${id} made no call of add with these arguments at turn 3 or before; this replay runs only idempotent tools live (--live-tools idempotent) and add is not declared idempotent. The tool did not run.`,
    );
    effects.length = 0;
    const all = await (await keel.client.replay({ runs: [id] }, { model: 'scripted/idem', liveTools: 'all' })).report();
    expect(all.tools).toEqual({ record: 1, live: 2, notInRecord: 0 });
    expect(effects).toEqual(['lookup y', 'add 3']);
    effects.length = 0;
  });

  it('a sub-agent call is served from the record: no child run starts; unmatched, it follows --live-tools', async () => {
    const children = async (parent: string) =>
      Number((await keel.client.client.workflow.count(`ParentWorkflowId = "${parent}"`)).count);
    const original = await keel.start(
      { model: 'scripted/delegate', prompt: 'delegate', tools: ['helper'] },
      `replay-sub-${randomUUID().slice(0, 8)}`,
    );
    expect((await original.result()).finalText).toBe('delegated');
    await vi.waitFor(async () => expect(await children(original.workflowId)).toBe(1), { timeout: 10_000 });
    const report = await (await keel.client.replay({ runs: [original.workflowId] })).report();
    const served = report.runs[0];
    expect(served).toMatchObject({
      status: 'completed',
      sameAnswer: true,
      tools: { record: 1, live: 0, notInRecord: 0 },
    });
    expect(results(await transcript(served.replay))).toEqual(['four']);
    // a live control: with --live-tools all an unmatched call starts its child, which visibility lists
    const live = await (
      await keel.client.replay({ runs: [original.workflowId] }, { model: 'scripted/redelegate', liveTools: 'all' })
    ).report();
    expect(live.tools).toEqual({ record: 0, live: 1, notInRecord: 0 });
    expect(results(await transcript(live.runs[0].replay))).toEqual(['six']);
    await vi.waitFor(async () => expect(await children(live.runs[0].replay)).toBe(1), { timeout: 10_000 });
    expect(await children(served.replay)).toBe(0);
    const history = await keel.client.getHandle(served.replay).workflow.fetchHistory();
    expect(history.events?.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)).toEqual([]);
    for (const liveTools of ['none', 'idempotent'] as const) {
      const refused = await (
        await keel.client.replay({ runs: [original.workflowId] }, { model: 'scripted/redelegate', liveTools })
      ).report();
      expect(refused.tools).toEqual({ record: 0, live: 0, notInRecord: 1 });
      expect(await children(refused.runs[0].replay)).toBe(0);
      const why =
        liveTools === 'none'
          ? 'this replay runs no tool live (--live-tools none)'
          : 'this replay runs only idempotent tools live (--live-tools idempotent) and helper is not declared idempotent';
      expect(results(await transcript(refused.runs[0].replay))).toEqual([
        `Not in the record: run ${original.workflowId} made no call of helper with these arguments at turn 1 or before; ${why}. The tool did not run.`,
      ]);
    }
    expect(effects).toEqual([]);
  });

  it('a running session replays through queries, up to its first answer', async () => {
    const { expected: _expected, ...input } = task(0);
    const session = await keel.start({ ...input, mode: 'session' }, `replay-session-${randomUUID().slice(0, 8)}`);
    await until(async () => (await session.state()).status === 'waiting');
    effects.length = 0;
    const report = await (await keel.client.replay({ runs: [session.workflowId] })).report();
    expect(report.runs[0]).toMatchObject({ status: 'completed', sameAnswer: true, tools: { record: 2, live: 0 } });
    expect(effects).toEqual([]);
    await session.end();
  });

  it("a batch replay's graded summary matches a hand count", async () => {
    const expected = ['done', 'changed', 'done', 'nope'];
    const source = `replay-graded-${randomUUID().slice(0, 8)}`;
    await (
      await keel.client.startBatch(
        expected.map((e, i) => task(i, e)),
        { batchId: source },
      )
    ).result();
    effects.length = 0;
    const report = await (await keel.client.replay({ batch: source }, { model: 'scripted/changed' })).report();
    const answers = await Promise.all(
      report.runs.map(async (r) => (await keel.client.getHandle(r.replay).result()).finalText),
    );
    const byHand = answers.filter((a, i) => a === expected[i]).length;
    expect(byHand).toBe(1);
    expect(report.grading?.old).toMatchObject({ graded: 4, passed: 2 });
    expect(report.grading?.new).toMatchObject({ graded: 4, passed: byHand, passRate: byHand / 4 });
    expect(effects).toEqual([]);
  });

  it('a batch with variants and repeats keeps its shape: pass@2 old and new, per variant, equal to a hand count', async () => {
    const expected = ['done', 'changed', 'changed'];
    const source = `replay-shaped-${randomUUID().slice(0, 8)}`;
    const variants = [
      { name: 'a', model: 'scripted/orig' },
      { name: 'b', model: 'scripted/orig' },
    ];
    await (
      await keel.client.startBatch(
        expected.map((e, i) => task(i, e)),
        { batchId: source, variants, repeat: 2 },
      )
    ).result();
    effects.length = 0;
    const replay = await keel.client.replay({ batch: source }, { model: 'scripted/changed' });
    expect(replay.originals).toHaveLength(12);
    const report = await replay.report();
    // by hand: group each replay by its original's (task, variant); a group passes when any of its 2 attempts does
    const answers = await Promise.all(
      report.runs.map(async (r) => (await keel.client.getHandle(r.replay).result()).finalText),
    );
    const groups = new Map<string, boolean>();
    replay.originals.forEach((id, i) => {
      const [, v, t] = /-([ab])-(\d+)-r\d$/.exec(id)!;
      const key = `${t}/${v}`;
      groups.set(key, (groups.get(key) ?? false) || answers[i] === expected[Number(t)]);
    });
    const byHand = [...groups.values()].filter(Boolean).length;
    expect(groups.size).toBe(6);
    expect(byHand).toBe(4);
    expect(report.grading?.old).toMatchObject({ graded: 12, passed: 4, passAtK: { k: 2, tasks: 6, passed: 2 } });
    expect(report.grading?.new).toMatchObject({
      graded: 12,
      passed: answers.filter((a, i) => a === expected[Number(/-(\d+)-r\d$/.exec(replay.originals[i])![1])]).length,
      passAtK: { k: 2, tasks: 6, passed: byHand, rate: Number((byHand / 6).toFixed(6)) },
    });
    expect(report.variants?.old?.map((v) => [v.name, v.grading?.passAtK.passed])).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
    expect(report.variants?.new?.map((v) => [v.name, v.grading?.passAtK.passed])).toEqual([
      ['a', 2],
      ['b', 2],
    ]);
    expect(effects).toEqual([]);
  });

  it('a single run replayed with --grade grades its original with the same grader: graded old and new', async () => {
    const id = originals[2];
    const args = ['replay', id, '--model', 'scripted/changed', '--grade', 'includes', '--expected', 'done'];
    const out = await keelAt(args, keel.address, keel.taskQueue);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('graded'))).toEqual([
      'graded old: 1/1 passed (100.0%), pass@1 1/1',
      'graded new: 0/1 passed (0.0%), pass@1 0/1',
    ]);
    // a grader this client does not have: old says why; given in `graders`, it grades the original here
    const mine = defineGrader({
      name: 'mine',
      grade: ({ result }) => ({ score: 1, pass: result.finalText === 'done' }),
    });
    const grade = { grader: 'mine' };
    const without = await (await keel.client.replay({ runs: [id] }, { grade })).report();
    expect(without.grading?.old).toBeUndefined();
    expect(without.oldNotGraded).toBe(
      "grader mine is not a built-in: pass it in replay's graders option to grade the originals",
    );
    const withIt = await (await keel.client.replay({ runs: [id] }, { grade, graders: [mine] })).report();
    expect(withIt.grading?.old).toMatchObject({ graded: 1, passed: 1, passAtK: { k: 1, tasks: 1, passed: 1 } });
    expect(effects).toEqual([]);
  });

  it('batch results carry a completed task’s typed output when asked for it (issue 37 item 1)', async () => {
    const output = { type: 'object', required: ['ok'] };
    const batch = await keel.client.startBatch([
      { model: 'scripted/json', prompt: 'typed', output },
      { model: 'scripted/orig', prompt: 'untyped', tools: ['add', 'lookup'] },
    ]);
    await batch.result();
    const { results } = await batch.results({ outputs: true });
    expect(results.map((r) => r.output)).toEqual([{ ok: true }, undefined]);
    expect((await batch.results()).results[0].output).toBeUndefined(); // the query alone does not carry it
    effects.length = 0;
  });

  it('keel replay prints the report, and its hint commands work when pasted', async () => {
    const id = originals[1];
    const out = await keelAt(['replay', id, '--model', 'scripted/changed'], keel.address, keel.taskQueue);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^replaying 1 run\(s\) as batch replay-[0-9a-f]{8}$/);
    expect(lines[1]).toMatch(
      new RegExp(
        `^${id} → replay-[0-9a-f]{8}-0 \\(completed\\): different answer, diverged at turn 2; tools 1 from the record, 0 live, 1 not in the record; tokens \\d+ → \\d+, cost \\$\\d+\\.\\d{4} → \\$\\d+\\.\\d{4}$`,
      ),
    );
    const hint = lines.find((l) => l.startsWith('         npx keel'))!.trim();
    const pasted = await keelCli(hint.split(' ').slice(2));
    expect(pasted.code).toBe(0);
    expect(pasted.stdout).toContain('changed');
    expect(effects).toEqual([]);
  });
});
