/**
 * The failure converter of an encrypting worker (README "Encryption"): Temporal's default one with
 * `encodeCommonAttributes`, so a failure's message and stack trace travel in its `encodedAttributes` payload, which
 * the payload codecs seal like any other payload; history shows `Encoded failure` in their place. Any reader decodes
 * it with the key ring (every SDK's default failure converter reads `encodedAttributes`). Loaded by path
 * (`failureConverterPath`): in the workflow bundle and in the worker's main thread. Kept to erasable TypeScript with
 * one package import, so Node loads the source file as it is.
 */
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
