/**
 * A Temporal codec server for Keel's payload encryption (README "Reading encrypted runs: the codec server"): the Web UI
 * and the `temporal` CLI send it the payloads of a run and get them back decoded, so a person reads a sealed run while
 * Temporal only ever stores ciphertext.
 *
 * The protocol is Temporal's remote codec: `POST /decode` and `POST /encode`, `Content-Type: application/json`, the
 * body `{ "payloads": [ { "metadata": { "<key>": "<base64>" }, "data": "<base64>" } ] }` (the proto3 JSON of
 * `temporal.api.common.v1.Payloads`) both ways; the caller names its namespace in `X-Namespace` (one key ring serves
 * every namespace here unless `namespaces` limits them). CORS for the Web UI's origin(s): a browser request from any
 * other origin is refused (403), so a web page the operator happens to open cannot decode through a codec server on
 * their machine.
 *
 * Secure by default (issue 33 item 9): every `/encode` and `/decode` needs `Authorization: Bearer …` — a static token
 * of at least 32 characters, or a JWT verified against a JWKS (client/codec-auth.ts: the per-user OIDC token the Web UI
 * forwards, with a per-namespace claim) — unless `insecureNoAuth` is given explicitly, which only a loopback address
 * takes (the caller announces it). A non-loopback address needs TLS (`tls`). `decodeOnly` turns `/encode` off. At
 * most `maxConcurrent` requests are served at once (503 beyond) and a body over `maxBodyBytes` gets 413 before it is
 * read, so a few large requests cannot exhaust the process.
 *
 * Node's `http`, nothing else. Never imported by workflow code.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { isIP } from 'node:net';
import type { Payload } from '@temporalio/common';
import { EncryptionCodec, type KeyRing } from '../node-common/encryption.js';
import {
  CodecServerConfigError,
  jwtAuth,
  MIN_CODEC_TOKEN_CHARS,
  tokenAuth,
  type CodecAuth,
  type CodecJwtOptions,
} from './codec-auth.js';

export { CodecServerConfigError, MIN_CODEC_TOKEN_CHARS, type CodecJwtOptions } from './codec-auth.js';

/** Default port of `keel codec-server` (Temporal's codec-server samples use 8888 too). */
export const DEFAULT_CODEC_SERVER_PORT = 8888;
/** The largest request body read by default (a history page of payloads); larger ones get 413. */
export const MAX_CODEC_BODY_BYTES = 32 * 1024 * 1024;
/** Requests served at once by default; more get 503 (each holds its body and its decoded copy in memory). */
export const MAX_CODEC_CONCURRENT = 2;
/** The environment variable `keel codec-server` reads its bearer token from (else `--token-file`). */
export const CODEC_TOKEN_ENV = 'KEEL_CODEC_SERVER_TOKEN';

export interface CodecServerOptions {
  /** The keys: the primary seals on `/encode`, every key opens on `/decode`. */
  keyRing: KeyRing;
  /**
   * The bearer token every `/encode` and `/decode` must carry (`Authorization: Bearer <token>`), at least
   * {@link MIN_CODEC_TOKEN_CHARS} characters. One of `token`, `jwt` and `insecureNoAuth` is required.
   */
  token?: string;
  /** Verify the bearer as a JWT (OIDC) instead of a static token (client/codec-auth.ts). */
  jwt?: CodecJwtOptions;
  /** No authentication at all: only on a loopback address, and the caller announces it (development only). */
  insecureNoAuth?: boolean;
  /** HTTPS: PEM certificate chain and private key files. Required for a host that is not loopback. */
  tls?: { certFile: string; keyFile: string };
  /** The namespaces served (`X-Namespace`); absent: any. Another namespace gets 403. */
  namespaces?: readonly string[];
  /** Serve `/decode` only: `/encode` answers 403. */
  decodeOnly?: boolean;
  /** Requests served at once (default {@link MAX_CODEC_CONCURRENT}); more get 503 with `Retry-After`. */
  maxConcurrent?: number;
  /** The largest body (default {@link MAX_CODEC_BODY_BYTES}); larger gets 413. */
  maxBodyBytes?: number;
  /**
   * Origins (scheme://host:port) of the Web UI(s) allowed to call from a browser, e.g. `http://localhost:8233`. A
   * request carrying another `Origin` is refused with 403; requests without `Origin` (the `temporal` CLI) are served.
   */
  origins?: readonly string[];
  /** Interface to bind (default 127.0.0.1). */
  host?: string;
  /** Port (default {@link DEFAULT_CODEC_SERVER_PORT}; 0: a free port). */
  port?: number;
}

export interface CodecServer {
  /** http://<host>:<port>, what `--codec-endpoint` / `--ui-codec-endpoint` take. */
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  /** Stops listening and closes open connections. */
  close(): Promise<void>;
}

