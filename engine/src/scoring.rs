//! Settling a finished hand: rounding and both settlement rules (docs/rules.md section 8).

use super::rules::{Rules, SettlementRule, Side};
use super::tile::TileSet;

/// Rounds to the nearest multiple of five: a remainder of 1 or 2 rounds down, 3 or 4 up.
pub fn round_to_five(pips: u32) -> u32 {
    (pips + 2) / 5 * 5
}

/// How a hand ended, for settlement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Finish {
    /// This seat placed its last tile.
    Domino(usize),
    /// Nobody could play and the boneyard was empty.
    Blocked,
}

/// Score changes per side from settling a hand: `hands[seat]` are the tiles left.
pub fn settle(rules: &Rules, hands: &[TileSet], finish: Finish) -> [i32; 4] {
    let mut delta = [0i32; 4];
    let rounded = |seat: usize| round_to_five(hands[seat].pips()) as i32;
    let seats = 0..rules.players;
    match rules.settlement {
        SettlementRule::OwnPipsOff => {
            for seat in seats {
                delta[rules.side_of(seat)] -= rounded(seat);
            }
        }
        SettlementRule::WinnerTakesPips => {
            let winner: Option<Side> = match finish {
                Finish::Domino(seat) => Some(rules.side_of(seat)),
                Finish::Blocked => lightest_side(rules, hands),
            };
            if let Some(side) = winner {
                for seat in seats.filter(|&s| rules.side_of(s) != side) {
                    delta[side] += rounded(seat);
                }
            }
        }
    }
    delta
}

