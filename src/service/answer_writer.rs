//! The gRPC codec of the generated services (`build.rs` names it): prost for every
//! message, except the API's answers, which are written by hand in one pass.
//!
//! prost encodes an embedded message by walking it once for its length and again to
//! write it, at every level, one byte at a time: for a game view (thirty-odd small
//! messages three deep) that cost about as much as the whole game call's own work.
//! [`write_answer`] writes the same bytes (a test compares them over whole games) in
//! one pass into a reused buffer, putting each length in front of its message once
//! the message is written. Requests, and every other service's messages, go through
//! prost, except that a request prost cannot decode is the client's error
//! ([`RequestDecoder`]: INVALID_ARGUMENT, `MALFORMED_REQUEST`), not INTERNAL.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::marker::PhantomData;

use prost::Message;
use prost::bytes::BufMut;
use tonic::Status;
use tonic::codec::{BufferSettings, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

use crate::proto::v1 as pb;
use crate::service::convert::recycle_view;
use crate::service::status::ApiError;
use crate::service::wire::{
    LEN, put_bool, put_bytes, put_int32, put_len, put_optional_uint32, put_packed_uint32,
    put_uint32,
};

/// [`ProstCodec`], except that the API's answers are written by [`write_answer`].
#[derive(Debug, Clone)]
pub struct Codec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for Codec<T, U> {
    fn default() -> Self {
        Codec(PhantomData)
    }
}

impl<T, U> tonic::codec::Codec for Codec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = AnswerEncoder<T>;
    type Decoder = RequestDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        AnswerEncoder(ProstCodec::<T, U>::default().encoder())
    }

    fn decoder(&mut self) -> Self::Decoder {
        RequestDecoder(ProstCodec::<T, U>::default().decoder())
    }
}

/// prost's decoder, except that a request it cannot decode is answered INVALID_ARGUMENT
/// with reason `MALFORMED_REQUEST` (tonic-prost answers INTERNAL, which says the server
/// failed). An answer the generated client cannot decode is left as prost has it: the
/// server, not the caller, sent it.
#[derive(Debug, Clone)]
pub struct RequestDecoder<U>(ProstDecoder<U>);

impl<U: Message + Default + 'static> Decoder for RequestDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        self.0.decode(buf).map_err(|status| {
            if is_request::<U>() {
                Status::from(ApiError::Malformed(status.message().to_owned()))
            } else {
                status
            }
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}

/// Whether `U` is a request of a service generated with this codec (the API's, the
/// benchmark's echo), which only a client sends.
fn is_request<U: 'static>() -> bool {
    let u = TypeId::of::<U>();
    let api = [
        TypeId::of::<pb::NewGameRequest>(),
        TypeId::of::<pb::ClaimSeatRequest>(),
        TypeId::of::<pb::DealRequest>(),
        TypeId::of::<pb::PlayRequest>(),
        TypeId::of::<pb::DrawRequest>(),
        TypeId::of::<pb::ScoreRequest>(),
        TypeId::of::<pb::SuggestRequest>(),
    ];
    #[cfg(feature = "bench-echo")]
    if u == TypeId::of::<crate::proto::bench::EchoRequest>() {
        return true;
    }
    api.contains(&u)
}

/// Encodes the API's answers with [`write_answer`] and anything else with prost.
#[derive(Debug, Clone)]
pub struct AnswerEncoder<T>(ProstEncoder<T>);

thread_local! {
    /// Where answers are written before they are copied into the call's buffer (a
    /// length is written after its message, so the bytes are not final until then).
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A scratch buffer that grew past this (it never should) is not kept.
const SCRATCH_KEPT: usize = 64 * 1024;

impl<T: Message + 'static> Encoder for AnswerEncoder<T> {
    type Item = T;
    type Error = Status;

    fn encode(&mut self, item: T, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        // Decided per type at compile time: every other message (requests, the other
        // services' answers) goes to prost as before, with nothing added.
        if !is_answer::<T>() {
            return self.0.encode(item, buf);
        }
        let other = SCRATCH.with_borrow_mut(|scratch| {
            scratch.clear();
            let other = encode_answer(item, scratch);
            if other.is_ok() {
                buf.put_slice(scratch);
            }
            if scratch.capacity() > SCRATCH_KEPT {
                *scratch = Vec::new();
            }
            other
        });
        match other {
            Ok(()) => Ok(()),
            Err(item) => self.0.encode(item, buf),
        }
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}

/// Whether `T` is one of the API's answers, which [`write_answer`] writes.
fn is_answer<T: 'static>() -> bool {
    let t = TypeId::of::<T>();
    t == TypeId::of::<pb::PlayResponse>()
        || t == TypeId::of::<pb::DrawResponse>()
        || t == TypeId::of::<pb::DealResponse>()
        || t == TypeId::of::<pb::NewGameResponse>()
        || t == TypeId::of::<pb::ScoreResponse>()
}

