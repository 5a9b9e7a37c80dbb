/**
 * `keel dev` as a new user meets it (issue 20 items 5, 6, 11, 15): a taken port is refused in one line naming its
 * holder (it used to print "ready" and run against whatever held the port); the `Try:` command it prints runs as
 * pasted; the server's WARN lines stay out of its output; `npm run demo` next to a running `keel dev` uses its own
 * SQLite file, and on `keel dev`'s file says in one line who holds it (it used to die with SQLITE_BUSY and Go stack
 * traces).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { AgentClient } from '../../client/agent-client.js';
import { devServerPids } from '../../dev/dev-server-lifeline.js';
import { EncryptionCodec, readKeyRing } from '../../node-common/encryption.js';
import { ensureTemporalCli } from '../../scripts/temporal-cli.mjs';
import { freePort } from '../free-port.js';
import { BIN, ROOT, runProcess, stopChild, type CliResult } from './cli-child.js';

/** What `scripted/hello` answers (worker/load-modules.ts HELLO_SCRIPT). */
const HELLO = 'Hello from Keel: a scripted model answered (offline, no API key).';

/** Commands run to their end here get up to 90 s (a dev server starts inside some). */
function run(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<CliResult> {
  return runProcess(cmd, args, { ...opts, timeoutMs: 90_000 });
}

/** Starts `keel dev …` and resolves once it printed `ready`; its output keeps accumulating in `out`. */
async function startDev(args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }) {
  const child = spawn(process.execPath, [BIN, 'dev', ...args], { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out.stdout += d.toString();
      if (out.stdout.includes('Ctrl-C to stop\n') && out.stdout.endsWith('\n')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`keel dev exited ${code}: ${out.stdout}${out.stderr}`)));
  });
  return { child, out };
}

/** Stops a `keel dev` as Ctrl-C does (SIGINT); resolves with its exit code. */
const stop = (child: ChildProcess) => stopChild(child, 'SIGINT');

/** `--port <port> --ui-port <uiPort> [--codec-port <codecPort>] --in-memory`: a dev server of its own. */
function devPorts(port: number, uiPort: number, codecPort?: number): string[] {
  const codec = codecPort === undefined ? [] : ['--codec-port', String(codecPort)];
  return ['--port', String(port), '--ui-port', String(uiPort), ...codec, '--in-memory'];
}

/** Runs the whole rest of a `Try: <command>` line as pasted into a shell in the project (`cwd`: another directory). */
function pasteTry(line: string, cwd = ROOT): Promise<CliResult> {
  expect(line.startsWith('Try: ')).toBe(true);
  return run('/bin/sh', ['-c', line.slice('Try: '.length)], { cwd, env });
}

/** The line `keel dev` prints under its `Try:` command. */
const REAL_MODEL = 'A real model: the same with --model anthropic/claude-sonnet-4-5 and ANTHROPIC_API_KEY set';

/** A listener on a free port of 127.0.0.1, held by this test process. */
function listen(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () =>
      resolve({ server, port: (server.address() as { port: number }).port }),
    );
  });
}

/** This process as resource-holder.ts names it: its command line, cut at 100 characters. */
function thisProcess(): string {
  const command = readFileSync('/proc/self/cmdline', 'utf8').split('\0').filter(Boolean).join(' ');
  return `pid ${process.pid} (${command.length > 100 ? `${command.slice(0, 99)}…` : command})`;
}

let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  env = {
    ...process.env,
    NO_COLOR: '1',
    XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), 'keel-dev-cache-')), // its own dev-server records
    TEMPORAL_CLI_PATH: await ensureTemporalCli(),
  };
  for (const k of ['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'KEEL_TASK_QUEUE', 'KEEL_UI_URL', 'TEMPORAL_PROFILE'])
    delete env[k];
});

describe('keel dev on a taken port', () => {
  let held: { server: Server; port: number };
  beforeAll(async () => (held = await listen()));
  afterAll(() => new Promise((r) => held.server.close(r)));

  it.runIf(process.platform === 'linux')('refuses a taken gRPC port in one line naming the process', async () => {
    const r = await run(
      process.execPath,
      [BIN, 'dev', '--port', String(held.port), '--ui-port', String(await freePort()), '--in-memory'],
      { cwd: ROOT, env },
    );
    expect(r).toEqual({
      code: 2,
      stdout: '',
      stderr: `keel: Port ${held.port} (gRPC) is in use by ${thisProcess()}: stop it, or choose another port with --port.\n`,
    });
  });

  it.runIf(process.platform === 'linux')('refuses a taken Web UI port in one line naming the process', async () => {
    const r = await run(
      process.execPath,
      [BIN, 'dev', '--port', String(await freePort()), '--ui-port', String(held.port), '--in-memory'],
      { cwd: ROOT, env },
    );
    expect(r).toEqual({
      code: 2,
      stdout: '',
      stderr: `keel: Port ${held.port} (Web UI) is in use by ${thisProcess()}: stop it, or choose another port with --ui-port.\n`,
    });
  });
});

