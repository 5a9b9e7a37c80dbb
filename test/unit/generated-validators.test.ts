/**
 * Issue 22 item 2: each message is defined once (common/message-schemas.ts) and compiled once, by `npm run
 * gen-schemas`, into plain validation functions (common/*.generated.ts). The committed modules are what the generator
 * produces; the workflow's module imports nothing (it runs in the sandbox).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { driftedValidators, validatorFiles } from '../../scripts/gen-schemas.js';

const ROOT = join(import.meta.dirname, '..', '..');

describe('generated validators (scripts/gen-schemas.ts)', () => {
  it('the committed modules match what `npm run gen-schemas` generates', () => {
    expect(driftedValidators()).toEqual([]);
    for (const f of validatorFiles()) expect(readFileSync(join(ROOT, f.path), 'utf8'), f.path).toBe(f.content);
  });

  it('the drift check notices a missing module', () => {
    expect(driftedValidators(join(ROOT, 'node_modules', '.keel-validators-drift-test-missing'))).toEqual(
      validatorFiles().map((f) => f.path),
    );
  });

  it('the messages module, which workflow code imports, imports nothing at run time', () => {
    const messages = validatorFiles().find((f) => f.path === 'common/message-validators.generated.ts')!;
    const imports = messages.content.split('\n').filter((l) => /^import |require\(/.test(l));
    expect(imports).toEqual(["import type { Validator } from './validate-errors.js';"]);
  });
});
