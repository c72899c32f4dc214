//! The agent's tools: the `Tool` trait every handler implements, the context handlers run in, the
//! registry the loop dispatches through, and argument parsing that turns bad input into a precise
//! message for the model.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::llm::ToolSpec;
use crate::sandbox::Session;
use crate::testparse::TestReport;

pub mod bash;
#[cfg(test)]
mod confinement_tests;
pub mod edit_file;
mod files;
pub mod glob;
pub mod grep;
pub mod list_dir;
pub mod path;
pub mod plan;
pub mod read_file;
pub mod reads;
pub mod review;
pub mod run_tests;
pub mod symbols;
pub mod write_file;

pub use bash::Bash;
pub use edit_file::EditFile;
pub use glob::Glob;
pub use grep::Grep;
pub use list_dir::ListDir;
pub use path::Workspace;
pub use plan::{Plan, PlanStep, StepStatus};
pub use read_file::ReadFile;
pub use reads::{Fingerprint, ReadTracker};
pub use review::{Recheck, RecheckFinding, ReviewComment, ReviewFinding};
pub use run_tests::RunTests;
pub use write_file::WriteFile;

/// A boxed future (`Send`), so tools can live behind `dyn Tool`.
pub use futures_util::future::BoxFuture;

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The usual case: the message goes back to the model as an error result and the run goes on.
    #[error("{0}")]
    Respond(String),
    /// The run cannot go on (the sandbox died, the workspace vanished).
    #[error("{0}")]
    Fatal(String),
}

impl ToolError {
    pub fn respond(message: impl Into<String>) -> Self {
        ToolError::Respond(message.into())
    }
}

/// A tool the model can call.
pub trait Tool: Send + Sync {
    fn name(&self) -> &'static str;
    /// Written for the model: what the tool does, when to use it, what it returns.
    fn description(&self) -> &'static str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;
    /// Read-only tools of one turn run concurrently; the others run one at a time, in order.
    fn read_only(&self) -> bool;
    /// The tool pages its own output (`read_file`): the loop never replaces it by a saved copy, which
    /// the model could only read back through the same tool.
    fn paginated(&self) -> bool {
        false
    }
    /// The tool runs commands in the sandbox (and touches the working copy only through them).
    /// Every other tool works on the working copy from the host, so the loop freezes the sandbox
    /// before calling it (`Session::quiesce`).
    fn runs_commands(&self) -> bool {
        false
    }
    /// Runs the call. `args` is the parsed arguments object (not yet checked against the schema:
    /// use [`parse_args`]).
    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>>;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters(),
        }
    }
}

/// Parses arguments into the tool's argument type; serde's message ("missing field `path`",
/// "unknown field `pth`, expected one of …", "invalid type: …") goes back to the model.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: Map<String, Value>) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|err| ToolError::Respond(format!("invalid arguments for `{tool}`: {err}")))
}

/// What one run's tools share.
pub struct ToolContext {
    pub workspace: Workspace,
    /// Where every command runs.
    pub sandbox: Arc<dyn Session>,
    /// This run's directory: persisted tool results, test logs, the trajectory.
    pub run_dir: PathBuf,
    /// The test command from configuration, used by `run_tests` before detection.
    pub test_command: Option<String>,
    /// The plan of `update_plan`, which the loop reports after each turn.
    pub plan: Mutex<Plan>,
    /// What `read_file` showed, so `edit_file` and `write_file` only change files the model has seen.
    pub reads: ReadTracker,
    /// The result of the latest `run_tests` call, for the run summary.
    pub tests: Mutex<Option<TestReport>>,
    /// The output of the latest `run_tests` call (stdout, then stderr), for a job that reads more
    /// of it than the report holds (the dependency chore's compile and import errors).
    pub test_output: Mutex<Option<String>>,
    pub cancel: CancellationToken,
    /// The working copy's code index (`find_symbol`, `find_references`, `outline`), when the
    /// session keeps one; the tools that change files tell it what changed.
    pub index: Option<Arc<crate::index::live::LiveIndex>>,
}

impl ToolContext {
    /// A tool wrote or removed the file at `path` (resolved, inside the workspace).
    pub fn file_changed(&self, path: &Path) {
        if let Some(index) = &self.index
            && let Ok(relative) = path.strip_prefix(self.workspace.root())
            && let Some(relative) = relative.to_str()
        {
            index.changed(relative);
        }
    }

    /// A command ran in the sandbox: it may have changed any file.
    pub fn commands_ran(&self) {
        if let Some(index) = &self.index {
            index.changed_anything();
        }
    }

    pub fn plan(&self) -> Plan {
        self.plan.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The result of the latest `run_tests` call.
    pub fn tests(&self) -> Option<TestReport> {
        self.tests.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The file tools: `read_file`, `write_file`, `edit_file`, `grep`, `glob` and `list_dir`.
pub fn file_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadFile),
        Arc::new(WriteFile),
        Arc::new(EditFile),
        Arc::new(Grep),
        Arc::new(Glob),
        Arc::new(ListDir),
    ]
}

