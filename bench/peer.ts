/**
 * Section 6 of the bench (`BENCH_ONLY=peer`): Keel side by side with its peer, `@temporalio/ai-sdk` (the AI SDK's
 * `generateText` loop in a workflow, each model call the plugin's `invokeModel` activity), and the engine floor, on
 * the same dev server: ms per turn and history bytes per turn of 10-, 100- and 500-turn runs, the same scripted
 * replies (one no-op tool call per turn) and the same no-op tool.
 *
 * The peer pins @temporalio/* 1.23.0 (Keel pins 1.24.0), so it cannot share the repo's node_modules: bench/peer-ai-sdk/
 * is its own package (exact pins, committed package-lock.json), installed here on first use with `npm ci` into
 * `${XDG_CACHE_HOME:-~/.cache}/keel/bench-peer-ai-sdk-<hash of package.json + lock>` and reused after. Its worker
 * (bench/peer-ai-sdk/worker.mjs) is a process of its own, on the Node running the bench, on its own task queue; its
 * sources are copied next to that install for each bench run, so they resolve the peer's packages. When the install
 * or the worker fails, the section reports "not run: <reason>" and the bench goes on.
 */
import { spawn, fork, type ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROUNDS, type Bench } from './context.js';
import { eventBytes, fetchChain, type Chain } from './history.js';
import { completedTurns, settleOrStall } from './history-growth.js';
import { childPid, procCpuMs } from './proc.js';
import { floorRun, keelInput, keelRun } from './runs.js';
import { summarize, type Summary } from './stats.js';

const PEER_SRC = fileURLToPath(new URL('./peer-ai-sdk/', import.meta.url));
const PEER_SOURCES = ['workflows.mjs', 'worker.mjs'];
export const PEER_PACKAGE = '@temporalio/ai-sdk';
export const PEER_QUEUE = 'bench-peer-ai-sdk';
/** Run lengths; each is run `rounds(turns)` times per contender, interleaved. */
export const PEER_TURNS = [10, 100, 500];
const rounds = (turns: number) => (turns <= 10 ? ROUNDS : turns <= 100 ? Math.min(3, ROUNDS) : 1);
/**
 * After the side-by-side runs, one peer run this long (BENCH_PEER_LIMIT_TURNS, 0 to skip) to find where it stops:
 * its model activity's input is the whole prompt, so its history grows quadratically toward Temporal's limits.
 */
export const PEER_LIMIT_TURNS = Number(process.env.BENCH_PEER_LIMIT_TURNS ?? 1000);
/** A peer run whose history stops growing for this long is terminated and reported as stopped. */
const STALL_MS = 30_000;

type Contender = 'keel' | 'floor' | 'peer';
const MODEL_ACTIVITY: Record<Contender, string> = { keel: 'callModel', floor: 'floorModel', peer: 'invokeModel' };

export async function peerSection(b: Bench) {
  const { log } = b;
  log(`peer: ${PEER_PACKAGE} beside Keel and the floor, ${PEER_TURNS.join(' / ')}-turn runs`);
  const install = await installPeer(log);
  if ('error' in install) {
    log(`  peer not run: ${install.error}`);
    return { package: PEER_PACKAGE, notRun: install.error };
  }
  const runDir = mkdtempSync(join(install.dir, 'run-'));
  for (const f of PEER_SOURCES) copyFileSync(join(PEER_SRC, f), join(runDir, f));
  const worker = new PeerProcess(join(runDir, 'worker.mjs'), { address: b.server.address, taskQueue: PEER_QUEUE });
  try {
    let ready: { pid: number; node: string };
    try {
      const t = performance.now();
      ready = await worker.ready;
      log(
        `  peer worker pid ${ready.pid} (Node ${ready.node}) ready in ${((performance.now() - t) / 1000).toFixed(1)} s`,
      );
    } catch (err) {
      const reason = `peer worker did not start: ${err instanceof Error ? err.message.split('\n', 1)[0] : String(err)}`;
      log(`  peer not run: ${reason}`);
      return { package: PEER_PACKAGE, versions: install.versions, install: install.info, notRun: reason };
    }
    return {
      package: PEER_PACKAGE,
      versions: install.versions,
      node: ready.node,
      install: install.info,
      ...(await measure(b, worker)),
    };
  } finally {
    await worker.stop();
    rmSync(runDir, { recursive: true, force: true });
  }
}

