/**
 * What a service using createAgentWorker prints (issue 20 items 13 and 15): nothing. No `Worker state changed` INFO
 * blocks (the worker installs a WARN logger when the application installed no Runtime), and no `could not make build …
 * current … Client already closed` when it stops before its build became current (shutdown stops those attempts before
 * it closes the connection). A shutdown right after run() returns too (it used to wait forever: the worker was not yet
 * RUNNING, so Worker.shutdown() was skipped).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SERVICE = fileURLToPath(new URL('./fixtures/plain-service.ts', import.meta.url));

function service(stop: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const id = randomUUID().slice(0, 8);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    KEEL_TASK_QUEUE: `plain-service-${id}`,
    KEEL_DEPLOYMENT: `plain-service-${id}`, // its own deployment: other tests' runs are never routed to it
    KEEL_BUILD_ID: `b-${id}`,
    KEEL_BUNDLE: inject('workflowBundlePath'),
    KEEL_STOP: stop,
  };
  delete env.KEEL_LOG_LEVEL;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', SERVICE],
      { cwd: ROOT, env, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('a service running a Keel worker', () => {
  it.each(['ready', '300', 'at-once'])(
    'prints nothing of its own when it starts and stops (stop: %s)',
    async (stop) => {
      const { code, stdout, stderr } = await service(stop);
      expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: 'stopped\n', stderr: '' });
    },
  );
});
