/**
 * Tools from MCP servers (issue 24) through a real `agentWorkflow`, against servers nobody here wrote:
 * `@modelcontextprotocol/server-everything` and `@modelcontextprotocol/server-filesystem` over stdio.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Script } from '../../activities/model/scripted.js';
import type { McpServers } from '../../activities/mcp/config.js';
import { startKeel, strip, type Keel } from './harness.js';

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
