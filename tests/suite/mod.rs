//! The suite's test modules, one per area.

pub(crate) mod agent_loop;
mod chore_job;
mod chores_cargo;
mod chores_packages;
mod chores_real;
mod chores_schedule;
mod ci_loop;
mod config_schema;
mod describe_job;
mod docker_proxy;
mod eval;
mod fake_ci;
mod fake_github;
mod fix_job;
mod git_workspace;
mod github_graphql;
mod harness;
mod llm_providers;
mod review_job;
mod run_command;
mod scripted_model;
mod serve;
mod serving;
mod triage_corpus;
mod triage_job;
mod webhook;
mod workspace_pool;
