// Plays one whole match of All Fives against an allfives server, in TypeScript.
//
// The same client as examples/clients/python, on Connect (@connectrpc/connect) with
// code generated from proto/ by protoc-gen-es (`npm run generate`). Over gRPC (HTTP/2,
// @connectrpc/connect-node) by default; with --transport grpc-web over gRPC-Web
// (HTTP/1.1, fetch) through @connectrpc/connect-web, the transport a browser uses.
//
// The client holds the credential of every human seat (hot seat): it claims them in
// NewGame (`seats` with `claim`), or with --claim-seats leaves them open and claims each
// with ClaimSeat, as players on their own devices would; every request naming a seat or
// a viewer carries that seat's credential. With --bots the server plays chosen seats
// itself, and their moves arrive as events of the human seats' calls. Every human seat
// plays one simple strategy: from the legal moves the server lists for it, the one
// that scores most (then the heaviest tile); a seat told to draw draws. The table is
// printed as the match goes and the score sheet at the end. On the way the client
// checks what the API promises (the state_id chain, the move counter, scores, 28
// tiles, who placed each tile, that a view and its events show only the viewer's
// tiles, that Score's include_hand_events replays the hand as the seat saw it, the
// sheet) and exits non-zero on any unexpected error or inconsistency. With
// --check-errors it also provokes every documented error a client can cause and checks
// each reason (against the generated ErrorReason enum) and its details, and plays side
// matches on a turn clock with src/clock.ts: the clock's refusals, then a match on a
// 1-second clock where one seat stops moving, the other claims its timeout once due
// (claimWhenDue), the late seat's own move is refused TURN_TIMED_OUT, and it leaves and
// comes back (Leave, ReturnToSeat).
//
//   npm ci && npm run build
//   node dist/main.js --addr 127.0.0.1:50051 --players 3 --claim-seats
//   node dist/main.js --players 3 --bots human,medium,hard
//   node dist/main.js --players 4 --partnership --check-errors --transport grpc-web

