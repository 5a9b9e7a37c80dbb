/**
 * Ports a test hands to a child process (a `keel dev` server, its Web UI, a codec server, redis-server) to bind later.
 *
 * A port asked of the OS (`listen(0)`) and released is in the ephemeral range (Linux 32768–60999), where any socket
 * that asks the OS for a port — a Temporal dev server's internal services starting in a parallel test file, an
 * outgoing connection — can take it before the child binds it: CI once failed with `bind: address already in use`
 * on such a Web UI port. These ports come from below that range instead, and each vitest worker (`VITEST_POOL_ID`)
 * draws from its own block of 1,000, so neither the OS nor another test file hands out the same port meanwhile.
 */
import { createServer } from 'node:net';

const BASE = 20_000;
const BLOCK = 1_000;
const BLOCKS = 12;

const pool = Number(process.env.VITEST_POOL_ID ?? 0) % BLOCKS;
let next = Math.floor(Math.random() * BLOCK);

/** True when 127.0.0.1:`port` can be listened on now. Must not throw. */
function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free port of 127.0.0.1 from this worker's block, never one the OS hands out for `listen(0)`. */
export async function freePort(): Promise<number> {
  for (let tried = 0; tried < BLOCK; tried++) {
    const port = BASE + pool * BLOCK + (next++ % BLOCK);
    if (await canBind(port)) return port;
  }
  throw new Error(`no free port in ${BASE + pool * BLOCK}–${BASE + pool * BLOCK + BLOCK - 1}`);
}
