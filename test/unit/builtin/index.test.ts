import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { withFileMutationQueue } from '../../../activities/tools/builtin/file-mutation-queue.js';
import { builtinTools, DEFAULT_ACTIVE_TOOLS } from '../../../activities/tools/builtin/index.js';
import { formatSize, truncateHead, truncateLine, truncateTail } from '../../../activities/tools/builtin/truncate.js';
import { run, tempDir, tools } from './helpers.js';

describe('builtinTools', () => {
  it('returns the seven tools with Pi argument names and durability flags', () => {
    const list = builtinTools({ cwd: tempDir() });
    expect(list.map((t) => t.name)).toEqual(['read', 'bash', 'edit', 'write', 'grep', 'find', 'ls']);
    const byName = Object.fromEntries(list.map((t) => [t.name, t]));
    const props = (name: string) => Object.keys((byName[name].parameters as { properties: object }).properties);
    expect(props('read')).toEqual(['path', 'offset', 'limit']);
    expect(props('bash')).toEqual(['command', 'timeout']);
    expect(props('edit')).toEqual(['path', 'edits']);
    expect(props('write')).toEqual(['path', 'content']);
    expect(props('grep')).toEqual(['pattern', 'path', 'glob', 'ignoreCase', 'literal', 'context', 'limit']);
    expect(props('find')).toEqual(['pattern', 'path', 'limit']);
    expect(props('ls')).toEqual(['path', 'limit']);
    expect(Object.fromEntries(list.map((t) => [t.name, t.idempotent]))).toEqual({
      read: true,
      bash: false,
      edit: false,
      write: true,
      grep: true,
      find: true,
      ls: true,
    });
    expect(byName.bash.executionMode).toBeUndefined();
    expect(DEFAULT_ACTIVE_TOOLS).toEqual(['read', 'bash', 'edit', 'write']);
  });

  it('sends the model the same JSON Schemas as before they were TypeBox schemas', () => {
    const expected = JSON.parse(readFileSync(new URL('fixtures/tool-parameters.json', import.meta.url), 'utf8'));
    const sent = Object.fromEntries(builtinTools({ cwd: tempDir() }).map((t) => [t.name, t.parameters]));
    expect(JSON.parse(JSON.stringify(sent))).toStrictEqual(expected);
  });

  it('bash, write and edit take an approval option; off by default', () => {
    const approvalOf = (list: ReturnType<typeof builtinTools>) =>
      Object.fromEntries(list.map((t) => [t.name, t.approval]));
    expect(Object.values(approvalOf(builtinTools({ cwd: tempDir() })))).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    const onlyProd = (args: unknown) => JSON.stringify(args).includes('prod');
    expect(approvalOf(builtinTools({ cwd: tempDir(), approval: { bash: 'always', write: onlyProd } }))).toEqual({
      read: undefined,
      bash: 'always',
      edit: undefined,
      write: onlyProd,
      grep: undefined,
      find: undefined,
      ls: undefined,
    });
  });

  it('summaries for the Temporal UI', () => {
    const t = tools(tempDir());
    expect(t.read.summary!({ path: 'src/app.ts' })).toBe('read src/app.ts');
    expect(t.bash.summary!({ command: 'npm test\necho done' })).toBe('bash npm test');
    const long = t.bash.summary!({ command: 'x'.repeat(200) });
    expect(long).toBe(`bash ${'x'.repeat(79)}…`);
    expect(t.edit.summary!({ path: 'src/x.ts', edits: [{}, {}] })).toBe('edit src/x.ts (2 edits)');
    expect(t.edit.summary!({ path: 'src/x.ts', edits: [{}] })).toBe('edit src/x.ts (1 edit)');
    expect(t.write.summary!({ path: 'out.txt', content: '' })).toBe('write out.txt');
    expect(t.grep.summary!({ pattern: 'TODO', path: 'src' })).toBe('grep TODO in src');
    expect(t.grep.summary!({ pattern: 'TODO' })).toBe('grep TODO in .');
    expect(t.find.summary!({ pattern: '*.ts' })).toBe('find *.ts');
    expect(t.ls.summary!({ path: 'src' })).toBe('ls src');
    expect(t.ls.summary!({})).toBe('ls .');
    // Must not throw on malformed arguments.
    for (const tool of Object.values(t)) expect(() => tool.summary!(undefined as never)).not.toThrow();
  });

  it('write and edit on one path are serialised', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'f.txt');
    writeFileSync(file, Array.from({ length: 20 }, (_, i) => `item-${i}-end`).join('\n'));
    const t = tools(dir);
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        run(t.edit, { path: i % 2 ? file : 'f.txt', edits: [{ oldText: `item-${i}-end`, newText: `ITEM-${i}` }] }),
      ),
    );
    expect(readFileSync(file, 'utf-8')).toBe(Array.from({ length: 20 }, (_, i) => `ITEM-${i}`).join('\n'));
  });

  it('the mutation queue runs one task per path at a time and different paths concurrently', async () => {
    const events: string[] = [];
    const task = (key: string, id: string, ms: number) =>
      withFileMutationQueue(key, async () => {
        events.push(`start ${id}`);
        await new Promise((r) => setTimeout(r, ms));
        events.push(`end ${id}`);
        return id;
      });
    const results = await Promise.all([task('/a', 'a1', 30), task('/a', 'a2', 1), task('/b', 'b1', 5)]);
    expect(results).toEqual(['a1', 'a2', 'b1']);
    expect(events.indexOf('end a1')).toBeLessThan(events.indexOf('start a2'));
    expect(events.indexOf('start b1')).toBeLessThan(events.indexOf('end a1'));
    // A failing task does not block the next one.
    await expect(withFileMutationQueue('/c', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await withFileMutationQueue('/c', async () => 'ok')).toBe('ok');
  });
});

