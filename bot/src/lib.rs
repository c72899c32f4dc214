//! pitcrew: a headless CI/CD bot for GitHub pull requests. The library holds every capability; `main.rs` is only the CLI.

pub mod config;
pub mod llm;
pub mod logging;
pub mod prompts;
