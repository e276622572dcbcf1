//! End to end: the Suggest RPC through the real server. Bots fill every seat of whole
//! matches; advice depends only on what the asking seat may know (the fairness proof);
//! bad requests get their codes and reasons.

mod common;

use allfives::engine::Game;
use allfives::proto::v1 as pb;
use allfives::state::{self, KeyRing, Record};
use common::{Client, TestServer, bad_fields, deal, new_match, reason, ring};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;
use tonic::Code;

/// Hard searches in these tests sample few worlds: the tests check behaviour, not
/// strength (docs/BOTS.md measures that), and run in the dev profile.
const WORLDS: u32 = 8;

fn request(state: &[u8], seat: u32, level: pb::BotLevel, seed: u64) -> pb::SuggestRequest {
    pb::SuggestRequest {
        state: state.to_vec().into(),
        seat,
        level: level as i32,
        worlds: if level == pb::BotLevel::Hard {
            WORLDS
        } else {
            0
        },
        seed: Some(seed),
    }
}

async fn suggest(client: &mut Client, req: pb::SuggestRequest) -> pb::SuggestResponse {
    client.suggest(req).await.expect("Suggest").into_inner()
}

/// The view of `seat`, by Score.
async fn view_of(client: &mut Client, state: &[u8], seat: u32) -> pb::GameView {
    client
        .score(pb::ScoreRequest {
            state: state.to_vec().into(),
            viewer: Some(seat),
        })
        .await
        .expect("Score")
        .into_inner()
        .view
        .expect("view")
}

