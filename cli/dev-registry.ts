/**
 * Where `keel dev` records the Web UI address of the dev server it runs, so that the links every other `keel` command
 * prints point at that UI (`keel dev --ui-port 9000` → links on :9000) instead of a fixed default; and, with
 * `--encrypt`, the path of its key file, so that every other `keel` command talking to that server seals and opens
 * payloads with the same key ring (README "Encryption") without a flag.
 *
 * One small JSON file per gRPC port of a loopback dev server: `${XDG_CACHE_HOME:-~/.cache}/keel/dev-servers/<port>.json`
 * holding `{ ui, pid, encryptionKeys? }` (a path, never key material). A record whose process is gone is ignored.
 * Precedence for links: `--ui`, then `$KEEL_UI_URL`, then this record, then `http://localhost:8233`; for keys:
 * `--encryption-keys`, then `$KEEL_ENCRYPTION_KEYS_FILE` / `$KEEL_ENCRYPTION_KEYS`, then this record, then none.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

interface DevServerRecord {
  ui: string;
  pid: number;
  /** `keel dev --encrypt`: the absolute path of its key file. */
  encryptionKeys?: string;
}

function registryDir(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'keel', 'dev-servers');
}

/** The port of a loopback `host:port` address (localhost, 127.0.0.1, [::1]); undefined for any other host. */
function loopbackPort(address: string): number | undefined {
  const m = /^(localhost|127\.0\.0\.1|\[::1\]):(\d+)$/.exec(address.trim());
  return m ? Number(m[2]) : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Records that this process serves `ui` (and, with `encryptionKeys`, seals with that key file) for the dev server at
 * `address`; returns the function that removes the record.
 */
export function recordDevServer(
  address: string,
  ui: string,
  encryptionKeys?: string,
  env: NodeJS.ProcessEnv = process.env,
): () => void {
  const port = loopbackPort(address);
  if (port === undefined) return () => {};
  const dir = registryDir(env);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${port}.json`);
  const record: DevServerRecord = { ui, pid: process.pid, ...(encryptionKeys ? { encryptionKeys } : {}) };
  writeFileSync(file, `${JSON.stringify(record)}\n`);
  return () => rmSync(file, { force: true });
}

/** The record of a running `keel dev` for `address`, if any (a record whose process is gone is none). */
function recordOf(address: string, env: NodeJS.ProcessEnv): DevServerRecord | undefined {
  const port = loopbackPort(address);
  if (port === undefined) return undefined;
  try {
    const record = JSON.parse(readFileSync(join(registryDir(env), `${port}.json`), 'utf8')) as Partial<DevServerRecord>;
    if (typeof record.ui !== 'string' || typeof record.pid !== 'number' || !isAlive(record.pid)) return undefined;
    return record as DevServerRecord;
  } catch {
    return undefined;
  }
}

/** The Web UI base URL a running `keel dev` recorded for `address`, if any. */
export function recordedDevUi(address: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return recordOf(address, env)?.ui;
}

/** The key file a running `keel dev --encrypt` recorded for `address`, if any. */
export function recordedDevKeys(address: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const keys = recordOf(address, env)?.encryptionKeys;
  return typeof keys === 'string' ? keys : undefined;
}
