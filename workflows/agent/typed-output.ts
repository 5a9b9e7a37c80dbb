/**
 * Typed final results (docs/runs.md "Typed results"): a run given an `output` JSON Schema ends an agent run only on a
 * final answer that is JSON valid against it. The answer is checked by the `checkRunOutput` local activity (ajv stays
 * out of the sandbox; one marker per final answer, none in a run without `output`); an invalid one is sent back to the
 * model as the run's next user message, up to `outputRepairs` times per agent run, after which the run fails with
 * `InvalidAgentOutput`. The valid value is carried in the state (across continue-as-new) and is the result's `output`.
 */
import { CancellationScope } from '@temporalio/workflow';
import { messageText, type Message, type UserMessage } from '../../common/messages.js';
import { DEFAULT_OUTPUT_REPAIRS, invalidAgentOutput, outputRepairRequest } from '../../common/typed-output.js';
import { localSetupActivities } from '../activities.js';
import { workflowNow } from '../clock.js';
import type { SessionState } from './state.js';

/** `valid`: the answer is the run's output; `repair`: send this message and ask again; `invalid`: no repair is left. */
export type OutputVerdict = { kind: 'valid' } | { kind: 'repair'; message: UserMessage } | { kind: 'invalid' };

/** The run has an `output` schema: its final answers are checked. */
export function wantsTypedOutput(st: SessionState): boolean {
  return st.config.output !== undefined;
}

/**
 * Checks the final answer (the transcript's last message) against `config.output`. Valid: it becomes
 * `st.typedOutput`. Invalid with a repair left: the repair request, counted in `st.outputRepairs`; else `st.lastError`
 * is the `InvalidAgentOutput` text. Not cancellable (a few milliseconds): an abort is seen right after it.
 */
export async function checkFinalAnswer(st: SessionState): Promise<OutputVerdict> {
  const last: Message | undefined = st.transcript[st.transcript.length - 1];
  const text = last?.role === 'assistant' ? messageText(last) : '';
  const checked = await CancellationScope.nonCancellable(() =>
    localSetupActivities.checkRunOutput.executeWithOptions({ summary: 'check output', retry: { maximumAttempts: 3 } }, [
      { text, schema: st.config.output! },
    ]),
  );
  if (checked.ok) {
    st.typedOutput = { value: checked.value };
    return { kind: 'valid' };
  }
  const used = st.outputRepairs?.run === st.runs ? st.outputRepairs.used : 0;
  const limit = st.config.outputRepairs ?? DEFAULT_OUTPUT_REPAIRS;
  if (used >= limit) {
    st.lastError = invalidAgentOutput(checked.error, used);
    return { kind: 'invalid' };
  }
  st.outputRepairs = { run: st.runs, used: used + 1 };
  const repair = outputRepairRequest(checked.error, used + 1, limit);
  return {
    kind: 'repair',
    message: { role: 'user', content: [{ type: 'text', text: repair }], timestamp: workflowNow() },
  };
}
