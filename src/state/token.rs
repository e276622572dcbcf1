//! Sealing and opening the bytes of a state token.
//!
//! A token is `version (1 byte) | key id (1 byte) | nonce (12 bytes) | ciphertext | tag
//! (16 bytes)`, sealed with AES-256-GCM-SIV (RFC 8452) by RustCrypto's `aes-gcm-siv`
//! crate. The version and key id are bound to the ciphertext as associated data, so no
//! byte of a token can change unnoticed.
//!
//! Nonces are random, 96 bits, from `rand`'s `ThreadRng` (a ChaCha12 generator per
//! thread, seeded by the operating system: [`super::random`]). That is safe for any number of tokens a key
//! will ever seal: AES-GCM-SIV derives a fresh key for every nonce, and it is
//! nonce-misuse resistant: even two tokens that happened to get the same nonce (odds
//! about 2^-33 after four billion tokens, and an even chance only near 2^48) would
//! show no more than whether their games are identical, with no loss of authenticity.
//!
//! Format history (the version names the framing and the plaintext together):
//! version 1 was XChaCha20-Poly1305 with 24-byte nonces (42 bytes of framing); version
//! 2 took AES-256-GCM-SIV and 30 bytes, with the table itself as the plaintext; version
//! 3 kept version 2's framing and cipher around the scorekeeper's record of the match
//! ([`super::plaintext`]); version 4 adds the seats, their credentials, the match's
//! secret and the previous state's id to that record; version 5 adds turn clocks, the
//! absence option, seats a bot holds and forfeits; version 6 adds the player ids of
//! seats whose player showed a studio's pass. This build reads versions 4 to 6 and
//! writes the oldest a match's fields fit in (4 for one with no clock, absence option,
//! held seat, forfeit or pass; 5 for one with no pass), so that during a rolling
//! upgrade a replica of the release before reads every match it could; a match that
//! needs version 6 gets it, which that replica refuses as
//! [`TokenError::UnsupportedVersion`] (docs/compatibility.md) rather than re-seal it
//! without its player ids. Tokens of versions 1 to 3 are refused the same way
//! (docs/operations.md, "Upgrading").

use aes_gcm_siv::aead::AeadInOut;
use aes_gcm_siv::aead::inout::InOutBuf;

use super::keyring::KeyRing;

/// The newest token format this build writes and reads (players' passes).
pub const TOKEN_VERSION: u8 = 6;
/// The format before passes (turn clocks, absences), which this build writes for a
/// match whose seats hold none.
pub const BEFORE_PASSES: u8 = 5;
/// The format before clocks, which this build writes for a match without any.
pub const BEFORE_CLOCKS: u8 = 4;
/// The formats this build reads.
pub const READS: std::ops::RangeInclusive<u8> = BEFORE_CLOCKS..=TOKEN_VERSION;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
const HEADER_LEN: usize = 2 + NONCE_LEN;
/// Bytes a token adds to its plaintext.
pub const OVERHEAD: usize = HEADER_LEN + TAG_LEN;
/// Longest token accepted; anything longer is refused before any work.
pub const MAX_TOKEN_LEN: usize = 1280;

/// Why a token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the state token is empty, truncated or too long")]
    Malformed,
    #[error("the state token has format version {0}, which this server does not read")]
    UnsupportedVersion(u8),
    #[error("the state token was sealed with key id {0}, which this server does not hold")]
    UnknownKey(u8),
    #[error("the state token failed authentication: it was altered or not made by this service")]
    Invalid,
    #[error("the state token holds a game this server cannot accept")]
    Corrupt,
    #[error("the system random generator failed")]
    Random,
}

/// Seals `plaintext` under the ring's active key, as the newest version.
pub fn seal(ring: &KeyRing, plaintext: &[u8]) -> Result<Vec<u8>, TokenError> {
    seal_with(ring, TOKEN_VERSION, plaintext.len(), |buf| {
        buf.extend_from_slice(plaintext)
    })
}

/// Seals the plaintext `write` appends to the buffer it is given, encrypted where it
/// was written: the token is built in one buffer, with no copy of the plaintext.
/// `capacity` is a hint of the plaintext's length; `version` is the format it is in.
pub fn seal_with(
    ring: &KeyRing,
    version: u8,
    capacity: usize,
    write: impl FnOnce(&mut Vec<u8>),
) -> Result<Vec<u8>, TokenError> {
    let (id, cipher) = ring.active();
    let mut nonce = [0u8; NONCE_LEN];
    super::random::fill(&mut nonce);
    let mut token = Vec::with_capacity(OVERHEAD + capacity);
    token.extend_from_slice(&[version, id]);
    token.extend_from_slice(&nonce);
    write(&mut token);
    let (header, body) = token.split_at_mut(HEADER_LEN);
    // Refused only past the cipher's length limit (2^36 bytes): never for a plaintext.
    let tag = cipher
        .encrypt_inout_detached(&nonce.into(), &header[..2], body.into())
        .map_err(|_| TokenError::Malformed)?;
    token.extend_from_slice(&tag);
    Ok(token)
}

