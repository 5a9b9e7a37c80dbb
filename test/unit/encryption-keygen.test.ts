/**
 * `keel encryption keygen` (issue 23 item 1): a new key file with mode 0600, a new primary added to one (rotation: the
 * old keys stay, so a payload sealed before still opens), refusals that say what to do, and no key material printed.
 */
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EncryptionCodec, readKeyRing } from '../../node-common/encryption.js';
import { keelCli } from '../temporal/cli-child.js';

const keyMaterial = (file: string) =>
  Object.values(JSON.parse(readFileSync(file, 'utf8')).keys as Record<string, string>);

describe('keel encryption keygen', () => {
  it('writes a 0600 key file, refuses to overwrite it, and rotates with --add-to keeping old payloads readable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-keygen-'));
    const file = join(dir, 'keys.json');
    expect(await keelCli(['encryption', 'keygen', '--id', 'k1', '--out', 'keys.json'], { cwd: dir })).toEqual({
      code: 0,
      stdout: `Wrote ${file} (primary key k1, mode 0600). Use it: export KEEL_ENCRYPTION_KEYS_FILE=${file}\n`,
      stderr: '',
    });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const first = readKeyRing(file);
    expect([first.primary, [...first.keys.keys()]]).toEqual(['k1', ['k1']]);
    const sealedBefore = new EncryptionCodec(first).seal({ metadata: {}, data: Buffer.from('before rotation') });

    expect(await keelCli(['encryption', 'keygen', '--out', 'keys.json'], { cwd: dir })).toEqual({
      code: 2,
      stdout: '',
      stderr: `keel: ${file} exists: to rotate, add a key with --add-to keys.json; else choose another --out\n`,
    });

    const rotated = await keelCli(['encryption', 'keygen', '--id', 'k2', '--add-to', 'keys.json'], { cwd: dir });
    expect(rotated).toEqual({
      code: 0,
      stdout:
        `Added key k2 to ${file} as primary (keys: k1, k2; mode 0600). ` +
        'Restart workers and clients with it; keep the old keys while runs sealed with them may be read.\n',
      stderr: '',
    });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const second = readKeyRing(file);
    expect([second.primary, [...second.keys.keys()]]).toEqual(['k2', ['k1', 'k2']]);
    expect(second.keys.get('k1')).toEqual(first.keys.get('k1'));
    const codec = new EncryptionCodec(second);
    expect(Buffer.from(codec.open(sealedBefore).data!).toString()).toBe('before rotation');
    expect(
      Buffer.from(codec.seal({ metadata: {}, data: Buffer.from('x') }).metadata!['encryption-key-id']!).toString(),
    ).toBe('k2');
    for (const key of keyMaterial(file)) expect(rotated.stdout + rotated.stderr).not.toContain(key);

    expect(await keelCli(['encryption', 'keygen', '--id', 'k2', '--add-to', 'keys.json'], { cwd: dir })).toEqual({
      code: 2,
      stdout: '',
      stderr: `keel: ${file} already has a key "k2": choose another --id\n`,
    });
    expect(await keelCli(['encryption', 'keygen', '--id', 'bad id', '--out', 'other.json'], { cwd: dir })).toEqual({
      code: 2,
      stdout: '',
      stderr: `keel: ${join(dir, 'other.json')}: key id "bad id" must be 1–64 of A–Z a–z 0–9 . _ : -\n`,
    });
  }, 60_000);

  it('keel codec-server without keys says how to give them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-codec-nokeys-'));
    const env = { ...process.env };
    delete env.KEEL_ENCRYPTION_KEYS;
    delete env.KEEL_ENCRYPTION_KEYS_FILE;
    expect(await keelCli(['codec-server'], { cwd: dir, env })).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'keel: no encryption keys: give --encryption-keys <file>, or set $KEEL_ENCRYPTION_KEYS_FILE (a file) or ' +
        '$KEEL_ENCRYPTION_KEYS (its JSON). Make a key file with `npx keel encryption keygen --out keel-keys.json`.\n',
    });
  });
});
