/**
 * The compatibility gate: every history recorded by every release (test/fixtures/histories/<version>/) replays with
 * the current workflow code. A change of the command sequence that is not behind `patched()` fails here, before a
 * deploy could fail the runs in flight. The gate is shown to bite: the same corpus against a fixture release that adds
 * one unpatched command fails with a non-determinism error, and passes once the change is behind `patched()`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DeterminismViolationError } from '@temporalio/workflow';
import { bundleWorkflowCode, type ReplayResult, Worker } from '@temporalio/worker';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { corpusFiles, corpusVersions, HISTORIES_DIR } from '../corpus/manifest.js';

/** A corpus file: the history and the workflow id it ran under (a batch derives its children's ids from it). */
function load(version: string, file: string): { workflowId: string; history: unknown } {
  return JSON.parse(readFileSync(join(HISTORIES_DIR, version, file), 'utf8')) as {
    workflowId: string;
    history: unknown;
  };
}

/**
 * One release's histories through one replay worker (`runReplayHistories`: the bundle is loaded once, not once per
 * history), in file order; each result keyed by its file. The iterator yields in input order.
 */
async function replayRelease(
  workflowBundle: { code: string } | { codePath: string },
  version: string,
): Promise<Map<string, ReplayResult>> {
  const files = corpusFiles(version);
  const results = new Map<string, ReplayResult>();
  const histories = files.map((file) => load(version, file));
  let i = 0;
  for await (const result of Worker.runReplayHistories({ workflowBundle, replayName: version }, histories)) {
    if (result.workflowId !== histories[i].workflowId)
      throw new Error(`${version}: result ${i} is ${result.workflowId}, expected ${histories[i].workflowId}`);
    results.set(files[i++], result);
  }
  return results;
}
const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

async function bundle(name: string): Promise<{ code: string }> {
  return bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL(`../fixtures/workflows/${name}.ts`, import.meta.url)),
    logger: quiet,
  });
}

describe('every recorded corpus replays with the current workflow code', () => {
  const versions = corpusVersions();
  it('there is at least one corpus', () => {
    expect(versions.length).toBeGreaterThan(0);
  });
  for (const version of versions) {
    describe(version, () => {
      let results: Map<string, ReplayResult>;
      beforeAll(async () => {
        results = await replayRelease({ codePath: inject('workflowBundlePath') }, version);
      }, 300_000);
      for (const file of corpusFiles(version)) {
        it(file, () => {
          const result = results.get(file);
          expect(result, `${version}/${file} was not replayed`).toBeDefined();
          if (result?.error) throw result.error;
        });
      }
    });
  }
});

describe('the gate fails on an unpatched change and passes on a patched one', () => {
  let unpatched: { code: string };
  let patchedBundle: { code: string };
  beforeAll(async () => {
    [unpatched, patchedBundle] = await Promise.all([bundle('unpatched'), bundle('patched')]);
  }, 120_000);

  it('0.1.0 every-feature against a release that adds an unpatched timer: non-determinism error', async () => {
    const err = (await replayRelease(unpatched, '0.1.0')).get('every-feature.json')?.error;
    expect(err).toBeInstanceOf(DeterminismViolationError);
    expect(String((err as Error).message)).toMatch(/Nondeterminism|nondeterminism|does not match/);
  });

  it('the same change behind patched(): the whole 0.1.0 corpus replays', async () => {
    const results = await replayRelease(patchedBundle, '0.1.0');
    expect([...results.keys()]).toEqual(corpusFiles('0.1.0'));
    expect([...results.values()].map((r) => r.error)).toEqual(corpusFiles('0.1.0').map(() => undefined));
  });
});
