import { chmodSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FindToolDetails } from '../../../activities/tools/builtin/find.js';
import type { GrepToolDetails } from '../../../activities/tools/builtin/grep.js';
import { findExecutable } from '../../../activities/tools/builtin/search-common.js';
import { errorOf, run, tempDir, text, tools } from './helpers.js';

const hasRg = Boolean(findExecutable(['rg']));
const hasFd = Boolean(findExecutable(['fd', 'fdfind']));

function write(dir: string, rel: string, content: string) {
  const file = path.join(dir, rel);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, content);
  return file;
}

// Every grep/find case runs twice: with rg/fd (skipped when they are not on PATH) and with the pure-Node fallback.
const backends = [
  { name: 'rg', external: true, available: hasRg },
  { name: 'node fallback', external: false, available: true },
];

for (const backend of backends) {
  describe.skipIf(!backend.available)(`grep (C.5) with ${backend.name}`, () => {
    const grep = (dir: string) => tools(dir, { useExternalSearch: backend.external }).grep;

    it('C.8-51 single file: basename, line number and text', async () => {
      const dir = tempDir();
      const file = write(dir, 'example.txt', 'first line\nmatch line\nlast line');
      const result = await run(grep(dir), { pattern: 'match', path: file });
      expect(text(result)).toBe('example.txt:2: match line');
      expect(result.details).toBeUndefined();
    });

    it('C.8-52 limit and context', async () => {
      const dir = tempDir();
      const file = write(dir, 'context.txt', 'before\nmatch one\nafter\nmiddle\nmatch two\nafter two\n');
      const result = await run<GrepToolDetails | undefined>(grep(dir), {
        pattern: 'match',
        path: file,
        limit: 1,
        context: 1,
      });
      expect(text(result)).toBe(
        'context.txt-1- before\ncontext.txt:2: match one\ncontext.txt-3- after\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern]',
      );
      expect(text(result)).not.toContain('match two');
      expect(result.details).toEqual({ matchLimitReached: 1 });
    });

    it('C.8-53 a flag-like pattern is searched as text, never run', async () => {
      const dir = tempDir();
      const marker = path.join(dir, 'pre-ran');
      const script = write(dir, 'pre.sh', `#!/bin/sh\ntouch ${marker}\ncat "$1"\n`);
      chmodSync(script, 0o755);
      write(dir, 'search/file.txt', 'hello\n');
      const result = await run(grep(dir), { pattern: `--pre=${script}`, path: path.join(dir, 'search') });
      expect(text(result)).toBe('No matches found');
      expect(existsSync(marker)).toBe(false);
    });

    it('directory search: relative paths, hidden files, ignoreCase, literal, glob', async () => {
      const dir = tempDir();
      write(dir, 'src/a.ts', 'const Foo = 1;\n');
      write(dir, 'src/b.js', 'foo.bar();\n');
      write(dir, '.hidden/c.ts', 'foo\n');
      const g = grep(dir);
      const lines = (s: string) => s.split('\n').sort();
      expect(lines(text(await run(g, { pattern: 'foo', ignoreCase: true })))).toEqual([
        '.hidden/c.ts:1: foo',
        'src/a.ts:1: const Foo = 1;',
        'src/b.js:1: foo.bar();',
      ]);
      expect(text(await run(g, { pattern: 'foo.bar(', literal: true }))).toBe('src/b.js:1: foo.bar();');
      expect(lines(text(await run(g, { pattern: 'foo', glob: '*.ts' })))).toEqual(['.hidden/c.ts:1: foo']);
      expect(text(await run(g, { pattern: 'foo', path: 'src', glob: '!*.ts' }))).toBe('b.js:1: foo.bar();');
    });

    it('.gitignore applies inside a git repository only (like rg)', async () => {
      const dir = tempDir();
      write(dir, '.gitignore', 'ignored.txt\n');
      write(dir, 'ignored.txt', 'needle\n');
      write(dir, 'kept.txt', 'needle\n');
      const g = grep(dir);
      expect(
        text(await run(g, { pattern: 'needle' }))
          .split('\n')
          .sort(),
      ).toEqual(['ignored.txt:1: needle', 'kept.txt:1: needle']);
      mkdirSync(path.join(dir, '.git'));
      expect(text(await run(g, { pattern: 'needle' }))).toBe('kept.txt:1: needle');
    });

    it('long lines are cut to 500 chars; CR removed; byte limit', async () => {
      const dir = tempDir();
      write(dir, 'long.txt', `needle ${'x'.repeat(600)}\r\n`);
      const result = await run<GrepToolDetails | undefined>(grep(dir), { pattern: 'needle' });
      expect(text(result)).toBe(
        `long.txt:1: needle ${'x'.repeat(493)}... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]`,
      );
      expect(result.details).toEqual({ linesTruncated: true });

      const many = tempDir();
      write(many, 'many.txt', Array.from({ length: 200 }, (_, i) => `needle ${i} ${'y'.repeat(400)}`).join('\n'));
      const big = await run<GrepToolDetails | undefined>(grep(many), { pattern: 'needle', limit: 1000 });
      expect(text(big).endsWith('\n\n[50.0KB limit reached]')).toBe(true);
      expect(big.details?.truncation?.truncatedBy).toBe('bytes');
    });

    it('missing path and no matches', async () => {
      const dir = tempDir();
      expect(await errorOf(run(grep(dir), { pattern: 'x', path: 'missing' }))).toBe(
        `Path not found: ${path.join(dir, 'missing')}`,
      );
      write(dir, 'a.txt', 'abc\n');
      expect(text(await run(grep(dir), { pattern: 'zzz' }))).toBe('No matches found');
    });

    it('does not follow a symlink to a directory outside the workspace', async () => {
      const outside = tempDir();
      write(outside, 'secret.txt', 'needle\n');
      const dir = tempDir();
      write(dir, 'inside.txt', 'needle\n');
      symlinkSync(outside, path.join(dir, 'link'));
      symlinkSync(path.join(outside, 'secret.txt'), path.join(dir, 'secret-link.txt'));
      expect(text(await run(grep(dir), { pattern: 'needle' }))).toBe('inside.txt:1: needle');
    });
  });

  const findBackend = backend.name === 'rg' ? { ...backend, name: 'fd', available: hasFd } : backend;
  describe.skipIf(!findBackend.available)(`find (C.6) with ${findBackend.name}`, () => {
    const find = (dir: string) => tools(dir, { useExternalSearch: findBackend.external }).find;
    const sorted = (s: string) => s.split('\n').sort();

    // fd < 8.7 (Debian's) cannot honour .gitignore outside a git repository, so outside one the tool uses the Node walk;
    // running these cases inside a repository too makes sure fd itself is exercised.
    for (const repo of [false, true]) {
      const where = repo ? ' (inside a git repository)' : '';
      const fresh = () => {
        const dir = tempDir();
        if (repo) mkdirSync(path.join(dir, '.git'));
        return dir;
      };

      it(`C.8-54 includes hidden files${where}`, async () => {
        const dir = fresh();
        write(dir, 'visible.txt', 'v');
        write(dir, '.secret/hidden.txt', 'h');
        const out = text(await run(find(dir), { pattern: '**/*.txt', path: dir }));
        expect(sorted(out)).toEqual(['.secret/hidden.txt', 'visible.txt']);
      });

      it(`C.8-56 an invalid glob rejects${where}`, async () => {
        const dir = fresh();
        write(dir, 'a.txt', 'a');
        const message = await errorOf(run(find(dir), { pattern: '[', path: dir }));
        expect(message).toMatch(/error parsing glob|fd exited with code 1|fd error/i);
        expect(message).toContain("[fd error]: error parsing glob '[': unclosed character class; missing ']'");
      });

      it(`C.8-57 a flag-like pattern is a pattern${where}`, async () => {
        const dir = fresh();
        write(dir, 'a.txt', 'a');
        expect(text(await run(find(dir), { pattern: '--help', path: dir }))).toBe('No files found matching pattern');
      });
    }

    it('C.8-55 honours .gitignore without a git repository', async () => {
      const dir = tempDir();
      write(dir, '.gitignore', 'ignored.txt\n');
      write(dir, 'ignored.txt', 'i');
      write(dir, 'kept.txt', 'k');
      const out = text(await run(find(dir), { pattern: '**/*.txt', path: dir }));
      expect(out).toBe('kept.txt');
    });

    it('C.8-55 (git repository variant) honours nested and anchored .gitignore rules', async () => {
      const dir = tempDir();
      mkdirSync(path.join(dir, '.git'));
      write(dir, '.git/HEAD', 'ref: refs/heads/main\n');
      write(dir, '.gitignore', 'ignored.txt\nbuild/\n');
      write(dir, 'sub/.gitignore', '/local.txt\n!keep-me.txt\n');
      write(dir, 'ignored.txt', 'i');
      write(dir, 'sub/local.txt', 'l');
      write(dir, 'local.txt', 'l');
      write(dir, 'build/out.txt', 'b');
      write(dir, 'sub/deeper/local.txt', 'd');
      const out = text(await run(find(dir), { pattern: '*.txt' }));
      expect(sorted(out)).toEqual(['local.txt', 'sub/deeper/local.txt']);
    });

    it('directories get a trailing slash; "/" patterns match the full path; .git is left out', async () => {
      const dir = tempDir();
      write(dir, 'src/app/main.ts', 'm');
      write(dir, 'src/util.ts', 'u');
      write(dir, 'test/app/main.ts', 't');
      mkdirSync(path.join(dir, '.git'));
      write(dir, '.git/config.ts', 'g');
      const f = find(dir);
      expect(sorted(text(await run(f, { pattern: 'app' })))).toEqual(['src/app/', 'test/app/']);
      expect(
        text(await run(f, { pattern: 'src/**/*.ts' }))
          .split('\n')
          .sort(),
      ).toEqual(['src/app/main.ts', 'src/util.ts']);
      expect(sorted(text(await run(f, { pattern: '*.ts', path: 'src' })))).toEqual(['app/main.ts', 'util.ts']);
      expect(text(await run(f, { pattern: 'config.ts' }))).toBe('No files found matching pattern');
    });

    it('result limit notice', async () => {
      const dir = tempDir();
      for (let i = 0; i < 5; i++) write(dir, `f${i}.txt`, 'x');
      const result = await run<FindToolDetails | undefined>(find(dir), { pattern: '*.txt', limit: 3 });
      expect(text(result)).toMatch(
        /^(f\d\.txt\n){3}\n\[3 results limit reached\. Use limit=6 for more, or refine pattern\]$/,
      );
      expect(result.details).toEqual({ resultLimitReached: 3 });
    });

    it('does not descend into a symlink pointing outside the workspace', async () => {
      const outside = tempDir();
      write(outside, 'secret.txt', 's');
      const dir = tempDir();
      write(dir, 'inside.txt', 'i');
      symlinkSync(outside, path.join(dir, 'link'));
      expect(text(await run(find(dir), { pattern: '*.txt' }))).toBe('inside.txt');
    });
  });
}

