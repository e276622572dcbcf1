//! Encoding the engine's game as the token's plaintext (`allfives.internal.v1.State`)
//! and decoding it back, refusing anything the engine could not have made.

use prost::Message;

use crate::engine::hand::Hand;
use crate::engine::{
    Arm, End, Game, HandEnd, HandResult, HandSizeRule, Layout, Rules, ScoreSheet, SettlementRule,
    SheetRow, Tile, TileSet,
};
use crate::proto::internal as pb;

/// The plaintext format this build writes and reads.
pub const STATE_FORMAT: u32 = 1;
/// Bytes in a match id.
pub const MATCH_ID_LEN: usize = 16;
/// Scores and sheet entries beyond this many points are refused as corrupt.
const MAX_POINTS: i64 = 1 << 28;

/// A game as carried by a token: the engine's game and the match id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub match_id: [u8; MATCH_ID_LEN],
    pub game: Game,
}

/// Why a plaintext could not be decoded into a game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("state format {0} is not supported")]
    UnsupportedFormat(u32),
    #[error("the state is corrupt: {0}")]
    Corrupt(&'static str),
}

fn corrupt(what: &'static str) -> DecodeError {
    DecodeError::Corrupt(what)
}

/// Encodes a record as the token's plaintext.
pub fn encode(record: &Record) -> Vec<u8> {
    let game = &record.game;
    let rules = &game.rules;
    let sides = rules.sides();
    let fives = |v: i32| v / 5;
    let row = |r: &SheetRow| -> Vec<i32> {
        r.play[..sides]
            .iter()
            .chain(&r.settlement[..sides])
            .map(|&v| fives(v))
            .collect()
    };
    let state = pb::State {
        format: STATE_FORMAT,
        match_id: record.match_id.to_vec(),
        rules: Some(pb::Rules {
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
        }),
        seed: game.seed,
        hands_dealt: game.hands_dealt,
        hand: game.hand.as_ref().map(|h| encode_hand(h, rules)),
        scores: game.scores[..sides].iter().map(|&v| fives(v)).collect(),
        sheet: game.sheet.rows().flat_map(row).collect(),
        carried: game.sheet.carried().map(row).unwrap_or_default(),
        next_starter: game.next_starter.map(|s| s as u32),
        winner: game.winner.map(|s| s as u32),
        moves: game.moves,
    };
    state.encode_to_vec()
}

fn encode_hand(hand: &Hand, rules: &Rules) -> pb::Hand {
    pb::Hand {
        number: hand.number,
        hands: hand.hands[..rules.players]
            .iter()
            .map(|h| h.bits())
            .collect(),
        boneyard: hand.boneyard().iter().map(|t| t.index()).collect(),
        placements: hand
            .layout
            .placements()
            .iter()
            .map(|p| {
                let arm = match p.arm {
                    Arm::Lead => 0,
                    Arm::End(end) => end as u8 + 1,
                };
                p.tile.index() * 5 + arm
            })
            .collect(),
        turn: hand.turn as u32,
        result: hand.result.map(|r| {
            let (end, seat) = match r.end {
                HandEnd::Domino { seat } => (pb::HandEnd::Domino, seat),
                HandEnd::Blocked => (pb::HandEnd::Blocked, 0),
                HandEnd::TargetReached { seat } => (pb::HandEnd::TargetReached, seat),
            };
            pb::HandResult {
                end: end as i32,
                seat: seat as u32,
                settlement: r.settlement[..rules.sides()]
                    .iter()
                    .map(|&v| v / 5)
                    .collect(),
            }
        }),
        voids: hand
            .voids
            .iter()
            .enumerate()
            .fold(0, |bits, (seat, &v)| bits | u32::from(v) << (7 * seat)),
    }
}

