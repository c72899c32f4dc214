//! pitcrew: a headless CI/CD bot for GitHub pull requests. The library holds every capability; `main.rs` is only the CLI.

pub mod action;
pub mod agent;
pub mod backoff;
pub mod chores;
pub mod config;
pub mod github;
pub mod handlers;
pub mod jobs;
pub mod llm;
pub mod logging;
pub mod metrics;
pub mod prompts;
pub mod redact;
pub mod report;
pub mod run;
pub mod sandbox;
pub mod secrets;
pub mod serve;
pub mod server;
pub mod session;
pub mod shell;
pub mod testparse;
pub mod tools;
pub mod triage;
pub mod triggers;
pub mod workspace;
