// Plays one whole match of All Fives against an allfives server, in TypeScript.
//
// The same client as examples/clients/python, on Connect (@connectrpc/connect) with
// code generated from proto/ by protoc-gen-es (`npm run generate`). Over gRPC (HTTP/2,
// @connectrpc/connect-node) by default; with --transport grpc-web over gRPC-Web
// (HTTP/1.1, fetch) through @connectrpc/connect-web, the transport a browser uses.
//
// Every seat is played by one simple strategy: from the legal moves the server lists
// for the seat on turn, the one that scores most (then the heaviest tile); a seat told
// to draw draws. The table is printed as the match goes and the score sheet at the
// end. On the way the client checks what the API promises and exits non-zero on any
// unexpected error or inconsistency. With --check-errors it also provokes every
// documented error a client can cause and checks each reason and its details.
//
//   npm ci && npm run build
//   node dist/main.js --addr 127.0.0.1:50051 --players 3
//   node dist/main.js --players 4 --partnership --seed 7 --check-errors --transport grpc-web

import { parseArgs } from "node:util";
import { create, equals, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import {
  AllFivesService,
  Arm,
  End,
  HandEndReason,
  HandSizeRule,
  Phase,
  RulesSchema,
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
  type SideScore,
  type Tile,
} from "./gen/allfives/v1/allfives_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";

const DOMAIN = "allfives.v1";
const MAX_TOKEN_BYTES = 512;
// A bound on the calls of one match: a 4-player match under "own pips off" can take a
// few thousand; far more means the loop is stuck.
const MAX_CALLS = 100_000;

// Every reason the API documents (proto/allfives/v1/allfives.proto, README "Error
// reasons"): the status code it comes with, and what a client does about it.
const REASONS: Record<string, [Code, string]> = {
  INVALID_FIELD: [Code.InvalidArgument, "a bug in the request: the BadRequest names the field to fix"],
  TOKEN_MALFORMED: [
    Code.InvalidArgument,
    "send the latest token exactly as received (raw bytes; base64 only in JSON)",
  ],
  TOKEN_UNSUPPORTED_VERSION: [
    Code.InvalidArgument,
    "a token this server version cannot read: the match cannot go on here",
  ],
  TOKEN_UNKNOWN_KEY: [
    Code.InvalidArgument,
    "sealed under a key the service no longer holds (retired): start a new match",
  ],
  TOKEN_INVALID: [
    Code.InvalidArgument,
    "altered or not from this service: restore the stored token or start anew",
  ],
  NOT_YOUR_TURN: [
    Code.FailedPrecondition,
    "refresh the view (Score); the seat in metadata 'turn' is to act",
  ],
  TILE_NOT_IN_HAND: [Code.FailedPrecondition, "refresh the view and choose from its legal_moves"],
  TILE_DOES_NOT_MATCH: [
    Code.FailedPrecondition,
    "choose from legal_moves: they list every tile and end that fit",
  ],
  END_NOT_OPEN: [
    Code.FailedPrecondition,
    "name an end from open_ends (UP and DOWN open once the spinner has both sides)",
  ],
  MUST_PLAY: [Code.FailedPrecondition, "the seat holds a playable tile: Play one of legal_moves"],
  AMBIGUOUS_END: [Code.FailedPrecondition, "name the end: legal_moves has one entry per tile and end"],
  WRONG_PHASE: [
    Code.FailedPrecondition,
    "check view.phase: Deal in PHASE_DEALING, Play and Draw in PHASE_PLAYING",
  ],
  GAME_OVER: [Code.FailedPrecondition, "the match is over: show the sheet (Score) and offer a new match"],
  BONEYARD_EMPTY: [
    Code.FailedPrecondition,
    "cannot happen in a well-formed match (empty boneyard: automatic pass): a bug",
  ],
  RANDOM_UNAVAILABLE: [Code.Unavailable, "the server had no randomness: retry after a short wait"],
};
// Codes without an ErrorInfo worth retrying: no connection, calls shed, deadlines.
const RETRYABLE_CODES = new Set([Code.Unavailable, Code.ResourceExhausted, Code.DeadlineExceeded, Code.Canceled]);
// Reasons a client cannot cause on purpose against a healthy server.
const UNPROVOKABLE = new Set(["BONEYARD_EMPTY", "RANDOM_UNAVAILABLE"]);

/** The server's answer breaks a promise of the API. */
class Inconsistency extends Error {}

function check(ok: boolean, what: string): asserts ok {
  if (!ok) throw new Inconsistency(what);
}

/** A refused call, with the google.rpc details of its status. */
class ApiError extends Error {
  reason?: string;
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
      e.reason = info.reason;
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
    if (this.reason === "RANDOM_UNAVAILABLE") return true;
    // No reason: the transport's or the server's limits (docs/clients.md, "Errors").
    return this.reason === undefined && RETRYABLE_CODES.has(this.code);
  }

  get advice(): string {
    const known = this.reason !== undefined ? REASONS[this.reason] : undefined;
    return known ? known[1] : "not an error of the API (a transport or server failure)";
  }

  /** Checks the error is one the API documents, with the code of its reason. */
  checkDocumented(): void {
    check(this.domain === DOMAIN, `${this}: ErrorInfo domain ${this.domain}`);
    const known = this.reason !== undefined ? REASONS[this.reason] : undefined;
    check(known !== undefined, `${this}: an undocumented reason`);
    check(this.code === known[0], `${this}: wrong code for the reason`);
    if (this.reason === "INVALID_FIELD") {
      check(Object.keys(this.fields).length > 0, `${this}: INVALID_FIELD without a BadRequest`);
    }
  }

  override toString(): string {
    let text = `${rpcName(this.method)}: ${codeName(this.code)} ${this.reason ?? "(no reason)"}: ${this.rawMessage}`;
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
        const fn = this.client[method] as (
          r: Request<M>,
          o: { timeoutMs: number },
        ) => Promise<Response<M>>;
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
    ...arm(Arm.LEFT).reverse().map((p) => placedText(p, true)),
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

type Say = (line: string) => void;
type Changed = { state: Uint8Array; view?: GameView; events: Event[] };

/** One match, with the last token and view, and the checks of every answer. */
class Match {
  token: Uint8Array = new Uint8Array();
  view!: GameView;
  firstDealt?: { token: Uint8Array; moves: number }; // to show how a stale token looks
  gameEnded?: Event_GameEnded;

  constructor(
    readonly api: Api,
    readonly say: Say,
    readonly verbose: boolean,
  ) {}

  sideOf(seat: number): number {
    const side = this.view.scores.find((s) => s.seats.includes(seat));
    check(side !== undefined, `seat ${seat} is on no side`);
    return side.side;
  }

  /** Checks a Deal, Play or Draw answer against the previous view, then keeps it. */
  accept(response: Changed, played?: { seat: number; move: LegalMove }): void {
    const old = this.view;
    const view = response.view;
    const token = response.state;
    check(view !== undefined, "an answer without a view");
    check(token.length > 0 && token.length <= MAX_TOKEN_BYTES, `token of ${token.length} bytes`);
    check(!sameBytes(token, this.token), "the token did not change");
    check(view.matchId === old.matchId, "the match id changed");
    check(view.moves === old.moves + 1, `moves went ${old.moves} -> ${view.moves}`);
    // Scores move by the points the events announce, and only by multiples of 5.
    const delta = new Map(view.scores.map((s) => [s.side, 0]));
    for (const ev of response.events) {
      const k = ev.kind;
      if (k.case === "tilePlayed") {
        const tp = k.value;
        check(tp.points === (tp.count % 5 === 0 ? tp.count : 0), `a play at count ${tp.count} scored ${tp.points}`);
        delta.set(this.sideOf(tp.seat), delta.get(this.sideOf(tp.seat))! + tp.points);
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
    }
    if (played) {
      const first = response.events[0]?.kind;
      check(
        first?.case === "tilePlayed" &&
          first.value.seat === played.seat &&
          sameTile(first.value.tile, played.move.tile) &&
          first.value.end === played.move.end,
        "the first event is not the tile played",
      );
      check(
        first.value.points === played.move.points,
        `the move promised ${played.move.points} points and scored ${first.value.points}`,
      );
      check(!inHand(view.hand, played.move.tile), "the tile played is still in hand");
    }
    this.token = token;
    this.view = view;
    this.show(response.events);
  }

  checkHandResult(result: HandResult, view: GameView): void {
    for (const h of result.hands) {
      const pips = h.tiles.reduce((n, t) => n + t.a + t.b, 0);
      check(
        h.pips === pips && h.rounded === roundFive(pips),
        `seat ${h.seat} holds ${pips} pips, shown as ${h.pips}/${h.rounded}`,
      );
    }
    if (
      result.reason !== HandEndReason.TARGET_REACHED &&
      view.rules?.settlement === SettlementRule.OWN_PIPS_OFF
    ) {
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
      seen.matchId === this.view.matchId && seen.moves === this.view.moves,
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
  }

  show(events: Event[]): void {
    for (const ev of events) {
      const k = ev.kind;
      if (k.case === "dealt") {
        this.say(`hand ${k.value.hand}: dealt, seat ${k.value.starter} leads (${scoresText(this.view)})`);
      } else if (k.case === "tilePlayed" && this.verbose) {
        const tp = k.value;
        const where = tp.end === End.UNSPECIFIED ? "leads" : `on ${endName(tp.end)}`;
        this.say(`  seat ${tp.seat} plays ${tileText(tp.tile)} ${where}${tp.points ? `  +${tp.points}` : ""}`);
        for (const line of tableLines(this.view)) this.say("    " + line);
      } else if (k.case === "tileDrawn" && this.verbose) {
        this.say(`  seat ${k.value.seat} draws ${tileText(k.value.tile)}`);
      } else if (k.case === "passed" && this.verbose) {
        this.say(`  seat ${k.value.seat} passes`);
      } else if (k.case === "handEnded") {
        const r = k.value;
        const how = enumName(HandEndReason, r.reason).toLowerCase();
        const who = r.wentOut !== undefined ? `, seat ${r.wentOut} went out` : "";
        const left = r.hands
          .map((h) => `seat ${h.seat} ${h.tiles.map(tileText).join("") || "-"} (${h.pips})`)
          .join("; ");
        const settle = r.settlement.map((a) => (a.points >= 0 ? `+${a.points}` : `${a.points}`)).join(" ");
        this.say(`  hand ${r.hand} ended: ${how}${who}; left ${left}; settlement ${settle}; ${scoresText(this.view)}`);
      } else if (k.case === "gameEnded") {
        this.say(`match over: side ${k.value.winnerSide} (seats ${k.value.winnerSeats.join("+")}) wins`);
      }
    }
  }

  async play(rules: MessageInitShape<typeof RulesSchema>, seed?: bigint, probe?: ErrorProbe): Promise<GameView> {
    const created = await this.api.call("newGame", { rules, seed });
    check(created.view !== undefined, "NewGame without a view");
    this.token = created.state;
    this.view = created.view;
    const v = this.view;
    check(
      v.phase === Phase.DEALING && v.handNumber === 0 && v.moves === 0,
      "a new match is not waiting for its first deal",
    );
    check(this.token.length <= MAX_TOKEN_BYTES, "a long first token");
    const r = v.rules as Rules;
    this.say(
      `match ${v.matchId}: ${r.players} players${r.partnership ? " in partnerships" : ""}, target ${r.target}, ` +
        `${enumName(SettlementRule, r.settlement).toLowerCase()}, ${enumName(HandSizeRule, r.handSize).toLowerCase()}`,
    );
    if (probe) await probe.newGame(this);
    while (this.view.phase !== Phase.OVER) {
      if (this.view.phase === Phase.DEALING) {
        this.accept(await this.api.call("deal", { state: this.token }));
        this.firstDealt ??= { token: this.token, moves: this.view.moves };
        continue;
      }
      const seat = this.view.turn!;
      // The seat on turn looks at the table: its hand and its legal moves.
      const seen = (await this.api.call("score", { state: this.token, viewer: seat })).view!;
      this.checkTurnView(seen, seat);
      if (probe) await probe.onTurn(this, seen);
      if (seen.mustDraw) {
        const response = await this.api.call("draw", { state: this.token, seat, viewer: seat });
        const drawn = response.events[0]?.kind;
        check(
          drawn?.case === "tileDrawn" && drawn.value.seat === seat && drawn.value.tile !== undefined,
          "the drawer does not see the tile it drew",
        );
        check(response.view?.boneyardSize === seen.boneyardSize - 1, "the boneyard did not shrink by one");
        if (response.view.phase === Phase.PLAYING) {
          check(
            response.view.hand.length === seen.hand.length + 1 && inHand(response.view.hand, drawn.value.tile),
            "the tile drawn is not in hand",
          );
        }
        this.accept(response);
      } else {
        const move = choose(seen.legalMoves);
        const response = await this.api.call("play", {
          state: this.token,
          seat,
          tile: move.tile,
          end: move.end,
          viewer: seat,
        });
        this.accept(response, { seat, move });
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
    // The sheet, as a spectator sees it.
    const score = await this.api.call("score", { state: this.token });
    const sheet = score.sheet!;
    const seen = score.view!;
    check(seen.viewer === undefined && !seen.hand.length && !seen.legalMoves.length, "a spectator sees a hand");
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
  seen = new Set<string>();
  turns = 0;

  constructor(
    readonly api: Api,
    readonly say: Say,
  ) {}

  async expect<M extends Method>(
    reason: string,
    method: M,
    request: Request<M>,
    want: { field?: string; metadata?: Record<string, string> } = {},
  ): Promise<void> {
    try {
      await this.api.call(method, request, 0);
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      check(e.reason === reason, `expected ${reason}, got ${e}`);
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
      return;
    }
    throw new Inconsistency(`${method} succeeded; expected ${reason}`);
  }

  async newGame(match: Match): Promise<void> {
    const state = match.token;
    this.say("provoking the documented errors:");
    await this.expect("INVALID_FIELD", "newGame", { rules: { players: 5 } }, { field: "rules.players" });
    await this.expect("INVALID_FIELD", "newGame", { rules: { target: 7 } }, { field: "rules.target" });
    await this.expect("INVALID_FIELD", "score", { state, viewer: 9 }, { field: "viewer" });
    await this.expect("TOKEN_MALFORMED", "deal", { state: new Uint8Array() });
    await this.expect("TOKEN_MALFORMED", "deal", { state: state.slice(0, 20) });
    await this.expect("TOKEN_INVALID", "deal", { state: flip(state, -1, 0x01) });
    await this.expect("TOKEN_INVALID", "deal", { state: flip(state, 30, 0x80) });
    // The next two rely on the token's framing (src/state/token.rs: a version byte,
    // then a key id), which is the server's business: a real client never looks
    // inside a token. Here only to see those reasons come back.
    await this.expect("TOKEN_UNSUPPORTED_VERSION", "deal", { state: flip(state, 0, 0x40) });
    await this.expect("TOKEN_UNKNOWN_KEY", "deal", { state: flip(state, 1, 0x40) });
    await this.expect("WRONG_PHASE", "play", { state, seat: 0, tile: tile(0, 0) });
    await this.expect("WRONG_PHASE", "draw", { state, seat: 0 });
  }

  async onTurn(match: Match, seen: GameView): Promise<void> {
    const state = match.token;
    const seat = seen.turn!;
    const n = seen.rules!.players;
    this.turns++;
    const play = (t: Tile | undefined, end = End.UNSPECIFIED, at = seat) => ({ state, seat: at, tile: t, end });

    if (this.turns === 1) {
      await this.expect("WRONG_PHASE", "deal", { state });
      await this.expect("NOT_YOUR_TURN", "play", play(seen.hand[0], End.UNSPECIFIED, (seat + 1) % n), {
        metadata: { turn: String(seat) },
      });
      await this.expect("NOT_YOUR_TURN", "draw", { state, seat: (seat + 1) % n }, { metadata: { turn: String(seat) } });
      await this.expect("INVALID_FIELD", "play", play(seen.hand[0], End.UNSPECIFIED, n + 3), { field: "seat" });
      await this.expect("INVALID_FIELD", "play", play(tile(7, 1)), { field: "tile.a" });
      await this.expect("INVALID_FIELD", "play", { state, seat }, { field: "tile" });
      const missing = ALL_TILES.find((t) => !inHand(seen.hand, t));
      await this.expect("TILE_NOT_IN_HAND", "play", play(missing));
    }
    if (seen.legalMoves.length && !this.seen.has("MUST_PLAY")) {
      await this.expect("MUST_PLAY", "draw", { state, seat });
    }
    if (!seen.layout.length && !this.seen.has("END_NOT_OPEN")) {
      await this.expect("END_NOT_OPEN", "play", play(seen.hand[0], End.UP));
    }
    if (!seen.layout.length) return;
    // Once each, as the chances come: a tile that fits no end, or not the end named;
    // a tile that fits several ends with none named; an end that is not open.
    const open = new Set(seen.openEnds.map((e) => e.end));
    for (const t of seen.hand) {
      const fits = new Set(seen.legalMoves.filter((m) => sameTile(m.tile, t)).map((m) => m.end));
      const other = [...open].filter((e) => !fits.has(e)).sort();
      if (!fits.size && !this.seen.has("TILE_DOES_NOT_MATCH")) {
        await this.expect("TILE_DOES_NOT_MATCH", "play", play(t));
      } else if (fits.size && other.length && this.turns % 7 === 0) {
        await this.expect("TILE_DOES_NOT_MATCH", "play", play(t, other[0]));
      }
      if (fits.size > 1 && !this.seen.has("AMBIGUOUS_END")) {
        await this.expect("AMBIGUOUS_END", "play", play(t));
      }
      if (fits.size && !open.has(End.DOWN) && this.turns % 5 === 0) {
        await this.expect("END_NOT_OPEN", "play", play(t, End.DOWN));
      }
    }
    if (this.turns === 10 && match.firstDealt) {
      // An older token still works (the server keeps nothing) and starts a branch; its
      // view shows fewer moves, which is how a client spots a stale token.
      const old = (await this.api.call("score", { state: match.firstDealt.token })).view!;
      check(
        old.matchId === seen.matchId && old.moves === match.firstDealt.moves && old.moves < seen.moves,
        "an older token's view does not show fewer moves",
      );
      this.say(
        `  an older token still answers: moves ${old.moves} < ${seen.moves}, ` +
          "so a client keeping the latest token can tell it is stale",
      );
    }
  }

  async over(match: Match): Promise<void> {
    const state = match.token;
    await this.expect("GAME_OVER", "deal", { state });
    await this.expect("GAME_OVER", "play", { state, seat: 0, tile: tile(0, 0) });
    await this.expect("GAME_OVER", "draw", { state, seat: 0 });
    const missing = Object.keys(REASONS).filter((r) => !UNPROVOKABLE.has(r) && !this.seen.has(r));
    check(!missing.length, `never had the chance to provoke ${missing.join(", ")}`);
    this.say(`provoked ${this.seen.size} documented reasons: ${[...this.seen].sort().join(", ")}`);
  }
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
      seed: { type: "string" }, // a replayable match; leave out for real play
      "check-errors": { type: "boolean", default: false },
      quiet: { type: "boolean", default: false }, // hands and the sheet only
      "timeout-ms": { type: "string", default: "5000" },
    },
  });
  const players = Number(args.players);
  if (![2, 3, 4].includes(players) || !["grpc", "grpc-web"].includes(args.transport)) {
    console.error("usage: main.js [--addr host:port] [--transport grpc|grpc-web] [--players 2|3|4] ...");
    return 2;
  }
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
  const probe = args["check-errors"] ? new ErrorProbe(api, say) : undefined;
  const match = new Match(api, say, !args.quiet);
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
  console.log(
    `node client (${args.transport}): ${r.players} players${r.partnership ? " in partnerships" : ""}: match over ` +
      `after ${view.handNumber} hands and ${view.moves} moves, ${api.calls} calls (${api.retries} retried) ` +
      `in ${seconds} s; every check held`,
  );
  return 0;
}

process.exitCode = await main();
