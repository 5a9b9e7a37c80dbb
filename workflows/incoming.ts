import { log } from '@temporalio/workflow';
import type { UserMessage } from '../common/messages.js';
import type { IncomingMessage } from '../common/run.js';
import { workflowNow } from './clock.js';

/**
 * Turns a prompt or a signal argument into user messages: text becomes `[{ type: 'text', text }]` (Pi `prompt(text)`),
 * a user message keeps its content and gets a timestamp if it has none. Malformed entries are dropped with a warning
 * (a signal cannot be refused); the client validates before sending.
 */
export function toUserMessages(value: IncomingMessage | IncomingMessage[]): UserMessage[] {
  const list = Array.isArray(value) ? value : [value];
  const out: UserMessage[] = [];
  for (const m of list) {
    if (typeof m === 'string') out.push({ role: 'user', content: [{ type: 'text', text: m }], timestamp: workflowNow() });
    else if (m && typeof m === 'object' && m.role === 'user' && (typeof m.content === 'string' || Array.isArray(m.content))) {
      out.push({ ...m, timestamp: typeof m.timestamp === 'number' ? m.timestamp : workflowNow() });
    } else log.warn('Keel dropped a malformed message: expected a string or { role: "user", content }', { message: m });
  }
  return out;
}
