#!/usr/bin/env python3
"""One player of a two-player match, holding one seat's credential and no other.

Started by relay.py, which is its only link to the other player: the relay sends it
each latest token of the match on stdin, and it posts on stdout every token its own
calls answer (one JSON object a line; its log goes to stderr). It claims its seat with
ClaimSeat, so only this process learns that seat's credential, and sends the
credential with every request naming its seat. It plays the match to its end: it
deals when a hand is due (the other player may too: the relay takes one of the two),
and on its turn plays the legal move that scores most, or draws.

What it checks, the point of the example: every view it is answered is its own (its
viewer, its hand) and no event it receives shows a tile the other seat drew; asking
for the other seat's view with its own credential, or none, is refused; the tiles it
is shown in its hand are never the other seat's (none of them is played by the other
seat, nor left in the other's hand when the hand ends and every hand is shown); Score
with include_hand_events gives it the other player's moves as it may see them. Once,
it also tries to cheat the relay (a fork: another move from a token it has already
moved on from, then a stale token) and checks the relay refuses both.

    relay.py starts it:  player.py --addr HOST:PORT --seat 0|1
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import pathlib
import sys

import grpc

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "clients" / "python"))
import allfives_client as afc  # noqa: E402

pb = afc.pb
check = afc.check


class Seat:
    def __init__(self, client: afc.Client, seat: int, quiet: bool) -> None:
        self.client = client
        self.seat = seat
        self.other = 1 - seat
        self.quiet = quiet
        self.credential: bytes | None = None
        self.pending: bytes | None = None  # a claim's credential, until the relay takes it
        self.latest: bytes | None = None  # the relay's latest token
        self.acted_on: bytes | None = None
        self.in_flight = False  # a post awaiting the relay's verdict
        self.verdicts = []
        self.cheat = None  # the fork and stale tokens to try once, after the first play
        self.cheated = False
        # What this seat was shown in the current hand, and what the hand showed of the
        # other seat.
        self.hand_number = 0
        self.shown_mine: set[tuple[int, int]] = set()
        self.events_seen = 0
        self.hands_checked = 0

    def log(self, line: str) -> None:
        if not self.quiet or not line.startswith(" "):
            # One write a line: the two players share the relay's stderr.
            sys.stderr.write(f"seat {self.seat}: {line}\n")
            sys.stderr.flush()

    # --- The pipe ---------------------------------------------------------------
    def post(self, token: bytes) -> str:
        """Sends a token to the relay and waits for its verdict (states that arrive
        meanwhile are kept as the latest)."""
        send({"kind": "post", "state": base64.b64encode(token).decode()})
        self.in_flight = True
        while self.in_flight:
            self.receive(read())
        return self.verdicts[-1]

    def receive(self, message: dict) -> None:
        if message["kind"] == "state":
            self.latest = base64.b64decode(message["state"])
        else:
            self.verdicts.append(message["kind"])
            self.in_flight = False

    # --- The game ---------------------------------------------------------------
    def me(self) -> dict:
        return {"viewer": self.seat, "credential": self.credential}

    def act(self) -> bool:
        """Acts on the latest token; False once the match is over."""
        token = self.latest
        self.acted_on = token
        if self.credential is None:
            return self.claim(token)
        score = self.client.call(
            "Score", pb.ScoreRequest(state=token, include_hand_events=True, **self.me())
        )
        view = score.view
        self.look(view, score.hand_events)
        if view.phase == pb.PHASE_OVER:
            send(
                {
                    "kind": "done",
                    "summary": {
                        "winner_side": view.winner_side,
                        "scores": [s.score for s in view.scores],
                        "hands_checked": self.hands_checked,
                    },
                }
            )
            self.log(
                f"match over: side {view.winner_side} wins; checked {self.hands_checked} hands"
            )
            return False
        if view.phase == pb.PHASE_DEALING:
            if all(s.kind == pb.SEAT_KIND_CLAIMED for s in view.seats):
                response = self.client.call("Deal", pb.DealRequest(state=token, **self.me()))
                self.answered(response)
                verdict = self.post(response.state)
                self.log(f"dealt hand {response.view.hand_number}: the relay says {verdict}")
            return True
        if view.turn != self.seat:
            return True
        if view.must_draw:
            request = pb.DrawRequest(state=token, seat=self.seat, **self.me())
            response = self.client.call("Draw", request)
            self.log(f"  draws {afc.tile_text(response.events[0].tile_drawn.tile)}")
        else:
            move = afc.choose(view.legal_moves)
            self.log(
                f"  plays {afc.tile_text(move.tile)}" + (f" +{move.points}" if move.points else "")
            )
            request = pb.PlayRequest(
                state=token, seat=self.seat, tile=move.tile, end=move.end, **self.me()
            )
            response = self.client.call("Play", request)
            if not self.cheated:
                # Once: another move from the same token (a fork), if there is one.
                fork = None
                for other in (m for m in view.legal_moves if m != move):
                    request = pb.PlayRequest(
                        state=token, seat=self.seat, tile=other.tile, end=other.end, **self.me()
                    )
                    fork = self.client.call("Play", request)
                    break
                self.cheat = (fork, token)
        self.answered(response)
        verdict = self.post(response.state)
        check(verdict == "taken", f"the relay did not take this seat's own move ({verdict})")
        if self.cheat is not None and not self.cheated:
            # Try to cheat the relay: post the fork, then the token this move was made
            # from (stale now). Its compare-and-set refuses both.
            self.cheated = True
            fork, stale = self.cheat
            if fork is not None:
                self.answered(fork)
                check(self.post(fork.state) == "refused", "the relay took a fork")
            check(self.post(stale) == "refused", "the relay took a stale token")
            self.log(
                "the relay refused "
                + ("a fork (another move from the same token) and " if fork else "")
                + "a stale token (the one this seat's move was made from)"
            )
        return True

    def claim(self, token: bytes) -> bool:
        public = self.client.call("Score", pb.ScoreRequest(state=token)).view
        if public.seats[self.seat].kind != pb.SEAT_KIND_OPEN:
            raise afc.Inconsistency(f"seat {self.seat} is not open for this player to claim")
        request = pb.ClaimSeatRequest(state=token, seat=self.seat, claim_key=os.urandom(16))
        claimed = self.client.call("ClaimSeat", request)
        check(
            claimed.credential.seat == self.seat and len(claimed.credential.credential) == 16,
            "the claim",
        )
        check(claimed.view.viewer == self.seat and not claimed.view.hand, "the claim's view")
        verdict = self.post(claimed.state)
        if verdict == "taken":
            self.credential = claimed.credential.credential
            self.log("claimed with ClaimSeat; the credential stays in this process")
            self.refused_peeks()
        else:
            # The other player claimed first from the same token: that claim lives in a
            # branch the relay refused, so claim again on the relay's newer token.
            self.log(f"claim not taken ({verdict}); claiming again on the latest token")
        return True

    def refused_peeks(self) -> None:
        """The other seat's view is closed to this player, with its credential or none."""
        for credential, reason in (
            (self.credential, pb.CREDENTIAL_INVALID),
            (b"", pb.CREDENTIAL_REQUIRED),
        ):
            request = pb.ScoreRequest(state=self.latest, viewer=self.other, credential=credential)
            try:
                self.client.call("Score", request, retries=0)
            except afc.ApiError as e:
                check(e.reason == reason, f"peeking at seat {self.other}: {e}")
                continue
            raise afc.Inconsistency(f"seat {self.seat} was shown seat {self.other}'s view")

    def answered(self, response) -> None:
        """An answer to this seat's own call: its view and events."""
        self.look(response.view, [])
        self.check_events(response.events)

    def check_events(self, events) -> None:
        for ev in events:
            if ev.WhichOneof("kind") == "tile_drawn":
                drawn = ev.tile_drawn
                check(
                    drawn.HasField("tile") == (drawn.seat == self.seat),
                    f"seat {self.seat} was shown a draw of seat {drawn.seat}"
                    + (" with its tile" if drawn.HasField("tile") else " without the tile"),
                )

    def look(self, view, hand_events) -> None:
        """Checks a view of this seat's and the hand's events so far."""
        check(view.viewer == self.seat, f"a view for seat {view.viewer}, not this seat's")
        if view.hand_number != self.hand_number:
            self.hand_number, self.shown_mine, self.events_seen = view.hand_number, set(), 0
        if view.phase == pb.PHASE_PLAYING:
            check(len(view.hand) == view.hand_sizes[self.seat], "the hand is not this seat's size")
        self.shown_mine |= {(t.a, t.b) for t in view.hand}
        for m in view.legal_moves:
            check((m.tile.a, m.tile.b) in self.shown_mine, "a legal move with a tile not in hand")
        self.check_events(hand_events)
        # The other seat's moves, as this seat may see them (a reconnecting device's view).
        for ev in list(hand_events)[self.events_seen :]:
            self.show(ev)
        self.events_seen = max(self.events_seen, len(hand_events))
        theirs = {
            (ev.tile_played.tile.a, ev.tile_played.tile.b)
            for ev in hand_events
            if ev.WhichOneof("kind") == "tile_played" and ev.tile_played.seat == self.other
        }
        check(
            not theirs & self.shown_mine,
            f"seat {self.seat} was shown a tile seat {self.other} played",
        )
        last = view.last_hand if view.HasField("last_hand") else None
        if last is not None and last.hand == self.hand_number and view.phase != pb.PHASE_PLAYING:
            # The reveal: every hand shown. None of the other seat's tiles was ever shown
            # to this seat before.
            left = {(t.a, t.b) for h in last.hands if h.seat == self.other for t in h.tiles}
            check(
                not left & self.shown_mine,
                f"seat {self.seat} was shown a tile seat {self.other} still held at the hand's end",
            )
            if self.hands_checked < self.hand_number:
                self.hands_checked = self.hand_number

    def show(self, ev) -> None:
        """Logs what the other seat did (this seat logs its own moves as it makes them)."""
        kind = ev.WhichOneof("kind")
        if kind == "dealt":
            self.log(f"hand {ev.dealt.hand}: seat {ev.dealt.starter} leads")
        elif kind == "tile_played" and ev.tile_played.seat == self.other:
            tp = ev.tile_played
            self.log(
                f"  sees seat {tp.seat} play {afc.tile_text(tp.tile)}"
                + (f" +{tp.points}" if tp.points else "")
            )
        elif kind == "tile_drawn" and ev.tile_drawn.seat == self.other:
            d = ev.tile_drawn
            self.log(
                f"  sees seat {d.seat} draw "
                + (afc.tile_text(d.tile) if d.HasField("tile") else "a tile")
            )
        elif kind == "passed" and ev.passed.seat == self.other:
            self.log(f"  sees seat {ev.passed.seat} pass")
        elif kind == "hand_ended":
            how = pb.HandEndReason.Name(ev.hand_ended.reason).removeprefix("HAND_END_REASON_")
            self.log(f"hand {ev.hand_ended.hand} ended: {how.lower()}")


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def read() -> dict:
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("the relay closed the pipe")
    return json.loads(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--addr", default="127.0.0.1:50051")
    parser.add_argument("--seat", type=int, choices=(0, 1), required=True)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    with grpc.insecure_channel(args.addr) as channel:
        seat = Seat(afc.Client(channel, timeout=5.0), args.seat, args.quiet)
        try:
            playing = True
            while playing:
                while seat.latest is None or seat.latest == seat.acted_on:
                    seat.receive(read())
                playing = seat.act()
            check(seat.cheated, "this seat never played, so never tried to cheat the relay")
        except afc.Inconsistency as e:
            sys.stderr.write(f"seat {args.seat}: FAILED: {e}\n")
            return 1
        except afc.ApiError as e:
            sys.stderr.write(f"seat {args.seat}: FAILED: unexpected error {e}\n")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
