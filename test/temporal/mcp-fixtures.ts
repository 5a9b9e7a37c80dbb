/** Fixtures of the MCP tests (mcp, mcp-schema): the test server's stdio configuration. */
import { resolve } from 'node:path';

/** The MCP server this repository's tests run (fixtures/mcp-test-server.ts): echo, once, fetch, slow, …. */
export const MCP_TEST_SERVER = resolve('test/temporal/fixtures/mcp-test-server.ts');

/** The stdio configuration of the test server with `env` added, and the paths its sandbox may write when given. */
export function mcpTestServer(env: Record<string, string> = {}, writablePaths?: string[]) {
  return {
    command: process.execPath,
    args: ['--import', 'tsx', MCP_TEST_SERVER],
    env,
    ...(writablePaths ? { writablePaths } : {}),
  };
}
