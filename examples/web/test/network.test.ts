// Browser tests of the page on a real network (issue 42): what it shows while an
// answer's tiles are played back, a connection cut and back, the server started again,
// the turn told while the tab is hidden, a friend's invite on a phone. Run from
// test/web.test.ts (networkTests(h), at its end), so they share its browser and its
// helpers (the bundle .ci/web builds is web.test.ts's). ALLFIVES_BIN (exported by
// .ci/web) is the server binary the restart test starts and stops itself.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import type { Browser, Page } from "playwright-core";
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { AllFivesService as AllFivesServiceDesc, Phase, type AllFivesService, type ScoreResponse } from "../src/gen/allfives/v1/allfives_pb.js";
import { en } from "../src/lang/en.js";
import { encode } from "uqr";

type ContextOptions = NonNullable<Parameters<Browser["newContext"]>[0]>;
/** What web.test.ts lends these tests. */
export interface Harness {
  PAGE_URL: string;
  SERVER_URL: string;
  OUTPUT: string;
  WAIT: { timeout: number };
  webTest: (name: string, timeout: number, body: () => Promise<void>) => void;
  open: (url: string, options?: ContextOptions) => Promise<Page>;
  at: (page: string, server: string, extra?: string) => string;
  idle: (page: Page) => Promise<void>;
  body: (page: Page) => Promise<{ phase?: string; moves?: string; hand?: string; stateId?: string; yourTurn?: string }>;
  newMatch: (page: Page, rules: { name?: string; players: number; bots: string[]; target?: number; handSize?: string }) => Promise<void>;
  act: (page: Page, touch?: boolean) => Promise<"dealt" | "drew" | "played" | "over">;
  /** A TCP proxy the test runs in front of a server: cut, restored, sent to another. */
  tcpProxy: (url: string) => Promise<{ url: string; cut: () => void; restore: () => void; retarget: (url: string) => void; close: () => Promise<void> }>;
  savedSeat: (page: Page) => Promise<{ state: Uint8Array; viewer: number; credential: Uint8Array }>;
  serverScore: (page: Page) => Promise<ScoreResponse>;
  client: Client<typeof AllFivesService>;
  phone: ContextOptions;
  /** The service's methods each page called, in order. */
  called: Map<Page, string[]>;
}

/** The page's "your turn" sentences of the status line. */
const YOUR_TURN = [en.chooseTile, en.chooseEnd, en.yourLead, en.mustDraw];
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

/** What a page's moves look like: Draw and Suggest, and the tiles lit as playable. */
async function moves(page: Page) {
  return {
    draw: await page.locator("#draw").isEnabled(),
    suggest: await page.locator("#suggest").isEnabled(),
    lit: await page.locator("g.in-hand.playable").count(),
  };
}

/**
 * The page's own move made from Node with its saved token (the page hears of it only
 * by its stream): the first legal tile, else a draw. Returns the state id it made
 * (the bots' replies made within the call included).
 */
async function moveFromNode(h: Harness, page: Page): Promise<string> {
  const seat = await h.savedSeat(page);
  const view = (await h.client.score(seat, { timeoutMs: 10_000 })).view!;
  const [move] = view.legalMoves;
  const by = { state: seat.state, seat: seat.viewer, credential: seat.credential };
  const answer = move
    ? await h.client.play({ ...by, tile: move.tile, end: move.end }, { timeoutMs: 10_000 })
    : await h.client.draw(by, { timeoutMs: 10_000 });
  return b64(answer.view!.stateId);
}

/**
 * A TCP proxy to `url` that can go silent without a word, as a phone's connection left
 * behind on another network does: `freeze()` stops forwarding on every connection open
 * through it (none is closed) and holds every new one unanswered; `thaw()` closes the
 * frozen ones and lets new ones through.
 */
async function silentProxy(url: string) {
  const target = new URL(url);
  const open = new Set<Socket>();
  let frozen = false;
  const server = createServer((inbound) => {
    open.add(inbound);
    inbound.on("close", () => open.delete(inbound));
    inbound.on("error", () => {});
    if (frozen) return; // held: no answer, no close
    const outbound = connect(Number(target.port), target.hostname);
    open.add(outbound);
    outbound.on("close", () => open.delete(outbound));
    outbound.on("error", () => inbound.destroy());
    inbound.on("error", () => outbound.destroy());
    inbound.on("close", () => outbound.destroy());
    outbound.on("close", () => inbound.destroy());
    inbound.on("data", (d) => void (!frozen && outbound.write(d)));
    outbound.on("data", (d) => void (!frozen && inbound.write(d)));
  });
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    freeze: () => void (frozen = true),
    thaw: () => {
      frozen = false;
      for (const socket of open) socket.destroy();
    },
    close: () =>
      new Promise<void>((closed) => {
        for (const socket of open) socket.destroy();
        server.close(() => closed());
      }),
  };
}

/**
 * A server of our own, on `port` (0: the system's choice), with the memory store unless
 * `store` names another; resolves once serving.
 */
