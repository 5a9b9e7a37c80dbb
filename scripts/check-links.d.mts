// Type declarations for scripts/check-links.mjs (plain Node ESM; that file says what it checks).

export interface BrokenLink {
  file: string;
  line: number;
  target: string;
  problem: string;
}

/** GitHub's anchor for a heading's text. */
export declare function githubSlug(heading: string): string;
/** The anchors a Markdown text defines (headings, repeats numbered, and `<a id>`). */
export declare function anchorsOf(text: string): Set<string>;
/** The links of a Markdown text, outside code blocks and code spans. */
export declare function linksOf(text: string): { target: string; line: number }[];
/** Broken relative links and anchors of the given Markdown files (absolute paths). */
export declare function checkLinks(files: string[], options?: { read?: (file: string) => string }): BrokenLink[];
/** README.md, CHANGELOG.md and every Markdown file under docs/ of `root`. */
export declare function documentationFiles(root: string): string[];
