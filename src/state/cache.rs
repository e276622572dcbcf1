//! The token cache, and [`Tokens`]: what the service opens and seals state tokens with,
//! the key ring and a cache of the games this process sealed lately, so that the call
//! which brings one of those tokens back skips the cipher and the replay.
//!
//! The service stays stateless. Every token still carries its whole game, any replica
//! opens any token, and a call answers exactly what it would without the cache: the
//! cache only remembers, for a token this process sealed (or opened), the game that
//! token holds. A token is found only by its exact bytes, all of them compared, so a
//! token altered in any byte, sealed elsewhere, or under a key the ring does not hold
//! misses and goes through [`super::open`], which refuses it as before.
//!
//! The cache holds a fixed number of games (`--token-cache`, a power of two chosen at
//! start) in sets of eight: a token's set is picked by its nonce, which this process drew
//! at random for the tokens it sealed, and each set has its own lock, held for a few
//! compares and a pointer swap, never across the engine's work. An entry is taken out
//! when its token is opened and put back under the answer's token once the call has
//! sealed it, so a match's next call finds it; a token used a second time (a retry, a
//! replay) misses and is opened by the cipher, as any token on another replica would
//! be. A set that is full gives up the game put in longest ago: a match whose game is
//! put back at every call keeps it while the games of ended or abandoned matches age
//! out, so nearly every call hits while the matches in play on a replica are fewer than
//! the cache holds (a set-associative cache, near enough to least recently used). A
//! match that is over is not kept at all.
//! Memory: about 25 bytes a slot, and a game of 0.5 to 2.5 KiB (its score sheet and
//! token included) in each slot that has been filled.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};

use super::lineage::{ID_LEN, StateId};
use super::plaintext;
use super::token::MAX_TOKEN_LEN;
use super::{KeyRing, Record, TokenError};
use crate::engine::Phase;

/// The most games a cache may hold (about 25 MiB of sets, up to 2.5 GiB of games).
pub const MAX_SLOTS: usize = 1 << 20;

/// Games a set holds.
const WAYS: usize = 8;

/// The key ring and the cache of lately sealed games.
pub struct Tokens {
    ring: Arc<KeyRing>,
    sets: Box<[Mutex<Set>]>,
    counts: Arc<CacheCounts>,
}

/// Lookups in a token cache so far: shared with the metrics, which show them.
#[derive(Debug, Default)]
pub struct CacheCounts {
    hits: AtomicU64,
    misses: AtomicU64,
}

impl CacheCounts {
    /// Tokens opened from the cache, and tokens looked up but opened (or refused) by
    /// the cipher.
    pub fn get(&self) -> (u64, u64) {
        (self.hits.load(Relaxed), self.misses.load(Relaxed))
    }
}

/// Eight games, each with its token's key (below) and the time it was put in (the
/// set's own count of puts), kept beside them so a lookup reads one set, not eight
/// games.
#[derive(Default)]
struct Set {
    keys: [u64; WAYS],
    put_at: [u64; WAYS],
    ways: [Option<Box<Entry>>; WAYS],
    puts: u64,
}

/// A token's key: its nonce's first eight bytes, random for every token this process
/// sealed. Its low bits pick the set; all of it tells the ways apart before any token
/// is compared. Anything too short to hold it has none (and will not open).
fn key(token: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(token.get(2..10)?.try_into().ok()?))
}

/// A game and the token that carries it: the one it was opened from or last sealed
/// in; empty once the game may have changed since (then it is not kept).
struct Entry {
    token: Vec<u8>,
    record: Record,
    /// The id of the state `token` holds (`state::lineage`); zero before the first seal.
    state_id: StateId,
}

/// A game opened from a token, by the cache or the cipher, and the token that carries
/// it. Changing the game (any `&mut` access) forgets the token; [`Tokens::seal`] gives
/// it its new one. Hand it back with [`Tokens::keep`], so that the next call with that
/// token finds it.
pub struct Opened(Box<Entry>);

impl Opened {
    /// A game that came in no token (a new match).
    pub fn new(record: Record) -> Opened {
        Opened(Box::new(Entry {
            token: Vec::new(),
            record,
            state_id: [0; ID_LEN],
        }))
    }

    /// A game the cipher opened from `token`, whose state has id `state_id`.
    fn opened_from(record: Record, state_id: StateId, token: &[u8]) -> Opened {
        Opened(Box::new(Entry {
            token: token.to_vec(),
            record,
            state_id,
        }))
    }

    /// The id of the state this game was opened from, or last sealed as.
    pub fn state_id(&self) -> StateId {
        self.0.state_id
    }
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Opened").field(&self.0.record).finish()
    }
}

impl Deref for Opened {
    type Target = Record;
    fn deref(&self) -> &Record {
        &self.0.record
    }
}

