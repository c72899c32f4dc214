//! One agent session, assembled the same way for every entry point (`pitcrew run`, the server's
//! and the Action's jobs): the configured sandbox backend over the working copy, in the image the
//! configuration and the repository choose; the tool context as the tools see the checkout; the
//! tool registry; the system prompt; and the agent, with the repository's budgets.
//!
//! It sits above `sandbox/`, `tools/`, `agent/` and `config/`, and below the entry points, which
//! only say what differs between them in one [`AgentRun`].

pub mod image;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::agent::events::{EventSink, Fanout, TrajectoryLog};
use crate::agent::subagent::TaskTool;
use crate::agent::{Agent, AgentConfig, Meter, Outcome, Task};
use crate::config::repo::EffectiveSettings;
use crate::config::{Config, SandboxBackend, SandboxNetwork};
use crate::index::cache::BlobCache;
use crate::index::live::LiveIndex;
use crate::index::shelf::IndexShelf;
use crate::llm::{self, Model, ModelSettings, PriceTable};
use crate::prompts::{PromptError, Prompts, Template};
use crate::sandbox::docker::{self, DockerSandbox, DockerSpec, Network};
use crate::sandbox::local::{LocalOptions, LocalSession, SandboxUser};
use crate::sandbox::{ExecRequest, SandboxError, Session};
use crate::tools::run_tests::RunTests;
use crate::tools::{self, Plan, Registry, Tool, ToolContext, Workspace};

/// Repository instructions are capped: they share the context with the work.
const MAX_INSTRUCTIONS_CHARS: usize = 16_000;
/// Files whose content is added to the task as the repository's own instructions for agents.
pub const INSTRUCTION_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md"];

/// What one agent session runs with, whoever starts it.
pub struct AgentRun<'a> {
    /// The operator's configuration: the sandbox backend and its limits, the model's provider and
    /// server, the prices.
    pub config: &'a Config,
    /// What this repository's runs get ([`crate::config::repo::RepoConfig::apply`]): the model,
    /// budgets, image, setup script and test command.
    pub settings: &'a EffectiveSettings,
    pub prompts: &'a Prompts,
    /// Replaces the configured model (tests hand in a scripted one).
    pub model: Option<Arc<dyn Model>>,
    /// Names the sandbox on the engine: letters, digits, `_`, `.`, `-`.
    pub sandbox_id: String,
    /// The working copy.
    pub root: PathBuf,
    /// Receives the trajectory, test logs and large tool outputs; created if missing.
    pub run_dir: PathBuf,
    /// Commands that need the network, run once before anything else.
    pub network_step: Option<NetworkStep>,
    /// The code index the session's tools get; `None` for a session that runs no agent tools that
    /// look for symbols (the tests of the base, a chore's lockfile refresh) or when the operator
    /// turned it off.
    pub index: Option<CodeIndex>,
    pub cancel: CancellationToken,
}

/// Where a session's code index starts from and where what it learns goes.
#[derive(Debug, Clone)]
pub struct CodeIndex {
    /// The parse cache of the repository (by blob id), kept under `cache_bytes`; `None` keeps
    /// parse results for the session only.
    pub cache_dir: Option<PathBuf>,
    pub cache_bytes: u64,
    /// The server's shelf of finished sessions' indexes, and the repository's name on it: the
    /// session starts from the repository's last index and shelves its own when it stops.
    pub shelf: Option<(IndexShelf, String)>,
}

impl CodeIndex {
    /// The index of a job of the server on `repo` (`owner/name`), as `config` says: its cache under
    /// the data directory, and the server's `shelf`.
    pub fn for_server(config: &Config, repo: &str, shelf: &IndexShelf) -> Option<CodeIndex> {
        config.agent.code_index.then(|| CodeIndex {
            cache_dir: Some(config.server.data_dir.join("index-cache").join(repo)),
            cache_bytes: config.agent.index_cache_bytes,
            shelf: Some((shelf.clone(), repo.to_owned())),
        })
    }

    /// The index of a local run in the repository whose git directory is `git_dir`: its cache
    /// under `.git/pitcrew/`.
    pub fn for_checkout(config: &Config, git_dir: &Path) -> Option<CodeIndex> {
        config.agent.code_index.then(|| CodeIndex {
            cache_dir: Some(git_dir.join("pitcrew").join("index-cache")),
            cache_bytes: config.agent.index_cache_bytes,
            shelf: None,
        })
    }

