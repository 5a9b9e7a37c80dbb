/**
 * node-common/connection.ts: how explicit settings, TEMPORAL_* variables and an envconfig profile (temporal.toml) combine
 * into the options every Keel connection (client, worker, CLI) uses.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectOptions, describeConnection, resolveConnection } from '../../node-common/connection.js';

const dir = mkdtempSync(join(tmpdir(), 'keel-conn-'));
const pem = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};
const ca = pem('ca.pem', 'CA PEM');
const crt = pem('client.pem', 'CLIENT PEM');
const key = pem('client.key', 'KEY PEM');
const configFile = pem(
  'temporal.toml',
  [
    '[profile.default]',
    'address = "default-profile:7233"',
    '[profile.cloud]',
    'address = "ns.acct.tmprl.cloud:7233"',
    'namespace = "ns.acct"',
    'api_key = "profile-key"',
    '[profile.mtls]',
    'address = "mtls.example:7233"',
    '[profile.mtls.tls]',
    `server_ca_cert_path = "${ca}"`,
    `client_cert_path = "${crt}"`,
    `client_key_path = "${key}"`,
    'server_name = "mtls.internal"',
    '',
  ].join('\n'),
);
const noFile = { TEMPORAL_CONFIG_FILE: join(dir, 'absent.toml') };
/** The TLS config with its PEM bytes (Buffer from files, Uint8Array from envconfig) as text. */
const asText = (tls: unknown): unknown =>
  JSON.parse(
    JSON.stringify(tls, (_k, v: unknown) =>
      v instanceof Uint8Array
        ? Buffer.from(v).toString()
        : v && (v as { type?: string }).type === 'Buffer'
          ? Buffer.from((v as { data: number[] }).data).toString()
          : v,
    ),
  );

describe('resolveConnection', () => {
  it('defaults to localhost:7233, namespace default, plaintext', () => {
    expect(resolveConnection({}, noFile)).toEqual({ address: 'localhost:7233', namespace: 'default' });
  });

  it('explicit settings beat the environment, which beats the profile', () => {
    const env = { TEMPORAL_CONFIG_FILE: configFile, TEMPORAL_ADDRESS: 'env:7233', TEMPORAL_NAMESPACE: 'env-ns' };
    expect(resolveConnection({}, { TEMPORAL_CONFIG_FILE: configFile }).address).toBe('default-profile:7233');
    expect(resolveConnection({}, env)).toMatchObject({ address: 'env:7233', namespace: 'env-ns' });
    expect(resolveConnection({ address: 'flag:7233', namespace: 'flag-ns' }, env)).toMatchObject({
      address: 'flag:7233',
      namespace: 'flag-ns',
    });
  });

  it('an empty variable counts as unset', () => {
    expect(resolveConnection({}, { ...noFile, TEMPORAL_ADDRESS: '' }).address).toBe('localhost:7233');
  });

  it('a profile chosen by TEMPORAL_PROFILE or by name; an API key turns TLS on', () => {
    const cloud = resolveConnection({}, { TEMPORAL_CONFIG_FILE: configFile, TEMPORAL_PROFILE: 'cloud' });
    expect(cloud).toEqual({
      address: 'ns.acct.tmprl.cloud:7233',
      namespace: 'ns.acct',
      apiKey: 'profile-key',
      tls: true,
    });
    expect(resolveConnection({ profile: 'cloud', configFile }, {})).toEqual(cloud);
    expect(describeConnection(cloud)).toBe('ns.acct.tmprl.cloud:7233 (namespace ns.acct, TLS, API key)');
    expect(resolveConnection({ profile: 'cloud', configFile, apiKey: 'flag-key' }, {}).apiKey).toBe('flag-key');
    expect(resolveConnection({ apiKey: 'k', tls: false }, noFile).tls).toBe(false);
  });

  it('TLS files from a profile or from settings are read into the SDK TLS config', () => {
    const fromProfile = resolveConnection({ profile: 'mtls', configFile }, {});
    const fromSettings = resolveConnection(
      {
        address: 'mtls.example:7233',
        tls: { caCertPath: ca, clientCertPath: crt, clientKeyPath: key, serverName: 'mtls.internal' },
      },
      noFile,
    );
    for (const c of [fromProfile, fromSettings]) {
      expect(asText(c.tls)).toEqual({
        serverNameOverride: 'mtls.internal',
        serverRootCACertificate: 'CA PEM',
        clientCertPair: { crt: 'CLIENT PEM', key: 'KEY PEM' },
      });
      expect(describeConnection(c)).toBe('mtls.example:7233 (namespace default, mTLS)');
    }
    expect(connectOptions(fromSettings)).not.toHaveProperty('namespace');
  });

  it('a TLS setting alone uses the system roots; TEMPORAL_TLS_* variables work too', () => {
    expect(resolveConnection({ tls: true }, noFile).tls).toEqual({});
    expect(
      asText(
        resolveConnection({}, { ...noFile, TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca, TEMPORAL_TLS_SERVER_NAME: 'x' }).tls,
      ),
    ).toEqual({
      serverNameOverride: 'x',
      serverRootCACertificate: 'CA PEM',
    });
  });

  it('fails on an unknown profile and on a certificate without its key', () => {
    expect(() => resolveConnection({ profile: 'nope', configFile }, {})).toThrow(/nope/);
    expect(() => resolveConnection({ tls: { clientCertPath: crt } }, noFile)).toThrow(/needs its key/);
  });
});
