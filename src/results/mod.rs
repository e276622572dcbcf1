//! Match results a ranking server can trust (issue 44): a finished match's result as a
//! compact JWS signed by the service (Ed25519), verifiable with any JOSE library against
//! the key set the service publishes.
//!
//! - [`keys`]: the result key ring: parsing, the published JWK Set, signing.
//! - [`claims`]: what a result says.

pub mod claims;
pub mod keys;

pub use claims::ResultClaims;
pub use keys::{RESULT_TYPE, ResultKeys, SignError};
