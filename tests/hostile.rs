//! Hostile input: over a million mutated tokens through the handlers (every one
//! refused with INVALID_ARGUMENT), impossible states sealed with the real key through
//! the real service (refused as TOKEN_INVALID, no panic, no loop), and replayed tokens
//! (the same move from an older token gives the same outcome, never another deal or
//! draw). See docs/RELIABILITY.md.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use allfives::engine::bot::{Strategy, choose};
use allfives::engine::{Game, Phase, Rules, Tile};
use allfives::proto::internal as ipb;
use allfives::proto::v1 as pb;
use allfives::service::convert::{end_out, tile_out};
use allfives::service::handlers;
use allfives::state::{self, KeyRing, Record, Tokens, codec, token};
use common::{Client, TestServer, new_match, reason};
use prost::Message;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};
use tonic::Code;

/// Mutated tokens the mutation test sends at least.
const MUTATIONS: u64 = 1_000_000;

/// Bytes of the token's authentication tag, at its end (`src/state/token.rs`).
const TAG_LEN: usize = 16;

/// The test key ring: key 1 seals, key 2 also opens (so a key-id swap to 2 names a key
/// the server holds, and must still fail authentication).
fn test_ring() -> KeyRing {
    KeyRing::new(vec![(1, [0x11; 32]), (2, [0x22; 32])], None).expect("ring")
}

/// The tables the matches are played at: 2, 3 and 4 players, partnership, both
/// settlement rules, the other hand sizes.
fn tables() -> Vec<pb::Rules> {
    let rules =
        |players, partnership, hand_size: pb::HandSizeRule, settlement: pb::SettlementRule| {
            pb::Rules {
                players,
                partnership,
                hand_size: hand_size as i32,
                target: 100,
                settlement: settlement as i32,
            }
        };
    use pb::HandSizeRule as H;
    use pb::SettlementRule as S;
    vec![
        rules(2, false, H::Standard, S::OwnPipsOff),
        rules(3, false, H::SevenFive, S::WinnerTakesPips),
        rules(4, true, H::Standard, S::OwnPipsOff),
        rules(4, false, H::FiveEach, S::WinnerTakesPips),
    ]
}

/// Every token of whole matches played through the handlers, as the service issues
/// them: after NewGame and after every Deal, Play and Draw.
fn match_tokens(ring: &Tokens) -> Vec<Vec<u8>> {
    let mut tokens = Vec::new();
    for (i, rules) in tables().into_iter().enumerate() {
        let new = handlers::new_game(
            ring,
            &pb::NewGameRequest {
                rules: Some(rules),
                seed: Some(i as u64),
                viewer: None,
            },
        )
        .expect("NewGame");
        let (mut state, mut view) = (new.state, new.view);
        tokens.push(state.clone());
        for step in 0.. {
            assert!(step < 20_000, "a match that does not end");
            let answer = match pb::Phase::try_from(view.phase).expect("phase") {
                pb::Phase::Over => break,
                pb::Phase::Dealing => handlers::deal(
                    ring,
                    &pb::DealRequest {
                        state: state.into(),
                        viewer: None,
                    },
                ),
                _ => {
                    let seat = view.turn.expect("a seat on turn");
                    let seen = handlers::score(
                        ring,
                        &pb::ScoreRequest {
                            state: state.clone().into(),
                            viewer: Some(seat),
                        },
                    )
                    .expect("Score")
                    .view
                    .expect("view");
                    if seen.must_draw {
                        handlers::draw(
                            ring,
                            &pb::DrawRequest {
                                state: state.into(),
                                seat,
                                viewer: None,
                            },
                        )
                    } else {
                        let m = &seen.legal_moves[step % seen.legal_moves.len()];
                        handlers::play(
                            ring,
                            &pb::PlayRequest {
                                state: state.into(),
                                seat,
                                tile: m.tile,
                                end: m.end,
                                viewer: None,
                            },
                        )
                    }
                }
            }
            .expect("a legal move");
            (state, view) = (answer.state, answer.view);
            tokens.push(state.clone());
        }
    }
    tokens
}

/// Kinds of mutation, counted separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    BitFlip,
    ByteChange,
    Truncation,
    Extension,
    Splice,
    KeyIdSwap,
}

