//! Who may watch, and who makes room: the bounds on open Watch streams, so that no
//! single client can shut others out (docs/security.md, "What one client can take").
//!
//! A stream is a seat's (its viewer's credential checked before it is admitted) or a
//! spectator's. Bounds, each refused `RESOURCE_EXHAUSTED` `TOO_MANY_WATCHES`:
//!
//! | bound | how many | why |
//! |---|---|---|
//! | the replica's | `--max-watch-streams` (1,000) | memory |
//! | a connection's | `--max-watch-streams-per-connection` (8), kept in its tracker | a device follows a match or a few |
//! | a client's | `--max-watch-streams-per-client` (64): the client as the search queue knows it (its address, or a trusted gateway's header) | one client cannot take the replica's streams, however many connections it opens |
//! | a client's on one match | [`CLIENT_STREAMS_PER_MATCH`] | nor one match's |
//! | a match's spectators on a replica | [`MATCH_SPECTATORS`] | every move is rendered for each watcher |
//! | a seat's streams on a replica | [`SEAT_STREAMS`] | its player's devices; places spectators never take |
//!
//! A seat's stream is not refused for spectators' sake: at its client's bounds one of
//! its own client's spectators' streams makes room, and at the replica's bound the
//! stream stalled the longest (a message unread for more than a heartbeat), else the
//! oldest spectator's of the client holding the most streams, else the oldest stream of
//! a client holding more than one more than the seat's client (a fair share) is ended
//! (`TOO_MANY_WATCHES`) and its place given. A spectator takes only a stalled stream's
//! place. A stream whose message waits unread for [`stall_limit`] ends by itself
//! (`service::watch`). Each refusal is counted by its bound and each end by its cause
//! (`allfives_watch_refusals`, `allfives_watch_streams_ended`).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::connection::{ClientId, Tracker};
use crate::state::MatchId;

/// The most Watch streams open unless the server says otherwise
/// (`--max-watch-streams`).
pub const DEFAULT_MAX_STREAMS: usize = 1_000;

/// The most Watch streams open on one connection unless the server says otherwise
/// (`--max-watch-streams-per-connection`): a device watches one match, a spectator's
/// page a few.
pub const DEFAULT_MAX_PER_CONNECTION: usize = 8;

/// The most Watch streams of one client unless the server says otherwise
/// (`--max-watch-streams-per-client`): a household or an office behind one address,
/// each device on a match or a few.
pub const DEFAULT_MAX_PER_CLIENT: usize = 64;

/// The most streams one client holds on one match: its players' devices and a few
/// spectators' pages.
pub const CLIENT_STREAMS_PER_MATCH: usize = 8;

/// The most spectators' streams of one match on a replica.
pub const MATCH_SPECTATORS: usize = 24;

/// The most streams of one seat on a replica: its player's devices (a phone, a
/// tablet, a browser, one reconnecting).
pub const SEAT_STREAMS: usize = 4;

/// How long a stream's message may wait for its client to read before the stream is
/// stalled and ended: two heartbeats (a client reading at all reads those).
pub fn stall_limit(heartbeat: Duration) -> Duration {
    heartbeat.saturating_mul(2)
}

/// Whose stream it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watcher {
    /// A seat's player, its credential checked.
    Seat(usize),
    Spectator,
}

/// The bound a Watch was refused at (a metric's label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    Replica,
    Connection,
    Client,
    ClientMatch,
    MatchSpectators,
    Seat,
}

impl Bound {
    pub const ALL: [Bound; 6] = [
        Bound::Replica,
        Bound::Connection,
        Bound::Client,
        Bound::ClientMatch,
        Bound::MatchSpectators,
        Bound::Seat,
    ];

    /// The metric's label.
    pub fn label(self) -> &'static str {
        match self {
            Bound::Replica => "replica",
            Bound::Connection => "connection",
            Bound::Client => "client",
            Bound::ClientMatch => "client_match",
            Bound::MatchSpectators => "match_spectators",
            Bound::Seat => "seat",
        }
    }
}

/// Why a stream was ended by the server before its client or connection went (a
/// metric's label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Its place given to a seat's stream (or, stalled, to any stream) at the replica's
    /// bound.
    MadeRoom,
    /// Its client did not read for [`stall_limit`].
    Stalled,
}

