//! The HARD search queue: a slot per core for the searches that run, a queue for those
//! that wait, sized by the latency budget, and turns taken fairly by player.
//!
//! A search belongs to an [`Owner`]: its client (its connection, or the address a
//! trusted gateway names: [`ClientId`]) and its match. It runs at once if a slot is free
//! and its owner runs fewer than half the slots (at least one); else it waits, if its
//! owner has fewer than [`QUEUED_PER_OWNER`] waiting and the search can expect to start
//! before its call's deadline; else it is refused (`SEARCH_QUEUE_FULL`). The queue holds
//! what the slots get through in the wait budget (`--search-wait-budget-ms` over the
//! measured time a search holds a slot: [`SearchLimits::queue`]). A slot given back goes to
//! the waiter ranked first by (its client's last search start, its match's, its
//! arrival), the oldest first: clients take turns, then the matches of a client, and a
//! player at human pace goes before a flood. In a full queue a newcomer ranked before
//! the last-ranked waiter takes that waiter's place, and the waiter is refused as if it
//! had never entered; so what a flood loses is its own newest calls. The last starts of
//! the latest [`REMEMBERED_PER_SLOT`] clients and matches a slot are kept (in `lru`'s map); one not among
//! them ranks as if it had last started a search just before the oldest one running
//! now: after every key waiting since before (so fresh matches win a flood nothing),
//! before the keys running now (so a new player waits a turn, not a flood's round).
//!
//! The [`Ticket`] holds the place (in the queue, then in a slot) and gives it back when
//! dropped: by a caller that gave up while waiting, or by the search when it ends. A
//! search holds it in its [`SearchStop`], the engine's question before each world
//! (has the call gone, or its deadline passed?), which counts the searches whose call
//! ended while they ran and the worlds they started after it ([`Searches::stops`], shown
//! as metrics): at most one each, the world a question answered just before the end.
//!
//! Time is read from a [`Clock`] (the system's, unless [`Searches::with_clock`] is
//! handed another), so that the tests decide how long every search holds its slot and
//! assert the queue's decisions whatever the machine's speed.
//!
//! Our own code: what the project keeps offers a FIFO (tokio's `Semaphore`) or a limit
//! with no queue (tower's `ConcurrencyLimit`, `LoadShed`); none bounds a queue per key,
//! ranks waiters by what their keys last ran, or displaces a waiter for a newcomer.

use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use lru::LruCache;
use tokio::sync::oneshot::{self, error::TryRecvError};

use crate::connection::ClientId;

pub use crate::state::MatchId;

/// Whose search it is: the player of one match, as far as the server can tell. Turns
/// are taken by client and match; the caps on what runs and waits are per owner, the
/// seat included, so that one seat's searches never use up another's places at the
/// same table (two seats may share a client: one gateway connection, one address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Owner {
    pub client: ClientId,
    pub match_id: MatchId,
    /// The seat whose call it is (its credential checked), if the call names one.
    pub seat: Option<u32>,
}

/// Searches one owner may have waiting: a match plays one move at a time, so more is a
/// client asking again before it has its answer.
pub const QUEUED_PER_OWNER: usize = 2;
/// Waiting places per slot, at least and at most, whatever the budget and hold say.
pub const QUEUED_PER_SLOT: std::ops::RangeInclusive<usize> = 2..=64;
/// How long a search is taken to hold its slot until searches have been timed: about
/// a server-played HARD bots' call at the default worlds.
pub const FIRST_HOLD: Duration = Duration::from_millis(30);
/// The wait budget unless `--search-wait-budget-ms` says otherwise: the last of a full
/// queue starts within a quarter of a second, a pause a player hardly notices in a
/// bot's move, while the front of the queue is held to the 100 ms a Suggest is
/// (docs/operations.md).
pub const DEFAULT_WAIT_BUDGET: Duration = Duration::from_millis(250);
/// Clients, and matches, whose last search start is remembered, per slot: a slot
/// serves about 1,500 HARD tables at a human pace (docs/operations.md, "Capacity"),
/// so a player thinking a few seconds is still remembered at its next move.
pub const REMEMBERED_PER_SLOT: NonZeroUsize = NonZeroUsize::new(4096).unwrap();
/// The weight of a new measurement in the moving average of the hold, as 1 / this.
const HOLD_SMOOTHING: u32 = 8;

/// The sizes of the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchLimits {
    /// Searches running at once (one per core: a search is all CPU).
    pub slots: usize,
    /// Searches one owner may run at once.
    pub running_per_owner: usize,
    /// Searches one owner may have waiting.
    pub queued_per_owner: usize,
    /// How long the last of a full queue should expect to wait for its slot.
    pub wait_budget: Duration,
}

/// How many clients, and matches, are remembered for `slots` slots.
fn remembered(slots: usize) -> NonZeroUsize {
    NonZeroUsize::new(slots.max(1)).map_or(REMEMBERED_PER_SLOT, |n| {
        REMEMBERED_PER_SLOT.saturating_mul(n)
    })
}

impl SearchLimits {
    /// For `slots` slots: an owner runs at most half of them (at least one) and has
    /// [`QUEUED_PER_OWNER`] waiting; the queue is sized for `wait_budget`.
    pub fn for_slots(slots: usize, wait_budget: Duration) -> SearchLimits {
        let slots = slots.max(1);
        SearchLimits {
            slots,
            running_per_owner: (slots / 2).max(1),
            queued_per_owner: QUEUED_PER_OWNER,
            wait_budget,
        }
    }

    /// Waiting places when a search holds its slot for `hold`: as many as the slots get
    /// through in the wait budget, within [`QUEUED_PER_SLOT`] per slot.
    pub fn queue(&self, hold: Duration) -> usize {
        let per_slot = self
            .wait_budget
            .as_nanos()
            .checked_div(hold.as_nanos())
            .unwrap_or(u128::MAX);
        let per_slot = usize::try_from(per_slot).unwrap_or(usize::MAX);
        self.slots
            .saturating_mul(per_slot.clamp(*QUEUED_PER_SLOT.start(), *QUEUED_PER_SLOT.end()))
    }
}

