/**
 * The runs whose histories make a release's replay corpus (test/fixtures/histories/<version>/). Each scenario drives a
 * run to a characteristic point and returns the histories to keep (several for a continue-as-new chain). The replay
 * test (replay-corpus.test.ts) replays every recorded corpus of every release with the current workflow code, so a
 * change that is not behind `patched()` fails CI before it can break a run in flight.
 */
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { temporal } from '@temporalio/proto';
import { defineTool } from '../../activities/tools/define-tool.js';
import type { Script } from '../../activities/model/scripted.js';
import { AGENT_WORKFLOW_TYPE, type AgentRunHandle } from '../../client/agent-client.js';
import { BATCH_WORKFLOW_TYPE, type AgentBatchInput } from '../../workflows/batch/definitions.js';
import { steerSignal } from '../../workflows/definitions.js';
import { emptyUsage } from '../../common/messages.js';
import { TREE_MEMO_KEY, type TreeMembership } from '../../common/tree/membership.js';
import { mintApprovalToken } from '../../client/approval-token.js';
import {
  allEvents,
  chainHistories,
  gate,
  notation,
  startKeel,
  until,
  untilContinuedAsNew,
  type Keel,
} from './harness.js';

type History = temporal.api.history.v1.IHistory;

const echo = defineTool({
  name: 'echo',
  description: 'Echoes value.',
  idempotent: true,
  parameters: { type: 'object', properties: { value: { type: 'string' } }, required: ['value'] },
  execute: async (_id, args: { value: string }) => ({
    content: [{ type: 'text', text: `echoed: ${args.value}` }],
    details: { value: args.value },
  }),
});
const serial = defineTool({
  name: 'serial',
  description: 'Runs alone.',
  executionMode: 'sequential',
  parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
  execute: async (_id, args: { n: number }) => ({ content: [{ type: 'text', text: `serial ${args.n}` }] }),
});
const finisher = defineTool({
  name: 'finish',
  description: 'Ends the batch.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [{ type: 'text', text: 'finished' }], terminate: true }),
});

/** Released by the mid-batch scenario once its history has been taken; every `hold` call waits for it. */
let holdGate = gate();
let holdsReached = 0;
const hold = defineTool({
  name: 'hold',
  description: 'Waits until the test releases it.',
  idempotent: true,
  parameters: { type: 'object', properties: { label: { type: 'string' } }, required: ['label'] },
  execute: async (_id, args: { label: string }, signal) => {
    holdsReached += 1;
    await Promise.race([
      holdGate.promise,
      new Promise((resolve) => signal?.addEventListener('abort', resolve, { once: true })),
    ]);
    return { content: [{ type: 'text', text: `held ${args.label}` }] };
  },
});

/** 16 KB per result, so a short run's history passes the smallest `continueAsNewAfterBytes` (64 KiB) several times. */
const pad = defineTool({
  name: 'pad',
  description: 'Returns a large result.',
  idempotent: true,
  parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
  execute: async (_id, args: { n: number }) => ({
    content: [{ type: 'text', text: `pad ${args.n} ${'x'.repeat(16_000)}` }],
  }),
});

/** Needs approval: the approval scenario keeps it pending across continue-as-new. */
const gated = defineTool({
  name: 'gated',
  description: 'Runs once a person approves.',
  approval: 'always',
  parameters: { type: 'object', properties: { label: { type: 'string' } }, required: ['label'] },
  execute: async (_id, args: { label: string }) => ({ content: [{ type: 'text', text: `gated ${args.label}` }] }),
});

/** Worker affinity (0.3): runs on the run's home worker, not retried elsewhere. */
const local = defineTool({
  name: 'local',
  description: 'Uses this machine.',
  workerLocal: true,
  parameters: { type: 'object', properties: { value: { type: 'string' } }, required: ['value'] },
  execute: async (_id, args: { value: string }) => ({ content: [{ type: 'text', text: `local ${args.value}` }] }),
});

/** Local placement (0.4): a cheap idempotent tool run as a local activity, a marker instead of activity events. */
const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a key up.',
  idempotent: true,
  localActivity: true,
  parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
  execute: async (_id, args: { key: string }) => ({ content: [{ type: 'text', text: `value of ${args.key}` }] }),
});

