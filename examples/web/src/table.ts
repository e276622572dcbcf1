// The table in SVG, drawn from a GameView alone: the opponents (tile backs, hand
// sizes, or their tiles once a hand has ended), the line of play with the spinner and
// its four arms (doubles crosswise, each tile edged in the colour of the seat that
// played it), the open ends (as targets for the chosen tile, with the points each
// move would score), the count, the boneyard, the scores, and the player's hand.
import { Arm, End, Phase, SeatKind, type GameView, type LegalMove, type PlacedTile } from "./gen/allfives/v1/allfives_pb.js";
import { SEAT_COLOURS, endName, levelName, seatName, tileName } from "./words.js";

export const WIDTH = 1000;
export const HEIGHT = 720;
const U = 22; // half a layout tile
const GAP = 2;

export interface TableUi {
  you: number;
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

interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** Where every placed tile lies, and where each open end's next tile would go. */
function geometry(layout: PlacedTile[]): { tiles: [PlacedTile, Box, number, number][]; ends: Map<End, Box> } {
  const tiles: [PlacedTile, Box, number, number][] = [];
  const ends = new Map<End, Box>();
  const lead = layout.find((t) => t.arm === Arm.LEAD);
  if (!lead) {
    ends.set(End.UNSPECIFIED, { x: -2 * U, y: -U / 2 - U / 2, w: 4 * U, h: 2 * U });
    return { tiles, ends };
  }
  const along = (t: PlacedTile) => (t.crosswise ? U : 2 * U);
  const arm = (a: Arm) => layout.filter((t) => t.arm === a).sort((p, q) => p.index - q.index);
  // The line: the lead at the centre, LEFT growing leftwards, RIGHT rightwards.
  const lineBox = (t: PlacedTile, x: number): Box =>
    t.crosswise ? { x, y: -U, w: U, h: 2 * U } : { x, y: -U / 2, w: 2 * U, h: U };
  const leadBox = lineBox(lead, -along(lead) / 2);
  tiles.push([lead, leadBox, lead.near, lead.far]);
  let left = leadBox.x;
  for (const t of arm(Arm.LEFT)) {
    left -= GAP + along(t);
    tiles.push([t, lineBox(t, left), t.far, t.near]);
  }
  let right = leadBox.x + leadBox.w;
  for (const t of arm(Arm.RIGHT)) {
    tiles.push([t, lineBox(t, right + GAP), t.near, t.far]);
    right += GAP + along(t);
  }
  ends.set(End.LEFT, { x: left - GAP - 2 * U, y: -U / 2, w: 2 * U, h: U });
  ends.set(End.RIGHT, { x: right + GAP, y: -U / 2, w: 2 * U, h: U });
  // The arms across the spinner: UP grows upwards from its top, DOWN downwards.
  const spinner = tiles.find(([t]) => t.spinner);
  if (spinner) {
    const [, box] = spinner;
    const cx = box.x + box.w / 2;
    const colBox = (t: PlacedTile, y: number): Box =>
      t.crosswise ? { x: cx - U, y, w: 2 * U, h: U } : { x: cx - U / 2, y, w: U, h: 2 * U };
    let top = box.y;
    for (const t of arm(Arm.UP)) {
      top -= GAP + along(t);
      tiles.push([t, colBox(t, top), t.far, t.near]);
    }
    let bottom = box.y + box.h;
    for (const t of arm(Arm.DOWN)) {
      tiles.push([t, colBox(t, bottom + GAP), t.near, t.far]);
      bottom += GAP + along(t);
    }
    ends.set(End.UP, { x: cx - U / 2, y: top - GAP - 2 * U, w: U, h: 2 * U });
    ends.set(End.DOWN, { x: cx - U / 2, y: bottom + GAP, w: U, h: 2 * U });
  }
  return { tiles, ends };
}

/** Whether `seat` plays on the same side as `you` (a partnership). */
export function isPartner(view: GameView, seat: number, you: number): boolean {
  return seat !== you && view.scores.some((s) => s.seats.includes(seat) && s.seats.includes(you));
}

/** "Seat 3, partner (medium bot)", "Seat 2 (easy bot)", "You". */
export function seatLabel(view: GameView, seat: number, you: number): string {
  const status = view.seats[seat];
  const level = status?.bot ? ` (${levelName(status.bot)} bot)` : status?.kind === SeatKind.OPEN ? " (open)" : "";
  return seatName(seat, you) + (isPartner(view, seat, you) ? ", partner" : "") + level;
}

const ARMS: Partial<Record<Arm, string>> = {
  [Arm.LEFT]: "the left arm",
  [Arm.RIGHT]: "the right arm",
  [Arm.UP]: "the upper arm",
  [Arm.DOWN]: "the lower arm",
};

/** Where a placed tile lies: "the lead", "the left arm, 2nd from the lead". */
function placeName(t: PlacedTile): string {
  if (t.arm === Arm.LEAD) return "the lead";
  const n = t.index + 1;
  const nth = n % 10 === 1 && n % 100 !== 11 ? "st" : n % 10 === 2 && n % 100 !== 12 ? "nd" : n % 10 === 3 && n % 100 !== 13 ? "rd" : "th";
  return `${ARMS[t.arm] ?? "the line"}, ${n}${nth} from the ${t.arm === Arm.UP || t.arm === Arm.DOWN ? "spinner" : "lead"}`;
}

/** What an open end shows: "the left end: five (counts 5)". */
function openEndName(end: End, pip: number, value: number): string {
  return `${endName(end)}: ${PIP_WORDS[pip] ?? pip} (counts ${value})`;
}
const PIP_WORDS = ["blank", "one", "two", "three", "four", "five", "six"];

export function renderTable(view: GameView, ui: TableUi): string {
  const parts: string[] = [];
  const playing = view.phase === Phase.PLAYING;
  const ended = !playing && view.lastHand !== undefined;
  const players = view.handSizes.length;
  const revealed = new Map((view.lastHand?.hands ?? []).map((h) => [h.seat, h.tiles]));

  // --- The opponents along the top. ---
  const others = [...Array(players).keys()].filter((s) => s !== ui.you);
  const slot = WIDTH / Math.max(others.length, 1);
  others.forEach((seat, i) => {
    const x0 = i * slot;
    const n = view.handSizes[seat] ?? 0;
    const onTurn = playing && view.turn === seat;
    const label = `${seatLabel(view, seat, ui.you)}: ${n} tile${n === 1 ? "" : "s"}${onTurn ? ", on turn" : ""}`;
    // A labelled group (its tiles, once revealed, are images inside it); the drawn
    // name and count repeat the label, so they are hidden from screen readers.
    parts.push(`<g class="opponent${onTurn ? " on-turn" : ""}" role="group" aria-label="${esc(label)}" data-seat="${seat}">`);
    parts.push(
      `<rect x="${x0 + 6}" y="6" width="${slot - 12}" height="112" rx="8" class="seat-box" style="stroke:${SEAT_COLOURS[seat]}" aria-hidden="true"/>`,
      `<circle cx="${x0 + 22}" cy="22" r="7" style="fill:${SEAT_COLOURS[seat]}" aria-hidden="true"/>`,
      `<text x="${x0 + 36}" y="28" class="seat-name" aria-hidden="true">${esc(seatLabel(view, seat, ui.you))}</text>`,
      `<text x="${x0 + slot - 16}" y="108" text-anchor="end" class="hand-size" data-testid="hand-size-${seat}" aria-hidden="true">${n} tile${n === 1 ? "" : "s"}</text>`,
    );
    const shown = ended ? revealed.get(seat) : undefined;
    const count = shown ? shown.length : n;
    const tw = Math.min(24, (slot - 32) / Math.max(count, 1) - 3);
    for (let k = 0; k < count; k++) {
      const x = x0 + 16 + k * (tw + 3);
      if (shown) {
        const t = shown[k];
        parts.push(`<g role="img" aria-label="${esc(tileName(t))}" class="revealed" data-tile="${tileKey(t)}">${face(x, 40, 2 * tw, false, t.a, t.b)}</g>`);
      } else {
        parts.push(`<rect x="${x}" y="40" width="${tw}" height="${2 * tw}" rx="3" class="back" aria-hidden="true"/>`);
      }
    }
    parts.push("</g>");
  });

  // --- The status line: count, boneyard, scores. ---
  const scores = view.scores
    .map((s) => {
      const who = s.seats.map((seat) => seatName(seat, ui.you)).join(" & ");
      return `<tspan data-testid="score-side-${s.side}" style="fill:${SEAT_COLOURS[s.seats[0]]}">${esc(who)} ${s.score}</tspan>`;
    })
    .join(`<tspan class="sep"> · </tspan>`);
  parts.push(
    `<text x="16" y="148" class="status-line"><tspan data-testid="count">Count ${view.count}</tspan><tspan class="sep"> · </tspan>` +
      `<tspan data-testid="boneyard">Boneyard ${view.boneyardSize}</tspan><tspan class="sep"> · </tspan>Hand ${view.handNumber}</text>`,
    `<text x="${WIDTH - 16}" y="148" text-anchor="end" class="status-line" data-testid="scores">${scores}` +
      `<tspan class="sep"> (target ${view.rules?.target ?? ""})</tspan></text>`,
  );

  // --- The line of play, scaled into the middle. ---
  const { tiles, ends } = geometry(view.layout);
  const moves = ui.selected && playing ? view.legalMoves.filter((m) => m.tile && tileKey(m.tile) === ui.selected) : [];
  const openEnds = new Set(view.openEnds.map((e) => e.end));
  const boxes = [...tiles.map(([, b]) => b), ...[...ends].filter(([e]) => openEnds.has(e) || e === End.UNSPECIFIED).map(([, b]) => b)];
  const minX = Math.min(...boxes.map((b) => b.x)) - 8;
  const maxX = Math.max(...boxes.map((b) => b.x + b.w)) + 8;
  const minY = Math.min(...boxes.map((b) => b.y)) - 8;
  const maxY = Math.max(...boxes.map((b) => b.y + b.h)) + 8;
  const area = { x: 10, y: 162, w: WIDTH - 20, h: 360 };
  const scale = Math.min(1.5, area.w / (maxX - minX), area.h / (maxY - minY));
  const tx = area.x + area.w / 2 - ((minX + maxX) / 2) * scale;
  const ty = area.y + area.h / 2 - ((minY + maxY) / 2) * scale;
  parts.push(`<rect x="${area.x}" y="${area.y}" width="${area.w}" height="${area.h}" rx="14" class="felt" aria-hidden="true"/>`);
  parts.push(`<g class="layout" transform="translate(${tx} ${ty}) scale(${scale})">`);
  // The placed tiles, in the order they were played: a list of its own.
  parts.push(`<g role="list" aria-label="The line of play: ${view.layout.length} tile${view.layout.length === 1 ? "" : "s"}" data-testid="line">`);
  for (const [t, box, first, second] of [...tiles].sort(([p], [q]) => p.order - q.order)) {
    const who = seatName(t.seat, ui.you);
    const label = `${tileName(t.tile!)}${t.spinner ? ", the spinner" : ""}, on ${placeName(t)}, played by ${who}`;
    parts.push(
      `<g class="placed${t.spinner ? " spinner" : ""}" role="listitem" aria-label="${esc(label)}" data-order="${t.order}" data-tile="${tileKey(t.tile!)}" data-arm="${Arm[t.arm]}" style="--seat:${SEAT_COLOURS[t.seat]}">`,
      `<title>${esc(label)}</title>`,
      face(box.x, box.y, 2 * U, box.w > box.h, first, second),
      // On the divider's middle, where no pip is (the nearest lie a quarter of a half away).
      `<circle cx="${box.x + box.w / 2}" cy="${box.y + box.h / 2}" r="2.5" class="seat-mark"/>`,
      "</g>",
    );
  }
  parts.push("</g>");
  // Open ends, a list of their own (what each shows, for screen readers), drawn as
  // faint slots while the hand is played; for the chosen tile the ends it fits become
  // targets (buttons inside the end's item). A finished hand has no slots.
  const endItems: string[] = [];
  for (const [end, box] of ends) {
    const move = moves.find((m) => m.end === end);
    const open = view.openEnds.find((e) => e.end === end);
    const lead = end === End.UNSPECIFIED;
    if (!open && !(lead && playing)) continue;
    const name = open ? openEndName(end, open.pip, open.value) : "the centre: empty, the lead is any tile";
    endItems.push(`<g role="listitem" aria-label="${esc(name)}" data-testid="open-end" data-end="${end}">`);
    if (move) {
      const advised = ui.suggested && ui.suggested.end === end && tileKey(ui.suggested.tile!) === ui.selected;
      const label = `Place ${tileName(move.tile!)} on ${endName(end)}: ${move.points} point${move.points === 1 ? "" : "s"}`;
      endItems.push(
        `<g class="target${advised ? " advised" : ""}" role="button" tabindex="0" aria-label="${esc(label)}" data-key="end-${end}" data-end="${end}">`,
        `<title>${esc(label)}</title>`,
        `<rect x="${box.x}" y="${box.y}" width="${box.w}" height="${box.h}" rx="4" class="slot"/>`,
        `<text x="${box.x + box.w / 2}" y="${box.y + box.h / 2 + 5}" text-anchor="middle" class="points">+${move.points}</text>`,
        "</g>",
      );
    } else if (playing) {
      endItems.push(`<rect x="${box.x}" y="${box.y}" width="${box.w}" height="${box.h}" rx="4" class="slot idle" aria-hidden="true"/>`);
    }
    endItems.push("</g>");
  }
  parts.push(`<g role="list" aria-label="Open ends: ${view.openEnds.length}${playing ? `, count ${view.count}` : ""}" data-testid="open-ends">`, ...endItems, "</g>");
  parts.push("</g>");

  // --- The player's hand along the bottom. ---
  const hand = ended ? (revealed.get(ui.you) ?? view.hand) : view.hand;
  const playable = new Set(playing ? view.legalMoves.map((m) => tileKey(m.tile!)) : []);
  const youTurn = playing && view.turn === ui.you;
  parts.push(
    `<circle cx="22" cy="544" r="7" style="fill:${SEAT_COLOURS[ui.you]}" aria-hidden="true"/>` +
      `<text x="36" y="550" class="seat-name" data-testid="caption">${esc(seatLabel(view, ui.you, ui.you))}` +
      `${youTurn ? (view.mustDraw ? " · nothing to play: draw" : ui.selected ? " · now choose an end" : " · your turn: choose a tile") : ""}</text>`,
  );
  const th = 84;
  const step = Math.min(th / 2 + 10, (WIDTH - 40) / Math.max(hand.length, 1));
  const x0 = WIDTH / 2 - (step * hand.length - 10) / 2;
  parts.push(`<g class="hand" role="group" aria-label="Your hand: ${hand.length} tiles">`);
  hand.forEach((t, k) => {
    const key = tileKey(t);
    const can = playable.has(key);
    const chosen = ui.selected === key;
    const advised = ui.suggested && tileKey(ui.suggested.tile!) === key;
    const lift = chosen ? 14 : can ? 6 : 0;
    const best = Math.max(...view.legalMoves.filter((m) => tileKey(m.tile!) === key).map((m) => m.points), 0);
    const label = `${tileName(t)}${can ? `, playable${best ? `, scores up to ${best}` : ""}` : youTurn ? ", cannot be played now" : ""}${advised ? ", suggested" : ""}`;
    parts.push(
      `<g class="in-hand${can ? " playable" : ""}${chosen ? " chosen" : ""}${advised ? " advised" : ""}" role="button" tabindex="0"` +
        ` aria-label="${esc(label)}" aria-pressed="${chosen}" aria-disabled="${!can || ui.busy}" data-key="tile-${key}" data-tile="${key}">`,
      `<title>${esc(label)}</title>`,
      face(x0 + k * step, 600 - lift, th, false, t.a, t.b),
      best ? `<text x="${x0 + k * step + th / 4}" y="${590 - lift}" text-anchor="middle" class="points" aria-hidden="true">+${best}</text>` : "",
      "</g>",
    );
  });
  parts.push("</g>");
  return parts.join("");
}
