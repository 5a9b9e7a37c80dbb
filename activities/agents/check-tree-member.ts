/**
 * Local activity `checkTreeMember` (issue 33 item 10): whether a run that reported its calls awaiting approval to a
 * desk (signal `keelTreeApprovals`, workflows/tree/approvals.ts) is a member of that desk's tree. The desk cannot
 * see who sent a signal, so it asks the server about the run the report names: the first run (`runKey`) of workflow
 * `workflowId` must exist and its memo, set by the parent that started it, must name the desk as its tree's root
 * (`keelTree.rootWorkflowId`) or, for a batch's task, as its batch (`keelBatch.workflowId`). A report naming a run that
 * does not exist, or one of another tree, is not a member's; anyone able to signal the root cannot list a call there
 * without also starting a run whose memo names the root.
 */
import type { Client } from '@temporalio/client';
import { asTreeMembership, TREE_MEMO_KEY } from '../../common/tree/membership.js';

/** The desk (a root run or a batch) and the run a report names. */
export interface CheckTreeMemberInput {
  desk: string;
  workflowId: string;
  runKey: string;
}

/** The memo key of a batch task's membership (workflows/batch-protocol.ts `BATCH_MEMO_KEY`). */
const BATCH_MEMO = 'keelBatch';

export function createCheckTreeMember(client: () => Client) {
  return async function checkTreeMember(input: CheckTreeMemberInput): Promise<boolean> {
    if (input.workflowId === input.desk) return false; // a desk is not its own descendant
    let memo: Record<string, unknown> | undefined;
    try {
      memo = (await client().workflow.getHandle(input.workflowId, input.runKey).describe()).memo;
    } catch (err) {
      if ((err as { name?: string }).name === 'WorkflowNotFoundError') return false;
      throw err; // the server is unreachable: retried
    }
    const tree = asTreeMembership(memo?.[TREE_MEMO_KEY]);
    if (tree) return tree.rootWorkflowId === input.desk;
    const batch = memo?.[BATCH_MEMO] as { workflowId?: unknown } | undefined;
    return typeof batch?.workflowId === 'string' && batch.workflowId === input.desk;
  };
}
