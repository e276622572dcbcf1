//! Property tests over random whole games: the invariants every state must keep.

use proptest::prelude::*;
use proptest::strategy::Strategy as _;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

use super::bot::{Strategy, choose};
use super::*;

/// Rule options worth covering: 2, 3, 4 players, the partnership, every hand-size rule
/// and both settlement rules, with targets small and default.
fn any_rules() -> impl proptest::strategy::Strategy<Value = Rules> {
    (
        prop_oneof![
            Just((2, false)),
            Just((3, false)),
            Just((4, false)),
            Just((4, true))
        ],
        prop_oneof![
            Just(HandSizeRule::Standard),
            Just(HandSizeRule::FiveEach),
            Just(HandSizeRule::SevenFive)
        ],
        prop_oneof![
            Just(SettlementRule::OwnPipsOff),
            Just(SettlementRule::WinnerTakesPips)
        ],
        prop_oneof![Just(None), (1u32..=60).prop_map(|n| Some(n * 5))],
    )
        .prop_map(
            |((players, partnership), hand_size, settlement, target)| Rules {
                players,
                partnership,
                hand_size,
                target: target.unwrap_or(Rules::default_target(players)),
                settlement,
                ..Rules::for_players(players)
            },
        )
}

/// The count recomputed from the placements alone, by docs/rules.md section 7.
fn reference_count(layout: &Layout) -> u32 {
    let placements = layout.placements();
    let Some(lead) = placements.first() else {
        return 0;
    };
    let spinner = placements.iter().find(|p| p.spinner);
    let mut total = 0;
    let mut spinner_free = false;
    for open in layout.open_ends() {
        let outer = placements
            .iter()
            .filter(|p| p.arm == Arm::End(open.end))
            .max_by_key(|p| p.index);
        match outer {
            Some(p) if p.spinner => spinner_free = true,
            Some(p) if p.tile.is_double() => total += u32::from(p.tile.pips()),
            Some(p) => total += u32::from(p.far),
            None if matches!(open.end, End::Up | End::Down) => {}
            None if lead.spinner => spinner_free = true,
            None if open.end == End::Left => total += u32::from(lead.near),
            None => total += u32::from(lead.far),
        }
    }
    if spinner_free {
        total += spinner.map_or(0, |p| u32::from(p.tile.pips()));
    }
    total
}

/// Every tile is in exactly one place: a hand, the boneyard or the table.
fn assert_tiles_accounted(game: &Game) {
    let Some(hand) = game.hand.as_ref() else {
        return;
    };
    let mut seen = TileSet::EMPTY;
    let mut count = 0;
    let places = hand.hands.iter().flat_map(|h| h.iter());
    let places = places.chain(hand.boneyard().iter().copied());
    for tile in places.chain(hand.layout.placements().iter().map(|p| p.tile)) {
        assert!(!seen.contains(tile), "{tile} is in two places");
        seen.insert(tile);
        count += 1;
    }
    assert_eq!((count, seen), (28, TileSet::FULL));
}

/// Every (tile, end) the seat on turn could name: accepted exactly when offered.
fn assert_legal_moves_are_exactly_the_accepted_ones(game: &Game) {
    let Some(seat) = game.turn() else { return };
    let offered = game.legal_moves();
    let layout = game.layout().cloned().unwrap_or_default();
    for tile in Tile::all() {
        for end in [
            None,
            Some(End::Left),
            Some(End::Right),
            Some(End::Up),
            Some(End::Down),
        ] {
            let mut g = game.clone();
            let result = g.play(seat, tile, end);
            let in_hand = game.hand(seat).contains(tile);
            let expected = if layout.is_empty() {
                in_hand
                    && offered.iter().any(|m| m.tile == tile)
                    && !matches!(end, Some(End::Up | End::Down))
            } else {
                match end {
                    Some(e) => offered.iter().any(|m| m.tile == tile && m.end == Some(e)),
                    None => offered.iter().filter(|m| m.tile == tile).count() == 1,
                }
            };
            assert_eq!(result.is_ok(), expected, "{tile} on {end:?}: {result:?}");
            if let Ok(events) = result {
                let Some(Event::Played { points, .. }) = events.first() else {
                    panic!("a play reports the placement first: {events:?}")
                };
                let promised = offered.iter().find(|m| {
                    m.tile == tile && (end.is_none() || layout.is_empty() || m.end == end)
                });
                assert_eq!(
                    Some(*points),
                    promised.map(|m| m.points),
                    "points as offered"
                );
            } else {
                assert_eq!(g, *game, "a refused play changed the game");
            }
        }
    }
    let mut g = game.clone();
    assert_eq!(
        g.draw(seat).is_ok(),
        offered.is_empty(),
        "draw only without a playable tile"
    );
    assert_eq!(game.must_draw(), offered.is_empty());
}

/// Plays a whole game, checking the invariants after every action.
fn play_checked(rules: Rules, seed: u64, strategy: Strategy, exhaustive: bool) -> Game {
    let mut game = Game::new(rules, seed).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    let mut scratch = Vec::new();
    let mut events = Vec::new();
    for _ in 0..100_000 {
        if exhaustive {
            assert_legal_moves_are_exactly_the_accepted_ones(&game);
        }
        let Some(action) = choose(&game, strategy, &mut rng, &mut scratch) else {
            break;
        };
        let before: Vec<i32> = game.scores().to_vec();
        events.clear();
        game.apply(action, &mut events).unwrap();
        assert_tiles_accounted(&game);
        assert_eq!(game.check(), Ok(()), "the engine keeps its invariants");
        assert!(game.replays());
        assert_eq!(
            Game::replay(rules, seed, &game.scorecard()).as_ref(),
            Ok(&game),
            "the scorecard rebuilds the game"
        );
        for (b, a) in before.iter().zip(game.scores()) {
            assert_eq!((a - b) % 5, 0, "scores move by multiples of five");
        }
        assert_eq!(game.sheet().totals()[..rules.sides()], *game.scores());
        if let Some(layout) = game.layout() {
            let shown: u32 = layout.open_ends().map(|e| u32::from(e.value)).sum();
            assert_eq!(
                layout.count(),
                shown,
                "the count is the sum of the shown ends"
            );
            assert_eq!(layout.count(), reference_count(layout));
        }
        for event in &events {
            if let Event::Played { count, points, .. } = *event {
                assert!(points == 0 || (points == count && count.is_multiple_of(5)));
            }
        }
    }
    game
}

fn assert_one_winner(game: &Game) {
    let winner = game.winner().expect("the game ended");
    let target = game.rules().target as i32;
    for (side, &score) in game.scores().iter().enumerate() {
        assert_eq!(
            score >= target,
            side == winner,
            "scores {:?}",
            game.scores()
        );
    }
    assert_eq!(game.phase(), Phase::Over);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_games_keep_every_invariant_and_end_with_one_winner(
        rules in any_rules(),
        seed in any::<u64>(),
        greedy in any::<bool>(),
    ) {
        let strategy = if greedy { Strategy::Greedy } else { Strategy::Random };
        let game = play_checked(rules, seed, strategy, false);
        assert_one_winner(&game);
    }

    #[test]
    fn offered_moves_are_exactly_the_accepted_ones(rules in any_rules(), seed in any::<u64>()) {
        let mut rules = rules;
        rules.target = rules.target.min(100);
        let game = play_checked(rules, seed, Strategy::Random, true);
        assert_one_winner(&game);
    }
}
