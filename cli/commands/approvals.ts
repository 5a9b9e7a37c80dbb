/**
 * `keel pending` (every run awaiting approval, found by `KeelStatus="awaiting-approval"`, with tool and arguments; a
 * sub-agent's calls under its tree's root, with their path), `keel approve <id> <toolCallId>` and `keel deny <id>
 * <toolCallId>` (the `approve` / `deny` Updates; on a root, a sub-agent's call is decided by that sub-agent).
 * `approve` decides the arguments the person saw: `--digest`, or the digest a signed token binds; never merely what is
 * pending now. Model and tool text (arguments, reasons) reach the terminal with control characters escaped.
 */
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { decodeJwt } from 'jose';
import { APPROVAL_CLAIMS } from '../../common/approval-claims.js';
import { asTreeMembership, TREE_MEMO_KEY } from '../../common/tree/membership.js';
import { approvalRoute, pathText } from '../../common/tree/approvals.js';
import type { AgentRunState } from '../../common/run.js';
import type { PendingApproval } from '../../common/updates.js';
import type { AgentClient } from '../../client/agent-client.js';
import { act, globals, printJson, uiLink, usageError, withClient } from '../context.js';
import { tryState } from '../outcome.js';
import { terminalSafe } from '../terminal-text.js';

export const AWAITING_APPROVAL_QUERY = 'KeelStatus="awaiting-approval"';

export interface PendingRun {
  workflowId: string;
  url: string;
  pendingApprovals: PendingApproval[];
}

/**
 * Runs whose search attribute says they await approval, with their pending calls (from the `state` query). A
 * sub-agent's calls are listed under its tree's root (with `workflowId` and `path`, as the root's state lists them);
 * one its root does not list (not yet told, or a root that lists none) under the sub-agent's own run.
 */
export async function pendingRuns(client: AgentClient, url: (id: string) => string): Promise<PendingRun[]> {
  const states = new Map<string, Promise<AgentRunState | undefined>>();
  const stateOf = (id: string) => {
    if (!states.has(id)) states.set(id, tryState(client.client.workflow.getHandle(id)));
    return states.get(id)!;
  };
  const out = new Map<string, PendingRun>();
  const add = (workflowId: string, calls: PendingApproval[]) => {
    const run = out.get(workflowId) ?? { workflowId, url: url(workflowId), pendingApprovals: [] };
    for (const p of calls)
      if (!run.pendingApprovals.some((q) => q.toolCallId === p.toolCallId && q.workflowId === p.workflowId))
        run.pendingApprovals.push(p);
    if (run.pendingApprovals.length > 0) out.set(workflowId, run);
  };
  for await (const w of client.client.workflow.list({ query: AWAITING_APPROVAL_QUERY })) {
    const calls = (await stateOf(w.workflowId))?.pendingApprovals ?? [];
    const tree = asTreeMembership(w.memo?.[TREE_MEMO_KEY]);
    if (!tree) {
      add(w.workflowId, calls);
      continue;
    }
    const atRoot = (await stateOf(tree.rootWorkflowId))?.pendingApprovals ?? [];
    add(tree.rootWorkflowId, atRoot);
    const listed = (p: PendingApproval) =>
      atRoot.some((q) => q.workflowId === w.workflowId && q.toolCallId === p.toolCallId);
    add(
      w.workflowId,
      calls.filter((p) => !listed(p)),
    );
  }
  return [...out.values()];
}

/** The environment variable `keel approve --token` reads the token from (a token on the command line would be in `ps`). */
export const TOKEN_ENV = 'KEEL_APPROVAL_TOKEN';

/** The token of `--token-file <file>` or `--token` ($KEEL_APPROVAL_TOKEN), trimmed; undefined without either. */
function readToken(o: { tokenFile?: string; token?: boolean }): string | undefined {
  if (o.tokenFile !== undefined && o.token) throw usageError('give --token-file or --token, not both');
  if (o.tokenFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(o.tokenFile, 'utf8').trim();
    } catch (err) {
      throw usageError(`--token-file ${o.tokenFile}: ${(err as Error).message}`);
    }
    if (!text) throw usageError(`--token-file ${o.tokenFile} is empty`);
    return text;
  }
  if (!o.token) return undefined;
  const text = process.env[TOKEN_ENV]?.trim();
  if (!text) throw usageError(`--token reads the token from $${TOKEN_ENV}, which is not set`);
  return text;
}

/** The digest a signed approval's token binds (`keel_args_digest`): what its signer was shown. */
function tokenDigest(token: string | undefined): string | undefined {
  if (token === undefined) return undefined;
  try {
    const digest = decodeJwt(token)[APPROVAL_CLAIMS.argsDigest];
    return typeof digest === 'string' ? digest : undefined;
  } catch {
    return undefined; // not a JWT: the run refuses it with its own text
  }
}

/**
 * `keel approve` without `--digest` (and no token binding one): approving whatever is pending now could run arguments
 * the person never saw, so the CLI shows them whole and the command that approves exactly them.
 */
export function digestRequired(id: string, toolCallId: string, p: PendingApproval): string {
  return terminalSafe(
    `approve needs --digest <argsDigest>, the digest of the arguments you approve: ${toolCallId} waits with ` +
      `${p.toolName} ${JSON.stringify(p.args)} (digest ${p.argsDigest}); to approve exactly these: ` +
      `keel approve ${id} ${toolCallId} --digest ${p.argsDigest}`,
  );
}