interface RunFigures {
  msPerTurn: Summary;
  workerCpuMsPerTurn: Summary;
  serverCpuMsPerTurn: Summary;
  /** From the last run's history (its whole continue-as-new chain). */
  history: {
    workflowId: string;
    runs: number;
    events: number;
    /** Serialized bytes (HistoryEvent protobuf) of the whole chain. */
    bytes: number;
    /** Through turn N's tool result; the rest is the run's close. */
    bytesThroughTurn: number;
    closeBytes: number;
    /** Per turn over the last 10 turns through turn N, and on average over turns 1..N. */
    bytesPerTurn: number;
    avgBytesPerTurn: number;
    eventsPerTurn: number;
    /** Largest model activity input (the peer sends the whole prompt each call). */
    largestModelInputBytes: number;
  };
}

interface PeerStop {
  turns: number;
  turnsCompleted: number;
  outcome: string;
  failure?: string;
}

async function measure(b: Bench, worker: PeerProcess) {
  const { log, client, keel1, main } = b;
  const serverPid = childPid('temporal');
  const peerRun = async (turns: number) => {
    const workflowId = `bench-peer-${randomUUID()}`;
    const t = performance.now();
    const handle = await client.workflow.start('peerAgentWorkflow', {
      taskQueue: PEER_QUEUE,
      workflowId,
      args: [turns],
    });
    // Timed to the result, as Keel's runs; settleOrStall's polling (describe every 2 s) only watches for a stall.
    const settled = handle.result().then(
      () => performance.now(),
      () => performance.now(),
    );
    const outcome = await settleOrStall(handle, STALL_MS);
    const ms = (await settled) - t;
    if (outcome.kind !== 'completed') return { ms, workflowId, stopped: outcome as { kind: string; message?: string } };
    const r = (await handle.result()) as { steps: number; toolCalls: number; text: string };
    if (r.toolCalls !== turns || r.text !== 'ok')
      throw new Error(`peer run: ${r.toolCalls} tool calls in ${r.steps} steps, text ${JSON.stringify(r.text)}`);
    return { ms, workflowId };
  };
  const run: Record<
    Contender,
    (turns: number) => Promise<{ ms: number; workflowId: string; stopped?: { kind: string; message?: string } }>
  > = {
    keel: async (turns) => {
      const k = await keelRun(keel1, keelInput('bench-noop', ['noop'], turns));
      if (k.result.turns !== turns || k.result.status !== 'stopped')
        throw new Error(`Keel run: ${k.result.status}, ${k.result.turns} turns`);
      return k;
    },
    floor: (turns) => floorRun(client, turns),
    peer: peerRun,
  };
  const cpuOf = (c: Contender) => (c === 'peer' ? worker.cpuMs() : main.cpuMs());
  log('  warm-up: one 10-turn run each');
  for (const c of ['keel', 'floor', 'peer'] as const) await run[c](10);

  const points: {
    turns: number;
    rounds: number;
    keel: RunFigures;
    floor: RunFigures;
    peer?: RunFigures;
    peerStopped?: PeerStop;
  }[] = [];
  let peerStop: PeerStop | undefined;
  for (const turns of PEER_TURNS) {
    const n = rounds(turns);
    const contenders: Contender[] = peerStop ? ['keel', 'floor'] : ['keel', 'floor', 'peer'];
    const wall = new Map<Contender, number[]>(contenders.map((c) => [c, []]));
    const wcpu = new Map<Contender, number[]>(contenders.map((c) => [c, []]));
    const scpu = new Map<Contender, number[]>(contenders.map((c) => [c, []]));
    const last = new Map<Contender, string>();
    let stoppedHere: PeerStop | undefined;
    for (let r = 0; r < n; r++) {
      for (const c of contenders) {
        if (c === 'peer' && stoppedHere) continue;
        const w0 = await cpuOf(c);
        const s0 = procCpuMs(serverPid);
        const x = await run[c](turns);
        wcpu.get(c)!.push(((await cpuOf(c)) - w0) / turns);
        scpu.get(c)!.push((procCpuMs(serverPid) - s0) / turns);
        wall.get(c)!.push(x.ms / turns);
        last.set(c, x.workflowId);
        if (x.stopped) {
          const o = x.stopped;
          const chain = await fetchChain(client, x.workflowId);
          stoppedHere = {
            turns,
            turnsCompleted: completedTurns(chain, MODEL_ACTIVITY.peer),
            outcome: o.kind,
            failure: o.message,
          };
          log(`  peer ${turns}-turn run ${o.kind} after ${stoppedHere.turnsCompleted} model calls: ${o.message ?? ''}`);
        }
      }
      log(
        `  ${turns} turns, round ${r + 1}/${n}: ${contenders
          .filter((c) => wall.get(c)!.length > r)
          .map((c) => `${c} ${wall.get(c)![r].toFixed(2)}`)
          .join(', ')} ms/turn`,
      );
    }
    const figures = async (c: Contender): Promise<RunFigures> => ({
      msPerTurn: summarize(wall.get(c)!),
      workerCpuMsPerTurn: summarize(wcpu.get(c)!),
      serverCpuMsPerTurn: summarize(scpu.get(c)!),
      history: historyFigures(await fetchChain(client, last.get(c)!), last.get(c)!, MODEL_ACTIVITY[c], turns),
    });
    const point = {
      turns,
      rounds: n,
      keel: await figures('keel'),
      floor: await figures('floor'),
      ...(contenders.includes('peer') ? { peer: await figures('peer') } : {}),
      ...(stoppedHere ? { peerStopped: stoppedHere } : {}),
    };
    points.push(point);
    const h = (f?: RunFigures) => (f ? `${Math.round(f.history.bytesPerTurn)} B` : '-');
    log(
      `  ${turns} turns: history bytes/turn (last 10) keel ${h(point.keel)}, floor ${h(point.floor)}, peer ${h(point.peer)}`,
    );
    peerStop ??= stoppedHere;
  }
  let limit: (PeerStop & { seconds: number; history: RunFigures['history'] }) | null = null;
  if (!peerStop && PEER_LIMIT_TURNS > 0) {
    log(`  peer: one ${PEER_LIMIT_TURNS}-turn run, to see where it stops`);
    const x = await peerRun(PEER_LIMIT_TURNS);
    const chain = await fetchChain(client, x.workflowId);
    const o = x.stopped ?? { kind: 'completed' };
    limit = {
      turns: PEER_LIMIT_TURNS,
      turnsCompleted: completedTurns(chain, MODEL_ACTIVITY.peer),
      outcome: o.kind,
      failure: o.message,
      seconds: x.ms / 1000,
      history: historyFigures(chain, x.workflowId, MODEL_ACTIVITY.peer, PEER_LIMIT_TURNS),
    };
    log(
      `  peer ${PEER_LIMIT_TURNS}-turn run: ${o.kind} after ${limit.turnsCompleted} model calls, history ${(limit.history.bytes / 1048576).toFixed(1)} MiB: ${o.message ?? ''}`,
    );
  }
  return { turns: PEER_TURNS, points, peerStopped: peerStop ?? null, limitRun: limit };
}

