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
//! Clocked matches (`clocked_matches_...`), played through the real server with its
//! clock set by the test before every call: their tokens also hold the clock option,
//! the absence option (when not the default), the deal's time and each action's time
//! as seconds since the one before (varints: their length depends on the times, which
//! are public, as everyone at the table saw when each move was made), each seat's bank
//! (the view's `clock.bank_seconds`) and timeouts in a row (the seats'), and the seats
//! a bot holds with their players' credentials. Their lengths are computed from the
//! same view plus the times of the test's own calls ([`Times`]: the server writes
//! `ceil(now_ms / 1000)`, never going back, and every action of one call at the
//! call's time) and must be exact too.
//!
//! And the bars the API promises (`state`: at most 640 bytes, 896 with a turn clock;
//! 512 and 768 when no seat has a display name): the largest token of each table,
//! counted as if every seat were claimed (each credential 16 bytes more than an open or
//! a bot seat, exactly, by the length just checked) and named with the longest display
//! name (24 bytes), is at most 640 bytes; and every token, counted as if it were of the
//! largest clocked match there is at its point ([`as_if_clocked`]: the longest clock
//! and absence options, full banks, the hand gone on to its most actions, each action's
//! time 5 bytes), is at most 896 bytes named and 768 unnamed, within what the server
//! reads at all (`token::MAX_TOKEN_LEN`, 1280). The largest of each table is printed.
//! Half the claims here carry a random name (letters of one, two or three bytes, up to
//! 24 bytes), which the spectator's view shows; a quarter carry the studio's pass with
//! a player id of 1 to 64 bytes, of which the spectator's view shows only that the
//! seat holds one (`SeatStatus.pass_holder`): each id takes 64 bytes, whatever its
//! length. With every seat's pass besides, the bars are 904 and 1,160 bytes.
//!
//! The tables' matches are played through the handlers, in-process (the wire adds
//! nothing to a token); `tests/it/api.rs` covers the server end to end.

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

/// The most bytes a token of a match with a turn clock may have, and with no seat named
/// (the same promise's): 841 and 737 counted (4 players alone, 2026-12).
const MAX_CLOCKED_TOKEN: usize = 896;
const MAX_CLOCKED_UNNAMED: usize = 768;

/// The most bytes of a display name (`state::names::MAX_NAME_BYTES`).
const MAX_NAME: usize = 24;

/// The same promises when every seat's player showed a pass (each player id 64 bytes
/// in the token, and the two fields' tags and lengths): 263 bytes more at four seats.
const MAX_TOKEN_PASSES: usize = 904;
const MAX_CLOCKED_TOKEN_PASSES: usize = 1160;

/// Bytes a player id takes in a token, whatever its length
/// (`state::player_id::PADDED_LEN`).
const PADDED_ID: usize = 64;

/// Bytes the player ids of `holders` seats add to a token: the seats' bits (a 2-byte
/// tag and a byte) and the ids (a 2-byte tag, their length, 64 bytes each).
fn pass_bytes(holders: usize) -> usize {
    match holders {
        0 => 0,
        n => 3 + 2 + varint_len((PADDED_ID * n) as u64) + PADDED_ID * n,
    }
}

/// The studio's key in the tests (Ed25519, seed 0x5A x 32) and the passes it signs.
struct Studio {
    passes: allfives::passes::Passes,
    key: jsonwebtoken::EncodingKey,
}

fn studio() -> &'static Studio {
    static STUDIO: std::sync::OnceLock<Studio> = std::sync::OnceLock::new();
    STUDIO.get_or_init(|| {
        use base64::Engine;
        use ed25519_dalek::pkcs8::EncodePrivateKey;
        let key = ed25519_dalek::SigningKey::from_bytes(&[0x5A; 32]);
        let x =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes());
        let jwks = serde_json::json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x}]});
        let settings = allfives::passes::PassSettings {
            issuer: "studio".into(),
            audience: "allfives".into(),
            pass_type: None,
            leeway_secs: 60,
            max_lifetime_secs: 86_400,
            required: false,
            show_player_ids: false,
        };
        Studio {
            passes: allfives::passes::Passes::parse(&jwks.to_string(), settings).expect("keys"),
            key: jsonwebtoken::EncodingKey::from_ed_der(
                key.to_pkcs8_der().expect("der").as_bytes(),
            ),
        }
    })
}

/// A pass for a claim, or none (three claims in four): a player id of any length up to
/// the most, each seat's its own.
fn random_pass(rng: &mut ChaCha8Rng, seat: usize) -> String {
    if !rng.next_u32().is_multiple_of(4) {
        return String::new();
    }
    let len = 1 + rng.next_u32() as usize % PADDED_ID;
    let sub = format!("{seat}{}", "p".repeat(len - 1));
    let now = crate::common::JUDGE.now_ms / 1000;
    let claims = serde_json::json!({"iss": "studio", "aud": "allfives", "sub": sub,
                                    "exp": now + 600});
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA),
        &claims,
        &studio().key,
    )
    .expect("sign")
}

