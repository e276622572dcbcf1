//! What the fuzz targets share: the fixed test key ring, real games and their tokens,
//! the input formats, and the checks every decoded or reached game must pass.
//!
//! The real matches' tokens are sealed as the service seals them: who plays each seat
//! (humans, each claimed seat's credential [`credential`], bots of every level, and
//! before a first deal some seats still open), the match's secret [`SECRET`], and each
//! state's previous state id, chained from the match's first state (which has none);
//! no state with a bot on turn is sealed (the service plays the bot first: its moves
//! and the next human's make one call).
//!
//! Input formats (the seed writer, `examples/fuzz_seeds.rs`, writes the same):
//! - `token`: any bytes; fed to `state::open` (as a token, with the cipher and through
//!   the token cache) and to `plaintext::decode` (as a plaintext).
//! - `engine`: a game, then actions. The first byte `% 3` chooses the game: 0, 11
//!   bytes of rules and seed for a fresh game ([`fresh_game`]); 1, a little-endian
//!   `u16` length and that many bytes of plaintext for `plaintext::decode`; 2, the
//!   state of a real game with fields set to extreme values ([`tweaked_state`]), for
//!   `plaintext::decode`. The rest are actions ([`next_action`]).
//! - `service`: a handler byte (its low 7 bits `% 7`: NewGame, Deal, Play, Draw, Score,
//!   Suggest, ClaimSeat; its top bit set: the server takes client seeds), a
//!   little-endian `u16` naming a real token to put in the request's `state` (0: keep
//!   the decoded one), a credential byte ([`credential_for`]: keep the request's, or put
//!   in the real one of the seat it names, of another seat, or a near miss), then the
//!   request message's protobuf bytes.
//!
//! The game in memory has private fields: everything checked here goes through the
//! engine's public API ([`assert_consistent`], [`assert_renders`]).

use std::sync::LazyLock;

use allfives::engine::bot::{Strategy, choose};
use allfives::engine::check::MAX_POINTS;
use allfives::engine::replay::MAX_HAND_ACTIONS;
use allfives::engine::sheet::SHEET_ROWS;
use allfives::engine::suggest::Level;
use allfives::engine::{
    Action, End, Event, Game, HandSizeRule, Phase, Rules, SettlementRule, SheetRow, Tile, TileSet,
};
use allfives::proto::internal as ipb;
use allfives::proto::v1 as pb;
use allfives::service::convert::{Table, sheet_out, view_out};
use allfives::state::{KeyRing, Player, Record, Seats, StateId, Tokens, lineage, plaintext};
use prost::Message;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

/// The fuzz key ring: key 1 seals, key 2 also opens. The seed writer uses the same.
pub const KEYS: [(u8, [u8; 32]); 2] = [(1, [0x5a; 32]), (2, [0xa5; 32])];

/// The real matches' secret (the key of their state ids). The seed writer uses the same.
pub const SECRET: [u8; 16] = [0x5e; 16];

/// The credential of a claimed seat in the real matches. The seed writer uses the same.
pub fn credential(seat: usize) -> [u8; 16] {
    [0xc0 | seat as u8; 16]
}

/// Who plays each seat in real match `table` (of `players`), in a state after `hands`
/// deals: a pattern of humans and bots by table, and before the first deal of every
/// other table the human seats but seat 0 still open. The seed writer uses the same.
pub fn seats_for(table: usize, players: usize, hands: u32) -> Seats {
    let mut seats = Seats::OPEN;
    for (seat, slot) in seats.0.iter_mut().enumerate().take(players) {
        let bot = match (table % 5, seat) {
            (1, 2) => Some(Level::Easy),
            (2, 1) => Some(Level::Medium),
            (2, 3) | (4, 2) => Some(Level::Hard),
            _ => None,
        };
        *slot = match bot {
            Some(level) => Player::Bot(level),
            None if hands == 0 && table % 2 == 1 && seat > 0 => Player::Open,
            None => Player::Human(credential(seat)),
        };
    }
    seats
}

/// The records of a match's states in order, as the service seals them: `seats_for`
/// the table, [`SECRET`], each state's previous the id of the one sealed before; none
/// (`None`) for a state with a bot on turn, which the service never seals. The seed
/// writer does the same.
pub fn chained(table: usize, match_id: [u8; 16], games: Vec<Game>) -> Vec<Option<Record>> {
    let mut previous: Option<StateId> = None;
    games
        .into_iter()
        .map(|game| {
            let seats = seats_for(table, game.rules().players, game.hand_number());
            if game
                .turn()
                .is_some_and(|t| matches!(seats.0[t], Player::Bot(_)))
            {
                return None;
            }
            let record = Record {
                match_id: allfives::state::MatchId(match_id),
                seats,
                game,
                secret: SECRET,
                previous,
                stored: false,
                names: Default::default(),
                clocks: None,
                player_ids: Default::default(),
            };
            previous = Some(lineage::state_id(&SECRET, &plaintext::encode(&record)));
            Some(record)
        })
        .collect()
}

