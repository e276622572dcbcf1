// The line of play's geometry: where each placed tile lies and where each open end's
// next tile would go, in layout units (a tile is 2U by U) with the lead's centre at
// (0, 0). Each arm runs straight from the lead (LEFT westwards, RIGHT eastwards) or
// from the spinner (UP, DOWN, across the spinner's own leg); within bounds, an arm that
// reaches an edge turns clockwise, its next tile set across the end of the last one,
// as players bend the line at the table's edge, and may turn again at the next edge.
// Doubles lie across their leg. Each tile's place depends only on the tiles before it
// (and the bounds), so a tile once placed never moves: the line is fitted to the felt
// by one scale and offset of the whole (fitLine). Pure: no DOM, so the tests check it
// directly.
import { Arm, End, type PlacedTile } from "./gen/allfives/v1/allfives_pb.js";

/** Half a tile's long side, in layout units. */
export const U = 22;
const GAP = 2;
/** The most an arm turns: enough to bend around a corner and come back. */
const MAX_TURNS = 3;

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** A placed tile: its box, which half is drawn first (left, or top), and whether it lies across. */
export interface Laid {
  tile: PlacedTile;
  box: Box;
  first: number;
  second: number;
  horizontal: boolean;
}

export interface Line {
  tiles: Laid[];
  /** Where each end's next tile would go (End.UNSPECIFIED: the lead, on an empty table). */
  ends: Map<End, Box>;
}

type Dir = readonly [number, number];
const E: Dir = [1, 0];
const W: Dir = [-1, 0];
const N: Dir = [0, -1];
const S: Dir = [0, 1];
const clockwise = ([dx, dy]: Dir): Dir => [-dy, dx];
const horizontalDir = (d: Dir) => d[1] === 0;

/** The box of a tile `along` long and `across` wide, starting at `p` and running along `d`. */
function boxAt(p: readonly [number, number], d: Dir, along: number, across: number): Box {
  const [x, y] = p;
  const [ex, ey] = [x + d[0] * along, y + d[1] * along];
  return horizontalDir(d)
    ? { x: Math.min(x, ex), y: y - across / 2, w: along, h: across }
    : { x: x - across / 2, y: Math.min(y, ey), w: across, h: along };
}

export const inside = (b: Box, bounds: Box) =>
  b.x >= bounds.x - 1e-6 && b.y >= bounds.y - 1e-6 && b.x + b.w <= bounds.x + bounds.w + 1e-6 && b.y + b.h <= bounds.y + bounds.h + 1e-6;

export const overlap = (a: Box, b: Box) =>
  a.x < b.x + b.w - 1e-6 && b.x < a.x + a.w - 1e-6 && a.y < b.y + b.h - 1e-6 && b.y < a.y + a.h - 1e-6;

/** What a chain must keep clear of: the tiles laid so far, and the spinner's arms' first places. */
interface Table {
  laid: Box[];
  reserved: Map<Arm, Box>;
}
const clear = (box: Box, table: Table, arm: Arm) =>
  !table.laid.some((b) => overlap(b, box)) && ![...table.reserved].some(([a, b]) => a !== arm && overlap(b, box));

/**
 * One arm, laid tile by tile from its start. With bounds, a tile that would leave them
 * or lie on another turns the arm, clockwise if it can, else the other way.
 */
class Chain {
  private p: [number, number];
  private d: Dir;
  private inLeg = 0;
  private turns = 0;
  /** The centre of the last tile's far half, and the last tile's width across its leg. */
  private far?: { at: [number, number]; across: number };

  constructor(
    private readonly arm: Arm,
    start: [number, number],
    d: Dir,
    private readonly bounds: Box | undefined,
    /** Turn the other way first (anticlockwise). */
    private readonly widdershins = false,
  ) {
    this.p = start;
    this.d = d;
  }

