/**
 * One approval desk for a sub-agent tree (issue 25 item 3, README "Sub-agents"): a call a sub-agent two levels down
 * waits for is listed in the root's `state().pendingApprovals` with its path and workflow id, in the root's current
 * details and in `keel pending`; approving it through the root (`AgentRunHandle.approve`, `keel approve <root>`)
 * runs it exactly once, decided by the sub-agent as at top level (digest, deny, timeout, `already …`, the audit
 * record, signed tokens bound to the sub-agent's run); the root's list empties once it is decided. The sub-agents are
 * started here as the sub-agent tree contract says (common/tree/membership.ts: `agentWorkflow` with the memo `keelTree`).
 */
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../../activities/agents/define-agent.js';
import { AGENT_WORKFLOW_TYPE, type AgentRunHandle } from '../../client/agent-client.js';
import { mintApprovalToken } from '../../client/approval-token.js';
import type { AgentRunInput } from '../../common/run.js';
import { treeApprovalsSignal } from '../../workflows/definitions.js';
import { TREE_MEMO_KEY, type TreeMembership } from '../../common/tree/membership.js';
import { BIN, keelCli } from './cli-child.js';
import { refusal, startKeel, strip, until, workflowTaskFailures, type Keel } from './harness.js';
import { dangerTool, ranLog } from './approval-fixtures.js';

const { ran, note } = ranLog();
const danger = dangerTool(note);
const scripts = {
  tree: {
    rules: [
      { match: 'toolResult:', text: 'all done' },
      { match: 'two levels', toolCalls: [{ id: 'd-1', name: 'danger', arguments: { target: 'x' } }] },
      { text: 'hello' },
    ],
  },
};
const digest = (json: string) => createHash('sha256').update(json).digest('hex');
const DIGEST_X = digest('{"target":"x"}');
const PATH = ['helper › call_r', 'critic › call_c'];
const SECRET = 'the-tree-approvals-test-secret-32-bytes+';

interface Tree {
  root: AgentRunHandle;
  child: AgentRunHandle;
  grandchild: AgentRunHandle;
}

/** A root session, its sub-agent (an idle session) and that one's sub-agent, whose task calls `danger`. */
async function startTree(keel: Keel, grandchildInput: Partial<AgentRunInput> = {}): Promise<Tree> {
  const base = { model: 'scripted/tree', tools: ['danger'] };
  const root = await keel.start({ ...base, prompt: 'hello root', mode: 'session' });
  const startSub = async (id: string, input: AgentRunInput, memo: TreeMembership) => {
    await keel.client.client.workflow.start(AGENT_WORKFLOW_TYPE, {
      taskQueue: keel.taskQueue,
      workflowId: id,
      args: [input],
      memo: { [TREE_MEMO_KEY]: memo },
    });
    return keel.client.getHandle(id);
  };
  const childId = `${root.workflowId}-call_r`;
  const child = await startSub(
    childId,
    { ...base, prompt: 'hello child', mode: 'session' },
    {
      rootWorkflowId: root.workflowId,
      parentWorkflowId: root.workflowId,
      toolCallId: 'call_r',
      depth: 1,
      path: [PATH[0]],
    },
  );
  const grandchild = await startSub(
    `${childId}-call_c`,
    { ...base, prompt: 'two levels down', ...grandchildInput },
    { rootWorkflowId: root.workflowId, parentWorkflowId: childId, toolCallId: 'call_c', depth: 2, path: PATH },
  );
  return { root, child, grandchild };
}

const rootLists = async (root: AgentRunHandle, n: number) => {
  await until(async () => (await root.state()).pendingApprovals.length === n, 20_000, `the root lists ${n}`);
  return (await root.state()).pendingApprovals;
};

/** Scheduled tool-call activities of a run (`runToolCall` prepares and may run; `executeToolCall` runs one prepared). */
async function toolActivities(h: AgentRunHandle): Promise<string[]> {
  const { events } = await h.workflow.fetchHistory();
  return (events ?? []).flatMap((e) => {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    return name === 'runToolCall' || name === 'executeToolCall' ? [name] : [];
  });
}

/** Signals this run sent to other workflows. */
async function signalsSent(h: AgentRunHandle): Promise<string[]> {
  const { events } = await h.workflow.fetchHistory();
  return (events ?? []).flatMap((e) => {
    const a = e.signalExternalWorkflowExecutionInitiatedEventAttributes;
    return a ? [`${a.signalName} → ${a.workflowExecution?.workflowId}`] : [];
  });
}

