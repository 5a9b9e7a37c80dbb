/**
 * Issue 21 item 1: every process a built-in tool starts runs in the bubblewrap sandbox. Driven through real runs on a
 * real worker (this process), with fake secrets set in the worker's environment: from `bash`, `/proc/$PPID/environ`,
 * `/proc/1/environ`, `ps e` and `env` show none of them; the worker's source tree and `.keel/` cannot be read; nothing
 * outside the workspace can be written; a loopback port the test listens on is refused with network `none` and reached
 * with `host`; a fork bomb is bounded and the worker carries on; `sleep 600` past the timeout leaves no process (also
 * none that left the process group); `rg` runs sandboxed too.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished, vi } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { killAllWorkers, killWorker, spawnWorker } from './child-worker.js';
import { builtinTools, UNSANDBOXED_WARNING } from '../../activities/tools/builtin/index.js';
import type { Script } from '../../activities/model/scripted.js';
import type { Message } from '../../common/messages.js';
import { startKeel, type Keel } from './harness.js';

/** The 13 names of issue 21 (passed through by the 0.4.1 denylist) and a provider key, all with fake values. */
const SECRETS: Record<string, string> = {
  PGPASSWORD: 'fake-pg-7f3a',
  MYSQL_PWD: 'fake-mysql-91c2',
  DATABASE_URL: 'postgres://u:fake-db-url-5e11@db/x',
  GITHUB_PAT: 'fake-ghpat-0b7d',
  OPENAI_APIKEY: 'fake-openai-apikey-33aa',
  GOOGLE_CREDENTIALS: 'fake-google-creds-8c8c',
  SENTRY_DSN: 'https://fake-sentry-4d4d@o1.ingest.sentry.io/1',
  SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/fake-slack-6e6e',
  DOCKER_AUTH_CONFIG: 'fake-docker-auth-2f2f',
  DB_PASS: 'fake-db-pass-1a1a',
  PASSWD: 'fake-passwd-9b9b',
  API_KEY_FILE: '/run/secrets/fake-api-key-file-7c7c',
  OTEL_EXPORTER_OTLP_HEADERS: 'authorization=fake-otel-3d3d',
  ANTHROPIC_API_KEY: 'sk-ant-fake-sandbox-0123456789',
};
const REPO = resolve(import.meta.dirname, '../..');

const COMMANDS = {
  environ:
    "tr '\\0' '\\n' < /proc/$PPID/environ; echo ---; tr '\\0' '\\n' < /proc/1/environ; echo ---; ps e -A ww; echo ---; env",
  source: `cat ${REPO}/package.json; ls ${REPO}/.keel; ls $HOME/.cache; ls /root; echo shadow=$(wc -c < /etc/shadow) private=$(ls -A /etc/ssl/private | wc -l)`,
  bomb: ':(){ :|:& };:; sleep 5',
  orphans: 'setsid sleep 600.71 & sleep 600.72 & sleep 600',
  alive: 'echo still-alive $(id -u)',
};

function bashScript(command: string, timeout?: number): Script {
  return {
    rules: [
      { match: 'toolResult:bash', text: 'done' },
      { match: 'go', toolCalls: [{ id: 'b1', name: 'bash', arguments: { command, ...(timeout ? { timeout } : {}) } }] },
    ],
  };
}

/** The bash result of a finished run: its text and whether it is an error. */
function bashResult(messages: Message[]): { text: string; isError: boolean } {
  const m = messages.find((x) => x.role === 'toolResult');
  if (!m || m.role !== 'toolResult') throw new Error('no tool result');
  const text = m.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  return { text, isError: m.isError };
}

/** PIDs of live processes whose command line is exactly `args`. */
function pidsOf(args: string): number[] {
  return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null && m[2] === args)
    .map((m) => Number(m[1]));
}

