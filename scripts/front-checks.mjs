#!/usr/bin/env node
// The checks `npm test` runs besides the suites, at the same time (each is one single-threaded process): type check,
// lint, format check, link check. Each one's output is printed once it ends, with its time; exits 1 when any failed.
// `--beside <command> [args…]` runs that command (the first vitest phase) at the same time, its output live: the
// checks burn CPU while the test files mostly wait on the server, timers and child processes, so on two cores the
// checks' ≈ 48 s no longer come before the suites (docs/development.md#test-run); the exit code is the command's, or 1
// when it passed and a check failed. The type check (incremental) and the format check keep their caches in .keel/
// (a fresh clone has none); the lint has none, as its typed rules read other files than the one cached.
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

/** Runs `command` with this process's stdio; resolves with its exit code (1 when it could not start or was killed). */
function runBeside([command, ...args]) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'inherit' });
    child.on('error', (err) => {
      process.stderr.write(`[checks] ${command} could not start: ${err.message}\n`);
      resolve(1);
    });
    child.on('close', (code) => resolve(code ?? 1));
  });
}

const at = process.argv.indexOf('--beside');
const beside = at === -1 ? [] : process.argv.slice(at + 1);
mkdirSync('.keel', { recursive: true });
const [results, code] = await Promise.all([Promise.all(checks.map(run)), beside.length ? runBeside(beside) : 0]);
const checksPassed = results.every(Boolean);
if (!checksPassed && beside.length) process.stderr.write('[checks] a check failed (its output is above)\n');
process.exit(code !== 0 ? code : checksPassed ? 0 : 1);
