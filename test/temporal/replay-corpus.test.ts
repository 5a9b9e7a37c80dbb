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
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { corpusFiles, corpusVersions, HISTORIES_DIR } from '../corpus/manifest.js';

/** A corpus file: the history and the workflow id it ran under (a batch derives its children's ids from it). */
function load(version: string, file: string): { workflowId: string; history: unknown } {
  return JSON.parse(readFileSync(join(HISTORIES_DIR, version, file), 'utf8')) as {
    workflowId: string;
    history: unknown;
  };
}

async function replay(
  workflowBundle: { code: string } | { codePath: string },
  version: string,
  file: string,
): Promise<void> {
  const { workflowId, history } = load(version, file);
  await Worker.runReplayHistory({ workflowBundle, replayName: `${version}/${file}` }, history, workflowId);
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
      for (const file of corpusFiles(version)) {
        it(file, async () => {
          await replay({ codePath: inject('workflowBundlePath') }, version, file);
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
    const err = await replay(unpatched, '0.1.0', 'every-feature.json').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DeterminismViolationError);
    expect(String((err as Error).message)).toMatch(/Nondeterminism|nondeterminism|does not match/);
  });

  it('the same change behind patched(): the whole 0.1.0 corpus replays', async () => {
    for (const file of corpusFiles('0.1.0')) {
      await replay(patchedBundle, '0.1.0', file);
    }
  });
});
