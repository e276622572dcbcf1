//! Golden playthroughs: a few seeded matches of each table written out as text, every
//! action with the view of the seat on turn and the token's length, checked in under
//! `tests/it/playthroughs/` and compared here, so that any change of behaviour or of
//! token size shows as a reviewed diff (the habit of OpenSpiel's
//! `integration_tests/playthroughs/`).
//!
//! After a deliberate change, write them again and review the diff:
//!
//! ```sh
//! UPDATE_PLAYTHROUGHS=1 cargo test --test it playthroughs
//! ```
//!
//! The matches go through the handlers in-process with fixed seeds, under a policy that
//! takes client seeds. In the hot-seat matches every seat is claimed at NewGame and the
//! seat on turn plays its legal move worth the most points (the first such), or draws.
//! In the match with bots one human seat plays so, and the server's bots (EASY, MEDIUM,
//! HARD at the server's default search) play the other seats within the human's calls:
//! their moves show as events of those calls, redacted for the human. The bots are
//! deterministic given the match's seed, so their moves are golden too.
//!
//! A tile on the table reads `[a|b]` then its arm and index (`lead0`, `L1`, `U0`, ...),
//! `*` for the spinner or `x` for another double, and `@` the seat that played it.
//!
//! Nothing random is printed: not the match id, the state ids (they digest the match's
//! random secret) or the credentials. A token's length does not depend on them.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use allfives::proto::v1 as pb;
use allfives::service::steps::Policy;
use allfives::service::{moves, seats, steps};
use allfives::state::{KeyRing, Tokens};

