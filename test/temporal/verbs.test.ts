/**
 * Each verb of `agentWorkflow` that is both a signal and an Update (`followUp`, `steer`, `interrupt`, `end`, `cancel`)
 * is one method of the session, called by both (issue 22 item 3). Table-driven: for each verb, two runs in the same
 * situation, one sent the signal and one the Update, end up with the same `state`, the same current details (what the
 * Temporal UI shows: the `__temporal_workflow_metadata` query) and the same events. The queued line of the details
 * refreshes after a `followUp` / `steer` Update as after the signal (before, only the signal refreshed it).
 * Signal-only verbs (`wake`, `budgetStop`) and Update-only verbs (`approve`, `deny`) have no pair to compare.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool, type AgentToolResult } from '../../activities/tools/define-tool.js';
import type { AgentRunHandle } from '../../client/agent-client.js';
import { cancelSignal, endSignal, followUpSignal, interruptSignal, steerSignal } from '../../workflows/definitions.js';
import { allEvents, startKeel, until, workflowTaskFailures, type Keel } from './harness.js';

/** Runs until the run aborts it: the run stays `running` with this tool in flight as long as the test needs. */
const waitTool = defineTool({
  name: 'wait',
  description: 'Waits until aborted.',
  parameters: { type: 'object', properties: {} },
  execute: (_id, _args, signal) =>
    new Promise<AgentToolResult>((resolve) =>
      signal.addEventListener('abort', () => resolve({ content: [{ type: 'text', text: 'stopped waiting' }] })),
    ),
});

const scripts = {
  verbs: {
    rules: [
      { match: 'toolResult:wait', text: 'waited' },
      { match: 'wait', toolCalls: [{ id: 'wait-1', name: 'wait', arguments: {} }] },
      { text: 'hello' },
    ],
  },
};

/** Both runs' views without what differs between any two runs: times and timestamps. */
function normalized(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value)
      .replace(/"timestamp":\d+/g, '"timestamp":0')
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z/g, '<iso>')
      .replace(/\d\d:\d\d:\d\d UTC/g, '<hh:mm:ss> UTC'),
  );
}

const details = async (h: AgentRunHandle): Promise<string> =>
  (await h.workflow.query<{ currentDetails: string }>('__temporal_workflow_metadata')).currentDetails;

const closed = (h: AgentRunHandle, status: string) => async () => (await h.workflow.describe()).status.name === status;

interface VerbCase {
  verb: string;
  /** `running`: a tool call is in flight; `waiting`: the session waits for input. */
  from: 'running' | 'waiting';
  signal(h: AgentRunHandle): Promise<unknown>;
  update(h: AgentRunHandle): Promise<unknown>;
  /** The verb's effect has been applied (a signal is not acknowledged). */
  applied(h: AgentRunHandle): () => Promise<boolean>;
  /** What the details say after it, exactly (times normalised). */
  details: string;
}

const cases: VerbCase[] = [
  {
    verb: 'followUp',
    from: 'running',
    signal: (h) => h.workflow.signal(followUpSignal, 'later'),
    update: (h) => h.followUp('later'),
    applied: (h) => async () => (await h.state()).queued.followUp === 1,
    details:
      '**running** · turn 1 · 2 messages\n\nrunning: wait since <hh:mm:ss> UTC\n\nqueued: 0 steering, 1 follow-up\n\n' +
      'usage: 0 tokens · $0.0000\n\nlast reply: ',
  },
  {
    verb: 'steer',
    from: 'running',
    signal: (h) => h.workflow.signal(steerSignal, 'now'),
    update: (h) => h.steer('now'),
    applied: (h) => async () => (await h.state()).queued.steering === 1,
    details:
      '**running** · turn 1 · 2 messages\n\nrunning: wait since <hh:mm:ss> UTC\n\nqueued: 1 steering, 0 follow-up\n\n' +
      'usage: 0 tokens · $0.0000\n\nlast reply: ',
  },
  {
    verb: 'interrupt',
    from: 'running',
    signal: (h) => h.workflow.signal(interruptSignal),
    update: (h) => h.interrupt(),
    applied: (h) => async () => (await h.state()).status === 'waiting',
    details: '**waiting** · turn 1 · 3 messages\n\nusage: 0 tokens · $0.0000\n\nlast reply: ',
  },
  {
    verb: 'end',
    from: 'waiting',
    signal: (h) => h.workflow.signal(endSignal),
    update: (h) => h.end(),
    applied: (h) => closed(h, 'COMPLETED'),
    details: '**completed** · turn 1 · 2 messages\n\nusage: 0 tokens · $0.0000\n\nlast reply: hello',
  },
  {
    verb: 'cancel',
    from: 'waiting',
    signal: (h) => h.workflow.signal(cancelSignal, 'enough'),
    update: (h) => h.cancel('enough'),
    applied: (h) => closed(h, 'CANCELLED'),
    details: '**cancelled** · turn 1 · 2 messages\n\nusage: 0 tokens · $0.0000\n\nlast reply: hello',
  },
];

let keel: Keel;
beforeAll(async () => {
  keel = await startKeel({ scripts, tools: [waitTool] });
});
afterAll(() => keel?.stop());

async function situation(from: VerbCase['from']): Promise<AgentRunHandle> {
  const h = await keel.start({
    model: 'scripted/verbs',
    prompt: from === 'running' ? 'wait' : 'hi',
    mode: 'session',
    tools: ['wait'],
    idleTimeout: '5m',
  });
  if (from === 'running') await until(async () => (await h.state()).runningTools.length === 1, 20_000, 'tool running');
  else await until(async () => (await h.state()).status === 'waiting', 20_000, 'waiting');
  return h;
}

/** What the UI, the `state` query and the `events` query show of a run. */
async function seen(h: AgentRunHandle): Promise<unknown> {
  return normalized({ state: await h.state(), details: await details(h), events: await allEvents(h) });
}

for (const c of cases) {
  describe(`${c.verb}: the signal and the Update call one method`, () => {
    it('same state, same details, same events', async () => {
      const [bySignal, byUpdate] = await Promise.all([situation(c.from), situation(c.from)]);
      try {
        await Promise.all([c.signal(bySignal), c.update(byUpdate)]);
        await until(c.applied(bySignal), 20_000, `${c.verb} signal applied`);
        await until(c.applied(byUpdate), 20_000, `${c.verb} Update applied`);
        const afterSignal = await seen(bySignal);
        const afterUpdate = await seen(byUpdate);
        expect((afterUpdate as { details: string }).details).toBe(c.details);
        expect(afterUpdate).toEqual(afterSignal);
        expect(await workflowTaskFailures(bySignal)).toEqual([]);
        expect(await workflowTaskFailures(byUpdate)).toEqual([]);
      } finally {
        await Promise.all([bySignal, byUpdate].map((h) => h.workflow.terminate('test done').catch(() => undefined)));
      }
    });
  });
}
