//! The game (a "match"): rule options, seed, scores, the hand in play, and the actions
//! that move it on: deal, play, draw (docs/rules.md sections 4, 5, 8, 9 and 10).
//!
//! Every action is checked in full before anything changes, so an error leaves the game
//! exactly as it was. Passes are automatic: when the seat on turn cannot play and the
//! boneyard is empty it passes at once, and a hand nobody can go on with ends blocked
//! the moment that is so.

use super::clock::Why;
use super::error::{Error, Phase};
use super::event::{Event, HandEnd, HandResult};
use super::hand::Hand;
use super::layout::{End, Layout, points_for};
use super::replay::HandAction;
use super::rules::{Rules, Seat, Side};
use super::scoring::{Finish, settle};
use super::sheet::ScoreSheet;
use super::tile::{Tile, TileSet};

/// Something a seat (or the table, for a deal) does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Deal the next hand.
    Deal,
    /// Place `tile`; `end` may be left out for the lead or when the tile fits one end.
    Play {
        seat: Seat,
        tile: Tile,
        end: Option<End>,
    },
    /// Take one tile from the boneyard (only with no playable tile).
    Draw { seat: Seat },
    /// `seat` forfeits the match (section 11): any time after the first deal until the
    /// match is over, whoever is on turn.
    Forfeit { seat: Seat, why: Why },
}

/// A legal placement for the seat on turn and what it would score.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Move {
    pub tile: Tile,
    /// `None` for the lead.
    pub end: Option<End>,
    pub points: u32,
}

/// A whole game of All Fives.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Game {
    pub(crate) rules: Rules,
    pub(crate) seed: u64,
    /// Hands dealt so far.
    pub(crate) hands_dealt: u32,
    /// The hand in play, or the last one played.
    pub(crate) hand: Option<Hand>,
    /// Score per side.
    pub(crate) scores: [i32; 4],
    pub(crate) sheet: ScoreSheet,
    /// Who leads the next hand: the seat that went out; `None` means a random seat.
    pub(crate) next_starter: Option<Seat>,
    pub(crate) winner: Option<Side>,
    /// The seat that forfeited the match, and why.
    pub(crate) forfeit: Option<(Seat, Why)>,
    /// Actions applied so far (deals, plays, draws and a forfeit).
    pub(crate) moves: u32,
}

impl Game {
    /// A new game under `rules` whose every random choice comes from `seed`.
    pub fn new(rules: Rules, seed: u64) -> Result<Game, Error> {
        rules.validate()?;
        Ok(Game::before_the_first_deal(rules, seed))
    }

    /// [`Game::new`] without checking the rules: for a caller that has
    /// ([`Game::replay`]).
    pub(crate) fn before_the_first_deal(rules: Rules, seed: u64) -> Game {
        Game {
            rules,
            seed,
            hands_dealt: 0,
            hand: None,
            scores: [0; 4],
            sheet: ScoreSheet::default(),
            next_starter: None,
            winner: None,
            forfeit: None,
            moves: 0,
        }
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The secret seed; never shown to players.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn phase(&self) -> Phase {
        if self.winner.is_some() {
            Phase::Over
        } else if self.hand.as_ref().is_some_and(|h| h.result.is_none()) {
            Phase::Playing
        } else {
            Phase::Dealing
        }
    }

    /// Number of the current (or last) hand, 0 before the first deal.
    pub fn hand_number(&self) -> u32 {
        self.hands_dealt
    }

    /// Actions applied so far; rises by one with every deal, play and draw.
    pub fn moves(&self) -> u32 {
        self.moves
    }

    /// The seat to act, while a hand is in play.
    pub fn turn(&self) -> Option<Seat> {
        self.playing().map(|h| h.turn)
    }

    /// The layout of the hand in play (or of the last hand); empty before the first.
    pub fn layout(&self) -> Option<&Layout> {
        self.hand.as_ref().map(|h| &h.layout)
    }

    /// Score per side (see [`Rules::side_of`]).
    pub fn scores(&self) -> &[i32] {
        &self.scores[..self.rules.sides()]
    }

    pub fn sheet(&self) -> &ScoreSheet {
        &self.sheet
    }

    /// The winning side, once the game is over.
    pub fn winner(&self) -> Option<Side> {
        self.winner
    }

    /// The seat that forfeited the match, and why; `None` unless one did.
    pub fn forfeit(&self) -> Option<(Seat, Why)> {
        self.forfeit
    }

    /// A seat's tiles (hidden information: show it only to that seat).
    pub fn hand(&self, seat: Seat) -> TileSet {
        match &self.hand {
            Some(h) if seat < self.rules.players => h.hands[seat],
            _ => TileSet::EMPTY,
        }
    }

    /// Tiles in each seat's hand.
    pub fn hand_sizes(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.rules.players).map(|s| self.hand(s).len())
    }

    /// Tiles left in the boneyard.
    pub fn boneyard_len(&self) -> usize {
        self.hand.as_ref().map_or(0, |h| h.boneyard().len())
    }

    /// The pip numbers (bit `n` for `n` pips) the table has seen `seat` show out of in
    /// this hand by drawing or passing: public knowledge that no tile it holds has
    /// them. 0 for a seat out of range or before the first deal.
    pub fn voids(&self, seat: Seat) -> u8 {
        match &self.hand {
            Some(h) if seat < self.rules.players => h.voids[seat],
            _ => 0,
        }
    }

    /// How the last hand ended, once it has (every hand is shown then, but for a
    /// forfeit's).
    pub fn last_result(&self) -> Option<&HandResult> {
        self.hand.as_ref().and_then(|h| h.result.as_ref())
    }

