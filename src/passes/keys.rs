//! The studio's pass keys: a JWK Set (RFC 7517), each key checked with its own crate
//! before `jsonwebtoken` gets it, since `jsonwebtoken` takes a key's bytes as they come
//! (an Ed25519 `x` shorter than 32 bytes panics it; a longer one is cut to 32).
//!
//! Taken: Ed25519 (`kty` OKP, `crv` Ed25519, `alg` absent, `EdDSA` or RFC 9864's
//! `Ed25519`), a point that is on the curve and not of small order (a small-order key
//! verifies signatures anyone can make); ES256 (`kty` EC, `crv` P-256), a point on
//! P-256; RS256 (`kty` RSA), a key the `rsa` crate takes, of 2048 to 8192 bits.
//! Skipped, with a reason: symmetric (`oct`) keys, which would make a public set a
//! shared secret; other key types and curves; `use` other than `sig`; `key_ops`
//! without `verify`; an `alg` the key cannot be used with; an entry whose fields have
//! the wrong JSON types.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::{Map, Value};

/// The fewest and most bits of an RSA key's modulus this service takes.
const RSA_BITS: std::ops::RangeInclusive<usize> = 2048..=8192;

/// Why the studio's key set was refused as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PassKeysError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not a JWK Set: an object with a `keys` array (RFC 7517 section 5)")]
    NotASet,
    #[error("two keys share the kid {0:?}: a pass's kid must name one key")]
    DuplicateKid(String),
    #[error("a key without a kid among several: a pass without a kid must name one key")]
    UnnamedAmongMany,
    #[error("no key this service takes (Ed25519, ES256 or RS256 for signatures); skipped: {0}")]
    NoUsableKey(String),
}

/// A key of the set that was left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedKey {
    /// Its place in the set's `keys`, from 0.
    pub index: usize,
    /// Its kid, if it has one.
    pub kid: Option<String>,
    pub reason: &'static str,
}

impl std::fmt::Display for SkippedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kid {
            Some(kid) => write!(f, "key {} ({kid:?}): {}", self.index, self.reason),
            None => write!(f, "key {}: {}", self.index, self.reason),
        }
    }
}

/// The one algorithm a key verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyAlg {
    /// EdDSA over Ed25519 (JOSE `EdDSA`, or `Ed25519` after RFC 9864).
    Ed25519,
    Es256,
    Rs256,
}

impl KeyAlg {
    /// The algorithm a JWS header's `alg` names, among those a key here verifies.
    pub(crate) fn from_header(alg: &str) -> Option<KeyAlg> {
        match alg {
            "EdDSA" | "Ed25519" => Some(KeyAlg::Ed25519),
            "ES256" => Some(KeyAlg::Es256),
            "RS256" => Some(KeyAlg::Rs256),
            _ => None,
        }
    }

    /// `jsonwebtoken`'s name for it.
    pub(crate) fn jwt(self) -> Algorithm {
        match self {
            KeyAlg::Ed25519 => Algorithm::EdDSA,
            KeyAlg::Es256 => Algorithm::ES256,
            KeyAlg::Rs256 => Algorithm::RS256,
        }
    }
}

/// A public key's bytes, to tell one key from another (RSA's without leading zeros).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Material {
    Ed25519([u8; 32]),
    P256 { x: [u8; 32], y: [u8; 32] },
    Rsa { n: Vec<u8>, e: Vec<u8> },
}

/// A key taken.
pub(crate) struct PassKey {
    pub(crate) kid: Option<String>,
    pub(crate) alg: KeyAlg,
    pub(crate) material: Material,
    pub(crate) decoding: DecodingKey,
}

/// Whether an Ed25519 key of small order is refused (always, but in a test that shows
/// what it lets through).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Weak {
    Refused,
    #[cfg(test)]
    Taken,
}

/// The keys taken and the entries skipped.
pub(crate) struct KeySet {
    pub(crate) keys: Vec<PassKey>,
    pub(crate) skipped: Vec<SkippedKey>,
}

