//! Sends one RPC of the API many times, one call after another on one connection, to a
//! running server: the client side of `benches/rpc_instructions.sh`, which counts the
//! served call's instructions with the server under callgrind (docs/PERFORMANCE.md,
//! "Instructions per served call").
//!
//! It prepares the request on a two-player hot-seat match (NewGame claiming both
//! seats, so it holds both credentials), then sends it `--calls` times, checking that
//! every answer is OK. With `--seed S` (a server started with `--allow-client-seeds`)
//! the matches are dealt from seeds S, S + 1, …, so that two builds are measured on
//! the same positions; without it the server deals, and positions differ run to run:
//!
//! - `NewGame`: two players, both seats claimed, seat 0 the viewer;
//! - `Deal`: a new match's first deal, seat 0 the viewer;
//! - `Play`: the fifth tile of the first hand (four on the table), the first legal
//!   move of the seat on turn, that seat the viewer (the Play `examples/callgrind_calls.rs`
//!   counts in process);
//! - `Draw`: the first position of the first hand where the seat on turn must draw;
//! - `Score`: the `Play` position, seen by the seat on turn with its credential;
//! - `Suggest`: the `Play` position, a MEDIUM suggestion for the seat on turn;
//! - `Echo` (a server and this tool built with `--features bench-echo`): the bare unary
//!   call `examples/loadgen.rs` compares game calls with, its request and answer sized
//!   as the `Play`'s (padding), so that the two differ by the game's work alone.
//!
//! By default the same request goes every time: the service is stateless, so the same
//! token and move get the same answer (with a new nonce). A server's token cache takes
//! a token out when it opens it, though, and keeps the game under the answer's new
//! token, so a Deal, Play or Draw brought again misses the cache: `--fresh` instead
//! prepares one request per call, each on its own match and carrying the token the
//! server sealed last for it, as a client playing a match sends them (a cache hit).
//!
//! `--warmup N` calls go first; then `--before` runs (a shell command, e.g.
//! `callgrind_control -z PID`), the measured calls, and `--after`.
//!
//! ```sh
//! cargo run --release --example rpc_load -- --addr http://127.0.0.1:50051 --rpc Play --calls 2000
//! ```

#[cfg(feature = "bench-echo")]
mod common;

use std::process::ExitCode;
use std::time::{Duration, Instant};

#[cfg(feature = "bench-echo")]
use allfives::proto::bench as eb;
use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use clap::{Parser, ValueEnum};
use prost::Message;
use prost::bytes::Bytes;
use tonic::transport::{Channel, Endpoint};

type Client = AllFivesServiceClient<Channel>;

/// Moves tried in one hand before the match is given up (a two-player hand has at most
/// 28 tiles to play or draw).
const MAX_STEPS: usize = 64;

/// Matches tried for one position before giving up.
const MAX_MATCHES: usize = 50;

