/**
 * The installable package: `npm pack` (which builds dist/ first: compiled JS, .d.ts, the prebuilt workflow bundle),
 * `npm install <tarball>` into a fresh project, then a scripted run through the installed package's own exports and
 * its `keel` bin. The workflows' compiled entry is removed from the installed copy, so the run only works when the
 * worker loads the prebuilt bundle.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, inject, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Whether the npm registry answers (npm install needs package metadata that `npm ci` does not cache). */
async function registryReachable(): Promise<boolean> {
  try {
    await run(npm, ['ping', '--fetch-timeout=5000', '--fetch-retries=0'], { timeout: 15_000 });
    return true;
  } catch {
    return false;
  }
}

const dir = mkdtempSync(join(tmpdir(), 'keel-package-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npm pack → npm install → a scripted run', () => {
  it('installs into a fresh project and runs an agent through the package exports and bin', async (ctx) => {
    if (!(await registryReachable()))
      ctx.skip('the npm registry is unreachable: npm install needs its package metadata');
    const packed = await run(npm, ['pack', '--json', '--pack-destination', dir], {
      cwd: ROOT,
      timeout: 180_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    const [info] = JSON.parse(packed.stdout) as { filename: string; size: number; files: { path: string }[] }[];
    const paths = info.files.map((f) => f.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'dist/index.js',
        'dist/index.d.ts',
        'dist/workflow-bundle.js',
        'dist/worker/main.js',
        'bin/keel.mjs',
      ]),
    );
    expect(paths.filter((p) => p.endsWith('.ts') && !p.endsWith('.d.ts'))).toEqual([]);

    const app = join(dir, 'app');
    await run('mkdir', ['-p', app]);
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'keel-consumer', version: '1.0.0', type: 'module', private: true }),
    );
    await run(npm, ['install', '--prefer-offline', '--no-audit', '--no-fund', join(dir, info.filename)], {
      cwd: app,
      timeout: 300_000,
    });
    const installed = join(app, 'node_modules', 'keel');
    rmSync(join(installed, 'dist', 'workflows', 'index.js')); // only the prebuilt bundle can run workflows now
    expect(existsSync(join(installed, 'dist', 'workflow-bundle.js'))).toBe(true);

    const address = inject('temporalAddress');
    const taskQueue = `package-${Date.now()}`;
    writeFileSync(
      join(app, 'main.js'),
      `import { AgentClient, createAgentWorker, defineTool, scriptedModel } from 'keel';
const echo = defineTool({
  name: 'echo',
  description: 'Echoes text.',
  parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  execute: async (_id, args) => ({ content: [{ type: 'text', text: 'echo: ' + args.text }] }),
});
const rules = [
  { match: 'toolResult:echo', text: 'The tool answered.' },
  { text: 'Calling echo.', toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'ping' } }] },
];
const worker = await createAgentWorker({ address: ${JSON.stringify(address)}, taskQueue: ${JSON.stringify(taskQueue)}, tools: [echo], models: { scripted: scriptedModel({ pkg: { rules } }) } });
const running = worker.run();
const client = await AgentClient.connect({ address: ${JSON.stringify(address)}, taskQueue: ${JSON.stringify(taskQueue)} });
const run = await client.start({ model: 'scripted/pkg', prompt: 'use echo', tools: ['echo'] }, { workflowId: ${JSON.stringify(`${taskQueue}-run`)} });
const result = await run.result();
console.log(JSON.stringify({ status: result.status, finalText: result.finalText, turns: result.turns }));
await client.close();
await worker.shutdown();
await running;
`,
    );
    const out = await run(process.execPath, ['main.js'], { cwd: app, timeout: 120_000 });
    expect(JSON.parse(out.stdout.trim().split('\n').at(-1)!)).toEqual({
      status: 'completed',
      finalText: 'The tool answered.',
      turns: 2,
    });

    // the bin runs the compiled CLI (no sources in the package)
    const status = await run(
      join(app, 'node_modules', '.bin', 'keel'),
      ['--address', address, '--task-queue', taskQueue, '--json', 'status', `${taskQueue}-run`],
      { cwd: app, timeout: 60_000 },
    );
    expect(JSON.parse(status.stdout)).toMatchObject({ workflowId: `${taskQueue}-run`, status: 'completed' });
    expect(readFileSync(join(installed, 'package.json'), 'utf8')).toContain('"bin"');
  }, 600_000);
});
