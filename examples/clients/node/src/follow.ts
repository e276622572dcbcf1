// The resumable follow of a match (docs/clients.md, "Following a match"): the same shape
// as the Go, Python and Kotlin client libraries'. Works on any Connect transport
// (gRPC, gRPC-Web, Connect).

import { Code, ConnectError, type Client } from "@connectrpc/connect";
import {
  AllFivesService,
  ErrorReason,
  Phase,
  type GameView,
  type WatchChange,
  type WatchResponse,
} from "./gen/allfives/v1/allfives_pb.js";
import { ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";

type Api = Client<typeof AllFivesService>;

// [START ts_follow]
/** How `follow` keeps a match followed. */
export interface FollowPolicy {
  /** How long (ms) a stream may say nothing before a heartbeat told the server's
   * period; after one, the bound is twice Heartbeat.intervalMs. */
  livenessMs: number;
  /** The wait between streams: firstBackoffMs, doubled at each stream in a row that
   * brought no change and lived less than the liveness bound, up to maxBackoffMs; drawn
   * between half and all of it after an error, between none and all after an OK end. */
  firstBackoffMs: number;
  maxBackoffMs: number;
}

/** 2 × the default 15 s heartbeat period and some slack; waits of 1 s doubling up to 15 s. */
export const defaultFollowPolicy: FollowPolicy = { livenessMs: 35_000, firstBackoffMs: 1_000, maxBackoffMs: 15_000 };

export interface FollowOptions {
  policy?: FollowPolicy;
  /** Ends the follow and its stream: the generator throws the signal's reason. */
  signal?: AbortSignal;
  /** Told why a stream ended (undefined: an OK end; WatchSilentError; a ConnectError)
   * before each wait. What it throws ends the follow (thrown by the generator). */
  onRewatch?: (cause: unknown) => void;
  /** Told of every message as it arrives: heartbeats (clear a "reconnecting" banner),
   * rematch offers (WatchResponse.rematch, which follow does not act on). What it
   * throws ends the follow (thrown by the generator), never watched again. */
  onMessage?: (message: WatchResponse) => void;
  /** The client to watch on after a silent stream; required, because only the caller
   * knows how to drop its transport's dead connection. Over gRPC with connect-node,
   * make the transport with a `sessionManager` of your own (`new
   * Http2SessionManager(baseUrl)`) and pass `() => (manager.abort(), client)`: the same
   * client opens a new connection. (`() => client` alone puts the next stream back on
   * the dead HTTP/2 session: connect-node sends no pings unless the transport was made
   * with pingIntervalMs, so one silent stream follows another until the kernel gives
   * the connection up, many minutes later.) Over gRPC-Web in a browser, fetch pools
   * connections per origin and a page cannot drop one: a client on a new transport
   * (or the same client) goes on whichever connection the browser picks, and the
   * browser's own timeouts find a dead one. */
  reconnect: () => Api;
}

/** A Watch stream said nothing, not even a heartbeat, for the liveness bound: its
 * connection is taken for dead (a half-open connection after a network change). */
export class WatchSilentError extends Error {}

/** The ErrorInfo reason of a refusal, if it has one. */
export function reasonOf(err: unknown): ErrorReason | undefined {
  const info = ConnectError.from(err).findDetails(ErrorInfoSchema)[0];
  return info ? ErrorReason[info.reason as keyof typeof ErrorReason] : undefined;
}

const finalReasons = new Set<ErrorReason | undefined>([
  ErrorReason.MATCH_FORGOTTEN, ErrorReason.CREDENTIAL_REQUIRED, ErrorReason.CREDENTIAL_INVALID,
  ErrorReason.SEAT_IS_BOT, ErrorReason.STORE_REQUIRED, ErrorReason.TOKEN_MALFORMED,
  ErrorReason.TOKEN_UNKNOWN_KEY, ErrorReason.TOKEN_UNSUPPORTED_VERSION, ErrorReason.TOKEN_INVALID,
  ErrorReason.INVALID_FIELD, ErrorReason.MALFORMED_REQUEST,
]);

/** Whether a Watch refusal ends `follow`: a reason watching again cannot change (the
 * match forgotten, the seat's credential refused or missing, a bot's seat, a damaged or
 * foreign token, a server without a match store, a request it cannot read), or a server
 * without Watch. Anything else (UNAVAILABLE, a proxy's INTERNAL, load refusals) is
 * watched again: Watch changes nothing. */
export function endsFollow(err: unknown): boolean {
  return ConnectError.from(err).code === Code.Unimplemented || finalReasons.has(reasonOf(err));
}

/** The wait (ms) before the next stream, the failures-th in a row that brought no change
 * (1 after one that did); okEnd: the stream ended with OK. */
export function followBackoff(policy: FollowPolicy, failures: number, okEnd: boolean): number {
  const step = Math.min(policy.firstBackoffMs * 2 ** Math.min(Math.max(failures - 1, 0), 30), policy.maxBackoffMs);
  const lowest = okEnd ? 0 : step / 2;
  return lowest + Math.random() * (step - lowest);
}

/**
 * Follows a match until it is over (a server with a match store): every change after
 * `from.view` (the latest the caller holds, with its token `from.state`), as
 * `from.viewer` with its credential (none: a spectator), each once and in order (a
 * catchUp change, when several were missed, replaces the table); it ends after the
 * change that ends the match (at once if `from.view` is over). It watches again from
 * the last stateId seen after every stream that ends: OK (the server drained, the
 * connection aged), an error (thrown only if `endsFollow`), or silent for the liveness
 * bound (then on `options.reconnect()`'s client). Aborting `options.signal` ends it and
 * its stream, throwing the signal's reason; leaving the `for await` early ends the
 * stream too; what a hook throws ends it, thrown as it is.
 */
export async function* follow(
  api: Api,
  from: { state: Uint8Array; view: GameView; viewer?: number; credential?: Uint8Array },
  options: FollowOptions,
): AsyncGenerator<WatchChange, void, undefined> {
  const policy = options.policy ?? defaultFollowPolicy;
  const signal = options.signal ?? new AbortController().signal;
  let state = from.state;
  let last = from.view.stateId;
  let over = from.view.phase === Phase.OVER;
  let livenessMs = policy.livenessMs;
  let failures = 0; // streams in a row that brought no change and lived less than the bound
  while (!over) {
    signal.throwIfAborted();
    const stream = new AbortController();
    const stop = () => stream.abort();
    signal.addEventListener("abort", stop);
    let silent = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const wait = () => {
      clearTimeout(timer);
      timer = setTimeout(() => ((silent = true), stream.abort()), livenessMs);
    };
    const opened = performance.now();
    let changed = false;
    let cause: unknown = undefined;
    let theirs: { error: unknown } | undefined; // what a hook, or the caller at a yield, threw
    try {
      const request = { state, lastStateId: last, viewer: from.viewer, credential: from.viewer === undefined ? undefined : from.credential };
      wait();
      for await (const message of api.watch(request, { signal: stream.signal })) {
        clearTimeout(timer); // time the caller spends on a change does not count
        if (message.kind.case === "heartbeat" && message.kind.value.intervalMs > 0) livenessMs = 2 * message.kind.value.intervalMs;
        try {
          options.onMessage?.(message);
        } catch (error) {
          theirs = { error };
          throw error;
        }
        const change = message.kind.case === "change" ? message.kind.value : undefined;
        const id = change?.view?.stateId;
        if (change && id && !sameBytes(id, last)) {
          changed = true;
          last = id;
          if (change.state.length > 0) state = change.state;
          over = change.view?.phase === Phase.OVER;
          try {
            yield change;
          } catch (error) {
            theirs = { error }; // the caller's generator.throw()
            throw error;
          }
          if (over) return;
        }
        wait();
      }
    } catch (err) {
      if (theirs) throw theirs.error; // not the stream's error: never watched again
      signal.throwIfAborted();
      if (silent) {
        cause = new WatchSilentError(`the stream said nothing, not even a heartbeat, for ${livenessMs} ms`);
        api = options.reconnect(); // the connection is dead: another
      } else {
        if (endsFollow(err)) throw ConnectError.from(err);
        cause = ConnectError.from(err);
      }
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", stop);
      stream.abort(); // ends the call when it is still open
    }
    const heard = changed || performance.now() - opened >= livenessMs;
    const refused = cause !== undefined && reasonOf(cause) === ErrorReason.TOO_MANY_WATCHES;
    failures = heard && !refused ? 1 : failures + 1;
    options.onRewatch?.(cause);
    await abortableSleep(followBackoff(policy, failures, cause === undefined), signal);
  }
}
// [END ts_follow]

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", done);
      resolve();
    }, ms);
    if (signal.aborted) done();
    else signal.addEventListener("abort", done, { once: true });
  });
}
