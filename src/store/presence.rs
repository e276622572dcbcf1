//! Which seats have a device watching a match (a `Watch` stream with the seat's
//! credential), across the replicas sharing the store: advice for a page to say "gone
//! for 40 s" before a seat's clock runs out (docs/rules.md section 11; the turn clock
//! stays the authority).
//!
//! Each replica counts its own seat streams per match and seat ([`Local`]). When a
//! count goes from 0 to 1 the replica tells the store the seat is watched here, when it
//! goes back to 0 that it is not any more and since when; each change is told to every
//! replica's watchers of the match (a [`super::Notice::Presence`]). No timer runs per
//! seat: in Redis a replica's word is a lease ([`LEASE`]), renewed for all its seats at
//! once by one task, so a replica that dies stops counting once its leases run out (a
//! watcher reads the presence again at each heartbeat, and sees it then). The memory
//! store is one replica: its counts are the truth.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use super::MatchId;

/// How long a replica's word that a seat is watched there holds in Redis unless
/// renewed (every third of it).
pub const LEASE: Duration = Duration::from_secs(45);

/// The most (match, seat) pairs the memory store remembers a seat's departure for:
/// past it the oldest departures are forgotten (the seat then shows as never watched).
const MEMORY_DEPARTURES: usize = 100_000;

/// One seat's devices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeatPresence {
    /// A device of the seat watches now.
    pub watching: bool,
    /// While none does: since when (ms since the Unix epoch); `None` if none has yet.
    pub gone_since_ms: Option<u64>,
}

/// The seats of a match, in seat order.
pub type Seats = [SeatPresence; 4];

/// This replica's seat streams, per match and seat.
#[derive(Debug)]
pub struct Local {
    /// This process's name in the store's leases.
    pub replica: u64,
    counts: Mutex<HashMap<(MatchId, u8), u32>>,
}

/// What a stream's arrival or departure changed here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The seat's first stream here.
    Arrived,
    /// The seat's last stream here ended.
    Departed,
    /// Another stream of a seat watched here already.
    None,
}

impl Local {
    pub fn new(replica: u64) -> Local {
        Local {
            replica,
            counts: Mutex::default(),
        }
    }

    fn counts(&self) -> MutexGuard<'_, HashMap<(MatchId, u8), u32>> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A stream of `seat` begins here.
    pub fn arrive(&self, match_id: MatchId, seat: u8) -> Change {
        let mut counts = self.counts();
        let count = counts.entry((match_id, seat)).or_insert(0);
        *count += 1;
        if *count == 1 {
            Change::Arrived
        } else {
            Change::None
        }
    }

    /// A stream of `seat` ended here.
    pub fn depart(&self, match_id: MatchId, seat: u8) -> Change {
        let mut counts = self.counts();
        match counts.get_mut(&(match_id, seat)) {
            Some(count) if *count > 1 => {
                *count -= 1;
                Change::None
            }
            Some(_) => {
                counts.remove(&(match_id, seat));
                Change::Departed
            }
            None => Change::None,
        }
    }

    /// The seats watched here (whose leases this replica renews).
    pub fn watched(&self) -> Vec<(MatchId, u8)> {
        self.counts().keys().copied().collect()
    }

    /// Whether `seat` of the match has a stream here.
    pub fn is_watched(&self, match_id: &MatchId, seat: u8) -> bool {
        self.counts().contains_key(&(*match_id, seat))
    }
}

/// The memory store's departures: when each seat's last stream ended.
#[derive(Debug, Default)]
pub struct MemoryDepartures {
    gone: Mutex<HashMap<(MatchId, u8), u64>>,
}

impl MemoryDepartures {
    fn gone(&self) -> MutexGuard<'_, HashMap<(MatchId, u8), u64>> {
        self.gone.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn arrived(&self, match_id: MatchId, seat: u8) {
        self.gone().remove(&(match_id, seat));
    }

    pub fn departed(&self, match_id: MatchId, seat: u8, now_ms: u64) {
        let mut gone = self.gone();
        if gone.len() >= MEMORY_DEPARTURES {
            // Forget the older half: a bound, not a cache worth tuning.
            let mut times: Vec<u64> = gone.values().copied().collect();
            times.sort_unstable();
            let cut = times[times.len() / 2];
            gone.retain(|_, &mut at| at > cut);
        }
        gone.insert((match_id, seat), now_ms);
    }

    /// The seats as this replica (the only one) knows them.
    pub fn seats(&self, local: &Local, match_id: &MatchId) -> Seats {
        let gone = self.gone();
        let mut seats = Seats::default();
        for (seat, presence) in seats.iter_mut().enumerate() {
            let seat = seat as u8;
            *presence = SeatPresence {
                watching: local.is_watched(match_id, seat),
                gone_since_ms: gone.get(&(*match_id, seat)).copied(),
            };
            if presence.watching {
                presence.gone_since_ms = None;
            }
        }
        seats
    }
}

