pub mod config;
pub use allfives_engine as engine;
pub mod metrics;
pub mod proto;
pub mod server;
pub mod service;
pub mod state;
