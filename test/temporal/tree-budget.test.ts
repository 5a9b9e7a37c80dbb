/**
 * One budget for a tree of runs (README "Budgets", common/tree/budget.ts). A root `agentWorkflow` with a budget; its
 * sub-agents are child `agentWorkflow`s started here with the memo `keelTree` (as a parent's tool call starts them).
 * Every model request attempt of a child reserves its worst case (estimated context + maxTokens) from the root before
 * it calls the provider, and settles its real usage after:
 * - six children in parallel that would together spend 3× the root's limit stop within the limit plus one request's
 *   worst case; the root's `state().treeBudget` has what they spent; the root's own next request is refused with the
 *   tree's exact figures;
 * - at depth 2, workers SIGKILLed during the model call: each lost attempt's reservation is spent once, the attempt
 *   after the limit is refused without calling the provider.
 */
import { randomUUID } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../../activities/agents/define-agent.js';
import { AgentClient, type AgentRunHandle } from '../../client/agent-client.js';
import { estimateContext } from '../../common/compaction.js';
import { grouped, type ReserveAnswer } from '../../common/tree/budget.js';
import type { ModelProvider, ModelRequest } from '../../activities/model/provider.js';
import { scriptedModel } from '../../activities/model/scripted.js';
import { result } from './loop-fixtures.js';
import type { Message } from '../../common/messages.js';
import type { AgentRunInput, AgentRunResult } from '../../common/run.js';
import { TREE_MEMO_KEY, type TreeMembership } from '../../common/tree/membership.js';
import { killAllWorkers, killWorker } from './child-worker.js';
import { startKeel, strip, until, type Keel } from './harness.js';
import {
  CHILD_WORKER,
  crashLoopStart,
  killWhileStreaming,
  MAX_TOKENS,
  three,
  tickTool as tick,
  tokens,
} from './budget-fixtures.js';

/** A sub-agent with a budget of its own that delegates to `helper`, whose four requests would spend 8000 tokens. */
const LEAD_LIMIT = 5000;
const lead = defineAgent({
  name: 'lead',
  description: 'Leads, under a budget of its own.',
  systemPrompt: 'You lead.',
  tools: ['helper'],
  model: 'scripted/lead',
  budget: { maxTokens: LEAD_LIMIT },
});
const helper = defineAgent({
  name: 'helper',
  description: 'Spends.',
  systemPrompt: 'You spend.',
  tools: ['tick'],
  model: 'scripted/helper',
});
const treeScripts = {
  top: {
    rules: [
      { match: 'toolResult:', text: 'top done', usage: tokens(10) },
      { toolCalls: [{ id: 'l1', name: 'lead', arguments: { task: 'lead it' } }], usage: tokens(10) },
    ],
  },
  lead: {
    rules: [
      { match: 'toolResult:', text: 'lead done', usage: tokens(100) },
      { toolCalls: [{ id: 'h1', name: 'helper', arguments: { task: 'spend' } }], usage: tokens(100) },
    ],
  },
  helper: {
    replies: [
      ...[1, 2, 3].map(() => ({ toolCalls: [{ name: 'tick', arguments: {} }], usage: tokens(2000) })),
      { text: 'spent it all', usage: tokens(2000) },
    ],
  },
};

/** Starts a sub-agent of `root` as its parent's workflow would: an `agentWorkflow` with the memo `keelTree`. */
function startChild(
  client: AgentClient,
  taskQueue: string,
  root: string,
  input: AgentRunInput,
  at: { toolCallId: string; depth: number; budgetedAncestors?: string[] },
) {
  const tree: TreeMembership = {
    rootWorkflowId: root,
    parentWorkflowId: at.depth === 1 ? root : `${root}-parent`,
    toolCallId: at.toolCallId,
    depth: at.depth,
    path: [`worker › ${at.toolCallId}`],
    ...(at.budgetedAncestors ? { budgetedAncestors: at.budgetedAncestors } : {}),
  };
  return client.client.workflow.start('agentWorkflow', {
    taskQueue,
    workflowId: `${tree.parentWorkflowId}-${at.toolCallId}`,
    args: [input],
    memo: { [TREE_MEMO_KEY]: tree },
  });
}

