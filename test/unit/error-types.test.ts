/**
 * The failure types (common/errors.ts `ErrorType`): one table, its wire strings pinned byte for byte (recorded
 * histories, other-language clients and search queries match them), and docs/errors.md lists every one.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ErrorType } from '../../common/errors.js';

describe('ErrorType', () => {
  it('keeps every wire string as released', () => {
    expect(ErrorType).toEqual({
      InvalidAgentInput: 'InvalidAgentInput',
      AgentRunFailed: 'AgentRunFailed',
      InvalidAgentOutput: 'InvalidAgentOutput',
      WorkflowBug: 'KeelWorkflowBug',
      UpdateRejected: 'KeelUpdateRejected',
      BudgetExceeded: 'BudgetExceeded',
      TreeBudgetExceeded: 'TreeBudgetExceeded',
      TreeBudgetUnavailable: 'TreeBudgetUnavailable',
      ProviderLimitWait: 'KeelProviderLimitWait',
      InvalidAgentBatchInput: 'InvalidAgentBatchInput',
      NotHome: 'KeelNotHome',
      Internal: 'KeelInternal',
      ToolTransport: 'KeelToolTransport',
      CompactionFailed: 'CompactionFailed',
      ModelRateLimit: 'ModelError.RateLimit',
      ModelQuotaExceeded: 'ModelError.QuotaExceeded',
      ModelServer: 'ModelError.Server',
      ModelTimeout: 'ModelError.Timeout',
      ModelConflict: 'ModelError.Conflict',
      ModelNetwork: 'ModelError.Network',
      ModelBadRequest: 'ModelError.BadRequest',
      ModelAuth: 'ModelError.Auth',
      ModelNotFound: 'ModelError.NotFound',
      ModelContextOverflow: 'ModelError.ContextOverflow',
      ModelContentFilter: 'ModelError.ContentFilter',
      ModelUnknownModel: 'ModelError.UnknownModel',
      ModelProgrammingError: 'ModelError.ProgrammingError',
      ModelInvalidResponse: 'ModelError.InvalidResponse',
      ModelResponseTooLarge: 'ModelError.ResponseTooLarge',
      ModelUnknown: 'ModelError.Unknown',
      ModelScripted: 'ModelError.Scripted',
    });
  });

  it('is listed row by row in docs/errors.md', () => {
    const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    const rows = Object.entries(ErrorType).filter(
      ([key, type]) => !new RegExp(`\\| \`${key}\` +\\| \`${type}\` +\\|`).test(doc),
    );
    expect(rows).toEqual([]);
  });
});
