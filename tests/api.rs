//! End to end: whole games through the real server and a generated tonic client.

mod common;

use allfives::proto::v1 as pb;
use common::{Client, TestServer, bad_fields, new_match, reason, ring, tile};
use tonic::Code;

/// Everything the tests track about a game in progress.
struct Table {
    state: Vec<u8>,
    view: pb::GameView,
    /// Points per side added up from events.
    from_events: Vec<i32>,
    calls: u32,
    hands: u32,
}

impl Table {
    fn absorb(&mut self, state: Vec<u8>, view: Option<pb::GameView>, events: &[pb::Event]) {
        assert_ne!(state, self.state, "every change issues a new token");
        assert!(state.len() <= 512, "token of {} bytes", state.len());
        let view = view.expect("a view");
        assert_eq!(
            view.moves,
            self.view.moves + 1,
            "the move counter rises by one"
        );
        assert_eq!(view.match_id, self.view.match_id);
        let rules = view.rules.expect("rules");
        let side_of = |seat: u32| if rules.partnership { seat % 2 } else { seat } as usize;
        for event in events {
            match event.kind.as_ref().expect("kind") {
                pb::event::Kind::TilePlayed(p) => {
                    assert_eq!(p.points % 5, 0);
                    self.from_events[side_of(p.seat)] += p.points as i32;
                }
                pb::event::Kind::HandEnded(h) => {
                    self.hands += 1;
                    assert_eq!(
                        h.hands.len() as u32,
                        rules.players,
                        "every hand is revealed"
                    );
                    let own_pips_off = rules.settlement == pb::SettlementRule::OwnPipsOff as i32;
                    let settled = h.reason != pb::HandEndReason::TargetReached as i32;
                    for seat in &h.hands {
                        assert_eq!(seat.rounded, (seat.pips + 2) / 5 * 5);
                    }
                    if own_pips_off && settled {
                        for s in &h.settlement {
                            let owed: u32 = h
                                .hands
                                .iter()
                                .filter(|seat| side_of(seat.seat) == s.side as usize)
                                .map(|seat| seat.rounded)
                                .sum();
                            assert_eq!(s.points, -(owed as i32), "own rounded pips come off");
                        }
                    }
                    for s in &h.settlement {
                        assert_eq!(s.points % 5, 0);
                        self.from_events[s.side as usize] += s.points;
                    }
                }
                _ => {}
            }
        }
        let scores: Vec<i32> = view.scores.iter().map(|s| s.score).collect();
        assert_eq!(scores, self.from_events, "events add up to the scores");
        self.state = state;
        self.view = view;
        self.calls += 1;
    }
}

async fn new_game(client: &mut Client, rules: pb::Rules, seed: u64) -> Table {
    let (state, view) = new_match(client, rules, seed).await;
    assert_eq!(view.moves, 0);
    assert_eq!(view.match_id.len(), 32);
    assert_eq!(view.phase, pb::Phase::Dealing as i32);
    let sides = view.scores.len();
    Table {
        state,
        view,
        from_events: vec![0; sides],
        calls: 0,
        hands: 0,
    }
}

