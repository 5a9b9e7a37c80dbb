/**
 * Worker roles (issue 21 item 3): a `tools` worker started in its own process without any provider key runs the tool
 * calls of a conversation whose model calls a `model` worker makes with a key it reads from a file. What the tool
 * process can see — its environment, and every `/proc/<pid>/environ` it may read — holds no key; the worker-local
 * `bash` call finds its home on the tools worker (worker affinity through the tool queue), and a local read tool runs
 * there as an activity, not in the model worker's process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { temporal } from '@temporalio/proto';
import { AgentClient } from '../../client/agent-client.js';
import { builtinTools } from '../../activities/tools/builtin/index.js';
import { piAiProvider } from '../../activities/model/pi-ai.js';
import { createAgentWorker } from '../../worker/create-worker.js';
import { startMockProvider, type MockProviderServer } from '../mock-providers/server.js';
import { quietRuntime } from './harness.js';
import { killWorker } from './child-worker.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/builtin-worker.ts', import.meta.url));
const cleanup: (() => unknown)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

/** The tools worker: a child process whose environment is built here, with no provider key in it. */
function spawnToolsWorker(taskQueue: string, cwd: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      KEEL_TASK_QUEUE: taskQueue,
      KEEL_CWD: cwd,
      KEEL_ROLE: 'tools',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanup.push(() => killWorker(child));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve(child));
    child.on('exit', (code) => reject(new Error(`tools worker exited with ${code}`)));
  });
}

/** What the model asks `bash` to run: its environment, the processes whose environ holds the key, and how many it read. */
const probe = (key: string) =>
  [
    'echo "env-api-keys: $(env | grep -c API_KEY)"',
    'echo "env-key-value: $(env | grep -c -F -e ' + key + ')"',
    'n=0; for f in /proc/[0-9]*/environ; do if cat "$f" >/dev/null 2>&1; then n=$((n+1)); fi; done; echo "environ-readable: $n"',
    'echo "environ-with-key: $(grep -l -a -F -e ' + key + ' /proc/[0-9]*/environ 2>/dev/null | wc -l)"',
    "echo \"parent-api-keys: $(tr '\\0' '\\n' < /proc/$PPID/environ | grep -c API_KEY)\"",
    'echo "written by bash" > probe.txt',
  ].join('\n');

describe('worker roles: model and tools in separate processes', () => {
  it('a tools worker without provider keys runs the tool calls of a model worker holding one; nothing it sees holds the key', async () => {
    quietRuntime();
    const key = `sk-ant-keel-roles-${randomUUID()}`;
    const base = realpathSync(mkdtempSync(join(tmpdir(), 'keel-roles-')));
    cleanup.push(() => rmSync(base, { recursive: true, force: true }));
    const keyFile = join(base, 'anthropic-key');
    writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
    const ws = join(base, 'ws');
    mkdirSync(ws);
    const taskQueue = `test-roles-${randomUUID()}`;

    const mock: MockProviderServer = await startMockProvider('anthropic');
    cleanup.push(() => mock.close());
    mock.enqueue(
      { reply: { blocks: [{ type: 'toolCall', id: 'toolu_1', name: 'bash', arguments: { command: probe(key) } }] } },
      { reply: { blocks: [{ type: 'toolCall', id: 'toolu_2', name: 'read', arguments: { path: 'probe.txt' } }] } },
      { reply: { blocks: [{ type: 'text', text: 'checked' }] } },
    );

    const toolsWorker = await spawnToolsWorker(taskQueue, ws);
    const model = await createAgentWorker({
      address: inject('temporalAddress'),
      taskQueue,
      role: 'model',
      workflowBundle: { codePath: inject('workflowBundlePath') },
      // local read tools asked for: a model worker still places no tool call in its own process
      tools: builtinTools({ cwd: ws, localReadTools: true }),
      models: {
        anthropic: piAiProvider({ baseUrls: { anthropic: mock.url }, env: { ANTHROPIC_API_KEY_FILE: keyFile } }),
      },
    });
    const running = model.run();
    running.catch(() => {});
    cleanup.push(() => model.shutdown());
    await model.ready();
    const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
    cleanup.push(() => client.close());

    const h = await client.start(
      { model: 'anthropic/claude-sonnet-4-5', prompt: 'Look around.', tools: ['bash', 'read'] },
      { workflowId: `roles-${randomUUID()}` },
    );
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(r.finalText).toBe('checked');

    // the model worker used the key from its file for both model calls
    expect(mock.requests.map((q) => q.headers['x-api-key'])).toEqual([key, key, key]);
    // the tool ran in the tools worker, which holds no key: neither its environment nor any environ it can read
    const result = r.newMessages.find((m) => m.role === 'toolResult');
    const out = result?.role === 'toolResult' && result.content[0]?.type === 'text' ? result.content[0].text : '';
    const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(out)?.[1]);
    expect({ out, isError: result?.role === 'toolResult' && result.isError }).toMatchObject({ isError: false });
    console.info(`[worker-roles] bash in the tools worker:\n${out}`);
    expect(field('env-api-keys')).toBe(0);
    expect(field('env-key-value')).toBe(0);
    expect(field('environ-with-key')).toBe(0);
    expect(field('environ-readable')).toBeGreaterThan(0);
    expect(field('parent-api-keys')).toBe(0);
    // the read ran on the same (home) tools worker, whose disk has what bash wrote
    const read = r.newMessages.filter((m) => m.role === 'toolResult')[1];
    expect(read?.role === 'toolResult' && read.content).toEqual([{ type: 'text', text: 'written by bash\n' }]);
    const toolsEnviron = readFileSync(`/proc/${toolsWorker.pid}/environ`, 'utf8').split('\0');
    expect(toolsEnviron.filter((v) => /API_KEY|^sk-/.test(v) || v.includes(key))).toEqual([]);

    // model calls on the run's task queue; the home question and the worker-local bash call on the tools side
    const { EventType } = temporal.api.enums.v1;
    const history = await h.workflow.fetchHistory();
    const scheduled = (history.events ?? [])
      .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      .map((e) => {
        const s = e.activityTaskScheduledEventAttributes!;
        return `${s.activityType?.name} ${s.taskQueue?.name?.replace(/:home:.*$/, ':home:…')}`;
      });
    expect(scheduled).toEqual([
      `startRun ${taskQueue}`,
      `callModel ${taskQueue}`,
      `workerHome ${taskQueue}-tools`,
      `runToolCall ${taskQueue}:home:…`,
      `callModel ${taskQueue}`,
      `runToolCall ${taskQueue}:home:…`, // read: an activity on the home tools worker, not a local activity
      `callModel ${taskQueue}`,
    ]);
    const markers = (history.events ?? []).filter(
      (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    );
    expect(markers).toEqual([]);
  });
});
