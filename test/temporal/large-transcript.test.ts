/**
 * Transcripts of any size (README "Large transcripts"), in the heavy project: a 2,000-turn scripted run with 50 KB tool
 * results (≈100 MB of transcript) completes; every run of its continue-as-new chain keeps its history under 10 MB
 * (the carried transcript goes to external storage by reference); `allMessages()` returns all of them (the prompt, 2,000 tool calls and results, the closing reply: 4,002).
 * `KEEL_LARGE_TURNS` scales it down for a quick local check.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { historyText, startKeel, type Keel } from './harness.js';

const TURNS = Number(process.env.KEEL_LARGE_TURNS ?? 2000);
let produced = 0;
const blob = defineTool({
  name: 'blob',
  description: 'Returns 50 KB of text.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [{ type: 'text', text: `${++produced}:`.padEnd(50 * 1024, 'x') }] }),
});

let keel: Keel;
const dir = mkdtempSync(join(tmpdir(), 'keel-large-payloads-'));
beforeAll(async () => {
  const rules = [
    { match: `toolResult:blob ${TURNS}:`, text: 'all done' },
    { toolCalls: [{ name: 'blob', arguments: {} }] },
  ];
  keel = await startKeel({ scripts: { large: { rules } }, tools: [blob], payloadStorage: { dir } });
});
afterAll(async () => {
  await keel?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it(`a ${TURNS}-turn run with 50 KB tool results completes; each run of the chain has history < 10 MB`, async () => {
  const started = Date.now();
  const h = await keel.start({ model: 'scripted/large', prompt: 'go', tools: ['blob'], maxTurns: 100_000 });
  // TURNS tool turns, then the closing reply: the prompt, TURNS calls and results, the reply (2 × TURNS + 2 messages)
  const r = await h.result();
  expect(r.status).toBe('completed');
  expect(r.turns).toBe(TURNS + 1);
  expect(r.finalText).toBe('all done');
  const all = await h.allMessages();
  expect(all).toHaveLength(2 * TURNS + 2);
  const transcriptBytes = Buffer.byteLength(JSON.stringify(all));
  expect(transcriptBytes).toBeGreaterThan(TURNS * 50 * 1024);
  const client = keel.client.client;
  const sizes: number[] = [];
  for await (const wf of client.workflow.list({ query: `WorkflowId = '${h.workflow.workflowId}'` })) {
    sizes.push(Buffer.byteLength(historyText(await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory())));
  }
  expect(sizes.length).toBe((await h.state()).continuedAsNew + 1);
  expect(Math.max(...sizes)).toBeLessThan(10 * 1024 * 1024);
  const total = sizes.reduce((a, b) => a + b, 0);
  console.log(
    `[large] ${TURNS} turns in ${((Date.now() - started) / 1000).toFixed(0)} s: transcript ${(transcriptBytes / 1048576).toFixed(1)} MB, ` +
      `${sizes.length} runs, history ${(total / 1048576).toFixed(1)} MB in all (largest run ${(Math.max(...sizes) / 1048576).toFixed(1)} MB), ${Math.round(total / TURNS)} B per turn`,
  );
}, 1_800_000);
