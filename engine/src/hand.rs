//! One hand of play: the deal, the players' tiles, the boneyard, the layout and whose
//! turn it is (docs/rules.md sections 3 and 4).

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

use super::event::HandResult;
use super::layout::Layout;
use super::replay::{HandAction, MAX_HAND_ACTIONS};
use super::rules::{Rules, Seat};
use super::tile::{TILE_COUNT, Tile, TileSet};

/// A hand being played, or the last one played (then `result` is set).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Hand {
    /// 1-based number of the hand in the game.
    pub(crate) number: u32,
    /// Each seat's tiles (seats past the number of players hold none).
    pub(crate) hands: [TileSet; 4],
    /// The boneyard: `boneyard[..boneyard_len]`, drawn from the back.
    pub(crate) boneyard: [Tile; TILE_COUNT],
    pub(crate) boneyard_len: u8,
    pub(crate) layout: Layout,
    pub(crate) turn: Seat,
    /// How the hand ended, once it has.
    pub(crate) result: Option<HandResult>,
    /// Public knowledge, per seat: a bitmask of the pip numbers (bit `n` for `n` pips)
    /// that the whole table saw the seat show out of, so that no tile it holds has them.
    /// See [`Hand::showed_out`].
    pub(crate) voids: [u8; 4],
    /// Who went out of the hand before, and so leads this one; `None`: drawn at random.
    pub(crate) starter: Option<Seat>,
    /// The plays and draws since the deal, in order: `actions[..actions_len]`.
    pub(crate) actions: [HandAction; MAX_HAND_ACTIONS],
    pub(crate) actions_len: u8,
}

/// The generator for hand `number` of a game: the game's seed picks the key and the
/// hand number the stream, so a hand's deal depends on nothing else.
fn hand_rng(seed: u64, number: u32) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(u64::from(number));
    rng
}

/// A uniform integer in `0..n` (Lemire's method, unbiased). `n` must be positive.
pub(crate) fn below(rng: &mut ChaCha8Rng, n: u32) -> u32 {
    let mut m = u64::from(rng.next_u32()) * u64::from(n);
    if (m as u32) < n {
        let threshold = n.wrapping_neg() % n;
        while (m as u32) < threshold {
            m = u64::from(rng.next_u32()) * u64::from(n);
        }
    }
    (m >> 32) as u32
}

impl Hand {
    /// Shuffles and deals hand `number` (1-based). `starter` is who went out last hand;
    /// without one (the first hand, or after a blocked hand) a seat is drawn at random.
    pub(crate) fn deal(rules: &Rules, seed: u64, number: u32, starter: Option<Seat>) -> Hand {
        let mut rng = hand_rng(seed, number);
        let mut deck: [Tile; TILE_COUNT] = [Tile::DOUBLE_BLANK; TILE_COUNT];
        for (slot, tile) in deck.iter_mut().zip(Tile::all()) {
            *slot = tile;
        }
        for i in (1..TILE_COUNT).rev() {
            let j = below(&mut rng, i as u32 + 1) as usize;
            deck.swap(i, j);
        }
        let size = rules.hand_tiles();
        let mut hands = [TileSet::EMPTY; 4];
        for (seat, hand) in hands.iter_mut().enumerate().take(rules.players) {
            *hand = deck[seat * size..(seat + 1) * size]
                .iter()
                .copied()
                .collect();
        }
        let dealt = rules.players * size;
        let mut boneyard = [Tile::DOUBLE_BLANK; TILE_COUNT];
        boneyard[..TILE_COUNT - dealt].copy_from_slice(&deck[dealt..]);
        let turn = starter
            .filter(|&s| s < rules.players)
            .unwrap_or_else(|| below(&mut rng, rules.players as u32) as Seat);
        Hand {
            number,
            hands,
            boneyard,
            boneyard_len: (TILE_COUNT - dealt) as u8,
            layout: Layout::new(),
            turn,
            result: None,
            voids: [0; 4],
            starter,
            actions: [HandAction::Draw; MAX_HAND_ACTIONS],
            actions_len: 0,
        }
    }

    /// The plays and draws since the deal, in order.
    pub(crate) fn actions(&self) -> &[HandAction] {
        &self.actions[..usize::from(self.actions_len)]
    }

