/** Where a fork cuts a transcript (client/fork/fork-point.ts): turns as Keel numbers them, given messages not counted. */
import { describe, expect, it } from 'vitest';
import { assistantCount, badTurn, forkPoint } from '../../client/fork/fork-point.js';
import { forkInput } from '../../client/fork/plan-fork.js';
import type { Message } from '../../common/messages.js';

const u = (text: string) => ({ role: 'user', content: text, timestamp: 0 }) as Message;
const a = (text: string) => ({ role: 'assistant', content: [{ type: 'text', text }] }) as unknown as Message;
const r = (id: string) =>
  ({ role: 'toolResult', toolCallId: id, toolName: 't', content: [], isError: false }) as unknown as Message;

describe('forkPoint', () => {
  // turn 1: prompt, a1, two results; turn 2: a steering message, a2, a result; turn 3: a3 (the answer)
  const t = [u('go'), a('a1'), r('1'), r('2'), u('steer'), a('a2'), r('3'), a('a3')];

  it('cuts after the results of turn N; without a prompt the messages that opened turn N + 1 come too', () => {
    expect(forkPoint(t, 0, 0)).toEqual({ end: 0, next: 1 });
    expect(forkPoint(t, 0, 1)).toEqual({ end: 4, next: 5 });
    expect(forkPoint(t, 0, 2)).toEqual({ end: 7, next: 7 });
    expect(forkPoint(t, 0, 3)).toEqual({ end: 8, next: 8 });
  });

  it("does not count the assistant messages the run was given (a fork's prefix)", () => {
    const given = [u('old'), a('old answer')];
    const forked = [...given, ...t];
    expect(assistantCount(given)).toBe(1);
    expect(forkPoint(forked, 1, 0)).toEqual({ end: 2, next: 3 });
    expect(forkPoint(forked, 1, 1)).toEqual({ end: 6, next: 7 });
  });

  it('refuses a turn the run has not completed, in words that say which turns it has', () => {
    expect(badTurn('r1', 2, 3)).toBeUndefined();
    expect(badTurn('r1', 4, 3)).toBe('turn 4: run r1 has completed 3 turns; give a turn from 0 to 3');
    expect(badTurn('r1', 2, 1)).toBe('turn 2: run r1 has completed 1 turn; give a turn from 0 to 1');
    expect(badTurn('r1', -1, 3)).toBe('turn -1: give a whole number from 0 to 3 (the turns run r1 has completed)');
  });
});

describe('forkInput', () => {
  const transcript = [u('go'), a('a1'), r('1'), u('steer'), a('a2')];
  const recorded = { config: { model: 'scripted/x', systemPrompt: 's', tools: ['t'] }, given: 0, transcript };

  it('keeps the configuration; without a prompt the messages up to the next model call, with one the turns and it', () => {
    // the fork keeps its original's prompt-cache key (`modelOptions.sessionId`, default the original's workflow id)
    const keyed = { ...recorded.config, modelOptions: { sessionId: 'r1' } };
    expect(forkInput('r1', recorded, { atTurn: 1 })).toEqual({ ...keyed, messages: transcript.slice(0, 4) });
    expect(forkInput('r1', recorded, { atTurn: 1, prompt: 'p', model: 'scripted/y', system: 'z' })).toEqual({
      model: 'scripted/y',
      systemPrompt: 'z',
      tools: ['t'],
      messages: transcript.slice(0, 3),
      prompt: 'p',
      modelOptions: { sessionId: 'r1' },
    });
    expect(forkInput('r1', recorded, { atTurn: 0, prompt: 'p' })).toEqual({ ...keyed, prompt: 'p' });
    // a fork of a fork keeps the first original's key
    const again = { ...recorded, config: { ...recorded.config, modelOptions: { sessionId: 'r0' } } };
    expect(forkInput('r1', again, { atTurn: 1 }).modelOptions).toEqual({ sessionId: 'r0' });
    // a rewind: the turns alone
    expect(forkInput('r1', recorded, { atTurn: 1 }, true).messages).toEqual(transcript.slice(0, 3));
    expect(forkInput('r1', recorded, { atTurn: 1 }, true).modelOptions).toBeUndefined();
  });

  it('refuses a task with nothing to do after its answer; a session waits there', () => {
    expect(() => forkInput('r1', recorded, { atTurn: 2 })).toThrow(
      "Cannot fork: turn 2 of run r1 ends with the model's answer and no turn follows it: give a prompt to go on from there",
    );
    const session = { ...recorded, config: { ...recorded.config, mode: 'session' as const } };
    expect(forkInput('r1', session, { atTurn: 2 }).messages).toEqual(transcript);
  });
});
