//! A job's running container, as the agent's commands see it: the persistent shell session and the
//! per-command `docker exec` fallback, the freeze before file tools and the thaw after, the disk
//! watchdog, and the container's removal at `stop()` or drop. [`super::DockerSandbox::start`] makes
//! one.

use std::path::{Component, Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::errors::Error as EngineError;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::models::NetworkDisconnectRequest;
use futures_util::StreamExt;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Mutex, OwnedMutexGuard};
use tokio::time::Instant;
use tracing::Instrument;

use super::shell::{
    Ended, OutputStream, Prepared, Scan, bootstrap_script, kill_command, nonce, oom_command, parse_pair, per_command,
    pump, shell_command,
};
use super::{
    CHORE_TIMEOUT, DISK_CHECK, DockerSpec, GRACE, KEEPALIVE_PID_FILE, Network, SETUP_OUTPUT_LIMIT, SHELL_EXITED,
    SHELL_KILLED, WORKDIR, check_env, engine, remove_container, restore_owner, status,
};
use crate::sandbox::output::Capture;
use crate::sandbox::{ExecOutput, ExecRequest, SandboxError, Session};
use futures_util::future::BoxFuture;

/// A job's container. Removed by `stop()`, or in the background when dropped.
pub struct DockerSession {
    docker: Docker,
    container: String,
    /// Canonical, so cwd escapes can be checked by prefix.
    workspace: PathBuf,
    description: String,
    /// The keep-alive's PID inside the container.
    keepalive: u32,
    stopped: AtomicBool,
    /// The shell; held by the running command (one at a time).
    slot: Arc<Mutex<Slot>>,
    /// Whether the container is frozen (`docker pause`): from `quiesce` until the next command.
    paused: Mutex<bool>,
    /// Who the working tree goes back to once the container is gone (pitcrew runs as root).
    restore: Option<(u32, u32)>,
    /// Bytes the working copy may hold.
    disk_limit: u64,
}

impl std::fmt::Debug for DockerSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerSession")
            .field("container", &self.container)
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Slot {
    shell: Option<Shell>,
    /// No shell could be started: every command gets its own `docker exec`.
    per_command: bool,
    /// The container's OOM-kill count after the last command.
    oom_kills: u64,
    /// A cancelled command may have left processes behind: kill them before the next command.
    dirty: bool,
}

/// The long-lived shell, attached.
struct Shell {
    exec_id: String,
    pid: u32,
    input: Pin<Box<dyn AsyncWrite + Send>>,
    output: OutputStream,
}

impl DockerSession {
    /// The session of the container `container` (created, not yet booted) over `workspace`.
    pub(super) fn new(
        docker: Docker,
        container: String,
        workspace: PathBuf,
        description: String,
        restore: Option<(u32, u32)>,
        disk_limit: u64,
    ) -> DockerSession {
        DockerSession {
            docker,
            container,
            workspace,
            description,
            keepalive: 0,
            stopped: AtomicBool::new(false),
            slot: Arc::new(Mutex::new(Slot::default())),
            paused: Mutex::new(false),
            restore,
            disk_limit,
        }
    }

    /// The container's name.
    pub fn container(&self) -> &str {
        &self.container
    }

