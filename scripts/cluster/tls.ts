/**
 * A throwaway PKI made with openssl for the cluster's TLS frontend (and docker-compose.yml's `mtls` profile, through
 * scripts/compose-init.ts): a self-signed CA, a server certificate for `SERVER_NAME` (also valid for localhost /
 * 127.0.0.1) and a client certificate, all signed by that CA.
 * Contract: `makeTestPki(dir, options?)` writes PEM files into `dir` and returns their paths; nothing else is touched.
 * Defaults (the tests'): server name `SERVER_NAME`, valid 2 days.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const SERVER_NAME = 'keel-cluster.test';

export interface TestPki {
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  serverName: string;
}

export interface TestPkiOptions {
  /** The server certificate's name (SNI, `--tls-server-name`); default `SERVER_NAME`. */
  serverName?: string;
  /** Validity of every certificate in days; default 2. */
  days?: number;
}

export function makeTestPki(dir: string, options: TestPkiOptions = {}): TestPki {
  const serverName = options.serverName ?? SERVER_NAME;
  const days = String(options.days ?? 2);
  const p = (name: string) => join(dir, name);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    days,
    '-subj',
    '/CN=Keel test CA',
    '-keyout',
    p('ca.key'),
    '-out',
    p('ca.pem'),
  );
  const leaf = (name: string, cn: string, ext: string) => {
    writeFileSync(p(`${name}.ext`), ext);
    ssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=${cn}`,
      '-keyout',
      p(`${name}.key`),
      '-out',
      p(`${name}.csr`),
    );
    ssl(
      'x509',
      '-req',
      '-in',
      p(`${name}.csr`),
      '-CA',
      p('ca.pem'),
      '-CAkey',
      p('ca.key'),
      '-CAcreateserial',
      '-days',
      days,
      '-extfile',
      p(`${name}.ext`),
      '-out',
      p(`${name}.pem`),
    );
  };
  leaf(
    'server',
    serverName,
    `subjectAltName=DNS:${serverName},DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n`,
  );
  leaf('client', 'keel-test-client', 'extendedKeyUsage=clientAuth\n');
  return {
    caCert: p('ca.pem'),
    serverCert: p('server.pem'),
    serverKey: p('server.key'),
    clientCert: p('client.pem'),
    clientKey: p('client.key'),
    serverName,
  };
}
