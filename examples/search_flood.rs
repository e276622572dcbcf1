//! A flood of HARD Suggests from one client, and what another client sees meanwhile
//! (issue 16). First the cost of a world at the costliest positions (two-player
//! leads: every tile of the hand a candidate, the longest rollouts), by this thread's
//! CPU time, for the cap on a Suggest's worlds; then a real server in this process
//! (its own runtime, on 127.0.0.1:0) is flooded over one connection by many callers
//! at once, each asking for the most worlds as soon as its last call answered, while
//! another connection plays Play calls and HARD Suggests one after another: their
//! latencies, without the flood and with it, printed beside issue 16's bars (Play p99
//! 20 ms, HARD Suggest p99 100 ms: figures, not verdicts). Exits non-zero if, under the
//! flood, that client was not served or any of its calls failed, or the flood was never
//! refused. `.ci/search-flood` runs it; docs/RELIABILITY.md quotes it.
//!
//! ```text
//! cargo run --release --example search_flood -- [flood-seconds] [flooders]
//! ```
//! Defaults: 10 s of flood, 64 callers on the flooding connection.
//!
//! With `ALLFIVES_FLOOD_SERVER=path` the server is that binary instead, started on a
//! free loopback port (`.ci/search-flood` gives it the release binary deploy-check
//! built, and runs this example as `cargo test` built it, so CI compiles nothing more);
//! the world's cost is measured only in a release build of this example.
//!
//! Longer than most files (about 490 lines): an example is a crate of one file, and the
//! world's cost, the flooders and the honest client's measure serve only this tool.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use allfives::config::Config;
use allfives::engine::suggest::{Level, MAX_WORLDS, Search, suggest_with};
use allfives::engine::{Game, Rules};
use allfives::metrics::Metrics;
use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use allfives::service::suggest::SUGGEST_MAX_WORLDS;
use allfives::state::KeyRing;
use clap::Parser;
use tonic::transport::{Channel, Endpoint};

type Client = AllFivesServiceClient<Channel>;

/// The latency bars of issue 16, for the other client under the flood: figures to
/// compare with (printed beside the measured ones), not verdicts, as a latency depends
/// on the machine and its load.
const PLAY_P99_BAR: Duration = Duration::from_millis(20);
const SUGGEST_P99_BAR: Duration = Duration::from_millis(100);

/// This thread's CPU time so far (`CLOCK_THREAD_CPUTIME_ID`).
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

