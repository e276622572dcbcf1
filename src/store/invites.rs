//! Invite codes: a short code that a friend types on another device to find a match
//! with an open seat (`CreateInviteCode`, `OpenInviteCode`), kept in the match store.
//!
//! A code is 60 random bits written as 12 characters of Crockford's base 32
//! ("K7QM-4XPR-2D9F"): too many to guess within the misses the store allows
//! (docs/security.md, "Invite codes"). A match has one code at a time, made on its
//! first ask and kept for the code's time to live (`--invite-ttl-secs`). A code looked
//! up in vain is a miss, counted per minute across every replica of the store twice:
//! for the client that typed it ([`ClientKey`]) and for the whole deployment. Past
//! `--invite-misses-per-client-per-minute` that client's look-ups are refused until the
//! minute is over ([`RateLimit::Client`]); past `--invite-misses-per-minute` everyone's
//! are ([`RateLimit::Deployment`], the backstop). A refused look-up looks nothing up and
//! counts no miss, so a client past its own bound spends nothing of the deployment's.
//!
//! This file holds the code's format, the rules, and the memory store's codes; the
//! Redis store keeps its own (`redis.rs`, [`super::redis::INVITE`] and
//! [`super::redis::OPEN_INVITE`]).

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use lru::LruCache;

use super::{MatchId, StoreRefusal};
use crate::connection::ClientId;
use crate::state::KeyRing;
use crate::state::keyring::PSEUDONYM_LEN;

/// The symbols of Crockford's base 32, by value: no I, L, O or U.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Symbols in a code: 60 bits.
pub const CODE_SYMBOLS: usize = 12;

/// Invite codes that may be looked up in vain in a minute, in all
/// (`--invite-misses-per-minute`'s default): the backstop, which bounds what every
/// guesser together can try (docs/security.md, "Invite codes").
pub const DEFAULT_MISSES_PER_MINUTE: u32 = 6_000;

/// Invite codes one client may look up in vain in a minute
/// (`--invite-misses-per-client-per-minute`'s default). A person types a code in
/// seconds, so even a friend who mistypes it ten times in a row, or a household
/// behind one address doing so at once, stays under it; a script guessing flat out
/// reaches it in well under a second, and is then refused for the rest of the minute.
/// It is 1/200 of [`DEFAULT_MISSES_PER_MINUTE`]: 200 clients guessing at once
/// to spend the deployment's misses, where one was enough without it.
pub const DEFAULT_MISSES_PER_CLIENT_PER_MINUTE: u32 = 30;

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

/// How long a code lives, and how many codes may be looked up in vain in a minute (on
/// all the replicas of a store) by one client, and in all, before that client's (or
/// everyone's) look-ups are refused until the minute is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InviteRules {
    pub ttl: Duration,
    pub misses_per_minute: u32,
    pub misses_per_client_per_minute: u32,
}

/// Whose misses were spent, when a look-up is refused: the client's own, or the whole
/// deployment's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateLimit {
    Client,
    Deployment,
}

impl RateLimit {
    /// As the refusal's `ErrorInfo` metadata and the metrics write it.
    pub fn as_str(self) -> &'static str {
        match self {
            RateLimit::Client => "client",
            RateLimit::Deployment => "deployment",
        }
    }
}

/// A client as the store counts its misses: a pseudonym of its [`ClientId`] (16 bytes
/// of HMAC-SHA-256 under a key the key ring derives from the sealing key,
/// [`KeyRing::pseudonym`]), the same on every replica that shares the ring, of a fixed
/// size, and not an address: neither the store nor anyone reading it can tell which
/// address it is without the ring.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientKey([u8; PSEUDONYM_LEN]);

impl fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientKey(..)")
    }
}

