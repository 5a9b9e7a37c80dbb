/**
 * The log lines of `keel dev` / `keel worker` (issue 33 item 20): the SDK logs each failed activity attempt at WARN with
 * its task token and the error's stack and cause, which its default logger printed over 20–35 lines per failure. The
 * runtime's logger (the SDK's DefaultLogger with Keel's log function) prints one line; DEBUG prints every detail.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger, LogTimestamp } from '@temporalio/worker';
import { keelLogFunction, keelLogLevel } from '../../cli/worker-log.js';

/** What the SDK passes with 'Activity failed' (activityLogAttributes, then the error and duration). */
function failedAttempt() {
  const cause = new Error('connect ECONNREFUSED 127.0.0.1:443');
  const error = ApplicationFailure.create({
    type: 'ModelError',
    message: 'Unknown scripted model "scripted/terse"\n  known: hello',
    cause,
  });
  return {
    isLocal: false,
    attempt: 2,
    namespace: 'default',
    taskToken: 'CiQ5ZjQ0ZTcxYy1hYmNkLTQ4ZWYtOTAxMi0zNDU2Nzg5MGFiY2QSBGtlZWw=',
    activityId: '2',
    activityType: 'callModel',
    taskQueue: 'keel',
    workflowId: 'keel-batch-1f0c-3',
    workflowRunId: '0196c0de-0000-7000-8000-000000000000',
    workflowType: 'agentWorkflow',
    error,
    durationMs: 12,
    [LogTimestamp]: 1_765_000_000_123_000_000n,
  };
}

describe('keel dev / keel worker log lines', () => {
  afterEach(() => vi.restoreAllMocks());

  it('a failed activity attempt is one line: activity, attempt, workflow, the first line of the error', () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((s) => (written.push(String(s)), true));
    new DefaultLogger('WARN', keelLogFunction('WARN')).warn('Activity failed', failedAttempt());
    expect(written).toEqual([
      '2025-12-06T05:46:40.123Z [WARN] Activity failed: callModel (attempt 2) in keel-batch-1f0c-3: Unknown scripted model "scripted/terse"\n',
    ]);
  });

  it('at DEBUG every detail is printed, task token and cause included; other entries as the SDK prints them', () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((s) => (written.push(String(s)), true));
    const logger = new DefaultLogger('DEBUG', keelLogFunction('DEBUG'));
    logger.warn('Activity failed', failedAttempt());
    logger.info('Worker state changed', { state: 'RUNNING', [LogTimestamp]: 1_765_000_000_123_000_000n });
    expect(written).toHaveLength(2);
    expect(written[0]).toContain('taskToken:');
    expect(written[0]).toContain('ECONNREFUSED');
    expect(written[1]).toBe("2025-12-06T05:46:40.123Z [INFO] Worker state changed { state: 'RUNNING' }\n");
  });

  it('KEEL_LOG_LEVEL picks the level, in any case; anything else is WARN', () => {
    expect([
      keelLogLevel({ KEEL_LOG_LEVEL: 'debug' }),
      keelLogLevel({ KEEL_LOG_LEVEL: 'ERROR' }),
      keelLogLevel({ KEEL_LOG_LEVEL: 'loud' }),
      keelLogLevel({}),
    ]).toEqual(['DEBUG', 'ERROR', 'WARN', 'WARN']);
  });
});
