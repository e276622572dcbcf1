//! Encoding the engine's game as the token's plaintext (`allfives.internal.v1.State`)
//! and decoding it back, refusing anything the engine could not have made.

use super::wire;
use crate::engine::hand::Hand;
use crate::engine::{
    Arm, End, Game, HandEnd, HandResult, HandSizeRule, Layout, Rules, ScoreSheet, SettlementRule,
    SheetRow, Tile, TileSet,
};
use crate::proto::internal as pb;

/// The plaintext format this build writes and reads.
pub const STATE_FORMAT: u32 = 1;
/// Bytes in a match id.
pub const MATCH_ID_LEN: usize = 16;
/// Scores and sheet entries beyond this many points are refused as corrupt.
const MAX_POINTS: i64 = 1 << 28;

/// A game as carried by a token: the engine's game and the match id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub match_id: [u8; MATCH_ID_LEN],
    pub game: Game,
}

/// Why a plaintext could not be decoded into a game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("state format {0} is not supported")]
    UnsupportedFormat(u32),
    #[error("the state is corrupt: {0}")]
    Corrupt(&'static str),
}

fn corrupt(what: &'static str) -> DecodeError {
    DecodeError::Corrupt(what)
}

/// Room for any plaintext this build writes (the largest seen is under 400 bytes).
pub const PLAINTEXT_CAPACITY: usize = 512;

/// Encodes a record as the token's plaintext.
pub fn encode(record: &Record) -> Vec<u8> {
    let mut buf = Vec::with_capacity(PLAINTEXT_CAPACITY);
    encode_into(record, &mut buf);
    buf
}

/// Appends a record's plaintext to `buf`: the `State` message written field by field
/// straight from the game, the same bytes prost writes for it.
pub fn encode_into(record: &Record, buf: &mut Vec<u8>) {
    let game = &record.game;
    let rules = &game.rules;
    let sides = rules.sides();
    wire::put_uint32(buf, 1, STATE_FORMAT);
    wire::put_bytes(buf, 2, &record.match_id);
    wire::put_len(buf, 3, |b| {
        wire::put_uint32(b, 1, rules.players as u32);
        wire::put_bool(b, 2, rules.partnership);
        let hand_size = match rules.hand_size {
            HandSizeRule::Standard => pb::HandSize::Standard,
            HandSizeRule::FiveEach => pb::HandSize::FiveEach,
            HandSizeRule::SevenFive => pb::HandSize::SevenFive,
        };
        wire::put_uint32(b, 3, hand_size as u32);
        wire::put_uint32(b, 4, rules.target / 5);
        let settlement = match rules.settlement {
            SettlementRule::OwnPipsOff => pb::Settlement::OwnPipsOff,
            SettlementRule::WinnerTakesPips => pb::Settlement::WinnerTakesPips,
        };
        wire::put_uint32(b, 5, settlement as u32);
    });
    wire::put_fixed64(buf, 4, game.seed);
    wire::put_uint32(buf, 5, game.hands_dealt);
    if let Some(hand) = &game.hand {
        wire::put_len(buf, 6, |b| encode_hand(hand, rules, b));
    }
    put_fives(buf, 7, &game.scores[..sides]);
    if game.sheet.rows().len() > 0 {
        wire::put_len(buf, 8, |b| {
            for row in game.sheet.rows() {
                put_row(b, row, sides);
            }
        });
    }
    if let Some(row) = game.sheet.carried() {
        wire::put_len(buf, 9, |b| put_row(b, row, sides));
    }
    wire::put_optional_uint32(buf, 10, game.next_starter.map(|s| s as u32));
    wire::put_optional_uint32(buf, 11, game.winner.map(|s| s as u32));
    wire::put_uint32(buf, 12, game.moves);
}

/// Points as a packed `sint32` field, in fives; left out when there are none.
fn put_fives(buf: &mut Vec<u8>, field: u32, points: &[i32]) {
    if !points.is_empty() {
        wire::put_len(buf, field, |b| {
            for &v in points {
                wire::put_varint(b, wire::zigzag(v / 5));
            }
        });
    }
}

/// A sheet row's values, in fives, inside a packed field: play per side, then
/// settlement per side.
fn put_row(buf: &mut Vec<u8>, row: &SheetRow, sides: usize) {
    for &v in row.play[..sides].iter().chain(&row.settlement[..sides]) {
        wire::put_varint(buf, wire::zigzag(v / 5));
    }
}

