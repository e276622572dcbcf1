//! What one seat (or a spectator) may see of a game: the only window the service shows
//! (RULES.md section 10). Other hands, the boneyard's order and the seed are not in it.

use super::error::{Error, Phase};
use super::event::HandResult;
use super::game::{Game, Move};
use super::layout::{OpenEnd, Placement};
use super::rules::{Rules, Seat, Side};
use super::tile::TileSet;

/// The table as `viewer` sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
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
    pub placements: Vec<Placement>,
    pub open_ends: Vec<OpenEnd>,
    /// The count the open ends show.
    pub count: u32,
    /// Score per side (per seat, or per team in a partnership).
    pub scores: Vec<i32>,
    /// Tiles in each seat's hand.
    pub hand_sizes: Vec<usize>,
    /// Tiles in the boneyard.
    pub boneyard: usize,
    /// The viewer's own tiles (`None` for a spectator).
    pub hand: Option<TileSet>,
    /// The viewer's legal placements with their points, when it is the viewer's turn.
    pub legal_moves: Vec<Move>,
    /// It is the viewer's turn and it holds nothing playable: it must draw.
    pub must_draw: bool,
    pub winner: Option<Side>,
    /// How the last hand ended, with every hand shown, once it has ended.
    pub last_result: Option<HandResult>,
}

impl Game {
    /// What `viewer` may see (`None`: a spectator, who sees no hand).
    pub fn view(&self, viewer: Option<Seat>) -> Result<View, Error> {
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
            placements: layout.map(|l| l.placements().to_vec()).unwrap_or_default(),
            open_ends: layout.map(|l| l.open_ends().collect()).unwrap_or_default(),
            count: layout.map_or(0, |l| l.count()),
            scores: self.scores().to_vec(),
            hand_sizes: self.hand_sizes().collect(),
            boneyard: self.boneyard_len(),
            hand: viewer.map(|s| self.hand(s)),
            legal_moves,
            must_draw: on_turn && self.must_draw(),
            winner: self.winner(),
            last_result: self.last_result().copied(),
        })
    }
}
