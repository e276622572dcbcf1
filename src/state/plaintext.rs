//! A token's plaintext: the match as a scorekeeper writes it down
//! (`allfives.internal.v1.State`, encoded by prost), and back to a game by replaying
//! its hand through the engine ([`Game::replay`]).
//!
//! This module builds no engine internals: it writes what [`Game::scorecard`] gives
//! and hands what it reads to [`Game::replay`], which deals the hand from the seed and
//! applies each action by the rules, refusing any the rules refuse. So a game decoded
//! from a token, whatever key sealed it, is one that legal moves produced. Every
//! field's length is a function of public facts (see the proto), so a token's length
//! tells a player nothing it could not see.

use prost::Message;

use crate::engine::suggest::Level;
use crate::engine::{
    Absence, Clocks, End, Game, HandAction, HandSizeRule, ReplayError, Rules, Scorecard,
    SettlementRule, SheetRow, Tile, TurnClock, Why,
};
use crate::proto::internal as pb;

use super::lineage::{ID_LEN, StateId};
use super::names::{self, Names};
use super::player_id::{PADDED_LEN, PlayerId};
use super::seats::{CREDENTIAL_LEN, Player, Seats};
use super::token::{BEFORE_CLOCKS, BEFORE_PASSES, TOKEN_VERSION};

pub use super::match_id::{MATCH_ID_LEN, MatchId};
/// The room a plaintext's buffer starts with: enough for most (the buffer grows past
/// it). `tests/it/token_length.rs` saw plaintexts of up to 521 bytes without a clock
/// (a 551-byte token, named seats), and counts up to 811 for the largest match with a
/// clock there is (an 841-byte token).
pub const PLAINTEXT_CAPACITY: usize = 512;
/// The byte of a draw in `State.actions`; a play's byte is below 140.
const DRAW: u8 = 255;
/// The first byte of a forfeit in `State.actions`: `FORFEIT + 2 * seat + why`.
const FORFEIT: u8 = 240;

/// A match as carried by a token: the engine's game, the match id, who plays each
/// seat, the match's secret and the id of the state this one was made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub match_id: MatchId,
    pub game: Game,
    pub seats: Seats,
    /// The key of the match's state ids (`state::lineage`); never shown.
    pub secret: [u8; ID_LEN],
    /// The id of the state this one was made from; `None` for NewGame's.
    pub previous: Option<StateId>,
    /// Made on a server with a match store: moved only through its check
    /// (`crate::store`).
    pub stored: bool,
    /// The seats' display names (public: every view shows them).
    pub names: Names,
    /// With a turn clock (`game.rules().clock`): the clocks; `None` without one.
    pub clocks: Option<Clocks>,
    /// The player id of each seat whose player showed a studio's pass (`crate::passes`).
    pub player_ids: PlayerIds,
}

/// Each seat's player id, where its player showed a pass, in seat order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlayerIds(pub [Option<PlayerId>; 4]);

impl PlayerIds {
    /// Whether no seat holds a pass.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }

    /// A seat other than `seat` that `id` holds, if any.
    pub fn seat_of(&self, id: &PlayerId, seat: usize) -> Option<usize> {
        (0..self.0.len()).find(|&other| other != seat && self.0[other].as_ref() == Some(id))
    }
}

impl Record {
    /// A record of `game` for tests and tools: every seat a human's with an all-zero
    /// credential, a zero secret, an all-zero previous state. The service never makes
    /// one.
    pub fn new(match_id: MatchId, game: Game) -> Record {
        let mut seats = Seats::OPEN;
        for slot in &mut seats.0[..game.rules().players] {
            *slot = Player::Human([0; CREDENTIAL_LEN]);
        }
        Record {
            match_id,
            seats,
            secret: [0; ID_LEN],
            previous: Some([0; ID_LEN]),
            stored: false,
            names: Names::default(),
            clocks: game
                .rules()
                .clock
                .as_ref()
                .map(|c| Clocks::new(c, game.rules().players)),
            player_ids: PlayerIds::default(),
            game,
        }
    }

    /// The token format the record needs: the one before clocks unless it uses a
    /// clock, the absence option, a seat a bot holds or a forfeit; the newest if a seat
    /// holds a pass.
    pub fn version(&self) -> u8 {
        if !self.player_ids.is_empty() {
            return TOKEN_VERSION;
        }
        let rules = self.game.rules();
        let newer = rules.clock.is_some()
            || rules.absence != Absence::default()
            || self
                .seats
                .0
                .iter()
                .any(|p| matches!(p, Player::Held { .. }))
            || self.game.forfeit().is_some();
        if newer { BEFORE_PASSES } else { BEFORE_CLOCKS }
    }
}

/// Why a plaintext does not give a game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("the state is not a well-formed State message")]
    Malformed,
    #[error("the state is corrupt: {0}")]
    Corrupt(&'static str),
    #[error("the state does not replay: {0}")]
    Replay(ReplayError),
}

fn corrupt(what: &'static str) -> DecodeError {
    DecodeError::Corrupt(what)
}

/// Encodes a record as the token's plaintext.
pub fn encode(record: &Record) -> Vec<u8> {
    let mut buf = Vec::with_capacity(PLAINTEXT_CAPACITY);
    encode_into(record, &mut buf);
    buf
}

