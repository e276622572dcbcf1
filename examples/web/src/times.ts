// Times the page shows that the TypeScript client's turn clocks (src/clock.ts, a copy
// of examples/clients/node/src/clock.ts kept identical by .ci/web) do not: how long a
// seat has been gone (a Watch stream's Presence, read as Countdown reads a view's
// clock), and a time as a clock shows it. The server's times are never compared with
// this device's wall clock, only with the message's now_ms, and counted on
// performance.now() from when the message arrived.
import type { Presence } from "./gen/allfives/v1/allfives_pb.js";
import { monotonicMs } from "./clock.js";

/**
 * A Watch stream's Presence read against this device's monotonic clock, as Countdown
 * reads a view's clock: a seat with no device watching has been gone for
 * now_ms - gone_since_ms (both the server's) when the message arrived, and counts up
 * on monotonicMs() from then. Advice only: the turn clock decides.
 */
export class PresenceClock {
  constructor(
    readonly presence: Presence,
    /** monotonicMs() when the message arrived. */
    readonly receivedAt: number,
  ) {}

  /** Milliseconds `seat` has had no device watching at `now`; undefined while one
   * watches, and for a seat none has watched yet. */
  goneForMs(seat: number, now: number = monotonicMs()): number | undefined {
    const p = this.presence.seats.find((s) => s.seat === seat);
    if (!p || p.watching || p.goneSinceMs === undefined) return undefined;
    return Math.max(0, Number(this.presence.nowMs - p.goneSinceMs) + (now - this.receivedAt));
  }

  /** Whether a device of `seat` is watching the match. */
  watching(seat: number): boolean {
    return this.presence.seats.some((s) => s.seat === seat && s.watching);
  }
}

/** A time left as a clock shows it: "0:27", "4:05", "1:02:03" (seconds rounded up,
 * so a countdown reads 0:00 only once the time is out). */
export function clockText(ms: number): string {
  const total = Math.ceil(Math.max(0, ms) / 1000);
  const s = total % 60;
  const m = Math.floor(total / 60) % 60;
  const h = Math.floor(total / 3600);
  const two = (x: number) => String(x).padStart(2, "0");
  return h > 0 ? `${h}:${two(m)}:${two(s)}` : `${m}:${two(s)}`;
}
