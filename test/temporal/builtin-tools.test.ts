/**
 * The built-in coding tools (`builtinTools`) through a real `agentWorkflow` on the dev server, driven by a scripted
 * model: a read → edit → bash → read session, cancellation of a running `bash`, a worker killed mid-`bash` (not run
 * twice: docs/architecture.md#retries), workspace confinement, and the activity summaries in the history.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowFailedError } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { applyPatch } from 'diff';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentClient, type AgentRunHandle } from '../../client/agent-client.js';
import type { Script } from '../../activities/model/scripted.js';
import { builtinTools } from '../../activities/tools/builtin/index.js';
import type { EditToolDetails } from '../../activities/tools/builtin/edit.js';
import { killAllWorkers, killWorker, spawnWorker } from './child-worker.js';
import { allEvents, startKeel, strip, until, workflowTaskFailures, type Keel } from './harness.js';
import { homeWorkerLost } from '../../common/errors.js';

const CHILD = fileURLToPath(new URL('./fixtures/builtin-worker.ts', import.meta.url));
const INTERRUPTED =
  'Tool bash was interrupted before it finished and was not retried because it is not idempotent. It may have partially run.';

const dirs: string[] = [];
function workspace(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'keel-bt-')));
  dirs.push(dir);
  return dir;
}

interface Proc {
  pid: number;
  ppid: number;
  pgid: number;
  args: string;
}

/** Live processes (from `ps -eo pid,ppid,pgid,args`) whose working directory is `dir`: the bash tool's shells and their children. */
function processesIn(dir: string): Proc[] {
  const out = execFileSync('ps', ['-eo', 'pid,ppid,pgid,args'], { encoding: 'utf8' });
  const procs: Proc[] = [];
  for (const line of out.split('\n').slice(1)) {
    const m = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const pid = Number(m[1]);
    let cwd: string;
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      continue; // gone, or a zombie
    }
    if (cwd === dir) procs.push({ pid, ppid: Number(m[2]), pgid: Number(m[3]), args: m[4] });
  }
  return procs;
}

