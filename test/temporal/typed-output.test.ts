/**
 * Typed final results (docs/runs.md "Typed results", issue 37 item 1): at the scale (100 runs, 30 % invalid
 * first answers) a run given `output` completes only with a final answer valid against it (the result's `output`); an
 * invalid answer is sent back with the validation errors (exact texts) up to `outputRepairs` times, then the run fails
 * with `InvalidAgentOutput`. The output and the repair count survive continue-as-new and a killed worker; a session
 * checks each agent run; the json-schema grader and `keel batch` result lines read the typed output; a run without
 * `output` runs no check at all.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowFailedError } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, expectTypeOf, inject, it } from 'vitest';
import { AgentClient, InvalidAgentOutputError } from '../../client/agent-client.js';
import { ErrorType } from '../../common/errors.js';
import type { BatchTask } from '../../common/grading.js';
import type { AgentRunInput } from '../../common/run.js';
import { messageText } from '../../common/messages.js';
import { finalAnswerInvalid, finalAnswerNotJson, invalidAgentOutput } from '../../common/typed-output.js';
import { resultLine } from '../../cli/batch/results.js';
import { killAllWorkers, killWorker, spawnWorker } from './child-worker.js';
import { chainHistories, historyText, startKeel, strip, until, type Keel } from './harness.js';

const Answer = Type.Object({ n: Type.Number(), label: Type.String() });
const REPAIR = 'Reply with only the corrected JSON';
const BIG = 'x'.repeat(70_000); // one answer past the smallest continueAsNewAfterBytes (64 KiB): the run continues-as-new

/** JSON.parse's own message for `text` (the worker runs on this Node). */
const parseError = (text: string): string => {
  try {
    JSON.parse(text);
    return '';
  } catch (err) {
    return (err as Error).message;
  }
};
const notJson = (text: string) => finalAnswerNotJson(parseError(text));
const repairText = (error: string, repair: number, of: number) =>
  `${error}\nReply with only the corrected JSON, valid against the run's output schema (repair ${repair} of ${of}).`;
const badShape = finalAnswerInvalid('  - label: must have required properties label\n  - n: must be number');

let keel: Keel;
beforeAll(async () => {
  keel = await startKeel({
    scripts: {
      typed: {
        rules: [
          { match: REPAIR, text: '{"n": 7, "label": "fixed"}' },
          { match: 'bad-text', text: 'Sure! The answer is 7.' },
          { match: 'bad-shape', text: '{"n": "seven"}' },
          { text: '{"n": 7, "label": "first"}' },
        ],
      },
      stubborn: { rules: [{ text: 'Sure! The answer is 7.' }] },
      big: {
        rules: [
          { match: 'recover', text: BIG },
          { match: REPAIR, text: '{"n": 1, "label": "after"}' },
        ],
      },
      bigAlways: { rules: [{ text: BIG }] },
      fenced: { rules: [{ text: '```JSON\n{"n": 3, "label": "fenced"}\n```' }] },
    },
  });
});
afterAll(async () => {
  killAllWorkers();
  await keel?.stop();
});

const start = <S extends object | undefined>(
  prompt: string,
  model: string,
  extra: Omit<Partial<AgentRunInput>, 'output'> & { output?: S } = {},
) => keel.client.start({ model, prompt, ...extra }, { workflowId: `typed-${randomUUID()}` });

