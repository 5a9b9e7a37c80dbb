/**
 * Issue 33 items 6 and 7: what a `bash` command can still reach from inside the sandbox, probed through a real run on
 * a real worker in a child process started with descriptor 200 open on a host file (as `keel dev 200>file` would be):
 * no nested user namespace (`unshare -Urn`), no mount namespace, no `add_key`, `bpf`, `io_uring` or netlink socket
 * (the seccomp filter), descriptor 200 closed (the host file unchanged, not in `/proc/1/fd` either), a root-only file
 * of `/etc` absent (the allowlist). And `keel worker --network host` says at start that tools reach loopback services.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { HOST_NETWORK_WARNING } from '../../activities/tools/builtin/sandbox.js';
import type { Script } from '../../activities/model/scripted.js';
import { killWorker } from './child-worker.js';

const CHILD = fileURLToPath(new URL('./fixtures/builtin-worker.ts', import.meta.url));
const isRoot = process.getuid?.() === 0;

/** Each probe prints its own line (stderr into stdout, so the order is fixed). */
const PROBE = `
unshare -Urn id -u 2>&1; echo "unshare -Urn: $?"
unshare -Um true 2>&1; echo "unshare -Um: $?"
(echo escaped >&200) 2>&1; echo "fd 200: $?"
echo "200 open in the sandbox's init: $(test -e /proc/1/fd/200 && echo yes || echo no)"
python3 - <<'PY'
import ctypes, os, platform, socket
libc = ctypes.CDLL(None, use_errno=True)
nr = {'x86_64': {'add_key': 248, 'bpf': 321, 'io_uring_setup': 425},
      'aarch64': {'add_key': 217, 'bpf': 280, 'io_uring_setup': 425}}[platform.machine()]
def call(name, *args):
    r = libc.syscall(nr[name], *args)
    return 'ok' if r >= 0 else os.strerror(ctypes.get_errno())
print('add_key:', call('add_key', b'user', b'keel-probe', b'v', 1, ctypes.c_int(-2)))
print('bpf:', call('bpf', 0, None, 0))
print('io_uring_setup:', call('io_uring_setup', 4, ctypes.create_string_buffer(120)))
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    print('netlink: ok')
except OSError as e:
    print('netlink:', e.strerror)
PY
`;

describe('what bash can reach inside the sandbox (issue 33 items 6, 7)', () => {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'keel-reach-ws-')));
  const hostFile = join(ws, '..', `keel-reach-fd200-${randomUUID()}.txt`);
  const etcFile = `/etc/keel-reach-root-only-${randomUUID()}`;
  const taskQueue = `sandbox-reach-${randomUUID()}`;
  let worker: ChildProcess;
  let client: AgentClient;

  const scripts: Record<string, Script> = {
    probe: {
      rules: [
        { match: 'toolResult:bash', text: 'done' },
        { match: 'probe', toolCalls: [{ id: 'p1', name: 'bash', arguments: { command: PROBE } }] },
      ],
    },
    etc: {
      rules: [
        { match: 'toolResult:bash', text: 'done' },
        { match: 'etc', toolCalls: [{ id: 'e1', name: 'bash', arguments: { command: `cat ${etcFile} 2>&1` } }] },
      ],
    },
  };

  beforeAll(async () => {
    writeFileSync(hostFile, 'host\n');
    if (isRoot) writeFileSync(etcFile, 'root-only secret\n', { mode: 0o600 });
    const fd = openSync(hostFile, 'a');
    // descriptors 3 and 200 of the worker: the host file, inherited without close-on-exec (3 is also the number of
    // bash's lifeline pipe, which must stay open in the sandbox)
    const stdio: (number | 'ignore' | 'pipe' | 'inherit')[] = ['ignore', 'pipe', 'inherit', fd];
    for (let i = 4; i < 200; i++) stdio.push('ignore');
    stdio.push(fd);
    worker = spawn(process.execPath, ['--import', 'tsx', CHILD], {
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        KEEL_BUNDLE: inject('workflowBundlePath'),
        KEEL_TASK_QUEUE: taskQueue,
        KEEL_CWD: ws,
        KEEL_SCRIPTS: JSON.stringify(scripts),
      },
      stdio,
    });
    closeSync(fd);
    await new Promise<void>((resolve, reject) => {
      worker.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
      worker.on('exit', (code) => reject(new Error(`child worker exited with ${code}`)));
    });
    client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
  });

  afterAll(async () => {
    await client?.close();
    if (worker) await killWorker(worker);
    rmSync(ws, { recursive: true, force: true });
    rmSync(hostFile, { force: true });
    rmSync(etcFile, { force: true });
  });

  async function bashText(prompt: string): Promise<string> {
    const h = await client.start({ model: `scripted/${prompt}`, prompt, tools: ['bash'] });
    const r = await h.result();
    expect(r.status).toBe('completed');
    const m = r.newMessages.find((x) => x.role === 'toolResult');
    if (!m || m.role !== 'toolResult') throw new Error('no tool result');
    return m.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  }

  it('no nested namespace, no keyring, bpf, io_uring or netlink; the inherited descriptor 200 is closed', async () => {
    expect(await bashText('probe')).toBe(
      [
        'unshare: unshare failed: Operation not permitted',
        'unshare -Urn: 1',
        'unshare: unshare failed: Operation not permitted',
        'unshare -Um: 1',
        '/bin/bash: line 5: 200: Bad file descriptor',
        'fd 200: 1',
        "200 open in the sandbox's init: no",
        'add_key: Operation not permitted',
        'bpf: Operation not permitted',
        'io_uring_setup: Operation not permitted',
        'netlink: Operation not permitted',
        '',
      ].join('\n'),
    );
    expect(readFileSync(hostFile, 'utf8')).toBe('host\n');
  });

  it.runIf(isRoot)('as root, a root-only file of /etc outside the allowlist is absent', async () => {
    expect(await bashText('etc')).toBe(`cat: ${etcFile}: No such file or directory\n\n\nCommand exited with code 1`);
  });
});

describe('keel worker --network host (issue 33 item 7)', () => {
  it('says at start that tool processes reach the services on loopback', async () => {
    const bin = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));
    const child = spawn(
      process.execPath,
      [
        bin,
        '--address',
        inject('temporalAddress'),
        '--task-queue',
        `reach-${randomUUID()}`,
        'worker',
        '--network',
        'host',
      ],
      { env: { ...process.env, NO_COLOR: '1', KEEL_WORKSPACE_ROOT: tmpdir() }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('[keel] worker on task queue')) child.kill('SIGTERM');
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    await new Promise((resolve) => child.on('close', resolve));
    expect(out).toContain(', sandbox bwrap (network host), ');
    expect(err.split('\n')).toContain(HOST_NETWORK_WARNING);
  });
});
