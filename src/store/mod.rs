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
//! Two kinds: [`memory`], this process's memory, which serves one replica; and
//! [`redis`], any Redis-protocol server (Redis 7.0 or later, Valkey), standalone or a
//! Redis Cluster, shared by every replica (one key per match holding its [`Head`],
//! checked and written by one Lua script). Each store tells [`changes`] of every move
//! it takes (the Redis one through pub/sub, from any replica), and the `Watch` streams
//! of this process follow their matches there.
//!
//! The store also keeps the matches' invite codes ([`invites`]): a short code a friend
//! types, mapped to its match for a while; and a finished match's rematch once a seat
//! asked for it ([`RematchOffer`]), told to the finished match's watchers.

pub mod changes;
pub mod invites;
pub mod memory;
pub mod presence;
#[cfg(feature = "server")]
pub mod redis;

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::state::lineage::{ID_LEN, StateId};

pub use crate::state::MatchId;

/// The longest the store may take to answer one command (or to connect) before the
/// call is refused `STORE_UNAVAILABLE` (the call's own deadline may end it sooner).
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);
pub use changes::{Changes, Notice, Watching};
pub use invites::{ClientKey, Invite, InviteCode, InviteRules, RateLimit};

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

/// Why a match could not be moved (or watched).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreRefusal {
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
    /// As many streams watch the match here as a match may have
    /// ([`changes::MAX_WATCHERS_PER_MATCH`]).
    #[error("the match has as many watchers here as it may")]
    Crowded,
    /// As many invite codes were looked up in vain this minute as the store allows,
    /// from the client ([`RateLimit::Client`]) or in all ([`RateLimit::Deployment`])
    /// (`invites`).
    #[error("too many invite codes were tried in vain this minute ({})", .0.as_str())]
    RateLimited(RateLimit),
}

/// A finished match's rematch, once a seat asked for it (`Rematch`): the rematch's id
/// and the seat that asked first. Kept beside the finished match's head for as long as
/// a head lives, and told to its watchers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RematchOffer {
    pub match_id: MatchId,
    pub seat: u8,
}

impl RematchOffer {
    /// The offer as the Redis store keeps it: the seat, then the rematch's id.
    pub fn to_bytes(self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(1 + crate::state::MATCH_ID_LEN);
        bytes.push(self.seat);
        bytes.extend_from_slice(&self.match_id.0);
        bytes
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<RematchOffer> {
        let (seat, id) = bytes.split_first()?;
        Some(RematchOffer {
            match_id: MatchId(id.try_into().ok()?),
            seat: *seat,
        })
    }
}

/// A match's latest state as the store holds it: its id, the id of the state it was
/// made from (none for NewGame's), how many of the current hand's events the call that
/// made it caused, that call's seat events (a seat's absence, a bot taking it, its
/// player's return: what replaying the hand does not tell) as the service writes them
/// (`service::seat_events::written`, opaque here), and its token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    pub state: StateId,
    pub previous: Option<StateId>,
    pub events: u32,
    pub seats: Vec<u8>,
    pub token: Vec<u8>,
}

impl Head {
    /// Bytes before the seat events: the state id, the previous id (zeros for none),
    /// the event count in the low 24 bits of a little-endian `u32` and the seat
    /// events' length in its high 8 (zero in the heads written before there were any).
    const PREFIX: usize = 2 * ID_LEN + 4;

    /// The most events a head counts, and the most bytes of seat events it keeps (a
    /// call causes a few: [`Head::seats`]).
    const MAX_EVENTS: u32 = (1 << 24) - 1;
    const MAX_SEATS: usize = u8::MAX as usize;

