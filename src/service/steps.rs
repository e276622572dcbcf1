//! The steps every handler takes, in this order: parse the request, open the token,
//! check the request's right to the seat it names, apply the engine (and the bots that
//! come on turn), seal the new token, render the view. Each RPC family's file
//! (`moves.rs`, `seats.rs`, `suggest.rs`, `watch.rs`, `invites.rs`) is made of them.
//!
//! Order matters for what a refusal may tell: request fields are read first (they say
//! nothing about the match), then the token, then the seat's credential (which depends
//! only on the seats), and only then the move, so a request that may not act or look
//! for a seat is refused before anything that depends on hidden tiles is looked at.

use crate::engine::suggest::{self, Level, Search, Stop};
use crate::engine::{Absence, Action, Event, Phase, Seat};
use crate::proto::v1 as pb;
use crate::state::{self, MatchId, Opened, Record, Seats, Tokens};

use super::clocks::{self, Judge};
use super::convert::{Table, event_out, seat_in, view_out, viewer_in};
use super::status::ApiError;
use crate::store::Move;

/// What the server allows beyond the rules, from its configuration.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// NewGame takes a client's seed, and claims keep it (`--allow-client-seeds`): for
    /// tests, walkthroughs and replays, never for real play.
    pub allow_client_seeds: bool,
    /// The search of the server-played HARD bots.
    pub bot_search: Search,
    /// The server keeps a match store (`--match-store`): NewGame's tokens say so, and
    /// their matches move only through the store (`crate::store`).
    pub match_store: bool,
    /// How late past its deadline a seat's move is still taken (`--clock-lag-grace-ms`).
    pub clock_lag_grace_ms: u64,
    /// How far the replicas' clocks may disagree (`--max-clock-skew-ms`).
    pub max_clock_skew_ms: u64,
    /// Views show every seat's player id, not the viewer's own only
    /// (`--show-player-ids`).
    pub show_player_ids: bool,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            allow_client_seeds: false,
            bot_search: Search::worlds(None),
            match_store: false,
            clock_lag_grace_ms: 2000,
            max_clock_skew_ms: 1000,
            show_player_ids: false,
        }
    }
}

impl Policy {
    /// The judge of a call arriving at `now_ms` (ms since the Unix epoch).
    pub fn judge(&self, now_ms: u64) -> Judge {
        Judge {
            now_ms,
            grace_ms: self.clock_lag_grace_ms,
            skew_ms: self.max_clock_skew_ms,
            show_player_ids: self.show_player_ids,
        }
    }
}

/// What every changing call answers: the new token, the view and the events, and the
/// credentials of seats claimed in the call (NewGame only). `bot_worlds` is the worlds
/// the call's HARD bots were given (`engine::suggest::BotsPlayed`), from which the
/// service makes the call last long enough that its time tells nothing.
pub struct Answer {
    pub state: Vec<u8>,
    /// The match, the state the call came from and the state it made (for the match
    /// store: `crate::store`).
    pub moved: Move,
    pub view: pb::GameView,
    pub events: Vec<pb::Event>,
    pub credentials: Vec<pb::SeatCredential>,
    pub bot_worlds: u32,
    /// The match has a turn clock (its states hold times: see [`answered_as`]).
    pub clocked: bool,
    /// How many of `events` replaying the hand reports again (`Event::in_hand_history`):
    /// the count a Watch stream takes from the end of the hand's events.
    pub hand_events: u32,
    /// The seat events among `events`, as the match store keeps them for watchers
    /// (`super::seat_events`).
    pub seat_events: Vec<u8>,
}

/// Random bytes for match ids and deal seeds, from the thread's `ThreadRng`
/// ([`state::random`]).
pub(super) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    state::random::fill(&mut bytes);
    bytes
}

pub(super) fn random_seed() -> u64 {
    u64::from_le_bytes(random_bytes())
}

/// Random bytes for a match's secret or a seat's credential, from the operating system.
pub(super) fn secret_bytes<const N: usize>() -> Result<[u8; N], ApiError> {
    let mut bytes = [0u8; N];
    state::random::fill_secret(&mut bytes)
        .map_err(|_| ApiError::Token(state::TokenError::Random))?;
    Ok(bytes)
}

