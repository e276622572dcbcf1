"""Takes allfives match results into a ranking: verify, refuse a replay, rate.

Paste this into a studio's ranking server. A client sends the `result` of a finished
match (GameView.result, a compact JWS the service signed); `Ranking.take` verifies it
against the service's published keys with PyJWT, refuses a match already taken, and
updates the players' ratings with openskill (Weng-Lin, Plackett-Luce), all in one
SQLite transaction. What a result proves and what it does not: docs/security.md,
"Signed results".

    ranking = Ranking(sqlite3.connect("ranking.db"),
                      ResultVerifier("https://allfives.example/.well-known/jwks.json",
                                     issuer="https://allfives.example"))
    claims = ranking.take(result)          # raises Refused, with .why

On its defaults it takes only what a ranked deployment signs: matches a match store
recorded (`recorded: true`) whose every human seat names the studio's player id from a
signed pass (`player`); ratings are keyed on that id (`player:<id>`).

One `Ranking` (one SQLite connection) per thread or process: a connection shared
between threads would mix their transactions, and a replay's rollback could undo
another thread's taking of a match id. Under contention SQLite answers `database is
locked` (sqlite3.OperationalError): retry the result later; it was not taken.

Needs requirements.txt (PyJWT[crypto] 2.15.1, openskill 6.2.0).
"""

from __future__ import annotations

import sqlite3
from typing import Any

import jwt  # PyJWT
from openskill.models import PlackettLuce

# The `typ` the service gives its results: no other token the keys sign is of it.
RESULT_TYPE = "allfives-result+jwt"
# Every claim the ranking reads (GameView.result's comment in the proto lists them).
REQUIRED_CLAIMS = ["iss", "iat", "exp", "jti", "state", "recorded", "rules", "seats",
                   "scores", "winner"]

# The clocks of the service and of the ranking server disagree a little: a result
# signed a second ago by a clock ahead of ours would otherwise be "issued in the future".
LEEWAY_SECONDS = 60

# Bots play as fixed-rating players: a bot of one level plays the same way in every
# match, so its strength is a constant; a win against it counts as a win against a
# player of that rating, and no player can move a bot's rating by farming it. These
# are guesses: set them from your own players' results against each level.
BOT_RATINGS = {
    "BOT_LEVEL_EASY": (15.0, 2.0),
    "BOT_LEVEL_MEDIUM": (25.0, 2.0),
    "BOT_LEVEL_HARD": (32.0, 2.0),
}


class Refused(Exception):
    """A result not taken. `why` is one word: signature, unknown-key, algorithm, type,
    issuer, expired, claims, unrecorded, anonymous, replay, seats."""

    def __init__(self, why: str, detail: str):
        super().__init__(f"{why}: {detail}")
        self.why = why


class ResultVerifier:
    """Checks a result's signature against the service's key set, and its header and
    claims. Changes nothing."""

    def __init__(self, jwks_url: str, issuer: str, *, allow_unrecorded: bool = False,
                 allow_anonymous: bool = False):
        # The set is fetched once and kept for an hour (the service's max-age); a kid
        # not in it fetches the set again (at most every 30 s), which is how a key the
        # service rotated to is learnt (docs/operations.md, "Result keys").
        self.keys = jwt.PyJWKClient(jwks_url, cache_jwk_set=True, lifespan=3600, timeout=10)
        if not issuer:  # PyJWT would then take any iss
            raise ValueError("the service's issuer (its --result-issuer) is required")
        self.issuer = issuer
        # A result with recorded: false comes from a match played without a match
        # store: whoever holds an older token of it can play on from there to another
        # ending, signed just the same, and send the ending they like best (only the
        # first to arrive is taken, by jti). Refused unless allowed: not for a ranked
        # mode (docs/security.md, "Signed results").
        self.allow_unrecorded = allow_unrecorded
        # A human seat without `player` was claimed without the studio's pass: its only
        # name is the display name its player typed, which anyone can type. Refused
        # unless allowed: a ranked deployment runs the service with the studio's pass
        # keys and --pass-required (docs/security.md, "Player passes"), so every human
        # seat of its results names the studio's player id.
        self.allow_anonymous = allow_anonymous

    def verify(self, result: str) -> dict[str, Any]:
        """The result's claims, once its signature, header and claims hold."""
        try:
            # The key whose kid the header names, from the published set only.
            key = self.keys.get_signing_key_from_jwt(result)
        except jwt.PyJWKClientError as err:
            raise Refused("unknown-key", str(err)) from err
        except jwt.DecodeError as err:
            raise Refused("claims", str(err)) from err
        try:
            decoded = jwt.decode_complete(
                result,
                key,
                algorithms=["EdDSA"],  # never the header's choice: no "none", no HS256
                issuer=self.issuer,
                leeway=LEEWAY_SECONDS,  # on iat and exp alike
                options={"require": REQUIRED_CLAIMS, "verify_exp": True, "verify_iat": True},
            )
        except jwt.InvalidAlgorithmError as err:
            raise Refused("algorithm", str(err)) from err
        except jwt.InvalidSignatureError as err:
            raise Refused("signature", str(err)) from err
        except jwt.InvalidIssuerError as err:
            raise Refused("issuer", str(err)) from err
        except jwt.ExpiredSignatureError as err:
            raise Refused("expired", str(err)) from err
        except jwt.InvalidTokenError as err:  # a missing claim, a bad iat, malformed
            raise Refused("claims", str(err)) from err
        # Checked on the verified header: another kind of token signed by these keys
        # (were there one) is not a result.
        if decoded["header"].get("typ") != RESULT_TYPE:
            raise Refused("type", f"typ {decoded['header'].get('typ')!r}")
        claims = decoded["payload"]
        if claims["recorded"] is not True and not self.allow_unrecorded:
            raise Refused("unrecorded", "the match was played without a match store")
        seats = claims["seats"]
        if not isinstance(seats, list) or not all(isinstance(s, dict) for s in seats):
            raise Refused("claims", "seats malformed")
        if not self.allow_anonymous:
            for seat in seats:
                if seat.get("bot") is None and not seat.get("player"):
                    raise Refused("anonymous", f"seat {seat.get('seat')} has no player id: its "
                                  "player showed no pass (a ranked deployment requires them)")
        return claims