/** The `checkTreeMember` local activities a desk ran (their markers in its history). */
async function memberChecks(h: AgentRunHandle): Promise<number> {
  const { events } = await h.workflow.fetchHistory();
  const says = (v: unknown): boolean =>
    v instanceof Uint8Array
      ? Buffer.from(v).toString('utf8').includes('checkTreeMember')
      : v !== null && typeof v === 'object' && Object.values(v).some(says);
  return (events ?? []).filter((e) => e.markerRecordedEventAttributes && says(e.markerRecordedEventAttributes)).length;
}

/** Waits until the run completed a workflow task after the last signal it received (the signal was handled). */
async function untilSignalsHandled(h: AgentRunHandle): Promise<void> {
  await until(
    async () => {
      const events = (await h.workflow.fetchHistory()).events ?? [];
      const last = events.findLastIndex((e) => e.workflowExecutionSignaledEventAttributes);
      return events.slice(last).some((e) => e.workflowTaskCompletedEventAttributes);
    },
    20_000,
    'the signal handled',
  );
}

async function noTaskFailures(...runs: AgentRunHandle[]): Promise<void> {
  for (const r of runs) expect(await workflowTaskFailures(r)).toEqual([]);
}

/** Ends the tree's two sessions (the grandchild has ended) and checks that no workflow task of the tree failed. */
async function endTree({ root, child, grandchild }: Tree): Promise<void> {
  await Promise.all([root.end(), child.end()]);
  await noTaskFailures(root, child, grandchild);
}

/** The listing of the `danger {"target":"x"}` call d-1 awaiting approval in `workflowId`, at `path`. */
const pendingX = (workflowId: string, path: string[]) => ({
  toolCallId: 'd-1',
  toolName: 'danger',
  args: { target: 'x' },
  argsDigest: DIGEST_X,
  requestedAt: expect.any(Number),
  requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
  workflowId,
  path,
});