/// Plays a game to its end, each seat taking the highest-scoring legal move; `clients`
/// are used in turn, one call each (several servers: any replica serves any call).
async fn play_out(clients: &mut [Client], table: &mut Table) {
    for call in 0..20_000 {
        let client = &mut clients[call % clients.len()];
        match pb::Phase::try_from(table.view.phase).expect("phase") {
            pb::Phase::Over => break,
            pb::Phase::Dealing => {
                let r = client
                    .deal(pb::DealRequest {
                        state: table.state.clone().into(),
                        viewer: None,
                    })
                    .await
                    .expect("Deal")
                    .into_inner();
                table.absorb(r.state, r.view, &r.events);
            }
            pb::Phase::Playing => {
                let seat = table.view.turn.expect("a turn while playing");
                let seen = client
                    .score(pb::ScoreRequest {
                        state: table.state.clone().into(),
                        viewer: Some(seat),
                    })
                    .await
                    .expect("Score")
                    .into_inner()
                    .view
                    .expect("view");
                assert_eq!(seen.hand.len() as u32, seen.hand_sizes[seat as usize]);
                assert_eq!(seen.must_draw, seen.legal_moves.is_empty(), "play or draw");
                if seen.must_draw {
                    let r = client
                        .draw(pb::DrawRequest {
                            state: table.state.clone().into(),
                            seat,
                            viewer: Some(seat),
                        })
                        .await
                        .expect("Draw")
                        .into_inner();
                    let drawn = r.events.iter().find_map(|e| match &e.kind {
                        Some(pb::event::Kind::TileDrawn(d)) => Some(d.tile),
                        _ => None,
                    });
                    assert!(drawn.flatten().is_some(), "the drawer sees its tile");
                    table.absorb(r.state, r.view, &r.events);
                } else {
                    let best = seen
                        .legal_moves
                        .iter()
                        .max_by_key(|m| m.points)
                        .expect("a move");
                    let r = client
                        .play(pb::PlayRequest {
                            state: table.state.clone().into(),
                            seat,
                            tile: best.tile,
                            end: best.end,
                            viewer: None,
                        })
                        .await
                        .expect("Play")
                        .into_inner();
                    let played = r.events.first().and_then(|e| match &e.kind {
                        Some(pb::event::Kind::TilePlayed(p)) => Some(p.points),
                        _ => None,
                    });
                    assert_eq!(played, Some(best.points), "scores what the view promised");
                    table.absorb(r.state, r.view, &r.events);
                }
            }
            pb::Phase::Unspecified => panic!("unspecified phase"),
        }
    }
    let view = &table.view;
    assert_eq!(view.phase, pb::Phase::Over as i32, "the game ended");
    let winner = view.winner_side.expect("a winner") as usize;
    let target = view.rules.as_ref().expect("rules").target as i32;
    for s in &view.scores {
        assert_eq!(s.score >= target, s.side as usize == winner);
    }
    let sheet = clients[0]
        .score(pb::ScoreRequest {
            state: table.state.clone().into(),
            viewer: None,
        })
        .await
        .expect("Score")
        .into_inner()
        .sheet
        .expect("sheet");
    let last = sheet.rows.last().expect("rows");
    let totals: Vec<i32> = last.sides.iter().map(|s| s.total).collect();
    assert_eq!(
        totals, table.from_events,
        "the sheet's running totals are the scores"
    );
    assert_eq!(sheet.winner_side, Some(winner as u32));
    assert_eq!(last.last_hand, table.hands.max(1));
}

fn rules(
    players: u32,
    partnership: bool,
    settlement: pb::SettlementRule,
    target: u32,
) -> pb::Rules {
    pb::Rules {
        players,
        partnership,
        hand_size: pb::HandSizeRule::Unspecified as i32,
        target,
        settlement: settlement as i32,
    }
}

#[tokio::test]
async fn whole_games_for_every_table_and_both_settlement_rules() {
    let server = TestServer::start(ring(1, 7)).await;
    let mut clients = [server.client().await];
    let tables = [(2, false), (3, false), (4, false), (4, true)];
    let settlements = [
        pb::SettlementRule::OwnPipsOff,
        pb::SettlementRule::WinnerTakesPips,
    ];
    let mut seed = 0;
    for (players, partnership) in tables {
        for settlement in settlements {
            seed += 1;
            let mut table = new_game(
                &mut clients[0],
                rules(players, partnership, settlement, 100),
                seed,
            )
            .await;
            play_out(&mut clients, &mut table).await;
            assert!(table.hands >= 1);
        }
    }
}

#[tokio::test]
async fn a_default_game_reports_its_rules() {
    let server = TestServer::start(ring(1, 7)).await;
    let mut client = server.client().await;
    let r = client
        .new_game(pb::NewGameRequest::default())
        .await
        .expect("NewGame")
        .into_inner();
    let rules = r.view.expect("view").rules.expect("rules");
    assert_eq!(rules.players, 2);
    assert_eq!(rules.target, 250);
    assert_eq!(rules.hand_size, pb::HandSizeRule::Standard as i32);
    assert_eq!(rules.settlement, pb::SettlementRule::OwnPipsOff as i32);
}

