/**
 * Issue 37 item 2, fork from any turn: the fork's first model request is byte-identical to the original's at turn
 * N + 1 when nothing is changed; turns 1..N cost no model call and no tool call; the original's history is unchanged
 * (event count and last event, a closed and an open original); the link both ways (memo, summary, the visibility query
 * on `KeelForkedFrom`); `prompt`/`model`/`system`; a bad turn; a transcript offloaded to the payload store (2.5 MB:
 * the fork's input goes by reference); `rewind` of an open session under its conversation id.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { defineTool } from '../../activities/tools/define-tool.js';
import { scriptedModel } from '../../activities/model/scripted.js';
import { builtinTools, RunWorkspaces } from '../../activities/tools/builtin/index.js';
import { runDirName } from '../../activities/tools/builtin/run-workspaces.js';
import type { AgentRunHandle } from '../../client/agent-client.js';
import type { InvalidForkError } from '../../client/fork/plan-fork.js';
import { keelAt, keelCli, TEST_UI } from './cli-child.js';
import { recordingModel, startKeel, until, type Keel, type RecordingModel } from './harness.js';

const effects: number[] = [];
const note = defineTool({
  name: 'note',
  description: 'Notes a number (the test counts the calls).',
  parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
  execute: async (_id, args) => {
    effects.push(args.n as number);
    return { content: [{ type: 'text', text: `noted ${String(args.n)}` }] };
  },
});
const BLOB_BYTES = 500_000;
const blob = defineTool({
  name: 'blob',
  description: 'Returns 500 KB of text.',
  parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
  execute: async (_id, args) => ({ content: [{ type: 'text', text: `${String(args.n)}:`.padEnd(BLOB_BYTES, 'x') }] }),
});
const noteCall = (n: number) => ({ toolCalls: [{ name: 'note', arguments: { n } }] });
const blobCall = (n: number) => ({ toolCalls: [{ name: 'blob', arguments: { n } }] });

/** Event count and last event of a run's history. */
async function historyEnd(w: WorkflowHandle): Promise<[number, string]> {
  const events = (await w.fetchHistory()).events ?? [];
  return [events.length, JSON.stringify(events[events.length - 1])];
}

