/**
 * Every field the workflow reads is checked at the door: the run input (including prior messages and durations), a
 * raw second argument, signal payloads and the model's output. Each bad value fails the run at once with a clear error
 * (or is dropped with a warning, for a signal, which cannot be refused) — never a workflow task retried forever.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { type ApplicationFailure } from '@temporalio/common';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorType, UNEXPECTED_SECOND_ARGUMENT, workflowBug } from '../../common/errors.js';
import { emptyUsage } from '../../common/messages.js';
import { InvalidAgentInputError, inputTooLarge } from '../../client/agent-client.js';
import { startKeel, strip, until, workflowTaskFailures, type Keel } from './harness.js';

const scripts = {
  ok: { rules: [{ text: 'ok' }] },
  badUsage: {
    rules: [
      {
        text: 'priced oddly',
        usage: { cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 'free' } } as never,
      },
    ],
  },
  badStop: { rules: [{ text: 'stopped oddly', stopReason: 'done' as never }] },
};

describe('input checked at the door', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts });
  });
  afterAll(() => keel?.stop());

  async function failsAtOnce(args: unknown[]): Promise<ApplicationFailure> {
    const handle = await keel.client.client.workflow.start('agentWorkflow', {
      taskQueue: keel.taskQueue,
      workflowId: `door-${Math.random().toString(36).slice(2)}`,
      args,
    });
    const err = await handle.result().catch((e) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(await workflowTaskFailures(handle)).toEqual([]);
    return (err as WorkflowFailedError).cause as ApplicationFailure;
  }

  const duration = 'must be a duration: milliseconds (an integer >= 1) or a string such as "30s", "5m", "1h", "2d"';
  for (const idleTimeout of ['abc', '-1h']) {
    it(`idleTimeout ${JSON.stringify(idleTimeout)} is refused`, async () => {
      const cause = await failsAtOnce([{ model: 'scripted/ok', prompt: 'hi', mode: 'session', idleTimeout }]);
      expect(cause.type).toBe('InvalidAgentInput');
      expect(cause.message).toBe(`Invalid AgentRunInput: idleTimeout: ${duration}`);
    });
  }

  const badMessages: [string, unknown, string][] = [
    ['null', null, 'messages.0: must be object'],
    ['a user message without content', { role: 'user' }, 'messages.0.content: is required'],
    [
      'an assistant whose content is a string',
      { role: 'assistant', content: 'hi', stopReason: 'stop' },
      'messages.0.content: must be array',
    ],
    ['a toolResult without fields', { role: 'toolResult' }, 'messages.0.toolCallId: is required'],
    [
      'a tool call without arguments',
      { role: 'assistant', content: [{ type: 'toolCall', id: 'x', name: 'y' }], stopReason: 'toolUse' },
      'messages.0.content.0.arguments: is required',
    ],
  ];
  for (const [what, message, line] of badMessages) {
    it(`prior messages containing ${what} are refused`, async () => {
      const cause = await failsAtOnce([{ model: 'scripted/ok', prompt: 'hi', messages: [message] }]);
      expect(cause.type).toBe('InvalidAgentInput');
      expect(cause.message).toContain(line);
    });
  }

  it('a second positional argument from a raw start is refused', async () => {
    const cause = await failsAtOnce([{ model: 'scripted/ok', prompt: 'hi' }, { messages: 'not the carried state' }]);
    expect(cause.type).toBe('InvalidAgentInput');
    expect(cause.message).toBe(UNEXPECTED_SECOND_ARGUMENT);
  });

  // a state-shaped second argument: its loop position with `pending: null` reaches a TypeError inside the loop
  const crafted = {
    config: { model: 'scripted/ok' },
    transcript: [],
    newFrom: 0,
    steering: [],
    followUps: [],
    tools: [],
    usage: emptyUsage(),
    turns: 0,
    runs: 1,
    status: 'running',
    continuedAsNew: 1,
    eventSeq: 0,
    received: 0,
    position: { runStart: 0, turnsInRun: 0, pending: null, pendingFrom: 'steering', moreToolCalls: true },
  };

  it('a state-shaped second argument from a raw start is refused too: only continue-as-new carries state', async () => {
    const cause = await failsAtOnce([{ model: 'scripted/ok' }, crafted]);
    expect([cause.type, cause.nonRetryable, cause.message]).toEqual([
      ErrorType.InvalidAgentInput,
      true,
      UNEXPECTED_SECOND_ARGUMENT,
    ]);
  });

  it('a bug in workflow code fails the run at once as KeelWorkflowBug naming the error, not a retried workflow task', async () => {
    // the crafted state arrives the only way a state can: a workflow that continues-as-new into agentWorkflow (any
    // other door to a bug would do; the point is the failure policy)
    const connection = await NativeConnection.connect({ address: keel.address });
    const taskQueue = `door-fixture-${Math.random().toString(36).slice(2)}`;
    const worker = await Worker.create({
      connection,
      taskQueue,
      workflowsPath: fileURLToPath(new URL('./fixtures/continue-into-agent.ts', import.meta.url)),
    });
    const running = worker.run();
    try {
      const handle = await keel.client.client.workflow.start('continueIntoAgent', {
        taskQueue,
        workflowId: `door-${Math.random().toString(36).slice(2)}`,
        args: [keel.taskQueue, [{ model: 'scripted/ok' }, crafted]],
      });
      const err = await handle.result().catch((e) => e);
      expect(err).toBeInstanceOf(WorkflowFailedError);
      const cause = (err as WorkflowFailedError).cause as ApplicationFailure;
      expect([cause.type, cause.nonRetryable, cause.message]).toEqual([
        ErrorType.WorkflowBug,
        true,
        workflowBug("Cannot read properties of null (reading 'length')"),
      ]);
      expect((await handle.describe()).type).toBe('agentWorkflow'); // the failed run is the continued one
      expect(await workflowTaskFailures(handle)).toEqual([]);
    } finally {
      worker.shutdown();
      await running;
      await connection.close();
    }
  });

  it('a model reply whose usage.cost.total is a string fails the run with a clear error', async () => {
    const cause = await failsAtOnce([{ model: 'scripted/badUsage', prompt: 'hi' }]);
    expect(cause.type).toBe('AgentRunFailed');
    expect(cause.message).toBe(
      'The model provider returned an invalid assistant message: usage.cost.total: must be number',
    );
  });

  it('a model reply with an unknown stopReason fails the run with a clear error', async () => {
    const cause = await failsAtOnce([{ model: 'scripted/badStop', prompt: 'hi' }]);
    expect(cause.type).toBe('AgentRunFailed');
    expect(cause.message).toBe(
      'The model provider returned an invalid assistant message: stopReason: must be one of "stop", "length", "toolUse", "error", "aborted"',
    );
  });

  it('a 3 MB prompt is refused by the client, naming the 2 MB payload limit', async () => {
    const err = await keel.client.start({ model: 'scripted/ok', prompt: 'x'.repeat(3 * 1024 * 1024) }).catch((e) => e);
    expect(err).toBeInstanceOf(InvalidAgentInputError);
    expect((err as InvalidAgentInputError).errors).toEqual([inputTooLarge(3 * 1024 * 1024 + 35)]);
    expect((err as InvalidAgentInputError).errors[0]).toContain("over Temporal's 2 MB payload limit");
  });

  it('a malformed follow-up signal is dropped; a cancel whose reason is a number still cancels', async () => {
    const h = await keel.start({ model: 'scripted/ok', prompt: 'hi', mode: 'session' });
    await until(async () => (await h.state()).status === 'waiting', 20_000, 'waiting');
    await h.workflow.signal('followUp', { role: 'user', content: [null] });
    await h.workflow.signal('steer', { role: 'assistant', content: 'x' });
    await h.workflow.signal('followUp', 'a good one');
    await until(
      async () => (await h.state()).turns === 2 && (await h.state()).status === 'waiting',
      20_000,
      'second run',
    );
    expect(strip(await h.allMessages()).filter((m) => (m as { role: string }).role === 'user')).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'user', content: [{ type: 'text', text: 'a good one' }] },
    ]);
    await h.workflow.signal('cancel', 42);
    await h.workflow.result().catch(() => undefined);
    expect((await h.workflow.describe()).status.name).toBe('CANCELLED');
    expect(await workflowTaskFailures(h)).toEqual([]);
  });
});