describe('grep without rg: no pattern stalls the worker (issue 21 item 4)', () => {
  it('^(a+)+$ against a 40-character line: a clear error within 1 s while a 10 ms timer keeps ticking', async () => {
    const dir = tempDir();
    write(dir, 'src/evil.txt', `ok\n${'a'.repeat(39)}!\nok\n`);
    let ticks = 0;
    let widestGap = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      widestGap = Math.max(widestGap, now - last);
      last = now;
      ticks++;
    }, 10);
    const started = performance.now();
    let message: string;
    try {
      message = await errorOf(run(tools(dir, { useExternalSearch: false }).grep, { pattern: '^(a+)+$' }));
    } finally {
      clearInterval(timer);
    }
    const elapsed = performance.now() - started;
    console.info(
      `[grep budget] stopped after ${elapsed.toFixed(0)} ms; ${ticks} ticks, widest gap ${widestGap.toFixed(0)} ms`,
    );
    expect(message).toBe(
      'grep stopped: the pattern "^(a+)+$" took more than 500 ms on one line of src/evil.txt (it backtracks too much; nested quantifiers such as (a+)+ do). Simplify the pattern, or search with literal: true.',
    );
    expect(elapsed).toBeLessThan(1000);
    // the event loop went on: at a 10 ms interval, at least a third of the ticks it could have made
    expect(ticks).toBeGreaterThan(elapsed / 10 / 3);
  });

  it('a slow pattern stopped on one search leaves the next search unaffected; an abort stops the matching', async () => {
    const dir = tempDir();
    write(dir, 'a.txt', `${'a'.repeat(39)}!\n`);
    write(dir, 'b.txt', 'needle\n');
    const grep = tools(dir, { useExternalSearch: false }).grep;
    expect(await errorOf(run(grep, { pattern: '^(a+)+$', path: 'a.txt' }))).toMatch(/^grep stopped: /);
    expect(text(await run(grep, { pattern: 'needle' }))).toBe('b.txt:1: needle');
    const ac = new AbortController();
    const searching = errorOf(run(grep, { pattern: '^(a+)+$', path: 'a.txt' }, { signal: ac.signal }));
    setTimeout(() => ac.abort(), 50);
    expect(await searching).toBe('Operation aborted');
  });
});

