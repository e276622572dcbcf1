//! `Watch` against the real server: two devices play a whole match, each learning the
//! other's moves only from its stream (no token passed between them after the
//! invite), with the memory store on one server and with a Redis store shared by two
//! replicas (each device on its own); every change arrives once and in order (the
//! state ids one unbroken chain), no device sees the other's tiles, a device that
//! watches again with an older state id is brought up to date, the streams end at the
//! connection's age and the devices watch again missing nothing, and the bounds and
//! refusals hold.

use std::time::Duration;

use crate::common;

use allfives::proto::v1 as pb;
use allfives::proto::v1::watch_response::Kind;
use common::{Client, TestServer, reason, ring};
use tonic::Code;
use tonic::codec::Streaming;

/// How long a test waits for a stream's next message before it calls the stream hung:
/// a hang guard, never a measure (a message comes when the machine gets to it, and a
/// busy machine only takes longer).
const WAIT: Duration = Duration::from_secs(120);

/// The next message of a stream.
async fn next(stream: &mut Streaming<pb::WatchResponse>) -> Kind {
    let message = tokio::time::timeout(WAIT, stream.message())
        .await
        .expect("a message in time")
        .expect("the stream holds")
        .expect("the stream goes on");
    message.kind.expect("a kind")
}

/// The next change of a stream (heartbeats skipped).
async fn next_change(stream: &mut Streaming<pb::WatchResponse>) -> pb::WatchChange {
    loop {
        match next(stream).await {
            Kind::Change(change) => return change,
            Kind::Heartbeat(_) | Kind::Presence(_) | Kind::Rematch(_) => continue,
        }
    }
}

fn watch_as(state: &[u8], seat: Option<u32>, credential: &[u8], last: &[u8]) -> pb::WatchRequest {
    pb::WatchRequest {
        state: state.to_vec(),
        match_id: String::new(),
        viewer: seat,
        credential: credential.to_vec(),
        last_state_id: last.to_vec(),
        presence: false,
    }
}

/// A player on its own device: its seat and credential, its client (on its replica),
/// the client it watches through (the same, or another replica's) and its stream, and
/// the latest token and view its stream brought.
struct Device {
    seat: u32,
    credential: Vec<u8>,
    client: Client,
    watcher: Client,
    /// Where it watches once its watcher's replica is gone (drained), if anywhere.
    fallback: Option<Client>,
    stream: Streaming<pb::WatchResponse>,
    /// Streams it opened: one more each time a stream ended with its connection.
    watches: usize,
    token: Vec<u8>,
    view: pb::GameView,
    /// Every change its stream brought, in order.
    seen: Vec<pb::WatchChange>,
}

impl Device {
    /// Takes the next change from its stream, which must be `state_id`'s; a stream that
    /// ended (its connection aged) is watched again from the last state seen.
    async fn hears(&mut self, state_id: &[u8]) {
        let change = loop {
            let message = tokio::time::timeout(WAIT, self.stream.message())
                .await
                .expect("a message in time");
            match message.map(|m| m.and_then(|m| m.kind)) {
                Ok(Some(Kind::Change(change))) => break change,
                Ok(Some(Kind::Heartbeat(_) | Kind::Presence(_) | Kind::Rematch(_))) => continue,
                // Ended (OK) at the connection's age, or cut as it closed: again.
                Ok(None) | Err(_) => {
                    let req = watch_as(
                        &self.token,
                        Some(self.seat),
                        &self.credential,
                        &self.view.state_id,
                    );
                    self.stream = match self.watcher.watch(req.clone()).await {
                        Ok(stream) => stream.into_inner(),
                        // Its replica drained and is gone: watch on another.
                        Err(status) if status.code() == Code::Unavailable => {
                            self.watcher = self.fallback.take().expect("a replica to move to");
                            self.watcher
                                .watch(req)
                                .await
                                .expect("Watch on another replica")
                                .into_inner()
                        }
                        Err(status) => panic!("Watch again: {status:?}"),
                    };
                    self.watches += 1;
                }
            }
        };
        let view = change.view.clone().expect("view");
        assert_eq!(
            view.state_id, state_id,
            "seat {}: the change in order",
            self.seat
        );
        assert_eq!(
            view.previous_state_id, self.view.state_id,
            "seat {}: one unbroken chain",
            self.seat
        );
        assert!(!change.catch_up, "nothing missed");
        assert_eq!(view.viewer, Some(self.seat));
        for (seat, size) in view.hand_sizes.iter().enumerate() {
            if seat as u32 == self.seat {
                assert_eq!(view.hand.len() as u32, *size);
            }
        }
        // Another seat's drawn tile is never shown.
        for event in &change.events {
            if let Some(pb::event::Kind::TileDrawn(d)) = &event.kind {
                assert_eq!(d.tile.is_some(), d.seat == self.seat, "{event:?}");
            }
        }
        self.token = change.state.clone();
        self.view = view;
        self.seen.push(change);
    }

