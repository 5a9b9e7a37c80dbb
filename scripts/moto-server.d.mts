// Type declarations for scripts/moto-server.mjs (plain Node ESM; that file says how it provisions moto).

/** The pinned moto version (PyPI), run in server mode as an S3-compatible server. */
export declare const MOTO_VERSION: string;

/** ${XDG_CACHE_HOME:-~/.cache}/keel/moto-<version>: the venv lives in its `venv/`. */
export declare function motoCacheDir(env?: NodeJS.ProcessEnv): string;

/** The cached moto_server when its venv is complete and matches the pinned requirements; else undefined. */
export declare function findReadyMotoServer(env?: NodeJS.ProcessEnv): string | undefined;

/** Absolute path of moto_server, installing its venv on first use; throws an Error saying why it cannot. */
export declare function ensureMotoServer(opts?: {
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}): Promise<string>;

/** Provisions moto and starts it on 127.0.0.1 and a free port; resolves once it listens. */
export declare function startMotoServer(opts?: {
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}): Promise<{ endpoint: string; pid: number; stop: () => Promise<void> }>;
