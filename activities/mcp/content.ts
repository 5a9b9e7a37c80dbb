/**
 * MCP tool results → Keel tool results. Text and images map one to one; an embedded resource becomes its text (or
 * an image block for an image blob, a one-line description for other blobs); a resource link and audio become a
 * line saying what they are; `structuredContent` without any content becomes its JSON. Nothing is dropped silently.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ImageContent, TextContent } from '../../common/messages.js';

type Block = TextContent | ImageContent;

/** The Keel content blocks of an MCP result's `content`. */
export function keelContent(result: Pick<CallToolResult, 'content' | 'structuredContent'>): Block[] {
  const out: Block[] = [];
  for (const c of result.content ?? []) {
    switch (c.type) {
      case 'text':
        out.push({ type: 'text', text: c.text });
        break;
      case 'image':
        out.push({ type: 'image', data: c.data, mimeType: c.mimeType });
        break;
      case 'audio':
        out.push({ type: 'text', text: `[audio ${c.mimeType}, ${base64Bytes(c.data)} bytes, not shown]` });
        break;
      case 'resource': {
        const r = c.resource;
        if ('text' in r && typeof r.text === 'string')
          out.push({ type: 'text', text: `Resource ${r.uri}:\n${r.text}` });
        else if ('blob' in r && typeof r.blob === 'string' && r.mimeType?.startsWith('image/'))
          out.push({ type: 'image', data: r.blob, mimeType: r.mimeType });
        else
          out.push({
            type: 'text',
            text: `[resource ${r.uri}${r.mimeType ? ` (${r.mimeType})` : ''}, ${base64Bytes((r as { blob?: string }).blob ?? '')} bytes, not shown]`,
          });
        break;
      }
      case 'resource_link':
        out.push({
          type: 'text',
          text: `Resource link: ${c.name} ${c.uri}${c.mimeType ? ` (${c.mimeType})` : ''}${c.description ? ` - ${c.description}` : ''}`,
        });
        break;
      default:
        out.push({ type: 'text', text: `[${(c as { type: string }).type} content, not shown]` });
    }
  }
  if (out.length === 0 && result.structuredContent !== undefined)
    out.push({ type: 'text', text: JSON.stringify(result.structuredContent) });
  return out;
}

function base64Bytes(data: string): number {
  return Math.floor((data.length * 3) / 4) - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
}
