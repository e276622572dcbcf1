//! What the fuzz targets share: the fixed test key ring, real games and their tokens,
//! the input formats, and the checks every decoded game must pass.
//!
//! Input formats (the seed writer, `examples/fuzz_seeds.rs`, writes the same):
//! - `token`: any bytes; fed to `state::open` (as a token) and `codec::decode` (as a
//!   plaintext).
//! - `engine`: a game, then actions. The first byte `% 3` chooses the game: 0, 11
//!   bytes of rules and seed for a fresh game ([`fresh_game`]); 1, a little-endian
//!   `u16` length and that many bytes of plaintext for `codec::decode`; 2, a state of a
//!   real game with fields set to extreme values ([`tweaked_state`]), for
//!   `codec::decode`. The rest are actions ([`next_action`]).
//! - `service`: a handler byte (`% 5`: NewGame, Deal, Play, Draw, Score), a
//!   little-endian `u16` naming a real token to put in the request's `state` (0: keep
//!   the decoded one), then the request message's protobuf bytes.

use std::sync::LazyLock;

use allfives::engine::bot::{Strategy, choose};
use allfives::engine::{Action, End, Game, HandSizeRule, Phase, Rules, SettlementRule, Tile};
use allfives::proto::internal as ipb;
use allfives::service::convert::{sheet_out, view_out};
use allfives::state::{KeyRing, Record, Tokens, codec};
use prost::Message;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

/// The fuzz key ring: key 1 seals, key 2 also opens. The seed writer uses the same.
pub const KEYS: [(u8, [u8; 32]); 2] = [(1, [0x5a; 32]), (2, [0xa5; 32])];

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
/// engine's simple players.
pub fn real_games() -> Vec<Game> {
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
    let mut games = Vec::new();
    for (i, (players, partnership, hand_size, settlement, target)) in tables.into_iter().enumerate()
    {
        let rules = Rules {
            players,
            partnership,
            hand_size,
            target,
            settlement,
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
    }
    games
}

/// Tokens of [`real_games`], sealed under the fuzz key ring.
pub fn real_tokens() -> &'static [Vec<u8>] {
    static TOKENS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
        real_games()
            .into_iter()
            .enumerate()
            .map(|(i, game)| {
                let record = Record {
                    match_id: [i as u8; 16],
                    game,
                };
                allfives::state::seal(ring(), &record).expect("seal")
            })
            .collect()
    });
    &TOKENS
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

/// Everything a game the service accepted must allow: it is consistent, its encoding
/// decodes to itself, and every seat's view, the spectator's and the score sheet
/// render as the service would render them.
pub fn assert_sound(game: &Game) {
    assert_consistent(game);
    assert_renders(game);
}

/// The game passes `Game::check` and its encoding decodes to itself.
pub fn assert_consistent(game: &Game) {
    if let Err(e) = game.check() {
        panic!("check failed: {e}: {game:?}");
    }
    let record = Record {
        match_id: [7; 16],
        game: game.clone(),
    };
    let bytes = codec::encode(&record);
    assert_eq!(
        codec::decode(&bytes).as_ref(),
        Ok(&record),
        "round trip of {game:?}"
    );
}

/// Every seat's view, the spectator's and the score sheet render as the service would
/// render them; the seat on turn always has something to do.
pub fn assert_renders(game: &Game) {
    let seats = game.rules().players;
    for viewer in std::iter::once(None).chain((0..seats).map(Some)) {
        let view = game.view(viewer).expect("a seat at the table may look");
        let out = view_out(&view, "match");
        assert_eq!(out.hand_sizes.len(), seats);
        if viewer.is_some() && viewer == game.turn() {
            // The seat on turn can always act: play, draw or (never) nothing.
            assert!(
                !view.legal_moves.is_empty() || view.must_draw,
                "seat on turn with nothing to do: {game:?}"
            );
        }
    }
    let _ = sheet_out(game.rules(), game.sheet(), game.winner());
}