    /// Runs a request with its own `docker exec` instead of the shell session: no state carries
    /// over. The fallback mode, public for measurements.
    pub async fn exec_per_command(&self, request: ExecRequest) -> Result<ExecOutput, SandboxError> {
        if self.is_stopped() {
            return Err(SandboxError::Stopped);
        }
        let prepared = self.prepare(&request)?;
        let guard = Arc::clone(&self.slot).lock_owned().await;
        let mut pending = Pending::new(guard, self);
        self.clean(pending.slot()).await;
        let result = self.run_per_command(pending.slot(), &prepared, &request).await;
        pending.disarm();
        self.finish(result)
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Freezes every process of the container (the cgroup freezer, through `docker pause`): what
    /// the host does next to the working copy cannot be raced, whatever `/proc` said of them.
    async fn freeze(&self) -> Result<(), SandboxError> {
        if self.is_stopped() {
            return Ok(());
        }
        self.set_paused(true).await
    }

    /// Lets the container run again before a command (an exec into a paused container fails).
    async fn thaw(&self) -> Result<(), SandboxError> {
        self.set_paused(false).await
    }

    /// Pauses or unpauses the container unless it already is; the engine's "already paused" and
    /// "not paused" (another process of ours sharing the engine got there first) count as done.
    async fn set_paused(&self, pause: bool) -> Result<(), SandboxError> {
        let mut paused = self.paused.lock().await;
        if *paused == pause {
            return Ok(());
        }
        let (done, doing, already) = if pause {
            (
                self.docker.pause_container(&self.container).await,
                "pausing the container",
                "already paused",
            )
        } else {
            (
                self.docker.unpause_container(&self.container).await,
                "unpausing the container",
                "not paused",
            )
        };
        match done {
            Ok(()) => {}
            Err(err) if status(&err) == Some(409) && err.to_string().contains(already) => {}
            Err(err) => return Err(self.engine_error(doing, &err)),
        }
        *paused = pause;
        Ok(())
    }

    /// Reads a command's output as `pump` does, measuring the working copy every `DISK_CHECK`.
    /// `Some(bytes)` with `Ended::Deadline`: the copy grew past the disk limit.
    async fn pump_watched(
        &self,
        output: &mut OutputStream,
        out: &mut Scan,
        err: &mut Scan,
        deadline: Instant,
    ) -> Result<(Ended, Option<u64>), EngineError> {
        loop {
            let check_at = Instant::now() + DISK_CHECK;
            let ended = pump(output, out, err, true, deadline.min(check_at)).await?;
            if !matches!(ended, Ended::Deadline) || Instant::now() >= deadline {
                return Ok((ended, None));
            }
            let root = self.workspace.clone();
            let used = tokio::task::spawn_blocking(move || disk_usage(&root))
                .await
                .unwrap_or(0);
            if used > self.disk_limit {
                return Ok((Ended::Deadline, Some(used)));
            }
        }
    }

    /// Stops a command that wrote past the disk limit — every process, the shell too (the command
    /// may be a loop the shell runs itself) — and returns the error that ends the session.
    async fn stop_over_disk(&self, slot: &mut Slot, used: u64) -> SandboxError {
        self.try_kill_processes(None).await;
        slot.shell = None;
        SandboxError::Backend(format!(
            "the command filled the working copy past the sandbox's disk limit ({} written, the limit is {}), so \
             it was stopped and the job ends; raise [sandbox] disk if the project needs more",
            crate::config::bytesize::format_byte_size(used),
            crate::config::bytesize::format_byte_size(self.disk_limit)
        ))
    }

    /// After start: find the keep-alive, run setup, cut the network, open the shell.
    pub(super) async fn boot(&mut self, spec: &DockerSpec) -> Result<(), SandboxError> {
        self.docker
            .start_container(&self.container, None)
            .await
            .map_err(|err| engine("starting the container", &err))?;
        self.keepalive = self.read_keepalive().await?;
        if let Some(setup) = &spec.setup {
            self.run_setup(setup, spec).await?;
        }
        if spec.setup_network && spec.network == Network::None {
            self.disconnect_all().await?;
        }
        let mut slot = self.slot.lock().await;
        match self.start_shell().await {
            Ok((shell, oom_kills)) => {
                slot.shell = Some(shell);
                slot.oom_kills = oom_kills;
            }
            Err(err) => {
                tracing::warn!(
                    container = %self.container, error = %err,
                    "no shell session: one `docker exec` per command"
                );
                slot.per_command = true;
                slot.oom_kills = self.read_oom_kills().await.unwrap_or(0);
            }
        }
        Ok(())
    }

    async fn read_keepalive(&self) -> Result<u32, SandboxError> {
        let deadline = Instant::now() + CHORE_TIMEOUT;
        loop {
            let (code, stdout, stderr) = self.run_chore(vec!["cat".into(), KEEPALIVE_PID_FILE.into()]).await?;
            if code == Some(0)
                && let Ok(pid) = stdout.trim().parse()
            {
                return Ok(pid);
            }
            if Instant::now() > deadline {
                return Err(SandboxError::Backend(format!(
                    "the container's keep-alive did not start (does the image have `sh` and `sleep`?): {}",
                    stderr.trim()
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn run_setup(&self, setup: &str, spec: &DockerSpec) -> Result<(), SandboxError> {
        let prepared = Prepared {
            command: setup.to_owned(),
            cwd: None,
            env: Vec::new(),
        };
        let mut request = ExecRequest::new(setup, spec.setup_timeout);
        request.output_limit = SETUP_OUTPUT_LIMIT;
        let mut slot = Slot::default();
        let out = self.run_per_command(&mut slot, &prepared, &request).await?;
        if out.exit_code == Some(0) && !out.timed_out {
            return Ok(());
        }
        let what = match out.exit_code {
            _ if out.timed_out => format!("timed out after {} s", spec.setup_timeout.as_secs()),
            Some(code) => format!("exit code {code}"),
            None => "killed".to_owned(),
        };
        let mut message = format!("the sandbox setup script failed ({what})");
        for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            if !text.is_empty() {
                message.push_str(&format!("\n--- {name} (tail) ---\n{}", tail_chars(text, 2000)));
            }
        }
        Err(SandboxError::Backend(message))
    }

    /// Leaves every network: only loopback remains.
    async fn disconnect_all(&self) -> Result<(), SandboxError> {
        let inspect = self
            .docker
            .inspect_container(&self.container, None)
            .await
            .map_err(|err| engine("inspecting the container", &err))?;
        let networks = inspect
            .network_settings
            .and_then(|settings| settings.networks)
            .unwrap_or_default();
        for network in networks.keys() {
            let request = NetworkDisconnectRequest {
                container: self.container.clone(),
                force: Some(true),
            };
            self.docker
                .disconnect_network(network, request)
                .await
                .map_err(|err| engine(&format!("disconnecting the container from network `{network}`"), &err))?;
        }
        Ok(())
    }

    /// Starts the shell session; returns it with the container's OOM-kill count.
    async fn start_shell(&self) -> Result<(Shell, u64), SandboxError> {
        let (exec_id, output, input) = self.attach(vec!["sh".into()], Vec::new(), WORKDIR, true).await?;
        let mut input = input.ok_or_else(|| SandboxError::Backend("the shell has no stdin".to_owned()))?;
        let mut output = output;
        let nonce = nonce();
        let bootstrap = bootstrap_script(&nonce, self.keepalive);
        input
            .write_all(bootstrap.as_bytes())
            .await
            .map_err(|err| SandboxError::Backend(format!("starting the shell: {err}")))?;
        input
            .flush()
            .await
            .map_err(|err| SandboxError::Backend(format!("starting the shell: {err}")))?;
        let mut out = Scan::new(&nonce, 4096);
        let mut err = Scan::new(&nonce, 4096);
        let ended = pump(&mut output, &mut out, &mut err, false, Instant::now() + CHORE_TIMEOUT).await;
        let ready = match ended {
            Ok(Ended::Markers) => out.status.take().unwrap_or_default(),
            Ok(_) | Err(_) => {
                return Err(SandboxError::Backend(format!(
                    "the shell did not start: {}",
                    err.capture.into_text().trim()
                )));
            }
        };
        let (pid, oom_kills) = parse_pair(&ready)
            .ok_or_else(|| SandboxError::Backend(format!("the shell said `{ready}` when started")))?;
        let pid = u32::try_from(pid).map_err(|_| SandboxError::Backend(format!("the shell's PID is {pid}")))?;
        let shell = Shell {
            exec_id,
            pid,
            input,
            output,
        };
        Ok((shell, u64::try_from(oom_kills).unwrap_or(0)))
    }

    /// `docker exec` with stdout and stderr attached (and stdin when asked).
    async fn attach(
        &self,
        cmd: Vec<String>,
        env: Vec<String>,
        working_dir: &str,
        stdin: bool,
    ) -> Result<(String, OutputStream, Option<Pin<Box<dyn AsyncWrite + Send>>>), SandboxError> {
        self.thaw().await?;
        let options = CreateExecOptions {
            attach_stdin: Some(stdin),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            tty: Some(false),
            env: (!env.is_empty()).then_some(env),
            cmd: Some(cmd),
            working_dir: Some(working_dir.to_owned()),
            ..CreateExecOptions::default()
        };
        let exec = self
            .docker
            .create_exec(&self.container, options)
            .await
            .map_err(|err| self.engine_error("creating a `docker exec`", &err))?;
        let start = StartExecOptions {
            detach: false,
            tty: false,
            output_capacity: Some(64 * 1024),
        };
        match self.docker.start_exec(&exec.id, Some(start)).await {
            Ok(StartExecResults::Attached { output, input }) => Ok((exec.id, output, stdin.then_some(input))),
            Ok(StartExecResults::Detached) => Err(SandboxError::Backend("the `docker exec` detached".to_owned())),
            Err(err) => Err(self.engine_error("starting a `docker exec`", &err)),
        }
    }

    /// Runs a small command of ours to its end: exit code, stdout, stderr.
    async fn run_chore(&self, cmd: Vec<String>) -> Result<(Option<i64>, String, String), SandboxError> {
        let (exec_id, mut output, _) = self.attach(cmd, Vec::new(), "/", false).await?;
        let mut out = Capture::with_limit(64 * 1024);
        let mut err = Capture::with_limit(64 * 1024);
        let deadline = Instant::now() + CHORE_TIMEOUT;
        loop {
            match tokio::time::timeout_at(deadline, output.next()).await {
                Err(_) => {
                    return Err(SandboxError::Backend(
                        "a sandbox chore did not finish in time".to_owned(),
                    ));
                }
                Ok(None) => break,
                Ok(Some(Err(error))) => return Err(self.engine_error("reading a `docker exec`", &error)),
                Ok(Some(Ok(LogOutput::StdErr { message }))) => err.push(&message),
                Ok(Some(Ok(LogOutput::StdOut { message } | LogOutput::Console { message }))) => out.push(&message),
                Ok(Some(Ok(LogOutput::StdIn { .. }))) => {}
            }
        }
        let code = self.exit_code(&exec_id).await;
        Ok((code, out.into_text(), err.into_text()))
    }

    async fn exit_code(&self, exec_id: &str) -> Option<i64> {
        // The exit code is recorded a moment after the streams close.
        for _ in 0..50 {
            match self.docker.inspect_exec(exec_id).await {
                Ok(inspect) if inspect.running != Some(true) => return inspect.exit_code,
                Ok(_) => tokio::time::sleep(Duration::from_millis(2)).await,
                Err(_) => return None,
            }
        }
        None
    }

    /// Kills every process in the container but PID 1, the keep-alive and `spare`.
    async fn kill_processes(&self, spare: Option<u32>) -> Result<(), SandboxError> {
        let mut keep = vec![self.keepalive];
        keep.extend(spare);
        self.run_chore(kill_command(&keep)).await.map(drop)
    }

    /// Kills as `kill_processes` does, logging a failure: the command's outcome is reported anyway.
    async fn try_kill_processes(&self, spare: Option<u32>) {
        if let Err(err) = self.kill_processes(spare).await {
            tracing::warn!(container = %self.container, error = %err, "killing the command's processes failed");
        }
    }

    /// An error unless the container runs.
    async fn ensure_running(&self) -> Result<(), SandboxError> {
        let inspect = self
            .docker
            .inspect_container(&self.container, None)
            .await
            .map_err(|err| self.engine_error("inspecting the container", &err))?;
        let state = inspect.state.unwrap_or_default();
        if state.running == Some(true) {
            return Ok(());
        }
        Err(SandboxError::Backend(format!(
            "the container {} is not running (status {}, exit code {})",
            self.container,
            state
                .status
                .map_or_else(|| "unknown".to_owned(), |status| status.to_string()),
            state.exit_code.unwrap_or(-1),
        )))
    }

    async fn read_oom_kills(&self) -> Result<u64, SandboxError> {
        let (_, stdout, _) = self.run_chore(oom_command()).await?;
        Ok(stdout.trim().parse().unwrap_or(0))
    }

    /// Checks the request and translates its working directory.
    fn prepare(&self, request: &ExecRequest) -> Result<Prepared, SandboxError> {
        if request.command.contains('\0') {
            return Err(SandboxError::Spawn("the command contains a NUL byte".to_owned()));
        }
        check_env(&request.env).map_err(|e| SandboxError::Spawn(e.to_string()))?;
        let cwd = match request.cwd.as_deref() {
            None => None,
            Some(cwd) => {
                let resolved = resolve_cwd(&self.workspace, cwd)?;
                let relative = resolved.strip_prefix(&self.workspace).unwrap_or(Path::new(""));
                let relative = relative
                    .to_str()
                    .ok_or_else(|| SandboxError::Spawn(format!("working directory {} is not UTF-8", cwd.display())))?;
                (!relative.is_empty()).then(|| format!("{WORKDIR}/{relative}"))
            }
        };
        Ok(Prepared {
            command: request.command.clone(),
            cwd,
            env: request.env.clone(),
        })
    }

    async fn run(&self, request: ExecRequest) -> Result<ExecOutput, SandboxError> {
        if self.is_stopped() {
            return Err(SandboxError::Stopped);
        }
        let prepared = self.prepare(&request)?;
        let guard = Arc::clone(&self.slot).lock_owned().await;
        let mut pending = Pending::new(guard, self);
        if let Err(err) = self.thaw().await {
            pending.disarm();
            return Err(err);
        }
        let slot = pending.slot();
        self.clean(slot).await;
        if slot.shell.is_none() && !slot.per_command {
            match self.start_shell().await {
                Ok((shell, oom_kills)) => {
                    slot.shell = Some(shell);
                    slot.oom_kills = oom_kills;
                }
                Err(_) if self.is_stopped() => {
                    pending.disarm();
                    return Err(SandboxError::Stopped);
                }
                Err(err) => {
                    // A container that is gone is an error; a shell that cannot start is a mode.
                    if let Err(gone) = self.ensure_running().await {
                        pending.disarm();
                        return Err(gone);
                    }
                    tracing::warn!(
                        container = %self.container, error = %err,
                        "no shell session: one `docker exec` per command"
                    );
                    slot.per_command = true;
                }
            }
        }
        let result = if slot.per_command {
            self.run_per_command(slot, &prepared, &request).await
        } else {
            self.run_in_shell(slot, &prepared, &request).await
        };
        pending.disarm();
        self.finish(result)
    }

    /// Kills what a cancelled command left running.
    async fn clean(&self, slot: &mut Slot) {
        if slot.dirty {
            self.try_kill_processes(None).await;
            slot.dirty = false;
        }
    }

    fn finish(&self, result: Result<ExecOutput, SandboxError>) -> Result<ExecOutput, SandboxError> {
        if self.is_stopped() {
            return Err(SandboxError::Stopped);
        }
        result
    }

    async fn run_in_shell(
        &self,
        slot: &mut Slot,
        prepared: &Prepared,
        request: &ExecRequest,
    ) -> Result<ExecOutput, SandboxError> {
        let Some(shell) = slot.shell.as_mut() else {
            return Err(SandboxError::Backend("no shell session".to_owned()));
        };
        let nonce = nonce();
        let script = shell_command(&nonce, prepared);
        let started = Instant::now();
        let written = async {
            shell.input.write_all(script.as_bytes()).await?;
            shell.input.flush().await
        };
        if let Err(err) = written.await {
            slot.shell = None;
            return Err(SandboxError::Backend(format!("the shell session is gone: {err}")));
        }
        let mut out = Scan::new(&nonce, request.output_limit);
        let mut err = Scan::new(&nonce, request.output_limit);
        let watched = self
            .pump_watched(&mut shell.output, &mut out, &mut err, started + request.timeout)
            .await;
        if let Ok((_, Some(used))) = watched {
            return Err(self.stop_over_disk(slot, used).await);
        }
        let mut ended = watched.map(|(ended, _)| ended);
        let mut timed_out = false;
        let mut note = None;
        if matches!(ended, Ok(Ended::Deadline)) {
            timed_out = true;
            self.try_kill_processes(Some(shell.pid)).await;
            ended = pump(&mut shell.output, &mut out, &mut err, true, Instant::now() + GRACE).await;
            if matches!(ended, Ok(Ended::Deadline)) {
                // The shell itself is busy (a loop of builtins, or it exec'd the command).
                self.try_kill_processes(None).await;
                ended = pump(&mut shell.output, &mut out, &mut err, true, Instant::now() + GRACE).await;
                note = Some(SHELL_KILLED);
            }
        }
        let duration = started.elapsed();
        let (exit_code, oom_killed) = match ended {
            Ok(Ended::Markers) => {
                let status = out.status.take().unwrap_or_default();
                let (code, oom_kills) = parse_pair(&status)
                    .ok_or_else(|| SandboxError::Backend(format!("the shell's marker line was `{status}`")))?;
                let oom_kills = u64::try_from(oom_kills).unwrap_or(0);
                let oom_killed = oom_kills > slot.oom_kills;
                slot.oom_kills = oom_kills;
                (i32::try_from(code).ok(), oom_killed)
            }
            Ok(Ended::Eof | Ended::Deadline) => {
                // The shell is gone: it exited (or was killed above); clear what it left running.
                let exec_id = shell.exec_id.clone();
                slot.shell = None;
                if self.is_stopped() {
                    return Err(SandboxError::Stopped);
                }
                let code = self.exit_code(&exec_id).await;
                // Also tells a shell that exited from a container that is gone.
                self.kill_processes(None).await?;
                let oom_kills = self.read_oom_kills().await.unwrap_or(slot.oom_kills);
                let oom_killed = oom_kills > slot.oom_kills;
                slot.oom_kills = oom_kills;
                note = note.or(Some(SHELL_EXITED));
                (code.and_then(|code| i32::try_from(code).ok()), oom_killed)
            }
            Err(error) => {
                slot.shell = None;
                return Err(self.engine_error("reading the shell's output", &error));
            }
        };
        Ok(exec_output(
            out.capture,
            err.capture,
            exit_code,
            timed_out,
            oom_killed,
            duration,
            note,
        ))
    }

    async fn run_per_command(
        &self,
        slot: &mut Slot,
        prepared: &Prepared,
        request: &ExecRequest,
    ) -> Result<ExecOutput, SandboxError> {
        let nonce = nonce();
        // The shell session, if any, waits for its next command: spare it.
        let shell = slot.shell.as_ref().map(|shell| shell.pid);
        let spare = match shell {
            Some(pid) => format!("{} {pid}", self.keepalive),
            None => self.keepalive.to_string(),
        };
        let cmd = per_command(&nonce, &spare, &prepared.command);
        let env = prepared.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let workdir = prepared.cwd.as_deref().unwrap_or(WORKDIR);
        let started = Instant::now();
        let (exec_id, mut output, _) = self.attach(cmd, env, workdir, false).await?;
        let mut out = Scan::new(&nonce, request.output_limit);
        let mut err = Scan::new(&nonce, request.output_limit);
        let watched = self
            .pump_watched(&mut output, &mut out, &mut err, started + request.timeout)
            .await;
        if let Ok((_, Some(used))) = watched {
            return Err(self.stop_over_disk(slot, used).await);
        }
        let mut ended = watched.map(|(ended, _)| ended);
        let timed_out = matches!(ended, Ok(Ended::Deadline));
        if timed_out {
            self.try_kill_processes(shell).await;
            ended = pump(&mut output, &mut out, &mut err, true, Instant::now() + GRACE).await;
        }
        let duration = started.elapsed();
        let (exit_code, oom_killed) = match ended {
            Ok(Ended::Markers) => {
                let status = out.status.take().unwrap_or_default();
                let (code, oom_kills) = parse_pair(&status)
                    .ok_or_else(|| SandboxError::Backend(format!("the command's marker line was `{status}`")))?;
                // Kept in step with the container's count, which the shell session reports.
                let oom_kills = u64::try_from(oom_kills).unwrap_or(0);
                slot.oom_kills += oom_kills;
                (i32::try_from(code).ok(), oom_kills > 0)
            }
            Ok(Ended::Eof | Ended::Deadline) => {
                let code = self.exit_code(&exec_id).await;
                (code.and_then(|code| i32::try_from(code).ok()), false)
            }
            Err(error) => return Err(self.engine_error("reading the command's output", &error)),
        };
        Ok(exec_output(
            out.capture,
            err.capture,
            exit_code,
            timed_out,
            oom_killed,
            duration,
            None,
        ))
    }

    /// An engine error, told apart from a stopped session.
    fn engine_error(&self, doing: &str, err: &EngineError) -> SandboxError {
        if self.is_stopped() {
            return SandboxError::Stopped;
        }
        match status(err) {
            Some(404) => SandboxError::Backend(format!("{doing}: the container {} is gone: {err}", self.container)),
            Some(409) => SandboxError::Backend(format!(
                "{doing}: the container {} is not running: {err}",
                self.container
            )),
            _ => engine(doing, err),
        }
    }
}

impl Session for DockerSession {
    fn workspace(&self) -> &Path {
        &self.workspace
    }

    fn describe(&self) -> String {
        self.description.clone()
    }

    fn exec<'a>(&'a self, request: ExecRequest) -> BoxFuture<'a, Result<ExecOutput, SandboxError>> {
        Box::pin(self.run(request))
    }

    fn stop<'a>(&'a self) -> BoxFuture<'a, Result<(), SandboxError>> {
        Box::pin(async move {
            self.stopped.store(true, Ordering::SeqCst);
            // A paused container is removed as it is: its processes never run again.
            remove_container(&self.docker, &self.container).await?;
            restore_owner(&self.workspace, self.restore).await;
            Ok(())
        })
    }

    fn quiesce<'a>(&'a self) -> BoxFuture<'a, Result<(), SandboxError>> {
        Box::pin(self.freeze())
    }
}

