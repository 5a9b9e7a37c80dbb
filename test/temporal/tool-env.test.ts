/**
 * Tool processes run without the worker's secrets (issue 10 item 4): a model that runs `echo $ANTHROPIC_API_KEY` through
 * `bash` gets nothing back, and the key appears neither in the result, nor the transcript, nor any payload of the
 * fetched history; a variable named in `builtinTools({ env: { pass } })` does get through.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTools } from '../../activities/tools/builtin/index.js';
import { startKeel, strip, type Keel } from './harness.js';

const SECRETS: Record<string, string> = {
  ANTHROPIC_API_KEY: 'sk-ant-keel-test-0123456789abcdef',
  KEEL_ANTHROPIC_API_KEY: 'sk-ant-keel-test-keel-prefixed-42',
  // any TEMPORAL_* variable (not a connection setting: the worker itself must still connect in plaintext)
  TEMPORAL_KEEL_TEST_OPAQUE: 'temporal-test-cert-data-9876',
  DB_PASSWORD: 'db-password-test-31415',
  MY_SERVICE_SECRET: 'service-secret-test-27182',
};
const PASSED = { GITHUB_TOKEN: 'ghp-passed-through-test-161803' };
const COMMAND =
  'echo "a=$ANTHROPIC_API_KEY k=$KEEL_ANTHROPIC_API_KEY t=$TEMPORAL_KEEL_TEST_OPAQUE d=$DB_PASSWORD s=$MY_SERVICE_SECRET g=$GITHUB_TOKEN p=${PATH:+set}"';

/** Every string in the history, payload bytes decoded as UTF-8. */
function textOf(value: unknown, out: string[] = []): string[] {
  if (value instanceof Uint8Array) out.push(Buffer.from(value).toString('utf8'));
  else if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) textOf(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) textOf(v, out);
  return out;
}

describe('tool processes get a scrubbed environment', () => {
  let keel: Keel;
  let ws: string;
  const saved: Record<string, string | undefined> = {};

  beforeAll(async () => {
    for (const [k, v] of Object.entries({ ...SECRETS, ...PASSED })) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    ws = realpathSync(mkdtempSync(join(tmpdir(), 'keel-env-')));
    keel = await startKeel({
      scripts: {
        leak: {
          rules: [
            { match: 'toolResult:bash', text: 'done' },
            { match: 'show me', toolCalls: [{ id: 'b1', name: 'bash', arguments: { command: COMMAND } }] },
          ],
        },
      },
      tools: builtinTools({ cwd: ws, env: { pass: ['GITHUB_TOKEN'] } }),
    });
  });
  afterAll(async () => {
    await keel?.stop();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(ws, { recursive: true, force: true });
  });

  it('`echo $ANTHROPIC_API_KEY` (and KEEL_*, TEMPORAL_*, *_PASSWORD, *_SECRET) prints nothing; a passed GITHUB_TOKEN prints; no secret in result, transcript or history', async () => {
    const h = await keel.start({ model: 'scripted/leak', prompt: 'show me the env', tools: ['bash'] });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(strip(r.newMessages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'show me the env' }] },
      {
        role: 'assistant',
        content: [{ type: 'toolCall', id: 'b1', name: 'bash', arguments: { command: COMMAND } }],
        stopReason: 'toolUse',
      },
      {
        role: 'toolResult',
        toolCallId: 'b1',
        toolName: 'bash',
        content: [{ type: 'text', text: `a= k= t= d= s= g=${PASSED.GITHUB_TOKEN} p=set\n` }],
        isError: false,
      },
      { role: 'assistant', content: [{ type: 'text', text: 'done' }], stopReason: 'stop' },
    ]);
    const everything = [
      JSON.stringify(r),
      JSON.stringify(await h.allMessages()),
      ...textOf(await h.workflow.fetchHistory()),
    ].join('\n');
    expect(everything).toContain(PASSED.GITHUB_TOKEN); // the decoding works: the passed value is found
    for (const secret of Object.values(SECRETS)) expect(everything).not.toContain(secret);
  });
});
