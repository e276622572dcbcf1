//! The attack suite of docs/security.md: a player holding a token (and perhaps a seat's
//! credential) tries to see or act for another seat, to pick or learn a deal, and to
//! pass a fork off as the match. Every attack runs against a real server with
//! production's defaults (client seeds refused) through a real gRPC client, and each
//! test says which defence it shows and how it was seen to fail without it.

use crate::common;

use allfives::proto::v1 as pb;
use allfives::state::KeyRing;
use common::{CLAIMED, Client, Creds, OPEN, TestServer, bot, deal, hot_seat, ring, tile};
use tonic::Code;

/// What a refusal tells its caller: the code, the message and every detail.
fn told(status: &tonic::Status) -> (Code, String, Vec<u8>) {
    (
        status.code(),
        status.message().to_string(),
        status.details().to_vec(),
    )
}

fn reason(status: &tonic::Status) -> String {
    common::reason(status)
}

/// A four-seat hot-seat match (every credential known to the test, as if four players
/// each held their own), dealt.
async fn four_players(client: &mut Client) -> (Vec<u8>, Creds) {
    let new = client
        .new_game(hot_seat(
            pb::Rules {
                players: 4,
                ..Default::default()
            },
            None,
        ))
        .await
        .expect("NewGame")
        .into_inner();
    let creds = Creds::from_new_game(&new);
    (deal(client, new.state).await.0, creds)
}

/// Every credential a player at the table (or another match's) might try for `seat`:
/// none, every other seat's, another match's credential of the same seat, and the
/// seat's own with one bit changed or cut short.
fn wrong_credentials(seat: u32, creds: &Creds, foreign: &Creds) -> Vec<(String, Vec<u8>)> {
    let mut wrong = vec![("none".to_string(), Vec::new())];
    for other in 0..4 {
        if other != seat {
            wrong.push((format!("seat {other}'s"), creds.of(other)));
        }
    }
    wrong.push(("another match's".into(), foreign.of(seat)));
    let mut flipped = creds.of(seat);
    flipped[15] ^= 1;
    wrong.push(("its own with a bit flipped".into(), flipped));
    wrong.push(("its own cut short".into(), creds.of(seat)[..15].to_vec()));
    let mut longer = creds.of(seat);
    longer.push(0);
    wrong.push(("its own with a byte added".into(), longer));
    wrong
}

