//! The server's clock: the time a turn clock is judged by (`service::clocks`). In the
//! release binary it is the system's wall clock (replicas keep it in step with NTP:
//! docs/operations.md); a test sets one by hand ([`ServerClock::manual`], or
//! [`ServerClock::stepping`] to see how often a call reads it), given to the server in
//! its [`Config`](crate::config::Config), never by a flag.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The system's clock, or one set by hand.
#[derive(Clone, Debug, Default)]
pub struct ServerClock(Option<Arc<Hand>>);

/// A clock set by hand: the time it reads, and how far each read moves it on.
#[derive(Debug)]
struct Hand {
    ms: AtomicU64,
    step_ms: u64,
}

impl ServerClock {
    /// The system's wall clock.
    pub fn system() -> ServerClock {
        ServerClock(None)
    }

    /// A clock that reads `ms` (milliseconds since the Unix epoch) until it is moved.
    /// Its clones read and move the same time.
    pub fn manual(ms: u64) -> ServerClock {
        ServerClock::stepping(ms, Duration::ZERO)
    }

    /// A manual clock that moves on by `step` each time it is read, after the read: a
    /// call that reads it once sees one time, one that reads it again sees a later one.
    pub fn stepping(ms: u64, step: Duration) -> ServerClock {
        ServerClock(Some(Arc::new(Hand {
            ms: AtomicU64::new(ms),
            step_ms: u64::try_from(step.as_millis()).unwrap_or(u64::MAX),
        })))
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> u64 {
        match &self.0 {
            Some(hand) => hand.ms.fetch_add(hand.step_ms, Ordering::SeqCst),
            None => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    /// Moves a manual clock on by `by` (the system's clock cannot be moved).
    pub fn advance(&self, by: Duration) {
        if let Some(hand) = &self.0 {
            let by = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
            hand.ms.fetch_add(by, Ordering::SeqCst);
        }
    }

    /// Sets a manual clock to `ms`.
    pub fn set(&self, to: u64) {
        if let Some(hand) = &self.0 {
            hand.ms.store(to, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_reads_what_it_is_set_to_in_every_clone() {
        let clock = ServerClock::manual(5_000);
        let other = clock.clone();
        clock.advance(Duration::from_millis(1_500));
        assert_eq!(other.now_ms(), 6_500);
        other.set(1);
        assert_eq!(clock.now_ms(), 1);
        let system = ServerClock::system();
        system.advance(Duration::from_secs(1));
        assert!(system.now_ms() > 1_700_000_000_000, "the wall clock, in ms");
    }

    #[test]
    fn a_stepping_clock_moves_on_after_each_read_in_every_clone() {
        let clock = ServerClock::stepping(5_000, Duration::from_millis(1_000));
        let other = clock.clone();
        assert_eq!(clock.now_ms(), 5_000);
        assert_eq!(other.now_ms(), 6_000);
        other.set(1);
        assert_eq!(clock.now_ms(), 1);
        clock.advance(Duration::from_millis(10));
        assert_eq!(other.now_ms(), 1_011);
    }
}
