//! A seat's player id: the subject (`sub`) of the studio's signed pass its player
//! showed when the seat was claimed (`crate::passes`), carried in the token beside the
//! seat and named in the match's signed result.
//!
//! Not public like a display name: a studio may show it to the other players or not
//! (`--show-player-ids`). So a token holds every player id padded to [`PADDED_LEN`]
//! bytes: its length says which seats hold a pass (public, `SeatStatus.pass_holder`)
//! and nothing of the ids themselves.

/// The most bytes in a player id.
pub const MAX_PLAYER_ID_LEN: usize = 64;
/// Bytes a player id takes in a token, whatever its length.
pub const PADDED_LEN: usize = MAX_PLAYER_ID_LEN;

/// A player id: 1 to 64 printable ASCII characters, no space (`!` to `~`), as the
/// subjects of the common identity providers are (numbers, UUIDs, `auth0|…`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PlayerId(String);

impl PlayerId {
    /// `text` as a player id, if it is one.
    pub fn new(text: &str) -> Option<PlayerId> {
        let ok = (1..=MAX_PLAYER_ID_LEN).contains(&text.len())
            && text.bytes().all(|b| b.is_ascii_graphic());
        ok.then(|| PlayerId(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id padded with zero bytes to [`PADDED_LEN`], as a token holds it.
    pub fn padded(&self) -> [u8; PADDED_LEN] {
        let mut out = [0; PADDED_LEN];
        out[..self.0.len()].copy_from_slice(self.0.as_bytes());
        out
    }

    /// The id a token's [`PADDED_LEN`] bytes hold, if they hold one.
    pub fn unpadded(bytes: &[u8]) -> Option<PlayerId> {
        if bytes.len() != PADDED_LEN {
            return None;
        }
        let len = bytes.iter().position(|&b| b == 0).unwrap_or(PADDED_LEN);
        if bytes[len..].iter().any(|&b| b != 0) {
            return None;
        }
        PlayerId::new(std::str::from_utf8(&bytes[..len]).ok()?)
    }
}

/// Shown in full: a player id is no secret from the operator's logs (a credential is).
impl std::fmt::Debug for PlayerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PlayerId({:?})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_player_id_is_1_to_64_printable_ascii_and_pads_both_ways() {
        for bad in ["", " a", "a b", "é", "a\u{0}", &"x".repeat(65)] {
            assert_eq!(PlayerId::new(bad), None, "{bad:?}");
        }
        for good in ["1", "auth0|5f7c8ec7c33c6c004bbafe82", &"~".repeat(64)] {
            let id = PlayerId::new(good).expect(good);
            assert_eq!(id.as_str(), good);
            assert_eq!(PlayerId::unpadded(&id.padded()), Some(id));
        }
        let mut bytes = PlayerId::new("ab").expect("id").padded();
        bytes[10] = b'c';
        assert_eq!(PlayerId::unpadded(&bytes), None, "bytes after the padding");
        assert_eq!(PlayerId::unpadded(&[0; PADDED_LEN]), None, "empty");
        assert_eq!(PlayerId::unpadded(&[b'a'; 63]), None, "short");
    }
}
