//! The integration tests, one binary: each file here is a module, as cargo's own
//! `tests/testsuite/` is laid out, so the crate and its dependencies are linked into
//! one test executable rather than one per file. `cargo test` runs it with the rest;
//! `cargo test --test it hostile::` runs one module, `cargo test --test it NAME` one
//! test.
//!
//! The tests run on parallel threads of this one process. Those that load the CPU
//! and those that measure time, latency, CPU, memory or load keep out of each other's
//! way through [`common::heavy`] and [`common::measuring`] (the module's doc says
//! which take which). A test that must own its whole process runs again, alone, in a
//! child process of this binary ([`common::alone`]); its module says why in its first
//! lines: `junk` (a global tracing subscriber), `search_flood` (the process's CPU
//! time) and `metrics_descriptors` (the process's open descriptors).

mod common;

mod api;
mod clock_races;
mod clocks;
mod connections;
mod hostile;
mod invites;
mod junk;
mod lifecycle;
mod match_store;
mod memory;
mod metrics;
mod metrics_descriptors;
mod overload;
mod passes;
mod playthroughs;
mod presence;
mod rematch;
mod results;
mod search_flood;
mod search_queue;
mod seat_events;
mod seats;
mod server;
mod suggest;
mod token_length;
mod watch;