    fn playing(&self) -> Option<&Hand> {
        self.hand
            .as_ref()
            .filter(|h| h.result.is_none() && self.winner.is_none())
    }

    /// The seat on turn must draw: it holds no playable tile and the boneyard has some.
    pub fn must_draw(&self) -> bool {
        self.playing()
            .is_some_and(|h| h.playable(h.turn).is_empty() && !h.boneyard().is_empty())
    }

    /// Appends the legal placements of the seat on turn to `out`, each with the points
    /// it would score. Empty when the seat must draw or no hand is in play.
    pub fn legal_moves_into(&self, out: &mut Vec<Move>) {
        let Some(hand) = self.playing() else { return };
        let layout = &hand.layout;
        if layout.is_empty() {
            for tile in hand.hands[hand.turn].iter() {
                let points = points_for(layout.count_after(tile, None));
                out.push(Move {
                    tile,
                    end: None,
                    points,
                });
            }
            return;
        }
        for tile in hand.playable(hand.turn).iter() {
            for end in layout.fitting_ends(tile) {
                let points = points_for(layout.count_after(tile, Some(end)));
                out.push(Move {
                    tile,
                    end: Some(end),
                    points,
                });
            }
        }
    }

    /// The legal placements of the seat on turn.
    pub fn legal_moves(&self) -> Vec<Move> {
        let mut moves = Vec::new();
        self.legal_moves_into(&mut moves);
        moves
    }

    /// Applies `action`, appending what it caused to `events`. On error nothing changes.
    pub fn apply(&mut self, action: Action, events: &mut Vec<Event>) -> Result<(), Error> {
        match action {
            Action::Deal => self.apply_deal(events),
            Action::Play { seat, tile, end } => self.apply_play(seat, tile, end, events),
            Action::Draw { seat } => self.apply_draw(seat, events),
            Action::Forfeit { seat, why } => self.apply_forfeit(seat, why, events),
        }
    }

    /// Deals the next hand.
    pub fn deal(&mut self) -> Result<Vec<Event>, Error> {
        self.collect(Action::Deal)
    }

    /// Places `tile` for `seat`.
    pub fn play(&mut self, seat: Seat, tile: Tile, end: Option<End>) -> Result<Vec<Event>, Error> {
        self.collect(Action::Play { seat, tile, end })
    }

    /// Draws one tile for `seat`.
    pub fn draw(&mut self, seat: Seat) -> Result<Vec<Event>, Error> {
        self.collect(Action::Draw { seat })
    }

    fn collect(&mut self, action: Action) -> Result<Vec<Event>, Error> {
        let mut events = Vec::new();
        self.apply(action, &mut events)?;
        Ok(events)
    }

    fn apply_deal(&mut self, events: &mut Vec<Event>) -> Result<(), Error> {
        match self.phase() {
            Phase::Over => return Err(Error::GameOver),
            Phase::Playing => {
                return Err(Error::WrongPhase {
                    phase: Phase::Playing,
                });
            }
            Phase::Dealing => {}
        }
        let number = self.hands_dealt + 1;
        let hand = Hand::deal(&self.rules, self.seed, number, self.next_starter);
        events.push(Event::Dealt {
            hand: number,
            starter: hand.turn,
        });
        self.hand = Some(hand);
        self.hands_dealt = number;
        self.sheet.start_hand(number);
        self.moves += 1;
        Ok(())
    }

    /// Checks that `seat` may act now and returns the hand in play.
    fn hand_on_turn(&mut self, seat: Seat) -> Result<&mut Hand, Error> {
        if seat >= self.rules.players {
            return Err(Error::InvalidSeat {
                seat,
                players: self.rules.players,
            });
        }
        match self.phase() {
            Phase::Over => return Err(Error::GameOver),
            Phase::Dealing => {
                return Err(Error::WrongPhase {
                    phase: Phase::Dealing,
                });
            }
            Phase::Playing => {}
        }
        let hand = self.hand.as_mut().ok_or(Error::WrongPhase {
            phase: Phase::Dealing,
        })?;
        if hand.turn != seat {
            return Err(Error::NotYourTurn {
                seat,
                turn: hand.turn,
            });
        }
        Ok(hand)
    }

    fn apply_play(
        &mut self,
        seat: Seat,
        tile: Tile,
        end: Option<End>,
        events: &mut Vec<Event>,
    ) -> Result<(), Error> {
        let hand = self.hand_on_turn(seat)?;
        if !hand.hands[seat].contains(tile) {
            return Err(Error::TileNotInHand(tile));
        }
        let layout = &hand.layout;
        let end = if layout.is_empty() {
            match end {
                Some(e @ (End::Up | End::Down)) => return Err(Error::EndNotOpen(e)),
                _ => None,
            }
        } else {
            match end {
                Some(e) if !layout.is_open(e) => return Err(Error::EndNotOpen(e)),
                Some(e) if !layout.fits(tile, e) => {
                    return Err(Error::TileDoesNotMatch { tile, end: Some(e) });
                }
                Some(e) => Some(e),
                None => {
                    let mut fitting = layout.fitting_ends(tile);
                    match (fitting.next(), fitting.next()) {
                        (Some(e), None) => Some(e),
                        (None, _) => return Err(Error::TileDoesNotMatch { tile, end: None }),
                        (Some(_), Some(_)) => return Err(Error::AmbiguousEnd(tile)),
                    }
                }
            }
        };

        // Everything is checked: from here the play happens.
        hand.write_down(HandAction::Play { tile, end });
        hand.hands[seat].remove(tile);
        let count = hand.layout.place_by(seat, tile, end);
        let points = points_for(count);
        let hand_empty = hand.hands[seat].is_empty();
        let side = self.rules.side_of(seat);
        self.scores[side] += points as i32;
        self.sheet.add_play(side, points as i32);
        self.moves += 1;
        events.push(Event::Played {
            seat,
            tile,
            end,
            count,
            points,
        });

        if self.scores[side] >= self.rules.target as i32 {
            self.end_hand(HandEnd::TargetReached { seat }, [0; 4], events);
            self.win(side, events);
        } else if hand_empty {
            self.finish_hand(Finish::Domino(seat), events);
        } else {
            self.pass_turn(events);
        }
        Ok(())
    }

