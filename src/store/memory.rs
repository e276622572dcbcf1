//! The memory store: the heads of the matches moved lately, in this process's memory.
//! It serves one replica: a second keeps its own heads, and a match made on one is
//! forgotten on the other.

use std::num::NonZeroUsize;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use lru::LruCache;

use super::{Head, MatchId, Move, RematchOffer, Stale, StoreRefusal};

/// At most `capacity` heads (the one moved longest ago forgotten first), each
/// forgotten `ttl` after its last move.
#[derive(Debug)]
pub struct MemoryStore {
    heads: Mutex<LruCache<MatchId, KeptHead>>,
    ttl: Duration,
}

#[derive(Clone, Debug)]
struct KeptHead {
    head: Head,
    moved: Instant,
    /// Its rematch, once a seat asked for it (a finished match's).
    rematch: Option<RematchOffer>,
}

impl MemoryStore {
    pub fn new(capacity: NonZeroUsize, ttl: Duration) -> MemoryStore {
        MemoryStore {
            heads: Mutex::new(LruCache::new(capacity)),
            ttl,
        }
    }

    /// The move's check and write (see `MatchStore::advance`): the new head when the
    /// match moved, `None` for a retry of the move that made the head.
    pub fn advance(
        &self,
        m: &Move,
        head: impl FnOnce() -> Head,
        now: Instant,
    ) -> Result<Option<Head>, StoreRefusal> {
        let mut heads = self.heads.lock().unwrap_or_else(PoisonError::into_inner);
        let live = heads
            .get_mut(&m.match_id)
            .filter(|kept| now.saturating_duration_since(kept.moved) < self.ttl);
        match live {
            Some(kept) if kept.head.state == m.to => {
                // A retry: its time to live renewed, as the script does.
                kept.moved = now;
                return Ok(None);
            }
            Some(kept) if Some(kept.head.state) != m.from => {
                return Err(StoreRefusal::Stale(Stale {
                    latest: kept.head.state,
                }));
            }
            None if m.stored && m.from.is_some() => return Err(StoreRefusal::Forgotten),
            // At `from` (a move), or not known (a new match, or one made without a
            // store: taken as it comes).
            _ => {}
        }
        let head = head();
        heads.put(
            m.match_id,
            KeptHead {
                head: head.clone(),
                moved: now,
                rematch: None,
            },
        );
        Ok(Some(head))
    }

    pub fn latest(&self, match_id: &MatchId, now: Instant) -> Option<Head> {
        let mut heads = self.heads.lock().unwrap_or_else(PoisonError::into_inner);
        heads
            .get(match_id)
            .filter(|kept| now.saturating_duration_since(kept.moved) < self.ttl)
            .map(|kept| kept.head.clone())
    }

    /// Keeps `offer` as the match's rematch unless one is kept already (nothing for a
    /// match not held): whether it was kept now.
    pub fn offer_rematch(&self, match_id: &MatchId, offer: RematchOffer, now: Instant) -> bool {
        let mut heads = self.heads.lock().unwrap_or_else(PoisonError::into_inner);
        match heads
            .peek_mut(match_id)
            .filter(|kept| now.saturating_duration_since(kept.moved) < self.ttl)
        {
            Some(kept) if kept.rematch.is_none() => {
                kept.rematch = Some(offer);
                true
            }
            _ => false,
        }
    }

    pub fn rematch_offer(&self, match_id: &MatchId, now: Instant) -> Option<RematchOffer> {
        let heads = self.heads.lock().unwrap_or_else(PoisonError::into_inner);
        heads
            .peek(match_id)
            .filter(|kept| now.saturating_duration_since(kept.moved) < self.ttl)
            .and_then(|kept| kept.rematch)
    }

