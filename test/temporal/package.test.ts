/**
 * The installable package: `npm pack` (which builds dist/ first: compiled JS, .d.ts, the prebuilt workflow bundle),
 * `npm install <tarball>` into a fresh project (once, for every test here), then a scripted run through the installed
 * package's own exports and its `keel` bin, and the entries by runtime (`keel/client`, `keel/worker`, `keel/dev`,
 * `keel/workflow`) as a consumer imports them. The workflows' compiled entry is removed from the installed copy, so
 * the run only works when the worker loads the prebuilt bundle.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, inject, it, onTestFinished, type TestContext } from 'vitest';

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

/** The consumer project with the packed package installed (packed and installed by the first test that asks). */
let installing: Promise<{ app: string; installed: string }> | undefined;
async function consumerApp(ctx: TestContext): Promise<{ app: string; installed: string }> {
  if (!(await registryReachable())) ctx.skip('the npm registry is unreachable: npm install needs its package metadata');
  installing ??= packAndInstall();
  return installing;
}

async function packAndInstall(): Promise<{ app: string; installed: string }> {
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
      'dist/client.js',
      'dist/client.d.ts',
      'dist/worker.js',
      'dist/worker.d.ts',
      'dist/workflow.js',
      'dist/workflow.d.ts',
      'dist/workflow-bundle.js',
      'dist/workflow-bundle-sealed.js',
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
  return { app, installed };
}