async function startServer(port: number, flags: string[] = [], store = ["--match-store", "memory"]): Promise<{ proc: ChildProcess; url: string; port: number }> {
  const bin = process.env.ALLFIVES_BIN;
  if (!bin) throw new Error("ALLFIVES_BIN is not set: run the tests with bash .ci/web");
  const proc = spawn(bin, ["--addr", `127.0.0.1:${port}`, "--metrics-addr", "off", "--shutdown-delay-ms", "0", ...store, ...flags], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const got = await new Promise<number>((resolve, reject) => {
    let log = "";
    const timer = setTimeout(() => reject(new Error(`the server did not say it was serving within 30 s:\n${log}`)), 30_000);
    const read = (chunk: Buffer) => {
      log += chunk.toString();
      const m = /serving addr=127\.0\.0\.1:(\d+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    proc.stdout!.on("data", read);
    proc.stderr!.on("data", read);
    proc.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}) at start:\n${log}`));
    });
  });
  proc.removeAllListeners("exit");
  return { proc, url: `http://127.0.0.1:${got}`, port: got };
}
function stopServer(proc: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return done();
    proc.once("exit", () => done());
    proc.kill("SIGKILL");
  });
}

/** A redis-server of our own on a free loopback port (nothing saved); resolves once it answers PING. */
async function startRedis(): Promise<{ proc: ChildProcess; url: string }> {
  const free = createServer();
  await new Promise<void>((listening) => free.listen(0, "127.0.0.1", listening));
  const port = (free.address() as AddressInfo).port;
  await new Promise((closed) => free.close(closed));
  const proc = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
  const spawned = new Promise<never>((_, reject) => proc.on("error", (err) => reject(new Error(`redis-server (on the PATH) did not start: ${err}`))));
  const pong = () =>
    new Promise<boolean>((answered) => {
      const s = connect(port, "127.0.0.1");
      s.on("error", () => answered(false));
      s.on("connect", () => s.write("PING\r\n"));
      s.on("data", (d) => {
        answered(d.toString().startsWith("+PONG"));
        s.destroy();
      });
    });
  for (let i = 0; !(await Promise.race([pong(), spawned])); i++) {
    if (i >= 300 || proc.exitCode !== null) throw new Error("redis-server did not answer PING within 30 s");
    await new Promise((r) => setTimeout(r, 100));
  }
  return { proc, url: `redis://127.0.0.1:${port}` };
}

export function networkTests(h: Harness) {
  const { PAGE_URL, SERVER_URL, OUTPUT, WAIT, called } = h;

  // While an answer's tiles are played back one by one, the page shows one moment: the
  // status line, the seats' tile counts, the count and the scores are those of the
  // tile on the table, and "your turn" only once the next tile to come is the player's.
  // Checked at every change of the page (a MutationObserver), against the hand's
  // events as the server tells them (Score, include_hand_events).
  // The log and the clocks follow too: the log's lines up to the tile shown (not the
  // bots' later tiles nor the hand's end), and no seat's countdown before the last tile
  // (the match is clocked).
  // The hand is played to its end from the table: the focus is then on Deal the next hand.
  h.webTest("network: while an answer's tiles are played back, the status, tile counts, count, scores, log and clocks are those of the tile shown; at the hand's end the focus is on Deal", 90_000, async () => {
    const page = await h.open(h.at(PAGE_URL, SERVER_URL), { viewport: { width: 1280, height: 860 }, reducedMotion: "no-preference" });
    await page.check("#new-match input[name=clock]");
    await h.newMatch(page, { players: 2, bots: ["1"], handSize: "3" });
    await page.evaluate(() => {
      const w = window as unknown as { records: object[] };
      w.records = [];
      const text = (sel: string) => document.querySelector(sel)?.textContent ?? "";
      new MutationObserver(() => {
        if (!document.body.dataset.shown) return;
        w.records.push({
          hand: document.body.dataset.hand,
          placed: document.querySelectorAll("#table g.placed").length,
          inHand: document.querySelectorAll("#table g.in-hand").length,
          lit: document.querySelectorAll("#table g.in-hand.playable").length,
          opponents: [...document.querySelectorAll("#table [data-testid^=hand-size-]")].map((e) => Number(e.getAttribute("data-count"))),
          boneyard: text("#table [data-testid=boneyard]"),
          count: text("#table [data-testid=count]"),
          scores: [...document.querySelectorAll("#table [data-testid^=score-side]")].map((e) => [e.getAttribute("data-testid"), e.textContent]),
          status: text("#status"),
          live: document.querySelector("#status")?.getAttribute("aria-live"),
          log: document.querySelectorAll("#log li").length,
          onTurn: [...document.querySelectorAll("#clocks li.on-turn")].map((li) => (li as HTMLElement).dataset.seat),
        });
      }).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
    });
    // The first hand played to its end from the table.
    for (let i = 0; (await h.body(page)).phase === "PLAYING"; i++) {
      assert.ok(i < 40, "the hand did not end");
      await h.act(page);
    }
    assert.equal(await page.evaluate(() => document.activeElement?.id), "deal", "the focus on Deal the next hand at the hand's end");
    const events = (await h.serverScore(page)).handEvents;
    const plays = events.flatMap((e) => (e.kind.case === "tilePlayed" ? [e.kind.value] : []));
    type Record = { hand: string; placed: number; inHand: number; lit: number; opponents: number[]; boneyard: string; count: string; scores: [string, string][]; status: string; live: string; log: number; onTurn: string[] };
    // The log's lines with the hand's first k tiles played: its events up to the k-th tile.
    const playedAt = events.flatMap((e, j) => (e.kind.case === "tilePlayed" ? [j] : []));
    const records = (await page.evaluate(() => (window as unknown as { records: object[] }).records)) as Record[];
    const steps = records.filter((r) => r.hand === "1");
    assert.ok(new Set(steps.map((r) => r.placed)).size >= 3, `tiles played back at three steps at least: ${steps.map((r) => r.placed)}`);
    for (const r of steps) {
      const k = r.placed; // the tiles on the table: the hand's first k plays
      const at = `with ${k} tiles on the table`;
      assert.equal(r.count, en.count(plays[k - 1].count), `the count ${at}`);
      const scored = (seat: number) => plays.slice(0, k).filter((p) => p.seat === seat).reduce((sum, p) => sum + p.points, 0);
      for (const [id, words] of r.scores) {
        const side = Number(/(\d+)$/.exec(id)![1]);
        assert.equal(Number(/(-?\d+)$/.exec(words)![1]), scored(side), `side ${side}'s score ${at} ("${words}")`);
      }
      const boneyard = Number(/(\d+)/.exec(r.boneyard)![1]);
      assert.equal(k + r.inHand + r.opponents.reduce((a, b) => a + b, 0) + boneyard, 28, `every tile somewhere ${at}: ${JSON.stringify(r)}`);
      // "Your turn" (and lit tiles) only when the next tile to come is the player's own.
      const nextIsMine = plays[k] === undefined || plays[k].seat === 0;
      assert.equal(r.log, playedAt[k - 1] + 1, `the log's lines ${at}: the hand's events up to that tile`);
      if (!nextIsMine) {
        assert.deepEqual(r.onTurn, [], `no seat's countdown ${at}, the bot's tile still to come`);
        assert.equal(r.live, "off", `the status line not read out ${at}, the bot's tile still to come (the log says it)`);
        assert.ok(!YOUR_TURN.includes(r.status), `the status ${at}, the bot's tile still to come: "${r.status}"`);
        assert.equal(r.lit, 0, `no tile lit ${at}, the bot's tile still to come`);
      }
    }
    console.log(`  ${steps.length} played-back moments checked`);
  });

  // A connection cut by a TCP proxy (not setOffline, which leaves an open stream alone):
  // the page says so before the connection comes back, without a tap, and holds its
  // moves; meanwhile the player's move is made from Node; restored, the page says it is
  // back and shows the match as it now is.
  h.webTest("network: a connection cut is said at once and the moves held; back, the page says so and catches up", 90_000, async () => {
    const proxy = await h.tcpProxy(SERVER_URL);
    try {
      const page = await h.open(h.at(PAGE_URL, proxy.url));
      await h.newMatch(page, { players: 2, bots: ["1"] });
      await page.waitForFunction(() => document.body.dataset.yourTurn === "true" && document.body.dataset.watching === "yes", null, WAIT);
      assert.deepEqual(Object.values(await moves(page)).some(Boolean), true, "a move to make before the cut");
      proxy.cut();
      // The sign, within the heartbeat bound (a hang guard only: the cut is said as the
      // stream breaks), BEFORE the connection is restored.
      await page.locator("#offline", { hasText: en.reconnecting }).waitFor({ timeout: 30_000 });
      assert.equal(await page.locator("#status").innerText(), en.statusOffline, "the status says the moves wait");
      assert.deepEqual(await moves(page), { draw: false, suggest: false, lit: 0 }, "no move offered while cut off");
      await page.screenshot({ path: join(OUTPUT, "18-network-cut.png") });
      const made = await moveFromNode(h, page);
      proxy.restore();
      await page.waitForFunction(() => document.body.dataset.connected === "true", null, { timeout: 30_000 });
      await page.waitForFunction((want) => document.body.dataset.stateId === want, made, { timeout: 30_000 });
      await h.idle(page);
      assert.notEqual(await page.locator("#status").innerText(), en.statusOffline);
      if ((await h.body(page)).yourTurn === "true") assert.equal((await moves(page)).suggest, true, "the moves offered again");
      await page.screenshot({ path: join(OUTPUT, "18-network-back.png") });
      await page.locator("#offline", { hasText: en.reconnected }).waitFor({ state: "hidden", timeout: 30_000 });
    } finally {
      await proxy.close();
    }
  });

  // A connection gone silent without a word (no close, no reset: a phone left behind on
  // another network), on a server beating every 2 s (--watch-heartbeat-secs 2, said in
  // Heartbeat.interval_ms): the page takes it for lost after two heartbeats' silence,
  // says so before the connection comes back and holds its moves; thawed, it says it is
  // back and shows the move made meanwhile from Node.
  h.webTest("network: a connection gone silent is said within two heartbeats, the moves held; back, the page catches up", 90_000, async () => {
    const server = await startServer(0, ["--watch-heartbeat-secs", "2"]);
    const proxy = await silentProxy(server.url);
    try {
      const page = await h.open(h.at(PAGE_URL, proxy.url));
      await h.newMatch(page, { players: 2, bots: ["1"] });
      await page.waitForFunction(() => document.body.dataset.yourTurn === "true" && document.body.dataset.watching === "yes", null, WAIT);
      // A heartbeat heard first: the page learns the interval from it.
      await page.waitForFunction(() => document.body.dataset.heartbeatMs === "2000", null, WAIT);
      proxy.freeze();
      // Two heartbeats (4 s) and a margin: the 45 s of a server that does not say its
      // interval would fail this hang guard.
      await page.locator("#offline", { hasText: en.reconnecting }).waitFor({ timeout: 20_000 });
      assert.equal(await page.locator("#status").innerText(), en.statusOffline);
      assert.deepEqual(await moves(page), { draw: false, suggest: false, lit: 0 }, "no move offered while silent");
      const seat = await h.savedSeat(page);
      const direct = createClient(AllFivesServiceDesc, createGrpcWebTransport({ baseUrl: server.url }));
      const view = (await direct.score(seat, { timeoutMs: 10_000 })).view!;
      const [move] = view.legalMoves;
      const by = { state: seat.state, seat: seat.viewer, credential: seat.credential };
      const answer = move ? await direct.play({ ...by, tile: move.tile, end: move.end }, { timeoutMs: 10_000 }) : await direct.draw(by, { timeoutMs: 10_000 });
      proxy.thaw();
      await page.waitForFunction(() => document.body.dataset.connected === "true", null, { timeout: 30_000 });
      await page.waitForFunction((want) => document.body.dataset.stateId === want, b64(answer.view!.stateId), { timeout: 30_000 });
    } finally {
      await proxy.close();
      await stopServer(server.proc);
    }
  });

  // One call without an answer (routed to fail once) while the page's stream stays up,
  // on a server that does not age its connections (beating every 60 s): the page says its
  // move was lost and holds the moves, opens its stream again at once, and at that
  // stream's first message says it is back and offers them again. The match (bots only) played to its end from Node: its
  // stream closed, a Rematch without an answer leaves Rematch to tap again (no
  // "trying again" for good), and the second tap makes the new match.
  h.webTest("network: one call without an answer while the stream is up: back at once (its stream opened again); a bots' match over: a Rematch without an answer can be tapped again", 90_000, async () => {
    // A heartbeat longer than the hang guard below: the page must not wait for it.
    const server = await startServer(0, ["--watch-heartbeat-secs", "60"]);
    try {
      const page = await h.open(h.at(PAGE_URL, server.url));
      await h.newMatch(page, { players: 2, bots: ["1"], target: 25 });
      await page.waitForFunction(() => document.body.dataset.yourTurn === "true" && document.body.dataset.watching === "yes", null, WAIT);
      // Every value data-connected takes, recorded (the time offline may be short).
      await page.evaluate(() => {
        const w = window as unknown as { connected: string[] };
        w.connected = [];
        new MutationObserver(() => {
          const c = document.body.dataset.connected ?? "";
          if (w.connected.at(-1) !== c) w.connected.push(c);
        }).observe(document.body, { attributes: true, attributeFilter: ["data-connected"] });
      });
      await page.route(/\/allfives\.v1\.AllFivesService\/(Play|Draw)$/, (route) => route.abort("connectionrefused"), { times: 1 });
      await h.act(page);
      // Meanwhile the player goes on to the language menu: coming back takes no focus.
      await page.focus("#lang");
      // Back at once: the page opens its stream again, whose first message says so (20 s
      // is a hang guard, well under the server's 60 s heartbeat).
      await page.waitForFunction(() => document.body.dataset.connected === "true", null, { timeout: 20_000 });
      await h.idle(page);
      assert.equal(await page.evaluate(() => document.activeElement?.id), "lang", "the focus left where the player put it");
      const connected = await page.evaluate(() => (window as unknown as { connected: string[] }).connected);
      assert.deepEqual(connected, ["false", "true"], "the call's lost answer said, then the page back");
      assert.equal((await h.body(page)).yourTurn, "true", "still the player's turn (the move never reached the server)");
      assert.equal((await moves(page)).suggest, true, "the moves offered again");
      assert.notEqual(await page.locator("#status").innerText(), en.statusOffline);
      // The match played to its end from Node, with the page's own seat.
      const direct = createClient(AllFivesServiceDesc, createGrpcWebTransport({ baseUrl: server.url }));
      const seat = await h.savedSeat(page);
      let state = seat.state;
      const by = () => ({ state, seat: seat.viewer, credential: seat.credential });
      for (let i = 0; ; i++) {
        assert.ok(i < 1000, "the match did not end");
        const view = (await direct.score({ state, viewer: seat.viewer, credential: seat.credential }, { timeoutMs: 10_000 })).view!;
        if (view.phase === Phase.OVER) break;
        const [move] = view.legalMoves;
        const answer =
          view.phase !== Phase.PLAYING
            ? await direct.deal({ state, viewer: seat.viewer, credential: seat.credential }, { timeoutMs: 10_000 })
            : move
              ? await direct.play({ ...by(), tile: move.tile, end: move.end }, { timeoutMs: 10_000 })
              : await direct.draw(by(), { timeoutMs: 10_000 });
        state = answer.state;
      }
      await page.waitForFunction(() => document.body.dataset.phase === "OVER", null, WAIT);
      await h.idle(page);
      const finished = (await h.body(page)).stateId;
      await page.route(/\/allfives\.v1\.AllFivesService\/NewGame$/, (route) => route.abort("connectionrefused"), { times: 1 });
      await page.click("#rematch");
      await h.idle(page);
      assert.equal(await page.locator("#error").innerText(), en.moveLost, "the lost answer said");
      assert.notEqual(await page.locator("#offline").innerText(), en.reconnecting, "no 'trying again' with no stream to try");
      assert.ok(await page.locator("#rematch").isEnabled(), "Rematch to tap again");
      assert.equal((await h.body(page)).stateId, finished);
      await page.click("#rematch");
      await h.idle(page);
      assert.equal((await h.body(page)).phase, "PLAYING", "the rematch made at the second tap");
    } finally {
      await stopServer(server.proc);
    }
  });

  // The server stopped (the page says so without a tap, its moves held), then started
  // again on the same port: a new random token key and an empty memory store. The page
  // shows one state: the player's sentence and the new-match form, the old table gone;
  // a new match from there plays.
  h.webTest("network: the server down is said without a tap; started again, the page shows one state, the match gone and a way on", 90_000, async () => {
    let server = await startServer(0);
    try {
      const page = await h.open(h.at(PAGE_URL, server.url));
      await h.newMatch(page, { players: 2, bots: ["1"] });
      await page.waitForFunction(() => document.body.dataset.yourTurn === "true" && document.body.dataset.watching === "yes", null, WAIT);
      // Another tab saves another match meanwhile (localStorage is every tab's): the
      // lost match is forgotten, that one kept.
      await page.evaluate(() => {
        const key = Object.keys(localStorage).find((k) => k.startsWith("allfives-web:"))!;
        localStorage.setItem(key, JSON.stringify({ ...JSON.parse(localStorage.getItem(key)!), match: "another-tabs-match" }));
      });
      await stopServer(server.proc);
      await page.locator("#offline", { hasText: en.reconnecting }).waitFor({ timeout: 30_000 });
      assert.equal(await page.locator("#status").innerText(), en.statusOffline, "the status says the moves wait, not whose turn");
      assert.deepEqual(await moves(page), { draw: false, suggest: false, lit: 0 }, "no move offered with the server down");
      assert.equal(await page.locator("#error").isVisible(), false, "no developer's sentence: the reconnecting line says it");
      server = await startServer(server.port);
      // Its waits between tries are 10 s at most: a generous hang guard.
      await page.locator("#error", { hasText: en.matchGone }).waitFor({ timeout: 45_000 });
      assert.ok(await page.locator("#game").isHidden(), "the old table is gone");
      assert.equal(await page.locator("#table g.in-hand").count(), 0, "no tile drawn, shown or hidden");
      assert.ok(await page.locator("#draw").isHidden() && (await page.locator("#suggest").isHidden()), "no Draw nor Suggest");
      assert.equal(await page.locator("#offline").innerText(), "", "no reconnecting line over it");
      assert.equal(await page.locator("#status").innerText(), "", "no status of the match gone");
      assert.ok(await page.locator("#new-match").isVisible(), "the way on: the new-match form");
      await page.screenshot({ path: join(OUTPUT, "18-network-match-gone.png") });
      const saved = await page.evaluate(() => [sessionStorage, localStorage].map((store) => Object.keys(store).filter((k) => k.startsWith("allfives-web:")).map((k) => JSON.parse(store.getItem(k)!).match)));
      assert.deepEqual(saved, [[], ["another-tabs-match"]], "the lost match's token forgotten, another tab's match kept");
      await h.newMatch(page, { players: 2, bots: ["1"] });
      assert.equal((await h.body(page)).phase, "PLAYING", "a new match plays");
      assert.ok(await page.locator("#error").isHidden());
    } finally {
      await stopServer(server.proc);
    }
  });

  // Two replicas of one deployment (one Redis, one key ring) behind a gateway (a TCP
  // proxy the test runs): a friends' match, the page's stream on replica A, A killed
  // (SIGKILL) mid-hand while the proxy still sends to it (the page says it is trying
  // again), moves made on replica B from Node while the page cannot hear, then the
  // proxy sends to B: the page watches again by itself from its last state, through the
  // same address, and shows every move made on B once (log lines, tiles, scores equal
  // B's Score), plays its own turn by a click, and takes Bob's next move pushed by B.
  h.webTest("network: a replica killed mid-hand: the page goes on on the other replica by itself, every change once, and plays on", 90_000, async () => {
    const started: ChildProcess[] = [];
    let proxy: Awaited<ReturnType<Harness["tcpProxy"]>> | undefined;
    try {
      const redis = await startRedis();
      started.push(redis.proc);
      // One deployment: one Redis, one key ring, the page's origin allowed.
      const store = ["--match-store", "redis", "--match-store-url", redis.url];
      const keys = `1:${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex")}`;
      const flags = ["--keys", keys, "--cors-origins", new URL(PAGE_URL).origin];
      const replica = () => startServer(0, flags, store).then((r) => (started.push(r.proc), r));
      const a = await replica();
      const b = await replica();
      proxy = await h.tcpProxy(a.url);
      const onA = createClient(AllFivesServiceDesc, createGrpcWebTransport({ baseUrl: a.url }));
      const onB = createClient(AllFivesServiceDesc, createGrpcWebTransport({ baseUrl: b.url }));
      const page = await h.open(h.at(PAGE_URL, proxy.url));
      await h.newMatch(page, { name: "Ana", players: 2, bots: ["friend"], target: 100 });
      // Bob takes seat 2 from Node (on A), by the invite's token.
      const invite = new URL(await page.locator("#invite-link").inputValue()).hash.replace(/^#join=/, "");
      const claimed = await onA.claimSeat(
        { state: Buffer.from(invite.replace(/-/g, "+").replace(/_/g, "/"), "base64"), seat: 1, claimKey: crypto.getRandomValues(new Uint8Array(16)), displayName: "Bob" },
        { timeoutMs: 10_000 },
      );
      await page.waitForFunction(() => document.body.dataset.phase === "PLAYING", null, WAIT);
      const ana = await h.savedSeat(page);
      const credential = [ana.credential, claimed.credential!.credential];
      // The seat on turn's move from Node on `api` (its first legal tile, else a draw).
      let state = ana.state;
      const nodeMove = async (api: typeof onA) => {
        const turn = (await api.score({ state, viewer: 0, credential: credential[0] }, { timeoutMs: 10_000 })).view!.turn!;
        const by = { state, seat: turn, credential: credential[turn] };
        const [move] = (await api.score({ state, viewer: turn, credential: by.credential }, { timeoutMs: 10_000 })).view!.legalMoves;
        const answer = move ? await api.play({ ...by, tile: move.tile, end: move.end }, { timeoutMs: 10_000 }) : await api.draw(by, { timeoutMs: 10_000 });
        state = answer.state;
        return { seat: turn, stateId: b64(answer.view!.stateId) };
      };
      const score = (api: typeof onA) => api.score({ state, viewer: 0, credential: credential[0], includeHandEvents: true }, { timeoutMs: 10_000 });
      // (A hang guard: what the page shows, said if it never comes.)
      const shows = (stateId: string, what: string) =>
        page.waitForFunction((want) => document.body.dataset.stateId === want, stateId, { timeout: 30_000 }).catch(async () => {
          const { stateId: shown, connected } = await h.body(page).then((d) => d as { stateId?: string; connected?: string });
          assert.fail(`${what}: the page shows state ${shown} (connected: ${connected}), not ${stateId}`);
        });
      // Played on A (the page by clicks, Bob from Node) until two tiles are down and it is Bob's turn.
      for (let i = 0; ; i++) {
        assert.ok(i < 40, "two tiles down with Bob on turn (a hang guard)");
        const view = (await score(onA)).view!;
        assert.equal(view.phase, Phase.PLAYING, "the first hand still played");
        if (view.turn === 1 && view.layout.length >= 2) {
          await shows(b64(view.stateId), "the page at A's state before the kill");
          break;
        }
        if (view.turn === 0) {
          await h.act(page);
          state = (await h.savedSeat(page)).state;
        } else await shows((await nodeMove(onA)).stateId, "Bob's move on A pushed");
      }
      await page.waitForFunction(() => document.body.dataset.watching === "yes", null, WAIT);
      const before = (await score(onA)).handEvents.length;
      // What the page says from here: every value of data-connected and of the
      // reconnecting line, every error shown; a mark a reload would wipe.
      await page.evaluate(() => {
        const w = window as unknown as { said: string[]; errors: string[]; sameDocument: boolean };
        w.sameDocument = true;
        w.said = [];
        w.errors = [];
        const note = () => {
          const now = `${document.body.dataset.connected ?? ""}|${document.getElementById("offline")?.textContent ?? ""}`;
          if (w.said.at(-1) !== now) w.said.push(now);
          const error = document.getElementById("error")!;
          if (!error.hidden && error.textContent && w.errors.at(-1) !== error.textContent) w.errors.push(error.textContent);
        };
        note();
        new MutationObserver(note).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
      });
      const calls = called.get(page)!;
      const callsAtKill = calls.length;
      await stopServer(a.proc); // SIGKILL: no drain, the page's stream on A breaks
      // The gateway has not yet noticed: the page's next tries reach the dead A.
      await page.locator("#offline", { hasText: en.reconnecting }).waitFor({ timeout: 30_000 });
      assert.equal(await page.locator("#status").innerText(), en.statusOffline, "the moves wait");
      // Moves made on B while the page cannot hear (Bob's, then as many as it takes to
      // come to the page's turn, its own seat's played from Node), then the gateway sends to B.
      const missed: { seat: number; stateId: string }[] = [];
      while (missed.length < 3 || (await score(onB)).view!.turn !== 0) {
        assert.ok(missed.length < 30, "the page's turn again (a hang guard)");
        missed.push(await nodeMove(onB));
      }
      assert.equal(missed[0].seat, 1, "Bob's move first");
      proxy.retarget(b.url);
      await shows(missed.at(-1)!.stateId, `the ${missed.length} moves made on B while the page could not hear`);
      await page.waitForFunction(() => document.body.dataset.connected === "true", null, { timeout: 30_000 });
      await h.idle(page);
      // What the page shows is B's match, every change once.
      const matches = async (when: string) => {
        const s = await score(onB);
        const view = s.view!;
        assert.equal(view.phase, Phase.PLAYING, `the hand still played ${when}`);
        const shown = await page.evaluate(() => ({
          stateId: document.body.dataset.stateId,
          log: [...document.querySelectorAll("#log li")].map((li) => li.textContent),
          placed: document.querySelectorAll("#table g.placed").length,
          inHand: document.querySelectorAll("#table g.in-hand").length,
          opponent: [...document.querySelectorAll("#table [data-testid^=hand-size-]")].map((e) => Number(e.getAttribute("data-count"))),
          boneyard: Number(/(\d+)/.exec(document.querySelector("#table [data-testid=boneyard]")?.textContent ?? "")?.[1]),
          scores: [...document.querySelectorAll("#table [data-testid^=score-side]")].map((e) => Number(/(-?\d+)$/.exec(e.textContent ?? "")?.[1])),
        }));
        assert.equal(shown.stateId, b64(view.stateId), `the page at B's latest state ${when}`);
        assert.equal(shown.log.length, s.handEvents.length, `the log's lines ${when}: one a hand event, none doubled or missed (${JSON.stringify(shown.log)})`);
        assert.deepEqual(
          [shown.placed, shown.inHand, shown.opponent, shown.boneyard, shown.scores],
          [view.layout.length, view.hand.length, [view.handSizes[1]], view.boneyardSize, view.scores.map((x) => x.score)],
          `tiles placed, in hand, Bob's, the boneyard and the scores ${when}`,
        );
        return s;
      };
      const caughtUp = await matches("after the catch-up");
      assert.equal(caughtUp.handEvents.length, before + missed.length, "every move made on B is one of the hand's events");
      assert.ok(
        (await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)) === true,
        "the same document all along (no reload)",
      );
      assert.ok(calls.slice(callsAtKill).includes("Watch"), "watched again");
      assert.equal(calls.slice(callsAtKill).filter((m) => m !== "Watch").length, 0, `only Watch asked since the kill: ${calls.slice(callsAtKill)}`);
      // The connection lost was said, then cleared.
      const said = await page.evaluate(() => (window as unknown as { said: string[] }).said);
      assert.ok(said.some((s) => s.startsWith("false|") && s.includes(en.reconnecting)), `the lost connection said: ${JSON.stringify(said)}`);
      assert.notEqual(await page.locator("#offline").innerText(), en.reconnecting, "no reconnecting line left");
      assert.notEqual(await page.locator("#status").innerText(), en.statusOffline);
      assert.deepEqual(await page.evaluate(() => (window as unknown as { errors: string[] }).errors), [], "no error shown at any time (the match gone, a refusal)");
      assert.equal((await h.body(page)).yourTurn, "true", "the page's turn");
      await page.screenshot({ path: join(OUTPUT, "18-network-replica.png") });
      // The page's own turn, by clicks, through the gateway to B: accepted.
      for (let i = 0; (await h.body(page)).yourTurn === "true"; i++) {
        assert.ok(i < 20, "the page's turn passed (a hang guard)");
        await h.act(page);
        assert.ok(await page.locator("#error").isHidden(), "the page's move accepted");
      }
      state = (await h.savedSeat(page)).state;
      const played = await matches("after the page's own move");
      assert.equal(played.handEvents.length > caughtUp.handEvents.length, true, "the page's move is on B");
      // Bob's next move on B, pushed to the page on its stream there.
      const asked = calls.filter((m) => m !== "Watch").length;
      const bobs = await nodeMove(onB);
      assert.equal(bobs.seat, 1);
      await shows(bobs.stateId, "Bob's move on B pushed");
      await h.idle(page);
      await matches("after Bob's move pushed by B");
      assert.equal(calls.filter((m) => m !== "Watch").length, asked, "Bob's move pushed, not asked for");
    } finally {
      await proxy?.close();
      await Promise.all(started.map(stopServer));
    }
  });

  // Hidden (visibility emulated), the tab's title says when it is the player's turn, and
  // a notification once a turn if the player asked (the checkbox); shown, the title is
  // the page's own. Starting a match puts the focus on the table's first control.
  // Hidden, an answer is not played back (the tab's timers are throttled): its end shown
  // at once. Notifications refused, the page says so where it is seen (the start screen).
  h.webTest("network: the turn told while the tab is hidden (title, notification, no playback), focus on the table after the start; notifications refused said on the start screen", 60_000, async () => {
    const page = await h.open(h.at(PAGE_URL, SERVER_URL), { viewport: { width: 1280, height: 860 }, reducedMotion: "no-preference" });
    await page.evaluate(() => {
      (window as unknown as { Notification: unknown }).Notification = class {
        static permission = "default";
        static requestPermission = () => Promise.resolve("denied");
      };
    });
    // How to play, reachable before a match too.
    await page.click("#how-to summary");
    assert.ok(await page.locator("#how-to [data-t=howToSettle]").isVisible(), "How to play open on the start screen");
    await page.click("#notify"); // (the page unticks it: page.check would throw)
    await page.locator("#notify-note", { hasText: en.notifyDenied }).waitFor(WAIT);
    await page.screenshot({ path: join(OUTPUT, "18-network-start.png"), fullPage: true });
    await page.click("#how-to summary");
    assert.ok(await page.locator("#notify-note").isVisible(), "said where it is seen");
    assert.equal(await page.locator("#notify").isChecked(), false);
    await page.evaluate(() => {
      // The browser's notifications, recorded (and allowed) instead of shown.
      const w = window as unknown as { told: string[]; Notification: unknown };
      w.told = [];
      w.Notification = class {
        static permission = "granted";
        static requestPermission = () => Promise.resolve("granted");
        constructor(_title: string, options?: { body?: string }) {
          w.told.push(options?.body ?? "");
        }
      };
    });
    await page.check("#notify");
    await h.newMatch(page, { players: 2, bots: ["1"] });
    await page.waitForFunction(() => document.body.dataset.yourTurn === "true", null, WAIT);
    const focused = await page.evaluate(() => {
      const a = document.activeElement as HTMLElement | null;
      return a?.id || a?.getAttribute("class") || a?.tagName;
    });
    assert.match(String(focused), /^(draw|in-hand.*)$/, "the focus on the table's first control after the start");
    assert.equal(await page.title(), en.appTitle);
    const hide = (hidden: boolean) =>
      page.evaluate((hidden) => {
        Object.defineProperty(document, "hidden", { configurable: true, get: () => hidden });
        Object.defineProperty(document, "visibilityState", { configurable: true, get: () => (hidden ? "hidden" : "visible") });
        document.dispatchEvent(new Event("visibilitychange"));
      }, hidden);
    await hide(true);
    assert.equal(await page.title(), `● ${en.titleYourTurn} — ${en.appTitle}`, "hidden on the player's turn");
    await page.evaluate(() => {
      const w = window as unknown as { steps: number };
      w.steps = 0;
      new MutationObserver(() => void (document.body.dataset.shown && w.steps++)).observe(document.body, { attributes: true, attributeFilter: ["data-shown"] });
    });
    // A move while hidden (the bot answers): the player's turn again, told once.
    await h.act(page);
    await page.waitForFunction(() => document.body.dataset.yourTurn === "true", null, WAIT);
    assert.equal(await page.title(), `● ${en.titleYourTurn} — ${en.appTitle}`);
    const told = await page.evaluate(() => (window as unknown as { told: string[] }).told);
    assert.deepEqual(told, [en.titleYourTurn, en.titleYourTurn], "a notification a turn");
    assert.equal(await page.evaluate(() => (window as unknown as { steps: number }).steps), 0, "no tile played back while hidden");
    await hide(false);
    assert.equal(await page.title(), en.appTitle, "shown: the page's own title");
  });

  // Two friends play a short match (target 25); at its end Ana's Rematch (the server's
  // Rematch) takes her page to the new match, and Bob's page, told by its stream, says
  // "Ana offers a rematch" with Accept; accepted, both are in the new match in the
  // same seats, and a move on one is pushed to the other.
  h.webTest("network: a friends' rematch offered on one page and accepted on the other: both in the new match, same seats, moves pushed", 120_000, async () => {
    const ana = await h.open(h.at(PAGE_URL, SERVER_URL));
    await h.newMatch(ana, { name: "Ana", players: 2, bots: ["friend"], target: 25 });
    const bob = await h.open(await ana.locator("#invite-link").inputValue());
    await bob.fill("#join input[name=name]", "Bob");
    await bob.click("#join button[type=submit]");
    await h.idle(bob);
    const data = (page: Page) => page.evaluate(() => ({ ...document.body.dataset }));
    const began = Date.now();
    while ((await data(ana)).phase !== "OVER") {
      assert.ok(Date.now() - began < 100_000, "the match did not end (a hang guard)");
      const [a, b] = [await data(ana), await data(bob)];
      if (a.stateId !== b.stateId) await ana.waitForTimeout(100); // a push on its way
      else if (a.phase === "DEALING" && a.hand !== "0") await h.act(ana);
      else if (a.yourTurn === "true") await h.act(ana);
      else if (b.yourTurn === "true") await h.act(bob);
      else await ana.waitForTimeout(100);
    }
    await bob.waitForFunction(() => document.body.dataset.phase === "OVER", null, WAIT);
    const finished = (await data(ana)).match;
    // A second tab of Ana's seat (the match saved in localStorage), left on the finished match.
    const ana2 = await ana.context().newPage();
    await ana2.goto(ana.url());
    await h.idle(ana2);
    assert.equal((await data(ana2)).match, finished);
    await ana.click("#rematch");
    await h.idle(ana);
    assert.equal(await ana.locator("#error").isVisible(), false, "Ana's rematch made");
    const rematch = (await data(ana)).match;
    assert.notEqual(rematch, finished, "Ana's page in a new match");
    assert.equal((await data(ana)).seat, "0");
    // Bob's page is told, and offers to accept.
    await bob.locator("#rematch-offer", { hasText: "Ana offers a rematch: the same table again." }).waitFor(WAIT);
    assert.equal(await bob.locator("#rematch").innerText(), en.acceptRematch);
    assert.match(await bob.locator("#status").innerText(), /Ana offers a rematch: the same table again\.$/, "said on the status line too");
    await bob.screenshot({ path: join(OUTPUT, "18-network-rematch-offer.png"), fullPage: true });
    // Reloaded, Bob's page is told again (the server tells a stream opened later).
    await bob.reload();
    await h.idle(bob);
    await bob.locator("#rematch-offer", { hasText: "Ana offers a rematch: the same table again." }).waitFor(WAIT);
    // Ana deals before Bob accepts: accepting, Bob's page shows the hand dealt, its log too.
    await ana.click("#deal");
    await h.idle(ana);
    await bob.click("#rematch");
    await h.idle(bob);
    assert.deepEqual([(await data(bob)).match, (await data(bob)).seat], [rematch, "1"], "Bob in the new match, in his seat");
    assert.ok(called.get(bob)!.includes("Rematch") && !called.get(bob)!.includes("NewGame"), "Bob's page accepted by Rematch");
    await bob.waitForFunction((want) => document.body.dataset.stateId === want, (await data(ana)).stateId, WAIT);
    assert.equal((await data(bob)).phase, "PLAYING", "the hand Ana dealt");
    assert.ok((await bob.locator("#log li").count()) > 0, "Bob's log tells the hand so far");
    assert.match(await bob.locator("#log li").first().innerText(), /^Hand 1 dealt; /, "Bob's log tells the hand from its deal");
    const mover = (await data(ana)).yourTurn === "true" ? ana : bob;
    const other = mover === ana ? bob : ana;
    const callsBefore = called.get(other)!.filter((m) => m !== "Watch").length;
    await h.act(mover);
    await other.waitForFunction((want) => document.body.dataset.stateId === want, (await data(mover)).stateId, WAIT);
    assert.equal(called.get(other)!.filter((m) => m !== "Watch").length, callsBefore, "the move pushed, not asked for");
    // Ana's other tab heard Ana's own ask on its stream all along: no offer from herself.
    assert.ok(await ana2.locator("#rematch-offer").isHidden(), "no offer from the tab's own seat");
    assert.equal(await ana2.locator("#rematch").innerText(), en.rematch);
  });

  // Two seats at one screen (a hot seat) and a friend on another device (Bob, from
  // Node): the match played out from Node, the page's Rematch asks the server's Rematch
  // for each seat at the screen (with each seat's credential), and Bob's Rematch lands
  // in the same new match: nobody left waiting alone in another.
  h.webTest("network: a hot seat with a friend on another device: Rematch asks the server's Rematch for each seat at the screen, the friend lands in the same match", 90_000, async () => {
    const page = await h.open(h.at(PAGE_URL, SERVER_URL));
    await h.newMatch(page, { name: "Ana", players: 3, bots: ["here", "friend"], target: 25 });
    const invite = new URL(await page.locator("#invite-link").inputValue()).hash.replace(/^#join=/, "");
    const claimed = await h.client.claimSeat(
      { state: Buffer.from(invite.replace(/-/g, "+").replace(/_/g, "/"), "base64"), seat: 2, claimKey: crypto.getRandomValues(new Uint8Array(16)), displayName: "Bob" },
      { timeoutMs: 10_000 },
    );
    // The page deals the first hand once Bob's seat is taken.
    await page.waitForFunction(() => document.body.dataset.phase === "PLAYING", null, WAIT);
    const saved = await page.evaluate(() => {
      const key = Object.keys(localStorage).find((k) => k.startsWith("allfives-web:"))!;
      return JSON.parse(localStorage.getItem(key)!) as { state: string; local: [number, string][] };
    });
    const credential = new Map<number, Uint8Array>(saved.local.map(([seat, c]) => [seat, Uint8Array.from(Buffer.from(c, "base64"))]));
    credential.set(2, claimed.credential!.credential);
    let state: Uint8Array = Uint8Array.from(Buffer.from(saved.state, "base64"));
    const began = Date.now();
    for (;;) {
      assert.ok(Date.now() - began < 60_000, "the match did not end (a hang guard)");
      const view = (await h.client.score({ state, viewer: 0, credential: credential.get(0)! }, { timeoutMs: 10_000 })).view!;
      if (view.phase === Phase.OVER) break;
      if (view.phase !== Phase.PLAYING) {
        state = (await h.client.deal({ state, viewer: 0, credential: credential.get(0)! }, { timeoutMs: 10_000 })).state;
        continue;
      }
      const seat = view.turn!;
      const by = { state, seat, credential: credential.get(seat)! };
      const [move] = (await h.client.score({ state, viewer: seat, credential: by.credential }, { timeoutMs: 10_000 })).view!.legalMoves;
      state = (move ? await h.client.play({ ...by, tile: move.tile, end: move.end }, { timeoutMs: 10_000 }) : await h.client.draw(by, { timeoutMs: 10_000 })).state;
    }
    await page.waitForFunction(() => document.body.dataset.phase === "OVER", null, WAIT);
    await h.idle(page);
    const finished = page.evaluate(() => document.body.dataset.match);
    const before = called.get(page)!.length;
    // Both press Rematch at once: the page's taps and Bob's call from Node together.
    const [bob] = await Promise.all([
      h.client.rematch({ state, seat: 2, credential: credential.get(2)! }, { timeoutMs: 10_000 }),
      page.click("#rematch").then(() => h.idle(page)),
    ]);
    await h.idle(page);
    const asked = called.get(page)!.slice(before).filter((m) => m !== "Watch" && m !== "Score");
    assert.deepEqual(asked, ["Rematch", "Rematch"], "the server's Rematch, once for each seat at the screen");
    const rematch = await page.evaluate(() => document.body.dataset.match);
    assert.notEqual(rematch, await finished);
    assert.equal(bob.view!.matchId, rematch, "Bob's Rematch in the same new match");
    assert.equal(bob.credential!.seat, 2, "Bob in his seat");
    const now = await page.evaluate(() => {
      const key = Object.keys(localStorage).find((k) => k.startsWith("allfives-web:"))!;
      return JSON.parse(localStorage.getItem(key)!) as { match: string; local: [number, string][] };
    });
    assert.deepEqual([now.match, now.local.map(([seat]) => seat).sort()], [rematch, [0, 1]], "both seats at the screen kept, in the new match");
  });

  // A friend's match made on a phone: the invite in view and focused, with its QR code.
  h.webTest("network: on a phone, the invite just made is in view and focused, with a QR code of the link", 60_000, async () => {
    const page = await h.open(h.at(PAGE_URL, SERVER_URL), h.phone);
    await h.newMatch(page, { name: "Ana", players: 2, bots: ["friend"] });
    const link = page.locator("#invite-link");
    await link.waitFor(WAIT);
    // Read at once (the hand's end's body is written anew on each render).
    const box = await page.evaluate(() => {
      const r = document.getElementById("invite-link")!.getBoundingClientRect();
      return { y: r.y, height: r.height };
    });
    const height = page.viewportSize()!.height;
    assert.ok(box.y >= 0 && box.y + box.height <= height, `the invite link in view: y ${box.y} of ${height}`);
    const focused = await page.evaluate(() => document.activeElement?.id);
    assert.ok(focused === "share-invite" || focused === "copy-invite", `focus on the invite's button: ${focused}`);
    const qr = page.locator("[data-testid=invite-qr] svg");
    assert.equal(await qr.count(), 1, "a QR code");
    // Its dark modules (one square of 10 units each in the path) are those of the link's
    // code (uqr's own encoding of the link in the field, the page's options).
    const d = (await qr.locator("path").getAttribute("d")) ?? "";
    const drawn = [...d.matchAll(/M(\d+),(\d+)h10v10h-10z/g)].map((m) => `${Number(m[2]) / 10},${Number(m[1]) / 10}`);
    const want = encode(await link.inputValue(), { ecc: "L", border: 2 });
    const dark = want.data.flatMap((row, r) => row.flatMap((on, c) => (on ? [`${r},${c}`] : [])));
    assert.ok(dark.length > 100, "a code of the link");
    assert.deepEqual(drawn, dark, "the QR code's modules are the link's");
    assert.equal(await page.locator("[data-testid=invite-qr]").getAttribute("aria-label"), en.qrLabel);
    await page.screenshot({ path: join(OUTPUT, "18-network-invite-phone.png"), scale: "css" });
  });
}
