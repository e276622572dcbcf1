// Turn clocks (issue 41, docs/rules.md section 11) for a connect-es client of allfives.v1:
// a countdown read from a view's ClockView, a claim of the seat on turn's timeout once
// it is due, Leave and ReturnToSeat. Works on any transport (gRPC in Node, gRPC-Web in
// a page): it only takes the generated client.
//
// The server judges every clock by its own clock when a call arrives; no timer runs
// anywhere. A ClockView's times are the server's, in milliseconds since the Unix epoch
// (uint64: bigint here), with now_ms its time when it made the view: a device never
// compares them with its own wall clock (which may be off by seconds), only with
// now_ms, and counts the difference down on its monotonic clock (performance.now())
// from when the view arrived.

import { type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type CallOptions, type Client } from "@connectrpc/connect";
import {
  AllFivesService,
  ErrorReason,
  type ClaimTimeoutRequestSchema,
  type ClaimTimeoutResponse,
  type ClockView,
  type GameView,
  type LeaveRequestSchema,
  type LeaveResponse,
  type ReturnToSeatRequestSchema,
  type ReturnToSeatResponse,
} from "./gen/allfives/v1/allfives_pb.js";
import { ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";

export type AllFivesClient = Client<typeof AllFivesService>;

/** This device's monotonic clock in milliseconds: it never steps with the wall clock. */
export const monotonicMs = (): number => performance.now();

// [START node_countdown]
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

  /** When the server's time `serverMs` comes by monotonicMs(): as long after the view
   * arrived as it is after the view's now_ms. (now_ms was read when the call arrived,
   * so this errs late by the call's time: a countdown shows a little more time than
   * there is (the answer's way back, which the lag grace covers), and a claim
   * is never early.) */
  local(serverMs: bigint): number {
    return this.receivedAt + Number(serverMs - this.clock.nowMs);
  }

  /** When the seat on turn's time runs out, by monotonicMs(); undefined when no human
   * seat is on turn (between hands, the match over). */
  deadline(): number | undefined {
    const ms = this.clock.turnDeadlineMs;
    return ms === undefined ? undefined : this.local(ms);
  }

  /** The countdown to show at `now`: milliseconds until the seat on turn's deadline,
   * never below 0; undefined when no human seat is on turn. */
  timeLeftMs(now: number = monotonicMs()): number | undefined {
    const deadline = this.deadline();
    return deadline === undefined ? undefined : Math.max(0, deadline - now);
  }

  /** From when the server takes the seat on turn's timeout, by monotonicMs() (its
   * deadline plus the server's lag grace); undefined when no human seat is on turn. */
  claimableAt(): number | undefined {
    const ms = this.clock.claimableAtMs;
    return ms === undefined ? undefined : this.local(ms);
  }
}
// [END node_countdown]

/** The ErrorInfo of a refusal (its reason as the generated enum, and its metadata);
 * undefined without one (a transport failure). */
export function errorInfo(err: ConnectError): { reason: ErrorReason; metadata: Record<string, string> } | undefined {
  const [info] = err.findDetails(ErrorInfoSchema);
  if (!info) return undefined;
  const known: unknown = ErrorReason[info.reason as keyof typeof ErrorReason];
  const reason = typeof known === "number" ? (known as ErrorReason) : ErrorReason.ERROR_REASON_UNSPECIFIED;
  return { reason, metadata: { ...info.metadata } };
}

/** A time in an error's metadata (ms since the Unix epoch, in decimal); undefined
 * if it is not one. */
function millis(value: string | undefined): bigint | undefined {
  return value !== undefined && /^[0-9]{1,20}$/.test(value) ? BigInt(value) : undefined;
}

/** Whether the same call may simply be made again: it did nothing. UNAVAILABLE (with
 * CLOCK_SKEW, STORE_UNAVAILABLE, RANDOM_UNAVAILABLE, or no reason: no connection), the
 * server's load limits, and the deadlines. */
export function retryable(err: ConnectError): boolean {
  if (err.code === Code.Unavailable) return true;
  const info = errorInfo(err);
  if (!info) return err.code === Code.DeadlineExceeded || err.code === Code.ResourceExhausted;
  return [ErrorReason.OVERLOADED, ErrorReason.SEARCH_QUEUE_FULL, ErrorReason.REQUEST_TIMEOUT].includes(info.reason);
}

export interface ClockCallOptions {
  /** Each attempt's deadline (default 5000 ms). */
  timeoutMs?: number;
  /** Ends every wait and call at once: the promise rejects with the signal's reason
   * (or Connect's CANCELED), never retried. */
  signal?: AbortSignal;
  /** Attempts of one call after failures that did nothing (default 4). */
  attempts?: number;
}

/** The longest delay setTimeout keeps: a longer one (or one not a finite number) fires
 * at once. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** Resolves after `ms` (at once when `ms` <= 0), or rejects when `signal` aborts. A wait
 * longer than setTimeout allows is made of pieces of at most MAX_TIMEOUT_MS, each
 * timed to the end on the monotonic clock. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  const until = monotonicMs() + Math.max(0, ms);
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const wait = () => {
      const left = until - monotonicMs();
      if (!(left > 0)) {
        signal?.removeEventListener("abort", onAbort);
        return resolve();
      }
      timer = setTimeout(wait, Math.min(left, MAX_TIMEOUT_MS));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    wait();
  });
}

/** One call with a deadline per attempt, made again with backoff (and jitter) after a
 * failure that did nothing (CLOCK_SKEW and UNAVAILABLE among them). Every call of the
 * API is safe to repeat: the same token gives the same match. Refusals come back as
 * the ConnectError the client threw. */
