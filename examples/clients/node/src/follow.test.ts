// follow (src/follow.ts) against real servers of the test's own (ALLFIVES_BIN, the
// allfives server binary; redis-server on PATH): two replicas on one Redis behind a
// proxy the test runs, the follower's replica killed mid-match; a connection gone silent
// behind the proxy, found by the 2 s bound a heartbeat set (--watch-heartbeat-secs 1);
// a match over, an aborted follow, a final refusal. (Follow through connections aged
// every second is device.ts's run in .ci/clients.) A mover moves for both seats straight
// to a server; the follower must see every change once, in order, to the match's end.
// Nothing is timed: every wait is a hang guard.
//
//   npm run build && ALLFIVES_BIN=/path/to/allfives node --test dist/follow.test.js

import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync, mkdtempSync } from "node:fs";
import { createServer, connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { AllFivesService, ErrorReason, Phase, type GameView, type WatchChange } from "./gen/allfives/v1/allfives_pb.js";
import { follow, followBackoff, reasonOf, WatchSilentError, type FollowOptions, type FollowPolicy } from "./follow.js";

type Api = Client<typeof AllFivesService>;
const fast: FollowPolicy = { livenessMs: 30_000, firstBackoffMs: 20, maxBackoffMs: 200 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const closing: (() => void)[] = [];
after(() => closing.reverse().forEach((close) => close()));

/** A hang guard: polls ok until it holds, failing after `seconds`. */
async function waitFor(what: string, ok: () => boolean, seconds = 60): Promise<void> {
  for (let i = 0; i < seconds * 10; i++) {
    if (ok()) return;
    await sleep(100);
  }
  assert.fail(`${what}: not within ${seconds} s`);
}

const bin = process.env.ALLFIVES_BIN;
const skip = bin ? false : "ALLFIVES_BIN is not set (.ci/clients sets it)";
const dir = mkdtempSync(join(tmpdir(), "allfives-follow-"));
const randomKeys = () => `1:${randomBytes(32).toString("hex")}`;

/** The server binary on a port it picks; kill() is SIGKILL. */
async function startServer(args: string[], keys = randomKeys()): Promise<{ port: number; kill: () => void }> {
  const log = join(dir, `server-${randomBytes(4).toString("hex")}.log`);
  const { openSync } = await import("node:fs");
  const fd = openSync(log, "w");
  const child = spawn(bin!, ["--addr", "127.0.0.1:0", "--metrics-addr", "off", "--shutdown-delay-ms", "0", ...args], {
    stdio: ["ignore", fd, fd],
    env: { ...process.env, ALLFIVES_KEYS: keys },
  });
  const kill = () => child.kill("SIGKILL");
  closing.push(kill);
  let port = 0;
  await waitFor("the server serving", () => {
    assert.equal(child.exitCode, null, "the server exited at start");
    const m = /serving addr=127\.0\.0\.1:(\d+)/.exec(readFileSync(log, "utf8"));
    port = m ? Number(m[1]) : 0;
    return port > 0;
  }, 30);
  return { port, kill };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

async function startRedis(): Promise<string> {
  const port = await freePort();
  const child: ChildProcess = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
    stdio: "ignore",
  });
  closing.push(() => child.kill("SIGKILL"));
  let pong = false;
  const ping = () => {
    const s = connect(port, "127.0.0.1");
    s.on("error", () => s.destroy());
    s.on("connect", () => s.write("PING\r\n"));
    s.on("data", (d) => ((pong = d.toString().startsWith("+PONG")), s.destroy()));
  };
  await waitFor("redis-server answering PING", () => (pong || ping(), pong), 30);
  return `redis://127.0.0.1:${port}`;
}

/** A TCP proxy the test steers: each connection goes to `upstream` (changed for the
 * connections after); silence() makes every connection open now stop forwarding both
 * ways while staying open (a half-open network). */
class Proxy {
  upstream: number;
  port = 0;
  private links: { a: Socket; b: Socket; silent: boolean }[] = [];
  private server = createServer((a) => {
    const b = connect(this.upstream, "127.0.0.1");
    const link = { a, b, silent: false };
    this.links.push(link);
    const close = () => {
      if (!link.silent) (a.destroy(), b.destroy()); // a silent link stays open
    };
    for (const [from, to] of [[a, b], [b, a]]) {
      from.on("data", (d) => link.silent || to.write(d)); // silent: read and dropped
      from.on("close", close);
      from.on("error", close);
    }
  });

  constructor(upstream: number) {
    this.upstream = upstream;
  }

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.port = (this.server.address() as { port: number }).port;
    closing.push(() => (this.server.close(), this.links.forEach((l) => (l.a.destroy(), l.b.destroy()))));
    return this;
  }

  silence(): void {
    this.links.forEach((l) => (l.silent = true));
  }
}