    /// The head as the Redis store keeps and publishes it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let seats = &self.seats[..self.seats.len().min(Head::MAX_SEATS)];
        let mut bytes = Vec::with_capacity(Head::PREFIX + seats.len() + self.token.len());
        bytes.extend_from_slice(&self.state);
        bytes.extend_from_slice(&self.previous.unwrap_or([0; ID_LEN]));
        let counts = self.events.min(Head::MAX_EVENTS) | (seats.len() as u32) << 24;
        bytes.extend_from_slice(&counts.to_le_bytes());
        bytes.extend_from_slice(seats);
        bytes.extend_from_slice(&self.token);
        bytes
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Head> {
        let (state, rest) = bytes.split_first_chunk::<ID_LEN>()?;
        let (previous, rest) = rest.split_first_chunk::<ID_LEN>()?;
        let (counts, rest) = rest.split_first_chunk::<4>()?;
        let counts = u32::from_le_bytes(*counts);
        let (seats, token) = rest.split_at_checked((counts >> 24) as usize)?;
        Some(Head {
            state: *state,
            previous: (*previous != [0; ID_LEN]).then_some(*previous),
            events: counts & Head::MAX_EVENTS,
            seats: seats.to_vec(),
            token: token.to_vec(),
        })
    }
}

/// Where the latest state of each match is kept, and the changes of those this
/// process's `Watch` streams follow.
#[derive(Debug)]
pub struct MatchStore {
    kind: Kind,
    changes: Arc<Changes>,
    /// This replica's seat streams, per match and seat (`presence`).
    local: Arc<presence::Local>,
    /// The memory store's seats' departures (unused by Redis, which keeps them).
    departures: presence::MemoryDepartures,
    /// The time presence is told in: the server's clock.
    clock: crate::server_clock::ServerClock,
    /// Redis: the seats whose presence is to be written, and the writer's wake-up
    /// (`MatchStore::start_presence`); no wake-up before it starts (memory: never).
    #[cfg(feature = "server")]
    pending: Arc<presence::Pending>,
    #[cfg(feature = "server")]
    writer: std::sync::OnceLock<tokio::sync::mpsc::Sender<()>>,
}

#[derive(Debug)]
enum Kind {
    /// This process's memory: one replica.
    Memory(memory::MemoryStore, invites::MemoryInvites),
    /// A Redis-protocol server or cluster: every replica.
    #[cfg(feature = "server")]
    Redis(redis::RedisStore),
}

impl MatchStore {
    /// A store in this process's memory holding at most `capacity` matches, each
    /// forgotten `ttl` after its last move, and their invite codes under `rules`.
    pub fn memory(capacity: NonZeroUsize, ttl: Duration, rules: InviteRules) -> MatchStore {
        let kind = Kind::Memory(
            memory::MemoryStore::new(capacity, ttl),
            invites::MemoryInvites::new(capacity, rules),
        );
        MatchStore::of(kind, Changes::new(None), 0)
    }

    /// A store of `kind` whose changes reach this process's watchers through
    /// `changes`, this replica named `replica` in its presence leases, on the system's
    /// clock.
    fn of(kind: Kind, changes: Arc<Changes>, replica: u64) -> MatchStore {
        MatchStore {
            kind,
            changes,
            local: Arc::new(presence::Local::new(replica)),
            departures: presence::MemoryDepartures::default(),
            clock: crate::server_clock::ServerClock::system(),
            #[cfg(feature = "server")]
            pending: Arc::default(),
            #[cfg(feature = "server")]
            writer: std::sync::OnceLock::new(),
        }
    }

    /// The same store, telling presence's times by `clock` (the server's).
    pub fn with_clock(self, clock: crate::server_clock::ServerClock) -> MatchStore {
        MatchStore { clock, ..self }
    }

