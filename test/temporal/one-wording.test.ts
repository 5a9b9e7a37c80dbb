/**
 * Issue 22 item 2: a malformed message is refused with one wording wherever it enters. The same entry, sent as the
 * only element of a list, is refused by the client (signal-with-start and the run input), by the `followUp` Update's
 * validator, by the `startRun` activity (the run input started straight through Temporal), and dropped by the
 * `followUp` signal with a warning in the worker's log; every text is `<where>.0<path>: <problem>`, `<where>` the
 * field that carried it (`followUp`, `prompt`). The dropped entry is not queued.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  InvalidAgentInputError,
  InvalidSignalError,
  UpdateRejectedError,
  type AgentRunHandle,
} from '../../client/agent-client.js';
import { startKeel, until, workflowTaskFailures, type Keel } from './harness.js';

/** Every SDK log line of this file's worker (the workflow's `log.warn` among them), captured before the harness's. */
const logged: LogEntry[] = [];
Runtime.install({ logger: new DefaultLogger('WARN', (entry) => void logged.push(entry)) });

/** An entry, and what is wrong with it after its label (`followUp.0`, `prompt.0`). */
const MALFORMED: [string, unknown, string][] = [
  ['a number', 42, ': must be text or a user message { role: "user", content }'],
  ['null', null, ': must be text or a user message { role: "user", content }'],
  ['an assistant message', { role: 'assistant', content: 'x' }, '.role: must be "user"'],
  ['a user message without content', { role: 'user' }, '.content: is required'],
  [
    'content that is neither text nor blocks',
    { role: 'user', content: 7 },
    '.content: must be text or a list of text and image blocks',
  ],
  ['a null block', { role: 'user', content: [null] }, '.content: must be text or a list of text and image blocks'],
  ['a text block without text', { role: 'user', content: [{ type: 'text' }] }, '.content.0.text: is required'],
  [
    'an image block without mimeType',
    { role: 'user', content: [{ type: 'image', data: 'AA==' }] },
    '.content.0.mimeType: is required',
  ],
  [
    'a thinking block',
    { role: 'user', content: [{ type: 'thinking', thinking: 'x' }] },
    '.content.0.type: must be one of "text", "image"',
  ],
  ['a timestamp that is not a number', { role: 'user', content: 'x', timestamp: 'now' }, '.timestamp: must be number'],
];

describe('a malformed message is refused with one wording wherever it enters', () => {
  let keel: Keel;
  let session: AgentRunHandle;
  beforeAll(async () => {
    keel = await startKeel({ scripts: { ok: { rules: [{ text: 'ok' }] } } });
    session = await keel.start({ model: 'scripted/ok', prompt: 'hi', mode: 'session' });
    await until(async () => (await session.state()).status === 'waiting', 20_000, 'the first agent run');
  });
  afterAll(async () => {
    await session?.end().catch(() => undefined);
    await keel?.stop();
  });

  it.each(MALFORMED)('%s', async (_, entry, problem) => {
    const followUp = `followUp.0${problem}`;
    const prompt = `prompt.0${problem}`;

    // the client, before anything is sent: signal-with-start, and the run input
    const atStart = await keel.client
      .start({ model: 'scripted/ok', prompt: 'x' }, { followUp: [entry as never] })
      .catch((e: unknown) => e);
    expect(atStart).toBeInstanceOf(InvalidSignalError);
    expect((atStart as InvalidSignalError).message).toBe(`Invalid followUp: ${followUp}`);
    const asPrompt = await keel.client.start({ model: 'scripted/ok', prompt: [entry as never] }).catch((e) => e);
    expect(asPrompt).toBeInstanceOf(InvalidAgentInputError);
    expect((asPrompt as InvalidAgentInputError).errors).toEqual([prompt]);

    // the Update's validator
    const refused = await session.followUp([entry as never]).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(UpdateRejectedError);
    expect((refused as UpdateRejectedError).message).toBe(followUp);

    // the run input started straight through Temporal: the startRun activity
    const raw = await keel.client.client.workflow.start('agentWorkflow', {
      taskQueue: keel.taskQueue,
      workflowId: `one-wording-${randomUUID()}`,
      args: [{ model: 'scripted/ok', prompt: [entry] }],
    });
    const failed = await raw.result().catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(WorkflowFailedError);
    const cause = (failed as WorkflowFailedError).cause as ApplicationFailure;
    expect([cause.type, cause.message]).toEqual(['InvalidAgentInput', `Invalid AgentRunInput: ${prompt}`]);

    // the signal: dropped, with the same text in the worker's log, and not queued
    const before = await session.state();
    await session.workflow.signal('followUp', [entry]);
    const dropped = await vi.waitFor(
      () => {
        const line = logged.find(
          (e) => e.meta?.workflowId === session.workflowId && e.message.endsWith(followUp) && e.level === 'WARN',
        );
        if (!line) throw new Error('no log line yet');
        return line;
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(dropped.message).toBe(`Keel dropped a malformed message: ${followUp}`);
    const after = await session.state();
    expect([after.status, after.queued, after.messageCount, after.runs]).toEqual([
      'waiting',
      { steering: 0, followUp: 0 },
      before.messageCount,
      before.runs,
    ]);
    expect(await workflowTaskFailures(session)).toEqual([]);
  });
});
