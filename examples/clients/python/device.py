#!/usr/bin/env python3
"""One player's device in a two-player match against another device, through the
server's match store and Watch: no relay, no polling, no token passed between the two
but the invite.

The host makes the match (its seat 0 claimed in NewGame, seat 1 left open) and writes
the invite, the new match's token, to a file; the guest reads it, watches the match
with it (as a spectator holding a token: its changes carry tokens), claims seat 1 from
the latest with a claim key, and watches as seat 1. From then on each device learns
every move, its own and the other's, only from its Watch stream, and plays on its
turn (the host also deals). A stream that ends (the connection aged, the server
drained) is watched again with the last state id seen, and nothing is missed. With
--min-watches N a device makes no move of its own (the host's first is the first
deal) until it has opened its seat's Watch stream N times: on a server that ages
connections every second, N = 2 shows each device watching again mid-match however
fast the match then goes (CI's check).

What it checks: every change follows the last one seen (one unbroken chain of state
ids) unless it says it is a catch-up; every view is its own seat's; no event shows a
tile the other seat drew; the match is over when the follow ends; both devices end
on the same state (the caller compares their last lines).

    python3 device.py --addr HOST:PORT --host --invite FILE
    python3 device.py --addr HOST:PORT --join FILE

(.ci/clients runs the two with --min-watches 2 against a server started with
--match-store memory --max-connection-age-secs 1.)
"""

from __future__ import annotations

import argparse
import base64
import os
import pathlib
import sys
import time

import allfives_client as afc

pb = afc.pb
check = afc.check


