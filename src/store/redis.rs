//! The Redis store: any Redis-protocol server (Redis 7.0 or later, Valkey), standalone
//! or a Redis Cluster, shared by every replica, through the `redis` crate.
//!
//! One key per match, `allfives:{<match id in hex>}:head` (the hash tag keeps a
//! match's keys and channel in one cluster slot), holding its [`Head`] with a time to
//! live renewed by every move, checked and written by one Lua script ([`ADVANCE`]) run
//! through the crate's script helper (which loads it again on a server that lost it);
//! the same script publishes the new head on the match's channel,
//! `allfives:{<match id in hex>}:changes` (`PUBLISH`; `SPUBLISH`, sharded, on a
//! cluster), so the check, the write and the notice are one step.
//!
//! Each process keeps one connection for the calls (multiplexed, reconnecting by
//! itself) and one for its subscriptions ([`subscriber`]): RESP3, whose pushes carry
//! the messages; the crate resubscribes after a reconnection, and every reconnection
//! or subscription confirmed is told to the watchers as a [`Notice::Resync`] (they
//! read the head again: what was published meanwhile is not lost, only read late).
//!
//! Invite codes (`invites`) have keys of their own, all in one cluster slot (hash tag
//! `{allfives-invites}`) so that each of their two scripts ([`INVITE`],
//! [`OPEN_INVITE`]) is one step: `allfives:{allfives-invites}:code:<code>` holds the
//! code's match id, `…:match:<match id in hex>` the match's code, both with the code's
//! time to live, `…:misses:<minute>` the misses counted in that minute, and
//! `…:misses:<minute>:<client key in hex>` those of one client (a pseudonym:
//! `invites::ClientKey`), both kept two minutes.

use std::sync::{Arc, Weak};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{ProtocolVersion, PushInfo, PushKind, Value};
use tokio::sync::mpsc;

use super::changes::{Changes, Notice, Ready, Subscription};
use super::invites::{CANDIDATES, ClientKey, Invite, InviteCode, InviteRules, RateLimit};
use super::{Head, MatchId, Move, RESPONSE_TIMEOUT, Stale, StoreRefusal};
use crate::state::MATCH_ID_LEN;
use crate::state::lineage::ID_LEN;

/// The compare-and-set, one step in the store: KEYS[1] the match's head key, holding
/// its [`Head`] (the state id first); ARGV the state the call came from (empty for a
/// new match), the state it made, the time to live in milliseconds, "1" if the match
/// was made with a store (so it must be held), the new head, the command that
/// publishes (`PUBLISH` or `SPUBLISH`), the match's channel and the length of a state
/// id (`state::lineage::ID_LEN`, given, not repeated here). Answers `{"ok"}`,
/// `{"stale", head's id}` or `{"forgotten"}`; a move taken (not a retry) is published.
pub const ADVANCE: &str = r#"
local head = redis.call('GET', KEYS[1])
local id = head and string.sub(head, 1, tonumber(ARGV[8]))
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
redis.call('SET', KEYS[1], ARGV[5], 'PX', ARGV[3])
redis.call(ARGV[6], ARGV[7], ARGV[5])
return {'ok'}
"#;

