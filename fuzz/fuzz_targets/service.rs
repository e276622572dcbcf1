//! Request messages through the service handlers in process, through the token cache
//! as the service runs: arbitrary protobuf bytes decoded as a NewGame, Deal, Play,
//! Draw, Score or Suggest request, with the `state` field often replaced by a real
//! token (any point of a real match). Never a panic; every refusal is a clean status
//! (INVALID_ARGUMENT or FAILED_PRECONDITION, UNAVAILABLE only for randomness); a real
//! token is never refused as a token and always scores for a seat at its table; every
//! token answered opens again as a sound game, by the cipher and from the cache alike;
//! a suggestion (a play or a draw) is a move the service then accepts.
#![no_main]

use allfives::proto::v1 as pb;
use allfives::service::handlers::{self, Answer};
use allfives::service::status::ApiError;
use allfives::state;
use allfives_fuzz::{assert_sound, byte, real_tokens, ring, take, tokens};
use libfuzzer_sys::fuzz_target;
use prost::Message;
use tonic::Code;

/// The real token the `u16` selects, or `None` for 0.
fn real(choice: u16) -> Option<Vec<u8>> {
    let tokens = real_tokens();
    (choice != 0).then(|| tokens[usize::from(choice - 1) % tokens.len()].clone())
}

/// A token the service answered opens by the cipher as a sound game, the view's
/// counter is the game's, and the token cache (which kept the game under that token,
/// unless it is over) opens the same game; it is kept again for a later call.
fn answered(answer: Result<Answer, ApiError>) -> Result<(), ApiError> {
    let answer = answer?;
    let record = state::open(ring(), &answer.state).expect("a token the service answered opens");
    assert_sound(&record.game);
    assert_eq!(answer.view.moves, record.game.moves());
    let cached = tokens()
        .open(&answer.state)
        .expect("the cache opens a token the service answered");
    assert_eq!(*cached, record, "the cache holds what the token holds");
    tokens().keep(cached);
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut input = data;
    let handler = byte(&mut input) % 6;
    let choice = take(&mut input, 2);
    let choice = u16::from(choice.first().copied().unwrap_or(0))
        | u16::from(choice.get(1).copied().unwrap_or(0)) << 8;
    let token = real(choice);
    let ring = ring();
    let players = token.as_ref().map(|t| {
        state::open(ring, t)
            .expect("a real token opens")
            .game
            .rules()
            .players as u32
    });
    let in_range = |viewer: Option<u32>| match (players, viewer) {
        (Some(_), None) => true,
        (Some(p), Some(v)) => v < p,
        (None, _) => false,
    };
    let (result, must_succeed) = match handler {
        0 => {
            let Ok(req) = pb::NewGameRequest::decode(input) else {
                return;
            };
            (answered(handlers::new_game(tokens(), &req)), false)
        }
        1 => {
            let Ok(mut req) = pb::DealRequest::decode(input) else {
                return;
            };
            if let Some(t) = token.clone() {
                req.state = t.into();
            }
            (answered(handlers::deal(tokens(), &req)), false)
        }
        2 => {
            let Ok(mut req) = pb::PlayRequest::decode(input) else {
                return;
            };
            if let Some(t) = token.clone() {
                req.state = t.into();
            }
            (answered(handlers::play(tokens(), &req)), false)
        }
        3 => {
            let Ok(mut req) = pb::DrawRequest::decode(input) else {
                return;
            };
            if let Some(t) = token.clone() {
                req.state = t.into();
            }
            (answered(handlers::draw(tokens(), &req)), false)
        }
        5 => {
            let Ok(mut req) = pb::SuggestRequest::decode(input) else {
                return;
            };
            if let Some(t) = token.clone() {
                req.state = t.into();
            }
            // A small search: this target looks for crashes, not strength.
            req.worlds %= 9;
            let result = handlers::suggest(tokens(), &req).map(|advice| {
                let Some(play) = advice.play else {
                    assert!(advice.draw && advice.moves.is_empty());
                    let follow = pb::DrawRequest {
                        state: req.state.clone(),
                        seat: req.seat,
                        viewer: None,
                    };
                    answered(handlers::draw(tokens(), &follow))
                        .expect("the advised draw is accepted");
                    return;
                };
                let follow = pb::PlayRequest {
                    state: req.state.clone(),
                    seat: req.seat,
                    tile: play.tile,
                    end: play.end,
                    viewer: None,
                };
                answered(handlers::play(tokens(), &follow)).expect("the advised move is accepted");
            });
            (result, false)
        }
        _ => {
            let Ok(mut req) = pb::ScoreRequest::decode(input) else {
                return;
            };
            if let Some(t) = token.clone() {
                req.state = t.into();
            }
            let must = in_range(req.viewer);
            let result = handlers::score(tokens(), &req).map(|r| {
                assert!(r.sheet.is_some() && r.view.is_some());
            });
            (result, must)
        }
    };
    if let Err(error) = result {
        assert!(!must_succeed, "Score of a real token refused: {error:?}");
        if token.is_some() {
            assert!(
                !matches!(error, ApiError::Token(_)),
                "a real token refused: {error:?}"
            );
        }
        let status = tonic::Status::from(error.clone());
        let expected = match error {
            ApiError::Token(state::TokenError::Random) => Code::Unavailable,
            ApiError::Rules(_) => Code::FailedPrecondition,
            _ => Code::InvalidArgument,
        };
        assert_eq!(status.code(), expected, "{error:?}");
    }
});