export const corpusTools = [echo, serial, finisher, hold, pad, gated, local, lookup];
const LOOP_TURNS = 10;

export const corpusScripts: Record<string, Script> = {
  everything: {
    rules: [
      {
        match: 'toolResult:nope',
        text: 'cut short',
        stopReason: 'length',
        toolCalls: [{ id: 't-len', name: 'echo', arguments: { value: 'trunc' } }],
      },
      { match: 'toolResult:echo Tool call "echo" was not executed', text: 'recovered' },
      {
        match: 'go serial',
        toolCalls: [
          { id: 't-s1', name: 'serial', arguments: { n: '1' } },
          { id: 't-s2', name: 'serial', arguments: { n: 2 } },
        ],
      },
      { match: 'toolResult:serial serial 2', text: 'serial done' },
      { match: 'validate', toolCalls: [{ id: 't-v', name: 'echo', arguments: {} }] },
      { match: 'toolResult:echo Validation failed', toolCalls: [{ id: 't-f', name: 'finish', arguments: {} }] },
      { match: 'steered', text: 'saw the steer' },
      {
        match: 'start',
        toolCalls: [
          { id: 't-a', name: 'echo', arguments: { value: 'a' } },
          { id: 't-b', name: 'echo', arguments: { value: 'b' } },
          { id: 't-n', name: 'nope', arguments: {} },
        ],
      },
      { text: 'ok' },
    ],
  },
  parallel: {
    rules: [
      { match: 'toolResult:hold', text: 'both held calls returned' },
      {
        match: 'hold',
        toolCalls: [
          { id: 'h-1', name: 'hold', arguments: { label: 'one' } },
          { id: 'h-2', name: 'hold', arguments: { label: 'two' } },
          { id: 'h-3', name: 'echo', arguments: { value: 'quick' } },
        ],
      },
      { text: 'ok' },
    ],
  },
  loop: {
    rules: [
      { match: `toolResult:pad pad ${LOOP_TURNS} `, text: `looped ${LOOP_TURNS} times` },
      ...Array.from({ length: LOOP_TURNS - 1 }, (_, i) => ({
        match: `toolResult:pad pad ${LOOP_TURNS - 1 - i} `,
        toolCalls: [{ name: 'pad', arguments: { n: LOOP_TURNS - i } }],
      })),
      { toolCalls: [{ name: 'pad', arguments: { n: 1 } }] },
    ],
  },
  broken: { rules: [{ fail: { message: 'model unavailable', type: 'ModelError.Server', retryable: false } }] },
  slow: {
    rules: [
      { match: 'toolResult:hold', text: 'unreachable' },
      { toolCalls: [{ id: 'c-1', name: 'hold', arguments: { label: 'cancel me' } }] },
    ],
  },
  brief: { rules: [{ text: 'done' }] },
  /** 0.9.0: a final answer that is not JSON, then its repair (typed output). */
  typedRepair: {
    rules: [{ match: 'Final answer is not valid JSON', text: '{"answer": 42}' }, { text: 'The answer is 42.' }],
  },
  home: {
    replies: [
      { toolCall: { id: 'h-1', name: 'local', arguments: { value: 'one' } } },
      {
        toolCalls: [
          { id: 'h-2', name: 'local', arguments: { value: 'two' } },
          { id: 'h-3', name: 'echo', arguments: { value: 'shared' } },
        ],
      },
      { text: 'home done' },
    ],
  },
  lookups: {
    replies: [
      { toolCall: { id: 'l-1', name: 'lookup', arguments: { key: 'one' } } },
      {
        toolCalls: [
          { id: 'l-2', name: 'lookup', arguments: { key: 'two' } },
          { id: 'l-3', name: 'lookup', arguments: {} },
          { id: 'l-4', name: 'echo', arguments: { value: 'activity' } },
        ],
      },
      { text: 'looked up' },
    ],
  },
  /** 0.4.1: a batch that repeats a call id, carried across continue-as-new while its first call awaits approval. */
  approvalDuplicate: {
    rules: [
      { match: 'toolResult:', text: 'gated done' },
      { match: 'steer ', text: 'saw the steer' },
      {
        toolCalls: [
          { id: 'g-1', name: 'gated', arguments: { label: 'x' } },
          { id: 'g-2', name: 'echo', arguments: { value: 'b' } },
          { id: 'g-1', name: 'gated', arguments: { label: 'y' } },
        ],
      },
    ],
  },
  /** 0.4.2: one call denied, one aborted by an interrupt while pending, then the session ended by the `end` Update. */
  approvalOutcomes: {
    rules: [
      { match: 'toolResult:', text: 'gated done' },
      { match: 'abort me', toolCalls: [{ id: 'g-2', name: 'gated', arguments: { label: 'aborted' } }] },
      { match: 'deny me', toolCalls: [{ id: 'g-1', name: 'gated', arguments: { label: 'denied' } }] },
      { text: 'ok' },
    ],
  },
  /** 0.4.2: a tool call whose arguments are a JSON string: kept, refused with Pi's validation error, then retried. */
  stringArguments: {
    replies: [
      { toolCalls: [{ id: 's-1', name: 'echo', arguments: '{"value":"as text"}' }] },
      { toolCalls: [{ id: 's-2', name: 'echo', arguments: { value: 'as object' } }] },
      { text: 'retried' },
    ],
  },
  approval: {
    rules: [
      { match: 'toolResult:', text: 'gated done' },
      { match: 'steer ', text: 'saw the steer' },
      {
        toolCalls: [
          { id: 'g-1', name: 'gated', arguments: { label: 'x' } },
          { id: 'g-2', name: 'echo', arguments: { value: 'b' } },
        ],
      },
    ],
  },
};

