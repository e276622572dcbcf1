//! Player passes (issue 44, item 3), against a real server through a real client: a
//! studio's login service signs a pass (a JWT, Ed25519 here; ES256 and RS256 in
//! `src/passes/`' tests) naming its player; NewGame and ClaimSeat take it for a seat,
//! which then carries the pass's subject as its player id, shown to its own player (to
//! everyone with --show-player-ids) and named in the match's signed result.
//!
//! Attacks that fail: a pass with a bad signature, for another audience or issuer,
//! expired or not yet valid (by the server's clock: a manual one here), one whose
//! subject was changed to another player's, one player's pass at a second seat, a pass
//! on a server that takes none; each refused before anything is recorded, and the
//! same token then claimed with a good pass. The defences live in `src/passes/verify.rs`
//! (each shown failing with it removed in its unit tests) and `src/service/seats.rs`
//! (one player, one seat: this file's `one_player_holds_one_seat_of_a_match` fails with
//! the check removed).

use crate::common;
use crate::results;

use std::path::PathBuf;

use allfives::proto::v1 as pb;
use allfives::server_clock::ServerClock;
use common::{CLAIMED, Client, Creds, TestServer, reason, ring};
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::EncodePrivateKey;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

const PASS_ISSUER: &str = "https://login.studio.example";
const PASS_AUDIENCE: &str = "allfives";
/// The tests' clock: 2027-01-15, in seconds since the Unix epoch.
const NOW: u64 = 1_800_000_000;

/// The studio's signing key (seed `byte` x 32) and its kid.
struct Studio {
    key: SigningKey,
    kid: &'static str,
}

impl Studio {
    fn new(byte: u8, kid: &'static str) -> Studio {
        Studio {
            key: SigningKey::from_bytes(&[byte; 32]),
            kid,
        }
    }

    /// The studio's public key set, as its login service publishes it.
    fn jwks(&self) -> String {
        use base64::Engine;
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(self.key.verifying_key().as_bytes());
        json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": self.kid,
                         "alg": "EdDSA", "use": "sig"}]})
        .to_string()
    }

    /// A pass with these claims, signed.
    fn sign(&self, claims: &Value) -> String {
        let der = self.key.to_pkcs8_der().expect("pkcs8");
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid.to_owned());
        header.typ = Some("JWT".to_owned());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ed_der(der.as_bytes()))
            .expect("sign")
    }

    /// A good pass for `sub`: the studio's issuer and our audience, an hour to live.
    fn pass(&self, sub: &str) -> String {
        self.sign(&claims(sub))
    }
}

fn claims(sub: &str) -> Value {
    json!({"iss": PASS_ISSUER, "aud": PASS_AUDIENCE, "sub": sub,
           "iat": NOW - 10, "exp": NOW + 3600})
}

/// The studio's key set in a file of its own, for --pass-keys-file.
fn keys_file(studio: &Studio, name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "allfives-pass-keys-{}-{name}.json",
        std::process::id()
    ));
    std::fs::write(&path, studio.jwks()).expect("write the key set");
    path
}

/// A server taking `studio`'s passes, its clock the manual one at [`NOW`], with
/// `extra` flags.
async fn server(studio: &Studio, name: &str, extra: &[&str]) -> (TestServer, ServerClock) {
    let file = keys_file(studio, name);
    let file = file.to_str().expect("a UTF-8 path").to_owned();
    let mut args = vec![
        "--pass-keys-file",
        &file,
        "--pass-issuer",
        PASS_ISSUER,
        "--pass-audience",
        PASS_AUDIENCE,
        "--result-keys",
        results::RESULT_KEY,
        "--result-issuer",
        results::ISSUER,
    ];
    args.extend_from_slice(extra);
    let clock = ServerClock::manual(NOW * 1000);
    let server = TestServer::start_clocked(ring(1, 3), clock.clone(), &args).await;
    (server, clock)
}

fn seat_with(pass: &str) -> pb::SeatSetup {
    pb::SeatSetup {
        pass: pass.to_owned(),
        ..CLAIMED
    }
}