/// Send one RPC of the API many times to a running server.
#[derive(Parser, Debug)]
#[command(name = "rpc_load")]
struct Args {
    /// Server address: `http://host:port`, or `host:port`.
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    addr: String,
    /// The RPC sent.
    #[arg(long, value_enum, ignore_case = true)]
    rpc: Rpc,
    /// Calls measured (after the warm-up).
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    calls: u64,
    /// Calls sent before the measured ones.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    warmup: u64,
    /// One request per call, each on its own match with the token the server sealed
    /// last for it (a token cache's hit), instead of the same request every time.
    #[arg(long)]
    fresh: bool,
    /// Shell command run after the warm-up, before the measured calls; its failure
    /// stops the run.
    #[arg(long)]
    before: Option<String>,
    /// Shell command run after the measured calls; its failure stops the run.
    #[arg(long)]
    after: Option<String>,
    /// Longest wait for one answer, in milliseconds (sent as no deadline: the server
    /// uses its own).
    #[arg(long, default_value_t = 60_000)]
    timeout_ms: u64,
    /// Seed of the first match prepared (then seed + 1, …), for a server started with
    /// --allow-client-seeds; without it the server draws each match's seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Matches with a turn clock (the phone defaults: 30 s a move, a 60 s bank), to
    /// measure a clocked call against an unclocked one.
    #[arg(long)]
    clocked: bool,
    /// How long to keep trying to connect, in seconds (a server under valgrind takes a
    /// while to listen).
    #[arg(long, default_value_t = 120)]
    connect_secs: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Rpc {
    #[value(name = "NewGame")]
    NewGame,
    #[value(name = "Deal")]
    Deal,
    #[value(name = "Play")]
    Play,
    #[value(name = "Draw")]
    Draw,
    #[value(name = "Score")]
    Score,
    #[value(name = "Suggest")]
    Suggest,
    #[cfg(feature = "bench-echo")]
    #[value(name = "Echo")]
    Echo,
}

/// One prepared request.
#[derive(Clone, Debug)]
enum Request {
    NewGame(pb::NewGameRequest),
    Deal(pb::DealRequest),
    Play(pb::PlayRequest),
    Draw(pb::DrawRequest),
    Score(pb::ScoreRequest),
    Suggest(pb::SuggestRequest),
    #[cfg(feature = "bench-echo")]
    Echo(eb::EchoRequest),
}

impl Request {
    fn encoded_len(&self) -> usize {
        match self {
            Request::NewGame(r) => r.encoded_len(),
            Request::Deal(r) => r.encoded_len(),
            Request::Play(r) => r.encoded_len(),
            Request::Draw(r) => r.encoded_len(),
            Request::Score(r) => r.encoded_len(),
            Request::Suggest(r) => r.encoded_len(),
            #[cfg(feature = "bench-echo")]
            Request::Echo(r) => r.encoded_len(),
        }
    }
}

/// The client, with the longest wait for an answer and the next match's seed.
struct Conn {
    client: Client,
    #[cfg(feature = "bench-echo")]
    channel: Channel,
    timeout: Duration,
    seed: std::cell::Cell<Option<u64>>,
    /// The matches have a turn clock.
    clocked: bool,
}

impl Conn {
    /// Waits for `call`'s answer, at most the timeout.
    async fn wait<T>(
        &self,
        what: &str,
        call: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    ) -> Result<T, String> {
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(answer)) => Ok(answer.into_inner()),
            Ok(Err(status)) => Err(format!("{what}: {:?} {}", status.code(), status.message())),
            Err(_) => Err(format!("{what}: no answer in {:?}", self.timeout)),
        }
    }

    /// Sends `request` once; the answer's size in bytes, once checked.
    async fn send(&self, request: &Request) -> Result<usize, String> {
        let mut client = self.client.clone();
        match request {
            Request::NewGame(r) => {
                let a = self.wait("NewGame", client.new_game(r.clone())).await?;
                check(!a.state.is_empty() && a.credentials.len() == 2, "NewGame")?;
                Ok(a.encoded_len())
            }
            Request::Deal(r) => {
                let a = self.wait("Deal", client.deal(r.clone())).await?;
                check(!a.state.is_empty() && a.view.is_some(), "Deal")?;
                Ok(a.encoded_len())
            }
            Request::Play(r) => {
                let a = self.wait("Play", client.play(r.clone())).await?;
                check(!a.state.is_empty() && a.view.is_some(), "Play")?;
                Ok(a.encoded_len())
            }
            Request::Draw(r) => {
                let a = self.wait("Draw", client.draw(r.clone())).await?;
                check(!a.state.is_empty() && a.view.is_some(), "Draw")?;
                Ok(a.encoded_len())
            }
            Request::Score(r) => {
                let a = self.wait("Score", client.score(r.clone())).await?;
                check(a.sheet.is_some() && a.view.is_some(), "Score")?;
                Ok(a.encoded_len())
            }
            Request::Suggest(r) => {
                let a = self.wait("Suggest", client.suggest(r.clone())).await?;
                check(a.play.is_some() || a.draw, "Suggest")?;
                Ok(a.encoded_len())
            }
            #[cfg(feature = "bench-echo")]
            Request::Echo(r) => {
                let mut echo =
                    eb::echo_service_client::EchoServiceClient::new(self.channel.clone());
                let a = self.wait("Echo", echo.echo(r.clone())).await?;
                check(a.payload.len() == r.response_bytes as usize, "Echo")?;
                Ok(a.encoded_len())
            }
        }
    }
}

fn check(ok: bool, what: &str) -> Result<(), String> {
    match ok {
        true => Ok(()),
        false => Err(format!("{what}: an answer without what it must hold")),
    }
}

/// A hot-seat match being played: its last token and both seats' credentials.
struct Match {
    state: Bytes,
    credentials: [Vec<u8>; 2],
}

fn new_game_request(seed: Option<u64>, clocked: bool) -> pb::NewGameRequest {
    pb::NewGameRequest {
        rules: Some(pb::Rules {
            players: 2,
            clock: clocked.then(pb::TurnClock::default),
            ..Default::default()
        }),
        seed,
        viewer: Some(0),
        seats: vec![
            pb::SeatSetup {
                bot: 0,
                claim: true,
                display_name: String::new(),
                pass: String::new(),
            };
            2
        ],
    }
}