/** A recorded history with the workflow id it ran under (replay needs it: child ids derive from it). */
export interface Recorded {
  workflowId: string;
  history: History;
}

export type Scenario = (keel: Keel) => Promise<Record<string, Recorded>>;

const id = (name: string) => `corpus-${name}-${randomUUID().slice(0, 8)}`;

/** A session that goes through parallel and sequential batches, unknown tool, coercion, validation failure, length truncation, terminate, follow-ups, steering, interrupt and cancel. */
export async function everyFeature(keel: Keel, workflowId: string, pollMs = 250): Promise<AgentRunHandle> {
  const h = await keel.start(
    {
      model: 'scripted/everything',
      prompt: 'start',
      tools: ['echo', 'serial', 'finish'],
      mode: 'session',
      metadata: { suite: 'determinism' },
    },
    workflowId,
  );
  const waitTurns = (n: number) =>
    until(
      async () => {
        const s = await h.state();
        return s.status === 'waiting' && s.turns >= n;
      },
      120_000,
      `${n} turns`,
      pollMs,
    );
  await waitTurns(3);
  await h.followUp('go serial');
  await waitTurns(5);
  await h.followUp('validate');
  await waitTurns(7);
  await h.steer('steered');
  await waitTurns(8);
  await h.interrupt();
  await h.cancel('done');
  await h.workflow.result().catch(() => undefined);
  return h;
}

/** Every run of a workflow id's continue-as-new chain, oldest first, with the id. */
async function chain(first: WorkflowHandle): Promise<Recorded[]> {
  return (await chainHistories(first)).map((history) => ({ workflowId: first.workflowId, history }));
}

/** Runs a batch under `id(name)` to its end: its id and every run of its continue-as-new chain (`what`: at least 2). */
async function batchChain(
  keel: Keel,
  name: string,
  input: AgentBatchInput,
  what: string,
): Promise<{ wid: string; runs: Recorded[] }> {
  const wid = id(name);
  const h = await keel.client.client.workflow.start(BATCH_WORKFLOW_TYPE, {
    taskQueue: keel.taskQueue,
    workflowId: wid,
    args: [input],
  });
  await h.result();
  const runs = await chain(h);
  if (runs.length < 2) throw new Error(`expected ${what} of at least 2 runs, got ${runs.length}`);
  return { wid, runs };
}

/**
 * A 70 KB steer makes continue-as-new due while a call awaits approval (`continueAsNewAfterBytes: 65_536`); once the
 * run has continued, the call is approved and the run finishes. The chain's histories, first run first.
 */
async function continueThenApprove(h: AgentRunHandle): Promise<Recorded[]> {
  await h.workflow.signal(steerSignal, `steer ${'x'.repeat(70_000)}`);
  await untilContinuedAsNew(h, 1, 60_000);
  const [p] = (await h.state()).pendingApprovals;
  await h.approve({ toolCallId: p.toolCallId, argsDigest: p.argsDigest, approver: 'corpus' });
  await h.result();
  return chain(h.workflow);
}