/// The seats whose player showed a pass, as the view shows them.
fn pass_holders(view: &pb::GameView) -> usize {
    view.seats.iter().filter(|s| s.pass_holder).count()
}

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
    show_player_ids: false,
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
/// the rules (the seat that went out of the one before); whether the deployment keeps a
/// match store (every token says so, in 2 bytes); and in a clocked match, the times of
/// the calls, as everyone at the table saw when each move was made.
#[derive(Default)]
struct Public {
    starter: Option<u32>,
    stored: bool,
    times: Times,
}

/// The times a clocked match's token holds, written down by the test as it makes its
/// calls (`engine::clock::Clocks::stamp`'s rule, from outside): a call at `now_ms` is
/// at `ceil(now_ms / 1000)` seconds, or at the last time written if that is later
/// (times never go back); a call that dealt writes its time as the deal's and starts
/// the hand's times; every action the call made (the caller's own, the bots' after it,
/// a timed-out seat's bot's before it) is at the call's time, each written as the
/// seconds since the one before (the deal, for the first): the first of a call the
/// time since the last call, the others 0. How many actions a call made is public (the
/// layout, the boneyard, a forfeit).
#[derive(Clone, Debug, Default)]
struct Times {
    /// The hand the times are of (0 before the first deal).
    hand: u32,
    /// When it was dealt, in seconds; 0 before the first deal.
    dealt_at: u64,
    /// Seconds from the one before to each of its actions.
    times: Vec<u32>,
}

impl Times {
    /// When the last action (or the deal) happened.
    fn last(&self) -> u64 {
        self.times
            .iter()
            .fold(self.dealt_at, |at, &t| at + u64::from(t))
    }

    /// A call answered, made at `now_ms` by the server's clock, that left the match in
    /// hand `hand` with `actions` actions since its deal.
    fn called(&mut self, now_ms: u64, hand: u32, actions: usize) {
        let at = now_ms.div_ceil(1000).max(self.last());
        if hand != self.hand {
            self.hand = hand;
            self.dealt_at = at;
            self.times.clear();
        }
        assert!(
            actions >= self.times.len(),
            "actions never go away in a hand"
        );
        let mut last = self.last();
        while self.times.len() < actions {
            self.times
                .push(u32::try_from(at - last).unwrap_or(u32::MAX));
            last = at;
        }
    }
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
        (pb::SeatKind::HeldByBot, level) => {
            let left = status.absent == pb::AbsenceReason::Left as i32;
            4 + level as u8 + 3 * u8::from(left)
        }
        (kind, level) => panic!("a seat shown as {kind:?}, {level:?}"),
    }
}

/// Tiles dealt to each seat, from the rules alone.
fn dealt_each(rules: &pb::Rules) -> usize {
    match (rules.hand_size, rules.players) {
        (1, 2) => 9,
        (1, 3) => 7,
        (3, 2) => 7,
        _ => 5,
    }
}

/// The most actions a hand of `rules` can hold: a play per tile, a draw per tile of
/// its boneyard, and a forfeit (`engine::replay::MAX_HAND_ACTIONS`, 47, at two players
/// five each).
fn most_actions(rules: &pb::Rules) -> usize {
    28 + (28 - dealt_each(rules) * rules.players as usize) + 1
}

/// The seat that forfeited, as the spectator sees it: a seat still its player's
/// (`SEAT_KIND_CLAIMED`) shown absent is one (a seat a bot holds shows why it does).
fn forfeited(view: &pb::GameView) -> bool {
    view.seats
        .iter()
        .any(|s| s.kind == pb::SeatKind::Claimed as i32 && s.absent != 0)
}

/// The actions of the current (or last) hand since its deal, as the spectator counts
/// them: its plays (the layout), its draws (the boneyard the deal left, from the rules,
/// less the one left) and a forfeit (during the hand, or after it ended).
fn hand_actions(view: &pb::GameView) -> usize {
    if view.hand_number == 0 {
        return 0;
    }
    let rules = view.rules.as_ref().expect("rules");
    let hand_tiles = view.hand_sizes.iter().sum::<u32>() as usize
        + view.layout.len()
        + view.boneyard_size as usize;
    assert_eq!(hand_tiles, 28);
    // The boneyard a deal leaves, from the rules alone.
    let dealt = 28 - dealt_each(rules) * rules.players as usize;
    let draws = dealt - view.boneyard_size as usize;
    view.layout.len() + draws + usize::from(forfeited(view))
}

