/**
 * Where a decision sent to a tree's root goes (common/tree/approvals.ts `approvalRoute`, README "Approvals", one
 * approval desk): the root's own call first, then the one sub-agent waiting with that call id, then whoever decided it;
 * a call id several sub-agents wait for is refused naming them, with a command that works when pasted.
 */
import { describe, expect, it } from 'vitest';
import { approvalRoute } from '../../common/tree/approvals.js';
import type { ApprovalRecord, PendingApproval } from '../../common/updates.js';

const call = (toolCallId: string, where?: { workflowId: string; path: string[] }): PendingApproval => ({
  toolCallId,
  toolName: 'bash',
  args: {},
  argsDigest: 'd',
  requestedAt: 1,
  ...where,
});
const record = (toolCallId: string, workflowId?: string): ApprovalRecord => ({
  toolCallId,
  toolName: 'bash',
  decision: 'approved',
  approver: 'ann',
  argsDigest: 'd',
  requestedAt: 1,
  decidedAt: 2,
  ...(workflowId ? { workflowId, path: ['a › c1'] } : {}),
});
const subA = { workflowId: 'root-c1', path: ['a › c1'] };
const subB = { workflowId: 'root-c2', path: ['b › c2'] };

describe('approvalRoute', () => {
  it('the root’s own pending call before a sub-agent’s with the same id', () => {
    const st = { pendingApprovals: [call('x'), call('x', subA)], approvals: [] };
    expect(approvalRoute('root', st, 'x')).toEqual({ workflowId: 'root', pending: call('x') });
  });

  it('a sub-agent’s pending call goes to the sub-agent', () => {
    const st = { pendingApprovals: [call('y'), call('x', subA)], approvals: [] };
    expect(approvalRoute('root', st, 'x')).toEqual({ workflowId: 'root-c1', pending: call('x', subA) });
  });

  it('two sub-agents waiting with one call id: refused, naming both', () => {
    const st = { pendingApprovals: [call('x', subA), call('x', subB)], approvals: [] };
    expect(approvalRoute('root', st, 'x')).toEqual({
      ambiguous:
        'Tool call x awaits approval in 2 sub-agents: root-c1 (a › c1), root-c2 (b › c2); decide it on its own run: keel approve root-c1 x',
    });
  });

  it('a decided call goes to who decided it (the root itself when it has a record); an unknown one to the root', () => {
    expect(approvalRoute('root', { pendingApprovals: [], approvals: [record('x', 'root-c1')] }, 'x')).toEqual({
      workflowId: 'root-c1',
    });
    expect(
      approvalRoute('root', { pendingApprovals: [], approvals: [record('x'), record('x', 'root-c1')] }, 'x'),
    ).toEqual({ workflowId: 'root' });
    expect(approvalRoute('root', { pendingApprovals: [call('y', subA)], approvals: [] }, 'x')).toEqual({
      workflowId: 'root',
    });
  });
});
