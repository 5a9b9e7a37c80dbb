import { msToNumber } from '@temporalio/common';
import { agentRunInputErrors } from '../common/validate-input.js';
import type { StartRunInput, StartRunResult, ToolInfo } from '../common/wire.js';
import { providerFor } from './model/call-model.js';
import type { ModelProvider, ModelRegistry } from './model/provider.js';
import type { ToolDefinition } from './tools/define-tool.js';
import { thrownMessage } from '../common/errors.js';
import { Context } from '@temporalio/activity';
import type { RunMcpTools } from './mcp/run-tools.js';
import { isAgentTool, subAgentRecord } from './agents/define-agent.js';
import { outputSchemaProblem } from './agents/check-output.js';
import { DEFAULT_MAX_AGENT_DEPTH } from '../common/tree/sub-agents.js';

const activityWorkflowId = (): string => Context.current().info.workflowExecution?.workflowId ?? '';

/** What `startRun` knows of its worker. */
export interface StartRunDeps {
  tools: Map<string, ToolDefinition>;
  models: ModelRegistry;
  searchAttributesReady: () => Promise<boolean>;
  largePayloads?: boolean;
  /** This worker's own task queue for worker-local tools (worker/plugin.ts), once it polls one. */
  homeQueue?: () => string | undefined;
  /**
   * Tools run on other workers (role `model`, README "Worker roles"): no tool is reported for local activities, which
   * would run in this worker's process.
   */
  toolsElsewhere?: boolean;
  /** The worker caches no workflow (`maxCachedWorkflows: 0`): no local activity, a placed tool's or a lean child's. */
  noLocalActivities?: () => boolean;
  /** An encrypting worker's check of the run's raw start (worker/sealed-start.ts): a line when it was not sealed. */
  unsealedStart?: () => Promise<string | undefined>;
  /** The worker verifies approvals (README "Who may approve"): the run then accepts only signed decisions. */
  verifiedApprovals?: boolean;
  /** The worker's MCP servers (activities/mcp/): their tools are resolved and recorded for the run here. */
  mcp?: RunMcpTools;
  /** Deepest sub-agent a run may start (README "Sub-agents"); default 3. */
  maxAgentDepth?: number;
  /** The run's workflow id (default: the activity's). */
  workflowId?: () => string;
  /** The worker has `hooks.needsApproval`: any call may wait for approval. */
  approvalHook?: boolean;
  /** The worker has `hooks.beforeToolCall`: it sees every call before it runs (0.8.0: no call of a sub-agent is `direct`). */
  callHook?: boolean;
}

/**
 * Activity `startRun`: validates the run input (JSON Schema, the worker's tools and models) before any model call, and
 * returns what the workflow needs to schedule the enabled tools. Every problem is reported, one line per field.
 */
