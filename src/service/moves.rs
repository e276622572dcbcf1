//! `Deal`, `Play`, `Draw`, `ClaimTimeout`, `Leave`, `ReturnToSeat` and `Score`: a
//! match's moves (and its absent seats', `clocks.rs`), each through the steps
//! (`steps.rs`), the bots that come on turn played inside the call (on the blocking
//! pool, in the search queue, when a HARD one may search), and the store moved before
//! the answer.

use tokio::time::Instant;
use tonic::{Request, Response, Status};

use super::clocks::Judge;
use super::convert::{end_in, event_out, sheet_out, tile_in};
use super::status::ApiError;
use super::status::deadline_passed;
use super::steps::{self, Answer, Doing, Step, act, open, render};
use super::{Api, traced};
use crate::engine::suggest::Stop;
use crate::engine::{Action, Seat};
use crate::proto::v1 as pb;
use crate::state::Tokens;

/// A changing call's answer as its response: Deal's, Play's, Draw's.
macro_rules! respond {
    ($($response:ident),*) => {$(
        impl From<Answer> for pb::$response {
            fn from(a: Answer) -> pb::$response {
                pb::$response {
                    state: a.state,
                    view: Some(a.view),
                    events: a.events,
                }
            }
        }
    )*};
}

respond!(
    DealResponse,
    PlayResponse,
    DrawResponse,
    ClaimTimeoutResponse,
    LeaveResponse,
    ReturnToSeatResponse
);

impl Api {
    pub(super) async fn score_call(
        &self,
        req: Request<pb::ScoreRequest>,
    ) -> Result<Response<pb::ScoreResponse>, Status> {
        let call = Api::call(&req)?;
        let judge = self.judge();
        traced(&self.metrics, &call, None, || {
            let mut response = score(&self.tokens, &judge, req.get_ref())?;
            if let Some(view) = &mut response.view {
                self.certify(&req.get_ref().state, view);
            }
            Ok(response)
        })
    }

    /// A Deal, Play or Draw: its own move, then the bots that come on turn (on the
    /// blocking pool, in the search queue, when a HARD one may search), sealed and
    /// answered. A call whose search is refused or stopped does nothing:
    /// nothing is sealed, so the client's token is still the match's and a retry with
    /// it answers what this call would have. A call in which HARD bots moved lasts at
    /// least their floor (`bot_move_floor` per full search) from when its search got a
    /// slot, waited out asynchronously after the slot is given back, so its time says
    /// nothing about the bots' tiles, however long it waited for the slot.
    ///
    /// `seat` reads the seat the request acts for (for the log), `begin` makes its move
    /// (`deal`, `play`, `draw` below): the trait's Deal, Play and Draw are one call
    /// each of this.
    pub(super) async fn changing<Q: Send, R: From<Answer> + Send + 'static>(
        &self,
        req: Request<Q>,
        seat: fn(&Q) -> Option<u32>,
        begin: fn(&Tokens, &Judge, &Q) -> Result<Step, ApiError>,
    ) -> Result<Response<R>, Status> {
        let call = Api::call(&req)?;
        let req = req.into_inner();
        let seat = seat(&req);
        let judge = self.judge();
        let step = match begin(&self.tokens, &judge, &req) {
            Ok(step) => step,
            // A move refused as too late may be the retry of the same move, taken in
            // time and recorded, whose answer was lost: judged as of the recorded one,
            // it is answered with the recorded state (`Api::recorded_already`), as a
            // retry made within the time is (`Api::judged_again`).
            Err(late @ ApiError::TurnTimedOut { .. }) => {
                let again = match self.judged_again(late, &call).await {
                    Ok(then) => begin(&self.tokens, &then, &req).map(|s| s.shown_at(&judge)),
                    Err(refused) => Err(refused),
                };
                match again {
                    Ok(step) => step,
                    Err(error) => return traced(&self.metrics, &call, seat, || Err(error)),
                }
            }
            Err(error) => return traced(&self.metrics, &call, seat, || Err(error)),
        };
        let searches = step.searches();
        let match_id = step.match_id();
        // The floor counts from when the bots start thinking, in their search slot: a
        // call that waited for a slot behind other searches (load anyone can make with
        // HARD Suggests) then still lasts the floor past its wait, so the wait does not
        // eat into the floor and leave the search's own time showing.
        // A call refused after its bots searched lasts the floor too (a deferred move
        // that the timed-out seat's bot made illegal): its time hides theirs as well.
        // Tokio's clock (the system's, unless a test paused it): the floor is waited
        // out on it.
        let end = move |api: &Api, stop: &dyn Stop| {
            let started = Instant::now();
            let mut worlds = 0;
            let answer = steps::finish_spending(&api.tokens, &api.policy, step, stop, &mut worlds)
                .transpose()?;
            let floor = api.bot_floor(worlds);
            Some((answer, started.checked_add(floor).unwrap_or(started)))
        };
        let (answer, until) = if searches {
            self.searching(&call, match_id, seat, end).await?
        } else {
            // No HARD bot: nothing asks the stop.
            end(self, &|| false).ok_or_else(|| Status::from(deadline_passed(&call)))?
        };
        if until > Instant::now() {
            // A deadline that passes during the floor ends the call as it would have
            // ended a search still running: the same answer at the same time, so
            // whether the bots' search had finished does not show either. The store is
            // told only after the floor, so the time its head moves does not show it
            // either, and an expired call stores nothing.
            let deadline = Instant::from_std(call.deadline);
            if until > deadline {
                tokio::time::sleep_until(deadline).await;
                return Err(deadline_passed(&call).into());
            }
            tokio::time::sleep_until(until).await;
        }
        let answer = match answer {
            Ok(answer) => self.stored(answer, &call).await,
            Err(error) => Err(error),
        };
        traced(&self.metrics, &call, seat, || {
            let mut answer = answer?;
            self.certify(&answer.state, &mut answer.view);
            self.metrics.events(&answer.events);
            Ok(R::from(answer))
        })
    }
}