fn encode_hand(hand: &Hand, rules: &Rules, buf: &mut Vec<u8>) {
    wire::put_uint32(buf, 1, hand.number);
    wire::put_len(buf, 2, |b| {
        for h in &hand.hands[..rules.players] {
            wire::put_varint(b, u64::from(h.bits()));
        }
    });
    let mut boneyard = [0u8; 28];
    for (slot, t) in boneyard.iter_mut().zip(hand.boneyard()) {
        *slot = t.index();
    }
    wire::put_bytes(buf, 3, &boneyard[..hand.boneyard().len()]);
    let placed = hand.layout.placements();
    let mut placements = [0u8; 28];
    for (slot, p) in placements.iter_mut().zip(placed) {
        let arm = match p.arm {
            Arm::Lead => 0,
            Arm::End(end) => end as u8 + 1,
        };
        *slot = p.tile.index() * 5 + arm;
    }
    wire::put_bytes(buf, 4, &placements[..placed.len()]);
    wire::put_uint32(buf, 5, hand.turn as u32);
    if let Some(r) = &hand.result {
        wire::put_len(buf, 6, |b| {
            let (end, seat) = match r.end {
                HandEnd::Domino { seat } => (pb::HandEnd::Domino, seat),
                HandEnd::Blocked => (pb::HandEnd::Blocked, 0),
                HandEnd::TargetReached { seat } => (pb::HandEnd::TargetReached, seat),
            };
            wire::put_uint32(b, 1, end as u32);
            wire::put_uint32(b, 2, seat as u32);
            put_fives(b, 3, &r.settlement[..rules.sides()]);
        });
    }
    let voids = hand
        .voids
        .iter()
        .enumerate()
        .fold(0, |bits, (seat, &v)| bits | u32::from(v) << (7 * seat));
    wire::put_uint32(buf, 7, voids);
}

/// Values of a repeated field, as many as fit; `len` counts them all, so a field
/// with too many is still refused by its length check.
#[derive(Clone, Copy)]
struct Repeated<T, const N: usize> {
    values: [T; N],
    len: usize,
}

impl<T: Copy + Default, const N: usize> Default for Repeated<T, N> {
    fn default() -> Self {
        Repeated {
            values: [T::default(); N],
            len: 0,
        }
    }
}

impl<T: Copy, const N: usize> Repeated<T, N> {
    fn push(&mut self, value: T) {
        if let Some(slot) = self.values.get_mut(self.len) {
            *slot = value;
        }
        self.len = self.len.saturating_add(1);
    }

    /// The values, if all of them fit.
    fn get(&self) -> Option<&[T]> {
        self.values.get(..self.len)
    }
}

/// Every value of a points field, zigzag-decoded as prost decodes `sint32`.
fn read_sint32s<const N: usize>(
    r: &mut wire::Reader<'_>,
    wire_type: u8,
    into: &mut Repeated<i32, N>,
) -> Result<(), wire::Malformed> {
    r.repeated_varint(wire_type, |v| into.push(wire::sint32(v)))
}

/// A repeated varint field whose values are decoded only once the rules say how to
/// read them (the sheet: up to 256 values, which a copy would have to make room for).
#[derive(Default, Clone, Copy)]
struct Varints<'a> {
    /// The values' bytes when the field came once (packed, or a single unpacked value).
    bytes: &'a [u8],
    /// Times the field came; past one, the values are gathered again from the message.
    seen: u32,
    /// Values in all of them.
    len: usize,
}

impl<'a> Varints<'a> {
    fn read(&mut self, r: &mut wire::Reader<'a>, wire_type: u8) -> Result<(), wire::Malformed> {
        let (bytes, len) = r.repeated_varint_bytes(wire_type)?;
        self.bytes = bytes;
        self.seen = self.seen.saturating_add(1);
        self.len += len;
        Ok(())
    }

    /// The bytes of every value, in order: those of the one occurrence, or of all of
    /// them gathered from `message` (already read whole) into `joined`.
    fn bytes<'b>(&self, message: &'b [u8], field: u32, joined: &'b mut Vec<u8>) -> &'b [u8]
    where
        'a: 'b,
    {
        if self.seen <= 1 {
            return self.bytes;
        }
        let mut r = wire::Reader::new(message);
        while let Ok((f, wt)) = r.key() {
            let next = if f == field {
                r.repeated_varint_bytes(wt)
                    .map(|(bytes, _)| joined.extend_from_slice(bytes))
            } else {
                r.skip(f, wt)
            };
            if next.is_err() {
                break;
            }
        }
        joined
    }
}

/// The fields of a `State` message as read, before any check.
#[derive(Default)]
struct StateFields<'a> {
    /// The whole message.
    message: &'a [u8],
    format: u32,
    match_id: &'a [u8],
    rules: Option<RulesFields>,
    seed: u64,
    hands_dealt: u32,
    hand: Option<HandFields<'a>>,
    scores: Repeated<i32, 4>,
    sheet: Varints<'a>,
    carried: Repeated<i32, 8>,
    next_starter: Option<u32>,
    winner: Option<u32>,
    moves: u32,
}

#[derive(Default)]
struct RulesFields {
    players: u32,
    partnership: bool,
    hand_size: i32,
    target_fives: u32,
    settlement: i32,
}

#[derive(Default)]
struct HandFields<'a> {
    number: u32,
    hands: Repeated<u32, 4>,
    boneyard: &'a [u8],
    placements: &'a [u8],
    turn: u32,
    result: Option<ResultFields>,
    voids: u32,
}

#[derive(Default)]
struct ResultFields {
    end: i32,
    seat: u32,
    settlement: Repeated<i32, 4>,
}

