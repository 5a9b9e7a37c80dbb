/** docs/architecture.md#run-input-and-result: invalid input is refused before any model call, every bad field named. */
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidAgentInputError } from '../../client/agent-client.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import { startKeel, workflowTaskFailures, type Keel } from './harness.js';

const noop = defineTool({
  name: 'noop',
  description: 'Does nothing.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({}),
});

describe('bad input', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts: { ok: { rules: [{ text: 'ok' }] } }, tools: [noop] });
  });
  afterAll(() => keel?.stop());

  it('a malformed AgentRunInput started directly through the Temporal client fails at once, naming every field', async () => {
    const handle = await keel.client.client.workflow.start('agentWorkflow', {
      taskQueue: keel.taskQueue,
      workflowId: `bad-input-${Date.now()}`,
      args: [{ model: 'gpt', maxTurns: 0, tools: ['noop', 'ghost'], mode: 'forever', bogus: true }],
    });
    const err = await handle.result().catch((e) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause.type).toBe('InvalidAgentInput');
    expect(cause.nonRetryable).toBe(true);
    expect(cause.message).toBe(
      'Invalid AgentRunInput: bogus: unknown field; model: must be "provider/model-id", e.g. "anthropic/claude-sonnet-4-5" or "scripted/demo"; ' +
        'maxTurns: must be >= 1; mode: must be one of "task", "session"; tools: unknown "ghost"; tools registered on this worker: noop',
    );
    const history = await handle.fetchHistory();
    const types = history.events!.map((e) => e.eventType);
    // one workflow task, one validation activity, one failing workflow task: no retry loop, no model call
    const { EventType } = temporal.api.enums.v1;
    expect(types.filter((t) => t === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)).toEqual([]);
    expect(
      history
        .events!.filter((e) => e.activityTaskScheduledEventAttributes)
        .map((e) => e.activityTaskScheduledEventAttributes!.activityType!.name),
    ).toEqual(['startRun']);
    expect(types[types.length - 1]).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED);
  });

  it('an unknown model is refused at start with how to name one', async () => {
    const handle = await keel.client.client.workflow.start('agentWorkflow', {
      taskQueue: keel.taskQueue,
      workflowId: `bad-model-${Date.now()}`,
      args: [{ model: 'scripted/nope', prompt: 'hi' }],
    });
    const err = (await handle.result().catch((e) => e)) as WorkflowFailedError;
    expect((err.cause as ApplicationFailure).message).toBe(
      'Invalid AgentRunInput: model: Unknown scripted model "scripted/nope". Known: scripted/ok, or scripted/<path to rules .json>.',
    );
    expect(await workflowTaskFailures(handle)).toEqual([]);
  });

  // issue 33 item 20: the model of keel dev's Try: line, asked of a worker of one's own
  it('scripted/hello on a worker without it says which workers have it', async () => {
    const handle = await keel.start({ model: 'scripted/hello', prompt: 'hi' });
    const err = (await handle.result().catch((e) => e)) as WorkflowFailedError;
    expect((err.cause as ApplicationFailure).message).toBe(
      'Invalid AgentRunInput: model: Unknown scripted model "scripted/hello". Known: scripted/ok, or scripted/<path to rules .json>. ' +
        'scripted/hello exists only in the workers of `keel dev` and `keel worker`: run against one of them, or give this ' +
        'worker a script named hello (scriptedModel({ hello: { rules: [...] } })).',
    );
  });

  it('a run with neither prompt nor messages cannot continue (Pi: Cannot continue: no messages in context)', async () => {
    const handle = await keel.client.client.workflow.start('agentWorkflow', {
      taskQueue: keel.taskQueue,
      workflowId: `no-prompt-${Date.now()}`,
      args: [{ model: 'scripted/ok' }],
    });
    const err = (await handle.result().catch((e) => e)) as WorkflowFailedError;
    expect((err.cause as ApplicationFailure).message).toBe(
      'Invalid AgentRunInput: prompt: Cannot continue: no messages in context; give a prompt or messages',
    );
    expect(await workflowTaskFailures(handle)).toEqual([]);
  });

  it('the client refuses bad input before sending anything', async () => {
    const err = await keel.client.start({ model: 'x', maxTurns: -1 } as never).catch((e) => e);
    expect(err).toBeInstanceOf(InvalidAgentInputError);
    expect((err as InvalidAgentInputError).errors).toEqual([
      'model: must be "provider/model-id", e.g. "anthropic/claude-sonnet-4-5" or "scripted/demo"',
      'maxTurns: must be >= 1',
    ]);
  });
});
