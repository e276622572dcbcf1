//! Request messages through the service handlers in process, through the token cache
//! as the service runs: arbitrary protobuf bytes decoded as a NewGame, Deal, Play,
//! Draw, Score, Suggest, ClaimSeat, ClaimTimeout, Leave or ReturnToSeat request, on a server that takes client seeds or
//! not, with the `state` field often replaced by a real token (any point of a real
//! match: human seats, bots of each level, and before a first deal some seats open) and
//! the `credential` often by the named seat's real one, another seat's or a near miss.
//!
//! Never a panic; every refusal is a clean status with the code the API documents for
//! its reason (INVALID_ARGUMENT, FAILED_PRECONDITION, PERMISSION_DENIED, UNAVAILABLE
//! only for randomness), and its reason a name of the proto's ErrorReason. A token that
//! opens is never refused as a token. A request is accepted only if it carries the
//! credential of every seat it names (as `seat` or `viewer`), and refused
//! PERMISSION_DENIED only if it does not; a Score always answers a spectator, or a
//! seat whose credential it carries. A move accepted is always finished (the server's
//! bots' moves included), and leaves no bot on turn. Every token answered opens again
//! as a sound game, by the cipher and from the cache alike, and its view shows its
//! state id, the id of the state it was made from (none for NewGame) and its seats.
//! Deal, Play, Draw and ClaimTimeout keep the match and its secret, and its seats but
//! for a bot taking a timed-out seat; Leave and ReturnToSeat change the seat they name
//! alone; Deal never deals a
//! first hand with a seat open; NewGame takes a seed only when the server allows it,
//! makes the seats asked for and answers exactly the credentials of those it claimed;
//! a claim takes only an open seat before the first deal, and changes only that seat.
//! A suggestion (a play or a draw) is a move the service then accepts.
#![no_main]

use allfives::engine::suggest::Search;
use allfives::engine::{Phase, Why};
use allfives::proto::v1 as pb;
use allfives::service::convert::level_out;
use allfives::service::status::ApiError;
use allfives::service::steps::Policy;
use allfives::service::steps::Step;
use allfives::service::{moves, seats, steps, suggest};
use allfives::state::{self, Player, Record, StateId, TokenError};
use allfives_fuzz::{
    assert_seats_shown, assert_sound, byte, credential_for, holds, real_tokens, ring, take, tokens,
};
use libfuzzer_sys::fuzz_target;
use prost::Message;
use tonic::Code;

/// The time calls are judged at (no clock runs in these calls' matches).
const JUDGE: allfives::service::clocks::Judge = allfives::service::clocks::Judge {
    now_ms: 1_800_000_000_000,
    grace_ms: 2000,
    skew_ms: 1000,
    show_player_ids: false,
};

/// The real token the `u16` selects, or `None` for 0.
fn real(choice: u16) -> Option<Vec<u8>> {
    let tokens = real_tokens();
    (choice != 0).then(|| tokens[usize::from(choice - 1) % tokens.len()].clone())
}

/// The match a request's token holds, and its state id, if the token opens.
fn opened(token: &[u8]) -> Option<(Record, StateId)> {
    state::open(ring(), token).ok()
}

/// A match id as the views show it: lower-case hex.
fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// A token the service answered opens by the cipher as a sound game, whose view shows
/// its move counter, match id, state id, the id it was made from (`previous`) and its
/// seats; the token cache (which kept the game under that token, unless it is over)
/// opens the same game under the same id; it is kept again for a later call.
fn answered(token: &[u8], view: &pb::GameView, previous: Option<StateId>) -> Record {
    let (record, id) = state::open(ring(), token).expect("a token the service answered opens");
    assert_sound(&record.game);
    assert_eq!(view.moves, record.game.moves());
    assert_eq!(view.match_id, hex(&record.match_id.0));
    assert_eq!(view.state_id, id, "the view shows the state's id");
    assert_eq!(record.previous, previous, "made from the request's state");
    assert_eq!(
        view.previous_state_id,
        previous.map_or_else(Vec::new, |p| p.to_vec()),
        "the view shows the id it was made from"
    );
    assert_seats_shown(&record, &view.seats);
    let cached = tokens()
        .open(token)
        .expect("the cache opens a token the service answered");
    assert_eq!(*cached, record, "the cache holds what the token holds");
    assert_eq!(cached.state_id(), id, "the cache knows the state's id");
    tokens().keep(cached);
    record
}