/// A two-player match: seat 0 claimed with `pass`, seat 1 open; seat 0's view.
fn new_game(pass: &str) -> pb::NewGameRequest {
    pb::NewGameRequest {
        viewer: Some(0),
        seats: vec![seat_with(pass), pb::SeatSetup::default()],
        ..Default::default()
    }
}

fn claim(state: &[u8], seat: u32, pass: &str) -> pb::ClaimSeatRequest {
    pb::ClaimSeatRequest {
        state: state.to_vec(),
        seat,
        pass: pass.to_owned(),
        ..Default::default()
    }
}

/// The seats' (pass_holder, player_id) as a view shows them.
fn ids(view: &pb::GameView) -> Vec<(bool, String)> {
    view.seats
        .iter()
        .map(|s| (s.pass_holder, s.player_id.clone()))
        .collect()
}

async fn look(
    client: &mut Client,
    state: &[u8],
    viewer: Option<u32>,
    creds: &Creds,
) -> pb::GameView {
    client
        .score(pb::ScoreRequest {
            state: state.to_vec().into(),
            viewer,
            credential: creds.for_viewer(viewer),
            ..Default::default()
        })
        .await
        .expect("Score")
        .into_inner()
        .view
        .expect("view")
}

#[tokio::test]
async fn a_pass_names_the_seat_s_player_to_itself_and_in_the_signed_result() {
    let studio = Studio::new(7, "studio-2026");
    let (server, _clock) = server(&studio, "names", &[]).await;
    let mut client = server.client().await;

    let new = client
        .new_game(new_game(&studio.pass("player-ana")))
        .await
        .expect("NewGame")
        .into_inner();
    let mut creds = Creds::from_new_game(&new);
    let claimed = client
        .claim_seat(claim(&new.state, 1, &studio.pass("auth0|ben")))
        .await
        .expect("ClaimSeat")
        .into_inner();
    creds.0[1] = claimed.credential.expect("credential").credential;
    let state = claimed.state;
    // Each seat sees its own id; the other's only as a pass holder; a spectator none.
    assert_eq!(
        ids(&claimed.view.expect("view")),
        [(true, String::new()), (true, "auth0|ben".to_owned())]
    );
    assert_eq!(
        ids(&look(&mut client, &state, Some(0), &creds).await),
        [(true, "player-ana".to_owned()), (true, String::new())]
    );
    assert_eq!(
        ids(&look(&mut client, &state, None, &creds).await),
        [(true, String::new()), (true, String::new())]
    );

    // Where the deployment allows it, every view shows every id.
    let (shown, _) = server_showing(&studio).await;
    let mut shown_client = shown.client().await;
    let new = shown_client
        .new_game(new_game(&studio.pass("player-ana")))
        .await
        .expect("NewGame")
        .into_inner();
    assert_eq!(
        ids(&look(&mut shown_client, &new.state, None, &Creds::default()).await),
        [(true, "player-ana".to_owned()), (false, String::new())]
    );

    // Against a bot to the end: the result names the player by its id, and a result
    // with another player's id put in is refused by the signature.
    let req = pb::NewGameRequest {
        rules: Some(pb::Rules {
            players: 2,
            target: 50,
            ..Default::default()
        }),
        viewer: Some(0),
        seats: vec![
            pb::SeatSetup {
                display_name: "Ana".into(),
                ..seat_with(&studio.pass("player-ana"))
            },
            common::bot(pb::BotLevel::Easy),
        ],
        ..Default::default()
    };
    let (seen, _) = results::play_out(&mut client, req).await;
    let end = &seen.last().expect("the end").1;
    let jwks = results::keys(&mut client).await;
    let verified = results::verify(&jwks, &end.result).expect("the result verifies");
    assert_eq!(
        verified["seats"],
        json!([
            {"seat": 0, "side": 0, "name": "Ana", "player": "player-ana", "ended": "PLAYED_OUT"},
            {"seat": 1, "side": 1, "bot": "BOT_LEVEL_EASY"},
        ])
    );
    let forged = results::altered(&end.result, |c| c["seats"][0]["player"] = "mallory".into());
    assert_eq!(results::unchecked(&forged)["seats"][0]["player"], "mallory");
    let refused = results::verify(&jwks, &forged).expect_err("another player's id");
    assert!(refused.contains("InvalidSignature"), "{refused}");
}

