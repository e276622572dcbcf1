// Browser tests of the page, in Debian's chromium through playwright-core (no browser
// download). .ci/web builds the page, starts the servers and the page's two origins,
// and passes them in:
//   PAGE_URL               the built page (dist/) on an origin every server allows
//   OTHER_PAGE_URL         the same files on another origin (another port)
//   SERVER_URL             an allfives server on its defaults (any origin may call)
//   RESTRICTED_SERVER_URL  an allfives server started with --cors-origins <PAGE_URL's origin>
//   CHROMIUM               the browser (default /usr/bin/chromium)
//   TEST_OUTPUT            where screenshots go (default test-output/)
// Every test plays through the page as a person would (clicks, or the keyboard), waits
// with generous bounds, and saves a screenshot.
import { after, before, test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { AbsenceRule, AllFivesService, End, Phase, type GameView, type ScoreResponse } from "../src/gen/allfives/v1/allfives_pb.js";
import { en } from "../src/lang/en.js";
import { LANGUAGES, type Lang } from "../src/lang/index.js";
import { networkTests } from "./network.test.js";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests with bash .ci/web (from the repository's root)`);
  return value;
}
const PAGE_URL = env("PAGE_URL");
const OTHER_PAGE_URL = env("OTHER_PAGE_URL");
const SERVER_URL = env("SERVER_URL");
const RESTRICTED_SERVER_URL = env("RESTRICTED_SERVER_URL");
const OUTPUT = process.env.TEST_OUTPUT ?? "test-output";
const WAIT = { timeout: 20_000 }; // one call and its bots' moves; generous on a busy machine
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

// The pages the running test opened, and what their consoles warned of.
let pages: Page[] = [];
let consoleLines: string[] = [];

/**
 * A browser test: on failure, every page it opened is saved as a screenshot
 * (fail-<test>-<n>.png) and the pages' console warnings and errors are printed, so CI
 * shows the cause; its pages are closed either way.
 */
function webTest(name: string, timeout: number, body: () => Promise<void>) {
  test(name, { timeout }, async (t: TestContext) => {
    pages = [];
    consoleLines = [];
    try {
      await body();
    } catch (err) {
      const slug = t.name.split(/\W+/).slice(0, 5).join("-").toLowerCase();
      for (const [i, page] of pages.entries()) {
        if (page.isClosed()) continue;
        const path = join(OUTPUT, `fail-${slug}-${i + 1}.png`);
        await page.screenshot({ path, fullPage: true }).then(
          () => console.error(`  screenshot of the failed test's page ${i + 1}: ${path}`),
          (e) => console.error(`  no screenshot of page ${i + 1}: ${e}`),
        );
      }
      console.error(consoleLines.length ? `  the pages' console:\n${consoleLines.map((l) => `    ${l}`).join("\n")}` : "  the pages' console: no warnings or errors");
      throw err;
    } finally {
      for (const page of pages) await page.context().close().catch(() => {});
    }
  });
}

// The service's methods each page called, in order (Watch among them).
const called = new Map<Page, string[]>();

type ContextOptions = NonNullable<Parameters<Browser["newContext"]>[0]>;
/**
 * A page in a context of its own. Motion is reduced unless the options say otherwise:
 * the page then shows each answer at once instead of playing its tiles back one by one.
 */
async function open(url: string, options: ContextOptions = { viewport: { width: 1280, height: 860 } }): Promise<Page> {
  // English unless the test says otherwise (the page speaks the browser's language).
  const context = await browser.newContext({ reducedMotion: "reduce", locale: "en-US", ...options });
  const page = await context.newPage();
  const n = pages.push(page);
  // The page asks before it leaves a match (a new one over it, an invite): yes.
  page.on("dialog", (dialog) => void dialog.accept());
  const methods: string[] = [];
  called.set(page, methods);
  page.on("request", (r) => {
    const method = /\/allfives\.v1\.AllFivesService\/(\w+)$/.exec(r.url())?.[1];
    if (method) methods.push(method);
  });
  page.on("pageerror", (err) => consoleLines.push(`page ${n} error: ${err}`));
  page.on("console", (msg) => {
    if (msg.type() === "warning" || msg.type() === "error") consoleLines.push(`page ${n} ${msg.type()}: ${msg.text()}`);
  });
  await page.goto(url);
  await idle(page);
  return page;
}
const at = (page: string, server: string, extra = "") => `${page}?server=${encodeURIComponent(server)}${extra}`;

/** Waits until the page is not waiting for a call (every call sets data-state busy at once). */
async function idle(page: Page) {
  await page.waitForFunction(() => document.body.dataset.state === "idle", null, WAIT);
}

const body = (page: Page) =>
  page.evaluate(
    () => ({ ...document.body.dataset }) as { phase?: string; moves?: string; hand?: string; stateId?: string; yourTurn?: string },
  );
const errorText = async (page: Page) => ((await page.locator("#error").isVisible()) ? await page.locator("#error").innerText() : "");

interface Rules {
  /** The player's display name. */
  name?: string;
  players: number;
  bots: string[]; // "1" easy, "2" medium, "3" hard, for seats 2..n
  partnership?: boolean;
  handSize?: string;
  target?: number;
  settlement?: string;
}
async function newMatch(page: Page, rules: Rules) {
  if (rules.name !== undefined) await page.fill("#new-match input[name=name]", rules.name);
  await page.selectOption("select[name=players]", String(rules.players));
  for (const [i, level] of rules.bots.entries()) await page.selectOption(`select[name=bot${i + 1}]`, level);
  if (rules.partnership) await page.check("input[name=partnership]");
  if (rules.handSize) await page.selectOption("select[name=handSize]", rules.handSize);
  if (rules.target !== undefined) await page.fill("input[name=target]", String(rules.target));
  if (rules.settlement) await page.selectOption("select[name=settlement]", rules.settlement);
  await page.click("#new-match button[type=submit]");
  await idle(page);
}

/** One action as a player would take it: deal, draw, or a tile then an end (tapped with `touch`). */
async function act(page: Page, touch = false): Promise<"dealt" | "drew" | "played" | "over"> {
  const press = (l: ReturnType<Page["locator"]>) => (touch ? l.tap() : l.click());
  const { phase } = await body(page);
  if (phase === "OVER") return "over";
  if (phase === "DEALING") {
    await press(page.locator("#deal"));
    await idle(page);
    return "dealt";
  }
  if (await page.locator("#draw").isEnabled()) {
    await press(page.locator("#draw"));
    await idle(page);
    return "drew";
  }
  // A tile that fits one end only is played by the tap itself; else tap an end.
  await press(page.locator("g.in-hand.playable").first());
  await idle(page);
  if ((await page.locator("g.target").count()) > 0) {
    await press(page.locator("g.target").first());
    await idle(page);
  }
  return "played";
}

/** What the page shows of the match: enough to tell two states apart. */
async function snapshot(page: Page) {
  return page.evaluate(() => {
    const labels = (sel: string) => [...document.querySelectorAll(sel)].map((e) => e.getAttribute("aria-label"));
    const text = (sel: string) => [...document.querySelectorAll(sel)].map((e) => e.textContent);
    const { phase, moves, hand: handNumber } = document.body.dataset;
    return {
      phase,
      moves,
      handNumber,
      hand: labels("g.in-hand"),
      layout: labels("g.placed"),
      opponents: labels("g.opponent"),
      scores: text("[data-testid^=score-side]"),
      count: document.querySelector("[data-testid=count]")?.textContent,
      boneyard: document.querySelector("[data-testid=boneyard]")?.textContent,
    };
  });
}

// Tile names as people say them, from the pips, the higher half first: written here
// again (not imported from the page) so that a wrong name on the page fails.
const WORDS = ["blank", "one", "two", "three", "four", "five", "six"];
function nameOf(key: string): string {
  const [lo, hi] = key.split("-").map(Number).sort((x, y) => x - y);
  return lo === hi ? `double ${WORDS[hi]}` : `${WORDS[hi]}-${WORDS[lo]}`;
}
const LEVELS: Record<string, string> = { "1": "easy", "2": "medium", "3": "hard" };

/** Every tile on the page (hand, line of play, revealed hands) is labelled by its pips. */
async function checkTileNames(page: Page): Promise<number> {
  const tiles = await page.locator("g[data-tile]").evaluateAll((els) =>
    els.map((e) => ({ key: e.getAttribute("data-tile")!, label: e.getAttribute("aria-label") ?? "" })),
  );
  for (const { key, label } of tiles) {
    assert.ok(label === nameOf(key) || label.startsWith(`${nameOf(key)},`), `tile ${key} is labelled "${label}"`);
  }
  return tiles.length;
}

/** The opponents' labels: their seat, partner or not, the level chosen, their hand size. */
async function checkOpponents(page: Page, levels: string[], view: GameView, partnership: boolean) {
  const labels = await page.locator("g.opponent").evaluateAll((els) => els.map((e) => e.getAttribute("aria-label")));
  const want = levels.map((level, i) => {
    const seat = i + 1;
    const n = view.handSizes[seat];
    const turn = view.phase === Phase.PLAYING && view.turn === seat ? ", on turn" : "";
    return `Seat ${seat + 1}${partnership && seat === 2 ? ", partner" : ""} (${LEVELS[level]} bot): ${n} tile${n === 1 ? "" : "s"}${turn}`;
  });
  assert.deepEqual(labels, want, "the opponents: the levels chosen, the hand sizes the server gives");
  // The server agrees about the levels.
  assert.deepEqual(view.seats.slice(1).map((s) => String(s.bot)), levels, "the server's seats have the levels chosen");
}

/**
 * The first server ages its connections every second (--max-connection-age-secs 1): a
 * call Node's fetch sends on a kept-alive connection the server has just closed fails
 * with "other side closed" (UND_ERR_SOCKET), with no answer; it is sent once more (a
 * move made again is answered with the state it made: the server has a store).
 */
const sendAgainIfClosed: Interceptor = (next) => async (request) => {
  try {
    return await next(request);
  } catch (err) {
    // The fetch's TypeError, its cause the socket's error (or that wrapped once more).
    type Caused = { code?: string; cause?: Caused };
    const causes = [(err as Caused).cause, (err as Caused).cause?.cause];
    if (request.stream || !causes.some((c) => c?.code === "UND_ERR_SOCKET")) throw err;
    return await next(request);
  }
};
const client = createClient(AllFivesService, createGrpcWebTransport({ baseUrl: SERVER_URL, interceptors: [sendAgainIfClosed] }));
/** The server's Score for the token (and seat key) the page holds, asked from Node. */
/** The page's saved token, credential and seat (what a reload continues from). */
async function savedSeat(page: Page) {
  const saved = await page.evaluate(() => {
    const key = Object.keys(localStorage).find((k) => k.startsWith("allfives-web:"))!;
    return JSON.parse(localStorage.getItem(key)!) as { state: string; credential: string; seat?: number };
  });
  const bytes = (b64: string) => Uint8Array.from(Buffer.from(b64, "base64"));
  return { state: bytes(saved.state), viewer: saved.seat ?? 0, credential: bytes(saved.credential) };
}

async function serverScore(page: Page): Promise<ScoreResponse> {
  return client.score({ ...(await savedSeat(page)), includeHandEvents: true }, { timeoutMs: 10_000 });
}

/**
 * Plays from Node, with each page's saved token and credential, for the seats of the
 * pages in `pages` whenever one is on turn (looking every 200 ms), until `stop()`: a
 * player quick enough that no clock of theirs runs out, however long the test's own
 * steps take. It never deals. A refusal (a state moved on meanwhile, a seat a bot
 * holds) is tried again at the next look. `pause()` resolves once no move is in flight
 * and none will be made until `resume()` (so the test's own clicks meet no race).
 */
function autoplay(...pages: Page[]) {
  const playing = new Set(pages);
  let stopped = false;
  let paused = false;
  let round: Promise<void> = Promise.resolve();
  const once = async () => {
    for (const page of [...playing]) {
      if (paused || stopped) return;
      try {
        const seat = await savedSeat(page);
        const view = (await client.score(seat, { timeoutMs: 10_000 })).view!;
        if (view.phase !== Phase.PLAYING || view.turn !== seat.viewer) continue;
        const [move] = view.legalMoves;
        const by = { state: seat.state, seat: seat.viewer, viewer: seat.viewer, credential: seat.credential };
        if (move) await client.play({ ...by, tile: move.tile, end: move.end }, { timeoutMs: 10_000 });
        else await client.draw(by, { timeoutMs: 10_000 });
      } catch {
        // Refused or stale: looked at again next time.
      }
    }
  };
  const loop = (async () => {
    while (!stopped) {
      if (!paused) {
        round = once();
        await round;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    add: (page: Page) => void playing.add(page),
    remove: (page: Page) => void playing.delete(page),
    pause: async () => {
      paused = true;
      await round;
    },
    resume: () => void (paused = false),
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

webTest("a whole match against the server's bots, played by clicking: the final scores are the server's Score", 600_000, async () => {
  const page = await open(at(PAGE_URL, SERVER_URL));
  // Three players: an EASY and a HARD bot; five tiles each, target 60, the winner takes the pips.
  await newMatch(page, { players: 3, bots: ["1", "3"], handSize: "2", target: 60, settlement: "2" });
  assert.equal((await body(page)).phase, "PLAYING", await errorText(page));
  await checkOpponents(page, ["1", "3"], (await serverScore(page)).view!, false);
  assert.ok((await checkTileNames(page)) >= 5, "the hand's tiles are named");
  // A hint first: the HARD bot's advice, its tile chosen and its end marked; play it.
  await page.selectOption("#hint-level", "3");
  await page.click("#suggest");
  await idle(page);
  const hint = await page.locator("#hint").innerText();
  assert.match(hint, /^The hard bot (says: draw\.|suggests .+ \(\d+ points?\)\.)$/);
  let suggested = 0;
  if (!hint.includes("draw")) {
    const target = page.locator("g.target.advised");
    assert.equal(await target.count(), 1, "the advised end is marked");
    assert.ok(hint.includes((await page.locator("g.in-hand.chosen").getAttribute("aria-label"))!.split(",")[0]), "the advised tile is chosen");
    const moves = Number((await body(page)).moves);
    await target.click();
    await idle(page);
    assert.ok(Number((await body(page)).moves) > moves, "the advised move was played");
    suggested = 1;
  }
  const counts = { dealt: 0, drew: 0, played: suggested };
  let hands = 1;
  for (let actions = 0; ; actions++) {
    assert.ok(actions < 1000, "the match did not end in 1000 actions");
    const did = await act(page);
    assert.equal(await errorText(page), "", `a ${did} was refused`);
    if (did === "over") break;
    counts[did]++;
    if (did === "dealt") hands++;
  }
  // The end: every hand shown, the settlement, the sheet and the winner on the page.
  await page.locator("[data-testid=winner]").waitFor(WAIT);
  const winner = await page.locator("[data-testid=winner]").innerText();
  const pageScores = await page.locator("[data-testid^=score-side]").allTextContents();
  // The score sheets (below the table, and in the side panel): every row, the hand(s)
  // it covers, and each side's running total and the hand's play + settlement.
  const sheet = (where: string) =>
    page.locator(`${where} table.sheet tbody tr`).evaluateAll((rows) =>
      rows.map((r) => ({
        hands: r.querySelector("th")!.textContent,
        cells: [...r.querySelectorAll("td")].map((td) => `${td.querySelector(".total")!.textContent} | ${td.querySelector("small")!.textContent}`),
      })),
    );
  const pageSheets = { below: await sheet("#hand-end"), panel: await sheet("#sheet") };
  // Every hand revealed at the last hand's end: on the sheet below the table, and the
  // opponents' tiles face up on the table.
  const pageHands = await page.locator("#hand-end [data-testid^=revealed-]").evaluateAll((lis) =>
    lis.map((li) => ({
      seat: li.getAttribute("data-testid"),
      tiles: [...li.querySelectorAll("svg.mini")].map((t) => t.getAttribute("aria-label")),
      text: li.textContent!.replace(/^.*—\s*/, ""),
    })),
  );
  const tableHands = await page.locator("g.opponent").evaluateAll((gs) =>
    gs.map((g) => [...g.querySelectorAll("g.revealed")].map((t) => t.getAttribute("data-tile"))),
  );
  await checkTileNames(page);
  await page.screenshot({ path: join(OUTPUT, "1-whole-match.png"), fullPage: true });

  // The server's Score for the token the page holds, asked from Node over gRPC-Web.
  const score = await serverScore(page);
  const view = score.view!;
  const rows = [...(score.sheet!.carried ? [score.sheet!.carried] : []), ...score.sheet!.rows];
  const wantSheet = rows.map((r) => ({
    hands: r.firstHand === r.lastHand ? `${r.firstHand}` : `${r.firstHand}–${r.lastHand}`,
    // The settlement's sign said once: "40 + 10", "40 − 10" (never "40 + -10").
    cells: r.sides.map((l) => `${l.total} | ${l.play} ${l.settlement < 0 ? "−" : "+"} ${Math.abs(l.settlement)}`),
  }));
  assert.deepEqual(pageSheets.below, wantSheet, "the sheet below the table is the server's, row by row");
  assert.deepEqual(pageSheets.panel, wantSheet, "the side panel's sheet is the server's, row by row");
  const ended = score.handEvents.flatMap((e) => (e.kind.case === "handEnded" ? [e.kind.value] : []));
  assert.equal(ended.length, 1, "the last hand's events end it");
  const result = ended[0];
  assert.equal(result.hand, hands, "the last hand is the one the page dealt last");
  assert.deepEqual(
    pageHands,
    result.hands.map((h) => ({
      seat: `revealed-${h.seat}`,
      tiles: h.tiles.map((t) => nameOf(`${t.a}-${t.b}`)),
      text: `${h.pips} pip${h.pips === 1 ? "" : "s"}, counting ${h.rounded}`,
    })),
    "every hand revealed at the end is the server's",
  );
  assert.deepEqual(
    tableHands,
    result.hands.filter((h) => h.seat !== 0).map((h) => h.tiles.map((t) => `${Math.min(t.a, t.b)}-${Math.max(t.a, t.b)}`)),
    "the opponents' tiles face up on the table are the server's",
  );
  assert.equal(view.phase, 3, "the server says the match is over");
  assert.ok(view.scores.some((s) => s.score >= 60), "a side reached the target");
  const names = ["You", "Seat 2", "Seat 3"];
  assert.deepEqual(
    pageScores,
    view.scores.map((s) => `${names[s.side]} ${s.score}`),
    "the scores on the table are the server's",
  );
  assert.equal(score.sheet!.rows.length, hands, "the sheet has a row per hand dealt");
  const won = new Intl.ListFormat("en").format(view.winnerSeats.map((s) => names[s]));
  assert.ok(winner.includes(view.winnerSeats.includes(0) ? "you won" : `${won} won`), `winner line: ${winner}`);
  console.log(`  ${hands} hands, ${counts.played} tiles played and ${counts.drew} drawn by clicking; ${pageScores.join(", ")}; ${winner}`);

  // The match's end is a moment on the table; a rematch starts the same match again.
  const moment = await page.locator("[data-testid=moment]").getAttribute("aria-label");
  assert.equal(moment, view.winnerSeats.includes(0) ? "You win the match!" : `${won} wins the match`);
  assert.ok(await page.locator("#rematch").isVisible(), "a rematch is offered");
  await page.click("#rematch");
  await idle(page);
  assert.equal((await body(page)).phase, "PLAYING", await errorText(page));
  const again = (await serverScore(page)).view!;
  assert.notEqual(again.matchId, view.matchId, "a new match");
  assert.deepEqual(again.rules, view.rules, "with the same rules");
  assert.deepEqual(again.seats.map((s) => [s.kind, s.bot]), view.seats.map((s) => [s.kind, s.bot]), "and the same bots");
  assert.ok(again.scores.every((s) => s.score === 0 || again.handNumber === 1), "from nothing");
});

webTest("each move is placed in turn, and the points it scores are called on the table", 240_000, async () => {
  // Motion as the system allows by default: an answer's tiles are played back one by one.
  const page = await open(at(PAGE_URL, SERVER_URL), { viewport: { width: 1280, height: 860 }, reducedMotion: "no-preference" });
  await page.check("#sound"); // the sound's path too (off by default)
  await newMatch(page, { players: 4, bots: ["1", "1", "1"] });
  // Every value the table's played-back count took, as it happened.
  await page.evaluate(() => {
    const w = window as unknown as { shownSteps: string[]; callouts: string[] };
    w.shownSteps = [];
    w.callouts = [];
    new MutationObserver(() => {
      const shown = document.body.dataset.shown;
      if (shown && w.shownSteps[w.shownSteps.length - 1] !== shown) w.shownSteps.push(shown);
      const callout = document.querySelector("[data-testid=callout]")?.textContent;
      if (callout && w.callouts[w.callouts.length - 1] !== callout) w.callouts.push(callout);
    }).observe(document.body, { subtree: true, childList: true, attributes: true });
  });
  let steps: string[] = [];
  let callouts: string[] = [];
  for (let i = 0; i < 40 && (steps.length < 3 || callouts.length === 0); i++) {
    const did = await act(page);
    if (did === "over") break;
    ({ steps, callouts } = await page.evaluate(() => {
      const w = window as unknown as { shownSteps: string[]; callouts: string[] };
      return { steps: w.shownSteps, callouts: w.callouts };
    }));
  }
  // Three bots answer each move: the table showed their tiles one after another (the
  // count of tiles shown rising by one at a step), not all at once.
  const counts = steps.map(Number);
  assert.ok(counts.length >= 3, `steps seen: ${steps}`);
  assert.ok(counts.some((n, i) => i > 0 && n === counts[i - 1] + 1), `one tile more at a step: ${steps}`);
  assert.ok(callouts.length > 0, "a scoring move was called");
  assert.match(callouts[0], /^\+\d+(You|Seat [234]): (five|ten|fifteen|twenty|twenty-five|thirty|thirty-five|forty|forty-five|fifty|\d+)$/);
  await page.screenshot({ path: join(OUTPUT, "9-callout.png") });
});

/**
 * A second tab of `page`'s browser (it resumes the same match from localStorage) whose
 * Watch streams are held unanswered until `release()`, so it hears of no move: a tab
 * left behind. After `release()` its next streams go through (the held one never does).
 */
async function staleTab(page: Page): Promise<{ page: Page; release: () => void }> {
  const tab = await page.context().newPage();
  pages.push(tab);
  let released = false;
  await tab.route(/AllFivesService\/Watch$/, async (route) => {
    if (!released) return; // held: never answered
    await route.continue().catch(() => {});
  });
  await tab.goto(page.url().replace(/#.*$/, ""));
  await idle(tab);
  assert.equal((await body(tab)).stateId, (await body(page)).stateId, "a new tab resumes the latest state");
  return { page: tab, release: () => (released = true) };
}

webTest("two friends on two phones play a whole match by tapping, each move pushed to the other's page", 600_000, async () => {
  // Phones: 390×844, touch; every move a tap.
  const phone = SIZES[0].options;
  // The host leaves seat 2 open for a friend: no deal yet, an invite link instead.
  const host = await open(at(PAGE_URL, SERVER_URL), phone);
  await newMatch(host, { name: "Ana", players: 2, bots: ["friend"], handSize: "2", target: 50, settlement: "2" });
  assert.equal(await errorText(host), "");
  assert.equal((await body(host)).phase, "DEALING", "the first hand waits for the friend");
  assert.ok(await host.locator("#deal").isHidden(), "no deal while a seat is open");
  const link = await host.locator("#invite-link").inputValue();
  assert.match(link, /^http:\/\/127\.0\.0\.1:\d+\/\?server=[^#]+#join=[A-Za-z0-9_-]+$/);
  await host.screenshot({ path: join(OUTPUT, "6-invite.png") });

  // The friend opens the link on another device (another browser context), says its
  // name (markup in it stays text) and claims the open seat; the host's page, told by
  // its Watch stream, deals the first hand.
  const guest = await open(link, phone);
  assert.ok(await guest.locator("#join").isVisible(), "the invite asks for a name first");
  await guest.fill("#join input[name=name]", "<b>Bob</b>");
  await guest.click("#join button[type=submit]");
  await guest.waitForFunction(() => document.body.dataset.phase === "PLAYING", null, WAIT);
  assert.equal(await errorText(guest), "");
  assert.ok(!(await guest.evaluate(() => window.location.hash)), "the invite is taken off the address");
  await host.waitForFunction(() => document.body.dataset.phase === "PLAYING", null, WAIT);
  assert.ok(called.get(guest)!.includes("ClaimSeat"));
  // Each sees the other's name, as text.
  assert.match((await host.locator("g.opponent").getAttribute("aria-label"))!, /^<b>Bob<\/b>: /);
  assert.match((await guest.locator("g.opponent").getAttribute("aria-label"))!, /^Ana: /);
  assert.equal(await host.locator("b").count(), 0, "a name is never markup");
  const moving = ["NewGame", "ClaimSeat", "Deal", "Play", "Draw"];
  // A third device watches, by the host's link to watch: no hand, both players along
  // the top, every move pushed.
  const spectator = await open(await host.locator("#watch-link").inputValue(), phone);
  await spectator.waitForFunction(() => document.body.dataset.phase === "PLAYING", null, WAIT);
  assert.equal((await body(spectator)).stateId, (await body(host)).stateId);
  assert.equal(await spectator.locator("g.in-hand").count(), 0, "a spectator sees no hand");
  assert.deepEqual(
    (await spectator.locator("g.opponent").evaluateAll((gs) => gs.map((g) => g.getAttribute("aria-label")!.split(":")[0]))),
    ["Ana", "<b>Bob</b>"],
  );
  assert.ok(!called.get(spectator)!.some((m) => moving.includes(m)), "a spectator moves nothing");
  assert.ok(!called.get(guest)!.includes("Deal") && called.get(host)!.includes("Deal"), "the host dealt");

  // Every move: the player on turn clicks; the other page makes no call that moves
  // the match, yet shows the new state: the Watch stream brought it.
  const acted = { host: 0, guest: 0 };
  let tab: Page | undefined;
  for (let actions = 0; ; actions++) {
    assert.ok(actions < 1000, "the match did not end in 1000 actions");
    if (actions === 8 && (await body(guest)).phase === "PLAYING") {
      // The friend reloads mid-hand: the same seat, the same state, watched again.
      await guest.reload();
      await idle(guest);
      await guest.waitForFunction((want) => document.body.dataset.stateId === want, (await body(host)).stateId, WAIT);
      assert.match((await guest.locator("g.opponent").getAttribute("aria-label"))!, /^Ana: /, "the same seat after a reload");
    }
    const [h, g] = await Promise.all([body(host), body(guest)]);
    assert.equal(h.stateId, g.stateId, "both pages show the same state");
    if (h.phase === "OVER") break;
    const hostActs = h.yourTurn === "true" || h.phase === "DEALING";
    assert.ok(hostActs || g.yourTurn === "true", `somebody is on turn: ${JSON.stringify([h, g])}`);
    const [actor, other] = hostActs ? [host, guest] : [guest, host];
    // Once, mid-hand: a second tab of the host's that hears nothing (its Watch held)
    // is left behind by the host's move, and plays from its old token.
    // (Another move than the host's: the same move from the same token is a retry,
    // answered as the first was.)
    const stale = !tab && hostActs && (await host.locator("g.in-hand.playable").count()) >= 2 ? await staleTab(host) : undefined;
    const before = called.get(other)!.length;
    const did = await act(actor, true);
    assert.equal(await errorText(actor), "", `a ${did} was refused`);
    acted[hostActs ? "host" : "guest"]++;
    const id = (await body(actor)).stateId;
    await other.waitForFunction((want) => document.body.dataset.stateId === want, id, WAIT);
    const calls = called.get(other)!.slice(before);
    assert.deepEqual(calls.filter((m) => moving.includes(m)), [], "the other page learnt the move by push alone");
    if (stale) {
      tab = stale.page;
      assert.equal((await body(tab)).yourTurn, "true", "the stale tab still thinks the host is on turn");
      stale.release();
      await tab.locator("g.in-hand.playable").last().click();
      await idle(tab);
      if ((await tab.locator("g.target").count()) > 0) await tab.locator("g.target").last().click();
      await idle(tab);
      assert.equal(
        await errorText(tab),
        "The match moved on (another device or tab played first): the table now shows it as it is.",
      );
      await tab.waitForFunction((want) => document.body.dataset.stateId === want, id, WAIT);
      assert.deepEqual(await snapshot(tab), await snapshot(host), "the stale tab caught up");
      await tab.screenshot({ path: join(OUTPUT, "6-stale-tab.png") });
      await tab.close();
    }
  }
  assert.ok(tab, "the host had two tiles to play once");
  assert.ok(acted.host > 3 && acted.guest > 3, `both played: ${JSON.stringify(acted)}`);
  for (const page of [host, guest]) await page.locator("[data-testid=winner]").waitFor(WAIT);
  // The spectator saw the match to its end, every hand revealed only at its end.
  await spectator.waitForFunction((want) => document.body.dataset.stateId === want, (await body(host)).stateId, WAIT);
  assert.equal((await body(spectator)).phase, "OVER");
  assert.equal(await spectator.locator("[data-testid=moment]").getAttribute("aria-label"), await (async () => {
    const v = (await serverScore(host)).view!;
    return `${new Intl.ListFormat("en").format(v.winnerSeats.map((s) => ["Ana", "<b>Bob</b>"][s]))} wins the match`;
  })());
  assert.ok(!called.get(spectator)!.some((m) => moving.includes(m)), "a spectator moves nothing");
  await spectator.screenshot({ path: join(OUTPUT, "6-spectator.png"), fullPage: true });
  await host.screenshot({ path: join(OUTPUT, "6-friends-host.png"), fullPage: true });
  await guest.screenshot({ path: join(OUTPUT, "6-friends-guest.png"), fullPage: true });

  // The final scores on both pages are the server's.
  const score = await serverScore(host);
  assert.equal(score.view!.phase, Phase.OVER);
  const names = [["You", "<b>Bob</b>"], ["Ana", "You"]];
  for (const [i, page] of [host, guest].entries()) {
    assert.deepEqual(
      await page.locator("[data-testid^=score-side]").allTextContents(),
      score.view!.scores.map((s) => `${names[i][s.side]} ${s.score}`),
      "the scores on each page are the server's",
    );
  }
  // Watch streams were open on both pages (ended and opened again as they aged).
  const watches = [host, guest].map((p) => called.get(p)!.filter((m) => m === "Watch").length);
  assert.ok(watches.every((n) => n >= 2), `streams watched again as their connections aged (1 s): ${watches}`);
  console.log(`  ${acted.host} actions by the host, ${acted.guest} by the friend; ${score.view!.scores.map((s) => s.score).join(" to ")}; Watch calls ${watches.join(" and ")}`);
});

webTest("two people at one screen (a hot seat) play a whole match, passing the device", 300_000, async () => {
  const page = await open(at(PAGE_URL, SERVER_URL));
  await newMatch(page, { name: "Ana", players: 2, bots: ["here"], handSize: "2", target: 50, settlement: "2" });
  assert.equal(await errorText(page), "");
  let handovers = 0;
  const seatsThatPlayed = new Set<number>();
  for (let actions = 0; ; actions++) {
    assert.ok(actions < 1000, "the match did not end in 1000 actions");
    if (await page.locator("#handover").isVisible()) {
      // The device is passed: no hand is shown until its next player says so.
      assert.equal(await page.locator("g.in-hand").count(), 0, "no hand shown while the device is passed");
      await page.click("#handover-button");
      await idle(page);
      handovers++;
      continue;
    }
    const seat = Number(await page.evaluate(() => document.body.dataset.seat));
    const did = await act(page);
    assert.equal(await errorText(page), "", `a ${did} was refused`);
    if (did === "over") break;
    if (did === "played") seatsThatPlayed.add(seat);
  }
  assert.ok(handovers >= 4, `the device was passed: ${handovers}`);
  // Everyone at the screen sees the log: a drawn tile is never named there.
  const drew = (await page.locator("#log").innerText()).split("\n").filter((l) => / drew /.test(l));
  assert.ok(drew.every((l) => l.endsWith("drew a tile.")), `drawn tiles named in the log: ${drew.join(" | ")}`);
  assert.deepEqual([...seatsThatPlayed].sort(), [0, 1], "each seat played its own tiles");
  const score = await serverScore(page);
  assert.equal(score.view!.phase, Phase.OVER);
  await page.screenshot({ path: join(OUTPUT, "7-hot-seat.png"), fullPage: true });
});

webTest("two windows of one browser play each other, and a reload keeps each window's seat", 120_000, async () => {
  const host = await open(at(PAGE_URL, SERVER_URL));
  await newMatch(host, { players: 2, bots: ["friend"], handSize: "2" });
  const link = await host.locator("#invite-link").inputValue();
  // The second window shares the first's storage (it holds the same match): it joins
  // without asking, in a seat of its own.
  const second = await host.context().newPage();
  pages.push(second);
  await second.goto(link);
  // A name that reads like one of the page's own labels is shown with its seat.
  await second.fill("#join input[name=name]", "You");
  await second.click("#join button[type=submit]");
  for (const page of [host, second]) await page.waitForFunction(() => document.body.dataset.phase === "PLAYING", null, WAIT);
  const seats = async () => Promise.all([host, second].map((p) => p.locator("g.opponent").getAttribute("aria-label")));
  const before = await seats();
  assert.match(before[0]!, /^You \(Seat 2\): /, "the first window plays seat 1; the other's name 'You' carries its seat");
  assert.match(before[1]!, /^Seat 1: /, "the second window plays seat 2");
  for (const page of [host, second]) {
    await page.reload();
    await idle(page);
  }
  assert.deepEqual(await seats(), before, "each window kept its seat through a reload");
  assert.equal(await errorText(second), "");
});

// Turn clocks (issue 41): a match on a 3 s clock with no bank (the server's default lag
// grace, 2 s, on top), between two pages. The player on turn stops playing; the other
// page counts that seat's time down, claims the timeout by itself (ClaimTimeout), and
// both logs say the player ran out of time and show the bot's move for it. Then the
// late player leaves: the other page says a bot is playing for them; "Take my seat
// back" gives the seat back. The other player is played from Node (autoplay) whenever
// on turn, and the late one too once its timeout is seen (until it leaves, and again
// once back), so no other clock runs out however long the test's steps take (axe-core,
// a language's round trip, screenshots). What the pages show is asserted, never how
// long it took.
webTest("turn clocks: a page claims a stalled turn by itself, a bot moves for the late player; Leave, and Take my seat back", 240_000, async () => {
  const host = await open(at(PAGE_URL, SERVER_URL, "&debug=1&clock=3,0"));
  await host.check("#new-match input[name=clock]");
  await newMatch(host, { name: "Ana", players: 2, bots: ["friend"], handSize: "2", target: 100 });
  assert.equal(await errorText(host), "");
  const guest = await open(await host.locator("#invite-link").inputValue());
  await guest.fill("#join input[name=name]", "Bob");
  await guest.click("#join button[type=submit]");
  for (const page of [host, guest]) await page.waitForFunction(() => document.body.dataset.phase === "PLAYING", null, WAIT);
  const view = (await serverScore(host)).view!;
  assert.ok(view.rules?.clock, "the match has a turn clock");
  assert.equal(view.rules!.clock!.moveSeconds, 3);
  assert.equal(view.rules!.clock!.bankSeconds, 0);

  // The player on turn stops playing; the other waits.
  const hostLate = (await body(host)).yourTurn === "true";
  const [late, waiter] = hostLate ? [host, guest] : [guest, host];
  const lateName = hostLate ? "Ana" : "Bob";
  const waiterName = hostLate ? "Bob" : "Ana";
  assert.equal((await body(waiter)).yourTurn, "false");
  const player = autoplay(waiter);
  try {
    // Both pages show both clocks as text: the late seat's counting down, the other's bank.
    const clocks = (page: Page) => page.locator("#clocks li").allInnerTexts();
    await waiter.locator("#clocks li.on-turn", { hasText: new RegExp(`^${lateName}, on turn: 0:0[0-3] left$`) }).waitFor(WAIT);
    assert.ok((await clocks(waiter)).includes("You: 0:00 in the bank"), `the waiter's own clock: ${await clocks(waiter)}`);
    assert.ok((await clocks(late)).some((c) => /^You, on turn: 0:0\d left$/.test(c)), `the late page's clock: ${await clocks(late)}`);
    await waiter.screenshot({ path: join(OUTPUT, "14-clock-counting-down.png"), fullPage: true });

    // The waiting page claims by itself once the time (and the grace) is out; both logs
    // say so, followed by the bot's move for the late seat.
    const logLines = (page: Page) => page.locator("#log li").allInnerTexts();
    await waiter.locator("#log li", { hasText: `${lateName} ran out of time.` }).waitFor({ timeout: 60_000 });
    await late.locator("#log li", { hasText: "You ran out of time." }).waitFor(WAIT);
    player.add(late);
    // The waiting page claims first; the late page claims its own seat 3 s after, so
    // on a busy machine either may be the one taken (the presence test shows a waiting
    // page claiming alone, its opponent cut off): one timeout is applied all the same.
    assert.ok(
      [waiter, late].some((page) => called.get(page)!.includes("ClaimTimeout")),
      "a page claimed the timeout",
    );
    assert.equal((await logLines(late)).filter((l) => l === "You ran out of time.").length, 1);
    await idle(waiter);
    const lines = await logLines(waiter);
    const after = lines.slice(lines.indexOf(`${lateName} ran out of time.`) + 1);
    assert.match(after[0] ?? "", new RegExp(`^${lateName} (played|drew|passed)`), `the bot moved for ${lateName}: ${after.join(" | ")}`);
    assert.equal(await errorText(waiter), "");
    await waiter.screenshot({ path: join(OUTPUT, "14-clock-claimed.png"), fullPage: true });

    // The late player leaves (the page asks first: yes): a bot holds the seat.
    // (A click while the page is busy, say playing back the other page's claim of a
    // timeout, does nothing: then again.)
    const clickUntil = async (page: Page, button: Locator, shown: Locator) => {
      for (let i = 0; i < 10 && !(await shown.count()); i++) {
        await idle(page);
        await button.click();
        await idle(page);
      }
      await shown.waitFor(WAIT);
    };
    await player.pause(); // no move of the player's from Node racing the page's own click
    await clickUntil(late, late.locator("#leave"), late.locator("#held-seats li", { hasText: "A bot is playing for you." }));
    player.remove(late);
    player.resume();
    assert.ok(await late.locator("#return-seat").isVisible(), "Take my seat back is offered");
    assert.ok(await late.locator("#leave").isHidden(), "no Leave while a bot holds the seat");
    await waiter.locator("#held-seats li", { hasText: `A bot is playing for ${lateName}.` }).waitFor(WAIT);
    await waiter.locator("#log li", { hasText: `${lateName} left the table.` }).waitFor(WAIT);
    assert.equal(await errorText(late), "");
    await waiter.screenshot({ path: join(OUTPUT, "14-clock-bot-plays.png"), fullPage: true });
    await late.screenshot({ path: join(OUTPUT, "14-clock-left.png"), fullPage: true });
    // The clocks, the bot's line and Take my seat back pass axe-core (contrast, names).
    for (const page of [waiter, late]) assert.deepEqual(await axeViolations(page), [], "axe-core on the clocks and absences");
    // In Serbian: the clocks and the bot's line in Cyrillic, none of it in English.
    await waiter.selectOption("#lang", "sr");
    await waiter.locator("#held-seats li", { hasText: `Бот игра за ${lateName}.` }).waitFor(WAIT);
    const serbian = [...(await clocks(waiter)), ...(await logLines(waiter)).slice(-2)];
    assert.ok(serbian.every((t) => !/\b(bank|left|on turn|ran out|bot plays|table)\b/.test(t)), `English in Serbian: ${serbian.join(" | ")}`);
    assert.ok(
      (await clocks(waiter)).some((c) => /^Ти(, на потезу: још \d:\d\d|: 0:00 у резерви)$/.test(c)),
      `the waiter's clock in Serbian: ${await clocks(waiter)}`,
    );
    await waiter.screenshot({ path: join(OUTPUT, "14-clock-bot-plays-sr.png"), fullPage: true });
    await waiter.selectOption("#lang", "en");

    // Back at the table: the seat is the player's again on both pages.
    await player.pause();
    await clickUntil(late, late.getByRole("button", { name: "Take my seat back" }), late.locator("#log li", { hasText: "You are back at the table." }));
    player.add(late);
    player.resume();
    await waiter.locator("#log li", { hasText: `${lateName} is back at the table.` }).waitFor(WAIT);
    await idle(late);
    assert.ok(await late.locator("#return-seat").isHidden(), "the seat is back: no Take my seat back");
    assert.ok(await late.locator("#absence").isHidden() && (await waiter.locator("#absence").isHidden()), "no bot plays for anyone");
    assert.equal(await errorText(late), "");
    await late.screenshot({ path: join(OUTPUT, "14-clock-back.png"), fullPage: true });
    console.log(`  ${lateName} timed out and came back; ${waiterName}'s page claimed`);
  } finally {
    await player.stop();
  }
});

// --- Presence (issue 41): a player whose connection is cut. ---------------------------
/**
 * A TCP proxy to the server at `url`, run by the test, for a page whose connection is
 * to be cut or moved: `cut()` destroys every connection open through it, and every new
 * one until `restore()` (a browser context's setOffline leaves a stream already open
 * alone); `retarget(url)` sends each new connection to another server, as a
 * deployment's gateway does (one already open stays where it is, and is closed when its
 * server's end closes).
 */
async function tcpProxy(url: string) {
  let target = new URL(url);
  const sockets = new Set<Socket>();
  let cut = false;
  const server = createServer((inbound) => {
    if (cut) return void inbound.destroy();
    const outbound = connect(Number(target.port), target.hostname);
    for (const [socket, other] of [[inbound, outbound], [outbound, inbound]] as const) {
      sockets.add(socket);
      socket.pipe(other);
      socket.on("error", () => other.destroy());
      socket.on("close", () => {
        sockets.delete(socket);
        other.destroy();
      });
    }
  });
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  const cutAll = () => {
    cut = true;
    for (const socket of sockets) socket.destroy();
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut: cutAll,
    restore: () => void (cut = false),
    retarget: (url: string) => void (target = new URL(url)),
    close: () =>
      new Promise<void>((closed) => {
        cutAll();
        server.close(() => closed());
      }),
  };
}

// Presence (issue 41): two phones on a 4 s clock with no bank (the clocks' test's 3 s
// would run out about when the page first says a seat is gone, 3 s);
// Bob's page calls the server, Ana's goes through a proxy the test runs. Mid-hand the
// proxy is cut: Ana's page says it is reconnecting, Bob's that Ana is gone and for how
// long, counting up; Ana's time runs out, Bob's page claims it and a bot plays for her,
// and at her second timeout in a row the bot holds her seat. The proxy is restored:
// Ana's page watches again by itself (having tried with backoff meanwhile), is told a
// bot plays for her, takes her seat back and plays on; Bob's page no longer says she is
// gone. What the pages show is waited for (bounded), never how long it took.
webTest("presence: a phone cut off mid-hand is shown gone on the other, whose page claims its turns for a bot; back, it takes its seat back and plays on", 180_000, async () => {
  const proxy = await tcpProxy(SERVER_URL);
  try {
    const phone = SIZES[0].options;
    const bob = await open(at(PAGE_URL, SERVER_URL, "&debug=1&clock=4,0"), phone);
    await bob.check("#new-match input[name=clock]");
    await newMatch(bob, { name: "Bob", players: 2, bots: ["friend"], handSize: "1", target: 100 });
    assert.equal(await errorText(bob), "");
    // Ana opens Bob's invite on her phone, her page's server the proxy.
    const invite = new URL(await bob.locator("#invite-link").inputValue());
    invite.searchParams.set("server", proxy.url);
    const ana = await open(invite.toString(), phone);
    const watches: number[] = []; // when Ana's page opened each Watch stream
    ana.on("request", (r) => void (r.url().endsWith("AllFivesService/Watch") && watches.push(performance.now())));
    await ana.fill("#join input[name=name]", "Ana");
    await ana.click("#join button[type=submit]");
    // Both pages at the same state (either may be the one behind: a move is pushed to
    // the other page, and read at once it may not have arrived yet).
    const same = async () => {
      for (let i = 0; (await body(ana)).stateId !== (await body(bob)).stateId; i++) {
        assert.ok(i < 200, "the two pages did not come to the same state");
        await ana.waitForTimeout(100);
      }
    };
    await bob.waitForFunction(() => document.body.dataset.phase === "PLAYING", null, WAIT);
    await same();
    assert.ok(await bob.locator("#gone").isHidden(), "nobody is gone");
    // On the log (folded on a phone), a line is there once it is in the list.
    const logged = (page: Page, text: string | RegExp, timeout = WAIT.timeout) =>
      page.locator("#log li", { hasText: text }).first().waitFor({ state: "attached", timeout });

    // The player on turn leads; then Ana's connection is cut.
    const starter = (await body(ana)).yourTurn === "true" ? ana : bob;
    assert.equal(await act(starter, true), "played");
    await same();
    proxy.cut();
    const cutAt = performance.now();
    const watchesBefore = watches.length;
    await ana.locator("#offline").waitFor(WAIT);
    assert.equal(await ana.locator("#offline").innerText(), "The connection to the server was lost. Trying again…");
    // Bob plays until Ana is on turn; her page hears none of it.
    for (let i = 0; (await body(bob)).yourTurn === "true"; i++) {
      assert.ok(i < 20, "Bob's turn did not end");
      await act(bob, true);
      assert.equal(await errorText(bob), "");
    }
    // Bob's page says Ana is gone and for how long, counting up.
    const gone = bob.locator("#gone li", { hasText: /^Ana has been gone for \d+ seconds?\.$/ });
    await gone.waitFor(WAIT);
    // The phone's screen as Bob sees it, the clocks and who is gone in view.
    await bob.evaluate(() => document.getElementById("gone")!.scrollIntoView({ block: "center" }));
    await bob.screenshot({ path: join(OUTPUT, "15-presence-gone.png"), scale: "css" });
    const secondsGone = Number(/(\d+) second/.exec(await gone.innerText())![1]);
    await bob.waitForFunction(
      (n) => Number(/(\d+) second/.exec(document.querySelector("#gone li")?.textContent ?? "")?.[1] ?? 0) > n,
      secondsGone,
      WAIT,
    );
    assert.deepEqual(await layoutFaults(bob, true), [], "a player gone, on a phone: nothing overflows");
    assert.deepEqual(await axeViolations(bob), [], "axe-core with a player gone");

    // Ana's time runs out: Bob's page claims it, a bot plays for her. Bob plays on; at
    // her second timeout in a row the bot holds her seat.
    await logged(bob, "Ana ran out of time.", 60_000);
    assert.ok(called.get(bob)!.includes("ClaimTimeout"), "Bob's page claimed Ana's timeout");
    const held = bob.locator("#held-seats li", { hasText: "A bot is playing for Ana." });
    for (let i = 0; !(await held.count()); i++) {
      assert.ok(i < 300, "no bot took Ana's seat");
      if ((await body(bob)).yourTurn === "true") {
        await act(bob, true);
        assert.equal(await errorText(bob), "");
      } else await bob.waitForTimeout(200);
    }
    await logged(bob, "From now on the medium bot plays for Ana.");
    // (Past a minute the count is in minutes: any unit.)
    assert.equal(await bob.locator("#gone li", { hasText: /^Ana has been gone for \d+ \w+\.$/ }).count(), 1, "Ana is still gone");
    await bob.locator("#log-box summary").tap();
    await bob.screenshot({ path: join(OUTPUT, "15-presence-bot-plays.png"), fullPage: true, scale: "css" });

    // Back online: Ana's page watches again by itself, without having hammered the
    // server meanwhile (its waits between tries grow, to 5 to 10 s).
    proxy.restore();
    const tries = watches.length - watchesBefore;
    const cutSeconds = (performance.now() - cutAt) / 1000;
    assert.ok(tries <= 7 + cutSeconds / 5, `${tries} Watch calls in ${cutSeconds.toFixed(0)} s without a connection`);
    await ana.locator("#offline").waitFor({ state: "hidden", timeout: 30_000 });
    await ana.locator("#held-seats li", { hasText: "A bot is playing for you." }).waitFor(WAIT);
    await bob.locator("#gone").waitFor({ state: "hidden", ...WAIT });
    // Take my seat back (again if the tap came while the page was busy), and play on.
    const back = "You are back at the table.";
    for (let i = 0; i < 10 && !(await ana.locator("#log li", { hasText: back }).count()); i++) {
      await idle(ana);
      await ana.locator("#return-seat").tap();
      await idle(ana);
    }
    await logged(ana, back);
    await logged(bob, "Ana is back at the table.");
    // Whoever is on turn plays (Bob too, lest his clock run out), until a Play of Ana's
    // own is taken; one refused as late, or made stale by a claim, is played again.
    for (let i = 0; ; i++) {
      assert.ok(i < 300, "Ana did not get to play");
      const plays = called.get(ana)!.filter((m) => m === "Play").length;
      if ((await body(ana)).yourTurn === "true") {
        await act(ana, true);
        if (called.get(ana)!.filter((m) => m === "Play").length > plays && (await errorText(ana)) === "") break;
      } else if ((await body(bob)).yourTurn === "true") await act(bob, true);
      else await ana.waitForTimeout(200);
    }
    const played = (await body(ana)).stateId;
    await bob.waitForFunction((want) => document.body.dataset.stateId === want, played, WAIT);
    assert.ok(await ana.locator("#return-seat").isHidden(), "the seat is Ana's again");
    assert.ok(await ana.locator("#offline").isHidden() && (await bob.locator("#gone").isHidden()), "nobody is gone");
    await ana.locator("#log-box summary").tap();
    await ana.screenshot({ path: join(OUTPUT, "15-presence-back.png"), fullPage: true, scale: "css" });
    console.log(`  Ana's page tried ${tries} Watch calls in ${cutSeconds.toFixed(0)} s cut off, then watched again`);
  } finally {
    await proxy.close();
  }
});

/** Resolves as `promise` does, or fails with `what` after `ms` (a bounded wait). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, fail) => (timer = setTimeout(() => fail(new Error(what)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

// Turn clocks with nobody else at the match (issue 41): one player against a bot, on a
// 2 s clock with no bank. No other person's page would claim the player's timeout, and
// the server refuses a late move (TURN_TIMED_OUT) and applies nothing: unless this page
// claims its own seat's timeout, every click is refused and the match stops for good.
// The page's claims are failed by the test (as with no connection) until a move of the
// player's has been refused as late; then the page claims its own timeout, a bot moves
// for the player, and the match goes on; left idle, the page claims again and at the
// second timeout in a row the bot holds the seat; Take my seat back. Seen to fail with
// the page's claims of its own seat removed: it never claims ("the page never claimed
// its own timeout"). What the page shows is waited for (bounded), never how long.
webTest("turn clocks alone against a bot: a late move is refused, and the page claims its own timeout; the bot moves for the player and the match goes on", 180_000, async () => {
  const LATE = "Your time ran out before your move arrived.";
  const page = await open(at(PAGE_URL, SERVER_URL, "&debug=1&clock=2,0"));
  await page.check("#new-match input[name=clock]");
  const claims = "**/allfives.v1.AllFivesService/ClaimTimeout";
  let claimTried!: () => void;
  const tried = new Promise<void>((resolve) => (claimTried = resolve));
  await page.route(claims, (route) => {
    claimTried();
    void route.abort();
  });
  await newMatch(page, { players: 2, bots: ["1"], handSize: "1", target: 100 });
  assert.equal(await errorText(page), "");
  await page.waitForFunction(() => document.body.dataset.yourTurn === "true", null, WAIT);
  const moves = Number((await body(page)).moves);
  // Shown again (after sleep, a suspended tab), the page asks the view again (Score), to
  // count the clock down from a fresh answer: the same state, its arrival later.
  const scores = () => called.get(page)!.filter((m) => m === "Score").length;
  const scored = scores();
  const arrival = () => page.evaluate(() => (window as unknown as { allfivesDebug: { receivedAt: () => number } }).allfivesDebug.receivedAt());
  const { stateId } = await body(page);
  const arrived = await arrival();
  await page.evaluate(() => document.dispatchEvent(new Event("visibilitychange")));
  for (let i = 0; scores() === scored; i++) {
    assert.ok(i < 100, "no Score when the page was shown again");
    await page.waitForTimeout(100);
  }
  await page.waitForFunction(
    (was) => (window as unknown as { allfivesDebug: { receivedAt: () => number } }).allfivesDebug.receivedAt() > was,
    arrived,
    WAIT,
  );
  assert.equal((await body(page)).stateId, stateId, "the same state, counted down from the fresh answer");

  // The player does nothing: once the time (and the grace) is out, the page claims its
  // own timeout (failed here, on the way).
  await within(tried, 30_000, "the page never claimed its own timeout");
  // A move now is too late: refused, nothing applied.
  await act(page);
  await page.locator("#error", { hasText: LATE }).waitFor(WAIT);
  assert.equal(Number((await body(page)).moves), moves, "the late move changed nothing");
  await page.screenshot({ path: join(OUTPUT, "16-clock-alone-late.png"), fullPage: true });

  // The page's claims go through: its own timeout is taken, the bot moves for it.
  await page.unroute(claims);
  await page.locator("#log li", { hasText: "You ran out of time." }).waitFor(WAIT);
  await idle(page);
  const lines = await page.locator("#log li").allInnerTexts();
  const after = lines.slice(lines.indexOf("You ran out of time.") + 1);
  assert.match(after[0] ?? "", /^You (played|drew|passed)/, `the bot moved for the player: ${after.join(" | ")}`);
  assert.ok(Number((await body(page)).moves) > moves, "the match went on");

  // Left idle, the page claims again; at the second timeout in a row the bot holds the
  // seat (a hand that ends meanwhile is dealt, as the player would).
  const held = page.locator("#held-seats li", { hasText: "A bot is playing for you." });
  for (let i = 0; !(await held.count()); i++) {
    assert.ok(i < 300, "no bot took the seat");
    if ((await body(page)).phase === "DEALING") await act(page);
    else await page.waitForTimeout(200);
  }
  await page.locator("#log li", { hasText: "From now on the medium bot plays for you." }).waitFor(WAIT);
  // The page's own claims said nothing (the late move's sentence stays until the next).
  assert.ok(["", LATE].includes(await errorText(page)), `the page said: ${await errorText(page)}`);
  await page.screenshot({ path: join(OUTPUT, "16-clock-alone-bot.png"), fullPage: true });

  // Back at the table.
  for (let i = 0; i < 10 && !(await page.locator("#log li", { hasText: "You are back at the table." }).count()); i++) {
    await idle(page);
    if (await page.locator("#return-seat").isVisible()) await page.locator("#return-seat").click();
    await idle(page);
  }
  await page.locator("#log li", { hasText: "You are back at the table." }).waitFor(WAIT);
  assert.equal(await errorText(page), "");
  console.log(`  ${called.get(page)!.filter((m) => m === "ClaimTimeout").length} claims of the page's own seat`);
});

// A match under the forfeit rule (ABSENCE_RULE_FORFEIT: the page's form does not offer
// it, but a match made elsewhere may have it), on a 16 s clock with no bank (the line
// is said only if Bob's turn reaches his page with more than 10 s left), made from
// Node for "Ana", the page joining by its invite link as Bob. Ana deals and plays (from
// Node) until Bob is on turn; as his time falls to 10 s the page's status line (polite,
// for a screen reader) says so, once. Bob leaves: the page asks in the forfeit rule's
// words (not that a bot will play), the match ends, and the end says how each player
// finished (the hand's tiles stay face down: Ana's backs, Bob's own hand kept, no hands
// listed), the log how the seat forfeited. A forfeit between hands leaves the last
// hand's result in the view: the end's title is then the forfeit's, not that hand's
// (the view drawn through ?debug=1's hook, as the server would send it).
webTest("a match under the forfeit rule: Leave says the side forfeits, and the end says how each player finished", 120_000, async () => {
  const made = await client.newGame(
    {
      rules: { players: 2, clock: { moveSeconds: 16, bankSeconds: 0 }, absence: { rule: AbsenceRule.FORFEIT } },
      viewer: 0,
      seats: [{ claim: true, displayName: "Ana" }, { claim: false }],
    },
    { timeoutMs: 10_000 },
  );
  const page = await open(`${at(PAGE_URL, SERVER_URL, "&debug=1")}#join=${Buffer.from(made.state).toString("base64url")}`);
  await page.fill("#join input[name=name]", "Bob");
  await page.click("#join button[type=submit]");
  await page.waitForFunction(() => document.body.dataset.phase === "DEALING" && document.body.dataset.seat === "1", null, WAIT);
  const token = await page.evaluate(() => {
    const key = Object.keys(localStorage).find((k) => k.startsWith("allfives-web:"))!;
    return (JSON.parse(localStorage.getItem(key)!) as { state: string }).state;
  });
  const ana = { viewer: 0, credential: made.credentials[0].credential };
  let answer: { state: Uint8Array; view?: GameView } = await client.deal({ state: Buffer.from(token, "base64"), ...ana }, { timeoutMs: 10_000 });
  for (let i = 0; answer.view!.turn === 0; i++) {
    assert.ok(i < 30, "Ana's turn did not end");
    const [move] = answer.view!.legalMoves;
    answer = move
      ? await client.play({ state: answer.state, seat: 0, tile: move.tile, end: move.end, ...ana }, { timeoutMs: 10_000 })
      : await client.draw({ state: answer.state, seat: 0, ...ana }, { timeoutMs: 10_000 });
  }
  await page.waitForFunction((id) => document.body.dataset.stateId === id, Buffer.from(answer.view!.stateId).toString("base64"), WAIT);
  assert.equal((await body(page)).yourTurn, "true");
  await page.locator("#status", { hasText: /Only 10 seconds left\.$/ }).waitFor(WAIT);
  await idle(page);
  const inHand = await page.locator("g.in-hand").count();
  const anaHolds = Number(await page.getAttribute("[data-testid=hand-size-0]", "data-count"));
  assert.ok(inHand > 0 && anaHolds > 0, "both players hold tiles");

  const asked: string[] = [];
  page.on("dialog", (dialog) => void asked.push(dialog.message()));
  await page.click("#leave");
  await page.locator("[data-testid=winner]").waitFor(WAIT);
  assert.deepEqual(asked, ["Leave? Your side forfeits the match."], "the page asked in the forfeit rule's words");
  assert.equal(await page.locator("#hand-end-title").innerText(), "Hand 1: You forfeited.");
  await page
    .locator("#hand-end-body p", { hasText: "The match was forfeited, so the hand was not settled. The tiles left in hand were not shown." })
    .waitFor(WAIT);
  // A forfeited hand's tiles stay face down (its result lists every seat with none):
  // Ana's backs as many as she holds, the player's own hand as it was, no hands listed.
  assert.equal(await page.locator("#hand-end-body .revealed-hands, [data-testid^=revealed-]").count(), 0, "no hands listed");
  assert.equal(await page.locator(".opponent .revealed").count(), 0, "no opponent's tile face up");
  assert.equal(await page.locator(".opponent[data-seat='0'] rect.back").count(), anaHolds, "Ana's tile backs");
  assert.equal(await page.locator("g.in-hand").count(), inHand, "the player's own hand kept");
  assert.equal(await page.locator("[data-testid=winner]").innerText(), "The match is over: Ana won.");
  assert.deepEqual(await page.locator(".seats-ended li").allInnerTexts(), ["Ana: played to the end", "You: left the table"]);
  await page.locator("#log li", { hasText: "You left and forfeited the match." }).waitFor({ state: "attached", ...WAIT });
  // Told once: the forfeit's line, not "You left the table." before it.
  assert.ok(!(await page.locator("#log li").allInnerTexts()).includes("You left the table."), "the forfeit told twice");
  assert.equal(await errorText(page), "");
  assert.deepEqual(await axeViolations(page), [], "axe-core on the end of a forfeited match");
  await page.screenshot({ path: join(OUTPUT, "17-forfeit.png"), fullPage: true });

  // Between hands: the last hand's result stays in the view; the title is the forfeit.
  await page.evaluate(() => {
    const debug = (window as unknown as { allfivesDebug: { view: () => Record<string, Record<string, unknown>>; show: (v: unknown) => void } }).allfivesDebug;
    const view = debug.view();
    const { forfeited: _, ...hand } = view.lastHand;
    view.lastHand = { ...hand, reason: "HAND_END_REASON_DOMINO", wentOut: 0 };
    debug.show(view);
  });
  assert.equal(await page.locator("#hand-end-title").innerText(), "You left and forfeited the match.");
  assert.deepEqual(await page.locator(".seats-ended li").allInnerTexts(), ["Ana: played to the end", "You: left the table"]);
});

// The sentences of the refusals a code can meet, written here again (not imported from
// the page) so that a changed or missing sentence fails.
const NO_SUCH_CODE =
  "No match is waiting under that code. Check it with your friend: it may have expired, or every seat may be taken.";
const NOT_A_CODE = "That is not an invite code: a code is 12 letters and digits, like K7QM-4XPR-2D9F.";

webTest("a friend types the invite code on another phone (lower case, no dashes), joins, and each move is pushed to the other", 300_000, async () => {
  const phone = SIZES[0].options;
  // The host leaves seat 2 open: the page shows the link and, beside it, the code.
  const host = await open(at(PAGE_URL, SERVER_URL), phone);
  await newMatch(host, { name: "Ana", players: 2, bots: ["friend"], handSize: "2", target: 50, settlement: "2" });
  assert.equal(await errorText(host), "");
  await host.locator("#invite-code").waitFor(WAIT);
  const code = await host.locator("#invite-code").innerText();
  assert.match(code, /^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/, "12 symbols of Crockford's base 32, in fours");
  assert.equal(await host.locator("#invite-code").getAttribute("aria-label"), `Invite code: ${code.split("-").map((g) => [...g].join(" ")).join(", ")}`);
  assert.ok(await host.locator("#copy-code").isVisible(), "a Copy button beside the code");
  assert.ok(await host.locator("#invite-link").isVisible(), "the link too");
  await host.screenshot({ path: join(OUTPUT, "11-code-host.png"), fullPage: true });
  assert.ok(called.get(host)!.includes("CreateInviteCode"));

  // Another phone, with no match: the start screen offers "Join with a code".
  const guest = await open(at(PAGE_URL, SERVER_URL), phone);
  const field = guest.locator("#code-join input[name=code]");
  assert.ok(await field.isVisible(), "the start screen has a field for a code");
  for (const [attr, want] of [["autocapitalize", "characters"], ["autocorrect", "off"], ["spellcheck", "false"], ["inputmode", "text"]]) {
    assert.equal(await field.getAttribute(attr), want, `the code field's ${attr}`);
  }
  for (const el of [field, guest.locator("#code-join button[type=submit]")]) {
    const box = (await el.boundingBox())!;
    assert.ok(box.height >= 44 && box.width >= 44, `a 44 px target: ${JSON.stringify(box)}`);
  }
  // Not a code at all, then a code nobody made (the real one with its first symbol
  // changed): each refusal as its sentence, and no seat claimed.
  await field.fill("abc");
  await guest.click("#code-join button[type=submit]");
  await idle(guest);
  assert.equal(await errorText(guest), NOT_A_CODE);
  const wrong = (code[0] === "7" ? "8" : "7") + code.slice(1);
  await field.fill(wrong.toLowerCase().replace(/-/g, ""));
  await guest.click("#code-join button[type=submit]");
  await idle(guest);
  assert.equal(await errorText(guest), NO_SUCH_CODE);
  assert.ok(await field.isVisible(), "still on the start screen");
  await guest.screenshot({ path: join(OUTPUT, "11-code-wrong.png"), fullPage: true });
  // The right code as a person types it from hearing it: lower case, no dashes.
  await field.fill(code.toLowerCase().replace(/-/g, ""));
  await guest.click("#code-join button[type=submit]");
  await idle(guest);
  assert.equal(await errorText(guest), "");
  assert.ok(await guest.locator("#join").isVisible(), "the code asks for a name, as the link does");
  await guest.fill("#join input[name=name]", "Bob");
  await guest.click("#join button[type=submit]");
  await guest.waitForFunction(() => document.body.dataset.phase === "PLAYING", null, WAIT);
  await host.waitForFunction(() => document.body.dataset.phase === "PLAYING", null, WAIT);
  assert.deepEqual(called.get(guest)!.filter((m) => ["OpenInviteCode", "ClaimSeat"].includes(m)), ["OpenInviteCode", "OpenInviteCode", "OpenInviteCode", "ClaimSeat"]);
  assert.match((await host.locator("g.opponent").getAttribute("aria-label"))!, /^Bob: /);
  assert.match((await guest.locator("g.opponent").getAttribute("aria-label"))!, /^Ana: /);
  assert.equal(await guest.evaluate(() => document.body.dataset.seat), "1", "the guest plays seat 2");

  // They play on until each has made a move the other's page learnt by push alone.
  const moving = ["NewGame", "ClaimSeat", "Deal", "Play", "Draw"];
  const pushed = { host: 0, guest: 0 };
  for (let actions = 0; pushed.host < 2 || pushed.guest < 2; actions++) {
    assert.ok(actions < 200, `moves pushed both ways: ${JSON.stringify(pushed)}`);
    const [h, g] = await Promise.all([body(host), body(guest)]);
    assert.equal(h.stateId, g.stateId, "both pages show the same state");
    if (h.phase === "OVER") break;
    const hostActs = h.yourTurn === "true" || h.phase === "DEALING";
    const [actor, other] = hostActs ? [host, guest] : [guest, host];
    const before = called.get(other)!.length;
    const did = await act(actor, true);
    assert.equal(await errorText(actor), "", `a ${did} was refused`);
    await other.waitForFunction((want) => document.body.dataset.stateId === want, (await body(actor)).stateId, WAIT);
    assert.deepEqual(called.get(other)!.slice(before).filter((m) => moving.includes(m)), [], "the other page learnt the move by push alone");
    if (did === "played" || did === "drew") pushed[hostActs ? "host" : "guest"]++;
  }
  assert.ok(pushed.host >= 2 && pushed.guest >= 2, `both played: ${JSON.stringify(pushed)}`);
  await guest.screenshot({ path: join(OUTPUT, "11-code-guest.png"), fullPage: true });

  // A server without a match store has no codes: the link alone, said quietly, no error.
  const plain = await open(at(PAGE_URL, RESTRICTED_SERVER_URL), phone);
  await newMatch(plain, { players: 2, bots: ["friend"] });
  await plain.locator("[data-testid=no-code]").waitFor(WAIT);
  // (The page says, as before codes, that a friend's moves cannot reach it; nothing about
  // codes. The refused Watch and the refused code ask race: wait for the sentence.)
  await plain.locator("#error").waitFor(WAIT);
  assert.equal(
    await errorText(plain),
    "This server keeps no match store, so the other players' moves cannot reach this page. Start it with --match-store memory.",
  );
  assert.ok(await plain.locator("#invite-link").isVisible());
  assert.equal(await plain.locator("#invite-code").count(), 0);
});

// --- Dragging a tile onto a lit end. ------------------------------------------------------
type Locator = ReturnType<Page["locator"]>;
/** The middle of an element, in the viewport's CSS pixels. */
async function middle(el: Locator): Promise<{ x: number; y: number }> {
  const box = (await el.boundingBox())!;
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

/** Drags `tile` with the mouse onto the first lit end; says which tile it dragged. */
async function mouseDrag(page: Page, tile: Locator): Promise<string> {
  // The hand may be drawn again between finding the tile and scrolling to it (CI once
  // saw "Element is not attached to the DOM" here): the locator then finds the tile
  // drawn anew, so a detached one is tried again, twice at most.
  for (let attempt = 1; ; attempt++) {
    try {
      await tile.scrollIntoViewIfNeeded();
      break;
    } catch (e) {
      if (attempt >= 3 || !String(e).includes("not attached")) throw e;
    }
  }
  const name = (await tile.getAttribute("data-tile"))!;
  const from = await middle(tile);
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  await page.mouse.move(from.x, from.y - 30, { steps: 4 });
  const to = await middle(page.locator("g.target").first());
  await page.mouse.move(to.x, to.y, { steps: 6 });
  await page.mouse.up();
  return name;
}

/**
 * Drags `tile` with a finger onto the first lit end: touchStart on the tile, touchMoves
 * (the ends light up after the first), touchEnd over the end, dispatched by chromium's
 * DevTools protocol as a touchscreen's events (the page sees pointer events of type
 * touch). The table is scrolled so that the tile and the felt are both on the screen.
 */
async function fingerDrag(page: Page, tile: Locator): Promise<string> {
  const name = (await tile.getAttribute("data-tile"))!;
  await page.evaluate(() => {
    const felt = document.querySelector("#table rect.felt")!.getBoundingClientRect();
    window.scrollBy(0, felt.top - 8);
  });
  const cdp = await page.context().newCDPSession(page);
  const touch = (type: "touchStart" | "touchMove" | "touchEnd", at?: { x: number; y: number }) =>
    cdp.send("Input.dispatchTouchEvent", { type, touchPoints: at ? [{ x: at.x, y: at.y, id: 1, radiusX: 6, radiusY: 6, force: 1 }] : [] });
  const from = await middle(tile);
  const viewport = page.viewportSize()!;
  assert.ok(from.y > 0 && from.y < viewport.height, `the tile is on the screen: ${from.y}`);
  await touch("touchStart", from);
  for (let k = 1; k <= 4; k++) await touch("touchMove", { x: from.x, y: from.y - 8 * k });
  const target = page.locator("g.target").first();
  await target.waitFor({ state: "attached", ...WAIT });
  const to = await middle(target);
  assert.ok(to.y > 0 && to.y < viewport.height, `the lit end is on the screen: ${to.y}`);
  const steps = 8;
  for (let k = 1; k <= steps; k++) {
    await touch("touchMove", { x: from.x + ((to.x - from.x) * k) / steps, y: from.y - 32 + ((to.y - from.y + 32) * k) / steps });
  }
  await touch("touchEnd");
  await cdp.detach();
  return name;
}

// --- The layout at three sizes. --------------------------------------------------------
const SIZES: { name: string; options: ContextOptions; phone: boolean }[] = [
  { name: "phone", phone: true, options: { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true } },
  { name: "laptop", phone: false, options: { viewport: { width: 1280, height: 720 } } },
  { name: "desktop", phone: false, options: { viewport: { width: 1440, height: 900 } } },
];

/**
 * What is wrong with the page's layout: anything shown that runs past the viewport's
 * sides, and (on a phone) a control, a tile of the hand or a lit end smaller than 44
 * CSS pixels either way.
 */
async function layoutFaults(page: Page, phone: boolean): Promise<string[]> {
  return page.evaluate((phone) => {
    const faults: string[] = [];
    const vw = document.documentElement.clientWidth;
    const name = (el: Element) =>
      `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}${el.getAttribute("class") ? `.${el.getAttribute("class")!.split(" ").join(".")}` : ""}${el.getAttribute("aria-label") ? ` "${el.getAttribute("aria-label")}"` : ""}`;
    if (document.documentElement.scrollWidth > vw) faults.push(`the page is ${document.documentElement.scrollWidth} px wide in a ${vw} px viewport`);
    for (const el of document.querySelectorAll("body *")) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;
      if (r.right > vw + 0.5 || r.left < -0.5) faults.push(`${name(el)} runs from x ${r.left.toFixed(0)} to ${r.right.toFixed(0)}`);
    }
    if (phone) {
      for (const el of document.querySelectorAll("button, select, input, summary, g.in-hand, g.target")) {
        const r = el.getBoundingClientRect();
        if (r.width === 0 || r.height === 0) continue;
        if (r.width < 44 || r.height < 44) faults.push(`${name(el)} is ${r.width.toFixed(0)}×${r.height.toFixed(0)} px`);
      }
    }
    return faults;
  }, phone);
}

/**
 * A line of play of 24 tiles (the lead, a spinner; 8 on each side, 4 up, 3 down), as
 * the server's layout describes one, for the page to draw through its test hook.
 */
function longLine() {
  const layout: object[] = [];
  let order = 0;
  const arm = (name: string, n: number, from: number) => {
    let near = from;
    for (let i = 0; i < n; i++) {
      const double = i === 3;
      const far = double ? near : (near + 2 + i) % 7;
      layout.push({ tile: { a: Math.min(near, far), b: Math.max(near, far) }, arm: name, index: i, near, far, crosswise: double, order: ++order, seat: order % 2 });
      near = far;
    }
    return near;
  };
  layout.push({ tile: { a: 6, b: 6 }, arm: "ARM_LEAD", index: 0, near: 6, far: 6, crosswise: true, spinner: true, order: 0, seat: 0 });
  const ends = [arm("ARM_LEFT", 8, 6), arm("ARM_RIGHT", 8, 6), arm("ARM_UP", 4, 6), arm("ARM_DOWN", 3, 6)];
  const openEnds = ["END_LEFT", "END_RIGHT", "END_UP", "END_DOWN"].map((end, i) => ({ end, pip: ends[i], value: ends[i] }));
  return { layout, openEnds };
}

/** The placed tiles' faces: each inside the felt, none over another, the smallest side. */
async function lineFaults(page: Page): Promise<{ faults: string[]; shortest: number; longest: number; count: number }> {
  return page.evaluate(() => {
    const felt = document.querySelector("rect.felt")!.getBoundingClientRect();
    const faces = [...document.querySelectorAll("g.placed rect.face")].map((f) => f.getBoundingClientRect());
    const faults: string[] = [];
    faces.forEach((r, i) => {
      if (r.left < felt.left - 0.5 || r.right > felt.right + 0.5 || r.top < felt.top - 0.5 || r.bottom > felt.bottom + 0.5) faults.push(`tile ${i} outside the felt`);
      faces.slice(0, i).forEach((q, j) => {
        if (r.left < q.right - 0.5 && q.left < r.right - 0.5 && r.top < q.bottom - 0.5 && q.top < r.bottom - 0.5) faults.push(`tiles ${j} and ${i} overlap`);
      });
    });
    const sides = faces.map((r) => Math.min(r.width, r.height));
    return { faults, shortest: Math.min(...sides), longest: Math.max(...faces.map((r) => Math.max(r.width, r.height))), count: faces.length };
  });
}

for (const size of SIZES) {
  webTest(`the ${size.name} (${size.options.viewport!.width}×${size.options.viewport!.height}): nothing overflows${size.phone ? ", every target 44 px" : ""}, a 24-tile line stays readable inside the table`, 240_000, async () => {
    const page = await open(at(PAGE_URL, SERVER_URL, "&debug=1"), size.options);
    assert.deepEqual(await layoutFaults(page, size.phone), [], "the new-match form");
    await page.screenshot({ path: join(OUTPUT, `8-${size.name}-form.png`) });
    // Four players (three opponents along the top), then two (nine tiles in hand).
    let asked = 0;
    page.on("dialog", () => asked++);
    for (const rules of [{ players: 4, bots: ["1", "1", "1"], partnership: true }, { players: 2, bots: ["1"] }]) {
      if (!(await page.locator("#new-match").isVisible())) {
        await page.click("#new-match-button");
      }
      await newMatch(page, rules);
      // The second new match, over one in progress, was asked about first.
      assert.equal(asked, rules.players === 2 ? 1 : 0, "a confirm before leaving a match in progress");
      assert.equal(await errorText(page), "");
      for (let i = 0; i < 3; i++) await act(page, size.phone);
      assert.deepEqual(await layoutFaults(page, size.phone), [], `${rules.players} players, a few moves in`);
      // A tile chosen: its lit ends are targets too.
      const playable = page.locator("g.in-hand.playable");
      if ((await playable.count()) > 0) {
        await (size.phone ? playable.first().tap() : playable.first().click());
        await idle(page);
        assert.deepEqual(await layoutFaults(page, size.phone), [], `${rules.players} players, a tile chosen`);
        await page.screenshot({ path: join(OUTPUT, `8-${size.name}-${rules.players}-players.png`) });
        // Put back (a tile that fits one end only was played by the tap).
        const chosen = page.locator("g.in-hand.chosen");
        if ((await chosen.count()) > 0) await (size.phone ? chosen.first().tap() : chosen.first().click());
      } else {
        await page.screenshot({ path: join(OUTPUT, `8-${size.name}-${rules.players}-players.png`) });
      }
    }
    // A tap on a tile that cannot be played says why (on a turn that has one).
    let why = "";
    for (let i = 0; i < 20 && !why; i++) {
      const { phase, yourTurn } = await body(page);
      const stuck = page.locator("g.in-hand:not(.playable)");
      if (phase === "PLAYING" && yourTurn === "true" && (await stuck.count()) > 0) {
        // (aria-disabled: Playwright would wait for it to be enabled; a finger does not.)
        await (size.phone ? stuck.first().tap({ force: true }) : stuck.first().click({ force: true }));
        why = await page.locator("#hint").innerText();
      } else {
        await act(page, size.phone);
      }
    }
    assert.match(why, /^The [a-z -]+ fits no open end \(they show [a-z, ]+\)(: draw from the boneyard)?\.$/);
    // Drag to play: press on a playable tile, move (its ends light up), release over a
    // lit end: the move is made. With a mouse on the laptop and the desktop; on the
    // phone with a finger, as real touch events through the DevTools protocol
    // (Playwright's touchscreen only taps).
    for (let i = 0; i < 20; i++) {
      const { phase } = await body(page);
      if (phase === "PLAYING" && (await page.locator("g.in-hand.playable").count()) > 0) break;
      await act(page, size.phone);
    }
    const tile = page.locator("g.in-hand.playable").first();
    assert.ok((await body(page)).phase === "PLAYING" && (await tile.count()) > 0, "a tile to drag");
    {
      const before = Number((await body(page)).moves);
      const played = await (size.phone ? fingerDrag(page, tile) : mouseDrag(page, tile));
      await idle(page);
      assert.equal(await errorText(page), "");
      assert.ok(Number((await body(page)).moves) > before, `the tile dragged by ${size.phone ? "a finger" : "the mouse"} was played (${played})`);
    }
    // After a click or a tap the page stays where it was (no scroll of its own), to the
    // hand's end (where the focus moves on to Deal, far below). Each move from the top
    // of the page, its clicks dispatched in the page: Playwright's own would first
    // scroll to an element below the fold, which is not the page's doing.
    const press = (selector: string) =>
      page.evaluate((sel) => {
        const el = document.querySelector(sel) as HTMLElement | null;
        // Focused as a click would (the page then moves the focus on after the move).
        el?.focus({ preventScroll: true });
        el?.dispatchEvent(new MouseEvent("click", { bubbles: true }));
        return el !== null;
      }, selector);
    for (let i = 0; i < 80 && (await body(page)).phase === "PLAYING"; i++) {
      await page.evaluate(() => window.scrollTo(0, 0));
      if (await page.locator("#draw").isEnabled()) await press("#draw");
      else if (await press("g.in-hand.playable")) {
        await idle(page);
        await press("g.target");
      }
      await idle(page);
      assert.equal(await page.evaluate(() => window.scrollY), 0, `a move does not scroll the page (move ${i + 1})`);
    }
    assert.notEqual((await body(page)).phase, "PLAYING", "the hand ended");
    // A line of 24 tiles: every tile inside the felt, none over another, none smaller
    // than a tile drawn at its least scale (44 by 22 CSS pixels).
    const view = (await page.evaluate(() => (window as any).allfivesDebug.view())) as Record<string, unknown>;
    await page.evaluate((v) => (window as any).allfivesDebug.show(v), { ...view, ...longLine(), legalMoves: [], turn: 1, mustDraw: false });
    const line = await lineFaults(page);
    assert.equal(line.count, 24);
    assert.deepEqual(line.faults, [], "the long line");
    assert.ok(line.shortest >= 21.5 && line.longest >= 43, `tiles at a readable size: ${line.shortest} by ${line.longest} px at least`);
    assert.deepEqual(await layoutFaults(page, size.phone), [], "the long line: nothing overflows");
    await page.screenshot({ path: join(OUTPUT, `8-${size.name}-long-line.png`), fullPage: true });
  });
}

// --- The page in the four other languages. ---------------------------------------------
/** Every string of a dictionary with letters in it, the fixed parts of its sentences too. */
function texts(words: object): string[] {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === "string") out.push(v);
    else if (typeof v === "function") {
      // The fixed parts of a sentence with parameters: what it says around them, with
      // marks for text, 901, 902 … for numbers, both values for yes-or-no.
      const f = v as (...a: unknown[]) => string;
      const names = (/^\(([^)]*)\)/.exec(f.toString())?.[1] ?? "").split(",").map((p) => p.trim().split(/[\s:=]/)[0]);
      const TEXT = /^(url|hi|lo|pip|level|name|arm|tile|place|who|end|names|how|winners|partner|seats|spelled|where|server|origin)$/;
      for (const flag of [false, true]) {
        const args = names.map((p, i) =>
          /^(you|spinner|last|fromSpinner|mustDraw)$/.test(p) ? flag : p === "pips" && f.length === 3 ? [`\u0001${i}\u0001`] : TEXT.test(p) ? `\u0001${i}\u0001` : 901 + i,
        );
        out.push(...f(...args).split(/\u0001\d+\u0001|9\d\d/));
      }
    } else if (v && typeof v === "object") Object.values(v).forEach(walk);
  };
  walk(words);
  return out.map((t) => t.replace(/^[\s\p{P}]+|[\s\p{P}]+$/gu, "")).filter((t) => /\p{L}{3}/u.test(t));
}

/**
 * English's strings (and the fixed parts of its sentences) that must not be seen on a
 * page in `code`: those of four letters or more that appear nowhere in that language's
 * own words ("partner" is Dutch too; "server" is in Romanian's "serverul").
 */
function englishOnly(code: Lang): string[] {
  const theirs = texts(LANGUAGES[code]).join("\n");
  // (The switch names each language in itself: "English" among them.)
  const { languageName: _, ...english } = en;
  return [...new Set(texts(english))].filter((t) => t.length >= 4 && !theirs.includes(t));
}

/**
 * What the page says: its visible text (the document's and the table's SVG text), and
 * what it tells a screen reader (aria-labels, the SVG's titles, placeholders).
 */
const visibleText = (page: Page) =>
  page.evaluate(() =>
    [
      document.body.innerText,
      document.title,
      ...[...document.querySelectorAll("svg text, svg title")].map((t) => t.textContent ?? ""),
      ...[...document.querySelectorAll("[aria-label], [placeholder]")].flatMap((e) => [e.getAttribute("aria-label") ?? "", e.getAttribute("placeholder") ?? ""]),
    ].join("\n"),
  );

const OTHER_LANGUAGES: Lang[] = ["ro", "nl", "sr", "th"];
for (const size of SIZES) {
  webTest(`the ${size.name} in Romanian, Dutch, Serbian and Thai: no English seen or read out, nothing overflows`, 180_000, async () => {
    const page = await open(at(PAGE_URL, SERVER_URL), size.options);
    const press = (l: ReturnType<Page["locator"]>) => (size.phone ? l.tap() : l.click());
    for (const code of OTHER_LANGUAGES) {
      // The header's switch: the language is said on <html> and kept for the next visit.
      if (!(await page.locator("#new-match").isVisible())) await press(page.locator("#new-match-button"));
      await page.selectOption("#lang", code);
      assert.deepEqual(
        await page.evaluate(() => [document.documentElement.lang, document.documentElement.dir, localStorage.getItem("allfives-lang")]),
        [code, "ltr", code],
      );
      const leaks = async (where: string) => {
        const text = await visibleText(page);
        const seen = englishOnly(code).filter((t) => new RegExp(`(?<!\\p{L})${t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?!\\p{L})`, "u").test(text));
        assert.deepEqual(seen, [], `${code}, ${where}: English on the page`);
        assert.deepEqual(await layoutFaults(page, size.phone), [], `${code}, ${where}: the layout`);
        // An opponent's hand size and level (one line on a phone) never run into each other.
        const met = await page.locator("g.opponent").evaluateAll((boxes) =>
          boxes.flatMap((g) => {
            const [a, b] = ["text.hand-size", "text.seat-detail"].map((sel) => g.querySelector(sel)?.getBoundingClientRect());
            const apart = !a || !b || a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;
            return apart ? [] : [`${g.getAttribute("aria-label")}: "${g.querySelector("text.hand-size")!.textContent}" meets "${g.querySelector("text.seat-detail")!.textContent}"`];
          }),
        );
        assert.deepEqual(met, [], `${code}, ${where}: an opponent's texts overlap`);
      };
      await leaks("the new-match form");
      // Four players, three bots; into the hand until a tile of the hand is chosen
      // that fits two ends (lit as targets): a deal may take a few hands to give one.
      await newMatch(page, { players: 4, bots: ["1", "2", "3"] });
      assert.equal(await errorText(page), "");
      for (let i = 0; i < 120; i++) {
        const { phase, yourTurn } = await body(page);
        if (phase === "PLAYING" && yourTurn === "true" && (await page.locator("g.in-hand.playable").count()) > 0 && i >= 2) {
          await press(page.locator("g.in-hand.playable").first());
          await idle(page);
          if ((await page.locator("g.target").count()) > 0) break;
        } else {
          await act(page, size.phone);
        }
      }
      assert.ok((await page.locator("g.target").count()) > 0, "the loop reached no chosen tile with lit ends");
      await leaks("mid-hand");
      if (size.phone) {
        // The phone's screen as a person sees it (the README shows Serbian's and Thai's).
        await page.evaluate(() => window.scrollTo(0, 0));
        await page.screenshot({ path: join(OUTPUT, `12-${code}-phone-screen.png`), scale: "css" });
      }
      await page.locator("#log-box").evaluate((d) => d.setAttribute("open", ""));
      await page.locator("#sheet-box").evaluate((d) => d.setAttribute("open", ""));
      await leaks("mid-hand, the log open");
      await page.screenshot({ path: join(OUTPUT, `12-${code}-${size.name}.png`), fullPage: true });
    }
    // Back to English by the switch; the new-match form says it in English again.
    await press(page.locator("#new-match-button"));
    await page.selectOption("#lang", "en");
    assert.equal(await page.locator("#new-match button[type=submit]").innerText(), "Start the match");
    // The match in progress (Thai's) is said again in English: the log from its first line.
    assert.match(await page.locator("#log li").first().innerText(), /^Hand 1 dealt; (You lead|Seat [234] \((easy|medium|hard) bot\) leads)\.$/);
    // (The check above had English to look for: the fixed parts of English's sentences too.)
    assert.ok(englishOnly("th").length > 200 && englishOnly("th").includes("Boneyard"), `English looked for: ${englishOnly("th").length}`);
  });
}

// --- Accessibility: axe-core's rules, in light and dark mode. --------------------------
const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");

/** axe-core's serious and critical violations on the page as it stands, one line each. */
async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  const found = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
    const result = await axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, where: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
  });
  return found.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.impact} ${v.id}: ${v.where.join(", ")}`);
}

for (const scheme of ["light", "dark"] as const) {
  webTest(`no serious or critical accessibility violation (axe-core), in ${scheme} mode`, 180_000, async () => {
    const page = await open(at(PAGE_URL, SERVER_URL), { viewport: { width: 1280, height: 860 }, colorScheme: scheme });
    assert.deepEqual(await axeViolations(page), [], "the new-match form");
    await newMatch(page, { players: 4, bots: ["1", "2", "3"], partnership: true });
    for (let i = 0; i < 3; i++) await act(page);
    const playable = page.locator("g.in-hand.playable");
    if ((await playable.count()) > 0) {
      await playable.first().focus();
      await page.keyboard.press("Enter"); // a tile chosen: its ends lit
    }
    assert.deepEqual(await axeViolations(page), [], "mid-hand");
    // To the hand's end.
    for (let i = 0; i < 200 && (await body(page)).phase === "PLAYING"; i++) await act(page);
    assert.deepEqual(await axeViolations(page), [], "a hand's end");
    await page.screenshot({ path: join(OUTPUT, `10-${scheme}.png`), fullPage: true });
  });
}

webTest("a reload mid-hand continues the same match: the same hand, table and scores", 300_000, async () => {
  const page = await open(at(PAGE_URL, SERVER_URL));
  await newMatch(page, { players: 4, bots: ["2", "1", "2"], partnership: true });
  // A few moves in, and on a turn with a tile to play (drawing until there is one).
  for (let i = 0; i < 30; i++) {
    if ((await body(page)).phase !== "PLAYING") break;
    if (i >= 3 && (await page.locator("g.in-hand.playable").count()) > 0) break;
    await act(page);
  }
  const before = await snapshot(page);
  assert.equal(before.phase, "PLAYING", "still in the first hand");
  assert.ok(before.layout.length > 0, "tiles on the table");
  // What a screen reader hears: the table is a labelled group, every tile is named as
  // people say it ("five-three", "double six"), and a placed tile says who played it.
  assert.equal(await page.locator("svg#table").getAttribute("role"), "group");
  assert.equal(await page.locator("svg#table title").first().textContent(), "The table");
  const name = "(double (blank|one|two|three|four|five|six)|(one|two|three|four|five|six)-(blank|one|two|three|four|five))";
  for (const label of before.hand) assert.match(label!, new RegExp(`^${name}(,|$)`));
  const place = "the lead|the (left|right) arm, \\d+(st|nd|rd|th) from the lead|the (upper|lower) arm, \\d+(st|nd|rd|th) from the spinner";
  for (const label of before.layout) assert.match(label!, new RegExp(`^${name}(, the spinner)?, on (${place}), played by (You|Seat [234])(, the last played)?$`));
  assert.ok((await checkTileNames(page)) >= before.hand.length + before.layout.length, "every tile named by its pips");
  // Against the server's view of the same token: the opponents (seat 3, the partner,
  // marked so; the levels chosen), every placed tile's arm and who played it, and what
  // each open end shows.
  const view = (await serverScore(page)).view!;
  await checkOpponents(page, ["2", "1", "2"], view, true);
  const placed = await page.locator("g.placed").evaluateAll((gs) =>
    gs.map((g) => `${g.getAttribute("data-tile")} ${g.getAttribute("data-arm")} ${g.getAttribute("aria-label")!.replace(/^.*played by /, "").replace(/, the last played$/, "")}`),
  );
  const arms = ["UNSPECIFIED", "LEAD", "LEFT", "RIGHT", "UP", "DOWN"];
  assert.deepEqual(
    placed,
    [...view.layout].sort((p, q) => p.order - q.order).map((t) => `${t.tile!.a}-${t.tile!.b} ${arms[t.arm]} ${t.seat === 0 ? "You" : `Seat ${t.seat + 1}`}`),
    "each placed tile's arm and player are the server's",
  );
  const ends = ["the centre (the lead)", "the left end", "the right end", "the upper arm", "the lower arm"];
  assert.deepEqual(
    await page.locator("[data-testid=open-end]").evaluateAll((gs) => gs.map((g) => g.getAttribute("aria-label"))),
    view.openEnds.map((e) => `${ends[e.end]}: ${WORDS[e.pip]} (counts ${e.value})`),
    "the open ends a screen reader is told of are the server's",
  );
  // Choose a tile, so the screenshot shows the targets and their points (from the
  // keyboard: a click on a tile that fits one end only would play it).
  await page.locator("g.in-hand.playable").first().focus();
  await page.keyboard.press("Enter");
  await page.screenshot({ path: join(OUTPUT, "2-before-reload.png") });

  await page.reload();
  await idle(page);
  const afterReload = await snapshot(page);
  assert.deepEqual(afterReload, before, "the page shows the same match after the reload");
  assert.match(await page.locator("#log").innerText(), /Hand 1 dealt/, "the hand's events are replayed into the log");
  await page.screenshot({ path: join(OUTPUT, "2-after-reload.png") });

  // And it goes on from there, with the keyboard alone: Tab to a playable tile (or to
  // Draw), Enter, and Enter again on the end the focus moved to.
  const moves = Number(afterReload.moves);
  const mustDraw = await page.locator("#draw").isEnabled();
  let reached = false;
  for (let i = 0; i < 80 && !reached; i++) {
    await page.keyboard.press("Tab");
    reached = await page.evaluate((draw) => {
      const el = document.activeElement as HTMLElement | null;
      return draw ? el?.id === "draw" : !!el?.matches?.("g.in-hand.playable");
    }, mustDraw);
  }
  assert.ok(reached, "Tab reaches a playable tile (or Draw)");
  await page.keyboard.press("Enter");
  if (!mustDraw) {
    assert.ok(await page.evaluate(() => !!document.activeElement?.matches?.("g.target")), "the focus moved to an end");
    await page.screenshot({ path: join(OUTPUT, "2-keyboard.png") });
    await page.keyboard.press("Enter");
  }
  await idle(page);
  assert.equal(await errorText(page), "");
  assert.ok(Number((await body(page)).moves) > moves, "the move after the reload, made with the keyboard, was taken");
  await page.context().close();
});

webTest("a refused move shows its sentence, and changes nothing", 120_000, async () => {
  // The page never offers a tile the player does not hold, so the refusal is provoked
  // through its test hook (?debug=1), which sends a Play through the same path as a click.
  const page = await open(at(PAGE_URL, SERVER_URL, "&debug=1"));
  await newMatch(page, { players: 2, bots: ["2"] });
  const before = await snapshot(page);
  const held = new Set(await page.locator("g.in-hand").evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.tile)));
  const all = [...Array(7).keys()].flatMap((a) => [...Array(7 - a).keys()].map((d) => `${a}-${a + d}`));
  const [a, b] = all.find((t) => !held.has(t))!.split("-").map(Number);
  await page.evaluate(([a, b, end]) => (window as any).allfivesDebug.play(a, b, end), [a, b, End.RIGHT]);
  await idle(page);
  const sentence = await errorText(page);
  assert.equal(sentence, "You do not hold that tile.");
  assert.doesNotMatch(sentence, /TILE_NOT_IN_HAND|FAILED_PRECONDITION|failed_precondition|\[/);
  assert.deepEqual(await snapshot(page), before, "the refused move changed nothing");
  await page.screenshot({ path: join(OUTPUT, "3-refused-move.png") });

  // A stored token that was altered: the reload's Score is refused, and says so.
  await page.evaluate(() => {
    const key = Object.keys(localStorage).find((k) => k.startsWith("allfives-web:"))!;
    const saved = JSON.parse(localStorage.getItem(key)!);
    const bytes = Uint8Array.from(atob(saved.state), (c) => c.charCodeAt(0));
    bytes[bytes.length - 1] ^= 1;
    saved.state = btoa(String.fromCharCode(...bytes));
    // The tab's own copy (a reload reads it first) and the browser's.
    sessionStorage.setItem(key, JSON.stringify(saved));
    localStorage.setItem(key, JSON.stringify(saved));
  });
  await page.reload();
  await idle(page);
  assert.equal(
    await errorText(page),
    "The saved match has been altered, or was not issued by this server. Start a new match.",
  );
  assert.ok(await page.locator("#new-match").isVisible(), "the page offers a new match");
  await page.screenshot({ path: join(OUTPUT, "3-altered-token.png") });
  // The refused token is forgotten: the next reload offers a new match at once.
  assert.equal(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("allfives-web:")).length), 0);
  await page.reload();
  await idle(page);
  assert.equal(await errorText(page), "", "no refusal after the refused token was forgotten");
  assert.ok(await page.locator("#new-match").isVisible(), "the page offers a new match");
  await page.context().close();
});

// Protobuf by hand, for an answer the server does not give: a varint, and a field.
const varint = (n: number): number[] => (n < 0x80 ? [n] : [(n & 0x7f) | 0x80, ...varint(n >>> 7)]);
const field = (no: number, bytes: Uint8Array | string): number[] => {
  const b = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  return [(no << 3) | 2, ...varint(b.length), ...b];
};

webTest("a failure without a reason the page knows is told by what happened, not as CORS", 120_000, async () => {
  // The page's calls are answered by the test (page.route), as a proxy or a newer
  // server would answer; the no-cors and cors probes still reach the real server.
  const page = await open(at(PAGE_URL, SERVER_URL));
  const cors = { "access-control-allow-origin": "*", "access-control-allow-headers": "*", "access-control-expose-headers": "*" };
  let answer: "503" | "unknown reason" | "dropped" = "503";
  await page.route("**/allfives.v1.AllFivesService/**", async (route) => {
    if (route.request().method() === "OPTIONS") return route.fulfill({ status: 204, headers: { ...cors, "access-control-allow-methods": "POST" } });
    if (answer === "503") return route.fulfill({ status: 503, headers: cors, body: "proxy: no upstream" });
    if (answer === "dropped") return route.abort("connectionreset");
    // RESOURCE_EXHAUSTED (8) with an ErrorInfo whose reason this page has never heard of.
    const info = [...field(1, "A_REASON_FROM_2027"), ...field(2, "allfives.v1")];
    const status = [8, 8, ...field(2, "busy in a new way"), ...field(3, new Uint8Array([...field(1, "type.googleapis.com/google.rpc.ErrorInfo"), ...field(2, new Uint8Array(info))]))];
    return route.fulfill({
      status: 200,
      headers: {
        ...cors,
        "content-type": "application/grpc-web+proto",
        "grpc-status": "8",
        "grpc-message": "busy%20in%20a%20new%20way",
        "grpc-status-details-bin": Buffer.from(status).toString("base64"),
      },
      body: "",
    });
  });
  const sentences: Record<string, string> = {
    "503": "The server (or a proxy in front of it) answered with an error (HTTP 503). Try again in a moment.",
    "unknown reason": "The server is busy. Try again shortly.",
    dropped: `The connection to the game server at ${SERVER_URL} was lost before it answered. Try again.`,
  };
  for (const kind of ["503", "unknown reason", "dropped"] as const) {
    answer = kind;
    if (await page.locator("#new-match").isHidden()) await page.click("#new-match-button");
    await newMatch(page, { players: 2, bots: ["1"] });
    const sentence = await errorText(page);
    assert.equal(sentence, sentences[kind], `the ${kind} answer`);
    assert.doesNotMatch(sentence, /cors|does not allow|RESOURCE_EXHAUSTED|A_REASON/i);
    await page.screenshot({ path: join(OUTPUT, `4-${kind.replace(" ", "-")}.png`) });
  }
  await page.context().close();
});

webTest("a page on an origin the server does not allow fails with a clear message", 120_000, async () => {
  // The same server lets the page's allowed origin play, so what fails below is the origin.
  const allowed = await open(at(PAGE_URL, RESTRICTED_SERVER_URL));
  await newMatch(allowed, { players: 2, bots: ["1"] });
  assert.equal(await errorText(allowed), "");
  assert.equal((await body(allowed)).phase, "PLAYING", "the allowed origin plays");
  await allowed.context().close();

  const page = await open(at(OTHER_PAGE_URL, RESTRICTED_SERVER_URL));
  await newMatch(page, { players: 2, bots: ["1"] });
  const origin = new URL(OTHER_PAGE_URL).origin;
  assert.equal(
    await errorText(page),
    `The game server at ${RESTRICTED_SERVER_URL} is running but does not allow pages from ${origin} to call it. ` +
      `Start it with --cors-origins ${origin} (or without --cors-origins, which allows every origin).`,
  );
  assert.ok(await page.locator("#game").isHidden(), "no table without a match");
  await page.screenshot({ path: join(OUTPUT, "5-origin-not-allowed.png") });
  await page.context().close();
});

// The page on a real network (issue 42): test/network.test.ts, in this browser.
networkTests({
  PAGE_URL,
  SERVER_URL,
  OUTPUT,
  WAIT,
  webTest,
  open,
  at,
  idle,
  body,
  newMatch,
  act,
  tcpProxy,
  savedSeat,
  serverScore,
  client,
  phone: SIZES[0].options,
  called,
});