impl<'a> StateFields<'a> {
    /// Reads a whole `State` into `self` (in place: it is large); a field seen twice
    /// keeps the last value, and an embedded message seen twice is merged, as in prost.
    fn read(&mut self, bytes: &'a [u8]) -> Result<(), wire::Malformed> {
        use wire::uint32;
        let s = self;
        s.message = bytes;
        let mut r = wire::Reader::new(bytes);
        while !r.is_empty() {
            let (field, wt) = r.key()?;
            match field {
                1 => s.format = uint32(r.varint_field(wt)?),
                2 => s.match_id = r.len_delimited(wt)?,
                3 => s
                    .rules
                    .get_or_insert_with(Default::default)
                    .read(r.len_delimited(wt)?)?,
                4 => s.seed = r.fixed64_field(wt)?,
                5 => s.hands_dealt = uint32(r.varint_field(wt)?),
                6 => s
                    .hand
                    .get_or_insert_with(Default::default)
                    .read(r.len_delimited(wt)?)?,
                7 => read_sint32s(&mut r, wt, &mut s.scores)?,
                8 => s.sheet.read(&mut r, wt)?,
                9 => read_sint32s(&mut r, wt, &mut s.carried)?,
                10 => s.next_starter = Some(uint32(r.varint_field(wt)?)),
                11 => s.winner = Some(uint32(r.varint_field(wt)?)),
                12 => s.moves = uint32(r.varint_field(wt)?),
                _ => r.skip(field, wt)?,
            }
        }
        Ok(())
    }
}

impl RulesFields {
    fn read(&mut self, bytes: &[u8]) -> Result<(), wire::Malformed> {
        let mut r = wire::Reader::new(bytes);
        while !r.is_empty() {
            let (field, wt) = r.key()?;
            match field {
                1 => self.players = wire::uint32(r.varint_field(wt)?),
                2 => self.partnership = r.varint_field(wt)? != 0,
                3 => self.hand_size = r.varint_field(wt)? as i32,
                4 => self.target_fives = wire::uint32(r.varint_field(wt)?),
                5 => self.settlement = r.varint_field(wt)? as i32,
                _ => r.skip(field, wt)?,
            }
        }
        Ok(())
    }
}

impl<'a> HandFields<'a> {
    fn read(&mut self, bytes: &'a [u8]) -> Result<(), wire::Malformed> {
        let mut r = wire::Reader::new(bytes);
        while !r.is_empty() {
            let (field, wt) = r.key()?;
            match field {
                1 => self.number = wire::uint32(r.varint_field(wt)?),
                2 => r.repeated_varint(wt, |v| self.hands.push(wire::uint32(v)))?,
                3 => self.boneyard = r.len_delimited(wt)?,
                4 => self.placements = r.len_delimited(wt)?,
                5 => self.turn = wire::uint32(r.varint_field(wt)?),
                6 => self
                    .result
                    .get_or_insert_with(Default::default)
                    .read(r.len_delimited(wt)?)?,
                7 => self.voids = wire::uint32(r.varint_field(wt)?),
                _ => r.skip(field, wt)?,
            }
        }
        Ok(())
    }
}

impl ResultFields {
    fn read(&mut self, bytes: &[u8]) -> Result<(), wire::Malformed> {
        let mut r = wire::Reader::new(bytes);
        while !r.is_empty() {
            let (field, wt) = r.key()?;
            match field {
                1 => self.end = r.varint_field(wt)? as i32,
                2 => self.seat = wire::uint32(r.varint_field(wt)?),
                3 => read_sint32s(&mut r, wt, &mut self.settlement)?,
                _ => r.skip(field, wt)?,
            }
        }
        Ok(())
    }
}

/// Decodes a token's plaintext, checking that it is a game the engine could have made.
pub fn decode(bytes: &[u8]) -> Result<Record, DecodeError> {
    let mut state = StateFields::default();
    state
        .read(bytes)
        .map_err(|_| corrupt("not a state message"))?;
    build(&state)
}

/// The game a state's fields describe, if the engine could have made it.
fn build(state: &StateFields<'_>) -> Result<Record, DecodeError> {
    if state.format != STATE_FORMAT {
        return Err(DecodeError::UnsupportedFormat(state.format));
    }
    let match_id: [u8; MATCH_ID_LEN] =
        state.match_id.try_into().map_err(|_| corrupt("match id"))?;
    let rules = decode_rules(state.rules.as_ref().ok_or(corrupt("rules missing"))?)?;
    // Built where it is returned and filled in there: a record is a few hundred bytes,
    // and each move of it a copy. (The rules are valid: `decode_rules` checked them as
    // `Game::new` would.)
    let mut out = Ok(Record {
        match_id,
        game: Game::before_the_first_deal(rules, state.seed),
    });
    if let Ok(record) = &mut out
        && let Err(e) = fill(state, &mut record.game)
    {
        out = Err(e);
    }
    out
}

