#!/usr/bin/env python3
"""Plays one whole match of All Fives against an allfives server, in Python.

The client holds the credential of every human seat (hot seat: one screen, every
player in turn): it claims them in NewGame (`seats` with `claim`), or with
--claim-seats leaves them open and claims each with ClaimSeat, as players on their own
devices would. Every request naming a seat or a viewer carries that seat's credential.
With --bots, the server plays chosen seats itself: their moves arrive as events of the
human seats' calls, redacted for the seat that asked. Every human seat plays one simple
strategy: from the legal moves the server lists, the one that scores most (then the
heaviest tile); a seat told to draw draws; with --hints the human seats play what the
server's Suggest advises instead.

The table is printed as the match goes and the score sheet at the end. On the way the
client checks what the API promises: tokens change and stay small; every answer's
previous_state_id is the state_id it was made from; the move counter rises by one per
deal, play and draw (the bots' included); scores move only by the points the events
announce; hands, layout and boneyard always hold 28 tiles; every placed tile names the
seat that played it; a view shows only its viewer's hand and no event shows a tile
another seat drew; Score with include_hand_events answers the hand so far exactly as
the seat saw it; the match ends with a winner at or past the target; the sheet adds
up. It exits non-zero on any unexpected error or inconsistency.

With --check-errors it also provokes every error the API documents that a client can
cause (a malformed, altered or foreign token, a missing or wrong credential, a bot's
seat, a seed, open seats, a move out of turn, a tile it does not hold, ...), checks
each comes back with its code, reason (compared with the generated ErrorReason
constants) and details, and that a refusal for want of a credential says the same
whatever tile was named. It also plays side matches on a turn clock: the clock's
refusals, then a match on a 1-second clock where one seat stops moving, the other
claims its timeout once due and sees the bot move for it, the late seat leaves and
comes back, and the match is played to its end.

    ./generate.sh                      # once: the client code, from proto/
    python allfives_client.py --addr 127.0.0.1:50051 --players 3
    python allfives_client.py --players 4 --partnership --claim-seats --check-errors
    python allfives_client.py --players 2 --bots human,hard  # seat 1: the server's HARD bot
    python allfives_client.py --players 2 --seed 7           # a server with --allow-client-seeds

Exit status: 0 when the match finished and every check held, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import sys
import threading
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
MAX_TOKEN_BYTES = 640  # the API's bound (512 without display names)
STATE_ID_BYTES = 16
CREDENTIAL_BYTES = 16
ALL_TILES = [(a, b) for a in range(7) for b in range(a, 7)]
# A bound on the calls of one match: a 4-player match under "own pips off" can take a
# few thousand; far more means the loop is stuck.
MAX_CALLS = 100_000

# Every reason of the ErrorReason enum (proto/allfives/v1/allfives.proto): the status
# code it comes with, and what a client does about it. Keyed by the generated
# constants; ErrorInfo.reason is the value's name.
REASONS: dict[int, tuple[grpc.StatusCode, str]] = {
    pb.INVALID_FIELD: (
        grpc.StatusCode.INVALID_ARGUMENT,
        "a bug in the request: the BadRequest names the field to fix",
    ),
    pb.TOKEN_MALFORMED: (
        grpc.StatusCode.INVALID_ARGUMENT,
        "send the latest token exactly as received (raw bytes; base64 only in JSON)",
    ),
    pb.TOKEN_UNSUPPORTED_VERSION: (
        grpc.StatusCode.INVALID_ARGUMENT,
        "a token this server version cannot read: the match cannot go on here",
    ),
    pb.TOKEN_UNKNOWN_KEY: (
        grpc.StatusCode.INVALID_ARGUMENT,
        "sealed under a key the service no longer holds (retired): start a new match",
    ),
    pb.TOKEN_INVALID: (
        grpc.StatusCode.INVALID_ARGUMENT,
        "altered or not from this service: restore the stored token or start anew",
    ),
    pb.RANDOM_UNAVAILABLE: (
        grpc.StatusCode.UNAVAILABLE,
        "the server had no randomness: retry after a short wait",
    ),
    pb.NOT_YOUR_TURN: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "refresh the view (Score); the seat in metadata 'turn' is to act",
    ),
    pb.TILE_NOT_IN_HAND: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "refresh the view and choose from its legal_moves",
    ),
    pb.TILE_DOES_NOT_MATCH: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "choose from legal_moves: they list every tile and end that fit",
    ),
    pb.END_NOT_OPEN: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "name an end from open_ends (UP and DOWN open once the spinner has both sides)",
    ),
    pb.MUST_PLAY: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "the seat holds a playable tile: Play one of legal_moves",
    ),
    pb.AMBIGUOUS_END: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "name the end: legal_moves has one entry per tile and end",
    ),
    pb.WRONG_PHASE: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "check view.phase: Deal in PHASE_DEALING, Play and Draw in PHASE_PLAYING, "
        "ClaimSeat before the first deal",
    ),
    pb.GAME_OVER: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "the match is over: show the sheet (Score) and offer a new match",
    ),
    pb.BONEYARD_EMPTY: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "cannot happen in a well-formed match (empty boneyard: automatic pass): a bug",
    ),
    pb.CREDENTIAL_REQUIRED: (
        grpc.StatusCode.PERMISSION_DENIED,
        "send the seat's credential with every request naming it as seat or viewer "
        "(or name no viewer, for the public view)",
    ),
    pb.CREDENTIAL_INVALID: (
        grpc.StatusCode.PERMISSION_DENIED,
        "not this seat's credential in this match: send the one its claim answered "
        "(a seat still open has none: ClaimSeat it)",
    ),
    pb.SEAT_IS_BOT: (
        grpc.StatusCode.PERMISSION_DENIED,
        "the server plays that seat: act and look only for your own seat",
    ),
    pb.SEED_NOT_ALLOWED: (
        grpc.StatusCode.PERMISSION_DENIED,
        "leave `seed` out: this server picks every seed (seeded replays need a server "
        "started with --allow-client-seeds)",
    ),
    pb.SEATS_OPEN: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "wait until every human seat is claimed (view.seats shows the open ones)",
    ),
    pb.SEAT_TAKEN: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "someone claimed that seat first (or it is a bot's): pick an open one from view.seats",
    ),
    pb.MALFORMED_REQUEST: (
        grpc.StatusCode.INVALID_ARGUMENT,
        "the request bytes are not the method's message: a bug in the client or its stubs",
    ),
    pb.OVERLOADED: (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "the server is busy: retry with backoff (nothing was done)",
    ),
    pb.SEARCH_QUEUE_FULL: (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "too many HARD searches waiting: retry with backoff, or ask a lower level",
    ),
    pb.REQUEST_BODY_TIMEOUT: (
        grpc.StatusCode.CANCELLED,
        "the request arrived too slowly: retry on a better connection",
    ),
    pb.STATE_STALE: (
        grpc.StatusCode.ABORTED,
        "the match has moved on from this token: continue from the latest one",
    ),
    pb.STORE_UNAVAILABLE: (
        grpc.StatusCode.UNAVAILABLE,
        "the server's match store did not answer: retry with backoff (nothing was done)",
    ),
    pb.MATCH_FORGOTTEN: (
        grpc.StatusCode.NOT_FOUND,
        "the server's match store no longer holds this match: start another",
    ),
    pb.STORE_REQUIRED: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "this server has no match store, which this call needs: a deployment fault",
    ),
    pb.TOO_MANY_WATCHES: (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "as many Watch streams are open as the server takes: close one, or retry with backoff",
    ),
    pb.INVITE_NOT_FOUND: (
        grpc.StatusCode.NOT_FOUND,
        "no match waits under that invite code: check it, or ask for a new one",
    ),
    pb.INVITE_RATE_LIMITED: (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "too many invite codes were tried this minute: retry in a minute, or use the invite link",
    ),
    pb.NO_OPEN_SEAT: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "every seat is taken: there is nobody left to invite",
    ),
    pb.REQUEST_TIMEOUT: (
        grpc.StatusCode.DEADLINE_EXCEEDED,
        "the call ran past the server's time limit: make the same call again (answered the same)",
    ),
    pb.TIMEOUT_NOT_DUE: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "the seat on turn still has time: claim again once metadata 'claimable_at_ms' has "
        "passed (Client.claim_when_due waits for it)",
    ),
    pb.NO_TURN_CLOCK: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "the match has no turn clock: nobody's time runs out, there is nothing to claim",
    ),
    pb.TURN_TIMED_OUT: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "the seat's time ran out before its move arrived, and nothing was applied: claim "
        "the timeout (ClaimTimeout, the seat's own credential will do) and play on from it",
    ),
    pb.SEAT_NOT_HELD: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "no bot holds that seat (view.seats): its player plays it already",
    ),
    pb.CLOCK_SKEW: (
        grpc.StatusCode.UNAVAILABLE,
        "the servers' clocks disagree, nothing was done: retry with backoff",
    ),
    pb.PASS_MALFORMED: (
        grpc.StatusCode.INVALID_ARGUMENT,
        "the pass is not a compact JWS: send the studio's pass as its login issued it",
    ),
    pb.PASS_INVALID: (
        grpc.StatusCode.UNAUTHENTICATED,
        "the pass is not this deployment's (the message says which check failed): get "
        "one from the studio's login for this service",
    ),
    pb.PASS_EXPIRED: (
        grpc.StatusCode.UNAUTHENTICATED,
        "the pass has expired: get a fresh one from the studio's login and claim again",
    ),
    pb.PASS_NOT_YET_VALID: (
        grpc.StatusCode.UNAUTHENTICATED,
        "the pass is not valid yet (its issuer's clock is off): get a fresh one",
    ),
    pb.PASS_REQUIRED: (
        grpc.StatusCode.UNAUTHENTICATED,
        "this deployment seats only players with the studio's pass: sign in and claim with it",
    ),
    pb.PASSES_NOT_ACCEPTED: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "this server takes no passes: leave `pass` out",
    ),
    pb.PLAYER_ALREADY_SEATED: (
        grpc.StatusCode.FAILED_PRECONDITION,
        "the pass's player already holds another seat of this match",
    ),
}
# Codes without an ErrorInfo worth retrying: no connection, calls shed, deadlines.
RETRYABLE_CODES = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
}
# Reasons a client cannot cause on purpose against a healthy server (or not with a
# well-formed client: MALFORMED_REQUEST and REQUEST_BODY_TIMEOUT need broken bytes or a
# stalled body; OVERLOADED and SEARCH_QUEUE_FULL a flood; STATE_STALE,
# STORE_UNAVAILABLE, MATCH_FORGOTTEN and STORE_REQUIRED a server with a match store,
# TOO_MANY_WATCHES many Watch streams, INVITE_NOT_FOUND, INVITE_RATE_LIMITED and
# NO_OPEN_SEAT invite codes, which need a store too; tests/ provoke them;
# REQUEST_TIMEOUT a call that outlasts the server's time limit; CLOCK_SKEW two servers
# whose clocks disagree; the pass refusals a server started with the studio's pass keys,
# which tests/it/passes.rs and examples/ranking provoke).
UNPROVOKABLE = {
    pb.BONEYARD_EMPTY,
    pb.RANDOM_UNAVAILABLE,
    pb.MALFORMED_REQUEST,
    pb.OVERLOADED,
    pb.SEARCH_QUEUE_FULL,
    pb.REQUEST_BODY_TIMEOUT,
    pb.STATE_STALE,
    pb.STORE_UNAVAILABLE,
    pb.MATCH_FORGOTTEN,
    pb.STORE_REQUIRED,
    pb.TOO_MANY_WATCHES,
    pb.INVITE_NOT_FOUND,
    pb.INVITE_RATE_LIMITED,
    pb.NO_OPEN_SEAT,
    pb.REQUEST_TIMEOUT,
    pb.CLOCK_SKEW,
    pb.PASS_MALFORMED,
    pb.PASS_INVALID,
    pb.PASS_EXPIRED,
    pb.PASS_NOT_YET_VALID,
    pb.PASS_REQUIRED,
    pb.PASSES_NOT_ACCEPTED,
    pb.PLAYER_ALREADY_SEATED,
}


def reason_name(reason: int) -> str:
    return pb.ErrorReason.Name(reason)


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
    # The ErrorInfo's reason as a generated ErrorReason constant (pb.NOT_YOUR_TURN, ...);
    # ERROR_REASON_UNSPECIFIED for a name newer than this client's proto; None without
    # an ErrorInfo.
    reason: int | None = None
    reason_text: str | None = None  # the name as sent
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
                e.reason_text, e.domain, e.metadata = info.reason, info.domain, dict(info.metadata)
                known = info.reason in pb.ErrorReason.keys()
                e.reason = (
                    pb.ErrorReason.Value(info.reason) if known else pb.ERROR_REASON_UNSPECIFIED
                )
            elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                e.fields.update((v.field, v.description) for v in bad.field_violations)
        return e

    @property
    def retryable(self) -> bool:
        # Every call may be repeated safely: the token holds the whole match, so the
        # same request gives the same match again.
        if self.reason in (pb.RANDOM_UNAVAILABLE, pb.REQUEST_TIMEOUT, pb.CLOCK_SKEW):
            return True
        # No reason: the transport's or the server's limits (docs/clients.md, "Errors").
        return self.reason is None and self.code in RETRYABLE_CODES

    @property
    def advice(self) -> str:
        if self.reason in REASONS:
            return REASONS[self.reason][1]
        if self.reason is not None:
            return "a reason newer than this client: act on the status code"
        return "not an error of the API (a transport or server failure)"

    def check_documented(self) -> None:
        """Checks the error is one the API documents, with the code of its reason."""
        check(self.domain == DOMAIN, f"{self}: ErrorInfo domain {self.domain!r}")
        check(self.reason in REASONS, f"{self}: an undocumented reason")
        check(self.code == REASONS[self.reason][0], f"{self}: wrong code for the reason")
        if self.reason == pb.INVALID_FIELD:
            check(bool(self.fields), f"{self}: INVALID_FIELD without a BadRequest")

    def __str__(self) -> str:
        text = (
            f"{self.method}: {self.code.name} {self.reason_text or '(no reason)'}: {self.message}"
        )
        if self.fields:
            text += f" [fields: {', '.join(self.fields)}]"
        if self.metadata:
            text += f" [metadata: {json.dumps(self.metadata, separators=(',', ':'))}]"
        return text


# grpcio's channel waits between attempts to reconnect, from 1 s growing to two minutes
# by default, failing every call at once meanwhile: capped here at the default follow's
# longest wait (FollowPolicy.max_backoff), so a server back is tried within it. Pass
# them to a channel of your own too.
CHANNEL_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 1000), ("grpc.max_reconnect_backoff_ms", 15000)]


class Client:
    """The generated stub, with per-call deadlines, retries and decoded errors."""

    def __init__(self, channel: grpc.Channel, timeout: float, address: str | None = None) -> None:
        self.channel = channel
        self.stub = pb_grpc.AllFivesServiceStub(channel)
        self.timeout = timeout
        self.address = address  # known (connect): `follow` can replace a dead connection
        self.calls = 0
        self.retries = 0

    @classmethod
    def connect(cls, address: str, timeout: float) -> Client:
        """A client of the server at `address` ("127.0.0.1:50051") on a channel of its
        own (CHANNEL_OPTIONS)."""
        return cls(grpc.insecure_channel(address, options=CHANNEL_OPTIONS), timeout, address)

    def redial(self) -> None:
        """A new channel in place of this one, when the client made it (connect):
        grpcio has no call that drops one connection of a channel and keeps it, nor
        one that ends its reconnect backoff. The old channel is closed at once (that
        ends a stream blocked on a dead connection): a call another thread has in
        flight on it fails (CANCELLED, made again by `call`; or ValueError if it took
        the old stub just before), so follow on a client of its own when other
        threads call meanwhile."""
        if self.address is not None:
            old, self.channel = self.channel, grpc.insecure_channel(self.address, options=CHANNEL_OPTIONS)
            self.stub = pb_grpc.AllFivesServiceStub(self.channel)
            old.close()

    # [START python_follow_method]
    def follow(
        self,
        token: bytes,
        view,
        viewer: int | None = None,
        credential: bytes = b"",
        policy: FollowPolicy | None = None,
        cancel: threading.Event | None = None,
        on_rewatch=None,
        on_message=None,
    ):
        """Follows a match until it is over (a server with a match store): a generator
        of every change (WatchChange) after `view` (the latest the caller holds, with
        `token`), as `viewer` with its `credential` (None: a spectator), each once and in
        order (a `catch_up` change, when several were missed, replaces the table); it
        ends after the change that ends the match (at once if `view` is over). It
        watches again from the last state_id seen after every stream that ends: OK (the
        server drained, the connection aged), an error (raised only if `ends_follow`:
        ApiError), or silent for the liveness bound. After a silent stream or an
        UNAVAILABLE without a reason, the channel is replaced when this client made it
        (connect); a channel of the caller's stays, with its own reconnect backoff (see
        CHANNEL_OPTIONS). Between streams it waits `policy.backoff`. `on_rewatch(cause)`
        is told why a stream ended (None: OK; WatchSilent; ApiError) before each wait;
        `on_message(m)` of every message (heartbeats, rematch offers) as it arrives.
        Setting `cancel` (another thread) or closing the generator ends it and its
        stream, without an error."""
        return _follow(
            self, token, view, viewer, credential, policy or FollowPolicy(), cancel, on_rewatch,
            on_message,
        )

    # [END python_follow_method]

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

    def claim_timeout(self, token: bytes, seat: int, credential: bytes):
        """ClaimTimeout now, for `seat` (any seat of the match, with its credential):
        the seat on turn's timeout, refused TIMEOUT_NOT_DUE before its claimable_at_ms."""
        request = pb.ClaimTimeoutRequest(state=token, seat=seat, credential=credential)
        return self.call("ClaimTimeout", request)

    # [START python_claim_when_due]
    def claim_when_due(
        self,
        token: bytes,
        seat: int,
        credential: bytes,
        countdown: Countdown,
        cancel: threading.Event | None = None,
    ):
        """Claims the seat on turn's timeout for `seat` once `countdown` (of the view
        that came with `token`) says it is due: sleeps until its claimable_at, then
        calls ClaimTimeout (CLOCK_SKEW and UNAVAILABLE retried with backoff, as every
        call). Refused TIMEOUT_NOT_DUE, it sleeps the refusal's claimable_at_ms -
        now_ms (the refusing server's clock) from when the refusal arrived, a backoff
        at least, and claims again, up to CLAIM_NOT_DUE_ATTEMPTS times; any other refusal is
        raised at once. Answers the response and the TIMEOUT_NOT_DUE waited out. When
        `cancel` is set (from another thread) during a wait, ClaimCancelled is raised
        at once, no claim sent."""
        at = countdown.claimable_at()
        at = time.monotonic() if at is None else at  # nobody on turn: the server says why
        backoff = 0.2
        for not_due in range(CLAIM_NOT_DUE_ATTEMPTS):
            wait = max(0.0, at - time.monotonic())
            if cancel is None:
                time.sleep(wait)
            elif cancel.wait(wait):
                raise ClaimCancelled("claim_when_due was cancelled")
            try:
                return self.claim_timeout(token, seat, credential), not_due
            except ApiError as e:
                if e.reason != pb.TIMEOUT_NOT_DUE or not_due + 1 == CLAIM_NOT_DUE_ATTEMPTS:
                    raise
                refused_at = time.monotonic()
                at = refused_at + backoff * random.uniform(0.5, 1.0)
                claimable, now = e.metadata.get("claimable_at_ms"), e.metadata.get("now_ms")
                if claimable is not None and now is not None:
                    at = max(at, refused_at + (int(claimable) - int(now)) / 1000)
                elif claimable is not None:  # an older server: no now_ms
                    at = max(at, countdown.local(int(claimable)))
                backoff = min(2 * backoff, 2.0)
        raise AssertionError("unreachable")

    # [END python_claim_when_due]

    def leave(self, token: bytes, seat: int, credential: bytes):
        """Leave: a bot holds `seat` until its player comes back, or the seat forfeits,
        as the match's rules.absence says (from the first deal to the match's end)."""
        request = pb.LeaveRequest(state=token, seat=seat, credential=credential)
        return self.call("Leave", request)

    def return_to_seat(self, token: bytes, seat: int, credential: bytes):
        """ReturnToSeat: `seat`'s player takes it back from the bot holding it, and plays
        from its next turn; refused SEAT_NOT_HELD when no bot holds it."""
        request = pb.ReturnToSeatRequest(state=token, seat=seat, credential=credential)
        return self.call("ReturnToSeat", request)


