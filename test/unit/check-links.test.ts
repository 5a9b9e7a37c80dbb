/**
 * scripts/check-links.mjs (in npm test): a relative link to a missing file and an anchor that names no heading are
 * reported with file and line; GitHub's slugs, repeated headings, code blocks and other sites are handled; and the
 * repository's own README.md and docs/ pass.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { checkLinks, documentationFiles, githubSlug } from '../../scripts/check-links.mjs';

const dir = mkdtempSync(join(tmpdir(), 'keel-links-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function site(files: Record<string, string>): string[] {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return Object.keys(files)
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(dir, f));
}

describe('check-links', () => {
  it('slugs headings as GitHub does', () => {
    expect(githubSlug('Connecting (TLS, API keys, profiles)')).toBe('connecting-tls-api-keys-profiles');
    expect(githubSlug('Run input (`AgentRunInput`, plain JSON)')).toBe('run-input-agentruninput-plain-json');
    expect(githubSlug('The `keel` CLI')).toBe('the-keel-cli');
    expect(githubSlug('3. Worker Deployment Versioning: new runs')).toBe('3-worker-deployment-versioning-new-runs');
    expect(githubSlug('Keel ÷ floor **now**')).toBe('keel--floor-now');
  });

  it('catches a broken link and a broken anchor, and nothing else', () => {
    const files = site({
      'README.md': [
        '# Keel',
        '## Set up',
        '## Set up',
        'See [the guide](docs/guide.md#worker-roles), [set up](#set-up), [again](#set-up-1) and [Temporal](https://temporal.io).',
        'A [missing guide](docs/missing.md) and a [wrong anchor](docs/guide.md#worker-role).',
        '```sh',
        'echo "[not a link](nowhere.md)"',
        '```',
        'Nor is `[this](nowhere.md)`; a [folder](docs) and a [file](script.sh) are.',
        '[ref]: docs/guide.md#nope',
      ].join('\n'),
      'docs/guide.md': '# Guide\n\n### Worker roles\n\nBack to the [README](../README.md#set-up) and [self](#guide).\n',
      'script.sh': 'true\n',
    });
    const problems = checkLinks(files).map((p) => ({ ...p, file: p.file.slice(dir.length + 1) }));
    expect(problems).toEqual([
      { file: 'README.md', line: 5, target: 'docs/missing.md', problem: 'docs/missing.md does not exist' },
      {
        file: 'README.md',
        line: 5,
        target: 'docs/guide.md#worker-role',
        problem: 'docs/guide.md has no heading with the anchor #worker-role',
      },
      {
        file: 'README.md',
        line: 10,
        target: 'docs/guide.md#nope',
        problem: 'docs/guide.md has no heading with the anchor #nope',
      },
    ]);
  });

  it("passes on this repository's README.md, CHANGELOG.md and docs/", () => {
    const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
    const files = documentationFiles(root);
    expect(files.length).toBeGreaterThan(10);
    expect(checkLinks(files)).toEqual([]);
  });
});
