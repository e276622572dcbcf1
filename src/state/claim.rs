//! A repeatable claim: the credential and the new seed of a `ClaimSeat` made with a
//! claim key (`ClaimSeatRequest.claim_key`, random bytes the claimer draws and keeps
//! until the answer comes), derived from the match's secret, the seat and that key by
//! HKDF-SHA-256 (RustCrypto's `hkdf`). The same claim made again from the same token
//! with the same key then makes the same state, `state_id` included, so a match store
//! answers it as a retry instead of refusing it as a fork; a claim with another key (a
//! creator claiming the seat on the side from the same token) makes another credential
//! and another deal. Keyed with the match's secret, which no player knows, the key's
//! holder learns nothing of either without the answer.

use hkdf::Hkdf;
use sha2::Sha256;

use super::lineage::ID_LEN;
use super::seats::{CREDENTIAL_LEN, Credential};

/// The fewest bytes a claim key may have: as many as a credential, so that guessing a
/// key is no easier than guessing the credential it gives.
pub const MIN_KEY_LEN: usize = CREDENTIAL_LEN;
/// The most bytes a claim key may have.
pub const MAX_KEY_LEN: usize = 64;

/// What a claim with a key gives: the seat's credential and the match's new seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claimed {
    pub credential: Credential,
    pub seed: u64,
}

/// The credential and seed of claiming `seat` with `key` in the match whose secret is
/// `secret`.
pub fn derive(secret: &[u8; ID_LEN], seat: usize, key: &[u8]) -> Claimed {
    let hk = Hkdf::<Sha256>::new(None, secret);
    let seat = [u8::try_from(seat).unwrap_or(u8::MAX)];
    let mut okm = [0u8; CREDENTIAL_LEN + 8];
    // The info's parts: a label, the seat, then the key (the only part of varying
    // length, last, so no two claims share an info).
    let info: [&[u8]; 3] = [b"allfives claim v1", &seat, key];
    // 24 bytes is far below HKDF-SHA-256's limit (255 x 32): this cannot fail.
    hk.expand_multi_info(&info, &mut okm)
        .expect("24 bytes is a valid HKDF length");
    let mut credential = [0u8; CREDENTIAL_LEN];
    credential.copy_from_slice(&okm[..CREDENTIAL_LEN]);
    let mut seed = [0u8; 8];
    seed.copy_from_slice(&okm[CREDENTIAL_LEN..]);
    Claimed {
        credential,
        seed: u64::from_le_bytes(seed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_a_function_of_secret_seat_and_key() {
        let a = derive(&[1; ID_LEN], 0, &[7; 16]);
        assert_eq!(a, derive(&[1; ID_LEN], 0, &[7; 16]));
        assert_ne!(a, derive(&[2; ID_LEN], 0, &[7; 16]));
        assert_ne!(a, derive(&[1; ID_LEN], 1, &[7; 16]));
        assert_ne!(a, derive(&[1; ID_LEN], 0, &[8; 16]));
        assert_ne!(a, derive(&[1; ID_LEN], 0, &[7; 17]));
        assert_ne!(a.credential[..8], a.seed.to_le_bytes());
    }

    /// A claim's bytes, pinned: a claim made again (a retry, another replica, the next
    /// release) must derive the same credential and seed. The expected bytes are
    /// HKDF-SHA-256 (RFC 5869) computed apart from this code.
    #[test]
    fn a_claim_is_pinned() {
        let a = derive(&[1; ID_LEN], 2, &[7; 16]);
        assert_eq!(
            a.credential,
            [
                0x44, 0xba, 0x22, 0x8d, 0xcd, 0xf8, 0x48, 0xbf, 0x9f, 0xb0, 0x9e, 0x6d, 0xb0, 0x23,
                0x67, 0x37
            ]
        );
        assert_eq!(a.seed, 0x894e_3df6_d36e_ccd6);
    }
}