/// Every RPC that names a seat, for every seat and every wrong credential: refused
/// with PERMISSION_DENIED (CREDENTIAL_REQUIRED without one, CREDENTIAL_INVALID with a
/// wrong one), and the refusal is the same whatever the call asks about the seat's
/// tiles and whether it is on turn, so it cannot be used to probe a hand. The seat's own
/// credential works. Seen to fail with `Seats::authorize` answering `Ok(())`: every
/// call then answers (or is refused by the rules, telling TILE_NOT_IN_HAND apart from
/// TILE_DOES_NOT_MATCH).
#[tokio::test]
async fn no_rpc_lets_anyone_but_its_holder_see_or_act_for_a_seat() {
    let server = TestServer::start_default(ring(1, 7)).await;
    let mut client = server.client().await;
    let (state, creds) = four_players(&mut client).await;
    let (_, foreign) = four_players(&mut client).await;
    let public = client
        .score(pb::ScoreRequest {
            state: state.clone().into(),
            ..Default::default()
        })
        .await
        .expect("the public view needs no credential")
        .into_inner()
        .view
        .expect("view");
    assert!(public.hand.is_empty() && public.legal_moves.is_empty());
    let turn = public.turn.expect("a hand in play");
    let mut refusals = 0;
    for seat in 0..4u32 {
        for (what, credential) in wrong_credentials(seat, &creds, &foreign) {
            let expected = if credential.is_empty() {
                "CREDENTIAL_REQUIRED"
            } else {
                "CREDENTIAL_INVALID"
            };
            let check = |status: tonic::Status, rpc: &str| {
                assert_eq!(status.code(), Code::PermissionDenied, "{rpc} {seat} {what}");
                assert_eq!(reason(&status), expected, "{rpc} {seat} {what}");
                told(&status)
            };
            let score = client
                .score(pb::ScoreRequest {
                    state: state.clone().into(),
                    viewer: Some(seat),
                    credential: credential.clone(),
                    include_hand_events: true,
                })
                .await
                .expect_err("Score");
            check(score, "Score");
            // Deal during a hand: refused for the viewer before the phase is looked at.
            let dealt = client
                .deal(pb::DealRequest {
                    state: state.clone().into(),
                    viewer: Some(seat),
                    credential: credential.clone(),
                })
                .await
                .expect_err("Deal");
            check(dealt, "Deal");
            // Every tile, every end: the same refusal, on turn or not.
            let mut seen = None;
            for index in 0..28u32 {
                let (a, b) = (0..7)
                    .flat_map(|a| (a..7).map(move |b| (a, b)))
                    .nth(index as usize)
                    .expect("28 tiles");
                for end in 0..=4 {
                    let played = client
                        .play(pb::PlayRequest {
                            state: state.clone().into(),
                            seat,
                            tile: Some(tile(a, b)),
                            end,
                            viewer: None,
                            credential: credential.clone(),
                        })
                        .await
                        .expect_err("Play");
                    let t = check(played, "Play");
                    assert_eq!(seen.get_or_insert(t.clone()), &t, "Play {seat} [{a}|{b}]");
                    refusals += 1;
                }
            }
            let drew = client
                .draw(pb::DrawRequest {
                    state: state.clone().into(),
                    seat,
                    viewer: None,
                    credential: credential.clone(),
                })
                .await
                .expect_err("Draw");
            assert_eq!(&check(drew, "Draw").0, &Code::PermissionDenied);
            for level in [pb::BotLevel::Easy, pb::BotLevel::Hard] {
                let advice = client
                    .suggest(pb::SuggestRequest {
                        state: state.clone().into(),
                        seat,
                        level: level as i32,
                        worlds: 8,
                        seed: None,
                        credential: credential.clone(),
                    })
                    .await
                    .expect_err("Suggest");
                check(advice, "Suggest");
            }
            refusals += 5;
        }
        // A seat's own credential acting for it, viewed by another: refused too.
        let other = (seat + 1) % 4;
        let crossed = client
            .play(pb::PlayRequest {
                state: state.clone().into(),
                seat,
                tile: Some(tile(0, 0)),
                end: 0,
                viewer: Some(other),
                credential: creds.of(seat),
            })
            .await
            .expect_err("Play viewed by another seat");
        assert_eq!(reason(&crossed), "CREDENTIAL_INVALID");
        // The holder sees its hand, and only the seat on turn its moves.
        let mine = common::view_for(&mut client, &state, seat, &creds).await;
        assert_eq!(mine.hand.len(), 5);
        assert_eq!(mine.viewer, Some(seat));
        assert_eq!(mine.legal_moves.is_empty(), seat != turn);
    }
    assert!(refusals > 4 * 8 * 140, "{refusals} refusals");
}

