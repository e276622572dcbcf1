//! Server configuration: every option is a command-line flag and an `ALLFIVES_*`
//! environment variable (flags win), so the same binary runs by hand and in a container.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use tonic::codegen::http::{HeaderName, HeaderValue};

use crate::passes::{self, PassKeysError, PassSettings, Passes};
use crate::results::ResultKeys;
use crate::state::keyring::parse_entries;
use crate::state::{KeyRing, KeyRingError};

/// The All Fives game engine gRPC server.
#[derive(Parser, Debug, Clone)]
#[command(name = "allfives", version, about)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "ALLFIVES_ADDR", default_value = "[::]:50051")]
    pub addr: SocketAddr,

    /// Address of the Prometheus metrics endpoint (`GET /metrics`, plain HTTP); empty
    /// or `off` turns it off.
    #[arg(
        long,
        env = "ALLFIVES_METRICS_ADDR",
        default_value = "[::]:9090",
        value_parser = parse_metrics_addr
    )]
    // Spelled out so clap takes `None` as a parsed value (`off`), not a missing flag.
    pub metrics_addr: std::option::Option<SocketAddr>,

    /// Token keys, `<id>:<64 hex digits>` separated by commas or new lines; the first
    /// seals unless --active-key-id names another. Without keys a random key is used.
    #[arg(
        long,
        env = "ALLFIVES_KEYS",
        hide_env_values = true,
        conflicts_with = "keys_file",
        value_parser = parse_key_text
    )]
    pub keys: Option<KeyText>,

    /// File holding the token keys in the --keys format (e.g. a mounted Secret).
    #[arg(long, env = "ALLFIVES_KEYS_FILE")]
    pub keys_file: Option<PathBuf>,

    /// Id of the key that seals new tokens (default: the first key).
    #[arg(long, env = "ALLFIVES_ACTIVE_KEY_ID")]
    pub active_key_id: Option<u8>,

    /// Result signing keys: Ed25519 secret keys, `<id>:<64 hex digits>` as --keys writes
    /// them, never a token key; the first signs unless --result-active-key-id names
    /// another, and every one is published. Without them a random key signs (its
    /// results verify only against this process's key set).
    #[arg(
        long,
        env = "ALLFIVES_RESULT_KEYS",
        hide_env_values = true,
        conflicts_with = "result_keys_file",
        value_parser = parse_key_text
    )]
    pub result_keys: Option<KeyText>,

    /// File holding the result keys in the --result-keys format (a Secret of its own).
    #[arg(long, env = "ALLFIVES_RESULT_KEYS_FILE")]
    pub result_keys_file: Option<PathBuf>,

    /// Id of the result key that signs (default: the first).
    #[arg(long, env = "ALLFIVES_RESULT_ACTIVE_KEY_ID")]
    pub result_active_key_id: Option<u8>,

    /// The `iss` of every result: the service's public base URL, under which
    /// `/.well-known/jwks.json` serves the result keys.
    #[arg(
        long,
        env = "ALLFIVES_RESULT_ISSUER",
        default_value = "allfives",
        value_parser = clap::builder::NonEmptyStringValueParser::new()
    )]
    pub result_issuer: String,

    /// How long a verifier takes a result after it was signed (its `exp`), in seconds,
    /// 60 to 31536000: a retired result key must stay published this long.
    #[arg(
        long,
        env = "ALLFIVES_RESULT_LIFETIME_SECS",
        default_value_t = 604_800,
        value_parser = clap::value_parser!(u64).range(60..=31_536_000)
    )]
    pub result_lifetime_secs: u64,

    /// Print the result keys' public JWK Set (what `/.well-known/jwks.json` serves) and
    /// exit, for a verifier that cannot reach the service.
    #[arg(long, env = "ALLFIVES_PRINT_RESULT_JWKS")]
    pub print_result_jwks: bool,

    /// The studio's pass keys: a JWK Set file (RFC 7517), the public keys its login
    /// service signs players' passes with (Ed25519, ES256, RS256). Without it passes are
    /// off: a pass shown is refused and nothing else changes.
    #[arg(long, env = "ALLFIVES_PASS_KEYS_FILE")]
    pub pass_keys_file: Option<PathBuf>,

    /// The `iss` every pass must carry, exactly: the studio's login service's issuer
    /// (needed with --pass-keys-file).
    #[arg(
        long,
        env = "ALLFIVES_PASS_ISSUER",
        value_parser = clap::builder::NonEmptyStringValueParser::new()
    )]
    pub pass_issuer: Option<String>,

    /// The `aud` every pass must name, alone or in its array: this service's name at the
    /// studio's login service (needed with --pass-keys-file).
    #[arg(
        long,
        env = "ALLFIVES_PASS_AUDIENCE",
        value_parser = clap::builder::NonEmptyStringValueParser::new()
    )]
    pub pass_audience: Option<String>,

    /// The JWS `typ` every pass must carry (e.g. `pass+jwt`), compared case-insensitively
    /// with or without `application/`; unset, any but a result's.
    #[arg(
        long,
        env = "ALLFIVES_PASS_TYPE",
        value_parser = clap::builder::NonEmptyStringValueParser::new()
    )]
    pub pass_type: Option<String>,

    /// Seconds the studio's clock and this one may disagree by when a pass's `exp`,
    /// `nbf` and lifetime are judged, 0 to 300 (default 60).
    #[arg(
        long,
        env = "ALLFIVES_PASS_LEEWAY_SECS",
        value_parser = clap::value_parser!(u64).range(0..=300)
    )]
    pub pass_leeway_secs: Option<u64>,

    /// The furthest ahead a pass's `exp` may be, in seconds, 60 to 31536000 (default
    /// 86400): a pass is a bearer token, so a stolen one takes seats until it expires.
    #[arg(
        long,
        env = "ALLFIVES_PASS_MAX_LIFETIME_SECS",
        value_parser = clap::value_parser!(u64).range(60..=31_536_000)
    )]
    pub pass_max_lifetime_secs: Option<u64>,

    /// Every seat a human claims must show a pass (needs --pass-keys-file).
    #[arg(
        long,
        env = "ALLFIVES_PASS_REQUIRED",
        value_parser = clap::builder::FalseyValueParser::new()
    )]
    pub pass_required: bool,

    /// Views show every seat's player id; by default each viewer sees only its own
    /// (needs --pass-keys-file).
    #[arg(
        long,
        env = "ALLFIVES_SHOW_PLAYER_IDS",
        value_parser = clap::builder::FalseyValueParser::new()
    )]
    pub show_player_ids: bool,

    /// Log output format.
    #[arg(long, env = "ALLFIVES_LOG_FORMAT", value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,

    /// Log filter, in `tracing` EnvFilter syntax (e.g. `info,allfives=debug`).
    #[arg(long, env = "ALLFIVES_LOG", default_value = "info", value_parser = parse_log_filter)]
    pub log_filter: String,

    /// Longest a call may run, in milliseconds (a shorter client deadline wins).
    #[arg(
        long,
        env = "ALLFIVES_REQUEST_TIMEOUT_MS",
        default_value_t = 5000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub request_timeout_ms: u64,

    /// Calls in flight per connection, its HTTP/2 MAX_CONCURRENT_STREAMS: HTTP/2
    /// clients queue past it; calls sent past it anyway are refused unprocessed
    /// (REFUSED_STREAM, which clients see as UNAVAILABLE and may retry).
    #[arg(
        long,
        env = "ALLFIVES_CONCURRENCY_LIMIT",
        default_value_t = 256,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub concurrency_limit: u32,

    /// Calls in flight at once over all connections; past it a call is refused at once,
    /// unread (RESOURCE_EXHAUSTED, OVERLOADED). With --max-message-bytes it bounds the
    /// request bytes the server buffers (docs/RELIABILITY.md, "The memory budget").
    #[arg(
        long,
        env = "ALLFIVES_MAX_CALLS_IN_FLIGHT",
        default_value_t = 512,
        value_parser = clap::value_parser!(u32).range(1..=65_536)
    )]
    pub max_calls_in_flight: u32,

    /// Longest a call's request body may take to arrive once its headers have, in
    /// milliseconds; then the call is refused (CANCELLED, REQUEST_BODY_TIMEOUT) and its
    /// buffer freed.
    #[arg(
        long,
        env = "ALLFIVES_BODY_TIMEOUT_MS",
        default_value_t = 2000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub body_timeout_ms: u64,

    /// Close a connection with no call open for this many seconds (gracefully, with
    /// GOAWAY: clients reconnect when they next call); 0 keeps idle connections open.
    /// At the connection cap the longest idle connection is closed first anyway.
    #[arg(long, env = "ALLFIVES_IDLE_TIMEOUT_SECS", default_value_t = 120)]
    pub idle_timeout_secs: u64,

    /// Largest request message, in bytes (requests are a token of at most 1 KiB plus
    /// a few fields).
    #[arg(
        long,
        env = "ALLFIVES_MAX_MESSAGE_BYTES",
        default_value_t = 16384,
        value_parser = clap::value_parser!(u32).range(1024..=4 * 1024 * 1024)
    )]
    pub max_message_bytes: u32,

    /// Pause between reporting NOT_SERVING and closing the listener at shutdown, in
    /// milliseconds, so health probes and load balancers stop sending new calls first.
    #[arg(long, env = "ALLFIVES_SHUTDOWN_DELAY_MS", default_value_t = 2000)]
    pub shutdown_delay_ms: u64,

    /// Longest wait for in-flight calls to finish at shutdown, in seconds.
    #[arg(long, env = "ALLFIVES_DRAIN_SECONDS", default_value_t = 10)]
    pub drain_seconds: u64,

    /// Connections open at once; at the cap the connection idle the longest (else one
    /// holding only Watch streams) is closed (GOAWAY) to make room, and with every
    /// connection busy the server stops accepting (new ones wait in the kernel's
    /// backlog) until one closes or turns idle. Keep it below the open-files limit. An
    /// idle HTTP/2 connection holds about 16 KiB: 4096 of them about 66 MiB.
    #[arg(
        long,
        env = "ALLFIVES_MAX_CONNECTIONS",
        default_value_t = 4096,
        value_parser = clap::value_parser!(u32).range(1..=1_000_000)
    )]
    pub max_connections: u32,

    /// Longest a new connection may take to send the HTTP/2 preface (its first 24
    /// bytes), in milliseconds; then the server closes it.
    #[arg(
        long,
        env = "ALLFIVES_HANDSHAKE_TIMEOUT_MS",
        default_value_t = 10_000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub handshake_timeout_ms: u64,

    /// Close connections gracefully after about this many seconds (each within ±10%)
    /// so clients reconnect and spread over replicas; calls in flight finish and no
    /// call is lost. 0 keeps them open.
    #[arg(long, env = "ALLFIVES_MAX_CONNECTION_AGE_SECS", default_value_t = 300)]
    pub max_connection_age_secs: u64,

    /// HTTP/2 keepalive ping interval, in seconds; 0 turns pings off.
    #[arg(long, env = "ALLFIVES_HTTP2_KEEPALIVE_SECS", default_value_t = 30)]
    pub http2_keepalive_secs: u64,

    /// Browser origins allowed to call through gRPC-Web, comma separated
    /// (`https://app.example.com`), or `*` for any.
    #[arg(
        long,
        env = "ALLFIVES_CORS_ORIGINS",
        default_value = "*",
        value_parser = parse_cors_origins
    )]
    pub cors_origins: CorsOrigins,

    /// Tokio worker threads (default: the number of CPUs available to the process).
    #[arg(
        long,
        env = "ALLFIVES_WORKER_THREADS",
        value_parser = clap::value_parser!(u16).range(1..)
    )]
    pub worker_threads: Option<u16>,

    /// Run on tokio's current-thread scheduler: one thread serves every connection (HARD
    /// searches still go to the blocking pool). On one CPU a call then costs the server
    /// about a quarter less CPU than on the default multi-thread runtime with one worker
    /// (docs/PERFORMANCE.md, "Runtimes"). Not with --worker-threads.
    #[arg(
        long,
        env = "ALLFIVES_CURRENT_THREAD",
        value_parser = clap::builder::FalseyValueParser::new(),
        conflicts_with = "worker_threads"
    )]
    pub current_thread: bool,

    /// Games kept in memory by the token they were last sealed in, so that the next call
    /// of a match that comes back to this replica skips decrypting and decoding its
    /// token (rounded up to a power of two; 0 turns the cache off). Nearly every such
    /// call hits while the matches in play here are under about half of it; a game
    /// kept takes 0.5 to 2.5 KiB. Answers are the same either way (docs/PERFORMANCE.md,
    /// "The token cache").
    #[arg(
        long,
        env = "ALLFIVES_TOKEN_CACHE",
        default_value_t = 4096,
        value_parser = clap::value_parser!(u32).range(0..=1 << 20)
    )]
    pub token_cache: u32,

    /// Take the `seed` a NewGame request names, and keep it when seats are claimed, so
    /// that a match can be replayed: for tests, the walkthrough and replays only.
    /// Whoever picks a seed knows every hand, so by default a client's seed is refused
    /// (PERMISSION_DENIED, SEED_NOT_ALLOWED) and every seed is the server's own
    /// (docs/security.md).
    #[arg(long, env = "ALLFIVES_ALLOW_CLIENT_SEEDS")]
    pub allow_client_seeds: bool,

    /// Turn clocks: how late past a seat's deadline, in milliseconds, its move is still
    /// taken and ClaimTimeout still refused (a move sent in time may arrive this late).
    /// At least --max-clock-skew-ms, so that a replica whose clock runs that far ahead
    /// never takes a timeout before the deadline by the others' clocks
    /// (docs/rules.md section 11).
    #[arg(
        long,
        env = "ALLFIVES_CLOCK_LAG_GRACE_MS",
        default_value_t = 2000,
        value_parser = clap::value_parser!(u64).range(0..=60_000)
    )]
    pub clock_lag_grace_ms: u64,

    /// Turn clocks: how far, in milliseconds, the replicas' clocks may disagree (they
    /// run NTP). A changing call on a clocked match whose last move another replica
    /// wrote later than this replica's clock reads, by more than this, is refused
    /// UNAVAILABLE CLOCK_SKEW and counted (allfives_clock_skew_refusals_total): one of
    /// the two clocks is off (docs/operations.md, "Clocks").
    #[arg(
        long,
        env = "ALLFIVES_MAX_CLOCK_SKEW_MS",
        default_value_t = 1000,
        value_parser = clap::value_parser!(u64).range(0..=60_000)
    )]
    pub max_clock_skew_ms: u64,

    /// The clock turn clocks are judged by: the system's; a test sets its own. Not a
    /// flag.
    #[arg(skip)]
    pub clock: crate::server_clock::ServerClock,

    /// Deals of the unseen tiles a server-played HARD bot samples for each move (1 to
    /// 512, the cap on a Suggest's): more is stronger and slower, about linearly
    /// (docs/BOTS.md has the time a call with several HARD bots takes).
    #[arg(
        long,
        env = "ALLFIVES_BOT_WORLDS",
        default_value_t = 128,
        value_parser = clap::value_parser!(u32)
            .range(1..=i64::from(crate::service::suggest::SUGGEST_MAX_WORLDS))
    )]
    pub bot_worlds: u32,

    /// The least time, in milliseconds, a call takes for each full search its
    /// server-played HARD bots made (a smaller search in proportion), counted from
    /// when the search gets a core: a bot thinks
    /// longer or shorter depending on its tiles, so calls are made to last this long
    /// and their time tells nothing about them. Set it above a search's usual time
    /// (docs/BOTS.md); 0 turns it off.
    #[arg(
        long,
        env = "ALLFIVES_BOT_MOVE_FLOOR_MS",
        default_value_t = 8,
        value_parser = clap::value_parser!(u64).range(0..=1000)
    )]
    pub bot_move_floor_ms: u64,

    /// How long, in milliseconds, the last HARD search of a full search queue may
    /// expect to wait for a core: the queue holds as many searches as the cores get
    /// through in this time, at the time a search has lately held a core (2 to 64 a
    /// core); past it, searches are refused SEARCH_QUEUE_FULL (docs/operations.md).
    #[arg(
        long,
        env = "ALLFIVES_SEARCH_WAIT_BUDGET_MS",
        default_value_t = 250,
        value_parser = clap::value_parser!(u64).range(0..=10_000)
    )]
    pub search_wait_budget_ms: u64,

    /// A request header that the gateway in front of the server sets to the client's
    /// address (e.g. `x-forwarded-for`, of which the last entry is read: the one the
    /// gateway appended), so that HARD searches take turns by the players' addresses
    /// rather than the gateway's. Set it only when every call comes through a gateway
    /// that writes it: a client that reaches the server directly could name any
    /// address. Off by default: the client is the peer's address.
    #[arg(
        long,
        env = "ALLFIVES_TRUSTED_CLIENT_HEADER",
        value_parser = parse_header_name
    )]
    pub trusted_client_header: Option<HeaderName>,

    /// Where the latest state of each match is kept, so that a move from an older
    /// token (a take-back, a device behind) is refused ABORTED STATE_STALE instead of
    /// starting a branch: `none` (the default: stateless, every token opens), `memory`
    /// (this process: one replica only), `redis` or `redis-cluster` (a Redis-protocol
    /// server or cluster at `--match-store-url`, shared by every replica;
    /// docs/security.md, "The match store").
    #[arg(long, env = "ALLFIVES_MATCH_STORE", value_enum, default_value_t = StoreKind::None)]
    pub match_store: StoreKind,

    /// How long the match store keeps a match after its last move, in seconds; a match
    /// it no longer has is refused (MATCH_FORGOTTEN) from then on.
    #[arg(
        long,
        env = "ALLFIVES_MATCH_STORE_TTL_SECS",
        default_value_t = 86_400,
        value_parser = clap::value_parser!(u64).range(1..=31_536_000)
    )]
    pub match_store_ttl_secs: u64,

    /// The Redis-protocol store's address, `redis://host:port`
    /// (`redis://:password@host:port` with a password; no TLS); for a cluster, some of
    /// its nodes, comma-separated.
    #[arg(
        long,
        env = "ALLFIVES_MATCH_STORE_URL",
        value_delimiter = ',',
        default_value = "redis://127.0.0.1:6379"
    )]
    pub match_store_url: Vec<String>,

    /// The most matches the memory store keeps (each with its latest token: about 600
    /// bytes); past it the one moved longest ago is forgotten.
    #[arg(
        long,
        env = "ALLFIVES_MATCH_STORE_CAPACITY",
        default_value_t = 100_000,
        value_parser = clap::value_parser!(u64).range(1..=100_000_000)
    )]
    pub match_store_capacity: u64,

    /// The most Watch streams open at once (about 6 KiB each, their connections apart);
    /// past it a Watch is refused RESOURCE_EXHAUSTED TOO_MANY_WATCHES
    /// (docs/RELIABILITY.md, the memory budget: the default fits the pod's 128 MiB with
    /// every other bound).
    #[arg(
        long,
        env = "ALLFIVES_MAX_WATCH_STREAMS",
        default_value_t = 1_000,
        value_parser = clap::value_parser!(u64).range(1..=10_000_000)
    )]
    pub max_watch_streams: u64,

    /// The most Watch streams open on one connection.
    #[arg(
        long,
        env = "ALLFIVES_MAX_WATCH_STREAMS_PER_CONNECTION",
        default_value_t = 8,
        value_parser = clap::value_parser!(u64).range(1..=1_000)
    )]
    pub max_watch_streams_per_connection: u64,

    /// The most Watch streams of one client (its address, IPv6 by its /64, or the
    /// address `--trusted-client-header` names): one client cannot take the replica's
    /// streams, however many connections it opens.
    #[arg(
        long,
        env = "ALLFIVES_MAX_WATCH_STREAMS_PER_CLIENT",
        default_value_t = 64,
        value_parser = clap::value_parser!(u64).range(1..=10_000_000)
    )]
    pub max_watch_streams_per_client: u64,

    /// Seconds a Watch stream stays silent before a heartbeat: under the idle timeout
    /// of every proxy between the server and its clients.
    #[arg(
        long,
        env = "ALLFIVES_WATCH_HEARTBEAT_SECS",
        default_value_t = 15,
        value_parser = clap::value_parser!(u64).range(1..=3_600)
    )]
    pub watch_heartbeat_secs: u64,

    /// Seconds an invite code lives (CreateInviteCode): long enough to read it out to
    /// a friend and have it typed; the shorter, the fewer codes live for a guesser
    /// (docs/security.md, "Invite codes").
    #[arg(
        long,
        env = "ALLFIVES_INVITE_TTL_SECS",
        default_value_t = 900,
        value_parser = clap::value_parser!(u64).range(10..=86_400)
    )]
    pub invite_ttl_secs: u64,

    /// Invite codes that may be tried in vain in a minute, counted across every
    /// replica of the match store; past it every OpenInviteCode is refused
    /// RESOURCE_EXHAUSTED INVITE_RATE_LIMITED until the minute is over. The backstop on
    /// guessing: it bounds what every guesser together can try (docs/security.md,
    /// "Invite codes"); each client is held to --invite-misses-per-client-per-minute
    /// long before it.
    #[arg(
        long,
        env = "ALLFIVES_INVITE_MISSES_PER_MINUTE",
        default_value_t = crate::store::invites::DEFAULT_MISSES_PER_MINUTE,
        value_parser = clap::value_parser!(u32).range(1..=1_000_000)
    )]
    pub invite_misses_per_minute: u32,

    /// Invite codes one client (its address, an IPv6 one by its /64, or the one
    /// --trusted-client-header names) may try in vain in a minute, counted across every
    /// replica of the match store; past it that client's OpenInviteCode calls, the
    /// right code's too, are refused RESOURCE_EXHAUSTED INVITE_RATE_LIMITED until the
    /// minute is over, and every other client's are answered as before. Far above
    /// what a person mistyping a code makes (docs/security.md, "Invite codes").
    #[arg(
        long,
        env = "ALLFIVES_INVITE_MISSES_PER_CLIENT_PER_MINUTE",
        default_value_t = crate::store::invites::DEFAULT_MISSES_PER_CLIENT_PER_MINUTE,
        value_parser = clap::value_parser!(u32).range(1..=1_000_000)
    )]
    pub invite_misses_per_client_per_minute: u32,
}

