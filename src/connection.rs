//! A connection's state, in one struct: its [`Tracker`], made when the connection is
//! accepted (`server::connections::Registry::register`) and carried in the context of
//! every call on it (`crate::call::CallContext::connection`), so that each layer finds
//! what it keeps per connection there instead of in a map of its own:
//!
//! | part | kept by | what it is |
//! |---|---|---|
//! | its number, its peer | `server::connections` | [`ConnectionId`]; whom its calls are from ([`Tracker::client`]): the HARD search queue's client (`service::searches`) |
//! | calls open, idle since | `server::connections` | [`Tracker::opened`]: from a call's headers until its response is done; [`Tracker::idle_for`] closes an idle connection (`server::serve`) |
//! | told to close | `server::connections`, `server::serve` | evicted at the connection cap ([`Tracker::evict`]), its place under the cap; closing ([`Closing`]) ends its Watch streams |
//! | its share of the calls-in-flight budget | `server::admission` | [`BudgetShare`]: calls holding a slot, those whose body has not arrived |
//! | its Watch streams | `service::watch` | [`Tracker::open_watch`], counted while a Watch call's answer lasts: the per-connection bound, and what eviction reads |
//!
//! It goes when its last holder drops it (the connection's task, and calls still
//! running on it): nothing to remove anywhere else. The registry of open connections
//! (`server::connections`) and the budget's list of connections with a stalled call
//! (`server::admission`) hold trackers, not state of their own.
//!
//! Built without the transport (`--no-default-features`: the fuzz targets), only the
//! service's parts are read.
#![cfg_attr(not(feature = "server"), allow(dead_code))]

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit};
use tokio::time::Instant;

/// A connection's number, unique for the server's life (`server::connections`), but
/// for [`ConnectionId::IN_PROCESS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(pub u64);

impl ConnectionId {
    /// The connection of every call made without the server's transport (a test or a
    /// benchmark calling the service in process): one client to the search queue.
    pub const IN_PROCESS: ConnectionId = ConnectionId(u64::MAX);
}

/// What one connection is doing and holds: see the module's documentation.
pub struct Tracker {
    id: ConnectionId,
    /// The address it came from, if known.
    peer: Option<IpAddr>,
    /// The instant `idle_since_ms` counts from.
    epoch: Instant,
    /// Calls open: headers received, response body not yet done.
    open: AtomicUsize,
    /// When the last call closed (or the connection opened), in ms since `epoch`.
    idle_since_ms: AtomicU64,
    /// A call opened while none was open, or the last one closed.
    changed: Notify,
    /// Told to close at the connection cap.
    evicted: AtomicBool,
    evict: Notify,
    /// The connection has begun to close: its long-lived calls end ([`Closing`]).
    closing: tokio::sync::watch::Sender<bool>,
    /// Its place under the connection cap, given back when it is evicted or goes.
    permit: Mutex<Option<OwnedSemaphorePermit>>,
    /// Its share of the calls-in-flight budget.
    budget: Mutex<BudgetShare>,
    /// Watch streams open on it.
    watches: AtomicUsize,
}

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracker").field("id", &self.id).finish()
    }
}

impl Tracker {
    /// The tracker of connection `id` from `peer`, holding `permit` (its place under the
    /// cap), its idle time counted in ms from `epoch`.
    pub fn new(
        id: ConnectionId,
        peer: Option<IpAddr>,
        epoch: Instant,
        permit: Option<OwnedSemaphorePermit>,
    ) -> Arc<Tracker> {
        Arc::new(Tracker {
            id,
            peer,
            epoch,
            open: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(millis_since(epoch)),
            changed: Notify::new(),
            evicted: AtomicBool::new(false),
            evict: Notify::new(),
            closing: tokio::sync::watch::Sender::new(false),
            permit: Mutex::new(permit),
            budget: Mutex::default(),
            watches: AtomicUsize::new(0),
        })
    }

