/**
 * The long run with large tool results (README "Large transcripts"), shared by the heavy test
 * (test/temporal/large-transcript.test.ts, which asserts on it) and the bench's `large` section (which reports it):
 * a scripted run of `turns` tool turns, each tool result 50 KB, then a closing reply; then its figures, measured from
 * the server (every run of its continue-as-new chain) and from its result.
 */
import { randomUUID } from 'node:crypto';
import proto from '@temporalio/proto';
import { defineTool, type ToolDefinition } from '../activities/tools/define-tool.js';
import type { Script } from '../activities/model/scripted.js';
import type { AgentClient, AgentRunHandle } from '../client/agent-client.js';
import type { AgentRunResult } from '../common/run.js';

export const LARGE_RESULT_BYTES = 50 * 1024;
export const LARGE_SCRIPT = 'large';

/** The tool (`blob`: 50 KB of text, numbered) and the scripted model's rules, for a worker serving the run. */
export function largeRunFixture(turns: number): { tool: ToolDefinition; script: Script } {
  let produced = 0;
  const tool = defineTool({
    name: 'blob',
    description: 'Returns 50 KB of text.',
    parameters: { type: 'object', properties: {} },
    execute: async () => ({ content: [{ type: 'text', text: `${++produced}:`.padEnd(LARGE_RESULT_BYTES, 'x') }] }),
  });
  const rules = [
    { match: `toolResult:blob ${turns}:`, text: 'all done' },
    { toolCalls: [{ name: 'blob', arguments: {} }] },
  ];
  return { tool, script: { rules } };
}

export interface LargeRunFigures {
  turns: number;
  seconds: number;
  messages: number;
  /** JSON bytes of the transcript (the result's `newMessages`: every message of the chain). */
  transcriptBytes: number;
  /** Runs in the continue-as-new chain. */
  runs: number;
  /** History bytes of each run (its events in protobuf), in the order visibility lists them. */
  historyBytes: number[];
  largestRunBytes: number;
  totalHistoryBytes: number;
  historyBytesPerTurn: number;
}

/**
 * Starts the run through `client` (whose worker has `largeRunFixture(turns)` as `scripted/large` and the tool `blob`,
 * and whose data converter reads offloaded payloads), waits for it and measures it from its result and the server. No
 * query: one on the finished run replays its last run, whose input carries the whole transcript (the test asserts
 * `allMessages()` on the handle itself).
 */
export async function runLarge(
  client: AgentClient,
  turns: number,
  workflowId = `large-${randomUUID()}`,
): Promise<{ handle: AgentRunHandle; result: AgentRunResult; figures: LargeRunFigures }> {
  const started = performance.now();
  const handle = await client.start(
    { model: `scripted/${LARGE_SCRIPT}`, prompt: 'go', tools: ['blob'], maxTurns: 100_000 },
    { workflowId },
  );
  const result = await handle.result();
  const seconds = (performance.now() - started) / 1000;
  const historyBytes: number[] = [];
  const temporalClient = client.client;
  for await (const wf of temporalClient.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const history = await temporalClient.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
    historyBytes.push(proto.temporal.api.history.v1.History.encode(history).finish().length);
  }
  const totalHistoryBytes = historyBytes.reduce((a, b) => a + b, 0);
  return {
    handle,
    result,
    figures: {
      turns,
      seconds,
      messages: result.newMessages.length,
      transcriptBytes: Buffer.byteLength(JSON.stringify(result.newMessages)),
      runs: historyBytes.length,
      historyBytes,
      largestRunBytes: Math.max(...historyBytes),
      totalHistoryBytes,
      historyBytesPerTurn: Math.round(totalHistoryBytes / turns),
    },
  };
}

const mb = (n: number) => `${(n / 1048576).toFixed(1)} MB`;

/** One line: `2000 turns in 180 s: transcript 98.6 MB (4002 messages), 26 runs, history … (largest run …), … B per turn`. */
export function describeLargeRun(f: LargeRunFigures): string {
  return (
    `${f.turns} turns in ${f.seconds.toFixed(0)} s: transcript ${mb(f.transcriptBytes)} (${f.messages} messages), ` +
    `${f.runs} runs in the chain, history ${mb(f.totalHistoryBytes)} in all (largest run ${mb(f.largestRunBytes)}), ` +
    `${f.historyBytesPerTurn} B of history per turn`
  );
}
