//! One handler per RPC, each: parse the request, open the token, check the request's
//! right to the seat it names, apply the engine (and the bots that come on turn), seal
//! the new token, render the view.
//!
//! Order matters for what a refusal may tell: request fields are read first (they say
//! nothing about the match), then the token, then the seat's credential (which depends
//! only on the seats), and only then the move, so a request that may not act or look
//! for a seat is refused before anything that depends on hidden tiles is looked at.

use crate::engine::suggest::{self, Level, Search};
use crate::engine::{Action, Event, Game, Knowledge, Phase, Seat};
use crate::proto::v1 as pb;
use crate::state::names::Names;
use crate::state::seats::CREDENTIAL_LEN;
use crate::state::{self, MATCH_ID_LEN, Opened, Player, Record, Seats, StateId, Tokens};

use super::convert::{
    Table, end_in, event_out, level_in, rules_in, seat_in, sheet_out, suggestion_out, tile_in,
    view_out, viewer_in, worlds_in,
};
use super::status::ApiError;
use crate::state::MatchId;
use crate::store::Move;
use crate::store::invites::{CANDIDATES, Code};

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

/// A match id in lower-case hex, written on the stack: no formatting machinery and no
/// allocation (this runs on every call).
struct Hex([u8; 2 * MATCH_ID_LEN]);

impl Hex {
    fn new(bytes: &[u8; MATCH_ID_LEN]) -> Hex {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 2 * MATCH_ID_LEN];
        for (pair, &b) in out.chunks_exact_mut(2).zip(bytes) {
            pair[0] = DIGITS[usize::from(b >> 4)];
            pair[1] = DIGITS[usize::from(b & 0xf)];
        }
        Hex(out)
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("hex digits are ASCII")
    }
}

/// Random bytes for match ids and deal seeds, from the thread's `ThreadRng`
/// ([`state::random`]).
fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    state::random::fill(&mut bytes);
    bytes
}

fn random_seed() -> u64 {
    u64::from_le_bytes(random_bytes())
}

/// Random bytes for a match's secret or a seat's credential, from the operating system.
fn secret_bytes<const N: usize>() -> Result<[u8; N], ApiError> {
    let mut bytes = [0u8; N];
    state::random::fill_secret(&mut bytes)
        .map_err(|_| ApiError::Token(state::TokenError::Random))?;
    Ok(bytes)
}

/// The view of `opened` for `viewer`, with its match id, state ids and seats.
fn render(opened: &Opened, viewer: Option<Seat>) -> Result<pb::GameView, ApiError> {
    let previous = opened.previous;
    Ok(view_out(
        &opened.game.view(viewer)?,
        &Table {
            match_id: Hex::new(&opened.match_id).as_str(),
            state_id: &opened.state_id(),
            previous_state_id: previous.as_ref().map_or(&[], |id| id.as_slice()),
            seats: &opened.seats,
            names: &opened.names,
        },
    ))
}

