import type { AgentEvent, EventsPage, LoggedEvent } from '../../common/events.js';

/**
 * Bounded, in-memory log of the deterministic agent events, read through the `events` query. Events hold references
 * to transcript messages (no copies). After continue-as-new the numbering goes on; older events are gone.
 */
export class EventLog {
  private events: LoggedEvent[] = [];
  constructor(
    private lastSeq: number,
    private readonly capacity = 2000,
    /** Called with each event logged (the stream relay, workflows/agent/stream-relay.ts). */
    private readonly onEmit?: (event: LoggedEvent) => void,
  ) {}

  emit(event: AgentEvent): void {
    this.lastSeq += 1;
    const logged = { ...event, seq: this.lastSeq } as LoggedEvent;
    this.events.push(logged);
    this.onEmit?.(logged);
    if (this.events.length > this.capacity) this.events.splice(0, this.events.length - this.capacity);
  }

  get seq(): number {
    return this.lastSeq;
  }

  page(after = 0, limit = 500): EventsPage {
    const start = this.events.findIndex((e) => e.seq > after);
    const events = start < 0 ? [] : this.events.slice(start, start + Math.max(1, limit));
    return {
      events,
      lastSeq: events.length ? events[events.length - 1].seq : Math.max(after, 0),
      firstSeq: this.events[0]?.seq ?? this.lastSeq + 1,
    };
  }
}