import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { clone, create, equals, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import {
  AbsenceReason,
  AbsenceRule,
  AllFivesService,
  Arm,
  BotLevel,
  End,
  ErrorReason,
  EventSchema,
  HandEndReason,
  HandSizeRule,
  Phase,
  RulesSchema,
  SeatKind,
  SeatStatusSchema,
  SettlementRule,
  TileSchema,
  type Event,
  type Event_GameEnded,
  type GameView,
  type HandResult,
  type LegalMove,
  type PlacedTile,
  type Rules,
  type ScoreSheet,
  SeatSetupSchema,
  type SideScore,
  type Tile,
} from "./gen/allfives/v1/allfives_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import { claimTimeout, claimWhenDue, Countdown, leave, monotonicMs, returnToSeat } from "./clock.js";

const DOMAIN = "allfives.v1";
const MAX_TOKEN_BYTES = 640; // the API's bound (512 without display names)
const STATE_ID_BYTES = 16;
const CREDENTIAL_BYTES = 16;
// A bound on the calls of one match: a 4-player match under "own pips off" can take a
// few thousand; far more means the loop is stuck.
const MAX_CALLS = 100_000;

// Every reason of the ErrorReason enum (proto/allfives/v1/allfives.proto): the status
// code it comes with, and what a client does about it. Keyed by the generated enum;
// ErrorInfo.reason is the value's name.
const REASONS = new Map<ErrorReason, [Code, string]>([
  [ErrorReason.INVALID_FIELD, [Code.InvalidArgument, "a bug in the request: the BadRequest names the field to fix"]],
  [
    ErrorReason.TOKEN_MALFORMED,
    [Code.InvalidArgument, "send the latest token exactly as received (raw bytes; base64 only in JSON)"],
  ],
  [
    ErrorReason.TOKEN_UNSUPPORTED_VERSION,
    [Code.InvalidArgument, "a token this server version cannot read: the match cannot go on here"],
  ],
  [
    ErrorReason.TOKEN_UNKNOWN_KEY,
    [Code.InvalidArgument, "sealed under a key the service no longer holds (retired): start a new match"],
  ],
  [
    ErrorReason.TOKEN_INVALID,
    [Code.InvalidArgument, "altered or not from this service: restore the stored token or start anew"],
  ],
  [ErrorReason.RANDOM_UNAVAILABLE, [Code.Unavailable, "the server had no randomness: retry after a short wait"]],
  [
    ErrorReason.NOT_YOUR_TURN,
    [Code.FailedPrecondition, "refresh the view (Score); the seat in metadata 'turn' is to act"],
  ],
  [ErrorReason.TILE_NOT_IN_HAND, [Code.FailedPrecondition, "refresh the view and choose from its legal_moves"]],
  [
    ErrorReason.TILE_DOES_NOT_MATCH,
    [Code.FailedPrecondition, "choose from legal_moves: they list every tile and end that fit"],
  ],
  [
    ErrorReason.END_NOT_OPEN,
    [Code.FailedPrecondition, "name an end from open_ends (UP and DOWN open once the spinner has both sides)"],
  ],
  [ErrorReason.MUST_PLAY, [Code.FailedPrecondition, "the seat holds a playable tile: Play one of legal_moves"]],
  [ErrorReason.AMBIGUOUS_END, [Code.FailedPrecondition, "name the end: legal_moves has one entry per tile and end"]],
  [
    ErrorReason.WRONG_PHASE,
    [
      Code.FailedPrecondition,
      "check view.phase: Deal in PHASE_DEALING, Play and Draw in PHASE_PLAYING, ClaimSeat before the first deal",
    ],
  ],
  [ErrorReason.GAME_OVER, [Code.FailedPrecondition, "the match is over: show the sheet (Score) and offer a new match"]],
  [
    ErrorReason.BONEYARD_EMPTY,
    [Code.FailedPrecondition, "cannot happen in a well-formed match (empty boneyard: automatic pass): a bug"],
  ],
  [
    ErrorReason.CREDENTIAL_REQUIRED,
    [
      Code.PermissionDenied,
      "send the seat's credential with every request naming it as seat or viewer (or name no viewer, for the public view)",
    ],
  ],
  [
    ErrorReason.CREDENTIAL_INVALID,
    [
      Code.PermissionDenied,
      "not this seat's credential in this match: send the one its claim answered (a seat still open has none: ClaimSeat it)",
    ],
  ],
  [ErrorReason.SEAT_IS_BOT, [Code.PermissionDenied, "the server plays that seat: act and look only for your own seat"]],
  [
    ErrorReason.SEED_NOT_ALLOWED,
    [
      Code.PermissionDenied,
      "leave `seed` out: this server picks every seed (seeded replays need a server started with --allow-client-seeds)",
    ],
  ],
  [
    ErrorReason.SEATS_OPEN,
    [Code.FailedPrecondition, "wait until every human seat is claimed (view.seats shows the open ones)"],
  ],
  [
    ErrorReason.SEAT_TAKEN,
    [Code.FailedPrecondition, "someone claimed that seat first (or it is a bot's): pick an open one from view.seats"],
  ],
  [
    ErrorReason.MALFORMED_REQUEST,
    [Code.InvalidArgument, "the request bytes are not the method's message: a bug in the client or its stubs"],
  ],
  [ErrorReason.OVERLOADED, [Code.ResourceExhausted, "the server is busy: retry with backoff (nothing was done)"]],
  [
    ErrorReason.SEARCH_QUEUE_FULL,
    [Code.ResourceExhausted, "too many HARD searches waiting: retry with backoff, or ask a lower level"],
  ],
  [ErrorReason.REQUEST_BODY_TIMEOUT, [Code.Canceled, "the request arrived too slowly: retry on a better connection"]],
  [ErrorReason.STATE_STALE, [Code.Aborted, "the match has moved on from this token: continue from the latest one"]],
  [
    ErrorReason.STORE_UNAVAILABLE,
    [Code.Unavailable, "the server's match store did not answer: retry with backoff (nothing was done)"],
  ],
  [ErrorReason.MATCH_FORGOTTEN, [Code.NotFound, "the server's match store no longer holds this match: start another"]],
  [
    ErrorReason.STORE_REQUIRED,
    [Code.FailedPrecondition, "this server has no match store, which this call needs: a deployment fault"],
  ],
  [
    ErrorReason.TOO_MANY_WATCHES,
    [Code.ResourceExhausted, "as many Watch streams are open as the server takes: close one, or retry with backoff"],
  ],
  [ErrorReason.INVITE_NOT_FOUND, [Code.NotFound, "no match waits under that invite code: check it, or ask for a new one"]],
  [
    ErrorReason.INVITE_RATE_LIMITED,
    [Code.ResourceExhausted, "too many invite codes were tried this minute: retry in a minute, or use the invite link"],
  ],
  [ErrorReason.NO_OPEN_SEAT, [Code.FailedPrecondition, "every seat is taken: there is nobody left to invite"]],
  [
    ErrorReason.REQUEST_TIMEOUT,
    [Code.DeadlineExceeded, "the call ran past the server's time limit: make the same call again (answered the same)"],
  ],
  [
    ErrorReason.TIMEOUT_NOT_DUE,
    [Code.FailedPrecondition, "the seat on turn still has time: claim again from ErrorInfo.metadata claimable_at_ms"],
  ],
  [ErrorReason.NO_TURN_CLOCK, [Code.FailedPrecondition, "this match has no turn clock: nobody's time runs out"]],
  [ErrorReason.TURN_TIMED_OUT, [Code.FailedPrecondition, "the seat's time ran out before its move arrived"]],
  [ErrorReason.SEAT_NOT_HELD, [Code.FailedPrecondition, "no bot holds that seat: its player plays it already"]],
  [
    ErrorReason.CLOCK_SKEW,
    [Code.Unavailable, "a replica's clock is off: retry with backoff (nothing was done)"],
  ],
  [ErrorReason.PASS_MALFORMED, [Code.InvalidArgument, "the pass is not a compact JWS: send it as the studio's login issued it"]],
  [ErrorReason.PASS_INVALID, [Code.Unauthenticated, "the pass is not this deployment's: get one from the studio's login"]],
  [ErrorReason.PASS_EXPIRED, [Code.Unauthenticated, "the pass has expired: get a fresh one and claim again"]],
  [ErrorReason.PASS_NOT_YET_VALID, [Code.Unauthenticated, "the pass is not valid yet (its issuer's clock is off)"]],
  [ErrorReason.PASS_REQUIRED, [Code.Unauthenticated, "this deployment seats only players with the studio's pass"]],
  [ErrorReason.PASSES_NOT_ACCEPTED, [Code.FailedPrecondition, "this server takes no passes: leave `pass` out"]],
  [ErrorReason.PLAYER_ALREADY_SEATED, [Code.FailedPrecondition, "the pass's player already holds another seat of this match"]],
]);
// Codes without an ErrorInfo worth retrying: no connection, calls shed, deadlines.
const RETRYABLE_CODES = new Set([Code.Unavailable, Code.ResourceExhausted, Code.DeadlineExceeded, Code.Canceled]);
// Reasons a client cannot cause on purpose against a healthy server (or not with a
// well-formed client: MALFORMED_REQUEST and REQUEST_BODY_TIMEOUT need broken bytes or a
// stalled body; OVERLOADED and SEARCH_QUEUE_FULL a flood; STATE_STALE,
// STORE_UNAVAILABLE, MATCH_FORGOTTEN and STORE_REQUIRED a server with a match store,
// TOO_MANY_WATCHES many Watch streams, INVITE_NOT_FOUND, INVITE_RATE_LIMITED and
// NO_OPEN_SEAT invite codes, which need a store too; tests/ provoke them;
// REQUEST_TIMEOUT a call that outlasts the server's time limit; CLOCK_SKEW replicas
// whose clocks disagree: tests/it/clocks.rs provokes it; the pass refusals a server
// with the studio's pass keys: tests/it/passes.rs and examples/ranking provoke them).
// The turn clock's other
// refusals (TIMEOUT_NOT_DUE, NO_TURN_CLOCK, TURN_TIMED_OUT, SEAT_NOT_HELD) are provoked
// by ErrorProbe.clocks, on matches of their own.
const UNPROVOKABLE = new Set([
  ErrorReason.BONEYARD_EMPTY,
  ErrorReason.RANDOM_UNAVAILABLE,
  ErrorReason.MALFORMED_REQUEST,
  ErrorReason.OVERLOADED,
  ErrorReason.SEARCH_QUEUE_FULL,
  ErrorReason.REQUEST_BODY_TIMEOUT,
  ErrorReason.STATE_STALE,
  ErrorReason.STORE_UNAVAILABLE,
  ErrorReason.MATCH_FORGOTTEN,
  ErrorReason.STORE_REQUIRED,
  ErrorReason.TOO_MANY_WATCHES,
  ErrorReason.INVITE_NOT_FOUND,
  ErrorReason.INVITE_RATE_LIMITED,
  ErrorReason.NO_OPEN_SEAT,
  ErrorReason.REQUEST_TIMEOUT,
  ErrorReason.CLOCK_SKEW,
  ErrorReason.PASS_MALFORMED,
  ErrorReason.PASS_INVALID,
  ErrorReason.PASS_EXPIRED,
  ErrorReason.PASS_NOT_YET_VALID,
  ErrorReason.PASS_REQUIRED,
  ErrorReason.PASSES_NOT_ACCEPTED,
  ErrorReason.PLAYER_ALREADY_SEATED,
]);
const reasonName = (r: ErrorReason) => ErrorReason[r] ?? String(r);

/** The server's answer breaks a promise of the API. */
class Inconsistency extends Error {}

function check(ok: boolean, what: string): asserts ok {
  if (!ok) throw new Inconsistency(what);
}

/** A refused call, with the google.rpc details of its status. */
class ApiError extends Error {
  // The ErrorInfo's reason as the generated enum (ErrorReason.NOT_YOUR_TURN, ...);
  // ERROR_REASON_UNSPECIFIED for a name newer than this client's proto; undefined
  // without an ErrorInfo.
  reason?: ErrorReason;
  reasonText?: string; // the name as sent
  domain?: string;
  metadata: Record<string, string> = {};
  fields: Record<string, string> = {}; // BadRequest: field -> why

  constructor(
    readonly method: string,
    readonly code: Code,
    readonly rawMessage: string,
  ) {
    super(rawMessage);
  }

  static from(method: string, err: unknown): ApiError {
    const ce = ConnectError.from(err);
    const e = new ApiError(method, ce.code, ce.rawMessage);
    // Connect decodes the google.rpc.Status of the `grpc-status-details-bin` trailer;
    // findDetails picks the details of one type out of it.
    for (const info of ce.findDetails(ErrorInfoSchema)) {
      const known: unknown = ErrorReason[info.reason as keyof typeof ErrorReason];
      e.reason = typeof known === "number" ? (known as ErrorReason) : ErrorReason.ERROR_REASON_UNSPECIFIED;
      e.reasonText = info.reason;
      e.domain = info.domain;
      e.metadata = { ...info.metadata };
    }
    for (const bad of ce.findDetails(BadRequestSchema)) {
      for (const v of bad.fieldViolations) e.fields[v.field] = v.description;
    }
    return e;
  }

  get retryable(): boolean {
    // Every call may be repeated safely: the token holds the whole match, so the same
    // request gives the same match again.
    if (
      this.reason === ErrorReason.RANDOM_UNAVAILABLE ||
      this.reason === ErrorReason.REQUEST_TIMEOUT ||
      this.reason === ErrorReason.CLOCK_SKEW
    )
      return true;
    // No reason: the transport's or the server's limits (docs/clients.md, "Errors").
    return this.reason === undefined && RETRYABLE_CODES.has(this.code);
  }

  get advice(): string {
    const known = this.reason !== undefined ? REASONS.get(this.reason) : undefined;
    if (known) return known[1];
    if (this.reason !== undefined) return "a reason newer than this client: act on the status code";
    return "not an error of the API (a transport or server failure)";
  }

  /** Checks the error is one the API documents, with the code of its reason. */
  checkDocumented(): void {
    check(this.domain === DOMAIN, `${this}: ErrorInfo domain ${this.domain}`);
    const known = this.reason !== undefined ? REASONS.get(this.reason) : undefined;
    check(known !== undefined, `${this}: an undocumented reason`);
    check(this.code === known[0], `${this}: wrong code for the reason`);
    if (this.reason === ErrorReason.INVALID_FIELD) {
      check(Object.keys(this.fields).length > 0, `${this}: INVALID_FIELD without a BadRequest`);
    }
  }

  override toString(): string {
    let text = `${rpcName(this.method)}: ${codeName(this.code)} ${this.reasonText ?? "(no reason)"}: ${this.rawMessage}`;
    const fields = Object.keys(this.fields);
    if (fields.length) text += ` [fields: ${fields.join(", ")}]`;
    if (Object.keys(this.metadata).length) text += ` [metadata: ${JSON.stringify(this.metadata)}]`;
    return text;
  }
}

/** The gRPC name of a status code: Code.InvalidArgument -> INVALID_ARGUMENT. */
const codeName = (code: Code) => Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
/** The RPC's name in the proto: newGame -> NewGame. */
const rpcName = (method: string) => method[0].toUpperCase() + method.slice(1);

type Service = typeof AllFivesService;
type Method = keyof Client<Service>;
type Request<M extends Method> = Parameters<Client<Service>[M]>[0];
type Response<M extends Method> = Awaited<ReturnType<Client<Service>[M]>>;

/** The generated client, with per-call deadlines, retries and decoded errors. */
class Api {
  readonly client: Client<Service>;
  calls = 0;
  retries = 0;

  constructor(
    transport: Transport,
    readonly timeoutMs: number,
  ) {
    this.client = createClient(AllFivesService, transport);
  }

  async call<M extends Method>(method: M, request: Request<M>, retries = 3): Promise<Response<M>> {
    for (let attempt = 0; ; attempt++) {
      this.calls++;
      check(this.calls <= MAX_CALLS, `more than ${MAX_CALLS} calls: the match is stuck`);
      try {
        const fn = this.client[method] as (r: Request<M>, o: { timeoutMs: number }) => Promise<Response<M>>;
        return await fn(request, { timeoutMs: this.timeoutMs });
      } catch (err) {
        if (err instanceof Inconsistency) throw err;
        const error = ApiError.from(method, err);
        if (error.retryable && attempt < retries) {
          this.retries++;
          await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
          continue;
        }
        throw error;
      }
    }
  }
}

// --- Showing the table ------------------------------------------------------------

const tileText = (t: Tile | undefined) => (t ? `[${t.a}|${t.b}]` : "[?]");
const endName = (e: End) => End[e];
const enumName = (names: Record<number, string>, v: number) => names[v] ?? String(v);
const sameTile = (x: Tile | undefined, y: Tile | undefined) =>
  x !== undefined && y !== undefined && equals(TileSchema, x, y);
const inHand = (hand: Tile[], t: Tile | undefined) => hand.some((h) => sameTile(h, t));

/** One placed tile, near half towards the centre; crosswise doubles as [n:n]. */
function placedText(p: PlacedTile, flip: boolean): string {
  const text = p.crosswise ? `[${p.near}:${p.far}]` : flip ? `[${p.far}|${p.near}]` : `[${p.near}|${p.far}]`;
  return text + (p.spinner ? "*" : "");
}

/** The layout as GameView.layout describes it: the line LEFT (outermost first), lead,
 * RIGHT; the UP and DOWN arms from the spinner outward. * marks the spinner. */
function tableLines(view: GameView): string[] {
  const arm = (a: Arm) => view.layout.filter((p) => p.arm === a).sort((x, y) => x.index - y.index);
  const line = [
    ...arm(Arm.LEFT)
      .reverse()
      .map((p) => placedText(p, true)),
    ...[...arm(Arm.LEAD), ...arm(Arm.RIGHT)].map((p) => placedText(p, false)),
  ];
  const lines = ["table " + line.join("")];
  for (const [name, a] of [
    ["up", Arm.UP],
    ["down", Arm.DOWN],
  ] as const) {
    const tiles = arm(a);
    if (tiles.length) lines.push(`  ${name.padStart(4)} ` + tiles.map((p) => placedText(p, false)).join(""));
  }
  const ends = view.openEnds.map((e) => `${endName(e.end)}=${e.pip}`).join(" ");
  lines.push(`  ends ${ends}  count ${view.count}  boneyard ${view.boneyardSize}`);
  return lines;
}

const sideName = (s: SideScore) => (s.seats.length > 1 ? "seats " : "seat ") + s.seats.join("+");
const scoresText = (v: GameView) => v.scores.map((s) => `${sideName(s)} ${s.score}`).join(", ");
const pad = (x: number | string, n: number) => String(x).padStart(n);

function sheetLines(sheet: ScoreSheet, view: GameView): string[] {
  const sides = view.scores.map(sideName);
  const lines = [
    `score sheet (target ${sheet.target}):`,
    "  hand   " + sides.map((n) => `| ${n.padStart(9 + Math.ceil(n.length / 2)).padEnd(18)} `).join(""),
    "         " + "| play settle  total ".repeat(sides.length),
  ];
  const rows = [...(sheet.carried ? [sheet.carried] : []), ...sheet.rows];
  for (const row of rows) {
    const hands = row.firstHand === row.lastHand ? `${row.firstHand}` : `${row.firstHand}-${row.lastHand}`;
    const cells = row.sides.map((s) => `| ${pad(s.play, 4)} ${pad(s.settlement, 6)} ${pad(s.total, 6)} `);
    lines.push(`  ${pad(hands, 6)} ` + cells.join(""));
  }
  if (sheet.winnerSide !== undefined) lines.push(`winner: ${sides[sheet.winnerSide]}`);
  return lines;
}

// --- Playing ----------------------------------------------------------------------

const LEVELS: Record<string, BotLevel> = { easy: BotLevel.EASY, medium: BotLevel.MEDIUM, hard: BotLevel.HARD };
const levelName = (l: BotLevel) => enumName(BotLevel, l).toLowerCase();
// What the move counter counts: every deal, play and draw (the bots' too), not passes.
const ACTIONS = new Set(["dealt", "tilePlayed", "tileDrawn"]);

/** The simple strategy: the most points, then the heaviest tile, doubles first. */
function choose(moves: LegalMove[]): LegalMove {
  const key = (m: LegalMove) => [m.points, m.tile!.a + m.tile!.b, m.tile!.a === m.tile!.b ? 1 : 0];
  return moves.reduce((best, m) => {
    const [a, b] = [key(m), key(best)];
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] > b[i] ? m : best;
    return best;
  });
}

