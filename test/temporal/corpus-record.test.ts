/**
 * Records the replay corpus of the current package version: `npm run record-corpus` (KEEL_RECORD_CORPUS=1). Refuses to
 * touch a version that already has one: a released corpus is never re-recorded (see README, "Changing the workflow").
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { formatSums, HISTORIES_DIR, readManifest, sha256, SUMS_FILE } from '../corpus/manifest.js';
import { corpusScripts, corpusTools, scenarios, toJSON } from './corpus-scenarios.js';
import { startKeel, type Keel } from './harness.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

// Recording is a release step, not a test: it runs only when asked for.
describe.runIf(process.env.KEEL_RECORD_CORPUS === '1')(`record the replay corpus of ${pkg.version}`, () => {
  let keel: Keel;
  const recorded: Record<string, string> = {};
  const done = new Set<string>();
  beforeAll(async () => {
    if (readManifest()[pkg.version] || existsSync(join(HISTORIES_DIR, pkg.version)))
      throw new Error(`${pkg.version} already has a corpus; bump the package version instead of re-recording`);
    keel = await startKeel({ scripts: corpusScripts, tools: corpusTools });
  });
  afterAll(async () => {
    await keel?.stop();
    if (done.size !== Object.keys(scenarios).length) return; // all scenarios or nothing
    const dir = join(HISTORIES_DIR, pkg.version);
    mkdirSync(dir, { recursive: true });
    const files: Record<string, string> = {};
    for (const [name, json] of Object.entries(recorded)) {
      writeFileSync(join(dir, `${name}.json`), json);
      files[`${name}.json`] = sha256(json);
    }
    writeFileSync(join(dir, SUMS_FILE), formatSums(files)); // a new release only adds files
  });

  for (const [name, scenario] of Object.entries(scenarios)) {
    it(
      name,
      async () => {
        const histories = await scenario(keel);
        for (const [file, history] of Object.entries(histories)) recorded[file] = toJSON(history);
        done.add(name);
      },
      300_000,
    );
  }
});
