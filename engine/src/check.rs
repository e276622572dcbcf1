//! What replaying a match cannot establish, checked before [`Game::replay`] deals:
//! the scorecard's account of the hands before the current one (docs/rules.md sections 8
//! and 9).
//!
//! Replay proves everything about the current hand: each action goes through
//! [`Game::apply`], so the tiles, turns, passes, shown-out numbers, scores and the
//! hand's end are what legal moves made. The earlier hands are not replayed (a
//! scorekeeper keeps their totals, not their plays), so their sheet is checked here
//! for what any real match's sheet is: hand numbers that follow on, only the sides of
//! the table scoring, points in fives within bounds, play points never negative,
//! settlements of the sign the settlement rule gives, nobody at the target (the match
//! would have ended), the leader of the hand a seat of the table (and none for the
//! first hand), and an action count that a match of that many hands could have and
//! that cannot run past its counter.
//!
//! [`Game::replay`]: crate::Game::replay

use super::game::Game;
use super::replay::{MAX_HAND_ACTIONS, Scorecard};
use super::rules::{Rules, SettlementRule};
use super::sheet::{SHEET_ROWS, SheetRow};

/// The most points the sheet's entries may add up to, counted without their signs: far
/// past any real match (targets go to 10,000, and a hand moves a few hundred points at
/// most), and far from overflowing however the entries are summed (a running total,
/// `ScoreSheet::totals`, never passes it either way).
pub const MAX_POINTS: i32 = 1 << 28;

/// Whether the scorecard could be a real match's, as far as replay cannot tell.
pub(crate) fn scorecard(rules: &Rules, card: &Scorecard<'_>) -> Result<(), &'static str> {
    if card.hand == 0 {
        let empty = card.starter.is_none()
            && card.moves == 0
            && card.carried.is_none()
            && card.rows.is_empty()
            && card.actions.is_empty();
        return if empty {
            Ok(())
        } else {
            Err("a match before its first deal holds nothing")
        };
    }
    let earlier = card.hand - 1;
    // Every hand is a deal and at least a lead; the counter must have room for this
    // hand's deal and actions.
    if u64::from(card.moves) < 2 * u64::from(earlier) {
        return Err("fewer actions than the hands before need");
    }
    if card.moves > u32::MAX - 1 - MAX_HAND_ACTIONS as u32 {
        return Err("action count at its limit");
    }
    match card.starter {
        Some(_) if earlier == 0 => return Err("a leader for the first hand"),
        Some(seat) if seat >= rules.players => return Err("leader out of range"),
        _ => {}
    }
    let full = earlier.min(SHEET_ROWS as u32 - 1);
    if card.rows.len() != full as usize {
        return Err("sheet rows do not match the hands played");
    }
    let first_row = earlier - full + 1;
    if card.carried.is_some() != (first_row > 1) {
        return Err("carried row present exactly when earlier hands are folded");
    }
    // Per side, and (last) every entry's size.
    let mut totals = [0i64; 5];
    if let Some(carried) = &card.carried {
        if (carried.first_hand, carried.last_hand) != (1, first_row - 1) {
            return Err("carried row's hands");
        }
        row_points(rules, carried, &mut totals)?;
    }
    for (row, number) in card.rows.iter().zip(first_row..) {
        if (row.first_hand, row.last_hand) != (number, number) {
            return Err("sheet row's hand");
        }
        row_points(rules, row, &mut totals)?;
    }
    let target = i64::from(rules.target);
    let (sides, magnitude) = totals.split_at(4);
    if magnitude[0] > i64::from(MAX_POINTS) {
        return Err("sheet points out of range");
    }
    if sides.iter().any(|&t| t >= target) {
        return Err("a side reached the target before this hand");
    }
    Ok(())
}

impl Game {
    /// Whether [`Game::replay`] rebuilds this match from its [`Game::scorecard`]. True
    /// of every match short of the limits above (a counter or a score far past any
    /// real match), which a caller keeping games beside their scorecards (the token
    /// cache) must not keep past.
    pub fn replays(&self) -> bool {
        scorecard(&self.rules, &self.scorecard()).is_ok()
    }
}

/// Checks one row's points and adds them to `totals` (per side, then their sizes).
fn row_points(rules: &Rules, row: &SheetRow, totals: &mut [i64; 5]) -> Result<(), &'static str> {
    let sides = rules.sides();
    let in_range = |v: i32| v % 5 == 0 && (-MAX_POINTS..=MAX_POINTS).contains(&v);
    let (per_side, size) = totals.split_at_mut(4);
    let sides_of_row = row.play.iter().zip(&row.settlement).zip(per_side);
    for (side, ((&play, &settled), total)) in sides_of_row.enumerate() {
        if side >= sides {
            if play != 0 || settled != 0 {
                return Err("points for a side that does not exist");
            }
            continue;
        }
        if !in_range(play) || !in_range(settled) {
            return Err("sheet points out of range");
        }
        let sign_ok = match rules.settlement {
            SettlementRule::OwnPipsOff => settled <= 0,
            SettlementRule::WinnerTakesPips => settled >= 0,
        };
        if play < 0 || !sign_ok {
            return Err("sheet points of the wrong sign");
        }
        *total += i64::from(play) + i64::from(settled);
        size[0] += i64::from(play.unsigned_abs()) + i64::from(settled.unsigned_abs());
    }
    Ok(())
}
