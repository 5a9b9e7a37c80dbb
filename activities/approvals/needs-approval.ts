/**
 * Whether a prepared call needs a person's approval (README "Approvals"). Runs in the preparation activity, after
 * validation and `beforeToolCall`. The digest that binds an approval to exactly its arguments is
 * node-common/args-digest.ts.
 */
import type { CallScope } from '../tools/run-tool.js';

/**
 * The tool's `approval` (`'always'`, or its predicate on the prepared arguments) decides, unless the worker's
 * `hooks.needsApproval` returns a boolean, which wins. A throw becomes the call's error result.
 */
export async function needsApproval(s: CallScope, args: unknown): Promise<boolean> {
  const approval = s.tool?.approval;
  const declared =
    approval === 'always' ? true : typeof approval === 'function' ? (await approval(args, s.context)) === true : false;
  const policy = await s.hooks.needsApproval?.(
    { assistantMessage: s.assistantMessage!, toolCall: s.call, args, context: s.context, declared },
    s.signal,
  );
  return typeof policy === 'boolean' ? policy : declared;
}
