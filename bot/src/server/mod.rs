//! The webhook server: signature check and delivery parsing.

pub mod signature;
pub mod webhook;
