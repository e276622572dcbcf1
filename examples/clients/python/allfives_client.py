#!/usr/bin/env python3
"""Plays one whole match of All Fives against an allfives server, in Python.

Every seat is played by the same simple strategy: from the legal moves the server lists
for the seat on turn, the one that scores most (then the heaviest tile); a seat told to
draw draws. With --bots, the server's own computer players fill chosen seats: the
client asks Suggest (EASY, MEDIUM or HARD) and plays what it advises, as a game with
empty seats would. The table is printed as the match goes and the score sheet at the end. On
the way the client checks what the API promises (tokens change and stay small, the
move counter rises by one, scores move only by the points the events announce, hands,
layout and boneyard always hold 28 tiles, legal moves are listed unless the seat must
draw, the match ends with a winner at or past the target, the sheet adds up), and exits
non-zero on any unexpected error or inconsistency.

With --check-errors it also provokes the errors the API documents that a client can
cause (a malformed, altered or foreign token, a move out of turn, a tile it does not
hold, ...) and checks each comes back with its code, reason and details.

    ./generate.sh                      # once: the client code, from proto/
    python allfives_client.py --addr 127.0.0.1:50051 --players 3
    python allfives_client.py --players 4 --partnership --seed 7 --check-errors
    python allfives_client.py --players 2 --bots hard,-     # seat 0: the HARD bot

Exit status: 0 when the match finished and every check held, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from dataclasses import dataclass, field

import grpc
from google.rpc import error_details_pb2  # googleapis-common-protos
from grpc_status import rpc_status  # grpcio-status

# The code ./generate.sh made from proto/ (git-ignored).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "gen"))
try:
    from allfives.v1 import allfives_pb2 as pb
    from allfives.v1 import allfives_pb2_grpc as pb_grpc
except ImportError:
    sys.exit("allfives client: no generated code in gen/: run ./generate.sh first")

DOMAIN = "allfives.v1"
MAX_TOKEN_BYTES = 512
ALL_TILES = [(a, b) for a in range(7) for b in range(a, 7)]
# A bound on the calls of one match: a 4-player match under "own pips off" can take a
# few thousand; far more means the loop is stuck.
MAX_CALLS = 100_000

# Every reason the API documents (proto/allfives/v1/allfives.proto, README "Error
# reasons"): the status code it comes with, and what a client does about it.
REASONS: dict[str, tuple[grpc.StatusCode, str]] = {
    "INVALID_FIELD": (
        grpc.StatusCode.INVALID_ARGUMENT,
        "a bug in the request: the BadRequest names the field to fix",
    ),
    "TOKEN_MALFORMED": (
        grpc.StatusCode.INVALID_ARGUMENT,
        "send the latest token exactly as received (raw bytes; base64 only in JSON)",
    ),
    "TOKEN_UNSUPPORTED_VERSION": (
        grpc.StatusCode.INVALID_ARGUMENT,
        "a token this server version cannot read: the match cannot go on here",
    ),
    "TOKEN_UNKNOWN_KEY": (
        grpc.StatusCode.INVALID_ARGUMENT,
        "sealed under a key the service no longer holds (retired): start a new match",
    ),
    "TOKEN_INVALID": (
        grpc.StatusCode.INVALID_ARGUMENT,
        "altered or not from this service: restore the stored token or start anew",
    ),
    "NOT_YOUR_TURN": (
        grpc.StatusCode.FAILED_PRECONDITION,
        "refresh the view (Score); the seat in metadata 'turn' is to act",
    ),
    "TILE_NOT_IN_HAND": (
        grpc.StatusCode.FAILED_PRECONDITION,
        "refresh the view and choose from its legal_moves",
    ),
    "TILE_DOES_NOT_MATCH": (
        grpc.StatusCode.FAILED_PRECONDITION,
        "choose from legal_moves: they list every tile and end that fit",
    ),
    "END_NOT_OPEN": (
        grpc.StatusCode.FAILED_PRECONDITION,
        "name an end from open_ends (UP and DOWN open once the spinner has both sides)",
    ),
    "MUST_PLAY": (
        grpc.StatusCode.FAILED_PRECONDITION,
        "the seat holds a playable tile: Play one of legal_moves",
    ),
    "AMBIGUOUS_END": (
        grpc.StatusCode.FAILED_PRECONDITION,
        "name the end: legal_moves has one entry per tile and end",
    ),
    "WRONG_PHASE": (
        grpc.StatusCode.FAILED_PRECONDITION,
        "check view.phase: Deal in PHASE_DEALING, Play and Draw in PHASE_PLAYING",
    ),
    "GAME_OVER": (
        grpc.StatusCode.FAILED_PRECONDITION,
        "the match is over: show the sheet (Score) and offer a new match",
    ),
    "BONEYARD_EMPTY": (
        grpc.StatusCode.FAILED_PRECONDITION,
        "cannot happen in a well-formed match (empty boneyard: automatic pass): a bug",
    ),
    "RANDOM_UNAVAILABLE": (
        grpc.StatusCode.UNAVAILABLE,
        "the server had no randomness: retry after a short wait",
    ),
}
# Codes without an ErrorInfo worth retrying: no connection, calls shed, deadlines.
RETRYABLE_CODES = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
}
# Reasons a client cannot cause on purpose against a healthy server.
UNPROVOKABLE = {"BONEYARD_EMPTY", "RANDOM_UNAVAILABLE"}


class Inconsistency(Exception):
    """The server's answer breaks a promise of the API."""