/// Appends a record's plaintext to `buf`.
pub fn encode_into(record: &Record, buf: &mut Vec<u8>) {
    let game = &record.game;
    let rules = game.rules();
    let sides = rules.sides();
    let card = game.scorecard();
    let mut sheet = Vec::with_capacity(card.rows.len() * 2 * sides);
    for row in card.rows {
        put_row(&mut sheet, row, sides);
    }
    let mut carried = Vec::new();
    if let Some(row) = &card.carried {
        put_row(&mut carried, row, sides);
    }
    let state = pb::State {
        seed: Some(game.seed()),
        match_id: record.match_id.0.to_vec(),
        rules: Some(rules_written(rules)),
        hand: card.hand,
        starter: card.starter.map(|s| s as u32),
        moves: card.moves,
        sheet,
        carried,
        actions: card.actions.iter().map(|&a| action_byte(a)).collect(),
        seats: record.seats.0[..rules.players]
            .iter()
            .map(|&p| seat_byte(p))
            .collect(),
        credentials: record.seats.0[..rules.players]
            .iter()
            .filter_map(|p| match p {
                Player::Human(credential) | Player::Held { credential, .. } => Some(credential),
                _ => None,
            })
            .flatten()
            .copied()
            .collect(),
        secret: record.secret.to_vec(),
        previous: record.previous.map_or_else(Vec::new, |id| id.to_vec()),
        stored: record.stored,
        names: match record.names.is_empty() {
            true => Vec::new(),
            false => record.names.0[..rules.players].to_vec(),
        },
        dealt_at: record.clocks.as_ref().map_or(0, |c| c.dealt_at),
        times: record
            .clocks
            .as_ref()
            .map_or_else(Vec::new, |c| c.times().to_vec()),
        banks: record
            .clocks
            .as_ref()
            .map_or_else(Vec::new, |c| c.banks[..rules.players].to_vec()),
        late: record
            .clocks
            .as_ref()
            .map_or_else(Vec::new, |c| c.late[..rules.players].to_vec()),
        pass_seats: (0..rules.players)
            .filter(|&seat| record.player_ids.0[seat].is_some())
            .map(|seat| 1 << seat)
            .sum(),
        player_ids: record.player_ids.0[..rules.players]
            .iter()
            .flatten()
            .flat_map(|id| id.padded())
            .collect(),
    };
    // A Vec grows as needed: encoding into it cannot fail.
    let _ = state.encode(buf);
}

/// A sheet row's values in fives: play per side, then settlement per side.
fn put_row(out: &mut Vec<i32>, row: &SheetRow, sides: usize) {
    out.extend(row.play[..sides].iter().map(|v| v / 5));
    out.extend(row.settlement[..sides].iter().map(|v| v / 5));
}

fn rules_written(rules: &Rules) -> pb::Rules {
    pb::Rules {
        players: rules.players as u32,
        partnership: rules.partnership,
        hand_size: match rules.hand_size {
            HandSizeRule::Standard => pb::HandSize::Standard,
            HandSizeRule::FiveEach => pb::HandSize::FiveEach,
            HandSizeRule::SevenFive => pb::HandSize::SevenFive,
        } as i32,
        target_fives: rules.target / 5,
        settlement: match rules.settlement {
            SettlementRule::OwnPipsOff => pb::Settlement::OwnPipsOff,
            SettlementRule::WinnerTakesPips => pb::Settlement::WinnerTakesPips,
        } as i32,
        clock: rules.clock.map(|c| pb::TurnClock {
            r#move: c.move_secs,
            bank: c.bank_secs,
            increment: c.increment_secs,
        }),
        absence: match rules.absence {
            a if a == Absence::default() => None,
            Absence::Forfeit => Some(pb::Absence {
                forfeit: true,
                bot: 0,
                takes_seat_after: 0,
            }),
            Absence::Bot {
                level,
                takes_seat_after,
            } => Some(pb::Absence {
                forfeit: false,
                bot: level_byte(level).into(),
                takes_seat_after: takes_seat_after.into(),
            }),
        },
    }
}

/// A bot level as a byte: 1 EASY, 2 MEDIUM, 3 HARD.
fn level_byte(level: Level) -> u8 {
    match level {
        Level::Easy => 1,
        Level::Medium => 2,
        Level::Hard => 3,
    }
}

fn level_read(byte: u32) -> Option<Level> {
    match byte {
        1 => Some(Level::Easy),
        2 => Some(Level::Medium),
        3 => Some(Level::Hard),
        _ => None,
    }
}

fn action_byte(action: HandAction) -> u8 {
    match action {
        HandAction::Draw => DRAW,
        HandAction::Play { tile, end } => {
            let arm = end.map_or(0, |e| e as u8 + 1);
            tile.index() * 5 + arm
        }
        HandAction::Forfeit { seat, why } => FORFEIT + 2 * seat as u8 + why_bit(why),
    }
}

fn why_bit(why: Why) -> u8 {
    match why {
        Why::TimedOut => 0,
        Why::Left => 1,
    }
}

