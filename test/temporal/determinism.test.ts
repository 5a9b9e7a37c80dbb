/**
 * Determinism: a worker that caches no workflow (every task replays from history) runs a session that uses every
 * feature, and its history replays. Recorded releases are replayed by replay-corpus.test.ts.
 */
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { corpusScripts, corpusTools, everyFeature } from './corpus-scenarios.js';
import { startKeel, type Keel } from './harness.js';

describe('determinism', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts: corpusScripts, tools: corpusTools, maxCachedWorkflows: 0 });
  });
  afterAll(() => keel?.stop());

  it('a run with every feature completes on a worker that replays every workflow task, and its history replays', async () => {
    const h = await everyFeature(keel, `determinism-${Date.now()}`);
    expect((await h.workflow.describe()).status.name).toBe('CANCELLED');
    const messages = await h.allMessages();
    expect(messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'toolResult',
      'toolResult',
      'toolResult',
      'assistant',
      'toolResult',
      'assistant',
      'user',
      'assistant',
      'toolResult',
      'toolResult',
      'assistant',
      'user',
      'assistant',
      'toolResult',
      'assistant',
      'toolResult',
      'user',
      'assistant',
    ]);
    const history = await h.workflow.fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history);
  }, 300_000);
});
