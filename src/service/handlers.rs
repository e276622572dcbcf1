//! One handler per RPC, each: parse the request, open the token, apply the engine,
//! seal the new token, render the view.

use std::cell::RefCell;

use crate::engine::{self, Action, Event, Game, Seat};
use crate::proto::v1 as pb;
use crate::state::{self, MATCH_ID_LEN, Opened, Record, Tokens};

use super::convert::{
    end_in, event_out, level_in, rules_in, seat_in, sheet_out, suggestion_out, tile_in, view_out,
    viewer_in, worlds_in,
};
use super::status::ApiError;

/// What every changing call answers: the new token, the view and the events.
pub struct Answer {
    pub state: Vec<u8>,
    pub view: pb::GameView,
    pub events: Vec<pb::Event>,
}

/// A match id in lower-case hex, written on the stack: no formatting machinery and no
/// allocation (this runs on every call).
struct Hex([u8; 2 * MATCH_ID_LEN]);

impl Hex {
    fn new(bytes: &[u8; MATCH_ID_LEN]) -> Hex {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 2 * MATCH_ID_LEN];
        for (pair, &b) in out.chunks_exact_mut(2).zip(bytes) {
            pair[0] = DIGITS[usize::from(b >> 4)];
            pair[1] = DIGITS[usize::from(b & 0xf)];
        }
        Hex(out)
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("hex digits are ASCII")
    }
}

fn random_bytes<const N: usize>() -> Result<[u8; N], ApiError> {
    let mut bytes = [0u8; N];
    state::random::fill(&mut bytes).map_err(|_| ApiError::Token(state::TokenError::Random))?;
    Ok(bytes)
}

/// Seals the game and renders it for `viewer`, with `events` redacted for that viewer;
/// the game is then kept under its new token for the call that brings it back.
fn answer(
    tokens: &Tokens,
    mut opened: Opened,
    viewer: Option<Seat>,
    events: &[Event],
) -> Result<Answer, ApiError> {
    let state = tokens.seal(&mut opened)?;
    let rules = opened.game.rules();
    let view = opened.game.view(viewer)?;
    let answer = Answer {
        state,
        view: view_out(&view, Hex::new(&opened.match_id).as_str()),
        events: events
            .iter()
            .map(|&e| event_out(rules, e, viewer))
            .collect(),
    };
    tokens.keep(opened);
    Ok(answer)
}

/// Opens the token and reads the viewer against its rules.
fn open(
    tokens: &Tokens,
    token: &[u8],
    viewer: Option<u32>,
) -> Result<(Opened, Option<Seat>), ApiError> {
    let opened = tokens.open(token)?;
    let viewer = viewer_in(viewer, opened.game.rules())?;
    Ok((opened, viewer))
}

/// Applies one action to the game in `token`. A refused call keeps nothing: its token,
/// if it comes again, is opened by the cipher.
fn act(
    tokens: &Tokens,
    token: &[u8],
    viewer: Option<u32>,
    action: impl FnOnce(&Game) -> Result<Action, ApiError>,
) -> Result<Answer, ApiError> {
    let (mut opened, viewer) = open(tokens, token, viewer)?;
    let action = action(&opened.game)?;
    EVENTS.with_borrow_mut(|events| {
        events.clear();
        opened.game.apply(action, events)?;
        answer(tokens, opened, viewer, events)
    })
}

thread_local! {
    /// The engine's events of the call in hand on this thread, kept for the room: each
    /// call empties it before the engine fills it, so nothing passes between calls.
    static EVENTS: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
}

pub fn new_game(tokens: &Tokens, req: &pb::NewGameRequest) -> Result<Answer, ApiError> {
    let rules = rules_in(req.rules.as_ref())?;
    let viewer = viewer_in(req.viewer, &rules)?;
    let seed = match req.seed {
        Some(seed) => seed,
        None => u64::from_le_bytes(random_bytes()?),
    };
    let opened = Opened::new(Record {
        match_id: random_bytes::<MATCH_ID_LEN>()?,
        game: Game::new(rules, seed)?,
    });
    answer(tokens, opened, viewer, &[])
}

pub fn deal(tokens: &Tokens, req: &pb::DealRequest) -> Result<Answer, ApiError> {
    act(tokens, &req.state, req.viewer, |_| Ok(Action::Deal))
}

pub fn play(tokens: &Tokens, req: &pb::PlayRequest) -> Result<Answer, ApiError> {
    let tile = tile_in(req.tile.as_ref())?;
    let end = end_in(req.end)?;
    act(tokens, &req.state, req.viewer, |game| {
        Ok(Action::Play {
            seat: seat_in(req.seat, game.rules(), "seat")?,
            tile,
            end,
        })
    })
}

