//! Plays whole matches against a running server (or a gateway in front of several), as
//! a hot-seat client would: NewGame claiming every seat (so it holds every seat's
//! credential), Deal, then for the seat on turn a Score with that seat as viewer (and
//! its credential) to learn its legal moves, and the highest-scoring move (or a Draw),
//! until the match is over. Calls that fail because their connection went away are retried (every
//! call of the API is safe to repeat); any other failure stops it with a non-zero exit.
//! Prints the calls answered, the calls retried and the matches finished.
//!
//! `cargo run --example play -- --addr http://127.0.0.1:50051 --games 20 --concurrency 4`
//!
//! With `--seconds N` it starts no new match after N seconds (`.ci/soak` plays as many
//! matches as fit in its window that way).
//!
//! CI's gateway test (`.ci/gateway-test`) plays matches through nginx with it.
//!
//! With `--bot hard` (or easy, medium) every move is the server's own bot's (Suggest,
//! then Play or Draw as advised), and the Suggest calls' latency is reported
//! (docs/BOTS.md quotes it).
//!
//! Longer than most files (about 480 lines): an example is a crate of one file, and the
//! player, its retries and its report serve only this tool.

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use clap::Parser;
use tonic::transport::{Channel, Endpoint};

/// Calls after which a match is given up as stuck (a 4-player match to 200 under "own
/// pips off" takes a few thousand calls here; this is far past that).
const MAX_CALLS_PER_GAME: u64 = 200_000;

/// Times a call is sent again after a failure that allows it (see [`retryable`]).
const RETRIES: u32 = 3;

/// Play whole All Fives matches through the gRPC API.
#[derive(Parser, Debug)]
#[command(name = "play")]
struct Args {
    /// Server (or gateway) address: `http://host:port`, or `host:port`.
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    addr: String,
    /// Matches to play.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    games: u64,
    /// Players at each table: 2, 3 or 4.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=4))]
    players: u32,
    /// Points that win a match (0: the server's default for the table).
    #[arg(long, default_value_t = 0)]
    target: u32,
    /// Matches in play at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    concurrency: u64,
    /// Seed of the first match (match i uses seed + i); without it the server picks.
    /// Only a server started with --allow-client-seeds takes one.
    #[arg(long)]
    seed: Option<u64>,
    /// Deadline of each call, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
    /// Let the server's bot choose every move (Suggest at this level, then Play or
    /// Draw as advised) instead of the greedy pick from a Score view, and report how
    /// long the Suggest calls took (p50, p99, max).
    #[arg(long, value_enum)]
    bot: Option<BotLevel>,
    /// Start no new match after this many seconds (matches in play finish), for
    /// bounded soak runs (`.ci/soak`); --games still caps the count.
    #[arg(long)]
    seconds: Option<u64>,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum BotLevel {
    Easy,
    Medium,
    Hard,
}

impl BotLevel {
    fn level(self) -> pb::BotLevel {
        match self {
            BotLevel::Easy => pb::BotLevel::Easy,
            BotLevel::Medium => pb::BotLevel::Medium,
            BotLevel::Hard => pb::BotLevel::Hard,
        }
    }
}

/// Counts shared by the workers.
#[derive(Default)]
struct Totals {
    /// How long each Suggest call took, in microseconds (with --bot).
    suggest_micros: std::sync::Mutex<Vec<u32>>,
    /// Calls answered.
    calls: AtomicU64,
    /// Calls sent again after a failure that allows it.
    retries: AtomicU64,
    games: AtomicU64,
    hands: AtomicU64,
}

type Client = AllFivesServiceClient<Channel>;

/// Every seat's credential, by seat (empty for a seat without one).
struct Creds(Vec<Vec<u8>>);

impl Creds {
    fn from_new_game(answer: &pb::NewGameResponse) -> Creds {
        let mut creds = vec![Vec::new(); 4];
        for c in &answer.credentials {
            if let Some(slot) = creds.get_mut(c.seat as usize) {
                *slot = c.credential.clone();
            }
        }
        Creds(creds)
    }

