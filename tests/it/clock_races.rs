//! Races of a late move against a claim of its timeout (issue 41: "With Redis: 1,000
//! races of a late move against a claim, exactly one applied each"), on two replicas
//! sharing a real Redis store (`common::redis`) and one key ring, each judging turn
//! clocks by its own manual clock (`ServerClock::manual`), the one behind the other by
//! less than the skew allowed (`--max-clock-skew-ms`, 1000 by default).
//!
//! Each race is set up so that both calls are legal where they are sent: the seat on
//! turn's own move goes to replica A, whose clock reads a time before the seat's
//! deadline plus the lag grace (A takes the move in time, and would refuse the claim
//! TIMEOUT_NOT_DUE), and another seat's ClaimTimeout goes to replica B, whose clock
//! reads a time from the deadline plus the grace on (B takes the timeout, and would
//! refuse the move TURN_TIMED_OUT); both are checked before each race. Neither
//! replica sees the other's call: each opens the same token, judges it by its own
//! clock and makes a state of its own, and only the store's compare-and-set decides.
//! So the one refusal acceptable is the store's: ABORTED STATE_STALE naming the
//! winner's state. Nothing is decided by sleeping: the clocks are set by the test and
//! stay put during a race, and which call reaches the store first is the only thing
//! left to chance (which future is polled first alternates, so each wins some).
//!
//! After every race the store's head is read from Redis (it is the winner's state,
//! made from the raced token), the loser's call sent again is still refused (it was
//! never applied, and is not later), the head's token opens on the other replica as
//! the winner's state, and the next race starts from the winner's token (which the
//! store would refuse if its head were anything else).

use crate::common;

use allfives::proto::v1 as pb;
use allfives::server_clock::ServerClock;
use common::{Client, Creds, reason};
use tonic::Code;
use tonic_types::StatusExt;

/// Races run.
const RACES: usize = 1_000;

/// A whole second: the first deal's time.
const T0: u64 = 1_900_000_000_000;

/// The lag grace the replicas run with (`--clock-lag-grace-ms`'s default).
const GRACE_MS: u64 = 2_000;

/// The skew the replicas allow (`--max-clock-skew-ms`'s default): how far A's clock
/// may be behind B's.
const SKEW_MS: u64 = 1_000;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `latest_state_id` a STATE_STALE refusal names.
fn latest(status: &tonic::Status) -> String {
    status
        .get_error_details()
        .error_info()
        .and_then(|info| info.metadata.get("latest_state_id").cloned())
        .unwrap_or_default()
}

/// Rules of match `n`: 2, 3 or 4 players, a clock of 20 s a move with a bank and an
/// increment (so deadlines move around), and a bot that plays each timed-out turn but
/// never holds the seat (every seat stays its player's, so every turn can be raced).
fn rules(n: u64) -> pb::Rules {
    pb::Rules {
        players: 2 + (n % 3) as u32,
        clock: Some(pb::TurnClock {
            move_seconds: 20,
            bank_seconds: Some(30),
            increment_seconds: 3,
        }),
        absence: Some(pb::Absence {
            rule: pb::AbsenceRule::Bot as i32,
            bot: pb::BotLevel::Medium as i32,
            bot_takes_seat_after: Some(0),
        }),
        ..Default::default()
    }
}

/// The seat on turn's own move from `token`: its first legal move, or its draw.
enum Late {
    Play(pb::PlayRequest),
    Draw(pb::DrawRequest),
}

impl Late {
    fn of(token: &[u8], view: &pb::GameView, creds: &Creds) -> Late {
        let seat = view.turn.expect("a seat on turn");
        assert_eq!(view.viewer, Some(seat), "the mover's view");
        match view.legal_moves.first() {
            Some(m) => Late::Play(pb::PlayRequest {
                state: token.to_vec().into(),
                seat,
                tile: m.tile,
                end: m.end,
                viewer: Some(seat),
                credential: creds.of(seat),
            }),
            None => {
                assert!(view.must_draw, "no legal move and no draw: {view:?}");
                Late::Draw(pb::DrawRequest {
                    state: token.to_vec().into(),
                    seat,
                    viewer: Some(seat),
                    credential: creds.of(seat),
                })
            }
        }
    }

    /// Sends it: the new token and the mover's view.
    async fn send(&self, client: &mut Client) -> Result<(Vec<u8>, pb::GameView), tonic::Status> {
        match self {
            Late::Play(req) => client.play(req.clone()).await.map(|r| {
                let r = r.into_inner();
                (r.state, r.view.expect("view"))
            }),
            Late::Draw(req) => client.draw(req.clone()).await.map(|r| {
                let r = r.into_inner();
                (r.state, r.view.expect("view"))
            }),
        }
    }
}

