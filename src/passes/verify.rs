//! A pass checked: a compact JWS (RFC 7515) whose header names one of the studio's keys
//! and that key's algorithm, signed by it, with the claims of a JWT (RFC 7519) this
//! service takes: its issuer, its audience, a subject that is a player id, and times
//! that hold at the caller's `now`.
//!
//! The header is read here rather than by `jsonwebtoken::decode`, which does not know
//! RFC 9864's `Ed25519`: the algorithm comes from the key (its one algorithm; the header
//! must agree), and the signature is checked by `jsonwebtoken::crypto::verify` with it.
//! The claims are read here too, so that `exp` and `nbf` may be fractional
//! (RFC 7519's NumericDate) and the clock is the caller's.
//!
//! An ES256 signature has a twin, `(r, n - s)`, that verifies too (`p256` takes high-S
//! signatures; only some curves normalize them). That is fine here: a pass is a bearer
//! token, judged by what it says, and nothing is keyed on its bytes (no replay list, no
//! cache of passes seen).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::Value;

use super::keys::{KeyAlg, PassKey};
use super::{MAX_PASS_LEN, PassError, Passes};
use crate::results::RESULT_TYPE;
use crate::state::PlayerId;

use PassError::{Invalid, Malformed};

/// Each check a pass goes through, named so that a test can remove one and show the
/// attack it stops getting through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// The signature verifies with the key.
    Signature,
    /// The header's `alg` is one this service takes, and the key's (without it, the
    /// header's `alg` is taken at its word: `none` unsigned, `HS256` keyed with the key's
    /// public bytes; only a test builds that).
    #[cfg(test)]
    Algorithm,
    /// The header's `kid` names a key of the set.
    Kid,
    /// `typ` is never a result's, and is `--pass-type` if set.
    Type,
    Issuer,
    Audience,
    /// `exp` has not passed.
    Expiry,
    /// `nbf` has come.
    NotBefore,
    /// `exp` is no further ahead than `--pass-max-lifetime-secs`.
    Lifetime,
}

/// A pass's JOSE header, the parameters read (a parameter twice is malformed).
#[derive(Deserialize)]
struct Header {
    alg: Option<Value>,
    kid: Option<Value>,
    typ: Option<Value>,
    crit: Option<Value>,
}

/// A pass's claims, those read (a claim twice is malformed).
#[derive(Deserialize)]
struct Claims {
    iss: Option<Value>,
    aud: Option<Value>,
    sub: Option<Value>,
    exp: Option<Value>,
    nbf: Option<Value>,
    iat: Option<Value>,
}

