/**
 * A tiny HTTP control plane for a running test cluster, so fault tests (in vitest's worker processes) can kill and
 * restart services owned by the process that started the cluster. Listens on 127.0.0.1 only.
 *
 * Contract: `POST /kill/<name>` and `POST /start/<name>` (a service or `postgres`, see Cluster.kill/start) answer 200
 * once done, 500 with the error text otherwise. `clusterControl(url)` is the matching client.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Cluster, ProcessName } from './cluster.js';

const NAMES = new Set<string>(['frontend', 'history', 'matching', 'worker', 'frontend-tls', 'postgres']);

export async function serveClusterControl(cluster: Cluster): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const [, verb, name] = (req.url ?? '').split('/');
    const action =
      req.method === 'POST' && (verb === 'kill' || verb === 'start') && NAMES.has(name)
        ? () => cluster[verb](name as ProcessName)
        : undefined;
    if (!action) {
      res.writeHead(404).end('unknown action');
      return;
    }
    action().then(
      () => res.writeHead(200).end('ok'),
      (err: unknown) => res.writeHead(500).end(String(err instanceof Error ? err.message : err)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

export interface ClusterControl {
  kill(name: ProcessName): Promise<void>;
  start(name: ProcessName): Promise<void>;
}

export function clusterControl(url: string): ClusterControl {
  const post = async (path: string) => {
    const res = await fetch(`${url}${path}`, { method: 'POST' });
    if (!res.ok) throw new Error(`cluster control ${path}: ${res.status} ${await res.text()}`);
  };
  return {
    kill: (name) => post(`/kill/${name}`),
    start: (name) => post(`/start/${name}`),
  };
}
