//! The match store: the latest state of each match, so that a move from any other
//! state (an older token: a take-back, or a second device behind) is refused
//! (`ABORTED` `STATE_STALE`) instead of starting a branch (issue 25, first part).
//!
//! Optional (`--match-store`): without it the service is stateless and every token
//! opens, as docs/security.md says. With it, every call that moves a match (ClaimSeat,
//! Deal, Play, Draw, with the bots' moves inside them) is answered only after
//! [`MatchStore::advance`] moved the match's head from the state the call came with to
//! the state it made, in one step (NewGame writes nothing: a match's first head is its
//! first move's). A call made again from the same token makes
//! the same state (state ids are deterministic, `state::lineage`) and is answered
//! again, not refused: a retry is not a fork. A ClaimSeat without a claim key draws a
//! new credential, so its retry is a new branch and is refused once the first claim
//! is stored; with its key it makes the same state again (`state::claim`).
//!
//! Two kinds: [`MemoryStore`], this process's memory, which serves one replica (a
//! second replica keeps its own heads and would take a fork sent to it); and
//! [`RedisStore`], any Redis-protocol server (Redis 7.0 or later, Valkey), standalone or
//! a Redis Cluster, shared by every replica: one key per match,
//! `allfives:{<match id in hex>}:head` (the hash tag keeps a match's keys in one
//! cluster slot), holding the head's 16 bytes with a time to live renewed by every
//! move, checked and written by one Lua script ([`ADVANCE`]) run through the `redis`
//! crate's script helper (which loads it again on a server that lost it). A match the
//! store does not know (never seen, or forgotten: its time to live passed, the memory
//! store was full or restarted) takes the first move that comes for it as its head. A
//! token that says it was made with a store (so that a forgotten match is refused, not
//! taken anew) and the `Watch` stream are the parts still to come.

use std::num::NonZeroUsize;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use lru::LruCache;

use crate::state::lineage::StateId;

pub use crate::state::MatchId;

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

/// Why a match could not be moved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The call's state is not the match's latest: `latest` is.
    #[error("the match is at another state")]
    Stale(Stale),
    /// The store did not answer (down, failing over, or an error): nothing was
    /// stored; the call may be made again.
    #[error("the match store is unavailable: {0}")]
    Unavailable(String),
}

/// Where the latest state of each match is kept.
#[derive(Debug)]
pub enum MatchStore {
    /// This process's memory: one replica.
    Memory(MemoryStore),
    /// A Redis-protocol server or cluster: every replica.
    Redis(RedisStore),
}

impl MatchStore {
    /// Moves the match's head from `m.from` to `m.to`, if it is at `m.from` (or
    /// already at `m.to`: a retry, answered again; or not known: taken as it comes);
    /// else refuses with the head.
    pub async fn advance(&self, m: &Move) -> Result<(), Refused> {
        match self {
            MatchStore::Memory(store) => store.advance(m, Instant::now()).map_err(Refused::Stale),
            MatchStore::Redis(store) => store.advance(m).await,
        }
    }
}

/// The compare-and-set, one step in the store: KEYS[1] the match's head key, ARGV the
/// state the call came from (empty for a new match), the state it made, and the time
/// to live in milliseconds. Answers `{"ok"}`, or `{"stale", head}`.
pub const ADVANCE: &str = r#"
local head = redis.call('GET', KEYS[1])
if head == ARGV[2] then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {'ok'}
end
if head and head ~= ARGV[1] then
  return {'stale', head}
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return {'ok'}
"#;

/// A connection to a Redis-protocol server, or to a cluster: both multiplexed, shared
/// by every call, and reconnecting by themselves.
#[derive(Clone)]
enum Connection {
    Single(redis::aio::ConnectionManager),
    Cluster(redis::cluster_async::ClusterConnection),
}

/// The longest the store may take to answer one command (or to connect) before the
/// call is refused `STORE_UNAVAILABLE` (the call's own deadline may end it sooner).
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);

/// The heads in a Redis-protocol server or cluster ([`ADVANCE`]).
pub struct RedisStore {
    connection: Connection,
    script: redis::Script,
    ttl: Duration,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.connection {
            Connection::Single(_) => "single",
            Connection::Cluster(_) => "cluster",
        };
        f.debug_struct("RedisStore")
            .field("kind", &kind)
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl RedisStore {
    /// Connects to the server at `url` (`redis://host:port`), or with `cluster` to the
    /// cluster whose nodes include `urls`; fails if it cannot.
    pub async fn connect(
        urls: &[String],
        cluster: bool,
        ttl: Duration,
    ) -> Result<RedisStore, redis::RedisError> {
        let connection = if cluster {
            let client = redis::cluster::ClusterClient::builder(urls.iter().map(String::as_str))
                .response_timeout(RESPONSE_TIMEOUT)
                .connection_timeout(RESPONSE_TIMEOUT)
                .build()?;
            Connection::Cluster(client.get_async_connection().await?)
        } else {
            let [url] = urls else {
                return Err(redis::RedisError::from((
                    redis::ErrorKind::InvalidClientConfig,
                    "--match-store redis takes one URL (several are a cluster's nodes: \
                     --match-store redis-cluster)",
                )));
            };
            let client = redis::Client::open(url.as_str())?;
            let config = redis::aio::ConnectionManagerConfig::new()
                .set_response_timeout(Some(RESPONSE_TIMEOUT))
                .set_connection_timeout(Some(RESPONSE_TIMEOUT));
            Connection::Single(
                redis::aio::ConnectionManager::new_with_config(client, config).await?,
            )
        };
        Ok(RedisStore {
            connection,
            script: redis::Script::new(ADVANCE),
            ttl,
        })
    }

    /// The key of a match's head.
    pub fn head_key(match_id: &MatchId) -> String {
        let hex: String = match_id.iter().map(|b| format!("{b:02x}")).collect();
        format!("allfives:{{{hex}}}:head")
    }

    async fn advance(&self, m: &Move) -> Result<(), Refused> {
        let ttl_ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let mut invocation = self.script.key(RedisStore::head_key(&m.match_id));
        invocation
            .arg(m.from.as_ref().map_or(&[][..], |from| &from[..]))
            .arg(&m.to[..])
            .arg(ttl_ms);
        let answer: redis::RedisResult<Vec<Vec<u8>>> = match self.connection.clone() {
            Connection::Single(mut c) => invocation.invoke_async(&mut c).await,
            Connection::Cluster(mut c) => invocation.invoke_async(&mut c).await,
        };
        let answer = answer.map_err(|e| Refused::Unavailable(e.to_string()))?;
        match answer.as_slice() {
            [ok] if ok == b"ok" => Ok(()),
            [stale, head] if stale == b"stale" => match <StateId>::try_from(head.as_slice()) {
                Ok(latest) => Err(Refused::Stale(Stale { latest })),
                Err(_) => Err(Refused::Unavailable(
                    "the store holds a head that is not a state id".into(),
                )),
            },
            _ => Err(Refused::Unavailable(
                "the store answered the script with something else".into(),
            )),
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
            Some(head) if head != m.to && Some(head) != m.from => {
                return Err(Stale { latest: head });
            }
            _ => {}
        }
        // At `from` (a move), at `to` already (a retry: its time to live renewed, as
        // the script does), or not known (taken as it comes).
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
    use crate::state::MATCH_ID_LEN;

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
