/**
 * Transcripts of any size (README "Large transcripts"), in the heavy project: a 2,000-turn scripted run with 50 KB tool
 * results (≈100 MB of transcript) completes; every run of its continue-as-new chain keeps its history under 10 MB
 * (the carried transcript goes to external storage by reference) and, past the first, reaches 8 MiB before it continues
 * (the carry is larger than the history it would shed); `allMessages()` returns all of them (the prompt,
 * 2,000 tool calls and results, the closing reply: 4,002). The run and its measurement are bench/large-run.ts, shared
 * with the bench's `large` section. `KEEL_LARGE_TURNS` scales it down for a quick local check.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  describeLargeRun,
  LARGE_RESULT_BYTES,
  LARGE_SCRIPT,
  largeRunFixture,
  runLarge,
} from '../../bench/large-run.js';
import { startKeel, type Keel } from './harness.js';

const TURNS = Number(process.env.KEEL_LARGE_TURNS ?? 2000);

let keel: Keel;
const dir = mkdtempSync(join(tmpdir(), 'keel-large-payloads-'));
beforeAll(async () => {
  const { tool, script } = largeRunFixture(TURNS);
  keel = await startKeel({ scripts: { [LARGE_SCRIPT]: script }, tools: [tool], payloadStorage: { dir } });
});
afterAll(async () => {
  await keel?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it(`a ${TURNS}-turn run with 50 KB tool results completes; each run of the chain has history < 10 MB`, async () => {
  const { handle, result, figures } = await runLarge(keel.client, TURNS);
  // TURNS tool turns, then the closing reply: the prompt, TURNS calls and results, the reply (2 × TURNS + 2 messages)
  expect(result.status).toBe('completed');
  expect(result.turns).toBe(TURNS + 1);
  expect(result.finalText).toBe('all done');
  expect(result.newMessages).toHaveLength(2 * TURNS + 2);
  const all = await handle.allMessages();
  expect(all).toHaveLength(2 * TURNS + 2);
  expect(figures.transcriptBytes).toBeGreaterThan(TURNS * LARGE_RESULT_BYTES);
  expect(figures.runs).toBe((await handle.state()).continuedAsNew + 1);
  expect(figures.largestRunBytes).toBeLessThan(10 * 1024 * 1024);
  // Temporal suggests continuing at 4 MB of history; a run whose transcript to carry is larger than its own history
  // continues at continueAsNewAfterBytes (8 MiB) instead: every run between the first and the last reached it
  const middle = figures.historyBytes.slice(1, -1);
  expect(middle.filter((bytes) => bytes < 8 * 1024 * 1024)).toEqual([]);
  console.log(`[large] ${describeLargeRun(figures)}`);
}, 1_800_000);