const api = (port: number, sessionManager?: Http2SessionManager): Api =>
  createClient(AllFivesService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}`, sessionManager }));
const CALL = { timeoutMs: 10_000 };

/** Moves for both seats of a two-human match, straight to its server. */
class Mover {
  creds = new Map<number, Uint8Array>();
  state: Uint8Array = new Uint8Array();
  view!: GameView;
  made: string[] = []; // every state id, in order

  constructor(readonly api: Api) {}

  async start(): Promise<this> {
    const r = await this.api.newGame({ rules: { players: 2, target: 100 }, seats: [{ claim: true }, { claim: true }], viewer: 0 }, CALL);
    r.credentials.forEach((c) => this.creds.set(c.seat, c.credential));
    this.take(r);
    return this;
  }

  private take(r: { state: Uint8Array; view?: GameView }) {
    this.state = r.state;
    this.view = r.view!;
    this.made.push(hex(this.view.stateId));
  }

  get over(): boolean {
    return this.view.phase === Phase.OVER;
  }

  /** One deal, play or draw. */
  async step(): Promise<void> {
    const state = this.state;
    if (this.view.phase === Phase.DEALING) return this.take(await this.api.deal({ state, viewer: 0, credential: this.creds.get(0) }, CALL));
    const seat = this.view.turn!;
    const credential = this.creds.get(seat)!;
    const mine = (await this.api.score({ state, viewer: seat, credential }, CALL)).view!;
    const move = mine.legalMoves[0];
    this.take(
      mine.mustDraw || !move
        ? await this.api.draw({ state, seat, viewer: seat, credential }, CALL)
        : await this.api.play({ state, seat, tile: move.tile, end: move.end, viewer: seat, credential }, CALL),
    );
  }
}

/** Follows the match through `port` as seat 0 with follow, recording what it is told. */
class Follower {
  seen: WatchChange[] = [];
  causes: unknown[] = [];
  beats = 0;
  error: unknown = undefined;
  abort = new AbortController();
  done: Promise<void>;
  finished = false;

  constructor(port: number, mover: Mover, credential = mover.creds.get(0), options: Partial<FollowOptions> = {}) {
    const sessionManager = new Http2SessionManager(`http://127.0.0.1:${port}`);
    const client = api(port, sessionManager);
    const changes = follow(
      client,
      { state: mover.state, view: mover.view, viewer: 0, credential },
      {
        policy: fast,
        signal: this.abort.signal,
        onRewatch: (cause) => this.causes.push(cause),
        onMessage: (m) => void (m.kind.case === "heartbeat" && this.beats++),
        reconnect: () => (sessionManager.abort(), client), // the same client, on a new connection
        ...options,
      },
    );
    this.done = (async () => {
      try {
        for await (const change of changes) this.seen.push(change);
      } catch (err) {
        this.error = err;
      }
      this.finished = true;
    })();
    closing.push(() => (this.abort.abort(), sessionManager.abort()));
  }

  saw(id: string): Promise<void> {
    return waitFor("the follower seeing the latest state", () => this.seen.length > 0 && hex(this.seen.at(-1)!.view!.stateId) === id);
  }

  ended(seconds = 120): Promise<void> {
    return waitFor("the follow ending", () => this.finished, seconds);
  }
}

/** Every change came once, in order, each after the one before it or a catch-up, to the
 * match's end. */
async function nothingMissedOrDoubled(f: Follower, m: Mover): Promise<void> {
  await f.ended();
  assert.equal(f.error, undefined);
  let previous = m.made[0];
  let at = 0;
  for (const change of f.seen) {
    const i = m.made.indexOf(hex(change.view!.stateId));
    assert.ok(i > at, `change ${i} came after change ${at} (doubled, or out of order)`);
    assert.ok(change.catchUp || hex(change.view!.previousStateId) === previous, `a change was missed before change ${i}`);
    previous = m.made[i];
    at = i;
  }
  assert.equal(at, m.made.length - 1, "the follow did not end on the last state");
  assert.equal(f.seen.at(-1)!.view!.phase, Phase.OVER);
}

test("a follow resumes on the other replica when its own is killed mid-match", { skip }, async () => {
  const store = ["--match-store", "redis", "--match-store-url", await startRedis()];
  const keys = randomKeys(); // replicas of one deployment: one Redis, one key ring
  const first = await startServer(store, keys);
  const other = await startServer(store, keys);
  const proxy = await new Proxy(first.port).start();
  const mover = await new Mover(api(other.port)).start(); // the match goes on on the other replica
  const follower = new Follower(proxy.port, mover);
  for (let i = 0; i < 10; i++) await mover.step();
  await follower.saw(mover.made.at(-1)!); // its stream is open on the first replica
  first.kill(); // no draining: the stream breaks
  proxy.upstream = other.port;
  while (!mover.over) await mover.step();
  await nothingMissedOrDoubled(follower, mover);
  assert.ok(follower.causes.length > 0, "the follow was not cut by the kill");
  console.log(`follow: ${follower.seen.length} changes of ${mover.made.length - 1}, watched again after ${follower.causes.map(String).join("; ")}`);
});

