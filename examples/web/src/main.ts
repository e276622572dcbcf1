// The page: a new-match form, the table (src/table.ts) and its controls, driven by the
// allfives service over gRPC-Web (@connectrpc/connect-web, code generated from
// ../../proto). The page keeps the state token, its seat and the seat's credential in
// localStorage, so a reload continues the match. The other seats are the server's
// bots (they move within the page's own calls) or friends on other devices, who join
// by an invite link (#join=<token>) and claim a seat; on a server with a match store
// every device follows the match through a Watch stream, so a friend's move (and a
// move made in another tab) is pushed to the page as it happens. The server is the
// page's host at port 50051 unless the address names another: ?server=http://host:port.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import {
  AbsenceReason,
  AbsenceRule,
  AllFivesService,
  BotLevel,
  GameViewSchema,
  End,
  HandEndReason,
  Phase,
  SeatKind,
  type Event,
  type GameView,
  type LegalMove,
  type ScoreSheet,
  type Tile,
  type WatchChange,
} from "./gen/allfives/v1/allfives_pb.js";
import { renderTable, seatLabel, tileKey, type TableUi } from "./table.js";
import { LANGUAGES, T, dir, isLang, lang, pickLanguage, setLanguage, type TextKey } from "./lang/index.js";
import { list, num } from "./lang/util.js";
import {
  howLong,
  isNetworkFailure,
  onEnd,
  pipName,
  levelName,
  playAndSettlement,
  reasonOf,
  refusesSaved,
  seatName,
  sentenceFor,
  setNames,
  tileName,
  whyUnreachable,
} from "./words.js";
import { ErrorReason } from "./gen/allfives/v1/allfives_pb.js";
import { normaliseCode } from "./code.js";
import { Countdown, claimWhenDue, monotonicMs, retryable } from "./clock.js";
import { PresenceClock, clockText } from "./times.js";
import { renderSVG } from "uqr";

const params = new URLSearchParams(window.location.search);
// By default the service on the page's own host (127.0.0.1 when the page is opened
// there; the machine's address when a phone on the same network opens it), port 50051.
const SERVER = (params.get("server") ?? `http://${window.location.hostname || "127.0.0.1"}:50051`).replace(/\/+$/, "");
const STORAGE_KEY = `allfives-web:${SERVER}`;
const JOINING_KEY = `${STORAGE_KEY}:joining`;
const NAME_KEY = "allfives-name";
const CALL_TIMEOUT_MS = 15_000;

const client = createClient(AllFivesService, createGrpcWebTransport({ baseUrl: SERVER }));

// --- Storage: the token, the seat and its credential, base64. -----------------------
interface Saved {
  state: string;
  credential: string;
  /** The page's seat (0-based); absent in what older pages saved: seat 0. */
  seat?: number;
  /** The match's id (GameView.match_id). */
  match?: string;
  /** Hot seat: every seat played at this screen, with its credential (base64). */
  local?: [number, string][];
}
interface Held {
  state: Uint8Array;
  credential: Uint8Array;
  seat: number;
  match?: string;
  /** Hot seat: every seat played at this screen (this one among them) and its credential. */
  local?: Map<number, Uint8Array>;
}
const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const unb64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
// The invite link carries a token in the address's fragment (never sent to a server),
// base64url so it needs no escaping.
const b64url = (bytes: Uint8Array) => b64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const unb64url = (text: string) => unb64(text.replace(/-/g, "+").replace(/_/g, "/"));
// Saved in the tab's sessionStorage and in localStorage: a reload continues the tab's
// own match (two windows of one browser may play two seats of one match), and a new
// tab (or the browser started again) the last match played.
function load(): Held | undefined {
  try {
    const text = sessionStorage.getItem(STORAGE_KEY) ?? localStorage.getItem(STORAGE_KEY);
    const saved = JSON.parse(text ?? "null") as Saved | null;
    return saved
      ? {
          state: unb64(saved.state),
          credential: unb64(saved.credential),
          seat: saved.seat ?? 0,
          match: saved.match,
          local: saved.local ? new Map(saved.local.map(([seat, c]) => [seat, unb64(c)])) : undefined,
        }
      : undefined;
  } catch {
    return undefined;
  }
}
function save() {
  if (!game || spectating()) return;
  const saved: Saved = {
    state: b64(game.state),
    credential: b64(game.credential),
    seat: you,
    match: game.view.matchId,
    local: game.local ? [...game.local].map(([seat, c]) => [seat, b64(c)]) : undefined,
  };
  for (const store of [sessionStorage, localStorage]) store.setItem(STORAGE_KEY, JSON.stringify(saved));
}
function forget() {
  for (const store of [sessionStorage, localStorage]) store.removeItem(STORAGE_KEY);
}
/** Forgets the match `match` where it is the one saved (another tab may have saved another since). */
function forgetMatch(match: string) {
  for (const store of [sessionStorage, localStorage]) {
    try {
      const saved = JSON.parse(store.getItem(STORAGE_KEY) ?? "null") as Saved | null;
      if (saved && (saved.match ?? match) === match) store.removeItem(STORAGE_KEY);
    } catch {
      store.removeItem(STORAGE_KEY);
    }
  }
}

// --- What the page knows. ------------------------------------------------------------
interface Game extends Held {
  view: GameView;
  sheet?: ScoreSheet;
  /** What happened, each line said in the page's language when it is shown. */
  log: LogLine[];
  /** Counts the times the log was rebuilt (a catch-up): the page's list is then redrawn. */
  logVersion: number;
  /** Every state id the page has taken (base64): an answer or a pushed change that
   * brings one again (the page's own move comes both ways) is not taken twice. */
  seen: Set<string>;
  /** When the view arrived, by monotonicMs(): its clock is counted down from then. */
  receivedAt: number;
}
/**
 * A line of the log: its words, the hand it belongs to, and whether it is one of the
 * hand's history (a catch-up or Score's include_hand_events reports those again; a
 * seat's absence, a bot taking it and its return are not among them).
 */
interface LogLine {
  say: () => string;
  hand: number;
  history: boolean;
}
const CLOCK_EVENTS = new Set(["seatAbsent", "botTookSeat", "seatReturned"]);
const logLine = (e: Event, view: GameView): LogLine => ({
  say: () => describe(e, view),
  hand: view.handNumber,
  history: !CLOCK_EVENTS.has(e.kind.case ?? ""),
});
let game: Game | undefined;
/** The page's seat: 0 for the match's maker, the claimed seat for a friend; -1 for a
 * spectator (#watch=<match id>), who holds no seat, no token and no credential. */
let you = 0;
const SPECTATOR = -1;
const spectating = () => you === SPECTATOR;
let selected: string | undefined;
let suggested: LegalMove | undefined;
let hint = "";
/** A call is in flight. */
let calling = false;
/** The focus goes back to the table's next control once the page is idle again (a
 * move made from the table, a match started): see render(). The player's focus put
 * anywhere else meanwhile (the log, the language, a name) cancels it. */
let refocus = false;
document.addEventListener("focusin", (e) => {
  const to = e.target as Element | null;
  if (to && !tableContent.contains(to) && !["draw", "deal", "rematch", "suggest"].includes(to.id)) refocus = false;
});
/** Answers being played back (one at a time, in the order they came). */
let playingBack = 0;
let playbacks: Promise<void> = Promise.resolve();
/** A call in flight, or an answer being played back. */
const working = () => calling || playingBack > 0;
/** The page takes no input: a call in flight, an answer being played back, or the
 * server out of reach (offline(): the moves wait until the connection is back). */
const isBusy = () => working() || offline();
/** Says on the page (data-state) whether it is working: the tests wait for idle. */
function settle() {
  document.body.dataset.state = working() ? "busy" : "idle";
}

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const form = $<HTMLFormElement>("new-match");
/** "Join with a code", shown with the new-match form. */
const codeForm = $<HTMLFormElement>("code-join");
function hideForms() {
  form.hidden = true;
  codeForm.hidden = true;
}
const tableContent = document.getElementById("table-content") as unknown as SVGGElement;

/** The error shown says a call got no answer at all (it goes once the stream is back). */
let errorIsNetwork = false;
function showError(text: string, network = false) {
  const el = $("error");
  el.textContent = text;
  el.hidden = text === "";
  errorIsNetwork = network && text !== "";
}

/** A refusal of the page's own, not the server's: its message is the sentence. */
class PageRefusal extends Error {}

/**
 * Runs one call; a refusal becomes a plain sentence on the page and changes nothing.
 * Returns the error, if there was one.
 */
async function call(what: () => Promise<void>): Promise<unknown> {
  if (working()) return undefined;
  calling = true;
  // A move made from the table (or Draw, Deal, Rematch): the focus comes back to the
  // table's next control once the answer is shown (the table is drawn anew meanwhile).
  const active = document.activeElement;
  if (active && (tableContent.contains(active) || ["draw", "deal", "rematch", "suggest"].includes(active.id))) refocus = true;
  settle();
  showError("");
  const from = game && b64(game.view.stateId);
  try {
    await what();
    // An answer: the server is in reach (a call that got none before is over).
    if (offlineSaid && game) setConnected(true);
  } catch (err) {
    // No answer at all.
    const network = isNetworkFailure(err);
    // Or the connection unavailable (UNAVAILABLE without a refusal of the server's own,
    // nor a proxy's HTTP error): either way the page is out of reach for now.
    const unavailable =
      network ||
      (err instanceof ConnectError && err.code === Code.Unavailable && reasonOf(err) === undefined && !/^HTTP \d{3}$/.test(err.rawMessage));
    // A match under way reached the server before: a player's sentence, not why a
    // server cannot be reached at all (kept for a page that never reached it).
    const reach = network && !game ? await whyUnreachable(SERVER) : undefined;
    // A move made while the page claimed its own seat's timeout, refused because the
    // claim went first: it came too late, not after another device's move.
    const late = reasonOf(err) === ErrorReason.STATE_STALE && from !== undefined && ownClaimOf === from;
    showError(
      err instanceof PageRefusal ? err.message : late ? T.refusals[ErrorReason.TURN_TIMED_OUT] : network && game ? T.moveLost : sentenceFor(err, reach),
      network,
    );
    // Another device or tab moved first: the stream brings the newer state (else the
    // page watches again).
    if (reasonOf(err) === ErrorReason.STATE_STALE && from !== undefined) catchUpAfterStale(from);
    // The page's own move came too late: the match goes on only once the timeout is claimed.
    if (reasonOf(err) === ErrorReason.TURN_TIMED_OUT) claimOwnTimeout();
    // The server restarted (its token key new) or forgot the match: the match is gone.
    if (game && matchGone(err)) lose(err);
    // No answer at all: the page is out of reach until its stream opens again, which
    // it does at once (a stream that still looks alive may be on the connection that
    // failed; if the server is in reach, the new stream's first message says so now,
    // not at the next heartbeat, 15 s by default). (Only while a stream follows the
    // match, which says when it is back: a match over against bots alone has none, and
    // its Rematch or New match stays to be tapped again.)
    else if (game && unavailable && watching && !watching.signal.aborted && watchesOn(game) && !watchGaveUp) {
      setConnected(false);
      watch();
    }
    console.warn("allfives call failed:", err);
    return err;
  } finally {
    calling = false;
    render();
    // Not used by that render because the page is cut off: the moves wait, maybe for
    // minutes, and the focus is not taken then. (Busy playing back a pushed change
    // that brought the answer's state first, it is used once that is shown.)
    if (offline()) refocus = false;
    settle();
  }
  return undefined;
}

/** How long after STATE_STALE the stream has to bring a newer state (it is usually on
 * its way: the move that made the page's state stale) before the page watches again. */
const STALE_WAIT_MS = 1500;
/**
 * After STATE_STALE from the state `from`: if the page still shows it STALE_WAIT_MS
 * later, its stream missed the newer state, and it watches again (a healthy stream
 * torn down at once would cost the others a blip of this seat's presence).
 */
function catchUpAfterStale(from: string) {
  const g = game;
  window.setTimeout(() => {
    if (g && game === g && b64(g.view.stateId) === from) watch();
  }, STALE_WAIT_MS);
}

const me = () => ({ viewer: you, credential: game!.credential });
const opts = () => ({ timeoutMs: CALL_TIMEOUT_MS });

function startGame(held: Held, view: GameView, sheet?: ScoreSheet, events: Event[] = []) {
  stopClaim();
  game = { ...held, match: view.matchId, view, sheet, log: [], logVersion: 0, seen: new Set([b64(view.stateId)]), receivedAt: monotonicMs() };
  you = held.seat;
  for (const e of logged(events)) game.log.push(logLine(e, view));
  if (!spectating()) save();
  setConnected(true);
  watch();
  // The table from the page's top, wherever the form that made it had been scrolled to
  // (a page that fits the screen would otherwise keep what scroll the shorter page
  // leaves; a friend's invite is scrolled into view after this).
  window.scrollTo(0, 0);
}

/**
 * Takes an answer's (or a pushed change's) token, view and events, and the sheet when
 * a hand is over; a state the page has taken already is left alone. `catchUp`: the
 * view replaces what the page showed, and the events are the hand's from its deal.
 * `receivedAt`: monotonicMs() when the answer arrived (by default, now), from when its
 * clock is counted down. `pushed`: a change the Watch stream brought (see later()).
 */
