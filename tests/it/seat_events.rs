//! A seat's absence, a bot taking it and its player's return reach the match's other
//! devices on `Watch`, in their places among the change's events, as the call that
//! caused them answered them: through the memory store, and through Redis from another
//! replica. No action of the hand records them (replaying the hand does not tell them
//! again), so the store keeps the last change's beside its head
//! (`allfives::service::seat_events`). Time is the tests' own (`ServerClock::manual`).

use std::time::Duration;

use allfives::proto::v1 as pb;
use allfives::server_clock::ServerClock;
use pb::watch_response::Kind;
use tonic::codec::Streaming;

use crate::clocks::{T0, claim, clocked, dealt, kinds, server, twenty_thirty, until_turn_of};
use crate::common::{self, Client, Creds};

/// How long a test waits for a stream's next message: a guard against a hang only.
const HANG: Duration = Duration::from_secs(120);

/// The stream's change to the state `state_id` (the changes before it skipped).
async fn change_to(stream: &mut Streaming<pb::WatchResponse>, state_id: &[u8]) -> pb::WatchChange {
    loop {
        let message = tokio::time::timeout(HANG, stream.message())
            .await
            .expect("no hang")
            .expect("the stream holds")
            .expect("the stream goes on");
        if let Some(Kind::Change(change)) = message.kind
            && change.view.as_ref().is_some_and(|v| v.state_id == state_id)
        {
            return change;
        }
    }
}

/// Seat `seat`'s stream on `watcher`, from the state `state_id`.
async fn watching(
    watcher: &mut Client,
    state: &[u8],
    seat: u32,
    creds: &Creds,
    state_id: &[u8],
) -> Streaming<pb::WatchResponse> {
    watcher
        .watch(pb::WatchRequest {
            state: state.to_vec(),
            viewer: Some(seat),
            credential: creds.of(seat),
            last_state_id: state_id.to_vec(),
            ..Default::default()
        })
        .await
        .expect("Watch")
        .into_inner()
}

/// One seat leaves and comes back, then times out and the other claims it; every
/// change is watched by the other seat (on `watcher`) and must tell what the call that
/// made it answered, seat events and all, in the same order.
async fn the_other_seat_is_told(caller: &mut Client, watcher: &mut Client, clock: &ServerClock) {
    let (state, view, creds) = dealt(caller, clock, clocked(2, twenty_thirty(), None), 91).await;
    let gone = view.turn.expect("on turn");
    let other = 1 - gone;
    let mut stream = watching(watcher, &state, other, &creds, &view.state_id).await;

    clock.set(T0 + 3_000);
    let left = caller
        .leave(pb::LeaveRequest {
            state: state.clone(),
            seat: gone,
            credential: creds.of(gone),
        })
        .await
        .expect("Leave")
        .into_inner();
    let view = left.view.expect("view");
    let told = change_to(&mut stream, &view.state_id).await;
    assert_eq!(kinds(&told.events)[..2], ["absent", "bot took seat"]);
    assert_eq!(kinds(&told.events), kinds(&left.events));
    assert!(!told.catch_up);

    let back = caller
        .return_to_seat(pb::ReturnToSeatRequest {
            state: left.state,
            seat: gone,
            credential: creds.of(gone),
        })
        .await
        .expect("ReturnToSeat")
        .into_inner();
    let view = back.view.expect("view");
    let told = change_to(&mut stream, &view.state_id).await;
    assert_eq!(kinds(&told.events), ["returned"]);

    // The returned seat on turn again, and its time run out: the other claims it.
    let Some((state, view)) = until_turn_of(caller, back.state, view, gone, &creds).await else {
        panic!("the match ended before seat {gone} was on turn again");
    };
    let deadline = view
        .clock
        .and_then(|c| c.claimable_at_ms)
        .expect("a deadline");
    clock.set(deadline);
    let claimed = claim(caller, &state, other, &creds).await.expect("a claim");
    let view = claimed.view.expect("view");
    let told = change_to(&mut stream, &view.state_id).await;
    assert_eq!(kinds(&told.events)[..1], ["absent"]);
    assert_eq!(kinds(&told.events), kinds(&claimed.events));
    let Some(pb::event::Kind::SeatAbsent(absent)) = &told.events[0].kind else {
        unreachable!("checked above");
    };
    assert_eq!(
        (absent.seat, absent.reason),
        (gone, pb::AbsenceReason::TimedOut as i32)
    );
}

#[tokio::test]
async fn seat_events_reach_the_other_seats_stream_through_the_memory_store() {
    let clock = ServerClock::manual(T0);
    let (server, mut a) = server(&clock, &["--match-store", "memory"]).await;
    let mut b = server.client().await;
    the_other_seat_is_told(&mut a, &mut b, &clock).await;
}

/// With Redis: the calls on one replica, the stream on another (the head and its seat
/// events cross in the store's notice).
#[tokio::test]
async fn seat_events_cross_replicas_sharing_a_redis_store() {
    let redis = common::redis::Redis::standalone();
    let clock = ServerClock::manual(T0);
    let (one, two) = redis.clocked_replicas([&clock, &clock], &[]).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    the_other_seat_is_told(&mut a, &mut b, &clock).await;
}

/// A return to a match without a clock or an absence option makes a token of the
/// format before clocks, beside which the store keeps no seat events (the release
/// before reads those heads: docs/compatibility.md): its watchers are told the return
/// by the view's seats.
#[tokio::test]
async fn a_return_to_a_match_without_a_clock_is_told_by_the_view() {
    let clock = ServerClock::manual(T0);
    let (server, mut a) = server(&clock, &["--match-store", "memory"]).await;
    let mut b = server.client().await;
    let rules = pb::Rules {
        players: 2,
        ..Default::default()
    };
    let (state, view, creds) = dealt(&mut a, &clock, rules, 92).await;
    let mut stream = watching(&mut b, &state, 1, &creds, &view.state_id).await;
    let left = a
        .leave(pb::LeaveRequest {
            state,
            seat: 0,
            credential: creds.of(0),
        })
        .await
        .expect("Leave")
        .into_inner();
    let told = change_to(&mut stream, &left.view.expect("view").state_id).await;
    assert_eq!(kinds(&told.events)[..2], ["absent", "bot took seat"]);
    let back = a
        .return_to_seat(pb::ReturnToSeatRequest {
            state: left.state,
            seat: 0,
            credential: creds.of(0),
        })
        .await
        .expect("ReturnToSeat")
        .into_inner();
    assert_eq!(kinds(&back.events), ["returned"], "the caller is told");
    let told = change_to(&mut stream, &back.view.expect("view").state_id).await;
    assert!(told.events.is_empty(), "{:?}", kinds(&told.events));
    let seat = &told.view.expect("view").seats[0];
    assert_eq!(seat.kind, pb::SeatKind::Claimed as i32);
}