# --- Following a match (Watch) -------------------------------------------------------
#
# docs/clients.md, "Following a match": the same shape in every client library.

# [START python_follow]
# Reasons a Watch refusal ends `follow`: watching again cannot change them (the match
# forgotten, the seat's credential refused or missing, a bot's seat, a damaged or
# foreign token, a server without a match store, a request it cannot read). Anything
# else (UNAVAILABLE, a proxy's INTERNAL, the server's load refusals) is watched again:
# Watch changes nothing.
FINAL_WATCH_REASONS = {
    pb.MATCH_FORGOTTEN, pb.CREDENTIAL_REQUIRED, pb.CREDENTIAL_INVALID, pb.SEAT_IS_BOT,
    pb.STORE_REQUIRED, pb.TOKEN_MALFORMED, pb.TOKEN_UNKNOWN_KEY, pb.TOKEN_UNSUPPORTED_VERSION,
    pb.TOKEN_INVALID, pb.INVALID_FIELD, pb.MALFORMED_REQUEST,
}


def ends_follow(error: ApiError) -> bool:
    """Whether a Watch refusal ends `follow` (a server without Watch does too)."""
    return error.reason in FINAL_WATCH_REASONS or error.code == grpc.StatusCode.UNIMPLEMENTED


class WatchSilent(Exception):
    """A Watch stream said nothing, not even a heartbeat, for the liveness bound: its
    connection is taken for dead (a half-open connection after a network change)."""


