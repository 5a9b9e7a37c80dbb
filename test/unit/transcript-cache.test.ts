/** docs/architecture.md#history-stays-linear: activities read the transcript by reference; the worker cache fetches only what it misses, within a byte budget. */
import { describe, expect, it } from 'vitest';
import { TranscriptCache, type TranscriptSource } from '../../activities/transcript.js';
import type { Message } from '../../common/messages.js';
import { prefixDigests } from '../../common/transcript-digest.js';

const msg = (text: string): Message => ({ role: 'user', content: text, timestamp: 0 });

function fakeSource(transcripts: Record<string, Message[]>) {
  const reads: string[] = [];
  const source: TranscriptSource = {
    async read(workflowId, from, limit) {
      reads.push(`${workflowId}:${from}+${limit}`);
      const all = transcripts[workflowId];
      return { messages: all.slice(from, from + Math.min(limit, 2)), from, total: all.length }; // pages of at most 2
    },
  };
  return { source, reads };
}

describe('transcript cache', () => {
  const run = (id: string) => ({ workflowId: id, runKey: 'r1' });

  it('fetches only the messages added since the last read, paging until it has them', async () => {
    const t = [msg('a'), msg('b'), msg('c'), msg('d'), msg('e')];
    const { source, reads } = fakeSource({ w: t });
    const cache = new TranscriptCache(source);
    expect(await cache.messages(run('w'), 3)).toEqual(t.slice(0, 3));
    expect(await cache.messages(run('w'), 5)).toEqual(t);
    expect(await cache.message(run('w'), 1)).toEqual(t[1]);
    expect(reads).toEqual(['w:0+3', 'w:2+1', 'w:3+2']);
  });

  it('evicts the least recently used runs beyond its byte budget', async () => {
    const big = (id: string) => [msg(id.repeat(100))];
    const { source, reads } = fakeSource({ a: big('a'), b: big('b'), c: big('c') });
    const one = JSON.stringify(big('a')[0]).length;
    const cache = new TranscriptCache(source, 2 * one);
    await cache.messages(run('a'), 1);
    await cache.messages(run('b'), 1);
    await cache.messages(run('a'), 1); // a is now the most recent
    await cache.messages(run('c'), 1); // evicts b
    expect(cache.stats).toEqual({ runs: 2, chars: 2 * one, queries: 3 });
    await cache.messages(run('a'), 1);
    await cache.messages(run('b'), 1);
    expect(reads).toEqual(['a:0+1', 'b:0+1', 'c:0+1', 'b:0+1']);
  });

  it('fails clearly when the workflow has fewer messages than asked for', async () => {
    const { source } = fakeSource({ w: [msg('a')] });
    await expect(new TranscriptCache(source).messages(run('w'), 3)).rejects.toThrow(
      'transcript of w has 1 messages, expected at least 3',
    );
  });

  it('serves what this worker produced without a query once the workflow digest confirms it', async () => {
    const t = [msg('prompt'), msg('reply'), msg('result')];
    const d = prefixDigests(t);
    const { source, reads } = fakeSource({ w: t });
    const cache = new TranscriptCache(source);
    await cache.messages(run('w'), 1, d[1]); // the model call reads the prompt
    cache.remember(run('w'), 1, t[1]); // … and remembers its reply
    expect(await cache.message(run('w'), 1, d[2])).toEqual(t[1]); // the tool activity finds it
    cache.remember(run('w'), 2, t[2]); // … and remembers its result
    expect(await cache.messages(run('w'), 3, d[3])).toEqual(t); // the next model call finds everything
    expect(reads).toEqual(['w:0+1']);
  });

  it('drops a remembered message the workflow did not record (a lost attempt) and reads the real one', async () => {
    const t = [msg('prompt'), { ...msg('reply'), timestamp: 2 }];
    const { source, reads } = fakeSource({ w: t });
    const cache = new TranscriptCache(source);
    await cache.messages(run('w'), 1, prefixDigests(t)[1]);
    cache.remember(run('w'), 1, { ...msg('reply'), timestamp: 1 }); // this worker's attempt, whose completion was lost
    expect(await cache.message(run('w'), 1, prefixDigests(t)[2])).toEqual(t[1]);
    expect(reads).toEqual(['w:0+1', 'w:1+1']);
  });

  it('ignores a remembered message that would leave a gap', async () => {
    const t = [msg('a'), msg('b'), msg('c')];
    const { source, reads } = fakeSource({ w: t });
    const cache = new TranscriptCache(source);
    await cache.messages(run('w'), 1);
    cache.remember(run('w'), 2, t[2]);
    expect(await cache.messages(run('w'), 3, prefixDigests(t)[3])).toEqual(t);
    expect(reads).toEqual(['w:0+1', 'w:1+2']);
  });

  it('takes the tail of an input onto a copy that has the messages before it, without a query (0.8.0)', async () => {
    const t = [msg('prompt'), msg('reply'), msg('result'), msg('steer')];
    const d = prefixDigests(t);
    const { source, reads } = fakeSource({ w: t });
    const cache = new TranscriptCache(source);
    expect(await cache.messages(run('w'), 1, d[1], [t[0]])).toEqual([t[0]]); // the first call: the prompt is the tail
    cache.remember(run('w'), 1, t[1]); // its reply; the tool ran on another worker
    expect(await cache.messages(run('w'), 4, d[4], t.slice(2))).toEqual(t);
    expect(reads).toEqual([]);
    expect(cache.stats.queries).toBe(0);
  });

  it('reads by reference when the tail does not fit the copy (a gap before it, or another digest)', async () => {
    const t = [msg('prompt'), msg('reply'), msg('result')];
    const d = prefixDigests(t);
    const { source, reads } = fakeSource({ w: t });
    const gap = new TranscriptCache(source);
    expect(await gap.messages(run('w'), 3, d[3], [t[2]])).toEqual(t); // has nothing before the tail
    const other = new TranscriptCache(source);
    await other.messages(run('w'), 1, d[1], [t[0]]);
    other.remember(run('w'), 1, { ...msg('reply'), timestamp: 1 }); // an attempt the workflow did not record
    expect(await other.messages(run('w'), 3, d[3], [t[2]])).toEqual(t);
    expect(reads).toEqual(['w:0+3', 'w:2+1', 'w:1+2']); // pages of at most 2
  });

  it('says whether it holds a message without querying', async () => {
    const t = [msg('prompt'), msg('reply')];
    const d = prefixDigests(t);
    const { source, reads } = fakeSource({ w: t });
    const cache = new TranscriptCache(source);
    expect(cache.held(run('w'), 1, d[2])).toBeUndefined();
    await cache.messages(run('w'), 1, d[1], [t[0]]);
    cache.remember(run('w'), 1, t[1]);
    expect(cache.held(run('w'), 1, d[2])).toEqual(t[1]);
    expect(cache.held(run('w'), 1, d[1])).toBeUndefined(); // another digest
    expect(reads).toEqual([]);
  });

  it("drops a run's copy once it has been unused for longer than the idle time (a finished run's)", async () => {
    const { source, reads } = fakeSource({ a: [msg('a')], b: [msg('b')] });
    let now = 0;
    const cache = new TranscriptCache(source, 1024 * 1024, { ms: 1000, now: () => now });
    await cache.messages(run('a'), 1);
    now = 600;
    await cache.messages(run('b'), 1);
    now = 1500; // a unused for 1500 ms, b for 900
    await cache.messages(run('b'), 1);
    expect(cache.stats.runs).toBe(1);
    await cache.messages(run('a'), 1);
    expect(reads).toEqual(['a:0+1', 'b:0+1', 'a:0+1']);
  });
});
