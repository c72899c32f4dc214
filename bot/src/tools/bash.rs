//! The `bash` tool: one shell command in the job's sandbox, reported as exit code, duration and the
//! head and tail of each output stream.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{BoxFuture, Tool, ToolContext, ToolError, parse_args};
use crate::sandbox::{ExecOutput, ExecRequest, SandboxError};

/// Seconds a command may run when the model gives no timeout.
pub const DEFAULT_TIMEOUT_SECS: f64 = 120.0;
/// The most the model may ask for.
pub const MAX_TIMEOUT_SECS: f64 = 600.0;
/// Bytes kept of each stream (head and tail); the agent loop applies its own, larger budget.
pub const OUTPUT_LIMIT: usize = 32 * 1024;

/// `bash`: runs a command with `sh -c` in the repository root.
pub struct Bash;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    #[serde(default)]
    timeout: Option<f64>,
}

impl Tool for Bash {
    fn name(&self) -> &'static str {
        "bash"
    }

    fn description(&self) -> &'static str {
        "Run a shell command (POSIX sh) in the repository root, inside this job's sandbox: no network unless the \
         maintainers configured it, no secrets in the environment. The working directory and exported variables \
         may persist between calls, but do not rely on it: prefer `cd dir && command`. Non-interactive: stdin is closed, so never run \
         anything that prompts or opens an editor or pager. Use it to build, run tests, and inspect git (read-only: \
         git status, diff, log, show; do not commit, push or change branches). To find or read files, prefer the \
         grep, glob and read_file tools. Returns the exit code, the duration and stdout and stderr; each stream is \
         capped at 32 KiB, keeping its head and tail, so pipe long output through grep, head or tail yourself. \
         Commands are killed, with everything they started, after `timeout` seconds (default 120, max 600): give \
         slow builds and test suites a larger timeout, and never start servers or watchers that do not exit."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command, run with sh -c in the repository root."},
                "timeout": {
                    "type": "number",
                    "description": "Seconds before the command is killed. Default 120, max 600."
                }
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn runs_commands(&self) -> bool {
        true
    }

    fn read_only(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let Args { command, timeout } = parse_args(self.name(), args)?;
            if command.trim().is_empty() {
                return Err(ToolError::respond("`command` is empty"));
            }
            let timeout = timeout_of(timeout)?;
            let mut request = ExecRequest::new(command, timeout);
            request.output_limit = OUTPUT_LIMIT;
            // Dropping the exec future kills the command's process group.
            let output = tokio::select! {
                output = ctx.sandbox.exec(request) => output,
                () = ctx.cancel.cancelled() => return Err(ToolError::respond("cancelled: the run is stopping")),
            };
            ctx.commands_ran();
            match output {
                Ok(output) => Ok(render(&output, timeout)),
                Err(err @ SandboxError::Spawn(_)) => Err(ToolError::respond(err.to_string())),
                Err(err @ (SandboxError::Backend(_) | SandboxError::Stopped)) => Err(ToolError::Fatal(err.to_string())),
            }
        })
    }
}

