/** `read` (Pi reference §C.1): text files with offset/limit and head truncation, images by magic bytes. */
import { constants as fsConstants } from 'node:fs';
import { access } from 'node:fs/promises';
import type { ImageContent, TextContent } from '../../../common/messages.js';
import { Type, type Static } from 'typebox';
import { defineTool, type ToolDefinition } from '../define-tool.js';
import { throwIfAborted } from './abort.js';
import { detectImageMime, processImage } from './image.js';
import { readConfined } from './confined-io.js';
import type { Workspace } from './paths.js';
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, formatSize, type TruncationResult, truncateHead } from './truncate.js';
import { thrownMessage } from '../../../common/errors.js';

/** The arguments of `read`, from its schema `readParameters`. */
export type ReadArgs = Static<typeof readParameters>;

export interface ReadToolDetails {
  truncation?: TruncationResult;
}

export interface ReadToolOptions {
  workspace: Workspace;
  /** When false, image results say that the current model cannot see them. Default true. */
  modelSupportsImages?: boolean;
}

export const readParameters = Type.Object({
  path: Type.String({ description: 'Path to the file to read (relative or absolute)' }),
  offset: Type.Optional(Type.Number({ description: 'Line number to start reading from (1-indexed)' })),
  limit: Type.Optional(Type.Number({ description: 'Maximum number of lines to read' })),
});

export function createReadTool(options: ReadToolOptions): ToolDefinition<ReadArgs, ReadToolDetails | undefined> {
  const { workspace } = options;
  const modelSupportsImages = options.modelSupportsImages ?? true;
  return defineTool<typeof readParameters, ReadToolDetails | undefined>({
    name: 'read',
    label: 'read',
    description: `Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as attachments. For text files, output is truncated to ${DEFAULT_MAX_LINES} lines or ${DEFAULT_MAX_BYTES / 1024}KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.`,
    parameters: readParameters,
    idempotent: true,
    workerLocal: true,
    summary: (args) => `read ${String(args?.path ?? '')}`,
    async execute(_toolCallId, { path, offset, limit }, signal) {
      throwIfAborted(signal);
      const absolutePath = await workspace.resolveForRead(path);
      await access(absolutePath, fsConstants.R_OK);
      throwIfAborted(signal);
      // The file opened is checked, not only the path: a name swapped for a symlink meanwhile cannot redirect the read.
      const buffer = await readConfined(workspace, absolutePath, path, await workspace.bashLogRealPath(absolutePath));
      throwIfAborted(signal);

      const mimeType = detectImageMime(buffer.subarray(0, 64));
      if (mimeType) {
        let image;
        try {
          image = processImage(buffer, mimeType);
        } catch (error) {
          const reason = thrownMessage(error);
          return { content: [{ type: 'text', text: `Read image file [${mimeType}]\n${reason}` }], details: undefined };
        }
        const lines = [`Read image file [${image.mimeType}]`, ...image.hints];
        if (!modelSupportsImages)
          lines.push('[Current model does not support images. The image will be omitted from this request.]');
        const content: (TextContent | ImageContent)[] = [
          { type: 'text', text: lines.join('\n') },
          { type: 'image', data: image.data, mimeType: image.mimeType },
        ];
        return { content, details: undefined };
      }

      const allLines = buffer.toString('utf-8').split('\n');
      const totalFileLines = allLines.length;
      const startLine = offset ? Math.max(0, offset - 1) : 0;
      const startLineDisplay = startLine + 1;
      if (startLine >= totalFileLines) {
        throw new Error(`Offset ${offset} is beyond end of file (${totalFileLines} lines total)`);
      }
      let selected: string;
      let userLimitedLines: number | undefined;
      if (limit !== undefined) {
        const endLine = Math.min(startLine + Math.max(0, limit), totalFileLines);
        selected = allLines.slice(startLine, endLine).join('\n');
        userLimitedLines = endLine - startLine;
      } else {
        selected = allLines.slice(startLine).join('\n');
      }

      const truncation = truncateHead(selected);
      let text: string;
      let details: ReadToolDetails | undefined;
      if (truncation.firstLineExceedsLimit) {
        const firstLineSize = formatSize(Buffer.byteLength(allLines[startLine], 'utf-8'));
        text = `[Line ${startLineDisplay} is ${firstLineSize}, exceeds ${formatSize(DEFAULT_MAX_BYTES)} limit. Use bash: sed -n '${startLineDisplay}p' ${path} | head -c ${DEFAULT_MAX_BYTES}]`;
        details = { truncation };
      } else if (truncation.truncated) {
        const endLineDisplay = startLineDisplay + truncation.outputLines - 1;
        const nextOffset = endLineDisplay + 1;
        text = truncation.content;
        if (truncation.truncatedBy === 'lines') {
          text += `\n\n[Showing lines ${startLineDisplay}-${endLineDisplay} of ${totalFileLines}. Use offset=${nextOffset} to continue.]`;
        } else {
          text += `\n\n[Showing lines ${startLineDisplay}-${endLineDisplay} of ${totalFileLines} (${formatSize(DEFAULT_MAX_BYTES)} limit). Use offset=${nextOffset} to continue.]`;
        }
        details = { truncation };
      } else if (userLimitedLines !== undefined && startLine + userLimitedLines < totalFileLines) {
        const remaining = totalFileLines - (startLine + userLimitedLines);
        const nextOffset = startLine + userLimitedLines + 1;
        text = `${truncation.content}\n\n[${remaining} more lines in file. Use offset=${nextOffset} to continue.]`;
      } else {
        text = truncation.content;
      }
      return { content: [{ type: 'text', text }], details };
    },
  });
}
