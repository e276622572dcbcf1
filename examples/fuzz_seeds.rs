//! Writes seed corpora for the fuzz targets in `fuzz/` from real games: tokens and
//! plaintexts (`token`), plaintexts with the bot's next moves, fresh games and real
//! states with fields set to their limits (`engine`) and requests carrying real tokens
//! and the credentials of the seats they name (`service`), sealed under the fuzz key
//! ring. The tokens are sealed as the service seals them: seats of every kind (humans
//! with their credentials, bots, before a first deal some seats open), the match's
//! secret, and each state's previous state id. `fuzz/src/lib.rs` holds the same keys,
//! secret, credentials and seats (`seats_for`), and documents the input formats.
//!
//! `cargo run --example fuzz_seeds -- fuzz/corpus` (what `.ci/fuzz` does, with the
//! example `cargo test` built): a few dozen small files per target, under
//! `<dir>/token`, `<dir>/engine` and `<dir>/service`.

use std::path::{Path, PathBuf};

use allfives::engine::bot::{Strategy, choose};
use allfives::engine::suggest::Level;
use allfives::engine::{Action, Game, HandSizeRule, Phase, Rules, SettlementRule};
use allfives::proto::v1 as pb;
use allfives::service::convert::{end_out, tile_out};
use allfives::state::{self, KeyRing, Player, Record, Seats, StateId, lineage, plaintext};
use prost::Message;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

/// The fuzz key ring (`fuzz/src/lib.rs`, `KEYS`).
const KEYS: [(u8, [u8; 32]); 2] = [(1, [0x5a; 32]), (2, [0xa5; 32])];

/// The real matches' secret (`fuzz/src/lib.rs`, `SECRET`).
const SECRET: [u8; 16] = [0x5e; 16];

/// A claimed seat's credential in the real matches (`fuzz/src/lib.rs`, `credential`).
fn credential(seat: usize) -> [u8; 16] {
    [0xc0 | seat as u8; 16]
}

