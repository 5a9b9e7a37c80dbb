/** `keel run` (start and follow live to the end) and `keel start` (start, print the id and link). */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import type { AgentRunInput } from '../../common/run.js';
import { ErrorType } from '../../common/errors.js';
import { InvalidAgentInputError, type AgentClient } from '../../client/agent-client.js';
import { agentRunInputErrors } from '../../common/validate-input.js';
import {
  act,
  commaList,
  EXIT,
  globals,
  intOption,
  printJson,
  uiLink,
  usageError,
  withClient,
  type GlobalOptions,
} from '../context.js';
import { followRun } from '../run/follow.js';
import { toolQueueWatch } from '../run/tool-queue.js';
import { stopFollowingOn } from '../signals.js';
import { exitCodeOf, closedRunOutcome, tryState, type Outcome } from '../outcome.js';
import { throughOutage } from '../../client/reconnect.js';
import { RunRenderer, stdoutSink, summaryFromResult } from '../render.js';

export const DEFAULT_MODEL = 'anthropic/claude-sonnet-4-5';

export interface StartFlags {
  model?: string;
  tools?: string[];
  mode?: 'task' | 'session';
  system?: string;
  maxTurns?: number;
  input?: string;
  id?: string;
  meta?: string[];
  /** `--output-schema`: the run's `output` JSON Schema (docs/runs.md "Typed results"), inline JSON or a file. */
  outputSchema?: string;
  outputRepairs?: number;
}

/** The text of `--input` (or `flag`): inline JSON when it starts with `{`, else a file (`-`: stdin). */
function inputText(input: string, flag = '--input'): string {
  if (input.trimStart().startsWith('{')) return input;
  try {
    return readFileSync(input === '-' ? 0 : input, 'utf8');
  } catch (err) {
    throw usageError(
      `${flag} ${input}: ${(err as Error).message} (give a file, - for stdin, or inline JSON starting with {)`,
    );
  }
}

/** The JSON Schema of `--output-schema` (inline JSON or a file); whether ajv compiles it, the run's start says. */
function outputSchema(value: string): object {
  let schema: unknown;
  try {
    schema = JSON.parse(inputText(value, '--output-schema'));
  } catch (err) {
    if (err instanceof SyntaxError) throw usageError(`--output-schema ${value}: not JSON (${err.message})`);
    throw err;
  }
  if (!schema || typeof schema !== 'object' || Array.isArray(schema))
    throw usageError(`--output-schema ${value}: must hold one JSON Schema object`);
  return schema;
}

/**
 * The AgentRunInput of `keel run/start` (`command`: which, for the hint): `--input` (inline JSON or a file) first, then
 * the prompt and flags on top; checked against the schema here, so a bad input is a usage error before connecting.
 */
export function buildInput(promptWords: string[] | undefined, o: StartFlags, command = 'run'): AgentRunInput {
  let input: Record<string, unknown> = {};
  if (o.input) {
    const text = inputText(o.input);
    try {
      input = JSON.parse(text) as Record<string, unknown>;
    } catch (err) {
      throw usageError(`--input ${o.input}: not JSON (${(err as Error).message})`);
    }
    if (!input || typeof input !== 'object' || Array.isArray(input))
      throw usageError(`--input ${o.input}: must hold one JSON object (an AgentRunInput)`);
  }
  const prompt = promptWords?.length ? promptWords.join(' ') : undefined;
  if (prompt !== undefined) input.prompt = prompt;
  if (o.model) input.model = o.model;
  else input.model ??= process.env.KEEL_MODEL ?? DEFAULT_MODEL;
  if (o.tools) input.tools = o.tools;
  if (o.mode) input.mode = o.mode;
  if (o.system !== undefined) input.systemPrompt = o.system;
  if (o.maxTurns !== undefined) input.maxTurns = o.maxTurns;
  if (o.outputSchema !== undefined) input.output = outputSchema(o.outputSchema);
  if (o.outputRepairs !== undefined) input.outputRepairs = o.outputRepairs;
  if (o.meta?.length) {
    const metadata = { ...((input.metadata as Record<string, unknown>) ?? {}) };
    for (const kv of o.meta) {
      const eq = kv.indexOf('=');
      if (eq <= 0) throw usageError(`--meta ${kv}: expected key=value`);
      metadata[kv.slice(0, eq)] = kv.slice(eq + 1);
    }
    input.metadata = metadata;
  }
  if (input.prompt === undefined && !Array.isArray(input.messages))
    throw usageError(
      `Give a prompt: \`keel ${command} "what to do"\` (or --input file.json with a prompt or messages).`,
    );
  const errors = agentRunInputErrors(input);
  if (errors.length > 0) throw new InvalidAgentInputError(errors); // the client's words (exit 2), before connecting
  return input as unknown as AgentRunInput;
}

