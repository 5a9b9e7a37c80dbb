/** `npm run worker` (worker/main.ts, the Docker worker's entry): a Temporal it cannot reach is one line, no stack, exit 1. */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('worker/main.ts', () => {
  it('fails in one line that names the address and what to check', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1', KEEL_DEBUG: '' };
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'worker/main.ts'],
        { cwd: ROOT, env, timeout: 60_000 },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
      );
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\[keel\] cannot start a worker against Temporal at 127\.0\.0\.1:1: .*Connection refused.*\. Check TEMPORAL_ADDRESS \(and that the server is up\)\.$/,
    );
  });
});
