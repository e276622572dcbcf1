// The line of play's geometry: where each placed tile lies and where each open end's
// next tile would go, in layout units (a tile is 2U by U) with the lead's centre at
// (0, 0). Each arm runs straight from the lead (LEFT westwards, RIGHT eastwards) or
// from the spinner (UP, DOWN, across the spinner's own leg); within bounds, an arm that
// reaches an edge turns clockwise, its next tile set across the end of the last one,
// as players bend the line at the table's edge, and may turn again at the next edge.
// Doubles lie across their leg. Pure: no DOM, so the tests check it directly.
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
    const fine = (c: typeof straight) => inside(c.box, bounds) && clear(c.box, table, this.arm);
    if (fine(straight)) return straight;
    if (this.inLeg > 0 && this.far && this.turns < MAX_TURNS) {
      const [cx, cy] = this.far.at;
      const off = this.far.across / 2 + GAP;
      const ways = [clockwise(this.d), clockwise(clockwise(clockwise(this.d)))];
      if (this.widdershins) ways.reverse();
      for (const d of ways) {
        const turned = at([cx + d[0] * off, cy + d[1] * off], d, true);
        if (fine(turned)) return turned;
      }
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

/** The scales tried, largest first; 1 is the smallest a tile is drawn at (readable). */
const SCALES = [1.5, 1.25, 1];

/**
 * The line laid out to fit a felt of `width` by `height` (in the table's units, less a
 * margin): straight at the largest scale that fits; else bent at the largest; else, at
 * the smallest readable scale, on a felt grown taller until it fits; else (rarely)
 * smaller. Answers the line, its scale, and the felt's height (`height`, or more).
 */
export function fitLine(
  layout: PlacedTile[],
  openEnds: Set<End>,
  width: number,
  height: number,
  margin = 8,
): { line: Line; scale: number; height: number } {
  const boxesOf = (line: Line) => [...line.tiles.map((t) => t.box), ...[...line.ends].filter(([e]) => openEnds.has(e) || e === End.UNSPECIFIED).map(([, b]) => b)];
  const boundsAt = (scale: number, h: number): Box => {
    const w = (width - 2 * margin) / scale;
    const hh = (h - 2 * margin) / scale;
    return { x: -w / 2, y: -hh / 2, w, h: hh };
  };
  // Bent within the felt's width, or within less of it (the arms then turn sooner,
  // which can leave room where turning at the edge would not).
  const tryAt = (scale: number, h: number, inset?: number, widdershins = false) => {
    const bounds = boundsAt(scale, h);
    const turnAt = inset === undefined ? undefined : { ...bounds, x: bounds.x * inset, w: bounds.w * inset };
    const line = layLine(layout, turnAt, widdershins);
    return fitsCentred(boxesOf(line), bounds) ? line : undefined;
  };
  for (const scale of SCALES) {
    const line = tryAt(scale, height);
    if (line) return { line, scale, height };
  }
  const INSETS = [1, 0.9, 0.8, 0.7, 0.6, 0.5];
  for (const scale of SCALES) {
    for (const widdershins of [false, true]) {
      for (const inset of INSETS) {
        const line = tryAt(scale, height, inset, widdershins);
        if (line) return { line, scale, height };
      }
    }
  }
  for (let h = height + 40; h < height + 2000; h += 40) {
    for (const widdershins of [false, true]) {
      for (const inset of INSETS) {
        const line = tryAt(1, h, inset, widdershins);
        if (line) return { line, scale: 1, height: h };
      }
    }
  }
  // A line no bending fits at a readable size (rare: about one random line in a
  // hundred in the tests, long ones on narrow tables): smaller, rather than a tile over
  // another.
  for (let scale = 0.9; scale > 0.2; scale -= 0.1) {
    for (const widdershins of [false, true]) {
      for (const inset of INSETS) {
        const line = tryAt(scale, height + 400, inset, widdershins);
        if (line) return { line, scale, height: height + 400 };
      }
    }
  }
  return { line: layLine(layout, boundsAt(1, height)), scale: 1, height };
}

/** Whether the boxes, moved so that their bounding box is centred in `bounds`, fit. */
function fitsCentred(boxes: Box[], bounds: Box): boolean {
  const b = boundingBox(boxes);
  const dx = bounds.x + bounds.w / 2 - (b.x + b.w / 2);
  const dy = bounds.y + bounds.h / 2 - (b.y + b.h / 2);
  return fits(
    boxes.map((x) => ({ ...x, x: x.x + dx, y: x.y + dy })),
    bounds,
  );
}

export function boundingBox(boxes: Box[]): Box {
  const minX = Math.min(...boxes.map((b) => b.x));
  const minY = Math.min(...boxes.map((b) => b.y));
  const maxX = Math.max(...boxes.map((b) => b.x + b.w));
  const maxY = Math.max(...boxes.map((b) => b.y + b.h));
  return { x: minX, y: minY, w: maxX - minX, h: maxY - minY };
}