/// The seed of the next match, if seeded.
fn next_seed(conn: &Conn) -> Option<u64> {
    let seed = conn.seed.get();
    conn.seed.set(seed.map(|s| s.wrapping_add(1)));
    seed
}

async fn new_match(conn: &Conn) -> Result<Match, String> {
    let request = new_game_request(next_seed(conn), conn.clocked);
    let answer = conn
        .wait("NewGame", conn.client.clone().new_game(request))
        .await?;
    let mut credentials = [Vec::new(), Vec::new()];
    for c in answer.credentials {
        if let Some(slot) = credentials.get_mut(c.seat as usize) {
            *slot = c.credential;
        }
    }
    if credentials.iter().any(Vec::is_empty) {
        return Err("NewGame: a seat's credential missing".into());
    }
    Ok(Match {
        state: answer.state.into(),
        credentials,
    })
}

impl Match {
    fn credential(&self, seat: u32) -> Vec<u8> {
        self.credentials
            .get(seat as usize)
            .cloned()
            .unwrap_or_default()
    }

    fn deal_request(&self) -> pb::DealRequest {
        pb::DealRequest {
            state: self.state.clone(),
            viewer: Some(0),
            credential: self.credential(0),
        }
    }

    async fn deal(&mut self, conn: &Conn) -> Result<(), String> {
        let answer = conn
            .wait("Deal", conn.client.clone().deal(self.deal_request()))
            .await?;
        self.state = answer.state.into();
        Ok(())
    }

    /// The Score request showing the table to `seat`.
    fn score_request(&self, seat: u32) -> pb::ScoreRequest {
        pb::ScoreRequest {
            state: self.state.clone(),
            viewer: Some(seat),
            credential: self.credential(seat),
            include_hand_events: false,
        }
    }

    /// The seat on turn and the table as it sees it, or `None` once the hand is over.
    async fn on_turn(&self, conn: &Conn) -> Result<Option<(u32, pb::GameView)>, String> {
        let public = conn
            .wait("Score", conn.client.clone().score(self.score_request(0)))
            .await?
            .view;
        let Some(public) = public.filter(|v| v.phase == pb::Phase::Playing as i32) else {
            return Ok(None);
        };
        let Some(turn) = public.turn else {
            return Ok(None);
        };
        if turn == 0 {
            return Ok(Some((0, public)));
        }
        let view = conn
            .wait("Score", conn.client.clone().score(self.score_request(turn)))
            .await?
            .view;
        Ok(view.map(|v| (turn, v)))
    }

    fn play_request(&self, seat: u32, view: &pb::GameView) -> Option<pb::PlayRequest> {
        let legal = view.legal_moves.first()?;
        Some(pb::PlayRequest {
            state: self.state.clone(),
            seat,
            tile: legal.tile,
            end: legal.end,
            viewer: Some(seat),
            credential: self.credential(seat),
        })
    }

    fn draw_request(&self, seat: u32) -> pb::DrawRequest {
        pb::DrawRequest {
            state: self.state.clone(),
            seat,
            viewer: Some(seat),
            credential: self.credential(seat),
        }
    }

    /// The seat on turn draws or plays its first legal move.
    async fn step(&mut self, conn: &Conn, seat: u32, view: &pb::GameView) -> Result<(), String> {
        let mut client = conn.client.clone();
        self.state = if view.must_draw {
            conn.wait("Draw", client.draw(self.draw_request(seat)))
                .await?
                .state
                .into()
        } else {
            let request = self
                .play_request(seat, view)
                .ok_or("a seat on turn that need not draw has no legal move")?;
            conn.wait("Play", client.play(request)).await?.state.into()
        };
        Ok(())
    }
}

/// A dealt match played on until the seat on turn sees a table that `wanted` accepts:
/// the match, that seat and its view; `None` if the hand ended first.
async fn position(
    conn: &Conn,
    wanted: impl Fn(&pb::GameView) -> bool,
) -> Result<Option<(Match, u32, pb::GameView)>, String> {
    let mut game = new_match(conn).await?;
    game.deal(conn).await?;
    for _ in 0..MAX_STEPS {
        let Some((seat, view)) = game.on_turn(conn).await? else {
            return Ok(None);
        };
        if wanted(&view) {
            return Ok(Some((game, seat, view)));
        }
        game.step(conn, seat, &view).await?;
    }
    Ok(None)
}