function defaultApprover(): string {
  try {
    return process.env.KEEL_APPROVER ?? userInfo().username;
  } catch {
    return process.env.KEEL_APPROVER ?? '';
  }
}

/** What `keel approve` / `keel deny` take besides the run and the call. */
interface DecideOptions {
  as?: string;
  reason?: string;
  digest?: string;
  tokenFile?: string;
  token?: boolean;
}

export function register(program: Command): void {
  registerPending(program);
  for (const [name, verb] of [
    ['approve', 'approved'],
    ['deny', 'denied'],
  ] as const)
    registerDecision(program, name, verb);
}

/** `keel pending`. */
function registerPending(program: Command): void {
  program
    .command('pending')
    .summary('list every tool call awaiting approval (runs with KeelStatus="awaiting-approval")')
    .action(act(listPending));
}

/** `keel pending`'s action: every call awaiting approval, with its run's link (or JSON). */
async function listPending(_o: unknown, cmd: Command): Promise<number | void> {
  const g = globals(cmd);
  return withClient(g, async (client) => {
    const runs = await pendingRuns(client, (id) => uiLink(g, id));
    if (g.json) return printJson(runs);
    if (runs.length === 0) return void process.stdout.write('No tool call is awaiting approval.\n');
    for (const r of runs) {
      for (const p of r.pendingApprovals) {
        const where = p.workflowId ? `in ${pathText(p.path ?? [])} (${p.workflowId}) · ` : '';
        process.stdout.write(
          terminalSafe(
            `${r.workflowId}  ${p.toolCallId}  ${p.toolName} ${JSON.stringify(p.args)}\n  ${where}since ${new Date(p.requestedAt).toISOString()} · digest ${p.argsDigest}\n`,
          ),
        );
      }
      process.stdout.write(`  ${r.url}\n`);
    }
  });
}

/** `keel approve` or `keel deny` (`verb`: what the output says was done). */
function registerDecision(program: Command, name: 'approve' | 'deny', verb: 'approved' | 'denied'): void {
  const cmd = program
    .command(name)
    .summary(
      name === 'approve'
        ? 'let a tool call awaiting approval run'
        : 'refuse a tool call awaiting approval (the model gets the reason)',
    )
    .argument('<workflowId>', 'the run')
    .argument('<toolCallId>', 'the call (see `keel pending`)');
  decisionOptions(cmd).action(
    act((id: string, toolCallId: string, o: DecideOptions, c: Command) =>
      approveOrDeny(name, verb, id, toolCallId, o, c),
    ),
  );
}

/** The options of `keel approve` / `keel deny`, in `--help` order. */
function decisionOptions(cmd: Command): Command {
  return cmd
    .option('--as <name>', 'who decides (default $KEEL_APPROVER or your user name; with a token: its subject)')
    .option(
      '--token-file <file>',
      'a signed approval token (JWT) in this file, for workers that verify approvals (README "Who may approve")',
    )
    .option('--token', `the signed approval token is in $${TOKEN_ENV}`)
    .option('--reason <text>', 'why (recorded; a denial shows it to the model)')
    .option(
      '--digest <argsDigest>',
      "decide only if the arguments have this digest (`keel pending`, `keel watch`); approve needs it unless a token binds one; deny defaults to the pending call's",
    );
}

/** `keel approve` / `keel deny`'s action: send the decision (to the sub-agent whose call it is) and print it. */
async function approveOrDeny(
  name: 'approve' | 'deny',
  verb: 'approved' | 'denied',
  id: string,
  toolCallId: string,
  o: DecideOptions,
  cmd: Command,
): Promise<number | void> {
  const g = globals(cmd);
  const token = readToken(o);
  return withClient(g, async (client) => {
    const handle = client.getHandle(id);
    // the run's own call, or one of its sub-agents' (decided by the sub-agent: AgentRunHandle routes it)
    const route = approvalRoute(id, await handle.state(), toolCallId);
    if ('ambiguous' in route) throw usageError(route.ambiguous);
    const pending = route.pending;
    const decidedIn = pending?.workflowId ?? id;
    const argsDigest = o.digest ?? (name === 'deny' ? pending?.argsDigest : tokenDigest(token));
    if (!pending && !o.digest)
      throw usageError(
        `No tool call ${toolCallId} is awaiting approval in ${id}; \`keel pending\` lists those that are.`,
      );
    if (!argsDigest) throw usageError(digestRequired(id, toolCallId, pending!));
    const input = {
      toolCallId,
      argsDigest,
      // a signed decision's approver is the token's subject
      ...(token === undefined || o.as !== undefined ? { approver: o.as ?? defaultApprover() } : {}),
      ...(o.reason !== undefined ? { reason: o.reason } : {}),
      ...(token !== undefined ? { token } : {}),
    };
    const record = name === 'approve' ? await handle.approve(input) : await handle.deny(input);
    if (g.json) return printJson({ workflowId: decidedIn, ...record, url: uiLink(g, decidedIn) });
    const where = pending?.path ? ` in ${pathText(pending.path)}` : '';
    process.stdout.write(
      terminalSafe(
        `${verb} ${toolCallId} (${record.toolName}${pending ? ` ${JSON.stringify(pending.args)}` : ''})${where} as ${record.approver}${record.reason ? `: ${record.reason}` : ''}\n${uiLink(g, decidedIn)}\n`,
      ),
    );
  });
}
