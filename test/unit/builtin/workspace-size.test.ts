/**
 * Issue 33 item 4, the workspace size check: `builtinTools({ limits: { workspaceBytes } })` (`workspace-size.ts`).
 * A call that leaves the workspace over its limit gets a notice appended; `write` and `edit` are then refused with an
 * exact text, `bash` still runs (and is measured again after it), and once files are removed writing works again. The
 * measurement is a child process: the event loop serves other calls while it runs.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ToolDefinition } from '../../../activities/tools/define-tool.js';
import { builtinTools } from '../../../activities/tools/builtin/index.js';
import { createEditTool } from '../../../activities/tools/builtin/edit.js';
import { Workspace } from '../../../activities/tools/builtin/paths.js';
import { WorkspaceSize } from '../../../activities/tools/builtin/workspace-size.js';
import { createWriteTool } from '../../../activities/tools/builtin/write.js';
import { context, errorOf, run, tempDir, text, tools } from './helpers.js';

const MiB = 1024 * 1024;
const OVER_NOTICE =
  '[Workspace is over its size limit: 2.0MB of 1.0MB. Remove or shrink files with bash (rm, truncate); write and edit are refused until it is under the limit.]';
const REFUSAL =
  'Workspace is over its size limit: 2.0MB of 1.0MB. Remove or shrink files with bash (rm, truncate) to bring it under the limit; write and edit are refused until then.';

/** The built-in tools with a workspace per conversation (under a fresh root), held to `workspaceBytes`. */
function perConversation(workspaceBytes: number): Record<string, ToolDefinition> {
  const workspaces = { root: tempDir('keel-size-runs-'), sweepIntervalMs: 0 };
  return Object.fromEntries(builtinTools({ workspaces, limits: { workspaceBytes } }).map((t) => [t.name, t]));
}