/// The side holding the fewest raw pips (partners' pips added), or `None` on a tie.
fn lightest_side(rules: &Rules, hands: &[TileSet]) -> Option<Side> {
    let mut pips = [0u32; 4];
    for (seat, hand) in hands.iter().enumerate().take(rules.players) {
        pips[rules.side_of(seat)] += hand.pips();
    }
    let pips = &pips[..rules.sides()];
    let least = pips.iter().copied().min()?;
    let mut lightest = pips.iter().enumerate().filter(|&(_, &p)| p == least);
    match (lightest.next(), lightest.next()) {
        (Some((side, _)), None) => Some(side),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tile::Tile;

    fn hand(tiles: &[(u8, u8)]) -> TileSet {
        tiles
            .iter()
            .map(|&(a, b)| Tile::new(a, b).unwrap())
            .collect()
    }

    #[test]
    fn the_rounding_table() {
        for (pips, rounded) in [(7, 5), (8, 10), (2, 0), (13, 15), (27, 25), (28, 30)] {
            assert_eq!(round_to_five(pips), rounded, "{pips}");
        }
        for (pips, rounded) in [(0, 0), (1, 0), (3, 5), (4, 5), (5, 5), (6, 5), (9, 10)] {
            assert_eq!(round_to_five(pips), rounded, "{pips}");
        }
    }

    #[test]
    fn own_pips_off_takes_each_players_rounded_pips_from_their_own_score() {
        let rules = Rules::for_players(3);
        // 0 pips, 8 -> 10, 7 -> 5.
        let hands = [hand(&[]), hand(&[(2, 6)]), hand(&[(3, 4)])];
        assert_eq!(settle(&rules, &hands, Finish::Domino(0)), [0, -10, -5, 0]);
        // Blocked: the same, the player with tiles loses too.
        let hands = [hand(&[(0, 1)]), hand(&[(2, 6)]), hand(&[(3, 4)])];
        assert_eq!(settle(&rules, &hands, Finish::Blocked), [0, -10, -5, 0]);
    }

    #[test]
    fn own_pips_off_in_a_partnership_takes_each_partners_rounded_amount_from_the_team() {
        let mut rules = Rules::for_players(4);
        rules.partnership = true;
        // Seat 0: 7 -> 5; seat 2: 8 -> 10 (team 0 loses 15, not round(15) of raw 15).
        // Seat 1: 2 -> 0; seat 3: 3 -> 5.
        let hands = [
            hand(&[(3, 4)]),
            hand(&[(1, 1)]),
            hand(&[(2, 6)]),
            hand(&[(0, 3)]),
        ];
        assert_eq!(settle(&rules, &hands, Finish::Blocked), [-15, -5, 0, 0]);
    }

    #[test]
    fn winner_takes_each_opponents_hand_rounded_separately() {
        let mut rules = Rules::for_players(3);
        rules.settlement = SettlementRule::WinnerTakesPips;
        // 7 -> 5 and 8 -> 10: 15 (rounding the sum, 15, would agree here; 6+6 below not).
        let hands = [hand(&[]), hand(&[(3, 4)]), hand(&[(2, 6)])];
        assert_eq!(settle(&rules, &hands, Finish::Domino(0)), [15, 0, 0, 0]);
        // 8 -> 10 each: 20, where rounding the total 16 would give 15.
        let hands = [hand(&[(2, 6)]), hand(&[]), hand(&[(4, 4)])];
        assert_eq!(settle(&rules, &hands, Finish::Domino(1)), [0, 20, 0, 0]);
    }

    #[test]
    fn winner_takes_opponents_tiles_only_in_a_partnership() {
        let mut rules = Rules::for_players(4);
        rules.partnership = true;
        rules.settlement = SettlementRule::WinnerTakesPips;
        // Seat 0 went out; partner seat 2's tiles are not counted; 7 -> 5, 8 -> 10.
        let hands = [hand(&[]), hand(&[(3, 4)]), hand(&[(6, 6)]), hand(&[(2, 6)])];
        assert_eq!(settle(&rules, &hands, Finish::Domino(0)), [15, 0, 0, 0]);
    }

    #[test]
    fn blocked_hand_goes_to_the_fewest_raw_pips() {
        let mut rules = Rules::for_players(3);
        rules.settlement = SettlementRule::WinnerTakesPips;
        let hands = [hand(&[(3, 4)]), hand(&[(0, 1)]), hand(&[(2, 6)])];
        // Seat 1 holds 1 pip: takes 7 -> 5 and 8 -> 10.
        assert_eq!(settle(&rules, &hands, Finish::Blocked), [0, 15, 0, 0]);
    }

    #[test]
    fn blocked_hand_tie_for_fewest_scores_nobody() {
        let mut rules = Rules::for_players(3);
        rules.settlement = SettlementRule::WinnerTakesPips;
        // Raw 7 and 7 tie (both round to 5 too), 9 is heaviest.
        let hands = [hand(&[(3, 4)]), hand(&[(2, 5)]), hand(&[(3, 6)])];
        assert_eq!(settle(&rules, &hands, Finish::Blocked), [0; 4]);
        // Raw 6 and 7 both round to 5 but are not tied: raw pips decide.
        let hands = [hand(&[(2, 4)]), hand(&[(2, 5)]), hand(&[(3, 6)])];
        assert_eq!(settle(&rules, &hands, Finish::Blocked), [15, 0, 0, 0]);
    }

    #[test]
    fn blocked_partnership_adds_partners_pips_and_ties_score_nobody() {
        let mut rules = Rules::for_players(4);
        rules.partnership = true;
        rules.settlement = SettlementRule::WinnerTakesPips;
        // Team 0: 1 + 12 = 13; team 1: 6 + 6 = 12 -> team 1 takes 0 (1 -> 0) + 10 (12 -> 10).
        let hands = [
            hand(&[(0, 1)]),
            hand(&[(1, 5)]),
            hand(&[(6, 6)]),
            hand(&[(2, 4)]),
        ];
        assert_eq!(settle(&rules, &hands, Finish::Blocked), [0, 10, 0, 0]);
        // 6 + 6 against 5 + 7: tie, nobody scores.
        let hands = [
            hand(&[(1, 5)]),
            hand(&[(0, 5)]),
            hand(&[(2, 4)]),
            hand(&[(3, 4)]),
        ];
        assert_eq!(settle(&rules, &hands, Finish::Blocked), [0; 4]);
    }
}
