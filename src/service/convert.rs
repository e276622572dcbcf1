//! Translating between the engine's types and the `allfives.v1` messages.

use crate::engine::clock::MAX_TAKES_SEAT_AFTER;
use crate::engine::scoring::round_to_five;
use crate::engine::suggest::{DEFAULT_WORLDS, Level, MAX_WORLDS, Suggestion};
use crate::engine::{
    Absence, Action, Arm, End, Event, HandEnd, HandResult, HandSizeRule, Move, Phase, Placement,
    Rules, ScoreSheet, Seat, SettlementRule, SheetRow, Side, Tile, TileSet, TurnClock, View, Why,
};

use crate::proto::v1 as pb;
use crate::state::names::Names;
use crate::state::plaintext::PlayerIds;
use crate::state::{MatchId, Player, Seats};
use crate::store::invites::InviteCode;

use super::status::ApiError;

/// The tile of a Play request; a missing tile or a half over 6 is a bad field.
pub fn tile_in(tile: Option<&pb::Tile>) -> Result<Tile, ApiError> {
    let tile = tile.ok_or(ApiError::field("tile", "a tile is required"))?;
    let pip = |v: u32, field| {
        u8::try_from(v)
            .ok()
            .filter(|&p| p <= 6)
            .ok_or(ApiError::field(field, "a half must be 0 to 6"))
    };
    let (a, b) = (pip(tile.a, "tile.a")?, pip(tile.b, "tile.b")?);
    Tile::new(a, b).ok_or(ApiError::field("tile", "not a tile of a double-six set"))
}

pub fn tile_out(tile: Tile) -> pb::Tile {
    pb::Tile {
        a: u32::from(tile.lo()),
        b: u32::from(tile.hi()),
    }
}

fn tiles_out(set: TileSet) -> Vec<pb::Tile> {
    set.iter().map(tile_out).collect()
}

/// An end from a request (`END_UNSPECIFIED`: let the server choose).
pub fn end_in(end: i32) -> Result<Option<End>, ApiError> {
    match pb::End::try_from(end) {
        Ok(pb::End::Unspecified) => Ok(None),
        Ok(pb::End::Left) => Ok(Some(End::Left)),
        Ok(pb::End::Right) => Ok(Some(End::Right)),
        Ok(pb::End::Up) => Ok(Some(End::Up)),
        Ok(pb::End::Down) => Ok(Some(End::Down)),
        Err(_) => Err(ApiError::field("end", "not a known End value")),
    }
}

pub fn end_out(end: Option<End>) -> i32 {
    (match end {
        None => pb::End::Unspecified,
        Some(End::Left) => pb::End::Left,
        Some(End::Right) => pb::End::Right,
        Some(End::Up) => pb::End::Up,
        Some(End::Down) => pb::End::Down,
    }) as i32
}

/// A seat from a request, checked against the number of players.
pub fn seat_in(seat: u32, rules: &Rules, field: &'static str) -> Result<Seat, ApiError> {
    let seat = seat as usize;
    if seat < rules.players {
        Ok(seat)
    } else {
        Err(ApiError::field(field, "no such seat at this table"))
    }
}

/// The viewer of a request: `None` is a spectator.
pub fn viewer_in(viewer: Option<u32>, rules: &Rules) -> Result<Option<Seat>, ApiError> {
    viewer.map(|v| seat_in(v, rules, "viewer")).transpose()
}

