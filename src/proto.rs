//! Code generated from the protos in `proto/` by `build.rs`.

/// The public API, package `allfives.v1` (`proto/allfives/v1/allfives.proto`).
/// (`WatchResponse.kind` holds a change or an empty heartbeat: prost's enum is as large
/// as the change, which is what a stream mostly sends anyway.)
#[allow(
    clippy::doc_lazy_continuation,
    clippy::doc_overindented_list_items,
    clippy::large_enum_variant
)]
pub mod v1 {
    tonic::include_proto!("allfives.v1");

    /// The encoded `FileDescriptorSet` of the public API, for gRPC reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("allfives_descriptor");
}

/// The state token's internal encoding, package `allfives.internal.v1`
/// (`proto/allfives/internal/v1/state.proto`). Never shown to clients.
#[allow(clippy::doc_lazy_continuation, clippy::doc_overindented_list_items)]
pub mod internal {
    tonic::include_proto!("allfives.internal.v1");
}

/// Benchmark only (`bench-echo` feature): a bare unary service, package
/// `allfives.bench.v1` (`proto/allfives/bench/v1/echo.proto`).
#[cfg(feature = "bench-echo")]
#[allow(clippy::doc_lazy_continuation, clippy::doc_overindented_list_items)]
pub mod bench {
    tonic::include_proto!("allfives.bench.v1");
}