@dataclass
class FollowPolicy:
    """How `Client.follow` keeps a match followed. `liveness` (seconds) bounds a
    stream's silence until a heartbeat says the server's period (twice
    Heartbeat.interval_ms from then on). The wait between streams starts at
    `first_backoff`, doubles at each stream in a row that brought no change and lived
    less than the liveness bound, up to `max_backoff`: drawn between half and all of
    it after an error, between none and all after an OK end."""

    liveness: float = 35.0  # 2 x the default 15 s heartbeat, and some slack
    first_backoff: float = 1.0
    max_backoff: float = 15.0

    def backoff(self, failures: int, ok_end: bool) -> float:
        step = min(self.first_backoff * 2 ** min(max(failures - 1, 0), 30), self.max_backoff)
        return random.uniform(0.0 if ok_end else step / 2, step)


def _follow(client, token: bytes, view, viewer, credential, policy, cancel, on_rewatch, on_message):
    cancel = cancel or threading.Event()
    last = view.state_id
    over = view.phase == pb.PHASE_OVER
    liveness = policy.liveness
    failures = 0  # streams in a row that brought no change and lived less than liveness
    while not over and not cancel.is_set():
        request = pb.WatchRequest(state=token, last_state_id=last)
        if viewer is not None:
            request.viewer, request.credential = viewer, credential
        stream = client.stub.Watch(request)  # no deadline: a stream lasts
        # The watchdog: the stream cancelled once it has been waited on, silent, for
        # `liveness`, or when `cancel` is set. (Time the caller spends on a change
        # does not count.)
        waiting_since = [time.monotonic()]
        silent, done = threading.Event(), threading.Event()

        def watchdog() -> None:
            while not done.wait(0.1):
                since = waiting_since[0]
                if cancel.is_set() or (since is not None and time.monotonic() - since > liveness):
                    if not cancel.is_set():
                        silent.set()
                    stream.cancel()
                    return

        threading.Thread(target=watchdog, daemon=True).start()
        opened, changed, cause = time.monotonic(), False, None
        try:
            for message in stream:
                waiting_since[0] = None
                if message.HasField("heartbeat") and message.heartbeat.interval_ms:
                    liveness = 2 * message.heartbeat.interval_ms / 1000
                if on_message is not None:
                    on_message(message)
                change = message.change if message.HasField("change") else None
                if change is not None and change.view.state_id != last:  # not one seen
                    changed, last = True, change.view.state_id
                    token = change.state or token
                    over = change.view.phase == pb.PHASE_OVER
                    yield change
                    if over:
                        return
                waiting_since[0] = time.monotonic()
        except grpc.RpcError as err:
            if cancel.is_set():
                return
            if silent.is_set():
                cause = WatchSilent(f"the stream said nothing for {liveness:.1f} s")
                client.redial()  # the connection is dead: the next stream opens another
            else:
                cause = ApiError.from_rpc_error("Watch", err)
                if ends_follow(cause):
                    raise cause from None
                if cause.code == grpc.StatusCode.UNAVAILABLE and cause.reason is None:
                    # No connection: the channel would wait out its own reconnect
                    # backoff, failing each stream at once; a new one tries at once.
                    client.redial()
        finally:
            done.set()
            stream.cancel()
        if cancel.is_set():
            return
        heard = changed or time.monotonic() - opened >= liveness
        refused = isinstance(cause, ApiError) and cause.reason == pb.TOO_MANY_WATCHES
        failures = 1 if heard and not refused else failures + 1
        if on_rewatch is not None:
            on_rewatch(cause)
        cancel.wait(policy.backoff(failures, ok_end=cause is None))


# [END python_follow]


# --- Turn clocks -------------------------------------------------------------------
#
# Judged by the server's clock when a call arrives (docs/rules.md section 11); no timer
# runs anywhere. A ClockView's times are the server's, in ms since the Unix epoch, with
# now_ms its time when it made the view: a device never compares them with its own
# wall clock (which may be off by seconds), only with now_ms, and counts the difference
# down on its monotonic clock from when the view arrived.

# How often claim_when_due claims after TIMEOUT_NOT_DUE. The refusal says when the
# refusing server will take the timeout, by its own clock (claimable_at_ms, now_ms):
# one wait is enough unless the next claim reaches a replica whose clock is behind
# that one (within the skew the deployment allows); the backoff, at least 2.5 s before
# the last claim, covers that, past the default --max-clock-skew-ms of 1 s.
CLAIM_NOT_DUE_ATTEMPTS = 6


class ClaimCancelled(Exception):
    """claim_when_due's `cancel` event was set while it waited."""


