/**
 * Tools from MCP servers (issue 24) through a real `agentWorkflow`, against servers nobody here wrote:
 * `@modelcontextprotocol/server-everything` and `@modelcontextprotocol/server-filesystem` over stdio.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { defaultPayloadConverter } from '@temporalio/common';
import type { ToolHeartbeat } from '../../common/events.js';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { scriptedModel } from '../../activities/model/scripted.js';
import { createAgentWorker } from '../../worker/create-worker.js';
import { killAllWorkers, killWorker, spawnWorker } from './child-worker.js';
import type { Script } from '../../activities/model/scripted.js';
import type { McpServers } from '../../activities/mcp/config.js';
import { startKeel, strip, until, untilContinuedAsNew, type Keel } from './harness.js';
import { keelCli } from './cli-child.js';
import { testServer } from './fixtures/mcp-test-server.js';
import { result } from './loop-fixtures.js';
import { MCP_TEST_SERVER, mcpTestServer } from './mcp-fixtures.js';
import { toolHeartbeat } from './tool-fixtures.js';

const BIN = resolve('node_modules/.bin');
const dir = realpathSync(mkdtempSync(join(tmpdir(), 'keel-mcp-')));
writeFileSync(join(dir, 'a.txt'), 'hello from a file\n');

export const servers: McpServers = {
  everything: { command: join(BIN, 'mcp-server-everything'), args: ['stdio'] },
  files: { command: join(BIN, 'mcp-server-filesystem'), args: [dir] },
};

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('MCP tools over stdio', () => {
  let keel: Keel;
  beforeAll(async () => {
    const scripts: Record<string, Script> = {
      mcp: {
        rules: [
          { match: 'toolResult:everything__get-tiny-image', text: 'done' },
          {
            match: 'toolResult:files__read_text_file hello',
            toolCalls: [
              { id: 'b1', name: 'everything__get-sum', arguments: { a: 'x', b: 1 } },
              { id: 'b2', name: 'files__read_text_file', arguments: { path: join(dir, 'nope.txt') } },
              { id: 'b3', name: 'everything__get-tiny-image', arguments: {} },
            ],
          },
          {
            match: 'go',
            toolCalls: [
              { id: 'a1', name: 'everything__echo', arguments: { message: 'hi' } },
              { id: 'a2', name: 'everything__get-sum', arguments: { a: 2, b: 3 } },
              { id: 'a3', name: 'files__read_text_file', arguments: { path: join(dir, 'a.txt') } },
            ],
          },
        ],
      },
    };
    keel = await startKeel({ scripts, mcpServers: servers });
  });
  afterAll(() => keel?.stop());

  it('a parallel batch, a validation error, an isError result and an image: the exact transcript', async () => {
    const run = await keel.start({
      model: 'scripted/mcp',
      prompt: 'go',
      tools: ['everything__echo', 'everything__get-sum', 'everything__get-tiny-image', 'files__*'],
    });
    const result = await run.result();
    expect(result.status).toBe('completed');
    const call = (id: string, name: string, args: Record<string, unknown>) => ({
      type: 'toolCall',
      id,
      name,
      arguments: args,
    });
    const text = (t: string) => ({ type: 'text', text: t });
    const res = (id: string, name: string, content: unknown[], details: unknown, isError = false) => ({
      role: 'toolResult',
      toolCallId: id,
      toolName: name,
      content,
      details,
      isError,
    });
    expect(strip(await run.allMessages())).toEqual([
      { role: 'user', content: [text('go')] },
      {
        role: 'assistant',
        content: [
          call('a1', 'everything__echo', { message: 'hi' }),
          call('a2', 'everything__get-sum', { a: 2, b: 3 }),
          call('a3', 'files__read_text_file', { path: join(dir, 'a.txt') }),
        ],
        stopReason: 'toolUse',
      },
      res('a1', 'everything__echo', [text('Echo: hi')], { server: 'everything', tool: 'echo' }),
      res('a2', 'everything__get-sum', [text('The sum of 2 and 3 is 5.')], { server: 'everything', tool: 'get-sum' }),
      res('a3', 'files__read_text_file', [text('hello from a file\n')], {
        server: 'files',
        tool: 'read_text_file',
        structuredContent: { content: 'hello from a file\n' },
      }),
      {
        role: 'assistant',
        content: [
          call('b1', 'everything__get-sum', { a: 'x', b: 1 }),
          call('b2', 'files__read_text_file', { path: join(dir, 'nope.txt') }),
          call('b3', 'everything__get-tiny-image', {}),
        ],
        stopReason: 'toolUse',
      },
      res(
        'b1',
        'everything__get-sum',
        [
          text(
            'Validation failed for tool "everything__get-sum":\n  - a: must be number\n\nReceived arguments:\n{\n  "a": "x",\n  "b": 1\n}',
          ),
        ],
        {},
        true,
      ),
      res(
        'b2',
        'files__read_text_file',
        [text(`ENOENT: no such file or directory, open '${join(dir, 'nope.txt')}'`)],
        { server: 'files', tool: 'read_text_file' },
        true,
      ),
      res(
        'b3',
        'everything__get-tiny-image',
        [
          text("Here's the image you requested:"),
          { type: 'image', data: expect.stringMatching(/^iVBORw0KGgo[A-Za-z0-9+/]+=*$/), mimeType: 'image/png' },
          text('The image above is the MCP logo.'),
        ],
        { server: 'everything', tool: 'get-tiny-image' },
      ),
      { role: 'assistant', content: [text('done')], stopReason: 'stop' },
    ]);
    // state() names each MCP tool's server and its openWorldHint
    expect((await run.state()).mcpTools?.slice(0, 4)).toEqual([
      { name: 'everything__echo', server: 'everything', openWorld: false },
      { name: 'everything__get-sum', server: 'everything', openWorld: false },
      { name: 'everything__get-tiny-image', server: 'everything', openWorld: false },
      { name: 'files__read_file', server: 'files', openWorld: false },
    ]);
    // the Web UI's summary of each MCP call names the server and the tool
    const history = await run.workflow.fetchHistory();
    const summaries = (history.events ?? [])
      .filter((e) =>
        ['executeToolCall', 'runToolCall'].includes(e.activityTaskScheduledEventAttributes?.activityType?.name ?? ''),
      )
      .map((e) => defaultPayloadConverter.fromPayload<string>(e.userMetadata!.summary!));
    expect(summaries).toEqual([
      'mcp everything: echo',
      'mcp everything: get-sum',
      'mcp files: read_text_file',
      'mcp files: read_text_file',
      'mcp everything: get-tiny-image',
    ]);
    // files__* resolved at the start: every tool the filesystem server lists, recorded with its schema
    const recorded = await run.workflow.query<{ server: string; tool: string }[]>('mcpTools');
    expect(recorded.map((r) => `${r.server}__${r.tool}`)).toEqual([
      'everything__echo',
      'everything__get-sum',
      'everything__get-tiny-image',
      'files__read_file',
      'files__read_text_file',
      'files__read_media_file',
      'files__read_multiple_files',
      'files__write_file',
      'files__edit_file',
      'files__create_directory',
      'files__list_directory',
      'files__list_directory_with_sizes',
      'files__directory_tree',
      'files__move_file',
      'files__search_files',
      'files__get_file_info',
      'files__list_allowed_directories',
    ]);
  });
});

describe('keel tools and --mcp', () => {
  it('keel tools --mcp lists every tool of the servers with its server, retry and approval', async () => {
    const config = join(dir, 'mcp.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { files: servers.files } }));
    const out = await keelCli(['tools', '--no-builtin', '--mcp', config]);
    expect(out.code).toBe(0);
    expect(out.stdout).toBe(
      [
        'files__read_file                  mcp files  idempotent              Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.',
        'files__read_text_file             mcp files  idempotent              Read the complete contents of a file from the file system as text. Handles various text encodings a…',
        'files__read_media_file            mcp files  idempotent              Read a file and return it as a base64-encoded content block with its MIME type. Image and audio fil…',
        'files__read_multiple_files        mcp files  idempotent              Read the contents of multiple files simultaneously. This is more efficient than reading files one b…',
        'files__write_file                 mcp files  idempotent, approval    Create a new file or completely overwrite an existing file with new content. Use with caution as it…',
        'files__edit_file                  mcp files  at most once, approval  Make line-based edits to a text file. Each edit replaces exact line sequences with new content. Ret…',
        'files__create_directory           mcp files  idempotent              Create a new directory or ensure a directory exists. Can create multiple nested directories in one …',
        'files__list_directory             mcp files  idempotent              Get a detailed listing of all files and directories in a specified path. Results clearly distinguis…',
        'files__list_directory_with_sizes  mcp files  idempotent              Get a detailed listing of all files and directories in a specified path, including sizes. Results c…',
        "files__directory_tree             mcp files  idempotent              Get a recursive tree view of files and directories as a JSON structure. Each entry includes 'name',…",
        'files__move_file                  mcp files  at most once, approval  Move or rename files and directories. Can move files between directories and rename them in a singl…',
        'files__search_files               mcp files  idempotent              Recursively search for files and directories matching a pattern. The patterns should be glob-style …',
        'files__get_file_info              mcp files  idempotent              Retrieve detailed metadata about a file or directory. Returns comprehensive information including s…',
        'files__list_allowed_directories   mcp files  idempotent              Returns the list of directories that this server is allowed to access. Subdirectories within these …',
        '',
      ].join('\n'),
    );
  });

  it('a bad --mcp file is refused before anything starts, every problem named', async () => {
    const config = join(dir, 'bad.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { my_files: { command: 'x', url: 'ftp://y' } } }));
    const out = await keelCli(['tools', '--no-builtin', '--mcp', config]);
    expect(out.code).toBe(2);
    expect(out.stderr).toBe(
      `keel: ${config}: Invalid MCP server configuration:\n` +
        '  mcpServers.my_files: a server name is 1-30 characters of [A-Za-z0-9-] (no "_": "__" separates server and tool)\n' +
        '  mcpServers.my_files: give either "command" (a stdio server) or "url" (Streamable HTTP), not both\n' +
        '  mcpServers.my_files.url: must be an http:// or https:// URL, got "ftp://y"\n',
    );
  });
});

// the sandboxed server writes its record ($MCP_RECORD) in `dir`
const testServerConfig = (env: Record<string, string> = {}) => mcpTestServer(env, [dir]);

/** The processes this test process started whose command line contains `marker`. */
function childrenMatching(marker: string): number[] {
  const out = execFileSync('ps', ['-eo', 'pid,ppid,args'], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => !!m && Number(m[2]) === process.pid && m[3].includes(marker))
    .map((m) => Number(m[1]));
}

