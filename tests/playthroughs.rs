//! Golden playthroughs: a few seeded matches of each table written out as text, every
//! action with the view of the seat on turn and the token's length, checked in under
//! `tests/playthroughs/` and compared here, so that any change of behaviour or of
//! token size shows as a reviewed diff (the habit of OpenSpiel's
//! `integration_tests/playthroughs/`).
//!
//! After a deliberate change, write them again and review the diff:
//!
//! ```sh
//! UPDATE_PLAYTHROUGHS=1 cargo test --test playthroughs
//! ```
//!
//! The matches go through the handlers in-process with fixed seeds; the seat on turn
//! plays its legal move worth the most points (the first such), or draws.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use allfives::proto::v1 as pb;
use allfives::service::handlers;
use allfives::state::{KeyRing, Tokens};

/// The matches: a file name, the rule options and the seed.
fn matches() -> Vec<(&'static str, pb::Rules, u64)> {
    let rules = |players,
                 partnership,
                 hand_size: pb::HandSizeRule,
                 settlement: pb::SettlementRule,
                 target| pb::Rules {
        players,
        partnership,
        hand_size: hand_size as i32,
        target,
        settlement: settlement as i32,
    };
    use pb::HandSizeRule as H;
    use pb::SettlementRule as S;
    vec![
        (
            "2p-standard-own-pips",
            rules(2, false, H::Standard, S::OwnPipsOff, 60),
            1,
        ),
        (
            "2p-five-each-winner-takes",
            rules(2, false, H::FiveEach, S::WinnerTakesPips, 50),
            2,
        ),
        (
            "3p-five-each-winner-takes",
            rules(3, false, H::FiveEach, S::WinnerTakesPips, 40),
            6,
        ),
        (
            "3p-seven-five-own-pips",
            rules(3, false, H::SevenFive, S::OwnPipsOff, 50),
            3,
        ),
        (
            "4p-solo-winner-takes",
            rules(4, false, H::Standard, S::WinnerTakesPips, 40),
            4,
        ),
        (
            "4p-solo-five-each-own-pips",
            rules(4, false, H::FiveEach, S::OwnPipsOff, 30),
            7,
        ),
        (
            "4p-partners-winner-takes",
            rules(4, true, H::SevenFive, S::WinnerTakesPips, 60),
            8,
        ),
        (
            "4p-partners-own-pips",
            rules(4, true, H::Standard, S::OwnPipsOff, 50),
            5,
        ),
    ]
}

fn tile(t: &Option<pb::Tile>) -> String {
    match t {
        Some(t) => format!("[{}|{}]", t.a, t.b),
        None => "[?]".to_string(),
    }
}

fn end(e: i32) -> &'static str {
    match pb::End::try_from(e) {
        Ok(pb::End::Left) => "LEFT",
        Ok(pb::End::Right) => "RIGHT",
        Ok(pb::End::Up) => "UP",
        Ok(pb::End::Down) => "DOWN",
        _ => "-",
    }
}

fn arm(a: i32) -> &'static str {
    match pb::Arm::try_from(a) {
        Ok(pb::Arm::Lead) => "lead",
        Ok(pb::Arm::Left) => "L",
        Ok(pb::Arm::Right) => "R",
        Ok(pb::Arm::Up) => "U",
        Ok(pb::Arm::Down) => "D",
        _ => "?",
    }
}

fn list<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    if items.is_empty() {
        return "-".to_string();
    }
    items.iter().map(f).collect::<Vec<_>>().join(" ")
}

fn scores(view: &pb::GameView) -> String {
    list(&view.scores, |s| s.score.to_string())
}

fn hand_result(out: &mut String, r: &pb::HandResult) {
    let reason = pb::HandEndReason::try_from(r.reason).map_or("?", |r| r.as_str_name());
    let _ = writeln!(out, "    hand {} ended: {reason}", r.hand);
    for h in &r.hands {
        let _ = writeln!(
            out,
            "      seat {}: {} ({} pips, {} rounded)",
            h.seat,
            list(&h.tiles, |t| tile(&Some(*t))),
            h.pips,
            h.rounded
        );
    }
    let _ = writeln!(
        out,
        "      settlement: {}",
        list(&r.settlement, |s| s.points.to_string())
    );
}

fn events(out: &mut String, events: &[pb::Event]) {
    use pb::event::Kind;
    for e in events {
        match &e.kind {
            Some(Kind::Dealt(d)) => {
                let _ = writeln!(out, "    dealt hand {}, seat {} leads", d.hand, d.starter);
            }
            Some(Kind::TilePlayed(p)) => {
                let _ = writeln!(
                    out,
                    "    seat {} played {} {}: count {}, scored {}",
                    p.seat,
                    tile(&p.tile),
                    end(p.end),
                    p.count,
                    p.points
                );
            }
            Some(Kind::TileDrawn(d)) => {
                let _ = writeln!(out, "    seat {} drew {}", d.seat, tile(&d.tile));
            }
            Some(Kind::Passed(p)) => {
                let _ = writeln!(out, "    seat {} passed", p.seat);
            }
            Some(Kind::HandEnded(r)) => hand_result(out, r),
            Some(Kind::GameEnded(g)) => {
                let _ = writeln!(
                    out,
                    "    match won by side {} (seats {:?})",
                    g.winner_side, g.winner_seats
                );
            }
            None => {
                let _ = writeln!(out, "    (empty event)");
            }
        }
    }
}

