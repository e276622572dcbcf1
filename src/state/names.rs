//! The seats' display names: chosen by each seat's player when the seat is claimed
//! (NewGame's `SeatSetup.display_name`, `ClaimSeatRequest.display_name`), carried in
//! the token (`State.names`) and shown to everyone in `GameView.seats`. Public, as a
//! name at a real table is, so the bytes they add to a token tell nothing hidden.
//!
//! What a name may hold is bounded here: at most [`MAX_NAME_BYTES`] bytes of UTF-8
//! (the token's largest size grows by at most four of them), no control characters
//! (a name is one line of text) and no bidirectional formatting characters (an
//! override could make a name read as another, or reorder the text around it where a
//! client shows it), no space at either end.

/// The most bytes of UTF-8 in a display name.
pub const MAX_NAME_BYTES: usize = 24;

/// Every seat's display name, in seat order; empty: none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names(pub [String; 4]);

impl Names {
    /// Whether no seat has a name.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(String::is_empty)
    }
}

/// The characters that change the direction of the text around them: the Arabic
/// letter mark, the left-to-right and right-to-left marks, embeddings, overrides and
/// isolates.
fn bidirectional(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Why a display name is refused; `None`: it may be shown.
pub fn refusal(name: &str) -> Option<&'static str> {
    if name.len() > MAX_NAME_BYTES {
        Some("a display name is at most 24 bytes of UTF-8")
    } else if name.chars().any(char::is_control) {
        Some("a display name holds no control characters")
    } else if name.chars().any(bidirectional) {
        Some("a display name holds no bidirectional formatting characters")
    } else if name.trim() != name {
        Some("a display name has no space at either end")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_people_use_are_taken() {
        for name in [
            "",
            "Ana",
            "Jan de Vries",
            "Ștefan",
            "Драган",
            "สมชาย",
            "李小龙",
            "Zoë 🎲",
            "O'Brien-Smith",
        ] {
            if name.len() <= MAX_NAME_BYTES {
                assert_eq!(refusal(name), None, "{name:?}");
            }
        }
        assert_eq!(refusal(&"a".repeat(24)), None);
        // 8 Thai letters of 3 bytes each.
        assert_eq!(refusal(&"ส".repeat(8)), None);
    }

    #[test]
    fn what_could_mislead_or_break_a_table_is_refused() {
        let refused = [
            "a".repeat(25),
            "ส".repeat(9),
            "Ana\nBob".into(),
            "Ana\u{0}".into(),
            "\u{7f}".into(),
            "\u{202E}anA".into(),
            "A\u{2066}B\u{2069}".into(),
            "A\u{200F}".into(),
            "A\u{061C}".into(),
            " Ana".into(),
            "Ana ".into(),
            "\u{3000}Ana".into(),
        ];
        for name in &refused {
            assert!(refusal(name).is_some(), "{name:?}");
        }
    }
}
