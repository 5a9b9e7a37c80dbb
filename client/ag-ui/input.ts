/**
 * What a POSTed `RunAgentInput` asks of a thread (validated with `@ag-ui/core`'s schema): a new user message, answers
 * to interrupts (`resume`), a reconnect after offset `forwardedProps.keel.from`, or a `cancel` / `interrupt` command.
 * Anything else is refused with one line that says what is wrong, and nothing is sent to Temporal.
 */
import type { ResumeEntry, RunAgentInput } from '@ag-ui/core';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';

/** Keel's part of `forwardedProps` (`forwardedProps.keel`). */
export interface KeelForwardedProps {
  /** The last Keel stream offset the client applied (`metadata.keel.offset` of the last event): resume after it. */
  from?: number;
  /** `cancel`: end the conversation's run; `interrupt`: abort its current agent run. */
  command?: 'cancel' | 'interrupt';
}

/** One request, understood. */
export type AgUiRequest = {
  input: RunAgentInput;
  from?: number;
} & (
  | { kind: 'message'; text: string }
  | { kind: 'resume'; resume: ResumeEntry[] }
  | { kind: 'reconnect' }
  | { kind: 'command'; command: 'cancel' | 'interrupt' }
);

const PREFIX = 'Invalid RunAgentInput';

/** The request `body` (parsed JSON) asks for, or the refusal's text. */
export function parseRunAgentInput(body: unknown): AgUiRequest | { error: string } {
  const parsed = RunAgentInputSchema.safeParse(body);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`);
    return { error: `${PREFIX}: ${issues.join('; ')}` };
  }
  const input = parsed.data as RunAgentInput;
  const keel = keelProps(input.forwardedProps);
  if ('error' in keel) return keel;
  const base = { input, ...(keel.from !== undefined ? { from: keel.from } : {}) };
  if (keel.command) return { ...base, kind: 'command', command: keel.command };
  if (input.resume?.length) return { ...base, kind: 'resume', resume: input.resume };
  if (keel.from !== undefined) return { ...base, kind: 'reconnect' };
  const last = input.messages.at(-1);
  if (last?.role !== 'user')
    return {
      error: `${PREFIX}: messages: the last message must be the user's new message (role "user"), or give resume or forwardedProps.keel.from`,
    };
  const text = typeof last.content === 'string' ? last.content : contentText(last.content);
  if (!text.trim()) return { error: `${PREFIX}: messages.${input.messages.length - 1}.content: is empty` };
  return { ...base, kind: 'message', text };
}

function contentText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content.map((p: { type?: string; text?: string }) => (p.type === 'text' ? (p.text ?? '') : '')).join('');
}

function keelProps(props: unknown): KeelForwardedProps | { error: string } {
  const keel = (props as { keel?: unknown } | undefined)?.keel;
  if (keel === undefined) return {};
  if (typeof keel !== 'object' || keel === null) return { error: `${PREFIX}: forwardedProps.keel: expected an object` };
  const { from, command } = keel as Record<string, unknown>;
  if (from !== undefined && !(typeof from === 'number' && Number.isSafeInteger(from) && from >= 0))
    return { error: `${PREFIX}: forwardedProps.keel.from: expected an offset (an integer ≥ 0)` };
  if (command !== undefined && command !== 'cancel' && command !== 'interrupt')
    return { error: `${PREFIX}: forwardedProps.keel.command: expected "cancel" or "interrupt"` };
  return { from: from as number | undefined, command: command as KeelForwardedProps['command'] };
}
