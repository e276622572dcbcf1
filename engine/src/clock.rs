//! Turn clocks and absent players (docs/rules.md section 11): a rule option chosen when
//! the game is created, and the arithmetic of the clocks, pure: time is a number of
//! seconds (or, to judge a deadline, milliseconds) given by the caller, which keeps it.
//!
//! A clocked match gives the seat on turn [`TurnClock::move_secs`] for each move; once
//! they are spent it draws on its bank ([`TurnClock::bank_secs`] for the whole match,
//! [`TurnClock::increment_secs`] added after each of its plays). A move is one action:
//! a draw ends a move as a play does, and the seat, still on turn, starts another. The
//! seat's deadline is when its turn began, plus the move's time, plus its bank; what
//! happens when it passes, or when a player leaves, is the match's [`Absence`] option.
//! Bots (and seats a bot holds) move at once and use no time.

use super::replay::MAX_HAND_ACTIONS;
use super::rules::Seat;
use super::suggest::Level;

/// The longest time any clock option may name: 30 days.
pub const MAX_CLOCK_SECS: u32 = 30 * 24 * 3600;
/// The most timeouts in a row an [`Absence::Bot`] may wait for before its bot takes the
/// seat.
pub const MAX_TAKES_SEAT_AFTER: u8 = 10;

/// The turn clock of a match (a rule option; a match without one has no clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TurnClock {
    /// Seconds the seat on turn has for each move before it draws on its bank.
    pub move_secs: u32,
    /// Seconds each seat may spend beyond its moves' time over the whole match.
    pub bank_secs: u32,
    /// Seconds added to a seat's bank after each of its plays.
    pub increment_secs: u32,
}

impl TurnClock {
    /// A phone game's clock: 30 seconds a move and a minute's bank, no increment.
    pub const PHONE: TurnClock = TurnClock {
        move_secs: 30,
        bank_secs: 60,
        increment_secs: 0,
    };
}

/// Why a seat's player is not playing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Why {
    /// Its time ran out.
    TimedOut,
    /// Its player left (the `Leave` call).
    Left,
}

/// What happens when a seat's time runs out, or its player leaves (a rule option).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Absence {
    /// The seat forfeits: the match ends and its side loses.
    Forfeit,
    /// A bot of `level` plays for the seat: each timeout's turn, and once the seat has
    /// timed out `takes_seat_after` times in a row (0: never; 1: at its first timeout)
    /// or its player leaves, every turn until its player comes back.
    Bot { level: Level, takes_seat_after: u8 },
}

impl Default for Absence {
    /// A MEDIUM bot plays a timed-out turn, and holds the seat from the second
    /// timeout in a row (or at once when its player leaves).
    fn default() -> Absence {
        Absence::Bot {
            level: Level::Medium,
            takes_seat_after: 2,
        }
    }
}

/// What an absence does to the seat (see [`Absence`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The seat forfeits the match.
    Forfeit,
    /// A bot of this level plays the seat's turn; the seat stays its player's.
    PlayTurn(Level),
    /// A bot of this level holds the seat until its player comes back.
    TakeSeat(Level),
}

impl Absence {
    /// What a timeout does to a seat that has now timed out `in_row` times in a row
    /// (this one counted).
    pub fn on_timeout(self, in_row: u8) -> Outcome {
        match self {
            Absence::Forfeit => Outcome::Forfeit,
            Absence::Bot {
                level,
                takes_seat_after,
            } if takes_seat_after > 0 && in_row >= takes_seat_after => Outcome::TakeSeat(level),
            Absence::Bot { level, .. } => Outcome::PlayTurn(level),
        }
    }

    /// What leaving does to a seat.
    pub fn on_leave(self) -> Outcome {
        match self {
            Absence::Forfeit => Outcome::Forfeit,
            Absence::Bot { level, .. } => Outcome::TakeSeat(level),
        }
    }
}

