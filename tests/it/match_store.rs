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
use common::{Client, Creds, TestServer, reason, replicas, ring};
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
        display_name: String::new(),
        pass: String::new(),
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
    // The health service says whether the store answers.
    use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};
    let mut health = tonic_health::pb::health_client::HealthClient::new(one.channel().await);
    let store_status = async |health: &mut tonic_health::pb::health_client::HealthClient<_>| {
        let req = HealthCheckRequest {
            service: allfives::server::STORE_HEALTH.into(),
        };
        health.check(req).await.map(|r| r.into_inner().status)
    };
    // Its first probe is made as the server starts: SERVING once it answers.
    while store_status(&mut health).await.ok() != Some(ServingStatus::Serving as i32) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    redis.stop();
    let refused = a
        .play(play(&token, &view, &creds, 0))
        .await
        .expect_err("no store");
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
    assert_eq!(reason(&refused), "STORE_UNAVAILABLE");
    // A Watch opened meanwhile, a seat's or a spectator's, answers the same (issue 40:
    // it hung to the request timeout, and its answer was not the proto's).
    for viewer in [Some(0), None] {
        let watch = pb::WatchRequest {
            state: token.clone(),
            viewer,
            credential: viewer.map_or(Vec::new(), |seat| creds.of(seat)),
            ..Default::default()
        };
        let refused = a.watch(watch).await.expect_err("no store to watch");
        assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
        assert_eq!(reason(&refused), "STORE_UNAVAILABLE");
    }
    // At its next probe (every 5 s), NOT_SERVING: the decision waited for, not a time.
    while store_status(&mut health).await.ok() != Some(ServingStatus::NotServing as i32) {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
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
                display_name: String::new(),
                pass: String::new(),
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
            .new_game(common::against_a_bot(pb::BotLevel::Hard, seed))
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
    let next_view = next.view.clone().expect("view");
    let latest = stored_head(&redis, &next_view.match_id, "redis").await;
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

/// Pairs of devices racing: each time a seat has two moves, two devices send a
/// different one from the same token at the same moment, on two replicas sharing a
/// Redis store.
const RACES: usize = 1_000;

/// Races of issue 25: in every pair exactly one move is applied and the other refused
/// ABORTED STATE_STALE naming the winner's state; the winner's move sent again is
/// answered again (a retry); and the accepted states form one unbroken chain, whose
/// end is the store's head.
#[tokio::test]
async fn of_two_moves_raced_from_one_token_exactly_one_is_applied() {
    let _heavy = common::heavy().await;
    let redis = common::redis::Redis::standalone();
    let (one, two) = replicas("redis", &redis.urls()).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    let mut raced = 0;
    // Races won on each replica: both win some.
    let mut wins = [0; 2];
    while raced < RACES {
        let (mut token, mut view, creds) = dealt(&mut a).await;
        let mut chain = vec![view.state_id.clone()];
        while view.winner_side.is_none() && view.phase == pb::Phase::Playing as i32 {
            let accepted = if view.legal_moves.len() >= 2 {
                let (first, second) = (
                    play(&token, &view, &creds, 0),
                    play(&token, &view, &creds, 1),
                );
                // Sent together, each on its own connection to its own replica; which
                // is polled first alternates, so each replica's call is sometimes the
                // one that reaches the store first.
                let (x, y) = if raced % 2 == 0 {
                    tokio::join!(a.play(first.clone()), b.play(second.clone()))
                } else {
                    let (y, x) = tokio::join!(b.play(second.clone()), a.play(first.clone()));
                    (x, y)
                };
                raced += 1;
                let (won, retry, lost) = match (x, y) {
                    (Ok(won), Err(lost)) => {
                        wins[0] += 1;
                        (won.into_inner(), first, lost)
                    }
                    (Err(lost), Ok(won)) => {
                        wins[1] += 1;
                        (won.into_inner(), second, lost)
                    }
                    (x, y) => panic!("race {raced}: not exactly one applied: {x:?} / {y:?}"),
                };
                assert_eq!(lost.code(), Code::Aborted, "{lost:?}");
                assert_eq!(reason(&lost), "STATE_STALE");
                let won_id = won.view.as_ref().expect("view").state_id.clone();
                assert_eq!(latest(&lost), hex(&won_id));
                // The winner's move again, on either replica: a retry, answered.
                let again = b.play(retry).await.expect("a retry").into_inner();
                assert_eq!(again.view.expect("view").state_id, won_id);
                (won.state, won.view.expect("view"))
            } else if view.must_draw {
                let seat = view.turn.expect("turn");
                let drew = a
                    .draw(pb::DrawRequest {
                        state: token.clone().into(),
                        seat,
                        viewer: Some(seat),
                        credential: creds.of(seat),
                    })
                    .await
                    .expect("Draw")
                    .into_inner();
                (drew.state, drew.view.expect("view"))
            } else {
                let only = a.play(play(&token, &view, &creds, 0)).await.expect("Play");
                let only = only.into_inner();
                (only.state, only.view.expect("view"))
            };
            assert_eq!(
                accepted.1.previous_state_id,
                *chain.last().expect("a state"),
                "one unbroken chain"
            );
            chain.push(accepted.1.state_id.clone());
            token = accepted.0;
            // The next seat on turn's view (this one is the mover's).
            let public = common::view_for(&mut a, &token, 0, &creds).await;
            view = match public.turn {
                Some(turn) => common::view_for(&mut a, &token, turn, &creds).await,
                None => public,
            };
        }
        // The store's head is the chain's end.
        let head = stored_head(&redis, &view.match_id, "redis").await;
        assert_eq!(Some(&head.state.to_vec()), chain.last());
    }
    eprintln!(
        "{raced} races: won on the first replica {}, on the second {}",
        wins[0], wins[1]
    );
    assert!(wins[0] > 0 && wins[1] > 0, "{wins:?}");
}

/// The head a Redis store (`kind`: redis or redis-cluster) holds for the match whose
/// id (in hex) is `match_id`.
async fn stored_head(
    redis: &common::redis::Redis,
    match_id: &str,
    kind: &str,
) -> allfives::store::Head {
    let urls: Vec<String> = redis.urls().split(',').map(String::from).collect();
    let cluster = kind == "redis-cluster";
    let store = allfives::store::MatchStore::redis(
        &urls,
        cluster,
        std::time::Duration::from_secs(60),
        allfives::store::InviteRules {
            ttl: std::time::Duration::from_secs(60),
            misses_per_minute: 100,
            misses_per_client_per_minute: 100,
        },
    )
    .await
    .expect("connect");
    let id: allfives::state::MatchId = match_id.parse().expect("a match id");
    store
        .latest(&id)
        .await
        .expect("the store answers")
        .expect("the match is held")
}

/// The next call of a hot-seat match: the seat on turn's first legal move or a draw,
/// or the next hand's deal.
enum Turn {
    Play(pb::PlayRequest),
    Draw(pb::DrawRequest),
    Deal(pb::DealRequest),
}

/// `None` once the match is over.
async fn turn(client: &mut Client, token: &[u8], creds: &Creds) -> Option<Turn> {
    let public = common::view_for(client, token, 0, creds).await;
    if public.winner_side.is_some() {
        return None;
    }
    let Some(seat) = public.turn else {
        return Some(Turn::Deal(pb::DealRequest {
            state: token.to_vec().into(),
            ..Default::default()
        }));
    };
    let view = common::view_for(client, token, seat, creds).await;
    Some(match view.legal_moves.is_empty() {
        false => Turn::Play(play(token, &view, creds, 0)),
        true => Turn::Draw(pb::DrawRequest {
            state: token.to_vec().into(),
            seat,
            viewer: Some(seat),
            credential: creds.of(seat),
        }),
    })
}

/// Matches played at once while the store is killed.
const FAULT_MATCHES: usize = 6;

/// Whole matches on two replicas over `redis` (durable: `appendfsync always`), node
/// `victim` killed with SIGKILL mid-run and started again 1.5 s later: the calls in
/// the outage answer UNAVAILABLE STORE_UNAVAILABLE within their deadline, the same call
/// made again after the restart is answered (the service recovers without a restart),
/// and every move answered OK is in the store afterwards: each match's head is the
/// last state answered, its history unbroken (0 lost).
async fn a_killed_store_loses_no_answered_move(
    mut redis: common::redis::Redis,
    kind: &str,
    victim: Option<usize>,
) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Duration;
    let (one, two) = replicas(kind, &redis.urls()).await;
    // 0 before the kill, 1 while the store is down, 2 once it is back: a call met the
    // outage if it was refused, or if it began or ended while the store was down.
    let phase = Arc::new(AtomicUsize::new(0));
    let restarted = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicUsize::new(0));
    let mut first_key = String::new();
    let mut players = Vec::new();
    for n in 0..FAULT_MATCHES {
        let mut clients = [one.client().await, two.client().await];
        let (token, view, creds) = dealt(&mut clients[0]).await;
        if n == 0 {
            first_key = format!("allfives:{{{}}}:head", view.match_id);
        }
        let (restarted, refused) = (Arc::clone(&restarted), Arc::clone(&refused));
        let phase = Arc::clone(&phase);
        players.push(tokio::spawn(async move {
            let mut token = token;
            let mut last = view.state_id.clone();
            let mut after_restart = 0;
            let mut moves = n;
            while after_restart < 5 {
                let client = &mut clients[moves % 2];
                let Some(request) = turn(client, &token, &creds).await else {
                    break;
                };
                let began = phase.load(Ordering::Acquire);
                let answered = match request {
                    Turn::Play(req) => client.play(req).await.map(|a| {
                        let a = a.into_inner();
                        (a.state, a.view)
                    }),
                    Turn::Draw(req) => client.draw(req).await.map(|a| {
                        let a = a.into_inner();
                        (a.state, a.view)
                    }),
                    Turn::Deal(req) => client.deal(req).await.map(|a| {
                        let a = a.into_inner();
                        (a.state, a.view)
                    }),
                };
                let ended = phase.load(Ordering::Acquire);
                // Held through the outage (the store's connection waits for it), or
                // refused below: either way this call met it.
                let met = began == 1 || ended == 1 || began != ended || answered.is_err();
                if met {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
                match answered {
                    Ok((next, view)) => {
                        let view = view.expect("view");
                        assert_eq!(view.previous_state_id, last, "one unbroken chain");
                        (token, last) = (next, view.state_id);
                        moves += 1;
                        if restarted.load(Ordering::Relaxed) {
                            after_restart += 1;
                        }
                        // A move every few milliseconds: the matches last through the
                        // outage.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    Err(status) => {
                        assert_eq!(status.code(), Code::Unavailable, "{status:?}");
                        // Answered before the call's deadline: past it the answer
                        // would be DEADLINE_EXCEEDED.
                        assert_eq!(reason(&status), "STORE_UNAVAILABLE", "{status:?}");
                        // The same call again, from the same token, in a while.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
            (view.match_id, last)
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // On a cluster, the master of the first match's key: a call meets the outage.
    let victim = victim.unwrap_or_else(|| redis.node_of(&first_key));
    phase.store(1, Ordering::Release);
    redis.kill(victim);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    redis.restart(victim);
    phase.store(2, Ordering::Release);
    restarted.store(true, Ordering::Relaxed);
    let mut finished = Vec::new();
    for player in players {
        // Every match goes on after the restart: each player ends its match.
        finished.push(player.await.expect("a player"));
    }
    let refused = refused.load(Ordering::Relaxed);
    eprintln!(
        "{kind}: node {victim} killed for 1.5 s: {refused} calls met the outage (refused \
         STORE_UNAVAILABLE, or held until the store was back), {FAULT_MATCHES} matches went \
         on after it"
    );
    assert!(refused > 0, "no call met the outage");
    for (match_id, last) in finished {
        let head = stored_head(&redis, &match_id, kind).await;
        assert_eq!(
            head.state.to_vec(),
            last,
            "the last move answered is stored"
        );
    }
}

#[tokio::test]
async fn a_store_killed_mid_run_loses_no_answered_move() {
    let _heavy = common::heavy().await;
    a_killed_store_loses_no_answered_move(common::redis::Redis::durable(), "redis", Some(0)).await;
}

#[tokio::test]
async fn a_cluster_master_killed_mid_run_loses_no_answered_move() {
    let _heavy = common::heavy().await;
    let redis = common::redis::Redis::durable_cluster();
    a_killed_store_loses_no_answered_move(redis, "redis-cluster", None).await;
}

/// A claim whose answer was lost, after another device went on (it dealt): the same
/// claim key on the latest token gives the seat's credential back, with the match as it
/// is; from the token before the claim it is stale; another key gets nothing (no claim
/// after the deal).
#[tokio::test]
async fn a_lost_claim_is_taken_back_with_its_key_after_the_match_moved_on() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let mut client = server.client().await;
    let new = common::new_game_with(&mut client, vec![common::CLAIMED, common::OPEN]).await;
    let claim = |state: &[u8], key: Vec<u8>| pb::ClaimSeatRequest {
        state: state.to_vec(),
        seat: 1,
        claim_key: key,
        display_name: String::new(),
        pass: String::new(),
    };
    let lost = client
        .claim_seat(claim(&new.state, claim_key(7)))
        .await
        .expect("the claim")
        .into_inner();
    // The host goes on from the claim's token (its stream brought it): it deals.
    let dealt = client
        .deal(pb::DealRequest {
            state: lost.state.clone().into(),
            ..Default::default()
        })
        .await
        .expect("Deal")
        .into_inner();
    let again = client
        .claim_seat(claim(&dealt.state, claim_key(7)))
        .await
        .expect("the claim again, on the latest token")
        .into_inner();
    assert_eq!(again.credential, lost.credential);
    let view = again.view.expect("view");
    assert_eq!(
        view.state_id,
        dealt.view.expect("view").state_id,
        "nothing moved"
    );
    assert_eq!(view.viewer, Some(1));
    assert!(!view.hand.is_empty(), "its hand, dealt meanwhile");
    let stale = client
        .claim_seat(claim(&new.state, claim_key(7)))
        .await
        .expect_err("from before the claim");
    assert_eq!(reason(&stale), "STATE_STALE");
    let other = client
        .claim_seat(claim(&dealt.state, claim_key(8)))
        .await
        .expect_err("another key");
    assert_eq!(
        reason(&other),
        "WRONG_PHASE",
        "the match was dealt: no claim now"
    );
}