  /** Where a tile would go, and the chain's state after it (without changing this one). */
  private plan(crosswise: boolean, table: Table) {
    const along = crosswise ? U : 2 * U;
    const across = crosswise ? 2 * U : U;
    const at = (p: [number, number], d: Dir, turned: boolean) => {
      const box = boxAt(p, d, along, across);
      const farAt: [number, number] = [p[0] + d[0] * (along - U / 2), p[1] + d[1] * (along - U / 2)];
      const next: [number, number] = [p[0] + d[0] * (along + GAP), p[1] + d[1] * (along + GAP)];
      return { box, d, turned, farAt, across, next };
    };
    const straight = at(this.p, this.d, false);
    const bounds = this.bounds;
    if (!bounds) return straight;
    const turns: (typeof straight)[] = [];
    if (this.inLeg > 0 && this.far) {
      const [cx, cy] = this.far.at;
      const off = this.far.across / 2 + GAP;
      const ways = [clockwise(this.d), clockwise(clockwise(clockwise(this.d)))];
      if (this.widdershins) ways.reverse();
      for (const d of ways) turns.push(at([cx + d[0] * off, cy + d[1] * off], d, true));
    }
    const free = (c: typeof straight) => clear(c.box, table, this.arm);
    const within = (c: typeof straight) => inside(c.box, bounds) && free(c);
    // Straight on, or turned at the edge (at most MAX_TURNS times); where neither
    // stays inside, straight on or turned onto free felt past the edge (the whole line
    // is then drawn smaller), rather than over another tile.
    const limited = this.turns < MAX_TURNS ? turns : [];
    const found = [straight, ...limited].find(within) ?? [straight, ...turns].find(free);
    if (found) return found;
    // Hemmed in (rare): on along the same way past what is in it.
    for (let k = 1; k <= 12; k++) {
      const past = at([this.p[0] + this.d[0] * k * U, this.p[1] + this.d[1] * k * U], this.d, false);
      if (free(past)) return past;
    }
    return straight;
  }

  /** Lays the next tile: its box and the direction it runs in. */
  place(crosswise: boolean, table: Table): { box: Box; d: Dir } {
    const plan = this.plan(crosswise, table);
    if (plan.turned) {
      this.turns++;
      this.inLeg = 0;
    }
    this.d = plan.d;
    this.p = plan.next;
    this.far = { at: plan.farAt, across: plan.across };
    this.inLeg++;
    return { box: plan.box, d: plan.d };
  }

  /** Where the next tile (not a double) would go. */
  peek(table: Table): Box {
    return this.plan(false, table).box;
  }
}

/** A tile's faces in the direction it runs: the near half first when it runs east or south. */
function laid(t: PlacedTile, box: Box, d: Dir): Laid {
  const horizontal = horizontalDir(d) !== t.crosswise;
  const forward = d[0] > 0 || d[1] > 0; // east or south
  return { tile: t, box, first: forward ? t.near : t.far, second: forward ? t.far : t.near, horizontal };
}

/**
 * The line of play laid out, tile by tile in the order they were played (as at a
 * table, each new tile goes where there is room); with `bounds` (a box around the
 * lead's centre), an arm turns where its next tile would leave them or lie on
 * another; without, every arm runs straight.
 */
