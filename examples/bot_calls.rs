//! How long a call takes when the server plays bots within it: whole matches of one
//! human (playing at random) against server-played bots, every Deal, Play and Draw of
//! the human timed through the service's own handlers (open, the move, the bots'
//! moves, seal, view; no transport), per call and per bot move: wall time, and the
//! call's own CPU time (which a loaded machine does not inflate). docs/BOTS.md quotes
//! it.
//!
//! ```text
//! cargo run --release --example bot_calls -- [matches] [worlds] [players] [level] [floor-ms]
//! ```
//! Defaults: 200 matches, 128 worlds (the server's default `--bot-worlds`), 4 players
//! (three bots), HARD, a floor of 8 ms a search (`--bot-move-floor-ms`).

use std::time::{Duration, Instant};

use allfives::engine::suggest::Search;
use allfives::proto::v1 as pb;
use allfives::service::steps::Policy;
use allfives::service::{moves, seats, steps};
use allfives::state::{KeyRing, Tokens};

/// The time calls are judged at (no clock runs in these calls' matches).
const JUDGE: allfives::service::clocks::Judge = allfives::service::clocks::Judge {
    now_ms: 1_800_000_000_000,
    grace_ms: 2000,
    skew_ms: 1000,
    show_player_ids: false,
};

fn cpu_time() -> Duration {
    // CLOCK_PROCESS_CPUTIME_ID via /proc is Linux-only; this tool is for this machine.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 (1-based), 12 and 13 after the ')'.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// This thread's CPU time so far (`CLOCK_THREAD_CPUTIME_ID`), so a call's cost is
/// measured apart from the time it waited for a core on a loaded machine.
fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the one we pass.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if status != 0 {
        return Duration::ZERO;
    }
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, default: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let matches = arg(1, 200);
    let worlds = arg(2, 128) as u32;
    let players = arg(3, 4) as u32;
    let level = match args.get(4).map(String::as_str) {
        Some("easy") => pb::BotLevel::Easy,
        Some("medium") => pb::BotLevel::Medium,
        _ => pb::BotLevel::Hard,
    };
    let ring = std::sync::Arc::new(KeyRing::new(vec![(1, [1; 32])], None).expect("ring"));
    let tokens = Tokens::new(ring, 4096);
    let policy = Policy {
        allow_client_seeds: true,
        bot_search: Search::worlds(Some(worlds)),
        match_store: false,
        ..Policy::default()
    };
    let mut seats = vec![pb::SeatSetup {
        bot: level as i32,
        claim: false,
        display_name: String::new(),
        pass: String::new(),
    }];
    seats.resize(players as usize, seats[0].clone());
    seats[0] = pb::SeatSetup {
        bot: 0,
        claim: true,
        display_name: String::new(),
        pass: String::new(),
    };
    let mut calls: Vec<(Duration, u32, Duration)> = Vec::new();
    // The server makes a call with HARD bots last at least this per full search
    // (`--bot-move-floor-ms`, default 8): how many calls' own CPU time went past it,
    // which the floor then cannot hide.
    let floor_ms: u64 = args.get(5).and_then(|a| a.parse().ok()).unwrap_or(8);
    let floor_per_world = Duration::from_millis(floor_ms) / worlds.max(1);
    let mut past_floor = 0usize;
    let mut floored = 0usize;
    let start_cpu = cpu_time();
    let started = Instant::now();
    for m in 0..matches {
        let new = seats::new_game(
            &tokens,
            &policy,
            &JUDGE,
            &pb::NewGameRequest {
                rules: Some(pb::Rules {
                    players,
                    ..Default::default()
                }),
                seed: Some(m),
                viewer: Some(0),
                seats: seats.clone(),
            },
        )
        .expect("NewGame");
        let credential = new.credentials[0].credential.clone();
        let mut state = new.state;
        let mut view = new.view;
        for step in 0u64.. {
            let timed = Instant::now();
            let cpu_before = thread_cpu();
            let answer = match pb::Phase::try_from(view.phase) {
                Ok(pb::Phase::Over) => break,
                Ok(pb::Phase::Dealing) => moves::deal(
                    &tokens,
                    &JUDGE,
                    &pb::DealRequest {
                        state: state.clone().into(),
                        viewer: Some(0),
                        credential: credential.clone(),
                    },
                ),
                _ if view.must_draw => moves::draw(
                    &tokens,
                    &JUDGE,
                    &pb::DrawRequest {
                        state: state.clone().into(),
                        seat: 0,
                        viewer: Some(0),
                        credential: credential.clone(),
                    },
                ),
                _ => {
                    let m =
                        view.legal_moves[(step as usize * 7 + m as usize) % view.legal_moves.len()];
                    moves::play(
                        &tokens,
                        &JUDGE,
                        &pb::PlayRequest {
                            state: state.clone().into(),
                            seat: 0,
                            tile: m.tile,
                            end: m.end,
                            viewer: Some(0),
                            credential: credential.clone(),
                        },
                    )
                }
            }
            .and_then(|step| steps::finish(&tokens, &policy, step))
            .expect("the human's move");
            let elapsed = timed.elapsed();
            let cpu_used = thread_cpu() - cpu_before;
            let bot_moves = answer
                .events
                .iter()
                .filter(|e| match &e.kind {
                    Some(pb::event::Kind::TilePlayed(p)) => p.seat != 0,
                    Some(pb::event::Kind::TileDrawn(d)) => d.seat != 0,
                    _ => false,
                })
                .count() as u32;
            calls.push((elapsed, bot_moves, cpu_used));
            if answer.bot_worlds > 0 {
                floored += 1;
                if cpu_used > floor_per_world * answer.bot_worlds {
                    past_floor += 1;
                }
            }
            state = answer.state;
            view = answer.view;
        }
    }
    let wall = started.elapsed();
    let cpu = cpu_time() - start_cpu;
    let mut all: Vec<Duration> = calls.iter().map(|c| c.0).collect();
    all.sort();
    let mut three: Vec<Duration> = calls.iter().filter(|c| c.1 >= 3).map(|c| c.0).collect();
    three.sort();
    let mut all_cpu: Vec<Duration> = calls.iter().map(|c| c.2).collect();
    all_cpu.sort();
    let mut three_cpu: Vec<Duration> = calls.iter().filter(|c| c.1 >= 3).map(|c| c.2).collect();
    three_cpu.sort();
    let bot_moves: u32 = calls.iter().map(|c| c.1).sum();
    let total: Duration = all.iter().sum();
    println!(
        "{matches} matches, {players} players, {level:?} bots at {worlds} worlds: {} calls, {bot_moves} bot moves",
        all.len()
    );
    println!(
        "every call: p50 {:?}  p99 {:?}  max {:?}",
        percentile(&all, 0.5),
        percentile(&all, 0.99),
        all.last().copied().unwrap_or_default()
    );
    println!(
        "calls with 3 or more bot moves ({}): p50 {:?}  p99 {:?}  max {:?}",
        three.len(),
        percentile(&three, 0.5),
        percentile(&three, 0.99),
        three.last().copied().unwrap_or_default()
    );
    println!(
        "CPU time of a call: every call p50 {:?} p99 {:?} max {:?}; with 3 or more bot moves p50 {:?} p99 {:?} max {:?}",
        percentile(&all_cpu, 0.5),
        percentile(&all_cpu, 0.99),
        all_cpu.last().copied().unwrap_or_default(),
        percentile(&three_cpu, 0.5),
        percentile(&three_cpu, 0.99),
        three_cpu.last().copied().unwrap_or_default()
    );
    println!(
        "calls with HARD moves: {floored}; their CPU time past the {floor_ms} ms-a-search floor: {past_floor} ({:.2}%)",
        100.0 * past_floor as f64 / floored.max(1) as f64
    );
    println!(
        "per bot move (all call time / bot moves): {:?}; CPU {:?} over {:?} wall ({:.2} cores)",
        total / bot_moves.max(1),
        cpu,
        wall,
        cpu.as_secs_f64() / wall.as_secs_f64()
    );
}
