/**
 * Worker roles (issue 21 item 3): a `tools` worker started in its own process without any provider key runs the tool
 * calls of a conversation whose model calls a `model` worker makes with its key. What the tool process can see — its
 * environment, and every `/proc/<pid>/environ` it may read — holds no key; the worker-local `bash` call finds its home
 * on the tools worker (worker affinity through the tool queue), and a local read tool runs there as an activity, not
 * in the model worker's process.
 *
 * Two layouts: one user (the model worker in this process, its key in a file, which the tool can then read: why the
 * README asks for separate containers or users), and, as root, the tools worker as user `nobody` beside a model
 * worker holding the key in its environment and in a 0600 file: neither is within the tool's reach.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { temporal } from '@temporalio/proto';
import { AgentClient, type AgentRunHandle } from '../../client/agent-client.js';
import { builtinTools } from '../../activities/tools/builtin/index.js';
import { piAiProvider } from '../../activities/model/pi-ai.js';
import type { AgentRunResult } from '../../common/run.js';
import { createAgentWorker } from '../../worker/create-worker.js';
import { startMockProvider, type MockProviderServer } from '../mock-providers/server.js';
import { quietRuntime } from './harness.js';
import { killWorker } from './child-worker.js';
import { keelCli, ROOT, spawnUntil, stopChild, TEST_UI } from './cli-child.js';
import { scriptedModel } from '../../activities/model/scripted.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/builtin-worker.ts', import.meta.url));
const NOBODY = 65534;
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const cleanup: (() => unknown)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

/** A worker of the fixture in a child process, with exactly `env` (nothing inherited) and optionally as `uid`. */
function spawnFixture(env: Record<string, string>, uid?: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: uid === undefined ? (process.env.HOME ?? '/tmp') : '/tmp',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
    ...(uid === undefined ? {} : { uid, gid: uid }),
  });
  cleanup.push(() => killWorker(child));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve(child));
    child.on('exit', (code) => reject(new Error(`worker (${env.KEEL_ROLE}) exited with ${code}`)));
  });
}

/** What the model asks `bash` to run: its environment, the environ files it can read and those holding the key. */
const probe = (key: string, keyFile: string) =>
  [
    'echo "env-api-keys: $(env | grep -c API_KEY)"',
    'echo "env-key-value: $(env | grep -c -F -e ' + key + ')"',
    'n=0; for f in /proc/[0-9]*/environ; do if cat "$f" >/dev/null 2>&1; then n=$((n+1)); fi; done; echo "environ-readable: $n"',
    'echo "environ-with-key: $(grep -l -a -F -e ' + key + ' /proc/[0-9]*/environ 2>/dev/null | wc -l)"',
    "echo \"parent-api-keys: $(tr '\\0' '\\n' < /proc/$PPID/environ | grep -c API_KEY)\"",
    `echo "key-file-readable: $(cat ${keyFile} >/dev/null 2>&1 && echo 1 || echo 0)"`,
    'echo "written by bash" > probe.txt',
  ].join('\n');

interface Layout {
  key: string;
  keyFile: string;
  ws: string;
  taskQueue: string;
  mock: MockProviderServer;
}

async function layout(): Promise<Layout> {
  quietRuntime();
  const key = `sk-ant-keel-roles-${randomUUID()}`;
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'keel-roles-')));
  cleanup.push(() => rmSync(base, { recursive: true, force: true }));
  chmodSync(base, 0o755); // another user may reach the workspace; the key file stays 0600
  const keyFile = join(base, 'anthropic-key');
  writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
  const ws = join(base, 'ws');
  mkdirSync(ws);
  const mock = await startMockProvider('anthropic');
  cleanup.push(() => mock.close());
  mock.enqueue(
    {
      reply: {
        blocks: [{ type: 'toolCall', id: 'toolu_1', name: 'bash', arguments: { command: probe(key, keyFile) } }],
      },
    },
    { reply: { blocks: [{ type: 'toolCall', id: 'toolu_2', name: 'read', arguments: { path: 'probe.txt' } }] } },
    { reply: { blocks: [{ type: 'text', text: 'checked' }] } },
  );
  return { key, keyFile, ws, taskQueue: `test-roles-${randomUUID()}`, mock };
}

