// One player's device in a two-player match against another device, through the
// server's match store and Watch: no relay, no polling, no token passed between the two
// but the invite. The TypeScript twin of examples/clients/python/device.py.
//
// The host makes the match (its seat 0 claimed in NewGame, seat 1 left open) and writes
// the invite, the new match's token, to a file; the guest reads it, watches the match
// with it (as a spectator holding a token: its changes carry tokens), claims seat 1
// from the latest with a claim key, and watches as seat 1. From then on each device
// learns every move, its own and the other's, only from its Watch stream (Connect's
// server streaming: an async iterator), and plays on its turn (the host also deals). A
// stream that ends (the connection aged, the server drained) is watched again with the
// last state id seen, and nothing is missed. With --min-watches N a device makes no
// move of its own (the host's first is the first deal) until it has opened its seat's
// Watch stream N times: on a server that ages connections every second, N = 2 shows
// each device watching again mid-match however fast the match then goes (CI's check).
//
// Checks: every change follows the last one seen unless it says it is a catch-up;
// every view is its own seat's; no event shows a tile the other seat drew; the match
// is over when the follow ends; both devices end on the same state (the caller
// compares their last lines).
//
//   node dist/device.js --addr HOST:PORT --host --invite FILE [--transport grpc-web]
//   node dist/device.js --addr HOST:PORT --join FILE
// (--pause-ms N: think N ms before each move; --target: the match's target;
// --min-watches N, above.)

import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import {
  AllFivesService,
  ErrorReason,
  Phase,
  SeatKind,
  type GameView,
  type WatchChange,
} from "./gen/allfives/v1/allfives_pb.js";
import { defaultFollowPolicy, follow, reasonOf } from "./follow.js";

type Api = Client<typeof AllFivesService>;
const CALL = { timeoutMs: 10_000 };

class Inconsistency extends Error {}
function check(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Inconsistency(what);
}
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class Device {
  seat: number | undefined = 0;
  credential: Uint8Array = new Uint8Array();
  token: Uint8Array = new Uint8Array();
  view: GameView | undefined;
  changes = 0;
  catchUps = 0;
  watches = 0; // the seat's Watch streams opened
  calls = 0;
  /** A move waits for the stream to be watched again (minWatches). */
  held = false;
  /** A held move made when the stream was watched again, if any. */
  heldMove: Promise<void> = Promise.resolve();

  constructor(
    public api: Api,
    readonly pauseMs: number,
    readonly minWatches: number,
  ) {}

  watch(viewer: number | undefined, token: Uint8Array, last: Uint8Array, signal: AbortSignal) {
    const request = { state: token, lastStateId: last, viewer, credential: viewer === undefined ? undefined : this.credential };
    return this.api.watch(request, { signal });
  }

  take(change: WatchChange): void {
    const view = change.view;
    check(view !== undefined, "a change without a view");
    if (change.catchUp) this.catchUps++;
    else if (this.view) check(hex(view.previousStateId) === hex(this.view.stateId), "a change that does not follow the last one seen");
    check(view.viewer === this.seat, "a view that is not this seat's");
    check(view.hand.length === view.handSizes[this.seat ?? 0], "a hand of the wrong size");
    for (const event of change.events) {
      if (event.kind.case === "tileDrawn") {
        const d = event.kind.value;
        check((d.tile !== undefined) === (d.seat === this.seat), "a drawn tile shown to another seat");
      }
    }
    this.token = change.state;
    this.view = view;
    this.changes++;
  }

  /** A move: its answer comes back on the stream, so only a refusal matters here
   * (STATE_STALE: the match moved on before it, and the stream will say how). */
  async call(move: () => Promise<unknown>): Promise<void> {
    await sleep(this.pauseMs);
    for (let attempt = 0; ; attempt++) {
      this.calls++;
      try {
        await move();
        return;
      } catch (err) {
        if (reasonOf(err) === ErrorReason.STATE_STALE) return;
        // A move is safe to send again (the same token, the same answer). Without a
        // reason the failure is the transport's, not a refusal: a stream the server
        // refused as its connection aged (INTERNAL, REFUSED_STREAM), a fetch that failed
        // over gRPC-Web (UNKNOWN), UNAVAILABLE...
        const retryable = err instanceof ConnectError && reasonOf(err) === undefined;
        if (!retryable || attempt >= 3) throw err;
        await sleep(100 * 2 ** attempt);
      }
    }
  }

  over(): boolean {
    return this.view?.phase === Phase.OVER;
  }

  /** Its move, if the match waits for it: the deal (the host), or its turn; held (made
   * on the next stream's first message) until minWatches streams. */
  async act(): Promise<void> {
    this.held = this.watches < this.minWatches;
    if (this.held) return;
    const view = this.view;
    const seat = this.seat;
    if (!view || seat === undefined) return;
    const state = this.token;
    const credential = this.credential;
    const seated = view.seats.every((s) => s.kind !== SeatKind.OPEN);
    if (view.phase === Phase.DEALING && seat === 0 && seated) {
      await this.call(() => this.api.deal({ state, viewer: 0, credential }, CALL));
    } else if (view.phase === Phase.PLAYING && view.turn === seat) {
      const best = [...view.legalMoves].sort((x, y) => y.points - x.points)[0];
      if (best) {
        await this.call(() => this.api.play({ state, seat, tile: best.tile, end: best.end, viewer: seat, credential }, CALL));
      } else {
        await this.call(() => this.api.draw({ state, seat, viewer: seat, credential }, CALL));
      }
    }
  }

  /** Follows the match to its end with the library's follow (which watches again
   * whenever a stream ends), playing its turns. Short waits between streams, for a
   * test's match; a device keeps defaultFollowPolicy. */
  async play(reconnect: () => Api): Promise<void> {
    const view = this.view;
    check(view !== undefined, "no view to follow from");
    this.watches++;
    await this.act();
    const failed = new AbortController(); // a held move's failure ends the follow
    const changes = follow(
      this.api,
      { state: this.token, view, viewer: this.seat, credential: this.credential },
      {
        policy: { ...defaultFollowPolicy, firstBackoffMs: 20, maxBackoffMs: 500 },
        signal: failed.signal,
        onRewatch: () => this.watches++,
        // A stream watched again from the latest state opens with a heartbeat (a change
        // comes to act() through take()): a held move is made now.
        onMessage: (message) => {
          if (this.held && message.kind.case === "heartbeat") this.heldMove = this.act().catch((err) => failed.abort(err));
        },
        reconnect: () => (this.api = reconnect()),
      },
    );
    for await (const change of changes) {
      await this.heldMove; // one move at a time
      this.take(change);
      await this.act();
    }
    check(this.over(), "the follow ended before the match did");
  }
}