describe('truncation (C.0)', () => {
  it('formatSize', () => {
    expect(formatSize(0)).toBe('0B');
    expect(formatSize(1023)).toBe('1023B');
    expect(formatSize(1024)).toBe('1.0KB');
    expect(formatSize(51200)).toBe('50.0KB');
    expect(formatSize(1024 * 1024)).toBe('1.0MB');
    expect(formatSize(1.5 * 1024 * 1024)).toBe('1.5MB');
  });

  it('head truncation', () => {
    expect(truncateHead('a\nb\n')).toMatchObject({
      content: 'a\nb\n',
      truncated: false,
      truncatedBy: null,
      totalLines: 2,
    });
    expect(truncateHead('a\nb\nc\nd', { maxLines: 2 })).toMatchObject({
      content: 'a\nb',
      truncated: true,
      truncatedBy: 'lines',
      outputLines: 2,
      outputBytes: 3,
    });
    expect(truncateHead('aaaa\nbbbb\ncccc', { maxBytes: 10 })).toMatchObject({
      content: 'aaaa\nbbbb',
      truncatedBy: 'bytes',
      outputLines: 2,
    });
    expect(truncateHead('toolong\nx', { maxBytes: 5 })).toMatchObject({
      content: '',
      firstLineExceedsLimit: true,
      truncatedBy: 'bytes',
      outputLines: 0,
    });
  });

  it('tail truncation, including a partial last line at a character boundary', () => {
    expect(truncateTail('a\nb\nc\nd\n', { maxLines: 2 })).toMatchObject({
      content: 'c\nd',
      truncatedBy: 'lines',
      totalLines: 4,
      outputLines: 2,
    });
    expect(truncateTail('aaaa\nbbbb\ncccc', { maxBytes: 10 })).toMatchObject({
      content: 'bbbb\ncccc',
      truncatedBy: 'bytes',
    });
    const r = truncateTail('x\n€€€€', { maxBytes: 7 });
    expect(r).toMatchObject({ content: '€€', lastLinePartial: true, truncatedBy: 'bytes', outputBytes: 6 });
  });

  it('grep line cap', () => {
    expect(truncateLine('x'.repeat(500))).toEqual({ text: 'x'.repeat(500), wasTruncated: false });
    expect(truncateLine('x'.repeat(501))).toEqual({ text: `${'x'.repeat(500)}... [truncated]`, wasTruncated: true });
  });
});