const roundFive = (pips: number) => Math.floor((pips + 2) / 5) * 5;
const sameBytes = (x: Uint8Array, y: Uint8Array) => x.length === y.length && x.every((b, i) => b === y[i]);
const tileKey = (t: Tile | undefined) => (t ? `${t.a}|${t.b}` : "?");

/** The events as `viewer` (undefined: a spectator) may see them: a drawn tile is shown
 * only to its drawer. */
function redacted(events: Event[], viewer: number | undefined): Event[] {
  return events.map((ev) => {
    const copy = clone(EventSchema, ev);
    if (copy.kind.case === "tileDrawn" && copy.kind.value.seat !== viewer) copy.kind.value.tile = undefined;
    return copy;
  });
}

type Say = (line: string) => void;
type Changed = { state: Uint8Array; view?: GameView; events: Event[] };

/** One match, with the last token and view, every human seat's credential, and the
 * checks of every answer. */
class Match {
  token: Uint8Array = new Uint8Array();
  view!: GameView;
  creds = new Map<number, Uint8Array>(); // seat -> credential, for every human seat
  humans: number[] = [];
  handEvents: Event[] = []; // this hand's events as they came, from its Dealt
  firstDealt?: { token: Uint8Array; view: GameView }; // to show how a stale token looks
  gameEnded?: Event_GameEnded;
  botMoves = 0;
  claims = 0;

  constructor(
    readonly api: Api,
    readonly say: Say,
    readonly verbose: boolean,
    readonly bots: Map<number, BotLevel>, // the seats the server plays
    readonly claimSeats: boolean,
  ) {}

  // Requests name a seat or viewer together with its credential.
  asViewer(seat: number) {
    return { viewer: seat, credential: this.creds.get(seat)! };
  }
  asSeat(seat: number) {
    return { seat, viewer: seat, credential: this.creds.get(seat)! };
  }

  seatName(seat: number): string {
    const level = this.bots.get(seat);
    return `seat ${seat}` + (level ? ` (${levelName(level)} bot)` : "");
  }

  sideOf(seat: number): number {
    const side = this.view.scores.find((s) => s.seats.includes(seat));
    check(side !== undefined, `seat ${seat} is on no side`);
    return side.side;
  }

  /** A relay's compare-and-set holds: the new state names the one it came from. */
  checkChain(old: GameView, view: GameView): void {
    check(view.stateId.length === STATE_ID_BYTES, `a state_id of ${view.stateId.length} bytes`);
    check(sameBytes(view.previousStateId, old.stateId), "previous_state_id is not the last state_id");
    check(!sameBytes(view.stateId, old.stateId), "the state_id did not change");
  }

  async newGame(rules: MessageInitShape<typeof RulesSchema>, seed?: bigint): Promise<void> {
    const players = rules.players || 2;
    this.humans = [...Array(players).keys()].filter((s) => !this.bots.has(s));
    // One entry per seat: a bot at its level, or a human seat, claimed now (hot seat:
    // this client holds every human credential) or left open for ClaimSeat. No
    // `seats` at all: every seat a human one, open.
    const seats: MessageInitShape<typeof SeatSetupSchema>[] =
      this.bots.size || !this.claimSeats
        ? [...Array(players).keys()].map((s) =>
            this.bots.has(s) ? { bot: this.bots.get(s) } : { claim: !this.claimSeats },
          )
        : [];
    const created = await this.api.call("newGame", {
      rules,
      seed,
      seats,
      viewer: this.claimSeats ? undefined : this.humans[0],
    });
    check(created.view !== undefined, "NewGame without a view");
    this.token = created.state;
    this.view = created.view;
    const v = this.view;
    check(
      v.phase === Phase.DEALING && v.handNumber === 0 && v.moves === 0,
      "a new match is not waiting for its first deal",
    );
    check(this.token.length > 0 && this.token.length <= MAX_TOKEN_BYTES, "a long first token");
    check(v.stateId.length === STATE_ID_BYTES, "NewGame's view has no state_id");
    check(v.previousStateId.length === 0, "NewGame's view names a previous state");
    const claimed = this.claimSeats ? [] : this.humans;
    check(
      created.credentials.map((c) => c.seat).join() === claimed.join(),
      `NewGame answered credentials for seats ${created.credentials.map((c) => c.seat)}`,
    );
    for (const c of created.credentials) {
      check(c.credential.length === CREDENTIAL_BYTES, "a credential not of 16 bytes");
      this.creds.set(c.seat, c.credential);
    }
    const want = [...Array(players).keys()].map((s) =>
      create(SeatStatusSchema, {
        seat: s,
        kind: this.bots.has(s) ? SeatKind.BOT : this.claimSeats ? SeatKind.OPEN : SeatKind.CLAIMED,
        bot: this.bots.get(s) ?? BotLevel.UNSPECIFIED,
      }),
    );
    check(
      v.seats.length === want.length && v.seats.every((s, i) => equals(SeatStatusSchema, s, want[i])),
      "view.seats is not who plays each seat",
    );
    if (this.claimSeats) check(v.viewer === undefined, "NewGame without a viewer answered a seat's view");
    else check(v.viewer === this.humans[0] && !v.hand.length, "NewGame's view is not the viewer's");
    const r = v.rules as Rules;
    this.say(
      `match ${v.matchId}: ${r.players} players${r.partnership ? " in partnerships" : ""}, target ${r.target}, ` +
        `${enumName(SettlementRule, r.settlement).toLowerCase()}, ${enumName(HandSizeRule, r.handSize).toLowerCase()}`,
    );
    if (this.claimSeats) for (const seat of this.humans) await this.claim(seat);
    this.say(
      "seats: " +
        this.view.seats.map((s) => `${s.seat} ${s.bot ? `${levelName(s.bot)} bot` : "human"}`).join(", ") +
        (this.claimSeats ? " (claimed with ClaimSeat)" : " (claimed in NewGame)"),
    );
  }

