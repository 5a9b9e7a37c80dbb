/** workflows/failure-outcomes.ts: the texts each failed activity or child run is recorded with (docs/errors.md). */
import { RetryState, TimeoutType, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  ChildWorkflowFailure,
  TerminatedFailure,
  TimeoutFailure,
} from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';
import { ErrorType } from '../../common/errors.js';
import { emptyUsage } from '../../common/messages.js';
import {
  childRunOutcome,
  compactionFailure,
  preparationFailureText,
  toolCallFailureText,
} from '../../workflows/failure-outcomes.js';

const activityFailure = (cause: Error) =>
  new ActivityFailure('activity failed', 'runToolCall', '1', RetryState.MAXIMUM_ATTEMPTS_REACHED, undefined, cause);
const child = (cause: Error) =>
  new ChildWorkflowFailure(
    'default',
    { workflowId: 'b-1', runId: 'r' },
    'agentWorkflow',
    RetryState.NON_RETRYABLE_FAILURE,
    cause,
  );

describe('failure → outcome', () => {
  it('a tool call: aborted, interrupted (lost, not idempotent), else the failure’s own message', () => {
    const tool = { name: 'launch' };
    expect(toolCallFailureText(new CancelledFailure('cancelled'), tool)).toBe('Operation aborted');
    const lost = activityFailure(
      new TimeoutFailure('activity StartToClose timeout', undefined, TimeoutType.START_TO_CLOSE),
    );
    expect(toolCallFailureText(lost, tool)).toMatch(/^Tool launch was interrupted before it finished/);
    expect(toolCallFailureText(lost, { ...tool, idempotent: true })).toBe('activity StartToClose timeout');
    expect(toolCallFailureText(activityFailure(ApplicationFailure.create({ message: 'disk on fire' })), tool)).toBe(
      'disk on fire',
    );
  });

  it('a preparation: the failure’s message for every call, nothing when cancelled', () => {
    expect(preparationFailureText(new CancelledFailure('cancelled'))).toBeUndefined();
    expect(preparationFailureText(new Error('boom'))).toBe('boom');
  });

  it('a compaction: usage from the details, the budget refusal, the text', () => {
    const usage = { ...emptyUsage(), totalTokens: 7 };
    const f = compactionFailure(
      activityFailure(
        ApplicationFailure.create({ type: ErrorType.BudgetExceeded, message: 'spent', details: [{ usage }] }),
      ),
    );
    expect(f).toEqual({ usage, budgetExceeded: true, text: 'spent' });
  });

  it('a child run: its own result when it failed, else a status and a text', () => {
    const result = { status: 'failed', finalText: '', newMessages: [], usage: emptyUsage(), turns: 2, error: 'x' };
    const failed = ApplicationFailure.create({ type: ErrorType.AgentRunFailed, message: 'x', details: [result] });
    expect(childRunOutcome(undefined, child(failed))).toEqual({
      status: 'failed',
      turns: 2,
      tokens: 0,
      cost: 0,
      modelCalls: 0,
      error: 'x',
    });
    expect(childRunOutcome(undefined, child(new CancelledFailure('c'))).status).toBe('cancelled');
    expect(childRunOutcome(undefined, child(new TerminatedFailure('t'))).error).toBe('terminated');
    expect(childRunOutcome(undefined, child(ApplicationFailure.create({ type: 'Bad', message: 'no' }))).error).toBe(
      'Bad: no',
    );
    const started = new WorkflowExecutionAlreadyStartedError('already started', 'b-1', 'agentWorkflow');
    expect(childRunOutcome(undefined, started).error).toBe('could not start: already started');
    expect(childRunOutcome(undefined, child(new Error('e'.repeat(400)))).error).toHaveLength(300);
  });
});
