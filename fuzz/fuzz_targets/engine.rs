//! A game (fresh; any plaintext `codec::decode` accepts, bypassing the seal; or a real
//! game's state with fields set to extreme values, decoded the same way) and a
//! sequence of actions built from the input, legal or not: never a panic; an action
//! refused leaves the game exactly as it was; after every action applied the game is
//! consistent (`Game::check`, encode/decode round trip) and its move counter rose by
//! one; at the start and the end every view and the sheet render.
#![no_main]

use allfives::state::codec;
use allfives_fuzz::{
    assert_consistent, assert_sound, byte, fresh_game, next_action, take, tweaked_state,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut input = data;
    let plaintext = match byte(&mut input) % 3 {
        0 => None,
        1 => {
            let len = take(&mut input, 2);
            let len = usize::from(len.first().copied().unwrap_or(0))
                | usize::from(len.get(1).copied().unwrap_or(0)) << 8;
            Some(take(&mut input, len).to_vec())
        }
        _ => Some(tweaked_state(&mut input)),
    };
    let mut game = match plaintext {
        None => fresh_game(&mut input),
        Some(bytes) => match codec::decode(&bytes) {
            Ok(record) => record.game,
            Err(_) => return,
        },
    };
    assert_sound(&game);
    let mut events = Vec::new();
    while let Some(action) = next_action(&game, &mut input) {
        let before = game.clone();
        events.clear();
        match game.apply(action, &mut events) {
            Ok(()) => {
                assert_eq!(game.moves(), before.moves() + 1, "{action:?}");
                assert!(!events.is_empty(), "{action:?} reported nothing");
                assert_consistent(&game);
            }
            Err(_) => {
                assert_eq!(game, before, "{action:?} refused but changed the game");
                assert!(events.is_empty(), "{action:?} refused but reported events");
            }
        }
    }
    assert_sound(&game);
});
