//! Signed match results (issue 44), against a real server through a real client: the
//! answer that ends a match, Score and Watch after it carry a compact JWS that a
//! ranking server verifies with a JOSE library (jsonwebtoken here, PyJWT and go-jose in
//! `examples/ranking/`) against the key set the API port publishes; every claim is the
//! match's; a changed result, or one signed by a key not in the set, is refused; with a
//! match store only the recorded branch ends, and its result says so.

use crate::common;

use allfives::proto::v1 as pb;
use common::{Client, Creds, TestServer, header, http_get, reason, ring};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

/// RFC 8032 section 7.1's first test key: its public key is known to everyone, which
/// is what a test wants.
pub(crate) const RESULT_KEY: &str =
    "1:9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
/// Its public key, as the JWK's `x` writes it.
const RESULT_X: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
/// Another key: another deployment's, or a forger's.
const OTHER_KEY: &str = "1:4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb";
pub(crate) const ISSUER: &str = "https://games.example";

/// What a ranking server does with a result: the key of the header's kid from the
/// published set, EdDSA only, the type, issuer and expiry checked; the claims.
pub(crate) fn verify(jwks: &str, result: &str) -> Result<Value, String> {
    let header = jsonwebtoken::decode_header(result).map_err(|e| e.to_string())?;
    if header.typ.as_deref() != Some("allfives-result+jwt") {
        return Err(format!("type {:?}", header.typ));
    }
    let set: JwkSet = serde_json::from_str(jwks).map_err(|e| e.to_string())?;
    let jwk = set
        .find(header.kid.as_deref().unwrap_or_default())
        .ok_or("a key not in the set")?;
    let key = DecodingKey::from_jwk(jwk).map_err(|e| e.to_string())?;
    let mut validation = Validation::new(Algorithm::EdDSA);
    validation.set_issuer(&[ISSUER]);
    validation.set_required_spec_claims(&["exp", "iss", "jti"]);
    jsonwebtoken::decode::<Value>(result, &key, &validation)
        .map(|d| d.claims)
        .map_err(|e| e.to_string())
}

/// `result` with its payload replaced by `change(claims)`, its signature kept.
pub(crate) fn altered(result: &str, change: impl FnOnce(&mut Value)) -> String {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let parts: Vec<&str> = result.split('.').collect();
    let mut claims = unchecked(result);
    change(&mut claims);
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).expect("json"));
    format!("{}.{payload}.{}", parts[0], parts[2])
}

/// The claims with no signature check at all: what the test's forgeries would pass
/// without the defence.
pub(crate) fn unchecked(result: &str) -> Value {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let payload = result.split('.').nth(1).expect("a payload");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).expect("base64url")).expect("json")
}

/// The key set as the RPC answers it.
pub(crate) async fn keys(client: &mut Client) -> String {
    client
        .get_result_keys(pb::GetResultKeysRequest {})
        .await
        .expect("GetResultKeys")
        .into_inner()
        .jwks
}

/// A match of seat 0 (a human called Ana) against an EASY bot, to 50 (seeded by the
/// test where the server takes client seeds).
fn against_easy(seed: Option<u64>) -> pb::NewGameRequest {
    pb::NewGameRequest {
        rules: Some(pb::Rules {
            players: 2,
            target: 50,
            ..Default::default()
        }),
        seed,
        viewer: Some(0),
        seats: vec![
            pb::SeatSetup {
                bot: 0,
                claim: true,
                display_name: "Ana".into(),
                pass: String::new(),
            },
            common::bot(pb::BotLevel::Easy),
        ],
    }
}

/// Which of its legal placements seat 0 plays.
type Pick = fn(&[pb::LegalMove]) -> Option<&pb::LegalMove>;