/// Whether [`decode`] takes this game back: the engine's games always pass its checks,
/// but not always its limits (a counter at `u32::MAX`, points beyond [`MAX_POINTS`]),
/// which it holds a token to so that nothing overflows. The token cache keeps only
/// games that pass, so a game at a limit is refused from the cache as from its token.
pub fn reopens(record: &Record) -> bool {
    let game = &record.game;
    let mut sums = Sums::default();
    if let Some(row) = game.sheet.carried() {
        sums.add(row);
    }
    for row in game.sheet.rows() {
        sums.add(row);
    }
    game.moves != u32::MAX
        && game.hands_dealt != u32::MAX
        && game
            .scores()
            .iter()
            .all(|s| i64::from(s.unsigned_abs()) <= MAX_POINTS)
        && sums.magnitude <= MAX_POINTS as u64
}

/// Fills in a game that has its rules and seed from the rest of a state's fields.
fn fill(state: &StateFields<'_>, game: &mut Game) -> Result<(), DecodeError> {
    let rules = game.rules;
    let sides = rules.sides();
    if let Some(h) = &state.hand {
        decode_hand(h, &rules, game.hand.insert(blank_hand()))?;
    }
    // The engine adds one to these with every deal and move: a game the engine made
    // never gets near the limit, and one at the limit would overflow.
    if state.moves == u32::MAX || state.hands_dealt == u32::MAX {
        return Err(corrupt("counter at its limit"));
    }
    game.hands_dealt = state.hands_dealt;
    game.scores = per_side(state.scores.get(), sides)?;
    let mut totals = [0; 4];
    game.sheet = decode_sheet(state, sides, &mut totals)?;
    game.next_starter = state.next_starter.map(|s| s as usize);
    game.winner = state.winner.map(|s| s as usize);
    game.moves = state.moves;
    game.check_given_totals(totals).map_err(|e| corrupt(e.0))
}

fn decode_rules(r: &RulesFields) -> Result<Rules, DecodeError> {
    let rules = Rules {
        players: r.players as usize,
        partnership: r.partnership,
        hand_size: match pb::HandSize::try_from(r.hand_size) {
            Ok(pb::HandSize::Standard) => HandSizeRule::Standard,
            Ok(pb::HandSize::FiveEach) => HandSizeRule::FiveEach,
            Ok(pb::HandSize::SevenFive) => HandSizeRule::SevenFive,
            _ => return Err(corrupt("hand size rule")),
        },
        target: r.target_fives.checked_mul(5).ok_or(corrupt("target"))?,
        settlement: match pb::Settlement::try_from(r.settlement) {
            Ok(pb::Settlement::OwnPipsOff) => SettlementRule::OwnPipsOff,
            Ok(pb::Settlement::WinnerTakesPips) => SettlementRule::WinnerTakesPips,
            _ => return Err(corrupt("settlement rule")),
        },
    };
    rules.validate().map_err(|_| corrupt("rules"))?;
    Ok(rules)
}

/// Points from a value in fives, refused beyond [`MAX_POINTS`].
fn points(fives: i32) -> Result<i32, DecodeError> {
    // |fives × 5| ≤ MAX_POINTS, without the product.
    if i64::from(fives.unsigned_abs()) > MAX_POINTS / 5 {
        return Err(corrupt("points out of range"));
    }
    Ok(fives * 5)
}

/// Points per side from values in fives; exactly `sides` values (`None`: too many).
fn per_side(values: Option<&[i32]>, sides: usize) -> Result<[i32; 4], DecodeError> {
    let values = values
        .filter(|v| v.len() == sides)
        .ok_or(corrupt("values per side"))?;
    let mut out = [0i32; 4];
    for (slot, &v) in out.iter_mut().zip(values) {
        *slot = points(v)?;
    }
    Ok(out)
}

/// What the sheet's rows add up to, summed as they are decoded.
#[derive(Default)]
struct Sums {
    /// Each side's total, as `ScoreSheet::totals` sums it; exact once `magnitude` is
    /// within bounds (until then it may wrap).
    totals: [i32; 4],
    /// The size of every entry, added up.
    magnitude: u64,
}

impl Sums {
    fn add(&mut self, row: &SheetRow) {
        // Entries past the sides are 0.
        for s in 0..4 {
            let (play, settlement) = (row.play[s], row.settlement[s]);
            self.magnitude += u64::from(play.unsigned_abs()) + u64::from(settlement.unsigned_abs());
            self.totals[s] = self.totals[s].wrapping_add(play).wrapping_add(settlement);
        }
    }
}

/// A sheet row from its `2 * sides` values in fives (play per side, then settlement
/// per side), which `fives` hands out one by one.
#[inline]
fn decode_row(
    mut fives: impl FnMut() -> i32,
    sides: usize,
    hands: (u32, u32),
) -> Result<SheetRow, DecodeError> {
    let mut row = SheetRow {
        first_hand: hands.0,
        last_hand: hands.1,
        ..SheetRow::default()
    };
    for play in &mut row.play[..sides] {
        *play = points(fives())?;
    }
    for settlement in &mut row.settlement[..sides] {
        *settlement = points(fives())?;
    }
    Ok(row)
}