/// The view of the seat on turn (or the spectator's between hands).
fn view(out: &mut String, v: &pb::GameView, token: usize) {
    let phase = pb::Phase::try_from(v.phase).map_or("?", |p| p.as_str_name());
    let who = v
        .viewer
        .map_or("spectator".to_string(), |s| format!("seat {s}"));
    let _ = writeln!(
        out,
        "move {} | hand {} | {phase} | {who} | token {token} B",
        v.moves, v.hand_number
    );
    if v.hand_number == 0 {
        return;
    }
    let placed = list(&v.layout, |p| {
        let mark = if p.spinner {
            "*"
        } else if p.crosswise {
            "x"
        } else {
            ""
        };
        format!("{}{}{}{mark}", tile(&p.tile), arm(p.arm), p.index)
    });
    let _ = writeln!(out, "  table: {placed}");
    let ends = list(&v.open_ends, |e| {
        format!("{}:{}={}", end(e.end), e.pip, e.value)
    });
    let _ = writeln!(
        out,
        "  ends: {ends} | count {} | scores {} | hands {} | boneyard {}",
        v.count,
        scores(v),
        list(&v.hand_sizes, u32::to_string),
        v.boneyard_size
    );
    if v.viewer.is_some() {
        let _ = writeln!(out, "  hand: {}", list(&v.hand, |t| tile(&Some(*t))));
        let legal = list(&v.legal_moves, |m| {
            format!("{}{}={}", tile(&m.tile), end(m.end), m.points)
        });
        let _ = writeln!(
            out,
            "  legal: {legal}{}",
            if v.must_draw { " (must draw)" } else { "" }
        );
    }
}

/// The transcript of one match.
fn transcript(name: &str, rules: pb::Rules, seed: u64) -> String {
    let ring = Arc::new(KeyRing::new(vec![(1, [0x77; 32])], None).expect("ring"));
    let tokens = Tokens::uncached(ring);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {name}: players {}, partnership {}, hand size {}, settlement {}, target {}, seed {seed}",
        rules.players,
        rules.partnership,
        pb::HandSizeRule::try_from(rules.hand_size).map_or("?", |r| r.as_str_name()),
        pb::SettlementRule::try_from(rules.settlement).map_or("?", |r| r.as_str_name()),
        rules.target
    );
    let _ = writeln!(
        out,
        "# Regenerate: UPDATE_PLAYTHROUGHS=1 cargo test --test playthroughs"
    );
    let new = handlers::new_game(
        &tokens,
        &pb::NewGameRequest {
            rules: Some(rules),
            seed: Some(seed),
            viewer: None,
        },
    )
    .expect("NewGame");
    let mut state = new.state;
    for _ in 0..20_000 {
        let public = handlers::score(
            &tokens,
            &pb::ScoreRequest {
                state: state.clone().into(),
                viewer: None,
            },
        )
        .expect("Score");
        let spectator = public.view.expect("view");
        let (seen, answer) = match spectator.turn {
            None if spectator.phase == pb::Phase::Over as i32 => {
                view(&mut out, &spectator, state.len());
                let sheet = public.sheet.expect("sheet");
                for row in &sheet.rows {
                    let _ = writeln!(
                        out,
                        "  sheet hand {}: {}",
                        row.first_hand,
                        list(&row.sides, |s| format!(
                            "{}+{}={}",
                            s.play, s.settlement, s.total
                        ))
                    );
                }
                return out;
            }
            None => {
                view(&mut out, &spectator, state.len());
                let _ = writeln!(out, "  > deal");
                let answer = handlers::deal(
                    &tokens,
                    &pb::DealRequest {
                        state: state.into(),
                        viewer: None,
                    },
                )
                .expect("Deal");
                (None, answer)
            }
            Some(seat) => {
                let seen = handlers::score(
                    &tokens,
                    &pb::ScoreRequest {
                        state: state.clone().into(),
                        viewer: Some(seat),
                    },
                )
                .expect("Score")
                .view
                .expect("view");
                view(&mut out, &seen, state.len());
                let answer = if seen.must_draw {
                    let _ = writeln!(out, "  > seat {seat} draws");
                    handlers::draw(
                        &tokens,
                        &pb::DrawRequest {
                            state: state.into(),
                            seat,
                            viewer: Some(seat),
                        },
                    )
                } else {
                    let best = seen.legal_moves.iter().map(|m| m.points).max().unwrap_or(0);
                    let m = seen
                        .legal_moves
                        .iter()
                        .find(|m| m.points == best)
                        .expect("a legal move");
                    let _ = writeln!(
                        out,
                        "  > seat {seat} plays {} {}",
                        tile(&m.tile),
                        end(m.end)
                    );
                    handlers::play(
                        &tokens,
                        &pb::PlayRequest {
                            state: state.into(),
                            seat,
                            tile: m.tile,
                            end: m.end,
                            viewer: Some(seat),
                        },
                    )
                }
                .expect("a legal move");
                (Some(seat), answer)
            }
        };
        let _ = seen;
        events(&mut out, &answer.events);
        state = answer.state;
    }
    panic!("{name}: a match that does not end");
}

#[test]
fn seeded_matches_play_out_as_their_checked_in_transcripts() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/playthroughs");
    let update = std::env::var_os("UPDATE_PLAYTHROUGHS").is_some();
    let mut differ = Vec::new();
    for (name, rules, seed) in matches() {
        let text = transcript(name, rules, seed);
        let path = dir.join(format!("{name}.txt"));
        if update {
            std::fs::write(&path, &text).expect("write the playthrough");
            continue;
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        if checked_in != text {
            let line = checked_in
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .map_or(checked_in.lines().count().min(text.lines().count()), |n| n);
            differ.push(format!(
                "{name}.txt first differs at line {}: checked in {:?}, now {:?}",
                line + 1,
                checked_in.lines().nth(line).unwrap_or("(end)"),
                text.lines().nth(line).unwrap_or("(end)")
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "playthroughs changed (UPDATE_PLAYTHROUGHS=1 cargo test --test playthroughs writes them; review the diff):\n{}",
        differ.join("\n")
    );
}
