/** This run's place in a sub-agent tree (common/tree/membership.ts), read from its memo; deterministic. */
import { workflowInfo } from '@temporalio/workflow';
import { asTreeMembership, TREE_MEMO_KEY, type TreeMembership } from '../../common/tree/membership.js';

/** The tree this run belongs to as a sub-agent, or undefined for a root run. */
export function treeMembership(): TreeMembership | undefined {
  return asTreeMembership(workflowInfo().memo?.[TREE_MEMO_KEY]);
}
