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
 * Rewinds the open session `original` to turn `opts.atTurn`: ends it (`end`: a running agent run finishes first, and
 * the session closes Completed with its history as it was), then starts a new run under the same workflow id from its
 * first `atTurn` turns, which answers `opts.prompt` or, without one, waits for the next message. The turn and the new
 * input are checked before the session is ended.
 */
export async function rewindSession(
  original: WorkflowHandle,
  opts: Omit<ForkOptions, 'workflowId'>,
): Promise<WorkflowHandle> {
  const id = original.workflowId;
  const st = await original.query(stateQuery);
  if (st.mode !== 'session')
    throw new InvalidForkError(
      [`run ${id} is a task, not a session: fork it instead (keel fork ${id} --turn N)`],
      'rewind',
    );
  const planned = await planFork(original, opts, true);
  if (planned.status !== 'RUNNING')
    throw new InvalidForkError(
      [
        `session ${id} is ${planned.status.toLowerCase()}: rewind an open session (fork a closed one: keel fork ${id} --turn N)`,
      ],
      'rewind',
    );
  checkPlan(original.client, rewound(planned));
  const ack = await original.executeUpdate(endUpdate);
  if (ack.continuedAsNew) await original.result().catch(() => undefined); // the chain's last run closes
  // read again once closed: the turns completed meanwhile stay, the turn asked for is unchanged
  const plan = rewound(await planFork(original, opts, true));
  return startPlanned(original.client, plan, id);
}

const rewound = (plan: ForkPlan): ForkPlan => ({ ...plan, memo: { ...plan.memo, rewound: true } });

/** Refuses an input the fork's workflow would refuse, or one too large to send (`InvalidForkError`). */
function checkPlan(client: WorkflowClient, plan: ForkPlan): void {
  const errors = agentRunInputErrors(plan.input);
  const bytes = Buffer.byteLength(JSON.stringify(plan.input));
  // with a payload store the input is offloaded (history holds a reference), so its size is not Temporal's concern
  if (bytes > MAX_INLINE_INPUT_BYTES && !client.options.loadedDataConverter.externalStorage)
    errors.push(inputTooLarge(bytes));
  if (errors.length > 0) throw new InvalidForkError(errors, plan.memo.rewound ? 'rewind' : 'fork');
}

async function startPlanned(client: WorkflowClient, plan: ForkPlan, workflowId: string): Promise<WorkflowHandle> {
  checkPlan(client, plan);
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
