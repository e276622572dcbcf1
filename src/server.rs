//! The gRPC server: the game API plus health, reflection and gRPC-Web, with request
//! limits, per-call tracing and a graceful, probe-friendly shutdown.
//!
//! [`run`] serves on a listener it is given until a shutdown future completes, so a test
//! starts a server on `127.0.0.1:0` in one line and `main` is a thin wrapper. Every
//! gRPC call (API, health, reflection) is counted and unary calls are timed in the
//! [`Metrics`] it is given; [`crate::metrics::serve_metrics`] shows them on their own
//! port.
//!
//! What a call passes through, in request order, and which layer answers what:
//! [`stack`]'s table. The files below, in that order:
//! - [`incoming`]: accepting connections (the cap, the preface deadline, lingering close);
//! - [`serve`]: the connection loop (age, idle timeout, eviction, shutdown, all graceful);
//! - [`connections`]: the open connections' trackers (`crate::connection`), each call
//!   counted open on its own, and each call's context;
//! - [`call_log`]: every call's outcome, logged and counted;
//! - [`admission`]: the calls-in-flight budget and the call's deadline;
//! - [`request_body`]: the request body's framing ([`framing`]: the parser) and deadline.

use std::error::Error;
use std::future::Future;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::net::TcpListener;
use tonic::server::NamedService;
use tonic::service::Routes;
use tonic_health::ServingStatus;

use crate::config::{Config, LogFormat};
use crate::metrics::Metrics;
use crate::proto::v1::FILE_DESCRIPTOR_SET;
use crate::proto::v1::all_fives_service_server::AllFivesServiceServer;
use crate::results::ResultKeys;
use crate::service::Api;
use crate::service::certify::Certifier;
use crate::state::{KeyRing, Tokens};

mod admission;
mod call_log;
mod connections;
mod framing;
mod incoming;
mod key_set;
mod request_body;
mod serve;
mod stack;

/// The error [`run`] returns: the server could not be set up or failed while serving.
pub type BoxError = Box<dyn Error + Send + Sync>;

/// Largest response message. Responses are a token and a game view of a few KiB; the
/// limit only stops a bug from sending megabytes.
const MAX_RESPONSE_BYTES: usize = 256 * 1024;

/// Largest header block a request may send (HTTP/2 SETTINGS_MAX_HEADER_LIST_SIZE):
/// gRPC requests send a few hundred bytes of headers.
const MAX_HEADER_LIST_BYTES: u32 = 16 * 1024;

/// How long an idle connection evicted at the connection cap may take to close.
const EVICT_GRACE: Duration = Duration::from_secs(1);

/// How long an HTTP/2 keepalive ping may go unanswered before the connection is closed.
const HTTP2_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Serves the API on `listener` until `shutdown` completes, then shuts down gracefully:
/// health turns NOT_SERVING (overall `""` and the API), after `shutdown_delay_ms` the
/// listener closes, and in-flight calls get up to `drain_seconds` to finish (then this
/// returns; connection tasks still running end when the runtime does).
///
/// Calls are counted in `metrics`; serving them over HTTP is the caller's business
/// ([`crate::metrics::serve_metrics`]).
///
/// The returned future owns everything it needs (it does not borrow `config`), so it
/// can be spawned: `tokio::spawn(server::run(listener, &config, ring, results, metrics,
/// shutdown))`. `ring` seals tokens, `results` signs finished matches' results.
pub fn run<F>(
    listener: TcpListener,
    config: &Config,
    ring: Arc<KeyRing>,
    results: Arc<ResultKeys>,
    metrics: Arc<Metrics>,
    shutdown: F,
) -> impl Future<Output = Result<(), BoxError>> + Send + 'static + use<F>
where
    F: Future<Output = ()> + Send + 'static,
{
    let config = config.clone();
    async move { serve(listener, config, ring, results, metrics, shutdown).await }
}

