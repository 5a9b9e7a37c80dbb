import { log } from '@temporalio/workflow';
import { incomingMessageProblem } from '../../common/message-checks.js';
import type { UserMessage } from '../../common/messages.js';
import type { IncomingMessage } from '../../common/run.js';
import { workflowNow } from '../clock.js';

/**
 * Turns a prompt or a signal argument into user messages: text becomes `[{ type: 'text', text }]` (Pi `prompt(text)`),
 * a user message keeps its content and gets a timestamp if it has none. Malformed entries are dropped with a warning
 * (a signal cannot be refused); the client validates before sending.
 */
export function toUserMessages(value: IncomingMessage | IncomingMessage[]): UserMessage[] {
  const list = Array.isArray(value) ? value : [value];
  const out: UserMessage[] = [];
  for (const m of list) {
    const problem = incomingMessageProblem(m);
    if (problem) log.warn(`Keel dropped a malformed message: ${problem}`, { message: m });
    else if (typeof m === 'string')
      out.push({ role: 'user', content: [{ type: 'text', text: m }], timestamp: workflowNow() });
    else
      out.push({
        role: 'user',
        content: m.content,
        timestamp: typeof m.timestamp === 'number' ? m.timestamp : workflowNow(),
      });
  }
  return out;
}