describe('one approval desk for a sub-agent tree', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, tools: [danger] });
  });
  afterAll(() => keel?.stop());

  const cli = (args: string[]) => keelCli(['--address', keel.address, '--task-queue', keel.taskQueue, ...args]);
  /** `keel watch <id>` as a child process: its output so far, and its end. */
  const watch = (id: string) => {
    const child = spawn(
      process.execPath,
      [BIN, '--address', keel.address, '--task-queue', keel.taskQueue, 'watch', id],
      {
        env: { ...process.env, NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const out = { stdout: '', stderr: '' };
    child.stdout.on('data', (d: Buffer) => (out.stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()));
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    return { out, closed };
  };

  it('a call two levels down is listed at the root (state, details, keel pending) and approved through it runs once', async () => {
    const { root, child, grandchild } = await startTree(keel, { mode: 'session' }); // open after the call: decided twice
    const [p] = await rootLists(root, 1);
    expect(p).toEqual(pendingX(grandchild.workflowId, PATH));
    expect((await grandchild.state()).pendingApprovals).toEqual([
      {
        toolCallId: 'd-1',
        toolName: 'danger',
        args: { target: 'x' },
        argsDigest: DIGEST_X,
        requestedAt: p.requestedAt,
        requestId: p.requestId,
      },
    ]);
    expect((await child.state()).pendingApprovals).toEqual([]);
    const meta = (await root.workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    expect(meta.currentDetails).toContain(
      `⚠ awaiting approval in helper › call_r › critic › call_c: danger {"target":"x"} (d-1 in ${grandchild.workflowId}, digest ${DIGEST_X.slice(0, 12)}…)`,
    );

    // keel pending: under the root, with the path; the sub-agent's own listing is not repeated
    await until(
      async () => (await cli(['pending'])).stdout.includes(`${root.workflowId}  d-1`),
      20_000,
      'keel pending lists it under the root',
    );
    const listed = await cli(['pending']);
    expect(listed.stdout).toContain(
      `${root.workflowId}  d-1  danger {"target":"x"}\n  in helper › call_r › critic › call_c (${grandchild.workflowId}) · since ${new Date(p.requestedAt).toISOString()} · digest ${DIGEST_X}\n`,
    );
    expect(listed.stdout).not.toContain(`${grandchild.workflowId}  d-1`);
    // keel watch on the root: the call with its path, and the commands that decide it through the root
    const watching = watch(root.workflowId);
    await until(async () => watching.out.stdout.includes('approval_needed d-1'), 20_000, 'keel watch shows it');
    const json = JSON.parse((await cli(['pending', '--json'])).stdout) as { workflowId: string }[];
    expect(json.filter((r) => [root, child, grandchild].some((h) => h.workflowId === r.workflowId))).toEqual([
      { workflowId: root.workflowId, url: expect.any(String), pendingApprovals: [p] },
    ]);

    // sent to the root as a raw Update, the root says where the call waits (it does not decide it)
    expect(
      await root.workflow
        .executeUpdate('approve', { args: [{ toolCallId: 'd-1', argsDigest: DIGEST_X, approver: 'x' }] })
        .then(
          () => 'accepted',
          (e: { cause?: { message?: string } }) => e.cause?.message,
        ),
    ).toBe(
      `Tool call d-1 awaits approval in sub-agent helper › call_r › critic › call_c (workflow ${grandchild.workflowId}): send approve / deny to that workflow (AgentClient and keel approve on this run route it there)`,
    );
    expect(ran.get(grandchild.workflowId)).toBeUndefined();

    const approved = await cli([
      'approve',
      root.workflowId,
      'd-1',
      '--digest',
      DIGEST_X,
      '--as',
      'erin',
      '--reason',
      'ok',
    ]);
    expect([approved.code, approved.stdout.split('\n')[0]], approved.stderr).toEqual([
      0,
      'approved d-1 (danger {"target":"x"}) in helper › call_r › critic › call_c as erin: ok',
    ]);
    // a second decision, through the root or on the sub-agent: the same answer as at top level
    expect(await refusal(root.deny({ toolCallId: 'd-1', argsDigest: DIGEST_X, approver: 'bob' }))).toBe(
      'Tool call d-1 was already approved by erin',
    );
    expect(await refusal(grandchild.approve({ toolCallId: 'd-1', argsDigest: DIGEST_X, approver: 'bob' }))).toBe(
      'Tool call d-1 was already approved by erin',
    );

    await until(async () => (await grandchild.state()).status === 'waiting', 20_000, 'the sub-agent answered');
    await grandchild.end();
    const r = await grandchild.result();
    const record = {
      toolCallId: 'd-1',
      toolName: 'danger',
      decision: 'approved',
      approver: 'erin',
      reason: 'ok',
      argsDigest: DIGEST_X,
      requestedAt: p.requestedAt,
      decidedAt: expect.any(Number),
    };
    expect(strip(r.newMessages).slice(2)).toEqual([
      {
        role: 'toolResult',
        toolCallId: 'd-1',
        toolName: 'danger',
        content: [{ type: 'text', text: 'did x' }],
        details: { approval: record },
        isError: false,
      },
      { role: 'assistant', content: [{ type: 'text', text: 'all done' }], stopReason: 'stop' },
    ]);
    expect(ran.get(grandchild.workflowId)).toEqual(['danger x']);
    // the preparation that asked for approval, then the one execution
    expect(await toolActivities(grandchild)).toEqual(['runToolCall', 'executeToolCall']);

    // the root's list empties; its approvals keep the sub-agent's record with where it was decided
    await rootLists(root, 0);
    const audit = (await grandchild.state()).approvals;
    expect(audit).toEqual([record]);
    expect((await root.state()).approvals).toEqual([{ ...audit[0], workflowId: grandchild.workflowId, path: PATH }]);
    expect(
      (await root.workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string },
    ).not.toMatchObject({ currentDetails: expect.stringContaining('awaiting approval') });

    // the sub-agent told the root twice (waiting, decided); its parent and the root sent nothing
    expect(await signalsSent(grandchild)).toEqual([
      `keelTreeApprovals → ${root.workflowId}`,
      `keelTreeApprovals → ${root.workflowId}`,
    ]);
    expect([await signalsSent(child), await signalsSent(root)]).toEqual([[], []]);
    await Promise.all([root.end(), child.end()]);
    expect(await watching.closed, watching.out.stderr).toBe(0);
    expect(watching.out.stdout).toContain(
      `approval_needed d-1 danger {"target":"x"} in helper › call_r › critic › call_c\n  keel approve ${root.workflowId} d-1 --digest ${DIGEST_X}  |  keel deny ${root.workflowId} d-1 --digest ${DIGEST_X} --reason …\n`,
    );
    await noTaskFailures(root, child, grandchild);
  });

  it('a keelTreeApprovals signal from outside the tree lists nothing at the root; a member’s still does (issue 33 item 10)', async () => {
    const tree = await startTree(keel);
    const [real] = await rootLists(tree.root, 1);
    const outsider = await keel.start({ model: 'scripted/tree', prompt: 'hello outsider', mode: 'session' });
    const { runId: outsiderRun } = await outsider.workflow.describe();
    const fake = (workflowId: string, runKey: string) => ({
      workflowId,
      runKey,
      path: ['pay › call_p'],
      seq: 99,
      pending: [
        {
          toolCallId: 'pay-1',
          toolName: 'pay',
          args: { to: 'mallory', amount: 1000 },
          argsDigest: 'f'.repeat(64),
          requestedAt: 0,
        },
      ],
      decided: [],
    });
    // a made-up run; a member's workflow id with a run id not its own; a real run outside the tree (no memo)
    const fakes = [
      fake('mallory-1', randomUUID()),
      fake(tree.grandchild.workflowId, randomUUID()),
      fake(outsider.workflowId, outsiderRun),
    ];
    for (const f of fakes) await tree.root.workflow.signal(treeApprovalsSignal, f);
    // every report handled: the grandchild's check and the three outsiders' (local activity markers)
    await until(async () => (await memberChecks(tree.root)) === 4, 20_000, 'the root checked every reporter');
    await untilSignalsHandled(tree.root);
    expect((await tree.root.state()).pendingApprovals).toEqual([real]);
    expect(real.workflowId).toBe(tree.grandchild.workflowId);
    // the outsider sending again is ignored without a new check
    await tree.root.workflow.signal(treeApprovalsSignal, { ...fakes[2], seq: 100 });
    await untilSignalsHandled(tree.root);
    expect((await tree.root.state()).pendingApprovals).toEqual([real]);
    expect(await memberChecks(tree.root)).toBe(4);
    await tree.grandchild.approve({ toolCallId: 'd-1', argsDigest: DIGEST_X, approver: 'erin' });
    expect((await tree.grandchild.result()).status).toBe('completed');
    await rootLists(tree.root, 0);
    await outsider.end();
    await endTree(tree);
  });

  it('a run without the memo sends nothing', async () => {
    const plain = await keel.start({ model: 'scripted/tree', prompt: 'two levels down', tools: ['danger'] });
    await until(async () => (await plain.state()).pendingApprovals.length === 1, 20_000, 'pending');
    await plain.approve({ toolCallId: 'd-1', argsDigest: DIGEST_X, approver: 'ann' });
    expect((await plain.result()).finalText).toBe('all done');
    expect(await signalsSent(plain)).toEqual([]);
  });

  it('through the root: a wrong digest and an unknown call are refused as at top level; deny gives the denied result', async () => {
    const { root, child, grandchild } = await startTree(keel);
    await rootLists(root, 1);
    const wrong = digest('{"target":"z"}');
    expect(await refusal(root.approve({ toolCallId: 'd-1', argsDigest: wrong, approver: 'alice' }))).toBe(
      `argsDigest ${wrong} does not match the arguments of tool call d-1 awaiting approval; read them (and their digest) with the state query`,
    );
    expect(await refusal(root.approve({ toolCallId: 'nope', argsDigest: DIGEST_X, approver: 'alice' }))).toBe(
      'No tool call nope is awaiting approval',
    );
    expect(ran.get(grandchild.workflowId)).toBeUndefined();
    const denied = await root.deny({ toolCallId: 'd-1', argsDigest: DIGEST_X, approver: 'bob', reason: 'not today' });
    expect(denied).toEqual({
      toolCallId: 'd-1',
      toolName: 'danger',
      decision: 'denied',
      approver: 'bob',
      reason: 'not today',
      argsDigest: DIGEST_X,
      requestedAt: expect.any(Number),
      decidedAt: expect.any(Number),
    });
    expect(strip((await grandchild.result()).newMessages)[2]).toEqual({
      role: 'toolResult',
      toolCallId: 'd-1',
      toolName: 'danger',
      content: [{ type: 'text', text: 'Tool danger was denied by bob: not today' }],
      details: { approval: denied },
      isError: true,
    });
    expect(ran.get(grandchild.workflowId)).toBeUndefined();
    await rootLists(root, 0);
    expect(await refusal(root.approve({ toolCallId: 'd-1', argsDigest: DIGEST_X, approver: 'alice' }))).toBe(
      'Tool call d-1 was already denied by bob',
    );
    await endTree({ root, child, grandchild });
  });

  it('approving the sub-agent directly still works: the root’s list empties', async () => {
    const { root, child, grandchild } = await startTree(keel);
    await rootLists(root, 1);
    await grandchild.approve({ toolCallId: 'd-1', argsDigest: DIGEST_X, approver: 'dora' });
    expect((await grandchild.result()).finalText).toBe('all done');
    await rootLists(root, 0);
    expect((await root.state()).approvals.map((a) => [a.toolCallId, a.decision, a.approver, a.workflowId])).toEqual([
      ['d-1', 'approved', 'dora', grandchild.workflowId],
    ]);
    expect(ran.get(grandchild.workflowId)).toEqual(['danger x']);
    await endTree({ root, child, grandchild });
  });

  it('a later sub-agent under the same workflow id (a repeated tool call id) is listed again', async () => {
    const { root, child, grandchild } = await startTree(keel);
    await rootLists(root, 1);
    await root.deny({ toolCallId: 'd-1', argsDigest: DIGEST_X, approver: 'bob' });
    await grandchild.result();
    await rootLists(root, 0);
    const memo = (await grandchild.workflow.describe()).memo!;
    await keel.client.client.workflow.start(AGENT_WORKFLOW_TYPE, {
      taskQueue: keel.taskQueue,
      workflowId: grandchild.workflowId,
      args: [{ model: 'scripted/tree', prompt: 'two levels down', tools: ['danger'] }],
      memo,
    });
    const [again] = await rootLists(root, 1);
    expect([again.workflowId, again.path]).toEqual([grandchild.workflowId, PATH]);
    await root.approve({ toolCallId: 'd-1', argsDigest: DIGEST_X, approver: 'ann' });
    expect((await grandchild.result()).finalText).toBe('all done');
    await rootLists(root, 0);
    expect(ran.get(grandchild.workflowId)).toEqual(['danger x']);
    await endTree({ root, child, grandchild });
  });

  it('through the root: a call that times out gets the not-approved result and leaves the root’s list', async () => {
    const { root, child, grandchild } = await startTree(keel, { approvalTimeout: '2s' });
    await rootLists(root, 1);
    expect(strip((await grandchild.result()).newMessages)[2]).toMatchObject({
      content: [{ type: 'text', text: 'Tool danger was not approved within 2s' }],
      isError: true,
    });
    await rootLists(root, 0);
    expect(await refusal(root.approve({ toolCallId: 'd-1', argsDigest: DIGEST_X, approver: 'alice' }))).toBe(
      'Tool call d-1 was already timed out',
    );
    expect(ran.get(grandchild.workflowId)).toBeUndefined();
    await endTree({ root, child, grandchild });
  });
});

describe('one approval desk for a batch', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, tools: [danger] });
  });
  afterAll(() => keel?.stop());

  it('a task’s call awaiting approval is listed in the batch’s progress (path task <i>) until it is decided', async () => {
    const batch = await keel.client.startBatch([
      { model: 'scripted/tree', prompt: 'hello', tools: ['danger'] },
      { model: 'scripted/tree', prompt: 'two levels down', tools: ['danger'] },
    ]);
    const task = batch.task(1);
    await until(async () => (await batch.progress()).pendingApprovals?.length === 1, 20_000, 'the batch lists it');
    const [p] = (await batch.progress()).pendingApprovals!;
    expect(p).toEqual(pendingX(task.workflowId, ['task 1']));
    await keel.client.getHandle(p.workflowId!).approve({ toolCallId: 'd-1', argsDigest: DIGEST_X, approver: 'ann' });
    expect((await task.result()).finalText).toBe('all done');
    await until(async () => (await batch.progress()).pendingApprovals === undefined, 20_000, 'the list empties');
    expect((await batch.result()).done).toBe(2);
    expect(ran.get(task.workflowId)).toEqual(['danger x']);
    await noTaskFailures(task);
  });
});