  /** ClaimSeat, as a player on their own device does: only the caller learns the
   * credential. The claim key (random, drawn for this claim) makes the call's retry
   * the same claim, not a new one. */
  async claim(seat: number): Promise<void> {
    const claimKey = randomBytes(16);
    const response = await this.api.call("claimSeat", { state: this.token, seat, claimKey });
    const old = this.view;
    const v = response.view;
    const cred = response.credential;
    check(v !== undefined && cred !== undefined, "ClaimSeat without a view or a credential");
    check(cred.seat === seat, `ClaimSeat(${seat}) answered seat ${cred.seat}'s credential`);
    check(cred.credential.length === CREDENTIAL_BYTES, "a credential not of 16 bytes");
    check(![...this.creds.values()].some((c) => sameBytes(c, cred.credential)), "two seats got the same credential");
    check(v.viewer === seat && v.matchId === old.matchId, "ClaimSeat's view is not the seat's");
    check(v.moves === old.moves && v.phase === Phase.DEALING, "a claim moved the match on");
    check(!sameBytes(response.state, this.token) && response.state.length <= MAX_TOKEN_BYTES, "the token");
    this.checkChain(old, v);
    v.seats.forEach((after, i) => {
      const kind = after.seat === seat ? SeatKind.CLAIMED : old.seats[i].kind;
      check(
        after.kind === kind,
        `after claiming seat ${seat}, seat ${after.seat} is ${enumName(SeatKind, after.kind)}`,
      );
    });
    this.creds.set(seat, cred.credential);
    this.token = response.state;
    this.view = v;
    this.claims++;
  }

  /** Checks a Deal, Play or Draw answer, asked by `viewer`, against the previous view,
   * then keeps it. */
  accept(response: Changed, viewer: number, played?: LegalMove): void {
    const old = this.view;
    const view = response.view;
    const token = response.state;
    check(view !== undefined, "an answer without a view");
    check(token.length > 0 && token.length <= MAX_TOKEN_BYTES, `token of ${token.length} bytes`);
    check(!sameBytes(token, this.token), "the token did not change");
    check(view.matchId === old.matchId, "the match id changed");
    check(
      view.seats.length === old.seats.length && view.seats.every((s, i) => equals(SeatStatusSchema, s, old.seats[i])),
      "view.seats changed during play",
    );
    this.checkChain(old, view);
    const actions = response.events.filter((ev) => ACTIONS.has(ev.kind.case ?? "")).length;
    check(
      view.moves === old.moves + actions,
      `moves went ${old.moves} -> ${view.moves} over ${actions} deals, plays and draws`,
    );
    // The view and the events are the viewer's: its own hand, no tile another seat
    // drew (the bots' included).
    check(view.viewer === viewer, "not the asking seat's view");
    for (const ev of response.events) {
      if (ev.kind.case === "tileDrawn") {
        const d = ev.kind.value;
        check(
          (d.tile !== undefined) === (d.seat === viewer),
          `seat ${viewer} was shown a draw of seat ${d.seat} ${d.tile ? "with its tile" : "without the tile"}`,
        );
      }
    }
    if (response.events[0]?.kind.case === "dealt") this.handEvents = [];
    this.handEvents.push(...response.events);
    // Scores move by the points the events announce, and only by multiples of 5.
    const delta = new Map(view.scores.map((s) => [s.side, 0]));
    for (const ev of response.events) {
      const k = ev.kind;
      if (k.case === "tilePlayed") {
        const tp = k.value;
        check(tp.points === (tp.count % 5 === 0 ? tp.count : 0), `a play at count ${tp.count} scored ${tp.points}`);
        delta.set(this.sideOf(tp.seat), delta.get(this.sideOf(tp.seat))! + tp.points);
        if (this.bots.has(tp.seat)) this.botMoves++;
      } else if (k.case === "tileDrawn") {
        if (this.bots.has(k.value.seat)) this.botMoves++;
      } else if (k.case === "handEnded") {
        this.checkHandResult(k.value, view);
        for (const a of k.value.settlement) delta.set(a.side, delta.get(a.side)! + a.points);
      } else if (k.case === "gameEnded") {
        this.gameEnded = k.value;
      }
    }
    view.scores.forEach((after, i) => {
      const before = old.scores[i];
      check(after.score % 5 === 0, `score ${after.score} is not a multiple of 5`);
      check(
        after.score - before.score === delta.get(after.side),
        `${sideName(after)} went ${before.score} -> ${after.score}, the events say ${delta.get(after.side)}`,
      );
    });
    if (view.phase === Phase.PLAYING) {
      const tiles = view.handSizes.reduce((x, y) => x + y, 0) + view.boneyardSize + view.layout.length;
      check(tiles === 28, `hands, boneyard and table hold ${tiles} tiles, not 28`);
      check(view.turn !== undefined, "a hand in play without a seat on turn");
      check(!this.bots.has(view.turn), "the server left a bot's turn to the client");
      check(view.hand.length === view.handSizes[viewer], "the viewer's hand and its size");
    }
    this.checkLayout(view);
    if (played) {
      const first = response.events[0]?.kind;
      check(
        first?.case === "tilePlayed" &&
          first.value.seat === viewer &&
          sameTile(first.value.tile, played.tile) &&
          first.value.end === played.end,
        "the first event is not the tile played",
      );
      check(
        first.value.points === played.points,
        `the move promised ${played.points} points and scored ${first.value.points}`,
      );
      check(!inHand(view.hand, played.tile), "the tile played is still in hand");
    }
    this.token = token;
    this.view = view;
    this.show(response.events);
  }

  /** Every placed tile names the seat whose TilePlayed put it there. */
  checkLayout(view: GameView): void {
    const by = new Map<string, number>();
    for (const ev of this.handEvents)
      if (ev.kind.case === "tilePlayed") by.set(tileKey(ev.kind.value.tile), ev.kind.value.seat);
    check(view.layout.length === by.size, `${view.layout.length} tiles on the table, ${by.size} played`);
    for (const p of view.layout) {
      check(
        by.get(tileKey(p.tile)) === p.seat,
        `placed tile ${tileText(p.tile)} names seat ${p.seat}, the events seat ${by.get(tileKey(p.tile))}`,
      );
    }
  }

  /** Score's include_hand_events (what a device that reconnects asks for): the hand so
   * far, exactly as `viewer` saw or would have seen it. */
  checkHandEvents(got: Event[], viewer: number | undefined): void {
    const want = redacted(this.handEvents, viewer);
    check(
      got.length === want.length && got.every((ev, i) => equals(EventSchema, ev, want[i])),
      `Score's hand_events for ${viewer === undefined ? "a spectator" : `seat ${viewer}`} (${got.length} events) ` +
        `are not the hand's events as that seat saw them (${want.length})`,
    );
  }

  checkHandResult(result: HandResult, view: GameView): void {
    for (const h of result.hands) {
      const pips = h.tiles.reduce((n, t) => n + t.a + t.b, 0);
      check(
        h.pips === pips && h.rounded === roundFive(pips),
        `seat ${h.seat} holds ${pips} pips, shown as ${h.pips}/${h.rounded}`,
      );
    }
    if (result.reason !== HandEndReason.TARGET_REACHED && view.rules?.settlement === SettlementRule.OWN_PIPS_OFF) {
      for (const a of result.settlement) {
        const seats = view.scores.find((s) => s.side === a.side)?.seats ?? [];
        const owed = result.hands.filter((h) => seats.includes(h.seat)).reduce((n, h) => n + h.rounded, 0);
        check(a.points === -owed, `side ${a.side} settled ${a.points}, its hands hold ${owed}`);
      }
    }
  }

  /** Checks the view of the seat on turn before it acts. */
  checkTurnView(seen: GameView, seat: number): void {
    check(
      seen.matchId === this.view.matchId &&
        seen.moves === this.view.moves &&
        sameBytes(seen.stateId, this.view.stateId),
      "Score showed another point of the match",
    );
    check(seen.viewer === seat && seen.turn === seat, "not the view of the seat on turn");
    check(seen.hand.length === seen.handSizes[seat], "the hand and its size disagree");
    if (seen.mustDraw) {
      check(seen.legalMoves.length === 0, "must_draw with legal moves listed");
      check(seen.boneyardSize > 0, "must_draw with an empty boneyard");
    } else {
      check(seen.legalMoves.length > 0, "no legal moves, yet no must_draw");
    }
    for (const m of seen.legalMoves) {
      check(inHand(seen.hand, m.tile), `legal move ${tileText(m.tile)} not in hand`);
      check(m.points % 5 === 0, `legal move worth ${m.points}`);
      check((m.end === End.UNSPECIFIED) === (seen.layout.length === 0), "lead moves name no end, later ones do");
    }
    this.checkLayout(seen);
  }

