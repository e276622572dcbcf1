//! What one seat may know of a hand in play, and the hidden worlds consistent with it.
//!
//! [`Knowledge`] is everything a player at the table can see or remember: its own
//! tiles, the layout (so every tile played), each hand's size, the boneyard's size,
//! the scores, whose turn it is, and the numbers each seat was seen to show out of by
//! drawing or passing ([`Game::voids`]). It holds nothing else: not the other hands,
//! not the boneyard's order, not the seed. The suggesting bots ([`super::suggest`])
//! take a `Knowledge` and never a [`Game`], so they are fair by construction: two games
//! that look the same from a seat give that seat the same `Knowledge`, and so the same
//! suggestion.
//!
//! [`Knowledge::sample`] deals the unseen tiles out again at random, consistent with
//! what is known (hand sizes, shown-out numbers): one "determinization" of the hidden
//! state, for search.

use rand_chacha::ChaCha8Rng;

use super::error::{Error, Phase};
use super::game::Game;
use super::hand::{Hand, below};
use super::layout::Layout;
use super::replay::{HandAction, MAX_HAND_ACTIONS};
use super::rules::{Rules, Seat};
use super::sheet::{ScoreSheet, SheetRow};
use super::tile::{TILE_COUNT, Tile, TileSet};

/// What `seat` may know of the hand in play. Built by [`Game::knowledge`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Knowledge {
    pub rules: Rules,
    /// The seat knowing.
    pub seat: Seat,
    /// The seat on turn.
    pub turn: Seat,
    /// 1-based number of the hand in play.
    pub hand_number: u32,
    /// Actions applied so far in the match.
    pub moves: u32,
    /// The seat's own tiles.
    pub own: TileSet,
    /// The table.
    pub layout: Layout,
    /// Tiles in each seat's hand (0 past the number of players).
    pub hand_sizes: [u8; 4],
    /// Tiles in the boneyard.
    pub boneyard: u8,
    /// Per seat, the pip numbers it showed out of (see [`Game::voids`]).
    pub voids: [u8; 4],
    /// Score per side (0 past the number of sides).
    pub scores: [i32; 4],
}

impl Game {
    /// What `seat` may know of the hand in play. Errors when no hand is in play or the
    /// seat does not exist.
    pub fn knowledge(&self, seat: Seat) -> Result<Knowledge, Error> {
        let players = self.rules.players;
        if seat >= players {
            return Err(Error::InvalidSeat { seat, players });
        }
        let phase = self.phase();
        let hand = match (&self.hand, phase) {
            (Some(hand), Phase::Playing) => hand,
            (_, Phase::Over) => return Err(Error::GameOver),
            _ => return Err(Error::WrongPhase { phase }),
        };
        let mut hand_sizes = [0u8; 4];
        for (size, tiles) in hand_sizes.iter_mut().zip(&hand.hands[..players]) {
            *size = tiles.len() as u8;
        }
        let mut voids = [0u8; 4];
        voids[..players].copy_from_slice(&hand.voids[..players]);
        Ok(Knowledge {
            rules: self.rules,
            seat,
            turn: hand.turn,
            hand_number: hand.number,
            moves: self.moves,
            own: hand.hands[seat],
            layout: hand.layout.clone(),
            hand_sizes,
            boneyard: hand.boneyard_len,
            voids,
            scores: self.scores,
        })
    }
}

impl Game {
    /// The same game as `seat` sees it, with the tiles it cannot see (other hands, the
    /// boneyard and its order) dealt again at random, consistent with everything the
    /// table knows. For tests of fairness: a fair bot must advise `seat` the same in
    /// both games. Errors as [`Game::knowledge`]. Test code only: such a game is no
    /// match legal moves made.
    #[cfg(test)]
    pub(crate) fn redeal_hidden(&self, seat: Seat, rng: &mut ChaCha8Rng) -> Result<Game, Error> {
        let world = self.knowledge(seat)?.sample(rng);
        let mut game = self.clone();
        if let (Some(hand), Some(sampled)) = (game.hand.as_mut(), world.hand) {
            hand.hands = sampled.hands;
            hand.boneyard = sampled.boneyard;
        }
        Ok(game)
    }
}

impl Knowledge {
    /// The tiles the seat cannot see: in other hands or the boneyard.
    pub fn unseen(&self) -> TileSet {
        let seen = self.own.union(self.layout.tiles());
        TileSet::from_bits(TileSet::FULL.bits() & !seen.bits()).unwrap_or(TileSet::EMPTY)
    }

