/**
 * Issue 10 item 9 (activity and client side): failures that would fail the same way on every attempt end the run at
 * once instead of being retried — a provider's `TypeError`, a scripted rules file that is not valid JSON — and a
 * `keel start --id` that clashes with an existing run exits 2 like other usage errors.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { type ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scriptedModel } from '../../activities/model/scripted.js';
import type { ModelProvider } from '../../activities/model/provider.js';
import { startKeel, type Keel } from './harness.js';
import { failuresOf } from './history-helpers.js';
import { keelCli } from './cli-child.js';

const { EventType } = temporal.api.enums.v1;

describe('fail fast', () => {
  let keel: Keel;
  let dir: string;
  let attempts = 0;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'keel-failfast-'));
    writeFileSync(join(dir, 'broken.json'), '{"rules": [ {"text": "hi"} ');
    writeFileSync(join(dir, 'shapeless.json'), '{"answers": []}');
    const buggy: ModelProvider = {
      async stream() {
        attempts++;
        const config = undefined as unknown as { baseUrl: string };
        return config.baseUrl as never; // TypeError: Cannot read properties of undefined
      },
    };
    keel = await startKeel({
      models: { buggy, scripted: scriptedModel({ ok: { rules: [{ text: 'ok' }] } }, { baseDir: dir }) },
    });
  });
  afterAll(async () => {
    await keel?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a provider's TypeError is not retried: one attempt, ModelError.ProgrammingError naming the TypeError", async () => {
    const h = await keel.start({ model: 'buggy/any', prompt: 'hi' });
    const outcome = await h.result().catch((e: unknown) => e);
    expect(attempts).toBe(1);
    expect(await failuresOf(h)).toEqual({
      activities: [
        ["TypeError: Cannot read properties of undefined (reading 'baseUrl')", 'ModelError.ProgrammingError', true],
      ],
      workflowTasksFailed: 0,
    });
    expect(outcome).toBeDefined(); // the run ended (how the workflow reports a model failure is its own contract)
  });

  for (const [file, problem] of [
    ['broken.json', /^Scripted rules file .*broken\.json is not valid JSON: /],
    [
      'shapeless.json',
      /^Scripted rules file .*shapeless\.json must hold \{"rules": \[\.\.\.\]\} or \{"replies": \[\.\.\.\]\}$/,
    ],
  ] as const) {
    it(`a rules file ${file} fails the run at start as InvalidAgentInput, no model call, no retries`, async () => {
      const h = await keel.start({ model: `scripted/${file}`, prompt: 'hi' });
      const err = (await h.result().catch((e: unknown) => e)) as WorkflowFailedError;
      expect(err).toBeInstanceOf(WorkflowFailedError);
      const cause = err.cause as ApplicationFailure;
      expect(cause.type).toBe('InvalidAgentInput');
      expect(cause.message.startsWith('Invalid AgentRunInput: model: ')).toBe(true);
      expect(cause.message.slice('Invalid AgentRunInput: model: '.length)).toMatch(problem);
      const history = await h.workflow.fetchHistory();
      const types = history.events!.map((e) => e.eventType);
      expect(
        types.filter(
          (t) => t === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED || t === EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
        ),
      ).toEqual([]);
      expect(
        history
          .events!.filter((e) => e.activityTaskScheduledEventAttributes)
          .map((e) => e.activityTaskScheduledEventAttributes!.activityType!.name),
      ).toEqual(['startRun']);
    });
  }

  it('`keel start --id <existing>` exits 2 with a usage message', async () => {
    const id = `clash-${randomUUID()}`;
    const base = [
      '--address',
      keel.address,
      '--task-queue',
      keel.taskQueue,
      'start',
      'hello',
      '--model',
      'scripted/ok',
      '--mode',
      'session',
      '--id',
      id,
    ];
    const first = await keelCli(base);
    expect(first.code, first.stderr).toBe(0);
    const second = await keelCli(base);
    expect({ code: second.code, stderr: second.stderr.trim().split('\n')[0] }).toEqual({
      code: 2,
      stderr: `keel: A run with id ${id} already exists; pick another --id.`,
    });
    await keel.client.getHandle(id).end();
  });
});
