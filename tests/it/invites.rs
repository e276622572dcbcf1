//! Invite codes against the real server: a seated player asks a code, a friend types
//! it (in any case, without its hyphens) on another device and gets the match's
//! latest token, claims the open seat, and the match is dealt; on the memory store and
//! on two replicas sharing a Redis store (asked on one, typed on the other). A code
//! unknown, expired, or of a match with no open seat is the same NOT_FOUND; past the
//! minute's misses even a right code is refused (the guesser's bound); only a seated
//! player may ask; a server without a store refuses both calls. docs/security.md,
//! "Invite codes".

use std::time::Duration;

use crate::common;

use allfives::proto::v1 as pb;
use common::{Client, TestServer, bad_fields, reason, ring};
use tonic::Code;

/// A new match of `players` whose seat 0 is claimed (its token and credential) and
/// whose other seats are open.
async fn hosted(client: &mut Client, players: u32) -> (Vec<u8>, Vec<u8>) {
    let mut seats = vec![common::OPEN; players as usize];
    seats[0] = common::CLAIMED;
    let new = client
        .new_game(pb::NewGameRequest {
            rules: Some(pb::Rules {
                players,
                ..Default::default()
            }),
            viewer: Some(0),
            seats,
            ..Default::default()
        })
        .await
        .expect("NewGame")
        .into_inner();
    (new.state, new.credentials[0].credential.clone())
}

fn ask(state: &[u8], credential: &[u8]) -> pb::CreateInviteCodeRequest {
    pb::CreateInviteCodeRequest {
        state: state.to_vec(),
        viewer: 0,
        credential: credential.to_vec(),
    }
}

async fn code_of(client: &mut Client, state: &[u8], credential: &[u8]) -> String {
    client
        .create_invite_code(ask(state, credential))
        .await
        .expect("CreateInviteCode")
        .into_inner()
        .code
}

async fn typed(
    client: &mut Client,
    code: &str,
) -> Result<pb::OpenInviteCodeResponse, tonic::Status> {
    client
        .open_invite_code(pb::OpenInviteCodeRequest {
            code: code.to_string(),
        })
        .await
        .map(tonic::Response::into_inner)
}

async fn claim(client: &mut Client, state: Vec<u8>, seat: u32) -> pb::ClaimSeatResponse {
    client
        .claim_seat(pb::ClaimSeatRequest {
            state,
            seat,
            claim_key: Vec::new(),
            display_name: format!("Friend {seat}"),
        })
        .await
        .expect("ClaimSeat")
        .into_inner()
}

fn not_found(answer: Result<pb::OpenInviteCodeResponse, tonic::Status>) {
    let status = answer.expect_err("no match under the code");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    assert_eq!(reason(&status), "INVITE_NOT_FOUND");
}

/// The whole way, the host on `a` and the friends on `b`: a code for a three-player
/// match, asked twice (the same code), typed as a person might, opened by each friend
/// in turn; the second friend's open brings the first one's claim (the latest
/// token); once every seat is taken the code is gone, and the match deals.
async fn friends_join_by_code(a: &mut Client, b: &mut Client) {
    let (state, credential) = hosted(a, 3).await;
    let invite = a
        .create_invite_code(ask(&state, &credential))
        .await
        .expect("CreateInviteCode")
        .into_inner();
    let code = invite.code.clone();
    assert_eq!(code.len(), 14, "{code}");
    assert!(
        code.chars().enumerate().all(|(i, c)| if i == 4 || i == 9 {
            c == '-'
        } else {
            c.is_ascii_digit() || c.is_ascii_uppercase()
        }),
        "{code}"
    );
    assert!((1..=900).contains(&invite.expires_in_seconds), "{invite:?}");
    // Asked again (from the host's other device, say): the same code.
    assert_eq!(code_of(b, &state, &credential).await, code);

    // A friend types it in lower case without the hyphens.
    let opened = typed(b, &code.to_lowercase().replace('-', ""))
        .await
        .expect("the code opens");
    assert_eq!(opened.state, state, "the match's latest token");
    let view = opened.view.expect("view");
    assert!(view.hand.is_empty(), "a spectator's view");
    let first = claim(b, opened.state, 1).await;
    // The second friend's open brings the match with the first friend's claim.
    let opened = typed(b, &code).await.expect("the code still opens");
    assert_eq!(opened.state, first.state);
    let seats = opened.view.expect("view").seats;
    assert_eq!(seats[1].display_name, "Friend 1");
    let second = claim(b, opened.state, 2).await;
    // Every seat taken: the code is gone, and asking another is refused.
    not_found(typed(b, &code).await);
    let status = a
        .create_invite_code(ask(&second.state, &credential))
        .await
        .expect_err("no open seat");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert_eq!(reason(&status), "NO_OPEN_SEAT");
    let dealt = common::deal(a, second.state).await.1;
    assert_eq!(dealt.phase, pb::Phase::Playing as i32);
}

