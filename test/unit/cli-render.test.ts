/** keel run / watch rendering (client/cli/render.ts): plain lines off a TTY, streamed text on one, the transcript as Markdown. */
import { describe, expect, it } from 'vitest';
import type { LoggedEvent } from '../../common/events.js';
import { emptyUsage, type AssistantMessage } from '../../common/messages.js';
import {
  headLines,
  terminalLine,
  progressLine,
  RunRenderer,
  stringSink,
  transcriptMarkdown,
} from '../../cli/render.js';
import { homeWorkerLost } from '../../common/errors.js';

const assistant = (
  content: AssistantMessage['content'],
  stopReason: AssistantMessage['stopReason'] = 'stop',
  errorMessage?: string,
): AssistantMessage => ({
  role: 'assistant',
  content,
  api: 'scripted',
  provider: 'scripted',
  model: 'demo',
  usage: emptyUsage(),
  stopReason,
  ...(errorMessage ? { errorMessage } : {}),
  timestamp: 0,
});

const events: LoggedEvent[] = [
  { seq: 1, type: 'agent_start' },
  { seq: 2, type: 'turn_start' },
  {
    seq: 3,
    type: 'message_start',
    message: { role: 'user', content: [{ type: 'text', text: 'list files' }], timestamp: 0 },
  },
  {
    seq: 4,
    type: 'message_end',
    message: assistant(
      [
        { type: 'text', text: 'Let me look.' },
        { type: 'toolCall', id: 'c1', name: 'ls', arguments: { path: '.' } },
      ],
      'toolUse',
    ),
  },
  { seq: 5, type: 'tool_execution_start', toolCallId: 'c1', toolName: 'ls', args: { path: '.' } },
  {
    seq: 6,
    type: 'tool_execution_end',
    toolCallId: 'c1',
    toolName: 'ls',
    isError: false,
    result: { content: [{ type: 'text', text: 'a.txt\nb.txt\nc.txt\nd.txt\ne.txt\nf.txt' }], details: {} },
  },
  { seq: 7, type: 'turn_start' },
  { seq: 8, type: 'message_end', message: assistant([{ type: 'text', text: 'Six files.' }]) },
  { seq: 9, type: 'agent_end', messages: [] },
];

