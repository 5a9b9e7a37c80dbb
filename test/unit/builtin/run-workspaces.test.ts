/** The per-conversation directories (issue 21 item 2): names, layout, modes, and a root of another user refused. */
import { chownSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunWorkspaces, runDirName } from '../../../activities/tools/builtin/run-workspaces.js';
import { builtinTools } from '../../../activities/tools/builtin/index.js';
import { errorOf, isRoot, run, tempDir, text } from './helpers.js';

describe('RunWorkspaces', () => {
  it('names a directory after the workflow id (sanitised) and its hash: distinct ids, distinct names', () => {
    expect(runDirName('support-42')).toMatch(/^support-42-[0-9a-f]{16}$/);
    expect(runDirName('../../etc')).toMatch(/^\.\._\.\._etc-[0-9a-f]{16}$/);
    expect(runDirName('a/b')).not.toBe(runDirName('a_b'));
    expect(runDirName('x'.repeat(300)).length).toBe(48 + 1 + 16);
  });

  it('creates <root>/<name>/{workspace,tmp} (0700) and run.json (0600) once per workflow id', async () => {
    const root = path.join(tempDir(), 'runs');
    const ws = new RunWorkspaces({ root, sweepIntervalMs: 0 });
    const dirs = await ws.forRun('conv-1');
    expect(dirs).toEqual({
      workflowId: 'conv-1',
      dir: path.join(root, runDirName('conv-1')),
      workspace: path.join(root, runDirName('conv-1'), 'workspace'),
      tmpDir: path.join(root, runDirName('conv-1'), 'tmp'),
    });
    expect(await ws.forRun('conv-1')).toBe(dirs);
    expect(statSync(root).mode & 0o777).toBe(0o700);
    expect(statSync(dirs.workspace).mode & 0o777).toBe(0o700);
    expect(statSync(dirs.tmpDir).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(dirs.dir, 'run.json')).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(path.join(dirs.dir, 'run.json'), 'utf8'))).toEqual({ workflowId: 'conv-1' });
  });

  it('with a shared cwd, every run works there and only its tmp dir is its own', async () => {
    const shared = tempDir();
    const ws = new RunWorkspaces({ root: path.join(tempDir(), 'runs'), sweepIntervalMs: 0 }, shared);
    const [a, b] = [await ws.forRun('a'), await ws.forRun('b')];
    expect([a.workspace, b.workspace]).toEqual([shared, shared]);
    expect(a.tmpDir).not.toBe(b.tmpDir);
  });

  it.skipIf(!isRoot)('refuses a root that another user owns, saying what to do', async () => {
    const root = path.join(tempDir(), 'theirs');
    mkdirSync(root, { mode: 0o700 });
    chownSync(root, 65534, 65534);
    const ws = new RunWorkspaces({ root, sweepIntervalMs: 0 });
    await expect(ws.forRun('x')).rejects.toThrow(
      `Workspace root ${root} is not a directory owned by this worker's user (uid 0). ` +
        'Set KEEL_WORKSPACE_ROOT (or builtinTools({ workspaces: { root } })) to a directory of its own.',
    );
  });
});

describe('readOnlyPaths: a directory every run may read and none may write', () => {
  it('read, ls and grep use it; write and edit refuse it; the sandboxed bash reads it and cannot write it', async () => {
    const shared = tempDir('keel-shared-');
    writeFileSync(path.join(shared, 'doc.txt'), 'shared doc\n');
    const ws = tempDir();
    const tools = Object.fromEntries(
      builtinTools({
        cwd: ws,
        readOnlyPaths: [shared],
        workspaces: { root: path.join(tempDir(), 'runs'), sweepIntervalMs: 0 },
      }).map((t) => [t.name, t]),
    );
    const doc = path.join(shared, 'doc.txt');
    expect(text(await run(tools.read, { path: doc }))).toBe('shared doc\n');
    expect(text(await run(tools.ls, { path: shared }))).toBe('doc.txt');
    const outside = `Path "${path.join(shared, 'new.txt')}" is outside the workspace ${ws}. Use a path inside ${ws}.`;
    expect(await errorOf(run(tools.write, { path: path.join(shared, 'new.txt'), content: 'x' }))).toBe(outside);
    expect(await errorOf(run(tools.edit, { path: doc, edits: [{ oldText: 'shared', newText: 'changed' }] }))).toBe(
      `Path "${doc}" is outside the workspace ${ws}. Use a path inside ${ws}.`,
    );
    const out = await errorOf(run(tools.bash, { command: `cat ${doc}; echo x > ${shared}/new.txt` }));
    expect(out).toBe(
      `shared doc\n/bin/bash: line 2: ${shared}/new.txt: Read-only file system\n\n\nCommand exited with code 1`,
    );
    expect(existsSync(path.join(shared, 'new.txt'))).toBe(false);
    expect(readFileSync(doc, 'utf8')).toBe('shared doc\n');
  });
});
