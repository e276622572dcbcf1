//! allfives: a stateless gRPC game engine for the domino game All Fives.
//!
//! # Layout
//!
//! A call flows one way: request → open the token → engine → seal → view.
//!
//! - [`engine`] (the `allfives-engine` crate, `engine/`): the rules, pure: tiles, the
//!   layout, scoring, hands, the match, each seat's view, the bots. No I/O, no
//!   protobuf, no crypto; a match is built only by its constructors and legal moves.
//! - [`state`]: the state token: the match's encoding (its moves, replayed), sealing and
//!   opening with a key ring (key ids, rotation), seats' credentials, the cache of
//!   matches this process sealed lately.
//! - [`service`]: the tonic service: a file per RPC family (moves, seats, suggest,
//!   watch, invites), each handler made of the same steps (protobuf → token → engine →
//!   token → view, `service::steps`), the HARD search queue, and engine errors → gRPC
//!   statuses in one place (`service::status`).
//! - [`server`]: the transport: accepting and closing connections, and the stack of
//!   layers every call passes before its handler (`server/stack.rs` lists them in
//!   request order, with what each may answer); health, reflection, gRPC-Web; the
//!   graceful shutdown.
//! - [`store`]: the optional match store, which refuses moves from a match's older
//!   states (`--match-store`).
//! - [`call`]: a call's context (its connection, client, route, deadline), made once
//!   by the server and read by every layer and the service: the one thing both need.
//! - [`connection`]: a connection's state in one struct, its tracker (calls open,
//!   closing, its share of the calls-in-flight budget, its Watch streams, its client),
//!   carried in each call's context.
//! - [`server_clock`]: the time turn clocks are judged by: the system's, or one a test
//!   sets.
//! - [`throttle`]: log lines held to one per period (server and service both log).
//! - [`metrics`]: the Prometheus metrics and their HTTP endpoint.
//! - [`config`]: every flag and environment variable (docs/operations.md).
//! - [`proto`]: the generated protobuf and gRPC code.
//! - [`routes`]: the route table, generated from the protos: every method served, its
//!   request type and whether it streams, read by every layer that needs to know.
//!
//! `src/main.rs` parses the configuration and calls [`server::run`].

pub mod call;
#[cfg(feature = "server")]
pub mod config;
pub mod connection;
pub use allfives_engine as engine;
pub mod metrics;
pub mod passes;
pub mod proto;
pub mod results;
pub mod routes;
#[cfg(feature = "server")]
pub mod server;
pub mod server_clock;
pub mod service;
pub mod state;
pub mod store;
pub mod throttle;
