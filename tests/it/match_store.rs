//! The match store, against the real server: in memory, and in real Redis servers
//! (standalone and a three-master cluster, `common::redis`) shared by two replicas. A
//! move from an older token is refused ABORTED STATE_STALE with the latest state's id
//! (on the other replica too), the same move made again from the same token is
//! answered again (also when HARD bots moved inside the call), a claim made again
//! with its claim key is answered again and any other claim of the seat from that
//! token refused, and a store that went away answers UNAVAILABLE
//! STORE_UNAVAILABLE; without a store the same fork is taken (what the store adds).
//! docs/security.md, "The match store".

use crate::common;

use allfives::proto::v1 as pb;
use common::{Client, Creds, TestServer, reason, ring};
use tonic::Code;
use tonic_types::StatusExt;

/// A dealt two-player hot-seat match: its token, the seat on turn's view and every
/// seat's credential.
async fn dealt(client: &mut Client) -> (Vec<u8>, pb::GameView, Creds) {
    let (token, creds) = common::dealt_token(client).await;
    let public = common::view_for(client, &token, 0, &creds).await;
    let turn = public.turn.expect("a seat on turn");
    let view = common::view_for(client, &token, turn, &creds).await;
    (token, view, creds)
}

/// The Play of the `n`th legal move of the seat on turn in `view`, from `token`.
fn play(token: &[u8], view: &pb::GameView, creds: &Creds, n: usize) -> pb::PlayRequest {
    let seat = view.turn.expect("a seat on turn");
    let legal = view.legal_moves.get(n).expect("that many legal moves");
    pb::PlayRequest {
        state: token.to_vec().into(),
        seat,
        tile: legal.tile,
        end: legal.end,
        viewer: Some(seat),
        credential: creds.of(seat),
    }
}