/// Decodes a token's plaintext, checking that it is a game the engine could have made.
pub fn decode(bytes: &[u8]) -> Result<Record, DecodeError> {
    let state = pb::State::decode(bytes).map_err(|_| corrupt("not a state message"))?;
    if state.format != STATE_FORMAT {
        return Err(DecodeError::UnsupportedFormat(state.format));
    }
    let match_id: [u8; MATCH_ID_LEN] = state
        .match_id
        .as_slice()
        .try_into()
        .map_err(|_| corrupt("match id"))?;
    let rules = decode_rules(state.rules.as_ref().ok_or(corrupt("rules missing"))?)?;
    let sides = rules.sides();
    let hand = state
        .hand
        .as_ref()
        .map(|h| decode_hand(h, &rules))
        .transpose()?;
    // The engine adds one to these with every deal and move: a game the engine made
    // never gets near the limit, and one at the limit would overflow.
    if state.moves == u32::MAX || state.hands_dealt == u32::MAX {
        return Err(corrupt("counter at its limit"));
    }
    let mut game = Game::new(rules, state.seed).map_err(|_| corrupt("rules"))?;
    game.hands_dealt = state.hands_dealt;
    game.hand = hand;
    game.scores = per_side(&state.scores, sides)?;
    game.sheet = decode_sheet(&state, sides)?;
    game.next_starter = state.next_starter.map(|s| s as usize);
    game.winner = state.winner.map(|s| s as usize);
    game.moves = state.moves;
    game.check().map_err(|e| corrupt(e.0))?;
    Ok(Record { match_id, game })
}

fn decode_rules(r: &pb::Rules) -> Result<Rules, DecodeError> {
    let rules = Rules {
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
    };
    rules.validate().map_err(|_| corrupt("rules"))?;
    Ok(rules)
}

/// Points per side from values in fives; exactly `sides` values.
fn per_side(values: &[i32], sides: usize) -> Result<[i32; 4], DecodeError> {
    if values.len() != sides {
        return Err(corrupt("values per side"));
    }
    let mut out = [0i32; 4];
    for (slot, &v) in out.iter_mut().zip(values) {
        let points = i64::from(v) * 5;
        if points.abs() > MAX_POINTS {
            return Err(corrupt("points out of range"));
        }
        *slot = points as i32;
    }
    Ok(out)
}

fn decode_row(
    values: &[i32],
    sides: usize,
    first: u32,
    last: u32,
) -> Result<SheetRow, DecodeError> {
    let (play, settlement) = values.split_at(sides);
    Ok(SheetRow {
        first_hand: first,
        last_hand: last,
        play: per_side(play, sides)?,
        settlement: per_side(settlement, sides)?,
    })
}

fn decode_sheet(state: &pb::State, sides: usize) -> Result<ScoreSheet, DecodeError> {
    let width = 2 * sides;
    let dealt = state.hands_dealt;
    let kept = dealt.min(crate::engine::sheet::SHEET_ROWS as u32);
    if state.sheet.len() != kept as usize * width {
        return Err(corrupt("sheet rows"));
    }
    let folded = dealt - kept;
    let carried = match (folded, state.carried.len()) {
        (0, 0) => None,
        (n, len) if n > 0 && len == width => Some(decode_row(&state.carried, sides, 1, n)?),
        _ => return Err(corrupt("carried row")),
    };
    let rows = state
        .sheet
        .chunks_exact(width)
        .zip(folded + 1..)
        .map(|(values, hand)| decode_row(values, sides, hand, hand))
        .collect::<Result<Vec<_>, _>>()?;
    // Every entry is within MAX_POINTS, but 33 rows of them can overflow the sheet's
    // running sums (`ScoreSheet::totals`, the rendered sheet): bound their sum too.
    let magnitude: i64 = carried
        .iter()
        .chain(&rows)
        .flat_map(|r| r.play.iter().chain(&r.settlement))
        .map(|&v| i64::from(v).abs())
        .sum();
    if magnitude > MAX_POINTS {
        return Err(corrupt("sheet out of range"));
    }
    ScoreSheet::from_parts(carried, rows).ok_or(corrupt("sheet rows"))
}

fn tile(index: u8) -> Result<Tile, DecodeError> {
    Tile::from_index(index).ok_or(corrupt("tile index"))
}

