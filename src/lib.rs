pub mod config;
pub mod engine;
pub mod proto;
pub mod server;
pub mod service;
pub mod state;