describe('MCP failures', () => {
  it('the server killed mid-call: the call gets a clear error, the next call starts the server again', async () => {
    const scripts: Record<string, Script> = {
      kill: {
        rules: [
          { match: 'toolResult:everything__echo', text: 'done' },
          {
            match: 'toolResult:everything__trigger-long-running-operation',
            toolCalls: [{ id: 'k2', name: 'everything__echo', arguments: { message: 'after' } }],
          },
          {
            match: 'go',
            toolCalls: [
              { id: 'k1', name: 'everything__trigger-long-running-operation', arguments: { duration: 60, steps: 60 } },
            ],
          },
        ],
      },
    };
    const keel = await startKeel({
      scripts,
      mcpServers: {
        // not idempotent here (a worker override): a lost call is reported, not run again
        everything: { ...servers.everything, tools: { 'trigger-long-running-operation': { idempotent: false } } },
      },
    });
    try {
      const run = await keel.start({
        model: 'scripted/kill',
        prompt: 'go',
        tools: ['everything__trigger-long-running-operation', 'everything__echo'],
      });
      // MCP progress notifications become the tool activity's heartbeats (tool_execution_update, keel watch)
      let beat: ToolHeartbeat | undefined;
      await until(async () => (beat = await toolHeartbeat(run)) !== undefined, 30_000, 'a progress heartbeat');
      expect(beat).toMatchObject({
        toolCallId: 'k1',
        toolName: 'everything__trigger-long-running-operation',
        partialResult: { content: [{ type: 'text', text: expect.stringMatching(/^progress \d+\/60/) }] },
      });
      const [pid, ...more] = childrenMatching('server-everything');
      expect(more).toEqual([]);
      process.kill(pid, 'SIGKILL');
      expect((await run.result()).status).toBe('completed');
      const messages = await run.allMessages();
      expect(strip(messages.filter((m) => m.role === 'toolResult'))).toEqual([
        {
          role: 'toolResult',
          toolCallId: 'k1',
          toolName: 'everything__trigger-long-running-operation',
          content: [
            {
              type: 'text',
              text: 'MCP server "everything" failed during everything__trigger-long-running-operation: the connection to MCP server "everything" closed during the call (the server exited or the connection broke); the call may have partially run and was not retried because everything__trigger-long-running-operation is not idempotent. The server is connected again on the next call.',
            },
          ],
          details: {},
          isError: true,
        },
        result('k2', 'everything__echo', 'Echo: after', { server: 'everything', tool: 'echo' }),
      ]);
    } finally {
      await keel.stop();
    }
  });

  it('the server killed during a read-only call: the attempt fails retryable, Temporal retries it, the transcript has the real result', async () => {
    const record = join(dir, `once-${randomUUID()}.log`);
    writeFileSync(record, '');
    const scripts: Record<string, Script> = {
      once: {
        rules: [
          { match: 'toolResult:t__once', text: 'done' },
          { match: 'go', toolCalls: [{ id: 'o1', name: 't__once', arguments: { id: 'a' } }] },
        ],
      },
    };
    const keel = await startKeel({ scripts, mcpServers: { t: testServerConfig({ MCP_RECORD: record }) } });
    try {
      const run = await keel.start({ model: 'scripted/once', prompt: 'go', tools: ['t__once'] });
      await until(() => readFileSync(record, 'utf8') !== '', 30_000, 'the call reached the server');
      const [pid, ...more] = childrenMatching(MCP_TEST_SERVER);
      expect(more).toEqual([]);
      process.kill(pid, 'SIGKILL');
      expect((await run.result()).status).toBe('completed');
      // the second call ran on the server started again
      expect(readFileSync(record, 'utf8')).toBe('once a\nonce a\n');
      expect(strip((await run.allMessages()).filter((m) => m.role === 'toolResult'))).toEqual([
        result('o1', 't__once', 'once a: answered on call 2', { server: 't', tool: 'once' }),
      ]);
      // the history: the tool activity's second attempt, after the first failed with the transport failure
      const started = ((await run.workflow.fetchHistory()).events ?? [])
        .map((e) => e.activityTaskStartedEventAttributes)
        .filter((a) => a?.lastFailure);
      expect(
        started.map((a) => [a!.attempt, a!.lastFailure!.message, a!.lastFailure!.applicationFailureInfo?.type]),
      ).toEqual([
        [
          2,
          'MCP server "t" failed during t__once: the connection to MCP server "t" closed during the call (the server exited, did not start or the connection broke). t__once is idempotent: the call is retried on a new connection.',
          'KeelToolTransport',
        ],
      ]);
    } finally {
      await keel.stop();
    }
  });

  it('the server killed during a non-idempotent call: an error result naming the server, not run again', async () => {
    const record = join(dir, `once-write-${randomUUID()}.log`);
    writeFileSync(record, '');
    const scripts: Record<string, Script> = {
      once: {
        rules: [
          { match: 'toolResult:t__once-write', text: 'done' },
          { match: 'go', toolCalls: [{ id: 'w1', name: 't__once-write', arguments: { id: 'b' } }] },
        ],
      },
    };
    const keel = await startKeel({ scripts, mcpServers: { t: testServerConfig({ MCP_RECORD: record }) } });
    try {
      const run = await keel.start({ model: 'scripted/once', prompt: 'go', tools: ['t__once-write'] });
      await until(() => readFileSync(record, 'utf8') !== '', 30_000, 'the call reached the server');
      const [pid, ...more] = childrenMatching(MCP_TEST_SERVER);
      expect(more).toEqual([]);
      process.kill(pid, 'SIGKILL');
      expect((await run.result()).status).toBe('completed');
      expect(readFileSync(record, 'utf8')).toBe('once-write b\n');
      expect(strip((await run.allMessages()).filter((m) => m.role === 'toolResult'))).toEqual([
        {
          role: 'toolResult',
          toolCallId: 'w1',
          toolName: 't__once-write',
          content: [
            {
              type: 'text',
              text: 'MCP server "t" failed during t__once-write: the connection to MCP server "t" closed during the call (the server exited or the connection broke); the call may have partially run and was not retried because t__once-write is not idempotent. The server is connected again on the next call.',
            },
          ],
          details: {},
          isError: true,
        },
      ]);
      const attempts = ((await run.workflow.fetchHistory()).events ?? [])
        .map((e) => e.activityTaskStartedEventAttributes?.attempt)
        .filter((a) => a !== undefined && a !== null);
      expect(new Set(attempts)).toEqual(new Set([1]));
    } finally {
      await keel.stop();
    }
  });

  it('a worker restarted against a server listing one tool fewer: the run keeps its tool list, the gone tool gets a clear error', async () => {
    const scripts: Record<string, Script> = {
      restart: {
        rules: [
          { match: 'toolResult:t__echo echo: two', text: 'second done' },
          {
            match: 'second',
            toolCalls: [
              { id: 's1', name: 't__gone', arguments: {} },
              { id: 's2', name: 't__echo', arguments: { text: 'two' } },
            ],
          },
          { match: 'toolResult:t__gone', text: 'first done' },
          { match: 'first', toolCalls: [{ id: 'f1', name: 't__gone', arguments: {} }] },
        ],
      },
    };
    const a = await startKeel({ scripts, mcpServers: { t: testServerConfig() } });
    const run = await a.start({ model: 'scripted/restart', prompt: 'first', tools: ['t__*'], mode: 'session' });
    await until(async () => (await run.allMessages()).length === 4);
    await a.stop();
    const b = await startKeel({
      scripts,
      taskQueue: a.taskQueue,
      mcpServers: { t: testServerConfig({ MCP_DROP_GONE: '1' }) },
    });
    try {
      const again = b.client.getHandle(run.workflowId);
      await again.followUp('second');
      await until(async () => (await again.allMessages()).length === 9);
      const results = (await again.allMessages()).filter((m) => m.role === 'toolResult');
      expect(results.map((m) => (m.content[0] as { text: string }).text)).toEqual([
        'still here',
        'Tool t__gone is no longer offered by MCP server "t" (it was when this run started). Use another tool.',
        'echo: two',
      ]);
      // the worker that did not start the run read the recorded list from the run: t__gone is still in it
      const recorded = await again.workflow.query<{ tool: string }[]>('mcpTools');
      expect(recorded.map((r) => r.tool)).toEqual([
        'echo',
        'gone',
        'slow',
        'fetch',
        'once',
        'once-write',
        'probe',
        'launch',
      ]);
      await again.end();
    } finally {
      await b.stop();
    }
  });

  it('a cancelled run: the server receives MCP’s cancellation notification for the running call', async () => {
    const record = join(dir, 'cancelled.log');
    writeFileSync(record, '');
    const scripts: Record<string, Script> = {
      slow: { rules: [{ match: 'go', toolCalls: [{ id: 'c1', name: 't__slow', arguments: {} }] }] },
    };
    const keel = await startKeel({ scripts, mcpServers: { t: testServerConfig({ MCP_RECORD: record }) } });
    try {
      const run = await keel.start({ model: 'scripted/slow', prompt: 'go', tools: ['t__slow'] });
      await until(async () => (await run.state()).runningTools.length === 1);
      await run.cancel('enough');
      await until(() => readFileSync(record, 'utf8') !== '', 20_000, 'the cancellation notification');
      expect(readFileSync(record, 'utf8')).toMatch(/^cancelled \d+\n$/);
    } finally {
      await keel.stop();
    }
  });
});