async fn server_showing(studio: &Studio) -> (TestServer, ServerClock) {
    server(studio, "shown", &["--show-player-ids"]).await
}

/// A refused call's code and reason.
fn refusal(status: &tonic::Status) -> (tonic::Code, String) {
    (status.code(), reason(status))
}

#[tokio::test]
async fn bad_passes_are_refused_before_anything_is_recorded() {
    use tonic::Code;
    let studio = Studio::new(7, "studio-2026");
    let stranger = Studio::new(8, "studio-2026");
    let (server, clock) = server(&studio, "bad", &["--match-store", "memory"]).await;
    let mut client = server.client().await;
    let new = client
        .new_game(new_game(&studio.pass("player-ana")))
        .await
        .expect("NewGame")
        .into_inner();

    let good = studio.pass("player-ben");
    // A character in the middle of the signature changed: still base64url, no longer
    // the studio's signature.
    let at = good.len() - 20;
    let was = &good[at..=at];
    let bad_signature = format!(
        "{}{}{}",
        &good[..at],
        if was == "A" { "B" } else { "A" },
        &good[at + 1..]
    );
    let with = |change: &dyn Fn(&mut Value)| {
        let mut c = claims("player-ben");
        change(&mut c);
        studio.sign(&c)
    };
    let unauthenticated = |reason: &str| (Code::Unauthenticated, reason.to_owned());
    let cases = [
        (
            "a bad signature",
            bad_signature,
            unauthenticated("PASS_INVALID"),
        ),
        (
            "another key under the studio's kid",
            stranger.pass("player-ben"),
            unauthenticated("PASS_INVALID"),
        ),
        (
            "another audience",
            with(&|c| c["aud"] = "another-game".into()),
            unauthenticated("PASS_INVALID"),
        ),
        (
            "another issuer",
            with(&|c| c["iss"] = "https://login.evil.example".into()),
            unauthenticated("PASS_INVALID"),
        ),
        (
            "expired by the server's clock",
            with(&|c| c["exp"] = (NOW - 61).into()),
            unauthenticated("PASS_EXPIRED"),
        ),
        (
            "not yet valid by the server's clock",
            with(&|c| c["nbf"] = (NOW + 61).into()),
            unauthenticated("PASS_NOT_YET_VALID"),
        ),
        (
            "a subject that is no player id",
            with(&|c| c["sub"] = "two words".into()),
            unauthenticated("PASS_INVALID"),
        ),
        (
            "no pass at all",
            "not.a.pass".to_owned(),
            (Code::InvalidArgument, "PASS_MALFORMED".to_owned()),
        ),
    ];
    for (what, pass, expected) in &cases {
        let refused = client
            .claim_seat(claim(&new.state, 1, pass))
            .await
            .expect_err(what);
        assert_eq!(&refusal(&refused), expected, "{what}: {refused:?}");
        // NewGame refuses it the same way.
        let refused = client.new_game(new_game(pass)).await.expect_err(what);
        assert_eq!(&refusal(&refused), expected, "{what} at NewGame");
    }
    // A pass the studio signed with its subject changed to another player's: the
    // claims say what the forger wants, the signature refuses it.
    let forged = {
        use base64::Engine;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let parts: Vec<&str> = good.split('.').collect();
        let payload = URL_SAFE_NO_PAD.encode(claims("player-ana").to_string());
        format!("{}.{payload}.{}", parts[0], parts[2])
    };
    let refused = client
        .claim_seat(claim(&new.state, 1, &forged))
        .await
        .expect_err("a subject moved");
    assert_eq!(refusal(&refused), unauthenticated("PASS_INVALID"));

    // Nothing was recorded: the same token's seat is claimed with a good pass, and the
    // store takes it as the match's next state.
    let claimed = client
        .claim_seat(claim(&new.state, 1, &good))
        .await
        .expect("the seat is still open")
        .into_inner();
    let view = claimed.view.expect("view");
    assert_eq!(view.previous_state_id, new.view.expect("view").state_id);
    assert_eq!(view.seats[1].player_id, "player-ben");

    // The same good pass, an hour and two minutes on by the server's clock: expired.
    clock.advance(std::time::Duration::from_secs(3600 + 61));
    let new = client.new_game(new_game(&studio.pass("player-cy")));
    assert_eq!(
        refusal(&new.await.expect_err("expired")),
        unauthenticated("PASS_EXPIRED")
    );
}