/// The largest count of actions before a hand's deal that a token may hold
/// (`engine/src/check.rs`): room for the deal and the hand's actions.
pub const MOVES_LIMIT: u32 = u32::MAX - 1 - MAX_HAND_ACTIONS as u32;

pub fn ring() -> &'static KeyRing {
    tokens().ring()
}

/// The fuzz key ring with a token cache, as the service runs: the answers' games are
/// kept, so an input that brings one of their tokens back finds it.
pub fn tokens() -> &'static Tokens {
    static TOKENS: LazyLock<Tokens> = LazyLock::new(|| {
        let ring = KeyRing::new(KEYS.to_vec(), None).expect("ring");
        Tokens::new(std::sync::Arc::new(ring), 256)
    });
    &TOKENS
}

/// Every state of a few whole matches (2, 3 and 4 players, partnership, both
/// settlement rules, the hand sizes, short targets and one long match), played by the
/// engine's simple players, as records ([`chained`]; seats by [`seats_for`]).
pub fn real_records() -> Vec<Record> {
    use HandSizeRule::{FiveEach, SevenFive, Standard};
    use SettlementRule::{OwnPipsOff, WinnerTakesPips};
    let tables = [
        (2, false, Standard, OwnPipsOff, 100),
        (3, false, SevenFive, WinnerTakesPips, 100),
        (4, true, Standard, OwnPipsOff, 100),
        (4, false, FiveEach, WinnerTakesPips, 60),
        // Random players at four seats, own pips off: a long match, past the 32 hands
        // the sheet keeps in full.
        (4, false, Standard, OwnPipsOff, 200),
    ];
    let mut records = Vec::new();
    for (i, (players, partnership, hand_size, settlement, target)) in tables.into_iter().enumerate()
    {
        let mut games = Vec::new();
        let rules = Rules {
            players,
            partnership,
            hand_size,
            target,
            settlement,
            ..Rules::for_players(players)
        };
        let mut game = Game::new(rules, 1000 + i as u64).expect("rules");
        let mut rng = ChaCha8Rng::seed_from_u64(i as u64);
        let mut scratch = Vec::new();
        let strategy = if i % 2 == 0 && i != 4 {
            Strategy::Greedy
        } else {
            Strategy::Random
        };
        games.push(game.clone());
        while let Some(action) = choose(&game, strategy, &mut rng, &mut scratch) {
            game.apply(action, &mut Vec::new()).expect("a bot's move");
            games.push(game.clone());
        }
        records.extend(chained(i, [i as u8; 16], games).into_iter().flatten());
    }
    records
}

/// Tokens of [`real_records`], sealed under the fuzz key ring.
pub fn real_tokens() -> &'static [Vec<u8>] {
    static TOKENS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
        real_records()
            .iter()
            .map(|record| allfives::state::seal(ring(), record).expect("seal").0)
            .collect()
    });
    &TOKENS
}

/// The credential the `service` target puts in a request, from its credential byte
/// `choice`: `% 4` 0, the request's own (`decoded`); 1, the real credential of
/// `named`, the seat the request names, in the match `record` holds (a bot's or an
/// open seat's has none: empty); 2, the real credential of seat `(choice >> 2) % 4`
/// (someone else's, or none); 3, `named`'s with byte `(choice >> 2) % 16` flipped (a
/// near miss). Without a record (no token that opens) or a named seat, the request's.
pub fn credential_for(
    choice: u8,
    decoded: &[u8],
    record: Option<&Record>,
    named: Option<u32>,
) -> Vec<u8> {
    let held = |seat: Option<u32>| -> Option<Vec<u8>> {
        let player = record?.seats.0.get(seat? as usize)?;
        Some(match player {
            Player::Human(c) => c.to_vec(),
            _ => Vec::new(),
        })
    };
    let which = u32::from(choice >> 2);
    let chosen = match choice % 4 {
        1 => held(named),
        2 => held(Some(which % 4)),
        3 => held(named).map(|mut c| {
            if let Some(b) = c.get_mut(which as usize % 16) {
                *b ^= 0x01;
            }
            c
        }),
        _ => None,
    };
    chosen.unwrap_or_else(|| decoded.to_vec())
}

/// Whether `credential` opens seat `seat` of the match in `record`, by the API's rules
/// (a human seat claimed with exactly that credential, a bot holding it or not),
/// written out independently of the service's check.
pub fn holds(record: &Record, seat: u32, credential: &[u8]) -> bool {
    matches!(
        record.seats.0.get(seat as usize),
        Some(Player::Human(c) | Player::Held { credential: c, .. })
            if seat < record.game.rules().players as u32 && c[..] == *credential
    )
}

