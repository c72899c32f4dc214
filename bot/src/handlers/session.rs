//! One job's agent session: the sandbox over the job's working copy, the repository's test command
//! run before and after the agent (for the test delta that guards every push), and the agent run
//! itself with the settings the repository's configuration allows.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Map;
use tokio_util::sync::CancellationToken;

use crate::agent::events::{EventSink, Fanout, TrajectoryLog};
use crate::agent::{Agent, Meter, Outcome, Task};
use crate::config::repo::EffectiveSettings;
use crate::config::{Config, SandboxBackend, SandboxNetwork};
use crate::llm::{self, Model, Usage};
use crate::prompts::{Prompts, Template};
use crate::report::TestRun;
use crate::sandbox::Session;
use crate::sandbox::docker::{DockerSandbox, DockerSpec, Network};
use crate::sandbox::local::LocalSession;
use crate::tools::run_tests::RunTests;
use crate::tools::{Plan, Registry, Tool, ToolContext, Workspace};

use super::HandlerError;

/// Where the Docker backend mounts the checkout.
const CONTAINER_WORKSPACE: &str = "/workspace";

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

/// The sandbox and tool context of one job.
pub struct JobSession {
    pub ctx: ToolContext,
    session: Arc<dyn Session>,
    shown_root: String,
}

impl JobSession {
    /// Starts the sandbox over `root` (the job's working copy) with the image, setup script and test
    /// command of `settings`, named `sandbox_id` on the engine ([`super::JobEnv::sandbox_id`]).
    /// `run_dir` receives the trajectory, test logs and large tool outputs.
    pub async fn start(
        config: &Config,
        settings: &EffectiveSettings,
        sandbox_id: &str,
        root: &Path,
        run_dir: &Path,
        cancel: CancellationToken,
    ) -> Result<Self, HandlerError> {
        std::fs::create_dir_all(run_dir)
            .map_err(|e| HandlerError::Other(format!("could not create the job's run directory: {e}")))?;
        let workspace = Workspace::new(root)
            .and_then(|w| w.with_read_root(run_dir))
            .map_err(|e| HandlerError::Other(format!("could not open the job's working copy: {e}")))?;
        let (session, workspace, shown_root): (Arc<dyn Session>, Workspace, String) = match config.sandbox.backend {
            SandboxBackend::Local => (
                Arc::new(LocalSession::start(
                    root,
                    crate::sandbox::local::LocalOptions {
                        user: crate::sandbox::local::SandboxUser::for_policy(config.sandbox.local_user),
                        ..crate::run::local_options()
                    },
                )?),
                workspace,
                root.display().to_string(),
            ),
            SandboxBackend::Docker => {
                let docker = DockerSandbox::connect().await?;
                let spec = DockerSpec {
                    network: match config.sandbox.network {
                        SandboxNetwork::None => Network::None,
                        SandboxNetwork::Bridge => Network::Bridge,
                    },
                    memory_bytes: config.sandbox.memory_bytes,
                    disk_bytes: config.sandbox.disk_bytes,
                    cpus: config.sandbox.cpus,
                    pids_limit: i64::from(config.sandbox.pids_limit),
                    setup: settings.setup.clone(),
                    setup_network: settings.setup_network,
                    ..DockerSpec::new(sandbox_id, settings.image.clone(), root)
                };
                tracing::info!(image = %settings.image, sandbox = sandbox_id, "starting the docker sandbox");
                (
                    Arc::new(docker.start(spec).await?),
                    workspace.with_mount_point(Path::new(CONTAINER_WORKSPACE)),
                    CONTAINER_WORKSPACE.to_owned(),
                )
            }
        };
        let ctx = ToolContext {
            workspace,
            sandbox: session.clone(),
            run_dir: run_dir.to_owned(),
            test_command: settings.test_command.clone(),
            plan: Mutex::new(Plan::default()),
            reads: Default::default(),
            tests: Mutex::new(None),
            cancel,
        };
        Ok(JobSession {
            ctx,
            session,
            shown_root,
        })
    }