    /// Writes down a play or draw that has happened. A hand holds at most
    /// [`MAX_HAND_ACTIONS`] (every tile played, the largest boneyard drawn out).
    pub(crate) fn write_down(&mut self, action: HandAction) {
        if let Some(slot) = self.actions.get_mut(usize::from(self.actions_len)) {
            *slot = action;
            self.actions_len += 1;
        }
    }

    /// The seat's tiles that fit an open end.
    pub(crate) fn playable(&self, seat: Seat) -> TileSet {
        self.hands[seat].intersection(self.layout.playable())
    }

    /// The tiles left in the boneyard, in draw order reversed (the last is drawn next).
    pub(crate) fn boneyard(&self) -> &[Tile] {
        &self.boneyard[..usize::from(self.boneyard_len)]
    }

    /// The pip numbers a tile must have to be placed now, as a bitmask (bit `n` for
    /// `n` pips); 0 before the lead, when anything may be placed.
    pub(crate) fn end_pips(&self) -> u8 {
        self.layout.open_ends().fold(0, |m, e| m | 1 << e.pip)
    }

    /// Records what the table learns when `seat` draws or passes: it held no tile
    /// matching an open end (docs/rules.md section 5: only a seat without a playable tile
    /// draws or passes).
    ///
    /// What is kept is a mask true of *every* tile the seat holds, so it must stay
    /// true as the seat's hand changes. When a seat shows out, all its tiles lack the
    /// end numbers. A tile it then draws and keeps (not playable) lacks them too, but
    /// may have numbers the seat showed out of earlier, so drawing a kept tile narrows
    /// the mask to the current end numbers (`kept`). A drawn playable tile is played
    /// at once (it is the seat's only legal move), so the earlier mask holds again
    /// for the tiles left after that play; it stays.
    pub(crate) fn showed_out(&mut self, seat: Seat, kept: bool) {
        let ends = self.end_pips();
        self.voids[seat] = if kept { ends } else { self.voids[seat] | ends };
    }

    /// Takes the next tile from the boneyard.
    pub(crate) fn draw(&mut self) -> Option<Tile> {
        let len = self.boneyard_len.checked_sub(1)?;
        self.boneyard_len = len;
        // Blank the slot so equal hands compare equal whatever was drawn.
        Some(std::mem::replace(
            &mut self.boneyard[usize::from(len)],
            Tile::DOUBLE_BLANK,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deal_accounts_for_all_28_tiles() {
        for players in 2..=4 {
            let rules = Rules::for_players(players);
            let hand = Hand::deal(&rules, 7, 1, None);
            let mut all = TileSet::EMPTY;
            let mut count = 0;
            for seat in 0..players {
                assert_eq!(hand.hands[seat].len(), rules.hand_tiles());
                all = all.union(hand.hands[seat]);
                count += hand.hands[seat].len();
            }
            for &t in hand.boneyard() {
                all.insert(t);
                count += 1;
            }
            assert_eq!((all, count), (TileSet::FULL, 28));
            assert!(hand.turn < players);
        }
    }

    #[test]
    fn a_hands_deal_depends_only_on_seed_and_number() {
        let rules = Rules::for_players(3);
        assert_eq!(
            Hand::deal(&rules, 42, 3, Some(1)),
            Hand::deal(&rules, 42, 3, Some(1))
        );
        assert_ne!(
            Hand::deal(&rules, 42, 3, None).hands,
            Hand::deal(&rules, 42, 4, None).hands
        );
        assert_ne!(
            Hand::deal(&rules, 42, 3, None).hands,
            Hand::deal(&rules, 43, 3, None).hands
        );
    }

    #[test]
    fn the_random_starter_is_any_seat() {
        let rules = Rules::for_players(4);
        let mut seen = [false; 4];
        for seed in 0..64 {
            seen[Hand::deal(&rules, seed, 1, None).turn] = true;
        }
        assert_eq!(seen, [true; 4]);
        assert_eq!(
            Hand::deal(&rules, 5, 2, Some(3)).turn,
            3,
            "the player who went out leads"
        );
    }

    #[test]
    fn below_is_in_range() {
        let mut rng = hand_rng(1, 1);
        for n in 1..40 {
            for _ in 0..50 {
                assert!(below(&mut rng, n) < n);
            }
        }
    }
}
