#!/usr/bin/env node
// Link check of the documentation (npm test, `npm run check-links`): every relative link and `#anchor` in README.md,
// CHANGELOG.md and docs/**/*.md must resolve — the file (or folder) exists, and an anchor names a heading of the
// target Markdown file in GitHub's slug form (or an explicit `<a id="…">`). Links to other sites (http:, https:,
// mailto:) are not fetched: the check runs offline. Links inside code blocks and code spans are not links.
// No dependencies, so it costs the install nothing.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The text of a Markdown file with fenced code blocks blanked (line numbers kept). */
function withoutFences(text) {
  let fence = null; // the opening fence: a run of ``` or ~~~
  return text.split('\n').map((line) => {
    const m = /^\s{0,3}(`{3,}|~{3,})(.*)$/.exec(line);
    if (fence === null) {
      if (!m) return line;
      fence = m[1];
      return '';
    }
    if (m && m[1][0] === fence[0] && m[1].length >= fence.length && m[2].trim() === '') fence = null;
    return '';
  });
}

/** GitHub's anchor for a heading's text: markup dropped, lower case, punctuation removed, spaces → hyphens. */
export function githubSlug(heading) {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/`/g, '')
    .replace(/\*\*|__|\*/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a Markdown text defines: its headings' slugs (repeats get -1, -2, … as on GitHub) and `<a id>`s. */
export function anchorsOf(text) {
  const anchors = new Set();
  const seen = new Map();
  for (const line of withoutFences(text)) {
    const h = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      const base = githubSlug(h[2]);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const a of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(a[1]);
  }
  return anchors;
}

/** The links of a Markdown text: `[text](target)`, `![alt](target)` and `[label]: target`, with their line. */
export function linksOf(text) {
  const links = [];
  withoutFences(text).forEach((raw, i) => {
    const line = raw.replace(/(`+)(?:(?!\1)[\s\S])*?\1/g, (s) => ' '.repeat(s.length)); // code spans
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g))
      links.push({ target: m[1], line: i + 1 });
    const def = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/.exec(line);
    if (def) links.push({ target: def[1], line: i + 1 });
  });
  return links;
}

/**
 * Broken links of the Markdown files `files` (absolute paths) under `root`: `{ file, line, target, problem }` each.
 * `read` reads a file's text (tests pass fixtures).
 */
export function checkLinks(files, { read = (f) => readFileSync(f, 'utf8') } = {}) {
  const problems = [];
  const anchorCache = new Map();
  const anchorsIn = (file) => {
    if (!anchorCache.has(file)) anchorCache.set(file, anchorsOf(read(file)));
    return anchorCache.get(file);
  };
  for (const file of files) {
    for (const { target, line } of linksOf(read(file))) {
      if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // another site, mailto:, …
      const hash = target.indexOf('#');
      const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
      const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
      const dest = pathPart === '' ? file : resolve(dirname(file), pathPart.split('?')[0]);
      if (!existsSync(dest)) {
        problems.push({ file, line, target, problem: `${pathPart} does not exist` });
        continue;
      }
      if (anchor === undefined || anchor === '' || !dest.endsWith('.md') || statSync(dest).isDirectory()) continue;
      if (!anchorsIn(dest).has(anchor)) {
        const where = pathPart === '' ? 'this file' : pathPart;
        problems.push({ file, line, target, problem: `${where} has no heading with the anchor #${anchor}` });
      }
    }
  }
  return problems;
}

/** README.md, CHANGELOG.md and every Markdown file under docs/ (the generated API reference is HTML, not checked). */
export function documentationFiles(root) {
  const files = ['README.md', 'CHANGELOG.md'].map((f) => join(root, f)).filter((f) => existsSync(f));
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name.endsWith('.md')) files.push(join(dir, e.name));
    }
  };
  if (existsSync(join(root, 'docs'))) walk(join(root, 'docs'));
  return files;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const files = documentationFiles(root);
  const problems = checkLinks(files);
  for (const p of problems) console.error(`${relative(root, p.file)}:${p.line}: ${p.target}: ${p.problem}`);
  if (problems.length > 0) {
    console.error(`check-links: ${problems.length} broken link(s) in ${files.length} files`);
    process.exit(1);
  }
  console.log(`check-links: every relative link and anchor resolves (${files.length} files)`);
}
