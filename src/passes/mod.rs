//! Player passes (issue 44, item 3): a studio's own signed token (a JWT its login
//! service issues) that names the player claiming a seat. Configured with the studio's
//! verification keys (`--pass-keys-file`); without them a pass is refused and nothing
//! else changes.
//!
//! INTERFACE ONLY: the helper writing `keys.rs` and `verify.rs` replaces this file.

use crate::state::PlayerId;

/// The most bytes a pass may have; a longer one is refused before any work.
pub const MAX_PASS_LEN: usize = 4096;

/// Why a pass was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PassError {
    /// Not a compact JWS of a pass at all (INVALID_ARGUMENT, PASS_MALFORMED).
    #[error("the pass is malformed: {0}")]
    Malformed(&'static str),
    /// A well-formed pass this service does not take: its signature, key, issuer,
    /// audience, type or subject (UNAUTHENTICATED, PASS_INVALID).
    #[error("the pass is not valid here: {0}")]
    Invalid(&'static str),
    /// Its `exp` has passed (UNAUTHENTICATED, PASS_EXPIRED).
    #[error("the pass has expired")]
    Expired,
    /// Its `nbf` is still ahead (UNAUTHENTICATED, PASS_NOT_YET_VALID).
    #[error("the pass is not valid yet")]
    NotYetValid,
}

/// The studio's pass keys and what a pass must say.
#[derive(Debug)]
pub struct Passes {
    required: bool,
}

impl Passes {
    /// The player id `pass` names, checked at `now` (seconds since the Unix epoch).
    pub fn check(&self, pass: &str, now: u64) -> Result<PlayerId, PassError> {
        let _ = (pass, now);
        Err(PassError::Invalid("not built yet"))
    }

    /// Whether every human seat claimed must show a pass (`--pass-required`).
    pub fn required(&self) -> bool {
        self.required
    }

    /// Whether views show every seat's player id (`--show-player-ids`).
    pub fn show_player_ids(&self) -> bool {
        false
    }
}
