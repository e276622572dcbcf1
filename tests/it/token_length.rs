//! A token's length tells nothing a player could not see at the table: over 10,000
//! random matches of every table (2, 3, 4 players alone, 4 in partnership; every
//! hand-size and settlement rule, short and long targets; seats claimed in NewGame,
//! left open and claimed later with ClaimSeat, and played by the server's bots, in every
//! mix), the length of every token the service answers is computed from public
//! information alone, the spectator's view of the answer and the score sheet, and found
//! equal to the real length.
//!
//! What the computation uses: the rule options, the match id, the hand number, the move
//! counter, the number of tiles on the table, the boneyard's size, who led the hand by
//! the rules (the seat that went out of the hand before, seen in the spectator's view
//! of that hand's end), the sheet, who plays each seat (the view's `seats`: open,
//! claimed or a bot) and whether the view's `previous_state_id` is empty (NewGame's
//! state). It builds a `State` from those with a stand-in for each hidden thing (the
//! seed, the action bytes' values, the credentials, the match's secret, the previous
//! state's id) and takes prost's encoded length. If any field's length depended on a
//! hidden tile (as the old snapshot's hand bitmasks did), the lengths would differ
//! (shown to fail with a leak added, an extra field present or not with seat 0's
//! tiles: docs/RELIABILITY.md, "Token length").
//!
//! And the bar the API promises (`state`: at most 640 bytes): the largest token of
//! each table, counted as if every seat were claimed (each credential 16 bytes more
//! than an open or a bot seat, exactly, by the length just checked) and named with
//! the longest display name (24 bytes), is at most 640 bytes; the largest of each
//! table is printed. Half the claims here carry a random name (letters of one, two or
//! three bytes, up to 24 bytes), which the spectator's view shows.
//!
//! Matches are played through the handlers, in-process (the wire adds nothing to a
//! token); `tests/it/api.rs` covers the server end to end.

use crate::common;

use std::sync::Arc;

use allfives::engine::suggest::Search;
use allfives::proto::internal as ipb;
use allfives::proto::v1 as pb;
use allfives::service::steps::Policy;
use allfives::service::{moves, seats, steps};
use allfives::state::{KeyRing, Tokens, token};
use prost::Message;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

/// Matches per table.
const MATCHES: u64 = 10_000;

/// Bytes of a seat's credential in the token.
const CREDENTIAL_LEN: usize = 16;

/// Bytes of a state id (`GameView.state_id`) and of the match's secret.
const ID_LEN: usize = 16;

/// The most bytes a token may have (`NewGameResponse.state`'s promise).
const MAX_TOKEN: usize = 640;

/// The most bytes of a display name (`state::names::MAX_NAME_BYTES`).
const MAX_NAME: usize = 24;

/// The display names of a view's seats, as the token holds them: none when no seat
/// has one, else one per seat.
fn names_of(view: &pb::GameView) -> Vec<String> {
    let names: Vec<String> = view.seats.iter().map(|s| s.display_name.clone()).collect();
    match names.iter().all(String::is_empty) {
        true => Vec::new(),
        false => names,
    }
}

/// A name for a claim, or none: any length up to the most, in letters of one, two or
/// three bytes.
fn random_name(rng: &mut ChaCha8Rng, seat: usize) -> String {
    if rng.next_u32().is_multiple_of(2) {
        return String::new();
    }
    // Each seat's letters its own (1, 2 and 3 bytes each), so that no two names at a
    // table look alike (the service refuses those).
    let letters = [
        ['a', 'ș', 'ส'],
        ['b', 'ț', 'ก'],
        ['c', 'ă', 'ข'],
        ['d', 'î', 'ค'],
    ];
    let letter = letters[seat % 4][rng.next_u32() as usize % 3];
    let n = 1 + rng.next_u32() as usize % (MAX_NAME / letter.len_utf8());
    std::iter::repeat_n(letter, n).collect()
}

/// A server that takes the tests' seeds, its HARD bots searching few worlds (the
/// search's size changes no token's length, only the time 40,000 matches take).
const POLICY: Policy = Policy {
    allow_client_seeds: true,
    bot_search: Search {
        worlds: 4,
        horizon: None,
    },
    // Tokens of a server with a match store, which carry its flag (2 bytes in every
    // token of every match: the same for all, as the deployment is).
    match_store: true,
    clock_lag_grace_ms: 2000,
    max_clock_skew_ms: 1000,
};

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
        ..Default::default()
    }
}

/// Who plays a seat of a match here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// A human seat claimed in NewGame.
    Claimed,
    /// A human seat left open at NewGame and claimed with ClaimSeat before the deal.
    Later,
    /// A bot the server plays, at this `BotLevel`.
    Bot(pb::BotLevel),
}

