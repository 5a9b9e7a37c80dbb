/**
 * Graded batches and variants (README "Graded batches", issue 27 items 2 and 4): each built-in grader on a passing and
 * a failing result, a custom grader activity (its model usage counted in the batch), a grader that throws (a grading
 * error, not a task failure), pass@3 over a model that alternates, a worker killed during grading (counted once), and
 * two variants on 20 tasks with one shared budget.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineGrader } from '../../activities/graders.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import { scriptedModel } from '../../activities/model/scripted.js';
import type { ModelProvider } from '../../activities/model/provider.js';
import { AgentClient } from '../../client/agent-client.js';
import { startBatchWorkflow } from '../../client/batch-client.js';
import {
  progressQuery,
  resultsQuery,
  type AgentBatchResult,
  type BatchTaskResult,
} from '../../common/batch-definitions.js';
import type { BatchTask } from '../../common/grading.js';
import { emptyUsage, messageText, type AssistantMessage } from '../../common/messages.js';
import type { AgentRunInput } from '../../common/run.js';
import { startKeel, workflowTaskFailures, type Keel } from './harness.js';

const GRADER_WORKER = fileURLToPath(new URL('./fixtures/grader-worker.ts', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const processes: ChildProcess[] = [];
afterAll(() => {
  for (const c of processes) if (c.exitCode === null) c.kill('SIGKILL');
});

/** `alt/<x>`: per prompt, the n-th call answers `right` when n is even for prompt `a`, never for `b`, always for `c`. */
function alternating(): ModelProvider {
  const calls = new Map<string, number>();
  return {
    async stream(request) {
      const prompt = messageText(request.messages[0]);
      const n = calls.get(prompt) ?? 0;
      calls.set(prompt, n + 1);
      const right = prompt === 'c' || (prompt === 'a' && n % 2 === 0);
      const reply: AssistantMessage = {
        role: 'assistant',
        content: [{ type: 'text', text: right ? 'right' : 'wrong' }],
        api: 'alt',
        provider: 'alt',
        model: request.modelId,
        usage: emptyUsage(),
        stopReason: 'stop',
        timestamp: Date.now(),
      };
      return reply;
    },
  };
}

const usage = (tokens: number, cost: number) => ({ totalTokens: tokens, cost: { total: cost } });
const scripts = {
  g: {
    rules: [
      { match: 'toolResult:lookup', text: 'looked up' },
      { match: 'say-json', text: '{"n": 3}' },
      { match: 'call-tool', toolCalls: [{ name: 'lookup', arguments: {} }] },
      { text: 'yes' },
    ],
  },
  va: {
    rules: [
      { match: 'even', text: 'ok', usage: usage(10, 0.001) },
      { text: 'nope', usage: usage(10, 0.001) },
    ],
  },
  vb: { rules: [{ text: 'ok', usage: usage(20, 0.002) }] },
};
const lookup = defineTool({
  name: 'lookup',
  description: 'Looks something up.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [{ type: 'text', text: 'found' }] }),
});
const judge = defineGrader({
  name: 'judge',
  grade: ({ result, variant, repeat }) => ({
    score: 0.5,
    pass: result.finalText === 'yes' && variant === undefined && repeat === 0,
    reason: 'half right',
    usage: { tokens: 7, cost: 0.01, modelCalls: 1 },
  }),
});
const boom = defineGrader({
  name: 'boom',
  grade: () => {
    throw new Error('judge unavailable');
  },
});

let keel: Keel;
beforeAll(async () => {
  const models = { scripted: scriptedModel(scripts), alt: alternating() };
  keel = await startKeel({ models, tools: [lookup], graders: [judge, boom] });
});
afterAll(async () => keel?.stop());

async function runBatch(
  tasks: BatchTask[],
  o: Parameters<typeof startBatchWorkflow>[3] = {},
): Promise<{ result: AgentBatchResult; results: BatchTaskResult[]; id: string }> {
  const id = `grade-${randomUUID()}`;
  const handle = await startBatchWorkflow(keel.client.client, keel.taskQueue, tasks as AgentRunInput[], {
    batchId: id,
    ...o,
  });
  const result = (await handle.result()) as AgentBatchResult;
  const { results } = await handle.query(resultsQuery, {});
  expect(await workflowTaskFailures(handle)).toEqual([]);
  return { result, results, id };
}

const task = (prompt: string, grader: string | undefined, expected: unknown): BatchTask => ({
  prompt,
  model: 'scripted/g',
  tools: ['lookup'],
  ...(grader ? { grader } : {}),
  expected,
});

