// The table's layout on a real phone (issue 42), in Debian's chromium through
// playwright-core, against the servers .ci/web starts (see test/web.test.ts for the
// environment). At 360×640, 390×844 and 1280×720, one short match of four players
// against the server's bots, played by clicking, the page's language changed at every
// move (every language seen at every size): at every state the hand's every tile and
// the action bar are on the screen without scrolling; the placed tiles keep their
// places between two states (every old tile's centre moved by one common scale and
// offset), the line rescaled only a few times a hand and only smaller; every SVG text
// reads at 4.5:1 against what is behind it, in light and dark mode; and the three
// language cases of the trial (Dutch's settlement choice whole, Serbian opponents'
// counts with their word, Romanian score cells on one line).
import { after, before, test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests with bash .ci/web (from the repository's root)`);
  return value;
}
const PAGE_URL = env("PAGE_URL");
const SERVER_URL = env("SERVER_URL");
const OUTPUT = process.env.TEST_OUTPUT ?? "test-output";
const WAIT = { timeout: 20_000 }; // a hang guard: one call and its bots' moves on a busy machine
mkdirSync(OUTPUT, { recursive: true });

let browser: Browser;
before(async () => {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
});
after(async () => {
  await browser?.close();
});

type ContextOptions = NonNullable<Parameters<Browser["newContext"]>[0]>;
// The small phone plays the default match's two players (nine tiles each, and draws:
// the longest hand); the phone plays with motion on (an answer's moves played back).
const SIZES: { name: string; options: ContextOptions; phone: boolean; players: number; motion: boolean }[] = [
  { name: "small-phone", phone: true, players: 2, motion: false, options: { viewport: { width: 360, height: 640 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true } },
  { name: "phone", phone: true, players: 4, motion: true, options: { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true } },
  { name: "laptop", phone: false, players: 4, motion: false, options: { viewport: { width: 1280, height: 720 } } },
];
const LANGS = ["en", "ro", "nl", "sr", "th"];

async function idle(page: Page) {
  await page.waitForFunction(() => document.body.dataset.state === "idle", null, WAIT);
}
const dataset = (page: Page) => page.evaluate(() => ({ ...document.body.dataset }) as Record<string, string | undefined>);

/** A click as the page gets it, without Playwright scrolling the element into view first. */
const press = (page: Page, selector: string) =>
  page.evaluate((sel) => {
    const el = document.querySelector(sel) as HTMLElement | null;
    el?.focus({ preventScroll: true });
    el?.dispatchEvent(new MouseEvent("click", { bubbles: true }));
    return el !== null;
  }, selector);

/** What must be on the screen and is not: the hand's tiles and the action bar, none under the bar. */
async function outOfView(page: Page): Promise<string[]> {
  return page.evaluate(async () => {
    // After the page's own reactions to the last change (its ResizeObservers run before
    // the next frame) and, with motion on, once the line's moves are over.
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
    await Promise.all(document.getAnimations().filter((a) => a instanceof CSSTransition).map((a) => a.finished.catch(() => {})));
    const faults: string[] = [];
    const [vw, vh] = [window.innerWidth, window.innerHeight];
    const within = (r: DOMRect) => r.left >= -0.5 && r.top >= -0.5 && r.right <= vw + 0.5 && r.bottom <= vh + 0.5;
    if (window.scrollY !== 0) faults.push(`the page scrolled by itself to ${window.scrollY}`);
    const bar = document.querySelector(".controls")!.getBoundingClientRect();
    if (!within(bar)) faults.push(`the action bar at ${bar.top.toFixed(0)}..${bar.bottom.toFixed(0)} of ${vh}`);
    for (const tile of document.querySelectorAll("g.in-hand")) {
      const r = tile.querySelector("rect.face")!.getBoundingClientRect();
      const name = tile.getAttribute("data-tile");
      if (!within(r)) faults.push(`tile ${name} at ${r.left.toFixed(0)},${r.top.toFixed(0)}..${r.right.toFixed(0)},${r.bottom.toFixed(0)} in ${vw}×${vh}`);
      else if (r.bottom > bar.top + 0.5 && r.top < bar.bottom && r.right > bar.left && r.left < bar.right) faults.push(`tile ${name} under the action bar`);
    }
    return faults;
  });
}

/**
 * Watches every drawing of the table (an answer's moves played back included, which the
 * test's own look at each state misses): where a drawing adds tiles to the line before
 * it, the line may only keep its scale or shrink (but at the hand's end, told on the
 * felt, laid afresh). The faults are kept in the page.
 */
const watchDrawings = (page: Page) =>
  page.evaluate(() => {
    const w = window as unknown as { lineFaults: string[]; leastScale: number };
    w.lineFaults = [];
    w.leastScale = Infinity;
    let last: { tiles: Set<string>; scale: number; transform: string } | undefined;
    new MutationObserver(() => {
      const layout = document.querySelector<SVGGElement>("#table-content g.layout");
      if (!layout) return;
      const tiles = new Set([...layout.querySelectorAll("g.placed")].map((g) => `${g.getAttribute("data-order")}:${g.getAttribute("data-tile")}`));
      const scale = Number(layout.getAttribute("data-scale"));
      const transform = (layout.getAttribute("style") ?? "").replace(/[\s;]/g, "");
      if (last && tiles.size > last.tiles.size && [...last.tiles].every((k) => tiles.has(k))) {
        if (scale > last.scale + 1e-6 && !document.querySelector("#table-content g.moment")) w.lineFaults.push(`${last.tiles.size} → ${tiles.size} tiles: the line grew ×${(scale / last.scale).toFixed(3)} (${last.transform} → ${transform})`);
      }
      if (!document.querySelector("#table-content g.moment")) w.leastScale = Math.min(w.leastScale, scale);
      last = { tiles, scale, transform };
    }).observe(document.querySelector("#table-content")!, { childList: true });
  });
const lineFaults = (page: Page) => page.evaluate(() => (window as unknown as { lineFaults: string[] }).lineFaults);

/** Each placed tile's centre on the screen, by its order, and the line's scale. */
const placedCentres = (page: Page) =>
  page.evaluate(() => {
    const out: Record<string, [number, number]> = {};
    for (const g of document.querySelectorAll("g.placed")) {
      const r = g.querySelector("rect.face")!.getBoundingClientRect();
      out[g.getAttribute("data-order")!] = [r.left + r.width / 2, r.top + r.height / 2];
    }
    return out;
  });

/**
 * How the old tiles moved from `before` to `now`: one common scale and offset (a
 * similarity without rotation), or a fault naming the tile that moved otherwise.
 */
function movedBy(before: Record<string, [number, number]>, now: Record<string, [number, number]>): { scale: number; moved: boolean; fault?: string } {
  const keys = Object.keys(before);
  if (keys.length === 0) return { scale: 1, moved: false };
  for (const k of keys) if (!now[k]) return { scale: 1, moved: true, fault: `tile ${k} is gone` };
  // The scale from the two old tiles farthest apart (1 with a single tile).
  let [a, b, far] = [keys[0], keys[0], 0];
  for (const p of keys) for (const q of keys) {
    const d = Math.hypot(before[p][0] - before[q][0], before[p][1] - before[q][1]);
    if (d > far) [a, b, far] = [p, q, d];
  }
  const scale = far > 0 ? Math.hypot(now[a][0] - now[b][0], now[a][1] - now[b][1]) / far : 1;
  const [ox, oy] = [now[a][0] - before[a][0] * scale, now[a][1] - before[a][1] * scale];
  for (const k of keys) {
    const [x, y] = [before[k][0] * scale + ox, before[k][1] * scale + oy];
    const off = Math.hypot(now[k][0] - x, now[k][1] - y);
    if (off > 0.5) return { scale, moved: true, fault: `tile ${k} moved ${off.toFixed(1)} px apart from the others (scale ${scale.toFixed(3)})` };
  }
  // Moved at all: rescaled, or panned at the same scale (counted alike).
  return { scale, moved: Math.abs(scale - 1) > 0.0005 || Math.hypot(now[a][0] - before[a][0], now[a][1] - before[a][1]) > 0.5 };
}

/** Every SVG text's contrast against what it sits on (WCAG's relative luminance), the low ones named. */
async function lowContrast(page: Page): Promise<{ faults: string[]; checked: number }> {
  return page.evaluate(() => {
    const rgba = (s: string): [number, number, number, number] | undefined => {
      const m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/.exec(s);
      return m ? [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])] : undefined;
    };
    const lum = ([r, g, b]: number[]) => {
      const c = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      return 0.2126 * c(r) + 0.7152 * c(g) + 0.0722 * c(b);
    };
    const ratio = (x: number[], y: number[]) => {
      const [l1, l2] = [lum(x), lum(y)].sort((p, q) => q - p);
      return (l1 + 0.05) / (l2 + 0.05);
    };
    const over = (top: number[], below: number[]) => [0, 1, 2].map((i) => top[i] * top[3] + below[i] * (1 - top[3]));
    const alphaOf = (el: Element) => {
      let a = 1;
      for (let e: Element | null = el; e && e.tagName.toLowerCase() !== "svg"; e = e.parentElement) a *= Number(getComputedStyle(e).opacity);
      return a;
    };
    const svg = document.querySelector("svg#table")!;
    const base = rgba(getComputedStyle(svg).backgroundColor)!;
    /** The colour behind a point: the filled shapes under it (texts aside), composited over the table's own. */
    const behind = (x: number, y: number, self: Element) => {
      const stack = document.elementsFromPoint(x, y).filter((e) => svg.contains(e) && e !== svg && !["text", "tspan", "g", "title"].includes(e.tagName.toLowerCase()) && !self.contains(e));
      let colour = base.slice(0, 3);
      for (const e of stack.reverse()) {
        const fill = rgba(getComputedStyle(e).fill);
        if (!fill) continue;
        colour = over([fill[0], fill[1], fill[2], fill[3] * Number(getComputedStyle(e).fillOpacity) * alphaOf(e)], colour);
      }
      return colour;
    };
    const faults: string[] = [];
    let checked = 0;
    for (const el of svg.querySelectorAll("text, tspan")) {
      // A text with tspans is checked for its own words between them ("Hand 2"), if any.
      const own = [...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent!.trim());
      if (!el.textContent?.trim() || (el.tagName === "text" && el.querySelector("tspan") && !own)) continue;
      const r = el.getBoundingClientRect();
      if (r.width === 0) continue;
      const style = getComputedStyle(el);
      const fill = rgba(style.fill);
      if (!fill) continue;
      checked++;
      // A text with a halo (its stroke painted under its fill) reads against the halo.
      const halo = style.paintOrder.startsWith("stroke") && parseFloat(style.strokeWidth) >= 2 ? rgba(style.stroke) : undefined;
      const back = halo ? halo.slice(0, 3) : behind(r.left + r.width / 2, r.top + r.height / 2, el);
      const c = ratio(fill.slice(0, 3), back);
      if (c < 4.5) faults.push(`"${el.textContent.trim()}" (${el.getAttribute("class") ?? el.parentElement?.getAttribute("class")}): ${c.toFixed(2)}:1, ${style.fill} on rgb(${back.map(Math.round).join(", ")})`);
    }
    return { faults, checked };
  });
}