/// Rule options from NewGame: zero values take the defaults.
pub fn rules_in(rules: Option<&pb::Rules>) -> Result<Rules, ApiError> {
    let default = pb::Rules::default();
    let r = rules.unwrap_or(&default);
    let players = match r.players {
        0 => 2,
        n => n as usize,
    };
    let mut out = Rules::for_players(players.min(99));
    out.partnership = r.partnership;
    out.hand_size = match pb::HandSizeRule::try_from(r.hand_size) {
        Ok(pb::HandSizeRule::Unspecified | pb::HandSizeRule::Standard) => HandSizeRule::Standard,
        Ok(pb::HandSizeRule::FiveEach) => HandSizeRule::FiveEach,
        Ok(pb::HandSizeRule::SevenFive) => HandSizeRule::SevenFive,
        Err(_) => {
            return Err(ApiError::field(
                "rules.hand_size",
                "not a known HandSizeRule value",
            ));
        }
    };
    out.settlement = match pb::SettlementRule::try_from(r.settlement) {
        Ok(pb::SettlementRule::Unspecified | pb::SettlementRule::OwnPipsOff) => {
            SettlementRule::OwnPipsOff
        }
        Ok(pb::SettlementRule::WinnerTakesPips) => SettlementRule::WinnerTakesPips,
        Err(_) => {
            return Err(ApiError::field(
                "rules.settlement",
                "not a known SettlementRule value",
            ));
        }
    };
    if r.target != 0 {
        out.target = r.target;
    }
    out.clock = r.clock.as_ref().map(|c| TurnClock {
        move_secs: match c.move_seconds {
            0 => TurnClock::PHONE.move_secs,
            n => n,
        },
        bank_secs: c.bank_seconds.unwrap_or(TurnClock::PHONE.bank_secs),
        increment_secs: c.increment_seconds,
    });
    if let Some(a) = &r.absence {
        out.absence = absence_in(a)?;
    }
    out.validate()?;
    Ok(out)
}

/// The absence option from NewGame: zero values take the defaults.
fn absence_in(a: &pb::Absence) -> Result<Absence, ApiError> {
    let Absence::Bot {
        level: default_level,
        takes_seat_after: default_after,
    } = Absence::default()
    else {
        return Ok(Absence::default());
    };
    match pb::AbsenceRule::try_from(a.rule) {
        Ok(pb::AbsenceRule::Forfeit) => {
            if a.bot != 0 || a.bot_takes_seat_after.is_some() {
                return Err(ApiError::field(
                    "rules.absence",
                    "a forfeit takes no bot: leave bot and bot_takes_seat_after out",
                ));
            }
            Ok(Absence::Forfeit)
        }
        Ok(pb::AbsenceRule::Unspecified | pb::AbsenceRule::Bot) => {
            let level = match a.bot {
                0 => default_level,
                n => level_in(n).map_err(|_| {
                    ApiError::field("rules.absence.bot", "not a known BotLevel value")
                })?,
            };
            let takes_seat_after = match a.bot_takes_seat_after {
                None => default_after,
                Some(n) => u8::try_from(n)
                    .ok()
                    .filter(|&n| n <= MAX_TAKES_SEAT_AFTER)
                    .ok_or(ApiError::field(
                        "rules.absence.bot_takes_seat_after",
                        "must be 0 to 10 timeouts in a row",
                    ))?,
            };
            Ok(Absence::Bot {
                level,
                takes_seat_after,
            })
        }
        Err(_) => Err(ApiError::field(
            "rules.absence.rule",
            "not a known AbsenceRule value",
        )),
    }
}

fn absence_out(absence: &Absence) -> pb::Absence {
    match *absence {
        Absence::Forfeit => pb::Absence {
            rule: pb::AbsenceRule::Forfeit as i32,
            bot: pb::BotLevel::Unspecified as i32,
            bot_takes_seat_after: None,
        },
        Absence::Bot {
            level,
            takes_seat_after,
        } => pb::Absence {
            rule: pb::AbsenceRule::Bot as i32,
            bot: level_out(level) as i32,
            bot_takes_seat_after: Some(u32::from(takes_seat_after)),
        },
    }
}

/// Why a seat's player is absent, as the API names it.
pub fn why_out(why: Why) -> pb::AbsenceReason {
    match why {
        Why::TimedOut => pb::AbsenceReason::TimedOut,
        Why::Left => pb::AbsenceReason::Left,
    }
}

pub fn rules_out(rules: &Rules) -> pb::Rules {
    pb::Rules {
        players: rules.players as u32,
        partnership: rules.partnership,
        hand_size: match rules.hand_size {
            HandSizeRule::Standard => pb::HandSizeRule::Standard,
            HandSizeRule::FiveEach => pb::HandSizeRule::FiveEach,
            HandSizeRule::SevenFive => pb::HandSizeRule::SevenFive,
        } as i32,
        target: rules.target,
        settlement: match rules.settlement {
            SettlementRule::OwnPipsOff => pb::SettlementRule::OwnPipsOff,
            SettlementRule::WinnerTakesPips => pb::SettlementRule::WinnerTakesPips,
        } as i32,
        clock: rules.clock.map(|c| pb::TurnClock {
            move_seconds: c.move_secs,
            bank_seconds: Some(c.bank_secs),
            increment_seconds: c.increment_secs,
        }),
        absence: Some(absence_out(&rules.absence)),
    }
}