    fn apply_draw(&mut self, seat: Seat, events: &mut Vec<Event>) -> Result<(), Error> {
        let hand = self.hand_on_turn(seat)?;
        if !hand.playable(seat).is_empty() {
            return Err(Error::MustPlay);
        }
        let tile = hand.draw().ok_or(Error::BoneyardEmpty)?;
        hand.write_down(HandAction::Draw);
        hand.hands[seat].insert(tile);
        let playable = hand.layout.playable().contains(tile);
        hand.showed_out(seat, !playable);
        let boneyard_empty = hand.boneyard().is_empty();
        self.moves += 1;
        events.push(Event::Drew {
            seat,
            tile: Some(tile),
        });
        if !playable && boneyard_empty {
            events.push(Event::Passed { seat });
            self.pass_turn(events);
        }
        Ok(())
    }

    /// `seat` forfeits (section 11): a hand in play ends unsettled, no hand shown,
    /// and the match ends; the winner is the other side, or with three or four sides
    /// the highest score among the others, a tie going to the side that comes first
    /// in turn order after the forfeiting seat.
    fn apply_forfeit(
        &mut self,
        seat: Seat,
        why: Why,
        events: &mut Vec<Event>,
    ) -> Result<(), Error> {
        let players = self.rules.players;
        if seat >= players {
            return Err(Error::InvalidSeat { seat, players });
        }
        if self.winner.is_some() {
            return Err(Error::GameOver);
        }
        let Some(hand) = self.hand.as_mut() else {
            return Err(Error::WrongPhase {
                phase: Phase::Dealing,
            });
        };
        hand.write_down(HandAction::Forfeit { seat, why });
        let playing = hand.result.is_none();
        self.moves += 1;
        self.forfeit = Some((seat, why));
        events.push(Event::Forfeited { seat, why });
        if playing {
            self.end_hand(HandEnd::Forfeit { seat }, [0; 4], events);
        }
        let loser = self.rules.side_of(seat);
        let mut winner = None;
        for next in (1..players).map(|i| (seat + i) % players) {
            let side = self.rules.side_of(next);
            if side != loser && winner.is_none_or(|w: Side| self.scores[side] > self.scores[w]) {
                winner = Some(side);
            }
        }
        self.win(winner.unwrap_or(loser), events);
        Ok(())
    }

    /// Moves the turn on, passing for every seat that cannot play with the boneyard
    /// empty, and ends the hand blocked if nobody can play at all.
    fn pass_turn(&mut self, events: &mut Vec<Event>) {
        let players = self.rules.players;
        let Some(hand) = self.hand.as_mut() else {
            return;
        };
        hand.turn = (hand.turn + 1) % players;
        if !hand.boneyard().is_empty() {
            return;
        }
        if (0..players).any(|s| !hand.playable(s).is_empty()) {
            while hand.playable(hand.turn).is_empty() {
                hand.showed_out(hand.turn, false);
                events.push(Event::Passed { seat: hand.turn });
                hand.turn = (hand.turn + 1) % players;
            }
            return;
        }
        self.finish_hand(Finish::Blocked, events);
    }

    /// Ends the hand by domino or block: settles, and ends the game if a side reached
    /// the target by settlement.
    fn finish_hand(&mut self, finish: Finish, events: &mut Vec<Event>) {
        let Some(hand) = self.hand.as_ref() else {
            return;
        };
        let settlement = settle(&self.rules, &hand.hands, finish);
        for (score, delta) in self.scores.iter_mut().zip(settlement) {
            *score += delta;
        }
        self.sheet.add_settlement(&settlement);
        let end = match finish {
            Finish::Domino(seat) => HandEnd::Domino { seat },
            Finish::Blocked => HandEnd::Blocked,
        };
        self.next_starter = match finish {
            Finish::Domino(seat) => Some(seat),
            Finish::Blocked => None,
        };
        self.end_hand(end, settlement, events);
        let target = self.rules.target as i32;
        if let Some(side) = (0..self.rules.sides()).find(|&s| self.scores[s] >= target) {
            self.win(side, events);
        }
    }

    fn end_hand(&mut self, end: HandEnd, settlement: [i32; 4], events: &mut Vec<Event>) {
        let Some(hand) = self.hand.as_mut() else {
            return;
        };
        let result = HandResult {
            hand: hand.number,
            end,
            // A forfeit shows no hand: the tiles stay face down (a player who could
            // forfeit a copy of the match would otherwise read every hand from it).
            hands: match end {
                HandEnd::Forfeit { .. } => [TileSet::EMPTY; 4],
                _ => hand.hands,
            },
            settlement,
        };
        hand.result = Some(result);
        events.push(Event::HandEnded(result));
    }