# [START python_countdown]
class Countdown:
    """A clocked view's ClockView read against this device's monotonic clock."""

    def __init__(self, clock, received_at: float) -> None:
        self.clock = clock  # pb.ClockView
        self.received_at = received_at  # time.monotonic() when the view arrived

    @classmethod
    def of(cls, view, received_at: float) -> Countdown | None:
        """The countdown of a view that arrived at `received_at`; None without a clock."""
        return cls(view.clock, received_at) if view.HasField("clock") else None

    def local(self, server_ms: int) -> float:
        """When the server's time `server_ms` comes by time.monotonic(): as long after the
        view arrived as it is after the view's now_ms. (now_ms was read when the call
        arrived, so this errs late by the call's time: never a claim too early.)"""
        return self.received_at + (server_ms - self.clock.now_ms) / 1000

    def time_left(self, now: float) -> float | None:
        """The countdown to show at `now` (time.monotonic()): seconds until the seat on
        turn's deadline, never below 0; None when no human seat is on turn."""
        if not self.clock.HasField("turn_deadline_ms"):
            return None
        return max(0.0, self.local(self.clock.turn_deadline_ms) - now)

    def claimable_at(self) -> float | None:
        """From when the server takes the seat on turn's timeout, by time.monotonic()
        (its deadline plus the server's lag grace); None when no human seat is on turn."""
        if not self.clock.HasField("claimable_at_ms"):
            return None
        return self.local(self.clock.claimable_at_ms)


# [END python_countdown]


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

LEVELS = {"easy": pb.BOT_LEVEL_EASY, "medium": pb.BOT_LEVEL_MEDIUM, "hard": pb.BOT_LEVEL_HARD}
# What the move counter counts: every deal, play and draw (the bots' too), not passes.
ACTIONS = {"dealt", "tile_played", "tile_drawn"}


def choose(moves):
    """The simple strategy: the most points, then the heaviest tile, doubles first."""
    return max(moves, key=lambda m: (m.points, m.tile.a + m.tile.b, m.tile.a == m.tile.b))


def round_five(pips: int) -> int:
    return (pips + 2) // 5 * 5


def redacted(events, viewer: int | None) -> list:
    """The events as `viewer` (None: a spectator) may see them: a drawn tile is shown
    only to its drawer."""
    out = []
    for ev in events:
        copy = pb.Event()
        copy.CopyFrom(ev)
        if copy.WhichOneof("kind") == "tile_drawn" and copy.tile_drawn.seat != viewer:
            copy.tile_drawn.ClearField("tile")
        out.append(copy)
    return out


def level_name(level: int) -> str:
    return pb.BotLevel.Name(level).removeprefix("BOT_LEVEL_")


