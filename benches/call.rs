//! One Play call's parts, without the network: open the token, decode and replay the
//! game, apply the move, build the view, render it as protobuf, encode the game, the
//! state id (computed on opening and on sealing), seal the token, encode the response
//! (prost, as the service's codec does), the whole handler (`service::moves::play`
//! and `steps::finish`) end to end, and the handler with its answer encoded: all of
//! a call's work that is not tonic's.
//!
//! The tokens are those of a hot-seat match as the service seals them: every seat
//! claimed (a credential each), the match's secret and the previous state's id; the
//! Play carries its seat's credential and asks for that seat's view (a Play's viewer
//! must be its own seat, as `examples/loadgen.rs` now asks; before seat credentials it
//! asked for the next seat's).
//!
//! `cargo bench --bench call` measures; `cargo test --benches` runs each benchmark once.
//! Figures and what they are compared with: docs/PERFORMANCE.md, "gRPC calls".
//!
//! Two positions, each the state just before a Play:
//! - `2p`: a two-player match in its third hand, eight tiles down (a typical call);
//! - `4p-long`: four players scoring alone, past 33 hands, so the score sheet is full
//!   (random players, whose matches run long: the largest tokens there are).
//!
//! And `replay/<n>-actions`: decoding a plaintext whose hand has had `n` plays and
//! draws, which replays them through the engine (the cost of opening a token the
//! cache does not hold, by hand length).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use allfives::engine::bot::{self, Strategy};
use allfives::engine::{Action, Game, Move, Rules};
use allfives::proto::v1 as pb;
use allfives::service::convert::{Table, event_out, view_out};
use allfives::service::steps::Policy;
use allfives::service::{moves, steps};
use allfives::state::{KeyRing, Player, Record, Seats, Tokens, lineage, plaintext, token};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use prost::Message;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

/// The time calls are judged at (no clock runs in these calls' matches).
const JUDGE: allfives::service::clocks::Judge = allfives::service::clocks::Judge {
    now_ms: 1_800_000_000_000,
    grace_ms: 2000,
    skew_ms: 1000,
    show_player_ids: false,
};

/// A game position just before a Play, and everything a call made from it carries.
struct Position {
    name: &'static str,
    record: Record,
    /// The Play the bot chooses there.
    action: Action,
    /// The seat playing, whose view the Play asks for (as the load generator does).
    viewer: usize,
    token: Vec<u8>,
    request: pb::PlayRequest,
}

/// The credential of `seat` in the benchmarks' matches.
fn credential(seat: usize) -> [u8; 16] {
    [0xC0 | seat as u8; 16]
}

/// `game` as the service seals it in a hot-seat match: every seat claimed, a secret, and
/// the id of the state it was made from.
fn hot_seat(game: Game) -> Record {
    let mut seats = Seats::OPEN;
    for (seat, slot) in seats.0.iter_mut().enumerate().take(game.rules().players) {
        *slot = Player::Human(credential(seat));
    }
    Record {
        match_id: allfives::state::MatchId([0x5A; allfives::state::MATCH_ID_LEN]),
        game,
        seats,
        secret: [0x3C; 16],
        previous: Some([0x77; 16]),
        stored: false,
        names: Default::default(),
        clocks: None,
        player_ids: Default::default(),
    }
}

/// Plays bots from `Game::new(rules, seed)` until `stop` says so at a Play.
fn position(
    name: &'static str,
    ring: &KeyRing,
    rules: Rules,
    strategy: Strategy,
    seed: u64,
    stop: impl Fn(&Game) -> bool,
) -> Position {
    let mut game = Game::new(rules, seed).expect("rules");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut moves: Vec<Move> = Vec::new();
    loop {
        let action = bot::choose(&game, strategy, &mut rng, &mut moves)
            .expect("the match ended before the position was reached");
        if let Action::Play { seat, tile, end } = action
            && stop(&game)
        {
            let record = hot_seat(game);
            let token = token::seal(ring, &plaintext::encode(&record)).expect("seal");
            let viewer = seat;
            let request = pb::PlayRequest {
                state: token.clone().into(),
                seat: seat as u32,
                tile: Some(pb::Tile {
                    a: u32::from(tile.lo()),
                    b: u32::from(tile.hi()),
                }),
                end: allfives::service::convert::end_out(end),
                viewer: Some(viewer as u32),
                credential: credential(seat).to_vec(),
            };
            return Position {
                name,
                record,
                action,
                viewer,
                token,
                request,
            };
        }
        game.apply(action, &mut Vec::new()).expect("a legal action");
    }
}

