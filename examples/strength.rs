//! How strong the fair bots are: bot A against bot B over many matches, every deal
//! replayed with the seats rotated so both bots get the same tiles, with the win rate
//! and its 95% interval. docs/BOTS.md quotes its output.
//!
//! - 2 or 3 or 4 players: one seat is A, the others B; each deal is played once with A
//!   in every seat (2 players: seats swapped).
//! - 4 players in partnership: team 0+2 is A, team 1+3 is B, then swapped.
//!
//! `cargo run --release --example strength -- --a hard --b medium --deals 1000`

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use allfives::engine::suggest::{Level, Search, next_action};
use allfives::engine::{Action, Event, Game, Rules};
use clap::{Parser, ValueEnum};

/// Pit one fair bot against another and print A's win rate with a 95% interval.
#[derive(Parser, Debug)]
#[command(name = "strength")]
struct Args {
    /// Bot A.
    #[arg(long, value_enum, default_value_t = Bot::Hard)]
    a: Bot,
    /// Bot B.
    #[arg(long, value_enum, default_value_t = Bot::Medium)]
    b: Bot,
    /// Deals to play; each is played once per rotation of the seats (2 with two
    /// players or a partnership, 3 with three, 4 with four).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    deals: u64,
    /// Players at the table: 2, 3 or 4.
    #[arg(long, default_value_t = 2)]
    players: usize,
    /// Seats 0+2 (A) against 1+3 (B) (4 players only).
    #[arg(long)]
    partnership: bool,
    /// Points that win the match [default: 250 with 2 players, 200 with 3 or 4].
    #[arg(long)]
    target: Option<u32>,
    /// Worlds a HARD bot samples per decision [default: the service's default].
    #[arg(long)]
    worlds: Option<u32>,
    /// HARD bots play each candidate move out this many actions only, valuing the
    /// points made so far (no settlement) [default: to the end of the hand, as the
    /// service does]. For measuring the choice of search.
    #[arg(long)]
    horizon: Option<u32>,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Seed of the first deal (deal i uses seed + i).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Bot {
    Easy,
    Medium,
    Hard,
}

impl Bot {
    fn level(self) -> Level {
        match self {
            Bot::Easy => Level::Easy,
            Bot::Medium => Level::Medium,
            Bot::Hard => Level::Hard,
        }
    }
}

/// Totals of one worker.
#[derive(Default)]
struct Tally {
    matches: u64,
    a_wins: u64,
    /// Time A spent deciding, and the number of A's decisions.
    a_time: Duration,
    /// How long each of A's decisions took, in microseconds (plays only: a deal or a
    /// forced draw costs nothing).
    a_micros: Vec<u32>,
}

/// Plays deal `seed` with A in the seats `a_seats` and returns whether A won.
fn play(
    rules: Rules,
    args: &Args,
    seed: u64,
    a_seats: &[usize],
    tally: &mut Tally,
) -> Result<bool, String> {
    let mut game = Game::new(rules, seed).map_err(|e| e.to_string())?;
    let mut events: Vec<Event> = Vec::new();
    for step in 0u64.. {
        if step > 200_000 {
            return Err(format!("deal {seed}: the match did not end"));
        }
        let seat = game.turn();
        let is_a = seat.is_some_and(|s| a_seats.contains(&s));
        let level = if is_a { args.a.level() } else { args.b.level() };
        // Each seat's bot has its own repeatable randomness.
        let bot_seed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seat.unwrap_or(9) as u64;
        let start = Instant::now();
        let search = Search {
            horizon: args.horizon,
            ..Search::worlds(args.worlds)
        };
        let Some(action) = next_action(&game, level, search, bot_seed) else {
            break;
        };
        if is_a && matches!(action, Action::Play { .. }) {
            let took = start.elapsed();
            tally.a_time += took;
            tally
                .a_micros
                .push(took.as_micros().min(u128::from(u32::MAX)) as u32);
        }
        events.clear();
        game.apply(action, &mut events)
            .map_err(|e| format!("deal {seed}: the engine refused {action:?}: {e}"))?;
    }
    let winner = game.winner().ok_or(format!("deal {seed}: no winner"))?;
    Ok(a_seats.iter().any(|&s| rules.side_of(s) == winner))
}

/// Wilson score interval for `k` successes in `n` trials, 95%.
fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_964;
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    (centre - half, centre + half)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let rules = Rules {
        partnership: args.partnership,
        target: args
            .target
            .unwrap_or_else(|| Rules::default_target(args.players)),
        ..Rules::for_players(args.players)
    };
    if let Err(e) = rules.validate() {
        eprintln!("strength: invalid rules: {e}");
        return ExitCode::from(2);
    }
    // Which seats A holds in each rotation.
    let rotations: Vec<Vec<usize>> = if rules.partnership {
        vec![vec![0, 2], vec![1, 3]]
    } else {
        (0..rules.players).map(|s| vec![s]).collect()
    };
    let next = AtomicU64::new(0);
    let start = Instant::now();
    let results: Vec<Result<Tally, String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..args.threads.max(1))
            .map(|_| {
                scope.spawn(|| {
                    let mut tally = Tally::default();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= args.deals {
                            return Ok(tally);
                        }
                        let seed = args.seed.wrapping_add(i);
                        for a_seats in &rotations {
                            let won = play(rules, &args, seed, a_seats, &mut tally)?;
                            tally.matches += 1;
                            tally.a_wins += u64::from(won);
                        }
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err("a worker panicked".into())))
            .collect()
    });
    let mut total = Tally::default();
    for r in results {
        match r {
            Ok(t) => {
                total.matches += t.matches;
                total.a_wins += t.a_wins;
                total.a_time += t.a_time;
                total.a_micros.extend(t.a_micros);
            }
            Err(e) => {
                eprintln!("strength: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let (lo, hi) = wilson(total.a_wins, total.matches);
    let fair = 1.0 / rotations.len() as f64;
    println!(
        "{} vs {}: {} players{}, target {}, {} deals x {} rotations = {} matches, worlds {}{}",
        format!("{:?}", args.a).to_uppercase(),
        format!("{:?}", args.b).to_uppercase(),
        rules.players,
        if rules.partnership {
            " in partnership"
        } else {
            ""
        },
        rules.target,
        args.deals,
        rotations.len(),
        total.matches,
        Search::worlds(args.worlds).worlds,
        args.horizon
            .map_or(String::new(), |h| format!(", horizon {h} actions")),
    );
    println!(
        "A wins {} of {}: {:.1}% (95% interval {:.1}%-{:.1}%; an even bot would win {:.1}%)",
        total.a_wins,
        total.matches,
        100.0 * total.a_wins as f64 / total.matches.max(1) as f64,
        100.0 * lo,
        100.0 * hi,
        100.0 * fair,
    );
    let times = &mut total.a_micros;
    times.sort_unstable();
    let at = |q: f64| {
        let i = ((times.len() as f64 * q) as usize).min(times.len().saturating_sub(1));
        f64::from(times.get(i).copied().unwrap_or(0)) / 1e3
    };
    println!(
        "A's plays: {}, mean {:.3} ms, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms (wall \
         time, {} threads); elapsed {:.1} s",
        times.len(),
        total.a_time.as_secs_f64() * 1e3 / times.len().max(1) as f64,
        at(0.5),
        at(0.99),
        at(1.0),
        args.threads,
        start.elapsed().as_secs_f64(),
    );
    ExitCode::SUCCESS
}