/// The `latest_state_id` a STATE_STALE refusal names.
fn latest(status: &tonic::Status) -> String {
    status
        .get_error_details()
        .error_info()
        .and_then(|info| info.metadata.get("latest_state_id").cloned())
        .unwrap_or_default()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A dealt match whose seat on turn has two legal moves (the lead: every tile).
async fn with_a_choice(client: &mut Client) -> (Vec<u8>, pb::GameView, Creds) {
    loop {
        let (token, view, creds) = dealt(client).await;
        if view.legal_moves.len() >= 2 {
            return (token, view, creds);
        }
    }
}

/// The store's rules through `a` and `b` (two replicas sharing a store, or one server
/// twice): a move, the same move again (answered again, the same state), another move
/// from the same token (refused STATE_STALE with the latest state's id), the match
/// going on from its latest token, and then the first move again (stale).
async fn refuses_forks(a: &mut Client, b: &mut Client) {
    let (dealt_token, view, creds) = with_a_choice(a).await;
    let first = a
        .play(play(&dealt_token, &view, &creds, 0))
        .await
        .expect("the first move")
        .into_inner();
    let head = first.view.expect("view").state_id;
    // The same move from the same token again (a retry after a lost answer): the same
    // state, answered again.
    let again = b
        .play(play(&dealt_token, &view, &creds, 0))
        .await
        .expect("the same move again")
        .into_inner();
    assert_eq!(again.view.expect("view").state_id, head);
    // Another move from the same token: a take-back, refused with the latest's id.
    let fork = b
        .play(play(&dealt_token, &view, &creds, 1))
        .await
        .expect_err("a fork");
    assert_eq!(fork.code(), Code::Aborted, "{fork:?}");
    assert_eq!(reason(&fork), "STATE_STALE");
    assert_eq!(latest(&fork), hex(&head));
    // The match goes on from its latest token.
    let turn = first_turn(a, &first.state, &creds).await;
    let next_view = common::view_for(a, &first.state, turn, &creds).await;
    if !next_view.must_draw {
        a.play(play(&first.state, &next_view, &creds, 0))
            .await
            .expect("the next move");
        // And the first move, made again now, is stale: the match moved on.
        let old = b
            .play(play(&dealt_token, &view, &creds, 0))
            .await
            .expect_err("a stale retry");
        assert_eq!(reason(&old), "STATE_STALE");
    }
}

/// A claim key (random enough for a test: a counter's bytes).
fn claim_key(n: u8) -> Vec<u8> {
    (0..16)
        .map(|i| n.wrapping_mul(31).wrapping_add(i))
        .collect()
}

/// Claims of seat 1 from one token, through `a` then `b`: a claim made again with its
/// key is answered again (the same credential and state: a retry after a lost answer);
/// any other claim from that token (another key, or none) is refused STATE_STALE. So
/// the claimer gets one deal, not a deal a claim it can try until it likes one (the
/// claim re-roll of issue 25; `without_a_store_a_claim_made_again_deals_again`).
async fn claims_once(a: &mut Client, b: &mut Client) {
    let new = a
        .new_game(pb::NewGameRequest {
            rules: Some(pb::Rules {
                players: 2,
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .expect("NewGame")
        .into_inner();
    let claim = |key: Vec<u8>| pb::ClaimSeatRequest {
        state: new.state.clone(),
        seat: 1,
        claim_key: key,
    };
    let first = a
        .claim_seat(claim(claim_key(1)))
        .await
        .expect("the first claim")
        .into_inner();
    let again = b
        .claim_seat(claim(claim_key(1)))
        .await
        .expect("the same claim again")
        .into_inner();
    assert_eq!(again.credential, first.credential);
    assert_eq!(
        again.view.expect("view").state_id,
        first.view.expect("view").state_id
    );
    for other in [claim_key(2), claim_key(3), Vec::new()] {
        let second = b.claim_seat(claim(other)).await.expect_err("another claim");
        assert_eq!(second.code(), Code::Aborted, "{second:?}");
        assert_eq!(reason(&second), "STATE_STALE");
    }
}

#[tokio::test]
async fn the_memory_store_refuses_forks_and_answers_retries() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let (mut a, mut b) = (server.client().await, server.client().await);
    refuses_forks(&mut a, &mut b).await;
    claims_once(&mut a, &mut b).await;
}

/// Two replicas on one Redis-protocol store (`kind`: redis or redis-cluster).
async fn replicas(kind: &str, urls: &str) -> (TestServer, TestServer) {
    let args = ["--match-store", kind, "--match-store-url", urls];
    (
        TestServer::start_with(ring(1, 1), &args).await,
        TestServer::start_with(ring(1, 1), &args).await,
    )
}

#[tokio::test]
async fn replicas_sharing_a_redis_store_refuse_a_fork_made_on_the_other() {
    let redis = common::redis::Redis::standalone();
    let (one, two) = replicas("redis", &redis.urls()).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    refuses_forks(&mut a, &mut b).await;
    claims_once(&mut a, &mut b).await;
    // One key per match, hash-tagged, with a time to live.
    let keys = redis.cli(redis.port(), &["keys", "allfives:*"]);
    let key = keys.lines().next().expect("a match's key");
    assert!(
        key.starts_with("allfives:{") && key.ends_with("}:head"),
        "{key}"
    );
    let ttl: i64 = redis
        .cli(redis.port(), &["ttl", key])
        .trim()
        .parse()
        .expect("a ttl");
    assert!(ttl > 0, "{ttl}");
}

#[tokio::test]
async fn replicas_sharing_a_redis_cluster_refuse_a_fork_made_on_the_other() {
    let redis = common::redis::Redis::cluster();
    let (one, two) = replicas("redis-cluster", &redis.urls()).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    for _ in 0..3 {
        // Several matches, so that their keys fall on more than one master.
        refuses_forks(&mut a, &mut b).await;
    }
    claims_once(&mut a, &mut b).await;
}

#[tokio::test]
async fn a_store_that_went_away_answers_store_unavailable() {
    let mut redis = common::redis::Redis::standalone();
    let (one, _two) = replicas("redis", &redis.urls()).await;
    let mut a = one.client().await;
    let (token, view, creds) = with_a_choice(&mut a).await;
    redis.stop();
    let refused = a
        .play(play(&token, &view, &creds, 0))
        .await
        .expect_err("no store");
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
    assert_eq!(reason(&refused), "STORE_UNAVAILABLE");
}

/// The seat on turn in `token`.
async fn first_turn(client: &mut Client, token: &[u8], creds: &Creds) -> u32 {
    common::view_for(client, token, 0, creds)
        .await
        .turn
        .expect("a seat on turn")
}

#[tokio::test]
async fn without_a_store_the_fork_is_taken() {
    let server = TestServer::start(ring(1, 1)).await;
    let mut client = server.client().await;
    let (token, view, creds) = with_a_choice(&mut client).await;
    client
        .play(play(&token, &view, &creds, 0))
        .await
        .expect("the first move");
    let fork = client
        .play(play(&token, &view, &creds, 1))
        .await
        .expect("stateless: another branch")
        .into_inner();
    assert!(fork.view.is_some());
}

/// What the store adds to claims: without one, the claimer can claim again and again
/// from the token before its claim (a new key each time, or none), deal each claim on
/// the side and keep the deal it likes; the same key deals the same again.
#[tokio::test]
async fn without_a_store_a_claim_made_again_deals_again() {
    let server = TestServer::start_default(ring(1, 1)).await;
    let mut client = server.client().await;
    let new = common::new_game_with(&mut client, vec![common::CLAIMED, common::OPEN]).await;
    let mut hand_of = async |key: Vec<u8>| {
        let claimed = client
            .claim_seat(pb::ClaimSeatRequest {
                state: new.state.clone(),
                seat: 1,
                claim_key: key,
            })
            .await
            .expect("stateless: every claim is taken")
            .into_inner();
        let mut creds = Creds(vec![Vec::new(); 4]);
        creds.0[1] = claimed.credential.expect("credential").credential;
        let (dealt, _) = common::deal(&mut client, claimed.state).await;
        common::view_for(&mut client, &dealt, 1, &creds).await.hand
    };
    let first = hand_of(claim_key(1)).await;
    assert_eq!(
        hand_of(claim_key(1)).await,
        first,
        "the same key deals the same"
    );
    let mut others = Vec::new();
    for n in 2..6 {
        others.push(hand_of(claim_key(n)).await);
    }
    others.push(hand_of(Vec::new()).await);
    assert!(
        others.iter().any(|hand| *hand != first),
        "five other claims all dealt the first claim's hand"
    );
}

#[tokio::test]
async fn moves_with_hard_bots_inside_are_recorded_and_forks_refused() {
    // The HARD bots search on the blocking pool and their call lasts the floor: the
    // store is told after both.
    let args = [
        "--match-store",
        "memory",
        "--allow-client-seeds",
        "--bot-move-floor-ms",
        "8",
        "--bot-worlds",
        "16",
    ];
    let server = TestServer::start_with(ring(1, 1), &args).await;
    let mut client = server.client().await;
    for seed in 0..50 {
        let new = client
            .new_game(pb::NewGameRequest {
                rules: Some(pb::Rules {
                    players: 2,
                    ..Default::default()
                }),
                seed: Some(seed),
                viewer: Some(0),
                seats: vec![
                    pb::SeatSetup {
                        bot: 0,
                        claim: true,
                    },
                    common::bot(pb::BotLevel::Hard),
                ],
            })
            .await
            .expect("NewGame")
            .into_inner();
        let creds = Creds::from_new_game(&new);
        let deal = || pb::DealRequest {
            state: new.state.clone().into(),
            viewer: Some(0),
            credential: creds.of(0),
        };
        let dealt = client.deal(deal()).await.expect("Deal").into_inner();
        let view = dealt.view.expect("view");
        // The Deal again (a retry): the same state, the bot's moves included.
        let again = client.deal(deal()).await.expect("Deal again").into_inner();
        assert_eq!(again.view.expect("view").state_id, view.state_id);
        if view.turn != Some(0) || view.legal_moves.len() < 2 {
            continue;
        }
        client
            .play(play(&dealt.state, &view, &creds, 0))
            .await
            .expect("the seat's move, then the bot's");
        let fork = client
            .play(play(&dealt.state, &view, &creds, 1))
            .await
            .expect_err("a fork");
        assert_eq!(reason(&fork), "STATE_STALE", "{fork:?}");
        return;
    }
    panic!("no seed in 50 gave seat 0 a choice after the deal");
}

/// A match made on a server with a store says so in its tokens: a replica without a
/// store refuses to move it (STORE_REQUIRED) instead of taking a fork unchecked, and
/// still answers what changes nothing (Score).
#[tokio::test]
async fn a_match_made_with_a_store_is_not_moved_by_a_server_without_one() {
    let stored = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let stateless = TestServer::start_with(ring(1, 1), &[]).await;
    let mut a = stored.client().await;
    let mut b = stateless.client().await;
    let (token, view, creds) = with_a_choice(&mut a).await;
    let refused = b
        .play(play(&token, &view, &creds, 0))
        .await
        .expect_err("no store here");
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    assert_eq!(reason(&refused), "STORE_REQUIRED");
    common::view_for(&mut b, &token, 0, &creds).await;
    // On its own server the move is taken.
    a.play(play(&token, &view, &creds, 0))
        .await
        .expect("the store's server moves it");
}

/// A store that no longer holds a match made with it (a memory store restarted: here
/// another replica's; a Redis key gone) refuses to move it, from its latest token or
/// an older one alike, instead of taking whichever comes first.
#[tokio::test]
async fn a_match_its_store_forgot_is_refused() {
    let one = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let restarted = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let mut a = one.client().await;
    let mut b = restarted.client().await;
    let (token, view, creds) = with_a_choice(&mut a).await;
    let refused = b
        .play(play(&token, &view, &creds, 0))
        .await
        .expect_err("forgotten");
    assert_eq!(refused.code(), Code::NotFound, "{refused:?}");
    assert_eq!(reason(&refused), "MATCH_FORGOTTEN");

    let redis = common::redis::Redis::standalone();
    let (one, two) = replicas("redis", &redis.urls()).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    let (token, view, creds) = with_a_choice(&mut a).await;
    let next = a
        .play(play(&token, &view, &creds, 0))
        .await
        .expect("a move")
        .into_inner();
    // NewGame wrote the match's record, and each move since: the latest's id and
    // token.
    let keys = redis.cli(redis.port(), &["keys", "allfives:*"]);
    assert_eq!(keys.lines().count(), 1, "{keys}");
    let store = allfives::store::MatchStore::redis(
        &[redis.urls()],
        false,
        std::time::Duration::from_secs(60),
    )
    .await
    .expect("connect");
    let next_view = next.view.clone().expect("view");
    let match_id: Vec<u8> = (0..next_view.match_id.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&next_view.match_id[i..i + 2], 16).expect("hex"))
        .collect();
    let latest = store
        .latest(&match_id.try_into().expect("16 bytes"))
        .await
        .expect("the store answers")
        .expect("the match is held");
    assert_eq!(latest.state.to_vec(), next_view.state_id);
    assert_eq!(latest.token, next.state);
    redis.cli(redis.port(), &["flushall"]);
    for (token, view, n) in [(&token, &view, 1), (&token, &view, 0)] {
        let refused = b
            .play(play(token, view, &creds, n))
            .await
            .expect_err("forgotten");
        assert_eq!(reason(&refused), "MATCH_FORGOTTEN", "{refused:?}");
    }
    let turn = first_turn(&mut a, &next.state, &creds).await;
    let next_view = common::view_for(&mut a, &next.state, turn, &creds).await;
    if !next_view.must_draw {
        let refused = b
            .play(play(&next.state, &next_view, &creds, 0))
            .await
            .expect_err("forgotten");
        assert_eq!(reason(&refused), "MATCH_FORGOTTEN", "{refused:?}");
    }
}
