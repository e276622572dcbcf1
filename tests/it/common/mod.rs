//! Starting a real server on an ephemeral port and helpers shared by the tests.
//!
//! # Heavy and measuring tests
//!
//! The tests of `tests/it/` share one process and run on parallel threads (as many as
//! the machine has cores, unless `--test-threads` says otherwise). A test that
//! measures time, latency, CPU, memory or load would measure the other tests too if a
//! CPU-heavy one ran beside it, and a test that loads the server on purpose (floods,
//! attacks) would slow another's measurement. So:
//!
//! - a CPU-heavy test (the million mutated tokens, the 40,000 matches of the token
//!   lengths, whole matches of HARD bots...) holds [`heavy`] for its whole length;
//!   heavy tests may run together;
//! - a test that measures time, latency, CPU, memory or load, or generates load
//!   (connection ageing, overload, the memory attack, the drain on SIGTERM...) holds
//!   [`measuring`] for its whole length: it then runs with no heavy test and no other
//!   measuring test;
//! - every other test takes neither and runs beside anything.
//!
//! Both are guards of one `tokio::sync::RwLock` (fair, so a waiting measuring test is
//! not starved by a stream of heavy ones; never poisoned by a test that failed).
//! Synchronous tests take [`heavy_blocking`] or [`measuring_blocking`]. A test that
//! must own its whole process (a global tracing subscriber, the process's CPU time or
//! descriptors) runs again alone in a child process ([`alone`]).

pub mod alone;
pub mod child;
pub mod raw;
pub mod redis;
pub mod searching;

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Heavy tests read, measuring tests write: see the module's doc.
static LOAD: RwLock<()> = RwLock::const_new(());

/// Held by a CPU-heavy test for its whole length: no measuring test runs meanwhile.
pub async fn heavy() -> RwLockReadGuard<'static, ()> {
    LOAD.read().await
}

/// [`heavy`], for a test that is not async (never call it inside a runtime).
pub fn heavy_blocking() -> RwLockReadGuard<'static, ()> {
    LOAD.blocking_read()
}

/// Held by a test that measures time, latency, CPU, memory or load for its whole
/// length: no heavy test and no other measuring test runs meanwhile.
pub async fn measuring() -> RwLockWriteGuard<'static, ()> {
    LOAD.write().await
}

/// [`measuring`], for a test that is not async (never call it inside a runtime).
pub fn measuring_blocking() -> RwLockWriteGuard<'static, ()> {
    LOAD.blocking_write()
}

use std::net::SocketAddr;
use std::sync::Arc;

use allfives::config::Config;
use allfives::metrics::{Metrics, serve_metrics};
use allfives::proto::v1 as pb;
use allfives::proto::v1::all_fives_service_client::AllFivesServiceClient;
use allfives::results::ResultKeys;
use allfives::state::KeyRing;
use clap::Parser;
use tokio::sync::oneshot;
use tonic::transport::Channel;

pub type Client = AllFivesServiceClient<Channel>;

/// The time the tests' in-process handler calls are judged at (their matches have no
/// clock unless a test says so).
pub const JUDGE: allfives::service::clocks::Judge = allfives::service::clocks::Judge {
    now_ms: 1_800_000_000_000,
    grace_ms: 2000,
    skew_ms: 1000,
    show_player_ids: false,
};

/// A server running in this process, with its metrics endpoint; stopped when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    /// Where `GET /metrics` answers (plain HTTP/1).
    pub metrics_addr: SocketAddr,
    /// The registry the server counts in.
    pub metrics: Arc<Metrics>,
    stop: Option<oneshot::Sender<()>>,
    /// Ends when the gRPC server has stopped and then the metrics endpoint.
    pub handle: tokio::task::JoinHandle<()>,
}

impl TestServer {
    /// A server that takes client seeds (`--allow-client-seeds`), so that tests replay
    /// their matches, with a short drain.
    pub async fn start(ring: KeyRing) -> TestServer {
        TestServer::start_with(ring, &["--allow-client-seeds"]).await
    }

    /// A server as production runs it (client seeds refused), with a short drain.
    pub async fn start_default(ring: KeyRing) -> TestServer {
        TestServer::start_with(ring, &[]).await
    }

    /// A server with these flags (`--allow-client-seeds`, `--concurrency-limit 4`, …)
    /// after the test defaults (short drain, no shutdown delay).
    pub async fn start_with(ring: KeyRing, extra_args: &[&str]) -> TestServer {
        TestServer::start_clocked(
            ring,
            allfives::server_clock::ServerClock::system(),
            extra_args,
        )
        .await
    }

