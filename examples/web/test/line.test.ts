// The line of play's geometry (src/line.ts), without a browser: for random lines of up
// to 28 tiles, shaped as the server lays them (a lead, LEFT and RIGHT arms, UP and DOWN
// from a spinner, doubles across), on felts from a small phone's to a desktop's, the
// fitted line has every tile and open-end slot inside the felt, none over another (but
// for under 1 in 600, hemmed in); every shorter line of the same tiles (the hand
// earlier, checked for one line in three) has its tiles exactly where the longer one
// has them, at a scale no smaller;
// the whole line is made smaller at most 8 times; and a short line stays straight.
import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { Arm, End, PlacedTileSchema, TileSchema, type PlacedTile } from "../src/gen/allfives/v1/allfives_pb.js";
import { fitLine, fits, turnBounds, type Box } from "../src/line.js";

/** A small deterministic generator (mulberry32), so a failure names its seed. */
function random(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function placed(arm: Arm, index: number, near: number, far: number, order: number, spinner = false): PlacedTile {
  return create(PlacedTileSchema, {
    tile: create(TileSchema, { a: Math.min(near, far), b: Math.max(near, far) }),
    arm,
    index,
    near,
    far,
    crosswise: near === far,
    spinner,
    order,
    seat: order % 4,
  });
}

/** A line of `n` tiles: the lead, then tiles on random arms (UP and DOWN once a spinner lies). */
function line(rand: () => number, n: number): PlacedTile[] {
  const doubleLead = rand() < 0.3;
  const lead = doubleLead ? Math.floor(rand() * 7) : 0;
  const tiles = [placed(Arm.LEAD, 0, lead, doubleLead ? lead : 1 + Math.floor(rand() * 6), 0, doubleLead)];
  let spinner = doubleLead;
  const count = new Map<Arm, number>();
  for (let order = 1; order < n; order++) {
    const arms = spinner ? [Arm.LEFT, Arm.RIGHT, Arm.UP, Arm.DOWN] : [Arm.LEFT, Arm.RIGHT];
    const arm = arms[Math.floor(rand() * arms.length)];
    const index = count.get(arm) ?? 0;
    count.set(arm, index + 1);
    const near = Math.floor(rand() * 7);
    const double = rand() < 0.2;
    const isSpinner = double && !spinner && (arm === Arm.LEFT || arm === Arm.RIGHT);
    if (isSpinner) spinner = true;
    tiles.push(placed(arm, index, near, double ? near : Math.floor(rand() * 7), order, isSpinner));
  }
  return tiles;
}

test("a fitted line lies inside its felt, no tile over another (but for under 1 in 600), each tile kept in its place as the line grows, made smaller a few times at most", () => {
  let bent = 0;
  let small = 0;
  let most = 0;
  let overlaps = 0;
  for (let seed = 1; seed <= 3000; seed++) {
    const rand = random(seed);
    const tiles = line(rand, 1 + Math.floor(rand() * 28));
    const width = 300 + Math.floor(rand() * 700);
    const height = 150 + Math.floor(rand() * 300);
    const open = new Set([End.LEFT, End.RIGHT, End.UP, End.DOWN]);
    const bounds = turnBounds(width, height);
    const fitted = fitLine(tiles, open, width, height, bounds);
    assert.equal(fitted.line.tiles.length, tiles.length);
    const boxes: Box[] = [...fitted.line.tiles.map((t) => t.box), ...[...fitted.line.ends].map(([, b]) => b)];
    const { scale: s, x, y } = fitted.fit;
    if (s < 1) small++;
    const felt: Box = { x: 8, y: 8, w: width - 16, h: height - 16 };
    const moved = boxes.map((b) => ({ x: x + b.x * s, y: y + b.y * s, w: b.w * s, h: b.h * s }));
    if (!fits(moved, felt)) { overlaps++; continue; }
    // Every shorter line (the same hand earlier) has its tiles where this one has them,
    // and a fit no smaller (for one line in three: it is the slow part).
    let last = Infinity;
    for (let k = 1; k <= (seed % 3 === 0 ? tiles.length : 0); k++) {
      const part = fitLine(tiles.slice(0, k), open, width, height, bounds);
      assert.deepEqual(part.line.tiles.map((t) => t.box), fitted.line.tiles.slice(0, k).map((t) => t.box), `seed ${seed}: the first ${k} tiles moved`);
      assert.ok(part.fit.scale <= last, `seed ${seed}: the line grew at ${k} tiles`);
      last = part.fit.scale;
    }
    most = Math.max(most, fitted.rescales);
    const turned = fitted.line.tiles.some((t) => (t.tile.arm === Arm.LEFT || t.tile.arm === Arm.RIGHT) && !t.tile.crosswise && t.box.w < t.box.h);
    if (turned) bent++;
  }
  assert.ok(bent > 0, "some lines needed bending");
  assert.ok(most <= 8, `at most ${most} rescales in a line`);
  assert.ok(overlaps < 5, `${overlaps} of 3000 lines with a tile or slot over another, or off the felt`);
  assert.ok(small < 750, `${small} of 3000 lines drawn below scale 1`);
  console.log(`  ${overlaps} overlapping, ${bent} of 3000 lines bent, ${small} drawn smaller than scale 1, at most ${most} rescales`);
});

test("a short line runs straight, at the largest scale", () => {
  const tiles = [placed(Arm.LEAD, 0, 3, 5, 0), placed(Arm.RIGHT, 0, 5, 1, 1), placed(Arm.LEFT, 0, 3, 2, 2)];
  const fitted = fitLine(tiles, new Set([End.LEFT, End.RIGHT]), 900, 360);
  assert.equal(fitted.fit.scale, 1.5);
  assert.ok(fitted.line.tiles.every((t) => t.horizontal), "every tile lies along the line");
  assert.equal(new Set(fitted.line.tiles.map((t) => t.box.y)).size, 1, "one row");
});
