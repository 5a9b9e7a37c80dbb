/**
 * The `keel` CLI's wording (issue 20 item 15), each asserted exactly through a child process: `keel start` without a
 * prompt names `keel start`; `keel start --input` is checked before connecting; a syntax error in `--tools-module`
 * names the option; `keel batch --id <running batch>` says how to attach; `keel batch` without `--model` uses the
 * documented default; a subcommand's help lists its own options and points to `keel --help` for the global ones.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { keelCli } from './cli-child.js';

const dir = mkdtempSync(join(tmpdir(), 'keel-cli-texts-'));
/** Nothing listens here: a command that connects exits 3. */
const NOWHERE = ['--address', '127.0.0.1:1', '--connect-timeout', '1'];

describe('keel CLI texts', () => {
  let client: AgentClient;
  const address = inject('temporalAddress');
  /** A task queue no worker polls: a batch started there stays running. */
  const idleQueue = `cli-texts-idle-${randomUUID()}`;
  beforeAll(async () => {
    client = await AgentClient.connect({ address, taskQueue: idleQueue });
  });
  afterAll(() => client?.close());

  it('keel start without a prompt names keel start (and keel run names keel run)', async () => {
    const hint = (cmd: string) =>
      `keel: Give a prompt: \`keel ${cmd} "what to do"\` (or --input file.json with a prompt or messages).\n`;
    expect(await keelCli([...NOWHERE, 'start', '--model', 'scripted/x'])).toEqual({
      code: 2,
      stdout: '',
      stderr: hint('start'),
    });
    expect(await keelCli([...NOWHERE, 'run', '--model', 'scripted/x'])).toEqual({
      code: 2,
      stdout: '',
      stderr: hint('run'),
    });
  });

  it('keel start --input is checked before connecting: a bad input is exit 2, not "cannot reach Temporal"', async () => {
    const input = JSON.stringify({ model: 'scripted/x', prompt: 'hi', maxTurns: 0, colour: 'blue' });
    expect(await keelCli([...NOWHERE, 'start', '--input', input])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'keel: Invalid AgentRunInput:\n  colour: unknown field\n  maxTurns: must be >= 1\n',
    });
  });

  it('a syntax error in --tools-module names the option and the file', async () => {
    const file = join(dir, 'broken-tools.mjs');
    writeFileSync(file, 'export const tools = [;\n');
    const out = await keelCli([...NOWHERE, 'worker', '--no-builtin', '--tools-module', file]);
    expect([out.code, out.stdout]).toEqual([2, '']);
    expect(out.stderr).toBe(`keel: --tools-module ${file}: could not load it: Unexpected token ';'\n`);
  });

  it('keel batch --id naming a running batch says how to follow it (a command that works pasted); a closed one is refused', async () => {
    const tasks = join(dir, 'tasks.jsonl');
    writeFileSync(tasks, '"one"\n"two"\n');
    const id = `cli-texts-batch-${randomUUID()}`;
    const conn = ['--address', address, '--task-queue', idleQueue];
    const first = await keelCli([...conn, 'batch', tasks, '--id', id, '--model', 'scripted/x', '--detach']);
    expect([first.code, first.stderr]).toEqual([0, '']);
    try {
      const again = await keelCli([...conn, 'batch', tasks, '--id', id, '--model', 'scripted/x', '--out', 'r.jsonl']);
      expect(again).toEqual({
        code: 2,
        stdout: '',
        stderr:
          `keel: Batch ${id} already exists. Follow it with: npx keel --address ${address} --task-queue ${idleQueue} batch --attach ${id} --out r.jsonl\n` +
          'Or give another --id to run the tasks again.\n',
      });
    } finally {
      await client.client.workflow.getHandle(id).terminate('test over');
    }
    // closed, the id is not taken again: a second batch under it would mix its retries and results with the first's
    const closed = await keelCli([...conn, 'batch', tasks, '--id', id, '--model', 'scripted/x', '--detach']);
    expect(closed).toEqual({
      code: 2,
      stdout: '',
      stderr:
        `keel: Batch ${id} already ran (terminated); a batch id names one batch, so it is not started again.\n` +
        `Run the tasks without a result again: npx keel --address ${address} --task-queue ${idleQueue} batch retry ${id}\n` +
        'Or give another --id <new id> to run all the tasks again.\n',
    });
    const { executions } = await client.client.workflowService.listWorkflowExecutions({
      namespace: 'default',
      query: `WorkflowId = '${id}'`,
    });
    expect(executions).toHaveLength(1);
  });

  it('keel batch without --model gives its tasks the documented default model', async () => {
    const tasks = join(dir, 'no-model.jsonl');
    writeFileSync(tasks, '"one"\n');
    const id = `cli-texts-default-model-${randomUUID()}`;
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.KEEL_MODEL;
    const out = await keelCli(
      ['--address', address, '--task-queue', idleQueue, 'batch', tasks, '--id', id, '--detach'],
      {
        env,
      },
    );
    expect([out.code, out.stderr]).toEqual([0, '']);
    try {
      const { events } = await client.client.workflow.getHandle(id).fetchHistory();
      const started = events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
      const input = JSON.parse(Buffer.from(started!.data!).toString()) as { tasks: { model?: string }[] };
      expect(input.tasks.map((t) => t.model)).toEqual(['anthropic/claude-sonnet-4-5']);
    } finally {
      await client.client.workflow.getHandle(id).terminate('test over');
    }
  });

  it('keel batch retry --help shows the default of --status as the list to type, not a JSON array', async () => {
    const r = await keelCli(['batch', 'retry', '--help']);
    const lines = r.stdout.split('\n');
    const at = lines.findIndex((l) => l.startsWith('  --status'));
    expect(lines.slice(at, at + 3)).toEqual([
      '  --status <statuses>    retry tasks with these outcomes (comma-separated:',
      '                         completed, stopped, failed, cancelled, queued; queued =',
      '                         never started) (default: failed,cancelled,queued)',
    ]);
  });

  it("a subcommand's help lists its own options and points to keel --help for the global ones", async () => {
    expect(await keelCli(['status', '--help'])).toEqual({
      code: 0,
      stderr: '',
      stdout:
        'Usage: keel status [options] <workflowId>\n\n' +
        "Prints the run's status. Exit code: 0 running/waiting/completed/stopped, 1\n" +
        'failed (also an open session whose last agent run failed)/cancelled/terminated.\n\n' +
        'Arguments:\n  workflowId  the run (or batch)\n\n' +
        'Options:\n  -h, --help  display help for command\n\n' +
        'Global options (--address, --namespace, --task-queue, --ui, --json, TLS and API key): see `npx keel --help`; give them before or after the command.\n',
    });
    const top = await keelCli(['--help']);
    expect(top.stdout).toContain('  --address <host:port>');
    expect(top.stdout).not.toContain('Global options (');
  });
});

