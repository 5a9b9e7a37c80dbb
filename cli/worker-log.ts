/**
 * The log lines of `keel dev` and `keel worker` (the Temporal runtime's logger). The SDK logs each failed activity
 * attempt at WARN with its whole context — task token, ids, the error with its stack and cause — which the default
 * logger prints over 20 to 35 lines (issue 33 item 20: 306 lines for 13 failed runs). Here such an entry is one line:
 * the activity, attempt, workflow and the error's message; every detail is printed when the level is DEBUG or TRACE
 * (`KEEL_LOG_LEVEL=DEBUG`). Other entries are printed as the SDK's default logger does, without colours.
 */
import { formatWithOptions } from 'node:util';
import type { LogEntry, LogLevel } from '@temporalio/worker';

const format = formatWithOptions.bind(undefined, { colors: false });

/** The level of `$KEEL_LOG_LEVEL` (TRACE, DEBUG, INFO, WARN, ERROR; case-insensitive), else WARN. */
export function keelLogLevel(env: NodeJS.ProcessEnv = process.env): LogLevel {
  const level = env.KEEL_LOG_LEVEL?.toUpperCase();
  return level === 'TRACE' || level === 'DEBUG' || level === 'INFO' || level === 'ERROR' ? level : 'WARN';
}

/** The first line of a thrown value's message. */
function errorLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n', 1)[0];
}

/** One line for a failed activity attempt: `[WARN] Activity failed: callModel (attempt 2) in <workflowId>: <message>`. */
export function activityFailedLine(entry: LogEntry): string {
  const m = entry.meta ?? {};
  const where = typeof m.workflowId === 'string' ? ` in ${m.workflowId}` : '';
  const attempt = typeof m.attempt === 'number' ? ` (attempt ${m.attempt})` : '';
  const date = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
  return `${date} [${entry.level}] Activity failed: ${String(m.activityType ?? '?')}${attempt}${where}: ${errorLine(m.error)}\n`;
}

/** The log function for `DefaultLogger(level, fn)`: failed activities on one line unless `level` is DEBUG or TRACE. */
export function keelLogFunction(level: LogLevel): (entry: LogEntry) => void {
  const detailed = level === 'DEBUG' || level === 'TRACE';
  return (entry) => {
    if (entry.message === 'Activity failed' && !detailed) return void process.stderr.write(activityFailedLine(entry));
    const date = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
    const meta = entry.meta === undefined ? '' : ` ${format(entry.meta)}`;
    process.stderr.write(`${date} [${entry.level}] ${entry.message}${meta}\n`);
  };
}