/// Who plays the seats of a match.
#[derive(Clone, Copy)]
enum Seating {
    /// Every seat a human, claimed at NewGame; the spectator deals.
    HotSeat,
    /// Seat 0 a human, claimed at NewGame, who also deals (and is shown every answer);
    /// the other seats the server's bots at these levels.
    Bots(&'static [pb::BotLevel]),
}

/// The hot-seat matches: a file name, the rule options and the seed.
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
        ..Default::default()
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

fn seats(view: &pb::GameView) -> String {
    list(&view.seats, |s| {
        match pb::SeatKind::try_from(s.kind) {
            Ok(pb::SeatKind::Open) => "open",
            Ok(pb::SeatKind::Claimed) => "claimed",
            Ok(pb::SeatKind::Bot) => match pb::BotLevel::try_from(s.bot) {
                Ok(pb::BotLevel::Easy) => "EASY",
                Ok(pb::BotLevel::Medium) => "MEDIUM",
                Ok(pb::BotLevel::Hard) => "HARD",
                _ => "bot?",
            },
            _ => "?",
        }
        .to_string()
    })
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
            Some(
                Kind::SeatAbsent(_)
                | Kind::BotTookSeat(_)
                | Kind::SeatReturned(_)
                | Kind::Forfeited(_),
            ) => {
                let _ = writeln!(out, "    (no clock in these matches: {:?})", e.kind);
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
        let _ = writeln!(out, "  seats: {}", seats(v));
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
        format!(
            "{}{}{}{mark}@{}",
            tile(&p.tile),
            arm(p.arm),
            p.index,
            p.seat
        )
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

/// The server's policy for the playthroughs: client seeds taken (the matches are
/// seeded), the rest as the server runs by default (the bots' search among it).
fn policy() -> Policy {
    Policy {
        allow_client_seeds: true,
        ..Policy::default()
    }
}

/// The transcript of one match.
fn transcript(name: &str, rules: pb::Rules, seed: u64, seating: Seating) -> String {
    let ring = Arc::new(KeyRing::new(vec![(1, [0x77; 32])], None).expect("ring"));
    let tokens = Tokens::uncached(ring);
    let policy = policy();
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
        "# Regenerate: UPDATE_PLAYTHROUGHS=1 cargo test --test it playthroughs"
    );
    let human = pb::SeatSetup {
        bot: 0,
        claim: true,
        display_name: String::new(),
        pass: String::new(),
    };
    let (setups, dealer) = match seating {
        Seating::HotSeat => (vec![human; rules.players as usize], None),
        Seating::Bots(levels) => {
            let _ = writeln!(
                out,
                "# Seat 0 a human who deals and sees every answer; the server's bots play seats 1 to {}",
                levels.len()
            );
            let bots = levels.iter().map(|&level| pb::SeatSetup {
                bot: level as i32,
                claim: false,
                display_name: String::new(),
                pass: String::new(),
            });
            (std::iter::once(human).chain(bots).collect(), Some(0))
        }
    };
    assert_eq!(
        setups.len(),
        rules.players as usize,
        "{name}: a setup per seat"
    );
    let new = seats::new_game(
        &tokens,
        &policy,
        &crate::common::JUDGE,
        &pb::NewGameRequest {
            rules: Some(rules),
            seed: Some(seed),
            viewer: None,
            seats: setups,
        },
    )
    .expect("NewGame");
    // Every human seat's credential, by seat.
    let mut creds = vec![Vec::new(); 4];
    for c in &new.credentials {
        creds[c.seat as usize].clone_from(&c.credential);
    }
    let credential = |seat: Option<u32>| seat.map_or(Vec::new(), |s| creds[s as usize].clone());
    let mut state = new.state;
    // What the human was told of the hand so far, from its deal.
    let mut told: Vec<pb::Event> = Vec::new();
    for _ in 0..20_000 {
        let public = moves::score(
            &tokens,
            &crate::common::JUDGE,
            &pb::ScoreRequest {
                state: state.clone().into(),
                ..Default::default()
            },
        )
        .expect("Score");
        let spectator = public.view.expect("view");
        let step = match spectator.turn {
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
                match dealer {
                    Some(seat) => {
                        let _ = writeln!(out, "  > seat {seat} deals");
                    }
                    None => {
                        let _ = writeln!(out, "  > deal");
                    }
                }
                moves::deal(
                    &tokens,
                    &crate::common::JUDGE,
                    &pb::DealRequest {
                        state: state.into(),
                        viewer: dealer,
                        credential: credential(dealer),
                    },
                )
                .expect("Deal")
            }
            Some(seat) => {
                assert!(
                    dealer.is_none_or(|human| human == seat),
                    "{name}: the bots' seat {seat} on turn between calls"
                );
                let seen = moves::score(
                    &tokens,
                    &crate::common::JUDGE,
                    &pb::ScoreRequest {
                        state: state.clone().into(),
                        viewer: Some(seat),
                        credential: credential(Some(seat)),
                        ..Default::default()
                    },
                )
                .expect("Score")
                .view
                .expect("view");
                view(&mut out, &seen, state.len());
                if seen.must_draw {
                    let _ = writeln!(out, "  > seat {seat} draws");
                    moves::draw(
                        &tokens,
                        &crate::common::JUDGE,
                        &pb::DrawRequest {
                            state: state.into(),
                            seat,
                            viewer: Some(seat),
                            credential: credential(Some(seat)),
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
                    moves::play(
                        &tokens,
                        &crate::common::JUDGE,
                        &pb::PlayRequest {
                            state: state.into(),
                            seat,
                            tile: m.tile,
                            end: m.end,
                            viewer: Some(seat),
                            credential: credential(Some(seat)),
                        },
                    )
                }
                .expect("a legal move")
            }
        };
        let answer = steps::finish(&tokens, &policy, step).expect("the bots play");
        events(&mut out, &answer.events);
        if let Some(human) = dealer {
            // A device reconnecting gets the hand's events just as the calls told them.
            if let Some(dealt) = answer
                .events
                .iter()
                .position(|e| matches!(e.kind, Some(pb::event::Kind::Dealt(_))))
            {
                told.clear();
                told.extend_from_slice(&answer.events[dealt..]);
            } else {
                told.extend_from_slice(&answer.events);
            }
            let replayed = moves::score(
                &tokens,
                &crate::common::JUDGE,
                &pb::ScoreRequest {
                    state: answer.state.clone().into(),
                    viewer: Some(human),
                    credential: credential(Some(human)),
                    include_hand_events: true,
                },
            )
            .expect("Score")
            .hand_events;
            assert_eq!(replayed, told, "{name}: the hand's events as told");
        }
        state = answer.state;
    }
    panic!("{name}: a match that does not end");
}

#[test]
fn seeded_matches_play_out_as_their_checked_in_transcripts() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/playthroughs");
    let update = std::env::var_os("UPDATE_PLAYTHROUGHS").is_some();
    let mut differ = Vec::new();
    let hot_seat = matches()
        .into_iter()
        .map(|(name, rules, seed)| (name, rules, seed, Seating::HotSeat));
    let with_bots = (
        "4p-solo-human-and-bots-own-pips",
        pb::Rules {
            players: 4,
            partnership: false,
            hand_size: pb::HandSizeRule::Standard as i32,
            target: 60,
            settlement: pb::SettlementRule::OwnPipsOff as i32,
            ..Default::default()
        },
        9,
        Seating::Bots(&[pb::BotLevel::Easy, pb::BotLevel::Medium, pb::BotLevel::Hard]),
    );
    for (name, rules, seed, seating) in hot_seat.chain([with_bots]) {
        let text = transcript(name, rules, seed, seating);
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
        "playthroughs changed (UPDATE_PLAYTHROUGHS=1 cargo test --test it playthroughs writes them; review the diff):\n{}",
        differ.join("\n")
    );
}