/// A match's invite code: KEYS[1] the match's code key, KEYS[2..] the candidates'
/// keys; ARGV the match id, the candidate codes, the time to live in milliseconds.
/// Answers the match's live code and its time left, or the first candidate that no
/// live code is (written both ways), or nothing if every candidate was taken.
pub const INVITE: &str = r#"
local ttl = tonumber(ARGV[#ARGV])
local held = redis.call('GET', KEYS[1])
if held then
  local left = redis.call('PTTL', KEYS[1])
  if left < 0 then left = ttl end
  return {held, left}
end
for i = 2, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ttl) then
    redis.call('SET', KEYS[1], ARGV[i], 'PX', ttl)
    return {ARGV[i], ttl}
  end
end
return {}
"#;

/// A code typed: KEYS[1] the code's key, KEYS[2] this minute's misses, KEYS[3] this
/// minute's misses of the client who typed it; ARGV the misses a minute allows in all,
/// those it allows a client, and how long to keep the counts (milliseconds). Answers
/// `{"limited", "client"}` once the client's misses this minute are spent, else
/// `{"limited", "deployment"}` once everyone's are (nothing looked up, nothing
/// counted), `{"found", match id}`, or `{"unknown"}` (a miss, counted for the client
/// and in all).
pub const OPEN_INVITE: &str = r#"
local theirs = tonumber(redis.call('GET', KEYS[3]) or '0')
if theirs >= tonumber(ARGV[2]) then
  return {'limited', 'client'}
end
local misses = tonumber(redis.call('GET', KEYS[2]) or '0')
if misses >= tonumber(ARGV[1]) then
  return {'limited', 'deployment'}
end
local found = redis.call('GET', KEYS[1])
if found then
  return {'found', found}
end
if redis.call('INCR', KEYS[2]) == 1 then
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
if redis.call('INCR', KEYS[3]) == 1 then
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
end
return {'unknown'}
"#;

/// The message on a match's channel that its presence changed (a head is longer).
const PRESENCE_NOTICE: &[u8] = b"P";
/// The message on a match's channel saying a seat asked for its rematch (no head is one
/// byte long).
const REMATCH_NOTICE: &[u8] = b"R";

/// A connection to a Redis-protocol server, or to a cluster: both multiplexed, shared
/// by every call, and reconnecting by themselves.
#[derive(Clone)]
enum Connection {
    Single(ConnectionManager),
    Cluster(redis::cluster_async::ClusterConnection),
}

/// The heads in a Redis-protocol server or cluster ([`ADVANCE`]).
#[derive(Clone)]
pub struct RedisStore {
    connection: Connection,
    script: redis::Script,
    ttl: Duration,
    invite: redis::Script,
    open_invite: redis::Script,
    invites: InviteRules,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("cluster", &self.cluster())
            .field("ttl", &self.ttl)
            .finish()
    }
}

/// How many matches' lease renewals a replica sends to a cluster at once.
const RENEWALS_IN_FLIGHT: usize = 32;

impl RedisStore {
    /// Connects to the server at `urls` (one), or with `cluster` to the cluster whose
    /// nodes include them, for the calls and for the subscriptions; fails if it
    /// cannot. The changes the subscriptions bring are published in the returned
    /// [`Changes`].
    pub async fn connect(
        urls: &[String],
        cluster: bool,
        ttl: Duration,
        invites: InviteRules,
    ) -> Result<(RedisStore, Arc<Changes>), redis::RedisError> {
        let (commands, subscriptions) = mpsc::unbounded_channel();
        let changes = Changes::new(Some(commands));
        let (pushes_tx, pushes) = mpsc::unbounded_channel();
        let (connection, subscribing) = if cluster {
            let builder = || {
                redis::cluster::ClusterClient::builder(urls.iter().map(String::as_str))
                    .response_timeout(RESPONSE_TIMEOUT)
                    .connection_timeout(RESPONSE_TIMEOUT)
            };
            let calls = builder().build()?.get_async_connection().await?;
            let subscribing = builder()
                .use_protocol(ProtocolVersion::RESP3)
                .push_sender(pushes_tx)
                .build()?
                .get_async_connection()
                .await?;
            (Connection::Cluster(calls), Connection::Cluster(subscribing))
        } else {
            let [url] = urls else {
                return Err(redis::RedisError::from((
                    redis::ErrorKind::InvalidClientConfig,
                    "--match-store redis takes one URL (several are a cluster's nodes: \
                     --match-store redis-cluster)",
                )));
            };
            let client = redis::Client::open(url.as_str())?;
            let config = ConnectionManagerConfig::new()
                .set_response_timeout(Some(RESPONSE_TIMEOUT))
                .set_connection_timeout(Some(RESPONSE_TIMEOUT));
            let calls = ConnectionManager::new_with_config(client, config).await?;
            // The subscriptions' own connection: RESP3 (its pushes carry the messages),
            // resubscribing after a reconnection, and trying to reconnect for ever (its
            // commands wait meanwhile; each is bounded by RESPONSE_TIMEOUT here).
            let info = redis::IntoConnectionInfo::into_connection_info(url.as_str())?;
            let redis_settings = info
                .redis_settings()
                .clone()
                .set_protocol(ProtocolVersion::RESP3);
            let client = redis::Client::open(info.set_redis_settings(redis_settings))?;
            let config = ConnectionManagerConfig::new()
                .set_push_sender(pushes_tx)
                .set_automatic_resubscription()
                .set_number_of_retries(usize::MAX)
                .set_max_delay(Duration::from_secs(2))
                .set_connection_timeout(Some(RESPONSE_TIMEOUT));
            let subscribing = ConnectionManager::new_with_config(client, config).await?;
            (Connection::Single(calls), Connection::Single(subscribing))
        };
        tokio::spawn(subscriber(
            subscribing,
            subscriptions,
            pushes,
            Arc::downgrade(&changes),
        ));
        let store = RedisStore {
            connection,
            script: redis::Script::new(ADVANCE),
            ttl,
            invite: redis::Script::new(INVITE),
            open_invite: redis::Script::new(OPEN_INVITE),
            invites,
        };
        Ok((store, changes))
    }