/// The claim of the seat on turn's timeout by `seat`, from `token`.
fn claim(token: &[u8], seat: u32, creds: &Creds) -> pb::ClaimTimeoutRequest {
    pb::ClaimTimeoutRequest {
        state: token.to_vec(),
        seat,
        credential: creds.of(seat),
    }
}

async fn send_claim(
    client: &mut Client,
    req: &pb::ClaimTimeoutRequest,
) -> Result<(Vec<u8>, pb::GameView, Vec<pb::Event>), tonic::Status> {
    client.claim_timeout(req.clone()).await.map(|r| {
        let r = r.into_inner();
        (r.state, r.view.expect("view"), r.events)
    })
}

/// A store client of its own, to read the heads the replicas wrote.
async fn store_of(redis: &common::redis::Redis) -> allfives::store::MatchStore {
    let urls: Vec<String> = redis.urls().split(',').map(String::from).collect();
    allfives::store::MatchStore::redis(
        &urls,
        false,
        std::time::Duration::from_secs(60),
        allfives::store::InviteRules {
            ttl: std::time::Duration::from_secs(60),
            misses_per_minute: 100,
            misses_per_client_per_minute: 100,
        },
    )
    .await
    .expect("connect to redis")
}

/// Which call of a race was applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Won {
    Move,
    Claim,
}