describe('one approval desk with signed approvals', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, tools: [danger], approvals: { authentication: { hmacSecret: SECRET } } });
  });
  afterAll(() => keel?.stop());

  it('a token bound to the sub-agent’s run decides through the root; one bound to the root is refused', async () => {
    const { root, child, grandchild } = await startTree(keel);
    const [p] = await rootLists(root, 1);
    const mint = (workflowId: string) =>
      mintApprovalToken({
        secret: SECRET,
        subject: 'alice@example.com',
        workflowId,
        toolCallId: p.toolCallId,
        argsDigest: p.argsDigest,
        requestId: p.requestId!,
        decision: 'approve',
      });
    expect(
      await refusal(root.approve({ toolCallId: 'd-1', argsDigest: DIGEST_X, token: await mint(root.workflowId) })),
    ).toBe(
      `Cannot approve tool call d-1: the token's keel_run is "${root.workflowId}", not "${grandchild.workflowId}"`,
    );
    expect(await refusal(root.approve({ toolCallId: 'd-1', argsDigest: DIGEST_X, approver: 'alice' }))).toBe(
      'approve: this run accepts only signed decisions: pass token, a JWT bound to this run, tool call and argsDigest (README "Who may approve")',
    );
    const record = await root.approve({ toolCallId: 'd-1', argsDigest: DIGEST_X, token: await mint(p.workflowId!) });
    expect([record.decision, record.approver, record.subject]).toEqual([
      'approved',
      'alice@example.com',
      'alice@example.com',
    ]);
    expect((await grandchild.result()).finalText).toBe('all done');
    expect(ran.get(grandchild.workflowId)).toEqual(['danger x']);
    await rootLists(root, 0);
    await endTree({ root, child, grandchild });
  });
});

