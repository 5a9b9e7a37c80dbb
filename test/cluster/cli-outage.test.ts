/**
 * `keel run` keeps following through an outage (`npm run test:cluster`): with the run inside a tool call, the
 * frontend is killed for longer than the SDK's own gRPC retries last (~20 s); the CLI says "reconnecting…", picks the
 * run up again when the frontend is back, and ends with the run's result and exit code 0 (not 3).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { clusterControl } from '../../scripts/cluster/control.js';
import { startKeel, until, type Keel } from '../temporal/harness.js';

const controlUrl = process.env.KEEL_TEST_CLUSTER_CONTROL;
if (!controlUrl) throw new Error('test/cluster needs a cluster: run `npm run test:cluster`');
const control = clusterControl(controlUrl);
/** The outage's length: past the client's gRPC retries (10 attempts, ≈ 20 s), so only Keel's reconnecting helps. */
const OUTAGE_MS = Number(process.env.KEEL_TEST_CLI_OUTAGE_MS ?? 30_000);
const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));

describe('keel run through a frontend outage', () => {
  let keel: Keel;
  let started = 0;
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  beforeAll(async () => {
    const hold = defineTool({
      name: 'hold',
      description: 'Holds until the test lets go.',
      parameters: { type: 'object', properties: {} },
      async execute() {
        started += 1;
        await gate;
        return { content: [{ type: 'text', text: 'held' }] };
      },
    });
    keel = await startKeel({
      tools: [hold],
      scripts: {
        hold: { replies: [{ toolCall: { name: 'hold', arguments: {}, id: 'h1' } }, { text: 'survived the outage' }] },
      },
    });
  });
  afterAll(() => keel?.stop());

  it('prints reconnecting…, then follows the run to its end with exit code 0', async () => {
    const child = spawn(
      process.execPath,
      [
        BIN,
        '--address',
        keel.address,
        '--task-queue',
        keel.taskQueue,
        'run',
        'go',
        '--model',
        'scripted/hold',
        '--tools',
        'hold',
      ],
      {
        env: { ...process.env, NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));

    await until(() => started === 1, 60_000, 'the run inside its tool call');
    await control.kill('frontend');
    await new Promise((r) => setTimeout(r, OUTAGE_MS));
    await control.start('frontend');
    open();

    const code = await closed;
    expect(code, `stdout:\n${out}\nstderr:\n${err}`).toBe(0);
    expect(err).toMatch(/Temporal unreachable .*; reconnecting…/);
    expect(err).toMatch(/reconnected after \d+ s/);
    expect(out).toContain('survived the outage');
  }, 180_000);
});