/// What the encoder does with a message: if it is one of the API's answers, writes it
/// to `buf` ([`write_answer`]) and hands its view back for reuse ([`recycle_view`]);
/// any other message comes back untouched, for prost.
pub fn encode_answer<T: 'static>(mut message: T, buf: &mut Vec<u8>) -> Result<(), T> {
    if !write_answer(&message, buf) {
        return Err(message);
    }
    if let Some(view) = take_view(&mut message) {
        recycle_view(view);
    }
    Ok(())
}

/// The view of an answer, once it is written, for [`recycle_view`].
fn take_view(message: &mut dyn Any) -> Option<pb::GameView> {
    if let Some(m) = message.downcast_mut::<pb::PlayResponse>() {
        m.view.take()
    } else if let Some(m) = message.downcast_mut::<pb::DrawResponse>() {
        m.view.take()
    } else if let Some(m) = message.downcast_mut::<pb::DealResponse>() {
        m.view.take()
    } else if let Some(m) = message.downcast_mut::<pb::NewGameResponse>() {
        m.view.take()
    } else if let Some(m) = message.downcast_mut::<pb::ScoreResponse>() {
        m.view.take()
    } else {
        None
    }
}

/// Appends `message` to `buf` if it is one of the API's answers, and says whether it
/// was; the bytes are those prost writes for it.
pub fn write_answer(message: &dyn Any, buf: &mut Vec<u8>) -> bool {
    if let Some(m) = message.downcast_ref::<pb::PlayResponse>() {
        let pb::PlayResponse {
            state,
            view,
            events,
        } = m;
        put_changed(buf, state, view, events);
    } else if let Some(m) = message.downcast_ref::<pb::DrawResponse>() {
        let pb::DrawResponse {
            state,
            view,
            events,
        } = m;
        put_changed(buf, state, view, events);
    } else if let Some(m) = message.downcast_ref::<pb::DealResponse>() {
        let pb::DealResponse {
            state,
            view,
            events,
        } = m;
        put_changed(buf, state, view, events);
    } else if let Some(m) = message.downcast_ref::<pb::NewGameResponse>() {
        let pb::NewGameResponse {
            state,
            view,
            events,
            credentials,
        } = m;
        put_changed(buf, state, view, events);
        for pb::SeatCredential { seat, credential } in credentials {
            put_len(buf, 4, |b| {
                put_uint32(b, 1, *seat);
                put_bytes(b, 2, credential);
            });
        }
    } else if let Some(m) = message.downcast_ref::<pb::ScoreResponse>() {
        let pb::ScoreResponse {
            sheet,
            view,
            hand_events,
        } = m;
        if let Some(sheet) = sheet {
            put_len(buf, 1, |b| put_sheet(b, sheet));
        }
        if let Some(view) = view {
            put_len(buf, 2, |b| put_view(b, view));
        }
        for event in hand_events {
            put_len(buf, 3, |b| put_event(b, event));
        }
    } else {
        return false;
    }
    true
}

/// The fields every changing call answers: the token, the view, the events.
fn put_changed(buf: &mut Vec<u8>, state: &[u8], view: &Option<pb::GameView>, events: &[pb::Event]) {
    put_bytes(buf, 1, state);
    if let Some(view) = view {
        put_len(buf, 2, |b| put_view(b, view));
    }
    for event in events {
        put_len(buf, 3, |b| put_event(b, event));
    }
}

/// Highest pip on a tile.
const MAX_PIP: usize = 6;

/// Every tile's message as prost writes it (`a` then `b`, each left out when 0), with
/// its length in front: `[length, bytes..]`. Tiles are the most frequent message of an
/// answer (the layout, the hand, the legal moves), so they are copied from here.
const TILE_BYTES: [[u8; 5]; (MAX_PIP + 1) * (MAX_PIP + 1)] = {
    let mut table = [[0u8; 5]; (MAX_PIP + 1) * (MAX_PIP + 1)];
    let mut i = 0;
    while i < table.len() {
        let (a, b) = ((i / (MAX_PIP + 1)) as u8, (i % (MAX_PIP + 1)) as u8);
        let mut n = 1;
        if a != 0 {
            table[i][n] = 1 << 3;
            table[i][n + 1] = a;
            n += 2;
        }
        if b != 0 {
            table[i][n] = 2 << 3;
            table[i][n + 1] = b;
            n += 2;
        }
        table[i][0] = (n - 1) as u8;
        i += 1;
    }
    table
};

