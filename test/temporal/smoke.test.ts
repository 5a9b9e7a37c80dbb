import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allEvents, notation, startKeel, strip, type Keel } from './harness.js';

describe('smoke', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts: { hi: { rules: [{ text: 'Hi there!' }] } } });
  });
  afterAll(() => keel?.stop());

  it('runs one turn', async () => {
    const h = await keel.start({ model: 'scripted/hi', prompt: 'Hello' });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(strip(r.newMessages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Hello' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Hi there!' }], stopReason: 'stop' },
    ]);
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:Hello)',
      'ME(u:Hello)',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
  });
});