/// The view's seats are the record's: one a seat at the table, in order, each of the
/// kind (and bot level) the record says.
pub fn assert_seats_shown(record: &Record, shown: &[pb::SeatStatus]) {
    let players = record.game.rules().players;
    assert_eq!(shown.len(), players, "a seat status per seat");
    for (seat, (status, player)) in shown.iter().zip(&record.seats.0).enumerate() {
        let (kind, bot) = match player {
            Player::Open => (pb::SeatKind::Open, pb::BotLevel::Unspecified),
            Player::Human(_) => (pb::SeatKind::Claimed, pb::BotLevel::Unspecified),
            Player::Bot(Level::Easy) => (pb::SeatKind::Bot, pb::BotLevel::Easy),
            Player::Bot(Level::Medium) => (pb::SeatKind::Bot, pb::BotLevel::Medium),
            Player::Bot(Level::Hard) => (pb::SeatKind::Bot, pb::BotLevel::Hard),
            Player::Held { level, .. } => (
                pb::SeatKind::HeldByBot,
                allfives::service::convert::level_out(*level),
            ),
        };
        assert_eq!(
            (status.seat, status.kind, status.bot),
            (seat as u32, kind as i32, bot as i32),
            "seat {seat} shown as the record has it"
        );
    }
}

/// Takes `n` bytes from the front of `input` (fewer if it is shorter).
pub fn take<'a>(input: &mut &'a [u8], n: usize) -> &'a [u8] {
    let (head, tail) = input.split_at(n.min(input.len()));
    *input = tail;
    head
}

/// One byte from the front of `input`, 0 once it is empty.
pub fn byte(input: &mut &[u8]) -> u8 {
    take(input, 1).first().copied().unwrap_or(0)
}

/// A little-endian `u32` from up to 4 bytes of `input` (missing bytes 0).
fn word(input: &mut &[u8]) -> u32 {
    let b = take(input, 4);
    let mut word = [0u8; 4];
    word[..b.len()].copy_from_slice(b);
    u32::from_le_bytes(word)
}

/// A fresh game from 11 bytes: players, option bits, target (in fives, small so that
/// games end), seed.
pub fn fresh_game(input: &mut &[u8]) -> Game {
    let players = 2 + usize::from(byte(input) % 3);
    let bits = byte(input);
    let target = 5 * (1 + u32::from(byte(input) % 60));
    let mut seed = [0u8; 8];
    for (slot, b) in seed.iter_mut().zip(take(input, 8)) {
        *slot = *b;
    }
    let rules = Rules {
        players,
        partnership: players == 4 && bits & 1 != 0,
        hand_size: match (bits >> 1) % 3 {
            0 => HandSizeRule::Standard,
            1 => HandSizeRule::FiveEach,
            _ => HandSizeRule::SevenFive,
        },
        target,
        settlement: if bits & 0x80 != 0 {
            SettlementRule::WinnerTakesPips
        } else {
            SettlementRule::OwnPipsOff
        },
        ..Rules::for_players(players)
    };
    Game::new(rules, u64::from_le_bytes(seed)).expect("valid rules")
}

/// The next action, from 1 to 4 bytes, or `None` at the end of the input. The low two
/// bits of the first byte choose: 0 a deal; 1 a play of any tile (seat, tile, end from
/// the next bytes: seats one past the table and any end, open or not); 2 a draw by
/// seat `b >> 2` (up to one past the table); 3 the legal move `b >> 2` (modulo their
/// number) of the seat on turn, or what it must do (draw, deal), so runs get deep.
pub fn next_action(game: &Game, input: &mut &[u8]) -> Option<Action> {
    let b = *take(input, 1).first()?;
    let seats = game.rules().players + 1;
    let any_seat = |v: u8| usize::from(v) % seats;
    Some(match b & 3 {
        0 => Action::Deal,
        1 => {
            let seat = any_seat(byte(input));
            let tile = Tile::from_index(byte(input) % 28).expect("a tile");
            let end = match byte(input) % 5 {
                0 => None,
                e => Some(End::ALL[usize::from(e - 1)]),
            };
            Action::Play { seat, tile, end }
        }
        2 => Action::Draw {
            seat: any_seat(b >> 2),
        },
        _ => {
            let moves = game.legal_moves();
            match (game.phase(), game.turn()) {
                (Phase::Playing, Some(seat)) if moves.is_empty() => Action::Draw { seat },
                (Phase::Playing, Some(seat)) => {
                    let m = moves[usize::from(b >> 2) % moves.len()];
                    Action::Play {
                        seat,
                        tile: m.tile,
                        end: m.end,
                    }
                }
                _ => Action::Deal,
            }
        }
    })
}