/// "p50 … p99 … max … (n calls)" of some latencies.
fn summary(mut times: Vec<Duration>) -> (String, Duration) {
    times.sort();
    let p99 = percentile(&times, 0.99);
    let text = format!(
        "p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms  ({} calls)",
        ms(percentile(&times, 0.5)),
        ms(p99),
        ms(times.last().copied().unwrap_or_default()),
        times.len()
    );
    (text, p99)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The CPU time of a HARD search of `worlds` at the lead of two-player match `seed`,
/// the cheapest of three runs (a run the machine interrupted costs no more CPU, but
/// caches suffer).
fn search_cost(seed: u64, worlds: u32) -> Duration {
    let mut game = Game::new(Rules::for_players(2), seed).expect("game");
    game.deal().expect("deal");
    let turn = game.turn().expect("turn");
    let k = game.knowledge(turn).expect("knowledge");
    let search = Search::worlds(Some(worlds));
    (0..3)
        .map(|_| {
            let before = thread_cpu();
            suggest_with(&k, Level::Hard, search, 1).expect("suggest");
            thread_cpu() - before
        })
        .min()
        .unwrap_or_default()
}

/// Measures a world's cost at 40 two-player leads, and prints what a Suggest at the
/// cap costs.
fn measure_worlds() {
    let mut per_world: Vec<Duration> = (0..40)
        .map(|seed| search_cost(seed, MAX_WORLDS) / MAX_WORLDS)
        .collect();
    per_world.sort();
    let worst = per_world.last().copied().unwrap_or_default();
    println!(
        "a world at a two-player lead ({MAX_WORLDS}-world searches, 40 deals, thread CPU): \
         p50 {:.1} µs  max {:.1} µs",
        percentile(&per_world, 0.5).as_secs_f64() * 1e6,
        worst.as_secs_f64() * 1e6
    );
    println!(
        "a Suggest at the cap ({SUGGEST_MAX_WORLDS} worlds) costs up to {:.1} ms of CPU \
         there; at {MAX_WORLDS} worlds {:.1} ms",
        ms(worst * SUGGEST_MAX_WORLDS),
        ms(worst * MAX_WORLDS)
    );
}

/// The server binary to flood, if one is named (`ALLFIVES_FLOOD_SERVER`), started on
/// a free loopback port; killed when dropped.
struct Binary(std::process::Child);

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `path` on a free loopback port, as the in-process server is configured
/// (client seeds taken), and answers its address once it accepts connections.
fn start_binary(path: &std::ffi::OsStr) -> (SocketAddr, Binary) {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let child = std::process::Command::new(path)
        .args(["--addr", &addr.to_string(), "--metrics-addr", "off"])
        .arg("--allow-client-seeds")
        .env("ALLFIVES_LOG", "error")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start the server binary");
    let binary = Binary(child);
    for _ in 0..500 {
        if std::net::TcpStream::connect(addr).is_ok() {
            return (addr, binary);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the server binary did not listen on {addr} within 5 s")
}

/// Starts the server on its own runtime (its own threads, as in production: the
/// clients' runtime does not serve it) and answers its address.
fn start_server() -> SocketAddr {
    let config = Config::try_parse_from(["allfives", "--allow-client-seeds"]).expect("config");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("server runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            tx.send(listener.local_addr().expect("addr"))
                .expect("address");
            let ring = KeyRing::new(vec![(1, [7; 32])], None).expect("ring");
            let metrics = Arc::new(Metrics::new());
            let server = allfives::server::run(
                listener,
                &config,
                Arc::new(ring),
                Arc::new(config.result_keys().expect("result keys")),
                metrics,
                std::future::pending(),
            );
            server.await.expect("server");
        });
    });
    rx.recv().expect("the server's address")
}

async fn connect(addr: SocketAddr) -> Client {
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .expect("url")
        .connect()
        .await
        .expect("connect");
    AllFivesServiceClient::new(channel)
}

/// A two-player hot-seat match dealt from `seed`: token, credentials by seat, view.
async fn dealt(client: &mut Client, seed: u64) -> (Vec<u8>, Vec<Vec<u8>>, pb::GameView) {
    let new = client
        .new_game(pb::NewGameRequest {
            rules: Some(pb::Rules {
                players: 2,
                ..Default::default()
            }),
            seed: Some(seed),
            viewer: None,
            seats: vec![
                pb::SeatSetup {
                    bot: 0,
                    claim: true,
                    display_name: String::new(),
                    pass: String::new(),
                };
                2
            ],
        })
        .await
        .expect("NewGame")
        .into_inner();
    let mut creds = vec![Vec::new(); 2];
    for c in &new.credentials {
        creds[c.seat as usize].clone_from(&c.credential);
    }
    let dealt = client
        .deal(pb::DealRequest {
            state: new.state.into(),
            ..Default::default()
        })
        .await
        .expect("Deal")
        .into_inner();
    (dealt.state, creds, dealt.view.expect("view"))
}

/// A HARD Suggest at the lead of `state`.
fn hard(state: &[u8], creds: &[Vec<u8>], seat: u32, worlds: u32) -> pb::SuggestRequest {
    pb::SuggestRequest {
        state: state.to_vec().into(),
        seat,
        level: pb::BotLevel::Hard as i32,
        worlds,
        seed: Some(1),
        credential: creds[seat as usize].clone(),
    }
}

