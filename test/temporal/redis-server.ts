/**
 * A real `redis-server` (Debian's /usr/bin/redis-server) on a free loopback port, for the fleet stream transport's
 * tests: no persistence, so a killed and restarted server comes back empty, as a lost store would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../free-port.js';

const REDIS_SERVER = process.env.KEEL_TEST_REDIS_SERVER ?? '/usr/bin/redis-server';

export class RedisServer {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    /** The default user's password (`--requirepass`), if any. */
    readonly password?: string,
  ) {}

  /** A server on a free port, started (resolves once it accepts connections). */
  static async start(password?: string): Promise<RedisServer> {
    const server = new RedisServer(await freePort(), password);
    await server.restart();
    return server;
  }

  get url(): string {
    return `redis://${this.password ? `:${this.password}@` : ''}127.0.0.1:${this.port}`;
  }

  /** Starts the server (again) on its port. */
  restart(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    if (this.password) args.push('--requirepass', this.password);
    const child = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    this.child = child;
    return new Promise((resolve, reject) => {
      let out = '';
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)));
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('Ready to accept connections')) resolve();
      });
    });
  }

  /** SIGKILLs the server (resolves once it is gone). */
  kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      child.removeAllListeners('exit');
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }
}