describe('tree budget', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts: { three, ...treeScripts }, tools: [tick], agents: [lead, helper] });
  });
  afterAll(async () => {
    killAllWorkers();
    await keel?.stop();
  });

  it('six children that would spend 3× the root’s limit stop within the limit plus one request’s worst case', async () => {
    const limit = 2400;
    const root = await keel.start({ model: 'scripted/three', mode: 'session', budget: { maxTokens: limit } });
    const children = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        startChild(
          keel.client,
          keel.taskQueue,
          root.workflowId,
          { model: 'scripted/three', prompt: `part ${i}`, tools: ['tick'], modelOptions: { maxTokens: MAX_TOKENS } },
          { toolCallId: `call_${i}`, depth: 1 },
        ),
      ),
    );
    const results = (await Promise.all(children.map((c) => c.result()))) as AgentRunResult[];
    const spent = results.reduce((n, r) => n + r.usage.totalTokens, 0);
    // the worst case each request made reserved: its transcript's estimate plus maxTokens
    let worst = 0;
    for (const r of results)
      r.newMessages.forEach((m: Message, j: number) => {
        if (m.role === 'assistant' && m.stopReason !== 'error')
          worst = Math.max(worst, estimateContext(r.newMessages.slice(0, j), '') + MAX_TOKENS);
      });
    expect(spent % 400).toBe(0);
    expect(spent).toBeGreaterThanOrEqual(limit);
    expect(spent).toBeLessThanOrEqual(limit + worst - 1);
    // what the root settled is what the children spent: every granted request answered 400 tokens
    expect((await root.state()).treeBudget).toEqual([{ kind: 'tokens', spent, reserved: 0, limit }]);
    const stopped = results.filter((r) => r.status === 'stopped');
    expect(stopped.length).toBeGreaterThan(0);
    for (const r of stopped)
      expect(r.error).toMatch(/^Budget exceeded: tokens [\d,]+ spent, [\d,]+ reserved of 2,400 \(tree budget\)$/);
    for (const r of results.filter((x) => x.status !== 'stopped')) expect(r.usage.totalTokens).toBe(1200);
    console.log(
      `tree budget bound (6 sub-agents): spent ${spent} of ${limit}, over by ${spent - limit}; largest worst case ${worst}; ${stopped.length} children stopped`,
    );
    // the root's own next request is refused by the tree's spend
    await root.followUp({ role: 'user', content: 'and now you' });
    const r = await root.result();
    expect(r.status).toBe('stopped');
    expect(r.error).toBe(`Budget exceeded: tokens ${grouped(spent)} spent, 0 reserved of 2,400 (tree budget)`);
    expect(r.usage.totalTokens).toBe(0);
  }, 120_000);

  it('a sub-agent’s spend counts against its budgeted parent too: the parent’s own limit stops its sub-agents and itself', async () => {
    const root = await keel.start({
      model: 'scripted/top',
      prompt: 'go',
      tools: ['lead', 'helper', 'tick'], // the root's tools bound its tree
      budget: { maxTokens: 100_000 },
    });
    const r = await root.result();
    const leadId = `${root.workflowId}-l1`;
    const helperId = `${leadId}-h1`;
    // lead 100; helper 2000 + 2000 + 2000, each granted while the lead's tree had spent less than 5000; the fourth refused
    const refused = 'Budget exceeded: tokens 6,100 spent, 0 reserved of 5,000 (tree budget)';
    const helperRun = (await keel.client.getHandle(helperId).result()) as AgentRunResult;
    expect([helperRun.status, helperRun.error, helperRun.usage.totalTokens]).toEqual(['stopped', refused, 6000]);
    const leadRun = (await keel.client.getHandle(leadId).result()) as AgentRunResult;
    expect([leadRun.status, leadRun.error, leadRun.usage.totalTokens]).toEqual(['stopped', refused, 100]);
    expect(leadRun.newMessages.map((m: Message) => (m.role === 'toolResult' ? m.content : m.role))).toEqual([
      'user',
      'assistant',
      [{ type: 'text', text: `Sub-agent "helper" stopped before finishing (run ${helperId}): ${refused}` }],
    ]);
    expect((await keel.client.getHandle(leadId).state()).treeBudget).toEqual([
      { kind: 'tokens', spent: 6100, reserved: 0, limit: LEAD_LIMIT },
    ]);
    // the root counted all of it: its own 20, the lead's 100 and the helper's 6000
    expect([r.status, r.finalText]).toEqual(['completed', 'top done']);
    expect((await root.state()).treeBudget).toEqual([{ kind: 'tokens', spent: 6120, reserved: 0, limit: 100_000 }]);
  }, 120_000);

  /** A budgeted root on a task queue no worker polls, and a child of it whose first model call is running. */
  async function childOfAnUnpolledRoot() {
    const rootQueue = `tree-root-${randomUUID()}`;
    const rootClient = await AgentClient.connect({ address: keel.address, taskQueue: rootQueue });
    const root = await rootClient.start({ model: 'scripted/three', mode: 'session', budget: { maxTokens: 10_000 } });
    const started = await startChild(
      keel.client,
      keel.taskQueue,
      root.workflowId,
      { model: 'scripted/three', prompt: 'part', tools: ['tick'], modelOptions: { maxTokens: MAX_TOKENS } },
      { toolCallId: 'call_1', depth: 1 },
    );
    const child = keel.client.getHandle(started.workflowId);
    await untilModelCall(child, 'the child calling the model');
    return { rootQueue, rootClient, root, child };
  }

  it('a root whose worker is down: the child’s reservation waits for it, and the model call goes on', async () => {
    // the root runs on a task queue no worker polls yet; the child's first model call waits on it
    const { rootQueue, rootClient, root, child } = await childOfAnUnpolledRoot();
    let rootWorker: Keel | undefined;
    try {
      rootWorker = await startKeel({ scripts: { three }, tools: [tick], taskQueue: rootQueue });
      const r = await child.result();
      expect(r.status).toBe('completed');
      expect(r.usage.totalTokens).toBe(1200);
      // no model attempt failed while the root was away
      const history = await child.workflow.fetchHistory();
      const attempts = history
        .events!.filter((e) => e.activityTaskStartedEventAttributes)
        .map((e) => e.activityTaskStartedEventAttributes!.attempt);
      expect(attempts.every((a) => a === 1)).toBe(true);
      await until(async () => (await root.state()).treeBudget?.[0]?.reserved === 0, 30_000, 'settled');
      expect((await root.state()).treeBudget).toEqual([{ kind: 'tokens', spent: 1200, reserved: 0, limit: 10_000 }]);
      await root.cancel();
    } finally {
      await rootWorker?.stop();
      await rootClient.close();
    }
  }, 120_000);

  it('a root whose worker is down: an interrupt of the child ends its model call waiting on the reservation', async () => {
    const { rootClient, root, child } = await childOfAnUnpolledRoot(); // no worker ever polls the root's queue
    expect(await child.interrupt()).toMatchObject({ interrupted: true });
    const r = await child.result();
    expect([r.status, r.usage.totalTokens]).toEqual(['stopped', 0]); // a task run ends when interrupted
    expect(r.newMessages.at(-1)).toMatchObject({ role: 'assistant', stopReason: 'aborted' });
    await root.workflow.terminate('test over');
    await rootClient.close();
  }, 120_000);

  it('a reservation granted by the root and waiting on an ancestor nobody polls: an interrupt releases the root’s', async () => {
    const root = await keel.start({ model: 'scripted/three', mode: 'session', budget: { maxTokens: 10_000 } });
    // a budgeted ancestor between them, on a task queue no worker polls
    const ancestorClient = await AgentClient.connect({ address: keel.address, taskQueue: `tree-mid-${randomUUID()}` });
    const ancestor = await ancestorClient.start({
      model: 'scripted/three',
      mode: 'session',
      budget: { maxTokens: 5000 },
    });
    const started = await startChild(
      keel.client,
      keel.taskQueue,
      root.workflowId,
      { model: 'scripted/three', prompt: 'part', tools: ['tick'], modelOptions: { maxTokens: MAX_TOKENS } },
      { toolCallId: 'call_1', depth: 2, budgetedAncestors: [ancestor.workflowId] },
    );
    const child = keel.client.getHandle(started.workflowId);
    // the root granted the reservation; the ancestor's answer is awaited
    await until(async () => ((await root.state()).treeBudget?.[0]?.reserved ?? 0) > 0, 30_000, 'reserved at the root');
    expect(await child.interrupt()).toMatchObject({ interrupted: true });
    expect((await child.result()).status).toBe('stopped');
    await until(async () => (await root.state()).treeBudget?.[0]?.reserved === 0, 30_000, 'released at the root');
    expect((await root.state()).treeBudget).toEqual([{ kind: 'tokens', spent: 0, reserved: 0, limit: 10_000 }]);
    await ancestor.workflow.terminate('test over');
    await ancestorClient.close();
    await root.cancel();
  }, 120_000);

  it('a root not found (yet): the reservation is asked again, with backoff, until the root answers', async () => {
    const rootId = `tree-late-root-${randomUUID()}`;
    const started = await startChild(
      keel.client,
      keel.taskQueue,
      rootId,
      { model: 'scripted/three', prompt: 'part', tools: ['tick'], modelOptions: { maxTokens: MAX_TOKENS } },
      { toolCallId: 'call_1', depth: 1 },
    );
    const child = keel.client.getHandle(started.workflowId);
    // the first attempt is still running a second later (it heartbeated): the refused Updates were asked again
    await untilModelCall(child, 'the child’s reservation waiting', (a) => a.attempt === 1 && !!a.lastHeartbeatTime);
    const root = await keel.start({ model: 'scripted/three', mode: 'session', budget: { maxTokens: 10_000 } }, rootId);
    const r = await child.result();
    expect(r.status).toBe('completed');
    const history = await child.workflow.fetchHistory();
    expect(
      history
        .events!.filter((e) => e.activityTaskStartedEventAttributes)
        .map((e) => e.activityTaskStartedEventAttributes!.attempt),
    ).toEqual([1, 1, 1, 1, 1, 1]); // startRun, 3 model calls, 2 tool calls: none retried
    await until(async () => (await root.state()).treeBudget?.[0]?.spent === 1200, 30_000, 'settled');
    await root.cancel();
  }, 120_000);

  it('kill -9 during a model call at depth 2: each lost attempt is spent once, at its reservation', async () => {
    const { taskQueue, env, client, worker: first } = await crashLoopStart('tree-crash');
    // each attempt reserves the prompt's estimate plus maxTokens; the root allows three
    const reservation =
      estimateContext([{ role: 'user', content: [{ type: 'text', text: 'spend' }], timestamp: 0 }], '') + MAX_TOKENS;
    const limit = 3 * reservation;
    const root = await client.start({ model: 'spender/300', mode: 'session', budget: { maxTokens: limit } });
    const started = await startChild(
      client,
      taskQueue,
      root.workflowId,
      {
        model: 'spender/300',
        prompt: 'spend',
        heartbeatTimeout: '2s',
        modelRetry: { initialInterval: '100ms', maximumInterval: '200ms', maximumAttempts: 50 },
        modelOptions: { maxTokens: MAX_TOKENS },
      },
      { toolCallId: 'call_1', depth: 2 },
    );
    const child = client.getHandle(started.workflowId);
    // the attempt on each worker reserved and streamed; the earlier ones' reservations were spent when it reserved
    const worker = await killWhileStreaming(child, first, {
      fixture: CHILD_WORKER,
      env,
      kills: 3,
      perAttempt: 300,
      beforeKill: async (kill) =>
        expect((await root.state()).treeBudget).toEqual([
          { kind: 'tokens', spent: (kill - 1) * reservation, reserved: reservation, limit },
        ]),
    });
    const r = await child.result();
    expect(r.status).toBe('stopped');
    expect(r.error).toBe(
      `Budget exceeded: tokens ${grouped(limit)} spent, 0 reserved of ${grouped(limit)} (tree budget)`,
    );
    expect(r.usage.totalTokens).toBe(900); // what the three lost attempts streamed, as the child counts it
    expect(r.modelCalls).toBe(1);
    expect(r.newMessages).toHaveLength(1); // the prompt: the fourth attempt never called the provider
    expect((await root.state()).treeBudget).toEqual([{ kind: 'tokens', spent: limit, reserved: 0, limit }]);
    await root.cancel();
    await killWorker(worker);
    await client.close();
  }, 240_000);
});