    /// Runs the repository's test command (configured, else detected) as the `run_tests` tool
    /// would, and forgets the result so that the agent's own runs are told apart.
    pub async fn run_tests(&self) -> TestRun {
        let result = RunTests.call(&self.ctx, Map::new()).await;
        let report = self
            .ctx
            .tests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        match (result, report) {
            (Ok(_), Some(report)) => TestRun::Ran(report),
            (Ok(_), None) => TestRun::NoResults,
            (Err(error), _) => {
                tracing::info!(%error, "no test run");
                TestRun::NotRun
            }
        }
    }

    /// Runs the agent on `prompt` with every tool (`read_only`: the read-only ones and the test
    /// runner) under the repository's budgets.
    #[expect(
        clippy::too_many_arguments,
        reason = "one call site per job kind; a struct would only rename them"
    )]
    pub async fn run_agent(
        &self,
        config: &Config,
        prompts: &Prompts,
        settings: &EffectiveSettings,
        model: Option<Arc<dyn Model>>,
        prompt: String,
        read_only: bool,
        events: Arc<dyn EventSink>,
        run_dir: &Path,
    ) -> Result<Outcome, HandlerError> {
        self.run_agent_with(
            config,
            prompts,
            settings,
            model,
            prompt,
            read_only,
            Vec::new(),
            events,
            run_dir,
        )
        .await
    }

    /// [`JobSession::run_agent`] with `extra_tools` added to the registry (after the read-only
    /// filter: a job's own tools, such as a review's `review_comment`, are always offered).
    #[expect(
        clippy::too_many_arguments,
        reason = "one call site per job kind; a struct would only rename them"
    )]
    pub async fn run_agent_with(
        &self,
        config: &Config,
        prompts: &Prompts,
        settings: &EffectiveSettings,
        model: Option<Arc<dyn Model>>,
        prompt: String,
        read_only: bool,
        extra_tools: Vec<Arc<dyn Tool>>,
        events: Arc<dyn EventSink>,
        run_dir: &Path,
    ) -> Result<Outcome, HandlerError> {
        let model = match model {
            Some(model) => model,
            None => {
                let mut model_settings = config.model.settings();
                model_settings.model = settings.model_name.clone();
                llm::connect(model_settings)?
            }
        };
        let agent_config = crate::agent::AgentConfig {
            max_steps: settings.max_steps,
            max_cost_usd: settings.max_cost_usd,
            max_wall_time: Some(settings.max_wall_time),
            context_window: config.model.context_window,
            ..crate::agent::AgentConfig::default()
        };
        let meter = Meter::new(config.price_table());
        let mut registry = crate::run::registry(model.clone(), &agent_config, meter.clone());
        if read_only {
            registry = read_only_registry(&registry);
        }
        for tool in extra_tools {
            registry.add(tool);
        }
        let trajectory = TrajectoryLog::create(&run_dir.join("trajectory.jsonl"))
            .map_err(|e| HandlerError::Other(format!("could not write the trajectory: {e}")))?;
        let events: Arc<dyn EventSink> = Arc::new(Fanout(vec![Box::new(trajectory), Box::new(events)]));
        let system = prompts.render(Template::System, &[("workspace", &self.shown_root)])?;
        let agent = Agent {
            model,
            tools: registry,
            system,
            config: agent_config,
            events,
            meter,
        };
        let cancel = self.ctx.cancel.clone();
        Ok(agent
            .run(
                &self.ctx,
                Task {
                    prompt,
                    requires_change: !read_only,
                },
                &cancel,
            )
            .await)
    }

    /// The repository's own instructions for agents (AGENTS.md …), capped.
    pub fn instructions(&self) -> String {
        crate::run::repository_instructions(&self.ctx.workspace)
    }

    /// Ends the sandbox; an error means it may still hold running processes (logged here).
    pub async fn stop(&self) -> Result<(), crate::sandbox::SandboxError> {
        let stopped = self.session.stop().await;
        if let Err(error) = &stopped {
            tracing::warn!(%error, "stopping the sandbox failed");
        }
        stopped
    }
}

/// The read-only tools of `registry`, plus the test runner: a review may run the tests to settle a
/// question (they write only build output, which the pool's clean-up removes).
fn read_only_registry(registry: &Registry) -> Registry {
    let mut tools = registry.read_only();
    tools.add(Arc::new(RunTests));
    tools
}

/// The job's run directory under the data directory.
pub fn run_dir(config: &Config, job_id: &str) -> PathBuf {
    config.server.data_dir.join("runs").join(job_id)
}
