/**
 * The Pi in-process comparison: `@earendil-works/pi-agent-core`'s `agentLoop` with pi-ai's faux stream, the same
 * scripted replies (one no-op tool call per turn, instant) and the same no-op tool, ended after N turns by
 * `finishTurn` (as Keel's `maxTurns` ends a run).
 *
 * pi-agent-core is loaded dynamically: when it is not installed, the row says so. `KEEL_BENCH_PI_AGENT_CORE` may name
 * a path to the package's entry file (e.g. an unpacked tarball) instead.
 */
import { pathToFileURL } from 'node:url';
import { createFauxCore, fauxAssistantMessage, fauxToolCall } from '@earendil-works/pi-ai';

/** The slice of pi-agent-core's API this uses (typed here so the project type-checks without the package). */
interface PiAgentCore {
  agentLoop(
    prompts: unknown[],
    context: { messages: unknown[]; tools?: unknown[] },
    config: Record<string, unknown>,
    signal: AbortSignal | undefined,
    streamFn: unknown,
  ): AsyncIterable<{ type: string }> & { result(): Promise<unknown[]> };
}

export const PI_AGENT_CORE = '@earendil-works/pi-agent-core';
export const PI_AGENT_CORE_VERSION = '1.6.0';

export async function loadPiAgentCore(): Promise<{
  core?: PiAgentCore;
  from?: string;
  version?: string;
  error?: string;
}> {
  const candidates: string[] = [PI_AGENT_CORE];
  if (process.env.KEEL_BENCH_PI_AGENT_CORE) candidates.push(pathToFileURL(process.env.KEEL_BENCH_PI_AGENT_CORE).href);
  let error = '';
  for (const spec of candidates) {
    try {
      const core = (await import(spec)) as PiAgentCore;
      if (typeof core.agentLoop !== 'function') throw new Error('no agentLoop export');
      return { core, from: spec, version: await versionOf(spec) };
    } catch (err) {
      error = err instanceof Error ? err.message.split('\n', 1)[0] : String(err);
    }
  }
  return { error };
}

async function versionOf(spec: string): Promise<string | undefined> {
  try {
    const url = spec.startsWith('file:')
      ? new URL('../package.json', spec).href
      : import.meta.resolve(`${PI_AGENT_CORE}/package.json`);
    const { readFileSync } = await import('node:fs');
    return (JSON.parse(readFileSync(new URL(url), 'utf8')) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

const noopTool = {
  name: 'noop',
  label: 'noop',
  description: 'Does nothing.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [{ type: 'text', text: 'ok' }], details: {} }),
};

/** One agent run of `turns` turns; resolves with its wall time in ms. */
export async function runPiLoop(
  core: PiAgentCore,
  turns: number,
): Promise<{ ms: number; turns: number; messages: number }> {
  const faux = createFauxCore({});
  faux.setResponses(
    Array.from(
      { length: turns },
      () => (_ctx: unknown, _opts: unknown, state: { callCount: number }) =>
        fauxAssistantMessage(fauxToolCall('noop', {}, { id: `call_${state.callCount}_1` }), { stopReason: 'toolUse' }),
    ),
  );
  let done = 0;
  const started = performance.now();
  const stream = core.agentLoop(
    [{ role: 'user', content: 'go', timestamp: Date.now() }],
    { messages: [], tools: [noopTool] },
    {
      model: faux.getModel(),
      convertToLlm: (messages: unknown[]) => messages,
      toolExecution: 'parallel',
      finishTurn: () => (++done >= turns ? { action: 'end' } : undefined),
    },
    undefined,
    faux.streamSimple,
  );
  for await (const _event of stream) {
    // consume the events, as a UI would
  }
  const messages = await stream.result();
  return { ms: performance.now() - started, turns: done, messages: messages.length };
}
