//! Load generator: whole games over gRPC side by side with a bare unary call on the same
//! server, in one run, to measure what a game call costs beyond the call itself.
//!
//! It starts the server (`target/<profile>/allfives`, built with the `bench-echo`
//! feature) on a free loopback port, or uses one already running (`--addr`, with
//! `--server-pid` for its CPU accounting), then alternates two kinds of phase, several
//! rounds (A B, B A, A B, …, so a drift of the machine's speed falls on both alike):
//!
//! - **game**: `--games` matches in play at once, each a hot-seat match (NewGame
//!   claiming every seat, so the player holds every seat's credential and sends the
//!   acting or viewing seat's with each call), Deal, then Play or Draw chosen from the
//!   views, to the end, and a new match after it. The move is the one that scores most.
//!   To choose it without a Score call per move, the player keeps what a hot-seat client
//!   sees: each seat's tiles from the latest view rendered for that seat (a Deal asks for
//!   the view of the seat that went out last, a Play or Draw for the acting seat's) and
//!   the table from its own Plays, and works out the legal moves of the seat on turn
//!   from them, as the engine does (`engine::Layout`); only for a seat whose tiles it
//!   has not seen yet in the hand does a Score call fetch that seat's view (at most one
//!   per seat a hand). `--viewer score` instead makes every move Score-then-act, as a
//!   naive client (and `examples/play.rs`) does. (Before seat credentials, each Play
//!   asked for the view of the seat on turn next instead, and a Score came only when
//!   that guess was wrong; a request now carries one seat's credential, and a Play's
//!   or Draw's viewer must be its own seat.)
//! - **echo**: as many concurrent bare calls (`allfives.bench.v1.EchoService/Echo`)
//!   whose request and response have the size of the game calls' average (measured in
//!   the warm-up).
//!
//! Both go through the same channel(s) and a codec that hands back the answer's bytes;
//! a player then decodes only the fields it reads (`--decode slim`, the default: the
//! token, the credentials, phase, turn, viewer, count, hand, legal moves, must-draw,
//! winner and who went out) or the whole generated message (`--decode full`), and an
//! echo its whole answer. The server's CPU is what the bars are about; this process's
//! own CPU per call is printed beside it, since on two cores it competes with the
//! server for the same CPU.
//!
//! For each phase: calls per second, latency percentiles, errors, and the server's CPU
//! time per call from its own accounting (`/proc/<pid>/stat`, utime + stime, over the
//! phase); then the medians over the rounds, the game/echo ratios against the bars, the
//! calls a match makes by method, the server's time from start to SERVING and its peak
//! memory (VmHWM). Every count and duration is bounded; only loopback is used. Exits
//! non-zero if any call failed (or, with `--check-bars`, if a bar was missed).
//!
//! ```sh
//! cargo build --release --features bench-echo
//! cargo run --release --features bench-echo --example loadgen -- --games 32 --rounds 5
//! ```
//!
//! One file of about 1,300 lines: an example is a crate of one file, and its parts
//! (the hot-seat player that predicts legal moves, the echo phases, the report) serve
//! only this tool; starting the server, the CPU accounting and the quantiles are
//! shared with `examples/botload.rs` in `examples/common/`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use allfives::engine::layout::points_for;
use allfives::engine::{End, Layout, Tile, TileSet};
use allfives::proto::bench as eb;
use allfives::proto::v1 as pb;
use allfives::service::convert::{end_in, end_out, tile_in, tile_out};
use clap::{Parser, ValueEnum};
use prost::Message;
use prost::bytes::Buf;
use tonic::client::Grpc;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::Bytes;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;

mod common;
use common::{
    ServerProcess, block_on, connect, echo_request, free_loopback_port, load_average,
    process_cpu_secs, quantile_us, start,
};

/// The bars of the issue: game calls/s at least this share of bare calls/s…
const BAR_RATE_RATIO: f64 = 0.85;
/// …and server CPU per game call at most this multiple of a bare call's.
const BAR_CPU_RATIO: f64 = 1.2;

