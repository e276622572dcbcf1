//! End to end: the Suggest RPC through the real server. Bots fill every seat of whole
//! matches; advice depends only on what the asking seat may know (the fairness proof);
//! bad requests get their codes and reasons.

use crate::common;

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use allfives::engine::{Action, Game, Rules, Seat, TileSet};
use allfives::proto::v1 as pb;
use allfives::service::convert;
use common::{
    Client, Creds, TestServer, bad_fields, deal, hot_seat, new_match, reason, ring, view_for,
};
use tonic::Code;

/// Hard searches in these tests sample few worlds: the tests check behaviour, not
/// strength (docs/BOTS.md measures that), and run in the dev profile.
const WORLDS: u32 = 8;

/// Seeds searched a table for matches that look the same to the seat on turn.
const SEEDS: u64 = 20_000;

/// A Suggest request for `seat`, with its credential from `creds`.
fn request(
    state: &[u8],
    creds: &Creds,
    seat: u32,
    level: pb::BotLevel,
    seed: u64,
) -> pb::SuggestRequest {
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
        credential: creds.of(seat),
    }
}

async fn suggest(client: &mut Client, req: pb::SuggestRequest) -> pb::SuggestResponse {
    client.suggest(req).await.expect("Suggest").into_inner()
}

/// Checks the advice against the asking seat's own view, and returns the call that
/// follows it (Play or Draw) as the new token and view.
async fn follow(
    client: &mut Client,
    state: &[u8],
    creds: &Creds,
    seat: u32,
    advice: &pb::SuggestResponse,
) -> (Vec<u8>, pb::GameView) {
    let view = view_for(client, state, seat, creds).await;
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
                credential: creds.of(seat),
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
            credential: creds.of(seat),
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
    let (mut state, mut view, creds) = new_match(client, rules, seed).await;
    for step in 0..5_000u64 {
        match pb::Phase::try_from(view.phase).expect("phase") {
            pb::Phase::Over => return view.winner_side.expect("a winner"),
            pb::Phase::Dealing => {
                (state, view) = deal(client, state).await;
            }
            pb::Phase::Playing => {
                let seat = view.turn.expect("turn");
                let level = levels[seat as usize];
                let advice = suggest(client, request(&state, &creds, seat, level, step)).await;
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
                (state, view) = follow(client, &state, &creds, seat, &advice).await;
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

/// A position of a match's first hand: the match's seed and the plays and draws since
/// the deal that reached it.
#[derive(Clone)]
struct Position {
    seed: u64,
    actions: Vec<Action>,
}

/// Two positions of different matches that the seat on turn cannot tell apart.
struct Twins {
    depth: usize,
    seat: Seat,
    a: Position,
    b: Position,
}

/// Plays and draws since the deal up to which positions are compared: at 0 the starter
/// is to lead, at 1 the next seat answers the lead, and so on.
const DEPTH: usize = 4;

/// The move the searched matches make: the first legal move, else a draw.
fn first_move(game: &Game, seat: Seat) -> Action {
    match game.legal_moves().first() {
        Some(m) => Action::Play {
            seat,
            tile: m.tile,
            end: m.end,
        },
        None => Action::Draw { seat },
    }
}

/// The game at a position, replayed with the engine.
fn replayed(rules: Rules, position: &Position) -> Game {
    let mut game = Game::new(rules, position.seed).expect("rules");
    game.deal().expect("deal");
    for &action in &position.actions {
        game.apply(action, &mut Vec::new()).expect("a legal action");
    }
    game
}

/// Searches `seeds` for twins: first hands whose seat on turn, after the same number of
/// plays and draws (at most [`DEPTH`], each the [`first_move`]), has the same
/// [`Knowledge`](allfives::engine::Knowledge) in two matches. At most `per_depth`
/// pairs at each depth.
fn twins(rules: Rules, seeds: std::ops::Range<u64>, per_depth: usize) -> Vec<Twins> {
    // The seat's tiles and the plays and draws seen: the same make the same knowledge.
    let mut seen: HashMap<(Seat, TileSet, Vec<Action>), u64> = HashMap::new();
    let mut found: Vec<Twins> = Vec::new();
    let mut at_depth = [0usize; DEPTH + 1];
    for seed in seeds {
        let mut game = Game::new(rules, seed).expect("rules");
        game.deal().expect("deal");
        let mut actions = Vec::new();
        for (depth, count) in at_depth.iter_mut().enumerate() {
            let Some(seat) = game.turn() else { break };
            match seen.entry((seat, game.hand(seat), actions.clone())) {
                Entry::Vacant(entry) => {
                    entry.insert(seed);
                }
                Entry::Occupied(entry) if *count < per_depth => {
                    let a = Position {
                        seed: *entry.get(),
                        actions: actions.clone(),
                    };
                    assert_eq!(
                        replayed(rules, &a).knowledge(seat),
                        game.knowledge(seat),
                        "seeds {} and {seed}: the same to seat {seat}",
                        a.seed
                    );
                    found.push(Twins {
                        depth,
                        seat,
                        a,
                        b: Position {
                            seed,
                            actions: actions.clone(),
                        },
                    });
                    *count += 1;
                }
                Entry::Occupied(_) => {}
            }
            let action = first_move(&game, seat);
            game.apply(action, &mut Vec::new()).expect("a legal action");
            actions.push(action);
        }
    }
    found
}

/// The position's token and the match's credentials, reached through the server: a
/// hot-seat NewGame with its seed, Deal, and its plays and draws.
async fn reach(client: &mut Client, rules: pb::Rules, position: &Position) -> (Vec<u8>, Creds) {
    let (state, _, creds) = new_match(client, rules, position.seed).await;
    let (mut state, _) = deal(client, state).await;
    for &action in &position.actions {
        state = match action {
            Action::Play { seat, tile, end } => {
                client
                    .play(pb::PlayRequest {
                        state: state.into(),
                        seat: seat as u32,
                        tile: Some(convert::tile_out(tile)),
                        end: convert::end_out(end),
                        viewer: None,
                        credential: creds.of(seat as u32),
                    })
                    .await
                    .expect("Play")
                    .into_inner()
                    .state
            }
            Action::Draw { seat } => {
                client
                    .draw(pb::DrawRequest {
                        state: state.into(),
                        seat: seat as u32,
                        viewer: None,
                        credential: creds.of(seat as u32),
                    })
                    .await
                    .expect("Draw")
                    .into_inner()
                    .state
            }
            Action::Deal | Action::Forfeit { .. } => {
                unreachable!("no deal or forfeit within a hand")
            }
        };
    }
    (state, creds)
}

/// Fairness, end to end: two real matches whose seat on turn sees the same thing, the
/// hidden tiles (other hands, the boneyard) different, get the same advice from
/// Suggest at every level and bot seed. A bot that peeked at a hidden tile would, over
/// so many pairs, answer some pair differently.
///
/// The token holds the rules, the seed and the hand's actions, and opening it replays
/// the hand, so the hidden tiles follow from the seed: a token cannot carry the same
/// game with the hidden tiles dealt again. The pairs are therefore matches of different
/// seeds, found with the engine by a birthday search over seeds (the seat's hand and
/// the table agree, the rest of the deal differs), each compared at the deal and a
/// few plays into the hand.
#[tokio::test]
async fn advice_depends_only_on_what_the_seat_may_know() {
    let server = TestServer::start(ring(1, 5)).await;
    let mut client = server.client().await;
    let five_each = pb::HandSizeRule::FiveEach as i32;
    let tables = [
        pb::Rules {
            hand_size: five_each,
            ..rules(2, false, 0)
        },
        pb::Rules {
            hand_size: five_each,
            ..rules(3, false, 0)
        },
        rules(4, false, 0),
        rules(4, true, 0),
    ];
    // Each table its own seeds (the partnership does not change the deal).
    let started = std::time::Instant::now();
    let found: Vec<(pb::Rules, Twins)> = (0..)
        .zip(tables)
        .flat_map(|(i, table)| {
            let engine_rules = convert::rules_in(Some(&table)).expect("rules");
            twins(engine_rules, i * SEEDS..(i + 1) * SEEDS, 5)
                .into_iter()
                .map(move |pair| (table, pair))
        })
        .collect();
    let searched = started.elapsed();
    let mut by_depth = [0usize; DEPTH + 1];
    let mut hidden_differed = 0;
    let mut compared = 0;
    for (table, pair) in &found {
        by_depth[pair.depth] += 1;
        let seat = pair.seat;
        let engine_rules = convert::rules_in(Some(table)).expect("rules");
        let (game_a, game_b) = (
            replayed(engine_rules, &pair.a),
            replayed(engine_rules, &pair.b),
        );
        assert_eq!(game_a.knowledge(seat), game_b.knowledge(seat));
        let players = engine_rules.players;
        hidden_differed += usize::from(
            (1..players)
                .map(|d| (seat + d) % players)
                .any(|s| game_a.hand(s) != game_b.hand(s)),
        );
        let (a, creds_a) = reach(&mut client, *table, &pair.a).await;
        let (b, creds_b) = reach(&mut client, *table, &pair.b).await;
        let (seed_a, seed_b) = (pair.a.seed, pair.b.seed);
        // The match id and the state ids are random in each match (the state ids digest
        // the match's secret): everything else the seat is shown must be the same.
        let view = |mut v: pb::GameView| {
            v.match_id.clear();
            v.state_id.clear();
            v.previous_state_id.clear();
            v
        };
        assert_eq!(
            view(view_for(&mut client, &a, seat as u32, &creds_a).await),
            view(view_for(&mut client, &b, seat as u32, &creds_b).await),
            "seeds {seed_a} and {seed_b}: the server shows seat {seat} the same"
        );
        for level in [pb::BotLevel::Easy, pb::BotLevel::Medium, pb::BotLevel::Hard] {
            for bot_seed in [0, 1, seed_a ^ seed_b] {
                let advice_a = suggest(
                    &mut client,
                    request(&a, &creds_a, seat as u32, level, bot_seed),
                )
                .await;
                let advice_b = suggest(
                    &mut client,
                    request(&b, &creds_b, seat as u32, level, bot_seed),
                )
                .await;
                assert_eq!(
                    advice_a, advice_b,
                    "{} players, seeds {seed_a} and {seed_b}, {} actions in, seat {seat}, \
                     {level:?}, bot seed {bot_seed}: advice changed with hidden tiles",
                    table.players, pair.depth
                );
                compared += 1;
            }
        }
    }
    eprintln!(
        "{} twin positions from {SEEDS} seeds a table in {searched:?} (by depth {by_depth:?}), \
         {compared} comparisons",
        found.len()
    );
    assert_eq!(
        hidden_differed,
        found.len(),
        "the hidden tiles differed in every pair"
    );
    assert_eq!(by_depth[0], 4 * 5, "every table has starters' twins");
    assert!(found.len() >= 80, "{} pairs: {by_depth:?}", found.len());
    assert!(
        by_depth[1..].iter().sum::<usize>() >= 60 && by_depth.iter().all(|&n| n > 0),
        "twins past the lead at every depth: {by_depth:?}"
    );
    assert_eq!(compared, 9 * found.len());
}

#[tokio::test]
async fn suggest_refuses_bad_requests_with_their_reason() {
    let server = TestServer::start(ring(1, 6)).await;
    let mut client = server.client().await;
    let fresh_answer = client
        .new_game(hot_seat(pb::Rules::default(), None))
        .await
        .expect("NewGame")
        .into_inner();
    let fresh_creds = Creds::from_new_game(&fresh_answer);
    let fresh = fresh_answer.state;
    let (token, creds) = common::dealt_token(&mut client).await;
    let turn = view_for(&mut client, &token, 0, &creds)
        .await
        .turn
        .expect("turn");
    let hard =
        |state: &[u8], creds: &Creds, seat| request(state, creds, seat, pb::BotLevel::Hard, 1);

    let refused =
        |r: Result<tonic::Response<pb::SuggestResponse>, tonic::Status>| r.expect_err("refused");
    let mut req = hard(&token, &creds, turn);
    req.level = pb::BotLevel::Unspecified as i32;
    let s = refused(client.suggest(req).await);
    assert_eq!(
        (s.code(), bad_fields(&s)),
        (Code::InvalidArgument, vec!["level".to_string()])
    );
    let mut req = hard(&token, &creds, turn);
    req.level = 42;
    let s = refused(client.suggest(req).await);
    assert_eq!(bad_fields(&s), ["level"]);
    let mut req = hard(&token, &creds, turn);
    req.worlds = 1025;
    let s = refused(client.suggest(req).await);
    assert_eq!(
        (s.code(), bad_fields(&s)),
        (Code::InvalidArgument, vec!["worlds".to_string()])
    );
    let s = refused(client.suggest(hard(&token, &creds, 2)).await);
    assert_eq!(
        (s.code(), bad_fields(&s)),
        (Code::InvalidArgument, vec!["seat".to_string()])
    );
    let s = refused(client.suggest(hard(&token, &creds, 1 - turn)).await);
    assert_eq!(
        (s.code(), reason(&s)),
        (Code::FailedPrecondition, "NOT_YOUR_TURN".into())
    );
    let s = refused(client.suggest(hard(&fresh, &fresh_creds, 0)).await);
    assert_eq!(
        (s.code(), reason(&s)),
        (Code::FailedPrecondition, "WRONG_PHASE".into())
    );
    let s = refused(client.suggest(hard(b"garbage", &creds, 0)).await);
    assert_eq!(
        (s.code(), reason(&s)),
        (Code::InvalidArgument, "TOKEN_MALFORMED".into())
    );
    let mut tampered = token.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    let s = refused(client.suggest(hard(&tampered, &creds, turn)).await);
    assert_eq!(reason(&s), "TOKEN_INVALID");

    // The seat's credential: checked before the turn and the phase, so a refusal says
    // nothing about the match.
    let denied = |s: &tonic::Status| (s.code(), reason(s));
    let mut req = hard(&token, &creds, turn);
    req.credential.clear();
    let s = refused(client.suggest(req).await);
    assert_eq!(
        denied(&s),
        (Code::PermissionDenied, "CREDENTIAL_REQUIRED".into())
    );
    let mut req = hard(&token, &creds, 1 - turn);
    req.credential.clear();
    let s = refused(client.suggest(req).await);
    assert_eq!(
        denied(&s),
        (Code::PermissionDenied, "CREDENTIAL_REQUIRED".into()),
        "not NOT_YOUR_TURN"
    );
    let mut req = hard(&token, &creds, turn);
    req.credential = creds.of(1 - turn);
    let s = refused(client.suggest(req).await);
    assert_eq!(
        denied(&s),
        (Code::PermissionDenied, "CREDENTIAL_INVALID".into()),
        "the other seat's credential"
    );
    let mut req = hard(&token, &creds, turn);
    req.credential = fresh_creds.of(turn);
    let s = refused(client.suggest(req).await);
    assert_eq!(
        denied(&s),
        (Code::PermissionDenied, "CREDENTIAL_INVALID".into()),
        "the same seat's credential in another match"
    );
    let mut req = hard(&fresh, &fresh_creds, 0);
    req.credential[0] ^= 1;
    let s = refused(client.suggest(req).await);
    assert_eq!(
        denied(&s),
        (Code::PermissionDenied, "CREDENTIAL_INVALID".into()),
        "not WRONG_PHASE"
    );
    // An open seat has no credential yet; a bot's seat never has one.
    let open = client
        .new_game(pb::NewGameRequest::default())
        .await
        .expect("NewGame")
        .into_inner()
        .state;
    let s = refused(client.suggest(hard(&open, &creds, 0)).await);
    assert_eq!(
        denied(&s),
        (Code::PermissionDenied, "CREDENTIAL_INVALID".into())
    );
    let with_bot = client
        .new_game(pb::NewGameRequest {
            seats: vec![
                pb::SeatSetup {
                    bot: 0,
                    claim: true,
                    display_name: String::new(),
                    pass: String::new(),
                },
                pb::SeatSetup {
                    bot: pb::BotLevel::Medium as i32,
                    claim: false,
                    display_name: String::new(),
                    pass: String::new(),
                },
            ],
            ..Default::default()
        })
        .await
        .expect("NewGame")
        .into_inner();
    let bot_creds = Creds::from_new_game(&with_bot);
    let (with_bot, _) = deal(&mut client, with_bot.state).await;
    for credential in [Vec::new(), bot_creds.of(0)] {
        let mut req = hard(&with_bot, &bot_creds, 1);
        req.credential = credential;
        let s = refused(client.suggest(req).await);
        assert_eq!(denied(&s), (Code::PermissionDenied, "SEAT_IS_BOT".into()));
    }

    // The same request, the same answer; the default budget is reported.
    let mut req = hard(&token, &creds, turn);
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
        let (state, _, creds) = new_match(&mut client, rules(2, false, 0), seed).await;
        let (mut state, mut view) = deal(&mut client, state).await;
        while view.phase == pb::Phase::Playing as i32 {
            let seat = view.turn.expect("turn");
            let advice = suggest(
                &mut client,
                request(&state, &creds, seat, pb::BotLevel::Hard, 0),
            )
            .await;
            if advice.draw {
                assert!(advice.moves.is_empty() && advice.play.is_none());
                assert!(view_for(&mut client, &state, seat, &creds).await.must_draw);
                return;
            }
            (state, view) = follow(&mut client, &state, &creds, seat, &advice).await;
        }
    }
    panic!("no seat had to draw in 50 hands");
}