  show(events: Event[]): void {
    // The view is the table after the whole call (the bots' moves included): draw it
    // once, after the call's last placement.
    const lastPlay = events.map((ev) => ev.kind.case).lastIndexOf("tilePlayed");
    events.forEach((ev, i) => {
      const k = ev.kind;
      if (k.case === "dealt") {
        this.say(`hand ${k.value.hand}: dealt, ${this.seatName(k.value.starter)} leads (${scoresText(this.view)})`);
      } else if (k.case === "tilePlayed" && this.verbose) {
        const tp = k.value;
        const where = tp.end === End.UNSPECIFIED ? "leads" : `on ${endName(tp.end)}`;
        this.say(
          `  ${this.seatName(tp.seat)} plays ${tileText(tp.tile)} ${where}${tp.points ? `  +${tp.points}` : ""}`,
        );
        if (i === lastPlay) for (const line of tableLines(this.view)) this.say("    " + line);
      } else if (k.case === "tileDrawn" && this.verbose) {
        this.say(`  ${this.seatName(k.value.seat)} draws ${k.value.tile ? tileText(k.value.tile) : "a tile"}`);
      } else if (k.case === "passed" && this.verbose) {
        this.say(`  ${this.seatName(k.value.seat)} passes`);
      } else if (k.case === "handEnded") {
        const r = k.value;
        const how = enumName(HandEndReason, r.reason).toLowerCase();
        const who = r.wentOut !== undefined ? `, seat ${r.wentOut} went out` : "";
        const left = r.hands
          .map((h) => `seat ${h.seat} ${h.tiles.map(tileText).join("") || "-"} (${h.pips})`)
          .join("; ");
        const settle = r.settlement.map((a) => (a.points >= 0 ? `+${a.points}` : `${a.points}`)).join(" ");
        // PlacedTile.seat: who laid what.
        const laid = this.view.seats
          .map((s) => `seat ${s.seat} ${this.view.layout.filter((p) => p.seat === s.seat).length}`)
          .join(", ");
        this.say(
          `  hand ${r.hand} ended: ${how}${who}; left ${left}; settlement ${settle}; ${scoresText(this.view)}; ` +
            `tiles laid: ${laid}`,
        );
      } else if (k.case === "gameEnded") {
        this.say(`match over: side ${k.value.winnerSide} (seats ${k.value.winnerSeats.join("+")}) wins`);
      }
    });
  }

  async play(rules: MessageInitShape<typeof RulesSchema>, seed?: bigint, probe?: ErrorProbe): Promise<GameView> {
    await this.newGame(rules, seed);
    if (probe) await probe.newGame(this);
    while (this.view.phase !== Phase.OVER) {
      if (this.view.phase === Phase.DEALING) {
        // Anyone holding the token may deal; the human seats take turns.
        const dealer = this.humans[this.view.handNumber % this.humans.length];
        this.accept(await this.api.call("deal", { state: this.token, ...this.asViewer(dealer) }), dealer);
        this.firstDealt ??= { token: this.token, view: this.view };
        continue;
      }
      const seat = this.view.turn!;
      // The seat on turn looks at the table (its hand, its legal moves) and at the hand
      // so far, as a device that reconnects would.
      const score = await this.api.call("score", {
        state: this.token,
        includeHandEvents: true,
        ...this.asViewer(seat),
      });
      const seen = score.view!;
      this.checkTurnView(seen, seat);
      this.checkHandEvents(score.handEvents, seat);
      if (probe) await probe.onTurn(this, seen);
      if (seen.mustDraw) {
        const response = await this.api.call("draw", { state: this.token, ...this.asSeat(seat) });
        const drawn = response.events[0]?.kind;
        check(
          drawn?.case === "tileDrawn" && drawn.value.seat === seat && drawn.value.tile !== undefined,
          "the drawer does not see the tile it drew",
        );
        const draws = response.events.filter((ev) => ev.kind.case === "tileDrawn").length;
        check(
          response.view?.boneyardSize === seen.boneyardSize - draws,
          "the boneyard did not shrink by the tiles drawn",
        );
        if (response.view.phase === Phase.PLAYING) {
          check(
            response.view.hand.length === seen.hand.length + 1 && inHand(response.view.hand, drawn.value.tile),
            "the tile drawn is not in hand",
          );
        }
        this.accept(response, seat);
      } else {
        const move = choose(seen.legalMoves);
        const response = await this.api.call("play", {
          state: this.token,
          tile: move.tile,
          end: move.end,
          ...this.asSeat(seat),
        });
        this.accept(response, seat, move);
      }
    }
    if (probe) await probe.over(this);
    return this.finish();
  }

  async finish(): Promise<GameView> {
    const v = this.view;
    check(v.winnerSide !== undefined, "the match is over without a winner");
    const winner = v.scores[v.winnerSide];
    check(v.winnerSeats.join() === winner.seats.join(), "winner seats and side disagree");
    check(winner.score >= v.rules!.target, `the winner has ${winner.score} of ${v.rules!.target}`);
    check(this.gameEnded?.winnerSide === v.winnerSide, "no GameEnded event naming the winner");
    // The sheet and the last hand, as a spectator (no viewer, no credential) sees them.
    const score = await this.api.call("score", { state: this.token, includeHandEvents: true });
    const sheet = score.sheet!;
    const seen = score.view!;
    check(seen.viewer === undefined && !seen.hand.length && !seen.legalMoves.length, "a spectator sees a hand");
    check(sameBytes(seen.stateId, v.stateId), "the spectator's view has another state_id");
    this.checkHandEvents(score.handEvents, undefined);
    check(sheet.target === v.rules!.target, "the sheet's target");
    check(sheet.winnerSide === v.winnerSide, "the sheet's winner");
    check(sheet.rows.length === Math.min(v.handNumber, 32), "the sheet's rows");
    check((sheet.carried !== undefined) === v.handNumber > 32, "the carried row");
    const totals = v.scores.map(() => 0);
    let hand = 1;
    for (const row of [...(sheet.carried ? [sheet.carried] : []), ...sheet.rows]) {
      check(row.firstHand === hand, `sheet row for hand ${row.firstHand}, expected ${hand}`);
      hand = row.lastHand + 1;
      for (const line of row.sides) {
        totals[line.side] += line.play + line.settlement;
        check(
          line.total === totals[line.side],
          `hand ${row.lastHand}: side ${line.side}'s total ${line.total} is not ${totals[line.side]}`,
        );
      }
    }
    check(totals.join() === v.scores.map((s) => s.score).join(), "the sheet's totals are not the scores");
    for (const line of sheetLines(sheet, v)) this.say(line);
    return v;
  }
}

// --- Provoking the documented errors ------------------------------------------------

/** The token with some bits of one byte flipped (index < 0 counts from the end). */
function flip(token: Uint8Array, index: number, bits: number): Uint8Array {
  const copy = token.slice();
  copy[index < 0 ? copy.length + index : index] ^= bits;
  return copy;
}

const tile = (a: number, b: number) => create(TileSchema, { a, b });
const PIPS = [0, 1, 2, 3, 4, 5, 6];
const ALL_TILES = PIPS.flatMap((a) => PIPS.filter((b) => b >= a).map((b) => tile(a, b)));

/** Provokes, during one match, every documented error a client can cause, checking
 * each comes back with its code, reason and details. */
class ErrorProbe {
  seen = new Set<ErrorReason>();
  turns = 0;
  lineageShown = false;

  constructor(
    readonly api: Api,
    readonly say: Say,
    // A server that took this match's seed takes client seeds: SEED_NOT_ALLOWED cannot
    // come back from it.
    readonly seeded: boolean,
  ) {}

  async expect<M extends Method>(
    reason: ErrorReason,
    method: M,
    request: Request<M>,
    want: { field?: string; metadata?: Record<string, string> } = {},
  ): Promise<ApiError> {
    try {
      await this.api.call(method, request, 0);
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      check(e.reason === reason, `expected ${reasonName(reason)}, got ${e}`);
      e.checkDocumented();
      if (want.field !== undefined) check(want.field in e.fields, `${e}: the BadRequest does not name ${want.field}`);
      for (const [key, value] of Object.entries(want.metadata ?? {})) {
        check(e.metadata[key] === value, `${e}: metadata ${key} is not ${value}`);
      }
      if (!this.seen.has(reason)) {
        this.say(`  provoked ${e}`);
        this.say(`    what a client does: ${e.advice}`);
      }
      this.seen.add(reason);
      return e;
    }
    throw new Inconsistency(`${method} succeeded; expected ${reasonName(reason)}`);
  }

