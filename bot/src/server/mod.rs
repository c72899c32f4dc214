//! The webhook server: signature check, delivery parsing, the axum routes, the connections they are
//! served on, the dispatcher that turns stored deliveries into jobs, and the start-up and
//! shutdown of `pitcrew serve`.

pub mod app;
pub mod dispatch;
pub mod routes;
pub mod scheduler;
pub mod serve;
pub mod signature;
pub mod webhook;

pub use app::{RunningServer, ServeError, Server, ServerOptions, StopSignals};
