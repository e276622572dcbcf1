//! The score sheet: a row per hand of points made in play and by settlement, per side.
//!
//! Like a paper pad turned to a new page, it keeps the latest [`SHEET_ROWS`] hands in
//! full and folds earlier ones into one carried-forward row, so it stays small however
//! long a game runs.

/// Hands kept in full on the sheet.
pub const SHEET_ROWS: usize = 32;

/// Points one hand (or the carried-forward hands) brought each side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SheetRow {
    /// First hand the row covers (1-based).
    pub first_hand: u32,
    /// Last hand the row covers; equal to `first_hand` except in the carried row.
    pub last_hand: u32,
    /// Points made by placements, per side.
    pub play: [i32; 4],
    /// Settlement, per side (negative under "own pips off").
    pub settlement: [i32; 4],
}

impl SheetRow {
    /// What the row adds to each side's score.
    pub fn total(&self) -> [i32; 4] {
        std::array::from_fn(|i| self.play[i] + self.settlement[i])
    }

    fn absorb(&mut self, other: &SheetRow) {
        self.last_hand = other.last_hand;
        for i in 0..4 {
            self.play[i] += other.play[i];
            self.settlement[i] += other.settlement[i];
        }
    }
}

/// The sheet itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ScoreSheet {
    carried: Option<SheetRow>,
    /// Oldest first; at most [`SHEET_ROWS`].
    rows: Vec<SheetRow>,
}

impl ScoreSheet {
    /// A sheet from its parts, which the caller has checked (`check::scorecard`).
    pub(crate) fn from_parts(carried: Option<SheetRow>, rows: Vec<SheetRow>) -> ScoreSheet {
        debug_assert!(rows.len() <= SHEET_ROWS);
        ScoreSheet { carried, rows }
    }

    /// The rows of every hand but the one in play (or last played): what the sheet
    /// held before that hand's row was opened, its oldest row already folded.
    pub(crate) fn earlier_rows(&self) -> &[SheetRow] {
        &self.rows[..self.rows.len().saturating_sub(1)]
    }

    /// The hands folded into one row, if any.
    pub fn carried(&self) -> Option<&SheetRow> {
        self.carried.as_ref()
    }

    /// The latest hands, oldest first.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = &SheetRow> {
        self.rows.iter()
    }

    /// Opens the row of a new hand, folding the oldest row if the page is full.
    pub(crate) fn start_hand(&mut self, hand: u32) {
        if self.rows.len() == SHEET_ROWS {
            let oldest = self.rows.remove(0);
            match &mut self.carried {
                Some(carried) => carried.absorb(&oldest),
                None => self.carried = Some(oldest),
            }
        }
        self.rows.push(SheetRow {
            first_hand: hand,
            last_hand: hand,
            ..SheetRow::default()
        });
    }

    pub(crate) fn add_play(&mut self, side: usize, points: i32) {
        if let Some(row) = self.rows.last_mut() {
            row.play[side] += points;
        }
    }

    pub(crate) fn add_settlement(&mut self, delta: &[i32; 4]) {
        if let Some(row) = self.rows.last_mut() {
            for (s, d) in row.settlement.iter_mut().zip(delta) {
                *s += d;
            }
        }
    }

    /// Each side's total over every hand on the sheet (equal to the game's scores).
    pub fn totals(&self) -> [i32; 4] {
        let mut totals = [0i32; 4];
        for row in self.carried.iter().chain(self.rows.iter()) {
            for (t, r) in totals.iter_mut().zip(row.total()) {
                *t += r;
            }
        }
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_latest_hands_and_folds_the_rest() {
        let mut sheet = ScoreSheet::default();
        for hand in 1..=40 {
            sheet.start_hand(hand);
            sheet.add_play(0, 5);
            sheet.add_settlement(&[0, -10, 0, 0]);
        }
        assert_eq!(sheet.rows().len(), SHEET_ROWS);
        let carried = sheet.carried().copied().unwrap();
        assert_eq!((carried.first_hand, carried.last_hand), (1, 8));
        assert_eq!(carried.play[0], 40);
        assert_eq!(carried.settlement[1], -80);
        assert_eq!(sheet.rows().next().map(|r| r.first_hand), Some(9));
        assert_eq!(sheet.totals(), [200, -400, 0, 0]);
    }
}
