//! The layout on the table: the line, the spinner, the open ends and the count
//! (docs/rules.md sections 6 and 7).
//!
//! The lead tile sits at the centre. Tiles joined to its left form the LEFT arm and to
//! its right the RIGHT arm; the line runs LEFT arm (outermost first), lead, RIGHT arm.
//! The first double of the hand is the spinner, wherever it lies on that line; once
//! both its sides are joined, the UP and DOWN arms open across it.
//!
//! Decision (docs/rules.md leaves the naming to us): a non-double lead `[a|b]` with `a < b`
//! is placed with its lower half `a` facing LEFT and `b` facing RIGHT.

use super::tile::{Tile, TileSet};

/// An open end of the layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum End {
    Left = 0,
    Right = 1,
    Up = 2,
    Down = 3,
}

impl End {
    /// The four ends in order.
    pub const ALL: [End; 4] = [End::Left, End::Right, End::Up, End::Down];

    fn index(self) -> usize {
        self as usize
    }
}

/// Where on the table a placed tile lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arm {
    /// The first tile of the hand, at the centre.
    Lead,
    /// Joined, directly or through other tiles, to this end's side of the table.
    End(End),
}

/// One tile on the table and how it lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Placement {
    pub tile: Tile,
    pub arm: Arm,
    /// Position along the arm: 0 is the tile nearest the centre (for UP and DOWN: the
    /// tile touching the spinner). Always 0 for the lead.
    pub index: u8,
    /// The half that touches the tile nearer the centre (for the lead: the half facing
    /// LEFT). For a double both halves are equal.
    pub near: u8,
    /// The half facing outward (for the lead: the half facing RIGHT).
    pub far: u8,
    /// Whether this tile is the spinner (the hand's first double).
    pub spinner: bool,
    /// The seat that placed it.
    pub seat: u8,
}

impl Placement {
    /// Doubles lie crosswise.
    pub fn crosswise(&self) -> bool {
        self.tile.is_double()
    }
}

/// An open end as a player sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpenEnd {
    pub end: End,
    /// The pips a tile must match to be placed here.
    pub pip: u8,
    /// What this end adds to the count now (the spinner's pips are credited to the
    /// first end it shows on).
    pub value: u8,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct EndState {
    open: bool,
    /// Pips shown to the next tile.
    pip: u8,
    /// Tiles on this arm.
    len: u8,
    /// What the outermost tile adds to the count, unless it is the spinner.
    value: u8,
    /// The outermost tile on this end is the spinner (a side of it is free).
    spinner_tip: bool,
}

/// The open ends and the spinner: everything the count and the legal moves depend on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Ends {
    ends: [EndState; 4],
    /// The spinner's pip value, once one is down.
    spinner: Option<u8>,
    empty: bool,
}

impl Ends {
    fn count(&self) -> u32 {
        let mut count = 0u32;
        let mut spinner_free = false;
        for e in &self.ends {
            if e.open {
                count += u32::from(e.value);
                spinner_free |= e.spinner_tip;
            }
        }
        if spinner_free {
            count += 2 * u32::from(self.spinner.unwrap_or(0));
        }
        count
    }

    /// Places `tile` (already checked to fit) and says how it lies.
    #[inline(always)]
    fn place(&mut self, tile: Tile, end: Option<End>) -> (Option<End>, u8, u8, u8, bool) {
        if self.empty {
            self.empty = false;
            let (near, far) = (tile.lo(), tile.hi());
            let spinner = tile.is_double();
            if spinner {
                self.spinner = Some(near);
            }
            for (e, pip) in [(End::Left, near), (End::Right, far)] {
                self.ends[e.index()] = EndState {
                    open: true,
                    pip,
                    len: 0,
                    value: if spinner { 0 } else { pip },
                    spinner_tip: spinner,
                };
            }
            return (None, 0, near, far, spinner);
        }
        let end = end.unwrap_or(End::Left);
        let state = &mut self.ends[end.index()];
        let near = state.pip;
        let far = tile.other(near);
        let index = state.len;
        let was_spinner_tip = state.spinner_tip;
        state.len += 1;
        state.pip = far;
        let spinner = tile.is_double() && self.spinner.is_none();
        if spinner {
            self.spinner = Some(far);
            state.value = 0;
            state.spinner_tip = true;
        } else {
            state.value = if tile.is_double() { 2 * far } else { far };
            state.spinner_tip = false;
        }
        // Covering the spinner's last free side opens UP and DOWN.
        if was_spinner_tip && !self.ends.iter().any(|e| e.spinner_tip) {
            let pip = self.spinner.unwrap_or(0);
            for e in [End::Up, End::Down] {
                self.ends[e.index()] = EndState {
                    open: true,
                    pip,
                    len: 0,
                    value: 0,
                    spinner_tip: false,
                };
            }
        }
        (Some(end), index, near, far, spinner)
    }
}

