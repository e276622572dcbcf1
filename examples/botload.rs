//! Bot matches at a human pace (issue 24): what a studio needs to plan capacity. Each of
//! `--matches` tables is a match in play, its human players thinking `--think-ms`
//! (uniform ±`--jitter`) before every NewGame, Deal, Play and Draw, and a new match
//! after each one ends. `--kind`:
//!
//! - `humans`: two players, both seats claimed at NewGame, each a player of its own
//!   (its own credential and think time). The one that comes on turn after the other's
//!   call first asks Score for its own view (as a separate device must), then thinks.
//! - `medium`, `hard`: four players, seat 0 claimed, seats 1 to 3 the server's MEDIUM
//!   or HARD bots, which move inside seat 0's calls.
//!
//! A player takes a random legal move from its view (or Draws when it must) and deals
//! the next hand when one ends. Matches start spread over one think time, so calls do
//! not arrive in lockstep. After `--warmup-secs` (not counted) it counts `--secs`:
//! calls answered by RPC and their latency, the latency of the human moves (Deal, Play
//! and Draw, from the first send to the answer, retries included), refusals by gRPC
//! status and `ErrorInfo` reason (a refused call is sent again after a backoff: a
//! refused Deal, Play or Draw did nothing), calls retried because their connection
//! went away (a gateway recycling its client connections), other errors (over the
//! whole run, warm-up included; the match is given up and a new one started), matches
//! finished, and the server's CPU time
//! (`/proc/<pid>/stat`) per second, per call and per match: over matches finished in
//! the window, and over the moves played ÷ the moves a match takes (measured first on
//! `--calibrate` matches played without think time, or given with
//! `--moves-per-match`), which means something when few matches finish (a match is
//! minutes long at a human pace).
//!
//! The server is `--target` (direct, or a gateway; `--server-pid` for its CPU), or one
//! this starts on a free loopback port (`--server PATH`, pinned with `--cpus` through
//! `taskset`, which also sizes its runtime and HARD search slots), optionally behind
//! Debian's nginx (`--gateway`, deploy/gateway/nginx.conf filled in as
//! `.ci/gateway-test` does). `--connections shared|each|K`: one HTTP/2 connection for
//! every match, one per match, or K. A text report, and with `--json` one JSON line.
//! Exits non-zero on any error, or with `--strict` on any refusal too.
//!
//! ```sh
//! cargo build --release --bin allfives --example botload
//! target/release/examples/botload --server target/release/allfives --cpus 0 \
//!   --kind hard --matches 64 --secs 30 --connections each [--gateway] [--json]
//! target/release/examples/botload --target http://127.0.0.1:50051 --server-pid PID --kind humans
//! bash benches/capacity.sh     # matches per core for each kind (docs/PERFORMANCE.md)
//! ```
//!
//! One file of about 1,300 lines: an example is a crate of one file; what it shares with
//! `examples/loadgen.rs` is in `examples/common/`.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use clap::{Parser, ValueEnum};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};
use tonic::codegen::Bytes;
use tonic::transport::Channel;
use tonic_types::StatusExt;

mod common;
use common::{
    ServerProcess, block_on, connect, free_loopback_port, load_average, process_cpu_secs,
    quantile_us, start,
};

type Client = AllFivesServiceClient<Channel>;

/// Sends of one call at most when the server refuses it (then it is an error).
const MAX_REFUSED_SENDS: u32 = 8;
/// Sends of one call at most when its connection goes away under it.
const MAX_TRANSPORT_SENDS: u32 = 4;
/// Matches calibration plays at once: two HARD tables have at most two searches in
/// flight, which the server's search queue takes even on one core, over any
/// connections.
const CALIBRATION_PLAYERS: u32 = 2;

