/**
 * `read` (Pi reference §C.1): text files with offset/limit and head truncation, images by magic bytes. The file is
 * opened once (`confined-io.ts`: only a regular file inside the workspace), `fstat`ed, and a text file is streamed:
 * only its window is kept (`read-window.ts`); an image is read whole only up to {@link MAX_IMAGE_BYTES}.
 */
import { constants as fsConstants } from 'node:fs';
import { access, type FileHandle } from 'node:fs/promises';
import type { ImageContent, TextContent } from '../../../common/messages.js';
import { Type, type Static } from 'typebox';
import { defineTool, type ToolDefinition } from '../define-tool.js';
import { throwIfAborted } from './abort.js';
import { detectImageMime, processImage, type ImageMime } from './image.js';
import type { LineWindow } from './read-window.js';
import { openConfined } from './confined-io.js';
import { readWindow } from './read-window.js';
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

/** The largest image `read` loads (it is resized below that anyway). */
export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;

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
      const logPath = await workspace.bashLogRealPath(absolutePath);
      const handle = await openConfined(workspace, absolutePath, path, {
        mode: 'read',
        ...(logPath ? { alsoAllowed: logPath } : {}),
      });
      try {
        const { size } = await handle.stat();
        const head = Buffer.alloc(Math.min(64, size));
        await handle.read(head, 0, head.length, 0);
        throwIfAborted(signal);
        const mimeType = detectImageMime(head);
        if (mimeType) return await readImage(handle, size, mimeType, modelSupportsImages);
        const startLine = offset ? Math.max(0, offset - 1) : 0;
        const endLine = limit !== undefined ? startLine + Math.max(0, limit) : undefined;
        const window = await readWindow(handle, startLine, endLine, () => throwIfAborted(signal));
        return textResult(window, { path, offset, limit, startLine });
      } finally {
        await handle.close();
      }
    },
  });
}

/** An image file (at most {@link MAX_IMAGE_BYTES}) as Pi's result: a hint line and the (resized) image. */
async function readImage(handle: FileHandle, size: number, mimeType: ImageMime, modelSupportsImages: boolean) {
  if (size > MAX_IMAGE_BYTES) {
    const text = `Read image file [${mimeType}]\nImage is ${formatSize(size)}, over the ${formatSize(MAX_IMAGE_BYTES)} that read loads`;
    return { content: [{ type: 'text' as const, text }], details: undefined };
  }
  const buffer = Buffer.alloc(size);
  await handle.read(buffer, 0, size, 0);
  let image;
  try {
    image = processImage(buffer, mimeType);
  } catch (error) {
    const reason = thrownMessage(error);
    return {
      content: [{ type: 'text' as const, text: `Read image file [${mimeType}]\n${reason}` }],
      details: undefined,
    };
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

/** Pi's text result for the window: head-truncated, with its notices. */
function textResult(
  window: LineWindow,
  args: { path: string; offset: number | undefined; limit: number | undefined; startLine: number },
): { content: TextContent[]; details: ReadToolDetails | undefined } {
  const { path, offset, limit, startLine } = args;
  const totalFileLines = window.totalLines;
  const startLineDisplay = startLine + 1;
  if (startLine >= totalFileLines) {
    throw new Error(`Offset ${offset} is beyond end of file (${totalFileLines} lines total)`);
  }
  const selected = window.kept;
  const userLimitedLines =
    limit !== undefined ? Math.min(startLine + Math.max(0, limit), totalFileLines) - startLine : undefined;
  {
    const truncation = truncateHead(selected);
    if (!window.complete) {
      truncation.totalLines = window.windowLines;
      truncation.totalBytes = window.windowBytes;
    }
    let text: string;
    let details: ReadToolDetails | undefined;
    if (truncation.firstLineExceedsLimit) {
      const firstLineSize = formatSize(window.firstLineBytes);
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
  }
}