/// The seats that score for a side.
fn seats_of(rules: &Rules, side: Side) -> Vec<u32> {
    (0..rules.players)
        .filter(|&s| rules.side_of(s) == side)
        .map(|s| s as u32)
        .collect()
}

fn placement_out(order: usize, p: &Placement) -> pb::PlacedTile {
    pb::PlacedTile {
        tile: Some(tile_out(p.tile)),
        arm: (match p.arm {
            Arm::Lead => pb::Arm::Lead,
            Arm::End(End::Left) => pb::Arm::Left,
            Arm::End(End::Right) => pb::Arm::Right,
            Arm::End(End::Up) => pb::Arm::Up,
            Arm::End(End::Down) => pb::Arm::Down,
        }) as i32,
        index: u32::from(p.index),
        near: u32::from(p.near),
        far: u32::from(p.far),
        crosswise: p.crosswise(),
        spinner: p.spinner,
        order: order as u32,
        seat: u32::from(p.seat),
    }
}

fn side_amounts(rules: &Rules, values: &[i32; 4]) -> Vec<pb::SideAmount> {
    (0..rules.sides())
        .map(|s| pb::SideAmount {
            side: s as u32,
            points: values[s],
        })
        .collect()
}

pub fn hand_result_out(rules: &Rules, r: &HandResult) -> pb::HandResult {
    let (reason, went_out, reached_target, forfeited) = match r.end {
        HandEnd::Domino { seat } => (pb::HandEndReason::Domino, Some(seat as u32), None, None),
        HandEnd::Blocked => (pb::HandEndReason::Blocked, None, None, None),
        // Not gone out even when the winning tile was the seat's last: the hand is not
        // played out or settled (docs/rules.md sections 8 and 9, and the proto).
        HandEnd::TargetReached { seat } => (
            pb::HandEndReason::TargetReached,
            None,
            Some(seat as u32),
            None,
        ),
        HandEnd::Forfeit { seat } => (pb::HandEndReason::Forfeit, None, None, Some(seat as u32)),
    };
    pb::HandResult {
        hand: r.hand,
        reason: reason as i32,
        went_out,
        hands: (0..rules.players)
            .map(|s| pb::SeatHand {
                seat: s as u32,
                tiles: tiles_out(r.hands[s]),
                pips: r.hands[s].pips(),
                rounded: round_to_five(r.hands[s].pips()),
            })
            .collect(),
        settlement: side_amounts(rules, &r.settlement),
        reached_target,
        forfeited,
    }
}

/// An engine event as `viewer` may see it.
pub fn event_out(rules: &Rules, event: Event, viewer: Option<Seat>) -> pb::Event {
    use pb::event::Kind;
    let kind = match event.redacted_for(viewer) {
        Event::Dealt { hand, starter } => Kind::Dealt(pb::event::Dealt {
            hand,
            starter: starter as u32,
        }),
        Event::Played {
            seat,
            tile,
            end,
            count,
            points,
        } => Kind::TilePlayed(pb::event::TilePlayed {
            seat: seat as u32,
            tile: Some(tile_out(tile)),
            end: end_out(end),
            count,
            points,
        }),
        Event::Drew { seat, tile } => Kind::TileDrawn(pb::event::TileDrawn {
            seat: seat as u32,
            tile: tile.map(tile_out),
        }),
        Event::Passed { seat } => Kind::Passed(pb::event::Passed { seat: seat as u32 }),
        Event::HandEnded(result) => Kind::HandEnded(hand_result_out(rules, &result)),
        Event::GameEnded { winner } => Kind::GameEnded(pb::event::GameEnded {
            winner_side: winner as u32,
            winner_seats: seats_of(rules, winner),
        }),
        Event::Absent { seat, why } => Kind::SeatAbsent(pb::event::SeatAbsent {
            seat: seat as u32,
            reason: why_out(why) as i32,
        }),
        Event::BotTookSeat { seat, level } => Kind::BotTookSeat(pb::event::BotTookSeat {
            seat: seat as u32,
            bot: level_out(level) as i32,
        }),
        Event::Returned { seat } => {
            Kind::SeatReturned(pb::event::SeatReturned { seat: seat as u32 })
        }
        Event::Forfeited { seat, why } => Kind::Forfeited(pb::event::Forfeited {
            seat: seat as u32,
            reason: why_out(why) as i32,
        }),
    };
    pb::Event { kind: Some(kind) }
}

