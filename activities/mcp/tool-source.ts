/**
 * MCP tools as Keel tools. A run names them `<server>__<tool>` (or `<server>__*`-style globs); `startRun` lists the
 * servers and records each named tool (description, input schema, annotations) in the run's state, so every later
 * turn, a continue-as-new and a worker whose server now lists something else all see what the run started with.
 *
 * Defaults from the MCP annotations (each overridable per server and tool in the worker's configuration):
 * `readOnlyHint` or `idempotentHint` → idempotent (retried after a lost worker); a tool that is not read-only and
 * not `destructiveHint: false` (MCP's default is destructive) → waits for approval; `openWorldHint` is recorded.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { ErrorType } from '../../common/errors.js';
import type { McpToolRecord } from '../../common/wire.js';
import type { AgentToolResult, JsonSchema, ToolDefinition } from '../tools/define-tool.js';
import type { McpServers } from './config.js';
import { McpConnections, McpTransportError, type McpProgress } from './connections.js';
import { keelContent } from './content.js';
import { describeSchemaChange, schemaChange } from './schema-change.js';

export type { McpToolRecord } from '../../common/wire.js';

/** Separates the server's name from the tool's in a Keel tool name: `files__read_text_file`. */
export const MCP_SEPARATOR = '__';
const KEEL_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** `<server>__<tool>` split when `<server>` is one of `servers`; undefined for any other name. */
export function splitMcpName(name: string, servers: McpServers): { server: string; tool: string } | undefined {
  const at = name.indexOf(MCP_SEPARATOR);
  if (at <= 0) return undefined;
  const server = name.slice(0, at);
  return Object.hasOwn(servers, server) ? { server, tool: name.slice(at + MCP_SEPARATOR.length) } : undefined;
}

function globRegExp(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
}

/** What a listed MCP tool is recorded as. */
export function recordOf(server: string, tool: Tool): McpToolRecord {
  const a = tool.annotations ?? {};
  const { $schema: _dialect, ...parameters } = tool.inputSchema as JsonSchema;
  return {
    server,
    tool: tool.name,
    description: tool.description ?? tool.title ?? tool.name,
    parameters,
    ...(a.readOnlyHint !== undefined ? { readOnly: a.readOnlyHint } : {}),
    ...(a.destructiveHint !== undefined ? { destructive: a.destructiveHint } : {}),
    ...(a.idempotentHint !== undefined ? { idempotentHint: a.idempotentHint } : {}),
    ...(a.openWorldHint !== undefined ? { openWorld: a.openWorldHint } : {}),
  };
}

export class McpToolSource {
  readonly connections: McpConnections;
  private readonly definitions = new Map<string, ToolDefinition>();
  /** The runs and tools whose schema change was warned about, per listing (one per server connection). */
  private readonly schemaWarnings = new WeakMap<Tool[], Set<string>>();

  constructor(
    readonly servers: McpServers,
    /** Wraps each definition built (the worker's tool ledger). */
    private readonly wrap: (tool: ToolDefinition) => ToolDefinition = (t) => t,
    connections?: McpConnections,
  ) {
    this.connections = connections ?? new McpConnections(servers);
  }

