/**
 * The `keel` CLI end to end (docs/cli.md): `node bin/keel.mjs …` in a child process against the test dev server, with
 * a Keel worker (scripted model) in this process on its own task queue.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { ensureTemporalCli } from '../../scripts/temporal-cli.mjs';
import { freePort } from '../free-port.js';
import { ONE_REPLY_EVENT_TYPES, strip, startKeel, until, workflowTaskFailures, type Keel } from './harness.js';
import { spawnUntil, stopChild } from './cli-child.js';

const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface CliResult {
  code: number | null;
  /** The signal that ended the process, when one did. */
  signal?: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function spawnKeel(args: string[]): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function collect(child: ChildProcess, timeoutMs = 60_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`keel timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

const rulesDir = mkdtempSync(join(tmpdir(), 'keel-cli-rules-'));
const RULES_FILE = join(rulesDir, 'rules.json');
writeFileSync(
  RULES_FILE,
  JSON.stringify({
    rules: [
      { match: 'toolResult:echo', text: 'echoed it' },
      { match: 'echo', text: 'Calling echo.', toolCalls: [{ id: 'e1', name: 'echo', arguments: { text: 'ping' } }] },
      { text: 'from the rule file' },
    ],
  }),
);

describe('keel CLI', () => {
  let k: Keel;
  let keel: (args: string[], timeoutMs?: number) => Promise<CliResult>;
  let ui: string;

  beforeAll(async () => {
    const { defineTool } = await import('../../activities/tools/define-tool.js');
    const echo = defineTool({
      name: 'echo',
      description: 'Echoes text.',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      execute: async (_id, args: { text: string }) => ({ content: [{ type: 'text', text: `echo: ${args.text}` }] }),
    });
    k = await startKeel({
      tools: [echo],
      scripts: {
        cli: {
          rules: [
            { match: 'toolResult:echo', text: 'The tool said ping.', usage: { input: 10, output: 5, totalTokens: 15 } },
            {
              match: 'use echo',
              text: 'Using echo.',
              toolCalls: [{ id: 'e1', name: 'echo', arguments: { text: 'ping' } }],
            },
            { match: 'break', text: 'cannot', stopReason: 'error', errorMessage: 'scripted model failure' },
            // streams for ~30 s (75 chunks): long enough that a spawned `keel interrupt` finds it running on a loaded machine
            {
              match: 'interrupt me',
              text: 'a reply that streams until it is interrupted… '.repeat(13),
              chunkDelayMs: 400,
            },
            { match: 'slow', text: 'a slow reply that streams for a while…', chunkDelayMs: 400 },
            { match: 'spend', text: 'Spent.', usage: { input: 1000, output: 0, totalTokens: 1000 } },
            { match: 'second', text: 'Second answer.' },
            { text: 'First answer.', usage: { input: 3, output: 2, totalTokens: 5 } },
          ],
        },
      },
    });
    ui = `http://localhost:8233/namespaces/default/workflows`;
    keel = (args, timeoutMs) =>
      collect(spawnKeel(['--address', k.address, '--task-queue', k.taskQueue, ...args]), timeoutMs);
  });
  afterAll(() => k?.stop());

  it('start → send → status --json → transcript --format json (a session)', async () => {
    const id = `cli-session-${Date.now()}`;
    const started = await keel(['start', 'hello', 'there', '--model', 'scripted/cli', '--mode', 'session', '--id', id]);
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout).toBe(`${id}\n${ui}/${id}\n`);

    const handle = k.client.getHandle(id);
    await until(async () => (await handle.state()).status === 'waiting', 20_000, 'first agent run');
    const idle = await keel(['interrupt', id]);
    expect([idle.code, idle.stdout]).toEqual([0, `interrupt → ${id}: nothing was running\n${ui}/${id}\n`]);
    const sent = await keel(['send', id, 'the', 'second', 'question']);
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toBe(`followUp → ${id}: queued 0 steering, 1 follow-up\n${ui}/${id}\n`);
    await until(
      async () => {
        const st = await handle.state();
        return st.status === 'waiting' && st.runs === 2;
      },
      20_000,
      'second agent run',
    );

    const status = await keel(['--json', 'status', id]);
    expect(status.code, status.stderr).toBe(0);
    const report = JSON.parse(status.stdout);
    expect(report).toMatchObject({
      workflowId: id,
      url: `${ui}/${id}`,
      workflowType: 'agentWorkflow',
      taskQueue: k.taskQueue,
      temporalStatus: 'running',
      status: 'waiting',
      state: {
        status: 'waiting',
        mode: 'session',
        model: 'scripted/cli',
        turns: 2,
        runs: 2,
        messageCount: 4,
        lastReply: 'Second answer.',
        queued: { steering: 0, followUp: 0 },
      },
    });
    expect(report.state.usage.totalTokens).toBe(5);

    const transcript = await keel(['transcript', id, '--format', 'json']);
    expect(transcript.code, transcript.stderr).toBe(0);
    expect(transcript.stderr).toContain(`${ui}/${id}`);
    expect(strip(JSON.parse(transcript.stdout))).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hello there' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'First answer.' }], stopReason: 'stop' },
      { role: 'user', content: [{ type: 'text', text: 'the second question' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Second answer.' }], stopReason: 'stop' },
    ]);

    const md = await keel(['transcript', id]);
    expect(md.stdout).toContain('## User\n\nthe second question\n\n## Assistant (scripted/cli)\n\nSecond answer.');

    const steer = await keel(['steer', id, 'go on']);
    expect([steer.code, steer.stdout]).toEqual([0, `steer → ${id}: queued 1 steering, 0 follow-up\n${ui}/${id}\n`]);
    await until(
      async () => (await handle.state()).runs === 3 && (await handle.state()).status === 'waiting',
      20_000,
      'steered run',
    );
    const ended = await keel(['end', id]);
    expect([ended.code, ended.stdout]).toEqual([0, `end → ${id} (completed)\n${ui}/${id}\n`]);
    expect((await handle.result()).status).toBe('completed');
    const closed = await keel(['--json', 'status', id]);
    expect(closed.code).toBe(0);
    expect(JSON.parse(closed.stdout)).toMatchObject({
      temporalStatus: 'completed',
      status: 'completed',
      result: { status: 'completed', turns: 3, newMessageCount: 6 },
    });
    // a closed run takes no more signals: a usage error
    const late = await keel(['send', id, 'too late']);
    expect(late.code).toBe(2);
    expect(late.stderr).toContain('is completed');
  });

  it('run follows a task live (plain lines off a TTY) and exits 0; --ui changes the link base', async () => {
    const r = await keel([
      '--ui',
      'http://ui.example:9000/',
      'run',
      'please use echo',
      '--model',
      'scripted/cli',
      '--tools',
      'echo',
      '--id',
      `cli-run-${Date.now()}`,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^run cli-run-\d+ scripted\/cli · tools echo$/);
    expect(lines[1]).toMatch(/^ui http:\/\/ui\.example:9000\/namespaces\/default\/workflows\/cli-run-\d+$/);
    expect(lines.slice(2, -2)).toEqual([
      'turn 1',
      'user please use echo',
      'assistant Using echo.',
      'tool_call echo {"text":"ping"}',
      'tool_result echo ok echo: ping',
      'turn 2',
      'assistant The tool said ping.',
    ]);
    expect(lines.at(-2)).toMatch(
      /^done status=completed turns=2 tokens=15 input=10 output=5 cost=0\.000000 duration=\d+\.\ds$/,
    );
    expect(lines.at(-1)).toBe(lines[1]);
  });

  it('run --json prints the result; --input takes a full AgentRunInput; scripted/<file.json> loads rules', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-cli-'));
    const input = join(dir, 'input.json');
    writeFileSync(
      input,
      JSON.stringify({
        model: `scripted/${RULES_FILE}`,
        prompt: 'please echo',
        tools: ['echo'],
        metadata: { from: 'file' },
      }),
    );
    const r = await keel(['--json', 'run', '--input', input]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ status: 'completed', finalText: 'echoed it', turns: 2 });
    expect(out.url).toBe(`${ui}/${out.workflowId}`);
    expect(out.newMessages).toHaveLength(4);
    // inline JSON works like a file
    const inline = await keel([
      '--json',
      'run',
      '--input',
      JSON.stringify({ model: `scripted/${RULES_FILE}`, prompt: 'please echo', tools: ['echo'] }),
    ]);
    expect(inline.code, inline.stderr).toBe(0);
    expect(JSON.parse(inline.stdout)).toMatchObject({ status: 'completed', finalText: 'echoed it', turns: 2 });
  });

  it('exit code 1 for a failed run, with the error', async () => {
    const r = await keel(['run', 'break it', '--model', 'scripted/cli']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('model_error scripted model failure');
    expect(r.stdout).toMatch(/done status=failed turns=1/);
    const id = /^run (\S+)/.exec(r.stdout)![1];
    const status = await keel(['status', id]);
    expect(status.code).toBe(1);
    expect(status.stdout).toContain('failed');
    expect(status.stdout).toContain('error: scripted model failure');
    expect(status.stdout).toContain(`${ui}/${id}`);
  });

  it('batch without --id: the id comes from the tasks and running it again re-attaches', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-cli-batch-'));
    const tasks = join(dir, 'tasks.jsonl');
    writeFileSync(tasks, `${JSON.stringify(`second ${Date.now()}`)}\n"second again"\n`);
    const out = join(dir, 'results.jsonl');
    const first = await keel(['batch', tasks, '--model', 'scripted/cli', '--concurrency', '2', '--out', out]);
    expect(first.code, first.stderr).toBe(0);
    const id = /^batch (keel-batch-[0-9a-f]{16}) · 2 tasks · concurrency 2$/m.exec(first.stdout)?.[1];
    expect(id, first.stdout).toBeDefined();
    const again = await keel(['batch', tasks, '--model', 'scripted/cli', '--out', out]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(
      `These tasks already started batch ${id} (completed): attaching to it. Give --id <new id> to run them again.\n`,
    );
    expect(
      readFileSync(out, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).workflowId),
    ).toEqual([`${id}-0`, `${id}-1`]);
  });

  it("batch: SIGTERM stops following and prints the exact resume command; --attach shows the batch's own concurrency", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-cli-batch-'));
    const tasks = join(dir, 'tasks.jsonl');
    writeFileSync(tasks, `"slow ${Date.now()}"\n"slow too"\n"slow three"\n`);
    const out = join(dir, 'results.jsonl');
    const args = [
      '--address',
      k.address,
      '--task-queue',
      k.taskQueue,
      'batch',
      tasks,
      '--model',
      'scripted/cli',
      '--concurrency',
      '3',
      '--out',
      out,
    ];
    const child = spawnKeel(args);
    let seen = '';
    // the signal goes the instant the header arrives (as a supervising script's would): the CLI must already catch it
    child.stdout!.on('data', (d: Buffer) => {
      seen += d.toString();
      if (seen.includes('Temporal UI:') && child.signalCode === null && !child.killed) child.kill('SIGTERM');
    });
    const stopped = await collect(child);
    const id = /^batch (keel-batch-[0-9a-f]{16})/m.exec(seen)![1];
    expect(stopped.code, `signal ${stopped.signal}\nstdout: ${seen}${stopped.stdout}\nstderr: ${stopped.stderr}`).toBe(
      130,
    );
    const resume = `npx keel --address ${k.address} --task-queue ${k.taskQueue} batch --attach ${id} --out ${out}`;
    expect(seen + stopped.stdout).toContain(`Stopped following; the batch goes on. Resume with: ${resume}\n`);
    const attached = await keel(['batch', '--attach', id, '--out', out]);
    expect(attached.code, attached.stderr).toBe(0);
    expect(attached.stdout).toMatch(new RegExp(`^batch ${id} · 3 tasks · concurrency 3$`, 'm'));
    expect(attached.stdout).toMatch(/· concurrency 3 · continued-as-new 0×\n/);
    expect(readFileSync(out, 'utf8').trim().split('\n')).toHaveLength(3);
  });

  it('batch --max-tokens: one budget for the whole batch; progress and summary show spent/limit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-cli-batch-'));
    const tasks = join(dir, 'tasks.jsonl');
    // each task spends 1000 tokens: the first leaves 500 of the pool, the second (allowed 500) spends 1000, the
    // third never starts
    writeFileSync(tasks, `"spend ${Date.now()}"\n"spend two"\n"spend three"\n`);
    const out = join(dir, 'results.jsonl');
    const r = await keel(['batch', tasks, '--model', 'scripted/cli', '-c', '1', '--max-tokens', '1500', '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    const id = /^batch (keel-batch-[0-9a-f]{16}) · 3 tasks · concurrency 1$/m.exec(r.stdout)?.[1];
    expect(id, r.stdout).toBeDefined();
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines.slice(-5, -4)[0]).toMatch(
      /^progress total=3 done=3 failed=0 running=0 queued=0 concurrency=1 tokens=2000 cost=0\.000000 budget=tokens:2000\/1500 budget_spent=true( rate=\d+\/min)?$/,
    );
    expect(lines.slice(-4, -3)[0]).toMatch(
      /^✔ 3\/3 done · 0 failed · 2,000 tokens · \$0\.0000 · [^·]+ m?s( · \d+ tasks\/min)? · concurrency 1 · continued-as-new 0×$/,
    );
    expect(lines.slice(-3)).toEqual([
      'Budget: tokens 2000 of 1500 — spent: no further task started',
      `Results: ${out}`,
      `Temporal UI: ${ui}/${id}`,
    ]);
    expect(
      readFileSync(out, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .map((t) => [t.status, t.usage?.totalTokens ?? 0, t.error ?? null]),
    ).toEqual([
      ['completed', 1000, null],
      ['completed', 1000, null],
      ['stopped', 0, 'Budget exceeded: tokens 2,000 spent, 0 reserved of 1,500 (batch budget)'],
    ]);
  });

  it('batch budget flags: bad values and --attach are usage errors with the exact text', async () => {
    const cases: [string[], string][] = [
      [
        ['batch', '-', '--max-tokens', '0'],
        "error: option '--max-tokens <n>' argument '0' is invalid. --max-tokens must be an integer >= 1.\n(run with --help for usage)\n",
      ],
      [
        ['batch', '-', '--max-model-calls', '2.5'],
        "error: option '--max-model-calls <n>' argument '2.5' is invalid. --max-model-calls must be an integer >= 1.\n(run with --help for usage)\n",
      ],
      [
        ['batch', '-', '--max-cost-usd', 'lots'],
        "error: option '--max-cost-usd <usd>' argument 'lots' is invalid. --max-cost-usd must be a number > 0 (US dollars, e.g. 2.5).\n(run with --help for usage)\n",
      ],
      [
        ['batch', '--attach', 'b', '--max-cost-usd', '2'],
        'keel: --max-tokens, --max-cost-usd and --max-model-calls set the budget of a new batch; --attach follows a batch with the budget it started with.\n',
      ],
    ];
    for (const [args, stderr] of cases) {
      const r = await keel(args);
      expect([r.code, r.stderr], args.join(' ')).toEqual([2, stderr]);
    }
  });

  it('exit code 2 for usage errors (before or after reaching Temporal)', async () => {
    const cases: [string[], RegExp][] = [
      [['run'], /Give a prompt/],
      [['run', 'x', '--max-turns', 'none'], /--max-turns/],
      [['frobnicate'], /unknown command/],
      [['run', 'x', '--model', 'gpt'], /model: must be "provider\/model-id"/],
      [['status', 'no-such-run'], /No run found/],
      [
        ['run', 'x', '--model', 'scripted/cli', '--tools', 'ghost'],
        /tools: unknown "ghost"; tools registered on this worker: echo/,
      ],
    ];
    for (const [args, message] of cases) {
      const r = await keel(args);
      expect(r.code, `${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(2);
      expect(`${r.stdout}${r.stderr}`).toMatch(message);
    }
  });

  it('exit code 3 when Temporal cannot be reached, saying to start `npx keel dev`', async () => {
    const port = await freePort();
    for (const args of [
      ['status', 'x'],
      ['run', 'hi', '--model', 'scripted/cli'],
      ['batch', '-', '--attach', 'b'],
    ]) {
      const r = await collect(spawnKeel(['--address', `127.0.0.1:${port}`, ...args]));
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toContain(`Cannot reach Temporal at 127.0.0.1:${port}`);
      expect(r.stderr).toContain('npx keel dev');
    }
  });

  it('watch follows a run to its end; interrupt and cancel; a cancelled run exits 1', async () => {
    const id = `cli-watch-${Date.now()}`;
    expect(
      (await keel(['start', 'interrupt me', '--model', 'scripted/cli', '--mode', 'session', '--id', id])).code,
    ).toBe(0);
    const watcher = spawnKeel(['--address', k.address, '--task-queue', k.taskQueue, 'watch', id]);
    let seen = '';
    watcher.stdout!.on('data', (d: Buffer) => (seen += d.toString()));
    const watching = collect(watcher);
    const handle = k.client.getHandle(id);
    await until(async () => (await handle.state()).status === 'running', 20_000, 'running');
    const interrupted = await keel(['interrupt', id]);
    expect([interrupted.code, interrupted.stdout]).toEqual([
      0,
      `interrupt → ${id}: interrupted; the session waits for input\n${ui}/${id}\n`,
    ]);
    await until(async () => (await handle.state()).status === 'waiting', 20_000, 'waiting after interrupt');
    // the watcher notices the wait on its next state poll: cancel only once it said so
    await vi.waitFor(() => expect(seen).toMatch(/\ninterrupted\nwaiting for input\n/), { timeout: 20_000 });
    const cancelled = await keel(['cancel', id, '--reason', 'test over', '--wait']);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toContain(`cancel → ${id} (cancelled)`);
    const w = await watching;
    expect(w.code).toBe(1);
    expect(w.stdout).toContain('user interrupt me');
    expect(w.stdout).toMatch(/done status=cancelled turns=1/);
    // the interrupt and the wait that followed have their lines, in that order
    expect(w.stdout).toMatch(/\ninterrupted\nwaiting for input\n/);
    const st = await keel(['--json', 'status', id]);
    expect(st.code).toBe(1);
    expect(JSON.parse(st.stdout)).toMatchObject({ temporalStatus: 'cancelled', status: 'cancelled' });
    expect(await workflowTaskFailures(handle)).toEqual([]);
  });

  it('run in a TTY-less pipe shows streamed replies as whole messages; watch --json prints events as JSON lines', async () => {
    const id = `cli-json-${Date.now()}`;
    const run = await keel(['run', 'hello', '--model', 'scripted/cli', '--id', id]);
    expect(run.code).toBe(0);
    const w = await keel(['--json', 'watch', id]);
    expect(w.code).toBe(0);
    const lines = w.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((e) => e.type)).toEqual([...ONE_REPLY_EVENT_TYPES, 'summary']);
    expect(lines.at(-1)).toMatchObject({ type: 'summary', status: 'completed', turns: 1, url: `${ui}/${id}` });
  });
});

describe('keel dev', () => {
  it('--no-worker keeps serving until SIGTERM; other commands link to its --ui-port; keel worker takes $KEEL_WORKSPACE', async () => {
    const [port, uiPort] = [await freePort(), await freePort()];
    const dir = mkdtempSync(join(tmpdir(), 'keel-dev-noworker-'));
    // its own cache dir for the dev-server record; the already provisioned CLI binary
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      XDG_CACHE_HOME: join(dir, 'cache'),
      KEEL_WORKSPACE: dir,
      TEMPORAL_CLI_PATH: await ensureTemporalCli(),
    };
    delete env.KEEL_UI_URL;
    const dev = await spawnUntil(
      ['--address', `localhost:${port}`, 'dev', '--no-worker', '--in-memory', '--ui-port', String(uiPort)],
      'Keel dev server ready',
      { cwd: ROOT, env },
    );
    try {
      expect(dev.output.text).toContain(`Web UI http://localhost:${uiPort}/namespaces/default/workflows`);
      // still up after the ready line: a client command reaches it and links to its UI port, not :8233
      const started = await collect(
        spawn(
          process.execPath,
          [BIN, '--address', `localhost:${port}`, 'start', 'hi', '--model', 'scripted/x', '--id', 'noworker-1'],
          { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
        ),
      );
      expect(started.code, started.stderr).toBe(0);
      expect(started.stdout).toContain(`http://localhost:${uiPort}/namespaces/default/workflows/noworker-1`);
      expect(dev.child.exitCode).toBe(null);
      const worker = await spawnUntil(
        ['--address', `localhost:${port}`, 'worker', '--no-builtin'],
        '[keel] worker on task queue keel',
        { cwd: ROOT, env },
      );
      expect(worker.output.text).toContain(`workspace ${dir}, tools (none)`);
      expect(await stopChild(worker.child)).toBe(0);
    } finally {
      expect(await stopChild(dev.child)).toBe(0);
    }
    expect(dev.output.text).not.toContain('unsettled top-level await');
  }, 120_000);

  it('serves Temporal from a SQLite file with a worker; runs survive a restart of `keel dev`', async () => {
    const [port, uiPort] = [await freePort(), await freePort()];
    const dir = mkdtempSync(join(tmpdir(), 'keel-dev-'));
    // a shared workspace beside the database, not around it (one that holds Keel's own data is refused)
    const workspace = join(dir, 'workspace');
    mkdirSync(workspace);
    writeFileSync(
      join(dir, 'rules.json'),
      JSON.stringify({ rules: [{ match: 'again', text: 'after the restart' }, { text: 'before the restart' }] }),
    );
    const devArgs = [
      '--address',
      `127.0.0.1:${port}`,
      'dev',
      '--db',
      join(dir, 'dev.db'),
      '--ui-port',
      String(uiPort),
      '--workspace',
      workspace,
    ];
    const startDev = async () => {
      const child = spawn(process.execPath, [BIN, ...devArgs], {
        cwd: dir,
        env: { ...process.env, NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('Keel dev server ready')) resolve();
        });
        child.once('exit', (code) => reject(new Error(`keel dev exited ${code}: ${out}`)));
      });
      expect(out).toContain(`Web UI http://localhost:${uiPort}/namespaces/default/workflows`);
      expect(out).toContain(`Data: ${join(dir, 'dev.db')}`);
      return child;
    };
    const stopDev = (child: ChildProcess) =>
      new Promise<number | null>((resolve) => {
        child.once('exit', (code) => resolve(code));
        child.kill('SIGINT');
      });

    let dev = await startDev();
    const client = await AgentClient.connect({ address: `127.0.0.1:${port}` });
    try {
      const run = await client.start(
        { model: 'scripted/rules.json', prompt: 'first', mode: 'session', tools: ['ls'] },
        { workflowId: `dev-${Date.now()}` },
      );
      await until(async () => (await run.state()).status === 'waiting', 60_000, 'first agent run');
      expect(await stopDev(dev)).toBe(0);
      dev = await startDev();
      await run.followUp('again');
      await until(
        async () => (await run.state()).runs === 2 && (await run.state()).status === 'waiting',
        60_000,
        'run after restart',
      );
      await run.end();
      const r = await run.result();
      expect(r.status).toBe('completed');
      expect(
        r.newMessages.map((m) =>
          m.role === 'assistant' ? m.content.map((b) => (b.type === 'text' ? b.text : '')).join('') : m.role,
        ),
      ).toEqual(['user', 'before the restart', 'user', 'after the restart']);
    } finally {
      await client.close();
      await stopDev(dev);
    }
  }, 180_000);
});