describe('MCP over Streamable HTTP', () => {
  it("the SDK's server on a loopback port: tools listed, called, headers sent with every request", async () => {
    const seen: (string | undefined)[] = [];
    const http = createServer((req, res) => {
      seen.push(req.headers.authorization);
      // stateless: a server and a transport per request (the SDK's stateless pattern)
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      const server = testServer();
      res.on('close', () => void transport.close().then(() => server.close()));
      void server.connect(transport).then(() => transport.handleRequest(req, res));
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    const { port } = http.address() as AddressInfo;
    const scripts: Record<string, Script> = {
      web: {
        rules: [
          { match: 'toolResult:h__echo', text: 'done' },
          { match: 'go', toolCalls: [{ id: 'h1', name: 'h__echo', arguments: { text: 'over http' } }] },
        ],
      },
    };
    const keel = await startKeel({
      scripts,
      mcpServers: { h: { url: `http://127.0.0.1:${port}/mcp`, headers: { Authorization: 'Bearer test-token' } } },
    });
    try {
      const run = await keel.start({ model: 'scripted/web', prompt: 'go', tools: ['h__echo'] });
      expect((await run.result()).status).toBe('completed');
      const results = (await run.allMessages()).filter((m) => m.role === 'toolResult');
      expect(strip(results)).toEqual([result('h1', 'h__echo', 'echo: over http', { server: 'h', tool: 'echo' })]);
      expect(seen.length).toBeGreaterThan(0);
      expect(new Set(seen)).toEqual(new Set(['Bearer test-token']));
    } finally {
      await keel.stop();
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
    }
  });
});

describe('MCP: the worker killed -9 during a call', () => {
  afterAll(killAllWorkers);
  const CHILD = resolve('test/temporal/fixtures/mcp-worker.ts');
  const lines = (file: string) => readFileSync(file, 'utf8').trim().split('\n').filter(Boolean);
  const setup = async () => {
    const taskQueue = `mcp-durable-${randomUUID()}`;
    const record = join(dir, `record-${randomUUID()}.log`);
    writeFileSync(record, '');
    const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
    const start = (hang: boolean) =>
      spawnWorker(CHILD, { KEEL_TASK_QUEUE: taskQueue, MCP_RECORD: record, MCP_HANG: hang ? '1' : '0' });
    return { record, client, start };
  };

  it('a read-only MCP tool is called again on the new worker: the transcript of an uninterrupted run', async () => {
    const { record, client, start } = await setup();
    const first = await start(true);
    const h = await client.start({
      model: 'scripted/durable',
      prompt: 'fetch it',
      tools: ['t__fetch'],
      heartbeatTimeout: '2s',
    });
    await until(() => lines(record).length === 1, 30_000, 'the call reached the server');
    await killWorker(first);
    const second = await start(false);
    const r = await h.result();
    expect(lines(record)).toEqual(['fetch https://example.test', 'fetch https://example.test']);
    expect(strip(r.newMessages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'fetch it' }] },
      {
        role: 'assistant',
        content: [{ type: 'toolCall', id: 'tool-1', name: 't__fetch', arguments: { url: 'https://example.test' } }],
        stopReason: 'toolUse',
      },
      result('tool-1', 't__fetch', 'fetched https://example.test', { server: 't', tool: 'fetch' }),
      { role: 'assistant', content: [{ type: 'text', text: 'fetch handled' }], stopReason: 'stop' },
    ]);
    await killWorker(second);
    await client.close();
  });

  it('a non-idempotent MCP tool is not called again and gets the interrupted text', async () => {
    const { record, client, start } = await setup();
    const first = await start(true);
    const h = await client.start({
      model: 'scripted/durable',
      prompt: 'launch it',
      tools: ['t__launch'],
      heartbeatTimeout: '2s',
    });
    await until(() => lines(record).length === 1, 30_000, 'the call reached the server');
    await killWorker(first);
    const second = await start(false);
    const r = await h.result();
    expect(lines(record)).toEqual(['launch rocket']);
    expect(strip(r.newMessages.slice(2))).toEqual([
      {
        role: 'toolResult',
        toolCallId: 'tool-1',
        toolName: 't__launch',
        content: [
          {
            type: 'text',
            text: 'Tool t__launch was interrupted before it finished and was not retried because it is not idempotent. It may have partially run.',
          },
        ],
        details: {},
        isError: true,
      },
      { role: 'assistant', content: [{ type: 'text', text: 'launch handled' }], stopReason: 'stop' },
    ]);
    await killWorker(second);
    await client.close();
  });
});