/** Whether `host` only reaches this machine: 127.0.0.0/8, ::1 or localhost. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h === '::1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

/** An origin as browsers send it: scheme://host[:port], no path or trailing slash. Throws on anything else. */
export function normalizeOrigin(origin: string): string {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    throw new CodecServerConfigError(`origin ${JSON.stringify(origin)} is not a URL; give it as http://host:port`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || (url.pathname !== '/' && url.pathname !== ''))
    throw new CodecServerConfigError(
      `origin ${JSON.stringify(origin)} must be scheme://host[:port] with no path, e.g. http://localhost:8233`,
    );
  return url.origin;
}

interface JsonPayload {
  metadata?: Record<string, string> | null;
  data?: string | null;
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** `{ payloads: [...] }` in proto3 JSON → payloads; throws a message for a 400 on anything else. */
function payloadsFromJson(body: unknown): Payload[] {
  const list = (body as { payloads?: unknown } | null)?.payloads;
  if (!Array.isArray(list)) throw new Error('the body must be {"payloads": [...]}');
  return list.map((p: unknown, i) => {
    if (!p || typeof p !== 'object') throw new Error(`payloads[${i}] must be an object`);
    const { metadata, data } = p as JsonPayload;
    const bytes = (v: unknown, where: string): Buffer => {
      if (typeof v !== 'string' || !BASE64.test(v)) throw new Error(`${where} must be base64`);
      return Buffer.from(v, 'base64');
    };
    const meta: Record<string, Uint8Array> = {};
    if (metadata !== undefined && metadata !== null) {
      if (typeof metadata !== 'object') throw new Error(`payloads[${i}].metadata must be an object`);
      for (const [k, v] of Object.entries(metadata)) meta[k] = bytes(v, `payloads[${i}].metadata.${k}`);
    }
    return {
      metadata: meta,
      data: data === undefined || data === null ? Buffer.alloc(0) : bytes(data, `payloads[${i}].data`),
    };
  });
}

function payloadsToJson(payloads: Payload[]): { payloads: JsonPayload[] } {
  return {
    payloads: payloads.map((p) => ({
      metadata: Object.fromEntries(
        Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
      ),
      data: Buffer.from(p.data ?? []).toString('base64'),
    })),
  };
}

function readBody(req: IncomingMessage, max: number): Promise<Buffer | 'too large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        req.removeAllListeners('data');
        req.resume();
        resolve('too large');
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

const ALLOWED_HEADERS = 'Authorization, Content-Type, X-Namespace';

const mib = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;

/** Who may call, decided from the options at start; refuses an unsafe configuration with what to do. */
function authOf(opts: CodecServerOptions, host: string): CodecAuth | undefined {
  const token = opts.token?.trim() || undefined;
  const given = [token && 'a token', opts.jwt && 'JWT verification', opts.insecureNoAuth && '--insecure-no-auth'];
  const named = given.filter((g): g is string => typeof g === 'string');
  if (named.length > 1) throw new CodecServerConfigError(`give one of ${named.join(', ')}; they contradict each other`);
  if (!isLoopback(host) && !opts.tls)
    throw new CodecServerConfigError(
      `refusing to serve decryption on ${host} over plain HTTP: the token and every decoded payload would cross the ` +
        'network in clear. Give --tls-cert <file> and --tls-key <file>, or listen on 127.0.0.1',
    );
  if (opts.insecureNoAuth) {
    if (!isLoopback(host))
      throw new CodecServerConfigError(
        `--insecure-no-auth only on a loopback address, not ${host}: give a token or JWT verification`,
      );
    return undefined;
  }
  if (token !== undefined) return tokenAuth(token);
  if (opts.jwt) return jwtAuth(opts.jwt);
  throw new CodecServerConfigError(
    `refusing to serve decryption without authentication: any process that reaches ${host} (a local one, a tool ` +
      `with network host) could read every run. Give a token of at least ${MIN_CODEC_TOKEN_CHARS} characters ` +
      `(--token-file <file>, or $${CODEC_TOKEN_ENV}) or JWT verification (--jwks <file> or --jwks-url <url>), or ` +
      '--insecure-no-auth on a loopback address (development only)',
  );
}

type Send = (status: number, body?: string, type?: string) => void;

/** CORS: answers 403 for a browser origin not allowed (true), else sets the headers (false). */
function corsRefused(req: IncomingMessage, res: ServerResponse, origins: Set<string>, send: Send): boolean {
  const origin = req.headers.origin;
  res.setHeader('Vary', 'Origin');
  if (origin === undefined) return false;
  if (!origins.has(origin)) {
    send(
      403,
      `origin ${origin} is not allowed; start the codec server with --origin ${origin} to let that Web UI call it`,
    );
    return true;
  }
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Access-Control-Allow-Credentials', 'true');
  return false;
}

/** Path, method, authentication, namespace and `--decode-only` checked: undefined once answered, else the endpoint. */
async function admitted(
  req: IncomingMessage,
  res: ServerResponse,
  send: Send,
  opts: CodecServerOptions,
  auth: CodecAuth | undefined,
): Promise<'/decode' | '/encode' | undefined> {
  const path = new URL(req.url ?? '/', 'http://codec').pathname;
  const endpoint = path === '/decode' || path === '/encode' ? path : undefined;
  if (req.method === 'OPTIONS') {
    if (!endpoint) return void send(404, `no such endpoint ${path}: use /encode or /decode`);
    res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
    res.setHeader('Access-Control-Max-Age', '600');
    return void send(204);
  }
  if (!endpoint) return void send(404, `no such endpoint ${path}: use POST /encode or POST /decode`);
  if (req.method !== 'POST') {
    res.setHeader('Allow', 'POST, OPTIONS');
    return void send(405, `${path} takes POST`);
  }
  const header = req.headers['x-namespace'];
  const namespace = Array.isArray(header) ? header[0] : header;
  if (auth) {
    const verdict = await auth({ authorization: req.headers.authorization, namespace });
    if (!verdict.ok) {
      if (verdict.status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
      return void send(verdict.status, verdict.text);
    }
  }
  if (opts.namespaces && (namespace === undefined || !opts.namespaces.includes(namespace)))
    return void send(
      403,
      `namespace ${namespace ?? '(no X-Namespace header)'} is not served here (this codec server serves ${opts.namespaces.join(', ')})`,
    );
  if (endpoint === '/encode' && opts.decodeOnly)
    return void send(403, 'this codec server only decodes (--decode-only): /encode is off');
  return endpoint;
}

/**
 * Starts a codec server ({@link CodecServerOptions}) and resolves once it listens. Rejects with
 * {@link CodecServerConfigError} when it must not start as configured (no authentication, a short token, plain HTTP
 * off loopback, an origin that is not scheme://host:port); with the listen error (e.g. EADDRINUSE) when the port is
 * taken.
 */
export async function createCodecServer(opts: CodecServerOptions): Promise<CodecServer> {
  const host = opts.host ?? '127.0.0.1';
  const auth = authOf(opts, host);
  const origins = new Set((opts.origins ?? []).map(normalizeOrigin));
  const codec = new EncryptionCodec(opts.keyRing);
  const maxBody = opts.maxBodyBytes ?? MAX_CODEC_BODY_BYTES;
  const maxConcurrent = opts.maxConcurrent ?? MAX_CODEC_CONCURRENT;
  const tooLarge = `request body too large: this codec server takes at most ${mib(maxBody)} (${maxBody} bytes)`;
  let inFlight = 0;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const send: Send = (status, body, type = 'text/plain; charset=utf-8') => {
      res.statusCode = status;
      if (body !== undefined) res.setHeader('Content-Type', type);
      res.end(body === undefined ? undefined : body + (type.startsWith('text/') ? '\n' : ''));
    };
    if (corsRefused(req, res, origins, send)) return;
    const endpoint = await admitted(req, res, send, opts, auth);
    if (!endpoint) return;
    if (Number(req.headers['content-length'] ?? 0) > maxBody) return send(413, tooLarge);
    if (inFlight >= maxConcurrent) {
      res.setHeader('Retry-After', '1');
      return send(503, `busy: ${maxConcurrent} requests are being served; retry in a moment`);
    }
    inFlight += 1;
    try {
      const raw = await readBody(req, maxBody);
      if (raw === 'too large') return send(413, tooLarge);
      let payloads: Payload[];
      try {
        payloads = payloadsFromJson(JSON.parse(raw.toString('utf8')));
      } catch (err) {
        return send(
          400,
          `bad request: ${err instanceof SyntaxError ? 'the body is not JSON' : (err as Error).message}`,
        );
      }
      let out: Payload[];
      try {
        out = endpoint === '/decode' ? await codec.decode(payloads) : await codec.encode(payloads);
      } catch (err) {
        // DecryptionError: names the key id and what to do, never key material
        return send(422, (err as Error).message);
      }
      send(200, JSON.stringify(payloadsToJson(out)), 'application/json');
    } finally {
      inFlight -= 1;
    }
  };
  return listen(opts, host, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.statusCode = 500;
      res.end(`internal error: ${(err as Error).message}\n`);
    });
  });
}

/** Listens (HTTPS with `tls`) and resolves the running server. */
async function listen(
  opts: CodecServerOptions,
  host: string,
  onRequest: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<CodecServer> {
  const read = (file: string, what: string) => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new CodecServerConfigError(`--tls-${what} ${file}: cannot read it (${(err as Error).message})`);
    }
  };
  const server: Server = opts.tls
    ? createTlsServer({ cert: read(opts.tls.certFile, 'cert'), key: read(opts.tls.keyFile, 'key') }, onRequest)
    : createServer(onRequest);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? DEFAULT_CODEC_SERVER_PORT, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as { port: number }).port;
  const urlHost = isIP(host) === 6 ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    url: `${opts.tls ? 'https' : 'http'}://${urlHost}:${port}`,
    port,
    server,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