#[tokio::test]
async fn two_replicas_with_one_key_ring_serve_one_game_alternately() {
    let a = TestServer::start(ring(3, 9)).await;
    let b = TestServer::start(ring(3, 9)).await;
    let mut clients = [a.client().await, b.client().await];
    let mut table = new_game(
        &mut clients[0],
        rules(3, false, pb::SettlementRule::OwnPipsOff, 100),
        42,
    )
    .await;
    play_out(&mut clients, &mut table).await;
    assert!(table.calls > 10);
}

#[tokio::test]
async fn the_same_seed_and_moves_replay_identically() {
    let server = TestServer::start(ring(1, 7)).await;
    let mut client = server.client().await;
    let mut views = Vec::new();
    for _ in 0..2 {
        let table = new_game(
            &mut client,
            rules(2, false, pb::SettlementRule::OwnPipsOff, 0),
            99,
        )
        .await;
        let r = client
            .deal(pb::DealRequest {
                state: table.state.into(),
                viewer: Some(0),
            })
            .await
            .expect("Deal")
            .into_inner();
        let mut view = r.view.expect("view");
        view.match_id.clear();
        views.push(view);
    }
    assert_eq!(views[0], views[1]);
}

/// A dealt two-player game and the view of the seat on turn.
async fn dealt(client: &mut Client, seed: u64) -> (Vec<u8>, pb::GameView) {
    let table = new_game(
        client,
        rules(2, false, pb::SettlementRule::OwnPipsOff, 0),
        seed,
    )
    .await;
    let r = client
        .deal(pb::DealRequest {
            state: table.state.into(),
            viewer: None,
        })
        .await
        .expect("Deal")
        .into_inner();
    let turn = r.view.expect("view").turn.expect("turn");
    let view = client
        .score(pb::ScoreRequest {
            state: r.state.clone().into(),
            viewer: Some(turn),
        })
        .await
        .expect("Score")
        .into_inner()
        .view
        .expect("view");
    (r.state, view)
}

#[tokio::test]
async fn bad_tokens_are_refused_with_their_reason() {
    let server = TestServer::start(ring(1, 7)).await;
    let foreign = TestServer::start(ring(1, 8)).await;
    let other_id = TestServer::start(ring(2, 7)).await;
    let mut client = server.client().await;
    let (state, _) = dealt(&mut client, 1).await;
    let (foreign_state, _) = dealt(&mut foreign.client().await, 1).await;
    let (other_id_state, _) = dealt(&mut other_id.client().await, 1).await;

    let mut flipped = state.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x10;
    let mut old_version = state.clone();
    old_version[0] = 0;
    let cases = [
        ("empty", Vec::new(), "TOKEN_MALFORMED"),
        (
            "garbage",
            b"not a token at all, just bytes and more bytes".to_vec(),
            "TOKEN_UNSUPPORTED_VERSION",
        ),
        ("truncated", state[..20].to_vec(), "TOKEN_MALFORMED"),
        (
            "one byte short",
            state[..state.len() - 1].to_vec(),
            "TOKEN_INVALID",
        ),
        ("a flipped bit", flipped, "TOKEN_INVALID"),
        ("another key, same id", foreign_state, "TOKEN_INVALID"),
        ("an unknown key id", other_id_state, "TOKEN_UNKNOWN_KEY"),
        (
            "an unknown format",
            old_version,
            "TOKEN_UNSUPPORTED_VERSION",
        ),
        ("far too long", vec![1u8; 4000], "TOKEN_MALFORMED"),
    ];
    for (name, token, expected) in cases {
        let status = client
            .deal(pb::DealRequest {
                state: token.into(),
                viewer: None,
            })
            .await
            .expect_err(name);
        assert_eq!(status.code(), Code::InvalidArgument, "{name}: {status:?}");
        assert_eq!(reason(&status), expected, "{name}");
        assert_eq!(bad_fields(&status), vec!["state".to_string()], "{name}");
    }
}

