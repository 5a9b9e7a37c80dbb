/**
 * The one definition of each message kind that crosses Keel's boundaries: JSON Schemas (draft-07) built with TypeBox,
 * and the source of the message types in `messages.ts` (`Static<typeof …>`). What a client may send as a prompt or a
 * `followUp`/`steer` entry ({@link INCOMING_MESSAGE_SCHEMA}: text or a {@link USER_MESSAGE_SCHEMA}), what a model
 * provider must return ({@link ASSISTANT_MESSAGE_SCHEMA}, {@link USAGE_SCHEMA}), a tool result
 * ({@link TOOL_RESULT_MESSAGE_SCHEMA}), a transcript entry ({@link MESSAGE_SCHEMA}) and a prior transcript entry as
 * the run input takes it ({@link PRIOR_MESSAGE_SCHEMA}). Every field Keel reads is typed; extra fields (pi-ai's
 * `responseId`, `diagnostics`, …) are allowed.
 *
 * Nothing compiles these at run time: `npm run gen-schemas` (scripts/gen-schemas.ts) turns them into plain validation
 * functions with ajv's standalone code generation (`message-validators.generated.ts`, `input-validator.generated.ts`),
 * which the client, the activities and the workflow call through `validate-messages.ts` / `validate-input.ts`; one
 * describer (`validate-errors.ts`) words every refusal.
 */
import { Type, type Static, type TSchema } from 'typebox';

/**
 * `{ const: value }` typed as `value`. Not `Type.Literal`, which adds `type: "string"`: that would add a second error
 * line (`must be string`) next to `must be "<value>"` for a wrong type, and the texts are part of the contract.
 */
export function constant<const T extends string | boolean>(value: T) {
  return Type.Unsafe<T>({ const: value });
}

export const TEXT_CONTENT_SCHEMA = Type.Object({
  type: constant('text'),
  text: Type.String(),
  textSignature: Type.Optional(Type.String()),
});

export const IMAGE_CONTENT_SCHEMA = Type.Object({
  type: constant('image'),
  /** base64 */
  data: Type.String(),
  mimeType: Type.String(),
});

export const THINKING_CONTENT_SCHEMA = Type.Object({
  type: constant('thinking'),
  thinking: Type.String(),
  thinkingSignature: Type.Optional(Type.String()),
  redacted: Type.Optional(Type.Boolean()),
});

export const TOOL_CALL_SCHEMA = Type.Object({
  type: constant('toolCall'),
  id: Type.String(),
  name: Type.String(),
  /**
   * An object, as the tool's parameters describe. A JSON string (some models and gateways send the arguments text
   * unparsed) is kept as sent: like Pi, the call gets the validation error `root: expected object, got string` as its
   * result and the model can try again.
   */
  arguments: Type.Unsafe<Record<string, unknown> | string>({ type: ['object', 'string'] }),
  /**
   * pi-ai sets it when the model's arguments text was not a valid JSON object (e.g. the stream was cut off); `arguments`
   * is then `{}` or a salvaged prefix. Such a call is never executed: it gets the error result
   * `Invalid arguments for tool "<name>": <argumentsError>`.
   */
  argumentsError: Type.Optional(Type.String()),
  thoughtSignature: Type.Optional(Type.String()),
});

export const USAGE_SCHEMA = Type.Object({
  input: Type.Number(),
  output: Type.Number(),
  cacheRead: Type.Number(),
  cacheWrite: Type.Number(),
  totalTokens: Type.Number(),
  cost: Type.Object({
    input: Type.Number(),
    output: Type.Number(),
    cacheRead: Type.Number(),
    cacheWrite: Type.Number(),
    total: Type.Number(),
  }),
});

type Block = TSchema & { properties: { type: TSchema } };

/** The `const` of a block's `type` (built by {@link constant}). */
const blockType = (s: Block) => (s.properties.type as { const: string }).const;

/** One block of a content list, chosen by its `type` (so an error names the block's own fields). */
function blockItems(schemas: Block[]) {
  return {
    type: 'object',
    required: ['type'],
    properties: { type: { enum: schemas.map(blockType) } },
    allOf: schemas.map((s) => ({ if: { properties: { type: { const: blockType(s) } } }, then: s })),
  };
}

/** A content list of these blocks, typed as a list of their union. */
function blocks<const B extends Block[]>(...schemas: B) {
  return Type.Unsafe<Static<B[number]>[]>({ type: 'array', items: blockItems(schemas) });
}

/**
 * A text block of a user message: `textSignature` (an assistant's) is not checked there, as the workflow's signal
 * check never did (which signal payloads a run accepts must not change: workflows/agent/incoming.ts).
 */
const USER_TEXT_CONTENT_SCHEMA = Type.Omit(TEXT_CONTENT_SCHEMA, ['textSignature']);

/** `{ role: 'user', content, timestamp? }`: content a string or a list of text and image blocks. */
export const USER_MESSAGE_SCHEMA = Type.Object({
  role: constant('user'),
  // a type list, not anyOf: `items` applies to the list form only, so an error names the bad block
  content: Type.Unsafe<string | Static<typeof TEXT_CONTENT_SCHEMA | typeof IMAGE_CONTENT_SCHEMA>[]>({
    type: ['string', 'array'],
    items: blockItems([USER_TEXT_CONTENT_SCHEMA, IMAGE_CONTENT_SCHEMA]),
  }),
  timestamp: Type.Optional(Type.Number()),
});