describe('npm pack → npm install → a scripted run', () => {
  it('installs into a fresh project and runs an agent through the package exports and bin', async (ctx) => {
    const { app, installed } = await consumerApp(ctx);
    // only the prebuilt bundle can run workflows now (put back at the end for keel/workflow's test)
    const workflowsEntry = join(installed, 'dist', 'workflows', 'index.js');
    renameSync(workflowsEntry, `${workflowsEntry}.hidden`);
    onTestFinished(() => renameSync(`${workflowsEntry}.hidden`, workflowsEntry));
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
// its own deployment: the tests' other workers use the default one on other task queues (deployment-shared.test.ts)
const worker = await createAgentWorker({ address: ${JSON.stringify(address)}, taskQueue: ${JSON.stringify(taskQueue)}, versioning: { deploymentName: ${JSON.stringify(taskQueue)} }, tools: [echo], models: { scripted: scriptedModel({ pkg: { rules } }) } });
const running = worker.run();
await worker.ready(); // the task queue routes to this build (worker versioning) before the run starts
const client = await AgentClient.connect({ address: ${JSON.stringify(address)}, taskQueue: ${JSON.stringify(taskQueue)} });
const run = await client.start({ model: 'scripted/pkg', prompt: 'use echo', tools: ['echo'] }, { workflowId: ${JSON.stringify(`${taskQueue}-run`)} });
const result = await run.result();
console.log(JSON.stringify({ status: result.status, finalText: result.finalText, turns: result.turns }));
await client.close();
await worker.shutdown();
await running;
`,
    );
    // SIGKILL at the deadline: a client still awaiting a result keeps the process alive after SIGTERM stops the worker
    const out = await run(process.execPath, ['main.js'], { cwd: app, timeout: 120_000, killSignal: 'SIGKILL' });
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

    // a TypeScript --tools-module through the installed bin: tsx loads it (registered after the compiled CLI loaded);
    // the enum is syntax Node's own type stripping refuses, so only tsx can load this file
    writeFileSync(
      join(app, 'tools.ts'),
      `import { defineTool } from 'keel';
enum Says { Back = 'Shouts the text back.' }
const parameters = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } as const;
export const tools = [
  defineTool({
    name: 'shout',
    description: Says.Back,
    parameters,
    execute: async (_id: string, args: { text: string }) => ({ content: [{ type: 'text' as const, text: args.text }] }),
  }),
];
`,
    );
    const listed = await run(
      join(app, 'node_modules', '.bin', 'keel'),
      ['tools', '--no-builtin', '--tools-module', 'tools.ts'],
      { cwd: app, timeout: 60_000 },
    );
    expect(listed.stdout).toBe('shout  worker  at most once  Shouts the text back.\n');
  }, 600_000);
});

/**
 * Imports `specifier` in a fresh Node process of the consumer project and answers its runtime export names and the
 * packages (under node_modules) whose modules that import loaded, as recorded by a `load` hook (`module.registerHooks`
 * sees both `import` and `require`).
 */
async function importInChild(app: string, specifier: string): Promise<{ exports: string[]; packages: string[] }> {
  const script = `import { registerHooks } from 'node:module';
const urls = new Set();
registerHooks({ load(url, context, next) { urls.add(url); return next(url, context); } });
const m = await import(${JSON.stringify(specifier)});
const packageOf = (url) => {
  const parts = url.split('/node_modules/').at(-1).split('/');
  return url.includes('/node_modules/') ? (parts[0].startsWith('@') ? parts[0] + '/' + parts[1] : parts[0]) : undefined;
};
const packages = new Set([...urls].map(packageOf).filter(Boolean));
console.log(JSON.stringify({ exports: Object.keys(m).sort(), packages: [...packages].sort() }));
`;
  const out = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: app, timeout: 120_000 });
  return JSON.parse(out.stdout.trim().split('\n').at(-1)!) as { exports: string[]; packages: string[] };
}

/** What only a worker needs: the SDK's worker (native runtime), its workflow bundler, the test server. */
const WORKER_ONLY = ['@temporalio/worker', '@temporalio/core-bridge', '@temporalio/testing', 'webpack', '@swc/core'];

describe('entry points by runtime (keel/client, keel/worker, keel/dev, keel/workflow)', () => {
  it('keel/client does not load @temporalio/worker; keel/worker does, so the check sees such a load', async (ctx) => {
    const { app } = await consumerApp(ctx);
    const client = await importInChild(app, 'keel/client');
    expect(client.exports).toEqual(
      expect.arrayContaining(['AgentClient', 'AgentBatchHandle', 'keelClientDataConverter', 'ErrorType']),
    );
    expect(client.packages).toContain('@temporalio/client');
    expect(client.packages.filter((p) => WORKER_ONLY.includes(p))).toEqual([]);

    const worker = await importInChild(app, 'keel/worker');
    expect(worker.exports).toEqual(expect.arrayContaining(['createAgentWorker', 'defineTool', 'keelPlugin']));
    expect(worker.packages).toEqual(expect.arrayContaining(['@temporalio/worker', 'webpack']));
    // a production worker carries no dev server: that is keel/dev's
    expect(worker.packages).not.toContain('@temporalio/testing');
    expect(worker.exports).not.toContain('startDevServer');

    const dev = await importInChild(app, 'keel/dev');
    expect(dev.exports).toEqual(expect.arrayContaining(['startDevServer', 'DEFAULT_UI_PORT']));
    expect(dev.packages).toContain('@temporalio/testing');

    // the package root keeps exporting all of it
    const root = await importInChild(app, 'keel');
    expect(root.exports).toEqual(expect.arrayContaining([...client.exports, ...worker.exports, ...dev.exports]));
  }, 600_000);

  it('keel/workflow loads only sandbox-safe packages and bundles into workflow code of your own', async (ctx) => {
    const { app } = await consumerApp(ctx);
    const workflow = await importInChild(app, 'keel/workflow');
    expect(workflow.exports).toEqual(
      expect.arrayContaining(['agentWorkflow', 'agentBatchWorkflow', 'followUpSignal', 'stateQuery', 'progressQuery']),
    );
    expect(workflow.packages).toEqual([
      '@temporalio/common',
      '@temporalio/workflow',
      'keel',
      'long',
      'ms',
      'nexus-rpc',
    ]);

    // a workflow of the consumer's own that runs Keel's agent as a child: the SDK's bundler accepts it
    writeFileSync(
      join(app, 'my-workflows.js'),
      `import { executeChild } from '@temporalio/workflow';
import { agentWorkflow } from 'keel/workflow';
export { agentWorkflow };
export async function triage(prompt) {
  return executeChild(agentWorkflow, { args: [{ model: 'scripted/pkg', prompt }] });
}
`,
    );
    const bundle = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { bundleWorkflowCode } from '@temporalio/worker';
const { code } = await bundleWorkflowCode({ workflowsPath: ${JSON.stringify(join(app, 'my-workflows.js'))}, logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: (m) => console.error(m) } });
console.log(code.includes('agentWorkflow') && code.includes('triage'));
`,
      ],
      { cwd: app, timeout: 300_000 },
    );
    expect(bundle.stdout.trim()).toBe('true');
  }, 600_000);
});
