import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { withFileMutationQueue } from '../../../activities/tools/builtin/file-mutation-queue.js';
import type * as FileMutationQueue from '../../../activities/tools/builtin/file-mutation-queue.js';
import { expandPath, resolveToCwd } from '../../../activities/tools/builtin/paths.js';
import { errorOf, run, tempDir, text, tools, trackLog } from './helpers.js';

// the mutation queue, watched: a test waits until a tool has queued behind a held mutation
vi.mock('../../../activities/tools/builtin/file-mutation-queue.js', async (original) => {
  const queue = await original<typeof FileMutationQueue>();
  return { ...queue, withFileMutationQueue: vi.fn(queue.withFileMutationQueue) };
});

const refusal = (given: string, root: string) =>
  `Path "${given}" is outside the workspace ${root}. Use a path inside ${root}.`;
const hardLinkRefusal = (given: string, names: number, root: string) =>
  `Path "${given}" is a hard link (the file has ${names} names, and another may be outside the workspace ${root}); it is not read or written. Use a file with a single name inside ${root}.`;

/** A workspace and, beside it, an outside directory with a secret file. */
function setup() {
  const base = tempDir();
  const ws = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  mkdirSync(ws);
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'secret.txt'), 'TOP SECRET\n');
  writeFileSync(path.join(ws, 'inside.txt'), 'inside\n');
  return { base, ws, outside, t: tools(ws) };
}

describe('path normalisation (C.0)', () => {
  it('strips @, maps Unicode spaces, expands ~ and file:// URLs', () => {
    expect(expandPath('@foo/bar')).toBe('foo/bar');
    expect(expandPath('@@x')).toBe('@x');
    expect(expandPath('a\u00A0b\u2000c\u200Ad\u202Fe\u205Ff\u3000g')).toBe('a b c d e f g');
    expect(expandPath('~')).toBe(homedir());
    expect(expandPath('~/x')).toBe(path.join(homedir(), 'x'));
    expect(expandPath('file:///tmp/a%20b')).toBe('/tmp/a b');
    expect(resolveToCwd('/a/./b/../c', '/w')).toBe('/a/c');
    expect(resolveToCwd('x/y', '/w')).toBe('/w/x/y');
  });
});

