/**
 * `npm run test:cluster` and `npm run cluster`: a real Temporal cluster (see cluster.ts) for Keel.
 *
 *   tsx scripts/cluster/main.ts test [vitest args…]  start the cluster, run the Temporal suites (projects `temporal`
 *                                                     and `cluster`, unless --project is given; the files of
 *                                                     suites.ts unless files or --all-suites are given) against it,
 *                                                     stop it; exits with vitest's code
 *   tsx scripts/cluster/main.ts up                   start it and keep it up until Ctrl-C; prints how to connect
 *
 * Environment: KEEL_CLUSTER_PORT (first of 12 service ports, default 17233), KEEL_CLUSTER_PG_PORT (15432),
 * KEEL_CLUSTER_KEEP=1 keeps configs, logs and the PostgreSQL data dir after stop. The test run hands the suites
 * KEEL_TEST_TEMPORAL_ADDRESS, KEEL_TEST_CLUSTER_CONTROL and KEEL_TEST_TLS_* (the mTLS frontend and its PKI).
 */
import { spawn } from 'node:child_process';
import { startCluster } from './cluster.js';
import { serveClusterControl } from './control.js';
import { seconds } from './provision.js';
import { clusterPhaseFilters } from './suites.js';

const [command = 'test', ...rest] = process.argv.slice(2);
const log = (s: string) => process.stderr.write(`${s}\n`);
const started = performance.now();
const cluster = await startCluster({ log });
let exiting = false;
const stop = async (code: number) => {
  if (exiting) return;
  exiting = true;
  await cluster.stop();
  process.exit(code);
};
process.once('SIGINT', () => void stop(130));
process.once('SIGTERM', () => void stop(143));

if (command === 'up') {
  log(`[cluster] export TEMPORAL_ADDRESS=${cluster.address}   (Ctrl-C stops the cluster)`);
  if (cluster.tls) {
    const { pki } = cluster.tls;
    log(
      `[cluster] mTLS: keel --address ${cluster.tls.address} --tls-ca ${pki.caCert} --tls-cert ${pki.clientCert} ` +
        `--tls-key ${pki.clientKey} --tls-server-name ${pki.serverName} …`,
    );
  }
} else if (command === 'test') {
  const control = await serveClusterControl(cluster);
  const env = {
    ...process.env,
    KEEL_TEST_TEMPORAL_ADDRESS: cluster.address,
    KEEL_TEST_CLUSTER_CONTROL: control.url,
    ...(cluster.tls
      ? {
          KEEL_TEST_TLS_ADDRESS: cluster.tls.address,
          KEEL_TEST_TLS_CA: cluster.tls.pki.caCert,
          KEEL_TEST_TLS_CERT: cluster.tls.pki.clientCert,
          KEEL_TEST_TLS_KEY: cluster.tls.pki.clientKey,
          KEEL_TEST_TLS_SERVER_NAME: cluster.tls.pki.serverName,
        }
      : {}),
  };
  // default projects unless the caller names some, default files (the cluster suites, scripts/cluster/suites.ts) unless
  // the caller names some or asks for --all-suites; other vitest flags (reporters) pass through
  const all = rest.includes('--all-suites');
  const passed = rest.filter((a) => a !== '--all-suites');
  const named = passed.some((a) => a === '--project' || a.startsWith('--project='));
  const files = passed.some((a) => !a.startsWith('-') && (a.startsWith('test/') || a.endsWith('.test.ts')));
  const args = [
    ...(named ? [] : ['--project', 'temporal', '--project', 'cluster']),
    ...passed,
    ...(files || all ? [] : clusterPhaseFilters()),
  ];
  const suiteStarted = performance.now();
  const vitest = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...args], { stdio: 'inherit', env });
  const code = await new Promise<number>((resolve) => vitest.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0))));
  log(`[cluster] suites exited ${code} after ${seconds(suiteStarted)} (total with provisioning ${seconds(started)})`);
  control.server.close();
  await stop(code);
} else {
  log(`unknown command ${command}: use "test" or "up"`);
  await stop(2);
}
