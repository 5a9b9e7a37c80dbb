/**
 * The task file of `keel batch`: JSONL parsing with defaults, page splitting for big lists, and the batch id derived
 * from the tasks when `--id` is not given.
 */
import { hash } from 'node:crypto';
import type { AgentRunInput } from '../../common/run.js';
import { usageError } from '../context.js';
import type { BatchShape } from '../../common/grading.js';
import { batchTaskErrors } from '../../client/batch-client.js';

/** Inline task lists above this many JSON characters go by page reference (one payload must stay under 2 MB). */
/** One batch carries ~20 bytes per task across continue-as-new (2 MB payload limit). */
export const MAX_TASKS = 50_000;

export interface TaskDefaults {
  model?: string;
  tools?: string[];
  system?: string;
  maxTurns?: number;
}

/**
 * Parses a JSONL task file: each non-empty line is an AgentRunInput object (fields missing there come from the
 * defaults) or a JSON string (a prompt). Every bad line is reported, with its line number.
 */
export function parseTasks(text: string, defaults: TaskDefaults = {}): AgentRunInput[] {
  const tasks: AgentRunInput[] = [];
  const errors: string[] = [];
  text.split('\n').forEach((raw, n) => {
    const line = raw.trim();
    if (!line || line.startsWith('//')) return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      errors.push(`line ${n + 1}: not JSON (${(err as Error).message})`);
      return;
    }
    const task: Record<string, unknown> =
      typeof value === 'string' ? { prompt: value } : (value as Record<string, unknown>);
    if (!task || typeof task !== 'object' || Array.isArray(task)) {
      errors.push(`line ${n + 1}: must be an AgentRunInput object or a prompt string`);
      return;
    }
    if (task.model === undefined && defaults.model) task.model = defaults.model;
    if (task.tools === undefined && defaults.tools) task.tools = defaults.tools;
    if (task.systemPrompt === undefined && defaults.system !== undefined) task.systemPrompt = defaults.system;
    if (task.maxTurns === undefined && defaults.maxTurns !== undefined) task.maxTurns = defaults.maxTurns;
    // a graded task's `expected` and `grader` are the batch's (README "Graded batches"), not the run's
    const bad = batchTaskErrors(task);
    if (bad.length) errors.push(`line ${n + 1}: ${bad.join('; ')}`);
    else tasks.push(task as unknown as AgentRunInput);
  });
  if (errors.length) {
    const shown = errors.slice(0, 20);
    throw usageError(
      `Invalid tasks:\n  ${shown.join('\n  ')}${errors.length > shown.length ? `\n  … and ${errors.length - shown.length} more` : ''}`,
    );
  }
  return tasks;
}

export { paginate } from '../../client/batch-client.js';

/**
 * The batch id of a task list when `--id` is not given: `keel-batch-<first 16 hex digits of the SHA-256 of the tasks>`
 * (after defaults are applied; with the variants and repeat when given), so running the same file again finds the same batch instead of starting another.
 */
export function batchIdFor(tasks: AgentRunInput[], shape: BatchShape = {}): string {
  // variants and repeats are part of what runs: a batch without them keeps the id it always had
  const key = shape.variants?.length || (shape.repeat ?? 1) > 1 ? { tasks, ...shape } : tasks;
  return `keel-batch-${hash('sha256', JSON.stringify(key)).slice(0, 16)}`;
}
