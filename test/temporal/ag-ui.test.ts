/**
 * The AG-UI endpoint (client/ag-ui/) driven by `@ag-ui/client`'s HttpAgent on loopback: the protocol's events in
 * order, the assembled messages identical to the transcript (across continue-as-new and a reconnect), approvals as
 * interrupts answered through the endpoint, and a bad RunAgentInput refused with RUN_ERROR before anything starts.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpAgent, type BaseEvent, type Message as AgUiMessage } from '@ag-ui/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agUiHandler, type AgUiOptions } from '../../client/ag-ui/http.js';
import { transcriptMessages } from '../../client/ag-ui/messages.js';
import type { AgentRunHandle } from '../../client/agent-client.js';
import { ranLog, dangerTool } from './approval-fixtures.js';
import { startKeel, until, type Keel } from './harness.js';
import { blobTool } from './tool-fixtures.js';
import { calc } from '../../examples/tools.js';

/** Serves the endpoint on loopback; answers its URL. */
export async function serveAgUi(opts: AgUiOptions): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => void agUiHandler(opts)(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
}

/** Runs `agent` once, collecting the events; a RUN_ERROR's rejection is kept in `error`. */
async function run(
  agent: HttpAgent,
  params: Parameters<HttpAgent['runAgent']>[0] = {},
  onEvent?: (e: BaseEvent) => void,
) {
  const events: BaseEvent[] = [];
  const error = await agent
    .runAgent(params, {
      onEvent: ({ event }) => {
        events.push(event);
        onEvent?.(event);
      },
    })
    .then(
      () => undefined,
      (err: Error) => err,
    );
  return { events, types: events.map((e) => e.type), error };
}

/** The endpoint's own messages (assistant texts, reasoning, tool calls and results), as the client assembled them. */
const streamed = (messages: AgUiMessage[]) =>
  messages
    .filter((m) => m.id.startsWith('keel-') && m.role !== 'user')
    .map((m) => JSON.parse(JSON.stringify(m, (k, v: unknown) => (k === 'metadata' ? undefined : v))) as AgUiMessage);

/** The same of the run's transcript (assembled anew from it). */
async function expected(h: AgentRunHandle) {
  return transcriptMessages(await h.allMessages()).filter((m) => m.role !== 'user');
}

const offsetOf = (e: BaseEvent) => (e.metadata as { keel?: { offset: number } } | undefined)?.keel?.offset;

describe('AG-UI endpoint', () => {
  let keel: Keel;
  let url: string;
  let server: Server;
  const { ran, note } = ranLog();
  beforeAll(async () => {
    keel = await startKeel({
      tools: [calc, blobTool, dangerTool(note)],
      scripts: {
        calc: {
          rules: [
            { match: 'toolResult:calc 96', text: '12*8 = 96.', chunkDelayMs: 5 },
            {
              match: '12*8',
              thinking: 'The calc tool multiplies exactly.',
              text: 'Let me calculate that.',
              toolCalls: [{ id: 'call-1', name: 'calc', arguments: { expression: '12*8' } }],
            },
            { text: 'Ask me "What is 12*8?".' },
          ],
        },
        danger: {
          rules: [
            { match: 'toolResult:danger', text: 'done' },
            { toolCalls: [{ id: 'd-1', name: 'danger', arguments: { target: 'prod' } }] },
          ],
        },
        long: {
          replies: [
            ...Array.from({ length: 6 }, (_, n) => ({
              text: `turn ${n} `.repeat(12),
              chunkDelayMs: 15,
              toolCalls: [{ name: 'blob', arguments: { kb: 24, n } }],
            })),
            { text: 'all done, every turn streamed', chunkDelayMs: 15 },
          ],
        },
      },
    });
    ({ url, server } = await serveAgUi({
      client: keel.client,
      runInput: (input) => ({
        model: `scripted/${(input.forwardedProps as { script?: string } | undefined)?.script ?? 'calc'}`,
        tools: ['calc', 'blob', 'danger'],
        continueAsNewAfterBytes: 65536,
      }),
      approvalPollMs: 100,
    }));
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await keel?.stop();
  });

  it('a run with thinking, text and a tool call: the protocol events in order, the messages those of the transcript', async () => {
    const threadId = `agui-${randomUUID()}`;
    const agent = new HttpAgent({ url, threadId });
    agent.addMessage({ id: 'u1', role: 'user', content: 'What is 12*8?' });
    const { types, error } = await run(agent);
    expect(error).toBeUndefined();
    // consecutive content deltas counted once (how the text is cut into deltas depends on timing)
    expect(types.filter((t, i) => !t.endsWith('_CONTENT') || types[i - 1] !== t)).toEqual([
      'RUN_STARTED',
      'STATE_SNAPSHOT',
      'REASONING_START',
      'REASONING_MESSAGE_START',
      'REASONING_MESSAGE_CONTENT',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TOOL_CALL_START',
      'REASONING_MESSAGE_END',
      'REASONING_END',
      'TEXT_MESSAGE_END',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'STATE_DELTA',
      'TOOL_CALL_RESULT',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'STATE_DELTA',
      'STATE_SNAPSHOT',
      'RUN_FINISHED',
    ]);
    expect(streamed(agent.messages)).toEqual(await expected(keel.client.getHandle(threadId)));
    await keel.client.getHandle(threadId).cancel();
  });
});
