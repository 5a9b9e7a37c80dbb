/**
 * Issue 21 item 2: a workspace per conversation. Two runs open at once on one worker cannot read or list each other's
 * workspace or bash logs (file tools refuse, the sandbox does not even show them); a conversation's workspace is the
 * same after a continue-as-new and on another worker (a restart), and the sweep removes it once the run has closed
 * (retainClosedMs 0 here), never while it runs.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { builtinTools, RunWorkspaces } from '../../activities/tools/builtin/index.js';
import { runDirName } from '../../activities/tools/builtin/run-workspaces.js';
import type { Script } from '../../activities/model/scripted.js';
import { AgentClient, type AgentRunHandle } from '../../client/agent-client.js';
import type { Message } from '../../common/messages.js';
import { startKeel, until, untilContinuedAsNew, type Keel } from './harness.js';

const outside = (given: string, ws: string) =>
  `Path "${given}" is outside the workspace ${ws}. Use a path inside ${ws}.`;

/** The tool results of a transcript: [toolName, text, isError]. */
function results(messages: Message[]): [string, string, boolean][] {
  return messages.flatMap((m) =>
    m.role === 'toolResult'
      ? [
          [m.toolName, m.content.map((c) => (c.type === 'text' ? c.text : '')).join(''), m.isError] as [
            string,
            string,
            boolean,
          ],
        ]
      : [],
  );
}

const idleAt = (h: AgentRunHandle, count: number) =>
  until(
    async () => {
      const st = await h.state();
      return st.status === 'waiting' && st.messageCount === count;
    },
    60_000,
    `idle at ${count} messages`,
    100,
  );

