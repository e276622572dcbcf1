//! Where the service's random bytes come from; both generators are `rand`'s.
//!
//! - [`fill`]: nonces, match ids and deal seeds, from `rand::rng()` (`ThreadRng`): a
//!   ChaCha12 generator per thread, seeded from the operating system and reseeded from
//!   it after every 64 KiB it hands out, so a token's nonce costs no system call. If
//!   the operating system cannot seed or reseed it, `rand` panics (rand 0.10 has no
//!   fallible path; Linux's `getrandom` does not fail once the system has booted), and
//!   that call alone fails.
//! - [`fill_secret`]: each match's secret and each seat's credential, straight from the
//!   operating system (`rand::rngs::SysRng`, a `getrandom` call per draw); a failure is
//!   [`Unavailable`], answered `UNAVAILABLE` with reason `RANDOM_UNAVAILABLE`.
//!
//! Keys come from neither: `keyring.rs` draws them with `getrandom` directly.

use rand::rngs::SysRng;
use rand::{Rng, TryRng};

/// The operating system could not provide randomness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unavailable;

/// Fills `out` from the thread's `ThreadRng`.
pub fn fill(out: &mut [u8]) {
    rand::rng().fill_bytes(out);
}

/// Fills `out` from the operating system.
pub fn fill_secret(out: &mut [u8]) -> Result<(), Unavailable> {
    SysRng.try_fill_bytes(out).map_err(|_| Unavailable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_fill_with_different_bytes_every_time() {
        let (mut a, mut b, mut c, mut d) = ([0u8; 32], [0u8; 32], [0u8; 32], [0u8; 32]);
        fill(&mut a);
        fill(&mut b);
        fill_secret(&mut c).unwrap();
        fill_secret(&mut d).unwrap();
        assert!(a != b && c != d && a != c);
        assert!(a != [0; 32] && c != [0; 32]);
    }

    #[test]
    fn threads_get_different_streams() {
        let one = std::thread::spawn(|| {
            let mut x = [0u8; 16];
            fill(&mut x);
            x
        });
        let mut here = [0u8; 16];
        fill(&mut here);
        assert_ne!(one.join().unwrap(), here);
    }
}