/**
 * History figures of one run through turn N. Turn t ends where the (t+1)-th model call is scheduled; the last one
 * where its tool result was recorded, so that the run's close (the final workflow task and the completion event with
 * the run's result; for the peer also its final text model call) is counted apart, as `closeBytes`, for every
 * contender alike.
 */
function historyFigures(chain: Chain, workflowId: string, modelActivity: string, turns: number): RunFigures['history'] {
  const cum = [0];
  for (const e of chain.events) cum.push(cum[cum.length - 1] + eventBytes(e));
  const starts = chain.events.flatMap((e, i) =>
    e.activityTaskScheduledEventAttributes?.activityType?.name === modelActivity ? [i] : [],
  );
  const lastCompleted = chain.events.findLastIndex((e) => e.activityTaskCompletedEventAttributes);
  const endOf = (t: number) => (t <= 0 ? 0 : t < starts.length ? starts[t] : lastCompleted + 1);
  const n = Math.max(1, Math.min(turns, starts.length)); // a peer run that stopped early: through its last model call
  const window = Math.min(10, n);
  const inputs = starts.map((i) =>
    (chain.events[i].activityTaskScheduledEventAttributes?.input?.payloads ?? []).reduce(
      (sum, x) => sum + (x.data?.length ?? 0),
      0,
    ),
  );
  const total = cum[cum.length - 1];
  return {
    workflowId,
    runs: chain.runs,
    events: chain.events.length,
    bytes: total,
    bytesThroughTurn: cum[endOf(n)],
    closeBytes: total - cum[endOf(n)],
    bytesPerTurn: (cum[endOf(n)] - cum[endOf(n - window)]) / window,
    avgBytesPerTurn: cum[endOf(n)] / n,
    eventsPerTurn: (endOf(n) - endOf(n - window)) / window,
    largestModelInputBytes: Math.max(0, ...inputs),
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Install: `npm ci` of bench/peer-ai-sdk into the cache, once per lock file.

interface Installed {
  dir: string;
  versions: Record<string, string>;
  info: { dir: string; reused: boolean; seconds: number };
}

export function peerInstallDir(): string {
  const hash = createHash('sha256')
    .update(readFileSync(join(PEER_SRC, 'package.json')))
    .update(readFileSync(join(PEER_SRC, 'package-lock.json')))
    .digest('hex')
    .slice(0, 16);
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cache, 'keel', `bench-peer-ai-sdk-${hash}`);
}

async function installPeer(log: (line: string) => void): Promise<Installed | { error: string }> {
  const t = performance.now();
  let dir: string;
  try {
    dir = peerInstallDir();
  } catch (err) {
    return { error: `cannot read bench/peer-ai-sdk: ${err instanceof Error ? err.message : String(err)}` };
  }
  const marker = join(dir, '.installed');
  const reused = existsSync(marker);
  if (reused) log(`  peer: reusing ${dir}`);
  else {
    const tmp = `${dir}.tmp-${process.pid}`;
    log(`  peer: npm ci of bench/peer-ai-sdk into ${tmp} (once per lock file; 15 s here)`);
    try {
      rmSync(tmp, { recursive: true, force: true });
      mkdirSync(tmp, { recursive: true });
      for (const f of ['package.json', 'package-lock.json']) copyFileSync(join(PEER_SRC, f), join(tmp, f));
      await npmCi(tmp, log);
      writeFileSync(join(tmp, '.installed'), `${new Date().toISOString()}\n`);
      if (existsSync(marker))
        rmSync(tmp, { recursive: true, force: true }); // another bench installed it meanwhile
      else {
        rmSync(dir, { recursive: true, force: true });
        renameSync(tmp, dir);
      }
    } catch (err) {
      rmSync(tmp, { recursive: true, force: true });
      return { error: `npm ci failed: ${err instanceof Error ? err.message : String(err)}` };
    }
    log(`  peer: installed in ${((performance.now() - t) / 1000).toFixed(0)} s`);
  }
  const versionOf = (name: string) =>
    (JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
  try {
    const versions = Object.fromEntries(
      [PEER_PACKAGE, '@temporalio/worker', 'ai', '@ai-sdk/provider'].map((n) => [n, versionOf(n)]),
    );
    return { dir, versions, info: { dir, reused, seconds: (performance.now() - t) / 1000 } };
  } catch (err) {
    return { error: `broken install in ${dir} (remove it to reinstall): ${String(err)}` };
  }
}

/** `npm ci` in `cwd` with the bench's Node first on PATH (for install scripts); its output goes to the log. */
function npmCi(cwd: string, log: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd,
      env: {
        // not the repo's package context that `npm run bench` exported; the user's npm config (registry, cache) stays
        ...Object.fromEntries(
          Object.entries(process.env).filter(
            ([k]) => !/^npm_(package_|lifecycle_|config_local_prefix$)/.test(k) && k !== 'INIT_CWD',
          ),
        ),
        PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    const onData = (d: Buffer) => {
      for (const line of d.toString().split('\n'))
        if (line.trim()) {
          log(`  [peer npm] ${line}`);
          lines.push(line);
        }
    };
    /** The line that says what went wrong: not npm's code/errno lines, stack frames or log-file pointer. */
    const reason = () =>
      lines.find((l) => /^npm error /.test(l) && !/^npm error (code|syscall|errno|\s|A complete log)/.test(l)) ??
      lines[lines.length - 1];
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const timer = setTimeout(() => child.kill('SIGKILL'), 15 * 60_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`exit ${code ?? signal}${lines.length ? `: ${reason()}` : ''}`));
    });
  });
}