/// Every tool of a code-changing run but the `task` sub-agent (which needs the model): the file
/// tools, `bash`, `run_tests` and `update_plan`.
pub fn all_tools() -> Vec<Arc<dyn Tool>> {
    let mut tools = file_tools();
    tools.push(Arc::new(Bash));
    tools.push(Arc::new(RunTests));
    tools.push(Arc::new(plan::UpdatePlan));
    tools
}

/// The code index's tools: `find_symbol`, `find_references` and `outline`, for a session that
/// keeps an index ([`ToolContext::index`]).
pub fn symbol_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(symbols::FindSymbol),
        Arc::new(symbols::FindReferences),
        Arc::new(symbols::Outline),
    ]
}

/// The tools of a run, by name.
#[derive(Clone, Default)]
pub struct Registry {
    tools: BTreeMap<&'static str, Arc<dyn Tool>>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with(mut self, tool: impl Tool + 'static) -> Self {
        self.add(Arc::new(tool));
        self
    }

    pub fn add(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.name(), tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// The specs, sorted by name: fixed for the run, so the prompt prefix stays cacheable.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|tool| tool.spec()).collect()
    }

    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.tools.keys().copied()
    }

    /// Only the read-only tools (for sub-agents).
    pub fn read_only(&self) -> Registry {
        Registry {
            tools: self
                .tools
                .iter()
                .filter(|(_, t)| t.read_only())
                .map(|(n, t)| (*n, t.clone()))
                .collect(),
        }
    }
}

/// What tool tests share: a `ToolContext` over a workspace with a sandbox that refuses to run
/// anything, workspaces holding given files, calls with JSON arguments, and the message of a refusal.
#[cfg(test)]
pub(crate) mod test_support {
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex};

    use serde_json::{Map, Value};
    use tempfile::TempDir;
    use tokio_util::sync::CancellationToken;

    use super::{ReadTracker, Tool, ToolContext, ToolError, Workspace};
    use crate::sandbox::{ExecOutput, ExecRequest, SandboxError, Session};
    use crate::tools::BoxFuture;

    /// A session whose every command fails: for tools that must not run commands.
    pub(crate) struct NoSandbox {
        root: PathBuf,
    }

    impl Session for NoSandbox {
        fn workspace(&self) -> &Path {
            &self.root
        }

        fn describe(&self) -> String {
            "none (tests)".to_owned()
        }

        fn exec<'a>(&'a self, request: ExecRequest) -> BoxFuture<'a, Result<ExecOutput, SandboxError>> {
            Box::pin(async move {
                Err(SandboxError::Spawn(format!(
                    "no sandbox in tests: `{}`",
                    request.command
                )))
            })
        }

        fn stop<'a>(&'a self) -> BoxFuture<'a, Result<(), SandboxError>> {
            Box::pin(async { Ok(()) })
        }
    }

    /// A context over the workspace at `root` (which must exist); the run directory is `root` too.
    pub(crate) fn context(root: &Path) -> ToolContext {
        #[expect(clippy::unwrap_used, reason = "tests")]
        let workspace = Workspace::new(root).unwrap();
        ToolContext {
            sandbox: Arc::new(NoSandbox {
                root: workspace.root().to_path_buf(),
            }),
            run_dir: workspace.root().to_path_buf(),
            workspace,
            test_command: None,
            plan: Mutex::default(),
            reads: ReadTracker::default(),
            tests: Mutex::default(),
            test_output: Mutex::default(),
            cancel: CancellationToken::new(),
            index: None,
        }
    }

    /// Calls `tool` with a JSON object of arguments.
    pub(crate) async fn call(tool: &dyn Tool, ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        let args = match args {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        tool.call(ctx, args).await
    }

    /// The message of a call that failed with a message for the model; anything else panics.
    pub(crate) fn message(result: Result<String, ToolError>) -> String {
        match result {
            Err(ToolError::Respond(message)) => message,
            other => panic!("expected an error for the model, got {other:?}"),
        }
    }

    /// A temporary workspace holding `files` (as [`write_files`] writes them), and a context over
    /// it. The workspace lasts as long as the `TempDir`.
    #[expect(clippy::unwrap_used, reason = "tests")]
    pub(crate) fn workspace_with(files: &[(&str, &str)]) -> (TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        write_files(dir.path(), files);
        let ctx = context(dir.path());
        (dir, ctx)
    }

    /// Writes each `(path, content)` below `root`, creating the directories on the way.
    #[expect(clippy::unwrap_used, reason = "tests")]
    pub(crate) fn write_files(root: &Path, files: &[(&str, &str)]) {
        for (path, content) in files {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, content).unwrap();
        }
    }
}
