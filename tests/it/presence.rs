//! Presence (issue 41, item 5): a Watch stream that asks (`WatchRequest.presence`) is
//! told which seats have a device watching the match, on any replica sharing the
//! store, and since when a seat has had none; the times are the server's clock, set
//! by the test (`ServerClock::manual`), so nothing here depends on the machine's speed:
//! every wait is for a message, with a hang guard.

use std::time::Duration;

use allfives::proto::v1 as pb;
use allfives::proto::v1::watch_response::Kind;
use allfives::server_clock::ServerClock;
use tonic::Streaming;

use crate::common::{self, Client, Creds, TestServer, ring};

/// A whole second.
const T0: u64 = 1_900_000_000_000;
/// The longest wait for a message: a hang guard, never a measure.
const HANG: Duration = Duration::from_secs(60);

fn watch_req(state: &[u8], seat: Option<u32>, creds: &Creds, presence: bool) -> pb::WatchRequest {
    pb::WatchRequest {
        state: state.to_vec(),
        viewer: seat,
        credential: creds.for_viewer(seat),
        presence,
        ..Default::default()
    }
}

/// The next presence a stream is told (changes and heartbeats skipped).
async fn next_presence(stream: &mut Streaming<pb::WatchResponse>) -> pb::Presence {
    loop {
        let message = tokio::time::timeout(HANG, stream.message())
            .await
            .expect("a message before the hang guard")
            .expect("the stream holds")
            .expect("the stream goes on");
        if let Some(Kind::Presence(presence)) = message.kind {
            return presence;
        }
    }
}

/// Each seat's (watching, gone since) as a presence tells it.
fn seats(presence: &pb::Presence) -> Vec<(bool, Option<u64>)> {
    presence
        .seats
        .iter()
        .map(|s| (s.watching, s.gone_since_ms))
        .collect()
}

/// Seat 0's device and a spectator asking for presence, on `seat_side` and
/// `spectator_side`: the spectator is told seat 0 watches, then, once its device's
/// stream ends at `T0 + 5 s` by the clocks, that it is gone since then.
async fn seat_comes_and_goes(
    seat_side: &mut Client,
    spectator_side: &mut Client,
    clocks: &[&ServerClock],
) {
    for clock in clocks {
        clock.set(T0);
    }
    let new = seat_side
        .new_game(common::hot_seat(pb::Rules::default(), Some(5)))
        .await
        .expect("NewGame")
        .into_inner();
    let creds = Creds::from_new_game(&new);
    let (state, _) = common::deal(seat_side, new.state).await;
    let mut spectator = spectator_side
        .watch(watch_req(&state, None, &creds, true))
        .await
        .expect("Watch")
        .into_inner();
    // Nobody watches yet; no seat was ever watched.
    let first = next_presence(&mut spectator).await;
    assert_eq!(first.now_ms, T0);
    assert_eq!(seats(&first), [(false, None), (false, None)]);
    // Seat 0's device watches (without asking for presence itself).
    let device = seat_side
        .watch(watch_req(&state, Some(0), &creds, false))
        .await
        .expect("Watch")
        .into_inner();
    let watching = next_presence(&mut spectator).await;
    assert_eq!(seats(&watching), [(true, None), (false, None)]);
    // Its stream ends at T0 + 5 s.
    for clock in clocks {
        clock.set(T0 + 5_000);
    }
    drop(device);
    let gone = next_presence(&mut spectator).await;
    assert_eq!(seats(&gone), [(false, Some(T0 + 5_000)), (false, None)]);
}

#[tokio::test]
async fn a_spectator_is_told_a_seat_watches_and_since_when_it_is_gone() {
    let clock = ServerClock::manual(T0);
    let (server, mut a) = crate::clocks::server(&clock, &["--match-store", "memory"]).await;
    let mut b = server.client().await;
    seat_comes_and_goes(&mut a, &mut b, &[&clock]).await;
}

/// With Redis, the seat's device on one replica and the spectator on another.
#[tokio::test]
async fn presence_crosses_replicas_sharing_a_redis_store() {
    let redis = common::redis::Redis::standalone();
    let (clock_a, clock_b) = (ServerClock::manual(T0), ServerClock::manual(T0));
    let (one, two) = redis.clocked_replicas([&clock_a, &clock_b], &[]).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    seat_comes_and_goes(&mut a, &mut b, &[&clock_a, &clock_b]).await;
}