/// Where the queue reads the time: the system's monotonic clock in the server, a clock
/// the test moves by hand in the tests.
pub trait Clock: Send + Sync {
    fn now(&self) -> Instant;
}

/// The system's monotonic clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// The queue and its slots.
pub struct Searches {
    limits: SearchLimits,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    /// Refusals are logged at most once per period, with a count of the others.
    refusals: Mutex<crate::throttle::Throttle>,
    /// Searches whose call ended while they ran ([`SearchStop`]).
    stopped: AtomicU64,
    /// The worlds those searches started after their call ended.
    worlds_after_stop: AtomicU64,
}

impl std::fmt::Debug for Searches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Searches")
            .field("limits", &self.limits)
            .field("running", &state.running.len())
            .field("waiting", &state.waiting.len())
            .field("hold", &state.hold)
            .finish()
    }
}

struct State {
    /// The searches in the slots, by their starts' stamps.
    running: BTreeSet<u64>,
    /// In no order: [`State::rank`] orders them.
    waiting: Vec<Waiter>,
    /// What each owner holding a place holds.
    owners: HashMap<Owner, HeldSearch>,
    /// The stamp of the last search start of each client and match seen lately.
    /// Stamps rise, so the least recently stamped key, the one forgotten first, is
    /// the one with the oldest stamp.
    clients: LruCache<ClientId, u64>,
    matches: LruCache<MatchId, u64>,
    next_id: u64,
    /// Searches started so far; a start's stamp is twice its number (an odd stamp is
    /// a newcomer's: [`State::newcomer`]).
    started: u64,
    /// How long a search holds its slot: a moving average.
    hold: Duration,
}

/// What one owner holds.
#[derive(Clone, Copy, Default)]
struct HeldSearch {
    running: usize,
    queued: usize,
}

struct Waiter {
    id: u64,
    owner: Owner,
    /// Its stamp for a client or match not known ([`State::newcomer`], when it came).
    newcomer: u64,
    wake: oneshot::Sender<Turn>,
}

/// A search in a slot: since when, and its start's stamp.
#[derive(Clone, Copy)]
struct SearchSlot {
    since: Instant,
    stamp: u64,
}

/// What a waiter is told.
enum Turn {
    Run(SearchSlot),
    /// Its place went to a newcomer ranked before it.
    Displaced,
}

/// A waiter's order: the lowest first.
type Rank = (u64, u64, u64);

/// A search refused: the queue is full (or its owner holds its share of it, or it
/// could not start before its deadline), or its place went to a search ranked before
/// it while it waited.
#[derive(Debug, PartialEq, Eq)]
pub struct SearchRefused;

/// A search's place: in the queue (until [`Ticket::running`] returns), then in a slot.
/// Dropping it gives the place back and hands a free slot to the next waiter.
pub struct Ticket {
    searches: Arc<Searches>,
    id: u64,
    owner: Owner,
    place: Place,
}

enum Place {
    /// Told when it may run, or that it is displaced.
    Waiting(oneshot::Receiver<Turn>),
    Running(SearchSlot),
    /// Displaced: it holds nothing.
    Gone,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = match self.place {
            Place::Waiting(_) => "waiting",
            Place::Running(_) => "running",
            Place::Gone => "displaced",
        };
        f.debug_struct("Ticket")
            .field("owner", &self.owner)
            .field("place", &place)
            .finish()
    }
}

impl Searches {
    pub fn new(limits: SearchLimits) -> Arc<Searches> {
        Searches::with_clock(limits, Arc::new(SystemClock))
    }

    /// The queue reading the time from `clock`.
    pub fn with_clock(limits: SearchLimits, clock: Arc<dyn Clock>) -> Arc<Searches> {
        Arc::new(Searches {
            limits,
            clock,
            state: Mutex::new(State {
                running: BTreeSet::new(),
                waiting: Vec::new(),
                owners: HashMap::new(),
                clients: LruCache::new(remembered(limits.slots)),
                matches: LruCache::new(remembered(limits.slots)),
                next_id: 0,
                started: 0,
                hold: FIRST_HOLD,
            }),
            refusals: Mutex::default(),
            stopped: AtomicU64::new(0),
            worlds_after_stop: AtomicU64::new(0),
        })
    }

    /// Searches whose call ended (its client gone, or its deadline passed) while they
    /// ran, and the worlds they started after it: at most one each, the world whose
    /// question was answered just before the end. Counted when the search gives its
    /// slot back.
    pub fn stops(&self) -> (u64, u64) {
        (
            self.stopped.load(Relaxed),
            self.worlds_after_stop.load(Relaxed),
        )
    }

    /// Whether a refusal's log line is due: `Some(refusals held back since the last)`.
    pub fn refusal_due(&self) -> Option<u64> {
        self.refusals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .check()
    }

    pub fn limits(&self) -> SearchLimits {
        self.limits
    }

    /// Searches running and waiting now.
    pub fn counts(&self) -> (usize, usize) {
        let state = self.lock();
        (state.running.len(), state.waiting.len())
    }

    /// Room now: slots, and waiting places (which follow the measured hold).
    pub fn capacity(&self) -> (usize, usize) {
        let state = self.lock();
        (self.limits.slots, self.limits.queue(state.hold))
    }