/// Sends `mutant` to Deal or Score through the handlers; it must be refused with
/// INVALID_ARGUMENT and a TOKEN_* reason, which is returned.
fn refused(ring: &Tokens, mutant: Vec<u8>, deal: bool, what: &dyn Fn() -> String) -> &'static str {
    let error = if deal {
        handlers::deal(
            ring,
            &pb::DealRequest {
                state: mutant.into(),
                viewer: None,
            },
        )
        .err()
    } else {
        handlers::score(
            ring,
            &pb::ScoreRequest {
                state: mutant.into(),
                viewer: None,
            },
        )
        .err()
    };
    let Some(error) = error else {
        panic!("a mutated token was accepted: {}", what())
    };
    let reason = error.reason();
    let status = tonic::Status::from(error);
    assert_eq!(status.code(), Code::InvalidArgument, "{}", what());
    assert!(reason.starts_with("TOKEN_"), "{reason}: {}", what());
    reason
}

/// Tallies per kind of mutation and per reason.
#[derive(Default)]
struct Tally {
    kinds: BTreeMap<Kind, u64>,
    reasons: BTreeMap<&'static str, u64>,
    total: u64,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        for (k, n) in other.kinds {
            *self.kinds.entry(k).or_default() += n;
        }
        for (r, n) in other.reasons {
            *self.reasons.entry(r).or_default() += n;
        }
        self.total += other.total;
    }
}

/// Mutates `tokens[first..]` in turn (every `step`-th), the first visit of each token
/// exhaustively in its header, tag, key id and length, later visits at random, until
/// `quota` mutants were refused.
fn mutate(ring: &Tokens, tokens: &[Vec<u8>], first: usize, step: usize, quota: u64) -> Tally {
    let mut rng = ChaCha8Rng::seed_from_u64(first as u64);
    let mut tally = Tally::default();
    let below =
        |rng: &mut ChaCha8Rng, n: usize| ((u64::from(rng.next_u32()) * n as u64) >> 32) as usize;
    let mut visit = 0usize;
    let ours: Vec<usize> = (first..tokens.len()).step_by(step).collect();
    while tally.total < quota || visit < ours.len() {
        let index = ours[visit % ours.len()];
        let exhaustive = visit < ours.len();
        visit += 1;
        let original = &tokens[index];
        let len = original.len();
        let mut mutants: Vec<(Kind, Vec<u8>)> = Vec::new();
        let flip = |bit: usize| {
            let mut t = original.clone();
            t[bit / 8] ^= 1 << (bit % 8);
            (Kind::BitFlip, t)
        };
        if exhaustive {
            // Every bit of the header (version, key id, nonce) and of the tag.
            let header = token::OVERHEAD - TAG_LEN;
            mutants.extend(
                (0..header * 8)
                    .chain((len - TAG_LEN) * 8..len * 8)
                    .map(flip),
            );
            // Every other key id: unknown ids, and the other key the server holds.
            mutants.extend((0..=255u8).filter(|&id| id != original[1]).map(|id| {
                let mut t = original.clone();
                t[1] = id;
                (Kind::KeyIdSwap, t)
            }));
            // Every shorter length, and longer ones up to past the 1024-byte limit.
            mutants.extend((0..len).map(|n| (Kind::Truncation, original[..n].to_vec())));
            for extra in [1, 2, 16, 1025 - len.min(1024)] {
                let mut t = original.clone();
                t.extend((0..extra).map(|i| i as u8));
                mutants.push((Kind::Extension, t));
            }
        } else {
            mutants.extend((0..64).map(|_| flip(below(&mut rng, len * 8))));
            for _ in 0..16 {
                let mut t = original.clone();
                let at = below(&mut rng, len);
                t[at] = t[at].wrapping_add(1 + below(&mut rng, 255) as u8);
                mutants.push((Kind::ByteChange, t));
            }
            for _ in 0..4 {
                mutants.push((Kind::Truncation, original[..below(&mut rng, len)].to_vec()));
                let mut t = original.clone();
                t.extend((0..1 + below(&mut rng, 64)).map(|_| rng.next_u32() as u8));
                mutants.push((Kind::Extension, t));
            }
            // The head of this token and the tail of another, cut anywhere.
            for _ in 0..8 {
                let other = &tokens[below(&mut rng, tokens.len())];
                let cut = below(&mut rng, len + 1);
                let from = below(&mut rng, other.len() + 1);
                let mut t = original[..cut].to_vec();
                t.extend_from_slice(&other[from..]);
                if t != *original && t != *other {
                    mutants.push((Kind::Splice, t));
                }
            }
        }
        for (i, (kind, mutant)) in mutants.into_iter().enumerate() {
            let what = || format!("{kind:?} of token {index}");
            let reason = refused(ring, mutant, i % 2 == 0, &what);
            *tally.kinds.entry(kind).or_default() += 1;
            *tally.reasons.entry(reason).or_default() += 1;
            tally.total += 1;
        }
    }
    tally
}

