// The table in SVG, drawn from a GameView alone: the opponents (tile backs, hand
// sizes, or their tiles once a hand has ended), the line of play with the spinner and
// its four arms (doubles crosswise, each tile edged in the colour of the seat that
// played it), the open ends (as targets for the chosen tile, with the points each
// move would score), the count, the boneyard, the scores, and the player's hand.
import { Arm, End, HandEndReason, Phase, SeatKind, type GameView, type LegalMove, type PlacedTile } from "./gen/allfives/v1/allfives_pb.js";
import { SEAT_COLOURS, endName, levelName, pipName, pointsWord, seatMark, seatName, tileName } from "./words.js";
import { T, lang } from "./lang/index.js";
import { list, num } from "./lang/util.js";
import { U, centredAt, fitHolds, fitLine, settleLine, turnBounds, type Box, type Fit } from "./line.js";

/** Below this width (CSS pixels), the compact table of a phone held upright. */
export const COMPACT = 640;
export interface TableUi {
  you: number;
  /** The table's width in CSS pixels: the drawing is made to it, one unit a pixel. */
  width: number;
  /**
   * The height the table may take on the screen (CSS pixels): the felt takes what the
   * opponents, the status line and the hand leave of it. Without, a felt of a fixed shape.
   */
  room?: number;
  /** The view is new on the page: its last placed tile arrives (a short animation). */
  fresh?: boolean;
  /** While an answer is played back: only the tiles placed up to this order. */
  upTo?: number;
  /** The points a move scored, called on the table. */
  callout?: { seat: number; points: number };
  /** The chosen tile of the hand, "a-b". */
  selected?: string;
  /** The move Suggest advised. */
  suggested?: LegalMove;
  busy: boolean;
}

export const tileKey = (t: { a: number; b: number }) => `${Math.min(t.a, t.b)}-${Math.max(t.a, t.b)}`;
const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);

// Pip positions in a unit square, for 0 to 6.
const PIPS: [number, number][][] = [
  [],
  [[0.5, 0.5]],
  [[0.25, 0.25], [0.75, 0.75]],
  [[0.25, 0.25], [0.5, 0.5], [0.75, 0.75]],
  [[0.25, 0.25], [0.75, 0.25], [0.25, 0.75], [0.75, 0.75]],
  [[0.25, 0.25], [0.75, 0.25], [0.5, 0.5], [0.25, 0.75], [0.75, 0.75]],
  [[0.25, 0.22], [0.75, 0.22], [0.25, 0.5], [0.75, 0.5], [0.25, 0.78], [0.75, 0.78]],
];

function half(x: number, y: number, size: number, n: number): string {
  return PIPS[n]
    .map(([px, py]) => `<circle cx="${x + px * size}" cy="${y + py * size}" r="${size * 0.09}" class="pip"/>`)
    .join("");
}

/** A tile face with its top-left corner at (x, y); `first` is the left (or top) half. */
function face(x: number, y: number, long: number, horizontal: boolean, first: number, second: number): string {
  const s = long / 2;
  const w = horizontal ? long : s;
  const h = horizontal ? s : long;
  const divider = horizontal
    ? `<line x1="${x + s}" y1="${y + 3}" x2="${x + s}" y2="${y + h - 3}" class="divider"/>`
    : `<line x1="${x + 3}" y1="${y + s}" x2="${x + w - 3}" y2="${y + s}" class="divider"/>`;
  const second_at = horizontal ? [x + s, y] : [x, y + s];
  return (
    `<rect x="${x}" y="${y}" width="${w}" height="${h}" rx="${s * 0.18}" class="face"/>` +
    divider +
    half(x, y, s, first) +
    half(second_at[0], second_at[1], s, second)
  );
}

/** Whether `seat` plays on the same side as `you` (a partnership). */
export function isPartner(view: GameView, seat: number, you: number): boolean {
  return seat !== you && view.scores.some((s) => s.seats.includes(seat) && s.seats.includes(you));
}

/** "Seat 3, partner (medium bot)", "Seat 2 (easy bot)", "You". */
export function seatLabel(view: GameView, seat: number, you: number): string {
  const status = view.seats[seat];
  const level = status?.bot ? ` (${T.bot(levelName(status.bot))})` : status?.kind === SeatKind.OPEN ? ` (${T.open})` : "";
  return seatName(seat, you) + (isPartner(view, seat, you) ? `, ${T.partner}` : "") + level;
}

