//! `Rematch` against the real server: a finished match's seats ask for its rematch one
//! after the other and land in one new match, each in its own seat with its own
//! credential; the others are told through the finished match's stream (the memory
//! store, and Redis across two replicas); nobody but a seat's player gets its seat;
//! without a store, both asks make the same match.

use std::time::Duration;

use crate::common;

use allfives::proto::v1 as pb;
use allfives::proto::v1::watch_response::Kind;
use common::{Client, Creds, TestServer, reason, ring};
use tonic::Code;
use tonic::codec::Streaming;

/// The longest a test waits for a stream's next message (a hang guard).
const WAIT: Duration = Duration::from_secs(10);

/// A match of Ana (seat 0) and Ben (seat 1), both claimed in NewGame, and a bot (seat
/// 2), to 5 points: over at the first score.
fn table() -> pb::NewGameRequest {
    let human = |name: &str| pb::SeatSetup {
        bot: 0,
        claim: true,
        display_name: name.into(),
        pass: String::new(),
    };
    pb::NewGameRequest {
        rules: Some(pb::Rules {
            players: 3,
            target: 5,
            ..Default::default()
        }),
        seed: None,
        viewer: Some(0),
        seats: vec![human("Ana"), human("Ben"), common::bot(pb::BotLevel::Easy)],
    }
}

/// A new match of [`table`]: its first token, the final token once played out (every
/// seat's first legal move, or a draw), and the credentials.
async fn finished(client: &mut Client) -> (Vec<u8>, Vec<u8>, Creds) {
    let new = client
        .new_game(table())
        .await
        .expect("NewGame")
        .into_inner();
    let creds = Creds::from_new_game(&new);
    let first = new.state.clone();
    let mut state = new.state;
    for _ in 0..2000 {
        let view = common::view_for(client, &state, 0, &creds).await;
        match pb::Phase::try_from(view.phase).expect("phase") {
            pb::Phase::Over => return (first, state, creds),
            pb::Phase::Dealing => {
                let req = pb::DealRequest {
                    state: state.clone().into(),
                    viewer: Some(0),
                    credential: creds.of(0),
                };
                state = client.deal(req).await.expect("Deal").into_inner().state;
            }
            _ => {
                let seat = view.turn.expect("a seat on turn");
                let view = common::view_for(client, &state, seat, &creds).await;
                state = match view.legal_moves.first() {
                    Some(m) => {
                        let req = pb::PlayRequest {
                            state: state.clone().into(),
                            seat,
                            tile: m.tile,
                            end: m.end,
                            viewer: Some(seat),
                            credential: creds.of(seat),
                        };
                        client.play(req).await.expect("Play").into_inner().state
                    }
                    None => {
                        let req = pb::DrawRequest {
                            state: state.clone().into(),
                            seat,
                            viewer: Some(seat),
                            credential: creds.of(seat),
                        };
                        client.draw(req).await.expect("Draw").into_inner().state
                    }
                };
            }
        }
    }
    panic!("the match did not end");
}

fn ask(state: &[u8], seat: u32, credential: &[u8]) -> pb::RematchRequest {
    pb::RematchRequest {
        state: state.to_vec(),
        seat,
        credential: credential.to_vec(),
    }
}

/// The next message of a stream that is not a heartbeat or presence.
async fn next_news(stream: &mut Streaming<pb::WatchResponse>) -> Kind {
    loop {
        let message = tokio::time::timeout(WAIT, stream.message())
            .await
            .expect("a message in time")
            .expect("the stream holds")
            .expect("the stream goes on");
        match message.kind.expect("a kind") {
            Kind::Heartbeat(_) | Kind::Presence(_) => continue,
            news => return news,
        }
    }
}

/// Seat `seat`'s stream of the match of `state`, which has seen `last`.
async fn watch(
    client: &mut Client,
    state: &[u8],
    seat: u32,
    creds: &Creds,
    last: &[u8],
) -> Streaming<pb::WatchResponse> {
    let req = pb::WatchRequest {
        state: state.to_vec(),
        viewer: Some(seat),
        credential: creds.of(seat),
        last_state_id: last.to_vec(),
        ..Default::default()
    };
    client.watch(req).await.expect("Watch").into_inner()
}