/// The other client: for `seconds`, Play calls of hot-seat matches (the seat on turn
/// plays its first legal move; deals and draws as needed, not timed), and after every
/// fifth a HARD Suggest of the default worlds at a two-player lead. Answers the Play
/// and the Suggest latencies, and the calls that failed.
async fn honest(addr: SocketAddr, seconds: f64) -> (Vec<Duration>, Vec<Duration>, u64) {
    let mut client = connect(addr).await;
    let (lead, lead_creds, lead_view) = dealt(&mut client, 7).await;
    let lead_seat = lead_view.turn.expect("a seat leads");
    let mut plays = Vec::new();
    let mut suggests = Vec::new();
    let mut failed = 0;
    let mut seed = 100;
    let (mut state, mut creds, mut view) = dealt(&mut client, seed).await;
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < until {
        let Some(turn) = view.turn else {
            if view.phase == pb::Phase::Dealing as i32 {
                let answer = client
                    .deal(pb::DealRequest {
                        state: state.clone().into(),
                        ..Default::default()
                    })
                    .await;
                match answer {
                    Ok(a) => {
                        let a = a.into_inner();
                        (state, view) = (a.state, a.view.unwrap_or_default());
                    }
                    Err(_) => failed += 1,
                }
            } else {
                seed += 1;
                (state, creds, view) = dealt(&mut client, seed).await;
            }
            continue;
        };
        let cred = creds[turn as usize].clone();
        let seen = client
            .score(pb::ScoreRequest {
                state: state.clone().into(),
                viewer: Some(turn),
                credential: cred.clone(),
                include_hand_events: false,
            })
            .await
            .map(|r| r.into_inner().view.unwrap_or_default());
        let Ok(seen) = seen else {
            failed += 1;
            continue;
        };
        let answer = if let Some(m) = seen.legal_moves.first() {
            let started = Instant::now();
            let answer = client
                .play(pb::PlayRequest {
                    state: state.clone().into(),
                    seat: turn,
                    tile: m.tile,
                    end: m.end,
                    viewer: None,
                    credential: cred,
                })
                .await
                .map(|r| {
                    let r = r.into_inner();
                    (r.state, r.view)
                });
            plays.push(started.elapsed());
            if plays.len() % 5 == 0 {
                let started = Instant::now();
                match client.suggest(hard(&lead, &lead_creds, lead_seat, 0)).await {
                    Ok(_) => suggests.push(started.elapsed()),
                    Err(_) => failed += 1,
                }
            }
            answer
        } else {
            client
                .draw(pb::DrawRequest {
                    state: state.clone().into(),
                    seat: turn,
                    viewer: None,
                    credential: cred,
                })
                .await
                .map(|r| {
                    let r = r.into_inner();
                    (r.state, r.view)
                })
        };
        match answer {
            Ok((s, v)) => (state, view) = (s, v.unwrap_or_default()),
            Err(_) => failed += 1,
        }
    }
    (plays, suggests, failed)
}

