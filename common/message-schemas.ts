/**
 * JSON Schemas (draft-07) of the messages that cross Keel's boundaries: what a client may send as `followUp`/`steer`
 * ({@link USER_MESSAGE_SCHEMA}, {@link INCOMING_MESSAGES_SCHEMA}), what a model provider must return
 * ({@link ASSISTANT_MESSAGE_SCHEMA}), and a transcript entry ({@link MESSAGE_SCHEMA}). Every field Keel reads is typed;
 * extra fields (pi-ai's `responseId`, `diagnostics`, …) are allowed. Plain data: the client, the activities and the
 * workflow validate with the same schemas (`validate-messages.ts`).
 */

const finiteNumber = { type: 'number' } as const;

export const TEXT_CONTENT_SCHEMA = {
  type: 'object',
  required: ['type', 'text'],
  properties: { type: { const: 'text' }, text: { type: 'string' }, textSignature: { type: 'string' } },
} as const;

export const IMAGE_CONTENT_SCHEMA = {
  type: 'object',
  required: ['type', 'data', 'mimeType'],
  properties: { type: { const: 'image' }, data: { type: 'string' }, mimeType: { type: 'string' } },
} as const;

export const THINKING_CONTENT_SCHEMA = {
  type: 'object',
  required: ['type', 'thinking'],
  properties: {
    type: { const: 'thinking' },
    thinking: { type: 'string' },
    thinkingSignature: { type: 'string' },
    redacted: { type: 'boolean' },
  },
} as const;

export const TOOL_CALL_SCHEMA = {
  type: 'object',
  required: ['type', 'id', 'name', 'arguments'],
  properties: {
    type: { const: 'toolCall' },
    id: { type: 'string' },
    name: { type: 'string' },
    arguments: { type: 'object' },
    argumentsError: { type: 'string' },
    thoughtSignature: { type: 'string' },
  },
} as const;

export const USAGE_SCHEMA = {
  type: 'object',
  required: ['input', 'output', 'cacheRead', 'cacheWrite', 'totalTokens', 'cost'],
  properties: {
    input: finiteNumber,
    output: finiteNumber,
    cacheRead: finiteNumber,
    cacheWrite: finiteNumber,
    totalTokens: finiteNumber,
    cost: {
      type: 'object',
      required: ['input', 'output', 'cacheRead', 'cacheWrite', 'total'],
      properties: {
        input: finiteNumber,
        output: finiteNumber,
        cacheRead: finiteNumber,
        cacheWrite: finiteNumber,
        total: finiteNumber,
      },
    },
  },
} as const;

/** A block of a content list, chosen by its `type` (so an error names the block's own fields). */
function blocks(...schemas: { properties: { type: { const: string } } }[]) {
  return {
    type: 'array',
    items: {
      type: 'object',
      required: ['type'],
      properties: { type: { enum: schemas.map((s) => s.properties.type.const) } },
      allOf: schemas.map((s) => ({ if: { properties: { type: { const: s.properties.type.const } } }, then: s })),
    },
  };
}

/** `{ role: 'user', content, timestamp? }`: content a string or a list of text and image blocks. */
export const USER_MESSAGE_SCHEMA = {
  type: 'object',
  required: ['role', 'content'],
  properties: {
    role: { const: 'user' },
    // a type list, not anyOf: `items` applies to the list form only, so an error names the bad block
    content: { type: ['string', 'array'], items: blocks(TEXT_CONTENT_SCHEMA, IMAGE_CONTENT_SCHEMA).items },
    timestamp: finiteNumber,
  },
} as const;

/** One `followUp`/`steer` entry: a text, or a user message. */
export const INCOMING_MESSAGE_SCHEMA = { anyOf: [{ type: 'string' }, USER_MESSAGE_SCHEMA] } as const;

/** A `followUp`/`steer` signal argument: one entry or a list of them. */
export const INCOMING_MESSAGES_SCHEMA = {
  anyOf: [INCOMING_MESSAGE_SCHEMA, { type: 'array', items: INCOMING_MESSAGE_SCHEMA }],
} as const;

/** What a model provider returns (and the workflow appends): a complete assistant message. */
export const ASSISTANT_MESSAGE_SCHEMA = {
  type: 'object',
  required: ['role', 'content', 'api', 'provider', 'model', 'usage', 'stopReason', 'timestamp'],
  properties: {
    role: { const: 'assistant' },
    content: blocks(TEXT_CONTENT_SCHEMA, THINKING_CONTENT_SCHEMA, TOOL_CALL_SCHEMA),
    api: { type: 'string' },
    provider: { type: 'string' },
    model: { type: 'string' },
    usage: USAGE_SCHEMA,
    stopReason: { enum: ['stop', 'length', 'toolUse', 'error', 'aborted'] },
    errorMessage: { type: 'string' },
    timestamp: finiteNumber,
  },
} as const;

export const TOOL_RESULT_MESSAGE_SCHEMA = {
  type: 'object',
  required: ['role', 'toolCallId', 'toolName', 'content', 'isError', 'timestamp'],
  properties: {
    role: { const: 'toolResult' },
    toolCallId: { type: 'string' },
    toolName: { type: 'string' },
    content: blocks(TEXT_CONTENT_SCHEMA, IMAGE_CONTENT_SCHEMA),
    usage: USAGE_SCHEMA,
    addedToolNames: { type: 'array', items: { type: 'string' } },
    isError: { type: 'boolean' },
    timestamp: finiteNumber,
  },
} as const;

/** A transcript entry, chosen by `role`. */
export const MESSAGE_SCHEMA = {
  type: 'object',
  required: ['role'],
  properties: { role: { enum: ['user', 'assistant', 'toolResult'] } },
  allOf: [
    { if: { properties: { role: { const: 'user' } } }, then: USER_MESSAGE_SCHEMA },
    { if: { properties: { role: { const: 'assistant' } } }, then: ASSISTANT_MESSAGE_SCHEMA },
    { if: { properties: { role: { const: 'toolResult' } } }, then: TOOL_RESULT_MESSAGE_SCHEMA },
  ],
} as const;
