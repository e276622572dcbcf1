//! The metrics endpoint, end to end: real calls through the gRPC client, then a scrape
//! of `GET /metrics` over TCP, checked against what the calls did.

use crate::common;

use std::collections::BTreeMap;

use allfives::proto::v1 as pb;
use common::{Client, Creds, TestServer, reason, ring};
use tonic::Code;

const API: &str = "allfives.v1.AllFivesService";

/// What the test saw, to compare with the scrape.
#[derive(Default)]
struct Seen {
    /// (method, code) -> calls.
    calls: BTreeMap<(&'static str, &'static str), u64>,
    hands: u64,
    plays: u64,
    draws: u64,
    passes: u64,
    games_finished: u64,
}

impl Seen {
    fn call(&mut self, method: &'static str, code: &'static str) {
        *self.calls.entry((method, code)).or_default() += 1;
    }

    fn events(&mut self, events: &[pb::Event]) {
        use pb::event::Kind;
        for event in events {
            match event.kind {
                Some(Kind::Dealt(_)) => self.hands += 1,
                Some(Kind::TilePlayed(_)) => self.plays += 1,
                Some(Kind::TileDrawn(_)) => self.draws += 1,
                Some(Kind::Passed(_)) => self.passes += 1,
                Some(Kind::GameEnded(_)) => self.games_finished += 1,
                _ => {}
            }
        }
    }
}

/// The value of the sample named exactly `series` (name and labels as written).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.rsplit_once(' ').filter(|(s, _)| *s == series))
        .and_then(|(_, v)| v.parse().ok())
}

fn value(text: &str, series: &str) -> f64 {
    sample(text, series).unwrap_or_else(|| panic!("no `{series}` in\n{text}"))
}

/// The seat on turn sees the table (with its credential); it draws when it must, else
/// plays its first legal move. Returns the new state and its view.
async fn take_turn(
    client: &mut Client,
    seen: &mut Seen,
    creds: &Creds,
    state: Vec<u8>,
    view: &pb::GameView,
) -> (Vec<u8>, pb::GameView) {
    if view.phase == pb::Phase::Dealing as i32 {
        let r = client
            .deal(pb::DealRequest {
                state: state.into(),
                ..Default::default()
            })
            .await
            .expect("Deal")
            .into_inner();
        seen.call("Deal", "OK");
        seen.events(&r.events);
        return (r.state, r.view.expect("view"));
    }
    let seat = view.turn.expect("a seat on turn");
    let mine = client
        .score(pb::ScoreRequest {
            state: state.clone().into(),
            viewer: Some(seat),
            credential: creds.of(seat),
            ..Default::default()
        })
        .await
        .expect("Score")
        .into_inner()
        .view
        .expect("view");
    seen.call("Score", "OK");
    if mine.must_draw {
        let r = client
            .draw(pb::DrawRequest {
                state: state.into(),
                seat,
                viewer: None,
                credential: creds.of(seat),
            })
            .await
            .expect("Draw")
            .into_inner();
        seen.call("Draw", "OK");
        seen.events(&r.events);
        (r.state, r.view.expect("view"))
    } else {
        let m = mine.legal_moves[0];
        let r = client
            .play(pb::PlayRequest {
                state: state.into(),
                seat,
                tile: m.tile,
                end: m.end,
                viewer: None,
                credential: creds.of(seat),
            })
            .await
            .expect("Play")
            .into_inner();
        seen.call("Play", "OK");
        seen.events(&r.events);
        (r.state, r.view.expect("view"))
    }
}

