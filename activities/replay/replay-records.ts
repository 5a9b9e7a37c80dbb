/**
 * The tool side of a counterfactual replay (docs/runs.md#counterfactual-replay): a replaying run's tool call that
 * matches a recorded one (common/replay.ts) gets the recorded result without executing; another gets the "not in the
 * record" result or runs live, by the run's `liveTools`. The record is the original run's own messages, read through
 * the worker's Temporal client (a closed run's result, else queries: client/replay/recorded-run.ts) once per worker
 * and original run, and kept in a small cache: it never enters the replaying run's history.
 */
import type { Client } from '@temporalio/client';
import type { ToolCall } from '../../common/messages.js';
import {
  matchRecorded,
  notInRecordText,
  recordedCalls,
  runsLive,
  type RecordedCall,
  type ReplayRef,
  type ReplaySpec,
} from '../../common/replay.js';
import type { ToolOutcome } from '../../common/wire.js';
import { readRecordedRun } from '../../client/replay/recorded-run.js';
import { argsDigest } from '../../node-common/args-digest.js';
import type { ToolDefinition } from '../tools/define-tool.js';

/** Original runs whose record a worker keeps (least recently used dropped first). */
const KEPT_RECORDS = 64;

/** What a replaying call gets: a result served without running the tool, or `live` (run it as usual). */
export type ReplayDecision = { served: ToolOutcome } | 'live';

/** The records of the original runs this worker's replays read, by `<workflowId>/<runId>`. */
export class ReplayRecords {
  private readonly records = new Map<string, Promise<RecordedCall[]>>();

  constructor(private readonly client: () => Client) {}

  /** Serves the call at `ref.at[k]` from the record, refuses it ("not in the record"), or lets it run live. */
  async decide(ref: ReplayRef, k: number, call: ToolCall, tool: ToolDefinition | undefined): Promise<ReplayDecision> {
    const record = await this.record(ref);
    const at = { turn: ref.turn, index: ref.at[k] ?? k, name: call.name, digest: argsDigest(call.arguments) };
    const found = matchRecorded(record, at);
    if (found?.result) {
      const r = found.result;
      const served: ToolOutcome = { content: r.content, details: r.details, isError: r.isError, timestamp: Date.now() };
      return { served: r.addedToolNames ? { ...served, addedToolNames: r.addedToolNames } : served };
    }
    if (runsLive(ref.liveTools, tool?.idempotent === true)) return 'live';
    const text = notInRecordText(ref.workflowId, call.name, ref.turn, ref.liveTools);
    return { served: { content: [{ type: 'text', text }], details: {}, isError: true, timestamp: Date.now() } };
  }

  private record(spec: ReplaySpec): Promise<RecordedCall[]> {
    const key = `${spec.workflowId}/${spec.runId ?? ''}`;
    let kept = this.records.get(key);
    if (kept)
      this.records.delete(key); // re-inserted below: most recently used last
    else kept = this.read(spec);
    // a failed read is not kept: the activity's retry reads again
    kept.catch(() => {
      if (this.records.get(key) === kept) this.records.delete(key);
    });
    this.records.set(key, kept);
    while (this.records.size > KEPT_RECORDS) this.records.delete(this.records.keys().next().value!);
    return kept;
  }

  private async read(spec: ReplaySpec): Promise<RecordedCall[]> {
    const run = await readRecordedRun(this.client().workflow.getHandle(spec.workflowId, spec.runId));
    return recordedCalls(run.messages, 0, argsDigest);
  }
}
