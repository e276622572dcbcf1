#!/usr/bin/env python3
"""Takes results into a ranking, as a studio's ranking server would: one result (a
compact JWS) a line on standard input, each verified against the service's key set,
refused if its match was taken already, and rated (ranking.py). Prints a line a result
and then the ratings, best first (by mu - 3 sigma, a cautious estimate).

    python take.py --server https://allfives.example --issuer https://allfives.example < results.txt
"""

from __future__ import annotations

import argparse
import sqlite3
import sys

from ranking import Ranking, Refused, ResultVerifier


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="the service's base URL (its API port)")
    parser.add_argument("--issuer", required=True, help="its --result-issuer")
    parser.add_argument("--db", default="ranking.db")
    parser.add_argument("--allow-unrecorded", action="store_true",
                        help="take results of matches played without a match store")
    parser.add_argument("--allow-anonymous", action="store_true",
                        help="take results with a human seat whose player showed no pass "
                        "(no player id; rated by display name)")
    args = parser.parse_args()
    verifier = ResultVerifier(args.server.rstrip("/") + "/.well-known/jwks.json", args.issuer,
                              allow_unrecorded=args.allow_unrecorded,
                              allow_anonymous=args.allow_anonymous)
    ranking = Ranking(sqlite3.connect(args.db), verifier)
    taken = refused = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            claims = ranking.take(line.strip())
            taken += 1
            print(f"taken: match {claims['jti']}, scores {claims['scores']}, side "
                  f"{claims['winner']} won")
        except Refused as refusal:
            refused += 1
            print(f"refused: {refusal}")
    print(f"{taken} taken, {refused} refused")
    for player, mu, sigma, n in ranking.db.execute(
            "SELECT player, mu, sigma, matches FROM ratings ORDER BY mu - 3 * sigma DESC"):
        print(f"  {player:<16} mu {mu:5.1f}  sigma {sigma:4.1f}  matches {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
