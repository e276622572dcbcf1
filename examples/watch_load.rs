//! Push latency and memory of `Watch`: opens `--streams` Watch streams on one replica
//! (`--watch-addr`, `--per-connection` on each connection), spread over `--matches`
//! matches, then plays `--moves` moves of those matches on another replica
//! (`--play-addr`) sharing its match store, `--rate` a second, and times each move from
//! the moment its Play was sent to the moment each stream watching its match received
//! it. Prints the push latency (p50, p99, max, over every delivery) and, given the
//! watching replica's pid (`--watch-pid`), its resident memory before and after the
//! streams opened, per stream. With `--client-header`, each connection's streams name a
//! client of their own in that header (a gateway's devices). `benches/watch_push.sh` runs it against release
//! replicas and a redis-server; docs/PERFORMANCE.md quotes it.
//!
//! `cargo run --release --example watch_load -- --watch-addr http://127.0.0.1:50052 --play-addr http://127.0.0.1:50051`

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use allfives::proto::v1::watch_response::Kind;
use clap::Parser;

mod common;
use tonic::transport::{Channel, Endpoint};

/// Time Watch's pushes under many open streams.
#[derive(Parser, Debug)]
#[command(name = "watch_load")]
struct Args {
    /// The replica the streams watch on.
    #[arg(long)]
    watch_addr: String,
    /// The replica the moves are played on (the same one is allowed).
    #[arg(long)]
    play_addr: String,
    /// Streams to open.
    #[arg(long, default_value_t = 1000)]
    streams: usize,
    /// Streams per connection (the server's --max-watch-streams-per-connection at most).
    #[arg(long, default_value_t = 8)]
    per_connection: usize,
    /// Matches the streams watch (each watched by streams / matches of them).
    #[arg(long, default_value_t = 100)]
    matches: usize,
    /// Moves to play and time.
    #[arg(long, default_value_t = 500)]
    moves: usize,
    /// Moves a second.
    #[arg(long, default_value_t = 100)]
    rate: u64,
    /// The watching replica's process id, to read its resident memory.
    #[arg(long)]
    watch_pid: Option<u32>,
    /// A header naming each connection's client (the server's --trusted-client-header):
    /// each connection's streams send a distinct address in it, as a gateway does for
    /// distinct devices, so that the per-client bounds count devices, not this process.
    #[arg(long)]
    client_header: Option<String>,
}

type Client = AllFivesServiceClient<Channel>;

/// Each change a stream received: its state id, and when.
type Arrivals = Vec<(Vec<u8>, Instant)>;

async fn connect(addr: &str) -> Result<Client, String> {
    let channel = Endpoint::from_shared(addr.to_string())
        .map_err(|e| format!("{addr}: {e}"))?
        .connect()
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    Ok(AllFivesServiceClient::new(channel))
}

/// A process's resident memory, in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A hot-seat match, dealt: its latest token and both credentials.
struct Match {
    token: Vec<u8>,
    creds: [Vec<u8>; 2],
}

async fn new_match(client: &mut Client) -> Result<Match, String> {
    let new = client
        .new_game(pb::NewGameRequest {
            seats: vec![
                pb::SeatSetup {
                    bot: 0,
                    claim: true,
                    display_name: String::new(),
                    pass: String::new(),
                };
                2
            ],
            ..Default::default()
        })
        .await
        .map_err(|e| format!("NewGame: {e}"))?
        .into_inner();
    let mut creds = [Vec::new(), Vec::new()];
    for c in &new.credentials {
        creds[c.seat as usize] = c.credential.clone();
    }
    let dealt = client
        .deal(pb::DealRequest {
            state: new.state.into(),
            ..Default::default()
        })
        .await
        .map_err(|e| format!("Deal: {e}"))?
        .into_inner();
    Ok(Match {
        token: dealt.state,
        creds,
    })
}