/// The view of `opened` for `viewer`, with its match id, state ids and seats, and its
/// clocks as of `judge`'s time.
pub(super) fn render(
    opened: &Opened,
    viewer: Option<Seat>,
    judge: &Judge,
) -> Result<pb::GameView, ApiError> {
    let previous = opened.previous;
    Ok(view_out(
        &opened.game.view(viewer)?,
        &Table {
            match_id: opened.match_id.hex().as_str(),
            state_id: &opened.state_id(),
            previous_state_id: previous.as_ref().map_or(&[], |id| id.as_slice()),
            seats: &opened.seats,
            names: &opened.names,
            player_ids: &opened.player_ids,
            show_player_ids: judge.show_player_ids,
            clock: clocks::view(opened, judge),
        },
    ))
}

/// Seals the match and renders it for `viewer`, with `events` redacted for that
/// viewer; the match is then kept under its new token for the call that brings it back.
pub(super) fn answer(
    tokens: &Tokens,
    mut opened: Opened,
    viewer: Option<Seat>,
    events: &[Event],
    judge: &Judge,
) -> Result<Answer, ApiError> {
    let state = tokens.seal(&mut opened)?;
    let rules = opened.game.rules();
    let answer = Answer {
        state,
        moved: Move {
            match_id: opened.match_id,
            from: opened.previous,
            to: opened.state_id(),
            stored: opened.stored,
        },
        view: render(&opened, viewer, judge)?,
        events: events
            .iter()
            .map(|&e| event_out(rules, e, viewer))
            .collect(),
        credentials: Vec::new(),
        bot_worlds: 0,
        hand_events: u32::try_from(events.iter().filter(|e| e.in_hand_history()).count())
            .unwrap_or(u32::MAX),
        // A token of the format before clocks carries none: the release before, which
        // reads its heads, would take them for the token (docs/compatibility.md).
        seat_events: match opened.version() {
            state::token::BEFORE_CLOCKS => Vec::new(),
            _ => super::seat_events::written(events),
        },
        clocked: opened.clocks.is_some(),
    };
    tokens.keep(opened);
    Ok(answer)
}

/// `answer`, whose state the store refused, answered as `head`, the state the store
/// holds, when that is the same call's: made from the same state by the same moves (the
/// same game, seats and timeouts in a row), differing only in the times written and
/// what they charged the banks, as the same clocked call made again a second later
/// does. `None` if it is another call's.
pub(super) fn answered_as(
    tokens: &Tokens,
    answer: Answer,
    head: crate::store::Head,
    judge: &Judge,
) -> Option<Answer> {
    let ours = tokens.open(&answer.state).ok()?;
    let theirs = tokens.open(&head.token).ok()?;
    let late = |o: &Opened| o.clocks.as_ref().map(|c| c.late);
    let same = ours.match_id == theirs.match_id
        && ours.game == theirs.game
        && ours.seats == theirs.seats
        && late(&ours) == late(&theirs);
    if !same {
        return None;
    }
    let viewer = answer.view.viewer.map(|v| v as Seat);
    let view = render(&theirs, viewer, judge).ok()?;
    tokens.keep(theirs);
    Some(Answer {
        state: head.token,
        moved: Move {
            to: head.state,
            ..answer.moved
        },
        view,
        ..answer
    })
}

/// Checks that `credential` is `seat`'s, when a seat is named.
pub(super) fn authorize(
    seats: &Seats,
    seat: Option<Seat>,
    credential: &[u8],
) -> Result<(), ApiError> {
    match seat {
        Some(seat) => Ok(seats.authorize(seat, credential)?),
        None => Ok(()),
    }
}

/// Opens the token and reads the viewer against its rules, and the credential
/// against the viewer.
pub(super) fn open(
    tokens: &Tokens,
    token: &[u8],
    viewer: Option<u32>,
    credential: &[u8],
) -> Result<(Opened, Option<Seat>), ApiError> {
    let opened = tokens.open(token)?;
    let viewer = viewer_in(viewer, opened.game.rules())?;
    authorize(&opened.seats, viewer, credential)?;
    Ok((opened, viewer))
}

/// What a changing call does to the match, once its request is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Doing {
    /// A move: Deal, Play or Draw.
    Move(Action),
    /// Only the timeout of the seat on turn (ClaimTimeout).
    ClaimTimeout,
    /// The seat's player leaves.
    Leave(Seat),
    /// The seat's player takes it back from the bot holding it.
    Return(Seat),
}