/// A bot's seat has no credential: nobody may act or look for it, and the refusal says
/// so before anything else (SEAT_IS_BOT), whatever credential comes. Seen to fail with
/// `Seats::authorize` answering `Ok(())` (the bot's hand is then shown).
#[tokio::test]
async fn nobody_acts_or_looks_for_a_bot() {
    let server = TestServer::start_default(ring(1, 7)).await;
    let mut client = server.client().await;
    let me = CLAIMED;
    let robot = bot(pb::BotLevel::Medium);
    let new = client
        .new_game(pb::NewGameRequest {
            seats: vec![me, robot],
            ..Default::default()
        })
        .await
        .expect("NewGame")
        .into_inner();
    let creds = Creds::from_new_game(&new);
    assert_eq!(new.credentials.len(), 1, "no credential exists for a bot");
    let (state, _) = deal(&mut client, new.state).await;
    for credential in [Vec::new(), creds.of(0), vec![0; 16]] {
        let score = client
            .score(pb::ScoreRequest {
                state: state.clone().into(),
                viewer: Some(1),
                credential: credential.clone(),
                include_hand_events: false,
            })
            .await
            .expect_err("Score for a bot");
        assert_eq!(score.code(), Code::PermissionDenied);
        assert_eq!(reason(&score), "SEAT_IS_BOT");
        let advice = client
            .suggest(pb::SuggestRequest {
                state: state.clone().into(),
                seat: 1,
                level: pb::BotLevel::Hard as i32,
                credential: credential.clone(),
                ..Default::default()
            })
            .await
            .expect_err("Suggest for a bot");
        assert_eq!(reason(&advice), "SEAT_IS_BOT");
        let drew = client
            .draw(pb::DrawRequest {
                state: state.clone().into(),
                seat: 1,
                viewer: None,
                credential,
            })
            .await
            .expect_err("Draw for a bot");
        assert_eq!(reason(&drew), "SEAT_IS_BOT");
    }
    let claimed = client
        .claim_seat(pb::ClaimSeatRequest {
            state: state.clone(),
            seat: 1,
            ..Default::default()
        })
        .await
        .expect_err("ClaimSeat of a bot after the deal");
    assert_eq!(claimed.code(), Code::FailedPrecondition);
}

/// Every tile a response shows, and where: the viewer's hand, the layout, events.
/// Hands shown at the end of a hand (`last_hand`, `HandEnded`) are the rules' reveal.
fn shown_tiles(view: &pb::GameView, events: &[pb::Event]) -> Vec<(String, (u32, u32))> {
    let mut shown = Vec::new();
    let t = |t: &Option<pb::Tile>| t.map(|t| (t.a, t.b));
    for tile in &view.hand {
        shown.push(("hand".to_string(), (tile.a, tile.b)));
    }
    for placed in &view.layout {
        shown.extend(t(&placed.tile).map(|t| ("layout".to_string(), t)));
    }
    for event in events {
        match event.kind.as_ref().expect("kind") {
            pb::event::Kind::TilePlayed(p) => {
                shown.extend(t(&p.tile).map(|t| ("played".to_string(), t)));
            }
            pb::event::Kind::TileDrawn(d) => {
                shown.extend(t(&d.tile).map(|t| (format!("drawn by {}", d.seat), t)));
            }
            _ => {}
        }
    }
    shown
}