#[test]
fn a_million_mutated_tokens_are_all_refused_with_invalid_argument() {
    // Through the token cache, as the server runs: the genuine tokens of the last
    // matches are kept in it, and their mutants must still be refused.
    let ring = Tokens::new(Arc::new(test_ring()), 4096);
    let started = Instant::now();
    let tokens = match_tokens(&ring);
    let collected = started.elapsed();
    // Every genuine token opens (the mutants' originals are good).
    for t in &tokens {
        state::open(ring.ring(), t).expect("a token the service issued opens");
    }
    let threads = 2;
    let mut tally = Tally::default();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|first| {
                let (ring, tokens) = (&ring, &tokens);
                scope
                    .spawn(move || mutate(ring, tokens, first, threads, MUTATIONS / threads as u64))
            })
            .collect();
        for w in workers {
            tally.add(w.join().expect("mutation worker"));
        }
    });
    // Straight to stdout, past the test harness's capture: CI's log shows the count.
    use std::io::Write;
    let _ = writeln!(
        std::io::stdout(),
        "hostile: {} mutated tokens from {} real tokens of {} matches refused with \
         INVALID_ARGUMENT in {:.2} s (matches played in {:.2} s): {:?}; reasons {:?}",
        tally.total,
        tokens.len(),
        tables().len(),
        started.elapsed().as_secs_f64(),
        collected.as_secs_f64(),
        tally.kinds,
        tally.reasons,
    );
    assert!(tally.total >= MUTATIONS);
    assert_eq!(tally.kinds.len(), 6, "every kind of mutation was tried");
}

// ---------------------------------------------------------------------------------
// Impossible states, sealed with the real key.

/// A game's plaintext as the internal message, to tamper with.
fn plain(game: &Game) -> ipb::State {
    let bytes = codec::encode(&Record {
        match_id: [9; 16],
        game: game.clone(),
    });
    ipb::State::decode(bytes.as_slice()).expect("own encoding")
}

fn seal(ring: &KeyRing, state: &ipb::State) -> Vec<u8> {
    token::seal(ring, &state.encode_to_vec()).expect("seal")
}

/// States of one 2-player match: dealt, a few moves in, a hand just ended, over.
fn sample_states() -> (Game, Game, Game, Game) {
    let mut game = Game::new(Rules::for_players(2), 17).expect("rules");
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let mut scratch = Vec::new();
    let (mut dealt, mut mid, mut ended) = (None, None, None);
    while let Some(action) = choose(&game, Strategy::Greedy, &mut rng, &mut scratch) {
        game.apply(action, &mut Vec::new()).expect("move");
        let placed = game.layout().map_or(0, |l| l.placements().len());
        if game.phase() == Phase::Playing && dealt.is_none() {
            dealt = Some(game.clone());
        }
        if game.phase() == Phase::Playing && placed >= 3 && mid.is_none() {
            mid = Some(game.clone());
        }
        if game.phase() == Phase::Dealing && game.hand_number() > 0 && ended.is_none() {
            ended = Some(game.clone());
        }
    }
    (dealt.unwrap(), mid.unwrap(), ended.unwrap(), game)
}

fn hand(s: &mut ipb::State) -> &mut ipb::Hand {
    s.hand.as_mut().expect("a hand")
}

fn lowest(bits: u32) -> u32 {
    bits & bits.wrapping_neg()
}

type Tamper = Box<dyn Fn(&mut ipb::State)>;

