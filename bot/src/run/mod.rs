//! `pitcrew run`: one task on a local repository, end to end — a branch, the agent in a sandbox
//! session, a commit of what it changed, and a report for the terminal or as JSON.
//!
//! Once the agent has run, the report always comes back, with what the run spent: a commit that
//! fails is the report's `error`, and the change stays in the working tree.

pub mod progress;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::agent::events::{EventSink, Fanout, TrajectoryLog};
use crate::agent::subagent::TaskTool;
use crate::agent::{Agent, AgentConfig, Meter, StopReason, Task};
use crate::config::{Config, Origin, SandboxBackend, SandboxNetwork};
use crate::llm::{self, Model, Usage};
use crate::prompts::{PromptError, Prompts, Template};
use crate::sandbox::docker::{DockerSandbox, DockerSpec, Network};
use crate::sandbox::local::{LocalOptions, LocalSession};
use crate::sandbox::{Session, image};
use crate::tools::{self, Plan, Registry, ToolContext, Workspace};
use crate::workspace::{self, ChangedFile, LocalRepo, WorkspaceError};

/// Repository instructions are capped: they share the context with the work.
const MAX_INSTRUCTIONS_CHARS: usize = 16_000;
/// Files whose content is added to the task as the repository's own instructions for agents.
pub const INSTRUCTION_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md"];

pub struct RunOptions {
    pub repo: PathBuf,
    pub task: String,
    /// Work on the current branch instead of a new `pitcrew/<slug>` one.
    pub in_place: bool,
    pub config: Config,
    pub prompts: Prompts,
    /// The front end (progress display); the trajectory log is added by the run.
    pub events: Arc<dyn EventSink>,
    /// Replaces the configured model (tests hand in a scripted one).
    pub model: Option<Arc<dyn Model>>,
    pub cancel: CancellationToken,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error("could not set up the run directory {path}: {source}")]
    RunDir { path: PathBuf, source: std::io::Error },
    #[error("could not start the sandbox: {0}")]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error("could not create the model client: {0}")]
    Model(#[from] llm::LlmError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
}

/// Everything a run did, for people (`render_text`) and machines (`--json`).
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// `finished`, `budget_exhausted`, `stuck`, `cancelled`, `model_error` or `tool_failed`; or
    /// `commit_failed` when the agent's change could not be committed (see `error`).
    pub status: &'static str,
    pub stop: StopReason,
    pub branch: Option<String>,
    pub commit: Option<String>,
    pub changed_files: Vec<ChangedFile>,
    /// New files left uncommitted because of their size.
    pub skipped_files: Vec<String>,
    /// New directories left uncommitted because they are git repositories of their own (`dir/`).
    pub skipped_repositories: Vec<String>,
    /// What failed after the agent's work (the commit); the change is left in the working tree.
    pub error: Option<String>,
    pub tests: Option<TestSummary>,
    pub plan: Plan,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    pub steps: u32,
    pub tool_calls: u32,
    pub duration_ms: u64,
    pub summary: String,
    pub run_dir: String,
    pub sandbox: String,
}

/// The last test run of the agent.
#[derive(Debug, Clone, Serialize)]
pub struct TestSummary {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub failures: Vec<String>,
}

impl RunReport {
    pub fn finished(&self) -> bool {
        self.stop == StopReason::Finished
    }
}

