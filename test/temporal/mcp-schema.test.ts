/**
 * A changed input schema is reported (issue 24, item 2): a worker restarted against a server that now lists another
 * schema for a tool the run recorded validates the call against the recorded schema, reports the difference in the
 * result's details and warns in the worker's log, naming the run, the tool and the changed fields.
 */
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import type { Script } from '../../activities/model/scripted.js';
import { startKeel, strip, until } from './harness.js';
import { result } from './loop-fixtures.js';
import { mcpTestServer } from './mcp-fixtures.js';

// this file's worker log, captured (before the harness installs its quiet runtime)
const logged: LogEntry[] = [];
const capture = new DefaultLogger('WARN', (entry) => void logged.push(entry));
Runtime.install({ logger: capture });

const server = (env: Record<string, string> = {}) => mcpTestServer(env);

describe('MCP: a changed input schema', () => {
  it('a worker restarted against a server with another schema: validated against the recorded one, the difference reported', async () => {
    const scripts: Record<string, Script> = {
      schema: {
        rules: [
          { match: 'toolResult:t__echo echo: two', text: 'second done' },
          { match: 'second', toolCalls: [{ id: 'c2', name: 't__echo', arguments: { text: 'two' } }] },
          { match: 'toolResult:t__echo', text: 'first done' },
          { match: 'first', toolCalls: [{ id: 'c1', name: 't__echo', arguments: { text: 'one' } }] },
        ],
      },
    };
    const a = await startKeel({ scripts, mcpServers: { t: server() } });
    const run = await a.start({ model: 'scripted/schema', prompt: 'first', tools: ['t__echo'], mode: 'session' });
    await until(async () => (await run.allMessages()).length === 4);
    await a.stop();
    // the runtime shuts down with its last worker and connection: the next one gets this file's logger again
    try {
      Runtime.install({ logger: capture });
    } catch {
      // still running: it has it
    }
    const b = await startKeel({ scripts, taskQueue: a.taskQueue, mcpServers: { t: server({ MCP_SCHEMA_V2: '1' }) } });
    try {
      const again = b.client.getHandle(run.workflowId);
      await again.followUp('second');
      await until(async () => (await again.allMessages()).length === 8);
      const change = { added: ['properties.lang'], changed: ['properties.text', 'required'] };
      const results = (await again.allMessages()).filter((m) => m.role === 'toolResult');
      expect(strip(results)).toEqual([
        result('c1', 't__echo', 'echo: one', { server: 't', tool: 'echo' }),
        // no `lang`, which the server now requires: checked against the recorded schema, the call ran
        result('c2', 't__echo', 'echo: two', { server: 't', tool: 'echo', schemaChange: change }),
      ]);
      // one warning for the run and tool on this connection, naming the changed fields
      const warnings = logged.filter((e) => e.level === 'WARN' && e.message.includes('changed the input schema'));
      expect(warnings.map((e) => [e.message, e.meta?.workflowId, e.meta?.schemaChange])).toEqual([
        [
          `[keel] MCP server "t" changed the input schema of echo since run ${run.workflowId} recorded it (added: properties.lang; changed: properties.text, required); the run's calls of t__echo are validated against the recorded schema`,
          run.workflowId,
          change,
        ],
      ]);
      await again.end();
    } finally {
      await b.stop();
    }
  });
});