/// One human against three server-played HARD bots, a whole match, played only
/// through the human's own calls: the bots move within those calls, and no response
/// ever shows the human a tile of a bot's hand before the hand ends (no view holds
/// another hand, no drawn tile but the human's own, every tile on show is the human's
/// or on the table). Seen to fail with the redaction of drawn tiles removed
/// (`Event::redacted_for` returning the event as it is): a bot's draw then shows its
/// tile.
#[tokio::test]
async fn a_human_against_three_hard_bots_never_sees_a_bot_tile_before_the_reveal() {
    let _load = common::heavy().await;
    let server = TestServer::start_default(ring(1, 7)).await;
    let mut client = server.client().await;
    let hard = bot(pb::BotLevel::Hard);
    let me = CLAIMED;
    // Matches until a bot has drawn (nearly always the first: the check of its redacted
    // draw must have run), at most four.
    let (mut bot_moves, mut bot_draws) = (0, 0);
    for _ in 0..4 {
        if bot_draws > 0 {
            break;
        }
        let new = client
            .new_game(pb::NewGameRequest {
                rules: Some(pb::Rules {
                    players: 4,
                    target: 100,
                    ..Default::default()
                }),
                seed: None,
                viewer: Some(0),
                seats: vec![me.clone(), hard.clone(), hard.clone(), hard.clone()],
            })
            .await
            .expect("NewGame")
            .into_inner();
        let creds = Creds::from_new_game(&new);
        let credential = creds.of(0);
        let mut state = new.state;
        let mut calls = 0;
        let check = |view: &pb::GameView, events: &[pb::Event], hand: &[pb::Tile]| {
            // The human's own hand as the server holds it, and the table.
            let own: Vec<(u32, u32)> = hand.iter().map(|t| (t.a, t.b)).collect();
            for (what, t) in shown_tiles(view, events) {
                let public = what == "layout" || what == "played";
                let mine = what == "hand" || what == "drawn by 0";
                assert!(
                    public || mine,
                    "a bot's tile {t:?} shown as {what} before the reveal"
                );
                if what == "hand" {
                    assert!(own.contains(&t));
                }
            }
            assert_eq!(view.viewer, Some(0));
        };
        loop {
            calls += 1;
            assert!(calls < 2_000, "the match ends");
            let view = common::view_for(&mut client, &state, 0, &creds).await;
            let (next, answer_view, events) = match pb::Phase::try_from(view.phase) {
                Ok(pb::Phase::Over) => break,
                Ok(pb::Phase::Dealing) => {
                    let r = client
                        .deal(pb::DealRequest {
                            state: state.clone().into(),
                            viewer: Some(0),
                            credential: credential.clone(),
                        })
                        .await
                        .expect("Deal")
                        .into_inner();
                    (r.state, r.view.expect("view"), r.events)
                }
                _ => {
                    assert_eq!(
                        view.turn,
                        Some(0),
                        "bots never leave the turn with themselves"
                    );
                    if view.must_draw {
                        let r = client
                            .draw(pb::DrawRequest {
                                state: state.clone().into(),
                                seat: 0,
                                viewer: Some(0),
                                credential: credential.clone(),
                            })
                            .await
                            .expect("Draw")
                            .into_inner();
                        (r.state, r.view.expect("view"), r.events)
                    } else {
                        let m = view.legal_moves[calls % view.legal_moves.len()];
                        let r = client
                            .play(pb::PlayRequest {
                                state: state.clone().into(),
                                seat: 0,
                                tile: m.tile,
                                end: m.end,
                                viewer: Some(0),
                                credential: credential.clone(),
                            })
                            .await
                            .expect("Play")
                            .into_inner();
                        (r.state, r.view.expect("view"), r.events)
                    }
                }
            };
            let own_hand = common::view_for(&mut client, &next, 0, &creds).await.hand;
            check(&answer_view, &events, &own_hand);
            for event in &events {
                match event.kind.as_ref() {
                    Some(pb::event::Kind::TilePlayed(p)) if p.seat != 0 => bot_moves += 1,
                    Some(pb::event::Kind::TileDrawn(d)) if d.seat != 0 => {
                        assert!(d.tile.is_none());
                        bot_draws += 1;
                    }
                    _ => {}
                }
            }
            // Reconnecting shows the same: the hand's events, redacted for seat 0.
            let replayed = client
                .score(pb::ScoreRequest {
                    state: next.clone().into(),
                    viewer: Some(0),
                    credential: credential.clone(),
                    include_hand_events: true,
                })
                .await
                .expect("Score")
                .into_inner();
            check(&answer_view, &replayed.hand_events, &own_hand);
            state = next;
        }
    }
    assert!(bot_moves > 20, "{bot_moves} bot moves");
    assert!(bot_draws > 0, "the bots drew at some point ({bot_draws})");
}

