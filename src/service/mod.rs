//! The tonic service: maps `allfives.v1` requests to the engine through the state
//! token, and failures to gRPC statuses. Nothing else.
//!
//! - [`handlers`]: one function per RPC (parse, open, check the credential, engine,
//!   bots, seal, view). HARD searches (Suggest's, and the server-played HARD bots')
//!   run on tokio's blocking pool, at most one per core.
//! - [`convert`]: engine types <-> protobuf messages.
//! - [`answer_writer`]: the generated services' gRPC codec, which writes the answers in
//!   one pass ([`wire`]: the protobuf writer it uses).
//! - [`status`]: errors -> `tonic::Status` with rich error details.
//!
//! Each call records its outcome in [`Metrics`](crate::metrics::Metrics) (games, hands,
//! moves, token refusals); the HTTP endpoint that shows them lives elsewhere.

pub mod answer_writer;
pub mod convert;
pub mod handlers;
pub mod status;
pub(crate) mod wire;

use std::sync::Arc;

use tokio::sync::Semaphore;
use tonic::{Request, Response, Status};

use crate::metrics::Metrics;
use crate::proto::v1 as pb;
use crate::proto::v1::all_fives_service_server::AllFivesService;
use crate::state::Tokens;
use handlers::{Answer, Policy, Step};
use status::ApiError;

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
    bot_move_floor: std::time::Duration,
    /// One permit per HARD search allowed to run at once (one per core): searches take
    /// milliseconds, so they run off the async workers, and a flood of them queues here
    /// instead of starving every other call of CPU.
    searches: Arc<Semaphore>,
}

impl Api {
    pub fn new(tokens: Arc<Tokens>, metrics: Arc<Metrics>, policy: Policy) -> Api {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Api {
            tokens,
            metrics,
            policy,
            bot_move_floor: std::time::Duration::ZERO,
            searches: Arc::new(Semaphore::new(cores)),
        }
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
    fn bot_floor(&self, worlds: u32) -> std::time::Duration {
        let full = self.policy.bot_search.worlds.max(1);
        self.bot_move_floor * worlds / full
    }

    /// Runs `work` on the blocking pool under a search permit (HARD searches take
    /// milliseconds of CPU, which must not stall the async workers).
    async fn searching<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Api) -> T + Send + 'static,
    ) -> Result<T, Status> {
        // A closed semaphore cannot happen (it is never closed); answer UNAVAILABLE
        // rather than panic if it ever were.
        let permit = Arc::clone(&self.searches)
            .acquire_owned()
            .await
            .map_err(|_| Status::unavailable("the service is shutting down"))?;
        let api = self.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work(&api)
        })
        .await
        .map_err(|_| Status::internal("the search failed"))
    }

    /// A Deal, Play or Draw: its own move, then the bots that come on turn (on the
    /// blocking pool when a HARD one may search), sealed and answered as `response`.
    /// A call in which HARD bots moved lasts at least their floor (`bot_move_floor` per
    /// full search), waited out asynchronously after the search's permit is given
    /// back, so its time says nothing about the bots' tiles.
    async fn changing<R: Send + 'static>(
        &self,
        method: &'static str,
        seat: Option<u32>,
        begin: impl FnOnce(&Tokens) -> Result<Step, ApiError>,
        response: fn(Answer) -> R,
    ) -> Result<Response<R>, Status> {
        let step = match begin(&self.tokens) {
            Ok(step) => step,
            Err(error) => return traced(&self.metrics, method, seat, || Err(error)),
        };
        let searches = step.searches();
        let started = std::time::Instant::now();
        let end = move |api: &Api| {
            let mut floor = std::time::Duration::ZERO;
            let result = traced(&api.metrics, method, seat, || {
                let answer = handlers::finish(&api.tokens, &api.policy, step)?;
                api.metrics.events(&answer.events);
                floor = api.bot_floor(answer.bot_worlds);
                Ok(response(answer))
            });
            (result, floor)
        };
        if !searches {
            return end(self).0;
        }
        let (result, floor) = self.searching(end).await?;
        if let Some(left) = floor.checked_sub(started.elapsed()) {
            tokio::time::sleep(left).await;
        }
        result
    }
}