export function layLine(layout: PlacedTile[], bounds?: Box, widdershins = false): Line {
  const tiles: Laid[] = [];
  const ends = new Map<End, Box>();
  const lead = layout.find((t) => t.arm === Arm.LEAD);
  if (!lead) {
    ends.set(End.UNSPECIFIED, { x: -2 * U, y: -U, w: 4 * U, h: 2 * U });
    return { tiles, ends };
  }
  const table: Table = { laid: [], reserved: new Map() };
  const chains = new Map<Arm, Chain>();
  // The spinner's arms start across its leg: north and south of a spinner on a leg
  // running east or west (as the lead), west and east of one on a leg that turned.
  // Their first places are kept clear for them from the moment the spinner lies.
  const spinnerLies = (box: Box, d: Dir) => {
    const [cx, cy] = [box.x + box.w / 2, box.y + box.h / 2];
    const [up, down]: [Dir, Dir] = horizontalDir(d) ? [N, S] : [W, E];
    for (const [arm, dir] of [
      [Arm.UP, up],
      [Arm.DOWN, down],
    ] as [Arm, Dir][]) {
      const start: [number, number] = horizontalDir(dir)
        ? [dir[0] > 0 ? box.x + box.w + GAP : box.x - GAP, cy]
        : [cx, dir[1] > 0 ? box.y + box.h + GAP : box.y - GAP];
      chains.set(arm, new Chain(arm, start, dir, bounds, widdershins));
      // Room for its first tile whether a double (across) or not.
      table.reserved.set(arm, boxAt(start, dir, 2 * U, 2 * U));
    }
  };
  const leadBox = lead.crosswise ? { x: -U / 2, y: -U, w: U, h: 2 * U } : { x: -U, y: -U / 2, w: 2 * U, h: U };
  // The lead's lower half faces LEFT, as for a tile running east.
  tiles.push(laid(lead, leadBox, E));
  table.laid.push(leadBox);
  chains.set(Arm.LEFT, new Chain(Arm.LEFT, [leadBox.x - GAP, 0], W, bounds, widdershins));
  chains.set(Arm.RIGHT, new Chain(Arm.RIGHT, [leadBox.x + leadBox.w + GAP, 0], E, bounds, widdershins));
  if (lead.spinner) spinnerLies(leadBox, E);
  for (const t of layout.filter((t) => t.arm !== Arm.LEAD).sort((p, q) => p.order - q.order)) {
    const chain = chains.get(t.arm);
    if (!chain) continue; // an arm without a spinner: not in a layout the server sends
    const { box, d } = chain.place(t.crosswise, table);
    table.reserved.delete(t.arm);
    table.laid.push(box);
    tiles.push(laid(t, box, d));
    if (t.spinner) spinnerLies(box, d);
  }
  const endOf: [Arm, End][] = [
    [Arm.LEFT, End.LEFT],
    [Arm.RIGHT, End.RIGHT],
    [Arm.UP, End.UP],
    [Arm.DOWN, End.DOWN],
  ];
  for (const [arm, end] of endOf) {
    const chain = chains.get(arm);
    if (!chain) continue;
    const box = chain.peek(table);
    ends.set(end, box);
    table.laid.push(box); // the next end's slot keeps clear of this one
  }
  return { tiles, ends };
}

/** Whether every box lies inside `bounds` and no two overlap. */
export function fits(boxes: Box[], bounds: Box): boolean {
  for (let i = 0; i < boxes.length; i++) {
    if (!inside(boxes[i], bounds)) return false;
    for (let j = 0; j < i; j++) if (overlap(boxes[i], boxes[j])) return false;
  }
  return true;
}

/** The scales a line is drawn at, largest first; 1 is the least of a readable tile. */
const SCALES = [1.5, 1.25, 1];

/** How the line lies on the felt: felt = (x, y) + layout × scale (felt units, from its corner). */
export interface Fit {
  scale: number;
  x: number;
  y: number;
}

/** Where the arms turn, in layout units: a box around the lead's centre. */
export function turnBounds(width: number, height: number, margin = 8): Box {
  const w = width - 2 * margin;
  // Not flatter than five tile widths: a felt squeezed short keeps a line that bends
  // like a real one, then drawn smaller.
  const h = Math.max(height - 2 * margin, 5 * U);
  return { x: -w / 2, y: -h / 2, w, h };
}

/**
 * The line laid out on a felt of `width` by `height`, so that a placed tile keeps its
 * place: each tile is laid where the tiles before it leave room, its arm turning at
 * `bounds` (where the arms turn, fixed for a hand: the felt as it was when the hand
 * began), so no later tile moves it; and the whole line is fitted to the felt by one
 * scale and offset, kept as the line grows until it would leave the felt, then made
 * smaller (one of 1.5, 1.25, 1, then by tenths) and centred again. The fit is worked
 * out from the first tile on, so it is the same whenever the line is drawn.
 * `rescales` counts the fit's changes since the first tile. A line that would be drawn
 * smaller than `least` is drawn larger on a felt grown taller (`height`), up to
 * `tallest`.
 */
