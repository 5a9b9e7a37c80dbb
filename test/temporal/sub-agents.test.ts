/** README "Sub-agents": typed child agents started per tool call as child agentWorkflows; one cancel; visible. */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { killAllWorkers, killWorker, spawnWorker } from './child-worker.js';
import { defineAgent, TASK_INPUT_SCHEMA, type AgentDefinition } from '../../activities/agents/define-agent.js';
import { RunSubAgents } from '../../activities/agents/run-agents.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import { subAgentsQuery } from '../../workflows/definitions.js';
import { allEvents, eventName, startKeel, strip, until, workflowTaskFailures, type Keel } from './harness.js';
import { call, reply, result, user } from './loop-fixtures.js';
import { keelCli } from './cli-child.js';

const { EventType } = temporal.api.enums.v1;

/** `keel <args>` against the test worker's server and task queue. */
const keelOn = (k: Keel, args: string[]) => keelCli(['--address', k.address, '--task-queue', k.taskQueue, ...args]);

const researcher = defineAgent({
  name: 'researcher',
  description: 'Researches one topic and answers in one line.',
  systemPrompt: 'You research.',
  tools: [],
  model: 'scripted/child',
});
const counter = defineAgent({
  name: 'counter',
  description: 'Counts things.',
  systemPrompt: 'You count.',
  tools: [],
  model: 'scripted/child',
  input: { type: 'object', properties: { what: { type: 'string' } }, required: ['what'] },
  output: { type: 'object', properties: { count: { type: 'integer' } }, required: ['count'] },
});
const broken = defineAgent({
  name: 'broken',
  description: 'Its model always errors.',
  systemPrompt: 'You fail.',
  tools: [],
  model: 'scripted/failing',
});
const slow = defineAgent({
  name: 'slow',
  description: 'Answers slowly.',
  systemPrompt: 'You take your time.',
  tools: [],
  model: 'scripted/slowchild',
});
const delegator = defineAgent({
  name: 'delegator',
  description: 'Delegates to a researcher.',
  systemPrompt: 'You delegate.',
  tools: ['researcher'],
  model: 'scripted/delegating',
});

const scripts = {
  parent: {
    rules: [
      { match: 'toolResult:', text: 'all done' },
      {
        match: 'fan out',
        text: 'asking three',
        toolCalls: [
          call('c1', 'researcher', { task: 'topic A' }),
          call('c2', 'researcher', { task: 'topic B' }),
          call('c3', 'researcher', { task: 'topic C' }),
        ],
      },
      { match: 'count', text: 'counting', toolCalls: [call('t1', 'counter', { what: 'sheep' })] },
      { match: 'break', text: 'trying', toolCalls: [call('b1', 'broken', { task: 'anything' })] },
      { match: 'loop', text: 'looping', toolCalls: [call('l1', 'looper', { task: 'read blobs' })] },
      { match: 'attach', text: 'asking', toolCalls: [call('p1', 'researcher', { task: 'be patient' })] },
      { match: 'one plain call', toolCalls: [call('o1', 'researcher', { task: 'plain topic' })] },
      { match: 'bad arguments', toolCalls: [call('v1', 'researcher', { topic: 'x' })] },
      { match: 'nobody', text: 'asking nobody', toolCalls: [call('n1', 'nobody', { task: 'x' })] },
      { match: 'deep', text: 'going deep', toolCalls: [call('d1', 'delegator', { task: 'delegate topic A' })] },
      {
        match: 'slowly',
        text: 'three slow ones',
        toolCalls: [
          call('s1', 'slow', { task: 'slow 1' }),
          call('s2', 'slow', { task: 'slow 2' }),
          call('s3', 'slow', { task: 'slow 3' }),
        ],
      },
    ],
  },
  child: {
    rules: [
      { match: 'topic A', text: 'A is first', chunkDelayMs: 150 },
      { match: 'topic B', text: 'B is second', chunkDelayMs: 150 },
      { match: 'topic C', text: 'C is third', chunkDelayMs: 150 },
      { match: 'sheep', text: '{"count": "many"}' },
      { match: 'patient', text: 'patiently done at last', chunkDelayMs: 400 },
      { match: 'plain topic', text: 'plainly answered' },
    ],
  },
  looping: {
    replies: [...[1, 2, 3, 4].map((n) => ({ toolCalls: [call(`b${n}`, 'blob', {})] })), { text: 'read four blobs' }],
  },
  failing: { rules: [{ fail: { message: 'model exploded', retryable: false } }] },
  slowchild: { rules: [{ text: 'a very long answer streamed slowly, chunk by chunk, forever', chunkDelayMs: 2000 }] },
  delegating: {
    rules: [
      { match: 'toolResult:', text: 'delegated' },
      { text: 'delegating', toolCalls: [call('r1', 'researcher', { task: 'topic A' })] },
    ],
  },
};

