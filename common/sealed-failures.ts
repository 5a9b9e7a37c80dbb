/**
 * The failure converter of an encrypting worker (README "Encryption"): Temporal's default one with
 * `encodeCommonAttributes`, so a failure's message and stack trace travel in its `encodedAttributes` payload, which
 * the payload codecs seal like any other payload; history shows `Encoded failure` in their place. Any reader decodes
 * it with the key ring (every SDK's default failure converter reads `encodedAttributes`). Loaded by path
 * (`failureConverterPath`): in the workflow bundle and in the worker's main thread. Kept to erasable TypeScript with
 * one package import, so Node loads the source file as it is.
 *
 * One exception (issue 33 item 20): the failure of a payload this worker cannot open (`DecryptionError`: a key id not
 * in its key ring, a payload that does not authenticate; `NoKeyRingError`) stays in clear. Sealed with this worker's
 * key, the run's owner — whose ring this worker lacks — could not read why its workflow task fails; in clear it reads
 * `payload encrypted with key "k1", which is not in this key ring (k9): add that key …`: key ids and what to do, no
 * payload content and no key material.
 */
import { DefaultFailureConverter, type PayloadConverter, type ProtoFailure } from '@temporalio/common';

const UNOPENABLE = new Set(['DecryptionError', 'NoKeyRingError']);

/** Whether `err`, or an error in its `cause` chain, is a payload this worker could not open. */
function cannotOpen(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 10; depth++) {
    if (UNOPENABLE.has((e as { name?: string }).name ?? '')) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

const clear = new DefaultFailureConverter({ encodeCommonAttributes: false });

class SealedFailureConverter extends DefaultFailureConverter {
  override errorToFailure(err: unknown, payloadConverter: PayloadConverter): ProtoFailure {
    return cannotOpen(err) ? clear.errorToFailure(err, payloadConverter) : super.errorToFailure(err, payloadConverter);
  }
}

export const failureConverter = new SealedFailureConverter({ encodeCommonAttributes: true });