impl ClientKey {
    /// The key of `client` under `ring`. An address is the client (IPv4, or an IPv6 /64:
    /// what `ClientId` keeps); a client known only by its connection (no address) is
    /// that connection of this process, which no other replica's may share.
    pub fn of(client: &ClientId, ring: &KeyRing) -> ClientKey {
        let mut bytes = [0u8; 1 + 16];
        let used = match client {
            ClientId::Address(IpAddr::V4(v4)) => {
                bytes[0] = 4;
                bytes[1..5].copy_from_slice(&v4.octets());
                5
            }
            ClientId::Address(IpAddr::V6(v6)) => {
                bytes[0] = 6;
                bytes[1..17].copy_from_slice(&v6.octets());
                17
            }
            ClientId::Connection(id) => {
                bytes[1..9].copy_from_slice(&id.0.to_le_bytes());
                bytes[9..17].copy_from_slice(&process_nonce().to_le_bytes());
                17
            }
        };
        ClientKey(ring.pseudonym(&bytes[..used]))
    }

    /// The key in hex, as the Redis store's keys hold it.
    pub fn hex(&self) -> [u8; 2 * PSEUDONYM_LEN] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 2 * PSEUDONYM_LEN];
        for (pair, byte) in out.chunks_exact_mut(2).zip(self.0) {
            pair[0] = HEX[usize::from(byte >> 4)];
            pair[1] = HEX[usize::from(byte & 15)];
        }
        out
    }
}

