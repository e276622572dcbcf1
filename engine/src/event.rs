//! What an action caused, reported in order so a table can be animated from it.

use super::clock::Why;
use super::layout::End;
use super::rules::{Seat, Side};
use super::suggest::Level;
use super::tile::{Tile, TileSet};

/// How a hand came to an end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HandEnd {
    /// The seat placed its last tile ("domino").
    Domino { seat: Seat },
    /// The boneyard was empty and nobody could play.
    Blocked,
    /// The seat's placement reached the target; the hand was not played out or settled.
    TargetReached { seat: Seat },
    /// The seat forfeited the match (its time ran out, or its player left); the hand
    /// was not played out or settled.
    Forfeit { seat: Seat },
}

/// The close of a hand: how it ended, every hand shown (none for a forfeit), and the
/// settlement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HandResult {
    /// 1-based number of the hand.
    pub hand: u32,
    pub end: HandEnd,
    /// Every seat's remaining tiles, shown to everyone (seats past `players` are empty;
    /// every seat's empty for a forfeit, whose tiles stay face down).
    pub hands: [TileSet; 4],
    /// Score change per side from settlement (zero when the target ended the hand).
    pub settlement: [i32; 4],
}

/// One thing that happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// A hand was dealt and `starter` leads.
    Dealt {
        hand: u32,
        starter: Seat,
    },
    /// A tile was placed; `end` is `None` for the lead. `count` is the count after it;
    /// `points` what it scored (the count when that is a positive multiple of five).
    Played {
        seat: Seat,
        tile: Tile,
        end: Option<End>,
        count: u32,
        points: u32,
    },
    /// A tile was taken from the boneyard. The engine always names it; see
    /// [`Event::redacted_for`] for what others may see.
    Drew {
        seat: Seat,
        tile: Option<Tile>,
    },
    /// The seat could not play and the boneyard was empty.
    Passed {
        seat: Seat,
    },
    HandEnded(HandResult),
    /// The side reached the target, or every other side forfeited.
    GameEnded {
        winner: Side,
    },
    /// The seat's time ran out, or its player left: what the match's absence option
    /// says follows (a bot's moves for it, [`Event::BotTookSeat`], or its forfeit).
    Absent {
        seat: Seat,
        why: Why,
    },
    /// A bot of `level` holds the seat until its player comes back.
    BotTookSeat {
        seat: Seat,
        level: Level,
    },
    /// The seat's player came back and plays it again from its next turn.
    Returned {
        seat: Seat,
    },
    /// The seat forfeited the match; the end of the hand (if one was in play) and of
    /// the match follow.
    Forfeited {
        seat: Seat,
        why: Why,
    },
}

impl Event {
    /// Whether replaying the hand reports it again ([`Game::hand_events`]): every
    /// event of an action; not a seat's absence, a bot taking a seat or a player's
    /// return, which no action of the hand records.
    ///
    /// [`Game::hand_events`]: crate::Game::hand_events
    pub fn in_hand_history(&self) -> bool {
        !matches!(
            self,
            Event::Absent { .. } | Event::BotTookSeat { .. } | Event::Returned { .. }
        )
    }

    /// The event as `viewer` may see it: a drawn tile is shown only to its drawer
    /// (`None` is a spectator).
    pub fn redacted_for(self, viewer: Option<Seat>) -> Event {
        match self {
            Event::Drew { seat, .. } if viewer != Some(seat) => Event::Drew { seat, tile: None },
            other => other,
        }
    }
}
