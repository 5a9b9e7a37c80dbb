/**
 * The MCP servers a worker offers tools from, in the format MCP clients already use (`{ "mcpServers": { … } }`, as in
 * Claude Desktop's or Cursor's configuration): a stdio server `{ command, args?, env?, cwd? }` or a Streamable HTTP
 * server `{ url, headers? }`, each with Keel's optional per-tool overrides.
 */
import { readFileSync } from 'node:fs';
import { registerWorkerSecretFile } from '../../node-common/worker-secrets.js';

/** What the worker may override of a tool's defaults (derived from its MCP annotations). */
export interface McpToolOverride {
  /** Retried after a lost worker or a timeout (default: the tool's `readOnlyHint` or `idempotentHint`). */
  idempotent?: boolean;
  /** Waits for a person's approval (default: `'always'` when the tool's `destructiveHint` is true, else `'never'`). */
  approval?: 'never' | 'always';
}

interface McpServerCommon {
  /** Overrides by MCP tool name (without the server prefix); `"*"` applies to every tool of the server. */
  tools?: Record<string, McpToolOverride>;
  /** Start-to-close timeout of one call (ms number or a duration such as `'2m'`). Default 10 minutes. */
  timeout?: number | string;
}

/**
 * A server started by the worker and spoken to over its stdin/stdout. Its environment is an allowlist (`HOME`,
 * `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`, the SDK's default) plus `env`: none of the worker's secrets. It runs in
 * the bubblewrap sandbox of the built-in tools (`sandbox.ts`, docs/tools.md "MCP tools"), one sandbox per server: the
 * system read-only, its `cwd` read-write (none: it starts in its empty `/tmp`, no directory of the worker's), what its
 * `args` name and `readOnlyPaths` read-only, `writablePaths` read-write, no network unless `network`.
 */
export interface McpStdioServer extends McpServerCommon {
  command: string;
  args?: string[];
  env?: Record<string, string>;
  /** Working directory, bound read-write in the sandbox. Default: the sandbox's empty `/tmp`. */
  cwd?: string;
  /** `false`: run the server unsandboxed as the worker's user (announced when the worker starts). Default `true`. */
  sandbox?: boolean;
  /** `true`: the sandboxed server uses the worker's network (loopback included). Default `false`: none. */
  network?: boolean;
  /** More paths the sandboxed server may read (absolute, or relative to the worker's directory). */
  readOnlyPaths?: string[];
  /** More paths the sandboxed server may write (absolute, or relative to the worker's directory). */
  writablePaths?: string[];
}

/**
 * A server reached over Streamable HTTP. `headers` go with every request (e.g. `Authorization`); `${NAME}` in a value is
 * the worker's environment variable NAME (recommended for tokens: the file then holds no secret).
 */
export interface McpHttpServer extends McpServerCommon {
  url: string;
  headers?: Record<string, string>;
}

export type McpServerConfig = McpStdioServer | McpHttpServer;

/** Servers by name. A name is 1-30 characters of `[A-Za-z0-9-]` (no `_`: `__` separates server and tool). */
export type McpServers = Record<string, McpServerConfig>;

export const MCP_SERVER_NAME = /^[A-Za-z0-9-]{1,30}$/;

