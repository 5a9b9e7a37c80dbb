/**
 * Section 12, subagents (`BENCH_ONLY=subagents`): what a sub-agent call (README "Sub-agents") costs over a plain tool
 * call. On the main worker's first Keel queue, 10-turn runs call a tool every turn — the no-op tool, or the no-op
 * sub-agent `bench-sub` (its child run answers `ok` in one model call) — alternating after a warm-up, BENCH_ROUNDS
 * pairs × BENCH_SUBAGENT_RUNS runs each. Reports both medians in ms/turn, the added ms per call (paired by round),
 * and the history events per call: the parent's, and the parent's plus the child's; and the events of one call (the
 * run's middle one), listed: the parent's from its model call's completion to the next model call, and the child's.
 */
import type { Client } from '@temporalio/client';
import protoModule from '@temporalio/proto';
import { ROUNDS, type Bench } from './context.js';
import { keelInput, keelRun } from './runs.js';
import { fmt, pairedRatio, summarize, type Summary } from './stats.js';

const TURNS = 10;

export interface SubagentsResult {
  turns: number;
  runsPerRound: number;
  toolMsPerTurn: Summary;
  subAgentMsPerTurn: Summary;
  addedMsPerCall: Summary;
  ratio: Summary;
  /** History events per turn of a run: plain tool call, sub-agent call (parent only), and parent + child. */
  eventsPerTurn: { tool: number; subAgentParent: number; subAgentWithChild: number };
  /** The events of one sub-agent call (the run's middle one): the parent's part and the child's, by type. */
  callEvents: { parent: string[]; child: string[] };
}

async function events(client: Client, workflowId: string): Promise<number> {
  return (await client.workflow.getHandle(workflowId).fetchHistory()).events?.length ?? 0;
}

const { EventType } = protoModule.temporal.api.enums.v1;

/** A run's history as event type names, activities and patch markers named (`ACTIVITY_TASK_SCHEDULED callModel`). */
async function eventNames(client: Client, workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).map((e) => {
    const type = String(EventType[e.eventType ?? 0]).replace('EVENT_TYPE_', '');
    const patch = e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0]?.data;
    const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    const what =
      e.activityTaskScheduledEventAttributes?.activityType?.name ??
      e.workflowExecutionSignaledEventAttributes?.signalName ??
      e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name ??
      (patch ? (JSON.parse(Buffer.from(patch).toString()) as { id: string }).id : undefined) ??
      (fields ? Object.keys(fields).sort().join(',') : undefined);
    return what ? `${type} ${what}` : type;
  });
}

/** The parent's events of call `n` (0-based): after its turn's `callModel` completed, up to the next one's scheduling. */
function nthCallEvents(names: string[], n: number): string[] {
  let at = -1;
  for (let i = 0; i <= n; i++) at = names.indexOf('ACTIVITY_TASK_SCHEDULED callModel', at + 1);
  const done = names.indexOf('ACTIVITY_TASK_COMPLETED', at);
  return names.slice(done + 1, names.indexOf('ACTIVITY_TASK_SCHEDULED callModel', done) + 1);
}

export async function subagentsSection(b: Bench): Promise<SubagentsResult> {
  const runsPerRound = Math.max(1, Number(process.env.BENCH_SUBAGENT_RUNS ?? 3));
  b.log(`subagents: ${TURNS}-turn runs, one call a turn: tool vs sub-agent, ${ROUNDS} rounds × ${runsPerRound} runs`);
  const last = { tool: '', sub: '' };
  const perTurn = async (model: string, tool: string, key: 'tool' | 'sub') => {
    let ms = 0;
    for (let i = 0; i < runsPerRound; i++) {
      const k = await keelRun(b.keel1, keelInput(model, [tool], TURNS));
      if (k.result.turns !== TURNS || k.result.status !== 'stopped')
        throw new Error(`subagents run (${tool}): ${k.result.status}, ${k.result.turns} turns`);
      ms += k.ms;
      last[key] = k.workflowId;
    }
    return ms / runsPerRound / TURNS;
  };
  const toolTurn = () => perTurn('bench-noop', 'noop', 'tool');
  const subTurn = () => perTurn('bench-sub', 'bench-sub', 'sub');
  await toolTurn(); // warm-up
  await subTurn();
  const a: number[] = [];
  const s: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      a.push(await toolTurn());
      s.push(await subTurn());
    } else {
      s.push(await subTurn());
      a.push(await toolTurn());
    }
    b.log(`  round ${r + 1}: tool ${fmt(a[r])}, sub-agent ${fmt(s[r])} ms/turn`);
  }
  const tool = await events(b.client, last.tool);
  const parent = await events(b.client, last.sub);
  let children = 0;
  const calls = (await b.keel1.getHandle(last.sub).allMessages()).flatMap((m) => (m.role === 'toolResult' ? [m] : []));
  for (const c of calls) children += await events(b.client, `${last.sub}-${c.toolCallId}`);
  if (calls.length !== TURNS) throw new Error(`subagents: ${calls.length} sub-agent calls, expected ${TURNS}`);
  const middle = Math.floor(TURNS / 2);
  const callEvents = {
    parent: nthCallEvents(await eventNames(b.client, last.sub), middle),
    child: await eventNames(b.client, `${last.sub}-${calls[middle].toolCallId}`),
  };
  b.log(`  one sub-agent call, parent (${callEvents.parent.length}): ${callEvents.parent.join(' · ')}`);
  b.log(`  its child (${callEvents.child.length}): ${callEvents.child.join(' · ')}`);
  return {
    turns: TURNS,
    runsPerRound,
    toolMsPerTurn: summarize(a),
    subAgentMsPerTurn: summarize(s),
    addedMsPerCall: summarize(s.map((x, i) => x - a[i])),
    ratio: pairedRatio(s, a),
    eventsPerTurn: {
      tool: tool / TURNS,
      subAgentParent: parent / TURNS,
      subAgentWithChild: (parent + children) / TURNS,
    },
    callEvents,
  };
}
