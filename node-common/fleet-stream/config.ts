/**
 * The fleet stream transport's configuration (docs/live-output.md#fleet-transport): one option on worker and client
 * alike, `stream: { redis: url }`, or the environment variable {@link FLEET_STREAM_ENV}. Without either, the live stream
 * travels in the model activity's heartbeats and readers poll Temporal (the default; `keel dev` keeps it).
 */

/** The environment variable naming the Redis (or Valkey) server of the fleet stream transport. */
export const FLEET_STREAM_ENV = 'KEEL_STREAM_REDIS_URL';

/** The fleet stream transport: where the model's deltas are appended and readers block on them. */
export interface FleetStreamOption {
  /**
   * `redis://[user:password@]host:port[/db]` (or `rediss://` for TLS) of a Redis or Valkey server. It may carry a
   * password: Keel never writes it to a workflow's input or history, a log or the CLI's output.
   */
  redis: string;
  /** Most entries kept per run's stream (Redis `XADD MAXLEN ~`); default 10,000. */
  maxLen?: number;
  /** Seconds a run's stream is kept after its last append (its last model call); default 3,600. */
  ttlSeconds?: number;
}

/** The option as given, else the environment's, else none (the heartbeat transport). `false`: none, whatever the env. */
export function resolveFleetStream(
  option: FleetStreamOption | false | undefined,
  env: NodeJS.ProcessEnv = process.env,
): FleetStreamOption | undefined {
  if (option === false) return undefined;
  if (option) return option;
  const url = env[FLEET_STREAM_ENV]?.trim();
  return url ? { redis: url } : undefined;
}

/** `url` with its user name and password hidden: what a log line or an error may say about the server. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username || u.password) {
      u.username = '';
      u.password = '';
      return u.toString().replace('//', '//***@');
    }
    return u.toString();
  } catch {
    return '(an unparsable URL)';
  }
}