/// Any `&mut` access may change the game, so no token carries it any more.
impl DerefMut for Opened {
    fn deref_mut(&mut self) -> &mut Record {
        self.0.token.clear();
        &mut self.0.record
    }
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("ring", &self.ring)
            .field("cache_slots", &self.cache_slots())
            .finish_non_exhaustive()
    }
}

impl Tokens {
    /// Tokens under `ring`, with a cache of `slots` games rounded up to a power of two
    /// (at least eight, at most [`MAX_SLOTS`]); 0 turns the cache off.
    pub fn new(ring: Arc<KeyRing>, slots: usize) -> Tokens {
        let sets = match slots {
            0 => 0,
            n => n.clamp(WAYS, MAX_SLOTS).next_power_of_two() / WAYS,
        };
        Tokens {
            ring,
            sets: (0..sets).map(|_| Mutex::default()).collect(),
            counts: Arc::default(),
        }
    }

    /// Tokens under `ring` with no cache: every token is opened by the cipher.
    pub fn uncached(ring: Arc<KeyRing>) -> Tokens {
        Tokens::new(ring, 0)
    }

    pub fn ring(&self) -> &KeyRing {
        &self.ring
    }

    /// The games the cache holds at most (0 when it is off).
    pub fn cache_slots(&self) -> usize {
        self.sets.len() * WAYS
    }

    /// Tokens opened from the cache, and tokens looked up but opened (or refused) by
    /// the cipher, so far.
    pub fn cache_counts(&self) -> (u64, u64) {
        self.counts.get()
    }

    /// The lookup counts, shared (for the metrics).
    pub fn shared_counts(&self) -> Arc<CacheCounts> {
        Arc::clone(&self.counts)
    }

    /// The set of a token's key.
    fn set(&self, key: u64) -> Option<&Mutex<Set>> {
        let mask = self.sets.len().checked_sub(1)?;
        self.sets.get(key as usize & mask)
    }

    /// Opens a token: the game from the cache if this process sealed that very token
    /// lately, else decrypted and replayed by [`super::open`].
    pub fn open(&self, token: &[u8]) -> Result<Opened, TokenError> {
        if let Some(key) = key(token)
            && let Some(set) = self.set(key)
        {
            let mut set = set.lock().unwrap_or_else(PoisonError::into_inner);
            let Set { keys, ways, .. } = &mut *set;
            let found = (0..WAYS)
                .filter(|&w| keys[w] == key)
                .find(|&w| ways[w].as_ref().is_some_and(|entry| entry.token == token))
                .and_then(|w| ways[w].take());
            drop(set);
            if let Some(entry) = found {
                self.counts.hits.fetch_add(1, Relaxed);
                return Ok(Opened(entry));
            }
            self.counts.misses.fetch_add(1, Relaxed);
            let (record, id) = super::open(&self.ring, token)?;
            return Ok(Opened::opened_from(record, id, token));
        }
        let (record, id) = super::open(&self.ring, token)?;
        Ok(Opened::opened_from(record, id, &[]))
    }

    /// Encodes and seals a game under the ring's active key; the new token is then the
    /// one that carries it.
    pub fn seal(&self, opened: &mut Opened) -> Result<Vec<u8>, TokenError> {
        let (token, id) = super::seal(&self.ring, &opened.0.record)?;
        opened.0.state_id = id;
        let carried = &mut opened.0.token;
        carried.clear();
        if !self.sets.is_empty() {
            carried.extend_from_slice(&token);
        }
        Ok(token)
    }