fn seat_byte(player: Player) -> u8 {
    match player {
        Player::Open => 0,
        Player::Human(_) => 1,
        Player::Bot(Level::Easy) => 2,
        Player::Bot(Level::Medium) => 3,
        Player::Bot(Level::Hard) => 4,
        Player::Held { level, why, .. } => 4 + level_byte(level) + 3 * why_bit(why),
    }
}

/// The seats from `State.seats` and `State.credentials`.
fn seats_in(kinds: &[u8], credentials: &[u8], players: usize) -> Result<Seats, DecodeError> {
    if kinds.len() != players {
        return Err(corrupt("seats"));
    }
    let mut seats = Seats::OPEN;
    let mut credentials = credentials.chunks_exact(CREDENTIAL_LEN);
    for (seat, &kind) in seats.0.iter_mut().zip(kinds) {
        *seat = match kind {
            0 => Player::Open,
            1 => {
                let held = credentials.next().ok_or(corrupt("credentials"))?;
                Player::Human(held.try_into().map_err(|_| corrupt("credentials"))?)
            }
            2 => Player::Bot(Level::Easy),
            3 => Player::Bot(Level::Medium),
            4 => Player::Bot(Level::Hard),
            5..=10 => {
                let held = credentials.next().ok_or(corrupt("credentials"))?;
                Player::Held {
                    credential: held.try_into().map_err(|_| corrupt("credentials"))?,
                    level: level_read(u32::from((kind - 5) % 3 + 1)).ok_or(corrupt("seat"))?,
                    why: if kind >= 8 { Why::Left } else { Why::TimedOut },
                }
            }
            _ => return Err(corrupt("seat")),
        };
    }
    if credentials.next().is_some() || !credentials.remainder().is_empty() {
        return Err(corrupt("credentials"));
    }
    Ok(seats)
}

fn action_in(byte: u8) -> Result<HandAction, DecodeError> {
    if byte == DRAW {
        return Ok(HandAction::Draw);
    }
    if (FORFEIT..FORFEIT + 8).contains(&byte) {
        let n = byte - FORFEIT;
        let why = if n.is_multiple_of(2) {
            Why::TimedOut
        } else {
            Why::Left
        };
        return Ok(HandAction::Forfeit {
            seat: usize::from(n / 2),
            why,
        });
    }
    let tile = Tile::from_index(byte / 5).ok_or(corrupt("action"))?;
    let end = match byte % 5 {
        0 => None,
        n => Some(End::ALL[usize::from(n - 1)]),
    };
    Ok(HandAction::Play { tile, end })
}

/// Decodes a plaintext of the newest version and replays its hand: the game, or why
/// there is none.
pub fn decode(bytes: &[u8]) -> Result<Record, DecodeError> {
    decode_version(TOKEN_VERSION, bytes)
}

/// Decodes a plaintext of token version `version` and replays its hand: the game, or
/// why there is none. A version-4 token holds nothing of version 5's.
pub fn decode_version(version: u8, bytes: &[u8]) -> Result<Record, DecodeError> {
    let state = pb::State::decode(bytes).map_err(|_| DecodeError::Malformed)?;
    let rules = rules_read(state.rules.as_ref().ok_or(corrupt("no rules"))?)?;
    // Before the rules size anything below (a sheet row is 2 values a side).
    rules
        .validate()
        .map_err(|e| DecodeError::Replay(ReplayError::Rules(e)))?;
    let seed = state.seed.ok_or(corrupt("no seed"))?;
    let match_id = <[u8; MATCH_ID_LEN]>::try_from(state.match_id.as_slice())
        .map(MatchId)
        .map_err(|_| corrupt("match id"))?;
    let sides = rules.sides();
    let row_len = 2 * sides;
    if state.sheet.len() % row_len != 0 || state.sheet.len() > row_len * 64 {
        return Err(corrupt("sheet values"));
    }
    let full = state.sheet.len() / row_len;
    // The rows end with hand `hand - 1`; the engine checks that they are as many as
    // the hands played.
    let first = state
        .hand
        .checked_sub(full as u32)
        .ok_or(corrupt("sheet rows"))?;
    let mut rows = Vec::with_capacity(full);
    for (values, number) in state.sheet.chunks_exact(row_len).zip(first..) {
        rows.push(row_in(values, sides, number, number)?);
    }
    let carried = match state.carried.len() {
        0 => None,
        n if n == row_len => Some(row_in(&state.carried, sides, 1, first.saturating_sub(1))?),
        _ => return Err(corrupt("carried row")),
    };
    let mut actions = [HandAction::Draw; crate::engine::replay::MAX_HAND_ACTIONS];
    if state.actions.len() > actions.len() {
        return Err(corrupt("too many actions"));
    }
    for (slot, &byte) in actions.iter_mut().zip(&state.actions) {
        *slot = action_in(byte)?;
    }
    let card = Scorecard {
        hand: state.hand,
        starter: state.starter.map(|s| s as usize),
        moves: state.moves,
        carried,
        rows: &rows,
        actions: &actions[..state.actions.len()],
    };
    let seats = seats_in(&state.seats, &state.credentials, rules.players)?;
    let secret =
        <[u8; ID_LEN]>::try_from(state.secret.as_slice()).map_err(|_| corrupt("secret"))?;
    let previous = match state.previous.len() {
        0 => None,
        _ => Some(StateId::try_from(state.previous.as_slice()).map_err(|_| corrupt("previous"))?),
    };
    let clocks = clocks_in(&state, &rules, card.actions.len())?;
    let names = names_in(state.names, &seats, rules.players)?;
    let player_ids = player_ids_in(state.pass_seats, &state.player_ids, &seats, rules.players)?;
    let game = Game::replay(rules, seed, &card).map_err(DecodeError::Replay)?;
    // What the service never seals: a hand dealt to a seat nobody holds (Deal refuses
    // open seats), a state after NewGame's with no previous one, and a bot left on
    // turn (the service plays bots until a human is on turn or the hand ends).
    if state.hand > 0 && seats.any_open(rules.players) {
        return Err(corrupt("an open seat after the deal"));
    }
    if previous.is_none() && state.hand > 0 {
        return Err(corrupt("no previous state"));
    }
    if let Some(turn) = game.turn()
        && seats.bots()[turn].is_some()
    {
        return Err(corrupt("a bot on turn"));
    }
    let record = Record {
        match_id,
        game,
        seats,
        secret,
        previous,
        stored: state.stored,
        names,
        clocks,
        player_ids,
    };
    if record.version() > version {
        return Err(corrupt("a newer version's match in an older token"));
    }
    Ok(record)
}

