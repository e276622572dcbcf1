//! Prometheus metrics: what the server counts. The HTTP endpoint that shows it is
//! [`endpoint`] ([`serve_metrics`]).
//!
//! Counting is a relaxed atomic add into fixed arrays indexed by small enums (the gRPC
//! route, the status code, the kind of move, the token refusal): no lock, no hashing and
//! no allocation on the call path. At scrape time a [`Collector`] reads the atomics and
//! `prometheus-client` writes the OpenMetrics text. Every metric and label is listed in
//! `docs/metrics.md`.
//!

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};
use tonic::Code;

use crate::proto::v1 as pb;
use crate::routes::{ROUTE_COUNT, ROUTES, Route};
use crate::service::searches::Searches;
use crate::state::cache::CacheCounts;
use crate::store::RateLimit;

#[cfg(feature = "server")]
mod endpoint;
#[cfg(feature = "server")]
pub use endpoint::serve_metrics;

/// The content type of the exposition `GET /metrics` answers.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The prefix of every metric name.
const PREFIX: &str = "allfives";

/// The `service` and `method` labels of calls on a path the server does not serve.
const OTHER: (&str, &str) = ("other", "other");

/// A call's row in the per-route arrays: its route's place in the table, or the last
/// row for any other path (answered UNIMPLEMENTED), so the `service` and `method` labels
/// have a fixed, small set of values whatever paths clients send.
fn row(route: Option<&Route>) -> usize {
    route.map_or(ROUTE_COUNT, |r| r.index)
}

/// The rows: every route, then the other paths'.
const ROWS: usize = ROUTE_COUNT + 1;

/// The `service` and `method` label values of a row, and whether its calls are timed
/// (unary ones: for a stream the time to its response headers says little).
fn labels(row: usize) -> (&'static str, &'static str, bool) {
    match ROUTES.get(row) {
        Some(route) => (route.service, route.method, route.is_unary()),
        None => (OTHER.0, OTHER.1, false),
    }
}

/// The gRPC status codes by number, as the `code` label writes them.
const CODE_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// Upper bounds of the latency buckets, in nanoseconds (a call costs tens of
/// microseconds of server time; the default timeout is 5 s).
const LATENCY_BOUNDS_NANOS: [u64; 12] = [
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    100_000_000,
    1_000_000_000,
];

/// A latency histogram on atomics: a count per bucket (the last one is `+Inf`) and the
/// sum. The total count is the sum of the buckets, so it always matches `+Inf`.
#[derive(Debug, Default)]
struct Latency {
    buckets: [AtomicU64; LATENCY_BOUNDS_NANOS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Latency {
    fn observe(&self, elapsed: Duration) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let bucket = LATENCY_BOUNDS_NANOS
            .iter()
            .position(|&bound| nanos <= bound)
            .unwrap_or(LATENCY_BOUNDS_NANOS.len());
        self.buckets[bucket].fetch_add(1, Relaxed);
        self.sum_nanos.fetch_add(nanos, Relaxed);
    }
}

/// The kinds of move the `moves` counter tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MoveKind {
    Play,
    Draw,
    Pass,
}

const MOVE_KINDS: [(MoveKind, &str); 3] = [
    (MoveKind::Play, "play"),
    (MoveKind::Draw, "draw"),
    (MoveKind::Pass, "pass"),
];

/// What the `absences` counter tells apart: a seat's time ran out, its player left, a
/// bot took a seat, a player came back, a seat forfeited.
const ABSENCES: [&str; 5] = [
    "timed_out",
    "left",
    "bot_took_seat",
    "returned",
    "forfeited",
];

/// The token refusals counted, by their `ErrorInfo` reason.
const TOKEN_REASONS: [&str; 4] = [
    "TOKEN_MALFORMED",
    "TOKEN_UNKNOWN_KEY",
    "TOKEN_UNSUPPORTED_VERSION",
    "TOKEN_INVALID",
];