/// A request naming the seats `named` and carrying `credential`, in the match
/// `before`, was accepted (`Ok`) only if it holds every named seat's credential, and
/// refused for its credential only if it misses one of them.
fn check_authority(
    outcome: Result<(), &ApiError>,
    before: Option<&Record>,
    named: &[Option<u32>],
    credential: &[u8],
) {
    let missed = |record: &Record| {
        named
            .iter()
            .flatten()
            .any(|&s| !holds(record, s, credential))
    };
    match outcome {
        Ok(()) => {
            let record = before.expect("an accepted request's token opens");
            assert!(
                !missed(record),
                "accepted without the credential of every seat named {named:?}"
            );
        }
        Err(ApiError::Denied(denied)) => {
            let record = before.expect("a token opens before its seats are checked");
            assert!(
                missed(record),
                "{denied:?} with every named seat's credential"
            );
        }
        Err(_) => {}
    }
}

/// A Deal, Play or Draw: checks who may make it, finishes it as the service does (the
/// bots that come on turn play), and checks the answer against the match it was made
/// from (`before`).
fn finished(
    policy: &Policy,
    step: Result<Step, ApiError>,
    before: Option<&(Record, StateId)>,
    named: &[Option<u32>],
    credential: &[u8],
) -> Result<(), ApiError> {
    // A move may come after a seat's time ran out, and a bot take that seat.
    let timed_out = |_: usize, was: &Player, now: &Player| matches!((was, now), (Player::Human(a), Player::Held { credential: b, why: Why::TimedOut, .. }) if a == b);
    finished_seating(policy, step, before, named, credential, Some(&timed_out))
}