    /// Its move, if it is on turn: the first legal one, or a draw.
    async fn moves(&mut self) -> Option<pb::GameView> {
        if self.view.turn != Some(self.seat) {
            return None;
        }
        let (seat, credential) = (self.seat, self.credential.clone());
        if let Some(m) = self.view.legal_moves.first() {
            let req = pb::PlayRequest {
                state: self.token.clone().into(),
                seat,
                tile: m.tile,
                end: m.end,
                viewer: Some(seat),
                credential,
            };
            for attempt in 1.. {
                match self.client.play(req.clone()).await {
                    Ok(answer) => return answer.into_inner().view,
                    Err(status) if sent_as_it_closed(&status) && attempt < 5 => {}
                    Err(status) => panic!("Play: {status:?}"),
                }
            }
            None
        } else {
            let req = pb::DrawRequest {
                state: self.token.clone().into(),
                seat,
                viewer: Some(seat),
                credential,
            };
            for attempt in 1.. {
                match self.client.draw(req.clone()).await {
                    Ok(answer) => return answer.into_inner().view,
                    Err(status) if sent_as_it_closed(&status) && attempt < 5 => {}
                    Err(status) => panic!("Draw: {status:?}"),
                }
            }
            None
        }
    }
}

/// A call sent as its connection closed (the replica's connections are aged every
/// second): it failed before reaching the service, CANCELLED or UNAVAILABLE, and is
/// made again, as docs/clients.md tells a client to (a move the store recorded all the
/// same is answered again). Under load a move meets a closing connection more often.
fn sent_as_it_closed(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        tonic::Code::Cancelled | tonic::Code::Unavailable
    )
}

/// Two devices, `a` (which makes the match, seat 0) and `b` (which gets the invite: the
/// new match's token, and claims seat 1), play a whole match, each calling on its
/// client and watching on its watcher (`clients`: a's, a's watcher, b's, b's watcher),
/// each learning every move from its own stream only, thinking `pause` before each
/// move, with `drain`'s replica stopped after that many moves and waited for until it
/// is gone (its drain over, every stream on it ended), and `fallbacks` where each
/// watches once its watcher's replica is gone. Answers how many
/// streams each opened, and whether `a` moved to its fallback.
async fn play_a_match(
    clients: [Client; 4],
    pause: Duration,
    fallbacks: [Option<Client>; 2],
    mut drain: Option<(usize, &mut TestServer)>,
) -> (usize, usize, bool) {
    let [mut a_client, a_watcher, mut b_client, b_watcher] = clients;
    let [a_fallback, b_fallback] = fallbacks;
    let new = a_client
        .new_game(pb::NewGameRequest {
            rules: Some(pb::Rules {
                players: 2,
                target: 50,
                ..Default::default()
            }),
            seats: vec![common::CLAIMED, common::OPEN],
            viewer: Some(0),
            seed: None,
        })
        .await
        .expect("NewGame")
        .into_inner();
    let a_view = new.view.expect("view");
    let a_credential = new.credentials[0].credential.clone();
    let a_stream = a_watcher
        .clone()
        .watch(watch_as(
            &new.state,
            Some(0),
            &a_credential,
            &a_view.state_id,
        ))
        .await
        .expect("Watch")
        .into_inner();
    let mut a = Device {
        seat: 0,
        credential: a_credential,
        client: a_client,
        watcher: a_watcher,
        fallback: a_fallback,
        watches: 1,
        stream: a_stream,
        token: new.state.clone(),
        view: a_view,
        seen: Vec::new(),
    };
    assert!(matches!(next(&mut a.stream).await, Kind::Heartbeat(_)));

    // The invite is the new match's token: `b` watches it as a spectator holding a
    // token (so its changes carry tokens), and claims from the latest.
    let mut spectating = b_client
        .watch(watch_as(&new.state, None, &[], &[]))
        .await
        .expect("Watch")
        .into_inner();
    let first = next_change(&mut spectating).await;
    assert!(first.catch_up, "a device that saw nothing catches up");
    assert!(!first.state.is_empty(), "a token for who holds one");
    drop(spectating);
    let claimed = b_client
        .claim_seat(pb::ClaimSeatRequest {
            state: first.state,
            seat: 1,
            claim_key: (1..=16).collect(),
            display_name: String::new(),
            pass: String::new(),
        })
        .await
        .expect("ClaimSeat")
        .into_inner();
    let b_view = claimed.view.expect("view");
    a.hears(&b_view.state_id).await;
    let b_credential = claimed.credential.expect("credential").credential;
    let b_stream = b_watcher
        .clone()
        .watch(watch_as(
            &claimed.state,
            Some(1),
            &b_credential,
            &b_view.state_id,
        ))
        .await
        .expect("Watch")
        .into_inner();
    let mut b = Device {
        seat: 1,
        credential: b_credential,
        client: b_client,
        watcher: b_watcher,
        fallback: b_fallback,
        watches: 1,
        stream: b_stream,
        token: claimed.state,
        view: b_view,
        seen: Vec::new(),
    };
    assert!(matches!(next(&mut b.stream).await, Kind::Heartbeat(_)));

    let mut moves = 0;
    while a.view.winner_side.is_none() {
        tokio::time::sleep(pause).await;
        let made = if a.view.phase == pb::Phase::Dealing as i32 {
            let req = pb::DealRequest {
                state: a.token.clone().into(),
                viewer: Some(0),
                credential: a.credential.clone(),
            };
            a.client.deal(req).await.expect("Deal").into_inner().view
        } else if let Some(view) = a.moves().await {
            Some(view)
        } else {
            b.moves().await
        };
        let id = made.expect("a view").state_id;
        moves += 1;
        if let Some((_, replica)) = drain.take_if(|(after, _)| *after == moves) {
            // Gone before the next move, however fast the match goes: the devices'
            // next changes can only come through another replica.
            replica.stop();
            (&mut replica.handle).await.expect("the replica drained");
        }
        a.hears(&id).await;
        b.hears(&id).await;
        assert!(moves < 2_000, "a match of 50 points ends");
    }
    assert_eq!(
        a.seen.len(),
        moves + 1,
        "every move and the claim, once each"
    );
    assert_eq!(a.view.state_id, b.view.state_id);
    assert_eq!(
        a.seen.len(),
        b.seen.len() + 1,
        "b heard all but its own claim"
    );
    (a.watches, b.watches, a.fallback.is_none())
}

