//! Turn clocks judged when a call arrives (docs/rules.md section 11), and the seats
//! of players who left or timed out: no timer runs anywhere. Every changing call opens
//! the token, asks [`due`] whether the seat on turn is past its deadline plus the lag
//! grace by this server's clock, and if so applies its timeout first ([`time_out`]),
//! as the match's absence option says; then its own move. The clocks live in the
//! token (`state::plaintext`), so any replica judges the same; the engine does the
//! arithmetic (`engine::clock`).

use crate::engine::suggest::Level;
use crate::engine::{Action, Event, Outcome, Phase, Seat, Why};
use crate::proto::v1 as pb;
use crate::state::{Opened, Player, Record};

use super::status::ApiError;

/// The time a call is judged at (its arrival, by this server's clock), and the
/// deployment's allowances (`--clock-lag-grace-ms`, `--max-clock-skew-ms`); with them,
/// what the call's views may show (`--show-player-ids`), the one other setting every
/// view is rendered under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Judge {
    /// Milliseconds since the Unix epoch.
    pub now_ms: u64,
    pub grace_ms: u64,
    pub skew_ms: u64,
    /// Views show every seat's player id, not the viewer's own only.
    pub show_player_ids: bool,
}

impl Judge {
    /// The call's time in whole seconds, rounded up: a move's start is written a
    /// little late (in the next seat's favour), never early.
    pub fn now_secs(&self) -> u64 {
        self.now_ms.div_ceil(1000)
    }
}

/// The seat on turn whose time has run out at the judge's time: a seat a human plays,
/// in a clocked match, past its deadline plus the lag grace. Refused CLOCK_SKEW when
/// the match's last move was written at a time later than this server's clock by more
/// than the skew allowed (the writer's clock or this one is off).
pub fn due(record: &Record, judge: &Judge) -> Result<Option<Seat>, ApiError> {
    let (Some(clock), Some(clocks)) = (&record.game.rules().clock, &record.clocks) else {
        return Ok(None);
    };
    // Times are written rounded up to the second: up to 999 ms after the call.
    let allowed = judge
        .now_ms
        .saturating_add(999)
        .saturating_add(judge.skew_ms);
    if clocks.last().saturating_mul(1000) > allowed {
        return Err(ApiError::ClockSkew);
    }
    Ok(record.game.turn().filter(|&seat| {
        record.seats.human_plays(seat) && clocks.past_due(clock, seat, judge.now_ms, judge.grace_ms)
    }))
}

/// Why ClaimTimeout takes no timeout now: no clock, no seat on turn (between hands,
/// or the match is over), or not yet (with when it will be taken).
pub fn not_due(record: &Record, judge: &Judge) -> ApiError {
    let game = &record.game;
    let (Some(clock), Some(clocks)) = (&game.rules().clock, &record.clocks) else {
        return ApiError::NoTurnClock;
    };
    match (game.phase(), game.turn()) {
        (Phase::Over, _) => ApiError::Rules(crate::engine::Error::GameOver),
        (Phase::Playing, Some(seat)) => ApiError::TimeoutNotDue {
            claimable_at_ms: clocks.claimable_at(clock, seat, judge.grace_ms),
            now_ms: judge.now_ms,
        },
        (phase, _) => ApiError::Rules(crate::engine::Error::WrongPhase { phase }),
    }
}

/// The refusal of a move by `seat` after its time ran out: nothing is applied.
pub fn timed_out(opened: &Opened, seat: Seat) -> ApiError {
    let deadline_ms = match (&opened.game.rules().clock, &opened.clocks) {
        (Some(clock), Some(clocks)) => clocks.deadline(clock, seat).saturating_mul(1000),
        _ => 0,
    };
    ApiError::TurnTimedOut {
        deadline_ms,
        from: (opened.match_id, opened.state_id()),
    }
}

/// A move of `seat` (a Play, or a Draw) at the judge's time: what it took comes off its
/// clock. Nothing without a clock, or for a seat a bot plays.
pub fn charge(record: &mut Record, action: &Action, judge: &Judge) {
    let (seat, played) = match *action {
        Action::Play { seat, .. } => (seat, true),
        Action::Draw { seat } => (seat, false),
        Action::Deal | Action::Forfeit { .. } => return,
    };
    if !record.seats.human_plays(seat) {
        return;
    }
    if let (Some(clock), Some(clocks)) = (record.game.rules().clock, record.clocks.as_mut()) {
        clocks.moved(&clock, seat, judge.now_secs(), played);
    }
}

