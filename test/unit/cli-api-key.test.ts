/** Where the keel CLI takes the Temporal API key from: $TEMPORAL_API_KEY, --api-key-file, --api-key (issue 23). */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterEach, describe, expect, it } from 'vitest';
import { addConnectionOptions, globals, type GlobalOptions } from '../../cli/context.js';

const KEY = 'tcld-KEEL-TEST-api-key-0123456789';

/** The global options a subcommand sees for `args` (flags given before the command, as `keel --api-key-file f status`). */
function parse(args: string[]): GlobalOptions {
  let seen: GlobalOptions | undefined;
  const program = addConnectionOptions(new Command('keel')).exitOverride();
  program.command('probe').action((_o, cmd: Command) => {
    seen = globals(cmd);
  });
  program.parse([...args, 'probe'], { from: 'user' });
  return seen!;
}

const saved = process.env.TEMPORAL_API_KEY;
afterEach(() => {
  if (saved === undefined) delete process.env.TEMPORAL_API_KEY;
  else process.env.TEMPORAL_API_KEY = saved;
});

function keyFile(content: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'keel-api-key-')), 'key');
  writeFileSync(file, content, { mode: 0o600 });
  return file;
}

describe('keel CLI: the Temporal API key', () => {
  it('$TEMPORAL_API_KEY: used, TLS on, no flag needed', () => {
    process.env.TEMPORAL_API_KEY = KEY;
    const g = parse(['--config-file', '/nonexistent/temporal.toml']);
    expect(g.connection.apiKey).toBe(KEY);
    expect(g.connection.tls).toBe(true);
  });

  it('--api-key-file: the file content without its trailing newline, over $TEMPORAL_API_KEY', () => {
    process.env.TEMPORAL_API_KEY = 'tcld-from-the-environment-000';
    const g = parse(['--config-file', '/nonexistent/temporal.toml', '--api-key-file', keyFile(`${KEY}\n`)]);
    expect(g.connection.apiKey).toBe(KEY);
    expect(g.connection.tls).toBe(true);
  });

  it('--api-key-file: an unreadable or empty file, or both key flags, are usage errors that say what to do', () => {
    delete process.env.TEMPORAL_API_KEY;
    const missing = join(tmpdir(), 'keel-no-such-key-file');
    expect(() => parse(['--api-key-file', missing])).toThrow(
      `--api-key-file ${missing} cannot be read (ENOENT): fix the path or its permissions.`,
    );
    const empty = keyFile('\n');
    expect(() => parse(['--api-key-file', empty])).toThrow(
      `--api-key-file ${empty} is empty: write the API key into it.`,
    );
    expect(() => parse(['--api-key', KEY, '--api-key-file', keyFile(KEY)])).toThrow(
      'Give the API key once: --api-key or --api-key-file, not both.',
    );
  });

  it('the help says to prefer $TEMPORAL_API_KEY or --api-key-file', () => {
    const help = addConnectionOptions(new Command('keel')).helpInformation();
    expect(help.replace(/\s+/g, ' ')).toContain(
      '--api-key <key> API key, e.g. Temporal Cloud; prefer $TEMPORAL_API_KEY or --api-key-file (a key on the command line shows in ps and shell history)',
    );
    expect(help.replace(/\s+/g, ' ')).toContain(
      '--api-key-file <file> file holding the API key (trailing newline ignored)',
    );
  });
});