async function take(
  answer: { state?: Uint8Array; view?: GameView; events?: Event[] },
  { catchUp = false, pushed = false, receivedAt = monotonicMs() }: { catchUp?: boolean; pushed?: boolean; receivedAt?: number } = {},
) {
  const g = game!;
  let before: GameView | undefined;
  let marks: number[] = [];
  if (answer.view) {
    const id = b64(answer.view.stateId);
    if (g.seen.has(id)) return;
    g.seen.add(id);
    // A state older than what the page shows (a call's answer that arrived after the
    // stream had brought a later state): never go back to it.
    if (!later(answer.view, g.view, pushed)) return;
    before = g.view;
    g.view = answer.view;
    g.receivedAt = receivedAt;
    // A claim of the state before is over: the seat on turn moved, or its timeout was taken.
    if (claiming && claiming.state !== id) stopClaim();
  }
  if (answer.state && answer.state.length > 0) g.state = answer.state;
  const at = g.view;
  if (catchUp) {
    g.log = caughtUp(g.log, answer.events ?? [], before, at);
    g.logVersion++;
  } else {
    // A pushed change (Watch) carries the hand's events only: what happened to the
    // seats comes first, told by how they changed.
    const events = answer.events ?? [];
    if (!events.some((e) => CLOCK_EVENTS.has(e.kind.case ?? ""))) g.log.push(...seatChanges(before, at));
    const start = g.log.length;
    const kept = logged(events);
    for (const e of kept) g.log.push(logLine(e, at));
    // Where each tile played ends in the log: the log follows the playback tile by tile.
    marks = kept.flatMap((e, j) => (e.kind.case === "tilePlayed" ? [start + j + 1] : []));
  }
  selected = undefined;
  suggested = undefined;
  hint = "";
  save();
  await playBack(catchUp ? [] : (answer.events ?? []), g.view, marks);
  if (g.view.phase !== Phase.PLAYING && !spectating()) await fetchSheet(g);
}

/**
 * The score sheet once a hand is over (Score). If it cannot be had, the state is taken
 * and shown all the same, without the sheet, and it is asked again a few times later
 * (2, 4, 8 s), while the page still shows that state.
 */
async function fetchSheet(g: Game, tries = 0) {
  const state = b64(g.view.stateId);
  try {
    const sheet = (await client.score({ state: g.state, viewer: you, credential: g.credential }, opts())).sheet;
    if (game === g && b64(g.view.stateId) === state) g.sheet = sheet;
    if (tries > 0 && game === g) render();
  } catch (err) {
    console.warn("allfives: the score sheet not fetched:", err);
    if (game !== g || b64(g.view.stateId) !== state) return;
    g.sheet = undefined; // the last hand's, out of date
    if (tries < 3) {
      window.setTimeout(() => {
        if (game === g && b64(g.view.stateId) === state) void fetchSheet(g, tries + 1);
      }, 2000 * 2 ** tries);
    }
  }
}

/**
 * Whether `next`, a state the page has not taken, comes after `now`, the one it shows.
 * Made from it (its previous_state_id), it does; else the counts say, the hand and then
 * the moves (every Deal, Play and Draw adds one). Leave, ReturnToSeat and ClaimSeat
 * change the seats without a move: at the same counts, a pushed change comes after
 * (the stream brings the match's states in their order, and a catch-up is the
 * latest), and an answer does not (the call was made from a state the page showed, so
 * the page has moved on since: to the answer's state or past it). Another match's
 * state (an answer that arrived after a new match began) is never taken.
 */
function later(next: GameView, now: GameView, pushed: boolean): boolean {
  if (next.matchId !== now.matchId) return false;
  if (b64(next.previousStateId) === b64(now.stateId)) return true;
  if (next.handNumber !== now.handNumber) return next.handNumber > now.handNumber;
  if (next.moves !== now.moves) return next.moves > now.moves;
  return pushed;
}

/**
 * The log after a catch-up (the hand's events from its deal, which leave out seats'
 * absences, bots taking seats and returns): the hand's lines again, the page's lines of
 * absences where they were, and what the catch-up skipped of those, told by how the
 * seats changed from the view shown before (`before`) to the new one.
 */
function caughtUp(old: LogLine[], all: Event[], before: GameView | undefined, at: GameView): LogLine[] {
  const events = logged(all);
  const lines: LogLine[] = [];
  let next = 0;
  for (const line of old.filter((l) => l.hand === at.handNumber)) {
    if (!line.history) lines.push(line);
    else if (next < events.length) lines.push(logLine(events[next++], at));
  }
  for (; next < events.length; next++) lines.push(logLine(events[next], at));
  return [...lines, ...seatChanges(before, at)];
}

/**
 * The events the log tells: a seat's absence followed by its forfeit is told once, by
 * the forfeit ("Ana left and forfeited the match.", not "Ana left the table." first).
 */
function logged(events: Event[]): Event[] {
  return events.filter(
    (e, i) =>
      e.kind.case !== "seatAbsent" ||
      !events.slice(i + 1).some((f) => f.kind.case === "forfeited" && f.kind.value.seat === (e.kind.value as { seat: number }).seat),
  );
}

/**
 * What happened to the seats from `before` to `at`, as the log says it: a seat's
 * timeouts in a row grown (it ran out of time), a bot taking a seat (after its player
 * left, or timed out), a player back. For the changes that come without those events:
 * Watch pushes, and catch-ups, carry the hand's events only.
 */
function seatChanges(before: GameView | undefined, at: GameView): LogLine[] {
  const lines: LogLine[] = [];
  if (!before || before.matchId !== at.matchId) return lines;
  const me = game?.local ? SPECTATOR : you;
  const say = (words: () => string) => lines.push({ say: words, hand: at.handNumber, history: false });
  for (const now of at.seats) {
    const was = before.seats.find((s) => s.seat === now.seat);
    if (!was) continue;
    const who = () => seatName(now.seat, me);
    const mine = now.seat === me;
    if (now.timeoutsInRow > was.timeoutsInRow) say(() => T.logTimedOut(who(), mine));
    if (was.kind === SeatKind.CLAIMED && now.kind === SeatKind.HELD_BY_BOT) {
      if (now.absent === AbsenceReason.LEFT) say(() => T.logLeft(who(), mine));
      say(() => T.logBotTookSeat(seatName(now.seat, me), mine, T.bot(levelName(now.bot))));
    }
    if (was.kind === SeatKind.HELD_BY_BOT && now.kind === SeatKind.CLAIMED) say(() => T.logReturned(who(), mine));
  }
  return lines;
}

// --- Following the play: each tile placed in turn, the points called. ---------------
/** What the table shows of the last answer while it is played back. */
let shown: { upTo?: number; callout?: { seat: number; points: number }; view?: GameView; log?: number } = {};
const STEP_MS = 450;
// A hidden tab shows the end at once (its timers are throttled: a playback would tell
// the turn minutes late).
const motion = () => !document.hidden && !window.matchMedia("(prefers-reduced-motion: reduce)").matches;

/**
 * Plays an answer's tiles back one by one (yours, then the bots' or a friend's), each
 * arriving with a short animation, with the points it scored called on the table; the
 * page takes no input meanwhile. With `prefers-reduced-motion` the table shows the end
 * at once, the last scoring move called.
 */
async function playBack(events: Event[], view: GameView, marks: number[] = []) {
  const dealt = events.map((e) => e.kind.case).lastIndexOf("dealt");
  const plays = events.slice(dealt + 1).flatMap((e) => (e.kind.case === "tilePlayed" ? [e.kind.value] : []));
  const called = (p?: { seat: number; points: number }) => (p && p.points > 0 ? { seat: p.seat, points: p.points } : undefined);
  const last = Math.max(-1, ...view.layout.map((t) => t.order));
  const hand = events.slice(dealt + 1);
  const run = async () => {
    if (motion() && plays.length > 1 && view.layout.length >= plays.length) {
      for (const [i, p] of plays.entries()) {
        // The log's lines up to this tile (marks: where each of the answer's tiles ends in it).
        const log = marks[marks.length - plays.length + i];
        shown = { upTo: last - (plays.length - 1 - i), callout: called(p), view: stepView(view, hand, i), log };
        document.body.dataset.shown = String(shown.upTo! + 1);
        // The table, the status line and the controls as of this tile: one truth.
        if (game?.view === view) render();
        else drawShown();
        sound();
        await sleep(STEP_MS);
      }
    } else if (plays.length > 0) {
      sound();
    }
    shown = { callout: called([...plays].reverse().find((p) => p.points > 0)) };
    delete document.body.dataset.shown;
  };
  // One answer at a time: a pushed change and a call's answer never play at once.
  playingBack++;
  settle();
  const done = playbacks.then(run);
  playbacks = done.catch(() => {});
  try {
    await done;
  } finally {
    playingBack--;
    settle();
  }
}

/**
 * The match as it stood just after the `i`-th tile played of an answer's hand events
 * (`hand`: those after its last deal), from the answer's `view` (the end): what came
 * after that tile undone. Each later tile goes back to its seat's hand and its points
 * off its side's score, each later draw back to the boneyard, a later hand's end's
 * settlement off the scores; the count is the one that tile made; the seat on turn is
 * the next to act (or the view's own, if none did). Nothing is playable meanwhile.
 * The last tile with nothing after it: the view itself.
 */
function stepView(view: GameView, hand: Event[], i: number): GameView | undefined {
  const at = hand.map((e) => e.kind.case === "tilePlayed").reduce<number[]>((found, played, j) => (played ? [...found, j] : found), [])[i];
  const after = hand.slice(at + 1);
  const play = hand[at].kind.value as { count: number };
  if (!after.some((e) => ["tilePlayed", "tileDrawn", "passed", "handEnded"].includes(e.kind.case ?? ""))) return undefined;
  const handSizes = [...view.handSizes];
  let boneyardSize = view.boneyardSize;
  const scores = view.scores.map((s) => ({ ...s }));
  const side = (seat: number) => scores.find((s) => s.seats.includes(seat));
  let turn: number | undefined;
  for (const e of after) {
    const k = e.kind;
    if (k.case === "tilePlayed") {
      handSizes[k.value.seat]++;
      const s = side(k.value.seat);
      if (s) s.score -= k.value.points;
    } else if (k.case === "tileDrawn") {
      handSizes[k.value.seat]--;
      boneyardSize++;
    } else if (k.case === "handEnded") {
      for (const a of view.lastHand?.settlement ?? []) {
        const s = scores.find((x) => x.side === a.side);
        if (s) s.score -= a.points;
      }
    }
    if (turn === undefined && (k.case === "tilePlayed" || k.case === "tileDrawn" || k.case === "passed")) turn = k.value.seat;
  }
  return {
    ...view,
    phase: Phase.PLAYING,
    turn: turn ?? view.turn,
    count: play.count,
    handSizes,
    boneyardSize,
    scores,
    legalMoves: [],
    mustDraw: false,
    winnerSeats: [],
    winnerSide: undefined,
  };
}

/**
 * The table drawn as it is on screen: the answer's state as of the tile played back
 * (shown.view), or, while the server is out of reach, with nothing playable.
 */
function drawShown(again?: TableUi) {
  const g = game;
  // Cut off, nobody's turn is told (the page does not know it is still so) and nothing lit.
  const step = g && (shown.view ?? (offline() ? { ...g.view, turn: undefined, legalMoves: [], mustDraw: false } : undefined));
  if (!g || !step) return drawTable(again);
  const real = g.view;
  g.view = step;
  try {
    drawTable(again);
  } finally {
    g.view = real;
  }
}
/** The view the page shows: the one played back to, else the state taken. */
const onScreen = (g: Game): GameView => shown.view ?? g.view;

/** A short click for a placed tile, if sound is on (off by default). */
let audio: AudioContext | undefined;
function sound() {
  if (!$<HTMLInputElement>("sound").checked) return;
  audio ??= new AudioContext();
  const osc = audio.createOscillator();
  const gain = audio.createGain();
  osc.frequency.value = 660;
  gain.gain.setValueAtTime(0.15, audio.currentTime);
  gain.gain.exponentialRampToValueAtTime(0.001, audio.currentTime + 0.08);
  osc.connect(gain).connect(audio.destination);
  osc.start();
  osc.stop(audio.currentTime + 0.09);
}

function describe(e: Event, view: GameView): string {
  // On a hot seat the log names every seat ("You" changes hands with the device).
  const me = game?.local ? SPECTATOR : you;
  const who = (seat: number) => seatLabel(view, seat, me);
  switch (e.kind.case) {
    case "dealt":
      return T.logDealt(e.kind.value.hand, who(e.kind.value.starter), e.kind.value.starter === me);
    case "tilePlayed": {
      const p = e.kind.value;
      return T.logPlayed(who(p.seat), p.seat === me, tileName(p.tile!), onEnd(p.end), p.count, p.points);
    }
    case "tileDrawn": {
      // On a hot seat the log is seen by every player at the screen: no drawn tile named.
      const { seat, tile } = e.kind.value;
      return tile && !game?.local ? T.logDrew(who(seat), seat === me, tileName(tile)) : T.logDrewHidden(who(seat), seat === me);
    }
    case "passed":
      return T.logPassed(who(e.kind.value.seat), e.kind.value.seat === me);
    case "handEnded":
      return T.logHandEnded(
        e.kind.value.hand,
        handEnd(e.kind.value.reason, e.kind.value.wentOut, e.kind.value.reachedTarget, e.kind.value.forfeited),
      );
    case "gameEnded": {
      const winners = e.kind.value.winnerSeats;
      return T.logMatchOver(list(lang, winners.map((s) => seatName(s, me))), winners.length);
    }
    // Turn clocks and absence (issue 41).
    case "seatAbsent": {
      const { seat, reason } = e.kind.value;
      const name = seatName(seat, me); // without "(bot)": the player is meant
      return reason === AbsenceReason.LEFT ? T.logLeft(name, seat === me) : T.logTimedOut(name, seat === me);
    }
    case "botTookSeat": {
      const { seat, bot } = e.kind.value;
      return T.logBotTookSeat(seatName(seat, me), seat === me, T.bot(levelName(bot)));
    }
    case "seatReturned":
      return T.logReturned(seatName(e.kind.value.seat, me), e.kind.value.seat === me);
    case "forfeited": {
      const { seat, reason } = e.kind.value;
      return reason === AbsenceReason.LEFT ? T.logForfeitedLeft(seatName(seat, me), seat === me) : T.logForfeitedTimedOut(seatName(seat, me), seat === me);
    }
    default:
      return "";
  }
}

