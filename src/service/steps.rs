//! The steps every handler takes, in this order: parse the request, open the token,
//! check the request's right to the seat it names, apply the engine (and the bots that
//! come on turn), seal the new token, render the view. Each RPC family's file
//! (`moves.rs`, `seats.rs`, `suggest.rs`, `watch.rs`, `invites.rs`) is made of them.
//!
//! Order matters for what a refusal may tell: request fields are read first (they say
//! nothing about the match), then the token, then the seat's credential (which depends
//! only on the seats), and only then the move, so a request that may not act or look
//! for a seat is refused before anything that depends on hidden tiles is looked at.

use crate::engine::suggest::{self, Level, Search};
use crate::engine::{Action, Event, Phase, Seat};
use crate::proto::v1 as pb;
use crate::state::{self, MatchId, Opened, Record, Seats, Tokens};

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
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            allow_client_seeds: false,
            bot_search: Search::worlds(None),
            match_store: false,
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

/// The view of `opened` for `viewer`, with its match id, state ids and seats.
pub(super) fn render(opened: &Opened, viewer: Option<Seat>) -> Result<pb::GameView, ApiError> {
    let previous = opened.previous;
    Ok(view_out(
        &opened.game.view(viewer)?,
        &Table {
            match_id: opened.match_id.hex().as_str(),
            state_id: &opened.state_id(),
            previous_state_id: previous.as_ref().map_or(&[], |id| id.as_slice()),
            seats: &opened.seats,
            names: &opened.names,
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
        view: render(&opened, viewer)?,
        events: events
            .iter()
            .map(|&e| event_out(rules, e, viewer))
            .collect(),
        credentials: Vec::new(),
        bot_worlds: 0,
    };
    tokens.keep(opened);
    Ok(answer)
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

/// A changing call after its own move, before the bots that come on turn: see
/// [`finish`].
pub struct Step {
    opened: Opened,
    viewer: Option<Seat>,
    events: Vec<Event>,
}

impl Step {
    /// The match it moves (what the search queue shares turns by).
    pub fn match_id(&self) -> MatchId {
        self.opened.match_id
    }

    /// Whether finishing it may run a HARD bot's search (milliseconds of CPU): then the
    /// service runs [`finish`] off the async workers.
    pub fn searches(&self) -> bool {
        self.opened.game.phase() == Phase::Playing
            && self.opened.seats.bots().contains(&Some(Level::Hard))
    }
}

/// Applies one move to the match in `token`, by the request holding `credential`: it
/// must be the credential of `seat` (the seat acting, if any) and of the viewer. A
/// refused call keeps nothing: its token, if it comes again, is opened by the cipher.
pub(super) fn act(
    tokens: &Tokens,
    token: &[u8],
    viewer: Option<u32>,
    credential: &[u8],
    seat: Option<u32>,
    action: impl FnOnce(&Record, Option<Seat>) -> Result<Action, ApiError>,
) -> Result<Step, ApiError> {
    let (mut opened, viewer) = open(tokens, token, viewer, credential)?;
    let seat = seat
        .map(|s| seat_in(s, opened.game.rules(), "seat"))
        .transpose()?;
    authorize(&opened.seats, seat, credential)?;
    let action = action(&opened, seat)?;
    let previous = opened.state_id();
    let mut events = Vec::with_capacity(8);
    opened.game.apply(action, &mut events)?;
    opened.previous = Some(previous);
    Ok(Step {
        opened,
        viewer,
        events,
    })
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
    stop: &dyn Fn() -> bool,
) -> Result<Option<Answer>, ApiError> {
    let Step {
        mut opened,
        viewer,
        mut events,
    } = step;
    let bots = opened.seats.bots();
    let mut played = suggest::BotsPlayed::default();
    if opened.game.phase() == Phase::Playing && bots.iter().any(Option::is_some) {
        let search = policy.bot_search;
        match suggest::play_bots_until(&mut opened.game, &bots, search, &mut events, stop)? {
            Some(bots_played) => played = bots_played,
            None => return Ok(None),
        }
    }
    let mut answer = answer(tokens, opened, viewer, &events)?;
    answer.bot_worlds = played.hard_worlds;
    Ok(Some(answer))
}