/** The score sheets (the hand's end's and the match's) or the page wider than the screen (cells do not wrap: a sheet too wide runs off it). */
const sheetOverflow = (page: Page) =>
  page.evaluate(() => {
    // A sheet's visible part: up to the edge of the box that scrolls it, if one does.
    const shownTo = (t: HTMLElement) => {
      let right = t.getBoundingClientRect().right;
      for (let e = t.parentElement; e && e !== document.body; e = e.parentElement)
        if (["auto", "scroll", "hidden"].includes(getComputedStyle(e).overflowX)) right = Math.min(right, e.getBoundingClientRect().right);
      return right;
    };
    const faults = [...document.querySelectorAll<HTMLElement>("table.sheet")]
      .filter((t) => t.offsetParent && shownTo(t) > document.documentElement.clientWidth + 0.5)
      .map((t) => `a sheet to x ${shownTo(t).toFixed(0)} of ${document.documentElement.clientWidth}`);
    if (document.documentElement.scrollWidth > window.innerWidth) faults.push(`the page ${document.documentElement.scrollWidth} px wide`);
    return faults;
  });

/**
 * The settlement rule's choice cut off: narrower than it would be if nothing held it in
 * (a select is as wide as its longest choice unless its box is narrower), or past the
 * screen's edge.
 */
