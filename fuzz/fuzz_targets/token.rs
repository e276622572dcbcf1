//! Arbitrary bytes as a state token (`state::open` with the fuzz key ring, and the
//! token cache's `Tokens::open`, which must answer the same) and as a token's plaintext
//! (`plaintext::decode`): never a panic, and whatever is accepted is a sound game that
//! seals and opens again to itself.
#![no_main]

use allfives::state::token::MAX_TOKEN_LEN;
use allfives::state::{self, Record, plaintext};
use allfives_fuzz::{assert_sound, ring, tokens};
use libfuzzer_sys::fuzz_target;

/// A sound game, sealed again, opens to the same record.
fn reseals(record: &Record) {
    assert!(record.game.replays(), "an opened game does not replay");
    assert_sound(&record.game);
    let token = state::seal(ring(), record).expect("seal");
    if token.len() <= MAX_TOKEN_LEN {
        assert_eq!(state::open(ring(), &token).as_ref(), Ok(record), "reseal");
    }
}

fuzz_target!(|data: &[u8]| {
    let opened = state::open(ring(), data);
    let cached = tokens().open(data).map(|o| (*o).clone());
    assert_eq!(cached, opened, "the cache opens what the cipher opens");
    if let Ok(record) = &opened {
        reseals(record);
    }
    if let Ok(record) = plaintext::decode(data) {
        reseals(&record);
    }
});