/// Seat 0's next move in `view` (its own): Deal between hands, Draw or the placement
/// `pick` takes on its turn. The answer's state and view (seat 0's).
async fn step(
    client: &mut Client,
    state: &[u8],
    view: &pb::GameView,
    creds: &Creds,
    pick: Pick,
) -> (Vec<u8>, pb::GameView) {
    match view.phase() {
        pb::Phase::Dealing => {
            let r = client
                .deal(pb::DealRequest {
                    state: state.to_vec().into(),
                    viewer: Some(0),
                    credential: creds.of(0),
                })
                .await
                .expect("Deal")
                .into_inner();
            (r.state, r.view.expect("view"))
        }
        pb::Phase::Playing if view.must_draw => {
            let r = client
                .draw(pb::DrawRequest {
                    state: state.to_vec().into(),
                    seat: 0,
                    viewer: Some(0),
                    credential: creds.of(0),
                })
                .await
                .expect("Draw")
                .into_inner();
            (r.state, r.view.expect("view"))
        }
        pb::Phase::Playing => {
            let m = pick(&view.legal_moves).expect("a legal move on its turn");
            let r = client
                .play(pb::PlayRequest {
                    state: state.to_vec().into(),
                    seat: 0,
                    tile: m.tile,
                    end: m.end,
                    viewer: Some(0),
                    credential: creds.of(0),
                })
                .await
                .expect("Play")
                .into_inner();
            (r.state, r.view.expect("view"))
        }
        phase => panic!("no move in {phase:?}"),
    }
}

/// Plays the match on from `from` to its end, seat 0 playing as `pick` says: every
/// token and view on the way (the last the end's).
async fn play_on(
    client: &mut Client,
    from: (Vec<u8>, pb::GameView),
    creds: &Creds,
    pick: Pick,
) -> Vec<(Vec<u8>, pb::GameView)> {
    let mut seen = vec![from];
    for _ in 0..2_000 {
        let (state, view) = seen.last().expect("a state");
        if view.phase() == pb::Phase::Over {
            return seen;
        }
        let next = step(client, state, view, creds, pick).await;
        seen.push(next);
    }
    panic!("the match did not end in 2000 calls")
}