pub fn draw(tokens: &Tokens, req: &pb::DrawRequest) -> Result<Answer, ApiError> {
    act(tokens, &req.state, req.viewer, |game| {
        Ok(Action::Draw {
            seat: seat_in(req.seat, game.rules(), "seat")?,
        })
    })
}

pub fn score(tokens: &Tokens, req: &pb::ScoreRequest) -> Result<pb::ScoreResponse, ApiError> {
    let (opened, viewer) = open(tokens, &req.state, req.viewer)?;
    let game = &opened.game;
    let response = pb::ScoreResponse {
        sheet: Some(sheet_out(game.rules(), game.sheet(), game.winner())),
        view: Some(view_out(
            &game.view(viewer)?,
            Hex::new(&opened.match_id).as_str(),
        )),
    };
    tokens.keep(opened);
    Ok(response)
}

/// A bot's advice to the seat on turn, from that seat's knowledge only (the engine's
/// `suggest` never sees the game). Changes nothing.
pub fn suggest(tokens: &Tokens, req: &pb::SuggestRequest) -> Result<pb::SuggestResponse, ApiError> {
    let level = level_in(req.level)?;
    let worlds = worlds_in(req.worlds)?;
    let opened = tokens.open(&req.state)?;
    let seat = seat_in(req.seat, opened.game.rules(), "seat")?;
    let knowledge = opened.game.knowledge(seat)?;
    tokens.keep(opened);
    let suggestion = engine::suggest::suggest(&knowledge, level, worlds, req.seed.unwrap_or(0))?;
    Ok(suggestion_out(&suggestion, level, worlds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lower_case_two_digits_a_byte() {
        let mut id = [0u8; MATCH_ID_LEN];
        id[..4].copy_from_slice(&[0x00, 0x0f, 0xa5, 0xff]);
        id[MATCH_ID_LEN - 1] = 0x10;
        let hex = Hex::new(&id);
        assert_eq!(hex.as_str().len(), 2 * MATCH_ID_LEN);
        assert!(hex.as_str().starts_with("000fa5ff00"));
        assert!(hex.as_str().ends_with("0010"));
    }

    fn tokens() -> Tokens {
        let ring = crate::state::KeyRing::new(vec![(1, [3; 32])], None).unwrap();
        Tokens::new(std::sync::Arc::new(ring), 64)
    }

    #[test]
    fn a_game_goes_new_deal_play_through_the_handlers() {
        let tokens = tokens();
        let req = pb::NewGameRequest {
            rules: None,
            seed: Some(1),
            viewer: Some(0),
        };
        let new = new_game(&tokens, &req).unwrap();
        assert!(new.events.is_empty());
        assert_eq!(new.view.viewer, Some(0));
        let dealt = deal(
            &tokens,
            &pb::DealRequest {
                state: new.state.into(),
                viewer: None,
            },
        )
        .unwrap();
        let turn = dealt.view.turn.unwrap();
        assert!(dealt.view.hand.is_empty(), "a spectator sees no hand");
        let seen = score(
            &tokens,
            &pb::ScoreRequest {
                state: dealt.state.clone().into(),
                viewer: Some(turn),
            },
        )
        .unwrap()
        .view
        .unwrap();
        assert_eq!(seen.hand.len(), 9);
        let lead = seen.legal_moves[0];
        let played = play(
            &tokens,
            &pb::PlayRequest {
                state: dealt.state.into(),
                seat: turn,
                tile: lead.tile,
                end: lead.end,
                viewer: None,
            },
        )
        .unwrap();
        assert_eq!(played.view.layout.len(), 1);
        assert_eq!(played.view.moves, 2);
        assert!(played.state.len() <= 512);
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
        let ring =
            std::sync::Arc::new(crate::state::KeyRing::new(vec![(1, [3; 32])], None).unwrap());
        let (cached, uncached) = (
            Tokens::new(std::sync::Arc::clone(&ring), 64),
            Tokens::uncached(ring),
        );
        for players in 2..=4 {
            let new = pb::NewGameRequest {
                rules: Some(pb::Rules {
                    players,
                    ..Default::default()
                }),
                seed: Some(u64::from(players)),
                viewer: None,
            };
            let (mut a, mut b) = (
                new_game(&cached, &new).unwrap(),
                new_game(&uncached, &new).unwrap(),
            );
            for step in 0..2000 {
                let (sa, sb) = (a.state.clone(), b.state.clone());
                assert_eq!(shown(Ok(a)), shown(Ok(b)), "{players} players, step {step}");
                let view = score(
                    &uncached,
                    &pb::ScoreRequest {
                        state: sb.clone().into(),
                        viewer: None,
                    },
                )
                .unwrap()
                .view
                .unwrap();
                let Some(turn) = view.turn else {
                    if view.phase == pb::Phase::Over as i32 {
                        break;
                    }
                    (a, b) = (
                        deal(
                            &cached,
                            &pb::DealRequest {
                                state: sa.into(),
                                viewer: None,
                            },
                        )
                        .unwrap(),
                        deal(
                            &uncached,
                            &pb::DealRequest {
                                state: sb.into(),
                                viewer: None,
                            },
                        )
                        .unwrap(),
                    );
                    continue;
                };
                // The seat on turn looks (Score keeps the game under the same token),
                // and every fifth step a seat out of turn tries a draw first.
                let look = |tokens: &Tokens, state: &[u8]| {
                    score(
                        tokens,
                        &pb::ScoreRequest {
                            state: state.to_vec().into(),
                            viewer: Some(turn),
                        },
                    )
                    .map(|mut r| {
                        if let Some(v) = r.view.as_mut() {
                            v.match_id.clear();
                        }
                        r
                    })
                    .map_err(|e| format!("{e:?}"))
                };
                let seen = look(&cached, &sa);
                assert_eq!(seen, look(&uncached, &sb));
                let seen = seen.unwrap().view.unwrap();
                if step % 5 == 0 {
                    let wrong = |tokens: &Tokens, state: &[u8]| {
                        draw(
                            tokens,
                            &pb::DrawRequest {
                                state: state.to_vec().into(),
                                seat: (turn + 1) % players,
                                viewer: None,
                            },
                        )
                        .map(|_| ())
                        .map_err(|e| format!("{e:?}"))
                    };
                    assert_eq!(wrong(&cached, &sa), wrong(&uncached, &sb));
                }
                let viewer = Some((turn + 1) % players);
                (a, b) = if seen.must_draw {
                    let req = |state: Vec<u8>| pb::DrawRequest {
                        state: state.into(),
                        seat: turn,
                        viewer,
                    };
                    (
                        draw(&cached, &req(sa)).unwrap(),
                        draw(&uncached, &req(sb)).unwrap(),
                    )
                } else {
                    let m = seen.legal_moves[step % seen.legal_moves.len()];
                    let req = |state: Vec<u8>| pb::PlayRequest {
                        state: state.into(),
                        seat: turn,
                        tile: m.tile,
                        end: m.end,
                        viewer,
                    };
                    (
                        play(&cached, &req(sa)).unwrap(),
                        play(&uncached, &req(sb)).unwrap(),
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
            let new = new_game(
                &tokens,
                &pb::NewGameRequest {
                    rules: None,
                    seed: Some(seed),
                    viewer: None,
                },
            )
            .unwrap();
            let mut state = deal(
                &tokens,
                &pb::DealRequest {
                    state: new.state.into(),
                    viewer: None,
                },
            )
            .unwrap()
            .state;
            for _ in 0..40 {
                let view = score(
                    &tokens,
                    &pb::ScoreRequest {
                        state: state.clone().into(),
                        viewer: None,
                    },
                )
                .unwrap()
                .view
                .unwrap();
                let Some(turn) = view.turn else { break };
                let seen = score(
                    &tokens,
                    &pb::ScoreRequest {
                        state: state.clone().into(),
                        viewer: Some(turn),
                    },
                )
                .unwrap()
                .view
                .unwrap();
                if seen.must_draw {
                    let mine = draw(
                        &tokens,
                        &pb::DrawRequest {
                            state: state.clone().into(),
                            seat: turn,
                            viewer: Some(turn),
                        },
                    )
                    .unwrap();
                    let theirs = draw(
                        &tokens,
                        &pb::DrawRequest {
                            state: state.into(),
                            seat: turn,
                            viewer: Some(1 - turn),
                        },
                    )
                    .unwrap();
                    let drawn = |a: &Answer| match &a.events[0].kind {
                        Some(pb::event::Kind::TileDrawn(d)) => d.tile,
                        other => panic!("{other:?}"),
                    };
                    assert!(drawn(&mine).is_some());
                    assert_eq!(drawn(&theirs), None);
                    return;
                }
                let m = seen.legal_moves[0];
                state = play(
                    &tokens,
                    &pb::PlayRequest {
                        state: state.into(),
                        seat: turn,
                        tile: m.tile,
                        end: m.end,
                        viewer: None,
                    },
                )
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
        let record = Record {
            match_id: [1; MATCH_ID_LEN],
            game: game.clone(),
        };
        let token = tokens.seal(&mut Opened::new(record)).unwrap();
        assert!(token.len() <= 512, "{} bytes", token.len());
        let sheet = score(
            &tokens,
            &pb::ScoreRequest {
                state: token.into(),
                viewer: None,
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