#[tokio::test]
async fn two_devices_play_a_match_through_the_memory_store() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let client = server.client().await;
    let other = server.client().await;
    play_a_match(
        [client.clone(), client, other.clone(), other],
        Duration::ZERO,
        [None, None],
        None,
    )
    .await;
}

/// A replica on the Redis store at `urls`, its connections aged every second: every
/// stream ends with its connection, and is watched again from the last state seen.
async fn aged_replica(urls: &str) -> TestServer {
    let args = [
        "--match-store",
        "redis",
        "--match-store-url",
        urls,
        "--max-connection-age-secs",
        "1",
    ];
    TestServer::start_with(ring(1, 1), &args).await
}

#[tokio::test]
async fn two_devices_on_two_replicas_play_a_match_through_redis() {
    let redis = common::redis::Redis::standalone();
    let urls = redis.urls();
    let one = aged_replica(&urls).await;
    let two = aged_replica(&urls).await;
    // Each device calls on one replica and watches on the other.
    let clients = [
        one.client().await,
        two.client().await,
        two.client().await,
        one.client().await,
    ];
    let (a, b, _) = play_a_match(clients, Duration::from_millis(60), [None, None], None).await;
    assert!(
        a > 0 && b > 0,
        "streams watched again as their connections aged: {a}, {b}"
    );
}

/// Three replicas over one Redis store, connections aged every second: device `a`
/// calls on the first and watches on the second, `b` calls on the third and watches on
/// the first; ten moves in, the second drains and is gone. `a`'s stream ends with the
/// drain, and `a` watches on the third from its last state id: every change still
/// arrives once and in order, to the match's end.
#[tokio::test]
async fn a_match_goes_on_through_a_replica_s_drain() {
    let redis = common::redis::Redis::standalone();
    let urls = redis.urls();
    let one = aged_replica(&urls).await;
    let mut two = aged_replica(&urls).await;
    let three = aged_replica(&urls).await;
    let clients = [
        one.client().await,
        two.client().await,
        three.client().await,
        one.client().await,
    ];
    let (a, _, moved) = play_a_match(
        clients,
        Duration::from_millis(20),
        [Some(three.client().await), None],
        Some((10, &mut two)),
    )
    .await;
    assert!(two.handle.is_finished(), "the match outlasted ten moves");
    assert!(
        a > 1 && moved,
        "a watched on the third replica after the drain"
    );
}

/// A hot-seat match on `client` (both credentials held), dealt: its token, the view
/// of seat 0 and the credentials.
async fn hot_seat_match(client: &mut Client) -> (Vec<u8>, pb::GameView, common::Creds) {
    let new = client
        .new_game(common::hot_seat(pb::Rules::default(), None))
        .await
        .expect("NewGame")
        .into_inner();
    let creds = common::Creds::from_new_game(&new);
    let dealt = client
        .deal(pb::DealRequest {
            state: new.state.into(),
            viewer: Some(0),
            credential: creds.of(0),
        })
        .await
        .expect("Deal")
        .into_inner();
    (dealt.state, dealt.view.expect("view"), creds)
}

/// The seat on turn's first move from `token`: the new token and its state id.
async fn a_move(client: &mut Client, token: &[u8], creds: &common::Creds) -> (Vec<u8>, Vec<u8>) {
    let view = common::view_for(client, token, 0, creds).await;
    let seat = view.turn.expect("a seat on turn");
    let view = common::view_for(client, token, seat, creds).await;
    let answer = match view.legal_moves.first() {
        Some(m) => {
            let req = pb::PlayRequest {
                state: token.to_vec().into(),
                seat,
                tile: m.tile,
                end: m.end,
                viewer: Some(seat),
                credential: creds.of(seat),
            };
            let a = client.play(req).await.expect("Play").into_inner();
            (a.state, a.view)
        }
        None => {
            let req = pb::DrawRequest {
                state: token.to_vec().into(),
                seat,
                viewer: Some(seat),
                credential: creds.of(seat),
            };
            let a = client.draw(req).await.expect("Draw").into_inner();
            (a.state, a.view)
        }
    };
    (answer.0, answer.1.expect("view").state_id)
}