def check(ok: bool, what: str) -> None:
    if not ok:
        raise Inconsistency(what)


@dataclass
class ApiError(Exception):
    """A refused call, with the google.rpc details of its status."""

    method: str
    code: grpc.StatusCode
    message: str
    reason: str | None = None
    domain: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)  # BadRequest: field -> why

    @classmethod
    def from_rpc_error(cls, method: str, err: grpc.RpcError) -> ApiError:
        e = cls(method, err.code(), err.details() or "")
        # The details travel in the `grpc-status-details-bin` trailer as a
        # google.rpc.Status; grpcio-status decodes it (None when there is none).
        status = rpc_status.from_call(err)
        for detail in status.details if status else []:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                e.reason, e.domain, e.metadata = info.reason, info.domain, dict(info.metadata)
            elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                e.fields.update((v.field, v.description) for v in bad.field_violations)
        return e

    @property
    def retryable(self) -> bool:
        # Every call may be repeated safely: the token holds the whole match, so the
        # same request gives the same match again.
        if self.reason == "RANDOM_UNAVAILABLE":
            return True
        # No reason: the transport's or the server's limits (docs/clients.md, "Errors").
        return self.reason is None and self.code in RETRYABLE_CODES

    @property
    def advice(self) -> str:
        if self.reason in REASONS:
            return REASONS[self.reason][1]
        return "not an error of the API (a transport or server failure)"

    def check_documented(self) -> None:
        """Checks the error is one the API documents, with the code of its reason."""
        check(self.domain == DOMAIN, f"{self}: ErrorInfo domain {self.domain!r}")
        check(self.reason in REASONS, f"{self}: an undocumented reason")
        check(self.code == REASONS[self.reason][0], f"{self}: wrong code for the reason")
        if self.reason == "INVALID_FIELD":
            check(bool(self.fields), f"{self}: INVALID_FIELD without a BadRequest")

    def __str__(self) -> str:
        text = f"{self.method}: {self.code.name} {self.reason or '(no reason)'}: {self.message}"
        if self.fields:
            text += f" [fields: {', '.join(self.fields)}]"
        if self.metadata:
            text += f" [metadata: {json.dumps(self.metadata, separators=(',', ':'))}]"
        return text


class Client:
    """The generated stub, with per-call deadlines, retries and decoded errors."""

    def __init__(self, channel: grpc.Channel, timeout: float) -> None:
        self.stub = pb_grpc.AllFivesServiceStub(channel)
        self.timeout = timeout
        self.calls = 0
        self.retries = 0

    def call(self, method: str, request, retries: int = 3):
        for attempt in range(retries + 1):
            self.calls += 1
            check(self.calls <= MAX_CALLS, f"more than {MAX_CALLS} calls: the match is stuck")
            try:
                return getattr(self.stub, method)(request, timeout=self.timeout)
            except grpc.RpcError as err:
                error = ApiError.from_rpc_error(method, err)
                if error.retryable and attempt < retries:
                    self.retries += 1
                    time.sleep(0.1 * 2**attempt)
                    continue
                raise error from None
        raise AssertionError("unreachable")