async function main(): Promise<number> {
  const { values: args } = parseArgs({
    options: {
      addr: { type: "string", default: "127.0.0.1:50051" },
      host: { type: "boolean", default: false },
      join: { type: "string" },
      invite: { type: "string" },
      target: { type: "string", default: "100" },
      "pause-ms": { type: "string", default: "0" },
      "min-watches": { type: "string", default: "1" },
      transport: { type: "string", default: "grpc" },
      quiet: { type: "boolean", default: false },
    },
  });
  const baseUrl = `http://${args.addr}`;
  // After a silent stream: over gRPC, the same client once its dead connection is
  // dropped; over gRPC-Web, a client on a new transport.
  let client: Api;
  let reconnect: () => Api;
  if (args.transport === "grpc-web") {
    reconnect = () => createClient(AllFivesService, createGrpcWebTransport({ baseUrl }));
    client = reconnect();
  } else {
    const sessionManager = new Http2SessionManager(baseUrl);
    client = createClient(AllFivesService, createGrpcTransport({ baseUrl, sessionManager }));
    reconnect = () => (sessionManager.abort(), client);
  }
  const device = new Device(client, Number(args["pause-ms"]), Number(args["min-watches"]));
  const started = Date.now();
  if (args.host) {
    check(args.invite !== undefined, "--host needs --invite FILE");
    const made = await device.api.newGame(
      { rules: { players: 2, target: Number(args.target) }, seats: [{ claim: true }, {}], viewer: 0 },
      CALL,
    );
    device.credential = made.credentials[0].credential;
    device.token = made.state;
    device.view = made.view;
    writeFileSync(`${args.invite}.part`, Buffer.from(made.state).toString("base64"));
    renameSync(`${args.invite}.part`, args.invite);
  } else {
    check(args.join !== undefined, "--host or --join FILE");
    for (let i = 0; i < 200 && !existsSync(args.join); i++) await sleep(50);
    const invite = new Uint8Array(Buffer.from(readFileSync(args.join, "utf8"), "base64"));
    // As a spectator holding a token: the latest state, with its token.
    device.seat = undefined;
    const abort = new AbortController();
    let latest: WatchChange | undefined;
    for await (const message of device.watch(undefined, invite, new Uint8Array(), abort.signal)) {
      if (message.kind.case === "change") {
        latest = message.kind.value;
        break;
      }
    }
    abort.abort();
    check(latest !== undefined, "no state from the invite's stream");
    device.seat = 1;
    const claimed = await device.api.claimSeat({ state: latest.state, seat: 1, claimKey: randomBytes(16) }, CALL);
    check(claimed.credential !== undefined, "a claim without a credential");
    device.credential = claimed.credential.credential;
    device.token = claimed.state;
    device.view = claimed.view;
  }
  await device.play(reconnect);
  const view = device.view;
  check(view !== undefined, "no view");
  console.log(
    `device seat ${device.seat}: match over, scores ${view.scores.map((s) => s.score).join(" ")}, ` +
      `winner side ${view.winnerSide}; ${device.changes} changes from ${device.watches} Watch streams ` +
      `(${device.catchUps} catch-ups), ${device.calls} calls, ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
      `last state ${hex(view.stateId)}`,
  );
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`device: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