    /// The Redis-protocol server at `urls` (one), or the cluster whose nodes include
    /// them (`cluster`), connected, with its subscription for this process's watchers;
    /// invite codes under `rules`.
    #[cfg(feature = "server")]
    pub async fn redis(
        urls: &[String],
        cluster: bool,
        ttl: Duration,
        rules: InviteRules,
    ) -> Result<MatchStore, ::redis::RedisError> {
        let (store, changes) = redis::RedisStore::connect(urls, cluster, ttl, rules).await?;
        let mut replica = [0u8; 8];
        crate::state::random::fill(&mut replica);
        let replica = u64::from_le_bytes(replica);
        Ok(MatchStore::of(Kind::Redis(store), changes, replica))
    }

    /// Starts this replica's presence writer (Redis; nothing for the memory store):
    /// one task writes the seats whose streams here changed ([`presence::Pending`]),
    /// each as it is when written (each seat's Redis writes one transaction), and
    /// renews all its leases every third of a lease, between those writes, so that a
    /// renewal never brings back a seat that departed, nor an arrival land after its
    /// own departure. It ends with the store.
    pub fn start_presence(&self) {
        #[cfg(feature = "server")]
        if let Kind::Redis(redis) = &self.kind {
            let (wake, mut woken) = tokio::sync::mpsc::channel(1);
            if self.writer.set(wake).is_err() {
                return;
            }
            let (redis, local, clock, pending) = (
                redis.clone(),
                Arc::clone(&self.local),
                self.clock.clone(),
                Arc::clone(&self.pending),
            );
            tokio::spawn(async move {
                let lease_ms = presence::LEASE.as_millis() as u64;
                let mut renewal = tokio::time::interval(presence::LEASE / 3);
                renewal.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                // Advice: a store that does not answer now is read again by the watchers
                // at their next heartbeat. The seats one wake-up takes are written within
                // one response time; those left then wait for the next wake-up or
                // renewal, so a slow store never holds the renewals back.
                let write_pending = async || {
                    let deadline = tokio::time::Instant::now() + RESPONSE_TIMEOUT;
                    let mut seats = pending.take().into_iter();
                    for (match_id, seat) in seats.by_ref() {
                        let now = clock.now_ms();
                        let lease = local.is_watched(&match_id, seat).then_some(now + lease_ms);
                        let write = redis.seat_presence(&match_id, seat, local.replica, lease, now);
                        if tokio::time::timeout_at(deadline, write).await.is_err() {
                            pending.add(match_id, seat);
                            break;
                        }
                    }
                    for (match_id, seat) in seats {
                        pending.add(match_id, seat);
                    }
                };
                loop {
                    tokio::select! {
                        woke = woken.recv() => match woke {
                            Some(()) => write_pending().await,
                            None => return,
                        },
                        _ = renewal.tick() => {
                            let watched = local.watched();
                            let until = clock.now_ms() + lease_ms;
                            let renew = redis.renew(&watched, local.replica, until);
                            let _ = tokio::time::timeout(RESPONSE_TIMEOUT, renew).await;
                            write_pending().await;
                        }
                    }
                }
            });
        }
    }

    /// A stream of `seat` watches the match here from now until the answer is dropped.
    pub fn arrive(self: &Arc<Self>, match_id: MatchId, seat: u8) -> presence::Present {
        if self.local.arrive(match_id, seat) == presence::Change::Arrived {
            self.told(match_id, seat, true);
        }
        presence::Present {
            store: Arc::downgrade(self),
            match_id,
            seat,
        }
    }

    /// A stream of `seat` ended here (its [`presence::Present`] dropped).
    pub(crate) fn depart(self: &Arc<Self>, match_id: MatchId, seat: u8) {
        if self.local.depart(match_id, seat) == presence::Change::Departed {
            self.told(match_id, seat, false);
        }
    }