// ---------------------------------------------------------------------------------------------------------------------
// The peer's worker process (bench/peer-ai-sdk/worker.mjs).

type FromPeer =
  | { type: 'ready'; pid: number; node: string }
  | { type: 'stats'; id: number; cpuMs: number }
  | { type: 'stopped'; id: number }
  | { type: 'error'; message: string };

class PeerProcess {
  readonly ready: Promise<{ pid: number; node: string }>;
  private readonly child: ChildProcess;
  private nextId = 1;
  private waiting = new Map<number, (m: FromPeer) => void>();
  private exited = false;

  constructor(script: string, config: { address: string; taskQueue: string }) {
    this.child = fork(script, [], {
      cwd: dirname(script),
      execPath: process.execPath,
      execArgv: [], // not the bench's tsx loader: plain Node, the peer's own packages
      env: { ...process.env, KEEL_BENCH_PEER: JSON.stringify(config) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('not ready after 300 s')), 300_000);
      this.child.on('message', (m: FromPeer) => {
        if (m.type === 'ready') {
          clearTimeout(timer);
          resolve(m);
        } else if (m.type === 'error') {
          process.stderr.write(`[bench] peer worker: ${m.message}\n`);
          reject(new Error(m.message));
        } else this.waiting.get(m.id)?.(m);
      });
      this.child.on('exit', (code) => {
        this.exited = true;
        clearTimeout(timer);
        reject(new Error(`peer worker exited with ${code}`));
      });
    });
    this.ready.catch(() => {});
  }

  private request(type: 'stats' | 'stop'): Promise<FromPeer> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`peer worker: no answer to ${type}`)), 60_000);
      this.waiting.set(id, (reply) => {
        clearTimeout(timer);
        this.waiting.delete(id);
        resolve(reply);
      });
      this.child.send({ type, id });
    });
  }

  /** CPU time (user + system) the process has used, in ms. */
  async cpuMs(): Promise<number> {
    return ((await this.request('stats')) as Extract<FromPeer, { type: 'stats' }>).cpuMs;
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    try {
      await this.request('stop');
    } catch {
      this.child.kill('SIGKILL');
    }
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (!this.exited) this.child.kill('SIGKILL');
  }
}
