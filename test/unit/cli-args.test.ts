/** keel CLI argument handling that needs no server: run input building, task files, pages, usage exit codes. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { buildInput } from '../../cli/commands/run.js';
import { paginate, parseTasks } from '../../cli/commands/batch.js';
import { main } from '../../cli/main.js';
import { CliError, uiLink } from '../../cli/context.js';

describe('keel run/start input', () => {
  it('builds an AgentRunInput from the prompt and flags', () => {
    expect(
      buildInput(['fix', 'the', 'bug'], {
        model: 'scripted/x',
        tools: ['read', 'bash'],
        mode: 'session',
        system: 'be brief',
        maxTurns: 3,
        meta: ['ticket=42'],
      }),
    ).toEqual({
      prompt: 'fix the bug',
      model: 'scripted/x',
      tools: ['read', 'bash'],
      mode: 'session',
      systemPrompt: 'be brief',
      maxTurns: 3,
      metadata: { ticket: '42' },
    });
  });

  it('--input gives a full AgentRunInput; flags override it', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'keel-cli-')), 'in.json');
    writeFileSync(file, JSON.stringify({ model: 'scripted/a', prompt: 'from file', maxTurns: 9, metadata: { a: 1 } }));
    expect(buildInput([], { input: file, maxTurns: 2 })).toEqual({
      model: 'scripted/a',
      prompt: 'from file',
      maxTurns: 2,
      metadata: { a: 1 },
    });
    expect(buildInput(['override'], { input: file, model: 'scripted/b' })).toMatchObject({
      model: 'scripted/b',
      prompt: 'override',
    });
  });

  it('--input also takes inline JSON', () => {
    expect(buildInput([], { input: '{"model":"scripted/a","prompt":"inline","maxTurns":4}' })).toEqual({
      model: 'scripted/a',
      prompt: 'inline',
      maxTurns: 4,
    });
    expect(() => buildInput([], { input: '{"model":' })).toThrow('--input {"model":: not JSON');
  });

  it('--output-schema and --output-repairs give a typed result (docs/runs.md "Typed results")', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'keel-cli-')), 'schema.json');
    writeFileSync(file, JSON.stringify({ type: 'object', required: ['n'] }));
    expect(buildInput(['count'], { model: 'scripted/x', outputSchema: file, outputRepairs: 0 })).toEqual({
      prompt: 'count',
      model: 'scripted/x',
      output: { type: 'object', required: ['n'] },
      outputRepairs: 0,
    });
    expect(buildInput(['count'], { model: 'scripted/x', outputSchema: '{"type":"array"}' })).toMatchObject({
      output: { type: 'array' },
    });
    expect(() => buildInput(['count'], { model: 'scripted/x', outputSchema: '{"type":' })).toThrow(
      '--output-schema {"type":: not JSON',
    );
    expect(() => buildInput(['count'], { model: 'scripted/x', outputSchema: '/nonexistent.json' })).toThrow(
      /^--output-schema \/nonexistent.json: ENOENT/,
    );
  });

  it('refuses a missing prompt and a bad --input as usage errors', () => {
    expect(() => buildInput([], { model: 'scripted/x' })).toThrow(CliError);
    expect(() => buildInput([], { input: '/nonexistent.json' })).toThrow(/--input/);
  });

  it('links to the Temporal UI', () => {
    expect(uiLink({ ui: 'http://localhost:8233', namespace: 'default' }, 'keel-1')).toBe(
      'http://localhost:8233/namespaces/default/workflows/keel-1',
    );
  });
});

describe('keel batch task files', () => {
  it('parses objects and prompt strings, filling defaults', () => {
    const tasks = parseTasks('{"prompt":"a","model":"scripted/x"}\n\n"b"\n{"prompt":"c","maxTurns":5}\n', {
      model: 'scripted/d',
      maxTurns: 2,
      tools: ['read'],
    });
    expect(tasks).toEqual([
      { prompt: 'a', model: 'scripted/x', tools: ['read'], maxTurns: 2 },
      { prompt: 'b', model: 'scripted/d', tools: ['read'], maxTurns: 2 },
      { prompt: 'c', model: 'scripted/d', tools: ['read'], maxTurns: 5 },
    ]);
  });

  it('reports every bad line with its number', () => {
    expect(() => parseTasks('{"prompt":"a"}\nnot json\n{"prompt":"c","model":"scripted/x","maxTurns":0}\n')).toThrow(
      /line 1: model: is required[\s\S]*line 2: not JSON[\s\S]*line 3: maxTurns: must be >= 1/,
    );
  });

  it('splits tasks into pages by count', () => {
    const tasks = Array.from({ length: 7 }, (_, i) => ({ model: 'scripted/x', prompt: `t${i}` }));
    expect(paginate(tasks, 3).map((p) => p.length)).toEqual([3, 3, 1]);
    expect(paginate(tasks).map((p) => p.length)).toEqual([7]);
  });
});

describe('keel exit codes without a server', () => {
  const quiet = () => {
    const spies = [
      vi.spyOn(process.stderr, 'write').mockImplementation(() => true),
      vi.spyOn(process.stdout, 'write').mockImplementation(() => true),
    ];
    return () => spies.forEach((s) => s.mockRestore());
  };

  it('usage errors exit 2, help exits 0', async () => {
    const restore = quiet();
    try {
      expect(await main(['bogus'])).toBe(2);
      expect(await main(['run'])).toBe(2);
      expect(await main(['run', 'x', '--max-turns', 'zero'])).toBe(2);
      expect(await main(['transcript', 'id', '--format', 'pdf'])).toBe(2);
      expect(await main(['--help'])).toBe(0);
      expect(await main(['status', '--help'])).toBe(0);
    } finally {
      restore();
      process.exitCode = undefined;
    }
  });

  it('keel worker --role takes all, model or tools; anything else is a usage error naming them', async () => {
    const stderr: string[] = [];
    const spies = [
      vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (stderr.push(String(chunk)), true)),
      vi.spyOn(process.stdout, 'write').mockImplementation(() => true),
    ];
    try {
      expect(await main(['worker', '--role', 'gpu'])).toBe(2);
      expect(stderr.join('')).toContain(
        "option '--role <role>' argument 'gpu' is invalid. --role must be one of model, tools, all.",
      );
      expect(await main(['worker', '--help'])).toBe(0);
    } finally {
      spies.forEach((s) => s.mockRestore());
      process.exitCode = undefined;
    }
  });

  it('an unreachable server exits 3', async () => {
    const restore = quiet();
    try {
      expect(await main(['--address', '127.0.0.1:1', 'status', 'x'])).toBe(3);
    } finally {
      restore();
      process.exitCode = undefined;
    }
  });
});
