//! Where commands run. Tools never spawn processes themselves: they hand a command to the job's
//! sandbox session, which owns the image, mounts, network, limits, timeouts and cleanup.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::future::BoxFuture;

pub mod docker;
pub mod host_paths;
pub mod local;
pub(crate) mod output;
pub mod owner;

/// Variables every command gets, in every backend, besides `HOME` and `PATH`: a non-interactive,
/// pager-free CI environment. Nothing of the host's environment is passed on, and nothing that
/// changes a project's behaviour beyond what the sandbox needs: no `NO_COLOR`, no `TERM=dumb`
/// (colour-sensitive tests would fail only here); without a terminal, tools print no colour anyway,
/// and what there is is stripped on pitcrew's side (the test parsers, the `bash` tool's output).
pub const COMMAND_ENV: &[(&str, &str)] = &[
    ("LANG", "C.UTF-8"),
    ("CI", "true"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

/// A command to run in the workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecRequest {
    /// Run with `sh -c`.
    pub command: String,
    /// The whole process group is killed when this runs out.
    pub timeout: Duration,
    /// Extra environment variables, on top of the sandbox's allow-list.
    pub env: Vec<(String, String)>,
    /// Working directory relative to the workspace root; the root when `None`.
    pub cwd: Option<PathBuf>,
    /// Bytes kept of each of stdout and stderr: the head and the tail, half each; the middle is
    /// dropped and counted.
    pub output_limit: usize,
}

impl ExecRequest {
    pub fn new(command: impl Into<String>, timeout: Duration) -> Self {
        ExecRequest {
            command: command.into(),
            timeout,
            env: Vec::new(),
            cwd: None,
            output_limit: 64 * 1024,
        }
    }
}

/// What a command did.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecOutput {
    /// `None` when it was killed (timeout, signal).
    pub exit_code: Option<i32>,
    /// Lossy UTF-8; when truncated, head and tail around a marker saying how much was dropped.
    pub stdout: String,
    pub stderr: String,
    /// The full sizes of what the command wrote.
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub truncated: bool,
    pub timed_out: bool,
    /// The kernel killed a process of the command for exceeding the sandbox's memory limit.
    pub oom_killed: bool,
    pub duration: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    #[error("could not start the command: {0}")]
    Spawn(String),
    #[error("the sandbox failed: {0}")]
    Backend(String),
    #[error("the sandbox has been stopped")]
    Stopped,
}

/// A running sandbox for one job.
pub trait Session: Send + Sync {
    /// The workspace on the host.
    fn workspace(&self) -> &Path;
    /// A short name for logs and the run summary (`local (unsandboxed)`, `docker <image>`).
    fn describe(&self) -> String;
    fn exec<'a>(&'a self, request: ExecRequest) -> BoxFuture<'a, Result<ExecOutput, SandboxError>>;
    /// Ends the session and everything still running in it.
    fn stop<'a>(&'a self) -> BoxFuture<'a, Result<(), SandboxError>>;
    /// Keeps everything in the sandbox from running until the next `exec`: the host is about to
    /// touch the working copy, and a process a command left behind (one the sweep could not see,
    /// or that the command hid from it) must not race it. Backends that cannot freeze their
    /// processes (the local one) do nothing.
    fn quiesce<'a>(&'a self) -> BoxFuture<'a, Result<(), SandboxError>> {
        Box::pin(async { Ok(()) })
    }
}