    /// A slot now or a place in the queue for a search of `owner` whose call ends at
    /// `deadline`, displacing the last-ranked waiter of a full queue if this search
    /// ranks before it; refused otherwise (see the module's documentation).
    pub fn enter(
        self: &Arc<Searches>,
        owner: Owner,
        deadline: Instant,
    ) -> Result<Ticket, SearchRefused> {
        let limits = self.limits;
        let now = self.clock.now();
        if deadline <= now {
            // It could not run a world: taking a slot would only time a hold of nothing.
            return Err(SearchRefused);
        }
        let mut state = self.lock();
        let state = &mut *state;
        let held = state.owners.get(&owner).copied().unwrap_or_default();
        let id = state.next_id;
        state.next_id += 1;
        let place = if state.running.len() < limits.slots && held.running < limits.running_per_owner
        {
            Place::Running(state.start(owner, now))
        } else {
            if held.queued >= limits.queued_per_owner {
                return Err(SearchRefused);
            }
            let newcomer = state.newcomer();
            let rank = state.rank(owner, newcomer, id);
            let ahead = state
                .waiting
                .iter()
                .filter(|w| state.rank(w.owner, w.newcomer, w.id) < rank)
                .count();
            if state.expected_wait(limits, ahead) > deadline.saturating_duration_since(now) {
                return Err(SearchRefused);
            }
            if state.waiting.len() >= limits.queue(state.hold) {
                state.displace_for(rank)?;
            }
            let (wake, wait) = oneshot::channel();
            state.waiting.push(Waiter {
                id,
                owner,
                newcomer,
                wake,
            });
            state.owners.entry(owner).or_default().queued += 1;
            Place::Waiting(wait)
        };
        Ok(Ticket {
            searches: Arc::clone(self),
            id,
            owner,
            place,
        })
    }

    /// The state, even if a thread panicked holding it: every change to it is made
    /// whole under the lock before anything that could panic.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    /// The stamp a client or match not known gets now: just before the start of the
    /// oldest search running. It ranks after every key that waits since before that
    /// (so fresh matches win a flood nothing), and before the keys running now, which
    /// have just had their turn (so a new player waits one turn, not a round of the
    /// flood). With no search running, just after the latest start.
    fn newcomer(&self) -> u64 {
        self.running
            .first()
            .map_or(2 * self.started + 1, |oldest| oldest - 1)
    }

    /// Where a waiter of `owner` ranks: by the stamps of its client's and its match's
    /// last starts, or its `newcomer` stamp for either if not known.
    fn rank(&self, owner: Owner, newcomer: u64, id: u64) -> Rank {
        (
            self.clients
                .peek(&owner.client)
                .copied()
                .unwrap_or(newcomer),
            self.matches
                .peek(&owner.match_id)
                .copied()
                .unwrap_or(newcomer),
            id,
        )
    }

    /// How long a waiter with `ahead` waiters ranked before it may expect to wait: a
    /// search's hold for each round of the slots until its own.
    fn expected_wait(&self, limits: SearchLimits, ahead: usize) -> Duration {
        let rounds = u32::try_from(ahead / limits.slots + 1).unwrap_or(u32::MAX);
        self.hold.saturating_mul(rounds)
    }

    /// Takes a slot for `owner` at `now` and stamps its client and match with the start.
    fn start(&mut self, owner: Owner, now: Instant) -> SearchSlot {
        self.started += 1;
        let stamp = 2 * self.started;
        self.running.insert(stamp);
        self.owners.entry(owner).or_default().running += 1;
        self.clients.put(owner.client, stamp);
        self.matches.put(owner.match_id, stamp);
        SearchSlot { since: now, stamp }
    }

    /// Gives back `owner`'s place in the queue.
    fn unqueue(&mut self, owner: Owner) {
        self.owners_change(owner, |held| held.queued = held.queued.saturating_sub(1));
    }

    /// Gives back `owner`'s slot at `now`, and times how long it held it.
    fn stop(&mut self, owner: Owner, slot: SearchSlot, now: Instant) {
        self.running.remove(&slot.stamp);
        self.owners_change(owner, |held| held.running = held.running.saturating_sub(1));
        self.timed(now.saturating_duration_since(slot.since));
    }

    /// Changes what `owner` holds, and forgets it once it holds nothing.
    fn owners_change(&mut self, owner: Owner, change: impl FnOnce(&mut HeldSearch)) {
        let Some(held) = self.owners.get_mut(&owner) else {
            return;
        };
        change(held);
        if held.running == 0 && held.queued == 0 {
            self.owners.remove(&owner);
        }
    }

    /// Makes room in a full queue for a newcomer ranked `rank`: the last-ranked waiter
    /// is told it is displaced, if it ranks after the newcomer.
    fn displace_for(&mut self, rank: Rank) -> Result<(), SearchRefused> {
        let last = self
            .waiting
            .iter()
            .enumerate()
            .map(|(i, w)| (self.rank(w.owner, w.newcomer, w.id), i))
            .max();
        let Some((_, i)) = last.filter(|&(last, _)| last > rank) else {
            return Err(SearchRefused);
        };
        let waiter = self.waiting.swap_remove(i);
        self.unqueue(waiter.owner);
        let _ = waiter.wake.send(Turn::Displaced);
        Ok(())
    }

    /// Gives free slots, at `now`, to the waiters ranked first whose owners run fewer
    /// than their share.
    fn dispatch(&mut self, limits: SearchLimits, now: Instant) {
        while self.running.len() < limits.slots {
            let next = self
                .waiting
                .iter()
                .enumerate()
                .filter(|(_, w)| {
                    let running = self.owners.get(&w.owner).map_or(0, |held| held.running);
                    running < limits.running_per_owner
                })
                .min_by_key(|(_, w)| self.rank(w.owner, w.newcomer, w.id))
                .map(|(i, _)| i);
            let Some(i) = next else {
                return;
            };
            let waiter = self.waiting.swap_remove(i);
            self.unqueue(waiter.owner);
            let slot = self.start(waiter.owner, now);
            // A waiter that stopped listening still holds the slot until its ticket is
            // dropped, which gives it back.
            let _ = waiter.wake.send(Turn::Run(slot));
        }
    }

