//! The tonic service: maps `allfives.v1` requests to the engine through the state
//! token, and failures to gRPC statuses. Nothing else.
//!
//! - [`handlers`]: one function per RPC (parse, open, engine, seal, view).
//!   Suggest's HARD searches run on tokio's blocking pool, at most one per core.
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
use status::ApiError;

/// The service: holds the key ring with its cache of lately sealed games, and the
/// metrics. No call depends on another: a game lives in its token, and the cache only
/// saves reopening a token this process sealed (`state::cache`).
#[derive(Clone, Debug)]
pub struct Api {
    tokens: Arc<Tokens>,
    metrics: Arc<Metrics>,
    /// One permit per HARD search allowed to run at once (one per core): searches take
    /// milliseconds, so they run off the async workers, and a flood of them queues here
    /// instead of starving every other call of CPU.
    searches: Arc<Semaphore>,
}

impl Api {
    pub fn new(tokens: Arc<Tokens>, metrics: Arc<Metrics>) -> Api {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Api {
            tokens,
            metrics,
            searches: Arc::new(Semaphore::new(cores)),
        }
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

/// A changing call's answer as its response, its events counted.
macro_rules! changing {
    ($metrics:expr, $response:ident, $answer:expr) => {
        $answer.map(|a| {
            $metrics.events(&a.events);
            pb::$response {
                state: a.state,
                view: Some(a.view),
                events: a.events,
            }
        })
    };
}

#[tonic::async_trait]
impl AllFivesService for Api {
    async fn new_game(
        &self,
        req: Request<pb::NewGameRequest>,
    ) -> Result<Response<pb::NewGameResponse>, Status> {
        traced(&self.metrics, "NewGame", None, || {
            let answer = changing!(
                self.metrics,
                NewGameResponse,
                handlers::new_game(&self.tokens, req.get_ref())
            );
            if answer.is_ok() {
                self.metrics.game_created();
            }
            answer
        })
    }

    async fn deal(
        &self,
        req: Request<pb::DealRequest>,
    ) -> Result<Response<pb::DealResponse>, Status> {
        traced(&self.metrics, "Deal", None, || {
            changing!(
                self.metrics,
                DealResponse,
                handlers::deal(&self.tokens, req.get_ref())
            )
        })
    }

    async fn play(
        &self,
        req: Request<pb::PlayRequest>,
    ) -> Result<Response<pb::PlayResponse>, Status> {
        traced(&self.metrics, "Play", Some(req.get_ref().seat), || {
            changing!(
                self.metrics,
                PlayResponse,
                handlers::play(&self.tokens, req.get_ref())
            )
        })
    }

    async fn draw(
        &self,
        req: Request<pb::DrawRequest>,
    ) -> Result<Response<pb::DrawResponse>, Status> {
        traced(&self.metrics, "Draw", Some(req.get_ref().seat), || {
            changing!(
                self.metrics,
                DrawResponse,
                handlers::draw(&self.tokens, req.get_ref())
            )
        })
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
        // A closed semaphore cannot happen (it is never closed); answer UNAVAILABLE
        // rather than panic if it ever were.
        let permit = Arc::clone(&self.searches)
            .acquire_owned()
            .await
            .map_err(|_| Status::unavailable("the service is shutting down"))?;
        let api = self.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            traced(&api.metrics, "Suggest", seat, || {
                handlers::suggest(&api.tokens, req.get_ref())
            })
        })
        .await
        .map_err(|_| Status::internal("the search failed"))?
    }
}
