//! The seats' display names: chosen by each seat's player when the seat is claimed
//! (NewGame's `SeatSetup.display_name`, `ClaimSeatRequest.display_name`), carried in
//! the token (`State.names`) and shown to everyone in `GameView.seats`. Public, as a
//! name at a real table is, so the bytes they add to a token tell nothing hidden.
//!
//! What a name may hold is bounded here: at most [`MAX_NAME_BYTES`] bytes of UTF-8
//! (the token's largest size grows by at most four of them), no control characters
//! and no line or paragraph separators (a name is one line of text), no bidirectional
//! formatting characters (an override could make a name read as another, or reorder
//! the text around it where a client shows it), no invisible characters that would
//! let a name look empty or like another's (zero-width spaces and joiners' kin, the
//! soft hyphen, word joiner, byte-order mark, tag characters, blank-looking fillers),
//! no more than two combining marks in a row (a stack of them spills over the text
//! around it), something visible, and no space at either end.

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

/// Characters that show nothing, or look like a space, though they are not one: a
/// name made of them would look empty, or like another name.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}' // soft hyphen
            | '\u{034F}' // combining grapheme joiner
            | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' // Hangul fillers
            | '\u{17B4}' | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}' // zero-width space (ZWNJ and ZWJ, U+200C and U+200D, are letters' business)
            | '\u{2028}' | '\u{2029}' // line and paragraph separators
            | '\u{2060}'..='\u{2064}'
            | '\u{2800}' // braille blank
            | '\u{FE00}'..='\u{FE0F}' // variation selectors: only after an emoji (below)
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E007F}' // tags
            | '\u{E0100}'..='\u{E01EF}'
    )
}

/// The combining marks that stack above or below a letter (the Thai and other
/// scripts' vowel and tone signs, at most two on a letter, are not counted).
fn combining(c: char) -> bool {
    matches!(
        c,
        '\u{0300}'..='\u{036F}'
            | '\u{0483}'..='\u{0489}'
            | '\u{1AB0}'..='\u{1AFF}'
            | '\u{1DC0}'..='\u{1DFF}'
            | '\u{20D0}'..='\u{20FF}'
            | '\u{FE20}'..='\u{FE2F}'
    )
}

/// Why a display name is refused; `None`: it may be shown.
pub fn refusal(name: &str) -> Option<&'static str> {
    let mut marks = 0;
    let mut previous = ' ';
    for c in name.chars() {
        marks = if combining(c) { marks + 1 } else { 0 };
        if marks > 2 {
            return Some("a display name has at most two combining marks in a row");
        }
        // A variation selector picks an emoji's look: after a symbol, never alone.
        if ('\u{FE00}'..='\u{FE0F}').contains(&c)
            && !previous.is_alphanumeric()
            && (previous as u32) >= 0x2000
        {
            previous = c;
            continue;
        }
        if invisible(c) {
            return Some("a display name holds no invisible characters");
        }
        previous = c;
    }
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
        // Two combining marks on a letter, an emoji with its variation selector.
        assert_eq!(refusal("Ngo\u{0302}\u{0301}"), None);
        assert_eq!(refusal("Ana \u{2764}\u{FE0F}"), None);
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
            "Ana\u{2028}Bob".into(),
            "A\u{200B}na".into(),
            "\u{3164}".into(),
            "Ana\u{00AD}".into(),
            "\u{FEFF}Ana".into(),
            "Ana\u{E0041}".into(),
            "A\u{0300}\u{0301}\u{0302}".into(),
            "A\u{FE0F}".into(),
        ];
        for name in &refused {
            assert!(refusal(name).is_some(), "{name:?}");
        }
    }
}