/// State ids: a retried call (the same request on the same token) gives the same
/// `state_id`, two different moves from one token different ones, and every answer's
/// `previous_state_id` is the id of the state it was made from, so a relay keeping the
/// latest id refuses a fork or a stale token with a byte comparison. Bots included:
/// their moves are seeded by the match, so a retry plays them the same. Seen to fail
/// with the id taken over the plaintext's first 40 bytes only (the seed, match id and
/// rules: the "same match id and move count" of two branches), and with it taken over
/// the whole token instead of the plaintext (a fresh nonce each time, so a retry gets
/// another id).
#[tokio::test]
async fn a_retried_move_keeps_its_state_id_and_a_fork_gets_another() {
    let server = TestServer::start_default(ring(1, 7)).await;
    let mut client = server.client().await;
    let me = CLAIMED;
    let robot = bot(pb::BotLevel::Hard);
    let new = client
        .new_game(pb::NewGameRequest {
            rules: Some(pb::Rules {
                players: 3,
                ..Default::default()
            }),
            seats: vec![me.clone(), robot.clone(), robot.clone()],
            ..Default::default()
        })
        .await
        .expect("NewGame")
        .into_inner();
    let creds = Creds::from_new_game(&new);
    let first = new.view.expect("view");
    assert!(first.previous_state_id.is_empty());
    assert_eq!(first.state_id.len(), 16);
    let dealt = |client: &mut Client, state: Vec<u8>| {
        let mut client = client.clone();
        async move {
            client
                .deal(pb::DealRequest {
                    state: state.into(),
                    ..Default::default()
                })
                .await
                .expect("Deal")
                .into_inner()
        }
    };
    let (a, b) = (
        dealt(&mut client, new.state.clone()).await,
        dealt(&mut client, new.state.clone()).await,
    );
    let (va, vb) = (a.view.expect("view"), b.view.expect("view"));
    assert_ne!(a.state, b.state, "every token is sealed anew");
    assert_eq!(
        va.state_id, vb.state_id,
        "a retried Deal, bots' moves and all"
    );
    assert_eq!(va.previous_state_id, first.state_id);
    assert_eq!(a.events, b.events);
    let mut state = a.state;
    let mut latest = va.state_id.clone();
    // Play on: at each turn of the human, two different moves fork; the relay's
    // compare-and-set accepts the first and refuses the other.
    let mut forks = 0;
    for _ in 0..30 {
        let view = common::view_for(&mut client, &state, 0, &creds).await;
        assert_eq!(view.state_id, latest, "Score shows the state's own id");
        if view.turn != Some(0) {
            break;
        }
        let play = |m: pb::LegalMove| pb::PlayRequest {
            state: state.clone().into(),
            seat: 0,
            tile: m.tile,
            end: m.end,
            viewer: Some(0),
            credential: creds.of(0),
        };
        let request = if view.must_draw {
            None
        } else {
            Some(play(view.legal_moves[0]))
        };
        let Some(request) = request else {
            let r = client
                .draw(pb::DrawRequest {
                    state: state.clone().into(),
                    seat: 0,
                    viewer: Some(0),
                    credential: creds.of(0),
                })
                .await
                .expect("Draw")
                .into_inner();
            let v = r.view.expect("view");
            assert_eq!(v.previous_state_id, latest);
            latest = v.state_id;
            state = r.state;
            continue;
        };
        let once = client
            .play(request.clone())
            .await
            .expect("Play")
            .into_inner();
        let twice = client.play(request).await.expect("Play").into_inner();
        let (v1, v2) = (once.view.expect("view"), twice.view.expect("view"));
        assert_eq!(v1.state_id, v2.state_id, "a retried Play");
        assert_eq!(v1.previous_state_id, latest);
        if view.legal_moves.len() > 1 {
            let other = client
                .play(play(view.legal_moves[1]))
                .await
                .expect("Play")
                .into_inner()
                .view
                .expect("view");
            assert_ne!(other.state_id, v1.state_id, "another move, another branch");
            // Both name the same previous state: only one can win the relay's
            // compare-and-set.
            assert_eq!(other.previous_state_id, v1.previous_state_id);
            forks += 1;
        }
        latest = v1.state_id;
        state = once.state;
    }
    assert!(forks > 0, "some turn had two moves");
}