#[tokio::test]
async fn a_device_that_watches_again_is_brought_up_to_date() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let mut client = server.client().await;
    let (dealt, view, creds) = hot_seat_match(&mut client).await;
    let mut ids = vec![view.state_id.clone()];
    let mut token = dealt.clone();
    for _ in 0..4 {
        let (next, id) = a_move(&mut client, &token, &creds).await;
        token = next;
        ids.push(id);
    }
    let watch = |last: &[u8]| watch_as(&dealt, Some(1), &creds.of(1), last);
    // Seen the latest: a heartbeat says the stream is up.
    let mut stream = client
        .watch(watch(&ids[4]))
        .await
        .expect("Watch")
        .into_inner();
    assert!(matches!(next(&mut stream).await, Kind::Heartbeat(_)));
    // Seen the one before: exactly the last move, with its events.
    let mut stream = client
        .watch(watch(&ids[3]))
        .await
        .expect("Watch")
        .into_inner();
    let change = next_change(&mut stream).await;
    assert!(!change.catch_up);
    assert_eq!(change.view.as_ref().expect("view").state_id, ids[4]);
    assert_eq!(change.events.len(), 1, "{:?}", change.events);
    // Seen an older one: caught up, the hand's events from its deal.
    let mut stream = client
        .watch(watch(&ids[1]))
        .await
        .expect("Watch")
        .into_inner();
    let change = next_change(&mut stream).await;
    assert!(change.catch_up);
    assert_eq!(change.view.as_ref().expect("view").state_id, ids[4]);
    assert!(matches!(
        change.events.first().and_then(|e| e.kind.as_ref()),
        Some(pb::event::Kind::Dealt(_))
    ));
    assert_eq!(change.events.len(), 5, "the deal and four moves");
    // And it goes on: the next move arrives as a change.
    let (_, id) = a_move(&mut client, &token, &creds).await;
    let change = next_change(&mut stream).await;
    assert!(!change.catch_up);
    assert_eq!(change.view.expect("view").state_id, id);
}

#[tokio::test]
async fn a_spectator_by_match_id_sees_no_hand_and_gets_no_token() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let mut client = server.client().await;
    let (dealt, view, creds) = hot_seat_match(&mut client).await;
    let req = pb::WatchRequest {
        match_id: view.match_id.clone(),
        ..Default::default()
    };
    let mut stream = client.watch(req).await.expect("Watch").into_inner();
    let change = next_change(&mut stream).await;
    assert!(
        change.state.is_empty(),
        "no token for who named the match by id"
    );
    let seen = change.view.expect("view");
    assert!(seen.hand.is_empty() && seen.viewer.is_none());
    let (_, id) = a_move(&mut client, &dealt, &creds).await;
    let change = next_change(&mut stream).await;
    assert!(change.state.is_empty());
    let seen = change.view.expect("view");
    assert_eq!(seen.state_id, id);
    assert!(seen.hand.is_empty());
    for event in &change.events {
        if let Some(pb::event::Kind::TileDrawn(d)) = &event.kind {
            assert!(d.tile.is_none(), "{event:?}");
        }
    }
}

#[tokio::test]
async fn a_watch_that_does_not_hold_is_refused() {
    let stateless = TestServer::start_with(ring(1, 1), &[]).await;
    let mut client = stateless.client().await;
    let (dealt, _, creds) = hot_seat_match(&mut client).await;
    let refused = client
        .watch(watch_as(&dealt, Some(0), &creds.of(0), &[]))
        .await
        .expect_err("no store");
    assert_eq!(reason(&refused), "STORE_REQUIRED");

    let server = TestServer::start_with(
        ring(1, 1),
        &[
            "--match-store",
            "memory",
            "--max-watch-streams-per-connection",
            "2",
        ],
    )
    .await;
    let mut client = server.client().await;
    let (dealt, view, creds) = hot_seat_match(&mut client).await;
    // Another seat's credential: refused as every call refuses it.
    let refused = client
        .watch(watch_as(&dealt, Some(1), &creds.of(0), &[]))
        .await
        .expect_err("not its credential");
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    // A match id that is not one, a state id that is not one.
    let bad = pb::WatchRequest {
        match_id: "xyz".into(),
        ..Default::default()
    };
    let refused = client.watch(bad).await.expect_err("not a match id");
    assert_eq!(common::bad_fields(&refused), vec!["match_id".to_string()]);
    let refused = client
        .watch(watch_as(&dealt, None, &[], &[1, 2, 3]))
        .await
        .expect_err("not a state id");
    assert_eq!(
        common::bad_fields(&refused),
        vec!["last_state_id".to_string()]
    );
    // A match the store does not hold.
    let unknown = pb::WatchRequest {
        match_id: "00".repeat(16),
        ..Default::default()
    };
    let refused = client.watch(unknown).await.expect_err("not held");
    assert_eq!(reason(&refused), "MATCH_FORGOTTEN");
    // Two streams on one connection, then a third refused; another connection is
    // served.
    let spectate = || watch_as(&dealt, None, &[], &view.state_id);
    let _one = client.watch(spectate()).await.expect("one");
    let _two = client.watch(spectate()).await.expect("two");
    let refused = client.watch(spectate()).await.expect_err("a third");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert_eq!(reason(&refused), "TOO_MANY_WATCHES");
    let mut other = server.client().await;
    let _three = other.watch(spectate()).await.expect("another connection");
    // The pod's gauge counts them.
    let (_, _, text) = server.scrape("/metrics").await;
    for line in [
        r#"allfives_watch_streams{state="open"} 3"#,
        r#"allfives_watch_streams{state="limit"} 1000"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
    }
}