#[tokio::test]
async fn metrics_count_what_the_calls_did() {
    let server = TestServer::start(ring(1, 7)).await;
    let mut client = server.client().await;
    let mut seen = Seen::default();

    // Seat 0 claimed in NewGame, seat 1 by ClaimSeat (the server keeps the seed).
    let new = client
        .new_game(pb::NewGameRequest {
            rules: Some(pb::Rules {
                players: 2,
                ..Default::default()
            }),
            seed: Some(3),
            seats: vec![
                pb::SeatSetup {
                    bot: 0,
                    claim: true,
                    display_name: String::new(),
                    pass: String::new(),
                },
                pb::SeatSetup::default(),
            ],
            ..Default::default()
        })
        .await
        .expect("NewGame")
        .into_inner();
    seen.call("NewGame", "OK");
    let mut creds = Creds::from_new_game(&new);
    let claimed = client
        .claim_seat(pb::ClaimSeatRequest {
            state: new.state,
            seat: 1,
            ..Default::default()
        })
        .await
        .expect("ClaimSeat")
        .into_inner();
    seen.call("ClaimSeat", "OK");
    creds.0[1] = claimed.credential.expect("a credential").credential;
    let (mut state, mut view) = (claimed.state, claimed.view.expect("view"));

    // Play on until a seat has drawn and a few tiles are down, asking for a hint once.
    let mut hinted = false;
    for _ in 0..400 {
        if view.phase == pb::Phase::Over as i32 || (seen.draws > 0 && seen.plays >= 3) {
            break;
        }
        if let (false, Some(seat)) = (hinted, view.turn) {
            client
                .suggest(pb::SuggestRequest {
                    state: state.clone().into(),
                    seat,
                    level: pb::BotLevel::Medium as i32,
                    credential: creds.of(seat),
                    ..Default::default()
                })
                .await
                .expect("Suggest");
            seen.call("Suggest", "OK");
            hinted = true;
        }
        (state, view) = take_turn(&mut client, &mut seen, &creds, state, &view).await;
    }
    assert!(hinted, "a hint was asked for");
    assert!(
        seen.draws > 0 && seen.plays >= 3,
        "a seat drew, tiles were played"
    );
    let dealt = state.clone();

    // Refusals: a tampered token, an empty one, a seat named without its credential, a
    // seat out of turn.
    let mut tampered = state.clone();
    let mid = tampered.len() / 2;
    tampered[mid] ^= 0x01;
    let error = client
        .score(pb::ScoreRequest {
            state: tampered.into(),
            ..Default::default()
        })
        .await
        .expect_err("a tampered token");
    assert_eq!(reason(&error), "TOKEN_INVALID");
    seen.call("Score", "INVALID_ARGUMENT");
    let error = client
        .deal(pb::DealRequest {
            state: Vec::new().into(),
            ..Default::default()
        })
        .await
        .expect_err("an empty token");
    assert_eq!(reason(&error), "TOKEN_MALFORMED");
    seen.call("Deal", "INVALID_ARGUMENT");
    let error = client
        .score(pb::ScoreRequest {
            state: dealt.clone().into(),
            viewer: Some(0),
            ..Default::default()
        })
        .await
        .expect_err("a viewer without its credential");
    assert_eq!(
        (error.code(), reason(&error).as_str()),
        (Code::PermissionDenied, "CREDENTIAL_REQUIRED")
    );
    seen.call("Score", "PERMISSION_DENIED");
    // A refused call keeps nothing, so the token it brought is no longer in the cache.
    let mut refused_again = 0;
    if view.phase == pb::Phase::Playing as i32 {
        let other = 1 - view.turn.expect("turn");
        let error = client
            .draw(pb::DrawRequest {
                state: dealt.into(),
                seat: other,
                viewer: None,
                credential: creds.of(other),
            })
            .await
            .expect_err("out of turn");
        assert_eq!(
            (error.code(), reason(&error).as_str()),
            (Code::FailedPrecondition, "NOT_YOUR_TURN")
        );
        seen.call("Draw", "FAILED_PRECONDITION");
        refused_again += 1;
    }

    let (status, content_type, text) = server.scrape("/metrics").await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        content_type,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(text.ends_with("# EOF\n"), "{text}");

    // Calls by method and code, and nothing else on the API.
    for (&(method, code), &n) in &seen.calls {
        let series = format!(
            r#"allfives_grpc_calls_total{{service="{API}",method="{method}",code="{code}"}}"#
        );
        assert_eq!(value(&text, &series), n as f64, "{series}");
    }
    let api_series = text
        .lines()
        .filter(|l| l.starts_with(&format!(r#"allfives_grpc_calls_total{{service="{API}""#)))
        .count();
    assert_eq!(api_series, seen.calls.len(), "{text}");

    // A latency histogram per method: every call observed once, buckets cumulative.
    for method in [
        "NewGame",
        "ClaimSeat",
        "Deal",
        "Play",
        "Draw",
        "Score",
        "Suggest",
    ] {
        let calls: u64 = seen
            .calls
            .iter()
            .filter(|((m, _), _)| *m == method)
            .map(|(_, n)| n)
            .sum();
        let labels = format!(r#"service="{API}",method="{method}""#);
        let count = value(
            &text,
            &format!("allfives_grpc_call_duration_seconds_count{{{labels}}}"),
        );
        assert_eq!(count, calls as f64, "{method}");
        let inf = value(
            &text,
            &format!(r#"allfives_grpc_call_duration_seconds_bucket{{le="+Inf",{labels}}}"#),
        );
        assert_eq!(inf, count, "{method}");
        let sum = value(
            &text,
            &format!("allfives_grpc_call_duration_seconds_sum{{{labels}}}"),
        );
        assert!(sum > 0.0 && sum < 5.0 * count, "{method}: {sum}");
        let buckets: Vec<f64> = text
            .lines()
            .filter(|l| {
                l.starts_with("allfives_grpc_call_duration_seconds_bucket{") && l.contains(&labels)
            })
            .filter_map(|l| l.rsplit_once(' ')?.1.parse().ok())
            .collect();
        assert_eq!(buckets.len(), 13, "{method}");
        assert!(
            buckets.windows(2).all(|w| w[0] <= w[1]),
            "{method}: {buckets:?}"
        );
    }

    // The game's own counters.
    assert_eq!(value(&text, "allfives_games_created_total"), 1.0);
    assert_eq!(
        value(&text, "allfives_games_finished_total"),
        seen.games_finished as f64
    );
    assert_eq!(
        value(&text, "allfives_hands_dealt_total"),
        seen.hands as f64
    );
    assert!(seen.hands >= 1);
    for (kind, n) in [
        ("play", seen.plays),
        ("draw", seen.draws),
        ("pass", seen.passes),
    ] {
        let series = format!(r#"allfives_moves_total{{kind="{kind}"}}"#);
        assert_eq!(value(&text, &series), n as f64, "{series}");
    }
    for (reason, n) in [
        ("TOKEN_INVALID", 1.0),
        ("TOKEN_MALFORMED", 1.0),
        ("TOKEN_UNKNOWN_KEY", 0.0),
        ("TOKEN_UNSUPPORTED_VERSION", 0.0),
    ] {
        let series = format!(r#"allfives_rejected_tokens_total{{reason="{reason}"}}"#);
        assert_eq!(value(&text, &series), n, "{series}");
    }

    // The token cache: every call after NewGame brought the token of the answer before
    // it, kept by the cache, except the tampered one (a miss), the empty one (too short
    // to look up) and the out-of-turn draw (a miss: it brought the token the refusal
    // before it had taken out of the cache).
    let calls: u64 = seen.calls.values().sum();
    let lookups = |result: &str| {
        value(
            &text,
            &format!(r#"allfives_token_cache_lookups_total{{result="{result}"}}"#),
        )
    };
    assert_eq!(lookups("hit"), (calls - 3 - refused_again) as f64, "{text}");
    assert_eq!(lookups("miss"), (1 + refused_again) as f64, "{text}");

    // The HARD search queue's gauges: nothing running or waiting once the calls are
    // answered, and room for a search per core.
    for (series, at_least) in [
        (r#"allfives_hard_searches{state="running"}"#, None),
        (r#"allfives_hard_searches{state="waiting"}"#, None),
        (
            r#"allfives_hard_search_capacity{state="running"}"#,
            Some(1.0),
        ),
        (
            r#"allfives_hard_search_capacity{state="waiting"}"#,
            Some(2.0),
        ),
    ] {
        let v = value(&text, series);
        match at_least {
            None => assert_eq!(v, 0.0, "{series}"),
            Some(least) => assert!(v >= least, "{series}: {v}"),
        }
    }

    // The same numbers are in the shared registry the test holds.
    let direct = server.metrics.encode().expect("encode");
    assert_eq!(
        sample(&direct, "allfives_games_created_total"),
        Some(1.0),
        "{direct}"
    );

    let (status, _, _) = server.scrape("/nothing-here").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn health_checks_and_unknown_methods_are_counted_apart() {
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_client::HealthClient;

    let server = TestServer::start(ring(1, 7)).await;
    let mut health = HealthClient::new(server.channel().await);
    for _ in 0..2 {
        health
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .expect("health");
    }
    // A path no service serves: answered UNIMPLEMENTED, counted under `other`.
    let mut grpc = tonic::client::Grpc::new(server.channel().await);
    grpc.ready().await.expect("ready");
    let unknown = grpc
        .unary::<_, (), _>(
            tonic::Request::new(()),
            "/allfives.v1.AllFivesService/Resign".parse().expect("path"),
            tonic_prost::ProstCodec::<(), ()>::default(),
        )
        .await
        .expect_err("no such method");
    assert_eq!(unknown.code(), Code::Unimplemented);

    let (status, _, text) = server.scrape("/metrics").await;
    assert_eq!(status, 200);
    let check = r#"service="grpc.health.v1.Health",method="Check""#;
    assert_eq!(
        value(
            &text,
            &format!(r#"allfives_grpc_calls_total{{{check},code="OK"}}"#)
        ),
        2.0
    );
    assert_eq!(
        value(
            &text,
            &format!("allfives_grpc_call_duration_seconds_count{{{check}}}")
        ),
        2.0
    );
    assert_eq!(
        value(
            &text,
            r#"allfives_grpc_calls_total{service="other",method="other",code="UNIMPLEMENTED"}"#
        ),
        1.0
    );
    assert_eq!(value(&text, "allfives_games_created_total"), 0.0);
}