/// What a view shows beside the engine's: the match id, the state's ids, the seats.
pub struct Table<'a> {
    pub match_id: &'a str,
    pub state_id: &'a [u8],
    /// Empty for NewGame's state.
    pub previous_state_id: &'a [u8],
    pub seats: &'a Seats,
    pub names: &'a Names,
    /// Each seat's player id, shown to its own seat, or to everyone with
    /// `show_player_ids` (`--show-player-ids`).
    pub player_ids: &'a PlayerIds,
    pub show_player_ids: bool,
    /// With a turn clock: the clocks as the server judged them, and each seat's
    /// timeouts in a row.
    pub clock: Option<(pb::ClockView, [u8; 4])>,
}

/// Who plays each seat, as the API shows it; `forfeit`, the seat that forfeited.
fn seat_out(
    seat: usize,
    player: &Player,
    name: &str,
    forfeit: Option<(Seat, Why)>,
    late: u8,
) -> pb::SeatStatus {
    let (kind, level, mut absent) = match player {
        Player::Open => (pb::SeatKind::Open, pb::BotLevel::Unspecified, None),
        Player::Human(_) => (pb::SeatKind::Claimed, pb::BotLevel::Unspecified, None),
        Player::Bot(level) => (pb::SeatKind::Bot, level_out(*level), None),
        Player::Held { level, why, .. } => (pb::SeatKind::HeldByBot, level_out(*level), Some(*why)),
    };
    if let Some((forfeited, why)) = forfeit
        && forfeited == seat
    {
        absent = Some(why);
    }
    pb::SeatStatus {
        seat: seat as u32,
        kind: kind as i32,
        bot: level as i32,
        display_name: name.to_owned(),
        absent: absent.map_or(pb::AbsenceReason::Unspecified, why_out) as i32,
        timeouts_in_row: u32::from(late),
        pass_holder: false,
        player_id: String::new(),
    }
}

/// A bot level as the API names it.
pub fn level_out(level: Level) -> pb::BotLevel {
    match level {
        Level::Easy => pb::BotLevel::Easy,
        Level::Medium => pb::BotLevel::Medium,
        Level::Hard => pb::BotLevel::Hard,
    }
}

/// The table as the engine's view shows it, with the match's id, ids and seats.
pub fn view_out(view: &View, table: &Table<'_>) -> pb::GameView {
    let rules = &view.rules;
    pb::GameView {
        match_id: table.match_id.to_owned(),
        moves: view.moves,
        rules: Some(rules_out(rules)),
        phase: (match view.phase {
            Phase::Dealing => pb::Phase::Dealing,
            Phase::Playing => pb::Phase::Playing,
            Phase::Over => pb::Phase::Over,
        }) as i32,
        hand_number: view.hand_number,
        turn: view.turn.map(|s| s as u32),
        viewer: view.viewer.map(|s| s as u32),
        layout: view
            .placements
            .iter()
            .enumerate()
            .map(|(i, p)| placement_out(i, p))
            .collect(),
        open_ends: view
            .open_ends
            .iter()
            .map(|e| pb::OpenEnd {
                end: end_out(Some(e.end)),
                pip: u32::from(e.pip),
                value: u32::from(e.value),
            })
            .collect(),
        count: view.count,
        scores: view
            .scores
            .iter()
            .enumerate()
            .map(|(side, &score)| pb::SideScore {
                side: side as u32,
                seats: seats_of(rules, side),
                score,
            })
            .collect(),
        hand_sizes: view.hand_sizes.iter().map(|&n| n as u32).collect(),
        boneyard_size: view.boneyard as u32,
        hand: view.hand.map(tiles_out).unwrap_or_default(),
        legal_moves: view.legal_moves.iter().map(legal_move_out).collect(),
        must_draw: view.must_draw,
        winner_side: view.winner.map(|s| s as u32),
        winner_seats: view.winner.map(|w| seats_of(rules, w)).unwrap_or_default(),
        last_hand: view.last_result.as_ref().map(|r| hand_result_out(rules, r)),
        state_id: table.state_id.to_vec(),
        previous_state_id: table.previous_state_id.to_vec(),
        seats: table.seats.0[..rules.players]
            .iter()
            .enumerate()
            .map(|(seat, player)| {
                let late = table.clock.as_ref().map_or(0, |(_, late)| late[seat]);
                let mut out = seat_out(seat, player, &table.names.0[seat], view.forfeit, late);
                if let Some(id) = &table.player_ids.0[seat] {
                    out.pass_holder = true;
                    if table.show_player_ids || view.viewer == Some(seat) {
                        out.player_id = id.as_str().to_owned();
                    }
                }
                out
            })
            .collect(),
        clock: table.clock.as_ref().map(|(clock, _)| clock.clone()),
        // Signed at the call's end, once the view shows the match over
        // (`super::certify`).
        result: String::new(),
    }
}

