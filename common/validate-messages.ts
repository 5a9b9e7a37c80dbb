/**
 * Validators for the message schemas (`message-schemas.ts`), with one line per problem: `<path>: <ajv message>`, the
 * path dotted from a label (`followUp[0].content.0: must be object`, `usage.cost.total: must be number`). Empty when
 * valid. The client refuses bad signals with them, the model activity bad provider output, and the workflow can check
 * carried state and signal payloads with the same functions.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { ASSISTANT_MESSAGE_SCHEMA, MESSAGE_SCHEMA, USER_MESSAGE_SCHEMA } from './message-schemas.js';

let ajv: Ajv | undefined;
const compiled = new Map<object, ValidateFunction>();

function validator(schema: object): ValidateFunction {
  let v = compiled.get(schema);
  if (!v) {
    ajv ??= new Ajv({ allErrors: true, strict: false });
    v = ajv.compile(schema);
    compiled.set(schema, v);
  }
  return v;
}

function lines(errors: readonly ErrorObject[] | null | undefined, label: string): string[] {
  const out = (errors ?? [])
    .filter((e) => e.keyword !== 'if')
    .map((e) => {
      const segments = e.instancePath ? e.instancePath.slice(1).split('/') : [];
      if (e.keyword === 'required') segments.push(String((e.params as { missingProperty: string }).missingProperty));
      const path = [label, ...segments].filter(Boolean).join('.');
      if (e.keyword === 'required') return `${path}: is required`;
      if (e.keyword === 'enum')
        return `${path}: must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
      if (e.keyword === 'const')
        return `${path}: must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`;
      return `${path}: ${e.message ?? 'is invalid'}`;
    });
  return [...new Set(out)];
}

function check(schema: object, value: unknown, label: string): string[] {
  const v = validator(schema);
  return v(value) ? [] : lines(v.errors, label);
}

/** A user message (`{ role: 'user', content, timestamp? }`). */
export function userMessageErrors(value: unknown, label = 'message'): string[] {
  return check(USER_MESSAGE_SCHEMA, value, label);
}

/**
 * A `followUp`/`steer` argument: a text, a user message, or a list of them. List entries are labelled
 * `<label>[<i>]`.
 */
export function incomingMessagesErrors(value: unknown, label = 'message'): string[] {
  const list = Array.isArray(value) ? value : [value];
  return list.flatMap((m, i) => {
    const at = Array.isArray(value) ? `${label}[${i}]` : label;
    if (typeof m === 'string') return [];
    if (m === null || typeof m !== 'object' || Array.isArray(m))
      return [`${at}: must be a string or a user message { role: "user", content }`];
    return userMessageErrors(m, at);
  });
}

/** A complete assistant message as a model provider must return it. */
export function assistantMessageErrors(value: unknown, label = ''): string[] {
  return check(ASSISTANT_MESSAGE_SCHEMA, value, label);
}

/** A transcript (prior `messages`, carried state): a list of user, assistant and toolResult messages. */
export function transcriptErrors(value: unknown, label = 'messages'): string[] {
  if (!Array.isArray(value)) return [`${label}: must be array`];
  return value.flatMap((m, i) => check(MESSAGE_SCHEMA, m, `${label}.${i}`));
}

/** A `cancel` signal's reason: absent or a string. */
export function cancelReasonErrors(value: unknown): string[] {
  return value === undefined || typeof value === 'string' ? [] : ['reason: must be a string'];
}