function killGroups(procs: Proc[]): void {
  for (const p of procs) {
    try {
      process.kill(-p.pgid, 'SIGKILL');
    } catch {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

afterAll(() => {
  for (const dir of dirs) {
    killGroups(processesIn(dir));
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Scheduled activities and local-activity markers (the cancel request), each with its UI summary. */
async function summaries(h: AgentRunHandle): Promise<{ activity: string; summary: string | undefined }[]> {
  const history = await h.workflow.fetchHistory();
  return (history.events ?? [])
    .filter(
      (e) =>
        e.activityTaskScheduledEventAttributes || e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    )
    .map((e) => ({
      activity:
        e.activityTaskScheduledEventAttributes?.activityType?.name ??
        localActivityType(e.markerRecordedEventAttributes!.details),
      summary: e.userMetadata?.summary
        ? defaultPayloadConverter.fromPayload<string>(e.userMetadata.summary)
        : undefined,
    }));
}

function localActivityType(
  details: Record<string, { payloads?: temporal.api.common.v1.IPayload[] | null }> | null | undefined,
): string {
  const data = details?.data?.payloads?.[0];
  const marker = data
    ? defaultPayloadConverter.fromPayload<{ activity_type?: string; activityType?: string }>(data)
    : {};
  return marker.activity_type ?? marker.activityType ?? 'local activity';
}

describe('built-in tools through agentWorkflow (in-process worker)', () => {
  let keel: Keel;
  let ws: string;
  let notes: string;
  let sessionRun: AgentRunHandle;
  let cancelRun: AgentRunHandle;

  beforeAll(async () => {
    ws = workspace();
    notes = join(ws, 'notes.txt');
    writeFileSync(notes, 'hello world\nsecond line\n');
    const scripts: Record<string, Script> = {
      coder: {
        rules: [
          { match: 'toolResult:read hello keel', text: 'all done' },
          { match: 'toolResult:bash', toolCalls: [{ id: 't4', name: 'read', arguments: { path: 'notes.txt' } }] },
          {
            match: 'toolResult:edit',
            toolCalls: [
              { id: 't3', name: 'bash', arguments: { command: 'echo appended >> notes.txt && wc -l < notes.txt' } },
            ],
          },
          {
            match: 'toolResult:read hello world',
            toolCalls: [
              { id: 't2', name: 'edit', arguments: { path: notes, edits: [{ oldText: 'world', newText: 'keel' }] } },
            ],
          },
          { match: 'work on notes', toolCalls: [{ id: 't1', name: 'read', arguments: { path: 'notes.txt' } }] },
        ],
      },
      sleeper: {
        rules: [
          { match: 'toolResult:bash', text: 'woke up' },
          { match: 'nap', toolCalls: [{ id: 't1', name: 'bash', arguments: { command: 'sleep 30' } }] },
        ],
      },
      escape: {
        rules: [
          { match: 'toolResult:read', text: 'cannot read outside' },
          { match: 'peek', toolCalls: [{ id: 't1', name: 'read', arguments: { path: '../../../etc/hosts' } }] },
        ],
      },
    };
    keel = await startKeel({ scripts, tools: builtinTools({ cwd: ws }) });
  });
  afterAll(() => keel?.stop());

  it('read → edit → bash → read: final file and the whole transcript', async () => {
    const t0 = Date.now();
    sessionRun = await keel.start({
      model: 'scripted/coder',
      prompt: 'work on notes',
      tools: ['read', 'edit', 'bash'],
    });
    const r = await sessionRun.result();
    console.info(`[builtin-tools] read→edit→bash→read session: ${Date.now() - t0} ms`);
    expect(r.status).toBe('completed');
    expect(r.finalText).toBe('all done');
    expect(readFileSync(notes, 'utf8')).toBe('hello keel\nsecond line\nappended\n');

    const editResult = r.newMessages[4];
    expect(editResult.role).toBe('toolResult');
    const details = (editResult as { details: EditToolDetails }).details;
    expect(details).toEqual({
      diff: '-1 hello world\n+1 hello keel\n 2 second line',
      patch: `--- ${notes}\n+++ ${notes}\n@@ -1,2 +1,2 @@\n-hello world\n+hello keel\n second line\n`,
      firstChangedLine: 1,
    });
    expect(applyPatch('hello world\nsecond line\n', details.patch)).toBe('hello keel\nsecond line\n');

    expect(strip(r.newMessages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'work on notes' }] },
      {
        role: 'assistant',
        content: [{ type: 'toolCall', id: 't1', name: 'read', arguments: { path: 'notes.txt' } }],
        stopReason: 'toolUse',
      },
      {
        role: 'toolResult',
        toolCallId: 't1',
        toolName: 'read',
        content: [{ type: 'text', text: 'hello world\nsecond line\n' }],
        isError: false,
      },
      {
        role: 'assistant',
        content: [
          {
            type: 'toolCall',
            id: 't2',
            name: 'edit',
            arguments: { path: notes, edits: [{ oldText: 'world', newText: 'keel' }] },
          },
        ],
        stopReason: 'toolUse',
      },
      {
        role: 'toolResult',
        toolCallId: 't2',
        toolName: 'edit',
        content: [{ type: 'text', text: `Successfully replaced 1 block(s) in ${notes}.` }],
        details: { diff: details.diff, patch: details.patch, firstChangedLine: 1 },
        isError: false,
      },
      {
        role: 'assistant',
        content: [
          {
            type: 'toolCall',
            id: 't3',
            name: 'bash',
            arguments: { command: 'echo appended >> notes.txt && wc -l < notes.txt' },
          },
        ],
        stopReason: 'toolUse',
      },
      {
        role: 'toolResult',
        toolCallId: 't3',
        toolName: 'bash',
        content: [{ type: 'text', text: '3\n' }],
        isError: false,
      },
      {
        role: 'assistant',
        content: [{ type: 'toolCall', id: 't4', name: 'read', arguments: { path: 'notes.txt' } }],
        stopReason: 'toolUse',
      },
      {
        role: 'toolResult',
        toolCallId: 't4',
        toolName: 'read',
        content: [{ type: 'text', text: 'hello keel\nsecond line\nappended\n' }],
        isError: false,
      },
      { role: 'assistant', content: [{ type: 'text', text: 'all done' }], stopReason: 'stop' },
    ]);
  });

  it('cancel during `bash sleep 30` ends the run Canceled within 2 s, kills the sleep, and records Operation aborted', async () => {
    const h = (cancelRun = await keel.start({ model: 'scripted/sleeper', prompt: 'take a nap', tools: ['bash'] }));
    const sleeping = () => processesIn(ws).filter((p) => p.args === 'sleep 30' || p.args.endsWith('-c sleep 30'));
    await until(() => sleeping().some((p) => p.args === 'sleep 30'), 20_000, 'sleep 30 running');
    const t0 = Date.now();
    await h.cancel('stop napping');
    const err = await h.workflow.result().catch((e) => e);
    const elapsed = Date.now() - t0;
    console.info(`[builtin-tools] cancel → workflow closed: ${elapsed} ms`);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((await h.workflow.describe()).status.name).toBe('CANCELLED');
    expect(elapsed).toBeLessThan(2_000);
    expect(sleeping()).toEqual([]);
    expect(strip(await h.allMessages())).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'take a nap' }] },
      {
        role: 'assistant',
        content: [{ type: 'toolCall', id: 't1', name: 'bash', arguments: { command: 'sleep 30' } }],
        stopReason: 'toolUse',
      },
      {
        role: 'toolResult',
        toolCallId: 't1',
        toolName: 'bash',
        content: [{ type: 'text', text: 'Operation aborted' }],
        details: {},
        isError: true,
      },
    ]);
    expect((await h.state()).status).toBe('cancelled');
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('read outside the workspace is an isError result naming the root, and the run continues', async () => {
    const h = await keel.start({ model: 'scripted/escape', prompt: 'peek at hosts', tools: ['read'] });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(strip(r.newMessages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'peek at hosts' }] },
      {
        role: 'assistant',
        content: [{ type: 'toolCall', id: 't1', name: 'read', arguments: { path: '../../../etc/hosts' } }],
        stopReason: 'toolUse',
      },
      {
        role: 'toolResult',
        toolCallId: 't1',
        toolName: 'read',
        content: [
          { type: 'text', text: `Path "../../../etc/hosts" is outside the workspace ${ws}. Use a path inside ${ws}.` },
        ],
        details: {},
        isError: true,
      },
      { role: 'assistant', content: [{ type: 'text', text: 'cannot read outside' }], stopReason: 'stop' },
    ]);
  });

  it("tool activities carry the tools' own summaries (`read <path>`, `edit <path> (1 edit)`, `bash <command>`); model calls `model <id> · turn <n>`", async () => {
    expect(sessionRun && cancelRun, 'the session and cancel tests ran first').toBeTruthy();
    const session = await summaries(sessionRun);
    expect(session.filter((a) => a.activity !== 'startRun')).toEqual([
      { activity: 'callModel', summary: 'model scripted/coder · turn 1' },
      { activity: 'runToolCall', summary: 'read notes.txt' },
      { activity: 'callModel', summary: 'model scripted/coder · turn 2' },
      { activity: 'runToolCall', summary: `edit ${notes} (1 edit)` },
      { activity: 'callModel', summary: 'model scripted/coder · turn 3' },
      { activity: 'runToolCall', summary: 'bash echo appended >> notes.txt && wc -l < notes.txt' },
      { activity: 'callModel', summary: 'model scripted/coder · turn 4' },
      { activity: 'runToolCall', summary: 'read notes.txt' },
      { activity: 'callModel', summary: 'model scripted/coder · turn 5' },
    ]);
    const cancelled = await summaries(cancelRun);
    expect(cancelled.filter((a) => a.activity !== 'startRun' && a.activity !== 'requestCancel')).toEqual([
      { activity: 'callModel', summary: 'model scripted/sleeper · turn 1' },
      { activity: 'runToolCall', summary: 'bash sleep 30' },
    ]);
  });

  it('every scheduled activity carries a summary, the setup activities included', async () => {
    expect(sessionRun && cancelRun, 'the session and cancel tests ran first').toBeTruthy();
    const all = [...(await summaries(sessionRun)), ...(await summaries(cancelRun))];
    expect(all.map((a) => a.activity)).toContain('requestCancel');
    const missing = all.filter((a) => typeof a.summary !== 'string' || a.summary.length === 0);
    expect(missing).toEqual([]);
  });
});

