/**
 * A stdio MCP server runs in the tool sandbox (issue 24, item 1): it does not see the worker's secrets (neither in its
 * environment nor through /proc), files outside what its configuration names, or the network unless `network: true`.
 * The worker is a child process started with a secret in its environment (fixtures/mcp-worker.ts).
 */
import { mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { killAllWorkers, killWorker, spawnWorker } from './child-worker.js';
import { keelCli } from './cli-child.js';

const CHILD = resolve('test/temporal/fixtures/mcp-worker.ts');
const SECRET = `s3cret-${randomUUID()}`;
// the record directory (bound read-write for the server) and another one nothing names
const dir = realpathSync(mkdtempSync(join(tmpdir(), 'keel-mcp-sandbox-')));
const elsewhere = realpathSync(mkdtempSync(join(tmpdir(), 'keel-mcp-elsewhere-')));
const file = join(elsewhere, 'private.txt');
writeFileSync(file, 'the worker’s private file');
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(elsewhere, { recursive: true, force: true });
});

describe('MCP: a stdio server in the tool sandbox', () => {
  const tcp = createServer((s) => s.end());
  let port = 0;
  beforeAll(async () => {
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
    port = (tcp.address() as AddressInfo).port;
  });
  afterAll(async () => {
    killAllWorkers();
    await new Promise((r) => tcp.close(r));
  });

  /**
   * The probe's text from a worker (in `cwd`) whose MCP server has `env` (MCP_NETWORK, MCP_SANDBOX, MCP_READ_ONLY),
   * reading `target` (default the private file).
   */
  async function probe(env: Record<string, string>, target = file, cwd?: string): Promise<string> {
    const taskQueue = `mcp-sandbox-${randomUUID()}`;
    const record = join(dir, `record-${randomUUID()}.log`);
    writeFileSync(record, '');
    const worker = await spawnWorker(
      CHILD,
      {
        KEEL_TASK_QUEUE: taskQueue,
        MCP_RECORD: record,
        KEEL_TEST_SECRET: SECRET,
        MCP_PROBE_ARGS: JSON.stringify({ secret: SECRET, file: target, port }),
        ...env,
      },
      cwd,
    );
    const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
    try {
      const h = await client.start({ model: 'scripted/durable', prompt: 'probe it', tools: ['t__probe'] });
      const r = await h.result();
      expect(r.status).toBe('completed');
      const result = r.newMessages.find((m) => m.role === 'toolResult');
      expect(result?.isError).toBe(false);
      return (result?.content[0] as { text: string }).text;
    } finally {
      await client.close();
      await killWorker(worker);
    }
  }

  it('sees no secret of the worker, no file outside what it is given, no network', async () => {
    expect(await probe({})).toBe(
      [
        'env KEEL_TEST_SECRET: absent',
        "secret in another process's environment: not seen",
        'read: ENOENT',
        'connect: ECONNREFUSED',
      ].join('\n'),
    );
  });

  it("without cwd it sees no file of the worker's directory: keel-keys.json there is not found (issue 33 item 5)", async () => {
    const workerDir = realpathSync(mkdtempSync(join(tmpdir(), 'keel-mcp-workerdir-')));
    onTestFinished(() => rmSync(workerDir, { recursive: true, force: true }));
    writeFileSync(join(workerDir, 'keel-keys.json'), '{"primary":"k1","keys":{"k1":"secret-key-material"}}');
    expect(await probe({}, join(workerDir, 'keel-keys.json'), workerDir)).toBe(
      [
        'env KEEL_TEST_SECRET: absent',
        "secret in another process's environment: not seen",
        'read: ENOENT',
        'connect: ECONNREFUSED',
      ].join('\n'),
    );
  });

  it('a file the worker was given as a secret (a *_FILE variable) is hidden inside a directory it may read', async () => {
    const shared = realpathSync(mkdtempSync(join(tmpdir(), 'keel-mcp-shared-')));
    onTestFinished(() => rmSync(shared, { recursive: true, force: true }));
    writeFileSync(join(shared, 'keys.json'), 'the key ring');
    const text = await probe(
      { MCP_READ_ONLY: shared, KEEL_PROBE_TOKEN_FILE: join(shared, 'keys.json') },
      join(shared, 'keys.json'),
    );
    // /dev/null in its place (which cannot be opened there)
    expect(text.split('\n')[2]).toBe('read: EACCES');
  });

  it('"network": true gives it the network, and nothing more', async () => {
    expect(await probe({ MCP_NETWORK: '1' })).toBe(
      [
        'env KEEL_TEST_SECRET: absent',
        "secret in another process's environment: not seen",
        'read: ENOENT',
        'connect: ok',
      ].join('\n'),
    );
  });
});

