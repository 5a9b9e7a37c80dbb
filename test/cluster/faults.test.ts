/**
 * Cluster-only fault tests (`npm run test:cluster`): with runs in flight, SIGKILL the history service, then the
 * matching service, then shut PostgreSQL down (immediate shutdown) — each down for OUTAGE_MS while the runs' tool
 * calls finish and report — and start it again. Every run completes, every tool call executed exactly once (keyed by
 * its idempotency key) and no message is lost or duplicated.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import type { ProcessName } from '../../scripts/cluster/cluster.js';
import { clusterControl } from '../../scripts/cluster/control.js';
import { startKeel, strip, until, type Keel } from '../temporal/harness.js';

const controlUrl = process.env.KEEL_TEST_CLUSTER_CONTROL;
if (!controlUrl) throw new Error('test/cluster needs a cluster: run `npm run test:cluster`');
const control = clusterControl(controlUrl);
const RUNS = 4;
/** How long each fault lasts: the length of the outage, not a synchronisation delay. */
const OUTAGE_MS = Number(process.env.KEEL_TEST_OUTAGE_MS ?? 3000);

/** A non-idempotent tool whose executions are counted by idempotency key and held at a gate the test opens. */
function gatedTool() {
  const executions: string[] = [];
  let open!: () => void;
  let gate = new Promise<void>((r) => (open = r));
  const tool = defineTool<{ n: number }>({
    name: 'step',
    description: 'one step',
    parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    async execute(_id, args, _signal, _onUpdate, ctx) {
      executions.push(`${ctx.idempotencyKey} n=${args.n}`);
      await gate;
      return { content: [{ type: 'text', text: `step ${args.n} done` }] };
    },
  });
  return {
    tool,
    executions,
    release: () => open(),
    reset: () => {
      gate = new Promise<void>((r) => (open = r));
    },
  };
}

const script = {
  replies: [
    { toolCall: { name: 'step', arguments: { n: 1 }, id: 'call-1' } },
    { toolCall: { name: 'step', arguments: { n: 2 }, id: 'call-2' } },
    { text: 'all steps done' },
  ],
};

const expected = [
  { role: 'user', content: [{ type: 'text', text: 'go' }] },
  {
    role: 'assistant',
    content: [{ type: 'toolCall', id: 'call-1', name: 'step', arguments: { n: 1 } }],
    stopReason: 'toolUse',
  },
  {
    role: 'toolResult',
    toolCallId: 'call-1',
    toolName: 'step',
    content: [{ type: 'text', text: 'step 1 done' }],
    isError: false,
  },
  {
    role: 'assistant',
    content: [{ type: 'toolCall', id: 'call-2', name: 'step', arguments: { n: 2 } }],
    stopReason: 'toolUse',
  },
  {
    role: 'toolResult',
    toolCallId: 'call-2',
    toolName: 'step',
    content: [{ type: 'text', text: 'step 2 done' }],
    isError: false,
  },
  { role: 'assistant', content: [{ type: 'text', text: 'all steps done' }], stopReason: 'stop' },
];

describe('cluster faults: runs survive a dead service with nothing lost or duplicated', () => {
  let keel: Keel;
  const gated = gatedTool();
  beforeAll(async () => {
    keel = await startKeel({ scripts: { steps: script }, tools: [gated.tool] });
  });
  afterAll(() => keel?.stop());

  /** Starts RUNS runs, waits until each is inside its first tool call, applies `fault`, then lets them finish. */
  async function runThrough(fault: () => Promise<void>) {
    gated.reset();
    gated.executions.length = 0;
    const handles = await Promise.all(
      Array.from({ length: RUNS }, () => keel.start({ model: 'scripted/steps', prompt: 'go', tools: ['step'] })),
    );
    await until(() => gated.executions.length === RUNS, 60_000, 'every run inside its first tool call');
    await fault();
    gated.release();
    const results = await Promise.all(handles.map((h) => h.result()));
    for (const r of results) {
      expect(r.status).toBe('completed');
      expect(strip(r.newMessages)).toEqual(expected);
    }
    const want = handles.flatMap((h) => [`${h.workflowId}/call-1 n=1`, `${h.workflowId}/call-2 n=2`]).sort();
    expect([...gated.executions].sort()).toEqual(want);
  }

  const outage = (name: ProcessName) => async () => {
    await control.kill(name);
    // the held tool calls finish now: their completions are reported while `name` is down, and retried
    gated.release();
    await new Promise((r) => setTimeout(r, OUTAGE_MS));
    await control.start(name);
  };

  it('kill -9 of the history service mid run', () => runThrough(outage('history')));

  it('kill -9 of the matching service mid run', () => runThrough(outage('matching')));

  it('PostgreSQL restarted (immediate shutdown) mid run', () => runThrough(outage('postgres')));
});
