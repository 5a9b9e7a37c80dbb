/** `keel demo`: the seed demo on an embedded dev server (demo/run-demo.ts, as `npm run demo`). */
import type { Command } from 'commander';
import { act, EXIT } from '../context.js';

type DemoFlags = { keep?: boolean; model: string; db: string };

export function register(program: Command): void {
  program
    .command('demo')
    .summary('the seed demo on an embedded dev server (same as `npm run demo`)')
    .option('--keep', 'keep the dev server up afterwards to browse the run in the UI')
    .option(
      '-m, --model <provider/model-id>',
      'play the demo to a real model (API key from the environment)',
      'scripted/demo',
    )
    .option('--db <file>', "SQLite file of the dev server (not `keel dev`'s)", '.keel/demo.db')
    .action(act(runDemoCommand));
}

/** Exit 0 when the demo's run completed, 1 when it failed. */
async function runDemoCommand(o: DemoFlags): Promise<number> {
  const { runDemo } = await import('../../demo/run-demo.js');
  return (await runDemo({ keep: o.keep === true, model: o.model, dbFilename: o.db })) ? EXIT.ok : EXIT.runFailed;
}