function startOptions(cmd: Command): Command {
  return cmd
    .argument('[prompt...]', 'what the agent should do (quote it, or give several words)')
    .option(
      '-m, --model <provider/model>',
      `model, e.g. anthropic/claude-sonnet-4-5 or scripted/rules.json (default $KEEL_MODEL or ${DEFAULT_MODEL})`,
    )
    .option('--tools <names>', 'comma-separated tool names registered on the worker, e.g. read,grep,bash', commaList)
    .addOption(
      new Option('--mode <mode>', 'task: finish when the agent stops; session: then wait for follow-ups').choices([
        'task',
        'session',
      ]),
    )
    .option('-s, --system <prompt>', 'system prompt')
    .option('--max-turns <n>', 'turns before the run stops (default 100)', intOption('--max-turns'))
    .option(
      '-i, --input <json|file>',
      'a full AgentRunInput: inline JSON ({…}), a .json file, or - for stdin; the prompt and flags override its fields',
    )
    .option('--meta <key=value>', 'metadata label; repeatable', (v: string, prev: string[] = []) => [...prev, v])
    .option('--output-schema <json|file>', 'typed result: the final answer must be JSON valid against this JSON Schema')
    .option(
      '--output-repairs <n>',
      'invalid answers sent back before the run fails (default 2)',
      intOption('--output-repairs', 0),
    )
    .option('--id <workflowId>', 'workflow id (default keel-<uuid>)');
}

/** Warns on stderr when no worker polls the task queue: the run would wait silently. */
export async function warnIfNoWorker(client: AgentClient, g: GlobalOptions): Promise<void> {
  try {
    const r = await client.client.workflowService.describeTaskQueue({
      namespace: g.namespace,
      taskQueue: { name: g.taskQueue, kind: 1 },
      taskQueueType: 1,
    });
    if ((r.pollers ?? []).length === 0) {
      process.stderr.write(
        `[keel] no worker is polling task queue "${g.taskQueue}" right now; the run waits until one does.\n` +
          `       Start one with \`npx keel dev\` (server + worker) or \`npx keel worker\`.\n`,
      );
    }
  } catch {
    // informational only
  }
}

async function start(client: AgentClient, g: GlobalOptions, input: AgentRunInput, o: StartFlags) {
  const workflowId = o.id ?? `keel-${randomUUID()}`;
  const handle = await client.start(input, { workflowId });
  return { input, handle, workflowId, url: uiLink(g, workflowId) };
}

/** 0 completed/stopped, 2 when the worker refused the input (unknown tool or model), else 1. */
export function runExitCode(out: Outcome): number {
  return out.failureType === ErrorType.InvalidAgentInput ? EXIT.usage : exitCodeOf(out.status);
}

export function register(program: Command): void {
  registerRun(program);
  registerStart(program);
}