impl Ended {
    pub const ALL: [Ended; 2] = [Ended::MadeRoom, Ended::Stalled];

    pub fn label(self) -> &'static str {
        match self {
            Ended::MadeRoom => "made_room",
            Ended::Stalled => "stalled",
        }
    }
}

/// The bounds on open Watch streams, and the streams open.
#[derive(Debug)]
pub struct WatchLimits {
    total: usize,
    per_connection: usize,
    per_client: usize,
    /// The streams' heartbeat period: a message unread for longer is a stalled stream.
    heartbeat: Duration,
    streams: Mutex<Streams>,
    epoch: Instant,
    refusals: [AtomicU64; Bound::ALL.len()],
    ended: [AtomicU64; Ended::ALL.len()],
}

#[derive(Debug, Default)]
struct Streams {
    /// Every stream open, oldest first.
    open: VecDeque<Arc<StreamPlace>>,
    by_match: HashMap<MatchId, MatchStreams>,
    by_client: HashMap<ClientId, ClientStreams>,
}

#[derive(Debug, Default)]
struct MatchStreams {
    spectators: usize,
    seats: [usize; 4],
}

#[derive(Debug, Default)]
struct ClientStreams {
    total: usize,
    /// Its streams on each match it watches (at most `per_client` entries).
    matches: Vec<(MatchId, usize)>,
}

/// One open stream, as the bounds know it.
#[derive(Debug)]
pub struct StreamPlace {
    watcher: Watcher,
    match_id: MatchId,
    client: ClientId,
    /// Since when a message has waited for its client to read (ms since the limits'
    /// epoch, plus one), or 0.
    blocked_since: AtomicU64,
    /// Its counts are given back (by its end, or when it made room).
    released: AtomicBool,
    /// Told to end: its place was given to another stream.
    end: Notify,
}

/// A stream's place under the [`WatchLimits`], held by its task; given back when
/// dropped (if it has not been already, to make room).
#[derive(Debug)]
pub struct Permit {
    limits: Arc<WatchLimits>,
    place: Arc<StreamPlace>,
}

/// A stream's place among its connection's, held by its answer (so that the count,
/// which eviction at the connection cap also reads, never outlasts the call: a stream
/// whose answer has ended while its task winds down is not one), given back when
/// dropped.
#[derive(Debug)]
pub struct OnConnection(Arc<Tracker>);

impl Drop for OnConnection {
    fn drop(&mut self) {
        self.0.close_watch();
    }
}