    /// The seat's first stream here began (`arrived`), or its last ended: kept and told
    /// to the match's watchers, here (memory) or on every replica (Redis, off this
    /// task: a drop cannot wait).
    fn told(self: &Arc<Self>, match_id: MatchId, seat: u8, arrived: bool) {
        let now = self.clock.now_ms();
        match &self.kind {
            Kind::Memory(..) => {
                match arrived {
                    true => self.departures.arrived(match_id, seat),
                    false => self.departures.departed(match_id, seat, now),
                }
                self.changes.publish(&match_id, Notice::Presence);
            }
            #[cfg(feature = "server")]
            Kind::Redis(_) => {
                if let Some(wake) = self.writer.get() {
                    self.pending.add(match_id, seat);
                    // Full: the writer is woken already, and takes this seat with it.
                    let _ = wake.try_send(());
                }
            }
        }
    }

    /// Which seats of the match have a device watching, on every replica sharing the
    /// store.
    pub async fn presence(&self, match_id: &MatchId) -> Result<presence::Seats, StoreRefusal> {
        match &self.kind {
            Kind::Memory(..) => Ok(self.departures.seats(&self.local, match_id)),
            #[cfg(feature = "server")]
            Kind::Redis(store) => {
                let fields = tokio::time::timeout(RESPONSE_TIMEOUT, store.presence(match_id))
                    .await
                    .unwrap_or_else(|_| {
                        Err(StoreRefusal::Unavailable("no answer in time".into()))
                    })?;
                Ok(presence::from_fields(&fields, self.clock.now_ms()))
            }
        }
    }

    /// Moves the match's head from `m.from` to `m.to`, made by a call that caused
    /// `events` of the hand's events and the seat events `seats`, with its `token`: if it is at `m.from` (or already at `m.to`: a
    /// retry, answered again; or not known: a new match, or one made without a store,
    /// taken as it comes); else refuses with the head, or as forgotten (a match made
    /// with a store that the store does not hold). A move taken is told to every
    /// process's watchers of the match.
    pub async fn advance(
        &self,
        m: &Move,
        events: u32,
        seats: &[u8],
        token: &[u8],
    ) -> Result<(), StoreRefusal> {
        let head = || Head {
            state: m.to,
            previous: m.from,
            events,
            seats: seats.to_vec(),
            token: token.to_vec(),
        };
        match &self.kind {
            Kind::Memory(store, _) => {
                if let Some(moved) = store.advance(m, head, Instant::now())? {
                    self.changes
                        .publish(&m.match_id, Notice::Moved(Arc::new(moved)));
                }
                Ok(())
            }
            #[cfg(feature = "server")]
            Kind::Redis(store) => store.advance(m, &head()).await,
        }
    }

    /// Keeps `offer` as the finished match's rematch, unless one is kept already (the
    /// first seat to ask made it), and tells the finished match's watchers on every
    /// replica. Made again by every ask, so an offer whose telling was lost is told
    /// again. Whether this ask made the offer.
    pub async fn offer_rematch(
        &self,
        finished: &MatchId,
        offer: RematchOffer,
    ) -> Result<bool, StoreRefusal> {
        match &self.kind {
            Kind::Memory(store, _) => {
                let made = store.offer_rematch(finished, offer, Instant::now());
                self.changes.publish(finished, Notice::Rematch);
                Ok(made)
            }
            #[cfg(feature = "server")]
            Kind::Redis(store) => store.offer_rematch(finished, offer).await,
        }
    }

    /// The finished match's rematch, if a seat asked for it (and the store still holds
    /// the finished match).
    pub async fn rematch_offer(
        &self,
        finished: &MatchId,
    ) -> Result<Option<RematchOffer>, StoreRefusal> {
        match &self.kind {
            Kind::Memory(store, _) => Ok(store.rematch_offer(finished, Instant::now())),
            #[cfg(feature = "server")]
            Kind::Redis(store) => store.rematch_offer(finished).await,
        }
    }

    /// Whether the store answers (a Redis `PING`; the memory store always does).
    pub async fn ping(&self) -> Result<(), StoreRefusal> {
        match &self.kind {
            Kind::Memory(..) => Ok(()),
            #[cfg(feature = "server")]
            Kind::Redis(store) => store.ping().await,
        }
    }