/// The seats from a Redis presence hash's fields: `w:<seat>:<replica>` a lease's
/// expiry, `g:<seat>` when the seat's last stream on some replica ended. A seat is
/// watched while one of its leases holds; else gone since its latest departure, or
/// the last renewal of a lapsed lease.
pub fn from_fields(fields: &[(String, u64)], now_ms: u64) -> Seats {
    let mut seats = Seats::default();
    let mut left = [None::<u64>; 4];
    for (field, value) in fields {
        let mut parts = field.split(':');
        let (Some(kind), Some(seat)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some(seat) = seat.parse::<usize>().ok().filter(|&s| s < 4) else {
            continue;
        };
        // A lapsed lease: its replica last said the seat was watched when it wrote the
        // lease (a lease before its end), and died or lost the store since.
        let gone = match kind {
            "w" if *value > now_ms => {
                seats[seat].watching = true;
                continue;
            }
            "w" => value.saturating_sub(LEASE.as_millis() as u64),
            "g" => *value,
            _ => continue,
        };
        left[seat] = Some(left[seat].map_or(gone, |l: u64| l.max(gone)));
    }
    for (presence, left) in seats.iter_mut().zip(left) {
        presence.gone_since_ms = if presence.watching { None } else { left };
    }
    seats
}

/// The seats whose streams here changed since this replica's presence writer
/// (`MatchStore::start_presence`) last wrote them to Redis. Each is written once, as it
/// is when written (watched: a lease; not: departed now), however often it changed
/// meanwhile: a device that comes and goes a hundred times while the store is slow
/// costs one write, and what waits is bounded by the seats, not by the changes.
#[derive(Debug, Default)]
pub struct Pending {
    seats: Mutex<HashSet<(MatchId, u8)>>,
}

impl Pending {
    fn seats(&self) -> MutexGuard<'_, HashSet<(MatchId, u8)>> {
        self.seats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The seat's streams here changed.
    pub fn add(&self, match_id: MatchId, seat: u8) {
        self.seats().insert((match_id, seat));
    }

    /// The seats to write now, forgotten here.
    pub fn take(&self) -> Vec<(MatchId, u8)> {
        std::mem::take(&mut *self.seats()).into_iter().collect()
    }
}

/// A seat's stream's place in the presence: told to the store when it ends.
pub struct Present {
    pub(super) store: Weak<super::MatchStore>,
    pub(super) match_id: MatchId,
    pub(super) seat: u8,
}

impl std::fmt::Debug for Present {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Present")
            .field("match_id", &self.match_id)
            .field("seat", &self.seat)
            .finish_non_exhaustive()
    }
}

impl Drop for Present {
    fn drop(&mut self) {
        if let Some(store) = self.store.upgrade() {
            store.depart(self.match_id, self.seat);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seat_is_watched_from_its_first_stream_to_its_last() {
        let local = Local::new(7);
        let m = MatchId([1; 16]);
        assert_eq!(local.arrive(m, 0), Change::Arrived);
        assert_eq!(local.arrive(m, 0), Change::None);
        assert_eq!(local.depart(m, 0), Change::None);
        assert!(local.is_watched(&m, 0));
        assert_eq!(local.depart(m, 0), Change::Departed);
        assert!(!local.is_watched(&m, 0));
        assert_eq!(local.depart(m, 0), Change::None, "nothing to end");
    }

    #[test]
    fn a_seat_that_changed_many_times_is_written_once() {
        let pending = Pending::default();
        let m = MatchId([1; 16]);
        for _ in 0..100 {
            pending.add(m, 0);
            pending.add(m, 2);
        }
        let mut seats = pending.take();
        seats.sort();
        assert_eq!(seats, [(m, 0), (m, 2)]);
        assert!(pending.take().is_empty());
    }

    #[test]
    fn redis_fields_give_leases_held_and_the_latest_departure() {
        let fields = [
            ("w:0:1".to_string(), 52_000),
            ("w:0:2".to_string(), 500),
            ("w:1:1".to_string(), 45_900),
            ("g:1".to_string(), 700),
            ("g:2".to_string(), 300),
            ("junk".to_string(), 5),
            ("w:9:1".to_string(), 5_000),
        ];
        let seats = from_fields(&fields, 46_000);
        assert_eq!(
            seats[0],
            SeatPresence {
                watching: true,
                gone_since_ms: None
            }
        );
        assert_eq!(
            seats[1],
            SeatPresence {
                watching: false,
                gone_since_ms: Some(900)
            },
            "a lapsed lease counts as a departure when it was last renewed"
        );
        assert_eq!(seats[2].gone_since_ms, Some(300));
        assert_eq!(seats[3], SeatPresence::default(), "never watched");
    }
}