fn positions(ring: &KeyRing) -> Vec<Position> {
    vec![
        position(
            "2p",
            ring,
            Rules::for_players(2),
            Strategy::Greedy,
            7,
            |g| g.hand_number() == 3 && g.layout().is_some_and(|l| l.placements().len() == 8),
        ),
        position(
            "4p-long",
            ring,
            Rules::for_players(4),
            Strategy::Random,
            2,
            |g| g.hand_number() > 33 && g.layout().is_some_and(|l| l.placements().len() == 6),
        ),
    ]
}

/// The whole Play handler, as the service runs it: the seat's move, then the bots' (none
/// here), sealed and rendered.
fn handle_play(tokens: &Tokens, request: &pb::PlayRequest) -> steps::Answer {
    let step = moves::play(tokens, &JUDGE, request).expect("play");
    steps::finish(tokens, &Policy::default(), step).expect("finish")
}

/// A Play handled and its answer encoded into `buf` by prost, as the server's codec
/// does; its length. Never inlined: `benches/instructions.sh` counts its calls.
#[inline(never)]
fn play_written(tokens: &Tokens, request: &pb::PlayRequest, buf: &mut Vec<u8>) -> usize {
    let a = handle_play(tokens, request);
    let response = pb::PlayResponse {
        state: a.state,
        view: Some(a.view),
        events: a.events,
    };
    buf.clear();
    response.encode(buf).expect("a vector grows");
    buf.len()
}