# --- Showing the table -------------------------------------------------------------


def tile_text(t) -> str:
    return f"[{t.a}|{t.b}]"


def end_name(end: int) -> str:
    return pb.End.Name(end).removeprefix("END_")


def placed_text(p, flip: bool) -> str:
    """One placed tile, near half towards the centre; crosswise doubles as [n:n]."""
    if p.crosswise:
        text = f"[{p.near}:{p.far}]"
    elif flip:
        text = f"[{p.far}|{p.near}]"
    else:
        text = f"[{p.near}|{p.far}]"
    return text + ("*" if p.spinner else "")


def table_lines(view) -> list[str]:
    """The layout as GameView.layout describes it: the line LEFT (outermost first),
    lead, RIGHT; the UP and DOWN arms from the spinner outward. * marks the spinner."""
    arm = {
        a: sorted((p for p in view.layout if p.arm == a), key=lambda p: p.index)
        for a in (pb.ARM_LEAD, pb.ARM_LEFT, pb.ARM_RIGHT, pb.ARM_UP, pb.ARM_DOWN)
    }
    line = [placed_text(p, flip=True) for p in reversed(arm[pb.ARM_LEFT])]
    line += [placed_text(p, flip=False) for p in arm[pb.ARM_LEAD] + arm[pb.ARM_RIGHT]]
    lines = ["table " + "".join(line)]
    for name, a in (("up", pb.ARM_UP), ("down", pb.ARM_DOWN)):
        if arm[a]:
            lines.append(f"  {name:>4} " + "".join(placed_text(p, False) for p in arm[a]))
    ends = " ".join(f"{end_name(e.end)}={e.pip}" for e in view.open_ends)
    lines.append(f"  ends {ends}  count {view.count}  boneyard {view.boneyard_size}")
    return lines


def side_name(score) -> str:
    return ("seats " if len(score.seats) > 1 else "seat ") + "+".join(map(str, score.seats))


def scores_text(view) -> str:
    return ", ".join(f"{side_name(s)} {s.score}" for s in view.scores)


def sheet_lines(sheet, view) -> list[str]:
    sides = [side_name(s) for s in view.scores]
    lines = [
        f"score sheet (target {sheet.target}):",
        "  hand   " + "".join(f"| {n:^18} " for n in sides),
        "         " + "| play settle  total " * len(sides),
    ]
    rows = ([sheet.carried] if sheet.HasField("carried") else []) + list(sheet.rows)
    for row in rows:
        hands = (
            f"{row.first_hand}"
            if row.first_hand == row.last_hand
            else f"{row.first_hand}-{row.last_hand}"
        )
        cells = "".join(f"| {s.play:4} {s.settlement:6} {s.total:6} " for s in row.sides)
        lines.append(f"  {hands:>6} " + cells)
    if sheet.HasField("winner_side"):
        lines.append(f"winner: {sides[sheet.winner_side]}")
    return lines


# --- Playing -----------------------------------------------------------------------


def choose(moves):
    """The simple strategy: the most points, then the heaviest tile, doubles first."""
    return max(moves, key=lambda m: (m.points, m.tile.a + m.tile.b, m.tile.a == m.tile.b))


def round_five(pips: int) -> int:
    return (pips + 2) // 5 * 5


