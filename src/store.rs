//! The match store: the latest state of each match, so that a move from any other
//! state (an older token: a take-back, or a second device behind) is refused
//! (`ABORTED` `STATE_STALE`) instead of starting a branch (issue 25, first part).
//!
//! Optional (`--match-store`): without it the service is stateless and every token
//! opens, as docs/security.md says. With it, every call that changes a match (NewGame,
//! ClaimSeat, Deal, Play, Draw, with the bots' moves inside them) is answered only
//! after [`MatchStore::advance`] moved the match's head from the state the call came
//! with to the state it made, in one step. A call made again from the same token makes
//! the same state (state ids are deterministic, `state::lineage`) and is answered
//! again, not refused: a retry is not a fork. A ClaimSeat draws a new credential, so
//! its retry is a new branch and is refused once the first claim is stored.
//!
//! One kind so far, [`MemoryStore`]: this process's memory, so it serves one replica
//! (a second replica keeps its own heads and would take a fork sent to it). A match
//! the store does not know (never seen, or forgotten: its time to live passed, the
//! store was full, the process restarted) takes the first move that comes for it as
//! its head. The Redis-protocol store shared by replicas, a token that says it was
//! made with a store (so a forgotten match is refused, not taken anew) and the `Watch`
//! stream are the parts still to come.

use std::num::NonZeroUsize;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use lru::LruCache;

use crate::state::MATCH_ID_LEN;
use crate::state::lineage::StateId;

/// A match's id, from its token.
pub type MatchId = [u8; MATCH_ID_LEN];

/// What a call that changed a match made: the match, the state it came from (none for
/// a new match) and the state it made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    pub match_id: MatchId,
    pub from: Option<StateId>,
    pub to: StateId,
}

/// The call's state is not the match's latest: `latest` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stale {
    pub latest: StateId,
}

/// Where the latest state of each match is kept.
#[derive(Debug)]
pub enum MatchStore {
    /// This process's memory: one replica.
    Memory(MemoryStore),
}

impl MatchStore {
    /// Moves the match's head from `m.from` to `m.to`, if it is at `m.from` (or
    /// already at `m.to`: a retry, answered again; or not known: taken as it comes);
    /// else refuses with the head.
    pub async fn advance(&self, m: &Move) -> Result<(), Stale> {
        match self {
            MatchStore::Memory(store) => store.advance(m, Instant::now()),
        }
    }
}

/// The heads of the matches moved lately, in this process's memory: at most
/// `capacity` (the one moved longest ago forgotten first), each forgotten `ttl` after
/// its last move.
#[derive(Debug)]
pub struct MemoryStore {
    heads: Mutex<LruCache<MatchId, Head>>,
    ttl: Duration,
}

#[derive(Clone, Copy, Debug)]
struct Head {
    state: StateId,
    moved: Instant,
}

impl MemoryStore {
    pub fn new(capacity: NonZeroUsize, ttl: Duration) -> MemoryStore {
        MemoryStore {
            heads: Mutex::new(LruCache::new(capacity)),
            ttl,
        }
    }

    fn advance(&self, m: &Move, now: Instant) -> Result<(), Stale> {
        let mut heads = self.heads.lock().unwrap_or_else(PoisonError::into_inner);
        let live = heads
            .get(&m.match_id)
            .filter(|head| now.saturating_duration_since(head.moved) < self.ttl)
            .map(|head| head.state);
        match live {
            Some(head) if head == m.to => return Ok(()),
            Some(head) if Some(head) != m.from => return Err(Stale { latest: head }),
            _ => {}
        }
        heads.put(
            m.match_id,
            Head {
                state: m.to,
                moved: now,
            },
        );
        Ok(())
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

    const HOUR: Duration = Duration::from_secs(3600);

    fn store(capacity: usize) -> MemoryStore {
        MemoryStore::new(NonZeroUsize::new(capacity).expect("capacity"), HOUR)
    }

    fn step(match_id: u8, from: Option<u8>, to: u8) -> Move {
        Move {
            match_id: [match_id; MATCH_ID_LEN],
            from: from.map(|f| [f; 16]),
            to: [to; 16],
        }
    }

    #[test]
    fn a_match_moves_from_its_head_only() {
        let s = store(8);
        let now = Instant::now();
        assert_eq!(s.advance(&step(1, None, 1), now), Ok(()));
        assert_eq!(s.advance(&step(1, Some(1), 2), now), Ok(()));
        assert_eq!(s.advance(&step(1, Some(2), 3), now), Ok(()));
        // From an older state: a fork, refused with the head.
        assert_eq!(
            s.advance(&step(1, Some(1), 9), now),
            Err(Stale { latest: [3; 16] })
        );
        // NewGame's id again for a match already moved: refused too.
        assert_eq!(
            s.advance(&step(1, None, 1), now),
            Err(Stale { latest: [3; 16] })
        );
        // Another match is its own.
        assert_eq!(s.advance(&step(2, Some(7), 8), now), Ok(()));
    }

    #[test]
    fn a_retry_that_made_the_head_is_answered_again() {
        let s = store(8);
        let now = Instant::now();
        s.advance(&step(1, None, 1), now).expect("new");
        s.advance(&step(1, Some(1), 2), now).expect("move");
        assert_eq!(s.advance(&step(1, Some(1), 2), now), Ok(()));
        // Once the match moved on, the old call is stale.
        s.advance(&step(1, Some(2), 3), now).expect("next");
        assert_eq!(
            s.advance(&step(1, Some(1), 2), now),
            Err(Stale { latest: [3; 16] })
        );
    }

    #[test]
    fn a_forgotten_match_takes_the_move_that_comes() {
        // Its time to live passed.
        let s = store(8);
        let then = Instant::now();
        s.advance(&step(1, None, 1), then).expect("new");
        s.advance(&step(1, Some(1), 2), then).expect("move");
        let later = then + HOUR;
        assert_eq!(s.advance(&step(1, Some(1), 5), later), Ok(()));
        assert_eq!(
            s.advance(&step(1, Some(2), 6), later),
            Err(Stale { latest: [5; 16] })
        );
        // Pushed out by newer matches in a full store.
        let s = store(2);
        s.advance(&step(1, None, 1), then).expect("1");
        s.advance(&step(2, None, 1), then).expect("2");
        s.advance(&step(3, None, 1), then).expect("3");
        assert_eq!(s.len(), 2);
        assert_eq!(s.advance(&step(1, Some(9), 4), then), Ok(()));
    }
}
