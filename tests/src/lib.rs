//! Support for pitcrew's end-to-end tests: fake servers and real fixtures they run against.

pub mod cargo_registry;
pub mod chore_fixture;
pub mod ci_log;
pub mod docker;
pub mod docker_proxy;
pub mod fake_ci;
pub mod fake_github;
pub mod git_server;
pub mod jwt;
pub mod package_registry;
pub mod postgres;
pub mod repo;
pub mod scenario;
pub mod scripted_model;
pub mod serve_process;
pub mod server_config;
pub mod server_thread;
