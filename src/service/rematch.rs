//! `Rematch`: a finished match's rematch, the same for every seat that asks (its
//! match id, secret, seed and credentials derived from the finished match's secret:
//! `state::rematch`), made through the steps (`steps.rs`); with a store, written there
//! before it is answered, and offered to the finished match's watchers.

use tonic::{Request, Response, Status};

use super::clocks::Judge;
use super::convert::seat_in;
use super::status::ApiError;
use super::steps::{Answer, Policy, answer, authorize};
use super::{Api, traced, within};
use crate::call::CallContext;
use crate::engine::{Game, Phase, Seat};
use crate::proto::v1 as pb;
use crate::state::rematch::Rematch;
use crate::state::{self, MatchId, Opened, Player, Record, Seats, Tokens};
use crate::store::RematchOffer;

impl Api {
    pub(super) async fn rematch_call(
        &self,
        req: Request<pb::RematchRequest>,
    ) -> Result<Response<pb::RematchResponse>, Status> {
        let seat = req.get_ref().seat;
        let call = Api::call(&req)?;
        let answer = self.rematch(req.get_ref(), &call).await;
        traced(&self.metrics, &call, Some(seat), || {
            let (answer, credential) = answer?;
            Ok(pb::RematchResponse {
                state: answer.state,
                credential: Some(credential),
                view: Some(answer.view),
            })
        })
    }

    /// The rematch: made (or, asked again, made the same), written to the store if
    /// there is one (already there: as the store holds it now, another seat may have
    /// dealt), then offered to the finished match's watchers.
    async fn rematch(
        &self,
        req: &pb::RematchRequest,
        call: &CallContext,
    ) -> Result<(Answer, pb::SeatCredential), ApiError> {
        let judge = self.judge();
        let (made, answer) = rematch(&self.tokens, &self.policy, &judge, req)?;
        let answer = match self.stored(answer, call).await {
            Err(ApiError::StateStale(_)) => self.as_it_is(&made, call, &judge).await?,
            stored => stored?,
        };
        // Counted once, by the ask that made the offer (without a store, every ask).
        let made_offer = match &self.store {
            Some(store) => {
                let offer = RematchOffer {
                    match_id: made.rematch,
                    seat: made.seat as u8,
                };
                within(call, store.offer_rematch(&made.finished, offer)).await?
            }
            None => true,
        };
        if made_offer {
            self.metrics.game_created();
        }
        let credential = pb::SeatCredential {
            seat: made.seat as u32,
            credential: made.credential.to_vec(),
        };
        Ok((answer, credential))
    }

    /// The rematch as the store holds it, moved on by another seat, shown to the
    /// asking seat (its credential checked on it).
    async fn as_it_is(
        &self,
        made: &Made,
        call: &CallContext,
        judge: &Judge,
    ) -> Result<Answer, ApiError> {
        let Some(store) = &self.store else {
            return Err(ApiError::StoreRequired);
        };
        let head = within(call, store.latest(&made.rematch))
            .await?
            .ok_or(ApiError::MatchForgotten)?;
        let opened = self.tokens.open(&head.token)?;
        authorize(&opened.seats, Some(made.seat), &made.credential)?;
        let mut answer = answer(&self.tokens, opened, Some(made.seat), &[], judge)?;
        // The head's own token: the same state, as any call shows the store's head.
        answer.state = head.token;
        Ok(answer)
    }
}

/// A rematch made for one seat: the asking seat and its credential, and the two
/// matches' ids.
pub struct Made {
    pub seat: Seat,
    pub credential: state::Credential,
    pub finished: MatchId,
    pub rematch: MatchId,
}

/// The rematch of the finished match `req.state`, for `req.seat`, and its answer (to
/// store).
pub fn rematch(
    tokens: &Tokens,
    policy: &Policy,
    judge: &Judge,
    req: &pb::RematchRequest,
) -> Result<(Made, Answer), ApiError> {
    let finished = tokens.open(&req.state)?;
    let rules = *finished.game.rules();
    let seat = seat_in(req.seat, &rules, "seat")?;
    authorize(&finished.seats, Some(seat), &req.credential)?;
    if finished.game.phase() != Phase::Over {
        return Err(ApiError::Rules(crate::engine::Error::WrongPhase {
            phase: finished.game.phase(),
        }));
    }
    let next = state::rematch::derive(&finished.secret);
    let seats = rematch_seats(&finished.seats, &next);
    let opened = Opened::new(Record {
        match_id: next.match_id,
        game: Game::new(rules, next.seed)?,
        seats,
        secret: next.secret,
        previous: None,
        stored: policy.match_store,
        names: finished.names.clone(),
        player_ids: finished.player_ids.clone(),
        clocks: rules
            .clock
            .as_ref()
            .map(|c| crate::engine::Clocks::new(c, rules.players)),
    });
    let finished_id = finished.match_id;
    tokens.keep(finished);
    let answer = answer(tokens, opened, Some(seat), &[], judge)?;
    let made = Made {
        seat,
        credential: next.credential(seat),
        finished: finished_id,
        rematch: next.match_id,
    };
    Ok((made, answer))
}

/// The rematch's seats: each bot at its level, each human seat (a bot holding it or
/// not) its player's, under the rematch's credential for it.
fn rematch_seats(finished: &Seats, next: &Rematch) -> Seats {
    let mut seats = *finished;
    for (seat, player) in seats.0.iter_mut().enumerate() {
        *player = match *player {
            Player::Human(_) | Player::Held { .. } => Player::Human(next.credential(seat)),
            kept @ (Player::Bot(_) | Player::Open) => kept,
        };
    }
    seats
}