    /// [`TestServer::start_with`], judging turn clocks by `clock` (a test's, set by
    /// hand: `ServerClock::manual`).
    pub async fn start_clocked(
        ring: KeyRing,
        clock: allfives::server_clock::ServerClock,
        extra_args: &[&str],
    ) -> TestServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let metrics_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind metrics");
        let metrics_addr = metrics_listener.local_addr().expect("metrics addr");
        let metrics = Arc::new(Metrics::new());
        let (stop, stopped) = oneshot::channel::<()>();
        let defaults = [
            "allfives",
            "--drain-seconds",
            "1",
            "--shutdown-delay-ms",
            "0",
        ];
        let mut config = Config::try_parse_from(defaults.iter().chain(extra_args)).expect("config");
        config.clock = clock;
        let shared = Arc::clone(&metrics);
        let handle = tokio::spawn(async move {
            // As `main` does: the metrics endpoint stops once the gRPC server has.
            let (grpc_done, grpc_stopped) = oneshot::channel::<()>();
            let scrapes = tokio::spawn(serve_metrics(
                metrics_listener,
                Arc::clone(&shared),
                async {
                    let _ = grpc_stopped.await;
                },
            ));
            let shutdown = async {
                let _ = stopped.await;
            };
            // The result keys given, else a random key (without the warning `main`
            // logs, as the test's token ring comes without one).
            let results = match (&config.result_keys, &config.result_keys_file) {
                (None, None) => ResultKeys::ephemeral().expect("a random result key"),
                _ => config.result_keys().expect("result keys"),
            };
            let results = Arc::new(results);
            let result =
                allfives::server::run(listener, &config, Arc::new(ring), results, shared, shutdown)
                    .await;
            drop(grpc_done);
            scrapes.await.expect("metrics endpoint");
            result.expect("server");
        });
        TestServer {
            addr,
            metrics_addr,
            metrics,
            stop: Some(stop),
            handle,
        }
    }

    pub async fn client(&self) -> Client {
        connect(self.addr).await
    }

    pub async fn channel(&self) -> Channel {
        let url = format!("http://{}", self.addr);
        Channel::from_shared(url)
            .expect("url")
            .connect()
            .await
            .expect("connect")
    }

    /// `GET <path>` on the metrics endpoint over real TCP: the status code, the
    /// content type and the body.
    pub async fn scrape(&self, path: &str) -> (u16, String, String) {
        let (status, headers, body) = http_get(self.metrics_addr, path).await;
        let content_type = header(&headers, "content-type")
            .unwrap_or_default()
            .to_owned();
        (status, content_type, body)
    }

    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `GET path` from `addr` over HTTP/1.1: the status, the headers (names in lower case)
/// and the body.
pub async fn http_get(addr: SocketAddr, path: &str) -> (u16, Vec<(String, String)>, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_string(&mut response),
    )
    .await
    .expect("an answer (hang guard)")
    .expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

/// The value of header `name` (lower case) among `headers`.
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// A fixed key ring, as two replicas would share.
pub fn ring(id: u8, byte: u8) -> KeyRing {
    KeyRing::new(vec![(id, [byte; 32])], None).expect("ring")
}

/// Two replicas on one Redis-protocol store (`kind`: redis or redis-cluster), sharing a
/// key ring.
pub async fn replicas(kind: &str, urls: &str) -> (TestServer, TestServer) {
    let args = ["--match-store", kind, "--match-store-url", urls];
    (
        TestServer::start_with(ring(1, 1), &args).await,
        TestServer::start_with(ring(1, 1), &args).await,
    )
}

/// The `ErrorInfo` reason of a status.
pub fn reason(status: &tonic::Status) -> String {
    use tonic_types::StatusExt;
    status
        .get_error_details()
        .error_info()
        .map(|i| i.reason.clone())
        .unwrap_or_default()
}

/// The fields a status's `BadRequest` names.
pub fn bad_fields(status: &tonic::Status) -> Vec<String> {
    use tonic_types::StatusExt;
    status
        .get_error_details()
        .bad_request()
        .map(|b| b.field_violations.iter().map(|v| v.field.clone()).collect())
        .unwrap_or_default()
}

pub fn tile(a: u32, b: u32) -> pb::Tile {
    pb::Tile { a, b }
}

/// Every seat's credential of a match, by seat (empty for a seat not claimed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Creds(pub Vec<Vec<u8>>);

impl Creds {
    /// The credentials NewGame answered.
    pub fn from_new_game(answer: &pb::NewGameResponse) -> Creds {
        let mut creds = vec![Vec::new(); 4];
        for c in &answer.credentials {
            creds[c.seat as usize] = c.credential.clone();
        }
        Creds(creds)
    }

    /// Seat `seat`'s credential (empty if it has none).
    pub fn of(&self, seat: u32) -> Vec<u8> {
        self.0.get(seat as usize).cloned().unwrap_or_default()
    }

    /// The credential for `viewer`, if one is named (empty for a spectator).
    pub fn for_viewer(&self, viewer: Option<u32>) -> Vec<u8> {
        viewer.map(|v| self.of(v)).unwrap_or_default()
    }
}