test("a follow watches again when its connection goes silent", { skip }, async () => {
  const server = await startServer(["--match-store", "memory", "--watch-heartbeat-secs", "1"]);
  const proxy = await new Proxy(server.port).start();
  const mover = await new Mover(api(server.port)).start();
  const follower = new Follower(proxy.port, mover);
  for (let i = 0; i < 5; i++) await mover.step();
  await follower.saw(mover.made.at(-1)!);
  const before = follower.causes.length;
  const beats = follower.beats;
  await waitFor("a heartbeat", () => follower.beats > beats); // after a second without a move: the bound is 2 s
  proxy.silence(); // the follower's connection stays open, and nothing arrives
  for (let i = 0; i < 5; i++) await mover.step();
  await follower.saw(mover.made.at(-1)!); // told once the silence was noticed, on a new connection
  assert.ok(follower.causes.slice(before).some((c) => c instanceof WatchSilentError), `causes: ${follower.causes.map(String)}`);
  while (!mover.over) await mover.step();
  await nothingMissedOrDoubled(follower, mover);
});

test("an aborted follow ends with the signal's reason, and one of a match over ends at once", { skip }, async () => {
  const server = await startServer(["--match-store", "memory"]);
  const mover = await new Mover(api(server.port)).start();
  let follower = new Follower(server.port, mover);
  await waitFor("the first heartbeat", () => follower.beats > 0);
  follower.abort.abort();
  await follower.ended(60);
  assert.equal((follower.error as Error)?.name, "AbortError");
  assert.deepEqual(follower.seen, []);
  while (!mover.over) await mover.step();
  follower = new Follower(server.port, mover);
  await follower.ended(60);
  assert.deepEqual([follower.error, follower.seen, follower.causes], [undefined, [], []]);
});

test("a follow aborted while it waits between streams ends with the signal's reason", { skip }, async () => {
  const server = await startServer(["--match-store", "memory", "--max-connection-age-secs", "1"]);
  const mover = await new Mover(api(server.port)).start();
  const hour = 3_600_000; // once the connection has aged and the follow was told, it waits
  const follower = new Follower(server.port, mover, undefined, { policy: { livenessMs: hour, firstBackoffMs: hour, maxBackoffMs: hour } });
  await waitFor("a stream ended by the connection's age", () => follower.causes.length > 0);
  assert.equal(follower.causes.length, 1);
  follower.abort.abort();
  await follower.ended(60);
  assert.equal((follower.error as Error)?.name, "AbortError");
});

test("a hook that throws ends the follow with its error, not watched again", { skip }, async () => {
  const server = await startServer(["--match-store", "memory", "--watch-heartbeat-secs", "1"]);
  const mover = await new Mover(api(server.port)).start();
  const broken = new TypeError("the hook's own bug");
  const follower = new Follower(server.port, mover, undefined, {
    onMessage: () => {
      throw broken;
    },
  });
  await follower.ended(60);
  assert.equal(follower.error, broken);
  assert.deepEqual(follower.causes, []);
});

test("a final refusal ends the follow with its error", { skip }, async () => {
  const server = await startServer(["--match-store", "memory"]);
  const mover = await new Mover(api(server.port)).start();
  const follower = new Follower(server.port, mover, mover.creds.get(1));
  await follower.ended(60);
  assert.equal(reasonOf(follower.error), ErrorReason.CREDENTIAL_INVALID);
  assert.deepEqual(follower.causes, []);
});

// Compiled, never run: tsc refuses a follow without `reconnect` (the caller must say how
// the dead connection of a silent stream is dropped).
export function followWithoutReconnect(client: Api, view: GameView) {
  // @ts-expect-error: options, with reconnect, are required
  follow(client, { state: new Uint8Array(), view });
  // @ts-expect-error: reconnect is required
  follow(client, { state: new Uint8Array(), view }, { policy: fast });
}

test("the backoff is jittered within its step, and capped", () => {
  const policy: FollowPolicy = { livenessMs: 1_000, firstBackoffMs: 100, maxBackoffMs: 400 };
  for (const [failures, step] of [[1, 100], [2, 200], [3, 400], [4, 400], [40, 400]]) {
    for (let i = 0; i < 200; i++) {
      const afterError = followBackoff(policy, failures, false);
      const afterOk = followBackoff(policy, failures, true);
      assert.ok(afterError >= step / 2 && afterError <= step, `after an error, failure ${failures}: ${afterError}`);
      assert.ok(afterOk >= 0 && afterOk <= step, `after an OK end, failure ${failures}: ${afterOk}`);
    }
  }
});
