//! The state token: the whole match, written down and sealed, that every call carries.
//!
//! - [`plaintext`]: the match as a scorekeeper writes it down (rules, seed, match id,
//!   earlier hands' sheet, the current hand's actions), and back to a game by replaying
//!   its hand through the engine.
//! - [`keyring`]: keys, key ids, the sealing key, parsing keys from configuration.
//! - [`token`]: the token's framing, sealing and opening bytes under the ring.
//! - [`cache`]: [`Tokens`], what the service opens and seals with: the ring, and a
//!   cache of the games this process sealed lately, kept by their token.
//! - [`seats`]: who plays each seat, and the seats' credentials.
//! - [`player_id`]: the player id a seat's studio pass named, padded in the token.
//! - [`lineage`]: state ids, which tell a match's branches apart.
//! - [`claim`]: the credential and seed of a claim made with a claim key (repeatable).
//! - [`rematch`]: the match that follows a finished one, the same for every seat that
//!   asks, derived from its secret.
//! - [`random`]: the random bytes of nonces, match ids and seeds (`rand`'s `ThreadRng`),
//!   and of secrets and credentials (the operating system's).

pub mod cache;
pub mod claim;
pub mod keyring;
pub mod lineage;
pub mod match_id;
pub mod names;
pub mod plaintext;
pub mod player_id;
pub mod random;
pub mod rematch;
pub mod seats;
pub mod token;

pub use cache::{Opened, Tokens};
pub use keyring::{KeyRing, KeyRingError};
pub use lineage::StateId;
pub use plaintext::{MATCH_ID_LEN, MatchId, Record};
pub use player_id::PlayerId;
pub use seats::{Credential, Denied, Player, Seats};
pub use token::TokenError;

/// Encodes and seals a record, writing the plaintext straight into the token: the
/// token, and the id of the state it holds.
pub fn seal(ring: &KeyRing, record: &Record) -> Result<(Vec<u8>, StateId), TokenError> {
    let mut id = [0; lineage::ID_LEN];
    let version = record.version();
    let token = token::seal_with(ring, version, plaintext::PLAINTEXT_CAPACITY, |buf| {
        let start = buf.len();
        plaintext::encode_into(record, buf);
        id = lineage::state_id(&record.secret, &buf[start..]);
    })?;
    Ok((token, id))
}

/// Opens a token and replays the match it holds: a game legal moves produced, or why
/// there is none; and the id of the state it holds.
pub fn open(ring: &KeyRing, token: &[u8]) -> Result<(Record, StateId), TokenError> {
    token::open_with(ring, token, |version, bytes| {
        plaintext::decode_version(version, bytes).map(|r| {
            let id = lineage::state_id(&r.secret, bytes);
            (r, id)
        })
    })?
    .map_err(|_| TokenError::Corrupt)
}
