//! A change's seat events as the match store keeps them beside its head, for the
//! match's watchers: a seat's absence (its time ran out, or its player left), a bot
//! taking the seat and its player's return. No action of the hand records them, so
//! replaying the hand (`Game::hand_events`, which a watcher's events come from) does
//! not tell them again; the store keeps the last change's, and a watcher that had seen
//! the state before it is told them in their place among the change's events.
//!
//! Each is three bytes: how many of the change's hand events came before it, its kind
//! and its seat (with a bot's level in the high four bits). They are public: every
//! seat and spectator sees them, in the views (`SeatKind`, the clocks) as well.

use crate::engine::suggest::Level;
use crate::engine::{Event, Why};

const ABSENT_TIMED_OUT: u8 = 1;
const ABSENT_LEFT: u8 = 2;
const BOT_TOOK_SEAT: u8 = 3;
const RETURNED: u8 = 4;

/// The seat events among a call's `events`, as the store keeps them.
pub fn written(events: &[Event]) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut before = 0u8;
    for event in events {
        let (kind, seat, level) = match *event {
            Event::Absent {
                seat,
                why: Why::TimedOut,
            } => (ABSENT_TIMED_OUT, seat, 0),
            Event::Absent {
                seat,
                why: Why::Left,
            } => (ABSENT_LEFT, seat, 0),
            Event::BotTookSeat { seat, level } => (BOT_TOOK_SEAT, seat, level_byte(level)),
            Event::Returned { seat } => (RETURNED, seat, 0),
            _ => {
                before = before.saturating_add(1);
                continue;
            }
        };
        bytes.extend_from_slice(&[before, kind, (seat as u8 & 0x0f) | level << 4]);
    }
    bytes
}

/// `change`, the hand events of one change, with the seat events `written` kept
/// beside it put back in their places (any the bytes do not describe left out).
pub fn told(change: &[Event], written: &[u8]) -> Vec<Event> {
    let mut events = Vec::with_capacity(change.len() + written.len() / 3);
    let mut next = 0;
    for entry in written.chunks_exact(3) {
        let &[before, kind, arg] = entry else {
            continue;
        };
        let seat = usize::from(arg & 0x0f);
        let event = match kind {
            ABSENT_TIMED_OUT => Event::Absent {
                seat,
                why: Why::TimedOut,
            },
            ABSENT_LEFT => Event::Absent {
                seat,
                why: Why::Left,
            },
            BOT_TOOK_SEAT => match level_of(arg >> 4) {
                Some(level) => Event::BotTookSeat { seat, level },
                None => continue,
            },
            RETURNED => Event::Returned { seat },
            _ => continue,
        };
        let at = usize::from(before).clamp(next, change.len());
        events.extend_from_slice(&change[next..at]);
        events.push(event);
        next = at;
    }
    events.extend_from_slice(&change[next..]);
    events
}

fn level_byte(level: Level) -> u8 {
    match level {
        Level::Easy => 0,
        Level::Medium => 1,
        Level::Hard => 2,
    }
}

fn level_of(byte: u8) -> Option<Level> {
    match byte {
        0 => Some(Level::Easy),
        1 => Some(Level::Medium),
        2 => Some(Level::Hard),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Tile;

    fn drew(seat: usize) -> Event {
        Event::Drew {
            seat,
            tile: Tile::new(1, 2),
        }
    }

    #[test]
    fn seat_events_come_back_in_their_places_among_the_changes_events() {
        let call = [
            Event::Absent {
                seat: 1,
                why: Why::TimedOut,
            },
            Event::BotTookSeat {
                seat: 1,
                level: Level::Hard,
            },
            drew(1),
            drew(1),
            Event::Absent {
                seat: 3,
                why: Why::Left,
            },
            drew(2),
            Event::Returned { seat: 0 },
        ];
        let bytes = written(&call);
        assert_eq!(bytes.len(), 4 * 3);
        let hand: Vec<Event> = call
            .iter()
            .copied()
            .filter(|e| e.in_hand_history())
            .collect();
        assert_eq!(told(&hand, &bytes), call);
        // A change without seat events is told as it is.
        assert_eq!(told(&hand, &[]), hand);
    }

    #[test]
    fn bytes_that_describe_no_seat_event_are_left_out() {
        let hand = [drew(0), drew(1)];
        // An unknown kind, an unknown level, a place past the end, a torn entry.
        let bytes = [0, 9, 0, 1, BOT_TOOK_SEAT, 0x71, 7, RETURNED, 2, 0, 1];
        assert_eq!(
            told(&hand, &bytes),
            [drew(0), drew(1), Event::Returned { seat: 2 }]
        );
    }
}