#[tokio::test]
async fn a_quiet_stream_beats_and_ends_when_its_connection_ages() {
    let server = TestServer::start_with(
        ring(1, 1),
        &[
            "--match-store",
            "memory",
            "--watch-heartbeat-secs",
            "1",
            "--max-connection-age-secs",
            "3",
        ],
    )
    .await;
    let mut client = server.client().await;
    let (dealt, view, creds) = hot_seat_match(&mut client).await;
    let mut stream = client
        .watch(watch_as(&dealt, Some(0), &creds.of(0), &view.state_id))
        .await
        .expect("Watch")
        .into_inner();
    // The first message (the head seen already), then the first beat: each says the
    // server's period, so a client knows how long a silence means a lost stream.
    for _ in 0..2 {
        match next(&mut stream).await {
            Kind::Heartbeat(beat) => assert_eq!(beat.interval_ms, 1_000),
            other => panic!("not a heartbeat: {other:?}"),
        }
    }
    // At the connection's age (3 s ± 10%) the stream ends, with OK (waited for as a
    // decision: the timeout only guards against a hang).
    let ended = until_it_ends(&mut stream, "the stream ends at the connection's age").await;
    assert!(matches!(ended, Ok(None)), "{ended:?}");
}

#[tokio::test]
async fn two_devices_on_two_replicas_play_a_match_through_a_redis_cluster() {
    let redis = common::redis::Redis::cluster();
    let (one, two) = common::replicas("redis-cluster", &redis.urls()).await;
    for _ in 0..3 {
        // Several matches, so that their channels fall on more than one master.
        let clients = [
            one.client().await,
            two.client().await,
            two.client().await,
            one.client().await,
        ];
        play_a_match(clients, Duration::ZERO, [None, None], None).await;
    }
}

/// The attack of the review: a client holding a Watch stream on every connection the
/// server takes must not keep a new client out. At the connection cap, a connection
/// whose only calls are streams is evicted (its streams end with OK, to be watched
/// again), as an idle one is.
#[tokio::test]
async fn streams_on_every_connection_do_not_keep_a_new_client_out() {
    let server = TestServer::start_with(
        ring(1, 1),
        &["--match-store", "memory", "--max-connections", "4"],
    )
    .await;
    let mut first = server.client().await;
    let (dealt, view, _) = hot_seat_match(&mut first).await;
    drop(first);
    let mut streams = Vec::new();
    for _ in 0..4 {
        let mut client = server.client().await;
        let mut stream = client
            .watch(watch_as(&dealt, None, &[], &view.state_id))
            .await
            .expect("Watch")
            .into_inner();
        assert!(matches!(next(&mut stream).await, Kind::Heartbeat(_)));
        streams.push((client, stream));
    }
    let started = std::time::Instant::now();
    let mut newcomer = server.client().await;
    newcomer
        .new_game(pb::NewGameRequest::default())
        .await
        .expect("the newcomer is served");
    println!("a newcomer at the cap served in {:?}", started.elapsed());
    // One of the streams was ended (OK) to make room: looked for round after round, so
    // a slow machine only takes more rounds (the bound guards against a hang).
    let mut ended = 0;
    let looking = std::time::Instant::now();
    while ended == 0 {
        // A hang guard, not a measure: a slow machine only takes more rounds.
        assert!(
            looking.elapsed() < Duration::from_secs(600),
            "no stream was ended to make room"
        );
        for (_, stream) in &mut streams {
            if let Ok(Ok(None)) =
                tokio::time::timeout(Duration::from_millis(500), stream.message()).await
            {
                ended += 1;
            }
        }
    }
}

/// How `stream` ends, its messages until then read and dropped: waited for as a
/// decision (the bound, `what` if passed, only guards against a hang).
async fn until_it_ends(
    stream: &mut Streaming<pb::WatchResponse>,
    what: &str,
) -> Result<Option<pb::WatchResponse>, tonic::Status> {
    tokio::time::timeout(Duration::from_secs(120), async {
        loop {
            match stream.message().await {
                Ok(Some(_)) => continue,
                other => return other,
            }
        }
    })
    .await
    .expect(what)
}

/// `req` as if a trusted gateway forwarded it from `address` (the test servers below
/// trust `x-forwarded-for`): one client per address.
fn from<T>(address: &str, req: T) -> tonic::Request<T> {
    let mut req = tonic::Request::new(req);
    req.metadata_mut()
        .insert("x-forwarded-for", address.parse().expect("an address"));
    req
}

/// A server with a memory store that trusts `x-forwarded-for` (as behind a gateway),
/// with `flags` besides.
async fn behind_a_gateway(flags: &[&str]) -> TestServer {
    let mut all = vec![
        "--match-store",
        "memory",
        "--trusted-client-header",
        "x-forwarded-for",
    ];
    all.extend_from_slice(flags);
    TestServer::start_with(ring(1, 1), &all).await
}