/** Runs the conversation; returns the result, the fields bash printed, and the run. */
async function converse(l: Layout): Promise<{ r: AgentRunResult; field: (name: string) => number; h: AgentRunHandle }> {
  const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue: l.taskQueue });
  cleanup.push(() => client.close());
  const h = await client.start(
    { model: 'anthropic/claude-sonnet-4-5', prompt: 'Look around.', tools: ['bash', 'read'] },
    { workflowId: `roles-${randomUUID()}` },
  );
  const r = await h.result();
  expect(r.status).toBe('completed');
  expect(r.finalText).toBe('checked');
  const [bash, read] = r.newMessages.filter((m) => m.role === 'toolResult');
  const out = bash?.role === 'toolResult' && bash.content[0]?.type === 'text' ? bash.content[0].text : '';
  console.info(`[worker-roles] bash in the tools worker:\n${out}`);
  expect(bash?.role === 'toolResult' && bash.isError).toBe(false);
  // the read ran on the same (home) tools worker, whose disk has what bash wrote
  expect(read?.role === 'toolResult' && read.content).toEqual([{ type: 'text', text: 'written by bash\n' }]);
  // the model worker used its key for every model call
  expect(l.mock.requests.map((q) => q.headers['x-api-key'])).toEqual([l.key, l.key, l.key]);
  return { r, h, field: (name) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(out)?.[1]) };
}

/** The tools worker's own environment, read from outside: no key variable, no key. */
function expectCleanEnviron(child: ChildProcess, key: string): void {
  const environ = readFileSync(`/proc/${child.pid}/environ`, 'utf8').split('\0');
  expect(environ.filter((v) => /API_KEY|^sk-/.test(v) || v.includes(key))).toEqual([]);
}