    fn cluster(&self) -> bool {
        matches!(self.connection, Connection::Cluster(_))
    }

    /// The key of a match's head.
    pub fn head_key(match_id: &MatchId) -> String {
        format!("allfives:{{{}}}:head", match_id)
    }

    /// The channel of a match's changes.
    pub fn channel(match_id: &MatchId) -> String {
        format!("allfives:{{{}}}:changes", match_id)
    }

    /// The hash of a match's presence (`super::presence`): beside its head, in its
    /// slot.
    pub fn presence_key(match_id: &MatchId) -> String {
        format!("allfives:{{{}}}:presence", match_id)
    }

    /// The key of a finished match's rematch offer, beside its head, in its slot.
    pub fn rematch_key(match_id: &MatchId) -> String {
        format!("allfives:{{{}}}:rematch", match_id)
    }

    /// Keeps `offer` as the match's rematch unless one is kept (`SET NX`, with the
    /// heads' time to live), and tells every replica's watchers of the match (a
    /// message `R` on its channel), in one transaction: whether it was kept now.
    pub async fn offer_rematch(
        &self,
        match_id: &MatchId,
        offer: super::RematchOffer,
    ) -> Result<bool, StoreRefusal> {
        let ttl_ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("SET")
            .arg(RedisStore::rematch_key(match_id))
            .arg(offer.to_bytes())
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms);
        let publish = if self.cluster() {
            "SPUBLISH"
        } else {
            "PUBLISH"
        };
        pipe.cmd(publish)
            .arg(RedisStore::channel(match_id))
            .arg(REMATCH_NOTICE)
            .ignore();
        // SET NX answers OK when it set the key, nil when one was there.
        let (set,): (Option<String>,) = self.pipe(&pipe).await?;
        Ok(set.is_some())
    }

    pub async fn rematch_offer(
        &self,
        match_id: &MatchId,
    ) -> Result<Option<super::RematchOffer>, StoreRefusal> {
        match self.get(RedisStore::rematch_key(match_id)).await? {
            None => Ok(None),
            Some(bytes) => super::RematchOffer::from_bytes(&bytes)
                .map(Some)
                .ok_or_else(|| {
                    StoreRefusal::Unavailable("the store holds a rematch that is not one".into())
                }),
        }
    }

    /// A pipeline run on the store; any error of the store's is its unavailability.
    async fn pipe<T: redis::FromRedisValue>(
        &self,
        pipe: &redis::Pipeline,
    ) -> Result<T, StoreRefusal> {
        let answer = match self.connection.clone() {
            Connection::Single(mut c) => pipe.query_async(&mut c).await,
            Connection::Cluster(mut c) => pipe.query_async(&mut c).await,
        };
        answer.map_err(|e| StoreRefusal::Unavailable(e.to_string()))
    }

    /// What a seat's presence changed to, in the match's hash, and told to every
    /// replica's watchers of the match (a message `P` on its channel): `lease` a
    /// stream of the seat here until that time (ms since the epoch), else none here
    /// any more since `now_ms`.
    pub async fn seat_presence(
        &self,
        match_id: &MatchId,
        seat: u8,
        replica: u64,
        lease: Option<u64>,
        now_ms: u64,
    ) -> Result<(), StoreRefusal> {
        let key = RedisStore::presence_key(match_id);
        let field = format!("w:{seat}:{replica:x}");
        let ttl_ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        // One transaction: the hash is never left without its time to live.
        let mut pipe = redis::pipe();
        pipe.atomic();
        match lease {
            Some(until) => pipe.hset(&key, &field, until).ignore(),
            None => pipe
                .hdel(&key, &field)
                .ignore()
                .hset(&key, format!("g:{seat}"), now_ms)
                .ignore(),
        };
        pipe.pexpire(&key, i64::try_from(ttl_ms).unwrap_or(i64::MAX))
            .ignore();
        let publish = if self.cluster() {
            "SPUBLISH"
        } else {
            "PUBLISH"
        };
        pipe.cmd(publish)
            .arg(RedisStore::channel(match_id))
            .arg(PRESENCE_NOTICE)
            .ignore();
        self.pipe::<()>(&pipe).await
    }

    /// Renews this replica's leases for the seats it watches, each match's hash with
    /// its time to live, in one transaction a match: all in one round trip on a
    /// standalone server; on a cluster (which takes no pipeline over several slots)
    /// a pipeline a match, [`RENEWALS_IN_FLIGHT`] at once, so that a replica's many
    /// matches are renewed within the time a few round trips take. The first refusal
    /// is answered, after every match was tried.
    pub async fn renew(
        &self,
        seats: &[(MatchId, u8)],
        replica: u64,
        until: u64,
    ) -> Result<(), StoreRefusal> {
        let ttl_ms = i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX);
        let mut by_match: std::collections::BTreeMap<MatchId, Vec<u8>> = Default::default();
        for (match_id, seat) in seats {
            by_match.entry(*match_id).or_default().push(*seat);
        }
        let renewal = |pipe: &mut redis::Pipeline, match_id: &MatchId, seats: &[u8]| {
            let key = RedisStore::presence_key(match_id);
            for seat in seats {
                pipe.hset(&key, format!("w:{seat}:{replica:x}"), until)
                    .ignore();
            }
            pipe.pexpire(&key, ttl_ms).ignore();
        };
        if !self.cluster() {
            if by_match.is_empty() {
                return Ok(());
            }
            let mut pipe = redis::pipe();
            pipe.atomic();
            for (match_id, seats) in &by_match {
                renewal(&mut pipe, match_id, seats);
            }
            return self.pipe::<()>(&pipe).await;
        }
        let mut refused = Ok(());
        let mut renewing = tokio::task::JoinSet::new();
        for (match_id, seats) in by_match {
            if renewing.len() >= RENEWALS_IN_FLIGHT
                && let Some(Ok(Err(refusal))) = renewing.join_next().await
            {
                refused = Err(refusal);
            }
            let mut pipe = redis::pipe();
            pipe.atomic();
            renewal(&mut pipe, &match_id, &seats);
            let store = self.clone();
            renewing.spawn(async move { store.pipe::<()>(&pipe).await });
        }
        while let Some(done) = renewing.join_next().await {
            if let Ok(Err(refusal)) = done {
                refused = Err(refusal);
            }
        }
        refused
    }

    /// A match's presence hash's fields.
    pub async fn presence(&self, match_id: &MatchId) -> Result<Vec<(String, u64)>, StoreRefusal> {
        let mut pipe = redis::pipe();
        pipe.hgetall(RedisStore::presence_key(match_id));
        let (fields,): (Vec<(String, u64)>,) = self.pipe(&pipe).await?;
        Ok(fields)
    }

    pub async fn ping(&self) -> Result<(), StoreRefusal> {
        let ping = redis::cmd("PING");
        let pong: redis::RedisResult<String> = match self.connection.clone() {
            Connection::Single(mut c) => ping.query_async(&mut c).await,
            Connection::Cluster(mut c) => ping.query_async(&mut c).await,
        };
        pong.map(|_| ())
            .map_err(|e| StoreRefusal::Unavailable(e.to_string()))
    }

    /// The bytes under `key`, if any.
    async fn get(&self, key: String) -> Result<Option<Vec<u8>>, StoreRefusal> {
        let mut get = redis::cmd("GET");
        get.arg(key);
        let value: redis::RedisResult<Option<Vec<u8>>> = match self.connection.clone() {
            Connection::Single(mut c) => get.query_async(&mut c).await,
            Connection::Cluster(mut c) => get.query_async(&mut c).await,
        };
        value.map_err(|e| StoreRefusal::Unavailable(e.to_string()))
    }

    pub async fn latest(&self, match_id: &MatchId) -> Result<Option<Head>, StoreRefusal> {
        match self.get(RedisStore::head_key(match_id)).await? {
            None => Ok(None),
            Some(bytes) => Head::from_bytes(&bytes).map(Some).ok_or_else(|| {
                StoreRefusal::Unavailable("the store holds a head that is not one".into())
            }),
        }
    }

    pub async fn advance(&self, m: &Move, head: &Head) -> Result<(), StoreRefusal> {
        let ttl_ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let mut invocation = self.script.key(RedisStore::head_key(&m.match_id));
        invocation
            .arg(m.from.as_ref().map_or(&[][..], |from| &from[..]))
            .arg(&m.to[..])
            .arg(ttl_ms)
            .arg(if m.stored { "1" } else { "0" })
            .arg(head.to_bytes())
            .arg(if self.cluster() {
                "SPUBLISH"
            } else {
                "PUBLISH"
            })
            .arg(RedisStore::channel(&m.match_id))
            .arg(ID_LEN);
        let answer: Vec<Vec<u8>> = self.run(&invocation).await?;
        match answer.as_slice() {
            [ok] if ok == b"ok" => Ok(()),
            [forgotten] if forgotten == b"forgotten" => Err(StoreRefusal::Forgotten),
            [stale, head] if stale == b"stale" => match <[u8; 16]>::try_from(head.as_slice()) {
                Ok(latest) => Err(StoreRefusal::Stale(Stale { latest })),
                Err(_) => Err(StoreRefusal::Unavailable(
                    "the store holds a head that is not a state id".into(),
                )),
            },
            _ => Err(StoreRefusal::Unavailable(
                "the store answered the script with something else".into(),
            )),
        }
    }

    /// A script run on the store; any error of the store's is its unavailability.
    async fn run<T: redis::FromRedisValue>(
        &self,
        invocation: &redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreRefusal> {
        let answer = match self.connection.clone() {
            Connection::Single(mut c) => invocation.invoke_async(&mut c).await,
            Connection::Cluster(mut c) => invocation.invoke_async(&mut c).await,
        };
        answer.map_err(|e| StoreRefusal::Unavailable(e.to_string()))
    }

    /// The key of an invite code's match.
    fn code_key(code: &InviteCode) -> Vec<u8> {
        [&b"allfives:{allfives-invites}:code:"[..], &code.symbols()].concat()
    }

    /// See `MatchStore::invite` and [`INVITE`].
    pub async fn invite(
        &self,
        match_id: &MatchId,
        candidates: [InviteCode; CANDIDATES],
    ) -> Result<Invite, StoreRefusal> {
        let ttl_ms = u64::try_from(self.invites.ttl.as_millis()).unwrap_or(u64::MAX);
        let mut invocation = self
            .invite
            .key(format!("allfives:{{allfives-invites}}:match:{}", match_id));
        for code in &candidates {
            invocation.key(RedisStore::code_key(code));
        }
        invocation.arg(&match_id.0[..]);
        for code in &candidates {
            invocation.arg(&code.symbols()[..]);
        }
        invocation.arg(ttl_ms);
        let answer: Vec<Value> = self.run(&invocation).await?;
        match answer.as_slice() {
            [Value::BulkString(code), Value::Int(left)] => {
                let code = std::str::from_utf8(code).ok().and_then(InviteCode::parse);
                code.map(|code| Invite {
                    code,
                    expires_in: Duration::from_millis(u64::try_from(*left).unwrap_or(0)),
                })
                .ok_or_else(|| {
                    StoreRefusal::Unavailable("the store holds a code that is not one".into())
                })
            }
            [] => Err(StoreRefusal::Unavailable(
                "every new invite code was taken".into(),
            )),
            _ => Err(StoreRefusal::Unavailable(
                "the store answered the script with something else".into(),
            )),
        }
    }

    /// See `MatchStore::open_invite` and [`OPEN_INVITE`]: misses counted in `minute`.
    pub async fn open_invite(
        &self,
        code: &InviteCode,
        client: &ClientKey,
        minute: u64,
    ) -> Result<Option<MatchId>, StoreRefusal> {
        let misses = format!("allfives:{{allfives-invites}}:misses:{minute}");
        let theirs = [misses.as_bytes(), b":", &client.hex()].concat();
        let mut invocation = self.open_invite.key(RedisStore::code_key(code));
        invocation
            .key(misses)
            .key(theirs)
            .arg(self.invites.misses_per_minute)
            .arg(self.invites.misses_per_client_per_minute)
            // Kept past its minute, for replicas whose clocks are a little behind.
            .arg(120_000);
        let answer: Vec<Vec<u8>> = self.run(&invocation).await?;
        match answer.as_slice() {
            [limited, whose] if limited == b"limited" && whose == b"client" => {
                Err(StoreRefusal::RateLimited(RateLimit::Client))
            }
            [limited, whose] if limited == b"limited" && whose == b"deployment" => {
                Err(StoreRefusal::RateLimited(RateLimit::Deployment))
            }
            [unknown] if unknown == b"unknown" => Ok(None),
            [found, id] if found == b"found" => {
                match <[u8; MATCH_ID_LEN]>::try_from(id.as_slice()).map(MatchId) {
                    Ok(id) => Ok(Some(id)),
                    Err(_) => Err(StoreRefusal::Unavailable(
                        "the store holds a code of no match".into(),
                    )),
                }
            }
            _ => Err(StoreRefusal::Unavailable(
                "the store answered the script with something else".into(),
            )),
        }
    }
}

