//! Writes seed corpora for the fuzz targets in `fuzz/` from real games: tokens and
//! plaintexts (`token`), plaintexts with the bot's next moves, fresh games and real
//! states with fields set to their limits (`engine`) and requests carrying real tokens
//! (`service`), sealed under the fuzz key ring (`fuzz/src/lib.rs` holds the same keys
//! and documents the input formats).
//!
//! `cargo run --example fuzz_seeds -- fuzz/corpus` (what `.ci/fuzz` does, with the
//! example `cargo test` built): a few dozen small files per target, under
//! `<dir>/token`, `<dir>/engine` and `<dir>/service`.

use std::path::{Path, PathBuf};

use allfives::engine::bot::{Strategy, choose};
use allfives::engine::{Action, Game, HandSizeRule, Phase, Rules, SettlementRule};
use allfives::proto::v1 as pb;
use allfives::service::convert::{end_out, tile_out};
use allfives::state::{self, KeyRing, Record, plaintext};
use prost::Message;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

/// The fuzz key ring (`fuzz/src/lib.rs`, `KEYS`).
const KEYS: [(u8, [u8; 32]); 2] = [(1, [0x5a; 32]), (2, [0xa5; 32])];

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
        };
        let (states, actions) = whole_match(rules, t as u64, strategy);
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
            let i = p * (states.len() - 1) / (POINTS - 1);
            let game = &states[i];
            let name = format!("{t}-{p}");
            let record = Record {
                match_id: [t as u8; 16],
                game: game.clone(),
            };
            let plaintext = plaintext::encode(&record);
            let token = state::seal(&ring, &record).expect("seal");
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

            for (handler, request) in requests(game, &token) {
                let mut bytes = vec![handler, 0, 0];
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
        Action::Draw { .. } | Action::Deal => vec![3],
    }
}

/// Requests (handler number, encoded message) a client would send in `game`.
fn requests(game: &Game, token: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let state = token.to_vec();
    let mut out = vec![(
        4,
        pb::ScoreRequest {
            state: state.clone().into(),
            viewer: game.turn().map(|s| s as u32),
        }
        .encode_to_vec(),
    )];
    if let Some(seat) = game.turn() {
        out.push((
            5,
            pb::SuggestRequest {
                state: state.clone().into(),
                seat: seat as u32,
                level: pb::BotLevel::Hard as i32,
                worlds: 4,
                seed: Some(1),
            }
            .encode_to_vec(),
        ));
    }
    match (game.phase(), game.turn()) {
        (Phase::Dealing, _) => out.push((
            1,
            pb::DealRequest {
                state: state.into(),
                viewer: Some(0),
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
                }
                .encode_to_vec(),
            )),
            None => out.push((
                3,
                pb::DrawRequest {
                    state: state.into(),
                    seat: seat as u32,
                    viewer: Some(seat as u32),
                }
                .encode_to_vec(),
            )),
        },
        _ => out.push((
            0,
            pb::NewGameRequest {
                rules: Some(pb::Rules {
                    players: game.rules().players as u32,
                    target: 50,
                    ..Default::default()
                }),
                seed: Some(7),
                viewer: Some(1),
            }
            .encode_to_vec(),
        )),
    }
    out
}