describe('MCP sandbox: refusal and opt-out (CLI)', () => {
  const config = join(dir, 'files.json');
  beforeAll(() =>
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: { files: { command: resolve('node_modules/.bin/mcp-server-filesystem'), args: [dir] } },
      }),
    ),
  );

  it('where bubblewrap cannot run, a worker with a stdio server refuses to start and says what to do (exit 2)', async () => {
    const r = await keelCli(['tools', '--no-builtin', '--mcp', config], {
      env: { ...process.env, PATH: '/nonexistent' },
    });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'keel: Keel runs each stdio MCP server in a sandbox, and it cannot start: bwrap is not installed (Debian/Ubuntu: ' +
        'apt-get install bubblewrap). Install bubblewrap and allow user namespaces (e.g. sysctl ' +
        'kernel.unprivileged_userns_clone=1, or a container runtime that permits them), or run the server "files" ' +
        'unsandboxed on purpose: "sandbox": false in the MCP configuration, or keel worker --sandbox none.\n',
    );
  });

  it("an argument naming /proc fails the server's start, saying what to do (issue 33 item 7)", async () => {
    const proc = join(dir, 'proc.json');
    const bin = resolve('node_modules/.bin/mcp-server-filesystem');
    writeFileSync(proc, JSON.stringify({ mcpServers: { files: { command: bin, args: [dir, '/proc'] } } }));
    const r = await keelCli(['tools', '--no-builtin', '--mcp', proc]);
    expect({ code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'keel: tools: "files__*": cannot list the tools of MCP server "files": cannot connect to MCP server "files": ' +
        'its argument "/proc" names /proc, a system directory, which is never bound into its sandbox: name a narrower ' +
        'directory (to give it the worker\'s directory on purpose, set "cwd")\n',
    });
  });

  it('a command under a symlinked node_modules starts (issue 33 item 20)', async () => {
    const project = realpathSync(mkdtempSync(join(tmpdir(), 'keel-mcp-project-')));
    onTestFinished(() => rmSync(project, { recursive: true, force: true }));
    symlinkSync(resolve('node_modules'), join(project, 'node_modules'));
    const linked = join(dir, 'linked.json');
    const bin = join(project, 'node_modules/.bin/mcp-server-filesystem');
    writeFileSync(linked, JSON.stringify({ mcpServers: { files: { command: bin, args: [dir] } } }));
    const r = await keelCli(['tools', '--no-builtin', '--mcp', linked]);
    expect(r.stderr).not.toContain('No such file or directory');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('files__read_text_file ');
  });

  it('--sandbox none runs the stdio servers unsandboxed too, and says so', async () => {
    const r = await keelCli(['tools', '--no-builtin', '--sandbox', 'none', '--mcp', config]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('files__read_text_file ');
    // first the announcement (then what the server itself writes on stderr)
    expect(r.stderr.split('\n')[0]).toBe(
      '[keel] WARNING: MCP server "files" runs unsandboxed ("sandbox": false): as the worker\'s user, with its files, ' +
        'its /proc (and so its environment) and the network.',
    );
  });
});