/// What an invite code's look-up in the store came to (`OpenInviteCode`): the code
/// live, a miss (counted against the client and the deployment), or refused with
/// nothing looked up, the client's misses or the deployment's spent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InviteLookup {
    Found,
    Missed,
    Refused(RateLimit),
}

impl InviteLookup {
    /// A look-up the store answered: the code's match, or none (a miss).
    pub fn of<T>(found: &Option<T>) -> InviteLookup {
        if found.is_some() {
            InviteLookup::Found
        } else {
            InviteLookup::Missed
        }
    }

    /// Its place in [`INVITE_LOOKUPS`].
    fn index(self) -> usize {
        match self {
            InviteLookup::Found => 0,
            InviteLookup::Missed => 1,
            InviteLookup::Refused(RateLimit::Client) => 2,
            InviteLookup::Refused(RateLimit::Deployment) => 3,
        }
    }
}

/// The `result` label of each [`InviteLookup`], by its index.
const INVITE_LOOKUPS: [&str; 4] = ["found", "missed", "client_limited", "deployment_limited"];

/// Every count, read by the registry at each scrape.
#[derive(Debug, Default)]
struct Counts {
    calls: [[AtomicU64; CODE_NAMES.len()]; ROWS],
    latency: [Latency; ROWS],
    games_created: AtomicU64,
    games_finished: AtomicU64,
    hands_dealt: AtomicU64,
    moves: [AtomicU64; MOVE_KINDS.len()],
    rejected_tokens: [AtomicU64; TOKEN_REASONS.len()],
    invite_lookups: [AtomicU64; INVITE_LOOKUPS.len()],
    absences: [AtomicU64; ABSENCES.len()],
    clock_skew_refusals: AtomicU64,
    /// The lookups of the token cache, once the server has made it.
    token_cache: OnceLock<Arc<CacheCounts>>,
    /// The HARD search queue, once the server has made it.
    searches: OnceLock<Arc<Searches>>,
    /// The Watch streams' bounds and count, once the server has made them.
    watches: OnceLock<Arc<crate::service::watch_limits::WatchLimits>>,
}

/// The server's metrics: shared (in an `Arc`) by the gRPC server, the API and the
/// metrics endpoint.
pub struct Metrics {
    registry: Registry,
    counts: Arc<Counts>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// Every metric at zero.
    pub fn new() -> Metrics {
        let counts = Arc::new(Counts::default());
        let mut registry = Registry::with_prefix(PREFIX);
        registry.register_collector(Box::new(Arc::clone(&counts)));
        Metrics { registry, counts }
    }

    /// A gRPC call on `route` (`None`: a path the server does not serve) ended with
    /// `code` after `elapsed` (unary calls are timed).
    pub fn call_done(&self, route: Option<&Route>, code: Code, elapsed: Duration) {
        let index = row(route);
        // `Code` has the wire numbers 0 to 16 as discriminants.
        let code = (code as usize).min(CODE_NAMES.len() - 1);
        self.counts.calls[index][code].fetch_add(1, Relaxed);
        if route.is_some_and(Route::is_unary) {
            self.counts.latency[index].observe(elapsed);
        }
    }

    /// A NewGame call succeeded.
    pub fn game_created(&self) {
        self.counts.games_created.fetch_add(1, Relaxed);
    }

    /// A changing call succeeded with these events.
    pub fn events(&self, events: &[pb::Event]) {
        use pb::event::Kind;
        let c = &self.counts;
        for event in events {
            let counter = match event.kind {
                Some(Kind::Dealt(_)) => &c.hands_dealt,
                Some(Kind::TilePlayed(_)) => &c.moves[MoveKind::Play as usize],
                Some(Kind::TileDrawn(_)) => &c.moves[MoveKind::Draw as usize],
                Some(Kind::Passed(_)) => &c.moves[MoveKind::Pass as usize],
                Some(Kind::GameEnded(_)) => &c.games_finished,
                Some(Kind::SeatAbsent(a)) => match a.reason {
                    r if r == pb::AbsenceReason::Left as i32 => &c.absences[1],
                    _ => &c.absences[0],
                },
                Some(Kind::BotTookSeat(_)) => &c.absences[2],
                Some(Kind::SeatReturned(_)) => &c.absences[3],
                Some(Kind::Forfeited(_)) => &c.absences[4],
                Some(Kind::HandEnded(_)) | None => continue,
            };
            counter.fetch_add(1, Relaxed);
        }
    }