/// Bot matches at a human pace, for capacity planning; see the module docs.
#[derive(Parser, Debug, Clone)]
#[command(name = "botload")]
struct Args {
    /// Who sits at each table.
    #[arg(long, value_enum, default_value_t = Kind::Humans)]
    kind: Kind,
    /// Matches in play at once.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    matches: u32,
    /// A human's think time before each move, in milliseconds (the mean).
    #[arg(long, default_value_t = 3000)]
    think_ms: u64,
    /// Think times are uniform within ± this share of --think-ms.
    #[arg(long, default_value_t = 0.5)]
    jitter: f64,
    /// Seconds counted, after the warm-up; 0 with --calibrate only calibrates.
    #[arg(long, default_value_t = 20.0)]
    secs: f64,
    /// Seconds of warm-up, not counted (default: a second more than the start spread
    /// and the longest think, so every match has started and made a move).
    #[arg(long)]
    warmup_secs: Option<f64>,
    /// The server or gateway to call (ignored with --server).
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    target: String,
    /// Connections: `shared` (one for all matches), `each` (one per match), or a count.
    #[arg(long, default_value = "shared", value_parser = parse_connections)]
    connections: Connections,
    /// Start this server binary on a free loopback port (as a release build).
    #[arg(long)]
    server: Option<PathBuf>,
    /// An extra flag for the server started here (repeat for more).
    #[arg(long, allow_hyphen_values = true, requires = "server")]
    server_arg: Vec<String>,
    /// Pin the server started here to these CPUs (`taskset -c LIST`, e.g. `0` or
    /// `0-1`); it runs on the current-thread runtime on one (as the Deployment under
    /// its 1-CPU limit), else a worker per CPU, unless --server-arg says otherwise.
    #[arg(long, requires = "server")]
    cpus: Option<String>,
    /// Put Debian's nginx in front (deploy/gateway/nginx.conf, one worker).
    #[arg(long)]
    gateway: bool,
    /// The nginx binary for --gateway.
    #[arg(long, default_value = "/usr/sbin/nginx")]
    nginx: PathBuf,
    /// The gateway's configuration template.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/gateway/nginx.conf"))]
    gateway_conf: PathBuf,
    /// Process id of the server at --target, for its CPU time.
    #[arg(long, conflicts_with = "server")]
    server_pid: Option<u32>,
    /// Matches played first without think time, two at a time (over the same
    /// connections, not counted), to measure the moves a match takes and its server
    /// CPU at full speed.
    #[arg(long, default_value_t = 3)]
    calibrate: u32,
    /// The human moves a match takes, if known (then --calibrate may be 0).
    #[arg(long)]
    moves_per_match: Option<f64>,
    /// Deadline of each call, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
    /// Seed of the think times and moves (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
    /// Print the figures as one JSON line too.
    #[arg(long)]
    json: bool,
    /// Exit non-zero on any refusal as well as on any error.
    #[arg(long)]
    strict: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Kind {
    /// Two players, both human.
    Humans,
    /// One human against three MEDIUM bots.
    Medium,
    /// One human against three HARD bots.
    Hard,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Humans => "humans",
            Kind::Medium => "medium",
            Kind::Hard => "hard",
        }
    }

    /// Who sits at each seat.
    fn seats(self) -> Vec<pb::SeatSetup> {
        let human = pb::SeatSetup {
            bot: pb::BotLevel::Unspecified as i32,
            claim: true,
            display_name: String::new(),
            pass: String::new(),
        };
        let bot = |level: pb::BotLevel| pb::SeatSetup {
            bot: level as i32,
            claim: false,
            display_name: String::new(),
            pass: String::new(),
        };
        match self {
            Kind::Humans => vec![human; 2],
            Kind::Medium => vec![
                human,
                bot(pb::BotLevel::Medium),
                bot(pb::BotLevel::Medium),
                bot(pb::BotLevel::Medium),
            ],
            Kind::Hard => vec![
                human,
                bot(pb::BotLevel::Hard),
                bot(pb::BotLevel::Hard),
                bot(pb::BotLevel::Hard),
            ],
        }
    }

    fn is_human(self, seat: u32) -> bool {
        seat == 0 || (self == Kind::Humans && seat == 1)
    }
}

#[derive(Clone, Copy, Debug)]
enum Connections {
    Shared,
    Each,
    Count(u32),
}

fn parse_connections(s: &str) -> Result<Connections, String> {
    match s {
        "shared" => Ok(Connections::Shared),
        "each" => Ok(Connections::Each),
        n => match n.parse::<u32>() {
            Ok(k) if k >= 1 => Ok(Connections::Count(k)),
            _ => Err("shared, each, or a count of at least 1".to_owned()),
        },
    }
}

impl Connections {
    fn count(self, matches: u32) -> u32 {
        match self {
            Connections::Shared => 1,
            Connections::Each => matches,
            Connections::Count(k) => k.min(matches),
        }
    }
}

/// What a set of matches saw. Calls and moves count when answered inside the window.
#[derive(Default)]
struct Tally {
    /// Latency of each call answered, in nanoseconds, by RPC.
    answered: BTreeMap<&'static str, Vec<u64>>,
    /// Latency of each human move (Deal, Play, Draw), retries included.
    moves: Vec<u64>,
    /// Refusals, by "code REASON".
    refused: BTreeMap<String, u64>,
    /// Sends repeated because the connection went away under the call.
    retried: u64,
    /// Other failures, by "Method: code REASON".
    errors: BTreeMap<String, u64>,
    first_error: Option<String>,
    matches_finished: u64,
    /// Human moves of each match finished (in the window or not).
    moves_per_finished: Vec<u64>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        for (rpc, mut v) in other.answered {
            self.answered.entry(rpc).or_default().append(&mut v);
        }
        self.moves.extend(other.moves);
        for (k, n) in other.refused {
            *self.refused.entry(k).or_default() += n;
        }
        self.retried += other.retried;
        for (k, n) in other.errors {
            *self.errors.entry(k).or_default() += n;
        }
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.matches_finished += other.matches_finished;
        self.moves_per_finished.extend(other.moves_per_finished);
    }

    fn calls(&self) -> u64 {
        self.answered.values().map(|v| v.len() as u64).sum()
    }

    fn refusals(&self) -> u64 {
        self.refused.values().sum()
    }

    fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    fn error(&mut self, key: String, detail: String) {
        *self.errors.entry(key).or_default() += 1;
        self.first_error.get_or_insert(detail);
    }
}

/// When a match player thinks, and which answers it counts.
#[derive(Clone, Copy)]
struct Plan {
    kind: Kind,
    /// Think times (none while calibrating).
    think: Option<(Duration, f64)>,
    /// Answers count from here…
    count_from: Instant,
    /// …to here, when the players stop.
    end: Instant,
    /// Stop after this many matches finished (calibration).
    max_matches: Option<u64>,
    deadline: Duration,
}