const looper = defineAgent({
  name: 'looper',
  description: 'Reads big blobs.',
  systemPrompt: 'You read.',
  tools: ['blob'],
  model: 'scripted/looping',
});
const blob = defineTool({
  name: 'blob',
  description: 'A 30 KB result.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [{ type: 'text', text: 'x'.repeat(30_000) }] }),
});

const agents = [researcher, counter, broken, slow, delegator, looper];

/**
 * A run's history as event type names (`ACTIVITY_TASK_SCHEDULED callModel`, `MARKER_RECORDED keel-0.8-sub-agent-calls`,
 * `UPSERT_WORKFLOW_SEARCH_ATTRIBUTES TemporalChangeVersion`): activities and patch markers named, upserts by key.
 */
async function eventNames(k: Keel, workflowId: string): Promise<string[]> {
  return ((await k.client.getHandle(workflowId).workflow.fetchHistory()).events ?? []).map(eventName);
}

/** The events of the call a turn's `callModel` asked for: after that activity's completion, up to the next one's scheduling. */
function callEvents(names: string[]): string[] {
  const done = names.indexOf('ACTIVITY_TASK_COMPLETED', names.indexOf('ACTIVITY_TASK_SCHEDULED callModel'));
  return names.slice(done + 1, names.indexOf('ACTIVITY_TASK_SCHEDULED callModel', done) + 1);
}

