/** `edit` (Pi reference §C.3): exact-then-fuzzy replacements, all-or-nothing, CRLF/BOM preserved, diff + patch. */
import { constants as fsConstants } from 'node:fs';
import { access, readFile, writeFile } from 'node:fs/promises';
import { Type, type Static } from 'typebox';
import { defineTool, type ToolDefinition } from '../define-tool.js';
import { throwIfAborted } from './abort.js';
import { computeEdits, diffEdit, type Edit, generateDiffString } from './edit-diff.js';
import { withFileMutationQueue } from './file-mutation-queue.js';
import { realResolve, type Workspace } from './paths.js';
import { readConfined, writeConfined } from './confined-io.js';
import { withNotice, type WorkspaceSize } from './workspace-size.js';
import { thrownMessage } from '../../../common/errors.js';

/** The arguments of `edit`, from its schema `editParameters`. */
export type EditArgs = Static<typeof editParameters>;

export interface EditToolDetails {
  diff: string;
  patch: string;
  firstChangedLine: number | undefined;
}

/** File access used by `edit`; replace it to edit somewhere else (Pi's `EditOperations`). */
export interface EditOperations {
  /** Throws when the file cannot be read and written. */
  access(absolutePath: string): Promise<void>;
  readFile(absolutePath: string): Promise<string | Buffer>;
  writeFile(absolutePath: string, content: string): Promise<void>;
}

export const localEditOperations: EditOperations = {
  access: (p) => access(p, fsConstants.R_OK | fsConstants.W_OK),
  readFile: (p) => readFile(p),
  writeFile: (p, content) => writeFile(p, content, 'utf-8'),
};

/**
 * The default: local files, each read and write checked on the file actually opened (`confined-io.ts`); `given` is the
 * model's path, for the outside-the-workspace error.
 */
export function confinedEditOperations(workspace: Workspace, given: string): EditOperations {
  return {
    access: localEditOperations.access,
    readFile: (p) => readConfined(workspace, p, given),
    writeFile: (p, content) => writeConfined(workspace, p, given, content),
  };
}

export interface EditToolOptions {
  workspace: Workspace;
  operations?: EditOperations;
  /** The workspace's size limit (`workspace-size.ts`): refused while over it, its own delta added after writing. */
  size?: WorkspaceSize;
}

export const editParameters = Type.Object({
  path: Type.String({ description: 'Path to the file to edit (relative or absolute)' }),
  edits: Type.Array(
    Type.Object({
      oldText: Type.String({ description: 'Exact text to find and replace (must be unique in the file)' }),
      newText: Type.String({ description: 'New text to replace the old text with' }),
    }),
    {
      description:
        'One or more targeted replacements. Each oldText is matched against the original file (not after earlier edits) and must be unique and must not overlap another edit.',
    },
  ),
});

/**
 * Pi's argument shim: `edits` given as a JSON string is parsed when it yields an array; legacy top-level
 * `oldText`/`newText` strings become one more edit and are removed. Pure.
 */
export function prepareEditArguments(args: unknown): unknown {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return args;
  const input = args as Record<string, unknown>;
  let changed = false;
  const out: Record<string, unknown> = { ...input };
  if (typeof out.edits === 'string') {
    try {
      const parsed: unknown = JSON.parse(out.edits);
      if (Array.isArray(parsed)) {
        out.edits = parsed;
        changed = true;
      }
    } catch {
      // leave it for validation to report
    }
  }
  if (typeof out.oldText === 'string' && typeof out.newText === 'string') {
    const existing = Array.isArray(out.edits) ? out.edits : [];
    out.edits = [...existing, { oldText: out.oldText, newText: out.newText }];
    delete out.oldText;
    delete out.newText;
    changed = true;
  }
  return changed ? out : args;
}

function accessError(path: string, error: unknown): Error {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return new Error(
    code ? `Could not edit file: ${path}. Error code: ${code}.` : `Could not edit file: ${path}. ${String(error)}.`,
  );
}

function checkEditsPresent(edits: unknown): asserts edits is Edit[] {
  if (!Array.isArray(edits) || edits.length === 0) {
    throw new Error('Edit tool input is invalid. edits must contain at least one replacement.');
  }
}

function toText(content: string | Buffer): string {
  return typeof content === 'string' ? content : content.toString('utf-8');
}

export function createEditTool(options: EditToolOptions): ToolDefinition<EditArgs, EditToolDetails> {
  const { workspace, size } = options;
  return defineTool<typeof editParameters, EditToolDetails>({
    name: 'edit',
    label: 'edit',
    description:
      'Edit a file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.',
    parameters: editParameters,
    idempotent: false,
    workerLocal: true,
    prepareArguments: prepareEditArguments,
    summary: (args) => {
      const n = Array.isArray(args?.edits) ? args.edits.length : 0;
      return `edit ${String(args?.path ?? '')} (${n} ${n === 1 ? 'edit' : 'edits'})`;
    },
    async execute(_toolCallId, { path, edits }, signal) {
      throwIfAborted(signal);
      checkEditsPresent(edits);
      const ops = options.operations ?? confinedEditOperations(workspace, path);
      const absolutePath = await workspace.resolve(path);
      const key = await realResolve(absolutePath).catch(() => absolutePath);
      return withFileMutationQueue(key, async () => {
        throwIfAborted(signal);
        await size?.refuseWhenOver();
        try {
          await ops.access(absolutePath);
        } catch (error) {
          throw accessError(path, error);
        }
        throwIfAborted(signal);
        const raw = toText(await ops.readFile(absolutePath));
        throwIfAborted(signal);
        const { finalContent, before, after } = computeEdits(raw, edits, path);
        await ops.writeFile(absolutePath, finalContent);
        size?.add(Buffer.byteLength(finalContent, 'utf-8') - Buffer.byteLength(raw, 'utf-8'));
        throwIfAborted(signal);
        const { diff, patch, firstChangedLine } = diffEdit(path, before, after);
        const result = {
          content: [{ type: 'text' as const, text: `Successfully replaced ${edits.length} block(s) in ${path}.` }],
          details: { diff, patch, firstChangedLine },
        };
        return withNotice(result, size?.notice());
      });
    },
  });
}

export type EditPreview = { diff: string; firstChangedLine: number | undefined } | { error: string };

/** Pi's `computeEditsDiff`: the edit's diff without writing, or `{ error }` with the text the tool would throw. */
export async function computeEditsDiff(
  path: string,
  edits: Edit[],
  options: { workspace: Workspace; operations?: EditOperations },
): Promise<EditPreview> {
  const ops = options.operations ?? confinedEditOperations(options.workspace, path);
  try {
    checkEditsPresent(edits);
    const absolutePath = await options.workspace.resolve(path);
    try {
      await ops.access(absolutePath);
    } catch (error) {
      throw accessError(path, error);
    }
    const raw = toText(await ops.readFile(absolutePath));
    const { before, after } = computeEdits(raw, edits, path);
    return generateDiffString(before, after);
  } catch (error) {
    return { error: thrownMessage(error) };
  }
}
