/**
 * MCP content → Keel content blocks (activities/mcp/content.ts), on what `@modelcontextprotocol/server-everything`
 * really returns: resource links and an embedded text resource. No Temporal: the tool source called directly.
 */
import { resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { McpToolSource } from '../../activities/mcp/tool-source.js';

const source = new McpToolSource({
  everything: { command: resolve('node_modules/.bin/mcp-server-everything'), args: ['stdio'] },
});
afterAll(() => source.close());

const ctx = { workflowId: 'w', runId: 'r', idempotencyKey: 'w/c', attempt: 1, metadata: {} };

async function call(tool: string, args: Record<string, unknown>) {
  const { records } = await source.resolve([`everything__${tool}`]);
  return source.definition(records[0]).execute('c', args, new AbortController().signal, () => {}, ctx);
}

describe('MCP content mapping (server-everything)', () => {
  it('resource links and an embedded text resource', async () => {
    expect(await call('get-resource-links', { count: 2 })).toEqual({
      content: [
        { type: 'text', text: 'Here are 2 resource links to resources available in this server:' },
        {
          type: 'text',
          text: 'Resource link: Blob Resource 1 demo://resource/dynamic/blob/1 (text/plain) - Resource 1: plaintext resource',
        },
        {
          type: 'text',
          text: 'Resource link: Text Resource 2 demo://resource/dynamic/text/2 (text/plain) - Resource 2: plaintext resource',
        },
      ],
      details: { server: 'everything', tool: 'get-resource-links' },
    });
    expect(await call('get-resource-reference', { resourceType: 'Text', resourceId: 1 })).toEqual({
      content: [
        { type: 'text', text: 'Returning resource reference for Resource 1:' },
        {
          type: 'text',
          text: expect.stringMatching(
            /^Resource demo:\/\/resource\/dynamic\/text\/1:\nResource 1: This is a plaintext resource created at /,
          ),
        },
        { type: 'text', text: 'You can access this resource using the URI: demo://resource/dynamic/text/1' },
      ],
      details: { server: 'everything', tool: 'get-resource-reference' },
    });
    const blob = await call('get-resource-reference', { resourceType: 'Blob', resourceId: 1 });
    expect(blob.content?.[1]).toEqual({
      type: 'text',
      text: expect.stringMatching(
        /^\[resource demo:\/\/resource\/dynamic\/blob\/1 \(text\/plain\), \d+ bytes, not shown\]$/,
      ),
    });
  });
});