/// The clocks as the token holds them: exactly when the rules have a clock, a time
/// per action of the hand, a bank and a count of timeouts per player.
fn clocks_in(
    state: &pb::State,
    rules: &Rules,
    actions: usize,
) -> Result<Option<Clocks>, DecodeError> {
    if rules.clock.is_none() {
        let none = state.dealt_at == 0
            && state.times.is_empty()
            && state.banks.is_empty()
            && state.late.is_empty();
        return if none {
            Ok(None)
        } else {
            Err(corrupt("clocks without a clock"))
        };
    }
    let players = rules.players;
    if state.times.len() != actions || state.banks.len() != players || state.late.len() != players {
        return Err(corrupt("clocks"));
    }
    if (state.hand == 0) != (state.dealt_at == 0) {
        return Err(corrupt("the deal's time"));
    }
    let mut banks = [0; 4];
    for (bank, &held) in banks.iter_mut().zip(&state.banks) {
        if held > crate::engine::clock::MAX_CLOCK_SECS {
            return Err(corrupt("a bank"));
        }
        *bank = held;
    }
    let mut late = [0; 4];
    late[..players].copy_from_slice(&state.late);
    Clocks::from_parts(state.dealt_at, state.times.clone(), banks, late)
        .map(Some)
        .ok_or(corrupt("times"))
}

/// The seats' names as the token holds them: none, or one per player, each one the
/// service takes, and only on seats a human holds.
fn names_in(given: Vec<String>, seats: &Seats, players: usize) -> Result<Names, DecodeError> {
    let mut out = Names::default();
    if given.is_empty() {
        return Ok(out);
    }
    if given.len() != players {
        return Err(corrupt("names"));
    }
    for (seat, name) in given.into_iter().enumerate() {
        let claimed = matches!(seats.0[seat], Player::Human(_) | Player::Held { .. });
        if !names::stored(&name) || (!name.is_empty() && !claimed) {
            return Err(corrupt("a name"));
        }
        out.0[seat] = name;
    }
    if out.is_empty() {
        return Err(corrupt("names, all empty"));
    }
    Ok(out)
}

/// The seats' player ids as the token holds them: one padded id for each seat its
/// bits name, each a seat a human claimed, no id at two seats.
fn player_ids_in(
    bits: u32,
    ids: &[u8],
    seats: &Seats,
    players: usize,
) -> Result<PlayerIds, DecodeError> {
    let mut out = PlayerIds::default();
    if bits >> players != 0 || ids.len() != bits.count_ones() as usize * PADDED_LEN {
        return Err(corrupt("player ids"));
    }
    let mut chunks = ids.chunks_exact(PADDED_LEN);
    for seat in (0..players).filter(|seat| bits & (1 << seat) != 0) {
        let claimed = matches!(seats.0[seat], Player::Human(_) | Player::Held { .. });
        let id = chunks
            .next()
            .and_then(PlayerId::unpadded)
            .ok_or(corrupt("a player id"))?;
        if !claimed || out.seat_of(&id, seat).is_some() {
            return Err(corrupt("a player id"));
        }
        out.0[seat] = Some(id);
    }
    Ok(out)
}

fn rules_read(r: &pb::Rules) -> Result<Rules, DecodeError> {
    Ok(Rules {
        players: r.players as usize,
        partnership: r.partnership,
        hand_size: match pb::HandSize::try_from(r.hand_size) {
            Ok(pb::HandSize::Standard) => HandSizeRule::Standard,
            Ok(pb::HandSize::FiveEach) => HandSizeRule::FiveEach,
            Ok(pb::HandSize::SevenFive) => HandSizeRule::SevenFive,
            _ => return Err(corrupt("hand size rule")),
        },
        target: r.target_fives.checked_mul(5).ok_or(corrupt("target"))?,
        settlement: match pb::Settlement::try_from(r.settlement) {
            Ok(pb::Settlement::OwnPipsOff) => SettlementRule::OwnPipsOff,
            Ok(pb::Settlement::WinnerTakesPips) => SettlementRule::WinnerTakesPips,
            _ => return Err(corrupt("settlement rule")),
        },
        clock: r.clock.as_ref().map(|c| TurnClock {
            move_secs: c.r#move,
            bank_secs: c.bank,
            increment_secs: c.increment,
        }),
        absence: match &r.absence {
            None => Absence::default(),
            Some(a) if a.forfeit && a.bot == 0 && a.takes_seat_after == 0 => Absence::Forfeit,
            Some(a) if !a.forfeit => Absence::Bot {
                level: level_read(a.bot).ok_or(corrupt("absence"))?,
                takes_seat_after: u8::try_from(a.takes_seat_after)
                    .map_err(|_| corrupt("absence"))?,
            },
            Some(_) => return Err(corrupt("absence")),
        },
    })
}