async fn serve<F>(
    listener: TcpListener,
    config: Config,
    ring: Arc<KeyRing>,
    results: Arc<ResultKeys>,
    metrics: Arc<Metrics>,
    shutdown: F,
) -> Result<(), BoxError>
where
    F: Future<Output = ()> + Send + 'static,
{
    let max_request = usize::try_from(config.max_message_bytes)?;
    let request_timeout = Duration::from_millis(config.request_timeout_ms);
    let drain = Duration::from_secs(config.drain_seconds);
    let shutdown_delay = Duration::from_millis(config.shutdown_delay_ms);
    let max_connections = usize::try_from(config.max_connections)?;
    let handshake_timeout = Duration::from_millis(config.handshake_timeout_ms);
    warn_if_descriptors_run_out_first(config.max_connections);
    // `main` checks it before it listens; a server started from the library too.
    config.check_clocks()?;

    let tokens = Arc::new(Tokens::new(ring, config.token_cache as usize));
    metrics.watch_token_cache(tokens.shared_counts());
    let store = config.match_store().await?.map(Arc::new);
    if let Some(store) = &store {
        store.start_presence();
    }
    let passes = config.passes_beside(&results)?.map(Arc::new);
    let certifier = Certifier::new(
        results,
        config.result_issuer.clone(),
        config.result_lifetime_secs,
    );
    let key_set = certifier.jwks_json().to_owned();
    let api = Api::new(tokens, Arc::clone(&metrics), config.policy())
        .with_certifier(certifier)
        .with_passes(passes)
        .with_bot_move_floor(Duration::from_millis(config.bot_move_floor_ms))
        .with_search_wait_budget(Duration::from_millis(config.search_wait_budget_ms))
        .with_match_store(store.clone())
        .with_clock(config.clock.clone())
        .with_watches(
            usize::try_from(config.max_watch_streams)?,
            usize::try_from(config.max_watch_streams_per_connection)?,
            usize::try_from(config.max_watch_streams_per_client)?,
            Duration::from_secs(config.watch_heartbeat_secs),
        );
    metrics.watch_searches(api.searches());
    metrics.watch_streams(api.watches());
    let api = AllFivesServiceServer::new(api)
        .max_decoding_message_size(max_request)
        .max_encoding_message_size(MAX_RESPONSE_BYTES);

    let (health_reporter, health) = tonic_health::server::health_reporter();
    let health = health.max_decoding_message_size(max_request);
    health_reporter
        .set_serving::<AllFivesServiceServer<Api>>()
        .await;
    let store_health =
        store.map(|store| tokio::spawn(report_store(store, health_reporter.clone())));

    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection()
        .build_v1()?
        .max_decoding_message_size(max_request);
    let reflection_v1alpha = reflection()
        .build_v1alpha()?
        .max_decoding_message_size(max_request);

    let routes = Routes::new(api)
        .add_service(health)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha);
    #[cfg(feature = "bench-echo")]
    let routes = routes.add_service(
        bench_echo::EchoServiceServer::new(bench_echo::Echo)
            .max_decoding_message_size(max_request)
            .max_encoding_message_size(MAX_RESPONSE_BYTES),
    );
    let routes = routes.prepare();

    let stack = stack::build(
        routes,
        stack::Settings {
            cors_origins: &config.cors_origins,
            max_calls_in_flight: usize::try_from(config.max_calls_in_flight)?,
            request_timeout,
            body_timeout: Duration::from_millis(config.body_timeout_ms),
            client_header: config.trusted_client_header.clone(),
            metrics,
            key_set,
        },
    );
    let http = http_builder(&config, max_request);
    let lifetimes = serve::Lifetimes {
        age: (config.max_connection_age_secs > 0)
            .then(|| Duration::from_secs(config.max_connection_age_secs)),
        // Calls already taken get their whole timeout to finish; only streams outlast
        // that (health Watch), and their clients reconnect.
        grace: request_timeout + Duration::from_secs(1),
        idle: (config.idle_timeout_secs > 0).then(|| Duration::from_secs(config.idle_timeout_secs)),
        evict_grace: EVICT_GRACE,
    };

    let registry = Arc::new(connections::Registry::default());
    let incoming = incoming::Incoming::new(listener, registry, max_connections, handshake_timeout);

    let (drain_started, drain_start) = tokio::sync::oneshot::channel::<()>();
    let signal = async move {
        shutdown.await;
        tracing::info!(
            delay_ms = config.shutdown_delay_ms,
            "shutting down: health reports NOT_SERVING"
        );
        health_reporter
            .set_service_status("", ServingStatus::NotServing)
            .await;
        health_reporter
            .set_not_serving::<AllFivesServiceServer<Api>>()
            .await;
        tokio::time::sleep(shutdown_delay).await;
        // Forget the statuses: ends open health Watch streams, which would otherwise
        // hold their connections open until the drain deadline.
        let mut health_reporter = health_reporter;
        if let Some(task) = &store_health {
            task.abort();
            health_reporter.clear_service_status(STORE_HEALTH).await;
        }
        health_reporter.clear_service_status("").await;
        health_reporter
            .clear_service_status(<AllFivesServiceServer<Api> as NamedService>::NAME)
            .await;
        tracing::info!(
            drain_seconds = config.drain_seconds,
            "stopped accepting connections; draining in-flight calls"
        );
        let _ = drain_started.send(());
    };

    let serving = serve::serve(incoming, http, stack, lifetimes, signal);
    let deadline = async {
        match drain_start.await {
            Ok(()) => tokio::time::sleep(drain).await,
            // The server stopped on its own (an error) before any shutdown began.
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        () = serving => {}
        // Connections still open are dropped with the runtime (at once, in `main`).
        () = deadline => tracing::warn!("drain deadline passed with calls still in flight"),
    }
    tracing::info!("server stopped");
    Ok(())
}