/// The tiles on the table in the order they were placed, and the open ends.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    ends: Ends,
    placements: [Placement; 28],
    len: u8,
    /// The tiles of `placements`.
    tiles: TileSet,
}

impl Default for Layout {
    fn default() -> Layout {
        Layout::new()
    }
}

impl Layout {
    /// An empty table.
    pub fn new() -> Layout {
        let blank = Placement {
            tile: Tile::DOUBLE_BLANK,
            arm: Arm::Lead,
            index: 0,
            near: 0,
            far: 0,
            spinner: false,
            seat: 0,
        };
        Layout {
            ends: Ends {
                empty: true,
                ..Ends::default()
            },
            placements: [blank; 28],
            len: 0,
            tiles: TileSet::EMPTY,
        }
    }

    /// No tile has been placed yet (the next tile is the lead).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every placed tile, in the order played.
    pub fn placements(&self) -> &[Placement] {
        &self.placements[..usize::from(self.len)]
    }

    /// The tiles on the table.
    pub fn tiles(&self) -> TileSet {
        self.tiles
    }

    /// The spinner's pip value, once a double is down.
    pub fn spinner(&self) -> Option<u8> {
        self.ends.spinner
    }

    /// The open ends: none before the lead, LEFT and RIGHT after it, and UP and DOWN
    /// once both sides of the spinner are joined.
    pub fn open_ends(&self) -> impl Iterator<Item = OpenEnd> + '_ {
        let mut spinner_credited = false;
        let spinner_value = 2 * self.ends.spinner.unwrap_or(0);
        End::ALL.into_iter().filter_map(move |end| {
            let e = self.ends.ends[end.index()];
            if !e.open {
                return None;
            }
            let value = if e.spinner_tip {
                let credit = !spinner_credited;
                spinner_credited = true;
                if credit { spinner_value } else { 0 }
            } else {
                e.value
            };
            Some(OpenEnd {
                end,
                pip: e.pip,
                value,
            })
        })
    }

    /// Whether `end` is open.
    pub fn is_open(&self, end: End) -> bool {
        self.ends.ends[end.index()].open
    }

    /// The count: the total the open ends show (section 7).
    pub fn count(&self) -> u32 {
        self.ends.count()
    }

    /// Every tile that fits some open end (every tile before the lead).
    pub fn playable(&self) -> TileSet {
        if self.ends.empty {
            return TileSet::FULL;
        }
        let mut set = TileSet::EMPTY;
        for e in &self.ends.ends {
            if e.open {
                set = set.union(TileSet::with_pip(e.pip));
            }
        }
        set
    }

    /// Whether `tile` fits `end`.
    pub fn fits(&self, tile: Tile, end: End) -> bool {
        let e = self.ends.ends[end.index()];
        e.open && tile.has(e.pip)
    }

    /// The open ends `tile` fits.
    pub fn fitting_ends(&self, tile: Tile) -> impl Iterator<Item = End> + '_ {
        End::ALL
            .into_iter()
            .filter(move |&end| self.fits(tile, end))
    }

    /// The count after placing `tile` on `end` (the lead when the table is empty),
    /// without placing it. The tile must fit.
    pub fn count_after(&self, tile: Tile, end: Option<End>) -> u32 {
        let mut ends = self.ends;
        ends.place(tile, end);
        ends.count()
    }

    /// Places `tile` on `end` (ignored for the lead) and returns the new count. The
    /// caller has checked that the tile fits.
    pub fn place(&mut self, tile: Tile, end: Option<End>) -> u32 {
        self.place_by(0, tile, end)
    }

    /// As [`Layout::place`], recording that `seat` placed it.
    pub fn place_by(&mut self, seat: usize, tile: Tile, end: Option<End>) -> u32 {
        self.push(seat as u8, tile, end);
        self.ends.count()
    }

    #[inline(always)]
    fn push(&mut self, seat: u8, tile: Tile, end: Option<End>) {
        let (end, index, near, far, spinner) = self.ends.place(tile, end);
        if let Some(slot) = self.placements.get_mut(usize::from(self.len)) {
            *slot = Placement {
                tile,
                arm: end.map_or(Arm::Lead, Arm::End),
                index,
                near,
                far,
                spinner,
                seat,
            };
            self.len += 1;
            self.tiles.insert(tile);
        }
    }
}

