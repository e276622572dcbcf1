//! The result key ring: the Ed25519 keys that sign match results, never the token
//! keys (a ranking server verifies results with their public halves, published as a
//! JWK Set; it must not be able to open tokens, which hold every hand).
//!
//! Configuration text is the token key ring's (`src/state/keyring.rs`): one key per
//! entry, `<id>:<64 hex digits>`, entries separated by commas or new lines, `#` starts
//! a comment; here the 32 bytes are an Ed25519 secret key (RFC 8032's seed). The first
//! entry signs unless another is named; every key is published. A key's `kid` is its
//! RFC 7638 thumbprint (SHA-256 of its public JWK, base64url), so two environments
//! never give one kid to two keys, whatever ids their rings use. Rotation: add the new
//! key second (published, not signing) and wait for verifiers' caches of the key set to
//! expire; list it first (signing); drop the old one once no result it signed is kept
//! (docs/security.md).
//!
//! Signing is `jsonwebtoken`'s (RustCrypto's `ed25519-dalek` inside); the PKCS#8 form it
//! takes the key in is `ed25519-dalek`'s. Nothing cryptographic is composed here.

use std::fmt;

use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::{EncodePrivateKey, KeypairBytes};
use jsonwebtoken::jwk::{Jwk, JwkSet, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

use crate::state::keyring::{KeyRingError, active_entry, parse_entries};

/// The JWS `typ` of a result certificate (RFC 8725 section 3.11: explicit typing, so
/// a result is never taken for another kind of JWT signed by the same key).
pub const RESULT_TYPE: &str = "allfives-result+jwt";

/// Why a result could not be signed (a bug or a broken key, never a client's doing).
#[derive(Debug, thiserror::Error)]
#[error("signing a result: {0}")]
pub struct SignError(#[from] jsonwebtoken::errors::Error);

/// One key: its configured id, its kid, what signs with it, its public half (as a JWK,
/// and as bytes).
struct ResultKey {
    id: u8,
    kid: String,
    signer: EncodingKey,
    public: Jwk,
    verifying: [u8; 32],
}

/// The keys that sign results, one of which signs.
pub struct ResultKeys {
    keys: Vec<ResultKey>,
    active: usize,
    /// The published key set as JSON, written once.
    jwks_json: String,
    /// A random key made at start ([`ResultKeys::ephemeral`]).
    ephemeral: bool,
}

impl fmt::Debug for ResultKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print key material: ids and kids only.
        f.debug_struct("ResultKeys")
            .field("ids", &self.keys.iter().map(|k| k.id).collect::<Vec<_>>())
            .field("signing_kid", &self.signing_kid())
            .finish()
    }
}

impl ResultKeys {
    /// A ring of `(id, Ed25519 secret key)`; `active` names the signing key (default:
    /// the first).
    pub fn new(keys: Vec<(u8, [u8; 32])>, active: Option<u8>) -> Result<ResultKeys, KeyRingError> {
        let active = active_entry(&keys, active)?;
        let keys = keys
            .into_iter()
            .map(|(id, secret)| ResultKey::new(id, &secret))
            .collect::<Result<Vec<_>, _>>()?;
        // One key under two ids would publish one kid twice, which verifiers refuse.
        for (i, key) in keys.iter().enumerate() {
            if keys[..i].iter().any(|other| other.kid == key.kid) {
                return Err(KeyRingError::BadEntry {
                    entry: usize::from(key.id),
                    reason: "the same key as another entry",
                });
            }
        }
        let mut ring = ResultKeys {
            keys,
            active,
            jwks_json: String::new(),
            ephemeral: false,
        };
        ring.jwks_json =
            serde_json::to_string(&ring.jwks()).map_err(|_| KeyRingError::BadEntry {
                entry: 0,
                reason: "the key set cannot be written as JSON",
            })?;
        Ok(ring)
    }

    /// A random key for this process only (no result keys configured): its results
    /// verify against this process's key set, which dies with it.
    pub fn ephemeral() -> Result<ResultKeys, KeyRingError> {
        let mut secret = [0u8; 32];
        // Straight from the operating system, as the token ring's random key.
        getrandom::fill(&mut secret).map_err(|_| KeyRingError::Random)?;
        let mut ring = ResultKeys::new(vec![(0, secret)], None)?;
        ring.ephemeral = true;
        Ok(ring)
    }

