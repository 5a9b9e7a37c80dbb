/**
 * The worker's `keelStream` sink (common/stream-relay.ts): the durable events, model calls and closes its workflows relay go
 * to its fleet stream store, awaited before the workflow task completes (so a model call's entry is in the store before
 * its first delta batch can be); without a store, or while it is away, they go nowhere and the run does not notice.
 */
import type { InjectedSinks } from '@temporalio/worker';
import type { StreamRelaySinks } from '../common/stream-relay.js';
import type { FleetStreamStore } from '../node-common/fleet-stream/store.js';

/** The sinks to register on a worker whose fleet stream store is `fleet` (none: they do nothing). */
export function streamRelaySinks(fleet: FleetStreamStore | undefined): InjectedSinks<StreamRelaySinks> {
  return {
    keelStream: {
      event: { fn: (info, e) => fleet?.relayEvent(info.workflowId, info.runId, e) },
      call: { fn: (info, c) => fleet?.relayCall(info.workflowId, info.runId, c) },
      close: { fn: (info, c) => fleet?.relayClose(info.workflowId, info.runId, c) },
    },
  };
}
