/**
 * `keel pending` (every run awaiting approval, found by `KeelStatus="awaiting-approval"`, with tool and arguments),
 * `keel approve <id> <toolCallId>` and `keel deny <id> <toolCallId>` (the `approve` / `deny` Updates).
 */
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import type { PendingApproval } from '../../../common/updates.js';
import type { AgentClient } from '../../agent-client.js';
import { act, globals, printJson, uiLink, usageError, withClient } from '../context.js';
import { tryState } from '../outcome.js';

export const AWAITING_APPROVAL_QUERY = 'KeelStatus="awaiting-approval"';

export interface PendingRun {
  workflowId: string;
  url: string;
  pendingApprovals: PendingApproval[];
}

/** Runs whose search attribute says they await approval, with their pending calls (from the `state` query). */
export async function pendingRuns(client: AgentClient, url: (id: string) => string): Promise<PendingRun[]> {
  const out: PendingRun[] = [];
  for await (const w of client.client.workflow.list({ query: AWAITING_APPROVAL_QUERY })) {
    const st = await tryState(client.client.workflow.getHandle(w.workflowId));
    if (st?.pendingApprovals.length)
      out.push({ workflowId: w.workflowId, url: url(w.workflowId), pendingApprovals: st.pendingApprovals });
  }
  return out;
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

function defaultApprover(): string {
  try {
    return process.env.KEEL_APPROVER ?? userInfo().username;
  } catch {
    return process.env.KEEL_APPROVER ?? '';
  }
}

export function registerApprovalCommands(program: Command): void {
  program
    .command('pending')
    .summary('list every tool call awaiting approval (runs with KeelStatus="awaiting-approval")')
    .action(
      act(async (_o: unknown, cmd: Command) => {
        const g = globals(cmd);
        return withClient(g, async (client) => {
          const runs = await pendingRuns(client, (id) => uiLink(g, id));
          if (g.json) return printJson(runs);
          if (runs.length === 0) return void process.stdout.write('No tool call is awaiting approval.\n');
          for (const r of runs) {
            for (const p of r.pendingApprovals) {
              process.stdout.write(
                `${r.workflowId}  ${p.toolCallId}  ${p.toolName} ${JSON.stringify(p.args)}\n  since ${new Date(p.requestedAt).toISOString()} · digest ${p.argsDigest}\n`,
              );
            }
            process.stdout.write(`  ${r.url}\n`);
          }
        });
      }),
    );

  for (const [name, verb] of [
    ['approve', 'approved'],
    ['deny', 'denied'],
  ] as const) {
    program
      .command(name)
      .summary(
        name === 'approve'
          ? 'let a tool call awaiting approval run'
          : 'refuse a tool call awaiting approval (the model gets the reason)',
      )
      .argument('<workflowId>', 'the run')
      .argument('<toolCallId>', 'the call (see `keel pending`)')
      .option('--as <name>', 'who decides (default $KEEL_APPROVER or your user name; with a token: its subject)')
      .option(
        '--token-file <file>',
        'a signed approval token (JWT) in this file, for workers that verify approvals (README "Who may approve")',
      )
      .option('--token', `the signed approval token is in $${TOKEN_ENV}`)
      .option('-r, --reason <text>', 'why (recorded; a denial shows it to the model)')
      .option(
        '--digest <argsDigest>',
        "decide only if the arguments still have this digest (default: the pending call's)",
      )
      .action(
        act(
          async (
            id: string,
            toolCallId: string,
            o: { as?: string; reason?: string; digest?: string; tokenFile?: string; token?: boolean },
            cmd: Command,
          ) => {
            const g = globals(cmd);
            const token = readToken(o);
            return withClient(g, async (client) => {
              const handle = client.getHandle(id);
              const pending = (await handle.state()).pendingApprovals.find((p) => p.toolCallId === toolCallId);
              const argsDigest = o.digest ?? pending?.argsDigest;
              if (!argsDigest)
                throw usageError(
                  `No tool call ${toolCallId} is awaiting approval in ${id}; \`keel pending\` lists those that are.`,
                );
              const input = {
                toolCallId,
                argsDigest,
                // a signed decision's approver is the token's subject
                ...(token === undefined || o.as !== undefined ? { approver: o.as ?? defaultApprover() } : {}),
                ...(o.reason !== undefined ? { reason: o.reason } : {}),
                ...(token !== undefined ? { token } : {}),
              };
              const record = name === 'approve' ? await handle.approve(input) : await handle.deny(input);
              if (g.json) return printJson({ workflowId: id, ...record, url: uiLink(g, id) });
              process.stdout.write(
                `${verb} ${toolCallId} (${record.toolName}${pending ? ` ${JSON.stringify(pending.args)}` : ''}) as ${record.approver}${record.reason ? `: ${record.reason}` : ''}\n${uiLink(g, id)}\n`,
              );
            });
          },
        ),
      );
  }
}