fn decode_hand(h: &pb::Hand, rules: &Rules) -> Result<Hand, DecodeError> {
    let players = rules.players;
    if h.hands.len() != players {
        return Err(corrupt("hands per seat"));
    }
    let mut hands = [TileSet::EMPTY; 4];
    for (slot, &bits) in hands.iter_mut().zip(&h.hands) {
        *slot = TileSet::from_bits(bits).ok_or(corrupt("hand bits"))?;
    }
    if h.boneyard.len() > 28 || h.placements.len() > 28 {
        return Err(corrupt("too many tiles"));
    }
    let mut boneyard = [Tile::DOUBLE_BLANK; 28];
    for (slot, &index) in boneyard.iter_mut().zip(&h.boneyard) {
        *slot = tile(index)?;
    }
    let mut layout = Layout::new();
    for &byte in &h.placements {
        let t = tile(byte / 5)?;
        let end = match byte % 5 {
            0 => None,
            arm => Some(End::ALL[usize::from(arm - 1)]),
        };
        let legal = match end {
            None => layout.is_empty(),
            Some(e) => !layout.is_empty() && layout.fits(t, e),
        };
        if !legal || layout.tiles().contains(t) {
            return Err(corrupt("layout"));
        }
        layout.place(t, end);
    }
    let turn = h.turn as usize;
    if turn >= players {
        return Err(corrupt("turn"));
    }
    let sides = rules.sides();
    let result = h
        .result
        .as_ref()
        .map(|r| {
            let seat = r.seat as usize;
            if seat >= players {
                return Err(corrupt("result seat"));
            }
            let end = match pb::HandEnd::try_from(r.end) {
                Ok(pb::HandEnd::Domino) => HandEnd::Domino { seat },
                Ok(pb::HandEnd::Blocked) => HandEnd::Blocked,
                Ok(pb::HandEnd::TargetReached) => HandEnd::TargetReached { seat },
                _ => return Err(corrupt("result")),
            };
            Ok(HandResult {
                hand: h.number,
                end,
                hands,
                settlement: per_side(&r.settlement, sides)?,
            })
        })
        .transpose()?;
    if h.voids >= 1 << (7 * players) {
        return Err(corrupt("voids"));
    }
    let voids = std::array::from_fn(|seat| (h.voids >> (7 * seat) & 0x7f) as u8);
    Ok(Hand {
        number: h.number,
        hands,
        boneyard,
        boneyard_len: h.boneyard.len() as u8,
        layout,
        turn,
        result,
        voids,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::bot::{Strategy, choose};
    use rand_chacha::ChaCha8Rng;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn every_state_of_whole_games_round_trips() {
        let mut largest = 0;
        for (i, players) in [2, 3, 4, 4].into_iter().enumerate() {
            let mut rules = Rules::for_players(players);
            rules.partnership = i == 3;
            rules.settlement = if i % 2 == 0 {
                SettlementRule::OwnPipsOff
            } else {
                SettlementRule::WinnerTakesPips
            };
            let mut game = Game::new(rules, i as u64).unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let mut scratch = Vec::new();
            loop {
                let record = Record {
                    match_id: [i as u8; 16],
                    game: game.clone(),
                };
                let bytes = encode(&record);
                largest = largest.max(bytes.len());
                assert_eq!(decode(&bytes), Ok(record));
                let Some(action) = choose(&game, Strategy::Random, &mut rng, &mut scratch) else {
                    break;
                };
                game.apply(action, &mut Vec::new()).unwrap();
            }
        }
        assert!(largest < 470, "largest plaintext {largest}");
    }

    #[test]
    fn impossible_states_are_refused() {
        let mut game = Game::new(Rules::for_players(2), 1).unwrap();
        game.deal().unwrap();
        let bytes = encode(&Record {
            match_id: [0; 16],
            game,
        });
        let good = pb::State::decode(bytes.as_slice()).unwrap();
        type Tamper = Box<dyn Fn(&mut pb::State)>;
        let cases: Vec<(&str, Tamper)> = vec![
            ("format", Box::new(|s| s.format = 2)),
            (
                "match id",
                Box::new(|s| s.match_id.pop().map(drop).unwrap_or(())),
            ),
            (
                "players",
                Box::new(|s| s.rules.as_mut().unwrap().players = 9),
            ),
            (
                "hand size",
                Box::new(|s| s.rules.as_mut().unwrap().hand_size = 0),
            ),
            (
                "duplicate tile",
                Box::new(|s| {
                    let h = s.hand.as_mut().unwrap();
                    let first = h.hands[0].trailing_zeros();
                    h.hands[1] |= 1 << first;
                }),
            ),
            (
                "bad tile index",
                Box::new(|s| s.hand.as_mut().unwrap().boneyard[0] = 28),
            ),
            ("turn", Box::new(|s| s.hand.as_mut().unwrap().turn = 5)),
            (
                "layout",
                Box::new(|s| s.hand.as_mut().unwrap().placements = vec![3]),
            ),
            ("scores", Box::new(|s| s.scores = vec![1, 0])),
            ("sheet", Box::new(|s| s.sheet.clear())),
            ("winner", Box::new(|s| s.winner = Some(7))),
        ];
        for (name, tamper) in cases {
            let mut s = good.clone();
            tamper(&mut s);
            assert!(decode(&s.encode_to_vec()).is_err(), "{name} accepted");
        }
        assert!(decode(b"\xff\xff\xff").is_err());
        assert!(decode(&[]).is_err(), "an empty message has format 0");
    }
}
