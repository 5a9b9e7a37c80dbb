#!/usr/bin/env node
// The `keel` command (docs/cli.md): runs the CLI and exits with its code (0 done, 1 run failed, 2 usage error,
// 3 cannot reach Temporal). In a source checkout it loads the TypeScript through tsx; in the installed package (no
// sources, only dist/) it loads the compiled JavaScript.
import { existsSync } from 'node:fs';

/** The packages a command that runs a worker (`keel dev`, `worker`, `demo`) loads besides the client's. */
const WORKER_PACKAGES = ['@temporalio/worker', '@earendil-works/pi-ai'];

const [major, minor] = process.versions.node.split('.').map(Number);
const command = process.argv.slice(2).find((a) => !a.startsWith('-'));
const checkout = existsSync(new URL('../cli/main.ts', import.meta.url));
const runsWorker = ['dev', 'worker', 'demo'].includes(command ?? '');
if ((major < 22 || (major === 22 && minor < 19)) && runsWorker) {
  // In a source checkout `npx keel` runs on the project's Node 22 (the pinned `node` devDependency); run through npx
  // already (npm_command=exec), or in a project that installed the package, there is no Node 22 to point at.
  const fix =
    checkout && process.env.npm_command !== 'exec'
      ? `Use \`npx keel ${command}\`, which runs the project's Node 22.`
      : `Install Node 22.19 or later (https://nodejs.org), or give this project its own: ` +
        `\`npm install --save-dev --save-exact node@22\`, then \`npx keel ${command}\` runs on it.`;
  process.stderr.write(`[keel] Node ${process.versions.node}: the worker needs Node >= 22.19 (pi-ai). ${fix}\n`);
}

// a reader that went away (`keel --help | head -1`, `keel transcript … | less` quit early) ends the command quietly,
// as any Unix tool does, instead of an unhandled EPIPE stack trace
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

// tsx loads TypeScript: the sources in a checkout, and `--tools-module` and `scripted/` paths that name .ts files.
// Its loader hooks run for every module loaded after `register()`, node_modules included (about half a second of CPU
// for the ≈ 500 modules of a command, more for a worker's ≈ 2,000), so what needs no hook loads before it: the
// compiled CLI of the installed package, and the packages the command will load anyway (loaded once: the sources get
// the same instances). Which packages is only a matter of speed: one left out loads through tsx as before.
const entry = checkout ? new URL('../cli/main.ts', import.meta.url) : new URL('../dist/cli/main.js', import.meta.url);
const compiled = checkout ? undefined : await import(entry.href);
const help = process.argv.some((a) => a === '--help' || a === '-h');
// a package that fails to load here fails again where the CLI imports it, which reports it as before
for (const pkg of ['@temporalio/client', 'commander', 'jose', ...(runsWorker && !help ? WORKER_PACKAGES : [])])
  await import(pkg).catch(() => {});
const { register } = await import('tsx/esm/api');
register();
const { main } = compiled ?? (await import(entry.href));
const code = await main(process.argv.slice(2));
// exit explicitly: open gRPC channels or timers must not keep a finished command alive; but only once stdout and stderr
// are flushed (a pipe is written asynchronously: exiting earlier cuts a large `transcript --format json` short)
const flushed = (stream) => new Promise((resolve) => stream.write('', () => resolve()));
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(code);
