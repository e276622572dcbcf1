//! The key ring that seals and opens state tokens: key ids, the active (sealing) key,
//! and parsing keys from configuration.
//!
//! Configuration text holds one key per entry, `<id>:<64 hex digits>`, entries separated
//! by commas or new lines; `#` starts a comment. Ids are 0..=255. The first entry is the
//! sealing key unless another is named; every key opens. So a key rotates without
//! downtime: add the new key second everywhere, then list it first, then drop the old.
//!
//! The ring also keys the pseudonyms under which the match store counts a client's
//! invite code misses ([`KeyRing::pseudonym`]): replicas sharing the ring give a client
//! the same pseudonym, and the store cannot turn one back into an address.

use std::fmt;

use aes_gcm_siv::Aes256GcmSiv;
use aes_gcm_siv::aead::KeyInit;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// A key ring problem found while reading configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyRingError {
    #[error("key entry {entry}: {reason}")]
    BadEntry { entry: usize, reason: &'static str },
    #[error("key id {0} appears twice")]
    DuplicateId(u8),
    #[error("no key given")]
    Empty,
    #[error("the active key id {0} is not in the ring")]
    UnknownActive(u8),
    #[error("the system random generator failed")]
    Random,
}

/// Keys that open tokens, one of which seals them.
#[derive(Clone)]
pub struct KeyRing {
    keys: Vec<(u8, Aes256GcmSiv)>,
    active: usize,
    ephemeral: bool,
    /// HMAC-SHA-256 keyed with a key derived from the sealing key ([`PSEUDONYMS`]).
    pseudonyms: Hmac<Sha256>,
}

/// What the pseudonyms' key is derived with: HKDF-SHA-256 (RFC 5869, the `hkdf`
/// crate) of the sealing key, with these bytes as its info (so a pseudonym is no
/// function of the sealing key an attacker could use on tokens, and another use of the
/// key would derive with other bytes).
const PSEUDONYMS: &[u8] = b"allfives client pseudonyms v1";

/// Bytes in a pseudonym ([`KeyRing::pseudonym`]).
pub const PSEUDONYM_LEN: usize = 16;

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print key material.
        f.debug_struct("KeyRing")
            .field("ids", &self.ids().collect::<Vec<_>>())
            .field("active", &self.active_id())
            .field("ephemeral", &self.ephemeral)
            .finish()
    }
}

/// Where the active key of a ring of `keys` stands: the one `active` names, else the
/// first. Refused if the ring is empty, names one id twice, or has no key `active`.
/// The result key ring (`crate::results::keys`) holds to the same rules.
pub fn active_entry(keys: &[(u8, [u8; 32])], active: Option<u8>) -> Result<usize, KeyRingError> {
    if keys.is_empty() {
        return Err(KeyRingError::Empty);
    }
    for (i, (id, _)) in keys.iter().enumerate() {
        if keys[..i].iter().any(|(other, _)| other == id) {
            return Err(KeyRingError::DuplicateId(*id));
        }
    }
    match active {
        None => Ok(0),
        Some(id) => keys
            .iter()
            .position(|(k, _)| *k == id)
            .ok_or(KeyRingError::UnknownActive(id)),
    }
}

impl KeyRing {
    /// A ring of `(id, key)`; `active` names the sealing key (default: the first).
    pub fn new(keys: Vec<(u8, [u8; 32])>, active: Option<u8>) -> Result<KeyRing, KeyRingError> {
        let active = active_entry(&keys, active)?;
        let mut derived = [0u8; 32];
        hkdf::Hkdf::<Sha256>::new(None, &keys[active].1)
            .expand(PSEUDONYMS, &mut derived)
            .expect("32 bytes is a valid HKDF-SHA-256 length");
        let pseudonyms = hmac(&derived);
        let keys = keys
            .into_iter()
            .map(|(id, key)| (id, Aes256GcmSiv::new(&key.into())))
            .collect();
        Ok(KeyRing {
            keys,
            active,
            ephemeral: false,
            pseudonyms,
        })
    }

