//! End to end: whole games through the real server and a generated tonic client.

use crate::common;

use allfives::proto::v1 as pb;
use common::{Client, Creds, TestServer, bad_fields, hot_seat, new_match, ring, tile};
use tonic::Code;

/// The `ErrorInfo` reason of a status, which must be the name of a value of the
/// proto's `ErrorReason` enum (clients compare against generated constants): every
/// reason these tests look at is checked.
fn reason(status: &tonic::Status) -> String {
    let reason = common::reason(status);
    assert!(
        pb::ErrorReason::from_str_name(&reason).is_some(),
        "reason {reason:?} is not an ErrorReason value: {status:?}"
    );
    reason
}

/// Everything the tests track about a game in progress.
struct Table {
    state: Vec<u8>,
    view: pb::GameView,
    /// Every seat's credential (a hot-seat match).
    creds: Creds,
    /// The (seat, tile) of every TilePlayed event of the current (or last) hand, in
    /// order: what the view's layout must show.
    played: Vec<(u32, Option<pb::Tile>)>,
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
                pb::event::Kind::Dealt(_) => self.played.clear(),
                pb::event::Kind::TilePlayed(p) => {
                    assert_eq!(p.points % 5, 0);
                    self.from_events[side_of(p.seat)] += p.points as i32;
                    self.played.push((p.seat, p.tile));
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
        // PlacedTile.seat is the seat whose TilePlayed event placed the tile.
        let layout: Vec<(u32, Option<pb::Tile>)> =
            view.layout.iter().map(|p| (p.seat, p.tile)).collect();
        assert_eq!(layout, self.played, "the layout's seats are the players'");
        for (i, p) in view.layout.iter().enumerate() {
            assert_eq!(p.order, i as u32, "the layout is in the order played");
        }
        self.state = state;
        self.view = view;
        self.calls += 1;
    }
}

async fn new_game(client: &mut Client, rules: pb::Rules, seed: u64) -> Table {
    let (state, view, creds) = new_match(client, rules, seed).await;
    assert_eq!(view.moves, 0);
    assert_eq!(view.match_id.len(), 32);
    assert_eq!(view.phase, pb::Phase::Dealing as i32);
    let sides = view.scores.len();
    Table {
        state,
        view,
        creds,
        played: Vec::new(),
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
                        ..Default::default()
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
                        credential: table.creds.of(seat),
                        ..Default::default()
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
                            credential: table.creds.of(seat),
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
                            credential: table.creds.of(seat),
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
            ..Default::default()
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
        ..Default::default()
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
                credential: table.creds.of(0),
            })
            .await
            .expect("Deal")
            .into_inner();
        let mut view = r.view.expect("view");
        // Each match has its own random id and its own secret, so its own state ids
        // (they digest the history under that secret): the rest must be the same.
        view.match_id.clear();
        assert_eq!(view.state_id.len(), 16);
        assert_eq!(view.previous_state_id.len(), 16);
        view.state_id.clear();
        view.previous_state_id.clear();
        views.push(view);
    }
    assert_eq!(views[0], views[1]);
}

/// A dealt two-player game, the view of the seat on turn, and every seat's
/// credential.
async fn dealt(client: &mut Client, seed: u64) -> (Vec<u8>, pb::GameView, Creds) {
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
            ..Default::default()
        })
        .await
        .expect("Deal")
        .into_inner();
    let turn = r.view.expect("view").turn.expect("turn");
    let view = client
        .score(pb::ScoreRequest {
            state: r.state.clone().into(),
            viewer: Some(turn),
            credential: table.creds.of(turn),
            ..Default::default()
        })
        .await
        .expect("Score")
        .into_inner()
        .view
        .expect("view");
    (r.state, view, table.creds)
}

