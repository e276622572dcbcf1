//! Compiles the protos with protox (pure Rust, no `protoc` needed).
//!
//! - `proto/allfives/v1/allfives.proto`: the public API; server and client code, and
//!   its encoded descriptor set (with imports and comments) written to
//!   `$OUT_DIR/allfives_descriptor.bin` for gRPC reflection.
//! - `proto/allfives/internal/v1/state.proto`: the state token's internal encoding;
//!   messages only, and kept out of the reflection descriptor set.
//! - `proto/allfives/bench/v1/echo.proto`: only with the `bench-echo` feature, a bare
//!   unary service for benchmarks (`examples/loadgen.rs`); kept out of reflection.

use std::env;
use std::error::Error;
use std::path::PathBuf;

const PUBLIC: &str = "allfives/v1/allfives.proto";
const INTERNAL: &str = "allfives/internal/v1/state.proto";
const BENCH: &str = "allfives/bench/v1/echo.proto";
/// The requests' `state` fields, generated as `bytes::Bytes`.
const REQUEST_TOKENS: [&str; 5] = [
    ".allfives.v1.DealRequest.state",
    ".allfives.v1.PlayRequest.state",
    ".allfives.v1.DrawRequest.state",
    ".allfives.v1.ScoreRequest.state",
    ".allfives.v1.SuggestRequest.state",
];

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo:rerun-if-changed=proto");
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);

    let bench = env::var_os("CARGO_FEATURE_BENCH_ECHO").is_some();
    let files: &[&str] = if bench {
        &[PUBLIC, INTERNAL, BENCH]
    } else {
        &[PUBLIC, INTERNAL]
    };
    let fds = protox::compile(files, ["proto"])?;

    // Reflection serves only the public API (and whatever it imports).
    let mut public = fds.clone();
    public
        .file
        .retain(|f| f.name() != INTERNAL && f.name() != BENCH);
    std::fs::write(
        out_dir.join("allfives_descriptor.bin"),
        prost::Message::encode_to_vec(&public),
    )?;

    // Every message is encoded and decoded by prost, through the service's codec
    // (src/service/codec.rs: tonic-prost's, except that a request prost cannot decode
    // is answered INVALID_ARGUMENT, not INTERNAL).
    // A request's token as `Bytes`: prost then takes it as a slice of the buffer tonic
    // received it in, instead of copying it into a new vector on every call, and a Rust
    // client can pass an answer's token on without copying it.
    let mut builder = tonic_prost_build::configure();
    for path in REQUEST_TOKENS {
        builder = builder.bytes(path);
    }
    builder
        .build_server(true)
        .build_client(true)
        .codec_path("crate::service::codec::Codec")
        .compile_fds(fds)?;
    Ok(())
}
