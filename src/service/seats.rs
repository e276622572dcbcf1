//! `NewGame` and `ClaimSeat`: a match made with its seats (open, claimed in the call,
//! or bots), and an open seat claimed, each through the steps (`steps.rs`); with a
//! store, written there before it is answered.

use tonic::{Request, Response, Status};

use super::clocks::Judge;
use super::convert::{claim_key_in, display_name_in, level_in, rules_in, seat_in, viewer_in};
use super::status::ApiError;
use super::steps::{Answer, Policy, answer, random_bytes, random_seed, secret_bytes};
use super::{Api, traced};
use crate::engine::Game;
use crate::passes::Passes;
use crate::proto::v1 as pb;
use crate::state::names::Names;
use crate::state::plaintext::PlayerIds;
use crate::state::seats::CREDENTIAL_LEN;
use crate::state::{self, MatchId, Opened, Player, PlayerId, Record, Seats, Tokens};

impl Api {
    pub(super) async fn new_game_call(
        &self,
        req: Request<pb::NewGameRequest>,
    ) -> Result<Response<pb::NewGameResponse>, Status> {
        // With a store, the new match's record is written before it is answered: its
        // tokens say it was made with one, so a store that does not hold it refuses it.
        let call = Api::call(&req)?;
        let passes = self.passes.as_deref();
        let made = new_game_with_passes(
            &self.tokens,
            &self.policy,
            &self.judge(),
            req.get_ref(),
            passes,
        );
        let answer = match made {
            Ok(answer) => self.stored(answer, &call).await,
            Err(error) => Err(error),
        };
        traced(&self.metrics, &call, None, || {
            let answer = answer?;
            self.metrics.game_created();
            Ok(pb::NewGameResponse {
                state: answer.state,
                view: Some(answer.view),
                events: answer.events,
                credentials: answer.credentials,
            })
        })
    }

    pub(super) async fn claim_seat_call(
        &self,
        req: Request<pb::ClaimSeatRequest>,
    ) -> Result<Response<pb::ClaimSeatResponse>, Status> {
        let seat = req.get_ref().seat;
        let call = Api::call(&req)?;
        let passes = self.passes.as_deref();
        let answer = claim_seat_with_passes(
            &self.tokens,
            &self.policy,
            &self.judge(),
            req.get_ref(),
            passes,
        );
        let answer = match answer {
            Ok((answer, credential)) => (self.stored(answer, &call).await).map(|a| (a, credential)),
            Err(error) => Err(error),
        };
        traced(&self.metrics, &call, Some(seat), || {
            let (answer, credential) = answer?;
            Ok(pb::ClaimSeatResponse {
                state: answer.state,
                credential: Some(credential),
                view: Some(answer.view),
            })
        })
    }
}

/// The refusal of a display name that looks like another seat's at the table
/// (`state::names::look_alike`).
const LOOKS_ALIKE: &str =
    "a display name may not look like another seat's name at the table: choose another";

/// The player id a request's `pass` names, checked before anything else at the
/// judge's time; `None` for no pass (refused where every claim needs one).
fn pass_in(
    passes: Option<&Passes>,
    pass: &str,
    field: &'static str,
    judge: &Judge,
) -> Result<Option<PlayerId>, ApiError> {
    match passes {
        _ if pass.is_empty() => match passes {
            Some(p) if p.required() => Err(ApiError::PassRequired { field }),
            _ => Ok(None),
        },
        None => Err(ApiError::PassesNotAccepted { field }),
        Some(passes) => passes
            .check(pass, judge.now_ms / 1000)
            .map(Some)
            .map_err(|error| ApiError::Pass { field, error }),
    }
}

/// `NewGame` on a server that takes no passes.
pub fn new_game(
    tokens: &Tokens,
    policy: &Policy,
    judge: &Judge,
    req: &pb::NewGameRequest,
) -> Result<Answer, ApiError> {
    new_game_with_passes(tokens, policy, judge, req, None)
}