/// How the signature is to be checked.
enum Verify<'a> {
    /// With the key's own algorithm.
    Key(&'a PassKey),
    /// Not at all: a header `alg` `none` taken at its word (a test only).
    #[cfg(test)]
    Unsigned,
    /// HMAC with the key's public bytes as the secret: the header `alg` `HS256` taken
    /// at its word (a test only).
    #[cfg(test)]
    Hmac(&'a PassKey),
}

impl Passes {
    /// The player id `pass` names, checked at `now` (seconds since the Unix epoch).
    pub fn check(&self, pass: &str, now: u64) -> Result<PlayerId, PassError> {
        if pass.len() > MAX_PASS_LEN {
            return Err(Malformed("longer than 4096 bytes"));
        }
        let mut parts = pass.split('.');
        let (Some(header_part), Some(payload_part), Some(signature_part), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Malformed(
                "not three parts separated by dots (a compact JWS)",
            ));
        };
        let decode = |part: &str| URL_SAFE_NO_PAD.decode(part.as_bytes()).ok();
        let header = decode(header_part).ok_or(Malformed("its header is not base64url"))?;
        let payload = decode(payload_part).ok_or(Malformed("its payload is not base64url"))?;
        decode(signature_part).ok_or(Malformed("its signature is not base64url"))?;
        let header: Header = serde_json::from_slice(&header)
            .map_err(|_| Malformed("its header is not a JSON object, each parameter once"))?;

        let verify = self.check_header(&header)?;
        let message = &pass[..header_part.len() + 1 + payload_part.len()];
        if !self.off(Check::Signature) && !signature_verifies(&verify, signature_part, message) {
            return Err(Invalid("its signature does not verify with its key"));
        }

        let claims: Claims = serde_json::from_slice(&payload)
            .map_err(|_| Malformed("its payload is not a JSON object, each claim once"))?;
        self.check_claims(&claims, now)
    }

    /// The key and algorithm the header names, if the service takes them.
    fn check_header<'a>(&'a self, header: &Header) -> Result<Verify<'a>, PassError> {
        let alg = match &header.alg {
            Some(Value::String(alg)) => alg.as_str(),
            Some(_) => return Err(Invalid("its alg is not a string")),
            None => return Err(Invalid("its header names no alg")),
        };
        if header.crit.is_some() {
            return Err(Invalid(
                "its header has critical extensions (crit) this service does not know",
            ));
        }
        self.check_type(header.typ.as_ref())?;
        let kid = match &header.kid {
            Some(Value::String(kid)) => Some(kid.as_str()),
            Some(_) => return Err(Invalid("its kid is not a string")),
            None => None,
        };
        let key = self.key(kid)?;

        // The header's alg taken at its word: what the checks below prevent.
        #[cfg(test)]
        if self.off(Check::Algorithm) {
            return Ok(match alg {
                "none" => Verify::Unsigned,
                "HS256" => Verify::Hmac(key),
                _ => Verify::Key(key),
            });
        }
        if alg.eq_ignore_ascii_case("none") {
            return Err(Invalid("alg none: a pass must be signed"));
        }
        if alg.starts_with("HS") {
            return Err(Invalid(
                "an HMAC alg: a pass is signed with the studio's private key",
            ));
        }
        match KeyAlg::from_header(alg) {
            None => Err(Invalid(
                "an alg this service does not take (EdDSA, Ed25519, ES256, RS256)",
            )),
            Some(alg) if alg != key.alg => Err(Invalid("its alg is not its key's algorithm")),
            Some(_) => Ok(Verify::Key(key)),
        }
    }

    /// Never a match result's type; `--pass-type` if set.
    fn check_type(&self, typ: Option<&Value>) -> Result<(), PassError> {
        if self.off(Check::Type) {
            return Ok(());
        }
        let typ = match typ {
            Some(Value::String(typ)) => Some(media_type(typ)),
            Some(_) => return Err(Invalid("its typ is not a string")),
            None => None,
        };
        if typ.as_deref() == Some(RESULT_TYPE) {
            return Err(Invalid(
                "its typ is a match result's: a result is not a pass",
            ));
        }
        match &self.settings.pass_type {
            Some(wanted) if typ.as_deref() != Some(media_type(wanted).as_str()) => Err(Invalid(
                "its typ is not the one this service takes (--pass-type)",
            )),
            _ => Ok(()),
        }
    }

    /// The key a pass's kid names; without a kid, the set's only key.
    fn key(&self, kid: Option<&str>) -> Result<&PassKey, PassError> {
        let found = match kid {
            Some(kid) => self.keys.iter().find(|k| k.kid.as_deref() == Some(kid)),
            None if self.keys.len() == 1 => self.keys.first(),
            None => return Err(Invalid("it names no kid, and the key set has several keys")),
        };
        match found {
            Some(key) => Ok(key),
            // The first key whatever the kid: what the check prevents.
            None if self.off(Check::Kid) => {
                self.keys.first().ok_or(Invalid("the key set is empty"))
            }
            None => Err(Invalid("no key in the key set has its kid")),
        }
    }

    /// The player id the claims name, if they hold at `now`.
    fn check_claims(&self, claims: &Claims, now: u64) -> Result<PlayerId, PassError> {
        let settings = &self.settings;
        if !self.off(Check::Issuer) {
            match &claims.iss {
                Some(Value::String(iss)) if *iss == settings.issuer => {}
                Some(Value::String(_)) => {
                    return Err(Invalid("its iss is not the issuer this service takes"));
                }
                Some(_) => return Err(Invalid("its iss is not a string")),
                None => return Err(Invalid("it has no iss")),
            }
        }
        if !self.off(Check::Audience) {
            let named = match &claims.aud {
                Some(Value::String(aud)) => *aud == settings.audience,
                Some(Value::Array(auds)) if auds.iter().all(Value::is_string) => {
                    auds.iter().any(|a| a.as_str() == Some(&settings.audience))
                }
                Some(_) => return Err(Invalid("its aud is not a string or an array of strings")),
                None => return Err(Invalid("it has no aud")),
            };
            if !named {
                return Err(Invalid("its aud does not name this service"));
            }
        }
        let exp = match numeric_date(claims.exp.as_ref()) {
            Ok(Some(exp)) => exp,
            Ok(None) => return Err(Invalid("it has no exp")),
            Err(()) => return Err(Invalid("its exp is not a number")),
        };
        let nbf =
            numeric_date(claims.nbf.as_ref()).map_err(|()| Invalid("its nbf is not a number"))?;
        numeric_date(claims.iat.as_ref()).map_err(|()| Invalid("its iat is not a number"))?;

        // Seconds as f64: exact for every u64 below 2^53, which is past any clock.
        let leeway = settings.leeway_secs;
        if !self.off(Check::Expiry) && exp <= now.saturating_sub(leeway) as f64 {
            return Err(PassError::Expired);
        }
        if !self.off(Check::NotBefore)
            && nbf.is_some_and(|nbf| nbf > now.saturating_add(leeway) as f64)
        {
            return Err(PassError::NotYetValid);
        }
        let latest = now
            .saturating_add(settings.max_lifetime_secs)
            .saturating_add(leeway);
        if !self.off(Check::Lifetime) && exp > latest as f64 {
            return Err(Invalid(
                "it lives too long: its exp is further ahead than --pass-max-lifetime-secs",
            ));
        }

        let not_an_id =
            Invalid("the pass's subject is not a player id: 1 to 64 printable ASCII characters");
        match &claims.sub {
            Some(Value::String(sub)) => PlayerId::new(sub).ok_or(not_an_id),
            Some(_) => Err(not_an_id),
            None => Err(Invalid("it has no sub")),
        }
    }

    /// Whether `check` is on: always, but in a test that removes it.
    #[cfg(test)]
    fn off(&self, check: Check) -> bool {
        self.off.contains(&check)
    }

    #[cfg(not(test))]
    fn off(&self, _check: Check) -> bool {
        false
    }
}

