/**
 * Sub-agents (README "Sub-agents"): `defineAgent` describes a typed child agent that a run can name in `tools` like a
 * tool. The model sees it as a tool (its `description`, its `input` schema or `{ task: string }`); a call is validated
 * like any tool call, then the run's workflow starts a child `agentWorkflow` for it (workflows/tree/sub-agent.ts) and
 * the child's final text — or its `output`, validated — is the call's result.
 */
import type { TSchema } from 'typebox';
import type { Budget } from '../../common/budget.js';
import type { AgentRunInput } from '../../common/run.js';
import { subAgentPrompt } from '../../common/tree/sub-agents.js';
import type { SubAgentRecord } from '../../common/wire.js';
import type { JsonSchema, ToolDefinition } from '../tools/define-tool.js';

/** A sub-agent: a child agent with its own prompt, tools and model, that a run calls as a tool. */
export interface AgentDefinition {
  /** The tool name the model calls (1-64 characters of `[A-Za-z0-9_-]`); unique among the worker's tools and agents. */
  name: string;
  /** What the model is told the sub-agent does (the tool's description). */
  description: string;
  /** The child run's system prompt. */
  systemPrompt: string;
  /**
   * The child run's tools (names registered on the worker: tools, MCP tools, other sub-agents). The child is offered
   * only those its tree's root run was given too (README "Sub-agents": the root's `tools` bound its tree), unless
   * `ownTools` is set.
   */
  tools: string[];
  /**
   * The child is offered every tool of `tools`, whatever its tree's root was given: the worker that registers this
   * definition vouches for them (announced when it starts). Default false.
   */
  ownTools?: boolean;
  /** The child's model (`provider/model-id`); default: the calling run's model. */
  model?: string;
  /**
   * The child's fallback models (as a run's `fallbackModels`, docs/models.md#fallback-models); default: the calling
   * run's when the child runs the calling run's model, else none.
   */
  fallbackModels?: string[];
  /**
   * The child run's model options. The calling run's `modelOptions` are inherited, option by option; an option set
   * here wins (so `{ maxTokens: 500 }` caps the child's output, and what its requests reserve of a tree budget).
   */
  modelOptions?: AgentRunInput['modelOptions'];
  /** The child run's `maxTurns`. */
  maxTurns?: number;
  /** The child run's own budget (README "Budgets"). */
  budget?: Budget;
  /**
   * The call's arguments (TypeBox or JSON Schema object); the child's prompt is then the arguments as JSON. Default
   * `{ task: string }`, whose `task` is the child's prompt.
   */
  input?: JsonSchema | (TSchema & object);
  /**
   * The child's final text must be JSON valid against this schema: it is parsed and validated (an invalid one gives the
   * caller an error result naming the field). Default: the final text as it is.
   */
  output?: JsonSchema | (TSchema & object);
}

/** The arguments schema of a sub-agent without `input`. */
export const TASK_INPUT_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    task: { type: 'string', description: 'What the sub-agent should do, with everything it needs to know.' },
  },
  required: ['task'],
};

/** A sub-agent as the worker's tool registry holds it: a tool whose calls the workflow turns into child runs. */
export type AgentTool = ToolDefinition & { agent: Omit<SubAgentRecord, 'maxDepth'> };

/**
 * Checks a sub-agent definition and returns it unchanged. Throws a `TypeError` for a bad name, a missing description
 * or system prompt, `tools` not an array of names, or `input` / `output` not an object.
 */
export function defineAgent(agent: AgentDefinition): AgentDefinition {
  const name = agent?.name;
  if (typeof name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(name))
    throw new TypeError(`defineAgent: name must be 1-64 characters of [A-Za-z0-9_-], got ${JSON.stringify(name)}`);
  if (typeof agent.description !== 'string' || !agent.description)
    throw new TypeError(`defineAgent(${name}): description must be a non-empty string`);
  if (typeof agent.systemPrompt !== 'string')
    throw new TypeError(`defineAgent(${name}): systemPrompt must be a string`);
  if (!Array.isArray(agent.tools) || !agent.tools.every((t) => typeof t === 'string' && t))
    throw new TypeError(`defineAgent(${name}): tools must be an array of tool names`);
  if (agent.ownTools !== undefined && typeof agent.ownTools !== 'boolean')
    throw new TypeError(`defineAgent(${name}): ownTools must be a boolean`);
  checkModelOptions(name, agent.modelOptions);
  const fallback = agent.fallbackModels as unknown;
  if (
    fallback !== undefined &&
    !(Array.isArray(fallback) && fallback.every((m) => typeof m === 'string' && /^[^/\s]+\/\S+$/.test(m)))
  )
    throw new TypeError(`defineAgent(${name}): fallbackModels must be an array of "provider/model-id" names`);
  for (const key of ['input', 'output'] as const)
    if (agent[key] !== undefined && (typeof agent[key] !== 'object' || agent[key] === null))
      throw new TypeError(`defineAgent(${name}): ${key} must be a JSON Schema object`);
  return agent;
}