/// Whole games against a bare unary call on one server; see the module docs.
#[derive(Parser, Debug, Clone)]
#[command(name = "loadgen")]
struct Args {
    /// Server binary to start (default: `allfives` beside this example's directory).
    #[arg(long, conflicts_with = "addr")]
    server: Option<PathBuf>,
    /// Use a server already running here (loopback only) instead of starting one.
    #[arg(long)]
    addr: Option<String>,
    /// Process id of the server at --addr, for its CPU time and memory.
    #[arg(long, requires = "addr")]
    server_pid: Option<u32>,
    /// Tokio worker threads of the server this starts (`--worker-threads`); 0, the
    /// default, starts it on its current-thread runtime instead (`--current-thread`):
    /// on these two shared cores, one for the server and one for this process, that
    /// is the sizing measured to cost the server least per call, bare or game
    /// (docs/PERFORMANCE.md, "Runtimes").
    #[arg(long, default_value_t = 0)]
    server_threads: u16,
    /// An extra flag for the server this starts (repeat for more), e.g.
    /// `--server-arg=--log-filter=warn`. By default it runs with its defaults
    /// (log filter `info`), as deployed, except the metrics endpoint (off).
    #[arg(long, allow_hyphen_values = true)]
    server_arg: Vec<String>,
    /// Tokio worker threads of this load generator.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    client_threads: u16,
    /// HTTP/2 connections the calls are spread over.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    connections: u16,
    /// Matches in play at once (and concurrent echo calls).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=1024))]
    games: u16,
    /// Rounds; each has one game phase and one echo phase.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,
    /// Length of each phase, in seconds.
    #[arg(long, default_value_t = 3.0)]
    phase_secs: f64,
    /// Length of the warm-up (a game phase, then an echo phase), in seconds.
    #[arg(long, default_value_t = 1.0)]
    warmup_secs: f64,
    /// Calls at most in one phase, whatever the time.
    #[arg(long, default_value_t = 2_000_000)]
    max_calls: u64,
    /// Players at each table.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=4))]
    players: u32,
    /// How a player learns its legal moves.
    #[arg(long, value_enum, default_value_t = ViewerMode::Predict)]
    viewer: ViewerMode,
    /// How the load generator decodes the answers of game calls.
    #[arg(long, value_enum, default_value_t = DecodeMode::Slim)]
    decode: DecodeMode,
    /// Extra server starts, each timed to SERVING and stopped, before the measured one.
    #[arg(long, default_value_t = 4)]
    starts: u32,
    /// Deadline of each call, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
    /// Nanoseconds of busy work each echo call asks the server for (0: a bare call), to
    /// see how a handler's own work changes the cost of the call around it.
    #[arg(long, default_value_t = 0)]
    echo_work_ns: u32,
    /// Exit non-zero if a bar is missed (besides any failed call).
    #[arg(long)]
    check_bars: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ViewerMode {
    /// Ask each Play, Draw and Deal for the view of the seat expected on turn next;
    /// Score only when the guess was wrong.
    Predict,
    /// Score with the seat on turn before every Play or Draw.
    Score,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum DecodeMode {
    /// Only the fields a player needs (the token, the credentials, phase, turn, viewer,
    /// count, hand, legal moves, must-draw, winner, who went out): the rest is skipped,
    /// not built.
    Slim,
    /// The whole generated message, as `examples/play.rs` does.
    Full,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Game,
    Echo,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Game => "game",
            Kind::Echo => "echo",
        }
    }
}

/// What one phase measured.
#[derive(Default)]
struct Tally {
    calls: u64,
    errors: u64,
    /// Each call's latency, in nanoseconds.
    latencies: Vec<u64>,
    /// Calls by method (game phases).
    by_method: BTreeMap<&'static str, u64>,
    matches_finished: u64,
    request_bytes: u64,
    response_bytes: u64,
    first_error: Option<String>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.calls += other.calls;
        self.errors += other.errors;
        self.latencies.extend(other.latencies);
        for (method, n) in other.by_method {
            *self.by_method.entry(method).or_default() += n;
        }
        self.matches_finished += other.matches_finished;
        self.request_bytes += other.request_bytes;
        self.response_bytes += other.response_bytes;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

/// One phase's figures.
struct PhaseResult {
    kind: Kind,
    tally: Tally,
    wall: f64,
    /// Server CPU seconds over the phase (None without a pid).
    server_cpu: Option<f64>,
    /// This process's CPU seconds over the phase.
    client_cpu: f64,
}

impl PhaseResult {
    fn rate(&self) -> f64 {
        self.tally.calls as f64 / self.wall
    }
    fn server_us_per_call(&self) -> Option<f64> {
        self.server_cpu
            .map(|s| s * 1e6 / self.tally.calls.max(1) as f64)
    }
    fn client_us_per_call(&self) -> f64 {
        self.client_cpu * 1e6 / self.tally.calls.max(1) as f64
    }
}

/// A match in progress: its token (a slice of the answer it came in, passed on to the
/// next request without a copy), the latest view, every seat's credential, and what
/// the player has seen of the hand in play.
struct Match {
    state: Bytes,
    view: SlimView,
    /// Every seat's credential, by seat: the player claimed every seat at NewGame.
    creds: Vec<Vec<u8>>,
    /// Each seat's tiles in the hand in play, once a view rendered for that seat has
    /// shown them (the seat's own Plays and Draws, which ask for its view, keep them
    /// up to date).
    hands: [Option<TileSet>; 4],
    /// The table of the hand in play, built from the player's own Plays.
    layout: Layout,
}

impl Match {
    fn new(state: Bytes, view: SlimView, credentials: Vec<pb::SeatCredential>) -> Match {
        let mut creds = vec![Vec::new(); 4];
        for c in credentials {
            if let Some(slot) = creds.get_mut(c.seat as usize) {
                *slot = c.credential;
            }
        }
        Match {
            state,
            view,
            creds,
            hands: [None; 4],
            layout: Layout::new(),
        }
    }

    /// Seat `seat`'s credential.
    fn cred(&self, seat: u32) -> Vec<u8> {
        self.creds.get(seat as usize).cloned().unwrap_or_default()
    }

