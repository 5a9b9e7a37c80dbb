// A lock file in the cache dir so that concurrent provisioners wait for one instead of all downloading. Correctness
// never depends on it: a binary only ever appears in the cache by atomic rename.
import { closeSync, openSync, readFileSync, rmSync, statSync, utimesSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fmtDuration } from './locate.mjs';

const STALE_MS = 90_000; // the holder refreshes the lock's mtime at every progress tick
const WAIT_MAX_MS = 15 * 60_000;
const NOTE_EVERY_MS = 10_000;

function tryAcquire(lockPath) {
  try {
    const fd = openSync(lockPath, 'wx');
    writeSync(fd, `${process.pid} ${hostname()} ${Date.now()}\n`);
    closeSync(fd);
    return true;
  } catch (e) {
    if (e.code === 'EEXIST') return false;
    throw e;
  }
}

function holderOf(lockPath) {
  try {
    const [pid, host] = readFileSync(lockPath, 'utf8').trim().split(/\s+/);
    return { pid: Number(pid), host, mtimeMs: statSync(lockPath).mtimeMs };
  } catch {
    return undefined; // gone, or half-written: treated as held; the mtime check applies next time
  }
}

function isStale(holder) {
  if (!holder) return false;
  if (Date.now() - holder.mtimeMs > STALE_MS) return true;
  if (holder.host === hostname() && Number.isInteger(holder.pid) && holder.pid > 0) {
    try {
      process.kill(holder.pid, 0);
    } catch (e) {
      if (e.code === 'ESRCH') return true;
    }
  }
  return false;
}

/**
 * Runs `fn(touch)` while holding `lockPath`; `touch()` keeps the lock fresh. While another live process holds it,
 * waits, returning early with `ready()`'s value as soon as that is truthy (the other process finished).
 * @template T
 * @param {{ lockPath: string, ready: () => T | undefined, log: (line: string) => void, what: string }} o
 * @param {(touch: () => void) => Promise<T>} fn
 * @returns {Promise<T>}
 */
export async function withLock({ lockPath, ready, log, what }, fn) {
  const waitStart = Date.now();
  let lastNote = 0;
  while (!tryAcquire(lockPath)) {
    const done = ready();
    if (done) return done;
    const holder = holderOf(lockPath);
    if (isStale(holder)) {
      log(`[keel] removing stale lock ${lockPath} (pid ${holder?.pid} on ${holder?.host} is gone)`);
      rmSync(lockPath, { force: true });
      continue;
    }
    const waited = Date.now() - waitStart;
    if (waited > WAIT_MAX_MS) {
      throw new Error(
        `gave up after ${fmtDuration(waited)} waiting for ${lockPath}; delete it if no other process is ${what}`,
      );
    }
    if (Date.now() - lastNote >= NOTE_EVERY_MS) {
      lastNote = Date.now();
      log(`[keel] another process (pid ${holder?.pid ?? '?'}) is ${what}; waiting for it… ${fmtDuration(waited)}`);
    }
    await sleep(500);
  }
  const touch = () => {
    try {
      const now = new Date();
      utimesSync(lockPath, now, now);
    } catch {
      /* the lock is only advisory */
    }
  };
  try {
    return await fn(touch);
  } finally {
    rmSync(lockPath, { force: true });
  }
}
