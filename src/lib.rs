pub mod engine;
pub mod proto;
pub mod state;