/// Tampered states that `codec::decode` must refuse, each from a sound base state.
fn impossible_states() -> Vec<(&'static str, ipb::State)> {
    let (dealt, mid, ended, over) = sample_states();
    let (dealt, mid, ended, over) = (plain(&dealt), plain(&mid), plain(&ended), plain(&over));
    let cases: Vec<(&str, &ipb::State, Tamper)> = vec![
        (
            "a tile in two hands",
            &dealt,
            Box::new(move |s| {
                let h = hand(s);
                h.hands[1] |= lowest(h.hands[0]);
            }),
        ),
        (
            "a tile in a hand and the boneyard",
            &dealt,
            Box::new(move |s| {
                let h = hand(s);
                let t = lowest(h.hands[0]).trailing_zeros() as u8;
                h.boneyard.push(t);
            }),
        ),
        (
            "a tile in a hand and on the table",
            &mid,
            Box::new(move |s| {
                let h = hand(s);
                let t = h.placements[0] / 5;
                h.hands[0] |= 1 << t;
            }),
        ),
        (
            "a tile missing",
            &dealt,
            Box::new(move |s| {
                let h = hand(s);
                h.hands[0] &= !lowest(h.hands[0]);
            }),
        ),
        (
            "a tile missing from the boneyard",
            &mid,
            Box::new(move |s| {
                hand(s).boneyard.pop();
            }),
        ),
        (
            "the seat on turn out of range",
            &dealt,
            Box::new(move |s| hand(s).turn = 2),
        ),
        (
            "the seat on turn far out of range",
            &dealt,
            Box::new(move |s| hand(s).turn = u32::MAX),
        ),
        (
            "a fifth seat's hand",
            &dealt,
            Box::new(move |s| hand(s).hands.push(0)),
        ),
        (
            "a hand short of seats",
            &dealt,
            Box::new(move |s| {
                hand(s).hands.pop();
            }),
        ),
        (
            "the next starter out of range",
            &ended,
            Box::new(move |s| s.next_starter = Some(3)),
        ),
        (
            "the winner out of range",
            &over,
            Box::new(move |s| s.winner = Some(7)),
        ),
        (
            "the winner under the target",
            &mid,
            Box::new(move |s| s.winner = Some(0)),
        ),
        (
            "the hand result's seat out of range",
            &ended,
            Box::new(move |s| {
                if let Some(r) = hand(s).result.as_mut() {
                    r.seat = 5;
                }
            }),
        ),
        (
            "a tile index past the set",
            &dealt,
            Box::new(move |s| hand(s).boneyard[0] = 28),
        ),
        (
            "hand bits past the set",
            &dealt,
            Box::new(move |s| hand(s).hands[0] |= 1 << 30),
        ),
        (
            "the lead placed on an end",
            &mid,
            Box::new(move |s| hand(s).placements[0] += 1),
        ),
        (
            "the same tile placed twice",
            &mid,
            Box::new(move |s| {
                let h = hand(s);
                let first = h.placements[0];
                h.placements[1] = first / 5 * 5 + h.placements[1] % 5;
            }),
        ),
        (
            "a placement on an end that is not open",
            &mid,
            Box::new(move |s| {
                // UP and DOWN open only once both sides of a spinner are joined: the
                // second tile can never go there.
                let h = hand(s);
                h.placements[1] = h.placements[1] / 5 * 5 + 3;
            }),
        ),
        (
            "scores that differ from the sheet",
            &mid,
            Box::new(move |s| s.scores[0] += 1),
        ),
        (
            "points beyond any game",
            &mid,
            Box::new(move |s| {
                s.scores[0] = i32::MAX;
                s.sheet[0] = i32::MAX;
            }),
        ),
        (
            "the target reached without a winner",
            &mid,
            Box::new(move |s| {
                let target = s.rules.as_ref().expect("rules").target_fives as i32;
                s.scores[0] += target;
                s.sheet[0] += target;
            }),
        ),
        (
            "hands dealt differs from the hand number",
            &mid,
            Box::new(move |s| hand(s).number += 1),
        ),
        (
            "a sheet row missing",
            &ended,
            Box::new(move |s| {
                s.sheet.truncate(s.sheet.len() - 2);
            }),
        ),
        (
            "rules out of range",
            &dealt,
            Box::new(move |s| {
                s.rules.as_mut().expect("rules").players = 5;
            }),
        ),
        (
            "a target of zero",
            &dealt,
            Box::new(move |s| {
                s.rules.as_mut().expect("rules").target_fives = 0;
            }),
        ),
        ("an unknown format", &dealt, Box::new(move |s| s.format = 2)),
        (
            "a short match id",
            &dealt,
            Box::new(move |s| s.match_id.truncate(8)),
        ),
        // Regression (docs/RELIABILITY.md, finding 1): 33 sheet rows, each within
        // bounds, whose sum overflowed `ScoreSheet::totals` (a panic in debug builds).
        (
            "a sheet whose sum overflows",
            &ended,
            Box::new(move |s| {
                let big = (1 << 28) / 5;
                let width = s.sheet.len();
                s.hands_dealt = 40;
                hand(s).number = 40;
                s.sheet = (0..32 * width)
                    .map(|i| if i % width == 0 { big } else { 0 })
                    .collect();
                s.carried = (0..width).map(|i| if i == 0 { big } else { 0 }).collect();
                s.scores = vec![0; width / 2];
            }),
        ),
        // Regression (finding 2): the move counter at its limit; the next move
        // overflowed it (a panic in debug builds).
        (
            "the move counter at its limit",
            &mid,
            Box::new(move |s| s.moves = u32::MAX),
        ),
        (
            "the hand counter at its limit",
            &ended,
            Box::new(move |s| {
                // Otherwise consistent: 32 rows (the last the real one) and a carried row.
                let width = s.sheet.len();
                let real = s.sheet.clone();
                s.sheet = vec![0; 31 * width];
                s.sheet.extend(real);
                s.carried = vec![0; width];
                s.hands_dealt = u32::MAX;
                hand(s).number = u32::MAX;
            }),
        ),
    ];
    cases
        .into_iter()
        .map(|(name, base, tamper)| {
            let mut s = base.clone();
            tamper(&mut s);
            assert_ne!(&s, base, "{name}: the tamper changed nothing");
            (name, s)
        })
        .chain(stuck_states())
        .collect()
}

