/**
 * Terminal rendering of a run (docs/architecture.md#live-output, docs/cli.md): turns, tool calls with their arguments, tool results (truncated),
 * streamed assistant text from the live stream's deltas, tool progress, queued messages and a final summary.
 *
 * On a TTY the text streams in place and lines are coloured; otherwise (a pipe, a file, CI) every event is one plain
 * line, `key value …`, easy to grep. Pure: everything goes through a `Sink`, so tests render into a string.
 */
import { styleText } from 'node:util';
import type { PendingApproval } from '../common/updates.js';
import { pathText } from '../common/tree/approvals.js';
import type { BatchProgress } from '../common/batch-definitions.js';
import type { LoggedEvent, ToolHeartbeat } from '../common/events.js';
import type { AttemptResetEvent, MessageUpdateEvent } from '../common/stream.js';
import type { AssistantMessage, Message, Usage } from '../common/messages.js';
import type { AgentRunResult, RunStatus } from '../common/run.js';
import { terminalSafe } from './terminal-text.js';

export interface Sink {
  write(text: string): void;
  /** Interactive terminal: stream text in place, colours, progress bars. */
  tty: boolean;
  color: boolean;
  /** Columns. */
  width: number;
}

/** stdout as a sink; colour unless NO_COLOR is set. */
export function stdoutSink(stream: NodeJS.WriteStream = process.stdout): Sink {
  const tty = stream.isTTY === true;
  return {
    write: (t) => void stream.write(t),
    tty,
    color: tty && !process.env.NO_COLOR && process.env.TERM !== 'dumb',
    width: Math.max(40, stream.columns ?? 100),
  };
}

/** A sink that collects text (tests). */
export function stringSink(opts: { tty?: boolean; color?: boolean; width?: number } = {}): Sink & { text(): string } {
  let buf = '';
  return {
    write: (t) => void (buf += t),
    tty: opts.tty ?? false,
    color: opts.color ?? false,
    width: opts.width ?? 100,
    text: () => buf,
  };
}

type Style = 'dim' | 'bold' | 'red' | 'green' | 'yellow' | 'cyan' | 'magenta';

/** `text` in `style` when the sink has color (the sink already decided, from the terminal and NO_COLOR), else as is. */
export function paint(sink: Pick<Sink, 'color'>, style: Style, text: string): string {
  return sink.color ? styleText(style, text, { validateStream: false }) : text;
}

/** One line, at most `max` characters (an ellipsis when cut); control characters escaped (terminal-text.ts). */
export function terminalLine(text: string, max: number): string {
  const flat = terminalSafe(text)
    .replace(/\s*\n\s*/g, ' ⏎ ')
    .replace(/\s+/g, ' ')
    .trim();
  return flat.length > max ? `${flat.slice(0, Math.max(1, max - 1))}…` : flat;
}

/** The first `lines` lines of `text`, each cut to `width`, with a `(+N more lines)` note; control characters escaped. */
export function headLines(text: string, lines: number, width: number): string[] {
  const all = terminalSafe(text).replace(/\s+$/, '').split('\n');
  const out = all.slice(0, lines).map((l) => (l.length > width ? `${l.slice(0, width - 1)}…` : l));
  if (all.length > lines) out.push(`(+${all.length - lines} more lines)`);
  return out;
}

export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((b: { type?: string; text?: string; mimeType?: string }) =>
      b?.type === 'text' ? (b.text ?? '') : b?.type === 'image' ? `[image ${b.mimeType ?? ''}]` : '',
    )
    .join('');
}

function assistantText(m: AssistantMessage): string {
  return m.content
    .filter((b) => b.type === 'text')
    .map((b) => (b as { text: string }).text)
    .join('');
}

export function formatTokens(n: number): string {
  return n.toLocaleString('en-US');
}

