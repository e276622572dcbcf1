//! The tonic service: maps `allfives.v1` requests to the engine through the state
//! token, and failures to gRPC statuses. Nothing else.
//!
//! - One file per RPC family, each the calls and their handlers: [`moves`] (Deal, Play,
//!   Draw, Score), [`seats`] (NewGame, ClaimSeat), [`suggest`], [`watch`] and
//!   [`invites`] (the calls that need the match store: a stream of a match's changes;
//!   invite codes). The trait below is one line per RPC into them.
//! - [`steps`]: what every handler is made of (open the token, check the credential,
//!   engine, the bots, seal, view). HARD searches (Suggest's, and the server-played
//!   HARD bots') run on tokio's blocking pool, at most one per core, and stop between
//!   worlds when their call is dropped or its deadline passes.
//! - [`searches`]: the queue of HARD searches waiting for a core, bounded by the wait
//!   budget, in which players (client and match) take turns.
//! - [`convert`]: engine types <-> protobuf messages, and request fields read.
//! - [`codec`]: the generated services' gRPC codec: prost's, with undecodable requests
//!   answered as the client's error.
//! - [`status`]: errors -> `tonic::Status` with rich error details.
//! - [`certify`]: a finished match's signed result (`GameView.result`), put on the
//!   view of every answer that shows the match over, the last step of a call.
//!
//! Each call records its outcome in [`Metrics`](crate::metrics::Metrics) (games, hands,
//! moves, token refusals); the HTTP endpoint that shows them lives elsewhere.

pub mod certify;
pub mod clocks;
pub mod codec;
pub mod convert;
pub mod invites;
pub mod moves;
pub mod rematch;
pub mod searches;
pub mod seat_events;
pub mod seats;
pub mod status;
pub mod steps;
pub mod suggest;
pub mod watch;
pub mod watch_limits;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tonic::{Request, Response, Status};

use crate::call::CallContext;
use crate::engine::suggest::Stop;
use crate::metrics::Metrics;
use crate::proto::v1 as pb;
use crate::proto::v1::all_fives_service_server::AllFivesService;
use crate::state::{self, Tokens};
use crate::store::MatchStore;
use searches::{MatchId, Owner, SearchLimits, Searches};
use status::{ApiError, deadline_passed};
use steps::{Answer, Policy};
use watch_limits::WatchLimits;

/// The service: holds the key ring with its cache of lately sealed games, and the
/// metrics. No call depends on another: a game lives in its token, and the cache only
/// saves reopening a token this process sealed (`state::cache`).
#[derive(Clone, Debug)]
pub struct Api {
    tokens: Arc<Tokens>,
    metrics: Arc<Metrics>,
    policy: Policy,
    /// The least time a call takes for each full HARD search its bots were given (a
    /// smaller search in proportion): a bot thinks longer or shorter depending on its
    /// tiles (how many moves it weighs), so a call is made to last this long whatever
    /// they are, and its time tells nothing about them (`--bot-move-floor-ms`).
    bot_move_floor: Duration,
    /// HARD searches: one runs per core (they take milliseconds of CPU, so they run off
    /// the async workers), as many wait as the wait budget allows, the rest are
    /// refused, and players take turns (`searches`).
    searches: Arc<Searches>,
    /// Where each match's latest state is kept, if anywhere (`--match-store`): a call
    /// that changes a match is answered only once the store moved it (`crate::store`).
    store: Option<Arc<MatchStore>>,
    /// The bounds on open Watch streams (`watch`).
    watches: Arc<WatchLimits>,
    /// How long a Watch stream stays silent before a heartbeat.
    watch_heartbeat: Duration,
    /// The clock turn clocks are judged by.
    clock: crate::server_clock::ServerClock,
    /// Signs finished matches' results (`certify`); none: views carry no result.
    certifier: Option<certify::Certifier>,
    /// Checks the studio's player passes (`--pass-keys-file`); none: a pass is refused.
    passes: Option<Arc<crate::passes::Passes>>,
}

