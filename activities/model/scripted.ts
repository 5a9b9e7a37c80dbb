/**
 * The scripted model (docs/scripted-model.md): replies from rules or from an ordered list, deterministically from the transcript,
 * so a retried model activity gets the same answer. The demo model and the test model.
 */
import { readFileSync, existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import {
  emptyUsage,
  messageText,
  type AssistantMessage,
  type Message,
  type StopReason,
  type Usage,
} from '../../common/messages.js';
import { estimateTokens } from '../../common/compaction.js';
import { ErrorType, thrownMessage } from '../../common/errors.js';
import type { ModelProvider, ModelRequest, PartialGrowth } from './provider.js';

export interface ScriptedToolCall {
  name: string;
  /** An object; a string stands for a model that sends its arguments as a JSON text (the call's validation refuses it). */
  arguments: Record<string, unknown> | string;
  /** Default `call_<n>_<k>`: n = assistant messages so far + 1, k = position. */
  id?: string;
  /**
   * What pi-ai reports when the model's arguments text did not parse (e.g. the stream was cut off), such as
   * `"Unexpected end of JSON input\n\nReceived arguments:\n{\"command\":\"ec"`. Set on the tool call as is; the call is then
   * refused with `Invalid arguments for tool "<name>": <argumentsError>` instead of being executed.
   */
  argumentsError?: string;
}

export interface ScriptedReply {
  text?: string;
  thinking?: string;
  toolCalls?: ScriptedToolCall[];
  /** One tool call (the seed documents' rule shape). */
  toolCall?: ScriptedToolCall;
  /** Default `toolUse` when there are tool calls, else `stop`. */
  stopReason?: StopReason;
  errorMessage?: string;
  /** Fail the model call instead of replying (Temporal retries it unless `retryable: false`). */
  fail?: { message: string; type?: string; retryable?: boolean };
  /** Stream the text in chunks this many ms apart (abort-aware). */
  chunkDelayMs?: number;
  /** Merged over zeros, `cost` too (`{ cost: { total: 0.5 } }` keeps the other cost fields 0). */
  usage?: Partial<Omit<Usage, 'cost'>> & { cost?: Partial<Usage['cost']> };
}

export interface ScriptedRule extends ScriptedReply {
  /** Substring of the last message's match key; a rule without `match` matches anything (keep it last). */
  match?: string;
}

/**
 * `rules`: first rule whose `match` is in the last message's key. `replies`: the n-th reply for the n-th model call of
 * the transcript. `contextWindow`: a request whose estimated tokens (characters / 4, common/compaction.ts) exceed it
 * is refused as a provider refuses an over-long context (non-retryable `ModelError.ContextOverflow`).
 */
export type Script = ({ rules: ScriptedRule[] } | { replies: ScriptedReply[] }) & { contextWindow?: number };

/** The key rules match against: the last message's text, or `toolResult:<toolName> <text>` for a tool result. */
export function matchKey(messages: Message[]): string {
  const last = messages[messages.length - 1];
  if (!last) return '';
  return last.role === 'toolResult' ? `toolResult:${last.toolName} ${messageText(last)}` : messageText(last);
}

/** Said when `scripted/hello` is unknown: only `keel dev` and `keel worker` register it (worker/load-modules.ts). */
export const HELLO_ELSEWHERE =
  'scripted/hello exists only in the workers of `keel dev` and `keel worker`: run against one of them, or give this worker a script named hello (scriptedModel({ hello: { rules: [...] } })).';

/**
 * A provider for `scripted/<name>`: `<name>` is a key of `scripts`, or a path to a JSON file holding a `Script`
 * (relative to `baseDir`, default the worker's cwd).
 */
export function scriptedModel(scripts: Record<string, Script> = {}, opts: { baseDir?: string } = {}): ModelProvider {
  /** The script named `name`; a rules file that does not parse or has neither `rules` nor `replies` throws, naming it. */
  const load = (name: string): Script | undefined => {
    if (scripts[name]) return scripts[name];
    if (!name.endsWith('.json')) return undefined;
    const path = resolve(opts.baseDir ?? process.cwd(), name);
    return existsSync(path) ? readScriptFile(path) : undefined;
  };
  return {
    checkModel(modelId) {
      let script: Script | undefined;
      try {
        script = load(modelId);
      } catch (error) {
        return thrownMessage(error);
      }
      if (script) return undefined;
      const known = Object.keys(scripts);
      // the model of the `Try:` line keel dev prints, which a worker of one's own does not have (issue 33 item 20)
      const hello = modelId === 'hello' ? ` ${HELLO_ELSEWHERE}` : '';
      return `Unknown scripted model "scripted/${modelId}". Known: ${known.length ? known.map((k) => `scripted/${k}`).join(', ') : '(none)'}, or scripted/<path to rules .json>.${hello}`;
    },
    async stream(request, signal, onPartial) {
      let script: Script | undefined;
      try {
        script = load(request.modelId);
      } catch (error) {
        throw ApplicationFailure.nonRetryable(thrownMessage(error), ErrorType.ModelScripted);
      }
      if (!script)
        throw ApplicationFailure.nonRetryable(
          `Unknown scripted model "scripted/${request.modelId}"`,
          ErrorType.ModelNotFound,
        );
      const tokens =
        Math.ceil(request.systemPrompt.length / 4) + request.messages.reduce((n, m) => n + estimateTokens(m), 0);
      if (script.contextWindow !== undefined && tokens > script.contextWindow) {
        throw ApplicationFailure.nonRetryable(
          `prompt is too long: ${tokens} tokens > ${script.contextWindow} maximum`,
          ErrorType.ModelContextOverflow,
        );
      }
      const reply = pick(script, request);
      if (!reply) {
        throw ApplicationFailure.nonRetryable(
          `Scripted model "${request.modelId}" has no reply for: ${JSON.stringify(matchKey(request.messages))}`,
          ErrorType.ModelScripted,
        );
      }
      if (reply.fail)
        throw ApplicationFailure.create({
          message: reply.fail.message,
          type: reply.fail.type ?? ErrorType.ModelScripted,
          nonRetryable: reply.fail.retryable === false,
        });
      return streamReply(reply, request, signal, onPartial);
    },
  };
}

/** A rules file: JSON holding `{ rules: [...] }` or `{ replies: [...] }`. Throws a message naming the file otherwise. */
function readScriptFile(path: string): Script {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`Scripted rules file ${path} is not valid JSON: ${thrownMessage(error)}`);
  }
  const script = parsed as { rules?: unknown; replies?: unknown } | null;
  if (!script || typeof script !== 'object' || (!Array.isArray(script.rules) && !Array.isArray(script.replies))) {
    throw new Error(`Scripted rules file ${path} must hold {"rules": [...]} or {"replies": [...]}`);
  }
  return script as Script;
}