/// The sheet's rows from values of one byte each, `2 * SIDES` a row, the first for
/// hand `folded + 1`.
fn small_rows<const SIDES: usize>(
    values: &[u8],
    folded: u32,
    rows: &mut Vec<SheetRow>,
    sums: &mut Sums,
) {
    let points = |byte: u8| wire::sint32(u64::from(byte)) * 5;
    for (entries, hand) in values.chunks_exact(2 * SIDES).zip(folded + 1..) {
        let mut row = SheetRow {
            first_hand: hand,
            last_hand: hand,
            ..SheetRow::default()
        };
        for s in 0..SIDES {
            row.play[s] = points(entries[s]);
            row.settlement[s] = points(entries[SIDES + s]);
        }
        sums.add(&row);
        rows.push(row);
    }
}

/// The sheet; its totals per side go to `totals`.
fn decode_sheet(
    state: &StateFields<'_>,
    sides: usize,
    totals: &mut [i32; 4],
) -> Result<ScoreSheet, DecodeError> {
    let width = 2 * sides;
    let dealt = state.hands_dealt;
    let kept = dealt.min(crate::engine::sheet::SHEET_ROWS as u32);
    if state.sheet.len != kept as usize * width {
        return Err(corrupt("sheet rows"));
    }
    let folded = dealt - kept;
    // Every entry is within MAX_POINTS, but 33 rows of them can overflow the sheet's
    // running sums (`ScoreSheet::totals`, the rendered sheet): bound their sum too.
    let mut sums = Sums::default();
    let carried = match (folded, state.carried.get()) {
        (0, Some([])) => None,
        (n, Some(values)) if n > 0 && values.len() == width => {
            let mut values = values.iter();
            let row = decode_row(|| values.next().map_or(0, |&v| v), sides, (1, n))?;
            sums.add(&row);
            Some(row)
        }
        _ => return Err(corrupt("carried row")),
    };
    let mut joined = Vec::new();
    // Well-formed varints, exactly `kept * width` of them: checked as they were read.
    let values = state.sheet.bytes(state.message, 8, &mut joined);
    let mut rows = Vec::with_capacity(kept as usize);
    if values.len() == state.sheet.len {
        // A byte a value (the usual sheet): each within ±64 fives, so in range.
        match sides {
            2 => small_rows::<2>(values, folded, &mut rows, &mut sums),
            3 => small_rows::<3>(values, folded, &mut rows, &mut sums),
            _ => small_rows::<4>(values, folded, &mut rows, &mut sums),
        }
    } else {
        let mut r = wire::Reader::new(values);
        for hand in folded + 1..=dealt {
            let row = decode_row(|| r.varint().map_or(0, wire::sint32), sides, (hand, hand))?;
            sums.add(&row);
            rows.push(row);
        }
    }
    if sums.magnitude > MAX_POINTS as u64 {
        return Err(corrupt("sheet out of range"));
    }
    *totals = sums.totals;
    ScoreSheet::from_parts(carried, rows).ok_or(corrupt("sheet rows"))
}

fn tile(index: u8) -> Result<Tile, DecodeError> {
    Tile::from_index(index).ok_or(corrupt("tile index"))
}

/// A hand to decode into.
fn blank_hand() -> Hand {
    Hand {
        number: 0,
        hands: [TileSet::EMPTY; 4],
        boneyard: [Tile::DOUBLE_BLANK; 28],
        boneyard_len: 0,
        layout: Layout::new(),
        turn: 0,
        result: None,
        voids: [0; 4],
    }
}

/// Decodes a hand into `out`, a [`blank_hand`].
fn decode_hand(h: &HandFields<'_>, rules: &Rules, out: &mut Hand) -> Result<(), DecodeError> {
    let players = rules.players;
    let held = h
        .hands
        .get()
        .filter(|v| v.len() == players)
        .ok_or(corrupt("hands per seat"))?;
    for (slot, &bits) in out.hands.iter_mut().zip(held) {
        *slot = TileSet::from_bits(bits).ok_or(corrupt("hand bits"))?;
    }
    if h.boneyard.len() > 28 || h.placements.len() > 28 {
        return Err(corrupt("too many tiles"));
    }
    for (slot, &index) in out.boneyard.iter_mut().zip(h.boneyard) {
        *slot = tile(index)?;
    }
    out.boneyard_len = h.boneyard.len() as u8;
    let layout = &mut out.layout;
    for &byte in h.placements {
        let t = tile(byte / 5)?;
        let end = match byte % 5 {
            0 => None,
            arm => Some(End::ALL[usize::from(arm - 1)]),
        };
        if !layout.replay(t, end) {
            return Err(corrupt("layout"));
        }
    }
    let turn = h.turn as usize;
    if turn >= players {
        return Err(corrupt("turn"));
    }
    out.turn = turn;
    out.number = h.number;
    if let Some(r) = &h.result {
        let seat = r.seat as usize;
        if seat >= players {
            return Err(corrupt("result seat"));
        }
        let end = match pb::HandEnd::try_from(r.end) {
            Ok(pb::HandEnd::Domino) => HandEnd::Domino { seat },
            Ok(pb::HandEnd::Blocked) => HandEnd::Blocked,
            Ok(pb::HandEnd::TargetReached) => HandEnd::TargetReached { seat },
            _ => return Err(corrupt("result")),
        };
        out.result = Some(HandResult {
            hand: h.number,
            end,
            hands: out.hands,
            settlement: per_side(r.settlement.get(), rules.sides())?,
        });
    }
    if h.voids >= 1 << (7 * players) {
        return Err(corrupt("voids"));
    }
    out.voids = std::array::from_fn(|seat| (h.voids >> (7 * seat) & 0x7f) as u8);
    Ok(())
}

