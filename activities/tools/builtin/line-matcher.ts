/**
 * Line matching for `grep`'s own search (no `rg`, or `useExternalSearch: false`), off the event loop (issue 21 item 4).
 * JavaScript regular expressions backtrack: `^(a+)+$` against 28 `a`s and one other character took 8.5 s, every
 * extra character doubling it, and a match blocks the thread it runs on. So the lines are matched in a worker thread
 * that reports progress at least every {@link PROGRESS_MS}; when it has not finished a line within the budget, the
 * thread is terminated (V8 interrupts a running match) and the search fails with {@link patternTooSlow}. The event
 * loop of the worker process only waits: heartbeats, other activities and cancellation go on meanwhile.
 */
import { Worker } from 'node:worker_threads';
import { abortedError } from './abort.js';

/** How long one line may take to match before the search is stopped. */
export const LINE_MATCH_BUDGET_MS = 500;
/** The matching thread reports progress at least this often while it is not stuck in one line. */
const PROGRESS_MS = 50;
/**
 * How long a text may wait for the thread to pick it up (the thread's start, on a loaded machine, took over 500 ms):
 * the budget of one line starts when the thread says it began the text, not when the text was sent.
 */
const PICK_UP_MS = 30_000;

/** The matching thread: plain JavaScript (runs as is under tsx, vitest and the built package). */
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const regex = new RegExp(workerData.source, workerData.flags);
parentPort.on('message', ({ id, text }) => {
  parentPort.postMessage({ id, progress: true });
  const lines = text.split('\\n');
  if (text.endsWith('\\n')) lines.pop();
  const found = [];
  let last = Date.now();
  for (let i = 0; i < lines.length; i++) {
    if (regex.test(lines[i])) found.push(i + 1);
    const now = Date.now();
    if (now - last >= ${PROGRESS_MS}) {
      parentPort.postMessage({ id, progress: true });
      last = now;
    }
  }
  parentPort.postMessage({ id, lines: found });
});
`;

/** The tool error of a pattern that took longer than the budget on one line: the model can simplify it. */
export function patternTooSlow(pattern: string, file: string, budgetMs: number): string {
  return `grep stopped: the pattern ${JSON.stringify(pattern)} took more than ${budgetMs} ms on one line of ${file} (it backtracks too much; nested quantifiers such as (a+)+ do). Simplify the pattern, or search with literal: true.`;
}

interface Pending {
  resolve: (lines: number[]) => void;
  reject: (error: Error) => void;
  /** Called on progress: restarts the budget. */
  watchdog: (ms?: number) => void;
}

/**
 * One matching thread for one search: {@link match} gives the 1-based numbers of the lines of a text that match,
 * one text at a time. Always {@link close} it (the thread is started at the first `match`).
 */
export class LineMatcher {
  private worker?: Worker;
  private failed?: Error;
  private nextId = 0;
  private pending = new Map<number, Pending>();
  private readonly onAbort = () => this.fail(abortedError());

  constructor(
    private readonly regex: RegExp,
    private readonly pattern: string,
    private readonly signal?: AbortSignal,
    private readonly budgetMs = LINE_MATCH_BUDGET_MS,
  ) {
    signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** The numbers of the lines of `text` that match; `file` names it in the error of a pattern over budget. */
  match(text: string, file: string): Promise<number[]> {
    if (this.failed) return Promise.reject(this.failed);
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise<number[]>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const watchdog = (ms = this.budgetMs) => {
        clearTimeout(timer);
        timer = setTimeout(() => this.fail(new Error(patternTooSlow(this.pattern, file, this.budgetMs))), ms);
      };
      const done = () => {
        clearTimeout(timer);
        this.pending.delete(id);
      };
      this.pending.set(id, {
        resolve: (lines) => (done(), resolve(lines)),
        reject: (error) => (done(), reject(error)),
        watchdog,
      });
      watchdog(PICK_UP_MS);
      worker.postMessage({ id, text });
    });
  }

  /** Stops the thread (idempotent). */
  async close(): Promise<void> {
    this.signal?.removeEventListener('abort', this.onAbort);
    const worker = this.worker;
    this.worker = undefined;
    if (worker) await worker.terminate();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(THREAD, {
      eval: true,
      workerData: { source: this.regex.source, flags: this.regex.flags },
    });
    worker.unref();
    worker.on('message', (m: { id: number; progress?: true; lines?: number[] }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      if (m.lines) p.resolve(m.lines);
      else p.watchdog();
    });
    worker.on('error', (error) => this.fail(error));
    this.worker = worker;
    return worker;
  }

  /** Fails every pending match with `error` (and later ones) and terminates the thread. */
  private fail(error: Error): void {
    this.failed ??= error;
    for (const p of [...this.pending.values()]) p.reject(this.failed);
    void this.close();
  }
}
