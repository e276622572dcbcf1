//! When keys last did something, for the latest few thousand keys: a map from key to
//! stamp, bounded, that forgets the key with the oldest stamp first. The search queue
//! keeps its clients' and matches' last search starts in two of them.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// The stamps of the `cap` keys stamped last.
pub struct Recent<K> {
    cap: usize,
    stamps: HashMap<K, u64>,
    /// The same, by stamp: the oldest first.
    keys: BTreeMap<u64, K>,
}

impl<K: Copy + Eq + Hash> Recent<K> {
    pub fn new(cap: usize) -> Recent<K> {
        Recent {
            cap: cap.max(1),
            stamps: HashMap::new(),
            keys: BTreeMap::new(),
        }
    }

    /// `key`'s latest stamp, if it is still remembered.
    pub fn get(&self, key: &K) -> Option<u64> {
        self.stamps.get(key).copied()
    }

    /// Stamps `key` with `stamp`, which must be above every stamp given before (a
    /// count that only rises), forgetting the oldest key if there are too many.
    pub fn stamp(&mut self, key: K, stamp: u64) {
        if let Some(old) = self.stamps.insert(key, stamp) {
            self.keys.remove(&old);
        }
        self.keys.insert(stamp, key);
        while self.stamps.len() > self.cap {
            let Some((_, oldest)) = self.keys.pop_first() else {
                break;
            };
            self.stamps.remove(&oldest);
        }
    }

    /// Keys remembered.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.stamps.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_stamp_is_kept_and_the_oldest_key_forgotten_first() {
        let mut recent = Recent::new(3);
        for (stamp, key) in [(1, 'a'), (2, 'b'), (3, 'c'), (4, 'a')] {
            recent.stamp(key, stamp);
        }
        assert_eq!(recent.get(&'a'), Some(4));
        assert_eq!(recent.len(), 3);
        // 'b' is the oldest now ('a' was stamped again): it goes first.
        recent.stamp('d', 5);
        assert_eq!(recent.len(), 3);
        assert_eq!(recent.get(&'b'), None);
        assert_eq!(
            ['a', 'c', 'd'].map(|k| recent.get(&k)),
            [Some(4), Some(3), Some(5)]
        );
        recent.stamp('e', 6);
        assert_eq!(recent.get(&'c'), None);
        assert_eq!(recent.keys.len(), recent.stamps.len());
    }
}