impl Drop for DockerSession {
    fn drop(&mut self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let (docker, container) = (self.docker.clone(), self.container.clone());
        let (workspace, restore) = (self.workspace.clone(), self.restore);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                // In the span of the job that dropped it, which a task does not inherit.
                runtime.spawn(Instrument::in_current_span(async move {
                    match remove_container(&docker, &container).await {
                        Ok(()) => restore_owner(&workspace, restore).await,
                        Err(err) => {
                            tracing::warn!(%container, error = %err, "removing the dropped sandbox's container")
                        }
                    }
                }));
            }
            Err(_) => {
                tracing::warn!(
                    %container,
                    "a sandbox container outlives its session (no runtime to remove it); the next start-up reaps it"
                );
            }
        }
    }
}

/// The shell slot, held by a running command. When the command's future is dropped before it
/// finishes (the caller cancelled it), the shell is abandoned and the slot marked dirty: the
/// command's processes are killed in the background, or by the next command, whichever takes the
/// slot first.
struct Pending {
    guard: OwnedMutexGuard<Slot>,
    armed: bool,
    slot: Arc<Mutex<Slot>>,
    docker: Docker,
    container: String,
    keepalive: u32,
}

impl Pending {
    fn new(guard: OwnedMutexGuard<Slot>, session: &DockerSession) -> Self {
        Pending {
            guard,
            armed: true,
            slot: Arc::clone(&session.slot),
            docker: session.docker.clone(),
            container: session.container.clone(),
            keepalive: session.keepalive,
        }
    }