/// Sets the flag when dropped: the search of a call whose future was dropped (its
/// client cancelled, or the server's timeout ended it) sees it and stops.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Api {
    pub fn new(tokens: Arc<Tokens>, metrics: Arc<Metrics>, policy: Policy) -> Api {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Api {
            tokens,
            metrics,
            policy,
            bot_move_floor: Duration::ZERO,
            searches: Searches::new(SearchLimits::for_slots(
                cores,
                searches::DEFAULT_WAIT_BUDGET,
            )),
            store: None,
            watches: WatchLimits::new(
                watch_limits::DEFAULT_MAX_STREAMS,
                watch_limits::DEFAULT_MAX_PER_CONNECTION,
                watch_limits::DEFAULT_MAX_PER_CLIENT,
                watch::DEFAULT_HEARTBEAT,
            ),
            watch_heartbeat: watch::DEFAULT_HEARTBEAT,
            clock: crate::server_clock::ServerClock::system(),
            certifier: None,
            passes: None,
        }
    }

    /// The same service, seating players who show the studio's passes, checked with
    /// `passes` (none: a pass is refused).
    pub fn with_passes(self, passes: Option<Arc<crate::passes::Passes>>) -> Api {
        Api { passes, ..self }
    }

    /// The same service, signing finished matches' results with `certifier`.
    pub fn with_certifier(self, certifier: certify::Certifier) -> Api {
        Api {
            certifier: Some(certifier),
            ..self
        }
    }

    /// Puts the signed result on `view` if it shows the match over: the match of
    /// `token` (the answer's, so the token cache has it), its sheet's totals and its
    /// store's record read from it. Signed as of now.
    pub(super) fn certify(&self, token: &[u8], view: &mut pb::GameView) {
        let Some(certifier) = &self.certifier else {
            return;
        };
        if view.phase() != pb::Phase::Over {
            return;
        }
        let now_secs = self.clock.now_ms() / 1000;
        if let Some(kept) = certifier.kept(&view.state_id, now_secs) {
            view.result = kept;
            return;
        }
        let Ok(opened) = self.tokens.open(token) else {
            return;
        };
        let game = &opened.game;
        let sheet = convert::sheet_out(game.rules(), game.sheet(), game.winner());
        // The result names every seat's player id, whichever of them this view shows.
        let mut every_id = view.clone();
        for seat in &mut every_id.seats {
            if let Some(Some(id)) = opened.player_ids.0.get(seat.seat as usize) {
                seat.player_id = id.as_str().to_owned();
            }
        }
        view.result = certifier
            .certify(&every_id, &sheet, opened.stored, now_secs)
            .unwrap_or_default();
        self.tokens.keep(opened);
    }

    /// The same service, judging turn clocks by `clock`.
    pub fn with_clock(self, clock: crate::server_clock::ServerClock) -> Api {
        Api { clock, ..self }
    }

    /// A call arriving now, as turn clocks judge it.
    pub(super) fn judge(&self) -> clocks::Judge {
        self.policy.judge(self.clock.now_ms())
    }

    /// The same service, with at most `total` Watch streams open, `per_connection` on
    /// one connection, `per_client` of one client (`--max-watch-streams`,
    /// `--max-watch-streams-per-connection`, `--max-watch-streams-per-client`), and a
    /// heartbeat after `heartbeat` of silence (`--watch-heartbeat-secs`).
    pub fn with_watches(
        self,
        total: usize,
        per_connection: usize,
        per_client: usize,
        heartbeat: Duration,
    ) -> Api {
        Api {
            watches: WatchLimits::new(total, per_connection, per_client, heartbeat),
            watch_heartbeat: heartbeat,
            ..self
        }
    }

    /// The bounds on Watch streams, with the count open (for the metrics' gauges).
    pub fn watches(&self) -> Arc<WatchLimits> {
        Arc::clone(&self.watches)
    }

    /// The same service, keeping each match's latest state in `store` (none: nothing
    /// is kept between calls).
    pub fn with_match_store(self, store: Option<Arc<MatchStore>>) -> Api {
        let policy = Policy {
            match_store: store.is_some(),
            ..self.policy
        };
        Api {
            store,
            policy,
            ..self
        }
    }

    /// A changing call's answer, once the store (if any) moved its match to the state
    /// it made; refused `STATE_STALE` if the match is at another state,
    /// `STORE_UNAVAILABLE` if the store did not answer in its own time, and the call's
    /// deadline answer ([`deadline_passed`]) if the call's deadline came first (either
    /// way its head may have moved all the same: the same call again is answered).
    async fn stored(&self, answer: Answer, call: &CallContext) -> Result<Answer, ApiError> {
        let Some(store) = &self.store else {
            // A match made with a store moves only through it.
            return match answer.moved.stored {
                true => Err(ApiError::StoreRequired),
                false => Ok(answer),
            };
        };
        match within(
            call,
            store.advance(
                &answer.moved,
                answer.hand_events,
                &answer.seat_events,
                &answer.state,
            ),
        )
        .await
        {
            Ok(()) => Ok(answer),
            Err(ApiError::StateStale(latest)) => self.recorded_already(answer, latest, call).await,
            Err(error) => Err(error),
        }
    }

    /// A clocked call made again after the store recorded it (its answer was lost): the
    /// same moves a second later write other times, so another state, which the store
    /// refuses. If the state it holds was made from the same one by the same moves
    /// (`steps::answered_as`), it is this call's answer, as an unclocked call made again
    /// is answered the same; else the call is refused `STATE_STALE`.
    async fn recorded_already(
        &self,
        answer: Answer,
        latest: state::StateId,
        call: &CallContext,
    ) -> Result<Answer, ApiError> {
        let stale = ApiError::StateStale(latest);
        let Some(store) = &self.store else {
            return Err(stale);
        };
        if answer.clocked
            && let Ok(Some(head)) = within(call, store.latest(&answer.moved.match_id)).await
            && head.state == latest
            && head.previous == answer.moved.from
        {
            return steps::answered_as(&self.tokens, answer, head, &self.judge()).ok_or(stale);
        }
        Err(stale)
    }

    /// A move refused as too late (`refused`, TURN_TIMED_OUT, made from the state
    /// `from`) asked of the store: if its head was made from that state, the judge of
    /// the call it recorded, at the earliest time that call's written time (whole
    /// seconds, rounded up) stands for, to judge the move again as of it (a retry of
    /// the same move, taken in time, is then answered with the recorded state; any
    /// other call from that state still finds the move late, or its state not the
    /// head's). If the store holds another state not made from it, the token is stale:
    /// `STATE_STALE`. Else (no store, no answer, the token the head) `refused`.
    async fn judged_again(
        &self,
        refused: ApiError,
        call: &CallContext,
    ) -> Result<clocks::Judge, ApiError> {
        let ApiError::TurnTimedOut { from, .. } = refused else {
            return Err(refused);
        };
        let Some(store) = &self.store else {
            return Err(refused);
        };
        let Ok(Some(head)) = within(call, store.latest(&from.0)).await else {
            return Err(refused);
        };
        if head.state == from.1 {
            return Err(refused);
        }
        if head.previous != Some(from.1) {
            return Err(ApiError::StateStale(head.state));
        }
        let Ok(opened) = self.tokens.open(&head.token) else {
            return Err(refused);
        };
        let last = opened.clocks.as_ref().map(|c| c.last());
        self.tokens.keep(opened);
        match last {
            Some(secs) => Ok(self
                .policy
                .judge(secs.saturating_mul(1000).saturating_sub(999))),
            None => Err(refused),
        }
    }

    /// The queue its HARD searches run in (for the metrics' gauges).
    pub fn searches(&self) -> Arc<Searches> {
        Arc::clone(&self.searches)
    }

    /// The same service, with as many HARD searches waiting as the slots get through
    /// in `budget` (`--search-wait-budget-ms`).
    pub fn with_search_wait_budget(self, budget: Duration) -> Api {
        let slots = self.searches.limits().slots;
        Api {
            searches: Searches::new(SearchLimits::for_slots(slots, budget)),
            ..self
        }
    }

    /// The connection, client, route and deadline of a call: the context the server's
    /// stack made (`crate::call`); a call made in process carries
    /// [`CallContext::in_process`]. Without one, INTERNAL: the server is miswired.
    fn call<T>(req: &Request<T>) -> Result<CallContext, Status> {
        req.extensions()
            .get::<CallContext>()
            .cloned()
            .ok_or_else(CallContext::missing)
    }

    /// The same service, with calls in which HARD bots moved lasting at least `floor`
    /// per full search.
    pub fn with_bot_move_floor(self, floor: std::time::Duration) -> Api {
        Api {
            bot_move_floor: floor,
            ..self
        }
    }

    /// The least time a call whose HARD bots were given `worlds` worlds takes.
    fn bot_floor(&self, worlds: u32) -> Duration {
        let full = self.policy.bot_search.worlds.max(1);
        self.bot_move_floor * worlds / full
    }

    /// Runs `work`, a search of match `match_id`, on the blocking pool in a search slot
    /// (HARD searches take milliseconds of CPU, which must not stall the async workers),
    /// after waiting in the queue if every slot is busy. Refused (`SEARCH_QUEUE_FULL`)
    /// when the queue has no place for it, or gives its place to a search ranked before
    /// it while it waits (`searches`). `work` is handed the
    /// search's stop: true once the call's future is dropped or its deadline passes,
    /// and then it answers `None`; the call answers DEADLINE_EXCEEDED (or nothing, if
    /// its client is gone). The slot is held until `work` returns, not only while the
    /// call waits for it, so a stopped search frees it within one world's time.
    async fn searching<T: Send + 'static>(
        &self,
        call: &CallContext,
        match_id: MatchId,
        seat: Option<u32>,
        work: impl FnOnce(&Api, &dyn Stop) -> Option<T> + Send + 'static,
    ) -> Result<T, Status> {
        let owner = Owner {
            client: call.client,
            match_id,
            seat,
        };
        let Ok(mut ticket) = self.searches.enter(owner, call.deadline) else {
            return Err(self.refuse_search(call, seat));
        };
        let deadline = tokio::time::Instant::from_std(call.deadline);
        match tokio::time::timeout_at(deadline, ticket.running()).await {
            Ok(Ok(())) => {}
            Ok(Err(searches::SearchRefused)) => return Err(self.refuse_search(call, seat)),
            Err(_) => return Err(deadline_passed(call).into()),
        }
        let stopped = Arc::new(AtomicBool::new(false));
        let _stop_on_drop = StopOnDrop(Arc::clone(&stopped));
        let api = self.clone();
        let stop = ticket.stop_when(Arc::clone(&stopped), call.deadline);
        let searched = tokio::task::spawn_blocking(move || work(&api, &stop))
            .await
            .map_err(|_| Status::internal("the search failed"))?;
        searched.ok_or_else(|| deadline_passed(call).into())
    }

    /// A search refused for the queue: counted, and logged at most once per period
    /// (a flood would otherwise write a line per call).
    fn refuse_search(&self, call: &CallContext, seat: Option<u32>) -> Status {
        let method = call.route.map_or("", |route| route.method);
        let error = ApiError::SearchQueueFull;
        self.metrics.refused(error.reason());
        if let Some(held_back) = self.searches.refusal_due() {
            tracing::info_span!("rpc", method, seat, result = error.reason())
                .in_scope(|| tracing::info!(held_back, "refused: the search queue is full"));
        }
        error.into()
    }
}

