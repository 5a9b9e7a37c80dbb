#!/usr/bin/env node
// The `keel` command (keel.md §7): loads the TypeScript CLI through tsx, runs it, and exits with its code
// (0 done, 1 run failed, 2 usage error, 3 cannot reach Temporal).
import { register } from 'tsx/esm/api';

const [major, minor] = process.versions.node.split('.').map(Number);
const command = process.argv.slice(2).find((a) => !a.startsWith('-'));
if ((major < 22 || (major === 22 && minor < 19)) && ['dev', 'worker', 'demo'].includes(command ?? '')) {
  process.stderr.write(
    `[keel] Node ${process.versions.node}: the worker needs Node >= 22.19 (pi-ai). Use \`npx keel ${command}\`, which runs the project's Node 22.\n`,
  );
}

register();
const { main } = await import('../client/cli/main.ts');
const code = await main(process.argv.slice(2));
// exit explicitly: open gRPC channels or timers must not keep a finished command alive
process.exit(code);