    /// A ring of one random key, under a random id, that lives as long as the process:
    /// tokens it seals do not survive a restart and are not accepted by other replicas.
    /// The random id makes such a token refused as sealed by a key the server does not
    /// hold (`TOKEN_UNKNOWN_KEY`, 255 times in 256), as it was, rather than as altered.
    pub fn ephemeral() -> Result<KeyRing, KeyRingError> {
        let mut key = [0u8; 33];
        // Straight from the operating system, not the per-thread nonce generator.
        getrandom::fill(&mut key).map_err(|_| KeyRingError::Random)?;
        let [id, key @ ..] = key;
        let mut ring = KeyRing::new(vec![(id, key)], None)?;
        ring.ephemeral = true;
        Ok(ring)
    }

    /// Parses configuration text (see the module docs).
    pub fn parse(text: &str, active: Option<u8>) -> Result<KeyRing, KeyRingError> {
        KeyRing::new(parse_entries(text)?, active)
    }

    /// The id of the sealing key.
    pub fn active_id(&self) -> u8 {
        self.keys[self.active].0
    }

    /// Every key id, the sealing one first.
    pub fn ids(&self) -> impl Iterator<Item = u8> + '_ {
        let active = self.active_id();
        std::iter::once(active).chain(
            self.keys
                .iter()
                .map(|(id, _)| *id)
                .filter(move |id| *id != active),
        )
    }

    /// Whether this is a random key made at start (see [`KeyRing::ephemeral`]).
    pub fn is_ephemeral(&self) -> bool {
        self.ephemeral
    }

    /// A pseudonym of `what` (a client's address: `store::invites::ClientKey`): the
    /// first 16 bytes of HMAC-SHA-256 under a key derived from the sealing key (HKDF). The same
    /// on every replica holding the same sealing key; without the ring, no address can
    /// be tested against it (not even by trying all 2^32 IPv4 addresses).
    pub fn pseudonym(&self, what: &[u8]) -> [u8; PSEUDONYM_LEN] {
        let mut mac = self.pseudonyms.clone();
        mac.update(what);
        let digest = mac.finalize().into_bytes();
        let mut out = [0u8; PSEUDONYM_LEN];
        out.copy_from_slice(&digest[..PSEUDONYM_LEN]);
        out
    }

    pub(crate) fn active(&self) -> (u8, &Aes256GcmSiv) {
        let (id, cipher) = &self.keys[self.active];
        (*id, cipher)
    }

    pub(crate) fn get(&self, id: u8) -> Option<&Aes256GcmSiv> {
        self.keys.iter().find(|(k, _)| *k == id).map(|(_, c)| c)
    }
}

/// HMAC-SHA-256 keyed with `key` (any length: it cannot fail).
fn hmac(key: &[u8]) -> Hmac<Sha256> {
    <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key")
}

/// The `(id, key)` entries of configuration text (see the module docs), in order; the
/// result key ring (`crate::results::keys`) is written the same way.
pub fn parse_entries(text: &str) -> Result<Vec<(u8, [u8; 32])>, KeyRingError> {
    let mut keys = Vec::new();
    let entries = text
        .split(['\n', ','])
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|entry| !entry.is_empty());
    for (i, entry) in entries.enumerate() {
        let bad = |reason| KeyRingError::BadEntry {
            entry: i + 1,
            reason,
        };
        let (id, hex) = entry
            .split_once(':')
            .ok_or(bad("expected <id>:<64 hex digits>"))?;
        let id: u8 = id
            .trim()
            .parse()
            .map_err(|_| bad("the id must be a number 0..=255"))?;
        let key = parse_hex_key(hex.trim()).ok_or(bad("the key must be 64 hex digits"))?;
        keys.push((id, key));
    }
    Ok(keys)
}