    /// Takes in an answer's view: the tiles of the seat it is rendered for, and a check
    /// that the table the player keeps counts what the server's does.
    fn seen(&mut self, view: SlimView) -> Result<(), String> {
        if let Some(slot) = view.viewer.and_then(|v| self.hands.get_mut(v as usize)) {
            let tiles = view
                .hand
                .iter()
                .map(|t| tile_in(Some(t)))
                .collect::<Result<TileSet, _>>()
                .map_err(|e| format!("a view's hand holds no tile: {e:?}"))?;
            *slot = Some(tiles);
        }
        if view.phase == pb::Phase::Playing as i32 && view.count != self.layout.count() {
            return Err(format!(
                "the table the player keeps counts {}, the server's {}",
                self.layout.count(),
                view.count
            ));
        }
        self.view = view;
        Ok(())
    }
}

/// The legal moves of a seat holding `hand` at `layout`, in the engine's order
/// (`Game::legal_moves`) and with its points: what the seat's own view would list.
fn legal_moves(hand: TileSet, layout: &Layout) -> Vec<pb::LegalMove> {
    let mut moves = Vec::new();
    let mut push = |tile: Tile, end: Option<End>| {
        moves.push(pb::LegalMove {
            tile: Some(tile_out(tile)),
            end: end_out(end),
            points: points_for(layout.count_after(tile, end)),
        })
    };
    if layout.is_empty() {
        hand.iter().for_each(|tile| push(tile, None));
    } else {
        for tile in hand.intersection(layout.playable()).iter() {
            layout
                .fitting_ends(tile)
                .for_each(|end| push(tile, Some(end)));
        }
    }
    moves
}

/// One concurrent player of matches, kept across phases so a phase does not start
/// every match afresh.
struct Player {
    grpc: Grpc<Channel>,
    current: Option<Match>,
}

// What a player reads of an answer: the generated messages' fields by number, the rest
// skipped by the decoder (see `--decode`).

/// NewGame, Deal, Play and Draw answers (only NewGame's have credentials).
#[derive(Clone, PartialEq, Message)]
struct SlimAnswer {
    #[prost(bytes = "bytes", tag = "1")]
    state: Bytes,
    #[prost(message, optional, tag = "2")]
    view: Option<SlimView>,
    #[prost(message, repeated, tag = "4")]
    credentials: Vec<pb::SeatCredential>,
}

/// Score answers (field 1 is the sheet).
#[derive(Clone, PartialEq, Message)]
struct SlimScore {
    #[prost(message, optional, tag = "2")]
    view: Option<SlimView>,
}

#[derive(Clone, PartialEq, Message)]
struct SlimView {
    #[prost(int32, tag = "4")]
    phase: i32,
    #[prost(uint32, optional, tag = "6")]
    turn: Option<u32>,
    #[prost(uint32, optional, tag = "7")]
    viewer: Option<u32>,
    #[prost(uint32, tag = "10")]
    count: u32,
    #[prost(message, repeated, tag = "14")]
    hand: Vec<pb::Tile>,
    #[prost(message, repeated, tag = "15")]
    legal_moves: Vec<pb::LegalMove>,
    #[prost(bool, tag = "16")]
    must_draw: bool,
    #[prost(uint32, optional, tag = "17")]
    winner_side: Option<u32>,
    #[prost(message, optional, tag = "19")]
    last_hand: Option<SlimHandResult>,
}

#[derive(Clone, PartialEq, Message)]
struct SlimHandResult {
    #[prost(uint32, optional, tag = "3")]
    went_out: Option<u32>,
}

impl From<pb::GameView> for SlimView {
    fn from(v: pb::GameView) -> SlimView {
        SlimView {
            phase: v.phase,
            turn: v.turn,
            viewer: v.viewer,
            count: v.count,
            hand: v.hand,
            legal_moves: v.legal_moves,
            must_draw: v.must_draw,
            winner_side: v.winner_side,
            last_hand: v.last_hand.map(|h| SlimHandResult {
                went_out: h.went_out,
            }),
        }
    }
}

/// A gRPC codec that encodes a generated request and hands back the answer's bytes,
/// so the caller can decode it as it likes and knows its size.
struct RawCodec<T>(std::marker::PhantomData<T>);

impl<T> Default for RawCodec<T> {
    fn default() -> Self {
        RawCodec(std::marker::PhantomData)
    }
}

struct RawEncoder<T>(std::marker::PhantomData<T>);

impl<T: Message> Encoder for RawEncoder<T> {
    type Item = T;
    type Error = tonic::Status;
    fn encode(&mut self, item: T, buf: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        item.encode(buf)
            .map_err(|e| tonic::Status::internal(e.to_string()))
    }
}

struct RawDecoder;

impl Decoder for RawDecoder {
    type Item = Bytes;
    type Error = tonic::Status;
    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, tonic::Status> {
        let n = buf.remaining();
        Ok(Some(buf.copy_to_bytes(n)))
    }
}

impl<T: Message + Send + 'static> Codec for RawCodec<T> {
    type Encode = T;
    type Decode = Bytes;
    type Encoder = RawEncoder<T>;
    type Decoder = RawDecoder;
    fn encoder(&mut self) -> RawEncoder<T> {
        RawEncoder(std::marker::PhantomData)
    }
    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

/// Sends one unary call and returns the answer's bytes.
async fn unary<T: Message + Send + 'static>(
    grpc: &mut Grpc<Channel>,
    path: &'static str,
    message: T,
    deadline: Duration,
) -> Result<Bytes, tonic::Status> {
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let mut request = tonic::Request::new(message);
    request.set_timeout(deadline);
    let answer = grpc
        .unary(
            request,
            PathAndQuery::from_static(path),
            RawCodec::<T>::default(),
        )
        .await?;
    Ok(answer.into_inner())
}