const settlementCut = (page: Page) =>
  page.evaluate(() => {
    const select = document.querySelector("select[name=settlement]") as HTMLSelectElement;
    const shown = select.getBoundingClientRect();
    select.style.maxWidth = "none";
    const free = select.getBoundingClientRect().width;
    select.style.maxWidth = "";
    return shown.width < free - 0.5 || shown.right > window.innerWidth + 0.5 ? [`the choice is ${shown.width.toFixed(0)} px of ${free.toFixed(0)}, to x ${shown.right.toFixed(0)}`] : [];
  });

for (const size of SIZES) {
  test(`the ${size.name} (${size.options.viewport!.width}×${size.options.viewport!.height}), a whole match in every language: the hand and the actions always on the screen, placed tiles kept in place, SVG text readable`, { timeout: 300_000 }, async (t: TestContext) => {
    const context = await browser.newContext({ reducedMotion: size.motion ? "no-preference" : "reduce", locale: "en-US", ...size.options });
    const page = await context.newPage();
    page.on("dialog", (d) => void d.accept());
    try {
      await page.goto(`${PAGE_URL}?server=${encodeURIComponent(SERVER_URL)}`);
      await idle(page);
      // The settlement rule's choice, whole, in the new-match form (Dutch's was cut off).
      for (const code of ["nl", ...LANGS]) {
        await page.selectOption("#lang", code);
        assert.deepEqual(await settlementCut(page), [], `${code}: the settlement choice is cut off`);
      }
      await page.selectOption("#lang", "en");
      await page.selectOption("select[name=players]", String(size.players));
      for (let i = 1; i < size.players; i++) await page.selectOption(`select[name=bot${i}]`, "1");
      await page.fill("input[name=target]", "50");
      await press(page, "#new-match button[type=submit]");
      await idle(page);
      await watchDrawings(page);
      let before: Record<string, [number, number]> = {};
      let hand = "";
      let rescales = 0;
      let redrawn = false;
      let suggested = false;
      let [endContrast, turnContrast] = [false, false];
      const tops = new Map<string, number>();
      const history: string[] = [];
      let worst = 0;
      let states = 0;
      let contrastChecked = false;
      let shot = false;
      /** Every SVG text at 4.5:1 or more against what is behind it, in light and dark mode. */
      const contrast = async (code: string) => {
        for (const scheme of ["light", "dark"] as const) {
          await page.emulateMedia({ colorScheme: scheme });
          const { faults, checked } = await lowContrast(page);
          assert.ok(checked >= 10, `${checked} texts checked`);
          assert.deepEqual(faults, [], `${scheme} mode, ${code}: SVG text under 4.5:1`);
        }
        await page.emulateMedia({ colorScheme: "light" });
      };
      for (let move = 0; move < 400; move++) {
        const { phase, hand: handNumber, yourTurn } = await dataset(page);
        if (phase === "DEALING" || phase === "OVER") {
          // The hand's end's action on the screen, nothing over it.
          const id = phase === "OVER" ? "rematch" : "deal";
          const hidden = await page.evaluate(async (id) => {
            await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
            const el = document.getElementById(id)!;
            const r = el.getBoundingClientRect();
            if (r.width === 0) return `#${id} not shown`;
            const [x, y] = [r.left + r.width / 2, r.top + r.height / 2];
            if (r.left < -0.5 || r.top < -0.5 || r.right > window.innerWidth + 0.5 || r.bottom > window.innerHeight + 0.5) return `#${id} at ${r.left.toFixed(0)},${r.top.toFixed(0)}..${r.right.toFixed(0)},${r.bottom.toFixed(0)}`;
            return el.contains(document.elementFromPoint(x, y)) ? "" : `#${id} under ${document.elementFromPoint(x, y)?.tagName}`;
          }, id);
          assert.equal(hidden, "", `move ${move}, ${phase}: the hand's end's action`);
        }
        if (phase === "OVER") {
          assert.deepEqual(await outOfView(page), [], `move ${move}, the match over`);
          break;
        }
        if (phase === "DEALING" && !redrawn) {
          // The hand's end as it arrived, then drawn again for a line shown below the
          // table (the room changed): what arrived with the state does not arrive again.
          redrawn = true;
          await page.evaluate(() => {
            document.getElementById("gone")!.hidden = false;
            document.getElementById("gone")!.innerHTML = "<li>A line the test shows</li>";
          });
          assert.deepEqual(await outOfView(page), [], `move ${move}, the hand's end with a line below the table`);
          const again = await page.evaluate(() => [...document.querySelectorAll("#table-content .arriving, #table-content .callout")].map((e) => e.getAttribute("class")));
          assert.deepEqual(again, [], `move ${move}: drawn again for the room, what arrived with the state arrives again`);
          await page.evaluate(() => {
            document.getElementById("gone")!.hidden = true;
          });
        }
        const code = LANGS[move % LANGS.length];
        await page.selectOption("#lang", code);
        states++;
        // The first state (the opponents, the scores, the caption), and below the first
        // chosen tile's lit ends.
        if (move === 0) await contrast(code);
        // Also the hand's end (its banner, the revealed hands) and an opponent's box on turn.
        if (phase === "DEALING" && !endContrast) {
          endContrast = true;
          await contrast(code);
        }
        if (!turnContrast && (await page.locator("g.opponent.on-turn").count()) > 0) {
          turnContrast = true;
          await contrast(code);
        }
        assert.deepEqual(await outOfView(page), [], `${code}, move ${move}, ${phase}`);
        assert.deepEqual(await lineFaults(page), [], `${code}, move ${move}: the line as drawn`);
        if (move === 3) {
          // A line said above the table without the table being drawn (a connection lost),
          // and the clocks' line below it: the hand still on the screen.
          await page.evaluate(() => {
            document.getElementById("offline")!.textContent = "Reconnecting… (a line the test shows)";
            document.getElementById("gone")!.hidden = false;
            document.getElementById("gone")!.innerHTML = "<li>A line the test shows</li>";
          });
          assert.deepEqual(await outOfView(page), [], `${code}, move ${move}, a line shown above the table and one below it`);
          await page.evaluate(() => {
            document.getElementById("offline")!.textContent = "";
            document.getElementById("gone")!.hidden = true;
          });
        }
        if (code === "sr") {
          const bare = await page.locator("g.opponent text.hand-size").evaluateAll((ts) => ts.map((t) => t.textContent ?? "").filter((s) => !/\p{L}/u.test(s)));
          assert.deepEqual(bare, [], "sr: an opponent's tile count without its word");
        }
        // The placed tiles since the last state of this hand: one common move, rarely a rescale.
        const now = await placedCentres(page);
        // The table's top steady within a hand (the status line, what is above the table):
        // in each language (switched at every move here, not by a player) where it first was.
        const top = await page.evaluate(() => document.getElementById("table")!.getBoundingClientRect().top + window.scrollY);
        if (handNumber !== hand) {
          [hand, rescales] = [handNumber ?? "", 0];
          tops.clear();
          history.length = 0;
        }
        if (phase === "PLAYING") {
          const first = tops.get(code) ?? top;
          assert.ok(Math.abs(top - first) < 0.5, `${code}, move ${move}: the table's top moved from ${first.toFixed(1)} to ${top.toFixed(1)} within hand ${hand}`);
          tops.set(code, first);
        }
        if (handNumber !== hand) {
          // (the first state of a hand: nothing to compare)
        } else if (phase === "PLAYING" && Object.keys(before).length > 0) {
          const { scale, moved, fault } = movedBy(before, now);
          assert.equal(fault, undefined, `${code}, move ${move}: ${fault}`);
          assert.ok(scale <= 1.0005, `${code}, move ${move}: the line grew (×${scale.toFixed(3)})`);
          if (moved) {
            rescales++;
            history.push(`move ${move} ${Math.abs(scale - 1) > 0.0005 ? `×${scale.toFixed(3)}` : "panned"}`);
          }
          worst = Math.max(worst, rescales);
          // A few a hand, as line.test.ts bounds a line (8): on the small phone's short
          // felt a long hand takes six (a random deal once did).
          assert.ok(rescales <= 8, `${code}, move ${move}: ${rescales} rescales in hand ${hand} (${history.join(", ")})`);
        }
        before = phase === "PLAYING" ? now : {};
        if (phase === "DEALING") {
          // The hand's end told on the table covers no tile of the last line, and (this
          // state drawn again by the language switch) does not arrive again.
          const moment = await page.evaluate(() => {
            const m = document.querySelector("g.moment");
            if (!m) return ["no moment"];
            const r = m.getBoundingClientRect();
            const over = [...document.querySelectorAll("g.placed rect.face")].filter((f) => {
              const q = f.getBoundingClientRect();
              return r.left < q.right && q.left < r.right && r.top < q.bottom && q.top < r.bottom;
            });
            return [...(over.length ? [`the hand's end covers ${over.length} tiles`] : []), ...(m.classList.contains("arriving") ? ["the hand's end arrives again"] : [])];
          });
          assert.deepEqual(moment, [], `${code}, hand ${handNumber}'s end`);
          await page.selectOption("#lang", "ro");
          assert.deepEqual(await sheetOverflow(page), [], "ro: the score sheets within the screen");
          if (size.motion) await page.emulateMedia({ reducedMotion: "reduce" }); // (one hand with motion: CI's time)
          await press(page, "#deal");
        } else if (phase === "PLAYING" && yourTurn === "true") {
          if (await page.locator("#draw").isEnabled()) await press(page, "#draw");
          else {
            if (size.name === "small-phone" && !suggested) {
              // The bar's hint (a second line in the bar) and the tile it chose: all on the screen.
              suggested = true;
              await press(page, "#suggest");
              await idle(page);
              assert.deepEqual(await outOfView(page), [], `${code}, move ${move}, a move suggested`);
            }
            if ((await page.locator("g.in-hand.chosen").count()) === 0) await press(page, "g.in-hand.playable");
            await idle(page);
            if ((await page.locator("g.target").count()) > 0) {
              if (!contrastChecked) {
                await contrast(code);
                contrastChecked = true;
              }
              if (!shot && Object.keys(now).length >= 5) {
                await page.screenshot({ path: join(OUTPUT, `42-${size.name}-mid-hand.png`), scale: "css" });
                shot = true;
              }
              assert.deepEqual(await outOfView(page), [], `${code}, move ${move}, a tile chosen`);
              await press(page, "g.target");
            }
          }
        } else {
          // Not this page's turn: the bots move inside the page's own calls.
          await page.waitForTimeout(100);
        }
        await idle(page);
      }
      assert.equal((await dataset(page)).phase, "OVER", "the match ended");
      if (!contrastChecked) t.diagnostic("no tile with two ends to choose in this match: the lit ends' contrast not measured");
      const least = await page.evaluate(() => (window as unknown as { leastScale: number }).leastScale);
      t.diagnostic(`${states} states seen, at most ${worst} rescales in a hand, the line at least at scale ${least.toFixed(2)} in play`);
    } catch (err) {
      await page.screenshot({ path: join(OUTPUT, `fail-42-${size.name}.png`) }).catch(() => {});
      throw err;
    } finally {
      await context.close();
    }
  });
}
