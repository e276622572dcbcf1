//! The seats' display names: chosen by each seat's player when the seat is claimed
//! (NewGame's `SeatSetup.display_name`, `ClaimSeatRequest.display_name`), carried in
//! the token (`State.names`) and shown to everyone in `GameView.seats`. Public, as a
//! name at a real table is, so the bytes they add to a token tell nothing hidden.
//!
//! What a name may hold is bounded here, by Unicode's own tables (ICU4X's properties,
//! no hand-written ranges): at most [`MAX_NAME_BYTES`] bytes of UTF-8 (the token's
//! largest size grows by at most four of them); one line (no control characters, no
//! line or paragraph separators); no bidirectional formatting characters
//! (`Bidi_Control`: an override could make a name read as another, or reorder the text
//! around it where a client shows it); nothing invisible or formatting
//! (`Default_Ignorable_Code_Point` and the format characters, `Cf`: they let a name look
//! empty, or like another's, or change how the text around them shows), but for the
//! three that are part of the writing: a zero-width joiner inside an emoji sequence
//! (👨‍👩‍👧) or after a virama (Sinhala's "ශ්‍රී"), a variation selector after an
//! emoji (❤️), and a zero-width non-joiner where it changes how letters join (after a
//! joining letter, as in Persian names, or after a virama); the braille blank, which
//! shows nothing though no property says so; no more than two
//! combining marks (`Mn`, `Me`) in a row (a stack of them spills over the text around
//! it); and no space at either end.
//!
//! At one table no two names may look alike ([`look_alike`]: the same UTS #39 skeleton,
//! unicode-security's), so that neither "Aⅼice" (a Roman numeral fifty) nor a second
//! "Alice" can sit beside "Alice".

use icu_properties::props::{
    BidiControl, BinaryProperty, CanonicalCombiningClass, DefaultIgnorableCodePoint, Emoji,
    EmojiModifier, EnumeratedProperty, ExtendedPictographic, GeneralCategory, JoiningType,
};

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

    /// A seat other than `seat` whose name looks like `name` ([`look_alike`]), if any.
    pub fn alike(&self, seat: usize, name: &str) -> Option<usize> {
        (0..self.0.len()).find(|&other| other != seat && look_alike(&self.0[other], name))
    }
}

/// Whether two names would be taken for each other at a table: both given, with the
/// same UTS #39 skeleton (invisible characters dropped, each character mapped to the
/// one it is confusable with, normalized).
pub fn look_alike(a: &str, b: &str) -> bool {
    use unicode_security::confusable_detection::skeleton;
    !a.is_empty() && !b.is_empty() && skeleton(a).eq(skeleton(b))
}

/// Why a display name is refused; `None`: it may be shown.
pub fn refusal(name: &str) -> Option<&'static str> {
    if name.len() > MAX_NAME_BYTES {
        return Some("a display name is at most 24 bytes of UTF-8");
    }
    let chars: Vec<char> = name.chars().collect();
    let mut marks = 0;
    // Whether the characters so far end with an emoji (a pictograph or a skin tone,
    // with its variation selector if it has one): what a joiner may follow.
    let mut after_emoji = false;
    for (i, &c) in chars.iter().enumerate() {
        let previous = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        let category = GeneralCategory::for_char(c);
        if c.is_control()
            || matches!(
                category,
                GeneralCategory::LineSeparator | GeneralCategory::ParagraphSeparator
            )
        {
            return Some("a display name is one line: no control characters");
        }
        if BidiControl::for_char(c) {
            return Some("a display name holds no bidirectional formatting characters");
        }
        let selector = matches!(c, '\u{FE0E}' | '\u{FE0F}');
        let written = match c {
            '\u{200D}' => {
                (after_emoji && next.is_some_and(ExtendedPictographic::for_char))
                    || (previous.is_some_and(virama) && next.is_some_and(char::is_alphabetic))
            }
            '\u{200C}' => previous.is_some_and(joins) && next.is_some_and(char::is_alphabetic),
            _ => selector && previous.is_some_and(Emoji::for_char),
        };
        let invisible = DefaultIgnorableCodePoint::for_char(c)
            || category == GeneralCategory::Format
            || c == '\u{2800}';
        if invisible && !written {
            return Some("a display name holds no invisible or formatting characters");
        }
        after_emoji = ExtendedPictographic::for_char(c)
            || EmojiModifier::for_char(c)
            || (after_emoji && selector);
        marks = match category {
            GeneralCategory::NonspacingMark | GeneralCategory::EnclosingMark => marks + 1,
            _ => 0,
        };
        if marks > 2 {
            return Some("a display name has at most two combining marks in a row");
        }
    }
    if name.trim() != name {
        Some("a display name has no space at either end")
    } else {
        None
    }
}

/// Whether a zero-width non-joiner after `c` changes how the text is written: `c` is a
/// letter that joins the one after it (Arabic, Syriac, N'Ko, Mongolian...), or a
/// virama (Indic scripts: a half form instead of a conjunct).
fn joins(c: char) -> bool {
    matches!(
        JoiningType::for_char(c),
        JoiningType::DualJoining | JoiningType::LeftJoining
    ) || virama(c)
}

