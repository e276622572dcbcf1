//! Player passes (issue 44, item 3): a studio's own signed token (a JWT its login
//! service issues) that names the player claiming a seat. Configured with the studio's
//! verification keys (`--pass-keys-file`, a JWK Set); without them a pass is refused
//! and nothing else changes.
//!
//! # Layout
//! - `keys.rs`: the studio's JWK Set, each key checked before `jsonwebtoken` gets it
//!   (RFC 7517; Ed25519, ES256 and RS256 keys are taken, others skipped with a reason).
//! - `verify.rs`: [`Passes::check`], a pass's header, signature and claims.
//!
//! Signatures are `jsonwebtoken`'s (RustCrypto's `ed25519-dalek`, `p256` and `rsa`
//! inside); the keys' checks are those crates' own. Nothing cryptographic is composed
//! here.

mod keys;
mod verify;

use std::fmt;

pub use keys::{PassKeysError, SkippedKey};

use keys::PassKey;

/// The most bytes a pass may have; a longer one is refused before any work.
pub const MAX_PASS_LEN: usize = 4096;

/// Seconds the studio's clock and this one may disagree by, unless configured.
pub const DEFAULT_LEEWAY_SECS: u64 = 60;
/// The furthest ahead a pass's `exp` may be, in seconds, unless configured: a day.
pub const DEFAULT_MAX_LIFETIME_SECS: u64 = 86_400;

/// Why a pass was refused. Reasons reach the client: they name the check that failed
/// and nothing about the keys beyond what the public key set shows.
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

/// What a pass must say, and what the service does with the player ids passes name
/// (the `--pass-*` flags and `--show-player-ids`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassSettings {
    /// The `iss` every pass must carry, exactly (`--pass-issuer`).
    pub issuer: String,
    /// The `aud` every pass must name, alone or in its array (`--pass-audience`).
    pub audience: String,
    /// The JWS `typ` every pass must carry, if set (`--pass-type`): compared
    /// case-insensitively, with or without `application/` (RFC 7515 section 4.1.9).
    pub pass_type: Option<String>,
    /// Seconds the studio's clock and this one may disagree by, for `exp`, `nbf` and the
    /// lifetime (`--pass-leeway-secs`).
    pub leeway_secs: u64,
    /// The furthest ahead of now a pass's `exp` may be, plus the leeway (the studio's
    /// clock may be ahead; `--pass-max-lifetime-secs`): a pass is a bearer token, so a
    /// long-lived one stolen is a seat taken for that long.
    pub max_lifetime_secs: u64,
    /// Every seat a human claims must show a pass (`--pass-required`).
    pub required: bool,
    /// Views show every seat's player id, not only the viewer's own
    /// (`--show-player-ids`).
    pub show_player_ids: bool,
}

/// The studio's pass keys and what a pass must say.
pub struct Passes {
    keys: Vec<PassKey>,
    skipped: Vec<SkippedKey>,
    settings: PassSettings,
    /// Checks a test has removed, to show each one is what refuses its attack.
    #[cfg(test)]
    off: Vec<verify::Check>,
}

impl fmt::Debug for Passes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Passes")
            .field("kids", &self.key_ids().collect::<Vec<_>>())
            .field("skipped", &self.skipped)
            .field("settings", &self.settings)
            .finish()
    }
}

impl Passes {
    /// The passes `jwks_json` (the studio's JWK Set) signs, checked as `settings` say.
    /// Keys the service does not take are skipped, not fatal ([`Passes::skipped`], for
    /// the caller to log); the set is refused if it is not a JWK Set, two keys share a
    /// kid, one of several keys has no kid, or no key is left.
    pub fn parse(jwks_json: &str, settings: PassSettings) -> Result<Passes, PassKeysError> {
        let set = keys::parse_set(jwks_json, keys::Weak::Refused)?;
        Ok(Passes {
            keys: set.keys,
            skipped: set.skipped,
            settings,
            #[cfg(test)]
            off: Vec::new(),
        })
    }

    /// Whether every human seat claimed must show a pass (`--pass-required`).
    pub fn required(&self) -> bool {
        self.settings.required
    }

    /// Whether views show every seat's player id (`--show-player-ids`); otherwise each
    /// viewer sees only its own.
    pub fn show_player_ids(&self) -> bool {
        self.settings.show_player_ids
    }

    /// What a pass must say.
    pub fn settings(&self) -> &PassSettings {
        &self.settings
    }

    /// Whether any pass key is one of the public keys in this JWK Set (the result
    /// keys' published set, `ResultKeys::jwks_json()`): the server refuses to start then,
    /// since a result signed by that key would be a signature the pass keys take.
    pub fn shares_key_with(&self, jwks_json: &str) -> bool {
        let theirs = keys::materials(jwks_json);
        self.keys.iter().any(|k| theirs.contains(&k.material))
    }

    /// The kids of the keys taken, in the set's order, for the start-up log line (a
    /// set's only key may have none: it is left out).
    pub fn key_ids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().filter_map(|k| k.kid.as_deref())
    }

    /// The set's entries that were skipped, each with its reason, for the start-up log.
    pub fn skipped(&self) -> &[SkippedKey] {
        &self.skipped
    }
}
