/**
 * Many workers, one cache (issue 35 item 3): a turn whose tool ran on another worker costs no `messages` query
 * (docs/architecture.md#history-stays-linear). Two workers on one task queue: a `model` worker (the workflows and the
 * model calls) and a `tools` worker (every tool call), so every tool call runs on a worker that did not make the model
 * call and every model call follows a tool result made elsewhere — before 0.8.0 two queries per turn. From 0.8.0
 * the model call's input carries the turn's tool results and the tool call's input its
 * call: no query at all, and the model still sees exactly the transcript. A call too big to carry is read by
 * reference, as before.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { WorkflowClient } from '@temporalio/client';
import { AgentClient } from '../../client/agent-client.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import { scriptedModel } from '../../activities/model/scripted.js';
import { TAIL_MAX_CHARS } from '../../common/transcript-tail.js';
import { createAgentWorker, type AgentWorker } from '../../worker/create-worker.js';
import { quietRuntime, recordingModel, strip } from './harness.js';

const TURNS = 5;

const noop = defineTool({
  name: 'noop',
  description: 'Does nothing.',
  parameters: { type: 'object', properties: { text: { type: 'string' } } },
  execute: async (_id, args) => ({
    content: [{ type: 'text', text: `ok ${(args as { text?: string }).text?.length ?? 0}` }],
  }),
});

/** `messages` queries sent through any client of this process, by workflow id (the activities' and the test's). */
const queries = new Map<string, number>();
const proto = WorkflowClient.prototype as unknown as {
  _queryWorkflowHandler: (input: { queryType: string; workflowExecution: { workflowId: string } }) => Promise<unknown>;
};
const original = proto._queryWorkflowHandler;

describe('transcript tail: two workers on one queue', () => {
  const taskQueue = `test-${randomUUID()}`;
  const model = recordingModel(
    scriptedModel({
      noop: { rules: [{ toolCall: { name: 'noop', arguments: {} } }] },
      big: { rules: [{ toolCall: { name: 'noop', arguments: { text: 'x'.repeat(TAIL_MAX_CHARS) } } }] },
    }),
  );
  const workers: AgentWorker[] = [];
  let client: AgentClient;

  beforeAll(async () => {
    quietRuntime();
    proto._queryWorkflowHandler = async function (this: unknown, input) {
      if (input.queryType === 'messages') {
        const id = input.workflowExecution.workflowId;
        queries.set(id, (queries.get(id) ?? 0) + 1);
      }
      return original.call(this, input);
    };
    const address = inject('temporalAddress');
    workers.push(
      await createAgentWorker({
        address,
        taskQueue,
        role: 'model',
        tools: [noop],
        models: { scripted: model },
        workflowBundle: { codePath: inject('workflowBundlePath') },
      }),
      await createAgentWorker({ address, taskQueue, role: 'tools', tools: [noop] }),
    );
    for (const w of workers) w.run().catch(() => {});
    for (const w of workers) await w.ready();
    client = await AgentClient.connect({ address, taskQueue });
  });
  afterAll(async () => {
    for (const w of workers) await w.shutdown();
    await client?.close();
    proto._queryWorkflowHandler = original;
  });

  it('a turn whose tool ran on the other worker sends no query, and the model sees exactly the transcript', async () => {
    const h = await client.start(
      { model: 'scripted/noop', prompt: 'go', tools: ['noop'], maxTurns: TURNS },
      { workflowId: `test-tail-${randomUUID()}` },
    );
    const r = await h.result();
    expect([r.status, r.turns]).toEqual(['stopped', TURNS]);
    expect(queries.get(h.workflowId) ?? 0).toBe(0);
    const transcript = await h.allMessages();
    expect(transcript).toHaveLength(1 + 2 * TURNS);
    expect(transcript.filter((m) => m.role === 'toolResult').map((m) => m.content)).toEqual(
      Array.from({ length: TURNS }, () => [{ type: 'text', text: 'ok 0' }]),
    );
    expect(model.requests('noop').map((q) => strip(q.messages))).toEqual(
      Array.from({ length: TURNS }, (_, i) => strip(transcript.slice(0, 1 + 2 * i))),
    );
  });

  it('a call too big to carry is read by reference, with the same result', async () => {
    const h = await client.start(
      { model: 'scripted/big', prompt: 'go big', tools: ['noop'], maxTurns: 1 },
      { workflowId: `test-tail-big-${randomUUID()}` },
    );
    const r = await h.result();
    expect([r.status, r.turns]).toEqual(['stopped', 1]);
    expect(queries.get(h.workflowId)).toBe(1); // the tools worker reads the assistant message
    const transcript = await h.allMessages();
    expect(transcript.at(-1)?.content).toEqual([{ type: 'text', text: `ok ${TAIL_MAX_CHARS}` }]);
  });
});