/// The encoder this module had before it was written by hand (the generated `State`
/// message, encoded by prost), and a decoder that reads with prost: what the
/// hand-written ones are checked against, byte for byte and refusal for refusal.
#[cfg(test)]
pub(crate) mod reference {
    use prost::Message;

    use super::*;

    /// Encodes a record as the token's plaintext.
    pub fn encode(record: &Record) -> Vec<u8> {
        let game = &record.game;
        let rules = &game.rules;
        let sides = rules.sides();
        let fives = |v: i32| v / 5;
        let row = |r: &SheetRow| -> Vec<i32> {
            r.play[..sides]
                .iter()
                .chain(&r.settlement[..sides])
                .map(|&v| fives(v))
                .collect()
        };
        let state = pb::State {
            format: STATE_FORMAT,
            match_id: record.match_id.to_vec(),
            rules: Some(pb::Rules {
                players: rules.players as u32,
                partnership: rules.partnership,
                hand_size: match rules.hand_size {
                    HandSizeRule::Standard => pb::HandSize::Standard,
                    HandSizeRule::FiveEach => pb::HandSize::FiveEach,
                    HandSizeRule::SevenFive => pb::HandSize::SevenFive,
                } as i32,
                target_fives: rules.target / 5,
                settlement: match rules.settlement {
                    SettlementRule::OwnPipsOff => pb::Settlement::OwnPipsOff,
                    SettlementRule::WinnerTakesPips => pb::Settlement::WinnerTakesPips,
                } as i32,
            }),
            seed: game.seed,
            hands_dealt: game.hands_dealt,
            hand: game.hand.as_ref().map(|h| encode_hand(h, rules)),
            scores: game.scores[..sides].iter().map(|&v| fives(v)).collect(),
            sheet: game.sheet.rows().flat_map(row).collect(),
            carried: game.sheet.carried().map(row).unwrap_or_default(),
            next_starter: game.next_starter.map(|s| s as u32),
            winner: game.winner.map(|s| s as u32),
            moves: game.moves,
        };
        state.encode_to_vec()
    }

    fn encode_hand(hand: &Hand, rules: &Rules) -> pb::Hand {
        pb::Hand {
            number: hand.number,
            hands: hand.hands[..rules.players]
                .iter()
                .map(|h| h.bits())
                .collect(),
            boneyard: hand.boneyard().iter().map(|t| t.index()).collect(),
            placements: hand
                .layout
                .placements()
                .iter()
                .map(|p| {
                    let arm = match p.arm {
                        Arm::Lead => 0,
                        Arm::End(end) => end as u8 + 1,
                    };
                    p.tile.index() * 5 + arm
                })
                .collect(),
            turn: hand.turn as u32,
            result: hand.result.map(|r| {
                let (end, seat) = match r.end {
                    HandEnd::Domino { seat } => (pb::HandEnd::Domino, seat),
                    HandEnd::Blocked => (pb::HandEnd::Blocked, 0),
                    HandEnd::TargetReached { seat } => (pb::HandEnd::TargetReached, seat),
                };
                pb::HandResult {
                    end: end as i32,
                    seat: seat as u32,
                    settlement: r.settlement[..rules.sides()]
                        .iter()
                        .map(|&v| v / 5)
                        .collect(),
                }
            }),
            voids: hand
                .voids
                .iter()
                .enumerate()
                .fold(0, |bits, (seat, &v)| bits | u32::from(v) << (7 * seat)),
        }
    }

