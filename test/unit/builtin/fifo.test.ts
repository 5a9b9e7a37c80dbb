/**
 * Issue 33 item 2, tool by tool: a FIFO in the workspace is never opened in a way that waits (each wait would hold
 * one of libuv's four pool threads for good). The file tools refuse it with `Path "<path>" is not a regular file`;
 * `grep` and `find` (the Node search, which opens ignore files and searched files in the worker) skip FIFOs they meet
 * and refuse one given as the path; `ls` lists it. Every call is bounded, so the old code fails instead of hanging.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorOf, run, tempDir, text, tools } from './helpers.js';

/** `promise`, or a rejection after 10 s: a call that waits on a FIFO never settles. */
function bounded<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('waited on a FIFO')), 10_000);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A workspace holding `a.txt` (needle) and the FIFOs `p1`, `.ignore` and `.gitignore`, in a git work tree. */
function workspaceWithFifos(): string {
  const dir = tempDir('keel-fifo-');
  writeFileSync(path.join(dir, 'a.txt'), 'needle\n');
  execFileSync('mkfifo', ['p1', '.ignore', '.gitignore'], { cwd: dir });
  execFileSync('mkdir', ['.git'], { cwd: dir });
  return dir;
}

describe('FIFOs in the workspace (issue 33 item 2)', () => {
  it('read, write and edit of a FIFO: Path "p1" is not a regular file', async () => {
    const dir = workspaceWithFifos();
    const t = tools(dir, { useExternalSearch: false });
    expect(await bounded(errorOf(run(t.read, { path: 'p1' })))).toBe('Path "p1" is not a regular file');
    expect(await bounded(errorOf(run(t.write, { path: 'p1', content: 'x' })))).toBe('Path "p1" is not a regular file');
    expect(await bounded(errorOf(run(t.edit, { path: 'p1', edits: [{ oldText: 'a', newText: 'b' }] })))).toBe(
      'Path "p1" is not a regular file',
    );
  });

  it('read of a directory: not a regular file either', async () => {
    const dir = workspaceWithFifos();
    const t = tools(dir, { useExternalSearch: false });
    expect(await bounded(errorOf(run(t.read, { path: '.git' })))).toBe('Path ".git" is not a regular file');
  });

  it('grep (Node search) skips the FIFOs it meets, ignore files included, and refuses a FIFO as its path', async () => {
    const dir = workspaceWithFifos();
    const t = tools(dir, { useExternalSearch: false });
    expect(text(await bounded(run(t.grep, { pattern: 'needle' })))).toBe('a.txt:1: needle');
    expect(await bounded(errorOf(run(t.grep, { pattern: 'needle', path: 'p1' })))).toBe(
      'Path "p1" is not a regular file',
    );
  });

  it('find (Node search) skips FIFO ignore files; ls lists the FIFOs', async () => {
    const dir = workspaceWithFifos();
    const t = tools(dir, { useExternalSearch: false });
    expect(text(await bounded(run(t.find, { pattern: '*.txt' })))).toBe('a.txt');
    expect(text(await bounded(run(t.ls, {})))).toBe(['.git/', '.gitignore', '.ignore', 'a.txt', 'p1'].join('\n'));
  });
});