class Match:
    """One match, with the last token and view, every human seat's credential, and the
    checks of every answer."""

    def __init__(
        self,
        client: Client,
        say,
        verbose: bool,
        bots: dict[int, int],
        claim_seats: bool,
        hints: int | None,
    ) -> None:
        self.client = client
        self.say = say
        self.verbose = verbose
        self.bots = bots  # seat -> BotLevel, for the seats the server plays
        self.claim_seats = claim_seats
        self.hints = hints  # the level whose Suggest the human seats follow, if any
        self.token = b""
        self.view = None
        self.creds: dict[int, bytes] = {}  # seat -> credential, for every human seat
        self.humans: list[int] = []
        self.hand_events: list = []  # this hand's events as they came, from its Dealt
        self.first_dealt = None  # the first deal's (token, view), to show a stale token
        self.game_ended = None
        self.bot_moves = 0
        self.claims = 0
        self.suggestions = 0

    # Requests name a seat or viewer together with its credential.
    def as_viewer(self, seat: int) -> dict:
        return {"viewer": seat, "credential": self.creds[seat]}

    def as_seat(self, seat: int) -> dict:
        return {"seat": seat, "viewer": seat, "credential": self.creds[seat]}

    def seat_name(self, seat: int) -> str:
        level = self.bots.get(seat)
        return f"seat {seat}" + (f" ({level_name(level).lower()} bot)" if level else "")

    def side_of(self, seat: int) -> int:
        return next(s.side for s in self.view.scores if seat in s.seats)

    def check_chain(self, old, view) -> None:
        """A relay's compare-and-set holds: the new state names the one it came from."""
        check(len(view.state_id) == STATE_ID_BYTES, f"a state_id of {len(view.state_id)} bytes")
        check(view.previous_state_id == old.state_id, "previous_state_id is not the last state_id")
        check(view.state_id != old.state_id, "the state_id did not change")

    def new_game(self, rules, seed: int | None) -> None:
        players = rules.players or 2
        self.humans = [s for s in range(players) if s not in self.bots]
        request = pb.NewGameRequest(rules=rules)
        if self.bots or not self.claim_seats:
            # One entry per seat: a bot at its level, or a human seat, claimed now (hot
            # seat: this client holds every human credential) or left open for ClaimSeat.
            for seat in range(players):
                if seat in self.bots:
                    request.seats.add(bot=self.bots[seat])
                else:
                    request.seats.add(claim=not self.claim_seats)
        # (No `seats` at all: every seat a human one, open.)
        if not self.claim_seats:
            request.viewer = self.humans[0]
        if seed is not None:
            request.seed = seed
        response = self.client.call("NewGame", request)
        self.token, self.view = response.state, response.view
        v = self.view
        check(
            v.phase == pb.PHASE_DEALING and v.hand_number == 0 and v.moves == 0,
            "a new match is not waiting for its first deal",
        )
        check(0 < len(self.token) <= MAX_TOKEN_BYTES, "a long first token")
        check(len(v.state_id) == STATE_ID_BYTES, "NewGame's view has no state_id")
        check(not v.previous_state_id, "NewGame's view names a previous state")
        claimed = [] if self.claim_seats else self.humans
        check(
            [c.seat for c in response.credentials] == claimed,
            f"NewGame answered credentials for seats {[c.seat for c in response.credentials]}",
        )
        self.creds = {c.seat: c.credential for c in response.credentials}
        check(
            all(len(c) == CREDENTIAL_BYTES for c in self.creds.values())
            and len(set(self.creds.values())) == len(self.creds),
            "the credentials are not distinct 16-byte secrets",
        )
        want = [
            (
                (s, pb.SEAT_KIND_BOT, self.bots[s])
                if s in self.bots
                else (s, pb.SEAT_KIND_OPEN if self.claim_seats else pb.SEAT_KIND_CLAIMED, 0)
            )
            for s in range(players)
        ]
        check(
            [(s.seat, s.kind, s.bot) for s in v.seats] == want,
            f"view.seats is {[(s.seat, s.kind, s.bot) for s in v.seats]}, expected {want}",
        )
        if self.claim_seats:
            check(not v.HasField("viewer"), "NewGame without a viewer answered a seat's view")
        else:
            check(v.viewer == self.humans[0] and not v.hand, "NewGame's view is not the viewer's")
        r = v.rules
        settlement = pb.SettlementRule.Name(r.settlement).removeprefix("SETTLEMENT_RULE_")
        hand_size = pb.HandSizeRule.Name(r.hand_size).removeprefix("HAND_SIZE_RULE_")
        self.say(
            f"match {v.match_id}: {r.players} players"
            f"{' in partnerships' if r.partnership else ''}, target {r.target}, "
            f"{settlement.lower()}, {hand_size.lower()}"
        )
        for seat in self.humans if self.claim_seats else []:
            self.claim(seat)
        self.say(
            "seats: "
            + ", ".join(
                f"{s.seat} " + (f"{level_name(s.bot).lower()} bot" if s.bot else "human")
                for s in self.view.seats
            )
            + (" (claimed with ClaimSeat)" if self.claim_seats else " (claimed in NewGame)")
        )

    def claim(self, seat: int) -> None:
        """ClaimSeat, as a player on their own device does: only the caller learns the
        credential. The claim key (random, drawn for this claim) makes the call's retry
        the same claim, not a new one."""
        request = pb.ClaimSeatRequest(state=self.token, seat=seat, claim_key=os.urandom(16))
        response = self.client.call("ClaimSeat", request)
        old, v, cred = self.view, response.view, response.credential
        check(cred.seat == seat, f"ClaimSeat({seat}) answered seat {cred.seat}'s credential")
        check(len(cred.credential) == CREDENTIAL_BYTES, "a credential not of 16 bytes")
        check(cred.credential not in self.creds.values(), "two seats got the same credential")
        check(v.viewer == seat and v.match_id == old.match_id, "ClaimSeat's view is not the seat's")
        check(v.moves == old.moves and v.phase == pb.PHASE_DEALING, "a claim moved the match on")
        check(
            0 < len(response.state) <= MAX_TOKEN_BYTES and response.state != self.token, "the token"
        )
        self.check_chain(old, v)
        for before, after in zip(old.seats, v.seats, strict=True):
            kind = pb.SEAT_KIND_CLAIMED if after.seat == seat else before.kind
            check(
                after.kind == kind, f"after claiming seat {seat}, seat {after.seat} is {after.kind}"
            )
        self.creds[seat] = cred.credential
        self.token, self.view = response.state, v
        self.claims += 1

    def accept(self, response, viewer: int, played=None) -> None:
        """Checks a Deal, Play or Draw answer, asked by `viewer`, against the previous
        view, then keeps it."""
        old, view = self.view, response.view
        token = response.state
        check(0 < len(token) <= MAX_TOKEN_BYTES, f"token of {len(token)} bytes")
        check(token != self.token, "the token did not change")
        check(view.match_id == old.match_id, "the match id changed")
        check(view.rules == old.rules, "the rules changed")
        check(list(view.seats) == list(old.seats), "view.seats changed during play")
        self.check_chain(old, view)
        actions = sum(ev.WhichOneof("kind") in ACTIONS for ev in response.events)
        check(
            view.moves == old.moves + actions,
            f"moves went {old.moves} -> {view.moves} over {actions} deals, plays and draws",
        )
        # The view and the events are the viewer's: its own hand, no tile another seat
        # drew (the bots' included).
        check(view.HasField("viewer") and view.viewer == viewer, "not the asking seat's view")
        for ev in response.events:
            if ev.WhichOneof("kind") == "tile_drawn":
                drawn = ev.tile_drawn
                check(
                    drawn.HasField("tile") == (drawn.seat == viewer),
                    f"seat {viewer} was shown a draw of seat {drawn.seat}"
                    + (" with its tile" if drawn.HasField("tile") else " without the tile"),
                )
        if response.events and response.events[0].WhichOneof("kind") == "dealt":
            self.hand_events = []
        self.hand_events.extend(response.events)
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
                self.bot_moves += tp.seat in self.bots
            elif kind == "tile_drawn":
                self.bot_moves += ev.tile_drawn.seat in self.bots
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
            check(view.turn not in self.bots, "the server left a bot's turn to the client")
            check(len(view.hand) == view.hand_sizes[viewer], "the viewer's hand and its size")
        self.check_layout(view)
        if played is not None:
            check(
                bool(response.events) and response.events[0].WhichOneof("kind") == "tile_played",
                "the first event is not a TilePlayed",
            )
            first = response.events[0].tile_played
            check(
                first.seat == viewer and first.tile == played.tile and first.end == played.end,
                "the first event is not the tile played",
            )
            check(
                first.points == played.points,
                f"the move promised {played.points} points and scored {first.points}",
            )
            check(played.tile not in view.hand, "the tile played is still in hand")
        self.token, self.view = token, view
        self.show(response.events)

    def check_layout(self, view) -> None:
        """Every placed tile names the seat whose TilePlayed put it there."""
        by = {
            (ev.tile_played.tile.a, ev.tile_played.tile.b): ev.tile_played.seat
            for ev in self.hand_events
            if ev.WhichOneof("kind") == "tile_played"
        }
        check(
            len(view.layout) == len(by), f"{len(view.layout)} tiles on the table, {len(by)} played"
        )
        for p in view.layout:
            check(
                by.get((p.tile.a, p.tile.b)) == p.seat,
                f"placed tile {tile_text(p.tile)} names seat {p.seat}, "
                f"the events seat {by.get((p.tile.a, p.tile.b))}",
            )

    def check_hand_events(self, hand_events, viewer: int | None) -> None:
        """Score's include_hand_events (what a device that reconnects asks for): the hand
        so far, exactly as `viewer` saw or would have seen it."""
        want = redacted(self.hand_events, viewer)
        got = list(hand_events)
        check(
            got == want,
            f"Score's hand_events for {'a spectator' if viewer is None else f'seat {viewer}'} "
            f"({len(got)} events) are not the hand's events as that seat saw them ({len(want)})",
        )

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
            seen.match_id == self.view.match_id
            and seen.moves == self.view.moves
            and seen.state_id == self.view.state_id,
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
        self.check_layout(seen)

    def show(self, events) -> None:
        # The view is the table after the whole call (the bots' moves included): draw it
        # once, after the call's last placement.
        plays = [i for i, ev in enumerate(events) if ev.WhichOneof("kind") == "tile_played"]
        for i, ev in enumerate(events):
            kind = ev.WhichOneof("kind")
            if kind == "dealt":
                self.say(
                    f"hand {ev.dealt.hand}: dealt, {self.seat_name(ev.dealt.starter)} leads "
                    f"({scores_text(self.view)})"
                )
            elif kind == "tile_played" and self.verbose:
                tp = ev.tile_played
                where = "leads" if tp.end == pb.END_UNSPECIFIED else f"on {end_name(tp.end)}"
                gain = f"  +{tp.points}" if tp.points else ""
                self.say(f"  {self.seat_name(tp.seat)} plays {tile_text(tp.tile)} {where}{gain}")
                if i == plays[-1]:
                    for line in table_lines(self.view):
                        self.say("    " + line)
            elif kind == "tile_drawn" and self.verbose:
                drawn = ev.tile_drawn
                what = tile_text(drawn.tile) if drawn.HasField("tile") else "a tile"
                self.say(f"  {self.seat_name(drawn.seat)} draws {what}")
            elif kind == "passed" and self.verbose:
                self.say(f"  {self.seat_name(ev.passed.seat)} passes")
            elif kind == "hand_ended":
                r = ev.hand_ended
                how = pb.HandEndReason.Name(r.reason).removeprefix("HAND_END_REASON_").lower()
                who = f", seat {r.went_out} went out" if r.HasField("went_out") else ""
                left = "; ".join(
                    f"seat {h.seat} {''.join(map(tile_text, h.tiles)) or '-'} ({h.pips})"
                    for h in r.hands
                )
                settle = " ".join(f"{a.points:+}" for a in r.settlement)
                # PlacedTile.seat: who laid what.
                laid = ", ".join(
                    f"seat {s.seat} {sum(p.seat == s.seat for p in self.view.layout)}"
                    for s in self.view.seats
                )
                self.say(
                    f"  hand {r.hand} ended: {how}{who}; left {left}; "
                    f"settlement {settle}; {scores_text(self.view)}; tiles laid: {laid}"
                )
            elif kind == "game_ended":
                seats = "+".join(map(str, ev.game_ended.winner_seats))
                self.say(f"match over: side {ev.game_ended.winner_side} (seats {seats}) wins")

    def play(self, rules, seed: int | None, probe: ErrorProbe | None):
        self.new_game(rules, seed)
        if probe:
            probe.new_game(self)
        while self.view.phase != pb.PHASE_OVER:
            if self.view.phase == pb.PHASE_DEALING:
                # Anyone holding the token may deal; the human seats take turns.
                dealer = self.humans[self.view.hand_number % len(self.humans)]
                response = self.client.call(
                    "Deal", pb.DealRequest(state=self.token, **self.as_viewer(dealer))
                )
                self.accept(response, dealer)
                if self.first_dealt is None:
                    self.first_dealt = (self.token, self.view)
                continue
            seat = self.view.turn
            # The seat on turn looks at the table (its hand, its legal moves) and at the
            # hand so far, as a device that reconnects would.
            score = self.client.call(
                "Score",
                pb.ScoreRequest(state=self.token, include_hand_events=True, **self.as_viewer(seat)),
            )
            seen = score.view
            self.check_turn_view(seen, seat)
            self.check_hand_events(score.hand_events, seat)
            if probe:
                probe.on_turn(self, seen)
            advice = self.hint(seat, seen)
            if seen.must_draw:
                before = len(seen.hand)
                response = self.client.call(
                    "Draw", pb.DrawRequest(state=self.token, **self.as_seat(seat))
                )
                drawn = response.events[0].tile_drawn if response.events else None
                check(
                    drawn is not None and drawn.seat == seat and drawn.HasField("tile"),
                    "the drawer does not see the tile it drew",
                )
                draws = sum(ev.WhichOneof("kind") == "tile_drawn" for ev in response.events)
                check(
                    response.view.boneyard_size == seen.boneyard_size - draws,
                    "the boneyard did not shrink by the tiles drawn",
                )
                if response.view.phase == pb.PHASE_PLAYING:
                    check(
                        len(response.view.hand) == before + 1 and drawn.tile in response.view.hand,
                        "the tile drawn is not in hand",
                    )
                self.accept(response, seat)
            else:
                move = advice.play if advice else choose(seen.legal_moves)
                response = self.client.call(
                    "Play",
                    pb.PlayRequest(
                        state=self.token, tile=move.tile, end=move.end, **self.as_seat(seat)
                    ),
                )
                self.accept(response, seat, played=move)
        if probe:
            probe.over(self)
        return self.finish()

    def hint(self, seat: int, seen):
        """With --hints: the server's Suggest for the seat on turn (its credential
        along), checked against the seat's own view."""
        if self.hints is None:
            return None
        advice = self.client.call(
            "Suggest",
            pb.SuggestRequest(
                state=self.token,
                seat=seat,
                level=self.hints,
                seed=self.view.moves,
                credential=self.creds[seat],
            ),
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
        # The sheet and the last hand, as a spectator (no viewer, no credential) sees them.
        score = self.client.call(
            "Score", pb.ScoreRequest(state=self.token, include_hand_events=True)
        )
        sheet, seen = score.sheet, score.view
        check(
            not seen.HasField("viewer") and not seen.hand and not seen.legal_moves,
            "a spectator sees a hand",
        )
        check(seen.state_id == v.state_id, "the spectator's view has another state_id")
        self.check_hand_events(score.hand_events, None)
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

    def __init__(self, client: Client, say, seeded: bool) -> None:
        self.client = client
        self.say = say
        # A server that took this match's seed takes client seeds: SEED_NOT_ALLOWED
        # cannot come back from it.
        self.seeded = seeded
        self.seen: set[int] = set()
        self.turns = 0
        self.lineage_shown = False

    def expect(
        self,
        reason: int,
        method: str,
        request,
        field: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> ApiError:
        try:
            self.client.call(method, request, retries=0)
        except ApiError as e:
            check(e.reason == reason, f"expected {reason_name(reason)}, got {e}")
            e.check_documented()
            if field is not None:
                check(field in e.fields, f"{e}: the BadRequest does not name {field!r}")
            for key, value in (metadata or {}).items():
                check(e.metadata.get(key) == value, f"{e}: metadata {key} is not {value}")
            if reason not in self.seen:
                self.say(f"  provoked {e}")
                self.say(f"    what a client does: {e.advice}")
            self.seen.add(reason)
            return e
        raise Inconsistency(f"{method} succeeded; expected {reason_name(reason)}")

    def new_game(self, match: Match) -> None:
        token, creds, humans = match.token, match.creds, match.humans
        me = humans[0]
        self.say("provoking the documented errors:")
        two = pb.Rules(players=2)
        claimed, open_, easy = (
            pb.SeatSetup(claim=True),
            pb.SeatSetup(),
            pb.SeatSetup(bot=pb.BOT_LEVEL_EASY),
        )
        self.expect(
            pb.INVALID_FIELD,
            "NewGame",
            pb.NewGameRequest(rules=pb.Rules(players=5)),
            field="rules.players",
        )
        self.expect(
            pb.INVALID_FIELD,
            "NewGame",
            pb.NewGameRequest(rules=pb.Rules(target=7)),
            field="rules.target",
        )
        self.expect(
            pb.INVALID_FIELD,
            "NewGame",
            pb.NewGameRequest(rules=two, seats=[claimed]),
            field="seats",
        )
        self.expect(
            pb.INVALID_FIELD,
            "NewGame",
            pb.NewGameRequest(
                rules=two, seats=[claimed, pb.SeatSetup(bot=pb.BOT_LEVEL_EASY, claim=True)]
            ),
            field="seats.claim",
        )
        self.expect(
            pb.INVALID_FIELD,
            "NewGame",
            pb.NewGameRequest(rules=two, seats=[claimed, open_], viewer=1),
            field="viewer",
        )
        if not self.seeded:
            self.expect(pb.SEED_NOT_ALLOWED, "NewGame", pb.NewGameRequest(rules=two, seed=7))
        self.expect(
            pb.INVALID_FIELD, "Score", pb.ScoreRequest(state=token, viewer=9), field="viewer"
        )
        self.expect(pb.TOKEN_MALFORMED, "Deal", pb.DealRequest(state=b""))
        self.expect(pb.TOKEN_MALFORMED, "Deal", pb.DealRequest(state=token[:20]))
        self.expect(pb.TOKEN_INVALID, "Deal", pb.DealRequest(state=flip(token, -1, 0x01)))
        self.expect(pb.TOKEN_INVALID, "Deal", pb.DealRequest(state=flip(token, 30, 0x80)))
        # The next two rely on the token's framing (src/state/token.rs: a version byte,
        # then a key id), which is the server's business: a real client never looks
        # inside a token. Here only to see those reasons come back.
        self.expect(
            pb.TOKEN_UNSUPPORTED_VERSION, "Deal", pb.DealRequest(state=flip(token, 0, 0x40))
        )
        self.expect(pb.TOKEN_UNKNOWN_KEY, "Deal", pb.DealRequest(state=flip(token, 1, 0x40)))
        self.expect(
            pb.WRONG_PHASE,
            "Play",
            pb.PlayRequest(state=token, tile=pb.Tile(a=0, b=0), **match.as_seat(me)),
        )
        self.expect(pb.WRONG_PHASE, "Draw", pb.DrawRequest(state=token, **match.as_seat(me)))
        # Credentials: none, another seat's, made up.
        self.expect(pb.CREDENTIAL_REQUIRED, "Score", pb.ScoreRequest(state=token, viewer=me))
        self.expect(pb.CREDENTIAL_REQUIRED, "Deal", pb.DealRequest(state=token, viewer=me))
        self.expect(
            pb.CREDENTIAL_INVALID,
            "Score",
            pb.ScoreRequest(state=token, viewer=me, credential=bytes(CREDENTIAL_BYTES)),
        )
        self.expect(
            pb.CREDENTIAL_INVALID,
            "Score",
            pb.ScoreRequest(state=token, viewer=me, credential=creds[humans[1]]),
        )
        for seat in match.bots:
            self.expect(
                pb.SEAT_IS_BOT,
                "Score",
                pb.ScoreRequest(state=token, viewer=seat, credential=creds[me]),
            )
        # A second match, its seat 0 open and seat 1 a bot: Deal waits for the claim;
        # a seat is claimed once; a bot's seat is nobody's; a credential is good in its
        # own match only; claims end at the first deal.
        side = self.client.call("NewGame", pb.NewGameRequest(rules=two, seats=[open_, easy]))
        self.expect(pb.SEATS_OPEN, "Deal", pb.DealRequest(state=side.state))
        self.expect(pb.SEAT_TAKEN, "ClaimSeat", pb.ClaimSeatRequest(state=side.state, seat=1))
        mine = self.client.call("ClaimSeat", pb.ClaimSeatRequest(state=side.state, seat=0))
        self.expect(pb.SEAT_TAKEN, "ClaimSeat", pb.ClaimSeatRequest(state=mine.state, seat=0))
        side_cred = mine.credential.credential
        self.expect(
            pb.SEAT_IS_BOT,
            "Score",
            pb.ScoreRequest(state=mine.state, viewer=1, credential=side_cred),
        )
        self.expect(
            pb.CREDENTIAL_INVALID,
            "Score",
            pb.ScoreRequest(state=token, viewer=me, credential=side_cred),
        )
        dealt = self.client.call(
            "Deal", pb.DealRequest(state=mine.state, viewer=0, credential=side_cred)
        )
        self.expect(pb.WRONG_PHASE, "ClaimSeat", pb.ClaimSeatRequest(state=dealt.state, seat=0))
        self.clocks()

    def clocks(self) -> None:
        """Turn clocks, on side matches of two (this client holding both seats): the
        refusals a clock brings, then a match on a 1-second clock with no bank where one
        seat stops moving. The server judges by its clock when a call arrives, so each
        decision is checked against the times it stated (a claim refused with the
        moment it will be taken; taken by a server whose clock then read past it; the
        late seat's own move refused), never against how long anything took here."""
        plain = ClockedMatch(self.client, pb.Rules(players=2))
        plain.deal()
        check(not plain.view.HasField("clock"), "a match without a clock shows clocks")
        self.expect(
            pb.NO_TURN_CLOCK,
            "ClaimTimeout",
            pb.ClaimTimeoutRequest(state=plain.token, seat=0, credential=plain.creds[0]),
        )
        # The default clock, 30 s a move and a 60 s bank: a claim at once is long early.
        slow = ClockedMatch(self.client, pb.Rules(players=2, clock=pb.TurnClock()))
        clock, absence = slow.view.rules.clock, slow.view.rules.absence
        check(
            (clock.move_seconds, clock.bank_seconds, clock.increment_seconds) == (30, 60, 0)
            and clock.HasField("bank_seconds"),
            f"an empty TurnClock came back as {clock}",
        )
        check(
            (absence.rule, absence.bot, absence.bot_takes_seat_after)
            == (pb.ABSENCE_RULE_BOT, pb.BOT_LEVEL_MEDIUM, 2),
            f"the absence option came back as {absence}",
        )
        self.expect(
            pb.WRONG_PHASE,
            "Leave",
            pb.LeaveRequest(state=slow.token, seat=1, credential=slow.creds[1]),
        )
        slow.deal()
        c = slow.view.clock
        check(
            all(c.HasField(f) for f in ("move_began_ms", "turn_deadline_ms", "claimable_at_ms")),
            f"a dealt clocked match shows no deadline: {c}",
        )
        check(
            c.turn_deadline_ms == c.move_began_ms + 90_000
            and c.claimable_at_ms >= c.turn_deadline_ms
            and list(c.bank_seconds) == [60, 60],
            f"the clocks after the deal: {c}",
        )
        countdown = Countdown.of(slow.view, slow.received_at)
        check(
            abs(countdown.time_left(slow.received_at) - (c.turn_deadline_ms - c.now_ms) / 1000)
            < 1e-6,
            "the countdown on the view's arrival is not turn_deadline_ms - now_ms",
        )
        waiting = 1 - slow.view.turn
        self.expect(
            pb.TIMEOUT_NOT_DUE,
            "ClaimTimeout",
            pb.ClaimTimeoutRequest(state=slow.token, seat=waiting, credential=slow.creds[waiting]),
            metadata={"claimable_at_ms": str(c.claimable_at_ms)},
        )
        self.expect(
            pb.SEAT_NOT_HELD,
            "ReturnToSeat",
            pb.ReturnToSeatRequest(state=slow.token, seat=waiting, credential=slow.creds[waiting]),
        )

        # [START python_clock_match]
        # One second a move and no bank: the seat on turn stops moving, and the other
        # seat claims its timeout as soon as the view it was given says it may.
        clock = pb.TurnClock(move_seconds=1, bank_seconds=0)
        m = ClockedMatch(self.client, pb.Rules(players=2, target=100, clock=clock))
        m.deal()
        late = m.view.turn
        waiting = 1 - late
        before, dealt = m.token, m.view
        countdown = Countdown.of(dealt, m.received_at)
        claimed, not_due = self.client.claim_when_due(
            m.token, waiting, m.creds[waiting], countdown
        )
        # [END python_clock_match]
        m.take(claimed.state, claimed.view)
        events = list(claimed.events)
        check(
            m.view.clock.now_ms >= dealt.clock.claimable_at_ms,
            f"a timeout was taken at {m.view.clock.now_ms} by the server's clock, before its "
            f"claimable_at_ms {dealt.clock.claimable_at_ms}",
        )
        check(
            absent_at(events, late, pb.ABSENCE_REASON_TIMED_OUT) == 0
            and moved_by(events[1:], late),
            f"the claim's events do not begin with seat {late}'s SeatAbsent (TIMED_OUT) and "
            f"the bot's move for it: {[e.WhichOneof('kind') for e in events]}",
        )
        seat = m.view.seats[late]
        check(
            seat.kind == pb.SEAT_KIND_CLAIMED
            and seat.timeouts_in_row == 1
            and m.view.clock.bank_seconds[late] == 0,
            f"after one timeout seat {late} is {seat}",
        )
        # The late seat's move, sent from the token it had, arrives after the claim: its
        # time ran out, and nothing is applied.
        mine = self.client.call(
            "Score", pb.ScoreRequest(state=before, viewer=late, credential=m.creds[late])
        ).view
        self.expect(
            pb.TURN_TIMED_OUT,
            "Play",
            pb.PlayRequest(
                state=before, seat=late, tile=mine.legal_moves[0].tile, credential=m.creds[late]
            ),
            metadata={"turn_deadline_ms": str(dealt.clock.turn_deadline_ms)},
        )
        # The match goes on; the late seat's own move in time ends its run of timeouts.
        for _ in range(200):
            check(m.view.phase != pb.PHASE_OVER, f"the late seat {late} never moved again")
            mover, playing, slow_moves = m.view.turn, m.view.phase == pb.PHASE_PLAYING, m.late
            events = m.step()
            if playing and mover == late and m.late == slow_moves and moved_by(events, late):
                check(
                    m.view.seats[late].timeouts_in_row == 0,
                    f"seat {late} moved in time and still has timeouts in a row",
                )
                break
        else:
            raise Inconsistency(f"the late seat {late} never moved again")
        # Its player leaves: a bot holds the seat until it comes back.
        left = self.client.leave(m.token, late, m.creds[late])
        m.take(left.state, left.view)
        events = list(left.events)
        at = absent_at(events, late, pb.ABSENCE_REASON_LEFT)
        check(
            at >= 0
            and at + 1 < len(events)
            and events[at + 1].WhichOneof("kind") == "bot_took_seat"
            and events[at + 1].bot_took_seat.seat == late,
            f"Leave's events are not SeatAbsent (LEFT) then BotTookSeat: {events}",
        )
        seat = m.view.seats[late]
        check(
            (seat.kind, seat.absent, seat.bot)
            == (pb.SEAT_KIND_HELD_BY_BOT, pb.ABSENCE_REASON_LEFT, pb.BOT_LEVEL_MEDIUM),
            f"after Leave seat {late} is {seat}",
        )
        # The other seat plays on; the bot's moves for the seat come inside its calls.
        bot_moves = 0
        for _ in range(50):
            if bot_moves or m.view.phase == pb.PHASE_OVER:
                break
            check(
                not (m.view.phase == pb.PHASE_PLAYING and m.view.turn == late),
                f"seat {late}, which a bot holds, was left on turn",
            )
            bot_moves += moved_by(m.step(), late)
        check(m.view.phase != pb.PHASE_OVER, "the match ended while the seat was away")
        back = self.client.return_to_seat(m.token, late, m.creds[late])
        m.take(back.state, back.view)
        seat = m.view.seats[late]
        check(
            any(
                e.WhichOneof("kind") == "seat_returned" and e.seat_returned.seat == late
                for e in back.events
            )
            and (seat.kind, seat.absent, seat.timeouts_in_row)
            == (pb.SEAT_KIND_CLAIMED, pb.ABSENCE_REASON_UNSPECIFIED, 0),
            f"after ReturnToSeat seat {late} is {seat}, events {list(back.events)}",
        )
        # To the end, both players back at the table.
        for _ in range(2000):
            if m.view.phase == pb.PHASE_OVER:
                break
            m.step()
        check(
            m.view.phase == pb.PHASE_OVER and m.view.HasField("winner_side"),
            "the clocked match did not end with a winner",
        )
        self.say(
            "  turn clocks: a claim at once refused TIMEOUT_NOT_DUE with the view's "
            f"claimable_at_ms; on a 1 s clock seat {late}'s timeout claimed by seat {waiting} "
            f"once due ({not_due} TIMEOUT_NOT_DUE waited out), SeatAbsent and the bot's move, "
            f"its late move refused TURN_TIMED_OUT; it left (the bot moved {bot_moves} time(s) "
            f"for it), came back, and the match ended after {m.view.moves} moves ({m.late} own "
            "moves too late for this machine, claimed)"
        )

    def on_turn(self, match: Match, seen) -> None:
        token, seat, n = match.token, seen.turn, seen.rules.players
        cred = match.creds[seat]
        other = next(s for s in match.humans if s != seat)
        self.turns += 1

        def play(tile, end=pb.END_UNSPECIFIED, at=seat, credential=cred):
            return pb.PlayRequest(state=token, seat=at, tile=tile, end=end, credential=credential)

        missing = next(
            pb.Tile(a=a, b=b) for a, b in ALL_TILES if pb.Tile(a=a, b=b) not in seen.hand
        )
        if self.turns == 1:
            self.expect(pb.WRONG_PHASE, "Deal", pb.DealRequest(state=token))
            self.expect(pb.WRONG_PHASE, "ClaimSeat", pb.ClaimSeatRequest(state=token, seat=seat))
            self.expect(
                pb.NOT_YOUR_TURN,
                "Play",
                play(seen.hand[0], at=other, credential=match.creds[other]),
                metadata={"turn": str(seat)},
            )
            self.expect(
                pb.NOT_YOUR_TURN,
                "Draw",
                pb.DrawRequest(state=token, seat=other, credential=match.creds[other]),
                metadata={"turn": str(seat)},
            )
            self.expect(
                pb.NOT_YOUR_TURN,
                "Suggest",
                pb.SuggestRequest(
                    state=token, seat=other, level=pb.BOT_LEVEL_EASY, credential=match.creds[other]
                ),
            )
            self.expect(pb.INVALID_FIELD, "Play", play(seen.hand[0], at=n + 3), field="seat")
            self.expect(pb.INVALID_FIELD, "Play", play(pb.Tile(a=7, b=1)), field="tile.a")
            self.expect(
                pb.INVALID_FIELD,
                "Play",
                pb.PlayRequest(state=token, seat=seat, credential=cred),
                field="tile",
            )
            self.expect(pb.TILE_NOT_IN_HAND, "Play", play(missing))
            # Acting, looking or asking for a seat without its credential is refused
            # before the move is looked at, so the refusal is the same whatever tile is
            # named: it cannot be used to probe the seat's hand.
            for credential, reason in (
                (b"", pb.CREDENTIAL_REQUIRED),
                (match.creds[other], pb.CREDENTIAL_INVALID),
            ):
                held = self.expect(reason, "Play", play(seen.hand[0], credential=credential))
                absent = self.expect(reason, "Play", play(missing, credential=credential))
                check(
                    (held.code, held.message, held.metadata, held.fields)
                    == (absent.code, absent.message, absent.metadata, absent.fields),
                    f"a refusal for want of seat {seat}'s credential differs with the tile named",
                )
            self.expect(
                pb.CREDENTIAL_REQUIRED,
                "Suggest",
                pb.SuggestRequest(state=token, seat=seat, level=pb.BOT_LEVEL_EASY),
            )
            # One credential per request: a viewer other than the seat acting needs one
            # of its own, so it is refused.
            self.expect(
                pb.CREDENTIAL_INVALID,
                "Play",
                pb.PlayRequest(
                    state=token, seat=seat, viewer=other, tile=seen.hand[0], credential=cred
                ),
            )
        if seen.legal_moves and pb.MUST_PLAY not in self.seen:
            self.expect(
                pb.MUST_PLAY, "Draw", pb.DrawRequest(state=token, seat=seat, credential=cred)
            )
        if not seen.layout and pb.END_NOT_OPEN not in self.seen:
            self.expect(pb.END_NOT_OPEN, "Play", play(seen.hand[0], pb.END_UP))
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
            if not fits and pb.TILE_DOES_NOT_MATCH not in self.seen:
                self.expect(pb.TILE_DOES_NOT_MATCH, "Play", play(t))
            elif fits and open_ends - fits and self.turns % 7 == 0:
                self.expect(pb.TILE_DOES_NOT_MATCH, "Play", play(t, min(open_ends - fits)))
            if len(fits) > 1 and pb.AMBIGUOUS_END not in self.seen:
                self.expect(pb.AMBIGUOUS_END, "Play", play(t))
            if fits and pb.END_DOWN not in open_ends and self.turns % 5 == 0:
                self.expect(pb.END_NOT_OPEN, "Play", play(t, pb.END_DOWN))
        if self.turns >= 10 and not self.lineage_shown and len(seen.legal_moves) >= 2:
            self.lineage(match, seen)
            self.lineage_shown = True

    def lineage(self, match: Match, seen) -> None:
        """state_id tells branches apart: a retried move gives the same id, another move
        from the same token another id, and a relay keeping the latest id refuses both a
        fork and a stale token by a compare-and-set on previous_state_id."""
        old_token, old_view = match.first_dealt
        old = self.client.call("Score", pb.ScoreRequest(state=old_token)).view
        check(
            old.match_id == seen.match_id and old.moves == old_view.moves < seen.moves,
            "an older token's view does not show fewer moves",
        )
        check(
            old.state_id == old_view.state_id != seen.state_id,
            "an older token's view does not show its own state_id",
        )
        seat = seen.turn

        def play(move):
            request = pb.PlayRequest(
                state=match.token, tile=move.tile, end=move.end, **match.as_seat(seat)
            )
            return self.client.call("Play", request).view

        first, retried, other = (
            play(seen.legal_moves[0]),
            play(seen.legal_moves[0]),
            play(seen.legal_moves[1]),
        )
        check(first.state_id == retried.state_id, "a retried move gave another state_id")
        check(first.state_id != other.state_id, "two different moves gave the same state_id")
        check(
            first.previous_state_id == other.previous_state_id == seen.state_id,
            "a move's previous_state_id is not its token's state_id",
        )
        # What a relay holding seen.state_id does with these three answers.
        latest = seen.state_id
        verdicts = []
        for view in (first, retried, other):
            if view.previous_state_id == latest:
                latest = view.state_id
                verdicts.append("taken")
            elif view.state_id == latest:
                verdicts.append("the same state again")
            else:
                verdicts.append("refused")
        check(
            verdicts == ["taken", "the same state again", "refused"], f"relay verdicts {verdicts}"
        )
        stale = "taken" if old.state_id == latest else "refused"
        check(stale == "refused", "a relay would take a stale token")
        self.say(
            f"  lineage: an older token still answers (moves {old.moves} < {seen.moves}) "
            "with its own state_id; a retried move gives the same state_id and another move "
            "another one, so a relay's compare-and-set on previous_state_id takes the move, "
            "sees the retry as the same state and refuses the fork"
        )

    def over(self, match: Match) -> None:
        token, me = match.token, match.humans[0]
        self.expect(pb.GAME_OVER, "Deal", pb.DealRequest(state=token))
        self.expect(
            pb.GAME_OVER,
            "Play",
            pb.PlayRequest(state=token, tile=pb.Tile(a=0, b=0), **match.as_seat(me)),
        )
        self.expect(pb.GAME_OVER, "Draw", pb.DrawRequest(state=token, **match.as_seat(me)))
        unprovokable = UNPROVOKABLE | ({pb.SEED_NOT_ALLOWED} if self.seeded else set())
        missing = set(REASONS) - unprovokable - self.seen
        check(
            not missing,
            f"never had the chance to provoke {sorted(map(reason_name, missing))}",
        )
        check(self.lineage_shown, "never had the chance to show the state lineage")
        self.say(
            f"provoked {len(self.seen)} documented reasons: "
            f"{', '.join(sorted(map(reason_name, self.seen)))}"
        )


class ClockedMatch:
    """A hot-seat match of two on `rules` (this client holds both seats' credentials):
    the latest token, the view, and when that view arrived (time.monotonic())."""

    def __init__(self, client: Client, rules) -> None:
        self.client = client
        answer = client.call(
            "NewGame",
            pb.NewGameRequest(
                rules=rules, seats=[pb.SeatSetup(claim=True), pb.SeatSetup(claim=True)], viewer=0
            ),
        )
        self.creds = {c.seat: c.credential for c in answer.credentials}
        self.take(answer.state, answer.view)
        # The seats' own moves refused TURN_TIMED_OUT (this machine too slow for the
        # clock), each then claimed by the seat itself: counted, never expected.
        self.late = 0

    def take(self, token: bytes, view) -> None:
        self.token, self.view, self.received_at = token, view, time.monotonic()

    def deal(self) -> None:
        answer = self.client.call(
            "Deal", pb.DealRequest(state=self.token, viewer=0, credential=self.creds[0])
        )
        self.take(answer.state, answer.view)

    def step(self) -> list:
        """One call: a deal between hands, else the seat on turn's move (its first legal
        move, or a draw) from its own view. A move refused TURN_TIMED_OUT changed
        nothing: the seat claims its own timeout, and goes on from that answer."""
        if self.view.phase == pb.PHASE_DEALING:
            self.deal()
            return []
        seat = self.view.turn
        cred = self.creds[seat]
        seen = self.client.call(
            "Score", pb.ScoreRequest(state=self.token, viewer=seat, credential=cred)
        ).view
        mine = {"state": self.token, "seat": seat, "viewer": seat, "credential": cred}
        try:
            if seen.must_draw:
                answer = self.client.call("Draw", pb.DrawRequest(**mine))
            else:
                move = seen.legal_moves[0]
                answer = self.client.call(
                    "Play", pb.PlayRequest(tile=move.tile, end=move.end, **mine)
                )
        except ApiError as e:
            if e.reason != pb.TURN_TIMED_OUT:
                raise
            self.late += 1
            answer = self.client.claim_timeout(self.token, seat, cred)
        self.take(answer.state, answer.view)
        return list(answer.events)


def moved_by(events, seat: int) -> bool:
    """Whether the events hold a play, draw or pass of `seat`."""
    for e in events:
        kind = e.WhichOneof("kind")
        if kind in ("tile_played", "tile_drawn", "passed") and getattr(e, kind).seat == seat:
            return True
    return False


def absent_at(events, seat: int, why: int) -> int:
    """The index of `seat`'s SeatAbsent for `why` among the events, or -1."""
    for i, e in enumerate(events):
        absent = e.seat_absent if e.WhichOneof("kind") == "seat_absent" else None
        if absent is not None and (absent.seat, absent.reason) == (seat, why):
            return i
    return -1


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
    parser.add_argument(
        "--seed",
        type=int,
        help="a replayable match; only a server started with --allow-client-seeds takes it",
    )
    parser.add_argument(
        "--claim-seats",
        action="store_true",
        help="leave the human seats open in NewGame and claim each with ClaimSeat",
    )
    parser.add_argument(
        "--bots",
        default="",
        help="who plays each seat, comma-separated in seat order: easy, medium or hard for "
        "the server's bot at that level, human (or -) for a seat this client plays "
        "(e.g. 'human,hard': seat 1 is the server's HARD bot)",
    )
    parser.add_argument(
        "--hints",
        choices=sorted(LEVELS),
        help="the human seats play what Suggest at this level advises",
    )
    parser.add_argument(
        "--check-errors",
        action="store_true",
        help="also provoke every documented error a client can cause",
    )
    parser.add_argument("--quiet", action="store_true", help="hands and the sheet only")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per call")
    args = parser.parse_args()

    # The client knows what to do about every reason of the proto's ErrorReason.
    unknown = set(pb.ErrorReason.values()) - {pb.ERROR_REASON_UNSPECIFIED} - set(REASONS)
    if unknown:
        sys.exit(f"allfives client: no advice for {sorted(map(reason_name, unknown))}")

    rules = pb.Rules(players=args.players, partnership=args.partnership, target=args.target)
    if args.winner_takes_pips:
        rules.settlement = pb.SETTLEMENT_RULE_WINNER_TAKES_PIPS
    bots: dict[int, int] = {}
    for seat, name in enumerate(n for n in args.bots.split(",") if n):
        if name not in ("-", "human"):
            if name not in LEVELS or seat >= args.players:
                parser.error(f"--bots: {name!r} for seat {seat}")
            bots[seat] = LEVELS[name]
    humans = args.players - len(bots)
    if humans < 1:
        parser.error("--bots: leave at least one seat to this client")
    if args.check_errors and humans < 2:
        parser.error("--check-errors needs two human seats (one to act out of turn)")

    def say(line: str) -> None:
        print(line, flush=True)

    started = time.monotonic()
    with grpc.insecure_channel(args.addr) as channel:
        client = Client(channel, args.timeout)
        probe = ErrorProbe(client, say, seeded=args.seed is not None) if args.check_errors else None
        hints = LEVELS[args.hints] if args.hints else None
        match = Match(client, say, not args.quiet, bots, args.claim_seats, hints)
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
    table = "".join(f", seat {s} the {level_name(l).lower()} bot" for s, l in sorted(bots.items()))
    print(
        f"python client: {view.rules.players} players"
        f"{' in partnerships' if view.rules.partnership else ''}{table}: match over after "
        f"{view.hand_number} hands and {view.moves} moves ({match.bot_moves} by the "
        f"server's bots), {client.calls} calls ({client.retries} retried, {match.claims} "
        f"ClaimSeat, {match.suggestions} hints) in {seconds:.1f} s; every check held"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
