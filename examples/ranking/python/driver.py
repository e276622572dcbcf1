#!/usr/bin/env python3
"""Plays real matches against allfives servers and writes what the verifiers are
tested on (.ci/ranking runs it; it is a test harness, not part of what a studio copies).

Every match is played hot seat: the driver claims each human seat in NewGame under a
display name and plays it with its first legal move; with --pass-key it is the studio's
login service too, and claims each human seat with a pass it signed (Ed25519, five
minutes to live) for that seat's player, a stable id from a pool of twelve, so ratings
build up across matches (--write-pass-keys makes the key and the public JWK Set the
server is started with); bot seats are the server's, EASY
or MEDIUM; target 50, so a match is a few dozen calls. The mix cycles through 2, 3 and
4 players, partnerships, humans partnered with bots. Most matches are played on the
server with a match store (their results say recorded: true), every --stateless-every
th on the stateless one (recorded: false); each stateless match is then played again
from the token of its last deal, with the last legal move instead of the first, to a
second ending: another branch of the same match, signed with the same jti.

It writes a JSON file: every genuine result with the claims its final view says it
must carry; the second branches; results of a server signing with another key under
the same issuer (a key not in the set); and forgeries made from each genuine result,
each with the defence that must refuse it: its payload changed under the old signature
(score, winner, a seat's name), alg "none", HS256 keyed with the public key (the
algorithm-confusion attack), claims re-signed with the real key but another typ, an
expired exp, another issuer or no jti (what the header and claim checks stop; the
driver holds the CI's result key only to make these), and claims signed by a fresh key
under the real kid and under a kid of its own; and, for a result naming players, a seat's player changed to
another player of the pool under the old signature, and two seats' players swapped.

    python driver.py --addr HOST:PORT --matches 3 --results results.txt   # the README's
    python driver.py --write-pass-keys DIR                              # .ci/ranking's
    python driver.py --addr A --recorded --pass-key DIR/pass-key.pem --pass-issuer ISS \\
        --stateless-addr B --foreign-addr C --result-key HEX --issuer URL \\
        --matches 200 --out corpus.json
"""

from __future__ import annotations

import argparse
import base64
import copy
import hashlib
import hmac
import json
import pathlib
import random
import sys
import time

import grpc
import jwt  # PyJWT: signs the test's forgeries; never used to check anything here
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (Encoding, NoEncryption,
                                                          PrivateFormat, PublicFormat,
                                                          load_pem_private_key)

HERE = pathlib.Path(__file__).resolve().parent
# The code examples/clients/python/generate.sh made from proto/.
sys.path.insert(0, str(HERE.parent.parent / "clients" / "python" / "gen"))
from allfives.v1 import allfives_pb2 as pb  # noqa: E402
from allfives.v1 import allfives_pb2_grpc as pb_grpc  # noqa: E402

RESULT_TYPE = "allfives-result+jwt"
# The simulated players: each a display name and the studio's id for it (a pass's
# `sub`), the same in every match, so each plays dozens of the 200 and its rating
# accumulates.
NAMES = ["Ana", "Bogdan", "Chioma", "Dirk", "Elif", "Femi", "Greta", "Hoang", "Ines",
         "Jonas", "Kemal", "Lin"]
PLAYER_IDS = {n: f"studio-{n.lower()}-{i + 1:04d}" for i, n in enumerate(NAMES)}
# The passes: the studio's login service signs them for this service's audience.
PASS_AUDIENCE = "allfives"
PASS_KID = "studio-login-1"
PASS_LIFETIME = 300  # seconds: a pass is a bearer credential; minutes, not days
EASY, MEDIUM = pb.BOT_LEVEL_EASY, pb.BOT_LEVEL_MEDIUM
H = None  # a human seat
# Humans who all play their first legal move rarely score, and under the default
# settlement (own pips off) their scores fall below zero for many hands: their matches
# settle with the winner taking the pips, which ends them in a few hands.
TAKES = pb.SETTLEMENT_RULE_WINNER_TAKES_PIPS
# (players, partnership, seats, settlement): the mix, cycled through.
MIX = [
    (2, False, [H, EASY], None),
    (2, False, [H, H], TAKES),
    (3, False, [H, MEDIUM, H], None),
    (3, False, [H, H, H], TAKES),
    (4, False, [H, EASY, H, MEDIUM], None),
    (4, True, [H, H, H, H], TAKES),
    (4, True, [H, MEDIUM, H, EASY], None),  # two human partners against two bots
    (4, True, [H, H, EASY, H], TAKES),  # a human partnered with a bot
    (2, False, [H, MEDIUM], TAKES),
]
MAX_CALLS = 20_000  # a target-50 match takes a few dozen; far more means a stuck loop