describe('MCP: OpenTelemetry', () => {
  it('the execute_tool span of an MCP call carries the server name', async () => {
    const exporter = new InMemorySpanExporter();
    const taskQueue = `mcp-otel-${randomUUID()}`;
    const address = inject('temporalAddress');
    const worker = await createAgentWorker({
      address,
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      mcpServers: { everything: servers.everything },
      models: {
        scripted: scriptedModel({
          otel: {
            rules: [
              { match: 'toolResult', text: 'done' },
              { match: 'go', toolCalls: [{ id: 'o1', name: 'everything__echo', arguments: { message: 'span' } }] },
            ],
          },
        }),
      },
      tracing: { spanProcessor: new SimpleSpanProcessor(exporter) },
    });
    const running = worker.run();
    const client = await AgentClient.connect({ address, taskQueue });
    try {
      const h = await client.start({ model: 'scripted/otel', prompt: 'go', tools: ['everything__echo'] });
      expect((await h.result()).status).toBe('completed');
    } finally {
      await client.close();
      await worker.shutdown();
      await running;
    }
    const span = exporter.getFinishedSpans().find((s) => s.name === 'execute_tool everything__echo');
    expect(span?.attributes).toMatchObject({
      'gen_ai.tool.name': 'everything__echo',
      'keel.mcp.server': 'everything',
      'keel.tool.is_error': false,
    });
  });
});