/// Whether `c` is a virama, after which a joiner or a non-joiner picks the form of the
/// consonants around it (Sinhala's "ශ්‍රී" is written with a joiner).
fn virama(c: char) -> bool {
    CanonicalCombiningClass::for_char(c) == CanonicalCombiningClass::Virama
}

/// Whether a name the token holds is one the service could have written: within
/// [`MAX_NAME_BYTES`], one line, no bidirectional formatting (what every version of
/// [`refusal`] refused). Every name was judged by [`refusal`] when it entered (NewGame,
/// ClaimSeat); a token's are not judged again, so that a match named before the rule
/// was tightened (issue 40) still opens.
pub fn stored(name: &str) -> bool {
    name.len() <= MAX_NAME_BYTES
        && !name
            .chars()
            .any(|c| c.is_control() || BidiControl::for_char(c))
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
        // The invisible characters that are part of the writing: joiners in emoji
        // sequences (a family, a heart on fire, a skin tone), a keycap, a non-joiner
        // in a Persian name and after a Devanagari virama, a joiner in Sinhala.
        for name in [
            "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}",
            "Ana \u{2764}\u{FE0F}\u{200D}\u{1F525}",
            "Bo \u{1F44D}\u{1F3FD}",
            "Bo \u{1F469}\u{1F3FD}\u{200D}\u{1F4BB}",
            "Bo 1\u{FE0F}\u{20E3}",
            "\u{0639}\u{0644}\u{06CC}\u{200C}\u{0631}\u{0636}\u{0627}",
            "\u{0915}\u{094D}\u{200C}\u{0937}",
            "\u{0DC1}\u{0DCA}\u{200D}\u{0DBB}\u{0DD3}",
            // Two marks of any script on a letter: Arabic harakat, Hebrew points.
            "\u{0639}\u{064E}\u{0651}\u{0644}\u{064A}",
            "\u{05E9}\u{05C1}\u{05B8}\u{05DC}",
        ] {
            assert_eq!(refusal(name), None, "{name:?}");
        }
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
            // Issue 40's: eleven Arabic harakat on one letter, three Hebrew points,
            // the deprecated format characters, a musical beam, an Egyptian joiner, an
            // Arabic number sign, a joiner hiding in "Alice", interlinear annotation.
            format!("a{}", "\u{064E}".repeat(11)),
            "\u{05E9}\u{05B0}\u{05B1}\u{05B2}".into(),
            "A\u{206A}".into(),
            "A\u{206F}".into(),
            "A\u{1D173}".into(),
            "A\u{13430}B".into(),
            "\u{0600}1".into(),
            "Al\u{200D}ice".into(),
            "Al\u{200C}ice".into(),
            "A\u{FFF9}b\u{FFFB}".into(),
            "\u{2800}".into(),
            "A\u{2800}".into(),
            // A joiner or a non-joiner must sit between what it joins.
            "\u{1F468}\u{200D}".into(),
            "\u{200D}\u{1F468}".into(),
            "A \u{1F468}\u{200D}B".into(),
            "\u{0639}\u{200C}".into(),
            // A variation selector after a letter, other selectors, a Mongolian one.
            "A\u{FE0E}".into(),
            "\u{2764}\u{FE01}".into(),
            "\u{1820}\u{180B}".into(),
            "\u{5B57}\u{E0100}".into(),
        ];
        for name in &refused {
            assert!(refusal(name).is_some(), "{name:?}");
        }
    }

    #[test]
    fn names_that_look_alike_are_told_apart_by_their_skeletons() {
        for (a, b) in [
            ("Alice", "Alice"),
            ("Alice", "A\u{217C}ice"),
            ("Alice", "Al\u{200D}ice"),
            ("Paypal", "\u{0420}aypal"),
            ("Ana", "\u{0391}na"),
            ("Zo\u{00EB}", "Zoe\u{0308}"),
        ] {
            assert!(look_alike(a, b), "{a:?} {b:?}");
        }
        for (a, b) in [("Ana", "Bob"), ("Ana", "Anna"), ("", ""), ("Ana", "")] {
            assert!(!look_alike(a, b), "{a:?} {b:?}");
        }
        let names = Names(["Alice".into(), String::new(), "Bob".into(), String::new()]);
        assert_eq!(names.alike(1, "A\u{217C}ice"), Some(0));
        assert_eq!(
            names.alike(0, "Alice"),
            None,
            "its own seat's name is not another's"
        );
        assert_eq!(names.alike(1, "Carol"), None);
        assert_eq!(names.alike(1, ""), None);
    }

    #[test]
    fn a_token_holds_any_name_the_service_could_have_written() {
        assert!(stored(""));
        assert!(stored("Al\u{200D}ice"), "judged when it entered, not again");
        assert!(!stored(&"a".repeat(25)));
        assert!(!stored("Ana\nBob"));
        assert!(!stored("\u{202E}anA"));
    }
}