#[tokio::test]
async fn a_friend_joins_by_code_on_the_memory_store() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let (mut a, mut b) = (server.client().await, server.client().await);
    friends_join_by_code(&mut a, &mut b).await;
}

#[tokio::test]
async fn a_code_asked_on_one_replica_opens_on_the_other_over_redis() {
    let redis = common::redis::Redis::standalone();
    let (one, two) = common::replicas("redis", &redis.urls()).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    friends_join_by_code(&mut a, &mut b).await;
    // The code's keys are in the invites' slot, with the code's time to live.
    let keys = redis.cli(redis.port(), &["keys", "allfives:{allfives-invites}:*"]);
    assert!(keys.lines().any(|k| k.contains(":code:")), "{keys}");
    assert!(keys.lines().any(|k| k.contains(":match:")), "{keys}");
    for key in keys.lines().filter(|k| !k.contains(":misses:")) {
        let ttl: i64 = redis
            .cli(redis.port(), &["ttl", key])
            .trim()
            .parse()
            .expect("a ttl");
        assert!((1..=900).contains(&ttl), "{key}: {ttl}");
    }
}

#[tokio::test]
async fn a_code_asked_on_one_replica_opens_on_the_other_over_a_redis_cluster() {
    let redis = common::redis::Redis::cluster();
    let (one, two) = common::replicas("redis-cluster", &redis.urls()).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    friends_join_by_code(&mut a, &mut b).await;
}

#[tokio::test]
async fn a_code_expires() {
    let args = ["--match-store", "memory", "--invite-ttl-secs", "10"];
    let server = TestServer::start_with(ring(1, 1), &args).await;
    let mut client = server.client().await;
    let (state, credential) = hosted(&mut client, 2).await;
    let invite = client
        .create_invite_code(ask(&state, &credential))
        .await
        .expect("CreateInviteCode")
        .into_inner();
    assert!((9..=10).contains(&invite.expires_in_seconds), "{invite:?}");
    typed(&mut client, &invite.code)
        .await
        .expect("open before it expires");
    tokio::time::sleep(Duration::from_millis(10_200)).await;
    not_found(typed(&mut client, &invite.code).await);
    // Asked again, the match gets a new code.
    let renewed = code_of(&mut client, &state, &credential).await;
    assert_ne!(renewed, invite.code);
    typed(&mut client, &renewed)
        .await
        .expect("the new code opens");
}

