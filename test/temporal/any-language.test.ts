/**
 * Any-language start (docs/architecture.md#run-input-and-result): a run started with the `temporal` CLI binary — no TypeScript client — with
 * one JSON argument, read back with `temporal workflow result`; the published JSON Schemas (schemas/) describe both.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ensureTemporalCli } from '../../scripts/temporal-cli.mjs';
import { startKeel, workflowTaskFailures, type Keel } from './harness.js';

const SCHEMAS = fileURLToPath(new URL('../../schemas/', import.meta.url));
const schema = (name: string) => JSON.parse(readFileSync(join(SCHEMAS, name), 'utf8')) as Record<string, unknown>;

describe('starting runs from any language (the temporal CLI)', () => {
  let k: Keel;
  let temporal: (args: string[]) => Promise<{ code: number; stdout: string; stderr: string; ms: number }>;
  const ajv = new Ajv({ allErrors: true, strict: false });
  const validInput = ajv.compile(schema('agent-run-input.json')); // also what agent-batch-input.json refers to
  const validResult = ajv.compile(schema('agent-run-result.json'));
  const validBatchInput = ajv.compile(schema('agent-batch-input.json'));

  beforeAll(async () => {
    const bin = await ensureTemporalCli({ log: () => undefined });
    k = await startKeel({
      scripts: {
        polyglot: {
          rules: [
            { match: 'break', text: 'no', stopReason: 'error', errorMessage: 'scripted failure' },
            { match: 'more', text: 'More, as asked.' },
            { text: 'Triaged.', usage: { input: 5, output: 3, totalTokens: 8 } },
          ],
        },
      },
    });
    temporal = (args) =>
      new Promise((resolve) => {
        const began = Date.now();
        execFile(
          bin,
          [...args, '--address', k.address, '--namespace', 'default'],
          { timeout: 60_000 },
          (err, stdout, stderr) =>
            resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr, ms: Date.now() - began }),
        );
      });
  });
  afterAll(() => k?.stop());

  it('`temporal workflow start --type agentWorkflow --input {…}` runs; `temporal workflow result` returns an AgentRunResult', async () => {
    const id = `polyglot-${randomUUID()}`;
    const input = { model: 'scripted/polyglot', prompt: 'Triage ticket 42', metadata: { ticket: 42 } };
    expect(validInput(input)).toBe(true);
    const started = await temporal([
      'workflow',
      'start',
      '--type',
      'agentWorkflow',
      '--task-queue',
      k.taskQueue,
      '--workflow-id',
      id,
      '--input',
      JSON.stringify(input),
    ]);
    expect(started.code, started.stderr).toBe(0);
    const r = await temporal(['workflow', 'result', '--workflow-id', id, '-o', 'json']);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.status).toBe('COMPLETED');
    expect(validResult(out.result), JSON.stringify(validResult.errors)).toBe(true);
    expect(out.result).toMatchObject({
      status: 'completed',
      finalText: 'Triaged.',
      turns: 1,
      usage: { totalTokens: 8 },
    });
    expect(out.result.newMessages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
  });

  it('signals and queries by name: a session driven entirely from the temporal CLI', async () => {
    const id = `polyglot-session-${randomUUID()}`;
    const input = { model: 'scripted/polyglot', prompt: 'hello', mode: 'session' };
    expect(
      (
        await temporal([
          'workflow',
          'start',
          '--type',
          'agentWorkflow',
          '--task-queue',
          k.taskQueue,
          '--workflow-id',
          id,
          '--input',
          JSON.stringify(input),
        ])
      ).code,
    ).toBe(0);
    const state = async () =>
      JSON.parse((await temporal(['workflow', 'query', '--workflow-id', id, '--type', 'state', '-o', 'json'])).stdout)
        .queryResult[0];
    await vi.waitFor(async () => expect((await state()).status).toBe('waiting'), { timeout: 30_000, interval: 100 });
    expect(
      (await temporal(['workflow', 'signal', '--workflow-id', id, '--name', 'followUp', '--input', '"tell me more"']))
        .code,
    ).toBe(0);
    await vi.waitFor(async () => expect((await state()).runs).toBe(2), { timeout: 30_000, interval: 100 });
    expect((await temporal(['workflow', 'signal', '--workflow-id', id, '--name', 'end'])).code).toBe(0);
    const r = JSON.parse((await temporal(['workflow', 'result', '--workflow-id', id, '-o', 'json'])).stdout);
    expect(validResult(r.result), JSON.stringify(validResult.errors)).toBe(true);
    expect(r.result).toMatchObject({ status: 'completed', finalText: 'More, as asked.', turns: 2 });
  });

  it('a malformed input started the same way fails at once, naming every bad field', async () => {
    const id = `polyglot-bad-${randomUUID()}`;
    const input = { model: 'gpt', maxTurns: 0, mode: 'forever', bogus: true };
    expect(validInput(input)).toBe(false); // the published schema says so before sending anything, too
    const started = await temporal([
      'workflow',
      'start',
      '--type',
      'agentWorkflow',
      '--task-queue',
      k.taskQueue,
      '--workflow-id',
      id,
      '--input',
      JSON.stringify(input),
    ]);
    expect(started.code, started.stderr).toBe(0);
    const r = await temporal(['workflow', 'result', '--workflow-id', id, '-o', 'json']);
    expect(r.code).not.toBe(0);
    expect(r.ms).toBeLessThan(15_000);
    const failure = JSON.parse(r.stdout).closeEvent.workflowExecutionFailedEventAttributes.failure;
    expect(failure.applicationFailureInfo).toMatchObject({ type: 'InvalidAgentInput', nonRetryable: true });
    expect(failure.message).toBe(
      'Invalid AgentRunInput: bogus: unknown field; model: must be "provider/model-id", e.g. "anthropic/claude-sonnet-4-5" or "scripted/demo"; ' +
        'maxTurns: must be >= 1; mode: must be one of "task", "session"',
    );
    expect(failure.applicationFailureInfo.details[0]).toEqual([
      'bogus: unknown field',
      'model: must be "provider/model-id", e.g. "anthropic/claude-sonnet-4-5" or "scripted/demo"',
      'maxTurns: must be >= 1',
      'mode: must be one of "task", "session"',
    ]);
    // the human-readable form names the fields too
    const plain = await temporal(['workflow', 'result', '--workflow-id', id]);
    expect(plain.stdout).toContain('bogus: unknown field');
    expect(plain.stdout).toContain('maxTurns: must be >= 1');
    expect(await workflowTaskFailures(k.client.client.workflow.getHandle(id))).toEqual([]);
  });

  it('a failed run (AgentRunFailed) carries an AgentRunResult in its failure details', async () => {
    const id = `polyglot-fail-${randomUUID()}`;
    await temporal([
      'workflow',
      'start',
      '--type',
      'agentWorkflow',
      '--task-queue',
      k.taskQueue,
      '--workflow-id',
      id,
      '--input',
      JSON.stringify({ model: 'scripted/polyglot', prompt: 'break' }),
    ]);
    const r = await temporal(['workflow', 'result', '--workflow-id', id, '-o', 'json']);
    const failure = JSON.parse(r.stdout).closeEvent.workflowExecutionFailedEventAttributes.failure;
    expect(failure.applicationFailureInfo.type).toBe('AgentRunFailed');
    const result = failure.applicationFailureInfo.details[0];
    expect(validResult(result), JSON.stringify(validResult.errors)).toBe(true);
    expect(result).toMatchObject({ status: 'failed', error: 'scripted failure', turns: 1 });
  });

  it('a batch started from the temporal CLI (agentBatchWorkflow) returns its summary', async () => {
    const id = `polyglot-batch-${randomUUID()}`;
    const input = {
      tasks: Array.from({ length: 6 }, (_, i) => ({
        model: 'scripted/polyglot',
        prompt: i === 2 ? 'break' : `ticket ${i}`,
      })),
      concurrency: 3,
    };
    expect(validBatchInput(input), JSON.stringify(validBatchInput.errors)).toBe(true);
    expect(
      (
        await temporal([
          'workflow',
          'start',
          '--type',
          'agentBatchWorkflow',
          '--task-queue',
          k.taskQueue,
          '--workflow-id',
          id,
          '--input',
          JSON.stringify(input),
        ])
      ).code,
    ).toBe(0);
    const r = JSON.parse((await temporal(['workflow', 'result', '--workflow-id', id, '-o', 'json'])).stdout);
    expect(r.result).toMatchObject({
      total: 6,
      done: 5,
      failed: 1,
      tokens: 40,
      failures: [{ index: 2, workflowId: `${id}-2`, status: 'failed', error: 'scripted failure' }],
    });
    const progress = JSON.parse(
      (await temporal(['workflow', 'query', '--workflow-id', id, '--type', 'progress', '-o', 'json'])).stdout,
    ).queryResult[0];
    expect(progress).toMatchObject({ total: 6, done: 5, failed: 1, running: 0, queued: 0, phase: 'finished' });
    const child = JSON.parse((await temporal(['workflow', 'result', '--workflow-id', `${id}-4`, '-o', 'json'])).stdout);
    expect(child.result).toMatchObject({ status: 'completed', finalText: 'Triaged.' });
  });
});
