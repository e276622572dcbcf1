//! Random bytes for nonces, match ids and seeds: a ChaCha20 generator per thread,
//! seeded from the operating system and reseeded after every 1 MiB it hands out.
//!
//! The same construction as `rand`'s `ThreadRng`: a cryptographically secure stream
//! keyed with 256 bits of system randomness, without a system call per token (one
//! `getrandom` call costs about 0.4 µs here, a tenth of a whole token's sealing). Key
//! material is never drawn from it: keys come from `getrandom` directly.

use std::cell::RefCell;

use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

/// Bytes handed out before the generator is seeded again from the system.
const RESEED_AFTER: usize = 1 << 20;

/// The operating system could not provide randomness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unavailable;

struct ThreadGenerator {
    rng: ChaCha20Rng,
    /// Bytes left before the next reseed.
    budget: usize,
}

thread_local! {
    static GENERATOR: RefCell<Option<ThreadGenerator>> = const { RefCell::new(None) };
}

fn seeded() -> Result<ThreadGenerator, Unavailable> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|_| Unavailable)?;
    Ok(ThreadGenerator {
        rng: ChaCha20Rng::from_seed(seed),
        budget: RESEED_AFTER,
    })
}

/// Fills `out` with random bytes.
pub fn fill(out: &mut [u8]) -> Result<(), Unavailable> {
    GENERATOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let generator = match slot.as_mut() {
            Some(g) if g.budget >= out.len() => g,
            _ => slot.insert(seeded()?),
        };
        generator.budget -= out.len().min(generator.budget);
        generator.rng.fill_bytes(out);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_with_different_bytes_every_time_and_reseeds() {
        let mut a = [0u8; 32];
        let mut b = [0u8; 32];
        fill(&mut a).unwrap();
        fill(&mut b).unwrap();
        assert_ne!(a, b);
        assert_ne!(a, [0; 32]);
        // Past the reseed point and beyond, still working.
        let mut big = vec![0u8; 4096];
        for _ in 0..(RESEED_AFTER / big.len() + 2) {
            fill(&mut big).unwrap();
        }
        let mut c = [0u8; 32];
        fill(&mut c).unwrap();
        assert_ne!(c, a);
    }

    #[test]
    fn threads_get_different_streams() {
        let one = std::thread::spawn(|| {
            let mut x = [0u8; 16];
            fill(&mut x).unwrap();
            x
        });
        let mut here = [0u8; 16];
        fill(&mut here).unwrap();
        assert_ne!(one.join().unwrap(), here);
    }
}