    /// Seat `seat`'s credential.
    fn of(&self, seat: u32) -> Vec<u8> {
        self.0.get(seat as usize).cloned().unwrap_or_default()
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let started = Instant::now();
    let url = if args.addr.contains("://") {
        args.addr.clone()
    } else {
        format!("http://{}", args.addr)
    };
    let channel = match Endpoint::from_shared(url) {
        Ok(endpoint) => match endpoint
            .connect_timeout(Duration::from_secs(5))
            .tcp_nodelay(true)
            .connect()
            .await
        {
            Ok(channel) => channel,
            Err(error) => {
                eprintln!("play: cannot connect to {}: {error:?}", args.addr);
                return ExitCode::FAILURE;
            }
        },
        Err(error) => {
            eprintln!("play: bad --addr {}: {error}", args.addr);
            return ExitCode::FAILURE;
        }
    };

    let args = Arc::new(args);
    let totals = Arc::new(Totals::default());
    let next = Arc::new(AtomicU64::new(0));
    let mut workers = tokio::task::JoinSet::<Result<(), String>>::new();
    for _ in 0..args.concurrency.min(args.games) {
        let client = AllFivesServiceClient::new(channel.clone());
        let (args, totals, next) = (args.clone(), totals.clone(), next.clone());
        workers.spawn(async move {
            loop {
                if args
                    .seconds
                    .is_some_and(|s| started.elapsed() >= Duration::from_secs(s))
                {
                    return Ok(());
                }
                let game = next.fetch_add(1, Ordering::Relaxed);
                if game >= args.games {
                    return Ok(());
                }
                play_one(client.clone(), &args, game, &totals)
                    .await
                    .map_err(|e| format!("match {game}: {e}"))?;
            }
        });
    }

    let mut failed = false;
    while let Some(joined) = workers.join_next().await {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                eprintln!("play: {error}");
                failed = true;
                workers.abort_all();
            }
            Err(error) if error.is_cancelled() => {}
            Err(error) => {
                eprintln!("play: worker panicked: {error}");
                failed = true;
            }
        }
    }

