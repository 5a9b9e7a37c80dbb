/**
 * The `keel` command tree as `--help` shows it (issue 33 item 20): every command says what it does in its own help (12
 * of 22 said nothing), one-letter flags mean what they mean in the `temporal` CLI or are not used (`-t`, `-q`, `-o`,
 * `-w`, `-r`, and `-f` meaning two things), and `keel tools --help` lists only the options that change its listing.
 */
import { describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { buildProgram } from '../../cli/main.js';

/** Every command below `cmd`, with its path (`batch retry`). */
function commands(cmd: Command, path: string[] = []): { path: string; cmd: Command }[] {
  return cmd.commands.flatMap((c) => [
    { path: [...path, c.name()].join(' '), cmd: c },
    ...commands(c, [...path, c.name()]),
  ]);
}

/** The `temporal` CLI's one-letter flags (temporal 1.9.1 `--help` and `temporal options`). */
const TEMPORAL_SHORT: Record<string, string> = {
  '-n': '--namespace',
  '-t': '--task-queue',
  '-i': '--input',
  '-f': '--follow',
  '-q': '--query',
  '-o': '--output',
  '-w': '--workflow-id',
  '-r': '--run-id',
  '-y': '--yes',
};

describe('keel --help', () => {
  it('every command opens its own help with what it does', () => {
    const all = commands(buildProgram());
    expect(all.length).toBeGreaterThanOrEqual(22);
    const missing = all.filter(({ cmd }) => !cmd.description().trim()).map(({ path }) => path);
    expect(missing).toEqual([]);
    for (const { cmd } of all) expect(cmd.helpInformation()).toContain(cmd.description().split(' ')[0]);
    expect(all.find(({ path }) => path === 'start')!.cmd.description()).toBe(
      'Start a run and print its workflow id and UI link.',
    );
  });

  it('a one-letter flag means one option everywhere, and what it means in the temporal CLI', () => {
    const program = buildProgram();
    const meaning = new Map<string, Set<string>>();
    for (const cmd of [program, ...commands(program).map((c) => c.cmd)])
      for (const o of cmd.options)
        if (o.short && o.short !== '-V') meaning.set(o.short, new Set([...(meaning.get(o.short) ?? []), o.long!]));
    const flags = Object.fromEntries([...meaning].map(([short, longs]) => [short, [...longs]]));
    expect(flags).toEqual({
      '-n': ['--namespace'],
      '-t': ['--task-queue'],
      '-i': ['--input'],
      '-f': ['--follow'],
      '-m': ['--model'],
      '-s': ['--system'],
      '-c': ['--concurrency'],
    });
    for (const [short, [long]] of Object.entries(flags))
      if (TEMPORAL_SHORT[short] !== undefined) expect(long).toBe(TEMPORAL_SHORT[short]);
  });

  it('keel tools --help lists the options that change what it lists, and takes every worker option', () => {
    const tools = commands(buildProgram()).find(({ path }) => path === 'tools')!.cmd;
    const shown = tools.helpInformation().match(/^ {2}(?:-\w, )?--[\w-]+/gm);
    expect(shown?.map((s) => s.trim())).toEqual([
      '--sandbox',
      '--no-builtin',
      '--approve',
      '--tools-module',
      '--mcp',
      '-h, --help',
    ]);
    expect(tools.options.map((o) => o.long)).toContain('--workspace');
  });
});