/// The rematch's seats and names are the finished match's; its match is another.
fn same_table(rematch: &pb::GameView, finished: &pb::GameView) {
    assert_ne!(rematch.match_id, finished.match_id);
    assert_eq!(rematch.rules, finished.rules);
    assert_eq!(rematch.phase, pb::Phase::Dealing as i32);
    assert_eq!(rematch.hand_number, 0);
    let who = |v: &pb::GameView| -> Vec<(String, i32, i32)> {
        v.seats
            .iter()
            .map(|s| (s.display_name.clone(), s.bot, s.kind))
            .collect()
    };
    assert_eq!(who(rematch), who(finished));
}

#[tokio::test]
async fn the_seats_of_a_finished_match_meet_again_in_its_rematch_told_through_its_stream() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let mut client = server.client().await;
    let (first, last, creds) = finished(&mut client).await;
    let over = common::view_for(&mut client, &last, 1, &creds).await;
    // Ben's device follows the finished match, up to date.
    let mut ben = watch(&mut client, &last, 1, &creds, &over.state_id).await;

    // Before the end, no rematch.
    let early = client
        .rematch(ask(&first, 0, &creds.of(0)))
        .await
        .expect_err("a match not over");
    assert_eq!(
        (early.code(), reason(&early).as_str()),
        (Code::FailedPrecondition, "WRONG_PHASE")
    );
    // Nobody asks for a seat that is not theirs: no credential, another seat's, a bot's.
    for (seat, credential, why) in [
        (0, Vec::new(), "CREDENTIAL_REQUIRED"),
        (0, creds.of(1), "CREDENTIAL_INVALID"),
        (2, creds.of(0), "SEAT_IS_BOT"),
    ] {
        let refused = client
            .rematch(ask(&last, seat, &credential))
            .await
            .expect_err("not the seat's player");
        assert_eq!(
            (refused.code(), reason(&refused).as_str()),
            (Code::PermissionDenied, why)
        );
    }

    // Ana asks: the rematch, her seat in it, waiting for a deal.
    let ana = client
        .rematch(ask(&last, 0, &creds.of(0)))
        .await
        .expect("Rematch")
        .into_inner();
    let ana_view = ana.view.clone().expect("view");
    same_table(&ana_view, &over);
    let ana_cred = ana.credential.clone().expect("credential");
    assert_eq!(ana_cred.seat, 0);
    assert_ne!(
        ana_cred.credential,
        creds.of(0),
        "a new match, a new credential"
    );
    // Ben is told, through the finished match's stream.
    match next_news(&mut ben).await {
        Kind::Rematch(offer) => {
            assert_eq!(offer.match_id, ana_view.match_id);
            assert_eq!(offer.seat, 0);
        }
        other => panic!("not the offer: {other:?}"),
    }
    // Asked again (its answer lost), the same match and credential.
    let again = client
        .rematch(ask(&last, 0, &creds.of(0)))
        .await
        .expect("Rematch again")
        .into_inner();
    assert_eq!(again.view.expect("view").state_id, ana_view.state_id);
    assert_eq!(again.credential, Some(ana_cred.clone()));

    // Ana deals; then Ben accepts: the rematch as it is now, seen from his seat.
    let deal = pb::DealRequest {
        state: ana.state.clone().into(),
        viewer: Some(0),
        credential: ana_cred.credential.clone(),
    };
    let dealt_again = client.deal(deal).await.expect("Deal").into_inner();
    let dealt_view = dealt_again.view.expect("view");
    let ben_answer = client
        .rematch(ask(&last, 1, &creds.of(1)))
        .await
        .expect("Ben's Rematch")
        .into_inner();
    let ben_view = ben_answer.view.expect("view");
    assert_eq!(ben_view.match_id, ana_view.match_id);
    assert_eq!(ben_view.state_id, dealt_view.state_id, "the latest state");
    assert_eq!(ben_view.viewer, Some(1));
    assert_eq!(ben_view.hand.len(), dealt_view.hand.len(), "his own hand");
    let ben_cred = ben_answer.credential.expect("credential");
    assert_eq!(ben_cred.seat, 1);
    assert_ne!(ben_cred.credential, ana_cred.credential);
    // Each credential opens its own seat only.
    let mut rematch_creds = Creds(vec![Vec::new(); 4]);
    rematch_creds.0[1] = ana_cred.credential.clone();
    let score = pb::ScoreRequest {
        state: ben_answer.state.clone().into(),
        viewer: Some(1),
        credential: ana_cred.credential.clone(),
        include_hand_events: false,
    };
    let refused = client
        .score(score)
        .await
        .expect_err("Ana's credential for Ben's seat");
    assert_eq!(reason(&refused), "CREDENTIAL_INVALID");
    rematch_creds.0[1] = ben_cred.credential.clone();
    let seen = common::view_for(&mut client, &ben_answer.state, 1, &rematch_creds).await;
    assert_eq!(seen.state_id, dealt_view.state_id);

    // A device that opens a stream on the finished match later is told too.
    let mut late = watch(&mut client, &last, 1, &creds, &over.state_id).await;
    match next_news(&mut late).await {
        Kind::Rematch(offer) => assert_eq!((offer.match_id, offer.seat), (ana_view.match_id, 0)),
        other => panic!("not the offer: {other:?}"),
    }
    // One NewGame and one rematch made, however many asked for it.
    let (_, _, text) = server.scrape("/metrics").await;
    let line = "allfives_games_created_total 2";
    assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
}