describe('a workspace per conversation', () => {
  let root: string;
  let keel: Keel;
  const scripts: Record<string, Script> = {};
  const workspaces = () => new RunWorkspaces({ root, retainClosedMs: 0, sweepIntervalMs: 0 });

  beforeAll(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), 'keel-runs-')));
    keel = await startKeel({ scripts, tools: builtinTools({ workspaces: workspaces() }) });
  });
  afterAll(async () => {
    await keel?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it("two runs open at once cannot read or list each other's workspace or bash logs", async () => {
    const a = `ws-a-${randomUUID()}`;
    const b = `ws-b-${randomUUID()}`;
    const wsA = join(root, runDirName(a), 'workspace');
    const wsB = join(root, runDirName(b), 'workspace');
    scripts.owner = {
      rules: [
        { match: 'toolResult:bash', text: 'made' },
        { match: 'toolResult:write', toolCalls: [{ id: 'a2', name: 'bash', arguments: { command: 'seq 3000' } }] },
        {
          match: 'make',
          toolCalls: [{ id: 'a1', name: 'write', arguments: { path: 'secret.txt', content: 'top-secret-a' } }],
        },
      ],
    };
    const hA = await keel.start(
      { model: 'scripted/owner', prompt: 'make a secret', tools: ['write', 'bash'], mode: 'session' },
      a,
    );
    await idleAt(hA, 6);
    const tmpA = join(root, runDirName(a), 'tmp');
    const logA = join(
      tmpA,
      readdirSync(tmpA).find((f) => f.startsWith('pi-bash-'))!,
    );
    expect(results(await hA.allMessages())[1][1]).toContain(`Full output: ${logA}]`);

    const secretA = join(wsA, 'secret.txt');
    // a log where 0.4.1 wrote every run's (and read accepted any): planted, it is outside like any other file
    const planted = join(tmpdir(), `pi-bash-${randomBytes(8).toString('hex')}.log`);
    writeFileSync(planted, 'planted log\n');
    onTestFinished(() => rmSync(planted, { force: true }));
    const bashProbe = `cat ${secretA}; cat ${logA} | head -1; ls ${root}`;
    scripts.prober = {
      rules: [
        { match: 'toolResult', text: 'probed' },
        {
          match: 'probe',
          toolCalls: [
            { id: 'b0', name: 'read', arguments: { path: planted } },
            { id: 'b1', name: 'read', arguments: { path: secretA } },
            { id: 'b2', name: 'ls', arguments: { path: wsA } },
            { id: 'b3', name: 'read', arguments: { path: logA } },
            { id: 'b4', name: 'grep', arguments: { pattern: 'top-secret', path: wsA } },
            { id: 'b5', name: 'bash', arguments: { command: bashProbe } },
          ],
        },
      ],
    };
    const hB = await keel.start(
      {
        model: 'scripted/prober',
        prompt: 'probe the other run',
        tools: ['read', 'ls', 'grep', 'bash'],
        toolExecution: 'sequential',
      },
      b,
    );
    const r = await hB.result();
    expect(r.status).toBe('completed');
    expect(results(r.newMessages)).toEqual([
      ['read', outside(planted, wsB), true],
      ['read', outside(secretA, wsB), true],
      ['ls', outside(wsA, wsB), true],
      ['read', outside(logA, wsB), true],
      ['grep', outside(wsA, wsB), true],
      // the sandbox shows B's own directory under the root and nothing of A; /tmp is a fresh tmpfs
      [
        'bash',
        `cat: ${secretA}: No such file or directory\ncat: ${logA}: No such file or directory\n${runDirName(b)}\n`,
        false,
      ],
    ]);
    expect((await hA.state()).status).toBe('waiting'); // A was open the whole time
    await hA.end();
  });

  it('a workspace survives a continue-as-new and a worker restart, and is removed once the run has closed', async () => {
    const id = `ws-keep-${randomUUID()}`;
    const dir = join(root, runDirName(id));
    const content = `kept-across\n${'x'.repeat(70_000)}`;
    scripts.keeper = {
      rules: [
        { match: 'toolResult:read', text: 'read done' },
        { match: 'toolResult:write', text: 'written' },
        { match: 'keep', toolCalls: [{ id: 'k1', name: 'write', arguments: { path: 'keep.txt', content } }] },
        { match: 'again', toolCalls: [{ id: 'k2', name: 'read', arguments: { path: 'keep.txt', limit: 1 } }] },
      ],
    };
    const client = await AgentClient.connect({ address: keel.address, taskQueue: keel.taskQueue }); // outlives the worker
    onTestFinished(() => client.close());
    const h = await client.start(
      {
        model: 'scripted/keeper',
        prompt: 'keep this',
        tools: ['write', 'read'],
        mode: 'session',
        continueAsNewAfterBytes: 65_536,
        homeWorkerTimeout: '2s',
      },
      { workflowId: id },
    );
    await untilContinuedAsNew(h);
    await h.followUp('read it again');
    await idleAt(h, 8);
    const kept = ['read', 'kept-across\n\n[1 more lines in file. Use offset=2 to continue.]', false];
    expect(results(await h.allMessages()).at(-1)).toEqual(kept);

    // another worker on the same root takes over (the first one stops): the run's next read sees the same file
    const restarted = workspaces();
    const second = await startKeel({
      scripts,
      taskQueue: keel.taskQueue,
      tools: builtinTools({ workspaces: restarted }),
    });
    try {
      await keel.stop();
      await h.followUp('read it again, new worker');
      await idleAt(h, 12);
      expect(results(await h.allMessages()).at(-1)).toEqual(kept);

      // retention: kept while the run is open, removed by the sweep once it closed
      // a directory whose workflow id Temporal does not know goes at once; the closed runs above go too
      const ghost = `ws-ghost-${randomUUID()}`;
      await restarted.forRun(ghost);
      const swept = await restarted.sweep(second.worker.client);
      expect(swept).toContain(ghost);
      expect(swept).not.toContain(id);
      expect(existsSync(join(root, runDirName(ghost)))).toBe(false);
      expect(existsSync(join(dir, 'workspace', 'keep.txt'))).toBe(true);
      await h.end();
      await h.result();
      expect(await restarted.sweep(second.worker.client)).toEqual([id]);
      expect(existsSync(dir)).toBe(false);
    } finally {
      keel = second; // afterAll stops it
    }
  });
  it("the worker sweeps on its own: a task's directory is gone soon after the run completed (retainClosedMs 0)", async () => {
    const sweeping = new RunWorkspaces({ root, retainClosedMs: 0, sweepIntervalMs: 200 });
    const own = await startKeel({ scripts, tools: builtinTools({ workspaces: sweeping }) });
    onTestFinished(() => own.stop());
    scripts.once = {
      rules: [
        { match: 'toolResult:write', text: 'written' },
        { match: 'note', toolCalls: [{ id: 'w1', name: 'write', arguments: { path: 'n.txt', content: 'n' } }] },
      ],
    };
    const id = `ws-auto-${randomUUID()}`;
    const h = await own.start({ model: 'scripted/once', prompt: 'note it', tools: ['write'] }, id);
    expect((await h.result()).status).toBe('completed');
    await vi.waitFor(() => expect(existsSync(join(root, runDirName(id)))).toBe(false), { timeout: 10_000 });
  });
});
