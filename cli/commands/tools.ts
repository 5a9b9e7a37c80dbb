/**
 * `keel tools`: the tools a worker started with the same options would offer — built-in, `--tools-module`, sub-agents
 * and each `--mcp` server's — one line each. Needs no Temporal server.
 */
import type { Command } from 'commander';
import { act, CliError, EXIT } from '../context.js';
import { loadApprovedTools, mcpServersOf } from '../start-worker.js';
import { hideOptionsExcept, TOOLS_OPTIONS, workerOptions, type WorkerFlags } from '../worker-flags.js';

export function register(program: Command): void {
  const tools = workerOptions(
    program
      .command('tools')
      .summary('the tools a worker started with these options offers, MCP ones with their server')
      .description(
        'Lists every tool `keel worker` with the same options would offer: the built-in tools (unless --no-builtin), those ' +
          'of each --tools-module, and those each --mcp server lists now (started or reached here, then closed), one line ' +
          'each: name, where it comes from, how it is retried and approved, and the first line of its description. ' +
          "Needs no Temporal server. It takes every option of `keel worker` (paste a worker's options as they are); " +
          'only those listed here change what it lists.',
      ),
  );
  hideOptionsExcept(tools, TOOLS_OPTIONS);
  tools.action(act(listTools));
}

/** One row per tool (name, source, retry and approval, description), printed as aligned columns. */
async function listTools(o: WorkerFlags): Promise<void> {
  // schemas only: nothing runs here, so no sandbox is checked
  const local = await loadApprovedTools({ ...o, role: 'model' });
  const servers = await mcpServersOf(o);
  const rows: string[][] = local.map((t) => [
    t.name,
    'worker',
    `${t.idempotent ? 'idempotent' : 'at most once'}${t.approval && t.approval !== 'never' ? ', approval' : ''}`,
    firstLine(t.description),
  ]);
  const { listMcpTools, loadAgents } = await import('../../worker/load-modules.js');
  for (const a of await loadAgents(o))
    rows.push([a.name, 'sub-agent', `child run, ${a.model ?? "the run's model"}`, firstLine(a.description)]);
  for (const { server, tools, errors } of servers ? await listMcpTools(servers) : []) {
    if (errors.length) throw new CliError(EXIT.usage, errors.join('\n'));
    for (const { definition: t, openWorld } of tools)
      rows.push([
        t.name,
        `mcp ${server}`,
        `${t.idempotent ? 'idempotent' : 'at most once'}${t.approval === 'always' ? ', approval' : ''}${openWorld ? ', open world' : ''}`,
        firstLine(t.description),
      ]);
  }
  printColumns(rows);
}

function printColumns(rows: string[][]): void {
  const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows)
    process.stdout.write(
      `${r
        .map((c, i) => (i < 3 ? c.padEnd(widths[i]) : c))
        .join('  ')
        .trimEnd()}\n`,
    );
  if (rows.length === 0) process.stdout.write('(no tools)\n');
}

/** The first line of a description, at most 100 characters. */
function firstLine(text: string): string {
  const line = text.split('\n', 1)[0].trim();
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
}