fn t(a: u8, b: u8) -> Tile {
    Tile::new(a, b).expect("tile")
}

/// A two-seat hand in play with [6|6] down and an empty boneyard: seat 0 holds the 21
/// tiles without a six, seat 1 the other six sixes. With seat 1 on turn it is a fine
/// state; with seat 0 on turn nobody could ever act (no play, no draw) and a careless
/// engine would spin passing: it must be refused.
fn stuck_hand(turn: u32) -> ipb::State {
    let mut game = Game::new(Rules::for_players(2), 5).expect("rules");
    game.deal().expect("deal");
    let mut s = plain(&game);
    let six_six = t(6, 6);
    let sixes: u32 = Tile::all()
        .filter(|x| x.has(6) && *x != six_six)
        .map(|x| 1 << x.index())
        .sum();
    let others: u32 = Tile::all()
        .filter(|x| !x.has(6))
        .map(|x| 1 << x.index())
        .sum();
    let h = s.hand.as_mut().expect("hand");
    h.hands = vec![others, sixes];
    h.boneyard.clear();
    h.placements = vec![six_six.index() * 5];
    h.turn = turn;
    s
}

fn stuck_states() -> Vec<(&'static str, ipb::State)> {
    vec![(
        "a seat on turn that can neither play nor draw",
        stuck_hand(0),
    )]
}

#[test]
fn impossible_states_are_refused_by_decode_and_the_same_states_unharmed_are_not() {
    for (name, s) in impossible_states() {
        let bytes = s.encode_to_vec();
        assert!(codec::decode(&bytes).is_err(), "{name}: accepted");
    }
    // The controls: the untouched bases and the playable twin of the stuck hand.
    let (dealt, mid, ended, over) = sample_states();
    for game in [dealt, mid, ended, over] {
        assert!(codec::decode(&plain(&game).encode_to_vec()).is_ok());
    }
    assert!(codec::decode(&stuck_hand(1).encode_to_vec()).is_ok());
    // The precise refusals of the two regressions.
    let named = |name: &str| {
        let (_, s) = impossible_states()
            .into_iter()
            .find(|(n, _)| *n == name)
            .expect("case");
        codec::decode(&s.encode_to_vec()).expect_err("refused")
    };
    assert_eq!(
        named("a sheet whose sum overflows"),
        codec::DecodeError::Corrupt("sheet out of range")
    );
    for name in [
        "the move counter at its limit",
        "the hand counter at its limit",
    ] {
        assert_eq!(
            named(name),
            codec::DecodeError::Corrupt("counter at its limit")
        );
    }
    assert_eq!(
        named("a seat on turn that can neither play nor draw"),
        codec::DecodeError::Corrupt("the seat on turn can neither play nor draw")
    );
}

