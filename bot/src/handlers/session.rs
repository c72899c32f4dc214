//! What a job adds to its agent session ([`crate::session`]): the session's name and settings for
//! the job, the repository's test command run before and after the agent (for the test delta that
//! guards every push), what the job's model calls cost, and where its run directory is.

use std::path::{Path, PathBuf};

use serde_json::Map;

use crate::agent::Outcome;
use crate::config::Config;
use crate::config::repo::EffectiveSettings;
use crate::llm::Usage;
use crate::report::TestRun;
use crate::session::{AgentRun, AgentSession, CodeIndex, SessionError};
use crate::tools::Tool;
use crate::tools::run_tests::RunTests;

use super::{HandlerError, JobEnv};

/// What a job's model calls cost, for the report and `/metrics`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spent {
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    pub steps: u32,
    pub tool_calls: u32,
    pub duration_ms: u64,
}

impl Spent {
    /// Adds another run's spending (a job that runs the agent more than once).
    pub fn add(&mut self, other: &Spent) {
        self.usage.input_tokens += other.usage.input_tokens;
        self.usage.output_tokens += other.usage.output_tokens;
        self.usage.cache_read_tokens += other.usage.cache_read_tokens;
        self.usage.cache_write_tokens += other.usage.cache_write_tokens;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.steps += other.steps;
        self.tool_calls += other.tool_calls;
        self.duration_ms += other.duration_ms;
    }

    pub fn from_outcome(outcome: &Outcome) -> Self {
        Spent {
            usage: outcome.usage.usage,
            cost_usd: outcome.usage.cost_usd,
            steps: outcome.steps,
            tool_calls: outcome.tool_calls,
            duration_ms: outcome.duration_ms,
        }
    }
}

/// The agent session of a job of `env` over `root` (its working copy), with the settings the
/// repository's configuration allows, named on the engine after the job ([`JobEnv::sandbox_id`]).
pub fn agent_run<'a>(env: &'a JobEnv, settings: &'a EffectiveSettings, root: &Path, run_dir: PathBuf) -> AgentRun<'a> {
    AgentRun {
        config: env.config(),
        settings,
        prompts: &env.services.prompts,
        model: env.services.model.clone(),
        sandbox_id: env.sandbox_id(),
        root: root.to_owned(),
        run_dir,
        network_step: None,
        index: CodeIndex::for_server(env.config(), &env.repo.to_string(), &env.services.index_shelf),
        cancel: env.control.token().clone(),
    }
}

/// Runs the repository's test command (configured, else detected) in `session` as the `run_tests`
/// tool would, and forgets the result so that the agent's own runs are told apart.
pub async fn run_tests(session: &AgentSession) -> TestRun {
    run_tests_with_output(session).await.0
}

/// [`run_tests`], with the command's output (stdout, then stderr; empty when it did not run).
pub async fn run_tests_with_output(session: &AgentSession) -> (TestRun, String) {
    let result = RunTests.call(&session.ctx, Map::new()).await;
    fn take<T>(slot: &std::sync::Mutex<Option<T>>) -> Option<T> {
        slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }
    let report = take(&session.ctx.tests);
    let output = take(&session.ctx.test_output).unwrap_or_default();
    let run = match (result, report) {
        (Ok(_), Some(report)) => TestRun::Ran(report),
        (Ok(_), None) => TestRun::NoResults,
        (Err(error), _) => {
            tracing::info!(%error, "no test run");
            TestRun::NotRun
        }
    };
    (run, output)
}

impl From<SessionError> for HandlerError {
    fn from(error: SessionError) -> Self {
        match error {
            SessionError::RunDir { source, .. } => {
                HandlerError::Other(format!("could not create the job's run directory: {source}"))
            }
            SessionError::WorkingCopy { source, .. } => {
                HandlerError::Other(format!("could not open the job's working copy: {source}"))
            }
            SessionError::Trajectory { source, .. } => {
                HandlerError::Other(format!("could not write the trajectory: {source}"))
            }
            SessionError::Sandbox(error) => HandlerError::Sandbox(error),
            SessionError::Model(error) => HandlerError::Model(error),
            SessionError::Prompt(error) => HandlerError::Prompt(error),
            error @ SessionError::NetworkStep { .. } => HandlerError::Other(error.to_string()),
        }
    }
}

/// The job's run directory under the data directory.
pub fn run_dir(config: &Config, job_id: &str) -> PathBuf {
    config.server.data_dir.join("runs").join(job_id)
}