    /// Whether this is a random key made at start.
    pub fn is_ephemeral(&self) -> bool {
        self.ephemeral
    }

    /// The configured ids, in the ring's order.
    pub fn ids(&self) -> impl Iterator<Item = u8> + '_ {
        self.keys.iter().map(|k| k.id)
    }

    /// Parses configuration text (see the module docs).
    pub fn parse(text: &str, active: Option<u8>) -> Result<ResultKeys, KeyRingError> {
        ResultKeys::new(parse_entries(text)?, active)
    }

    /// The kid of the signing key.
    pub fn signing_kid(&self) -> &str {
        &self.keys[self.active].kid
    }

    /// Every key's public half, the signing key's first: what `/.well-known/jwks.json`
    /// serves.
    pub fn jwks(&self) -> JwkSet {
        let signing = &self.keys[self.active];
        let others = self.keys.iter().filter(|k| k.id != signing.id);
        JwkSet {
            keys: std::iter::once(signing)
                .chain(others)
                .map(|k| k.public.clone())
                .collect(),
        }
    }

    /// [`ResultKeys::jwks`] as JSON (RFC 7517's JWK Set), the bytes every reader of the
    /// set gets (`/.well-known/jwks.json`, `GetResultKeys`, `--print-result-jwks`).
    pub fn jwks_json(&self) -> &str {
        &self.jwks_json
    }

    /// `claims` as a compact JWS signed by the signing key: header `alg` `EdDSA`, `typ`
    /// [`RESULT_TYPE`], `kid` the key's thumbprint.
    pub fn sign<C: Serialize>(&self, claims: &C) -> Result<String, SignError> {
        let key = &self.keys[self.active];
        let mut header = Header::new(Algorithm::EdDSA);
        header.typ = Some(RESULT_TYPE.to_owned());
        header.kid = Some(key.kid.clone());
        Ok(jsonwebtoken::encode(&header, claims, &key.signer)?)
    }

    /// Whether one of these keys is the Ed25519 key of `secret` (a result key must
    /// never be a token key: configuration refuses two rings sharing one).
    pub fn holds_secret(&self, secret: &[u8; 32]) -> bool {
        let public = SigningKey::from_bytes(secret).verifying_key().to_bytes();
        self.keys.iter().any(|k| k.verifying == public)
    }
}

