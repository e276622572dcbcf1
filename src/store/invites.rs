//! Invite codes: a short code that a friend types on another device to find a match
//! with an open seat (`CreateInviteCode`, `OpenInviteCode`), kept in the match store.
//!
//! A code is 60 random bits written as 12 characters of Crockford's base 32
//! ("K7QM-4XPR-2D9F"): too many to guess within the misses the store allows
//! (docs/security.md, "Invite codes"). A match has one code at a time, made on its
//! first ask and kept for the code's time to live (`--invite-ttl-secs`); the codes
//! looked up in vain are counted per minute across every replica of the store, and
//! past `--invite-misses-per-minute` no code is looked up until the minute is over.
//!
//! This file holds the code's format, the rules, and the memory store's codes; the
//! Redis store keeps its own (`redis.rs`, [`super::redis::INVITE`] and
//! [`super::redis::OPEN_INVITE`]).

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use lru::LruCache;

use super::{MatchId, StoreRefusal};

/// The symbols of Crockford's base 32, by value: no I, L, O or U.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Symbols in a code: 60 bits.
pub const CODE_SYMBOLS: usize = 12;

/// How many codes a match's first ask brings, in case one is taken (as likely as
/// guessing one: [`InviteCode`]).
pub const CANDIDATES: usize = 4;

/// An invite code: 60 bits, written as 12 symbols of Crockford's base 32 in three
/// groups of four.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InviteCode(u64);

impl InviteCode {
    const BITS: u32 = 5 * CODE_SYMBOLS as u32;

    /// The code of these random bytes (their first 60 bits).
    pub fn from_random(bytes: [u8; 8]) -> InviteCode {
        InviteCode(u64::from_le_bytes(bytes) & ((1 << InviteCode::BITS) - 1))
    }

    /// A code as a person typed it: any case, hyphens and spaces anywhere, O read as
    /// 0 and I or L as 1 (Crockford's decoding); `None` unless that leaves exactly
    /// 12 symbols of the alphabet.
    pub fn parse(typed: &str) -> Option<InviteCode> {
        // A code with its separators is 14 characters; a little slack for spaces.
        if typed.len() > 32 {
            return None;
        }
        let mut value = 0u64;
        let mut symbols = 0;
        for c in typed.bytes() {
            let symbol = match c.to_ascii_uppercase() {
                b'-' | b' ' => continue,
                b'O' => b'0',
                b'I' | b'L' => b'1',
                other => other,
            };
            let digit = ALPHABET.iter().position(|&a| a == symbol)?;
            value = (value << 5) | digit as u64;
            symbols += 1;
            if symbols > CODE_SYMBOLS {
                return None;
            }
        }
        (symbols == CODE_SYMBOLS).then_some(InviteCode(value))
    }

    /// The 12 symbols without separators, as the Redis store's keys hold them.
    pub fn symbols(&self) -> [u8; CODE_SYMBOLS] {
        let mut out = [0u8; CODE_SYMBOLS];
        for (i, symbol) in out.iter_mut().enumerate() {
            let shift = 5 * (CODE_SYMBOLS - 1 - i);
            *symbol = ALPHABET[((self.0 >> shift) & 31) as usize];
        }
        out
    }
}

impl fmt::Display for InviteCode {
    /// "K7QM-4XPR-2D9F".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let symbols = self.symbols();
        for (i, group) in symbols.chunks(4).enumerate() {
            if i > 0 {
                f.write_str("-")?;
            }
            // The alphabet is ASCII.
            f.write_str(std::str::from_utf8(group).map_err(|_| fmt::Error)?)?;
        }
        Ok(())
    }
}

/// How long a code lives, and how many codes may be looked up in vain in a minute
/// (on all the replicas of a store) before every look-up is refused until the minute
/// is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InviteRules {
    pub ttl: Duration,
    pub misses_per_minute: u32,
}

/// A match's code, and the time it has left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Invite {
    pub code: InviteCode,
    pub expires_in: Duration,
}

/// The minute a time falls in, counted from the Unix epoch: the window misses are
/// counted in (the same on every replica whose clock is right).
pub fn minute_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 60)
}

/// The memory store's codes: at most as many as it holds matches (one a match).
#[derive(Debug)]
pub struct MemoryInvites {
    inner: Mutex<Inner>,
    rules: InviteRules,
}

