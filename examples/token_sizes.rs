//! Measures sealed state-token sizes over simulated games: the largest and the median
//! token seen at every point of every game, per table and player strategy. Exits
//! non-zero past the bar of 464 bytes (512, the most a token may take, less room kept
//! for seat credentials).
//!
//! `cargo run --release --example token_sizes -- [games per row, default 1000]`

use allfives::engine::bot::{Strategy, choose};
use allfives::engine::{Game, Rules, SettlementRule};
use allfives::state::{self, KeyRing, Record};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

/// The largest token allowed.
const BAR: usize = 464;

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
    println!("{games} games per row; sizes in bytes of the sealed token after every action");
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
                        let record = Record {
                            match_id: [0xAA; 16],
                            game: game.clone(),
                        };
                        match state::seal(&ring, &record) {
                            Ok(token) => sizes.push(token.len()),
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
