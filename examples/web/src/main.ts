// The page: a new-match form, the table (src/table.ts) and its controls, driven by the
// allfives service over gRPC-Web (@connectrpc/connect-web, code generated from
// ../../proto). The page keeps the state token and its seat's credential in
// localStorage, so a reload continues the match; every other seat is a bot the server
// plays within the page's own calls. The server is http://127.0.0.1:50051 unless the
// address names another: ?server=http://host:port.
import { createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import {
  AllFivesService,
  BotLevel,
  End,
  HandEndReason,
  Phase,
  type Event,
  type GameView,
  type LegalMove,
  type ScoreSheet,
  type Tile,
} from "./gen/allfives/v1/allfives_pb.js";
import { renderTable, seatLabel, tileKey } from "./table.js";
import {
  endName,
  isNetworkFailure,
  levelName,
  refusesSaved,
  seatName,
  sentenceFor,
  tileName,
  whyUnreachable,
} from "./words.js";

const params = new URLSearchParams(window.location.search);
const SERVER = (params.get("server") ?? "http://127.0.0.1:50051").replace(/\/+$/, "");
const STORAGE_KEY = `allfives-web:${SERVER}`;
const YOU = 0; // the page plays seat 0; the other seats are the server's bots
const CALL_TIMEOUT_MS = 15_000;

const client = createClient(AllFivesService, createGrpcWebTransport({ baseUrl: SERVER }));

// --- Storage: the token and the credential, base64. ---------------------------------
interface Saved {
  state: string;
  credential: string;
}
const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const unb64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
function load(): { state: Uint8Array; credential: Uint8Array } | undefined {
  try {
    const saved = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "null") as Saved | null;
    return saved ? { state: unb64(saved.state), credential: unb64(saved.credential) } : undefined;
  } catch {
    return undefined;
  }
}
function save() {
  if (!game) return;
  const saved: Saved = { state: b64(game.state), credential: b64(game.credential) };
  localStorage.setItem(STORAGE_KEY, JSON.stringify(saved));
}

// --- What the page knows. ------------------------------------------------------------
interface Game {
  state: Uint8Array;
  credential: Uint8Array;
  view: GameView;
  sheet?: ScoreSheet;
  log: string[];
}
let game: Game | undefined;
let selected: string | undefined;
let suggested: LegalMove | undefined;
let hint = "";
let busy = false;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const form = $<HTMLFormElement>("new-match");
const tableContent = document.getElementById("table-content") as unknown as SVGGElement;

function showError(text: string) {
  const el = $("error");
  el.textContent = text;
  el.hidden = text === "";
}

/**
 * Runs one call; a refusal becomes a plain sentence on the page and changes nothing.
 * Returns the error, if there was one.
 */
async function call(what: () => Promise<void>): Promise<unknown> {
  if (busy) return undefined;
  busy = true;
  document.body.dataset.state = "busy";
  showError("");
  try {
    await what();
  } catch (err) {
    const reach = isNetworkFailure(err) ? await whyUnreachable(SERVER) : undefined;
    showError(sentenceFor(err, reach));
    console.warn("allfives call failed:", err);
    return err;
  } finally {
    busy = false;
    render();
    document.body.dataset.state = "idle";
  }
  return undefined;
}

const me = () => ({ viewer: YOU, credential: game!.credential });
const opts = () => ({ timeoutMs: CALL_TIMEOUT_MS });

/** Takes an answer's token, view and events, and the sheet when a hand is over. */
async function take(answer: { state?: Uint8Array; view?: GameView; events?: Event[] }) {
  const g = game!;
  if (answer.state && answer.state.length > 0) g.state = answer.state;
  if (answer.view) g.view = answer.view;
  for (const e of answer.events ?? []) g.log.push(describe(e, g.view));
  selected = undefined;
  suggested = undefined;
  hint = "";
  save();
  if (g.view.phase !== Phase.PLAYING) {
    g.sheet = (await client.score({ state: g.state, ...me() }, opts())).sheet;
  }
}

function describe(e: Event, view: GameView): string {
  const who = (seat: number) => seatLabel(view, seat, YOU);
  switch (e.kind.case) {
    case "dealt":
      return `Hand ${e.kind.value.hand} dealt; ${who(e.kind.value.starter)} ${e.kind.value.starter === YOU ? "lead" : "leads"}.`;
    case "tilePlayed": {
      const p = e.kind.value;
      const where = p.end === End.UNSPECIFIED ? "as the lead" : `on ${endName(p.end)}`;
      return `${who(p.seat)} played ${tileName(p.tile!)} ${where}: count ${p.count}${p.points ? `, scoring ${p.points}` : ""}.`;
    }
    case "tileDrawn":
      return `${who(e.kind.value.seat)} drew ${e.kind.value.tile ? tileName(e.kind.value.tile) : "a tile"}.`;
    case "passed":
      return `${who(e.kind.value.seat)} passed.`;
    case "handEnded":
      return `Hand ${e.kind.value.hand} ended: ${handEnd(e.kind.value.reason, e.kind.value.wentOut, e.kind.value.reachedTarget)}`;
    case "gameEnded":
      return `The match is over: ${e.kind.value.winnerSeats.map((s) => seatName(s, YOU)).join(" & ")} won.`;
    default:
      return "";
  }
}

