/**
 * `keel codec-server` (Temporal's codec-server protocol over Keel's key ring, for the Web UI and the `temporal` CLI)
 * and `keel encryption keygen` (a key file, or a new primary key in one: rotation). README "Reading encrypted runs:
 * the codec server"; docs/cli.md.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import type { PassThroughWorkerOptions } from '../../worker.js';
import {
  EncryptionCodec,
  KEYS_ENV,
  KEYS_FILE_ENV,
  keyRingFromEnv,
  newKeyRingJson,
  parseKeyRing,
  readKeyRing,
  type KeyRing,
} from '../../node-common/encryption.js';
import {
  CODEC_TOKEN_ENV,
  CodecServerConfigError,
  createCodecServer,
  DEFAULT_CODEC_SERVER_PORT,
  type CodecServerOptions,
} from '../../client/codec-server.js';
import { act, CliError, EXIT, intOption, usageError, shellWord } from '../context.js';
import { untilSignal } from '../signals.js';

/** The Web UI origins `keel codec-server` allows when given no --origin: `keel dev`'s UI. */
export const DEFAULT_UI_ORIGINS = ['http://localhost:8233', 'http://127.0.0.1:8233'];

/**
 * The key ring of `--encryption-keys <file>`, else of `$KEEL_ENCRYPTION_KEYS` / `$KEEL_ENCRYPTION_KEYS_FILE`, with
 * where it came from; a usage error saying how to give keys when there are none or they do not parse.
 */
export function keyRingFromFlags(file: string | undefined): { ring: KeyRing; source: string } {
  try {
    if (file !== undefined) return { ring: readKeyRing(resolve(file)), source: resolve(file) };
    const ring = keyRingFromEnv();
    if (ring) return { ring, source: process.env[KEYS_ENV] ? `$${KEYS_ENV}` : resolve(process.env[KEYS_FILE_ENV]!) };
  } catch (err) {
    throw usageError((err as Error).message);
  }
  throw usageError(
    `no encryption keys: give --encryption-keys <file>, or set $${KEYS_FILE_ENV} (a file) or $${KEYS_ENV} (its JSON). ` +
      'Make a key file with `npx keel encryption keygen --out keel-keys.json`.',
  );
}

/** A key id for `keygen` without --id: `k-<yyyymmdd>-<4 hex>`. */
function newKeyId(): string {
  return `k-${new Date().toISOString().slice(0, 10).replaceAll('-', '')}-${randomBytes(2).toString('hex')}`;
}

/** Writes `text` to `file` with mode 0600, atomically (a temporary file in the same directory, renamed over it). */
function writeSecretFile(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600, flag: 'wx' });
  chmodSync(tmp, 0o600); // whatever the umask
  renameSync(tmp, file);
}

/**
 * The key file at `file`: read when it exists, else created (0600) with one fresh key. `keel dev --encrypt` keeps its
 * keys in `.keel/encryption-keys.json` this way, so runs of earlier sessions stay readable.
 */
export function ensureKeyFile(file: string): { ring: KeyRing; created: boolean } {
  if (!existsSync(file)) {
    writeSecretFile(file, newKeyRingJson(newKeyId()));
    return { ring: readKeyRing(file), created: true };
  }
  try {
    return { ring: readKeyRing(file), created: false };
  } catch (err) {
    throw usageError((err as Error).message);
  }
}

/** `host:port`, `:port` or `port` → host (default 127.0.0.1) and port. */
function parseListen(value: string): { host: string; port: number } {
  const m = /^(?:(.*):)?(\d{1,5})$/.exec(value);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535)
    throw usageError(`--listen must be host:port or port (e.g. 127.0.0.1:${DEFAULT_CODEC_SERVER_PORT}), got ${value}`);
  return { host: (m[1] || '127.0.0.1').replace(/^\[|\]$/g, ''), port };
}