impl Plan {
    fn counts(&self, at: Instant) -> bool {
        at >= self.count_from && at < self.end
    }
}

/// A match in play.
struct Table {
    state: Bytes,
    /// Credentials, by seat (empty for a bot's).
    creds: Vec<Vec<u8>>,
    view: pb::GameView,
    moves: u64,
}

impl Table {
    fn cred(&self, seat: u32) -> Vec<u8> {
        self.creds.get(seat as usize).cloned().unwrap_or_default()
    }
}

/// One match player: a table at a time, until the plan's end.
struct Player {
    client: Client,
    plan: Plan,
    rng: ChaCha8Rng,
    tally: Tally,
    /// Its next think would end past the plan's end: it makes no more calls.
    done: bool,
}

/// How a failed call is taken.
enum Failure {
    /// The server declined it for load: sent again after a backoff.
    Refused(String),
    /// Its connection went away: sent again at once.
    Transport,
    /// Anything else.
    Other(String),
}

fn classify(status: &tonic::Status) -> Failure {
    let reason = status
        .get_error_details()
        .error_info()
        .map(|i| i.reason.clone())
        .unwrap_or_default();
    let label = format!("{:?} {reason}", status.code())
        .trim_end()
        .to_owned();
    match status.code() {
        tonic::Code::ResourceExhausted => Failure::Refused(label),
        tonic::Code::Unavailable | tonic::Code::Cancelled => Failure::Transport,
        // How tonic reports a stream reset or a connection closed under it.
        tonic::Code::Internal | tonic::Code::Unknown
            if status.message().starts_with("h2 protocol error")
                || status.message().contains("transport error") =>
        {
            Failure::Transport
        }
        _ => Failure::Other(label),
    }
}

/// `$player.send($rpc, …)` of `$request` through the client's `$method`, each send
/// with the call's deadline.
macro_rules! call {
    ($player:expr, $rpc:expr, $method:ident, $request:expr) => {
        $player
            .send($rpc, |mut client, deadline| {
                let request = with_deadline($request.clone(), deadline);
                async move { client.$method(request).await }
            })
            .await
    };
}

