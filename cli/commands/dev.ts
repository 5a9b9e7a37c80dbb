/**
 * `keel dev`: a Temporal dev server with a persistent SQLite file and the Web UI (keel/dev's `startDevServer`), an
 * in-process Keel worker (cli/start-worker.ts), and with `--encrypt` a key file and a codec server for the UI; until
 * Ctrl-C.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import type { CodecServer, EncryptionOption, KeyRing } from '../../client.js';
import { resolveConnection } from '../../node-common/connection.js';
import { DEFAULT_TASK_QUEUE } from '../../common/task-queues.js';
import type { DevServer, ServerLogLevel } from '../../dev.js';
import { ResourceInUseError } from '../../client/resource-holder.js';
import { act, CliError, EXIT, globals, intOption, usageError, shellWord, type GlobalOptions } from '../context.js';
import { recordDevServer } from '../dev-registry.js';
import { mcpLine, mcpServerLines, quietRuntime, startWorker, toolNames, type StartedWorker } from '../start-worker.js';
import { untilSignal } from '../signals.js';
import { workerOptions, type WorkerFlags } from '../worker-flags.js';

type DevFlags = WorkerFlags & {
  db: string;
  inMemory?: boolean;
  port?: number;
  uiPort: number;
  worker: boolean;
  encrypt?: boolean;
  codecPort: number;
  serverLog: ServerLogLevel;
};

/** `keel dev --encrypt`'s key file, codec server and key ring. */
type DevEncryption = { keyFile: string; created: boolean; codec: CodecServer; keyRing: KeyRing };

export function register(program: Command): void {
  workerOptions(
    program
      .command('dev')
      .summary('Temporal dev server (persistent SQLite + Web UI) and a Keel worker, until Ctrl-C')
      .description(
        'Starts a local Temporal dev server whose data lives in a SQLite file (default .keel/dev.db, so runs survive a restart ' +
          'of `keel dev`), its Web UI, and an in-process Keel worker with the built-in tools (a sandboxed workspace per conversation) ' +
          'on the task queue (--task-queue, default keel). Runs until Ctrl-C.',
      )
      .option('--db <file>', 'SQLite file of the dev server', '.keel/dev.db')
      .option('--in-memory', 'keep nothing: an in-memory dev server')
      .option('--port <port>', 'gRPC port (default: the port of --address, 7233)', intOption('--port'))
      .option('--ui-port <port>', 'Web UI port', intOption('--ui-port'), 8233)
      .option('--no-worker', 'start the server only')
      .option(
        '--encrypt',
        `encrypt payloads: keys in ${DEV_KEY_FILE} (made at the first start), a codec server on 127.0.0.1 for the Web UI and the temporal CLI`,
      )
      .option('--codec-port <port>', 'port of the codec server of --encrypt', intOption('--codec-port'), 8234)
      .addOption(
        new Option(
          '--server-log <level>',
          "the Temporal server's own log lines on stderr from this level up (they are about its internals, e.g. an " +
            'ERROR while it retries its Worker Deployment workflow under load)',
        )
          .choices(SERVER_LOG_LEVELS)
          .default('never'),
      ),
  ).action(act(runDev));
}

/** `keel dev`: the server, its record for other shells, the worker, the ready text; then waits for Ctrl-C. */
async function runDev(o: DevFlags, cmd: Command): Promise<void> {
  const g = globals(cmd);
  const port = o.port ?? portOf(g.address) ?? 7233;
  await quietRuntime();
  const dbFilename = o.inMemory ? undefined : resolve(o.db);
  if (dbFilename) mkdirSync(dirname(dbFilename), { recursive: true });
  const encryption = o.encrypt ? await startDevEncryption(o.uiPort, o.codecPort) : undefined;
  const server = await startServer(o, g, port, dbFilename, encryption);
  const ui = `http://localhost:${o.uiPort}`;
  const forget = recordDevServer(`localhost:${port}`, ui, encryption?.keyFile);
  let worker: StartedWorker | undefined;
  let running: Promise<void> | undefined;
  try {
    if (o.worker) ({ worker, running } = await startDevWorker(o, g, server.address, encryption));
    if (encryption) process.stderr.write(`${DEV_CODEC_NOTICE}\n`);
    // with --encrypt, a keel command in another shell finds the key file in this server's record (dev-registry.ts)
    const signalled = untilSignal(); // before the ready text: a signal sent on seeing it is caught
    process.stdout.write(readyText(o, g, { address: server.address, ui, port, dbFilename, encryption }));
    const signal = await signalled;
    process.stderr.write(`[keel] ${signal}: stopping\n`);
  } finally {
    forget();
    if (worker) await worker.shutdown().catch(() => undefined);
    await running?.catch(() => undefined);
    await server.shutdown();
    await encryption?.codec.close();
  }
}

