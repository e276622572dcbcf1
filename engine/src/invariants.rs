//! The invariants every game the engine makes keeps, checked by the property tests
//! after every action and by the knowledge tests on sampled worlds: every tile in
//! exactly one place, seats and sides in range, scores matching the sheet, what a seat
//! showed out of true of its tiles, and a turn the rules could have reached. Test code
//! only: a game in memory is always one the engine's moves made (a token's game is
//! replayed, [`crate::replay`]), so nothing outside the tests needs to check it.

use super::error::Phase;
use super::game::Game;
use super::tile::TileSet;

/// The first inconsistency found, named for logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("inconsistent game: {0}")]
pub struct Inconsistency(pub &'static str);

impl Game {
    /// Checks everything a game made by the engine guarantees.
    pub(crate) fn check(&self) -> Result<(), Inconsistency> {
        let totals = self.sheet.totals();
        let fail = |what| Err(Inconsistency(what));
        if self.rules.validate().is_err() {
            return fail("rule options");
        }
        let players = self.rules.players;
        let sides = self.rules.sides();
        if self.scores[sides..].iter().any(|&s| s != 0) {
            return fail("score of a side that does not exist");
        }
        if totals != self.scores {
            return fail("scores differ from the sheet");
        }
        if self.next_starter.is_some_and(|s| s >= players) {
            return fail("next starter out of range");
        }
        let target = self.rules.target as i32;
        match self.winner {
            Some(w) if w >= sides || self.scores[w] < target => return fail("winner"),
            None if self.scores.iter().any(|&s| s >= target) => {
                return fail("target reached, no winner");
            }
            _ => {}
        }
        let Some(hand) = &self.hand else {
            return if self.hands_dealt == 0 {
                Ok(())
            } else {
                fail("hands dealt without a hand")
            };
        };
        if hand.number != self.hands_dealt || hand.number == 0 {
            return fail("hand number");
        }
        if hand.turn >= players {
            return fail("turn out of range");
        }
        // Every tile in one place: the hands, the boneyard and the table as bitmasks,
        // `twice` collecting every tile met a second time.
        let mut seen = 0u32;
        let mut twice = 0u32;
        let mut count = 0u32;
        for h in hand.hands {
            twice |= seen & h.bits();
            seen |= h.bits();
            count += h.bits().count_ones();
        }
        for &tile in hand.boneyard() {
            let bit = 1u32 << tile.index();
            twice |= seen & bit;
            seen |= bit;
            count += 1;
        }
        // The table's tiles as a set (`Layout::tiles`): one of them placed twice would
        // leave the set smaller than the placements.
        let table = hand.layout.tiles().bits();
        let placed = hand.layout.placements().len() as u32;
        twice |= (seen & table) | u32::from(table.count_ones() != placed);
        count += placed;
        if twice != 0 {
            return fail("a tile in two places");
        }
        if count != 28 {
            return fail("tiles missing");
        }
        if hand.hands[players..].iter().any(|h| !h.is_empty()) {
            return fail("tiles held by a seat that does not exist");
        }
        if hand.voids[players..].iter().any(|&v| v != 0) || hand.voids.iter().any(|&v| v >= 1 << 7)
        {
            return fail("voids out of range");
        }
        // What the table saw a seat show out of is true of every tile it holds, except
        // for the seat on turn right after drawing a playable tile: then that tile is
        // the one it holds with such a number, every open end is one it showed out of
        // (it had to draw), so the drawn tile is its only move, and once it is played
        // the rule holds again. (Exempting the seat on turn outright let a forged
        // state through whose seat then kept such a tile past its turn: found by the
        // `engine` fuzz target.)
        let playing = self.phase() == Phase::Playing;
        for seat in 0..players {
            let voids = hand.voids[seat];
            let showing = hand.hands[seat].intersection(TileSet::with_any_pip(voids));
            if showing.is_empty() {
                continue;
            }
            let just_drew = playing
                && seat == hand.turn
                && showing.len() == 1
                && hand.end_pips() & !voids == 0
                && hand.playable(seat) == showing;
            if !just_drew {
                return fail("a seat holds a number it showed out of");
            }
        }
        // A forfeit's result shows no hand (`Game::end_hand`).
        if let Some(result) = &hand.result
            && (result.hand != hand.number
                || (result.hands != hand.hands
                    && !matches!(result.end, crate::HandEnd::Forfeit { .. })))
        {
            return fail("hand result differs from the hand");
        }
        if playing {
            // A hand in play: nobody has gone out, and the seat on turn can act (it was
            // not owed an automatic pass).
            if hand.hands[..players].iter().any(|h| h.is_empty()) {
                return fail("a seat went out but the hand goes on");
            }
            if hand.boneyard().is_empty() && hand.playable(hand.turn).is_empty() {
                return fail("the seat on turn can neither play nor draw");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::tests::t;
    use crate::{Game, Rules};

    #[test]
    fn a_dealt_game_is_consistent_and_a_tampered_one_is_not() {
        let mut game = Game::new(Rules::for_players(3), 4).unwrap();
        assert_eq!(game.check(), Ok(()));
        game.deal().unwrap();
        assert_eq!(game.check(), Ok(()));

        let mut g = game.clone();
        let tile = g.hand(0).iter().next().unwrap();
        g.hand.as_mut().unwrap().hands[1].insert(tile);
        assert_eq!(g.check(), Err(Inconsistency("a tile in two places")));

        let mut g = game.clone();
        g.hand.as_mut().unwrap().hands[0].remove(tile);
        assert_eq!(g.check(), Err(Inconsistency("tiles missing")));

        let mut g = game.clone();
        g.hand.as_mut().unwrap().turn = 3;
        assert_eq!(g.check(), Err(Inconsistency("turn out of range")));

        let mut g = game.clone();
        g.scores[0] = 5;
        assert_eq!(
            g.check(),
            Err(Inconsistency("scores differ from the sheet"))
        );

        let mut g = game.clone();
        g.winner = Some(1);
        assert_eq!(g.check(), Err(Inconsistency("winner")));

        let mut g = game.clone();
        let seat = (g.turn().unwrap() + 1) % 3;
        let pip = g.hand(seat).iter().next().unwrap().lo();
        g.hand.as_mut().unwrap().voids[seat] = 1 << pip;
        assert_eq!(
            g.check(),
            Err(Inconsistency("a seat holds a number it showed out of"))
        );

        // The seat on turn may hold one such tile only right after drawing it, playable,
        // with nothing else to play.
        let mut g = game.clone();
        let seat = g.turn().unwrap();
        let pip = g.hand(seat).iter().next().unwrap().lo();
        g.hand.as_mut().unwrap().voids[seat] = 1 << pip;
        assert_eq!(
            g.check(),
            Err(Inconsistency("a seat holds a number it showed out of"))
        );

        let mut g = game.clone();
        g.hand.as_mut().unwrap().voids[3] = 1;
        assert_eq!(g.check(), Err(Inconsistency("voids out of range")));

        let mut g = game;
        g.hand.as_mut().unwrap().hands[3].insert(t(6, 6));
        assert!(g.check().is_err());
    }
}