impl Player {
    fn uniform(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Thinks before a move; false (and the player done) if the plan ends first.
    async fn think(&mut self) -> bool {
        let pause = match self.plan.think {
            Some((mean, jitter)) => mean.mul_f64(1.0 + jitter * (2.0 * self.uniform() - 1.0)),
            None => Duration::ZERO,
        };
        let wake = Instant::now() + pause;
        if wake >= self.plan.end {
            self.done = true;
            return false;
        }
        tokio::time::sleep_until(wake.into()).await;
        true
    }

    /// Sends the request `make` builds (again after a refusal or a lost connection, up
    /// to the bounds) and records it; answers the reply and the time from the first
    /// send, or None after an error (recorded).
    async fn send<T, F, Fut>(&mut self, rpc: &'static str, mut make: F) -> Option<(T, u64)>
    where
        F: FnMut(Client, Duration) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let first = Instant::now();
        let (mut refused, mut lost) = (0, 0);
        loop {
            let sent = Instant::now();
            let result = make(self.client.clone(), self.plan.deadline).await;
            let at = Instant::now();
            let counts = self.plan.counts(at);
            let status = match result {
                Ok(reply) => {
                    if counts {
                        let ns = (at - sent).as_nanos() as u64;
                        self.tally.answered.entry(rpc).or_default().push(ns);
                    }
                    return Some((reply.into_inner(), (at - first).as_nanos() as u64));
                }
                Err(status) => status,
            };
            match classify(&status) {
                Failure::Refused(label) if refused + 1 < MAX_REFUSED_SENDS => {
                    refused += 1;
                    if counts {
                        *self.tally.refused.entry(label).or_default() += 1;
                    }
                    // 100 ms ±50% after the first refusal of this call, doubling to 400.
                    let backoff =
                        Duration::from_millis(50 << refused.min(3)).mul_f64(0.5 + self.uniform());
                    tokio::time::sleep(backoff).await;
                }
                Failure::Transport if lost + 1 < MAX_TRANSPORT_SENDS => {
                    lost += 1;
                    if counts {
                        self.tally.retried += 1;
                    }
                    tokio::time::sleep(Duration::from_millis(5 << lost)).await;
                }
                Failure::Refused(label) | Failure::Other(label) => {
                    self.tally
                        .error(format!("{rpc}: {label}"), format!("{rpc}: {status:?}"));
                    return None;
                }
                Failure::Transport => {
                    let label = format!(
                        "{rpc}: {:?} (connection lost, {lost} retries)",
                        status.code()
                    );
                    self.tally.error(label, format!("{rpc}: {status:?}"));
                    return None;
                }
            }
        }
    }

    /// Plays matches until the plan ends (or, calibrating, enough have finished).
    async fn run(mut self, start_after: Duration) -> Tally {
        tokio::time::sleep(start_after).await;
        let mut table: Option<Table> = None;
        // The start spread stands for the think before the first match.
        let mut first = true;
        loop {
            if self.done
                || Instant::now() >= self.plan.end
                || self
                    .plan
                    .max_matches
                    .is_some_and(|n| self.tally.moves_per_finished.len() as u64 >= n)
            {
                break;
            }
            let next = match table.take() {
                None => self.new_game(!std::mem::take(&mut first)).await,
                Some(t) => self.step(t).await,
            };
            match next {
                Ok(t) => table = t,
                Err(()) => {
                    // An error (recorded): a pause, then a new match.
                    if !self.think().await {
                        break;
                    }
                }
            }
        }
        self.tally
    }

    /// A new match, after a think if `think`.
    async fn new_game(&mut self, think: bool) -> Result<Option<Table>, ()> {
        if think && !self.think().await {
            return Ok(None);
        }
        let kind = self.plan.kind;
        let request = pb::NewGameRequest {
            rules: Some(pb::Rules {
                players: kind.seats().len() as u32,
                ..Default::default()
            }),
            seed: None,
            viewer: Some(0),
            seats: kind.seats(),
        };
        let (reply, _) = call!(self, "NewGame", new_game, request).ok_or(())?;
        let mut creds = vec![Vec::new(); 4];
        for c in reply.credentials {
            if let Some(slot) = creds.get_mut(c.seat as usize) {
                *slot = c.credential;
            }
        }
        let Some(view) = reply.view else {
            self.tally.error(
                "NewGame: no view".to_owned(),
                "NewGame answered no view".to_owned(),
            );
            return Err(());
        };
        Ok(Some(Table {
            state: Bytes::from(reply.state),
            creds,
            view,
            moves: 0,
        }))
    }

    /// The next call of a match: a move (after a think), a Score first when the seat
    /// on turn has not seen the table since the other player's call, or the end of the
    /// match. Answers the table to go on with (None: the match ended).
    async fn step(&mut self, mut t: Table) -> Result<Option<Table>, ()> {
        let kind = self.plan.kind;
        let phase = pb::Phase::try_from(t.view.phase).unwrap_or(pb::Phase::Unspecified);
        let (rpc, seat) = match phase {
            pb::Phase::Over => {
                if t.view.winner_side.is_none() {
                    self.tally.error(
                        "a match over with no winner".to_owned(),
                        "a match over with no winner".to_owned(),
                    );
                    return Err(());
                }
                if self.plan.counts(Instant::now()) {
                    self.tally.matches_finished += 1;
                }
                self.tally.moves_per_finished.push(t.moves);
                return Ok(None);
            }
            pb::Phase::Dealing => {
                // The seat that went out last deals; else the first human seat.
                let dealer = t
                    .view
                    .last_hand
                    .as_ref()
                    .and_then(|h| h.went_out)
                    .filter(|&s| kind.is_human(s))
                    .unwrap_or(0);
                ("Deal", dealer)
            }
            pb::Phase::Playing => {
                let Some(seat) = t.view.turn.filter(|&s| kind.is_human(s)) else {
                    let detail = format!("after a call, no human seat on turn: {:?}", t.view.turn);
                    self.tally.error("no human seat on turn".to_owned(), detail);
                    return Err(());
                };
                if t.view.viewer != Some(seat) {
                    let request = pb::ScoreRequest {
                        state: t.state.clone(),
                        viewer: Some(seat),
                        credential: t.cred(seat),
                        include_hand_events: false,
                    };
                    let (reply, _) = call!(self, "Score", score, request).ok_or(())?;
                    let Some(view) = reply.view else {
                        let e = "Score answered no view".to_owned();
                        self.tally.error(e.clone(), e);
                        return Err(());
                    };
                    t.view = view;
                    return Ok(Some(t));
                }
                (if t.view.must_draw { "Draw" } else { "Play" }, seat)
            }
            pb::Phase::Unspecified => {
                let e = format!("unknown phase {}", t.view.phase);
                self.tally.error("unknown phase".to_owned(), e);
                return Err(());
            }
        };
        if !self.think().await {
            return Ok(None);
        }
        let (state, credential) = (t.state.clone(), t.cred(seat));
        let answer = match rpc {
            "Deal" => {
                let request = pb::DealRequest {
                    state,
                    viewer: Some(seat),
                    credential,
                };
                call!(self, rpc, deal, request).map(|(r, latency)| ((r.state, r.view), latency))
            }
            "Draw" => {
                let request = pb::DrawRequest {
                    state,
                    seat,
                    viewer: Some(seat),
                    credential,
                };
                call!(self, rpc, draw, request).map(|(r, latency)| ((r.state, r.view), latency))
            }
            _ => {
                let n = t.view.legal_moves.len();
                let Some(choice) =
                    (n > 0).then(|| t.view.legal_moves[(self.rng.next_u64() % n as u64) as usize])
                else {
                    let e = format!("seat {seat} on turn with no legal move and no draw");
                    self.tally.error("no legal move".to_owned(), e);
                    return Err(());
                };
                let request = pb::PlayRequest {
                    state,
                    seat,
                    tile: choice.tile,
                    end: choice.end,
                    viewer: Some(seat),
                    credential,
                };
                call!(self, rpc, play, request).map(|(r, latency)| ((r.state, r.view), latency))
            }
        };
        let ((state, view), latency) = answer.ok_or(())?;
        if self.plan.counts(Instant::now()) {
            self.tally.moves.push(latency);
        }
        let Some(view) = view else {
            let e = format!("{rpc} answered no view");
            self.tally.error(e.clone(), e);
            return Err(());
        };
        t.state = Bytes::from(state);
        t.view = view;
        t.moves += 1;
        Ok(Some(t))
    }
}

fn with_deadline<T>(message: T, deadline: Duration) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.set_timeout(deadline);
    request
}