/// A number drawn once per process, so that connection numbers of two replicas are two
/// clients.
fn process_nonce() -> u64 {
    static NONCE: OnceLock<u64> = OnceLock::new();
    *NONCE.get_or_init(|| {
        let mut bytes = [0u8; 8];
        crate::state::random::fill(&mut bytes);
        u64::from_le_bytes(bytes)
    })
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
    /// The minute misses are counted in, and how many there were: in all, and by
    /// client (a client is added only by a miss, so at most as many as the misses a
    /// minute allows in all).
    minute: u64,
    misses: u32,
    clients: HashMap<ClientKey, u32>,
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
                clients: HashMap::new(),
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

    /// The match of a live code, or `None` (a miss, counted for `client` and in all);
    /// refused, nothing looked up, once this `minute` has had as many misses as the
    /// rules allow from `client` ([`RateLimit::Client`]), or in all
    /// ([`RateLimit::Deployment`]).
    pub fn open(
        &self,
        code: &InviteCode,
        client: &ClientKey,
        now: Instant,
        minute: u64,
    ) -> Result<Option<MatchId>, StoreRefusal> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.minute != minute {
            inner.minute = minute;
            inner.misses = 0;
            inner.clients.clear();
        }
        let theirs = inner.clients.get(client).copied().unwrap_or(0);
        if theirs >= self.rules.misses_per_client_per_minute {
            return Err(StoreRefusal::RateLimited(RateLimit::Client));
        }
        if inner.misses >= self.rules.misses_per_minute {
            return Err(StoreRefusal::RateLimited(RateLimit::Deployment));
        }
        match inner.by_code.peek(code).filter(|k| k.expires > now) {
            Some(kept) => Ok(Some(kept.match_id)),
            None => {
                inner.misses += 1;
                inner.clients.insert(*client, theirs.saturating_add(1));
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
        misses_per_client_per_minute: 100,
    };

    fn codes(first: u8) -> [InviteCode; CANDIDATES] {
        [0, 1, 2, 3].map(|i| InviteCode::from_random([first + i; 8]))
    }

    fn ring() -> KeyRing {
        KeyRing::new(vec![(1, [7; 32])], None).expect("a ring")
    }

    /// The client at this IPv4 address.
    fn client(last: u8) -> ClientKey {
        ClientKey::of(&ClientId::Address([198, 51, 100, last].into()), &ring())
    }

    #[test]
    fn a_match_keeps_its_code_until_it_expires() {
        let rules = InviteRules {
            ttl: Duration::from_secs(60),
            misses_per_minute: 10,
            misses_per_client_per_minute: 10,
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
            invites.open(&first.code, &client(1), now, 0),
            Ok(Some(MatchId([1; 16])))
        );
        // Expired: no longer found, and the match gets a new code.
        let later = now + Duration::from_secs(61);
        assert_eq!(invites.open(&first.code, &client(1), later, 0), Ok(None));
        let renewed = invites
            .invite(&MatchId([1; 16]), codes(30), later)
            .expect("a code");
        assert_eq!(renewed.code, codes(30)[0]);
    }

    /// Codes allowing these misses a minute, in all and per client, and match 1's live
    /// code, made now.
    fn with_a_live_code(in_all: u32, per_client: u32) -> (MemoryInvites, Instant, InviteCode) {
        let rules = InviteRules {
            ttl: Duration::from_secs(900),
            misses_per_minute: in_all,
            misses_per_client_per_minute: per_client,
        };
        let invites = MemoryInvites::new(NonZeroUsize::new(8).expect("8"), rules);
        let now = Instant::now();
        let real = invites
            .invite(&MatchId([1; 16]), codes(10), now)
            .expect("a code")
            .code;
        (invites, now, real)
    }

    #[test]
    fn misses_past_the_minute_s_allowance_stop_every_look_up_until_the_next_minute() {
        let (invites, now, real) = with_a_live_code(3, 3);
        let wrong = InviteCode::from_random([99; 8]);
        // Three clients, a miss each: the deployment's misses are spent.
        for last in 1..=3 {
            assert_eq!(invites.open(&wrong, &client(last), now, 7), Ok(None));
        }
        // Found codes are not misses, but once the misses are spent nothing is looked
        // up: a guesser's right guess is refused like the wrong ones, for every client.
        let limited = Err(StoreRefusal::RateLimited(RateLimit::Deployment));
        assert_eq!(invites.open(&wrong, &client(1), now, 7), limited);
        assert_eq!(invites.open(&real, &client(4), now, 7), limited);
        assert_eq!(
            invites.open(&real, &client(4), now, 8),
            Ok(Some(MatchId([1; 16])))
        );
    }

    /// One client's misses past its own bound refuse that client alone, the right code
    /// too; the refusals count no miss, so the deployment's bound is never reached by
    /// one client, however long it guesses; and the next minute it is answered again.
    #[test]
    fn one_client_past_its_misses_is_refused_alone_and_spends_nothing_of_the_rest() {
        let (invites, now, real) = with_a_live_code(10, 3);
        let (guesser, friend, other) = (client(1), client(2), client(3));
        let mut refused = 0;
        for guess in 0..1_000u32 {
            let wrong = InviteCode::from_random((u64::from(guess) + 1000).to_le_bytes());
            match invites.open(&wrong, &guesser, now, 7) {
                Ok(None) => {}
                Err(StoreRefusal::RateLimited(RateLimit::Client)) => refused += 1,
                other => panic!("guess {guess}: {other:?}"),
            }
        }
        assert_eq!(refused, 1_000 - 3);
        let limited = Err(StoreRefusal::RateLimited(RateLimit::Client));
        assert_eq!(invites.open(&real, &guesser, now, 7), limited);
        // Another client's right code opens, and its misses are its own.
        assert_eq!(
            invites.open(&real, &friend, now, 7),
            Ok(Some(MatchId([1; 16])))
        );
        let wrong = InviteCode::from_random([99; 8]);
        assert_eq!(invites.open(&wrong, &other, now, 7), Ok(None));
        // The next minute, the guesser is answered again.
        assert_eq!(
            invites.open(&real, &guesser, now, 8),
            Ok(Some(MatchId([1; 16])))
        );
    }

    #[test]
    fn a_client_s_key_is_fixed_size_hex_the_same_for_its_addresses_and_no_address() {
        let ring = ring();
        let key = |client: ClientId| ClientKey::of(&client, &ring);
        let v4 = |s: &str| ClientId::Address(s.parse().expect("an address"));
        let a = key(v4("198.51.100.1"));
        assert_eq!(a, key(v4("198.51.100.1")));
        assert_ne!(a, key(v4("198.51.100.2")));
        // The connection's client (no address): another process's same number is
        // another client, which the nonce makes it.
        let conn = ClientId::Connection(crate::connection::ConnectionId(1));
        assert_eq!(key(conn), key(conn));
        assert_ne!(key(conn), a);
        let hex = a.hex();
        assert!(
            hex.iter()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert!(
            !String::from_utf8_lossy(&hex).contains("c633"),
            "198.51 in hex"
        );
        assert_eq!(format!("{a:?}"), "ClientKey(..)");
        // Another sealing key, another pseudonym.
        let other = KeyRing::new(vec![(1, [8; 32])], None).expect("a ring");
        assert_ne!(a, ClientKey::of(&v4("198.51.100.1"), &other));
    }

    /// The figures of docs/security.md's "Invite codes", computed from the code's
    /// constants and the flags' defaults, must be the page's (whitespace aside): a
    /// change to either that makes the other wrong fails here. The page's own
    /// assumptions are its L (live codes at once) and the unbounded guesser's rate.
    #[test]
    fn the_guessing_arithmetic_of_docs_security_md_is_the_code_s() {
        let page = include_str!("../../docs/security.md");
        let page = page.split_whitespace().collect::<Vec<_>>().join(" ");
        let bits = 5 * CODE_SYMBOLS as i32;
        assert_eq!(1 << 5, ALPHABET.len());
        let codes = 2f64.powi(bits);
        let live = 100_000.0;
        let minutes_a_year = 365.0 * 24.0 * 60.0;
        let deployment = f64::from(DEFAULT_MISSES_PER_MINUTE);
        let client = f64::from(DEFAULT_MISSES_PER_CLIENT_PER_MINUTE);
        let unbounded_per_day = 100_000.0 * 86_400.0;
        let a_year = deployment * minutes_a_year;
        let a_year_seats = a_year * live / codes;
        let client_year = client * minutes_a_year;
        let client_seats = client_year * live / codes;
        let unbounded_seats = unbounded_per_day * live / codes;
        let clients = DEFAULT_MISSES_PER_MINUTE.div_ceil(DEFAULT_MISSES_PER_CLIENT_PER_MINUTE);
        let said = [
            format!("one of 2^{bits} ≈ {}", sci(codes)),
            format!("M = {}", thousands(DEFAULT_MISSES_PER_MINUTE.into())),
            "L = 100,000".to_string(),
            format!("a year of guessing at the bound ({} guesses)", sci(a_year)),
            format!("expects {} seats taken", sci(a_year_seats)),
            format!(
                "one in about {} years",
                thousands(round_to_2_figures(1.0 / a_year_seats))
            ),
            format!(
                "one client at its bound, {} a minute, makes {} guesses a year",
                DEFAULT_MISSES_PER_CLIENT_PER_MINUTE,
                sci(client_year)
            ),
            format!("and expects {} seats", sci(client_seats)),
            format!(
                "at 100,000 guesses a second ({} a day), about {} seats a day",
                sci(unbounded_per_day),
                sci(unbounded_seats)
            ),
            format!(
                "{} / {} = {clients} clients",
                thousands(DEFAULT_MISSES_PER_MINUTE.into()),
                DEFAULT_MISSES_PER_CLIENT_PER_MINUTE
            ),
            format!("needs {} or {} guesses", 32, thousands(32 * 32)),
        ];
        for figure in said {
            assert!(
                page.contains(&figure),
                "docs/security.md should say {figure:?}"
            );
        }
        // The figures the issue checked by hand.
        assert_eq!(sci(unbounded_seats), "7.5 × 10^-4");
        assert_eq!(sci(a_year_seats), "2.7 × 10^-4");
    }

    /// `x` as docs/security.md writes it: two significant figures, "2.7 × 10^-4".
    fn sci(x: f64) -> String {
        let written = format!("{x:.1e}");
        let (mantissa, exponent) = written.split_once('e').expect("an exponent");
        format!("{mantissa} × 10^{exponent}")
    }

    fn round_to_2_figures(x: f64) -> u64 {
        let scale = 10f64.powi(x.log10().floor() as i32 - 1);
        ((x / scale).round() * scale) as u64
    }

    /// `n` with a comma between thousands: "6,000".
    fn thousands(n: u64) -> String {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
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
        assert_eq!(invites.open(&first, &client(1), now, 0), Ok(None));
        // The first match asks again: a new code, which opens.
        let again = invites
            .invite(&MatchId([1; 16]), codes(40), now)
            .expect("a code")
            .code;
        assert_eq!(again, codes(40)[0]);
        assert_eq!(
            invites.open(&again, &client(1), now, 0),
            Ok(Some(MatchId([1; 16])))
        );
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