export function fitLine(
  layout: PlacedTile[],
  openEnds: Set<End>,
  width: number,
  height: number,
  bounds: Box = turnBounds(width, height),
  least = 0,
  tallest = height,
  margin = 8,
): { line: Line; fit: Fit; rescales: number; height: number } {
  const room: Box = { x: margin, y: margin, w: width - 2 * margin, h: height - 2 * margin };
  const sorted = [...layout].sort((p, q) => p.order - q.order);
  const full = layLine(sorted, bounds);
  const within = (fit: Fit, boxes: Box[]) =>
    boxes.every((b) => inside({ x: fit.x + b.x * fit.scale, y: fit.y + b.y * fit.scale, w: b.w * fit.scale, h: b.h * fit.scale }, room));
  // A new fit: larger than 1 while the line is short, centred on it with room for a
  // tile more each way (no further than where the arms turn); at 1 or less, centred on
  // where the arms turn (and on the line, where it ran past), so that the line then
  // fits until it runs past them.
  const centred = (box: Box, scale: number): Fit => ({ scale, x: room.x + room.w / 2 - (box.x + box.w / 2) * scale, y: room.y + room.h / 2 - (box.y + box.h / 2) * scale });
  const refit = (boxes: Box[], most: number): Fit => {
    const bb = boundingBox(boxes);
    const pad = 2 * U + GAP;
    const grown = boundingBox([bb, intersect({ x: bb.x - pad, y: bb.y - pad, w: bb.w + 2 * pad, h: bb.h + 2 * pad }, bounds) ?? bb]);
    for (const scale of SCALES.filter((s) => s > 1 && s <= most)) {
      if (grown.w * scale <= room.w && grown.h * scale <= room.h) return centred(grown, scale);
    }
    const all = boundingBox([bb, bounds]);
    const fitsAt = Math.min(most, 1, room.w / all.w, room.h / all.h);
    if (fitsAt >= 1 - 1e-9) return centred(all, 1);
    // Smaller than 1: with room for more tiles (a tile more each way within where the
    // arms turn; two more each way past them), not a little smaller at every tile; but
    // on a felt so short that this room would make the line much smaller, without it.
    const inBounds = bb.w <= bounds.w && bb.h <= bounds.h;
    const ahead = inBounds ? grown : { x: all.x - 2 * pad, y: all.y - 2 * pad, w: all.w + 4 * pad, h: all.h + 4 * pad };
    const roomy = Math.min(most, 1, room.w / ahead.w, room.h / ahead.h);
    const tight = Math.min(most, 1, room.w / bb.w, room.h / bb.h);
    const [box, scale] = roomy >= (inBounds ? 0.75 : 0.5) * tight ? [inBounds ? ahead : all, roomy] : [bb, tight];
    return centred(box, scale >= 1 - 1e-9 ? 1 : Math.max(0.05, Math.floor(scale * 20 + 1e-9) / 20));
  };
  // Each prefix of the line with every end's next slot (open yet or not): the fit
  // leaves room for the next tile wherever it goes.
  let fit: Fit | undefined;
  let rescales = 0;
  for (let k = 1; k <= sorted.length; k++) {
    const part = layLine(sorted.slice(0, k), bounds);
    const boxes = [...part.tiles.map((t) => t.box), ...part.ends.values()];
    if (fit && within(fit, boxes)) continue;
    const next = refit(boxes, fit?.scale ?? SCALES[0]);
    if (fit) rescales++;
    fit = next;
  }
  const shown = [...full.tiles.map((t) => t.box), ...[...full.ends].filter(([e]) => openEnds.has(e) || e === End.UNSPECIFIED).map(([, b]) => b)];
  if (!fit || !within(fit, shown)) {
    if (fit) rescales++;
    fit = refit(shown, fit?.scale ?? SCALES[0]);
  }
  // Below `least`, the felt grows taller, up to `tallest`, for the line to be drawn
  // as near `least` as that allows.
  if (fit.scale < least - 1e-9 && tallest > height) {
    const bb = boundingBox(shown);
    const scale = Math.min(least, room.w / bb.w, (tallest - 2 * margin) / bb.h);
    if (scale > fit.scale) {
      const grown = Math.max(height, Math.ceil(bb.h * scale + 2 * margin));
      return { line: full, fit: { scale, x: room.x + room.w / 2 - (bb.x + bb.w / 2) * scale, y: grown / 2 - (bb.y + bb.h / 2) * scale }, rescales: rescales + 1, height: grown };
    }
  }
  return { line: full, fit, rescales, height };
}

