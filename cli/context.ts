/**
 * What every `keel` command shares: global options, the connection to Temporal (with a fast "cannot reach" answer),
 * exit codes, the Temporal UI link, and output helpers (`--json`).
 */
import { readFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import {
  Client,
  Connection,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  isGrpcServiceError,
} from '@temporalio/client';
import { InvalidArgumentError, Option, type Command } from 'commander';
import {
  connectOptions,
  resolveConnection,
  type ConnectionSettings,
  type ResolvedConnection,
} from '../node-common/connection.js';
import { clientInterceptors } from '../node-common/closed-channel-guard.js';
import { AgentClient, InvalidAgentInputError, UpdateRejectedError } from '../client/agent-client.js';
import { recordedDevKeys, recordedDevUi } from './dev-registry.js';
import { keelClientDataConverter } from '../node-common/payload-storage.js';
import {
  DecryptionError,
  KEYS_ENV,
  KEYS_FILE_ENV,
  keyRingOf,
  NoKeyRingError,
  type EncryptionOption,
} from '../node-common/encryption.js';
import { DEFAULT_TASK_QUEUE } from '../common/task-queues.js';
import { thrownMessage } from '../common/errors.js';
import { WorkerModulesError } from '../worker/load-modules.js';
import { ApprovalSettingsError } from '../worker/approvals/settings.js';

/** The comma-separated list option parser (`--tools read,bash` → ['read', 'bash']). */
export { commaList } from '../common/comma-list.js';

/** Exit codes of every command (docs/cli.md#exit-codes). */
export const EXIT = {
  /** The command did what it was asked; a followed run completed (or stopped at maxTurns). */
  ok: 0,
  /** The run failed (or was cancelled / terminated / timed out). */
  runFailed: 1,
  /** Bad arguments, bad input, unknown run. */
  usage: 2,
  /** Temporal cannot be reached. */
  unreachable: 3,
} as const;

export const DEFAULT_UI = 'http://localhost:8233';

/** An error that ends the command with `exitCode` and `message` on stderr (no stack). */
export class CliError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usageError = (message: string): CliError => new CliError(EXIT.usage, message);

export interface GlobalOptions {
  address: string;
  namespace: string;
  /** The connection settings as given (flags; the environment and profile are applied by resolveConnection). */
  settings: ConnectionSettings;
  /** Address, namespace, TLS, API key: flags > environment > envconfig profile > defaults. */
  connection: ResolvedConnection;
  taskQueue: string;
  ui: string;
  json: boolean;
  /** Seconds to wait for a connection. */
  connectTimeout: number;
  /** Payload encryption: the key ring of `--encryption-keys` or the environment's, else off (sealed runs refused). */
  encryption: EncryptionOption;
}

/** The connection flags every command takes (common/connection.ts resolves them with the environment and profile). */
export function addConnectionOptions(program: Command): Command {
  return program
    .addOption(new Option('--tls', 'connect with TLS (implied by the other --tls-* flags and by --api-key)'))
    .addOption(new Option('--tls-ca <file>', 'CA certificate (PEM) of the server ($TEMPORAL_TLS_SERVER_CA_CERT_PATH)'))
    .addOption(new Option('--tls-cert <file>', 'client certificate (PEM) for mTLS ($TEMPORAL_TLS_CLIENT_CERT_PATH)'))
    .addOption(new Option('--tls-key <file>', 'client key (PEM) for mTLS ($TEMPORAL_TLS_CLIENT_KEY_PATH)'))
    .addOption(new Option('--tls-server-name <name>', 'server name to verify ($TEMPORAL_TLS_SERVER_NAME)'))
    .addOption(
      new Option(
        '--api-key <key>',
        'API key, e.g. Temporal Cloud; prefer $TEMPORAL_API_KEY or --api-key-file (a key on the command line shows in ps and shell history)',
      ),
    )
    .addOption(new Option('--api-key-file <file>', 'file holding the API key (trailing newline ignored)'))
    .addOption(new Option('--profile <name>', 'profile of the envconfig file ($TEMPORAL_PROFILE, default "default")'))
    .addOption(
      new Option(
        '--config-file <file>',
        'envconfig TOML file ($TEMPORAL_CONFIG_FILE, default ~/.config/temporalio/temporal.toml)',
      ),
    )
    .addOption(
      new Option(
        '--encryption-keys <file>',
        'key file of payload encryption (README "Encryption"; default $KEEL_ENCRYPTION_KEYS_FILE or $KEEL_ENCRYPTION_KEYS)',
      ),
    );
}

interface ConnectionFlags {
  address?: string;
  namespace?: string;
  tls?: boolean;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsServerName?: string;
  apiKey?: string;
  apiKeyFile?: string;
  profile?: string;
  configFile?: string;
  encryptionKeys?: string;
}

/** ConnectionSettings from the flags: any --tls-* flag means TLS; none leaves TLS to the environment and profile. */
export function connectionSettings(o: ConnectionFlags): ConnectionSettings {
  const tlsFiles = {
    caCertPath: o.tlsCa,
    clientCertPath: o.tlsCert,
    clientKeyPath: o.tlsKey,
    serverName: o.tlsServerName,
  };
  const anyTls = Object.values(tlsFiles).some((v) => v !== undefined);
  const defined = <T extends object>(x: T) =>
    Object.fromEntries(Object.entries(x).filter(([, v]) => v !== undefined)) as T;
  return defined({
    address: o.address,
    namespace: o.namespace,
    apiKey: o.apiKey,
    profile: o.profile,
    configFile: o.configFile,
    tls: anyTls ? defined(tlsFiles) : o.tls ? true : undefined,
  });
}

/**
 * The API key of `--api-key-file`: the file's content without its trailing newline. A usage error when both key flags
 * are given, or the file cannot be read or is empty. Undefined without the flag (then `--api-key`, `$TEMPORAL_API_KEY`
 * or the profile's `api_key` apply).
 */
export function apiKeyFromFile(o: Pick<ConnectionFlags, 'apiKey' | 'apiKeyFile'>): string | undefined {
  if (o.apiKeyFile === undefined) return undefined;
  if (o.apiKey !== undefined) throw usageError('Give the API key once: --api-key or --api-key-file, not both.');
  let text: string;
  try {
    text = readFileSync(o.apiKeyFile, 'utf-8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? thrownMessage(err);
    throw usageError(`--api-key-file ${o.apiKeyFile} cannot be read (${code}): fix the path or its permissions.`);
  }
  const key = text.replace(/\r?\n$/, '');
  if (key.trim() === '') throw usageError(`--api-key-file ${o.apiKeyFile} is empty: write the API key into it.`);
  return key;
}

/** The global options as a subcommand's action sees them. */
export function globals(cmd: Command): GlobalOptions {
  const o = cmd.optsWithGlobals<Partial<GlobalOptions> & ConnectionFlags>();
  const fileKey = apiKeyFromFile(o);
  const settings = connectionSettings(fileKey !== undefined ? { ...o, apiKey: fileKey } : o);
  let connection: ResolvedConnection;
  try {
    connection = resolveConnection(settings);
  } catch (err) {
    throw usageError(`Connection settings: ${(err as Error).message}`);
  }
  return {
    address: connection.address,
    namespace: connection.namespace,
    settings,
    connection,
    taskQueue: o.taskQueue ?? process.env.KEEL_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
    ui: (o.ui ?? process.env.KEEL_UI_URL ?? recordedDevUi(connection.address) ?? DEFAULT_UI).replace(/\/+$/, ''),
    json: o.json === true,
    connectTimeout: Number(o.connectTimeout ?? 10),
    encryption: encryptionOf(o.encryptionKeys, connection.address),
  };
}

/**
 * The key ring of `--encryption-keys <file>`, else the environment's, else the key file of the `keel dev --encrypt`
 * serving `address` (dev-registry.ts: a new shell's `keel run` seals as that server's worker expects); a usage error
 * when it cannot be read.
 */
function encryptionOf(file: string | undefined, address: string): EncryptionOption {
  const devKeys = file === undefined && !process.env[KEYS_ENV] && !process.env[KEYS_FILE_ENV];
  const keysFile = file ?? (devKeys ? recordedDevKeys(address) : undefined);
  try {
    const keyRing = keyRingOf(keysFile !== undefined ? { keysFile } : undefined);
    return keyRing ? { keyRing } : false;
  } catch (err) {
    throw usageError(`Encryption keys: ${thrownMessage(err)}`);
  }
}

/** A word for a POSIX shell: as it is when it needs no quoting, else in single quotes (hints meant to be pasted). */
export function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`;
}

/** `<ui>/namespaces/<ns>/workflows/<id>`; the base is `--ui`, `$KEEL_UI_URL`, the running `keel dev`'s UI, or :8233. */
export function uiLink(g: Pick<GlobalOptions, 'ui' | 'namespace'>, workflowId: string): string {
  return `${g.ui}/namespaces/${encodeURIComponent(g.namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

export function unreachable(address: string, why: string): CliError {
  return new CliError(
    EXIT.unreachable,
    `Cannot reach Temporal at ${address} (${why}).\n` +
      `Start a local dev server with \`npx keel dev\`, or point --address (or $TEMPORAL_ADDRESS) at your Temporal frontend.`,
  );
}

/** Fails fast when nothing listens at host:port (a refused TCP connection), instead of waiting for the gRPC deadline. */
async function probe(address: string, timeoutMs: number): Promise<void> {
  const m = /^(?:\[(.+)\]|([^:]+)):(\d+)$/.exec(address);
  if (!m) return; // unusual form (dns:///…, unix:…): let gRPC decide
  const host = m[1] ?? m[2];
  const port = Number(m[3]);
  await new Promise<void>((resolve, reject) => {
    const socket = tcpConnect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(); // slow, not refused: gRPC's own deadline applies
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.end();
      resolve();
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      socket.destroy();
      reject(unreachable(address, err.code ?? err.message));
    });
  });
}

/** Connects a Temporal client and Keel's AgentClient; exit code 3 when Temporal cannot be reached. */
export async function connect(g: GlobalOptions): Promise<AgentClient> {
  await probe(g.address, g.connectTimeout * 1000);
  let connection: Connection;
  try {
    connection = await Connection.connect({
      ...connectOptions(g.connection),
      connectTimeout: `${g.connectTimeout}s`,
      interceptors: clientInterceptors(),
    });
  } catch (err) {
    throw unreachable(g.address, thrownMessage(err));
  }
  return new AgentClient(
    new Client({ connection, namespace: g.namespace, dataConverter: keelClientDataConverter(undefined, g.encryption) }),
    g.taskQueue,
  );
}

/** Runs `fn` with a connected client and closes it afterwards. */
export async function withClient<T>(g: GlobalOptions, fn: (client: AgentClient) => Promise<T>): Promise<T> {
  const client = await connect(g);
  try {
    return await fn(client);
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** Maps an error to an exit code and a one-paragraph message. */
export function classify(err: unknown, g?: Pick<GlobalOptions, 'address'>): CliError {
  if (err instanceof CliError) return err;
  if (err instanceof InvalidAgentInputError) return usageError(`Invalid AgentRunInput:\n  ${err.errors.join('\n  ')}`);
  if (err instanceof UpdateRejectedError) return usageError(err.message);
  if (err instanceof ApprovalSettingsError) return usageError(err.message);
  if (err instanceof WorkerModulesError) return usageError(err.message); // a flag of `keel dev` / `worker` / `tools`
  // a sealed run read without (the right) keys: the command needs --encryption-keys
  if (err instanceof NoKeyRingError || err instanceof DecryptionError) return usageError(err.message);
  if (err instanceof WorkflowNotFoundError) return usageError(`No run found: ${err.message}`);
  if (err instanceof WorkflowExecutionAlreadyStartedError)
    return usageError(`A run with id ${err.workflowId} already exists; pick another --id.`);
  if (isGrpcServiceError(err) || (err as { code?: unknown })?.code !== undefined) {
    const code = (err as { code?: number }).code;
    // 14 UNAVAILABLE, 4 DEADLINE_EXCEEDED (connection level)
    if (code === 14) return unreachable(g?.address ?? '?', (err as Error).message);
    if (code === 5) return usageError(`Not found: ${(err as Error).message}`);
    if (code === 3) return usageError((err as Error).message);
  }
  const name = (err as Error)?.name;
  if (name === 'ServiceError') {
    const cause = (err as { cause?: { code?: number; message?: string } }).cause;
    if (cause?.code === 14) return unreachable(g?.address ?? '?', cause.message ?? 'unavailable');
    if (cause?.code === 5) return usageError(`Not found: ${(err as Error).message}`);
  }
  return new CliError(EXIT.runFailed, thrownMessage(err));
}

/** Prints a JSON value on stdout (one document). */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Integer option parser with a usage error naming the option. */
export function intOption(name: string, min = 1): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`${name} must be an integer >= ${min}.`);
    return n;
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Wraps a command action that returns its exit code (undefined: 0) into one commander can call. */
export function act<A extends unknown[]>(fn: (...args: A) => Promise<number | void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    const code = await fn(...args);
    process.exitCode = code ?? EXIT.ok;
  };
}