/** The token of --token-file (trailing newline ignored), else $KEEL_CODEC_SERVER_TOKEN, with how a shell names it. */
function codecToken(file: string | undefined): { token: string; shell: string } | undefined {
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw usageError(`--token-file ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
    const token = text.replace(/\r?\n$/, '');
    if (token.trim() === '') throw usageError(`--token-file ${file} is empty`);
    return { token, shell: `$(cat ${shellWord(resolve(file))})` };
  }
  const env = process.env[CODEC_TOKEN_ENV];
  return env ? { token: env, shell: `$${CODEC_TOKEN_ENV}` } : undefined;
}

/** The `temporal` CLI flags that decode through the codec server at `url` (`tokenShell`: the token as a shell word). */
export function temporalCodecFlags(url: string, tokenShell?: string): string {
  return `--codec-endpoint ${url}${tokenShell ? ` --codec-auth "Bearer ${tokenShell}"` : ''}`;
}

interface CodecServerFlags {
  listen: string;
  origin?: string[];
  tokenFile?: string;
  jwks?: string;
  jwksUrl?: string;
  jwtIssuer?: string;
  jwtAudience?: string;
  namespaceClaim?: string;
  namespace?: string[];
  decodeOnly?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  maxConcurrent: number;
  maxBodyMib: number;
  insecureNoAuth?: boolean;
}

/** `createCodecServer`'s options from the flags (the key ring, address and origins aside). */
function serverOptions(o: CodecServerFlags, token: string | undefined): Partial<CodecServerOptions> {
  if ((o.tlsCert === undefined) !== (o.tlsKey === undefined))
    throw usageError('give --tls-cert and --tls-key together');
  const jwt = o.jwks !== undefined || o.jwksUrl !== undefined;
  return {
    ...(token !== undefined ? { token } : {}),
    ...(jwt
      ? {
          jwt: {
            ...(o.jwks !== undefined ? { jwks: o.jwks } : {}),
            ...(o.jwksUrl !== undefined ? { jwksUrl: o.jwksUrl } : {}),
            ...(o.jwtIssuer !== undefined ? { issuer: o.jwtIssuer } : {}),
            ...(o.jwtAudience !== undefined ? { audience: o.jwtAudience } : {}),
            ...(o.namespaceClaim !== undefined ? { namespaceClaim: o.namespaceClaim } : {}),
          },
        }
      : {}),
    ...(o.insecureNoAuth ? { insecureNoAuth: true } : {}),
    ...(o.tlsCert !== undefined && o.tlsKey !== undefined ? { tls: { certFile: o.tlsCert, keyFile: o.tlsKey } } : {}),
    ...(o.namespace ? { namespaces: o.namespace } : {}),
    ...(o.decodeOnly ? { decodeOnly: true } : {}),
    maxConcurrent: o.maxConcurrent,
    maxBodyBytes: o.maxBodyMib * 1024 * 1024,
  };
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function register(program: Command): void {
  registerCodecServer(program);
  registerEncryption(program);
}

/** `keel codec-server`. */
function registerCodecServer(program: Command): void {
  const cmd = program
    .command('codec-server')
    .summary("decode sealed runs for the Temporal Web UI and CLI (Temporal's codec-server protocol)")
    .description(
      "Serves POST /encode and /decode (Temporal's remote codec protocol) with the key ring of --encryption-keys " +
        `(or $${KEYS_FILE_ENV} / $${KEYS_ENV}), so the Web UI (--ui-codec-endpoint, or its Codec Server setting) and ` +
        '`temporal … --codec-endpoint` show encrypted runs decoded. Browsers may call it only from the --origin(s). ' +
        `Every request must carry a bearer token (--token-file or $${CODEC_TOKEN_ENV}, at least 32 characters) or a JWT ` +
        'the server verifies (--jwks / --jwks-url); --insecure-no-auth (loopback only, announced) takes none. Off ' +
        'loopback it needs TLS (--tls-cert, --tls-key). Runs until Ctrl-C.',
    );
  codecServerOptions(cmd).action(act(runCodecServer));
}

/** The options of `keel codec-server`, in `--help` order. */
function codecServerOptions(cmd: Command): Command {
  return cmd
    .option('--listen <host:port>', 'where to listen', `127.0.0.1:${DEFAULT_CODEC_SERVER_PORT}`)
    .option(
      '--origin <url>',
      `a Web UI origin allowed to call from a browser, e.g. https://temporal.example.com; repeatable (default: ${DEFAULT_UI_ORIGINS.join(', ')})`,
      collect,
    )
    .option(
      '--token-file <file>',
      `file holding the bearer token requests must carry, at least 32 characters (default: $${CODEC_TOKEN_ENV})`,
    )
    .option('--jwks <file>', 'verify bearer JWTs (e.g. the Web UI’s OIDC token) with this JWK Set file')
    .option('--jwks-url <url>', 'verify bearer JWTs with the JWK Set at this URL')
    .option('--jwt-issuer <iss>', 'the iss the JWTs must carry')
    .option('--jwt-audience <aud>', 'the aud the JWTs must carry')
    .option('--namespace-claim <claim>', 'a JWT claim that must name the request’s X-Namespace')
    .option('--namespace <ns>', 'serve only this namespace (X-Namespace); repeatable (default: any)', collect)
    .option('--decode-only', 'serve /decode only (/encode answers 403)')
    .option('--tls-cert <file>', 'serve HTTPS with this PEM certificate (required off loopback)')
    .option('--tls-key <file>', 'the PEM private key of --tls-cert')
    .option('--max-concurrent <n>', 'requests served at once; more get 503', intOption('--max-concurrent'), 2)
    .option('--max-body-mib <n>', 'the largest request body in MiB; larger gets 413', intOption('--max-body-mib'), 32)
    .option('--insecure-no-auth', 'take requests without any token (loopback only; development only; announced)');
}

