/**
 * Graders' definitions (docs/batches.md "Graded batches"): what a grader is given and returns, `defineGrader` for a
 * worker's own, and the built-ins (`exact`, `includes`, `regex`, `json-schema` on the final text, `tool-called` on the
 * transcript) — pure functions of a run's result, shared by the `gradeBatchTask` activity (activities/graders.ts) and a
 * counterfactual replay's grading of the originals on the client (client/replay/replay-grading.ts).
 */
import { Ajv } from 'ajv';
import type { BatchTask, Grade, GradeOutcome, GraderUsage } from '../common/grading.js';
import { toolCallsOf, type Message } from '../common/messages.js';
import type { AgentRunResult } from '../common/run.js';

/** What a grader is given: the task (with `expected`), the run's result, and its transcript (the run's new messages). */
export interface GraderContext {
  task: BatchTask;
  result: AgentRunResult;
  transcript: Message[];
  /** The child run's workflow id, its variant (if any) and attempt (0-based, for `repeat`). */
  workflowId: string;
  variant?: string;
  repeat: number;
}

/** A grader: `grade` returns a verdict; `usage` (when it called a model) is counted against the batch budget. */
export interface GraderDefinition {
  name: string;
  grade(ctx: GraderContext): Promise<Grade & { usage?: GraderUsage }> | (Grade & { usage?: GraderUsage });
}

/**
 * Declares a grader a worker registers (`createAgentWorker({ graders })`, `keelPlugin({ graders })`, or a
 * `--tools-module` exporting `graders`). Tasks name it in `grader`; it runs in the `gradeBatchTask` activity, which
 * may run again for the same attempt after a lost worker (the batch records one verdict per attempt).
 */
export function defineGrader(def: GraderDefinition): GraderDefinition {
  if (!def || typeof def.name !== 'string' || !def.name || typeof def.grade !== 'function')
    throw new TypeError('defineGrader({ name, grade }): name must be a non-empty string and grade a function');
  return def;
}

/** A value as a grader's reason quotes it: JSON, cut at 80 characters. */
export const show = (v: unknown) => {
  const s = typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 79)}…` : s;
};
const verdict = (pass: boolean, reason: string): Grade => ({ score: pass ? 1 : 0, pass, reason });

function texts(expected: unknown, grader: string): string[] {
  const list = Array.isArray(expected) ? expected : [expected];
  if (list.length === 0 || list.some((e) => typeof e !== 'string'))
    throw new Error(`grader ${grader}: expected must be a string or an array of strings, got ${show(expected)}`);
  return list as string[];
}

/** The json-schema grader's verdict on `value`: `<valid> against the schema`, or ajv's errors on `answer`. */
function matchesSchema(schema: object, value: unknown, valid: string): Grade {
  const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
  return validate(value)
    ? verdict(true, `${valid} against the schema`)
    : verdict(false, new Ajv().errorsText(validate.errors, { dataVar: 'answer' }));
}

/** The built-in graders by name. */
export const BUILTIN_GRADER_DEFINITIONS: Record<string, GraderDefinition['grade']> = {
  // the whole final text, surrounding whitespace trimmed on both sides (a model's trailing newline is not an answer);
  // whitespace inside is compared as it is. The reason says when the trimming mattered and, on a failure, that it is done.
  exact: ({ task, result }) => {
    const [want] = texts(task.expected, 'exact');
    const got = result.finalText.trim();
    if (got !== want.trim())
      return verdict(false, `expected ${show(want)}, got ${show(got)} (compared with surrounding whitespace trimmed)`);
    return verdict(
      true,
      result.finalText === want ? 'exact match' : 'exact match after trimming surrounding whitespace',
    );
  },
  includes: ({ task, result }) => {
    const missing = texts(task.expected, 'includes').filter((t) => !result.finalText.includes(t));
    return missing.length
      ? verdict(false, `missing ${missing.map(show).join(', ')}`)
      : verdict(true, 'includes every expected text');
  },
  regex: ({ task, result }) => {
    const [source] = texts(task.expected, 'regex');
    const m = /^\/(.*)\/([a-z]*)$/s.exec(source);
    const re = m ? new RegExp(m[1], m[2]) : new RegExp(source);
    return re.test(result.finalText) ? verdict(true, `matches ${re}`) : verdict(false, `no match for ${re}`);
  },
  // a run's typed `output` (docs/runs.md "Typed results") when it has one, else the final text parsed as JSON
  'json-schema': ({ task, result }) => {
    if (!task.expected || typeof task.expected !== 'object')
      throw new Error(`grader json-schema: expected must be a JSON Schema object, got ${show(task.expected)}`);
    if (result.output !== undefined) return matchesSchema(task.expected, result.output, 'the typed output is valid');
    const text = result.finalText
      .trim()
      .replace(/^```(?:json)?\s*\n([\s\S]*)\n```$/, '$1')
      .trim();
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return verdict(false, `the final text is not JSON: ${show(text)}`);
    }
    return matchesSchema(task.expected, value, 'valid');
  },
  'tool-called': ({ task, transcript }) => {
    const called = new Set(
      transcript.flatMap((m) => (m.role === 'assistant' ? toolCallsOf(m).map((c) => c.name) : [])),
    );
    const missing = texts(task.expected, 'tool-called').filter((t) => !called.has(t));
    return missing.length
      ? verdict(false, `not called: ${missing.join(', ')} (called: ${[...called].join(', ') || 'none'})`)
      : verdict(true, `called ${texts(task.expected, 'tool-called').join(', ')}`);
  },
};

/**
 * A grader's verdict on one run, checked: a verdict that is not `{ score: number, pass: boolean }` or a grader that
 * throws gives a grading error (recorded, never a task failure). Must not throw. The `gradeBatchTask` activity and a
 * replay's grading of its originals both judge so.
 */
export async function judge(name: string, grade: GraderDefinition['grade'], ctx: GraderContext): Promise<GradeOutcome> {
  try {
    const g = await grade(ctx);
    if (!g || typeof g.pass !== 'boolean' || typeof g.score !== 'number' || !Number.isFinite(g.score))
      return { error: `grader ${name} returned ${show(g)}: expected { score: number, pass: boolean, reason? }` };
    return {
      score: g.score,
      pass: g.pass,
      ...(typeof g.reason === 'string' ? { reason: g.reason } : {}),
      ...(g.usage ? { usage: g.usage } : {}),
    };
  } catch (err) {
    return { error: `grader ${name} threw: ${(err as Error)?.message ?? String(err)}` };
  }
}