/// Whether `signature` (base64url) signs `message` as `verify` says.
fn signature_verifies(verify: &Verify<'_>, signature: &str, message: &str) -> bool {
    let (key, alg) = match verify {
        Verify::Key(key) => (&key.decoding, key.alg.jwt()),
        #[cfg(test)]
        Verify::Unsigned => return true,
        #[cfg(test)]
        Verify::Hmac(key) => {
            let secret = tests::public_bytes(key);
            let hmac = jsonwebtoken::DecodingKey::from_secret(&secret);
            let Ok(hmac) = hmac else { return false };
            return jsonwebtoken::crypto::verify(
                signature,
                message.as_bytes(),
                &hmac,
                jsonwebtoken::Algorithm::HS256,
            )
            .unwrap_or(false);
        }
    };
    jsonwebtoken::crypto::verify(signature, message.as_bytes(), key, alg).unwrap_or(false)
}

/// A `typ` as a media type, compared case-insensitively and without `application/`
/// (RFC 7515 section 4.1.9).
fn media_type(typ: &str) -> String {
    let lower = typ.to_ascii_lowercase();
    match lower.strip_prefix("application/") {
        Some(rest) => rest.to_owned(),
        None => lower,
    }
}

/// A NumericDate claim (RFC 7519 section 2: seconds, fractions allowed), if present.
fn numeric_date(value: Option<&Value>) -> Result<Option<f64>, ()> {
    match value {
        None => Ok(None),
        Some(Value::Number(n)) => n.as_f64().map(Some).ok_or(()),
        Some(_) => Err(()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::passes::PassSettings;
    use crate::passes::keys::{self, Material, Weak};
    use jsonwebtoken::{Algorithm, EncodingKey};
    use serde_json::json;

    /// The clock of every test: 2027-01-15.
    const NOW: u64 = 1_800_000_000;
    const ISSUER: &str = "https://login.studio.example";
    const AUDIENCE: &str = "allfives";

    /// A key's public bytes, as an attacker would feed them to HMAC as its secret.
    pub(super) fn public_bytes(key: &PassKey) -> Vec<u8> {
        match &key.material {
            Material::Ed25519(x) => x.to_vec(),
            Material::P256 { x, y } => [&x[..], &y[..]].concat(),
            Material::Rsa { n, .. } => n.clone(),
        }
    }

    pub(crate) fn fixture(name: &str) -> Vec<u8> {
        let path = format!("{}/tests/fixtures/pass/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).expect(&path)
    }

    pub(crate) fn jwks() -> String {
        String::from_utf8(fixture("jwks.json")).expect("utf-8")
    }

    pub(crate) fn settings() -> PassSettings {
        PassSettings {
            issuer: ISSUER.to_owned(),
            audience: AUDIENCE.to_owned(),
            pass_type: None,
            leeway_secs: 60,
            max_lifetime_secs: 86_400,
            required: false,
            show_player_ids: false,
        }
    }

    /// The fixture set's passes, with `off` removed.
    fn passes_without(off: &[Check]) -> Passes {
        let mut passes = Passes::parse(&jwks(), settings()).expect("the fixture set");
        passes.off = off.to_vec();
        passes
    }

    fn passes() -> Passes {
        passes_without(&[])
    }

    fn ed25519() -> EncodingKey {
        EncodingKey::from_ed_der(&fixture("ed25519.pk8.der"))
    }

    fn p256() -> EncodingKey {
        EncodingKey::from_ec_der(&fixture("p256.pk8.der"))
    }

    fn rsa2048() -> EncodingKey {
        EncodingKey::from_rsa_der(&fixture("rsa2048.pkcs1.der"))
    }

    fn claims() -> Value {
        json!({
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "player-1",
            "iat": NOW - 10,
            "exp": NOW + 3600,
        })
    }

    /// `claims` with `changes` made (a null removes a claim).
    fn with(changes: Value) -> Value {
        let mut claims = claims();
        for (name, value) in changes.as_object().expect("an object") {
            match value {
                Value::Null => claims.as_object_mut().expect("object").remove(name),
                _ => claims
                    .as_object_mut()
                    .expect("object")
                    .insert(name.clone(), value.clone()),
            };
        }
        claims
    }

    fn b64(bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// A compact JWS of `header` and `claims` as written, signed by jsonwebtoken with
    /// `key` (none: an empty signature).
    fn compact(header: &Value, claims: &Value, key: Option<(&EncodingKey, Algorithm)>) -> String {
        let message = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let signature = match key {
            Some((key, alg)) => {
                jsonwebtoken::crypto::sign(message.as_bytes(), key, alg).expect("signed")
            }
            None => String::new(),
        };
        format!("{message}.{signature}")
    }

    /// A pass signed by the fixture's Ed25519 key, header `alg` `EdDSA`, its kid.
    fn pass(claims: &Value) -> String {
        compact(
            &json!({"alg": "EdDSA", "kid": "ed25519-1"}),
            claims,
            Some((&ed25519(), Algorithm::EdDSA)),
        )
    }

    /// An Ed25519 key the fixture set does not hold.
    fn stranger() -> EncodingKey {
        use ed25519_dalek::pkcs8::{EncodePrivateKey, KeypairBytes};
        let der = KeypairBytes {
            secret_key: [7; 32],
            public_key: None,
        }
        .to_pkcs8_der()
        .expect("PKCS#8");
        EncodingKey::from_ed_der(der.as_bytes())
    }

    fn player(id: &str) -> PlayerId {
        PlayerId::new(id).expect("a player id")
    }

    /// `pass` refused with `error`, and taken once `check` alone is removed: the check
    /// is what stops it.
    fn stopped_by(check: Check, pass: &str, error: PassError) {
        assert_eq!(passes().check(pass, NOW), Err(error), "{check:?}");
        assert_eq!(
            passes_without(&[check]).check(pass, NOW),
            Ok(player("player-1")),
            "taken without {check:?}"
        );
    }

    #[test]
    fn a_pass_of_each_key_type_names_its_player() {
        let passes = passes();
        assert_eq!(passes.check(&pass(&claims()), NOW), Ok(player("player-1")));
        // RFC 9864's name for the same algorithm, which jsonwebtoken's header cannot read.
        let ed = compact(
            &json!({"alg": "Ed25519", "kid": "ed25519-1"}),
            &claims(),
            Some((&ed25519(), Algorithm::EdDSA)),
        );
        assert_eq!(passes.check(&ed, NOW), Ok(player("player-1")));
        let es = compact(
            &json!({"alg": "ES256", "kid": "p256-1"}),
            &claims(),
            Some((&p256(), Algorithm::ES256)),
        );
        assert_eq!(passes.check(&es, NOW), Ok(player("player-1")));
        let rs = compact(
            &json!({"alg": "RS256", "kid": "rsa2048-1", "typ": "JWT"}),
            &claims(),
            Some((&rsa2048(), Algorithm::RS256)),
        );
        assert_eq!(passes.check(&rs, NOW), Ok(player("player-1")));
        // jsonwebtoken's own encoder writes what the studio's login service would.
        let mut header = jsonwebtoken::Header::new(Algorithm::ES256);
        header.kid = Some("p256-1".into());
        let encoded = jsonwebtoken::encode(&header, &claims(), &p256()).expect("encoded");
        assert_eq!(passes.check(&encoded, NOW), Ok(player("player-1")));
    }

    #[test]
    fn keys_the_set_skips_sign_no_pass() {
        let passes = passes();
        // The P-384 key is skipped (ES384 is not taken), its kid unknown.
        let p384 = EncodingKey::from_ec_der(&fixture("p384.pk8.der"));
        let es384 = compact(
            &json!({"alg": "ES384", "kid": "p384-1"}),
            &claims(),
            Some((&p384, Algorithm::ES384)),
        );
        assert_eq!(
            passes.check(&es384, NOW),
            Err(Invalid("no key in the key set has its kid"))
        );
        // The 1024-bit RSA key is skipped.
        let rsa1024 = EncodingKey::from_rsa_der(&fixture("rsa1024.pkcs1.der"));
        let weak = compact(
            &json!({"alg": "RS256", "kid": "rsa1024-1"}),
            &claims(),
            Some((&rsa1024, Algorithm::RS256)),
        );
        assert_eq!(
            passes.check(&weak, NOW),
            Err(Invalid("no key in the key set has its kid"))
        );
        // An algorithm that is not the key's, and one not taken at all.
        let mismatch = compact(
            &json!({"alg": "RS256", "kid": "ed25519-1"}),
            &claims(),
            Some((&rsa2048(), Algorithm::RS256)),
        );
        assert_eq!(
            passes.check(&mismatch, NOW),
            Err(Invalid("its alg is not its key's algorithm"))
        );
        let ps = compact(
            &json!({"alg": "PS256", "kid": "rsa2048-1"}),
            &claims(),
            Some((&rsa2048(), Algorithm::PS256)),
        );
        assert!(
            matches!(passes.check(&ps, NOW), Err(Invalid(r)) if r.starts_with("an alg this service does not take"))
        );
    }

    #[test]
    fn a_bad_signature_is_refused() {
        // Another player's pass, its subject moved onto this one's signature.
        let mine = pass(&claims());
        let theirs = pass(&with(json!({"sub": "player-2"})));
        let mut parts: Vec<&str> = mine.split('.').collect();
        parts[1] = theirs.split('.').nth(1).expect("a payload");
        let forged = parts.join(".");
        assert_eq!(
            passes().check(&forged, NOW),
            Err(Invalid("its signature does not verify with its key"))
        );
        assert_eq!(
            passes_without(&[Check::Signature]).check(&forged, NOW),
            Ok(player("player-2"))
        );
        // Signed by a key the set does not hold, under a kid it does.
        let stranger = stranger();
        let other = compact(
            &json!({"alg": "EdDSA", "kid": "ed25519-1"}),
            &claims(),
            Some((&stranger, Algorithm::EdDSA)),
        );
        stopped_by(
            Check::Signature,
            &other,
            Invalid("its signature does not verify with its key"),
        );
    }

    #[test]
    fn the_wrong_audience_or_issuer_is_refused() {
        stopped_by(
            Check::Audience,
            &pass(&with(json!({"aud": "another-game"}))),
            Invalid("its aud does not name this service"),
        );
        stopped_by(
            Check::Audience,
            &pass(&with(json!({"aud": ["another-game", "a-third"]}))),
            Invalid("its aud does not name this service"),
        );
        stopped_by(
            Check::Audience,
            &pass(&with(json!({"aud": null}))),
            Invalid("it has no aud"),
        );
        // RFC 7519: one string, or an array that holds it.
        let array = pass(&with(json!({"aud": ["another-game", AUDIENCE]})));
        assert_eq!(passes().check(&array, NOW), Ok(player("player-1")));
        stopped_by(
            Check::Audience,
            &pass(&with(json!({"aud": [AUDIENCE, 7]}))),
            Invalid("its aud is not a string or an array of strings"),
        );

        stopped_by(
            Check::Issuer,
            &pass(&with(json!({"iss": "https://login.other.example"}))),
            Invalid("its iss is not the issuer this service takes"),
        );
        // Exactly: no prefix, no trailing slash, no array holding it.
        stopped_by(
            Check::Issuer,
            &pass(&with(json!({"iss": format!("{ISSUER}/")}))),
            Invalid("its iss is not the issuer this service takes"),
        );
        stopped_by(
            Check::Issuer,
            &pass(&with(json!({"iss": [ISSUER]}))),
            Invalid("its iss is not a string"),
        );
        stopped_by(
            Check::Issuer,
            &pass(&with(json!({"iss": null}))),
            Invalid("it has no iss"),
        );
    }

    #[test]
    fn times_hold_at_the_callers_clock_with_the_leeway() {
        // Expired: exp at or before now minus the leeway (60 s).
        stopped_by(
            Check::Expiry,
            &pass(&with(json!({"exp": NOW - 60}))),
            PassError::Expired,
        );
        assert_eq!(
            passes().check(&pass(&with(json!({"exp": NOW - 59}))), NOW),
            Ok(player("player-1"))
        );
        // Not yet valid: nbf after now plus the leeway.
        stopped_by(
            Check::NotBefore,
            &pass(&with(json!({"nbf": NOW + 61}))),
            PassError::NotYetValid,
        );
        assert_eq!(
            passes().check(&pass(&with(json!({"nbf": NOW + 60}))), NOW),
            Ok(player("player-1"))
        );
        // Lives too long: exp further ahead than the lifetime (a day) and the leeway.
        stopped_by(
            Check::Lifetime,
            &pass(&with(json!({"exp": NOW + 86_400 + 61}))),
            Invalid("it lives too long: its exp is further ahead than --pass-max-lifetime-secs"),
        );
        assert_eq!(
            passes().check(&pass(&with(json!({"exp": NOW + 86_460}))), NOW),
            Ok(player("player-1"))
        );
        // NumericDate may be fractional (RFC 7519 section 2).
        let mut exact = passes();
        exact.settings.leeway_secs = 0;
        assert_eq!(
            exact.check(&pass(&with(json!({"exp": NOW as f64 + 0.5}))), NOW),
            Ok(player("player-1"))
        );
        assert_eq!(
            exact.check(&pass(&with(json!({"exp": NOW as f64 - 0.5}))), NOW),
            Err(PassError::Expired)
        );
        assert_eq!(
            exact.check(&pass(&with(json!({"nbf": NOW as f64 + 0.5}))), NOW),
            Err(PassError::NotYetValid)
        );
        // The clock is the argument: the same pass, a day later.
        assert_eq!(
            passes().check(&pass(&claims()), NOW + 86_400),
            Err(PassError::Expired)
        );
        // exp required; exp, nbf and iat numbers.
        assert_eq!(
            passes().check(&pass(&with(json!({"exp": null}))), NOW),
            Err(Invalid("it has no exp"))
        );
        for (claim, error) in [
            ("exp", "its exp is not a number"),
            ("nbf", "its nbf is not a number"),
            ("iat", "its iat is not a number"),
        ] {
            let text = pass(&with(json!({claim: (NOW + 10).to_string()})));
            assert_eq!(passes().check(&text, NOW), Err(Invalid(error)), "{claim}");
        }
    }

    #[test]
    fn alg_none_and_an_hmac_pass_keyed_with_the_public_key_are_refused() {
        let none = compact(&json!({"alg": "none", "kid": "ed25519-1"}), &claims(), None);
        stopped_by(
            Check::Algorithm,
            &none,
            Invalid("alg none: a pass must be signed"),
        );
        let none = compact(&json!({"alg": "NONE", "kid": "ed25519-1"}), &claims(), None);
        assert_eq!(
            passes().check(&none, NOW),
            Err(Invalid("alg none: a pass must be signed"))
        );

        // Algorithm confusion: HMAC keyed with the key's public bytes, which anyone has.
        let passes = passes();
        let key = passes.key(Some("ed25519-1")).expect("the key");
        let secret = EncodingKey::from_secret(&public_bytes(key)).expect("a secret");
        let hs256 = compact(
            &json!({"alg": "HS256", "kid": "ed25519-1"}),
            &claims(),
            Some((&secret, Algorithm::HS256)),
        );
        stopped_by(
            Check::Algorithm,
            &hs256,
            Invalid("an HMAC alg: a pass is signed with the studio's private key"),
        );
        // With an RSA key, as the classic attack does it.
        let key = passes.key(Some("rsa2048-1")).expect("the key");
        let secret = EncodingKey::from_secret(&public_bytes(key)).expect("a secret");
        let hs256 = compact(
            &json!({"alg": "HS256", "kid": "rsa2048-1"}),
            &claims(),
            Some((&secret, Algorithm::HS256)),
        );
        stopped_by(
            Check::Algorithm,
            &hs256,
            Invalid("an HMAC alg: a pass is signed with the studio's private key"),
        );
    }

    #[test]
    fn a_match_result_is_never_a_pass() {
        // The worst case: the studio's login key is also this service's result key.
        let results = crate::results::ResultKeys::parse(&format!("1:{}", "42".repeat(32)), None)
            .expect("ring");
        let result = results.sign(&claims()).expect("signed");
        let mut passes = Passes::parse(results.jwks_json(), settings()).expect("the set");
        assert!(
            passes.shares_key_with(results.jwks_json()),
            "refused at start"
        );
        assert_eq!(
            passes.check(&result, NOW),
            Err(Invalid(
                "its typ is a match result's: a result is not a pass"
            ))
        );
        passes.off = vec![Check::Type];
        assert_eq!(passes.check(&result, NOW), Ok(player("player-1")));
        // However the typ is spelled.
        for typ in ["application/allfives-result+jwt", "Allfives-Result+JWT"] {
            let header = json!({"alg": "EdDSA", "kid": "ed25519-1", "typ": typ});
            let text = compact(&header, &claims(), Some((&ed25519(), Algorithm::EdDSA)));
            assert_eq!(
                self::passes().check(&text, NOW),
                Err(Invalid(
                    "its typ is a match result's: a result is not a pass"
                )),
                "{typ}"
            );
        }
        assert!(!self::passes().shares_key_with(results.jwks_json()));
    }

    #[test]
    fn a_pass_type_when_set_is_required_in_any_case() {
        let mut passes = passes();
        passes.settings.pass_type = Some("pass+jwt".into());
        for typ in ["pass+jwt", "application/PASS+JWT", "Pass+JWT"] {
            let header = json!({"alg": "EdDSA", "kid": "ed25519-1", "typ": typ});
            let text = compact(&header, &claims(), Some((&ed25519(), Algorithm::EdDSA)));
            assert_eq!(passes.check(&text, NOW), Ok(player("player-1")), "{typ}");
        }
        let wrong = Invalid("its typ is not the one this service takes (--pass-type)");
        assert_eq!(
            passes.check(&pass(&claims()), NOW),
            Err(wrong.clone()),
            "no typ"
        );
        let jwt = compact(
            &json!({"alg": "EdDSA", "kid": "ed25519-1", "typ": "JWT"}),
            &claims(),
            Some((&ed25519(), Algorithm::EdDSA)),
        );
        assert_eq!(passes.check(&jwt, NOW), Err(wrong));
        passes.off = vec![Check::Type];
        assert_eq!(passes.check(&jwt, NOW), Ok(player("player-1")));
        let number = compact(
            &json!({"alg": "EdDSA", "kid": "ed25519-1", "typ": 1}),
            &claims(),
            Some((&ed25519(), Algorithm::EdDSA)),
        );
        assert_eq!(
            self::passes().check(&number, NOW),
            Err(Invalid("its typ is not a string"))
        );
    }

    #[test]
    fn the_kid_picks_the_key() {
        let unknown = compact(
            &json!({"alg": "EdDSA", "kid": "ed25519-2"}),
            &claims(),
            Some((&ed25519(), Algorithm::EdDSA)),
        );
        stopped_by(
            Check::Kid,
            &unknown,
            Invalid("no key in the key set has its kid"),
        );
        let unnamed = compact(
            &json!({"alg": "EdDSA"}),
            &claims(),
            Some((&ed25519(), Algorithm::EdDSA)),
        );
        assert_eq!(
            passes().check(&unnamed, NOW),
            Err(Invalid("it names no kid, and the key set has several keys"))
        );
        // A set of one key takes a pass without a kid.
        let one =
            json!({"keys": [serde_json::from_str::<Value>(&jwks()).expect("json")["keys"][0]]});
        let one = Passes::parse(&one.to_string(), settings()).expect("one key");
        assert_eq!(one.check(&unnamed, NOW), Ok(player("player-1")));
        let number = compact(
            &json!({"alg": "EdDSA", "kid": 1}),
            &claims(),
            Some((&ed25519(), Algorithm::EdDSA)),
        );
        assert_eq!(
            passes().check(&number, NOW),
            Err(Invalid("its kid is not a string"))
        );
    }

    #[test]
    fn a_weak_ed25519_key_in_the_set_is_skipped() {
        // The identity point: small order. Against it, R = identity and s = 0 verify
        // any message, so anyone can sign any pass.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let set =
            json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": b64(&identity), "kid": "weak"}]})
                .to_string();
        let refused = Passes::parse(&set, settings()).expect_err("no usable key");
        assert!(
            matches!(&refused, keys::PassKeysError::NoUsableKey(r) if r.contains("weak (small-order)")),
            "{refused}"
        );

        let mut signature = [0u8; 64];
        signature[0] = 1;
        let header = b64(json!({"alg": "EdDSA", "kid": "weak"})
            .to_string()
            .as_bytes());
        let payload = b64(with(json!({"sub": "anyone"})).to_string().as_bytes());
        let forged = format!("{header}.{payload}.{}", b64(&signature));
        // With the weak key taken, the forgery passes: that is what the check stops.
        let set = keys::parse_set(&set, Weak::Taken).expect("taken when not checked");
        let taken = Passes {
            keys: set.keys,
            skipped: set.skipped,
            settings: settings(),
            off: Vec::new(),
        };
        assert_eq!(taken.check(&forged, NOW), Ok(player("anyone")));
    }

    #[test]
    fn an_es256_signature_s_high_s_twin_is_taken_too() {
        use p256::ecdsa::Signature;
        let text = compact(
            &json!({"alg": "ES256", "kid": "p256-1"}),
            &claims(),
            Some((&p256(), Algorithm::ES256)),
        );
        let (message, signature) = text.rsplit_once('.').expect("three parts");
        let bytes = URL_SAFE_NO_PAD.decode(signature).expect("base64url");
        let signature = Signature::from_slice(&bytes).expect("r and s");
        let (r, s) = signature.split_scalars();
        let twin = Signature::from_scalars(r.to_bytes(), (-s).to_bytes()).expect("r and n - s");
        assert_ne!(twin, signature);
        let twin = format!("{message}.{}", b64(&twin.to_bytes()));
        // A bearer token judged by what it says: both name the same player (module docs).
        assert_eq!(passes().check(&text, NOW), Ok(player("player-1")));
        assert_eq!(passes().check(&twin, NOW), Ok(player("player-1")));
    }

    #[test]
    fn what_is_not_a_compact_jws_is_malformed() {
        let good = pass(&claims());
        let passes = passes();
        let long = format!("{good}{}", "A".repeat(MAX_PASS_LEN));
        assert_eq!(
            passes.check(&long, NOW),
            Err(Malformed("longer than 4096 bytes"))
        );
        let three = Malformed("not three parts separated by dots (a compact JWS)");
        assert_eq!(passes.check("a.b", NOW), Err(three.clone()));
        assert_eq!(passes.check(&format!("{good}.x"), NOW), Err(three.clone()));
        assert_eq!(passes.check("", NOW), Err(three));
        let (header, rest) = good.split_once('.').expect("parts");
        assert_eq!(
            passes.check(&format!("{header}=.{rest}"), NOW),
            Err(Malformed("its header is not base64url"))
        );
        assert_eq!(
            passes.check(&format!("{good}+"), NOW),
            Err(Malformed("its signature is not base64url"))
        );
        let not_json = format!("{}.{rest}", b64(b"[1]"));
        assert_eq!(
            passes.check(&not_json, NOW),
            Err(Malformed(
                "its header is not a JSON object, each parameter once"
            ))
        );
        // A parameter twice (RFC 7515 section 4: refuse or take the last; refused).
        let twice = br#"{"alg":"none","alg":"EdDSA","kid":"ed25519-1"}"#;
        assert_eq!(
            passes.check(&format!("{}.{rest}", b64(twice)), NOW),
            Err(Malformed(
                "its header is not a JSON object, each parameter once"
            ))
        );
        // Unknown critical extensions, e.g. RFC 7797's unencoded payload.
        let crit = compact(
            &json!({"alg": "EdDSA", "kid": "ed25519-1", "b64": false, "crit": ["b64"]}),
            &claims(),
            Some((&ed25519(), Algorithm::EdDSA)),
        );
        assert!(matches!(passes.check(&crit, NOW), Err(Invalid(r)) if r.contains("crit")));
        // A claim twice, signed.
        let header = b64(json!({"alg": "EdDSA", "kid": "ed25519-1"})
            .to_string()
            .as_bytes());
        let payload = b64(format!(
            r#"{{"sub":"player-2","sub":"player-1","iss":"{ISSUER}","aud":"{AUDIENCE}","exp":{}}}"#,
            NOW + 60
        )
        .as_bytes());
        let message = format!("{header}.{payload}");
        let signature =
            jsonwebtoken::crypto::sign(message.as_bytes(), &ed25519(), Algorithm::EdDSA)
                .expect("signed");
        assert_eq!(
            passes.check(&format!("{message}.{signature}"), NOW),
            Err(Malformed(
                "its payload is not a JSON object, each claim once"
            ))
        );
    }

    #[test]
    fn the_subject_must_be_a_player_id() {
        let not_an_id =
            Invalid("the pass's subject is not a player id: 1 to 64 printable ASCII characters");
        for sub in [
            json!(""),
            json!("two words"),
            json!("x".repeat(65)),
            json!("é"),
            json!(42),
        ] {
            assert_eq!(
                passes().check(&pass(&with(json!({"sub": sub}))), NOW),
                Err(not_an_id.clone()),
                "{sub}"
            );
        }
        assert_eq!(
            passes().check(&pass(&with(json!({"sub": null}))), NOW),
            Err(Invalid("it has no sub"))
        );
        let id = "auth0|5f7c8ec7c33c6c004bbafe82";
        assert_eq!(
            passes().check(&pass(&with(json!({"sub": id}))), NOW),
            Ok(player(id))
        );
    }
}
