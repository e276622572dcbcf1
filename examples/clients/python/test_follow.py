#!/usr/bin/env python3
"""Client.follow against real servers of the test's own (ALLFIVES_BIN, the allfives
server binary; redis-server on PATH): two replicas on one Redis behind a proxy the test
runs, the follower's replica killed mid-match; a connection gone silent behind the
proxy, found by the 2 s bound a heartbeat set (--watch-heartbeat-secs 1); the server
away behind the proxy and back (the follow resumes within its own backoff, not
grpcio's); a match over, a follow cancelled during a stream and between streams, a
final refusal, a hook that raises. (Follow through connections aged every second is
device.py's run in .ci/clients.) A mover moves for both seats straight to a server; the
follower must see every change once, in order, to the match's end. Nothing is timed:
every wait is a hang guard.

    ALLFIVES_BIN=target/debug/allfives .venv/bin/python -m unittest -v test_follow
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import allfives_client as afc

pb = afc.pb
FAST = afc.FollowPolicy(liveness=30.0, first_backoff=0.02, max_backoff=0.2)


def wait_for(what: str, ok, seconds: float = 60.0) -> None:
    """A hang guard: polls `ok` until it holds, failing after `seconds`."""
    for _ in range(int(seconds * 10)):
        if ok():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {seconds:.0f} s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """The server binary on a port it picks, its log in a file; kill() is SIGKILL."""

    def __init__(self, *args: str, keys: str | None = None) -> None:
        bin_ = os.environ.get("ALLFIVES_BIN")
        if not bin_:
            raise unittest.SkipTest("ALLFIVES_BIN is not set (.ci/clients sets it)")
        self.log = tempfile.NamedTemporaryFile(prefix="allfives-server", suffix=".log")
        env = dict(os.environ, ALLFIVES_KEYS=keys or random_keys())
        self.process = subprocess.Popen(
            [bin_, "--addr", "127.0.0.1:0", "--metrics-addr", "off", "--shutdown-delay-ms", "0", *args],
            stdout=self.log, stderr=subprocess.STDOUT, env=env,
        )
        self.port = 0

        def serving() -> bool:
            assert self.process.poll() is None, "the server exited at start"
            with open(self.log.name, "rb") as log:
                m = re.search(rb"serving addr=127\.0\.0\.1:(\d+)", log.read())
            self.port = int(m.group(1)) if m else 0
            return bool(m)

        wait_for("the server serving", serving, 30)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(30)

    def close(self) -> None:
        self.kill()
        self.log.close()


def random_keys() -> str:
    return "1:" + secrets.token_hex(32)


class Redis:
    def __init__(self) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )

        def pong() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    return s.recv(16).startswith(b"+PONG")
            except OSError:
                return False

        wait_for("redis-server answering PING", pong, 30)
        self.url = f"redis://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.process.kill()
        self.process.wait(30)


class Proxy:
    """A TCP proxy the test steers: each connection goes to `upstream` (changed for the
    connections after); silence() makes every connection open now stop forwarding both
    ways while staying open (a half-open network); while `down`, every connection is
    closed as it arrives (a server away)."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.down = False
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.links: list[dict] = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.down:
                client.close()
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                client.close()
                continue
            link = {"client": client, "server": server, "silent": False}
            self.links.append(link)
            threading.Thread(target=self.pump, args=(link, client, server), daemon=True).start()
            threading.Thread(target=self.pump, args=(link, server, client), daemon=True).start()

    @staticmethod
    def pump(link: dict, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(16384):
                if not link["silent"]:  # silent: read and dropped
                    dst.sendall(data)
        except OSError:
            pass
        if not link["silent"]:  # a silent link stays open: only the test's end closes it
            Proxy.close_link(link)

    @staticmethod
    def close_link(link: dict) -> None:
        for s in (link["client"], link["server"]):
            try:
                s.shutdown(socket.SHUT_RDWR)  # wakes the other pump's recv; close() alone would not
            except OSError:
                pass
            s.close()

    def go_down(self) -> None:
        """Every connection closed, and every new one as it arrives."""
        self.down = True
        for link in self.links:
            self.close_link(link)

    def silence(self) -> None:
        for link in self.links:
            link["silent"] = True

    def close(self) -> None:
        self.listener.close()
        for link in self.links:
            self.close_link(link)


class Mover:
    """Moves for both seats of a two-human match, straight to its server."""

    def __init__(self, address: str) -> None:
        self.client = afc.Client.connect(address, timeout=10)
        new = self.client.call(
            "NewGame",
            pb.NewGameRequest(
                rules=pb.Rules(players=2, target=100),
                seats=[pb.SeatSetup(claim=True), pb.SeatSetup(claim=True)], viewer=0,
            ),
        )
        self.creds = {c.seat: c.credential for c in new.credentials}
        self.token, self.view = new.state, new.view
        self.made = [new.view.state_id]  # every state id, in order

    @property
    def over(self) -> bool:
        return self.view.phase == pb.PHASE_OVER

    def step(self) -> None:
        """One deal, play or draw."""
        c = self.client
        if self.view.phase == pb.PHASE_DEALING:
            r = c.call("Deal", pb.DealRequest(state=self.token, viewer=0, credential=self.creds[0]))
        else:
            seat = self.view.turn
            cred = self.creds[seat]
            mine = c.call("Score", pb.ScoreRequest(state=self.token, viewer=seat, credential=cred)).view
            if mine.must_draw:
                r = c.call("Draw", pb.DrawRequest(state=self.token, seat=seat, viewer=seat, credential=cred))
            else:
                move = mine.legal_moves[0]
                r = c.call("Play", pb.PlayRequest(
                    state=self.token, seat=seat, tile=move.tile, end=move.end, viewer=seat, credential=cred,
                ))
        self.token, self.view = r.state, r.view
        self.made.append(r.view.state_id)

    def close(self) -> None:
        self.client.channel.close()


class Follower:
    """Follows the match through `address` as seat 0 with Client.follow, on a thread,
    recording what it is told."""

    def __init__(self, address: str, mover: Mover, policy: afc.FollowPolicy = FAST, credential=None,
                 hook=None) -> None:
        self.client = afc.Client.connect(address, timeout=10)
        self.seen: list = []
        self.causes: list = []
        self.beats = 0
        self.error: BaseException | None = None
        self.cancel = threading.Event()

        def beat(m) -> None:
            if m.HasField("heartbeat"):
                self.beats += 1
            if hook is not None:
                hook(m)

        changes = self.client.follow(
            mover.token, mover.view, 0, mover.creds[0] if credential is None else credential, policy,
            cancel=self.cancel, on_rewatch=self.causes.append, on_message=beat,
        )

        def run() -> None:
            try:
                for change in changes:
                    self.seen.append(change)
            except BaseException as e:  # noqa: BLE001 - handed to the test
                self.error = e

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def saw(self, state_id: bytes) -> None:
        wait_for("the follower seeing the latest state",
                 lambda: bool(self.seen) and self.seen[-1].view.state_id == state_id)

    def ended(self, seconds: float = 120) -> None:
        self.thread.join(seconds)
        assert not self.thread.is_alive(), f"the follow did not end within {seconds:.0f} s"

    def close(self) -> None:
        self.cancel.set()
        self.thread.join(30)
        self.client.channel.close()


class FollowTest(unittest.TestCase):
    def setUp(self) -> None:
        self.closing: list = []

    def tearDown(self) -> None:
        for thing in reversed(self.closing):
            thing.close()

    def keep(self, thing):
        self.closing.append(thing)
        return thing

    def nothing_missed_or_doubled(self, follower: Follower, mover: Mover) -> None:
        """Every change came once, in order, each after the one before it or a
        catch-up, to the match's end."""
        follower.ended()
        self.assertIsNone(follower.error)
        index = {sid: i for i, sid in enumerate(mover.made)}
        previous, at = mover.made[0], 0
        for change in follower.seen:
            i = index.get(change.view.state_id, -1)
            self.assertGreater(i, at, "a change doubled, or out of order")
            self.assertTrue(change.catch_up or change.view.previous_state_id == previous,
                            f"a change was missed before change {i}")
            previous, at = change.view.state_id, i
        self.assertEqual(at, len(mover.made) - 1, "the follow did not end on the last state")
        self.assertEqual(follower.seen[-1].view.phase, pb.PHASE_OVER)

    def test_resumes_on_the_other_replica_when_its_own_is_killed_mid_match(self) -> None:
        redis = self.keep(Redis())
        keys = random_keys()  # replicas of one deployment: one Redis, one key ring
        store = ("--match-store", "redis", "--match-store-url", redis.url)
        first = self.keep(Server(*store, keys=keys))
        other = self.keep(Server(*store, keys=keys))
        proxy = self.keep(Proxy(first.port))
        mover = self.keep(Mover(other.address))  # the match goes on on the other replica
        follower = self.keep(Follower(proxy.address, mover))
        for _ in range(10):
            mover.step()
        follower.saw(mover.made[-1])  # its stream is open on the first replica
        first.kill()  # no draining: the stream breaks
        proxy.upstream = other.port
        while not mover.over:
            mover.step()
        self.nothing_missed_or_doubled(follower, mover)
        self.assertTrue(follower.causes, "the follow was not cut by the kill")
        print(f"follow: {len(follower.seen)} changes of {len(mover.made) - 1}, watched again after "
              f"{[str(c) for c in follower.causes]}")

    def test_watches_again_when_its_connection_goes_silent(self) -> None:
        server = self.keep(Server("--match-store", "memory", "--watch-heartbeat-secs", "1"))
        proxy = self.keep(Proxy(server.port))
        mover = self.keep(Mover(server.address))
        follower = self.keep(Follower(proxy.address, mover))
        for _ in range(5):
            mover.step()
        follower.saw(mover.made[-1])
        before, beats = len(follower.causes), follower.beats
        # A heartbeat (after a second without a move) made the bound 2 s.
        wait_for("a heartbeat", lambda: follower.beats > beats)
        proxy.silence()  # the follower's connection stays open, and nothing arrives
        for _ in range(5):
            mover.step()
        follower.saw(mover.made[-1])  # told once the silence was noticed, on a new connection
        self.assertTrue(any(isinstance(c, afc.WatchSilent) for c in follower.causes[before:]),
                        f"not watched again for silence: {follower.causes}")
        while not mover.over:
            mover.step()
        self.nothing_missed_or_doubled(follower, mover)

    def test_resumes_within_its_own_backoff_once_the_server_is_back(self) -> None:
        # grpcio backs a channel's reconnection off (up to two minutes) while the server
        # is away; the follow's streams must not wait for it once the server is back.
        server = self.keep(Server("--match-store", "memory"))
        proxy = self.keep(Proxy(server.port))
        mover = self.keep(Mover(server.address))
        follower = self.keep(Follower(proxy.address, mover))
        mover.step()
        follower.saw(mover.made[-1])
        proxy.go_down()
        wait_for("30 streams failed while the server was away", lambda: len(follower.causes) >= 30)
        proxy.down = False
        back = len(follower.causes)
        mover.step()
        follower.saw(mover.made[-1])
        after = follower.causes[back:]
        self.assertLessEqual(len(after), 2, f"watched again {len(after)} times once the server was back: "
                             f"{[str(c) for c in after[:3]]}...")

    def test_a_cancelled_follow_ends_and_one_of_a_match_over_ends_at_once(self) -> None:
        server = self.keep(Server("--match-store", "memory"))
        mover = self.keep(Mover(server.address))
        follower = self.keep(Follower(server.address, mover))
        wait_for("the first heartbeat", lambda: follower.beats > 0)
        follower.cancel.set()
        follower.ended(60)
        self.assertIsNone(follower.error)
        self.assertEqual(follower.seen, [])
        while not mover.over:
            mover.step()
        follower = self.keep(Follower(server.address, mover))
        follower.ended(60)
        self.assertIsNone(follower.error)
        self.assertEqual((follower.seen, follower.causes), ([], []))

    def test_a_follow_cancelled_between_streams_ends(self) -> None:
        server = self.keep(Server("--match-store", "memory", "--max-connection-age-secs", "1"))
        mover = self.keep(Mover(server.address))
        hour = afc.FollowPolicy(liveness=3600.0, first_backoff=3600.0, max_backoff=3600.0)
        follower = self.keep(Follower(server.address, mover, hour))
        # Once the connection has aged and the follow was told, it waits an hour.
        wait_for("a stream ended by the connection's age", lambda: follower.causes)
        follower.cancel.set()
        follower.ended(60)
        self.assertIsNone(follower.error)
        self.assertEqual(follower.causes, [None])

    def test_a_hook_that_raises_ends_the_follow_with_its_error(self) -> None:
        server = self.keep(Server("--match-store", "memory", "--watch-heartbeat-secs", "1"))
        mover = self.keep(Mover(server.address))
        broken = TypeError("the hook's own bug")

        def hook(_message) -> None:
            raise broken

        follower = self.keep(Follower(server.address, mover, hook=hook))
        follower.ended(60)
        self.assertIs(follower.error, broken)
        self.assertEqual(follower.causes, [])

    def test_a_final_refusal_ends_the_follow_with_its_error(self) -> None:
        server = self.keep(Server("--match-store", "memory"))
        mover = self.keep(Mover(server.address))
        follower = self.keep(Follower(server.address, mover, credential=mover.creds[1]))
        follower.ended(60)
        self.assertIsInstance(follower.error, afc.ApiError)
        self.assertEqual(follower.error.reason, pb.CREDENTIAL_INVALID)
        self.assertEqual(follower.causes, [])


class BackoffTest(unittest.TestCase):
    def test_backoff_is_jittered_within_its_step_and_capped(self) -> None:
        policy = afc.FollowPolicy(first_backoff=0.1, max_backoff=0.4)
        for failures, step in {1: 0.1, 2: 0.2, 3: 0.4, 4: 0.4, 40: 0.4}.items():
            for _ in range(200):
                self.assertTrue(step / 2 <= policy.backoff(failures, ok_end=False) <= step)
                self.assertTrue(0 <= policy.backoff(failures, ok_end=True) <= step)


if __name__ == "__main__":
    unittest.main()