impl Config {
    /// What the service allows beyond the rules.
    pub fn policy(&self) -> crate::service::steps::Policy {
        crate::service::steps::Policy {
            allow_client_seeds: self.allow_client_seeds,
            bot_search: crate::engine::suggest::Search::worlds(Some(self.bot_worlds)),
            match_store: self.match_store != StoreKind::None,
            clock_lag_grace_ms: self.clock_lag_grace_ms,
            max_clock_skew_ms: self.max_clock_skew_ms,
            show_player_ids: self.show_player_ids,
        }
    }

    /// The match store `--match-store` names, if any, connected.
    pub async fn match_store(&self) -> Result<Option<crate::store::MatchStore>, redis::RedisError> {
        use crate::store::MatchStore;
        let capacity = usize::try_from(self.match_store_capacity)
            .ok()
            .and_then(std::num::NonZeroUsize::new)
            .unwrap_or(std::num::NonZeroUsize::MIN);
        let ttl = std::time::Duration::from_secs(self.match_store_ttl_secs);
        let invites = crate::store::InviteRules {
            ttl: std::time::Duration::from_secs(self.invite_ttl_secs),
            misses_per_minute: self.invite_misses_per_minute,
            misses_per_client_per_minute: self.invite_misses_per_client_per_minute,
        };
        Ok(match self.match_store {
            StoreKind::None => None,
            StoreKind::Memory => {
                Some(MatchStore::memory(capacity, ttl, invites).with_clock(self.clock.clone()))
            }
            StoreKind::Redis | StoreKind::RedisCluster => {
                let cluster = self.match_store == StoreKind::RedisCluster;
                let store = MatchStore::redis(&self.match_store_url, cluster, ttl, invites).await?;
                Some(store.with_clock(self.clock.clone()))
            }
        })
    }
}