/// Seeds: a server with production's defaults refuses any NewGame naming a seed
/// (PERMISSION_DENIED, SEED_NOT_ALLOWED), so no client chooses a deal. Seen to fail
/// with `--allow-client-seeds` given (the test's server then answers).
#[tokio::test]
async fn client_seeds_are_refused_by_default() {
    let server = TestServer::start_default(ring(1, 7)).await;
    let mut client = server.client().await;
    for seed in [0, 1, 263, u64::MAX] {
        for request in [
            hot_seat(pb::Rules::default(), Some(seed)),
            pb::NewGameRequest {
                seed: Some(seed),
                ..Default::default()
            },
        ] {
            let refused = client.new_game(request).await.expect_err("a seed");
            assert_eq!(refused.code(), Code::PermissionDenied);
            assert_eq!(reason(&refused), "SEED_NOT_ALLOWED");
        }
    }
    // The same server deals unseeded matches.
    let (state, creds) = common::dealt_token(&mut client).await;
    assert_eq!(
        common::view_for(&mut client, &state, 0, &creds)
            .await
            .hand
            .len(),
        9
    );
    // The flag that allows them, for tests and replays.
    let seeded = TestServer::start(ring(1, 7)).await;
    let mut seeded = seeded.client().await;
    assert!(
        seeded
            .new_game(hot_seat(pb::Rules::default(), Some(263)))
            .await
            .is_ok()
    );
}

/// The fork attack on claims: the creator, holding the token from before another
/// player claimed a seat, claims that seat itself in a branch of its own and deals, to
/// read the hand the real player will hold. Each claim draws a new seed, so the
/// branch deals other hands: the creator's copy of the seat's hand is not the real
/// one. And the real player's credential does not open the creator's branch, nor the
/// creator's the real one. Seen to fail with ClaimSeat keeping the seed (the hands
/// then agree in every trial).
#[tokio::test]
async fn a_claim_forked_by_the_creator_deals_other_hands() {
    let server = TestServer::start_default(ring(1, 7)).await;
    let mut client = server.client().await;
    let mut differing = 0;
    let trials = 8;
    for _ in 0..trials {
        let new = client
            .new_game(pb::NewGameRequest {
                seats: vec![CLAIMED, OPEN],
                ..Default::default()
            })
            .await
            .expect("NewGame")
            .into_inner();
        assert_eq!(
            new.credentials.len(),
            1,
            "the creator gets only its own seat"
        );
        let claim = |client: &mut Client| {
            let mut client = client.clone();
            let state = new.state.clone();
            async move {
                client
                    .claim_seat(pb::ClaimSeatRequest {
                        state,
                        seat: 1,
                        ..Default::default()
                    })
                    .await
                    .expect("ClaimSeat")
                    .into_inner()
            }
        };
        // The real player claims seat 1; the creator, from the same old token, too.
        let (real, forged) = (claim(&mut client).await, claim(&mut client).await);
        let cred = |c: &pb::ClaimSeatResponse| {
            let mut creds = Creds(vec![Vec::new(); 4]);
            creds.0[1] = c
                .credential
                .as_ref()
                .expect("credential")
                .credential
                .clone();
            creds
        };
        let (real_cred, forged_cred) = (cred(&real), cred(&forged));
        assert_ne!(real_cred, forged_cred);
        let (real_state, _) = deal(&mut client, real.state).await;
        let (forged_state, _) = deal(&mut client, forged.state).await;
        let real_hand = common::view_for(&mut client, &real_state, 1, &real_cred)
            .await
            .hand;
        let forged_hand = common::view_for(&mut client, &forged_state, 1, &forged_cred)
            .await
            .hand;
        if real_hand != forged_hand {
            differing += 1;
        }
        // Neither credential opens the other branch.
        for (state, creds) in [(&real_state, &forged_cred), (&forged_state, &real_cred)] {
            let refused = client
                .score(pb::ScoreRequest {
                    state: state.clone().into(),
                    viewer: Some(1),
                    credential: creds.of(1),
                    include_hand_events: false,
                })
                .await
                .expect_err("another branch's credential");
            assert_eq!(reason(&refused), "CREDENTIAL_INVALID");
        }
    }
    assert_eq!(differing, trials, "every forked claim dealt other hands");
}