function handEnd(reason: HandEndReason, wentOut?: number, reached?: number, forfeited?: number): string {
  switch (reason) {
    case HandEndReason.DOMINO:
      return T.wentOut(seatName(wentOut ?? 0, you), (wentOut ?? 0) === you);
    case HandEndReason.BLOCKED:
      return T.blocked;
    case HandEndReason.TARGET_REACHED:
      return T.reachedTarget(seatName(reached ?? 0, you), (reached ?? 0) === you);
    case HandEndReason.FORFEIT:
      return T.forfeitEnd(seatName(forfeited ?? 0, you), (forfeited ?? 0) === you);
    default:
      return "";
  }
}

// --- Actions. ------------------------------------------------------------------------
/**
 * The same match again: the same rules and bots, this page in the first seat, every
 * other person's seat open for them to join (the invite is shown again).
 */
function rematch() {
  const g = game!;
  // A friends' match: the server's Rematch, the same table and seats for everyone (the
  // first to ask offers it, the others accept by asking too); with seats at this screen
  // too, each of them asks with its own credential. Against bots alone, or all at one
  // screen, a new match as below.
  if (friendsRematch(g)) {
    return call(async () => {
      const ask = (seat: number, credential: Uint8Array) => client.rematch({ state: g.state, seat, credential }, opts());
      const answer = await ask(you, g.credential);
      let local: Map<number, Uint8Array> | undefined;
      if (g.local) {
        local = new Map([[you, answer.credential!.credential]]);
        for (const [seat, credential] of g.local) if (seat !== you) local.set(seat, (await ask(seat, credential)).credential!.credential);
      }
      offer = undefined;
      refocus = true;
      const held = { state: answer.state, credential: answer.credential!.credential, seat: you, local };
      // Another seat dealt already: the hand so far, its log filled from its deal.
      if (answer.view!.handNumber > 0) {
        const now = await client.score({ state: held.state, viewer: you, credential: held.credential, includeHandEvents: true }, opts());
        startGame(held, now.view!, now.sheet, now.handEvents);
      } else startGame(held, answer.view!);
    });
  }
  const v = g.view;
  const seats: { claim?: boolean; bot?: BotLevel; displayName?: string }[] = v.seats.map((s) =>
    s.seat === you || game!.local?.has(s.seat) ? { claim: true } : s.kind === SeatKind.BOT ? { bot: s.bot } : { claim: false },
  );
  // This page's seat first (NewGame answers the first claimed seat's credential): the
  // seats turned round, so partners stay partners.
  const turned = [...seats.slice(Math.max(you, 0)), ...seats.slice(0, Math.max(you, 0))];
  const name = localStorage.getItem(NAME_KEY) ?? "";
  if (name) turned[0] = { ...turned[0], displayName: name };
  return startMatch(v.rules!, turned);
}

/** A friends' match (another person's seat, not at this screen; seats at this screen
 * besides or not): its rematch is Rematch's. */
const friendsRematch = (g: Game) =>
  !spectating() && g.view.seats.some((s) => s.seat !== you && !g.local?.has(s.seat) && (s.kind === SeatKind.CLAIMED || s.kind === SeatKind.HELD_BY_BOT));
/** Another seat offered this finished match's rematch (WatchResponse.rematch). */
let offer: { from: string; matchId: string; seat: number } | undefined;
/** Whether the page's stream stays open: until the match is over, and after it in a
 * friends' match, where a friend's rematch offer comes by it. */
const watchesOn = (g: Game) => g.view.phase !== Phase.OVER || friendsRematch(g);

function startMatch(rules: NonNullable<GameView["rules"]> | Record<string, unknown>, seats: object[]) {
  return call(async () => {
    const answer = await client.newGame({ rules, viewer: 0, seats }, opts());
    // More than one seat claimed here: a hot seat, every credential kept.
    const local = answer.credentials.length > 1 ? new Map(answer.credentials.map((c) => [c.seat, c.credential])) : undefined;
    startGame({ state: answer.state, credential: answer.credentials[0].credential, seat: 0, local }, answer.view!);
    hideForms();
    // With a friend's seat open, the first hand waits for the friend (see arrive()).
    if (!hasOpenSeat(answer.view!)) {
      refocus = true; // on the table's first control once dealt
      await take(await client.deal({ state: game!.state, ...me() }, opts()));
    } else inviteInView = true;
  });
}
/** The invite was just made: once shown, it is scrolled into view and focused. */
let inviteInView = false;

function newMatch(data: FormData) {
  const players = Number(data.get("players"));
  // Each other seat: a bot of the chosen level, or open for a friend ("friend").
  const others = [...Array(players - 1)].map((_, i) => String(data.get(`bot${i + 1}`)));
  const seats = [
    { claim: true },
    ...others.map((o) => (o === "friend" ? { claim: false } : o === "here" ? { claim: true } : { bot: Number(o) as BotLevel })),
  ];
  // The player's name, kept for the next match and the next invite.
  const name = String(data.get("name") ?? "").trim();
  localStorage.setItem(NAME_KEY, name);
  if (name) Object.assign(seats[0], { displayName: name });
  const rules = {
    players,
    partnership: data.get("partnership") === "on" && players === 4,
    handSize: Number(data.get("handSize")),
    target: Number(data.get("target")),
    settlement: Number(data.get("settlement")),
    // The turn clock: the server's defaults (30 s a move, 60 s of bank), absent without.
    ...(data.get("clock") === "on" ? { clock: clockRules() } : {}),
  };
  return startMatch(rules, seats);
}

/**
 * The clock a new match asks for: the defaults ({}), or with ?debug=1&clock=<move>,<bank>
 * (seconds) the browser tests' short clock.
 */
function clockRules(): { moveSeconds?: number; bankSeconds?: number } {
  const debug = params.get("debug") === "1" ? /^(\d+),(\d+)$/.exec(params.get("clock") ?? "") : null;
  return debug ? { moveSeconds: Number(debug[1]), bankSeconds: Number(debug[2]) } : {};
}

const deal = () => call(async () => take(await client.deal({ state: game!.state, ...me() }, opts())));
const draw = () => call(async () => take(await client.draw({ state: game!.state, seat: you, ...me() }, opts())));
const play = (tile: Tile | { a: number; b: number }, end: End) =>
  call(async () => take(await client.play({ state: game!.state, seat: you, tile, end, ...me() }, opts())));

// --- Turn clocks: leaving, coming back, claiming a seat's timeout (issue 41). --------
/** Leave (asked first): a bot plays this page's seat until its player takes it back, or
 * under ABSENCE_RULE_FORFEIT (a match made elsewhere may have it) the side forfeits. */
function leave() {
  const forfeits = game!.view.rules?.absence?.rule === AbsenceRule.FORFEIT;
  if (!window.confirm(forfeits ? T.confirmLeaveForfeit : T.confirmLeaveSeat)) return;
  return call(async () => take(await client.leave({ state: game!.state, seat: you, credential: game!.credential }, opts())));
}
/** ReturnToSeat: this page plays its seat again from its next turn. Refused
 * SEAT_NOT_HELD (its player is back already, from another tab say): the view again. */
async function returnToSeat() {
  const err = await call(async () => take(await client.returnToSeat({ state: game!.state, seat: you, credential: game!.credential }, opts())));
  if (reasonOf(err) === ErrorReason.SEAT_NOT_HELD) {
    void refresh();
    watch();
  }
}

/**
 * The page's claim of the seat on turn's timeout: for which state, when (monotonicMs()),
 * and its own AbortController (a newer state taken, a new match, or the plan made again
 * ends it). Not through call(): the player did nothing, and stays free to play.
 */
interface Claim {
  state: string;
  at: number;
  stop: AbortController;
  /** A ClaimTimeout of it is on its way. */
  inFlight: boolean;
  /** Claimed, refused for good, or given up. */
  done: boolean;
  /** Claimed at once, the page's own move refused as late (not planned again). */
  now?: boolean;
}
let claiming: Claim | undefined;
/** The state of which this page last sent a claim of its own seat's (or one at its
 * screen's) timeout: a move of that state refused STATE_STALE came too late. */
let ownClaimOf: string | undefined;
function stopClaim() {
  claiming?.stop.abort();
  claiming = undefined;
}

/** How long after a seat's claimable_at_ms this page claims its own seat's timeout (or
 * one at its screen) while another person's page is at the match: theirs go first. */
const OWN_CLAIM_AFTER_MS = 3000;

/**
 * When this page claims the timeout of the seat on turn, by monotonicMs(); undefined
 * when it does not: no human seat on turn, or this page plays no seat (a spectator's
 * holds no credential). Any seat of the match may claim, the timed-out one included,
 * and the server refuses the late seat's own moves (TURN_TIMED_OUT): its timeout must be
 * claimed, or the match stops. Another person's seat is claimed from its
 * claimable_at_ms (counted from when the view arrived, as the countdown is); this
 * page's own seat, or one at this screen, as soon too when no other person's page is at
 * the match (against bots, a hot seat, a friend whose page is closed), else
 * OWN_CLAIM_AFTER_MS later. A page whose seat a bot holds claims too.
 */
function claimTime(g: Game): number | undefined {
  const v = g.view;
  if (spectating() || v.phase !== Phase.PLAYING || v.turn === undefined) return undefined;
  const mine = v.seats.find((s) => s.seat === you)?.kind;
  if (mine !== SeatKind.CLAIMED && mine !== SeatKind.HELD_BY_BOT) return undefined;
  const at = Countdown.of(v, g.receivedAt)?.claimableAt();
  if (at === undefined) return undefined;
  const here = v.turn === you || g.local?.has(v.turn) === true;
  return here && othersAtMatch(g) ? at + OWN_CLAIM_AFTER_MS : at;
}

/**
 * Whether another person's page may be at the match to claim a timeout: a person's
 * seat not played at this screen with a device watching (or gone for less than
 * GONE_AFTER_MS), by the stream's presence, or any such seat while the page does not know (no presence yet, the stream down, a
 * server without a match store).
 */
function othersAtMatch(g: Game): boolean {
  const others = g.view.seats.filter(
    (s) => s.seat !== you && !g.local?.has(s.seat) && (s.kind === SeatKind.CLAIMED || s.kind === SeatKind.HELD_BY_BOT),
  );
  const p = presence?.match === g.view.matchId ? presence.clock : undefined;
  // A device gone for less than GONE_AFTER_MS is still there: its stream is reopening
  // (its connection aged), as renderPresence says.
  return others.some((s) => !p || p.watching(s.seat) || (p.goneForMs(s.seat) ?? Infinity) < GONE_AFTER_MS);
}

/**
 * Plans this page's claim of the seat on turn's timeout (claimTime), for that state
 * only: a new state (a move, pushed or answered) plans again, and so does a change of
 * when (another person's page come or gone), unless a claim is on its way.
 */
function planClaim() {
  const g = game;
  const at = g ? claimTime(g) : undefined;
  if (!g || at === undefined) return stopClaim();
  const state = b64(g.view.stateId);
  if (claiming?.state === state && (claiming.at === at || claiming.inFlight || claiming.done || claiming.now)) return;
  claimFrom(g, state, at);
}
function claimFrom(g: Game, state: string, at: number, now = false) {
  stopClaim();
  const claim: Claim = { state, at, stop: new AbortController(), inFlight: false, done: false, now };
  claiming = claim;
  void runClaim(g, claim);
}

/**
 * The page's own Play or Draw was refused TURN_TIMED_OUT (nothing applied): its seat's
 * timeout is claimed now, with its own seat, unless a claim of this state is on its way.
 */
function claimOwnTimeout() {
  const g = game;
  if (!g || !Countdown.of(g.view, g.receivedAt)) return;
  const state = b64(g.view.stateId);
  if (claiming?.state === state && claiming.inFlight) return;
  claimFrom(g, state, monotonicMs(), true);
}

/** A wait of `ms` that `signal` ends early (rejecting with its reason). */
function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done, fail) => {
    if (signal.aborted) return fail(signal.reason);
    const timer = window.setTimeout(() => {
      signal.removeEventListener("abort", aborted);
      done();
    }, Math.max(0, ms));
    const aborted = () => {
      window.clearTimeout(timer);
      fail(signal.reason);
    };
    signal.addEventListener("abort", aborted, { once: true });
  });
}

/** Rounds of claimWhenDue after failures that did nothing, before the page says so. */
const CLAIM_ROUNDS = 5;

/**
 * ClaimTimeout for this page's seat, once the seat on turn's time is out, through the
 * TypeScript client's claimWhenDue (src/clock.ts): from a moment after `claim.at` (0 to
 * 300 ms, so pages that learned of the state together do not all claim at once), it
 * claims, waits out TIMEOUT_NOT_DUE as the refusal says (claimable_at_ms - now_ms, by
 * the server's clock), and retries what did nothing (the client's retryable(): no
 * connection, CLOCK_SKEW, the server's load limits, a deadline; and here a browser's
 * failed fetch) with backoff, quietly: only the last failure of CLAIM_ROUNDS is said.
 * The answer's events (SeatAbsent, the bot's moves, BotTookSeat) are taken as a move's.
 * STATE_STALE (another device claimed, or the late move came, first): the Watch stream
 * brings the match as it is, and is opened again only if no newer state has come. A
 * newer state taken ends the claim (its AbortController).
 */