/// The clocks of a match: when the current hand was dealt and when each of its actions
/// happened (seconds since the Unix epoch, as the servers' clocks read them), each
/// seat's bank, and each seat's timeouts in a row.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Clocks {
    /// When the current (or last) hand was dealt; 0 before the first deal.
    pub dealt_at: u64,
    /// Seconds from the one before (the deal, for the first) to each action of the hand.
    times: Vec<u32>,
    /// Seconds left in each seat's bank.
    pub banks: [u32; 4],
    /// Each seat's timeouts in a row (reset by a move of its own in time).
    pub late: [u8; 4],
}

impl Clocks {
    /// The clocks of a new match of `players` under `clock`: every bank full.
    pub fn new(clock: &TurnClock, players: usize) -> Clocks {
        let mut banks = [0; 4];
        for bank in banks.iter_mut().take(players) {
            *bank = clock.bank_secs;
        }
        Clocks {
            dealt_at: 0,
            times: Vec::new(),
            banks,
            late: [0; 4],
        }
    }

    /// Clocks as a token holds them; `None` if the times do not fit a hand.
    pub fn from_parts(
        dealt_at: u64,
        times: Vec<u32>,
        banks: [u32; 4],
        late: [u8; 4],
    ) -> Option<Clocks> {
        let clocks = Clocks {
            dealt_at,
            times,
            banks,
            late,
        };
        let fits = clocks.times.len() <= MAX_HAND_ACTIONS
            && clocks
                .times
                .iter()
                .try_fold(dealt_at, |at, &t| at.checked_add(u64::from(t)))
                .is_some();
        fits.then_some(clocks)
    }

    /// Seconds from the one before to each action of the current hand.
    pub fn times(&self) -> &[u32] {
        &self.times
    }

    /// When the last action (or the deal) happened: when the seat on turn's move began.
    pub fn last(&self) -> u64 {
        self.times
            .iter()
            .fold(self.dealt_at, |at, &t| at.saturating_add(u64::from(t)))
    }

    /// When `seat`'s move (begun at [`Clocks::last`]) runs out of time: the move's
    /// time, then its bank.
    pub fn deadline(&self, clock: &TurnClock, seat: Seat) -> u64 {
        let bank = self.banks.get(seat).copied().unwrap_or(0);
        self.last()
            .saturating_add(u64::from(clock.move_secs))
            .saturating_add(u64::from(bank))
    }

    /// From when `seat`'s timeout is taken (milliseconds since the epoch): its deadline
    /// plus `grace_ms` allowed for a move's travel.
    pub fn claimable_at(&self, clock: &TurnClock, seat: Seat, grace_ms: u64) -> u64 {
        self.deadline(clock, seat)
            .saturating_mul(1000)
            .saturating_add(grace_ms)
    }

    /// Whether `seat`'s time has run out at `now_ms` (milliseconds since the epoch),
    /// with `grace_ms` allowed for a move's travel.
    pub fn past_due(&self, clock: &TurnClock, seat: Seat, now_ms: u64, grace_ms: u64) -> bool {
        now_ms >= self.claimable_at(clock, seat, grace_ms)
    }

    /// A move of `seat` at `at`: the time it took past the move's time comes off its
    /// bank (never below zero: the grace's part is forgiven), a play adds the
    /// increment, and its timeouts in a row are over.
    pub fn moved(&mut self, clock: &TurnClock, seat: Seat, at: u64, played: bool) {
        self.spent(clock, seat, at);
        if let (Some(bank), Some(late)) = (self.banks.get_mut(seat), self.late.get_mut(seat)) {
            if played {
                *bank = bank
                    .saturating_add(clock.increment_secs)
                    .min(MAX_CLOCK_SECS);
            }
            *late = 0;
        }
    }