    /// Counts a search that held its slot for `held` into the average hold.
    fn timed(&mut self, held: Duration) {
        let n = HOLD_SMOOTHING;
        self.hold = (self.hold.saturating_mul(n - 1).saturating_add(held)) / n;
    }
}

impl Ticket {
    /// Waits until the search may run (at once if it entered on a free slot); refused
    /// if its place went to a search ranked before it meanwhile.
    pub async fn running(&mut self) -> Result<(), SearchRefused> {
        if let Place::Waiting(wait) = &mut self.place {
            self.place = match wait.await {
                Ok(Turn::Run(slot)) => Place::Running(slot),
                // The sender is only dropped having sent.
                Ok(Turn::Displaced) | Err(_) => Place::Gone,
            };
        }
        match self.place {
            Place::Gone => Err(SearchRefused),
            _ => Ok(()),
        }
    }

    /// The search's stop, holding this place until the search ends: true once `gone`
    /// is set (the call's future dropped) or `deadline` passes on the queue's clock.
    pub fn stop_when(self, gone: Arc<AtomicBool>, deadline: Instant) -> SearchStop {
        SearchStop {
            ticket: self,
            gone,
            deadline,
            came: Cell::new(false),
            worlds_after: Cell::new(0),
        }
    }
}

/// A running search's [`Stop`](crate::engine::suggest::Stop), asked by the engine
/// before each world, and its place in a slot. Dropped when the search ends: it counts
/// into [`Searches::stops`] whether the call ended while the search ran and the worlds
/// the search started after that, then gives the slot back.
pub struct SearchStop {
    ticket: Ticket,
    gone: Arc<AtomicBool>,
    deadline: Instant,
    /// Whether the end of the call has been seen, by a question or a world's start.
    came: Cell<bool>,
    /// Worlds started once the call had ended.
    worlds_after: Cell<u64>,
}

impl SearchStop {
    /// Whether the call has ended: now, or already seen.
    fn ended(&self) -> bool {
        let ended = self.came.get()
            || self.gone.load(Relaxed)
            || self.ticket.searches.clock.now() >= self.deadline;
        self.came.set(ended);
        ended
    }
}

impl crate::engine::suggest::Stop for SearchStop {
    fn stop(&self) -> bool {
        self.ended()
    }

    fn world_started(&self) {
        if self.ended() {
            self.worlds_after.set(self.worlds_after.get() + 1);
        }
    }
}