class Device:
    def __init__(self, client: afc.Client, quiet: bool, pause: float, min_watches: int) -> None:
        self.client = client
        self.quiet = quiet
        self.pause = pause
        self.min_watches = min_watches
        self.held = False  # a move waits for the stream to be watched again
        self.seat = 0
        self.credential = b""
        self.token = b""
        self.view = None
        self.changes = 0
        self.catch_ups = 0
        self.watches = 0  # the seat's Watch streams opened

    def log(self, line: str) -> None:
        if not self.quiet:
            print(f"seat {self.seat}: {line}", file=sys.stderr)

    def watch(self, viewer: int | None, token: bytes, last: bytes):
        """A Watch stream of the match, as `viewer` (None: a spectator)."""
        request = pb.WatchRequest(state=token, last_state_id=last)
        if viewer is not None:
            request.viewer = viewer
            request.credential = self.credential
        return self.client.stub.Watch(request)

    def take(self, change) -> None:
        """A change from the stream: checked, and kept as the latest."""
        view = change.view
        if change.catch_up:
            self.catch_ups += 1
        elif self.view is not None:
            check(
                view.previous_state_id == self.view.state_id,
                "a change that does not follow the last one seen, and is no catch-up",
            )
        check(view.viewer == self.seat, "a view that is not this seat's")
        check(len(view.hand) == view.hand_sizes[self.seat], "a hand of the wrong size")
        for event in change.events:
            if event.HasField("tile_drawn"):
                drawn = event.tile_drawn
                check(
                    drawn.HasField("tile") == (drawn.seat == self.seat),
                    "a drawn tile shown to another seat, or hidden from its drawer",
                )
        self.token, self.view = change.state, view
        self.changes += 1

    def act(self) -> None:
        """Its move, if the match waits for it: the deal (the host), or its turn; held
        (made on the next stream's first message) until min_watches streams."""
        self.held = self.watches < self.min_watches
        if self.held:
            return
        view = self.view
        seated = all(s.kind != pb.SEAT_KIND_OPEN for s in view.seats)
        if view.phase == pb.PHASE_DEALING and self.seat == 0 and seated:
            self.call("Deal", pb.DealRequest(state=self.token, viewer=0, credential=self.credential))
        elif view.phase == pb.PHASE_PLAYING and view.HasField("turn") and view.turn == self.seat:
            if view.legal_moves:
                best = max(view.legal_moves, key=lambda m: m.points)
                self.log(f"plays {afc.tile_text(best.tile)} for {best.points}")
                self.call(
                    "Play",
                    pb.PlayRequest(
                        state=self.token, seat=self.seat, tile=best.tile, end=best.end,
                        viewer=self.seat, credential=self.credential,
                    ),
                )
            else:
                self.call(
                    "Draw",
                    pb.DrawRequest(
                        state=self.token, seat=self.seat, viewer=self.seat,
                        credential=self.credential,
                    ),
                )

    def call(self, method: str, request) -> None:
        """A move: its answer comes back on the stream, so only a refusal matters here.
        STATE_STALE means the match moved on before it (the stream will say how)."""
        time.sleep(self.pause)
        try:
            self.client.call(method, request)
        except afc.ApiError as err:
            if err.reason != pb.STATE_STALE:
                raise

    def play(self) -> None:
        """Follows the match to its end with the library's `follow` (which watches again
        whenever a stream ends), playing its turns. Short waits between streams, for a
        test's match; a device keeps FollowPolicy's defaults."""

        def rewatch(cause) -> None:
            self.watches += 1
            if cause is not None:
                self.log(f"the stream broke ({cause}); watching again")

        def message(m) -> None:
            # A stream watched again from the latest state opens with a heartbeat (a
            # change comes to act() through take()): a held move is made now.
            if self.held and m.HasField("heartbeat"):
                self.act()

        self.watches += 1
        self.act()
        policy = afc.FollowPolicy(first_backoff=0.02, max_backoff=0.5)
        for change in self.client.follow(
            self.token, self.view, self.seat, self.credential, policy,
            on_rewatch=rewatch, on_message=message,
        ):
            self.take(change)
            self.act()
        check(self.view.phase == pb.PHASE_OVER, "the follow ended before the match did")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--addr", default="127.0.0.1:50051")
    role = parser.add_mutually_exclusive_group(required=True)
    role.add_argument("--host", action="store_true", help="make the match")
    role.add_argument("--join", metavar="FILE", help="join the match this invite names")
    parser.add_argument("--invite", metavar="FILE", help="where the host writes the invite")
    parser.add_argument("--target", type=int, default=100)
    parser.add_argument(
        "--pause-ms", type=int, default=0, help="think this long before each move"
    )
    parser.add_argument(
        "--min-watches", type=int, default=1, metavar="N",
        help="no move of its own until its seat's Watch stream is opened N times (CI: 2, "
        "on a server ageing connections every second)",
    )
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()

    device = Device(
        afc.Client.connect(args.addr, timeout=10), args.quiet, args.pause_ms / 1000, args.min_watches
    )
    started = time.monotonic()
    if args.host:
        check(args.invite is not None, "--host needs --invite FILE")
        # An invite left by an earlier run would send a guest to that match: gone first
        # (and this one goes when the match ends, below).
        pathlib.Path(args.invite).unlink(missing_ok=True)
        new = device.client.call(
            "NewGame",
            pb.NewGameRequest(
                rules=pb.Rules(players=2, target=args.target),
                seats=[pb.SeatSetup(claim=True), pb.SeatSetup()],
                viewer=0,
            ),
        )
        device.credential = new.credentials[0].credential
        device.token, device.view = new.state, new.view
        # The invite: the new match's token, written whole before it appears.
        partial = pathlib.Path(args.invite + ".part")
        partial.write_text(base64.b64encode(new.state).decode())
        os.replace(partial, args.invite)
        device.log(f"made match {new.view.match_id}; invite in {args.invite}")
    else:
        invite = pathlib.Path(args.join)
        for _ in range(200):
            if invite.exists():
                break
            time.sleep(0.05)
        token = base64.b64decode(invite.read_text())
        # As a spectator holding a token: the latest state, with its token.
        device.seat = None
        stream = device.watch(None, token, b"")
        latest = next(message.change for message in stream if message.HasField("change"))
        stream.cancel()
        device.seat = 1
        claimed = device.client.call(
            "ClaimSeat", pb.ClaimSeatRequest(state=latest.state, seat=1, claim_key=os.urandom(16))
        )
        device.credential = claimed.credential.credential
        device.token, device.view = claimed.state, claimed.view
        device.log("claimed seat 1")
    try:
        device.play()
    finally:
        if args.host:
            pathlib.Path(args.invite).unlink(missing_ok=True)
    view = device.view
    scores = " ".join(str(s.score) for s in view.scores)
    print(
        f"device seat {device.seat}: match over, scores {scores}, winner side {view.winner_side}; "
        f"{device.changes} changes from {device.watches} Watch streams ({device.catch_ups} "
        f"catch-ups), {device.client.calls} calls, {time.monotonic() - started:.1f} s; "
        f"last state {view.state_id.hex()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
