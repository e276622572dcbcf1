//! The tonic service: maps `allfives.v1` requests to the engine through the state
//! token, and failures to gRPC statuses. Nothing else.
//!
//! - [`handlers`]: one function per RPC (parse, open, engine, seal, view).
//! - [`convert`]: engine types <-> protobuf messages.
//! - [`status`]: errors -> `tonic::Status` with rich error details.

pub mod convert;
pub mod handlers;
pub mod status;

use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::proto::v1 as pb;
use crate::proto::v1::all_fives_service_server::AllFivesService;
use crate::state::KeyRing;
use status::ApiError;

/// The service: holds the key ring, nothing else (no game state between calls).
#[derive(Clone, Debug)]
pub struct Api {
    ring: Arc<KeyRing>,
}

impl Api {
    pub fn new(ring: Arc<KeyRing>) -> Api {
        Api { ring }
    }
}

/// Runs one call inside its span (method, seat, result) and turns a failure into a
/// status. Handlers are synchronous, so the span stays entered throughout.
fn traced<T>(
    method: &'static str,
    seat: Option<u32>,
    call: impl FnOnce() -> Result<T, ApiError>,
) -> Result<Response<T>, Status> {
    let span = tracing::info_span!("rpc", method, seat, result = tracing::field::Empty);
    let _entered = span.enter();
    match call() {
        Ok(answer) => {
            span.record("result", "OK");
            tracing::debug!("served");
            Ok(Response::new(answer))
        }
        Err(error) => {
            span.record("result", error.reason());
            tracing::info!(?error, "refused");
            Err(error.into())
        }
    }
}

macro_rules! changing {
    ($response:ident, $answer:expr) => {
        $answer.map(|a| pb::$response {
            state: a.state,
            view: Some(a.view),
            events: a.events,
        })
    };
}

#[tonic::async_trait]
impl AllFivesService for Api {
    async fn new_game(
        &self,
        req: Request<pb::NewGameRequest>,
    ) -> Result<Response<pb::NewGameResponse>, Status> {
        traced("NewGame", None, || {
            changing!(
                NewGameResponse,
                handlers::new_game(&self.ring, req.get_ref())
            )
        })
    }

    async fn deal(
        &self,
        req: Request<pb::DealRequest>,
    ) -> Result<Response<pb::DealResponse>, Status> {
        traced("Deal", None, || {
            changing!(DealResponse, handlers::deal(&self.ring, req.get_ref()))
        })
    }

    async fn play(
        &self,
        req: Request<pb::PlayRequest>,
    ) -> Result<Response<pb::PlayResponse>, Status> {
        traced("Play", Some(req.get_ref().seat), || {
            changing!(PlayResponse, handlers::play(&self.ring, req.get_ref()))
        })
    }

    async fn draw(
        &self,
        req: Request<pb::DrawRequest>,
    ) -> Result<Response<pb::DrawResponse>, Status> {
        traced("Draw", Some(req.get_ref().seat), || {
            changing!(DrawResponse, handlers::draw(&self.ring, req.get_ref()))
        })
    }

    async fn score(
        &self,
        req: Request<pb::ScoreRequest>,
    ) -> Result<Response<pb::ScoreResponse>, Status> {
        traced("Score", None, || handlers::score(&self.ring, req.get_ref()))
    }
}