/// Who plays each seat of a match, drawn from `rng`: a quarter of the matches every
/// seat claimed in NewGame (hot seat), an eighth every seat claimed later, an eighth
/// one human against bots, the rest each seat any of the three; one match in a hundred
/// bots only. A bot is EASY or MEDIUM, one in sixteen HARD.
fn seating(players: u32, rng: &mut ChaCha8Rng) -> Vec<Plan> {
    let n = players as usize;
    let bot = |rng: &mut ChaCha8Rng| {
        Plan::Bot(match rng.next_u32() % 16 {
            0 => pb::BotLevel::Hard,
            r if r % 2 == 0 => pb::BotLevel::Easy,
            _ => pb::BotLevel::Medium,
        })
    };
    if rng.next_u32().is_multiple_of(100) {
        return (0..n).map(|_| bot(rng)).collect();
    }
    match rng.next_u32() % 8 {
        0 | 1 => vec![Plan::Claimed; n],
        2 => vec![Plan::Later; n],
        3 => {
            let human = rng.next_u32() as usize % n;
            let later = rng.next_u32().is_multiple_of(2);
            (0..n)
                .map(|s| match s == human {
                    true if later => Plan::Later,
                    true => Plan::Claimed,
                    false => bot(rng),
                })
                .collect()
        }
        _ => (0..n)
            .map(|_| match rng.next_u32() % 3 {
                0 => Plan::Claimed,
                1 => Plan::Later,
                _ => bot(rng),
            })
            .collect(),
    }
}

/// What the spectator needs remembered between answers: who leads the current hand by
/// the rules (the seat that went out of the one before).
#[derive(Default)]
struct Public {
    starter: Option<u32>,
}

/// The byte `State.seats` holds for a seat the view shows (its value changes no
/// length; it is written as the server writes it all the same).
fn seat_byte(status: &pb::SeatStatus) -> u8 {
    match (
        pb::SeatKind::try_from(status.kind).expect("a seat kind"),
        pb::BotLevel::try_from(status.bot).expect("a bot level"),
    ) {
        (pb::SeatKind::Open, _) => 0,
        (pb::SeatKind::Claimed, _) => 1,
        (pb::SeatKind::Bot, level) => 1 + level as u8,
        (kind, level) => panic!("a seat shown as {kind:?}, {level:?}"),
    }
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
    // Who plays each seat, as the view shows it; a credential for each claimed one.
    assert_eq!(view.seats.len(), rules.players as usize, "a status a seat");
    let claimed = view
        .seats
        .iter()
        .filter(|s| s.kind == pb::SeatKind::Claimed as i32)
        .count();
    assert_eq!(view.state_id.len(), ID_LEN);
    let state = ipb::State {
        // Stand-ins for the hidden: any seed takes 9 bytes, any action one, any
        // credential, secret and state id 16.
        seed: Some(0),
        match_id: vec![0; view.match_id.len() / 2],
        rules: Some(ipb::Rules {
            players: rules.players,
            partnership: rules.partnership,
            hand_size: rules.hand_size,
            target_fives: rules.target / 5,
            settlement: rules.settlement,
            ..Default::default()
        }),
        hand,
        starter: public.starter,
        moves,
        sheet: rows.iter().flat_map(fives).collect(),
        carried: sheet.carried.as_ref().map(fives).unwrap_or_default(),
        actions: vec![0; actions],
        seats: view.seats.iter().map(seat_byte).collect(),
        credentials: vec![0; CREDENTIAL_LEN * claimed],
        secret: vec![0; ID_LEN],
        stored: POLICY.match_store,
        names: names_of(view),
        previous: match view.previous_state_id.is_empty() {
            true => Vec::new(),
            false => vec![0; ID_LEN],
        },
        ..Default::default()
    };
    state.encoded_len() + token::OVERHEAD
}

/// The largest tokens of a table.
#[derive(Debug, Default)]
struct Largest {
    /// Of every token.
    any: usize,
    /// Of the matches whose every seat was claimed.
    all_claimed: usize,
    /// Of every token, counted as if its every seat were claimed and named with the
    /// longest name: its length, 16 bytes for each open or bot seat (a claimed seat's
    /// byte and credential in place of the seat's byte alone), and its names' bytes
    /// made the longest's (2 + 24 bytes a seat); exact, since every length is checked
    /// above.
    as_if_claimed: usize,
}