describe('sub-agents', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, agents, tools: [blob] });
  });
  afterAll(() => keel?.stop());

  it('three sub-agent calls in one batch run as concurrent child runs; their final texts are the results', async () => {
    const h = await keel.start({
      model: 'scripted/parent',
      prompt: 'fan out',
      tools: ['researcher'],
    });
    const r = await h.result();
    expect(r.status).toBe('completed');
    const id = h.workflowId;
    expect(strip(await h.allMessages())).toEqual([
      user('fan out'),
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'asking three' },
          { type: 'toolCall', id: 'c1', name: 'researcher', arguments: { task: 'topic A' } },
          { type: 'toolCall', id: 'c2', name: 'researcher', arguments: { task: 'topic B' } },
          { type: 'toolCall', id: 'c3', name: 'researcher', arguments: { task: 'topic C' } },
        ],
        stopReason: 'toolUse',
      },
      result('c1', 'researcher', 'A is first', { childWorkflowId: `${id}-c1` }),
      result('c2', 'researcher', 'B is second', { childWorkflowId: `${id}-c2` }),
      result('c3', 'researcher', 'C is third', { childWorkflowId: `${id}-c3` }),
      reply('all done'),
    ]);
    for (const [c, topic, text] of [
      ['c1', 'topic A', 'A is first'],
      ['c2', 'topic B', 'B is second'],
      ['c3', 'topic C', 'C is third'],
    ]) {
      const child = keel.client.getHandle(`${id}-${c}`);
      expect(strip(await child.allMessages())).toEqual([user(topic), reply(text)]);
      const d = await child.workflow.describe();
      expect(d.memo?.keelTree).toEqual({
        rootWorkflowId: id,
        parentWorkflowId: id,
        toolCallId: c,
        depth: 1,
        path: [`researcher › ${c}`],
        tools: ['researcher'], // the root run's tools bound the tree
        rootBudgeted: false, // 0.8.0: the root has no budget, so the child's requests reserve from no one
        leanStart: true, // 0.12.0: its start check a local activity, its search attributes set by the parent
      });
      expect(await d.staticSummary()).toBe(`sub-agent researcher: ${topic}`);
      expect(await d.staticDetails()).toContain(`**sub-agent** researcher · tool call ${c} of ${id}`);
      expect(await workflowTaskFailures(child)).toEqual([]);
    }
    // the children ran concurrently: every child started before the first one completed
    const history = await h.workflow.fetchHistory();
    const kinds = (history.events ?? []).flatMap((e) =>
      e.eventType === EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED
        ? ['started']
        : e.eventType === EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED
          ? ['completed']
          : [],
    );
    expect(kinds.slice(0, 3)).toEqual(['started', 'started', 'started']);
    expect(kinds).toHaveLength(6);
    // 0.8.0: plainly valid calls of a direct sub-agent need no preparation activity, in a parallel batch too
    expect(await eventNames(keel, id)).not.toContain('ACTIVITY_TASK_SCHEDULED prepareToolCalls');
    // the events carry the child's workflow id
    const starts = (await allEvents(h)).filter(
      (e) => e.type === 'tool_execution_start' || e.type === 'tool_execution_end',
    );
    expect(starts.map((e) => [e.type, (e as { childWorkflowId?: string }).childWorkflowId])).toEqual([
      ['tool_execution_start', `${id}-c1`],
      ['tool_execution_start', `${id}-c2`],
      ['tool_execution_start', `${id}-c3`],
      ...starts.slice(3).map((e) => ['tool_execution_end', (e as { childWorkflowId?: string }).childWorkflowId]),
    ]);
    expect(new Set(starts.slice(3).map((e) => (e as { childWorkflowId?: string }).childWorkflowId))).toEqual(
      new Set([`${id}-c1`, `${id}-c2`, `${id}-c3`]),
    );
    expect(await workflowTaskFailures(h)).toEqual([]);

    // a worker without the sub-agents reads them as the run recorded them (its subAgents query)
    const recorded = new RunSubAgents((w) => keel.client.getHandle(w).workflow.query(subAgentsQuery));
    const def = await recorded.tool(id, 'researcher');
    expect([def?.description, def?.parameters]).toEqual([researcher.description, TASK_INPUT_SCHEMA]);
    expect(await recorded.tool(id, 'nobody')).toBeUndefined();

    // keel transcript --child: a child's transcript; keel watch: the children's lines nested under their calls
    const t = await keelOn(keel, ['transcript', id, '--child', 'c2', '--format', 'json']);
    expect(t.code, t.stderr).toBe(0);
    expect(strip(JSON.parse(t.stdout))).toEqual([user('topic B'), reply('B is second')]);
    const w = await keelOn(keel, ['watch', id]);
    expect(w.code, w.stderr).toBe(0);
    for (const [c, text] of [
      ['c1', 'A is first'],
      ['c2', 'B is second'],
      ['c3', 'C is third'],
    ])
      expect(w.stdout.split('\n')).toContain(`  researcher › ${c} │ assistant ${text}`);
  });

  it('a plain sub-agent call costs a child start and its completion: no preparation activity, no budget round trips', async () => {
    // issue 35 item 5 (0.8.0, keel-0.8-sub-agent-calls): these exact lists are the cost of one call; a regression fails here
    const h = await keel.start({ model: 'scripted/parent', prompt: 'one plain call', tools: ['researcher'] });
    expect((await h.result()).status).toBe('completed');
    const id = h.workflowId;
    expect(strip(await h.allMessages())[2]).toEqual(
      result('o1', 'researcher', 'plainly answered', { childWorkflowId: `${id}-o1` }),
    );
    const task = ['WORKFLOW_TASK_SCHEDULED', 'WORKFLOW_TASK_STARTED', 'WORKFLOW_TASK_COMPLETED'];
    const patchMarker = (id: string) => [
      `MARKER_RECORDED ${id}`,
      'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES TemporalChangeVersion',
    ];
    // the parent: its one patch marker at its start (0.13.0's, which implies 0.12.0's lean start, 0.8.0's sub-agent
    // calls and 0.3.0's coarse upserts: none of their markers); the call's workflow task starts the child, the child's
    // start and its completion each wake the workflow; the turn's end schedules the next model call
    const names = await eventNames(keel, id);
    expect(names.slice(0, 7)).toEqual([
      'WORKFLOW_EXECUTION_STARTED',
      ...task,
      ...patchMarker('keel-0.13-implies-earlier'),
      'ACTIVITY_TASK_SCHEDULED startRun',
    ]);
    expect(names.filter((n) => n.startsWith('MARKER_RECORDED'))).toEqual(['MARKER_RECORDED keel-0.13-implies-earlier']);
    expect(callEvents(names)).toEqual([
      ...task,
      'START_CHILD_WORKFLOW_EXECUTION_INITIATED',
      'CHILD_WORKFLOW_EXECUTION_STARTED',
      ...task,
      'CHILD_WORKFLOW_EXECUTION_COMPLETED',
      ...task,
      'ACTIVITY_TASK_SCHEDULED callModel',
    ]);
    // the child (started lean, 0.12.0): its start check as a local activity in its first workflow task, one model call,
    // its end; no start upsert (its parent set the attributes in its start), no patch marker, no Update or signal to the
    // root (no budget anywhere)
    const child = keel.client.getHandle(`${id}-o1`);
    expect(await eventNames(keel, `${id}-o1`)).toEqual([
      'WORKFLOW_EXECUTION_STARTED',
      ...task,
      'MARKER_RECORDED local startRun',
      'ACTIVITY_TASK_SCHEDULED callModel',
      'ACTIVITY_TASK_STARTED',
      'ACTIVITY_TASK_COMPLETED',
      ...task,
      'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES Keel',
      'WORKFLOW_EXECUTION_COMPLETED',
    ]);
    const [first] = (await child.workflow.fetchHistory()).events ?? [];
    const fields = first.workflowExecutionStartedEventAttributes?.searchAttributes?.indexedFields ?? {};
    expect(Object.keys(fields).sort()).toEqual(['KeelCostUsd', 'KeelModel', 'KeelStatus', 'KeelTurns']);
    expect(Buffer.from(fields.KeelStatus.data!).toString()).toBe('"running"');
    expect((await child.workflow.describe()).searchAttributes.KeelStatus).toEqual(['completed']);
    // a query replays the closed child from its history (the local activity before the rest of its first task)
    expect((await child.state()).status).toBe('completed');
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('a sub-agent call whose arguments are not plainly valid is prepared by the activity: its exact validation text', async () => {
    const h = await keel.start({ model: 'scripted/parent', prompt: 'bad arguments', tools: ['researcher'] });
    expect((await h.result()).status).toBe('completed');
    expect(strip(await h.allMessages())[2]).toEqual(
      result(
        'v1',
        'researcher',
        'Validation failed for tool "researcher":\n  - task: must have required properties task\n\nReceived arguments:\n{\n  "topic": "x"\n}',
        {},
        true,
      ),
    );
    const names = await eventNames(keel, h.workflowId);
    expect(names).toContain('ACTIVITY_TASK_SCHEDULED prepareToolCalls');
    expect(names).not.toContain('START_CHILD_WORKFLOW_EXECUTION_INITIATED');
  });

  it('a typed output that fails validation gives the parent an error result naming the field', async () => {
    const h = await keel.start({ model: 'scripted/parent', prompt: 'count please', tools: ['counter'] });
    expect((await h.result()).status).toBe('completed');
    const id = h.workflowId;
    const messages = strip(await h.allMessages());
    expect(messages[2]).toEqual(
      result(
        't1',
        'counter',
        'Sub-agent "counter" output failed validation:\n  - count: must be integer',
        { childWorkflowId: `${id}-t1` },
        true,
      ),
    );
    // the typed input is the child's prompt, as JSON
    expect(strip(await keel.client.getHandle(`${id}-t1`).allMessages())[0]).toEqual(user('{"what":"sheep"}'));
  });

  it('a sub-agent whose model errors gives an error result that says so, and the parent goes on', async () => {
    const h = await keel.start({ model: 'scripted/parent', prompt: 'break it', tools: ['broken'] });
    expect((await h.result()).status).toBe('completed');
    const id = h.workflowId;
    const messages = strip(await h.allMessages()) as { content: { text: string }[]; isError?: boolean }[];
    expect(messages[2].isError).toBe(true);
    expect(messages[2].content[0].text).toMatch(
      new RegExp(`^Sub-agent "broken" failed \\(run ${id}-b1\\): .*model exploded`),
    );
    expect(messages[3]).toEqual(reply('all done'));
  });

  it('a child id already held by a running run: the call attaches to it instead of starting a second', async () => {
    const parentId = `attach-${randomUUID()}`;
    const running = await keel.start(
      { model: 'scripted/child', prompt: 'be patient', systemPrompt: 'You research.' },
      `${parentId}-p1`,
    );
    const h = await keel.start({ model: 'scripted/parent', prompt: 'attach please', tools: ['researcher'] }, parentId);
    expect((await h.result()).status).toBe('completed');
    expect(strip(await h.allMessages())[2]).toEqual(
      result('p1', 'researcher', 'patiently done at last', { childWorkflowId: `${parentId}-p1` }),
    );
    const history = await h.workflow.fetchHistory();
    const types = (history.events ?? []).map((e) => e.eventType);
    expect(types).toContain(EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED);
    expect(
      (history.events ?? []).filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'awaitSubAgentRun',
      ),
    ).toHaveLength(1);
    expect((await running.result()).finalText).toBe('patiently done at last');
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('an unknown sub-agent name gets the unknown-tool result', async () => {
    const h = await keel.start({ model: 'scripted/parent', prompt: 'ask nobody', tools: ['researcher'] });
    expect((await h.result()).status).toBe('completed');
    expect(strip(await h.allMessages())[2]).toEqual(result('n1', 'nobody', 'Tool nobody not found', {}, true));
  });

  it('a worker that caches no workflow starts its sub-agents not lean: their input check an activity, none timed out', async () => {
    // maxCachedWorkflows 0 drops a local activity in flight at each eviction (its workflow task then times out, 10 s)
    const cold = await startKeel({ scripts, agents, maxCachedWorkflows: 0 });
    try {
      const h = await cold.start({ model: 'scripted/parent', prompt: 'fan out', tools: ['researcher'] });
      expect((await h.result()).status).toBe('completed');
      for (const c of ['c1', 'c2', 'c3']) {
        const id = `${h.workflowId}-${c}`;
        expect((await cold.client.getHandle(id).workflow.describe()).memo?.keelTree).not.toHaveProperty('leanStart');
        const names = await eventNames(cold, id);
        expect(names.filter((n) => /startRun|TIMED_OUT/.test(n))).toEqual(['ACTIVITY_TASK_SCHEDULED startRun']);
      }
      expect(await workflowTaskFailures(h)).toEqual([]);
    } finally {
      await cold.stop();
    }
  });

  it('a grandchild is in the same tree; past the depth limit a call gets a clear error result', async () => {
    const deep = await startKeel({ scripts, agents, maxAgentDepth: 1 });
    try {
      const h = await deep.start({ model: 'scripted/parent', prompt: 'go deep', tools: ['delegator', 'researcher'] });
      expect((await h.result()).status).toBe('completed');
      const child = deep.client.getHandle(`${h.workflowId}-d1`);
      expect(strip(await child.allMessages())[2]).toEqual(
        result(
          'r1',
          'researcher',
          'Sub-agent "researcher" was not started: it would run at depth 2, deeper than this worker\'s limit of 1 (maxAgentDepth). Do the task here, or ask for it without delegating.',
          {},
          true,
        ),
      );
      // no child was started: its tool_execution_end names none
      const end = (await allEvents(child)).find((e) => e.type === 'tool_execution_end');
      expect(end && 'childWorkflowId' in end).toBe(false);
    } finally {
      await deep.stop();
    }
    // default limit 3: the grandchild runs, with the root and path in its memo
    // the root's tools bound its tree: it lists what its sub-agents use
    const h = await keel.start({ model: 'scripted/parent', prompt: 'go deep', tools: ['delegator', 'researcher'] });
    expect((await h.result()).status).toBe('completed');
    const grandchild = keel.client.getHandle(`${h.workflowId}-d1-r1`);
    expect((await grandchild.workflow.describe()).memo?.keelTree).toEqual({
      rootWorkflowId: h.workflowId,
      parentWorkflowId: `${h.workflowId}-d1`,
      toolCallId: 'r1',
      depth: 2,
      path: ['delegator › d1', 'researcher › r1'],
      tools: ['delegator', 'researcher'],
      rootBudgeted: false, // carried down from its parent's memo
      leanStart: true, // the grandchild's parent started it lean too
    });
    expect(strip(await h.allMessages())[2]).toEqual(
      result('d1', 'delegator', 'delegated', { childWorkflowId: `${h.workflowId}-d1` }),
    );
  });

  it('a child that continues-as-new keeps its keelTree memo and answers its parent', async () => {
    const h = await keel.start({
      model: 'scripted/parent',
      prompt: 'loop please',
      tools: ['looper', 'blob'],
      continueAsNewAfterBytes: 65536, // the child takes the caller's history limits
    });
    expect((await h.result()).status).toBe('completed');
    const id = `${h.workflowId}-l1`;
    expect(strip(await h.allMessages())[2]).toEqual(result('l1', 'looper', 'read four blobs', { childWorkflowId: id }));
    const child = keel.client.getHandle(id);
    expect((await child.state()).continuedAsNew).toBeGreaterThan(0);
    expect((await child.workflow.describe()).memo?.keelTree).toEqual({
      rootWorkflowId: h.workflowId,
      parentWorkflowId: h.workflowId,
      toolCallId: 'l1',
      depth: 1,
      path: ['looper › l1'],
      tools: ['looper', 'blob'],
      rootBudgeted: false,
      leanStart: true, // carried across the child's continue-as-new with the rest of the memo
    });
  });

  it("a batch task's sub-agents: the batch is the tree's root", async () => {
    const batchId = `subagent-batch-${Date.now()}`;
    const b = await keel.client.startBatch([{ model: 'scripted/parent', prompt: 'count please', tools: ['counter'] }], {
      batchId,
    });
    await b.result();
    const task = keel.client.getHandle(`${batchId}-0`);
    expect(strip(await task.allMessages())[2]).toEqual(
      result(
        't1',
        'counter',
        'Sub-agent "counter" output failed validation:\n  - count: must be integer',
        { childWorkflowId: `${batchId}-0-t1` },
        true,
      ),
    );
    expect((await keel.client.getHandle(`${batchId}-0-t1`).workflow.describe()).memo?.keelTree).toEqual({
      rootWorkflowId: batchId,
      parentWorkflowId: `${batchId}-0`,
      toolCallId: 't1',
      depth: 1,
      path: ['counter › t1'],
      tools: ['counter'],
      rootBudgeted: false, // a batch without a budget keeps no ledger
      leanStart: true,
    });
  });

  it('Temporal cancel of the root during three running children closes all four cancelled, no failed workflow task', async () => {
    const h = await keel.start({ model: 'scripted/parent', prompt: 'go slowly', tools: ['slow'] });
    const ids = ['s1', 's2', 's3'].map((c) => `${h.workflowId}-${c}`);
    await until(async () => (await h.state()).runningTools.length === 3, 20_000, 'three children running');
    // each child's model call is in flight
    for (const id of ids)
      await until(async () => (await keel.client.getHandle(id).state()).status === 'running', 20_000, id);
    await h.workflow.cancel();
    expect((await h.result()).status).toBe('cancelled');
    for (const id of [h.workflowId, ...ids]) {
      const d = await keel.client.getHandle(id).workflow.describe();
      expect([id, d.status.name]).toEqual([id, 'CANCELLED']);
      expect(await workflowTaskFailures(keel.client.getHandle(id))).toEqual([]);
    }
  });

  it('interrupt of the root stops the children and their in-flight model requests; each call gets an error result', async () => {
    const h = await keel.start({ model: 'scripted/parent', prompt: 'go slowly', tools: ['slow'], mode: 'session' });
    const ids = ['s1', 's2', 's3'].map((c) => `${h.workflowId}-${c}`);
    await until(async () => (await h.state()).runningTools.length === 3, 20_000, 'three children running');
    for (const id of ids)
      await until(
        async () => (await keel.client.getHandle(id).workflow.describe()).raw.pendingActivities?.length === 1,
        20_000,
        `${id} model call`,
      );
    await h.interrupt();
    await until(async () => (await h.state()).status === 'waiting', 20_000, 'parent waiting');
    const messages = strip(await h.allMessages());
    expect(messages.slice(2)).toEqual(
      ['s1', 's2', 's3'].map((c) =>
        result(
          c,
          'slow',
          `Sub-agent "slow" was cancelled (run ${h.workflowId}-${c}); it gave no result.`,
          { childWorkflowId: `${h.workflowId}-${c}` },
          true,
        ),
      ),
    );
    for (const id of ids) {
      const child = keel.client.getHandle(id);
      expect((await child.workflow.describe()).status.name).toBe('CANCELLED');
      const last = (await child.allMessages()).at(-1) as { role: string; stopReason?: string };
      expect([last.role, last.stopReason]).toEqual(['assistant', 'aborted']);
      expect(await workflowTaskFailures(child)).toEqual([]);
    }
    await h.cancel('test over');
    expect(await workflowTaskFailures(h)).toEqual([]);
  });
});

describe('sub-agents from a tools module (examples/agents.ts)', () => {
  it('keel tools lists the sub-agent; keel run calls it on a worker that registered the module', async () => {
    const module = fileURLToPath(new URL('../../examples/agents.ts', import.meta.url));
    const { agents: fromModule } = (await import(module)) as { agents: AgentDefinition[] };
    const k = await startKeel({ agents: fromModule });
    try {
      const listed = await keelOn(k, ['tools', '--no-builtin', '--tools-module', 'examples/agents.ts']);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toBe(
        'researcher  sub-agent  child run, scripted/examples/researcher-rules.json  Researches one topic and answers in one sentence.\n',
      );
      const run = await keelOn(k, [
        'run',
        'Compare durable agent runtimes.',
        '--model',
        'scripted/examples/lead-rules.json',
        '--tools',
        'researcher',
      ]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain(
        'tool_result researcher ok Its history is recorded, so it resumes where it stopped.',
      );
      expect(run.stdout).toContain('tool_result researcher ok Activities do the I/O, retried by Temporal.');
      expect(run.stdout).toContain('assistant Both answers are in: durable history, retried activities.');
    } finally {
      await k.stop();
    }
  });
});

describe('sub-agents: worker killed while children run', () => {
  afterAll(killAllWorkers);
  const FIXTURE = fileURLToPath(new URL('./fixtures/sub-agent-worker.ts', import.meta.url));
  const lines = (file: string) =>
    existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];

  it('kill -9 of the worker while three children run: each child started once, each tool run once, the parent completes', async () => {
    const taskQueue = `subagents-durable-${randomUUID()}`;
    const sideEffects = join(mkdtempSync(join(tmpdir(), 'keel-subagents-')), 'effects.log');
    const env = { KEEL_TASK_QUEUE: taskQueue, KEEL_SIDE_EFFECTS: sideEffects };
    const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
    const first = await spawnWorker(FIXTURE, { ...env, KEEL_HANG: '1' });
    const h = await client.start({
      model: 'scripted/treeParent',
      prompt: 'launch three',
      tools: ['tasker', 'launch'],
      heartbeatTimeout: '2s',
    });
    await until(() => lines(sideEffects).length === 3, 60_000, 'three children launched');
    await killWorker(first);
    const second = await spawnWorker(FIXTURE, { ...env, KEEL_HANG: '0' });
    try {
      const r = await h.result();
      expect(r.status).toBe('completed');
      const id = h.workflowId;
      // every launch ran once (the lost attempts were not retried: not idempotent), in three distinct children
      expect(lines(sideEffects).sort()).toEqual(['k1', 'k2', 'k3'].map((k) => `${id}-${k} attempt 1`));
      const history = await h.workflow.fetchHistory();
      const count = (t: number) => (history.events ?? []).filter((e) => e.eventType === t).length;
      expect(count(EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED)).toBe(3);
      expect(count(EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED)).toBe(3);
      expect(strip(r.newMessages).slice(2, 5)).toEqual(
        ['k1', 'k2', 'k3'].map((k) => result(k, 'tasker', 'child handled it', { childWorkflowId: `${id}-${k}` })),
      );
      for (const k of ['k1', 'k2', 'k3']) {
        const child = client.getHandle(`${id}-${k}`);
        const messages = strip(await child.allMessages()) as { role: string; content: { text?: string }[] }[];
        expect(messages[2].content[0].text).toBe(
          'Tool launch was interrupted before it finished and was not retried because it is not idempotent. It may have partially run.',
        );
      }
    } finally {
      await killWorker(second);
      await client.close();
    }
  });
});