/// [`finished`], for a call that may change the seats: `changes` says which and
/// how (the call's seat; a timeout's seat).
fn finished_seating(
    policy: &Policy,
    step: Result<Step, ApiError>,
    before: Option<&(Record, StateId)>,
    named: &[Option<u32>],
    credential: &[u8],
    changes: Option<&dyn Fn(usize, &Player, &Player) -> bool>,
) -> Result<(), ApiError> {
    check_authority(
        step.as_ref().map(|_| ()),
        before.map(|b| &b.0),
        named,
        credential,
    );
    let step = step?;
    let (before, id) = before.expect("an accepted move's token opens");
    let answer = match steps::finish(tokens(), policy, step) {
        Err(error @ ApiError::Token(TokenError::Random)) => return Err(error),
        answer => answer.expect("a move accepted is finished"),
    };
    let record = answered(&answer.state, &answer.view, Some(*id));
    assert!(
        answer.credentials.is_empty(),
        "only NewGame answers credentials"
    );
    assert_eq!(record.match_id, before.match_id);
    assert_eq!(record.secret, before.secret);
    match changes {
        None => assert_eq!(record.seats, before.seats, "a move changes no seat"),
        Some(may) => {
            for (seat, (now, was)) in record.seats.0.iter().zip(&before.seats.0).enumerate() {
                assert!(
                    now == was || may(seat, was, now),
                    "seat {seat}: {was:?} became {now:?}"
                );
            }
        }
    }
    assert!(
        before.game.hand_number() > 0
            || record.game.hand_number() == 0
            || before.seats.0[..before.game.rules().players]
                .iter()
                .all(|p| *p != Player::Open),
        "a first hand dealt with a seat open"
    );
    if record.game.phase() == Phase::Playing {
        let turn = record.game.turn().expect("a seat on turn");
        assert!(record.seats.bots()[turn].is_none(), "a bot left on turn");
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut input = data;
    let head = byte(&mut input);
    let handler = (head & 0x7f) % 10;
    let policy = Policy {
        allow_client_seeds: head & 0x80 != 0,
        // Flagged tokens, as a server with a store makes (the handlers never call it).
        match_store: handler % 2 == 0,
        // A small search: this target looks for crashes, not strength.
        bot_search: Search {
            worlds: 2,
            horizon: None,
        },
        ..Policy::default()
    };
    let choice = take(&mut input, 2);
    let choice = u16::from(choice.first().copied().unwrap_or(0))
        | u16::from(choice.get(1).copied().unwrap_or(0)) << 8;
    let token = real(choice);
    let credential_choice = byte(&mut input);
    // Whether the request's token opened, and whether the call must succeed.
    let (result, opens, must_succeed) = match handler {
        0 => {
            let Ok(req) = pb::NewGameRequest::decode(input) else {
                return;
            };
            let result = seats::new_game(tokens(), &policy, &JUDGE, &req).map(|a| {
                assert!(
                    req.seed.is_none() || policy.allow_client_seeds,
                    "a seed taken by a server that takes none"
                );
                let record = answered(&a.state, &a.view, None);
                assert_eq!(record.game.moves(), 0);
                if let (true, Some(seed)) = (policy.allow_client_seeds, req.seed) {
                    assert_eq!(record.game.seed(), seed, "the client's seed");
                }
                let mut credentials = a.credentials.iter();
                for (seat, player) in record.seats.0.iter().enumerate() {
                    let asked = req.seats.get(seat).map(|s| (s.bot, s.claim));
                    match *player {
                        Player::Human(held) => {
                            assert_eq!(asked, Some((0, true)), "seat {seat} claimed unasked");
                            let c = credentials.next().expect("a claimed seat's credential");
                            assert_eq!((c.seat, &c.credential[..]), (seat as u32, &held[..]));
                        }
                        Player::Bot(level) => {
                            assert_eq!(asked, Some((level_out(level) as i32, false)));
                        }
                        Player::Open => assert!(
                            asked.is_none_or(|a| a == (0, false)),
                            "seat {seat} left open, asked {asked:?}"
                        ),
                        Player::Held { .. } => panic!("seat {seat} held by a bot at NewGame"),
                    }
                }
                assert!(credentials.next().is_none(), "a credential for no claim");
                if let Some(v) = req.viewer {
                    assert!(matches!(record.seats.0[v as usize], Player::Human(_)));
                }
            });
            (result, false, false)
        }
        1 => {
            let Ok(mut req) = pb::DealRequest::decode(input) else {
                return;
            };
            if let Some(t) = token.clone() {
                req.state = t.into();
            }
            let before = opened(&req.state);
            let record = before.as_ref().map(|b| &b.0);
            req.credential = credential_for(credential_choice, &req.credential, record, req.viewer);
            let step = moves::deal(tokens(), &JUDGE, &req);
            let result = finished(
                &policy,
                step,
                before.as_ref(),
                &[req.viewer],
                &req.credential,
            );
            (result, before.is_some(), false)
        }
        7..=9 => {
            // A seat's own call about its place: ClaimTimeout, Leave, ReturnToSeat.
            let Ok(mut req) = pb::LeaveRequest::decode(input) else {
                return;
            };
            if let Some(t) = token.clone() {
                req.state = t;
            }
            let before = opened(&req.state);
            let record = before.as_ref().map(|b| &b.0);
            let seat = Some(req.seat);
            req.credential = credential_for(credential_choice, &req.credential, record, seat);
            let (state, credential) = (req.state.clone(), req.credential.clone());
            let step = match handler {
                7 => moves::claim_timeout(
                    tokens(),
                    &JUDGE,
                    &pb::ClaimTimeoutRequest {
                        state,
                        seat: req.seat,
                        credential,
                    },
                ),
                8 => moves::leave(tokens(), &JUDGE, &req),
                _ => moves::return_to_seat(
                    tokens(),
                    &JUDGE,
                    &pb::ReturnToSeatRequest {
                        state,
                        seat: req.seat,
                        credential,
                    },
                ),
            };
            let named = [seat];
            // Only the seat named changes (held by a bot, or its player's again), or a
            // timed-out seat a bot takes.
            let own = req.seat as usize;
            let may = |s: usize, was: &Player, now: &Player| match (was, now) {
                (Player::Human(a), Player::Held { credential: b, .. }) => a == b,
                (Player::Held { credential: a, .. }, Player::Held { credential: b, .. }) => {
                    s == own && a == b
                }
                (Player::Held { credential: a, .. }, Player::Human(b)) => s == own && a == b,
                _ => false,
            };
            let result = finished_seating(
                &policy,
                step,
                before.as_ref(),
                &named,
                &req.credential,
                Some(&may),
            );
            (result, before.is_some(), false)
        }
        2 => {
            let Ok(mut req) = pb::PlayRequest::decode(input) else {
                return;
            };
            if let Some(t) = token.clone() {
                req.state = t.into();
            }
            let before = opened(&req.state);
            let record = before.as_ref().map(|b| &b.0);
            let seat = Some(req.seat);
            req.credential = credential_for(credential_choice, &req.credential, record, seat);
            let step = moves::play(tokens(), &JUDGE, &req);
            let named = [seat, req.viewer];
            let result = finished(&policy, step, before.as_ref(), &named, &req.credential);
            (result, before.is_some(), false)
        }
        3 => {
            let Ok(mut req) = pb::DrawRequest::decode(input) else {
                return;
            };
            if let Some(t) = token.clone() {
                req.state = t.into();
            }
            let before = opened(&req.state);
            let record = before.as_ref().map(|b| &b.0);
            let seat = Some(req.seat);
            req.credential = credential_for(credential_choice, &req.credential, record, seat);
            let step = moves::draw(tokens(), &JUDGE, &req);
            let named = [seat, req.viewer];
            let result = finished(&policy, step, before.as_ref(), &named, &req.credential);
            (result, before.is_some(), false)
        }
        5 => {
            let Ok(mut req) = pb::SuggestRequest::decode(input) else {
                return;
            };
            if let Some(t) = token.clone() {
                req.state = t.into();
            }
            let before = opened(&req.state);
            let record = before.as_ref().map(|b| &b.0);
            req.credential =
                credential_for(credential_choice, &req.credential, record, Some(req.seat));
            // A small search: this target looks for crashes, not strength.
            req.worlds %= 9;
            let result = suggest::suggest(tokens(), &req);
            check_authority(
                result.as_ref().map(|_| ()),
                record,
                &[Some(req.seat)],
                &req.credential,
            );
            let result = result.map(|advice| {
                let named = [Some(req.seat)];
                let Some(play) = advice.play else {
                    assert!(advice.draw && advice.moves.is_empty());
                    let follow = pb::DrawRequest {
                        state: req.state.clone(),
                        seat: req.seat,
                        viewer: None,
                        credential: req.credential.clone(),
                    };
                    let step = moves::draw(tokens(), &JUDGE, &follow);
                    finished(&policy, step, before.as_ref(), &named, &req.credential)
                        .expect("the advised draw is accepted");
                    return;
                };
                let follow = pb::PlayRequest {
                    state: req.state.clone(),
                    seat: req.seat,
                    tile: play.tile,
                    end: play.end,
                    viewer: None,
                    credential: req.credential.clone(),
                };
                let step = moves::play(tokens(), &JUDGE, &follow);
                finished(&policy, step, before.as_ref(), &named, &req.credential)
                    .expect("the advised move is accepted");
            });
            (result, before.is_some(), false)
        }
        6 => {
            let Ok(mut req) = pb::ClaimSeatRequest::decode(input) else {
                return;
            };
            if let Some(t) = token.clone() {
                req.state = t;
            }
            let before = opened(&req.state);
            let result = seats::claim_seat(tokens(), &policy, &JUDGE, &req).map(|(r, claimed)| {
                let (before, id) = before.as_ref().expect("a claim's token opens");
                let view = r.view;
                let record = answered(&r.state, &view, Some(*id));
                let seat = req.seat as usize;
                assert_eq!(claimed.seat, req.seat);
                assert_eq!(view.viewer, Some(req.seat), "shown to the seat claimed");
                assert_eq!(before.game.hand_number(), 0, "a claim after the first deal");
                assert_eq!(
                    before.seats.0[seat],
                    Player::Open,
                    "a claim of a taken seat"
                );
                let mut seats = before.seats;
                seats.0[seat] = Player::Human(
                    claimed
                        .credential
                        .as_slice()
                        .try_into()
                        .expect("a 16-byte credential"),
                );
                assert_eq!(record.seats, seats, "a claim changes its seat only");
                assert_eq!(record.match_id, before.match_id);
                assert_eq!(record.secret, before.secret);
                assert_eq!(record.game.rules(), before.game.rules());
                assert_eq!(record.game.moves(), 0);
                if policy.allow_client_seeds {
                    assert_eq!(record.game.seed(), before.game.seed(), "the seed kept");
                }
            });
            (result, before.is_some(), false)
        }
        _ => {
            let Ok(mut req) = pb::ScoreRequest::decode(input) else {
                return;
            };
            if let Some(t) = token.clone() {
                req.state = t.into();
            }
            let before = opened(&req.state);
            let record = before.as_ref().map(|b| &b.0);
            req.credential = credential_for(credential_choice, &req.credential, record, req.viewer);
            let must = record.is_some_and(|r| {
                req.viewer
                    .is_none_or(|viewer| holds(r, viewer, &req.credential))
            });
            let result = moves::score(tokens(), &JUDGE, &req);
            check_authority(
                result.as_ref().map(|_| ()),
                record,
                &[req.viewer],
                &req.credential,
            );
            let result = result.map(|r| {
                let (record, id) = before.as_ref().expect("a Score's token opens");
                let view = r.view.expect("a Score answers a view");
                assert!(r.sheet.is_some());
                assert_eq!(view.state_id, *id, "Score shows the token's state id");
                assert_eq!(
                    view.previous_state_id,
                    record.previous.map_or_else(Vec::new, |p| p.to_vec())
                );
                assert_seats_shown(record, &view.seats);
                assert!(req.include_hand_events || r.hand_events.is_empty());
            });
            (result, before.is_some(), must)
        }
    };
    if let Err(error) = result {
        assert!(!must_succeed, "Score refused: {error:?}");
        if opens {
            assert!(
                !matches!(error, ApiError::Token(e) if e != TokenError::Random),
                "a token that opens refused: {error:?}"
            );
        }
        let reason = pb::ErrorReason::from_str_name(error.reason());
        assert!(
            reason.is_some_and(|r| r != pb::ErrorReason::Unspecified),
            "{error:?}: reason {} is no ErrorReason",
            error.reason()
        );
        let status = tonic::Status::from(error.clone());
        let expected = match error {
            ApiError::Token(TokenError::Random) => Code::Unavailable,
            ApiError::Rules(_) | ApiError::SeatsOpen | ApiError::SeatTaken(_) => {
                Code::FailedPrecondition
            }
            ApiError::Denied(_) | ApiError::SeedNotAllowed => Code::PermissionDenied,
            ApiError::Field { .. } | ApiError::Token(_) | ApiError::Malformed(_) => {
                Code::InvalidArgument
            }
            ApiError::Overloaded | ApiError::SearchQueueFull => Code::ResourceExhausted,
            ApiError::BodyTimeout => Code::Cancelled,
            ApiError::StateStale(_) => Code::Aborted,
            ApiError::StoreUnavailable(_) => Code::Unavailable,
            ApiError::MatchForgotten => Code::NotFound,
            ApiError::StoreRequired => Code::FailedPrecondition,
            ApiError::TooManyWatches | ApiError::InviteRateLimited(_) => Code::ResourceExhausted,
            ApiError::InviteNotFound => Code::NotFound,
            ApiError::NoOpenSeat => Code::FailedPrecondition,
            ApiError::DeadlinePassed { .. } => Code::DeadlineExceeded,
            ApiError::TimeoutNotDue { .. }
            | ApiError::NoTurnClock
            | ApiError::TurnTimedOut { .. }
            | ApiError::SeatNotHeld(_) => Code::FailedPrecondition,
            ApiError::ClockSkew => Code::Unavailable,
            ApiError::Pass {
                error: allfives::passes::PassError::Malformed(_),
                ..
            } => Code::InvalidArgument,
            ApiError::Pass { .. } | ApiError::PassRequired { .. } => Code::Unauthenticated,
            ApiError::PassesNotAccepted { .. } | ApiError::PlayerAlreadySeated => {
                Code::FailedPrecondition
            }
        };
        assert_eq!(status.code(), expected, "{error:?}");
    }
});