async function runClaim(g: Game, claim: Claim) {
  const { signal } = claim.stop;
  const countdown = Countdown.of(g.view, g.receivedAt);
  if (!countdown) return;
  const request = { state: g.state, seat: you, credential: g.credential };
  let pause = 1000;
  try {
    await wait(claim.at - monotonicMs() + Math.random() * 300, signal);
    for (let round = 1; ; round++) {
      // The player's own call first: it applies a due timeout itself.
      while (calling) await wait(250, signal);
      claim.inFlight = true;
      if (g.view.turn === you || (g.view.turn !== undefined && g.local?.has(g.view.turn) === true)) ownClaimOf = claim.state;
      try {
        const { response } = await claimWhenDue(client, request, countdown, { signal, timeoutMs: CALL_TIMEOUT_MS });
        const receivedAt = monotonicMs();
        claim.done = true;
        if (signal.aborted || game !== g || you !== request.seat) return;
        await take(response, { receivedAt });
        render();
        return;
      } catch (err) {
        claim.inFlight = false;
        if (signal.aborted || game !== g) return;
        const reason = reasonOf(err);
        if (reason === ErrorReason.STATE_STALE) {
          claim.done = true;
          catchUpAfterStale(claim.state);
          return;
        }
        const again = retryable(ConnectError.from(err)) || isNetworkFailure(err) || reason === ErrorReason.TIMEOUT_NOT_DUE;
        if (!again || round >= CLAIM_ROUNDS) {
          claim.done = true;
          if (ownClaimOf === claim.state) ownClaimOf = undefined; // it did not go first
          showError(sentenceFor(err), isNetworkFailure(err));
          console.warn("allfives claim refused:", err);
          return;
        }
        console.warn("allfives: claim again later:", err);
        await wait(pause / 2 + (Math.random() * pause) / 2, signal);
        pause = Math.min(pause * 2, 10_000);
      }
    }
  } catch {
    // Ended by its AbortController: a newer state, a new match, another plan.
  }
}

/**
 * The view of the state shown, again (Score with the seat's credential), with the
 * server's time now: its clock counts down from this answer's arrival, and the claim is
 * planned again. After sleep or a suspended tab the countdown is out of date
 * (performance.now() may not advance while a device sleeps, and a hidden tab's timers
 * are held back): the page asks when it is shown again, comes back from the browser's
 * back-forward cache, or goes online. Score changes nothing: the same state, so the
 * view replaces the one shown (a newer state comes by the stream, or a claim's
 * STATE_STALE).
 */
let refreshing = false;
async function refresh() {
  const g = game;
  if (!g || spectating() || refreshing) return;
  const state = b64(g.view.stateId);
  const seat = you;
  refreshing = true;
  try {
    const answer = await client.score({ state: g.state, viewer: seat, credential: g.credential }, opts());
    const receivedAt = monotonicMs();
    if (game !== g || you !== seat || b64(g.view.stateId) !== state || !answer.view || b64(answer.view.stateId) !== state) return;
    g.view = answer.view;
    g.receivedAt = receivedAt;
    if (!claiming?.inFlight) stopClaim(); // planned again from the new arrival
    render();
  } catch (err) {
    console.warn("allfives: the view not refreshed:", err);
  } finally {
    refreshing = false;
  }
}
// --- Telling the player it is their turn while the tab is hidden. --------------------
const NOTIFY_KEY = "allfives-notify";
/** The state whose turn was told by a notification (once a state). */
let toldState: string | undefined;
/**
 * While the tab is hidden and it is this page's turn (the answer played back, the page
 * free to move), the tab's title says so ("● Your turn — All Fives"), and, if the player
 * asked for it (the checkbox, which asks the browser's permission), a notification once
 * for that turn. The title is the page's own again once shown.
 */
function tellTurn() {
  const g = game;
  const v = g && onScreen(g);
  const due = document.hidden && v !== undefined && v.phase === Phase.PLAYING && v.turn === you && !isBusy() && handover() === undefined;
  const title = due ? `● ${T.titleYourTurn} — ${T.appTitle}` : T.appTitle;
  if (document.title !== title) document.title = title;
  if (!due || !g) return;
  const state = b64(g.view.stateId);
  if (toldState === state) return;
  toldState = state;
  if ($<HTMLInputElement>("notify").checked && "Notification" in window && Notification.permission === "granted") {
    try {
      new Notification(T.appTitle, { body: T.titleYourTurn, tag: "allfives-turn" });
    } catch (err) {
      console.warn("allfives: no notification:", err); // (Android's Chrome wants a service worker's)
    }
  }
}
$<HTMLInputElement>("notify").checked = localStorage.getItem(NOTIFY_KEY) === "on" && "Notification" in window && Notification.permission === "granted";
$<HTMLInputElement>("notify").addEventListener("change", (e) => {
  const box = e.currentTarget as HTMLInputElement;
  localStorage.setItem(NOTIFY_KEY, box.checked ? "on" : "off");
  // Said beside the header's checkbox, seen on the start screen as at the table.
  $("notify-note").textContent = "";
  if (!box.checked || !("Notification" in window)) {
    if (box.checked) {
      box.checked = false;
      $("notify-note").textContent = T.notifyDenied;
    }
    return;
  }
  // Asked only here, from the player's own tap.
  void Notification.requestPermission().then((answer) => {
    if (answer !== "granted") {
      box.checked = false;
      localStorage.setItem(NOTIFY_KEY, "off");
      $("notify-note").textContent = T.notifyDenied;
    }
  });
});

document.addEventListener("visibilitychange", () => {
  tellTurn();
  if (document.visibilityState !== "visible") return;
  wakeWatch();
  void refresh();
});
window.addEventListener("pageshow", (e) => {
  if (!e.persisted) return;
  wakeWatch();
  void refresh();
});
window.addEventListener("online", () => {
  wakeWatch();
  void refresh();
});

// --- Each seat's clock, and who a bot plays for. --------------------------------------
/**
 * The clocks under the table, for every human seat of a clocked match: the seat on
 * turn's time left, counted down (turn_deadline_ms - now_ms of the view, from when it
 * arrived), the others' bank. Text, so the time is read, not told by colour; under 10 s
 * the seat on turn's clock is marked low too. Called on every render and every 250 ms.
 */
function renderClocks() {
  const box = $("clocks");
  const g = game;
  const countdown = g ? Countdown.of(g.view, g.receivedAt) : undefined;
  if (!g || !countdown || g.view.phase === Phase.OVER) {
    box.hidden = true;
    return;
  }
  const v = g.view;
  // While an answer is played back, nobody's turn is counted down (the seat on turn is
  // the one whose tile comes next, its time not known): every seat's bank.
  const left = v.phase === Phase.PLAYING && shown.view === undefined ? countdown.timeLeftMs() : undefined;
  sayTimeLow(v, left);
  const rows = v.seats
    .filter((s) => s.kind === SeatKind.CLAIMED || s.kind === SeatKind.HELD_BY_BOT)
    .map((s) => {
      const name = seatName(s.seat, you);
      const mine = s.seat === you;
      const onTurn = left !== undefined && v.turn === s.seat;
      const text = onTurn
        ? T.clockOnTurn(name, mine, clockText(left))
        : T.clockBank(name, mine, clockText((countdown.clock.bankSeconds[s.seat] ?? 0) * 1000));
      return { seat: s.seat, text, cls: onTurn ? (left < 10_000 ? "on-turn low" : "on-turn") : "" };
    });
  box.hidden = rows.length === 0;
  if (box.children.length !== rows.length) box.replaceChildren(...rows.map(() => document.createElement("li")));
  for (const [i, row] of rows.entries()) {
    const li = box.children[i] as HTMLElement;
    if (li.textContent !== row.text) li.textContent = row.text;
    if (li.className !== row.cls) li.className = row.cls;
    li.dataset.seat = String(row.seat);
  }
}

/** A turn's time left below which the page says so, once (the status line). */
const LOW_MS = 10_000;
/** The state on whose turn (this page's own) more than LOW_MS was left when seen, and
 * the one whose time was said to be low. */
let lowArmed: string | undefined;
let lowSaid: string | undefined;
/**
 * Says once, on this page's own turn, that the time is nearly out: when the countdown,
 * seen above LOW_MS for this state, falls to it, the polite status line (role=status)
 * adds "Only 10 seconds left." for a screen reader to read (and stays so for the turn).
 * A turn that starts with less (a short clock) is not said: the countdown shows it.
 */
function sayTimeLow(v: GameView, left: number | undefined) {
  if (spectating() || left === undefined || v.turn !== you || handover() !== undefined) return;
  const state = b64(v.stateId);
  if (left > LOW_MS) lowArmed = state;
  else if (left > 0 && lowArmed === state && lowSaid !== state) {
    lowSaid = state;
    setText($("status"), statusLine(v));
  }
}

/** A seat gone for less than this is not said: a device that watches again at once
 * (its connection aged) or after a moment (its stream failed) is gone for less. */
const GONE_AFTER_MS = 3000;

/**
 * Who has gone, from the stream's presence: every person's seat not played at this
 * screen (a bot's seat never watches) with no device watching for GONE_AFTER_MS or
 * more, and for how long ("Ana has been gone for 40 seconds."),
 * counted up as the clocks count down. Advice: the seat's clock decides. Not a live
 * region (it changes every second); called on every render and every 250 ms.
 */
function renderPresence() {
  const box = $("gone");
  const g = game;
  const p = presence;
  const rows =
    !g || !p || p.match !== g.view.matchId || g.view.phase === Phase.OVER
      ? []
      : g.view.seats
          .filter((s) => (s.kind === SeatKind.CLAIMED || s.kind === SeatKind.HELD_BY_BOT) && s.seat !== you && !g.local?.has(s.seat))
          .flatMap((s) => {
            const ms = p.clock.goneForMs(s.seat);
            return ms !== undefined && ms >= GONE_AFTER_MS ? [{ seat: s.seat, text: T.goneFor(seatName(s.seat, you), howLong(ms)) }] : [];
          });
  box.hidden = rows.length === 0;
  if (box.children.length !== rows.length) box.replaceChildren(...rows.map(() => document.createElement("li")));
  for (const [i, row] of rows.entries()) {
    const li = box.children[i] as HTMLElement;
    if (li.textContent !== row.text) li.textContent = row.text;
    li.dataset.seat = String(row.seat);
  }
}
/**
 * Every 250 ms while a seat on turn's clock runs or another person's seat has no device
 * watching (the clocks counted down, who is gone counted up); stopped otherwise (between
 * hands, a match over or without a clock, a new match).
 */
let ticker: number | undefined;
function keepTicking() {
  const g = game;
  const p = presence?.match === g?.view.matchId ? presence?.clock : undefined;
  const needed =
    g !== undefined &&
    g.view.phase !== Phase.OVER &&
    (Countdown.of(g.view, g.receivedAt)?.deadline() !== undefined ||
      (p !== undefined &&
        g.view.seats.some(
          // Gone (counted up): not a seat none of whose devices has watched yet.
          (s) => s.seat !== you && !g.local?.has(s.seat) && (s.kind === SeatKind.CLAIMED || s.kind === SeatKind.HELD_BY_BOT) && p.goneForMs(s.seat) !== undefined,
        )));
  if (needed && ticker === undefined) {
    ticker = window.setInterval(() => {
      renderClocks();
      renderPresence();
      keepTicking();
    }, 250);
  } else if (!needed && ticker !== undefined) {
    window.clearInterval(ticker);
    ticker = undefined;
  }
}

/** "A bot is playing for X" for every seat a bot holds; Take my seat back for this
 * page's; Leave for this page's seat once a hand is dealt, with another person at the
 * match (not on a hot seat). */
function renderAbsence(g: Game) {
  const v = g.view;
  const over = v.phase === Phase.OVER;
  const held = over ? [] : v.seats.filter((s) => s.kind === SeatKind.HELD_BY_BOT);
  const list = $("held-seats");
  // Held while an answer is played back: a bot taking a seat is told at its end.
  if (shown.view === undefined) list.replaceChildren(
    ...held.map((s) => {
      const li = document.createElement("li");
      li.textContent = T.botPlaysFor(seatName(s.seat, you), s.seat === you);
      li.dataset.seat = String(s.seat);
      return li;
    }),
  );
  if (shown.view === undefined) $("absence").hidden = held.length === 0;
  const mine = v.seats.find((s) => s.seat === you);
  const busy = isBusy();
  const back = $<HTMLButtonElement>("return-seat");
  if (shown.view === undefined) back.hidden = spectating() || mine?.kind !== SeatKind.HELD_BY_BOT || over;
  back.disabled = busy;
  const leaveButton = $<HTMLButtonElement>("leave");
  leaveButton.hidden =
    spectating() || g.local !== undefined || over || v.handNumber === 0 || mine?.kind !== SeatKind.CLAIMED || !hasOtherPlayer(v);
  leaveButton.disabled = busy;
}

function suggest() {
  const level = Number($<HTMLSelectElement>("hint-level").value) as BotLevel;
  return call(async () => {
    const g = game!;
    const answer = await client.suggest({ state: g.state, seat: you, level, credential: g.credential }, opts());
    if (answer.draw) {
      hint = T.botSaysDraw(levelName(level));
    } else if (answer.play?.tile) {
      suggested = answer.play;
      selected = tileKey(answer.play.tile);
      hint = T.botSuggests(levelName(level), tileName(answer.play.tile), onEnd(answer.play.end), answer.play.points);
    }
  });
}

async function resume(saved: Held) {
  const err = await call(async () => {
    const answer = await client.score({ state: saved.state, viewer: saved.seat, credential: saved.credential, includeHandEvents: true }, opts());
    startGame(saved, answer.view!, answer.sheet, answer.handEvents);
  });
  // A token (or seat key) the server refuses will never be taken: forget it, so the
  // next reload offers a new match instead of the same refusal.
  if (err !== undefined && refusesSaved(err)) forget();
  if (!game) showForm();
}

// --- Following the match: Watch, joining by invite. ----------------------------------
const hasOpenSeat = (v: GameView) => v.seats.some((s) => s.kind === SeatKind.OPEN);
const hasOtherPlayer = (v: GameView) => v.seats.some((s) => s.seat !== you && s.kind !== SeatKind.BOT);
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
let watching: AbortController | undefined;
/** The last Presence the page's stream brought, for its match (none while the stream is down). */
let presence: { match: string; clock: PresenceClock } | undefined;
/**
 * How long a Watch stream may say nothing before the page takes its connection for
 * dead, as one a phone left behind on another network is, without a word, says so and
 * watches again: twice the heartbeat the server says it sends (Heartbeat.interval_ms),
 * or 45 s (three of the server's default 15 s heartbeats) from a server that does not say.
 */