impl Drop for SearchStop {
    /// Counted before the ticket (a field) gives the slot back: whoever sees the slot
    /// free sees the search counted.
    fn drop(&mut self) {
        if self.came.get() {
            let searches = &self.ticket.searches;
            searches.stopped.fetch_add(1, Relaxed);
            searches
                .worlds_after_stop
                .fetch_add(self.worlds_after.get(), Relaxed);
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let limits = self.searches.limits;
        let now = self.searches.clock.now();
        let mut state = self.searches.lock();
        // Under the lock, a waiter's message is either sent or not: what it holds.
        let slot = match std::mem::replace(&mut self.place, Place::Gone) {
            Place::Running(slot) => Some(slot),
            Place::Gone => None,
            Place::Waiting(mut wait) => match wait.try_recv() {
                Ok(Turn::Run(slot)) => Some(slot),
                Ok(Turn::Displaced) | Err(TryRecvError::Closed) => None,
                Err(TryRecvError::Empty) => {
                    if let Some(i) = state.waiting.iter().position(|w| w.id == self.id) {
                        state.waiting.swap_remove(i);
                        state.unqueue(self.owner);
                    }
                    None
                }
            },
        };
        if let Some(slot) = slot {
            state.stop(self.owner, slot, now);
        }
        state.dispatch(limits, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::ConnectionId;
    use crate::state::MATCH_ID_LEN;

    /// The owner of match `game` on connection `conn`.
    fn owner(conn: u64, game: u8) -> Owner {
        Owner {
            client: ClientId::Connection(ConnectionId(conn)),
            match_id: MatchId([game; MATCH_ID_LEN]),
            seat: Some(0),
        }
    }

    /// A clock that moves only when told: every hold and wait is the test's choice.
    struct Hand(Mutex<Instant>);

    impl Clock for Hand {
        fn now(&self) -> Instant {
            *self.0.lock().unwrap()
        }
    }

    impl Hand {
        fn advance(&self, by: Duration) {
            *self.0.lock().unwrap() += by;
        }
    }

    /// A queue of `limits` on a clock of the test's.
    fn clocked(limits: SearchLimits) -> (Arc<Searches>, Arc<Hand>) {
        let hand = Arc::new(Hand(Mutex::new(Instant::now())));
        let clock: Arc<dyn Clock> = hand.clone();
        (Searches::with_clock(limits, clock), hand)
    }

    /// A deadline no test's queue reaches: its clock starts at the time it is made and
    /// moves, by hand, far less than this.
    fn far() -> Instant {
        Instant::now() + Duration::from_secs(3600)
    }

    fn is_running(ticket: &Ticket) -> bool {
        matches!(ticket.place, Place::Running(_))
    }

    /// A queue of `slots` slots and two waiting places a slot (a budget of none), on a
    /// clock that stands still.
    fn small(slots: usize) -> Arc<Searches> {
        clocked(SearchLimits::for_slots(slots, Duration::ZERO)).0
    }

    /// A queue of `slots` slots and `per_slot` waiting places a slot while a search
    /// holds its slot as long as it is taken to before any is timed (on a clock that
    /// stands still, every hold is timed as none: the places only grow).
    fn sized(slots: usize, per_slot: u32) -> Arc<Searches> {
        clocked(SearchLimits::for_slots(slots, FIRST_HOLD * per_slot)).0
    }

    const SOON: Duration = Duration::from_secs(1);

    #[test]
    fn the_queue_holds_what_the_slots_get_through_in_the_budget() {
        let limits = SearchLimits::for_slots(2, Duration::from_millis(250));
        assert_eq!(limits.running_per_owner, 1);
        assert_eq!(limits.queue(FIRST_HOLD), 2 * 8);
        assert_eq!(limits.queue(Duration::from_millis(5)), 2 * 50);
        assert_eq!(limits.queue(Duration::from_micros(1)), 2 * 64);
        assert_eq!(limits.queue(Duration::ZERO), 2 * 64);
        assert_eq!(limits.queue(Duration::from_secs(1)), 2 * 2);
        assert_eq!(
            SearchLimits::for_slots(8, Duration::ZERO).queue(FIRST_HOLD),
            16
        );
        assert_eq!(SearchLimits::for_slots(0, Duration::ZERO).slots, 1);
    }

    #[test]
    fn the_hold_is_a_moving_average_of_how_long_searches_held_their_slots() {
        let (searches, clock) = clocked(SearchLimits::for_slots(1, Duration::from_millis(250)));
        assert_eq!(searches.capacity(), (1, 8));
        let mut state = searches.lock();
        for _ in 0..100 {
            state.timed(Duration::from_millis(100));
        }
        let before = state.hold;
        assert!(before > Duration::from_millis(99), "{before:?}");
        drop(state);
        assert_eq!(searches.capacity(), (1, 2));
        // A ticket that held its slot 20 ms is timed: an eighth of the new hold.
        let ticket = searches.enter(owner(1, 1), far()).unwrap();
        clock.advance(Duration::from_millis(20));
        drop(ticket);
        let after = searches.lock().hold;
        assert_eq!(after, (before * 7 + Duration::from_millis(20)) / 8);
        // A waiter is timed from its start, not from when it came.
        let running = searches.enter(owner(1, 1), far()).unwrap();
        let waiting = searches.enter(owner(2, 2), far()).unwrap();
        clock.advance(Duration::from_millis(50));
        drop(running);
        let hold = searches.lock().hold;
        clock.advance(Duration::from_millis(10));
        drop(waiting);
        assert_eq!(
            searches.lock().hold,
            (hold * 7 + Duration::from_millis(10)) / 8
        );
    }

    #[test]
    fn a_match_runs_half_the_slots_and_queues_two_then_is_refused() {
        let searches = small(4);
        let a: Vec<Ticket> = std::iter::from_fn(|| searches.enter(owner(1, 1), far()).ok())
            .take(100)
            .collect();
        assert_eq!(a.len(), 2 + QUEUED_PER_OWNER);
        assert_eq!(a.iter().filter(|t| is_running(t)).count(), 2);
        // Another match, on the same connection, still runs at once on the slots left.
        let b = searches.enter(owner(1, 2), far()).unwrap();
        assert!(is_running(&b));
        assert_eq!(searches.counts(), (3, QUEUED_PER_OWNER));
    }

    #[test]
    fn another_seat_of_the_same_match_and_client_has_places_of_its_own() {
        // Two seats at one table behind one gateway connection: one seat's searches
        // holding its share (one running, two waiting on two slots) leave the other
        // seat its own, so one player cannot get another's moves refused.
        let searches = small(2);
        let seat = |seat| Owner {
            seat: Some(seat),
            ..owner(1, 1)
        };
        let a: Vec<Ticket> = std::iter::from_fn(|| searches.enter(seat(0), far()).ok())
            .take(100)
            .collect();
        assert_eq!(a.len(), 1 + QUEUED_PER_OWNER);
        let b = searches
            .enter(seat(1), far())
            .expect("the other seat's search");
        assert!(is_running(&b));
        assert_eq!(searches.counts(), (2, QUEUED_PER_OWNER));
    }

    #[test]
    fn a_search_whose_deadline_has_passed_is_refused_even_on_a_free_slot() {
        let (searches, clock) = clocked(SearchLimits::for_slots(1, Duration::ZERO));
        let past = clock.now();
        assert_eq!(searches.enter(owner(1, 1), past).err(), Some(SearchRefused));
        assert_eq!(searches.counts(), (0, 0));
        assert_eq!(searches.lock().hold, FIRST_HOLD);
    }

    #[test]
    fn many_matches_over_one_connection_fill_every_slot_and_place() {
        // Players behind a gateway that carries them all over one connection.
        let searches = small(2);
        let held: Vec<Ticket> = (0..6)
            .map(|game| searches.enter(owner(1, game), far()).expect("a place"))
            .collect();
        assert_eq!(held.iter().filter(|t| is_running(t)).count(), 2);
        assert_eq!(searches.counts(), (2, 4));
        // The queue is full: a match that ranks no better is refused.
        assert_eq!(
            searches.enter(owner(1, 6), far()).err(),
            Some(SearchRefused)
        );
    }

    #[tokio::test]
    async fn a_freed_slot_goes_to_the_first_ranked_waiter_under_its_owners_share() {
        let searches = small(2);
        let a1 = searches.enter(owner(1, 1), far()).unwrap();
        let b1 = searches.enter(owner(2, 2), far()).unwrap();
        let mut a2 = searches.enter(owner(1, 1), far()).unwrap();
        let mut b2 = searches.enter(owner(2, 2), far()).unwrap();
        assert!(is_running(&a1) && is_running(&b1));
        assert!(!is_running(&a2) && !is_running(&b2));
        // B's slot is freed: A ranks first (it started first) but runs its share, so
        // B's waiter runs.
        drop(b1);
        b2.running().await.unwrap();
        assert_eq!(searches.counts(), (2, 1));
        drop(a1);
        a2.running().await.unwrap();
        drop((a2, b2));
        assert_eq!(searches.counts(), (0, 0));
        assert!(searches.lock().owners.is_empty());
    }

    /// Whether the ticket runs now (it was told, or entered on a free slot).
    async fn told(ticket: &mut Ticket) -> bool {
        // A timeout polls its future once before it looks at the time.
        matches!(
            tokio::time::timeout(Duration::ZERO, ticket.running()).await,
            Ok(Ok(()))
        )
    }

    #[tokio::test]
    async fn on_one_slot_a_flooding_match_and_another_take_turns() {
        let searches = sized(1, 4);
        // A floods: one running, two waiting, the rest refused; B still finds a place.
        let a1 = searches.enter(owner(1, 1), far()).unwrap();
        let mut a2 = searches.enter(owner(1, 1), far()).unwrap();
        let _a3 = searches.enter(owner(1, 1), far()).unwrap();
        assert!(searches.enter(owner(1, 1), far()).is_err());
        let mut b1 = searches.enter(owner(2, 2), far()).unwrap();
        assert_eq!(searches.counts(), (1, 3));
        // A's search ends: B runs before A's next, though A's waited longer.
        drop(a1);
        assert!(told(&mut b1).await, "B's search runs next");
        assert!(!told(&mut a2).await);
        // Then A again, before B's next.
        let mut b2 = searches.enter(owner(2, 2), far()).unwrap();
        drop(b1);
        assert!(told(&mut a2).await, "then A's");
        assert!(!told(&mut b2).await);
    }

    #[tokio::test]
    async fn clients_take_turns_then_the_matches_of_a_client() {
        let searches = sized(1, 4);
        let run = searches.enter(owner(9, 9), far()).unwrap();
        // Client 1 waits with two matches, client 2 with one; all came after 9 ran.
        let mut waiting = vec![
            ("1a", searches.enter(owner(1, 1), far()).unwrap()),
            ("1b", searches.enter(owner(1, 2), far()).unwrap()),
            ("2a", searches.enter(owner(2, 3), far()).unwrap()),
        ];
        drop(run);
        let mut order = Vec::new();
        while !waiting.is_empty() {
            let mut next = None;
            for (i, (_, ticket)) in waiting.iter_mut().enumerate() {
                if told(ticket).await {
                    assert!(next.is_none(), "one slot, one runs");
                    next = Some(i);
                }
            }
            let (name, ticket) = waiting.remove(next.expect("a waiter runs"));
            order.push(name);
            drop(ticket);
        }
        // 1a first (they tie: arrival decides), then client 2 (client 1 has just run),
        // then client 1's other match.
        assert_eq!(order, ["1a", "2a", "1b"]);
    }

    #[tokio::test]
    async fn a_player_at_human_pace_ranks_before_a_flood_and_fresh_matches_win_nothing() {
        // The flood from another client, or from the player's own (a gateway's
        // connection): the player's match ranks first either way.
        for flood_client in [2, 1] {
            let searches = small(1);
            // The player searched once, long ago (in starts).
            drop(searches.enter(owner(1, 1), far()).unwrap());
            for game in 10..20 {
                drop(searches.enter(owner(flood_client, game), far()).unwrap());
            }
            // The flood runs a match and sends a fresh one; then the player asks.
            let flood = searches.enter(owner(flood_client, 100), far()).unwrap();
            let mut fresh = searches.enter(owner(flood_client, 101), far()).unwrap();
            let mut player = searches.enter(owner(1, 1), far()).unwrap();
            drop(flood);
            assert!(told(&mut player).await, "the player runs first");
            assert!(!told(&mut fresh).await);
        }
    }

    #[tokio::test]
    async fn a_full_queue_displaces_its_last_ranked_waiter_for_a_newcomer_ranked_before() {
        let searches = small(1);
        // The player searched once, long ago.
        drop(searches.enter(owner(1, 1), far()).unwrap());
        // A flooding match fills the slot and the queue (two places).
        let _running = searches.enter(owner(2, 2), far()).unwrap();
        let mut first = searches.enter(owner(2, 2), far()).unwrap();
        let mut newest = searches.enter(owner(2, 2), far()).unwrap();
        assert_eq!(searches.counts(), (1, 2));
        // The player ranks before them: the flood's last-ranked waiter makes room.
        let player = searches.enter(owner(1, 1), far()).unwrap();
        assert_eq!(searches.counts(), (1, 2));
        assert_eq!(
            tokio::time::timeout(SOON, newest.running()).await,
            Ok(Err(SearchRefused))
        );
        drop(newest);
        assert_eq!(searches.counts(), (1, 2));
        // The flood asks again: it ranks last, and is refused.
        assert!(searches.enter(owner(2, 2), far()).is_err());
        assert!(
            !told(&mut first).await,
            "the flood's first waiter keeps its place"
        );
        drop((player, first));
        assert_eq!(searches.lock().owners.len(), 1);
    }

    #[test]
    fn a_search_that_cannot_start_before_its_deadline_is_refused_at_once() {
        // Eight waiting places: only the deadlines refuse here.
        let (searches, clock) = clocked(SearchLimits::for_slots(1, FIRST_HOLD * 8));
        let _running = searches.enter(owner(1, 1), far()).unwrap();
        // A waiter's expected wait is a hold (30 ms before any is timed) a round.
        let soon = clock.now() + Duration::from_millis(10);
        assert!(searches.enter(owner(2, 2), soon).is_err());
        let later = clock.now() + Duration::from_millis(45);
        let _waiting = searches.enter(owner(2, 2), later).unwrap();
        // One more ahead of the next: two rounds.
        assert!(searches.enter(owner(3, 3), later).is_err());
        assert!(searches.enter(owner(3, 3), far()).is_ok());
        // Time passing brings a deadline nearer: what fitted no longer does.
        let fits = clock.now() + Duration::from_millis(100);
        clock.advance(Duration::from_millis(80));
        assert!(searches.enter(owner(4, 4), fits).is_err());
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_leaves_the_queue_and_a_running_one_its_slot() {
        let searches = small(1);
        let running = searches.enter(owner(1, 1), far()).unwrap();
        let gone = searches.enter(owner(2, 2), far()).unwrap();
        let mut next = searches.enter(owner(3, 3), far()).unwrap();
        assert_eq!(searches.counts(), (1, 2));
        drop(gone);
        assert_eq!(searches.counts(), (1, 1));
        drop(running);
        next.running().await.unwrap();
        assert_eq!(searches.counts(), (1, 0));
        // A waiter told to run but no longer listening gives the slot back on drop.
        let mut listening = searches.enter(owner(4, 4), far()).unwrap();
        let deaf = searches.enter(owner(5, 5), far()).unwrap();
        drop(next);
        listening.running().await.unwrap();
        drop(listening);
        assert_eq!(searches.counts(), (1, 0));
        drop(deaf);
        assert_eq!(searches.counts(), (0, 0));
        assert!(searches.lock().owners.is_empty());
    }

    #[test]
    fn a_search_whose_call_ends_is_counted_with_the_worlds_it_started_after() {
        use crate::engine::suggest::Stop;
        let (searches, clock) = clocked(SearchLimits::for_slots(1, FIRST_HOLD * 8));
        let running = |gone: &Arc<AtomicBool>, deadline| {
            let ticket = searches.enter(owner(1, 1), far()).unwrap();
            ticket.stop_when(Arc::clone(gone), deadline)
        };
        let gone = Arc::new(AtomicBool::new(false));
        // Two worlds, then its deadline passes: told to stop, none after. Counted once
        // the slot is given back, and before it is.
        let stop = running(&gone, clock.now() + Duration::from_millis(10));
        for _ in 0..2 {
            assert!(!stop.stop());
            stop.world_started();
        }
        clock.advance(Duration::from_millis(10));
        assert!(stop.stop());
        assert_eq!(searches.stops(), (0, 0));
        drop(stop);
        assert_eq!(searches.counts(), (0, 0));
        assert_eq!(searches.stops(), (1, 0));
        // Its call dropped between a world's question and its start: that world is one
        // after the end, and the next question stops it.
        let stop = running(&gone, far());
        assert!(!stop.stop());
        gone.store(true, Relaxed);
        stop.world_started();
        assert!(stop.stop());
        drop(stop);
        assert_eq!(searches.stops(), (2, 1));
        // A search that does not ask (the check removed) counts every world it starts
        // after the end.
        let stop = running(&gone, far());
        (0..5).for_each(|_| stop.world_started());
        drop(stop);
        assert_eq!(searches.stops(), (3, 6));
        // A search that ends before its call does is not counted.
        let stop = running(&Arc::new(AtomicBool::new(false)), far());
        assert!(!stop.stop());
        stop.world_started();
        drop(stop);
        assert_eq!(searches.stops(), (3, 6));
    }

    /// Whether a waiting ticket has been told since it was last looked at: `Some(true)`
    /// it runs now, `Some(false)` it was displaced, `None` nothing yet.
    fn told_now(ticket: &mut Ticket) -> Option<bool> {
        let Place::Waiting(wait) = &mut ticket.place else {
            return None;
        };
        let (place, runs) = match wait.try_recv() {
            Ok(Turn::Run(slot)) => (Place::Running(slot), true),
            Ok(Turn::Displaced) | Err(TryRecvError::Closed) => (Place::Gone, false),
            Err(TryRecvError::Empty) => return None,
        };
        ticket.place = place;
        Some(runs)
    }

    /// What a caller of a [`Simulation`]'s queue is doing.
    enum Doing {
        /// It asks at this time.
        Idle(Instant),
        /// SearchRefused, a flooder asks again as soon as a search ends.
        SearchRefused,
        /// It waits, since then, with this many of the flood's searches started before.
        Waiting(Ticket, Instant, usize),
        /// Its search ends then (dropping the ticket gives its slot back).
        Running { _slot: Ticket, ends: Instant },
    }

    /// What the players, or the flood, of a [`Simulation`]'s queue saw.
    #[derive(Debug, Default)]
    struct Seen {
        served: usize,
        refused: usize,
        /// The longest a search waited for its slot.
        longest_wait: Duration,
        /// The most searches of the flood that started while one search waited.
        most_passed_by_flood: usize,
    }

    /// A queue of two slots with the default wait budget and its callers: players, a
    /// match each, then flooders spread over the flood's matches, all on one
    /// connection as a gateway carries them. Every search holds its slot
    /// [`FIRST_HOLD`]; a player thinks 50 to 100 ms after each answer (quicker than a
    /// person), a flooder asks again as soon as it is answered, or refused and a search
    /// has ended. Each call has the server's default deadline. Nothing reads the
    /// machine's time: the queue's decisions are the verdict.
    struct Simulation {
        searches: Arc<Searches>,
        clock: Arc<Hand>,
        players: usize,
        flood_matches: usize,
        doing: Vec<Doing>,
        player: Seen,
        flood: Seen,
        flood_starts: usize,
        step: usize,
    }

    impl Simulation {
        fn new(players: usize, flooders: usize, flood_matches: usize) -> Simulation {
            let (searches, clock) = clocked(SearchLimits::for_slots(2, DEFAULT_WAIT_BUDGET));
            let now = clock.now();
            let mut sim = Simulation {
                searches,
                clock,
                players,
                flood_matches,
                doing: Vec::new(),
                player: Seen::default(),
                flood: Seen::default(),
                flood_starts: 0,
                step: 0,
            };
            sim.doing = (0..players + flooders)
                .map(|c| {
                    Doing::Idle(
                        now + if c < players {
                            sim.think(c)
                        } else {
                            Duration::ZERO
                        },
                    )
                })
                .collect();
            sim
        }

        fn is_player(&self, caller: usize) -> bool {
            caller < self.players
        }

        fn owner_of(&self, caller: usize) -> Owner {
            let game = if self.is_player(caller) {
                caller
            } else {
                200 + (caller - self.players) % self.flood_matches
            };
            owner(1, u8::try_from(game).unwrap())
        }

        /// A player's pause before its next move.
        fn think(&self, caller: usize) -> Duration {
            Duration::from_millis(50 + ((self.step * 7919 + caller * 104_729) % 50) as u64)
        }

        fn seen(&mut self, caller: usize) -> &mut Seen {
            if self.is_player(caller) {
                &mut self.player
            } else {
                &mut self.flood
            }
        }

        /// What a caller does after an answer or a refusal, at `now`.
        fn next_ask(&self, caller: usize, now: Instant, refused: bool) -> Doing {
            match (self.is_player(caller), refused) {
                (true, _) => Doing::Idle(now + self.think(caller)),
                (false, false) => Doing::Idle(now),
                (false, true) => Doing::SearchRefused,
            }
        }

        /// A search of `caller` starts now.
        fn started(&mut self, caller: usize, ticket: Ticket, now: Instant) -> Doing {
            self.seen(caller).served += 1;
            self.flood_starts += usize::from(!self.is_player(caller));
            Doing::Running {
                _slot: ticket,
                ends: now + FIRST_HOLD,
            }
        }

        /// Waiters told to run start; displaced ones are refused.
        fn settle(&mut self, now: Instant) {
            for c in 0..self.doing.len() {
                let Doing::Waiting(ticket, _, _) = &mut self.doing[c] else {
                    continue;
                };
                let Some(runs) = told_now(ticket) else {
                    continue;
                };
                let Doing::Waiting(ticket, came, passed) =
                    std::mem::replace(&mut self.doing[c], Doing::SearchRefused)
                else {
                    unreachable!()
                };
                self.doing[c] = if runs {
                    let flood_starts = self.flood_starts;
                    let seen = self.seen(c);
                    seen.longest_wait = seen.longest_wait.max(now - came);
                    seen.most_passed_by_flood =
                        seen.most_passed_by_flood.max(flood_starts - passed);
                    self.started(c, ticket, now)
                } else {
                    self.seen(c).refused += 1;
                    drop(ticket);
                    self.next_ask(c, now, true)
                };
            }
        }

        /// Runs the queue for `length` of its clock; what the players and the flood saw.
        fn run(mut self, length: Duration) -> (Seen, Seen) {
            let end = self.clock.now() + length;
            while self.clock.now() < end {
                let now = self.clock.now();
                self.step += 1;
                // Searches that end now give their slots back; the refused flood asks again.
                let mut ended = false;
                for c in 0..self.doing.len() {
                    if matches!(self.doing[c], Doing::Running { ends, .. } if ends <= now) {
                        self.doing[c] = self.next_ask(c, now, false);
                        ended = true;
                    }
                }
                for d in &mut self.doing {
                    if ended && matches!(d, Doing::SearchRefused) {
                        *d = Doing::Idle(now);
                    }
                }
                self.settle(now);
                // Callers due ask.
                for c in 0..self.doing.len() {
                    if !matches!(self.doing[c], Doing::Idle(at) if at <= now) {
                        continue;
                    }
                    // The server's default --request-timeout-ms.
                    let deadline = now + Duration::from_secs(5);
                    self.doing[c] = match self.searches.enter(self.owner_of(c), deadline) {
                        Ok(ticket) if is_running(&ticket) => self.started(c, ticket, now),
                        Ok(ticket) => Doing::Waiting(ticket, now, self.flood_starts),
                        Err(SearchRefused) => {
                            self.seen(c).refused += 1;
                            self.next_ask(c, now, true)
                        }
                    };
                    // A newcomer may have displaced a waiter.
                    self.settle(now);
                }
                // On to the next thing that happens.
                let next = self
                    .doing
                    .iter()
                    .filter_map(|d| match d {
                        Doing::Idle(at) => Some(*at),
                        Doing::Running { ends, .. } => Some(*ends),
                        Doing::Waiting(..) | Doing::SearchRefused => None,
                    })
                    .min()
                    .unwrap_or(end)
                    .max(now + Duration::from_micros(1));
                self.clock.advance(next - now);
            }
            (self.player, self.flood)
        }
    }

    #[test]
    fn players_sharing_one_connection_are_never_refused_a_search() {
        // Sixteen players whose calls a gateway carries over one connection, each
        // against server-played HARD bots, on two slots: more searches than the slots
        // get through, so they queue. Each player is its own owner: none is ever
        // refused. (On the queue that shared its places per connection, commit 8201ca0,
        // a connection ran one search of two slots and had two waiting.)
        let (players, _) = Simulation::new(16, 0, 1).run(Duration::from_secs(4));
        eprintln!("{players:?}");
        assert_eq!(players.refused, 0, "{players:?}");
        assert!(players.served >= 16 * 10, "{players:?}");
    }

    #[test]
    fn beside_a_flood_on_their_connection_players_are_never_refused_and_go_first() {
        // Eight players share their connection with 32 callers asking over 3 matches,
        // each again at once. The flood's excess is refused; the players never are,
        // and a player's search waits for at most one of the flood's per flooding
        // match: a player at human pace goes before a flood.
        let (players, flood) = Simulation::new(8, 32, 3).run(Duration::from_secs(4));
        eprintln!("players {players:?}\nflood {flood:?}");
        assert_eq!(players.refused, 0, "{players:?}");
        assert!(players.served >= 8 * 10, "{players:?}");
        assert!(flood.refused > 0 && flood.served > 0, "{flood:?}");
        assert!(players.most_passed_by_flood <= 3, "{players:?}");
    }
}