/// Runs `options.task` in `options.repo`.
pub async fn run(options: RunOptions) -> Result<RunReport, RunError> {
    let repo = LocalRepo::open(&options.repo)?;
    repo.ensure_clean()?;
    let start = repo.head()?;
    let branch = if options.in_place {
        repo.current_branch()
    } else {
        Some(repo.create_branch(&format!("pitcrew/{}", workspace::slug(&options.task, 40)))?)
    };
    let root = repo.root().to_owned();

    let run_dir = repo.git_dir().join("pitcrew").join("runs").join(run_id());
    std::fs::create_dir_all(&run_dir).map_err(|source| RunError::RunDir {
        path: run_dir.clone(),
        source,
    })?;
    let trajectory = TrajectoryLog::create(&run_dir.join("trajectory.jsonl")).map_err(|source| RunError::RunDir {
        path: run_dir.clone(),
        source,
    })?;
    let events: Arc<dyn EventSink> = Arc::new(Fanout(vec![Box::new(trajectory), Box::new(options.events.clone())]));

    let workspace = Workspace::new(&root)
        .and_then(|w| w.with_read_root(&run_dir))
        .map_err(|source| RunError::RunDir {
            path: run_dir.clone(),
            source,
        })?;
    let job_id = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(run_id);
    let (session, workspace) = start_sandbox(&options.config, &job_id, &root, workspace).await?;

    let model = match options.model {
        Some(model) => model,
        None => llm::connect(options.config.model.settings())?,
    };
    let agent_config = agent_config(&options.config);
    let meter = Meter::new(options.config.price_table());
    let registry = registry(model.clone(), &agent_config, meter.clone());
    let shown_root = match options.config.sandbox.backend {
        SandboxBackend::Docker => CONTAINER_WORKSPACE.to_owned(),
        SandboxBackend::Local => root.display().to_string(),
    };
    let system = options
        .prompts
        .render(Template::System, &[("workspace", &shown_root)])?;
    let context = format!(
        "A local run of `pitcrew run` in {}, on branch {}. The person who started it reads your final report \
         in their terminal.",
        root.display(),
        branch.as_deref().unwrap_or("(detached HEAD)")
    );
    let instructions = repository_instructions(&workspace);
    let prompt = options.prompts.render(
        Template::Fix,
        &[
            ("task", options.task.trim()),
            ("context", &context),
            ("instructions", &instructions),
        ],
    )?;

    let ctx = ToolContext {
        workspace,
        sandbox: session.clone(),
        run_dir: run_dir.clone(),
        test_command: None,
        plan: Mutex::new(Plan::default()),
        reads: Default::default(),
        tests: Mutex::new(None),
        cancel: options.cancel.clone(),
    };
    let agent = Agent {
        model,
        tools: registry,
        system,
        config: agent_config,
        events,
        meter,
    };
    let outcome = agent
        .run(
            &ctx,
            Task {
                prompt,
                requires_change: true,
            },
            &options.cancel,
        )
        .await;
    // Nothing of the sandbox may run while git reads the working tree: a container that could not
    // be removed may still hold a process racing it, so nothing is committed then.
    let stopped = session.stop().await;
    if let Err(err) = &stopped {
        tracing::warn!(%err, "stopping the sandbox session failed");
    }

    // Listed before the commit, which may fail half-way through staging.
    let changed_files = repo.changed_files(start).unwrap_or_else(|error| {
        tracing::warn!(%error, "listing the changed files failed");
        Vec::new()
    });
    let (commit, error) = match &stopped {
        Err(err) => (
            workspace::CommitResult::default(),
            Some(format!(
                "the sandbox could not be stopped ({err}), so nothing was committed: a process in it could still \
                 be changing the working tree"
            )),
        ),
        Ok(()) => match repo.commit_all(
            &commit_message(&options.task, &outcome.summary),
            options.config.agent.max_new_file_bytes,
            &[],
            // Local runs commit as the repository's configured user, not as the bot.
            None,
        ) {
            Ok(commit) => (commit, None),
            Err(error) => {
                tracing::error!(%error, "committing the change failed");
                (
                    workspace::CommitResult::default(),
                    Some(format!("the commit failed: {error}")),
                )
            }
        },
    };
    // A nested repository left out is listed as such, not as an added file.
    let changed_files = changed_files
        .into_iter()
        .filter(|file| !commit.skipped_repositories.contains(&file.path))
        .collect();
    let tests = ctx.tests().map(|report| TestSummary {
        passed: report.passed,
        failed: report.failed,
        skipped: report.skipped,
        failures: report.failures.iter().map(|f| f.name.clone()).collect(),
    });
    Ok(RunReport {
        status: if error.is_some() {
            "commit_failed"
        } else {
            outcome.stop.label()
        },
        stop: outcome.stop,
        branch,
        commit: commit.commit,
        changed_files,
        skipped_files: commit.skipped_large,
        skipped_repositories: commit.skipped_repositories,
        error,
        tests,
        plan: outcome.plan,
        usage: outcome.usage.usage,
        cost_usd: outcome.usage.cost_usd,
        steps: outcome.steps,
        tool_calls: outcome.tool_calls,
        duration_ms: outcome.duration_ms,
        summary: outcome.summary,
        run_dir: run_dir.display().to_string(),
        sandbox: session.describe(),
    })
}

/// Where the Docker backend mounts the checkout.
const CONTAINER_WORKSPACE: &str = "/workspace";

/// Starts the configured sandbox for the job; returns it with the workspace as the tools see it.
async fn start_sandbox(
    config: &Config,
    job_id: &str,
    root: &std::path::Path,
    workspace: Workspace,
) -> Result<(Arc<dyn Session>, Workspace), RunError> {
    let sandbox = &config.sandbox;
    match sandbox.backend {
        SandboxBackend::Local => {
            let options = LocalOptions {
                user: crate::sandbox::local::SandboxUser::for_policy(sandbox.local_user),
                ..local_options()
            };
            Ok((Arc::new(LocalSession::start(root, options)?), workspace))
        }
        SandboxBackend::Docker => {
            let docker = DockerSandbox::connect().await?;
            let explicit = (config.origin("sandbox.image") != Origin::Default).then_some(sandbox.image.as_str());
            let (image, source) = image::resolve(&workspace, explicit, &sandbox.image);
            tracing::info!(%image, ?source, "starting the docker sandbox");
            let spec = DockerSpec {
                network: match sandbox.network {
                    SandboxNetwork::None => Network::None,
                    SandboxNetwork::Bridge => Network::Bridge,
                },
                memory_bytes: sandbox.memory_bytes,
                disk_bytes: sandbox.disk_bytes,
                cpus: sandbox.cpus,
                pids_limit: i64::from(sandbox.pids_limit),
                setup: sandbox.setup.clone(),
                setup_network: sandbox.setup_network,
                ..DockerSpec::new(job_id, image, root)
            };
            let session = docker.start(spec).await?;
            Ok((
                Arc::new(session),
                workspace.with_mount_point(std::path::Path::new(CONTAINER_WORKSPACE)),
            ))
        }
    }
}