/// Everything the phases share.
struct Ctx {
    args: Args,
    deadline: Duration,
    calls: AtomicU64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let workers = usize::from(args.client_threads);
    block_on("loadgen", workers, run(args))
}

fn server_binary(args: &Args) -> Result<PathBuf, String> {
    if let Some(path) = &args.server {
        return Ok(path.clone());
    }
    // target/<profile>/examples/loadgen -> target/<profile>/allfives
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let dir = exe
        .parent()
        .and_then(|p| p.parent())
        .ok_or("cannot find the target directory")?;
    let path = dir.join("allfives");
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "{} not found: build it first (cargo build [--release] --features bench-echo) or pass --server",
            path.display()
        ))
    }
}

/// Starts the server on a free loopback port; returns it, its URL and the time from
/// spawning it to its first SERVING health answer.
async fn start_server(args: &Args) -> Result<(ServerProcess, String, Duration), String> {
    let binary = server_binary(args)?;
    let port = free_loopback_port()?;
    let addr = format!("127.0.0.1:{port}");
    let mut command = Command::new(&binary);
    command
        .args(["--addr", &addr, "--metrics-addr", "off"])
        .args(match args.server_threads {
            0 => vec!["--current-thread".to_owned()],
            n => vec!["--worker-threads".to_owned(), n.to_string()],
        })
        .args(["--shutdown-delay-ms", "0", "--drain-seconds", "1"])
        .args(&args.server_arg);
    start(command, &addr).await
}

/// A `VmXxx` line of `/proc/<pid>/status`, in KiB.
fn process_memory_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