/// Reads the studio's JWK Set.
pub(crate) fn parse_set(json: &str, weak: Weak) -> Result<KeySet, PassKeysError> {
    let value: Value =
        serde_json::from_str(json).map_err(|e| PassKeysError::NotJson(e.to_string()))?;
    let entries = value
        .get("keys")
        .and_then(Value::as_array)
        .ok_or(PassKeysError::NotASet)?;
    let mut keys: Vec<PassKey> = Vec::new();
    let mut skipped = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let kid = entry.get("kid").and_then(Value::as_str).map(str::to_owned);
        match read_key(entry, weak) {
            Ok(key) => keys.push(key),
            Err(reason) => skipped.push(SkippedKey { index, kid, reason }),
        }
    }
    // Among the keys taken: a skipped entry is never chosen, so it cannot be confused.
    for (i, key) in keys.iter().enumerate() {
        match &key.kid {
            Some(kid) if keys[..i].iter().any(|k| k.kid.as_ref() == Some(kid)) => {
                return Err(PassKeysError::DuplicateKid(kid.clone()));
            }
            None if keys.len() > 1 => return Err(PassKeysError::UnnamedAmongMany),
            _ => {}
        }
    }
    if keys.is_empty() {
        let reasons: Vec<String> = skipped.iter().map(ToString::to_string).collect();
        return Err(PassKeysError::NoUsableKey(if reasons.is_empty() {
            "none (the set is empty)".to_owned()
        } else {
            reasons.join("; ")
        }));
    }
    Ok(KeySet { keys, skipped })
}

/// The public keys of a JWK Set that this module can read, whatever their `use`, `alg`
/// or strength: to tell whether another set (the result keys') holds one of ours. A set
/// that is not JSON holds none.
pub(crate) fn materials(json: &str) -> Vec<Material> {
    let Ok(value) = serde_json::from_str::<Value>(json) else {
        return Vec::new();
    };
    let entries = value.get("keys").and_then(Value::as_array);
    entries
        .into_iter()
        .flatten()
        .filter_map(|entry| read_material(entry.as_object()?).ok())
        .map(|(material, _)| material)
        .collect()
}

/// One entry of the set, if this service takes it.
fn read_key(entry: &Value, weak: Weak) -> Result<PassKey, &'static str> {
    let entry = entry.as_object().ok_or("not a JSON object")?;
    let kid = optional_str(entry, "kid").map_err(|_| "its kid is not a string")?;
    let key_use = optional_str(entry, "use").map_err(|_| "its use is not a string")?;
    match key_use {
        None | Some("sig") => {}
        Some("enc") => return Err("an encryption key (use enc)"),
        Some(_) => return Err("a use other than sig"),
    }
    if let Some(ops) = entry.get("key_ops") {
        let ops = ops.as_array().ok_or("its key_ops is not an array")?;
        if !ops.iter().any(|op| op.as_str() == Some("verify")) {
            return Err("its key_ops do not include verify");
        }
    }
    let (material, alg) = read_material(entry)?;
    match optional_str(entry, "alg").map_err(|_| "its alg is not a string")? {
        None => {}
        Some(named) if KeyAlg::from_header(named) == Some(alg) => {}
        Some(_) => return Err("its alg is not the one algorithm this service uses its key with"),
    }
    let decoding = match &material {
        Material::Ed25519(x) => {
            let key = ed25519_dalek::VerifyingKey::from_bytes(x)
                .map_err(|_| "its x is not a point on Ed25519")?;
            if key.is_weak() && weak == Weak::Refused {
                return Err(
                    "a weak (small-order) Ed25519 key, which verifies signatures anyone can make",
                );
            }
            // The raw 32 bytes: jsonwebtoken names this constructor DER but reads them
            // as they are, as it does `from_ed_components`'s.
            DecodingKey::from_ed_der(x)
        }
        Material::P256 { x, y } => {
            let mut sec1 = [0u8; 65];
            sec1[0] = 0x04;
            sec1[1..33].copy_from_slice(x);
            sec1[33..].copy_from_slice(y);
            p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1)
                .map_err(|_| "its x and y are not a point on P-256")?;
            // The SEC1 point, as `from_ec_components` builds it.
            DecodingKey::from_ec_der(&sec1)
        }
        Material::Rsa { n, e } => {
            rsa::PublicKey::new_with_size_limits(
                rsa::BoxedUint::from_be_slice_vartime(n),
                rsa::BoxedUint::from_be_slice_vartime(e),
                RSA_BITS,
            )
            .map_err(|_| "not an RSA public key of 2048 to 8192 bits with a usable exponent")?;
            DecodingKey::from_rsa_raw_components(n, e)
        }
    };
    Ok(PassKey {
        kid: kid.map(str::to_owned),
        alg,
        material,
        decoding,
    })
}