/// The kinds of match store (`--match-store`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StoreKind {
    /// No store: the service keeps nothing between calls.
    None,
    /// This process's memory (one replica).
    Memory,
    /// A Redis-protocol server (Redis 7.0 or later, Valkey).
    Redis,
    /// A Redis Cluster.
    RedisCluster,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Readable text, coloured on a terminal.
    Human,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Key ring configuration text; `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyText(pub String);

impl fmt::Debug for KeyText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyText(<redacted>)")
    }
}

/// Which browser origins may call the service through gRPC-Web.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorsOrigins {
    /// Any origin (`*`).
    Any,
    /// Exactly these origins.
    List(Vec<HeaderValue>),
}

/// A configuration problem; the message names the option to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("give either --keys (ALLFIVES_KEYS) or --keys-file (ALLFIVES_KEYS_FILE), not both")]
    BothKeySources,
    #[error("--active-key-id needs --keys or --keys-file")]
    ActiveWithoutKeys,
    #[error("cannot read --keys-file {path}: {source}")]
    ReadKeysFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("bad token keys in {origin}: {source}")]
    Keys {
        origin: String,
        source: KeyRingError,
    },
    #[error(
        "--clock-lag-grace-ms ({grace}) must be at least --max-clock-skew-ms ({skew}): a \
         replica whose clock runs ahead by the skew would take timeouts early"
    )]
    GraceBelowSkew { grace: u64, skew: u64 },
    #[error(
        "give either --result-keys (ALLFIVES_RESULT_KEYS) or --result-keys-file \
         (ALLFIVES_RESULT_KEYS_FILE), not both"
    )]
    BothResultKeySources,
    #[error("--result-active-key-id needs --result-keys or --result-keys-file")]
    ResultActiveWithoutKeys,
    #[error("cannot read --result-keys-file {path}: {source}")]
    ReadResultKeysFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("bad result keys in {origin}: {source}")]
    ResultKeys {
        origin: String,
        source: KeyRingError,
    },
    #[error(
        "token key {0} is also a result key: whoever verifies results (a ranking server) \
         must not hold a key that opens tokens, which hold every hand"
    )]
    ResultKeyIsTokenKey(u8),
    #[error(
        "--allow-client-seeds with --result-keys: a player who chose the seed knows every \
         hand, so its matches' results must not be signed with keys verifiers trust (tests \
         and replays run without result keys: a random key signs)"
    )]
    ResultKeysWithClientSeeds,
    #[error(
        "{0} needs --pass-keys-file (ALLFIVES_PASS_KEYS_FILE): without pass keys passes are off"
    )]
    PassFlagWithoutKeys(&'static str),
    #[error("--pass-keys-file needs {0}: a pass is taken only for this service")]
    PassKeysWithout(&'static str),
    #[error("cannot read --pass-keys-file {path}: {source}")]
    ReadPassKeysFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("bad pass keys in --pass-keys-file {path}: {source}")]
    PassKeys {
        path: PathBuf,
        source: PassKeysError,
    },
    #[error(
        "a key in --pass-keys-file is also a result key: a result would carry a signature \
         the pass keys take; give each its own"
    )]
    PassKeyIsResultKey,
}

impl Config {
    /// Checks that the turn clocks' lag grace covers the skew allowed between replicas
    /// (docs/operations.md, "Clocks").
    pub fn check_clocks(&self) -> Result<(), ConfigError> {
        if self.clock_lag_grace_ms < self.max_clock_skew_ms {
            return Err(ConfigError::GraceBelowSkew {
                grace: self.clock_lag_grace_ms,
                skew: self.max_clock_skew_ms,
            });
        }
        Ok(())
    }

    /// The token key ring from `--keys` or `--keys-file`; with neither, a random key
    /// for this process only (and a warning, since its tokens die with the process).
    pub fn key_ring(&self) -> Result<KeyRing, ConfigError> {
        let (text, origin) = match (&self.keys, &self.keys_file) {
            (Some(_), Some(_)) => return Err(ConfigError::BothKeySources),
            (Some(KeyText(text)), None) => (text.clone(), "--keys (ALLFIVES_KEYS)".to_owned()),
            (None, Some(path)) => {
                let text =
                    std::fs::read_to_string(path).map_err(|source| ConfigError::ReadKeysFile {
                        path: path.clone(),
                        source,
                    })?;
                (text, format!("--keys-file {}", path.display()))
            }
            (None, None) => {
                if self.active_key_id.is_some() {
                    return Err(ConfigError::ActiveWithoutKeys);
                }
                let ring = KeyRing::ephemeral().map_err(|source| ConfigError::Keys {
                    origin: "a random key".to_owned(),
                    source,
                })?;
                tracing::warn!(
                    "no --keys or --keys-file given: sealing tokens with a random key; \
                     tokens will not survive a restart or work across replicas"
                );
                return Ok(ring);
            }
        };
        KeyRing::parse(&text, self.active_key_id)
            .map_err(|source| ConfigError::Keys { origin, source })
    }

    /// The result key ring from `--result-keys` or `--result-keys-file`; with neither,
    /// a random key for this process only (and a warning). Refused if one of its keys
    /// is a token key.
    pub fn result_keys(&self) -> Result<ResultKeys, ConfigError> {
        let (text, origin) = match (&self.result_keys, &self.result_keys_file) {
            (Some(_), Some(_)) => return Err(ConfigError::BothResultKeySources),
            (Some(KeyText(text)), None) => (
                text.clone(),
                "--result-keys (ALLFIVES_RESULT_KEYS)".to_owned(),
            ),
            (None, Some(path)) => {
                let text = std::fs::read_to_string(path).map_err(|source| {
                    ConfigError::ReadResultKeysFile {
                        path: path.clone(),
                        source,
                    }
                })?;
                (text, format!("--result-keys-file {}", path.display()))
            }
            (None, None) if self.result_active_key_id.is_some() => {
                return Err(ConfigError::ResultActiveWithoutKeys);
            }
            (None, None) => {
                let keys = ResultKeys::ephemeral().map_err(|source| ConfigError::ResultKeys {
                    origin: "a random key".to_owned(),
                    source,
                })?;
                tracing::warn!(
                    "no --result-keys or --result-keys-file given: signing results with a \
                     random key; they verify only against this process's key set"
                );
                return Ok(keys);
            }
        };
        if self.allow_client_seeds {
            return Err(ConfigError::ResultKeysWithClientSeeds);
        }
        let keys = ResultKeys::parse(&text, self.result_active_key_id)
            .map_err(|source| ConfigError::ResultKeys { origin, source })?;
        // The token keys as configured (a random one cannot be a result key). Read
        // again here, so an unreadable file is key_ring's error to report.
        let tokens = match (&self.keys, &self.keys_file) {
            (Some(KeyText(text)), _) => Some(text.clone()),
            (None, Some(path)) => std::fs::read_to_string(path).ok(),
            (None, None) => None,
        };
        let entries = tokens
            .and_then(|t| parse_entries(&t).ok())
            .unwrap_or_default();
        if let Some((id, _)) = entries.iter().find(|(_, secret)| keys.holds_secret(secret)) {
            return Err(ConfigError::ResultKeyIsTokenKey(*id));
        }
        Ok(keys)
    }
}

impl Config {
    /// [`Config::passes`], refused if a pass key is one of `results`' keys.
    pub fn passes_beside(&self, results: &ResultKeys) -> Result<Option<Passes>, ConfigError> {
        match self.passes()? {
            Some(passes) if passes.shares_key_with(results.jwks_json()) => {
                Err(ConfigError::PassKeyIsResultKey)
            }
            passes => Ok(passes),
        }
    }

    /// The studio's pass keys and what a pass must say, from `--pass-keys-file` and the
    /// other `--pass-*` flags; `None` without the file (passes off), when every other pass
    /// flag must be unset too. Keys the set holds but the service does not take are
    /// logged, each with its reason.
    pub fn passes(&self) -> Result<Option<Passes>, ConfigError> {
        let Some(path) = &self.pass_keys_file else {
            let given = [
                (self.pass_issuer.is_some(), "--pass-issuer"),
                (self.pass_audience.is_some(), "--pass-audience"),
                (self.pass_type.is_some(), "--pass-type"),
                (self.pass_leeway_secs.is_some(), "--pass-leeway-secs"),
                (
                    self.pass_max_lifetime_secs.is_some(),
                    "--pass-max-lifetime-secs",
                ),
                (self.pass_required, "--pass-required"),
                (self.show_player_ids, "--show-player-ids"),
            ];
            return match given.iter().find(|(given, _)| *given) {
                Some((_, flag)) => Err(ConfigError::PassFlagWithoutKeys(flag)),
                None => Ok(None),
            };
        };
        let issuer = self
            .pass_issuer
            .clone()
            .ok_or(ConfigError::PassKeysWithout("--pass-issuer"))?;
        let audience = self
            .pass_audience
            .clone()
            .ok_or(ConfigError::PassKeysWithout("--pass-audience"))?;
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::ReadPassKeysFile {
                path: path.clone(),
                source,
            })?;
        let settings = PassSettings {
            issuer,
            audience,
            pass_type: self.pass_type.clone(),
            leeway_secs: self.pass_leeway_secs.unwrap_or(passes::DEFAULT_LEEWAY_SECS),
            max_lifetime_secs: self
                .pass_max_lifetime_secs
                .unwrap_or(passes::DEFAULT_MAX_LIFETIME_SECS),
            required: self.pass_required,
            show_player_ids: self.show_player_ids,
        };
        let passes = Passes::parse(&text, settings).map_err(|source| ConfigError::PassKeys {
            path: path.clone(),
            source,
        })?;
        for skipped in passes.skipped() {
            tracing::warn!(file = %path.display(), "a pass key skipped: {skipped}");
        }
        Ok(Some(passes))
    }
}

fn parse_key_text(s: &str) -> Result<KeyText, std::convert::Infallible> {
    Ok(KeyText(s.to_owned()))
}

/// A header name, as HTTP/2 sends them (lower case); gRPC's own headers and pseudo
/// headers are no client's address.
fn parse_header_name(s: &str) -> Result<HeaderName, String> {
    let name = HeaderName::from_bytes(s.trim().as_bytes())
        .map_err(|_| format!("{s:?} is not a header name"))?;
    if name.as_str().starts_with("grpc-") || name.as_str() == "te" || name == "content-type" {
        return Err(format!("{s:?} is a header gRPC itself uses"));
    }
    Ok(name)
}

fn parse_metrics_addr(s: &str) -> Result<Option<SocketAddr>, String> {
    match s.trim() {
        "" | "off" => Ok(None),
        addr => addr.parse().map(Some).map_err(|e| {
            format!("not an address like `[::]:9090` or `0.0.0.0:9090`, nor `off`: {e}")
        }),
    }
}

fn parse_log_filter(s: &str) -> Result<String, String> {
    tracing_subscriber::EnvFilter::builder()
        .parse(s)
        .map(|_| s.to_owned())
        .map_err(|e| format!("not a valid log filter: {e}"))
}

fn parse_cors_origins(s: &str) -> Result<CorsOrigins, String> {
    let entries: Vec<&str> = s
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    if entries.is_empty() {
        return Err("give `*` or at least one origin".to_owned());
    }
    if entries.contains(&"*") {
        return if entries.len() == 1 {
            Ok(CorsOrigins::Any)
        } else {
            Err("`*` cannot be combined with other origins".to_owned())
        };
    }
    entries
        .into_iter()
        .map(|origin| {
            // Browsers send `scheme://host[:port]`, no path and no trailing slash.
            let well_formed = origin.split_once("://").is_some_and(|(scheme, host)| {
                !scheme.is_empty() && !host.is_empty() && !host.contains('/')
            });
            match HeaderValue::from_str(origin) {
                Ok(value) if well_formed => Ok(value),
                _ => Err(format!(
                    "`{origin}` is not an origin like `https://app.example.com` \
                     (no path, no trailing slash)"
                )),
            }
        })
        .collect::<Result<_, _>>()
        .map(CorsOrigins::List)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    const KEY_A: &str = "1:0000000000000000000000000000000000000000000000000000000000000001";
    const KEY_B: &str = "2:00000000000000000000000000000000000000000000000000000000000000ff";

    fn parse(args: &[&str]) -> Result<Config, clap::Error> {
        Config::try_parse_from(std::iter::once("allfives").chain(args.iter().copied()))
    }

    #[test]
    fn clap_definition_is_consistent() {
        Config::command().debug_assert();
    }

    #[test]
    fn every_option_has_an_env_var() {
        for arg in Config::command().get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            let env = arg.get_env().and_then(|e| e.to_str());
            assert!(
                env.is_some_and(|e| e.starts_with("ALLFIVES_")),
                "--{id} has no ALLFIVES_* env var"
            );
        }
    }

    #[test]
    fn defaults() {
        // Only meaningful when no ALLFIVES_* variable is set in the test environment.
        if std::env::vars().any(|(k, _)| k.starts_with("ALLFIVES_")) {
            return;
        }
        let c = parse(&[]).expect("defaults parse");
        assert_eq!(c.addr, "[::]:50051".parse().expect("addr"));
        assert_eq!(c.metrics_addr, Some("[::]:9090".parse().expect("addr")));
        assert_eq!(c.keys, None);
        assert_eq!(c.keys_file, None);
        assert_eq!(c.active_key_id, None);
        assert_eq!(c.log_format, LogFormat::Human);
        assert_eq!(c.log_filter, "info");
        assert_eq!(c.request_timeout_ms, 5000);
        assert_eq!(c.concurrency_limit, 256);
        assert_eq!(c.max_message_bytes, 16384);
        assert_eq!(c.max_calls_in_flight, 512);
        assert_eq!(c.body_timeout_ms, 2000);
        assert_eq!(c.idle_timeout_secs, 120);
        assert_eq!(c.shutdown_delay_ms, 2000);
        assert_eq!(c.drain_seconds, 10);
        assert_eq!(c.max_connections, 4096);
        assert_eq!(c.handshake_timeout_ms, 10_000);
        assert_eq!(c.max_connection_age_secs, 300);
        assert_eq!(c.http2_keepalive_secs, 30);
        assert_eq!(c.cors_origins, CorsOrigins::Any);
        assert_eq!(c.worker_threads, None);
        assert!(!c.current_thread);
        assert_eq!(c.token_cache, 4096);
        assert_eq!(
            std::time::Duration::from_millis(c.search_wait_budget_ms),
            crate::service::searches::DEFAULT_WAIT_BUDGET
        );
        assert_eq!(c.trusted_client_header, None);
        assert_eq!(
            (
                c.invite_misses_per_minute,
                c.invite_misses_per_client_per_minute
            ),
            (6_000, 30)
        );
    }

    #[test]
    fn flags() {
        let c = parse(&[
            "--addr",
            "127.0.0.1:9000",
            "--metrics-addr",
            "127.0.0.1:9100",
            "--keys",
            &format!("{KEY_A},{KEY_B}"),
            "--active-key-id",
            "2",
            "--log-format",
            "json",
            "--log-filter",
            "warn,allfives=debug",
            "--request-timeout-ms",
            "250",
            "--concurrency-limit",
            "8",
            "--max-message-bytes",
            "4096",
            "--shutdown-delay-ms",
            "0",
            "--drain-seconds",
            "3",
            "--max-connections",
            "50",
            "--handshake-timeout-ms",
            "1500",
            "--max-connection-age-secs",
            "0",
            "--http2-keepalive-secs",
            "0",
            "--cors-origins",
            "https://a.example, http://localhost:5173",
            "--worker-threads",
            "1",
            "--search-wait-budget-ms",
            "100",
            "--trusted-client-header",
            "X-Forwarded-For",
        ])
        .expect("flags parse");
        assert_eq!(c.search_wait_budget_ms, 100);
        assert_eq!(
            c.trusted_client_header,
            Some(HeaderName::from_static("x-forwarded-for"))
        );
        assert_eq!(c.addr, "127.0.0.1:9000".parse().expect("addr"));
        assert_eq!(
            c.metrics_addr,
            Some("127.0.0.1:9100".parse().expect("addr"))
        );
        assert_eq!(c.log_format, LogFormat::Json);
        assert_eq!(c.log_filter, "warn,allfives=debug");
        assert_eq!(c.request_timeout_ms, 250);
        assert_eq!(c.concurrency_limit, 8);
        assert_eq!(c.max_message_bytes, 4096);
        assert_eq!(c.shutdown_delay_ms, 0);
        assert_eq!(c.drain_seconds, 3);
        assert_eq!(c.max_connections, 50);
        assert_eq!(c.handshake_timeout_ms, 1500);
        assert_eq!(c.max_connection_age_secs, 0);
        assert_eq!(c.http2_keepalive_secs, 0);
        assert_eq!(
            c.cors_origins,
            CorsOrigins::List(vec![
                HeaderValue::from_static("https://a.example"),
                HeaderValue::from_static("http://localhost:5173"),
            ])
        );
        assert_eq!(c.worker_threads, Some(1));
        let ring = c.key_ring().expect("ring");
        assert!(!ring.is_ephemeral());
        assert_eq!(ring.active_id(), 2);
        assert_eq!(ring.ids().collect::<Vec<_>>(), vec![2, 1]);
    }

    #[test]
    fn rejects_bad_values() {
        for args in [
            &["--addr", "localhost"][..],
            &["--metrics-addr", "localhost:9090"],
            &["--metrics-addr", "9090"],
            &["--active-key-id", "256"],
            &["--log-format", "xml"],
            &["--log-filter", "allfives=loud"],
            &["--request-timeout-ms", "0"],
            &["--concurrency-limit", "0"],
            &["--max-message-bytes", "100"],
            &["--drain-seconds", "-1"],
            &["--max-connections", "0"],
            &["--max-connections", "1000001"],
            &["--handshake-timeout-ms", "0"],
            &["--cors-origins", "https://a.example/"],
            &["--cors-origins", "a.example"],
            &["--cors-origins", "*,https://a.example"],
            &["--cors-origins", ","],
            &["--worker-threads", "0"],
            &["--current-thread", "--worker-threads", "2"],
            &["--token-cache", "-1"],
            &["--token-cache", "1048577"],
            &["--search-wait-budget-ms", "10001"],
            &["--trusted-client-header", "x forwarded"],
            &["--trusted-client-header", ""],
            &["--trusted-client-header", "grpc-timeout"],
            &["--trusted-client-header", ":authority"],
            &["--keys", KEY_A, "--keys-file", "/keys"],
            &["--no-such-flag"],
        ] {
            assert!(parse(args).is_err(), "accepted {args:?}");
        }
    }

    #[test]
    fn current_thread_runtime_on_request() {
        assert!(parse(&["--current-thread"]).expect("parse").current_thread);
    }

    #[test]
    fn the_token_cache_can_be_sized_or_turned_off() {
        assert_eq!(
            parse(&["--token-cache", "0"]).expect("parse").token_cache,
            0
        );
        let c = parse(&["--token-cache", "1048576"]).expect("parse");
        assert_eq!(c.token_cache, 1 << 20);
    }

    #[test]
    fn metrics_endpoint_can_be_turned_off() {
        for off in ["off", "", " off "] {
            let c = parse(&["--metrics-addr", off]).expect("parse");
            assert_eq!(c.metrics_addr, None, "{off:?}");
        }
        let c = parse(&["--metrics-addr", "[::1]:9464"]).expect("parse");
        assert_eq!(c.metrics_addr, Some("[::1]:9464".parse().expect("addr")));
    }

    #[test]
    fn the_clock_grace_must_cover_the_skew_allowed() {
        let defaults = parse(&[]).expect("parse");
        assert_eq!(
            (defaults.clock_lag_grace_ms, defaults.max_clock_skew_ms),
            (2000, 1000)
        );
        assert!(defaults.check_clocks().is_ok());
        let equal = parse(&["--clock-lag-grace-ms", "500", "--max-clock-skew-ms", "500"]);
        assert!(equal.expect("parse").check_clocks().is_ok());
        let below = parse(&["--clock-lag-grace-ms", "400", "--max-clock-skew-ms", "500"]);
        assert!(matches!(
            below.expect("parse").check_clocks(),
            Err(ConfigError::GraceBelowSkew {
                grace: 400,
                skew: 500
            })
        ));
        assert!(parse(&["--clock-lag-grace-ms", "60001"]).is_err());
    }

    #[test]
    fn bot_worlds_are_capped_as_a_suggests_are() {
        assert_eq!(
            parse(&["--bot-worlds", "512"]).expect("parse").bot_worlds,
            512
        );
        for refused in ["0", "513", "1024"] {
            assert!(parse(&["--bot-worlds", refused]).is_err(), "{refused}");
        }
    }

    #[test]
    fn the_match_store_is_off_unless_named() {
        let c = parse(&[]).expect("defaults parse");
        assert_eq!(c.match_store, StoreKind::None);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        assert!(runtime.block_on(c.match_store()).expect("none").is_none());
        let c = parse(&["--match-store", "memory", "--match-store-capacity", "8"]).expect("parse");
        let store = runtime.block_on(c.match_store()).expect("memory");
        assert!(format!("{store:?}").contains("Memory"), "{store:?}");
        let c = parse(&[
            "--match-store",
            "redis-cluster",
            "--match-store-url",
            "redis://a:1,redis://b:2",
        ])
        .expect("parse");
        assert_eq!(c.match_store, StoreKind::RedisCluster);
        assert_eq!(c.match_store_url, ["redis://a:1", "redis://b:2"]);
        for refused in [
            &["--match-store", "postgres"][..],
            &["--match-store-ttl-secs", "0"],
            &["--match-store-capacity", "0"],
        ] {
            assert!(parse(refused).is_err(), "{refused:?}");
        }
    }

    #[test]
    fn keys_are_never_printed() {
        let c = parse(&["--keys", KEY_A]).expect("parse");
        assert!(!format!("{c:?}").contains(&KEY_A[2..]));
    }

    #[test]
    fn key_ring_from_file() {
        let path = std::env::temp_dir().join(format!("allfives-keys-{}", std::process::id()));
        std::fs::write(&path, format!("# rotated 2026-01\n{KEY_B}\n{KEY_A}\n")).expect("write");
        let c = parse(&["--keys-file", path.to_str().expect("utf-8 path")]).expect("parse");
        let ring = c.key_ring();
        std::fs::remove_file(&path).expect("remove");
        let ring = ring.expect("ring");
        assert_eq!(ring.active_id(), 2);
    }

    #[test]
    fn key_ring_errors() {
        let missing = parse(&["--keys-file", "/nonexistent/allfives-keys"]).expect("parse");
        let err = missing.key_ring().expect_err("missing file");
        assert!(matches!(err, ConfigError::ReadKeysFile { .. }), "{err}");
        assert!(err.to_string().contains("/nonexistent/allfives-keys"));

        let bad = parse(&["--keys", "1:abcd"]).expect("parse");
        let err = bad.key_ring().expect_err("short key");
        assert!(err.to_string().contains("--keys"), "{err}");

        let unknown = parse(&["--keys", KEY_A, "--active-key-id", "9"]).expect("parse");
        assert!(matches!(
            unknown.key_ring(),
            Err(ConfigError::Keys {
                source: KeyRingError::UnknownActive(9),
                ..
            })
        ));

        let mut both = parse(&["--keys", KEY_A]).expect("parse");
        both.keys_file = Some("/keys".into());
        assert!(matches!(both.key_ring(), Err(ConfigError::BothKeySources)));
    }

    #[test]
    fn no_keys_means_ephemeral() {
        let mut c = parse(&[]).expect("parse");
        c.keys = None;
        c.keys_file = None;
        c.active_key_id = None;
        assert!(c.key_ring().expect("ring").is_ephemeral());
        c.active_key_id = Some(1);
        assert!(matches!(c.key_ring(), Err(ConfigError::ActiveWithoutKeys)));
    }

    #[test]
    fn result_keys_are_random_unless_given_their_own_and_never_a_token_key() {
        let none = parse(&[]).expect("parse");
        let random = none.result_keys().expect("a random key");
        assert!(random.is_ephemeral());
        assert_ne!(
            random.signing_kid(),
            none.result_keys().expect("another").signing_kid(),
            "a new random key each time"
        );
        let alone = parse(&["--result-active-key-id", "1"]).expect("parse");
        assert!(matches!(
            alone.result_keys(),
            Err(ConfigError::ResultActiveWithoutKeys)
        ));

        let theirs = format!("5:{}", "ab".repeat(32));
        let c = parse(&["--keys", KEY_A, "--result-keys", &theirs]).expect("parse");
        let keys = c.result_keys().expect("ring");
        assert!(!keys.is_ephemeral());
        assert!(
            !format!("{c:?}").contains(&"ab".repeat(32)),
            "never printed"
        );
        assert_eq!(keys.jwks().keys.len(), 1);

        // A token key given as a result key too (under another id): refused, naming it.
        let (_, secret) = KEY_A.split_once(':').expect("id:key");
        let shared = format!("{theirs}\n9:{secret}");
        let c = parse(&["--keys", KEY_A, "--result-keys", &shared]).expect("parse");
        let err = c.result_keys().expect_err("a token key");
        assert!(matches!(err, ConfigError::ResultKeyIsTokenKey(_)), "{err}");

        let bad = parse(&["--result-keys", "1:abcd"]).expect("parse");
        let err = bad.result_keys().expect_err("short key");
        assert!(err.to_string().contains("--result-keys"), "{err}");

        // A server that takes client seeds signs with a random key only.
        let seeded = parse(&["--allow-client-seeds", "--result-keys", &theirs]).expect("parse");
        assert!(matches!(
            seeded.result_keys(),
            Err(ConfigError::ResultKeysWithClientSeeds)
        ));
        let random = parse(&["--allow-client-seeds"]).expect("parse");
        assert!(random.result_keys().expect("a random key").is_ephemeral());
        assert!(parse(&["--result-issuer", ""]).is_err(), "an empty issuer");
    }

    #[test]
    fn passes_are_off_without_their_key_file_and_every_pass_flag_needs_it() {
        let none = parse(&[]).expect("parse");
        assert!(none.passes().expect("off").is_none());
        assert!(!none.pass_required && !none.show_player_ids);
        for flag in [
            &["--pass-issuer", "https://login.example"][..],
            &["--pass-audience", "allfives"],
            &["--pass-type", "pass+jwt"],
            &["--pass-leeway-secs", "0"],
            &["--pass-max-lifetime-secs", "60"],
            &["--pass-required"],
            &["--show-player-ids"],
        ] {
            let c = parse(flag).expect("parse");
            let err = c.passes().expect_err("needs the file");
            assert!(
                matches!(err, ConfigError::PassFlagWithoutKeys(named) if named == flag[0]),
                "{flag:?}: {err}"
            );
            assert!(err.to_string().contains("--pass-keys-file"), "{err}");
        }
    }

    /// A pass key that is also a result key: refused at start (a result would carry a
    /// signature the pass keys take); another result key: taken.
    #[test]
    fn a_pass_key_may_not_be_a_result_key() {
        // RFC 8032 section 7.1's first key, as a result key and in the studio's set.
        let secret = "1:9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
        let path = std::env::temp_dir().join(format!(
            "allfives-config-pass-is-result-{}.json",
            std::process::id()
        ));
        let set = r#"{"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "k",
                      "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#;
        std::fs::write(&path, set).expect("write");
        let path = path.to_str().expect("utf-8").to_owned();
        let passes = [
            "--pass-keys-file",
            &path,
            "--pass-issuer",
            "i",
            "--pass-audience",
            "a",
        ];
        let same = parse(&[&passes[..], &["--result-keys", secret]].concat()).expect("parse");
        let results = same.result_keys().expect("result keys");
        assert!(matches!(
            same.passes_beside(&results),
            Err(ConfigError::PassKeyIsResultKey)
        ));
        let other = parse(&passes).expect("parse");
        let random = other.result_keys().expect("a random result key");
        assert!(other.passes_beside(&random).expect("taken").is_some());
    }

    #[test]
    fn passes_from_the_studio_s_key_set_file() {
        let jwks = format!(
            "{}/tests/fixtures/pass/jwks.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let base = [
            "--pass-keys-file",
            &jwks,
            "--pass-issuer",
            "https://login.example",
            "--pass-audience",
            "allfives",
        ];
        let c = parse(&base).expect("parse");
        let passes = c.passes().expect("read").expect("passes on");
        assert_eq!(
            passes.settings(),
            &PassSettings {
                issuer: "https://login.example".into(),
                audience: "allfives".into(),
                pass_type: None,
                leeway_secs: 60,
                max_lifetime_secs: 86_400,
                required: false,
                show_player_ids: false,
            }
        );
        assert_eq!(
            passes.key_ids().collect::<Vec<_>>(),
            ["ed25519-1", "p256-1", "rsa2048-1"]
        );
        assert_eq!(passes.skipped().len(), 2, "P-384 and RSA 1024");

        let mut all = base.to_vec();
        all.extend([
            "--pass-type",
            "pass+jwt",
            "--pass-leeway-secs",
            "0",
            "--pass-max-lifetime-secs",
            "31536000",
            "--pass-required",
            "--show-player-ids",
        ]);
        let passes = parse(&all)
            .expect("parse")
            .passes()
            .expect("read")
            .expect("on");
        let settings = passes.settings();
        assert_eq!(settings.pass_type.as_deref(), Some("pass+jwt"));
        assert_eq!(
            (settings.leeway_secs, settings.max_lifetime_secs),
            (0, 31_536_000)
        );
        assert!(passes.required() && passes.show_player_ids());

        // The issuer and the audience are needed with the file.
        let c = parse(&base[..4]).expect("parse");
        assert!(matches!(
            c.passes(),
            Err(ConfigError::PassKeysWithout("--pass-audience"))
        ));
        let c = parse(&[&base[..2], &base[4..]].concat()).expect("parse");
        assert!(matches!(
            c.passes(),
            Err(ConfigError::PassKeysWithout("--pass-issuer"))
        ));
        for refused in [
            &["--pass-issuer", ""][..],
            &["--pass-audience", ""],
            &["--pass-type", ""],
            &["--pass-leeway-secs", "301"],
            &["--pass-max-lifetime-secs", "59"],
            &["--pass-max-lifetime-secs", "31536001"],
        ] {
            assert!(parse(refused).is_err(), "{refused:?}");
        }
    }

    #[test]
    fn pass_key_file_errors_name_the_file_and_the_reason() {
        let flags = |path: &str| {
            parse(&[
                "--pass-keys-file",
                path,
                "--pass-issuer",
                "i",
                "--pass-audience",
                "a",
            ])
            .expect("parse")
        };
        let err = flags("/nonexistent/allfives-jwks.json")
            .passes()
            .expect_err("missing");
        assert!(matches!(err, ConfigError::ReadPassKeysFile { .. }), "{err}");
        assert!(
            err.to_string().contains("/nonexistent/allfives-jwks.json"),
            "{err}"
        );

        let path = std::env::temp_dir().join(format!("allfives-jwks-{}", std::process::id()));
        let path_text = path.to_str().expect("utf-8 path").to_owned();
        for (text, reason) in [
            ("{", "not JSON"),
            (r#"{"keys": {}}"#, "not a JWK Set"),
            (
                r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#,
                "a symmetric (oct) key",
            ),
        ] {
            std::fs::write(&path, text).expect("write");
            let err = flags(&path_text).passes().expect_err(text);
            assert!(matches!(err, ConfigError::PassKeys { .. }), "{err}");
            let shown = err.to_string();
            assert!(
                shown.contains(&path_text) && shown.contains(reason),
                "{shown}"
            );
        }
        std::fs::remove_file(&path).expect("remove");
    }
}