impl ResultKey {
    fn new(id: u8, secret: &[u8; 32]) -> Result<ResultKey, KeyRingError> {
        let bad = |reason| KeyRingError::BadEntry {
            entry: usize::from(id),
            reason,
        };
        let key = SigningKey::from_bytes(secret);
        // PKCS#8 v1 (RFC 8410: the secret key alone, 48 bytes), the form jsonwebtoken
        // reads; written by ed25519-dalek's pkcs8 support.
        let der = KeypairBytes {
            secret_key: *secret,
            public_key: None,
        }
        .to_pkcs8_der()
        .map_err(|_| bad("the key cannot be written as PKCS#8"))?;
        let signer = EncodingKey::from_ed_der(der.as_bytes());
        let mut public = Jwk::from_encoding_key(&signer, Algorithm::EdDSA)
            .map_err(|_| bad("the key has no public JWK"))?;
        let kid = public
            .thumbprint(ThumbprintHash::SHA256)
            .map_err(|_| bad("the key has no thumbprint"))?;
        public.common.key_id = Some(kid.clone());
        public.common.public_key_use = Some(jsonwebtoken::jwk::PublicKeyUse::Signature);
        Ok(ResultKey {
            id,
            kid,
            signer,
            public,
            verifying: key.verifying_key().to_bytes(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation};

    /// RFC 8032 section 7.1, TEST 1: the secret key and its public key.
    const RFC8032_SECRET: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
    /// Its public key, d75a9801...511a, base64url as a JWK's `x` writes it.
    const RFC8032_X: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
    const OTHER: &str = "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb";

    #[derive(Debug, Serialize, serde::Deserialize, PartialEq)]
    struct Claims {
        jti: String,
        winner: u32,
    }

    fn claims() -> Claims {
        Claims {
            jti: "match-1".into(),
            winner: 1,
        }
    }

    /// What a verifier does: the key of the header's kid from the published set, the
    /// algorithm from the key (EdDSA), the type checked.
    fn verify(keys: &ResultKeys, jws: &str) -> Result<Claims, jsonwebtoken::errors::Error> {
        let header = jsonwebtoken::decode_header(jws)?;
        assert_eq!(header.typ.as_deref(), Some(RESULT_TYPE));
        let set = keys.jwks();
        let jwk = set
            .find(header.kid.as_deref().unwrap_or(""))
            .ok_or(jsonwebtoken::errors::ErrorKind::InvalidKeyFormat)?;
        let key = DecodingKey::from_jwk(jwk)?;
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        Ok(jsonwebtoken::decode::<Claims>(jws, &key, &validation)?.claims)
    }

    #[test]
    fn the_published_key_is_rfc_8032_s_public_key_under_its_thumbprint() {
        let keys = ResultKeys::parse(&format!("7:{RFC8032_SECRET}"), None).expect("ring");
        let set = keys.jwks();
        assert_eq!(set.keys.len(), 1);
        let json = serde_json::to_value(&set.keys[0]).expect("json");
        assert_eq!(json["kty"], "OKP");
        assert_eq!(json["crv"], "Ed25519");
        assert_eq!(json["x"], RFC8032_X);
        assert_eq!(json["alg"], "EdDSA");
        assert_eq!(json["use"], "sig");
        assert_eq!(json["kid"], keys.signing_kid());
        assert!(json.get("d").is_none(), "no secret in the published key");
    }

    #[test]
    fn a_signed_result_verifies_with_the_published_set_and_a_changed_one_does_not() {
        let keys = ResultKeys::parse(&format!("1:{RFC8032_SECRET}"), None).expect("ring");
        let jws = keys.sign(&claims()).expect("signed");
        assert_eq!(verify(&keys, &jws).expect("verifies"), claims());

        // Signed by a key the set does not publish: refused.
        let stranger = ResultKeys::parse(&format!("1:{OTHER}"), None).expect("ring");
        let theirs = stranger.sign(&claims()).expect("signed");
        assert!(verify(&keys, &theirs).is_err(), "an unknown key");

        // The payload changed (another winner, encoded by another signature), the
        // signature kept: refused.
        let forged = stranger
            .sign(&Claims {
                jti: "match-1".into(),
                winner: 0,
            })
            .expect("signed");
        let mut parts: Vec<&str> = jws.split('.').collect();
        parts[1] = forged.split('.').nth(1).expect("a payload");
        assert!(verify(&keys, &parts.join(".")).is_err(), "a forged winner");
    }

    #[test]
    fn every_key_is_published_and_the_named_one_signs() {
        let text = format!("1:{RFC8032_SECRET}\n2:{OTHER}");
        let first = ResultKeys::parse(&text, None).expect("ring");
        let second = ResultKeys::parse(&text, Some(2)).expect("ring");
        assert_eq!(first.jwks().keys.len(), 2);
        assert_ne!(first.signing_kid(), second.signing_kid());
        assert_eq!(
            first.jwks().keys[0].common.key_id.as_deref(),
            Some(first.signing_kid()),
            "the signing key first"
        );
        // A result signed before the rotation still verifies against the set after it.
        let before = first.sign(&claims()).expect("signed");
        assert_eq!(verify(&second, &before).expect("verifies"), claims());
        assert!(matches!(
            ResultKeys::parse(&text, Some(3)),
            Err(KeyRingError::UnknownActive(3))
        ));
        // One key under two ids: refused (its kid would be published twice).
        let twice = format!("1:{RFC8032_SECRET}\n2:{RFC8032_SECRET}");
        assert!(matches!(
            ResultKeys::parse(&twice, None),
            Err(KeyRingError::BadEntry { entry: 2, .. })
        ));
    }

    #[test]
    fn keys_are_never_printed_and_a_token_key_is_recognised() {
        let keys = ResultKeys::parse(&format!("1:{RFC8032_SECRET}"), None).expect("ring");
        let shown = format!("{keys:?}");
        assert!(
            !shown.contains("9d61b1") && !shown.contains(RFC8032_X),
            "{shown}"
        );
        let mut secret = [0u8; 32];
        for (slot, pair) in secret.iter_mut().zip(RFC8032_SECRET.as_bytes().chunks(2)) {
            *slot = u8::from_str_radix(std::str::from_utf8(pair).expect("ascii"), 16).expect("hex");
        }
        assert!(keys.holds_secret(&secret));
        assert!(!keys.holds_secret(&[7; 32]));
    }
}