function handEnd(reason: HandEndReason, wentOut?: number, reached?: number): string {
  switch (reason) {
    case HandEndReason.DOMINO:
      return `${seatName(wentOut ?? 0, YOU)} went out.`;
    case HandEndReason.BLOCKED:
      return "blocked: nobody could play.";
    case HandEndReason.TARGET_REACHED:
      return `${seatName(reached ?? 0, YOU)} reached the target.`;
    default:
      return "";
  }
}

// --- Actions. ------------------------------------------------------------------------
function newMatch(data: FormData) {
  const players = Number(data.get("players"));
  const seats = [{ claim: true }, ...[...Array(players - 1)].map((_, i) => ({ bot: Number(data.get(`bot${i + 1}`)) as BotLevel }))];
  const rules = {
    players,
    partnership: data.get("partnership") === "on" && players === 4,
    handSize: Number(data.get("handSize")),
    target: Number(data.get("target")),
    settlement: Number(data.get("settlement")),
  };
  return call(async () => {
    const answer = await client.newGame({ rules, viewer: YOU, seats }, opts());
    game = { state: answer.state, credential: answer.credentials[0].credential, view: answer.view!, log: [] };
    save();
    form.hidden = true;
    await take(await client.deal({ state: game.state, ...me() }, opts()));
  });
}

const deal = () => call(async () => take(await client.deal({ state: game!.state, ...me() }, opts())));
const draw = () => call(async () => take(await client.draw({ state: game!.state, seat: YOU, ...me() }, opts())));
const play = (tile: Tile | { a: number; b: number }, end: End) =>
  call(async () => take(await client.play({ state: game!.state, seat: YOU, tile, end, ...me() }, opts())));

function suggest() {
  const level = Number($<HTMLSelectElement>("hint-level").value) as BotLevel;
  return call(async () => {
    const g = game!;
    const answer = await client.suggest({ state: g.state, seat: YOU, level, credential: g.credential }, opts());
    if (answer.draw) {
      hint = `The ${levelName(level)} bot says: draw.`;
    } else if (answer.play?.tile) {
      suggested = answer.play;
      selected = tileKey(answer.play.tile);
      const where = answer.play.end === End.UNSPECIFIED ? "as the lead" : `on ${endName(answer.play.end)}`;
      hint = `The ${levelName(level)} bot suggests ${tileName(answer.play.tile)} ${where} (${answer.play.points} points).`;
    }
  });
}

async function resume(saved: { state: Uint8Array; credential: Uint8Array }) {
  const err = await call(async () => {
    const answer = await client.score({ state: saved.state, viewer: YOU, credential: saved.credential, includeHandEvents: true }, opts());
    game = { ...saved, view: answer.view!, sheet: answer.sheet, log: [] };
    for (const e of answer.handEvents) game.log.push(describe(e, game.view));
  });
  // A token (or seat key) the server refuses will never be taken: forget it, so the
  // next reload offers a new match instead of the same refusal.
  if (err !== undefined && refusesSaved(err)) localStorage.removeItem(STORAGE_KEY);
  if (!game) showForm();
}

// --- Rendering. ----------------------------------------------------------------------
function render() {
  const g = game;
  $("game").hidden = !g;
  $("new-match-button").hidden = !g;
  if (!g) return;
  const v = g.view;
  const playing = v.phase === Phase.PLAYING;
  const yours = playing && v.turn === YOU;
  document.body.dataset.phase = Phase[v.phase];
  document.body.dataset.moves = String(v.moves);
  document.body.dataset.hand = String(v.handNumber);

  // Keep the keyboard's place across the redraw; when the focused tile or end is gone
  // (played), go on to what comes next: a playable tile, Draw, or Deal.
  const active = document.activeElement as HTMLElement | null;
  const focused = active?.dataset?.key;
  const wasHere = focused !== undefined || active?.id === "draw" || active?.id === "deal";
  tableContent.innerHTML = renderTable(v, { you: YOU, selected, suggested, busy });
  $<HTMLButtonElement>("draw").disabled = busy || !(yours && v.mustDraw);
  $<HTMLButtonElement>("suggest").disabled = busy || !yours;
  renderHandEnd(g);
  const again = focused ? (tableContent.querySelector(`[data-key="${focused}"]`) as SVGGElement | null) : null;
  if (again) again.focus();
  else if (wasHere && !busy) focusNext(v);
  $("hint").textContent = hint;
  $("status").textContent = statusLine(v);

  // The log only grows (a live region: a screen reader reads each new line once).
  const log = $("log");
  if (log.dataset.match !== v.matchId || Number(log.dataset.lines) > g.log.length) {
    log.replaceChildren();
    log.dataset.match = v.matchId;
    log.dataset.lines = "0";
  }
  for (const line of g.log.slice(Number(log.dataset.lines))) {
    const li = document.createElement("li");
    li.textContent = line;
    log.append(li);
  }
  log.dataset.lines = String(g.log.length);
  while (log.children.length > 200) log.firstElementChild!.remove();
  log.scrollTop = log.scrollHeight;

  $("sheet").innerHTML = g.sheet ? sheetTable(g.sheet, v) : "";
}