def rating_key(seat: dict[str, Any]) -> str:
    """Whose rating a human seat moves: the studio's player id its signed pass named
    (`player`); else, where anonymous seats are allowed, the display name, which players
    choose freely and which proves nothing (README)."""
    if seat.get("player"):
        return "player:" + seat["player"]
    return "name:" + seat["name"]


class Ranking:
    """The ratings and the match ids taken, in one SQLite database."""

    def __init__(self, db: sqlite3.Connection, verifier: ResultVerifier):
        db.isolation_level = None  # transactions are begun explicitly below
        db.executescript(
            """
            CREATE TABLE IF NOT EXISTS taken (
                jti TEXT PRIMARY KEY,        -- the match id: one result per match
                state TEXT NOT NULL,
                taken_at INTEGER NOT NULL DEFAULT (strftime('%s', 'now'))
            );
            CREATE TABLE IF NOT EXISTS ratings (
                player TEXT PRIMARY KEY, mu REAL NOT NULL, sigma REAL NOT NULL,
                matches INTEGER NOT NULL
            );
            """
        )
        self.db = db
        self.verifier = verifier
        self.model = PlackettLuce()

    def take(self, result: str) -> dict[str, Any]:
        """Verifies `result`, records its match id and rates it, or refuses it
        (Refused) and changes nothing."""
        claims = self.verifier.verify(result)
        teams, ranks = self._sides(claims)
        # One transaction: the id and the ratings are written together or not at all,
        # so a crash cannot take a result twice or lose one. IMMEDIATE takes the write
        # lock first: two processes taking results cannot rate from the same old mu.
        self.db.execute("BEGIN IMMEDIATE")
        try:
            try:
                self.db.execute("INSERT INTO taken (jti, state) VALUES (?, ?)",
                                (claims["jti"], claims["state"]))
            except sqlite3.IntegrityError as err:
                raise Refused("replay", f"match {claims['jti']} was taken already") from err
            self._rate(teams, ranks)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return claims

    def rating(self, key: str) -> tuple[float, float] | None:
        row = self.db.execute("SELECT mu, sigma FROM ratings WHERE player = ?", (key,)).fetchone()
        return (row[0], row[1]) if row else None

    @staticmethod
    def _sides(claims: dict[str, Any]) -> tuple[list[list[dict]], list[int]]:
        """The seats grouped by side (partners are one team), and each side's rank:
        the winner first, then by score."""
        seats, scores, winner = claims["seats"], claims["scores"], claims["winner"]
        if not (isinstance(scores, list) and len(scores) >= 2
                and isinstance(winner, int) and 0 <= winner < len(scores)):
            raise Refused("claims", "scores or winner malformed")
        teams: list[list[dict]] = [[] for _ in scores]
        keys = set()
        for seat in seats:
            if seat.get("bot") is None:
                if not seat.get("player") and not seat.get("name"):
                    raise Refused("seats", f"seat {seat['seat']} has no name to rate")
                key = rating_key(seat)
                if key in keys:  # one name in two seats: whose rating would it be?
                    raise Refused("seats", f"{key} sits in two seats")
                keys.add(key)
            teams[seat["side"]].append(seat)
        if not keys:
            raise Refused("seats", "no human seat")
        ranks = [1 if side == winner else
                 2 + sum(1 for o, s in enumerate(scores) if o != winner and s > scores[side])
                 for side in range(len(scores))]
        return teams, ranks

    def _rate(self, teams: list[list[dict]], ranks: list[int]) -> None:
        ratings = []
        for team in teams:
            members = []
            for seat in team:
                if seat.get("bot") is not None:
                    mu, sigma = BOT_RATINGS[seat["bot"]]
                    members.append(self.model.rating(mu=mu, sigma=sigma, name=None))
                else:
                    key = rating_key(seat)
                    known = self.rating(key)
                    members.append(self.model.rating(*(known or (None, None)), name=key))
            ratings.append(members)
        for team in self.model.rate(ratings, ranks=ranks):
            for player in team:
                if player.name is None:
                    continue  # a bot: its rating is fixed
                self.db.execute(
                    "INSERT INTO ratings (player, mu, sigma, matches) VALUES (?, ?, ?, 1) "
                    "ON CONFLICT (player) DO UPDATE SET mu = excluded.mu, "
                    "sigma = excluded.sigma, matches = matches + 1",
                    (player.name, player.mu, player.sigma),
                )