describe('worker roles: model and tools in separate processes', () => {
  it('a tools worker without provider keys runs the tool calls of a model worker holding one; nothing it sees holds the key', async () => {
    const l = await layout();
    const tools = await spawnFixture({
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      KEEL_TASK_QUEUE: l.taskQueue,
      KEEL_CWD: l.ws,
      KEEL_ROLE: 'tools',
    });
    const model = await createAgentWorker({
      address: inject('temporalAddress'),
      taskQueue: l.taskQueue,
      role: 'model',
      workflowBundle: { codePath: inject('workflowBundlePath') },
      // local read tools asked for: a model worker still places no tool call in its own process
      tools: builtinTools({ cwd: l.ws, localReadTools: true }),
      models: {
        anthropic: piAiProvider({ baseUrls: { anthropic: l.mock.url }, env: { ANTHROPIC_API_KEY_FILE: l.keyFile } }),
      },
    });
    const running = model.run();
    running.catch(() => {});
    cleanup.push(() => model.shutdown());
    await model.ready();

    const { h, field } = await converse(l);
    expect(field('env-api-keys')).toBe(0);
    expect(field('env-key-value')).toBe(0);
    expect(field('environ-with-key')).toBe(0);
    expect(field('environ-readable')).toBeGreaterThan(0);
    expect(field('parent-api-keys')).toBe(0);
    // one host, one user: bash runs in the sandbox, which shows it the system directories and its workspace only, so
    // the model worker's key file (in a temporary directory) is out of reach too; unsandboxed it would not be (README)
    expect(field('key-file-readable')).toBe(0);
    expectCleanEnviron(tools, l.key);

    // model calls on the run's task queue; the home question and the worker-local calls on the tools side
    const { EventType } = temporal.api.enums.v1;
    const history = await h.workflow.fetchHistory();
    const scheduled = (history.events ?? [])
      .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      .map((e) => {
        const s = e.activityTaskScheduledEventAttributes!;
        return `${s.activityType?.name} ${s.taskQueue?.name?.replace(/:home:.*$/, ':home:…')}`;
      });
    expect(scheduled).toEqual([
      `startRun ${l.taskQueue}`,
      `callModel ${l.taskQueue}`,
      `workerHome ${l.taskQueue}-tools`,
      `runToolCall ${l.taskQueue}:home:…`,
      `callModel ${l.taskQueue}`,
      `runToolCall ${l.taskQueue}:home:…`, // read: an activity on the home tools worker, not a local activity
      `callModel ${l.taskQueue}`,
    ]);
    const markers = (history.events ?? []).filter(
      (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    );
    expect(markers).toEqual([]);
  });

  it.runIf(isRoot)(
    'as another user, the tools worker reaches neither the model worker’s environment nor its key file',
    async () => {
      const l = await layout();
      chownSync(l.ws, NOBODY, NOBODY);
      const tools = await spawnFixture(
        {
          TEMPORAL_ADDRESS: inject('temporalAddress'),
          KEEL_TASK_QUEUE: l.taskQueue,
          KEEL_CWD: l.ws,
          KEEL_ROLE: 'tools',
        },
        NOBODY,
      );
      // the model worker as root, its key in its environment (and in the 0600 file)
      await spawnFixture({
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        KEEL_TASK_QUEUE: l.taskQueue,
        KEEL_BUNDLE: inject('workflowBundlePath'),
        KEEL_CWD: l.ws,
        KEEL_ROLE: 'model',
        KEEL_PI_AI: '1',
        KEEL_ANTHROPIC_BASE_URL: l.mock.url,
        ANTHROPIC_API_KEY: l.key,
      });
      const { field } = await converse(l);
      expect(field('env-api-keys')).toBe(0);
      expect(field('env-key-value')).toBe(0);
      expect(field('environ-with-key')).toBe(0);
      expect(field('environ-readable')).toBeGreaterThan(0);
      expect(field('parent-api-keys')).toBe(0);
      expect(field('key-file-readable')).toBe(0);
      expectCleanEnviron(tools, l.key);
    },
  );
});

/**
 * Issue 33 item 18: with roles split and no `tools` worker, a run's tool call waited silently (`keel run` printed the
 * call and then nothing; `keel status` said `turn 1 in progress`). `keel run`, `keel watch` and `keel status` now warn
 * as `keel start` does for an unpolled task queue, with a worker command that, pasted, lets the run finish.
 */
describe('worker roles: nobody polls the tool queue', () => {
  it('keel run, watch and status say so, and the pasted command starts the worker the run waits for', async () => {
    const address = inject('temporalAddress');
    const taskQueue = `test-no-tools-${randomUUID()}`;
    const ws = mkdtempSync(join(tmpdir(), 'keel-no-tools-'));
    const model = await createAgentWorker({
      address,
      taskQueue,
      role: 'model',
      workflowBundle: { codePath: inject('workflowBundlePath') },
      tools: builtinTools({ cwd: ws, definitionsOnly: true }),
      models: {
        scripted: scriptedModel({
          lister: {
            rules: [{ match: 'toolResult:ls', text: 'listed' }, { toolCall: { name: 'ls', arguments: { path: '.' } } }],
          },
        }),
      },
    });
    const running = model.run();
    running.catch(() => {});
    cleanup.push(() => model.shutdown());
    await model.ready();
    const env = { ...process.env };
    for (const k of ['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'KEEL_TASK_QUEUE', 'TEMPORAL_PROFILE']) delete env[k];
    const g = ['--address', address, '--task-queue', taskQueue, '--ui', TEST_UI];
    const hint = `npx keel worker --role tools --address ${address} --task-queue ${taskQueue}`;
    const warning =
      `[keel] no worker is polling task queue "${taskQueue}-tools" right now; the run's tool calls wait until one does.\n` +
      `       Start one with \`${hint}\` (or any worker with --role all).\n`;
    const id = `no-tools-${randomUUID()}`;

    const run = await spawnUntil(
      [...g, 'run', 'list it', '--model', 'scripted/lister', '--tools', 'ls', '--id', id],
      warning,
      { env },
    );
    expect(await stopChild(run.child, 'SIGINT')).toBe(130);
    expect(run.output.text).toContain(`tool_call ls {"path":"."}\n${warning}`);

    const status = await keelCli([...g, 'status', id], { env });
    expect([status.code, status.stderr]).toEqual([0, warning]);
    expect(status.stdout).toContain('turn 1 in progress');

    const watch = await spawnUntil([...g, 'watch', id], warning, { env });
    expect(await stopChild(watch.child, 'SIGINT')).toBe(130);

    // the hint, pasted into a shell in the project: the waiting call runs and the run completes
    const worker = spawn('/bin/sh', ['-c', hint], { cwd: ROOT, env, detached: true, stdio: 'ignore' });
    const exited = new Promise((r) => worker.once('exit', r));
    try {
      const client = await AgentClient.connect({ address, taskQueue });
      cleanup.push(() => client.close());
      expect((await client.getHandle(id).result()).finalText).toBe('listed');
    } finally {
      process.kill(-worker.pid!, 'SIGTERM');
      await exited;
    }
    const after = await keelCli([...g, 'status', id], { env });
    expect([after.code, after.stderr]).toEqual([0, '']);
  }, 120_000);
});