/// A tile as the embedded message `field` (a one-byte key: every tile field's number
/// is below 16).
#[inline]
fn put_one_tile(buf: &mut Vec<u8>, field: u32, &pb::Tile { a, b }: &pb::Tile) {
    let (a, b) = (a as usize, b as usize);
    if a <= MAX_PIP && b <= MAX_PIP && field < 16 {
        let entry = &TILE_BYTES[a * (MAX_PIP + 1) + b];
        let [len, x, y, z, w] = *entry;
        // A fixed six bytes written (no call to copy a variable length), then cut to
        // the tile's own.
        let end = buf.len() + 2 + usize::from(len);
        buf.extend_from_slice(&[(field << 3) as u8 | LEN, len, x, y, z, w]);
        buf.truncate(end);
    } else {
        // Not a tile the engine makes; written the long way all the same.
        put_len(buf, field, |buf| {
            put_uint32(buf, 1, a as u32);
            put_uint32(buf, 2, b as u32);
        });
    }
}

fn put_tile(buf: &mut Vec<u8>, field: u32, tile: &Option<pb::Tile>) {
    if let Some(tile) = tile {
        put_one_tile(buf, field, tile);
    }
}

fn put_tiles(buf: &mut Vec<u8>, field: u32, tiles: &[pb::Tile]) {
    for tile in tiles {
        put_one_tile(buf, field, tile);
    }
}

fn put_view(buf: &mut Vec<u8>, view: &pb::GameView) {
    let pb::GameView {
        match_id,
        moves,
        rules,
        phase,
        hand_number,
        turn,
        viewer,
        layout,
        open_ends,
        count,
        scores,
        hand_sizes,
        boneyard_size,
        hand,
        legal_moves,
        must_draw,
        winner_side,
        winner_seats,
        last_hand,
        state_id,
        previous_state_id,
        seats,
    } = view;
    put_bytes(buf, 1, match_id.as_bytes());
    put_uint32(buf, 2, *moves);
    if let Some(rules) = rules {
        put_len(buf, 3, |b| put_rules(b, rules));
    }
    put_int32(buf, 4, *phase);
    put_uint32(buf, 5, *hand_number);
    put_optional_uint32(buf, 6, *turn);
    put_optional_uint32(buf, 7, *viewer);
    for placed in layout {
        let pb::PlacedTile {
            tile,
            arm,
            index,
            near,
            far,
            crosswise,
            spinner,
            order,
            seat,
        } = placed;
        put_len(buf, 8, |b| {
            put_tile(b, 1, tile);
            put_int32(b, 2, *arm);
            put_uint32(b, 3, *index);
            put_uint32(b, 4, *near);
            put_uint32(b, 5, *far);
            put_bool(b, 6, *crosswise);
            put_bool(b, 7, *spinner);
            put_uint32(b, 8, *order);
            put_uint32(b, 9, *seat);
        });
    }
    for &pb::OpenEnd { end, pip, value } in open_ends {
        put_len(buf, 9, |b| {
            put_int32(b, 1, end);
            put_uint32(b, 2, pip);
            put_uint32(b, 3, value);
        });
    }
    put_uint32(buf, 10, *count);
    for pb::SideScore { side, seats, score } in scores {
        put_len(buf, 11, |b| {
            put_uint32(b, 1, *side);
            put_packed_uint32(b, 2, seats);
            put_int32(b, 3, *score);
        });
    }
    put_packed_uint32(buf, 12, hand_sizes);
    put_uint32(buf, 13, *boneyard_size);
    put_tiles(buf, 14, hand);
    for pb::LegalMove { tile, end, points } in legal_moves {
        put_len(buf, 15, |b| {
            put_tile(b, 1, tile);
            put_int32(b, 2, *end);
            put_uint32(b, 3, *points);
        });
    }
    put_bool(buf, 16, *must_draw);
    put_optional_uint32(buf, 17, *winner_side);
    put_packed_uint32(buf, 18, winner_seats);
    if let Some(result) = last_hand {
        put_len(buf, 19, |b| put_hand_result(b, result));
    }
    put_bytes(buf, 20, state_id);
    put_bytes(buf, 21, previous_state_id);
    for &pb::SeatStatus { seat, kind, bot } in seats {
        put_len(buf, 22, |b| {
            put_uint32(b, 1, seat);
            put_int32(b, 2, kind);
            put_int32(b, 3, bot);
        });
    }
}

