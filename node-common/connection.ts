/**
 * How Keel reaches Temporal — one module shared by `AgentClient`, `createAgentWorker` and the `keel` CLI, so all
 * three accept the same settings the way every Temporal app does: an address and namespace, TLS (server CA, client
 * certificate and key, server name), an API key (Temporal Cloud), and `@temporalio/envconfig` profiles
 * (`temporal.toml`, `TEMPORAL_PROFILE`, `TEMPORAL_CONFIG_FILE`, `TEMPORAL_ADDRESS`, `TEMPORAL_API_KEY`,
 * `TEMPORAL_TLS_*`…).
 *
 * Precedence, per field: explicit settings > environment variables > the profile in the config file > defaults
 * (`localhost:7233`, namespace `default`, no TLS). An API key turns TLS on unless TLS is explicitly disabled.
 * Never imported by workflow code.
 */
import { readFileSync } from 'node:fs';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { loadClientConfigProfile, toClientOptions } from '@temporalio/envconfig';
import { registerWorkerSecretFile } from './worker-secrets.js';

export const DEFAULT_ADDRESS = 'localhost:7233';
export const DEFAULT_NAMESPACE = 'default';

/** Paths (PEM files) and flags for TLS; any field set turns TLS on, `disabled: true` forces it off. */
export interface TlsSettings {
  /** CA certificate that signed the server's certificate (default: the system's roots). */
  caCertPath?: string;
  clientCertPath?: string;
  clientKeyPath?: string;
  /** Name to verify the server certificate against (SNI), when it differs from the address's host. */
  serverName?: string;
  disabled?: boolean;
}

/** What a caller may set; everything is optional. */
export interface ConnectionSettings {
  address?: string;
  namespace?: string;
  apiKey?: string;
  /** `true`: TLS with the system's roots; an object: see TlsSettings. */
  tls?: boolean | TlsSettings;
  /** Profile in the config file (default `$TEMPORAL_PROFILE`, else `default`). */
  profile?: string;
  /** The TOML config file (default `$TEMPORAL_CONFIG_FILE`, else the envconfig default path). */
  configFile?: string;
  /** Extra gRPC metadata sent on every call. */
  metadata?: Record<string, string>;
}

/** Connection options accepted as is by both `Connection.connect` (client) and `NativeConnection.connect` (worker). */
export interface ResolvedConnection {
  address: string;
  namespace: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
  metadata?: Record<string, string>;
}

/**
 * Merges explicit settings, the environment and the envconfig profile into one set of connection options.
 * Throws when a named profile does not exist or a PEM file cannot be read.
 */
export function resolveConnection(
  settings: ConnectionSettings = {},
  env: NodeJS.ProcessEnv = process.env,
): ResolvedConnection {
  registerWorkerSecretFile(settings.configFile);
  const profile = loadClientConfigProfile({
    profile: settings.profile,
    ...(settings.configFile ? { configSource: { path: settings.configFile } } : {}),
    // an empty variable counts as unset (`TEMPORAL_ADDRESS= keel …`)
    overrideEnvVars: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => !!e[1])),
  });
  const fromProfile = toClientOptions(profile).connectionOptions;
  const apiKey = settings.apiKey ?? profile.apiKey;
  const explicit =
    settings.tls === undefined
      ? undefined
      : settings.tls === true
        ? {}
        : settings.tls === false
          ? { disabled: true }
          : settings.tls;
  const tls = explicit ? tlsConfig(explicit) : (fromProfile.tls ?? (apiKey ? true : undefined));
  const metadata = { ...profile.grpcMeta, ...settings.metadata };
  return {
    address: settings.address ?? profile.address ?? DEFAULT_ADDRESS,
    namespace: settings.namespace ?? profile.namespace ?? DEFAULT_NAMESPACE,
    ...(tls !== undefined ? { tls } : {}),
    ...(apiKey ? { apiKey } : {}),
    ...(Object.keys(metadata).length ? { metadata } : {}),
  };
}

/** The options to hand to `Connection.connect` / `NativeConnection.connect` (everything but the namespace). */
export function connectOptions(c: ResolvedConnection): Omit<ResolvedConnection, 'namespace'> {
  const { namespace: _namespace, ...rest } = c;
  return rest;
}

/** One line for logs and errors, never the key or certificate contents: `host:port (namespace ns, mTLS, API key)`. */
export function describeConnection(c: ResolvedConnection): string {
  const tls =
    c.tls === undefined || c.tls === false
      ? 'plaintext'
      : typeof c.tls === 'object' && c.tls.clientCertPair
        ? 'mTLS'
        : 'TLS';
  return `${c.address} (namespace ${c.namespace}, ${tls}${c.apiKey ? ', API key' : ''})`;
}

function tlsConfig(t: TlsSettings): TLSConfig | false {
  if (t.disabled) return false;
  for (const file of [t.caCertPath, t.clientCertPath, t.clientKeyPath]) registerWorkerSecretFile(file);
  if ((t.clientCertPath === undefined) !== (t.clientKeyPath === undefined)) {
    throw new Error('TLS: a client certificate needs its key and a key needs its certificate');
  }
  return {
    ...(t.serverName ? { serverNameOverride: t.serverName } : {}),
    ...(t.caCertPath ? { serverRootCACertificate: readFileSync(t.caCertPath) } : {}),
    ...(t.clientCertPath && t.clientKeyPath
      ? { clientCertPair: { crt: readFileSync(t.clientCertPath), key: readFileSync(t.clientKeyPath) } }
      : {}),
  };
}