describe('RunRenderer', () => {
  it('prints one plain line per event when stdout is not a TTY', () => {
    const sink = stringSink();
    const r = new RunRenderer(sink);
    r.header('wf-1', 'http://localhost:8233/namespaces/default/workflows/wf-1');
    for (const e of events) r.event(e);
    r.queue({ steering: 1, followUp: 0 });
    r.summary({
      workflowId: 'wf-1',
      status: 'completed',
      turns: 2,
      usage: { ...emptyUsage(), totalTokens: 30, input: 20, output: 10 },
      durationMs: 1500,
      url: 'http://ui/wf-1',
    });
    expect(sink.text().split('\n')).toEqual([
      'run wf-1',
      'ui http://localhost:8233/namespaces/default/workflows/wf-1',
      'turn 1',
      'user list files',
      'assistant Let me look.',
      'tool_call ls {"path":"."}',
      'tool_result ls ok a.txt ⏎ b.txt ⏎ c.txt ⏎ d.txt ⏎ e.txt ⏎ f.txt',
      'turn 2',
      'assistant Six files.',
      'queued steering=1 followUp=0',
      'done status=completed turns=2 tokens=30 input=20 output=10 cost=0.000000 duration=1.5s',
      'ui http://ui/wf-1',
      '',
    ]);
  });

  it('says when the run moved to a new home worker (worker affinity)', () => {
    const text = homeWorkerLost('read', 'keel:home:a:00000001', '30s', 'keel:home:b:00000002');
    const e: LoggedEvent = {
      seq: 1,
      type: 'worker_rehomed',
      toolCallId: 'r1',
      toolName: 'read',
      from: 'keel:home:a:00000001',
      to: 'keel:home:b:00000002',
      text,
    };
    const plain = stringSink();
    new RunRenderer(plain).event(e);
    expect(plain.text()).toBe(
      'rehomed Home worker lost: read was not started on task queue keel:home:a:00000001 within 30s; worker-local tools now run on task queue keel:home:b:00000002.\n',
    );
  });

  it('says when the run moved to a fallback model, and the cache use in the summary', () => {
    const plain = stringSink();
    const r = new RunRenderer(plain);
    r.event({
      seq: 1,
      type: 'model_fallback',
      turn: 1,
      from: 'anthropic/claude-sonnet-4-5',
      to: 'openai/gpt-5',
      errorType: 'ModelError.Server',
      error: '529 Overloaded',
    });
    r.summary({
      workflowId: 'wf-1',
      status: 'completed',
      turns: 1,
      usage: { ...emptyUsage(), totalTokens: 1055, input: 100, output: 5, cacheRead: 900, cacheWrite: 50 },
      url: 'u',
    });
    expect(plain.text().split('\n')).toEqual([
      'model_fallback anthropic/claude-sonnet-4-5 → openai/gpt-5 (ModelError.Server: 529 Overloaded)',
      'done status=completed turns=1 tokens=1055 input=100 output=5 cost=0.000000 cache_read=900 cache_write=50',
      'ui u',
      '',
    ]);
  });

  it('streams partial text on a TTY and finishes it from message_end, truncating tool output', () => {
    const sink = stringSink({ tty: true, width: 80 });
    const r = new RunRenderer(sink);
    r.event(events[1]);
    const d = (delta: string) => r.delta({ type: 'message_update', messageIndex: 2, block: 0, kind: 'text', delta });
    d('Six');
    d(' fi');
    r.event(events[7]);
    r.event(events[5]);
    expect(sink.text()).toBe(
      [
        '── turn 1 ──',
        'assistant › Six files.',
        '← ls ✓ a.txt',
        '    b.txt',
        '    c.txt',
        '    d.txt',
        '    (+2 more lines)',
        '',
      ].join('\n'),
    );
  });

  it('says so when a retried model call restarts its reply, and shows model errors', () => {
    const sink = stringSink({ tty: true });
    const r = new RunRenderer(sink);
    r.delta({ type: 'message_update', messageIndex: 1, block: 0, kind: 'text', delta: 'Hello wor' });
    r.delta({ type: 'attempt_reset', messageIndex: 1, attempt: 2 });
    r.delta({ type: 'message_update', messageIndex: 1, block: 0, kind: 'text', delta: 'Hel' });
    r.event({
      seq: 1,
      type: 'message_end',
      message: assistant([{ type: 'text', text: 'Hello' }], 'error', 'rate limited'),
    });
    expect(sink.text()).toBe(
      'assistant › Hello wor\n(model call retried: the reply restarts)\nassistant › Hello\nmodel error: rate limited\n',
    );
  });

  it('streams the live stream deltas as they arrive: text blocks only, a retried attempt restarts the reply', () => {
    const sink = stringSink({ tty: true });
    const r = new RunRenderer(sink);
    const d = (block: number, kind: 'text' | 'thinking', delta: string, replace?: true) =>
      r.delta({ type: 'message_update', messageIndex: 1, block, kind, delta, ...(replace ? { replace } : {}) });
    d(0, 'thinking', 'hmm');
    d(1, 'text', 'Hel');
    d(1, 'text', 'lo wor');
    r.delta({ type: 'attempt_reset', messageIndex: 1, attempt: 2 });
    d(0, 'text', 'Hi');
    d(0, 'text', ' there', true); // a replacing delta that does not go on from what is shown
    d(0, 'text', ' there, you', true); // … and one that does (a tail): only the new part
    r.event({ seq: 9, type: 'message_end', message: assistant([{ type: 'text', text: ' there, you' }]) });
    r.delta({ type: 'message_update', messageIndex: 3, block: 0, kind: 'text', delta: 'Next' });
    expect(sink.text()).toBe(
      [
        'assistant › Hello wor',
        '(model call retried: the reply restarts)',
        'assistant › Hi',
        '(the reply restarts)',
        'assistant ›  there, you',
        'assistant › Next',
      ].join('\n'),
    );
  });

  it('shows tool progress once per update on a TTY', () => {
    const sink = stringSink({ tty: true });
    const r = new RunRenderer(sink);
    const h = {
      kind: 'tool' as const,
      toolCallId: 'c1',
      toolName: 'bash',
      args: {},
      partialResult: { content: [{ type: 'text', text: 'line 1\nline 2\n' }] },
      updates: 2,
    };
    r.tool(h);
    r.tool(h);
    expect(sink.text()).toBe('  ⋯ bash: line 2\n');
  });
});