#[tokio::test]
async fn bad_tokens_are_refused_with_their_reason() {
    let server = TestServer::start(ring(1, 7)).await;
    let foreign = TestServer::start(ring(1, 8)).await;
    let other_id = TestServer::start(ring(2, 7)).await;
    let mut client = server.client().await;
    let (state, _, _) = dealt(&mut client, 1).await;
    let (foreign_state, _, _) = dealt(&mut foreign.client().await, 1).await;
    let (other_id_state, _, _) = dealt(&mut other_id.client().await, 1).await;

    let mut flipped = state.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x10;
    let mut old_version = state.clone();
    old_version[0] = 0;
    assert_eq!(state[0], 4, "tokens are of format 4");
    // The formats before the seats' credentials (1 to 3) are not read any more.
    let earlier = |version: u8| {
        let mut token = state.clone();
        token[0] = version;
        token
    };
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
        ("format 1", earlier(1), "TOKEN_UNSUPPORTED_VERSION"),
        ("format 2", earlier(2), "TOKEN_UNSUPPORTED_VERSION"),
        ("format 3", earlier(3), "TOKEN_UNSUPPORTED_VERSION"),
        ("far too long", vec![1u8; 4000], "TOKEN_MALFORMED"),
    ];
    for (name, token, expected) in cases {
        let status = client
            .deal(pb::DealRequest {
                state: token.into(),
                viewer: None,
                ..Default::default()
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
            credential: fresh.creds.of(0),
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
        let (state, view, creds) = dealt(&mut client, seed).await;
        let seat = view.turn.expect("turn");
        let status = client
            .deal(pb::DealRequest {
                state: state.clone().into(),
                viewer: None,
                ..Default::default()
            })
            .await
            .expect_err("deal during a hand");
        seen.insert(reason(&status));
        let other = 1 - seat;
        // Each seat acts with its own credential: the rules, not the credential
        // check, refuse these moves.
        let play = |seat: u32, t: pb::Tile, end: pb::End| pb::PlayRequest {
            state: state.clone().into(),
            seat,
            tile: Some(t),
            end: end as i32,
            viewer: None,
            credential: creds.of(seat),
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
                credential: creds.of(next),
                ..Default::default()
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
            credential: creds.of(next),
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
                    credential: creds.of(next),
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
            ..Default::default()
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
                ..Default::default()
            })
            .await
            .expect_err(field);
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(bad_fields(&status), vec![field.to_string()]);
        assert_eq!(reason(&status), "INVALID_FIELD");
    }
    let status = client
        .new_game(pb::NewGameRequest {
            viewer: Some(2),
            ..hot_seat(pb::Rules::default(), None)
        })
        .await
        .expect_err("viewer");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(bad_fields(&status), vec!["viewer".to_string()]);
    assert_eq!(reason(&status), "INVALID_FIELD");

    let (state, view, creds) = dealt(&mut client, 1).await;
    let seat = view.turn.expect("turn");
    // With the credential of the seat on turn: the malformed field is what is refused.
    let play = |s: u32, t: Option<pb::Tile>, end: i32| pb::PlayRequest {
        state: state.clone().into(),
        seat: s,
        tile: t,
        end,
        viewer: None,
        credential: creds.of(seat),
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
        assert_eq!(reason(&status), "INVALID_FIELD", "{field}");
    }
    let status = client
        .draw(pb::DrawRequest {
            state: state.clone().into(),
            seat: 9,
            viewer: None,
            credential: creds.of(seat),
        })
        .await
        .expect_err("seat");
    assert_eq!(bad_fields(&status), vec!["seat".to_string()]);
    assert_eq!(reason(&status), "INVALID_FIELD");
}