/// Checks the advice against the asking seat's own view, and returns the call that
/// follows it (Play or Draw) as the new token and view.
async fn follow(
    client: &mut Client,
    state: &[u8],
    seat: u32,
    advice: &pb::SuggestResponse,
) -> (Vec<u8>, pb::GameView) {
    let view = view_of(client, state, seat).await;
    assert_eq!(
        advice.draw, view.must_draw,
        "draw exactly when the seat must"
    );
    let offered: Vec<&pb::LegalMove> = advice
        .moves
        .iter()
        .filter_map(|m| m.r#move.as_ref())
        .collect();
    assert_eq!(
        offered.len(),
        view.legal_moves.len(),
        "every legal move is rated"
    );
    for m in &view.legal_moves {
        assert!(offered.contains(&m), "{m:?} is rated");
    }
    assert!(
        advice.moves.windows(2).all(|w| w[0].value >= w[1].value),
        "moves best first"
    );
    if advice.draw {
        assert!(advice.play.is_none());
        let r = client
            .draw(pb::DrawRequest {
                state: state.to_vec().into(),
                seat,
                viewer: Some(seat),
            })
            .await
            .expect("Draw as advised")
            .into_inner();
        return (r.state, r.view.expect("view"));
    }
    let play = advice.play.as_ref().expect("a play unless a draw");
    assert!(
        view.legal_moves.contains(play),
        "the advice is a legal move"
    );
    let r = client
        .play(pb::PlayRequest {
            state: state.to_vec().into(),
            seat,
            tile: play.tile,
            end: play.end,
            viewer: None,
        })
        .await
        .expect("Play as advised")
        .into_inner();
    (r.state, r.view.expect("view"))
}

/// Plays a whole match with every seat's moves chosen by Suggest at `levels[seat]`.
/// Returns the winning side.
async fn bot_match(
    client: &mut Client,
    rules: pb::Rules,
    levels: &[pb::BotLevel],
    seed: u64,
) -> u32 {
    let (mut state, mut view) = new_match(client, rules, seed).await;
    for step in 0..5_000u64 {
        match pb::Phase::try_from(view.phase).expect("phase") {
            pb::Phase::Over => return view.winner_side.expect("a winner"),
            pb::Phase::Dealing => {
                (state, view) = deal(client, state).await;
            }
            pb::Phase::Playing => {
                let seat = view.turn.expect("turn");
                let level = levels[seat as usize];
                let advice = suggest(client, request(&state, seat, level, step)).await;
                assert_eq!(advice.level, level as i32);
                if level == pb::BotLevel::Medium && !advice.draw {
                    let best = advice
                        .moves
                        .iter()
                        .filter_map(|m| m.r#move.as_ref())
                        .map(|m| m.points)
                        .max();
                    assert_eq!(
                        advice.play.as_ref().map(|p| p.points),
                        best,
                        "medium is greedy"
                    );
                }
                (state, view) = follow(client, &state, seat, &advice).await;
            }
            pb::Phase::Unspecified => panic!("no phase"),
        }
    }
    panic!("the match did not end");
}

fn rules(players: u32, partnership: bool, target: u32) -> pb::Rules {
    pb::Rules {
        players,
        partnership,
        target,
        ..pb::Rules::default()
    }
}

#[tokio::test]
async fn bots_fill_every_seat_of_whole_matches() {
    use pb::BotLevel::{Easy, Hard, Medium};
    let server = TestServer::start(ring(1, 4)).await;
    let mut client = server.client().await;
    let tables = [
        (rules(2, false, 100), vec![Hard, Medium]),
        (rules(3, false, 100), vec![Easy, Hard, Medium]),
        (rules(4, true, 100), vec![Hard, Easy, Medium, Hard]),
        (rules(4, false, 60), vec![Medium, Medium, Hard, Easy]),
    ];
    for (i, (rules, levels)) in tables.into_iter().enumerate() {
        let winner = bot_match(&mut client, rules, &levels, 100 + i as u64).await;
        assert!(winner < rules.players);
    }
}

/// Opens a token, deals the hidden tiles again as `seat` cannot tell apart, and seals it.
fn redealt(ring: &KeyRing, token: &[u8], seat: usize, rng: &mut ChaCha8Rng) -> (Vec<u8>, Game) {
    let record = state::open(ring, token).expect("the server's token opens");
    let game = record
        .game
        .redeal_hidden(seat, rng)
        .expect("a hand in play");
    assert_eq!(
        game.knowledge(seat),
        record.game.knowledge(seat),
        "the same to the seat"
    );
    let token = state::seal(
        ring,
        &Record {
            match_id: record.match_id,
            game: game.clone(),
        },
    )
    .expect("seal");
    (token, game)
}

#[tokio::test]
async fn advice_depends_only_on_what_the_seat_may_know() {
    let keys = ring(1, 5);
    let server = TestServer::start(ring(1, 5)).await;
    let mut client = server.client().await;
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut compared = 0;
    let mut hidden_differed = 0;
    for (players, seed) in [(2u32, 1u64), (3, 2), (4, 3)] {
        let (mut state, mut view) = new_match(&mut client, rules(players, false, 0), seed).await;
        // Positions along one match, the seats played by MEDIUM through the server.
        for step in 0..60u64 {
            if view.phase == pb::Phase::Over as i32 {
                break;
            }
            if view.phase == pb::Phase::Dealing as i32 {
                (state, view) = deal(&mut client, state).await;
                continue;
            }
            let seat = view.turn.expect("turn");
            let original = state::open(&keys, &state).expect("opens").game;
            for _ in 0..2 {
                let (other, game) = redealt(&keys, &state, seat as usize, &mut rng);
                let differs = (0..players as usize)
                    .filter(|&s| s != seat as usize)
                    .any(|s| game.hand(s) != original.hand(s));
                hidden_differed += usize::from(differs);
                for level in [pb::BotLevel::Easy, pb::BotLevel::Medium, pb::BotLevel::Hard] {
                    for bot_seed in [0, step] {
                        let a = suggest(&mut client, request(&state, seat, level, bot_seed)).await;
                        let b = suggest(&mut client, request(&other, seat, level, bot_seed)).await;
                        assert_eq!(
                            a, b,
                            "seat {seat}, {level:?}: advice changed with hidden tiles"
                        );
                        compared += 1;
                    }
                }
            }
            let advice = suggest(
                &mut client,
                request(&state, seat, pb::BotLevel::Medium, step),
            )
            .await;
            (state, view) = follow(&mut client, &state, seat, &advice).await;
        }
    }
    assert!(compared > 500, "{compared} comparisons");
    assert!(
        hidden_differed * 10 > compared / 6 * 9,
        "the hidden tiles really differed in most pairs ({hidden_differed} of {})",
        compared / 6
    );
}

#[tokio::test]
async fn suggest_refuses_bad_requests_with_their_reason() {
    let server = TestServer::start(ring(1, 6)).await;
    let mut client = server.client().await;
    let fresh = client
        .new_game(pb::NewGameRequest::default())
        .await
        .expect("NewGame")
        .into_inner()
        .state;
    let token = common::dealt_token(&mut client).await;
    let turn = view_of(&mut client, &token, 0).await.turn.expect("turn");
    let hard = |state: &[u8], seat| request(state, seat, pb::BotLevel::Hard, 1);

    let refused =
        |r: Result<tonic::Response<pb::SuggestResponse>, tonic::Status>| r.expect_err("refused");
    let mut req = hard(&token, turn);
    req.level = pb::BotLevel::Unspecified as i32;
    let s = refused(client.suggest(req).await);
    assert_eq!(
        (s.code(), bad_fields(&s)),
        (Code::InvalidArgument, vec!["level".to_string()])
    );
    let mut req = hard(&token, turn);
    req.level = 42;
    let s = refused(client.suggest(req).await);
    assert_eq!(bad_fields(&s), ["level"]);
    let mut req = hard(&token, turn);
    req.worlds = 1025;
    let s = refused(client.suggest(req).await);
    assert_eq!(
        (s.code(), bad_fields(&s)),
        (Code::InvalidArgument, vec!["worlds".to_string()])
    );
    let s = refused(client.suggest(hard(&token, 2)).await);
    assert_eq!(
        (s.code(), bad_fields(&s)),
        (Code::InvalidArgument, vec!["seat".to_string()])
    );
    let s = refused(client.suggest(hard(&token, 1 - turn)).await);
    assert_eq!(
        (s.code(), reason(&s)),
        (Code::FailedPrecondition, "NOT_YOUR_TURN".into())
    );
    let s = refused(client.suggest(hard(&fresh, 0)).await);
    assert_eq!(
        (s.code(), reason(&s)),
        (Code::FailedPrecondition, "WRONG_PHASE".into())
    );
    let s = refused(client.suggest(hard(b"garbage", 0)).await);
    assert_eq!(
        (s.code(), reason(&s)),
        (Code::InvalidArgument, "TOKEN_MALFORMED".into())
    );
    let mut tampered = token.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    let s = refused(client.suggest(hard(&tampered, turn)).await);
    assert_eq!(reason(&s), "TOKEN_INVALID");

    // The same request, the same answer; the default budget is reported.
    let mut req = hard(&token, turn);
    req.worlds = 0;
    req.seed = None;
    let a = suggest(&mut client, req.clone()).await;
    assert_eq!(a, suggest(&mut client, req).await);
    assert_eq!(a.worlds, allfives::engine::suggest::DEFAULT_WORLDS);
    assert!(a.play.is_some() && !a.draw);
}

#[tokio::test]
async fn a_seat_with_nothing_to_play_is_advised_to_draw() {
    let server = TestServer::start(ring(1, 7)).await;
    let mut client = server.client().await;
    // Greedy play until some seat on turn must draw (seeds tried in order).
    for seed in 0..50u64 {
        let (state, _) = new_match(&mut client, rules(2, false, 0), seed).await;
        let (mut state, mut view) = deal(&mut client, state).await;
        while view.phase == pb::Phase::Playing as i32 {
            let seat = view.turn.expect("turn");
            let advice = suggest(&mut client, request(&state, seat, pb::BotLevel::Hard, 0)).await;
            if advice.draw {
                assert!(advice.moves.is_empty() && advice.play.is_none());
                assert!(view_of(&mut client, &state, seat).await.must_draw);
                return;
            }
            (state, view) = follow(&mut client, &state, seat, &advice).await;
        }
    }
    panic!("no seat had to draw in 50 hands");
}
