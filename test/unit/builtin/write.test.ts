import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorOf, run, tempDir, text, tools } from './helpers.js';

describe('write (C.4)', () => {
  it('C.8-13 writes the file and reports UTF-16 length', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'write-test.txt');
    const result = await run(tools(dir).write, { path: file, content: 'Test content' });
    expect(text(result)).toBe(`Successfully wrote 12 bytes to ${file}`);
    expect(result.details).toBeUndefined();
    expect(readFileSync(file, 'utf-8')).toBe('Test content');
  });

  it('C.8-14 creates nested parent directories', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'nested', 'dir', 'test.txt');
    const result = await run(tools(dir).write, { path: file, content: 'Nested content' });
    expect(text(result)).toContain('Successfully wrote');
    expect(readFileSync(file, 'utf-8')).toBe('Nested content');
  });

  it('length is counted in UTF-16 units, not bytes', async () => {
    const dir = tempDir();
    const result = await run(tools(dir).write, { path: 'e.txt', content: '€😀' });
    expect(text(result)).toBe('Successfully wrote 3 bytes to e.txt');
    expect(readFileSync(path.join(dir, 'e.txt'))).toHaveLength(7);
  });

  it('rejects with Operation aborted when already aborted and writes nothing', async () => {
    const dir = tempDir();
    const ac = new AbortController();
    ac.abort();
    expect(await errorOf(run(tools(dir).write, { path: 'a.txt', content: 'x' }, { signal: ac.signal }))).toBe(
      'Operation aborted',
    );
    expect(existsSync(path.join(dir, 'a.txt'))).toBe(false);
  });
});
