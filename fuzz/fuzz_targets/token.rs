//! Arbitrary bytes as a state token (`state::open` with the fuzz key ring, and the
//! token cache's `Tokens::open`, which must answer the same record and state id) and as
//! a token's plaintext (`plaintext::decode`): never a panic, and whatever is accepted
//! is a sound game, with seats only at the table, that seals and opens again to itself
//! (seats, credentials, secret and previous state id included) under the same state id:
//! the one its plaintext gives under its secret.
#![no_main]

use allfives::state::token::MAX_TOKEN_LEN;
use allfives::state::{self, Player, Record, StateId, lineage, plaintext};
use allfives_fuzz::{assert_sound, ring, tokens};
use libfuzzer_sys::fuzz_target;

/// A sound game, sealed again, opens to the same record, under the state id of its
/// plaintext.
fn reseals(record: &Record) {
    assert!(record.game.replays(), "an opened game does not replay");
    assert_sound(&record.game);
    let players = record.game.rules().players;
    assert!(
        record.seats.0[players..].iter().all(|p| *p == Player::Open),
        "a seat past the table is played: {:?}",
        record.seats
    );
    let (token, id) = state::seal(ring(), record).expect("seal");
    assert_eq!(
        id,
        lineage::state_id(&record.secret, &plaintext::encode(record)),
        "the id sealing gives is the plaintext's"
    );
    if token.len() <= MAX_TOKEN_LEN {
        assert_eq!(
            state::open(ring(), &token).as_ref(),
            Ok(&(record.clone(), id)),
            "reseal"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let opened: Result<(Record, StateId), _> = state::open(ring(), data);
    let cached = tokens().open(data).map(|o| ((*o).clone(), o.state_id()));
    assert_eq!(cached, opened, "the cache opens what the cipher opens");
    if let Ok((record, _)) = &opened {
        reseals(record);
    }
    if let Ok(record) = plaintext::decode(data) {
        reseals(&record);
    }
});