/// Whether the rules accept `action` in `game`, from the public view of the game
/// alone: a deal between hands; a draw by the seat on turn when it must draw; a play
/// by the seat on turn that is one of its legal moves (for the lead any end but UP or
/// DOWN names it; later, no end names the one end the tile fits, if just one).
pub fn accepts(game: &Game, action: Action) -> bool {
    match action {
        Action::Deal => game.phase() == Phase::Dealing,
        Action::Draw { seat } => game.turn() == Some(seat) && game.must_draw(),
        Action::Forfeit { seat, .. } => {
            seat < game.rules().players && game.hand_number() > 0 && game.phase() != Phase::Over
        }
        Action::Play { seat, tile, end } => {
            if game.turn() != Some(seat) {
                return false;
            }
            let moves = game.legal_moves();
            let mut with_tile = moves.iter().filter(|m| m.tile == tile);
            if game.layout().is_none_or(|l| l.is_empty()) {
                !matches!(end, Some(End::Up | End::Down)) && with_tile.next().is_some()
            } else if end.is_some() {
                with_tile.any(|m| m.end == end)
            } else {
                with_tile.count() == 1
            }
        }
    }
}

/// What an action the engine applied must have done, `before` it and now: the move
/// counter rose by one and something was reported; a deal dealt the next hand; a play
/// was one of the seat's legal moves and scored what that move said; a draw took the
/// boneyard's next tile into the seat's hand.
pub fn assert_applied(before: &Game, action: Action, game: &Game, events: &[Event]) {
    assert_eq!(game.moves(), before.moves() + 1, "{action:?}");
    assert!(!events.is_empty(), "{action:?} reported nothing");
    match (action, events[0]) {
        (Action::Deal, Event::Dealt { hand, starter }) => {
            assert_eq!(hand, before.hand_number() + 1);
            assert_eq!(game.hand_number(), hand);
            assert!(starter < game.rules().players);
        }
        (
            Action::Play { seat, tile, .. },
            Event::Played {
                seat: s,
                tile: t,
                end,
                points,
                ..
            },
        ) => {
            assert_eq!((s, t), (seat, tile));
            let legal = before.legal_moves();
            assert!(
                legal
                    .iter()
                    .any(|m| m.tile == tile && m.end == end && m.points == points),
                "{action:?} played as {end:?} for {points}, not a legal move: {legal:?}"
            );
            assert!(!game.hand(seat).contains(tile));
            assert!(game.layout().is_some_and(|l| l.tiles().contains(tile)));
        }
        (Action::Draw { seat }, Event::Drew { seat: s, tile }) => {
            assert_eq!(s, seat);
            let tile = tile.expect("the engine names the tile drawn");
            assert!(!before.hand(seat).contains(tile) && game.hand(seat).contains(tile));
            assert_eq!(game.boneyard_len() + 1, before.boneyard_len());
        }
        (Action::Forfeit { seat, why }, Event::Forfeited { seat: s, why: w }) => {
            assert_eq!((s, w), (seat, why));
            assert_eq!(game.phase(), Phase::Over);
        }
        (action, first) => panic!("{action:?} reported {first:?} first"),
    }
}

/// Everything a game must allow once decoded or reached: it is consistent and every
/// view renders (see below).
pub fn assert_sound(game: &Game) {
    assert_consistent(game);
    assert_unsealed_refused(game);
    assert_renders(game);
}

/// What the service never seals is refused, though every field is well-formed: a seat
/// still open after the first deal, no previous state after NewGame's, a bot on turn.
pub fn assert_unsealed_refused(game: &Game) {
    if !game.replays() {
        return;
    }
    let record = record_of(game);
    let refused = |what: &str, change: &dyn Fn(&mut Record)| {
        let mut changed = record.clone();
        change(&mut changed);
        let decoded = plaintext::decode(&plaintext::encode(&changed));
        assert!(
            matches!(decoded, Err(plaintext::DecodeError::Corrupt(_))),
            "{what} decoded: {decoded:?}"
        );
    };
    if game.hand_number() > 0 {
        refused("an open seat after the deal", &|r| {
            r.seats.0[0] = Player::Open
        });
        refused("no previous state after the deal", &|r| r.previous = None);
    }
    if let Some(turn) = game.turn() {
        refused("a bot on turn", &|r| {
            r.seats.0[turn] = Player::Bot(Level::Medium)
        });
    }
}

/// What holds of every game legal moves made, checked through the public API, and its
/// plaintext: it decodes to the same game whenever the game replays
/// (`Game::replays`), and is refused otherwise, which happens only at the limits a
/// token holds a match to (the action counter, points far past any match).
pub fn assert_consistent(game: &Game) {
    assert_invariants(game);
    let record = record_of(game);
    let bytes = plaintext::encode(&record);
    let decoded = plaintext::decode(&bytes);
    if game.replays() {
        assert_eq!(decoded.as_ref(), Ok(&record), "round trip of {game:?}");
    } else {
        assert!(
            matches!(decoded, Err(plaintext::DecodeError::Replay(_))),
            "a game that does not replay decoded: {decoded:?}"
        );
        assert!(
            at_a_limit(game),
            "a game short of the limits does not replay: {game:?}"
        );
    }
}