/// Runs `matches` players over `channels` to the plan's end; answers their tally.
async fn play(
    plan: Plan,
    channels: &[Channel],
    matches: u32,
    seed: u64,
    spread: Duration,
) -> Tally {
    let mut tasks = tokio::task::JoinSet::new();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for i in 0..matches as usize {
        let player = Player {
            client: Client::new(channels[i % channels.len()].clone()),
            plan,
            rng: ChaCha8Rng::seed_from_u64(rng.next_u64()),
            tally: Tally::default(),
            done: false,
        };
        let start_after = spread.mul_f64((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64);
        tasks.spawn(player.run(start_after));
    }
    let mut tally = Tally::default();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(t) => tally.merge(t),
            Err(e) => tally.error("a player panicked".to_owned(), e.to_string()),
        }
    }
    tally
}

/// nginx in front of the server, from the committed template; stopped (SIGTERM to the
/// master, which stops its workers) when dropped.
struct Gateway {
    /// nginx's master process, once started.
    child: Option<Child>,
    /// Its run directory (a temporary one, removed with it).
    dir: PathBuf,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            // SAFETY: kill(2) on the pid of a child this process spawned and has not
            // reaped.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts nginx on a free loopback port in front of `upstream` (`host:port`); answers
/// it and its URL.
async fn start_gateway(args: &Args, upstream: &str) -> Result<(Gateway, String), String> {
    let template = std::fs::read_to_string(&args.gateway_conf)
        .map_err(|e| format!("cannot read {}: {e}", args.gateway_conf.display()))?;
    let port = free_loopback_port()?;
    let dir = std::env::temp_dir().join(format!("botload-nginx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut gateway = Gateway { child: None, dir };
    let dir = &gateway.dir;
    let run_dir = dir.to_string_lossy().into_owned();
    let listen = format!("127.0.0.1:{port}");
    let text = template
        .replace("@WORKERS@", "1")
        .replace("@RUN_DIR@", &run_dir)
        .replace("@LISTEN@", &listen)
        .replace("@SERVERS@\n", &format!("        server {upstream};\n"));
    if let Some(left) = placeholder(&text) {
        return Err(format!(
            "a placeholder left in the gateway's configuration: {left}"
        ));
    }
    let conf = dir.join("nginx.conf");
    std::fs::write(&conf, text).map_err(|e| format!("{}: {e}", conf.display()))?;
    let nginx = |extra: &[&str]| {
        let mut c = Command::new(&args.nginx);
        c.arg("-p").arg(dir).arg("-c").arg(&conf).args(extra);
        c
    };
    let check = nginx(&["-t", "-q"]).output().map_err(|e| {
        format!(
            "cannot run {} (apt-get install nginx): {e}",
            args.nginx.display()
        )
    })?;
    if !check.status.success() {
        return Err(format!(
            "nginx refused the configuration: {}",
            String::from_utf8_lossy(&check.stderr)
        ));
    }
    let child = nginx(&["-g", "daemon off; master_process on;"])
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start nginx: {e}"))?;
    gateway.child = Some(child);
    for _ in 0..100 {
        if std::net::TcpStream::connect(&listen).is_ok() {
            return Ok((gateway, format!("http://{listen}")));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("nginx did not listen on {listen} within 5 s"))
}

/// The first `@NAME@` placeholder left in a filled-in template, if any.
fn placeholder(text: &str) -> Option<&str> {
    let mut rest = text;
    while let Some(i) = rest.find('@') {
        let after = &rest[i + 1..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_uppercase() || c == '_'))
            .unwrap_or(after.len());
        if name_len > 0 && after[name_len..].starts_with('@') {
            return Some(&rest[i..i + name_len + 2]);
        }
        rest = after;
    }
    None
}

/// The number of CPUs in a `taskset -c` list such as `0`, `0-3` or `0,2`.
fn cpu_count(list: &str) -> Result<usize, String> {
    let mut n = 0;
    for part in list.split(',') {
        let bad = || format!("--cpus {list}: not a CPU list");
        n += match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (
                    a.trim().parse().map_err(|_| bad())?,
                    b.trim().parse().map_err(|_| bad())?,
                );
                b.checked_sub(a).ok_or_else(bad)? + 1
            }
            None => part.trim().parse::<usize>().map(|_| 1).map_err(|_| bad())?,
        };
    }
    Ok(n)
}

/// Starts the server (pinned with --cpus) on a free loopback port, with a fresh key;
/// answers it, its URL and what it was told.
async fn start_server(
    args: &Args,
    binary: &PathBuf,
) -> Result<(ServerProcess, String, String), String> {
    let addr = format!("127.0.0.1:{}", free_loopback_port()?);
    let mut key = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut key))
        .map_err(|e| format!("/dev/urandom: {e}"))?;
    let key: String = key.iter().map(|b| format!("{b:02x}")).collect();
    let sized = args
        .server_arg
        .iter()
        .any(|a| a.starts_with("--current-thread") || a.starts_with("--worker-threads"));
    let mut runtime = Vec::new();
    let mut command = match &args.cpus {
        Some(cpus) => {
            let n = cpu_count(cpus)?;
            if !sized {
                runtime = match n {
                    1 => vec!["--current-thread".to_owned()],
                    n => vec!["--worker-threads".to_owned(), n.to_string()],
                };
            }
            let mut c = Command::new("taskset");
            c.args(["-c", cpus]).arg(binary);
            c
        }
        None => Command::new(binary),
    };
    command
        .args(&runtime)
        .args(&args.server_arg)
        .env("ALLFIVES_ADDR", &addr)
        .env("ALLFIVES_METRICS_ADDR", "off")
        .env("ALLFIVES_KEYS", format!("1:{key}"))
        .env("ALLFIVES_SHUTDOWN_DELAY_MS", "0")
        .env("ALLFIVES_DRAIN_SECONDS", "1");
    let (server, url, _) = start(command, &addr).await?;
    let told = match (&args.cpus, runtime.is_empty()) {
        (Some(cpus), _) => format!(
            "taskset -c {cpus} {}",
            [runtime, args.server_arg.clone()].concat().join(" ")
        ),
        (None, _) => args.server_arg.join(" "),
    };
    Ok((server, url, told))
}