#[tokio::test]
async fn one_player_holds_one_seat_of_a_match() {
    use tonic::Code;
    let studio = Studio::new(7, "studio-2026");
    let (server, _clock) = server(&studio, "one-seat", &[]).await;
    let mut client = server.client().await;
    let ana = studio.pass("player-ana");
    let new = client
        .new_game(new_game(&ana))
        .await
        .expect("NewGame")
        .into_inner();
    // Ana's pass (or a fresh one for her) at the second seat: refused.
    for pass in [ana.clone(), studio.sign(&claims("player-ana"))] {
        let refused = client
            .claim_seat(claim(&new.state, 1, &pass))
            .await
            .expect_err("a second seat");
        assert_eq!(
            refusal(&refused),
            (Code::FailedPrecondition, "PLAYER_ALREADY_SEATED".to_owned())
        );
    }
    // Two seats of one NewGame with one player's passes: refused.
    let twice = pb::NewGameRequest {
        seats: vec![seat_with(&ana), seat_with(&studio.pass("player-ana"))],
        ..Default::default()
    };
    let refused = client.new_game(twice).await.expect_err("two seats");
    assert_eq!(
        refusal(&refused),
        (Code::FailedPrecondition, "PLAYER_ALREADY_SEATED".to_owned())
    );
    // Another player takes the seat.
    client
        .claim_seat(claim(&new.state, 1, &studio.pass("player-ben")))
        .await
        .expect("another player");
}

#[tokio::test]
async fn a_pass_is_refused_where_none_is_taken_and_required_where_the_deployment_says() {
    use tonic::Code;
    let studio = Studio::new(7, "studio-2026");
    // No pass keys: a pass is refused (the client must not think its player named).
    let plain = TestServer::start_default(ring(1, 3)).await;
    let mut client = plain.client().await;
    let refused = client
        .new_game(new_game(&studio.pass("player-ana")))
        .await
        .expect_err("no keys");
    assert_eq!(
        refusal(&refused),
        (Code::FailedPrecondition, "PASSES_NOT_ACCEPTED".to_owned())
    );
    let new = client
        .new_game(new_game(""))
        .await
        .expect("no pass: as before")
        .into_inner();
    assert_eq!(ids(&new.view.expect("view"))[0], (false, String::new()));

    // --pass-required: a seat claimed without one is refused; open seats are not.
    let (required, _) = server(&studio, "required", &["--pass-required"]).await;
    let mut client = required.client().await;
    let refused = client.new_game(new_game("")).await.expect_err("required");
    assert_eq!(
        refusal(&refused),
        (Code::Unauthenticated, "PASS_REQUIRED".to_owned())
    );
    let open = client
        .new_game(pb::NewGameRequest::default())
        .await
        .expect("every seat open")
        .into_inner();
    let refused = client
        .claim_seat(claim(&open.state, 0, ""))
        .await
        .expect_err("a claim without a pass");
    assert_eq!(
        refusal(&refused),
        (Code::Unauthenticated, "PASS_REQUIRED".to_owned())
    );
    client
        .claim_seat(claim(&open.state, 0, &studio.pass("player-ana")))
        .await
        .expect("with one");
}