/// Opens a token sealed by any key of the ring, returning the plaintext.
pub fn open(ring: &KeyRing, token: &[u8]) -> Result<Vec<u8>, TokenError> {
    open_with(ring, token, |_, plaintext| plaintext.to_vec())
}

/// Opens a token sealed by any key of the ring and hands its plaintext to `read`,
/// decrypted into a buffer on the stack (nothing allocated), with its version.
/// `read` sees only a plaintext that passed authentication.
pub fn open_with<T>(
    ring: &KeyRing,
    token: &[u8],
    read: impl FnOnce(u8, &[u8]) -> T,
) -> Result<T, TokenError> {
    open_reading(ring, token, READS, read)
}

/// [`open_with`], reading the versions `reads` only: what a build reading those
/// does with a token (a replica of the release before this one reads 4 alone).
pub fn open_reading<T>(
    ring: &KeyRing,
    token: &[u8],
    reads: std::ops::RangeInclusive<u8>,
    read: impl FnOnce(u8, &[u8]) -> T,
) -> Result<T, TokenError> {
    if token.len() < OVERHEAD || token.len() > MAX_TOKEN_LEN {
        return Err(TokenError::Malformed);
    }
    let (header, rest) = token.split_at(HEADER_LEN);
    if !reads.contains(&header[0]) {
        return Err(TokenError::UnsupportedVersion(header[0]));
    }
    let cipher = ring
        .get(header[1])
        .ok_or(TokenError::UnknownKey(header[1]))?;
    let nonce: &[u8; NONCE_LEN] = header[2..].try_into().map_err(|_| TokenError::Malformed)?;
    let (body, tag) = rest.split_at(rest.len() - TAG_LEN);
    let tag: &[u8; TAG_LEN] = tag.try_into().map_err(|_| TokenError::Malformed)?;
    let mut plaintext = [0u8; MAX_TOKEN_LEN - OVERHEAD];
    let plaintext = &mut plaintext[..body.len()];
    cipher
        .decrypt_inout_detached(
            &(*nonce).into(),
            &header[..2],
            InOutBuf::new(body, plaintext).map_err(|_| TokenError::Malformed)?,
            &(*tag).into(),
        )
        .map_err(|_| TokenError::Invalid)?;
    Ok(read(header[0], plaintext))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(ids: &[u8], active: Option<u8>) -> KeyRing {
        let keys = ids
            .iter()
            .map(|&id| (id, [id.wrapping_mul(31).wrapping_add(7); 32]))
            .collect();
        KeyRing::new(keys, active).unwrap()
    }

    #[test]
    fn seals_and_opens_and_hides_the_plaintext() {
        let r = ring(&[1], None);
        let plaintext = b"the hands and the boneyard order";
        let token = seal(&r, plaintext).unwrap();
        assert_eq!(token.len(), plaintext.len() + OVERHEAD);
        assert!(
            !token.windows(9).any(|w| w == b"the hands"),
            "plaintext is encrypted"
        );
        assert_eq!(open(&r, &token).unwrap(), plaintext);
        assert_ne!(
            seal(&r, plaintext).unwrap(),
            token,
            "a fresh nonce every time"
        );
    }

    #[test]
    fn the_framing_is_version_key_id_nonce_ciphertext_tag() {
        let r = ring(&[9], None);
        let token = seal(&r, &[0u8; 40]).unwrap();
        assert_eq!(OVERHEAD, 30);
        assert_eq!(token.len(), 40 + 30);
        assert_eq!(token[0], TOKEN_VERSION);
        assert_eq!(token[0], 6);
        assert_eq!(token[1], 9);
        let nonces: std::collections::HashSet<Vec<u8>> = (0..1000)
            .map(|_| seal(&r, b"x").unwrap()[2..2 + NONCE_LEN].to_vec())
            .collect();
        assert_eq!(nonces.len(), 1000, "nonces do not repeat");
    }

    #[test]
    fn tokens_open_with_the_aes_gcm_siv_crate_on_its_own() {
        // The framing is plain AES-256-GCM-SIV with the header as associated data: a
        // token sealed by the crate directly opens here, and one sealed here opens
        // with it.
        use aes_gcm_siv::aead::{AeadInOut, KeyInit};
        let key = [0x42; 32];
        let r = KeyRing::new(vec![(3, key)], None).unwrap();
        let crate_cipher = aes_gcm_siv::Aes256GcmSiv::new(&key.into());
        let plaintext = b"a game sealed by the crate".to_vec();
        let nonce = [0x17; NONCE_LEN];
        let mut token = vec![TOKEN_VERSION, 3];
        token.extend_from_slice(&nonce);
        let mut body = plaintext.clone();
        let tag = crate_cipher
            .encrypt_inout_detached(&nonce.into(), &token[..2], body.as_mut_slice().into())
            .unwrap();
        token.extend_from_slice(&body);
        token.extend_from_slice(&tag);
        assert_eq!(open(&r, &token).unwrap(), plaintext);

        let ours = seal(&r, &plaintext).unwrap();
        let (header, rest) = ours.split_at(HEADER_LEN);
        let (body, tag) = rest.split_at(rest.len() - TAG_LEN);
        let nonce: [u8; NONCE_LEN] = header[2..].try_into().unwrap();
        let tag: [u8; TAG_LEN] = tag.try_into().unwrap();
        let mut opened = body.to_vec();
        crate_cipher
            .decrypt_inout_detached(
                &nonce.into(),
                &header[..2],
                opened.as_mut_slice().into(),
                &tag.into(),
            )
            .unwrap();
        assert_eq!(opened, plaintext);
    }

    #[test]
    fn tokens_of_earlier_versions_are_refused_as_unsupported() {
        let r = ring(&[1], None);
        // The shape of a version 1 token: 2 + 24-byte nonce + ciphertext + 16-byte tag.
        let mut v1 = vec![1u8, 1];
        v1.extend_from_slice(&[0x33; 24 + 20 + 16]);
        assert_eq!(open(&r, &v1), Err(TokenError::UnsupportedVersion(1)));
        // Version 2: this framing around the older plaintext, sealed under the same key.
        let mut v2 = seal(&r, b"a table").unwrap();
        v2[0] = 2;
        assert_eq!(open(&r, &v2), Err(TokenError::UnsupportedVersion(2)));
        // Version 3: the same again, with a record that had no seats.
        let mut v3 = seal(&r, b"a record").unwrap();
        v3[0] = 3;
        assert_eq!(open(&r, &v3), Err(TokenError::UnsupportedVersion(3)));
    }

    /// A rolling upgrade: this build reads the versions before passes and before
    /// clocks; the release before this one (which read versions 4 and 5) refuses a
    /// version-6 token as a version it does not read, and takes the older ones.
    #[test]
    fn the_release_before_refuses_version_6_and_both_read_versions_4_and_5() {
        let r = ring(&[1], None);
        let v6 = seal_with(&r, TOKEN_VERSION, 1, |b| b.push(7)).unwrap();
        let v5 = seal_with(&r, BEFORE_PASSES, 1, |b| b.push(7)).unwrap();
        let v4 = seal_with(&r, BEFORE_CLOCKS, 1, |b| b.push(7)).unwrap();
        let before = |t: &[u8]| open_reading(&r, t, 4..=5, |v, p| (v, p.to_vec()));
        assert_eq!(before(&v6), Err(TokenError::UnsupportedVersion(6)));
        assert_eq!(before(&v5), Ok((5, vec![7])));
        assert_eq!(before(&v4), Ok((4, vec![7])));
        for (token, version) in [(&v4, 4), (&v5, 5), (&v6, 6)] {
            assert_eq!(
                open_with(&r, token, |v, p| (v, p.to_vec())),
                Ok((version, vec![7]))
            );
        }
    }

    #[test]
    fn the_header_is_authenticated() {
        // The version and key id are associated data: a token moved under another id
        // of a ring holding the same key under both ids is refused.
        let key = [0x42; 32];
        let r = KeyRing::new(vec![(1, key), (2, key)], None).unwrap();
        let mut token = seal(&r, b"game").unwrap();
        assert_eq!(open(&r, &token).unwrap(), b"game");
        token[1] = 2;
        assert_eq!(open(&r, &token), Err(TokenError::Invalid));
    }

    #[test]
    fn every_single_bit_flip_is_refused() {
        let r = ring(&[1, 2], None);
        let token = seal(&r, b"0123456789").unwrap();
        for i in 0..token.len() * 8 {
            let mut t = token.clone();
            t[i / 8] ^= 1 << (i % 8);
            assert!(open(&r, &t).is_err(), "bit {i}");
        }
    }

    #[test]
    fn says_why_a_token_is_refused() {
        let r = ring(&[1], None);
        let token = seal(&r, b"x").unwrap();
        assert_eq!(open(&r, &[]), Err(TokenError::Malformed));
        assert_eq!(open(&r, &token[..10]), Err(TokenError::Malformed));
        assert_eq!(
            open(&r, &token[..token.len() - 1]),
            Err(TokenError::Invalid)
        );
        assert_eq!(open(&r, &vec![1u8; 2000]), Err(TokenError::Malformed));
        let mut t = token.clone();
        t[0] = 9;
        assert_eq!(open(&r, &t), Err(TokenError::UnsupportedVersion(9)));
        let mut t = token.clone();
        t[1] = 7;
        assert_eq!(open(&r, &t), Err(TokenError::UnknownKey(7)));
        let foreign = seal(&ring(&[1], None).clone(), b"x").unwrap();
        let other = KeyRing::new(vec![(1, [0xAB; 32])], None).unwrap();
        assert_eq!(
            open(&other, &foreign),
            Err(TokenError::Invalid),
            "same id, other key"
        );
    }

    #[test]
    fn rotation_old_tokens_open_until_the_old_key_is_dropped() {
        let old = ring(&[1], None);
        let token = seal(&old, b"game").unwrap();
        let both = ring(&[1, 2], Some(2));
        assert_eq!(open(&both, &token).unwrap(), b"game");
        assert_eq!(seal(&both, b"g").unwrap()[1], 2, "the new key seals");
        let new_only = ring(&[2], None);
        assert_eq!(open(&new_only, &token), Err(TokenError::UnknownKey(1)));
    }
}
