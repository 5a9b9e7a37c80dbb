/**
 * The `forkBase` query (issue 37 item 2): what `AgentRunHandle.fork` needs besides the transcript, in one snapshot
 * (common/fork.ts). A query only: no command, nothing recorded.
 */
import { setHandler } from '@temporalio/workflow';
import type { ForkBase } from '../../common/fork.js';
import { forkBaseQuery } from '../definitions.js';
import type { SessionState } from './state.js';

export function registerForkQuery(st: SessionState): void {
  setHandler(
    forkBaseQuery,
    (): ForkBase => ({
      config: st.config,
      given: st.newFrom,
      turns: st.turns,
      messageCount: st.transcript.length,
    }),
    { description: 'What a fork needs: { config, given, turns, messageCount } (docs/runs.md#fork-and-rewind).' },
  );
}