describe('fork from any turn', () => {
  let keel: Keel;
  let model: RecordingModel;
  beforeAll(async () => {
    model = recordingModel(
      scriptedModel({
        steps: { replies: [noteCall(1), noteCall(2), noteCall(3), { text: 'done' }] },
        alt: { replies: [noteCall(1), { text: 'alt done' }] },
        chat: { rules: [{ match: 'a', text: 'answer a' }, { match: 'b', text: 'answer b' }, { text: 'answer c' }] },
        big: { replies: [blobCall(1), blobCall(2), blobCall(3), blobCall(4), blobCall(5), { text: 'big done' }] },
        files: {
          replies: [
            { toolCalls: [{ name: 'write', arguments: { path: 'a.txt', content: 'one' } }] },
            { toolCalls: [{ name: 'write', arguments: { path: 'b.txt', content: 'two' } }] },
            { toolCalls: [{ name: 'read', arguments: { path: 'a.txt' } }] },
            { text: 'files done' },
          ],
        },
      }),
    );
    root = realpathSync(mkdtempSync(join(tmpdir(), 'keel-fork-ws-')));
    const workspaces = new RunWorkspaces({ root, sweepIntervalMs: 0 });
    keel = await startKeel({ models: { scripted: model }, tools: [note, blob, ...builtinTools({ workspaces })] });
  });
  afterAll(async () => {
    await keel?.stop();
    rmSync(root, { recursive: true, force: true });
  });
  let root = '';

  const run = (input: Parameters<Keel['start']>[0]) => keel.start(input, `fork-${randomUUID()}`);
  const waiting = (h: AgentRunHandle, turns: number) =>
    until(
      async () => {
        const st = await h.state();
        return st.status === 'waiting' && st.turns === turns;
      },
      20_000,
      `waiting after ${turns} turns`,
    );

  it('a fork at turn N sends the original request of turn N + 1, costs nothing for turns 1..N, leaves the original as it was', async () => {
    const h = await run({ model: 'scripted/steps', prompt: 'go', tools: ['note'], systemPrompt: 'be brief' });
    expect((await h.result()).turns).toBe(4);
    const original = model.requests('steps').slice();
    expect(original).toHaveLength(4);
    const before = await historyEnd(h.workflow);
    effects.length = 0;

    const fork = await h.fork({ atTurn: 2 });
    const r = await fork.result();
    expect([r.status, r.finalText, r.turns]).toEqual(['completed', 'done', 2]);
    const forked = model.requests('steps').slice(4);
    expect(forked).toHaveLength(2); // turns 3 and 4 only
    expect(JSON.stringify(forked[0])).toBe(JSON.stringify(original[2]));
    expect(effects).toEqual([3]); // the tools of turns 1 and 2 did not run again
    expect(await historyEnd(h.workflow)).toEqual(before);
    expect((await fork.allMessages()).slice(0, 5)).toEqual((await h.allMessages()).slice(0, 5));

    // linked both ways: the fork's memo and summary, the original's forks by a visibility query
    const d = await fork.workflow.describe();
    const runId = (await h.workflow.describe()).runId;
    expect(d.memo?.keelForkedFrom).toEqual({ workflowId: h.workflowId, runId, atTurn: 2 });
    expect(await d.staticSummary()).toBe(`forked from ${h.workflowId} at turn 2`);
    await vi.waitFor(
      async () =>
        expect(await h.forks()).toEqual([
          { workflowId: fork.workflowId, atTurn: 2, status: 'completed', startTime: expect.any(Date) },
        ]),
      { timeout: 20_000, interval: 200 },
    );
    expect(await historyEnd(h.workflow)).toEqual(before);
  });

  it('prompt, model and system replace what followed turn N; a turn the run has not completed is refused', async () => {
    const h = await run({ model: 'scripted/steps', prompt: 'go', tools: ['note'] });
    await h.result();
    const fork = await h.fork({ atTurn: 1, prompt: 'instead', model: 'scripted/alt', system: 'other' });
    expect((await fork.result()).finalText).toBe('alt done');
    const [first] = model.requests('alt').slice(-1);
    const head = (await h.allMessages()).slice(0, 3);
    expect(first.systemPrompt).toBe('other');
    expect(first.messages.slice(0, 3)).toEqual(head);
    expect(first.messages[3]).toMatchObject({ role: 'user', content: [{ type: 'text', text: 'instead' }] });
    expect(first.messages).toHaveLength(4);

    const refused = async (p: Promise<unknown>) => ((await p.catch((e: unknown) => e)) as InvalidForkError).message;
    expect(await refused(h.fork({ atTurn: 5 }))).toBe(
      `Cannot fork: turn 5: run ${h.workflowId} has completed 4 turns; give a turn from 0 to 4`,
    );
    expect(await refused(h.fork({ atTurn: 4 }))).toBe(
      `Cannot fork: turn 4 of run ${h.workflowId} ends with the model's answer and no turn follows it: give a prompt to go on from there`,
    );
    expect(await refused(keel.client.rewind(h.workflowId, { atTurn: 1 }))).toBe(
      `Cannot rewind: run ${h.workflowId} is a task, not a session: fork it instead (keel fork ${h.workflowId} --turn N)`,
    );
  });

  it('an open session: forked without touching it, and rewound under its conversation id', async () => {
    const h = await run({ model: 'scripted/chat', prompt: 'a', mode: 'session' });
    await waiting(h, 1);
    await h.followUp('b');
    await waiting(h, 2);
    const turn2 = model.requests('chat').slice(-1)[0];
    const before = await historyEnd(h.workflow);

    // a fork at turn 1 carries the follow-up that opened turn 2 and answers it as the original did
    const fork = await h.fork({ atTurn: 1 });
    await waiting(fork, 1);
    expect(JSON.stringify(model.requests('chat').slice(-1)[0])).toBe(JSON.stringify(turn2));
    expect(await historyEnd(h.workflow)).toEqual(before);
    await fork.end();

    // rewind: the session goes back to turn 1 under the same id and waits for its next message
    const runId = (await h.workflow.describe()).runId;
    const rewound = await keel.client.rewind(h.workflowId, { atTurn: 1 });
    expect(rewound.workflowId).toBe(h.workflowId);
    await waiting(rewound, 0);
    expect((await rewound.allMessages()).map((m) => m.role)).toEqual(['user', 'assistant']);
    const old = keel.client.client.workflow.getHandle(h.workflowId, runId);
    expect((await old.describe()).status.name).toBe('COMPLETED');
    expect((await rewound.workflow.describe()).memo?.keelForkedFrom).toEqual({
      workflowId: h.workflowId,
      runId,
      atTurn: 1,
      rewound: true,
    });
    await rewound.followUp('c');
    await waiting(rewound, 1);
    expect((await rewound.allMessages()).slice(2).map((m) => m.role)).toEqual(['user', 'assistant']);
    expect((await rewound.state()).lastReply).toBe('answer c');
    await rewound.end();
  });

  it('rewinding a busy session waits for its agent run to finish, then goes back', async () => {
    const h = await run({ model: 'scripted/chat', prompt: 'a', mode: 'session' });
    await waiting(h, 1);
    const runId = (await h.workflow.describe()).runId;
    const held = model.hold('chat');
    await h.followUp('b');
    await held.reached;
    const rewinding = keel.client.rewind(h.workflowId, { atTurn: 1, prompt: 'c' });
    held.open();
    const rewound = await rewinding;
    await waiting(rewound, 1);
    expect((await rewound.allMessages()).map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect((await rewound.state()).lastReply).toBe('answer c');
    const old = keel.client.getHandle(h.workflowId);
    const ended = keel.client.client.workflow.getHandle(h.workflowId, runId);
    expect((await ended.describe()).status.name).toBe('COMPLETED');
    expect(((await ended.result()) as { turns: number }).turns).toBe(2); // 'b' was answered before the end
    await old.end();
  });

  it('a 2.5 MB transcript offloaded to the payload store forks by reference', async () => {
    const h = await run({ model: 'scripted/big', prompt: 'go', tools: ['blob'] });
    expect((await h.result()).finalText).toBe('big done');
    const fork = await h.fork({ atTurn: 3 });
    const r = await fork.result();
    expect([r.status, r.finalText, r.turns]).toEqual(['completed', 'big done', 3]);
    const all = await fork.allMessages();
    expect(all).toHaveLength(12); // the prompt, 5 calls and their results, the answer
    expect(JSON.stringify(all.slice(0, 7)).length).toBeGreaterThan(3 * BLOB_BYTES);
    // the start event holds a reference to the stored input, not the 1.5 MB prefix
    const started = (await fork.workflow.fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
    const inline = (started?.input?.payloads ?? []).reduce((n, p) => n + (p.data?.length ?? 0), 0);
    expect(inline).toBeLessThan(10_000);
  });

  it('keel fork prints the fork and the command to follow it, which works; keel list shows the branch', async () => {
    const h = await run({ model: 'scripted/steps', prompt: 'go', tools: ['note'] });
    await h.result();
    const forkId = `${h.workflowId}-cli`;
    const out = await keelAt(['fork', h.workflowId, '--turn', '3', '--id', forkId], keel.address, keel.taskQueue);
    const next = `npx keel --address ${keel.address} --task-queue ${keel.taskQueue} --ui ${TEST_UI} watch ${forkId}`;
    expect([out.code, out.stderr, out.stdout]).toEqual([
      0,
      '',
      `${forkId}\nforked from ${h.workflowId} at turn 3\nnext: ${next}\n${TEST_UI}/namespaces/default/workflows/${forkId}\n`,
    ]);
    const watched = await keelCli(next.split(' ').slice(2)); // the hint as printed, after `npx keel`
    expect(watched.code).toBe(0);
    expect(watched.stdout).toContain('done');
    const status = await keelAt(['status', forkId], keel.address, keel.taskQueue);
    expect(status.stdout.split('\n')).toContain(`forked from ${h.workflowId} at turn 3`);
    const bad = await keelAt(['fork', h.workflowId, '--turn', '9'], keel.address, keel.taskQueue);
    expect([bad.code, bad.stderr.trim()]).toEqual([
      2,
      `keel: Cannot fork: turn 9: run ${h.workflowId} has completed 4 turns; give a turn from 0 to 4`,
    ]);
    await vi.waitFor(
      async () => {
        const list = await keelAt(['list', '--forks-of', h.workflowId], keel.address, keel.taskQueue);
        const lines = list.stdout.split('\n');
        expect(lines[0]).toMatch(/ +BRANCH$/);
        expect(lines[1]).toMatch(new RegExp(`^${forkId} +run +completed .* forked from ${h.workflowId} at turn 3$`));
        expect(lines[2]).toBe(`query: TaskQueue = "${keel.taskQueue}" AND KeelForkedFrom = "${h.workflowId}"`);
      },
      { timeout: 20_000, interval: 500 },
    );
  });

  it("the fork's workspace starts as a copy of the original's", async () => {
    const h = await run({ model: 'scripted/files', prompt: 'go', tools: ['write', 'read'] });
    expect((await h.result()).finalText).toBe('files done');
    const fork = await h.fork({ atTurn: 2 });
    expect((await fork.result()).finalText).toBe('files done');
    // turn 3 of the fork reads the file turn 1 of the original wrote (the fork did not run turn 1's write)
    const read = (await fork.allMessages())[6];
    expect(read).toMatchObject({ role: 'toolResult', toolName: 'read', isError: false });
    expect(JSON.stringify(read)).toContain('one');
    const ws = (id: string) => join(root, runDirName(id), 'workspace');
    expect(readFileSync(join(ws(fork.workflowId), 'b.txt'), 'utf8')).toBe('two');
    expect(existsSync(join(ws(h.workflowId), 'a.txt'))).toBe(true); // a copy: the original keeps its own
  });
});