async fn run(args: Args) -> Result<ExitCode, String> {
    if !args.phase_secs.is_finite()
        || !(0.05..=600.0).contains(&args.phase_secs)
        || !args.warmup_secs.is_finite()
        || !(0.0..=600.0).contains(&args.warmup_secs)
    {
        return Err("--phase-secs must be 0.05..=600 and --warmup-secs 0..=600".to_owned());
    }
    let (server, url, pid, starts) = match &args.addr {
        Some(addr) => {
            let url = if addr.contains("://") {
                addr.clone()
            } else {
                format!("http://{addr}")
            };
            (None, url, args.server_pid, Vec::new())
        }
        None => {
            let mut starts = Vec::new();
            for _ in 0..args.starts.min(20) {
                let (server, _, to_serving) = start_server(&args).await?;
                starts.push(to_serving);
                drop(server);
            }
            let (server, url, to_serving) = start_server(&args).await?;
            starts.push(to_serving);
            let pid = server.child.id();
            (Some(server), url, Some(pid), starts)
        }
    };

    println!(
        "loadgen: {url}, {} concurrent {}, {} connection(s); server {}; client {} worker thread(s); \
         {} round(s) of {:.1} s phases; viewer mode {:?}",
        args.games,
        if args.games == 1 { "match" } else { "matches" },
        args.connections,
        match (&server, args.server_threads) {
            (Some(_), 0) => "started here, current-thread runtime".to_owned(),
            (Some(_), n) => format!("started here, {n} worker thread(s)"),
            (None, _) => "already running".to_owned(),
        },
        args.client_threads,
        args.rounds,
        args.phase_secs,
        args.viewer,
    );
    if cfg!(debug_assertions) {
        println!("a dev build: the figures say little and the bars are for release builds");
    }
    println!("load average at start: {}", load_average());
    let rss_idle = pid.and_then(|p| process_memory_kib(p, "VmRSS"));

    let mut channels = Vec::new();
    for _ in 0..args.connections {
        channels.push(connect(&url).await?);
    }
    let ctx = Arc::new(Ctx {
        deadline: Duration::from_millis(args.timeout_ms),
        args: args.clone(),
        calls: AtomicU64::new(0),
    });

    // The players, kept across phases.
    let mut players: Vec<Player> = (0..usize::from(args.games))
        .map(|i| Player {
            grpc: Grpc::new(channels[i % channels.len()].clone()),
            current: None,
        })
        .collect();
    let echo_clients: Vec<Grpc<Channel>> = (0..usize::from(args.games))
        .map(|i| Grpc::new(channels[i % channels.len()].clone()))
        .collect();

    // Warm-up: a game phase to learn the messages' sizes, then an echo phase.
    let warm = Duration::from_secs_f64(args.warmup_secs.max(0.05));
    let (warm_game, back) = game_phase(&ctx, players, warm, pid).await;
    players = back;
    if warm_game.tally.calls == 0 {
        return Err(format!(
            "no game call succeeded in the warm-up: {}",
            warm_game.tally.first_error.unwrap_or_default()
        ));
    }
    let request_bytes = warm_game.tally.request_bytes / warm_game.tally.calls;
    let response_bytes = warm_game.tally.response_bytes / warm_game.tally.calls;
    let mut echo_request = echo_request(request_bytes as usize, response_bytes as usize);
    echo_request.work_ns = args.echo_work_ns;
    println!(
        "game calls average {request_bytes} B per request and {response_bytes} B per response \
         (protobuf); echo requests are {} B and ask for {} B responses",
        echo_request.encoded_len(),
        eb::EchoResponse {
            payload: vec![0; echo_request.response_bytes as usize]
        }
        .encoded_len()
    );
    let warm_echo = echo_phase(&ctx, &echo_clients, &echo_request, warm, pid).await;
    if warm_echo.tally.calls == 0 {
        return Err(format!(
            "no echo call succeeded (is the server built with --features bench-echo?): {}",
            warm_echo.tally.first_error.unwrap_or_default()
        ));
    }
    let mut errors = warm_game.tally.errors + warm_echo.tally.errors;
    let mut first_error = warm_game.tally.first_error.or(warm_echo.tally.first_error);

    println!(
        "{:>5} {:>4} {:>8} {:>9} {:>8} {:>8} {:>8} {:>11} {:>11} {:>6}",
        "round",
        "kind",
        "calls",
        "calls/s",
        "p50 µs",
        "p99 µs",
        "p999 µs",
        "srv µs/call",
        "cli µs/call",
        "errors"
    );
    let phase = Duration::from_secs_f64(args.phase_secs);
    let mut results: Vec<(u32, PhaseResult)> = Vec::new();
    for round in 0..args.rounds {
        let order = if round % 2 == 0 {
            [Kind::Game, Kind::Echo]
        } else {
            [Kind::Echo, Kind::Game]
        };
        for kind in order {
            let result = match kind {
                Kind::Game => {
                    let (result, back) = game_phase(&ctx, players, phase, pid).await;
                    players = back;
                    result
                }
                Kind::Echo => echo_phase(&ctx, &echo_clients, &echo_request, phase, pid).await,
            };
            let mut sorted = result.tally.latencies.clone();
            sorted.sort_unstable();
            println!(
                "{:>5} {:>4} {:>8} {:>9.0} {:>8.0} {:>8.0} {:>8.0} {:>11} {:>11.1} {:>6}",
                round + 1,
                kind.name(),
                result.tally.calls,
                result.rate(),
                quantile_us(&sorted, 0.5),
                quantile_us(&sorted, 0.99),
                quantile_us(&sorted, 0.999),
                result
                    .server_us_per_call()
                    .map_or("-".to_owned(), |v| format!("{v:.1}")),
                result.client_us_per_call(),
                result.tally.errors,
            );
            errors += result.tally.errors;
            if first_error.is_none() {
                first_error = result.tally.first_error.clone();
            }
            results.push((round, result));
        }
    }

    // Summary: medians over rounds, ratios per round, pooled latency percentiles.
    let of = |kind: Kind| results.iter().filter(move |(_, r)| r.kind == kind);
    let mut rate_ratios = Vec::new();
    let mut cpu_ratios = Vec::new();
    for round in 0..args.rounds {
        let find = |kind| {
            results
                .iter()
                .find(|(r, p)| *r == round && p.kind == kind)
                .map(|(_, p)| p)
        };
        if let (Some(g), Some(e)) = (find(Kind::Game), find(Kind::Echo)) {
            rate_ratios.push(g.rate() / e.rate());
            if let (Some(gc), Some(ec)) = (g.server_us_per_call(), e.server_us_per_call()) {
                cpu_ratios.push(gc / ec);
            }
        }
    }
    println!();
    for kind in [Kind::Game, Kind::Echo] {
        let mut rates: Vec<f64> = of(kind).map(|(_, r)| r.rate()).collect();
        let mut cpu: Vec<f64> = of(kind)
            .filter_map(|(_, r)| r.server_us_per_call())
            .collect();
        let mut client: Vec<f64> = of(kind).map(|(_, r)| r.client_us_per_call()).collect();
        let mut pooled: Vec<u64> = of(kind)
            .flat_map(|(_, r)| r.tally.latencies.iter().copied())
            .collect();
        pooled.sort_unstable();
        let calls: u64 = of(kind).map(|(_, r)| r.tally.calls).sum();
        let errs: u64 = of(kind).map(|(_, r)| r.tally.errors).sum();
        println!(
            "{:<5} median {:>7.0} calls/s; server CPU {} µs/call; client CPU {:.1} µs/call; \
             latency (all {} calls) p50 {:.0} µs, p99 {:.0} µs, p999 {:.0} µs; {} errors",
            kind.name(),
            median(&mut rates),
            if cpu.is_empty() {
                "-".to_owned()
            } else {
                format!("{:.1}", median(&mut cpu))
            },
            median(&mut client),
            calls,
            quantile_us(&pooled, 0.5),
            quantile_us(&pooled, 0.99),
            quantile_us(&pooled, 0.999),
            errs,
        );
    }
    let rate_ratio = median(&mut rate_ratios);
    let rate_ok = rate_ratio >= BAR_RATE_RATIO;
    println!(
        "calls/s game ÷ echo, median of {} rounds: {rate_ratio:.3} (bar ≥ {BAR_RATE_RATIO}: {})",
        rate_ratios.len(),
        if rate_ok { "met" } else { "MISSED" }
    );
    let cpu_ok = if cpu_ratios.is_empty() {
        println!("server CPU per call: no server pid, not measured");
        true
    } else {
        let cpu_ratio = median(&mut cpu_ratios);
        let ok = cpu_ratio <= BAR_CPU_RATIO;
        println!(
            "server CPU per call game ÷ echo, median of {} rounds: {cpu_ratio:.3} (bar ≤ {BAR_CPU_RATIO}: {})",
            cpu_ratios.len(),
            if ok { "met" } else { "MISSED" }
        );
        ok
    };

    // What a match costs in calls.
    let mut mix = Tally::default();
    for (_, r) in of(Kind::Game) {
        for (&m, n) in &r.tally.by_method {
            *mix.by_method.entry(m).or_default() += n;
        }
        mix.matches_finished += r.tally.matches_finished;
        mix.calls += r.tally.calls;
    }
    if mix.matches_finished > 0 {
        let per = |n: u64| n as f64 / mix.matches_finished as f64;
        let parts: Vec<String> = mix
            .by_method
            .iter()
            .map(|(m, &n)| format!("{m} {:.1}", per(n)))
            .collect();
        println!(
            "calls per match ({} matches finished, {}-player, to the default target): {:.1}: {}",
            mix.matches_finished,
            args.players,
            per(mix.calls),
            parts.join(", ")
        );
    }

    if !starts.is_empty() {
        let mut ms: Vec<f64> = starts.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        let max = ms.iter().copied().fold(0.0, f64::max);
        println!(
            "server start to SERVING (spawn to the first SERVING health answer, {} starts): \
             median {:.1} ms, max {max:.1} ms",
            ms.len(),
            median(&mut ms)
        );
    }
    if let Some(pid) = pid {
        let kib =
            |v: Option<u64>| v.map_or("?".to_owned(), |k| format!("{:.1} MiB", k as f64 / 1024.0));
        println!(
            "server memory: idle after start {}, now {}, peak (VmHWM) {}",
            kib(rss_idle),
            kib(process_memory_kib(pid, "VmRSS")),
            kib(process_memory_kib(pid, "VmHWM")),
        );
    }
    println!("load average at end: {}", load_average());
    drop(server);

    if errors > 0 {
        println!(
            "loadgen: FAILED: {errors} call(s) failed; first: {}",
            first_error.unwrap_or_default()
        );
        return Ok(ExitCode::FAILURE);
    }
    if args.check_bars && !(rate_ok && cpu_ok) {
        println!("loadgen: FAILED: a bar was missed");
        return Ok(ExitCode::FAILURE);
    }
    println!("loadgen: ok, 0 errors");
    Ok(ExitCode::SUCCESS)
}