describe('keel dev hints', () => {
  it('prints a Try: command that runs as pasted, and no server log lines at start and stop', async () => {
    const [port, uiPort] = [await freePort(), await freePort()];
    const dev = await startDev([...devPorts(port, uiPort), '--task-queue', 'hint queue', '--no-builtin'], {
      cwd: ROOT,
      env,
    });
    let code: number | null;
    try {
      const lines = dev.out.stdout.split('\n');
      expect(lines).toEqual([
        `Keel dev server ready at localhost:${port} · Web UI http://localhost:${uiPort}/namespaces/default/workflows`,
        'Data: in memory · Ctrl-C to stop',
        `Try: npx keel run hello --model scripted/hello --address localhost:${port} --task-queue 'hint queue'`,
        REAL_MODEL,
        '',
      ]);
      // pasted into a shell of another terminal in the same project
      const pasted = await pasteTry(lines[2]);
      expect(pasted.code, pasted.stderr).toBe(0);
      expect(pasted.stdout).toContain('Hello from Keel: a scripted model answered (offline, no API key).');
    } finally {
      code = await stop(dev.child);
    }
    expect(code).toBe(0);
    expect(dev.out.stderr.split('\n')).toEqual([
      expect.stringMatching(
        new RegExp(
          `^\\[keel\\] Temporal dev server up at 127\\.0\\.0\\.1:${port} in \\d+ ms, UI at http://127\\.0\\.0\\.1:${uiPort}$`,
        ),
      ),
      '[keel] worker on task queue hint queue: tools (none), no built-in tools',
      '[keel] SIGINT: stopping',
      '',
    ]);
  }, 120_000);
});

describe('keel dev --mcp', () => {
  it('lists each MCP server at start: its tools, or why it cannot start (issue 33 item 20)', async () => {
    const [port, uiPort] = [await freePort(), await freePort()];
    const dir = mkdtempSync(join(tmpdir(), 'keel-dev-mcp-'));
    const config = join(dir, 'mcp.json');
    const bin = join(ROOT, 'node_modules/.bin/mcp-server-filesystem');
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: { files: { command: bin, args: [dir] }, broken: { command: bin, args: [dir, '/proc'] } },
      }),
    );
    const dev = await startDev([...devPorts(port, uiPort), '--no-builtin', '--mcp', config], { cwd: ROOT, env });
    await stop(dev.child);
    rmSync(dir, { recursive: true, force: true });
    const lines = dev.out.stderr.split('\n').filter((l) => l.startsWith('[keel] MCP server '));
    expect(lines).toEqual([
      '[keel] MCP server files: 14 tools',
      '[keel] MCP server broken: cannot start: cannot list the tools of MCP server "broken": cannot connect to MCP ' +
        'server "broken": its argument "/proc" names /proc, a system directory, which is never bound into its ' +
        'sandbox: name a narrower directory (to give it the worker\'s directory on purpose, set "cwd")',
    ]);
  }, 120_000);
});

describe('keel dev --server-log', () => {
  /** The `--log-level` the dev server process of `keel dev` (pid) runs with. */
  const serverLogLevel = (devPid: number) => {
    const [server] = devServerPids(devPid);
    const args = readFileSync(`/proc/${server}/cmdline`, 'utf8').split('\0');
    return args[args.indexOf('--log-level') + 1];
  };

  it.runIf(process.platform === 'linux')(
    "prints none of the server's lines by default (even its ERROR lines are its own retries), and from --server-log's level up",
    async () => {
      const quiet = await startDev([...devPorts(await freePort(), await freePort()), '--no-worker'], {
        cwd: ROOT,
        env,
      });
      try {
        // under load the server logs `level=ERROR msg="service failures" … wf-id=temporal-sys-worker-deployment:keel`
        // while it retries its own Worker Deployment workflow; at `error` that line reached keel dev's output
        expect(serverLogLevel(quiet.child.pid!)).toBe('never');
      } finally {
        expect(await stop(quiet.child)).toBe(0);
      }
      const warn = await startDev(
        [...devPorts(await freePort(), await freePort()), '--no-worker', '--server-log', 'warn'],
        { cwd: ROOT, env },
      );
      try {
        expect(serverLogLevel(warn.child.pid!)).toBe('warn');
        // the WARN line every start of an in-memory dev server logs
        await vi.waitFor(() =>
          expect(warn.out.stderr).toContain(
            'level=WARN msg="Cluster Id in Cluster Metadata config is not a valid uuid. Generating a new Cluster Id"',
          ),
        );
      } finally {
        expect(await stop(warn.child)).toBe(0);
      }
      expect(quiet.out.stderr).not.toContain('level=');
    },
    120_000,
  );

  it('refuses a level the server does not have, naming the ones it has', async () => {
    const r = await run(process.execPath, [BIN, 'dev', '--server-log', 'loud'], { cwd: ROOT, env });
    expect(r).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "error: option '--server-log <level>' argument 'loud' is invalid. Allowed choices are debug, info, warn, error, never.\n" +
        '(run with --help for usage)\n',
    });
  });
});