/** Where a placed tile lies: "the lead", "the left arm, 2nd from the lead". */
function placeName(t: PlacedTile): string {
  if (t.arm === Arm.LEAD || t.arm < Arm.LEFT) return T.placeLead;
  return T.placeOnArm(T.arms[t.arm - Arm.LEFT], t.index + 1, t.arm === Arm.UP || t.arm === Arm.DOWN);
}

/** What an open end shows: "the left end: five (counts 5)". */
function openEndName(end: End, pip: number, value: number): string {
  return T.openEnd(endName(end), pipName(pip), value);
}

/**
 * The felt's least height (CSS pixels): kept before a hand's tiles are made narrower;
 * below it only where even narrower tiles leave no more (the hand stays on the screen).
 */
const LEAST_FELT = 96;
const SMALLEST_FELT = 64;

/**
 * What a hand keeps while it is played, so that its tiles keep their places: where the
 * line's arms turn (from the felt as the hand began), and the felt's height, which may
 * shrink (the hand grows by drawing) but not grow back until the next hand.
 */
let kept: { key: string; bounds: Box; felt: number; fit?: Fit } | undefined;

/** The table drawn for the view, and its height (its width is `ui.width`). */
export function renderTable(view: GameView, ui: TableUi): { svg: string; height: number } {
  const parts: string[] = [];
  const W = Math.max(280, Math.round(ui.width));
  const compact = W < COMPACT;
  // An answer's moves played back are the hand still being played (its end's new layout
  // only once they are all shown).
  const replaying = ui.upTo !== undefined;
  const playing = view.phase === Phase.PLAYING || replaying;
  const ended = !playing && view.lastHand !== undefined;
  const players = view.handSizes.length;
  // A forfeited hand's tiles stay face down (its result lists every seat with no
  // tiles): nothing is revealed, the backs and the player's hand stay as they were.
  const revealed = new Map(
    view.lastHand?.reason === HandEndReason.FORFEIT ? [] : (view.lastHand?.hands ?? []).map((h) => [h.seat, h.tiles]),
  );
  parts.push(`<g class="${compact ? "compact" : "wide"}">`);

  // --- The opponents along the top. ---
  // On a phone the hand size and the level each have a line of their own (a longer
  // language's count and level do not fit side by side in a third of a phone).
  const others = [...Array(players).keys()].filter((s) => s !== ui.you);
  // A phone's one opponent has the width: the count and the level at the box's right,
  // on the name's line and the backs' (a short box: the hand's room).
  const lone = compact && others.length === 1;
  const oppH = lone ? 64 : compact ? 92 : 124;
  const slot = W / Math.max(others.length, 1);
  others.forEach((seat, i) => {
    const x0 = i * slot;
    const n = view.handSizes[seat] ?? 0;
    const onTurn = playing && view.turn === seat;
    const label = `${seatLabel(view, seat, ui.you)}: ${T.tiles(n)}${onTurn ? `, ${T.onTurnMark}` : ""}`;
    // A labelled group (its tiles, once revealed, are images inside it); the drawn
    // name and count repeat the label, so they are hidden from screen readers.
    parts.push(`<g class="opponent${onTurn ? " on-turn" : ""}" role="group" aria-label="${esc(label)}" data-seat="${seat}">`);
    // On a phone the name's second part (the level) goes on a line of its own.
    const status = view.seats[seat];
    const level = status?.bot ? T.bot(levelName(status.bot)) : status?.kind === SeatKind.OPEN ? T.open : "";
    const partnerWord = isPartner(view, seat, ui.you) ? T.partner : "";
    const joined = (lvl: string) => [partnerWord, lvl].filter(Boolean).join(" · ");
    // On a phone the detail shares its line with the hand size; where they would meet
    // the page shows the level alone ("easy", not "easy bot"), then the count alone
    // (see fitTexts in main.ts, which measures them).
    const short = joined(status?.bot ? levelName(status.bot) : level);
    const detail = joined(level);
    // On a phone the name alone on its line; "partner" goes with the level below it.
    const full = compact ? seatName(seat, ui.you) : seatLabel(view, seat, ui.you);
    // Drawn within its box (the label keeps it whole): about 8 px a character.
    const fits = Math.max(4, Math.floor((slot - 36) / (compact ? 7.5 : 9)));
    const name = [...full].length > fits ? `${[...full].slice(0, fits - 1).join("")}…` : full;
    parts.push(
      `<rect x="${x0 + 4}" y="4" width="${slot - 8}" height="${oppH - 8}" rx="8" class="seat-box" style="stroke:${SEAT_COLOURS[seat]}" aria-hidden="true"/>`,
      seatMark(seat, x0 + 18, 20, 7),
      `<text x="${x0 + 30}" y="25" class="seat-name" aria-hidden="true">${esc(name)}</text>`,
      compact && detail ? `<text x="${lone ? x0 + slot - 14 : x0 + 12}" y="${oppH - 12}" ${lone ? 'text-anchor="end" ' : ""}class="seat-detail" data-short="${esc(short)}" aria-hidden="true">${esc(detail)}</text>` : "",
      `<text x="${compact && !lone ? x0 + 12 : x0 + slot - 14}" y="${lone ? 25 : compact ? oppH - 30 : oppH - 14}" ${compact && !lone ? "" : 'text-anchor="end" '}class="hand-size" data-testid="hand-size-${seat}" data-count="${n}" aria-hidden="true">${esc(T.tiles(n))}</text>`,
    );
    const shown = ended ? revealed.get(seat) : undefined;
    const count = shown ? shown.length : n;
    const top = compact ? 31 : 38;
    const room = compact ? 16 : oppH - top - 34;
    const tw = Math.max(4, Math.min(room / 2, (lone ? slot / 2 : slot - 24) / Math.max(count, 1) - 3));
    for (let k = 0; k < count; k++) {
      const x = x0 + 12 + k * (tw + 3);
      if (shown) {
        const t = shown[k];
        parts.push(`<g role="img" aria-label="${esc(tileName(t))}" class="revealed" data-tile="${tileKey(t)}">${face(x, top, 2 * tw, false, t.a, t.b)}</g>`);
      } else {
        parts.push(`<rect x="${x}" y="${top}" width="${tw}" height="${2 * tw}" rx="3" class="back" aria-hidden="true"/>`);
      }
    }
    parts.push("</g>");
  });

  // --- The status line: count, boneyard, scores (two lines on a phone). ---
  const scores = view.scores
    .map((s) => {
      const who = list(lang, s.seats.map((seat) => seatName(seat, ui.you)));
      return `<tspan data-testid="score-side-${s.side}" style="fill:${SEAT_COLOURS[s.seats[0]]}">${esc(who)} ${num(lang, s.score)}</tspan>`;
    })
    .join(`<tspan class="sep"> · </tspan>`);
  const line1 = oppH + (compact ? 22 : 30);
  const line2 = compact ? line1 + 22 : line1;
  // On a phone the target ends the first line, so the scores have the second to themselves.
  const target = view.rules?.target ?? 0;
  parts.push(
    `<text x="10" y="${line1}" class="status-line"><tspan data-testid="count">${esc(T.count(view.count))}</tspan><tspan class="sep"> · </tspan>` +
      `<tspan data-testid="boneyard">${esc(T.boneyard(view.boneyardSize))}</tspan><tspan class="sep"> · </tspan>${esc(T.hand(view.handNumber))}` +
      `${compact ? `<tspan class="sep"> · </tspan>${esc(T.targetIs(target))}` : ""}</text>`,
    `<text x="${compact ? 10 : W - 10}" y="${line2}" ${compact ? "" : 'text-anchor="end" '}class="status-line" data-testid="scores">${scores}` +
      `${compact ? "" : `<tspan class="sep"> (${esc(T.targetIs(target))})</tspan>`}</text>`,
  );

  // --- The player's hand's size: in rows that fit the width, below the felt. ---
  const spectator = ui.you < 0;
  const hand = spectator ? [] : ended ? (revealed.get(ui.you) ?? view.hand) : view.hand;
  // The caption (or a hand's end) under the felt, the room for a raised tile's points,
  // the rows, a margin.
  const capGap = compact ? 24 : 28;
  const handGap = compact ? 36 : 42;
  const rowsIn = (th: number) => {
    const tw = th / 2;
    const step = tw + (compact ? 8 : 10);
    const perRow = Math.max(1, Math.floor((W - 16 + (step - tw)) / step));
    return { th, tw, step, perRow, rows: Math.max(1, Math.ceil(hand.length / perRow)) };
  };
  let tiles = rowsIn(compact ? 88 : 84);
  // On a phone whose screen has no room for another row (a small one, a hand grown by
  // drawing), the tiles are made narrower (to 32 px, each still a 44 px target) rather
  // than the hand pushed off it.
  const handRoom = ui.room === undefined ? Infinity : ui.room - (line2 + 12) - LEAST_FELT - capGap - handGap - 12;
  // Rows of narrowed tiles closer (room for a raised tile's points, the chosen one's
  // reaching a little into the row above).
  const rowGap = (th: number) => (compact && th < 88 ? 32 : 40);
  while (compact && tiles.rows > 1 && tiles.rows * tiles.th + (tiles.rows - 1) * rowGap(tiles.th - 4) > handRoom && tiles.th > 64) tiles = rowsIn(tiles.th - 4);
  const { th, tw, step, perRow, rows } = tiles;
  const rowH = th + rowGap(th);
  const handBlock = capGap + handGap + rows * th + (rows - 1) * (rowH - th) + 12;

  // --- The line of play on the felt, which takes the room the rest leaves. Its tiles
  // keep their places (see line.ts): where the arms turn is kept for the hand, and the
  // felt does not grow back within it. While an answer is played back, the tiles
  // placed so far and no open end. ---
  const layout = replaying ? view.layout.filter((t) => t.order <= ui.upTo!) : view.layout;
  const openEnds = new Set(replaying ? [] : view.openEnds.map((e) => e.end));
  const feltY = line2 + 12;
  const feltW = W - 16;
  const fixed = compact ? Math.max(240, Math.round(W * 0.72)) : 360;
  const fill = ui.room === undefined ? fixed : Math.max(SMALLEST_FELT, Math.min(Math.round(W * 0.8), Math.floor(ui.room - feltY - handBlock)));
  // Where the arms turn: at the felt's edge once the hand is one row (a phone's hand of
  // nine dealt takes two rows at first, then one: the felt grows by a row).
  const oneRowFill = ui.room === undefined ? fill : Math.max(fill, Math.min(Math.round(W * 0.8), Math.floor(ui.room - feltY - (capGap + handGap + (compact ? 88 : 84) + 12))));
  const key = `${view.matchId}|${view.handNumber}|${W}`;
  // The felt follows the room the screen leaves (the line's place on it is kept: a
  // taller felt moves no tile, a shorter one may make the line smaller).
  if (kept?.key === key) kept.felt = fill;
  else kept = { key, bounds: turnBounds(feltW, oneRowFill), felt: fill };
  const area = { x: 8, y: feltY, w: feltW, h: kept.felt };
  // A hand over: its line as near a readable size (scale 1: 44 by 22 px) as the room
  // the screen leaves allows, the felt grown into it (no tile moves while the hand is
  // played; without a room, as tall as that needs).
  const tallest = playing ? area.h : ui.room === undefined ? area.h + 2000 : Math.max(area.h, fill);
  let { line, fit, height: feltH } = fitLine(layout, openEnds, area.w, area.h, kept.bounds, 1, tallest);
  // While the hand is played, the fit drawn last is kept while the line still lies on
  // the felt with it, and never made larger (the felt may have shrunk since: a longer
  // language's header, a hint in the bar).
  if (playing && kept.fit) {
    const boxes = [...line.tiles.map((t) => t.box), ...[...line.ends].filter(([e]) => openEnds.has(e)).map(([, b]) => b)];
    if (fitHolds(kept.fit, boxes, area.w, area.h)) fit = kept.fit;
    else if (fit.scale > kept.fit.scale) fit = centredAt(boxes, kept.fit.scale, area.w, area.h);
  }
  if (playing) kept.fit = fit;
  // Still smaller than readable at a hand's end: laid afresh for the felt it may have.
  const settled = !playing && fit.scale < 1 ? settleLine(layout, openEnds, area.w, tallest) : undefined;
  if (settled) [line, fit, feltH] = [settled.line, settled.fit, tallest];
  area.h = feltH;
  const scale = fit.scale;
  const [tx, ty] = [area.x + fit.x, area.y + fit.y];
  const moves = ui.selected && playing ? view.legalMoves.filter((m) => m.tile && tileKey(m.tile) === ui.selected) : [];
  parts.push(`<rect x="${area.x}" y="${area.y}" width="${area.w}" height="${area.h}" rx="14" class="felt" aria-hidden="true"/>`);
  parts.push(`<g class="layout" data-scale="${scale}" data-laid="${settled ? "afresh" : "kept"}" style="transform:translate(${tx}px, ${ty}px) scale(${scale})">`);
  // The placed tiles, in the order they were played: a list of its own. The last
  // placed is marked.
  const last = Math.max(-1, ...layout.map((t) => t.order));
  parts.push(`<g role="list" aria-label="${esc(T.lineOfPlay(layout.length))}" data-testid="line">`);
  for (const { tile: t, box, first, second, horizontal } of [...line.tiles].sort((p, q) => p.tile.order - q.tile.order)) {
    const who = seatName(t.seat, ui.you);
    const isLast = playing && t.order === last;
    const label = T.placed(tileName(t.tile!), t.spinner, placeName(t), who, t.seat === ui.you, isLast);
    parts.push(
      `<g class="placed${t.spinner ? " spinner" : ""}${isLast ? " last" : ""}${isLast && ui.fresh ? " arriving" : ""}" role="listitem" aria-label="${esc(label)}" data-order="${t.order}" data-tile="${tileKey(t.tile!)}" data-arm="${Arm[t.arm]}" style="--seat:${SEAT_COLOURS[t.seat]}">`,
      `<title>${esc(label)}</title>`,
      isLast ? `<rect x="${box.x - 4}" y="${box.y - 4}" width="${box.w + 8}" height="${box.h + 8}" rx="6" class="last-mark"/>` : "",
      face(box.x, box.y, 2 * U, horizontal, first, second),
      // On the divider's middle, where no pip is (the nearest lie a quarter of a half away).
      seatMark(t.seat, box.x + box.w / 2, box.y + box.h / 2, 3.5, "seat-mark"),
      "</g>",
    );
  }
  parts.push("</g>");
  // Open ends, a list of their own (what each shows, for screen readers), drawn as
  // faint slots while the hand is played; for the chosen tile the ends it fits become
  // targets (buttons inside the end's item), each at least 44 pixels square to touch.
  // A finished hand has no slots.
  const endItems: string[] = [];
  const reach = 46 / scale; // (44 px, and a margin for rounding)
  for (const [end, box] of line.ends) {
    const move = moves.find((m) => m.end === end);
    const open = view.openEnds.find((e) => e.end === end);
    const lead = end === End.UNSPECIFIED;
    if (replaying || (!open && !(lead && playing))) continue;
    const name = open ? openEndName(end, open.pip, open.value) : T.centreEmpty;
    endItems.push(`<g role="listitem" aria-label="${esc(name)}" data-testid="open-end" data-end="${end}">`);
    if (move) {
      const advised = ui.suggested && ui.suggested.end === end && tileKey(ui.suggested.tile!) === ui.selected;
      const label = T.placeOn(tileName(move.tile!), endName(end), move.points);
      const hw = Math.max(box.w, reach);
      const hh = Math.max(box.h, reach);
      endItems.push(
        `<g class="target${advised ? " advised" : ""}" role="button" tabindex="0" aria-label="${esc(label)}" data-key="end-${end}" data-end="${end}">`,
        `<title>${esc(label)}</title>`,
        `<rect x="${box.x + box.w / 2 - hw / 2}" y="${box.y + box.h / 2 - hh / 2}" width="${hw}" height="${hh}" class="hit"/>`,
        `<rect x="${box.x}" y="${box.y}" width="${box.w}" height="${box.h}" rx="4" class="slot"/>`,
        `<text x="${box.x + box.w / 2}" y="${box.y + box.h / 2 + 5}" text-anchor="middle" class="points">+${move.points}</text>`,
        "</g>",
      );
    } else if (playing) {
      endItems.push(`<rect x="${box.x}" y="${box.y}" width="${box.w}" height="${box.h}" rx="4" class="slot idle" aria-hidden="true"/>`);
    }
    endItems.push("</g>");
  }
  const endsLabel = playing ? T.openEndsCount(view.openEnds.length, view.count) : T.openEnds(view.openEnds.length);
  parts.push(`<g role="list" aria-label="${esc(endsLabel)}" data-testid="open-ends">`, ...endItems, "</g>");
  parts.push("</g>");
  // The points a move scored, called on the felt ("+15", "Seat 2: fifteen"); the
  // log says it to a screen reader.
  if (ui.callout) {
    const { seat, points } = ui.callout;
    const cx = area.x + area.w / 2;
    parts.push(
      `<g class="callout" data-testid="callout" aria-hidden="true" style="--seat:${SEAT_COLOURS[seat]}">`,
      `<text x="${cx}" y="${area.y + 58}" text-anchor="middle" class="callout-points">+${points}</text>`,
      `<text x="${cx}" y="${area.y + 84}" text-anchor="middle" class="callout-who">${esc(seatName(seat, ui.you))}: ${esc(pointsWord(points))}</text>`,
      "</g>",
    );
  }
  // A hand's end and the match's, as moments on the felt rather than a line of text.
  if (!playing && view.lastHand && !replaying) {
    const over = view.phase === Phase.OVER;
    const winners = view.winnerSeats;
    const title = over
      ? winners.includes(ui.you)
        ? winners.length > 1
          ? T.winMatchYouPartner
          : T.winMatchYou
        : T.winMatch(list(lang, winners.map((s) => seatName(s, ui.you))), winners.length)
      : T.handIsOverMoment(view.lastHand.hand);
    // Under the felt, in the caption's place: the last line stays in view. It arrives
    // once, with the state (not again at every redraw).
    const top = area.y + area.h + 6;
    const h = capGap + handGap - 20;
    parts.push(
      `<g class="moment${over ? " match-over" : ""}${ui.fresh ? " arriving" : ""}" data-testid="moment" role="img" aria-label="${esc(title)}">`,
      `<rect x="${area.x}" y="${top}" width="${area.w}" height="${h}" rx="10" class="moment-box"/>`,
      `<text x="${area.x + area.w / 2}" y="${top + h / 2 + (compact ? 6 : 8)}" text-anchor="middle" class="moment-text">${esc(title)}</text>`,
      "</g>",
    );
  }

  // --- The player's hand along the bottom. ---
  const playable = new Set(playing ? view.legalMoves.map((m) => tileKey(m.tile!)) : []);
  const youTurn = playing && view.turn === ui.you;
  const capY = area.y + area.h + capGap;
  const momentShown = !playing && view.lastHand !== undefined && !replaying;
  parts.push(
    momentShown ? "" : (spectator ? "" : seatMark(ui.you, 18, capY - 6, 7)) +
      `<text x="${spectator ? 10 : 30}" y="${capY}" class="seat-name" data-testid="caption">${esc(spectator ? T.watchingNoHand : seatLabel(view, ui.you, ui.you))}` +
      `${youTurn ? ` · ${esc(view.mustDraw ? T.captionDraw : ui.selected ? T.captionEnd : T.captionTile)}` : ""}</text>`,
  );
  const handTop = capY + handGap;
  parts.push(`<g class="hand" role="group" aria-label="${esc(T.yourHand(hand.length))}">`);
  hand.forEach((t, k) => {
    const key = tileKey(t);
    const can = playable.has(key);
    const chosen = ui.selected === key;
    const advised = ui.suggested && tileKey(ui.suggested.tile!) === key;
    const lift = chosen ? 14 : can ? 6 : 0;
    const best = Math.max(...view.legalMoves.filter((m) => tileKey(m.tile!) === key).map((m) => m.points), 0);
    const label = `${tileName(t)}${can ? `, ${T.playable}${best ? `, ${T.scoresUpTo(best)}` : ""}` : youTurn ? `, ${T.cannotPlayNow}` : ""}${advised ? `, ${T.suggestedMark}` : ""}`;
    const row = Math.floor(k / perRow);
    const inRow = Math.min(perRow, hand.length - row * perRow);
    const x = W / 2 - (inRow * step - (step - tw)) / 2 + (k % perRow) * step;
    const y = handTop + row * rowH - lift;
    parts.push(
      `<g class="in-hand${can ? " playable" : ""}${chosen ? " chosen" : ""}${advised ? " advised" : ""}" role="button" tabindex="0"` +
        ` aria-label="${esc(label)}" aria-pressed="${chosen}" aria-disabled="${!can || ui.busy}" data-key="tile-${key}" data-tile="${key}">`,
      `<title>${esc(label)}</title>`,
      // A tile made narrower is still a 44 px target (its gap is 8 px: none overlap).
      tw < 44 ? `<rect x="${x + tw / 2 - 22}" y="${y}" width="44" height="${th}" class="hit"/>` : "",
      face(x, y, th, false, t.a, t.b),
      best ? `<text x="${x + tw / 2}" y="${y - 10}" text-anchor="middle" class="points" aria-hidden="true">+${best}</text>` : "",
      "</g>",
    );
  });
  parts.push("</g>");
  parts.push("</g>");
  const height = area.y + area.h + handBlock;
  return { svg: parts.join(""), height };
}