/// The agent's limits from configuration.
pub fn agent_config(config: &Config) -> AgentConfig {
    AgentConfig {
        max_steps: config.agent.max_steps,
        max_cost_usd: config.agent.max_cost_usd,
        max_wall_time: Some(config.agent.max_wall_time),
        context_window: config.model.context_window,
        ..AgentConfig::default()
    }
}

/// Every tool of a code-changing run, the `task` sub-agent included.
pub fn registry(model: Arc<dyn Model>, config: &AgentConfig, meter: Arc<Meter>) -> Registry {
    let mut registry = Registry::new();
    for tool in tools::all_tools() {
        registry.add(tool);
    }
    let task = TaskTool::new(model, &registry, config, meter, (config.max_steps / 4).clamp(5, 25));
    registry.add(Arc::new(task));
    registry
}

/// The host toolchain for the local backend: `HOME` is a fresh directory per session, so rustup and
/// cargo are pointed at the user's own.
pub(crate) fn local_options() -> LocalOptions {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let from_env_or_home = |var: &str, dir: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(dir)).filter(|p| p.is_dir()))
    };
    LocalOptions {
        cargo_home: from_env_or_home("CARGO_HOME", ".cargo"),
        rustup_home: from_env_or_home("RUSTUP_HOME", ".rustup"),
        ..LocalOptions::default()
    }
}

/// The repository's instructions for agents, each file capped, all of them within one budget. Read
/// through the workspace's path rules: a hostile repository's `AGENTS.md` may be a symlink elsewhere.
pub fn repository_instructions(workspace: &Workspace) -> String {
    let mut out = String::new();
    for name in INSTRUCTION_FILES {
        let Ok(path) = workspace.resolve_read(name) else {
            continue;
        };
        let mut text = String::new();
        if workspace
            .open(&path)
            .and_then(|mut file| std::io::Read::read_to_string(&mut file, &mut text))
            .is_err()
        {
            continue;
        }
        let room = MAX_INSTRUCTIONS_CHARS.saturating_sub(out.len());
        if text.trim().is_empty() || room < 200 {
            continue;
        }
        let shown = crate::agent::context::cut(text.trim(), room - 100);
        out.push_str(&format!("## {name}\n\n{shown}\n"));
        if shown.len() < text.trim().len() {
            out.push_str(&format!(
                "\n[{name} is cut here: {} of {} characters shown]\n",
                shown.len(),
                text.len()
            ));
        }
        out.push('\n');
    }
    if out.is_empty() {
        "The repository has no instructions for agents (AGENTS.md, CLAUDE.md, .github/copilot-instructions.md).".into()
    } else {
        out.trim_end().to_owned()
    }
}

fn commit_message(task: &str, summary: &str) -> String {
    let first_line = task.lines().find(|l| !l.trim().is_empty()).unwrap_or("task").trim();
    let title = crate::agent::context::cut(first_line, 60);
    let ellipsis = if title.len() < first_line.len() { "…" } else { "" };
    let body = crate::agent::context::cut(summary.trim(), 4_000);
    if body.is_empty() {
        format!("pitcrew: {title}{ellipsis}")
    } else {
        format!("pitcrew: {title}{ellipsis}\n\n{body}")
    }
}

fn run_id() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{seconds}-{:04x}", fastrand::u16(..))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn repository_instructions_are_read_capped_and_never_through_a_symlink_out() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        assert!(repository_instructions(&workspace).starts_with("The repository has no instructions for agents"));

        std::fs::write(dir.path().join("AGENTS.md"), "Run `make check` before you finish.\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("CLAUDE.md")).unwrap();
        std::fs::create_dir(dir.path().join(".github")).unwrap();
        std::fs::write(dir.path().join(".github/copilot-instructions.md"), "x".repeat(40_000)).unwrap();
        let text = repository_instructions(&workspace);
        assert!(
            text.starts_with("## AGENTS.md\n\nRun `make check` before you finish."),
            "{text}"
        );
        assert!(!text.contains("root:"), "followed a symlink out of the workspace");
        assert!(text.contains("## .github/copilot-instructions.md"));
        assert!(
            text.contains("[.github/copilot-instructions.md is cut here:"),
            "{}",
            &text[text.len() - 200..]
        );
        assert!(text.len() <= MAX_INSTRUCTIONS_CHARS + 200, "{}", text.len());
    }

    #[test]
    fn commit_messages_are_titled_by_the_task_and_carry_the_report() {
        assert_eq!(
            commit_message("Fix the parser\nmore detail", "Fixed it."),
            "pitcrew: Fix the parser\n\nFixed it."
        );
        let long = "x".repeat(100);
        assert_eq!(commit_message(&long, ""), format!("pitcrew: {}…", "x".repeat(60)));
    }
}