fn put_rules(buf: &mut Vec<u8>, rules: &pb::Rules) {
    let pb::Rules {
        players,
        partnership,
        hand_size,
        target,
        settlement,
    } = rules;
    put_uint32(buf, 1, *players);
    put_bool(buf, 2, *partnership);
    put_int32(buf, 3, *hand_size);
    put_uint32(buf, 4, *target);
    put_int32(buf, 5, *settlement);
}

fn put_hand_result(buf: &mut Vec<u8>, result: &pb::HandResult) {
    let pb::HandResult {
        hand,
        reason,
        went_out,
        hands,
        settlement,
        reached_target,
    } = result;
    put_uint32(buf, 1, *hand);
    put_int32(buf, 2, *reason);
    put_optional_uint32(buf, 3, *went_out);
    for pb::SeatHand {
        seat,
        tiles,
        pips,
        rounded,
    } in hands
    {
        put_len(buf, 4, |b| {
            put_uint32(b, 1, *seat);
            put_tiles(b, 2, tiles);
            put_uint32(b, 3, *pips);
            put_uint32(b, 4, *rounded);
        });
    }
    for &pb::SideAmount { side, points } in settlement {
        put_len(buf, 5, |b| {
            put_uint32(b, 1, side);
            put_int32(b, 2, points);
        });
    }
    put_optional_uint32(buf, 6, *reached_target);
}

fn put_event(buf: &mut Vec<u8>, event: &pb::Event) {
    use pb::event::{Dealt, GameEnded, Kind, Passed, TileDrawn, TilePlayed};
    let pb::Event { kind } = event;
    match kind {
        None => {}
        Some(Kind::Dealt(Dealt { hand, starter })) => put_len(buf, 1, |b| {
            put_uint32(b, 1, *hand);
            put_uint32(b, 2, *starter);
        }),
        Some(Kind::TilePlayed(TilePlayed {
            seat,
            tile,
            end,
            count,
            points,
        })) => put_len(buf, 2, |b| {
            put_uint32(b, 1, *seat);
            put_tile(b, 2, tile);
            put_int32(b, 3, *end);
            put_uint32(b, 4, *count);
            put_uint32(b, 5, *points);
        }),
        Some(Kind::TileDrawn(TileDrawn { seat, tile })) => put_len(buf, 3, |b| {
            put_uint32(b, 1, *seat);
            put_tile(b, 2, tile);
        }),
        Some(Kind::Passed(Passed { seat })) => put_len(buf, 4, |b| put_uint32(b, 1, *seat)),
        Some(Kind::HandEnded(result)) => put_len(buf, 5, |b| put_hand_result(b, result)),
        Some(Kind::GameEnded(GameEnded {
            winner_side,
            winner_seats,
        })) => put_len(buf, 6, |b| {
            put_uint32(b, 1, *winner_side);
            put_packed_uint32(b, 2, winner_seats);
        }),
    }
}

fn put_sheet(buf: &mut Vec<u8>, sheet: &pb::ScoreSheet) {
    let pb::ScoreSheet {
        target,
        rows,
        carried,
        winner_side,
    } = sheet;
    put_uint32(buf, 1, *target);
    for row in rows {
        put_len(buf, 2, |b| put_sheet_row(b, row));
    }
    if let Some(row) = carried {
        put_len(buf, 3, |b| put_sheet_row(b, row));
    }
    put_optional_uint32(buf, 4, *winner_side);
}

