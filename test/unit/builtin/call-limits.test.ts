/**
 * Issue 33 item 4: one call's resources are bounded in total, not only per process. Through the `bash` and `read`
 * tools of `builtinTools` with the real bubblewrap sandbox: the call's cgroup (memory of all its processes together,
 * processes, CPU), the size of the sandbox's `/tmp`, `read` of a huge file that keeps only its window, and the capped
 * full-output log that keeps the tail. Exact texts where the model sees one.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectCallCgroups, noCgroupWarningForTest } from './call-limits-helpers.js';
import { builtinTools } from '../../../activities/tools/builtin/index.js';
import { sandboxUnavailable } from '../../../activities/tools/builtin/sandbox.js';
import { outOfMemoryNotice } from '../../../activities/tools/builtin/bash.js';
import { droppedHeader } from '../../../activities/tools/builtin/tail-log.js';
import type { ToolDefinition } from '../../../activities/tools/define-tool.js';
import { errorOf, run, tempDir, text, trackLog } from './helpers.js';

const MiB = 1024 * 1024;
const noSandbox = sandboxUnavailable() !== undefined;
const cgroups = noSandbox ? 'no sandbox' : detectCallCgroups();

function tools(
  cwd: string,
  limits: Record<string, number>,
  toolLimits: { outputLogBytes?: number } = {},
): Record<string, ToolDefinition> {
  const workspaces = { root: tempDir('keel-runs-'), sweepIntervalMs: 0 };
  const list = builtinTools({ cwd, workspaces, sandbox: { limits }, limits: toolLimits });
  return Object.fromEntries(list.map((t) => [t.name, t]));
}

describe.skipIf(noSandbox)('one call’s resources (issue 33 item 4)', () => {
  it.skipIf(typeof cgroups === 'string')(
    'six processes of 180 MiB under a 256 MiB call limit: the kernel kills some, and the model is told',
    async () => {
      const t = tools(tempDir(), { callMemoryBytes: 256 * MiB });
      const command =
        'p=; for i in 1 2 3 4 5 6; do (head -c 180M /dev/zero | tail -c 180M >/dev/null) 2>/dev/null & p="$p $!"; done; ' +
        'wait $p; echo all waited';
      const out = text(await run(t.bash, { command }));
      expect(out).toBe(`all waited\n\n${outOfMemoryNotice(256 * MiB)}`);
      expect(outOfMemoryNotice(256 * MiB)).toBe(
        "[Out of memory: the command's processes together reached this call's memory limit of 256.0MB, and the kernel killed at least one of them]",
      );
    },
  );

  it.skipIf(typeof cgroups === 'string')(
    'the call’s cgroup holds the command with the configured limits, and is removed when the call ends',
    async () => {
      const ws = tempDir();
      const t = tools(ws, { callMemoryBytes: 300 * MiB, processes: 77, cpus: 1.5 });
      // The command records its cgroups, then waits for the test to look at them (a gate file).
      const command = 'cat /proc/self/cgroup > cg.txt; while [ ! -e go ]; do sleep 0.05; done; echo looked';
      const call = run(t.bash, { command });
      const cg = path.join(ws, 'cg.txt');
      const lines = await waitFor(
        () => existsSync(cg) && readFileSync(cg, 'utf8').includes('call-'),
        () => readFileSync(cg, 'utf8').split('\n'),
      );
      const dirs = cgroupDirs(lines);
      expect(dirs.values).toEqual({ memory: 300 * MiB, pids: 77, cpu: 150_000 });
      writeFileSync(path.join(ws, 'go'), '');
      expect(text(await call)).toBe('looked\n');
      await waitFor(
        () => dirs.paths.every((d) => !existsSync(d)),
        () => true,
      );
    },
  );

  it('/tmp is a tmpfs of tmpBytes: 16 MiB into an 8 MiB /tmp fails with ENOSPC', async () => {
    const t = tools(tempDir(), { tmpBytes: 8 * MiB });
    const out = text(
      await run(t.bash, {
        command: 'head -c 16M /dev/zero > /tmp/big; echo rc=$?; df -B1 --output=size /tmp | tail -1 | tr -d " "',
      }),
    );
    expect(out).toBe(`head: error writing 'standard output': No space left on device\nrc=1\n${8 * MiB}\n`);
  });

  it('read of a 1 GiB sparse file with limit 1 keeps only its window (the RSS high-water mark grows < 200 MiB)', async () => {
    const ws = tempDir();
    execFileSync('truncate', ['-s', '1G', path.join(ws, 'sparse.bin')]);
    const t = tools(ws, {});
    const before = process.resourceUsage().maxRSS;
    const out = text(await run(t.read, { path: 'sparse.bin', limit: 1 }));
    const grewKiB = process.resourceUsage().maxRSS - before;
    expect(out).toBe("[Line 1 is 1024.0MB, exceeds 50.0KB limit. Use bash: sed -n '1p' sparse.bin | head -c 51200]");
    expect(grewKiB).toBeLessThan(200 * 1024);
  }, 120_000);

  it('read streams the window of a many-line file: exact notices, and the offset past the end', async () => {
    const ws = tempDir();
    writeFileSync(path.join(ws, 'n.txt'), Array.from({ length: 100_000 }, (_, i) => `line ${i + 1}`).join('\n'));
    const t = tools(ws, {});
    expect(text(await run(t.read, { path: 'n.txt', offset: 50_000, limit: 2 }))).toBe(
      'line 50000\nline 50001\n\n[49999 more lines in file. Use offset=50002 to continue.]',
    );
    expect(await errorOf(run(t.read, { path: 'n.txt', offset: 100_001 }))).toBe(
      'Offset 100001 is beyond end of file (100000 lines total)',
    );
  });

  it('the full-output log keeps its last outputLogBytes: 8 MiB of output under a 1 MiB cap', async () => {
    const t = tools(tempDir(), {}, { outputLogBytes: MiB });
    const command = "seq -f '%09g' 1 800000";
    const result = await run<{ fullOutputPath: string }>(t.bash, { command });
    const log = trackLog(result.details!.fullOutputPath);
    expect(text(result).split('\n').slice(-1)[0]).toBe(
      `[Showing lines 798001-800000 of 800000. Full output: ${log} (its last 1.0MB only: the output was 7.6MB)]`,
    );
    const content = readFileSync(log, 'utf8');
    const header = droppedHeader(8_000_000 - MiB, MiB);
    expect(header).toBe(
      '[The first 6951424 bytes of the output are not kept: this file holds its last 1048576 bytes]\n',
    );
    expect(content.startsWith(header)).toBe(true);
    expect(statSync(log).size).toBe(header.length + MiB);
    expect(content.endsWith('000799999\n000800000\n')).toBe(true);
    // the kept tail is the output's own last MiB, in order
    expect(content.slice(header.length)).toBe(
      Array.from({ length: 800_000 }, (_, i) => `${String(i + 1).padStart(9, '0')}\n`)
        .join('')
        .slice(-MiB),
    );
  });
});

describe('where the host allows no cgroup per call', () => {
  it('detection says why, and the worker says so once at start with this text', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'mountinfo'), '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw\n');
    writeFileSync(path.join(dir, 'cgroup'), '0::/\n');
    const reason = detectCallCgroups({ mountinfo: path.join(dir, 'mountinfo'), selfCgroup: path.join(dir, 'cgroup') });
    expect(reason).toBe('no cgroup v2 hierarchy; no cgroup v1 memory hierarchy');
    expect(noCgroupWarningForTest(reason as string)).toBe(
      '[keel] WARNING: no cgroup per tool call: no cgroup v2 hierarchy; no cgroup v1 memory hierarchy. Each sandboxed ' +
        'process keeps its own limits (CPU time, address space, file size, processes), but the processes of one call ' +
        'are not bounded together in memory, processes or CPU.',
    );
  });
});

/** Polls `ready` (a bounded vi.waitFor-like loop without sleeps in the test's logic), then returns `value()`. */
async function waitFor<T>(ready: () => boolean, value: () => T): Promise<T> {
  const { vi } = await import('vitest');
  await vi.waitFor(() => expect(ready()).toBe(true), { timeout: 20_000, interval: 25 });
  return value();
}

/** The call cgroup's directories (from /proc/self/cgroup lines of v1 hierarchies) and their limits. */
function cgroupDirs(lines: string[]): { paths: string[]; values: Record<string, number> } {
  const find = (controller: string) => {
    const line = lines.find((l) => l.split(':')[1]?.split(',').includes(controller))!;
    return path.join('/sys/fs/cgroup', controller, line.split(':').slice(2).join(':'));
  };
  const [memory, pids, cpu] = ['memory', 'pids', 'cpu'].map(find);
  const read = (f: string) => Number(readFileSync(f, 'utf8').trim());
  return {
    paths: [memory, pids, cpu],
    values: {
      memory: read(path.join(memory, 'memory.limit_in_bytes')),
      pids: read(path.join(pids, 'pids.max')),
      cpu: read(path.join(cpu, 'cpu.cfs_quota_us')),
    },
  };
}