/**
 * A prompt entry or a `followUp`/`steer` entry: a text, or a user message. The user message's schema with a type
 * list, not an anyOf: a string passes (`required` and `properties` apply to objects only), and a malformed object is
 * refused naming its own field (`content: is required`), not every branch of a union.
 */
export const INCOMING_MESSAGE_SCHEMA = Type.Unsafe<string | Static<typeof USER_MESSAGE_SCHEMA>>({
  ...USER_MESSAGE_SCHEMA,
  type: ['string', 'object'],
});

export const STOP_REASON_SCHEMA = Type.Unsafe<'stop' | 'length' | 'toolUse' | 'error' | 'aborted'>({
  enum: ['stop', 'length', 'toolUse', 'error', 'aborted'],
});

/** What a model provider returns (and the workflow appends): a complete assistant message. */
export const ASSISTANT_MESSAGE_SCHEMA = Type.Object({
  role: constant('assistant'),
  content: blocks(TEXT_CONTENT_SCHEMA, THINKING_CONTENT_SCHEMA, TOOL_CALL_SCHEMA),
  api: Type.String(),
  provider: Type.String(),
  model: Type.String(),
  usage: USAGE_SCHEMA,
  stopReason: STOP_REASON_SCHEMA,
  errorMessage: Type.Optional(Type.String()),
  timestamp: Type.Number(),
});

export const TOOL_RESULT_MESSAGE_SCHEMA = Type.Object({
  role: constant('toolResult'),
  toolCallId: Type.String(),
  toolName: Type.String(),
  content: blocks(TEXT_CONTENT_SCHEMA, IMAGE_CONTENT_SCHEMA),
  usage: Type.Optional(USAGE_SCHEMA),
  addedToolNames: Type.Optional(Type.Array(Type.String())),
  isError: Type.Boolean(),
  timestamp: Type.Number(),
});

/** The `compaction` field of a compaction entry (common/compaction.ts). */
export const COMPACTION_INFO_SCHEMA = Type.Object({
  /** Index in the transcript of the first message kept verbatim. */
  firstKept: Type.Integer({ minimum: 0 }),
  /** Estimated context tokens before compacting. */
  tokensBefore: Type.Number(),
  /** `threshold`: the context neared the window; `overflow`: the provider refused the context. */
  reason: Type.Unsafe<'threshold' | 'overflow'>({ enum: ['threshold', 'overflow'] }),
});

/**
 * A compaction entry: a user message holding the wrapped summary, and which messages it replaces (common/compaction.ts).
 * Not a kind a client sends: the workflow appends it; a prior transcript may carry it back (checked there).
 */
export const COMPACTION_ENTRY_SCHEMA = Type.Object({
  ...USER_MESSAGE_SCHEMA.properties,
  timestamp: Type.Number(),
  compaction: COMPACTION_INFO_SCHEMA,
});

type Transcript =
  | Static<typeof USER_MESSAGE_SCHEMA>
  | Static<typeof ASSISTANT_MESSAGE_SCHEMA>
  | Static<typeof TOOL_RESULT_MESSAGE_SCHEMA>;

/** Entries chosen by `role` (so an error names the message's own fields). */
function byRole(user: TSchema, assistant: TSchema, toolResult: TSchema) {
  return Type.Unsafe<Transcript>({
    type: 'object',
    required: ['role'],
    properties: { role: { enum: ['user', 'assistant', 'toolResult'] } },
    allOf: [
      { if: { properties: { role: { const: 'user' } } }, then: user },
      { if: { properties: { role: { const: 'assistant' } } }, then: assistant },
      { if: { properties: { role: { const: 'toolResult' } } }, then: toolResult },
    ],
  });
}

/** A transcript entry, chosen by `role`. */
export const MESSAGE_SCHEMA = byRole(USER_MESSAGE_SCHEMA, ASSISTANT_MESSAGE_SCHEMA, TOOL_RESULT_MESSAGE_SCHEMA);

/** The same message schema with fewer fields required (every field given is still checked). */
const requiring = <S extends TSchema>(schema: S, required: string[]) => ({ ...schema, required });

/**
 * A prior transcript entry as the run input (`messages`) and the run result take it: a {@link MESSAGE_SCHEMA} of which
 * only the fields the loop reads are required (an assistant message's `content` and `stopReason`; a tool result's
 * `toolCallId`, `toolName`, `content`, `isError`), so a transcript written by hand or by another tool can be given; a
 * user message's `compaction` (a compaction entry carried back from an earlier run's result) is checked.
 */
export const PRIOR_MESSAGE_SCHEMA = byRole(
  { ...USER_MESSAGE_SCHEMA, properties: { ...USER_MESSAGE_SCHEMA.properties, compaction: COMPACTION_INFO_SCHEMA } },
  requiring(ASSISTANT_MESSAGE_SCHEMA, ['role', 'content', 'stopReason']),
  requiring(TOOL_RESULT_MESSAGE_SCHEMA, ['role', 'toolCallId', 'toolName', 'content', 'isError']),
);
