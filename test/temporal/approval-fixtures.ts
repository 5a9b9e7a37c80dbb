/** Fixtures of the approval tests (approvals, approvals-auth, tree-approvals): what ran, and the `danger` tool. */
import { defineTool } from '../../activities/tools/define-tool.js';

/** Executions per workflow id (`danger x`, `deploy prod`, …): what actually ran; `note` appends one. */
export function ranLog(): { ran: Map<string, string[]>; note(workflowId: string, what: string): void } {
  const ran = new Map<string, string[]>();
  return {
    ran,
    note: (workflowId, what) => void ran.set(workflowId, [...(ran.get(workflowId) ?? []), what]),
  };
}

/**
 * `danger({target})`, which always needs approval: notes `danger <target>` for its workflow id and returns
 * `did <target>` (with `details: {target}` when `withDetails`).
 */
export function dangerTool(note: (workflowId: string, what: string) => void, opts: { withDetails?: boolean } = {}) {
  return defineTool({
    name: 'danger',
    description: 'Does something that needs a person to agree.',
    approval: 'always',
    parameters: { type: 'object', properties: { target: { type: 'string' } }, required: ['target'] },
    execute: async (_id, args: { target: string }, _s, _u, ctx) => {
      note(ctx.workflowId, `danger ${args.target}`);
      return {
        content: [{ type: 'text', text: `did ${args.target}` }],
        ...(opts.withDetails ? { details: { target: args.target } } : {}),
      };
    },
  });
}