/// Lets this process open a connection per match: its open-files limit raised to the
/// hard limit.
fn raise_open_files() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the one struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let workers = 1;
    block_on("botload", workers, run(args))
}

/// Milliseconds, from microseconds.
fn ms(us: f64) -> f64 {
    us / 1000.0
}

async fn run(args: Args) -> Result<ExitCode, String> {
    let valid = |s: f64, max: f64| s.is_finite() && (0.0..=max).contains(&s);
    if !valid(args.secs, 86_400.0)
        || !valid(args.jitter, 1.0)
        || !args.warmup_secs.is_none_or(|w| valid(w, 3600.0))
        || !args
            .moves_per_match
            .is_none_or(|m| m.is_finite() && m > 0.0)
    {
        return Err(
            "--secs 0..=86400, --jitter 0..=1, --warmup-secs 0..=3600, --moves-per-match > 0"
                .to_owned(),
        );
    }
    raise_open_files();
    let (server, url, pid, told) = match &args.server {
        Some(binary) => {
            let (server, url, told) = start_server(&args, binary).await?;
            let pid = server.child.id();
            (Some(server), url, Some(pid), told)
        }
        None => {
            let url = if args.target.contains("://") {
                args.target.clone()
            } else {
                format!("http://{}", args.target)
            };
            (None, url, args.server_pid, String::new())
        }
    };
    let (gateway, url) = if args.gateway {
        let upstream = url
            .split("://")
            .nth(1)
            .unwrap_or(&url)
            .trim_end_matches('/');
        let (gateway, gw_url) = start_gateway(&args, upstream).await?;
        (Some(gateway), gw_url)
    } else {
        (None, url)
    };
    let via = if gateway.is_some() {
        "gateway"
    } else {
        "direct"
    };

    let n_conn = args.connections.count(args.matches);
    if gateway.is_some() && n_conn > 900 {
        println!(
            "botload: warning: nginx takes 1,024 connections a worker; {n_conn} are asked for"
        );
    }
    let mut channels = Vec::new();
    for _ in 0..n_conn {
        channels.push(connect(&url).await?);
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let conn_name = match args.connections {
        Connections::Shared => "shared".to_owned(),
        Connections::Each => "each".to_owned(),
        Connections::Count(k) => k.to_string(),
    };
    println!(
        "botload: kind {}, {} matches, think {} ms ±{:.0}%, {} via {url} over {n_conn} connection(s) ({conn_name}); server {}; load average {}",
        args.kind.name(),
        args.matches,
        args.think_ms,
        args.jitter * 100.0,
        via,
        match (&server, pid) {
            (Some(_), Some(p)) => format!(
                "pid {p} started here ({})",
                if told.is_empty() { "defaults" } else { &told }
            ),
            (None, Some(p)) => format!("pid {p}"),
            _ => "pid unknown (no CPU figures)".to_owned(),
        },
        load_average(),
    );
    if cfg!(debug_assertions) {
        println!("botload: a dev build of the load generator");
    }

    let calibration = if args.calibrate > 0 {
        Some(calibrate(&args, &channels, pid, seed).await)
    } else {
        None
    };
    let mut per_match = args
        .moves_per_match
        .or(calibration.as_ref().and_then(|c| c.moves_per_match));
    let (tally, server_cpu, client_cpu) = if args.secs > 0.0 {
        measure(&args, &channels, pid, seed).await
    } else {
        (Tally::default(), None, None)
    };
    let window = args.secs;
    if per_match.is_none() && !tally.moves_per_finished.is_empty() {
        let n = tally.moves_per_finished.len() as f64;
        per_match = Some(tally.moves_per_finished.iter().sum::<u64>() as f64 / n);
    }
    drop(channels);
    drop(gateway);
    drop(server);
    let mut tally = tally;
    if let Some(cal) = calibration.as_ref().filter(|c| c.tally.error_count() > 0) {
        let first = cal.tally.first_error.clone().unwrap_or_default();
        tally.error("calibration".to_owned(), first);
    }

    let figures = Figures {
        window,
        server_cpu,
        client_cpu,
        per_match,
        calibrated_cpu: calibration.as_ref().and_then(|c| c.cpu_per_match),
        via,
        connections: &conn_name,
        n_conn,
    };
    report(&args, &tally, &figures);

    if tally.error_count() > 0 {
        println!(
            "botload: FAILED: {} error(s); first: {}",
            tally.error_count(),
            tally.first_error.as_deref().unwrap_or("")
        );
        return Ok(ExitCode::FAILURE);
    }
    if args.strict
        && (tally.refusals() > 0 || calibration.as_ref().is_some_and(|c| c.tally.refusals() > 0))
    {
        println!(
            "botload: FAILED (--strict): {} refusal(s)",
            tally.refusals()
        );
        return Ok(ExitCode::FAILURE);
    }
    if args.secs > 0.0 && tally.moves.is_empty() {
        println!("botload: FAILED: no human move answered in the window");
        return Ok(ExitCode::FAILURE);
    }
    println!("botload: ok");
    Ok(ExitCode::SUCCESS)
}

/// What the matches played without think time found.
struct Calibration {
    /// Human moves a match (None if none finished).
    moves_per_match: Option<f64>,
    /// Server CPU seconds a match.
    cpu_per_match: Option<f64>,
    tally: Tally,
}

/// Plays `--calibrate` whole matches without think time (not counted), on two players
/// at most.
async fn calibrate(args: &Args, channels: &[Channel], pid: Option<u32>, seed: u64) -> Calibration {
    let begin = Instant::now();
    let plan = Plan {
        kind: args.kind,
        think: None,
        count_from: begin,
        end: begin + Duration::from_secs(600),
        max_matches: Some(u64::from(args.calibrate.div_ceil(CALIBRATION_PLAYERS))),
        deadline: Duration::from_millis(args.timeout_ms),
    };
    let players = args.calibrate.min(CALIBRATION_PLAYERS);
    let cpu0 = pid.and_then(process_cpu_secs);
    let tally = play(plan, channels, players, seed ^ 0x5eed, Duration::ZERO).await;
    let wall = begin.elapsed().as_secs_f64();
    let cpu = cpu0.and_then(|c0| Some(process_cpu_secs(pid?)? - c0));
    let done = tally.moves_per_finished.len() as f64;
    let moves = tally.moves_per_finished.iter().sum::<u64>() as f64;
    let per = |v: f64| v / done.max(1.0);
    println!(
        "calibration: {done} matches without think time in {wall:.1} s: {:.1} human moves and {:.1} calls a match; server CPU {} a match; {} refused, {} errors",
        per(moves),
        per(tally.calls() as f64),
        cpu.map_or("-".to_owned(), |c| format!("{:.1} ms", per(c) * 1e3)),
        tally.refusals(),
        tally.error_count(),
    );
    Calibration {
        moves_per_match: (done > 0.0).then(|| per(moves)),
        cpu_per_match: cpu.filter(|_| done > 0.0).map(per),
        tally,
    }
}

/// Plays `--matches` at a human pace through the warm-up and `--secs`; answers what
/// the window counted and the server's and this process's CPU seconds over it.
async fn measure(
    args: &Args,
    channels: &[Channel],
    pid: Option<u32>,
    seed: u64,
) -> (Tally, Option<f64>, Option<f64>) {
    let think = Duration::from_millis(args.think_ms);
    let warmup = args.warmup_secs.map_or(
        think.mul_f64(2.0 + args.jitter) + Duration::from_secs(1),
        Duration::from_secs_f64,
    );
    let begin = Instant::now();
    let count_from = begin + warmup;
    let end = count_from + Duration::from_secs_f64(args.secs);
    let plan = Plan {
        kind: args.kind,
        think: Some((think, args.jitter)),
        count_from,
        end,
        max_matches: None,
        deadline: Duration::from_millis(args.timeout_ms),
    };
    let players = play(plan, channels, args.matches, seed, think);
    let me = std::process::id();
    let meter = async {
        tokio::time::sleep_until(count_from.into()).await;
        let (c0, m0) = (pid.and_then(process_cpu_secs), process_cpu_secs(me));
        tokio::time::sleep_until(end.into()).await;
        (
            c0.and_then(|c0| Some(process_cpu_secs(pid?)? - c0)),
            m0.and_then(|m0| Some(process_cpu_secs(me)? - m0)),
        )
    };
    let (tally, (server, client)) = tokio::join!(players, meter);
    (tally, server, client)
}

/// p50, p90, p99 and max of some nanoseconds, in milliseconds.
fn quantiles(ns: &[u64]) -> [f64; 4] {
    let mut sorted = ns.to_vec();
    sorted.sort_unstable();
    [0.5, 0.9, 0.99, 1.0].map(|q| ms(quantile_us(&sorted, q)))
}

/// A JSON number (null for NaN or infinity).
fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.4}")
    } else {
        "null".to_owned()
    }
}

