/**
 * `npm run demo [-- --keep] [-- --model provider/model-id] [-- --db file]`: the seed demo (demo/run-demo.ts).
 * Exit code 0 when every turn succeeded, 1 when a model call failed or the demo could not run (one line on stderr).
 */
import { parseArgs } from 'node:util';
import { DEMO_DB, runDemo } from './run-demo.js';

function options() {
  try {
    const { values } = parseArgs({
      options: {
        keep: { type: 'boolean', default: false },
        model: { type: 'string', short: 'm', default: 'scripted/demo' },
        db: { type: 'string', default: DEMO_DB },
      },
    });
    return { keep: values.keep, model: values.model, dbFilename: values.db };
  } catch (err) {
    console.error(`${(err as Error).message}\nusage: npm run demo -- [--keep] [--model provider/model-id] [--db file]`);
    process.exit(2);
  }
}

runDemo(options()).then(
  (ok) => process.exit(ok ? 0 : 1),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  },
);