/// hyper's settings: HTTP/2 windows sized to this API's requests (a stream may have one
/// whole request in flight; a connection four), its stream and header limits and
/// keepalive pings; HTTP/1 (gRPC-Web) with a read buffer to match.
fn http_builder(
    config: &Config,
    max_request: usize,
) -> hyper_util::server::conn::auto::Builder<TokioExecutor> {
    // A message and its 5-byte gRPC prefix.
    let stream_window = u32::try_from(max_request + 5).unwrap_or(u32::MAX);
    let mut http = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    http.http2()
        .timer(TokioTimer::new())
        .initial_stream_window_size(stream_window)
        .initial_connection_window_size(stream_window.saturating_mul(4))
        .max_concurrent_streams(config.concurrency_limit)
        .max_header_list_size(MAX_HEADER_LIST_BYTES)
        .keep_alive_interval(
            (config.http2_keepalive_secs > 0)
                .then(|| Duration::from_secs(config.http2_keepalive_secs)),
        )
        .keep_alive_timeout(HTTP2_KEEPALIVE_TIMEOUT);
    // gRPC-Web text is base64: a third larger than the message.
    http.http1()
        .timer(TokioTimer::new())
        .max_buf_size((max_request * 2).max(64 * 1024));
    http
}

/// Descriptors the process needs besides its connections: the listeners, the metrics
/// endpoint's scrapes, the runtime, standard streams, the key file.
const DESCRIPTOR_RESERVE: u64 = 64;