async fn score(
    client: &mut Client,
    state: Vec<u8>,
    viewer: Option<u32>,
) -> Result<pb::ScoreResponse, tonic::Status> {
    client
        .score(pb::ScoreRequest {
            state: state.into(),
            viewer,
        })
        .await
        .map(|r| r.into_inner())
}

#[tokio::test]
async fn impossible_states_sealed_with_the_key_are_refused_through_the_service() {
    let ring = test_ring();
    let server = TestServer::start(test_ring()).await;
    let mut client = server.client().await;
    for (name, s) in impossible_states() {
        let token = seal(&ring, &s);
        // A plaintext format this build does not know says so; every other
        // impossible state is simply invalid.
        let expected = match name {
            "an unknown format" => "TOKEN_UNSUPPORTED_VERSION",
            _ => "TOKEN_INVALID",
        };
        let status = score(&mut client, token.clone(), None)
            .await
            .expect_err(name);
        assert_eq!(
            (status.code(), reason(&status).as_str()),
            (Code::InvalidArgument, expected),
            "{name}: {status:?}"
        );
        let status = client
            .deal(pb::DealRequest {
                state: token.clone().into(),
                viewer: None,
            })
            .await
            .expect_err(name);
        assert_eq!(reason(&status), expected, "{name}");
        let status = client
            .draw(pb::DrawRequest {
                state: token.into(),
                seat: 0,
                viewer: None,
            })
            .await
            .expect_err(name);
        assert_eq!(reason(&status), expected, "{name}");
    }

    // The stuck hand's playable twin is served, and played out it ends: the engine
    // passes and blocks without looping.
    let mut state = seal(&ring, &stuck_hand(1));
    for _ in 0..64 {
        let view = score(&mut client, state.clone(), None)
            .await
            .expect("served")
            .view
            .expect("view");
        let Some(seat) = view.turn else { break };
        let seen = score(&mut client, state.clone(), Some(seat))
            .await
            .expect("served")
            .view
            .expect("view");
        assert!(!seen.must_draw, "the boneyard is empty");
        let m = seen.legal_moves.first().expect("the seat on turn can play");
        state = client
            .play(pb::PlayRequest {
                state: state.into(),
                seat,
                tile: m.tile,
                end: m.end,
                viewer: None,
            })
            .await
            .expect("Play")
            .into_inner()
            .state;
    }
    let view = score(&mut client, state, None)
        .await
        .expect("served")
        .view
        .expect("view");
    assert_ne!(view.phase, pb::Phase::Playing as i32, "the hand ended");

    // The counter one below its limit still plays; the token it answers (at the limit)
    // is then refused cleanly, never overflowed.
    let (_, mid, _, _) = sample_states();
    let mut s = plain(&mid);
    s.moves = u32::MAX - 1;
    let token = seal(&ring, &s);
    let seat = mid.turn().expect("turn") as u32;
    let m = mid.legal_moves()[0];
    let (tile, end) = (tile_out(m.tile), end_out(m.end));
    let played = client
        .play(pb::PlayRequest {
            state: token.into(),
            seat,
            tile: Some(tile),
            end,
            viewer: None,
        })
        .await
        .expect("a move below the limit")
        .into_inner();
    assert_eq!(played.view.expect("view").moves, u32::MAX);
    let status = score(&mut client, played.state, None)
        .await
        .expect_err("at the limit");
    assert_eq!(reason(&status), "TOKEN_INVALID");

    // Nothing above hurt the server.
    let new = client
        .new_game(pb::NewGameRequest::default())
        .await
        .expect("NewGame");
    assert!(!new.into_inner().state.is_empty());
}

// ---------------------------------------------------------------------------------
// Replay.

/// One call of a match: the token it was sent with, the request, and what it answered.
enum Step {
    Deal(pb::DealRequest, pb::DealResponse),
    Play(pb::PlayRequest, pb::PlayResponse),
    Draw(pb::DrawRequest, pb::DrawResponse),
}

