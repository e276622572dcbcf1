//! Rate limits for log lines about misbehaving peers and repeated failures: a line is
//! written at most once per period and says how many were held back since the last.

use std::time::{Duration, Instant};

/// At most one line of a kind this often; the others are counted in the next.
pub const WARN_EVERY: Duration = Duration::from_secs(10);

/// Decides whether a repeated warning is written now: at most once per [`WARN_EVERY`].
#[derive(Debug, Default)]
pub struct Throttle {
    last: Option<Instant>,
    held_back: u64,
}

impl Throttle {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