describe('the workspace size limit', () => {
  it('a write that pushes the workspace over gets the notice; write and edit are refused until bash removes files', async () => {
    const t = perConversation(MiB);
    expect(text(await run(t.write, { path: 'small.txt', content: 'hello' }))).toBe(
      'Successfully wrote 5 bytes to small.txt',
    );
    expect(text(await run(t.write, { path: 'big.txt', content: 'x'.repeat(2 * MiB) }))).toBe(
      `Successfully wrote ${2 * MiB} bytes to big.txt\n\n${OVER_NOTICE}`,
    );
    expect(await errorOf(run(t.write, { path: 'more.txt', content: 'y' }))).toBe(REFUSAL);
    expect(
      await errorOf(run(t.edit, { path: 'small.txt', edits: [{ oldText: 'hello', newText: 'hello world' }] })),
    ).toBe(REFUSAL);
    // bash still runs while over: it is how files are removed
    expect(text(await run(t.bash, { command: 'rm big.txt' }))).toBe('(no output)');
    expect(text(await run(t.write, { path: 'more.txt', content: 'y' }))).toBe('Successfully wrote 1 bytes to more.txt');
    expect(text(await run(t.edit, { path: 'small.txt', edits: [{ oldText: 'hello', newText: 'hi' }] }))).toBe(
      'Successfully replaced 1 block(s) in small.txt.',
    );
  });

  it('a bash command that fills the workspace gets the notice, and truncating the file allows writing again', async () => {
    const t = perConversation(MiB);
    expect(text(await run(t.bash, { command: `head -c ${2 * MiB} /dev/zero > big.bin` }))).toBe(
      `(no output)\n\n${OVER_NOTICE}`,
    );
    expect(await errorOf(run(t.write, { path: 'a.txt', content: 'a' }))).toBe(REFUSAL);
    // a failing command is measured too, its error carries the notice
    expect(await errorOf(run(t.bash, { command: 'exit 3' }))).toBe(
      `(no output)\n\nCommand exited with code 3\n\n${OVER_NOTICE}`,
    );
    expect(text(await run(t.bash, { command: 'truncate -s 0 big.bin' }))).toBe('(no output)');
    expect(text(await run(t.write, { path: 'a.txt', content: 'a' }))).toBe('Successfully wrote 1 bytes to a.txt');
  });

  it('a shared cwd is held to workspaceBytes only when it is given, as one figure for every run', async () => {
    const unlimited = tools(tempDir('keel-size-shared-'));
    expect(text(await run(unlimited.write, { path: 'big.txt', content: 'x'.repeat(2 * MiB) }))).toBe(
      `Successfully wrote ${2 * MiB} bytes to big.txt`,
    );

    const cwd = tempDir('keel-size-shared-');
    const workspaces = { root: tempDir('keel-size-runs-'), sweepIntervalMs: 0 };
    const shared = Object.fromEntries(
      builtinTools({ cwd, workspaces, limits: { workspaceBytes: MiB } }).map((x) => [x.name, x]),
    );
    const call = (workflowId: string, args: unknown) =>
      shared.write.execute('call-1', args, new AbortController().signal, () => {}, { ...context, workflowId });
    expect(text(await call('run-a', { path: 'big.txt', content: 'x'.repeat(2 * MiB) }))).toBe(
      `Successfully wrote ${2 * MiB} bytes to big.txt\n\n${OVER_NOTICE}`,
    );
    expect(await errorOf(call('run-b', { path: 'other.txt', content: 'y' }))).toBe(REFUSAL);
  });

  it('the measurement runs in a child process: other calls are served while it is held, and it is bounded by a timeout', async () => {
    const dir = tempDir('keel-size-measure-');
    writeFileSync(path.join(dir, 'file.txt'), 'content\n');
    const gate = path.join(tempDir('keel-size-gate-'), 'gate');
    execFileSync('mkfifo', [gate]);
    // the measuring command waits for a line on the FIFO, then runs du
    const command = ['sh', '-c', 'read line < "$0"; exec du -sb --one-file-system "$1"', gate];
    const size = new WorkspaceSize(dir, { limitBytes: MiB, command });
    const measured = size.measure();
    // the loop is free: a read tool call on the same directory completes while du waits
    const t = tools(dir);
    expect(text(await run(t.read, { path: 'file.txt' }))).toBe('content\n');
    expect(size.bytes).toBeUndefined();
    await writeFile(gate, 'go\n');
    await measured;
    expect(size.bytes).toBeGreaterThanOrEqual(8);

    const warnings: string[] = [];
    const stuck = new WorkspaceSize(dir, {
      limitBytes: MiB,
      command: ['sh', '-c', 'read line < "$0"', gate],
      timeoutMs: 200,
      warn: (line) => warnings.push(line),
    });
    await stuck.measure();
    expect(stuck.bytes).toBeUndefined();
    expect(warnings).toEqual([
      `[keel] WARNING: the size of workspace ${dir} could not be measured (sh took longer than 200 ms); its size limit is not checked until a measurement succeeds.`,
    ]);
  });

  it('write and edit add their own change to the figure: the workspace is measured once, not per call', async () => {
    const dir = tempDir('keel-size-delta-');
    const count = path.join(tempDir('keel-size-count-'), 'count');
    // the measuring command notes each run, then runs du
    const command = ['sh', '-c', 'echo run >> "$0"; exec du -sb --one-file-system "$1"', count];
    const size = new WorkspaceSize(dir, { limitBytes: MiB, command });
    const workspace = new Workspace(dir);
    const write = createWriteTool({ workspace, size });
    const edit = createEditTool({ workspace, size });
    await run(write, { path: 'a.txt', content: 'x'.repeat(1000) });
    const first = size.bytes!;
    await run(write, { path: 'a.txt', content: 'x'.repeat(400) });
    expect(size.bytes).toBe(first - 600);
    await run(write, { path: 'd/b.txt', content: 'y'.repeat(50) });
    expect(size.bytes).toBe(first - 550);
    await run(edit, { path: 'd/b.txt', edits: [{ oldText: 'y'.repeat(50), newText: 'z' }] });
    expect(size.bytes).toBe(first - 599);
    expect(readFileSync(count, 'utf8')).toBe('run\n');
  });
});
