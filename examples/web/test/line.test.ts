// The line of play's geometry (src/line.ts), without a browser: for random lines of up
// to 28 tiles, shaped as the server lays them (a lead, LEFT and RIGHT arms, UP and DOWN
// from a spinner, doubles across), on felts from a phone's width to a desktop's, the
// fitted line has every tile and open-end slot inside the felt, none over another, at
// a scale no smaller than 1 (a readable tile) but for under 1 in 100 (long lines with
// many doubles on narrow tables, which no bending fits); and a short line stays straight.
import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { Arm, End, PlacedTileSchema, TileSchema, type PlacedTile } from "../src/gen/allfives/v1/allfives_pb.js";
import { boundingBox, fitLine, fits, type Box } from "../src/line.js";

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

test("a fitted line lies inside its felt, no tile over another, below scale 1 for under 1 in 100", () => {
  let bent = 0;
  let small = 0;
  for (let seed = 1; seed <= 3000; seed++) {
    const rand = random(seed);
    const tiles = line(rand, 1 + Math.floor(rand() * 28));
    const width = 300 + Math.floor(rand() * 700);
    const height = width < 640 ? Math.max(240, Math.round(width * 0.72)) : 360;
    const open = new Set([End.LEFT, End.RIGHT, End.UP, End.DOWN]);
    const fitted = fitLine(tiles, open, width, height);
    if (fitted.scale < 1) small++;
    assert.equal(fitted.line.tiles.length, tiles.length);
    const boxes: Box[] = [...fitted.line.tiles.map((t) => t.box), ...[...fitted.line.ends].map(([, b]) => b)];
    // As the table draws it: scaled, its bounding box centred in the felt less its margin.
    const bb = boundingBox(boxes);
    const s = fitted.scale;
    const felt: Box = { x: 8, y: 8, w: width - 16, h: fitted.height - 16 };
    const moved = boxes.map((b) => ({
      x: felt.x + felt.w / 2 + (b.x - (bb.x + bb.w / 2)) * s,
      y: felt.y + felt.h / 2 + (b.y - (bb.y + bb.h / 2)) * s,
      w: b.w * s,
      h: b.h * s,
    }));
    assert.ok(fits(moved, felt), `seed ${seed}: ${tiles.length} tiles on a ${width} px felt`);
    const turned = fitted.line.tiles.some((t) => (t.tile.arm === Arm.LEFT || t.tile.arm === Arm.RIGHT) && !t.tile.crosswise && t.box.w < t.box.h);
    if (fitted.height > height || turned) bent++;
  }
  assert.ok(bent > 0, "some lines needed bending or a taller felt");
  assert.ok(small < 30, `${small} of 3000 lines drawn below scale 1`);
  console.log(`  ${bent} of 3000 lines bent or on a taller felt, ${small} drawn smaller than scale 1`);
});

test("a short line runs straight, at the largest scale", () => {
  const tiles = [placed(Arm.LEAD, 0, 3, 5, 0), placed(Arm.RIGHT, 0, 5, 1, 1), placed(Arm.LEFT, 0, 3, 2, 2)];
  const fitted = fitLine(tiles, new Set([End.LEFT, End.RIGHT]), 900, 360);
  assert.equal(fitted.scale, 1.5);
  assert.ok(fitted.line.tiles.every((t) => t.horizontal), "every tile lies along the line");
  assert.equal(new Set(fitted.line.tiles.map((t) => t.box.y)).size, 1, "one row");
});