    /// The connection of a call made in process (a test or a benchmark calling the
    /// service): a connection of its own, [`ConnectionId::IN_PROCESS`], that never
    /// closes.
    pub fn in_process() -> Arc<Tracker> {
        Tracker::new(ConnectionId::IN_PROCESS, None, Instant::now(), None)
    }

    pub fn id(&self) -> ConnectionId {
        self.id
    }

    /// Whom a call on this connection is from, when a trusted header (its last line)
    /// carried `forwarded`: see [`ClientId`].
    pub fn client(&self, forwarded: Option<&[u8]>) -> ClientId {
        ClientId::new(self.id, self.peer, forwarded)
    }

    /// One more call open, until the returned [`OpenCall`] is dropped.
    pub fn opened(self: &Arc<Self>) -> OpenCall {
        if self.open.fetch_add(1, Ordering::AcqRel) == 0 {
            self.changed.notify_one();
        }
        OpenCall(Arc::clone(self))
    }

    /// Completes once the connection has had no call open for `timeout` (never if
    /// `timeout` is `None`).
    pub async fn idle_for(&self, timeout: Option<Duration>) {
        let Some(timeout) = timeout else {
            return std::future::pending().await;
        };
        loop {
            if self.open.load(Ordering::Acquire) > 0 {
                self.changed.notified().await;
                continue;
            }
            let since = self.idle_since_ms.load(Ordering::Acquire);
            let deadline = self.epoch + Duration::from_millis(since) + timeout;
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {
                    if self.open.load(Ordering::Acquire) == 0
                        && self.idle_since_ms.load(Ordering::Acquire) == since
                    {
                        return;
                    }
                }
                () = self.changed.notified() => {}
            }
        }
    }

    /// How ready it is to be evicted at the connection cap, the smaller the readier:
    /// idle ones first, then those whose only open calls are Watch streams, the longest
    /// idle first; `None` if it has another call in flight or has been told already.
    pub fn eviction_rank(&self) -> Option<(bool, u64)> {
        let open = self.open.load(Ordering::Acquire);
        let watches = self.watches.load(Ordering::Acquire);
        let told = self.evicted.load(Ordering::Acquire);
        (open <= watches && !told).then(|| (open > 0, self.idle_since_ms.load(Ordering::Acquire)))
    }

    /// Tells the connection to close at the cap, and gives its place under the cap back
    /// at once.
    pub fn evict(&self) {
        self.evicted.store(true, Ordering::Release);
        self.give_place_back();
        self.evict.notify_one();
    }

    /// Completes when the connection is told to close at the cap.
    pub async fn evicted(&self) {
        self.evict.notified().await;
    }

    /// Gives its place under the connection cap back (once).
    pub fn give_place_back(&self) {
        drop(
            self.permit
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
    }

    /// Tells the connection's calls that it has begun to close.
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// What a call on it waits on to end itself when the connection begins to close.
    pub fn closing(&self) -> Closing {
        Closing(self.closing.subscribe())
    }

    /// Its share of the calls-in-flight budget, which `server::admission` reads and
    /// changes only under the budget's own lock.
    pub(crate) fn budget(&self) -> MutexGuard<'_, BudgetShare> {
        // Every update leaves the share consistent before anything can panic.
        self.budget.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One more Watch stream on it, if fewer than `limit` are open; `false`: refused.
    /// Given back with [`Tracker::close_watch`].
    pub fn open_watch(&self, limit: usize) -> bool {
        self.watches
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .is_ok()
    }

    /// A Watch stream on it ended.
    pub fn close_watch(&self) {
        self.watches.fetch_sub(1, Ordering::AcqRel);
    }
}

fn millis_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// One call counted open on its connection until dropped.
#[derive(Debug)]
pub struct OpenCall(Arc<Tracker>);

impl Drop for OpenCall {
    fn drop(&mut self) {
        let tracker = &self.0;
        tracker
            .idle_since_ms
            .store(millis_since(tracker.epoch), Ordering::Release);
        if tracker.open.fetch_sub(1, Ordering::AcqRel) == 1 {
            tracker.changed.notify_one();
        }
    }
}

