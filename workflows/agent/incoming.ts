import { log } from '@temporalio/workflow';
import type { UserMessage } from '../../common/messages.js';
import type { IncomingMessage } from '../../common/run.js';
import { incomingMessageLines } from '../../common/validate-messages.js';
import { workflowNow } from '../clock.js';

/** The log line of a signal's entry that `toUserMessages` drops: `Keel dropped a malformed message: <problems>`. */
export const droppedMessage = (problems: string[]): string =>
  `Keel dropped a malformed message: ${problems.join('; ')}`;

/**
 * Turns a prompt or a signal argument into user messages: text becomes `[{ type: 'text', text }]` (Pi `prompt(text)`),
 * a user message keeps its content and gets a timestamp if it has none. A malformed entry (by the incoming-message
 * schema, common/message-schemas.ts, which accepts exactly what this check accepted before it) is dropped with a
 * warning worded as the Update and the client refuse it (`followUp.0.content: is required`; a signal cannot be
 * refused); `label` names the signal (`followUp`, `steer`; default `message`), list entries `<label>.<i>`.
 */
export function toUserMessages(value: IncomingMessage | IncomingMessage[], label = 'message'): UserMessage[] {
  const list = Array.isArray(value) ? value : [value];
  const out: UserMessage[] = [];
  list.forEach((m, i) => {
    const problems = incomingMessageLines(m, Array.isArray(value) ? `${label}.${i}` : label);
    if (problems.length > 0) log.warn(droppedMessage(problems), { message: m });
    else if (typeof m === 'string')
      out.push({ role: 'user', content: [{ type: 'text', text: m }], timestamp: workflowNow() });
    else
      out.push({
        role: 'user',
        content: m.content,
        timestamp: typeof m.timestamp === 'number' ? m.timestamp : workflowNow(),
      });
  });
  return out;
}