  async newGame(match: Match): Promise<void> {
    const state = match.token;
    const me = match.humans[0];
    const cred = match.creds.get(me)!;
    this.say("provoking the documented errors:");
    const two = { players: 2 };
    await this.expect(ErrorReason.INVALID_FIELD, "newGame", { rules: { players: 5 } }, { field: "rules.players" });
    await this.expect(ErrorReason.INVALID_FIELD, "newGame", { rules: { target: 7 } }, { field: "rules.target" });
    await this.expect(
      ErrorReason.INVALID_FIELD,
      "newGame",
      { rules: two, seats: [{ claim: true }] },
      { field: "seats" },
    );
    await this.expect(
      ErrorReason.INVALID_FIELD,
      "newGame",
      { rules: two, seats: [{ claim: true }, { bot: BotLevel.EASY, claim: true }] },
      { field: "seats.claim" },
    );
    await this.expect(
      ErrorReason.INVALID_FIELD,
      "newGame",
      { rules: two, seats: [{ claim: true }, {}], viewer: 1 },
      { field: "viewer" },
    );
    if (!this.seeded) await this.expect(ErrorReason.SEED_NOT_ALLOWED, "newGame", { rules: two, seed: 7n });
    await this.expect(ErrorReason.INVALID_FIELD, "score", { state, viewer: 9 }, { field: "viewer" });
    await this.expect(ErrorReason.TOKEN_MALFORMED, "deal", { state: new Uint8Array() });
    await this.expect(ErrorReason.TOKEN_MALFORMED, "deal", { state: state.slice(0, 20) });
    await this.expect(ErrorReason.TOKEN_INVALID, "deal", { state: flip(state, -1, 0x01) });
    await this.expect(ErrorReason.TOKEN_INVALID, "deal", { state: flip(state, 30, 0x80) });
    // The next two rely on the token's framing (src/state/token.rs: a version byte,
    // then a key id), which is the server's business: a real client never looks
    // inside a token. Here only to see those reasons come back.
    await this.expect(ErrorReason.TOKEN_UNSUPPORTED_VERSION, "deal", { state: flip(state, 0, 0x40) });
    await this.expect(ErrorReason.TOKEN_UNKNOWN_KEY, "deal", { state: flip(state, 1, 0x40) });
    await this.expect(ErrorReason.WRONG_PHASE, "play", { state, tile: tile(0, 0), ...match.asSeat(me) });
    await this.expect(ErrorReason.WRONG_PHASE, "draw", { state, ...match.asSeat(me) });
    // Credentials: none, made up, another seat's.
    await this.expect(ErrorReason.CREDENTIAL_REQUIRED, "score", { state, viewer: me });
    await this.expect(ErrorReason.CREDENTIAL_REQUIRED, "deal", { state, viewer: me });
    await this.expect(ErrorReason.CREDENTIAL_INVALID, "score", {
      state,
      viewer: me,
      credential: new Uint8Array(CREDENTIAL_BYTES),
    });
    await this.expect(ErrorReason.CREDENTIAL_INVALID, "score", {
      state,
      viewer: me,
      credential: match.creds.get(match.humans[1])!,
    });
    for (const seat of match.bots.keys()) {
      await this.expect(ErrorReason.SEAT_IS_BOT, "score", { state, viewer: seat, credential: cred });
    }
    // A second match, its seat 0 open and seat 1 a bot: Deal waits for the claim; a
    // seat is claimed once; a bot's seat is nobody's; a credential is good in its own
    // match only; claims end at the first deal.
    const side = await this.api.call("newGame", { rules: two, seats: [{}, { bot: BotLevel.EASY }] });
    await this.expect(ErrorReason.SEATS_OPEN, "deal", { state: side.state });
    await this.expect(ErrorReason.SEAT_TAKEN, "claimSeat", { state: side.state, seat: 1 });
    const mine = await this.api.call("claimSeat", { state: side.state, seat: 0 });
    const sideCred = mine.credential!.credential;
    await this.expect(ErrorReason.SEAT_TAKEN, "claimSeat", { state: mine.state, seat: 0 });
    await this.expect(ErrorReason.SEAT_IS_BOT, "score", { state: mine.state, viewer: 1, credential: sideCred });
    await this.expect(ErrorReason.CREDENTIAL_INVALID, "score", { state, viewer: me, credential: sideCred });
    const dealt = await this.api.call("deal", { state: mine.state, viewer: 0, credential: sideCred });
    await this.expect(ErrorReason.WRONG_PHASE, "claimSeat", { state: dealt.state, seat: 0 });
    await this.clocks();
  }

  /** Turn clocks, on side matches of two (this client holding both seats): the
   * refusals a clock brings, then a match on a 1-second clock with no bank where one
   * seat stops moving. The server judges by its clock when a call arrives, so each
   * decision is checked against the times it stated (a claim refused with the moment
   * it will be taken; taken by a server whose clock then read past it; the late seat's
   * own move refused), never against how long anything took here. */
  async clocks(): Promise<void> {
    const client = this.api.client;
    const plain = await ClockedMatch.start(this.api, { players: 2 });
    await plain.deal();
    check(plain.view.clock === undefined, "a match without a clock shows clocks");
    await this.expect(ErrorReason.NO_TURN_CLOCK, "claimTimeout", plain.as(0));
    // The default clock, 30 s a move and a 60 s bank: a claim at once is long early.
    const slow = await ClockedMatch.start(this.api, { players: 2, clock: {} });
    const { clock: rulesClock, absence } = slow.view.rules!;
    check(
      rulesClock?.moveSeconds === 30 && rulesClock.bankSeconds === 60 && rulesClock.incrementSeconds === 0,
      `an empty TurnClock came back as ${JSON.stringify(rulesClock)}`,
    );
    check(
      absence?.rule === AbsenceRule.BOT && absence.bot === BotLevel.MEDIUM && absence.botTakesSeatAfter === 2,
      `the absence option came back as ${JSON.stringify(absence)}`,
    );
    await this.expect(ErrorReason.WRONG_PHASE, "leave", slow.as(1));
    await slow.deal();
    const c = slow.view.clock;
    check(
      c?.moveBeganMs !== undefined && c.turnDeadlineMs !== undefined && c.claimableAtMs !== undefined,
      "a dealt clocked match shows no deadline",
    );
    check(
      c.turnDeadlineMs === c.moveBeganMs + 90_000n &&
        c.claimableAtMs >= c.turnDeadlineMs &&
        c.bankSeconds.join() === "60,60",
      `the clocks after the deal: now ${c.nowMs}, deadline ${c.turnDeadlineMs}, banks ${c.bankSeconds}`,
    );
    const shown = Countdown.of(slow.view, slow.receivedAt)!;
    check(
      // Within 1e-6 ms: (receivedAt + d) - receivedAt is d only up to the floats' rounding.
      Math.abs(shown.timeLeftMs(slow.receivedAt)! - Number(c.turnDeadlineMs - c.nowMs)) < 1e-6,
      "the countdown on the view's arrival is not turn_deadline_ms - now_ms",
    );
    let waiting = 1 - slow.view.turn!;
    await this.expect(ErrorReason.TIMEOUT_NOT_DUE, "claimTimeout", slow.as(waiting), {
      metadata: { claimable_at_ms: String(c.claimableAtMs) },
    });
    await this.expect(ErrorReason.SEAT_NOT_HELD, "returnToSeat", slow.as(waiting));

    // [START node_clock_match]
    // One second a move and no bank: the seat on turn stops moving, and the other seat
    // claims its timeout as soon as the view it was given says it may (a claim at once
    // is refused TIMEOUT_NOT_DUE, naming the view's claimable_at_ms).
    const m = await ClockedMatch.start(this.api, { players: 2, target: 100, clock: { moveSeconds: 1, bankSeconds: 0 } });
    await m.deal();
    const late = m.view.turn!;
    waiting = 1 - late;
    const [before, dealt] = [m.token, m.view];
    const early = await this.expect(ErrorReason.TIMEOUT_NOT_DUE, "claimTimeout", m.as(waiting), {
      metadata: { claimable_at_ms: String(dealt.clock!.claimableAtMs) },
    });
    const countdown = Countdown.of(dealt, m.receivedAt)!;
    const { response: claimed, notDue } = await claimWhenDue(client, m.as(waiting), countdown);
    // [END node_clock_match]
    check(
      early.metadata.now_ms === undefined || BigInt(early.metadata.now_ms) < dealt.clock!.claimableAtMs!,
      `${early}: refused by a server whose clock read past claimable_at_ms`,
    );
    m.take(claimed.state, claimed.view!);
    let events = claimed.events;
    check(
      m.view.clock!.nowMs >= dealt.clock!.claimableAtMs!,
      `a timeout was taken at ${m.view.clock!.nowMs} by the server's clock, before its claimable_at_ms ` +
        `${dealt.clock!.claimableAtMs}`,
    );
    check(
      absentAt(events, late, AbsenceReason.TIMED_OUT) === 0 && movedBy(events.slice(1), late),
      `the claim's events do not begin with seat ${late}'s SeatAbsent (TIMED_OUT) and the bot's move for it: ` +
        events.map((e) => e.kind.case).join(", "),
    );
    let seat = m.view.seats[late];
    check(
      seat.kind === SeatKind.CLAIMED && seat.timeoutsInRow === 1 && m.view.clock!.bankSeconds[late] === 0,
      `after one timeout seat ${late} is ${enumName(SeatKind, seat.kind)}, ${seat.timeoutsInRow} timeouts in a row`,
    );
    // The late seat's move, sent from the token it had, arrives after the claim: its
    // time ran out, and nothing is applied.
    const mine = (await this.api.call("score", { state: before, viewer: late, credential: m.creds[late] })).view!;
    const move = mine.legalMoves[0] ?? { tile: mine.hand[0], end: End.UNSPECIFIED };
    await this.expect(
      ErrorReason.TURN_TIMED_OUT,
      mine.mustDraw ? "draw" : "play",
      { state: before, seat: late, credential: m.creds[late], tile: move.tile, end: move.end },
      { metadata: { turn_deadline_ms: String(dealt.clock!.turnDeadlineMs) } },
    );
    // The match goes on; the late seat's own move in time ends its run of timeouts.
    let movedAgain = false;
    for (let i = 0; i < 200 && !movedAgain; i++) {
      check(m.view.phase !== Phase.OVER, `the late seat ${late} never moved again`);
      const [mover, playing, lateMoves] = [m.view.turn, m.view.phase === Phase.PLAYING, m.late];
      events = await m.step();
      if (playing && mover === late && m.late === lateMoves && movedBy(events, late)) {
        check(m.view.seats[late].timeoutsInRow === 0, `seat ${late} moved in time and still has timeouts in a row`);
        movedAgain = true;
      }
    }
    check(movedAgain, `the late seat ${late} never moved again`);
    // Its player leaves: a bot holds the seat until it comes back.
    const left = await leave(client, m.as(late));
    m.take(left.state, left.view!);
    const at = absentAt(left.events, late, AbsenceReason.LEFT);
    const next = left.events[at + 1]?.kind;
    check(
      at >= 0 && next?.case === "botTookSeat" && next.value.seat === late,
      `Leave's events are not SeatAbsent (LEFT) then BotTookSeat: ${left.events.map((e) => e.kind.case).join(", ")}`,
    );
    seat = m.view.seats[late];
    check(
      seat.kind === SeatKind.HELD_BY_BOT && seat.absent === AbsenceReason.LEFT && seat.bot === BotLevel.MEDIUM,
      `after Leave seat ${late} is ${enumName(SeatKind, seat.kind)}, absent ${enumName(AbsenceReason, seat.absent)}`,
    );
    // The other seat plays on; the bot's moves for the seat come inside its calls.
    let botMoves = 0;
    for (let i = 0; i < 50 && !botMoves && m.view.phase !== Phase.OVER; i++) {
      check(
        !(m.view.phase === Phase.PLAYING && m.view.turn === late),
        `seat ${late}, which a bot holds, was left on turn`,
      );
      if (movedBy(await m.step(), late)) botMoves++;
    }
    check(m.view.phase !== Phase.OVER, "the match ended while the seat was away");
    const back = await returnToSeat(client, m.as(late));
    m.take(back.state, back.view!);
    seat = m.view.seats[late];
    check(
      back.events.some((e) => e.kind.case === "seatReturned" && e.kind.value.seat === late) &&
        seat.kind === SeatKind.CLAIMED &&
        seat.absent === AbsenceReason.UNSPECIFIED &&
        seat.timeoutsInRow === 0,
      `after ReturnToSeat seat ${late} is ${enumName(SeatKind, seat.kind)}, events ` +
        back.events.map((e) => e.kind.case).join(", "),
    );
    // To the end, both players back at the table.
    const over = () => m.view.phase === Phase.OVER; // read anew after each call (no narrowing)
    for (let i = 0; i < 2000 && !over(); i++) await m.step();
    check(over() && m.view.winnerSide !== undefined, "the clocked match did not end with a winner");
    this.say(
      "  turn clocks: on a 1 s clock a claim at once refused TIMEOUT_NOT_DUE with the view's claimable_at_ms, " +
        `seat ${late}'s timeout claimed by seat ${waiting} once due (${notDue} TIMEOUT_NOT_DUE waited out), ` +
        `SeatAbsent and the bot's move, its late move refused TURN_TIMED_OUT; it left (the bot moved ${botMoves} ` +
        `time(s) for it), came back, and the match ended after ${m.view.moves} moves (${m.late} own moves too late ` +
        "for this machine, claimed)",
    );
  }