describe('graders', () => {
  it('judges each built-in on a passing and a failing result, a custom grader, and a throwing one', async () => {
    const schema = { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } };
    const { result, results, id } = await runBatch([
      task('say-yes', undefined, 'yes'),
      task('say-yes', 'exact', 'no'),
      task('say-json', 'includes', ['"n"', '3']),
      task('say-json', 'includes', 'x'),
      task('say-yes', 'regex', '/^Y/i'),
      task('say-yes', 'regex', '^no$'),
      task('say-json', 'json-schema', schema),
      task('say-json', 'json-schema', { type: 'object', required: ['m'] }),
      task('call-tool', 'tool-called', 'lookup'),
      task('say-yes', 'tool-called', 'lookup'),
      task('say-yes', 'judge', undefined),
      task('say-yes', 'boom', undefined),
      task('say-yes', 'nope', 'yes'),
    ]);
    expect(results.map((r) => [r.workflowId, r.status, r.grade])).toEqual([
      [`${id}-0`, 'completed', { pass: true, score: 1, reason: 'exact match' }],
      [
        `${id}-1`,
        'completed',
        { pass: false, score: 0, reason: 'expected "no", got "yes" (compared with surrounding whitespace trimmed)' },
      ],
      [`${id}-2`, 'completed', { pass: true, score: 1, reason: 'includes every expected text' }],
      [`${id}-3`, 'completed', { pass: false, score: 0, reason: 'missing "x"' }],
      [`${id}-4`, 'completed', { pass: true, score: 1, reason: 'matches /^Y/i' }],
      [`${id}-5`, 'completed', { pass: false, score: 0, reason: 'no match for /^no$/' }],
      [`${id}-6`, 'completed', { pass: true, score: 1, reason: 'valid against the schema' }],
      [`${id}-7`, 'completed', { pass: false, score: 0, reason: "answer must have required property 'm'" }],
      [`${id}-8`, 'completed', { pass: true, score: 1, reason: 'called lookup' }],
      [`${id}-9`, 'completed', { pass: false, score: 0, reason: 'not called: lookup (called: none)' }],
      [`${id}-10`, 'completed', { pass: true, score: 0.5, reason: 'half right' }],
      [`${id}-11`, 'completed', { pass: false, score: 0, error: 'grader boom threw: judge unavailable' }],
      [
        `${id}-12`,
        'completed',
        {
          pass: false,
          score: 0,
          error:
            'unknown grader "nope": the built-ins are exact, includes, regex, json-schema, tool-called; register others on the worker with defineGrader (graders: [...])',
        },
      ],
    ]);
    // a grading error is not a task failure; the custom grader's model usage is the batch's
    expect(result).toMatchObject({ total: 13, done: 13, failed: 0, tokens: 7, cost: 0.01 });
    expect(result.grading).toEqual({
      graded: 11,
      passed: 6,
      errors: 2,
      passRate: 0.545455,
      meanScore: 0.5,
      passAtK: { k: 1, tasks: 11, passed: 6, rate: 0.545455 },
      costPerPass: 0.001667,
      graderTokens: 7,
      graderCost: 0.01,
    });
  });

  it('repeat: 3 runs each task three times (children -r<j>) for pass@3 over a model that alternates', async () => {
    const t = (prompt: string): BatchTask => ({ prompt, model: 'alt/x', expected: 'right' });
    // continuing-as-new every two starts: verdicts and graded running tasks are carried
    const { result, results, id } = await runBatch([t('a'), t('b'), t('c')], {
      repeat: 3,
      concurrency: 1,
      continueAsNewAfterTasks: 2,
    });
    expect(results.map((r) => [r.workflowId, r.task, r.repeat, r.grade?.pass])).toEqual([
      [`${id}-0-r0`, 0, 0, true],
      [`${id}-0-r1`, 0, 1, false],
      [`${id}-0-r2`, 0, 2, true],
      [`${id}-1-r0`, 1, 0, false],
      [`${id}-1-r1`, 1, 1, false],
      [`${id}-1-r2`, 1, 2, false],
      [`${id}-2-r0`, 2, 0, true],
      [`${id}-2-r1`, 2, 1, true],
      [`${id}-2-r2`, 2, 2, true],
    ]);
    expect(result.total).toBe(9);
    expect(result.continuedAsNew).toBeGreaterThanOrEqual(4);
    expect(result.grading).toMatchObject({
      graded: 9,
      passed: 5,
      errors: 0,
      passRate: 0.555556,
      meanScore: 0.555556,
      passAtK: { k: 3, tasks: 3, passed: 2, rate: 0.666667 },
      costPerPass: 0,
    });
  });

  it('a worker killed with SIGKILL while grading: the grading runs again on another worker and is counted once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-grade-'));
    const effects = join(dir, 'grades.log');
    writeFileSync(effects, '');
    const taskQueue = `grade-kill-${randomUUID()}`;
    const first = await graderWorker(taskQueue, effects, true);
    const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
    try {
      const id = `grade-kill-${randomUUID()}`;
      const tasks = [0, 1, 2].map((i) => ({ prompt: `t${i}`, model: 'scripted/hello', grader: 'slow' }));
      const handle = await startBatchWorkflow(client.client, taskQueue, tasks, {
        batchId: id,
        graderHeartbeatSeconds: 2,
      });
      // every grading started on the first worker, which hangs in it: kill it there
      await expect
        .poll(() => readFileSync(effects, 'utf8').split('\n').filter(Boolean).length, { timeout: 30_000 })
        .toBe(3);
      await kill(first);
      await graderWorker(taskQueue, effects, false);
      const result = (await handle.result()) as AgentBatchResult;
      const lines = readFileSync(effects, 'utf8').split('\n').filter(Boolean).sort();
      // each grading ran twice (once per worker), each attempt's verdict recorded once
      expect(lines.map((l) => l.replace(/ pid \d+/, ''))).toEqual(
        [0, 0, 1, 1, 2, 2].map((i, k) => `grade ${id}-${i} attempt ${(k % 2) + 1}`).sort(),
      );
      expect(result.grading).toMatchObject({ graded: 3, passed: 3, errors: 0, passAtK: { k: 1, tasks: 3, passed: 3 } });
      const { results } = await handle.query(resultsQuery, {});
      expect(results.map((r) => r.grade)).toEqual(
        [0, 1, 2].map(() => ({ pass: true, score: 1, reason: 'judged on attempt 2' })),
      );
    } finally {
      await client.close();
    }
  });
});

