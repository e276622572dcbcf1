//! The match store: the latest state of each match, so that a move from any other
//! state (an older token: a take-back, or a second device behind) is refused
//! (`ABORTED` `STATE_STALE`) instead of starting a branch.
//!
//! Optional (`--match-store`): without it the service is stateless and every token
//! opens, as docs/security.md says. With it, NewGame writes the new match's head, and
//! every call that moves a match (ClaimSeat, Deal, Play, Draw, with the bots' moves
//! inside them) is answered only after [`MatchStore::advance`] moved the match's head
//! from the state the call came with to the state it made, in one step. A call made
//! again from the same token makes the same state (state ids are deterministic,
//! `state::lineage`) and is answered again, not refused: a retry is not a fork. A
//! ClaimSeat without a claim key draws a new credential, so its retry is a new branch
//! and is refused once the first claim is stored; with its key it makes the same
//! state again (`state::claim`). The tokens of a match made with a store say so
//! ([`Move::stored`]): a store that does not hold such a match refuses it as
//! forgotten; a match made without one (before the store was turned on) is taken as
//! it comes.
//!
//! Two kinds: [`MemoryStore`], this process's memory, which serves one replica; and
//! [`RedisStore`], any Redis-protocol server (Redis 7.0 or later, Valkey), standalone or
//! a Redis Cluster, shared by every replica: one key per match,
//! `allfives:{<match id in hex>}:head` (the hash tag keeps a match's keys in one
//! cluster slot), holding the head's state id (16 bytes) and its token, with a time to
//! live renewed by every move, checked and written by one Lua script ([`ADVANCE`]) run
//! through the `redis` crate's script helper (which loads it again on a server that
//! lost it).

use std::num::NonZeroUsize;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use lru::LruCache;

use crate::state::lineage::StateId;

pub use crate::state::MatchId;

/// What a call that changed a match made: the match, the state it came from (none for
/// a new match) and the state it made, and whether the match was made with a store
/// (its tokens say so): then a store that does not hold it refuses the move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    pub match_id: MatchId,
    pub from: Option<StateId>,
    pub to: StateId,
    pub stored: bool,
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
    /// The match was made with a store (its tokens say so) and the store does not hold
    /// it: its time to live passed, or the store lost it.
    #[error("the match store no longer holds the match")]
    Forgotten,
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
    /// Moves the match's head from `m.from` to `m.to` (whose token is `token`), if it
    /// is at `m.from` (or already at `m.to`: a retry, answered again; or not known: a
    /// new match, or one made without a store, taken as it comes); else refuses with the
    /// head, or as forgotten (a match made with a store that the store does not hold).
    pub async fn advance(&self, m: &Move, token: &[u8]) -> Result<(), Refused> {
        match self {
            MatchStore::Memory(store) => store.advance(m, token, Instant::now()),
            MatchStore::Redis(store) => store.advance(m, token).await,
        }
    }

    /// The match's head, if the store holds it: its state id and token.
    pub async fn latest(&self, match_id: &MatchId) -> Result<Option<Latest>, Refused> {
        match self {
            MatchStore::Memory(store) => Ok(store.latest(match_id, Instant::now())),
            MatchStore::Redis(store) => store.latest(match_id).await,
        }
    }
}

/// A match's head as the store holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Latest {
    pub state: StateId,
    pub token: Vec<u8>,
}

impl Latest {
    /// A head as a Redis key holds it: the state id, then the token.
    fn from_bytes(bytes: &[u8]) -> Option<Latest> {
        let (id, token) = bytes.split_first_chunk::<16>()?;
        Some(Latest {
            state: *id,
            token: token.to_vec(),
        })
    }
}

/// The compare-and-set, one step in the store: KEYS[1] the match's head key, holding
/// the head's state id (16 bytes) and then its token; ARGV the state the call came
/// from (empty for a new match), the state it made, the time to live in milliseconds,
/// "1" if the match was made with a store (so it must be held), and the new token.
/// Answers `{"ok"}`, `{"stale", head's id}` or `{"forgotten"}`.
pub const ADVANCE: &str = r#"
local head = redis.call('GET', KEYS[1])
local id = head and string.sub(head, 1, 16)
if id == ARGV[2] then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {'ok'}
end
if head then
  if id ~= ARGV[1] then
    return {'stale', id}
  end
elseif ARGV[4] == '1' and ARGV[1] ~= '' then
  return {'forgotten'}