/// What the store answers before `call`'s deadline; past it, the call's deadline
/// answer ([`deadline_passed`]), as the admission layer would give it at the same
/// moment. The store bounds its own calls (`crate::store::RESPONSE_TIMEOUT`, then
/// `STORE_UNAVAILABLE`).
async fn within<T>(
    call: &CallContext,
    asked: impl std::future::Future<Output = Result<T, crate::store::StoreRefusal>>,
) -> Result<T, ApiError> {
    let deadline = tokio::time::Instant::from_std(call.deadline);
    match tokio::time::timeout_at(deadline, asked).await {
        Ok(answered) => Ok(answered?),
        Err(_) => Err(deadline_passed(call)),
    }
}

/// Runs one call, counts a refusal, and turns a failure into a status. The call's log
/// lines are in span `rpc` (method, seat, result): a refusal at `info`, and a served
/// call at `debug` only. The span is made only when a line is written, not for every
/// call (an enabled span costs about a microsecond: most of a call's own work).
/// Handlers log nothing themselves, so no line is lost outside the span.
fn traced<T>(
    metrics: &Metrics,
    call: &CallContext,
    seat: Option<u32>,
    call_answer: impl FnOnce() -> Result<T, ApiError>,
) -> Result<Response<T>, Status> {
    // The method's name, from the call's route (the proto's).
    let method = call.route.map_or("", |route| route.method);
    match call_answer() {
        Ok(answer) => {
            if tracing::enabled!(tracing::Level::DEBUG) {
                tracing::info_span!("rpc", method, seat, result = "OK")
                    .in_scope(|| tracing::debug!("served"));
            }
            Ok(Response::new(answer))
        }
        Err(error) => {
            let reason = error.reason();
            metrics.refused(reason);
            tracing::info_span!("rpc", method, seat, result = reason)
                .in_scope(|| tracing::info!(?error, "refused"));
            Err(error.into())
        }
    }
}

