/**
 * Issue 10 items 3 and 10 (client and activity side): malformed `followUp`/`steer` messages and a non-string `cancel`
 * reason are refused by the client before anything is sent; a provider's malformed reply (a string
 * `usage.cost.total`) fails the model call at once as `ModelError.InvalidResponse`, never reaching the workflow; and a
 * run can start with messages already queued (signal-with-start).
 */
import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpdateRejectedError } from '../../client/agent-client.js';
import { scriptedModel } from '../../activities/model/scripted.js';
import type { ModelProvider } from '../../activities/model/provider.js';
import { allEvents, notation, startKeel, strip, until, workflowTaskFailures, type Keel } from './harness.js';
import { failuresOf } from './history-helpers.js';

const { EventType } = temporal.api.enums.v1;

describe('signals are validated by the client; provider output by the model activity; messages can be queued at start', () => {
  let keel: Keel;
  let badAttempts = 0;
  beforeAll(async () => {
    const scripted = scriptedModel({
      echo: {
        rules: [
          { match: 'second', text: 'answer two' },
          { match: 'hurry', text: 'hurrying' },
          { text: 'answer one', chunkDelayMs: 0 },
        ],
      },
      slow: { rules: [{ text: 'a slow reply that streams for a while', chunkDelayMs: 200 }] },
    });
    const badCost: ModelProvider = {
      async stream(request, signal, onPartial) {
        badAttempts++;
        const message = await scripted.stream({ ...request, modelId: 'echo' }, signal, onPartial);
        return {
          ...message,
          usage: { ...message.usage, cost: { ...message.usage.cost, total: '0.25' as unknown as number } },
        };
      },
    };
    keel = await startKeel({ models: { scripted, bad: badCost } });
  });
  afterAll(() => keel?.stop());

  it('followUp({ role: "user", content: [null] }), a malformed steer and cancel(5) are refused with exact texts; nothing is accepted', async () => {
    const h = await keel.start({ model: 'scripted/slow', prompt: 'go', mode: 'session' });
    const refusals = await Promise.all([
      h.followUp({ role: 'user', content: [null] } as never).catch((e: unknown) => e),
      h.steer([{ role: 'user', content: [{ type: 'text' }] }, 42] as never).catch((e: unknown) => e),
      h.cancel(5 as never).catch((e: unknown) => e),
    ]);
    // the handle sends Updates: their validators refuse, and a refused Update leaves no trace in history
    expect(refusals.every((e) => e instanceof UpdateRejectedError)).toBe(true);
    expect(refusals.map((e) => (e as Error).message)).toEqual([
      'followUp.content: must be text or a list of text and image blocks',
      'steer.0.content.0.text: is required; steer.1: must be text or a user message { role: "user", content }',
      'cancel: the reason must be text, got 5',
    ]);
    await until(async () => (await h.state()).status === 'waiting', 20_000, 'the first agent run');
    await h.end();
    await h.result();
    const history = await h.workflow.fetchHistory();
    const accepted = history
      .events!.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED)
      .map((e) => e.workflowExecutionUpdateAcceptedEventAttributes!.acceptedRequest!.input!.name);
    expect(accepted).toEqual(['end']);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('a provider reply whose usage.cost.total is a string fails the model call once, non-retryably, naming the field', async () => {
    const h = await keel.start({ model: 'bad/any', prompt: 'hi' });
    await h.result().catch(() => undefined);
    expect(badAttempts).toBe(1);
    expect(await failuresOf(h)).toEqual({
      activities: [
        [
          'The model provider returned an invalid assistant message: usage.cost.total: must be number',
          'ModelError.InvalidResponse',
          true,
        ],
      ],
      workflowTasksFailed: 0,
    });
  });

  it('start(input, { followUp }) queues the follow-up with the start: answered after the prompt, in one task run', async () => {
    const h = await keel.client.start(
      { model: 'scripted/echo', prompt: 'first' },
      { workflowId: `sws-${randomUUID()}`, followUp: ['the second question'] },
    );
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'first' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'answer one' }], stopReason: 'stop' },
      { role: 'user', content: [{ type: 'text', text: 'the second question' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'answer two' }], stopReason: 'stop' },
    ]);
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:first)',
      'ME(u:first)',
      'MS(a)',
      'ME(a)',
      'TE()',
      'TS',
      'MS(u:the second question)',
      'ME(u:the second question)',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
  });

  it('start(input, { steer }) queues the steering message with the start: it follows the prompt, before the first model call (Pi)', async () => {
    const h = await keel.client.start(
      { model: 'scripted/echo', prompt: 'first' },
      { workflowId: `sws-${randomUUID()}`, steer: 'hurry up' },
    );
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'first' }] },
      { role: 'user', content: [{ type: 'text', text: 'hurry up' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'hurrying' }], stopReason: 'stop' },
    ]);
  });

  it('start(input, { followUp }) validates the queued messages, and refuses followUp together with steer', async () => {
    const bad = await keel.client
      .start({ model: 'scripted/echo', prompt: 'x' }, { followUp: [{ role: 'user' } as never] })
      .catch((e: unknown) => e);
    expect((bad as Error).message).toBe('Invalid followUp: followUp.0.content: is required');
    const both = await keel.client
      .start({ model: 'scripted/echo', prompt: 'x' }, { followUp: 'a', steer: 'b' })
      .catch((e: unknown) => e);
    expect((both as Error).message).toBe(
      'Invalid start: followUp and steer: give one of them (signal-with-start carries one signal)',
    );
  });
});
