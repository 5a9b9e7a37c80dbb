/**
 * A run input nested thousands of levels deep (issue 20 item 15): `AgentClient.start` refuses it with
 * `InvalidAgentInputError` (was: `RangeError` from `JSON.stringify`), and a raw start from the temporal CLI fails the
 * workflow as `InvalidAgentInput` at once (no failing workflow task retried), in the same words.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidAgentInputError } from '../../client/agent-client.js';
import { ensureTemporalCli } from '../../scripts/temporal-cli.mjs';
import { startKeel, until, workflowTaskFailures, type Keel } from './harness.js';

/** `{ a: { a: … {} } }`, `levels` objects deep. */
function nested(levels: number): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let at = root;
  for (let i = 1; i < levels; i++) at = (at.a = {}) as Record<string, unknown>;
  return root;
}

describe('an input nested 6,000 levels deep', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts: { hi: { rules: [{ text: 'hello' }] } } });
  });
  afterAll(() => keel?.stop());

  it('AgentClient.start throws InvalidAgentInputError naming the field, before anything is sent', async () => {
    const err = await keel.start({ model: 'scripted/hi', prompt: 'hi', metadata: nested(6000) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(InvalidAgentInputError);
    expect((err as InvalidAgentInputError).errors).toEqual(['metadata: nested more than 256 levels deep']);
    // 256 levels still go
    const ok = await keel.start({ model: 'scripted/hi', prompt: 'hi', metadata: nested(255) });
    expect((await ok.result()).finalText).toBe('hello');
  });

  it('a raw start (temporal CLI) fails as InvalidAgentInput, no workflow task failure', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-deep-'));
    const file = join(dir, 'input.json');
    // written by hand: JSON.stringify cannot
    writeFileSync(
      file,
      `{"model":"scripted/hi","prompt":"hi","metadata":${'{"a":'.repeat(5999)}{}${'}'.repeat(5999)}}`,
    );
    const workflowId = `deep-${randomUUID()}`;
    const cli = await ensureTemporalCli();
    const out = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(
        cli,
        [
          ...['workflow', 'start', '--type', 'agentWorkflow', '--task-queue', keel.taskQueue],
          ...['--workflow-id', workflowId, '--input-file', file, '--address', keel.address],
        ],
        { timeout: 60_000 },
        (err, _stdout, stderr) => resolve({ code: err ? 1 : 0, stderr }),
      ),
    );
    expect(out.code, out.stderr).toBe(0);
    const h = keel.client.getHandle(workflowId);
    await until(async () => (await h.workflow.describe()).status.name !== 'RUNNING', 30_000, 'closed');
    expect((await h.workflow.describe()).status.name).toBe('FAILED');
    const err = (await h.workflow.result().catch((e: unknown) => e)) as { cause?: { message?: string; type?: string } };
    expect([err.cause?.type, err.cause?.message]).toEqual([
      'InvalidAgentInput',
      'Invalid AgentRunInput: metadata: nested more than 256 levels deep',
    ]);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });
});