#[tonic::async_trait]
impl AllFivesService for Api {
    type WatchStream = watch::WatchStream;

    async fn watch(
        &self,
        req: Request<pb::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        self.watch_call(req).await
    }

    async fn new_game(
        &self,
        req: Request<pb::NewGameRequest>,
    ) -> Result<Response<pb::NewGameResponse>, Status> {
        self.new_game_call(req).await
    }

    async fn claim_seat(
        &self,
        req: Request<pb::ClaimSeatRequest>,
    ) -> Result<Response<pb::ClaimSeatResponse>, Status> {
        self.claim_seat_call(req).await
    }

    async fn deal(
        &self,
        req: Request<pb::DealRequest>,
    ) -> Result<Response<pb::DealResponse>, Status> {
        self.changing(req, |_| None, moves::deal).await
    }

    async fn play(
        &self,
        req: Request<pb::PlayRequest>,
    ) -> Result<Response<pb::PlayResponse>, Status> {
        self.changing(req, |r| Some(r.seat), moves::play).await
    }

    async fn draw(
        &self,
        req: Request<pb::DrawRequest>,
    ) -> Result<Response<pb::DrawResponse>, Status> {
        self.changing(req, |r| Some(r.seat), moves::draw).await
    }

    async fn claim_timeout(
        &self,
        req: Request<pb::ClaimTimeoutRequest>,
    ) -> Result<Response<pb::ClaimTimeoutResponse>, Status> {
        self.changing(req, |r| Some(r.seat), moves::claim_timeout)
            .await
    }