#[tokio::test]
async fn a_rematch_offer_reaches_a_device_on_another_replica_through_redis() {
    let redis = common::redis::Redis::standalone();
    let (one, two) = common::replicas("redis", &redis.urls()).await;
    let (mut on_one, mut on_two) = (one.client().await, two.client().await);
    let (_, last, creds) = finished(&mut on_one).await;
    let over = common::view_for(&mut on_two, &last, 1, &creds).await;
    let mut ben = watch(&mut on_two, &last, 1, &creds, &over.state_id).await;
    let ana = on_one
        .rematch(ask(&last, 0, &creds.of(0)))
        .await
        .expect("Rematch")
        .into_inner();
    let ana_view = ana.view.expect("view");
    match next_news(&mut ben).await {
        Kind::Rematch(offer) => {
            assert_eq!((offer.match_id, offer.seat), (ana_view.match_id.clone(), 0))
        }
        other => panic!("not the offer: {other:?}"),
    }
    // Ben accepts on his replica: the same match, his seat; the first ask stays the
    // offer's.
    let ben_answer = on_two
        .rematch(ask(&last, 1, &creds.of(1)))
        .await
        .expect("Ben's Rematch")
        .into_inner();
    let ben_view = ben_answer.view.expect("view");
    assert_eq!(
        (ben_view.match_id, ben_view.state_id),
        (ana_view.match_id.clone(), ana_view.state_id)
    );
    let mut late = watch(&mut on_one, &last, 0, &creds, &over.state_id).await;
    match next_news(&mut late).await {
        Kind::Rematch(offer) => assert_eq!((offer.match_id, offer.seat), (ana_view.match_id, 0)),
        other => panic!("not the offer: {other:?}"),
    }
}

#[tokio::test]
async fn without_a_store_every_seat_that_asks_makes_the_same_rematch() {
    let server = TestServer::start_with(ring(1, 1), &[]).await;
    let mut client = server.client().await;
    let (_, last, creds) = finished(&mut client).await;
    let answer = |r: tonic::Response<pb::RematchResponse>| r.into_inner().view.expect("view");
    let ana = answer(
        client
            .rematch(ask(&last, 0, &creds.of(0)))
            .await
            .expect("Ana's"),
    );
    let ben = answer(
        client
            .rematch(ask(&last, 1, &creds.of(1)))
            .await
            .expect("Ben's"),
    );
    assert_eq!(
        (&ana.match_id, &ana.state_id),
        (&ben.match_id, &ben.state_id)
    );
    assert_eq!((ana.viewer, ben.viewer), (Some(0), Some(1)));
    // And a second finished match has another rematch.
    let (_, other, other_creds) = finished(&mut client).await;
    let third = answer(
        client
            .rematch(ask(&other, 0, &other_creds.of(0)))
            .await
            .expect("another"),
    );
    assert_ne!(third.match_id, ana.match_id);
}
