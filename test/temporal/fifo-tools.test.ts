/**
 * Issue 33 item 2: a FIFO planted by `bash` must not freeze the worker. `mkfifo p1 p2 p3 p4`, then `read p1`,
 * `write p2`, `read p3`, `write p4` in one parallel batch: on 0.6.2 each open blocked one of libuv's four pool threads
 * for good, and every later `fs` call and `dns.lookup` of the worker waited. Now each is refused as `Path "p1" is not
 * a regular file`, and right after, another run's `write`/`read` and a `dns.lookup('localhost')` in the worker's
 * process complete. The worker is a child process (real bwrap sandbox) so that the old code's frozen pool can be
 * killed; every wait is bounded, so the old code fails rather than hangs.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { AgentClient, type AgentRunHandle } from '../../client/agent-client.js';
import type { Script } from '../../activities/model/scripted.js';
import { killAllWorkers, spawnWorker } from './child-worker.js';
import { strip } from './harness.js';

const CHILD = fileURLToPath(new URL('./fixtures/builtin-worker.ts', import.meta.url));
/** Generous for a busy 2-core machine; the old code never settles at all. */
const BOUND_MS = 45_000;

const FIFO_CALLS = [
  { id: 'r1', name: 'read', arguments: { path: 'p1' } },
  { id: 'w2', name: 'write', arguments: { path: 'p2', content: 'two' } },
  { id: 'r3', name: 'read', arguments: { path: 'p3' } },
  { id: 'w4', name: 'write', arguments: { path: 'p4', content: 'four' } },
];

const SCRIPTS: Record<string, Script> = {
  fifo: {
    replies: [
      { toolCalls: [{ id: 'b1', name: 'bash', arguments: { command: 'mkfifo p1 p2 p3 p4' } }] },
      { toolCalls: FIFO_CALLS },
      { text: 'fifos handled' },
    ],
  },
  after: {
    replies: [
      { toolCalls: [{ id: 'w1', name: 'write', arguments: { path: 'after.txt', content: 'still served' } }] },
      { toolCalls: [{ id: 'r1', name: 'read', arguments: { path: 'after.txt' } }] },
      { text: 'after done' },
    ],
  },
  probe: { replies: [{ toolCalls: [{ id: 'p1', name: 'probe', arguments: {} }] }, { text: 'probed' }] },
};

/** The run's result, or a failure naming `what` after {@link BOUND_MS}. */
async function bounded(h: AgentRunHandle, what: string) {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: no result in ${BOUND_MS} ms (the worker is frozen)`)),
      BOUND_MS,
    );
  });
  try {
    return await Promise.race([h.result(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function toolResult(toolCallId: string, toolName: string, text: string, isError: boolean) {
  return { role: 'toolResult', toolCallId, toolName, content: [{ type: 'text', text }], details: {}, isError };
}

describe('a FIFO planted by bash (issue 33 item 2)', () => {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'keel-fifo-')));
  afterAll(() => {
    killAllWorkers();
    rmSync(ws, { recursive: true, force: true });
  });

  it('read/write of four FIFOs are refused as not regular files; then another run’s write/read and dns.lookup complete', async () => {
    const taskQueue = `fifo-${randomUUID()}`;
    const env: Record<string, string> = {
      KEEL_TASK_QUEUE: taskQueue,
      KEEL_CWD: ws,
      KEEL_SCRIPTS: JSON.stringify(SCRIPTS),
      KEEL_PROBE: '1',
    };
    delete process.env.UV_THREADPOOL_SIZE; // the child gets libuv's default pool of four threads
    await spawnWorker(CHILD, env);
    const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
    try {
      const tools = ['bash', 'read', 'write', 'probe'];
      const fifo = await bounded(await client.start({ model: 'scripted/fifo', prompt: 'plant', tools }), 'fifo run');
      expect(fifo.status).toBe('completed');
      expect(strip(fifo.newMessages)).toEqual([
        { role: 'user', content: [{ type: 'text', text: 'plant' }] },
        {
          role: 'assistant',
          content: [{ type: 'toolCall', id: 'b1', name: 'bash', arguments: { command: 'mkfifo p1 p2 p3 p4' } }],
          stopReason: 'toolUse',
        },
        { ...toolResult('b1', 'bash', '(no output)', false), details: undefined },
        {
          role: 'assistant',
          content: FIFO_CALLS.map((c) => ({ type: 'toolCall', ...c })),
          stopReason: 'toolUse',
        },
        toolResult('r1', 'read', 'Path "p1" is not a regular file', true),
        toolResult('w2', 'write', 'Path "p2" is not a regular file', true),
        toolResult('r3', 'read', 'Path "p3" is not a regular file', true),
        toolResult('w4', 'write', 'Path "p4" is not a regular file', true),
        { role: 'assistant', content: [{ type: 'text', text: 'fifos handled' }], stopReason: 'stop' },
      ]);

      const after = await bounded(await client.start({ model: 'scripted/after', prompt: 'go', tools }), 'after run');
      expect(after.status).toBe('completed');
      expect(strip(after.newMessages).filter((m) => (m as { role: string }).role === 'toolResult')).toEqual([
        { ...toolResult('w1', 'write', 'Successfully wrote 12 bytes to after.txt', false), details: undefined },
        { ...toolResult('r1', 'read', 'still served', false), details: undefined },
      ]);

      const probe = await bounded(await client.start({ model: 'scripted/probe', prompt: 'go', tools }), 'probe run');
      expect(strip(probe.newMessages).filter((m) => (m as { role: string }).role === 'toolResult')).toEqual([
        { ...toolResult('p1', 'probe', 'localhost is 127.0.0.1', false), details: undefined },
      ]);
    } finally {
      killAllWorkers();
      await client.close();
    }
  });
});