impl WatchLimits {
    pub fn new(
        total: usize,
        per_connection: usize,
        per_client: usize,
        heartbeat: Duration,
    ) -> Arc<WatchLimits> {
        Arc::new(WatchLimits {
            total,
            per_connection,
            per_client,
            heartbeat,
            streams: Mutex::default(),
            epoch: Instant::now(),
            refusals: Default::default(),
            ended: Default::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Streams> {
        // Every update leaves the counts consistent before anything can panic.
        self.streams.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for `watcher`'s stream of `match_id` from `client` on `connection`, or
    /// the bound it is refused at. At the replica's bound, a stalled stream's place, or
    /// for a seat a spectator's, is taken: that stream is told to end.
    pub fn admit(
        self: &Arc<Self>,
        connection: &Arc<Tracker>,
        client: ClientId,
        match_id: MatchId,
        watcher: Watcher,
    ) -> Result<(Permit, OnConnection), Bound> {
        let refused = |bound: Bound| {
            self.refusals[bound as usize].fetch_add(1, Ordering::Relaxed);
            Err(bound)
        };
        if matches!(watcher, Watcher::Seat(seat) if seat >= 4) {
            return refused(Bound::Seat);
        }
        if !connection.open_watch(self.per_connection) {
            return refused(Bound::Connection);
        }
        let on_connection = OnConnection(Arc::clone(connection));
        let mut streams = self.lock();
        let on_match = streams.by_match.get(&match_id);
        match watcher {
            Watcher::Seat(seat) => {
                if on_match.is_some_and(|m| m.seats[seat] >= SEAT_STREAMS) {
                    return refused(Bound::Seat);
                }
            }
            Watcher::Spectator => {
                if on_match.is_some_and(|m| m.spectators >= MATCH_SPECTATORS) {
                    return refused(Bound::MatchSpectators);
                }
            }
        }
        // A client's bounds: a seat's stream first ends one of its own client's
        // spectators' (a player is not refused for a page open at the same address).
        let over_client = streams.by_client.get(&client).and_then(|theirs| {
            let here = theirs.matches.iter().find(|(m, _)| *m == match_id);
            if theirs.total >= self.per_client {
                Some((Bound::Client, None))
            } else if here.is_some_and(|&(_, n)| n >= CLIENT_STREAMS_PER_MATCH) {
                Some((Bound::ClientMatch, Some(match_id)))
            } else {
                None
            }
        });
        if let Some((bound, on)) = over_client {
            let own = streams.open.iter().find(|p| {
                p.client == client
                    && p.watcher == Watcher::Spectator
                    && on.is_none_or(|m| p.match_id == m)
            });
            match (watcher, own.cloned()) {
                (Watcher::Seat(_), Some(own)) => self.make_room(&mut streams, &own),
                _ => return refused(bound),
            }
        }
        if streams.open.len() >= self.total {
            let Some(victim) = self.room(&streams, watcher, client) else {
                return refused(Bound::Replica);
            };
            self.make_room(&mut streams, &victim);
        }
        let place = Arc::new(StreamPlace {
            watcher,
            match_id,
            client,
            blocked_since: AtomicU64::new(0),
            released: AtomicBool::new(false),
            end: Notify::new(),
        });
        streams.open.push_back(Arc::clone(&place));
        let on_match = streams.by_match.entry(match_id).or_default();
        match watcher {
            Watcher::Seat(seat) => on_match.seats[seat] += 1,
            Watcher::Spectator => on_match.spectators += 1,
        }
        let theirs = streams.by_client.entry(client).or_default();
        theirs.total += 1;
        match theirs.matches.iter_mut().find(|(m, _)| *m == match_id) {
            Some((_, n)) => *n += 1,
            None => theirs.matches.push((match_id, 1)),
        }
        drop(streams);
        let permit = Permit {
            limits: Arc::clone(self),
            place,
        };
        Ok((permit, on_connection))
    }

    /// Ends `victim` to give its place to another stream: counted, its counts given
    /// back now, and its task told.
    fn make_room(&self, streams: &mut Streams, victim: &Arc<StreamPlace>) {
        let why = match self.stalled_since(victim).is_some() {
            true => Ended::Stalled,
            false => Ended::MadeRoom,
        };
        if release(streams, victim) {
            self.ended[why as usize].fetch_add(1, Ordering::Relaxed);
        }
        victim.end.notify_one();
    }

    /// Since when (ms past the epoch) `place`'s client has left a message unread for
    /// longer than a heartbeat: a stalled stream; `None` if it reads.
    fn stalled_since(&self, place: &StreamPlace) -> Option<u64> {
        let since = place.blocked_since.load(Ordering::Acquire).checked_sub(1)?;
        let heartbeat = u64::try_from(self.heartbeat.as_millis()).unwrap_or(u64::MAX);
        (self.now_ms().saturating_sub(since) > heartbeat).then_some(since)
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The stream whose place a new `watcher`'s stream from `client` takes at the
    /// replica's bound: the one stalled the longest; else, for a seat, a spectator's,
    /// the oldest of the client holding the most streams; else, for a seat, the oldest
    /// stream of the client holding the most, if it holds more than one more than
    /// `client` does (a fair share: clients with many addresses cannot fill a replica
    /// with their own seats' streams and keep the players of others out). `None`:
    /// refused.
    fn room(
        &self,
        streams: &Streams,
        watcher: Watcher,
        client: ClientId,
    ) -> Option<Arc<StreamPlace>> {
        let stalled = streams
            .open
            .iter()
            .filter_map(|p| Some((self.stalled_since(p)?, p)))
            .min_by_key(|&(since, _)| since)
            .map(|(_, p)| p);
        if stalled.is_some() || watcher == Watcher::Spectator {
            return stalled.cloned();
        }
        let holds = |c: &ClientId| streams.by_client.get(c).map_or(0, |t| t.total);
        let biggest = |spectators: bool| {
            streams
                .open
                .iter()
                .filter(|p| !spectators || p.watcher == Watcher::Spectator)
                // The oldest of the client holding the most (`open` is oldest first).
                .rev()
                .max_by_key(|p| holds(&p.client))
        };
        let ours = holds(&client);
        biggest(true)
            .or_else(|| biggest(false).filter(|p| holds(&p.client) > ours + 1))
            .cloned()
    }

    /// The most streams open at once.
    pub fn limit(&self) -> usize {
        self.total
    }

    /// Streams open now.
    pub fn open(&self) -> usize {
        self.lock().open.len()
    }

    /// Watches refused, by bound.
    pub fn refusals(&self) -> impl Iterator<Item = (Bound, u64)> + '_ {
        Bound::ALL
            .into_iter()
            .map(|b| (b, self.refusals[b as usize].load(Ordering::Relaxed)))
    }

    /// Streams the server ended, by cause.
    pub fn ended(&self) -> impl Iterator<Item = (Ended, u64)> + '_ {
        Ended::ALL
            .into_iter()
            .map(|e| (e, self.ended[e as usize].load(Ordering::Relaxed)))
    }
}

/// Gives `place`'s counts back (once: `false` if they were already).
fn release(streams: &mut Streams, place: &Arc<StreamPlace>) -> bool {
    if place.released.swap(true, Ordering::AcqRel) {
        return false;
    }
    if let Some(i) = streams.open.iter().position(|p| Arc::ptr_eq(p, place)) {
        streams.open.remove(i);
    }
    if let Some(on_match) = streams.by_match.get_mut(&place.match_id) {
        match place.watcher {
            Watcher::Seat(seat) => on_match.seats[seat] -= 1,
            Watcher::Spectator => on_match.spectators -= 1,
        }
        if on_match.spectators == 0 && on_match.seats == [0; 4] {
            streams.by_match.remove(&place.match_id);
        }
    }
    if let Some(theirs) = streams.by_client.get_mut(&place.client) {
        theirs.total -= 1;
        if let Some(i) = theirs
            .matches
            .iter()
            .position(|(m, _)| *m == place.match_id)
        {
            theirs.matches[i].1 -= 1;
            if theirs.matches[i].1 == 0 {
                theirs.matches.swap_remove(i);
            }
        }
        if theirs.total == 0 {
            streams.by_client.remove(&place.client);
        }
    }
    true
}

impl Permit {
    /// Completes when the stream is told to end: its place was given to another.
    pub async fn told_to_end(&self) {
        if self.place.released.load(Ordering::Acquire) {
            return;
        }
        self.place.end.notified().await;
    }

    /// A message waits for the client to read it (from now, if it did not already).
    pub fn blocked(&self) {
        let now = self.limits.now_ms();
        let _ = self.place.blocked_since.compare_exchange(
            0,
            now.saturating_add(1),
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// The client read what waited.
    pub fn unblocked(&self) {
        self.place.blocked_since.store(0, Ordering::Release);
    }

    /// The stream ends itself: its client has not read for the stall limit. Counted
    /// (once: not if its place was already given to another).
    pub fn stalled(&self) {
        if release(&mut self.limits.lock(), &self.place) {
            self.limits.ended[Ended::Stalled as usize].fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        release(&mut self.limits.lock(), &self.place);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::ConnectionId;
    use crate::state::MATCH_ID_LEN;

    const BEAT: Duration = Duration::from_secs(15);

    fn client(n: u8) -> ClientId {
        ClientId::Address(std::net::IpAddr::from([198, 51, 100, n]))
    }

    fn game(n: u8) -> MatchId {
        MatchId([n; MATCH_ID_LEN])
    }

    fn connection() -> Arc<Tracker> {
        Tracker::new(ConnectionId(1), None, tokio::time::Instant::now(), None)
    }

    #[test]
    fn a_streams_place_on_its_connection_goes_with_its_answer_and_a_refusal_takes_none() {
        let limits = WatchLimits::new(2, 1, 64, BEAT);
        let connection = Tracker::in_process();
        let admit = |c: &Arc<Tracker>, n| limits.admit(c, client(n), game(1), Watcher::Spectator);
        let (permit, answer) = admit(&connection, 1).expect("a place");
        assert_eq!(admit(&connection, 1).err(), Some(Bound::Connection));
        // Its answer ended while its task winds down: with a unary call open the
        // connection is busy, not one of streams only, so never evicted for it.
        drop(answer);
        let _unary = connection.opened();
        assert_eq!(connection.eviction_rank(), None);
        assert_eq!(limits.open(), 1, "the task still holds its place in all");
        drop(permit);
        assert_eq!(limits.open(), 0);
        // Refused for the replica's bound: nothing is kept on the connection.
        let held = [admit(&connection, 1), admit(&Tracker::in_process(), 2)];
        assert!(held.iter().all(Result::is_ok));
        let third = Tracker::in_process();
        assert_eq!(admit(&third, 3).err(), Some(Bound::Replica));
        drop(held);
        assert!(
            third.open_watch(1),
            "its count on the connection was given back"
        );
    }

    #[test]
    fn the_stores_backstop_holds_a_matchs_spectators_and_every_seats_devices() {
        let most = MATCH_SPECTATORS + 4 * SEAT_STREAMS;
        assert!(most <= crate::store::changes::MAX_WATCHERS_PER_MATCH);
    }

    #[test]
    fn spectators_never_take_a_seats_places_on_a_match() {
        let limits = WatchLimits::new(1_000, 1_000, 1_000, BEAT);
        let conn = connection();
        // Spectators from many clients fill the match's spectator places.
        let spectators: Vec<_> = (0..MATCH_SPECTATORS as u8)
            .map(|n| {
                limits
                    .admit(&conn, client(n), game(1), Watcher::Spectator)
                    .expect("a spectator")
            })
            .collect();
        let refused = limits.admit(&conn, client(200), game(1), Watcher::Spectator);
        assert_eq!(refused.err(), Some(Bound::MatchSpectators));
        // Every seat still watches, from each of its player's devices.
        let mut seats = Vec::new();
        for seat in 0..4 {
            for _ in 0..SEAT_STREAMS {
                let placed = limits.admit(
                    &conn,
                    client(100 + seat as u8),
                    game(1),
                    Watcher::Seat(seat),
                );
                seats.push(placed.expect("a seat's device"));
            }
            let more = limits.admit(
                &conn,
                client(100 + seat as u8),
                game(1),
                Watcher::Seat(seat),
            );
            assert_eq!(more.err(), Some(Bound::Seat));
        }
        drop((spectators, seats));
        assert_eq!(limits.open(), 0);
        assert!(limits.lock().by_match.is_empty() && limits.lock().by_client.is_empty());
    }

    #[test]
    fn one_client_is_bounded_in_all_and_on_one_match() {
        let limits = WatchLimits::new(1_000, 1_000, 10, BEAT);
        let conn = connection();
        let mut held = Vec::new();
        for _ in 0..CLIENT_STREAMS_PER_MATCH {
            held.push(
                limits
                    .admit(&conn, client(1), game(1), Watcher::Spectator)
                    .expect("one"),
            );
        }
        let refused = limits.admit(&conn, client(1), game(1), Watcher::Spectator);
        assert_eq!(refused.err(), Some(Bound::ClientMatch));
        // A seat at the same address is not refused for those spectators' sake: the
        // oldest of them makes room.
        let seat = limits
            .admit(&conn, client(1), game(1), Watcher::Seat(0))
            .expect("the seat");
        assert!(held[0].0.place.released.load(Ordering::Acquire));
        held.remove(0);
        held.push(seat);
        for _ in CLIENT_STREAMS_PER_MATCH..10 {
            held.push(
                limits
                    .admit(&conn, client(1), game(2), Watcher::Spectator)
                    .expect("two"),
            );
        }
        let refused = limits.admit(&conn, client(1), game(3), Watcher::Spectator);
        assert_eq!(refused.err(), Some(Bound::Client));
        // Another client is served.
        assert!(
            limits
                .admit(&conn, client(2), game(1), Watcher::Spectator)
                .is_ok()
        );
        let counts: Vec<_> = limits.refusals().filter(|&(_, n)| n > 0).collect();
        assert_eq!(counts, [(Bound::Client, 1), (Bound::ClientMatch, 1)]);
        assert_eq!(limits.ended().next(), Some((Ended::MadeRoom, 1)));
    }

    #[tokio::test]
    async fn at_the_replicas_bound_a_seat_takes_the_oldest_spectators_place() {
        let limits = WatchLimits::new(3, 1_000, 1_000, BEAT);
        let conn = connection();
        let spectators: Vec<_> = (0..3)
            .map(|n| {
                limits
                    .admit(&conn, client(n), game(n), Watcher::Spectator)
                    .expect("a spectator")
            })
            .collect();
        // Another spectator is refused; a seat takes the oldest spectator's place.
        let refused = limits.admit(&conn, client(9), game(9), Watcher::Spectator);
        assert_eq!(refused.err(), Some(Bound::Replica));
        let seat = limits
            .admit(&conn, client(9), game(9), Watcher::Seat(0))
            .expect("the seat is served");
        let (oldest, _) = &spectators[0];
        tokio::time::timeout(Duration::from_secs(1), oldest.told_to_end())
            .await
            .expect("the oldest spectator is told to end");
        assert_eq!(limits.open(), 3);
        // Seats only left but one spectator: the next seat takes its place, and then
        // a seat is refused (seats never end seats).
        let _second = limits
            .admit(&conn, client(8), game(8), Watcher::Seat(1))
            .expect("a seat");
        let _third = limits
            .admit(&conn, client(7), game(7), Watcher::Seat(2))
            .expect("a seat");
        let refused = limits.admit(&conn, client(6), game(6), Watcher::Seat(3));
        assert_eq!(refused.err(), Some(Bound::Replica));
        let ended: Vec<_> = limits.ended().collect();
        assert_eq!(ended, [(Ended::MadeRoom, 3), (Ended::Stalled, 0)]);
        drop((spectators, seat));
    }

    #[test]
    fn clients_filling_a_replica_with_their_own_seats_make_room_for_others() {
        // Two clients hold every place with seats' streams of their own matches; a
        // player of another client takes the place of the one holding the most.
        let limits = WatchLimits::new(6, 1_000, 1_000, BEAT);
        let conn = connection();
        let mut held = Vec::new();
        for (n, seat) in [(1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (2, 1)] {
            let placed = limits.admit(&conn, client(n), game(n), Watcher::Seat(seat));
            held.push(placed.expect("a seat"));
        }
        let served = limits.admit(&conn, client(9), game(9), Watcher::Seat(0));
        assert!(served.is_ok(), "{:?}", served.err());
        assert!(
            held[0].0.place.released.load(Ordering::Acquire),
            "client 1's oldest"
        );
        // Clients holding one place each (many addresses): no fair share to take.
        let limits = WatchLimits::new(2, 1_000, 1_000, BEAT);
        let _a = limits.admit(&conn, client(1), game(1), Watcher::Seat(0));
        let _b = limits.admit(&conn, client(2), game(2), Watcher::Seat(0));
        let refused = limits.admit(&conn, client(3), game(3), Watcher::Seat(0));
        assert_eq!(refused.err(), Some(Bound::Replica));
    }

    #[tokio::test]
    async fn at_the_replicas_bound_a_stalled_stream_makes_room_for_anyone() {
        let limits = WatchLimits::new(2, 1_000, 1_000, Duration::ZERO);
        let conn = connection();
        let (reading, _a) = limits
            .admit(&conn, client(1), game(1), Watcher::Seat(0))
            .expect("a seat");
        let (stalled, _b) = limits
            .admit(&conn, client(2), game(2), Watcher::Seat(0))
            .expect("a seat");
        stalled.blocked();
        // Stalled once a message has waited longer than a heartbeat (none here).
        std::thread::sleep(Duration::from_millis(2));
        let _spectator = limits
            .admit(&conn, client(3), game(3), Watcher::Spectator)
            .expect("a spectator takes the stalled seat's place");
        tokio::time::timeout(Duration::from_secs(1), stalled.told_to_end())
            .await
            .expect("the stalled stream is told to end");
        assert_eq!(limits.ended().next(), Some((Ended::MadeRoom, 0)));
        assert_eq!(limits.ended().nth(1), Some((Ended::Stalled, 1)));
        drop(reading);
    }
}