/// On two worker threads, so that the replicas' handlers and the store's client truly
/// run at once (on one thread, the future polled first would always win). Seen to fail
/// with the compare-and-set taken out of the store's script (`store::redis::ADVANCE`
/// without its `stale` answer): "race 1: not exactly one applied: move Ok([..]) / claim
/// Ok([..])".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_a_late_move_and_a_claim_of_its_timeout_raced_on_two_replicas_exactly_one_is_applied() {
    let _heavy = common::heavy().await;
    let redis = common::redis::Redis::standalone();
    // A judges the move, B the claim; A's clock is set behind B's in every race.
    let (clock_a, clock_b) = (ServerClock::manual(T0), ServerClock::manual(T0));
    let (one, two) = redis.clocked_replicas([&clock_a, &clock_b], &[]).await;
    let (mut a, mut b) = (one.client().await, two.client().await);
    let store = store_of(&redis).await;
    let set = |a_ms: u64, b_ms: u64| {
        clock_a.set(a_ms);
        clock_b.set(b_ms);
    };

    let mut raced = 0;
    let mut matches = 0u64;
    // Races the move won and the claim won; races whose seat had to draw.
    let mut won = [0usize; 2];
    let mut draws = 0;
    // The latest time B's clock was set to (A's is never later): neither goes back.
    let mut now = T0;
    while raced < RACES {
        set(now, now);
        let table = rules(matches);
        let players = table.players;
        let r = a
            .new_game(common::hot_seat(table, Some(matches)))
            .await
            .expect("NewGame")
            .into_inner();
        matches += 1;
        let creds = Creds::from_new_game(&r);
        let (mut token, _) = common::deal(&mut a, r.state).await;
        let mut view = common::view_for(&mut a, &token, 0, &creds).await;
        while raced < RACES {
            match pb::Phase::try_from(view.phase).expect("a phase") {
                pb::Phase::Over => break,
                pb::Phase::Dealing => {
                    now += 5_000;
                    set(now, now);
                    (token, view) = common::deal(&mut b, token).await;
                    continue;
                }
                pb::Phase::Playing | pb::Phase::Unspecified => {}
            }
            let turn = view.turn.expect("a seat on turn");
            let claimer = (turn + 1) % players;
            let mover_view = common::view_for(&mut a, &token, turn, &creds).await;
            let clock = mover_view.clock.as_ref().expect("a clocked match's clocks");
            let claimable = clock.claimable_at_ms.expect("a human on turn");
            assert_eq!(
                claimable,
                clock.turn_deadline_ms.expect("a deadline") + GRACE_MS
            );
            // B at the deadline plus the grace or up to `gap - 1` ms past it; A `gap`
            // ms behind B (1 to 1000: within the skew allowed), so before it.
            let gap = 1 + (raced as u64 * 379) % SKEW_MS;
            let b_ms = claimable + (raced as u64 * 7_919) % gap;
            let a_ms = b_ms - gap;
            assert!(a_ms < claimable && b_ms >= claimable && b_ms - a_ms <= SKEW_MS);
            set(a_ms, b_ms);
            now = b_ms;
            let late = Late::of(&token, &mover_view, &creds);
            draws += usize::from(matches!(late, Late::Draw(_)));
            let claiming = claim(&token, claimer, &creds);
            // Each call is legal only where it is sent: B refuses the move, A the claim
            // (refusals change nothing: they reach no store).
            let refused = late.send(&mut b).await.expect_err("timed out by B's clock");
            assert_eq!(reason(&refused), "TURN_TIMED_OUT", "{refused:?}");
            let refused = send_claim(&mut a, &claiming)
                .await
                .expect_err("not due by A's clock");
            assert_eq!(reason(&refused), "TIMEOUT_NOT_DUE", "{refused:?}");

            // The race: both sent together, each on its own connection to its own
            // replica; which future is polled first alternates.
            let (moved, claimed) = if raced % 2 == 0 {
                tokio::join!(late.send(&mut a), send_claim(&mut b, &claiming))
            } else {
                let (c, m) = tokio::join!(send_claim(&mut b, &claiming), late.send(&mut a));
                (m, c)
            };
            raced += 1;
            let (winner, next, next_view, lost) = match (moved, claimed) {
                (Ok((state, view)), Err(lost)) => {
                    assert_eq!(view.seats[turn as usize].timeouts_in_row, 0);
                    (Won::Move, state, view, lost)
                }
                (Err(lost), Ok((state, view, events))) => {
                    let Some(pb::event::Kind::SeatAbsent(absent)) =
                        events.first().and_then(|e| e.kind.as_ref())
                    else {
                        panic!("race {raced}: a claim taken without its timeout: {events:?}")
                    };
                    assert_eq!(absent.seat, turn);
                    assert_eq!(absent.reason, pb::AbsenceReason::TimedOut as i32);
                    assert!(view.seats[turn as usize].timeouts_in_row >= 1);
                    (Won::Claim, state, view, lost)
                }
                (moved, claimed) => panic!(
                    "race {raced}: not exactly one applied: move {:?} / claim {:?}",
                    moved.map(|(_, v)| v.state_id),
                    claimed.map(|(_, v, _)| v.state_id),
                ),
            };
            won[winner as usize] += 1;
            // The loser was refused by the store, naming the winner's state, and by
            // nothing else: each call alone was legal where it was sent.
            assert_eq!(lost.code(), Code::Aborted, "race {raced}: {lost:?}");
            assert_eq!(reason(&lost), "STATE_STALE", "race {raced}: {lost:?}");
            assert_eq!(latest(&lost), hex(&next_view.state_id), "race {raced}");
            assert_eq!(next_view.previous_state_id, view.state_id, "race {raced}");
            // The store holds the winner's state, made from the raced token.
            let id: allfives::state::MatchId = view.match_id.parse().expect("a match id");
            let head = store
                .latest(&id)
                .await
                .expect("the store answers")
                .expect("the match is held");
            assert_eq!(head.state.to_vec(), next_view.state_id, "race {raced}");
            assert_eq!(
                head.previous.map(|p| p.to_vec()),
                Some(view.state_id.clone())
            );
            assert_eq!(head.token, next, "race {raced}");
            // The loser sent again is still refused: it was not applied, and is not now.
            let again = match winner {
                Won::Move => send_claim(&mut b, &claiming).await.map(|_| ()),
                Won::Claim => late.send(&mut a).await.map(|_| ()),
            };
            let again = again.expect_err("the loser again");
            assert_eq!(reason(&again), "STATE_STALE", "race {raced}: {again:?}");
            assert_eq!(latest(&again), hex(&next_view.state_id));
            // The other replica reads the head's token as the winner's state; the match
            // goes on from it (the store refuses anything else).
            let seen = common::view_for(&mut b, &head.token, 0, &creds).await;
            assert_eq!(seen.state_id, next_view.state_id);
            (token, view) = (next, seen);
        }
    }
    eprintln!(
        "{raced} races of a late move against a claim, in {matches} matches ({draws} \
         of a draw): the move applied {}, the claim applied {}, never both or neither",
        won[Won::Move as usize],
        won[Won::Claim as usize],
    );
    assert_eq!(won[0] + won[1], RACES);
    assert!(won[0] > 0 && won[1] > 0, "{won:?}");
    // Both replicas stopped before the runtime is (its workers would otherwise cancel
    // their tasks mid-way).
    drop((a, b));
    for mut replica in [one, two] {
        replica.stop();
        (&mut replica.handle).await.expect("the replica stopped");
    }
}