pub fn deal(tokens: &Tokens, judge: &Judge, req: &pb::DealRequest) -> Result<Step, ApiError> {
    act(
        tokens,
        judge,
        &req.state,
        req.viewer,
        &req.credential,
        None,
        |record, _| {
            let players = record.game.rules().players;
            if record.game.hand_number() == 0 && record.seats.any_open(players) {
                return Err(ApiError::SeatsOpen);
            }
            Ok(Doing::Move(Action::Deal))
        },
    )
}

pub fn play(tokens: &Tokens, judge: &Judge, req: &pb::PlayRequest) -> Result<Step, ApiError> {
    let tile = tile_in(req.tile.as_ref())?;
    let end = end_in(req.end)?;
    act(
        tokens,
        judge,
        &req.state,
        req.viewer,
        &req.credential,
        Some(req.seat),
        |_, seat| {
            Ok(Doing::Move(Action::Play {
                seat: seat.unwrap_or_default(),
                tile,
                end,
            }))
        },
    )
}

pub fn draw(tokens: &Tokens, judge: &Judge, req: &pb::DrawRequest) -> Result<Step, ApiError> {
    act(
        tokens,
        judge,
        &req.state,
        req.viewer,
        &req.credential,
        Some(req.seat),
        |_, seat| {
            Ok(Doing::Move(Action::Draw {
                seat: seat.unwrap_or_default(),
            }))
        },
    )
}

/// ClaimTimeout: only the timeout of the seat on turn, by any seat of the match.
pub fn claim_timeout(
    tokens: &Tokens,
    judge: &Judge,
    req: &pb::ClaimTimeoutRequest,
) -> Result<Step, ApiError> {
    let (state, seat, credential) = (&req.state, req.seat, &req.credential);
    by_seat(tokens, judge, state, seat, credential, |_| {
        Doing::ClaimTimeout
    })
}

