/**
 * A page holder (`agentBatchPageWorkflow`, and `agentBatchWorkflow({ taskPage })` for holders started by 0.3.0
 * clients): holds one page of a big batch's tasks and answers `pageRequest` signals with slices of it (at most
 * 512 KB a reply) until `pageRelease` (the batch is finished) or `idleTimeout` without requests.
 */
import {
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { AgentRunInput } from '../../common/run.js';
import {
  pageReleaseSignal,
  pageReplySignal,
  pageRequestSignal,
  type BatchPageHolderInput,
  type BatchPageRequest,
} from './definitions.js';

/** The most JSON characters of tasks in one reply. */
const PAGE_REPLY_MAX_CHARS = 512 * 1024;

/** Serves the page; `{ released: false }` after `idleTimeout` (default 30 days) without a request. */
export async function holdPage(input: BatchPageHolderInput): Promise<{ released: boolean }> {
  const requests: BatchPageRequest[] = [];
  let released = false;
  setHandler(pageRequestSignal, (r) => void requests.push(r), {
    description: 'Send tasks [from, from + limit) of this page to replyTo.',
  });
  setHandler(pageReleaseSignal, () => void (released = true), { description: 'The batch is finished: complete.' });
  setCurrentDetails(`**task page** · ${input.taskPage.length} tasks`);
  for (;;) {
    const woke = await condition(() => requests.length > 0 || released, input.idleTimeout ?? '30 days');
    if (!woke) return { released: false };
    while (requests.length > 0) {
      const r = requests.shift()!;
      const tasks: AgentRunInput[] = [];
      let chars = 0;
      for (let i = r.from; i < Math.min(input.taskPage.length, r.from + r.limit); i++) {
        chars += JSON.stringify(input.taskPage[i]).length;
        if (tasks.length > 0 && chars > PAGE_REPLY_MAX_CHARS) break;
        tasks.push(input.taskPage[i]);
      }
      await getExternalWorkflowHandle(r.replyTo)
        .signal(pageReplySignal, { page: r.page, from: r.from, tasks })
        .catch(() => undefined);
    }
    if (released) return { released: true };
    const info = workflowInfo();
    // continues as the same workflow type it runs as
    if (info.continueAsNewSuggested || info.historySize > 16 * 1024 * 1024)
      return await continueAsNew<typeof holdPage>(input);
  }
}