/// With a Redis Cluster: the presence hash and the match's channel share its hash tag,
/// so one node holds both, whichever replica writes.
#[tokio::test]
async fn presence_crosses_replicas_sharing_a_redis_cluster() {
    let redis = common::redis::Redis::cluster();
    let (clock_a, clock_b) = (ServerClock::manual(T0), ServerClock::manual(T0));
    let (one, two) = redis.clocked_replicas([&clock_a, &clock_b], &[]).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    seat_comes_and_goes(&mut a, &mut b, &[&clock_a, &clock_b]).await;
}

/// A stream that does not ask is told nothing of it: its messages are changes and
/// heartbeats only, as before presence.
#[tokio::test]
async fn a_stream_that_does_not_ask_is_not_told() {
    let clock = ServerClock::manual(T0);
    let server = TestServer::start_clocked(
        ring(1, 1),
        clock.clone(),
        &[
            "--allow-client-seeds",
            "--match-store",
            "memory",
            "--watch-heartbeat-secs",
            "1",
        ],
    )
    .await;
    let mut client = server.client().await;
    let new = client
        .new_game(common::hot_seat(pb::Rules::default(), Some(6)))
        .await
        .expect("NewGame")
        .into_inner();
    let creds = Creds::from_new_game(&new);
    let (state, _) = common::deal(&mut client, new.state).await;
    let mut stream = client
        .watch(watch_req(&state, None, &creds, false))
        .await
        .expect("Watch")
        .into_inner();
    // A seat's device comes and goes meanwhile.
    let device = client
        .watch(watch_req(&state, Some(1), &creds, false))
        .await
        .expect("Watch")
        .into_inner();
    drop(device);
    // The first message, then heartbeats (one a second): never a presence.
    for _ in 0..3 {
        let message = tokio::time::timeout(HANG, stream.message())
            .await
            .expect("a message before the hang guard")
            .expect("the stream holds")
            .expect("the stream goes on");
        assert!(
            !matches!(message.kind, Some(Kind::Presence(_))),
            "{message:?}"
        );
    }
}

/// A seat watched on two replicas stays watched while one of them still serves a
/// stream of it, and is gone once both have ended, since the second's end.
#[tokio::test]
async fn a_seat_watched_on_two_replicas_is_gone_only_when_both_end() {
    let redis = common::redis::Redis::standalone();
    let (clock_a, clock_b) = (ServerClock::manual(T0), ServerClock::manual(T0));
    let (one, two) = redis.clocked_replicas([&clock_a, &clock_b], &[]).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    let new = a
        .new_game(common::hot_seat(pb::Rules::default(), Some(8)))
        .await
        .expect("NewGame")
        .into_inner();
    let creds = Creds::from_new_game(&new);
    let (state, _) = common::deal(&mut a, new.state).await;
    let mut spectator = b
        .watch(watch_req(&state, None, &creds, true))
        .await
        .expect("Watch")
        .into_inner();
    assert_eq!(
        seats(&next_presence(&mut spectator).await)[1],
        (false, None)
    );
    let on_a = a
        .watch(watch_req(&state, Some(1), &creds, false))
        .await
        .expect("Watch")
        .into_inner();
    assert_eq!(seats(&next_presence(&mut spectator).await)[1], (true, None));
    let on_b = b
        .watch(watch_req(&state, Some(1), &creds, false))
        .await
        .expect("Watch")
        .into_inner();
    clock_a.set(T0 + 3_000);
    clock_b.set(T0 + 3_000);
    drop(on_a);
    // The stream on B holds the seat: whatever is told meanwhile says it watches.
    clock_a.set(T0 + 7_000);
    clock_b.set(T0 + 7_000);
    drop(on_b);
    loop {
        let told = seats(&next_presence(&mut spectator).await)[1];
        if told == (true, None) {
            continue;
        }
        assert_eq!(told, (false, Some(T0 + 7_000)), "gone since the last end");
        break;
    }
}
