/**
 * Section 8, sandbox: what bubblewrap adds to one `bash` call (issue 21). The built-in `bash` tool is called directly
 * (no Temporal round trip: the figure is the tool's own cost) with `echo ok`, alternately unsandboxed
 * (`sandbox: 'none'`) and in the default sandbox (new user/PID/mount/IPC/UTS/network namespaces, prlimit), after a
 * warm-up; BENCH_SANDBOX_CALLS pairs (default 100). Reports both medians, the added ms per call (paired by call) and
 * the ratio. Target: ≤ 15 ms added (median).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builtinTools } from '../activities/tools/builtin/index.js';
import type { ToolContext, ToolDefinition } from '../activities/tools/define-tool.js';
import type { Bench } from './context.js';
import { summarize, type Summary } from './stats.js';

export interface SandboxResult {
  calls: number;
  /** Whether the worker runs as root (then the sandbox also sets the PID namespace's pid_max: one more exec). */
  root: boolean;
  plainMs: Summary;
  sandboxedMs: Summary;
  addedMs: Summary;
  ratio: Summary;
}

const CONTEXT: ToolContext = { workflowId: 'bench-sandbox', runId: 'r', idempotencyKey: 'k', attempt: 1, metadata: {} };

async function timeCall(bash: ToolDefinition): Promise<number> {
  const t0 = performance.now();
  await bash.execute('c', { command: 'echo ok' }, new AbortController().signal, () => {}, CONTEXT);
  return performance.now() - t0;
}

export async function sandboxSection(bench: Bench): Promise<SandboxResult> {
  const calls = Math.max(5, Number(process.env.BENCH_SANDBOX_CALLS ?? 100));
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-sandbox-'));
  try {
    const workspaces = { root: join(dir, 'runs'), sweepIntervalMs: 0 };
    const bashOf = (sandbox: 'none' | 'bwrap') =>
      builtinTools({ cwd: dir, workspaces, sandbox }).find((t) => t.name === 'bash')!;
    const plain = bashOf('none');
    const sandboxed = bashOf('bwrap');
    for (let i = 0; i < 10; i++) {
      await timeCall(plain); // warm-up
      await timeCall(sandboxed);
    }
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < calls; i++) {
      if (i % 2 === 0) {
        a.push(await timeCall(plain));
        b.push(await timeCall(sandboxed));
      } else {
        b.push(await timeCall(sandboxed));
        a.push(await timeCall(plain));
      }
    }
    const result: SandboxResult = {
      calls,
      root: typeof process.getuid === 'function' && process.getuid() === 0,
      plainMs: summarize(a),
      sandboxedMs: summarize(b),
      addedMs: summarize(b.map((x, i) => x - a[i])),
      ratio: summarize(b.map((x, i) => x / a[i])),
    };
    bench.log(
      `sandbox: bash echo ok ${result.plainMs.median.toFixed(1)} ms plain, ${result.sandboxedMs.median.toFixed(1)} ms sandboxed (median of ${calls})`,
    );
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