const REASONING = ['off', 'minimal', 'low', 'medium', 'high', 'xhigh'];
const CACHE_RETENTION = ['none', 'short', 'long'];

/** `modelOptions` as the run input allows them (common/run-input-schema.ts), else a `TypeError` naming the option. */
function checkModelOptions(name: string, options: unknown): void {
  if (options === undefined) return;
  const bad = (what: string) => new TypeError(`defineAgent(${name}): modelOptions.${what}`);
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw new TypeError(`defineAgent(${name}): modelOptions must be an object`);
  for (const [key, value] of Object.entries(options)) {
    if (key === 'maxTokens' && !(Number.isInteger(value) && (value as number) >= 1))
      throw bad('maxTokens must be an integer >= 1');
    else if (key === 'temperature' && !(typeof value === 'number' && value >= 0))
      throw bad('temperature must be a number >= 0');
    else if (key === 'reasoning' && !REASONING.includes(value as string))
      throw bad(`reasoning must be one of ${REASONING.join(', ')}`);
    else if (key === 'cacheRetention' && !CACHE_RETENTION.includes(value as string))
      throw bad(`cacheRetention must be one of ${CACHE_RETENTION.join(', ')}`);
    else if (!['maxTokens', 'temperature', 'reasoning', 'cacheRetention'].includes(key))
      throw bad(`${key} is not a model option (maxTokens, temperature, reasoning, cacheRetention)`);
  }
}

/**
 * The tool a sub-agent is in the worker's registry: its description and arguments schema go to the model and to
 * argument validation like any tool's; `execute` is never called (the workflow starts a child run instead).
 */
export function agentTool(agent: AgentDefinition): AgentTool {
  defineAgent(agent);
  const parameters = (agent.input as JsonSchema | undefined) ?? TASK_INPUT_SCHEMA;
  return {
    name: agent.name,
    description: agent.description,
    parameters,
    summary: (args) => `sub-agent ${agent.name}: ${subAgentPrompt(args, agent.input !== undefined).slice(0, 80)}`,
    execute: () =>
      Promise.reject(new Error(`Sub-agent ${agent.name} is run by the workflow as a child run, not as an activity`)),
    agent: {
      description: agent.description,
      parameters,
      systemPrompt: agent.systemPrompt,
      tools: [...agent.tools],
      ...(agent.model !== undefined ? { model: agent.model } : {}),
      ...(agent.fallbackModels !== undefined ? { fallbackModels: [...agent.fallbackModels] } : {}),
      ...(agent.modelOptions !== undefined ? { modelOptions: { ...agent.modelOptions } } : {}),
      ...(agent.ownTools === true ? { ownTools: true as const } : {}),
      ...(agent.maxTurns !== undefined ? { maxTurns: agent.maxTurns } : {}),
      ...(agent.budget !== undefined ? { budget: agent.budget } : {}),
      ...(agent.output !== undefined ? { output: agent.output as JsonSchema } : {}),
      ...(agent.input !== undefined ? { typedInput: true } : {}),
    },
  };
}

/**
 * The warning a worker prints at start for sub-agents whose tools are not bounded by their tree (`ownTools`), or
 * undefined when it has none: `[keel] WARNING: sub-agent "helper" is offered all its tools whatever its tree's root run
 * was given (ownTools): secret, tick`.
 */
export function ownToolsWarning(agents: readonly AgentDefinition[] | undefined): string | undefined {
  const open = (agents ?? []).filter((a) => a.ownTools === true);
  if (!open.length) return undefined;
  return open
    .map(
      (a) =>
        `[keel] WARNING: sub-agent "${a.name}" is offered all its tools whatever its tree's root run was given (ownTools): ${a.tools.join(', ') || '(none)'}\n`,
    )
    .join('');
}

/**
 * The sub-agent as `startRun` records it for a run (`ToolInfo.agent`): its definition, the worker's depth limit, and
 * `direct` (0.8.0) when nothing on the worker sees a call before its child starts — `callHooks` false (no
 * `beforeToolCall` or `needsApproval` hook), no `approval` on the registry entry, and the worker's own tool activities
 * (`toolsElsewhere` false: another worker's hooks could see the call). A direct call whose arguments the workflow finds
 * plainly valid skips the preparation activity (workflows/tree/sub-agent.ts).
 */
export function subAgentRecord(
  tool: AgentTool,
  opts: { maxDepth: number; callHooks: boolean; toolsElsewhere: boolean },
): SubAgentRecord {
  const direct = !opts.callHooks && !opts.toolsElsewhere && tool.approval === undefined;
  return { ...tool.agent, maxDepth: opts.maxDepth, ...(direct ? { direct: true as const } : {}) };
}

/** True for a registry entry that is a sub-agent. */
export function isAgentTool(tool: ToolDefinition | undefined): tool is AgentTool {
  return tool !== undefined && typeof (tool as Partial<AgentTool>).agent === 'object';
}
