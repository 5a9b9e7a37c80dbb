/**
 * One MCP client per configured server per worker process: connected lazily (on the first listing or call), dropped
 * when its transport closes (a stdio server that exits or crashes, an HTTP server that goes away) so the next use
 * connects again (a stdio server is started again), and closed when the worker shuts down.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type * as McpClientModule from '@modelcontextprotocol/sdk/client/index.js';
import type * as McpStdioModule from '@modelcontextprotocol/sdk/client/stdio.js';
import type * as McpHttpModule from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { importOptional } from '../../node-common/optional-packages.js';
import { isHttpServer, type McpServerConfig, type McpServers } from './config.js';
import { checkMcpSandbox, mcpLaunch } from './sandbox.js';

/** The transport of a server's connection failed (not a refusal by the server): what ran is unknown. */
export class McpTransportError extends Error {
  override name = 'McpTransportError';
}

const MCP_SDK = '@modelcontextprotocol/sdk';

/** No request times out in the client: the activity's start-to-close timeout bounds a call. */
const NO_TIMEOUT = 2_147_483_647;

export interface McpProgress {
  progress: number;
  total?: number;
  message?: string;
}

export class McpConnections {
  private readonly clients = new Map<string, Promise<Client>>();
  /** Each server's listing on its current connection (dropped with the connection: a new server may list others). */
  private readonly listings = new Map<string, Promise<Tool[]>>();
  private closed = false;

  /** Throws when a stdio server needs the sandbox and it cannot run here; announces each unsandboxed server. */
  constructor(
    readonly servers: McpServers,
    private readonly clientInfo = { name: 'keel', version: '0' },
  ) {
    checkMcpSandbox(servers);
  }

  /** The server's client, connected (a failed connection is not kept: the next use tries again). */
  client(server: string): Promise<Client> {
    if (this.closed) return Promise.reject(new McpTransportError('the worker is shutting down'));
    const config = this.servers[server];
    if (!config) return Promise.reject(new Error(`no MCP server "${server}" on this worker`));
    let entry = this.clients.get(server);
    if (!entry) {
      const mine = this.connect(server, config);
      this.clients.set(server, mine);
      mine.then(
        (client) => {
          // the server exited or the connection broke: the next use connects again (a stdio server starts again)
          client.onclose = () => {
            if (this.clients.get(server) !== mine) return;
            this.clients.delete(server);
            this.listings.delete(server);
          };
        },
        () => this.clients.get(server) === mine && this.clients.delete(server),
      );
      entry = mine;
    }
    return entry;
  }

  private async connect(server: string, config: McpServerConfig): Promise<Client> {
    // loaded on first use: a worker without MCP servers never loads the SDK
    // (an optional package: without it, one line says what to install)
    const [{ Client }, { StdioClientTransport, getDefaultEnvironment }, { StreamableHTTPClientTransport }] =
      await Promise.all([
        importOptional<typeof McpClientModule>(MCP_SDK, `${MCP_SDK}/client/index.js`),
        importOptional<typeof McpStdioModule>(MCP_SDK, `${MCP_SDK}/client/stdio.js`),
        importOptional<typeof McpHttpModule>(MCP_SDK, `${MCP_SDK}/client/streamableHttp.js`),
      ]);
    const client = new Client(this.clientInfo);
    try {
      const transport = isHttpServer(config)
        ? new StreamableHTTPClientTransport(new URL(config.url), {
            ...(config.headers ? { requestInit: { headers: expandHeaders(config.headers) } } : {}),
          })
        : // in the server's sandbox unless it says `sandbox: false` (sandbox.ts)
          new StdioClientTransport({
            ...mcpLaunch(config, getDefaultEnvironment()),
            stderr: 'inherit',
          });
      await client.connect(transport);
    } catch (err) {
      await client.close().catch(() => undefined);
      throw new McpTransportError(`cannot connect to MCP server "${server}": ${(err as Error).message}`);
    }
    return client;
  }

  /**
   * The server's tools as listed on its current connection: listed once per connection (again after a reconnect, as a
   * restarted server may list others).
   */
  connectedTools(server: string): Promise<Tool[]> {
    let listing = this.listings.get(server);
    if (!listing) {
      const mine = this.listTools(server);
      this.listings.set(server, mine);
      mine.catch(() => this.listings.get(server) === mine && this.listings.delete(server));
      listing = mine;
    }
    return listing;
  }

  /** The server's tools now (every page). */
  async listTools(server: string): Promise<Tool[]> {
    const client = await this.client(server);
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout: 60_000 });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  /**
   * Calls `tool` on `server`. `signal` aborting sends MCP's `notifications/cancelled` for the request (the SDK does);
   * each progress notification goes to `onProgress`. A closed transport is thrown as {@link McpTransportError}; a
   * JSON-RPC error response as the SDK's `McpError`.
   */
  async callTool(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    onProgress?: (p: McpProgress) => void,
  ): Promise<CallToolResult> {
    const client = await this.client(server);
    try {
      return (await client.callTool({ name: tool, arguments: args }, undefined, {
        signal,
        timeout: NO_TIMEOUT,
        ...(onProgress ? { onprogress: onProgress, resetTimeoutOnProgress: true } : {}),
      })) as CallToolResult;
    } catch (err) {
      if (!signal.aborted && isConnectionClosed(err))
        throw new McpTransportError(`the connection to MCP server "${server}" closed during the call`);
      throw err;
    }
  }

  /** Closes every client (stops stdio servers); later uses fail. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.clients.values()];
    this.clients.clear();
    this.listings.clear();
    await Promise.allSettled(all.map(async (c) => (await c).close()));
  }
}

/**
 * `headers` with each `${NAME}` replaced by the worker's environment variable NAME (so a token need not be written in
 * the configuration file); throws naming the header and the variable when one is not set.
 */
export function expandHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).map(([header, value]) => [
      header,
      value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
        const v = process.env[name];
        if (v === undefined || v === '')
          throw new Error(`its header "${header}" names \${${name}}, which is not set in the worker's environment`);
        return v;
      }),
    ]),
  );
}

function isConnectionClosed(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  return (
    e?.code === -32000 ||
    (typeof e?.message === 'string' && /connection closed|not connected|fetch failed/i.test(e.message))
  );
}