    /// A game whose hidden tiles are dealt at random among the other hands and the
    /// boneyard, consistent with this knowledge: the known hand sizes, and no seat
    /// holding a number it showed out of. The seat's own hand, the layout, the turn
    /// and the scores are as known; the score sheet is one carried row and the seed is 0 (a
    /// sampled game is for playing out the hand in play, not for dealing new ones).
    ///
    /// The most constrained seat picks first, from a fresh shuffle, so the sample is
    /// close to uniform among consistent deals. If the shown-out numbers cannot all be
    /// honoured (they always can for knowledge taken from a real game, but a greedy
    /// pick may paint itself into a corner), a few reshuffles are tried and then the
    /// constraint is dropped for the tiles left over rather than failing.
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> Game {
        let players = self.rules.players;
        let mut pool = [Tile::DOUBLE_BLANK; TILE_COUNT];
        let mut n = 0;
        for tile in self.unseen().iter() {
            pool[n] = tile;
            n += 1;
        }
        let pool = &mut pool[..n];
        let mut order: [Seat; 4] = [0, 1, 2, 3];
        let others = &mut order[..players];
        // Most constrained first: the most numbers shown out of.
        others.sort_by_key(|&s| std::cmp::Reverse(self.voids[s].count_ones()));
        let mut hands = [TileSet::EMPTY; 4];
        hands[self.seat] = self.own;
        let mut rest = [Tile::DOUBLE_BLANK; TILE_COUNT];
        let mut rest_len = 0;
        for attempt in 0..4 {
            shuffle(pool, rng);
            let mut taken = TileSet::EMPTY;
            let mut ok = true;
            for &seat in others.iter().filter(|&&s| s != self.seat) {
                let barred = TileSet::with_any_pip(self.voids[seat]);
                let want = usize::from(self.hand_sizes[seat]);
                let mut got = TileSet::EMPTY;
                for &tile in pool.iter() {
                    if got.len() == want {
                        break;
                    }
                    let allowed = attempt == 3 || !barred.contains(tile);
                    if allowed && !taken.contains(tile) {
                        got.insert(tile);
                        taken.insert(tile);
                    }
                }
                ok &= got.len() == want;
                hands[seat] = got;
            }
            if !ok {
                // Retry; the last attempt ignores shown-out numbers and cannot fail.
                continue;
            }
            rest_len = 0;
            for &tile in pool.iter().filter(|&&t| !taken.contains(t)) {
                rest[rest_len] = tile;
                rest_len += 1;
            }
            break;
        }
        let mut boneyard = [Tile::DOUBLE_BLANK; TILE_COUNT];
        let len = rest_len.min(usize::from(self.boneyard));
        boneyard[..len].copy_from_slice(&rest[..len]);
        Game {
            rules: self.rules,
            seed: 0,
            hands_dealt: self.hand_number,
            hand: Some(Hand {
                number: self.hand_number,
                hands,
                boneyard,
                boneyard_len: len as u8,
                layout: self.layout.clone(),
                turn: self.turn,
                result: None,
                voids: self.voids,
                // A world for search, never written down or sealed: no history.
                starter: None,
                actions: [HandAction::Draw; MAX_HAND_ACTIONS],
                actions_len: 0,
            }),
            scores: self.scores,
            // One carried row holding the scores, so the sheet agrees with them.
            sheet: ScoreSheet::from_parts(
                Some(SheetRow {
                    first_hand: 1,
                    last_hand: self.hand_number,
                    play: self.scores,
                    settlement: [0; 4],
                }),
                Vec::new(),
            ),
            next_starter: None,
            winner: None,
            forfeit: None,
            moves: self.moves,
        }
    }
}

/// Fisher-Yates with an unbiased index (Lemire's method).
fn shuffle(tiles: &mut [Tile], rng: &mut ChaCha8Rng) {
    for i in (1..tiles.len()).rev() {
        let j = below(rng, i as u32 + 1) as usize;
        tiles.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bot::{Strategy, choose};
    use rand_chacha::rand_core::SeedableRng;

    /// Plays `n` greedy actions into a fresh game (dealing first).
    fn game_after(players: usize, seed: u64, n: usize) -> Game {
        let mut game = Game::new(Rules::for_players(players), seed).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut scratch = Vec::new();
        let mut events = Vec::new();
        game.deal().unwrap();
        for _ in 0..n {
            if game.phase() != Phase::Playing {
                break;
            }
            let action = choose(&game, Strategy::Greedy, &mut rng, &mut scratch).unwrap();
            game.apply(action, &mut events).unwrap();
        }
        game
    }

    #[test]
    fn knowledge_holds_nothing_hidden_and_samples_agree_with_it() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for players in 2..=4 {
            for seed in 0..40 {
                let game = game_after(players, seed, (seed % 25) as usize);
                let Some(turn) = game.turn() else { continue };
                let k = game.knowledge(turn).unwrap();
                assert_eq!(k.own, game.hand(turn));
                for _ in 0..20 {
                    let world = k.sample(&mut rng);
                    // The same table as seen from the seat, with all 28 tiles placed.
                    assert_eq!(world.knowledge(turn).unwrap(), k);
                    assert_eq!(world.check(), Ok(()), "{world:?}");
                }
            }
        }
    }

    #[test]
    fn sampled_hands_respect_the_numbers_a_seat_showed_out_of() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut constrained = 0;
        for seed in 0..300 {
            let game = game_after(2, seed, 12);
            let Some(turn) = game.turn() else { continue };
            let k = game.knowledge(turn).unwrap();
            let other = 1 - turn;
            if k.voids[other] == 0 {
                continue;
            }
            constrained += 1;
            let barred = TileSet::with_any_pip(k.voids[other]);
            for _ in 0..10 {
                let world = k.sample(&mut rng);
                assert!(world.hand(other).intersection(barred).is_empty());
            }
        }
        assert!(
            constrained > 20,
            "only {constrained} games had a shown-out seat"
        );
    }

    #[test]
    fn knowledge_needs_a_hand_in_play_and_a_real_seat() {
        let mut game = Game::new(Rules::for_players(2), 1).unwrap();
        assert!(matches!(game.knowledge(0), Err(Error::WrongPhase { .. })));
        game.deal().unwrap();
        assert!(matches!(
            game.knowledge(2),
            Err(Error::InvalidSeat { seat: 2, .. })
        ));
    }
}