/** `keel run`. */
function registerRun(program: Command): void {
  startOptions(
    program
      .command('run')
      .summary('start a run and follow it live to the end')
      .description(
        'Starts agentWorkflow and shows it live: turns, tool calls and results, the streamed reply, queued messages, then a ' +
          'summary. Ctrl-C stops following (the run goes on in Temporal). Exit code 0 completed/stopped, 1 failed or cancelled. ' +
          'A --mode session run is followed until it waits for input.',
      ),
  ).action(act(runAndFollow));
}

/** `keel run`'s action: start the run, then follow it to its end (--json: wait and print the outcome). */
async function runAndFollow(prompt: string[], o: StartFlags, cmd: Command): Promise<number> {
  const g = globals(cmd);
  const runInput = buildInput(prompt, o); // usage errors before connecting
  return withClient(g, async (client) => {
    const began = Date.now();
    const started = await start(client, g, runInput, o);
    await warnIfNoWorker(client, g);
    if (g.json) {
      const out = await throughOutage(() => closedRunOutcome(started.handle.workflow));
      printJson({
        workflowId: started.workflowId,
        url: started.url,
        ...out.result,
        status: out.status,
        ...(out.failureType ? { failureType: out.failureType } : {}),
      });
      return runExitCode(out);
    }
    return followStarted(client, g, started, began);
  });
}

/** `keel run` without --json: the run live until it closes, a session waits, or Ctrl-C (130); then a summary. */
async function followStarted(
  client: AgentClient,
  g: GlobalOptions,
  { input, handle, workflowId, url }: Awaited<ReturnType<typeof start>>,
  began: number,
): Promise<number> {
  const sink = stdoutSink();
  const r = new RunRenderer(sink);
  const abort = stopFollowingOn(['SIGINT']); // before the header: a Ctrl-C sent on seeing it is caught
  r.header(workflowId, url, `${input.model}${input.tools?.length ? ` · tools ${input.tools.join(',')}` : ''}`);
  try {
    const end = await followRun(handle.workflow, r, {
      stopWhenWaiting: input.mode === 'session',
      signal: abort.signal,
      onEvent: toolQueueWatch(client, g, g.taskQueue), // a tool call nobody takes: say so
    });
    if (end.closed) {
      const out = await throughOutage(() => closedRunOutcome(handle.workflow));
      r.summary({ ...summaryFromResult(workflowId, out.result, url, Date.now() - began), status: out.status });
      return runExitCode(out);
    }
    const st = end.state ?? (await tryState(handle.workflow));
    if (abort.signal.aborted) {
      r.note(
        `Stopped following; the run goes on. Watch it with \`keel watch ${workflowId}\`, stop it with \`keel cancel ${workflowId}\`.`,
      );
    } else {
      r.note(`Session waiting for input: \`keel send ${workflowId} "…"\`, end it with \`keel end ${workflowId}\`.`);
    }
    if (st)
      r.summary({
        workflowId,
        status: st.status,
        turns: st.turns,
        usage: st.usage,
        url,
        durationMs: Date.now() - began,
      });
    return abort.signal.aborted ? 130 : EXIT.ok;
  } finally {
    abort.dispose();
  }
}

/** `keel start`. */
function registerStart(program: Command): void {
  startOptions(program.command('start').summary('start a run and print its workflow id and UI link')).action(
    act(startAndPrint),
  );
}

/** `keel start`'s action: start the run and print its id and UI link. */
async function startAndPrint(prompt: string[], o: StartFlags, cmd: Command): Promise<number> {
  const g = globals(cmd);
  const input = buildInput(prompt, o, 'start'); // usage errors before connecting
  return withClient(g, async (client) => {
    const { handle, workflowId, url } = await start(client, g, input, o);
    if (g.json) {
      const d = await handle.workflow.describe();
      printJson({ workflowId, runId: d.runId, url });
    } else {
      process.stdout.write(`${workflowId}\n${url}\n`);
      await warnIfNoWorker(client, g);
    }
    return EXIT.ok;
  });
}