#[tokio::test]
async fn every_illegal_move_gets_its_reason() {
    let server = TestServer::start(ring(1, 7)).await;
    let mut client = server.client().await;

    // Play and Draw before a deal; Deal during a hand.
    let fresh = new_game(
        &mut client,
        rules(2, false, pb::SettlementRule::OwnPipsOff, 0),
        5,
    )
    .await;
    let status = client
        .play(pb::PlayRequest {
            state: fresh.state.clone().into(),
            seat: 0,
            tile: Some(tile(0, 0)),
            end: 0,
            viewer: None,
        })
        .await
        .expect_err("play before deal");
    assert_eq!(
        (status.code(), reason(&status).as_str()),
        (Code::FailedPrecondition, "WRONG_PHASE")
    );

    // Find, over seeded games, each situation the rules refuse.
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let (state, view) = dealt(&mut client, seed).await;
        let seat = view.turn.expect("turn");
        let status = client
            .deal(pb::DealRequest {
                state: state.clone().into(),
                viewer: None,
            })
            .await
            .expect_err("deal during a hand");
        seen.insert(reason(&status));
        let other = 1 - seat;
        let play = |seat: u32, t: pb::Tile, end: pb::End| pb::PlayRequest {
            state: state.clone().into(),
            seat,
            tile: Some(t),
            end: end as i32,
            viewer: None,
        };
        let held: Vec<pb::Tile> = view.hand.clone();
        let status = client
            .play(play(other, held[0], pb::End::Unspecified))
            .await
            .expect_err("not your turn");
        seen.insert(reason(&status));
        let missing = (0..7)
            .flat_map(|a| (a..7).map(move |b| tile(a, b)))
            .find(|t| !held.contains(t))
            .expect("a tile not held");
        let status = client
            .play(play(seat, missing, pb::End::Unspecified))
            .await
            .expect_err("not held");
        seen.insert(reason(&status));
        // Lead, then look at the second seat's options.
        let lead = client
            .play(play(seat, held[0], pb::End::Unspecified))
            .await
            .expect("lead")
            .into_inner();
        let next = lead.view.expect("view").turn;
        let Some(next) = next else { continue };
        let view = client
            .score(pb::ScoreRequest {
                state: lead.state.clone().into(),
                viewer: Some(next),
            })
            .await
            .expect("Score")
            .into_inner()
            .view
            .expect("view");
        let play2 = |t: pb::Tile, end: pb::End| pb::PlayRequest {
            state: lead.state.clone().into(),
            seat: next,
            tile: Some(t),
            end: end as i32,
            viewer: None,
        };
        if view.must_draw {
            let t = view.hand[0];
            let status = client
                .play(play2(t, pb::End::Unspecified))
                .await
                .expect_err("no match");
            seen.insert(reason(&status));
        } else {
            let status = client
                .draw(pb::DrawRequest {
                    state: lead.state.clone().into(),
                    seat: next,
                    viewer: None,
                })
                .await
                .expect_err("must play");
            seen.insert(reason(&status));
            let m = &view.legal_moves[0];
            let status = client
                .play(play2(m.tile.expect("tile"), pb::End::Up))
                .await
                .expect_err("up");
            seen.insert(reason(&status));
            let fits_both = view
                .legal_moves
                .iter()
                .find(|m| view.legal_moves.iter().filter(|n| n.tile == m.tile).count() > 1);
            if let Some(m) = fits_both {
                let status = client
                    .play(play2(m.tile.expect("tile"), pb::End::Unspecified))
                    .await
                    .expect_err("ambiguous");
                seen.insert(reason(&status));
            }
        }
    }
    for expected in [
        "WRONG_PHASE",
        "NOT_YOUR_TURN",
        "TILE_NOT_IN_HAND",
        "TILE_DOES_NOT_MATCH",
        "END_NOT_OPEN",
        "MUST_PLAY",
        "AMBIGUOUS_END",
    ] {
        assert!(seen.contains(expected), "{expected} never seen: {seen:?}");
    }

    // A finished game refuses everything.
    let mut clients = [client.clone()];
    let mut table = new_game(
        &mut client,
        rules(2, false, pb::SettlementRule::OwnPipsOff, 5),
        3,
    )
    .await;
    play_out(&mut clients, &mut table).await;
    let status = client
        .deal(pb::DealRequest {
            state: table.state.clone().into(),
            viewer: None,
        })
        .await
        .expect_err("over");
    assert_eq!(
        (status.code(), reason(&status).as_str()),
        (Code::FailedPrecondition, "GAME_OVER")
    );
}