    /// `seat`, on turn, stops at `at` without moving (its player leaves): the time it
    /// took past the move's time comes off its bank, as for a move, and nothing else.
    pub fn spent(&mut self, clock: &TurnClock, seat: Seat, at: u64) {
        let took = at.saturating_sub(self.last());
        let over = took.saturating_sub(u64::from(clock.move_secs));
        if let Some(bank) = self.banks.get_mut(seat) {
            *bank = u32::try_from(u64::from(*bank).saturating_sub(over)).unwrap_or(0);
        }
    }

    /// `seat`'s time ran out: its bank is spent. Its timeouts in a row, this one
    /// counted.
    pub fn timed_out(&mut self, seat: Seat) -> u8 {
        match (self.banks.get_mut(seat), self.late.get_mut(seat)) {
            (Some(bank), Some(late)) => {
                *bank = 0;
                *late = late.saturating_add(1);
                *late
            }
            _ => 0,
        }
    }

    /// A seat's player came back: its timeouts in a row are forgotten.
    pub fn returned(&mut self, seat: Seat) {
        if let Some(late) = self.late.get_mut(seat) {
            *late = 0;
        }
    }

    /// Writes down the time of the actions a hand has had since the last written:
    /// `actions` is how many it has now (a new hand's when `dealt`). Times never go
    /// back: an action is at `at` or at the last one's time, whichever is later.
    pub fn stamp(&mut self, dealt: bool, actions: usize, at: u64) {
        if dealt {
            self.dealt_at = at.max(self.last());
            self.times.clear();
        }
        let at = at.max(self.last());
        let mut last = self.last();
        while self.times.len() < actions.min(MAX_HAND_ACTIONS) {
            self.times
                .push(u32::try_from(at - last).unwrap_or(u32::MAX));
            last = at;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLOCK: TurnClock = TurnClock {
        move_secs: 20,
        bank_secs: 60,
        increment_secs: 5,
    };

    #[test]
    fn a_move_in_its_time_keeps_the_bank_and_a_slow_one_draws_on_it() {
        let mut clocks = Clocks::new(&CLOCK, 4);
        clocks.stamp(true, 0, 1000);
        assert_eq!(clocks.last(), 1000);
        assert_eq!(clocks.deadline(&CLOCK, 0), 1080);
        // 15 s: within the move's 20; a play adds the increment.
        clocks.moved(&CLOCK, 0, 1015, true);
        clocks.stamp(false, 1, 1015);
        assert_eq!(clocks.banks[0], 65);
        // 50 s: 30 past the move's time come off the bank; a draw adds nothing.
        clocks.moved(&CLOCK, 1, 1065, false);
        clocks.stamp(false, 2, 1065);
        assert_eq!(clocks.banks[1], 30);
        assert_eq!(clocks.times(), &[15, 50]);
        // The seat drew and is still on turn: its next move starts now.
        assert_eq!(clocks.deadline(&CLOCK, 1), 1065 + 20 + 30);
        // Past the bank, within the grace: the bank is spent, not below zero.
        clocks.moved(&CLOCK, 1, 1065 + 20 + 31, false);
        assert_eq!(clocks.banks[1], 0);
    }

    /// docs/rules.md section 11, example E.
    #[test]
    fn example_e_the_bank_and_the_increment() {
        let clock = TurnClock {
            move_secs: 20,
            bank_secs: 30,
            increment_secs: 5,
        };
        let ten = 36_000; // 10:00:00, in seconds since midnight
        let mut clocks = Clocks::new(&clock, 2);
        clocks.stamp(true, 0, ten);
        clocks.moved(&clock, 0, ten + 15, true);
        clocks.stamp(false, 1, ten + 15);
        assert_eq!(clocks.banks[0], 35);
        clocks.moved(&clock, 1, ten + 50, false);
        clocks.stamp(false, 2, ten + 50);
        assert_eq!(clocks.banks[1], 15);
        assert_eq!(clocks.deadline(&clock, 1), ten + 85, "10:01:25");
        assert_eq!(clocks.claimable_at(&clock, 1, 2_000), (ten + 87) * 1000);
        assert!(!clocks.past_due(&clock, 1, (ten + 86) * 1000, 2_000));
        clocks.moved(&clock, 1, ten + 86, true);
        assert_eq!(clocks.banks[1], 5, "spent, then the increment");
    }

    #[test]
    fn the_deadline_is_judged_with_the_grace_in_milliseconds() {
        let mut clocks = Clocks::new(&CLOCK, 4);
        clocks.stamp(true, 0, 1000);
        let due = 1080 * 1000;
        assert!(!clocks.past_due(&CLOCK, 0, due, 2000));
        assert!(!clocks.past_due(&CLOCK, 0, due + 1999, 2000));
        assert_eq!(clocks.claimable_at(&CLOCK, 0, 2000), due + 2000);
        assert!(clocks.past_due(&CLOCK, 0, due + 2000, 2000));
        assert!(clocks.past_due(&CLOCK, 0, due, 0));
    }

    #[test]
    fn timeouts_count_in_a_row_until_the_seat_moves_or_comes_back() {
        let mut clocks = Clocks::new(&CLOCK, 4);
        assert_eq!(clocks.timed_out(2), 1);
        assert_eq!(clocks.banks[2], 0);
        assert_eq!(clocks.timed_out(2), 2);
        clocks.moved(&CLOCK, 2, 0, true);
        assert_eq!((clocks.late[2], clocks.banks[2]), (0, 5));
        assert_eq!(clocks.timed_out(2), 1);
        clocks.returned(2);
        assert_eq!(clocks.late[2], 0);
        assert_eq!(
            clocks.timed_out(7),
            0,
            "a seat out of range changes nothing"
        );
    }

    #[test]
    fn times_never_go_back_and_a_deal_starts_the_hands_times() {
        let mut clocks = Clocks::new(&CLOCK, 4);
        clocks.stamp(true, 2, 500);
        assert_eq!((clocks.dealt_at, clocks.times()), (500, &[0, 0][..]));
        // A replica whose clock is behind writes the last time, not an earlier one.
        clocks.stamp(false, 3, 490);
        assert_eq!(clocks.times(), &[0, 0, 0]);
        clocks.stamp(false, 5, 530);
        assert_eq!(clocks.times(), &[0, 0, 0, 30, 0]);
        assert_eq!(clocks.last(), 530);
        clocks.stamp(true, 0, 600);
        assert_eq!((clocks.dealt_at, clocks.times().len()), (600, 0));
    }

    #[test]
    fn the_absence_option_decides_each_timeout_and_leave() {
        let bot = Absence::Bot {
            level: Level::Hard,
            takes_seat_after: 2,
        };
        assert_eq!(bot.on_timeout(1), Outcome::PlayTurn(Level::Hard));
        assert_eq!(bot.on_timeout(2), Outcome::TakeSeat(Level::Hard));
        assert_eq!(bot.on_leave(), Outcome::TakeSeat(Level::Hard));
        let never = Absence::Bot {
            level: Level::Easy,
            takes_seat_after: 0,
        };
        assert_eq!(never.on_timeout(9), Outcome::PlayTurn(Level::Easy));
        let at_once = Absence::Bot {
            level: Level::Easy,
            takes_seat_after: 1,
        };
        assert_eq!(at_once.on_timeout(1), Outcome::TakeSeat(Level::Easy));
        assert_eq!(Absence::Forfeit.on_timeout(1), Outcome::Forfeit);
        assert_eq!(Absence::Forfeit.on_leave(), Outcome::Forfeit);
    }

    #[test]
    fn clocks_from_a_token_must_fit_a_hand() {
        assert!(Clocks::from_parts(1, vec![1; MAX_HAND_ACTIONS], [0; 4], [0; 4]).is_some());
        assert!(Clocks::from_parts(1, vec![1; MAX_HAND_ACTIONS + 1], [0; 4], [0; 4]).is_none());
        assert!(Clocks::from_parts(u64::MAX, vec![1], [0; 4], [0; 4]).is_none());
    }
}
