pub mod config;
pub mod engine;
pub mod metrics;
pub mod proto;
pub mod server;
pub mod service;
pub mod state;