/** The dev server on `port` (UI, SQLite file, codec endpoint); a port or file in use is a usage error naming it. */
async function startServer(
  o: DevFlags,
  g: GlobalOptions,
  port: number,
  dbFilename: string | undefined,
  encryption: DevEncryption | undefined,
): Promise<DevServer> {
  const { startDevServer } = await import('../../dev.js');
  try {
    return await startDevServer({
      port,
      ui: true,
      uiPort: o.uiPort,
      namespace: g.namespace,
      ...(dbFilename ? { dbFilename } : {}),
      ...(encryption ? { uiCodecEndpoint: encryption.codec.url } : {}),
      logLevel: o.serverLog,
      log: (s) => process.stderr.write(`${s}\n`),
    });
  } catch (err) {
    await encryption?.codec.close();
    if (err instanceof ResourceInUseError) throw new CliError(EXIT.usage, inUseHint(err));
    throw new CliError(
      EXIT.usage,
      `Could not start the dev server on port ${port} (UI ${o.uiPort}): ${(err as Error).message}`,
    );
  }
}

/** The in-process worker on the dev server at `address` (plaintext), running; its start line and MCP lines printed. */
async function startDevWorker(
  o: DevFlags,
  g: GlobalOptions,
  address: string,
  encryption: DevEncryption | undefined,
): Promise<{ worker: StartedWorker; running: Promise<void> }> {
  const sealing: EncryptionOption | undefined = encryption ? { keyRing: encryption.keyRing } : undefined;
  const started = await startWorker(
    sealing ? { ...g, encryption: sealing } : g,
    o,
    { address, namespace: g.namespace, tls: false },
    undefined,
    true,
  );
  const running = started.worker.run();
  running.catch((err) => process.stderr.write(`[keel] worker stopped: ${(err as Error).message}\n`));
  const { describeTools } = await import('../../worker/load-modules.js');
  process.stderr.write(
    `[keel] worker on task queue ${g.taskQueue}: tools ${toolNames(started.tools)}, ${await describeTools(o)}${mcpLine(started.mcpServers)}\n`,
  );
  for (const line of await mcpServerLines(o)) process.stderr.write(`${line}\n`);
  return { worker: started.worker, running };
}

/** `keel dev`'s ready text on stdout: where the server and its UI are, its data, its keys, and what to try. */
function readyText(
  o: DevFlags,
  g: GlobalOptions,
  at: { address: string; ui: string; port: number; dbFilename?: string; encryption?: DevEncryption },
): string {
  const { encryption } = at;
  return (
    `Keel dev server ready at ${at.address.replace('127.0.0.1', 'localhost')} · Web UI ${at.ui}/namespaces/${g.namespace}/workflows\n` +
    `${at.dbFilename ? `Data: ${at.dbFilename}` : 'Data: in memory'} · Ctrl-C to stop\n` +
    (encryption
      ? `Encryption: keys ${encryption.keyFile}${encryption.created ? ' (new)' : ''} · codec server ${encryption.codec.url} (the Web UI decodes through it; temporal CLI: add --codec-endpoint ${encryption.codec.url})\n`
      : '') +
    (o.worker
      ? `Try: ${tryCommand(g, at.port)}\n${REAL_MODEL_NOTE}\n`
      : `Start a worker: ${tryCommand(g, at.port).replace(/ run hello --model scripted\/hello/, ' worker')}\n`)
  );
}

