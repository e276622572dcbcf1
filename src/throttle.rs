//! Rate limits for log lines about misbehaving peers and repeated failures: a line is
//! written at most once per period and says how many were held back since the last.
//!
//! [`Throttle`] is for one owner (a connection task), [`SharedThrottle`] for a line any
//! call may write (a `static`), and [`PeerWarnings`] holds back the WARN lines that our
//! dependencies (h2, hyper) write once per misbehaving connection or stream.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

#[cfg(feature = "server")]
use tracing::{Event, Level, Subscriber};
#[cfg(feature = "server")]
use tracing_subscriber::layer::{Context, Layer};

/// At most one line of a kind this often; the others are counted in the next.
pub const WARN_EVERY: Duration = Duration::from_secs(10);

/// Decides whether a repeated warning is written now: at most once per [`WARN_EVERY`].
#[derive(Debug, Default)]
pub struct Throttle {
    last: Option<Instant>,
    held_back: u64,
}

impl Throttle {
    pub const fn new() -> Throttle {
        Throttle {
            last: None,
            held_back: 0,
        }
    }

    /// `Some(held back since the last one)` when the warning is due, else `None`.
    pub fn check(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self.last.is_some_and(|last| now - last < WARN_EVERY) {
            self.held_back += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.held_back))
    }
}

/// A [`Throttle`] that many tasks share, for a line of one kind written from anywhere
/// (`static CALL_FAILED: SharedThrottle = SharedThrottle::new();`). The lock is taken
/// only when a line would be written.
#[derive(Debug, Default)]
pub struct SharedThrottle(Mutex<Throttle>);

impl SharedThrottle {
    pub const fn new() -> SharedThrottle {
        SharedThrottle(Mutex::new(Throttle::new()))
    }

    /// As [`Throttle::check`].
    pub fn check(&self) -> Option<u64> {
        // A panic while the lock was held leaves a throttle that is still usable.
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .check()
    }
}

/// Crates whose WARN lines are about a peer (one per connection or stream that
/// misbehaves), so that a flood of bad peers writes a flood of lines: h2's "remotely-reset
/// pending-accept streams reached limit" is written once per connection a rapid-reset
/// flood gets closed with GOAWAY (h2 0.4, `src/proto/streams/recv.rs`), hyper's
/// "http2 service errored" once per stream.
#[cfg(feature = "server")]
const PEER_TARGETS: [&str; 2] = ["h2", "hyper"];

/// A `tracing` layer that lets through at most one WARN (or ERROR) line per
/// [`WARN_EVERY`] from each of [`PEER_TARGETS`], and before it a line saying how many it
/// held back. Installed beside the formatting layer:
/// `tracing_subscriber::registry().with(PeerWarnings::default()).with(fmt_layer)` or
/// `builder.finish().with(PeerWarnings::default())`.
#[cfg(feature = "server")]
#[derive(Debug, Default)]
pub struct PeerWarnings {
    throttles: [SharedThrottle; PEER_TARGETS.len()],
}

#[cfg(feature = "server")]
impl PeerWarnings {
    /// The throttle of a peer crate's WARN or ERROR line; `None` for any other line.
    fn throttle(&self, event: &Event<'_>) -> Option<(&'static str, &SharedThrottle)> {
        let meta = event.metadata();
        if *meta.level() > Level::WARN {
            return None;
        }
        let target = meta.target();
        let krate = target.split("::").next().unwrap_or(target);
        PEER_TARGETS
            .iter()
            .position(|t| *t == krate)
            .map(|i| (PEER_TARGETS[i], &self.throttles[i]))
    }
}

#[cfg(feature = "server")]
impl<S: Subscriber> Layer<S> for PeerWarnings {
    fn event_enabled(&self, event: &Event<'_>, _: Context<'_, S>) -> bool {
        let Some((krate, throttle)) = self.throttle(event) else {
            return true;
        };
        match throttle.check() {
            None => false,
            Some(0) => true,
            Some(held_back) => {
                tracing::warn!(
                    target: "allfives::throttle",
                    held_back,
                    "{held_back} WARN lines from {krate} about peers held back in the last {}s",
                    WARN_EVERY.as_secs()
                );
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn a_throttled_warning_is_due_once_per_period_and_counts_the_others() {
        let mut throttle = Throttle::default();
        assert_eq!(throttle.check(), Some(0));
        assert_eq!(throttle.check(), None);
        assert_eq!(throttle.check(), None);
        throttle.last = throttle.last.and_then(|last| last.checked_sub(WARN_EVERY));
        assert_eq!(throttle.check(), Some(2));
        assert_eq!(throttle.check(), None);
    }

    #[test]
    fn a_shared_throttle_lets_one_of_many_threads_warn() {
        static SHARED: SharedThrottle = SharedThrottle::new();
        let due = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..100 {
                        if SHARED.check().is_some() {
                            due.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(due.load(Ordering::Relaxed), 1);
    }

    /// Counts the events that reach it, by target.
    #[derive(Clone, Default)]
    struct Count(Arc<Mutex<Vec<String>>>);

    impl<S: Subscriber> Layer<S> for Count {
        fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
            let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            seen.push(event.metadata().target().to_owned());
        }
    }

    #[test]
    fn peer_warnings_are_rate_limited_and_our_own_lines_are_not() {
        let count = Count::default();
        let subscriber = tracing_subscriber::registry()
            .with(PeerWarnings::default())
            .with(count.clone());
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..100 {
                tracing::warn!(target: "h2::proto::streams::recv", "too many resets");
                tracing::warn!(target: "hyper::proto::h2::server", "service errored");
                tracing::warn!(target: "allfives::server", "ours");
                tracing::info!(target: "h2", "not a warning");
            }
        });
        let seen = count.0.lock().unwrap_or_else(PoisonError::into_inner);
        let of = |t: &str| seen.iter().filter(|s| s.starts_with(t)).count();
        assert_eq!(of("h2::"), 1);
        assert_eq!(of("hyper::"), 1);
        assert_eq!(of("allfives::"), 100);
        assert_eq!(of("h2"), 101);
    }
}