class Match:
    """One match, with the last token and view, and the checks of every answer."""

    def __init__(self, client: Client, say, verbose: bool) -> None:
        self.client = client
        self.say = say
        self.verbose = verbose
        self.token = b""
        self.view = None
        self.first_dealt = None  # (token, moves) of the first deal, to test staleness
        self.game_ended = None
        self.bots: dict[int, int] = {}  # seat -> BotLevel, for seats Suggest plays
        self.suggestions = 0

    def side_of(self, seat: int) -> int:
        return next(s.side for s in self.view.scores if seat in s.seats)

    def accept(self, response, seat: int | None = None, played=None) -> None:
        """Checks a Deal, Play or Draw answer against the previous view, then keeps it."""
        old, view = self.view, response.view
        token = response.state
        check(0 < len(token) <= MAX_TOKEN_BYTES, f"token of {len(token)} bytes")
        check(token != self.token, "the token did not change")
        check(view.match_id == old.match_id, "the match id changed")
        check(view.moves == old.moves + 1, f"moves went {old.moves} -> {view.moves}")
        check(view.rules == old.rules, "the rules changed")
        # Scores move by the points the events announce, and only by multiples of 5.
        delta = {s.side: 0 for s in view.scores}
        for ev in response.events:
            kind = ev.WhichOneof("kind")
            if kind == "tile_played":
                tp = ev.tile_played
                check(
                    tp.points == (tp.count if tp.count % 5 == 0 else 0),
                    f"a play at count {tp.count} scored {tp.points}",
                )
                delta[self.side_of(tp.seat)] += tp.points
            elif kind == "hand_ended":
                self.check_hand_result(ev.hand_ended, view)
                for amount in ev.hand_ended.settlement:
                    delta[amount.side] += amount.points
            elif kind == "game_ended":
                self.game_ended = ev.game_ended
        check(len(view.scores) == len(old.scores), "the number of sides changed")
        for before, after in zip(old.scores, view.scores, strict=True):
            check(after.score % 5 == 0, f"score {after.score} is not a multiple of 5")
            check(
                after.score - before.score == delta[after.side],
                f"{side_name(after)} went {before.score} -> {after.score}, "
                f"the events say {delta[after.side]:+}",
            )
        if view.phase == pb.PHASE_PLAYING:
            tiles = sum(view.hand_sizes) + view.boneyard_size + len(view.layout)
            check(tiles == 28, f"hands, boneyard and table hold {tiles} tiles, not 28")
            check(view.HasField("turn"), "a hand in play without a seat on turn")
        if played is not None:
            check(
                bool(response.events) and response.events[0].WhichOneof("kind") == "tile_played",
                "the first event is not a TilePlayed",
            )
            first = response.events[0].tile_played
            check(
                first.seat == seat and first.tile == played.tile and first.end == played.end,
                "the first event is not the tile played",
            )
            check(
                first.points == played.points,
                f"the move promised {played.points} points and scored {first.points}",
            )
            check(played.tile not in view.hand, "the tile played is still in hand")
        self.token, self.view = token, view
        self.show(response.events)

    def check_hand_result(self, result, view) -> None:
        for hand in result.hands:
            pips = sum(t.a + t.b for t in hand.tiles)
            check(
                hand.pips == pips and hand.rounded == round_five(pips),
                f"seat {hand.seat} holds {pips} pips, shown as {hand.pips}/{hand.rounded}",
            )
        if (
            result.reason != pb.HAND_END_REASON_TARGET_REACHED
            and view.rules.settlement == pb.SETTLEMENT_RULE_OWN_PIPS_OFF
        ):
            for amount in result.settlement:
                seats = next(s.seats for s in view.scores if s.side == amount.side)
                owed = sum(h.rounded for h in result.hands if h.seat in seats)
                check(
                    amount.points == -owed,
                    f"side {amount.side} settled {amount.points}, its hands hold {owed}",
                )

    def check_turn_view(self, seen, seat: int) -> None:
        """Checks the view of the seat on turn before it acts."""
        check(
            seen.match_id == self.view.match_id and seen.moves == self.view.moves,
            "Score showed another point of the match",
        )
        check(seen.viewer == seat and seen.turn == seat, "not the view of the seat on turn")
        check(len(seen.hand) == seen.hand_sizes[seat], "the hand and its size disagree")
        if seen.must_draw:
            check(not seen.legal_moves, "must_draw with legal moves listed")
            check(seen.boneyard_size > 0, "must_draw with an empty boneyard")
        else:
            check(bool(seen.legal_moves), "no legal moves, yet no must_draw")
        for m in seen.legal_moves:
            check(m.tile in seen.hand, f"legal move {tile_text(m.tile)} not in hand")
            check(m.points % 5 == 0, f"legal move worth {m.points}")
            check(
                (m.end == pb.END_UNSPECIFIED) == (not seen.layout),
                "lead moves name no end, later ones do",
            )

    def show(self, events) -> None:
        for ev in events:
            kind = ev.WhichOneof("kind")
            if kind == "dealt":
                self.say(
                    f"hand {ev.dealt.hand}: dealt, seat {ev.dealt.starter} leads "
                    f"({scores_text(self.view)})"
                )
            elif kind == "tile_played" and self.verbose:
                tp = ev.tile_played
                where = "leads" if tp.end == pb.END_UNSPECIFIED else f"on {end_name(tp.end)}"
                gain = f"  +{tp.points}" if tp.points else ""
                self.say(f"  seat {tp.seat} plays {tile_text(tp.tile)} {where}{gain}")
                for line in table_lines(self.view):
                    self.say("    " + line)
            elif kind == "tile_drawn" and self.verbose:
                self.say(f"  seat {ev.tile_drawn.seat} draws {tile_text(ev.tile_drawn.tile)}")
            elif kind == "passed" and self.verbose:
                self.say(f"  seat {ev.passed.seat} passes")
            elif kind == "hand_ended":
                r = ev.hand_ended
                how = pb.HandEndReason.Name(r.reason).removeprefix("HAND_END_REASON_").lower()
                who = f", seat {r.went_out} went out" if r.HasField("went_out") else ""
                left = "; ".join(
                    f"seat {h.seat} {''.join(map(tile_text, h.tiles)) or '-'} ({h.pips})"
                    for h in r.hands
                )
                settle = " ".join(f"{a.points:+}" for a in r.settlement)
                self.say(
                    f"  hand {r.hand} ended: {how}{who}; left {left}; "
                    f"settlement {settle}; {scores_text(self.view)}"
                )
            elif kind == "game_ended":
                seats = "+".join(map(str, ev.game_ended.winner_seats))
                self.say(f"match over: side {ev.game_ended.winner_side} (seats {seats}) wins")

    def play(self, rules, seed: int | None, probe: ErrorProbe | None):
        request = pb.NewGameRequest(rules=rules)
        if seed is not None:
            request.seed = seed
        response = self.client.call("NewGame", request)
        self.token, self.view = response.state, response.view
        v = self.view
        check(
            v.phase == pb.PHASE_DEALING and v.hand_number == 0 and v.moves == 0,
            "a new match is not waiting for its first deal",
        )
        check(len(self.token) <= MAX_TOKEN_BYTES, "a long first token")
        r = v.rules
        settlement = pb.SettlementRule.Name(r.settlement).removeprefix("SETTLEMENT_RULE_")
        hand_size = pb.HandSizeRule.Name(r.hand_size).removeprefix("HAND_SIZE_RULE_")
        self.say(
            f"match {v.match_id}: {r.players} players"
            f"{' in partnerships' if r.partnership else ''}, target {r.target}, "
            f"{settlement.lower()}, {hand_size.lower()}"
        )
        if probe:
            probe.new_game(self)
        while self.view.phase != pb.PHASE_OVER:
            if self.view.phase == pb.PHASE_DEALING:
                self.accept(self.client.call("Deal", pb.DealRequest(state=self.token)))
                if self.first_dealt is None:
                    self.first_dealt = (self.token, self.view.moves)
                continue
            seat = self.view.turn
            # The seat on turn looks at the table: its hand and its legal moves.
            seen = self.client.call("Score", pb.ScoreRequest(state=self.token, viewer=seat)).view
            self.check_turn_view(seen, seat)
            if probe:
                probe.on_turn(self, seen)
            advice = self.ask_bot(seat, seen)
            if seen.must_draw:
                before = len(seen.hand)
                response = self.client.call(
                    "Draw", pb.DrawRequest(state=self.token, seat=seat, viewer=seat)
                )
                drawn = response.events[0].tile_drawn if response.events else None
                check(
                    drawn is not None and drawn.seat == seat and drawn.HasField("tile"),
                    "the drawer does not see the tile it drew",
                )
                check(
                    response.view.boneyard_size == seen.boneyard_size - 1,
                    "the boneyard did not shrink by one",
                )
                if response.view.phase == pb.PHASE_PLAYING:
                    check(
                        len(response.view.hand) == before + 1 and drawn.tile in response.view.hand,
                        "the tile drawn is not in hand",
                    )
                self.accept(response)
            else:
                move = advice.play if advice else choose(seen.legal_moves)
                response = self.client.call(
                    "Play",
                    pb.PlayRequest(
                        state=self.token, seat=seat, tile=move.tile, end=move.end, viewer=seat
                    ),
                )
                self.accept(response, seat=seat, played=move)
        if probe:
            probe.over(self)
        return self.finish()

    def ask_bot(self, seat: int, seen):
        """For a seat filled by a computer player: the server's Suggest, checked
        against the seat's own view (None for a seat this client plays itself)."""
        level = self.bots.get(seat)
        if level is None:
            return None
        advice = self.client.call(
            "Suggest",
            pb.SuggestRequest(state=self.token, seat=seat, level=level, seed=self.view.moves),
        )
        check(advice.draw == seen.must_draw, "Suggest's draw differs from must_draw")
        check(
            len(advice.moves) == len(seen.legal_moves)
            and all(m.move in seen.legal_moves for m in advice.moves),
            "Suggest does not rate exactly the legal moves",
        )
        check(
            all(a.value >= b.value for a, b in zip(advice.moves, advice.moves[1:])),
            "Suggest's moves are not best first",
        )
        if not advice.draw:
            check(advice.play in seen.legal_moves, "Suggest advised an illegal move")
        self.suggestions += 1
        return advice

    def finish(self):
        v = self.view
        check(v.HasField("winner_side"), "the match is over without a winner")
        winner = v.scores[v.winner_side]
        check(list(v.winner_seats) == list(winner.seats), "winner seats and side disagree")
        check(winner.score >= v.rules.target, f"the winner has {winner.score} of {v.rules.target}")
        check(
            self.game_ended is not None and self.game_ended.winner_side == v.winner_side,
            "no GameEnded event naming the winner",
        )
        # The sheet, as a spectator sees it.
        score = self.client.call("Score", pb.ScoreRequest(state=self.token))
        sheet, seen = score.sheet, score.view
        check(
            not seen.HasField("viewer") and not seen.hand and not seen.legal_moves,
            "a spectator sees a hand",
        )
        check(sheet.target == v.rules.target, "the sheet's target")
        check(
            sheet.HasField("winner_side") and sheet.winner_side == v.winner_side,
            "the sheet's winner",
        )
        rows = ([sheet.carried] if sheet.HasField("carried") else []) + list(sheet.rows)
        check(len(sheet.rows) == min(v.hand_number, 32), "the sheet's rows")
        check(sheet.HasField("carried") == (v.hand_number > 32), "the carried row")
        totals = [0] * len(v.scores)
        hand = 1
        for row in rows:
            check(row.first_hand == hand, f"sheet row for hand {row.first_hand}, expected {hand}")
            hand = row.last_hand + 1
            for line in row.sides:
                totals[line.side] += line.play + line.settlement
                check(
                    line.total == totals[line.side],
                    f"hand {row.last_hand}: side "
                    f"{line.side}'s total {line.total} is not {totals[line.side]}",
                )
        check(totals == [s.score for s in v.scores], "the sheet's totals are not the scores")
        for line in sheet_lines(sheet, v):
            self.say(line)
        return v


