//! Rebuilding a match from what a scorekeeper writes down, by replaying its hand through
//! the engine's own moves (docs/rules.md section 10: a game created with the same seed and
//! the same moves replays identically).
//!
//! A [`Scorecard`] is what a person keeping score at the table would note: the score
//! sheet of the hands before the current one, the current hand's number, who went out
//! of the hand before it (and so leads it), the count of actions before its deal, and
//! the hand's actions in order. A play is a tile and an end; a draw is only a mark,
//! since the tile drawn is whatever the seeded shuffle put next; passes follow from the
//! rules. With the rule options and the seed it is the whole match:
//! [`Game::replay`] deals the hand from the seed and applies each action with
//! [`Game::apply`], so a rebuilt match is one that legal moves produced, and an action
//! the rules refuse is refused with its typed error. What replay cannot establish (the
//! earlier hands' sheet) is checked by [`crate::check`].

use super::check;
use super::clock::Why;
use super::error::Error;
use super::event::Event;
use super::game::{Action, Game};
use super::layout::End;
use super::rules::{Rules, Seat};
use super::sheet::{ScoreSheet, SheetRow};
use super::tile::Tile;

/// Actions a hand can hold after its deal: a play per tile at most (28), a draw per
/// tile of the largest boneyard (18, two players five each), and a forfeit.
pub const MAX_HAND_ACTIONS: usize = 47;

/// An action of the seat on turn after the deal, as the scorekeeper writes it down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HandAction {
    /// `tile` placed on `end` (`None` for the lead; always the end it went on, even
    /// when the player left it to the engine).
    Play { tile: Tile, end: Option<End> },
    /// One tile taken from the boneyard.
    Draw,
    /// `seat` forfeited the match (section 11): during the hand, or after it ended.
    Forfeit { seat: Seat, why: Why },
}

/// A match as a scorekeeper has it: with the rules and the seed, everything
/// [`Game::replay`] rebuilds the match from. [`Game::scorecard`] writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scorecard<'a> {
    /// Hands dealt, the current (or last) one included; 0 before the first deal.
    pub hand: u32,
    /// Who went out of the hand before the current one, and so leads it; `None` when
    /// the leader was drawn at random (the first hand, or after a blocked hand).
    pub starter: Option<Seat>,
    /// Actions applied in the match before the current hand's deal.
    pub moves: u32,
    /// The sheet of the hands before the current one: the row carried forward (hands
    /// 1 to `hand - 1 - rows.len()`, present once more than
    /// [`SHEET_ROWS`](crate::sheet::SHEET_ROWS)` - 1` earlier hands are done) ...
    pub carried: Option<SheetRow>,
    /// ... and the latest earlier hands in full, oldest first, ending with hand
    /// `hand - 1`: at most `SHEET_ROWS - 1` of them.
    pub rows: &'a [SheetRow],
    /// The current hand's actions after its deal, in order.
    pub actions: &'a [HandAction],
}

/// Why a scorecard does not rebuild a match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    #[error("rule options: {0}")]
    Rules(Error),
    #[error("the scorecard: {0}")]
    Scorecard(&'static str),
    #[error("action {index} of the hand: {error}")]
    Action { index: usize, error: Error },
    #[error("action {index} of the hand is legal but not written as the engine writes it")]
    NotAsWritten { index: usize },
}