const SILENT_STREAM_MS = 45_000;
/** The server's heartbeat: a stream open this long (or that brought a change after its
 * first message) lived, and its end starts the backoff over. */
const HEARTBEAT_MS = 15_000;
/** The heartbeat the server said it keeps (Heartbeat.interval_ms), 0 until it says. */
let heartbeatMs = 0;
const silentAfter = () => (heartbeatMs > 0 ? 2 * heartbeatMs : SILENT_STREAM_MS);
const heartbeat = () => (heartbeatMs > 0 ? heartbeatMs : HEARTBEAT_MS);
/** When the page's stream last brought a message (Date.now(), which runs on through a
 * device's sleep), or was opened. */
let lastHeard = 0;
/** Ends the Watch loop's wait between two streams early (see wakeWatch). */
let wakeNap: (() => void) | undefined;
/** A wait of `ms` that wakeNap() ends early. */
function nap(ms: number): Promise<void> {
  return new Promise((done) => {
    const finish = () => {
      window.clearTimeout(timer);
      if (wakeNap === finish) wakeNap = undefined;
      done();
    };
    const timer = window.setTimeout(finish, ms);
    wakeNap = finish;
  });
}
/** Whether the Watch loop gave up for good (no store, a refused token). */
let watchGaveUp = false;

/**
 * Follows the page's match through a Watch stream (again from the last state seen each
 * time the stream ends, as it does when the server's connection ages or drains, or
 * breaks), taking every change the server pushes: a friend's move, a move made in
 * another tab; and asking which seats have a device watching (presence). After a
 * stream's OK end (the server drains or ages its connection) it waits 0.02 to 0.2 s;
 * after a failure half to all of 0.5 s, doubling up to 10 s while streams fail soon
 * after opening (see HEARTBEAT_MS), back to 0.5 s after one that lived; a stream
 * silent for SILENT_STREAM_MS is ended and opened again (and, on waking, one silent
 * for more than a heartbeat: wakeWatch); while no stream opens, the page says it is trying again. A server without a match store refuses Watch (STORE_REQUIRED): then the page's own
 * answers are all it learns, and a match with another person at it cannot be
 * followed, which the page says.
 */
function watch() {
  watching?.abort();
  wakeNap?.(); // the loop stopped ends its wait now
  presence = undefined;
  watchGaveUp = false;
  lastHeard = Date.now();
  const g = game;
  if (!g) return;
  const stop = new AbortController();
  watching = stop;
  void (async () => {
    let pause = 500;
    // The changes read, taken one after another (an answer's tiles are played back
    // meanwhile) while the stream goes on being read: each change's clock counts from
    // when it was read, not from when the change before it had been shown.
    let taking: Promise<void> = Promise.resolve();
    while (!stop.signal.aborted && game === g) {
      // Every change read so far taken first: the stream opens from the latest.
      await taking;
      if (stop.signal.aborted || game !== g || !watchesOn(g)) return;
      // This stream's own end: the page's (stop), or a silence too long.
      const attempt = new AbortController();
      const end = () => attempt.abort();
      stop.signal.addEventListener("abort", end);
      // A stream silent too long: the connection is taken for lost, and said so.
      let silent = false;
      const hush = () => {
        silent = true;
        end();
      };
      let silence = window.setTimeout(hush, silentAfter());
      let heard = false;
      // Whether this stream lived (see HEARTBEAT_MS): only then does the backoff start over.
      let lived = false;
      let endedOk = false;
      const openedAt = Date.now();
      try {
        // A spectator names the match by its id (it holds no token) and no seat.
        const request = spectating()
          ? { matchId: g.view.matchId, lastStateId: g.view.stateId, presence: true }
          : { state: g.state, viewer: you, credential: g.credential, lastStateId: g.view.stateId, presence: true };
        for await (const message of client.watch(request, { signal: attempt.signal })) {
          const receivedAt = monotonicMs();
          if (message.kind.case === "heartbeat") {
            // A server that says how often it beats (Heartbeat.interval_ms; 0 from an
            // older server, which keeps SILENT_STREAM_MS).
            const said = message.kind.value.intervalMs;
            if (said > 0) {
              heartbeatMs = said;
              document.body.dataset.heartbeatMs = String(said); // (what the tests wait for)
            }
          }
          window.clearTimeout(silence);
          silence = window.setTimeout(hush, silentAfter());
          lastHeard = Date.now();
          if ((heard && message.kind.case === "change") || lastHeard - openedAt >= heartbeat()) lived = true;
          if (!heard) {
            heard = true;
            document.body.dataset.watching = "yes";
          }
          // Any message: the server is in reach (a call's failure said meanwhile goes).
          if (offlineSaid) setConnected(true);
          if (message.kind.case === "change") {
            const change = message.kind.value;
            taking = taking
              .then(() => (stop.signal.aborted ? undefined : arrive(change, receivedAt)))
              .catch((err) => console.warn("allfives: a pushed change not taken:", err))
              .then(() => {
                // The match is over: nothing more will change; the stream is closed.
                if (game === g && !watchesOn(g) && !stop.signal.aborted) stop.abort();
              });
          } else if (message.kind.case === "rematch" && message.kind.value.seat !== you && !g.local?.has(message.kind.value.seat)) {
            // (This seat's own ask, or a seat's at this screen, heard before its answer or
            // from another tab of the seat, is no offer to this page.)
            // A friend asked for the rematch: this page offers to accept it.
            offer = { from: g.view.matchId, matchId: message.kind.value.matchId, seat: message.kind.value.seat };
            taking = taking.then(() => {
              if (game === g) render();
            });
          } else if (message.kind.case === "presence") {
            presence = { match: g.view.matchId, clock: new PresenceClock(message.kind.value, receivedAt) };
            renderPresence();
            keepTicking();
            planClaim(); // another person's page come or gone: this page's own claim sooner or later
          }
        }
        endedOk = true;
      } catch (err) {
        if (stop.signal.aborted || game !== g) return;
        if (silent) setConnected(false);
        document.body.dataset.watching = "no";
        // What the page knew of who is watching may be out of date from here.
        presence = undefined;
        renderPresence();
        const reason = reasonOf(err);
        if (reason === ErrorReason.STORE_REQUIRED || (err instanceof ConnectError && err.code === Code.Unimplemented)) {
          watchGaveUp = true;
          setConnected(true);
          if (hasOtherPlayer(g.view)) showError(T.noStore);
          return;
        }
        if (refusesSaved(err) || reason === ErrorReason.MATCH_FORGOTTEN) {
          watchGaveUp = true;
          lose(err);
          return;
        }
        // A stream that failed before its first message: the server cannot be reached
        // (one cut after it had heard is opened again at once, 0.25 to 0.5 s, and says
        // so if that one fails too).
        if (!heard) setConnected(false);
        console.warn("allfives watch ended:", err);
      } finally {
        window.clearTimeout(silence);
        stop.signal.removeEventListener("abort", end);
      }
      if (stop.signal.aborted || game !== g) return;
      if (lived || Date.now() - openedAt >= heartbeat()) pause = 500;
      if (endedOk) {
        // Ended with OK: the server drains or ages its connection, and every page of
        // it comes back; a short wait, different on each (0.02 to 0.2 s), spreads them.
        await nap(20 + Math.random() * 180);
      } else {
        // Failed: a stream that lived starts the backoff over; one that failed soon
        // after it opened (refused past the server's bounds, cut by a proxy) waits
        // longer each time, half to all of 0.5 s, doubling up to 10 s.
        await nap(pause / 2 + (Math.random() * pause) / 2);
        if (!lived) pause = Math.min(pause * 2, 10_000);
      }
    }
  })();
}

/**
 * After sleep, a suspended tab or a network come back, a stream may be dead without a
 * word (a phone's connection left behind): one silent for more than a heartbeat is
 * opened again at once, its backoff started over; one still trying stops waiting.
 */
function wakeWatch() {
  if (!game || !watching || watchGaveUp || !watchesOn(game)) return;
  if (Date.now() - lastHeard > heartbeat() + 5_000) watch();
  else wakeNap?.();
}

/**
 * Says whether the page reaches the server: while its stream cannot be opened, that it
 * is trying again; once one is open again, a call's failure to get any answer said
 * meanwhile goes too.
 */
let offlineSaid = false;
/** Once back after being out of reach, the page says so for a moment (BACK_SAID_MS). */
let backSaid = false;
let backTimer: number | undefined;
const BACK_SAID_MS = 5000;
/** The page's match cannot reach the server now: its moves wait (isBusy). */
const offline = () => offlineSaid && game !== undefined && !watchGaveUp;
function setConnected(connected: boolean) {
  if (connected && offlineSaid && errorIsNetwork) showError("");
  const changed = offlineSaid === connected;
  const wasOffline = offlineSaid;
  offlineSaid = !connected;
  window.clearTimeout(backTimer);
  backSaid = connected && wasOffline && game !== undefined;
  if (backSaid) {
    backTimer = window.setTimeout(() => {
      backSaid = false;
      sayOffline();
    }, BACK_SAID_MS);
  }
  sayOffline();
  if (changed && game) {
    document.body.dataset.connected = String(connected);
    render();
  }
}
/**
 * The reconnecting line, in the page's language (and for a moment once back: "Connected
 * again."). Its live region stays on the page, its text set and cleared: a region shown
 * with its text already in place is often not read out. Set only when it changes (else
 * it may be read out again).
 */
function sayOffline() {
  setText($("offline"), offlineSaid ? T.reconnecting : backSaid ? T.reconnected : "");
  $("offline").classList.toggle("back", !offlineSaid && backSaid);
}

/** A refusal that says the page's match is no longer on the server: a server started
 * again (its token key new, its memory store empty) or one that forgot the match. */
function matchGone(err: unknown): boolean {
  const reason = reasonOf(err);
  return reason === ErrorReason.TOKEN_UNKNOWN_KEY || reason === ErrorReason.MATCH_FORGOTTEN || (game !== undefined && refusesSaved(err));
}
/**
 * The page's match is gone from the server: one state only, a player's sentence and the
 * way on (the new-match form), the old table taken away (no tiles, no buttons).
 */
function lose(err: unknown) {
  const reason = reasonOf(err);
  watching?.abort();
  watching = undefined;
  wakeNap?.();
  stopClaim();
  if (game) forgetMatch(game.view.matchId);
  game = undefined;
  tableContent.replaceChildren(); // no tile of it left, shown or not
  presence = undefined;
  offlineSaid = false;
  backSaid = false;
  sayOffline();
  shown = {};
  render();
  keepTicking();
  showForm();
  showError(reason === ErrorReason.TOKEN_UNKNOWN_KEY || reason === ErrorReason.MATCH_FORGOTTEN ? T.matchGone : sentenceFor(err));
  document.body.dataset.phase = "GONE";
}
/** An element's text, set only if it changes (a live region's is read out again). */
function setText(el: HTMLElement, text: string) {
  if (el.textContent !== text) el.textContent = text;
}

/** A change the Watch stream pushed, read at `receivedAt` (monotonicMs()). */
async function arrive(change: WatchChange, receivedAt: number) {
  const g = game;
  if (!g || !change.view) return;
  if (g.seen.has(b64(change.view.stateId))) return;
  await take(change, { catchUp: change.catchUp, pushed: true, receivedAt });
  render();
  // The match's maker deals the first hand once every seat is taken.
  const v = g.view;
  if (you === 0 && v.phase === Phase.DEALING && v.handNumber === 0 && !hasOpenSeat(v) && !isBusy()) void deal();
}

/**
 * Opens an invite (the token in #join=…): learns the match's latest state (a Watch as
 * a spectator holding the token), claims its first open seat with a claim key kept
 * until the answer comes (so a reload mid-claim gets the same seat back), and plays
 * that seat. Asks first when the page holds another match (`held`), and goes back to
 * it if the player would rather.
 */
async function join(invite: Uint8Array, held: Held | undefined, name: string) {
  let declined = false;
  const err = await call(async () => {
    let latest = invite;
    let view: GameView | undefined;
    try {
      for await (const message of client.watch({ state: invite }, opts())) {
        if (message.kind.case === "change") {
          latest = message.kind.value.state;
          view = message.kind.value.view;
          break;
        }
      }
    } catch (err) {
      // No match store: claim from the invite itself.
      if (reasonOf(err) !== ErrorReason.STORE_REQUIRED) throw err;
    }
    view ??= (await client.score({ state: latest }, opts())).view;
    if (held && held.match !== view!.matchId && !window.confirm(T.confirmLeave)) {
      declined = true;
      return;
    }
    let pending = JSON.parse(sessionStorage.getItem(JOINING_KEY) ?? "null") as { match: string; seat: number; key: string } | null;
    if (pending?.match !== view!.matchId) {
      const open = view!.seats.find((s) => s.kind === SeatKind.OPEN);
      if (!open) throw new PageRefusal(T.everySeatTaken);
      const key = b64(crypto.getRandomValues(new Uint8Array(16)));
      pending = { match: view!.matchId, seat: open.seat, key };
      sessionStorage.setItem(JOINING_KEY, JSON.stringify(pending));
    }
    const claimed = await client.claimSeat(
      { state: latest, seat: pending.seat, claimKey: unb64(pending.key), displayName: name },
      opts(),
    );
    sessionStorage.removeItem(JOINING_KEY);
    hideForms();
    startGame({ state: claimed.state, credential: claimed.credential!.credential, seat: pending.seat }, claimed.view!);
  });
  // A claim the server refused (the seat taken, say) is not tried again as it was.
  if (err !== undefined && !isNetworkFailure(err)) sessionStorage.removeItem(JOINING_KEY);
  // The invite is used (or declined): off the address, so a reload does not use it again.
  history.replaceState(null, "", window.location.pathname + window.location.search);
  if (declined && held) await resume(held);
  else if (!game) showForm();
}

function inviteLink(g: Game): string {
  const url = new URL(window.location.href);
  url.hash = `join=${b64url(g.state)}`;
  return url.toString();
}

