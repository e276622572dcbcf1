//! `Suggest`: a bot's advice to the seat on turn, from that seat's knowledge only; a
//! HARD search runs in the search queue (`searches.rs`), off the async workers.

use tonic::{Request, Response, Status};

use super::convert::{level_in, seat_in, suggestion_out, worlds_in};
use super::status::ApiError;
use super::{Api, traced};
use crate::engine::Knowledge;
use crate::engine::suggest::{self, Level, Search, Stop};
use crate::proto::v1 as pb;
use crate::state::{MatchId, Tokens};

impl Api {
    pub(super) async fn suggest_call(
        &self,
        req: Request<pb::SuggestRequest>,
    ) -> Result<Response<pb::SuggestResponse>, Status> {
        let call = Api::call(&req)?;
        let seat = Some(req.get_ref().seat);
        if req.get_ref().level != pb::BotLevel::Hard as i32 {
            return traced(&self.metrics, &call, seat, || {
                suggest(&self.tokens, req.get_ref())
            });
        }
        // Opened and checked before the queue: a call that may not search takes no
        // place in it.
        let asked = match ask(&self.tokens, req.get_ref()) {
            Ok(asked) => asked,
            Err(error) => return traced(&self.metrics, &call, seat, || Err(error)),
        };
        let traced_call = call.clone();
        self.searching(&call, asked.match_id(), seat, move |api, stop| {
            let answer = asked.search_until(stop).transpose()?;
            Some(traced(&api.metrics, &traced_call, seat, || answer))
        })
        .await?
    }
}

/// The most worlds a HARD Suggest samples, whatever it asks for (up to 1024 may be
/// asked; the answer's `worlds` says how many were sampled). The latency budget's: a
/// call should answer within 100 ms, and at the costliest position (a two-player
/// lead) a world costs up to about 20 µs of CPU on the reference machine, so 512
/// worlds are about 10 ms: a player's search, which a flood's do not go before
/// (`searches`), still answers well within the budget (docs/BOTS.md).
pub const SUGGEST_MAX_WORLDS: u32 = 512;

/// A bot's advice to the seat on turn, from that seat's knowledge only (the engine's
/// `suggest` never sees the game), for the holder of that seat's credential. Changes
/// nothing. A HARD search samples at most [`SUGGEST_MAX_WORLDS`] worlds.
pub fn suggest(tokens: &Tokens, req: &pb::SuggestRequest) -> Result<pb::SuggestResponse, ApiError> {
    match ask(tokens, req)?.search_until(&|| false)? {
        Some(answer) => Ok(answer),
        None => unreachable!("only a stop that says so ends a search early"),
    }
}

/// A Suggest up to its search: the request read, the token opened and the seat's
/// credential checked, so that a HARD search enters the search queue only for a call
/// that may search, and under its match ([`Asked::match_id`]).
pub struct Asked {
    match_id: MatchId,
    knowledge: Knowledge,
    level: Level,
    worlds: Option<u32>,
    seed: u64,
}

/// The first half of [`suggest`]: everything a Suggest may be refused for.
pub fn ask(tokens: &Tokens, req: &pb::SuggestRequest) -> Result<Asked, ApiError> {
    let level = level_in(req.level)?;
    let worlds = worlds_in(req.worlds)?.map(|w| w.min(SUGGEST_MAX_WORLDS));
    let opened = tokens.open(&req.state)?;
    let seat = seat_in(req.seat, opened.game.rules(), "seat")?;
    opened.seats.authorize(seat, &req.credential)?;
    let knowledge = opened.game.knowledge(seat)?;
    let match_id = opened.match_id;
    tokens.keep(opened);
    Ok(Asked {
        match_id,
        knowledge,
        level,
        worlds,
        seed: req.seed.unwrap_or(0),
    })
}

impl Asked {
    /// The match whose seat asked.
    pub fn match_id(&self) -> MatchId {
        self.match_id
    }

    /// The second half of [`suggest`]: the search, asking `stop` before each world
    /// whether to give up (`Ok(None)` when it said so).
    pub fn search_until(&self, stop: &dyn Stop) -> Result<Option<pb::SuggestResponse>, ApiError> {
        let search = Search::worlds(self.worlds);
        let Some(suggestion) =
            suggest::suggest_until(&self.knowledge, self.level, search, self.seed, stop)?
        else {
            return Ok(None);
        };
        Ok(Some(suggestion_out(&suggestion, self.level, self.worlds)))
    }
}