function pick(script: Script, request: ModelRequest): ScriptedReply | undefined {
  if ('replies' in script) return script.replies[request.messages.filter((m) => m.role === 'assistant').length];
  const key = matchKey(request.messages);
  return script.rules.find((r) => r.match === undefined || key.includes(r.match));
}

async function streamReply(
  reply: ScriptedReply,
  request: ModelRequest,
  signal: AbortSignal,
  onPartial: (m: AssistantMessage, grew?: PartialGrowth) => void,
): Promise<AssistantMessage> {
  const n = request.messages.filter((m) => m.role === 'assistant').length + 1;
  const calls = reply.toolCalls ?? (reply.toolCall ? [reply.toolCall] : []);
  const message: AssistantMessage = {
    role: 'assistant',
    content: [],
    api: 'scripted',
    provider: 'scripted',
    model: request.modelId,
    usage: { ...emptyUsage(), ...reply.usage, cost: { ...emptyUsage().cost, ...reply.usage?.cost } },
    stopReason: reply.stopReason ?? (calls.length > 0 ? 'toolUse' : 'stop'),
    ...(reply.errorMessage ? { errorMessage: reply.errorMessage } : {}),
    timestamp: Date.now(),
  };
  const aborted = (): AssistantMessage => ({ ...message, stopReason: 'aborted', errorMessage: 'Operation aborted' });
  // A snapshot that later chunks do not change: the message and its blocks copied, their strings shared (immutable).
  // O(blocks) per chunk, whatever the length of the text so far (a deep clone of the message was quadratic).
  const snapshot = (): AssistantMessage => ({
    ...message,
    content: message.content.map((b) => ({ ...b })),
    usage: { ...message.usage, cost: { ...message.usage.cost } },
  });
  // Without a chunk delay, a long block streams without waiting: the event loop is given back every few ms, so a large
  // reply does not hold up the worker's other activities, queries and heartbeats.
  let workedSince = performance.now();
  // each block streams in 8-character chunks, as a provider's deltas (tool-call arguments as their JSON text)
  const streamed = async (full: string, grow: (chunk: string) => void): Promise<boolean> => {
    const block = message.content.length - 1;
    for (const chunk of chunks(full)) {
      if (reply.chunkDelayMs) await delay(reply.chunkDelayMs, signal);
      else if (performance.now() - workedSince > YIELD_AFTER_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        workedSince = performance.now();
      }
      if (signal.aborted) return false;
      grow(chunk);
      onPartial(snapshot(), { block, text: chunk });
    }
    return true;
  };
  if (reply.thinking !== undefined) {
    const block = { type: 'thinking' as const, thinking: '' };
    message.content.push(block);
    if (!(await streamed(reply.thinking, (c) => (block.thinking += c)))) return aborted();
  }
  if (reply.text !== undefined) {
    const block = { type: 'text' as const, text: '' };
    message.content.push(block);
    if (!(await streamed(reply.text, (c) => (block.text += c)))) return aborted();
  }
  for (const [k, c] of calls.entries()) {
    const block: AssistantMessage['content'][number] & { type: 'toolCall' } = {
      type: 'toolCall',
      id: c.id ?? `call_${n}_${k + 1}`,
      name: c.name,
      arguments: '',
      ...(c.argumentsError !== undefined ? { argumentsError: c.argumentsError } : {}),
    };
    message.content.push(block);
    const json = typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments);
    if (!(await streamed(json, (chunk) => (block.arguments = (block.arguments as string) + chunk)))) {
      message.content.pop(); // an unfinished tool call is not part of an aborted reply
      return aborted();
    }
    block.arguments = c.arguments;
  }
  return message;
}

/** Most ms a reply streams without a chunk delay before it lets the event loop run. */
const YIELD_AFTER_MS = 10;

/** `text` in 8-character pieces (one empty piece for an empty text). */
function* chunks(text: string): Generator<string> {
  if (text.length === 0) yield '';
  for (let i = 0; i < text.length; i += 8) yield text.slice(i, i + 8);
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
