/**
 * Status is truthful: a session whose last agent run ended with a model error reports `failed` (state, KeelStatus,
 * `keel status` exit code 1) and ends Failed; current details are republished when a model call or a tool starts and
 * ends.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { WorkflowFailedError } from '@temporalio/client';
import { type ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { gate, startKeel, until, workflowTaskFailures, type Keel } from './harness.js';

const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));
let release = gate();
let holding = 0;
const hold = defineTool({
  name: 'hold',
  description: 'Waits for the test.',
  parameters: { type: 'object', properties: {} },
  execute: async () => {
    holding += 1;
    await release.promise;
    return { content: [{ type: 'text', text: 'held' }] };
  },
});

const scripts = {
  broken: {
    rules: [
      { match: 'retry', text: 'better now' },
      { fail: { message: 'provider down', type: 'ModelError.Server', retryable: false } },
    ],
  },
  tool: {
    rules: [{ match: 'toolResult:hold', text: 'done' }, { toolCalls: [{ id: 'h-1', name: 'hold', arguments: {} }] }],
  },
  // about 4 s of streaming: long enough to read the details while the call runs
  slow: {
    rules: [{ text: 'a reply streamed slowly, chunk by chunk, so that the call lasts a while', chunkDelayMs: 400 }],
  },
};

function keelStatus(keel: Keel, id: string): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(
    process.execPath,
    [BIN, '--address', inject('temporalAddress'), '--task-queue', keel.taskQueue, 'status', id, '--json'],
    {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout })));
}

describe('status is truthful', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, tools: [hold] });
  });
  afterAll(() => keel?.stop());

  it('a session whose model calls fail shows failed in state, KeelStatus and keel status, and ends Failed', async () => {
    const h = await keel.start({ model: 'scripted/broken', prompt: 'go', mode: 'session' });
    await until(async () => (await h.state()).status === 'failed', 20_000, 'failed');
    expect((await h.state()).lastError).toBe('provider down');
    const search = `KeelStatus="failed" AND WorkflowId="${h.workflowId}"`;
    await until(
      async () => {
        for await (const _ of keel.client.client.workflow.list({ query: search })) return true;
        return false;
      },
      20_000,
      'KeelStatus failed',
    );
    const idle = await keelStatus(keel, h.workflowId);
    expect(idle.code).toBe(1);
    expect(JSON.parse(idle.stdout)).toMatchObject({ status: 'failed', temporalStatus: 'running' });

    // a later run that succeeds makes the session waiting again
    await h.followUp('retry');
    await until(async () => (await h.state()).status === 'waiting', 20_000, 'waiting');
    expect((await h.state()).lastError).toBeUndefined();
    await h.followUp('go on');
    await until(
      async () => (await h.state()).status === 'failed' && (await h.state()).turns === 3,
      20_000,
      'failed again',
    );

    await h.end();
    const err = await h.workflow.result().catch((e) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(((err as WorkflowFailedError).cause as ApplicationFailure).type).toBe('AgentRunFailed');
    expect((await keelStatus(keel, h.workflowId)).code).toBe(1);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('current details show the running tool while it runs, and drop it when it ends', async () => {
    release = gate();
    holding = 0;
    const h = await keel.start({ model: 'scripted/tool', prompt: 'go', tools: ['hold'] });
    await until(() => holding === 1, 20_000, 'tool running');
    const details = async () =>
      (await h.workflow.query<{ currentDetails: string }>('__temporal_workflow_metadata')).currentDetails;
    await until(
      async () => /running: hold since \d\d:\d\d:\d\d UTC/.test(await details()),
      20_000,
      'details name the tool',
    );
    release.open();
    await h.result();
    expect(await details()).not.toContain('running:');
  });

  it('current details show the model call while it runs, and drop it when it ends', async () => {
    const h = await keel.start({ model: 'scripted/slow', prompt: 'go' });
    const details = async () =>
      (await h.workflow.query<{ currentDetails: string }>('__temporal_workflow_metadata')).currentDetails;
    await until(
      async () => /calling scripted\/slow since \d\d:\d\d:\d\d UTC/.test(await details()),
      20_000,
      'details name the model call',
    );
    expect((await h.result()).status).toBe('completed');
    expect(await details()).not.toContain('calling ');
  });
});