#[tokio::test]
async fn out_of_range_arguments_name_their_field() {
    let server = TestServer::start(ring(1, 7)).await;
    let mut client = server.client().await;
    let bad_rules = [
        (
            rules(7, false, pb::SettlementRule::OwnPipsOff, 0),
            "rules.players",
        ),
        (
            rules(3, true, pb::SettlementRule::OwnPipsOff, 0),
            "rules.partnership",
        ),
        (
            rules(2, false, pb::SettlementRule::OwnPipsOff, 12),
            "rules.target",
        ),
        (
            pb::Rules {
                settlement: 9,
                ..rules(2, false, pb::SettlementRule::OwnPipsOff, 0)
            },
            "rules.settlement",
        ),
    ];
    for (r, field) in bad_rules {
        let status = client
            .new_game(pb::NewGameRequest {
                rules: Some(r),
                seed: None,
                viewer: None,
            })
            .await
            .expect_err(field);
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(bad_fields(&status), vec![field.to_string()]);
        assert_eq!(reason(&status), "INVALID_FIELD");
    }
    let status = client
        .new_game(pb::NewGameRequest {
            rules: None,
            seed: None,
            viewer: Some(2),
        })
        .await
        .expect_err("viewer");
    assert_eq!(bad_fields(&status), vec!["viewer".to_string()]);

    let (state, view) = dealt(&mut client, 1).await;
    let seat = view.turn.expect("turn");
    let play = |seat: u32, t: Option<pb::Tile>, end: i32| pb::PlayRequest {
        state: state.clone().into(),
        seat,
        tile: t,
        end,
        viewer: None,
    };
    for (req, field) in [
        (play(seat, Some(tile(7, 1)), 0), "tile.a"),
        (play(seat, Some(tile(1, 70)), 0), "tile.b"),
        (play(seat, None, 0), "tile"),
        (play(5, Some(tile(1, 1)), 0), "seat"),
        (play(seat, Some(tile(1, 1)), 17), "end"),
    ] {
        let status = client.play(req).await.expect_err(field);
        assert_eq!(status.code(), Code::InvalidArgument, "{field}");
        assert_eq!(bad_fields(&status), vec![field.to_string()]);
    }
    let status = client
        .draw(pb::DrawRequest {
            state: state.clone().into(),
            seat: 9,
            viewer: None,
        })
        .await
        .expect_err("seat");
    assert_eq!(bad_fields(&status), vec!["seat".to_string()]);
}

#[tokio::test]
async fn hidden_tiles_stay_hidden() {
    let server = TestServer::start(ring(1, 7)).await;
    let mut client = server.client().await;
    let (state, view) = dealt(&mut client, 11).await;
    let seat = view.turn.expect("turn");
    let spectator = client
        .score(pb::ScoreRequest {
            state: state.clone().into(),
            viewer: None,
        })
        .await
        .expect("Score")
        .into_inner()
        .view
        .expect("view");
    assert!(spectator.hand.is_empty() && spectator.legal_moves.is_empty());
    let other = client
        .score(pb::ScoreRequest {
            state: state.clone().into(),
            viewer: Some(1 - seat),
        })
        .await
        .expect("Score")
        .into_inner()
        .view
        .expect("view");
    assert!(
        other.legal_moves.is_empty(),
        "only the seat on turn is offered moves"
    );
    assert!(
        other.hand.iter().all(|t| !view.hand.contains(t)),
        "no tile of the other hand"
    );
    assert_eq!(other.last_hand, None, "nothing is revealed during the hand");
}