/// A connection's share of the calls-in-flight budget (`server::admission`, which
/// changes it only under the budget's lock).
#[derive(Debug, Default)]
pub(crate) struct BudgetShare {
    /// Calls of this connection holding a slot.
    pub held: usize,
    /// Those whose body has not fully arrived, oldest first: the ones another
    /// connection's call may displace.
    pub stalled: VecDeque<Arc<CallSlot>>,
}

/// A call's place in the calls-in-flight budget (`server::admission`).
#[derive(Debug, Default)]
pub(crate) struct CallSlot {
    /// Given back (the call ended, or it was displaced).
    pub released: AtomicBool,
    /// Its request body has fully arrived: it can no longer be displaced.
    pub body_done: AtomicBool,
    /// Told when another connection's call took this slot.
    pub displaced: Notify,
}

/// Whether the call's connection has begun to close (at its age, or the server
/// draining): a long-lived call (`Watch`) ends itself then, cleanly, so that its client
/// makes it again on another connection.
#[derive(Clone, Debug)]
pub struct Closing(tokio::sync::watch::Receiver<bool>);

impl Closing {
    /// Completes once the connection begins to close (never if it cannot any more).
    pub async fn closed(&mut self) {
        if self.0.wait_for(|closing| *closing).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Whom a call is from, for what is shared out per client (the HARD search queue's
/// turns): the address the call came from, or, behind a gateway the operator trusts
/// (`--trusted-client-header`), the client address the gateway wrote in that header;
/// an IPv6 address by its /64, which one host is commonly given whole (so a host's
/// many connections, or many addresses of its /64, are one client). The connection
/// only when no address is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientId {
    Connection(ConnectionId),
    Address(IpAddr),
}

impl ClientId {
    /// The client of a call on `connection` from `peer` whose trusted header, when one
    /// is configured, carried `forwarded` (its last line): the address that line ends
    /// with, else the peer's address, else the connection.
    pub fn new(
        connection: ConnectionId,
        peer: Option<IpAddr>,
        forwarded: Option<&[u8]>,
    ) -> ClientId {
        forwarded
            .and_then(forwarded_address)
            .or(peer)
            .map_or(ClientId::Connection(connection), |ip| {
                ClientId::Address(host_of(ip))
            })
    }
}

/// An address as a client: IPv4 whole (an IPv4 address mapped into IPv6 too), IPv6 by
/// its first 64 bits.
fn host_of(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & !u128::from(u64::MAX))),
        v4 => v4,
    }
}

/// The longest address entry read (an IPv6 address with a port is at most 47 bytes).
const MAX_ADDRESS_LEN: usize = 64;