/// The soft limit on open files of this process; `None` if unlimited or unknown (not
/// Linux: read from `/proc/self/limits`).
pub fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Warns at start when the open-files limit would stop accepting (with pauses, see
/// [`incoming`]) before `--max-connections` does.
/// The health service's name for the match store (`grpc.health.v1`): SERVING while
/// the store answers, NOT_SERVING while it does not (docs/operations.md, "Probes").
pub const STORE_HEALTH: &str = "allfives.MatchStore";

/// How often the match store is asked whether it answers.
const STORE_PROBE_PERIOD: Duration = Duration::from_secs(5);

/// Asks the store every [`STORE_PROBE_PERIOD`] whether it answers, and says so in the
/// health service (and in the log, when it changes). Runs until aborted.
async fn report_store(
    store: Arc<crate::store::MatchStore>,
    reporter: tonic_health::server::HealthReporter,
) {
    let mut up = None;
    loop {
        let answered = tokio::time::timeout(crate::store::RESPONSE_TIMEOUT, store.ping())
            .await
            .map_err(|_| "no answer in time".to_string())
            .and_then(|pinged| pinged.map_err(|e| e.to_string()));
        let now_up = answered.is_ok();
        if up != Some(now_up) {
            match &answered {
                Ok(()) if up.is_some() => tracing::info!("the match store answers again"),
                Ok(()) => {}
                Err(why) => {
                    tracing::warn!(%why, "the match store does not answer: moves are refused STORE_UNAVAILABLE")
                }
            }
            let status = match now_up {
                true => ServingStatus::Serving,
                false => ServingStatus::NotServing,
            };
            reporter.set_service_status(STORE_HEALTH, status).await;
            up = Some(now_up);
        }
        tokio::time::sleep(STORE_PROBE_PERIOD).await;
    }
}

fn warn_if_descriptors_run_out_first(max_connections: u32) {
    if let Some(limit) = open_files_limit()
        && u64::from(max_connections) + DESCRIPTOR_RESERVE > limit
    {
        tracing::warn!(
            max_connections,
            open_files_limit = limit,
            "the open-files limit is below --max-connections (plus {DESCRIPTOR_RESERVE}): \
             a flood of connections runs out of descriptors before the cap; raise \
             `ulimit -n` or lower --max-connections"
        );
    }
}

/// Benchmark only: the bare unary call `examples/loadgen.rs` compares games against. It
/// sits behind the same layers as the API (CORS, gRPC-Web, limits, the call log), so
/// the difference between the two is the game's own work.
#[cfg(feature = "bench-echo")]
mod bench_echo {
    use crate::proto::bench::echo_service_server::EchoService;
    pub use crate::proto::bench::echo_service_server::EchoServiceServer;
    use crate::proto::bench::{EchoRequest, EchoResponse};
    use std::time::{Duration, Instant};
    use tonic::{Request, Response, Status};

    /// Largest payload an echo answers with.
    const MAX_PAYLOAD: u32 = 64 * 1024;
    /// Longest busy-wait a request may ask for.
    const MAX_WORK_NS: u32 = 1_000_000;

    #[derive(Clone, Copy, Debug)]
    pub struct Echo;

    #[tonic::async_trait]
    impl EchoService for Echo {
        async fn echo(&self, req: Request<EchoRequest>) -> Result<Response<EchoResponse>, Status> {
            let req = req.get_ref();
            if req.work_ns > 0 {
                let work = Duration::from_nanos(u64::from(req.work_ns.min(MAX_WORK_NS)));
                let start = Instant::now();
                while start.elapsed() < work {
                    std::hint::spin_loop();
                }
            }
            Ok(Response::new(EchoResponse {
                payload: vec![0; req.response_bytes.min(MAX_PAYLOAD) as usize],
            }))
        }
    }
}

/// Installs the global `tracing` subscriber: human-readable (coloured on a terminal) or
/// JSON lines, filtered by `--log-filter`, with h2's and hyper's WARN lines about
/// misbehaving peers held to one per 10 s ([`crate::throttle::PeerWarnings`]). Does nothing if
/// one is already installed.
pub fn init_tracing(config: &Config) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    // The filter was validated when the configuration was parsed.
    let filter = tracing_subscriber::EnvFilter::builder().parse_lossy(&config.log_filter);
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let _ = match config.log_format {
        LogFormat::Human => builder
            .with_ansi(std::io::stdout().is_terminal())
            .finish()
            .with(crate::throttle::PeerWarnings::default())
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .finish()
            .with(crate::throttle::PeerWarnings::default())
            .try_init(),
    };
}