describe('RunRenderer: pending approvals', () => {
  it('announces each pending approval once, with the commands that decide it', () => {
    const sink = stringSink();
    const r = new RunRenderer(sink);
    const pending = {
      toolCallId: 'tool-1',
      toolName: 'bash',
      args: { command: 'rm -rf build' },
      argsDigest: 'ab12',
      requestedAt: 0,
    };
    r.approvals('run-7', [pending]);
    r.approvals('run-7', [pending]);
    expect(sink.text()).toBe(
      'approval_needed tool-1 bash {"command":"rm -rf build"}\n  keel approve run-7 tool-1 --digest ab12  |  keel deny run-7 tool-1 --digest ab12 --reason …\n',
    );
    const tty = stringSink({ tty: true });
    new RunRenderer(tty).approvals('run-7', [pending]);
    expect(tty.text()).toBe(
      '⚠ APPROVAL NEEDED: bash {"command":"rm -rf build"}\n  keel approve run-7 tool-1 --digest ab12  |  keel deny run-7 tool-1 --digest ab12 --reason …\n',
    );
  });

  it('shows the whole arguments on a narrow terminal, escapes control characters, and names the digest to approve (issue 33 item 11)', () => {
    const command = `rm -rf build && ${'x'.repeat(200)} \u001b[2J\u001b]0;pwned\u0007\u009b1A`;
    const tty = stringSink({ tty: true, width: 40 });
    new RunRenderer(tty).approvals('run-7', [
      { toolCallId: 'tool-1', toolName: 'bash', args: { command }, argsDigest: 'd'.repeat(64), requestedAt: 0 },
    ]);
    const shown = JSON.stringify({ command }).replace('\u009b', '\\x9b');
    expect(tty.text()).toBe(
      `⚠ APPROVAL NEEDED: bash ${shown}\n  keel approve run-7 tool-1 --digest ${'d'.repeat(64)}  |  keel deny run-7 tool-1 --digest ${'d'.repeat(64)} --reason …\n`,
    );
  });
});

describe('RunRenderer: model and tool text reach the terminal inert (issue 33 item 11)', () => {
  const evil = 'ok\u001b[2J\u001b[H\u001b]8;;http://x\u0007link\u009b31m\r\u0000end';
  const inert = 'ok\\x1b[2J\\x1b[H\\x1b]8;;http://x\\x07link\\x9b31m\\x0d\\x00end';
  const ev = (e: Record<string, unknown>) => e as unknown as LoggedEvent;
  const assistant = {
    role: 'assistant',
    content: [{ type: 'text', text: evil }],
    stopReason: 'stop',
  } as unknown as AssistantMessage;

  it('assistant text, tool results, tool arguments and errors: no control character is written, each is escaped', () => {
    for (const tty of [true, false]) {
      const sink = stringSink({ tty });
      const r = new RunRenderer(sink);
      r.event(ev({ type: 'message_end', message: assistant }));
      r.event(ev({ type: 'tool_execution_start', toolCallId: 't', toolName: 'bash', args: { c: '\u009b2J' } }));
      r.event(
        ev({
          type: 'tool_execution_end',
          toolCallId: 't',
          toolName: 'bash',
          isError: false,
          result: { content: [{ type: 'text', text: evil }] },
        }),
      );
      r.summary({ workflowId: 'w', status: 'failed', turns: 1, usage: emptyUsage(), error: evil, url: 'u' });
      const out = sink.text();
      expect(out.match(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g)).toBeNull();
      expect(out.split(inert).length - 1).toBe(3);
    }
  });

  it('streamed text (live-stream deltas) is escaped as it streams', () => {
    const sink = stringSink({ tty: true });
    const r = new RunRenderer(sink);
    r.delta({ type: 'message_update', messageIndex: 1, block: 0, kind: 'text', delta: evil.slice(0, 5) });
    r.delta({ type: 'message_update', messageIndex: 1, block: 0, kind: 'text', delta: evil.slice(5) });
    r.event(ev({ type: 'message_end', message: assistant }));
    expect(sink.text()).toBe(`assistant › ${inert}\n`);
  });
});

