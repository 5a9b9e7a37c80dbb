/**
 * Keel as a worker plugin (worker/plugin.ts): a service's own worker — its own workflows module and activity — with
 * `keelPlugin()` added runs both its workflow and a Keel agent run.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { scriptedModel } from '../../activities/model/scripted.js';
import { keelPlugin } from '../../worker/plugin.js';
import { quietRuntime } from './harness.js';

const SERVICE_WORKFLOWS = fileURLToPath(new URL('./fixtures/service-workflows.ts', import.meta.url));

describe('keelPlugin', () => {
  it("runs next to a service's own workflows and activities on one worker", async () => {
    quietRuntime();
    const address = inject('temporalAddress');
    const taskQueue = `plugin-${randomUUID()}`;
    const connection = await NativeConnection.connect({ address });
    const worker = await Worker.create({
      connection,
      taskQueue,
      workflowsPath: SERVICE_WORKFLOWS,
      activities: { shout: async (text: string) => text.toUpperCase() },
      plugins: [
        keelPlugin({ models: { scripted: scriptedModel({ hi: { rules: [{ text: 'Keel inside the service' }] } }) } }),
      ],
    });
    const running = worker.run();
    const clientConnection = await Connection.connect({ address });
    try {
      const own = new Client({ connection: clientConnection }).workflow.execute('greetWorkflow', {
        taskQueue,
        workflowId: `greet-${randomUUID()}`,
        args: ['service'],
      });
      const keel = new AgentClient(new Client({ connection: clientConnection }), taskQueue);
      const run = (await keel.start({ model: 'scripted/hi', prompt: 'hi' })).result();
      expect(await own).toBe('HELLO SERVICE!');
      const r = await run;
      expect(r.status).toBe('completed');
      expect(r.newMessages.at(-1)).toMatchObject({
        role: 'assistant',
        content: [{ type: 'text', text: 'Keel inside the service' }],
      });
    } finally {
      worker.shutdown();
      await running;
      await connection.close();
      await clientConnection.close();
    }
  });
});
