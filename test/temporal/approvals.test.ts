/**
 * Human approval of tool calls (README "Approvals"): a call needing approval waits while the rest of its batch runs,
 * is listed in `state().pendingApprovals`, the current details and `KeelStatus="awaiting-approval"`, and is decided by
 * the `approve` / `deny` Updates (validated: unknown or decided call, wrong digest, empty approver), by its timeout,
 * or by an interrupt; it survives continue-as-new and runs exactly once. Also the `keel` CLI and the `temporal` CLI,
 * `approval: 'never'` (no wait at all), a refusal as the client and Temporal report it (`KeelUpdateRejected`), and
 * `approve` / `deny` refused while a cancelled run is still finishing a call, and when a cancel or interrupt comes in the
 * same workflow task (the call never runs).
 */
import { execFile, spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { ApplicationFailure, WorkflowUpdateFailedError } from '@temporalio/client';
import { UpdateRejectedError, type AgentRunHandle } from '../../client/agent-client.js';
import type { AgentRunInput } from '../../common/run.js';
import type { ApprovalRecord } from '../../common/updates.js';
import { ensureTemporalCli } from '../../scripts/temporal-cli.mjs';
import { steerSignal } from '../../workflows/definitions.js';
import {
  acceptedUpdates,
  allEvents,
  gate,
  notation,
  refusal,
  startKeel,
  strip,
  until,
  untilContinuedAsNew,
  workflowTaskFailures,
  type Keel,
} from './harness.js';
import { dangerTool, ranLog } from './approval-fixtures.js';
import { call, reply, result, toolUse, user } from './loop-fixtures.js';

/** Executions per workflow id: what actually ran. */
const { ran, note } = ranLog();
const danger = dangerTool(note, { withDetails: true });
const deploy = defineTool({
  name: 'deploy',
  description: 'Needs approval only for prod.',
  approval: (args: { env: string }) => args.env === 'prod',
  parameters: { type: 'object', properties: { env: { type: 'string' } }, required: ['env'] },
  execute: async (_id, args: { env: string }, _s, _u, ctx) => {
    note(ctx.workflowId, `deploy ${args.env}`);
    return { content: [{ type: 'text', text: `deployed ${args.env}` }] };
  },
});
const quick = defineTool({
  name: 'quick',
  description: 'Needs no approval.',
  parameters: { type: 'object', properties: { v: { type: 'string' } }, required: ['v'] },
  execute: async (_id, args: { v: string }, _s, _u, ctx) => {
    note(ctx.workflowId, `quick ${args.v}`);
    return { content: [{ type: 'text', text: `quick ${args.v}` }] };
  },
});
const safe = defineTool({
  name: 'safe',
  description: 'Says explicitly that it needs no approval.',
  approval: 'never',
  parameters: { type: 'object', properties: { v: { type: 'string' } }, required: ['v'] },
  execute: async (_id, args: { v: string }, _s, _u, ctx) => {
    note(ctx.workflowId, `safe ${args.v}`);
    return { content: [{ type: 'text', text: `safe ${args.v}` }] };
  },
});
/** Takes its arguments as a JSON string too (a tool's own `prepareArguments`): approval sees the parsed object. */
const lenient = defineTool({
  name: 'lenient',
  description: 'Needs approval; parses arguments sent as a JSON string.',
  approval: 'always',
  parameters: { type: 'object', properties: { target: { type: 'string' } }, required: ['target'] },
  prepareArguments: (args: unknown) => (typeof args === 'string' ? (JSON.parse(args) as unknown) : args),
  execute: async (_id, args: { target: string }, _s, _u, ctx) => {
    note(ctx.workflowId, `lenient ${args.target}`);
    return { content: [{ type: 'text', text: `lenient ${args.target}` }] };
  },
});
let hold = gate();
let slowStarted = gate();
/** Ignores its AbortSignal on purpose: a cancelled run stays "being cancelled" until the test opens `hold`. */
const slow = defineTool({
  name: 'slow',
  description: 'Waits until the test releases it.',
  parameters: { type: 'object', properties: {} },
  execute: async (_id, _args, _s, _u, ctx) => {
    slowStarted.open();
    await hold.promise;
    note(ctx.workflowId, 'slow');
    return { content: [{ type: 'text', text: 'slow done' }] };
  },
});

const scripts = {
  approvals: {
    rules: [
      { match: 'toolResult:', text: 'all done' },
      { match: 'steer-', text: 'saw the steer' },
      {
        match: 'parallel',
        toolCalls: [
          call('q-1', 'quick', { v: 'a' }),
          call('d-1', 'danger', { target: 'x' }),
          call('q-2', 'quick', { v: 'b' }),
        ],
      },
      { match: 'deploys', toolCalls: [call('p-1', 'deploy', { env: 'dev' }), call('p-2', 'deploy', { env: 'prod' })] },
      { match: 'single', toolCalls: [call('d-1', 'danger', { target: 'y' })] },
      { match: 'one deploy', toolCalls: [call('p-3', 'deploy', { env: 'dev' })] },
      { match: 'safely', toolCalls: [call('s-1', 'safe', { v: 'a' })] },
      {
        match: 'as text',
        toolCalls: [
          { id: 't-1', name: 'danger', arguments: '{"target":"x"}' },
          { id: 't-2', name: 'lenient', arguments: '{"target":"y"}' },
          call('t-3', 'danger', { target: 'z' }),
        ],
      },
      { match: 'slowly', toolCalls: [call('h-1', 'slow', {}), call('d-1', 'danger', { target: 'w' })] },
      { text: 'hello' },
    ],
  },
};

const digest = (json: string) => createHash('sha256').update(json).digest('hex');

/** TimerStarted events in the run's history. */
async function timersStarted(h: AgentRunHandle): Promise<number> {
  const { events } = await h.workflow.fetchHistory();
  return (events ?? []).filter((e) => e.timerStartedEventAttributes).length;
}

/** A decision record with its times checked for plausibility and then left out. */
function timeless(r: ApprovalRecord): Omit<ApprovalRecord, 'requestedAt' | 'decidedAt'> {
  const { requestedAt, decidedAt, ...rest } = r;
  expect(decidedAt).toBeGreaterThanOrEqual(requestedAt);
  return rest;
}

describe('approvals', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({
      scripts,
      tools: [danger, deploy, quick, safe, slow, lenient],
      // the worker's policy: trusted runs need no approval, strict runs need it for every tool
      hooks: {
        needsApproval: (ctx) =>
          ctx.context.metadata.trusted === true ? false : ctx.context.metadata.strict === true ? true : undefined,
      },
    });
  });
  afterAll(() => keel?.stop());

  const start = (prompt: string, extra: Partial<AgentRunInput> = {}) =>
    keel.start({ model: 'scripted/approvals', prompt, tools: ['danger', 'deploy', 'quick'], ...extra });
  const pending = async (h: AgentRunHandle, n = 1) => {
    await until(async () => (await h.state()).pendingApprovals.length === n, 20_000, 'pending approval');
    return (await h.state()).pendingApprovals;
  };

  it('a parallel batch: the other calls complete first, the approved call runs after approve; results in source order', async () => {
    const h = await start('parallel please');
    const [p] = await pending(h);
    expect(p).toEqual({
      toolCallId: 'd-1',
      toolName: 'danger',
      args: { target: 'x' },
      argsDigest: digest('{"target":"x"}'),
      requestedAt: expect.any(Number),
      requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    await until(
      async () => notation(await allEvents(h)).filter((e) => e === 'TEE(q-1)' || e === 'TEE(q-2)').length === 2,
      20_000,
      'quick calls done',
    );
    const st = await h.state();
    expect([st.status, st.runningTools, ran.get(h.workflowId)?.sort()]).toEqual([
      'awaiting-approval',
      [],
      ['quick a', 'quick b'],
    ]);
    const meta = (await h.workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    expect(meta.currentDetails).toContain(
      `⚠ awaiting approval: danger {"target":"x"} (d-1, digest ${p.argsDigest.slice(0, 12)}…)`,
    );
    await until(
      async () => {
        const ids: string[] = [];
        for await (const w of keel.client.client.workflow.list({
          query: `KeelStatus="awaiting-approval" AND WorkflowId="${h.workflowId}"`,
        }))
          ids.push(w.workflowId);
        return ids.length === 1;
      },
      20_000,
      'KeelStatus="awaiting-approval" finds the run',
    );

    expect(
      await refusal(h.approve({ toolCallId: 'd-1', argsDigest: digest('{"target":"z"}'), approver: 'alice' })),
    ).toBe(
      `argsDigest ${digest('{"target":"z"}')} does not match the arguments of tool call d-1 awaiting approval; read them (and their digest) with the state query`,
    );
    expect(await refusal(h.approve({ toolCallId: 'nope', argsDigest: p.argsDigest, approver: 'alice' }))).toBe(
      'No tool call nope is awaiting approval',
    );
    expect(await refusal(h.approve({ toolCallId: 'd-1', argsDigest: p.argsDigest, approver: '  ' }))).toBe(
      'approve: approver must be a non-empty name',
    );
    expect(ran.get(h.workflowId)?.sort()).toEqual(['quick a', 'quick b']);

    const approved = await h.approve({
      toolCallId: 'd-1',
      argsDigest: p.argsDigest,
      approver: 'alice',
      reason: 'looks fine',
    });
    const record = {
      toolCallId: 'd-1',
      toolName: 'danger',
      decision: 'approved',
      approver: 'alice',
      reason: 'looks fine',
      argsDigest: p.argsDigest,
    };
    expect(timeless(approved)).toEqual(record);
    expect(await refusal(h.deny({ toolCallId: 'd-1', argsDigest: p.argsDigest, approver: 'bob' }))).toBe(
      'Tool call d-1 was already approved by alice',
    );

    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      user('parallel please'),
      toolUse([
        call('q-1', 'quick', { v: 'a' }),
        call('d-1', 'danger', { target: 'x' }),
        call('q-2', 'quick', { v: 'b' }),
      ]),
      result('q-1', 'quick', 'quick a', undefined),
      result('d-1', 'danger', 'did x', { target: 'x', approval: approved }),
      result('q-2', 'quick', 'quick b', undefined),
      reply('all done'),
    ]);
    const ev = notation(await allEvents(h));
    expect(ev.indexOf('TEE(d-1)')).toBeGreaterThan(Math.max(ev.indexOf('TEE(q-1)'), ev.indexOf('TEE(q-2)')));
    expect(ran.get(h.workflowId)?.filter((x) => x.startsWith('danger'))).toEqual(['danger x']);
    expect((await h.state()).approvals).toEqual([approved]);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('deny: the model gets who denied it and why (or that no reason was given); the tool never runs', async () => {
    const h = await start('deploys please');
    const [p] = await pending(h); // the predicate: only prod needs approval
    expect([p.toolCallId, p.args]).toEqual(['p-2', { env: 'prod' }]);
    const denied = await h.deny({ toolCallId: 'p-2', argsDigest: p.argsDigest, approver: 'bob' });
    const r = await h.result();
    expect(strip(r.newMessages).slice(2)).toEqual([
      result('p-1', 'deploy', 'deployed dev', undefined),
      result('p-2', 'deploy', 'Tool deploy was denied by bob: no reason given', { approval: denied }, true),
      reply('all done'),
    ]);
    expect(timeless(denied)).toEqual({
      toolCallId: 'p-2',
      toolName: 'deploy',
      decision: 'denied',
      approver: 'bob',
      argsDigest: digest('{"env":"prod"}'),
    });
    expect(ran.get(h.workflowId)).toEqual(['deploy dev']);

    const h2 = await start('single please');
    const [p2] = await pending(h2);
    await h2.deny({ toolCallId: 'd-1', argsDigest: p2.argsDigest, approver: 'carol', reason: 'not today' });
    expect(strip((await h2.result()).newMessages)[2]).toMatchObject({
      content: [{ type: 'text', text: 'Tool danger was denied by carol: not today' }],
      isError: true,
    });
    expect(ran.get(h2.workflowId)).toBeUndefined();
    expect(await workflowTaskFailures(h)).toEqual([]);
    expect(await workflowTaskFailures(h2)).toEqual([]);
  });

  it('arguments as a JSON string (issue 20 item 3): refused by validation before approval; a tool that parses them is approved by the parsed arguments', async () => {
    const h = await start('arguments as text', { tools: ['danger', 'lenient'] });
    const waiting = await pending(h, 2);
    expect(waiting.map((p) => [p.toolCallId, p.args, p.argsDigest])).toEqual([
      ['t-2', { target: 'y' }, digest('{"target":"y"}')],
      ['t-3', { target: 'z' }, digest('{"target":"z"}')],
    ]);
    const approved = await h.approve({ toolCallId: 't-2', argsDigest: digest('{"target":"y"}'), approver: 'ann' });
    expect(timeless(approved)).toEqual({
      toolCallId: 't-2',
      toolName: 'lenient',
      decision: 'approved',
      approver: 'ann',
      argsDigest: digest('{"target":"y"}'),
    });
    await h.approve({ toolCallId: 't-3', argsDigest: digest('{"target":"z"}'), approver: 'ann' });
    const r = await h.result();
    const refused =
      'Validation failed for tool "danger":\n  - root: expected object, got string\n\nReceived arguments:\n"{\\"target\\":\\"x\\"}"';
    expect(strip(r.newMessages).slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'toolCall', id: 't-1', name: 'danger', arguments: '{"target":"x"}' },
          { type: 'toolCall', id: 't-2', name: 'lenient', arguments: '{"target":"y"}' },
          { type: 'toolCall', id: 't-3', name: 'danger', arguments: { target: 'z' } },
        ],
        stopReason: 'toolUse',
      },
      result('t-1', 'danger', refused, {}, true),
      result('t-2', 'lenient', 'lenient y', { approval: approved }),
      expect.objectContaining({ toolCallId: 't-3', content: [{ type: 'text', text: 'did z' }] }),
      reply('all done'),
    ]);
    expect(ran.get(h.workflowId)?.sort()).toEqual(['danger z', 'lenient y']);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it("approval: 'never' runs the call at once: nothing pending, no details.approval, no decision record", async () => {
    const h = await start('safely please', { tools: ['safe'] });
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      user('safely please'),
      toolUse([call('s-1', 'safe', { v: 'a' })]),
      result('s-1', 'safe', 'safe a', undefined),
      reply('all done'),
    ]);
    expect((r.newMessages[2] as { details?: unknown }).details).toBeUndefined();
    const st = await h.state();
    expect([st.status, st.pendingApprovals, st.approvals]).toEqual(['completed', [], []]);
    expect(ran.get(h.workflowId)).toEqual(['safe a']);
    // an approval wait is a condition with the approvalTimeout, i.e. a timer: this run started none
    expect(await timersStarted(h)).toBe(0);
    expect(await workflowTaskFailures(h)).toEqual([]);

    // the probe sees the wait of a call that does need approval
    const d = await start('single please', { approvalTimeout: '1s' });
    await d.result();
    expect(await timersStarted(d)).toBe(1);
    expect(await workflowTaskFailures(d)).toEqual([]);
  });

  it('a refused approve as a caller sees it: UpdateRejectedError from the client, KeelUpdateRejected from Temporal', async () => {
    const h = await start('single please', { mode: 'session' });
    const [p] = await pending(h);
    const decision = { toolCallId: 'nope', argsDigest: p.argsDigest, approver: 'alice' };

    const viaClient = await h.approve(decision).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(viaClient).toBeInstanceOf(UpdateRejectedError);
    const c = viaClient as UpdateRejectedError;
    expect([c.name, c.update, c.message]).toEqual([
      'UpdateRejectedError',
      'approve',
      'No tool call nope is awaiting approval',
    ]);

    // the raw Temporal handle: the validator's ApplicationFailure is the cause of the Update's failure
    const viaTemporal = await h.workflow.executeUpdate('approve', { args: [decision] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(viaTemporal).toBeInstanceOf(WorkflowUpdateFailedError);
    const u = viaTemporal as WorkflowUpdateFailedError;
    expect([u.name, u.message]).toEqual(['WorkflowUpdateFailedError', 'Workflow Update failed']);
    const cause = u.cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    const f = cause as ApplicationFailure;
    expect([f.name, f.type, f.message, f.nonRetryable]).toEqual([
      'ApplicationFailure',
      'KeelUpdateRejected',
      'No tool call nope is awaiting approval',
      true,
    ]);

    // refused means nothing happened: the call still waits
    expect((await h.state()).pendingApprovals).toEqual([p]);
    await h.deny({ toolCallId: 'd-1', argsDigest: p.argsDigest, approver: 'alice' });
    expect(await h.end()).toEqual({ status: 'completed' });
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('a run being cancelled refuses approve and deny; the call waiting was denied by the cancel and never runs', async () => {
    hold = gate();
    slowStarted = gate();
    const h = await start('slowly please', { tools: ['slow', 'danger'] });
    const [p] = await pending(h);
    expect([p.toolCallId, p.args]).toEqual(['d-1', { target: 'w' }]);
    // executing, not just scheduled: a cancel would drop an activity no worker has started, and the run would close
    await slowStarted.promise;
    const cancelled = h.cancel('stop');
    // once the cancel Update is accepted its handler has run: every later Update sees the run being cancelled
    await until(async () => (await acceptedUpdates(h, 'cancel')) === 1, 20_000, 'cancel accepted');
    const decision = { toolCallId: 'd-1', argsDigest: p.argsDigest, approver: 'alice' };
    expect(await refusal(h.approve(decision))).toBe('Cannot approve: the run is being cancelled');
    expect(await refusal(h.deny(decision))).toBe('Cannot deny: the run is being cancelled');
    expect((await h.workflow.describe()).status.name).toBe('RUNNING'); // still finishing the slow call
    hold.open();
    expect(await cancelled).toEqual({ status: 'cancelled' });
    const st = await h.state();
    expect([
      st.pendingApprovals,
      st.approvals.map((a) => [a.toolCallId, a.decision, a.approver, a.reason, a.argsDigest]),
    ]).toEqual([[], [['d-1', 'denied', 'keel', 'Operation aborted', p.argsDigest]]]);
    expect(strip(await h.allMessages()).slice(2)).toEqual([
      result('h-1', 'slow', 'slow done', undefined),
      result('d-1', 'danger', 'Operation aborted', { approval: st.approvals[0] }, true),
    ]);
    expect(ran.get(h.workflowId)).toEqual(['slow']);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('after approvalTimeout the call gets the not-approved result', async () => {
    const h = await start('single please', { approvalTimeout: '2s' });
    const r = await h.result();
    const tr = r.newMessages[2] as { content: unknown; details: { approval: ApprovalRecord }; isError: boolean };
    expect([tr.content, tr.isError]).toEqual([
      [{ type: 'text', text: 'Tool danger was not approved within 2s' }],
      true,
    ]);
    expect(timeless(tr.details.approval)).toEqual({
      toolCallId: 'd-1',
      toolName: 'danger',
      decision: 'timed-out',
      approver: 'keel',
      argsDigest: digest('{"target":"y"}'),
    });
    expect(tr.details.approval.decidedAt - tr.details.approval.requestedAt).toBeGreaterThanOrEqual(2000);
    expect(ran.get(h.workflowId)).toBeUndefined();
    expect(await workflowTaskFailures(h)).toEqual([]);

    // a session still running after the timeout: a late decision is refused, the call stays timed out
    const s = await start('single please', { approvalTimeout: '1s', mode: 'session' });
    await until(async () => (await s.state()).approvals.length === 1, 20_000, 'timed out');
    const late = { toolCallId: 'd-1', argsDigest: digest('{"target":"y"}'), approver: 'alice' };
    expect(await refusal(s.approve(late))).toBe('Tool call d-1 was already timed out');
    expect(await refusal(s.deny(late))).toBe('Tool call d-1 was already timed out');
    expect(await s.end()).toEqual({ status: 'completed' });
    expect(ran.get(s.workflowId)).toBeUndefined();
    expect(await workflowTaskFailures(s)).toEqual([]);
  });

  it('an approvalTimeout that is not a duration is refused before any model call', async () => {
    // started raw, past the client's own check of the same schema
    const h = await keel.client.client.workflow.start('agentWorkflow', {
      taskQueue: keel.taskQueue,
      workflowId: `approval-timeout-${Date.now()}`,
      args: [{ model: 'scripted/approvals', prompt: 'single please', tools: ['danger'], approvalTimeout: 'soon' }],
    });
    const err = (await h.result().catch((e: unknown) => e)) as { cause?: { message?: string } };
    expect(err.cause?.message).toBe(
      'Invalid AgentRunInput: approvalTimeout: must be a duration: milliseconds (an integer >= 1) or a string such as "30s", "5m", "1h", "2d"',
    );
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('interrupt resolves a pending approval as denied with Operation aborted; the session waits again', async () => {
    const h = await start('single please', { mode: 'session' });
    await pending(h);
    expect(await h.interrupt()).toEqual({ interrupted: true, next: 'waits' });
    await until(async () => (await h.state()).status === 'waiting', 20_000, 'waiting');
    const st = await h.state();
    expect(st.pendingApprovals).toEqual([]);
    expect(timeless(st.approvals[0])).toEqual({
      toolCallId: 'd-1',
      toolName: 'danger',
      decision: 'denied',
      approver: 'keel',
      reason: 'Operation aborted',
      argsDigest: digest('{"target":"y"}'),
    });
    expect(strip(await h.allMessages())[2]).toEqual(
      result('d-1', 'danger', 'Operation aborted', { approval: st.approvals[0] }, true),
    );
    expect(ran.get(h.workflowId)).toBeUndefined();
    expect(await h.end()).toEqual({ status: 'completed' });
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('continue-as-new while an approval is pending: carried, then approved, the call runs exactly once', async () => {
    const h = await start('single please', { continueAsNewAfterBytes: 65_536 });
    const [p] = await pending(h);
    const big = `steer-${'x'.repeat(70_000)}`;
    // 70 KB of history: continue-as-new is due while the call waits. By signal: a signal's event is in the history
    // size the workflow task reports; an Update's is written after the task, so it would count at the next one.
    await h.workflow.signal(steerSignal, big);
    await untilContinuedAsNew(h);
    const st = await h.state();
    expect([st.status, st.pendingApprovals]).toEqual(['awaiting-approval', [p]]);
    await h.approve({ toolCallId: 'd-1', argsDigest: p.argsDigest, approver: 'dave' });
    const r = await h.result();
    expect(r.status).toBe('completed');
    const all = strip(await h.allMessages());
    expect(all.slice(2, 3)).toEqual([
      result('d-1', 'danger', 'did y', { target: 'y', approval: (await h.state()).approvals[0] }),
    ]);
    expect(all.slice(3)).toEqual([user(big), reply('saw the steer')]);
    expect(ran.get(h.workflowId)).toEqual(['danger y']);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('continue-as-new while a parallel batch waits: the finished calls are carried, each call runs exactly once', async () => {
    const h = await start('parallel please', { continueAsNewAfterBytes: 65_536 });
    const [p] = await pending(h);
    await until(
      async () => notation(await allEvents(h)).filter((e) => e === 'TEE(q-1)' || e === 'TEE(q-2)').length === 2,
      20_000,
      'quick calls done',
    );
    const big = `steer-${'y'.repeat(70_000)}`;
    await h.workflow.signal(steerSignal, big);
    await untilContinuedAsNew(h);
    expect((await h.state()).pendingApprovals).toEqual([p]);
    const approved = await h.approve({ toolCallId: 'd-1', argsDigest: p.argsDigest, approver: 'gina' });
    await h.result();
    expect(strip(await h.allMessages()).slice(1)).toEqual([
      toolUse([
        call('q-1', 'quick', { v: 'a' }),
        call('d-1', 'danger', { target: 'x' }),
        call('q-2', 'quick', { v: 'b' }),
      ]),
      result('q-1', 'quick', 'quick a', undefined),
      result('d-1', 'danger', 'did x', { target: 'x', approval: approved }),
      result('q-2', 'quick', 'quick b', undefined),
      user(big),
      reply('saw the steer'),
    ]);
    expect(ran.get(h.workflowId)?.sort()).toEqual(['danger x', 'quick a', 'quick b']);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('hooks.needsApproval decides for every tool: trusted runs skip approval, strict runs need it everywhere; cancel denies what waits', async () => {
    const trusted = await start('single please', { metadata: { trusted: true } });
    expect(strip((await trusted.result()).newMessages)[2]).toEqual(result('d-1', 'danger', 'did y', { target: 'y' }));

    const strict = await start('parallel please', { metadata: { strict: true }, mode: 'session' });
    expect((await pending(strict, 3)).map((p) => p.toolCallId)).toEqual(['q-1', 'd-1', 'q-2']);
    expect(await strict.cancel('nobody around')).toEqual({ status: 'cancelled' });
    const st = await strict.state();
    expect([st.pendingApprovals, st.approvals.map((a) => [a.toolCallId, a.decision, a.approver, a.reason])]).toEqual([
      [],
      [
        ['q-1', 'denied', 'keel', 'Operation aborted'],
        ['d-1', 'denied', 'keel', 'Operation aborted'],
        ['q-2', 'denied', 'keel', 'Operation aborted'],
      ],
    ]);
    expect(
      strip(await strict.allMessages())
        .slice(2)
        .map((m) => (m as { content: unknown }).content),
    ).toEqual(Array(3).fill([{ type: 'text', text: 'Operation aborted' }]));
    expect(ran.get(strict.workflowId)).toBeUndefined();
    expect(await workflowTaskFailures(strict)).toEqual([]);
  });

  it('keel pending / approve / deny as a child process', async () => {
    const a = await start('single please', { mode: 'session' });
    const b = await start('single please', { mode: 'session' });
    const [pa] = await pending(a);
    await pending(b);
    await until(
      async () => {
        const out = await cli(['pending']);
        return out.stdout.includes(a.workflowId) && out.stdout.includes(b.workflowId);
      },
      20_000,
      'keel pending lists both',
    );
    let watchedSoFar = '';
    const watching = cli(['watch', a.workflowId], (d) => (watchedSoFar += d));
    const listed = await cli(['pending']);
    expect(listed.stdout).toContain(
      `${a.workflowId}  d-1  danger {"target":"y"}\n  since ${new Date(pa.requestedAt).toISOString()} · digest ${pa.argsDigest}\n`,
    );
    await until(async () => watchedSoFar.includes('approval_needed d-1'), 20_000, 'keel watch shows the approval');
    // approve without --digest: refused, showing the whole arguments and the command that approves exactly them
    const blind = await cli(['approve', a.workflowId, 'd-1', '--as', 'erin']);
    expect([blind.code, blind.stderr]).toEqual([
      2,
      `keel: approve needs --digest <argsDigest>, the digest of the arguments you approve: d-1 waits with danger {"target":"y"} (digest ${pa.argsDigest}); to approve exactly these: keel approve ${a.workflowId} d-1 --digest ${pa.argsDigest}\n`,
    ]);
    const approved = await cli([
      'approve',
      a.workflowId,
      'd-1',
      '--digest',
      pa.argsDigest,
      '--as',
      'erin',
      '--reason',
      'ok',
    ]);
    expect([approved.code, approved.stdout.split('\n')[0]]).toEqual([
      0,
      'approved d-1 (danger {"target":"y"}) as erin: ok',
    ]);
    const denied = await cli(['deny', b.workflowId, 'd-1', '--as', 'frank']);
    expect([denied.code, denied.stdout.split('\n')[0]]).toEqual([0, 'denied d-1 (danger {"target":"y"}) as frank']);
    const again = await cli(['deny', b.workflowId, 'd-1', '--as', 'frank']);
    expect([again.code, again.stderr]).toEqual([
      2,
      `keel: No tool call d-1 is awaiting approval in ${b.workflowId}; \`keel pending\` lists those that are.\n`,
    ]);
    const wrong = await cli(['approve', b.workflowId, 'd-1', '--digest', 'abc']);
    expect([wrong.code, wrong.stderr]).toEqual([2, 'keel: Tool call d-1 was already denied by frank\n']);
    await Promise.all([a.end(), b.end()]);
    expect(strip((await a.result()).newMessages)[2]).toMatchObject({
      content: [{ type: 'text', text: 'did y' }],
      isError: false,
    });
    expect(strip((await b.result()).newMessages)[2]).toMatchObject({
      content: [{ type: 'text', text: 'Tool danger was denied by frank: no reason given' }],
    });
    // keel watch (not a TTY) printed the pending call once, with the commands that decide it, then followed to the end
    const watched = await watching;
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout).toContain(
      `approval_needed d-1 danger {"target":"y"}\n  keel approve ${a.workflowId} d-1 --digest ${pa.argsDigest}  |  keel deny ${a.workflowId} d-1 --digest ${pa.argsDigest} --reason …\n`,
    );
    expect(watched.stdout.split('approval_needed').length).toBe(2);
    expect(await workflowTaskFailures(a)).toEqual([]);
    expect(await workflowTaskFailures(b)).toEqual([]);
  });

  it('the temporal CLI approves by name: temporal workflow update execute --name approve', async () => {
    const h = await start('single please');
    const [p] = await pending(h);
    const bin = await ensureTemporalCli({ log: () => undefined });
    const input = JSON.stringify({ toolCallId: 'd-1', argsDigest: p.argsDigest, approver: 'ops-bot' });
    const out = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(
        bin,
        [
          'workflow',
          'update',
          'execute',
          '--workflow-id',
          h.workflowId,
          '--name',
          'approve',
          '--input',
          input,
          '--address',
          keel.address,
          '-o',
          'json',
        ],
        { timeout: 60_000 },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain('"decision": "approved"');
    expect(strip((await h.result()).newMessages)[2]).toMatchObject({
      content: [{ type: 'text', text: 'did y' }],
      details: { approval: { approver: 'ops-bot', decision: 'approved' } },
    });
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  describe('an approve that arrives with a cancel or interrupt in one workflow task', () => {
    /**
     * With the worker stopped, the approve is admitted by the server (its workflow task waits), then `abort` asks for a
     * cancel or interrupt; a new worker gets both in one workflow task. The approve must not be answered `approved`
     * for a call that the abort then stops before it runs: it is refused, and the call is denied by the run.
     */
    async function raceApprove(
      abort: (h: AgentRunHandle) => Promise<unknown>,
      refusedWith: string,
      decided: unknown[] = [['d-1', 'denied', 'keel', 'Operation aborted']],
    ) {
      const taskQueue = `approve-race-${randomUUID()}`;
      const first = await startKeel({ scripts, tools: [danger], taskQueue });
      let k = first;
      let workerUp = true;
      try {
        const h = await k.start({ model: 'scripted/approvals', prompt: 'single please', tools: ['danger'] });
        await until(async () => (await h.state()).pendingApprovals.length === 1, 20_000, 'pending approval');
        const [p] = (await h.state()).pendingApprovals;
        await first.worker.shutdown();
        workerUp = false;
        const updateId = `approve-${randomUUID()}`;
        const decision = { toolCallId: 'd-1', argsDigest: p.argsDigest, approver: 'alice' };
        const answer = h.workflow.executeUpdate('approve', { args: [decision], updateId }).then(
          (v) => v,
          (e: unknown) => e,
        );
        // admitted: the server has a workflow task for it (no worker polls, so it waits)
        await until(
          async () => (await h.workflow.describe()).raw.pendingWorkflowTask != null,
          20_000,
          'approve admitted',
        );
        await abort(h);
        k = await startKeel({ scripts, tools: [danger], taskQueue });
        workerUp = true;
        const err = (await answer) as WorkflowUpdateFailedError;
        expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
        expect(err.cause?.message).toBe(refusedWith);
        await until(async () => (await h.workflow.describe()).status.name !== 'RUNNING', 20_000, 'run closed');
        const st = await k.client.get(h.workflowId).state();
        expect(st.approvals.map((a) => [a.toolCallId, a.decision, a.approver, a.reason])).toEqual(decided);
        expect(ran.get(h.workflowId)).toBeUndefined();
        expect(await workflowTaskFailures(h)).toEqual([]);
        return (await h.workflow.describe()).status.name;
      } finally {
        if (workerUp) await k.worker.shutdown();
        await first.client.close();
        if (k !== first) await k.client.close();
      }
    }

    it('Temporal cancellation: the approve is refused (the run is being cancelled), the call never runs', async () => {
      // Temporal cancellation ends the run where it waits: the call stays listed as pending, never decided
      const status = await raceApprove((h) => h.workflow.cancel(), 'Cannot approve: the run is being cancelled', []);
      expect(status).toBe('CANCELLED');
    });

    it('the cancel signal: the approve is refused (the run is being cancelled), the call never runs', async () => {
      const status = await raceApprove(
        (h) => h.workflow.signal('cancel', 'stop'),
        'Cannot approve: the run is being cancelled',
      );
      expect(status).toBe('CANCELLED');
    });

    it('the interrupt signal: the approve is refused (the run is being interrupted), the call never runs', async () => {
      const status = await raceApprove(
        (h) => h.workflow.signal('interrupt'),
        'Cannot approve: the run is being interrupted',
      );
      expect(status).toBe('COMPLETED');
    });
  });

  /** `node bin/keel.mjs …` against this worker's task queue. */
  function cli(
    args: string[],
    onStdout?: (d: string) => void,
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [BIN, '--address', keel.address, '--task-queue', keel.taskQueue, ...args], {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new Promise((resolve) => {
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        onStdout?.(d.toString());
      });
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }
});

const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));

/**
 * Issue 33 item 16: the Web UI showed a call that only waits for approval as a completed `runToolCall • deploy web`,
 * then an unlabeled timer; "awaiting approval" was only in the details' second paragraph. The activity and timer
 * summaries (user metadata of their commands) and the details' first line now say what waits.
 */
describe('approvals in the Web UI', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, tools: [danger, deploy, quick] }); // no hooks: `danger` always waits
  });
  afterAll(() => keel?.stop());

  /** The summaries of the history's scheduled activities and started timers, in order. */
  async function summaries(h: AgentRunHandle): Promise<string[]> {
    const { events } = await h.workflow.fetchHistory();
    return (events ?? []).flatMap((e) => {
      const kind = e.activityTaskScheduledEventAttributes
        ? `activity ${e.activityTaskScheduledEventAttributes.activityType?.name}`
        : e.timerStartedEventAttributes
          ? 'timer'
          : undefined;
      const data = e.userMetadata?.summary?.data;
      return kind ? [`${kind}: ${data ? (JSON.parse(Buffer.from(data).toString()) as string) : '(none)'}`] : [];
    });
  }

  it('labels the preparing activity and the timeout timer, and puts the waiting call first in the details', async () => {
    const h = await keel.start({
      model: 'scripted/approvals',
      prompt: 'single please',
      tools: ['danger'],
      approvalTimeout: '1d',
    });
    await until(async () => (await h.state()).pendingApprovals.length === 1, 20_000, 'pending approval');
    await until(async () => (await summaries(h)).some((s) => s.startsWith('timer')), 20_000, 'the approval timer');
    expect(await summaries(h)).toEqual([
      'activity startRun: check run input',
      'activity callModel: model scripted/approvals · turn 1',
      'activity runToolCall: prepare danger y (needs approval)',
      'timer: approval timeout (1d) · danger y',
    ]);
    const meta = (await h.workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    expect(meta.currentDetails?.split('\n')[0]).toBe('⚠ **awaiting approval**: danger y (d-1)');
    await h.approve({ toolCallId: 'd-1', argsDigest: digest('{"target":"y"}'), approver: 'alice' });
    expect((await h.result()).finalText).toBe('all done');
    expect((await summaries(h)).slice(4)).toEqual([
      'activity executeToolCall: danger y (approved by alice)',
      'activity callModel: model scripted/approvals · turn 2',
    ]);
    const after = (await h.workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    expect(after.currentDetails?.split('\n')[0]).toBe('**completed** · turn 2 · 4 messages');
  });

  it('a predicate that decides per call: "may need approval"; a parallel batch counts the calls that wait', async () => {
    const h = await keel.start({ model: 'scripted/approvals', prompt: 'one deploy please', tools: ['deploy'] });
    expect((await h.result()).finalText).toBe('all done');
    expect(await summaries(h)).toEqual([
      'activity startRun: check run input',
      'activity callModel: model scripted/approvals · turn 1',
      'activity runToolCall: deploy dev (may need approval)',
      'activity callModel: model scripted/approvals · turn 2',
    ]);
    const p = await keel.start({ model: 'scripted/approvals', prompt: 'parallel please', tools: ['danger', 'quick'] });
    await until(async () => (await p.state()).pendingApprovals.length === 1, 20_000, 'pending approval');
    expect((await summaries(p)).slice(2, 3)).toEqual([
      'activity prepareToolCalls: prepare 3 tool calls (1 needs approval)',
    ]);
    await p.workflow.terminate('test done');
  });
});