#[derive(Debug)]
struct Inner {
    by_code: LruCache<InviteCode, KeptInvite>,
    by_match: LruCache<MatchId, KeptInvite>,
    /// The minute misses are counted in, and how many there were.
    minute: u64,
    misses: u32,
}

#[derive(Clone, Copy, Debug)]
struct KeptInvite {
    code: InviteCode,
    match_id: MatchId,
    expires: Instant,
}

impl MemoryInvites {
    pub fn new(capacity: NonZeroUsize, rules: InviteRules) -> MemoryInvites {
        MemoryInvites {
            inner: Mutex::new(Inner {
                by_code: LruCache::new(capacity),
                by_match: LruCache::new(capacity),
                minute: 0,
                misses: 0,
            }),
            rules,
        }
    }

    /// The match's live code, or the first of `candidates` that no live code is.
    pub fn invite(
        &self,
        match_id: &MatchId,
        candidates: [InviteCode; CANDIDATES],
        now: Instant,
    ) -> Result<Invite, StoreRefusal> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(kept) = inner.by_match.peek(match_id).filter(|k| k.expires > now) {
            return Ok(Invite {
                code: kept.code,
                expires_in: kept.expires - now,
            });
        }
        for code in candidates {
            if inner.by_code.peek(&code).is_some_and(|k| k.expires > now) {
                continue;
            }
            let kept = KeptInvite {
                code,
                match_id: *match_id,
                expires: now + self.rules.ttl,
            };
            // A code pushed out of one map leaves the other with it: a match's code is
            // always one that opens.
            if let Some((_, out)) = inner.by_code.push(code, kept)
                && out.code != code
                && inner
                    .by_match
                    .peek(&out.match_id)
                    .is_some_and(|k| k.code == out.code)
            {
                inner.by_match.pop(&out.match_id);
            }
            if let Some((_, out)) = inner.by_match.push(*match_id, kept)
                && out.match_id != *match_id
            {
                inner.by_code.pop(&out.code);
            }
            return Ok(Invite {
                code,
                expires_in: self.rules.ttl,
            });
        }
        Err(StoreRefusal::Unavailable(
            "every new invite code was taken".into(),
        ))
    }

    /// The match of a live code, or `None` (a miss, counted); refused once this
    /// `minute` has had as many misses as the rules allow.
    pub fn open(
        &self,
        code: &InviteCode,
        now: Instant,
        minute: u64,
    ) -> Result<Option<MatchId>, StoreRefusal> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.minute != minute {
            inner.minute = minute;
            inner.misses = 0;
        }
        if inner.misses >= self.rules.misses_per_minute {
            return Err(StoreRefusal::RateLimited);
        }
        match inner.by_code.peek(code).filter(|k| k.expires > now) {
            Some(kept) => Ok(Some(kept.match_id)),
            None => {
                inner.misses += 1;
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_reads_back_as_written_and_as_typed() {
        for bytes in [[0u8; 8], [0xff; 8], [1, 2, 3, 4, 5, 6, 7, 8]] {
            let code = InviteCode::from_random(bytes);
            let written = code.to_string();
            assert_eq!(written.len(), 14, "{written}");
            assert_eq!(InviteCode::parse(&written), Some(code));
            let typed = written.to_lowercase().replace('-', " ");
            assert_eq!(InviteCode::parse(&typed), Some(code));
            assert_eq!(InviteCode::parse(&written.replace('-', "")), Some(code));
        }
        assert_eq!(
            InviteCode::from_random([0; 8]).to_string(),
            "0000-0000-0000"
        );
        assert_eq!(
            InviteCode::from_random([0xff; 8]).to_string(),
            "ZZZZ-ZZZZ-ZZZZ"
        );
        // Crockford's readings of the letters a code never holds.
        assert_eq!(
            InviteCode::parse("OOOO-IIII-LLLL"),
            InviteCode::parse("0000-1111-1111")
        );
    }

    #[test]
    fn anything_but_twelve_symbols_of_the_alphabet_is_no_code() {
        for typed in [
            "",
            "K7QM-4XPR-2D9",
            "K7QM-4XPR-2D9FF",
            "K7QM-4XPR-2D9U",
            "K7QM_4XPR_2D9F",
            "K7QM-4XPR-2D9F\u{0}",
            "К7QM-4XPR-2D9F", // a Cyrillic K
            &"-".repeat(40),
        ] {
            assert_eq!(InviteCode::parse(typed), None, "{typed:?}");
        }
    }

    #[test]
    fn random_bytes_make_sixty_bit_codes() {
        let code = InviteCode::from_random([0xff; 8]);
        assert_eq!(code.0, (1 << 60) - 1);
    }

    const RULES: InviteRules = InviteRules {
        ttl: Duration::from_secs(900),
        misses_per_minute: 100,
    };

    fn codes(first: u8) -> [InviteCode; CANDIDATES] {
        [0, 1, 2, 3].map(|i| InviteCode::from_random([first + i; 8]))
    }

    #[test]
    fn a_match_keeps_its_code_until_it_expires() {
        let rules = InviteRules {
            ttl: Duration::from_secs(60),
            misses_per_minute: 10,
        };
        let invites = MemoryInvites::new(NonZeroUsize::new(8).expect("8"), rules);
        let now = Instant::now();
        let first = invites
            .invite(&MatchId([1; 16]), codes(10), now)
            .expect("a code");
        assert_eq!(first.code, codes(10)[0]);
        let again = invites
            .invite(&MatchId([1; 16]), codes(20), now + Duration::from_secs(10))
            .expect("the same code");
        assert_eq!(again.code, first.code);
        assert_eq!(again.expires_in, Duration::from_secs(50));
        // Another match cannot take a live code: the next candidate.
        let other = invites
            .invite(&MatchId([2; 16]), codes(10), now)
            .expect("a code");
        assert_eq!(other.code, codes(10)[1]);
        assert_eq!(
            invites.open(&first.code, now, 0),
            Ok(Some(MatchId([1; 16])))
        );
        // Expired: no longer found, and the match gets a new code.
        let later = now + Duration::from_secs(61);
        assert_eq!(invites.open(&first.code, later, 0), Ok(None));
        let renewed = invites
            .invite(&MatchId([1; 16]), codes(30), later)
            .expect("a code");
        assert_eq!(renewed.code, codes(30)[0]);
    }

    #[test]
    fn misses_past_the_minute_s_allowance_stop_every_look_up_until_the_next_minute() {
        let rules = InviteRules {
            ttl: Duration::from_secs(60),
            misses_per_minute: 3,
        };
        let invites = MemoryInvites::new(NonZeroUsize::new(8).expect("8"), rules);
        let now = Instant::now();
        let real = invites
            .invite(&MatchId([1; 16]), codes(10), now)
            .expect("a code")
            .code;
        let wrong = InviteCode::from_random([99; 8]);
        for _ in 0..3 {
            assert_eq!(invites.open(&wrong, now, 7), Ok(None));
        }
        // Found codes are not misses, but once the misses are spent nothing is looked
        // up: a guesser's right guess is refused like the wrong ones.
        assert_eq!(invites.open(&wrong, now, 7), Err(StoreRefusal::RateLimited));
        assert_eq!(invites.open(&real, now, 7), Err(StoreRefusal::RateLimited));
        assert_eq!(invites.open(&real, now, 8), Ok(Some(MatchId([1; 16]))));
    }

    #[test]
    fn a_code_pushed_out_leaves_with_its_match() {
        let invites = MemoryInvites::new(NonZeroUsize::new(2).expect("2"), RULES);
        let now = Instant::now();
        let first = invites
            .invite(&MatchId([1; 16]), codes(10), now)
            .expect("a code")
            .code;
        invites
            .invite(&MatchId([2; 16]), codes(20), now)
            .expect("a code");
        invites
            .invite(&MatchId([3; 16]), codes(30), now)
            .expect("a code");
        assert_eq!(invites.open(&first, now, 0), Ok(None));
        // The first match asks again: a new code, which opens.
        let again = invites
            .invite(&MatchId([1; 16]), codes(40), now)
            .expect("a code")
            .code;
        assert_eq!(again, codes(40)[0]);
        assert_eq!(invites.open(&again, now, 0), Ok(Some(MatchId([1; 16]))));
    }

    #[test]
    fn every_candidate_taken_is_refused_as_the_store_unavailable() {
        let invites = MemoryInvites::new(NonZeroUsize::new(8).expect("8"), RULES);
        let now = Instant::now();
        let same = [InviteCode::from_random([5; 8]); CANDIDATES];
        invites
            .invite(&MatchId([1; 16]), same, now)
            .expect("a code");
        assert!(matches!(
            invites.invite(&MatchId([2; 16]), same, now),
            Err(StoreRefusal::Unavailable(_))
        ));
    }
}