describe('the sandbox of tool processes (bwrap)', () => {
  let none: Keel;
  let host: Keel;
  let ws: string;
  let outside: string;
  let server: Server;
  let port = 0;
  const saved: Record<string, string | undefined> = {};

  const scripts = (): Record<string, Script> => ({
    environ: bashScript(COMMANDS.environ),
    source: bashScript(COMMANDS.source),
    write: bashScript(
      `echo x > ${outside}/escaped.txt; echo y > /usr/escaped.txt; echo z > inside.txt && cat inside.txt`,
    ),
    net: bashScript(`exec 3<>/dev/tcp/127.0.0.1/${port} && head -c 17 <&3`),
    bomb: bashScript(COMMANDS.bomb, 4),
    orphans: bashScript(COMMANDS.orphans, 1),
    alive: bashScript(COMMANDS.alive),
    grep: {
      rules: [
        { match: 'toolResult:grep', text: 'done' },
        { match: 'go', toolCalls: [{ id: 'g1', name: 'grep', arguments: { pattern: 'needle' } }] },
      ],
    },
  });

  beforeAll(async () => {
    for (const [k, v] of Object.entries(SECRETS)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    ws = realpathSync(mkdtempSync(join(tmpdir(), 'keel-sandbox-ws-')));
    outside = realpathSync(mkdtempSync(join(tmpdir(), 'keel-sandbox-outside-')));
    server = createServer((socket) => socket.end('hello-from-test-1'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
    const workspaces = { root: join(ws, '..', `${ws.split('/').pop()}-runs`), sweepIntervalMs: 0 };
    none = await startKeel({
      scripts: scripts(),
      tools: builtinTools({ cwd: ws, workspaces, sandbox: { limits: { processes: 64 } } }),
    });
    host = await startKeel({
      scripts: scripts(),
      tools: builtinTools({ cwd: ws, workspaces, sandbox: { network: 'host' } }),
    });
  });

  afterAll(async () => {
    await none?.stop();
    await host?.stop();
    server?.close();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    for (const pid of [...pidsOf('sleep 600.71'), ...pidsOf('sleep 600.72'), ...pidsOf('sleep 600')]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    rmSync(ws, { recursive: true, force: true });
    rmSync(`${ws}-runs`, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  async function bash(
    keel: Keel,
    script: keyof ReturnType<typeof scripts>,
  ): Promise<{ text: string; isError: boolean }> {
    const h = await keel.start({ model: `scripted/${script}`, prompt: 'go', tools: ['bash', 'grep'] });
    const r = await h.result();
    expect(r.status).toBe('completed');
    return bashResult(r.newMessages);
  }

  it('/proc/$PPID/environ, /proc/1/environ, `ps e` and `env` show none of the 13 variables nor the provider key', async () => {
    const { text, isError } = await bash(none, 'environ');
    expect(isError).toBe(false);
    const [ppid, init, ps, env] = text.split('---\n');
    // PID 1 is the sandbox's own init, started with nothing but PATH; the shell's parent is inside the sandbox too
    expect(init.trim().split('\n')).toEqual([`PATH=${process.env.PATH}`]);
    expect(ppid.trim().split('\n')).toEqual([`PATH=${process.env.PATH}`]);
    // only the sandbox's own processes: its init (bwrap), the shell and ps — no process of the worker
    const commands = ps
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => /^\s*\d+\s+\S+\s+\S+\s+\S+\s+(\S+)/.exec(l)?.[1]);
    expect([...new Set(commands)].sort()).toEqual(['/bin/bash', 'bwrap', 'ps']);
    // the allowlist (PATH HOME LANG TERM TZ) and what bash sets itself
    const names = env
      .trim()
      .split('\n')
      .map((l) => l.split('=')[0]);
    expect(
      names.filter((n) => !['PATH', 'HOME', 'LANG', 'TERM', 'TZ', 'PWD', 'OLDPWD', 'SHLVL', '_'].includes(n)),
    ).toEqual([]);
    expect(env).toContain('HOME=/tmp\n');
    for (const [name, value] of Object.entries(SECRETS)) {
      expect(text, name).not.toContain(value);
      expect(text, name).not.toContain(`${name}=`);
    }
  });

  it("the worker's source tree, .keel/ and home cannot be read; /etc/shadow is absent, /etc/ssl/private empty", async () => {
    const { text } = await bash(none, 'source');
    expect(text).toContain(`cat: ${REPO}/package.json: No such file or directory`);
    expect(text).toContain(`ls: cannot access '${REPO}/.keel': No such file or directory`);
    // not in the sandbox's /etc (an allowlist, issue 33 item 7); /etc/ssl/private an empty directory
    expect(text).toContain('/etc/shadow: No such file or directory\nshadow= private=0\n');
    expect(text).not.toContain('"name": "keel"');
  });

  it('writing outside the workspace fails; inside it works', async () => {
    const { text } = await bash(none, 'write');
    expect(text).toContain(`${outside}/escaped.txt: No such file or directory`);
    expect(text).toContain('/usr/escaped.txt: Read-only file system');
    expect(text.trim().endsWith('z'), text).toBe(true);
    expect(existsSync(join(outside, 'escaped.txt'))).toBe(false);
    expect(existsSync('/usr/escaped.txt')).toBe(false);
    expect(readFileSync(join(ws, 'inside.txt'), 'utf8')).toBe('z\n');
  });

  it("a loopback port the test listens on: refused with network 'none', reached with 'host'", async () => {
    const refused = await bash(none, 'net');
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain(`/dev/tcp/127.0.0.1/${port}: Connection refused`);
    const reached = await bash(host, 'net');
    expect(reached).toEqual({ text: 'hello-from-test-1', isError: false });
  });

  it('a fork bomb is bounded by the process limit and timed out; the worker carries on', async () => {
    const { text, isError } = await bash(none, 'bomb');
    expect(isError).toBe(true);
    expect(text).toContain('fork: retry: Resource temporarily unavailable');
    expect(text.endsWith('Command timed out after 4 seconds')).toBe(true);
    // no sandbox of this worker is left, and the next call runs
    const sandboxes = () =>
      execFileSync('ps', ['-o', 'comm=', '--ppid', String(process.pid)], { encoding: 'utf8' })
        .split('\n')
        .filter((c) => c === 'bwrap');
    await vi.waitFor(() => expect(sandboxes()).toEqual([]), { timeout: 10_000 });
    expect(await bash(none, 'alive')).toEqual({ text: `still-alive ${process.getuid?.()}\n`, isError: false });
  });

  it('`sleep 600` past the timeout: the whole tree is gone, also a process that left the group (setsid)', async () => {
    const { text, isError } = await bash(none, 'orphans');
    expect({ text, isError }).toEqual({ text: 'Command timed out after 1 seconds', isError: true });
    await vi.waitFor(
      () => expect([...pidsOf('sleep 600.71'), ...pidsOf('sleep 600.72'), ...pidsOf('sleep 600')]).toEqual([]),
      {
        timeout: 10_000,
      },
    );
  });

  it('rg runs in the sandbox too (it finds what the workspace holds)', async () => {
    writeFileSync(join(ws, 'haystack.txt'), 'hay\nneedle here\n');
    const h = await none.start({ model: 'scripted/grep', prompt: 'go', tools: ['grep'] });
    const r = await h.result();
    const result = r.newMessages.find((m) => m.role === 'toolResult');
    expect(result && result.role === 'toolResult' ? result.content : undefined).toEqual([
      { type: 'text', text: 'haystack.txt:2: needle here' },
    ]);
  });
});

describe('the sandbox when its worker is killed (child process)', () => {
  afterAll(killAllWorkers);

  it('kill -9 of the worker during a sandboxed bash: no process of the call remains (by PID); the call ends interrupted', async () => {
    const ws = realpathSync(mkdtempSync(join(tmpdir(), 'keel-sandbox-kill-')));
    onTestFinished(() => rmSync(ws, { recursive: true, force: true }));
    const command = 'echo started > started.txt; setsid sleep 600.93 & sleep 600.94';
    const scripts: Record<string, Script> = {
      nap: {
        rules: [
          { match: 'toolResult:bash', text: 'after the crash' },
          { match: 'nap', toolCalls: [{ id: 'k1', name: 'bash', arguments: { command } }] },
        ],
      },
    };
    const taskQueue = `sandbox-kill-${randomUUID()}`;
    const env = { KEEL_TASK_QUEUE: taskQueue, KEEL_CWD: ws, KEEL_SCRIPTS: JSON.stringify(scripts) };
    const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
    onTestFinished(() => client.close());
    const first = await spawnWorker(CHILD, env);
    const h = await client.start({
      model: 'scripted/nap',
      prompt: 'nap',
      tools: ['bash'],
      heartbeatTimeout: '2s',
      homeWorkerTimeout: '2s',
    });
    await vi.waitFor(() => expect([pidsOf('sleep 600.93').length, pidsOf('sleep 600.94').length]).toEqual([1, 1]), {
      timeout: 30_000,
    });
    const tree = descendants(first.pid!);
    expect(tree.length).toBeGreaterThanOrEqual(4); // bwrap, its init, the shell, the sleeps
    await killWorker(first);
    await vi.waitFor(() => expect(tree.filter((pid) => alive(pid))).toEqual([]), { timeout: 10_000 });

    const second = await spawnWorker(CHILD, env);
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(bashResult(r.newMessages)).toEqual({ text: INTERRUPTED, isError: true });
    await killWorker(second);
  });
});

const CHILD = fileURLToPath(new URL('./fixtures/builtin-worker.ts', import.meta.url));
const INTERRUPTED =
  'Tool bash was interrupted before it finished and was not retried because it is not idempotent. It may have partially run.';

/** Every live descendant of `pid` (from `ps -eo pid=,ppid=`). */
function descendants(pid: number): number[] {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number));
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [p, pp] of rows)
      if (pp === parent) {
        out.push(p);
        queue.push(p);
      }
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('keel worker and the sandbox (CLI)', () => {
  const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));

  /** Runs `keel … worker …` until its start line (then SIGTERM) or its exit; returns what it printed and its exit code. */
  function keelWorker(
    args: string[],
    env: NodeJS.ProcessEnv,
  ): Promise<{ code: number | null; out: string; err: string }> {
    const address = inject('temporalAddress');
    const child = spawn(
      process.execPath,
      [BIN, '--address', address, '--task-queue', `cli-sb-${randomUUID()}`, 'worker', ...args],
      {
        env: { ...env, NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('[keel] worker on task queue')) child.kill('SIGTERM');
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    return new Promise((resolve) => child.on('close', (code) => resolve({ code, out, err })));
  }

  it('by default: a workspace per conversation, sandbox bwrap without network, said at start', async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'keel-cli-root-')));
    onTestFinished(() => rmSync(root, { recursive: true, force: true }));
    const env: NodeJS.ProcessEnv = { ...process.env, KEEL_WORKSPACE_ROOT: root };
    delete env.KEEL_WORKSPACE;
    const r = await keelWorker([], env);
    expect(r.out).toContain(
      `, a workspace per conversation under ${root}, sandbox bwrap (network none), tools read, bash,`,
    );
    expect(r.err).not.toContain('WARNING');
  });

  it('--sandbox none starts, and says so on stdout and stderr', async () => {
    const r = await keelWorker(['--sandbox', 'none', '--workspace', tmpdir()], process.env);
    expect(r.out).toContain(
      `, workspace ${tmpdir()} (shared by every run), sandbox NONE (tool processes run unsandboxed as this user), tools`,
    );
    expect(r.err).toContain(UNSANDBOXED_WARNING);
  });

  it('where bubblewrap cannot run, the worker refuses to start and says what to do (exit 2)', async () => {
    const r = await keelWorker([], { ...process.env, PATH: '/nonexistent' });
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toBe(
      "keel: Keel's built-in tools run every process in a sandbox, and it cannot start: bwrap is not installed " +
        '(Debian/Ubuntu: apt-get install bubblewrap). Install bubblewrap and allow user namespaces (e.g. sysctl ' +
        'kernel.unprivileged_userns_clone=1, or a container runtime that permits them), or run tool processes ' +
        "unsandboxed on purpose: builtinTools({ sandbox: 'none' }) / keel worker --sandbox none.\n",
    );
  });
});
