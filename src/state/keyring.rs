//! The key ring that seals and opens state tokens: key ids, the active (sealing) key,
//! and parsing keys from configuration.
//!
//! Configuration text holds one key per entry, `<id>:<64 hex digits>`, entries separated
//! by commas or new lines; `#` starts a comment. Ids are 0..=255. The first entry is the
//! sealing key unless another is named; every key opens. So a key rotates without
//! downtime: add the new key second everywhere, then list it first, then drop the old.

use std::fmt;

use aes_gcm_siv::Aes256GcmSiv;
use aes_gcm_siv::aead::KeyInit;

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
}

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

impl KeyRing {
    /// A ring of `(id, key)`; `active` names the sealing key (default: the first).
    pub fn new(keys: Vec<(u8, [u8; 32])>, active: Option<u8>) -> Result<KeyRing, KeyRingError> {
        if keys.is_empty() {
            return Err(KeyRingError::Empty);
        }
        for (i, (id, _)) in keys.iter().enumerate() {
            if keys[..i].iter().any(|(other, _)| other == id) {
                return Err(KeyRingError::DuplicateId(*id));
            }
        }
        let active = match active {
            None => 0,
            Some(id) => keys
                .iter()
                .position(|(k, _)| *k == id)
                .ok_or(KeyRingError::UnknownActive(id))?,
        };
        let keys = keys
            .into_iter()
            .map(|(id, key)| (id, Aes256GcmSiv::new(&key.into())))
            .collect();
        Ok(KeyRing {
            keys,
            active,
            ephemeral: false,
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
        KeyRing::new(keys, active)
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

    pub(crate) fn active(&self) -> (u8, &Aes256GcmSiv) {
        let (id, cipher) = &self.keys[self.active];
        (*id, cipher)
    }

    pub(crate) fn get(&self, id: u8) -> Option<&Aes256GcmSiv> {
        self.keys.iter().find(|(k, _)| *k == id).map(|(_, c)| c)
    }
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