/// A credential is the seat's for the match's whole life, across key rotation: a token
/// sealed under the old key, opened by a replica whose ring holds both keys and seals
/// under the new one, still takes the seat's credential (and only it), and so do the
/// tokens sealed under the new key.
#[tokio::test]
async fn credentials_survive_key_rotation() {
    let old = TestServer::start_default(ring(1, 7)).await;
    let mut old_client = old.client().await;
    let (state, creds) = common::dealt_token(&mut old_client).await;
    let rotated = KeyRing::new(vec![(1, [7; 32]), (2, [8; 32])], Some(2)).expect("ring");
    let new = TestServer::start_default(rotated).await;
    let mut client = new.client().await;
    let view = common::view_for(&mut client, &state, 0, &creds).await;
    assert_eq!(view.hand.len(), 9);
    // Seat 0 or 1 acts on the rotated replica; its answer is sealed under key 2.
    let turn = view.turn.expect("turn");
    let seen = common::view_for(&mut client, &state, turn, &creds).await;
    let request = |credential: Vec<u8>| pb::PlayRequest {
        state: state.clone().into(),
        seat: turn,
        tile: seen.legal_moves[0].tile,
        end: 0,
        viewer: Some(turn),
        credential,
    };
    let played = client
        .play(request(creds.of(turn)))
        .await
        .expect("Play")
        .into_inner();
    assert_eq!(played.state[1], 2, "sealed under the new key");
    assert_eq!(
        common::view_for(&mut client, &played.state, 1 - turn, &creds)
            .await
            .hand
            .len(),
        9
    );
    let refused = client
        .play(request(creds.of(1 - turn)))
        .await
        .expect_err("the other seat's credential");
    assert_eq!(reason(&refused), "CREDENTIAL_INVALID");
}

#[tokio::test]
async fn a_claim_key_that_is_not_random_bytes_is_refused() {
    let server = TestServer::start_default(ring(1, 7)).await;
    let mut client = server.client().await;
    let new = common::new_game_with(&mut client, vec![CLAIMED, OPEN]).await;
    let short: Vec<u8> = (0..15).collect();
    let long: Vec<u8> = (0..65).collect();
    for key in [short, long, vec![0; 16], vec![9; 32]] {
        let status = client
            .claim_seat(pb::ClaimSeatRequest {
                state: new.state.clone(),
                seat: 1,
                claim_key: key.clone(),
                display_name: String::new(),
                pass: String::new(),
            })
            .await
            .expect_err("not a claim key");
        assert_eq!(status.code(), Code::InvalidArgument, "{key:?}: {status:?}");
        assert_eq!(common::bad_fields(&status), vec!["claim_key".to_string()]);
    }
    let fine: Vec<u8> = (0..64).collect();
    client
        .claim_seat(pb::ClaimSeatRequest {
            state: new.state,
            seat: 1,
            claim_key: fine,
            display_name: String::new(),
            pass: String::new(),
        })
        .await
        .expect("16 to 64 bytes");
}

fn named(name: &str) -> pb::SeatSetup {
    pb::SeatSetup {
        display_name: name.into(),
        ..CLAIMED
    }
}

fn names(view: &pb::GameView) -> Vec<String> {
    view.seats.iter().map(|s| s.display_name.clone()).collect()
}