#[tokio::test]
async fn replaying_an_older_token_gives_the_same_outcome_and_never_another_deal_or_draw() {
    let ring = test_ring();
    let server = TestServer::start(test_ring()).await;
    let mut client = server.client().await;
    // A fixed seed: the test needs a match with several deals and some draws, which
    // about 0.3% of seeds do not give (a first hand reaching the target).
    let rules = pb::Rules {
        players: 3,
        target: 100,
        ..Default::default()
    };
    let (mut state, mut view) = new_match(&mut client, rules, 12).await;
    let mut steps = Vec::new();
    while view.phase != pb::Phase::Over as i32 {
        assert!(steps.len() < 5000, "a match that does not end");
        if view.phase == pb::Phase::Dealing as i32 {
            let req = pb::DealRequest {
                state: state.into(),
                viewer: Some(0),
            };
            let r = client.deal(req.clone()).await.expect("Deal").into_inner();
            (state, view) = (r.state.clone(), r.view.clone().expect("view"));
            steps.push(Step::Deal(req, r));
            continue;
        }
        let seat = view.turn.expect("turn");
        let seen = score(&mut client, state.clone(), Some(seat))
            .await
            .expect("Score")
            .view
            .expect("view");
        if seen.must_draw {
            let req = pb::DrawRequest {
                state: state.into(),
                seat,
                viewer: Some(seat),
            };
            let r = client.draw(req.clone()).await.expect("Draw").into_inner();
            (state, view) = (r.state.clone(), r.view.clone().expect("view"));
            steps.push(Step::Draw(req, r));
        } else {
            let m = seen.legal_moves.last().expect("a move");
            let req = pb::PlayRequest {
                state: state.into(),
                seat,
                tile: m.tile,
                end: m.end,
                viewer: Some(seat),
            };
            let r = client.play(req.clone()).await.expect("Play").into_inner();
            (state, view) = (r.state.clone(), r.view.clone().expect("view"));
            steps.push(Step::Play(req, r));
        }
    }
    let latest = view.moves;
    let opened = |token: &[u8]| state::open(&ring, token).expect("opens").game;

    // Every step again from its (now old) token: the same game, view and events.
    let (mut deals, mut draws) = (0, 0);
    for step in &steps {
        match step {
            Step::Deal(req, first) => {
                deals += 1;
                let again = client
                    .deal(req.clone())
                    .await
                    .expect("Deal again")
                    .into_inner();
                assert_eq!(opened(&again.state), opened(&first.state), "the same deal");
                assert_eq!((&again.view, &again.events), (&first.view, &first.events));
            }
            Step::Draw(req, first) => {
                draws += 1;
                let again = client
                    .draw(req.clone())
                    .await
                    .expect("Draw again")
                    .into_inner();
                assert_eq!(
                    opened(&again.state),
                    opened(&first.state),
                    "the same tile drawn"
                );
                assert_eq!((&again.view, &again.events), (&first.view, &first.events));
            }
            Step::Play(req, first) => {
                let again = client
                    .play(req.clone())
                    .await
                    .expect("Play again")
                    .into_inner();
                assert_eq!(opened(&again.state), opened(&first.state));
                assert_eq!((&again.view, &again.events), (&first.view, &first.events));
            }
        }
    }
    assert!(
        deals > 1 && draws > 0,
        "{deals} deals, {draws} draws replayed"
    );

    // A take-back is not refused: the server cannot know a token is stale. The answer
    // shows it: its move counter is behind the latest one the caller holds.
    let (req, first, other) = steps
        .iter()
        .find_map(|step| {
            let Step::Play(req, first) = step else {
                return None;
            };
            let chosen = (req.tile, req.end);
            let other = opened(&req.state)
                .legal_moves()
                .into_iter()
                .find(|m| (Some(tile_out(m.tile)), end_out(m.end)) != chosen)?;
            Some((req, first, other))
        })
        .expect("a move with an alternative");
    let taken_back = client
        .play(pb::PlayRequest {
            tile: Some(tile_out(other.tile)),
            end: end_out(other.end),
            ..req.clone()
        })
        .await
        .expect("a take-back is served")
        .into_inner();
    let moves = taken_back.view.expect("view").moves;
    assert_eq!(moves, first.view.as_ref().expect("view").moves);
    assert!(
        moves < latest,
        "the counter shows the token was stale: {moves} < {latest}"
    );
}