impl Game {
    /// What a scorekeeper has written down about this match (see [`Scorecard`]).
    pub fn scorecard(&self) -> Scorecard<'_> {
        let Some(hand) = &self.hand else {
            return Scorecard {
                hand: 0,
                starter: None,
                moves: self.moves,
                carried: None,
                rows: &[],
                actions: &[],
            };
        };
        let actions = hand.actions();
        Scorecard {
            hand: self.hands_dealt,
            starter: hand.starter,
            // The deal and the actions since are this hand's.
            moves: self.moves - 1 - actions.len() as u32,
            carried: self.sheet.carried().copied(),
            rows: self.sheet.earlier_rows(),
            actions,
        }
    }

    /// The match `card` describes under `rules` and `seed`: the earlier hands' sheet
    /// as written, the current hand dealt from the seed and its actions applied in
    /// order, each by the seat then on turn. Refuses a scorecard no match could have
    /// (see [`crate::check`]) and any action the rules refuse.
    pub fn replay(rules: Rules, seed: u64, card: &Scorecard<'_>) -> Result<Game, ReplayError> {
        Game::replay_into(rules, seed, card, None)
    }

    /// The current hand's events from its deal on (the last hand's between hands), as
    /// the engine reported them when they happened: what a seat that reconnects missed.
    /// Empty before the first deal. Replays the hand, a few microseconds.
    pub fn hand_events(&self) -> Vec<Event> {
        let mut events = Vec::new();
        // A game replays from its own scorecard (the cache's guarantee); were it ever
        // not to, the events are cut short rather than invented.
        let _ = Game::replay_into(self.rules, self.seed, &self.scorecard(), Some(&mut events));
        events
    }

    /// [`Game::replay`], keeping every event in `keep` when given.
    fn replay_into(
        rules: Rules,
        seed: u64,
        card: &Scorecard<'_>,
        keep: Option<&mut Vec<Event>>,
    ) -> Result<Game, ReplayError> {
        rules.validate().map_err(ReplayError::Rules)?;
        check::scorecard(&rules, card).map_err(ReplayError::Scorecard)?;
        let mut game = Game::before_the_first_deal(rules, seed);
        if card.hand == 0 {
            return Ok(game);
        }
        game.hands_dealt = card.hand - 1;
        game.sheet = ScoreSheet::from_parts(card.carried, card.rows.to_vec());
        game.scores = game.sheet.totals();
        game.next_starter = card.starter;
        game.moves = card.moves;
        let mut scratch = Vec::with_capacity(8);
        let keeping = keep.is_some();
        let events = match keep {
            Some(kept) => kept,
            None => &mut scratch,
        };
        let refused = |index| move |error| ReplayError::Action { index, error };
        // The deal cannot be refused: no hand is in play and, by the sheet's check,
        // nobody has won.
        game.apply(Action::Deal, events)
            .map_err(|error| ReplayError::Action { index: 0, error })?;
        for (index, &written) in card.actions.iter().enumerate() {
            if !keeping {
                events.clear();
            }
            let seat = game.turn().unwrap_or(0);
            let action = match written {
                HandAction::Play { tile, end } => Action::Play { seat, tile, end },
                HandAction::Draw => Action::Draw { seat },
                HandAction::Forfeit { seat, why } => Action::Forfeit { seat, why },
            };
            game.apply(action, events).map_err(refused(index))?;
            // One way to write each action: the end the tile went on, none for a lead
            // (the engine would also take an end left out where only one fits, or a
            // lead's harmless LEFT or RIGHT), so that a match has one scorecard.
            if game.hand.as_ref().and_then(|h| h.actions().last()) != Some(&written) {
                return Err(ReplayError::NotAsWritten { index });
            }
        }
        Ok(game)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bot::{Strategy, choose};
    use crate::{Error, Phase};
    use rand_chacha::ChaCha8Rng;
    use rand_chacha::rand_core::SeedableRng;

    /// Every state of a greedy match of `rules`, in order.
    fn states(rules: Rules, seed: u64) -> Vec<Game> {
        let mut game = Game::new(rules, seed).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut scratch = Vec::new();
        let mut all = vec![game.clone()];
        while let Some(action) = choose(&game, Strategy::Greedy, &mut rng, &mut scratch) {
            game.apply(action, &mut Vec::new()).unwrap();
            all.push(game.clone());
        }
        all
    }

    /// `game` replayed from its scorecard with its actions changed by `change`.
    fn replayed_with(
        rules: Rules,
        game: &Game,
        change: impl FnOnce(&mut Vec<HandAction>),
    ) -> Result<Game, ReplayError> {
        let card = game.scorecard();
        let mut actions = card.actions.to_vec();
        change(&mut actions);
        let forged = Scorecard {
            actions: &actions,
            ..card
        };
        Game::replay(rules, game.seed(), &forged)
    }

    #[test]
    fn a_hands_events_are_those_its_actions_reported() {
        for players in 2..=4 {
            let rules = Rules::for_players(players);
            let mut game = Game::new(rules, 40 + players as u64).unwrap();
            assert!(
                game.hand_events().is_empty(),
                "nothing before the first deal"
            );
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let mut scratch = Vec::new();
            let mut seen: Vec<Event> = Vec::new();
            while let Some(action) = choose(&game, Strategy::Greedy, &mut rng, &mut scratch) {
                if action == Action::Deal {
                    seen.clear();
                }
                game.apply(action, &mut seen).unwrap();
                assert_eq!(game.hand_events(), seen, "{players} players");
            }
        }
    }

    #[test]
    fn every_state_of_a_match_replays_from_its_scorecard() {
        for players in 2..=4 {
            let rules = Rules::for_players(players);
            for game in states(rules, players as u64) {
                let card = game.scorecard();
                assert_eq!(Game::replay(rules, game.seed(), &card), Ok(game.clone()));
                let before = card.moves + u32::from(card.hand > 0) + card.actions.len() as u32;
                assert_eq!(before, game.moves());
            }
        }
    }

    #[test]
    fn the_end_the_engine_chose_is_written_down() {
        // A lead played with LEFT named is written with no end.
        let mut game = Game::new(Rules::for_players(2), 1).unwrap();
        game.deal().unwrap();
        let seat = game.turn().unwrap();
        let lead = game.legal_moves()[0].tile;
        game.play(seat, lead, Some(End::Left)).unwrap();
        assert_eq!(
            game.scorecard().actions,
            &[HandAction::Play {
                tile: lead,
                end: None
            }],
            "a lead has no end, whatever was named"
        );
    }

    #[test]
    fn a_scorecard_with_an_illegal_action_is_refused_with_the_rules_error() {
        let rules = Rules::for_players(2);
        let game = states(rules, 9).into_iter().nth(3).unwrap();
        assert_eq!(game.phase(), Phase::Playing);
        let seat = game.turn().unwrap();
        let index = game.scorecard().actions.len();
        // A tile the seat on turn does not hold (another seat's, or on the table).
        let theirs = game.hand(1 - seat).iter().next().unwrap();
        let play = HandAction::Play {
            tile: theirs,
            end: None,
        };
        assert_eq!(
            replayed_with(rules, &game, |a| a.push(play)),
            Err(ReplayError::Action {
                index,
                error: Error::TileNotInHand(theirs)
            })
        );
        // A draw by a seat holding a playable tile.
        if !game.legal_moves().is_empty() {
            assert!(matches!(
                replayed_with(rules, &game, |a| a.push(HandAction::Draw)),
                Err(ReplayError::Action {
                    error: Error::MustPlay | Error::BoneyardEmpty,
                    ..
                })
            ));
        }
    }

    #[test]
    fn an_action_not_written_as_the_engine_writes_it_is_refused() {
        let rules = Rules::for_players(2);
        let game = states(rules, 9).into_iter().nth(4).unwrap();
        let card = game.scorecard();
        let HandAction::Play { tile, end: None } = card.actions[0] else {
            panic!("a lead first: {:?}", card.actions)
        };
        // The lead with a harmless end named: the same game, but not its scorecard.
        let lead = HandAction::Play {
            tile,
            end: Some(End::Right),
        };
        assert_eq!(
            replayed_with(rules, &game, |a| a[0] = lead),
            Err(ReplayError::NotAsWritten { index: 0 })
        );
        // A later play with its end left out, where the tile fits one end only.
        let later = card
            .actions
            .iter()
            .position(|a| matches!(a, HandAction::Play { end: Some(_), .. }));
        if let Some(i) = later
            && let HandAction::Play { tile, .. } = card.actions[i]
        {
            assert!(matches!(
                replayed_with(rules, &game, |a| a[i] =
                    HandAction::Play { tile, end: None }),
                Err(ReplayError::NotAsWritten { .. } | ReplayError::Action { .. })
            ));
        }
    }

    #[test]
    fn actions_after_the_hand_ended_are_refused() {
        let rules = Rules {
            target: 500,
            ..Rules::for_players(2)
        };
        let ended = states(rules, 4)
            .into_iter()
            .find(|g| g.phase() == Phase::Dealing && g.hand_number() == 1)
            .unwrap();
        assert!(matches!(
            replayed_with(rules, &ended, |a| a.push(HandAction::Draw)),
            Err(ReplayError::Action {
                error: Error::WrongPhase { .. },
                ..
            })
        ));
    }

    #[test]
    fn a_sheet_no_match_could_have_is_refused() {
        let rules = Rules {
            target: 150,
            ..Rules::for_players(3)
        };
        let game = states(rules, 5)
            .into_iter()
            .rfind(|g| g.hand_number() == 3 && g.phase() == Phase::Playing)
            .unwrap();
        let card = game.scorecard();
        assert_eq!(card.rows.len(), 2);
        let replay = |card: &Scorecard<'_>| Game::replay(rules, game.seed(), card);
        let refused = |what| Err(ReplayError::Scorecard(what));
        let row = |change: fn(&mut SheetRow)| {
            let mut rows = card.rows.to_vec();
            change(&mut rows[0]);
            rows
        };
        let cases: [(Vec<SheetRow>, &str); 6] = [
            (row(|r| r.play[0] += 1), "sheet points out of range"),
            (
                row(|r| r.play[3] += 5),
                "points for a side that does not exist",
            ),
            (row(|r| r.play[1] = -5), "sheet points of the wrong sign"),
            (
                row(|r| r.settlement[2] = 5),
                "sheet points of the wrong sign",
            ),
            (
                row(|r| r.play[0] += 1000),
                "a side reached the target before this hand",
            ),
            (row(|r| r.first_hand = 2), "sheet row's hand"),
        ];
        for (rows, what) in cases {
            let forged = Scorecard {
                rows: &rows,
                ..card
            };
            assert_eq!(replay(&forged), refused(what), "{what}");
        }
        let forged = Scorecard {
            rows: &card.rows[1..],
            ..card
        };
        assert_eq!(
            replay(&forged),
            refused("sheet rows do not match the hands played")
        );
        let carried = Scorecard {
            carried: Some(card.rows[0]),
            ..card
        };
        assert_eq!(
            replay(&carried),
            refused("carried row present exactly when earlier hands are folded")
        );
        let forged = Scorecard {
            starter: Some(3),
            ..card
        };
        assert_eq!(replay(&forged), refused("leader out of range"));
        let first = Scorecard {
            hand: 1,
            starter: Some(0),
            rows: &[],
            actions: &[],
            ..card
        };
        assert_eq!(replay(&first), refused("a leader for the first hand"));
        for (moves, what) in [
            (3, "fewer actions than the hands before need"),
            (u32::MAX - 40, "action count at its limit"),
        ] {
            let forged = Scorecard { moves, ..card };
            assert_eq!(replay(&forged), refused(what));
        }
        let fresh = Scorecard {
            hand: 0,
            starter: None,
            moves: 1,
            carried: None,
            rows: &[],
            actions: &[],
        };
        assert_eq!(
            replay(&fresh),
            refused("a match before its first deal holds nothing")
        );
        let bad_rules = Rules {
            target: 12,
            ..rules
        };
        assert!(matches!(
            Game::replay(bad_rules, 1, &card),
            Err(ReplayError::Rules(Error::InvalidOption { .. }))
        ));
        assert_eq!(replay(&card), Ok(game.clone()));
    }

    #[test]
    fn a_long_match_folds_its_sheet_and_still_replays() {
        use crate::sheet::SHEET_ROWS;
        let rules = Rules::for_players(4);
        let mut game = Game::new(rules, 2).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut scratch = Vec::new();
        let mut checked = 0;
        while let Some(action) = choose(&game, Strategy::Random, &mut rng, &mut scratch) {
            game.apply(action, &mut Vec::new()).unwrap();
            let card = game.scorecard();
            assert!(card.rows.len() < SHEET_ROWS);
            if card.carried.is_some() {
                assert_eq!(Game::replay(rules, 2, &card).as_ref(), Ok(&game));
                checked += 1;
            }
        }
        assert!(checked > 20, "a match past 32 hands: {checked}");
    }
}