/// A sheet row from `2 * sides` values in fives.
fn row_in(values: &[i32], sides: usize, first: u32, last: u32) -> Result<SheetRow, DecodeError> {
    let points = |fives: i32| fives.checked_mul(5).ok_or(corrupt("points out of range"));
    let mut row = SheetRow {
        first_hand: first,
        last_hand: last,
        ..SheetRow::default()
    };
    for side in 0..sides {
        row.play[side] = points(values[side])?;
        row.settlement[side] = points(values[sides + side])?;
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Phase;
    use crate::engine::bot::{Strategy, choose};
    use crate::state::{KeyRing, open, seal};
    use proptest::prelude::*;
    use rand_chacha::ChaCha8Rng;
    use rand_chacha::rand_core::{Rng, SeedableRng};

    /// Table and rule option `i % 48`: 2, 3, 4 players alone and 4 in partnership, each
    /// hand-size and settlement rule, a short target and the default.
    fn rules(i: usize) -> Rules {
        let (players, partnership) = [(2, false), (3, false), (4, false), (4, true)][i % 4];
        let hand_size = [
            HandSizeRule::Standard,
            HandSizeRule::FiveEach,
            HandSizeRule::SevenFive,
        ][i / 4 % 3];
        let settlement = [SettlementRule::OwnPipsOff, SettlementRule::WinnerTakesPips][i / 12 % 2];
        let target = [50, Rules::default_target(players)][i / 24 % 2];
        // Half the tables with a clock, under each absence option.
        let clock = (i / 48 % 2 == 1).then_some(TurnClock {
            move_secs: 20,
            bank_secs: [0, 45, 3600][i % 3],
            increment_secs: [0, 3][i % 2],
        });
        let absence = [
            Absence::default(),
            Absence::Forfeit,
            Absence::Bot {
                level: Level::Hard,
                takes_seat_after: 0,
            },
        ][i / 96 % 3];
        Rules {
            players,
            partnership,
            hand_size,
            target,
            settlement,
            clock,
            absence,
        }
    }

    /// Seals `record` and opens it again: the same game, and the same view for every
    /// seat and for a spectator.
    fn assert_round_trip(ring: &KeyRing, record: &Record) {
        let (token, id) = seal(ring, record).expect("seal");
        let (opened, opened_id) = open(ring, &token).expect("open");
        assert_eq!(&opened, record);
        assert_eq!(
            id, opened_id,
            "the state id is the plaintext's, read or written"
        );
        let game = &record.game;
        for viewer in (0..game.rules().players).map(Some).chain([None]) {
            assert_eq!(opened.game.view(viewer), game.view(viewer), "{viewer:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        #[test]
        fn every_state_of_random_matches_seals_and_opens_to_the_same_game_and_views(
            table in 0..288usize,
            seed in any::<u64>(),
            greedy in any::<bool>(),
            match_id in any::<[u8; MATCH_ID_LEN]>(),
            kinds in any::<[u8; 4]>(),
            secret in any::<[u8; ID_LEN]>(),
            previous in any::<Option<[u8; ID_LEN]>>(),
            stored in any::<bool>(),
            passes in any::<[bool; 4]>(),
        ) {
            let ring = KeyRing::new(vec![(3, [0x33; 32])], None).unwrap();
            let strategy = if greedy { Strategy::Greedy } else { Strategy::Random };
            // Any mix of open, claimed, bot and bot-held seats, each claimed one's
            // credential its own.
            let mut seats = Seats::OPEN;
            for (seat, (slot, kind)) in seats.0.iter_mut().zip(kinds).enumerate() {
                *slot = match kind % 7 {
                    0 => Player::Open,
                    1 => Player::Human([seat as u8 ^ kind; CREDENTIAL_LEN]),
                    2 => Player::Bot(Level::Easy),
                    3 => Player::Bot(Level::Medium),
                    4 => Player::Bot(Level::Hard),
                    5 => Player::Held {
                        credential: [seat as u8 ^ kind; CREDENTIAL_LEN],
                        level: Level::Easy,
                        why: Why::TimedOut,
                    },
                    _ => Player::Held {
                        credential: [seat as u8 ^ kind; CREDENTIAL_LEN],
                        level: Level::Hard,
                        why: Why::Left,
                    },
                };
            }
            let mut record = Record {
                match_id: MatchId(match_id),
                game: Game::new(rules(table), seed).unwrap(),
                seats,
                secret,
                previous,
                stored,
                names: Default::default(),
                clocks: rules(table)
                    .clock
                    .as_ref()
                    .map(|c| Clocks::new(c, rules(table).players)),
                player_ids: PlayerIds::default(),
            };
            // Seats past the table's players are not written.
            for slot in &mut record.seats.0[record.game.rules().players..] {
                *slot = Player::Open;
            }
            // Some claimed seats' players showed a pass: ids of every length.
            for seat in 0..record.game.rules().players {
                let claimed = matches!(record.seats.0[seat], Player::Human(_) | Player::Held { .. });
                if claimed && passes[seat] {
                    let id = format!("{seat}-{seed:x}-{}", "~".repeat(kinds[seat] as usize % 40));
                    record.player_ids.0[seat] = PlayerId::new(&id);
                }
            }
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut scratch = Vec::new();
            assert_round_trip(&ring, &record);
            // Then as the service goes on: every seat held (a claim for each open
            // one), a previous state, and the tokens of states with a bot on turn not
            // sealed (the service plays it first).
            let players = record.game.rules().players;
            for (seat, slot) in record.seats.0[..players].iter_mut().enumerate() {
                if *slot == Player::Open {
                    *slot = Player::Human([seat as u8; CREDENTIAL_LEN]);
                }
            }
            record.previous = Some(previous.unwrap_or([7; ID_LEN]));
            assert_round_trip(&ring, &record);
            let mut at = 1_800_000_000;
            while let Some(action) = choose(&record.game, strategy, &mut rng, &mut scratch) {
                let hand = record.game.hand_number();
                record.game.apply(action, &mut Vec::new()).unwrap();
                // As the service writes the clocks: each action's time, some seconds on.
                at += u64::from(rng.next_u32() % 90);
                let dealt = record.game.hand_number() != hand;
                let actions = record.game.scorecard().actions.len();
                if let Some(clocks) = record.clocks.as_mut() {
                    clocks.stamp(dealt, actions, at);
                }
                let bot_on_turn = record
                    .game
                    .turn()
                    .is_some_and(|t| record.seats.bots()[t].is_some());
                if bot_on_turn {
                    let (token, _) = seal(&ring, &record).expect("seal");
                    prop_assert_eq!(open(&ring, &token).err(), Some(crate::state::TokenError::Corrupt));
                } else {
                    assert_round_trip(&ring, &record);
                }
            }
            prop_assert_eq!(record.game.phase(), Phase::Over);
        }
    }

    #[test]
    fn the_plaintext_is_prosts_state_and_decodes_as_it() {
        let mut game = Game::new(Rules::for_players(3), 0).unwrap();
        game.deal().unwrap();
        let record = Record::new(MatchId([9; MATCH_ID_LEN]), game);
        let bytes = encode(&record);
        let state = pb::State::decode(bytes.as_slice()).unwrap();
        assert_eq!(state.seed, Some(0), "a zero seed is written all the same");
        assert_eq!(state.encode_to_vec(), bytes);
        assert_eq!(decode(&bytes), Ok(record));
        assert_eq!(
            decode(&bytes[..bytes.len() - 1]),
            Err(DecodeError::Malformed)
        );
    }

    /// States the service never seals, though each field is well-formed: refused.
    #[test]
    fn states_the_service_never_seals_are_refused() {
        let mut game = Game::new(Rules::for_players(2), 3).unwrap();
        let before = Record::new(MatchId([9; MATCH_ID_LEN]), game.clone());
        game.deal().unwrap();
        let dealt = Record::new(MatchId([9; MATCH_ID_LEN]), game.clone());
        assert!(decode(&encode(&dealt)).is_ok());
        let changed = |change: &dyn Fn(&mut Record)| {
            let mut record = dealt.clone();
            change(&mut record);
            decode(&encode(&record))
        };
        assert_eq!(
            changed(&|r| r.seats.0[1] = Player::Open),
            Err(corrupt("an open seat after the deal"))
        );
        assert_eq!(
            changed(&|r| r.previous = None),
            Err(corrupt("no previous state"))
        );
        let turn = game.turn().unwrap();
        assert_eq!(
            changed(&|r| r.seats.0[turn] = Player::Bot(Level::Hard)),
            Err(corrupt("a bot on turn"))
        );
        // A bot not on turn, an open seat or no previous state before the deal: fine.
        assert!(changed(&|r| r.seats.0[1 - turn] = Player::Bot(Level::Easy)).is_ok());
        let mut open = before.clone();
        open.seats = Seats::OPEN;
        open.previous = None;
        assert_eq!(decode(&encode(&open)), Ok(open));
    }

    /// A token of the format before clocks holds nothing of version 5's: a record that
    /// uses a clock, the absence option, a seat a bot holds or a forfeit is refused in
    /// one, and taken in a version-5 token. A record using none is written as version
    /// 4, so that the release before this one reads it during a rolling upgrade.
    #[test]
    fn a_version_4_token_holds_nothing_of_version_5() {
        let mut game = Game::new(Rules::for_players(2), 3).unwrap();
        game.deal().unwrap();
        let plain = Record::new(MatchId([9; MATCH_ID_LEN]), game.clone());
        assert_eq!(plain.version(), BEFORE_CLOCKS);
        assert_eq!(
            decode_version(BEFORE_CLOCKS, &encode(&plain)),
            Ok(plain.clone())
        );
        let other = 1 - game.turn().unwrap();
        let mut held = plain.clone();
        held.seats.0[other] = Player::Held {
            credential: [4; CREDENTIAL_LEN],
            level: Level::Hard,
            why: Why::Left,
        };
        let mut clocked_game = Game::new(
            Rules {
                clock: Some(TurnClock::PHONE),
                ..Rules::for_players(2)
            },
            3,
        )
        .unwrap();
        clocked_game.deal().unwrap();
        let mut clocked = Record::new(MatchId([9; MATCH_ID_LEN]), clocked_game);
        if let Some(clocks) = clocked.clocks.as_mut() {
            clocks.stamp(true, 0, 1_900_000_000);
        }
        let mut forfeited = plain.clone();
        forfeited
            .game
            .apply(
                crate::engine::Action::Forfeit {
                    seat: 0,
                    why: Why::TimedOut,
                },
                &mut Vec::new(),
            )
            .unwrap();
        let mut absence = Record::new(
            MatchId([9; MATCH_ID_LEN]),
            Game::new(
                Rules {
                    absence: Absence::Forfeit,
                    ..Rules::for_players(3)
                },
                1,
            )
            .unwrap(),
        );
        absence.previous = None;
        for newer in [held, clocked, forfeited, absence] {
            assert_eq!(newer.version(), BEFORE_PASSES, "{newer:?}");
            assert_eq!(
                decode_version(BEFORE_CLOCKS, &encode(&newer)),
                Err(corrupt("a newer version's match in an older token"))
            );
            assert_eq!(
                decode_version(BEFORE_PASSES, &encode(&newer)),
                Ok(newer.clone())
            );
            assert_eq!(decode_version(TOKEN_VERSION, &encode(&newer)), Ok(newer));
        }
    }

    /// A seat's player id (the subject of its player's pass) round-trips in a
    /// version-6 token and nothing older, padded so that the plaintext's length says
    /// which seats hold a pass and nothing of the ids; ids the service never writes
    /// (on a seat nobody claimed, one player at two seats, bits past the players, an
    /// id badly padded) are refused.
    #[test]
    fn player_ids_need_version_6_and_their_length_tells_nothing() {
        let mut game = Game::new(Rules::for_players(3), 3).unwrap();
        game.deal().unwrap();
        let plain = Record::new(MatchId([9; MATCH_ID_LEN]), game);
        let with = |ids: [Option<&str>; 3]| {
            let mut record = plain.clone();
            for (slot, id) in record.player_ids.0.iter_mut().zip(ids) {
                *slot = id.map(|id| PlayerId::new(id).expect("an id"));
            }
            record
        };
        let short = with([Some("a"), None, Some("b")]);
        let long = with([
            Some(&"x".repeat(64)),
            None,
            Some("auth0|5f7c8ec7c33c6c004bbafe82"),
        ]);
        assert_eq!(short.version(), TOKEN_VERSION);
        assert_eq!(encode(&short).len(), encode(&long).len());
        assert_eq!(
            encode(&with([Some("a"), Some("c"), None])).len(),
            encode(&short).len(),
            "which seats hold one: the same length"
        );
        assert!(encode(&with([Some("a"), None, None])).len() < encode(&short).len());
        for record in [short.clone(), long] {
            assert_eq!(
                decode_version(TOKEN_VERSION, &encode(&record)),
                Ok(record.clone())
            );
            assert_eq!(
                decode_version(BEFORE_PASSES, &encode(&record)),
                Err(corrupt("a newer version's match in an older token"))
            );
        }
        let state = pb::State::decode(encode(&short).as_slice()).unwrap();
        assert_eq!(state.pass_seats, 0b101);
        let changed = |change: &dyn Fn(&mut pb::State)| {
            let mut state = state.clone();
            change(&mut state);
            decode(&state.encode_to_vec())
        };
        let refused = Err(corrupt("player ids"));
        assert_eq!(
            changed(&|s| s.pass_seats = 0b1101),
            refused,
            "a fourth seat"
        );
        assert_eq!(
            changed(&|s| s.pass_seats = 0b111),
            refused,
            "three bits, two ids"
        );
        assert_eq!(changed(&|s| s.player_ids.pop().map_or((), drop)), refused);
        assert_eq!(
            changed(&|s| s.player_ids[64..].copy_from_slice(&state.player_ids[..64])),
            Err(corrupt("a player id")),
            "one player at two seats"
        );
        assert_eq!(
            changed(&|s| s.player_ids[5] = b'z'),
            Err(corrupt("a player id")),
            "a byte after the padding"
        );
        let mut open_seat = with([Some("a"), None, Some("b")]);
        open_seat.game = Game::new(Rules::for_players(3), 3).unwrap();
        open_seat.seats.0[2] = Player::Open;
        assert_eq!(decode(&encode(&open_seat)), Err(corrupt("a player id")));
    }

    /// A token the release before clocks sealed (`tests/fixtures/token_v4.hex`: key id
    /// 7, key 0x42 x 32; two players, seed 2026, dealt and led) opens in this one.
    #[test]
    fn a_token_of_the_release_before_opens() {
        let hex = include_str!("../../tests/fixtures/token_v4.hex").trim();
        let token: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(token[0], BEFORE_CLOCKS);
        let ring = KeyRing::new(vec![(7, [0x42; 32])], None).unwrap();
        let (record, _) = open(&ring, &token).expect("a version-4 token opens");
        let mut game = Game::new(Rules::for_players(2), 2026).unwrap();
        game.deal().unwrap();
        let lead = game.legal_moves()[0];
        game.play(game.turn().unwrap(), lead.tile, lead.end)
            .unwrap();
        assert_eq!(record, Record::new(MatchId([0x11; MATCH_ID_LEN]), game));
        assert_eq!(record.clocks, None);
        // Sealed again, it stays a version-4 token.
        let (again, _) = seal(&ring, &record).unwrap();
        assert_eq!(again[0], BEFORE_CLOCKS);
    }

    /// Display names round-trip; names the service never writes (on a seat nobody
    /// holds, one the API refuses, a count other than the players', all empty) are
    /// refused.
    #[test]
    fn names_round_trip_and_only_the_services_are_taken() {
        let mut game = Game::new(Rules::for_players(3), 5).unwrap();
        game.deal().unwrap();
        let mut record = Record::new(MatchId([9; MATCH_ID_LEN]), game);
        assert!(
            pb::State::decode(encode(&record).as_slice())
                .unwrap()
                .names
                .is_empty()
        );
        record.names.0[0] = "Ana".into();
        record.names.0[2] = "สมชาย".into();
        assert_eq!(decode(&encode(&record)), Ok(record.clone()));
        let bytes = |names: Vec<&str>| {
            let mut state = pb::State::decode(encode(&record).as_slice()).unwrap();
            state.names = names.into_iter().map(String::from).collect();
            state.encode_to_vec()
        };
        assert_eq!(decode(&bytes(vec!["Ana", ""])), Err(corrupt("names")));
        assert_eq!(
            decode(&bytes(vec!["", "", ""])),
            Err(corrupt("names, all empty"))
        );
        assert_eq!(
            decode(&bytes(vec!["\u{202E}x", "", ""])),
            Err(corrupt("a name"))
        );
        let mut bot = record.clone();
        bot.seats.0[1] = Player::Bot(Level::Easy);
        bot.names.0[1] = "Bot".into();
        assert_eq!(decode(&encode(&bot)), Err(corrupt("a name")));
        // A claimed seat a bot holds keeps its player's name.
        let mut held = record.clone();
        held.seats.0[0] = Player::Held {
            credential: [0; CREDENTIAL_LEN],
            level: Level::Medium,
            why: Why::Left,
        };
        assert_eq!(decode(&encode(&held)), Ok(held));
    }

    /// Plaintexts the fuzzers found that once panicked the decoder: sized by rules not
    /// yet checked (no players, five), and a sheet whose running total overflowed.
    #[test]
    fn plaintexts_that_once_panicked_are_refused() {
        let state = |players: u32, hand: u32, sheet: Vec<i32>| pb::State {
            seed: Some(1),
            match_id: vec![0; MATCH_ID_LEN],
            rules: Some(pb::Rules {
                players,
                partnership: false,
                hand_size: pb::HandSize::Standard as i32,
                target_fives: 20,
                settlement: pb::Settlement::OwnPipsOff as i32,
                clock: None,
                absence: None,
            }),
            hand,
            starter: None,
            moves: 2 * hand,
            sheet,
            carried: Vec::new(),
            actions: Vec::new(),
            seats: vec![1; players as usize],
            credentials: vec![0; CREDENTIAL_LEN * players as usize],
            secret: vec![0; ID_LEN],
            previous: Vec::new(),
            stored: false,
            names: Vec::new(),
            dealt_at: 0,
            times: Vec::new(),
            pass_seats: 0,
            player_ids: Vec::new(),
            banks: Vec::new(),
            late: Vec::new(),
        };
        let decoded = |s: pb::State| decode(&s.encode_to_vec());
        assert!(matches!(
            decoded(state(0, 2, vec![0; 4])),
            Err(DecodeError::Replay(ReplayError::Rules(_)))
        ));
        assert!(matches!(
            decoded(state(5, 2, vec![0; 10])),
            Err(DecodeError::Replay(ReplayError::Rules(_)))
        ));
        // Nine hands of the most points an entry may hold, then nine giving them back:
        // a total of nothing, but a running sum past i32 on the way.
        let big = crate::engine::check::MAX_POINTS / 5;
        let mut sheet = Vec::new();
        for row in 0..18 {
            let (play, settled) = if row < 9 { (big, 0) } else { (0, -big) };
            sheet.extend([play, 0, settled, 0]);
        }
        assert_eq!(
            decoded(state(2, 19, sheet)),
            Err(DecodeError::Replay(ReplayError::Scorecard(
                "sheet points out of range"
            )))
        );
    }

    #[test]
    fn action_bytes_are_a_tile_and_an_arm_or_a_draw() {
        for byte in 0..=255u8 {
            match action_in(byte) {
                Ok(action) => assert_eq!(action_byte(action), byte),
                Err(_) => assert!((140..255).contains(&byte), "{byte}"),
            }
        }
    }
}