end
redis.call('SET', KEYS[1], ARGV[2] .. ARGV[5], 'PX', ARGV[3])
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

    async fn latest(&self, match_id: &MatchId) -> Result<Option<Latest>, Refused> {
        let mut get = redis::cmd("GET");
        get.arg(RedisStore::head_key(match_id));
        let head: redis::RedisResult<Option<Vec<u8>>> = match self.connection.clone() {
            Connection::Single(mut c) => get.query_async(&mut c).await,
            Connection::Cluster(mut c) => get.query_async(&mut c).await,
        };
        match head.map_err(|e| Refused::Unavailable(e.to_string()))? {
            None => Ok(None),
            Some(bytes) => Latest::from_bytes(&bytes).map(Some).ok_or_else(|| {
                Refused::Unavailable("the store holds a head that is not one".into())
            }),
        }
    }

    async fn advance(&self, m: &Move, token: &[u8]) -> Result<(), Refused> {
        let ttl_ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let mut invocation = self.script.key(RedisStore::head_key(&m.match_id));
        invocation
            .arg(m.from.as_ref().map_or(&[][..], |from| &from[..]))
            .arg(&m.to[..])
            .arg(ttl_ms)
            .arg(if m.stored { "1" } else { "0" })
            .arg(token);
        let answer: redis::RedisResult<Vec<Vec<u8>>> = match self.connection.clone() {
            Connection::Single(mut c) => invocation.invoke_async(&mut c).await,
            Connection::Cluster(mut c) => invocation.invoke_async(&mut c).await,
        };
        let answer = answer.map_err(|e| Refused::Unavailable(e.to_string()))?;
        match answer.as_slice() {
            [ok] if ok == b"ok" => Ok(()),
            [forgotten] if forgotten == b"forgotten" => Err(Refused::Forgotten),
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

#[derive(Clone, Debug)]
struct Head {
    state: StateId,
    /// Its token (for `Watch`).
    token: Box<[u8]>,
    moved: Instant,
}

impl MemoryStore {
    pub fn new(capacity: NonZeroUsize, ttl: Duration) -> MemoryStore {
        MemoryStore {
            heads: Mutex::new(LruCache::new(capacity)),
            ttl,
        }
    }

    fn advance(&self, m: &Move, token: &[u8], now: Instant) -> Result<(), Refused> {
        let mut heads = self.heads.lock().unwrap_or_else(PoisonError::into_inner);
        let live = heads
            .get_mut(&m.match_id)
            .filter(|head| now.saturating_duration_since(head.moved) < self.ttl);
        match live {
            Some(head) if head.state == m.to => {
                // A retry: its time to live renewed, as the script does.
                head.moved = now;
                return Ok(());
            }
            Some(head) if Some(head.state) != m.from => {
                return Err(Refused::Stale(Stale { latest: head.state }));
            }
            None if m.stored && m.from.is_some() => return Err(Refused::Forgotten),
            // At `from` (a move), or not known (a new match, or one made without a
            // store: taken as it comes).
            _ => {}
        }
        heads.put(
            m.match_id,
            Head {
                state: m.to,
                token: token.into(),
                moved: now,
            },
        );
        Ok(())
    }

    fn latest(&self, match_id: &MatchId, now: Instant) -> Option<Latest> {
        let mut heads = self.heads.lock().unwrap_or_else(PoisonError::into_inner);
        heads
            .get(match_id)
            .filter(|head| now.saturating_duration_since(head.moved) < self.ttl)
            .map(|head| Latest {
                state: head.state,
                token: head.token.to_vec(),
            })
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
            match_id: [match_id; MATCH_ID_LEN],
            from: from.map(|f| [f; 16]),
            to: [to; 16],
            stored: true,
        }
    }

    fn stale(head: u8) -> Result<(), Refused> {
        Err(Refused::Stale(Stale { latest: [head; 16] }))
    }

    impl MemoryStore {
        fn at(&self, m: &Move, now: Instant) -> Result<(), Refused> {
            self.advance(m, &m.to, now)
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
        let id = [1; MATCH_ID_LEN];
        assert_eq!(s.latest(&id, now), None);
        s.advance(&step(1, None, 1), b"first", now).expect("new");
        s.advance(&step(1, Some(1), 2), b"second", now)
            .expect("move");
        // A retry keeps the token stored first.
        s.advance(&step(1, Some(1), 2), b"again", now)
            .expect("retry");
        let latest = Latest {
            state: [2; 16],
            token: b"second".to_vec(),
        };
        assert_eq!(s.latest(&id, now), Some(latest));
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
        assert_eq!(s.at(&step(1, Some(2), 5), later), Err(Refused::Forgotten));
        // Pushed out by newer matches in a full store.
        let s = store(2);
        s.at(&step(1, None, 1), then).expect("1");
        s.at(&step(2, None, 1), then).expect("2");
        s.at(&step(3, None, 1), then).expect("3");
        assert_eq!(s.len(), 2);
        assert_eq!(s.at(&step(1, Some(1), 4), then), Err(Refused::Forgotten));
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
