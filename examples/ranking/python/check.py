#!/usr/bin/env python3
"""Runs ranking.py on what driver.py wrote, against the real server's key set
(.ci/ranking runs it): every genuine result is taken, its claims the match's (each
human seat's `player` the id the driver's pass named for it, its rating keyed
`player:<id>`); each
submitted again is refused as a replay, and so is every stateless match's second
branch; a verifier on its defaults refuses exactly the stateless ones (unrecorded), and
one allowing unrecorded results refuses exactly those without passes (anonymous);
every forgery is refused, by the defence it was made to meet (each against an empty
store, so no other check hides a missing one). Then the ratings: 200 matches rated,
every human seat's rating moved once per match, each winner's rose, each last-placed
human's fell, and nothing moved on a refusal.

    python check.py --jwks-url URL --corpus corpus.json

Prints 'ranking-python: N passed, N failed' and exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
import collections
import json
import sqlite3
import sys
import tempfile

from ranking import Ranking, Refused, ResultVerifier, rating_key


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok: bool, what: str) -> None:
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAILED:", what)


def outcome(ranking: Ranking, result: str) -> tuple[str, dict | None]:
    """("taken", the claims), or the refusal's word, or the error no refusal should be."""
    try:
        return "taken", ranking.take(result)
    except Refused as refusal:
        return refusal.why, None
    except Exception as err:  # a crash is a failure too, counted with the rest
        return f"error {type(err).__name__}: {err}", None


def matches_expectation(claims: dict, expect: dict) -> bool:
    seats = [{k: s[k] for k in ("name", "player") if k in s} if "bot" not in s
             else {"bot": s["bot"]} for s in claims["seats"]]
    rules = claims["rules"]
    return (claims["jti"] == expect["jti"] and claims["state"] == expect["state"]
            and claims["recorded"] == expect["recorded"]
            and rules["players"] == expect["players"]
            and rules["partnership"] == expect["partnership"]
            and rules["target"] == expect["target"]
            and claims["scores"] == expect["scores"] and claims["winner"] == expect["winner"]
            and seats == expect["seats"])


