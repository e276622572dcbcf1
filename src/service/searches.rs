//! The HARD search queue: a slot per core for searches that run, a short queue for
//! those that wait, and a fair share of both for each connection, so that one client
//! cannot take every slot or make every other search wait behind its own.
//!
//! A search first [`enter`](Searches::enter)s: it runs at once if a slot is free and
//! its connection runs fewer than its share, else it waits in the queue if there is
//! room in the queue and in its connection's share of it, else it is refused at once
//! (`SEARCH_QUEUE_FULL`). A slot given back goes to a waiter whose connection is under
//! its running share: of those, the one whose connection last started a search the
//! longest ago, then the earliest, so that connections take turns (on one core a
//! flooding connection's search and another's alternate). The [`Ticket`] holds the place (in the
//! queue, then in a slot) and gives it back when dropped: by a caller that gave up
//! while waiting, or by the search when it ends (finished or stopped).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::call::ConnectionId;
use crate::throttle::Throttle;

/// Whose search it is: the connection it came on (its call's context). Calls made in
/// process, without the server's transport, share one.
pub type Conn = ConnectionId;

/// Searches waiting, per slot: a waiter's wait is at most this many searches' time
/// (see [`Limits::for_slots`]).
pub const QUEUED_PER_SLOT: usize = 2;
/// Searches one connection may have waiting (at most half the queue).
pub const QUEUED_PER_CONN: usize = 2;

/// The sizes of the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Searches running at once (one per core: a search is all CPU).
    pub slots: usize,
    /// Searches waiting for a slot, over all connections.
    pub queue: usize,
    /// Searches one connection may run at once.
    pub running_per_conn: usize,
    /// Searches one connection may have waiting.
    pub queued_per_conn: usize,
}

impl Limits {
    /// For `slots` slots: [`QUEUED_PER_SLOT`] waiting per slot, and a connection may
    /// run at most half the slots (at least one) and have [`QUEUED_PER_CONN`] waiting,
    /// or half the queue if that is fewer (one, on one slot: another connection always
    /// finds a place).
    /// With searches capped at about 10 ms of CPU (`handlers::SUGGEST_MAX_WORLDS`), the
    /// last in a full queue starts within about 20 ms; another connection's search
    /// finds a slot free while one connection floods (two slots or more).
    pub fn for_slots(slots: usize) -> Limits {
        let slots = slots.max(1);
        let queue = QUEUED_PER_SLOT * slots;
        Limits {
            slots,
            queue,
            running_per_conn: (slots / 2).max(1),
            queued_per_conn: QUEUED_PER_CONN.min(queue / 2).max(1),
        }
    }
}

/// The queue and its slots.
pub struct Searches {
    limits: Limits,
    state: Mutex<State>,
    /// Refusals are logged at most once per period, with a count of the others.
    refusals: Mutex<Throttle>,
}

impl std::fmt::Debug for Searches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Searches")
            .field("limits", &self.limits)
            .field("running", &state.running)
            .field("waiting", &state.waiting.len())
            .finish()
    }
}

#[derive(Default)]
struct State {
    running: usize,
    waiting: VecDeque<Waiter>,
    shares: HashMap<Conn, Share>,
    next_id: u64,
    /// Searches started so far: the stamp of the latest.
    started: u64,
}

/// What one connection holds.
#[derive(Clone, Copy, Default)]
struct Share {
    running: usize,
    queued: usize,
    /// When its latest search started ([`State::started`]; 0: none while it held any).
    last_started: u64,
}

struct Waiter {
    id: u64,
    conn: Conn,
    wake: oneshot::Sender<()>,
}

/// A search's place: in the queue (until [`Ticket::running`] returns), then in a slot.
/// Dropping it gives the place back and hands a free slot to the next waiter.
pub struct Ticket {
    searches: Arc<Searches>,
    id: u64,
    conn: Conn,
    /// Until the search runs: told when it may.
    wait: Option<oneshot::Receiver<()>>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("conn", &self.conn)
            .field("waiting", &self.wait.is_some())
            .finish()
    }
}

