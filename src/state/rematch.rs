//! A rematch: the match that follows a finished one at the same table, the same for
//! every seat that asks for it (`Rematch`). Its match id, secret, seed and every
//! seat's credential are derived from the finished match's secret by HKDF-SHA-256
//! (RustCrypto's `hkdf`), so each seated player who asks makes the same new match
//! (the same state, `state_id` included: a match store takes the second ask as a
//! retry) and gets its own seat's credential, without the server keeping anything.
//! Keyed with the finished match's secret, which no player knows, none of it can be
//! worked out by a player: not the seed (the hands), not another seat's credential.

use hkdf::Hkdf;
use sha2::Sha256;

use super::lineage::ID_LEN;
use super::plaintext::{MATCH_ID_LEN, MatchId};
use super::seats::{CREDENTIAL_LEN, Credential};

/// The rematch of a finished match: what makes it, but for the rules and the seats,
/// which it takes from the finished match.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Rematch {
    pub match_id: MatchId,
    /// The rematch's own secret (its state ids', its claims' and its own rematch's).
    pub secret: [u8; ID_LEN],
    pub seed: u64,
}

/// Secrets are never printed, not even in a debug line.
impl std::fmt::Debug for Rematch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rematch({})", self.match_id)
    }
}

/// The rematch of the match whose secret is `secret`.
pub fn derive(secret: &[u8; ID_LEN]) -> Rematch {
    let hk = Hkdf::<Sha256>::new(None, secret);
    let mut okm = [0u8; MATCH_ID_LEN + ID_LEN + 8];
    // 48 bytes is far below HKDF-SHA-256's limit (255 x 32): this cannot fail.
    hk.expand(b"allfives rematch v1", &mut okm)
        .expect("48 bytes is a valid HKDF length");
    let (id, rest) = okm.split_at(MATCH_ID_LEN);
    let (own, seed) = rest.split_at(ID_LEN);
    let mut match_id = [0u8; MATCH_ID_LEN];
    match_id.copy_from_slice(id);
    let mut own_secret = [0u8; ID_LEN];
    own_secret.copy_from_slice(own);
    let mut seed_bytes = [0u8; 8];
    seed_bytes.copy_from_slice(seed);
    Rematch {
        match_id: MatchId(match_id),
        secret: own_secret,
        seed: u64::from_le_bytes(seed_bytes),
    }
}

impl Rematch {
    /// The credential of `seat` in the rematch (a human seat of the finished match).
    pub fn credential(&self, seat: usize) -> Credential {
        let hk = Hkdf::<Sha256>::new(None, &self.secret);
        let seat = [u8::try_from(seat).unwrap_or(u8::MAX)];
        let mut credential = [0u8; CREDENTIAL_LEN];
        let info: [&[u8]; 2] = [b"allfives rematch seat v1", &seat];
        // 16 bytes is far below HKDF-SHA-256's limit: this cannot fail.
        hk.expand_multi_info(&info, &mut credential)
            .expect("16 bytes is a valid HKDF length");
        credential
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rematch_is_a_function_of_the_finished_matchs_secret() {
        let a = derive(&[1; ID_LEN]);
        assert_eq!(a, derive(&[1; ID_LEN]));
        let b = derive(&[2; ID_LEN]);
        assert_ne!(a.match_id, b.match_id);
        assert_ne!(a.secret, b.secret);
        assert_ne!(a.seed, b.seed);
        // Its own secret is not the finished match's, so its own rematch is another.
        assert_ne!(a.secret, [1; ID_LEN]);
        assert_ne!(derive(&a.secret).match_id, a.match_id);
        // Each seat its own credential, none of them the secret's bytes.
        let seats: Vec<Credential> = (0..4).map(|s| a.credential(s)).collect();
        for (i, c) in seats.iter().enumerate() {
            assert_eq!(*c, a.credential(i));
            assert_ne!(c[..], a.secret[..]);
            for d in &seats[i + 1..] {
                assert_ne!(c, d);
            }
        }
        assert_ne!(a.credential(0), b.credential(0));
    }

    /// A rematch's bytes, pinned: every seated player who asks, on any replica and
    /// release, must make the same rematch. The expected bytes are HKDF-SHA-256 (RFC
    /// 5869) computed apart from this code.
    #[test]
    fn a_rematch_is_pinned() {
        let a = derive(&[1; ID_LEN]);
        assert_eq!(
            a.match_id.0,
            [
                0xcc, 0xe6, 0x1b, 0xaf, 0x4f, 0x45, 0x43, 0xd8, 0x74, 0xe5, 0x05, 0x91, 0x4b, 0xbd,
                0x89, 0x19
            ]
        );
        assert_eq!(
            a.secret,
            [
                0x26, 0xad, 0xa7, 0x19, 0x75, 0xf0, 0xbb, 0x1a, 0x45, 0xcc, 0x2f, 0x78, 0x7f, 0x43,
                0x83, 0x79
            ]
        );
        assert_eq!(a.seed, 0x54d3_47d7_29f5_8f21);
        assert_eq!(
            a.credential(3),
            [
                0x8c, 0xd2, 0x74, 0x04, 0x79, 0x13, 0x55, 0x81, 0xf2, 0x62, 0xbe, 0xe5, 0xf9, 0xe2,
                0xd9, 0x2d
            ]
        );
    }
}