def snapshot(ranking: Ranking) -> list:
    return ranking.db.execute("SELECT * FROM ratings ORDER BY player").fetchall()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jwks-url", required=True)
    parser.add_argument("--corpus", required=True)
    args = parser.parse_args()
    corpus = json.load(open(args.corpus))
    # The stateless matches' results are taken too (their second branches refused), and
    # they name no player (that server takes no passes): rated by display name.
    verifier = ResultVerifier(args.jwks_url, corpus["issuer"], allow_unrecorded=True,
                              allow_anonymous=True)
    t = Tally()

    with tempfile.TemporaryDirectory() as tmp:
        ranking = Ranking(sqlite3.connect(f"{tmp}/ranking.db"), verifier)
        # Every genuine result taken, its claims the match's; the ratings move as the
        # result says.
        appearances = collections.Counter()
        for g in corpus["genuine"]:
            claims = verifier.verify(g["result"])  # to know the seats before rating
            humans = [s for s in claims["seats"] if "bot" not in s]
            before = {rating_key(s): ranking.rating(rating_key(s)) for s in humans}
            verdict, taken = outcome(ranking, g["result"])
            t.check(verdict == "taken", f"genuine result of {g['expect']['jti']}: {verdict}")
            if taken is None:
                continue
            t.check(matches_expectation(taken, g["expect"]),
                    f"the claims of {g['expect']['jti']} are not its final view's")
            scores, winner = taken["scores"], taken["winner"]
            last = min(scores)
            signed = [s.get("player") for s in g["expect"]["seats"] if "bot" not in s]
            for s, player in zip(humans, signed):
                key = rating_key(s)
                if player:  # the seat's pass named a player: rated as that player
                    t.check(key == "player:" + player,
                            f"seat {s['seat']} of {taken['jti']} is rated as {key}, its pass "
                            f"named {player}")
                appearances[key] += 1
                mu_before = (before[key] or (ranking.model.mu, 0))[0]
                mu_after = ranking.rating(key)[0]
                if s["side"] == winner:
                    t.check(mu_after > mu_before, f"{key} won {taken['jti']} but fell")
                elif scores[s["side"]] == last and scores.count(last) == 1:
                    t.check(mu_after < mu_before, f"{key} came last in {taken['jti']} but rose")
        rated = ranking.db.execute("SELECT count(*) FROM taken").fetchone()[0]
        t.check(rated == len(corpus["genuine"]), f"{rated} matches rated")
        counts = dict(ranking.db.execute("SELECT player, matches FROM ratings").fetchall())
        t.check(counts == dict(appearances), "every human's match count is their seats'")
        ids = {s["player"] for g in corpus["genuine"] for s in g["expect"]["seats"]
               if s.get("player")}
        t.check({k for k in counts if k.startswith("player:")} == {"player:" + p for p in ids},
                "the ratings keyed player:<id> are the players the passes named")

        # Replays, and second branches: refused by jti, nothing moves.
        ratings = snapshot(ranking)
        for g in corpus["genuine"]:
            verdict, _ = outcome(ranking, g["result"])
            t.check(verdict == "replay", f"a second submission of {g['expect']['jti']}: {verdict}")
        for b in corpus["branches"]:
            verdict, _ = outcome(ranking, b["result"])
            t.check(verdict == "replay", f"a second branch of {b['jti']}: {verdict}")
        t.check(snapshot(ranking) == ratings, "refused results moved a rating")
        rated = ranking.db.execute("SELECT count(*) FROM taken").fetchone()[0]
        t.check(rated == len(corpus["genuine"]), f"{rated} matches rated after refusals")
        best = ranking.db.execute(
            "SELECT player, mu, sigma, matches FROM ratings ORDER BY mu - 3 * sigma DESC LIMIT 3"
        ).fetchall()
        print(f"ranking-python: {rated} matches rated; {len(counts)} players; the top by "
              f"mu - 3 sigma: " + ", ".join(f"{p} {mu:.1f}±{sg:.1f} ({n})" for p, mu, sg, n in best))

    # By default: exactly the stateless matches' results are refused, as unrecorded.
    strict = ResultVerifier(args.jwks_url, corpus["issuer"])
    for g in corpus["genuine"]:
        verdict = "taken"
        try:
            strict.verify(g["result"])
        except Refused as refusal:
            verdict = refusal.why
        want = "taken" if g["expect"]["recorded"] else "unrecorded"
        t.check(verdict == want, f"by default, {g['expect']['jti']}: {verdict}, want {want}")

    # A ranked verifier taking unrecorded results still refuses every result with a human
    # seat its player claimed without a pass (the stateless server takes none): exactly
    # those, as anonymous.
    ranked = ResultVerifier(args.jwks_url, corpus["issuer"], allow_unrecorded=True)
    anonymous = []
    for g in corpus["genuine"]:
        verdict = "taken"
        try:
            ranked.verify(g["result"])
        except Refused as refusal:
            verdict = refusal.why
            anonymous.append(str(refusal))
        named = all(s.get("player") for s in g["expect"]["seats"] if "bot" not in s)
        want = "taken" if named else "anonymous"
        t.check(verdict == want, f"without passes, {g['expect']['jti']}: {verdict}, want {want}")
    print(f"ranking-python: {len(anonymous)} results without passes refused"
          + (f", e.g. {anonymous[0]}" if anonymous else ""))

    # Forgeries, each against an empty store: only its own defence can refuse it.
    by_name = collections.Counter()
    for m in corpus["mutations"]:
        verdict, _ = outcome(Ranking(sqlite3.connect(":memory:"), verifier), m["result"])
        t.check(verdict == m["refused_by"], f"{m['name']}: {verdict}, want {m['refused_by']}")
        by_name[m["name"], m["refused_by"], verdict] += 1
    for (name, defence, verdict), n in sorted(by_name.items()):
        how = f"refused by {defence}" if verdict == defence else f"{verdict}, NOT refused by {defence}"
        print(f"ranking-python: {name}: {n} {how}")
    print(f"ranking-python: {t.passed} passed, {t.failed} failed")
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
