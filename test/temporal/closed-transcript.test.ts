/**
 * A closed run's transcript comes from its result (client/read-transcript.ts): a query on a closed run replays its
 * whole history on a worker once per page — for a long run carried by reference, minutes of a worker's CPU — while the
 * result already holds the run's messages and, from 0.11.0, where they start (`newMessagesFrom`).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message } from '../../common/messages.js';
import { startKeel, strip, type Keel } from './harness.js';

const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));

const priorUser = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }], timestamp: 1 });

describe("a closed run's transcript is read from its result", () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({
      scripts: {
        hello: { replies: [{ text: 'hi there' }] },
        broken: { rules: [{ text: 'no', stopReason: 'error', errorMessage: 'scripted failure' }] },
      },
    });
  });
  afterAll(() => keel?.stop());

  it('the given messages by query, its own from the result: the same transcript the open run had', async () => {
    const h = await keel.start({ model: 'scripted/hello', messages: [priorUser('earlier')], prompt: 'hello' });
    const r = await h.result();
    expect(r.newMessagesFrom).toBe(1);
    expect(strip(await h.allMessages())).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'earlier' }] },
      { role: 'user', content: [{ type: 'text', text: 'hello' }] },
      expect.objectContaining({ role: 'assistant', content: [{ type: 'text', text: 'hi there' }] }),
    ]);
  });

  it('with every worker stopped: a completed and a failed run still give their whole transcript (no query)', async () => {
    const done = await keel.start({ model: 'scripted/hello', prompt: 'hello' });
    const failed = await keel.start({ model: 'scripted/broken', prompt: 'break' });
    expect((await done.result()).newMessagesFrom).toBe(0);
    expect((await failed.result()).status).toBe('failed'); // the workflow failed (AgentRunFailed) carrying its result
    await keel.worker.shutdown();
    // a query would wait for a worker that never comes
    expect(strip(await done.allMessages()).map((m) => (m as Message).role)).toEqual(['user', 'assistant']);
    const broken = await failed.allMessages();
    expect(broken.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(broken[1]).toMatchObject({ stopReason: 'error', errorMessage: 'scripted failure' });
    // `keel transcript` too: the whole transcript, without the "no worker answered" note
    const cli = await promisify(execFile)(
      process.execPath,
      [BIN, '--address', keel.address, 'transcript', done.workflowId, '--format', 'json'],
      { env: { ...process.env, NO_COLOR: '1' } },
    );
    expect(cli.stderr).not.toContain('no worker answered');
    expect(strip(JSON.parse(cli.stdout) as Message[])).toEqual(strip(await done.allMessages()));
  });
});