/// One request of `rpc`, on a match of its own.
async fn prepare(conn: &Conn, rpc: Rpc) -> Result<Request, String> {
    match rpc {
        #[cfg(feature = "bench-echo")]
        Rpc::Echo => return echo_like_play(conn).await,
        Rpc::NewGame => {
            return Ok(Request::NewGame(new_game_request(
                next_seed(conn),
                conn.clocked,
            )));
        }
        Rpc::Deal => return Ok(Request::Deal(new_match(conn).await?.deal_request())),
        _ => {}
    }
    for _ in 0..MAX_MATCHES {
        let found = match rpc {
            Rpc::Draw => position(conn, |v| v.must_draw).await?,
            _ => position(conn, |v| !v.must_draw && v.layout.len() == 4).await?,
        };
        let Some((game, seat, view)) = found else {
            continue;
        };
        return match rpc {
            Rpc::Draw => Ok(Request::Draw(game.draw_request(seat))),
            Rpc::Score => Ok(Request::Score(game.score_request(seat))),
            Rpc::Suggest => Ok(Request::Suggest(pb::SuggestRequest {
                state: game.state.clone(),
                seat,
                level: pb::BotLevel::Medium as i32,
                worlds: 0,
                seed: None,
                credential: game.credential(seat),
            })),
            _ => game
                .play_request(seat, &view)
                .map(Request::Play)
                .ok_or_else(|| "no legal move at the Play position".into()),
        };
    }
    Err(format!(
        "{rpc:?}: no such position in {MAX_MATCHES} matches"
    ))
}

/// An echo whose request and answer are as long as a `Play`'s at the `Play` position
/// (payload padding).
#[cfg(feature = "bench-echo")]
async fn echo_like_play(conn: &Conn) -> Result<Request, String> {
    let Request::Play(play) = Box::pin(prepare(conn, Rpc::Play)).await? else {
        return Err("Echo: no Play prepared".into());
    };
    let answer = conn
        .wait("Play", conn.client.clone().play(play.clone()))
        .await?;
    Ok(Request::Echo(common::echo_request(
        play.encoded_len(),
        answer.encoded_len(),
    )))
}

async fn connect(addr: &str, patience: Duration) -> Result<Channel, String> {
    let url = match addr.contains("://") {
        true => addr.to_owned(),
        false => format!("http://{addr}"),
    };
    let endpoint = Endpoint::from_shared(url.clone())
        .map_err(|e| format!("{url}: {e}"))?
        .connect_timeout(Duration::from_secs(5));
    let start = Instant::now();
    loop {
        match endpoint.connect().await {
            Ok(channel) => return Ok(channel),
            Err(e) if start.elapsed() >= patience => {
                return Err(format!("cannot connect to {url}: {e}"));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

fn run_command(what: &str, command: Option<&String>) -> Result<(), String> {
    let Some(command) = command else {
        return Ok(());
    };
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .status()
        .map_err(|e| format!("{what} command: {e}"))?;
    match status.success() {
        true => Ok(()),
        false => Err(format!("{what} command `{command}` failed: {status}")),
    }
}

async fn run(args: Args) -> Result<(), String> {
    let channel = connect(&args.addr, Duration::from_secs(args.connect_secs)).await?;
    let conn = Conn {
        client: AllFivesServiceClient::new(channel.clone()),
        #[cfg(feature = "bench-echo")]
        channel,
        timeout: Duration::from_millis(args.timeout_ms),
        seed: std::cell::Cell::new(args.seed),
        clocked: args.clocked,
    };
    let started = Instant::now();
    let prepared = match args.fresh {
        true => args.warmup + args.calls,
        false => 1,
    };
    let mut requests = Vec::new();
    for _ in 0..prepared {
        requests.push(prepare(&conn, args.rpc).await?);
    }
    let request_bytes = requests.first().map_or(0, Request::encoded_len);
    let prepare_time = started.elapsed();
    let mut requests = requests.iter().cycle();
    for _ in 0..args.warmup {
        let request = requests.next().ok_or("no request")?;
        conn.send(request).await?;
    }
    run_command("--before", args.before.as_ref())?;
    let started = Instant::now();
    let mut answer_bytes = 0;
    for _ in 0..args.calls {
        let request = requests.next().ok_or("no request")?;
        answer_bytes += conn.send(request).await?;
    }
    let elapsed = started.elapsed();
    run_command("--after", args.after.as_ref())?;
    println!(
        "{:?}: {} calls OK ({}), request {} B, answer {} B on average, {:?} a call \
         (prepared in {:.1?}, {} warm-up calls)",
        args.rpc,
        args.calls,
        match args.fresh {
            true => "each its own match's last token",
            false => "the same request",
        },
        request_bytes,
        answer_bytes / args.calls as usize,
        elapsed / args.calls as u32,
        prepare_time,
        args.warmup,
    );
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rpc_load: {e}");
            ExitCode::FAILURE
        }
    }
}