describe('typed results', () => {
  // the scale: 100 runs, 30 first answers invalid (30 %), both kinds (not JSON, wrong shape)
  it('30 % of 100 runs answer invalid JSON first: every run completes with a valid output after one repair', async () => {
    const prompts = Array.from({ length: 100 }, (_, i) =>
      i % 10 === 0 || i % 10 === 6 ? `task ${i} bad-text` : i % 10 === 3 ? `task ${i} bad-shape` : `task ${i}`,
    );
    const handles = await Promise.all(prompts.map((p) => start(p, 'scripted/typed', { output: Answer })));
    const results = await Promise.all(handles.map((h) => h.result()));
    expectTypeOf(results[0].output).toEqualTypeOf<{ n: number; label: string } | undefined>();
    expect(results.map((r) => r.status)).toEqual(prompts.map(() => 'completed'));
    expect(results.map((r) => r.output)).toEqual(
      prompts.map((p) => ({ n: 7, label: p.includes('bad') ? 'fixed' : 'first' })),
    );
    const repaired = results.filter((r) => r.newMessages.length === 4);
    expect(repaired).toHaveLength(30);
    expect(results.filter((r) => r.output !== undefined)).toHaveLength(100); // 100 % of completed runs carry one
    // the repair request is the model's next user message, with the validation errors
    const requests = results.map((r) => (r.newMessages.length === 4 ? messageText(r.newMessages[2]) : undefined));
    expect(requests[0]).toBe(repairText(notJson('Sure! The answer is 7.'), 1, 2));
    expect(requests[3]).toBe(repairText(badShape, 1, 2));
    expect(results[1].newMessages).toHaveLength(2); // a valid first answer is the output at once
  });

  it('after its repairs the run fails with InvalidAgentOutput and the exact text; it never completes', async () => {
    const h = await start('answer', 'scripted/stubborn', { output: Answer, outputRepairs: 1 });
    const err = await h.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    const error = notJson('Sure! The answer is 7.');
    const message = invalidAgentOutput(error, 1);
    expect(message).toBe(
      `${error}\nNo valid output after 1 repair: the run failed without a result. Raise outputRepairs, or make the prompt or the output schema clearer to the model.`,
    );
    expect(err).toBeInstanceOf(InvalidAgentOutputError);
    expect((err as InvalidAgentOutputError).message).toBe(message);
    const r = (err as InvalidAgentOutputError).result;
    expect(r).toMatchObject({ status: 'failed', error: message });
    expect(r.output).toBeUndefined();
    expect(strip(r.newMessages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'answer' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Sure! The answer is 7.' }], stopReason: 'stop' },
      { role: 'user', content: [{ type: 'text', text: repairText(error, 1, 1) }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Sure! The answer is 7.' }], stopReason: 'stop' },
    ]);
    // the workflow itself failed, with the typed failure
    const raw = await h.workflow.result().catch((e: unknown) => e);
    expect(raw).toBeInstanceOf(WorkflowFailedError);
    const cause = (raw as WorkflowFailedError).cause as ApplicationFailure;
    expect([cause.type, cause.message, cause.nonRetryable]).toEqual([ErrorType.InvalidAgentOutput, message, true]);
    // no repair at all: the first invalid answer fails the run
    const none = await start('answer', 'scripted/stubborn', { output: Answer, outputRepairs: 0 });
    await expect(none.result()).rejects.toThrow(invalidAgentOutput(error, 0));
  });

  it('a valid output across continue-as-new; the repair count is carried too', async () => {
    const h = await start('recover', 'scripted/big', { output: Answer, continueAsNewAfterBytes: 65_536 });
    const r = await h.result();
    expect(r).toMatchObject({ status: 'completed', output: { n: 1, label: 'after' } });
    expect((await chainHistories(h.workflow)).length).toBeGreaterThanOrEqual(2);
    // two invalid answers, each followed by continue-as-new: the second finds the one repair spent
    const spent = await start('never', 'scripted/bigAlways', {
      output: Answer,
      outputRepairs: 1,
      continueAsNewAfterBytes: 65_536,
    });
    await expect(spent.result()).rejects.toThrow(invalidAgentOutput(notJson(BIG), 1));
    expect((await chainHistories(spent.workflow)).length).toBeGreaterThanOrEqual(3);
  });

  it('the json-schema grader and the batch results read the typed output', async () => {
    // the text is fenced as ```JSON (upper case), which the grader's own text reading does not unwrap: only `output` passes
    const task = { model: 'scripted/fenced', prompt: 'go', output: Answer, grader: 'json-schema' };
    const tasks: BatchTask[] = [
      { ...task, expected: { type: 'object', required: ['label'], properties: { label: { const: 'fenced' } } } },
      { ...task, expected: { type: 'object', required: ['zzz'] } },
    ];
    const batch = await keel.client.startBatch(tasks);
    await batch.result();
    const { results } = await batch.results();
    expect(results.map((r) => r.grade)).toEqual([
      { pass: true, score: 1, reason: 'the typed output is valid against the schema' },
      { pass: false, score: 0, reason: "answer must have required property 'zzz'" },
    ]);
    const child = await keel.client.getHandle<{ n: number; label: string }>(results[0].workflowId).result();
    expect(child.output).toEqual({ n: 3, label: 'fenced' });
    // `keel batch` result lines carry it
    expect(JSON.parse(await resultLine(keel.client, results[0], false))).toMatchObject({
      status: 'completed',
      output: { n: 3, label: 'fenced' },
    });
  });

  it("a session checks each agent run's final answer; ended, it completes with the last valid output", async () => {
    const h = await start('task 1 bad-text', 'scripted/typed', { output: Answer, mode: 'session' });
    await until(async () => (await h.state()).status === 'waiting', 20_000, 'session waiting');
    await h.followUp('task 2 bad-shape');
    await until(async () => (await h.state()).messageCount === 8, 20_000, 'second agent run answered');
    await h.end();
    const r = await h.result();
    expect(r).toMatchObject({ status: 'completed', output: { n: 7, label: 'fixed' } });
    expect(r.newMessages.map((m) => (m.role === 'user' ? messageText(m).split('\n')[0] : m.role))).toEqual([
      'task 1 bad-text',
      'assistant',
      notJson('Sure! The answer is 7.'),
      'assistant',
      'task 2 bad-shape',
      'assistant',
      'Final answer failed validation:',
      'assistant',
    ]);
    // each agent run counts its own repairs: the second run's request is its repair 1
    expect(messageText(r.newMessages[6])).toBe(repairText(badShape, 1, 2));
  });

  it('a run without output runs no check; an output that is not a JSON Schema is refused at the start', async () => {
    const plain = await start('task 1', 'scripted/typed');
    const r = await plain.result();
    expect(r.status).toBe('completed');
    expect('output' in r).toBe(false);
    expect(historyText(await plain.workflow.fetchHistory())).not.toContain('checkRunOutput');
    const typed = await start('task 1', 'scripted/typed', { output: Answer });
    await typed.result();
    expect(historyText(await typed.workflow.fetchHistory())).toContain('checkRunOutput');
    const bad = await start('task 1', 'scripted/typed', { output: { type: 'nonsense' } });
    const err = await bad.result().catch((e: unknown) => e);
    const cause = (err as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.type).toBe(ErrorType.InvalidAgentInput);
    expect(cause.message).toContain('output: must be a JSON Schema: schema is invalid: data/type must be equal to one');
  });
});

describe('typed results: a killed worker', () => {
  const CHILD = fileURLToPath(new URL('./fixtures/child-worker.ts', import.meta.url));

  it('the repair in flight when the worker died is answered on the next worker: one valid output', async () => {
    const taskQueue = `typed-${randomUUID()}`;
    const env = (hang: boolean) => ({
      KEEL_TASK_QUEUE: taskQueue,
      KEEL_SIDE_EFFECTS: join(mkdtempSync(join(tmpdir(), 'keel-typed-')), 'effects.log'),
      KEEL_HANG: hang ? '1' : '0',
    });
    const first = await spawnWorker(CHILD, env(true));
    const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
    const schema = Type.Object({ answer: Type.Number() });
    const h = await client.start({
      model: 'scripted/durable',
      prompt: 'typed please',
      output: schema,
      heartbeatTimeout: '2s',
    });
    // the first answer was refused and the repair request sent: its model call is streaming on the first worker
    await until(
      async () =>
        (await h.state()).messageCount >= 3 &&
        ((await h.workflow.describe()).raw.pendingActivities?.some(
          (a) => a.activityType?.name === 'callModel' && a.heartbeatDetails?.payloads?.length,
        ) ??
          false),
      30_000,
      'repair streaming',
    );
    await killWorker(first);
    const second = await spawnWorker(CHILD, env(false));
    const r = await h.result();
    expect(r).toMatchObject({ status: 'completed', output: { answer: 42 } });
    expect(r.newMessages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(messageText(r.newMessages[2])).toBe(repairText(notJson('forty-two'), 1, 2));
    await killWorker(second);
    await client.close();
  });
});