/// Who plays each seat in match `table` after `hands` deals (`fuzz/src/lib.rs`,
/// `seats_for`).
fn seats_for(table: usize, players: usize, hands: u32) -> Seats {
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

/// The records of a match's states, as the service seals them: each state's previous
/// is the id of the one sealed before; none for a state with a bot on turn, which the
/// service never seals (`fuzz/src/lib.rs`, `chained`).
fn chained(table: usize, states: &[Game]) -> Vec<Option<Record>> {
    let mut previous: Option<StateId> = None;
    states
        .iter()
        .map(|game| {
            let seats = seats_for(table, game.rules().players, game.hand_number());
            if game
                .turn()
                .is_some_and(|t| matches!(seats.0[t], Player::Bot(_)))
            {
                return None;
            }
            let record = Record {
                match_id: allfives::state::MatchId([table as u8; 16]),
                game: game.clone(),
                seats,
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

/// States picked from each match.
const POINTS: usize = 8;

fn main() -> std::io::Result<()> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or("fuzz/corpus".into()));
    let ring = KeyRing::new(KEYS.to_vec(), None).expect("ring");
    let mut written = 0;
    let mut put = |target: &str, name: String, bytes: &[u8]| -> std::io::Result<()> {
        let path = dir.join(target);
        std::fs::create_dir_all(&path)?;
        std::fs::write(Path::new(&path).join(format!("seed-{name}")), bytes)?;
        written += 1;
        Ok(())
    };
    use HandSizeRule::{SevenFive, Standard};
    use SettlementRule::{OwnPipsOff, WinnerTakesPips};
    let tables = [
        (2, false, Standard, OwnPipsOff, 100, Strategy::Greedy),
        (3, false, SevenFive, WinnerTakesPips, 100, Strategy::Greedy),
        (4, true, Standard, OwnPipsOff, 100, Strategy::Greedy),
        // Random players at four seats, own pips off: a long match, past the 32 hands
        // the sheet keeps in full (its later tokens carry a folded row).
        (4, false, Standard, OwnPipsOff, 200, Strategy::Random),
    ];
    for (t, (players, partnership, hand_size, settlement, target, strategy)) in
        tables.into_iter().enumerate()
    {
        let rules = Rules {
            players,
            partnership,
            hand_size,
            target,
            settlement,
            ..Rules::for_players(players)
        };
        let (states, actions) = whole_match(rules, t as u64, strategy);
        let records = chained(t, &states);
        let sides = rules.sides() as u8;
        // Fresh-game seeds: the rules and seed, then "the first legal move" throughout.
        let bits = u8::from(partnership)
            | (hand_size as u8 % 3) << 1
            | u8::from(settlement == WinnerTakesPips) << 7;
        let mut fresh = vec![0, (players - 2) as u8, bits, (target / 5 - 1) as u8];
        fresh.extend_from_slice(&(t as u64).to_le_bytes());
        fresh.extend(std::iter::repeat_n(3u8, 300));
        put("engine", format!("{t}-fresh"), &fresh)?;
        // Real states picked by number with fields set to their limits (tweaks of three
        // bytes: field, value, index; see `tweaked_state`), then "the first legal move".
        let pick = (t as u16 * 40).to_le_bytes();
        let tweaks: [(&str, Vec<u8>); 5] = [
            // The action count at the most a token holds before a deal.
            ("limit", vec![1, 0, 8, 0]),
            // As many hands as that count allows, at that count.
            ("hands", vec![2, 0, 8, 0, 1, 10, 0]),
            // Sixteen more hands written off, no leader: the sheet folds its rows.
            (
                "fold",
                [16].into_iter().chain([10, 0, 0x80].repeat(16)).collect(),
            ),
            // Side 0's settlement in the first row at the most a sheet entry may be
            // (the run tweak: column, first row and a count).
            ("points", vec![1, 5, 5, sides, 1]),
            // A side one five short of the target in the next hand's row.
            ("target", vec![1, 10, 11, 0]),
        ];
        for (what, tweak) in tweaks {
            let mut bytes = vec![2, pick[0], pick[1]];
            bytes.extend_from_slice(&tweak);
            bytes.extend(std::iter::repeat_n(3u8, 100));
            put("engine", format!("{t}-tweaked-{what}"), &bytes)?;
        }

        for p in 0..POINTS {
            // The first state from the point on that the service would seal (the last,
            // the match over, always is).
            let i = p * (states.len() - 1) / (POINTS - 1);
            let Some((i, Some(record))) =
                records.iter().enumerate().skip(i).find(|r| r.1.is_some())
            else {
                continue;
            };
            let name = format!("{t}-{p}");
            let plaintext = plaintext::encode(record);
            let (token, _) = state::seal(&ring, record).expect("seal");
            put("token", format!("{name}-token"), &token)?;
            put("token", format!("{name}-plain"), &plaintext)?;

            // The plaintext, then the next (up to) 24 moves as the bot chose them.
            let mut engine = vec![1];
            engine.extend_from_slice(&(plaintext.len() as u16).to_le_bytes());
            engine.extend_from_slice(&plaintext);
            for (game, action) in states[i..].iter().zip(&actions[i..]).take(24) {
                engine.extend(action_bytes(game, action));
            }
            put("engine", name.clone(), &engine)?;

            for (handler, request) in requests(record, &token) {
                // The token and the credential as the request has them.
                let mut bytes = vec![handler, 0, 0, 0];
                bytes.extend_from_slice(&request);
                put("service", format!("{name}-{handler}"), &bytes)?;
            }
        }
    }
    println!("fuzz_seeds: wrote {written} files under {}", dir.display());
    Ok(())
}

/// Every state of a match played by the engine's simple player `strategy`, and the
/// action taken in each (the last state, the match over, has none).
fn whole_match(rules: Rules, seed: u64, strategy: Strategy) -> (Vec<Game>, Vec<Action>) {
    let mut game = Game::new(rules, seed).expect("rules");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut scratch = Vec::new();
    let (mut states, mut actions) = (vec![game.clone()], Vec::new());
    while let Some(action) = choose(&game, strategy, &mut rng, &mut scratch) {
        game.apply(action, &mut Vec::new()).expect("a bot's move");
        actions.push(action);
        states.push(game.clone());
    }
    (states, actions)
}

/// The engine target's bytes for `action` in `game`: "legal move i" for a play, "what
/// the seat must do" for a draw or a deal (see `fuzz/src/lib.rs`, `next_action`).
fn action_bytes(game: &Game, action: &Action) -> Vec<u8> {
    match action {
        Action::Play { tile, end, .. } => {
            let index = game
                .legal_moves()
                .iter()
                .position(|m| m.tile == *tile && m.end == *end)
                .unwrap_or(0);
            vec![3 | (index as u8) << 2]
        }
        Action::Draw { .. } | Action::Deal | Action::Forfeit { .. } => vec![3],
    }
}

/// Requests (handler byte, encoded message) a client holding every human seat's
/// credential would send in the match `record` holds (the handler byte's top bit: on a
/// server that takes client seeds).
fn requests(record: &Record, token: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let game = &record.game;
    let state = token.to_vec();
    let held = |seat: usize| match record.seats.0[seat] {
        Player::Human(c) => Some(c.to_vec()),
        _ => None,
    };
    // The seat on turn if it is a human's, else the first claimed seat, as the viewer.
    let viewer = game
        .turn()
        .filter(|&s| held(s).is_some())
        .or_else(|| (0..game.rules().players).find(|&s| held(s).is_some()));
    let mut out = vec![(
        4,
        pb::ScoreRequest {
            state: state.clone().into(),
            viewer: viewer.map(|s| s as u32),
            credential: viewer.and_then(held).unwrap_or_default(),
            include_hand_events: true,
        }
        .encode_to_vec(),
    )];
    if let Some(seat) = game.turn()
        && let Some(credential) = held(seat)
    {
        out.push((
            5,
            pb::SuggestRequest {
                state: state.clone().into(),
                seat: seat as u32,
                level: pb::BotLevel::Hard as i32,
                worlds: 4,
                seed: Some(1),
                credential,
            }
            .encode_to_vec(),
        ));
    }
    if let Some(open) = (0..game.rules().players).find(|&s| record.seats.0[s] == Player::Open) {
        out.push((
            6 | 0x80,
            pb::ClaimSeatRequest {
                state: state.clone(),
                seat: open as u32,
                ..Default::default()
            }
            .encode_to_vec(),
        ));
    }
    let credential = |seat: usize| held(seat).unwrap_or_default();
    match (game.phase(), game.turn()) {
        (Phase::Dealing, _) => out.push((
            1,
            pb::DealRequest {
                state: state.into(),
                viewer: Some(0),
                credential: credential(0),
            }
            .encode_to_vec(),
        )),
        (Phase::Playing, Some(seat)) => match game.legal_moves().first() {
            Some(m) => out.push((
                2,
                pb::PlayRequest {
                    state: state.into(),
                    seat: seat as u32,
                    tile: Some(tile_out(m.tile)),
                    end: end_out(m.end),
                    viewer: Some(seat as u32),
                    credential: credential(seat),
                }
                .encode_to_vec(),
            )),
            None => out.push((
                3,
                pb::DrawRequest {
                    state: state.into(),
                    seat: seat as u32,
                    viewer: Some(seat as u32),
                    credential: credential(seat),
                }
                .encode_to_vec(),
            )),
        },
        _ => {
            // Seat 0 claimed, the last seat a bot, the others claimed or left open.
            let players = game.rules().players;
            let seats = (0..players)
                .map(|seat| pb::SeatSetup {
                    bot: match seat + 1 == players {
                        true => pb::BotLevel::Medium as i32,
                        false => pb::BotLevel::Unspecified as i32,
                    },
                    claim: seat + 1 < players && seat % 2 == 0,
                    display_name: String::new(),
                    pass: String::new(),
                })
                .collect();
            let rules = Some(pb::Rules {
                players: players as u32,
                target: 50,
                ..Default::default()
            });
            // Seeded, on a server that takes seeds; and unseeded, on one that does not.
            out.push((
                0x80,
                pb::NewGameRequest {
                    rules,
                    seed: Some(7),
                    viewer: Some(0),
                    seats,
                }
                .encode_to_vec(),
            ));
            out.push((
                0,
                pb::NewGameRequest {
                    rules,
                    ..Default::default()
                }
                .encode_to_vec(),
            ));
        }
    }
    out
}