  /** The run's tool names with MCP names and globs resolved against the servers' listings now. */
  async resolve(names: string[]): Promise<{ names: string[]; records: McpToolRecord[]; errors: string[] }> {
    const out: string[] = [];
    const records: McpToolRecord[] = [];
    const errors: string[] = [];
    const listings = new Map<string, Promise<Tool[]>>();
    const list = (server: string) => {
      let l = listings.get(server);
      if (!l) listings.set(server, (l = this.connections.listTools(server)));
      return l;
    };
    for (const name of names) {
      const split = splitMcpName(name, this.servers);
      if (!split) {
        out.push(name);
        continue;
      }
      let tools: Tool[];
      try {
        tools = await list(split.server);
      } catch (err) {
        errors.push(
          `tools: ${JSON.stringify(name)}: cannot list the tools of MCP server "${split.server}": ${(err as Error).message}`,
        );
        continue;
      }
      const pattern = globRegExp(split.tool);
      const matched = tools.filter((t) => pattern.test(t.name));
      const usable = matched.filter((t) => KEEL_TOOL_NAME.test(`${split.server}${MCP_SEPARATOR}${t.name}`));
      if (usable.length === 0) {
        errors.push(
          `tools: ${JSON.stringify(name)} matches no tool of MCP server "${split.server}"; it offers: ${tools.map((t) => `${split.server}${MCP_SEPARATOR}${t.name}`).join(', ') || '(none)'}`,
        );
        continue;
      }
      for (const t of usable) {
        const full = `${split.server}${MCP_SEPARATOR}${t.name}`;
        if (out.includes(full)) continue;
        out.push(full);
        records.push(recordOf(split.server, t));
      }
    }
    return { names: out, records, errors };
  }

  /** Whether the record's tool is retried after a lost worker (annotations, then the worker's override). */
  idempotent(r: McpToolRecord): boolean {
    return this.override(r).idempotent ?? (r.readOnly === true || r.idempotentHint === true);
  }

  private override(r: McpToolRecord) {
    const tools = this.servers[r.server]?.tools ?? {};
    return { ...tools['*'], ...tools[r.tool] };
  }

  /** The Keel tool for a recorded MCP tool (one per name and recorded schema, so validation is compiled once). */
  definition(r: McpToolRecord): ToolDefinition {
    const name = `${r.server}${MCP_SEPARATOR}${r.tool}`;
    const key = JSON.stringify(r);
    const known = this.definitions.get(key);
    if (known) return known;
    const override = this.override(r);
    const idempotent = this.idempotent(r);
    const destructive = r.readOnly !== true && r.destructive !== false;
    const timeout = this.servers[r.server]?.timeout;
    const tool: ToolDefinition = {
      name,
      label: `${r.server}: ${r.tool}`,
      description: r.description,
      parameters: r.parameters,
      idempotent,
      approval: override.approval ?? (destructive ? 'always' : 'never'),
      ...(timeout !== undefined ? { timeout } : {}),
      summary: () => `mcp ${r.server}: ${r.tool}`,
      execute: (_id, args, signal, onUpdate, context) =>
        this.call(r, args as Record<string, unknown>, signal, context.workflowId, (p) =>
          onUpdate({ content: [{ type: 'text', text: progressText(p) }], details: { progress: p } }),
        ),
    };
    const wrapped = this.wrap(tool);
    this.definitions.set(key, wrapped);
    return wrapped;
  }

  private async call(
    r: McpToolRecord,
    args: Record<string, unknown>,
    signal: AbortSignal,
    workflowId: string,
    onProgress: (p: McpProgress) => void,
  ): Promise<AgentToolResult> {
    const name = `${r.server}${MCP_SEPARATOR}${r.tool}`;
    let details: Record<string, unknown> = { server: r.server, tool: r.tool };
    let result;
    try {
      result = await this.connections.callTool(r.server, r.tool, args, signal, onProgress);
    } catch (err) {
      if (!(err instanceof McpTransportError)) {
        if (isJsonRpcError(err))
          return this.refused(
            r,
            await this.withSchemaChange(r, workflowId, details),
            `MCP server "${r.server}" answered ${name} with an error: ${err.message}`,
          );
        throw err;
      }
      // a read-only or idempotent call ends this attempt with a retryable failure: the activity's retry policy runs it
      // again, on a new connection (a stdio server started again); another call may have run, so it is not run again
      if (this.idempotent(r))
        throw ApplicationFailure.retryable(
          `MCP server "${r.server}" failed during ${name}: ${err.message} (the server exited, did not start or the connection broke). ${name} is idempotent: the call is retried on a new connection.`,
          ErrorType.ToolTransport,
        );
      throw new Error(
        `MCP server "${r.server}" failed during ${name}: ${err.message} (the server exited or the connection broke); the call may have partially run and was not retried because ${name} is not idempotent. The server is connected again on the next call.`,
      );
    }
    details = await this.withSchemaChange(r, workflowId, details);
    const content = keelContent(result);
    const withStructured =
      result.structuredContent !== undefined ? { ...details, structuredContent: result.structuredContent } : details;
    if (result.isError === true) return this.refused(r, withStructured, undefined, content);
    return { content, details: withStructured };
  }