fn parse_hex_key(hex: &str) -> Option<[u8; 32]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut key = [0u8; 32];
    for (slot, pair) in key.iter_mut().zip(bytes.chunks_exact(2)) {
        *slot = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const K1: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    const K2: &str = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

    #[test]
    fn parses_entries_with_comments_and_picks_the_first_as_active() {
        let ring = KeyRing::parse(&format!("# keys\n1:{K1}\n2:{K2} # new\n"), None).unwrap();
        assert_eq!(ring.ids().collect::<Vec<_>>(), vec![1, 2]);
        let ring = KeyRing::parse(&format!("1:{K1},2:{K2}"), Some(2)).unwrap();
        assert_eq!(ring.active_id(), 2);
        assert_eq!(ring.ids().collect::<Vec<_>>(), vec![2, 1]);
        assert!(
            !format!("{ring:?}").contains("0a0b"),
            "no key material in Debug"
        );
    }

    #[test]
    fn refuses_bad_configuration() {
        assert_eq!(KeyRing::parse("", None).unwrap_err(), KeyRingError::Empty);
        assert!(matches!(
            KeyRing::parse("1", None),
            Err(KeyRingError::BadEntry { entry: 1, .. })
        ));
        assert!(matches!(
            KeyRing::parse(&format!("x:{K1}"), None),
            Err(KeyRingError::BadEntry { .. })
        ));
        assert!(matches!(
            KeyRing::parse("1:abcd", None),
            Err(KeyRingError::BadEntry { .. })
        ));
        assert!(matches!(
            KeyRing::parse(&format!("1:{K1}0"), None),
            Err(KeyRingError::BadEntry { .. })
        ));
        let zz = format!("1:zz{}", &K1[2..]);
        assert!(matches!(
            KeyRing::parse(&zz, None),
            Err(KeyRingError::BadEntry { .. })
        ));
        assert_eq!(
            KeyRing::parse(&format!("1:{K1},1:{K2}"), None).unwrap_err(),
            KeyRingError::DuplicateId(1)
        );
        assert_eq!(
            KeyRing::parse(&format!("1:{K1}"), Some(3)).unwrap_err(),
            KeyRingError::UnknownActive(3)
        );
    }

    /// A pseudonym's bytes, pinned: replicas of two releases share the match store's
    /// counts under them, so a change of the crates under them must not move them. The
    /// expected bytes are HKDF-SHA-256 (RFC 5869) then HMAC-SHA-256 computed apart from
    /// this code.
    #[test]
    fn a_pseudonym_is_pinned() {
        let ring = KeyRing::parse(&format!("1:{K1}"), None).unwrap();
        assert_eq!(
            ring.pseudonym(&[4, 198, 51, 100, 7]),
            [
                0x16, 0xc5, 0xb6, 0x52, 0x8d, 0xf6, 0x97, 0x60, 0x01, 0x76, 0x22, 0x33, 0xe3, 0xab,
                0xf3, 0x29
            ]
        );
    }

    #[test]
    fn pseudonyms_follow_the_sealing_key_alone() {
        let one = KeyRing::parse(&format!("1:{K1}"), None).unwrap();
        let rotating = KeyRing::parse(&format!("1:{K1},2:{K2}"), None).unwrap();
        let rotated = KeyRing::parse(&format!("1:{K1},2:{K2}"), Some(2)).unwrap();
        let address = [4, 198, 51, 100, 7];
        // A key added beside the sealing key changes nothing; another sealing key does.
        assert_eq!(one.pseudonym(&address), rotating.pseudonym(&address));
        assert_ne!(one.pseudonym(&address), rotated.pseudonym(&address));
        assert_ne!(
            one.pseudonym(&address),
            one.pseudonym(&[4, 198, 51, 100, 8])
        );
        // Not the address, nor a plain hash of it: derived from the key.
        let plain = <Hmac<Sha256> as KeyInit>::new_from_slice(&[]).unwrap();
        let mut plain = plain.chain_update(address).finalize().into_bytes().to_vec();
        plain.truncate(PSEUDONYM_LEN);
        assert_ne!(one.pseudonym(&address).to_vec(), plain);
    }

    #[test]
    fn an_ephemeral_ring_has_one_random_key() {
        let ring = KeyRing::ephemeral().unwrap();
        assert!(ring.is_ephemeral());
        assert_eq!(ring.ids().count(), 1);
    }

    /// A token from before a restart (another random key) is refused as sealed by an
    /// unknown key, not as altered: the key ids differ but one time in 256.
    #[test]
    fn a_restarted_ephemeral_ring_does_not_know_the_old_key() {
        let ids: std::collections::HashSet<u8> = (0..64)
            .map(|_| KeyRing::ephemeral().unwrap().active_id())
            .collect();
        assert!(ids.len() > 32, "random ids: {ids:?}");
        let before = KeyRing::ephemeral().unwrap();
        let token = super::super::token::seal(&before, &[1, 2, 3]).unwrap();
        let after = loop {
            let ring = KeyRing::ephemeral().unwrap();
            if ring.active_id() != before.active_id() {
                break ring;
            }
        };
        assert_eq!(
            super::super::token::open(&after, &token).unwrap_err(),
            super::super::token::TokenError::UnknownKey(before.active_id())
        );
    }
}