    let secs = started.elapsed().as_secs_f64();
    let calls = totals.calls.load(Ordering::Relaxed);
    let started_games = next.load(Ordering::Relaxed).min(args.games);
    println!(
        "play: {} of {} matches finished ({} hands), {} calls in {:.1} s ({:.0} calls/s), {} retried",
        totals.games.load(Ordering::Relaxed),
        started_games,
        totals.hands.load(Ordering::Relaxed),
        calls,
        secs,
        calls as f64 / secs.max(1e-9),
        totals.retries.load(Ordering::Relaxed),
    );
    if let Some(level) = args.bot {
        let mut times = totals
            .suggest_micros
            .lock()
            .map(|t| t.clone())
            .unwrap_or_default();
        times.sort_unstable();
        let at = |q: f64| {
            let i = ((times.len() as f64 * q) as usize).min(times.len().saturating_sub(1));
            f64::from(times.get(i).copied().unwrap_or(0)) / 1e3
        };
        println!(
            "play: {} Suggest calls ({level:?}): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            times.len(),
            at(0.5),
            at(0.99),
            at(1.0),
        );
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Whether a failed call may be sent again: the connection it was on went away (a
/// gateway or server recycling connections, a replica shutting down) or the server
/// shed it. Every call of this API is safe to repeat, since the whole game is in the
/// request and the server stores nothing; refusals (INVALID_ARGUMENT,
/// FAILED_PRECONDITION) are answers, not accidents, and are never retried.
fn retryable(status: &tonic::Status) -> bool {
    match status.code() {
        tonic::Code::Unavailable | tonic::Code::Cancelled => true,
        // How tonic reports a stream reset or a connection closed under it.
        tonic::Code::Internal | tonic::Code::Unknown => {
            let message = status.message();
            message.starts_with("h2 protocol error") || message.contains("transport error")
        }
        _ => false,
    }
}

/// Sends the request `make` builds, again (up to `RETRIES` more times, after a short
/// pause) if it fails in a way [`retryable`] allows; returns the answer or a readable
/// error naming the call.
async fn call<T, F, Fut>(what: &str, totals: &Totals, mut make: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
{
    let mut retries = 0;
    loop {
        match make().await {
            Ok(response) => {
                totals.calls.fetch_add(1, Ordering::Relaxed);
                return Ok(response.into_inner());
            }
            Err(status) if retries < RETRIES && retryable(&status) => {
                retries += 1;
                totals.retries.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(10 << retries)).await;
            }
            Err(status) => {
                return Err(format!(
                    "{what} failed: {:?} {}",
                    status.code(),
                    status.message()
                ));
            }
        }
    }
}

/// A request carrying `message`, with the per-call deadline set.
fn with_deadline<T>(message: T, deadline: Duration) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.set_timeout(deadline);
    request
}

/// The server bot's advice to `seat`, timed.
async fn suggested(
    client: &Client,
    args: &Args,
    state: &[u8],
    seat: u32,
    creds: &Creds,
    level: BotLevel,
    totals: &Totals,
) -> Result<pb::SuggestResponse, String> {
    let message = pb::SuggestRequest {
        state: state.to_vec().into(),
        seat,
        level: level.level() as i32,
        worlds: 0,
        seed: None,
        credential: creds.of(seat),
    };
    let deadline = Duration::from_millis(args.timeout_ms);
    let start = Instant::now();
    let advice = call("Suggest", totals, || {
        let mut client = client.clone();
        let req = with_deadline(message.clone(), deadline);
        async move { client.suggest(req).await }
    })
    .await?;
    let micros = start.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
    if let Ok(mut times) = totals.suggest_micros.lock() {
        times.push(micros);
    }
    Ok(advice)
}

/// Plays or draws as `advice` says (the server's bot's, or this client's own pick).
async fn follow(
    client: &Client,
    args: &Args,
    state: &[u8],
    seat: u32,
    creds: &Creds,
    advice: pb::SuggestResponse,
    totals: &Totals,
) -> Result<(Vec<u8>, Option<pb::GameView>), String> {
    let deadline = Duration::from_millis(args.timeout_ms);
    if advice.draw {
        let message = pb::DrawRequest {
            state: state.to_vec().into(),
            seat,
            viewer: None,
            credential: creds.of(seat),
        };
        let drawn = call("Draw", totals, || {
            let mut client = client.clone();
            let req = with_deadline(message.clone(), deadline);
            async move { client.draw(req).await }
        })
        .await?;
        return Ok((drawn.state, drawn.view));
    }
    let play = advice
        .play
        .ok_or("Suggest advised neither a play nor a draw")?;
    let message = pb::PlayRequest {
        state: state.to_vec().into(),
        seat,
        tile: play.tile,
        end: play.end,
        viewer: None,
        credential: creds.of(seat),
    };
    let played = call("Play", totals, || {
        let mut client = client.clone();
        let req = with_deadline(message.clone(), deadline);
        async move { client.play(req).await }
    })
    .await?;
    Ok((played.state, played.view))
}

/// Plays match number `game` to the end.
async fn play_one(client: Client, args: &Args, game: u64, totals: &Totals) -> Result<(), String> {
    let deadline = Duration::from_millis(args.timeout_ms);
    // Hot seat: every seat a human's, claimed in this call, so this client holds every
    // seat's credential.
    let new_game = pb::NewGameRequest {
        rules: Some(pb::Rules {
            players: args.players,
            target: args.target,
            ..Default::default()
        }),
        seed: args.seed.map(|s| s.wrapping_add(game)),
        viewer: None,
        seats: vec![
            pb::SeatSetup {
                bot: pb::BotLevel::Unspecified as i32,
                claim: true,
                display_name: String::new(),
                pass: String::new(),
            };
            args.players as usize
        ],
    };
    let started = call("NewGame", totals, || {
        let mut client = client.clone();
        let req = with_deadline(new_game.clone(), deadline);
        async move { client.new_game(req).await }
    })
    .await?;
    let creds = Creds::from_new_game(&started);
    if (0..args.players).any(|seat| creds.of(seat).is_empty()) {
        return Err("NewGame answered no credential for a seat it was asked to claim".into());
    }
    let mut state = started.state;
    let mut view = started.view.ok_or("NewGame answered no view")?;

    let mut calls = 1u64;
    loop {
        if calls > MAX_CALLS_PER_GAME {
            return Err(format!("not over after {calls} calls"));
        }
        let phase = pb::Phase::try_from(view.phase).map_err(|_| "unknown phase")?;
        let (next_state, next_view) = match phase {
            pb::Phase::Over => break,
            pb::Phase::Dealing => {
                calls += 1;
                totals.hands.fetch_add(1, Ordering::Relaxed);
                let message = pb::DealRequest {
                    state: state.clone().into(),
                    ..Default::default()
                };
                let dealt = call("Deal", totals, || {
                    let mut client = client.clone();
                    let req = with_deadline(message.clone(), deadline);
                    async move { client.deal(req).await }
                })
                .await?;
                (dealt.state, dealt.view)
            }
            pb::Phase::Playing => {
                let seat = view.turn.ok_or("a hand in play with no seat on turn")?;
                calls += 2;
                if let Some(level) = args.bot {
                    calls -= 1;
                    let advice =
                        suggested(&client, args, &state, seat, &creds, level, totals).await?;
                    let next = follow(&client, args, &state, seat, &creds, advice, totals).await?;
                    state = next.0;
                    view = next.1.ok_or("an answer with no view")?;
                    continue;
                }
                // The table as the seat on turn sees it: its legal moves, or must_draw.
                let message = pb::ScoreRequest {
                    state: state.clone().into(),
                    viewer: Some(seat),
                    credential: creds.of(seat),
                    ..Default::default()
                };
                let seen = call("Score", totals, || {
                    let mut client = client.clone();
                    let req = with_deadline(message.clone(), deadline);
                    async move { client.score(req).await }
                })
                .await?
                .view
                .ok_or("Score answered no view")?;
                // The move that scores most (the first listed among equals), or a draw.
                let best = seen
                    .legal_moves
                    .iter()
                    .reduce(|best, m| if m.points > best.points { m } else { best });
                if best.is_none() && !seen.must_draw {
                    return Err(format!(
                        "seat {seat} is on turn with no legal move and need not draw"
                    ));
                }
                let choice = pb::SuggestResponse {
                    play: best.cloned(),
                    draw: seen.must_draw,
                    ..Default::default()
                };
                follow(&client, args, &state, seat, &creds, choice, totals).await?
            }
            pb::Phase::Unspecified => return Err("phase unspecified".to_owned()),
        };
        state = next_state;
        view = next_view.ok_or("an answer with no view")?;
    }
    if view.winner_side.is_none() {
        return Err("the match is over but has no winner".to_owned());
    }
    totals.games.fetch_add(1, Ordering::Relaxed);
    Ok(())
}