/// Whether the server's metrics hold `line`.
async fn metric(server: &TestServer, line: &str) -> bool {
    let (_, _, text) = server.scrape("/metrics").await;
    text.lines().any(|l| l == line)
}

/// Issue 40's first attack: anyone who knows a match's id opens 32 spectator streams
/// (from many addresses, so no per-client bound applies); the match's players, with
/// their credentials, are still answered: spectators never take a seat's places. Every
/// move is rendered for each watcher, so a match's spectators on a replica are bounded
/// (24), and another match is watched still. Fails with the seats' places taken out
/// (every watcher counted alike up to the match's 32, as before issue 40).
#[tokio::test]
async fn spectators_of_a_match_never_keep_its_players_out() {
    let server = behind_a_gateway(&[]).await;
    let mut client = server.client().await;
    let (crowded, view, creds) = hot_seat_match(&mut client).await;
    let (other, other_view, _) = hot_seat_match(&mut client).await;
    let mut spectators = Vec::new();
    let mut refused = 0;
    let mut connection = server.client().await;
    for i in 0..32 {
        if i % 8 == 0 {
            connection = server.client().await;
        }
        let address = format!("203.0.113.{i}");
        let req = from(&address, watch_as(&crowded, None, &[], &view.state_id));
        match connection.watch(req).await {
            Ok(stream) => spectators.push(stream),
            Err(status) => {
                assert_eq!(reason(&status), "TOO_MANY_WATCHES", "{status:?}");
                refused += 1;
            }
        }
    }
    assert_eq!((spectators.len(), refused), (24, 8));
    // Each seat's player is answered, from a device of its own.
    let mut seats = Vec::new();
    for seat in 0..view.seats.len() as u32 {
        let mut device = server.client().await;
        let req = watch_as(&crowded, Some(seat), &creds.of(seat), &view.state_id);
        let mut stream = device
            .watch(from(&format!("198.51.100.{seat}"), req))
            .await
            .expect("a seat's Watch is answered")
            .into_inner();
        assert!(matches!(next(&mut stream).await, Kind::Heartbeat(_)));
        seats.push((device, stream));
    }
    // Naming a seat with a credential that does not hold is refused as ever, and takes
    // no seat's place.
    let mut device = server.client().await;
    let forged = device
        .watch(watch_as(&crowded, Some(1), &creds.of(0), &view.state_id))
        .await
        .expect_err("not its credential");
    assert_eq!(forged.code(), Code::PermissionDenied);
    device
        .watch(from(
            "198.51.100.9",
            watch_as(&other, None, &[], &other_view.state_id),
        ))
        .await
        .expect("another match");
    assert!(
        metric(
            &server,
            r#"allfives_watch_refusals_total{bound="match_spectators"} 8"#
        )
        .await
    );
}