/// Display names: chosen at a seat's claim (NewGame's or ClaimSeat's), shown to every
/// seat and to a spectator, kept through the match; a name that could mislead or break
/// a table (a bidirectional override, a control character, more than 24 bytes, a
/// space at an end) is refused INVALID_ARGUMENT naming its field, and so is a name for
/// a seat the call does not claim. (Seen to fail with the check removed: the override
/// is taken and shown.)
#[tokio::test]
async fn display_names_are_shown_to_everyone_and_bounded() {
    let server = TestServer::start_default(ring(1, 1)).await;
    let mut client = server.client().await;
    let two = || {
        Some(pb::Rules {
            players: 2,
            ..Default::default()
        })
    };
    let new = client
        .new_game(pb::NewGameRequest {
            rules: two(),
            seats: vec![named("Ana"), OPEN],
            viewer: Some(0),
            seed: None,
        })
        .await
        .expect("NewGame")
        .into_inner();
    assert_eq!(names(new.view.as_ref().expect("view")), ["Ana", ""]);
    let claimed = client
        .claim_seat(pb::ClaimSeatRequest {
            state: new.state.clone(),
            seat: 1,
            claim_key: Vec::new(),
            display_name: "สมชาย".into(),
            pass: String::new(),
        })
        .await
        .expect("ClaimSeat")
        .into_inner();
    assert_eq!(
        names(claimed.view.as_ref().expect("view")),
        ["Ana", "สมชาย"]
    );
    let creds = Creds(vec![
        new.credentials[0].credential.clone(),
        claimed.credential.expect("credential").credential,
    ]);
    let (dealt, _) = deal(&mut client, claimed.state.clone()).await;
    for seat in [0, 1] {
        let view = common::view_for(&mut client, &dealt, seat, &creds).await;
        assert_eq!(names(&view), ["Ana", "สมชาย"], "seat {seat}");
    }
    let spectator = client
        .score(pb::ScoreRequest {
            state: dealt.clone().into(),
            viewer: None,
            credential: Vec::new(),
            include_hand_events: false,
        })
        .await
        .expect("Score")
        .into_inner()
        .view
        .expect("view");
    assert_eq!(names(&spectator), ["Ana", "สมชาย"], "a spectator");

    // Refused, naming the field.
    for bad in [
        "\u{202E}anA",
        "A\u{2066}B",
        "Ana\nBob",
        "Ana\u{7}",
        " Ana",
        "twenty-five bytes, too ..",
        "สมชายสมชาย",
        "A\u{200B}na",
        "Ana\u{2028}Bob",
        "\u{3164}",
        "A\u{0300}\u{0301}\u{0302}",
        // Issue 40's: marks of other scripts, invisible and formatting characters
        // outside the Latin blocks, a joiner hiding in a name.
        "a\u{064E}\u{064E}\u{064E}",
        "\u{05E9}\u{05B0}\u{05B1}\u{05B2}",
        "A\u{206A}",
        "A\u{1D173}",
        "A\u{13430}B",
        "\u{0600}1",
        "Al\u{200D}ice",
        "\u{2800}",
        // Another seat's name, or one that looks like it (a Greek capital alpha).
        "Ana",
        "\u{0391}na",
    ] {
        let status = client
            .claim_seat(pb::ClaimSeatRequest {
                state: new.state.clone(),
                seat: 1,
                claim_key: Vec::new(),
                display_name: bad.into(),
                pass: String::new(),
            })
            .await
            .expect_err(bad);
        assert_eq!(status.code(), Code::InvalidArgument, "{bad:?}");
        assert_eq!(reason(&status), "INVALID_FIELD");
        assert_eq!(common::bad_fields(&status), ["display_name"], "{bad:?}");
        let status = client
            .new_game(pb::NewGameRequest {
                rules: two(),
                seats: vec![named("Ana"), named(bad)],
                viewer: Some(0),
                seed: None,
            })
            .await
            .expect_err(bad);
        assert_eq!(
            common::bad_fields(&status),
            ["seats.display_name"],
            "{bad:?}"
        );
    }
    // A name for a seat the call does not claim: an open seat, a bot.
    for seat in [
        pb::SeatSetup {
            display_name: "Ana".into(),
            ..OPEN
        },
        pb::SeatSetup {
            display_name: "Ana".into(),
            ..bot(pb::BotLevel::Easy)
        },
    ] {
        let status = client
            .new_game(pb::NewGameRequest {
                rules: two(),
                seats: vec![CLAIMED, seat],
                viewer: Some(0),
                seed: None,
            })
            .await
            .expect_err("a name for a seat not claimed");
        assert_eq!(common::bad_fields(&status), ["seats.display_name"]);
    }
}