    /// Starts building the index of `root` in the background.
    fn start(&self, root: &Path) -> Arc<LiveIndex> {
        let cache = self.cache_dir.as_ref().and_then(|dir| match BlobCache::open(dir, self.cache_bytes) {
            Ok(cache) => Some(cache),
            Err(error) => {
                tracing::warn!(dir = %dir.display(), %error, "the index's cache cannot be opened; parsing every file");
                None
            }
        });
        let seed = self.shelf.as_ref().and_then(|(shelf, repo)| shelf.take(repo, root));
        LiveIndex::start(root, cache, seed)
    }
}

/// Commands run once when the session starts, the only ones that may get the network (a chore's
/// lockfile refresh). In a container they end its setup script, which runs with the network when
/// `network` is set (or the settings' setup has it) and is then cut off; the local backend, which
/// has the host's network anyway, runs them as commands.
#[derive(Debug, Clone)]
pub struct NetworkStep {
    /// `(directory relative to the root, empty for the root; command)`, in order.
    pub commands: Vec<(String, String)>,
    pub network: bool,
    /// How long each command may take where it runs as a command of its own (the local backend);
    /// in a container, the setup script's limit holds.
    pub timeout: Duration,
}

/// Why a session could not start or its agent could not run.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("could not set up the run directory {}: {source}", path.display())]
    RunDir { path: PathBuf, source: std::io::Error },
    #[error("could not open the working copy {}: {source}", path.display())]
    WorkingCopy { path: PathBuf, source: std::io::Error },
    #[error("could not write the trajectory {}: {source}", path.display())]
    Trajectory { path: PathBuf, source: std::io::Error },
    #[error("could not start the sandbox: {0}")]
    Sandbox(#[from] SandboxError),
    /// A command of the [`NetworkStep`] failed.
    #[error("`{command}` failed (exit {exit_code:?}):\n{stderr_tail}")]
    NetworkStep {
        command: String,
        exit_code: Option<i32>,
        /// The last lines it wrote to stderr.
        stderr_tail: String,
    },
    #[error("could not create the model client: {0}")]
    Model(#[from] llm::LlmError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
}

/// The tools an agent run gets.
pub enum Toolset {
    /// Every tool, the `task` sub-agent included; the run is expected to change the working copy.
    Full,
    /// The read-only tools and the test runner, plus the job's own tools (a review's
    /// `review_comment`), which are always offered; the run is not expected to change anything.
    ReadOnly(Vec<Arc<dyn Tool>>),
}

/// A started session: the sandbox over the working copy and what its agent runs need.
pub struct AgentSession {
    /// The tools' view of the run: the workspace, the sandbox, the plan, the last test report.
    pub ctx: ToolContext,
    session: Arc<dyn Session>,
    /// The checkout as commands see it, for the system prompt.
    shown_root: String,
    prompts: Prompts,
    model: Option<Arc<dyn Model>>,
    /// The client connected for `model_settings` by the first run, when no model was handed in.
    connected: Mutex<Option<Arc<dyn Model>>>,
    model_settings: ModelSettings,
    limits: AgentConfig,
    prices: PriceTable,
    /// Where the index goes when the session stops, and the working copy it indexes.
    shelf: Option<(IndexShelf, String)>,
    root: PathBuf,
}

impl AgentSession {
    /// Starts the configured sandbox over `run.root` (a container of the settings' image, or else of
    /// the checkout's dev container: [`image::resolve`]) and runs `run.network_step` in it.
    pub async fn start(run: AgentRun<'_>) -> Result<AgentSession, SessionError> {
        let AgentRun {
            config,
            settings,
            prompts,
            model,
            sandbox_id,
            root,
            run_dir,
            network_step,
            index,
            cancel,
        } = run;
        std::fs::create_dir_all(&run_dir).map_err(|source| SessionError::RunDir {
            path: run_dir.clone(),
            source,
        })?;
        let workspace = Workspace::new(&root)
            .and_then(|w| w.with_read_root(&run_dir))
            .map_err(|source| SessionError::WorkingCopy {
                path: root.clone(),
                source,
            })?;
        let (session, workspace, shown_root) = match config.sandbox.backend {
            SandboxBackend::Local => {
                let options = LocalOptions {
                    user: SandboxUser::for_policy(config.sandbox.local_user),
                    ..local_options()
                };
                let session: Arc<dyn Session> = Arc::new(LocalSession::start(&root, options)?);
                if let Some(step) = &network_step
                    && let Err(error) = run_commands(session.as_ref(), step).await
                {
                    if let Err(stop) = session.stop().await {
                        tracing::warn!(error = %stop, "stopping the sandbox failed");
                    }
                    return Err(error);
                }
                (session, workspace, root.display().to_string())
            }
            SandboxBackend::Docker => {
                let docker = DockerSandbox::connect_configured(config.sandbox.docker_host.as_deref()).await?;
                let (image, source) = image::resolve(&workspace, settings);
                let sandbox = &config.sandbox;
                let (setup, setup_network) = match network_step.as_ref().map(script) {
                    Some(step) if !step.is_empty() => (
                        Some(match &settings.setup {
                            Some(setup) => format!("{setup}\n{step}"),
                            None => step,
                        }),
                        settings.setup_network || network_step.as_ref().is_some_and(|s| s.network),
                    ),
                    _ => (settings.setup.clone(), settings.setup_network),
                };
                let spec = DockerSpec {
                    network: match sandbox.network {
                        SandboxNetwork::None => Network::None,
                        SandboxNetwork::Bridge => Network::Bridge,
                    },
                    memory_bytes: sandbox.memory_bytes,
                    disk_bytes: sandbox.disk_bytes,
                    cpus: sandbox.cpus,
                    pids_limit: i64::from(sandbox.pids_limit),
                    setup,
                    setup_network,
                    ..DockerSpec::new(sandbox_id.as_str(), image.as_str(), &root)
                };
                tracing::info!(%image, ?source, sandbox = %sandbox_id, "starting the docker sandbox");
                let session: Arc<dyn Session> = Arc::new(docker.start(spec).await?);
                (
                    session,
                    workspace.with_mount_point(Path::new(docker::WORKDIR)),
                    docker::WORKDIR.to_owned(),
                )
            }
        };
        // The index builds while the sandbox starts and the run gets its prompt ready.
        let live = index.as_ref().map(|index| index.start(&root));
        let mut model_settings = config.model.settings();
        model_settings.model = settings.model_name.clone();
        Ok(AgentSession {
            ctx: ToolContext {
                workspace,
                sandbox: session.clone(),
                run_dir,
                test_command: settings.test_command.clone(),
                plan: Mutex::new(Plan::default()),
                reads: Default::default(),
                tests: Mutex::new(None),
                test_output: Mutex::new(None),
                cancel,
                index: live,
            },
            session,
            shown_root,
            prompts: prompts.clone(),
            model,
            connected: Mutex::new(None),
            model_settings,
            limits: AgentConfig {
                max_steps: settings.max_steps,
                max_cost_usd: settings.max_cost_usd,
                max_wall_time: Some(settings.max_wall_time),
                context_window: config.model.context_window,
                // The loop's own notes come from the same (possibly overridden) prompts as the rest.
                prompts: prompts.clone(),
                ..AgentConfig::default()
            },
            prices: config.price_table(),
            shelf: index.and_then(|index| index.shelf),
            root,
        })
    }

    /// The model: the one handed in, else a client connected on the first run and kept for the
    /// next (a review in chunks runs the agent several times: one client, one connection pool).
    fn model(&self) -> Result<Arc<dyn Model>, SessionError> {
        if let Some(model) = &self.model {
            return Ok(model.clone());
        }
        let mut connected = self.connected.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(model) = connected.as_ref() {
            return Ok(model.clone());
        }
        let model = llm::connect(self.model_settings.clone())?;
        *connected = Some(model.clone());
        Ok(model)
    }

    /// Narrows the budgets of the next agent runs: a job that runs the agent several times (a
    /// review in chunks) shares its own budgets among them.
    pub fn set_budget(&mut self, max_steps: u32, max_cost_usd: Option<f64>, max_wall_time: Duration) {
        self.limits.max_steps = max_steps.max(1);
        self.limits.max_cost_usd = max_cost_usd;
        self.limits.max_wall_time = Some(max_wall_time);
    }

    /// Runs the agent on `prompt` with `tools` under the run's budgets; `events` get every event,
    /// and so does the trajectory in the run directory.
    pub async fn run_agent(
        &self,
        prompt: String,
        tools: Toolset,
        events: Arc<dyn EventSink>,
    ) -> Result<Outcome, SessionError> {
        let model = self.model()?;
        let meter = Meter::new(self.prices.clone());
        let mut registry = registry(model.clone(), &self.limits, meter.clone(), self.ctx.index.is_some());
        let requires_change = matches!(tools, Toolset::Full);
        if let Toolset::ReadOnly(extra) = tools {
            registry = registry.read_only();
            registry.add(Arc::new(RunTests));
            for tool in extra {
                registry.add(tool);
            }
        }
        let path = self.ctx.run_dir.join("trajectory.jsonl");
        let trajectory = TrajectoryLog::create(&path).map_err(|source| SessionError::Trajectory { path, source })?;
        let events: Arc<dyn EventSink> = Arc::new(Fanout(vec![Box::new(trajectory), Box::new(events)]));
        let system = self
            .prompts
            .render(Template::System, &[("workspace", &self.shown_root)])?;
        let agent = Agent {
            model,
            tools: registry,
            system,
            config: self.limits.clone(),
            events,
            meter,
        };
        let cancel = self.ctx.cancel.clone();
        Ok(agent
            .run(
                &self.ctx,
                Task {
                    prompt,
                    requires_change,
                },
                &cancel,
            )
            .await)
    }

    /// The working copy's root as commands see it (the host path, or the container's mount point).
    pub fn shown_root(&self) -> &str {
        &self.shown_root
    }

    /// The repository's own instructions for agents (AGENTS.md …), capped.
    pub fn instructions(&self) -> String {
        repository_instructions(&self.ctx.workspace)
    }

    /// Where commands run, for the run summary (`local (unsandboxed)`, `docker <image>`).
    pub fn describe(&self) -> String {
        self.session.describe()
    }

    /// Ends the sandbox; an error means it may still hold running processes (logged here).
    pub async fn stop(&self) -> Result<(), SandboxError> {
        if let Some(live) = &self.ctx.index {
            let (parsed, cached) = live.work();
            let ready_ms = live.ready_after().map(|d| d.as_millis());
            tracing::debug!(parsed, cached, ?ready_ms, "the code index's work");
        }
        if let Some(index) = &self.ctx.index
            && let Some(index) = index.close()
            && let Some((shelf, repo)) = &self.shelf
        {
            shelf.put(repo, &self.root, index);
        }
        let stopped = self.session.stop().await;
        if let Err(error) = &stopped {
            tracing::warn!(%error, "stopping the sandbox failed");
        }
        stopped
    }
}

/// The step's commands as one script, each in its directory.
fn script(step: &NetworkStep) -> String {
    step.commands
        .iter()
        .map(|(dir, command)| {
            let dir = if dir.is_empty() { "." } else { dir.as_str() };
            format!("(cd {} && {command})", crate::shell::quote(dir))
        })
        .collect::<Vec<_>>()
        .join(" && ")
}

/// Runs the step's commands one by one, stopping at the first that fails.
async fn run_commands(session: &dyn Session, step: &NetworkStep) -> Result<(), SessionError> {
    for (dir, command) in &step.commands {
        let mut request = ExecRequest::new(command.clone(), step.timeout);
        request.cwd = (!dir.is_empty()).then(|| PathBuf::from(dir));
        let output = session.exec(request).await?;
        if output.exit_code != Some(0) {
            let lines: Vec<&str> = output.stderr.lines().collect();
            return Err(SessionError::NetworkStep {
                command: command.clone(),
                exit_code: output.exit_code,
                stderr_tail: lines[lines.len().saturating_sub(15)..].join("\n"),
            });
        }
    }
    Ok(())
}

/// Every tool of a code-changing run, the `task` sub-agent included.
pub fn registry(model: Arc<dyn Model>, config: &AgentConfig, meter: Arc<Meter>, index: bool) -> Registry {
    let mut registry = Registry::new();
    for tool in tools::all_tools() {
        registry.add(tool);
    }
    if index {
        for tool in tools::symbol_tools() {
            registry.add(tool);
        }
    }
    let task = TaskTool::new(model, &registry, config, meter, (config.max_steps / 4).clamp(5, 25));
    registry.add(Arc::new(task));
    registry
}

/// The host toolchain for the local backend: `HOME` is a fresh directory per session, so rustup and
/// cargo are pointed at the user's own.
fn local_options() -> LocalOptions {
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
    format_instructions(INSTRUCTION_FILES.iter().filter_map(|name| {
        let path = workspace.resolve_read(name).ok()?;
        let mut text = String::new();
        workspace
            .open(&path)
            .and_then(|mut file| std::io::Read::read_to_string(&mut file, &mut text))
            .ok()?;
        Some((*name, text))
    }))
}

/// Instruction files (name, text), in [`INSTRUCTION_FILES`] order, as the prompt shows them: each
/// capped, all within one budget, or a line saying there are none.
pub fn format_instructions<'a>(files: impl Iterator<Item = (&'a str, String)>) -> String {
    let mut out = String::new();
    for (name, text) in files {
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
    fn a_network_step_is_one_script_each_command_in_its_directory() {
        let step = NetworkStep {
            commands: vec![
                (String::new(), "cargo update".to_owned()),
                ("web's app".to_owned(), "npm install".to_owned()),
            ],
            network: true,
            timeout: Duration::from_secs(60),
        };
        assert_eq!(
            script(&step),
            "(cd '.' && cargo update) && (cd 'web'\\''s app' && npm install)"
        );
    }

    #[tokio::test]
    async fn on_the_local_backend_a_failing_network_step_fails_the_start_with_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let session = LocalSession::start(dir.path(), LocalOptions::default()).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let step = NetworkStep {
            commands: vec![
                ("sub".to_owned(), "touch made-here".to_owned()),
                (
                    String::new(),
                    "for i in $(seq 1 20); do echo line$i >&2; done; exit 3".to_owned(),
                ),
                (String::new(), "touch never".to_owned()),
            ],
            network: false,
            timeout: Duration::from_secs(60),
        };
        let error = run_commands(&session, &step).await.unwrap_err();
        session.stop().await.unwrap();
        assert!(dir.path().join("sub/made-here").exists());
        assert!(!dir.path().join("never").exists());
        let SessionError::NetworkStep {
            exit_code, stderr_tail, ..
        } = error
        else {
            panic!("{error}");
        };
        assert_eq!(exit_code, Some(3));
        assert_eq!(stderr_tail.lines().count(), 15, "{stderr_tail}");
        assert!(
            stderr_tail.starts_with("line6\n") && stderr_tail.ends_with("line20"),
            "{stderr_tail}"
        );
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod index_tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::config::LoadOptions;
    use crate::tools::symbols::FindSymbol;

    fn config() -> Config {
        let overrides = [
            "model.base_url=http://127.0.0.1:9/v1",
            "model.name=m",
            "sandbox.backend=local",
            "sandbox.local_user=self",
        ]
        .map(str::to_owned);
        Config::load(LoadOptions {
            config_path: None,
            env: &BTreeMap::new(),
            overrides: &overrides,
        })
        .unwrap()
    }

    async fn find(session: &AgentSession, query: &str) -> String {
        let args = json!({ "query": query }).as_object().unwrap().clone();
        FindSymbol.call(&session.ctx, args).await.unwrap()
    }

    #[tokio::test]
    async fn a_session_starts_from_the_last_index_of_its_repository_and_shelves_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("checkout");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "pub fn shelved() {}\n").unwrap();
        let config = config();
        let settings = crate::config::repo::RepoConfig::default().apply(&config);
        let prompts = Prompts::embedded();
        let shelf = IndexShelf::new(1 << 30);
        let start = |n: u32| {
            AgentSession::start(AgentRun {
                config: &config,
                settings: &settings,
                prompts: &prompts,
                model: None,
                sandbox_id: format!("index-{n}"),
                root: root.clone(),
                run_dir: dir.path().join(format!("run-{n}")),
                network_step: None,
                index: Some(CodeIndex {
                    cache_dir: Some(dir.path().join("cache")),
                    cache_bytes: 1 << 20,
                    shelf: Some((shelf.clone(), "o/r".to_owned())),
                }),
                cancel: CancellationToken::new(),
            })
        };

        let first = start(1).await.unwrap();
        assert!(
            find(&first, "shelved")
                .await
                .contains("src/lib.rs:1-1  function shelved")
        );
        first.stop().await.unwrap();
        assert_eq!(shelf.len(), 1, "the finished session's index is kept");

        // The next session takes it (and sees what changed since).
        std::fs::write(root.join("src/more.rs"), "pub fn added() {}\n").unwrap();
        let second = start(2).await.unwrap();
        assert!(shelf.is_empty(), "taken by the next session");
        assert!(find(&second, "added").await.contains("src/more.rs:1-1  function added"));
        assert!(
            find(&second, "shelved")
                .await
                .contains("src/lib.rs:1-1  function shelved")
        );
        let (parsed, cached) = second.ctx.index.as_ref().unwrap().work();
        assert_eq!((parsed, cached), (1, 0), "only the new file is read");
        second.stop().await.unwrap();
        assert_eq!(shelf.len(), 1);

        // Turned off by the operator, there is none.
        let mut off = config.clone();
        off.agent.code_index = false;
        assert!(CodeIndex::for_server(&off, "o/r", &shelf).is_none());
        assert!(CodeIndex::for_checkout(&off, &dir.path().join(".git")).is_none());
        let on = CodeIndex::for_server(&config, "o/r", &shelf).unwrap();
        assert_eq!(on.cache_dir.unwrap(), config.server.data_dir.join("index-cache/o/r"));
    }
}