fn parts(c: &mut Criterion) {
    let ring = Arc::new(KeyRing::new(vec![(1, [7; 32])], None).expect("ring"));
    // The handler benchmarks open every token by the cipher (a token that comes back to
    // another replica, or a second time), except `-cached`: the token the server sealed
    // last, its game kept (`state::cache`).
    let uncached = Tokens::uncached(Arc::clone(&ring));
    let cached = Tokens::new(Arc::clone(&ring), 64);
    for p in positions(&ring) {
        let mut group = c.benchmark_group(format!("call/{}", p.name));
        let plaintext = plaintext::encode(&p.record);
        let mut after = p.record.clone();
        let mut events = Vec::new();
        after.game.apply(p.action, &mut events).expect("legal");
        let view = after.game.view(Some(p.viewer)).expect("view");
        let match_id = "5a".repeat(allfives::state::MATCH_ID_LEN);
        let after_plaintext = plaintext::encode(&after);
        let state_id = lineage::state_id(&after.secret, &after_plaintext);
        let previous_state_id = p.record.previous.unwrap_or_default();
        let table = Table {
            match_id: &match_id,
            state_id: &state_id,
            previous_state_id: &previous_state_id,
            seats: &after.seats,
            names: &after.names,
            clock: None,
            player_ids: &Default::default(),
            show_player_ids: false,
        };
        let answer = handle_play(&uncached, &p.request);
        let response = pb::PlayResponse {
            state: answer.state,
            view: Some(answer.view),
            events: answer.events,
        };
        let request_bytes = p.request.encode_to_vec();
        let response_bytes = response.encode_to_vec();

        group.bench_function("1-request-decode", |b| {
            b.iter(|| pb::PlayRequest::decode(black_box(&request_bytes[..])).expect("decode"))
        });
        group.bench_function("2-open", |b| {
            b.iter(|| token::open_with(&ring, black_box(&p.token), |_, p| p.len()).expect("open"))
        });
        group.bench_function("3-decode-replay", |b| {
            b.iter(|| plaintext::decode(black_box(&plaintext)).expect("decode"))
        });
        group.bench_function("4-apply", |b| {
            b.iter_batched_ref(
                || (p.record.game.clone(), Vec::with_capacity(8)),
                |(game, events)| game.apply(black_box(p.action), events).expect("legal"),
                BatchSize::SmallInput,
            )
        });
        group.bench_function("5-view", |b| {
            b.iter(|| after.game.view(black_box(Some(p.viewer))).expect("view"))
        });
        group.bench_function("6-view-out", |b| {
            b.iter(|| view_out(black_box(&view), &table))
        });
        group.bench_function("7-events-out", |b| {
            b.iter(|| {
                events
                    .iter()
                    .map(|&e| event_out(after.game.rules(), e, Some(p.viewer)))
                    .collect::<Vec<_>>()
            })
        });
        group.bench_function("8-encode", |b| {
            let mut buf = Vec::with_capacity(plaintext::PLAINTEXT_CAPACITY);
            b.iter(|| {
                buf.clear();
                plaintext::encode_into(black_box(&after), &mut buf);
                buf.len()
            })
        });
        group.bench_function("9-state-id", |b| {
            b.iter(|| lineage::state_id(&after.secret, black_box(&after_plaintext)))
        });
        group.bench_function("9-seal", |b| {
            b.iter(|| token::seal(&ring, black_box(&plaintext)).expect("seal"))
        });
        group.bench_function("10-response-encode", |b| {
            let mut buf = Vec::with_capacity(4096);
            b.iter(|| {
                buf.clear();
                black_box(&response)
                    .encode(&mut buf)
                    .expect("a vector grows");
                buf.len()
            })
        });
        group.bench_function("all-handler-play", |b| {
            b.iter(|| handle_play(&uncached, black_box(&p.request)))
        });
        group.bench_function("all-play-answer-written", |b| {
            let mut buf = Vec::with_capacity(4096);
            b.iter(|| play_written(&uncached, black_box(&p.request), &mut buf))
        });
        group.bench_function("all-play-answer-written-cached", |b| {
            let mut buf = Vec::with_capacity(4096);
            b.iter_batched(
                || cached.keep(cached.open(&p.token).expect("open")),
                |()| play_written(&cached, black_box(&p.request), &mut buf),
                BatchSize::PerIteration,
            );
            assert!(
                cached.cache_counts().0 > 0,
                "the cached benchmark hit the cache"
            );
        });
        group.bench_function("all-handler-score", |b| {
            let request = pb::ScoreRequest {
                state: p.token.clone().into(),
                viewer: Some(p.viewer as u32),
                credential: credential(p.viewer).to_vec(),
                include_hand_events: false,
            };
            b.iter(|| moves::score(&uncached, &JUDGE, black_box(&request)).expect("score"))
        });
        println!(
            "{}: token {} B (plaintext {} B), request {} B, response {} B ({} events)",
            p.name,
            p.token.len(),
            plaintext.len(),
            request_bytes.len(),
            response_bytes.len(),
            events.len()
        );
        group.finish();
    }
}

/// Decoding (and so replaying) plaintexts of one two-player match, five tiles each so
/// that hands run long with draws, at every hand length its hands reach.
fn replay(c: &mut Criterion) {
    use allfives::engine::{HandSizeRule, Phase};
    let rules = Rules {
        hand_size: HandSizeRule::FiveEach,
        ..Rules::for_players(2)
    };
    // The plaintext of the first state seen at each hand length (plays and draws so
    // far), over a few matches.
    let mut by_length: std::collections::BTreeMap<usize, Vec<u8>> = Default::default();
    let mut moves: Vec<Move> = Vec::new();
    for seed in 0..40 {
        let mut game = Game::new(rules, seed).expect("rules");
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        while let Some(action) = bot::choose(&game, Strategy::Random, &mut rng, &mut moves) {
            game.apply(action, &mut Vec::new()).expect("legal");
            if game.phase() == Phase::Playing {
                let record = hot_seat(game.clone());
                by_length
                    .entry(game.scorecard().actions.len())
                    .or_insert_with(|| plaintext::encode(&record));
            }
        }
    }
    let mut group = c.benchmark_group("replay");
    for n in [0, 10, 20, 30, 40] {
        let Some(bytes) = by_length.range(n..).next().map(|(_, b)| b.clone()) else {
            continue;
        };
        let actions = plaintext::decode(&bytes)
            .expect("decode")
            .game
            .scorecard()
            .actions
            .len();
        group.bench_function(format!("{actions}-actions"), |b| {
            b.iter(|| plaintext::decode(black_box(&bytes)).expect("decode"))
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = parts, replay
}
criterion_main!(benches);