/// The absence option as the token writes it: nothing for the default (a MEDIUM bot
/// holding the seat from the second timeout in a row).
fn absence_written(absence: Option<&pb::Absence>) -> Option<ipb::Absence> {
    let a = absence.expect("a response's rules say the absence option");
    match pb::AbsenceRule::try_from(a.rule).expect("an absence rule") {
        pb::AbsenceRule::Forfeit => Some(ipb::Absence {
            forfeit: true,
            bot: 0,
            takes_seat_after: 0,
        }),
        _ if a.bot == pb::BotLevel::Medium as i32 && a.bot_takes_seat_after == Some(2) => None,
        _ => Some(ipb::Absence {
            forfeit: false,
            bot: a.bot as u32,
            takes_seat_after: a.bot_takes_seat_after.expect("set in responses"),
        }),
    }
}

/// The `State` a token must hold, up to the values of what is hidden, from the
/// spectator's view of the answer that carries it, the sheet and what the table saw
/// before (`public`): its encoded length is the token's plaintext's.
fn expected_state(view: &pb::GameView, sheet: &pb::ScoreSheet, public: &Public) -> ipb::State {
    let rules = view.rules.as_ref().expect("rules");
    let sides = if rules.partnership {
        2
    } else {
        rules.players as usize
    };
    let hand = view.hand_number;
    let actions = hand_actions(view);
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
    // Who plays each seat, as the view shows it; a credential for each seat a player
    // holds, playing it or not (a seat a bot holds keeps its player's).
    assert_eq!(view.seats.len(), rules.players as usize, "a status a seat");
    let credentials = view
        .seats
        .iter()
        .filter(|s| {
            s.kind == pb::SeatKind::Claimed as i32 || s.kind == pb::SeatKind::HeldByBot as i32
        })
        .count();
    assert_eq!(view.state_id.len(), ID_LEN);
    let mut state = ipb::State {
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
            clock: None,
            absence: absence_written(rules.absence.as_ref()),
        }),
        hand,
        starter: public.starter,
        moves,
        sheet: rows.iter().flat_map(fives).collect(),
        carried: sheet.carried.as_ref().map(fives).unwrap_or_default(),
        actions: vec![0; actions],
        seats: view.seats.iter().map(seat_byte).collect(),
        credentials: vec![0; CREDENTIAL_LEN * credentials],
        secret: vec![0; ID_LEN],
        stored: public.stored,
        names: names_of(view),
        previous: match view.previous_state_id.is_empty() {
            true => Vec::new(),
            false => vec![0; ID_LEN],
        },
        // Which seats hold a pass (public), and a stand-in for each id: 64 bytes.
        pass_seats: view
            .seats
            .iter()
            .filter(|s| s.pass_holder)
            .map(|s| 1 << s.seat)
            .sum(),
        player_ids: vec![0; PADDED_ID * pass_holders(view)],
        ..Default::default()
    };
    // A clocked match's: the clock option and the absence option (public rules), the
    // deal's time and each action's (the calls' times), each seat's bank (the view's
    // clocks) and timeouts in a row (the seats').
    if let Some(clock) = &rules.clock {
        let written = state.rules.as_mut().expect("rules");
        written.clock = Some(ipb::TurnClock {
            r#move: clock.move_seconds,
            bank: clock.bank_seconds.expect("set in responses"),
            increment: clock.increment_seconds,
        });
        let clocks = view
            .clock
            .as_ref()
            .expect("a clocked match's view shows its clocks");
        let times = &public.times;
        assert_eq!(times.hand, hand, "the test's times are of the hand shown");
        assert_eq!(times.times.len(), actions, "a time per action");
        state.dealt_at = times.dealt_at;
        state.times = times.times.clone();
        state.banks = clocks.bank_seconds.clone();
        state.late = view
            .seats
            .iter()
            .map(|s| u8::try_from(s.timeouts_in_row).expect("a byte"))
            .collect();
    } else {
        assert_eq!(view.clock, None);
    }
    state
}

/// The longest a clock option, a bank or a time written may be.
const MAX_CLOCK_SECS: u32 = allfives::engine::clock::MAX_CLOCK_SECS;

/// The largest time of the deal a varint of 5 bytes holds: 2^35 - 1 seconds, in the
/// year 3058 (from 1978 on, a deal's time takes 5 bytes).
const LATEST_DEAL: u64 = (1 << 35) - 1;

