/**
 * `keel … | head`: the reader closes the pipe before keel has written everything. The command ends quietly with 0
 * (as any Unix tool that is cut short by its reader), not with an unhandled EPIPE stack trace on stderr.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('a reader that closes the pipe early', () => {
  it('`keel --help | head -1` prints the first line and nothing on stderr', () => {
    const r = spawnSync('bash', ['-o', 'pipefail', '-c', `"${process.execPath}" bin/keel.mjs --help | head -1`], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect({ status: r.status, stdout: r.stdout, stderr: r.stderr }).toEqual({
      status: 0,
      stdout: 'Usage: keel [options] [command]\n',
      stderr: '',
    });
  });
});