/// Completes on SIGTERM (how Kubernetes stops a pod) or ctrl-c.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(%error, "cannot listen for ctrl-c");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut sigterm) => {
                sigterm.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();

    tokio::select! {
        () = ctrl_c => tracing::info!("ctrl-c received"),
        () = terminate => tracing::info!("SIGTERM received"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::io::{Read, Write};
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus as Wire;
    use tonic_health::pb::health_client::HealthClient;

    async fn start(
        args: &[&str],
    ) -> (
        std::net::SocketAddr,
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<Result<(), BoxError>>,
    ) {
        let config =
            Config::try_parse_from(std::iter::once("allfives").chain(args.iter().copied()))
                .expect("config");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let ring = Arc::new(KeyRing::ephemeral().expect("ring"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async {
            let _ = stopped.await;
        };
        let metrics = Arc::new(Metrics::new());
        let results = Arc::new(ResultKeys::ephemeral().expect("result keys"));
        let handle = tokio::spawn(run(listener, &config, ring, results, metrics, shutdown));
        (addr, stop, handle)
    }

    async fn status(client: &mut HealthClient<tonic::transport::Channel>, service: &str) -> Wire {
        let response = client
            .check(HealthCheckRequest {
                service: service.to_owned(),
            })
            .await
            .expect("health check");
        Wire::try_from(response.into_inner().status).expect("status")
    }

    #[tokio::test]
    async fn health_turns_not_serving_before_the_listener_closes() {
        let (addr, stop, handle) =
            start(&["--shutdown-delay-ms", "400", "--drain-seconds", "1"]).await;
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .expect("endpoint")
            .connect()
            .await
            .expect("connect");
        let mut health = HealthClient::new(channel);
        let api = <AllFivesServiceServer<Api> as NamedService>::NAME;
        assert_eq!(status(&mut health, "").await, Wire::Serving);
        assert_eq!(status(&mut health, api).await, Wire::Serving);

        stop.send(()).expect("server running");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(status(&mut health, "").await, Wire::NotServing);
        assert_eq!(status(&mut health, api).await, Wire::NotServing);

        let stopped = tokio::time::timeout(Duration::from_secs(3), handle).await;
        assert!(
            matches!(stopped, Ok(Ok(Ok(())))),
            "server did not stop cleanly"
        );
        assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    }

    /// Sends a CORS preflight over HTTP/1 and returns the response head.
    fn preflight(addr: std::net::SocketAddr, origin: &str) -> String {
        let mut stream = std::net::TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        write!(
            stream,
            "OPTIONS /allfives.v1.AllFivesService/NewGame HTTP/1.1\r\nHost: test\r\n\
             Origin: {origin}\r\nAccess-Control-Request-Method: POST\r\n\
             Access-Control-Request-Headers: x-grpc-web,content-type\r\n\
             Connection: close\r\n\r\n"
        )
        .expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        response.to_ascii_lowercase()
    }

    #[tokio::test]
    async fn cors_allows_only_configured_origins() {
        let (addr, stop, handle) = start(&[
            "--shutdown-delay-ms",
            "0",
            "--cors-origins",
            "https://app.example",
        ])
        .await;
        let (allowed, refused) = tokio::task::spawn_blocking(move || {
            (
                preflight(addr, "https://app.example"),
                preflight(addr, "https://evil.example"),
            )
        })
        .await
        .expect("preflight");
        assert!(
            allowed.contains("access-control-allow-origin: https://app.example"),
            "{allowed}"
        );
        assert!(allowed.contains("x-grpc-web"), "{allowed}");
        assert!(
            !refused.contains("access-control-allow-origin"),
            "{refused}"
        );

        stop.send(()).expect("server running");
        let stopped = tokio::time::timeout(Duration::from_secs(3), handle).await;
        assert!(matches!(stopped, Ok(Ok(Ok(())))));
    }
}