/** Whether `boxes` placed by `fit` lie on a felt of `width` by `height` (less its margin). */
export function fitHolds(fit: Fit, boxes: Box[], width: number, height: number, margin = 8): boolean {
  const room: Box = { x: margin, y: margin, w: width - 2 * margin, h: height - 2 * margin };
  return boxes.every((b) => inside({ x: fit.x + b.x * fit.scale, y: fit.y + b.y * fit.scale, w: b.w * fit.scale, h: b.h * fit.scale }, room));
}

/** `boxes` centred on a felt of `width` by `height` at `scale`. */
export function centredAt(boxes: Box[], scale: number, width: number, height: number): Fit {
  const bb = boundingBox(boxes);
  return { scale, x: width / 2 - (bb.x + bb.w / 2) * scale, y: height / 2 - (bb.y + bb.h / 2) * scale };
}

/**
 * A finished line laid out afresh for a felt of `width` by `height` at scale 1 (no one
 * plays on it: its tiles may move), bent within the felt's width or less of it (the
 * arms then turn sooner), clockwise first or not: the first of these that fits, or
 * undefined.
 */
export function settleLine(layout: PlacedTile[], openEnds: Set<End>, width: number, height: number, margin = 8): { line: Line; fit: Fit } | undefined {
  const room: Box = { x: margin, y: margin, w: width - 2 * margin, h: height - 2 * margin };
  const bounds = turnBounds(width, height, margin);
  for (const widdershins of [false, true]) {
    for (const inset of [1, 0.9, 0.8, 0.7, 0.6, 0.5]) {
      const line = layLine(layout, { ...bounds, x: bounds.x * inset, w: bounds.w * inset }, widdershins);
      const boxes = [...line.tiles.map((t) => t.box), ...[...line.ends].filter(([e]) => openEnds.has(e)).map(([, b]) => b)];
      const bb = boundingBox(boxes);
      const fit = { scale: 1, x: room.x + room.w / 2 - (bb.x + bb.w / 2), y: room.y + room.h / 2 - (bb.y + bb.h / 2) };
      if (fits(boxes.map((b) => ({ ...b, x: b.x + fit.x, y: b.y + fit.y })), room)) return { line, fit };
    }
  }
  return undefined;
}

function intersect(a: Box, b: Box): Box | undefined {
  const x = Math.max(a.x, b.x);
  const y = Math.max(a.y, b.y);
  const w = Math.min(a.x + a.w, b.x + b.w) - x;
  const h = Math.min(a.y + a.h, b.y + b.h) - y;
  return w > 0 && h > 0 ? { x, y, w, h } : undefined;
}

export function boundingBox(boxes: Box[]): Box {
  const minX = Math.min(...boxes.map((b) => b.x));
  const minY = Math.min(...boxes.map((b) => b.y));
  const maxX = Math.max(...boxes.map((b) => b.x + b.w));
  const maxY = Math.max(...boxes.map((b) => b.y + b.h));
  return { x: minX, y: minY, w: maxX - minX, h: maxY - minY };
}