// --- The invite code: a short code to read out, beside the link. --------------------
/**
 * The code of the page's match: `none` on a server without a match store, `pending`
 * while asked; after a failure, `retryAt` (backoff doubling from 2 s, `failures` so far).
 */
let code:
  | { match: string; code?: string; expiresAt?: number; none?: boolean; pending?: boolean; retryAt?: number; failures?: number }
  | undefined;
let codeTimer: number | undefined;

/**
 * Asks the match's invite code (CreateInviteCode) while a seat is open before the deal,
 * again once it has expired (the server then makes a new one) or after a failure; the
 * answer is drawn beside the link. A server without a match store has no codes
 * (STORE_REQUIRED): the link alone, and a quiet line that says why. Not through call():
 * the page stays free to use meanwhile, and a refusal is no error of the player's.
 */
function askCode(g: Game) {
  const match = g.view.matchId;
  if (spectating()) return;
  const now = Date.now();
  const same = code?.match === match ? code : undefined;
  const current =
    same !== undefined &&
    (same.none || same.pending || (same.code !== undefined && now < (same.expiresAt ?? 0)) || now < (same.retryAt ?? 0));
  if (!current) {
    code = { match, pending: true, failures: same?.failures ?? 0 };
    const asked = code;
    void client.createInviteCode({ state: g.state, viewer: you, credential: g.credential }, opts()).then(
      (answer) => {
        Object.assign(asked, { pending: false, failures: 0, code: answer.code });
        asked.expiresAt = Date.now() + answer.expiresInSeconds * 1000;
        if (game === g) render();
      },
      (err) => {
        asked.pending = false;
        if (reasonOf(err) === ErrorReason.STORE_REQUIRED) asked.none = true;
        else {
          asked.failures = (asked.failures ?? 0) + 1;
          asked.retryAt = Date.now() + Math.min(60_000, 1000 * 2 ** asked.failures);
          console.warn("allfives: no invite code yet:", err);
        }
        if (game === g) render();
      },
    );
  }
  // Every 15 s while the invite shows: the minutes left said again, and once the code
  // has expired (or a failed ask's wait is over) the page asks again.
  if (codeTimer === undefined) {
    codeTimer = window.setTimeout(() => {
      codeTimer = undefined;
      if (game !== g || g.view.phase !== Phase.DEALING || !hasOpenSeat(g.view)) return;
      const lasts = document.getElementById("code-lasts");
      const c = code?.match === match ? code : undefined;
      if (c?.code && Date.now() < (c.expiresAt ?? 0) && lasts) {
        lasts.textContent = T.codeLasts(minutesLeft(c.expiresAt));
        askCode(g); // sets the next tick
      } else render();
    }, 15_000);
  }
}

/** Whole minutes left until `expiresAt`, at least 1 while it has not passed. */
function minutesLeft(expiresAt: number | undefined): number {
  return Math.max(1, Math.ceil(((expiresAt ?? 0) - Date.now()) / 60_000));
}

/** Whether the device has a share sheet (the Web Share API: phones, some desktops). */
const canShare = () => typeof navigator.share === "function";
/** The invite link as a QR code (uqr's SVG), for a phone at the same table to scan. */
function qrBlock(link: string): string {
  const svg = renderSVG(link, { ecc: "L", border: 2 });
  return `<figure class="qr" data-testid="invite-qr" role="img" aria-label="${esc(T.qrLabel)}">${svg}<figcaption>${esc(T.qrCaption)}</figcaption></figure>`;
}

/** The code, large and spaced to read out (a screen reader spells it), with Copy. */
function codeBlock(v: GameView): string {
  if (code?.match !== v.matchId) return "";
  if (code.none) return `<p class="muted" data-testid="no-code">${esc(T.noCodes)}</p>`;
  if (!code.code || Date.now() >= (code.expiresAt ?? 0)) return "";
  const minutes = minutesLeft(code.expiresAt);
  const spelled = code.code.split("-").map((group) => [...group].join(" ")).join(", ");
  return (
    `<p>${esc(T.codeIntro)}</p>` +
    `<p class="invite"><output id="invite-code" class="invite-code" aria-label="${esc(T.codeLabel(spelled))}">${esc(code.code)}</output>` +
    `<button type="button" id="copy-code">${esc(T.copy)}</button></p>` +
    `<p class="muted" id="code-lasts">${esc(T.codeLasts(minutes))}</p>`
  );
}

/** Opens a typed code (OpenInviteCode), then asks the name as an invite link does. */
function joinByCode(typed: string) {
  return call(async () => {
    const opened = await client.openInviteCode({ code: normaliseCode(typed) }, opts());
    hideForms();
    askToJoin(opened.state);
  });
}

/** A link that lets anyone watch the match (no hand shown, nothing to play). */
function watchLink(g: Game): string {
  const url = new URL(window.location.href);
  url.hash = `watch=${g.view.matchId}`;
  return url.toString();
}

/**
 * Watches a match as a spectator: its latest state (a Watch by match id, which needs a
 * match store), then every change pushed; the page shows every seat's tile backs and
 * no hand, until the rules reveal the hands at a hand's end.
 */
async function spectate(matchId: string) {
  await call(async () => {
    for await (const message of client.watch({ matchId }, opts())) {
      if (message.kind.case === "change" && message.kind.value.view) {
        hideForms();
        startGame({ state: new Uint8Array(), credential: new Uint8Array(), seat: SPECTATOR }, message.kind.value.view, undefined, message.kind.value.events);
        break;
      }
    }
  });
  if (!game) showForm();
}

// --- A hot seat: two or more people at one screen. ---------------------------------
/** The seat at this screen whose turn it is, when it is not the one shown: the device
 * is passed to its player, the hand hidden meanwhile. */
function handover(): number | undefined {
  const g = game;
  if (!g?.local || g.view.phase !== Phase.PLAYING || g.view.turn === undefined) return undefined;
  const turn = g.view.turn;
  return turn !== you && g.local.has(turn) ? turn : undefined;
}

/** The next player has the device: its seat, its credential, its view of the match. */
function takeOver(seat: number) {
  return call(async () => {
    const g = game!;
    const credential = g.local!.get(seat)!;
    // The view as this seat sees the state shown; asked again if a newer state came
    // meanwhile (a stale answer would show an older state than the page had).
    let answer: Awaited<ReturnType<typeof client.score>> | undefined;
    for (let i = 0; i < 5 && !answer; i++) {
      const from = b64(g.view.stateId);
      const got = await client.score({ state: g.state, viewer: seat, credential }, opts());
      if (game !== g) return;
      if (b64(g.view.stateId) === from && got.view && b64(got.view.stateId) === from) answer = got;
    }
    if (!answer) return; // the match moving on all the while: a tap again takes the seat
    you = seat;
    g.seat = seat;
    stopClaim(); // planned again for this seat
    g.credential = credential;
    g.view = answer.view!;
    g.receivedAt = monotonicMs();
    g.seen.add(b64(g.view.stateId));
    save();
    watch();
  });
}

// --- Rendering. ----------------------------------------------------------------------
function render() {
  const g = game;
  if (g) setNames(g.view);
  $("game").hidden = !g;
  $("new-match-button").hidden = !g;
  placeHowTo();
  if (!g) {
    $("handover").hidden = true;
    setText($("status"), ""); // no match: nothing of one said
    tellTurn();
    return;
  }
  document.body.dataset.phase = Phase[g.view.phase];
  document.body.dataset.moves = String(g.view.moves);
  document.body.dataset.hand = String(g.view.handNumber);
  document.body.dataset.stateId = b64(g.view.stateId);
  document.body.dataset.match = g.view.matchId;
  document.body.dataset.yourTurn = String(g.view.phase === Phase.PLAYING && g.view.turn === you);
  // What the page shows: the state played back to (an answer's tiles arrive one by
  // one), so the status line, the buttons and the table all tell the same moment.
  const v = onScreen(g);
  const playing = v.phase === Phase.PLAYING;
  const yours = playing && v.turn === you;

  // Keep the keyboard's place across the redraw; when the focused tile or end is gone
  // (played), go on to what comes next: a playable tile, Draw, or Deal.
  const active = document.activeElement as HTMLElement | null;
  const focused = active?.dataset?.key;
  const wasHere = focused !== undefined || active?.id === "draw" || active?.id === "deal";
  drawShown();
  const busy = isBusy();
  $<HTMLButtonElement>("draw").disabled = busy || !(yours && v.mustDraw);
  $<HTMLButtonElement>("suggest").disabled = busy || !yours;
  // The hand's end's body is written anew: a button of it that had the focus keeps it.
  const inBody = $("hand-end-body").contains(document.activeElement) ? document.activeElement?.id : undefined;
  renderHandEnd(g, v);
  if (inBody) document.getElementById(inBody)?.focus({ preventScroll: true });
  const again = focused ? (tableContent.querySelector(`[data-key="${focused}"]`) as SVGGElement | null) : null;
  if (again) again.focus({ preventScroll: true });
  else if ((wasHere || refocus) && !busy) {
    refocus = false;
    focusNext(v);
  }
  tellTurn();
  $("hint").textContent = hint;
  // While tiles are still to come, the status line shows each moment but is not read
  // out (the log says each tile): a screen reader hears the turn once, at the end.
  $("status").setAttribute("aria-live", shown.view ? "off" : "polite");
  setText($("status"), statusLine(v));
  document.body.dataset.spectating = String(spectating());
  document.body.dataset.seat = String(you);
  const next = handover();
  $("handover").hidden = next === undefined;
  if (next !== undefined) {
    $("handover-text").textContent = T.handoverText(seatName(next, SPECTATOR));
    $("handover-button").textContent = T.handoverButton(seatName(next, SPECTATOR));
    $<HTMLButtonElement>("handover-button").dataset.seat = String(next);
  }
  $("watch-box").hidden = spectating();
  $<HTMLInputElement>("watch-link").value = watchLink(g);

  // The log only grows (a live region: a screen reader reads each new line once).
  const log = $("log");
  if (
    log.dataset.match !== v.matchId ||
    log.dataset.lang !== lang ||
    log.dataset.version !== String(g.logVersion) ||
    Number(log.dataset.lines) > g.log.length
  ) {
    log.replaceChildren();
    log.dataset.match = v.matchId;
    log.dataset.lang = lang;
    log.dataset.lines = "0";
    log.dataset.version = String(g.logVersion);
  }
  // While an answer is played back, the lines up to the tile on the table only.
  const upTo = Math.min(g.log.length, shown.log ?? g.log.length);
  for (const line of g.log.slice(Number(log.dataset.lines), upTo)) {
    const li = document.createElement("li");
    li.textContent = line.say();
    log.append(li);
  }
  log.dataset.lines = String(Math.max(upTo, Number(log.dataset.lines)));
  while (log.children.length > 200) log.firstElementChild!.remove();
  log.scrollTop = log.scrollHeight;

  $("sheet").innerHTML = g.sheet ? sheetTable(g.sheet, v) : "";
  renderAbsence(g);
  renderClocks();
  renderPresence();
  keepTicking();
  planClaim();
}

/**
 * The height the table may take so that, with the page at its top, the table's foot
 * (the hand) and the action bar below it are both on the screen: the screen's height
 * less what is above the table and what lies between it and the bar's foot.
 */
function tableRoom(svg: SVGSVGElement): number {
  const top = svg.getBoundingClientRect().top + window.scrollY;
  const board = svg.parentElement!;
  const gap = parseFloat(getComputedStyle(board).rowGap) || 0;
  let below = 0;
  for (let el = svg.nextElementSibling as HTMLElement | null; el; el = el.nextElementSibling as HTMLElement | null) {
    if (el.offsetParent !== null || getComputedStyle(el).position === "sticky") below += el.offsetHeight + gap;
    if (el.classList.contains("controls")) break;
  }
  return window.innerHeight - top - below - 4;
}

