//! What one seat (or a spectator) may see of a game: the only window the service shows
//! (docs/rules.md section 10). Other hands, the boneyard's order and the seed are not in it.

use super::clock::Why;
use super::error::{Error, Phase};
use super::event::HandResult;
use super::game::{Game, Move};
use super::layout::{OpenEnd, Placement};
use super::rules::{Rules, Seat, Side};
use super::tile::TileSet;

/// The table as `viewer` sees it; it borrows the game's public parts (the layout, the
/// scores) rather than copying them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View<'a> {
    /// The seat looking, or `None` for a spectator.
    pub viewer: Option<Seat>,
    pub rules: Rules,
    pub phase: Phase,
    /// 1-based number of the current (or last) hand; 0 before the first deal.
    pub hand_number: u32,
    /// Actions applied so far: a caller keeping tokens can spot a stale one by it.
    pub moves: u32,
    /// The seat to act, while a hand is in play.
    pub turn: Option<Seat>,
    /// Every tile on the table, in the order played.
    pub placements: &'a [Placement],
    /// The open ends, in the order LEFT, RIGHT, UP, DOWN, the closed ones left out.
    pub open_ends: OpenEnds,
    /// The count the open ends show.
    pub count: u32,
    /// Score per side (per seat, or per team in a partnership).
    pub scores: &'a [i32],
    /// Tiles in each seat's hand.
    pub hand_sizes: HandSizes,
    /// Tiles in the boneyard.
    pub boneyard: usize,
    /// The viewer's own tiles (`None` for a spectator).
    pub hand: Option<TileSet>,
    /// The viewer's legal placements with their points, when it is the viewer's turn.
    pub legal_moves: Vec<Move>,
    /// It is the viewer's turn and it holds nothing playable: it must draw.
    pub must_draw: bool,
    pub winner: Option<Side>,
    /// How the last hand ended, with every hand shown (none for a forfeit), once it has
    /// ended.
    pub last_result: Option<HandResult>,
    /// The seat that forfeited the match, and why.
    pub forfeit: Option<(Seat, Why)>,
}

/// The open ends of a layout, at most four, held without allocating.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenEnds {
    ends: [Option<OpenEnd>; 4],
}

impl OpenEnds {
    pub fn iter(&self) -> impl Iterator<Item = &OpenEnd> {
        self.ends.iter().flatten()
    }
}

impl FromIterator<OpenEnd> for OpenEnds {
    fn from_iter<I: IntoIterator<Item = OpenEnd>>(ends: I) -> OpenEnds {
        let mut out = OpenEnds::default();
        for (slot, end) in out.ends.iter_mut().zip(ends) {
            *slot = Some(end);
        }
        out
    }
}

/// Tiles in each seat's hand, one per seat (at most four), held without allocating;
/// derefs to the slice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HandSizes {
    sizes: [usize; 4],
    seats: usize,
}

impl std::ops::Deref for HandSizes {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        &self.sizes[..self.seats]
    }
}

impl FromIterator<usize> for HandSizes {
    /// The first four sizes of `sizes`: a table has at most four seats.
    fn from_iter<I: IntoIterator<Item = usize>>(sizes: I) -> HandSizes {
        let mut out = HandSizes::default();
        for (slot, size) in out.sizes.iter_mut().zip(sizes) {
            *slot = size;
            out.seats += 1;
        }
        out
    }
}

impl Game {
    /// What `viewer` may see (`None`: a spectator, who sees no hand).
    pub fn view(&self, viewer: Option<Seat>) -> Result<View<'_>, Error> {
        if let Some(seat) = viewer.filter(|&s| s >= self.rules.players) {
            return Err(Error::InvalidSeat {
                seat,
                players: self.rules.players,
            });
        }
        let on_turn = viewer.is_some() && viewer == self.turn();
        let mut legal_moves = Vec::new();
        if on_turn {
            self.legal_moves_into(&mut legal_moves);
        }
        let layout = self.layout();
        Ok(View {
            viewer,
            rules: self.rules,
            phase: self.phase(),
            hand_number: self.hand_number(),
            moves: self.moves(),
            turn: self.turn(),
            placements: layout.map_or(&[], |l| l.placements()),
            open_ends: layout.map(|l| l.open_ends().collect()).unwrap_or_default(),
            count: layout.map_or(0, |l| l.count()),
            scores: self.scores(),
            hand_sizes: self.hand_sizes().collect(),
            boneyard: self.boneyard_len(),
            hand: viewer.map(|s| self.hand(s)),
            legal_moves,
            must_draw: on_turn && self.must_draw(),
            winner: self.winner(),
            last_result: self.last_result().copied(),
            forfeit: self.forfeit(),
        })
    }
}