describe('variants', () => {
  const tasks = Array.from({ length: 20 }, (_, i) => ({
    prompt: `${i % 2 === 0 ? 'even' : 'odd'} task ${i}`,
    model: 'scripted/unused',
    expected: 'ok',
  }));
  const variants = [
    { name: 'a', model: 'scripted/va' },
    { name: 'b', model: 'scripted/vb', systemPrompt: 'Be brief.' },
  ];

  it('runs each of 20 tasks once per variant (children <batchId>-<variant>-<index>): per-variant summary and disagreements', async () => {
    const { result, results, id } = await runBatch(tasks, { variants, concurrency: 8 });
    expect(results.slice(0, 4).map((r) => [r.workflowId, r.task, r.variant, r.grade?.pass])).toEqual([
      [`${id}-a-0`, 0, 'a', true],
      [`${id}-b-0`, 0, 'b', true],
      [`${id}-a-1`, 1, 'a', false],
      [`${id}-b-1`, 1, 'b', true],
    ]);
    const child = await keel.client.client.workflow.getHandle(`${id}-b-3`).fetchHistory();
    const input = child.events?.[0].workflowExecutionStartedEventAttributes?.input?.payloads?.[0].data;
    // the variant's fields replace the task's; expected and grader stay with the batch
    expect(JSON.parse(Buffer.from(input!).toString())).toEqual({
      prompt: 'odd task 3',
      model: 'scripted/vb',
      systemPrompt: 'Be brief.',
    });
    const grading = (passed: number, cost: number, costPerPass: number) => ({
      graded: 20,
      passed,
      errors: 0,
      passRate: passed / 20,
      meanScore: passed / 20,
      passAtK: { k: 1, tasks: 20, passed, rate: passed / 20 },
      costPerPass,
      graderTokens: 0,
      graderCost: 0,
    });
    expect(result.variants).toEqual([
      {
        name: 'a',
        runs: 20,
        done: 20,
        failed: 0,
        tokens: 200,
        cost: 0.02,
        turns: 20,
        grading: grading(10, 0.02, 0.002),
      },
      {
        name: 'b',
        runs: 20,
        done: 20,
        failed: 0,
        tokens: 400,
        cost: 0.04,
        turns: 20,
        grading: grading(20, 0.04, 0.002),
      },
    ]);
    expect(result.disagreements).toEqual([1, 3, 5, 7, 9, 11, 13, 15, 17, 19]);
    expect(result).toMatchObject({ total: 40, done: 40, tokens: 600, cost: 0.06 });
  });

  it('one variant and no grader: the variant still replaces the task fields (they used to be ignored)', async () => {
    const plain = [0, 1].map((i) => ({ prompt: `odd task ${i}`, model: 'scripted/unused' }));
    const { result, results, id } = await runBatch(plain, { variants: [variants[1]] });
    expect(results.map((r) => [r.workflowId, r.task, r.variant, r.status])).toEqual([
      [`${id}-b-0`, 0, 'b', 'completed'],
      [`${id}-b-1`, 1, 'b', 'completed'],
    ]);
    const child = await keel.client.client.workflow.getHandle(`${id}-b-1`).fetchHistory();
    const input = child.events?.[0].workflowExecutionStartedEventAttributes?.input?.payloads?.[0].data;
    expect(JSON.parse(Buffer.from(input!).toString())).toEqual({
      prompt: 'odd task 1',
      model: 'scripted/vb',
      systemPrompt: 'Be brief.',
    });
    expect(result.variants?.map((v) => [v.name, v.runs, v.done, v.tokens])).toEqual([['b', 2, 2, 40]]);
  });

  it('AgentClient.startBatch takes tasks without a model when every variant names one (issue 33 item 20)', async () => {
    const bare = [0, 1].map((i) => ({ prompt: `even task ${i * 2}`, expected: 'ok' }));
    const batch = await keel.client.startBatch(bare, { batchId: `grade-${randomUUID()}`, variants });
    const result = await batch.result();
    expect(result.variants?.map((v) => [v.name, v.runs, v.done])).toEqual([
      ['a', 2, 2],
      ['b', 2, 2],
    ]);
    // a variant without a model still needs one on the task: named with the variant that lacks it
    await expect(
      keel.client.startBatch(bare, { variants: [variants[0], { name: 'c', systemPrompt: 'x' }] }),
    ).rejects.toThrow(
      'Invalid AgentRunInput: task 0: model: is required (variant c); task 1: model: is required (variant c)',
    );
  });

  it('one budget for both variants: the pool spent, the last runs of either variant are not started', async () => {
    const { result, results, id } = await runBatch(tasks, { variants, concurrency: 1, budget: { maxModelCalls: 30 } });
    const stopped = results.filter((r) => r.status === 'stopped');
    expect(stopped.map((r) => r.workflowId)).toEqual(
      [15, 16, 17, 18, 19].flatMap((i) => [`${id}-a-${i}`, `${id}-b-${i}`]),
    );
    expect(new Set(stopped.map((r) => r.error))).toEqual(
      new Set(['Budget exceeded: model calls 30 spent, 0 reserved of 30 (batch budget)']),
    );
    expect(result.variants?.map((v) => [v.name, v.grading?.graded, v.tokens])).toEqual([
      ['a', 15, 150],
      ['b', 15, 300],
    ]);
    const handle = keel.client.client.workflow.getHandle(id);
    expect((await handle.query(progressQuery)).budget?.spent).toBe(true);
  });

  it('keel batch --variant … --grade prints the grade table and writes variant and grade on each result line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-variants-'));
    const file = join(dir, 'tasks.jsonl');
    writeFileSync(
      file,
      tasks
        .slice(0, 4)
        .map((t) => JSON.stringify({ prompt: t.prompt, expected: 'ok' }))
        .join('\n'),
    );
    writeFileSync(join(dir, 'b.txt'), 'Be brief.');
    const out = join(dir, 'results.jsonl');
    const cli = spawn(
      process.execPath,
      [
        BIN,
        '--address',
        keel.address,
        '--task-queue',
        keel.taskQueue,
        'batch',
        file,
        '--variant',
        'a:model=scripted/va',
        '--variant',
        `b:model=scripted/vb,system=@${join(dir, 'b.txt')}`,
        '--grade',
        '--out',
        out,
      ],
      { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    processes.push(cli);
    let stdout = '';
    cli.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    cli.stderr!.on('data', (d: Buffer) => (stdout += d.toString()));
    const code = await new Promise<number | null>((resolve) => cli.on('close', resolve));
    expect(code, stdout).toBe(0);
    const table = stdout.split('\n').filter((l) => /^(variant|a |b |variants)/.test(l));
    expect(table.map((l) => l.replace(/ +\d+\.\ds$/, '  <s>'))).toEqual([
      'variant  runs  passed  pass rate      pass@1  mean score     cost  cost/pass  turns  duration',
      'a           4     2/4      50.0%   2/4 50.0%       0.500  $0.0040    $0.0020      4  <s>',
      'b           4     4/4     100.0%  4/4 100.0%       1.000  $0.0080    $0.0020      4  <s>',
      'variants disagree on tasks: 1, 3',
    ]);
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { variant: string; task: number; grade: { pass: boolean }; finalText: string });
    expect(lines.map((l) => [l.task, l.variant, l.finalText, l.grade.pass])).toEqual([
      [0, 'a', 'ok', true],
      [0, 'b', 'ok', true],
      [1, 'a', 'nope', false],
      [1, 'b', 'ok', true],
      [2, 'a', 'ok', true],
      [2, 'b', 'ok', true],
      [3, 'a', 'nope', false],
      [3, 'b', 'ok', true],
    ]);
  });
});

function graderWorker(taskQueue: string, effects: string, hang: boolean): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', GRADER_WORKER], {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      KEEL_TASK_QUEUE: taskQueue,
      KEEL_BUNDLE: inject('workflowBundlePath'),
      KEEL_SIDE_EFFECTS: effects,
      KEEL_HANG: hang ? '1' : '0',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  processes.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve(child));
    child.on('exit', (code) => reject(new Error(`grader worker exited with ${code}`)));
  });
}

function kill(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}