  /**
   * `details` with `schemaChange` when the server's listing on its current connection (a restarted server, another
   * version) gives the tool an input schema other than the one the run recorded: the arguments were validated against
   * the recorded one. Warned in the worker's log once per run, tool and connection.
   */
  private async withSchemaChange(
    r: McpToolRecord,
    workflowId: string,
    details: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    let listing: Tool[];
    try {
      listing = await this.connections.connectedTools(r.server);
    } catch {
      return details; // the listing only adds the report
    }
    const live = listing.find((t) => t.name === r.tool);
    const change = live && schemaChange(r.parameters, recordOf(r.server, live).parameters);
    if (!change) return details;
    let warned = this.schemaWarnings.get(listing);
    if (!warned) this.schemaWarnings.set(listing, (warned = new Set()));
    if (!warned.has(`${workflowId}\0${r.tool}`)) {
      warned.add(`${workflowId}\0${r.tool}`);
      warn(
        `[keel] MCP server "${r.server}" changed the input schema of ${r.tool} since run ${workflowId} recorded it (${describeSchemaChange(change)}); the run's calls of ${r.server}${MCP_SEPARATOR}${r.tool} are validated against the recorded schema`,
        { workflowId, server: r.server, tool: r.tool, schemaChange: change },
      );
    }
    return { ...details, schemaChange: change };
  }

  /**
   * An error result, with the reason when the tool is gone from the server or its input schema changed since the run
   * recorded it (the arguments were validated against the recorded schema).
   */
  private async refused(
    r: McpToolRecord,
    details: Record<string, unknown>,
    text?: string,
    content?: AgentToolResult['content'],
  ): Promise<AgentToolResult> {
    const name = `${r.server}${MCP_SEPARATOR}${r.tool}`;
    let live: Tool | undefined;
    let listed = false;
    try {
      live = (await this.connections.listTools(r.server)).find((t) => t.name === r.tool);
      listed = true;
    } catch {
      // the listing is only for a better message
    }
    if (listed && !live)
      return {
        content: [
          {
            type: 'text',
            text: `Tool ${name} is no longer offered by MCP server "${r.server}" (it was when this run started). Use another tool.`,
          },
        ],
        details,
        isError: true,
      };
    const blocks = content ?? [{ type: 'text' as const, text: text ?? `${name} failed` }];
    if (live && JSON.stringify(recordOf(r.server, live).parameters) !== JSON.stringify(r.parameters))
      blocks.push({
        type: 'text',
        text: `Note: MCP server "${r.server}" changed the input schema of ${r.tool} since this run started; the arguments were checked against the schema the run recorded: ${JSON.stringify(r.parameters)}; the server's is now: ${JSON.stringify(recordOf(r.server, live).parameters)}`,
      });
    return { content: blocks, details, isError: true };
  }

  close(): Promise<void> {
    return this.connections.close();
  }
}

/** A warning in the worker's log: the activity's logger (with the run's ids) in an activity, else stderr. */
function warn(message: string, meta: Record<string, unknown>): void {
  let log;
  try {
    log = Context.current().log;
  } catch {
    process.stderr.write(`${message}\n`);
    return;
  }
  log.warn(message, meta);
}

/** A JSON-RPC error response (the SDK's `McpError`: a numeric `code`), told apart without loading the SDK. */
function isJsonRpcError(err: unknown): err is Error {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'number';
}

function progressText(p: McpProgress): string {
  return `progress ${p.progress}${p.total !== undefined ? `/${p.total}` : ''}${p.message ? `: ${p.message}` : ''}`;
}
