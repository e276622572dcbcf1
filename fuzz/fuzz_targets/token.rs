//! Arbitrary bytes as a state token (`state::open` with the fuzz key ring) and as a
//! token's plaintext (`codec::decode`): never a panic, and whatever is accepted is a
//! sound game.
#![no_main]

use allfives::state::{self, codec};
use allfives_fuzz::{assert_sound, ring};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = state::open(ring(), data) {
        assert_sound(&record.game);
    }
    if let Ok(record) = codec::decode(data) {
        assert_sound(&record.game);
    }
});