  async onTurn(match: Match, seen: GameView): Promise<void> {
    const state = match.token;
    const seat = seen.turn!;
    const n = seen.rules!.players;
    const cred = match.creds.get(seat)!;
    const other = match.humans.find((s) => s !== seat)!;
    const otherCred = match.creds.get(other)!;
    this.turns++;
    const play = (t: Tile | undefined, end = End.UNSPECIFIED, at = seat, credential = cred) => ({
      state,
      seat: at,
      tile: t,
      end,
      credential,
    });
    const missing = ALL_TILES.find((t) => !inHand(seen.hand, t));

    if (this.turns === 1) {
      await this.expect(ErrorReason.WRONG_PHASE, "deal", { state });
      await this.expect(ErrorReason.WRONG_PHASE, "claimSeat", { state, seat });
      await this.expect(ErrorReason.NOT_YOUR_TURN, "play", play(seen.hand[0], End.UNSPECIFIED, other, otherCred), {
        metadata: { turn: String(seat) },
      });
      await this.expect(
        ErrorReason.NOT_YOUR_TURN,
        "draw",
        { state, seat: other, credential: otherCred },
        { metadata: { turn: String(seat) } },
      );
      await this.expect(ErrorReason.NOT_YOUR_TURN, "suggest", {
        state,
        seat: other,
        level: BotLevel.EASY,
        credential: otherCred,
      });
      await this.expect(ErrorReason.INVALID_FIELD, "play", play(seen.hand[0], End.UNSPECIFIED, n + 3), {
        field: "seat",
      });
      await this.expect(ErrorReason.INVALID_FIELD, "play", play(tile(7, 1)), { field: "tile.a" });
      await this.expect(ErrorReason.INVALID_FIELD, "play", { state, seat, credential: cred }, { field: "tile" });
      await this.expect(ErrorReason.TILE_NOT_IN_HAND, "play", play(missing));
      // Acting, looking or asking for a seat without its credential is refused before
      // the move is looked at, so the refusal is the same whatever tile is named: it
      // cannot be used to probe the seat's hand.
      for (const [credential, reason] of [
        [new Uint8Array(), ErrorReason.CREDENTIAL_REQUIRED],
        [otherCred, ErrorReason.CREDENTIAL_INVALID],
      ] as const) {
        const held = await this.expect(reason, "play", play(seen.hand[0], End.UNSPECIFIED, seat, credential));
        const absent = await this.expect(reason, "play", play(missing, End.UNSPECIFIED, seat, credential));
        check(
          held.code === absent.code &&
            held.rawMessage === absent.rawMessage &&
            JSON.stringify([held.metadata, held.fields]) === JSON.stringify([absent.metadata, absent.fields]),
          `a refusal for want of seat ${seat}'s credential differs with the tile named`,
        );
      }
      await this.expect(ErrorReason.CREDENTIAL_REQUIRED, "suggest", { state, seat, level: BotLevel.EASY });
      // One credential per request: a viewer other than the seat acting needs one of
      // its own, so it is refused.
      await this.expect(ErrorReason.CREDENTIAL_INVALID, "play", { ...play(seen.hand[0]), viewer: other });
    }
    if (seen.legalMoves.length && !this.seen.has(ErrorReason.MUST_PLAY)) {
      await this.expect(ErrorReason.MUST_PLAY, "draw", { state, seat, credential: cred });
    }
    if (!seen.layout.length && !this.seen.has(ErrorReason.END_NOT_OPEN)) {
      await this.expect(ErrorReason.END_NOT_OPEN, "play", play(seen.hand[0], End.UP));
    }
    if (!seen.layout.length) return;
    // Once each, as the chances come: a tile that fits no end, or not the end named;
    // a tile that fits several ends with none named; an end that is not open.
    const open = new Set(seen.openEnds.map((e) => e.end));
    for (const t of seen.hand) {
      const fits = new Set(seen.legalMoves.filter((m) => sameTile(m.tile, t)).map((m) => m.end));
      const others = [...open].filter((e) => !fits.has(e)).sort();
      if (!fits.size && !this.seen.has(ErrorReason.TILE_DOES_NOT_MATCH)) {
        await this.expect(ErrorReason.TILE_DOES_NOT_MATCH, "play", play(t));
      } else if (fits.size && others.length && this.turns % 7 === 0) {
        await this.expect(ErrorReason.TILE_DOES_NOT_MATCH, "play", play(t, others[0]));
      }
      if (fits.size > 1 && !this.seen.has(ErrorReason.AMBIGUOUS_END)) {
        await this.expect(ErrorReason.AMBIGUOUS_END, "play", play(t));
      }
      if (fits.size && !open.has(End.DOWN) && this.turns % 5 === 0) {
        await this.expect(ErrorReason.END_NOT_OPEN, "play", play(t, End.DOWN));
      }
    }
    if (this.turns >= 10 && !this.lineageShown && seen.legalMoves.length >= 2 && match.firstDealt) {
      await this.lineage(match, seen);
      this.lineageShown = true;
    }
  }

  /** state_id tells branches apart: a retried move gives the same id, another move from
   * the same token another id, and a relay keeping the latest id refuses both a fork
   * and a stale token by a compare-and-set on previous_state_id. */
  async lineage(match: Match, seen: GameView): Promise<void> {
    const first = match.firstDealt!;
    const old = (await this.api.call("score", { state: first.token })).view!;
    check(
      old.matchId === seen.matchId && old.moves === first.view.moves && old.moves < seen.moves,
      "an older token's view does not show fewer moves",
    );
    check(
      sameBytes(old.stateId, first.view.stateId) && !sameBytes(old.stateId, seen.stateId),
      "an older token's view does not show its own state_id",
    );
    const seat = seen.turn!;
    const play = async (move: LegalMove) =>
      (await this.api.call("play", { state: match.token, tile: move.tile, end: move.end, ...match.asSeat(seat) }))
        .view!;
    const [a, retried, b] = [
      await play(seen.legalMoves[0]),
      await play(seen.legalMoves[0]),
      await play(seen.legalMoves[1]),
    ];
    check(sameBytes(a.stateId, retried.stateId), "a retried move gave another state_id");
    check(!sameBytes(a.stateId, b.stateId), "two different moves gave the same state_id");
    check(
      sameBytes(a.previousStateId, seen.stateId) && sameBytes(b.previousStateId, seen.stateId),
      "a move's previous_state_id is not its token's state_id",
    );
    // What a relay holding seen.stateId does with these three answers.
    let latest = seen.stateId;
    const verdicts = [a, retried, b].map((v) => {
      if (sameBytes(v.previousStateId, latest)) {
        latest = v.stateId;
        return "taken";
      }
      return sameBytes(v.stateId, latest) ? "same" : "refused";
    });
    check(verdicts.join() === "taken,same,refused", `relay verdicts ${verdicts}`);
    check(!sameBytes(old.stateId, latest), "a relay would take a stale token");
    this.say(
      `  lineage: an older token still answers (moves ${old.moves} < ${seen.moves}) with its own state_id; ` +
        "a retried move gives the same state_id and another move another one, so a relay's compare-and-set " +
        "on previous_state_id takes the move, sees the retry as the same state and refuses the fork",
    );
  }