describe('keel dev --no-worker', () => {
  it('prints a Start a worker: command that starts a worker on that server when pasted', async () => {
    const [port, uiPort] = [await freePort(), await freePort()];
    const dev = await startDev([...devPorts(port, uiPort), '--no-worker'], {
      cwd: ROOT,
      env,
    });
    try {
      const line = dev.out.stdout.split('\n')[2];
      expect(line).toBe(`Start a worker: npx keel worker --address localhost:${port}`);
      // pasted into a shell of its own process group, stopped with it
      const worker = spawn('/bin/sh', ['-c', line.slice('Start a worker: '.length)], {
        cwd: ROOT,
        env,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      await new Promise<void>((resolve, reject) => {
        const onData = (d: Buffer) => {
          out += d.toString();
          if (out.includes(`[keel] worker on task queue keel at localhost:${port}`)) resolve();
        };
        worker.stdout.on('data', onData);
        worker.stderr.on('data', onData);
        worker.once('exit', (code) => reject(new Error(`the pasted worker exited ${code}: ${out}`)));
      });
      const exited = new Promise((r) => worker.once('exit', r));
      process.kill(-worker.pid!, 'SIGTERM');
      await exited;
    } finally {
      expect(await stop(dev.child)).toBe(0);
    }
  }, 120_000);
});

describe('keel demo next to a running keel dev', () => {
  it.runIf(process.platform === 'linux')(
    "runs on a SQLite file of its own; on keel dev's file it says in one line who holds it",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'keel-dev-demo-'));
      const dev = await startDev(['--port', String(await freePort()), '--ui-port', String(await freePort())], {
        cwd: dir,
        env,
      });
      try {
        const demo = await run(process.execPath, [BIN, 'demo'], { cwd: dir, env });
        expect(demo.code, demo.stderr).toBe(0);
        expect(demo.stdout).toContain(', db .keel/demo.db\n');
        expect(demo.stdout).toContain('\nSession completed: 20 messages, 10 turns.\n');

        const [server] = devServerPids(dev.child.pid);
        const line = (pid: number) => {
          const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
          return `pid ${pid} (${command.length > 100 ? `${command.slice(0, 99)}…` : command})`;
        };
        const clash = await run(process.execPath, [BIN, 'demo', '--db', '.keel/dev.db'], { cwd: dir, env });
        expect({ code: clash.code, stderr: clash.stderr }).toEqual({
          code: 1,
          stderr:
            `keel: .keel/dev.db is in use by ${line(server)}, started by ${line(dev.child.pid!)}: ` +
            'stop it, or give the demo another file with --db.\n',
        });
      } finally {
        expect(await stop(dev.child)).toBe(0);
      }
    },
    180_000,
  );
});