/// The match a channel's name names.
fn match_of(channel: &[u8]) -> Option<MatchId> {
    let hex = channel
        .strip_prefix(b"allfives:{")?
        .strip_suffix(b"}:changes")?;
    std::str::from_utf8(hex).ok()?.parse().ok()
}

/// This process's subscriptions: carries out the [`Subscription`] commands in order
/// (so a match's unsubscribe and a later subscribe cannot cross), and publishes what
/// the pushes bring in `changes`. Ends when `changes` is gone.
async fn subscriber(
    mut connection: Connection,
    mut commands: mpsc::UnboundedReceiver<Subscription>,
    mut pushes: mpsc::UnboundedReceiver<PushInfo>,
    changes: Weak<Changes>,
) {
    loop {
        tokio::select! {
            command = commands.recv() => match command {
                Some(Subscription::Subscribe(match_id, ready)) => {
                    let done = subscribe(&mut connection, &match_id, true).await;
                    let _ = ready.send(match done {
                        Ok(()) => Ready::Yes,
                        Err(why) => Ready::Failed(why),
                    });
                }
                Some(Subscription::Unsubscribe(match_id)) => {
                    let _ = subscribe(&mut connection, &match_id, false).await;
                }
                None => return,
            },
            push = pushes.recv() => {
                let Some(push) = push else { return };
                let Some(changes) = changes.upgrade() else { return };
                heard(&mut connection, &changes, push).await;
            }
        }
    }
}