/// A new match played to its end, seat 0 taking its first legal placement each time.
pub(crate) async fn play_out(
    client: &mut Client,
    req: pb::NewGameRequest,
) -> (Vec<(Vec<u8>, pb::GameView)>, Creds) {
    let new = client.new_game(req).await.expect("NewGame").into_inner();
    let creds = Creds::from_new_game(&new);
    let start = (new.state, new.view.expect("view"));
    (play_on(client, start, &creds, <[_]>::first).await, creds)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn a_finished_match_carries_a_result_every_claim_its_own_verified_against_the_published_keys()
{
    let args = ["--result-keys", RESULT_KEY, "--result-issuer", ISSUER];
    let server = TestServer::start_with(ring(1, 3), &args).await;
    let mut client = server.client().await;
    let (seen, creds) = play_out(&mut client, against_easy(None)).await;
    let (end_state, end) = seen.last().expect("the end");
    for (_, view) in &seen[..seen.len() - 1] {
        assert_eq!(view.result, "", "no result before the end");
    }
    assert!(
        !end.result.is_empty(),
        "the answer that ended the match has its result"
    );

    // The key set: served on the API port with caching headers, the same as the RPC's,
    // holding RFC 8032's public key under its thumbprint.
    let (status, headers, body) = http_get(server.addr, "/.well-known/jwks.json").await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-type"), Some("application/json"));
    assert_eq!(
        header(&headers, "cache-control"),
        Some("public, max-age=3600")
    );
    assert_eq!(
        body,
        keys(&mut client).await,
        "the RPC answers the same set"
    );
    let set: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(set["keys"][0]["x"], RESULT_X);
    assert!(set["keys"][0].get("d").is_none(), "no secret published");

    let claims = verify(&body, &end.result).expect("the result verifies");
    assert_eq!(claims["iss"], ISSUER);
    assert_eq!(claims["jti"], end.match_id.as_str());
    assert_eq!(claims["state"], hex(&end.state_id).as_str());
    assert_eq!(claims["recorded"], false, "no match store");
    let scores: Vec<i64> = end.scores.iter().map(|s| i64::from(s.score)).collect();
    assert_eq!(claims["scores"], serde_json::json!(scores));
    assert_eq!(claims["winner"], end.winner_side.expect("a winner"));
    assert_eq!(claims["rules"]["target"], 50);
    assert_eq!(claims["rules"]["players"], 2);
    assert_eq!(
        claims["rules"]["settlement"],
        "SETTLEMENT_RULE_OWN_PIPS_OFF"
    );
    assert_eq!(
        claims["seats"],
        serde_json::json!([
            {"seat": 0, "side": 0, "name": "Ana", "ended": "PLAYED_OUT"},
            {"seat": 1, "side": 1, "bot": "BOT_LEVEL_EASY"},
        ])
    );
    assert_eq!(claims["sheet"]["hands"], end.hand_number);
    for side in 0..2 {
        let total = claims["sheet"]["play"][side].as_i64().expect("play")
            + claims["sheet"]["settlement"][side]
                .as_i64()
                .expect("settlement");
        assert_eq!(
            total, scores[side],
            "the sheet's totals add up to side {side}'s score"
        );
    }
    let iat = claims["iat"].as_u64().expect("iat");
    assert_eq!(
        claims["exp"].as_u64(),
        Some(iat + 604_800),
        "a week by default"
    );

    // Score of the finished match, for a spectator: the same result (kept by the
    // replica for a while, rather than signed again).
    let scored = client
        .score(pb::ScoreRequest {
            state: end_state.clone().into(),
            ..Default::default()
        })
        .await
        .expect("Score")
        .into_inner()
        .view
        .expect("view");
    assert_eq!(scored.result, end.result, "the same result");

    // Attacks: each forgery is well-formed and says what the forger wants (the claims
    // read without a signature check), and is refused only by the signature.
    let forgeries = [
        (
            "a changed score",
            altered(&end.result, |c| c["scores"][0] = 999.into()),
        ),
        (
            "a changed winner",
            altered(&end.result, |c| {
                c["winner"] = (1 - c["winner"].as_u64().unwrap_or(0)).into()
            }),
        ),
        (
            "a changed player",
            altered(&end.result, |c| c["seats"][0]["name"] = "Mallory".into()),
        ),
        (
            "another match's id",
            altered(&end.result, |c| c["jti"] = "0".repeat(32).into()),
        ),
    ];
    for (what, forged) in &forgeries {
        assert_ne!(
            unchecked(forged),
            claims,
            "{what}: the forgery changes the claims"
        );
        let refused = verify(&body, forged).expect_err(what);
        assert!(refused.contains("InvalidSignature"), "{what}: {refused}");
    }

    // Signed by a key the set does not hold (another deployment's): refused, though
    // it verifies against its own set.
    let stranger_args = ["--result-keys", OTHER_KEY, "--result-issuer", ISSUER];
    let stranger = TestServer::start_with(ring(1, 4), &stranger_args).await;
    let mut theirs = stranger.client().await;
    let (their_seen, _) = play_out(&mut theirs, against_easy(None)).await;
    let their_result = &their_seen.last().expect("the end").1.result;
    verify(&keys(&mut theirs).await, their_result).expect("theirs, against their set");
    let refused = verify(&body, their_result).expect_err("a key not in the set");
    assert!(refused.contains("not in the set"), "{refused}");
    let _ = creds;
}

#[tokio::test]
async fn with_a_match_store_only_the_recorded_ending_is_certified_and_watchers_get_it() {
    let args = [
        "--allow-client-seeds",
        "--match-store",
        "memory",
        "--result-issuer",
        ISSUER,
    ];
    let server = TestServer::start_with(ring(1, 5), &args).await;
    let mut client = server.client().await;
    let jwks = keys(&mut client).await;
    let (seen, creds) = play_out(&mut client, against_easy(Some(12))).await;
    let (end_state, end) = seen.last().expect("the end");
    let claims = verify(&jwks, &end.result).expect("verifies against the random key's set");
    assert_eq!(
        claims["recorded"], true,
        "a match store recorded every move"
    );

    // A fork: the latest state where seat 0 had a choice, played otherwise: refused,
    // so no second ending (and no second result) exists.
    let (before, view) = seen
        .iter()
        .rev()
        .find(|(_, v)| v.phase() == pb::Phase::Playing && v.legal_moves.len() > 1)
        .expect("a choice somewhere in the match");
    let other = &view.legal_moves[1];
    let refusal = client
        .play(pb::PlayRequest {
            state: before.clone().into(),
            seat: 0,
            tile: other.tile,
            end: other.end,
            viewer: Some(0),
            credential: creds.of(0),
        })
        .await
        .expect_err("a fork");
    assert_eq!(reason(&refusal), "STATE_STALE");

    // A device watching the finished match gets its result too.
    let mut stream = client
        .watch(pb::WatchRequest {
            state: end_state.clone(),
            viewer: Some(0),
            credential: creds.of(0),
            ..Default::default()
        })
        .await
        .expect("Watch")
        .into_inner();
    let first = tokio::time::timeout(std::time::Duration::from_secs(10), stream.message())
        .await
        .expect("a first message (hang guard)")
        .expect("a message")
        .expect("not ended");
    let Some(pb::watch_response::Kind::Change(change)) = first.kind else {
        panic!("the latest state first: {first:?}");
    };
    let watched = verify(&jwks, &change.view.expect("view").result).expect("the watcher's result");
    assert_eq!(watched["state"], claims["state"]);
}

#[tokio::test]
async fn without_a_store_each_branch_ends_unrecorded_so_a_verifier_takes_one_per_match() {
    // Take-backs are possible without a store (docs/security.md): two endings of one
    // match, each certified, both `recorded: false`, with the same `jti` and different
    // states. A verifier keeping the match ids it took (examples/ranking) takes one.
    let args = ["--allow-client-seeds", "--result-issuer", ISSUER];
    let server = TestServer::start_with(ring(1, 6), &args).await;
    let mut client = server.client().await;
    let jwks = keys(&mut client).await;
    let (seen, creds) = play_out(&mut client, against_easy(Some(13))).await;
    let first = verify(&jwks, &seen.last().expect("end").1.result).expect("verifies");
    // Play on from the first deal with other choices: the last legal move each time.
    let other = play_on(&mut client, seen[1].clone(), &creds, <[_]>::last).await;
    let other = &other.last().expect("the branch's end").1.result;
    let second = verify(&jwks, other).expect("verifies");
    assert_eq!(first["jti"], second["jti"], "one match");
    assert_eq!(
        (&first["recorded"], &second["recorded"]),
        (&Value::Bool(false), &Value::Bool(false))
    );
    assert_ne!(first["state"], second["state"], "two endings");
}

#[test]
fn print_result_jwks_prints_the_served_set_and_needs_keys() {
    let out = std::process::Command::new(common::child::binary())
        .args(["--print-result-jwks", "--result-keys", RESULT_KEY])
        .env("ALLFIVES_LOG", "error")
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{out:?}");
    let printed: Value = serde_json::from_slice(&out.stdout).expect("a JWK Set");
    assert_eq!(printed["keys"][0]["x"], RESULT_X);
    assert_eq!(printed["keys"].as_array().map(Vec::len), Some(1));

    // Without keys there is nothing to print that would verify anything.
    let none = std::process::Command::new(common::child::binary())
        .args(["--print-result-jwks"])
        .env("ALLFIVES_LOG", "error")
        .output()
        .expect("the binary runs");
    assert_eq!(none.status.code(), Some(2), "a configuration error");
    assert!(
        !String::from_utf8_lossy(&none.stdout).contains("\"keys\""),
        "no set printed"
    );
}