/// `NewGame`, the passes of its seats checked with `passes` (none: the server takes
/// none).
pub fn new_game_with_passes(
    tokens: &Tokens,
    policy: &Policy,
    judge: &Judge,
    req: &pb::NewGameRequest,
    passes: Option<&Passes>,
) -> Result<Answer, ApiError> {
    // The passes first: a refusal says nothing of the rest of the request.
    let mut player_ids = PlayerIds::default();
    for (seat, setup) in req.seats.iter().enumerate().take(player_ids.0.len()) {
        if !setup.claim {
            if !setup.pass.is_empty() {
                return Err(ApiError::field(
                    "seats.pass",
                    "only a seat claimed in this call shows a pass in it",
                ));
            }
            continue;
        }
        if let Some(id) = pass_in(passes, &setup.pass, "seats.pass", judge)? {
            if player_ids.seat_of(&id, seat).is_some() {
                return Err(ApiError::PlayerAlreadySeated);
            }
            player_ids.0[seat] = Some(id);
        }
    }
    let rules = rules_in(req.rules.as_ref())?;
    let viewer = viewer_in(req.viewer, &rules)?;
    let seed = match req.seed {
        Some(_) if !policy.allow_client_seeds => return Err(ApiError::SeedNotAllowed),
        Some(seed) => seed,
        None => random_seed(),
    };
    let mut seats = Seats::OPEN;
    let mut names = Names::default();
    let mut credentials = Vec::new();
    match req.seats.len() {
        0 => {}
        n if n == rules.players => {
            for (seat, (slot, setup)) in seats.0.iter_mut().zip(&req.seats).enumerate() {
                if !setup.display_name.is_empty() {
                    if !setup.claim {
                        return Err(ApiError::field(
                            "seats.display_name",
                            "only a seat claimed in this call is named in it",
                        ));
                    }
                    let name = display_name_in(&setup.display_name, "seats.display_name")?;
                    if names.alike(seat, &name).is_some() {
                        return Err(ApiError::field("seats.display_name", LOOKS_ALIKE));
                    }
                    names.0[seat] = name;
                }
                *slot =
                    match (setup.bot, setup.claim) {
                        (0, false) => Player::Open,
                        (0, true) => {
                            let credential = secret_bytes::<CREDENTIAL_LEN>()?;
                            credentials.push(pb::SeatCredential {
                                seat: seat as u32,
                                credential: credential.to_vec(),
                            });
                            Player::Human(credential)
                        }
                        (level, false) => Player::Bot(level_in(level).map_err(|_| {
                            ApiError::field("seats.bot", "not a known BotLevel value")
                        })?),
                        (_, true) => {
                            return Err(ApiError::field(
                                "seats.claim",
                                "a bot's seat has no credential to claim",
                            ));
                        }
                    };
            }
        }
        _ => {
            return Err(ApiError::field(
                "seats",
                "one entry per player, in seat order (or none: every seat open)",
            ));
        }
    }
    if let Some(v) = viewer
        && !matches!(seats.0[v], Player::Human(_))
    {
        return Err(ApiError::field(
            "viewer",
            "a new match is shown only to a seat claimed in the same call",
        ));
    }
    let opened = Opened::new(Record {
        match_id: MatchId(random_bytes()),
        game: Game::new(rules, seed)?,
        seats,
        secret: secret_bytes()?,
        previous: None,
        stored: policy.match_store,
        names,
        clocks: rules
            .clock
            .as_ref()
            .map(|c| crate::engine::Clocks::new(c, rules.players)),
        player_ids,
    });
    let mut answer = answer(tokens, opened, viewer, &[], judge)?;
    answer.credentials = credentials;
    Ok(answer)
}

/// A seat claimed on a server that takes no passes: the answer, and the seat's new
/// credential.
pub fn claim_seat(
    tokens: &Tokens,
    policy: &Policy,
    judge: &Judge,
    req: &pb::ClaimSeatRequest,
) -> Result<(Answer, pb::SeatCredential), ApiError> {
    claim_seat_with_passes(tokens, policy, judge, req, None)
}

/// A seat claimed, its pass checked with `passes` (none: the server takes none): the
/// answer, and the seat's new credential.
pub fn claim_seat_with_passes(
    tokens: &Tokens,
    policy: &Policy,
    judge: &Judge,
    req: &pb::ClaimSeatRequest,
    passes: Option<&Passes>,
) -> Result<(Answer, pb::SeatCredential), ApiError> {
    // Before the token is opened: a refusal says nothing of the match.
    let player_id = pass_in(passes, &req.pass, "pass", judge)?;
    let mut opened = tokens.open(&req.state)?;
    let rules = *opened.game.rules();
    let seat = seat_in(req.seat, &rules, "seat")?;
    let name = display_name_in(&req.display_name, "display_name")?;
    if !req.claim_key.is_empty() && matches!(opened.seats.0[seat], Player::Human(_)) {
        // This very claim, made again after the match moved on (its answer was lost,
        // and another device went on from it): the key gives the credential the seat
        // holds, so its claimer gets it back, with the match as it is (nothing moves).
        let claimed = state::claim::derive(&opened.secret, seat, claim_key_in(&req.claim_key)?);
        if opened.seats.authorize(seat, &claimed.credential).is_ok() {
            let answer = answer(tokens, opened, Some(seat), &[], judge)?;
            let credential = pb::SeatCredential {
                seat: seat as u32,
                credential: claimed.credential.to_vec(),
            };
            return Ok((answer, credential));
        }
    }
    if opened.game.hand_number() != 0 {
        return Err(ApiError::Rules(crate::engine::Error::WrongPhase {
            phase: opened.game.phase(),
        }));
    }
    if opened.seats.0[seat] != Player::Open {
        return Err(ApiError::SeatTaken(seat));
    }
    if opened.names.alike(seat, &name).is_some() {
        return Err(ApiError::field("display_name", LOOKS_ALIKE));
    }
    if let Some(id) = &player_id
        && opened.player_ids.seat_of(id, seat).is_some()
    {
        return Err(ApiError::PlayerAlreadySeated);
    }
    // A claim in another branch (an older token) must not deal the hands of this one,
    // so each claim makes the seed anew (nothing has been dealt yet): drawn, or with a
    // claim key derived from it (the same claim again makes the same state).
    let (credential, seed) = if req.claim_key.is_empty() {
        (secret_bytes::<CREDENTIAL_LEN>()?, random_seed())
    } else {
        let claimed = state::claim::derive(&opened.secret, seat, claim_key_in(&req.claim_key)?);
        (claimed.credential, claimed.seed)
    };
    let previous = opened.state_id();
    if !policy.allow_client_seeds {
        opened.game = Game::new(rules, seed)?;
    }
    opened.seats.0[seat] = Player::Human(credential);
    opened.names.0[seat] = name;
    opened.player_ids.0[seat] = player_id;
    opened.previous = Some(previous);
    let answer = answer(tokens, opened, Some(seat), &[], judge)?;
    let credential = pb::SeatCredential {
        seat: seat as u32,
        credential: credential.to_vec(),
    };
    Ok((answer, credential))
}
