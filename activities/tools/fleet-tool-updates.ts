/**
 * A tool call's progress on the fleet stream transport (docs/live-output.md#fleet-transport): beside the heartbeat
 * (the default transport and the fallback), each update is appended to the run's Redis stream, so a reader blocking on
 * the store sees it without asking Temporal. Appends go one at a time; updates that come while one is in flight are
 * coalesced into the latest (a reader shows only a tool's latest update, as the heartbeat path does).
 */
import type { ToolHeartbeat } from '../../common/events.js';
import type { FleetStreamStore } from '../../node-common/fleet-stream/store.js';

export class ToolUpdateAppender {
  /** The update waiting for the append in flight to finish, and whether one is in flight. */
  private pending: ToolHeartbeat | undefined;
  private busy = false;

  constructor(
    private readonly store: FleetStreamStore,
    private readonly workflowId: string,
    private readonly runId: string,
  ) {}

  /** Appends `t` now, or after the append in flight (replacing any update waiting); never throws. */
  update(t: ToolHeartbeat): void {
    this.pending = t;
    if (!this.busy) void this.drain();
  }

  private async drain(): Promise<void> {
    this.busy = true;
    for (let t = this.pending; t; t = this.pending) {
      this.pending = undefined;
      await this.store.appendTool(this.workflowId, this.runId, t);
    }
    this.busy = false;
  }
}