# --- Provoking the documented errors -------------------------------------------------


class ErrorProbe:
    """Provokes, during one match, every documented error a client can cause, checking
    each comes back with its code, reason and details, and that it changed nothing."""

    def __init__(self, client: Client, say) -> None:
        self.client = client
        self.say = say
        self.seen: set[str] = set()
        self.turns = 0

    def expect(
        self,
        reason: str,
        method: str,
        request,
        field: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> None:
        try:
            self.client.call(method, request, retries=0)
        except ApiError as e:
            check(e.reason == reason, f"expected {reason}, got {e}")
            e.check_documented()
            if field is not None:
                check(field in e.fields, f"{e}: the BadRequest does not name {field!r}")
            for key, value in (metadata or {}).items():
                check(e.metadata.get(key) == value, f"{e}: metadata {key} is not {value}")
            if reason not in self.seen:
                self.say(f"  provoked {e}")
                self.say(f"    what a client does: {e.advice}")
            self.seen.add(reason)
            return
        raise Inconsistency(f"{method} succeeded; expected {reason}")

    def new_game(self, match: Match) -> None:
        token = match.token
        self.say("provoking the documented errors:")
        self.expect(
            "INVALID_FIELD",
            "NewGame",
            pb.NewGameRequest(rules=pb.Rules(players=5)),
            field="rules.players",
        )
        self.expect(
            "INVALID_FIELD",
            "NewGame",
            pb.NewGameRequest(rules=pb.Rules(target=7)),
            field="rules.target",
        )
        self.expect(
            "INVALID_FIELD", "Score", pb.ScoreRequest(state=token, viewer=9), field="viewer"
        )
        self.expect("TOKEN_MALFORMED", "Deal", pb.DealRequest(state=b""))
        self.expect("TOKEN_MALFORMED", "Deal", pb.DealRequest(state=token[:20]))
        self.expect("TOKEN_INVALID", "Deal", pb.DealRequest(state=flip(token, -1, 0x01)))
        self.expect("TOKEN_INVALID", "Deal", pb.DealRequest(state=flip(token, 30, 0x80)))
        # The next two rely on the token's framing (src/state/token.rs: a version byte,
        # then a key id), which is the server's business: a real client never looks
        # inside a token. Here only to see those reasons come back.
        self.expect("TOKEN_UNSUPPORTED_VERSION", "Deal", pb.DealRequest(state=flip(token, 0, 0x40)))
        self.expect("TOKEN_UNKNOWN_KEY", "Deal", pb.DealRequest(state=flip(token, 1, 0x40)))
        self.expect(
            "WRONG_PHASE", "Play", pb.PlayRequest(state=token, seat=0, tile=pb.Tile(a=0, b=0))
        )
        self.expect("WRONG_PHASE", "Draw", pb.DrawRequest(state=token, seat=0))

    def on_turn(self, match: Match, seen) -> None:
        token, seat, n = match.token, seen.turn, seen.rules.players
        self.turns += 1

        def play(tile, end=pb.END_UNSPECIFIED, at=seat):
            return pb.PlayRequest(state=token, seat=at, tile=tile, end=end)

        if self.turns == 1:
            self.expect("WRONG_PHASE", "Deal", pb.DealRequest(state=token))
            self.expect(
                "NOT_YOUR_TURN",
                "Play",
                play(seen.hand[0], at=(seat + 1) % n),
                metadata={"turn": str(seat)},
            )
            self.expect(
                "NOT_YOUR_TURN",
                "Draw",
                pb.DrawRequest(state=token, seat=(seat + 1) % n),
                metadata={"turn": str(seat)},
            )
            self.expect("INVALID_FIELD", "Play", play(seen.hand[0], at=n + 3), field="seat")
            self.expect("INVALID_FIELD", "Play", play(pb.Tile(a=7, b=1)), field="tile.a")
            self.expect(
                "INVALID_FIELD", "Play", pb.PlayRequest(state=token, seat=seat), field="tile"
            )
            missing = next(
                pb.Tile(a=a, b=b) for a, b in ALL_TILES if pb.Tile(a=a, b=b) not in seen.hand
            )
            self.expect("TILE_NOT_IN_HAND", "Play", play(missing))
        if seen.legal_moves and "MUST_PLAY" not in self.seen:
            self.expect("MUST_PLAY", "Draw", pb.DrawRequest(state=token, seat=seat))
        if not seen.layout and "END_NOT_OPEN" not in self.seen:
            self.expect("END_NOT_OPEN", "Play", play(seen.hand[0], pb.END_UP))
        if not seen.layout:
            return
        # Once each, as the chances come: a tile that fits no end, or not the end named;
        # a tile that fits several ends with none named; an end that is not open.
        open_ends = {e.end for e in seen.open_ends}
        ends_of: dict[tuple[int, int], set[int]] = {}
        for m in seen.legal_moves:
            ends_of.setdefault((m.tile.a, m.tile.b), set()).add(m.end)
        for t in seen.hand:
            fits = ends_of.get((t.a, t.b), set())
            if not fits and "TILE_DOES_NOT_MATCH" not in self.seen:
                self.expect("TILE_DOES_NOT_MATCH", "Play", play(t))
            elif fits and open_ends - fits and self.turns % 7 == 0:
                self.expect("TILE_DOES_NOT_MATCH", "Play", play(t, min(open_ends - fits)))
            if len(fits) > 1 and "AMBIGUOUS_END" not in self.seen:
                self.expect("AMBIGUOUS_END", "Play", play(t))
            if fits and pb.END_DOWN not in open_ends and self.turns % 5 == 0:
                self.expect("END_NOT_OPEN", "Play", play(t, pb.END_DOWN))
        if self.turns == 10 and match.first_dealt:
            # An older token still works (the server keeps nothing) and starts a branch;
            # its view shows fewer moves, which is how a client spots a stale token.
            old_token, old_moves = match.first_dealt
            old = self.client.call("Score", pb.ScoreRequest(state=old_token)).view
            check(
                old.match_id == seen.match_id and old.moves == old_moves < seen.moves,
                "an older token's view does not show fewer moves",
            )
            self.say(
                f"  an older token still answers: moves {old.moves} < {seen.moves}, "
                "so a client keeping the latest token can tell it is stale"
            )

    def over(self, match: Match) -> None:
        token = match.token
        self.expect("GAME_OVER", "Deal", pb.DealRequest(state=token))
        self.expect(
            "GAME_OVER", "Play", pb.PlayRequest(state=token, seat=0, tile=pb.Tile(a=0, b=0))
        )
        self.expect("GAME_OVER", "Draw", pb.DrawRequest(state=token, seat=0))
        missing = set(REASONS) - UNPROVOKABLE - self.seen
        check(not missing, f"never had the chance to provoke {sorted(missing)}")
        self.say(f"provoked {len(self.seen)} documented reasons: {', '.join(sorted(self.seen))}")


def flip(token: bytes, index: int, bits: int) -> bytes:
    """The token with some bits of one byte flipped."""
    b = bytearray(token)
    b[index] ^= bits
    return bytes(b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--addr", default="127.0.0.1:50051", help="server host:port")
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--partnership", action="store_true", help="4 players, 0+2 vs 1+3")
    parser.add_argument("--target", type=int, default=0, help="0: the server's default")
    parser.add_argument(
        "--winner-takes-pips",
        action="store_true",
        help="settle by 'winner takes the pips' (default: own pips off)",
    )
    parser.add_argument("--seed", type=int, help="replayable match (leave out for real play)")
    parser.add_argument(
        "--check-errors",
        action="store_true",
        help="also provoke every documented error a client can cause",
    )
    parser.add_argument(
        "--bots",
        default="",
        help="computer players by seat, comma-separated: easy, medium, hard, or - for a "
        "seat this client plays itself (e.g. 'hard,-' : seat 0 is the server's HARD bot)",
    )
    parser.add_argument("--quiet", action="store_true", help="hands and the sheet only")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per call")
    args = parser.parse_args()

    rules = pb.Rules(players=args.players, partnership=args.partnership, target=args.target)
    if args.winner_takes_pips:
        rules.settlement = pb.SETTLEMENT_RULE_WINNER_TAKES_PIPS

    def say(line: str) -> None:
        print(line, flush=True)

    started = time.monotonic()
    with grpc.insecure_channel(args.addr) as channel:
        client = Client(channel, args.timeout)
        probe = ErrorProbe(client, say) if args.check_errors else None
        match = Match(client, say, verbose=not args.quiet)
        levels = {"easy": pb.BOT_LEVEL_EASY, "medium": pb.BOT_LEVEL_MEDIUM, "hard": pb.BOT_LEVEL_HARD}
        for seat, name in enumerate(n for n in args.bots.split(",") if n):
            if name != "-":
                if name not in levels or seat >= args.players:
                    parser.error(f"--bots: {name!r} for seat {seat}")
                match.bots[seat] = levels[name]
        try:
            view = match.play(rules, args.seed, probe)
        except ApiError as e:
            print(f"allfives client: FAILED: unexpected error {e}", file=sys.stderr)
            print(f"  what a client does: {e.advice}", file=sys.stderr)
            return 1
        except Inconsistency as e:
            at = f" (match {match.view.match_id}, move {match.view.moves})" if match.view else ""
            print(f"allfives client: FAILED: {e}{at}", file=sys.stderr)
            return 1
    seconds = time.monotonic() - started
    print(
        f"python client: {view.rules.players} players"
        f"{' in partnerships' if view.rules.partnership else ''}: match over after "
        f"{view.hand_number} hands and {view.moves} moves, {client.calls} calls "
        f"({client.retries} retried, {match.suggestions} bot moves by Suggest) in "
        f"{seconds:.1f} s; every check held"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
