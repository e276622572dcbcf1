//! The players' pace beside a flood, on one shared connection (issue 24; the measure
//! that `tests/it/search_queue.rs` asserted until issue 39 and now only reports): the
//! real binary on a free loopback port; players, each against three HARD bots, making
//! a move after each pause of 50 to 100 ms (quicker than a person, so the server's
//! cores stay busy), whose calls a gateway carries over one connection; first alone,
//! then beside a flood of HARD Suggests of the most worlds over the same connection
//! (32 callers over 3 matches, each asking again as soon as it is answered). Prints
//! the players' calls answered and refused, their p50 and p99, and the flood's served
//! and refused. Fails only on an error other than SEARCH_QUEUE_FULL: how fast the
//! machine is decides no verdict here.
//!
//! ```text
//! cargo bench --bench search_queue            (8 s a phase; on a quiet machine)
//! cargo test --bench search_queue             (1 s a phase: it runs, nothing more)
//! ```
//! `SEARCH_QUEUE_SECS` sets a phase's length.

#[allow(
    dead_code,
    reason = "this benchmark uses a few of the tests' shared helpers"
)]
#[path = "../tests/it/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use tonic::transport::{Channel, Endpoint};

use common::child::ChildServer;
use common::reason;
use common::searching::{flood_request, move_once, new_bot_match};

/// Players alone, and beside the flood.
const PLAYERS: u64 = 16;
const PLAYERS_BESIDE_A_FLOOD: u64 = 8;
/// A player's pause between an answer and its next move, in milliseconds.
const THINK_MS: std::ops::Range<u64> = 50..100;
const FLOODERS: usize = 32;
const FLOOD_MATCHES: u64 = 3;

/// What the players saw.
#[derive(Debug, Default)]
struct Played {
    answered: Vec<Duration>,
    refused: u32,
    failed: Vec<String>,
}

impl Played {
    fn add(&mut self, other: Played) {
        self.answered.extend(other.answered);
        self.refused += other.refused;
        self.failed.extend(other.failed);
    }

    /// The latency at `p` (0 to 1) of the calls answered.
    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.answered.clone();
        sorted.sort();
        let last = sorted.len().saturating_sub(1);
        let i = (last as f64 * p).round() as usize;
        sorted.get(i).copied().unwrap_or_default()
    }

    fn report(&self, what: &str) -> String {
        format!(
            "{what}: {} calls answered, {} refused SEARCH_QUEUE_FULL; p50 {:.1} ms, p99 {:.1} ms",
            self.answered.len(),
            self.refused,
            self.percentile(0.5).as_secs_f64() * 1e3,
            self.percentile(0.99).as_secs_f64() * 1e3,
        )
    }
}

fn is_refusal(status: &tonic::Status) -> bool {
    reason(status) == "SEARCH_QUEUE_FULL"
}

/// One player on `channel` for `length`: bot matches one after another.
async fn player(channel: Channel, number: u64, length: Duration) -> Played {
    let mut client = AllFivesServiceClient::new(channel);
    let mut played = Played::default();
    let until = Instant::now() + length;
    let mut step = number;
    while Instant::now() < until {
        let (mut state, mut view, credential) = new_bot_match(&mut client).await;
        while Instant::now() < until && view.phase != pb::Phase::Over as i32 {
            step += 1;
            let spread = THINK_MS.end - THINK_MS.start;
            let pause = THINK_MS.start + (step * 7919 + number * 104_729) % spread;
            tokio::time::sleep(Duration::from_millis(pause)).await;
            let started = Instant::now();
            match move_once(&mut client, &state, &view, &credential, step as usize).await {
                Ok(next) => {
                    played.answered.push(started.elapsed());
                    (state, view) = next;
                }
                Err(status) if is_refusal(&status) => played.refused += 1,
                Err(status) => {
                    played.failed.push(format!("{status:?}"));
                    return played;
                }
            }
        }
    }
    played
}

async fn players(channel: &Channel, count: u64, length: Duration) -> Played {
    let tasks: Vec<_> = (0..count)
        .map(|n| tokio::spawn(player(channel.clone(), n, length)))
        .collect();
    let mut all = Played::default();
    for task in tasks {
        all.add(task.await.expect("player"));
    }
    all
}

/// The players beside the flood, and the flood's calls served and refused.
async fn beside_a_flood(channel: &Channel, length: Duration) -> (Played, u64, u64) {
    let mut flooder = AllFivesServiceClient::new(channel.clone());
    let mut requests = Vec::new();
    for seed in 0..FLOOD_MATCHES {
        requests.push(flood_request(&mut flooder, seed, 1024).await);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flood: Vec<_> = (0..FLOODERS)
        .map(|n| {
            let mut client = flooder.clone();
            let req = requests[n % requests.len()].clone();
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let (mut served, mut refused) = (0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    match client.suggest(req.clone()).await {
                        Ok(_) => served += 1,
                        Err(status) => {
                            assert!(is_refusal(&status), "{status:?}");
                            refused += 1;
                            tokio::task::yield_now().await;
                        }
                    }
                }
                (served, refused)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let played = players(channel, PLAYERS_BESIDE_A_FLOOD, length).await;
    stop.store(true, Ordering::Relaxed);
    let (mut served, mut refused) = (0, 0);
    for caller in flood {
        let (s, r) = caller.await.expect("flooder");
        served += s;
        refused += r;
    }
    (played, served, refused)
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --bench` does not: a short run then.
    let measuring = std::env::args().any(|a| a == "--bench");
    let secs = std::env::var("SEARCH_QUEUE_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(if measuring { 8.0 } else { 1.0 });
    let length = Duration::from_secs_f64(secs);
    let server = ChildServer::start(&["--allow-client-seeds"], None);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let endpoint = Endpoint::from_shared(format!("http://{}", server.addr)).expect("url");
        let mut channel = None;
        for _ in 0..250 {
            if let Ok(c) = endpoint.connect().await {
                channel = Some(c);
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let channel = channel.expect("the server came up");
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "search_queue: {secs} s a phase, one connection; load average {}",
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        );
        let alone = players(&channel, PLAYERS, length).await;
        println!(
            "search_queue: {}",
            alone.report(&format!("{PLAYERS} players alone"))
        );
        let (beside, served, refused) = beside_a_flood(&channel, length).await;
        println!(
            "search_queue: {}; the flood: {served} served, {refused} refused",
            beside.report(&format!("{PLAYERS_BESIDE_A_FLOOD} players beside a flood"))
        );
        let failed: Vec<_> = alone.failed.iter().chain(&beside.failed).collect();
        assert!(failed.is_empty(), "calls failed: {failed:?}");
    });
}