    /// Decodes a token's plaintext with prost into the generated `State`, then checks
    /// it as [`super::decode`] does.
    pub fn decode(bytes: &[u8]) -> Result<Record, DecodeError> {
        let s = pb::State::decode(bytes).map_err(|_| corrupt("not a state message"))?;
        let mut fields = StateFields {
            format: s.format,
            match_id: &s.match_id,
            rules: s.rules.as_ref().map(|r| RulesFields {
                players: r.players,
                partnership: r.partnership,
                hand_size: r.hand_size,
                target_fives: r.target_fives,
                settlement: r.settlement,
            }),
            seed: s.seed,
            hands_dealt: s.hands_dealt,
            hand: None,
            next_starter: s.next_starter,
            winner: s.winner,
            moves: s.moves,
            ..StateFields::default()
        };
        s.scores.iter().for_each(|&v| fields.scores.push(v));
        let mut sheet = Vec::new();
        s.sheet
            .iter()
            .for_each(|&v| wire::put_varint(&mut sheet, wire::zigzag(v)));
        fields.sheet = Varints {
            bytes: &sheet,
            seen: 1,
            len: s.sheet.len(),
        };
        s.carried.iter().for_each(|&v| fields.carried.push(v));
        if let Some(h) = &s.hand {
            let mut hand = HandFields {
                number: h.number,
                boneyard: &h.boneyard,
                placements: &h.placements,
                turn: h.turn,
                voids: h.voids,
                ..HandFields::default()
            };
            h.hands.iter().for_each(|&v| hand.hands.push(v));
            hand.result = h.result.as_ref().map(|r| {
                let mut result = ResultFields {
                    end: r.end,
                    seat: r.seat,
                    ..ResultFields::default()
                };
                r.settlement.iter().for_each(|&v| result.settlement.push(v));
                result
            });
            fields.hand = Some(hand);
        }
        build(&fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::bot::{Strategy, choose};
    use prost::Message;
    use rand_chacha::ChaCha8Rng;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn every_state_of_whole_games_round_trips() {
        let mut largest = 0;
        for (i, players) in [2, 3, 4, 4].into_iter().enumerate() {
            let mut rules = Rules::for_players(players);
            rules.partnership = i == 3;
            rules.settlement = if i % 2 == 0 {
                SettlementRule::OwnPipsOff
            } else {
                SettlementRule::WinnerTakesPips
            };
            let mut game = Game::new(rules, i as u64).unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let mut scratch = Vec::new();
            loop {
                let record = Record {
                    match_id: [i as u8; 16],
                    game: game.clone(),
                };
                let bytes = encode(&record);
                largest = largest.max(bytes.len());
                assert_eq!(decode(&bytes), Ok(record));
                let Some(action) = choose(&game, Strategy::Random, &mut rng, &mut scratch) else {
                    break;
                };
                game.apply(action, &mut Vec::new()).unwrap();
            }
        }
        assert!(largest < 470, "largest plaintext {largest}");
    }

    #[test]
    fn impossible_states_are_refused() {
        let mut game = Game::new(Rules::for_players(2), 1).unwrap();
        game.deal().unwrap();
        let bytes = encode(&Record {
            match_id: [0; 16],
            game,
        });
        let good = pb::State::decode(bytes.as_slice()).unwrap();
        type Tamper = Box<dyn Fn(&mut pb::State)>;
        let cases: Vec<(&str, Tamper)> = vec![
            ("format", Box::new(|s| s.format = 2)),
            (
                "match id",
                Box::new(|s| s.match_id.pop().map(drop).unwrap_or(())),
            ),
            (
                "players",
                Box::new(|s| s.rules.as_mut().unwrap().players = 9),
            ),
            (
                "hand size",
                Box::new(|s| s.rules.as_mut().unwrap().hand_size = 0),
            ),
            (
                "duplicate tile",
                Box::new(|s| {
                    let h = s.hand.as_mut().unwrap();
                    let first = h.hands[0].trailing_zeros();
                    h.hands[1] |= 1 << first;
                }),
            ),
            (
                "bad tile index",
                Box::new(|s| s.hand.as_mut().unwrap().boneyard[0] = 28),
            ),
            ("turn", Box::new(|s| s.hand.as_mut().unwrap().turn = 5)),
            (
                "layout",
                Box::new(|s| s.hand.as_mut().unwrap().placements = vec![3]),
            ),
            ("scores", Box::new(|s| s.scores = vec![1, 0])),
            ("sheet", Box::new(|s| s.sheet.clear())),
            ("winner", Box::new(|s| s.winner = Some(7))),
        ];
        for (name, tamper) in cases {
            let mut s = good.clone();
            tamper(&mut s);
            assert!(decode(&s.encode_to_vec()).is_err(), "{name} accepted");
        }
        assert!(decode(b"\xff\xff\xff").is_err());
        assert!(decode(&[]).is_err(), "an empty message has format 0");
    }

    /// Every state of whole games under every kind of table and both bots.
    fn many_states() -> Vec<Record> {
        let mut out = Vec::new();
        let tables = [
            (2, false, HandSizeRule::Standard, SettlementRule::OwnPipsOff),
            (
                2,
                false,
                HandSizeRule::SevenFive,
                SettlementRule::WinnerTakesPips,
            ),
            (3, false, HandSizeRule::FiveEach, SettlementRule::OwnPipsOff),
            (
                3,
                false,
                HandSizeRule::Standard,
                SettlementRule::WinnerTakesPips,
            ),
            (4, false, HandSizeRule::Standard, SettlementRule::OwnPipsOff),
            (
                4,
                true,
                HandSizeRule::Standard,
                SettlementRule::WinnerTakesPips,
            ),
        ];
        for (i, &(players, partnership, hand_size, settlement)) in tables.iter().enumerate() {
            for strategy in [Strategy::Greedy, Strategy::Random] {
                let mut rules = Rules::for_players(players);
                rules.partnership = partnership;
                rules.hand_size = hand_size;
                rules.settlement = settlement;
                let mut game = Game::new(rules, u64::MAX - i as u64).unwrap();
                let mut rng = ChaCha8Rng::seed_from_u64(i as u64);
                let mut scratch = Vec::new();
                loop {
                    out.push(Record {
                        match_id: [i as u8 + 0x80; 16],
                        game: game.clone(),
                    });
                    let Some(action) = choose(&game, strategy, &mut rng, &mut scratch) else {
                        break;
                    };
                    game.apply(action, &mut Vec::new()).unwrap();
                }
            }
        }
        out
    }

    #[test]
    fn the_bytes_are_those_prost_wrote_from_the_generated_state() {
        let states = many_states();
        assert!(states.len() > 5_000, "{} states", states.len());
        let mut long_sheets = 0;
        for record in &states {
            let bytes = encode(record);
            assert_eq!(bytes, reference::encode(record), "{:?}", record.game);
            long_sheets += usize::from(record.game.sheet().carried().is_some());
        }
        assert!(long_sheets > 0, "some game folded its sheet");
    }

    /// The top-level fields of a message, as (number, wire type, bytes of the field).
    fn fields(bytes: &[u8]) -> Vec<(u32, u8, Vec<u8>)> {
        let mut r = wire::Reader::new(bytes);
        let mut out = Vec::new();
        while !r.is_empty() {
            let start = bytes.len() - r.remaining();
            let (field, wt) = r.key().unwrap();
            r.skip(field, wt).unwrap();
            out.push((
                field,
                wt,
                bytes[start..bytes.len() - r.remaining()].to_vec(),
            ));
        }
        out
    }

    /// Other encodings of the same message that prost also reads: fields in reverse
    /// order, packed numbers unpacked, unknown fields of every wire type around them,
    /// and the hand split into two occurrences that merge.
    fn variants(bytes: &[u8]) -> Vec<Vec<u8>> {
        let top = fields(bytes);
        let reversed: Vec<u8> = top.iter().rev().flat_map(|f| f.2.clone()).collect();
        let mut unpacked = Vec::new();
        for (field, wt, raw) in &top {
            if matches!(field, 7..=9) && *wt == wire::LEN {
                let mut r = wire::Reader::new(raw);
                r.key().unwrap();
                let mut values = wire::Reader::new(r.len_delimited(wire::LEN).unwrap());
                while !values.is_empty() {
                    wire::put_key(&mut unpacked, *field, wire::VARINT);
                    wire::put_varint(&mut unpacked, values.varint().unwrap());
                }
            } else {
                unpacked.extend_from_slice(raw);
            }
        }
        let mut unknown = Vec::new();
        wire::put_key(&mut unknown, 99, wire::VARINT);
        wire::put_varint(&mut unknown, u64::MAX);
        unknown.extend_from_slice(bytes);
        wire::put_key(&mut unknown, 100, wire::FIXED32);
        unknown.extend_from_slice(&[1, 2, 3, 4]);
        wire::put_fixed64(&mut unknown, 101, 7);
        wire::put_bytes(&mut unknown, 102, b"extra");
        unknown.extend_from_slice(&[0xAB, 0x06, 0x08, 0x01, 0xAC, 0x06]); // group 101
        let mut split = Vec::new();
        for (field, _, raw) in &top {
            if *field == 6 {
                let mut r = wire::Reader::new(raw);
                r.key().unwrap();
                let hand = r.len_delimited(wire::LEN).unwrap();
                let inner = fields(hand);
                let (first, rest) = inner.split_at(inner.len() / 2);
                for part in [first, rest] {
                    let content: Vec<u8> = part.iter().flat_map(|f| f.2.clone()).collect();
                    wire::put_len(&mut split, 6, |b| b.extend_from_slice(&content));
                }
            } else {
                split.extend_from_slice(raw);
            }
        }
        vec![reversed, unpacked, unknown, split]
    }

    #[test]
    fn the_decoder_reads_and_refuses_what_prost_did() {
        let states = many_states();
        let mut tried = 0;
        let mut refused = 0;
        let mut same = |bytes: &[u8]| {
            let ours = decode(bytes);
            assert_eq!(ours, reference::decode(bytes), "{bytes:?}");
            tried += 1;
            refused += usize::from(ours.is_err());
        };
        for (i, record) in states.iter().enumerate() {
            let bytes = encode(record);
            for variant in variants(&bytes) {
                assert_eq!(decode(&variant).as_ref(), Ok(record));
                same(&variant);
            }
            if i % 40 != 0 {
                continue;
            }
            // Every byte changed, cut, dropped, or with a byte inserted before it.
            for at in 0..bytes.len() {
                for flip in [0x01, 0x02, 0x07, 0x80, 0xff] {
                    let mut b = bytes.clone();
                    b[at] ^= flip;
                    same(&b);
                }
                same(&bytes[..at]);
                let mut dropped = bytes.clone();
                dropped.remove(at);
                same(&dropped);
                for byte in [0x00, 0x7f, 0x80] {
                    let mut b = bytes.clone();
                    b.insert(at, byte);
                    same(&b);
                }
            }
        }
        assert!(
            tried > 100_000 && refused > tried / 2,
            "{tried} tried, {refused} refused"
        );
    }
}