/// Issue 40's second attack: clients hold every stream the replica takes. One client
/// is bounded (16 here, 64 by default), however many connections it opens; at the
/// replica's bound a seat is still answered, in the place of a spectator of the client
/// holding the most (told TOO_MANY_WATCHES, so that it watches again with backoff),
/// and another spectator is refused. Fails with the seat's precedence taken out (the
/// seat refused).
#[tokio::test]
async fn one_client_cannot_take_a_replicas_streams() {
    let server = behind_a_gateway(&[
        "--max-watch-streams",
        "40",
        "--max-watch-streams-per-client",
        "16",
    ])
    .await;
    let mut client = server.client().await;
    let mut matches = Vec::new();
    for _ in 0..3 {
        matches.push(hot_seat_match(&mut client).await);
    }
    // One client (one address) over as many connections as it likes: 16 streams.
    let mut held = Vec::new();
    let mut refused = None;
    for i in 0..24 {
        let mut connection = server.client().await;
        let (state, view, _) = &matches[i % 2];
        match connection
            .watch(from(
                "203.0.113.1",
                watch_as(state, None, &[], &view.state_id),
            ))
            .await
        {
            Ok(stream) => held.push((connection, stream.into_inner())),
            Err(status) => refused = Some(status),
        }
    }
    assert_eq!(held.len(), 16);
    let status = refused.expect("past the client's bound");
    assert_eq!(reason(&status), "TOO_MANY_WATCHES");
    assert!(
        metric(
            &server,
            r#"allfives_watch_refusals_total{bound="client"} 8"#
        )
        .await
    );
    // Spectators from as many addresses fill the replica.
    let mut others = Vec::new();
    for i in 0..24 {
        let mut connection = server.client().await;
        let (state, view, _) = &matches[i % 2];
        let address = format!("192.0.2.{i}");
        let req = from(&address, watch_as(state, None, &[], &view.state_id));
        others.push((
            connection.watch(req).await.expect("a spectator"),
            connection,
        ));
    }
    assert!(metric(&server, r#"allfives_watch_streams{state="open"} 40"#).await);
    let mut late = server.client().await;
    let (state, view, creds) = &matches[2];
    let refused = late
        .watch(from(
            "198.51.100.9",
            watch_as(state, None, &[], &view.state_id),
        ))
        .await
        .expect_err("a spectator at the replica's bound");
    assert_eq!(reason(&refused), "TOO_MANY_WATCHES");
    // A seat is answered: the oldest stream of the client holding the most made room.
    let mut player = server.client().await;
    let mut stream = player
        .watch(from(
            "198.51.100.7",
            watch_as(state, Some(0), &creds.of(0), &view.state_id),
        ))
        .await
        .expect("a seat's Watch at the replica's bound")
        .into_inner();
    assert!(matches!(next(&mut stream).await, Kind::Heartbeat(_)));
    let (_, oldest) = &mut held[0];
    let ended = until_it_ends(oldest, "the oldest of the biggest client's streams ends").await;
    let status = ended.expect_err("told why");
    assert_eq!(reason(&status), "TOO_MANY_WATCHES");
    assert!(
        metric(
            &server,
            r#"allfives_watch_streams_ended_total{why="made_room"} 1"#
        )
        .await
    );
}

/// A client that never reads: a raw HTTP/2 client gives the server no window, so not a
/// byte of its streams can be sent. Its streams end by themselves (their messages
/// unread for two heartbeats, once their buffers are full), counted, and their places
/// are free again. Fails with the stall check taken out.
#[tokio::test]
async fn streams_whose_client_never_reads_end() {
    let server =
        behind_a_gateway(&["--max-watch-streams", "8", "--watch-heartbeat-secs", "1"]).await;
    let mut client = server.client().await;
    let (state, view, _) = hot_seat_match(&mut client).await;
    let watch = watch_as(&state, None, &[], &view.state_id);
    let mut stalled = Vec::new();
    for i in 0..8 {
        stalled.push(shut_window_watch(server.addr, &format!("192.0.2.{i}"), &watch).await);
    }
    assert!(metric(&server, r#"allfives_watch_streams{state="open"} 8"#).await);
    // Waited for as a decision (every stream counted), however long the machine takes.
    let ended = r#"allfives_watch_streams_ended_total{why="stalled"} 8"#;
    let mut polls = 0;
    while !metric(&server, ended).await {
        polls += 1;
        assert!(polls < 1_200, "the stalled streams never ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(metric(&server, r#"allfives_watch_streams{state="open"} 0"#).await);
    client
        .watch(from("198.51.100.8", watch.clone()))
        .await
        .expect("room again");
    drop(stalled);
}

/// A Watch call made over a raw HTTP/2 connection that gives the server no window to
/// send in (so every message waits for ever), from `address`; kept open while the
/// returned handles are.
async fn shut_window_watch(
    addr: std::net::SocketAddr,
    address: &str,
    watch: &pb::WatchRequest,
) -> impl Sized + use<> {
    shut_window_watches(addr, &[(address.to_string(), watch.clone())]).await
}

/// Watch calls made over one raw HTTP/2 connection that gives the server no window to
/// send in, each `(address, request)` from its address; kept open while the returned
/// handles are.
async fn shut_window_watches(
    addr: std::net::SocketAddr,
    calls: &[(String, pb::WatchRequest)],
) -> impl Sized + use<> {
    use prost::Message;
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (h2, connection) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, tonic::codegen::Bytes>(tcp)
        .await
        .expect("handshake");
    let connection = tokio::spawn(connection);
    let mut answers = Vec::new();
    for (address, watch) in calls {
        let mut h2 = h2.clone().ready().await.expect("ready");
        let request = tonic::codegen::http::Request::post(format!(
            "http://{addr}/allfives.v1.AllFivesService/Watch"
        ))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("x-forwarded-for", address.as_str())
        .body(())
        .expect("a request");
        let (answer, mut body) = h2.send_request(request, false).expect("sent");
        let message = watch.encode_to_vec();
        let mut framed = vec![0];
        framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
        framed.extend_from_slice(&message);
        body.send_data(framed.into(), true).expect("body");
        let answer = answer.await.expect("the answer's headers");
        assert_eq!(answer.status(), 200);
        let status = tonic::Status::from_header_map(answer.headers());
        assert!(status.is_none(), "refused: {status:?}");
        answers.push(answer);
    }
    (h2, answers, connection)
}

/// Issue 40's first two attacks at their own scale, on a server with its default
/// bounds (1,000 streams, 64 a client, 8 a connection): 976 streams that can never be
/// written (their clients' windows shut) from 16 addresses over 122 connections fill
/// the replica with 24 spectators of the players' match, 8 more spectators are
/// refused, and the match's player is answered (the oldest stream of a client holding
/// the most gives its place). Its heartbeat is long, so none of the 976 ends by itself
/// meanwhile, however slow the machine. Fails with the seat's precedence taken out.
#[tokio::test]
async fn a_seat_is_answered_while_spectators_and_a_thousand_stalled_streams_are_held() {
    let _heavy = common::heavy().await;
    let server = behind_a_gateway(&["--watch-heartbeat-secs", "600"]).await;
    let mut client = server.client().await;
    let mut matches = Vec::new();
    for _ in 0..41 {
        matches.push(hot_seat_match(&mut client).await);
    }
    let (target, view, creds) = hot_seat_match(&mut client).await;
    // Stream k: match k % 41, address k % 16: at most 24 on a match, 2 of an address
    // on a match, 61 of an address.
    let calls: Vec<(String, pb::WatchRequest)> = (0..976)
        .map(|k| {
            let (state, view, _) = &matches[k % 41];
            let address = format!("192.0.2.{}", k % 16);
            (address, watch_as(state, None, &[], &view.state_id))
        })
        .collect();
    let mut stalled = Vec::new();
    for eight in calls.chunks(8) {
        stalled.push(shut_window_watches(server.addr, eight).await);
    }
    let mut spectators = Vec::new();
    let mut refused = 0;
    for i in 0..32 {
        let mut connection = server.client().await;
        let req = from(
            &format!("203.0.113.{i}"),
            watch_as(&target, None, &[], &view.state_id),
        );
        match connection.watch(req).await {
            Ok(stream) => spectators.push((connection, stream)),
            Err(status) => {
                assert_eq!(reason(&status), "TOO_MANY_WATCHES", "{status:?}");
                refused += 1;
            }
        }
    }
    assert_eq!((spectators.len(), refused), (24, 8));
    assert!(metric(&server, r#"allfives_watch_streams{state="open"} 1000"#).await);
    let mut player = server.client().await;
    let mut stream = player
        .watch(from(
            "198.51.100.7",
            watch_as(&target, Some(0), &creds.of(0), &view.state_id),
        ))
        .await
        .expect("the player's Watch")
        .into_inner();
    assert!(matches!(next(&mut stream).await, Kind::Heartbeat(_)));
    assert!(
        metric(
            &server,
            r#"allfives_watch_streams_ended_total{why="made_room"} 1"#
        )
        .await
    );
    drop(stalled);
}

/// Issue 40's fourth: a request whose match id and token name different matches is
/// refused, naming `match_id` (it followed the token's match silently). A Watch opened
/// while the store is down: `match_store::a_store_that_went_away_answers_store_unavailable`.
#[tokio::test]
async fn watch_answers_its_documented_statuses() {
    let server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let mut client = server.client().await;
    let (one, _, _) = hot_seat_match(&mut client).await;
    let (two, two_view, _) = hot_seat_match(&mut client).await;
    let mismatched = pb::WatchRequest {
        match_id: two_view.match_id.clone(),
        ..watch_as(&one, None, &[], &[])
    };
    let refused = client
        .watch(mismatched)
        .await
        .expect_err("two matches named");
    assert_eq!(common::bad_fields(&refused), vec!["match_id".to_string()]);
    let same = pb::WatchRequest {
        match_id: two_view.match_id.clone(),
        ..watch_as(&two, None, &[], &two_view.state_id)
    };
    client
        .watch(same)
        .await
        .expect("the same match named twice");
}

/// Issue 40's fourth, as found: a replica whose connections age while its store is
/// down. A stream open when the store went ends with OK at its connection's age (watch
/// again, as documented), and every Watch made meanwhile, a seat's or a spectator's,
/// answers UNAVAILABLE STORE_UNAVAILABLE: not CANCELLED, not a hang to the request
/// timeout.
#[tokio::test]
async fn watch_on_an_ageing_replica_with_its_store_down_answers_as_documented() {
    let mut redis = common::redis::Redis::standalone();
    let server = aged_replica(&redis.urls()).await;
    let mut client = server.client().await;
    let (dealt, view, creds) = hot_seat_match(&mut client).await;
    let mut stream = client
        .watch(watch_as(&dealt, Some(0), &creds.of(0), &view.state_id))
        .await
        .expect("Watch")
        .into_inner();
    assert!(matches!(next(&mut stream).await, Kind::Heartbeat(_)));
    redis.stop();
    let ended = until_it_ends(&mut stream, "the stream ends at its connection's age").await;
    assert!(matches!(ended, Ok(None)), "{ended:?}");
    for i in 0..6 {
        let mut device = server.client().await;
        let seat = (i % 2 == 0).then_some(0);
        let credential = seat.map_or(Vec::new(), |s| creds.of(s));
        let refused = device
            .watch(watch_as(&dealt, seat, &credential, &view.state_id))
            .await
            .expect_err("no store to watch");
        assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
        assert_eq!(reason(&refused), "STORE_UNAVAILABLE");
        // Connections age meanwhile.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A server that drains ends its streams with OK at once (its connections begin to
/// close), rather than holding them to the drain's deadline: their clients watch again
/// elsewhere with their last state id.
#[tokio::test]
async fn a_stream_ends_cleanly_when_its_server_drains() {
    let mut server = TestServer::start_with(ring(1, 1), &["--match-store", "memory"]).await;
    let mut client = server.client().await;
    let (dealt, view, creds) = hot_seat_match(&mut client).await;
    let mut stream = client
        .watch(watch_as(&dealt, Some(0), &creds.of(0), &view.state_id))
        .await
        .expect("Watch")
        .into_inner();
    assert!(matches!(next(&mut stream).await, Kind::Heartbeat(_)));
    let started = std::time::Instant::now();
    server.stop();
    let ended = tokio::time::timeout(Duration::from_secs(120), stream.message())
        .await
        .expect("the stream ends with the drain");
    // Ended with OK: by the stream itself when the drain began. At the drain's deadline
    // the connection would be dropped instead, and the stream fail (not OK).
    assert!(matches!(ended, Ok(None)), "{ended:?}");
    println!("the stream ended {:?} into the drain", started.elapsed());
}
