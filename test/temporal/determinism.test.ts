/**
 * Determinism, three ways: a worker that caches no workflow (every task replays from history), capture-then-replay
 * of a run that uses every feature, and committed history fixtures replayed with the current code, so that a
 * nondeterministic change to the loop fails CI.
 * Re-record the fixture after an intended change of the command sequence: KEEL_RECORD_FIXTURES=1 npm test.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { ensureTemporalCli } from '../../scripts/temporal-cli.mjs';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import type { AgentRunHandle } from '../../client/agent-client.js';
import { startKeel, until, type Keel } from './harness.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/histories/every-feature.json', import.meta.url));

const echo = defineTool({
  name: 'echo',
  description: 'Echoes value.',
  idempotent: true,
  parameters: { type: 'object', properties: { value: { type: 'string' } }, required: ['value'] },
  execute: async (_id, args: { value: string }) => ({ content: [{ type: 'text', text: `echoed: ${args.value}` }], details: { value: args.value } }),
});
const serial = defineTool({
  name: 'serial',
  description: 'Runs alone.',
  executionMode: 'sequential',
  parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
  execute: async (_id, args: { n: number }) => ({ content: [{ type: 'text', text: `serial ${args.n}` }] }),
});
const finisher = defineTool({
  name: 'finish',
  description: 'Ends the batch.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [{ type: 'text', text: 'finished' }], terminate: true }),
});

const scripts = {
  everything: {
    rules: [
      { match: 'toolResult:nope', text: 'cut short', stopReason: 'length' as const, toolCalls: [{ id: 't-len', name: 'echo', arguments: { value: 'trunc' } }] },
      { match: 'toolResult:echo Tool call "echo" was not executed', text: 'recovered' },
      { match: 'go serial', toolCalls: [{ id: 't-s1', name: 'serial', arguments: { n: '1' } }, { id: 't-s2', name: 'serial', arguments: { n: 2 } }] },
      { match: 'toolResult:serial serial 2', text: 'serial done' },
      { match: 'validate', toolCalls: [{ id: 't-v', name: 'echo', arguments: {} }] },
      { match: 'toolResult:echo Validation failed', toolCalls: [{ id: 't-f', name: 'finish', arguments: {} }] },
      { match: 'steered', text: 'saw the steer' },
      { match: 'start', toolCalls: [{ id: 't-a', name: 'echo', arguments: { value: 'a' } }, { id: 't-b', name: 'echo', arguments: { value: 'b' } }, { id: 't-n', name: 'nope', arguments: {} }] },
      { text: 'ok' },
    ],
  },
};

/** A session that goes through parallel and sequential batches, unknown tool, coercion, validation failure, length truncation, terminate, follow-ups, steering, interrupt and cancel. */
async function everyFeature(keel: Keel, workflowId: string): Promise<AgentRunHandle> {
  const h = await keel.start(
    { model: 'scripted/everything', prompt: 'start', tools: ['echo', 'serial', 'finish'], mode: 'session', metadata: { suite: 'determinism' } },
    workflowId,
  );
  const waitTurns = (n: number) => until(async () => {
    const s = await h.state();
    return s.status === 'waiting' && s.turns >= n;
  }, 120_000, `${n} turns`, 250); // every query replays the whole history on this cache-less worker
  await waitTurns(3);
  await h.followUp('go serial');
  await waitTurns(5);
  await h.followUp('validate');
  await waitTurns(7);
  await h.steer('steered');
  await waitTurns(8);
  await h.interrupt();
  await h.cancel('done');
  await h.workflow.result().catch(() => undefined);
  return h;
}

describe('determinism', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, tools: [echo, serial, finisher], maxCachedWorkflows: 0 });
  });
  afterAll(() => keel?.stop());

  it('a run with every feature completes on a worker that replays every workflow task, and its history replays', async () => {
    const h = await everyFeature(keel, `determinism-${Date.now()}`);
    expect((await h.workflow.describe()).status.name).toBe('CANCELLED');
    const messages = await h.allMessages();
    expect(messages.map((m) => m.role)).toEqual([
      'user', 'assistant', 'toolResult', 'toolResult', 'toolResult', 'assistant', 'toolResult', 'assistant',
      'user', 'assistant', 'toolResult', 'toolResult', 'assistant',
      'user', 'assistant', 'toolResult', 'assistant', 'toolResult',
      'user', 'assistant',
    ]);
    const history = await h.workflow.fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history);
    if (process.env.KEEL_RECORD_FIXTURES === '1') {
      const cli = await ensureTemporalCli();
      const json = execFileSync(cli, ['workflow', 'show', '--workflow-id', h.workflowId, '--address', inject('temporalAddress'), '--output', 'json'], { encoding: 'utf8' });
      writeFileSync(FIXTURE, json);
    }
  }, 300_000);

  it('the committed history fixture replays with the current workflow code', async () => {
    expect(existsSync(FIXTURE), `missing ${FIXTURE}: record it with KEEL_RECORD_FIXTURES=1 npm test`).toBe(true);
    const history = JSON.parse(readFileSync(FIXTURE, 'utf8'));
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history);
  });
});