/// What the flood's callers got.
#[derive(Default)]
struct Flood {
    served: AtomicU64,
    refused: AtomicU64,
    other: AtomicU64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seconds: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10.0);
    let flooders: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(64);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("{cores} cores; load average {}", load_average());

    if cfg!(debug_assertions) {
        println!("a world's cost: not measured (this example is not a release build)");
    } else {
        measure_worlds();
    }

    let (addr, binary) = match std::env::var_os("ALLFIVES_FLOOD_SERVER") {
        Some(path) => {
            let (addr, binary) = start_binary(&path);
            println!("server: {} on {addr}", path.to_string_lossy());
            (addr, Some(binary))
        }
        None => (start_server(), None),
    };
    // The other client and the flood each on a runtime of their own (one thread each),
    // so that the other client's calls never wait behind the flood's in a client.
    let quiet = (seconds / 3.0).max(1.0);
    let (plays, suggests, failed) = on_own_thread(move || honest(addr, quiet));
    println!("without a flood ({quiet:.0} s), the other client:");
    println!("  Play               {}", summary(plays).0);
    println!("  HARD Suggest (128) {}", summary(suggests).0);
    println!("  failed calls: {failed}");

    let flood = Arc::new(Flood::default());
    let stop = Arc::new(AtomicBool::new(false));
    let flooding = {
        let (flood, stop) = (Arc::clone(&flood), Arc::clone(&stop));
        std::thread::spawn(move || run_flood(addr, flooders, flood, stop))
    };
    std::thread::sleep(Duration::from_millis(500));
    let (plays, suggests, failed) = on_own_thread(move || honest(addr, seconds));
    stop.store(true, Ordering::Relaxed);
    let _ = flooding.join();
    let (served, refused, other) = (
        flood.served.load(Ordering::Relaxed),
        flood.refused.load(Ordering::Relaxed),
        flood.other.load(Ordering::Relaxed),
    );
    println!(
        "under a flood ({seconds:.0} s, {flooders} callers on one connection asking \
         {MAX_WORLDS} worlds: {served} served, {refused} refused SEARCH_QUEUE_FULL, \
         {other} other failures), the other client:"
    );
    let (play_count, suggest_count) = (plays.len(), suggests.len());
    let (play, play_p99) = summary(plays);
    let (suggest, suggest_p99) = summary(suggests);
    println!("  Play               {play}");
    println!("  HARD Suggest (128) {suggest}");
    println!("  failed calls: {failed}");
    println!("load average {}", load_average());
    let within = |p99: Duration, bar: Duration| match p99 < bar {
        true => "within",
        false => "ABOVE (a figure for this machine at its load, not a verdict)",
    };
    println!(
        "  against issue 16's bars: Play p99 {:.2} ms {} {PLAY_P99_BAR:?}; HARD Suggest \
         p99 {:.2} ms {} {SUGGEST_P99_BAR:?}",
        ms(play_p99),
        within(play_p99, PLAY_P99_BAR),
        ms(suggest_p99),
        within(suggest_p99, SUGGEST_P99_BAR),
    );
    // The verdicts: decisions, never times.
    let mut passed = true;
    if play_count == 0 || suggest_count == 0 {
        println!("FAIL: the other client was not served under the flood");
        passed = false;
    }
    if failed > 0 {
        println!("FAIL: {failed} of the other client's calls failed");
        passed = false;
    }
    if refused == 0 {
        println!("FAIL: the flood was never refused");
        passed = false;
    }
    // exit() runs no destructors: the server binary is stopped first.
    drop(binary);
    if !passed {
        std::process::exit(1);
    }
}

/// Runs `task` on a current-thread runtime on a thread of its own, to its end.
fn on_own_thread<F, T>(task: impl FnOnce() -> F + Send + 'static) -> T
where
    F: Future<Output = T>,
    T: Send + 'static,
{
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("client runtime")
            .block_on(task())
    })
    .join()
    .expect("client thread")
}

/// The flood: `flooders` callers over one connection, each asking again as soon as
/// it is answered, until `stop`.
fn run_flood(addr: SocketAddr, flooders: usize, flood: Arc<Flood>, stop: Arc<AtomicBool>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("flood runtime");
    runtime.block_on(async move {
        let mut flooder = connect(addr).await;
        let (lead, creds, view) = dealt(&mut flooder, 7).await;
        let seat = view.turn.expect("a seat leads");
        let tasks: Vec<_> = (0..flooders)
            .map(|_| {
                let mut client = flooder.clone();
                let req = hard(&lead, &creds, seat, MAX_WORLDS);
                let (flood, stop) = (Arc::clone(&flood), Arc::clone(&stop));
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        let counter = match client.suggest(req.clone()).await {
                            Ok(_) => &flood.served,
                            Err(s) if s.code() == tonic::Code::ResourceExhausted => &flood.refused,
                            Err(_) => &flood.other,
                        };
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for task in tasks {
            let _ = task.await;
        }
    });
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_default()
}