  async over(match: Match): Promise<void> {
    const state = match.token;
    const me = match.humans[0];
    await this.expect(ErrorReason.GAME_OVER, "deal", { state });
    await this.expect(ErrorReason.GAME_OVER, "play", { state, tile: tile(0, 0), ...match.asSeat(me) });
    await this.expect(ErrorReason.GAME_OVER, "draw", { state, ...match.asSeat(me) });
    const missing = [...REASONS.keys()].filter(
      (r) => !UNPROVOKABLE.has(r) && !this.seen.has(r) && !(this.seeded && r === ErrorReason.SEED_NOT_ALLOWED),
    );
    check(!missing.length, `never had the chance to provoke ${missing.map(reasonName).join(", ")}`);
    check(this.lineageShown, "never had the chance to show the state lineage");
    this.say(`provoked ${this.seen.size} documented reasons: ${[...this.seen].map(reasonName).sort().join(", ")}`);
  }
}

// --- Turn clocks ------------------------------------------------------------------

// A clocked match's token is longer: at most 896 bytes (768 without display names).
const MAX_CLOCKED_TOKEN_BYTES = 896;

/** A hot-seat match of two (this client holds both seats' credentials): the latest
 * token, the view, and when that view arrived (monotonicMs()). */
class ClockedMatch {
  token: Uint8Array = new Uint8Array();
  view!: GameView;
  receivedAt = 0;
  creds: Uint8Array[] = [];
  // The seats' own moves refused TURN_TIMED_OUT (this machine too slow for the clock),
  // each then claimed by the seat itself: counted, never expected.
  late = 0;

  private constructor(readonly api: Api) {}

  static async start(api: Api, rules: MessageInitShape<typeof RulesSchema>): Promise<ClockedMatch> {
    const m = new ClockedMatch(api);
    const answer = await api.call("newGame", { rules, seats: [{ claim: true }, { claim: true }], viewer: 0 });
    for (const c of answer.credentials) m.creds[c.seat] = c.credential;
    m.take(answer.state, answer.view!);
    return m;
  }

  /** A request for `seat`, with its credential, on the latest token. */
  as(seat: number) {
    return { state: this.token, seat, credential: this.creds[seat] };
  }

  take(state: Uint8Array, view: GameView): void {
    check(state.length > 0 && state.length <= MAX_CLOCKED_TOKEN_BYTES, `a clocked token of ${state.length} bytes`);
    [this.token, this.view, this.receivedAt] = [state, view, monotonicMs()];
  }

  async deal(): Promise<void> {
    const answer = await this.api.call("deal", { state: this.token, viewer: 0, credential: this.creds[0] });
    this.take(answer.state, answer.view!);
  }

  /** One call: a deal between hands, else the seat on turn's move (its first legal
   * move, or a draw) from its own view. A move refused TURN_TIMED_OUT changed nothing:
   * the seat claims its own timeout, and goes on from that answer. */
  async step(): Promise<Event[]> {
    if (this.view.phase === Phase.DEALING) {
      await this.deal();
      return [];
    }
    const seat = this.view.turn!;
    const credential = this.creds[seat];
    const seen = (await this.api.call("score", { state: this.token, viewer: seat, credential })).view!;
    const mine = { state: this.token, seat, viewer: seat, credential };
    let answer: { state: Uint8Array; view?: GameView; events: Event[] };
    try {
      answer = seen.mustDraw
        ? await this.api.call("draw", mine)
        : await this.api.call("play", { ...mine, tile: seen.legalMoves[0].tile, end: seen.legalMoves[0].end });
    } catch (e) {
      if (!(e instanceof ApiError) || e.reason !== ErrorReason.TURN_TIMED_OUT) throw e;
      this.late++;
      answer = await claimTimeout(this.api.client, this.as(seat));
    }
    this.take(answer.state, answer.view!);
    return answer.events;
  }
}

/** Whether the events hold a play, draw or pass of `seat`. */
function movedBy(events: Event[], seat: number): boolean {
  return events.some(
    (e) =>
      (e.kind.case === "tilePlayed" || e.kind.case === "tileDrawn" || e.kind.case === "passed") &&
      e.kind.value.seat === seat,
  );
}

/** The index of `seat`'s SeatAbsent for `why` among the events, or -1. */
function absentAt(events: Event[], seat: number, why: AbsenceReason): number {
  return events.findIndex(
    (e) => e.kind.case === "seatAbsent" && e.kind.value.seat === seat && e.kind.value.reason === why,
  );
}

async function main(): Promise<number> {
  const { values: args } = parseArgs({
    options: {
      addr: { type: "string", default: "127.0.0.1:50051" },
      transport: { type: "string", default: "grpc" }, // grpc (HTTP/2) or grpc-web (HTTP/1.1)
      players: { type: "string", default: "2" },
      partnership: { type: "boolean", default: false },
      target: { type: "string", default: "0" }, // 0: the server's default
      "winner-takes-pips": { type: "boolean", default: false },
      seed: { type: "string" }, // a replayable match: only on a server with --allow-client-seeds
      "claim-seats": { type: "boolean", default: false }, // open seats, each claimed with ClaimSeat
      bots: { type: "string", default: "" }, // by seat: easy, medium, hard or human (e.g. human,hard)
      "check-errors": { type: "boolean", default: false },
      quiet: { type: "boolean", default: false }, // hands and the sheet only
      "timeout-ms": { type: "string", default: "5000" },
    },
  });
  const usage = (why: string) => {
    console.error(`main.js: ${why}`);
    console.error(
      "usage: main.js [--addr host:port] [--transport grpc|grpc-web] [--players 2|3|4] [--claim-seats] " +
        "[--bots human,hard,...] [--check-errors] ...",
    );
    return 2;
  };
  const players = Number(args.players);
  if (![2, 3, 4].includes(players) || !["grpc", "grpc-web"].includes(args.transport)) return usage("bad arguments");
  const bots = new Map<number, BotLevel>();
  const names = args.bots ? args.bots.split(",") : [];
  for (const [seat, name] of names.entries()) {
    if (name === "human" || name === "-") continue;
    if (!(name in LEVELS) || seat >= players) return usage(`--bots: ${name} for seat ${seat}`);
    bots.set(seat, LEVELS[name]);
  }
  if (players - bots.size < 1) return usage("--bots: leave at least one seat to this client");
  if (args["check-errors"] && players - bots.size < 2) {
    return usage("--check-errors needs two human seats (one to act out of turn)");
  }
  // The client knows what to do about every reason of the proto's ErrorReason.
  const unknown = Object.values(ErrorReason).filter(
    (r): r is ErrorReason => typeof r === "number" && r !== ErrorReason.ERROR_REASON_UNSPECIFIED && !REASONS.has(r),
  );
  if (unknown.length) return usage(`no advice for ${unknown.map(reasonName).join(", ")}`);

  const baseUrl = args.addr.includes("://") ? args.addr : `http://${args.addr}`;
  const transport =
    args.transport === "grpc-web" ? createGrpcWebTransport({ baseUrl }) : createGrpcTransport({ baseUrl });
  const api = new Api(transport, Number(args["timeout-ms"]));
  const say: Say = (line) => console.log(line);
  const rules = {
    players,
    partnership: args.partnership,
    target: Number(args.target),
    settlement: args["winner-takes-pips"] ? SettlementRule.WINNER_TAKES_PIPS : SettlementRule.UNSPECIFIED,
  };
  const probe = args["check-errors"] ? new ErrorProbe(api, say, args.seed !== undefined) : undefined;
  const match = new Match(api, say, !args.quiet, bots, args["claim-seats"]);
  const started = performance.now();
  let view: GameView;
  try {
    view = await match.play(rules, args.seed !== undefined ? BigInt(args.seed) : undefined, probe);
  } catch (e) {
    if (e instanceof ApiError) {
      console.error(`allfives client: FAILED: unexpected error ${e}`);
      console.error(`  what a client does: ${e.advice}`);
    } else if (e instanceof Inconsistency) {
      const at = match.view ? ` (match ${match.view.matchId}, move ${match.view.moves})` : "";
      console.error(`allfives client: FAILED: ${e.message}${at}`);
    } else {
      console.error("allfives client: FAILED:", e);
    }
    return 1;
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const r = view.rules!;
  const table = [...bots.entries()].map(([s, l]) => `, seat ${s} the ${levelName(l)} bot`).join("");
  console.log(
    `node client (${args.transport}): ${r.players} players${r.partnership ? " in partnerships" : ""}${table}: ` +
      `match over after ${view.handNumber} hands and ${view.moves} moves (${match.botMoves} by the server's bots), ` +
      `${api.calls} calls (${api.retries} retried, ${match.claims} ClaimSeat) in ${seconds} s; every check held`,
  );
  return 0;
}

process.exitCode = await main();