/** The table, drawn to the width it has on the page (one unit a CSS pixel) and to the room the screen leaves. */
let drawnWidth = 0;
let drawnState = "";
let drawnFit = { key: "", transform: "" };
let drawnRoom = 0;
let roomCheck = false;
let drawnUi: TableUi | undefined;
/** The table drawn again, the same, if the room it has changed (the keyboard's place kept). */
function checkRoom() {
  const svg = $("table") as unknown as SVGSVGElement;
  if (!game || !drawnUi || Math.abs(tableRoom(svg) - drawnRoom) < 1) return;
  const focused = (document.activeElement as HTMLElement | null)?.dataset?.key;
  // The same state: what arrived with it (the last tile, the callout, the hand's end) not
  // again; during a playback, the moment played back to (its count, scores, hands), not
  // the answer's end.
  drawShown({ ...drawnUi, fresh: false, callout: undefined });
  if (focused) tableContent.querySelector<SVGGElement>(`[data-key="${focused}"]`)?.focus({ preventScroll: true });
}
// What is above the table and what lies between it and the bar's foot change height
// without a redraw too (a font arriving late, a hint said in the bar, "Reconnecting…",
// an error, the clocks, a player gone, the device passed on): each is watched (one shown
// or hidden is a change of its size too).
{
  const roomWatch = new ResizeObserver(() => checkRoom());
  const table = $("table");
  for (let el = table.parentElement!.firstElementChild; el; el = el.nextElementSibling) if (el !== table) roomWatch.observe(el);
  for (let el: Element | null = table.parentElement!; el && el !== document.body; el = el.parentElement)
    for (let sib = el.previousElementSibling; sib; sib = sib.previousElementSibling) roomWatch.observe(sib);
}
function drawTable(again?: TableUi) {
  if (!game) return;
  const svg = $("table") as unknown as SVGSVGElement;
  drawnWidth = svg.clientWidth || 1000;
  const state = b64(game.view.stateId);
  const fresh = state !== drawnState;
  drawnState = state;
  drawnRoom = tableRoom(svg);
  // While the device is passed on, no hand is shown: the table as a spectator sees it.
  const ui: TableUi = again ? { ...again, room: drawnRoom } : {
    you: handover() === undefined ? you : SPECTATOR,
    width: drawnWidth,
    room: drawnRoom,
    selected,
    suggested,
    busy: isBusy(),
    fresh: fresh || shown.upTo !== undefined,
    upTo: shown.upTo,
    // Called once, as the move arrives (not again on every redraw).
    callout: fresh || shown.upTo !== undefined ? shown.callout : undefined,
  };
  const { svg: inner, height } = renderTable(game.view, ui);
  // Where the line is drawn now, a move to a new fit perhaps under way.
  const old = tableContent.querySelector<SVGGElement>("g.layout");
  const current = old ? getComputedStyle(old).transform : "";
  svg.setAttribute("viewBox", `0 0 ${Math.max(280, drawnWidth)} ${height}`);
  tableContent.innerHTML = inner;
  // A line made smaller moves there from where it was (a CSS transition; none with
  // reduced motion): the same hand's line, drawn anew, starts from the fit before.
  const layout = tableContent.querySelector<SVGGElement>("g.layout");
  // (A hand's end's line laid afresh, its tiles in new places, is not moved there.)
  const fitKey = `${game.view.matchId}|${game.view.handNumber}|${drawnWidth}|${layout?.dataset.laid}`;
  if (layout) {
    const transform = layout.style.transform;
    // (From where it is now: a move under way goes on rather than jump to its end.)
    if (drawnFit.key === fitKey && drawnFit.transform && (drawnFit.transform !== transform || (current && current !== getComputedStyle(layout).transform))) {
      layout.style.transform = current && current !== "none" ? current : drawnFit.transform;
      layout.getBoundingClientRect(); // the start of the transition
      layout.style.transform = transform;
    }
    drawnFit = { key: fitKey, transform };
  }
  fitTexts(Math.max(280, drawnWidth));
  // What the rest of the page shows is set after the table (the status line, the
  // clocks, the bar's hint): once it is, the table is drawn again, the same, if the
  // room it has changed, the keyboard's place kept.
  drawnUi = ui;
  if (!roomCheck) {
    roomCheck = true;
    queueMicrotask(() => {
      roomCheck = false;
      checkRoom();
    });
  }
}

/**
 * A line of the table's text longer than the room it has (a language with longer
 * words than English's, on a phone) is narrowed to fit, rather than run off the table.
 */
function fitTexts(width: number) {
  // A phone's opponent: the level alone, then the count alone, where the detail and the
  // hand size would meet.
  for (const box of tableContent.querySelectorAll("g.compact g.opponent")) {
    const size = box.querySelector<SVGTextElement>("text.hand-size");
    const detail = box.querySelector<SVGTextElement>("text.seat-detail");
    if (!size || !detail) continue;
    // Each on a line of its own (a phone's), within the box: the level alone ("easy",
    // not "easy bot"), then narrowed.
    if (size.getAttribute("y") !== detail.getAttribute("y")) {
      const boxWidth = Number(box.querySelector("rect.seat-box")?.getAttribute("width") ?? 0) - 16;
      if (detail.getComputedTextLength() > boxWidth) detail.textContent = detail.getAttribute("data-short");
      for (const text of [size, detail]) {
        if (text.getComputedTextLength() > boxWidth && boxWidth > 0) {
          text.setAttribute("textLength", String(boxWidth));
          text.setAttribute("lengthAdjust", "spacingAndGlyphs");
        }
      }
      continue;
    }
    const room = () => Number(detail.getAttribute("x")) - Number(size.getAttribute("x")) - size.getComputedTextLength() - 10;
    if (detail.getComputedTextLength() > room()) detail.textContent = detail.getAttribute("data-short");
    if (detail.getComputedTextLength() > room()) size.textContent = size.getAttribute("data-count");
    if (detail.getComputedTextLength() > room() && room() > 0) {
      detail.setAttribute("textLength", String(room()));
      detail.setAttribute("lengthAdjust", "spacingAndGlyphs");
    }
  }
  for (const text of tableContent.querySelectorAll<SVGTextElement>("text")) {
    const x = Number(text.getAttribute("x") ?? 0);
    const anchor = text.getAttribute("text-anchor");
    const room = anchor === "end" ? x - 8 : anchor === "middle" ? 2 * Math.min(x, width - x) - 16 : width - x - 8;
    if (room > 0 && text.getComputedTextLength() > room) {
      text.setAttribute("textLength", String(room));
      text.setAttribute("lengthAdjust", "spacingAndGlyphs");
    }
  }
}
// Drawn again when the screen's height changes (the table's room).
let drawnScreen = window.innerHeight;
window.addEventListener("resize", () => {
  if (game && window.innerHeight !== drawnScreen) render();
  drawnScreen = window.innerHeight;
});
// Drawn again when the page's width changes (a phone turned, a window resized).
new ResizeObserver(() => {
  const width = ($("table") as unknown as SVGSVGElement).clientWidth;
  if (game && width > 0 && Math.abs(width - drawnWidth) >= 1) render();
}).observe($("table"));

function focusNext(v: GameView) {
  if (v.phase === Phase.OVER) $("rematch").focus({ preventScroll: true });
  else if (v.phase === Phase.DEALING) $("deal").focus({ preventScroll: true });
  else if (v.mustDraw) $("draw").focus({ preventScroll: true });
  else {
    // The tile Suggest named, else the first playable one.
    const named = suggested?.tile ? tableContent.querySelector<SVGGElement>(`g.in-hand[data-tile="${tileKey(suggested.tile)}"]`) : null;
    (named ?? tableContent.querySelector<SVGGElement>("g.in-hand.playable") ?? tableContent.querySelector<SVGGElement>("g.in-hand"))?.focus({ preventScroll: true });
  }
}

function statusLine(v: GameView): string {
  const line = statusWords(v);
  return v.phase === Phase.PLAYING && v.turn === you && lowSaid === b64(v.stateId) ? `${line} ${T.timeLow(howLong(LOW_MS))}` : line;
}
function statusWords(v: GameView): string {
  if (v.phase === Phase.OVER) {
    // A friend's rematch offer, said where the player looks first too.
    const offered = offer?.from === v.matchId && !spectating() ? offer : undefined;
    return offered ? `${T.matchOver(winnerText(v))} ${T.rematchOffered(seatName(offered.seat, you))}` : T.matchOver(winnerText(v));
  }
  if (offline()) return T.statusOffline;
  if (hasOpenSeat(v)) return T.waitingInvite;
  if (v.phase === Phase.DEALING) return v.handNumber === 0 ? T.waitingDeal : T.handIsOver;
  if (spectating()) return T.watchingTurn(seatName(v.turn ?? 0, you), false);
  if (v.turn !== you) return T.onTurn(seatName(v.turn ?? 0, you), false);
  if (v.mustDraw) return T.mustDraw;
  if (v.layout.length === 0) return T.yourLead;
  return selected ? T.chooseEnd : T.chooseTile;
}

