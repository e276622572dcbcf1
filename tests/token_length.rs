//! A token's length tells nothing a player could not see at the table: over 10,000
//! random matches of every table (2, 3, 4 players alone, 4 in partnership; every
//! hand-size and settlement rule, short and long targets), the length of every token
//! the service answers is computed from public information alone, the spectator's view
//! of the answer and the score sheet, and found equal to the real length.
//!
//! What the computation uses: the rule options, the match id, the hand number, the move
//! counter, the number of tiles on the table, the boneyard's size, who led the hand by
//! the rules (the seat that went out of the hand before, seen in the spectator's view
//! of that hand's end), and the sheet. It builds a `State` from those with a stand-in
//! for each hidden thing (the seed, the action bytes' values) and takes prost's
//! encoded length. If any field's length depended on a hidden tile (as the old
//! snapshot's hand bitmasks did), the lengths would differ.
//!
//! Matches are played through the handlers, in-process (the wire adds nothing to a
//! token); `tests/api.rs` covers the server end to end.

use std::sync::Arc;

use allfives::proto::internal as ipb;
use allfives::proto::v1 as pb;
use allfives::service::handlers;
use allfives::state::{KeyRing, Tokens, token};
use prost::Message;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

/// Matches per table.
const MATCHES: u64 = 10_000;

/// Rule options for match `i` at a table: every hand-size and settlement rule in turn,
/// and targets mostly short (so that 10,000 matches run in seconds) with one match in
/// 50 at the default target and one in 500 at 1000 (past the 32 hands the sheet keeps
/// in full).
fn rules(players: u32, partnership: bool, i: u64) -> pb::Rules {
    let target = match i {
        i if i % 500 == 7 => 1000,
        i if i % 50 == 3 => 0,
        i => 25 + 5 * (i % 12) as u32,
    };
    pb::Rules {
        players,
        partnership,
        hand_size: 1 + (i % 3) as i32,
        target,
        settlement: 1 + ((i / 3) % 2) as i32,
    }
}

/// What the spectator needs remembered between answers: who leads the current hand by
/// the rules (the seat that went out of the one before).
#[derive(Default)]
struct Public {
    starter: Option<u32>,
}

/// The length a token must have, from the spectator's view of the answer that carries
/// it and the sheet.
fn expected_length(view: &pb::GameView, sheet: &pb::ScoreSheet, public: &Public) -> usize {
    let rules = view.rules.as_ref().expect("rules");
    let sides = if rules.partnership {
        2
    } else {
        rules.players as usize
    };
    let hand = view.hand_number;
    let dealt = if hand > 0 {
        let hand_tiles = view.hand_sizes.iter().sum::<u32>() as usize
            + view.layout.len()
            + view.boneyard_size as usize;
        assert_eq!(hand_tiles, 28);
        // The boneyard a deal leaves, from the rules alone.
        let each = match (rules.hand_size, rules.players) {
            (1, 2) => 9,
            (1, 3) => 7,
            (3, 2) => 7,
            _ => 5,
        };
        28 - each * rules.players as usize
    } else {
        0
    };
    let draws = dealt - view.boneyard_size as usize;
    let actions = view.layout.len() + draws;
    let moves = if hand > 0 {
        view.moves - 1 - actions as u32
    } else {
        view.moves
    };
    // The sheet before the current hand: every row but the current one.
    let rows = match hand {
        0 => &sheet.rows[..],
        _ => &sheet.rows[..sheet.rows.len() - 1],
    };
    let fives = |row: &pb::SheetRow| -> Vec<i32> {
        let play = row.sides.iter().map(|s| s.play / 5);
        let settled = row.sides.iter().map(|s| s.settlement / 5);
        play.chain(settled).collect()
    };
    assert!(rows.iter().all(|r| r.sides.len() == sides));
    let state = ipb::State {
        // Stand-ins for the hidden: any seed takes 9 bytes, any action one.
        seed: Some(0),
        match_id: vec![0; view.match_id.len() / 2],
        rules: Some(ipb::Rules {
            players: rules.players,
            partnership: rules.partnership,
            hand_size: rules.hand_size,
            target_fives: rules.target / 5,
            settlement: rules.settlement,
        }),
        hand,
        starter: public.starter,
        moves,
        sheet: rows.iter().flat_map(fives).collect(),
        carried: sheet.carried.as_ref().map(fives).unwrap_or_default(),
        actions: vec![0; actions],
    };
    state.encoded_len() + token::OVERHEAD
}