    fn win(&mut self, side: Side, events: &mut Vec<Event>) {
        self.winner = Some(side);
        events.push(Event::GameEnded { winner: side });
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::layout::Layout;
    use crate::rules::SettlementRule;
    use crate::tile::TILE_COUNT;

    pub(crate) fn t(a: u8, b: u8) -> Tile {
        Tile::new(a, b).unwrap()
    }

    fn set(tiles: &[(u8, u8)]) -> TileSet {
        tiles.iter().map(|&(a, b)| t(a, b)).collect()
    }

    /// A game in the middle of a hand: `hands` per seat, `boneyard` in draw order,
    /// `layout` placed in order, `turn` to act. Tiles not named anywhere are simply out of
    /// play (these fixtures test one rule at a time, not the 28-tile invariant).
    pub(crate) fn fixture(
        rules: Rules,
        hands: &[&[(u8, u8)]],
        boneyard: &[(u8, u8)],
        layout: &[((u8, u8), Option<End>)],
        turn: Seat,
    ) -> Game {
        let mut game = Game::new(rules, 99).unwrap();
        let mut hand = Hand::deal(&rules, 99, 1, Some(turn));
        hand.hands = [TileSet::EMPTY; 4];
        for (seat, tiles) in hands.iter().enumerate() {
            hand.hands[seat] = set(tiles);
        }
        hand.boneyard_len = boneyard.len() as u8;
        for (slot, &(a, b)) in hand.boneyard.iter_mut().zip(boneyard.iter().rev()) {
            *slot = t(a, b);
        }
        hand.layout = Layout::new();
        for &((a, b), end) in layout {
            hand.layout.place(t(a, b), end);
        }
        hand.turn = turn;
        game.hand = Some(hand);
        game.hands_dealt = 1;
        game.sheet.start_hand(1);
        game
    }

    fn rules(players: usize) -> Rules {
        Rules::for_players(players)
    }

    #[test]
    fn a_new_game_waits_for_the_deal_and_refuses_bad_options() {
        let game = Game::new(rules(3), 1).unwrap();
        assert_eq!(game.phase(), Phase::Dealing);
        assert_eq!(game.hand_number(), 0);
        let mut bad = rules(3);
        bad.target = 12;
        assert!(matches!(
            Game::new(bad, 1),
            Err(Error::InvalidOption {
                field: "target",
                ..
            })
        ));
    }

    #[test]
    fn the_deal_follows_the_hand_size_rule_and_a_random_starter_leads_the_first_hand() {
        for players in 2..=4 {
            let mut game = Game::new(rules(players), 5).unwrap();
            let events = game.deal().unwrap();
            let expected = Hand::deal(&rules(players), 5, 1, None).turn;
            assert_eq!(
                events,
                vec![Event::Dealt {
                    hand: 1,
                    starter: expected
                }]
            );
            assert_eq!(game.turn(), Some(expected));
            assert!(game.hand_sizes().all(|n| n == rules(players).hand_tiles()));
            assert_eq!(
                game.boneyard_len(),
                28 - players * rules(players).hand_tiles()
            );
            // The lead: any tile in hand, no end.
            let moves = game.legal_moves();
            assert_eq!(moves.len(), game.hand(expected).len());
            assert!(moves.iter().all(|m| m.end.is_none()));
        }
    }

    #[test]
    fn the_player_who_went_out_leads_the_next_hand() {
        // Seat 1 holds one tile that fits: it goes out.
        let mut game = fixture(rules(2), &[&[(6, 6)], &[(4, 2)]], &[], &[((4, 4), None)], 1);
        let events = game.play(1, t(4, 2), Some(End::Left)).unwrap();
        assert!(matches!(
            events.last(),
            Some(Event::HandEnded(HandResult {
                end: HandEnd::Domino { seat: 1 },
                ..
            }))
        ));
        game.deal().unwrap();
        assert_eq!(game.turn(), Some(1));
    }

    #[test]
    fn after_a_blocked_hand_the_starter_is_random_again() {
        let mut starters = [0; 3];
        for seed in 0..60u64 {
            let mut game = fixture(
                rules(3),
                &[&[(0, 1), (4, 4)], &[(2, 2)], &[(3, 3)]],
                &[],
                &[],
                0,
            );
            game.seed = seed;
            // [0|1] leads: 1 pip shown both sides; nobody holds a 0 or a 1: blocked.
            let events = game.play(0, t(0, 1), None).unwrap();
            assert!(matches!(
                events.last(),
                Some(Event::HandEnded(HandResult {
                    end: HandEnd::Blocked,
                    ..
                }))
            ));
            game.deal().unwrap();
            let starter = game.turn().unwrap();
            assert_eq!(starter, Hand::deal(&rules(3), seed, 2, None).turn);
            starters[starter] += 1;
        }
        assert!(
            starters.iter().all(|&n| n > 0),
            "every seat starts some time: {starters:?}"
        );
    }

    #[test]
    fn a_player_without_a_playable_tile_draws_until_one_comes_then_must_play_it() {
        let mut game = fixture(
            rules(2),
            &[&[(0, 0)], &[(1, 1), (2, 3)]],
            &[(1, 2), (0, 3), (6, 4), (5, 5)],
            &[((6, 4), None)],
            0,
        );
        assert!(game.must_draw());
        assert!(game.legal_moves().is_empty());
        assert_eq!(
            game.play(0, t(0, 0), None),
            Err(Error::TileDoesNotMatch {
                tile: t(0, 0),
                end: None
            })
        );
        assert_eq!(
            game.draw(0).unwrap(),
            vec![Event::Drew {
                seat: 0,
                tile: Some(t(1, 2))
            }]
        );
        assert_eq!(game.turn(), Some(0), "still seat 0's turn");
        game.draw(0).unwrap();
        assert!(game.must_draw());
        // [6|4] is playable (on both ends); drawing stops there.
        assert_eq!(
            game.draw(0).unwrap(),
            vec![Event::Drew {
                seat: 0,
                tile: Some(t(6, 4))
            }]
        );
        assert!(!game.must_draw());
        assert_eq!(game.draw(0), Err(Error::MustPlay));
        let moves = game.legal_moves();
        assert!(
            moves.iter().all(|m| m.tile == t(6, 4)),
            "the drawn tile is the only playable"
        );
        assert_eq!(moves.len(), 2);
        assert_eq!(
            game.play(0, t(6, 4), None),
            Err(Error::AmbiguousEnd(t(6, 4)))
        );
        game.play(0, t(6, 4), Some(End::Left)).unwrap();
        assert_eq!(game.turn(), Some(1));
        assert_eq!(game.boneyard_len(), 1, "[5|5] is still in the boneyard");
    }

    #[test]
    fn the_table_remembers_the_numbers_a_seat_showed_out_of() {
        let bit = |pips: &[u8]| pips.iter().fold(0u8, |m, &p| m | 1 << p);
        // Ends 6 and 4. Seat 0 draws [1|2] (kept): all its tiles lack 6 and 4.
        let mut game = fixture(
            rules(3),
            &[&[(0, 0)], &[(1, 1), (2, 3)], &[(4, 5), (3, 3)]],
            &[(1, 2), (6, 5), (0, 1)],
            &[((6, 4), None)],
            0,
        );
        assert_eq!(game.voids(0), 0);
        game.draw(0).unwrap();
        assert_eq!(game.voids(0), bit(&[6, 4]));
        // It draws [6|5], playable: the mask stays for what is left after the play.
        game.draw(0).unwrap();
        assert_eq!(game.voids(0), bit(&[6, 4]));
        game.play(0, t(6, 5), None).unwrap();
        // Ends 5 and 4: seat 1 draws [0|1] and keeps it; the older mask gives way to
        // the numbers it shows out of now, since the kept tile may have any other.
        game.draw(1).unwrap();
        assert_eq!(game.voids(1), bit(&[5, 4]));
        assert_eq!(game.voids(2), 0, "nobody saw seat 2 show out");
        // A pass with the boneyard empty adds the end numbers to what was known.
        let mut game = fixture(
            rules(3),
            &[&[(6, 1), (4, 3)], &[(0, 0), (0, 2)], &[(4, 2), (5, 5)]],
            &[],
            &[((6, 4), None)],
            0,
        );
        game.hand.as_mut().unwrap().voids[1] = bit(&[5]);
        game.play(0, t(6, 1), Some(End::Right)).unwrap();
        assert_eq!(game.voids(1), bit(&[4, 1, 5]), "seat 1 passed on 4 and 1");
    }

    #[test]
    fn drawing_out_the_boneyard_without_a_playable_tile_passes() {
        let mut game = fixture(
            rules(2),
            &[&[(0, 0)], &[(6, 1), (2, 2)]],
            &[(1, 2)],
            &[((6, 4), None)],
            0,
        );
        let events = game.draw(0).unwrap();
        assert_eq!(
            events,
            vec![
                Event::Drew {
                    seat: 0,
                    tile: Some(t(1, 2))
                },
                Event::Passed { seat: 0 }
            ]
        );
        assert_eq!(game.turn(), Some(1));
    }

    #[test]
    fn with_the_boneyard_empty_a_player_who_cannot_play_passes_at_once() {
        let mut game = fixture(
            rules(3),
            &[&[(6, 1), (4, 3)], &[(0, 0), (0, 2)], &[(4, 2), (5, 5)]],
            &[],
            &[((6, 4), None)],
            0,
        );
        let events = game.play(0, t(6, 1), Some(End::Right)).unwrap();
        assert_eq!(events[1..], [Event::Passed { seat: 1 }]);
        assert_eq!(game.turn(), Some(2));
        assert_eq!(game.draw(2), Err(Error::MustPlay));
    }

    #[test]
    fn a_hand_nobody_can_play_ends_blocked_at_once_and_settles() {
        let mut game = fixture(
            rules(2),
            &[&[(1, 1), (0, 2)], &[(2, 3), (0, 0)]],
            &[],
            &[((6, 4), None)],
            0,
        );
        // Nobody holds a 4 or a 6 and the boneyard is empty.
        let mut events = Vec::new();
        game.pass_turn(&mut events);
        let Some(Event::HandEnded(result)) = events.last() else {
            panic!("{events:?}")
        };
        assert_eq!(result.end, HandEnd::Blocked);
        // Own pips off: 4 -> 5 and 5 -> 5 come off.
        assert_eq!(result.settlement[..2], [-5, -5]);
        assert_eq!(game.scores(), &[-5, -5]);
        assert_eq!(game.phase(), Phase::Dealing);
        assert_eq!(game.next_starter, None);
        assert_eq!(
            game.last_result().map(|r| r.hands[1]),
            Some(set(&[(2, 3), (0, 0)]))
        );
    }

    #[test]
    fn a_placement_that_blocks_the_table_ends_the_hand_blocked() {
        let mut game = fixture(
            rules(2),
            &[&[(4, 1), (0, 0)], &[(2, 3), (5, 5)]],
            &[],
            &[((6, 4), None)],
            0,
        );
        let events = game.play(0, t(4, 1), Some(End::Left)).unwrap();
        assert_eq!(events.len(), 2, "no run of passes first: {events:?}");
        assert!(matches!(
            events[1],
            Event::HandEnded(HandResult {
                end: HandEnd::Blocked,
                ..
            })
        ));
    }

    #[test]
    fn the_last_tile_is_a_domino_even_when_it_also_blocks() {
        let mut game = fixture(
            rules(2),
            &[&[(4, 1)], &[(2, 3), (5, 5)]],
            &[],
            &[((6, 4), None)],
            0,
        );
        let events = game.play(0, t(4, 1), Some(End::Left)).unwrap();
        let Some(Event::HandEnded(result)) = events.last() else {
            panic!("{events:?}")
        };
        assert_eq!(result.end, HandEnd::Domino { seat: 0 });
        assert_eq!(result.settlement[..2], [0, -15], "5 + 10 = 15 -> 15");
    }

    #[test]
    fn the_placement_count_is_scored_before_the_domino_settlement() {
        let mut r = rules(2);
        r.settlement = SettlementRule::WinnerTakesPips;
        // [6|4] lead, [4|4] spinner on 4: 6 + 8 = 14; seat 0 plays [4|1]... use a scoring
        // last tile instead: [6|3] on the 6 end: 3 + 8 = 11; [6|1]: 1 + 8 = 9; [6|2]: 10.
        let mut game = fixture(
            r,
            &[&[(6, 2)], &[(3, 4)]],
            &[],
            &[((6, 4), None), ((4, 4), Some(End::Left))],
            0,
        );
        let events = game.play(0, t(6, 2), Some(End::Right)).unwrap();
        assert_eq!(
            events[0],
            Event::Played {
                seat: 0,
                tile: t(6, 2),
                end: Some(End::Right),
                count: 10,
                points: 10
            }
        );
        // Then seat 0 takes [3|4] = 7 -> 5.
        assert_eq!(game.scores(), &[15, 0]);
        let rows: Vec<_> = game.sheet().rows().copied().collect();
        assert_eq!((rows[0].play[0], rows[0].settlement[0]), (10, 5));
    }

    #[test]
    fn reaching_the_target_by_a_placement_ends_the_game_at_once_without_settling() {
        for seat0 in [&[(6, 1)][..], &[(6, 1), (0, 0)][..]] {
            let mut r = rules(2);
            r.target = 100;
            let mut game = fixture(r, &[seat0, &[(2, 3), (6, 6)]], &[], &[((6, 4), None)], 0);
            game.scores = [95, 90, 0, 0];
            // [6|1] on the 6 end: 4 + 1 = 5 takes seat 0 to 100.
            let events = game.play(0, t(6, 1), Some(End::Right)).unwrap();
            assert_eq!(events.len(), 3, "{events:?}");
            let Event::HandEnded(result) = events[1] else {
                panic!("{events:?}")
            };
            assert_eq!(result.end, HandEnd::TargetReached { seat: 0 });
            assert_eq!(result.settlement, [0; 4], "the hand is not settled");
            assert_eq!(events[2], Event::GameEnded { winner: 0 });
            assert_eq!(game.scores(), &[100, 90]);
            assert_eq!((game.phase(), game.winner()), (Phase::Over, Some(0)));
            assert_eq!(game.deal(), Err(Error::GameOver));
            assert_eq!(game.play(1, t(6, 6), None), Err(Error::GameOver));
            assert_eq!(game.turn(), None);
            assert!(game.legal_moves().is_empty());
        }
    }

    #[test]
    fn winner_takes_pips_can_win_by_settlement() {
        let mut r = rules(2);
        r.target = 100;
        r.settlement = SettlementRule::WinnerTakesPips;
        let mut game = fixture(
            r,
            &[&[(6, 2)], &[(6, 6), (5, 4)]],
            &[],
            &[((4, 3), None)],
            0,
        );
        game.scores = [90, 0, 0, 0];
        // [6|2] can't go on 3 or 4... use [4|2]: 3 + 2 = 5 -> 95, then 12 + 9 = 21 -> 20.
        game.hand.as_mut().unwrap().hands[0] = set(&[(4, 2)]);
        let events = game.play(0, t(4, 2), Some(End::Right)).unwrap();
        assert!(matches!(
            events[1],
            Event::HandEnded(HandResult {
                end: HandEnd::Domino { seat: 0 },
                ..
            })
        ));
        assert_eq!(events[2], Event::GameEnded { winner: 0 });
        assert_eq!(game.scores(), &[115, 0]);
    }

    #[test]
    fn own_pips_off_never_wins_by_settlement_and_scores_may_go_below_zero() {
        let mut game = fixture(
            rules(2),
            &[&[(4, 2)], &[(6, 6), (5, 4)]],
            &[],
            &[((4, 3), None)],
            0,
        );
        game.scores = [0, 0, 0, 0];
        let events = game.play(0, t(4, 2), Some(End::Right)).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(game.scores(), &[5, -20]);
        assert_eq!(game.phase(), Phase::Dealing);
    }

    #[test]
    fn partners_share_one_score() {
        let mut r = rules(4);
        r.partnership = true;
        let mut game = fixture(
            r,
            &[&[(0, 0)], &[(1, 1)], &[(6, 1), (3, 3)], &[(2, 2)]],
            &[(5, 0)],
            &[((6, 4), None)],
            2,
        );
        game.play(2, t(6, 1), Some(End::Right)).unwrap();
        assert_eq!(game.scores(), &[5, 0], "seat 2 scores for team 0");
    }

    #[test]
    fn every_illegal_action_is_a_typed_error_and_changes_nothing() {
        let mut fresh = Game::new(rules(2), 3).unwrap();
        assert_eq!(
            fresh.play(0, t(0, 0), None),
            Err(Error::WrongPhase {
                phase: Phase::Dealing
            })
        );
        assert_eq!(
            fresh.draw(0),
            Err(Error::WrongPhase {
                phase: Phase::Dealing
            })
        );

        let game = fixture(
            rules(2),
            &[&[(6, 1), (4, 2), (4, 4), (3, 3)], &[(0, 0)]],
            &[(0, 1)],
            &[((6, 4), None)],
            0,
        );
        let cases = [
            (
                Action::Deal,
                Error::WrongPhase {
                    phase: Phase::Playing,
                },
            ),
            (
                Action::Play {
                    seat: 1,
                    tile: t(0, 0),
                    end: None,
                },
                Error::NotYourTurn { seat: 1, turn: 0 },
            ),
            (
                Action::Play {
                    seat: 2,
                    tile: t(0, 0),
                    end: None,
                },
                Error::InvalidSeat {
                    seat: 2,
                    players: 2,
                },
            ),
            (
                Action::Play {
                    seat: 0,
                    tile: t(5, 5),
                    end: None,
                },
                Error::TileNotInHand(t(5, 5)),
            ),
            (
                Action::Play {
                    seat: 0,
                    tile: t(6, 1),
                    end: Some(End::Left),
                },
                Error::TileDoesNotMatch {
                    tile: t(6, 1),
                    end: Some(End::Left),
                },
            ),
            (
                Action::Play {
                    seat: 0,
                    tile: t(3, 3),
                    end: None,
                },
                Error::TileDoesNotMatch {
                    tile: t(3, 3),
                    end: None,
                },
            ),
            (
                Action::Play {
                    seat: 0,
                    tile: t(4, 4),
                    end: Some(End::Up),
                },
                Error::EndNotOpen(End::Up),
            ),
            (Action::Draw { seat: 0 }, Error::MustPlay),
            (
                Action::Draw { seat: 1 },
                Error::NotYourTurn { seat: 1, turn: 0 },
            ),
        ];
        for (action, error) in cases {
            let mut g = game.clone();
            assert_eq!(g.apply(action, &mut Vec::new()), Err(error), "{action:?}");
            assert_eq!(g, game, "{action:?} changed the game");
        }
        // A tile that fits two ends needs one named.
        let mut g = fixture(rules(2), &[&[(6, 4)], &[(0, 0)]], &[], &[((6, 4), None)], 0);
        assert_eq!(g.play(0, t(6, 4), None), Err(Error::AmbiguousEnd(t(6, 4))));
        // The lead takes no UP or DOWN.
        let mut g = fixture(rules(2), &[&[(6, 4)], &[(0, 0)]], &[], &[], 0);
        assert_eq!(
            g.play(0, t(6, 4), Some(End::Down)),
            Err(Error::EndNotOpen(End::Down))
        );
        assert!(
            g.play(0, t(6, 4), Some(End::Right)).is_ok(),
            "naming LEFT or RIGHT for a lead is harmless"
        );
    }

    #[test]
    fn the_same_seed_and_actions_replay_identically() {
        use crate::bot::{Strategy, choose};
        use rand_chacha::ChaCha8Rng;
        use rand_chacha::rand_core::SeedableRng;
        let play = |seed| {
            let mut game = Game::new(rules(3), seed).unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let mut log = Vec::new();
            let mut scratch = Vec::new();
            while let Some(action) = choose(&game, Strategy::Random, &mut rng, &mut scratch) {
                game.apply(action, &mut log).unwrap();
            }
            (game, log)
        };
        assert_eq!(play(11), play(11));
        assert_ne!(play(11).1, play(12).1);
    }

    #[test]
    fn resubmitting_an_older_state_gives_the_same_deal_and_draws() {
        let mut game = Game::new(rules(2), 8).unwrap();
        let before = game.clone();
        let first = game.deal().unwrap();
        let mut again = before.clone();
        assert_eq!(again.deal().unwrap(), first);
        assert_eq!(again, game);
    }

    #[test]
    fn views_show_a_seat_only_what_it_may_see() {
        let mut game = Game::new(rules(3), 21).unwrap();
        game.deal().unwrap();
        let turn = game.turn().unwrap();
        let spectator = game.view(None).unwrap();
        assert_eq!(spectator.hand, None);
        assert!(spectator.legal_moves.is_empty());
        assert_eq!(*spectator.hand_sizes, [7, 7, 7]);
        assert_eq!(spectator.boneyard, 7);
        for seat in 0..3 {
            let view = game.view(Some(seat)).unwrap();
            assert_eq!(view.hand, Some(game.hand(seat)));
            assert_eq!(view.legal_moves.is_empty(), seat != turn);
        }
        assert_eq!(
            game.view(Some(3)).unwrap_err(),
            Error::InvalidSeat {
                seat: 3,
                players: 3
            }
        );
        let drew = Event::Drew {
            seat: 1,
            tile: Some(t(0, 0)),
        };
        assert_eq!(drew.redacted_for(Some(1)), drew);
        assert_eq!(
            drew.redacted_for(Some(0)),
            Event::Drew {
                seat: 1,
                tile: None
            }
        );
        assert_eq!(
            drew.redacted_for(None),
            Event::Drew {
                seat: 1,
                tile: None
            }
        );
    }

    #[test]
    fn a_forfeit_ends_the_hand_unsettled_and_the_match_for_the_other_side() {
        use crate::clock::Why;
        let mut game = fixture(
            rules(2),
            &[&[(6, 1), (0, 0)], &[(2, 3), (5, 5)]],
            &[(1, 2)],
            &[((6, 4), None)],
            0,
        );
        game.scores = [40, 10, 0, 0];
        let before = game.clone();
        // Any seat, on turn or not, and the seat must exist.
        assert_eq!(
            game.apply(
                Action::Forfeit {
                    seat: 2,
                    why: Why::Left
                },
                &mut Vec::new()
            ),
            Err(Error::InvalidSeat {
                seat: 2,
                players: 2
            })
        );
        assert_eq!(game, before);
        let mut events = Vec::new();
        game.apply(
            Action::Forfeit {
                seat: 0,
                why: Why::TimedOut,
            },
            &mut events,
        )
        .unwrap();
        assert_eq!(
            events[0],
            Event::Forfeited {
                seat: 0,
                why: Why::TimedOut
            }
        );
        let Event::HandEnded(result) = events[1] else {
            panic!("{events:?}")
        };
        assert_eq!(result.end, HandEnd::Forfeit { seat: 0 });
        assert_eq!(result.settlement, [0; 4], "not settled");
        assert_eq!(result.hands, [TileSet::EMPTY; 4], "no hand shown");
        // The side that forfeited loses though it leads: scores stay as they were.
        assert_eq!(events[2], Event::GameEnded { winner: 1 });
        assert_eq!(game.scores(), &[40, 10]);
        assert_eq!(
            (game.phase(), game.forfeit()),
            (Phase::Over, Some((0, Why::TimedOut)))
        );
        assert_eq!(
            game.apply(
                Action::Forfeit {
                    seat: 1,
                    why: Why::Left
                },
                &mut Vec::new()
            ),
            Err(Error::GameOver)
        );
        // Before the first deal there is no match to forfeit yet.
        let mut fresh = Game::new(rules(2), 1).unwrap();
        assert_eq!(
            fresh.apply(
                Action::Forfeit {
                    seat: 0,
                    why: Why::Left
                },
                &mut Vec::new()
            ),
            Err(Error::WrongPhase {
                phase: Phase::Dealing
            })
        );
    }

    #[test]
    fn with_three_or_more_sides_a_forfeit_goes_to_the_best_other_score_then_turn_order() {
        use crate::clock::Why;
        let forfeit = |players: usize, partnership: bool, scores: [i32; 4], seat: Seat| {
            let mut r = rules(players);
            r.partnership = partnership;
            let hands: Vec<&[(u8, u8)]> = vec![&[(0, 0)]; players];
            let mut game = fixture(r, &hands, &[], &[((6, 4), None)], 0);
            game.scores = scores;
            game.apply(
                Action::Forfeit {
                    seat,
                    why: Why::Left,
                },
                &mut Vec::new(),
            )
            .unwrap();
            game.winner().unwrap()
        };
        assert_eq!(forfeit(3, false, [50, 20, 30, 0], 0), 2, "the best other");
        assert_eq!(
            forfeit(3, false, [90, 20, 20, 0], 0),
            1,
            "a tie: next in turn"
        );
        assert_eq!(
            forfeit(3, false, [20, 90, 20, 0], 1),
            2,
            "a tie: next in turn"
        );
        assert_eq!(forfeit(4, false, [0, 5, 5, 5], 2), 3);
        assert_eq!(forfeit(4, true, [0, 5, 0, 0], 2), 1, "the other team");
        assert_eq!(forfeit(4, true, [90, 5, 0, 0], 3), 0, "the other team");
    }

    #[test]
    fn a_forfeit_between_hands_ends_the_match_and_replays() {
        use crate::bot::{Strategy, choose};
        use crate::clock::Why;
        use rand_chacha::ChaCha8Rng;
        use rand_chacha::rand_core::SeedableRng;
        let r = Rules {
            target: 500,
            ..rules(3)
        };
        let mut game = Game::new(r, 5).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut scratch = Vec::new();
        while game.phase() != Phase::Dealing || game.hand_number() == 0 {
            let action = choose(&game, Strategy::Greedy, &mut rng, &mut scratch).unwrap();
            game.apply(action, &mut Vec::new()).unwrap();
        }
        let result = *game.last_result().unwrap();
        let mut events = Vec::new();
        game.apply(
            Action::Forfeit {
                seat: 1,
                why: Why::Left,
            },
            &mut events,
        )
        .unwrap();
        assert!(matches!(
            events[..],
            [Event::Forfeited { seat: 1, .. }, Event::GameEnded { .. }]
        ));
        assert_eq!(
            game.last_result(),
            Some(&result),
            "the hand's own end stays"
        );
        assert_eq!(game.phase(), Phase::Over);
        let replayed = Game::replay(r, 5, &game.scorecard()).unwrap();
        assert_eq!(replayed, game);
    }

    #[test]
    fn the_boneyard_is_never_drawn_from_twice() {
        let mut hand = Hand::deal(&rules(2), 1, 1, None);
        let mut drawn = TileSet::EMPTY;
        while let Some(tile) = hand.draw() {
            assert!(!drawn.contains(tile));
            drawn.insert(tile);
        }
        assert_eq!(drawn.len(), TILE_COUNT - 18);
    }
}
