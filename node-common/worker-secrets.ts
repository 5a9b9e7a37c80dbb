/**
 * The files a worker was given as secrets — its encryption key ring, approval secrets, MCP configuration (it may hold
 * HTTP headers), TLS client key and certificates, Temporal configuration file, and the file named by any `*_FILE`
 * variable of its environment. No sandboxed process (a built-in tool's, a stdio MCP server's) sees them: wherever a
 * directory bound into a sandbox holds one, it is hidden behind an empty file (`sandbox.ts`).
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';

const registered = new Set<string>();

/** Adds `file` (resolved against the worker's directory) to the worker's secret files. */
export function registerWorkerSecretFile(file: string | undefined): void {
  if (file) registered.add(path.resolve(file));
}

/** Every secret file of the worker now: the registered ones and the values of `*_FILE` variables. */
export function workerSecretFiles(): string[] {
  const fromEnv = Object.entries(process.env)
    .filter(([name, value]) => name.endsWith('_FILE') && value)
    .map(([, value]) => path.resolve(value!));
  return [...new Set([...registered, ...fromEnv])];
}

const inside = (p: string, dir: string) => p === dir || p.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep);

/**
 * The secret files (each by the path it is reached at, and by its real path when that differs) inside one of `bound`
 * (directories or files bound into a sandbox at their own paths): what the sandbox must hide.
 */
export function hiddenSecretFiles(bound: readonly string[]): string[] {
  const dirs = bound.map((d) => path.resolve(d));
  const out = new Set<string>();
  for (const file of workerSecretFiles()) {
    let real = file;
    try {
      real = realpathSync(file);
    } catch {
      continue; // absent: nothing to hide
    }
    for (const p of [file, real]) if (dirs.some((d) => inside(p, d))) out.add(p);
  }
  return [...out];
}
