//! Engine self-play on one core: legal-move generation plus play (moves per second), and
//! whole matches from `Game::new` to `GameEnded` (time per match).
//!
//! `cargo bench --bench engine` measures; `cargo test --benches` runs each benchmark once.
//! The bars: at least 5 million moves per second, and a 2-player match to 250 in
//! under 100 µs. See docs/PERFORMANCE.md for figures.

use std::hint::black_box;
use std::time::Duration;

use allfives::engine::bot::{self, Strategy};
use allfives::engine::{Action, Event, Game, Move, Rules};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

/// Plays and draws per iteration of the "moves" benchmarks.
const MOVES_PER_ITER: u64 = 1_000;

/// Far more actions than any match takes; a match past it means an engine bug.
const MAX_ACTIONS: u32 = 100_000;

/// Bots playing match after match, with the scratch vectors reused throughout.
struct SelfPlay {
    rules: Rules,
    strategy: Strategy,
    game: Game,
    next_seed: u64,
    rng: ChaCha8Rng,
    moves: Vec<Move>,
    events: Vec<Event>,
}

impl SelfPlay {
    fn new(rules: Rules, strategy: Strategy) -> SelfPlay {
        SelfPlay {
            rules,
            strategy,
            game: Game::new(rules, 0).expect("valid rules"),
            next_seed: 1,
            rng: ChaCha8Rng::seed_from_u64(0xA11_F1E5),
            moves: Vec::with_capacity(64),
            events: Vec::with_capacity(64),
        }
    }

    fn new_game(&mut self) {
        self.game = Game::new(self.rules, self.next_seed).expect("valid rules");
        self.next_seed += 1;
    }

    /// Applies the bot's next action and returns it; `None` once the game is over.
    fn step(&mut self) -> Option<Action> {
        let action = bot::choose(&self.game, self.strategy, &mut self.rng, &mut self.moves)?;
        self.events.clear();
        if let Err(e) = self.game.apply(action, &mut self.events) {
            panic!("the bot chose an illegal action {action:?}: {e}");
        }
        Some(action)
    }

    /// Plays until `n` plays and draws were made, dealing hands and starting new
    /// matches along the way. Returns the points scored, so nothing is optimised away.
    fn play_moves(&mut self, n: u64) -> u64 {
        let mut made = 0;
        let mut points = 0u64;
        while made < n {
            match self.step() {
                None => self.new_game(),
                Some(Action::Deal) => {}
                Some(_) => made += 1,
            }
            if let Some(Event::Played { points: p, .. }) = self.events.first() {
                points += u64::from(*p);
            }
        }
        points
    }

    /// Plays one whole match from `Game::new` to `GameEnded`; returns the actions taken.
    fn play_match(&mut self) -> u32 {
        self.new_game();
        let mut actions = 0;
        while self.step().is_some() {
            actions += 1;
            assert!(
                actions < MAX_ACTIONS,
                "match {} never ended",
                self.next_seed - 1
            );
        }
        actions
    }
}

const STRATEGIES: [(&str, Strategy); 2] =
    [("random", Strategy::Random), ("greedy", Strategy::Greedy)];

fn partnership() -> Rules {
    Rules {
        partnership: true,
        ..Rules::for_players(4)
    }
}

/// Legal-move generation plus play, counted per play or draw (deals ride along).
fn moves(c: &mut Criterion) {
    let mut group = c.benchmark_group("moves");
    group.throughput(Throughput::Elements(MOVES_PER_ITER));
    for (name, strategy) in STRATEGIES {
        let mut play = SelfPlay::new(Rules::for_players(2), strategy);
        group.bench_function(format!("2p/{name}"), |b| {
            b.iter(|| black_box(play.play_moves(MOVES_PER_ITER)))
        });
    }
    group.finish();
}

/// Whole matches, each from `Game::new` (a fresh seed every time) to `GameEnded`.
fn matches(c: &mut Criterion) {
    let mut group = c.benchmark_group("match");
    let tables = [
        ("2p-to-250", Rules::for_players(2)),
        ("4p-partnership-to-200", partnership()),
    ];
    for (table, rules) in tables {
        for (name, strategy) in STRATEGIES {
            let mut play = SelfPlay::new(rules, strategy);
            group.bench_function(format!("{table}/{name}"), |b| {
                b.iter(|| black_box(play.play_match()))
            });
        }
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = moves, matches
}
criterion_main!(benches);