/** `keel encryption` and its `keygen`. */
function registerEncryption(program: Command): void {
  const encryption = program
    .command('encryption')
    .summary('key files of payload encryption (keygen)')
    .description('Key files of payload encryption (README "Encryption").');
  encryption
    .command('keygen')
    .summary('write a new key file, or add a new primary key to one (rotation)')
    .description(
      'Writes a key file (mode 0600) with one fresh AES-256 key as primary, or with --add-to adds a fresh key to an ' +
        'existing file and makes it primary (rotation: the old keys stay, so runs sealed with them stay readable). ' +
        'Key material is never printed.',
    )
    .option('--id <id>', "the new key's id (default k-<yyyymmdd>-<4 hex>)")
    .option('--out <file>', 'the key file to create (refused if it exists; use --add-to to rotate)', 'keel-keys.json')
    .option('--add-to <file>', 'add the new key to this key file and make it primary')
    .action(act(keygen));
}

/** The new file's text, after checking that it parses (an invalid --id is refused before anything is written). */
function checkedRing(text: string, file: string): string {
  try {
    parseKeyRing(text, file); // the same reader the workers use
  } catch (err) {
    throw usageError((err as Error).message);
  }
  return text;
}

/** `keel codec-server`: serves the key ring's codec until Ctrl-C. */
async function runCodecServer(o: CodecServerFlags, cmd: Command) {
  // the global --encryption-keys (every keel command takes it), else the environment's key ring
  const { ring, source } = keyRingFromFlags(cmd.optsWithGlobals<{ encryptionKeys?: string }>().encryptionKeys);
  const { host, port } = parseListen(o.listen);
  const token = o.jwks || o.jwksUrl || o.insecureNoAuth ? undefined : codecToken(o.tokenFile);
  const origins = o.origin ?? DEFAULT_UI_ORIGINS;
  let server;
  try {
    server = await createCodecServer({ keyRing: ring, host, port, origins, ...serverOptions(o, token?.token) });
  } catch (err) {
    if (err instanceof CodecServerConfigError) throw usageError(err.message);
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE')
      throw new CliError(EXIT.usage, `${host}:${port} is in use: choose another with --listen <host:port>`);
    throw err;
  }
  const signalled = untilSignal(); // before the start line: a signal sent on seeing it is caught
  process.stdout.write(
    `Keel codec server at ${server.url} · keys ${source} (primary ${ring.primary}, ${ring.keys.size} key${ring.keys.size === 1 ? '' : 's'}) · ` +
      `${token ? 'bearer token required' : o.insecureNoAuth ? `NO AUTHENTICATION (--insecure-no-auth: any process on this machine can decode; development only)` : 'bearer JWT required'}${o.decodeOnly ? ' · decode only' : ''} · Ctrl-C to stop\n` +
      `Web UI origins: ${origins.join(', ')}; point the UI at it: temporal server start-dev --ui-codec-endpoint ${server.url}\n` +
      `Temporal CLI: add ${temporalCodecFlags(server.url, token?.shell)} to temporal workflow show / describe / query\n`,
  );
  const signal = await signalled;
  process.stderr.write(`[keel] ${signal}: stopping\n`);
  await server.close();
}

/** `keel encryption keygen`: a new key file, or a new key added to one. */
async function keygen(o: { id?: string; out: string; addTo?: string }) {
  const id = o.id ?? newKeyId();
  if (o.addTo !== undefined) {
    const file = resolve(o.addTo);
    let existing: KeyRing;
    try {
      existing = readKeyRing(file);
    } catch (err) {
      throw usageError((err as Error).message);
    }
    if (existing.keys.has(id)) throw usageError(`${file} already has a key ${JSON.stringify(id)}: choose another --id`);
    writeSecretFile(file, checkedRing(newKeyRingJson(id, existing), file));
    process.stdout.write(
      `Added key ${id} to ${file} as primary (keys: ${[...existing.keys.keys(), id].join(', ')}; mode 0600). ` +
        'Restart workers and clients with it; keep the old keys while runs sealed with them may be read.\n',
    );
    return;
  }
  const file = resolve(o.out);
  if (existsSync(file))
    throw usageError(
      `${file} exists: to rotate, add a key with --add-to ${shellWord(o.out)}; else choose another --out`,
    );
  writeSecretFile(file, checkedRing(newKeyRingJson(id), file));
  process.stdout.write(
    `Wrote ${file} (primary key ${id}, mode 0600). Use it: export ${KEYS_FILE_ENV}=${shellWord(file)}\n`,
  );
}