export function createStartRun(deps: StartRunDeps) {
  return async function startRun({ input }: StartRunInput): Promise<StartRunResult> {
    // the codec passes clear payloads through (old runs stay readable), so a clear start is caught here, once
    const unsealed = await deps.unsealedStart?.();
    if (unsealed) return { errors: [unsealed], tools: [], searchAttributes: false };
    const errors = agentRunInputErrors(input);
    if (!input || typeof input !== 'object') return { errors, tools: [], searchAttributes: false };
    const named = Array.isArray(input.tools) ? input.tools.filter((n): n is string => typeof n === 'string') : [];
    // MCP names and globs (`files__*`) resolved against the servers' listings now, and recorded for the whole run
    const mcp = deps.mcp ? await deps.mcp.source.resolve(named) : { names: named, records: [], errors: [] };
    const records = new Map(mcp.records.map((r) => [`${r.server}__${r.tool}`, r]));
    const names = mcp.names;
    const unknown = names.filter((n) => !deps.tools.has(n) && !records.has(n));
    if (unknown.length > 0) {
      const known = [...deps.tools.keys()];
      const servers = Object.keys(deps.mcp?.source.servers ?? {});
      errors.push(
        `tools: unknown ${unknown.map((n) => JSON.stringify(n)).join(', ')}; tools registered on this worker: ${known.length ? known.join(', ') : '(none)'}${servers.length ? `; MCP servers: ${servers.join(', ')} (name their tools <server>__<tool>, or <server>__*)` : ''}`,
      );
    }
    errors.push(...mcp.errors);
    const outputProblem = errors.some((e) => e.startsWith('output:')) ? undefined : outputSchemaProblem(input.output);
    if (outputProblem) errors.push(outputProblem);
    if (
      typeof input.approvalTimeout === 'string' &&
      !errors.some((e) => e.startsWith('approvalTimeout:')) &&
      !durationOk(input.approvalTimeout)
    ) {
      errors.push(
        `approvalTimeout: must be a duration such as "24h", "30m" or a number of milliseconds, got ${JSON.stringify(input.approvalTimeout)}`,
      );
    }
    const noLocal = deps.noLocalActivities?.() === true;
    let contextWindow: number | undefined;
    if (typeof input.model === 'string' && /^[^/\s]+\/\S+$/.test(input.model)) {
      const { provider, prefix, checkId } = providerFor(deps.models, input.model);
      const problem = provider
        ? checkModelSafely(provider, checkId)
        : `no provider "${prefix}" on this worker; name a model as "provider/model-id" with one of: ${Object.keys(deps.models).join(', ')}`;
      if (problem) errors.push(`model: ${problem}`);
      else contextWindow = provider?.contextWindow?.(checkId);
    }
    errors.push(...fallbackModelProblems(deps.models, input.fallbackModels));
    const tools = names
      .filter((n) => deps.tools.has(n) || records.has(n))
      .map((n): StartRunResult['tools'][number] => {
        const record = records.get(n);
        const t = record ? deps.mcp!.source.definition(record) : deps.tools.get(n)!;
        return {
          name: t.name,
          executionMode: t.executionMode ?? 'parallel',
          idempotent: t.idempotent === true,
          ...(t.workerLocal === true ? { workerLocal: true } : {}),
          ...(t.localActivity === true && t.idempotent === true && !deps.toolsElsewhere && !noLocal
            ? { localActivity: true }
            : {}),
          ...(t.timeout !== undefined ? { timeout: t.timeout as number | string } : {}),
          ...(t.retry ? { retry: t.retry as StartRunResult['tools'][number]['retry'] } : {}),
          ...(record ? { mcp: record } : {}),
          ...(isAgentTool(t) ? { agent: subAgentRecord(t, agentRecordOptions(deps)) } : {}),
          ...approvalInfo(t.approval, deps.approvalHook === true),
        };
      });
    const otherTools = [...deps.tools.keys()].filter((n) => !names.includes(n));
    if (deps.mcp && records.size > 0 && errors.length === 0)
      deps.mcp.remember((deps.workflowId ?? activityWorkflowId)(), [...records.values()]);
    const homeQueue = tools.some((t) => t.workerLocal) ? deps.homeQueue?.() : undefined;
    return {
      errors,
      tools,
      ...(homeQueue ? { homeQueue } : {}),
      ...(contextWindow ? { contextWindow } : {}),
      ...(deps.largePayloads ? { largePayloads: true } : {}),
      ...(deps.verifiedApprovals ? { verifiedApprovals: true } : {}),
      ...(otherTools.length > 0 ? { otherTools } : {}),
      // a worker with role `all`: the run's tool calls may go to its own task queue (eager dispatch, no second queue)
      ...(deps.toolsElsewhere ? {} : { toolsOnRunQueue: true }),
      ...(noLocal ? { noLocalActivities: true } : {}),
      searchAttributes: errors.length === 0 && (await deps.searchAttributesReady()),
    };
  };
}

/** What a sub-agent's record depends on of the worker (activities/agents/define-agent.ts `subAgentRecord`). */
function agentRecordOptions(deps: StartRunDeps) {
  return {
    maxDepth: deps.maxAgentDepth ?? DEFAULT_MAX_AGENT_DEPTH,
    callHooks: deps.approvalHook === true || deps.callHook === true,
    toolsElsewhere: deps.toolsElsewhere === true,
  };
}

/** `ToolInfo.approval`: `always` unless a worker hook may overrule it, `conditional` for a predicate or such a hook. */
function approvalInfo(approval: ToolDefinition['approval'], hook: boolean): Pick<ToolInfo, 'approval'> {
  if (approval === 'always') return { approval: hook ? 'conditional' : 'always' };
  return typeof approval === 'function' || hook ? { approval: 'conditional' } : {};
}

/** Each of a run's `fallbackModels` this worker cannot serve, as `fallbackModels.<i>: <problem>`. */
function fallbackModelProblems(models: ModelRegistry, fallbackModels: unknown): string[] {
  if (!Array.isArray(fallbackModels)) return [];
  return fallbackModels.flatMap((model: unknown, i) => {
    if (typeof model !== 'string' || !/^[^/\s]+\/\S+$/.test(model)) return [];
    const { provider, prefix, checkId } = providerFor(models, model);
    const problem = provider
      ? checkModelSafely(provider, checkId)
      : `no provider "${prefix}" on this worker; name a model as "provider/model-id" with one of: ${Object.keys(models).join(', ')}`;
    return problem ? [`fallbackModels.${i}: ${problem}`] : [];
  });
}

/** The provider's `checkModel` verdict; a `checkModel` that throws is a problem with the model, not a failed activity. */
function checkModelSafely(provider: ModelProvider, id: string): string | undefined {
  try {
    return provider.checkModel?.(id);
  } catch (error) {
    return thrownMessage(error);
  }
}

/** The workflow turns the duration into milliseconds with the same function: what fails here would fail there. */
function durationOk(value: string): boolean {
  try {
    return Number.isFinite(msToNumber(value)) && msToNumber(value) > 0;
  } catch {
    return false;
  }
}