/// `game` in a record the service could seal, whose seats, secret and previous state
/// vary with its move counter and seed (mixes of claimed and bot seats over a match,
/// open ones before the first deal, but never a bot on turn; a previous state after the
/// deal, and before it or not), so that the round trip covers those fields too.
fn record_of(game: &Game) -> Record {
    let moves = game.moves();
    let dealt = game.hand_number() > 0;
    let mut seats = Seats::OPEN;
    for (seat, slot) in seats.0.iter_mut().enumerate().take(game.rules().players) {
        let bot = game.turn() != Some(seat);
        *slot = match (moves as usize / 5usize.pow(seat as u32)) % 5 {
            0 if !dealt => Player::Open,
            2 if bot => Player::Bot(Level::Easy),
            3 if bot => Player::Bot(Level::Medium),
            4 if bot => Player::Bot(Level::Hard),
            _ => Player::Human([moves as u8 ^ seat as u8; 16]),
        };
    }
    Record {
        match_id: allfives::state::MatchId([7; 16]),
        game: game.clone(),
        seats,
        secret: [moves.to_le_bytes()[0]; 16],
        previous: (dealt || game.seed() % 2 == 1).then_some([moves.to_le_bytes()[1]; 16]),
        stored: game.seed() % 3 == 0,
        names: Default::default(),
        clocks: None,
        player_ids: Default::default(),
    }
}

/// Whether the game's scorecard is past a limit `check::scorecard` holds a token to:
/// an action count without room for a hand, or a sheet entry or score beyond
/// `MAX_POINTS`.
fn at_a_limit(game: &Game) -> bool {
    let card = game.scorecard();
    let big = |v: i32| v.unsigned_abs() > MAX_POINTS as u32;
    let mut totals = [0i64; 4];
    for row in card.carried.iter().chain(card.rows) {
        if row.play.iter().chain(&row.settlement).any(|&v| big(v)) {
            return true;
        }
        for (t, (p, s)) in totals.iter_mut().zip(row.play.iter().zip(&row.settlement)) {
            *t += i64::from(*p) + i64::from(*s);
        }
    }
    card.moves > MOVES_LIMIT || totals.iter().any(|&t| t < -i64::from(MAX_POINTS))
}

