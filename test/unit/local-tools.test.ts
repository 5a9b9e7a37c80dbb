/**
 * The opt-in of the local placement (docs/local-tools.md): `builtinTools({ localReadTools })` marks exactly read, ls,
 * grep and find; `startRun` reports `localActivity` only for idempotent tools; a refusal off the home is recognised
 * wrapped or not; the local options bound each attempt and all of them.
 */
import { RetryState } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';
import { createStartRun } from '../../activities/start-run.js';
import { builtinTools, READ_ONLY_TOOLS } from '../../activities/tools/builtin/index.js';
import type { ToolDefinition } from '../../activities/tools/define-tool.js';
import { ErrorType } from '../../common/errors.js';
import { localToolActivityOptions } from '../../workflows/activities.js';
import { isNotHome } from '../../workflows/failure-outcomes.js';

const local = (tools: ToolDefinition[]) => tools.filter((t) => t.localActivity).map((t) => t.name);

describe('local placement: opt-in', () => {
  it('builtinTools places read, ls, grep and find locally only when asked, and keeps them idempotent', () => {
    expect(local(builtinTools({ cwd: '/tmp' }))).toEqual([]);
    const on = builtinTools({ cwd: '/tmp', localReadTools: true });
    expect(local(on).sort()).toEqual([...READ_ONLY_TOOLS].sort());
    for (const t of on.filter((t) => t.localActivity)) expect([t.idempotent, t.workerLocal]).toEqual([true, true]);
  });

  it('startRun reports localActivity for idempotent tools that declare it, never otherwise', async () => {
    const tools = new Map(
      builtinTools({ cwd: '/tmp', localReadTools: true }).map((t) => [t.name, t] as [string, ToolDefinition]),
    );
    // a definition built without defineTool cannot sneak a non-idempotent tool in
    tools.set('sneaky', { ...tools.get('bash')!, name: 'sneaky', localActivity: true });
    const startRun = createStartRun({ tools, models: {}, searchAttributesReady: async () => false });
    const r = await startRun({ input: { model: 'x', prompt: 'p', tools: ['read', 'bash', 'sneaky', 'ls'] } });
    expect(r.tools.map((t) => [t.name, t.localActivity])).toEqual([
      ['read', true],
      ['bash', undefined],
      ['sneaky', undefined],
      ['ls', true],
    ]);
  });

  it('a worker that caches no workflow runs no local activity: startRun places no tool locally and says so', async () => {
    const tools = new Map(
      builtinTools({ cwd: '/tmp', localReadTools: true }).map((t) => [t.name, t] as [string, ToolDefinition]),
    );
    const startRun = createStartRun({
      tools,
      models: {},
      searchAttributesReady: async () => false,
      noLocalActivities: () => true,
    });
    const r = await startRun({ input: { model: 'x', prompt: 'p', tools: ['read', 'ls'] } });
    expect(r.tools.map((t) => [t.name, t.localActivity])).toEqual([
      ['read', undefined],
      ['ls', undefined],
    ]);
    expect(r.noLocalActivities).toBe(true);
  });

  it('recognises the refusal off the home, as a local activity delivers it or wrapped', () => {
    const refusal = ApplicationFailure.nonRetryable('refused', ErrorType.NotHome);
    expect(isNotHome(refusal)).toBe(true);
    expect(
      isNotHome(
        new ActivityFailure('failed', 'runToolCall', '1', RetryState.NON_RETRYABLE_FAILURE, undefined, refusal),
      ),
    ).toBe(true);
    expect(isNotHome(ApplicationFailure.nonRetryable('other', 'Other'))).toBe(false);
    expect(isNotHome(new Error('x'))).toBe(false);
  });

  it('bounds an attempt by the tool timeout or 30 s, and all attempts by 1 minute (or the timeout when longer)', () => {
    const info = { name: 'read', executionMode: 'parallel' as const, idempotent: true };
    expect(localToolActivityOptions(info, 'read a')).toMatchObject({
      startToCloseTimeout: '30s',
      scheduleToCloseTimeout: '1m',
      retry: { maximumAttempts: 5 },
      summary: 'read a',
    });
    expect(localToolActivityOptions({ ...info, timeout: '5s' }, 's')).toMatchObject({
      startToCloseTimeout: '5s',
      scheduleToCloseTimeout: '1m',
    });
    expect(localToolActivityOptions({ ...info, timeout: '2m', retry: { maximumAttempts: 2 } }, 's')).toMatchObject({
      startToCloseTimeout: '2m',
      scheduleToCloseTimeout: '2m',
      retry: { maximumAttempts: 2 },
    });
  });
});
