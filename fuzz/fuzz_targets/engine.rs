//! A game (fresh; any plaintext `plaintext::decode` accepts, bypassing the seal; or a
//! real game's state with fields set to extreme values, its seats, credentials, secret
//! and previous state id among them, decoded the same way: a decoded record encodes
//! back to itself) and a
//! sequence of actions built from the input, legal or not: never a panic; the rules
//! accept an action exactly when the public view of the game says they must (a legal
//! move of the seat on turn, its draw when it must draw, a deal between hands); an
//! action refused leaves the game exactly as it was and reports nothing; an action
//! applied did what it should (the counter rose by one, a play scored what its legal
//! move said, a draw took a tile) and left a consistent game (the engine's invariants
//! through its public API, the plaintext round trip). Actions stop once the game no
//! longer replays (`Game::replays`: past a limit no token can hold, which the service
//! never keeps). At the start and the end every view and the sheet render, the rules
//! accept every legal move, and a world sampled from the seat on turn's knowledge
//! agrees with it.
#![no_main]

use allfives::state::plaintext;
use allfives_fuzz::{
    accepts, assert_applied, assert_consistent, assert_sound, byte, fresh_game, next_action, take,
    tweaked_state,
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
        Some(bytes) => match plaintext::decode(&bytes) {
            Ok(record) => {
                assert!(record.game.replays(), "a decoded game does not replay");
                // Seats, credentials, secret and previous id come back as written.
                assert_eq!(
                    plaintext::decode(&plaintext::encode(&record)).as_ref(),
                    Ok(&record),
                    "round trip of a decoded record"
                );
                record.game
            }
            Err(_) => return,
        },
    };
    assert_sound(&game);
    let mut events = Vec::new();
    while game.replays()
        && let Some(action) = next_action(&game, &mut input)
    {
        let before = game.clone();
        let legal = accepts(&game, action);
        events.clear();
        match game.apply(action, &mut events) {
            Ok(()) => {
                assert!(
                    legal,
                    "{action:?} accepted but not a legal move: {before:?}"
                );
                assert_applied(&before, action, &game, &events);
                assert_consistent(&game);
            }
            Err(e) => {
                assert!(!legal, "legal {action:?} refused: {e}: {before:?}");
                assert_eq!(game, before, "{action:?} refused but changed the game");
                assert!(events.is_empty(), "{action:?} refused but reported events");
            }
        }
    }
    assert_sound(&game);
});
