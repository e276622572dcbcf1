//! State ids: what tells a match's branches apart (`GameView.state_id`).
//!
//! A state's id is HMAC-SHA-256 (RustCrypto's `hmac` and `sha2`), keyed with the
//! match's secret (16 random bytes drawn at NewGame and carried in the token), of the
//! state's whole plaintext, cut to 16 bytes. The plaintext holds the id of the state it
//! was made from (`State.previous`), so the ids chain back to NewGame: the id digests
//! the whole history, and two states share one only if they have the same history.
//! The same request on the same token makes the same plaintext (every step is
//! deterministic: the engine, the seeded bots, prost's encoding), so a retried call
//! gets the same id; a claim draws a new credential and a new seed (or derives them
//! from its claim key: `state::claim`), so each claim is a branch of its own, and the
//! same claim with the same key the same state.
//!
//! Keyed with a secret no player knows, an id tells nothing about what the plaintext
//! holds (without the key nobody can test a guess of the seed or a hand against it),
//! and it does not depend on the server's keys, so it survives key rotation.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Bytes in a state id and in a match's secret.
pub const ID_LEN: usize = 16;

/// A state id.
pub type StateId = [u8; ID_LEN];

/// The id of the state whose plaintext is `plaintext`, in the match whose secret is
/// `secret`.
pub fn state_id(secret: &[u8; ID_LEN], plaintext: &[u8]) -> StateId {
    // HMAC takes a key of any length: this cannot fail.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC takes any key");
    mac.update(plaintext);
    let digest = mac.finalize().into_bytes();
    let mut id = [0u8; ID_LEN];
    id.copy_from_slice(&digest[..ID_LEN]);
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_depends_on_every_byte_and_on_the_secret() {
        let plaintext = [1u8, 2, 3, 4, 5];
        let id = state_id(&[0; ID_LEN], &plaintext);
        assert_eq!(id, state_id(&[0; ID_LEN], &plaintext), "deterministic");
        assert_ne!(id, state_id(&[1; ID_LEN], &plaintext));
        for i in 0..plaintext.len() {
            let mut other = plaintext;
            other[i] ^= 1;
            assert_ne!(id, state_id(&[0; ID_LEN], &other));
        }
        // RFC 4231 test case 2's key is not 16 bytes; check the construction against
        // a known HMAC-SHA-256 instead: key "key", "The quick brown fox..." is
        // f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(b"key").unwrap();
        mac.update(b"The quick brown fox jumps over the lazy dog");
        let digest = mac.finalize().into_bytes();
        assert_eq!(digest[..4], [0xf7, 0xbc, 0x83, 0xf4]);
    }

    /// A state id's bytes, pinned: they are in every token and every client's
    /// `GameView.state_id`, so a change of the crates under them must not move them.
    /// The expected bytes are HMAC-SHA-256 (RFC 2104) computed apart from this code.
    #[test]
    fn a_state_id_is_pinned() {
        let secret: [u8; ID_LEN] = core::array::from_fn(|i| i as u8);
        assert_eq!(
            state_id(&secret, b"allfives state"),
            [
                0x11, 0x4e, 0xb5, 0x40, 0xe5, 0x8b, 0x2a, 0x93, 0x73, 0x73, 0xc5, 0xac, 0xba, 0xbb,
                0x9d, 0x0e
            ]
        );
    }
}