/// A changing call after its own move, before the bots that come on turn: see
/// [`finish`]. When a timeout was due, its own move waits in `then` for the timeout,
/// which [`finish`] applies first.
pub struct Step {
    opened: Opened,
    viewer: Option<Seat>,
    events: Vec<Event>,
    judge: Judge,
    /// The time its answer's clocks are shown at: the judge's, or now for a call judged
    /// as of an earlier one ([`Step::shown_at`]).
    shown: Judge,
    /// The seat whose time had run out when the call came.
    late: Option<Seat>,
    then: Option<Doing>,
    /// The hand whose actions the clocks' times were written for.
    stamped_hand: u32,
}

impl Step {
    /// The same call, its answer's clocks shown at `now`'s time (a retry judged as of
    /// the call it repeats: `Api::recorded_from`).
    pub fn shown_at(self, now: &Judge) -> Step {
        Step {
            shown: *now,
            ..self
        }
    }

    /// The match it moves (what the search queue shares turns by).
    pub fn match_id(&self) -> MatchId {
        self.opened.match_id
    }

    /// Whether finishing it may run a HARD bot's search (milliseconds of CPU): then the
    /// service runs [`finish`] off the async workers.
    pub fn searches(&self) -> bool {
        let hard = Some(Level::Hard);
        let timeout_bot = match self.opened.game.rules().absence {
            Absence::Bot { level, .. } if self.late.is_some() => Some(level),
            _ => None,
        };
        self.opened.game.phase() == Phase::Playing
            && (self.opened.seats.bots().contains(&hard) || timeout_bot == hard)
    }

    /// Applies what the call does (its timeout, if one was due, applied already).
    fn apply(&mut self, doing: Doing) -> Result<(), ApiError> {
        let record = &mut *self.opened;
        match doing {
            Doing::Move(action) => {
                clocks::charge(record, &action, &self.judge);
                record.game.apply(action, &mut self.events)?;
            }
            Doing::ClaimTimeout => {}
            Doing::Leave(seat) => clocks::leave(record, seat, &mut self.events, &self.judge)?,
            Doing::Return(seat) => clocks::come_back(record, seat, &mut self.events)?,
        }
        Ok(())
    }

    /// Writes down the time of the actions since the last written (a clocked match).
    fn stamp(&mut self) {
        if self.opened.clocks.is_none() {
            return;
        }
        let hand = self.opened.game.hand_number();
        let dealt = hand != self.stamped_hand;
        let actions = self.opened.game.scorecard().actions.len();
        let now = self.judge.now_secs();
        if let Some(clocks) = self.opened.clocks.as_mut() {
            clocks.stamp(dealt, actions, now);
        }
        self.stamped_hand = hand;
    }
}

/// Applies what a call does to the match in `token`, by the request holding
/// `credential`: it must be the credential of `seat` (the seat acting, if any) and of
/// the viewer. A timeout due at `judge`'s time comes first (in [`finish`], with the
/// bots): a move of the timed-out seat itself is refused, and ClaimTimeout with none
/// due. A refused call keeps nothing: its token, if it comes again, is opened by the
/// cipher.
pub(super) fn act(
    tokens: &Tokens,
    judge: &Judge,
    token: &[u8],
    viewer: Option<u32>,
    credential: &[u8],
    seat: Option<u32>,
    doing: impl FnOnce(&Record, Option<Seat>) -> Result<Doing, ApiError>,
) -> Result<Step, ApiError> {
    let (mut opened, viewer) = open(tokens, token, viewer, credential)?;
    let seat = seat
        .map(|s| seat_in(s, opened.game.rules(), "seat"))
        .transpose()?;
    authorize(&opened.seats, seat, credential)?;
    let late = clocks::due(&opened, judge)?;
    let doing = doing(&opened, seat)?;
    // A call is judged as the match is when it arrives: what it asks that the timeout
    // due first could not change is refused before the timeout is applied (and before
    // any bot of it searches), the timed-out seat's own move first of all.
    match (doing, late) {
        (Doing::Move(Action::Play { seat, .. } | Action::Draw { seat }), Some(late))
            if seat == late =>
        {
            return Err(clocks::timed_out(&opened, late));
        }
        (Doing::ClaimTimeout, None) => return Err(clocks::not_due(&opened, judge)),
        // A hand is in play: no deal, whatever the timeout would do.
        (Doing::Move(Action::Deal), Some(_)) => {
            return Err(ApiError::Rules(crate::engine::Error::WrongPhase {
                phase: Phase::Playing,
            }));
        }
        // Only a seat a bot holds now may be taken back.
        (Doing::Return(seat), Some(_))
            if !matches!(opened.seats.0[seat], state::Player::Held { .. }) =>
        {
            return Err(ApiError::SeatNotHeld(seat));
        }
        _ => {}
    }
    let previous = opened.state_id();
    opened.previous = Some(previous);
    let stamped_hand = opened.game.hand_number();
    let mut step = Step {
        opened,
        viewer,
        events: Vec::with_capacity(8),
        judge: *judge,
        shown: *judge,
        late,
        then: None,
        stamped_hand,
    };
    match late {
        None => step.apply(doing)?,
        Some(_) => step.then = Some(doing),
    }
    Ok(step)
}

