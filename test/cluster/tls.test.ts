/**
 * Connections over mutual TLS (`npm run test:cluster`): the cluster's second frontend requires a client certificate
 * signed by a self-signed test CA. A worker and an AgentClient connect with explicit TLS settings, the `keel` CLI with
 * an envconfig profile (temporal.toml), and a client without a certificate is refused.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { scriptedModel } from '../../activities/model/scripted.js';
import { connectOptions, resolveConnection, type TlsSettings } from '../../node-common/connection.js';
import { createAgentWorker, type AgentWorker } from '../../worker/create-worker.js';
import { quietRuntime } from '../temporal/harness.js';

const env = process.env;
if (!env.KEEL_TEST_TLS_ADDRESS)
  throw new Error('test/cluster needs a cluster with its mTLS frontend: run `npm run test:cluster`');
const address = env.KEEL_TEST_TLS_ADDRESS;
const tls: TlsSettings = {
  caCertPath: env.KEEL_TEST_TLS_CA,
  clientCertPath: env.KEEL_TEST_TLS_CERT,
  clientKeyPath: env.KEEL_TEST_TLS_KEY,
  serverName: env.KEEL_TEST_TLS_SERVER_NAME,
};
const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));

describe('mTLS frontend', () => {
  const taskQueue = `tls-${randomUUID()}`;
  let worker: AgentWorker;
  let running: Promise<void>;
  beforeAll(async () => {
    quietRuntime();
    worker = await createAgentWorker({
      address,
      tls,
      taskQueue,
      models: { scripted: scriptedModel({ hi: { rules: [{ text: 'hello over mTLS' }] } }) },
      workflowBundle: { codePath: inject('workflowBundlePath') },
    });
    running = worker.run();
  });
  afterAll(async () => {
    await worker?.shutdown();
    await running;
  });

  it('a worker and an AgentClient with CA, client certificate and server name run an agent', async () => {
    const client = await AgentClient.connect({ address, tls, taskQueue });
    try {
      const r = await (await client.start({ model: 'scripted/hi', prompt: 'hi' })).result();
      expect(r.status).toBe('completed');
      expect(r.newMessages.at(-1)).toMatchObject({
        role: 'assistant',
        content: [{ type: 'text', text: 'hello over mTLS' }],
      });
    } finally {
      await client.close();
    }
  });

  it('the keel CLI connects through an envconfig profile (temporal.toml)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-profile-'));
    const configFile = join(dir, 'temporal.toml');
    writeFileSync(
      configFile,
      [
        '[profile.cluster]',
        `address = "${address}"`,
        'namespace = "default"',
        '[profile.cluster.tls]',
        `server_ca_cert_path = "${tls.caCertPath}"`,
        `client_cert_path = "${tls.clientCertPath}"`,
        `client_key_path = "${tls.clientKeyPath}"`,
        `server_name = "${tls.serverName}"`,
        '',
      ].join('\n'),
    );
    const { TEMPORAL_ADDRESS: _a, TEMPORAL_NAMESPACE: _n, ...rest } = env;
    const child = spawn(process.execPath, [BIN, '--task-queue', taskQueue, 'run', 'hi', '--model', 'scripted/hi'], {
      env: { ...rest, NO_COLOR: '1', TEMPORAL_CONFIG_FILE: configFile, TEMPORAL_PROFILE: 'cluster' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, err).toBe(0);
    expect(out).toContain('hello over mTLS');
  });

  it('a client without a certificate is refused by the mTLS frontend', async () => {
    const noCert = resolveConnection({ address, tls: { caCertPath: tls.caCertPath, serverName: tls.serverName } });
    await expect(Connection.connect({ ...connectOptions(noCert), connectTimeout: '5s' })).rejects.toThrow();
  });
});