fn timeout_of(seconds: Option<f64>) -> Result<Duration, ToolError> {
    let seconds = seconds.unwrap_or(DEFAULT_TIMEOUT_SECS);
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(ToolError::respond(format!(
            "`timeout` must be a positive number of seconds, not {seconds}"
        )));
    }
    if seconds > MAX_TIMEOUT_SECS {
        return Err(ToolError::respond(format!(
            "`timeout` is at most {MAX_TIMEOUT_SECS} seconds; split the work or run a narrower command"
        )));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// `exit code: 1 (0.4 s)`, then the non-empty streams under labels.
fn render(output: &ExecOutput, timeout: Duration) -> String {
    let took = output.duration.as_secs_f64();
    let mut text = match (output.timed_out, output.exit_code) {
        (true, _) => format!("timed out after {} s; killed ({took:.1} s)", seconds(timeout)),
        (false, Some(code)) => format!("exit code: {code} ({took:.1} s)"),
        (false, None) => format!("killed by a signal ({took:.1} s)"),
    };
    if output.oom_killed {
        text.push_str("\nkilled: out of memory (the sandbox's memory limit)");
    }
    let streams = [
        ("stdout", &output.stdout, output.stdout_bytes),
        ("stderr", &output.stderr, output.stderr_bytes),
    ];
    for (name, body, bytes) in streams {
        if bytes == 0 {
            continue;
        }
        if bytes <= OUTPUT_LIMIT as u64 {
            let _ = write!(text, "\n--- {name} ---\n");
        } else {
            // Head and tail only: say how much the command really wrote.
            let _ = write!(
                text,
                "\n--- {name} ({} bytes) ---\n",
                crate::sandbox::output::group_digits(bytes)
            );
        }
        // Colour and cursor codes mean nothing to the model (the sandbox does not forbid colour).
        let clean = crate::testparse::strip_ansi(body);
        text.push_str(clean.strip_suffix('\n').unwrap_or(&clean));
    }
    if output.stdout_bytes == 0 && output.stderr_bytes == 0 {
        text.push_str("\n(no output)");
    }
    text
}

/// `120`, `1.5`.
fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0}")
    } else {
        format!("{secs}")
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::sandbox::local::{LocalOptions, LocalSession};
    use crate::tools::test_support;

    /// A tool context whose sandbox really runs commands, locally.
    fn context() -> (tempfile::TempDir, ToolContext) {
        let (dir, mut ctx) = test_support::workspace_with(&[]);
        ctx.sandbox = Arc::new(LocalSession::start(dir.path(), LocalOptions::default()).unwrap());
        (dir, ctx)
    }

    async fn bash(ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        test_support::call(&Bash, ctx, args).await
    }

    /// The first line without its duration, which varies.
    fn status_line(text: &str) -> &str {
        let line = text.lines().next().unwrap();
        line.rsplit_once(" (").unwrap().0
    }

    fn body(text: &str) -> &str {
        text.split_once('\n').map_or("", |(_, rest)| rest)
    }

    #[tokio::test]
    async fn reports_exit_code_and_labelled_streams() {
        let (_dir, ctx) = context();
        let out = bash(&ctx, json!({"command": "echo out; echo err >&2; exit 1"}))
            .await
            .unwrap();
        assert_eq!(status_line(&out), "exit code: 1");
        assert_eq!(body(&out), "--- stdout ---\nout\n--- stderr ---\nerr");
        let out = bash(&ctx, json!({"command": "echo only >&2"})).await.unwrap();
        assert_eq!(body(&out), "--- stderr ---\nonly");
        // Colour is the command's own business; the model gets the text.
        let out = bash(&ctx, json!({"command": "printf '\\033[1;31mred\\033[0m\\n'"}))
            .await
            .unwrap();
        assert_eq!(body(&out), "--- stdout ---\nred");
        let out = bash(&ctx, json!({"command": "true"})).await.unwrap();
        assert_eq!(status_line(&out), "exit code: 0");
        assert_eq!(body(&out), "(no output)");
        assert!(out.ends_with("(no output)") && out.contains(" s)\n"));
    }

    #[tokio::test]
    async fn runs_in_the_repository_root_without_host_secrets() {
        let (dir, ctx) = context();
        let out = bash(&ctx, json!({"command": "pwd; echo \"[$CARGO_MANIFEST_DIR][$HOME]\""}))
            .await
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = std::env::var("HOME").unwrap_or_default();
        assert!(
            out.contains(&format!("--- stdout ---\n{}\n[][", root.display())),
            "{out}"
        );
        assert!(home.is_empty() || !out.contains(&format!("[{home}]")));
    }

    #[tokio::test]
    async fn timeouts_are_checked_and_enforced() {
        let (dir, ctx) = context();
        let err = bash(&ctx, json!({"command": "true", "timeout": 601}))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            ToolError::respond("`timeout` is at most 600 seconds; split the work or run a narrower command")
        );
        assert!(bash(&ctx, json!({"command": "true", "timeout": 0})).await.is_err());
        assert!(bash(&ctx, json!({"command": " "})).await.is_err());
        let err = bash(&ctx, json!({"cmd": "true"})).await.unwrap_err();
        assert!(err.to_string().contains("unknown field `cmd`"), "{err}");

        let out = bash(
            &ctx,
            json!({"command": "echo started; sleep 100 & echo $! > pid; sleep 100", "timeout": 1}),
        )
        .await
        .unwrap();
        assert_eq!(status_line(&out), "timed out after 1 s; killed");
        assert_eq!(body(&out), "--- stdout ---\nstarted");
        let pid = std::fs::read_to_string(dir.path().join("pid")).unwrap();
        let gone = (0..50).any(|_| {
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
            let dead = stat
                .rsplit_once(')')
                .is_none_or(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']));
            if !dead {
                std::thread::sleep(Duration::from_millis(20));
            }
            dead
        });
        assert!(gone, "the background sleep survived the timeout");
    }

    #[test]
    fn an_out_of_memory_kill_is_said() {
        let output = ExecOutput {
            exit_code: Some(137),
            stdout: String::new(),
            stderr: "Killed\n".to_owned(),
            stdout_bytes: 0,
            stderr_bytes: 7,
            truncated: false,
            timed_out: false,
            oom_killed: true,
            duration: Duration::from_millis(400),
        };
        assert_eq!(
            render(&output, Duration::from_secs(120)),
            "exit code: 137 (0.4 s)\nkilled: out of memory (the sandbox's memory limit)\n--- stderr ---\nKilled"
        );
    }

    #[tokio::test]
    async fn long_output_is_capped_with_the_full_count() {
        let (_dir, ctx) = context();
        let out = bash(
            &ctx,
            json!({"command": "head -c 50000000 /dev/zero | tr '\\0' a; echo; echo end"}),
        )
        .await
        .unwrap();
        assert_eq!(status_line(&out), "exit code: 0");
        assert!(out.contains("--- stdout (50,000,005 bytes) ---\n"), "{}", &out[..200]);
        assert!(out.contains("[… 49,967,237 bytes omitted …]\n"));
        assert!(out.ends_with("\nend"));
        assert!(out.len() < OUTPUT_LIMIT + 200);
    }

    #[tokio::test]
    async fn cancellation_kills_the_command() {
        let (dir, ctx) = context();
        let ctx = Arc::new(ctx);
        let cancel = ctx.cancel.clone();
        let pid_file = dir.path().join("pid");
        let watcher = tokio::spawn(async move {
            while !std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n')) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            cancel.cancel();
        });
        let err = bash(
            &ctx,
            json!({"command": "sleep 100 & echo $! > pid; sleep 100", "timeout": 30}),
        )
        .await;
        watcher.await.unwrap();
        assert_eq!(err.unwrap_err(), ToolError::respond("cancelled: the run is stopping"));
        let pid = std::fs::read_to_string(dir.path().join("pid")).unwrap();
        let mut alive = true;
        for _ in 0..50 {
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
            alive = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']));
            if !alive {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!alive, "the command survived cancellation");
        ctx.sandbox.stop().await.unwrap();
    }
}