/// States of [`real_games`] as internal messages, for [`tweaked_state`].
fn real_states() -> &'static [ipb::State] {
    static STATES: LazyLock<Vec<ipb::State>> = LazyLock::new(|| {
        real_games()
            .into_iter()
            .map(|game| {
                let bytes = codec::encode(&Record {
                    match_id: [3; 16],
                    game,
                });
                ipb::State::decode(bytes.as_slice()).expect("own encoding")
            })
            .collect()
    });
    &STATES
}

/// A state of a real game (a little-endian `u16` picks it) with up to 16 fields set
/// to extreme or chosen values: three bytes a tweak (field, value, index), four more
/// when the value is taken from the input. Returns its encoding.
pub fn tweaked_state(input: &mut &[u8]) -> Vec<u8> {
    let states = real_states();
    let pick = u16::from(byte(input)) | u16::from(byte(input)) << 8;
    let mut s = states[usize::from(pick) % states.len()].clone();
    for _ in 0..byte(input) % 17 {
        let (field, which, at) = (byte(input), byte(input), usize::from(byte(input)));
        let v: u32 = match which % 8 {
            0 => 0,
            1 => 1,
            2 => u32::MAX,
            3 => i32::MAX as u32,
            4 => (1 << 28) / 5,
            5 => (-((1 << 28) / 5)) as u32,
            6 => {
                let b = take(input, 4);
                let mut word = [0u8; 4];
                word[..b.len()].copy_from_slice(b);
                u32::from_le_bytes(word)
            }
            _ => u32::from(which >> 3),
        };
        let signed = v as i32;
        let set = |values: &mut Vec<i32>| {
            let n = values.len();
            if n > 0 {
                values[at % n] = signed;
            }
        };
        let fill = |values: &mut Vec<i32>| values.iter_mut().for_each(|x| *x = signed);
        match field % 28 {
            0 => s.moves = v,
            1 => s.hands_dealt = v,
            2 => s.hand.get_or_insert_with(Default::default).number = v,
            3 => s.hand.get_or_insert_with(Default::default).turn = v,
            4 => s.next_starter = Some(v),
            5 => s.next_starter = None,
            6 => s.winner = Some(v),
            7 => s.winner = None,
            8 => set(&mut s.scores),
            9 => fill(&mut s.scores),
            10 => set(&mut s.sheet),
            11 => fill(&mut s.sheet),
            12 => set(&mut s.carried),
            13 => fill(&mut s.carried),
            14 => {
                let hands = &mut s.hand.get_or_insert_with(Default::default).hands;
                let n = hands.len();
                if n > 0 {
                    hands[at % n] = v;
                }
            }
            15 => {
                let boneyard = &mut s.hand.get_or_insert_with(Default::default).boneyard;
                let n = boneyard.len();
                if n > 0 {
                    boneyard[at % n] = v as u8;
                }
            }
            16 => {
                let placements = &mut s.hand.get_or_insert_with(Default::default).placements;
                let n = placements.len();
                if n > 0 {
                    placements[at % n] = v as u8;
                }
            }
            17..=19 => {
                let hand = s.hand.get_or_insert_with(Default::default);
                let result = hand.result.get_or_insert_with(Default::default);
                match field % 28 {
                    17 => result.seat = v,
                    18 => result.end = signed,
                    _ => result.settlement.push(signed),
                }
            }
            20 => s.rules.get_or_insert_with(Default::default).players = v,
            21 => s.rules.get_or_insert_with(Default::default).target_fives = v,
            22 => s.rules.get_or_insert_with(Default::default).hand_size = signed,
            23 => s.rules.get_or_insert_with(Default::default).settlement = signed,
            24 => {
                let rules = s.rules.get_or_insert_with(Default::default);
                rules.partnership = !rules.partnership;
            }
            25 => s.seed = u64::from(v) << (at % 33),
            26 => s.hand = None,
            _ => match at % 4 {
                0 if !s.sheet.is_empty() => {
                    let n = s.sheet.len();
                    s.sheet.remove(at % n);
                }
                1 => s.sheet.push(signed),
                2 => s
                    .hand
                    .get_or_insert_with(Default::default)
                    .boneyard
                    .push(v as u8),
                _ => s
                    .hand
                    .get_or_insert_with(Default::default)
                    .placements
                    .push(v as u8),
            },
        }
    }
    s.encode_to_vec()
}
