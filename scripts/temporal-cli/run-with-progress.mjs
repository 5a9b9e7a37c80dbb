// Runs a child process, keeping its last output lines and printing a progress line every 10 s.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export const PROGRESS_EVERY_MS = 10_000;

/**
 * @param {string} cmd
 * @param {string[]} args
 * @param {{ env?: NodeJS.ProcessEnv, cwd?: string, onLine?: (line: string) => void, progress: () => string,
 *   touch: () => void, log: (line: string) => void }} o
 * @returns {Promise<{ code: number | null, error?: Error, tail: string[] }>} `tail`: the last 40 output lines
 */
export function runWithProgress(cmd, args, { env, cwd, onLine = () => {}, progress, touch, log }) {
  return new Promise((resolvePromise) => {
    const tail = [];
    let child;
    try {
      child = spawn(cmd, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (error) {
      resolvePromise({ code: null, error, tail });
      return;
    }
    const timer = setInterval(() => {
      touch();
      log(progress());
    }, PROGRESS_EVERY_MS);
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        onLine(line);
        tail.push(line);
        if (tail.length > 40) tail.shift();
      });
    }
    let settled = false;
    const done = (code, error) => {
      if (settled) return;
      settled = true;
      clearInterval(timer);
      resolvePromise({ code, error, tail });
    };
    child.on('error', (error) => done(null, error));
    child.on('close', (code) => done(code));
  });
}
