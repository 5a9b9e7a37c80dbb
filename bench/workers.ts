/** Forks and talks to bench/worker-process.ts. */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { FromWorker, ToWorker, WorkerProcessConfig } from './worker-process.js';

const WORKER_PATH = fileURLToPath(new URL('./worker-process.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));

type Reply<T extends FromWorker['type']> = Extract<FromWorker, { type: T }>;
type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;

export class WorkerProcess {
  private nextId = 1;
  private waiting = new Map<number, (m: FromWorker) => void>();
  readonly ready: Promise<number>;
  private exited = false;

  private constructor(
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    this.ready = new Promise((resolve, reject) => {
      child.on('message', (m: FromWorker) => {
        if (m.type === 'ready') resolve(m.pid);
        else if (m.type === 'error') {
          process.stderr.write(`[bench] worker ${name}: ${m.message}\n`);
          reject(new Error(m.message));
        } else this.waiting.get(m.id)?.(m);
      });
      child.on('exit', (code) => {
        this.exited = true;
        reject(new Error(`worker ${name} exited with ${code}`));
      });
    });
    this.ready.catch(() => {});
  }

  static spawn(name: string, config: WorkerProcessConfig, opts: { exposeGc?: boolean } = {}): WorkerProcess {
    const child = fork(WORKER_PATH, [], {
      cwd: ROOT,
      execArgv: [
        '--import',
        'tsx',
        ...(opts.exposeGc ? ['--expose-gc'] : []),
        // BENCH_CPU_PROF=<dir>: V8 CPU profiles of every worker process (main thread and workflow thread)
        ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
      ],
      env: { ...process.env, KEEL_BENCH_WORKER: JSON.stringify(config) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    return new WorkerProcess(name, child);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  private request(m: DistributiveOmit<ToWorker, 'id'>): Promise<FromWorker> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker ${this.name}: no answer to ${m.type}`)), 60_000);
      this.waiting.set(id, (reply) => {
        clearTimeout(timer);
        this.waiting.delete(id);
        resolve(reply);
      });
      this.child.send({ ...m, id } as ToWorker);
    });
  }

  async rss(): Promise<Reply<'rss'>> {
    return (await this.request({ type: 'rss' })) as Reply<'rss'>;
  }

  /** Queries sent by the activities (by query type) since the last reset. */
  async stats(reset = false): Promise<Reply<'stats'>['queries']> {
    return ((await this.request({ type: 'stats', reset })) as Reply<'stats'>).queries;
  }

  /** CPU time (user + system) the process has used, in ms. */
  async cpuMs(): Promise<number> {
    return ((await this.request({ type: 'stats' })) as Reply<'stats'>).cpuMs;
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    try {
      await this.request({ type: 'stop' });
    } catch {
      this.child.kill('SIGKILL');
    }
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (!this.exited) this.child.kill('SIGKILL');
  }
}