/// The address a forwarding header's value ends with: `x-forwarded-for`'s entries are
/// comma separated, each proxy appending the peer it saw, so the last entry is the one
/// the trusted gateway wrote (earlier ones are the client's to forge). An entry is an
/// IP address, or one with a port (`1.2.3.4:5`, `[::1]:5`); an IPv4 address mapped
/// into IPv6 is the IPv4 address. Only the value's last bytes are read.
pub fn forwarded_address(value: &[u8]) -> Option<IpAddr> {
    let tail = &value[value.len().saturating_sub(2 * MAX_ADDRESS_LEN)..];
    let entry = match tail.iter().rposition(|&b| b == b',') {
        Some(comma) => &tail[comma + 1..],
        None if tail.len() == value.len() => tail,
        None => return None,
    };
    let entry = std::str::from_utf8(entry.trim_ascii()).ok()?;
    if entry.len() > MAX_ADDRESS_LEN {
        return None;
    }
    let ip = entry
        .parse::<IpAddr>()
        .or_else(|_| entry.parse::<SocketAddr>().map(|a| a.ip()))
        .ok()?;
    Some(ip.to_canonical())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_is_the_address_a_forwarding_header_ends_with() {
        let conn = ConnectionId(3);
        let client = |v: &str| ClientId::new(conn, None, Some(v.as_bytes()));
        let ip = |s: &str| ClientId::Address(s.parse().unwrap());
        assert_eq!(client("203.0.113.7"), ip("203.0.113.7"));
        assert_eq!(client("1.1.1.1, 10.0.0.2,203.0.113.7 "), ip("203.0.113.7"));
        assert_eq!(client("forged, 203.0.113.7"), ip("203.0.113.7"));
        assert_eq!(client("203.0.113.7:4711"), ip("203.0.113.7"));
        // IPv6 by its /64.
        assert_eq!(client("2001:db8::1"), ip("2001:db8::"));
        assert_eq!(client("[2001:db8::1:2:3:4]:443"), ip("2001:db8::"));
        assert_eq!(client("2001:db8:0:1::1"), ip("2001:db8:0:1::"));
        assert_eq!(client("::ffff:203.0.113.7"), ip("203.0.113.7"));
        let long = format!("{}, 203.0.113.7", "9".repeat(10_000));
        assert_eq!(client(&long), ip("203.0.113.7"));
        // Anything else is the connection's.
        for bad in [
            "",
            " ",
            "unknown",
            "203.0.113.7, ",
            "1.2.3.4.5",
            "203.0.113.7;x",
        ] {
            assert_eq!(client(bad), ClientId::Connection(conn), "{bad:?}");
        }
        let one_long_entry = format!("1.2.3.4{}", " ".repeat(200));
        assert_eq!(client(&one_long_entry), ClientId::Connection(conn));
        assert_eq!(
            ClientId::new(conn, None, Some(b"\xff\xfe")),
            ClientId::Connection(conn)
        );
        assert_eq!(ClientId::new(conn, None, None), ClientId::Connection(conn));
    }

    #[test]
    fn without_a_trusted_address_the_client_is_the_peers_address() {
        let peer = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        let ip = |s: &str| ClientId::Address(s.parse().unwrap());
        // Two connections from one host are one client.
        for conn in [ConnectionId(1), ConnectionId(2)] {
            assert_eq!(
                ClientId::new(conn, peer("198.51.100.4"), None),
                ip("198.51.100.4")
            );
            assert_eq!(
                ClientId::new(conn, peer("2001:db8::7"), None),
                ip("2001:db8::")
            );
            assert_eq!(
                ClientId::new(conn, peer("::ffff:198.51.100.4"), None),
                ip("198.51.100.4")
            );
        }
        // A trusted header's address comes first; a bad one falls back to the peer.
        let via = |v: &str| ClientId::new(ConnectionId(1), peer("10.0.0.9"), Some(v.as_bytes()));
        assert_eq!(via("203.0.113.7"), ip("203.0.113.7"));
        assert_eq!(via("unknown"), ip("10.0.0.9"));
    }

    #[test]
    fn a_connection_takes_watch_streams_up_to_its_limit_and_gets_them_back() {
        let tracker = Tracker::in_process();
        assert!(tracker.open_watch(2));
        assert!(tracker.open_watch(2));
        assert!(!tracker.open_watch(2), "two open: the third is refused");
        tracker.close_watch();
        assert!(tracker.open_watch(2), "one ended: room for one");
    }

    #[tokio::test(start_paused = true)]
    async fn idle_means_no_call_open_for_the_whole_timeout() {
        let tracker = Tracker::in_process();
        let call = tracker.opened();
        let idle = tokio::spawn({
            let tracker = Arc::clone(&tracker);
            async move { tracker.idle_for(Some(Duration::from_secs(10))).await }
        });
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(!idle.is_finished(), "a call is open: not idle");
        drop(call);
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert!(!idle.is_finished());
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(idle.is_finished(), "idle ten seconds after the last call");
    }

    #[tokio::test]
    async fn a_connection_that_begins_to_close_tells_its_calls() {
        let tracker = Tracker::in_process();
        let mut closing = tracker.closing();
        let waiting = tokio::spawn(async move { closing.closed().await });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        tracker.close();
        waiting.await.expect("told");
    }
}
