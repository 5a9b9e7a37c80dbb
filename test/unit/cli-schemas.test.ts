/** schemas/*.json are generated from the code (scripts/gen-schemas.ts): this fails when a file drifts from it. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { AGENT_RUN_INPUT_SCHEMA } from '../../common/run.js';
import { agentRunInputErrors } from '../../common/validate-input.js';
import { driftedSchemas, schemaFiles, SCHEMAS_DIR } from '../../scripts/gen-schemas.js';

const load = (name: string) => JSON.parse(readFileSync(join(SCHEMAS_DIR, name), 'utf8')) as Record<string, unknown>;

describe('published JSON Schemas', () => {
  it('schemas/ matches the code (run `npm run gen-schemas` after changing a schema)', () => {
    expect(driftedSchemas()).toEqual([]);
    for (const f of schemaFiles()) expect(readFileSync(join(SCHEMAS_DIR, f.name), 'utf8'), f.name).toBe(f.content);
  });

  it('agent-run-input.json is AGENT_RUN_INPUT_SCHEMA', () => {
    const { $schema, ...rest } = load('agent-run-input.json');
    expect($schema).toBe('http://json-schema.org/draft-07/schema#');
    expect(rest).toEqual(JSON.parse(JSON.stringify(AGENT_RUN_INPUT_SCHEMA)));
  });

  it('the drift check notices a changed file', () => {
    const dir = join(SCHEMAS_DIR, '..', 'node_modules', '.keel-schema-drift-test-missing');
    expect(driftedSchemas(dir).sort()).toEqual(
      schemaFiles()
        .map((f) => f.name)
        .sort(),
    );
  });

  it('the published input schema accepts and rejects what the worker does', () => {
    const ajv = new Ajv({ allErrors: true, strict: false });
    const validate = ajv.compile(load('agent-run-input.json'));
    const good = [
      { model: 'scripted/x', prompt: 'hi' },
      {
        model: 'anthropic/claude-sonnet-4-5',
        prompt: [{ role: 'user', content: 'hi' }],
        tools: ['read'],
        mode: 'session',
      },
    ];
    const bad = [{ model: 'gpt' }, { model: 'a/b', maxTurns: 0 }, { model: 'a/b', bogus: 1 }, { prompt: 'no model' }];
    for (const g of good) expect([validate(g), agentRunInputErrors(g)]).toEqual([true, []]);
    for (const b of bad) {
      expect(validate(b)).toBe(false);
      expect(agentRunInputErrors(b).length).toBeGreaterThan(0);
    }
  });

  it('the result and batch schemas compile and accept a typical value', () => {
    const ajv = new Ajv({ allErrors: true, strict: false });
    ajv.addSchema(load('agent-run-input.json'));
    const result = ajv.compile(load('agent-run-result.json'));
    const usage = {
      input: 1,
      output: 2,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 3,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    };
    const ok = {
      status: 'completed',
      finalText: 'done',
      turns: 1,
      usage,
      newMessages: [
        { role: 'user', content: [{ type: 'text', text: 'hi' }], timestamp: 1 },
        {
          role: 'assistant',
          content: [{ type: 'text', text: 'done' }],
          stopReason: 'stop',
          api: 'x',
          provider: 'p',
          model: 'm',
          usage,
          timestamp: 2,
        },
      ],
    };
    expect(result(ok), JSON.stringify(result.errors)).toBe(true);
    expect(result({ ...ok, status: 'weird' })).toBe(false);
    expect(result({ ...ok, extra: 1 })).toBe(false);
    const batch = ajv.compile(load('agent-batch-input.json'));
    expect(batch({ tasks: [{ model: 'scripted/x', prompt: 'a' }], concurrency: 4 }), JSON.stringify(batch.errors)).toBe(
      true,
    );
    expect(batch({ tasks: { pages: [{ workflowId: 'b-page-0', count: 10 }] } })).toBe(true);
    expect(batch({ tasks: [{ model: 'nope' }] })).toBe(false);
  });
});