/**
 * The `keel run` that `keel dev` suggests, with every flag a new shell of the same environment needs to reach this
 * server and worker: `--address` (unless it resolves there anyway), `--namespace`, `--task-queue`.
 */
export function tryCommand(g: Pick<GlobalOptions, 'namespace' | 'taskQueue'>, port: number): string {
  const defaults = resolveConnection({});
  const address = `localhost:${port}`;
  const flags = [
    ...(defaults.address === address ? [] : ['--address', address]),
    ...(defaults.namespace === g.namespace ? [] : ['--namespace', g.namespace]),
    ...((process.env.KEEL_TASK_QUEUE ?? DEFAULT_TASK_QUEUE) === g.taskQueue ? [] : ['--task-queue', g.taskQueue]),
  ];
  return ['npx', 'keel', 'run', 'hello', '--model', 'scripted/hello', ...flags].map(shellWord).join(' ');
}

/** The line after `keel dev`'s `Try:` command (prose: the `Try:` line above it is the whole command to paste). */
export const REAL_MODEL_NOTE =
  'A real model: the same with --model anthropic/claude-sonnet-4-5 and ANTHROPIC_API_KEY set';

/** Where `keel dev --encrypt` keeps its key file (relative to the working directory, like .keel/dev.db). */
export const DEV_KEY_FILE = '.keel/encryption-keys.json';

/** `keel dev --server-log` (the Temporal CLI's `--log-level` values, dev/dev-server.ts ServerLogLevel). */
const SERVER_LOG_LEVELS: ServerLogLevel[] = ['debug', 'info', 'warn', 'error', 'never'];

/**
 * `keel dev --encrypt`: the key file (reused, else made), a codec server on 127.0.0.1:`codecPort` that the UI at
 * `uiPort` may call, and the key ring the dev worker seals with. The dev UI has no login to forward a token from, so
 * this codec server runs with `insecureNoAuth` (loopback only) and the ready text says so (README "Reading encrypted
 * runs: the codec server"); a shared machine runs `keel codec-server` with a token instead.
 */
async function startDevEncryption(
  uiPort: number,
  codecPort: number,
): Promise<{ keyFile: string; created: boolean; codec: CodecServer; keyRing: KeyRing }> {
  const { ensureKeyFile } = await import('./encryption.js');
  const { createCodecServer } = await import('../../client.js');
  const keyFile = resolve(DEV_KEY_FILE);
  const { ring, created } = ensureKeyFile(keyFile);
  let codec: CodecServer;
  try {
    codec = await createCodecServer({
      keyRing: ring,
      port: codecPort,
      origins: [`http://localhost:${uiPort}`, `http://127.0.0.1:${uiPort}`],
      insecureNoAuth: true, // announced in the ready text
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE')
      throw usageError(
        `Port ${codecPort} (codec server) is in use: stop what holds it, or choose another port with --codec-port`,
      );
    throw err;
  }
  return { keyFile, created, codec, keyRing: ring };
}

/** `keel dev --encrypt`'s codec server takes no token (the dev UI has no login): said at start, every time. */
export const DEV_CODEC_NOTICE =
  '[keel] codec server: no authentication (--insecure-no-auth, loopback only): any process on this machine can decode these runs (development only)';

/** What `keel dev` answers when a port or its SQLite file is taken: the holder, and the flag that avoids it. */
function inUseHint(err: ResourceInUseError): string {
  const fix = err.resource.endsWith('(gRPC)')
    ? 'choose another port with --port'
    : err.resource.endsWith('(Web UI)')
      ? 'choose another port with --ui-port'
      : 'use another file with --db, or --in-memory';
  return `${err.message}: stop it, or ${fix}.`;
}

function portOf(address: string): number | undefined {
  const m = /:(\d+)$/.exec(address);
  return m ? Number(m[1]) : undefined;
}