/// What the tokens of a table covered.
#[derive(Debug, Default)]
struct Seen {
    tokens: usize,
    /// Tokens of matches with a seat open (before its claim), claimed, a bot's.
    open: usize,
    claimed: usize,
    bots: usize,
    /// Tokens ClaimSeat answered.
    claims: usize,
    largest: Largest,
}

impl Seen {
    /// Checks a token's length against the spectator's view of its state and the
    /// sheet, and counts it.
    fn check(
        &mut self,
        state: &[u8],
        view: &pb::GameView,
        sheet: &pb::ScoreSheet,
        public: &Public,
    ) {
        assert_eq!(view.viewer, None, "the spectator's view");
        assert_eq!(
            state.len(),
            expected_length(view, sheet, public),
            "hand {}, move {}, seats {:?}",
            view.hand_number,
            view.moves,
            view.seats
        );
        let kinds =
            |kind: pb::SeatKind| view.seats.iter().filter(|s| s.kind == kind as i32).count();
        let (open, claimed, bots) = (
            kinds(pb::SeatKind::Open),
            kinds(pb::SeatKind::Claimed),
            kinds(pb::SeatKind::Bot),
        );
        self.tokens += 1;
        self.open += usize::from(open > 0);
        self.claimed += usize::from(claimed > 0);
        self.bots += usize::from(bots > 0);
        let largest = &mut self.largest;
        largest.any = largest.any.max(state.len());
        if claimed == view.seats.len() {
            largest.all_claimed = largest.all_claimed.max(state.len());
        }
        let named: usize = names_of(view).iter().map(|n| 2 + n.len()).sum();
        let as_if =
            state.len() + CREDENTIAL_LEN * (open + bots) + view.seats.len() * (2 + MAX_NAME)
                - named;
        largest.as_if_claimed = largest.as_if_claimed.max(as_if);
    }
}

/// The sheet of `state` and its view for `viewer` (a seat, with its credential; or
/// the spectator).
fn look(
    tokens: &Tokens,
    state: &[u8],
    viewer: Option<(u32, &[u8])>,
) -> (pb::ScoreSheet, pb::GameView) {
    let looked = moves::score(
        tokens,
        &crate::common::JUDGE,
        &pb::ScoreRequest {
            state: state.to_vec().into(),
            viewer: viewer.map(|(s, _)| s),
            credential: viewer.map(|(_, c)| c.to_vec()).unwrap_or_default(),
            ..Default::default()
        },
    )
    .expect("Score");
    (looked.sheet.expect("sheet"), looked.view.expect("view"))
}

/// Plays one match with random legal moves, its seats as `plan` says, checking every
/// token's length.
fn play_match(
    tokens: &Tokens,
    rules: pb::Rules,
    plan: &[Plan],
    rng: &mut ChaCha8Rng,
    seen: &mut Seen,
) {
    let new = seats::new_game(
        tokens,
        &POLICY,
        &crate::common::JUDGE,
        &pb::NewGameRequest {
            rules: Some(rules),
            seed: Some(rng.next_u64()),
            viewer: None,
            seats: plan
                .iter()
                .enumerate()
                .map(|(seat, p)| match *p {
                    Plan::Claimed => pb::SeatSetup {
                        bot: 0,
                        claim: true,
                        display_name: random_name(rng, seat),
                    },
                    Plan::Later => pb::SeatSetup::default(),
                    Plan::Bot(level) => pb::SeatSetup {
                        bot: level as i32,
                        claim: false,
                        display_name: String::new(),
                    },
                })
                .collect(),
        },
    )
    .expect("NewGame");
    let mut creds = vec![Vec::new(); plan.len()];
    for c in &new.credentials {
        creds[c.seat as usize] = c.credential.clone();
    }
    let mut public = Public::default();
    let (mut state, mut view) = (new.state, new.view);
    // The seats left open, claimed in a random order.
    let mut open: Vec<u32> = (0..plan.len() as u32)
        .filter(|&s| plan[s as usize] == Plan::Later)
        .collect();
    while !open.is_empty() {
        let sheet = look(tokens, &state, None).0;
        seen.check(&state, &view, &sheet, &public);
        let seat = open.swap_remove(rng.next_u32() as usize % open.len());
        let (claimed, credential) = seats::claim_seat(
            tokens,
            &POLICY,
            &crate::common::JUDGE,
            &pb::ClaimSeatRequest {
                state,
                seat,
                display_name: random_name(rng, seat as usize),
                ..Default::default()
            },
        )
        .expect("ClaimSeat");
        assert_eq!(credential.seat, seat);
        creds[seat as usize] = credential.credential;
        state = claimed.state;
        // The claim's view is the claimer's: the spectator's is Score's.
        view = look(tokens, &state, None).1;
        seen.claims += 1;
    }
    loop {
        let turn = view.turn;
        let credential = turn.map(|t| creds[t as usize].as_slice());
        if let Some(credential) = credential {
            assert!(
                !credential.is_empty(),
                "a bot on turn in an answer: {view:?}"
            );
        }
        // The sheet, and the view of the seat on turn for its legal moves.
        let (sheet, looked) = look(tokens, &state, turn.zip(credential));
        seen.check(&state, &view, &sheet, &public);
        let step = match pb::Phase::try_from(view.phase).expect("phase") {
            pb::Phase::Over => return,
            pb::Phase::Dealing => {
                // Who leads the next hand, as the table saw the last one end.
                public.starter = view.last_hand.as_ref().and_then(|h| {
                    (h.reason == pb::HandEndReason::Domino as i32)
                        .then_some(h.went_out)
                        .flatten()
                });
                moves::deal(
                    tokens,
                    &crate::common::JUDGE,
                    &pb::DealRequest {
                        state: state.into(),
                        ..Default::default()
                    },
                )
            }
            _ => {
                let seat = turn.expect("turn");
                let credential = credential.expect("a credential").to_vec();
                if looked.must_draw {
                    moves::draw(
                        tokens,
                        &crate::common::JUDGE,
                        &pb::DrawRequest {
                            state: state.into(),
                            seat,
                            viewer: None,
                            credential,
                        },
                    )
                } else {
                    let moves = &looked.legal_moves;
                    let m = &moves[rng.next_u32() as usize % moves.len()];
                    moves::play(
                        tokens,
                        &crate::common::JUDGE,
                        &pb::PlayRequest {
                            state: state.into(),
                            seat,
                            tile: m.tile,
                            end: m.end,
                            viewer: None,
                            credential,
                        },
                    )
                }
            }
        }
        .expect("a legal move");
        let answer = steps::finish(tokens, &POLICY, step).expect("the bots' moves");
        (state, view) = (answer.state, answer.view);
    }
}