describe('one approval desk for sub-agents defineAgent started (root › manager › worker)', () => {
  const manager = defineAgent({
    name: 'manager',
    description: 'Hands the work to a worker.',
    systemPrompt: 'You manage.',
    tools: ['worker'],
    model: 'scripted/manager',
  });
  const worker = defineAgent({
    name: 'worker',
    description: 'Does the dangerous part.',
    systemPrompt: 'You work.',
    tools: ['danger'],
    model: 'scripted/worker',
  });
  const treeScripts = {
    root: {
      rules: [
        { match: 'toolResult:', text: 'root done' },
        { toolCalls: [{ id: 'm1', name: 'manager', arguments: { task: 'manage' } }] },
      ],
    },
    manager: {
      rules: [
        { match: 'toolResult:', text: 'manager done' },
        { toolCalls: [{ id: 'w1', name: 'worker', arguments: { task: 'work' } }] },
      ],
    },
    worker: {
      rules: [
        { match: 'toolResult:', text: 'worker done' },
        { toolCalls: [{ id: 'd-2', name: 'danger', arguments: { target: 'y' } }] },
      ],
    },
  };
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts: treeScripts, tools: [danger], agents: [manager, worker] });
  });
  afterAll(() => keel?.stop());

  it('the worker’s call is listed at the root with its path, approved through the root, runs once; every level completes', async () => {
    const root = await keel.start({ model: 'scripted/root', prompt: 'go', tools: ['manager', 'worker', 'danger'] });
    const workerId = `${root.workflowId}-m1-w1`;
    const [p] = await rootLists(root, 1);
    expect([p.toolCallId, p.toolName, p.workflowId, p.path]).toEqual([
      'd-2',
      'danger',
      workerId,
      ['manager › m1', 'worker › w1'],
    ]);
    await root.approve({ toolCallId: 'd-2', argsDigest: p.argsDigest, approver: 'alice' });
    const r = await root.result();
    expect([r.status, r.finalText]).toEqual(['completed', 'root done']);
    expect(ran.get(workerId)).toEqual(['danger y']);
    const workerRun = keel.client.getHandle(workerId);
    expect((await workerRun.result()).finalText).toBe('worker done');
    expect(await toolActivities(workerRun)).toHaveLength(2); // prepared once, executed once
    expect((await root.state()).pendingApprovals).toEqual([]);
    await noTaskFailures(root, keel.client.getHandle(`${root.workflowId}-m1`), workerRun);
  });
});