    /// Keeps an opened game under the token that carries it (the one it was opened from
    /// if the call changed nothing, else the one [`Tokens::seal`] gave it), for the next
    /// call that brings that token. In a full set it takes the place of the game put in
    /// longest ago. Not kept: a game no token carries (changed since), a game that is
    /// over (no move can follow; a last Score opens it by the cipher), and a game its
    /// token would not open again (past a limit of the engine's replay,
    /// [`Game::replays`](crate::engine::Game::replays)).
    pub fn keep(&self, opened: Opened) {
        let entry = opened.0;
        let Some((key, set)) = key(&entry.token).and_then(|key| Some((key, self.set(key)?))) else {
            return;
        };
        if entry.token.len() > MAX_TOKEN_LEN
            || entry.record.game.phase() == Phase::Over
            || !entry.record.game.replays()
        {
            return;
        }
        debug_assert!(
            plaintext::decode(&plaintext::encode(&entry.record)).as_ref() == Ok(&entry.record),
            "a game kept is one its token gives back"
        );
        let mut set = set.lock().unwrap_or_else(PoisonError::into_inner);
        let Set {
            keys,
            put_at,
            ways,
            puts,
        } = &mut *set;
        let way = match ways.iter().position(Option::is_none) {
            Some(empty) => empty,
            None => (0..WAYS).min_by_key(|&w| put_at[w]).unwrap_or(0),
        };
        *puts += 1;
        put_at[way] = *puts;
        keys[way] = key;
        let previous = ways[way].replace(entry);
        drop(set);
        drop(previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Action, Game, Rules};
    use crate::state::{MATCH_ID_LEN, MatchId};

    fn ring() -> Arc<KeyRing> {
        Arc::new(KeyRing::new(vec![(1, [9; 32])], None).unwrap())
    }

    fn dealt() -> Record {
        let mut game = Game::new(Rules::for_players(2), 7).unwrap();
        game.apply(Action::Deal, &mut Vec::new()).unwrap();
        Record::new(MatchId([5; MATCH_ID_LEN]), game)
    }

    /// Seals `record` and keeps it, as a handler does.
    fn sealed(tokens: &Tokens, record: Record) -> Vec<u8> {
        let mut opened = Opened::new(record);
        let token = tokens.seal(&mut opened).unwrap();
        tokens.keep(opened);
        token
    }

    #[test]
    fn a_kept_token_opens_from_the_cache_to_the_same_game() {
        let tokens = Tokens::new(ring(), 64);
        let token = sealed(&tokens, dealt());
        let opened = tokens.open(&token).unwrap();
        assert_eq!(tokens.cache_counts(), (1, 0));
        assert_eq!(*opened, dealt());
        assert_eq!(
            *opened,
            crate::state::open(tokens.ring(), &token).unwrap().0
        );
    }

    #[test]
    fn an_opened_game_is_taken_out_so_the_same_token_again_goes_to_the_cipher() {
        let tokens = Tokens::new(ring(), 64);
        let token = sealed(&tokens, dealt());
        let first = tokens.open(&token).unwrap();
        let again = tokens.open(&token).unwrap();
        assert_eq!(tokens.cache_counts(), (1, 1));
        assert_eq!(*first, *again);
        tokens.keep(again);
        assert_eq!(*tokens.open(&token).unwrap(), *first);
        assert_eq!(tokens.cache_counts(), (2, 1));
    }

    #[test]
    fn a_token_altered_in_any_byte_misses_and_is_refused() {
        let tokens = Tokens::new(ring(), 1);
        let token = sealed(&tokens, dealt());
        for i in 0..token.len() {
            let mut bad = token.clone();
            bad[i] ^= 0x01;
            assert!(tokens.open(&bad).is_err(), "byte {i}");
            assert!(tokens.open(&bad[..i]).is_err(), "cut at {i}");
        }
        let mut longer = token.clone();
        longer.push(0);
        assert!(tokens.open(&longer).is_err());
        assert_eq!(tokens.cache_counts().0, 0, "no altered token was served");
        assert_eq!(*tokens.open(&token).unwrap(), dealt(), "still kept");
    }

    #[test]
    fn a_token_of_another_ring_is_refused_though_its_slot_is_full() {
        let tokens = Tokens::new(ring(), 1);
        sealed(&tokens, dealt());
        let other = Tokens::new(Arc::new(KeyRing::new(vec![(1, [8; 32])], None).unwrap()), 1);
        let foreign = sealed(&other, dealt());
        assert_eq!(tokens.open(&foreign).unwrap_err(), TokenError::Invalid);
    }

    fn numbered(n: u8) -> Record {
        let mut record = dealt();
        record.match_id = MatchId([n; MATCH_ID_LEN]);
        record
    }

    #[test]
    fn a_full_set_gives_up_the_game_put_in_longest_ago() {
        // Eight slots: one set.
        let tokens = Tokens::new(ring(), 8);
        let t: Vec<Vec<u8>> = (0..8).map(|n| sealed(&tokens, numbered(n))).collect();
        // Game 0 is opened and put back (a Score call): now the newest.
        let score = tokens.open(&t[0]).unwrap();
        tokens.keep(score);
        let t8 = sealed(&tokens, numbered(8));
        assert_eq!(tokens.cache_counts(), (1, 0));
        // Game 1, the oldest, made room; it still opens, by the cipher.
        assert_eq!(*tokens.open(&t[1]).unwrap(), numbered(1));
        assert_eq!(tokens.cache_counts(), (1, 1));
        for n in [0, 2, 3, 4, 5, 6, 7] {
            assert_eq!(*tokens.open(&t[n]).unwrap(), numbered(n as u8));
        }
        assert_eq!(*tokens.open(&t8).unwrap(), numbered(8));
        assert_eq!(tokens.cache_counts(), (9, 1));
    }

    #[test]
    fn matches_in_play_fewer_than_the_slots_keep_hitting_while_ended_ones_age_out() {
        // 400 matches in play on 1024 slots, each call sealing a new token, and 50
        // ended matches' games put in every round and never asked for again. (Direct
        // mapped, one game a slot, about 64 % would hit.)
        let tokens = Tokens::new(ring(), 1024);
        let mut live: Vec<Vec<u8>> = (0..400)
            .map(|n| sealed(&tokens, numbered(n as u8)))
            .collect();
        for round in 0..6 {
            for token in &mut live {
                let opened = tokens.open(token).unwrap();
                *token = sealed(&tokens, (*opened).clone());
            }
            for n in 0..50 {
                sealed(&tokens, numbered((round * 50 + n) as u8));
            }
        }
        let (hits, misses) = tokens.cache_counts();
        assert_eq!(hits + misses, 2400);
        assert!(hits >= 2200, "{hits} hits, {misses} misses");
    }

    #[test]
    fn a_game_changed_after_it_was_opened_is_not_kept_under_its_old_token() {
        let tokens = Tokens::new(ring(), 64);
        let token = sealed(&tokens, dealt());
        let mut opened = tokens.open(&token).unwrap();
        opened.match_id = MatchId([7; MATCH_ID_LEN]);
        tokens.keep(opened);
        assert_eq!(
            *tokens.open(&token).unwrap(),
            dealt(),
            "opened by the cipher"
        );
        assert_eq!(tokens.cache_counts(), (1, 1));
    }

    #[test]
    fn a_game_that_is_over_is_not_kept() {
        use crate::engine::bot::{Strategy, choose};
        use rand_chacha::ChaCha8Rng;
        use rand_chacha::rand_core::SeedableRng;
        let mut record = dealt();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut scratch = Vec::new();
        while let Some(action) = choose(&record.game, Strategy::Greedy, &mut rng, &mut scratch) {
            record.game.apply(action, &mut Vec::new()).unwrap();
        }
        assert_eq!(record.game.phase(), Phase::Over);
        let tokens = Tokens::new(ring(), 64);
        let token = sealed(&tokens, record.clone());
        assert_eq!(
            *tokens.open(&token).unwrap(),
            record,
            "opened by the cipher"
        );
        assert_eq!(tokens.cache_counts(), (0, 1));
    }

    /// A match whose action counter is at the most a token takes: its first hand
    /// replays, but once that hand is over and the next dealt, the count before the new
    /// hand is past the limit, and its token would not open.
    fn at_the_counter_limit() -> (Record, Record) {
        use crate::engine::Scorecard;
        use crate::engine::bot::{Strategy, choose};
        use rand_chacha::ChaCha8Rng;
        use rand_chacha::rand_core::SeedableRng;
        let limit = u32::MAX - 1 - crate::engine::replay::MAX_HAND_ACTIONS as u32;
        let card = Scorecard {
            hand: 1,
            starter: None,
            moves: limit,
            carried: None,
            rows: &[],
            actions: &[],
        };
        let rules = Rules {
            target: 10_000,
            ..Rules::for_players(2)
        };
        let mut game = Game::replay(rules, 7, &card).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut scratch = Vec::new();
        while game.phase() == Phase::Playing {
            let action = choose(&game, Strategy::Greedy, &mut rng, &mut scratch).unwrap();
            game.apply(action, &mut Vec::new()).unwrap();
        }
        let ended = Record::new(MatchId([5; MATCH_ID_LEN]), game.clone());
        game.apply(Action::Deal, &mut Vec::new()).unwrap();
        (ended, Record::new(MatchId([5; MATCH_ID_LEN]), game))
    }

    #[test]
    fn a_game_its_token_would_not_open_is_not_kept() {
        let tokens = Tokens::new(ring(), 64);
        let (ended, past) = at_the_counter_limit();
        assert!(ended.game.replays() && !past.game.replays());
        let token = sealed(&tokens, ended.clone());
        assert_eq!(*tokens.open(&token).unwrap(), ended, "from the cache");
        let token = sealed(&tokens, past);
        assert_eq!(tokens.open(&token).unwrap_err(), TokenError::Corrupt);
        assert_eq!(tokens.cache_counts(), (1, 1));
    }

    #[test]
    fn without_a_cache_every_token_goes_to_the_cipher() {
        let tokens = Tokens::uncached(ring());
        assert_eq!(tokens.cache_slots(), 0);
        let token = sealed(&tokens, dealt());
        assert_eq!(*tokens.open(&token).unwrap(), dealt());
        assert_eq!(tokens.cache_counts(), (0, 0));
    }

    #[test]
    fn slots_are_a_power_of_two_and_bounded() {
        assert_eq!(Tokens::new(ring(), 1).cache_slots(), 8);
        assert_eq!(Tokens::new(ring(), 1000).cache_slots(), 1024);
        assert_eq!(Tokens::new(ring(), 4096).cache_slots(), 4096);
        assert_eq!(Tokens::new(ring(), usize::MAX).cache_slots(), MAX_SLOTS);
    }
}