type PendingActivity = NonNullable<
  Awaited<ReturnType<AgentRunHandle['workflow']['describe']>>['raw']['pendingActivities']
>[number];

/** Waits (30 s at most) until the run has a pending model call (`callModel`) for which `also` holds. */
async function untilModelCall(
  h: AgentRunHandle,
  what: string,
  also: (a: PendingActivity) => boolean = () => true,
): Promise<void> {
  await until(
    async () =>
      ((await h.workflow.describe()).raw.pendingActivities ?? []).some(
        (a) => a.activityType?.name === 'callModel' && also(a),
      ),
    30_000,
    what,
  );
}

/**
 * Issue 33 item 12 — the README's 2,400-token tree budget, four sub-agents called in one parallel batch through a real
 * sub-agent tool (nothing sets `maxTokens`, so each request reserves its context + 4,096 tokens). A reservation that
 * only the others in flight keep out is answered `wait` and asked again until they settle; nobody is stopped while the tree
 * has room. The children's model requests are held (a gate) until all four reservations reached the root.
 */
describe('tree budget: parallel sub-agents wait for room instead of stopping', () => {
  const part = defineAgent({
    name: 'part',
    description: 'Does one part.',
    systemPrompt: 'You do a part.',
    tools: [],
    model: 'scripted/part',
    modelOptions: { temperature: 0 },
  });
  const fanScripts = {
    fan: {
      rules: [
        { match: 'toolResult:', text: 'fan done', usage: tokens(400) },
        {
          toolCalls: [1, 2, 3, 4].map((i) => ({ id: `p${i}`, name: 'part', arguments: { task: `part ${i}` } })),
          usage: tokens(400),
        },
      ],
    },
    part: { rules: [{ text: 'part done', usage: tokens(400) }] },
  };
  const requests: ModelRequest[] = [];
  let gate: { open: () => void; opened: Promise<void> } | undefined;
  const inner = scriptedModel(fanScripts);
  const gated: ModelProvider = {
    checkModel: inner.checkModel,
    async stream(request, signal, onPartial) {
      requests.push(structuredClone(request));
      if (request.modelId === 'part' && gate) await gate.opened; // until the four reservations reached the root
      return inner.stream(request, signal, onPartial);
    },
  };
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ models: { scripted: gated }, agents: [part] });
  });
  afterAll(() => keel?.stop());

  /**
   * The root's reservations and settlements, in history order: `reserve <workflowId>` (an Update accepted), its answer
   * `granted <workflowId>` / `wait <workflowId>` / `refused <workflowId>`, and `settle`.
   */
  async function ledgerEvents(root: AgentRunHandle): Promise<string[]> {
    const events = (await root.workflow.fetchHistory()).events ?? [];
    const asker = new Map<string, string>();
    return events.flatMap((e) => {
      const asked = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest;
      if (asked) {
        const claim = defaultPayloadConverter.fromPayload(asked.input!.args!.payloads![0] as never) as { key: string };
        asker.set(asked.meta!.updateId!, claim.key.split('/')[0]);
        return [`reserve ${claim.key.split('/')[0]}`];
      }
      const done = e.workflowExecutionUpdateCompletedEventAttributes;
      if (done) {
        const payload = done.outcome?.success?.payloads?.[0];
        const answer = payload ? (defaultPayloadConverter.fromPayload(payload as never) as ReserveAnswer) : undefined;
        const kind = answer?.granted ? 'granted' : answer && 'wait' in answer ? 'wait' : 'refused';
        return [`${kind} ${asker.get(done.meta!.updateId!)}`];
      }
      return e.workflowExecutionSignaledEventAttributes?.signalName === 'keelSettleBudget' ? ['settle'] : [];
    });
  }

  /** The runs whose reservations reached the root so far. */
  const askers = (events: string[]) => new Set(events.filter((e) => e.startsWith('reserve ')).map((e) => e.slice(8)));
  /** The events without their run: `granted`, `settle`, … */
  const kinds = (events: string[]) => events.map((e) => e.split(' ')[0]);

  async function fanOut(input: Partial<AgentRunInput>): Promise<{ root: AgentRunHandle; events: string[] }> {
    let open!: () => void;
    gate = { open: () => open(), opened: new Promise<void>((r) => (open = r)) };
    const g = gate;
    const root = await keel.start({
      model: 'scripted/fan',
      prompt: 'four parts',
      tools: ['part'],
      budget: { maxTokens: 2400 },
      ...input,
    });
    // the four children's first reservations reached the root while the first child's request is held
    await until(async () => askers(await ledgerEvents(root)).size === 4, 30_000, '4 asked');
    g.open();
    const r = await root.result();
    expect([r.status, r.finalText, r.error]).toEqual(['completed', 'fan done', undefined]);
    expect(strip(r.newMessages).slice(2, 6)).toEqual(
      [1, 2, 3, 4].map((i) => result(`p${i}`, 'part', 'part done', { childWorkflowId: `${root.workflowId}-p${i}` })),
    );
    for (const i of [1, 2, 3, 4]) {
      const child = (await keel.client.getHandle(`${root.workflowId}-p${i}`).result()) as AgentRunResult;
      expect([child.status, child.usage.totalTokens]).toEqual(['completed', 400]);
    }
    // the root's 800 and the children's 1,600: exactly the limit, nothing reserved
    expect((await root.state()).treeBudget).toEqual([{ kind: 'tokens', spent: 2400, reserved: 0, limit: 2400 }]);
    return { root, events: await ledgerEvents(root) };
  }

  it('four children that each reserve 4,1xx tokens of 2,400: they run one after another, all complete', async () => {
    const { root, events } = await fanOut({});
    // one reservation in flight at a time: each grant follows the settlement of the one before
    expect(kinds(events).filter((e) => e === 'granted' || e === 'settle')).toEqual([
      'granted',
      'settle',
      'granted',
      'settle',
      'granted',
      'settle',
      'granted',
      'settle',
    ]);
    // the three others asked before the first settled, were told to wait (none refused), and asked again
    const beforeSettle = events.slice(0, events.indexOf('settle'));
    expect(askers(beforeSettle).size).toBe(4);
    expect(new Set(beforeSettle.filter((e) => e.startsWith('wait '))).size).toBe(3);
    expect(kinds(events).filter((e) => e === 'refused')).toEqual([]);
    // each child's request reserved its context + 4,096 (no model options anywhere) and was sent with none
    const parts = requests.filter((q) => q.modelId === 'part' && q.systemPrompt === 'You do a part.');
    expect(parts.slice(-4).map((q) => q.options)).toEqual([1, 2, 3, 4].map(() => ({ temperature: 0 })));
    console.log(
      `tree budget, 4 sub-agents of a 2,400-token root (no maxTokens): ${kinds(events).filter((e) => e === 'wait').length} wait answers; ${kinds(
        events,
      )
        .filter((e) => e === 'granted' || e === 'settle')
        .join(' ')}`,
    );
    void root;
  }, 120_000);

  it('an interrupt of a child whose reservation waits for room ends its wait; the others go on', async () => {
    let open!: () => void;
    gate = { open: () => open(), opened: new Promise<void>((r) => (open = r)) };
    const g = gate;
    const root = await keel.start({
      model: 'scripted/fan',
      prompt: 'four parts',
      tools: ['part'],
      budget: { maxTokens: 2400 },
    });
    await until(async () => askers(await ledgerEvents(root)).size === 4, 30_000, '4 asked');
    // the child granted first is the one whose Update was answered `granted`: any other waits
    const events = await ledgerEvents(root);
    const first = events.find((e) => e.startsWith('granted '))!.slice(8);
    const waiting = [...askers(events)].find((id) => id !== first)!;
    const child = keel.client.getHandle(waiting);
    expect(await child.interrupt()).toMatchObject({ interrupted: true });
    const c = (await child.result()) as AgentRunResult;
    expect([c.status, c.usage.totalTokens, c.newMessages.at(-1)?.role]).toEqual(['stopped', 0, 'assistant']);
    g.open();
    const r = await root.result();
    expect([r.status, r.finalText]).toEqual(['completed', 'fan done']);
    expect(
      r.newMessages
        .filter((m: Message) => m.role === 'toolResult')
        .map((m: Message) => (m as { isError: boolean }).isError),
    ).toEqual([1, 2, 3, 4].map((i) => `${root.workflowId}-p${i}` === waiting));
    // the interrupted child's reservation was never granted: the three others and the root's two requests spent 2,000
    expect((await root.state()).treeBudget).toEqual([{ kind: 'tokens', spent: 2000, reserved: 0, limit: 2400 }]);
  }, 120_000);

  it('the caller’s model options are inherited (the definition’s win): with maxTokens 500 all four run at once', async () => {
    requests.length = 0;
    const { root, events } = await fanOut({ modelOptions: { maxTokens: 500, temperature: 0.7 } });
    // 400 spent + four reservations of ≈ 505: each granted while the others were still in flight
    expect(kinds(events).filter((e) => e !== 'reserve')).toEqual([
      'granted',
      'granted',
      'granted',
      'granted',
      'settle',
      'settle',
      'settle',
      'settle',
    ]);
    const options = requests.map((q) => [q.modelId, q.options]);
    expect(options).toEqual([
      ['fan', { maxTokens: 500, temperature: 0.7 }],
      ...[1, 2, 3, 4].map(() => ['part', { maxTokens: 500, temperature: 0 }]),
      ['fan', { maxTokens: 500, temperature: 0.7 }],
    ]);
    const child = await keel.client.getHandle(`${root.workflowId}-p1`).workflow.describe();
    // 0.8.0: the root keeps a budget, so the memo says so and the children's requests reserve from it (above)
    expect(child.memo?.keelTree).toMatchObject({ tools: ['part'], rootBudgeted: true });
  }, 120_000);
});