/// Seals the match and renders it for `viewer`, with `events` redacted for that
/// viewer; the match is then kept under its new token for the call that brings it back.
fn answer(
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
fn authorize(seats: &Seats, seat: Option<Seat>, credential: &[u8]) -> Result<(), ApiError> {
    match seat {
        Some(seat) => Ok(seats.authorize(seat, credential)?),
        None => Ok(()),
    }
}

/// Opens the token and reads the viewer against its rules, and the credential
/// against the viewer.
fn open(
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
    pub fn match_id(&self) -> [u8; MATCH_ID_LEN] {
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
fn act(
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

pub fn new_game(
    tokens: &Tokens,
    policy: &Policy,
    req: &pb::NewGameRequest,
) -> Result<Answer, ApiError> {
    let rules = rules_in(req.rules.as_ref())?;
    let viewer = viewer_in(req.viewer, &rules)?;
    let seed = match req.seed {
        Some(_) if !policy.allow_client_seeds => return Err(ApiError::SeedNotAllowed),
        Some(seed) => seed,
        None => random_seed(),
    };
    let mut seats = Seats::OPEN;
    let mut names = Names::default();
    let mut credentials = Vec::new();
    match req.seats.len() {
        0 => {}
        n if n == rules.players => {
            for (seat, (slot, setup)) in seats.0.iter_mut().zip(&req.seats).enumerate() {
                if !setup.display_name.is_empty() {
                    if !setup.claim {
                        return Err(ApiError::field(
                            "seats.display_name",
                            "only a seat claimed in this call is named in it",
                        ));
                    }
                    names.0[seat] = display_name_in(&setup.display_name, "seats.display_name")?;
                }
                *slot =
                    match (setup.bot, setup.claim) {
                        (0, false) => Player::Open,
                        (0, true) => {
                            let credential = secret_bytes::<CREDENTIAL_LEN>()?;
                            credentials.push(pb::SeatCredential {
                                seat: seat as u32,
                                credential: credential.to_vec(),
                            });
                            Player::Human(credential)
                        }
                        (level, false) => Player::Bot(level_in(level).map_err(|_| {
                            ApiError::field("seats.bot", "not a known BotLevel value")
                        })?),
                        (_, true) => {
                            return Err(ApiError::field(
                                "seats.claim",
                                "a bot's seat has no credential to claim",
                            ));
                        }
                    };
            }
        }
        _ => {
            return Err(ApiError::field(
                "seats",
                "one entry per player, in seat order (or none: every seat open)",
            ));
        }
    }
    if let Some(v) = viewer
        && !matches!(seats.0[v], Player::Human(_))
    {
        return Err(ApiError::field(
            "viewer",
            "a new match is shown only to a seat claimed in the same call",
        ));
    }
    let opened = Opened::new(Record {
        match_id: random_bytes::<MATCH_ID_LEN>(),
        game: Game::new(rules, seed)?,
        seats,
        secret: secret_bytes()?,
        previous: None,
        stored: policy.match_store,
        names,
    });
    let mut answer = answer(tokens, opened, viewer, &[])?;
    answer.credentials = credentials;
    Ok(answer)
}

/// A seat claimed: the answer, and the seat's new credential.
pub fn claim_seat(
    tokens: &Tokens,
    policy: &Policy,
    req: &pb::ClaimSeatRequest,
) -> Result<(Answer, pb::SeatCredential), ApiError> {
    let mut opened = tokens.open(&req.state)?;
    let rules = *opened.game.rules();
    let seat = seat_in(req.seat, &rules, "seat")?;
    let name = display_name_in(&req.display_name, "display_name")?;
    if !req.claim_key.is_empty() && matches!(opened.seats.0[seat], Player::Human(_)) {
        // This very claim, made again after the match moved on (its answer was lost,
        // and another device went on from it): the key gives the credential the seat
        // holds, so its claimer gets it back, with the match as it is (nothing moves).
        let claimed = state::claim::derive(&opened.secret, seat, claim_key_in(&req.claim_key)?);
        if opened.seats.authorize(seat, &claimed.credential).is_ok() {
            let answer = answer(tokens, opened, Some(seat), &[])?;
            let credential = pb::SeatCredential {
                seat: seat as u32,
                credential: claimed.credential.to_vec(),
            };
            return Ok((answer, credential));
        }
    }
    if opened.game.hand_number() != 0 {
        return Err(ApiError::Rules(crate::engine::Error::WrongPhase {
            phase: opened.game.phase(),
        }));
    }
    if opened.seats.0[seat] != Player::Open {
        return Err(ApiError::SeatTaken(seat));
    }
    // A claim in another branch (an older token) must not deal the hands of this one,
    // so each claim makes the seed anew (nothing has been dealt yet): drawn, or with a
    // claim key derived from it (the same claim again makes the same state).
    let (credential, seed) = if req.claim_key.is_empty() {
        (secret_bytes::<CREDENTIAL_LEN>()?, random_seed())
    } else {
        let claimed = state::claim::derive(&opened.secret, seat, claim_key_in(&req.claim_key)?);
        (claimed.credential, claimed.seed)
    };
    let previous = opened.state_id();
    if !policy.allow_client_seeds {
        opened.game = Game::new(rules, seed)?;
    }
    opened.seats.0[seat] = Player::Human(credential);
    opened.names.0[seat] = name;
    opened.previous = Some(previous);
    let answer = answer(tokens, opened, Some(seat), &[])?;
    let credential = pb::SeatCredential {
        seat: seat as u32,
        credential: credential.to_vec(),
    };
    Ok((answer, credential))
}

/// A display name as the request gives it (see `state::names`), or the field's refusal.
fn display_name_in(name: &str, field: &'static str) -> Result<String, ApiError> {
    match state::names::refusal(name) {
        None => Ok(name.to_owned()),
        Some(why) => Err(ApiError::field(field, why)),
    }
}

/// A claim key as the request gives it: 16 to 64 bytes, not one byte repeated (a
/// buffer the client forgot to fill).
fn claim_key_in(key: &[u8]) -> Result<&[u8], ApiError> {
    use state::claim::{MAX_KEY_LEN, MIN_KEY_LEN};
    if !(MIN_KEY_LEN..=MAX_KEY_LEN).contains(&key.len()) {
        return Err(ApiError::field(
            "claim_key",
            "a claim key is 16 to 64 random bytes",
        ));
    }
    if key.iter().all(|&b| b == key[0]) {
        return Err(ApiError::field(
            "claim_key",
            "a claim key is random bytes, not one byte repeated",
        ));
    }
    Ok(key)
}

pub fn deal(tokens: &Tokens, req: &pb::DealRequest) -> Result<Step, ApiError> {
    act(
        tokens,
        &req.state,
        req.viewer,
        &req.credential,
        None,
        |record, _| {
            let players = record.game.rules().players;
            if record.game.hand_number() == 0 && record.seats.any_open(players) {
                return Err(ApiError::SeatsOpen);
            }
            Ok(Action::Deal)
        },
    )
}

pub fn play(tokens: &Tokens, req: &pb::PlayRequest) -> Result<Step, ApiError> {
    let tile = tile_in(req.tile.as_ref())?;
    let end = end_in(req.end)?;
    act(
        tokens,
        &req.state,
        req.viewer,
        &req.credential,
        Some(req.seat),
        |_, seat| {
            Ok(Action::Play {
                seat: seat.unwrap_or_default(),
                tile,
                end,
            })
        },
    )
}

pub fn draw(tokens: &Tokens, req: &pb::DrawRequest) -> Result<Step, ApiError> {
    act(
        tokens,
        &req.state,
        req.viewer,
        &req.credential,
        Some(req.seat),
        |_, seat| {
            Ok(Action::Draw {
                seat: seat.unwrap_or_default(),
            })
        },
    )
}

pub fn score(tokens: &Tokens, req: &pb::ScoreRequest) -> Result<pb::ScoreResponse, ApiError> {
    let (opened, viewer) = open(tokens, &req.state, req.viewer, &req.credential)?;
    let game = &opened.game;
    let rules = game.rules();
    let hand_events = match req.include_hand_events {
        true => game
            .hand_events()
            .into_iter()
            .map(|e| event_out(rules, e, viewer))
            .collect(),
        false => Vec::new(),
    };
    let response = pb::ScoreResponse {
        sheet: Some(sheet_out(rules, game.sheet(), game.winner())),
        view: Some(render(&opened, viewer)?),
        hand_events,
    };
    tokens.keep(opened);
    Ok(response)
}

/// A Watch request, read: the match, the seat and its credential, the last state the
/// device saw, and whether its changes carry tokens (not to a spectator who named the
/// match by its id only: it holds no token of the match).
#[derive(Clone, Debug)]
pub struct Watch {
    pub match_id: [u8; MATCH_ID_LEN],
    viewer: Option<u32>,
    credential: Vec<u8>,
    pub last_seen: Option<StateId>,
    with_tokens: bool,
}

/// Reads a Watch request: a token of the match (opened: it must be one of ours) or its
/// id; the viewer and credential are checked against the match's latest state
/// ([`watched`]).
pub fn watch_in(tokens: &Tokens, req: &pb::WatchRequest) -> Result<Watch, ApiError> {
    let match_id = match (req.state.is_empty(), req.match_id.is_empty()) {
        (false, _) => tokens.open(&req.state)?.match_id,
        (true, false) => match_id_in(&req.match_id)?,
        (true, true) => {
            return Err(ApiError::field(
                "match_id",
                "name the match: a token of it in `state`, or its id",
            ));
        }
    };
    let last_seen = match req.last_state_id.len() {
        0 => None,
        _ => Some(
            StateId::try_from(req.last_state_id.as_slice()).map_err(|_| {
                ApiError::field(
                    "last_state_id",
                    "a state id is 16 bytes (GameView.state_id)",
                )
            })?,
        ),
    };
    Ok(Watch {
        match_id,
        viewer: req.viewer,
        // Kept for the stream's life, and checked only for a viewer.
        credential: match req.viewer {
            Some(_) => req.credential.clone(),
            None => Vec::new(),
        },
        last_seen,
        with_tokens: !req.state.is_empty() || req.viewer.is_some(),
    })
}

/// A match id as `GameView.match_id` shows it: 32 lower-case hex digits.
fn match_id_in(hex: &str) -> Result<[u8; MATCH_ID_LEN], ApiError> {
    let bad = || {
        ApiError::field(
            "match_id",
            "a match id is 32 hex digits (GameView.match_id)",
        )
    };
    let bytes = hex.as_bytes();
    if bytes.len() != 2 * MATCH_ID_LEN || !bytes.iter().all(u8::is_ascii_hexdigit) {
        return Err(bad());
    }
    let mut id = [0u8; MATCH_ID_LEN];
    for (byte, pair) in id.iter_mut().zip(bytes.chunks_exact(2)) {
        let digits = std::str::from_utf8(pair).map_err(|_| bad())?;
        *byte = u8::from_str_radix(digits, 16).map_err(|_| bad())?;
    }
    Ok(id)
}

/// The change a watcher is told of: the head's token (`token`) as `watch`'s viewer
/// sees it, with the last `events` events of the current hand (the move that made
/// it), or with `catch_up` every event of the hand so far. Refused as the other calls
/// refuse a viewer whose credential does not hold.
pub fn watched(
    tokens: &Tokens,
    watch: &Watch,
    token: &[u8],
    events: u32,
    catch_up: bool,
) -> Result<pb::WatchChange, ApiError> {
    let (opened, viewer) = open(tokens, token, watch.viewer, &watch.credential)?;
    if opened.match_id != watch.match_id {
        return Err(ApiError::Token(state::TokenError::Corrupt));
    }
    let game = &opened.game;
    let rules = game.rules();
    let hand = game.hand_events();
    let since = match catch_up {
        true => 0,
        false => hand.len().saturating_sub(events as usize),
    };
    let change = pb::WatchChange {
        state: match watch.with_tokens {
            true => token.to_vec(),
            false => Vec::new(),
        },
        view: Some(render(&opened, viewer)?),
        events: hand[since..]
            .iter()
            .map(|&e| event_out(rules, e, viewer))
            .collect(),
        catch_up,
    };
    tokens.keep(opened);
    Ok(change)
}

/// A CreateInviteCode request read: the match, once the token opened and the viewer's
/// credential holds (the match's latest state, from the store, is what
/// [`invitable`] then checks).
pub fn invite_in(tokens: &Tokens, req: &pb::CreateInviteCodeRequest) -> Result<MatchId, ApiError> {
    let (opened, _) = open(tokens, &req.state, Some(req.viewer), &req.credential)?;
    Ok(opened.match_id)
}

/// Whether the match in `token` (its latest state) takes a friend: not dealt yet, and a
/// human seat open.
pub fn invitable(tokens: &Tokens, token: &[u8]) -> Result<(), ApiError> {
    let opened = tokens.open(token)?;
    let takes = takes_a_friend(&opened);
    tokens.keep(opened);
    takes
}

fn takes_a_friend(opened: &Opened) -> Result<(), ApiError> {
    if opened.game.hand_number() != 0 {
        return Err(ApiError::Rules(crate::engine::Error::WrongPhase {
            phase: opened.game.phase(),
        }));
    }
    if !opened.seats.any_open(opened.game.rules().players) {
        return Err(ApiError::NoOpenSeat);
    }
    Ok(())
}

/// Fresh random codes for a match's first ask, from the operating system (a code is a
/// secret, as a credential is).
pub fn invite_candidates() -> Result<[Code; CANDIDATES], ApiError> {
    let bytes: [u8; 8 * CANDIDATES] = secret_bytes()?;
    let mut codes = [Code::from_random([0; 8]); CANDIDATES];
    for (code, chunk) in codes.iter_mut().zip(bytes.chunks_exact(8)) {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(chunk);
        *code = Code::from_random(eight);
    }
    Ok(codes)
}

/// An invite code as typed (`store::invites::Code::parse`), or the field's refusal.
pub fn code_in(typed: &str) -> Result<Code, ApiError> {
    Code::parse(typed).ok_or(ApiError::field(
        "code",
        "an invite code is 12 letters and digits (CreateInviteCodeResponse.code)",
    ))
}

/// OpenInviteCode's answer from the match's latest token: the token and the public
/// view, if the match still takes a friend; else the code is as good as gone
/// (`INVITE_NOT_FOUND`, as for a code nobody made).
pub fn invite_opened(
    tokens: &Tokens,
    token: &[u8],
) -> Result<pb::OpenInviteCodeResponse, ApiError> {
    let opened = tokens.open(token)?;
    if takes_a_friend(&opened).is_err() {
        return Err(ApiError::InviteNotFound);
    }
    let view = render(&opened, None)?;
    tokens.keep(opened);
    Ok(pb::OpenInviteCodeResponse {
        state: token.to_vec(),
        view: Some(view),
    })
}

/// The most worlds a HARD Suggest samples, whatever it asks for (up to 1024 may be
/// asked; the answer's `worlds` says how many were sampled). The latency budget's: a
/// call should answer within 100 ms, and at the costliest position (a two-player
/// lead) a world costs up to about 20 µs of CPU on the reference machine, so 512
/// worlds are about 10 ms: a player's search, which a flood's do not go before
/// (`searches`), still answers well within the budget (docs/BOTS.md).
pub const SUGGEST_MAX_WORLDS: u32 = 512;

/// A bot's advice to the seat on turn, from that seat's knowledge only (the engine's
/// `suggest` never sees the game), for the holder of that seat's credential. Changes
/// nothing. A HARD search samples at most [`SUGGEST_MAX_WORLDS`] worlds.
pub fn suggest(tokens: &Tokens, req: &pb::SuggestRequest) -> Result<pb::SuggestResponse, ApiError> {
    match ask(tokens, req)?.search_until(&|| false)? {
        Some(answer) => Ok(answer),
        None => unreachable!("only a stop that says so ends a search early"),
    }
}

/// A Suggest up to its search: the request read, the token opened and the seat's
/// credential checked, so that a HARD search enters the search queue only for a call
/// that may search, and under its match ([`Asked::match_id`]).
pub struct Asked {
    match_id: [u8; MATCH_ID_LEN],
    knowledge: Knowledge,
    level: Level,
    worlds: Option<u32>,
    seed: u64,
}

/// The first half of [`suggest`]: everything a Suggest may be refused for.
pub fn ask(tokens: &Tokens, req: &pb::SuggestRequest) -> Result<Asked, ApiError> {
    let level = level_in(req.level)?;
    let worlds = worlds_in(req.worlds)?.map(|w| w.min(SUGGEST_MAX_WORLDS));
    let opened = tokens.open(&req.state)?;
    let seat = seat_in(req.seat, opened.game.rules(), "seat")?;
    opened.seats.authorize(seat, &req.credential)?;
    let knowledge = opened.game.knowledge(seat)?;
    let match_id = opened.match_id;
    tokens.keep(opened);
    Ok(Asked {
        match_id,
        knowledge,
        level,
        worlds,
        seed: req.seed.unwrap_or(0),
    })
}

impl Asked {
    /// The match whose seat asked.
    pub fn match_id(&self) -> [u8; MATCH_ID_LEN] {
        self.match_id
    }

    /// The second half of [`suggest`]: the search, asking `stop` before each world
    /// whether to give up (`Ok(None)` when it said so).
    pub fn search_until(
        &self,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<pb::SuggestResponse>, ApiError> {
        let search = Search::worlds(self.worlds);
        let Some(suggestion) =
            suggest::suggest_until(&self.knowledge, self.level, search, self.seed, stop)?
        else {
            return Ok(None);
        };
        Ok(Some(suggestion_out(&suggestion, self.level, self.worlds)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lower_case_two_digits_a_byte() {
        let mut id = [0u8; MATCH_ID_LEN];
        id[..4].copy_from_slice(&[0x00, 0x0f, 0xa5, 0xff]);
        id[MATCH_ID_LEN - 1] = 0x10;
        let hex = Hex::new(&id);
        assert_eq!(hex.as_str().len(), 2 * MATCH_ID_LEN);
        assert!(hex.as_str().starts_with("000fa5ff00"));
        assert!(hex.as_str().ends_with("0010"));
    }

    fn ring() -> std::sync::Arc<crate::state::KeyRing> {
        std::sync::Arc::new(crate::state::KeyRing::new(vec![(1, [3; 32])], None).unwrap())
    }

    fn tokens() -> Tokens {
        Tokens::new(ring(), 64)
    }

    /// A server's policy that takes client seeds, as the tests' servers do.
    const SEEDED: Policy = Policy {
        allow_client_seeds: true,
        bot_search: Search {
            worlds: 16,
            horizon: None,
        },
        match_store: false,
    };

    /// A hot-seat match of `players` (every seat claimed in NewGame), seeded.
    fn hot_seat(players: u32, seed: u64) -> pb::NewGameRequest {
        pb::NewGameRequest {
            rules: Some(pb::Rules {
                players,
                ..Default::default()
            }),
            seed: Some(seed),
            viewer: None,
            seats: vec![
                pb::SeatSetup {
                    bot: 0,
                    claim: true,
                    display_name: String::new(),
                };
                players as usize
            ],
        }
    }

    /// The credentials NewGame answered, by seat.
    fn credentials(answer: &Answer) -> Vec<Vec<u8>> {
        let mut out = vec![Vec::new(); 4];
        for c in &answer.credentials {
            out[c.seat as usize] = c.credential.clone();
        }
        out
    }

    fn dealt(tokens: &Tokens, state: &[u8]) -> Answer {
        let req = pb::DealRequest {
            state: state.to_vec().into(),
            ..Default::default()
        };
        finish(tokens, &SEEDED, deal(tokens, &req).unwrap()).unwrap()
    }

    fn look(tokens: &Tokens, state: &[u8], seat: Option<u32>, credential: &[u8]) -> pb::GameView {
        score(
            tokens,
            &pb::ScoreRequest {
                state: state.to_vec().into(),
                viewer: seat,
                credential: credential.to_vec(),
                include_hand_events: false,
            },
        )
        .unwrap()
        .view
        .unwrap()
    }

    fn played(
        tokens: &Tokens,
        state: &[u8],
        seat: u32,
        m: pb::LegalMove,
        credential: &[u8],
    ) -> Result<Answer, ApiError> {
        let req = pb::PlayRequest {
            state: state.to_vec().into(),
            seat,
            tile: m.tile,
            end: m.end,
            viewer: Some(seat),
            credential: credential.to_vec(),
        };
        finish(tokens, &SEEDED, play(tokens, &req)?)
    }

    #[test]
    fn a_game_goes_new_deal_play_through_the_handlers() {
        let tokens = tokens();
        let mut req = hot_seat(2, 1);
        req.viewer = Some(0);
        let new = new_game(&tokens, &SEEDED, &req).unwrap();
        assert!(new.events.is_empty());
        assert_eq!(new.view.viewer, Some(0));
        assert_eq!(new.credentials.len(), 2);
        assert!(new.view.previous_state_id.is_empty());
        assert_eq!(new.view.state_id.len(), 16);
        let creds = credentials(&new);
        let dealt = dealt(&tokens, &new.state);
        assert_eq!(dealt.view.previous_state_id, new.view.state_id);
        let turn = dealt.view.turn.unwrap();
        assert!(dealt.view.hand.is_empty(), "a spectator sees no hand");
        let seen = look(&tokens, &dealt.state, Some(turn), &creds[turn as usize]);
        assert_eq!(seen.hand.len(), 9);
        assert_eq!(
            seen.state_id, dealt.view.state_id,
            "Score shows the same state"
        );
        let lead = seen.legal_moves[0];
        let after = played(&tokens, &dealt.state, turn, lead, &creds[turn as usize]).unwrap();
        assert_eq!(after.view.layout.len(), 1);
        assert_eq!(after.view.layout[0].seat, turn);
        assert_eq!(after.view.moves, 2);
        assert!(after.state.len() <= 512);
        // The other seat's credential does not open the seat on turn, nor none.
        let other = &creds[1 - turn as usize];
        assert!(matches!(
            played(&tokens, &dealt.state, turn, lead, other),
            Err(ApiError::Denied(crate::state::Denied::CredentialInvalid(_)))
        ));
        assert!(matches!(
            played(&tokens, &dealt.state, turn, lead, &[]),
            Err(ApiError::Denied(crate::state::Denied::CredentialRequired(
                _
            )))
        ));
    }

    #[test]
    fn a_retried_move_has_the_same_state_id_and_another_move_another() {
        let tokens = Tokens::uncached(ring());
        let new = new_game(&tokens, &SEEDED, &hot_seat(2, 9)).unwrap();
        let creds = credentials(&new);
        let dealt = dealt(&tokens, &new.state);
        let turn = dealt.view.turn.unwrap();
        let cred = &creds[turn as usize];
        let seen = look(&tokens, &dealt.state, Some(turn), cred);
        let (a, b) = (seen.legal_moves[0], seen.legal_moves[1]);
        let first = played(&tokens, &dealt.state, turn, a, cred).unwrap();
        let again = played(&tokens, &dealt.state, turn, a, cred).unwrap();
        let other = played(&tokens, &dealt.state, turn, b, cred).unwrap();
        assert_ne!(first.state, again.state, "every token is sealed anew");
        assert_eq!(first.view.state_id, again.view.state_id);
        assert_ne!(first.view.state_id, other.view.state_id);
        assert_eq!(first.view.previous_state_id, dealt.view.state_id);
        assert_eq!(other.view.previous_state_id, dealt.view.state_id);
    }

    #[test]
    fn seeds_are_refused_unless_the_server_allows_them() {
        let tokens = tokens();
        let policy = Policy::default();
        assert_eq!(
            new_game(&tokens, &policy, &hot_seat(2, 1)).err(),
            Some(ApiError::SeedNotAllowed)
        );
        let mut req = hot_seat(2, 1);
        req.seed = None;
        assert!(new_game(&tokens, &policy, &req).is_ok());
    }

    #[test]
    fn seats_are_claimed_once_before_the_deal_and_each_claim_reseeds() {
        let tokens = Tokens::uncached(ring());
        let policy = Policy::default();
        let new = new_game(
            &tokens,
            &policy,
            &pb::NewGameRequest {
                seats: vec![
                    pb::SeatSetup {
                        bot: 0,
                        claim: true,
                        display_name: String::new(),
                    },
                    pb::SeatSetup::default(),
                ],
                ..Default::default()
            },
        )
        .unwrap();
        let deal_now = |state: &[u8]| {
            deal(
                &tokens,
                &pb::DealRequest {
                    state: state.to_vec().into(),
                    ..Default::default()
                },
            )
            .map(|_| ())
        };
        assert_eq!(deal_now(&new.state).err(), Some(ApiError::SeatsOpen));
        let claim = |state: &[u8], seat| {
            claim_seat(
                &tokens,
                &policy,
                &pb::ClaimSeatRequest {
                    state: state.to_vec(),
                    seat,
                    ..Default::default()
                },
            )
            .map(|(answer, credential)| pb::ClaimSeatResponse {
                state: answer.state,
                credential: Some(credential),
                view: Some(answer.view),
            })
        };
        assert_eq!(claim(&new.state, 0).err(), Some(ApiError::SeatTaken(0)));
        let a = claim(&new.state, 1).unwrap();
        let b = claim(&new.state, 1).unwrap();
        // Two claims of one seat from one token: two branches, two credentials, and
        // two seeds, so neither branch's holder learns the other's hands.
        assert_ne!(a.credential, b.credential);
        assert_ne!(
            a.view.as_ref().unwrap().state_id,
            b.view.as_ref().unwrap().state_id
        );
        let seed = |state: &[u8]| tokens.open(state).unwrap().game.seed();
        assert_ne!(seed(&a.state), seed(&b.state));
        assert_ne!(seed(&a.state), seed(&new.state));
        assert!(deal_now(&a.state).is_ok());
        let after = dealt(&tokens, &a.state);
        assert!(matches!(
            claim(&after.state, 1),
            Err(ApiError::Rules(crate::engine::Error::WrongPhase { .. }))
        ));
        // The claimed credential is the seat's: it sees its hand.
        let cred = a.credential.unwrap().credential;
        assert_eq!(look(&tokens, &after.state, Some(1), &cred).hand.len(), 9);
    }

    #[test]
    fn bots_play_within_the_call_until_a_human_is_on_turn() {
        let tokens = tokens();
        for seed in 0..20 {
            let hard = pb::SeatSetup {
                bot: pb::BotLevel::Hard as i32,
                claim: false,
                display_name: String::new(),
            };
            let me = pb::SeatSetup {
                bot: 0,
                claim: true,
                display_name: String::new(),
            };
            let new = new_game(
                &tokens,
                &SEEDED,
                &pb::NewGameRequest {
                    rules: Some(pb::Rules {
                        players: 4,
                        ..Default::default()
                    }),
                    seed: Some(seed),
                    viewer: Some(0),
                    seats: vec![me.clone(), hard.clone(), hard.clone(), hard.clone()],
                },
            )
            .unwrap();
            let answer = dealt(&tokens, &new.state);
            let view = answer.view;
            assert!(
                view.turn == Some(0) || view.phase != pb::Phase::Playing as i32,
                "seed {seed}: {view:?}"
            );
            assert_eq!(view.seats[1].kind, pb::SeatKind::Bot as i32);
            // Every bot move is in the events, in order, after the deal.
            let played = answer
                .events
                .iter()
                .filter(|e| matches!(e.kind, Some(pb::event::Kind::TilePlayed(_))))
                .count();
            assert_eq!(played, view.layout.len(), "seed {seed}");
            // Nobody may act or look for a bot's seat.
            let creds = credentials(&new);
            let req = pb::ScoreRequest {
                state: answer.state.clone().into(),
                viewer: Some(1),
                credential: creds[0].clone(),
                include_hand_events: false,
            };
            assert_eq!(
                score(&tokens, &req).err(),
                Some(ApiError::Denied(crate::state::Denied::SeatIsBot(1)))
            );
        }
    }

    #[test]
    fn score_answers_the_hands_events_redacted_for_its_viewer() {
        let tokens = tokens();
        let new = new_game(&tokens, &SEEDED, &hot_seat(2, 4)).unwrap();
        let creds = credentials(&new);
        let mut state = dealt(&tokens, &new.state).state;
        let mut all = Vec::new();
        for _ in 0..12 {
            let view = look(&tokens, &state, None, &[]);
            let Some(turn) = view.turn else { break };
            let cred = &creds[turn as usize];
            let seen = look(&tokens, &state, Some(turn), cred);
            let answer = if seen.must_draw {
                let req = pb::DrawRequest {
                    state: state.clone().into(),
                    seat: turn,
                    viewer: None,
                    credential: cred.clone(),
                };
                finish(&tokens, &SEEDED, draw(&tokens, &req).unwrap()).unwrap()
            } else {
                let req = pb::PlayRequest {
                    state: state.clone().into(),
                    seat: turn,
                    tile: seen.legal_moves[0].tile,
                    end: seen.legal_moves[0].end,
                    viewer: None,
                    credential: cred.clone(),
                };
                finish(&tokens, &SEEDED, play(&tokens, &req).unwrap()).unwrap()
            };
            all.extend(answer.events);
            state = answer.state;
        }
        let events = score(
            &tokens,
            &pb::ScoreRequest {
                state: state.into(),
                include_hand_events: true,
                ..Default::default()
            },
        )
        .unwrap()
        .hand_events;
        // The deal first, then exactly what the spectator was told move by move.
        assert!(matches!(events[0].kind, Some(pb::event::Kind::Dealt(_))));
        assert_eq!(events[1..], all[..]);
    }

    /// What an answer shows, without its token and match id (random in each).
    fn shown(answer: Result<Answer, ApiError>) -> Result<(pb::GameView, Vec<pb::Event>), String> {
        let Answer { view, events, .. } = answer.map_err(|e| format!("{e:?}"))?;
        Ok((
            pb::GameView {
                match_id: String::new(),
                ..view
            },
            events,
        ))
    }

    #[test]
    fn answers_are_the_same_with_the_cache_and_without() {
        let ring = ring();
        let (cached, uncached) = (
            Tokens::new(std::sync::Arc::clone(&ring), 64),
            Tokens::uncached(ring),
        );
        for players in 2..=4 {
            let new = hot_seat(players, u64::from(players));
            let (mut a, mut b) = (
                new_game(&cached, &SEEDED, &new).unwrap(),
                new_game(&uncached, &SEEDED, &new).unwrap(),
            );
            let (ca, cb) = (credentials(&a), credentials(&b));
            // Each match has its own secret, so its own state ids: compare the rest.
            let strip = |mut shown: Result<(pb::GameView, Vec<pb::Event>), String>| {
                if let Ok((view, _)) = shown.as_mut() {
                    view.state_id.clear();
                    view.previous_state_id.clear();
                }
                shown
            };
            for step in 0..2000 {
                let (sa, sb) = (a.state.clone(), b.state.clone());
                assert_eq!(
                    strip(shown(Ok(a))),
                    strip(shown(Ok(b))),
                    "{players} players, step {step}"
                );
                let view = look(&uncached, &sb, None, &[]);
                let Some(turn) = view.turn else {
                    if view.phase == pb::Phase::Over as i32 {
                        break;
                    }
                    (a, b) = (dealt(&cached, &sa), dealt(&uncached, &sb));
                    continue;
                };
                let t = turn as usize;
                // The seat on turn looks (Score keeps the game under the same token),
                // and every fifth step a seat out of turn tries a draw first.
                let seen = look(&cached, &sa, Some(turn), &ca[t]);
                let mut other = look(&uncached, &sb, Some(turn), &cb[t]);
                other.match_id.clone_from(&seen.match_id);
                other.state_id.clone_from(&seen.state_id);
                other.previous_state_id.clone_from(&seen.previous_state_id);
                assert_eq!(seen, other);
                if step % 5 == 0 {
                    let o = (t + 1) % players as usize;
                    let wrong = |tokens: &Tokens, state: &[u8], cred: &[u8]| {
                        draw(
                            tokens,
                            &pb::DrawRequest {
                                state: state.to_vec().into(),
                                seat: o as u32,
                                viewer: None,
                                credential: cred.to_vec(),
                            },
                        )
                        .map(|_| ())
                        .map_err(|e| format!("{e:?}"))
                    };
                    assert_eq!(wrong(&cached, &sa, &ca[o]), wrong(&uncached, &sb, &cb[o]));
                }
                (a, b) = if seen.must_draw {
                    let req = |state: Vec<u8>, cred: &[u8]| pb::DrawRequest {
                        state: state.into(),
                        seat: turn,
                        viewer: None,
                        credential: cred.to_vec(),
                    };
                    (
                        finish(&cached, &SEEDED, draw(&cached, &req(sa, &ca[t])).unwrap()).unwrap(),
                        finish(
                            &uncached,
                            &SEEDED,
                            draw(&uncached, &req(sb, &cb[t])).unwrap(),
                        )
                        .unwrap(),
                    )
                } else {
                    let m = seen.legal_moves[step % seen.legal_moves.len()];
                    (
                        played(&cached, &sa, turn, m, &ca[t]).unwrap(),
                        played(&uncached, &sb, turn, m, &cb[t]).unwrap(),
                    )
                };
            }
        }
        // Misses: the tokens of refused draws (a refused call keeps nothing).
        let (hits, misses) = cached.cache_counts();
        assert!(hits > 5 * misses, "{hits} hits, {misses} misses");
    }

    #[test]
    fn a_drawn_tile_is_shown_only_to_its_drawer() {
        let tokens = tokens();
        // Play seeded games until someone must draw; compare the drawer's and others' events.
        for seed in 0..50 {
            let new = new_game(&tokens, &SEEDED, &hot_seat(2, seed)).unwrap();
            let creds = credentials(&new);
            let mut state = dealt(&tokens, &new.state).state;
            for _ in 0..40 {
                let view = look(&tokens, &state, None, &[]);
                let Some(turn) = view.turn else { break };
                let cred = &creds[turn as usize];
                let seen = look(&tokens, &state, Some(turn), cred);
                if seen.must_draw {
                    let req = |viewer: Option<u32>| pb::DrawRequest {
                        state: state.clone().into(),
                        seat: turn,
                        viewer,
                        credential: cred.clone(),
                    };
                    let mine =
                        finish(&tokens, &SEEDED, draw(&tokens, &req(Some(turn))).unwrap()).unwrap();
                    let theirs =
                        finish(&tokens, &SEEDED, draw(&tokens, &req(None)).unwrap()).unwrap();
                    let drawn = |a: &Answer| match &a.events[0].kind {
                        Some(pb::event::Kind::TileDrawn(d)) => d.tile,
                        other => panic!("{other:?}"),
                    };
                    assert!(drawn(&mine).is_some());
                    assert_eq!(drawn(&theirs), None);
                    // And the other seat cannot ask to see the drawer's tile.
                    assert!(draw(&tokens, &req(Some(1 - turn))).is_err());
                    return;
                }
                state = played(&tokens, &state, turn, seen.legal_moves[0], cred)
                    .unwrap()
                    .state;
            }
        }
        panic!("no seat ever had to draw");
    }

    #[test]
    fn the_sheet_keeps_32_hands_and_carries_the_rest_forward() {
        use crate::engine::Rules;
        use crate::engine::bot::{Strategy, choose};
        use rand_chacha::ChaCha8Rng;
        use rand_chacha::rand_core::SeedableRng;

        let tokens = tokens();
        // Random players at a four-seat table under "own pips off" play long games.
        let mut game = Game::new(Rules::for_players(4), 2).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut scratch = Vec::new();
        while let Some(action) = choose(&game, Strategy::Random, &mut rng, &mut scratch) {
            game.apply(action, &mut Vec::new()).unwrap();
        }
        let hands = game.hand_number();
        assert!(hands > 32, "a long game: {hands} hands");
        let record = Record::new([1; MATCH_ID_LEN], game.clone());
        let token = tokens.seal(&mut Opened::new(record)).unwrap();
        assert!(token.len() <= 512, "{} bytes", token.len());
        let sheet = score(
            &tokens,
            &pb::ScoreRequest {
                state: token.into(),
                ..Default::default()
            },
        )
        .unwrap()
        .sheet
        .unwrap();
        assert_eq!(sheet.rows.len(), 32);
        let carried = sheet.carried.unwrap();
        assert_eq!((carried.first_hand, carried.last_hand), (1, hands - 32));
        assert_eq!(sheet.rows[0].first_hand, hands - 31);
        let last = sheet.rows.last().unwrap();
        assert_eq!(last.last_hand, hands);
        let totals: Vec<i32> = last.sides.iter().map(|s| s.total).collect();
        assert_eq!(totals, game.scores());
        assert_eq!(sheet.winner_side, game.winner().map(|w| w as u32));
    }
}