describe("a shared workspace never holds Keel's own data (issue 21 item 2)", () => {
  it('keel worker --workspace <dir> is refused when <dir> holds .keel/ (the payload store, keel dev’s database) or $KEEL_PAYLOAD_DIR', async () => {
    const project = mkdtempSync(join(tmpdir(), 'keel-shared-ws-'));
    const refusal = (ws: string, held: string) =>
      `keel: --workspace ${ws} holds Keel's own data (${held}), which a tool could then read or change. ` +
      'Leave out --workspace (each conversation gets a workspace of its own), or name a directory that does not hold it.\n';
    // the working directory's .keel/ inside the shared workspace (keel worker --workspace . in a project)
    expect(await keelCli([...NOWHERE, 'worker', '--workspace', '.'], { cwd: project })).toEqual({
      code: 2,
      stdout: '',
      stderr: refusal(project, join(project, '.keel')),
    });
    // a payload directory named inside it
    const elsewhere = mkdtempSync(join(tmpdir(), 'keel-shared-ws-cwd-'));
    const env = { ...process.env, KEEL_PAYLOAD_DIR: join(project, 'payloads') };
    expect(await keelCli([...NOWHERE, 'worker', '--workspace', project], { cwd: elsewhere, env })).toEqual({
      code: 2,
      stdout: '',
      stderr: refusal(project, join(project, 'payloads')),
    });
    // a workspace that holds neither starts (and then finds no server here: exit 3)
    expect((await keelCli([...NOWHERE, 'worker', '--workspace', project], { cwd: elsewhere })).code).toBe(3);
  });
});