fn row_out(rules: &Rules, row: &SheetRow, running: &mut [i32; 4]) -> pb::SheetRow {
    pb::SheetRow {
        first_hand: row.first_hand,
        last_hand: row.last_hand,
        sides: (0..rules.sides())
            .map(|s| {
                running[s] += row.play[s] + row.settlement[s];
                pb::SideLine {
                    side: s as u32,
                    play: row.play[s],
                    settlement: row.settlement[s],
                    total: running[s],
                }
            })
            .collect(),
    }
}

/// The score sheet with running totals.
pub fn sheet_out(rules: &Rules, sheet: &ScoreSheet, winner: Option<Side>) -> pb::ScoreSheet {
    let mut running = [0i32; 4];
    let carried = sheet.carried().map(|row| row_out(rules, row, &mut running));
    let rows = sheet
        .rows()
        .map(|row| row_out(rules, row, &mut running))
        .collect();
    pb::ScoreSheet {
        target: rules.target,
        rows,
        carried,
        winner_side: winner.map(|s| s as u32),
    }
}

/// A legal move as the API shows it.
fn legal_move_out(m: &Move) -> pb::LegalMove {
    pb::LegalMove {
        tile: Some(tile_out(m.tile)),
        end: end_out(m.end),
        points: m.points,
    }
}

/// The bot level of a Suggest request.
pub fn level_in(level: i32) -> Result<Level, ApiError> {
    match pb::BotLevel::try_from(level) {
        Ok(pb::BotLevel::Easy) => Ok(Level::Easy),
        Ok(pb::BotLevel::Medium) => Ok(Level::Medium),
        Ok(pb::BotLevel::Hard) => Ok(Level::Hard),
        Ok(pb::BotLevel::Unspecified) => Err(ApiError::field("level", "name a bot level")),
        Err(_) => Err(ApiError::field("level", "not a known BotLevel value")),
    }
}

/// The worlds of a Suggest request: 0 is the default.
pub fn worlds_in(worlds: u32) -> Result<Option<u32>, ApiError> {
    match worlds {
        0 => Ok(None),
        w if w <= MAX_WORLDS => Ok(Some(w)),
        _ => Err(ApiError::field("worlds", "at most 1024")),
    }
}

/// A suggestion as the API shows it: moves best first (stable, so equal values keep
/// the engine's order).
pub fn suggestion_out(s: &Suggestion, level: Level, worlds: Option<u32>) -> pb::SuggestResponse {
    let play = match s.action {
        Action::Play { tile, end, .. } => s
            .values
            .iter()
            .find(|v| v.play.tile == tile && v.play.end == end)
            .map(|v| legal_move_out(&v.play)),
        _ => None,
    };
    let mut moves: Vec<pb::RatedMove> = s
        .values
        .iter()
        .map(|v| pb::RatedMove {
            r#move: Some(legal_move_out(&v.play)),
            value: f64::from(v.value),
        })
        .collect();
    moves.sort_by(|a, b| b.value.total_cmp(&a.value));
    let (level, worlds) = match level {
        Level::Easy => (pb::BotLevel::Easy, 0),
        Level::Medium => (pb::BotLevel::Medium, 0),
        Level::Hard => (
            pb::BotLevel::Hard,
            worlds.unwrap_or(DEFAULT_WORLDS).clamp(1, MAX_WORLDS),
        ),
    };
    pb::SuggestResponse {
        draw: play.is_none(),
        play,
        moves,
        level: level as i32,
        worlds,
    }
}