export function isHttpServer(server: McpServerConfig): server is McpHttpServer {
  return typeof (server as McpHttpServer).url === 'string';
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const stringMap = (v: unknown): boolean => isRecord(v) && Object.values(v).every((x) => typeof x === 'string');

/** Every problem of a `mcpServers` value, one line each naming the field (empty: valid). */
export function mcpServersErrors(servers: unknown): string[] {
  if (!isRecord(servers)) return ['mcpServers: must be an object of servers by name'];
  const errors: string[] = [];
  for (const [name, s] of Object.entries(servers)) {
    const at = `mcpServers.${name}`;
    if (!MCP_SERVER_NAME.test(name))
      errors.push(`${at}: a server name is 1-30 characters of [A-Za-z0-9-] (no "_": "__" separates server and tool)`);
    if (!isRecord(s)) {
      errors.push(`${at}: must be { "command": …, "args": […] } or { "url": … }`);
      continue;
    }
    const stdio = 'command' in s;
    const http = 'url' in s;
    if (stdio === http)
      errors.push(`${at}: give either "command" (a stdio server) or "url" (Streamable HTTP), not both`);
    if (stdio) {
      if (typeof s.command !== 'string' || s.command === '') errors.push(`${at}.command: must be a non-empty string`);
      if (s.args !== undefined && !(Array.isArray(s.args) && s.args.every((a) => typeof a === 'string')))
        errors.push(`${at}.args: must be an array of strings`);
      if (s.env !== undefined && !stringMap(s.env)) errors.push(`${at}.env: must be an object of strings`);
      if (s.cwd !== undefined && typeof s.cwd !== 'string') errors.push(`${at}.cwd: must be a string`);
      for (const flag of ['sandbox', 'network'] as const)
        if (s[flag] !== undefined && typeof s[flag] !== 'boolean') errors.push(`${at}.${flag}: must be true or false`);
      for (const list of ['readOnlyPaths', 'writablePaths'] as const)
        if (s[list] !== undefined && !(Array.isArray(s[list]) && s[list].every((p) => typeof p === 'string' && p)))
          errors.push(`${at}.${list}: must be an array of paths`);
    }
    if (http) {
      let ok = typeof s.url === 'string';
      if (ok) {
        try {
          ok = ['http:', 'https:'].includes(new URL(s.url as string).protocol);
        } catch {
          ok = false;
        }
      }
      if (!ok) errors.push(`${at}.url: must be an http:// or https:// URL, got ${JSON.stringify(s.url)}`);
      if (s.headers !== undefined && !stringMap(s.headers)) errors.push(`${at}.headers: must be an object of strings`);
      if (!stdio)
        for (const f of ['sandbox', 'network', 'readOnlyPaths', 'writablePaths'])
          if (f in s) errors.push(`${at}.${f}: only a stdio server ("command") runs in a sandbox`);
    }
    if (s.timeout !== undefined && typeof s.timeout !== 'number' && typeof s.timeout !== 'string')
      errors.push(`${at}.timeout: must be milliseconds or a duration such as "2m"`);
    if (s.tools !== undefined) {
      if (!isRecord(s.tools)) errors.push(`${at}.tools: must be an object of overrides by tool name`);
      else
        for (const [tool, o] of Object.entries(s.tools)) {
          if (!isRecord(o)) errors.push(`${at}.tools.${tool}: must be { "idempotent"?: boolean, "approval"?: … }`);
          else {
            if (o.idempotent !== undefined && typeof o.idempotent !== 'boolean')
              errors.push(`${at}.tools.${tool}.idempotent: must be true or false`);
            if (o.approval !== undefined && o.approval !== 'never' && o.approval !== 'always')
              errors.push(`${at}.tools.${tool}.approval: must be "never" or "always"`);
          }
        }
    }
  }
  return errors;
}

/** Throws a `TypeError` listing every problem of `servers`; returns them typed. */
export function checkMcpServers(servers: unknown): McpServers {
  const errors = mcpServersErrors(servers);
  if (errors.length) throw new TypeError(`Invalid MCP server configuration:\n  ${errors.join('\n  ')}`);
  return servers as McpServers;
}

/** Reads a `{ "mcpServers": { … } }` file (the format MCP clients use); throws saying what to fix. */
export function loadMcpConfig(path: string): McpServers {
  registerWorkerSecretFile(path);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`Cannot read the MCP configuration ${path}: ${(err as Error).message}`);
  }
  if (!isRecord(parsed) || !('mcpServers' in parsed))
    throw new Error(`The MCP configuration ${path} must be a JSON object { "mcpServers": { "<name>": { … } } }`);
  try {
    return checkMcpServers(parsed.mcpServers);
  } catch (err) {
    throw new Error(`${path}: ${(err as Error).message}`);
  }
}
