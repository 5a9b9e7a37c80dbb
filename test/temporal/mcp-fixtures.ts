/** Fixtures of the MCP tests (mcp, mcp-schema): the test server's stdio configuration. */
import { resolve } from 'node:path';

/** tsx's loader by its URL: the sandboxed server starts in its own empty directory, where `--import tsx` would not resolve. */
export const TSX_LOADER = import.meta.resolve('tsx');

/** The MCP server this repository's tests run (fixtures/mcp-test-server.ts): echo, once, fetch, slow, …. */
export const MCP_TEST_SERVER = resolve('test/temporal/fixtures/mcp-test-server.ts');

/** The stdio configuration of the test server with `env` added, and the paths its sandbox may write when given. */
export function mcpTestServer(env: Record<string, string> = {}, writablePaths?: string[]) {
  return {
    command: process.execPath,
    args: ['--import', TSX_LOADER, MCP_TEST_SERVER],
    env,
    ...(writablePaths ? { writablePaths } : {}),
  };
}