describe('grep/find external requirement', () => {
  it('reports a missing rg / fd when external search is required', async () => {
    const dir = tempDir();
    const savedPath = process.env.PATH;
    const { findExecutable: fe } = await import('../../../activities/tools/builtin/search-common.js');
    // Only meaningful when they are absent; otherwise check the fallback is used when external search is off.
    if (!fe(['rg']))
      expect(await errorOf(run(tools(dir, { useExternalSearch: true }).grep, { pattern: 'x' }))).toBe(
        'ripgrep (rg) is not available and could not be downloaded',
      );
    if (!fe(['fd', 'fdfind']))
      expect(await errorOf(run(tools(dir, { useExternalSearch: true }).find, { pattern: 'x' }))).toBe(
        'fd is not available and could not be downloaded',
      );
    expect(process.env.PATH).toBe(savedPath);
  });
});

describe('ls (C.7)', () => {
  it('C.8-58 lists dotfiles and marks directories', async () => {
    const dir = tempDir();
    write(dir, '.hidden-file', 'x');
    mkdirSync(path.join(dir, '.hidden-dir'));
    const out = text(await run(tools(dir).ls, { path: dir }));
    expect(out).toContain('.hidden-file');
    expect(out).toContain('.hidden-dir/');
  });

  it('sorts case-insensitively, limits, and reports errors', async () => {
    const dir = tempDir();
    for (const n of ['b.txt', 'A.txt', 'c.txt']) write(dir, n, 'x');
    mkdirSync(path.join(dir, 'Dir'));
    symlinkSync(path.join(dir, 'nowhere'), path.join(dir, 'dangling'));
    const ls = tools(dir).ls;
    expect(text(await run(ls, {}))).toBe('A.txt\nb.txt\nc.txt\nDir/');
    expect(text(await run(ls, { limit: 2 }))).toBe('A.txt\nb.txt\n\n[2 entries limit reached. Use limit=4 for more]');
    expect(await errorOf(run(ls, { path: 'missing' }))).toBe(`Path not found: ${path.join(dir, 'missing')}`);
    expect(await errorOf(run(ls, { path: 'b.txt' }))).toBe(`Not a directory: ${path.join(dir, 'b.txt')}`);
    const empty = tempDir();
    expect(text(await run(tools(empty).ls, {}))).toBe('(empty directory)');
  });
});