/// A human seat claimed in NewGame (its credential in the answer).
pub const CLAIMED: pb::SeatSetup = pb::SeatSetup {
    bot: 0,
    claim: true,
    display_name: String::new(),
    pass: String::new(),
};

/// A human seat left open for ClaimSeat.
pub const OPEN: pb::SeatSetup = pb::SeatSetup {
    bot: 0,
    claim: false,
    display_name: String::new(),
    pass: String::new(),
};

/// A seat the server plays at `level`.
pub fn bot(level: pb::BotLevel) -> pb::SeatSetup {
    pb::SeatSetup {
        bot: level as i32,
        claim: false,
        display_name: String::new(),
        pass: String::new(),
    }
}

/// A NewGame request of a hot-seat match: every seat claimed in the call.
pub fn hot_seat(rules: pb::Rules, seed: Option<u64>) -> pb::NewGameRequest {
    let players = match rules.players {
        0 => 2,
        n => n as usize,
    };
    pb::NewGameRequest {
        rules: Some(rules),
        seed,
        viewer: None,
        seats: vec![
            pb::SeatSetup {
                bot: 0,
                claim: true,
                display_name: String::new(),
                pass: String::new(),
            };
            players
        ],
    }
}

/// A client of the server at `addr`, once it accepts connections (up to 5 s).
pub async fn connect(addr: SocketAddr) -> Client {
    let url = format!("http://{addr}");
    for _ in 0..250 {
        if let Ok(client) = AllFivesServiceClient::connect(url.clone()).await {
            return client;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("server at {url} did not come up")
}

/// A Score request of a freshly dealt match for seat 0, with its credential, encoded:
/// the message of a well-formed call for tests that write HTTP/2 by hand.
pub async fn score_message(client: &mut Client) -> Vec<u8> {
    use prost::Message;
    let (token, creds) = dealt_token(client).await;
    pb::ScoreRequest {
        state: token.into(),
        viewer: Some(0),
        credential: creds.of(0),
        ..Default::default()
    }
    .encode_to_vec()
}

/// A dealt game's token and credentials: a hot-seat NewGame with the default rules,
/// then Deal, from `client`.
pub async fn dealt_token(client: &mut Client) -> (Vec<u8>, Creds) {
    let new = client
        .new_game(hot_seat(pb::Rules::default(), None))
        .await
        .expect("NewGame")
        .into_inner();
    let creds = Creds::from_new_game(&new);
    (deal(client, new.state).await.0, creds)
}

/// A new two-player match (the server's seeds) with these seats.
pub async fn new_game_with(client: &mut Client, seats: Vec<pb::SeatSetup>) -> pb::NewGameResponse {
    client
        .new_game(pb::NewGameRequest {
            seats,
            ..Default::default()
        })
        .await
        .expect("NewGame")
        .into_inner()
}

/// A new hot-seat match's token, view and every seat's credential (the server must
/// take client seeds: [`TestServer::start`]).
pub async fn new_match(
    client: &mut Client,
    rules: pb::Rules,
    seed: u64,
) -> (Vec<u8>, pb::GameView, Creds) {
    let r = client
        .new_game(hot_seat(rules, Some(seed)))
        .await
        .expect("NewGame")
        .into_inner();
    let creds = Creds::from_new_game(&r);
    (r.state, r.view.expect("view"), creds)
}

/// Deals the next hand.
pub async fn deal(client: &mut Client, state: Vec<u8>) -> (Vec<u8>, pb::GameView) {
    let r = client
        .deal(pb::DealRequest {
            state: state.into(),
            ..Default::default()
        })
        .await
        .expect("Deal")
        .into_inner();
    (r.state, r.view.expect("view"))
}

/// The view of `state` for `seat`, with its credential.
pub async fn view_for(client: &mut Client, state: &[u8], seat: u32, creds: &Creds) -> pb::GameView {
    client
        .score(pb::ScoreRequest {
            state: state.to_vec().into(),
            viewer: Some(seat),
            credential: creds.of(seat),
            include_hand_events: false,
        })
        .await
        .expect("Score")
        .into_inner()
        .view
        .expect("view")
}

/// A NewGame request of two players, seeded: seat 0 claimed in the call (and its
/// viewer), seat 1 a bot of `level`.
pub fn against_a_bot(level: pb::BotLevel, seed: u64) -> pb::NewGameRequest {
    pb::NewGameRequest {
        rules: Some(pb::Rules {
            players: 2,
            ..Default::default()
        }),
        seed: Some(seed),
        viewer: Some(0),
        seats: vec![
            pb::SeatSetup {
                bot: 0,
                claim: true,
                display_name: String::new(),
                pass: String::new(),
            },
            bot(level),
        ],
    }
}