/// Subscribes to (or unsubscribes from) a match's channel, within
/// [`RESPONSE_TIMEOUT`].
async fn subscribe(
    connection: &mut Connection,
    match_id: &MatchId,
    on: bool,
) -> Result<(), String> {
    let channel = RedisStore::channel(match_id);
    let done = tokio::time::timeout(RESPONSE_TIMEOUT, async {
        match (connection, on) {
            (Connection::Single(c), true) => c.subscribe(channel).await,
            (Connection::Single(c), false) => c.unsubscribe(channel).await,
            (Connection::Cluster(c), true) => c.ssubscribe(channel).await,
            (Connection::Cluster(c), false) => c.sunsubscribe(channel).await,
        }
    })
    .await;
    match done {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the store did not confirm the subscription in time".into()),
    }
}

/// What one push from the server means for the watchers here.
async fn heard(connection: &mut Connection, changes: &Arc<Changes>, push: PushInfo) {
    let mut data = push.data.into_iter();
    let mut bytes = || match data.next() {
        Some(Value::BulkString(b)) => Some(b),
        _ => None,
    };
    match push.kind {
        PushKind::Message | PushKind::SMessage => {
            let (Some(channel), Some(payload)) = (bytes(), bytes()) else {
                return;
            };
            let Some(match_id) = match_of(&channel) else {
                return;
            };
            if payload == PRESENCE_NOTICE {
                changes.publish(&match_id, Notice::Presence);
            } else if payload == REMATCH_NOTICE {
                changes.publish(&match_id, Notice::Rematch);
            } else if let Some(head) = Head::from_bytes(&payload) {
                changes.publish(&match_id, Notice::Moved(Arc::new(head)));
            }
        }
        // A subscription confirmed (ours, or the crate's after a reconnection): what
        // was published before it may have been missed.
        PushKind::Subscribe | PushKind::SSubscribe => {
            if let Some(match_id) = bytes().as_deref().and_then(match_of) {
                changes.publish(&match_id, Notice::Resync);
            }
        }
        // A cluster drops a sharded subscription when its slot moves or its master
        // steps down, and does not take it up again itself: subscribe again if the
        // match is still watched here.
        PushKind::SUnsubscribe => {
            if let Some(match_id) = bytes().as_deref().and_then(match_of)
                && changes.watched(&match_id)
            {
                let _ = subscribe(connection, &match_id, true).await;
                changes.publish(&match_id, Notice::Resync);
            }
        }
        // A connection was lost: messages may have been. On a cluster, the crate does
        // not move sharded subscriptions to a promoted replica: subscribe again, off
        // this loop (thousands of matches, each up to RESPONSE_TIMEOUT, must not hold
        // up the pushes and the new subscriptions), the watchers told to read their
        // heads once it is done.
        PushKind::Disconnection => {
            changes.resync_all();
            if let Connection::Cluster(c) = connection {
                let mut again = Connection::Cluster(c.clone());
                let matches = changes.matches();
                let changes = Arc::clone(changes);
                tokio::spawn(async move {
                    for match_id in matches {
                        // Still watched: a match nobody watches any more was
                        // unsubscribed meanwhile, and stays so.
                        if changes.watched(&match_id) {
                            let _ = subscribe(&mut again, &match_id, true).await;
                        }
                    }
                    changes.resync_all();
                });
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channel_names_its_match() {
        let id = MatchId([0xab; 16]);
        assert_eq!(match_of(RedisStore::channel(&id).as_bytes()), Some(id));
        assert_eq!(match_of(b"allfives:{zz}:changes"), None);
        assert_eq!(match_of(RedisStore::head_key(&id).as_bytes()), None);
    }
}
