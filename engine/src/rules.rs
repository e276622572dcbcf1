//! Rule options chosen when a game is created (docs/rules.md sections 2, 3, 8 and 9).

use super::clock::{Absence, MAX_CLOCK_SECS, MAX_TAKES_SEAT_AFTER, TurnClock};
use super::error::Error;

/// A seat at the table, `0 .. players`.
pub type Seat = usize;

/// A scoring side: the seat itself, or in a partnership the team (0 = seats 0+2,
/// 1 = seats 1+3).
pub type Side = usize;

/// The largest target accepted; far beyond any table's game, it bounds scores.
pub const MAX_TARGET: u32 = 10_000;

/// How many tiles each player takes at the deal (section 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum HandSizeRule {
    /// 9 with two players, 7 with three, 5 with four (the default).
    #[default]
    Standard,
    /// 5 each whatever the number of players.
    FiveEach,
    /// 7 with two players, 5 with three or four.
    SevenFive,
}

impl HandSizeRule {
    /// Tiles per hand for this many players.
    pub fn tiles(self, players: usize) -> usize {
        match (self, players) {
            (HandSizeRule::Standard, 2) => 9,
            (HandSizeRule::Standard, 3) => 7,
            (HandSizeRule::SevenFive, 2) => 7,
            _ => 5,
        }
    }
}

/// What happens to the pips left in hands when a hand ends (section 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SettlementRule {
    /// Every player's own rounded pips come off their own score (the default).
    #[default]
    OwnPipsOff,
    /// The player who went out (or, when blocked, the lightest hand) scores the
    /// opponents' rounded pips.
    WinnerTakesPips,
}

/// The options a game is played under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rules {
    /// 2, 3 or 4.
    pub players: usize,
    /// Seats 0+2 against 1+3; only with 4 players.
    pub partnership: bool,
    pub hand_size: HandSizeRule,
    /// Points that win the game: a positive multiple of five, at most [`MAX_TARGET`].
    pub target: u32,
    pub settlement: SettlementRule,
    /// The turn clock (section 11); `None`: no clock, a seat has all the time it likes.
    pub clock: Option<TurnClock>,
    /// What happens when a seat's time runs out or its player leaves (section 11).
    pub absence: Absence,
}

impl Rules {
    /// The default rules for this many players: standard hands, no partnership, target
    /// 250 for two players and 200 for three or four, own pips off. Not validated.
    pub fn for_players(players: usize) -> Rules {
        Rules {
            players,
            partnership: false,
            hand_size: HandSizeRule::Standard,
            target: Rules::default_target(players),
            settlement: SettlementRule::OwnPipsOff,
            clock: None,
            absence: Absence::default(),
        }
    }

    /// The default target: 250 with two players, 200 with three or four.
    pub fn default_target(players: usize) -> u32 {
        if players == 2 { 250 } else { 200 }
    }

    /// Checks every option; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), Error> {
        if !(2..=4).contains(&self.players) {
            return Err(Error::InvalidOption {
                field: "players",
                reason: "must be 2, 3 or 4",
            });
        }
        if self.partnership && self.players != 4 {
            return Err(Error::InvalidOption {
                field: "partnership",
                reason: "needs exactly 4 players",
            });
        }
        if self.target == 0 || !self.target.is_multiple_of(5) || self.target > MAX_TARGET {
            return Err(Error::InvalidOption {
                field: "target",
                reason: "must be a positive multiple of 5, at most 10000",
            });
        }
        if let Some(clock) = &self.clock {
            if clock.move_secs == 0 || clock.move_secs > MAX_CLOCK_SECS {
                return Err(Error::InvalidOption {
                    field: "clock.move_seconds",
                    reason: "must be 1 to 2592000 (30 days)",
                });
            }
            if clock.bank_secs > MAX_CLOCK_SECS || clock.increment_secs > MAX_CLOCK_SECS {
                return Err(Error::InvalidOption {
                    field: "clock",
                    reason: "bank and increment must be at most 2592000 seconds (30 days)",
                });
            }
        }
        if let Absence::Bot {
            takes_seat_after, ..
        } = self.absence
            && takes_seat_after > MAX_TAKES_SEAT_AFTER
        {
            return Err(Error::InvalidOption {
                field: "absence.bot_takes_seat_after",
                reason: "must be at most 10 timeouts in a row",
            });
        }
        Ok(())
    }

    /// Tiles each player takes at the deal.
    pub fn hand_tiles(&self) -> usize {
        self.hand_size.tiles(self.players)
    }

    /// Number of scoring sides: 2 in a partnership, else one per player.
    pub fn sides(&self) -> usize {
        if self.partnership { 2 } else { self.players }
    }

    /// The side a seat scores for.
    pub fn side_of(&self, seat: Seat) -> Side {
        if self.partnership { seat % 2 } else { seat }
    }
}

impl Default for Rules {
    /// Two players, every other option at its default.
    fn default() -> Rules {
        Rules::for_players(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_nine_hand_size_cells() {
        use HandSizeRule::*;
        let table = [
            (Standard, [9, 7, 5]),
            (FiveEach, [5, 5, 5]),
            (SevenFive, [7, 5, 5]),
        ];
        for (rule, sizes) in table {
            for (players, size) in (2..=4).zip(sizes) {
                assert_eq!(rule.tiles(players), size, "{rule:?} with {players} players");
            }
        }
    }

    #[test]
    fn defaults_follow_the_rules() {
        assert_eq!(Rules::for_players(2).target, 250);
        assert_eq!(Rules::for_players(3).target, 200);
        assert_eq!(Rules::for_players(4).target, 200);
        let r = Rules::default();
        assert_eq!(r.hand_size, HandSizeRule::Standard);
        assert_eq!(r.settlement, SettlementRule::OwnPipsOff);
        assert!(!r.partnership);
        assert!(r.validate().is_ok());
    }

    #[test]
    fn invalid_options_are_refused() {
        let bad = |f: fn(&mut Rules)| {
            let mut r = Rules::for_players(4);
            f(&mut r);
            r.validate().unwrap_err()
        };
        assert!(matches!(
            bad(|r| r.players = 1),
            Error::InvalidOption {
                field: "players",
                ..
            }
        ));
        assert!(matches!(
            bad(|r| r.players = 5),
            Error::InvalidOption {
                field: "players",
                ..
            }
        ));
        assert!(matches!(
            bad(|r| {
                r.players = 3;
                r.partnership = true
            }),
            Error::InvalidOption {
                field: "partnership",
                ..
            }
        ));
        for target in [0, 7, 10_005] {
            let mut r = Rules::for_players(2);
            r.target = target;
            let e = r.validate().unwrap_err().to_string();
            assert!(e.contains("target"), "{target}: {e}");
        }
        let mut r = Rules::for_players(4);
        r.partnership = true;
        r.target = 5;
        assert!(r.validate().is_ok());
        assert_eq!(r.sides(), 2);
        assert_eq!(
            (r.side_of(0), r.side_of(1), r.side_of(2), r.side_of(3)),
            (0, 1, 0, 1)
        );
    }
}
