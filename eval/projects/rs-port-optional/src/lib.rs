//! Configuration and listen address of the status service.

pub mod config;
pub mod server;

pub use config::{Config, ConfigError, DEFAULT_PORT};
pub use server::{bind_address, describe};
