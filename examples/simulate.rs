//! Plays many bot matches under chosen rule options and prints how they went: hands per
//! match, moves per hand, how hands end, points per side, wins per seat. For tuning rule
//! options and spotting rules that make games drag or favour a seat.
//!
//! `cargo run --release --example simulate -- --matches 2000 --players 2 --strategy greedy`
//! `cargo run --release --example simulate -- --matches 200 --seats hard,medium` (the
//! service's fair bots; `examples/strength.rs` measures them with seats rotated)

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use allfives::engine::bot::{self, Strategy};
use allfives::engine::suggest::{Level, Search, next_action};
use allfives::engine::{Event, Game, HandEnd, HandSizeRule, Move, Rules, SettlementRule};
use clap::{Parser, ValueEnum};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

/// The least number of actions after which a match is abandoned. Random bots under "own
/// pips off" gain under a point a hand with four players, so a match can run 400+ hands
/// (about 10,000 actions); this is far past that.
const MAX_ACTIONS: u32 = 100_000;

/// Play N bot matches of All Fives and print statistics.
#[derive(Parser, Debug)]
#[command(name = "simulate")]
struct Args {
    /// Matches to play.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    matches: u64,
    /// Players at the table: 2, 3 or 4.
    #[arg(long, default_value_t = 2)]
    players: usize,
    /// Seats 0+2 play against 1+3 (4 players only).
    #[arg(long)]
    partnership: bool,
    /// Tiles dealt to each player.
    #[arg(long, value_enum, default_value_t = HandSize::Standard)]
    hand_size: HandSize,
    /// Points that win the match [default: 250 with 2 players, 200 with 3 or 4].
    #[arg(long)]
    target: Option<u32>,
    /// What happens to the pips left in hands when a hand ends.
    #[arg(long, value_enum, default_value_t = Settlement::OwnPipsOff)]
    settlement: Settlement,
    /// How every seat plays.
    #[arg(long, value_enum, default_value_t = Bot::Greedy)]
    strategy: Bot,
    /// How each seat plays, in seat order (e.g. `greedy,random`), instead of --strategy.
    #[arg(long, value_enum, value_delimiter = ',', conflicts_with = "strategy")]
    seats: Vec<Bot>,
    /// Seed of the first match (match i uses seed + i) and of the bots' choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worlds a `hard` seat samples per move [default: the service's default].
    #[arg(long)]
    worlds: Option<u32>,
    /// Abandon a match after this many actions, a guard against a game that never ends
    /// [default: 100000, or 400 per point of the target if more].
    #[arg(long)]
    max_actions: Option<u32>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum HandSize {
    /// 9 with two players, 7 with three, 5 with four.
    Standard,
    /// 5 each.
    FiveEach,
    /// 7 with two players, 5 with three or four.
    SevenFive,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Settlement {
    /// Everyone's own rounded pips come off their own score.
    OwnPipsOff,
    /// Whoever went out (or the lightest hand, when blocked) scores the others' pips.
    WinnerTakesPips,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Bot {
    /// Any legal move, uniformly.
    Random,
    /// The move scoring most now.
    Greedy,
    /// The service's EASY bot (Suggest): mostly random, on the seat's knowledge only.
    Easy,
    /// The service's MEDIUM bot: greedy, on the seat's knowledge only.
    Medium,
    /// The service's HARD bot: determinized search on the seat's knowledge only
    /// (slower: about a millisecond a move; see --worlds).
    Hard,
}

impl Bot {
    /// The simple strategy, or the fair bot's level.
    fn player(self) -> Result<Strategy, Level> {
        match self {
            Bot::Random => Ok(Strategy::Random),
            Bot::Greedy => Ok(Strategy::Greedy),
            Bot::Easy => Err(Level::Easy),
            Bot::Medium => Err(Level::Medium),
            Bot::Hard => Err(Level::Hard),
        }
    }
}

/// Totals over the matches played to the end.
#[derive(Default)]
struct Stats {
    matches: u64,
    hands: u64,
    max_hands: u32,
    actions: u64,
    plays: u64,
    draws: u64,
    passes: u64,
    domino: u64,
    blocked: u64,
    target_reached: u64,
    play_points: [i64; 4],
    settlement: [i64; 4],
    wins: [u64; 4],
    lowest_score: i32,
    final_score_sum: [i64; 4],
}

impl Stats {
    fn add(&mut self, m: &Stats) {
        self.matches += m.matches;
        self.hands += m.hands;
        self.max_hands = self.max_hands.max(m.max_hands);
        self.actions += m.actions;
        self.plays += m.plays;
        self.draws += m.draws;
        self.passes += m.passes;
        self.domino += m.domino;
        self.blocked += m.blocked;
        self.target_reached += m.target_reached;
        self.lowest_score = self.lowest_score.min(m.lowest_score);
        for s in 0..4 {
            self.play_points[s] += m.play_points[s];
            self.settlement[s] += m.settlement[s];
            self.wins[s] += m.wins[s];
            self.final_score_sum[s] += m.final_score_sum[s];
        }
    }
}

/// What the simulation needs besides the statistics: bots and scratch space.
struct Table {
    rules: Rules,
    seats: Vec<Bot>,
    rng: ChaCha8Rng,
    moves: Vec<Move>,
    events: Vec<Event>,
    max_actions: u32,
    /// Worlds a HARD seat samples (`None`: the service's default).
    worlds: Option<u32>,
}

impl Table {
    /// Plays match `seed` to its end and returns its statistics, or why it was abandoned.
    fn play_match(&mut self, seed: u64) -> Result<Stats, String> {
        let mut game = Game::new(self.rules, seed).map_err(|e| e.to_string())?;
        let mut m = Stats {
            matches: 1,
            ..Stats::default()
        };
        loop {
            let seat = game.turn().unwrap_or(0);
            let action = match self.seats[seat].player() {
                Ok(strategy) => bot::choose(&game, strategy, &mut self.rng, &mut self.moves),
                Err(level) => next_action(
                    &game,
                    level,
                    Search::worlds(self.worlds),
                    self.rng.next_u64(),
                ),
            };
            let Some(action) = action else {
                break;
            };
            if m.actions >= u64::from(self.max_actions) {
                return Err(format!(
                    "match with seed {seed} passed {} actions without ending (hand {}, scores \
                     {:?}); abandoned",
                    self.max_actions,
                    game.hand_number(),
                    game.scores()
                ));
            }
            self.events.clear();
            game.apply(action, &mut self.events).map_err(|e| {
                format!("match with seed {seed}: the engine refused the bot's {action:?}: {e}")
            })?;
            m.actions += 1;
            for event in &self.events {
                match *event {
                    Event::Dealt { .. } => m.hands += 1,
                    Event::Played { seat, points, .. } => {
                        m.plays += 1;
                        m.play_points[self.rules.side_of(seat)] += i64::from(points);
                    }
                    Event::Drew { .. } => m.draws += 1,
                    Event::Passed { .. } => m.passes += 1,
                    Event::HandEnded(result) => {
                        match result.end {
                            HandEnd::Domino { .. } => m.domino += 1,
                            HandEnd::Blocked => m.blocked += 1,
                            HandEnd::TargetReached { .. } => m.target_reached += 1,
                            // No clock and nobody leaves in a simulation.
                            HandEnd::Forfeit { .. } => {}
                        }
                        for (total, delta) in m.settlement.iter_mut().zip(result.settlement) {
                            *total += i64::from(delta);
                        }
                    }
                    Event::GameEnded { winner } => m.wins[winner] += 1,
                    Event::Absent { .. }
                    | Event::BotTookSeat { .. }
                    | Event::Returned { .. }
                    | Event::Forfeited { .. } => {}
                }
            }
            if let Some(&low) = game.scores().iter().min() {
                m.lowest_score = m.lowest_score.min(low);
            }
        }
        m.max_hands = game.hand_number();
        for (sum, &score) in m.final_score_sum.iter_mut().zip(game.scores()) {
            *sum = i64::from(score);
        }
        Ok(m)
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let rules = Rules {
        players: args.players,
        partnership: args.partnership,
        hand_size: match args.hand_size {
            HandSize::Standard => HandSizeRule::Standard,
            HandSize::FiveEach => HandSizeRule::FiveEach,
            HandSize::SevenFive => HandSizeRule::SevenFive,
        },
        target: args
            .target
            .unwrap_or_else(|| Rules::default_target(args.players)),
        settlement: match args.settlement {
            Settlement::OwnPipsOff => SettlementRule::OwnPipsOff,
            Settlement::WinnerTakesPips => SettlementRule::WinnerTakesPips,
        },
        ..Rules::for_players(args.players)
    };
    if let Err(e) = rules.validate() {
        eprintln!("simulate: invalid rules: {e}");
        return ExitCode::from(2);
    }
    let seats = if args.seats.is_empty() {
        vec![args.strategy; rules.players]
    } else if args.seats.len() == rules.players {
        args.seats.clone()
    } else {
        eprintln!(
            "simulate: --seats names {} strategies for {} players; give one per seat",
            args.seats.len(),
            rules.players
        );
        return ExitCode::from(2);
    };
    let max_actions = args
        .max_actions
        .unwrap_or(MAX_ACTIONS.max(rules.target.saturating_mul(400)));
    let mut table = Table {
        rules,
        seats,
        rng: ChaCha8Rng::seed_from_u64(args.seed),
        moves: Vec::with_capacity(64),
        events: Vec::with_capacity(64),
        max_actions,
        worlds: args.worlds,
    };

    let mut stats = Stats::default();
    let mut abandoned = 0u64;
    let start = Instant::now();
    for i in 0..args.matches {
        match table.play_match(args.seed.wrapping_add(i)) {
            Ok(m) => stats.add(&m),
            Err(e) => {
                eprintln!("simulate: {e}");
                abandoned += 1;
            }
        }
    }
    let elapsed = start.elapsed();

    print!(
        "{}",
        report(&args, &table, &stats, abandoned, elapsed.as_secs_f64())
    );
    if abandoned > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// An option value as it is typed on the command line.
fn value_name(value: impl ValueEnum) -> String {
    value
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}

/// Names a side: the seat, or the team in a partnership, with how it plays.
fn side_name(rules: &Rules, seats: &[Bot], side: usize) -> String {
    if rules.partnership {
        let (a, b) = (side, side + 2);
        format!(
            "team {side} (seats {a}+{b}, {}/{})",
            value_name(seats[a]),
            value_name(seats[b])
        )
    } else {
        format!("seat {side} ({})", value_name(seats[side]))
    }
}

fn report(args: &Args, table: &Table, s: &Stats, abandoned: u64, secs: f64) -> String {
    let rules = &table.rules;
    let mut out = String::new();
    let per = |n: u64, d: u64| if d == 0 { 0.0 } else { n as f64 / d as f64 };
    let pct = |n: u64, d: u64| 100.0 * per(n, d);
    let _ = writeln!(
        out,
        "All Fives: {} matches, {} players{}, {} hands ({} tiles each), target {}, {}, seed {}",
        args.matches,
        rules.players,
        if rules.partnership {
            " in partnership"
        } else {
            ""
        },
        value_name(args.hand_size),
        rules.hand_tiles(),
        rules.target,
        value_name(args.settlement),
        args.seed,
    );
    if abandoned > 0 {
        let _ = writeln!(out, "ABANDONED: {abandoned} matches (see the errors above)");
    }
    let _ = writeln!(
        out,
        "hands per match   mean {:.2}, max {}",
        per(s.hands, s.matches),
        s.max_hands
    );
    let _ = writeln!(
        out,
        "moves per hand    plays {:.2}, draws {:.2}, passes {:.2}  ({:.1} actions per match)",
        per(s.plays, s.hands),
        per(s.draws, s.hands),
        per(s.passes, s.hands),
        per(s.actions, s.matches),
    );
    let _ = writeln!(
        out,
        "hands ended       domino {:.1}%, blocked {:.1}%, target reached in play {:.1}%",
        pct(s.domino, s.hands),
        pct(s.blocked, s.hands),
        pct(s.target_reached, s.hands),
    );
    let _ = writeln!(out, "lowest score seen {}", s.lowest_score);
    let _ = writeln!(
        out,
        "{:<34} {:>8} {:>10} {:>8} {:>11} {:>7} {:>6}",
        "per side", "play/hd", "settle/hd", "net/hd", "final (avg)", "wins", "wins%"
    );
    for side in 0..rules.sides() {
        let hands = s.hands.max(1) as f64;
        let play = s.play_points[side] as f64 / hands;
        let settle = s.settlement[side] as f64 / hands;
        let _ = writeln!(
            out,
            "{:<34} {:>8.2} {:>10.2} {:>8.2} {:>11.1} {:>7} {:>5.1}%",
            side_name(rules, &table.seats, side),
            play,
            settle,
            play + settle,
            s.final_score_sum[side] as f64 / s.matches.max(1) as f64,
            s.wins[side],
            pct(s.wins[side], s.matches),
        );
    }
    let _ = writeln!(
        out,
        "elapsed {:.3} s: {:.0} matches/s, {:.2} M actions/s (one core)",
        secs,
        per(s.matches, 1) / secs,
        s.actions as f64 / secs / 1e6,
    );
    out
}