/// The invariants of the engine's games (engine/src/invariants.rs, which only its tests
/// may call), as far as the public API shows them.
pub fn assert_invariants(game: &Game) {
    let rules = *game.rules();
    let (players, sides) = (rules.players, rules.sides());
    let target = rules.target as i32;
    let fail = |what: &str| -> ! { panic!("{what}: {game:?}") };
    if rules.validate().is_err() {
        fail("rule options");
    }

    // The sheet: a row a hand, numbered in order, its entries points a side could
    // score; its totals are the scores.
    let sheet = game.sheet();
    let hand_number = game.hand_number();
    let totals = sheet.totals();
    if totals[..sides] != *game.scores() || totals[sides..].iter().any(|&t| t != 0) {
        fail("scores differ from the sheet");
    }
    let rows = sheet.rows();
    let full = rows.len() as u32;
    if full != hand_number.min(SHEET_ROWS as u32) {
        fail("sheet rows do not match the hands dealt");
    }
    let first = hand_number - full + 1;
    match (sheet.carried(), first > 1) {
        (Some(c), true) if (c.first_hand, c.last_hand) == (1, first - 1) => {}
        (None, false) => {}
        _ => fail("carried row present exactly when earlier hands are folded"),
    }
    let entries_ok = |row: &SheetRow| {
        (0..4).all(|side| {
            let (play, settled) = (row.play[side], row.settlement[side]);
            let sign_ok = match rules.settlement {
                SettlementRule::OwnPipsOff => settled <= 0,
                SettlementRule::WinnerTakesPips => settled >= 0,
            };
            if side >= sides {
                play == 0 && settled == 0
            } else {
                play % 5 == 0 && settled % 5 == 0 && play >= 0 && sign_ok
            }
        })
    };
    for (row, number) in sheet.rows().zip(first..) {
        if (row.first_hand, row.last_hand) != (number, number) {
            fail("sheet row's hand");
        }
    }
    if !sheet
        .carried()
        .into_iter()
        .chain(sheet.rows())
        .all(entries_ok)
    {
        fail("a sheet entry no hand could score");
    }

    // The winner, and the target.
    // A side wins by the target, or because another forfeited (whatever its score).
    match game.winner() {
        Some(w) if w >= sides || (game.scores()[w] < target && game.forfeit().is_none()) => {
            fail("winner")
        }
        None if game.scores().iter().any(|&s| s >= target) => fail("target reached, no winner"),
        _ => {}
    }
    if (game.phase() == Phase::Over) != game.winner().is_some() {
        fail("over exactly when won");
    }

    // The scorecard accounts for every action.
    let card = game.scorecard();
    let after_deal = u32::from(card.hand > 0) + card.actions.len() as u32;
    if card.hand != hand_number
        || u64::from(card.moves) + u64::from(after_deal) != u64::from(game.moves())
    {
        fail("scorecard differs from the game's counters");
    }
    if card.actions.len() > MAX_HAND_ACTIONS {
        fail("more actions than a hand can hold");
    }

    let Some(layout) = game.layout() else {
        if hand_number != 0 || game.moves() != 0 || game.phase() != Phase::Dealing {
            fail("hands dealt without a hand");
        }
        if game.hand_sizes().any(|n| n != 0) || game.boneyard_len() != 0 {
            fail("tiles before the first deal");
        }
        return;
    };
    if hand_number == 0 {
        fail("a hand before the first deal");
    }

    // Every tile in one place: the hands, the table and the boneyard.
    let mut seen = layout.tiles();
    if seen.len() != layout.placements().len() {
        fail("a tile placed twice");
    }
    let mut count = seen.len();
    for seat in 0..players {
        let tiles = game.hand(seat);
        if !tiles.intersection(seen).is_empty() {
            fail("a tile in two places");
        }
        seen = seen.union(tiles);
        count += tiles.len();
    }
    if count + game.boneyard_len() != 28 {
        fail("tiles missing");
    }

    // How the hand ended, if it has.
    let playing = game.phase() == Phase::Playing;
    match game.last_result() {
        Some(r) => {
            if playing || r.hand != hand_number {
                fail("hand result");
            }
            if (0..4).any(|s| r.hands[s] != game.hand(s)) {
                fail("hand result differs from the hands");
            }
        }
        None if !playing => fail("a hand neither in play nor ended"),
        None => {}
    }

    // What the table saw a seat show out of is true of its tiles, except for the seat
    // on turn right after drawing its only playable tile.
    let end_pips = layout.open_ends().fold(0u8, |m, e| m | 1 << e.pip);
    let on_turn_moves: TileSet = game.legal_moves().iter().map(|m| m.tile).collect();
    for seat in 0..players {
        let voids = game.voids(seat);
        if voids >= 1 << 7 {
            fail("voids out of range");
        }
        let showing = game.hand(seat).intersection(TileSet::with_any_pip(voids));
        if showing.is_empty() {
            continue;
        }
        let just_drew = playing
            && game.turn() == Some(seat)
            && showing.len() == 1
            && end_pips & !voids == 0
            && on_turn_moves == showing;
        if !just_drew {
            fail("a seat holds a number it showed out of");
        }
    }

    // A hand in play: nobody has gone out, and the seat on turn can act.
    match (playing, game.turn()) {
        (true, Some(turn)) if turn < players => {
            if game.hand_sizes().any(|n| n == 0) {
                fail("a seat went out but the hand goes on");
            }
            if on_turn_moves.is_empty() && !game.must_draw() {
                fail("the seat on turn can neither play nor draw");
            }
            if game.must_draw() != (on_turn_moves.is_empty() && game.boneyard_len() > 0) {
                fail("must draw exactly when nothing plays and the boneyard has tiles");
            }
        }
        (false, None) => {}
        _ => fail("a turn exactly while a hand is in play"),
    }
}

/// Every seat's view, the spectator's and the score sheet render as the service would
/// render them; the seat on turn always has something to do, and the rules accept
/// every legal move it has (and its draw, when it must draw); what the seat on turn
/// knows is what a world sampled from its knowledge shows it.
pub fn assert_renders(game: &Game) {
    let seats = game.rules().players;
    let record = record_of(game);
    let table = Table {
        match_id: "match",
        state_id: &[1; 16],
        previous_state_id: record.previous.as_ref().map_or(&[], |id| id.as_slice()),
        seats: &record.seats,
        names: &record.names,
        clock: None,
        player_ids: &Default::default(),
        show_player_ids: false,
    };
    for viewer in std::iter::once(None).chain((0..seats).map(Some)) {
        let view = game.view(viewer).expect("a seat at the table may look");
        let out = view_out(&view, &table);
        assert_eq!(out.hand_sizes.len(), seats);
        assert_eq!(out.state_id, [1; 16]);
        assert_eq!(out.previous_state_id, table.previous_state_id);
        assert_seats_shown(&record, &out.seats);
        assert_eq!(view.moves, game.moves());
        if viewer.is_some() && viewer == game.turn() {
            // The seat on turn can always act: play, draw or (never) nothing.
            assert!(
                !view.legal_moves.is_empty() || view.must_draw,
                "seat on turn with nothing to do: {game:?}"
            );
        } else {
            assert!(view.legal_moves.is_empty() && !view.must_draw);
        }
    }
    let _ = sheet_out(game.rules(), game.sheet(), game.winner());
    assert!(
        game.view(Some(seats)).is_err(),
        "a seat past the table may look"
    );

    let Some(seat) = game.turn() else {
        return;
    };
    let mut moves: Vec<Action> = game
        .legal_moves()
        .iter()
        .map(|m| Action::Play {
            seat,
            tile: m.tile,
            end: m.end,
        })
        .collect();
    if game.must_draw() {
        moves.push(Action::Draw { seat });
    }
    let mut events = Vec::new();
    for action in moves {
        let mut after = game.clone();
        events.clear();
        if let Err(e) = after.apply(action, &mut events) {
            panic!("legal {action:?} refused: {e}: {game:?}");
        }
        assert_applied(game, action, &after, &events);
    }

    // A world sampled from the knowledge of the seat on turn (what the bots search)
    // agrees with it.
    let knowledge = game
        .knowledge(seat)
        .expect("the seat on turn knows its hand");
    let mut rng = ChaCha8Rng::seed_from_u64(u64::from(game.moves()));
    let world = knowledge.sample(&mut rng);
    assert_eq!(world.hand(seat), game.hand(seat));
    assert_eq!(world.layout(), game.layout());
    assert_eq!(world.turn(), Some(seat));
    assert!(world.hand_sizes().eq(game.hand_sizes()));
    assert_eq!(world.boneyard_len(), game.boneyard_len());
    assert_eq!(world.legal_moves(), game.legal_moves());
}

