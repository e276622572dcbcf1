//! What a stopped HARD search leaves behind, in CPU time: the figure
//! `tests/it/search_flood.rs` bounded until it asserted the server's counts instead
//! (a search starts at most one world after its call ended). A server in this process
//! on loopback; the biggest Suggest for a two-player lead (the costliest position), made
//! to fail: expired (a 3 ms `grpc-timeout`) and cancelled (the client gives up once the
//! server shows the search in its slot: RST_STREAM). After each failure the process's
//! CPU time (`CLOCK_PROCESS_CPUTIME_ID`: server and client) is read until the search has
//! given its slot back and a quiet while after; the same is read after MEDIUM Suggests
//! (no search) as the calls' own noise. Prints the CPU a round, a world's CPU, and the
//! server's counts of stopped searches and the worlds they started after their call
//! ended. Fails only if a MEDIUM Suggest fails or the server counts more worlds started
//! after their call ended than searches stopped: the machine's speed decides no verdict
//! here.
//!
//! ```text
//! cargo bench --bench stopped_searches        (bench profile; on a quiet machine)
//! cargo test --bench stopped_searches         (the dev build the tests use)
//! ```
//! `STOPPED_SEARCHES_ROUNDS` sets the rounds of each kind (default 16).

#[allow(
    dead_code,
    reason = "this benchmark uses a few of the tests' shared helpers"
)]
#[path = "../tests/it/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use allfives::engine::suggest::{Level, Search, suggest_with};
use allfives::engine::{Game, Rules};
use allfives::proto::v1 as pb;
use allfives::service::suggest::SUGGEST_MAX_WORLDS;
use common::{Client, Creds, TestServer, new_match, ring};

/// The seed of the match searched: a two-player lead.
const SEED: u64 = 7;

/// CPU time used so far by `id` (the process, or this thread).
fn cpu(id: libc::clockid_t) -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the one we pass.
    let status = unsafe { libc::clock_gettime(id, &mut now) };
    if status != 0 {
        return Duration::ZERO;
    }
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// One world's CPU on this thread, at the biggest Suggest's position.
fn world_cost() -> Duration {
    let mut game = Game::new(Rules::for_players(2), SEED).expect("game");
    game.deal().expect("deal");
    let k = game
        .knowledge(game.turn().expect("turn"))
        .expect("knowledge");
    let search = Search::worlds(Some(SUGGEST_MAX_WORLDS));
    let before = cpu(libc::CLOCK_THREAD_CPUTIME_ID);
    suggest_with(&k, Level::Hard, search, 1).expect("suggest");
    (cpu(libc::CLOCK_THREAD_CPUTIME_ID) - before) / SUGGEST_MAX_WORLDS
}

/// A metric's value in the server's exposition (0 if absent).
fn metric(server: &TestServer, name: &str) -> u64 {
    let text = server.metrics.encode().unwrap_or_default();
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0)
}

fn running(server: &TestServer) -> u64 {
    metric(server, r#"allfives_hard_searches{state="running"}"#)
}

/// The process's CPU from after `fail` until no search runs and 20 ms more have passed.
async fn burned_after(server: &TestServer, fail: impl Future<Output = ()>) -> Duration {
    fail.await;
    let after = cpu(libc::CLOCK_PROCESS_CPUTIME_ID);
    let start = Instant::now();
    while running(server) > 0 && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    cpu(libc::CLOCK_PROCESS_CPUTIME_ID) - after
}

fn hard(state: &[u8], creds: &Creds, seat: u32) -> pb::SuggestRequest {
    pb::SuggestRequest {
        state: state.to_vec().into(),
        seat,
        level: pb::BotLevel::Hard as i32,
        worlds: SUGGEST_MAX_WORLDS,
        seed: Some(1),
        credential: creds.of(seat),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: u32 = std::env::var("STOPPED_SEARCHES_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(16);
    let server = TestServer::start(ring(1, 1)).await;
    let mut client: Client = server.client().await;
    let rules = pb::Rules {
        players: 2,
        ..Default::default()
    };
    let (state, _, creds) = new_match(&mut client, rules, SEED).await;
    let (state, view) = common::deal(&mut client, state).await;
    let seat = view.turn.expect("a seat leads");
    let per_round = |total: Duration| total / rounds.max(1);

    let mut quiet = Duration::ZERO;
    for _ in 0..rounds {
        let mut req = hard(&state, &creds, seat);
        req.level = pb::BotLevel::Medium as i32;
        quiet += burned_after(&server, async {
            client.suggest(req).await.expect("MEDIUM Suggest");
        })
        .await;
    }
    let mut expired = Duration::ZERO;
    for _ in 0..rounds {
        let mut req = tonic::Request::new(hard(&state, &creds, seat));
        req.set_timeout(Duration::from_millis(3));
        expired += burned_after(&server, async {
            let _ = client.suggest(req).await;
        })
        .await;
    }
    let mut cancelled = Duration::ZERO;
    for _ in 0..rounds {
        let mut c = client.clone();
        let req = hard(&state, &creds, seat);
        let call = tokio::spawn(async move { c.suggest(req).await });
        cancelled += burned_after(&server, async {
            while running(&server) == 0 && !call.is_finished() {
                tokio::task::yield_now().await;
            }
            call.abort();
            let _ = call.await;
        })
        .await;
    }
    let stopped = metric(&server, "allfives_hard_searches_stopped_total");
    let after = metric(&server, "allfives_hard_search_worlds_after_stop_total");
    println!("a world of the biggest Suggest: {:?} of CPU", world_cost());
    println!(
        "CPU after each failed call, a round of {rounds}: quiet (MEDIUM) {:?}, expired {:?}, \
         cancelled {:?}",
        per_round(quiet),
        per_round(expired),
        per_round(cancelled)
    );
    println!("the server's counts: {stopped} searches stopped, {after} worlds after their end");
    assert!(
        after <= stopped,
        "{after} worlds started after {stopped} searches' calls ended"
    );
}
