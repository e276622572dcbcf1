//! The gRPC codec of the generated services (`build.rs` names it): tonic-prost's
//! [`ProstCodec`], which encodes every message and decodes every message, except that
//! a request prost cannot decode is the client's error ([`RequestDecoder`]:
//! INVALID_ARGUMENT, reason `MALFORMED_REQUEST`), not INTERNAL.

use std::any::TypeId;
use std::marker::PhantomData;

use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

use crate::proto::v1 as pb;
use crate::routes::Route;
use crate::service::status::ApiError;

/// The bytes an answer's encoding buffer starts with: most answers (a view with its
/// events, under 2 KiB) fit, and a larger one grows it. Each open `Watch` stream keeps
/// its buffer for its whole life, so tonic's default (8 KiB) cost a stream 6 KiB more
/// (docs/PERFORMANCE.md, "Watch").
const ENCODE_BUFFER: usize = 2 * 1024;
/// The bytes a `Watch` stream's encoding buffer starts with: its messages (a change, a
/// heartbeat) are under 800 bytes (`benches/watch_push.sh` prints the largest), a
/// larger one grows it, and the buffer is the stream's for its life: 1 KiB less a
/// stream than [`ENCODE_BUFFER`] (docs/PERFORMANCE.md, "Watch").
const WATCH_ENCODE_BUFFER: usize = 1024;
/// tonic's default: past this many encoded bytes a stream yields to the runtime.
const ENCODE_YIELD: usize = 32 * 1024;

/// [`ProstCodec`], with [`RequestDecoder`] for its decoder.
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
    type Encoder = ProstEncoder<T>;
    type Decoder = RequestDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        let buffer = match TypeId::of::<T>() == TypeId::of::<pb::WatchResponse>() {
            true => WATCH_ENCODE_BUFFER,
            false => ENCODE_BUFFER,
        };
        ProstEncoder::new(BufferSettings::new(buffer, ENCODE_YIELD))
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
            if Route::is_our_request::<U>() {
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