/// Points a placement scores: the count when it is a positive multiple of five.
pub fn points_for(count: u32) -> u32 {
    if count > 0 && count.is_multiple_of(5) {
        count
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(a: u8, b: u8) -> Tile {
        Tile::new(a, b).unwrap()
    }

    /// Plays a sequence of (tile, end, expected count, expected points) on a fresh layout.
    fn check(steps: &[(Tile, Option<End>, u32, u32)]) -> Layout {
        let mut layout = Layout::new();
        for (i, &(tile, end, count, points)) in steps.iter().enumerate() {
            if let Some(end) = end {
                assert!(
                    layout.fits(tile, end),
                    "step {}: {tile} must fit {end:?}",
                    i + 1
                );
            }
            assert_eq!(
                layout.count_after(tile, end),
                count,
                "step {} preview",
                i + 1
            );
            assert_eq!(
                layout.place(tile, end),
                count,
                "step {}: count after {tile}",
                i + 1
            );
            assert_eq!(points_for(count), points, "step {}: points", i + 1);
            let shown: u32 = layout.open_ends().map(|e| u32::from(e.value)).sum();
            assert_eq!(
                shown,
                count,
                "step {}: the ends' values add up to the count",
                i + 1
            );
        }
        layout
    }

    fn pips(layout: &Layout) -> Vec<(End, u8)> {
        layout.open_ends().map(|e| (e.end, e.pip)).collect()
    }

    #[test]
    fn example_a_lone_lead() {
        let layout = check(&[(t(6, 4), None, 10, 10)]);
        assert_eq!(pips(&layout), vec![(End::Left, 4), (End::Right, 6)]);
        assert_eq!(layout.placements()[0].near, 4, "lower half faces LEFT");
    }

    #[test]
    fn example_b_spinner_led() {
        use End::*;
        let layout = check(&[
            (t(5, 5), None, 10, 10),
            (t(5, 3), Some(Left), 13, 0),
            (t(5, 0), Some(Right), 3, 0),
        ]);
        assert_eq!(
            pips(&layout),
            vec![(Left, 3), (Right, 0), (Up, 5), (Down, 5)]
        );
        check(&[
            (t(5, 5), None, 10, 10),
            (t(5, 3), Some(Left), 13, 0),
            (t(5, 0), Some(Right), 3, 0),
            (t(5, 2), Some(Up), 5, 5),
            (t(3, 3), Some(Left), 8, 0),
            (t(5, 6), Some(Down), 14, 0),
        ]);
    }

    #[test]
    fn example_c_spinner_played_later_every_kind_of_end() {
        use End::*;
        // Lead [1|4]: the 1 faces LEFT.
        let layout = check(&[
            (t(1, 4), None, 5, 5),
            (t(1, 1), Some(Left), 6, 0),
            (t(4, 4), Some(Right), 10, 10),
            (t(4, 3), Some(Right), 5, 5),
            (t(2, 1), Some(Left), 5, 5),
            (t(1, 5), Some(Up), 10, 10),
            (t(5, 5), Some(Up), 15, 15),
            (t(5, 0), Some(Up), 5, 5),
            (t(1, 3), Some(Down), 8, 0),
        ]);
        let spinner = layout.placements()[1];
        assert!(spinner.spinner && spinner.crosswise());
        assert!(
            !layout.placements()[2].spinner,
            "only the first double is the spinner"
        );
        assert_eq!(layout.placements()[6].arm, Arm::End(Up));
        assert_eq!(layout.placements()[6].index, 1);
    }

    #[test]
    fn example_c_up_and_down_open_only_after_both_sides() {
        let mut layout = Layout::new();
        layout.place(t(1, 4), None);
        layout.place(t(1, 1), Some(End::Left));
        assert!(!layout.is_open(End::Up) && !layout.is_open(End::Down));
        layout.place(t(2, 1), Some(End::Left));
        assert!(layout.is_open(End::Up) && layout.is_open(End::Down));
        assert_eq!(pips(&layout)[2..], [(End::Up, 1), (End::Down, 1)]);
    }

    #[test]
    fn example_d_spinner_at_the_end_of_the_line() {
        use End::*;
        let layout = check(&[
            (t(6, 4), None, 10, 10),
            (t(4, 4), Some(Left), 14, 0),
            (t(4, 1), Some(Left), 7, 0),
            (t(4, 3), Some(Up), 10, 10),
        ]);
        assert_eq!(
            pips(&layout),
            vec![(Left, 1), (Right, 6), (Up, 3), (Down, 4)]
        );
    }

    #[test]
    fn a_double_lead_counts_once_and_plays_on_both_sides() {
        let mut layout = Layout::new();
        assert_eq!(layout.place(t(5, 5), None), 10);
        assert_eq!(
            layout.fitting_ends(t(5, 1)).collect::<Vec<_>>(),
            vec![End::Left, End::Right]
        );
        assert_eq!(layout.fitting_ends(t(1, 2)).count(), 0);
        assert_eq!(layout.playable(), TileSet::with_pip(5));
    }

    #[test]
    fn an_empty_layout_takes_any_lead() {
        let layout = Layout::new();
        assert_eq!(layout.playable(), TileSet::FULL);
        assert_eq!(layout.count(), 0);
        assert_eq!(layout.open_ends().count(), 0);
    }

    #[test]
    fn scoring_needs_a_positive_multiple_of_five() {
        assert_eq!(points_for(0), 0);
        assert_eq!(points_for(13), 0);
        assert_eq!(points_for(20), 20);
    }
}