/// Runs `games` players until `length` has passed (or the call bound), returning the
/// phase's figures and the players.
async fn game_phase(
    ctx: &Arc<Ctx>,
    players: Vec<Player>,
    length: Duration,
    pid: Option<u32>,
) -> (PhaseResult, Vec<Player>) {
    ctx.calls.store(0, Ordering::Relaxed);
    let cpu0 = pid.and_then(process_cpu_secs);
    let me0 = process_cpu_secs(std::process::id()).unwrap_or(0.0);
    let start = Instant::now();
    let stop = start + length;
    let mut tasks = tokio::task::JoinSet::new();
    for (i, mut player) in players.into_iter().enumerate() {
        let ctx = Arc::clone(ctx);
        tasks.spawn(async move {
            let mut tally = Tally {
                latencies: Vec::with_capacity(4096),
                ..Tally::default()
            };
            while Instant::now() < stop
                && ctx.calls.fetch_add(1, Ordering::Relaxed) < ctx.args.max_calls
            {
                step(&ctx, &mut player, &mut tally).await;
            }
            (i, player, tally)
        });
    }
    let mut back: Vec<Option<Player>> = Vec::new();
    let mut tally = Tally::default();
    while let Some(joined) = tasks.join_next().await {
        let (i, player, t) = joined.expect("player task");
        if back.len() <= i {
            back.resize_with(i + 1, || None);
        }
        back[i] = Some(player);
        tally.merge(t);
    }
    let wall = start.elapsed().as_secs_f64();
    let server_cpu = cpu0.and_then(|c0| Some(process_cpu_secs(pid?)? - c0));
    let client_cpu = process_cpu_secs(std::process::id()).unwrap_or(0.0) - me0;
    (
        PhaseResult {
            kind: Kind::Game,
            tally,
            wall,
            server_cpu,
            client_cpu,
        },
        back.into_iter().map(|p| p.expect("every player")).collect(),
    )
}

