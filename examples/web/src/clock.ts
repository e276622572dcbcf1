// Turn clocks (issue 41, docs/rules.md section 11) as the page reads them: the same
// Countdown as the TypeScript client's (examples/clients/node/src/clock.ts), how a
// TIMEOUT_NOT_DUE refusal says when to claim again, and how long a seat has been gone
// (a Watch stream's Presence, read the same way). The server judges every clock by
// its own clock when a call arrives (no timer runs anywhere): a ClockView's times are
// the server's, in milliseconds since the Unix epoch, with now_ms its time when it
// made the view. The page never compares them with its own wall clock, only with
// now_ms, and counts the difference down on performance.now() from when the view
// arrived.
import { ConnectError } from "@connectrpc/connect";
import type { ClockView, GameView, Presence } from "./gen/allfives/v1/allfives_pb.js";
import { ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";

/** This device's monotonic clock in milliseconds: it never steps with the wall clock. */
export const monotonicMs = (): number => performance.now();

/** A clocked view's ClockView read against this device's monotonic clock. */
export class Countdown {
  constructor(
    readonly clock: ClockView,
    /** monotonicMs() when the answer carrying the view arrived. */
    readonly receivedAt: number,
  ) {}

  /** The countdown of a view that arrived at `receivedAt`; undefined without a clock. */
  static of(view: GameView | undefined, receivedAt: number): Countdown | undefined {
    return view?.clock ? new Countdown(view.clock, receivedAt) : undefined;
  }

  /** When the server's time `serverMs` comes by monotonicMs(). */
  local(serverMs: bigint): number {
    return this.receivedAt + Number(serverMs - this.clock.nowMs);
  }

  /** When the seat on turn's time runs out, by monotonicMs(); undefined when no human
   * seat is on turn. */
  deadline(): number | undefined {
    const ms = this.clock.turnDeadlineMs;
    return ms === undefined ? undefined : this.local(ms);
  }

  /** Milliseconds until the seat on turn's deadline at `now`, never below 0. */
  timeLeftMs(now: number = monotonicMs()): number | undefined {
    const deadline = this.deadline();
    return deadline === undefined ? undefined : Math.max(0, deadline - now);
  }

  /** From when the server takes the seat on turn's timeout, by monotonicMs(). */
  claimableAt(): number | undefined {
    const ms = this.clock.claimableAtMs;
    return ms === undefined ? undefined : this.local(ms);
  }
}

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
}

/**
 * How long after a TIMEOUT_NOT_DUE refusal arrived to claim again, in milliseconds:
 * the refusing server's claimable_at_ms - now_ms (its own clock), or undefined when the
 * refusal does not say.
 */
export function notDueWaitMs(err: unknown): number | undefined {
  const info = ConnectError.from(err).findDetails(ErrorInfoSchema)[0];
  const claimable = info?.metadata.claimable_at_ms;
  const now = info?.metadata.now_ms;
  if (claimable === undefined || now === undefined) return undefined;
  try {
    return Math.max(0, Number(BigInt(claimable) - BigInt(now)));
  } catch {
    return undefined;
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