class Studio:
    """The studio's login service: signs a player's pass (PyJWT, EdDSA)."""

    def __init__(self, key_file: str, issuer: str):
        self.key = load_pem_private_key(pathlib.Path(key_file).read_bytes(), password=None)
        self.issuer = issuer

    def pass_for(self, name: str) -> str:
        now = int(time.time())
        return jwt.encode({"iss": self.issuer, "aud": PASS_AUDIENCE, "sub": PLAYER_IDS[name],
                           "iat": now, "exp": now + PASS_LIFETIME},
                          self.key, algorithm="EdDSA", headers={"kid": PASS_KID, "typ": "JWT"})


def write_pass_keys(directory: str) -> None:
    """The studio's key: pass-key.pem (private, mode 0600) and pass-jwks.json (its
    public JWK Set, what the server's --pass-keys-file reads)."""
    out = pathlib.Path(directory)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    private = out / "pass-key.pem"
    private.touch(mode=0o600)
    private.write_bytes(pem)
    x = jwt.utils.base64url_encode(
        key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()
    (out / "pass-jwks.json").write_text(json.dumps({"keys": [
        {"kty": "OKP", "crv": "Ed25519", "x": x, "kid": PASS_KID, "alg": "EdDSA", "use": "sig"}]}))


def play(stub, players, partnership, seats, settlement, names, studio=None):
    """One whole match; returns (final view, the states and views right after each Deal,
    the credentials). With a studio, each human seat is claimed with its player's pass,
    and its own view must show that player's id."""
    setup = [pb.SeatSetup(bot=s) if s is not H else
             pb.SeatSetup(claim=True, display_name=n,
                          **{"pass": studio.pass_for(n) if studio else ""})  # a Python keyword
             for s, n in zip(seats, names)]
    humans = [i for i, s in enumerate(seats) if s is H]
    answer = stub.NewGame(pb.NewGameRequest(
        rules=pb.Rules(players=players, partnership=partnership, target=50,
                       settlement=settlement),
        seats=setup, viewer=humans[0]), timeout=10)
    creds = {c.seat: c.credential for c in answer.credentials}
    if studio:
        # The viewer's own seat shows its player id; the other seats only that they hold
        # a pass (the server does not --show-player-ids).
        for i in humans:
            seat = answer.view.seats[i]
            want = PLAYER_IDS[names[i]] if i == humans[0] else ""
            if not seat.pass_holder or seat.player_id != want:
                sys.exit(f"driver: seat {i} shows pass_holder {seat.pass_holder}, player id "
                         f"{seat.player_id!r} to seat {humans[0]}; want {want!r}")
    deals = []
    view = finish(stub, answer.state, answer.view, creds, humans, deals, "first")
    return view, deals, creds, humans


def finish(stub, state, view, creds, humans, deals, pick):
    """Plays on from (state, view) to the match's end: each human seat on turn plays
    its first (or last) legal move, or draws."""
    for _ in range(MAX_CALLS):
        if view.phase == pb.PHASE_OVER:
            return view
        if view.phase == pb.PHASE_DEALING:
            v = humans[0]
            answer = stub.Deal(pb.DealRequest(state=state, viewer=v, credential=creds[v]),
                               timeout=10)
            deals.append((answer.state, answer.view))
        else:
            seat = view.turn
            if not view.HasField("viewer") or view.viewer != seat:
                view = stub.Score(pb.ScoreRequest(state=state, viewer=seat,
                                                  credential=creds[seat]), timeout=10).view
            if view.must_draw:
                answer = stub.Draw(pb.DrawRequest(state=state, seat=seat, viewer=seat,
                                                  credential=creds[seat]), timeout=10)
            else:
                move = view.legal_moves[0 if pick == "first" else -1]
                answer = stub.Play(pb.PlayRequest(state=state, seat=seat, viewer=seat,
                                                  credential=creds[seat], tile=move.tile,
                                                  end=move.end), timeout=10)
        state, view = answer.state, answer.view
    sys.exit(f"driver: a match did not end in {MAX_CALLS} calls")


def expected(view, seats, names, recorded, passes):
    """The claims a result must carry, as the final view (and the driver's setup)
    says them."""
    return {
        "jti": view.match_id,
        "state": view.state_id.hex(),
        "recorded": recorded,
        "players": view.rules.players,
        "partnership": view.rules.partnership,
        "target": view.rules.target,
        "scores": [s.score for s in view.scores],
        "winner": view.winner_side,
        # A human seat: its display name, and the player id its pass named.
        "seats": [({"name": n, "player": PLAYER_IDS[n]} if passes else {"name": n})
                  if s is H else {"bot": pb.BotLevel.Name(s)} for s, n in zip(seats, names)],
    }


def parts(result):
    header, payload, signature = result.split(".")
    return json.loads(jwt.utils.base64url_decode(header)), \
        json.loads(jwt.utils.base64url_decode(payload)), signature


def b64json(value):
    return jwt.utils.base64url_encode(json.dumps(value).encode()).decode()


def with_payload(result, change):
    """The result with its payload changed, its header and signature kept."""
    header_b64, _, signature = result.split(".")
    claims = copy.deepcopy(parts(result)[1])
    change(claims)
    return f"{header_b64}.{b64json(claims)}.{signature}"


def hs256(claims, secret, kid):
    """An HS256 JWS keyed with `secret`, made with the standard library's HMAC: PyJWT
    refuses to use a public key (PEM or JWK) as an HMAC secret, an attacker does not."""
    header = b64json({"alg": "HS256", "typ": RESULT_TYPE, "kid": kid})
    signing_input = f"{header}.{b64json(claims)}"
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{jwt.utils.base64url_encode(mac).decode()}"


def forgeries(result, real_key, real_x, real_pem, fresh_key, jwks_text, i):
    """(name, the defence that must refuse it, token) for one genuine result."""
    header, claims, _ = parts(result)
    kid = header["kid"]
    now = int(time.time())

    def signed(key, payload, **head):
        return jwt.encode(payload, key, algorithm="EdDSA", headers={"kid": kid, "typ": RESULT_TYPE, **head})

    def bump_score(c):
        c["scores"][c["winner"]] += 5

    def other_winner(c):
        c["winner"] = (c["winner"] + 1) % len(c["scores"])

    def rename(c):
        seat = next(s for s in c["seats"] if "name" in s)
        seat["name"] = seat["name"] + "x"

    players = [s for s in claims["seats"] if s.get("player")]
    seated = {s["player"] for s in players}

    def other_player(c):
        # The first seat with a player id now names another player of the pool, one not
        # at this table (a thief crediting the win to a friend's account).
        seat = next(s for s in c["seats"] if s.get("player"))
        seat["player"] = next(p for p in PLAYER_IDS.values() if p not in seated)

    def swap_players(c):
        a, b = [s for s in c["seats"] if s.get("player")][:2]
        a["player"], b["player"] = b["player"], a["player"]

    expired = dict(claims, iat=now - 7200, exp=now - 3600)
    other_iss = dict(claims, iss="https://forger.example")
    no_jti = {k: v for k, v in claims.items() if k != "jti"}
    # The public key as the HMAC secret: its raw 32 bytes, its PEM or the set's JSON
    # text, whichever a confused verifier might hand its library.
    secret = [real_x, real_pem, jwks_text.encode()][i % 3]
    none_header = {"alg": "none", "typ": RESULT_TYPE, "kid": kid}
    by_player = []
    if players:
        by_player.append(("player changed to another's", "signature",
                          with_payload(result, other_player)))
    if len(players) >= 2:
        by_player.append(("two seats' players swapped", "signature",
                          with_payload(result, swap_players)))
    return by_player + [
        ("score changed", "signature", with_payload(result, bump_score)),
        ("winner changed", "signature", with_payload(result, other_winner)),
        ("seat name changed", "signature", with_payload(result, rename)),
        ("alg none", "algorithm", f"{b64json(none_header)}.{b64json(claims)}."),
        ("HS256 keyed with the public key", "algorithm", hs256(claims, secret, kid)),
        ("typ changed (signed by the real key)", "type", signed(real_key, claims, typ="JWT")),
        ("expired (signed by the real key)", "expired", signed(real_key, expired)),
        ("issuer changed (signed by the real key)", "issuer", signed(real_key, other_iss)),
        ("no jti (signed by the real key)", "claims", signed(real_key, no_jti)),
        ("a fresh key under the real kid", "signature", signed(fresh_key, claims)),
        ("a fresh key under its own kid", "unknown-key",
         signed(fresh_key, claims, kid="forger-" + kid[:8])),
    ]


_stubs: dict[str, pb_grpc.AllFivesServiceStub] = {}


def stub_of(addr: str) -> pb_grpc.AllFivesServiceStub:
    if addr not in _stubs:
        _stubs[addr] = pb_grpc.AllFivesServiceStub(grpc.insecure_channel(addr))
    return _stubs[addr]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addr", help="the server the matches are played on (required but "
                        "with --write-pass-keys)")
    parser.add_argument("--recorded", action="store_true",
                        help="it has a match store: its results must say recorded: true")
    parser.add_argument("--matches", type=int, default=200)
    parser.add_argument("--results", help="write each match's result here, a line each")
    parser.add_argument("--write-pass-keys", metavar="DIR",
                        help="make the studio's pass key: DIR/pass-key.pem, DIR/pass-jwks.json; "
                        "then exit")
    parser.add_argument("--pass-key", help="the studio's key (PEM): claim every human seat of "
                        "--addr with a pass it signs")
    parser.add_argument("--pass-issuer", help="the passes' iss (the server's --pass-issuer)")
    # The test's (.ci/ranking):
    parser.add_argument("--stateless-addr", help="the same keys, no store: every "
                        "--stateless-every th match is played there, and again to a second ending")
    parser.add_argument("--stateless-every", type=int, default=20)
    parser.add_argument("--foreign-addr", help="the same issuer, another key")
    parser.add_argument("--foreign", type=int, default=5)
    parser.add_argument("--result-key", help="the servers' result key (64 hex): the forgeries")
    parser.add_argument("--issuer")
    parser.add_argument("--out", help="write the results, their claims and the forgeries here")
    args = parser.parse_args()
    if args.write_pass_keys:
        write_pass_keys(args.write_pass_keys)
        return 0
    if not args.addr:
        parser.error("--addr is required")
    if bool(args.pass_key) != bool(args.pass_issuer):
        parser.error("--pass-key and --pass-issuer go together")

    started = time.monotonic()
    main_stub = stub_of(args.addr)
    rng = random.Random(44)
    studio = Studio(args.pass_key, args.pass_issuer) if args.pass_key else None
    if studio:
        # A ranked deployment (--pass-required): a seat claimed without a pass is refused.
        try:
            stub_of(args.addr).NewGame(pb.NewGameRequest(
                rules=pb.Rules(players=2, target=50),
                seats=[pb.SeatSetup(claim=True, display_name="Anon"), pb.SeatSetup(bot=EASY)],
                viewer=0), timeout=10)
            sys.exit("driver: a seat was claimed without a pass on the pass-requiring server")
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.UNAUTHENTICATED or "PASS_REQUIRED" not in repr(
                    err.trailing_metadata()) + (err.details() or ""):
                sys.exit(f"driver: a seat without a pass: {err.code()} {err.details()}")
    genuine, branches, foreign_results = [], [], []
    for i in range(args.matches):
        players, partnership, seats, settlement = MIX[i % len(MIX)]
        names = rng.sample(NAMES, len(seats))
        branch = args.stateless_addr and (i + 1) % args.stateless_every == 0
        stub = stub_of(args.stateless_addr) if branch else main_stub
        recorded = args.recorded and not branch
        # Passes on the main server only: the stateless one takes none (.ci/ranking).
        passes = studio if not branch else None
        view, deals, creds, humans = play(stub, players, partnership, seats, settlement, names,
                                          passes)
        assert view.result, "a finished match's view carries its result"
        genuine.append({"result": view.result,
                        "expect": expected(view, seats, names, recorded, passes is not None)})
        if branch:
            # Another branch: from the last deal's token, other moves, another ending.
            state, deal_view = deals[-1]
            other = finish(stub, state, deal_view, creds, humans, [], "last")
            branches.append({"result": other.result, "jti": other.match_id,
                             "same_ending": other.state_id == view.state_id})
    if args.results:
        pathlib.Path(args.results).write_text("".join(g["result"] + "\n" for g in genuine))
    print(f"driver: {len(genuine)} matches played, {len(branches)} of them again to a "
          f"second ending ({sum(b['same_ending'] for b in branches)} on the same state)")
    if not args.out:
        return 0
    for i in range(args.foreign):
        players, partnership, seats, settlement = MIX[i % len(MIX)]
        names = rng.sample(NAMES, len(seats))
        view, _, _, _ = play(stub_of(args.foreign_addr), players, partnership, seats,
                             settlement, names)
        foreign_results.append(view.result)

    real_key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(args.result_key))
    jwks_text = main_stub.GetResultKeys(pb.GetResultKeysRequest(), timeout=10).jwks
    real_x = base64.urlsafe_b64decode(json.loads(jwks_text)["keys"][0]["x"] + "==")
    real_pem = real_key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    fresh_key = Ed25519PrivateKey.generate()
    mutations = [{"name": "another deployment's key (a server with other --result-keys)",
                  "refused_by": "unknown-key", "result": r} for r in foreign_results]
    for i, g in enumerate(genuine):
        for name, defence, token in forgeries(g["result"], real_key, real_x, real_pem, fresh_key,
                                           jwks_text, i):
            mutations.append({"name": name, "refused_by": defence, "result": token})

    pathlib.Path(args.out).write_text(json.dumps({
        "issuer": args.issuer,
        "genuine": genuine,
        "branches": branches,
        "mutations": mutations,
    }, indent=1))
    print(f"driver: {len(foreign_results)} matches on another key; {len(mutations)} "
          f"forgeries; {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
