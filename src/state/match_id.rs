//! A match's id: 16 random bytes drawn when the match is made, carried in its tokens,
//! keying what the store and the search queue keep per match, and shown to clients as
//! 32 lower-case hex digits (`GameView.match_id`, `WatchRequest.match_id`, the store's
//! keys): written ([`MatchId::hex`], `Display`) and read ([`FromStr`]) here only.

use std::fmt;
use std::str::FromStr;

/// How many bytes a match id has.
pub const MATCH_ID_LEN: usize = 16;

/// A match's id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MatchId(pub [u8; MATCH_ID_LEN]);

/// A match id in hex, written on the stack: no formatting machinery and no allocation
/// (every answer's view carries one).
pub struct Hex([u8; 2 * MATCH_ID_LEN]);

impl Hex {
    pub fn as_str(&self) -> &str {
        // Only ASCII hex digits are ever written into it.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl MatchId {
    /// The id in lower-case hex.
    pub fn hex(&self) -> Hex {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 2 * MATCH_ID_LEN];
        for (pair, &b) in out.chunks_exact_mut(2).zip(&self.0) {
            pair[0] = DIGITS[usize::from(b >> 4)];
            pair[1] = DIGITS[usize::from(b & 0xf)];
        }
        Hex(out)
    }
}

impl fmt::Display for MatchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.hex().as_str())
    }
}

/// Text that is not a match id: 32 hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotAMatchId;

impl FromStr for MatchId {
    type Err = NotAMatchId;

    /// 32 hex digits, in either case.
    fn from_str(text: &str) -> Result<MatchId, NotAMatchId> {
        let bytes = text.as_bytes();
        if bytes.len() != 2 * MATCH_ID_LEN {
            return Err(NotAMatchId);
        }
        let digit = |d: u8| char::from(d).to_digit(16).ok_or(NotAMatchId);
        let mut id = [0u8; MATCH_ID_LEN];
        for (byte, pair) in id.iter_mut().zip(bytes.chunks_exact(2)) {
            // Each digit is below 16, so the pair fits a byte.
            *byte =
                u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).map_err(|_| NotAMatchId)?;
        }
        Ok(MatchId(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lower_case_two_digits_a_byte_and_reads_back() {
        let mut id = [0u8; MATCH_ID_LEN];
        id[..4].copy_from_slice(&[0x00, 0x0f, 0xa5, 0xff]);
        id[MATCH_ID_LEN - 1] = 0x10;
        let id = MatchId(id);
        let hex = id.to_string();
        assert_eq!(hex.len(), 2 * MATCH_ID_LEN);
        assert!(hex.starts_with("000fa5ff00"));
        assert!(hex.ends_with("0010"));
        assert_eq!(id.hex().as_str(), hex);
        assert_eq!(hex.parse(), Ok(id));
        assert_eq!(hex.to_uppercase().parse(), Ok(id));
        for bad in [
            "",
            &hex[1..],
            &format!("{hex}0"),
            &hex.replace('f', "g"),
            "+00fa5ff000000000000000000000010",
            "０0fa5ff0000000000000000000000010",
        ] {
            assert_eq!(bad.parse::<MatchId>(), Err(NotAMatchId), "{bad:?}");
        }
    }
}