/// The next move of a match (`common::next_move`): the state id it made, and when its
/// request was sent; `Err("over")` once the match is over.
async fn next_move(client: &mut Client, m: &mut Match) -> Result<(Vec<u8>, Instant), String> {
    let (token, id, sent) = common::next_move(client, &m.token, &m.creds).await?;
    m.token = token;
    Ok((id, sent))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn run(args: Args) -> Result<String, String> {
    let mut player = connect(&args.play_addr).await?;
    let mut matches = Vec::new();
    for _ in 0..args.matches {
        matches.push(new_match(&mut player).await?);
    }
    let before = args.watch_pid.and_then(rss_kib);
    // Arrivals of each state id at the streams: (state id, when).
    let arrivals: Arc<Mutex<Arrivals>> = Arc::default();
    let mut readers = Vec::new();
    // The largest message a stream received, encoded.
    let largest = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let header = args
        .client_header
        .as_deref()
        .map(|name| name.parse::<tonic::metadata::MetadataKey<_>>())
        .transpose()
        .map_err(|e| format!("--client-header: {e}"))?;
    let mut watcher = connect(&args.watch_addr).await?;
    for i in 0..args.streams {
        let device = i / args.per_connection;
        if i % args.per_connection == 0 {
            watcher = connect(&args.watch_addr).await?;
        }
        let m = &matches[i % args.matches];
        let mut request = tonic::Request::new(pb::WatchRequest {
            state: m.token.clone(),
            ..Default::default()
        });
        if let Some(name) = &header {
            // 10.0.0.0/8 holds 2^24 devices.
            let [_, a, b, c] = u32::try_from(device).unwrap_or(0).to_be_bytes();
            let address = format!("10.{a}.{b}.{c}");
            request.metadata_mut().insert(
                name.clone(),
                address.parse().map_err(|e| format!("{address}: {e}"))?,
            );
        }
        let mut stream = watcher
            .watch(request)
            .await
            .map_err(|e| format!("Watch {i}: {e}"))?
            .into_inner();
        // The first message: the latest state (the stream is up).
        let first = stream
            .message()
            .await
            .map_err(|e| format!("Watch {i}: {e}"))?
            .ok_or("a stream ended at once")?;
        largest.fetch_max(
            prost::Message::encoded_len(&first),
            std::sync::atomic::Ordering::Relaxed,
        );
        let arrivals = Arc::clone(&arrivals);
        let sizes = Arc::clone(&largest);
        readers.push(tokio::spawn(async move {
            while let Ok(Some(message)) = stream.message().await {
                let size = prost::Message::encoded_len(&message);
                sizes.fetch_max(size, std::sync::atomic::Ordering::Relaxed);
                if let Some(Kind::Change(change)) = message.kind {
                    let id = change.view.map(|v| v.state_id).unwrap_or_default();
                    let mut arrived = arrivals.lock().unwrap_or_else(|e| e.into_inner());
                    arrived.push((id, Instant::now()));
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = args.watch_pid.and_then(rss_kib);
    // The moves, paced; each one's send time by the state id it made.
    let mut sent: HashMap<Vec<u8>, Instant> = HashMap::new();
    let period = Duration::from_secs(1) / u32::try_from(args.rate.max(1)).unwrap_or(1);
    let mut next = Instant::now();
    let mut k = 0;
    while sent.len() < args.moves {
        tokio::time::sleep_until(next.into()).await;
        next += period;
        let j = k % args.matches;
        k += 1;
        match next_move(&mut player, &mut matches[j]).await {
            Ok((id, started)) => {
                sent.insert(id, started);
            }
            Err(why) if why == "over" => matches[j] = new_match(&mut player).await?,
            Err(why) => return Err(why),
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    for r in &readers {
        r.abort();
    }
    let arrived = std::mem::take(&mut *arrivals.lock().unwrap_or_else(|e| e.into_inner()));
    let mut latencies: Vec<Duration> = arrived
        .iter()
        .filter_map(|(id, at)| sent.get(id).map(|s| at.saturating_duration_since(*s)))
        .collect();
    latencies.sort();
    let expected = args.moves * args.streams / args.matches;
    let memory = match (before, after) {
        (Some(b), Some(a)) => format!(
            "; the watching replica's memory {} KiB before the streams, {} KiB with them: {:.1} KiB a stream",
            b,
            a,
            a.saturating_sub(b) as f64 / args.streams as f64
        ),
        _ => String::new(),
    };
    if latencies.len() < expected {
        return Err(format!(
            "{} deliveries of {expected} expected: pushes were lost",
            latencies.len()
        ));
    }
    Ok(format!(
        "{} streams on {} connections over {} matches; {} moves at {}/s on the other replica, \
         {} deliveries: push latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (from the move's \
         Play sent to the stream's message); the largest message {} bytes{memory}",
        args.streams,
        args.streams.div_ceil(args.per_connection),
        args.matches,
        args.moves,
        args.rate,
        latencies.len(),
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
        largest.load(std::sync::atomic::Ordering::Relaxed),
    ))
}

#[tokio::main]
async fn main() -> ExitCode {
    common::reported("watch_load", run(Args::parse()).await)
}
