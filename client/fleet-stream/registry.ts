/**
 * Which stream transport the run handles of a Temporal workflow client read through: the fleet transport an `AgentClient` was
 * connected with (`ConnectOptions.stream`), else the one `$KEEL_STREAM_REDIS_URL` names, else the heartbeats.
 */
import type { WorkflowClient } from '@temporalio/client';
import { resolveFleetStream, type FleetStreamOption } from '../../node-common/fleet-stream/config.js';

const configured = new WeakMap<WorkflowClient, FleetStreamOption | false>();

/** Records what `client`'s handles read through (`false`: the heartbeats, whatever the environment says). */
export function setFleetStream(client: WorkflowClient, option: FleetStreamOption | false | undefined): void {
  const resolved = resolveFleetStream(option);
  configured.set(client, resolved ?? false);
}

/** The fleet transport of `client`'s handles, if any. */
export function fleetStreamOf(client: WorkflowClient): FleetStreamOption | undefined {
  const set = configured.get(client);
  return set === undefined ? resolveFleetStream(undefined) : set || undefined;
}