impl Searches {
    pub fn new(limits: Limits) -> Arc<Searches> {
        Arc::new(Searches {
            limits,
            state: Mutex::new(State::default()),
            refusals: Mutex::default(),
        })
    }

    /// Whether a refusal's log line is due: `Some(refusals held back since the last)`.
    pub fn refusal_due(&self) -> Option<u64> {
        self.refusals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .check()
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Searches running and waiting now.
    pub fn counts(&self) -> (usize, usize) {
        let state = self.lock();
        (state.running, state.waiting.len())
    }

    /// A slot now or a place in the queue for a search from `conn`; `None` when the
    /// queue is full or `conn` holds its share of it.
    pub fn enter(self: &Arc<Searches>, conn: Conn) -> Option<Ticket> {
        let limits = self.limits;
        let mut state = self.lock();
        let share = state.shares.get(&conn).copied().unwrap_or_default();
        let id = state.next_id;
        let wait = if state.running < limits.slots && share.running < limits.running_per_conn {
            state.running += 1;
            state.started += 1;
            let started = state.started;
            let share = state.shares.entry(conn).or_default();
            share.running += 1;
            share.last_started = started;
            None
        } else if share.queued < limits.queued_per_conn && state.waiting.len() < limits.queue {
            let (wake, wait) = oneshot::channel();
            state.waiting.push_back(Waiter { id, conn, wake });
            state.shares.entry(conn).or_default().queued += 1;
            Some(wait)
        } else {
            return None;
        };
        state.next_id += 1;
        drop(state);
        Some(Ticket {
            searches: Arc::clone(self),
            id,
            conn,
            wait,
        })
    }

    /// The state, even if a thread panicked holding it: every change to it is made
    /// whole under the lock before anything that could panic.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    /// Gives free slots to waiters whose connections are under their share: first the
    /// connection that started a search the longest ago, then the earliest waiter.
    fn dispatch(&mut self, limits: Limits) {
        while self.running < limits.slots {
            let shares = &self.shares;
            let Some((i, _)) = self
                .waiting
                .iter()
                .enumerate()
                .filter_map(|(i, w)| {
                    let share = shares.get(&w.conn).copied().unwrap_or_default();
                    (share.running < limits.running_per_conn).then_some((i, share.last_started))
                })
                .min_by_key(|&(i, last_started)| (last_started, i))
            else {
                return;
            };
            let Some(waiter) = self.waiting.remove(i) else {
                return;
            };
            self.started += 1;
            let share = self.shares.entry(waiter.conn).or_default();
            share.queued = share.queued.saturating_sub(1);
            share.running += 1;
            share.last_started = self.started;
            self.running += 1;
            // A waiter that stopped listening still holds the slot until its ticket is
            // dropped, which gives it back.
            let _ = waiter.wake.send(());
        }
    }
}

impl Ticket {
    /// Waits until the search may run (at once if it entered on a free slot). Fails
    /// only if the queue forgot the ticket, which it does not.
    pub async fn running(&mut self) -> Result<(), oneshot::error::RecvError> {
        if let Some(wait) = self.wait.as_mut() {
            wait.await?;
            self.wait = None;
        }
        Ok(())
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let limits = self.searches.limits;
        let mut state = self.searches.lock();
        let state = &mut *state;
        let queued = state.waiting.iter().position(|w| w.id == self.id);
        let share = state.shares.entry(self.conn).or_default();
        match queued {
            Some(i) => {
                state.waiting.remove(i);
                share.queued = share.queued.saturating_sub(1);
            }
            None => {
                share.running = share.running.saturating_sub(1);
                state.running = state.running.saturating_sub(1);
            }
        }
        if share.running == 0 && share.queued == 0 {
            state.shares.remove(&self.conn);
        }
        state.dispatch(limits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(number: u16) -> Conn {
        ConnectionId(u64::from(number))
    }

    fn is_running(ticket: &Ticket) -> bool {
        ticket.wait.is_none()
    }

    #[test]
    fn a_connection_runs_its_share_and_queues_its_share_then_is_refused() {
        let searches = Searches::new(Limits::for_slots(4));
        let limits = searches.limits();
        assert_eq!((limits.running_per_conn, limits.queue), (2, 8));
        let a: Vec<Ticket> = std::iter::from_fn(|| searches.enter(conn(1))).collect();
        assert_eq!(a.len(), 2 + QUEUED_PER_CONN);
        assert_eq!(a.iter().filter(|t| is_running(t)).count(), 2);
        // Another connection still runs at once, on the slots left.
        let b = searches.enter(conn(2));
        assert!(b.as_ref().is_some_and(is_running));
        assert_eq!(searches.counts(), (3, QUEUED_PER_CONN));
    }

    #[test]
    fn the_queue_is_bounded_across_connections() {
        let searches = Searches::new(Limits::for_slots(2));
        let mut held = Vec::new();
        for port in 0..10 {
            held.extend(searches.enter(conn(port)));
        }
        // Two run (one per connection share), four wait; the rest are refused.
        assert_eq!(held.len(), 2 + 4);
        assert_eq!(searches.counts(), (2, 4));
    }

    #[tokio::test]
    async fn a_freed_slot_goes_to_the_first_waiter_under_its_share() {
        let searches = Searches::new(Limits::for_slots(2));
        let a1 = searches.enter(conn(1)).unwrap();
        let b1 = searches.enter(conn(2)).unwrap();
        let mut a2 = searches.enter(conn(1)).unwrap();
        let mut b2 = searches.enter(conn(2)).unwrap();
        assert!(is_running(&a1) && is_running(&b1));
        assert!(!is_running(&a2) && !is_running(&b2));
        // B's slot is freed: A is ahead in the queue but at its share, so B's waiter
        // runs.
        drop(b1);
        b2.running().await.unwrap();
        assert_eq!(searches.counts(), (2, 1));
        drop(a1);
        a2.running().await.unwrap();
        drop((a2, b2));
        assert_eq!(searches.counts(), (0, 0));
        assert!(searches.lock().shares.is_empty());
    }

    #[tokio::test]
    async fn on_one_slot_a_flooding_connection_and_another_take_turns() {
        let searches = Searches::new(Limits::for_slots(1));
        let limits = searches.limits();
        assert_eq!((limits.running_per_conn, limits.queued_per_conn), (1, 1));
        // A floods: one running, one waiting, the rest refused; B still finds a place.
        let a1 = searches.enter(conn(1)).unwrap();
        let mut a2 = searches.enter(conn(1)).unwrap();
        assert!(searches.enter(conn(1)).is_none());
        let mut b1 = searches.enter(conn(2)).unwrap();
        assert_eq!(searches.counts(), (1, 2));
        // A's search ends: B runs before A's next, though A's waited longer.
        drop(a1);
        let soon = std::time::Duration::from_secs(1);
        tokio::time::timeout(soon, b1.running())
            .await
            .expect("B's search runs next")
            .unwrap();
        assert!(!is_running(&a2));
        // Then A again, before B's next.
        let b2 = searches.enter(conn(2)).unwrap();
        drop(b1);
        tokio::time::timeout(soon, a2.running())
            .await
            .expect("then A's")
            .unwrap();
        assert!(!is_running(&b2));
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_leaves_the_queue_and_a_running_one_its_slot() {
        let searches = Searches::new(Limits::for_slots(1));
        let running = searches.enter(conn(1)).unwrap();
        let gone = searches.enter(conn(2)).unwrap();
        let mut next = searches.enter(conn(3)).unwrap();
        assert_eq!(searches.counts(), (1, 2));
        drop(gone);
        assert_eq!(searches.counts(), (1, 1));
        drop(running);
        next.running().await.unwrap();
        assert_eq!(searches.counts(), (1, 0));
        // A waiter told to run but no longer listening gives the slot back on drop.
        let mut listening = searches.enter(conn(4)).unwrap();
        let deaf = searches.enter(conn(5)).unwrap();
        drop(next);
        listening.running().await.unwrap();
        drop(listening);
        assert_eq!(searches.counts(), (1, 0));
        drop(deaf);
        assert_eq!(searches.counts(), (0, 0));
    }
}