/// The guesser's bound: once the minute's misses are spent, even the right code is
/// refused (else the limit would only slow the wrong guesses down).
#[tokio::test]
async fn past_the_minute_s_misses_even_a_right_code_is_refused() {
    let redis = common::redis::Redis::standalone();
    let args = [
        "--match-store",
        "redis",
        "--match-store-url",
        &redis.urls(),
        "--invite-misses-per-minute",
        "5",
    ];
    let one = TestServer::start_with(ring(1, 1), &args).await;
    let two = TestServer::start_with(ring(1, 1), &args).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    let (state, credential) = hosted(&mut a, 2).await;
    let code = code_of(&mut a, &state, &credential).await;
    // The right code's neighbour in the last symbol: a near miss, counted on either
    // replica (the count is the store's).
    let wrong = {
        let last = code.chars().last().expect("a symbol");
        let other = if last == '0' { '1' } else { '0' };
        format!("{}{other}", &code[..code.len() - 1])
    };
    // The minute may turn during the test: then the count starts again, so guess on
    // until refused (at most 5 misses a minute get an answer).
    let mut misses = 0;
    let refused = loop {
        let client = if misses % 2 == 0 { &mut a } else { &mut b };
        match typed(client, &wrong).await {
            Err(status) if reason(&status) == "INVITE_NOT_FOUND" => misses += 1,
            Err(status) => break status,
            Ok(_) => panic!("a wrong code opened"),
        }
        assert!(misses <= 10, "never refused after {misses} misses");
    };
    assert!(misses >= 5, "refused after {misses} misses");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert_eq!(reason(&refused), "INVITE_RATE_LIMITED");
    let right = typed(&mut b, &code)
        .await
        .expect_err("the right code, past the bound");
    assert_eq!(reason(&right), "INVITE_RATE_LIMITED", "{right:?}");
}

#[tokio::test]
async fn only_a_seated_player_asks_a_code_and_only_before_the_deal() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let mut client = server.client().await;
    let (state, credential) = hosted(&mut client, 2).await;
    let cases = [
        (Vec::new(), "CREDENTIAL_REQUIRED"),
        (vec![7; 16], "CREDENTIAL_INVALID"),
    ];
    for (wrong, why) in cases {
        let status = client
            .create_invite_code(ask(&state, &wrong))
            .await
            .expect_err("not the seat's credential");
        assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
        assert_eq!(reason(&status), why);
    }
    // The open seat's viewer, which has no credential yet.
    let status = client
        .create_invite_code(pb::CreateInviteCodeRequest {
            viewer: 1,
            ..ask(&state, &[9; 16])
        })
        .await
        .expect_err("an open seat's viewer");
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    // A seat out of range.
    let status = client
        .create_invite_code(pb::CreateInviteCodeRequest {
            viewer: 5,
            ..ask(&state, &credential)
        })
        .await
        .expect_err("no such seat");
    assert_eq!(bad_fields(&status), ["viewer"]);
    // A match whose seats were all claimed in NewGame, and dealt.
    let (dealt, creds) = common::dealt_token(&mut client).await;
    let status = client
        .create_invite_code(ask(&dealt, &creds.of(0)))
        .await
        .expect_err("dealt");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert_eq!(reason(&status), "WRONG_PHASE");
}

#[tokio::test]
async fn a_code_that_is_not_one_names_the_field_and_a_code_nobody_made_is_not_found() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let mut client = server.client().await;
    for bad in [
        "",
        "K7QM-4XPR-2D9",
        "K7QM-4XPR-2D9U",
        "<script>",
        &"A".repeat(100),
    ] {
        let status = typed(&mut client, bad).await.expect_err("not a code");
        assert_eq!(status.code(), Code::InvalidArgument, "{bad:?}: {status:?}");
        assert_eq!(bad_fields(&status), ["code"], "{bad:?}");
    }
    not_found(typed(&mut client, "0000-0000-0000").await);
    not_found(typed(&mut client, "K7QM 4XPR 2D9F").await);
}

#[tokio::test]
async fn without_a_store_neither_call_is_served() {
    let server = TestServer::start_with(ring(1, 1), &[]).await;
    let mut client = server.client().await;
    let (state, credential) = hosted(&mut client, 2).await;
    let status = client
        .create_invite_code(ask(&state, &credential))
        .await
        .expect_err("no store");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert_eq!(reason(&status), "STORE_REQUIRED");
    let status = typed(&mut client, "0000-0000-0000")
        .await
        .expect_err("no store");
    assert_eq!(reason(&status), "STORE_REQUIRED");
}