describe('built-in tools: worker killed during bash (child process)', () => {
  afterAll(killAllWorkers);

  const startChild = (taskQueue: string, cwd: string, scripts: Record<string, Script>) =>
    spawnWorker(CHILD, { KEEL_TASK_QUEUE: taskQueue, KEEL_CWD: cwd, KEEL_SCRIPTS: JSON.stringify(scripts) });
  const kill = killWorker;

  it('a bash call whose worker was SIGKILLed is not run again; the transcript records the interrupted text', async () => {
    const ws = workspace();
    const counter = join(ws, 'count.txt');
    const lines = () => (existsSync(counter) ? readFileSync(counter, 'utf8').split('\n').filter(Boolean) : []);
    const command = 'echo run >> count.txt; sleep 30';
    const scripts: Record<string, Script> = {
      counter: {
        rules: [
          { match: 'toolResult:bash', text: 'bash handled' },
          { match: 'count it', toolCalls: [{ id: 't1', name: 'bash', arguments: { command } }] },
        ],
      },
    };
    const taskQueue = `builtin-durable-${randomUUID()}`;
    const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
    try {
      const first = await startChild(taskQueue, ws, scripts);
      const h = await client.start({
        model: 'scripted/counter',
        prompt: 'count it',
        tools: ['bash'],
        heartbeatTimeout: '2s',
        homeWorkerTimeout: '2s',
      });
      await until(() => lines().length === 1, 30_000, 'bash started');
      await until(() => processesIn(ws).some((p) => p.args === 'sleep 30'), 10_000, 'sleep running');
      const before = processesIn(ws);
      await kill(first);
      await new Promise((r) => setTimeout(r, 300)); // not a synchronisation: what is still alive shortly after, for the log
      const survivors = processesIn(ws);
      console.info(
        `[builtin-tools] worker pid ${first.pid}; bash process group before its SIGKILL: ${JSON.stringify(before)}; ` +
          `still alive after it: ${JSON.stringify(survivors)}`,
      );
      const t0 = Date.now();
      const second = await startChild(taskQueue, ws, scripts);
      const r = await h.result();
      console.info(
        `[builtin-tools] second worker → run completed: ${Date.now() - t0} ms; still alive then: ${JSON.stringify(processesIn(ws))}`,
      );
      expect(r.status).toBe('completed');
      expect(lines()).toEqual(['run']);
      expect(strip(r.newMessages)).toEqual([
        { role: 'user', content: [{ type: 'text', text: 'count it' }] },
        {
          role: 'assistant',
          content: [{ type: 'toolCall', id: 't1', name: 'bash', arguments: { command } }],
          stopReason: 'toolUse',
        },
        {
          role: 'toolResult',
          toolCallId: 't1',
          toolName: 'bash',
          content: [{ type: 'text', text: INTERRUPTED }],
          details: {},
          isError: true,
        },
        { role: 'assistant', content: [{ type: 'text', text: 'bash handled' }], stopReason: 'stop' },
      ]);
      // the retry went to the dead worker's own queue (never started there), then the run moved to the second worker
      const moves = (await allEvents(h)).flatMap((e) => (e.type === 'worker_rehomed' ? [e] : []));
      expect(moves.map((e) => [e.toolCallId, e.toolName, e.text])).toEqual([
        ['t1', 'bash', homeWorkerLost('bash', moves[0]?.from, '2s', moves[0]?.to)],
      ]);
      expect(moves[0].from).toMatch(new RegExp(`^${taskQueue}:home:`));
      expect(moves[0].to).toMatch(new RegExp(`^${taskQueue}:home:`));
      expect(moves[0].to).not.toBe(moves[0].from);
      await kill(second);
    } finally {
      killGroups(processesIn(ws));
      await client.close();
    }
  });
});
