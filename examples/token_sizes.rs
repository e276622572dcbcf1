//! Measures sealed state-token sizes over simulated games: the largest and the median
//! token seen at every point of every game, per table and player strategy. Exits
//! non-zero past the bar of 512 bytes, the most a token without display names may take
//! (the API's promise, proto/allfives/v1/allfives.proto: 640 bytes with them; a name
//! adds exactly 2 bytes and its own a seat, tests/it/token_length.rs counts them),
//! credentials included.
//!
//! Every token is measured in its largest form: every seat claimed by a human (a
//! 16-byte credential each, where a bot's seat has none and an open one none yet), the
//! match's 16-byte secret, and the previous state's 16-byte id present (as in every
//! token but NewGame's). A token's length does not depend on the values of those bytes
//! (tests/it/token_length.rs), so any values measure the same.
//!
//! `cargo run --release --example token_sizes -- [games per row, default 1000]`

use allfives::engine::bot::{Strategy, choose};
use allfives::engine::{Game, Rules, SettlementRule};
use allfives::state::{self, KeyRing, Player, Record, Seats};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

/// The largest token allowed.
const BAR: usize = 512;

/// A record of `game` in its largest form: every seat at the table claimed (each its
/// own credential), a secret, and a previous state.
fn largest_record(game: &Game) -> Record {
    let mut seats = Seats::OPEN;
    for (seat, slot) in seats.0.iter_mut().enumerate().take(game.rules().players) {
        *slot = Player::Human([0xC0 | seat as u8; 16]);
    }
    Record {
        match_id: allfives::state::MatchId([0xAA; 16]),
        game: game.clone(),
        seats,
        secret: [0x5E; 16],
        previous: Some([0x9B; 16]),
        stored: true,
        names: Default::default(),
        clocks: None,
        player_ids: Default::default(),
    }
}

fn main() {
    let games: u64 = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 1000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: token_sizes [games per row, a positive number]");
            std::process::exit(2);
        }
    };
    let ring = match KeyRing::new(vec![(1, [7; 32])], None) {
        Ok(ring) => ring,
        Err(e) => {
            eprintln!("key ring: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "{games} games per row; sizes in bytes of the sealed token after every action, \
         every seat claimed and a previous state's id present"
    );
    println!(
        "{:<30} {:<8} {:>8} {:>8} {:>8} {:>10}",
        "table", "players", "median", "p99", "largest", "tokens"
    );
    let mut overall = 0;
    for (players, partnership) in [(2, false), (3, false), (4, false), (4, true)] {
        for strategy in [Strategy::Random, Strategy::Greedy] {
            for settlement in [SettlementRule::OwnPipsOff, SettlementRule::WinnerTakesPips] {
                let mut rules = Rules::for_players(players);
                rules.partnership = partnership;
                rules.settlement = settlement;
                let mut sizes = Vec::new();
                for seed in 0..games {
                    let Ok(mut game) = Game::new(rules, seed) else {
                        return;
                    };
                    let mut rng = ChaCha8Rng::seed_from_u64(seed);
                    let mut scratch = Vec::new();
                    let mut events = Vec::new();
                    loop {
                        match state::seal(&ring, &largest_record(&game)) {
                            Ok((token, _)) => sizes.push(token.len()),
                            Err(e) => {
                                eprintln!("seal: {e}");
                                std::process::exit(1);
                            }
                        }
                        let Some(action) = choose(&game, strategy, &mut rng, &mut scratch) else {
                            break;
                        };
                        events.clear();
                        if let Err(e) = game.apply(action, &mut events) {
                            eprintln!("engine refused its own bot's move: {e}");
                            std::process::exit(1);
                        }
                    }
                }
                sizes.sort_unstable();
                let at = |q: f64| sizes[((sizes.len() - 1) as f64 * q) as usize];
                let largest = sizes.last().copied().unwrap_or(0);
                overall = overall.max(largest);
                let seating = if partnership { "partnership" } else { "solo" };
                let table = format!("{seating}, {settlement:?}");
                println!(
                    "{:<30} {:<8} {:>8} {:>8} {:>8} {:>10}   {:?}",
                    table,
                    players,
                    at(0.5),
                    at(0.99),
                    largest,
                    sizes.len(),
                    strategy
                );
            }
        }
    }
    println!("largest token overall: {overall} bytes (bar: {BAR})");
    if overall > BAR {
        std::process::exit(1);
    }
}