/// Applies `seat`'s timeout as the match's absence option says: its bank is spent,
/// and it forfeits, or a bot takes the seat, or (the answer) a bot of that level is to
/// play this one turn for it, which the caller plays.
pub fn time_out(
    record: &mut Record,
    seat: Seat,
    events: &mut Vec<Event>,
) -> Result<Option<Level>, ApiError> {
    let in_row = record.clocks.as_mut().map_or(1, |c| c.timed_out(seat));
    events.push(Event::Absent {
        seat,
        why: Why::TimedOut,
    });
    match record.game.rules().absence.on_timeout(in_row) {
        Outcome::Forfeit => forfeit(record, seat, Why::TimedOut, events).map(|()| None),
        Outcome::PlayTurn(level) => Ok(Some(level)),
        Outcome::TakeSeat(level) => {
            hold(record, seat, level, Why::TimedOut, events);
            Ok(None)
        }
    }
}

/// `seat`'s player leaves: a bot holds the seat, or it forfeits, as the match's
/// absence option says. Only once the first hand is dealt, until the match is over. A
/// seat that leaves while on turn pays for the time it took, as a move would: leaving
/// and coming back never buys time.
pub fn leave(
    record: &mut Record,
    seat: Seat,
    events: &mut Vec<Event>,
    judge: &Judge,
) -> Result<(), ApiError> {
    let game = &record.game;
    if game.phase() == Phase::Over {
        return Err(ApiError::Rules(crate::engine::Error::GameOver));
    }
    if game.hand_number() == 0 {
        return Err(ApiError::Rules(crate::engine::Error::WrongPhase {
            phase: Phase::Dealing,
        }));
    }
    if game.turn() == Some(seat)
        && record.seats.human_plays(seat)
        && let (Some(clock), Some(clocks)) = (record.game.rules().clock, record.clocks.as_mut())
    {
        clocks.spent(&clock, seat, judge.now_secs());
    }
    events.push(Event::Absent {
        seat,
        why: Why::Left,
    });
    match record.game.rules().absence.on_leave() {
        Outcome::Forfeit => forfeit(record, seat, Why::Left, events),
        Outcome::TakeSeat(level) | Outcome::PlayTurn(level) => {
            hold(record, seat, level, Why::Left, events);
            Ok(())
        }
    }
}

/// `seat`'s player comes back to the seat a bot holds, and plays it from its next
/// turn (a bot never waits on turn); its timeouts in a row are forgotten.
pub fn come_back(record: &mut Record, seat: Seat, events: &mut Vec<Event>) -> Result<(), ApiError> {
    if record.game.phase() == Phase::Over {
        return Err(ApiError::Rules(crate::engine::Error::GameOver));
    }
    let Some(Player::Held { credential, .. }) = record.seats.0.get(seat).copied() else {
        return Err(ApiError::SeatNotHeld(seat));
    };
    record.seats.0[seat] = Player::Human(credential);
    if let Some(clocks) = record.clocks.as_mut() {
        clocks.returned(seat);
    }
    events.push(Event::Returned { seat });
    Ok(())
}

fn forfeit(
    record: &mut Record,
    seat: Seat,
    why: Why,
    events: &mut Vec<Event>,
) -> Result<(), ApiError> {
    Ok(record.game.apply(Action::Forfeit { seat, why }, events)?)
}

/// A bot of `level` holds `seat` until its player comes back; a seat a bot holds
/// already keeps its bot, and says the newer reason.
fn hold(record: &mut Record, seat: Seat, level: Level, why: Why, events: &mut Vec<Event>) {
    match record.seats.0.get(seat).copied() {
        Some(Player::Human(credential)) => {
            record.seats.0[seat] = Player::Held {
                credential,
                level,
                why,
            };
            events.push(Event::BotTookSeat { seat, level });
        }
        Some(Player::Held {
            credential, level, ..
        }) => {
            record.seats.0[seat] = Player::Held {
                credential,
                level,
                why,
            };
        }
        _ => {}
    }
}

/// A clocked match's clocks as its views show them at the judge's time, and each
/// seat's timeouts in a row; `None` without a clock.
pub fn view(record: &Record, judge: &Judge) -> Option<(pb::ClockView, [u8; 4])> {
    let clock = record.game.rules().clock?;
    let clocks = record.clocks.as_ref()?;
    let players = record.game.rules().players;
    let on_turn = record
        .game
        .turn()
        .filter(|&seat| record.seats.human_plays(seat));
    let view = pb::ClockView {
        now_ms: judge.now_ms,
        move_began_ms: on_turn.map(|_| clocks.last().saturating_mul(1000)),
        turn_deadline_ms: on_turn.map(|seat| clocks.deadline(&clock, seat).saturating_mul(1000)),
        claimable_at_ms: on_turn.map(|seat| clocks.claimable_at(&clock, seat, judge.grace_ms)),
        bank_seconds: clocks.banks[..players].to_vec(),
    };
    Some((view, clocks.late))
}