/// The length of the token whose `State` is `state` (a table of `rules`), counted as if
/// it were of the largest clocked match there is at that point: every seat claimed
/// (named with the longest name if `named`), the longest clock and absence options, a
/// bank of 30 days each, the hand gone on to its most actions ([`most_actions`]) and
/// each action's time the longest a varint may take: any time, 5 bytes (a u32 of
/// seconds), since a timeout may be claimed any time later, on a server without a
/// match store; with one, 4 bytes, and its flag's 2 (the store forgets a match
/// `--match-store-ttl-secs` after its last move, a year at most: 2^28 seconds is 8.5
/// years), counted too, and the larger of the two taken. Exact, as `state`'s length
/// is checked to be the token's.
fn as_if_clocked(state: &ipb::State, rules: &pb::Rules, named: bool, passes: bool) -> usize {
    let players = rules.players as usize;
    let mut s = state.clone();
    s.seats = vec![1; players];
    (s.pass_seats, s.player_ids) = match passes {
        true => ((1 << players) - 1, vec![0; PADDED_ID * players]),
        false => (0, Vec::new()),
    };
    s.credentials = vec![0; CREDENTIAL_LEN * players];
    s.names = match named {
        true => vec!["x".repeat(MAX_NAME); players],
        false => Vec::new(),
    };
    let written = s.rules.as_mut().expect("rules");
    written.clock = Some(ipb::TurnClock {
        r#move: MAX_CLOCK_SECS,
        bank: MAX_CLOCK_SECS,
        increment: MAX_CLOCK_SECS,
    });
    written.absence = Some(ipb::Absence {
        forfeit: false,
        bot: pb::BotLevel::Hard as u32,
        takes_seat_after: 10,
    });
    s.banks = vec![MAX_CLOCK_SECS; players];
    s.late = vec![10; players];
    if s.hand > 0 {
        s.dealt_at = LATEST_DEAL;
        s.actions = vec![0; most_actions(rules)];
    }
    let with_store = ipb::State {
        stored: true,
        times: vec![(1 << 28) - 1; s.actions.len()],
        ..s.clone()
    };
    let without = ipb::State {
        stored: false,
        times: vec![u32::MAX; s.actions.len()],
        ..s
    };
    with_store.encoded_len().max(without.encoded_len()) + token::OVERHEAD
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
    /// Of every token, counted as if it were of the largest clocked match there is at
    /// that point ([`as_if_clocked`]): with every seat named with the longest name,
    /// and with none named.
    as_if_clocked: usize,
    as_if_clocked_unnamed: usize,
    /// The same two as if every seat's player had shown a pass besides.
    as_if_claimed_passes: usize,
    as_if_clocked_passes: usize,
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
    /// Tokens of matches with a seat whose player showed a pass.
    passes: usize,
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
        let expected = expected_state(view, sheet, public);
        assert_eq!(
            state.len(),
            expected.encoded_len() + token::OVERHEAD,
            "hand {}, move {}, seats {:?}, clocks {:?}, times {:?}",
            view.hand_number,
            view.moves,
            view.seats,
            view.clock,
            public.times,
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
                - named
                - pass_bytes(pass_holders(view));
        largest.as_if_claimed = largest.as_if_claimed.max(as_if);
        largest.as_if_claimed_passes = largest
            .as_if_claimed_passes
            .max(as_if + pass_bytes(view.seats.len()));
        self.passes += usize::from(pass_holders(view) > 0);
        let rules = view.rules.as_ref().expect("rules");
        largest.as_if_clocked = largest
            .as_if_clocked
            .max(as_if_clocked(&expected, rules, true, false));
        largest.as_if_clocked_unnamed = largest
            .as_if_clocked_unnamed
            .max(as_if_clocked(&expected, rules, false, false));
        largest.as_if_clocked_passes = largest
            .as_if_clocked_passes
            .max(as_if_clocked(&expected, rules, true, true));
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
    let new = seats::new_game_with_passes(
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
                        pass: random_pass(rng, seat),
                    },
                    Plan::Later => pb::SeatSetup::default(),
                    Plan::Bot(level) => pb::SeatSetup {
                        bot: level as i32,
                        claim: false,
                        display_name: String::new(),
                        pass: String::new(),
                    },
                })
                .collect(),
        },
        Some(&studio().passes),
    )
    .expect("NewGame");
    let mut creds = vec![Vec::new(); plan.len()];
    for c in &new.credentials {
        creds[c.seat as usize] = c.credential.clone();
    }
    let mut public = Public {
        stored: POLICY.match_store,
        ..Public::default()
    };
    let (mut state, mut view) = (new.state, new.view);
    // The seats left open, claimed in a random order.
    let mut open: Vec<u32> = (0..plan.len() as u32)
        .filter(|&s| plan[s as usize] == Plan::Later)
        .collect();
    while !open.is_empty() {
        let sheet = look(tokens, &state, None).0;
        seen.check(&state, &view, &sheet, &public);
        let seat = open.swap_remove(rng.next_u32() as usize % open.len());
        let (claimed, credential) = seats::claim_seat_with_passes(
            tokens,
            &POLICY,
            &crate::common::JUDGE,
            &pb::ClaimSeatRequest {
                state,
                seat,
                display_name: random_name(rng, seat as usize),
                pass: random_pass(rng, seat as usize),
                ..Default::default()
            },
            Some(&studio().passes),
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
         with every seat claimed (bar {MAX_TOKEN}); as if of the largest clocked match, \
         {} named, {} unnamed (bars {MAX_CLOCKED_TOKEN}, {MAX_CLOCKED_UNNAMED}); with every \
         seat's pass, {} and {} clocked (bars {MAX_TOKEN_PASSES}, \
         {MAX_CLOCKED_TOKEN_PASSES}); {} tokens with a pass holder",
        seen.tokens,
        seen.claims,
        seen.largest.any,
        seen.largest.all_claimed,
        seen.largest.as_if_claimed,
        seen.largest.as_if_clocked,
        seen.largest.as_if_clocked_unnamed,
        seen.largest.as_if_claimed_passes,
        seen.largest.as_if_clocked_passes,
        seen.passes,
    );
    assert!(seen.tokens as u64 > 10 * MATCHES, "{seen:?}");
    // Every kind of seat was in the mix, claims by ClaimSeat, and pass holders.
    assert!(
        [seen.open, seen.claimed, seen.bots, seen.claims, seen.passes]
            .iter()
            .all(|&n| n as u64 > MATCHES / 10),
        "{seen:?}"
    );
    let largest = &seen.largest;
    assert!(
        largest.any <= largest.as_if_claimed_passes
            && largest.all_claimed <= largest.as_if_claimed_passes
    );
    assert!(
        largest.as_if_claimed <= MAX_TOKEN,
        "{table}: a token of {} bytes with every seat claimed, past the {MAX_TOKEN} promised",
        largest.as_if_claimed
    );
    assert!(
        largest.as_if_claimed_passes <= MAX_TOKEN_PASSES,
        "{table}: a token of {} bytes with every seat claimed with a pass, past the \
         {MAX_TOKEN_PASSES} promised",
        largest.as_if_claimed_passes
    );
    clocked_within_bars(&table, largest);
}