/// States of [`real_records`] as internal messages, for [`tweaked_state`].
fn real_states() -> &'static [ipb::State] {
    static STATES: LazyLock<Vec<ipb::State>> = LazyLock::new(|| {
        real_records()
            .iter()
            .map(|record| {
                let bytes = plaintext::encode(record);
                ipb::State::decode(bytes.as_slice()).expect("own encoding")
            })
            .collect()
    });
    &STATES
}

/// Values in a sheet row of `s` (2 per side), from its rules as they now are (any
/// number of players taken into 1..=4 so that the rows have a shape).
fn row_len(s: &ipb::State) -> usize {
    let rules = s.rules.unwrap_or_default();
    let players = (rules.players as usize).clamp(1, 4);
    let sides = if rules.partnership && players == 4 {
        2
    } else {
        players
    };
    2 * sides
}

/// A state of a real game (a little-endian `u16` picks it) with up to 16 fields set
/// to extreme or chosen values: three bytes a tweak (field, value, index), four more
/// when the value is taken from the input, one more for a run of sheet rows. Returns
/// its encoding.
///
/// Values (`value % 16`): 0, 1, `u32::MAX`, `i32::MAX`, the largest sheet entry in
/// fives (`MAX_POINTS / 5`) and its negative, one past each, the largest action count
/// before a deal ([`MOVES_LIMIT`]) and one past it, the most hands that count allows,
/// one five short of the target, a word from the input, the largest play byte (139),
/// a draw (255), and `value >> 4`.
///
/// Fields (`field % 28`): the action count, the hand number, the leader (set, none),
/// a sheet entry, a column of a run of sheet rows, a carried entry, the carried row
/// (added or taken away), a stray sheet value (pushed) or a missing one (removed), the
/// next hand (the current one written off as a row with one entry set, the oldest row
/// folded into the carried one when the page is full, the counters moved on and a
/// leader chosen), an action byte (set, pushed, truncated to, removed, inserted), the
/// rules (players, target, hand size, settlement, partnership), the seed (changed or
/// taken away), the match id (cut, lengthened, emptied), no rules or a match before its
/// first deal, the seats (a seat's byte set, one pushed, cut, emptied), the credentials
/// (cut, lengthened, a byte set), the secret (cut, lengthened, emptied) and the previous
/// state id (emptied, set to 16 bytes, cut, lengthened).
pub fn tweaked_state(input: &mut &[u8]) -> Vec<u8> {
    let states = real_states();
    let pick = u16::from(byte(input)) | u16::from(byte(input)) << 8;
    let mut s = states[usize::from(pick) % states.len()].clone();
    for _ in 0..byte(input) % 17 {
        let (field, which, at) = (byte(input), byte(input), usize::from(byte(input)));
        let target_fives = s.rules.as_ref().map_or(0, |r| r.target_fives);
        let max_fives = (MAX_POINTS / 5) as u32;
        let v: u32 = match which % 16 {
            0 => 0,
            1 => 1,
            2 => u32::MAX,
            3 => i32::MAX as u32,
            4 => max_fives,
            5 => max_fives.wrapping_neg(),
            6 => max_fives + 1,
            7 => (max_fives + 1).wrapping_neg(),
            8 => MOVES_LIMIT,
            9 => MOVES_LIMIT + 1,
            10 => MOVES_LIMIT / 2 + 1,
            11 => target_fives.wrapping_sub(1),
            12 => word(input),
            13 => 139,
            14 => 255,
            _ => u32::from(which >> 4),
        };
        let signed = v as i32;
        let row = row_len(&s);
        match field % 28 {
            0 => s.moves = v,
            1 => s.hand = v,
            2 => s.starter = Some(v),
            3 => s.starter = None,
            4 => {
                let n = s.sheet.len();
                if n > 0 {
                    s.sheet[at % n] = signed;
                }
            }
            5 => {
                // Column `at % row` of the rows from `at / row` on, `count` of them.
                let count = usize::from(byte(input));
                let (column, start) = (at % row, at / row);
                for values in s.sheet.chunks_mut(row).skip(start).take(count) {
                    if let Some(x) = values.get_mut(column) {
                        *x = signed;
                    }
                }
            }
            6 => {
                if s.carried.is_empty() {
                    s.carried = vec![0; row];
                }
                let n = s.carried.len();
                s.carried[at % n] = signed;
            }
            7 => {
                if s.carried.is_empty() {
                    s.carried = vec![signed; row];
                } else {
                    s.carried.clear();
                }
            }
            8 => s.sheet.push(signed),
            9 => {
                let n = s.sheet.len();
                if n > 0 {
                    s.sheet.remove(at % n);
                }
            }
            10 => next_hand(&mut s, row, at, signed),
            11 => {
                let n = s.actions.len();
                if n > 0 {
                    s.actions[at % n] = v as u8;
                }
            }
            12 => s.actions.push(v as u8),
            13 => {
                let n = s.actions.len();
                s.actions.truncate(at % (n + 1));
            }
            14 => {
                let n = s.actions.len();
                if n > 0 {
                    s.actions.remove(at % n);
                }
            }
            15 => {
                let n = s.actions.len();
                s.actions.insert(at % (n + 1), v as u8);
            }
            16 => s.rules.get_or_insert_with(Default::default).players = v,
            17 => s.rules.get_or_insert_with(Default::default).target_fives = v,
            18 => s.rules.get_or_insert_with(Default::default).hand_size = signed,
            19 => s.rules.get_or_insert_with(Default::default).settlement = signed,
            20 => {
                let rules = s.rules.get_or_insert_with(Default::default);
                rules.partnership = !rules.partnership;
            }
            21 => {
                s.seed = match at % 3 {
                    0 => Some(s.seed.unwrap_or(0) ^ u64::from(v) << (at % 33)),
                    1 => None,
                    _ => Some(u64::MAX),
                }
            }
            22 => match at % 3 {
                0 => s.match_id.truncate(at % 17),
                1 => s.match_id.push(v as u8),
                _ => s.match_id.clear(),
            },
            23 => {
                if at % 2 == 0 {
                    s.rules = None;
                } else {
                    s.hand = 0;
                    s.starter = None;
                    s.moves = 0;
                    s.sheet.clear();
                    s.carried.clear();
                    s.actions.clear();
                }
            }
            24 => {
                let n = s.seats.len();
                match at % 4 {
                    0 if n > 0 => s.seats[(at >> 2) % n] = v as u8,
                    0 | 1 => s.seats.push(v as u8),
                    2 => s.seats.truncate((at >> 2) % (n + 1)),
                    _ => s.seats.clear(),
                }
            }
            25 => {
                let n = s.credentials.len();
                match at % 3 {
                    0 => s.credentials.truncate((at >> 2) % (n + 1)),
                    1 => s.credentials.push(v as u8),
                    _ if n > 0 => s.credentials[(at >> 2) % n] = v as u8,
                    _ => {}
                }
            }
            26 => match at % 3 {
                0 => s.secret.truncate(at % 17),
                1 => s.secret.push(v as u8),
                _ => s.secret.clear(),
            },
            _ => match at % 4 {
                0 => s.previous.clear(),
                1 => s.previous = vec![v as u8; 16],
                2 => s.previous.truncate(at % 17),
                _ => s.previous.push(v as u8),
            },
        }
    }
    s.encode_to_vec()
}

/// Moves `s` on to its next hand as a scorekeeper would write it: the current hand's
/// row (zeros, but for entry `at % row` set to `value`) added to the sheet, the oldest
/// row folded into the carried one once the sheet holds `SHEET_ROWS - 1` rows, the
/// counters moved on by the deal and the hand's actions, the actions cleared and a
/// leader chosen (`at`'s top bit: none; else seat `at % 4`).
fn next_hand(s: &mut ipb::State, row: usize, at: usize, value: i32) {
    if s.hand > 0 {
        let mut written = vec![0; row];
        written[at % row] = value;
        s.sheet.extend_from_slice(&written);
        if s.sheet.len() / row >= SHEET_ROWS {
            let oldest: Vec<i32> = s.sheet.drain(..row).collect();
            if s.carried.len() != row {
                s.carried = vec![0; row];
            }
            for (c, o) in s.carried.iter_mut().zip(oldest) {
                *c = c.wrapping_add(o);
            }
        }
        s.moves = s
            .moves
            .saturating_add(1)
            .saturating_add(s.actions.len() as u32);
    }
    s.hand = s.hand.saturating_add(1);
    s.actions.clear();
    s.starter = (at & 0x80 == 0 && s.hand > 1).then_some((at % 4) as u32);
}