describe('MCP: continue-as-new', () => {
  it("the run's recorded tool list is carried across continue-as-new", async () => {
    const scripts: Record<string, Script> = {
      carried: {
        rules: [
          { match: 'toolResult:t__echo echo: three', text: 'third done' },
          { match: 'third', toolCalls: [{ id: 'c3', name: 't__echo', arguments: { text: 'three' } }] },
          { match: 'big', text: 'noted' },
          { match: 'toolResult:t__echo', text: 'first done' },
          { match: 'first', toolCalls: [{ id: 'c1', name: 't__echo', arguments: { text: 'one' } }] },
        ],
      },
    };
    const keel = await startKeel({ scripts, mcpServers: { t: testServerConfig() } });
    try {
      const run = await keel.start({
        model: 'scripted/carried',
        prompt: 'first',
        tools: ['t__echo', 't__fetch'],
        mode: 'session',
        continueAsNewAfterBytes: 65_536,
      });
      await until(async () => (await run.allMessages()).length === 4);
      await run.followUp(`big ${'x'.repeat(70_000)}`);
      await untilContinuedAsNew(run);
      await run.followUp('third');
      await until(async () => (await run.allMessages()).length === 10);
      const last = (await run.allMessages()).slice(-3);
      expect(strip(last)).toEqual([
        {
          role: 'assistant',
          content: [{ type: 'toolCall', id: 'c3', name: 't__echo', arguments: { text: 'three' } }],
          stopReason: 'toolUse',
        },
        result('c3', 't__echo', 'echo: three', { server: 't', tool: 'echo' }),
        { role: 'assistant', content: [{ type: 'text', text: 'third done' }], stopReason: 'stop' },
      ]);
      const recorded = await run.workflow.query<{ tool: string }[]>('mcpTools');
      expect(recorded.map((r) => r.tool)).toEqual(['echo', 'fetch']);
      await run.end();
    } finally {
      await keel.stop();
    }
  });
});
