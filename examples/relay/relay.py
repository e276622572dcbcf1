#!/usr/bin/env python3
"""A dumb relay between two players of one match, each in its own process.

The relay starts a match of two players with both seats open (NewGame without `seats`:
it claims none, so it never holds a credential), starts two player processes
(player.py --seat 0 and --seat 1) and talks to each over a pipe (its stdin and stdout,
one JSON object a line). Each player claims its own seat with ClaimSeat, so neither
learns the other's credential, and from then on sends the relay every token its calls
answer. The relay keeps the latest token of the match and its state_id, and takes a
posted token only by a compare-and-set: the token's previous_state_id must be the
state_id it holds. Then it sends the new token to both players. A token made from an
older one (a stale token, or a fork: another move from a token already moved on) is
refused; a token whose state_id is the one it holds (the same move made twice, as when
both players deal the next hand at once) is the same state again, and changes nothing.

The relay cannot read a token. It learns a posted token's ids (and phase) from the
service's public view: Score with no viewer and no credential, which shows what a
spectator sees and no hand. So the ids are the server's word, not the poster's, and a
token that is not this match's, or not the service's at all, is refused.

    PYTHON=examples/clients/python/.venv/bin/python
    PYTHON=$PYTHON bash examples/clients/python/generate.sh      # once
    $PYTHON examples/relay/relay.py --addr 127.0.0.1:50051

Exit status: 0 when the match was played to its end, both players agree on it and
every check held (the players' and the relay's), 1 otherwise.
"""

from __future__ import annotations

import argparse
import base64
import json
import pathlib
import queue
import subprocess
import sys
import threading
import time

import grpc

HERE = pathlib.Path(__file__).resolve().parent
# The Python example client's generated code and its error decoding.
sys.path.insert(0, str(HERE.parent / "clients" / "python"))
import allfives_client as afc  # noqa: E402

pb = afc.pb


def say(line: str) -> None:
    print(f"relay: {line}", flush=True)


class Relay:
    """The latest token of one match and its state_id, changed only by a
    compare-and-set on previous_state_id."""

    def __init__(self, client: afc.Client, token: bytes) -> None:
        self.client = client
        view = self.public_view(token)
        afc.check(view is not None, "the relay cannot read its own first token")
        self.match_id = view.match_id
        self.token, self.state_id, self.view = token, view.state_id, view
        self.taken = self.same = self.refused = 0

    def public_view(self, token: bytes):
        """What a spectator sees of a token (None if the service refuses it)."""
        try:
            view = self.client.call("Score", pb.ScoreRequest(state=token)).view
        except afc.ApiError as e:
            say(f"refusing a token the service does not take: {e}")
            return None
        afc.check(not view.HasField("viewer") and not view.hand, "a spectator sees a hand")
        return view

    def post(self, token: bytes) -> str:
        """One compare-and-set: 'taken', 'same' or 'refused'."""
        view = self.public_view(token)
        if view is None or view.match_id != self.match_id:
            self.refused += 1
            return "refused"
        if view.previous_state_id == self.state_id:
            self.token, self.state_id, self.view = token, view.state_id, view
            self.taken += 1
            return "taken"
        if view.state_id == self.state_id:
            self.same += 1
            return "same"
        self.refused += 1
        return "refused"


class Player:
    """A player process and its pipe."""

    def __init__(self, seat: int, argv: list[str], inbox: queue.Queue) -> None:
        self.seat = seat
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.done = None
        threading.Thread(target=self.read, args=(inbox,), daemon=True).start()

    def read(self, inbox: queue.Queue) -> None:
        for line in self.proc.stdout:
            inbox.put((self.seat, json.loads(line)))
        inbox.put((self.seat, None))  # the pipe closed

    def send(self, message: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(message) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass


def b64(token: bytes) -> str:
    return base64.b64encode(token).decode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--addr", default="127.0.0.1:50051", help="server host:port")
    parser.add_argument("--target", type=int, default=100, help="the match's target score")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds for the match")
    parser.add_argument("--quiet", action="store_true", help="the players print less")
    args = parser.parse_args()

    with grpc.insecure_channel(args.addr) as channel:
        client = afc.Client(channel, timeout=5.0)
        # Both seats open: the relay claims none and never holds a credential.
        created = client.call(
            "NewGame", pb.NewGameRequest(rules=pb.Rules(players=2, target=args.target))
        )
        afc.check(not created.credentials, "NewGame without claims answered credentials")
        relay = Relay(client, created.state)
        say(f"match {relay.match_id}: 2 players, target {relay.view.rules.target}, both seats open")

        inbox: queue.Queue = queue.Queue()
        players = []
        for seat in (0, 1):
            argv = [
                sys.executable,
                str(HERE / "player.py"),
                "--addr",
                args.addr,
                "--seat",
                str(seat),
            ]
            if args.quiet:
                argv.append("--quiet")
            players.append(Player(seat, argv, inbox))
        for p in players:
            p.send({"kind": "state", "state": b64(relay.token)})

        deadline = time.monotonic() + args.timeout
        failed = None
        while not all(p.done for p in players):
            try:
                seat, message = inbox.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                failed = f"the match took over {args.timeout} s"
                break
            if message is None:
                if not players[seat].done:
                    failed = f"player {seat} exited before the match ended"
                    break
                continue
            # The relay carries tokens, and nothing else: no credential, no view.
            afc.check(
                set(message) <= {"kind", "state", "summary"},
                f"player {seat} sent the relay {sorted(message)}",
            )
            if message["kind"] == "post":
                verdict = relay.post(base64.b64decode(message["state"]))
                players[seat].send({"kind": verdict})
                if verdict == "taken":
                    for p in players:
                        p.send({"kind": "state", "state": b64(relay.token)})
            elif message["kind"] == "done":
                players[seat].done = message["summary"]
        for p in players:
            p.proc.stdin.close()
        codes = []
        for p in players:
            try:
                codes.append(p.proc.wait(timeout=10))
            except subprocess.TimeoutExpired:
                p.proc.kill()
                codes.append(-9)
        if failed:
            say(f"FAILED: {failed}")
            return 1
        if any(codes):
            say(f"FAILED: the players exited with {codes}")
            return 1

        # Both players saw the same end, and it is the relay's latest token's.
        view = relay.view
        afc.check(view.phase == pb.PHASE_OVER, "the relay's latest token is not the match's end")
        ends = [p.done for p in players]
        public = {"winner_side": view.winner_side, "scores": [s.score for s in view.scores]}
        for seat, end in enumerate(ends):
            afc.check(
                {k: end[k] for k in public} == public,
                f"player {seat} saw the match end as {end}, the relay's token says {public}",
            )
        afc.check(relay.refused >= 2, "the relay refused no fork and no stale token")
        say(
            f"match over after {view.hand_number} hand{'s' * (view.hand_number != 1)} and "
            f"{view.moves} moves: side "
            f"{view.winner_side} wins, {public['scores']}; the relay took {relay.taken} tokens, "
            f"saw the same state again {relay.same} times and refused {relay.refused} "
            "(stale or forked); neither player saw the other's tiles before a hand ended"
        )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except afc.Inconsistency as e:
        say(f"FAILED: {e}")
        sys.exit(1)
    except afc.ApiError as e:
        say(f"FAILED: unexpected error {e}")
        sys.exit(1)
