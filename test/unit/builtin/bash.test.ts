import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import {
  type BashOperations,
  type BashToolDetails,
  createBashTool,
  createLocalBashOperations,
  executeBashWithOperations,
} from '../../../activities/tools/builtin/bash.js';
import { runDirName } from '../../../activities/tools/builtin/run-workspaces.js';
import type { AgentToolResult } from '../../../activities/tools/define-tool.js';
import { errorOf, run, tempDir, text, tools, trackLog } from './helpers.js';

/** Operations that replay chunks, then resolve with `exitCode` or reject with `error`. */
function fakeOps(chunks: (string | Buffer)[], end: { exitCode?: number | null; error?: string } = {}): BashOperations {
  return {
    async exec(_command, _cwd, { onData }) {
      for (const c of chunks) onData(typeof c === 'string' ? Buffer.from(c) : c);
      if (end.error) throw new Error(end.error);
      return { exitCode: end.exitCode ?? 0 };
    },
  };
}

const seq = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `${from + i}`);

/** The processes `sleep <seconds>` on this machine (each test picks durations no other test file uses). */
function sleepProcesses(seconds: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf-8' });
  return out.split('\n').filter((l) => l.trim().replace(/^\d+\s+/, '') === `sleep ${seconds}`);
}

describe('bash (C.2)', () => {
  it('C.8-32 runs a command', async () => {
    const dir = tempDir();
    const result = await run(tools(dir).bash, { command: "echo 'test output'" });
    expect(text(result)).toBe('test output\n');
    expect(result.details).toBeUndefined();
  });

  it('C.8-33 non-zero exit rejects', async () => {
    const dir = tempDir();
    expect(await errorOf(run(tools(dir).bash, { command: 'exit 1' }))).toBe(
      '(no output)\n\nCommand exited with code 1',
    );
    expect(await errorOf(run(tools(dir).bash, { command: 'echo oops; exit 3' }))).toBe(
      'oops\n\n\nCommand exited with code 3',
    );
  });

  it('C.8-34 timeout rejects', async () => {
    const dir = tempDir();
    const started = Date.now();
    expect(await errorOf(run(tools(dir).bash, { command: 'sleep 5', timeout: 1 }))).toBe(
      'Command timed out after 1 seconds',
    );
    expect(Date.now() - started).toBeLessThan(4000);
    expect(await errorOf(run(tools(dir).bash, { command: 'echo before; sleep 5', timeout: 0.5 }))).toBe(
      'before\n\n\nCommand timed out after 0.5 seconds',
    );
  });

  it.each([
    ['timeout:5', 'Command timed out after 5 seconds'],
    ['aborted', 'Command aborted'],
  ])('C.8-35 truncated output survives %s with its full output file', async (error, status) => {
    const tool = createBashTool({ cwd: tempDir(), operations: fakeOps([`${seq(1, 3000).join('\n')}\n`], { error }) });
    const message = await errorOf(run(tool, { command: 'x' }));
    expect(message.endsWith(`\n\n${status}`)).toBe(true);
    expect(message).toMatch(/\[Showing lines 1001-3000 of 3000\. Full output: /);
    expect(message).not.toContain('Full output: undefined');
    const file = trackLog(/Full output: (\S+)\]/.exec(message)![1]);
    const full = readFileSync(file, 'utf-8');
    expect(full).toContain('1\n2\n3');
    expect(full).toContain('2998\n2999\n3000');
  });

  it('C.8-36 missing working directory rejects', async () => {
    const dir = tempDir();
    const tool = createBashTool({ cwd: path.join(dir, 'does-not-exist') });
    expect(await errorOf(run(tool, { command: 'echo hi' }))).toBe(
      `Working directory does not exist: ${path.join(dir, 'does-not-exist')}\nCannot execute bash commands.`,
    );
  });

  it('C.8-37 a shell that does not exist (shell-config override) rejects with ENOENT', async () => {
    const tool = createBashTool({ cwd: tempDir(), shellConfig: { shell: '/nonexistent/bin/bash', args: ['-c'] } });
    await expect(run(tool, { command: 'echo hi' })).rejects.toThrow(/ENOENT/);
  });

  it('C.8-38 shellPath: ignored by custom operations, checked by local ones', async () => {
    const custom = createBashTool({ cwd: tempDir(), shellPath: '/custom/bash', operations: fakeOps(['ok\n']) });
    expect(text(await run(custom, { command: 'x' }))).toBe('ok\n');
    const local = createBashTool({ cwd: tempDir(), shellPath: '/custom/bash' });
    expect(await errorOf(run(local, { command: 'echo hi' }))).toBe('Custom shell path not found: /custom/bash');
    const existing = createBashTool({ cwd: tempDir(), shellPath: '/bin/sh' });
    expect(text(await run(existing, { command: 'echo via-sh' }))).toBe('via-sh\n');
  });

  // C.8-39 (stdin transport) and C.8-40 (Windows bash.exe → `-s` + stdin) exercise Pi's Windows/WSL shell resolution,
  // which this Linux-only implementation does not have.
  it.skip('C.8-39 stdin transport for the legacy WSL shell (Windows only)', () => {});
  it.skip('C.8-40 Windows C:\\Windows\\System32\\bash.exe resolves to -s + stdin (Windows only)', () => {});

  it('C.8-41 commandPrefix exports a variable', async () => {
    const tool = createBashTool({ cwd: tempDir(), commandPrefix: 'export TEST_VAR=hello' });
    expect(text(await run(tool, { command: 'echo $TEST_VAR' })).trim()).toBe('hello');
  });

  it('C.8-42 commandPrefix output comes first', async () => {
    const tool = createBashTool({ cwd: tempDir(), commandPrefix: 'echo prefix-output' });
    expect(text(await run(tool, { command: 'echo command-output' })).trim()).toBe('prefix-output\ncommand-output');
  });

  it('C.8-43 without a prefix', async () => {
    const tool = createBashTool({ cwd: tempDir() });
    expect(text(await run(tool, { command: 'echo no-prefix' })).trim()).toBe('no-prefix');
  });

  it('C.8-44 updates are throttled', async () => {
    const chunks = Array.from({ length: 5000 }, (_, i) => `line ${i}\n`);
    const tool = createBashTool({ cwd: tempDir(), operations: fakeOps(chunks) });
    const updates: AgentToolResult<BashToolDetails | undefined>[] = [];
    const result = await run<BashToolDetails | undefined>(tool, { command: 'x' }, { onUpdate: (u) => updates.push(u) });
    trackLog(result.details?.fullOutputPath);
    expect(updates.length).toBeLessThan(25);
    expect(updates[0]).toEqual({ content: [], details: undefined });
    expect(text(updates[updates.length - 1])).toContain('line 4999');
    expect(text(result)).toContain('line 4999');
  });

  it('updates: first empty, then snapshots at least 100 ms apart, then a final one', async () => {
    const times: number[] = [];
    const updates: AgentToolResult<BashToolDetails | undefined>[] = [];
    const tool = createBashTool({ cwd: tempDir() });
    await run(
      tool,
      { command: 'for i in $(seq 1 8); do echo tick $i; sleep 0.05; done' },
      {
        onUpdate: (u) => {
          updates.push(u);
          times.push(Date.now());
        },
      },
    );
    expect(updates[0]).toEqual({ content: [], details: undefined });
    const snapshots = times.slice(1, -1);
    for (let i = 1; i < snapshots.length; i++) expect(snapshots[i] - snapshots[i - 1]).toBeGreaterThanOrEqual(95);
    expect(updates.length).toBeGreaterThanOrEqual(3);
    expect(text(updates[updates.length - 1])).toContain('tick 8');
  });

  it('C.8-45 tail truncation by lines with trailing newlines', async () => {
    const chunks = Array.from({ length: 4000 }, (_, i) => `line-${i + 1}\n`);
    const tool = createBashTool({ cwd: tempDir(), operations: fakeOps(chunks) });
    const result = await run<BashToolDetails | undefined>(tool, { command: 'x' });
    trackLog(result.details?.fullOutputPath);
    expect(result.details?.truncation).toMatchObject({
      truncated: true,
      truncatedBy: 'lines',
      totalLines: 4000,
      outputLines: 2000,
    });
    const out = text(result);
    expect(out).toContain('line-2001');
    expect(out).toContain('line-4000');
    expect(out).not.toContain('line-2000\n');
    expect(out).toContain('[Showing lines 2001-4000 of 4000. Full output: ');
    expect(out).not.toContain('4001');
    expect(out.startsWith('line-2001\n')).toBe(true);
  });

  it('C.8-46 a multibyte character split across chunks is reassembled', async () => {
    const euro = Buffer.from('€\n');
    const tool = createBashTool({ cwd: tempDir(), operations: fakeOps([euro.subarray(0, 2), euro.subarray(2)]) });
    const out = text(await run(tool, { command: 'x' }));
    expect(out.trim()).toBe('€');
    expect(out).not.toContain('\uFFFD');
  });

  it('C.8-47 local operations honour a passed env', async () => {
    const ops = createLocalBashOperations();
    const chunks: Buffer[] = [];
    const { exitCode } = await ops.exec('echo $TEST_LOCAL_BASH_OPS', tempDir(), {
      onData: (d) => chunks.push(d),
      env: { ...process.env, TEST_LOCAL_BASH_OPS: 'from-local-ops' },
    });
    expect(exitCode).toBe(0);
    expect(Buffer.concat(chunks).toString().trim()).toBe('from-local-ops');
  });

  it('C.8-48 executeBashWithOperations strips ANSI escapes and CR', async () => {
    const result = await executeBashWithOperations(
      "printf '\\033[31mred\\033[0m\\r\\n'",
      tempDir(),
      createLocalBashOperations(),
    );
    expect(result.output).toBe('red\n');
    expect(result.exitCode).toBe(0);
    expect(result.cancelled).toBe(false);
  });

  it('C.8-49 seq 3000 is truncated with a 0600 full output file', async () => {
    const result = await run<BashToolDetails | undefined>(tools(tempDir()).bash, { command: 'seq 3000' });
    expect(result.details?.truncation?.truncatedBy).toBe('lines');
    const file = trackLog(result.details?.fullOutputPath);
    expect(file).toBeDefined();
    // the run's private temporary directory (<root>/<run dir>/tmp), not the shared OS tmpdir nor the workspace
    expect(path.dirname(file!)).toBe(
      path.join(path.dirname(path.dirname(path.dirname(file!))), runDirName('wf'), 'tmp'),
    );
    expect(path.dirname(file!).startsWith(`${tmpdir()}/keel-runs-`)).toBe(true);
    expect(path.basename(file!)).toMatch(/^pi-bash-[0-9a-f]{16}\.log$/);
    expect(text(result).endsWith(`\n\n[Showing lines 1001-3000 of 3000. Full output: ${file}]`)).toBe(true);
    expect(statSync(file!).mode & 0o777).toBe(0o600);
    const full = readFileSync(file!, 'utf-8');
    expect(full).toBe(`${seq(1, 3000).join('\n')}\n`);
  });

  it('C.8-50 executeBashWithOperations also spills to a 0600 file', async () => {
    const result = await executeBashWithOperations('seq 3000', tempDir(), createLocalBashOperations());
    expect(result.truncated).toBe(true);
    expect(trackLog(result.fullOutputPath)).toBeDefined();
    expect(statSync(result.fullOutputPath!).mode & 0o777).toBe(0o600);
    const full = readFileSync(result.fullOutputPath!, 'utf-8');
    expect(full).toContain('1\n2\n3');
    expect(full).toContain('2998\n2999\n3000');
  });

  it('byte truncation and a partial last line', async () => {
    const wide = Array.from({ length: 100 }, (_, i) => `${i}:${'x'.repeat(1000)}`).join('\n');
    const result = await run<BashToolDetails | undefined>(
      createBashTool({ cwd: tempDir(), operations: fakeOps([wide]) }),
      { command: 'x' },
    );
    trackLog(result.details!.fullOutputPath);
    const t = result.details!.truncation!;
    expect(t.truncatedBy).toBe('bytes');
    expect(text(result)).toContain(
      `[Showing lines ${101 - t.outputLines}-100 of 100 (50.0KB limit). Full output: ${result.details!.fullOutputPath}]`,
    );

    const huge = `head\n${'y'.repeat(60 * 1024)}`;
    const partial = await run<BashToolDetails | undefined>(
      createBashTool({ cwd: tempDir(), operations: fakeOps([huge]) }),
      { command: 'x' },
    );
    trackLog(partial.details!.fullOutputPath);
    expect(partial.details!.truncation!.lastLinePartial).toBe(true);
    expect(text(partial)).toBe(
      `${'y'.repeat(51200)}\n\n[Showing last 50.0KB of line 2 (line is 60.0KB). Full output: ${partial.details!.fullOutputPath}]`,
    );
  });

  it('large streamed output keeps exact totals', async () => {
    const chunks = Array.from({ length: 300 }, (_, i) => `${'z'.repeat(999)}${i}\n`);
    const result = await run<BashToolDetails | undefined>(
      createBashTool({ cwd: tempDir(), operations: fakeOps(chunks) }),
      { command: 'x' },
    );
    trackLog(result.details!.fullOutputPath);
    const t = result.details!.truncation!;
    expect(t.totalLines).toBe(300);
    expect(t.totalBytes).toBe(chunks.join('').length);
    expect(text(result)).toContain('299\n\n[Showing lines');
    expect(readFileSync(result.details!.fullOutputPath!, 'utf-8')).toBe(chunks.join(''));
  });

  it('timeout validation', async () => {
    const bash = tools(tempDir()).bash;
    for (const bad of [0, -1, Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(await errorOf(run(bash, { command: 'echo', timeout: bad }))).toBe(
        'Invalid timeout: must be a finite number of seconds',
      );
    }
    expect(await errorOf(run(bash, { command: 'echo', timeout: 2147483.648 }))).toBe(
      'Invalid timeout: maximum is 2147483.647 seconds',
    );
  });

  it('already aborted: Command aborted, nothing runs', async () => {
    const dir = tempDir();
    const ac = new AbortController();
    ac.abort();
    expect(await errorOf(run(tools(dir).bash, { command: 'touch ran' }, { signal: ac.signal }))).toBe(
      'Command aborted',
    );
    expect(existsSync(path.join(dir, 'ran'))).toBe(false);
  });

  it('abort kills the whole process tree within a second', async () => {
    const ac = new AbortController();
    const pending = errorOf(
      run(
        tools(tempDir()).bash,
        { command: 'echo started; sleep 30.31 & bash -c "sleep 30.32"; wait' },
        { signal: ac.signal },
      ),
    );
    await vi.waitFor(() => expect([sleepProcesses('30.31').length, sleepProcesses('30.32').length]).toEqual([1, 1]), {
      timeout: 10_000,
    });
    const abortedAt = Date.now();
    ac.abort();
    const message = await pending;
    expect(Date.now() - abortedAt).toBeLessThan(1000);
    expect(message).toBe('started\n\n\nCommand aborted');
    await vi.waitFor(() => expect([...sleepProcesses('30.31'), ...sleepProcesses('30.32')]).toEqual([]), {
      timeout: 5_000,
    });
  });

  it('timeout kills the whole process tree', async () => {
    const message = await errorOf(
      run(tools(tempDir()).bash, { command: 'sleep 30.33 & sleep 30.34; wait', timeout: 0.3 }),
    );
    expect(message).toBe('Command timed out after 0.3 seconds');
    await vi.waitFor(() => expect([...sleepProcesses('30.33'), ...sleepProcesses('30.34')]).toEqual([]), {
      timeout: 5_000,
    });
  });

  it('stdout and stderr share one stream in arrival order', async () => {
    const out = text(await run(tools(tempDir()).bash, { command: 'echo one; echo two >&2; sleep 0.05; echo three' }));
    expect(out).toBe('one\ntwo\nthree\n');
  });
});