/// A JSON string.
fn text(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON object of counts.
fn counts(map: &BTreeMap<String, u64>) -> String {
    let parts: Vec<String> = map
        .iter()
        .map(|(k, n)| format!("{}:{n}", text(k)))
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// What the report says besides the tally.
struct Figures<'a> {
    /// Seconds counted.
    window: f64,
    /// Server and load generator CPU seconds over the window.
    server_cpu: Option<f64>,
    client_cpu: Option<f64>,
    /// Human moves a match takes.
    per_match: Option<f64>,
    /// Server CPU seconds a match at full speed (calibration).
    calibrated_cpu: Option<f64>,
    via: &'a str,
    connections: &'a str,
    n_conn: u32,
}

fn report(args: &Args, tally: &Tally, f: &Figures) {
    let Figures {
        window,
        server_cpu: cpu,
        client_cpu,
        per_match,
        calibrated_cpu,
        via,
        connections,
        n_conn,
    } = *f;
    let calls = tally.calls();
    let moves = tally.moves.len() as u64;
    let est_matches = per_match.map(|m| moves as f64 / m);
    let cpu_per_s = cpu.map(|c| c / window);
    let cpu_per_call_us = cpu.map(|c| c * 1e6 / calls.max(1) as f64);
    let cpu_per_finished_ms = cpu
        .filter(|_| tally.matches_finished > 0)
        .map(|c| c * 1e3 / tally.matches_finished as f64);
    let cpu_per_match_ms = cpu
        .zip(est_matches)
        .filter(|(_, m)| *m > 0.0)
        .map(|(c, m)| c * 1e3 / m);
    let opt = |v: Option<f64>, digits: usize| v.map_or("-".to_owned(), |v| format!("{v:.digits$}"));
    if window > 0.0 {
        println!(
            "{:<8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "rpc", "answered", "per s", "p50 ms", "p90 ms", "p99 ms", "max ms"
        );
        for (rpc, ns) in &tally.answered {
            let [p50, p90, p99, max] = quantiles(ns);
            println!(
                "{rpc:<8} {:>9} {:>9.1} {p50:>9.2} {p90:>9.2} {p99:>9.2} {max:>9.2}",
                ns.len(),
                ns.len() as f64 / window
            );
        }
        let [p50, p90, p99, max] = quantiles(&tally.moves);
        println!(
            "{:<8} {moves:>9} {:>9.1} {p50:>9.2} {p90:>9.2} {p99:>9.2} {max:>9.2}   (human moves: Deal, Play, Draw; retries included)",
            "moves",
            moves as f64 / window
        );
        let refused: Vec<String> = tally
            .refused
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        let errors: Vec<String> = tally
            .errors
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        println!(
            "refused: {}; other errors: {}; retried (connection lost): {}",
            if refused.is_empty() {
                "none".to_owned()
            } else {
                refused.join(", ")
            },
            if errors.is_empty() {
                "none".to_owned()
            } else {
                errors.join(", ")
            },
            tally.retried
        );
        println!(
            "matches finished in {window:.0} s: {}; human moves {moves} ({} a match: {} matches' worth)",
            tally.matches_finished,
            opt(per_match, 1),
            opt(est_matches, 1),
        );
        println!(
            "server CPU: {} s over {window:.0} s ({} of a core); {} µs a call; a match {} ms (by moves), {} ms (by matches finished){}",
            opt(cpu, 3),
            cpu_per_s.map_or("-".to_owned(), |c| format!("{:.1}%", c * 100.0)),
            opt(cpu_per_call_us, 1),
            opt(cpu_per_match_ms, 1),
            opt(cpu_per_finished_ms, 1),
            calibrated_cpu.map_or(String::new(), |c| format!(
                ", {:.1} ms without think time",
                c * 1e3
            )),
        );
        println!(
            "load generator CPU: {} of a core; load average {}",
            client_cpu.map_or("-".to_owned(), |c| format!("{:.1}%", c * 100.0 / window)),
            load_average()
        );
    }
    if args.json {
        let mut latency = Vec::new();
        for (rpc, ns) in &tally.answered {
            let [p50, p90, p99, max] = quantiles(ns);
            latency.push(format!(
                "{}:{{\"n\":{},\"p50\":{},\"p90\":{},\"p99\":{},\"max\":{}}}",
                text(rpc),
                ns.len(),
                num(p50),
                num(p90),
                num(p99),
                num(max)
            ));
        }
        let [p50, p90, p99, max] = quantiles(&tally.moves);
        let nf = |v: Option<f64>| v.map_or("null".to_owned(), num);
        println!(
            "{{\"kind\":{},\"matches\":{},\"think_ms\":{},\"secs\":{},\"via\":{},\"connections\":{},\"connection_count\":{n_conn},\"calls\":{calls},\"rpc\":{{{}}},\"moves\":{{\"n\":{moves},\"p50\":{},\"p90\":{},\"p99\":{},\"max\":{}}},\"refused\":{},\"refused_total\":{},\"errors\":{},\"errors_total\":{},\"retried\":{},\"matches_finished\":{},\"moves_per_match\":{},\"server_cpu_s\":{},\"server_cpu_per_s\":{},\"server_cpu_us_per_call\":{},\"server_cpu_ms_per_match\":{},\"server_cpu_ms_per_match_finished\":{},\"server_cpu_ms_per_match_no_think\":{},\"client_cpu_per_s\":{}}}",
            text(args.kind.name()),
            args.matches,
            args.think_ms,
            num(window),
            text(via),
            text(connections),
            latency.join(","),
            num(p50),
            num(p90),
            num(p99),
            num(max),
            counts(&tally.refused),
            tally.refusals(),
            counts(&tally.errors),
            tally.error_count(),
            tally.retried,
            tally.matches_finished,
            nf(per_match),
            nf(cpu),
            nf(cpu_per_s),
            nf(cpu_per_call_us),
            nf(cpu_per_match_ms),
            nf(cpu_per_finished_ms),
            nf(calibrated_cpu.map(|c| c * 1e3)),
            nf(client_cpu.map(|c| c / window)),
        );
    }
}