describe('keel dev --encrypt', () => {
  it('makes a 0600 key file, runs a codec server the Web UI is configured with, and decodes a sealed run through it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-dev-encrypt-'));
    const [port, uiPort, codecPort] = [await freePort(), await freePort(), await freePort()];
    // a bash call: its activity runs on the worker's tool queue, whose side worker must open sealed payloads too
    writeFileSync(
      join(dir, 'scripts.json'),
      JSON.stringify({
        lister: {
          rules: [
            { match: 'toolResult:bash sealed-tool-output', text: 'Listed.' },
            { match: 'list it', toolCall: { name: 'bash', arguments: { command: 'echo sealed-tool-output' } } },
          ],
        },
      }),
    );
    const dev = await startDev(
      [...devPorts(port, uiPort, codecPort), '--sandbox', 'none', '--scripts', 'scripts.json', '--encrypt'],
      { cwd: dir, env },
    );
    const keyFile = join(dir, '.keel/encryption-keys.json');
    const codecUrl = `http://127.0.0.1:${codecPort}`;
    try {
      expect(dev.out.stdout.split('\n')).toEqual([
        `Keel dev server ready at localhost:${port} · Web UI http://localhost:${uiPort}/namespaces/default/workflows`,
        'Data: in memory · Ctrl-C to stop',
        `Encryption: keys ${keyFile} (new) · codec server ${codecUrl} (the Web UI decodes through it; temporal CLI: add --codec-endpoint ${codecUrl})`,
        `Try: npx keel run hello --model scripted/hello --address localhost:${port}`,
        REAL_MODEL,
        '',
      ]);
      // its codec server takes no token (the dev UI has no login to forward one): said at start
      expect(dev.out.stderr).toContain(
        '[keel] codec server: no authentication (--insecure-no-auth, loopback only): any process on this machine can decode these runs (development only)\n',
      );
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      // the UI the dev server serves calls the codec server (its settings, as the browser reads them)
      const settings = (await (await fetch(`http://127.0.0.1:${uiPort}/api/v1/settings`)).json()) as {
        Codec: { Endpoint: string };
      };
      expect(settings.Codec.Endpoint).toBe(codecUrl);

      // a run sealed with the dev keys: stored as ciphertext, decoded by the codec server for the UI's origin
      const ring = readKeyRing(keyFile);
      const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
      try {
        const client = new AgentClient(
          new Client({ connection, dataConverter: { payloadCodecs: [new EncryptionCodec(ring)] } }),
          'keel',
        );
        const run = await client.start({ model: 'scripted/hello', prompt: 'hello, sealed' });
        expect((await run.result()).finalText).toBe(HELLO);
        const history = await new Client({ connection }).workflow.getHandle(run.workflowId).fetchHistory();
        const input = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
        const json = (b: Uint8Array | null | undefined) => Buffer.from(b ?? []).toString('base64');
        const res = await fetch(`${codecUrl}/decode`, {
          method: 'POST',
          headers: {
            Origin: `http://localhost:${uiPort}`,
            'Content-Type': 'application/json',
            'X-Namespace': 'default',
          },
          body: JSON.stringify({
            payloads: [
              {
                metadata: Object.fromEntries(Object.entries(input.metadata!).map(([k, v]) => [k, json(v)])),
                data: json(input.data),
              },
            ],
          }),
        });
        expect(res.status).toBe(200);
        expect(res.headers.get('access-control-allow-origin')).toBe(`http://localhost:${uiPort}`);
        const decoded = ((await res.json()) as { payloads: { data: string }[] }).payloads[0]!;
        expect(JSON.parse(Buffer.from(decoded.data, 'base64').toString())).toMatchObject({ prompt: 'hello, sealed' });
        expect(Buffer.from(input.data!).toString('latin1')).not.toContain('hello, sealed');
        const tooled = await client.start({ model: 'scripted/lister', prompt: 'list it', tools: ['bash'] });
        expect((await tooled.result()).finalText).toBe('Listed.');
      } finally {
        await connection.close();
      }
    } finally {
      expect(await stop(dev.child)).toBe(0);
    }
    // a second start reuses the key file: runs of the first session stay readable
    const again = await startDev([...devPorts(port, uiPort, codecPort), '--encrypt', '--no-worker'], { cwd: dir, env });
    try {
      expect(again.out.stdout).toContain(`Encryption: keys ${keyFile} · codec server ${codecUrl}`);
    } finally {
      expect(await stop(again.child)).toBe(0);
    }
  }, 180_000);

  // Issue 33 item 15: a keel command in another shell, with no key flag or variable, finds the key file in the record
  // keel dev keeps of its ports (as it finds the UI port), so the README's commands run sealed as pasted (0.6.2 started
  // the run in clear, the worker failed it, and the CLI printed "this run's payloads are encrypted …" after 7 s).
  it('prints a Try: command that runs as pasted, and keel run from another shell with no key flag completes sealed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-dev-encrypt-try-'));
    const [port, uiPort, codecPort] = [await freePort(), await freePort(), await freePort()];
    const dev = await startDev([...devPorts(port, uiPort, codecPort), '--no-builtin', '--encrypt'], { cwd: dir, env });
    try {
      const line = dev.out.stdout.split('\n')[3]!;
      expect(line).toBe(`Try: npx keel run hello --model scripted/hello --address localhost:${port}`);
      const pasted = await pasteTry(line); // in the project, not in the directory that holds .keel/encryption-keys.json
      expect(pasted.code, pasted.stderr).toBe(0);
      expect(pasted.stdout).toContain(HELLO);
      const id = `readme-sealed-${process.pid}`;
      const readme = await run(
        process.execPath,
        [BIN, 'run', 'What is 12*8?', '--model', 'scripted/hello', '--address', `localhost:${port}`, '--id', id],
        { cwd: ROOT, env },
      );
      expect([readme.code, readme.stderr]).toEqual([0, '']);
      expect(readme.stdout).toContain(HELLO);
      const connection = await Connection.connect({ address: `127.0.0.1:${port}` });
      try {
        const history = await new Client({ connection }).workflow.getHandle(id).fetchHistory();
        const input = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
        expect(Buffer.from(input.metadata!.encoding!).toString()).toBe('binary/encrypted');
        expect(Buffer.from(input.data!).toString('latin1')).not.toContain('12*8');
      } finally {
        await connection.close();
      }
    } finally {
      expect(await stop(dev.child)).toBe(0);
    }
  }, 120_000);
});
