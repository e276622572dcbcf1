//! The service stack every call passes through, declared here in request order: the
//! one place to read what happens to a call between the socket and its handler, and
//! who may answer it with what.
//!
//! | # | layer | file | what it does | what it may answer |
//! |---|---|---|---|---|
//! | 0 | accept | `incoming.rs`, `serve.rs` | connection cap (evicting the idlest idle connection), preface deadline, age, idle timeout, graceful close; HTTP/2 limits (`http_builder`) | no call status: connections refused or closed (GOAWAY), streams past `--concurrency-limit` refused by HTTP/2 |
//! | 1 | [`Tracked`] | `connections.rs` | counts the call open on its connection; makes its [`CallContext`](crate::call::CallContext) (its connection's tracker, [`crate::connection`], client, route from [`crate::routes`], deadline), the one every layer after it reads | nothing |
//! | 2 | [`KeySet`] | `key_set.rs` | answers `GET /.well-known/jwks.json`: the result keys' JWK Set (not a gRPC call: not logged, counted or admitted; a constant answer) | HTTP 200 with the set (405 to another method there) |
//! | 3 | CORS | tower-http | answers browsers' preflights, decorates gRPC-Web answers | HTTP 200 to a preflight (no CORS headers for an origin not allowed) |
//! | 4 | gRPC-Web | tonic-web | turns a browser's gRPC-Web call into gRPC and back | what tonic-web refuses itself (a bad content type); bad base64 reaches layer 7 as a body error |
//! | 5 | [`CallLog`] | `call_log.rs` | logs and counts every call's outcome below it | nothing of its own |
//! | 6 | [`Admitted`] | `admission.rs` | the calls-in-flight budget, fair between connections; the owner of the call's deadline | RESOURCE_EXHAUSTED `OVERLOADED`; DEADLINE_EXCEEDED past the deadline (`REQUEST_TIMEOUT` past the server's own limit); INTERNAL for a call without its context (a miswired stack, never a client's doing) |
//! | 7 | [`RequestBody`] | `request_body.rs`, `framing.rs` | follows the body's gRPC framing; its deadline; health's and reflection's messages decoded | INVALID_ARGUMENT `MALFORMED_REQUEST`; CANCELLED `REQUEST_BODY_TIMEOUT`; CANCELLED when the transport broke the body |
//! | 8 | routes | tonic | the API (`crate::service`), health, reflection (and `bench-echo`'s echo) | UNIMPLEMENTED for an unknown method; the API's codec INVALID_ARGUMENT `MALFORMED_REQUEST` for an undecodable request, OUT_OF_RANGE past `--max-message-bytes` (tonic's decoder); the handlers' statuses (`service::status`) |
//!
//! Layers 2 to 8 are built once ([`build`]) and shared by every connection; layer 1
//! is put in front of them for each connection ([`Stack::for_connection`]).

use std::sync::Arc;
use std::time::Duration;

use tonic::codegen::http::{HeaderName, Method};
use tonic::service::Routes;
use tonic::transport::server::Connected;
use tonic_web::{GrpcWebLayer, GrpcWebService};
use tower::ServiceBuilder;
use tower::layer::layer_fn;
use tower_http::cors::{AllowHeaders, AllowOrigin, Cors, CorsLayer, ExposeHeaders};

use super::admission::{Admission, Admitted};
use super::call_log::CallLog;
use super::connections::Tracked;
use super::incoming::Connection;
use super::key_set::KeySet;
use super::request_body::RequestBody;
use crate::config::CorsOrigins;
use crate::metrics::Metrics;

/// How long browsers may cache a CORS preflight answer.
const CORS_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// Layers 2 to 8 of the table, outermost first.
pub type Shared = KeySet<Cors<GrpcWebService<CallLog<Admitted<RequestBody<Routes>>>>>>;

/// What the layers are set with.
pub struct Settings<'a> {
    pub cors_origins: &'a CorsOrigins,
    pub max_calls_in_flight: usize,
    /// `--request-timeout-ms`: a call's deadline unless its `grpc-timeout` is sooner.
    pub request_timeout: Duration,
    /// `--body-timeout-ms`: a request body must be whole this long after its headers.
    pub body_timeout: Duration,
    /// `--trusted-client-header`: the header naming a call's client, if one is trusted.
    pub client_header: Option<HeaderName>,
    pub metrics: Arc<Metrics>,
    /// The result keys' JWK Set as JSON, served at `/.well-known/jwks.json`.
    pub key_set: String,
}

/// The whole stack: the shared layers, and what each connection's own layer needs.
#[derive(Clone)]
pub struct Stack {
    shared: Shared,
    request_timeout: Duration,
    client_header: Option<HeaderName>,
}

/// Builds the stack around `routes`, in request order (the table above).
pub fn build(routes: Routes, settings: Settings<'_>) -> Stack {
    let admission = Admission::new(settings.max_calls_in_flight);
    let metrics = settings.metrics;
    let body_timeout = settings.body_timeout;
    let key_set = settings.key_set;
    let shared = ServiceBuilder::new()
        .layer(layer_fn(move |inner| KeySet {
            inner,
            json: key_set.clone(),
        }))
        .layer(cors_layer(settings.cors_origins))
        .layer(GrpcWebLayer::new())
        .layer(layer_fn(move |inner| CallLog {
            inner,
            metrics: Arc::clone(&metrics),
        }))
        .layer(layer_fn(move |inner| admission.wrap(inner)))
        .layer(layer_fn(move |inner| RequestBody::new(inner, body_timeout)))
        .service(routes);
    Stack {
        shared,
        request_timeout: settings.request_timeout,
        client_header: settings.client_header,
    }
}

impl Stack {
    /// The stack as one connection serves it: [`Tracked`] (layer 1) in front of the
    /// shared layers.
    pub fn for_connection(&self, connection: &Connection) -> Tracked<Shared> {
        Tracked::new(
            self.shared.clone(),
            connection.registered(),
            connection.connect_info(),
            self.request_timeout,
            self.client_header.clone(),
        )
    }
}

/// CORS for gRPC-Web from browsers: the configured origins, any request header (gRPC
/// metadata is headers), and the gRPC status headers exposed to scripts.
fn cors_layer(origins: &CorsOrigins) -> CorsLayer {
    let origin = match origins {
        CorsOrigins::Any => AllowOrigin::any(),
        CorsOrigins::List(list) => AllowOrigin::list(list.iter().cloned()),
    };
    CorsLayer::new()
        .allow_origin(origin)
        .allow_methods([Method::POST, Method::OPTIONS])
        .allow_headers(AllowHeaders::mirror_request())
        .expose_headers(ExposeHeaders::list([
            HeaderName::from_static("grpc-status"),
            HeaderName::from_static("grpc-message"),
            HeaderName::from_static("grpc-status-details-bin"),
        ]))
        .max_age(CORS_MAX_AGE)
}