// ---------------------------------------------------------------------------------
// Request fields read: each a value, or the field's refusal.

/// A display name as the request gives it (see `state::names`), or the field's refusal.
pub(super) fn display_name_in(name: &str, field: &'static str) -> Result<String, ApiError> {
    match crate::state::names::refusal(name) {
        None => Ok(name.to_owned()),
        Some(why) => Err(ApiError::field(field, why)),
    }
}

/// A claim key as the request gives it: 16 to 64 bytes, not one byte repeated (a
/// buffer the client forgot to fill).
pub(super) fn claim_key_in(key: &[u8]) -> Result<&[u8], ApiError> {
    use crate::state::claim::{MAX_KEY_LEN, MIN_KEY_LEN};
    if !(MIN_KEY_LEN..=MAX_KEY_LEN).contains(&key.len()) {
        return Err(ApiError::field(
            "claim_key",
            "a claim key is 16 to 64 random bytes",
        ));
    }
    if key.iter().all(|&b| b == key[0]) {
        return Err(ApiError::field(
            "claim_key",
            "a claim key is random bytes, not one byte repeated",
        ));
    }
    Ok(key)
}

/// A match id as `GameView.match_id` shows it: 32 hex digits.
pub(super) fn match_id_in(hex: &str) -> Result<MatchId, ApiError> {
    hex.parse().map_err(|_| {
        ApiError::field(
            "match_id",
            "a match id is 32 hex digits (GameView.match_id)",
        )
    })
}

/// An invite code as typed (`store::invites::InviteCode::parse`), or the field's refusal.
pub fn code_in(typed: &str) -> Result<InviteCode, ApiError> {
    InviteCode::parse(typed).ok_or(ApiError::field(
        "code",
        "an invite code is 12 letters and digits (CreateInviteCodeResponse.code)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Game;

    #[test]
    fn a_hand_ended_by_the_target_names_no_seat_as_gone_out_even_on_its_last_tile() {
        // The case an independent rules oracle found: 2 players, five each, own pips
        // off, target 10, seed 263; seat 1's [1|2] is both its last tile and the
        // placement that reaches the target.
        let rules = Rules {
            hand_size: crate::engine::HandSizeRule::FiveEach,
            target: 10,
            ..Rules::for_players(2)
        };
        let mut game = Game::new(rules, 263).unwrap();
        game.deal().unwrap();
        let t = |a, b| crate::engine::Tile::new(a, b).unwrap();
        use crate::engine::End::{Left, Right};
        let plays = [
            (1, t(3, 5), None),
            (0, t(1, 3), Some(Left)),
            (1, t(5, 6), Some(Right)),
            (0, t(2, 6), Some(Right)),
            (1, t(0, 2), Some(Right)),
            (0, t(0, 0), Some(Right)),
            (1, t(0, 4), Some(Right)),
            (0, t(4, 4), Some(Right)),
        ];
        for (seat, tile, end) in plays {
            game.play(seat, tile, end).unwrap();
        }
        let events = game.play(1, t(1, 2), Some(Left)).unwrap();
        let result = events
            .iter()
            .find_map(|e| match e {
                Event::HandEnded(r) => Some(*r),
                _ => None,
            })
            .expect("the hand ended");
        assert_eq!(result.end, HandEnd::TargetReached { seat: 1 });
        assert!(result.hands[1].is_empty(), "it was seat 1's last tile");
        let shown = hand_result_out(&rules, &result);
        assert_eq!(shown.reason, pb::HandEndReason::TargetReached as i32);
        assert_eq!((shown.went_out, shown.reached_target), (None, Some(1)));
    }
}
