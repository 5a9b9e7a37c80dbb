#!/usr/bin/env node
// The checks `npm test` runs before the suites, at the same time (each is one single-threaded process, and together
// they fill the cores): type check, lint, format check, link check. Each one's output is printed once it ends, with its
// time; exits 1 when any failed. The type check (incremental) and the format check keep their caches in .keel/ (a
// fresh clone has none); the lint has none, as its typed rules read other files than the one cached.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';

const bin = (pkg, path) => `node_modules/${pkg}/${path}`;
const checks = [
  [
    'tsc',
    [bin('typescript', 'bin/tsc'), '--noEmit', '-p', '.', '--incremental', '--tsBuildInfoFile', '.keel/tsbuildinfo'],
  ],
  ['eslint', [bin('eslint', 'bin/eslint.js'), '.']],
  [
    'prettier',
    [bin('prettier', 'bin/prettier.cjs'), '--check', '--cache', '--cache-location', '.keel/prettiercache', '.'],
  ],
  ['check-links', ['scripts/check-links.mjs']],
];

function run([name, args]) {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', (err) => (out += `${err.message}\n`));
    child.on('close', (code) => {
      const s = ((performance.now() - started) / 1000).toFixed(1);
      process.stdout.write(`${out}[checks] ${name} ${code === 0 ? 'passed' : `FAILED (exit ${code})`} in ${s} s\n`);
      resolve(code === 0);
    });
  });
}

mkdirSync('.keel', { recursive: true });
const results = await Promise.all(checks.map(run));
process.exit(results.every(Boolean) ? 0 : 1);