describe('helpers', () => {
  it('terminalLine and headLines cut for the terminal', () => {
    expect(terminalLine('a\nb   c', 100)).toBe('a ⏎ b c');
    expect(terminalLine('x'.repeat(20), 10)).toBe(`${'x'.repeat(9)}…`);
    expect(headLines('1\n2\n3\n', 2, 10)).toEqual(['1', '2', '(+1 more lines)']);
  });

  it('renders the transcript as Markdown', () => {
    const md = transcriptMarkdown(
      [
        { role: 'user', content: 'hi', timestamp: 0 },
        assistant(
          [
            { type: 'thinking', thinking: 'hmm' },
            { type: 'text', text: 'Reading.' },
            { type: 'toolCall', id: 'c1', name: 'read', arguments: { path: 'a' } },
          ],
          'toolUse',
        ),
        {
          role: 'toolResult',
          toolCallId: 'c1',
          toolName: 'read',
          content: [{ type: 'text', text: 'has ``` fence' }],
          isError: true,
          timestamp: 0,
        },
      ],
      'Run x',
    );
    expect(md).toBe(
      [
        '# Run x',
        '',
        '## User',
        '',
        'hi',
        '',
        '## Assistant (scripted/demo)',
        '',
        '> hmm',
        '',
        'Reading.',
        '',
        '**Tool call** `read` (`c1`)',
        '',
        '```json',
        '{',
        '  "path": "a"',
        '}',
        '```',
        '',
        '### Tool result `read` (`c1`) — error',
        '',
        '````',
        'has ``` fence',
        '````',
        '',
      ].join('\n'),
    );
  });

  it('draws a progress bar', () => {
    const line = progressLine(
      { total: 10, done: 4, failed: 1, running: 2, queued: 3, tokens: 1234, cost: 0.5 },
      { color: false, width: 120 },
      30,
    );
    const m = /^\[(█+)(░+)\] (.*)$/.exec(line)!;
    expect(m[1].length).toBe(m[2].length); // half finished
    expect(m[3]).toBe('5/10 · done 4 · failed 1 · running 2 · queued 3 · 1,234 tok · $0.5000 · 30/min');
  });

  it('a batch budget shows spent/limit per limit, and (spent) once the pool is spent', () => {
    const p = { total: 10, done: 4, failed: 1, running: 2, queued: 3, tokens: 1234, cost: 0.5 };
    const lines = [
      { kind: 'tokens' as const, used: 1234, limit: 5000 },
      { kind: 'cost' as const, used: 0.5, limit: 2 },
    ];
    const stats = (budget: typeof p & { budget: { lines: typeof lines; spent: boolean } }) =>
      progressLine(budget, { color: false, width: 200 }).replace(/^\[[█░]+\] /, '');
    expect(stats({ ...p, budget: { lines, spent: false } })).toBe(
      '5/10 · done 4 · failed 1 · running 2 · queued 3 · 1,234 tok · $0.5000 · budget tokens 1234/5000, cost 0.5/2',
    );
    expect(stats({ ...p, budget: { lines: lines.slice(0, 1), spent: true } })).toBe(
      '5/10 · done 4 · failed 1 · running 2 · queued 3 · 1,234 tok · $0.5000 · budget tokens 1234/5000 (spent)',
    );
    // a batch since 0.6.0: what the running tasks' requests reserved
    const tree = [
      { kind: 'tokens' as const, spent: 1234, reserved: 900, limit: 5000 },
      { kind: 'cost' as const, spent: 0.5, reserved: 0, limit: 2 },
    ];
    expect(progressLine({ ...p, budget: { lines, spent: false, tree } }, { color: false, width: 200 })).toMatch(
      / · budget tokens 1234\/5000 \+900 reserved, cost 0\.5\/2$/,
    );
  });
});
