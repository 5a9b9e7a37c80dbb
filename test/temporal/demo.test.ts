/**
 * `npm run demo` as the README promises: the seed session replayed live, then the session ends and the process exits 0;
 * `keel demo --model …` with a failing model reports the error and exits 1.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('npm run demo', () => {
  it('replays the seed demo (greeting, 12*8, 1/0, a wrong parameter name, a path outside the workspace) and exits 0', async () => {
    const db = join(mkdtempSync(join(tmpdir(), 'keel-demo-test-')), 'dev.db');
    const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'demo/main.ts', '--db', db],
        { cwd: ROOT, timeout: 90_000 },
        (err, stdout) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout }),
      );
    });
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    const from = lines.indexOf('you> Hello');
    const to = lines.findIndex((l) => l.startsWith('Session completed'));
    expect(lines.slice(from, to + 1).map((l) => l.replace(/\/tmp\/keel-demo-\w+/g, '<ws>'))).toEqual([
      'you> Hello',
      expect.stringMatching(
        /^\(watch it live: http:\/\/127\.0\.0\.1:\d+\/namespaces\/default\/workflows\/keel-[\w-]+\)$/,
      ),
      '[turn 1]',
      'assistant> Hello! I can use tools now. Try asking me "What is 12*8?".',
      '',
      'you> What is 12*8?',
      '[turn 1]',
      'assistant> Let me calculate that.',
      '[tool call] calc {"expression":"12*8"}',
      '[tool result] calc → 96',
      '[turn 2]',
      'assistant> Done: 12*8 = 96.',
      '',
      'you> What is 1 divided by 0?',
      '[turn 1]',
      'assistant> Let me try.',
      '[tool call] calc {"expression":"1/0"}',
      '[tool result] calc → Division by zero (error)',
      '[turn 2]',
      'assistant> That cannot be computed: the divisor must not be 0.',
      '',
      'you> Try a wrong parameter name',
      '[turn 1]',
      'assistant> I will call the parameter expr.',
      '[tool call] calc {"expr":"1+1"}',
      expect.stringMatching(
        /^\[tool result\] calc → Validation failed for tool "calc": {3}- expression: must have required properties expression .*\(error\)$/,
      ),
      '[turn 2]',
      'assistant> Wrong parameter name; retrying with expression.',
      '[tool call] calc {"expression":"1+1"}',
      '[tool result] calc → 2',
      '[turn 3]',
      'assistant> This time it passed: 1+1 = 2.',
      '',
      'you> Show me ../../../etc/hosts',
      '[turn 1]',
      'assistant> Let me read it.',
      '[tool call] read_file {"path":"../../../etc/hosts"}',
      '[tool result] read_file → Path "../../../etc/hosts" is outside the workspace <ws>. Use a path inside <ws>. (error)',
      '[turn 2]',
      'assistant> I cannot read outside the workspace, so I will leave that file alone.',
      '',
      'Session completed: 20 messages, 10 turns.',
    ]);
    // no link to a server that is about to stop; the way to keep it instead
    expect(stdout).not.toMatch(/^Temporal UI:/m);
    expect(lines[to + 1]).toBe(
      'Stopping the dev server (run the demo with --keep to browse this run in the Temporal UI).',
    );
  });

  it('`keel demo --model` plays to that model; a model error is printed and the demo exits 1', async () => {
    const db = join(mkdtempSync(join(tmpdir(), 'keel-demo-test-')), 'dev.db');
    const env = { ...process.env, OPENAI_API_KEY: '', KEEL_OPENAI_API_KEY: '' };
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
      (resolve) => {
        execFile(
          process.execPath,
          ['bin/keel.mjs', 'demo', '--model', 'openai/gpt-5', '--db', db],
          { cwd: ROOT, timeout: 90_000, env },
          (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
      },
    );
    expect(code).toBe(1);
    expect(stdout).toContain('Keel demo · Node');
    expect(stdout).toContain('· model openai/gpt-5\n');
    expect(stdout).toContain(
      '[turn 1]\n[model error] No credentials for provider "openai": set its usual environment variable (e.g. ANTHROPIC_API_KEY, OPENAI_API_KEY), KEEL_OPENAI_API_KEY, or the worker option apiKeys["openai"].\n',
    );
    expect(stderr).toContain('Demo failed: 1 turn(s) ended with a model error (above).');
    expect(stdout).not.toContain('you> What is 12*8?'); // stops at the first failed prompt
  });
});