    /// Matches held now (forgotten ones included until they are pushed out).
    pub fn len(&self) -> usize {
        self.heads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::MATCH_ID_LEN;

    const HOUR: Duration = Duration::from_secs(3600);

    fn store(capacity: usize) -> MemoryStore {
        MemoryStore::new(NonZeroUsize::new(capacity).expect("capacity"), HOUR)
    }

    /// A move of match `match_id` from state `from` to `to`, of a match made with a
    /// store.
    fn step(match_id: u8, from: Option<u8>, to: u8) -> Move {
        Move {
            match_id: MatchId([match_id; MATCH_ID_LEN]),
            from: from.map(|f| [f; 16]),
            to: [to; 16],
            stored: true,
        }
    }

    fn stale(head: u8) -> Result<(), StoreRefusal> {
        Err(StoreRefusal::Stale(Stale { latest: [head; 16] }))
    }

    fn head_of(m: &Move, token: &[u8]) -> Head {
        Head {
            state: m.to,
            previous: m.from,
            events: 1,
            seats: Vec::new(),
            token: token.to_vec(),
        }
    }

    impl MemoryStore {
        fn at(&self, m: &Move, now: Instant) -> Result<(), StoreRefusal> {
            self.advance(m, || head_of(m, &m.to), now).map(|_| ())
        }
    }

    #[test]
    fn a_match_moves_from_its_head_only() {
        let s = store(8);
        let now = Instant::now();
        assert_eq!(s.at(&step(1, None, 1), now), Ok(()));
        assert_eq!(s.at(&step(1, Some(1), 2), now), Ok(()));
        assert_eq!(s.at(&step(1, Some(2), 3), now), Ok(()));
        // From an older state: a fork, refused with the head.
        assert_eq!(s.at(&step(1, Some(1), 9), now), stale(3));
        // NewGame's id again for a match already moved: refused too.
        assert_eq!(s.at(&step(1, None, 1), now), stale(3));
        // Another match is its own.
        assert_eq!(s.at(&step(2, None, 7), now), Ok(()));
        assert_eq!(s.at(&step(2, Some(7), 8), now), Ok(()));
    }

    #[test]
    fn the_head_is_the_latest_move_with_its_token() {
        let s = store(8);
        let now = Instant::now();
        let id = MatchId([1; MATCH_ID_LEN]);
        assert_eq!(s.latest(&id, now), None);
        let (first, second) = (step(1, None, 1), step(1, Some(1), 2));
        assert!(
            s.advance(&first, || head_of(&first, b"1"), now)
                .expect("new")
                .is_some()
        );
        let moved = s.advance(&second, || head_of(&second, b"2"), now);
        assert_eq!(moved, Ok(Some(head_of(&second, b"2"))));
        // A retry keeps the token stored first, and moves nothing.
        let again = s.advance(&second, || head_of(&second, b"again"), now);
        assert_eq!(again, Ok(None));
        assert_eq!(s.latest(&id, now), Some(head_of(&second, b"2")));
        assert_eq!(s.latest(&id, now + HOUR), None);
    }

    #[test]
    fn a_retry_that_made_the_head_is_answered_again() {
        let s = store(8);
        let now = Instant::now();
        s.at(&step(1, None, 1), now).expect("new");
        s.at(&step(1, Some(1), 2), now).expect("move");
        assert_eq!(s.at(&step(1, Some(1), 2), now), Ok(()));
        // Once the match moved on, the old call is stale.
        s.at(&step(1, Some(2), 3), now).expect("next");
        assert_eq!(s.at(&step(1, Some(1), 2), now), stale(3));
    }

    #[test]
    fn a_forgotten_match_made_with_a_store_is_refused() {
        // Its time to live passed.
        let s = store(8);
        let then = Instant::now();
        s.at(&step(1, None, 1), then).expect("new");
        s.at(&step(1, Some(1), 2), then).expect("move");
        let later = then + HOUR;
        assert_eq!(
            s.at(&step(1, Some(2), 5), later),
            Err(StoreRefusal::Forgotten)
        );
        // Pushed out by newer matches in a full store.
        let s = store(2);
        s.at(&step(1, None, 1), then).expect("1");
        s.at(&step(2, None, 1), then).expect("2");
        s.at(&step(3, None, 1), then).expect("3");
        assert_eq!(s.len(), 2);
        assert_eq!(
            s.at(&step(1, Some(1), 4), then),
            Err(StoreRefusal::Forgotten)
        );
    }

    #[test]
    fn a_match_made_without_a_store_is_taken_as_it_comes() {
        let s = store(8);
        let now = Instant::now();
        let unflagged = |from, to| Move {
            stored: false,
            ..step(1, Some(from), to)
        };
        assert_eq!(s.at(&unflagged(4, 5), now), Ok(()));
        assert_eq!(s.at(&unflagged(4, 6), now), stale(5));
        assert_eq!(s.at(&unflagged(5, 6), now), Ok(()));
    }
}