function focusNext(v: GameView) {
  if (v.phase === Phase.OVER) $("new-match-button").focus();
  else if (v.phase === Phase.DEALING) $("deal").focus();
  else if (v.mustDraw) $("draw").focus();
  else (tableContent.querySelector("g.in-hand.playable") as SVGGElement | null)?.focus();
}

function statusLine(v: GameView): string {
  if (v.phase === Phase.OVER) return `The match is over: ${winnerText(v)}`;
  if (v.phase === Phase.DEALING) return v.handNumber === 0 ? "Waiting for the deal." : "The hand is over.";
  if (v.turn !== YOU) return `${seatName(v.turn ?? 0, YOU)} is on turn.`;
  if (v.mustDraw) return "You have nothing to play: draw from the boneyard.";
  if (v.layout.length === 0) return "Your lead: choose any tile, then the centre.";
  return selected ? "Now choose an end (highlighted, with the points it scores)." : "Your turn: choose a tile (playable ones are raised).";
}

function winnerText(v: GameView): string {
  const seats = v.winnerSeats;
  if (seats.includes(YOU)) return seats.length > 1 ? `you and ${seatName(seats.find((s) => s !== YOU)!, YOU)} won.` : "you won!";
  return `${seats.map((s) => seatName(s, YOU)).join(" & ")} won.`;
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
const sideName = (v: GameView, side: number) =>
  (v.scores.find((s) => s.side === side)?.seats ?? [side]).map((s) => seatName(s, YOU)).join(" & ");

function miniTile(t: Tile): string {
  return `<svg class="mini" width="40" height="20" viewBox="0 0 40 20" role="img" aria-label="${tileName(t)}"><title>${tileName(t)}</title>` +
    `<rect x="0.5" y="0.5" width="39" height="19" rx="3" fill="#fbf8ef" stroke="#333"/><line x1="20" y1="3" x2="20" y2="17" stroke="#888"/>` +
    `<text x="10" y="15" text-anchor="middle" font-size="13">${t.a}</text><text x="30" y="15" text-anchor="middle" font-size="13">${t.b}</text></svg>`;
}

function renderHandEnd(g: Game) {
  const v = g.view;
  const box = $("hand-end");
  const result = v.lastHand;
  box.hidden = v.phase === Phase.PLAYING;
  const dealButton = $<HTMLButtonElement>("deal");
  dealButton.hidden = v.phase === Phase.OVER;
  dealButton.disabled = busy;
  if (box.hidden) return;
  if (!result) {
    // Before the first deal (its Deal failed): offer it again.
    $("hand-end-title").textContent = "Ready to deal the first hand";
    $("hand-end-body").innerHTML = "";
    return;
  }
  $("hand-end-title").textContent = `Hand ${result.hand}: ${handEnd(result.reason, result.wentOut, result.reachedTarget)}`;
  const hands = result.hands
    .map(
      (h) =>
        `<li data-testid="revealed-${h.seat}"><strong>${esc(seatName(h.seat, YOU))}</strong>: ` +
        `${h.tiles.length ? h.tiles.map(miniTile).join(" ") : "no tiles"} — ${h.pips} pips, counting ${h.rounded}</li>`,
    )
    .join("");
  const settlement =
    result.reason === HandEndReason.TARGET_REACHED
      ? "<p>A placement reached the target, so the hand was not settled.</p>"
      : `<p>Settlement: ${result.settlement.map((s) => `${esc(sideName(v, s.side))} ${s.points > 0 ? "+" : ""}${s.points}`).join(", ")}.</p>`;
  const over = v.phase === Phase.OVER ? `<p class="winner" data-testid="winner">The match is over: ${esc(winnerText(v))}</p>` : "";
  $("hand-end-body").innerHTML =
    `<ul class="revealed-hands">${hands}</ul>${settlement}${over}${g.sheet ? sheetTable(g.sheet, v) : ""}`;
}

function sheetTable(sheet: ScoreSheet, v: GameView): string {
  const sides = v.scores.map((s) => s.side);
  const head = sides.map((s) => `<th>${esc(sideName(v, s))}</th>`).join("");
  const rows = [...(sheet.carried ? [sheet.carried] : []), ...sheet.rows]
    .map((r) => {
      const label = r.firstHand === r.lastHand ? `${r.firstHand}` : `${r.firstHand}–${r.lastHand}`;
      return `<tr><th>${label}</th>${r.sides.map((l) => `<td><strong class="total">${l.total}</strong> <small>${l.play} + ${l.settlement}</small></td>`).join("")}</tr>`;
    })
    .join("");
  return `<table class="sheet" data-testid="sheet"><caption>Score sheet, target ${sheet.target}</caption>` +
    `<thead><tr><th>hand</th>${head}</tr></thead><tbody>${rows}</tbody></table>` +
    `<p class="muted">Each cell: the running total, then the hand's points from play + settlement.</p>`;
}

// --- The new-match form. -------------------------------------------------------------
function seatsFields() {
  const players = Number((form.elements.namedItem("players") as HTMLSelectElement).value);
  const box = $("seats");
  const before = new Map([...box.querySelectorAll("select")].map((s) => [s.name, s.value]));
  box.innerHTML = "<legend>Opponents: the server's bots</legend>";
  for (let seat = 1; seat < players; seat++) {
    const label = document.createElement("label");
    label.textContent = `${seatName(seat, YOU)} `;
    const select = document.createElement("select");
    select.name = `bot${seat}`;
    for (const level of [BotLevel.EASY, BotLevel.MEDIUM, BotLevel.HARD]) select.add(new Option(`${levelName(level)} bot`, String(level)));
    select.value = before.get(select.name) ?? String(BotLevel.MEDIUM);
    label.append(select);
    box.append(label);
  }
  const partnership = form.elements.namedItem("partnership") as HTMLInputElement;
  partnership.disabled = players !== 4;
  if (players !== 4) partnership.checked = false;
}

function showForm() {
  form.hidden = false;
  $("cancel-new-match").hidden = !game;
  seatsFields();
  (form.elements.namedItem("players") as HTMLSelectElement).focus();
}

// --- Wiring: clicks and the keyboard on the SVG, the buttons, the form. ---------------
function activate(target: Element | null, byKeyboard: boolean) {
  const el = target?.closest<SVGGElement>("[data-key]");
  if (!el || busy || !game) return;
  if (el.dataset.tile) {
    if (el.getAttribute("aria-disabled") === "true") return;
    selected = selected === el.dataset.tile ? undefined : el.dataset.tile;
    render();
    // From the keyboard, go on to the first end the tile fits.
    if (byKeyboard && selected) (tableContent.querySelector(".target") as SVGGElement | null)?.focus();
  } else if (el.dataset.end !== undefined && selected) {
    const [a, b] = selected.split("-").map(Number);
    void play({ a, b }, Number(el.dataset.end) as End);
  }
}
tableContent.addEventListener("click", (e) => activate(e.target as Element, false));
tableContent.addEventListener("keydown", (e) => {
  if (e.key === "Enter" || e.key === " ") {
    e.preventDefault();
    activate(e.target as Element, true);
  } else if (e.key === "Escape" && selected) {
    const key = `tile-${selected}`;
    selected = undefined;
    render();
    (tableContent.querySelector(`[data-key="${key}"]`) as SVGGElement | null)?.focus();
  }
});
$("draw").addEventListener("click", () => void draw());
$("suggest").addEventListener("click", () => void suggest());
$("deal").addEventListener("click", () => void deal());
$("new-match-button").addEventListener("click", showForm);
$("cancel-new-match").addEventListener("click", () => {
  form.hidden = true;
});
(form.elements.namedItem("players") as HTMLSelectElement).addEventListener("change", seatsFields);
form.addEventListener("submit", (e) => {
  e.preventDefault();
  void newMatch(new FormData(form));
});

// A hook for the browser tests (only with ?debug=1): send a Play the page would not
// offer, through the same path as a click, to show how a refusal reads.
if (params.get("debug") === "1") {
  (window as unknown as { allfivesDebug: object }).allfivesDebug = {
    play: (a: number, b: number, end: End) => play({ a, b }, end),
  };
}

$("server").textContent = `server ${SERVER}`;
const saved = load();
if (saved) {
  void resume(saved);
} else {
  showForm();
  document.body.dataset.state = "idle";
}
