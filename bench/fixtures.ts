/**
 * What every benchmark section shares: task queues, the scripted replies and the tools (a no-op and a 20 KB blob).
 * Worker side only (activities, worker processes); the bench workflows import nothing from here at runtime.
 */
import { defineAgent } from '../activities/agents/define-agent.js';
import { builtinTools } from '../activities/tools/builtin/index.js';
import { defineTool, type ToolDefinition } from '../activities/tools/define-tool.js';
import type { Script } from '../activities/model/scripted.js';

export const QUEUE = {
  /** Keel, served by the main worker process only ("1 worker"). */
  keel1: 'bench-keel-1',
  /** Keel, served by the main worker process and a second one ("2 workers"). */
  keel2: 'bench-keel-2',
  /** Keel, served by the memory-measurement worker process only. */
  keelMem: 'bench-keel-mem',
  /** The bench-only workflows (engine floor, naive full-transcript loop). */
  bench: 'bench-floor',
  /** The engine floor served by the main worker process and a second one (section 3's "2 workers" of the floor). */
  bench2: 'bench-floor-2',
  /** The bench-only workflows in the memory-measurement worker process for the engine floor. */
  benchMem: 'bench-floor-mem',
} as const;

/** The small file the read variants of the overhead section read every turn (bench/local-read.ts). */
export const READ_FILE = 'bench-read.txt';
export const READ_FILE_TEXT = 'line of the bench file\n'.repeat(40);

/** Size of each blob tool result in the history section. */
export const BLOB_KB = 20;

/** Scripted models: `scripted/bench-noop` calls the no-op tool every turn; runs stop by `maxTurns`. */
export const SCRIPTS: Record<string, Script> = {
  'bench-noop': { rules: [{ toolCall: { name: 'noop', arguments: {} } }] },
  'bench-blob': { rules: [{ toolCall: { name: 'blob', arguments: { kb: BLOB_KB } } }] },
  'bench-hello': { rules: [{ text: 'ok' }] },
  'bench-read': { rules: [{ toolCall: { name: 'read', arguments: { path: READ_FILE } } }] },
  'bench-read-local': { rules: [{ toolCall: { name: 'read_local', arguments: { path: READ_FILE } } }] },
  /** bench/mcp.ts: server-everything's `echo` over stdio every turn (beside `bench-noop`, a local tool). */
  'bench-mcp-echo': { rules: [{ toolCall: { name: 'everything__echo', arguments: { message: 'ok' } } }] },
  /** bench/capacity.ts: a reply streamed for about a second (100 chunks 10 ms apart), then the no-op tool call. */
  'bench-stream': {
    rules: [{ text: 'word '.repeat(160), chunkDelayMs: 10, toolCall: { name: 'noop', arguments: {} } }],
  },
  /** bench/subagents.ts: the no-op sub-agent every turn (its child run answers in one model call). */
  'bench-sub': { rules: [{ toolCall: { name: 'bench-sub', arguments: { task: 'go' } } }] },
};

/** bench/subagents.ts: a sub-agent whose child run answers `ok` at once (`scripted/bench-hello`). */
export const BENCH_AGENTS = [
  defineAgent({
    name: 'bench-sub',
    description: 'Does nothing.',
    systemPrompt: '',
    tools: [],
    model: 'scripted/bench-hello',
  }),
];

export const noopTool = defineTool({
  name: 'noop',
  description: 'Does nothing.',
  parameters: { type: 'object', properties: {} },
  idempotent: true,
  execute: async () => ({ content: [{ type: 'text', text: 'ok' }] }),
});

/** `kb` KiB of text, unique per call (the call id leads). */
export function blobText(toolCallId: string, kb: number): string {
  return `${toolCallId}:`.padEnd(kb * 1024, 'x');
}

export const blobTool = defineTool({
  name: 'blob',
  description: 'Returns `kb` KiB of text.',
  parameters: { type: 'object', properties: { kb: { type: 'integer' } }, required: ['kb'] },
  idempotent: true,
  execute: async (toolCallId, args: { kb: number }) => ({
    content: [{ type: 'text', text: blobText(toolCallId, args.kb) }],
  }),
});

export const BENCH_TOOLS = [noopTool, blobTool];

/**
 * The built-in `read` on the workspace `cwd` twice: `read` as a regular activity, and `read_local` placed as a local
 * activity (`builtinTools({ localReadTools: true })`, renamed so one worker serves both).
 */
export function readTools(cwd: string): ToolDefinition[] {
  const [plain, local] = [builtinTools({ cwd }), builtinTools({ cwd, localReadTools: true })].map((tools) =>
    tools.find((t) => t.name === 'read')!,
  );
  return [plain, { ...local, name: 'read_local' }];
}
