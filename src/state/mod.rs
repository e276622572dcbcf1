//! The state token: the whole match, written down and sealed, that every call carries.
//!
//! - [`plaintext`]: the match as a scorekeeper writes it down (rules, seed, match id,
//!   earlier hands' sheet, the current hand's actions), and back to a game by replaying
//!   its hand through the engine.
//! - [`keyring`]: keys, key ids, the sealing key, parsing keys from configuration.
//! - [`token`]: the token's framing, sealing and opening bytes under the ring.
//! - [`cache`]: [`Tokens`], what the service opens and seals with: the ring, and a
//!   cache of the games this process sealed lately, kept by their token.
//! - [`random`]: the random bytes of nonces, match ids and seeds.

pub mod cache;
pub mod keyring;
pub mod plaintext;
pub mod random;
pub mod token;

pub use cache::{Opened, Tokens};
pub use keyring::{KeyRing, KeyRingError};
pub use plaintext::{MATCH_ID_LEN, Record};
pub use token::TokenError;

/// Encodes and seals a record, writing the plaintext straight into the token.
pub fn seal(ring: &KeyRing, record: &Record) -> Result<Vec<u8>, TokenError> {
    token::seal_with(ring, plaintext::PLAINTEXT_CAPACITY, |buf| {
        plaintext::encode_into(record, buf)
    })
}

/// Opens a token and replays the match it holds: a game legal moves produced, or why
/// there is none.
pub fn open(ring: &KeyRing, token: &[u8]) -> Result<Record, TokenError> {
    token::open_with(ring, token, plaintext::decode)?.map_err(|_| TokenError::Corrupt)
}
