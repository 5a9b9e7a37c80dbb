/**
 * A run's transcript: a closed run's from its result when the result holds it whole (the close event, no worker
 * involved, nothing replayed), else through the `messages` query, page by page (each page bounded by the workflow in
 * characters; a page the workers offloaded comes from the payload store). `AgentRunHandle.allMessages`, a fork's base
 * and a counterfactual replay's record read it so.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { Message } from '../common/messages.js';
import type { MessagesPage } from '../common/run.js';
import { closedRunResult } from '../node-common/run-result.js';
import { messagesQuery } from '../workflows/definitions.js';

/** One page of the `messages` query (a caller may put a deadline on it: the CLI does). */
export type PageReader = (handle: WorkflowHandle, from: number, limit: number) => Promise<MessagesPage>;

const queryPage: PageReader = (handle, from, limit) => handle.query(messagesQuery, { from, limit });

/**
 * transcript[0, count) of the run (`count` omitted: the whole transcript, as long as the first page says it is).
 * `page`: how a page is queried, when one is.
 */
export async function readTranscript(
  handle: WorkflowHandle,
  count?: number,
  page: PageReader = queryPage,
): Promise<Message[]> {
  const closed = await closedTranscript(handle, page, count);
  if (closed) return count === undefined ? closed : closed.slice(0, count);
  return queriedTranscript(handle, page, count);
}

/**
 * A completed or failed run's transcript as its result has it (a query on a closed run replays its whole history on a
 * worker, once per page): the messages it was given (queried, when there are any and `count` reaches them) and
 * `newMessages`. Undefined when the run is open, ended otherwise, or its result lacks them (too large, or a result of
 * Keel before 0.11.0).
 */
async function closedTranscript(
  handle: WorkflowHandle,
  page: PageReader,
  count?: number,
): Promise<Message[] | undefined> {
  const status = (await handle.describe()).status.name;
  // a handle pinned to a run that continued-as-new would read a later run's result: only a chain's own end counts
  if (status !== 'COMPLETED' && status !== 'FAILED') return undefined;
  const result = await closedRunResult(handle);
  const from = result?.newMessagesFrom;
  if (!result || result.newMessagesOmitted || from === undefined) return undefined;
  if (count !== undefined && count <= from) return queriedTranscript(handle, page, count);
  return [...(from > 0 ? await queriedTranscript(handle, page, from) : []), ...result.newMessages];
}

async function queriedTranscript(handle: WorkflowHandle, page: PageReader, count?: number): Promise<Message[]> {
  const out: Message[] = [];
  for (;;) {
    const want = count === undefined ? 500 : count - out.length;
    if (want <= 0) return out;
    const { messages, total } = await page(handle, out.length, want);
    out.push(...messages.slice(0, want));
    if (messages.length === 0 || (count === undefined && out.length >= total)) return out;
  }
}