#[tokio::test]
async fn hidden_tiles_stay_hidden() {
    let server = TestServer::start(ring(1, 7)).await;
    let mut client = server.client().await;
    let (state, view, creds) = dealt(&mut client, 11).await;
    let seat = view.turn.expect("turn");
    let spectator = client
        .score(pb::ScoreRequest {
            state: state.clone().into(),
            viewer: None,
            ..Default::default()
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
            credential: creds.of(1 - seat),
            ..Default::default()
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

// The seat API: who plays each seat, claims, the seats' credentials, the hand's
// events on reconnect.

/// A human seat, claimed in NewGame or left open.
fn human(claim: bool) -> pb::SeatSetup {
    pb::SeatSetup {
        bot: 0,
        claim,
        display_name: String::new(),
        pass: String::new(),
    }
}

/// A bot seat at `level`.
fn bot(level: pb::BotLevel) -> pb::SeatSetup {
    pb::SeatSetup {
        bot: level as i32,
        claim: false,
        display_name: String::new(),
        pass: String::new(),
    }
}

/// `events` as `viewer` may see them: a drawn tile only for its drawer.
fn redacted(events: &[pb::Event], viewer: Option<u32>) -> Vec<pb::Event> {
    events
        .iter()
        .cloned()
        .map(|mut e| {
            if let Some(pb::event::Kind::TileDrawn(d)) = &mut e.kind
                && Some(d.seat) != viewer
            {
                d.tile = None;
            }
            e
        })
        .collect()
}

/// What Score answers as the hand's events for `viewer`, asked with and without
/// `include_hand_events` (without, it must answer none).
async fn hand_events(
    client: &mut Client,
    state: &[u8],
    viewer: Option<u32>,
    creds: &Creds,
) -> Vec<pb::Event> {
    let ask = |include_hand_events| {
        let mut client = client.clone();
        let req = pb::ScoreRequest {
            state: state.to_vec().into(),
            viewer,
            credential: creds.for_viewer(viewer),
            include_hand_events,
        };
        async move { client.score(req).await.expect("Score").into_inner() }
    };
    let without = ask(false).await;
    assert!(without.hand_events.is_empty(), "no events unless asked");
    let with = ask(true).await;
    assert_eq!(with.view, without.view, "the flag changes only the events");
    with.hand_events
}

/// The (seat, tile) of the TilePlayed events among `events`.
fn tiles_played(events: &[pb::Event]) -> impl Iterator<Item = (u32, Option<pb::Tile>)> + '_ {
    events.iter().filter_map(|e| match &e.kind {
        Some(pb::event::Kind::TilePlayed(p)) => Some((p.seat, p.tile)),
        _ => None,
    })
}

/// One call for seat 0, the only human of a match with bots: Deal between hands, else
/// Play its best move or Draw, as `mine` (seat 0's view) says; the view rendered for
/// `viewer`. Answers the new token, the view and the events.
async fn seat_zero_moves(
    client: &mut Client,
    state: &[u8],
    mine: &pb::GameView,
    viewer: Option<u32>,
    creds: &Creds,
) -> (Vec<u8>, pb::GameView, Vec<pb::Event>) {
    let (state, view, events) = if mine.phase == pb::Phase::Dealing as i32 {
        let r = client
            .deal(pb::DealRequest {
                state: state.to_vec().into(),
                viewer,
                credential: creds.for_viewer(viewer),
            })
            .await
            .expect("Deal")
            .into_inner();
        (r.state, r.view, r.events)
    } else {
        assert_eq!(
            mine.turn,
            Some(0),
            "the bots play until the human is on turn"
        );
        if mine.must_draw {
            let r = client
                .draw(pb::DrawRequest {
                    state: state.to_vec().into(),
                    seat: 0,
                    viewer,
                    credential: creds.of(0),
                })
                .await
                .expect("Draw")
                .into_inner();
            (r.state, r.view, r.events)
        } else {
            let best = mine
                .legal_moves
                .iter()
                .max_by_key(|m| m.points)
                .expect("a move");
            let r = client
                .play(pb::PlayRequest {
                    state: state.to_vec().into(),
                    seat: 0,
                    tile: best.tile,
                    end: best.end,
                    viewer,
                    credential: creds.of(0),
                })
                .await
                .expect("Play")
                .into_inner();
            (r.state, r.view, r.events)
        }
    };
    (state, view.expect("view"), events)
}

#[tokio::test]
async fn placed_tiles_name_the_seat_that_played_them_bots_included() {
    let server = TestServer::start(ring(1, 7)).await;
    let mut client = server.client().await;
    // Another replica, which never saw the match: it reopens every token from the
    // cipher and replays the hand.
    let replica = TestServer::start(ring(1, 7)).await;
    let mut other = replica.client().await;
    let new = client
        .new_game(pb::NewGameRequest {
            rules: Some(rules(3, false, pb::SettlementRule::OwnPipsOff, 100)),
            seed: Some(8),
            viewer: Some(0),
            seats: vec![
                human(true),
                bot(pb::BotLevel::Easy),
                bot(pb::BotLevel::Medium),
            ],
        })
        .await
        .expect("NewGame")
        .into_inner();
    let creds = Creds::from_new_game(&new);
    let (mut state, mut mine) = (new.state, new.view.expect("view"));
    let mut played = Vec::new();
    let mut players = std::collections::BTreeSet::new();
    for _ in 0..2000 {
        if mine.phase == pb::Phase::Over as i32 {
            break;
        }
        let (next, view, events) =
            seat_zero_moves(&mut client, &state, &mine, Some(0), &creds).await;
        if matches!(
            events.first().and_then(|e| e.kind.as_ref()),
            Some(pb::event::Kind::Dealt(_))
        ) {
            played.clear();
        }
        played.extend(tiles_played(&events));
        let layout: Vec<(u32, Option<pb::Tile>)> =
            view.layout.iter().map(|p| (p.seat, p.tile)).collect();
        assert_eq!(layout, played, "PlacedTile.seat is the TilePlayed seat");
        // A spectator sees the same table, here and on the other replica.
        for client in [&mut client, &mut other] {
            let spectator = hand_events(client, &next, None, &creds).await;
            let table: Vec<_> = tiles_played(&spectator).collect();
            assert_eq!(table, played);
            let seen = common::view_for(client, &next, 0, &creds).await;
            assert_eq!(seen.layout, view.layout);
        }
        players.extend(view.layout.iter().map(|p| p.seat));
        (state, mine) = (next, view);
    }
    assert_eq!(mine.phase, pb::Phase::Over as i32, "the match ended");
    assert_eq!(
        players.into_iter().collect::<Vec<_>>(),
        vec![0, 1, 2],
        "every seat, bots too, placed tiles"
    );
}

/// Score's hand events are what the calls of the hand answered, from its Dealt: for
/// a seat (its own drawn tiles shown, the bot's not) and for a spectator (no drawn
/// tile), each call made twice from the same token, once for each.
#[tokio::test]
async fn score_replays_the_hands_events_as_the_calls_answered_them() {
    let server = TestServer::start(ring(1, 7)).await;
    let mut client = server.client().await;
    // Another replica replays the hand from the token alone.
    let replica = TestServer::start(ring(1, 7)).await;
    let mut other = replica.client().await;
    for seed in 0..40 {
        let new = client
            .new_game(pb::NewGameRequest {
                rules: Some(rules(2, false, pb::SettlementRule::OwnPipsOff, 100)),
                seed: Some(seed),
                viewer: Some(0),
                seats: vec![human(true), bot(pb::BotLevel::Medium)],
            })
            .await
            .expect("NewGame")
            .into_inner();
        let creds = Creds::from_new_game(&new);
        let (mut state, mut mine) = (new.state, new.view.expect("view"));
        assert!(
            hand_events(&mut client, &state, Some(0), &creds)
                .await
                .is_empty(),
            "no events before the first deal"
        );
        assert!(
            hand_events(&mut client, &state, None, &creds)
                .await
                .is_empty()
        );
        let (mut theirs, mut ours) = (Vec::new(), Vec::new());
        let (mut drew, mut bot_drew) = (false, false);
        for _ in 0..2000 {
            if mine.phase == pb::Phase::Over as i32 {
                break;
            }
            let (_, spectator_view, spectator) =
                seat_zero_moves(&mut client, &state, &mine, None, &creds).await;
            let (next, view, seen) =
                seat_zero_moves(&mut client, &state, &mine, Some(0), &creds).await;
            assert_eq!(
                spectator_view.state_id, view.state_id,
                "the same move, for another viewer, makes the same state"
            );
            assert_eq!(spectator, redacted(&seen, None), "only drawn tiles differ");
            for e in &seen {
                if let Some(pb::event::Kind::TileDrawn(d)) = &e.kind {
                    assert_eq!(d.tile.is_some(), d.seat == 0, "shown to its drawer only");
                    drew |= d.seat == 0;
                    bot_drew |= d.seat == 1;
                }
            }
            if matches!(
                seen.first().and_then(|e| e.kind.as_ref()),
                Some(pb::event::Kind::Dealt(_))
            ) {
                theirs.clear();
                ours.clear();
            }
            theirs.extend(spectator);
            ours.extend(seen);
            assert!(
                matches!(ours[0].kind, Some(pb::event::Kind::Dealt(_))),
                "the hand's events start at its Dealt"
            );
            for client in [&mut client, &mut other] {
                assert_eq!(
                    hand_events(client, &next, Some(0), &creds).await,
                    ours,
                    "seed {seed}: the seat's events"
                );
                assert_eq!(
                    hand_events(client, &next, None, &creds).await,
                    theirs,
                    "seed {seed}: the spectator's events"
                );
            }
            (state, mine) = (next, view);
        }
        assert_eq!(mine.phase, pb::Phase::Over as i32, "the match ended");
        assert!(
            matches!(
                ours.last().and_then(|e| e.kind.as_ref()),
                Some(pb::event::Kind::GameEnded(_))
            ),
            "the last hand's events run to the end of the match"
        );
        if drew && bot_drew {
            return;
        }
    }
    panic!("no match where both the human and the bot drew");
}

/// The same in a hot-seat match of three, each call made by the seat acting: every
/// seat's replay shows its own drawn tiles and nobody else's.
#[tokio::test]
async fn every_seat_replays_the_hand_with_only_its_own_drawn_tiles() {
    let server = TestServer::start(ring(1, 7)).await;
    let mut client = server.client().await;
    let mut drawers = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let (mut state, mut view, creds) = new_match(
            &mut client,
            rules(3, false, pb::SettlementRule::OwnPipsOff, 100),
            seed,
        )
        .await;
        let mut answered: Vec<pb::Event> = Vec::new();
        for _ in 0..2000 {
            let (next, events, next_view) = match pb::Phase::try_from(view.phase).expect("phase") {
                pb::Phase::Over => break,
                pb::Phase::Dealing => {
                    let r = client
                        .deal(pb::DealRequest {
                            state: state.clone().into(),
                            ..Default::default()
                        })
                        .await
                        .expect("Deal")
                        .into_inner();
                    answered.clear();
                    (r.state, r.events, r.view.expect("view"))
                }
                _ => {
                    let seat = view.turn.expect("turn");
                    let seen = common::view_for(&mut client, &state, seat, &creds).await;
                    if seen.must_draw {
                        let r = client
                            .draw(pb::DrawRequest {
                                state: state.clone().into(),
                                seat,
                                viewer: Some(seat),
                                credential: creds.of(seat),
                            })
                            .await
                            .expect("Draw")
                            .into_inner();
                        drawers.insert(seat);
                        (r.state, r.events, r.view.expect("view"))
                    } else {
                        let m = seen.legal_moves[0];
                        let r = client
                            .play(pb::PlayRequest {
                                state: state.clone().into(),
                                seat,
                                tile: m.tile,
                                end: m.end,
                                viewer: Some(seat),
                                credential: creds.of(seat),
                            })
                            .await
                            .expect("Play")
                            .into_inner();
                        (r.state, r.events, r.view.expect("view"))
                    }
                }
            };
            answered.extend(events);
            for viewer in [None, Some(0), Some(1), Some(2)] {
                let replay = hand_events(&mut client, &next, viewer, &creds).await;
                assert_eq!(replay, redacted(&answered, viewer), "{viewer:?}");
                for e in &replay {
                    if let Some(pb::event::Kind::TileDrawn(d)) = &e.kind {
                        assert_eq!(d.tile.is_some(), Some(d.seat) == viewer);
                    }
                }
            }
            (state, view) = (next, next_view);
        }
        assert_eq!(view.phase, pb::Phase::Over as i32);
        if drawers.len() >= 2 {
            return;
        }
    }
    panic!("draws by only {drawers:?}");
}

/// Who plays each seat, as a view reports it: (kind, bot level) in seat order, each
/// entry checked to name its own seat.
fn seat_kinds(view: &pb::GameView) -> Vec<(pb::SeatKind, pb::BotLevel)> {
    view.seats
        .iter()
        .enumerate()
        .map(|(i, s)| {
            assert_eq!(s.seat, i as u32, "seats in seat order");
            (
                pb::SeatKind::try_from(s.kind).expect("a SeatKind"),
                pb::BotLevel::try_from(s.bot).expect("a BotLevel"),
            )
        })
        .collect()
}

#[tokio::test]
async fn views_report_open_claimed_and_bot_seats_with_their_levels() {
    use pb::BotLevel::{Easy, Hard, Medium, Unspecified};
    use pb::SeatKind::{Bot, Claimed, Open};
    let server = TestServer::start_default(ring(1, 7)).await;
    let mut client = server.client().await;
    let new = client
        .new_game(pb::NewGameRequest {
            rules: Some(rules(4, false, pb::SettlementRule::OwnPipsOff, 0)),
            viewer: Some(0),
            seats: vec![human(true), human(false), bot(Easy), bot(Hard)],
            ..Default::default()
        })
        .await
        .expect("NewGame")
        .into_inner();
    let expected = vec![
        (Claimed, Unspecified),
        (Open, Unspecified),
        (Bot, Easy),
        (Bot, Hard),
    ];
    assert_eq!(seat_kinds(new.view.as_ref().expect("view")), expected);
    let creds = Creds::from_new_game(&new);
    let spectator = common::view_for(&mut client, &new.state, 0, &creds).await;
    assert_eq!(seat_kinds(&spectator), expected, "Score shows the same");
    let claimed = client
        .claim_seat(pb::ClaimSeatRequest {
            state: new.state.clone(),
            seat: 1,
            ..Default::default()
        })
        .await
        .expect("ClaimSeat")
        .into_inner();
    assert_eq!(
        seat_kinds(claimed.view.as_ref().expect("view")),
        vec![
            (Claimed, Unspecified),
            (Claimed, Unspecified),
            (Bot, Easy),
            (Bot, Hard)
        ]
    );

    // No seats given: every seat a human one, open.
    let open = client
        .new_game(pb::NewGameRequest {
            rules: Some(rules(3, false, pb::SettlementRule::OwnPipsOff, 0)),
            ..Default::default()
        })
        .await
        .expect("NewGame")
        .into_inner();
    assert_eq!(
        seat_kinds(open.view.as_ref().expect("view")),
        vec![(Open, Unspecified); 3]
    );
    assert!(
        open.credentials.is_empty(),
        "nothing claimed, no credential"
    );

    // The seats stay as they are through the deal and the bots' moves.
    let new = client
        .new_game(pb::NewGameRequest {
            seats: vec![human(true), bot(Medium)],
            ..Default::default()
        })
        .await
        .expect("NewGame")
        .into_inner();
    let dealt = client
        .deal(pb::DealRequest {
            state: new.state.into(),
            ..Default::default()
        })
        .await
        .expect("Deal")
        .into_inner();
    assert_eq!(
        seat_kinds(dealt.view.as_ref().expect("view")),
        vec![(Claimed, Unspecified), (Bot, Medium)]
    );
}

/// A status's code and reason, for comparison.
fn refusal(status: &tonic::Status) -> (Code, String) {
    (status.code(), reason(status))
}

#[tokio::test]
async fn claim_seat_gives_an_open_seat_its_credential_until_the_first_deal() {
    let server = TestServer::start_default(ring(1, 7)).await;
    let mut client = server.client().await;
    let new = client
        .new_game(pb::NewGameRequest {
            rules: Some(rules(3, false, pb::SettlementRule::OwnPipsOff, 0)),
            seats: vec![human(false), human(false), bot(pb::BotLevel::Easy)],
            ..Default::default()
        })
        .await
        .expect("NewGame")
        .into_inner();
    assert!(new.credentials.is_empty());
    let deal = |state: &[u8], viewer: Option<u32>, credential: Vec<u8>| pb::DealRequest {
        state: state.to_vec().into(),
        viewer,
        credential,
    };
    let claim = |state: &[u8], seat: u32| pb::ClaimSeatRequest {
        state: state.to_vec(),
        seat,
        ..Default::default()
    };

    // Nobody has claimed: no deal.
    let status = client
        .deal(deal(&new.state, None, Vec::new()))
        .await
        .expect_err("seats open");
    assert_eq!(
        refusal(&status),
        (Code::FailedPrecondition, "SEATS_OPEN".into())
    );

    // Seat 0 is claimed: its credential (16 bytes), the view rendered for it.
    let first = client
        .claim_seat(claim(&new.state, 0))
        .await
        .expect("ClaimSeat 0")
        .into_inner();
    let cred0 = first.credential.clone().expect("credential");
    assert_eq!(cred0.seat, 0);
    assert_eq!(cred0.credential.len(), 16);
    assert_ne!(first.state, new.state, "a new token records the claim");
    let view = first.view.as_ref().expect("view");
    assert_eq!(view.viewer, Some(0), "rendered for the claimed seat");
    assert_eq!(view.phase, pb::Phase::Dealing as i32);
    assert_eq!(view.hand_number, 0);
    assert_eq!(
        view.previous_state_id,
        new.view.as_ref().expect("view").state_id,
        "made from NewGame's state"
    );
    assert_eq!(view.seats[0].kind, pb::SeatKind::Claimed as i32);
    assert_eq!(view.seats[1].kind, pb::SeatKind::Open as i32);

    // Claimed seats and bots' are taken; a seat beyond the table is no seat.
    for seat in [0, 2] {
        let status = client
            .claim_seat(claim(&first.state, seat))
            .await
            .expect_err("taken");
        assert_eq!(
            refusal(&status),
            (Code::FailedPrecondition, "SEAT_TAKEN".into()),
            "seat {seat}"
        );
    }
    let status = client
        .claim_seat(claim(&first.state, 3))
        .await
        .expect_err("no seat 3");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(bad_fields(&status), vec!["seat".to_string()]);
    assert_eq!(reason(&status), "INVALID_FIELD");

    // One seat still open: still no deal.
    let status = client
        .deal(deal(&first.state, Some(0), cred0.credential.clone()))
        .await
        .expect_err("seat 1 open");
    assert_eq!(
        refusal(&status),
        (Code::FailedPrecondition, "SEATS_OPEN".into())
    );

    let second = client
        .claim_seat(claim(&first.state, 1))
        .await
        .expect("ClaimSeat 1")
        .into_inner();
    let cred1 = second.credential.clone().expect("credential");
    assert_eq!(cred1.seat, 1);
    assert_eq!(cred1.credential.len(), 16);
    assert_ne!(cred1.credential, cred0.credential);
    assert_eq!(second.view.as_ref().expect("view").viewer, Some(1));

    // Every human seat claimed: the deal goes, and each credential shows its hand.
    let dealt = client
        .deal(deal(&second.state, Some(1), cred1.credential.clone()))
        .await
        .expect("Deal")
        .into_inner();
    let view = dealt.view.expect("view");
    assert_eq!(view.viewer, Some(1));
    assert_eq!(view.hand.len(), 7, "seat 1 sees its hand");
    let creds = Creds(vec![cred0.credential.clone(), cred1.credential.clone()]);
    let seat0 = common::view_for(&mut client, &dealt.state, 0, &creds).await;
    assert_eq!(seat0.hand.len() as u32, seat0.hand_sizes[0]);
    assert!(seat0.hand.iter().all(|t| !view.hand.contains(t)));

    // After the first deal nothing can be claimed any more.
    for seat in [0, 1, 2] {
        let status = client
            .claim_seat(claim(&dealt.state, seat))
            .await
            .expect_err("dealt");
        assert_eq!(
            refusal(&status),
            (Code::FailedPrecondition, "WRONG_PHASE".into()),
            "seat {seat}"
        );
    }
    // A seat claimed in NewGame is taken too.
    let hot = client
        .new_game(hot_seat(pb::Rules::default(), None))
        .await
        .expect("NewGame")
        .into_inner();
    let status = client
        .claim_seat(claim(&hot.state, 1))
        .await
        .expect_err("claimed in NewGame");
    assert_eq!(
        refusal(&status),
        (Code::FailedPrecondition, "SEAT_TAKEN".into())
    );
}

#[tokio::test]
async fn new_game_checks_its_seats_and_its_viewer() {
    let server = TestServer::start_default(ring(1, 7)).await;
    let mut client = server.client().await;
    let two = |seats: Vec<pb::SeatSetup>, viewer: Option<u32>| pb::NewGameRequest {
        rules: Some(rules(2, false, pb::SettlementRule::OwnPipsOff, 0)),
        viewer,
        seats,
        ..Default::default()
    };
    let cases = [
        (
            "one seat for two players",
            two(vec![human(true)], None),
            "seats",
        ),
        (
            "three seats for two players",
            two(vec![human(true); 3], None),
            "seats",
        ),
        (
            "four seats for three players",
            pb::NewGameRequest {
                rules: Some(rules(3, false, pb::SettlementRule::OwnPipsOff, 0)),
                ..two(vec![human(false); 4], None)
            },
            "seats",
        ),
        (
            "a claimed bot",
            two(
                vec![
                    human(true),
                    pb::SeatSetup {
                        bot: pb::BotLevel::Easy as i32,
                        claim: true,
                        display_name: String::new(),
                        pass: String::new(),
                    },
                ],
                None,
            ),
            "seats.claim",
        ),
        (
            "an unknown bot level",
            two(
                vec![
                    human(true),
                    pb::SeatSetup {
                        bot: 9,
                        claim: false,
                        display_name: String::new(),
                        pass: String::new(),
                    },
                ],
                None,
            ),
            "seats.bot",
        ),
        (
            "a viewer left open",
            two(vec![human(true), human(false)], Some(1)),
            "viewer",
        ),
        (
            "a viewer played by a bot",
            two(vec![human(true), bot(pb::BotLevel::Medium)], Some(1)),
            "viewer",
        ),
        (
            "a viewer with every seat open",
            two(vec![], Some(0)),
            "viewer",
        ),
    ];
    for (name, req, field) in cases {
        let status = client.new_game(req).await.expect_err(name);
        assert_eq!(status.code(), Code::InvalidArgument, "{name}: {status:?}");
        assert_eq!(bad_fields(&status), vec![field.to_string()], "{name}");
        assert_eq!(reason(&status), "INVALID_FIELD", "{name}");
    }
    // The viewer claimed in the call is shown its seat.
    let new = client
        .new_game(two(vec![human(false), human(true)], Some(1)))
        .await
        .expect("NewGame")
        .into_inner();
    let view = new.view.expect("view");
    assert_eq!(view.viewer, Some(1));
    assert!(
        view.previous_state_id.is_empty(),
        "NewGame's view has no previous"
    );
    assert_eq!(view.state_id.len(), 16);
    let claimed: Vec<u32> = new.credentials.iter().map(|c| c.seat).collect();
    assert_eq!(claimed, vec![1], "only the seat claimed has a credential");
    assert_eq!(new.credentials[0].credential.len(), 16);
    // This server picks the seeds.
    let status = client
        .new_game(hot_seat(pb::Rules::default(), Some(1)))
        .await
        .expect_err("seed");
    assert_eq!(
        refusal(&status),
        (Code::PermissionDenied, "SEED_NOT_ALLOWED".into())
    );
}