/// Runs one call, counts a refusal, and turns a failure into a status. The call's log
/// lines are in span `rpc` (method, seat, result): a refusal at `info`, and a served
/// call at `debug` only. The span is made only when a line is written, not for every
/// call (an enabled span costs about a microsecond: most of a call's own work).
/// Handlers log nothing themselves, so no line is lost outside the span.
fn traced<T>(
    metrics: &Metrics,
    method: &'static str,
    seat: Option<u32>,
    call: impl FnOnce() -> Result<T, ApiError>,
) -> Result<Response<T>, Status> {
    match call() {
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

/// A changing call's answer as its response.
macro_rules! respond {
    ($response:ident) => {
        |a: Answer| pb::$response {
            state: a.state,
            view: Some(a.view),
            events: a.events,
        }
    };
}

#[tonic::async_trait]
impl AllFivesService for Api {
    async fn new_game(
        &self,
        req: Request<pb::NewGameRequest>,
    ) -> Result<Response<pb::NewGameResponse>, Status> {
        traced(&self.metrics, "NewGame", None, || {
            let answer = handlers::new_game(&self.tokens, &self.policy, req.get_ref())?;
            self.metrics.game_created();
            Ok(pb::NewGameResponse {
                state: answer.state,
                view: Some(answer.view),
                events: answer.events,
                credentials: answer.credentials,
            })
        })
    }

    async fn claim_seat(
        &self,
        req: Request<pb::ClaimSeatRequest>,
    ) -> Result<Response<pb::ClaimSeatResponse>, Status> {
        traced(&self.metrics, "ClaimSeat", Some(req.get_ref().seat), || {
            handlers::claim_seat(&self.tokens, &self.policy, req.get_ref())
        })
    }

    async fn deal(
        &self,
        req: Request<pb::DealRequest>,
    ) -> Result<Response<pb::DealResponse>, Status> {
        let req = req.into_inner();
        self.changing(
            "Deal",
            None,
            |tokens| handlers::deal(tokens, &req),
            respond!(DealResponse),
        )
        .await
    }

    async fn play(
        &self,
        req: Request<pb::PlayRequest>,
    ) -> Result<Response<pb::PlayResponse>, Status> {
        let req = req.into_inner();
        self.changing(
            "Play",
            Some(req.seat),
            |tokens| handlers::play(tokens, &req),
            respond!(PlayResponse),
        )
        .await
    }

    async fn draw(
        &self,
        req: Request<pb::DrawRequest>,
    ) -> Result<Response<pb::DrawResponse>, Status> {
        let req = req.into_inner();
        self.changing(
            "Draw",
            Some(req.seat),
            |tokens| handlers::draw(tokens, &req),
            respond!(DrawResponse),
        )
        .await
    }

    async fn score(
        &self,
        req: Request<pb::ScoreRequest>,
    ) -> Result<Response<pb::ScoreResponse>, Status> {
        traced(&self.metrics, "Score", None, || {
            handlers::score(&self.tokens, req.get_ref())
        })
    }

    async fn suggest(
        &self,
        req: Request<pb::SuggestRequest>,
    ) -> Result<Response<pb::SuggestResponse>, Status> {
        let seat = Some(req.get_ref().seat);
        if req.get_ref().level != pb::BotLevel::Hard as i32 {
            return traced(&self.metrics, "Suggest", seat, || {
                handlers::suggest(&self.tokens, req.get_ref())
            });
        }
        self.searching(move |api| {
            traced(&api.metrics, "Suggest", seat, || {
                handlers::suggest(&api.tokens, req.get_ref())
            })
        })
        .await?
    }
}
