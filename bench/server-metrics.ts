/**
 * The Temporal server's own counters, read from its Prometheus endpoint (`temporal server start-dev --metrics-port`,
 * bench/main.ts): requests by service and operation (`service_requests`), persistence requests
 * (`persistence_requests`) and the server's `action` counter, for one namespace. bench/capacity.ts takes them before
 * and after a measured piece of work and keeps the difference.
 */
import { createServer } from 'node:net';

export interface ServerCounters {
  /** Frontend requests (the client-facing RPCs: workers, clients, readers), by operation. */
  frontend: Record<string, number>;
  /** History-service requests (frontend → history and matching → history inside the cluster), by operation. */
  history: Record<string, number>;
  /** Matching-service requests (task queue dispatch inside the cluster), all operations. */
  matching: number;
  /** Persistence (database) requests of every service, all operations. */
  persistence: number;
  /** The server's `action` counter (what Temporal Cloud bills as actions), by `<service>/<action_type>`. */
  actions: Record<string, number>;
}

/** A free TCP port on 127.0.0.1 (for `--metrics-port`); another process may take it before the server binds it. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const SERIES = /^(service_requests|persistence_requests|action)\{([^}]*)\} (\S+)$/;
const LABEL = /(\w+)="([^"]*)"/g;

/** The counters of `namespace` in a Prometheus text exposition (`/metrics`); other series and namespaces are left out. */
export function parseCounters(text: string, namespace = 'default'): ServerCounters {
  const c: ServerCounters = { frontend: {}, history: {}, matching: 0, persistence: 0, actions: {} };
  for (const line of text.split('\n')) {
    const m = SERIES.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2].matchAll(LABEL)].map((l) => [l[1], l[2]]));
    if (labels.namespace !== namespace) continue;
    const value = Number(m[3]);
    if (m[1] === 'persistence_requests') c.persistence += value;
    else if (m[1] === 'action') add(c.actions, `${labels.service_name ?? '?'}/${labels.action_type ?? '?'}`, value);
    else if (labels.service_name === 'frontend') add(c.frontend, labels.operation ?? '?', value);
    else if (labels.service_name === 'history') add(c.history, labels.operation ?? '?', value);
    else if (labels.service_name === 'matching') c.matching += value;
  }
  return c;
}

function add(into: Record<string, number>, key: string, n: number): void {
  into[key] = (into[key] ?? 0) + n;
}

/** The counters now (one GET of `url`, e.g. `http://127.0.0.1:<port>/metrics`). */
export async function scrapeCounters(url: string, namespace = 'default'): Promise<ServerCounters> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return parseCounters(await res.text(), namespace);
}

/** What was counted from `before` to `after` (counters only grow; a key new in `after` counts from 0). */
export function diffCounters(before: ServerCounters, after: ServerCounters): ServerCounters {
  const byKey = (a: Record<string, number>, z: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(z)
        .map(([k, v]) => [k, v - (a[k] ?? 0)] as const)
        .filter(([, v]) => v > 0),
    );
  return {
    frontend: byKey(before.frontend, after.frontend),
    history: byKey(before.history, after.history),
    matching: after.matching - before.matching,
    persistence: after.persistence - before.persistence,
    actions: byKey(before.actions, after.actions),
  };
}

/** The sum of a by-operation record. */
export function total(byOperation: Record<string, number>): number {
  return Object.values(byOperation).reduce((n, v) => n + v, 0);
}
