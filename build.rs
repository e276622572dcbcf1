//! Compiles the protos with protox (pure Rust, no `protoc` needed).
//!
//! - `proto/allfives/v1/allfives.proto`: the public API; server and client code, and
//!   its encoded descriptor set (with imports and comments) written to
//!   `$OUT_DIR/allfives_descriptor.bin` for gRPC reflection.
//! - `proto/allfives/internal/v1/state.proto`: the state token's internal encoding;
//!   messages only, and kept out of the reflection descriptor set.
//! - `proto/allfives/bench/v1/echo.proto`: only with the `bench-echo` feature, a bare
//!   unary service for benchmarks (`examples/loadgen.rs`); kept out of reflection.
//! - The route table, `$OUT_DIR/routes.rs` (read by `src/routes.rs`): every method of
//!   every service the build serves, from the descriptors compiled here: the API's (and
//!   the echo's), and, with the `server` feature, gRPC's health and reflection services
//!   (their protos copied in `vendor/grpc-proto/`, whose code comes from tonic-health
//!   and tonic-reflection). Adding an RPC to the proto adds its route.

use std::env;
use std::error::Error;
use std::path::PathBuf;

const PUBLIC: &str = "allfives/v1/allfives.proto";
const INTERNAL: &str = "allfives/internal/v1/state.proto";
const BENCH: &str = "allfives/bench/v1/echo.proto";
/// gRPC's own services the server serves (with the `server` feature), in
/// `vendor/grpc-proto/`: only their descriptors are compiled here.
const FOREIGN: [&str; 3] = [
    "grpc/health/v1/health.proto",
    "grpc/reflection/v1/reflection.proto",
    "grpc/reflection/v1alpha/reflection.proto",
];
/// Where the Rust types of each package's messages are: our packages' are generated
/// here (`src/proto.rs` includes them), gRPC's come with their crates.
const RUST_MODULES: [(&str, &str); 5] = [
    ("allfives.v1", "crate::proto::v1"),
    ("allfives.bench.v1", "crate::proto::bench"),
    ("grpc.health.v1", "tonic_health::pb"),
    ("grpc.reflection.v1", "tonic_reflection::pb::v1"),
    ("grpc.reflection.v1alpha", "tonic_reflection::pb::v1alpha"),
];
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
    println!("cargo:rerun-if-changed=vendor/grpc-proto");
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);

    let bench = env::var_os("CARGO_FEATURE_BENCH_ECHO").is_some();
    let files: &[&str] = if bench {
        &[PUBLIC, INTERNAL, BENCH]
    } else {
        &[PUBLIC, INTERNAL]
    };
    let fds = protox::compile(files, ["proto"])?;

    // The route table: our services (generated below with our codec), then gRPC's.
    let mut services = services_of(&fds, true);
    if env::var_os("CARGO_FEATURE_SERVER").is_some() {
        let foreign = protox::compile(FOREIGN, ["vendor/grpc-proto"])?;
        services.extend(services_of(&foreign, false));
    }
    std::fs::write(out_dir.join("routes.rs"), route_table(&services)?)?;

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

/// One method of a service, as the route table needs it.
struct Method {
    service: String,
    name: String,
    request: String,
    response: String,
    client_streaming: bool,
    server_streaming: bool,
    /// Served with our codec (`src/service/codec.rs`): a service generated here.
    ours: bool,
}

/// Every method of every service in `fds`.
fn services_of(fds: &prost_types::FileDescriptorSet, ours: bool) -> Vec<Method> {
    let mut methods = Vec::new();
    for file in &fds.file {
        for service in &file.service {
            for method in &service.method {
                methods.push(Method {
                    service: format!("{}.{}", file.package(), service.name()),
                    name: method.name().to_owned(),
                    request: method.input_type().trim_start_matches('.').to_owned(),
                    response: method.output_type().trim_start_matches('.').to_owned(),
                    client_streaming: method.client_streaming(),
                    server_streaming: method.server_streaming(),
                    ours,
                });
            }
        }
    }
    methods
}

/// The Rust path of a message's type, by its package (`RUST_MODULES`).
fn rust_type(full_name: &str) -> Result<String, Box<dyn Error>> {
    let (package, name) = full_name
        .rsplit_once('.')
        .ok_or_else(|| format!("{full_name}: a message outside any package"))?;
    let module = RUST_MODULES
        .iter()
        .find(|(p, _)| *p == package)
        .map(|(_, module)| module)
        .ok_or_else(|| format!("{full_name}: add its package's Rust module to RUST_MODULES"))?;
    Ok(format!("{module}::{name}"))
}

/// `routes.rs`: `ROUTES`, one [`Route`] per method, and `route_index`, a path's place
/// in it (the types are `src/routes.rs`'s).
fn route_table(methods: &[Method]) -> Result<String, Box<dyn Error>> {
    use std::fmt::Write as _;
    let mut table =
        String::from("// Generated by build.rs from the protos' descriptors: do not edit.\n\n");
    writeln!(table, "/// How many routes the server serves.")?;
    writeln!(table, "pub const ROUTE_COUNT: usize = {};\n", methods.len())?;
    writeln!(table, "/// Every method the server serves, one route each.")?;
    writeln!(table, "pub static ROUTES: [Route; ROUTE_COUNT] = [")?;
    for (index, m) in methods.iter().enumerate() {
        let request = rust_type(&m.request)?;
        let path = format!("/{}/{}", m.service, m.name);
        writeln!(
            table,
            "    Route {{ index: {index}, path: {path:?}, service: {service:?}, method: {method:?}, \
             request: {req:?}, response: {res:?}, client_streaming: {cs}, \
             server_streaming: {ss}, ours: {ours}, \
             decode_request: |bytes| <{request} as ::prost::Message>::decode(bytes).map(drop), \
             request_type: ::std::any::TypeId::of::<{request}> }},",
            service = m.service,
            method = m.name,
            req = m.request,
            res = m.response,
            cs = m.client_streaming,
            ss = m.server_streaming,
            ours = m.ours,
        )?;
    }
    writeln!(table, "];\n")?;
    writeln!(
        table,
        "/// The place in [`ROUTES`] of the route at `path`, if any."
    )?;
    writeln!(table, "fn route_index(path: &str) -> Option<usize> {{")?;
    writeln!(table, "    match path {{")?;
    for (i, m) in methods.iter().enumerate() {
        writeln!(table, "        \"/{}/{}\" => Some({i}),", m.service, m.name)?;
    }
    writeln!(table, "        _ => None,\n    }}\n}}")?;
    Ok(table)
}