async fn echo_phase(
    ctx: &Arc<Ctx>,
    clients: &[Grpc<Channel>],
    request: &eb::EchoRequest,
    length: Duration,
    pid: Option<u32>,
) -> PhaseResult {
    ctx.calls.store(0, Ordering::Relaxed);
    let cpu0 = pid.and_then(process_cpu_secs);
    let me0 = process_cpu_secs(std::process::id()).unwrap_or(0.0);
    let start = Instant::now();
    let stop = start + length;
    let mut tasks = tokio::task::JoinSet::new();
    for client in clients {
        let ctx = Arc::clone(ctx);
        let mut grpc = client.clone();
        let request = request.clone();
        tasks.spawn(async move {
            let mut tally = Tally {
                latencies: Vec::with_capacity(4096),
                ..Tally::default()
            };
            while Instant::now() < stop
                && ctx.calls.fetch_add(1, Ordering::Relaxed) < ctx.args.max_calls
            {
                let t0 = Instant::now();
                let answer = unary(&mut grpc, ECHO, request.clone(), ctx.deadline)
                    .await
                    .and_then(|bytes| {
                        eb::EchoResponse::decode(bytes)
                            .map_err(|e| tonic::Status::internal(e.to_string()))
                    });
                let elapsed = t0.elapsed().as_nanos() as u64;
                match answer {
                    Ok(_) => {
                        tally.calls += 1;
                        tally.latencies.push(elapsed);
                    }
                    Err(status) => {
                        tally.errors += 1;
                        tally
                            .first_error
                            .get_or_insert_with(|| format!("Echo: {status}"));
                    }
                }
            }
            tally
        });
    }
    let mut tally = Tally::default();
    while let Some(joined) = tasks.join_next().await {
        tally.merge(joined.expect("echo task"));
    }
    let wall = start.elapsed().as_secs_f64();
    let server_cpu = cpu0.and_then(|c0| Some(process_cpu_secs(pid?)? - c0));
    let client_cpu = process_cpu_secs(std::process::id()).unwrap_or(0.0) - me0;
    PhaseResult {
        kind: Kind::Echo,
        tally,
        wall,
        server_cpu,
        client_cpu,
    }
}

/// The next call of a match, chosen from its latest view.
enum Call {
    NewGame(pb::NewGameRequest),
    Deal(pb::DealRequest),
    Score(pb::ScoreRequest),
    Draw(pb::DrawRequest),
    Play(pb::PlayRequest),
}

impl Call {
    fn method(&self) -> &'static str {
        match self {
            Call::NewGame(_) => "NewGame",
            Call::Deal(_) => "Deal",
            Call::Score(_) => "Score",
            Call::Draw(_) => "Draw",
            Call::Play(_) => "Play",
        }
    }
}

/// Chooses the next call of `player`'s match (a new match if it has none or it is
/// over). Counts a finished match.
fn next_call(ctx: &Ctx, player: &mut Player, tally: &mut Tally) -> Result<Call, String> {
    let predict = ctx.args.viewer == ViewerMode::Predict;
    let players = ctx.args.players;
    let Some(m) = &player.current else {
        // Hot seat: every seat a human's, claimed in this call.
        return Ok(Call::NewGame(pb::NewGameRequest {
            rules: Some(pb::Rules {
                players,
                ..Default::default()
            }),
            seats: vec![
                pb::SeatSetup {
                    bot: pb::BotLevel::Unspecified as i32,
                    claim: true,
                    display_name: String::new(),
                    pass: String::new(),
                };
                players as usize
            ],
            ..Default::default()
        }));
    };
    let view = &m.view;
    match pb::Phase::try_from(view.phase) {
        Ok(pb::Phase::Over) => {
            if view.winner_side.is_none() {
                return Err("a match over with no winner".to_owned());
            }
            tally.matches_finished += 1;
            player.current = None;
            next_call(ctx, player, tally)
        }
        Ok(pb::Phase::Dealing) => {
            // The seat that went out last leads the next hand; after a blocked hand
            // (or before the first) the lead is random: guess seat 0.
            let starter = view
                .last_hand
                .as_ref()
                .and_then(|h| h.went_out)
                .unwrap_or(0);
            Ok(Call::Deal(pb::DealRequest {
                state: m.state.clone(),
                viewer: predict.then_some(starter),
                credential: if predict { m.cred(starter) } else { Vec::new() },
            }))
        }
        Ok(pb::Phase::Playing) => {
            let seat = view.turn.ok_or("a hand in play with no seat on turn")?;
            let known = m.hands.get(seat as usize).copied().flatten();
            // The seat's legal moves: from a view rendered for it, else (predicting)
            // from the tiles it was seen to hold and the table; else a Score fetches
            // its view.
            let worked_out;
            let (moves, must_draw) = match (view.viewer == Some(seat), known) {
                (true, known) => {
                    if cfg!(debug_assertions)
                        && let Some(hand) = known.filter(|_| predict)
                        && legal_moves(hand, &m.layout) != view.legal_moves
                    {
                        return Err(format!(
                            "seat {seat}'s legal moves worked out differ from its view's"
                        ));
                    }
                    (&view.legal_moves, view.must_draw)
                }
                (false, Some(hand)) if predict => {
                    worked_out = legal_moves(hand, &m.layout);
                    (&worked_out, worked_out.is_empty())
                }
                (false, _) => {
                    return Ok(Call::Score(pb::ScoreRequest {
                        state: m.state.clone(),
                        viewer: Some(seat),
                        credential: m.cred(seat),
                        include_hand_events: false,
                    }));
                }
            };
            if must_draw {
                return Ok(Call::Draw(pb::DrawRequest {
                    state: m.state.clone(),
                    seat,
                    viewer: predict.then_some(seat),
                    credential: m.cred(seat),
                }));
            }
            // The move that scores most; the first listed among equals.
            let best = moves
                .iter()
                .reduce(|best, m| if m.points > best.points { m } else { best })
                .ok_or_else(|| format!("seat {seat} on turn with no legal move and no draw"))?;
            Ok(Call::Play(pb::PlayRequest {
                state: m.state.clone(),
                seat,
                tile: best.tile,
                end: best.end,
                viewer: predict.then_some(seat),
                credential: m.cred(seat),
            }))
        }
        _ => Err(format!("unknown phase {}", view.phase)),
    }
}