export function formatCost(usd: number): string {
  return `$${usd < 1 ? usd.toFixed(4) : usd.toFixed(2)}`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.round(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** The run's final summary. */
export interface RunSummary {
  workflowId: string;
  status: RunStatus | 'terminated' | 'timedOut' | 'running' | 'waiting' | string;
  turns: number;
  usage: Usage;
  durationMs?: number;
  error?: string;
  url: string;
}

export function summaryFromResult(
  workflowId: string,
  r: Pick<AgentRunResult, 'status' | 'turns' | 'usage' | 'error'>,
  url: string,
  durationMs?: number,
): RunSummary {
  return { workflowId, status: r.status, turns: r.turns, usage: r.usage, error: r.error, url, durationMs };
}

/** How much of the end of the text shown while streaming is kept to check that the next text goes on from it. */
const SHOWN_TAIL_CHARS = 2048;

/**
 * Renders one run's live progress. Feed it the live stream (`AgentRunHandle.stream()`: events, deltas, tool updates),
 * the queue sizes (from the `state` query), and finally a summary.
 */
export class RunRenderer {
  private turn = 0;
  /**
   * The current assistant message as shown so far (TTY streaming): `shown` characters of it, of which the last ones
   * (≤ {@link SHOWN_TAIL_CHARS}) are `shownTail`.
   */
  private shown = 0;
  private shownTail = '';
  private streaming = false;
  private toolUpdates = new Map<string, number>();
  /** The text blocks of the message being streamed (`delta`), by block index, and that message's index. */
  private blocks: string[] = [];
  private blocksOf: number | undefined;
  private queued = { steering: 0, followUp: 0 };

  constructor(private readonly sink: Sink) {}

  private line(text = ''): void {
    this.endStream();
    this.sink.write(`${text}\n`);
  }

  private endStream(): void {
    if (this.streaming) {
      this.sink.write('\n');
      this.streaming = false;
    }
  }

  private get width(): number {
    return this.sink.width;
  }

  header(workflowId: string, url: string, extra?: string): void {
    if (this.sink.tty) {
      this.line(
        `${paint(this.sink, 'bold', 'run')} ${workflowId}${extra ? paint(this.sink, 'dim', ` · ${extra}`) : ''}`,
      );
      this.line(paint(this.sink, 'dim', url));
    } else {
      this.line(`run ${workflowId}${extra ? ` ${extra}` : ''}`);
      this.line(`ui ${url}`);
    }
  }

  /** A session waiting for its next message (once per wait). */
  waiting(): void {
    this.line(this.sink.tty ? paint(this.sink, 'dim', 'waiting for input') : 'waiting for input');
  }

  note(text: string): void {
    this.line(this.sink.tty ? paint(this.sink, 'yellow', text) : `note ${text}`);
  }

  skipped(count: number): void {
    this.line(
      this.sink.tty
        ? paint(this.sink, 'dim', `… ${count} earlier events no longer held by the run`)
        : `skipped ${count}`,
    );
  }

  event(e: LoggedEvent): void {
    const s = this.sink;
    switch (e.type) {
      case 'agent_start':
        this.turn = 0;
        return;
      case 'turn_start':
        // the conversation's turn number (runs before 0.4.2 log none: counted within the agent run)
        this.turn = e.turn ?? this.turn + 1;
        this.line(s.tty ? paint(s, 'dim', `── turn ${this.turn} ──`) : `turn ${this.turn}`);
        return;
      case 'message_start':
        if (e.message.role === 'user') this.userMessage(e.message);
        return;
      case 'message_end':
        if (e.message.role === 'assistant') this.assistantEnd(e.message);
        return;
      case 'tool_execution_start': {
        this.toolUpdates.delete(e.toolCallId);
        const args = terminalLine(JSON.stringify(e.args ?? {}), Math.max(20, this.width - e.toolName.length - 6));
        const name = terminalSafe(e.toolName);
        this.line(s.tty ? `${paint(s, 'cyan', `→ ${name}`)} ${paint(s, 'dim', args)}` : `tool_call ${name} ${args}`);
        return;
      }
      case 'tool_execution_end': {
        this.toolUpdates.delete(e.toolCallId);
        const text = contentText(e.result?.content);
        const name = terminalSafe(e.toolName);
        if (s.tty) {
          const mark = e.isError ? paint(s, 'red', `← ${name} ✗`) : paint(s, 'green', `← ${name} ✓`);
          const lines = headLines(text || '(no output)', 4, this.width - 4);
          this.line(`${mark} ${e.isError ? paint(s, 'red', lines[0]) : lines[0]}`);
          for (const l of lines.slice(1)) this.line(paint(s, 'dim', `    ${l}`));
        } else {
          this.line(`tool_result ${name} ${e.isError ? 'error' : 'ok'} ${terminalLine(text, 200)}`);
        }
        return;
      }
      case 'agent_end':
        this.endStream();
        if (e.reason === 'interrupted') this.line(s.tty ? paint(s, 'yellow', 'interrupted') : 'interrupted');
        return;
      case 'turn_end':
        return;
      case 'worker_rehomed':
        this.line(s.tty ? paint(s, 'yellow', `⚠ ${terminalSafe(e.text)}`) : `rehomed ${terminalSafe(e.text)}`);
        return;
      case 'model_fallback': {
        const text = `${e.from} → ${e.to} (${e.errorType}: ${terminalLine(e.error, 200)})`;
        this.line(s.tty ? paint(s, 'yellow', `⚠ model fallback: ${text}`) : `model_fallback ${text}`);
        return;
      }
    }
  }

  private userMessage(m: Message): void {
    const text = contentText((m as { content: unknown }).content);
    if (this.sink.tty) this.line(`${paint(this.sink, 'magenta', 'you ›')} ${terminalLine(text, this.width - 6)}`);
    else this.line(`user ${terminalLine(text, 500)}`);
  }

  /**
   * A delta of the live stream (`AgentRunHandle.stream()`, common/stream.ts): on a TTY the reply's text as it grows
   * (text blocks only; the plain output shows whole messages). `attempt_reset` (a retried model call), or a replacing
   * delta that does not go on from what is shown, says the reply restarts.
   */
  delta(e: MessageUpdateEvent | AttemptResetEvent): void {
    if (!this.sink.tty) return;
    if (e.type === 'attempt_reset' || e.messageIndex !== this.blocksOf) {
      this.blocks = [];
      this.blocksOf = e.messageIndex;
    }
    if (e.type === 'attempt_reset') {
      if (this.streaming) this.line(paint(this.sink, 'yellow', '(model call retried: the reply restarts)'));
      this.shown = 0;
      this.shownTail = '';
      return;
    }
    if (e.kind !== 'text') return;
    this.blocks[e.block] = e.replace ? e.delta : (this.blocks[e.block] ?? '') + e.delta;
    const text = this.blocks.join('');
    if (this.streaming && this.continues(text)) {
      this.sink.write(terminalSafe(text.slice(this.shown)));
    } else {
      if (this.streaming) this.line(paint(this.sink, 'yellow', '(the reply restarts)'));
      this.sink.write(`${paint(this.sink, 'bold', 'assistant ›')} ${terminalSafe(text)}`);
      this.streaming = true;
      this.shown = 0;
      this.shownTail = '';
    }
    this.remember(text);
  }

  /** Whether the message's text `text` goes on from what is shown (it ends as what is shown does, at `shown`). */
  private continues(text: string): boolean {
    return text.length >= this.shown && text.slice(this.shown - this.shownTail.length, this.shown) === this.shownTail;
  }

  /** What is shown now is `text`. */
  private remember(text: string): void {
    this.shown = text.length;
    this.shownTail = text.slice(-SHOWN_TAIL_CHARS);
  }

  private assistantEnd(m: AssistantMessage): void {
    const s = this.sink;
    const text = assistantText(m);
    if (s.tty) {
      if (this.streaming && this.continues(text)) {
        s.write(terminalSafe(text.slice(this.shown)));
        this.endStream();
      } else if (text) {
        this.line(`${paint(s, 'bold', 'assistant ›')} ${terminalSafe(text)}`);
      }
      this.shown = 0;
      this.shownTail = '';
      if (m.stopReason === 'error')
        this.line(paint(s, 'red', `model error: ${terminalSafe(m.errorMessage ?? 'unknown error')}`));
      else if (m.stopReason === 'aborted') this.line(paint(s, 'yellow', 'aborted'));
      else if (m.stopReason === 'length') this.line(paint(s, 'yellow', '(reply cut at the output token limit)'));
    } else {
      if (text) this.line(`assistant ${terminalLine(text, 2000)}`);
      if (m.stopReason === 'error') this.line(`model_error ${terminalLine(m.errorMessage ?? 'unknown error', 500)}`);
      else if (m.stopReason !== 'stop' && m.stopReason !== 'toolUse') this.line(`stop_reason ${m.stopReason}`);
    }
  }

  /** Tool progress (`onUpdate`), shown on a TTY when its update count changes. */
  tool(h: ToolHeartbeat): void {
    if (!this.sink.tty) return;
    if (this.toolUpdates.get(h.toolCallId) === h.updates) return;
    this.toolUpdates.set(h.toolCallId, h.updates);
    const text = contentText((h.partialResult as { content?: unknown } | undefined)?.content);
    const last = text.replace(/\s+$/, '').split('\n').pop() ?? '';
    const name = terminalSafe(h.toolName);
    this.line(paint(this.sink, 'dim', `  ⋯ ${name}: ${terminalLine(last, this.width - h.toolName.length - 8)}`));
  }

  /** Messages waiting in the run's queues; printed when the counts change. */
  private announced = new Set<string>();

  /**
   * A tool call awaiting approval, once per request, prominently: its whole arguments (never cut to the terminal:
   * what is shown is what is approved; control characters escaped) and the commands that decide exactly these
   * arguments (`--digest`, so a call whose arguments changed meanwhile is refused, not approved). A sub-agent's call
   * (listed by its root, README "Approvals") names its path; deciding it on the root routes it to the sub-agent.
   */
  approvals(workflowId: string, pending: PendingApproval[]): void {
    for (const p of pending) {
      const key = `${p.workflowId ?? ''} ${p.toolCallId} ${p.requestId ?? p.argsDigest}`;
      if (this.announced.has(key)) continue;
      this.announced.add(key);
      this.endStream();
      const args = terminalSafe(`${JSON.stringify(p.args)}${p.path ? ` in ${pathText(p.path)}` : ''}`);
      const call = `${workflowId} ${terminalSafe(p.toolCallId)} --digest ${p.argsDigest}`;
      const how = `keel approve ${call}  |  keel deny ${call} --reason …`;
      const name = terminalSafe(p.toolName);
      if (this.sink.tty)
        this.line(`${paint(this.sink, 'yellow', `⚠ APPROVAL NEEDED: ${name}`)} ${args}
  ${paint(this.sink, 'dim', how)}`);
      else
        this.line(`approval_needed ${terminalSafe(p.toolCallId)} ${name} ${args}
  ${how}`);
    }
  }

  queue(q: { steering: number; followUp: number }): void {
    if (q.steering === this.queued.steering && q.followUp === this.queued.followUp) return;
    this.queued = { ...q };
    if (q.steering === 0 && q.followUp === 0) return;
    this.line(
      this.sink.tty
        ? paint(this.sink, 'yellow', `queued: ${q.steering} steering, ${q.followUp} follow-up`)
        : `queued steering=${q.steering} followUp=${q.followUp}`,
    );
  }

  summary(sum: RunSummary): void {
    const s = this.sink;
    const u = sum.usage;
    if (s.tty) {
      const ok = sum.status === 'completed' || sum.status === 'stopped' || sum.status === 'waiting';
      const mark = ok ? paint(s, 'green', `✔ ${sum.status}`) : paint(s, 'red', `✘ ${sum.status}`);
      const parts = [
        `${sum.turns} turn${sum.turns === 1 ? '' : 's'}`,
        `${formatTokens(u.totalTokens)} tokens (${formatTokens(u.input)} in, ${formatTokens(u.output)} out)`,
        ...(u.cacheRead || u.cacheWrite ? [`${formatTokens(u.cacheRead)} cached`] : []),
        formatCost(u.cost.total),
        ...(sum.durationMs !== undefined ? [formatDuration(sum.durationMs)] : []),
      ];
      this.line();
      this.line(`${mark} ${paint(s, 'dim', '·')} ${parts.join(paint(s, 'dim', ' · '))}`);
      if (sum.error) this.line(paint(s, 'red', `error: ${terminalSafe(sum.error)}`));
      this.line(`${paint(s, 'dim', 'Temporal UI:')} ${sum.url}`);
    } else {
      const d = sum.durationMs !== undefined ? ` duration=${(sum.durationMs / 1000).toFixed(1)}s` : '';
      this.line(
        `done status=${sum.status} turns=${sum.turns} tokens=${u.totalTokens} input=${u.input} output=${u.output} cost=${u.cost.total.toFixed(6)}${u.cacheRead || u.cacheWrite ? ` cache_read=${u.cacheRead} cache_write=${u.cacheWrite}` : ''}${d}`,
      );
      if (sum.error) this.line(`error ${terminalLine(sum.error, 1000)}`);
      this.line(`ui ${sum.url}`);
    }
  }
}

/** The transcript as Markdown (`keel transcript --format md`). */
export function transcriptMarkdown(messages: Message[], title?: string): string {
  const out: string[] = [];
  if (title) out.push(`# ${title}`, '');
  for (const m of messages) {
    if (m.role === 'user') {
      out.push('## User', '', contentText(m.content).trim() || '_(empty)_', '');
    } else if (m.role === 'assistant') {
      out.push(`## Assistant${m.model ? ` (${m.provider}/${m.model})` : ''}`, '');
      for (const b of m.content) {
        if (b.type === 'thinking')
          out.push(
            ...b.thinking
              .trim()
              .split('\n')
              .map((l) => `> ${l}`),
            '',
          );
        else if (b.type === 'text') out.push(b.text.trim(), '');
        else if (b.type === 'toolCall')
          out.push(
            `**Tool call** \`${b.name}\` (\`${b.id}\`)`,
            '',
            fence(JSON.stringify(b.arguments, null, 2), 'json'),
            '',
          );
      }
      if (m.stopReason === 'error') out.push(`**Error:** ${m.errorMessage ?? 'unknown error'}`, '');
      else if (m.stopReason === 'aborted') out.push('_(aborted)_', '');
      else if (m.stopReason === 'length') out.push('_(cut at the output token limit)_', '');
    } else {
      out.push(
        `### Tool result \`${m.toolName}\` (\`${m.toolCallId}\`)${m.isError ? ' — error' : ''}`,
        '',
        fence(contentText(m.content)),
        '',
      );
    }
  }
  return `${out
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd()}\n`;
}

function fence(text: string, lang = ''): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const f = '`'.repeat(longest + 1);
  return `${f}${lang}\n${text.replace(/\s+$/, '')}\n${f}`;
}

/** What the progress bar shows of the batch's `progress` query. */
export type BatchProgressView = Pick<
  BatchProgress,
  'total' | 'done' | 'failed' | 'running' | 'queued' | 'tokens' | 'cost' | 'budget'
>;

/** A batch budget's limits as `tokens 1200/2000, cost 0.01/0.5` (spent by finished tasks / limit; cost in US dollars). */
export function budgetProgressText(budget: NonNullable<BatchProgress['budget']>): string {
  // a batch since 0.6.0 also has what its tasks' requests in flight reserved (README "Budgets")
  const reserved = (i: number) => budget.tree?.[i]?.reserved ?? 0;
  return budget.lines
    .map((l, i) => `${l.kind} ${l.used}/${l.limit}${reserved(i) > 0 ? ` +${reserved(i)} reserved` : ''}`)
    .join(', ');
}

/** `[██████░░░░] 120/2,000  done 117 · failed 3 · running 8 · queued 1,872 · 12,345 tok · $0.1234 · 45/min`. */
export function progressLine(p: BatchProgressView, sink: Pick<Sink, 'color' | 'width'>, rate?: number): string {
  const finished = p.done + p.failed;
  const stats = [
    `${formatTokens(finished)}/${formatTokens(p.total)}`,
    `done ${formatTokens(p.done)}`,
    `failed ${formatTokens(p.failed)}`,
    `running ${formatTokens(p.running)}`,
    `queued ${formatTokens(p.queued)}`,
    `${formatTokens(p.tokens)} tok`,
    formatCost(p.cost),
    ...(p.budget ? [`budget ${budgetProgressText(p.budget)}${p.budget.spent ? ' (spent)' : ''}`] : []),
    ...(rate !== undefined ? [`${rate.toFixed(rate < 10 ? 1 : 0)}/min`] : []),
  ].join(' · ');
  const barWidth = Math.max(10, Math.min(40, sink.width - stats.length - 4));
  const filled = p.total ? Math.round((finished / p.total) * barWidth) : barWidth;
  const failedCells = p.total ? Math.min(filled, Math.round((p.failed / p.total) * barWidth)) : 0;
  const bar =
    paint(sink, 'green', '█'.repeat(filled - failedCells)) +
    paint(sink, 'red', '█'.repeat(failedCells)) +
    paint(sink, 'dim', '░'.repeat(barWidth - filled));
  return `[${bar}] ${stats}`;
}