fn put_sheet_row(buf: &mut Vec<u8>, row: &pb::SheetRow) {
    let pb::SheetRow {
        first_hand,
        last_hand,
        sides,
    } = row;
    put_uint32(buf, 1, *first_hand);
    put_uint32(buf, 2, *last_hand);
    for &pb::SideLine {
        side,
        play,
        settlement,
        total,
    } in sides
    {
        put_len(buf, 3, |b| {
            put_uint32(b, 1, side);
            put_int32(b, 2, play);
            put_int32(b, 3, settlement);
            put_int32(b, 4, total);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::bot::{Strategy, choose};
    use crate::engine::{Game, HandSizeRule, Rules, SettlementRule};
    use crate::service::convert::{event_out, sheet_out, view_out};
    use rand_chacha::ChaCha8Rng;
    use rand_chacha::rand_core::SeedableRng;

    fn same_as_prost<M: Message + std::fmt::Debug + 'static>(message: &M) -> usize {
        let mut ours = Vec::new();
        assert!(write_answer(message, &mut ours), "an answer");
        assert_eq!(ours, message.encode_to_vec(), "{message:?}");
        ours.len()
    }

    #[test]
    fn answers_are_the_bytes_prost_writes() {
        let tables = [
            (2, false, HandSizeRule::Standard, SettlementRule::OwnPipsOff),
            (
                3,
                false,
                HandSizeRule::FiveEach,
                SettlementRule::WinnerTakesPips,
            ),
            (4, false, HandSizeRule::Standard, SettlementRule::OwnPipsOff),
            (
                4,
                true,
                HandSizeRule::SevenFive,
                SettlementRule::WinnerTakesPips,
            ),
        ];
        let mut answers = 0;
        let mut largest = 0;
        for (i, &(players, partnership, hand_size, settlement)) in tables.iter().enumerate() {
            let mut rules = Rules::for_players(players);
            rules.partnership = partnership;
            rules.hand_size = hand_size;
            rules.settlement = settlement;
            let mut game = Game::new(rules, i as u64).unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(i as u64);
            let mut scratch = Vec::new();
            let mut events = Vec::new();
            let state: Vec<u8> = (0..200).map(|b| b as u8).collect();
            loop {
                for viewer in std::iter::once(None).chain((0..players).map(Some)) {
                    let seats = crate::state::Seats([
                        crate::state::Player::Open,
                        crate::state::Player::Human([1; 16]),
                        crate::state::Player::Bot(crate::engine::suggest::Level::Medium),
                        crate::state::Player::Bot(crate::engine::suggest::Level::Hard),
                    ]);
                    let table = crate::service::convert::Table {
                        match_id: "0123abcd",
                        state_id: &[7; 16],
                        previous_state_id: if answers % 2 == 0 { &[] } else { &[9; 16] },
                        seats: &seats,
                    };
                    let view = Some(view_out(&game.view(viewer).unwrap(), &table));
                    let events: Vec<pb::Event> = events
                        .iter()
                        .map(|&e| event_out(&rules, e, viewer))
                        .collect();
                    let state = state[..(answers % 3) * 90].to_vec();
                    largest = largest.max(same_as_prost(&pb::PlayResponse {
                        state: state.clone(),
                        view: view.clone(),
                        events: events.clone(),
                    }));
                    same_as_prost(&pb::DrawResponse {
                        state: state.clone(),
                        view: view.clone(),
                        events: events.clone(),
                    });
                    same_as_prost(&pb::DealResponse {
                        state: state.clone(),
                        view: view.clone(),
                        events: events.clone(),
                    });
                    same_as_prost(&pb::NewGameResponse {
                        state,
                        view: None,
                        events: events.clone(),
                        credentials: (0..answers % 5)
                            .map(|seat| pb::SeatCredential {
                                seat: seat as u32,
                                credential: vec![seat as u8; 16],
                            })
                            .collect(),
                    });
                    same_as_prost(&pb::ScoreResponse {
                        sheet: Some(sheet_out(&rules, game.sheet(), game.winner())),
                        view,
                        hand_events: events,
                    });
                    answers += 1;
                }
                let Some(action) = choose(&game, Strategy::Random, &mut rng, &mut scratch) else {
                    break;
                };
                events.clear();
                game.apply(action, &mut events).unwrap();
            }
        }
        assert!(answers > 5_000, "{answers} answers");
        assert!(largest > 600, "long answers too: {largest} bytes");
        same_as_prost(&pb::ScoreResponse::default());
        same_as_prost(&pb::PlayResponse::default());
    }

    #[test]
    fn every_tile_and_odd_ones_are_the_bytes_prost_writes() {
        // In the hand, the field the table serves; pips past 6 take the long way.
        for a in 0..=8 {
            for b in 0..=8 {
                let answer = pb::ScoreResponse {
                    sheet: None,
                    view: Some(pb::GameView {
                        hand: vec![pb::Tile { a, b }],
                        ..Default::default()
                    }),
                    hand_events: Vec::new(),
                };
                same_as_prost(&answer);
            }
        }
    }

    #[test]
    fn other_messages_are_left_to_prost() {
        let mut buf = Vec::new();
        assert!(!write_answer(&pb::PlayRequest::default(), &mut buf));
        assert!(!write_answer(&pb::GameView::default(), &mut buf));
        assert!(buf.is_empty());
        assert!(!is_answer::<pb::PlayRequest>() && !is_answer::<pb::GameView>());
        assert!(is_answer::<pb::PlayResponse>() && is_answer::<pb::ScoreResponse>());
        assert!(is_answer::<pb::NewGameResponse>() && is_answer::<pb::DealResponse>());
        assert!(is_answer::<pb::DrawResponse>());
    }
}
