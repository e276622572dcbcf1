//! The state token: the whole game, encoded and sealed, that every call carries.
//!
//! - [`codec`]: the engine's game <-> the token's plaintext, checked on the way in.
//! - [`keyring`]: keys, key ids, the sealing key, parsing keys from configuration.
//! - [`token`]: sealing and opening bytes under the ring.
//! - [`tokens`]: what the service opens and seals with: the ring, and a cache of the
//!   games this process sealed lately.
//! - [`random`]: the random bytes of nonces, match ids and seeds.
//! - `wire`: the protobuf wire format by hand, for the plaintext (and the service's
//!   answers, `service::codec`).

pub mod codec;
pub mod keyring;
pub mod random;
mod siv;
pub mod token;
pub mod tokens;
pub(crate) mod wire;

pub use codec::{MATCH_ID_LEN, Record};
pub use keyring::{KeyRing, KeyRingError};
pub use token::TokenError;
pub use tokens::{Opened, Tokens};

/// Encodes and seals a record, writing the plaintext straight into the token.
pub fn seal(ring: &KeyRing, record: &Record) -> Result<Vec<u8>, TokenError> {
    token::seal_with(ring, codec::PLAINTEXT_CAPACITY, |buf| {
        codec::encode_into(record, buf)
    })
}

/// Opens and decodes a token, refusing any game the engine could not have made.
pub fn open(ring: &KeyRing, token: &[u8]) -> Result<Record, TokenError> {
    token::open_with(ring, token, codec::decode)?.map_err(|e| match e {
        codec::DecodeError::UnsupportedFormat(v) => {
            TokenError::UnsupportedVersion(u8::try_from(v).unwrap_or(u8::MAX))
        }
        codec::DecodeError::Corrupt(_) => TokenError::Corrupt,
    })
}