    /// Shows these token cache lookups (the first ones given; the server gives those of
    /// the cache its API opens tokens with).
    pub fn watch_token_cache(&self, counts: Arc<CacheCounts>) {
        let _ = self.counts.token_cache.set(counts);
    }

    /// Shows the searches running and waiting in this queue (the first one given; the
    /// server gives its API's).
    pub fn watch_searches(&self, searches: Arc<Searches>) {
        let _ = self.counts.searches.set(searches);
    }

    pub fn watch_streams(&self, watches: Arc<crate::service::watch_limits::WatchLimits>) {
        let _ = self.counts.watches.set(watches);
    }

    /// A call was refused with this `ErrorInfo` reason; token refusals are counted.
    pub fn refused(&self, reason: &str) {
        if let Some(i) = TOKEN_REASONS.iter().position(|&r| r == reason) {
            self.counts.rejected_tokens[i].fetch_add(1, Relaxed);
        }
        if reason == "CLOCK_SKEW" {
            self.counts.clock_skew_refusals.fetch_add(1, Relaxed);
        }
    }

    /// An invite code was looked up in the store (or refused before it was).
    pub fn invite_looked_up(&self, lookup: InviteLookup) {
        self.counts.invite_lookups[lookup.index()].fetch_add(1, Relaxed);
    }