/// Ends a changing call: the bots play while one is on turn in the hand (each on its
/// own seat's knowledge, `engine::suggest::play_bots`), then the match is sealed and
/// rendered.
pub fn finish(tokens: &Tokens, policy: &Policy, step: Step) -> Result<Answer, ApiError> {
    match finish_until(tokens, policy, step, &|| false)? {
        Some(answer) => Ok(answer),
        None => unreachable!("only a stop that says so ends a search early"),
    }
}

/// As [`finish`], the bots' HARD searches asking `stop` before each world whether to
/// give up (`engine::suggest::play_bots_until`): `Ok(None)` when it said so, and then
/// nothing was sealed or kept: the call did nothing, and the same request with the same
/// token can come again.
pub fn finish_until(
    tokens: &Tokens,
    policy: &Policy,
    step: Step,
    stop: &dyn Stop,
) -> Result<Option<Answer>, ApiError> {
    finish_spending(tokens, policy, step, stop, &mut 0)
}

/// As [`finish_until`], adding to `hard_worlds` the worlds the bots' HARD searches
/// were given, whether the call is then answered or refused: a call refused after a
/// timed-out seat's HARD bot searched (the caller's own move no longer legal once the
/// bot had played) lasts the bots' floor all the same, so that its time says nothing
/// about the bot's tiles either.
pub fn finish_spending(
    tokens: &Tokens,
    policy: &Policy,
    step: Step,
    stop: &dyn Stop,
    hard_worlds: &mut u32,
) -> Result<Option<Answer>, ApiError> {
    let mut step = step;
    let search = policy.bot_search;
    if let Some(late) = step.late {
        let record = &mut *step.opened;
        if let Some(level) = clocks::time_out(record, late, &mut step.events)? {
            let game = &mut record.game;
            match suggest::play_turn_until(game, late, level, search, &mut step.events, stop)? {
                Some(played) => *hard_worlds += played.hard_worlds,
                None => return Ok(None),
            }
        }
        match play_bots(&mut step, search, stop)? {
            Some(worlds) => *hard_worlds += worlds,
            None => return Ok(None),
        }
        // The next move begins now: the call's own is timed from here.
        step.stamp();
        // What the timeout ended leaves the call nothing to do: the match over (no
        // seat to leave or take back, no move), or the hand in play over (no move in
        // it). The call is answered with the timeout's state, as a claim would be,
        // rather than refused for a state nobody keeps.
        let over = step.opened.game.phase() == Phase::Over;
        let hand_over = step.opened.game.phase() != Phase::Playing;
        match step.then.take() {
            Some(Doing::Leave(_) | Doing::Return(_)) if over => {}
            Some(Doing::Move(Action::Play { .. } | Action::Draw { .. })) if hand_over => {}
            Some(doing) => step.apply(doing)?,
            None => {}
        }
    }
    match play_bots(&mut step, search, stop)? {
        Some(worlds) => *hard_worlds += worlds,
        None => return Ok(None),
    }
    step.stamp();
    let Step {
        opened,
        viewer,
        events,
        shown,
        ..
    } = step;
    let mut answer = answer(tokens, opened, viewer, &events, &shown)?;
    answer.bot_worlds = *hard_worlds;
    Ok(Some(answer))
}

/// The bots (and the seats a bot holds) play while one is on turn in the hand: the
/// worlds their HARD searches were given, or `None` if `stop` said so.
fn play_bots(step: &mut Step, search: Search, stop: &dyn Stop) -> Result<Option<u32>, ApiError> {
    let bots = step.opened.seats.bots();
    if step.opened.game.phase() != Phase::Playing || bots.iter().all(Option::is_none) {
        return Ok(Some(0));
    }
    let game = &mut step.opened.game;
    Ok(
        suggest::play_bots_until(game, &bots, search, &mut step.events, stop)?
            .map(|played| played.hard_worlds),
    )
}