    fn slot(&mut self) -> &mut Slot {
        &mut self.guard
    }

    /// The command finished: release the slot as it is.
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.guard.shell = None;
        self.guard.dirty = true;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (slot, docker, container, keepalive) = (
            Arc::clone(&self.slot),
            self.docker.clone(),
            self.container.clone(),
            self.keepalive,
        );
        // In the span of the job whose command was cancelled, which a task does not inherit.
        runtime.spawn(Instrument::in_current_span(async move {
            let mut slot = slot.lock().await;
            if !slot.dirty {
                return;
            }
            let options = CreateExecOptions {
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                cmd: Some(kill_command(&[keepalive])),
                ..CreateExecOptions::default()
            };
            let killed = async {
                let exec = docker.create_exec(&container, options).await?;
                if let StartExecResults::Attached { mut output, .. } = docker.start_exec(&exec.id, None).await? {
                    while output.next().await.is_some() {}
                }
                Ok::<_, EngineError>(())
            };
            match tokio::time::timeout(CHORE_TIMEOUT, killed).await {
                Ok(Ok(())) => slot.dirty = false,
                Ok(Err(err)) => tracing::debug!(%container, error = %err, "killing a cancelled command's processes"),
                Err(_) => tracing::debug!(%container, "killing a cancelled command's processes timed out"),
            }
        }));
    }
}

