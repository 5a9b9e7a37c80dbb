/**
 * A run's transcript through the `messages` query, page by page (each page bounded by the workflow in characters; a
 * page the workers offloaded comes from the payload store): `AgentRunHandle.allMessages`, a fork's base and a
 * counterfactual replay's record read it so.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { Message } from '../common/messages.js';
import type { MessagesPage } from '../common/run.js';
import { messagesQuery } from '../workflows/definitions.js';

/** transcript[0, count) of the run (`count` omitted: the whole transcript, as long as the first page says it is). */
export async function readTranscript(handle: WorkflowHandle, count?: number): Promise<Message[]> {
  const out: Message[] = [];
  for (;;) {
    const want = count === undefined ? 500 : count - out.length;
    if (want <= 0) return out;
    const page: MessagesPage = await handle.query(messagesQuery, { from: out.length, limit: want });
    out.push(...page.messages.slice(0, want));
    if (page.messages.length === 0 || (count === undefined && out.length >= page.total)) return out;
  }
}