/// Leave: the seat's player goes; a bot holds the seat, or it forfeits.
pub fn leave(tokens: &Tokens, judge: &Judge, req: &pb::LeaveRequest) -> Result<Step, ApiError> {
    let (state, seat, credential) = (&req.state, req.seat, &req.credential);
    by_seat(tokens, judge, state, seat, credential, Doing::Leave)
}

/// ReturnToSeat: the seat's player takes it back from the bot holding it.
pub fn return_to_seat(
    tokens: &Tokens,
    judge: &Judge,
    req: &pb::ReturnToSeatRequest,
) -> Result<Step, ApiError> {
    let (state, seat, credential) = (&req.state, req.seat, &req.credential);
    by_seat(tokens, judge, state, seat, credential, Doing::Return)
}

/// A call a seat makes with its credential, its view rendered for that seat: what it
/// does is `doing` of the seat.
fn by_seat(
    tokens: &Tokens,
    judge: &Judge,
    state: &[u8],
    seat: u32,
    credential: &[u8],
    doing: fn(Seat) -> Doing,
) -> Result<Step, ApiError> {
    let asked = Some(seat);
    act(tokens, judge, state, asked, credential, asked, |_, seat| {
        Ok(doing(seat.unwrap_or_default()))
    })
}

pub fn score(
    tokens: &Tokens,
    judge: &Judge,
    req: &pb::ScoreRequest,
) -> Result<pb::ScoreResponse, ApiError> {
    let (opened, viewer) = open(tokens, &req.state, req.viewer, &req.credential)?;
    let game = &opened.game;
    let rules = game.rules();
    let hand_events = match req.include_hand_events {
        true => game
            .hand_events()
            .into_iter()
            .map(|e| event_out(rules, e, viewer))
            .collect(),
        false => Vec::new(),
    };
    let response = pb::ScoreResponse {
        sheet: Some(sheet_out(rules, game.sheet(), game.winner())),
        view: Some(render(&opened, viewer, judge)?),
        hand_events,
    };
    tokens.keep(opened);
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Game;
    use crate::engine::suggest::Search;
    use crate::service::seats::{claim_seat, new_game};
    use crate::service::steps::{Policy, finish};
    use crate::state::{MATCH_ID_LEN, MatchId, Opened, Record};

    fn ring() -> std::sync::Arc<crate::state::KeyRing> {
        std::sync::Arc::new(crate::state::KeyRing::new(vec![(1, [3; 32])], None).unwrap())
    }

    fn tokens() -> Tokens {
        Tokens::new(ring(), 64)
    }

    /// A server's policy that takes client seeds, as the tests' servers do.
    const SEEDED: Policy = Policy {
        allow_client_seeds: true,
        bot_search: Search {
            worlds: 16,
            horizon: None,
        },
        match_store: false,
        clock_lag_grace_ms: 2000,
        max_clock_skew_ms: 1000,
        show_player_ids: false,
    };

    /// The time the tests' calls are judged at.
    const J: Judge = Judge {
        now_ms: 1_800_000_000_000,
        grace_ms: 2000,
        skew_ms: 1000,
        show_player_ids: false,
    };

    /// A hot-seat match of `players` (every seat claimed in NewGame), seeded.
    fn hot_seat(players: u32, seed: u64) -> pb::NewGameRequest {
        pb::NewGameRequest {
            rules: Some(pb::Rules {
                players,
                ..Default::default()
            }),
            seed: Some(seed),
            viewer: None,
            seats: vec![
                pb::SeatSetup {
                    bot: 0,
                    claim: true,
                    display_name: String::new(),
                    pass: String::new(),
                };
                players as usize
            ],
        }
    }

    /// The credentials NewGame answered, by seat.
    fn credentials(answer: &Answer) -> Vec<Vec<u8>> {
        let mut out = vec![Vec::new(); 4];
        for c in &answer.credentials {
            out[c.seat as usize] = c.credential.clone();
        }
        out
    }

    fn dealt(tokens: &Tokens, state: &[u8]) -> Answer {
        let req = pb::DealRequest {
            state: state.to_vec().into(),
            ..Default::default()
        };
        finish(tokens, &SEEDED, deal(tokens, &J, &req).unwrap()).unwrap()
    }

    fn look(tokens: &Tokens, state: &[u8], seat: Option<u32>, credential: &[u8]) -> pb::GameView {
        score(
            tokens,
            &J,
            &pb::ScoreRequest {
                state: state.to_vec().into(),
                viewer: seat,
                credential: credential.to_vec(),
                include_hand_events: false,
            },
        )
        .unwrap()
        .view
        .unwrap()
    }

    fn played(
        tokens: &Tokens,
        state: &[u8],
        seat: u32,
        m: pb::LegalMove,
        credential: &[u8],
    ) -> Result<Answer, ApiError> {
        let req = pb::PlayRequest {
            state: state.to_vec().into(),
            seat,
            tile: m.tile,
            end: m.end,
            viewer: Some(seat),
            credential: credential.to_vec(),
        };
        finish(tokens, &SEEDED, play(tokens, &J, &req)?)
    }

    #[test]
    fn a_game_goes_new_deal_play_through_the_handlers() {
        let tokens = tokens();
        let mut req = hot_seat(2, 1);
        req.viewer = Some(0);
        let new = new_game(&tokens, &SEEDED, &J, &req).unwrap();
        assert!(new.events.is_empty());
        assert_eq!(new.view.viewer, Some(0));
        assert_eq!(new.credentials.len(), 2);
        assert!(new.view.previous_state_id.is_empty());
        assert_eq!(new.view.state_id.len(), 16);
        let creds = credentials(&new);
        let dealt = dealt(&tokens, &new.state);
        assert_eq!(dealt.view.previous_state_id, new.view.state_id);
        let turn = dealt.view.turn.unwrap();
        assert!(dealt.view.hand.is_empty(), "a spectator sees no hand");
        let seen = look(&tokens, &dealt.state, Some(turn), &creds[turn as usize]);
        assert_eq!(seen.hand.len(), 9);
        assert_eq!(
            seen.state_id, dealt.view.state_id,
            "Score shows the same state"
        );
        let lead = seen.legal_moves[0];
        let after = played(&tokens, &dealt.state, turn, lead, &creds[turn as usize]).unwrap();
        assert_eq!(after.view.layout.len(), 1);
        assert_eq!(after.view.layout[0].seat, turn);
        assert_eq!(after.view.moves, 2);
        assert!(after.state.len() <= 512);
        // The other seat's credential does not open the seat on turn, nor none.
        let other = &creds[1 - turn as usize];
        assert!(matches!(
            played(&tokens, &dealt.state, turn, lead, other),
            Err(ApiError::Denied(crate::state::Denied::CredentialInvalid(_)))
        ));
        assert!(matches!(
            played(&tokens, &dealt.state, turn, lead, &[]),
            Err(ApiError::Denied(crate::state::Denied::CredentialRequired(
                _
            )))
        ));
    }

    /// A call refused after a timed-out seat's HARD bot searched (its own move no
    /// longer legal once the bot had played) reports the worlds searched, from which
    /// the service makes it last the bots' floor: its time hides the bot's tiles too.
    #[test]
    fn a_call_refused_after_a_hard_timeout_turn_reports_the_worlds_searched() {
        use crate::service::steps::finish_spending;
        let tokens = tokens();
        let mut req = hot_seat(2, 12);
        req.rules = Some(pb::Rules {
            players: 2,
            clock: Some(pb::TurnClock::default()),
            absence: Some(pb::Absence {
                rule: pb::AbsenceRule::Bot as i32,
                bot: pb::BotLevel::Hard as i32,
                bot_takes_seat_after: Some(0),
            }),
            ..Default::default()
        });
        let new = new_game(&tokens, &SEEDED, &J, &req).unwrap();
        let creds = credentials(&new);
        let dealt = dealt(&tokens, &new.state);
        let turn = dealt.view.turn.unwrap();
        let other = 1 - turn;
        // Long past the deadline, the other seat plays a tile: after the bot's turn
        // for the late seat it is on turn, but the tile is the late seat's, not its.
        let late = Judge {
            now_ms: J.now_ms + 3_600_000,
            ..J
        };
        let theirs = look(&tokens, &dealt.state, Some(turn), &creds[turn as usize]).hand[0];
        let req = pb::PlayRequest {
            state: dealt.state.clone().into(),
            seat: other,
            tile: Some(theirs),
            end: 0,
            viewer: None,
            credential: creds[other as usize].clone(),
        };
        let step = play(&tokens, &late, &req).unwrap();
        let mut worlds = 0;
        let refused = finish_spending(&tokens, &SEEDED, step, &|| false, &mut worlds);
        assert!(refused.is_err(), "{:?}", refused.map(|a| a.map(|a| a.view)));
        assert!(worlds > 0, "the HARD bot searched before the refusal");
    }

    #[test]
    fn a_retried_move_has_the_same_state_id_and_another_move_another() {
        let tokens = Tokens::uncached(ring());
        let new = new_game(&tokens, &SEEDED, &J, &hot_seat(2, 9)).unwrap();
        let creds = credentials(&new);
        let dealt = dealt(&tokens, &new.state);
        let turn = dealt.view.turn.unwrap();
        let cred = &creds[turn as usize];
        let seen = look(&tokens, &dealt.state, Some(turn), cred);
        let (a, b) = (seen.legal_moves[0], seen.legal_moves[1]);
        let first = played(&tokens, &dealt.state, turn, a, cred).unwrap();
        let again = played(&tokens, &dealt.state, turn, a, cred).unwrap();
        let other = played(&tokens, &dealt.state, turn, b, cred).unwrap();
        assert_ne!(first.state, again.state, "every token is sealed anew");
        assert_eq!(first.view.state_id, again.view.state_id);
        assert_ne!(first.view.state_id, other.view.state_id);
        assert_eq!(first.view.previous_state_id, dealt.view.state_id);
        assert_eq!(other.view.previous_state_id, dealt.view.state_id);
    }

    #[test]
    fn seeds_are_refused_unless_the_server_allows_them() {
        let tokens = tokens();
        let policy = Policy::default();
        assert_eq!(
            new_game(&tokens, &policy, &J, &hot_seat(2, 1)).err(),
            Some(ApiError::SeedNotAllowed)
        );
        let mut req = hot_seat(2, 1);
        req.seed = None;
        assert!(new_game(&tokens, &policy, &J, &req).is_ok());
    }

    #[test]
    fn seats_are_claimed_once_before_the_deal_and_each_claim_reseeds() {
        let tokens = Tokens::uncached(ring());
        let policy = Policy::default();
        let new = new_game(
            &tokens,
            &policy,
            &J,
            &pb::NewGameRequest {
                seats: vec![
                    pb::SeatSetup {
                        bot: 0,
                        claim: true,
                        display_name: String::new(),
                        pass: String::new(),
                    },
                    pb::SeatSetup::default(),
                ],
                ..Default::default()
            },
        )
        .unwrap();
        let deal_now = |state: &[u8]| {
            deal(
                &tokens,
                &J,
                &pb::DealRequest {
                    state: state.to_vec().into(),
                    ..Default::default()
                },
            )
            .map(|_| ())
        };
        assert_eq!(deal_now(&new.state).err(), Some(ApiError::SeatsOpen));
        let claim = |state: &[u8], seat| {
            claim_seat(
                &tokens,
                &policy,
                &J,
                &pb::ClaimSeatRequest {
                    state: state.to_vec(),
                    seat,
                    ..Default::default()
                },
            )
            .map(|(answer, credential)| pb::ClaimSeatResponse {
                state: answer.state,
                credential: Some(credential),
                view: Some(answer.view),
            })
        };
        assert_eq!(claim(&new.state, 0).err(), Some(ApiError::SeatTaken(0)));
        let a = claim(&new.state, 1).unwrap();
        let b = claim(&new.state, 1).unwrap();
        // Two claims of one seat from one token: two branches, two credentials, and
        // two seeds, so neither branch's holder learns the other's hands.
        assert_ne!(a.credential, b.credential);
        assert_ne!(
            a.view.as_ref().unwrap().state_id,
            b.view.as_ref().unwrap().state_id
        );
        let seed = |state: &[u8]| tokens.open(state).unwrap().game.seed();
        assert_ne!(seed(&a.state), seed(&b.state));
        assert_ne!(seed(&a.state), seed(&new.state));
        assert!(deal_now(&a.state).is_ok());
        let after = dealt(&tokens, &a.state);
        assert!(matches!(
            claim(&after.state, 1),
            Err(ApiError::Rules(crate::engine::Error::WrongPhase { .. }))
        ));
        // The claimed credential is the seat's: it sees its hand.
        let cred = a.credential.unwrap().credential;
        assert_eq!(look(&tokens, &after.state, Some(1), &cred).hand.len(), 9);
    }

    #[test]
    fn bots_play_within_the_call_until_a_human_is_on_turn() {
        let tokens = tokens();
        for seed in 0..20 {
            let hard = pb::SeatSetup {
                bot: pb::BotLevel::Hard as i32,
                claim: false,
                display_name: String::new(),
                pass: String::new(),
            };
            let me = pb::SeatSetup {
                bot: 0,
                claim: true,
                display_name: String::new(),
                pass: String::new(),
            };
            let new = new_game(
                &tokens,
                &SEEDED,
                &J,
                &pb::NewGameRequest {
                    rules: Some(pb::Rules {
                        players: 4,
                        ..Default::default()
                    }),
                    seed: Some(seed),
                    viewer: Some(0),
                    seats: vec![me.clone(), hard.clone(), hard.clone(), hard.clone()],
                },
            )
            .unwrap();
            let answer = dealt(&tokens, &new.state);
            let view = answer.view;
            assert!(
                view.turn == Some(0) || view.phase != pb::Phase::Playing as i32,
                "seed {seed}: {view:?}"
            );
            assert_eq!(view.seats[1].kind, pb::SeatKind::Bot as i32);
            // Every bot move is in the events, in order, after the deal.
            let played = answer
                .events
                .iter()
                .filter(|e| matches!(e.kind, Some(pb::event::Kind::TilePlayed(_))))
                .count();
            assert_eq!(played, view.layout.len(), "seed {seed}");
            // Nobody may act or look for a bot's seat.
            let creds = credentials(&new);
            let req = pb::ScoreRequest {
                state: answer.state.clone().into(),
                viewer: Some(1),
                credential: creds[0].clone(),
                include_hand_events: false,
            };
            assert_eq!(
                score(&tokens, &J, &req).err(),
                Some(ApiError::Denied(crate::state::Denied::SeatIsBot(1)))
            );
        }
    }

    #[test]
    fn score_answers_the_hands_events_redacted_for_its_viewer() {
        let tokens = tokens();
        let new = new_game(&tokens, &SEEDED, &J, &hot_seat(2, 4)).unwrap();
        let creds = credentials(&new);
        let mut state = dealt(&tokens, &new.state).state;
        let mut all = Vec::new();
        for _ in 0..12 {
            let view = look(&tokens, &state, None, &[]);
            let Some(turn) = view.turn else { break };
            let cred = &creds[turn as usize];
            let seen = look(&tokens, &state, Some(turn), cred);
            let answer = if seen.must_draw {
                let req = pb::DrawRequest {
                    state: state.clone().into(),
                    seat: turn,
                    viewer: None,
                    credential: cred.clone(),
                };
                finish(&tokens, &SEEDED, draw(&tokens, &J, &req).unwrap()).unwrap()
            } else {
                let req = pb::PlayRequest {
                    state: state.clone().into(),
                    seat: turn,
                    tile: seen.legal_moves[0].tile,
                    end: seen.legal_moves[0].end,
                    viewer: None,
                    credential: cred.clone(),
                };
                finish(&tokens, &SEEDED, play(&tokens, &J, &req).unwrap()).unwrap()
            };
            all.extend(answer.events);
            state = answer.state;
        }
        let events = score(
            &tokens,
            &J,
            &pb::ScoreRequest {
                state: state.into(),
                include_hand_events: true,
                ..Default::default()
            },
        )
        .unwrap()
        .hand_events;
        // The deal first, then exactly what the spectator was told move by move.
        assert!(matches!(events[0].kind, Some(pb::event::Kind::Dealt(_))));
        assert_eq!(events[1..], all[..]);
    }

    /// What an answer shows, without its token and match id (random in each).
    fn shown(answer: Result<Answer, ApiError>) -> Result<(pb::GameView, Vec<pb::Event>), String> {
        let Answer { view, events, .. } = answer.map_err(|e| format!("{e:?}"))?;
        Ok((
            pb::GameView {
                match_id: String::new(),
                ..view
            },
            events,
        ))
    }

    #[test]
    fn answers_are_the_same_with_the_cache_and_without() {
        let ring = ring();
        let (cached, uncached) = (
            Tokens::new(std::sync::Arc::clone(&ring), 64),
            Tokens::uncached(ring),
        );
        for players in 2..=4 {
            let new = hot_seat(players, u64::from(players));
            let (mut a, mut b) = (
                new_game(&cached, &SEEDED, &J, &new).unwrap(),
                new_game(&uncached, &SEEDED, &J, &new).unwrap(),
            );
            let (ca, cb) = (credentials(&a), credentials(&b));
            // Each match has its own secret, so its own state ids: compare the rest.
            let strip = |mut shown: Result<(pb::GameView, Vec<pb::Event>), String>| {
                if let Ok((view, _)) = shown.as_mut() {
                    view.state_id.clear();
                    view.previous_state_id.clear();
                }
                shown
            };
            for step in 0..2000 {
                let (sa, sb) = (a.state.clone(), b.state.clone());
                assert_eq!(
                    strip(shown(Ok(a))),
                    strip(shown(Ok(b))),
                    "{players} players, step {step}"
                );
                let view = look(&uncached, &sb, None, &[]);
                let Some(turn) = view.turn else {
                    if view.phase == pb::Phase::Over as i32 {
                        break;
                    }
                    (a, b) = (dealt(&cached, &sa), dealt(&uncached, &sb));
                    continue;
                };
                let t = turn as usize;
                // The seat on turn looks (Score keeps the game under the same token),
                // and every fifth step a seat out of turn tries a draw first.
                let seen = look(&cached, &sa, Some(turn), &ca[t]);
                let mut other = look(&uncached, &sb, Some(turn), &cb[t]);
                other.match_id.clone_from(&seen.match_id);
                other.state_id.clone_from(&seen.state_id);
                other.previous_state_id.clone_from(&seen.previous_state_id);
                assert_eq!(seen, other);
                if step % 5 == 0 {
                    let o = (t + 1) % players as usize;
                    let wrong = |tokens: &Tokens, state: &[u8], cred: &[u8]| {
                        draw(
                            tokens,
                            &J,
                            &pb::DrawRequest {
                                state: state.to_vec().into(),
                                seat: o as u32,
                                viewer: None,
                                credential: cred.to_vec(),
                            },
                        )
                        .map(|_| ())
                        .map_err(|e| format!("{e:?}"))
                    };
                    assert_eq!(wrong(&cached, &sa, &ca[o]), wrong(&uncached, &sb, &cb[o]));
                }
                (a, b) = if seen.must_draw {
                    let req = |state: Vec<u8>, cred: &[u8]| pb::DrawRequest {
                        state: state.into(),
                        seat: turn,
                        viewer: None,
                        credential: cred.to_vec(),
                    };
                    (
                        finish(
                            &cached,
                            &SEEDED,
                            draw(&cached, &J, &req(sa, &ca[t])).unwrap(),
                        )
                        .unwrap(),
                        finish(
                            &uncached,
                            &SEEDED,
                            draw(&uncached, &J, &req(sb, &cb[t])).unwrap(),
                        )
                        .unwrap(),
                    )
                } else {
                    let m = seen.legal_moves[step % seen.legal_moves.len()];
                    (
                        played(&cached, &sa, turn, m, &ca[t]).unwrap(),
                        played(&uncached, &sb, turn, m, &cb[t]).unwrap(),
                    )
                };
            }
        }
        // Misses: the tokens of refused draws (a refused call keeps nothing).
        let (hits, misses) = cached.cache_counts();
        assert!(hits > 5 * misses, "{hits} hits, {misses} misses");
    }

    #[test]
    fn a_drawn_tile_is_shown_only_to_its_drawer() {
        let tokens = tokens();
        // Play seeded games until someone must draw; compare the drawer's and others' events.
        for seed in 0..50 {
            let new = new_game(&tokens, &SEEDED, &J, &hot_seat(2, seed)).unwrap();
            let creds = credentials(&new);
            let mut state = dealt(&tokens, &new.state).state;
            for _ in 0..40 {
                let view = look(&tokens, &state, None, &[]);
                let Some(turn) = view.turn else { break };
                let cred = &creds[turn as usize];
                let seen = look(&tokens, &state, Some(turn), cred);
                if seen.must_draw {
                    let req = |viewer: Option<u32>| pb::DrawRequest {
                        state: state.clone().into(),
                        seat: turn,
                        viewer,
                        credential: cred.clone(),
                    };
                    let mine = finish(
                        &tokens,
                        &SEEDED,
                        draw(&tokens, &J, &req(Some(turn))).unwrap(),
                    )
                    .unwrap();
                    let theirs =
                        finish(&tokens, &SEEDED, draw(&tokens, &J, &req(None)).unwrap()).unwrap();
                    let drawn = |a: &Answer| match &a.events[0].kind {
                        Some(pb::event::Kind::TileDrawn(d)) => d.tile,
                        other => panic!("{other:?}"),
                    };
                    assert!(drawn(&mine).is_some());
                    assert_eq!(drawn(&theirs), None);
                    // And the other seat cannot ask to see the drawer's tile.
                    assert!(draw(&tokens, &J, &req(Some(1 - turn))).is_err());
                    return;
                }
                state = played(&tokens, &state, turn, seen.legal_moves[0], cred)
                    .unwrap()
                    .state;
            }
        }
        panic!("no seat ever had to draw");
    }

    #[test]
    fn the_sheet_keeps_32_hands_and_carries_the_rest_forward() {
        use crate::engine::Rules;
        use crate::engine::bot::{Strategy, choose};
        use rand_chacha::ChaCha8Rng;
        use rand_chacha::rand_core::SeedableRng;

        let tokens = tokens();
        // Random players at a four-seat table under "own pips off" play long games.
        let mut game = Game::new(Rules::for_players(4), 2).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut scratch = Vec::new();
        while let Some(action) = choose(&game, Strategy::Random, &mut rng, &mut scratch) {
            game.apply(action, &mut Vec::new()).unwrap();
        }
        let hands = game.hand_number();
        assert!(hands > 32, "a long game: {hands} hands");
        let record = Record::new(MatchId([1; MATCH_ID_LEN]), game.clone());
        let token = tokens.seal(&mut Opened::new(record)).unwrap();
        assert!(token.len() <= 512, "{} bytes", token.len());
        let sheet = score(
            &tokens,
            &J,
            &pb::ScoreRequest {
                state: token.into(),
                ..Default::default()
            },
        )
        .unwrap()
        .sheet
        .unwrap();
        assert_eq!(sheet.rows.len(), 32);
        let carried = sheet.carried.unwrap();
        assert_eq!((carried.first_hand, carried.last_hand), (1, hands - 32));
        assert_eq!(sheet.rows[0].first_hand, hands - 31);
        let last = sheet.rows.last().unwrap();
        assert_eq!(last.last_hand, hands);
        let totals: Vec<i32> = last.sides.iter().map(|s| s.total).collect();
        assert_eq!(totals, game.scores());
        assert_eq!(sheet.winner_side, game.winner().map(|w| w as u32));
    }
}