    async fn leave(
        &self,
        req: Request<pb::LeaveRequest>,
    ) -> Result<Response<pb::LeaveResponse>, Status> {
        self.changing(req, |r| Some(r.seat), moves::leave).await
    }

    async fn return_to_seat(
        &self,
        req: Request<pb::ReturnToSeatRequest>,
    ) -> Result<Response<pb::ReturnToSeatResponse>, Status> {
        self.changing(req, |r| Some(r.seat), moves::return_to_seat)
            .await
    }

    async fn rematch(
        &self,
        req: Request<pb::RematchRequest>,
    ) -> Result<Response<pb::RematchResponse>, Status> {
        self.rematch_call(req).await
    }

    async fn score(
        &self,
        req: Request<pb::ScoreRequest>,
    ) -> Result<Response<pb::ScoreResponse>, Status> {
        self.score_call(req).await
    }

    async fn suggest(
        &self,
        req: Request<pb::SuggestRequest>,
    ) -> Result<Response<pb::SuggestResponse>, Status> {
        self.suggest_call(req).await
    }

    async fn create_invite_code(
        &self,
        req: Request<pb::CreateInviteCodeRequest>,
    ) -> Result<Response<pb::CreateInviteCodeResponse>, Status> {
        self.create_invite_code_call(req).await
    }

    async fn open_invite_code(
        &self,
        req: Request<pb::OpenInviteCodeRequest>,
    ) -> Result<Response<pb::OpenInviteCodeResponse>, Status> {
        self.open_invite_code_call(req).await
    }

    async fn get_result_keys(
        &self,
        req: Request<pb::GetResultKeysRequest>,
    ) -> Result<Response<pb::GetResultKeysResponse>, Status> {
        let call = Api::call(&req)?;
        traced(&self.metrics, &call, None, || {
            Ok(pb::GetResultKeysResponse {
                jwks: self
                    .certifier
                    .as_ref()
                    .map_or(certify::NO_KEYS, |c| c.jwks_json())
                    .to_owned(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::{ConnectionId, Tracker};

    #[test]
    fn a_call_uses_the_context_the_server_made_and_none_is_made_up() {
        let connection = Tracker::new(ConnectionId(7), None, tokio::time::Instant::now(), None);
        let context = CallContext::new(
            connection,
            None,
            "/allfives.v1.AllFivesService/Play",
            std::time::Instant::now(),
            Some(b"1S"),
            Duration::from_secs(5),
        );
        let mut req = Request::new(());
        req.extensions_mut().insert(context.clone());
        let call = Api::call(&req).expect("its context");
        assert!(Arc::ptr_eq(&call.connection, &context.connection));
        assert_eq!(call.connection.id(), ConnectionId(7));
        assert_eq!(call.deadline, context.deadline);
        assert_eq!(call.route.map(|r| r.method), Some("Play"));
        let missing = Api::call(&Request::new(())).expect_err("no context");
        assert_eq!(missing.code(), tonic::Code::Internal);
    }
}