/// A JWK's public key and the algorithm this service would verify with it.
fn read_material(entry: &Map<String, Value>) -> Result<(Material, KeyAlg), &'static str> {
    let kty = optional_str(entry, "kty")
        .map_err(|_| "its kty is not a string")?
        .ok_or("no kty")?;
    let crv = || {
        optional_str(entry, "crv")
            .map_err(|_| "its crv is not a string")?
            .ok_or("no crv")
    };
    match kty {
        "OKP" => {
            if crv()? != "Ed25519" {
                return Err("an OKP key on a curve other than Ed25519");
            }
            let x = fixed::<32>(entry, "x").map_err(|_| "its x is not 32 bytes of base64url")?;
            Ok((Material::Ed25519(x), KeyAlg::Ed25519))
        }
        "EC" => {
            if crv()? != "P-256" {
                return Err("an EC key on a curve other than P-256 (only ES256 is taken)");
            }
            let x = fixed::<32>(entry, "x").map_err(|_| "its x is not 32 bytes of base64url")?;
            let y = fixed::<32>(entry, "y").map_err(|_| "its y is not 32 bytes of base64url")?;
            Ok((Material::P256 { x, y }, KeyAlg::Es256))
        }
        "RSA" => {
            let n = unsigned(entry, "n").ok_or("its n is not a base64url number")?;
            let e = unsigned(entry, "e").ok_or("its e is not a base64url number")?;
            Ok((Material::Rsa { n, e }, KeyAlg::Rs256))
        }
        "oct" => Err("a symmetric (oct) key: a pass must be signed with a private key"),
        _ => Err("a key type other than OKP, EC and RSA"),
    }
}

/// The string field `name`, if present; `Err` if it is not a string.
fn optional_str<'a>(entry: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, ()> {
    match entry.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(()),
    }
}

/// The base64url bytes of the string field `name`.
fn bytes(entry: &Map<String, Value>, name: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD
        .decode(entry.get(name)?.as_str()?.as_bytes())
        .ok()
}

/// Exactly `N` base64url bytes.
fn fixed<const N: usize>(entry: &Map<String, Value>, name: &str) -> Result<[u8; N], ()> {
    bytes(entry, name).and_then(|b| b.try_into().ok()).ok_or(())
}

