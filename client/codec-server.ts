/**
 * A Temporal codec server for Keel's payload encryption (README "Reading encrypted runs: the codec server"): the Web UI
 * and the `temporal` CLI send it the payloads of a run and get them back decoded, so a person reads a sealed run while
 * Temporal only ever stores ciphertext.
 *
 * The protocol is Temporal's remote codec: `POST /decode` and `POST /encode`, `Content-Type: application/json`, the
 * body `{ "payloads": [ { "metadata": { "<key>": "<base64>" }, "data": "<base64>" } ] }` (the proto3 JSON of
 * `temporal.api.common.v1.Payloads`) both ways; the caller names its namespace in `X-Namespace` (one key ring serves
 * every namespace here). CORS for the Web UI's origin(s): a browser request from any other origin is refused (403),
 * so a web page the operator happens to open cannot decode through a codec server on their machine. With a token,
 * every `/encode` and `/decode` needs `Authorization: Bearer <token>` (401 otherwise); without one the server only
 * binds to a loopback address.
 *
 * Node's `http`, nothing else. Never imported by workflow code.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { timingSafeEqual, createHash } from 'node:crypto';
import { isIP } from 'node:net';
import type { Payload } from '@temporalio/common';
import { EncryptionCodec, type KeyRing } from '../common/encryption.js';

/** Default port of `keel codec-server` (Temporal's codec-server samples use 8888 too). */
export const DEFAULT_CODEC_SERVER_PORT = 8888;
/** The largest request body read (a history page of payloads); larger ones get 413. */
export const MAX_CODEC_BODY_BYTES = 64 * 1024 * 1024;
/** The environment variable `keel codec-server` reads its bearer token from (else `--token-file`). */
export const CODEC_TOKEN_ENV = 'KEEL_CODEC_SERVER_TOKEN';

export interface CodecServerOptions {
  /** The keys: the primary seals on `/encode`, every key opens on `/decode`. */
  keyRing: KeyRing;
  /**
   * The bearer token every `/encode` and `/decode` must carry (`Authorization: Bearer <token>`). Without one,
   * `createCodecServer` refuses any `host` that is not a loopback address.
   */
  token?: string;
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

/** Thrown by {@link createCodecServer} when it must not start as configured; the message says what to do. */
export class CodecServerConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CodecServerConfigError';
  }
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

/** Constant-time comparison of the presented token with the expected one (both hashed: equal lengths). */
function tokenMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer (.+)$/i.exec(header ?? '');
  if (!m) return false;
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(m[1]!.trim()), digest(token));
}

function readBody(req: IncomingMessage): Promise<Buffer | 'too large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_CODEC_BODY_BYTES) {
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

/**
 * Starts a codec server ({@link CodecServerOptions}) and resolves once it listens. Rejects with
 * {@link CodecServerConfigError} when it has no token and `host` is not loopback, or an origin is not scheme://host:port;
 * with the listen error (e.g. EADDRINUSE) when the port is taken.
 */
export async function createCodecServer(opts: CodecServerOptions): Promise<CodecServer> {
  const host = opts.host ?? '127.0.0.1';
  const token = opts.token?.trim() || undefined;
  if (token === undefined && !isLoopback(host))
    throw new CodecServerConfigError(
      `refusing to serve decryption on ${host} without a bearer token: anyone who reaches it could read every run. ` +
        `Give a token (--token-file <file>, or $${CODEC_TOKEN_ENV}), or listen on 127.0.0.1`,
    );
  const origins = new Set((opts.origins ?? []).map(normalizeOrigin));
  const codec = new EncryptionCodec(opts.keyRing);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const origin = req.headers.origin;
    const send = (status: number, body?: string, type = 'text/plain; charset=utf-8') => {
      res.statusCode = status;
      if (body !== undefined) res.setHeader('Content-Type', type);
      res.end(body === undefined ? undefined : body + (type.startsWith('text/') ? '\n' : ''));
    };
    res.setHeader('Vary', 'Origin');
    if (origin !== undefined) {
      if (!origins.has(origin))
        return send(
          403,
          `origin ${origin} is not allowed; start the codec server with --origin ${origin} to let that Web UI call it`,
        );
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
    }
    const path = new URL(req.url ?? '/', 'http://codec').pathname;
    const endpoint = path === '/decode' || path === '/encode' ? path : undefined;
    if (req.method === 'OPTIONS') {
      if (!endpoint) return send(404, `no such endpoint ${path}: use /encode or /decode`);
      res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
      res.setHeader('Access-Control-Max-Age', '600');
      return send(204);
    }
    if (!endpoint) return send(404, `no such endpoint ${path}: use POST /encode or POST /decode`);
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST, OPTIONS');
      return send(405, `${path} takes POST`);
    }
    if (token !== undefined && !tokenMatches(req.headers.authorization, token)) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      return send(401, 'missing or wrong bearer token: send Authorization: Bearer <the codec server token>');
    }
    const raw = await readBody(req);
    if (raw === 'too large') return send(413, `the body is larger than ${MAX_CODEC_BODY_BYTES} bytes`);
    let payloads: Payload[];
    try {
      payloads = payloadsFromJson(JSON.parse(raw.toString('utf8')));
    } catch (err) {
      return send(400, `bad request: ${err instanceof SyntaxError ? 'the body is not JSON' : (err as Error).message}`);
    }
    let out: Payload[];
    try {
      out = endpoint === '/decode' ? await codec.decode(payloads) : await codec.encode(payloads);
    } catch (err) {
      // DecryptionError: names the key id and what to do, never key material
      return send(422, (err as Error).message);
    }
    send(200, JSON.stringify(payloadsToJson(out)), 'application/json');
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.statusCode = 500;
      res.end(`internal error: ${(err as Error).message}\n`);
    });
  });
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
    url: `http://${urlHost}:${port}`,
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