describe('keel worker: Worker Deployment Versioning flags', () => {
  it('--build-id, --deployment-name and --no-make-current: the build registers without becoming current; without the flag it becomes current', async () => {
    const address = inject('temporalAddress');
    const client = await AgentClient.connect({ address });
    const deploymentName = `cli-deployment-${randomUUID()}`;
    const taskQueue = `cli-versioning-${randomUUID()}`;
    const deployment = () =>
      client.client.workflowService
        .describeWorkerDeployment({ namespace: 'default', deploymentName })
        .then((d) => ({
          builds: (d.workerDeploymentInfo?.versionSummaries ?? []).map((v) => v.deploymentVersion?.buildId).sort(),
          current: d.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId ?? undefined,
        }))
        .catch(() => ({ builds: [] as (string | null | undefined)[], current: undefined }));
    const worker = (buildId: string, ...more: string[]) =>
      spawnUntil(
        [
          ...['--address', address, '--task-queue', taskQueue, 'worker', '--no-builtin'],
          ...['--build-id', buildId, '--deployment-name', deploymentName, ...more],
        ],
        `[keel] worker on task queue ${taskQueue}`,
        { cwd: ROOT, env: process.env },
      );
    const a = await worker('cli-a', '--no-make-current');
    try {
      await vi.waitFor(async () => expect((await deployment()).builds).toEqual(['cli-a']), { timeout: 30_000 });
      expect((await deployment()).current).toBeUndefined();
      const b = await worker('cli-b');
      try {
        await vi.waitFor(
          async () => expect(await deployment()).toEqual({ builds: ['cli-a', 'cli-b'], current: 'cli-b' }),
          {
            timeout: 30_000,
          },
        );
      } finally {
        expect(await stopChild(b.child)).toBe(0);
      }
    } finally {
      expect(await stopChild(a.child)).toBe(0);
      await client.close();
    }
  }, 120_000);
});
