//! The HTTP edge of `pitcrew serve`: the signature check, the webhook route and the others, the
//! connections they are served on, and the start-up and shutdown of the server (which starts the
//! dispatcher and the scheduler of `intake/`).

pub mod app;
pub mod routes;
pub mod serve;
pub mod signature;
pub mod status;
pub mod webhook;

pub use app::{RunningServer, ServeError, Server, ServerOptions, StopSignals};
