// The fleet stream transport's store entries and configuration (node-common/fleet-stream/): a batch read back as it
// was written, sealed on an encrypting worker (no clear text in the store; another key ring cannot open it), the
// option before the environment, and a URL's password never in what Keel prints.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DeltaItem } from '../../common/stream.js';
import { EncryptionCodec, parseKeyRing } from '../../node-common/encryption.js';
import { redactedUrl, resolveFleetStream } from '../../node-common/fleet-stream/config.js';
import {
  batchEnd,
  batchFields,
  openBatch,
  parseStored,
  type DeltaBatch,
} from '../../node-common/fleet-stream/entries.js';

const ring = () =>
  parseKeyRing(JSON.stringify({ primary: 'k1', keys: { k1: randomBytes(32).toString('base64') } }), 'test');
const items: DeltaItem[] = [
  { t: 'reset', attempt: 2 },
  { t: 'delta', b: 0, k: 'text', d: 'the secret reply' },
];
const batch: DeltaBatch = { runId: 'run-1', messageIndex: 3, attempt: 2, first: 7, items, end: true };

describe('fleet stream entries', () => {
  it('a batch is read back as written; its header says where it ends without opening it', async () => {
    const stored = parseStored(await batchFields(batch, []))!;
    expect(batchEnd(stored)).toBe(8);
    expect(await openBatch(stored, [])).toEqual(batch);
    expect(parseStored(['x', 'y'])).toBeUndefined();
  });

  it('on an encrypting worker the items are sealed: no clear text in the store, opened only with the key ring', async () => {
    const codec = new EncryptionCodec(ring());
    const fields = await batchFields(batch, [codec]);
    expect(fields.join(' ')).not.toContain('secret');
    const stored = parseStored(fields)!;
    expect(await openBatch(stored, [codec])).toEqual(batch);
    expect(await openBatch(stored, [])).toBeUndefined();
    expect(await openBatch(stored, [new EncryptionCodec(ring())])).toBeUndefined();
  });
});

describe('fleet stream configuration', () => {
  it('the option, else $KEEL_STREAM_REDIS_URL, else none; false: none', () => {
    const env = { KEEL_STREAM_REDIS_URL: 'redis://env:6379' };
    expect(resolveFleetStream({ redis: 'redis://opt:6379' }, env)).toEqual({ redis: 'redis://opt:6379' });
    expect(resolveFleetStream(undefined, env)).toEqual({ redis: 'redis://env:6379' });
    expect(resolveFleetStream(false, env)).toBeUndefined();
    expect(resolveFleetStream(undefined, {})).toBeUndefined();
  });

  it('a URL as Keel would print it hides the user and password', () => {
    expect(redactedUrl('redis://default:s3cret@cache.internal:6380/2')).toBe('redis://***@cache.internal:6380/2');
    expect(redactedUrl('redis://cache.internal:6379')).toBe('redis://cache.internal:6379');
    expect(redactedUrl('not a url')).toBe('(an unparsable URL)');
  });
});