fn exec_output(
    stdout: Capture,
    stderr: Capture,
    exit_code: Option<i32>,
    timed_out: bool,
    oom_killed: bool,
    duration: Duration,
    note: Option<&str>,
) -> ExecOutput {
    let truncated = stdout.truncated() || stderr.truncated();
    let stdout_bytes = stdout.total;
    let mut stderr_bytes = stderr.total;
    let mut stderr = stderr.into_text();
    if let Some(note) = note {
        if !stderr.is_empty() && !stderr.ends_with('\n') {
            stderr.push('\n');
            stderr_bytes += 1;
        }
        stderr.push_str(note);
        stderr.push('\n');
        stderr_bytes += note.len() as u64 + 1;
    }
    ExecOutput {
        exit_code: if timed_out { None } else { exit_code },
        stdout: stdout.into_text(),
        stderr,
        stdout_bytes,
        stderr_bytes,
        truncated,
        timed_out,
        oom_killed,
        duration,
    }
}

/// The working directory of a request: inside the workspace, after following symlinks.
fn resolve_cwd(workspace: &Path, cwd: &Path) -> Result<PathBuf, SandboxError> {
    let escape = || SandboxError::Spawn(format!("working directory {} is outside the workspace", cwd.display()));
    let mut depth = 0usize;
    for component in cwd.components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir if depth > 0 => depth -= 1,
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return Err(escape()),
        }
    }
    let resolved = workspace
        .join(cwd)
        .canonicalize()
        .map_err(|err| SandboxError::Spawn(format!("working directory {}: {err}", cwd.display())))?;
    if !resolved.starts_with(workspace) {
        return Err(escape());
    }
    if !resolved.is_dir() {
        return Err(SandboxError::Spawn(format!(
            "working directory {} is not a directory",
            cwd.display()
        )));
    }
    Ok(resolved)
}

/// The bytes the files below `root` take on disk (`.git` at the top aside), symlinks not followed.
fn disk_usage(root: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;

    let mut total = 0u64;
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            if dir == root && crate::workspace::is_git_dir(&entry.file_name()) {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            total = total.saturating_add(meta.blocks().saturating_mul(512));
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    total
}

/// The last `max` characters of `text`.
fn tail_chars(text: &str, max: usize) -> &str {
    let count = text.chars().count();
    if count <= max {
        return text;
    }
    let skip = text.char_indices().nth(count - max).map_or(0, |(i, _)| i);
    &text[skip..]
}