describe('workspace confinement', () => {
  it('refuses ".." escapes for every file tool and touches nothing outside', async () => {
    const { ws, outside, t } = setup();
    const given = '../outside/secret.txt';
    for (const [name, args] of [
      ['read', { path: given }],
      ['write', { path: '../outside/new.txt', content: 'x' }],
      ['edit', { path: given, edits: [{ oldText: 'TOP', newText: 'NOT' }] }],
      ['grep', { pattern: 'SECRET', path: '../outside' }],
      ['find', { pattern: '*', path: '../outside' }],
      ['ls', { path: '../outside' }],
    ] as const) {
      const message = await errorOf(run(t[name], args));
      expect(message, name).toBe(refusal(args.path, ws));
    }
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf-8')).toBe('TOP SECRET\n');
    expect(existsSync(path.join(outside, 'new.txt'))).toBe(false);
  });

  it('refuses absolute paths outside: /etc/passwd', async () => {
    const { ws, t } = setup();
    expect(await errorOf(run(t.read, { path: '/etc/passwd' }))).toBe(refusal('/etc/passwd', ws));
    expect(await errorOf(run(t.write, { path: '/etc/keel-should-not-exist', content: 'x' }))).toBe(
      refusal('/etc/keel-should-not-exist', ws),
    );
    expect(existsSync('/etc/keel-should-not-exist')).toBe(false);
    expect(await errorOf(run(t.ls, { path: '/etc' }))).toBe(refusal('/etc', ws));
    expect(await errorOf(run(t.grep, { pattern: 'root', path: '/etc/passwd' }))).toBe(refusal('/etc/passwd', ws));
  });

  it('refuses a symlink inside the workspace that points to /etc', async () => {
    const { ws, t } = setup();
    symlinkSync('/etc', path.join(ws, 'etc-link'));
    for (const [name, args] of [
      ['read', { path: 'etc-link/passwd' }],
      ['write', { path: 'etc-link/keel-should-not-exist', content: 'x' }],
      ['edit', { path: 'etc-link/hostname', edits: [{ oldText: 'a', newText: 'b' }] }],
      ['ls', { path: 'etc-link' }],
      ['grep', { pattern: 'root', path: 'etc-link' }],
      ['find', { pattern: '*', path: 'etc-link' }],
    ] as const) {
      expect(await errorOf(run(t[name], args)), name).toBe(refusal(args.path, ws));
    }
    expect(existsSync('/etc/keel-should-not-exist')).toBe(false);
  });

  it('refuses a symlinked file and a dangling symlink whose target is outside', async () => {
    const { ws, outside, t } = setup();
    symlinkSync(path.join(outside, 'secret.txt'), path.join(ws, 'secret-link.txt'));
    symlinkSync(path.join(outside, 'not-yet.txt'), path.join(ws, 'dangling.txt'));
    symlinkSync(path.join(outside, 'missing-dir'), path.join(ws, 'dangling-dir'));
    expect(await errorOf(run(t.read, { path: 'secret-link.txt' }))).toBe(refusal('secret-link.txt', ws));
    expect(await errorOf(run(t.write, { path: 'dangling.txt', content: 'x' }))).toBe(refusal('dangling.txt', ws));
    expect(await errorOf(run(t.write, { path: 'dangling-dir/a/b.txt', content: 'x' }))).toBe(
      refusal('dangling-dir/a/b.txt', ws),
    );
    expect(existsSync(path.join(outside, 'not-yet.txt'))).toBe(false);
    expect(existsSync(path.join(outside, 'missing-dir'))).toBe(false);
  });

  it('refuses Unicode-space, @, ~ and file:// tricks that land outside', async () => {
    const { ws, outside, t } = setup();
    mkdirSync(path.join(outside, 'my docs'));
    writeFileSync(path.join(outside, 'my docs', 'plan.txt'), 'outside plan');
    // "my\u00A0docs" normalises to the real outside directory "my docs".
    const unicode = `${outside}/my\u00A0docs/plan.txt`;
    expect(await errorOf(run(t.read, { path: unicode }))).toBe(refusal(unicode, ws));
    // ".\u00A0./" is a directory named ". ." inside the workspace, not a parent escape: it stays inside.
    expect(await errorOf(run(t.read, { path: '.\u00A0./outside/secret.txt' }))).toMatch(/ENOENT/);
    expect(await errorOf(run(t.read, { path: `@${outside}/secret.txt` }))).toBe(refusal(`@${outside}/secret.txt`, ws));
    const url = pathToFileURL(path.join(outside, 'secret.txt')).href;
    expect(await errorOf(run(t.read, { path: url }))).toBe(refusal(url, ws));
    expect(await errorOf(run(t.ls, { path: '~' }))).toBe(refusal('~', ws));
    // read's fallback variants are confined too: an outside screenshot name with U+202F is not probed into.
    writeFileSync(path.join(outside, 'Shot 1.00.00\u202FPM.png'), 'x');
    expect(await errorOf(run(t.read, { path: `${outside}/Shot 1.00.00 PM.png` }))).toBe(
      refusal(`${outside}/Shot 1.00.00 PM.png`, ws),
    );
    writeFileSync(path.join(ws, 'Shot 2.00.00\u202FPM.png'), 'inside shot');
    expect(text(await run(t.read, { path: 'Shot 2.00.00 PM.png' }))).toBe('inside shot');
  });

  it('allows paths inside, including symlinks that stay inside and new nested files', async () => {
    const { ws, t } = setup();
    mkdirSync(path.join(ws, 'real'));
    symlinkSync(path.join(ws, 'real'), path.join(ws, 'alias'));
    await run(t.write, { path: 'alias/new/file.txt', content: 'hello' });
    expect(readFileSync(path.join(ws, 'real', 'new', 'file.txt'), 'utf-8')).toBe('hello');
    expect(text(await run(t.read, { path: `${ws}/inside.txt` }))).toBe('inside\n');
    expect(text(await run(t.read, { path: 'sub/../inside.txt' }))).toBe('inside\n');
    expect(text(await run(t.ls, { path: '.' }))).toBe('alias/\ninside.txt\nreal/');
  });

  it('allowedRoots widens the workspace', async () => {
    const { ws, outside } = setup();
    const t = tools(ws, { allowedRoots: [outside] });
    expect(text(await run(t.read, { path: '../outside/secret.txt' }))).toBe('TOP SECRET\n');
    await run(t.write, { path: path.join(outside, 'allowed.txt'), content: 'ok' });
    expect(readFileSync(path.join(outside, 'allowed.txt'), 'utf-8')).toBe('ok');
    expect(await errorOf(run(t.read, { path: '/etc/passwd' }))).toBe(refusal('/etc/passwd', ws));
  });

  it('read may open the bash full-output log it was pointed at', async () => {
    const { t } = setup();
    const result = await run<{ fullOutputPath?: string } | undefined>(t.bash, { command: 'seq 2500' });
    const log = trackLog(result.details!.fullOutputPath!);
    const out = text(await run(t.read, { path: log, offset: 2499 }));
    expect(out).toBe('2499\n2500\n');
  });

  it('refuses a hard link to a file outside on read, write and edit, and leaves that file as it was', async () => {
    const { ws, outside, t } = setup();
    linkSync(path.join(outside, 'secret.txt'), path.join(ws, 'linked.txt'));
    expect(await errorOf(run(t.read, { path: 'linked.txt' }))).toBe(hardLinkRefusal('linked.txt', 2, ws));
    expect(await errorOf(run(t.write, { path: 'linked.txt', content: 'overwritten' }))).toBe(
      hardLinkRefusal('linked.txt', 2, ws),
    );
    expect(await errorOf(run(t.edit, { path: 'linked.txt', edits: [{ oldText: 'TOP', newText: 'NOT' }] }))).toBe(
      hardLinkRefusal('linked.txt', 2, ws),
    );
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf-8')).toBe('TOP SECRET\n');
    // a file with one name is read and written as before
    expect(text(await run(t.read, { path: 'inside.txt' }))).toBe('inside\n');
  });

  it('write checks confinement again before it creates a parent directory', async () => {
    const { ws, outside, t } = setup();
    mkdirSync(path.join(ws, 'd'));
    const file = path.join(ws, 'd', 'new', 'f.txt');
    // another mutation of the same file holds the queue while the path is checked; then d becomes a link outside
    let release!: () => void;
    const held = withFileMutationQueue(file, () => new Promise<void>((r) => (release = r)));
    const write = errorOf(run(t.write, { path: 'd/new/f.txt', content: 'x' }));
    const queued = () => vi.mocked(withFileMutationQueue).mock.calls.filter(([p]) => p === file).length;
    await vi.waitFor(() => expect(queued()).toBe(2));
    renameSync(path.join(ws, 'd'), path.join(ws, 'd-moved'));
    symlinkSync(outside, path.join(ws, 'd'));
    release();
    await held;
    expect(await write).toBe(refusal('d/new/f.txt', ws));
    expect(existsSync(path.join(outside, 'new'))).toBe(false);
  });
});