/// A big-endian unsigned number, without leading zeros; at least one byte.
fn unsigned(entry: &Map<String, Value>, name: &str) -> Option<Vec<u8>> {
    let raw = bytes(entry, name)?;
    let first = raw.iter().position(|&b| b != 0)?;
    Some(raw[first..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::verify::tests::{fixture, jwks, settings};
    use crate::passes::{PassSettings, Passes};
    use serde_json::json;

    fn b64(bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The fixture set's entry of `kid`.
    fn entry(kid: &str) -> Value {
        let set: Value = serde_json::from_str(&jwks()).expect("json");
        let keys = set["keys"].as_array().expect("keys");
        keys.iter()
            .find(|k| k["kid"] == kid)
            .expect("in the fixture set")
            .clone()
    }

    /// `entry` with `changes` made (a null removes a field).
    fn changed(mut entry: Value, changes: Value) -> Value {
        let fields = entry.as_object_mut().expect("an object");
        for (name, value) in changes.as_object().expect("an object") {
            match value {
                Value::Null => fields.remove(name),
                _ => fields.insert(name.clone(), value.clone()),
            };
        }
        entry
    }

    /// Why a set of `entry` alone is refused, or `None` if it is taken.
    fn skipped(entry: Value) -> Option<String> {
        match parse_set(&json!({ "keys": [entry] }).to_string(), Weak::Refused) {
            Ok(_) => None,
            Err(PassKeysError::NoUsableKey(reason)) => Some(reason),
            Err(other) => panic!("{other}"),
        }
    }

    fn parse(set: Value) -> Result<Passes, PassKeysError> {
        Passes::parse(&set.to_string(), settings())
    }

    #[test]
    fn the_fixture_set_s_ed25519_p256_and_rsa_2048_keys_are_taken() {
        let passes = Passes::parse(&jwks(), settings()).expect("the set");
        assert_eq!(
            passes.key_ids().collect::<Vec<_>>(),
            ["ed25519-1", "p256-1", "rsa2048-1"]
        );
        let skipped: Vec<String> = passes.skipped().iter().map(ToString::to_string).collect();
        assert_eq!(
            skipped,
            [
                "key 2 (\"p384-1\"): an EC key on a curve other than P-256 (only ES256 is taken)",
                "key 4 (\"rsa1024-1\"): not an RSA public key of 2048 to 8192 bits with a usable exponent",
            ]
        );
        assert_eq!(passes.settings(), &settings());
        let shown = format!("{passes:?}");
        assert!(
            shown.contains("ed25519-1")
                && !shown.contains(entry("ed25519-1")["x"].as_str().expect("x")),
            "{shown}"
        );
    }

    #[test]
    fn keys_this_service_does_not_take_are_skipped_with_a_reason() {
        let ed = entry("ed25519-1");
        let rsa = entry("rsa2048-1");
        let ec = entry("p256-1");
        // Taken as they are, and without the optional fields.
        for key in [&ed, &ec, &rsa] {
            assert_eq!(skipped(key.clone()), None, "{key}");
            assert_eq!(
                skipped(changed(
                    key.clone(),
                    json!({"alg": null, "use": null, "kid": null})
                )),
                None
            );
        }
        assert_eq!(
            skipped(changed(ed.clone(), json!({"alg": "Ed25519"}))),
            None,
            "RFC 9864"
        );
        assert_eq!(
            skipped(changed(ed.clone(), json!({"key_ops": ["verify"]}))),
            None
        );
        for (entry, reason) in [
            (
                json!({"kty": "oct", "k": b64(b"a shared secret"), "kid": "hmac"}),
                "a symmetric (oct) key",
            ),
            (
                json!({"kty": "OKP", "crv": "X25519", "x": ed["x"]}),
                "an OKP key on a curve other than Ed25519",
            ),
            (
                json!({"kty": "PQC"}),
                "a key type other than OKP, EC and RSA",
            ),
            (json!({"crv": "Ed25519"}), "no kty"),
            (
                changed(ed.clone(), json!({"use": "enc"})),
                "an encryption key (use enc)",
            ),
            (
                changed(ed.clone(), json!({"use": "other"})),
                "a use other than sig",
            ),
            (
                changed(ed.clone(), json!({"key_ops": ["sign"]})),
                "its key_ops do not include verify",
            ),
            (
                changed(ed.clone(), json!({"key_ops": "verify"})),
                "its key_ops is not an array",
            ),
            (
                changed(ed.clone(), json!({"alg": "ES256"})),
                "its alg is not the one algorithm",
            ),
            (
                changed(rsa.clone(), json!({"alg": "PS256"})),
                "its alg is not the one algorithm",
            ),
            (
                changed(ec.clone(), json!({"alg": "ES384"})),
                "its alg is not the one algorithm",
            ),
            (
                changed(ec.clone(), json!({"crv": "P-384"})),
                "an EC key on a curve other than P-256",
            ),
            // Badly typed: skipped, not fatal.
            (json!("a key"), "not a JSON object"),
            (
                changed(ed.clone(), json!({"kid": 7})),
                "its kid is not a string",
            ),
            (
                changed(ed.clone(), json!({"alg": ["EdDSA"]})),
                "its alg is not a string",
            ),
            (
                changed(ed.clone(), json!({"use": true})),
                "its use is not a string",
            ),
            (
                changed(ed.clone(), json!({"x": 7})),
                "its x is not 32 bytes",
            ),
            (changed(ed.clone(), json!({"crv": null})), "no crv"),
            (
                changed(rsa.clone(), json!({"n": null})),
                "its n is not a base64url number",
            ),
            (
                changed(rsa.clone(), json!({"e": "AQAB="})),
                "its e is not a base64url number",
            ),
        ] {
            let reason_given = skipped(entry.clone()).unwrap_or_else(|| panic!("taken: {entry}"));
            assert!(reason_given.contains(reason), "{entry}: {reason_given}");
        }
    }

    #[test]
    fn ed25519_keys_are_32_bytes_on_the_curve_and_not_of_small_order() {
        let ed = entry("ed25519-1");
        let x = URL_SAFE_NO_PAD
            .decode(ed["x"].as_str().expect("x"))
            .expect("base64url");
        let mut longer = x.clone();
        longer.push(0);
        for bad in [&x[..31], &longer[..], &[][..]] {
            let reason = skipped(changed(ed.clone(), json!({"x": b64(bad)}))).expect("skipped");
            assert!(reason.contains("its x is not 32 bytes"), "{reason}");
        }
        // What jsonwebtoken does with them unchecked: 31 bytes panic it, 33 are cut to 32
        // (a key the set does not publish verifies).
        let message = b"header.payload";
        let signature = jsonwebtoken::crypto::sign(
            message,
            &jsonwebtoken::EncodingKey::from_ed_der(&fixture("ed25519.pk8.der")),
            Algorithm::EdDSA,
        )
        .expect("signed");
        let short = std::panic::catch_unwind(|| {
            jsonwebtoken::crypto::verify(
                &signature,
                message,
                &DecodingKey::from_ed_der(&x[..31]),
                Algorithm::EdDSA,
            )
        });
        assert!(short.is_err(), "jsonwebtoken panicked on 31 bytes");
        let cut = jsonwebtoken::crypto::verify(
            &signature,
            message,
            &DecodingKey::from_ed_der(&longer),
            Algorithm::EdDSA,
        );
        assert!(cut.expect("verified"), "jsonwebtoken cut 33 bytes to 32");

        // A y with no x on the curve (y = 2 has none).
        let mut off_curve = [0u8; 32];
        off_curve[0] = 2;
        let reason = skipped(changed(ed.clone(), json!({"x": b64(&off_curve)}))).expect("skipped");
        assert!(reason.contains("not a point on Ed25519"), "{reason}");
        // Small order: the identity, and a point of order 2 (y = -1).
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let mut minus_one = [0xffu8; 32];
        minus_one[0] = 0xec;
        minus_one[31] = 0x7f;
        for weak in [identity, minus_one] {
            let reason = skipped(changed(ed.clone(), json!({"x": b64(&weak)}))).expect("skipped");
            assert!(reason.contains("weak (small-order)"), "{reason}");
        }
    }

    #[test]
    fn ec_keys_are_points_on_p256() {
        let ec = entry("p256-1");
        let reason = skipped(changed(ec.clone(), json!({"y": ec["x"]}))).expect("skipped");
        assert!(reason.contains("not a point on P-256"), "{reason}");
        let reason = skipped(changed(
            ec.clone(),
            json!({"x": b64(&[0; 32]), "y": b64(&[0; 32])}),
        ))
        .expect("skipped");
        assert!(reason.contains("not a point on P-256"), "{reason}");
        let reason = skipped(changed(ec.clone(), json!({"y": b64(&[1; 31])}))).expect("skipped");
        assert!(reason.contains("its y is not 32 bytes"), "{reason}");
    }

    #[test]
    fn rsa_keys_are_2048_to_8192_bits_with_a_usable_exponent() {
        let rsa = entry("rsa2048-1");
        let n = URL_SAFE_NO_PAD
            .decode(rsa["n"].as_str().expect("n"))
            .expect("base64url");
        let mut leading_zero = vec![0];
        leading_zero.extend_from_slice(&n);
        assert_eq!(
            skipped(changed(rsa.clone(), json!({"n": b64(&leading_zero)}))),
            None
        );
        // The sizes at the bounds (the rsa crate does not test n for primes' product).
        let odd = |bytes: usize, top: u8| {
            let mut n = vec![0x5a; bytes];
            n[0] = top;
            n[bytes - 1] |= 1;
            n
        };
        assert_eq!(
            skipped(changed(rsa.clone(), json!({"n": b64(&odd(1024, 0x80))}))),
            None,
            "8192 bits"
        );
        let reasons = [
            ("n", b64(&odd(1025, 0x01))), // 8193 bits
            ("n", b64(&odd(256, 0x7f))),  // 2047 bits
            ("n", b64(&[0x5a; 256])),     // even
            ("e", b64(&[1])),             // 1
            ("e", b64(&[1, 0, 0])),       // even
            ("e", b64(&[1; 9])),          // past 2^33 - 1
            ("n", b64(&[0; 256])),        // zero
        ];
        for (field, value) in reasons {
            let reason = skipped(changed(rsa.clone(), json!({field: value})))
                .unwrap_or_else(|| panic!("{field}: {value}"));
            assert!(
                reason.contains("2048 to 8192 bits") || reason.contains("base64url number"),
                "{reason}"
            );
        }
    }

    #[test]
    fn a_set_is_refused_when_not_json_ambiguous_or_empty_of_usable_keys() {
        assert!(matches!(
            Passes::parse("{", settings()),
            Err(PassKeysError::NotJson(_))
        ));
        for not_a_set in [json!([]), json!({"keys": {}}), json!({"key": []})] {
            assert_eq!(
                parse(not_a_set.clone()).err(),
                Some(PassKeysError::NotASet),
                "{not_a_set}"
            );
        }
        let ed = entry("ed25519-1");
        let ec = entry("p256-1");
        let twice = json!({"keys": [ed, changed(ec.clone(), json!({"kid": "ed25519-1"}))]});
        assert_eq!(
            parse(twice).err(),
            Some(PassKeysError::DuplicateKid("ed25519-1".into()))
        );
        let unnamed = json!({"keys": [ed, changed(ec.clone(), json!({"kid": null}))]});
        assert_eq!(parse(unnamed).err(), Some(PassKeysError::UnnamedAmongMany));
        assert!(
            matches!(parse(json!({"keys": []})), Err(PassKeysError::NoUsableKey(r)) if r.contains("empty"))
        );
        let reason =
            skipped(json!({"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"})).expect("refused");
        assert_eq!(
            reason,
            "key 0 (\"hmac\"): a symmetric (oct) key: a pass must be signed with a private key"
        );
        // A skipped entry shares a kid without harm: it is never chosen.
        let enc = changed(ec, json!({"kid": "ed25519-1", "use": "enc"}));
        let passes = parse(json!({"keys": [ed, enc]})).expect("one key taken");
        assert_eq!(passes.key_ids().collect::<Vec<_>>(), ["ed25519-1"]);
        assert_eq!(passes.skipped().len(), 1);
        // Extra fields and members are fine (x5c, a set's own metadata).
        let extra = json!({"keys": [changed(ed.clone(), json!({"x5c": ["MII..."], "ext": true}))], "issuer": "x"});
        assert!(parse(extra).is_ok());
    }

    #[test]
    fn a_pass_key_shared_with_another_set_is_found() {
        let passes = Passes::parse(&jwks(), settings()).expect("the set");
        for kid in ["ed25519-1", "p256-1", "rsa2048-1"] {
            // Under another kid, with other metadata: the key is what counts.
            let theirs = changed(
                entry(kid),
                json!({"kid": "theirs", "alg": null, "use": "enc"}),
            );
            assert!(
                passes.shares_key_with(&json!({"keys": [theirs]}).to_string()),
                "{kid}"
            );
        }
        // RSA's n with a leading zero is the same key.
        let rsa = entry("rsa2048-1");
        let mut n = vec![0];
        n.extend(
            URL_SAFE_NO_PAD
                .decode(rsa["n"].as_str().expect("n"))
                .expect("base64url"),
        );
        let padded = changed(rsa, json!({"n": b64(&n)}));
        assert!(passes.shares_key_with(&json!({"keys": [padded]}).to_string()));
        // A skipped key (P-384) is no pass key.
        assert!(!passes.shares_key_with(&json!({"keys": [entry("p384-1")]}).to_string()));
        assert!(!passes.shares_key_with("not json"));
        assert!(!passes.shares_key_with(r#"{"keys": [1, {"kty": "OKP"}]}"#));
        let settings = PassSettings {
            required: true,
            show_player_ids: true,
            ..settings()
        };
        let passes = Passes::parse(&jwks(), settings).expect("the set");
        assert!(passes.required() && passes.show_player_ids());
    }
}
