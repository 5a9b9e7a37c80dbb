/**
 * Starts a fork (beside its original) or a rewound session (in its place, same workflow id) from a {@link ForkPlan}
 * (issue 37 item 2; docs/runs.md#fork-and-rewind). The fork is linked both ways without writing to the original: its
 * memo `keelForkedFrom` and summary say `forked from <id> at turn N`, and its search attribute `KeelForkedFrom` (when
 * the namespace has it) lets a visibility query find the original's forks (`forksOf`).
 */
import { randomUUID } from 'node:crypto';
import type { WorkflowClient, WorkflowHandle } from '@temporalio/client';
import { FORK_MEMO_KEY, forkLine, type ForkMemo } from '../../common/fork.js';
import {
  forkAttributeRegistered,
  KEEL_FORKED_FROM,
  keelSearchAttributesRegistered,
  startSearchAttributes,
} from '../../common/search-attributes.js';
import { agentRunInputErrors } from '../../common/validate-input.js';
import { endUpdate, stateQuery } from '../../workflows/definitions.js';
import { AGENT_WORKFLOW_TYPE, inputTooLarge } from '../agent-client.js';
import { InvalidForkError, planFork, type ForkOptions, type ForkPlan } from './plan-fork.js';

/** Temporal refuses a payload over 2 MB, unless the client offloads it to the payload store. */
const MAX_INLINE_INPUT_BYTES = 2 * 1024 * 1024;

/** Forks the run of `original` (its latest run) after turn `opts.atTurn`; returns the fork's workflow handle. */
export async function forkRun(original: WorkflowHandle, opts: ForkOptions): Promise<WorkflowHandle> {
  const plan = await planFork(original, opts);
  const workflowId = opts.workflowId ?? `${original.workflowId}-fork-${randomUUID().slice(0, 8)}`;
  return startPlanned(original.client, plan, workflowId);
}

/**
 * Rewinds the open session `original` to turn `opts.atTurn`: when it is idle (status `waiting`), ends it (`end`: it
 * closes Completed, its history as it was) and starts a new run under the same workflow id from its first `atTurn`
 * turns, which answers `opts.prompt` or, without one, waits for the next message.
 */
export async function rewindSession(
  original: WorkflowHandle,
  opts: Omit<ForkOptions, 'workflowId'>,
): Promise<WorkflowHandle> {
  const st = await original.query(stateQuery);
  const id = original.workflowId;
  if (st.mode !== 'session')
    throw new InvalidForkError([`run ${id} is a task, not a session: fork it instead (keel fork ${id} --turn N)`]);
  const plan = await planFork(original, opts, true);
  if (plan.status !== 'RUNNING' || st.status !== 'waiting')
    throw new InvalidForkError([
      `session ${id} is ${plan.status === 'RUNNING' ? st.status : plan.status.toLowerCase()}: rewind an open session waiting for input ` +
        `(wait for it, or \`keel interrupt ${id}\` first; fork a closed one: keel fork ${id} --turn N)`,
    ]);
  await original.executeUpdate(endUpdate);
  return startPlanned(original.client, { ...plan, memo: { ...plan.memo, rewound: true } }, id);
}

async function startPlanned(client: WorkflowClient, plan: ForkPlan, workflowId: string): Promise<WorkflowHandle> {
  const errors = agentRunInputErrors(plan.input);
  const bytes = Buffer.byteLength(JSON.stringify(plan.input));
  // with a payload store the input is offloaded (history holds a reference), so its size is not Temporal's concern
  if (bytes > MAX_INLINE_INPUT_BYTES && !client.options.loadedDataConverter.externalStorage)
    errors.push(inputTooLarge(bytes));
  if (errors.length > 0) throw new InvalidForkError(errors);
  const attributes = await forkAttributes(client, plan.input.model, plan.memo);
  return client.start(AGENT_WORKFLOW_TYPE, {
    taskQueue: plan.taskQueue,
    workflowId,
    args: [plan.input],
    staticSummary: forkLine(plan.memo),
    memo: { [FORK_MEMO_KEY]: plan.memo },
    ...(attributes.length > 0 ? { typedSearchAttributes: attributes } : {}),
  });
}

/** Keel's start attributes and `KeelForkedFrom` (not for a rewind: it would name itself), as far as the namespace has them. */
async function forkAttributes(client: WorkflowClient, model: string, memo: ForkMemo) {
  const ns = client.options.namespace;
  const [run, fork] = await Promise.all([
    keelSearchAttributesRegistered(client.connection, ns),
    memo.rewound ? false : forkAttributeRegistered(client.connection, ns),
  ]);
  return [
    ...(run ? startSearchAttributes(model) : []),
    ...(fork ? [{ key: KEEL_FORKED_FROM, value: memo.workflowId }] : []),
  ];
}