/// The largest clocked tokens counted from a table's are within the API's bars (and
/// so within what the server reads at all, `token::MAX_TOKEN_LEN`).
fn clocked_within_bars(table: &str, largest: &Largest) {
    assert!(largest.as_if_clocked_unnamed <= largest.as_if_clocked);
    assert!(
        largest.as_if_clocked <= MAX_CLOCKED_TOKEN
            && largest.as_if_clocked_unnamed <= MAX_CLOCKED_UNNAMED,
        "{table}: as if of the largest clocked match, a token of {} bytes ({} unnamed), \
         past the {MAX_CLOCKED_TOKEN} ({MAX_CLOCKED_UNNAMED}) promised",
        largest.as_if_clocked,
        largest.as_if_clocked_unnamed,
    );
    assert!(
        largest.as_if_clocked_passes <= MAX_CLOCKED_TOKEN_PASSES,
        "{table}: as if of the largest clocked match with every seat's pass, a token of {} \
         bytes, past the {MAX_CLOCKED_TOKEN_PASSES} promised",
        largest.as_if_clocked_passes,
    );
    const { assert!(MAX_CLOCKED_TOKEN_PASSES <= token::MAX_TOKEN_LEN) };
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

/// Clocked matches played through the real server, half on one with a match store.
const CLOCKED_MATCHES: u64 = 240;

/// A whole second: the time of the clocked matches' first call.
const T0: u64 = 1_900_000_000_000;

/// An hour and a day, in milliseconds.
const HOUR_MS: u64 = 3_600_000;
const DAY_MS: u64 = 24 * HOUR_MS;

/// The rule options of clocked match `i`: each table in turn, every hand-size and
/// settlement rule, short targets; clocks of every length (a second to 30 days a move,
/// no bank to 30 days, increments up to 30 days), under every absence option; one
/// match in ten without a clock but with an absence option of its own (a version-5
/// token all the same).
fn clocked_rules(i: u64, rng: &mut ChaCha8Rng) -> pb::Rules {
    let (players, partnership) = [(2, false), (3, false), (4, false), (4, true)][i as usize % 4];
    let mut pick = |options: &[u32]| options[rng.next_u32() as usize % options.len()];
    let clock = pb::TurnClock {
        move_seconds: pick(&[0, 1, 20, 3_600, 7 * 86_400, MAX_CLOCK_SECS]),
        bank_seconds: match pick(&[0, 1, 2, 3, 4]) {
            0 => None,
            1 => Some(0),
            2 => Some(45),
            3 => Some(3 * 86_400),
            _ => Some(MAX_CLOCK_SECS),
        },
        increment_seconds: pick(&[0, 0, 3, 600, MAX_CLOCK_SECS]),
    };
    let bot = |level: pb::BotLevel, after: Option<u32>| pb::Absence {
        rule: pb::AbsenceRule::Bot as i32,
        bot: level as i32,
        bot_takes_seat_after: after,
    };
    let absence = match i % 6 {
        0 => None,
        1 => Some(pb::Absence {
            rule: pb::AbsenceRule::Forfeit as i32,
            bot: 0,
            bot_takes_seat_after: None,
        }),
        2 => Some(bot(pb::BotLevel::Easy, Some(0))),
        3 => Some(bot(pb::BotLevel::Hard, Some(1))),
        4 => Some(bot(pb::BotLevel::Medium, Some(2))),
        _ => Some(pb::Absence {
            rule: pb::AbsenceRule::Unspecified as i32,
            bot: 0,
            bot_takes_seat_after: Some(10),
        }),
    };
    pb::Rules {
        players,
        partnership,
        hand_size: 1 + (i / 4 % 3) as i32,
        target: 25 + 5 * (i % 10) as u32,
        settlement: 1 + ((i / 12) % 2) as i32,
        clock: (i % 10 != 9).then_some(clock),
        absence,
    }
}

/// Whether a seat of `rules` may be named here: only where no bot will hold it. A
/// named seat a bot holds (its player left, or timed out as often in a row as the
/// absence option allows) is sealed into a token that does not open again:
/// `state::plaintext`'s `names_in` takes a name only on a seat a human plays
/// ("a name"), and in a debug build the service's own check of the game it keeps
/// (`state::cache`) panics. So names go only to matches whose seats no timeout
/// hands to a bot (a forfeit, or a bot that never takes the seat), and the seats
/// that leave are the unnamed ones.
fn may_be_named(rules: &pb::Rules) -> bool {
    let absence = rules.absence.unwrap_or_default();
    absence.rule == pb::AbsenceRule::Forfeit as i32 || absence.bot_takes_seat_after == Some(0)
}

/// What the clocked matches covered.
#[derive(Debug, Default)]
struct Covered {
    calls: usize,
    claims: usize,
    leaves: usize,
    returns: usize,
    /// Own moves made at a time before the last one written (a replica behind, within
    /// the skew allowed): written at the last time.
    behind: usize,
    /// Tokens with a seat a bot holds, with a named seat, of a finished forfeit.
    held: usize,
    named: usize,
    forfeits: usize,
    /// Times written of a varint of each length, 1 to 5 bytes.
    time_bytes: [usize; 6],
}

/// Bytes of `value` as a varint.
fn varint_len(value: u64) -> usize {
    (64 - value.max(1).leading_zeros() as usize).div_ceil(7)
}

/// The sheet of `state` and its spectator's view, from the real server.
async fn spectate(client: &mut common::Client, state: &[u8]) -> (pb::ScoreSheet, pb::GameView) {
    let r = client
        .score(pb::ScoreRequest {
            state: state.to_vec().into(),
            ..Default::default()
        })
        .await
        .expect("Score")
        .into_inner();
    (r.sheet.expect("sheet"), r.view.expect("view"))
}

/// A time for the seat on turn's own move or another seat's Leave or ReturnToSeat:
/// within its time (its deadline plus the grace not reached), from up to 1.5 s before
/// the move began (a replica whose clock is behind the last writer's, within the skew
/// allowed) to the last millisecond; or, without a clock, any time after `after`.
fn in_time(rng: &mut ChaCha8Rng, clock: Option<&pb::ClockView>, after: u64) -> u64 {
    let roll = u64::from(rng.next_u32());
    let Some(clock) = clock else {
        return after + [0, roll % 5_000, roll % (30 * DAY_MS)][roll as usize % 3];
    };
    let began = clock.move_began_ms.expect("a human on turn");
    let latest = clock.claimable_at_ms.expect("a human on turn") - 1;
    let at = match roll % 10 {
        0 => began - 1 - roll % 1_500,
        1 => began,
        2 => began + roll % 1_000,
        3 => began + roll % 60_000,
        4 => latest,
        _ => began + roll % (latest - began + 1),
    };
    at.min(latest)
}

/// How long after its timeout became due a claim comes: at once, within seconds,
/// hours or days, and now and then ten years later (a delta of 5 bytes).
fn claim_delay(rng: &mut ChaCha8Rng) -> u64 {
    let roll = u64::from(rng.next_u32());
    match roll % 16 {
        0..=3 => 0,
        4..=7 => roll % 1_000,
        8..=10 => roll % 60_000,
        11 | 12 => roll % (5 * HOUR_MS),
        13 | 14 => roll % (40 * DAY_MS),
        _ => 3_650 * DAY_MS + roll % DAY_MS,
    }
}

/// What the clocked matches share, one after the other: the test's time (the last
/// call's), its random choices, and what their tokens showed and covered.
struct Run {
    now: u64,
    rng: ChaCha8Rng,
    seen: Seen,
    covered: Covered,
}

/// One clocked match through the real server at `client` (with a match store if
/// `stored`), its clock `clock`, checking every token's length.
async fn clocked_match(
    client: &mut common::Client,
    clock: &allfives::server_clock::ServerClock,
    stored: bool,
    i: u64,
    run: &mut Run,
) {
    let Run {
        now,
        rng,
        seen,
        covered,
    } = run;
    let rules = clocked_rules(i, rng);
    let players = rules.players as usize;
    let named = may_be_named(&rules);
    // Seat 0 a player's, the others a player's or (one in five) a bot's.
    let seats: Vec<pb::SeatSetup> = (0..players)
        .map(|seat| match seat > 0 && rng.next_u32().is_multiple_of(5) {
            true => common::bot(
                [pb::BotLevel::Easy, pb::BotLevel::Medium, pb::BotLevel::Hard]
                    [rng.next_u32() as usize % 3],
            ),
            false => pb::SeatSetup {
                bot: 0,
                claim: true,
                display_name: match named {
                    true => random_name(rng, seat),
                    false => String::new(),
                },
                pass: String::new(),
            },
        })
        .collect();
    clock.set(*now);
    let new = client
        .new_game(pb::NewGameRequest {
            rules: Some(rules),
            seed: Some(rng.next_u64()),
            viewer: None,
            seats,
        })
        .await
        .expect("NewGame")
        .into_inner();
    let creds = common::Creds::from_new_game(&new);
    let mut public = Public {
        stored,
        ..Public::default()
    };
    let mut state = new.state;
    let (mut sheet, mut view) = spectate(client, &state).await;
    seen.check(&state, &view, &sheet, &public);
    let kind = |view: &pb::GameView, kinds: &[pb::SeatKind]| -> Vec<u32> {
        view.seats
            .iter()
            .filter(|s| kinds.iter().any(|&k| s.kind == k as i32))
            .map(|s| s.seat)
            .collect()
    };
    for _ in 0..5_000 {
        let at;
        state = match pb::Phase::try_from(view.phase).expect("a phase") {
            pb::Phase::Over => {
                covered.forfeits += usize::from(forfeited(&view));
                return;
            }
            pb::Phase::Dealing | pb::Phase::Unspecified => {
                public.starter = view.last_hand.as_ref().and_then(|h| {
                    (h.reason == pb::HandEndReason::Domino as i32)
                        .then_some(h.went_out)
                        .flatten()
                });
                let roll = u64::from(rng.next_u32());
                at = *now + [0, roll % 5_000, roll % (3 * DAY_MS)][roll as usize % 3];
                clock.set(at);
                let req = pb::DealRequest {
                    state: state.into(),
                    ..Default::default()
                };
                client.deal(req).await.expect("Deal").into_inner().state
            }
            pb::Phase::Playing => {
                let turn = view.turn.expect("a seat on turn");
                let clocks = view.clock.as_ref();
                let holders = kind(&view, &[pb::SeatKind::Claimed, pb::SeatKind::HeldByBot]);
                let leavers: Vec<u32> = kind(&view, &[pb::SeatKind::Claimed])
                    .into_iter()
                    .filter(|&s| view.seats[s as usize].display_name.is_empty())
                    .collect();
                let held = kind(&view, &[pb::SeatKind::HeldByBot]);
                let roll = rng.next_u32() % 100;
                if let (true, Some(c)) = (roll < 12, clocks) {
                    // Another seat (or the late one itself) claims the timeout.
                    let due = c.claimable_at_ms.expect("a human on turn");
                    at = due + claim_delay(rng);
                    clock.set(at);
                    let seat = holders[rng.next_u32() as usize % holders.len()];
                    covered.claims += 1;
                    let req = pb::ClaimTimeoutRequest {
                        state,
                        seat,
                        credential: creds.of(seat),
                    };
                    let r = client.claim_timeout(req).await.expect("ClaimTimeout");
                    r.into_inner().state
                } else if roll < 15 && !leavers.is_empty() {
                    at = in_time(rng, clocks, *now);
                    clock.set(at);
                    let seat = leavers[rng.next_u32() as usize % leavers.len()];
                    covered.leaves += 1;
                    let req = pb::LeaveRequest {
                        state,
                        seat,
                        credential: creds.of(seat),
                    };
                    client.leave(req).await.expect("Leave").into_inner().state
                } else if roll < 20 && !held.is_empty() {
                    at = in_time(rng, clocks, *now);
                    clock.set(at);
                    let seat = held[rng.next_u32() as usize % held.len()];
                    covered.returns += 1;
                    let req = pb::ReturnToSeatRequest {
                        state,
                        seat,
                        credential: creds.of(seat),
                    };
                    let r = client.return_to_seat(req).await.expect("ReturnToSeat");
                    r.into_inner().state
                } else {
                    at = in_time(rng, clocks, *now);
                    if let Some(c) = clocks {
                        covered.behind += usize::from(at < c.move_began_ms.expect("began"));
                    }
                    clock.set(at);
                    let mine = common::view_for(client, &state, turn, &creds).await;
                    let credential = creds.of(turn);
                    if mine.must_draw {
                        let req = pb::DrawRequest {
                            state: state.into(),
                            seat: turn,
                            viewer: None,
                            credential,
                        };
                        client.draw(req).await.expect("Draw").into_inner().state
                    } else {
                        let legal = &mine.legal_moves;
                        let m = legal[rng.next_u32() as usize % legal.len()];
                        let req = pb::PlayRequest {
                            state: state.into(),
                            seat: turn,
                            tile: m.tile,
                            end: m.end,
                            viewer: None,
                            credential,
                        };
                        client.play(req).await.expect("Play").into_inner().state
                    }
                }
            }
        };
        *now = at;
        covered.calls += 1;
        (sheet, view) = spectate(client, &state).await;
        if view.clock.is_some() {
            let (hand, written) = (public.times.hand, public.times.times.len());
            public
                .times
                .called(at, view.hand_number, hand_actions(&view));
            let from = if hand == public.times.hand {
                written
            } else {
                0
            };
            for &t in &public.times.times[from..] {
                covered.time_bytes[varint_len(u64::from(t))] += 1;
            }
        }
        seen.check(&state, &view, &sheet, &public);
        covered.held += usize::from(!kind(&view, &[pb::SeatKind::HeldByBot]).is_empty());
        covered.named += usize::from(!names_of(&view).is_empty());
    }
    panic!("clocked match {i} did not end: {view:?}");
}

/// Clocked matches through the real server, its clock set by the test before each call
/// (`ServerClock::manual`): the calls come from at once to days apart (and a claim now
/// and then ten years late), every absence option, timeouts claimed by any seat
/// holding a credential, seats left to a bot and taken back, forfeits; every token's
/// length is computed from the spectator's view, the sheet and the times of the calls
/// (which the test knows: everyone at the table saw when each move was made), and must
/// be the real one. And the largest clocked token there is, counted from these tokens
/// as from the tables' ([`as_if_clocked`]), is within the bars.
#[tokio::test]
async fn clocked_matches_every_tokens_length_follows_from_public_information_and_the_calls_times() {
    let _heavy = common::heavy().await;
    let clock = allfives::server_clock::ServerClock::manual(T0);
    let flags = ["--allow-client-seeds", "--bot-worlds", "4"];
    let stateless =
        common::TestServer::start_clocked(common::ring(1, 1), clock.clone(), &flags).await;
    let with_store = [&flags[..], &["--match-store", "memory"]].concat();
    let stored =
        common::TestServer::start_clocked(common::ring(1, 1), clock.clone(), &with_store).await;
    let mut clients = [stateless.client().await, stored.client().await];
    let mut run = Run {
        now: T0,
        rng: ChaCha8Rng::seed_from_u64(41),
        seen: Seen::default(),
        covered: Covered::default(),
    };
    for i in 0..CLOCKED_MATCHES {
        let n = (i % 2) as usize;
        clocked_match(&mut clients[n], &clock, n == 1, i, &mut run).await;
    }
    let Run { seen, covered, .. } = run;
    use std::io::Write;
    let _ = writeln!(
        std::io::stdout(),
        "token_length: {CLOCKED_MATCHES} clocked matches through the server: {} tokens, every \
         length exact; largest token {} bytes; as if of the largest clocked match, {} named, \
         {} unnamed (bars {MAX_CLOCKED_TOKEN}, {MAX_CLOCKED_UNNAMED}); {covered:?}",
        seen.tokens,
        seen.largest.any,
        seen.largest.as_if_clocked,
        seen.largest.as_if_clocked_unnamed,
    );
    // What the matches were to cover, each many times.
    let c = &covered;
    for (what, n) in [
        ("claims", c.claims),
        ("leaves", c.leaves),
        ("returns", c.returns),
        ("moves behind", c.behind),
        ("tokens with a held seat", c.held),
        ("tokens with names", c.named),
        ("forfeits", c.forfeits),
    ] {
        assert!(n >= 10, "{what}: {n}: {covered:?}");
    }
    assert!(
        c.time_bytes[1..].iter().all(|&n| n > 0),
        "every delta length: {covered:?}"
    );
    clocked_within_bars("clocked matches", &seen.largest);
}