/// Plays [`MATCHES`] matches at a table, checking every token, and prints its largest
/// token.
fn table(players: u32, partnership: bool) {
    let ring = Arc::new(KeyRing::new(vec![(1, [0x42; 32])], None).expect("ring"));
    let tokens = Tokens::new(ring, 1024);
    let mut rng = ChaCha8Rng::seed_from_u64(u64::from(players) << 1 | u64::from(partnership));
    let mut seen = Seen::default();
    for i in 0..MATCHES {
        let plan = seating(players, &mut rng);
        play_match(
            &tokens,
            rules(players, partnership, i),
            &plan,
            &mut rng,
            &mut seen,
        );
    }
    let table = match partnership {
        true => "4 players in partnership".to_string(),
        false => format!("{players} players"),
    };
    // Straight to stdout, past the test harness's capture: CI's log shows the sizes.
    use std::io::Write;
    let _ = writeln!(
        std::io::stdout(),
        "token_length: {table}: {} tokens of {MATCHES} matches ({} claims), every length \
         exact; largest token {} bytes, {} in a match of claimed seats only, {} counted \
         with every seat claimed (bar {MAX_TOKEN})",
        seen.tokens,
        seen.claims,
        seen.largest.any,
        seen.largest.all_claimed,
        seen.largest.as_if_claimed,
    );
    assert!(seen.tokens as u64 > 10 * MATCHES, "{seen:?}");
    // Every kind of seat was in the mix, and claims by ClaimSeat.
    assert!(
        [seen.open, seen.claimed, seen.bots, seen.claims]
            .iter()
            .all(|&n| n as u64 > MATCHES / 10),
        "{seen:?}"
    );
    let largest = &seen.largest;
    assert!(largest.any <= largest.as_if_claimed && largest.all_claimed <= largest.as_if_claimed);
    assert!(
        largest.as_if_claimed <= MAX_TOKEN,
        "{table}: a token of {} bytes with every seat claimed, past the {MAX_TOKEN} promised",
        largest.as_if_claimed
    );
}

#[test]
fn two_players_every_tokens_length_follows_from_public_information_alone() {
    let _load = common::heavy_blocking();
    table(2, false);
}

#[test]
fn three_players_every_tokens_length_follows_from_public_information_alone() {
    let _load = common::heavy_blocking();
    table(3, false);
}

#[test]
fn four_players_every_tokens_length_follows_from_public_information_alone() {
    let _load = common::heavy_blocking();
    table(4, false);
}

#[test]
fn partners_every_tokens_length_follows_from_public_information_alone() {
    let _load = common::heavy_blocking();
    table(4, true);
}