    /// The match's head, if the store holds it.
    pub async fn latest(&self, match_id: &MatchId) -> Result<Option<Head>, StoreRefusal> {
        match &self.kind {
            Kind::Memory(store, _) => Ok(store.latest(match_id, Instant::now())),
            #[cfg(feature = "server")]
            Kind::Redis(store) => store.latest(match_id).await,
        }
    }

    /// Follows the match's changes from now on: once this answers, every move the
    /// store takes for it (from any replica) reaches the returned watcher, so a read
    /// of [`MatchStore::latest`] made after it misses nothing.
    /// Refused `Unavailable` if the store's subscription is not in place within
    /// [`RESPONSE_TIMEOUT`] (a store that is down).
    pub async fn watch(&self, match_id: MatchId) -> Result<Watching, StoreRefusal> {
        tokio::time::timeout(RESPONSE_TIMEOUT, self.changes.watch(match_id))
            .await
            .unwrap_or_else(|_| Err(StoreRefusal::Unavailable("no answer in time".into())))
    }

    /// The match's invite code while it lives, else a new one: the first of
    /// `candidates` (fresh random codes) that is no live code.
    pub async fn invite(
        &self,
        match_id: &MatchId,
        candidates: [InviteCode; invites::CANDIDATES],
    ) -> Result<Invite, StoreRefusal> {
        match &self.kind {
            Kind::Memory(_, codes) => codes.invite(match_id, candidates, Instant::now()),
            #[cfg(feature = "server")]
            Kind::Redis(store) => store.invite(match_id, candidates).await,
        }
    }

    /// The match a live invite code was made for, or `None` (a miss: counted for
    /// `client` and in all, for every replica of the store); refused
    /// [`StoreRefusal::RateLimited`], found or not, once this minute has had as many
    /// misses from `client` as a client is allowed, or as many in all as allowed.
    pub async fn open_invite(
        &self,
        code: &InviteCode,
        client: &ClientKey,
    ) -> Result<Option<MatchId>, StoreRefusal> {
        let minute = invites::minute_now();
        match &self.kind {
            Kind::Memory(_, codes) => codes.open(code, client, Instant::now(), minute),
            #[cfg(feature = "server")]
            Kind::Redis(store) => store.open_invite(code, client, minute).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_comes_back_from_its_bytes_with_its_seat_events() {
        let head = Head {
            state: [1; ID_LEN],
            previous: Some([2; ID_LEN]),
            events: 5,
            seats: vec![0, 1, 2, 3, 3, 0x12],
            token: vec![9; 40],
        };
        assert_eq!(Head::from_bytes(&head.to_bytes()), Some(head.clone()));
        // A head written before there were seat events (the count's high byte zero)
        // reads as one without them.
        let mut old = Vec::new();
        old.extend_from_slice(&head.state);
        old.extend_from_slice(&[2; ID_LEN]);
        old.extend_from_slice(&5u32.to_le_bytes());
        old.extend_from_slice(&head.token);
        let read = Head::from_bytes(&old).expect("an older head");
        assert_eq!(
            (read.events, read.seats.len(), read.token),
            (5, 0, head.token.clone())
        );
        // Seat events longer than the bytes that follow are no head.
        let mut torn = head.to_bytes();
        torn.truncate(Head::PREFIX + 3);
        assert_eq!(Head::from_bytes(&torn), None);
    }

    #[test]
    fn a_rematch_offer_comes_back_from_its_bytes() {
        let offer = RematchOffer {
            match_id: MatchId([7; crate::state::MATCH_ID_LEN]),
            seat: 3,
        };
        assert_eq!(RematchOffer::from_bytes(&offer.to_bytes()), Some(offer));
        let mut short = offer.to_bytes();
        short.pop();
        assert_eq!(RematchOffer::from_bytes(&short), None);
        assert_eq!(RematchOffer::from_bytes(&[]), None);
    }
}
