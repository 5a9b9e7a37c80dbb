#!/usr/bin/env node
// `npm run build`: the installable package's dist/. Compiles the sources with tsc (JS + .d.ts, tsconfig.build.json),
// copies the Temporal CLI provisioning scripts the compiled dev server imports, and writes the prebuilt workflow
// bundle dist/workflow-bundle.js (bundleWorkflowCode over the compiled workflows/), which a worker started from the
// package loads instead of bundling at start (worker/workflow-code.ts).
import { spawnSync } from 'node:child_process';
import { cpSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = `${root}dist`;
const started = Date.now();

rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const r = spawnSync(process.execPath, [tsc, '-p', `${root}tsconfig.build.json`], { stdio: 'inherit' });
if (r.status !== 0) {
  process.stderr.write('[build] tsc failed (errors above); fix them and run `npm run build` again.\n');
  process.exit(1);
}
for (const f of ['temporal-cli.mjs', 'temporal-cli.d.mts', 'temporal-cli', 'run-main.mjs']) {
  cpSync(`${root}scripts/${f}`, `${dist}/scripts/${f}`, { recursive: true });
}

const { bundleWorkflowCode } = await import('@temporalio/worker');
const quiet = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn: (m) => process.stderr.write(`[bundler] ${m}\n`),
  error: (m) => process.stderr.write(`[bundler] ${m}\n`),
};
const { code } = await bundleWorkflowCode({ workflowsPath: `${dist}/workflows/index.js`, logger: quiet });
writeFileSync(`${dist}/workflow-bundle.js`, code);
// an encrypting worker's bundle: failures converted inside the workflow seal their message and stack trace
const sealed = await bundleWorkflowCode({
  workflowsPath: `${dist}/workflows/index.js`,
  failureConverterPath: `${dist}/common/sealed-failures.js`,
  logger: quiet,
});
writeFileSync(`${dist}/workflow-bundle-sealed.js`, sealed.code);
process.stderr.write(
  `[build] dist/ ready in ${((Date.now() - started) / 1000).toFixed(1)} s (workflow bundle ${(code.length / 1024).toFixed(0)} KiB)\n`,
);