export const scenarios: Record<string, Scenario> = {
  'every-feature': async (keel) => {
    const h = await everyFeature(keel, id('every-feature'), 50);
    return { 'every-feature': await recorded(h.workflow) };
  },
  'session-waiting': async (keel) => {
    const h = await keel.start({ model: 'scripted/brief', prompt: 'hello', mode: 'session' }, id('session-waiting'));
    await until(async () => (await h.state()).status === 'waiting', 60_000, 'waiting');
    const history = await recorded(h.workflow);
    await h.workflow.terminate('corpus recorded');
    return { 'session-waiting': history };
  },
  'mid-parallel-batch': async (keel) => {
    holdGate = gate();
    holdsReached = 0;
    const h = await keel.start(
      { model: 'scripted/parallel', prompt: 'hold', tools: ['hold', 'echo'] },
      id('mid-parallel-batch'),
    );
    await until(async () => holdsReached === 2, 60_000, 'both held calls running');
    const history = await recorded(h.workflow);
    holdGate.open();
    await h.result();
    return { 'mid-parallel-batch': history, 'parallel-batch-complete': await recorded(h.workflow) };
  },
  'continue-as-new-chain': async (keel) => {
    const h = await keel.start(
      { model: 'scripted/loop', prompt: 'loop', tools: ['pad'], continueAsNewAfterBytes: 65_536 },
      id('can-chain'),
    );
    await h.result();
    const runs = await chain(h.workflow);
    if (runs.length < 3) throw new Error(`expected a chain of at least 3 runs, got ${runs.length}`);
    return Object.fromEntries(runs.map((r, i) => [`continue-as-new-chain.${i}`, r]));
  },
  'batch-chain': async (keel) => {
    const input: AgentBatchInput = {
      tasks: Array.from({ length: 6 }, (_, i) => ({ model: 'scripted/brief', prompt: `task ${i}` })),
      concurrency: 2,
      taskQueue: keel.taskQueue,
      continueAsNewAfterTasks: 2,
    };
    const { wid, runs } = await batchChain(keel, 'batch-chain', input, 'a batch chain');
    const child = await recorded(keel.client.client.workflow.getHandle(`${wid}-0`));
    return { ...Object.fromEntries(runs.map((r, i) => [`batch-chain.${i}`, r])), 'batch-chain.child-0': child };
  },
  cancelled: async (keel) => {
    holdGate = gate();
    holdsReached = 0;
    const h = await keel.start({ model: 'scripted/slow', prompt: 'go', tools: ['hold'] }, id('cancelled'));
    await until(async () => holdsReached === 1, 60_000, 'tool running');
    await h.cancel('operator stop');
    await h.workflow.result().catch(() => undefined);
    holdGate.open();
    return { cancelled: await recorded(h.workflow) };
  },
  /** Since 0.2.0: a call pending approval (Updates), carried across continue-as-new, then approved. */
  'approval-chain': async (keel) => {
    const h = await keel.start(
      { model: 'scripted/approval', prompt: 'gate', tools: ['gated', 'echo'], continueAsNewAfterBytes: 65_536 },
      id('approval-chain'),
    );
    await until(async () => (await h.state()).pendingApprovals.length === 1, 60_000, 'approval pending');
    const pendingHistory = await recorded(h.workflow);
    const runs = await continueThenApprove(h);
    return {
      'approval-pending': pendingHistory,
      ...Object.fromEntries(runs.map((r, i) => [`approval-chain.${i}`, r])),
    };
  },
  /** 0.3: worker-local tool calls on the run's home queue, a single call and one in a parallel batch. */
  'worker-local': async (keel) => {
    const h = await keel.start(
      { model: 'scripted/home', prompt: 'home', tools: ['local', 'echo'] },
      id('worker-local'),
    );
    await h.result();
    return { 'worker-local': await recorded(h.workflow) };
  },
  /** 0.4: local-activity tool calls: a single call, then a parallel batch with a bad call and an activity call. */
  'local-tools': async (keel) => {
    const h = await keel.start(
      { model: 'scripted/lookups', prompt: 'look up', tools: ['lookup', 'echo'] },
      id('local-tools'),
    );
    await h.result();
    return { 'local-tools': await recorded(h.workflow) };
  },
  /** 0.4.1: a repeated call id in a batch resumed after continue-as-new: the duplicate is refused, never executed. */
  'duplicate-ids-resumed': async (keel) => {
    const h = await keel.start(
      {
        model: 'scripted/approvalDuplicate',
        prompt: 'gate',
        tools: ['gated', 'echo'],
        continueAsNewAfterBytes: 65_536,
      },
      id('duplicate-ids-resumed'),
    );
    await until(async () => (await h.state()).pendingApprovals.length === 1, 60_000, 'approval pending');
    await until(async () => notation(await allEvents(h)).includes('TEE(g-2)'), 60_000, 'g-2 done');
    const runs = await continueThenApprove(h);
    return Object.fromEntries(runs.map((r, i) => [`duplicate-ids-resumed.${i}`, r]));
  },
  /** 0.4.1: a raw start given a state-shaped second argument fails as InvalidAgentInput. */
  'raw-second-argument': async (keel) => {
    const handle = await keel.client.client.workflow.start('agentWorkflow', {
      taskQueue: keel.taskQueue,
      workflowId: id('raw-second-argument'),
      args: [
        { model: 'scripted/brief' },
        {
          ...{
            config: { model: 'scripted/brief' },
            transcript: [],
            newFrom: 0,
            steering: [],
            followUps: [],
            tools: [],
          },
          ...{ usage: emptyUsage(), turns: 0, runs: 0, status: 'running', continuedAsNew: 1, eventSeq: 0, received: 0 },
        },
      ],
    });
    await handle.result().catch(() => undefined);
    return { 'raw-second-argument': await recorded(handle) };
  },
  /** 0.4.2: the approval outcomes no earlier corpus recorded: a deny with a reason, an interrupt resolving a pending
   * call as `Operation aborted`, and the `end` Update closing the idle session. */
  'approval-outcomes': async (keel) => {
    const h = await keel.start(
      { model: 'scripted/approvalOutcomes', prompt: 'deny me', tools: ['gated'], mode: 'session' },
      id('approval-outcomes'),
    );
    const pending = async (toolCallId: string) => {
      await until(
        async () => (await h.state()).pendingApprovals.some((p) => p.toolCallId === toolCallId),
        60_000,
        `${toolCallId} pending`,
      );
      return (await h.state()).pendingApprovals[0];
    };
    const first = await pending('g-1');
    await h.deny({ toolCallId: first.toolCallId, argsDigest: first.argsDigest, approver: 'corpus', reason: 'not now' });
    await until(async () => (await h.state()).status === 'waiting', 60_000, 'waiting after the deny');
    await h.followUp('abort me');
    await pending('g-2');
    await h.interrupt();
    await until(async () => (await h.state()).status === 'waiting', 60_000, 'waiting after the interrupt');
    await h.end();
    return { 'approval-outcomes': await recorded(h.workflow) };
  },
  /** 0.4.2: a call whose approval timed out (the timer fires) gets the not-approved result; the run completes. */
  'approval-timeout': async (keel) => {
    const h = await keel.start(
      { model: 'scripted/approvalOutcomes', prompt: 'deny me', tools: ['gated'], approvalTimeout: '1s' },
      id('approval-timeout'),
    );
    await h.result();
    return { 'approval-timeout': await recorded(h.workflow) };
  },
  /** 0.4.2: arguments as a JSON string (patch keel-0.4.2-string-tool-arguments); the tools on the tool queue. */
  'string-arguments': async (keel) => {
    const h = await keel.start(
      { model: 'scripted/stringArguments', prompt: 'go', tools: ['echo'] },
      id('string-arguments'),
    );
    await h.result();
    return { 'string-arguments': await recorded(h.workflow) };
  },
  /** 0.4.2: a raw start whose input is nested deeper than the limit fails as InvalidAgentInput (keel-0.4.2-deep-input-refused). */
  'deep-input': async (keel) => {
    let metadata: Record<string, unknown> = {};
    for (let i = 0; i < 300; i++) metadata = { a: metadata };
    const handle = await keel.client.client.workflow.start('agentWorkflow', {
      taskQueue: keel.taskQueue,
      workflowId: id('deep-input'),
      args: [{ model: 'scripted/brief', prompt: 'hi', metadata }],
    });
    await handle.result().catch(() => undefined);
    return { 'deep-input': await recorded(handle) };
  },
  /** 0.9.0: a run with an `output` schema whose first answer is repaired (the checkRunOutput local activity). */
  'typed-output': async (keel) => {
    const output = { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'] };
    const h = await keel.start({ model: 'scripted/typedRepair', prompt: 'answer', output }, id('typed-output'));
    await h.result();
    return { 'typed-output': await recorded(h.workflow) };
  },
  /** 0.9.0: the model's provider is down; the request goes to the next of `fallbackModels` (keel-0.9-fallback-model). */
  'model-fallback': async (keel) => {
    const h = await keel.start(
      { model: 'scripted/broken', fallbackModels: ['scripted/brief'], prompt: 'go' },
      id('model-fallback'),
    );
    await h.result();
    return { 'model-fallback': await recorded(h.workflow) };
  },
  /**
   * 0.10.0: a counterfactual replay's run (input `replay`, docs/runs.md#counterfactual-replay): the original's two tool
   * calls served from its record by the tool activities (their inputs carry `replay`; no command changes).
   */
  'counterfactual-replay': async (keel) => {
    const original = await keel.start(
      { model: 'scripted/stringArguments', prompt: 'go', tools: ['echo'] },
      id('replay-original'),
    );
    await original.result();
    const replay = await keel.client.replay({ runs: [original.workflowId] }, { batchId: id('counterfactual-replay') });
    await replay.report();
    const run = keel.client.client.workflow.getHandle(`${replay.batch.workflowId}-0`);
    return { 'counterfactual-replay': await recorded(run) };
  },
  /**
   * 0.11.0: a counterfactual replay of a run whose direct sub-agent call is served from the record
   * (keel-0.11-replay-sub-agents): the call is prepared by the `prepareToolCalls` activity, which serves it; no child.
   */
  'replay-sub-agent': async () => {
    const { defineAgent } = await import('../../activities/agents/define-agent.js');
    const helper = defineAgent({
      name: 'helper',
      description: 'Helps with one task.',
      systemPrompt: 'You help.',
      tools: [],
      model: 'scripted/replayChild',
    });
    const scripts: Record<string, Script> = {
      replayParent: {
        rules: [
          { match: 'toolResult:', text: 'answered' },
          { text: 'delegating', toolCalls: [{ id: 'h1', name: 'helper', arguments: { task: 'say hi' } }] },
        ],
      },
      replayChild: { rules: [{ text: 'hi' }] },
    };
    const withAgents = await startKeel({ scripts, agents: [helper] });
    try {
      const original = await withAgents.start(
        { model: 'scripted/replayParent', prompt: 'delegate', tools: ['helper'] },
        id('replay-sub-agent-original'),
      );
      await original.result();
      const replay = await withAgents.client.replay(
        { runs: [original.workflowId] },
        { batchId: id('replay-sub-agent') },
      );
      await replay.report();
      const run = withAgents.client.client.workflow.getHandle(`${replay.batch.workflowId}-0`);
      return { 'replay-sub-agent': await recorded(run) };
    } finally {
      await withAgents.stop();
    }
  },
  'model-failed': async (keel) => {
    const h = await keel.start({ model: 'scripted/broken', prompt: 'go' }, id('model-failed'));
    await h.workflow.result().catch(() => undefined);
    return { 'model-failed': await recorded(h.workflow) };
  },
  /**
   * 0.5.0: a run on a worker that verifies approvals (keel-0.5.0-verified-approvals): a token for another call is
   * refused after its verification (a local activity marker, the Update failed), then a valid HS256 token approves.
   */
  'verified-approval': async (keel) => {
    const secret = 'the-corpus-approval-secret-32-bytes!';
    const verifying = await startKeel({
      scripts: corpusScripts,
      tools: corpusTools,
      approvals: { authentication: { hmacSecret: secret } },
    });
    try {
      const h = await verifying.start(
        { model: 'scripted/approvalOutcomes', prompt: 'deny me', tools: ['gated'] },
        id('verified-approval'),
      );
      await until(async () => (await h.state()).pendingApprovals.length === 1, 60_000, 'approval pending');
      const [{ argsDigest, requestId }] = (await h.state()).pendingApprovals;
      const mint = (toolCallId: string) =>
        mintApprovalToken({
          secret,
          subject: 'alice',
          keyId: 'k1',
          workflowId: h.workflowId,
          toolCallId,
          argsDigest,
          requestId: requestId ?? '',
          decision: 'approve',
        });
      await h.approve({ toolCallId: 'g-1', argsDigest, token: await mint('g-9') }).catch(() => undefined);
      await h.approve({ toolCallId: 'g-1', argsDigest, token: await mint('g-1') });
      await h.result();
      return { 'verified-approval': await recorded(h.workflow) };
    } finally {
      void keel; // the corpus worker accepts free-text approvers; this scenario needs its own
      await verifying.stop();
    }
  },
  /**
   * 0.5.0: a graded batch under two variants (patch keel-0.5.0-batch-grading): children `<batchId>-<variant>-<index>`,
   * a `gradeBatchTask` activity per finished child (built-in graders), verdicts carried across continue-as-new.
   */
  'graded-variants-batch': async (keel) => {
    const input: AgentBatchInput = {
      tasks: [
        { model: 'scripted/brief', prompt: 'task 0', expected: 'done' },
        { model: 'scripted/brief', prompt: 'task 1', grader: 'regex', expected: '^nope$' },
        { model: 'scripted/brief', prompt: 'task 2', grader: 'includes', expected: ['do'] },
      ] as unknown as AgentBatchInput['tasks'],
      variants: [{ name: 'a' }, { name: 'b', model: 'scripted/brief', systemPrompt: 'Be brief.' }],
      concurrency: 2,
      taskQueue: keel.taskQueue,
      continueAsNewAfterTasks: 3,
    };
    const { runs } = await batchChain(keel, 'graded-variants-batch', input, 'a graded batch chain');
    return Object.fromEntries(runs.map((r, i) => [`graded-variants-batch.${i}`, r]));
  },
  /**
   * 0.6.0: one approval desk (keel-0.6.0-tree-approvals): a sub-agent (memo keelTree) whose call waits signals
   * `keelTreeApprovals` to its root, which lists it; denied through the root (routed to the sub-agent), the sub-agent
   * signals again and the root's list empties. Both histories: the sub-agent's (signals sent) and the root's.
   */
  'tree-approval': async (keel) => {
    const root = await keel.start(
      { model: 'scripted/approvalOutcomes', prompt: 'hello', tools: ['gated'], mode: 'session' },
      id('tree-approval-root'),
    );
    const subId = `${root.workflowId}-t-1`;
    await keel.client.client.workflow.start(AGENT_WORKFLOW_TYPE, {
      taskQueue: keel.taskQueue,
      workflowId: subId,
      args: [{ model: 'scripted/approvalOutcomes', prompt: 'deny me', tools: ['gated'] }],
      memo: {
        [TREE_MEMO_KEY]: {
          rootWorkflowId: root.workflowId,
          parentWorkflowId: root.workflowId,
          toolCallId: 't-1',
          depth: 1,
          path: ['helper › t-1'],
        },
      },
    });
    await until(async () => (await root.state()).pendingApprovals.length === 1, 60_000, 'listed at the root');
    const [p] = (await root.state()).pendingApprovals;
    await root.deny({ toolCallId: p.toolCallId, argsDigest: p.argsDigest, approver: 'corpus', reason: 'not now' });
    const sub = keel.client.getHandle(subId);
    await sub.result();
    await until(async () => (await root.state()).pendingApprovals.length === 0, 60_000, 'the root list empties');
    await root.end();
    return {
      'tree-approval.sub-agent': await recorded(sub.workflow),
      'tree-approval.root': await recorded(root.workflow),
    };
  },
  /**
   * 0.6.0: a parent calling two sub-agents in one parallel batch (patch keel-0.6.0-sub-agents): children
   * `<parent>-<toolCallId>` with the keelTree memo, one plain (its final text is the result), one typed (its output
   * checked by the checkSubAgentOutput local activity); the parent and both children recorded.
   */
  'sub-agents': async () => {
    const { defineAgent } = await import('../../activities/agents/define-agent.js');
    const base = { systemPrompt: 'You help.', tools: [], model: 'scripted/subChild' };
    const agents = [
      defineAgent({ ...base, name: 'helper', description: 'Helps with one task.' }),
      defineAgent({
        ...base,
        name: 'tally',
        description: 'Counts.',
        input: { type: 'object', properties: { what: { type: 'string' } }, required: ['what'] },
        output: { type: 'object', properties: { count: { type: 'integer' } }, required: ['count'] },
      }),
    ];
    const scripts: Record<string, Script> = {
      subParent: {
        rules: [
          { match: 'toolResult:', text: 'both answered' },
          {
            text: 'delegating',
            toolCalls: [
              { id: 'h1', name: 'helper', arguments: { task: 'say hi' } },
              { id: 't1', name: 'tally', arguments: { what: 'apples' } },
            ],
          },
        ],
      },
      subChild: { rules: [{ match: 'apples', text: '{"count": 3}' }, { text: 'hi' }] },
    };
    const withAgents = await startKeel({ scripts, agents });
    try {
      const h = await withAgents.start(
        { model: 'scripted/subParent', prompt: 'delegate', tools: ['helper', 'tally'] },
        id('sub-agents'),
      );
      await h.result();
      const child = (c: string) => withAgents.client.getHandle(`${h.workflowId}-${c}`).workflow;
      return {
        'sub-agents': await recorded(h.workflow),
        'sub-agents.child-h1': await recorded(child('h1')),
        'sub-agents.child-t1': await recorded(child('t1')),
      };
    } finally {
      await withAgents.stop();
    }
  },
  /**
   * 0.6.0: one budget for a tree (patch keel-0.6.0-tree-budget): a budgeted batch whose tasks reserve each model request
   * from it (`keelReserveBudget` Updates and `keelSettleBudget` signals in its history), and a root run that a
   * sub-agent (memo `keelTree`) reserved from.
   */
  'tree-budget': async (keel) => {
    const input: AgentBatchInput = {
      tasks: [0, 1].map((i) => ({ model: 'scripted/brief', prompt: `task ${i}` })),
      concurrency: 2,
      taskQueue: keel.taskQueue,
      budget: { maxTokens: 100_000 },
    };
    const batch = await keel.client.client.workflow.start(BATCH_WORKFLOW_TYPE, {
      taskQueue: keel.taskQueue,
      workflowId: id('tree-budget-batch'),
      args: [input],
    });
    await batch.result();
    const root = await keel.start(
      { model: 'scripted/brief', prompt: 'hello', mode: 'session', budget: { maxTokens: 100_000 } },
      id('tree-budget-root'),
    );
    await until(async () => (await root.state()).status === 'waiting', 60_000, 'root waiting');
    const tree: TreeMembership = {
      rootWorkflowId: root.workflowId,
      parentWorkflowId: root.workflowId,
      toolCallId: 'call_1',
      depth: 1,
      path: ['helper › call_1'],
    };
    const child = await keel.client.client.workflow.start('agentWorkflow', {
      taskQueue: keel.taskQueue,
      workflowId: `${root.workflowId}-call_1`,
      args: [{ model: 'scripted/brief', prompt: 'part' }],
      memo: { [TREE_MEMO_KEY]: tree },
    });
    await child.result();
    // the child's settlement (a signal) has reached the root
    await until(async () => (await root.state()).treeBudget?.[0]?.reserved === 0, 60_000, 'settled');
    const histories = {
      'tree-budget-batch': await recorded(batch),
      'tree-budget-batch.child-0': await recorded(keel.client.client.workflow.getHandle(`${batch.workflowId}-0`)),
      'tree-budget-root': await recorded(root.workflow),
      'tree-budget-child': await recorded(child),
    };
    await root.workflow.terminate('corpus recorded');
    return histories;
  },
};

/** One corpus file: `{ "workflowId": …, "history": <the history in Temporal's JSON form> }`. */
export function toJSON({ workflowId, history }: Recorded): string {
  return `{"workflowId":${JSON.stringify(workflowId)},"history":${historyToJSON(history as temporal.api.history.v1.History)}}\n`;
}

async function recorded(h: { workflowId: string; fetchHistory(): Promise<History> }): Promise<Recorded> {
  return { workflowId: h.workflowId, history: await h.fetchHistory() };
}
