import { describe, expect, it } from 'vitest';
import { isWithheldEnvName, toolEnvironment } from '../../../activities/tools/builtin/tool-env.js';

describe('toolEnvironment', () => {
  it('copies only PATH, HOME, LANG, TERM, TZ and the passed names: credentials and every other variable stay out', () => {
    const source = {
      PATH: '/usr/bin',
      HOME: '/home/u',
      LANG: 'C.UTF-8',
      ANTHROPIC_API_KEY: 'a',
      OPENAI_API_KEY: 'o',
      AWS_ACCESS_KEY_ID: 'id',
      AWS_SECRET_ACCESS_KEY: 's',
      AWS_PROFILE: 'p',
      GOOGLE_APPLICATION_CREDENTIALS: '/creds.json',
      ANTHROPIC_ORGANIZATION_ID: 'org',
      KEEL_OLLAMA_BASE_URL: 'http://x',
      TEMPORAL_ADDRESS: 'h:7233',
      GITHUB_TOKEN: 'g',
      NPM_TOKEN: 'n',
      db_password: 'lower',
      CLIENT_SECRET: 'c',
      TOKENIZER: 'kept: not a suffix',
      KEYBOARD: 'kept',
    };
    expect(toolEnvironment({ pass: ['GITHUB_TOKEN'] }, source)).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/u',
      LANG: 'C.UTF-8',
      GITHUB_TOKEN: 'g',
    });
    expect(toolEnvironment({}, { ...source, TERM: 'xterm', TZ: 'UTC', PGPASSWORD: 'x', DATABASE_URL: 'y' })).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/u',
      LANG: 'C.UTF-8',
      TERM: 'xterm',
      TZ: 'UTC',
    });
    expect(isWithheldEnvName('HF_TOKEN')).toBe(true);
    expect(isWithheldEnvName('EDITOR')).toBe(false);
  });
});