const ECHO: &str = "/allfives.bench.v1.EchoService/Echo";

/// What a player reads of a game call's answer.
struct Decoded {
    /// The new token (none for Score).
    state: Option<Bytes>,
    view: Option<SlimView>,
    /// The seats' credentials (NewGame's).
    credentials: Vec<pb::SeatCredential>,
}

/// Decodes the answer of a `method` call.
fn decode_answer(
    mode: DecodeMode,
    method: &str,
    bytes: Bytes,
) -> Result<Decoded, prost::DecodeError> {
    let answer = |state: Vec<u8>, view: Option<pb::GameView>, credentials| Decoded {
        state: Some(Bytes::from(state)),
        view: view.map(SlimView::from),
        credentials,
    };
    Ok(match (mode, method) {
        (DecodeMode::Slim, "Score") => Decoded {
            state: None,
            view: SlimScore::decode(bytes)?.view,
            credentials: Vec::new(),
        },
        (DecodeMode::Slim, _) => {
            let a = SlimAnswer::decode(bytes)?;
            Decoded {
                state: Some(a.state),
                view: a.view,
                credentials: a.credentials,
            }
        }
        (DecodeMode::Full, "Score") => Decoded {
            state: None,
            view: pb::ScoreResponse::decode(bytes)?.view.map(SlimView::from),
            credentials: Vec::new(),
        },
        (DecodeMode::Full, "NewGame") => {
            let a = pb::NewGameResponse::decode(bytes)?;
            answer(a.state, a.view, a.credentials)
        }
        (DecodeMode::Full, _) => {
            // Deal, Play and Draw answers share their layout.
            let a = pb::PlayResponse::decode(bytes)?;
            answer(a.state, a.view, Vec::new())
        }
    })
}

/// Makes one call of `player`'s match and records it.
async fn step(ctx: &Ctx, player: &mut Player, tally: &mut Tally) {
    let call = match next_call(ctx, player, tally) {
        Ok(call) => call,
        Err(error) => {
            tally.errors += 1;
            tally.first_error.get_or_insert(error);
            player.current = None;
            return;
        }
    };
    let method = call.method();
    // What the call changes of the table the player keeps: a Play places a tile (the
    // player's own requests always name one), a Deal starts a new hand.
    let placed = match &call {
        Call::Play(r) => match (tile_in(r.tile.as_ref()), end_in(r.end)) {
            (Ok(tile), Ok(end)) => Some((r.seat, tile, end)),
            _ => None,
        },
        _ => None,
    };
    let grpc = &mut player.grpc;
    let deadline = ctx.deadline;
    let t0 = Instant::now();
    // One arm per method: the request's size and the answer of its unary call.
    macro_rules! send {
        ($r:expr, $method:literal) => {
            (
                $r.encoded_len(),
                unary(
                    grpc,
                    concat!("/allfives.v1.AllFivesService/", $method),
                    $r,
                    deadline,
                )
                .await,
            )
        };
    }
    let (request_bytes, answer) = match call {
        Call::NewGame(r) => send!(r, "NewGame"),
        Call::Deal(r) => send!(r, "Deal"),
        Call::Score(r) => send!(r, "Score"),
        Call::Draw(r) => send!(r, "Draw"),
        Call::Play(r) => send!(r, "Play"),
    };
    let answer = answer.and_then(|bytes| {
        let response_bytes = bytes.len();
        decode_answer(ctx.args.decode, method, bytes)
            .map(|decoded| (response_bytes, decoded))
            .map_err(|e| tonic::Status::internal(format!("undecodable answer: {e}")))
    });
    let elapsed = t0.elapsed().as_nanos() as u64;
    match answer {
        Ok((
            response_bytes,
            Decoded {
                state,
                view: Some(view),
                credentials,
            },
        )) => {
            tally.calls += 1;
            tally.latencies.push(elapsed);
            tally.request_bytes += request_bytes as u64;
            tally.response_bytes += response_bytes as u64;
            *tally.by_method.entry(method).or_default() += 1;
            let kept = match (method, state, player.current.as_mut()) {
                ("NewGame", Some(state), _) => {
                    player.current = Some(Match::new(state, view, credentials));
                    Ok(())
                }
                (_, state, Some(m)) => {
                    if let Some(state) = state {
                        m.state = state;
                    }
                    if method == "Deal" {
                        m.hands = [None; 4];
                        m.layout = Layout::new();
                    }
                    if let Some((seat, tile, end)) = placed {
                        m.layout.place(tile, end);
                        if let Some(hand) = m.hands.get_mut(seat as usize).and_then(Option::as_mut)
                        {
                            hand.remove(tile);
                        }
                    }
                    m.seen(view)
                }
                _ => Err(format!("{method} answered for no match")),
            };
            if let Err(error) = kept {
                tally.errors += 1;
                tally.first_error.get_or_insert(error);
                player.current = None;
            }
        }
        Ok(_) => {
            tally.errors += 1;
            tally
                .first_error
                .get_or_insert_with(|| format!("{method} answered no view"));
            player.current = None;
        }
        Err(status) => {
            tally.errors += 1;
            tally
                .first_error
                .get_or_insert_with(|| format!("{method}: {status}"));
            player.current = None;
        }
    }
}