    /// The OpenMetrics text exposition of every metric.
    pub fn encode(&self) -> Result<String, fmt::Error> {
        let mut text = String::with_capacity(8 * 1024);
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

fn counter(encoder: &mut DescriptorEncoder, name: &str, help: &str, value: u64) -> fmt::Result {
    let metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    ConstCounter::new(value).encode(metric)
}

fn labelled_counter<const N: usize>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = ([(&'static str, &'static str); N], u64)>,
) -> fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in series {
        ConstCounter::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

fn labelled_gauge<const N: usize>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = ([(&'static str, &'static str); N], usize)>,
) -> fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in series {
        let value = i64::try_from(value).unwrap_or(i64::MAX);
        ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

impl Collector for Counts {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let e = &mut encoder;
        // Only the (route, code) pairs seen so far: most of the 170 never happen.
        labelled_counter(
            e,
            "grpc_calls",
            "gRPC calls handled, by service, method and status code.",
            (0..ROWS).flat_map(|row| {
                let (service, method, _) = labels(row);
                self.calls[row]
                    .iter()
                    .map(|n| n.load(Relaxed))
                    .zip(CODE_NAMES)
                    .filter(|&(n, _)| n > 0)
                    .map(move |(n, code)| {
                        (
                            [("service", service), ("method", method), ("code", code)],
                            n,
                        )
                    })
            }),
        )?;

        let mut family = e.encode_descriptor(
            "grpc_call_duration",
            "Time to answer unary gRPC calls, from routing to the response head, by method.",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for row in (0..ROWS).filter(|&row| labels(row).2) {
            let latency = &self.latency[row];
            let mut buckets = [(f64::INFINITY, 0u64); LATENCY_BOUNDS_NANOS.len() + 1];
            for (i, slot) in buckets.iter_mut().enumerate() {
                slot.1 = latency.buckets[i].load(Relaxed);
                if let Some(&bound) = LATENCY_BOUNDS_NANOS.get(i) {
                    slot.0 = bound as f64 / 1e9;
                }
            }
            let count = buckets.iter().map(|&(_, n)| n).sum();
            let sum = latency.sum_nanos.load(Relaxed) as f64 / 1e9;
            let (service, method, _) = labels(row);
            family
                .encode_family(&[("service", service), ("method", method)])?
                .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
        }

        counter(
            e,
            "games_created",
            "Games started (successful NewGame calls).",
            self.games_created.load(Relaxed),
        )?;
        counter(
            e,
            "games_finished",
            "Games won (a side reached the target).",
            self.games_finished.load(Relaxed),
        )?;
        counter(
            e,
            "hands_dealt",
            "Hands dealt (successful Deal calls).",
            self.hands_dealt.load(Relaxed),
        )?;
        labelled_counter(
            e,
            "moves",
            "Moves made, by kind: play (a tile placed), draw (a tile drawn), pass (a \
             seat passed with the boneyard empty).",
            MOVE_KINDS
                .iter()
                .map(|&(kind, name)| ([("kind", name)], self.moves[kind as usize].load(Relaxed))),
        )?;
        labelled_counter(
            e,
            "rejected_tokens",
            "State tokens refused, by ErrorInfo reason.",
            TOKEN_REASONS
                .iter()
                .zip(&self.rejected_tokens)
                .map(|(&reason, n)| ([("reason", reason)], n.load(Relaxed))),
        )?;
        labelled_counter(
            e,
            "absences",
            "Seats' absences in clocked or left matches, by event: timed_out (a seat's \
             time ran out), left (a player left), bot_took_seat, returned (a player took \
             its seat back from a bot), forfeited.",
            ABSENCES
                .iter()
                .zip(&self.absences)
                .map(|(&event, n)| ([("event", event)], n.load(Relaxed))),
        )?;
        counter(
            e,
            "clock_skew_refusals",
            "Changing calls refused CLOCK_SKEW: the match's last move was written by a \
             replica whose clock is ahead of this one's by more than --max-clock-skew-ms.",
            self.clock_skew_refusals.load(Relaxed),
        )?;
        labelled_counter(
            e,
            "invite_code_lookups",
            "Invite codes looked up in the match store (OpenInviteCode), by result: found \
             (a live code), missed (counted against the client and the deployment), \
             client_limited and deployment_limited (refused INVITE_RATE_LIMITED, nothing \
             looked up: the client's misses this minute, or everyone's, were spent).",
            INVITE_LOOKUPS
                .iter()
                .zip(&self.invite_lookups)
                .map(|(&result, n)| ([("result", result)], n.load(Relaxed))),
        )?;
        if let Some(searches) = self.searches.get() {
            let (running, waiting) = searches.counts();
            let (slots, places) = searches.capacity();
            labelled_gauge(
                e,
                "hard_searches",
                "HARD searches (Suggest's and server-played HARD bots') now: running (in a \
                 slot) and waiting (in the queue).",
                [
                    ([("state", "running")], running),
                    ([("state", "waiting")], waiting),
                ],
            )?;
            labelled_gauge(
                e,
                "hard_search_capacity",
                "Room for HARD searches: running (slots, one per core) and waiting (the \
                 queue, sized by the wait budget over a search's measured time); a search \
                 past both is refused SEARCH_QUEUE_FULL unless it ranks before a waiter.",
                [
                    ([("state", "running")], slots),
                    ([("state", "waiting")], places),
                ],
            )?;
            let (stopped, worlds_after) = searches.stops();
            counter(
                e,
                "hard_searches_stopped",
                "HARD searches whose call ended (its client gone, or its deadline passed) \
                 while they ran: each stops before its next world.",
                stopped,
            )?;
            counter(
                e,
                "hard_search_worlds_after_stop",
                "Worlds the stopped HARD searches started after their call ended: at most \
                 one each (the world whose check came just before the end); more is a \
                 search that does not stop.",
                worlds_after,
            )?;
        }
        if let Some(watches) = self.watches.get() {
            labelled_gauge(
                e,
                "watch_streams",
                "Watch streams open now, and the most the server takes \
                 (--max-watch-streams); past it a Watch is refused TOO_MANY_WATCHES.",
                [
                    ([("state", "open")], watches.open()),
                    ([("state", "limit")], watches.limit()),
                ],
            )?;
            labelled_counter(
                e,
                "watch_refusals",
                "Watch calls refused TOO_MANY_WATCHES, by the bound they met: replica \
                 (--max-watch-streams), connection, client (--max-watch-streams-per-client), \
                 client_match (one client on one match), match_spectators, seat (one seat's \
                 devices).",
                watches
                    .refusals()
                    .map(|(bound, n)| ([("bound", bound.label())], n)),
            )?;
            labelled_counter(
                e,
                "watch_streams_ended",
                "Watch streams the server ended before their client or connection went: \
                 made_room (its place given to a seat's stream), stalled (its client left \
                 a message unread for two heartbeats, or for one when its place was needed).",
                watches.ended().map(|(why, n)| ([("why", why.label())], n)),
            )?;
        }
        if let Some(counts) = self.token_cache.get() {
            let (hits, misses) = counts.get();
            labelled_counter(
                e,
                "token_cache_lookups",
                "State tokens looked up in the token cache: hit (the game this replica \
                 sealed in that token, kept), miss (opened or refused by the cipher).",
                [([("result", "hit")], hits), ([("result", "miss")], misses)],
            )?;
        }
        Ok(())
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::v1::all_fives_service_server::AllFivesServiceServer;
    use crate::service::Api;
    use tonic::server::NamedService;

    #[test]
    fn the_search_gauges_show_the_queue_now() {
        use crate::service::searches::SearchLimits;
        let metrics = Metrics::new();
        let text = metrics.encode().expect("encode");
        assert!(
            !text.contains("hard_searches"),
            "shown before a queue is watched"
        );
        use crate::service::searches::{FIRST_HOLD, Owner};
        // Two slots, and four places for each while a search holds its slot for
        // FIRST_HOLD (as it is taken to until one is timed).
        let searches = Searches::new(SearchLimits::for_slots(2, FIRST_HOLD * 4));
        metrics.watch_searches(Arc::clone(&searches));
        // Two running (a slot each, one per match), one waiting.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let held: Vec<_> = [1, 1, 1]
            .into_iter()
            .enumerate()
            .map(|(n, game)| {
                let owner = Owner {
                    client: crate::connection::ClientId::Connection(
                        crate::connection::ConnectionId(n as u64),
                    ),
                    match_id: crate::state::MatchId([game; crate::state::MATCH_ID_LEN]),
                    seat: Some(0),
                };
                searches.enter(owner, deadline).expect("room")
            })
            .collect();
        let text = metrics.encode().expect("encode");
        for line in [
            r#"allfives_hard_searches{state="running"} 2"#,
            r#"allfives_hard_searches{state="waiting"} 1"#,
            r#"allfives_hard_search_capacity{state="running"} 2"#,
            r#"allfives_hard_search_capacity{state="waiting"} 8"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        drop(held);
        let text = metrics.encode().expect("encode");
        for line in [
            r#"allfives_hard_searches{state="running"} 0"#,
            r#"allfives_hard_searches{state="waiting"} 0"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }

    #[test]
    fn every_route_has_its_own_labels_and_other_paths_share_one_row() {
        assert_eq!(
            <AllFivesServiceServer<Api> as NamedService>::NAME,
            "allfives.v1.AllFivesService"
        );
        for route in &ROUTES {
            assert_eq!(row(Some(route)), route.index);
            assert_eq!(
                labels(route.index),
                (route.service, route.method, route.is_unary())
            );
        }
        assert_eq!(row(None), ROUTES.len());
        assert_eq!(labels(row(None)), ("other", "other", false));
    }

    #[test]
    fn code_names_follow_the_wire_numbers() {
        for (n, name) in CODE_NAMES.iter().enumerate() {
            let code = Code::from(n as i32);
            assert_eq!(code as usize, n, "{name}");
        }
        assert_eq!(
            CODE_NAMES[Code::FailedPrecondition as usize],
            "FAILED_PRECONDITION"
        );
        assert_eq!(
            CODE_NAMES[Code::Unauthenticated as usize],
            "UNAUTHENTICATED"
        );
    }

    #[test]
    fn latency_buckets_are_cumulative_and_inclusive() {
        let m = Metrics::new();
        let play = Route::of_path("/allfives.v1.AllFivesService/Play");
        let watch = Route::of_path("/allfives.v1.AllFivesService/Watch");
        m.call_done(play, Code::Ok, Duration::from_micros(25));
        m.call_done(play, Code::Ok, Duration::from_nanos(25_001));
        m.call_done(play, Code::Cancelled, Duration::from_secs(7));
        m.call_done(watch, Code::Ok, Duration::from_secs(60));
        m.call_done(None, Code::Unimplemented, Duration::from_secs(1));
        let text = m.encode().expect("encode");
        let play = r#"service="allfives.v1.AllFivesService",method="Play""#;
        for line in [
            format!("allfives_grpc_call_duration_seconds_bucket{{le=\"0.000025\",{play}}} 1"),
            format!("allfives_grpc_call_duration_seconds_bucket{{le=\"0.00005\",{play}}} 2"),
            format!("allfives_grpc_call_duration_seconds_bucket{{le=\"1.0\",{play}}} 2"),
            format!("allfives_grpc_call_duration_seconds_bucket{{le=\"+Inf\",{play}}} 3"),
            format!("allfives_grpc_call_duration_seconds_count{{{play}}} 3"),
            format!("allfives_grpc_calls_total{{{play},code=\"OK\"}} 2"),
            format!("allfives_grpc_calls_total{{{play},code=\"CANCELLED\"}} 1"),
            r#"allfives_grpc_calls_total{service="allfives.v1.AllFivesService",method="Watch",code="OK"} 1"#
                .to_owned(),
            r#"allfives_grpc_calls_total{service="other",method="other",code="UNIMPLEMENTED"} 1"#
                .to_owned(),
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
        }
        assert!(
            !text.contains(r#"method="Watch"}"#),
            "streams are not timed:\n{text}"
        );
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn only_token_refusals_are_counted_as_rejected_tokens() {
        use crate::engine::Error as Rules;
        use crate::service::status::ApiError;
        use crate::state::TokenError;

        let m = Metrics::new();
        for error in [
            ApiError::from(TokenError::Invalid),
            ApiError::from(TokenError::Corrupt),
            ApiError::from(TokenError::Malformed),
            ApiError::from(TokenError::UnknownKey(9)),
            ApiError::from(TokenError::UnsupportedVersion(9)),
            ApiError::from(TokenError::Random),
            ApiError::from(Rules::MustPlay),
            ApiError::field("seat", "no such seat"),
        ] {
            m.refused(error.reason());
        }
        let text = m.encode().expect("encode");
        for line in [
            r#"allfives_rejected_tokens_total{reason="TOKEN_INVALID"} 2"#,
            r#"allfives_rejected_tokens_total{reason="TOKEN_MALFORMED"} 1"#,
            r#"allfives_rejected_tokens_total{reason="TOKEN_UNKNOWN_KEY"} 1"#,
            r#"allfives_rejected_tokens_total{reason="TOKEN_UNSUPPORTED_VERSION"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
        }
        let rejected = text
            .lines()
            .filter(|l| l.starts_with("allfives_rejected_tokens_total"))
            .count();
        assert_eq!(rejected, TOKEN_REASONS.len(), "{text}");
    }

    #[test]
    fn invite_look_ups_are_counted_by_result_and_whose_limit_refused_them() {
        let m = Metrics::new();
        m.invite_looked_up(InviteLookup::of(&Some(())));
        m.invite_looked_up(InviteLookup::of(&None::<()>));
        m.invite_looked_up(InviteLookup::of(&None::<()>));
        for _ in 0..3 {
            m.invite_looked_up(InviteLookup::Refused(RateLimit::Client));
        }
        m.invite_looked_up(InviteLookup::Refused(RateLimit::Deployment));
        let text = m.encode().expect("encode");
        for line in [
            r#"allfives_invite_code_lookups_total{result="found"} 1"#,
            r#"allfives_invite_code_lookups_total{result="missed"} 2"#,
            r#"allfives_invite_code_lookups_total{result="client_limited"} 3"#,
            r#"allfives_invite_code_lookups_total{result="deployment_limited"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
        }
    }
}