async function call<T>(fn: (options: CallOptions) => Promise<T>, options: ClockCallOptions): Promise<T> {
  const attempts = options.attempts ?? 4;
  let backoff = 100;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn({ timeoutMs: options.timeoutMs ?? 5000, signal: options.signal });
    } catch (e) {
      const err = ConnectError.from(e);
      if (options.signal?.aborted || attempt >= attempts || !retryable(err)) throw err;
      await sleep(backoff / 2 + Math.random() * (backoff / 2), options.signal);
      backoff = Math.min(2 * backoff, 2000);
    }
  }
}

type ClaimTimeoutInit = MessageInitShape<typeof ClaimTimeoutRequestSchema>;

/** ClaimTimeout now, for `request.seat` (any seat of the match, with its credential):
 * the seat on turn's timeout, as the match's Rules.absence says. Refused
 * TIMEOUT_NOT_DUE before its claimable_at_ms ([claimWhenDue] waits for it). */
export function claimTimeout(
  client: AllFivesClient,
  request: ClaimTimeoutInit,
  options: ClockCallOptions = {},
): Promise<ClaimTimeoutResponse> {
  return call((o) => client.claimTimeout(request, o), options);
}

/** Leave: a bot holds `request.seat` until its player comes back (ReturnToSeat), or the
 * seat forfeits, as the match's Rules.absence says (from the first deal to the end). */
export function leave(
  client: AllFivesClient,
  request: MessageInitShape<typeof LeaveRequestSchema>,
  options: ClockCallOptions = {},
): Promise<LeaveResponse> {
  return call((o) => client.leave(request, o), options);
}

/** ReturnToSeat: `request.seat`'s player takes it back from the bot holding it and
 * plays from its next turn; refused SEAT_NOT_HELD when no bot holds it. */
export function returnToSeat(
  client: AllFivesClient,
  request: MessageInitShape<typeof ReturnToSeatRequestSchema>,
  options: ClockCallOptions = {},
): Promise<ReturnToSeatResponse> {
  return call((o) => client.returnToSeat(request, o), options);
}

/** How often claimWhenDue claims after TIMEOUT_NOT_DUE. The refusal says when the
 * refusing server will take the timeout, by its own clock (claimable_at_ms, now_ms):
 * one wait is enough unless the next claim reaches a replica whose clock is behind
 * (within the skew the deployment allows); the backoff doubling up to 2 s covers
 * that, past the default --max-clock-skew-ms of 1 s. */
export const CLAIM_NOT_DUE_ATTEMPTS = 6;

// [START node_claim_when_due]
/**
 * Claims the seat on turn's timeout for `request.seat` once `countdown` (of the view
 * that came with `request.state`) says it is due: waits until its claimableAt(), then
 * calls ClaimTimeout (CLOCK_SKEW and UNAVAILABLE retried with backoff). Refused
 * TIMEOUT_NOT_DUE, it waits the refusal's claimable_at_ms - now_ms (the refusing
 * server's clock) from when the refusal arrived, and a short backoff at least, then
 * claims again, up to CLAIM_NOT_DUE_ATTEMPTS times. Any other refusal is thrown at once:
 * STATE_STALE (a match store took a late move or another claim first), WRONG_PHASE or
 * GAME_OVER (no seat on turn). Answers the response and how many TIMEOUT_NOT_DUE were
 * waited out. `options.signal` ends it at any point.
 */
export async function claimWhenDue(
  client: AllFivesClient,
  request: ClaimTimeoutInit,
  countdown: Countdown,
  options: ClockCallOptions = {},
): Promise<{ response: ClaimTimeoutResponse; notDue: number }> {
  let at = countdown.claimableAt() ?? monotonicMs(); // nobody on turn: the server says why
  let backoff = 200;
  for (let notDue = 0; ; notDue++) {
    await sleep(at - monotonicMs(), options.signal);
    try {
      return { response: await claimTimeout(client, request, options), notDue };
    } catch (e) {
      const err = ConnectError.from(e);
      const info = errorInfo(err);
      if (info?.reason !== ErrorReason.TIMEOUT_NOT_DUE || notDue + 1 >= CLAIM_NOT_DUE_ATTEMPTS) throw err;
      const refusedAt = monotonicMs();
      at = refusedAt + backoff / 2 + Math.random() * (backoff / 2);
      const claimable = millis(info.metadata.claimable_at_ms);
      const now = millis(info.metadata.now_ms);
      if (claimable !== undefined && now !== undefined) {
        at = Math.max(at, refusedAt + Number(claimable - now));
      } else if (claimable !== undefined) {
        at = Math.max(at, countdown.local(claimable)); // an older server: no now_ms
      }
      backoff = Math.min(2 * backoff, 2000);
    }
  }
}
// [END node_claim_when_due]