function winnerText(v: GameView): string {
  const seats = v.winnerSeats;
  if (seats.includes(you)) return seats.length > 1 ? T.wonYouAnd(seatName(seats.find((s) => s !== you)!, you)) : T.wonYou;
  return T.won(list(lang, seats.map((s) => seatName(s, you))), seats.length);
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
const sideName = (v: GameView, side: number) =>
  list(lang, (v.scores.find((s) => s.side === side)?.seats ?? [side]).map((s) => seatName(s, you)));

function miniTile(t: Tile): string {
  return `<svg class="mini" width="40" height="20" viewBox="0 0 40 20" role="img" aria-label="${esc(tileName(t))}"><title>${esc(tileName(t))}</title>` +
    `<rect x="0.5" y="0.5" width="39" height="19" rx="3" fill="#fbf8ef" stroke="#333"/><line x1="20" y1="3" x2="20" y2="17" stroke="#888"/>` +
    `<text x="10" y="15" text-anchor="middle" font-size="13">${t.a}</text><text x="30" y="15" text-anchor="middle" font-size="13">${t.b}</text></svg>`;
}

function renderHandEnd(g: Game, v: GameView) {
  const box = $("hand-end");
  const result = v.lastHand;
  box.hidden = v.phase === Phase.PLAYING;
  const dealButton = $<HTMLButtonElement>("deal");
  const waiting = hasOpenSeat(v);
  dealButton.hidden = v.phase === Phase.OVER || waiting;
  $("rematch").hidden = v.phase !== Phase.OVER || spectating();
  // A friend's offer of the rematch: said, and Rematch becomes Accept.
  const offered = offer !== undefined && offer.from === v.matchId && v.phase === Phase.OVER && !spectating() ? offer : undefined;
  const offerLine = $("rematch-offer");
  offerLine.hidden = offered === undefined;
  setText(offerLine, offered ? T.rematchOffered(seatName(offered.seat, you)) : "");
  setText($("rematch"), offered ? T.acceptRematch : T.rematch);
  if (spectating()) dealButton.hidden = true;
  $<HTMLButtonElement>("rematch").disabled = isBusy();
  dealButton.disabled = isBusy();
  if (box.hidden) return;
  if (waiting) {
    // Seats left open for friends: the invite, until every seat is taken.
    const open = v.seats.filter((s) => s.kind === SeatKind.OPEN).map((s) => esc(seatName(s.seat, you)));
    $("hand-end-title").textContent = T.waitingTitle;
    $("hand-end-body").innerHTML = spectating()
      ? `<p>${T.openSeatsWatching(list(lang, open))}</p>`
      : `<p>${T.openSeatsInvite(list(lang, open))}</p>` +
        `<p class="invite"><input id="invite-link" readonly aria-label="${esc(T.inviteLink)}" value="${esc(inviteLink(g))}"/>` +
        (canShare() ? `<button type="button" id="share-invite">${esc(T.share)}</button>` : "") +
        `<button type="button" id="copy-invite">${esc(T.copy)}</button></p>` +
        qrBlock(inviteLink(g)) +
        codeBlock(v);
    askCode(g);
    if (inviteInView && !spectating()) {
      // Just made: the invite in view (below the fold on a phone), its first button focused.
      inviteInView = false;
      box.scrollIntoView({ block: "start" });
      ($("share-invite") ?? $("copy-invite")).focus({ preventScroll: true });
    }
    return;
  }
  if (!result) {
    // Before the first deal (its Deal failed): offer it again.
    $("hand-end-title").textContent = T.readyFirstHand;
    $("hand-end-body").innerHTML = "";
    return;
  }
  // A forfeit between hands ends the match with the last hand's result still shown:
  // the forfeit is the title, not that hand's end.
  const forfeited = forfeitedBetweenHands(v);
  $("hand-end-title").textContent = forfeited
    ? forfeitSentence(forfeited.seat, forfeited.absent)
    : T.handTitle(result.hand, handEnd(result.reason, result.wentOut, result.reachedTarget, result.forfeited));
  // A forfeited hand's tiles stay face down: the result lists no one's hand.
  const hands =
    result.reason === HandEndReason.FORFEIT
      ? ""
      : result.hands
          .map(
            (h) =>
              `<li data-testid="revealed-${h.seat}"><strong>${esc(seatName(h.seat, you))}</strong>: ` +
              `${h.tiles.length ? h.tiles.map(miniTile).join(" ") : esc(T.noTiles)} — ${esc(T.pipsCounting(h.pips, h.rounded))}</li>`,
          )
          .join("");
  const settlement =
    result.reason === HandEndReason.TARGET_REACHED
      ? `<p>${esc(T.notSettled)}</p>`
      : result.reason === HandEndReason.FORFEIT
        ? `<p>${esc(T.forfeitNotSettled)} ${esc(T.forfeitHandsHidden)}</p>`
        : `<p>${T.settled(list(lang, result.settlement.map((s) => `${esc(sideName(v, s.side))} ${s.points > 0 ? "+" : ""}${num(lang, s.points)}`)))}</p>`;
  const over = v.phase === Phase.OVER ? `<p class="winner" data-testid="winner">${esc(T.matchOver(winnerText(v)))}</p>` : "";
  $("hand-end-body").innerHTML =
    `${hands ? `<ul class="revealed-hands">${hands}</ul>` : ""}${settlement}${over}${seatsEnded(v)}${g.sheet ? sheetTable(g.sheet, v) : ""}`;
}

/** "Ana left and forfeited the match." */
function forfeitSentence(seat: number, why: AbsenceReason): string {
  const who = seatName(seat, you);
  return why === AbsenceReason.LEFT ? T.logForfeitedLeft(who, seat === you) : T.logForfeitedTimedOut(who, seat === you);
}

/** The seat that forfeited a match over between hands (its player left, under
 * ABSENCE_RULE_FORFEIT: the only seat then absent), if it ended so. */
function forfeitedBetweenHands(v: GameView): { seat: number; absent: AbsenceReason } | undefined {
  if (v.phase !== Phase.OVER || v.lastHand?.reason === HandEndReason.FORFEIT) return undefined;
  if (v.rules?.absence?.rule !== AbsenceRule.FORFEIT) return undefined;
  return v.seats.find((s) => s.absent !== AbsenceReason.UNSPECIFIED);
}

/**
 * How each person's seat finished the match (rules section 11): played to the end, ran
 * out of time, or left (the view's seats' `absent`, kept at the end of a match); once
 * the match is over, if it had a clock or an absence.
 */
function seatsEnded(v: GameView): string {
  const people = v.seats.filter((s) => s.kind === SeatKind.CLAIMED || s.kind === SeatKind.HELD_BY_BOT);
  if (v.phase !== Phase.OVER || (!v.rules?.clock && !people.some((s) => s.absent !== AbsenceReason.UNSPECIFIED))) return "";
  const how = (seat: number, absent: AbsenceReason) => {
    const who = seatName(seat, you);
    if (absent === AbsenceReason.TIMED_OUT) return T.endedTimedOut(who, seat === you);
    if (absent === AbsenceReason.LEFT) return T.endedLeft(who, seat === you);
    return T.endedPlayedOut(who, seat === you);
  };
  const items = people.map((s) => `<li data-testid="ended-${s.seat}">${esc(how(s.seat, s.absent))}</li>`).join("");
  return `<p id="seats-ended-title">${esc(T.seatsEnded)}</p><ul class="seats-ended" aria-labelledby="seats-ended-title">${items}</ul>`;
}

function sheetTable(sheet: ScoreSheet, v: GameView): string {
  const sides = v.scores.map((s) => s.side);
  const head = sides.map((s) => `<th>${esc(sideName(v, s))}</th>`).join("");
  const rows = [...(sheet.carried ? [sheet.carried] : []), ...sheet.rows]
    .map((r) => {
      const label = r.firstHand === r.lastHand ? `${r.firstHand}` : `${r.firstHand}–${r.lastHand}`;
      return `<tr><th>${label}</th>${r.sides.map((l) => `<td><strong class="total">${l.total}</strong> <small>${playAndSettlement(l.play, l.settlement)}</small></td>`).join("")}</tr>`;
    })
    .join("");
  return `<table class="sheet" data-testid="sheet"><caption>${esc(T.sheetCaption(sheet.target))}</caption>` +
    `<thead><tr><th>${esc(T.sheetHand)}</th>${head}</tr></thead><tbody>${rows}</tbody></table>` +
    `<p class="muted">${esc(T.sheetNote)}</p>`;
}

// --- The new-match form. -------------------------------------------------------------
function seatsFields() {
  const players = Number((form.elements.namedItem("players") as HTMLSelectElement).value);
  const box = $("seats");
  const before = new Map([...box.querySelectorAll("select")].map((s) => [s.name, s.value]));
  box.innerHTML = `<legend>${esc(T.opponentsLegend)}</legend>`;
  for (let seat = 1; seat < players; seat++) {
    const label = document.createElement("label");
    label.textContent = `${seatName(seat, 0)} `;
    const select = document.createElement("select");
    select.name = `bot${seat}`;
    for (const level of [BotLevel.EASY, BotLevel.MEDIUM, BotLevel.HARD]) select.add(new Option(T.bot(levelName(level)), String(level)));
    select.add(new Option(T.friendOption, "friend"));
    select.add(new Option(T.hereOption, "here"));
    select.value = before.get(select.name) ?? String(BotLevel.MEDIUM);
    label.append(select);
    box.append(label);
  }
  const partnership = form.elements.namedItem("partnership") as HTMLInputElement;
  partnership.disabled = players !== 4;
  if (players !== 4) partnership.checked = false;
}

/** How to play: beside the log at the table, under the forms before a match. */
function placeHowTo() {
  const howTo = $("how-to");
  const home = game ? $("sheet-box") : $("handover");
  if (howTo.nextElementSibling !== home) home.before(howTo);
}

function showForm() {
  placeHowTo();
  form.hidden = false;
  codeForm.hidden = false;
  const name = form.elements.namedItem("name") as HTMLInputElement;
  if (!name.value) name.value = localStorage.getItem(NAME_KEY) ?? "";
  $("cancel-new-match").hidden = !game;
  seatsFields();
  (form.elements.namedItem("players") as HTMLSelectElement).focus({ preventScroll: true });
}

// --- Wiring: clicks and the keyboard on the SVG, the buttons, the form. ---------------
function activate(target: Element | null, byKeyboard: boolean) {
  const el = target?.closest<SVGGElement>("[data-key]");
  if (!el || isBusy() || !game) return;
  if (el.dataset.tile) {
    if (el.getAttribute("aria-disabled") === "true") {
      hint = whyNot(game.view, el.dataset.tile);
      $("hint").textContent = hint;
      return;
    }
    // A tap (or click) on a tile that fits one end only plays it there at once.
    const fits = game.view.legalMoves.filter((m) => m.tile && tileKey(m.tile) === el.dataset.tile);
    if (!byKeyboard && fits.length === 1 && selected !== el.dataset.tile) {
      void play(fits[0].tile!, fits[0].end);
      return;
    }
    selected = selected === el.dataset.tile ? undefined : el.dataset.tile;
    render();
    // From the keyboard, go on to the first end the tile fits.
    if (byKeyboard && selected) (tableContent.querySelector(".target") as SVGGElement | null)?.focus({ preventScroll: true });
  } else if (el.dataset.end !== undefined && selected) {
    const [a, b] = selected.split("-").map(Number);
    void play({ a, b }, Number(el.dataset.end) as End);
  }
}
/** Why a tile of the hand cannot be played now, in a sentence. */
function whyNot(v: GameView, key: string): string {
  const [a, b] = key.split("-").map(Number);
  if (v.phase !== Phase.PLAYING) return T.handIsOver;
  if (v.turn !== you) return T.waitYourTurn(seatName(v.turn ?? 0, you), false);
  const shown = [...new Set(v.openEnds.map((e) => pipName(e.pip)))];
  return T.fitsNoEnd(tileName({ a, b }), shown, v.mustDraw);
}

// Drag to play: press on a playable tile, move (its ends light up), release over one.
let drag: { tile: string; x: number; y: number; moved: boolean } | undefined;
let dragged = false;
tableContent.addEventListener("pointerdown", (e) => {
  const el = (e.target as Element).closest<SVGGElement>("g.in-hand.playable");
  drag = el && !isBusy() && game ? { tile: el.dataset.tile!, x: e.clientX, y: e.clientY, moved: false } : undefined;
});
window.addEventListener("pointermove", (e) => {
  if (!drag || drag.moved || Math.hypot(e.clientX - drag.x, e.clientY - drag.y) < 8) return;
  drag.moved = true;
  // The tile is drawn again (chosen) at once, and a finger's events stay with the
  // element it touched first, even once that is gone: the table takes them instead.
  ($("table") as unknown as SVGSVGElement).setPointerCapture?.(e.pointerId);
  selected = drag.tile;
  suggested = undefined;
  render();
});
window.addEventListener("pointercancel", () => (drag = undefined));
// A finger on a playable tile drags it rather than scrolling the page. (CSS
// touch-action does not reach into an SVG's shapes in chromium, which then takes the
// move for a scroll and cancels the pointer.) A touch's events keep the element first
// touched as their target, even once the table is drawn again without it, so the
// listener goes on that element.
tableContent.addEventListener(
  "touchstart",
  (e) => {
    if (!(e.target as Element).closest("g.in-hand.playable")) return;
    e.target!.addEventListener("touchmove", (m) => drag && m.cancelable && m.preventDefault(), { passive: false });
  },
  { passive: true },
);
window.addEventListener("pointerup", (e) => {
  const d = drag;
  drag = undefined;
  if (!d?.moved || !game) return;
  // The click that may follow (a mouse's) is not a tap; a finger's drag is followed by
  // none, so the mark goes after a moment, lest it swallow the next tap.
  dragged = true;
  setTimeout(() => (dragged = false), 300);
  const end = document.elementFromPoint(e.clientX, e.clientY)?.closest<SVGGElement>("g.target")?.dataset.end;
  if (end === undefined) return; // dropped elsewhere: the tile stays chosen
  const [a, b] = d.tile.split("-").map(Number);
  void play({ a, b }, Number(end) as End);
});

tableContent.addEventListener("click", (e) => {
  if (dragged) {
    dragged = false;
    return;
  }
  activate(e.target as Element, false);
});
tableContent.addEventListener("keydown", (e) => {
  if (e.key === "Enter" || e.key === " ") {
    e.preventDefault();
    activate(e.target as Element, true);
  } else if (e.key === "Escape" && selected) {
    const key = `tile-${selected}`;
    selected = undefined;
    render();
    (tableContent.querySelector(`[data-key="${key}"]`) as SVGGElement | null)?.focus({ preventScroll: true });
  }
});
$("draw").addEventListener("click", () => void draw());
$("hand-end").addEventListener("click", (e) => {
  if ((e.target as Element).id === "copy-code" && code?.code) {
    void navigator.clipboard?.writeText(code.code).then(
      () => ($("hint").textContent = T.codeCopied),
      () => {},
    );
    return;
  }
  if ((e.target as Element).id === "share-invite") {
    // The phone's share sheet; where it fails (not allowed, or dismissed), Copy stays.
    void navigator.share({ title: T.appTitle, text: T.shareText, url: $<HTMLInputElement>("invite-link").value }).catch(() => {});
    return;
  }
  if ((e.target as Element).id !== "copy-invite") return;
  const link = $<HTMLInputElement>("invite-link");
  link.select();
  void navigator.clipboard?.writeText(link.value).then(
    () => ($("hint").textContent = T.linkCopied),
    () => {},
  );
});
$("suggest").addEventListener("click", () => void suggest());
$("leave").addEventListener("click", () => void leave());
$("return-seat").addEventListener("click", () => void returnToSeat());
$("deal").addEventListener("click", () => void deal());
$("rematch").addEventListener("click", () => void rematch());
$("handover-button").addEventListener("click", (e) => void takeOver(Number((e.currentTarget as HTMLElement).dataset.seat)));
$("new-match-button").addEventListener("click", () => {
  showError("");
  showForm();
});
$("cancel-new-match").addEventListener("click", () => {
  hideForms();
  // Back where the player was: the button that opened the form.
  $("new-match-button").focus({ preventScroll: true });
});
(form.elements.namedItem("players") as HTMLSelectElement).addEventListener("change", seatsFields);
form.addEventListener("submit", (e) => {
  e.preventDefault();
  // A match in progress ends here: ask first.
  if (game && game.view.phase !== Phase.OVER && !window.confirm(T.confirmNewMatch)) return;
  void newMatch(new FormData(form));
});
// A refusal's sentence is about what was sent: it goes once the form is changed.
form.addEventListener("input", () => showError(""));

// The invited player says its name first (a tap on Join: nothing is claimed before),
// whether the invite came as a link or as a code.
const joinForm = $<HTMLFormElement>("join");
const nameField = joinForm.elements.namedItem("name") as HTMLInputElement;
let invited: Uint8Array | undefined;
function askToJoin(token: Uint8Array) {
  invited = token;
  nameField.value = localStorage.getItem(NAME_KEY) ?? "";
  joinForm.hidden = false;
  nameField.focus();
}
joinForm.addEventListener("submit", (e) => {
  e.preventDefault();
  if (!invited || isBusy()) return;
  const name = nameField.value.trim();
  localStorage.setItem(NAME_KEY, name);
  joinForm.hidden = true;
  void join(invited, load(), name);
});
codeForm.addEventListener("submit", (e) => {
  e.preventDefault();
  const typed = (codeForm.elements.namedItem("code") as HTMLInputElement).value;
  void joinByCode(typed);
});
codeForm.addEventListener("input", () => showError(""));

// Hooks for the browser tests (only with ?debug=1): send a Play the page would not
// offer, through the same path as a click, to show how a refusal reads; and draw a view
// the test made (a line of play longer than a test can count on reaching), to measure
// how the table lays it out.
if (params.get("debug") === "1") {
  (window as unknown as { allfivesDebug: object }).allfivesDebug = {
    play: (a: number, b: number, end: End) => play({ a, b }, end),
    view: () => toJson(GameViewSchema, game!.view),
    /** When the view shown arrived (performance.now()): what its countdown runs from. */
    receivedAt: () => game!.receivedAt,
    show: (json: JsonValue) => {
      game!.view = fromJson(GameViewSchema, json);
      game!.receivedAt = monotonicMs();
      render();
    },
  };
}

// --- The page's language. -------------------------------------------------------------
const LANG_KEY = "allfives-lang";
const langSelect = $<HTMLSelectElement>("lang");
for (const [code, words] of Object.entries(LANGUAGES)) {
  const option = new Option(words.languageName, code);
  option.lang = code;
  langSelect.add(option);
}
/**
 * Says the page's own text in the current language: `lang` and `dir` on <html>, the
 * title, and every element of static/index.html marked with the key of its words
 * (data-t: its text; data-t-placeholder, data-t-label: those attributes).
 */
function applyLanguage() {
  document.documentElement.lang = lang;
  document.documentElement.dir = dir(lang);
  document.title = T.appTitle;
  tellTurn();
  const words = (el: Element, attr: string) => T[el.getAttribute(attr) as TextKey];
  for (const el of document.querySelectorAll("[data-t]")) el.textContent = words(el, "data-t");
  for (const el of document.querySelectorAll("[data-t-placeholder]")) el.setAttribute("placeholder", words(el, "data-t-placeholder"));
  for (const el of document.querySelectorAll("[data-t-label]")) el.setAttribute("aria-label", words(el, "data-t-label"));
  for (const [i, option] of [...$<HTMLSelectElement>("hint-level").options].entries()) option.text = T.levels[i];
  $("server").textContent = T.server(SERVER);
  sayOffline();
  langSelect.value = lang;
}

// The page's language: chosen before, else the browser's, else English.
setLanguage(pickLanguage(localStorage.getItem(LANG_KEY), navigator.languages ?? [navigator.language]));
applyLanguage();
langSelect.addEventListener("change", () => {
  if (!isLang(langSelect.value)) return;
  localStorage.setItem(LANG_KEY, langSelect.value);
  setLanguage(langSelect.value);
  applyLanguage();
  // What was said in the other language goes; the rest is said again in this one.
  showError("");
  hint = "";
  if (!form.hidden) seatsFields();
  render();
});
// On a phone the log starts folded: a tap away.
if (window.matchMedia("(max-width: 640px)").matches) $("log-box").removeAttribute("open");
const saved = load();
const invite = /^#join=([A-Za-z0-9_-]+)$/.exec(window.location.hash)?.[1];
const watched = /^#watch=([0-9a-f]{32})$/.exec(window.location.hash)?.[1];
if (watched) {
  void spectate(watched);
} else if (invite) {
  askToJoin(unb64url(invite));
  document.body.dataset.state = "idle";
} else if (saved) {
  void resume(saved);
} else {
  showForm();
  document.body.dataset.state = "idle";
}