/// Plays one match with random legal moves, checking every token's length; returns the
/// number of tokens checked.
fn play_match(tokens: &Tokens, rules: pb::Rules, rng: &mut ChaCha8Rng) -> usize {
    let new = handlers::new_game(
        tokens,
        &pb::NewGameRequest {
            rules: Some(rules),
            seed: Some(rng.next_u64()),
            viewer: None,
        },
    )
    .expect("NewGame");
    let mut public = Public::default();
    let (mut state, mut view) = (new.state, new.view);
    let mut checked = 0;
    loop {
        let looked = handlers::score(
            tokens,
            &pb::ScoreRequest {
                state: state.clone().into(),
                viewer: view.turn,
            },
        )
        .expect("Score");
        let sheet = looked.sheet.expect("sheet");
        assert_eq!(
            state.len(),
            expected_length(&view, &sheet, &public),
            "hand {}, move {}",
            view.hand_number,
            view.moves
        );
        checked += 1;
        let seen = looked.view.expect("view");
        let answer = match pb::Phase::try_from(view.phase).expect("phase") {
            pb::Phase::Over => return checked,
            pb::Phase::Dealing => {
                // Who leads the next hand, as the table saw the last one end.
                public.starter = view.last_hand.as_ref().and_then(|h| {
                    (h.reason == pb::HandEndReason::Domino as i32)
                        .then_some(h.went_out)
                        .flatten()
                });
                handlers::deal(
                    tokens,
                    &pb::DealRequest {
                        state: state.into(),
                        viewer: None,
                    },
                )
            }
            _ if seen.must_draw => handlers::draw(
                tokens,
                &pb::DrawRequest {
                    state: state.into(),
                    seat: view.turn.expect("turn"),
                    viewer: None,
                },
            ),
            _ => {
                let moves = &seen.legal_moves;
                let m = &moves[rng.next_u32() as usize % moves.len()];
                handlers::play(
                    tokens,
                    &pb::PlayRequest {
                        state: state.into(),
                        seat: view.turn.expect("turn"),
                        tile: m.tile,
                        end: m.end,
                        viewer: None,
                    },
                )
            }
        }
        .expect("a legal move");
        (state, view) = (answer.state, answer.view);
        assert_eq!(view.viewer, None, "the spectator's view");
    }
}

/// Plays [`MATCHES`] matches at a table, checking every token.
fn table(players: u32, partnership: bool) {
    let ring = Arc::new(KeyRing::new(vec![(1, [0x42; 32])], None).expect("ring"));
    let tokens = Tokens::new(ring, 1024);
    let mut rng = ChaCha8Rng::seed_from_u64(u64::from(players) << 1 | u64::from(partnership));
    let mut checked = 0;
    for i in 0..MATCHES {
        checked += play_match(&tokens, rules(players, partnership, i), &mut rng);
    }
    assert!(checked as u64 > 10 * MATCHES, "{checked} tokens");
}

#[test]
fn two_players_every_tokens_length_follows_from_public_information_alone() {
    table(2, false);
}

#[test]
fn three_players_every_tokens_length_follows_from_public_information_alone() {
    table(3, false);
}

#[test]
fn four_players_every_tokens_length_follows_from_public_information_alone() {
    table(4, false);
}

#[test]
fn partners_every_tokens_length_follows_from_public_information_alone() {
    table(4, true);
}
