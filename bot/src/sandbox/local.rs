//! The `local` sandbox backend: commands run as plain processes on the host, in the workspace, for
//! machines without Docker. Opt-in, and unsandboxed: every session says so in the log.
//!
//! What it does guard: the environment (an explicit allow-list, never the host's, so no tokens or
//! API keys leak into commands), the working directory (never outside the workspace), time (the
//! whole process group is killed on timeout, on cancellation, on `stop()` and after the shell
//! exits, so background children cannot outlive their command) and memory (only the head and tail
//! of each output stream are kept).
//!
//! When pitcrew runs as root (the Action's container), commands run as an unprivileged sandbox
//! user instead ([`SandboxUser`]: `pitcrew-sandbox` if the system has one, else uid/gid 65532,
//! with no supplementary groups), so they cannot read pitcrew's memory and environment, root's
//! files, or the environment of the container's other processes. The working copy is handed to
//! that user's group (group-writable, set-group-id directories, umask 002 so files pitcrew writes
//! later stay writable); `.git` stays root's and read-only to commands, as in the Docker backend.
//!
//! What it cannot guard without privileges: the network, the file system outside the workspace,
//! and the number of processes. A fork bomb runs until the timeout kills its process group (a
//! process that leaves the group with `setsid` escapes that too); we deliberately set no
//! `RLIMIT_NPROC`, as it counts every process of the bot's user. The Docker backend owns real
//! limits.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::{Pid, Uid};
use tokio::process::Command;

use super::output::Capture;
use super::{ExecOutput, ExecRequest, SandboxError, Session};

/// How long to wait for the pipes to close once the process group has been killed. Only a process
/// that escaped the group can keep them open that long.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(1);
/// How long to wait for the shell to be reaped after `SIGKILL`.
const REAP_TIMEOUT: Duration = Duration::from_secs(5);
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The account commands run as when pitcrew is root, if the system has it.
pub const SANDBOX_USER_NAME: &str = "pitcrew-sandbox";
/// The uid and gid used when it has not (distroless's `nonroot`: no account, no home, no groups).
pub const SANDBOX_UID: u32 = 65532;

/// The unprivileged user the local backend runs commands as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxUser {
    pub uid: u32,
    pub gid: u32,
}

impl SandboxUser {
    /// The user for `policy`: with [`LocalUser::Auto`] and pitcrew running as root, the
    /// `pitcrew-sandbox` account if it exists, else uid/gid 65532; otherwise `None` (pitcrew's own
    /// user).
    pub fn for_policy(policy: crate::config::LocalUser) -> Option<SandboxUser> {
        if policy != crate::config::LocalUser::Auto || !Uid::effective().is_root() {
            return None;
        }
        Some(match nix::unistd::User::from_name(SANDBOX_USER_NAME) {
            Ok(Some(user)) => SandboxUser {
                uid: user.uid.as_raw(),
                gid: user.gid.as_raw(),
            },
            _ => SandboxUser {
                uid: SANDBOX_UID,
                gid: SANDBOX_UID,
            },
        })
    }
}

/// Configuration of the local backend.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LocalOptions {
    /// Variables added to the allow-list, from configuration (they may override it).
    pub env: Vec<(String, String)>,
    /// `PATH` for commands; the host's `PATH` when `None`.
    pub path: Option<OsString>,
    /// Passed on as `CARGO_HOME` when set. `HOME` is a fresh directory per session, so toolchains
    /// installed under the user's home (rustup, cargo) need these to be found.
    pub cargo_home: Option<PathBuf>,
    /// Passed on as `RUSTUP_HOME` when set.
    pub rustup_home: Option<PathBuf>,
    /// Run commands as this user rather than pitcrew's own ([`SandboxUser::for_policy`]).
    pub user: Option<SandboxUser>,
}

/// A session of the local backend. Stops (kills what still runs, removes its `HOME`) on drop too.
#[derive(Debug)]
pub struct LocalSession {
    /// Canonical, so escapes through `..` or symlinks can be checked by prefix.
    workspace: PathBuf,
    /// The per-session `HOME`, removed by `stop()`.
    home: PathBuf,
    /// The base environment of every command.
    env: Vec<(OsString, OsString)>,
    /// Whom commands run as, when not pitcrew's own user.
    user: Option<SandboxUser>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    stopped: bool,
    /// Process groups of the commands still running.
    groups: BTreeSet<i32>,
}

impl LocalSession {
    /// Starts a session in `workspace`, which must be an existing directory.
    pub fn start(workspace: &Path, options: LocalOptions) -> Result<LocalSession, SandboxError> {
        let workspace = workspace
            .canonicalize()
            .map_err(|err| SandboxError::Backend(format!("workspace {}: {err}", workspace.display())))?;
        if !workspace.is_dir() {
            return Err(SandboxError::Backend(format!(
                "workspace {} is not a directory",
                workspace.display()
            )));
        }
        let user = options.user.filter(|user| user.uid != Uid::effective().as_raw());
        if let Some(user) = user {
            hand_over(&workspace, user)?;
        }
        let home = make_home()?;
        let mut env = base_env(&home, options);
        match user {
            Some(user) => {
                if let Err(err) = std::os::unix::fs::chown(&home, Some(user.uid), Some(user.gid)) {
                    let _ = std::fs::remove_dir_all(&home);
                    return Err(SandboxError::Backend(format!(
                        "giving {} to the sandbox user: {err}",
                        home.display()
                    )));
                }
                // `.git` is root's: without this, git refuses the repository as "dubious ownership".
                // The command-line scope is one git honours for `safe.directory`.
                env.extend([
                    ("GIT_CONFIG_COUNT".into(), "1".into()),
                    ("GIT_CONFIG_KEY_0".into(), "safe.directory".into()),
                    ("GIT_CONFIG_VALUE_0".into(), workspace.clone().into_os_string()),
                ]);
                tracing::warn!(
                    workspace = %workspace.display(),
                    uid = user.uid,
                    "local sandbox: commands run UNSANDBOXED on the host as uid {}, with its network and the file system \
                     that user may read",
                    user.uid
                );
            }
            None => tracing::warn!(
                workspace = %workspace.display(),
                "local sandbox: commands run UNSANDBOXED on the host, as the bot's user, with its network and file system"
            ),
        }
        Ok(LocalSession {
            workspace,
            home,
            env,
            user,
            state: Mutex::new(State::default()),
        })
    }

    /// The `HOME` commands see.
    pub fn home(&self) -> &Path {
        &self.home
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The working directory of a request: inside the workspace, after following symlinks.
    fn resolve_cwd(&self, cwd: Option<&Path>) -> Result<PathBuf, SandboxError> {
        let Some(cwd) = cwd else {
            return Ok(self.workspace.clone());
        };
        let mut depth = 0usize;
        for component in cwd.components() {
            match component {
                Component::Normal(_) => depth += 1,
                Component::CurDir => {}
                Component::ParentDir if depth > 0 => depth -= 1,
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                    return Err(escape(cwd));
                }
            }
        }
        let joined = self.workspace.join(cwd);
        let resolved = joined
            .canonicalize()
            .map_err(|err| SandboxError::Spawn(format!("working directory {}: {err}", cwd.display())))?;
        if !resolved.starts_with(&self.workspace) {
            return Err(escape(cwd));
        }
        if !resolved.is_dir() {
            return Err(SandboxError::Spawn(format!(
                "working directory {} is not a directory",
                cwd.display()
            )));
        }
        Ok(resolved)
    }

    async fn run(&self, request: ExecRequest) -> Result<ExecOutput, SandboxError> {
        let cwd = self.resolve_cwd(request.cwd.as_deref())?;
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(&request.command)
            .current_dir(&cwd)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(request.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(user) = self.user {
            // std sets the gid, then drops every supplementary group (`setgroups(0)`, since no
            // groups are given), then the uid, all in the child before `exec`.
            command.uid(user.uid).gid(user.gid);
        }

        // Spawn and register under the lock, so `stop()` either sees the group or refuses the spawn.
        let (mut child, mut group) = {
            let mut state = self.state();
            if state.stopped {
                return Err(SandboxError::Stopped);
            }
            let child = command.spawn().map_err(|err| SandboxError::Spawn(err.to_string()))?;
            let pgid = child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .ok_or_else(|| SandboxError::Backend("the spawned shell has no process id".to_owned()))?;
            state.groups.insert(pgid);
            (
                child,
                Group {
                    session: self,
                    pgid,
                    killed: false,
                },
            )
        };
        let started = Instant::now();

        let mut stdout = Capture::with_limit(request.output_limit);
        let mut stderr = Capture::with_limit(request.output_limit);
        let (stdout_pipe, stderr_pipe) = (child.stdout.take(), child.stderr.take());
        let mut reads = Box::pin(async {
            tokio::join!(stdout.read_from(stdout_pipe), stderr.read_from(stderr_pipe));
        });
        let deadline = tokio::time::sleep(request.timeout);
        tokio::pin!(deadline);

        let mut reads_done = false;
        let status = loop {
            tokio::select! {
                status = child.wait() => break Some(status),
                () = &mut deadline => break None,
                () = &mut reads, if !reads_done => reads_done = true,
            }
        };
        let timed_out = status.is_none();
        // Whatever the shell left running in the background goes with it.
        group.kill();
        let status = match status {
            Some(status) => status,
            None => match tokio::time::timeout(REAP_TIMEOUT, child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    return Err(SandboxError::Backend(
                        "the killed command could not be reaped".to_owned(),
                    ));
                }
            },
        }
        .map_err(|err| SandboxError::Backend(format!("waiting for the command: {err}")))?;
        if !reads_done && tokio::time::timeout(DRAIN_TIMEOUT, &mut reads).await.is_err() {
            tracing::warn!(command = %request.command, "a process that left the command's group holds its output open");
        }
        drop(reads);
        let duration = started.elapsed();
        drop(group);

        if self.state().stopped {
            return Err(SandboxError::Stopped);
        }
        let truncated = stdout.truncated() || stderr.truncated();
        Ok(ExecOutput {
            exit_code: if timed_out { None } else { status.code() },
            stdout_bytes: stdout.total,
            stderr_bytes: stderr.total,
            stdout: stdout.into_text(),
            stderr: stderr.into_text(),
            truncated,
            timed_out,
            oom_killed: false,
            duration,
        })
    }

    fn kill_all(&self) {
        let groups = std::mem::take(&mut self.state().groups);
        for pgid in groups {
            kill_group(pgid);
        }
    }
}

impl Session for LocalSession {
    fn workspace(&self) -> &Path {
        &self.workspace
    }

    fn describe(&self) -> String {
        "local (unsandboxed)".to_owned()
    }

    fn exec<'a>(&'a self, request: ExecRequest) -> BoxFuture<'a, Result<ExecOutput, SandboxError>> {
        Box::pin(self.run(request))
    }

    fn stop<'a>(&'a self) -> BoxFuture<'a, Result<(), SandboxError>> {
        Box::pin(async move {
            let first = !std::mem::replace(&mut self.state().stopped, true);
            self.kill_all();
            if first {
                match std::fs::remove_dir_all(&self.home) {
                    Ok(()) => {}
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                    Err(err) => {
                        return Err(SandboxError::Backend(format!(
                            "removing {}: {err}",
                            self.home.display()
                        )));
                    }
                }
            }
            Ok(())
        })
    }
}

impl Drop for LocalSession {
    fn drop(&mut self) {
        let stopped = std::mem::replace(&mut self.state().stopped, true);
        self.kill_all();
        if !stopped {
            let _ = std::fs::remove_dir_all(&self.home);
        }
    }
}

/// A running command's process group: killed when dropped, so a cancelled `exec` (its future
/// dropped) takes its processes with it.
struct Group<'a> {
    session: &'a LocalSession,
    pgid: i32,
    killed: bool,
}

impl Group<'_> {
    fn kill(&mut self) {
        if !self.killed {
            self.killed = true;
            kill_group(self.pgid);
        }
    }
}

impl Drop for Group<'_> {
    fn drop(&mut self) {
        self.kill();
        self.session.state().groups.remove(&self.pgid);
    }
}

fn kill_group(pgid: i32) {
    // ESRCH (nothing left in the group) is the usual, harmless outcome.
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
}

fn escape(cwd: &Path) -> SandboxError {
    SandboxError::Spawn(format!("working directory {} is outside the workspace", cwd.display()))
}

/// Makes `workspace` usable by `user`: checks the user can reach it, then gives the work tree
/// (not `.git`, anywhere in it) to the user's group, group-writable, with set-group-id
/// directories so new files join the group; and sets the umask to 002 so what pitcrew itself
/// writes there later (the file tools, as root) stays writable by commands.
///
/// This runs before any of the session's commands exist, so nothing of the sandbox user's can
/// swap a directory for a symlink under it; symlinks are never followed.
fn hand_over(workspace: &Path, user: SandboxUser) -> Result<(), SandboxError> {
    for dir in workspace.ancestors().skip(1) {
        let meta = std::fs::metadata(dir).map_err(|err| SandboxError::Backend(format!("{}: {err}", dir.display())))?;
        if !searchable(&meta, user) {
            return Err(SandboxError::Backend(format!(
                "the sandbox user (uid {}) cannot reach the working copy {}: {} is not searchable by it (mode {:o}); \
                 keep the data directory under directories others may enter, or set `[sandbox] local_user = \"self\"` \
                 to run commands as pitcrew's own user",
                user.uid,
                workspace.display(),
                dir.display(),
                std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777
            )));
        }
    }
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o002));
    share_with_group(workspace, user.gid)
        .map_err(|err| SandboxError::Backend(format!("giving the working copy to the sandbox user: {err}")))
}

/// Whether `user` may search (enter) the directory described by `meta`.
fn searchable(meta: &std::fs::Metadata, user: SandboxUser) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let mode = meta.mode();
    if meta.uid() == user.uid {
        mode & 0o100 != 0
    } else if meta.gid() == user.gid {
        mode & 0o010 != 0
    } else {
        mode & 0o001 != 0
    }
}

/// `path` and everything under it but `.git` directories: group `gid`, group-writable, and
/// set-group-id for directories. Symlinks get the group but are not followed.
fn share_with_group(path: &Path, gid: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let meta = std::fs::symlink_metadata(path)?;
    std::os::unix::fs::lchown(path, None, Some(gid))?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let mode = meta.permissions().mode() & 0o7777;
    if meta.is_dir() {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode | 0o2070))?;
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            if entry.file_name() != ".git" {
                share_with_group(&entry.path(), gid)?;
            }
        }
    } else if meta.is_file() {
        // Executables stay executable for the group.
        let exec = (mode & 0o100) >> 3;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode | 0o060 | exec))?;
    }
    Ok(())
}

/// Creates the session's private `HOME` under the system temp directory.
fn make_home() -> Result<PathBuf, SandboxError> {
    let base = std::env::temp_dir();
    let mut last_error = None;
    for _ in 0..8 {
        let path = base.join(format!("pitcrew-home-{}-{:08x}", std::process::id(), fastrand::u32(..)));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Ok(path),
            Err(err) => last_error = Some(err),
        }
    }
    Err(SandboxError::Backend(format!(
        "could not create a HOME under {}: {}",
        base.display(),
        last_error.map(|err| err.to_string()).unwrap_or_default()
    )))
}

/// The allow-list every command starts from. Later entries win: configuration may override.
fn base_env(home: &Path, options: LocalOptions) -> Vec<(OsString, OsString)> {
    let path = options
        .path
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_else(|| FALLBACK_PATH.into());
    let mut env: Vec<(OsString, OsString)> = vec![("PATH".into(), path), ("HOME".into(), home.into())];
    env.extend(super::COMMAND_ENV.iter().map(|(k, v)| ((*k).into(), (*v).into())));
    if let Some(cargo_home) = options.cargo_home {
        env.push(("CARGO_HOME".into(), cargo_home.into()));
    }
    if let Some(rustup_home) = options.rustup_home {
        env.push(("RUSTUP_HOME".into(), rustup_home.into()));
    }
    env.extend(options.env.into_iter().map(|(k, v)| (k.into(), v.into())));
    env
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn session() -> (tempfile::TempDir, LocalSession) {
        let dir = tempfile::tempdir().unwrap();
        let session = LocalSession::start(dir.path(), LocalOptions::default()).unwrap();
        (dir, session)
    }

    fn request(command: &str) -> ExecRequest {
        ExecRequest::new(command, Duration::from_secs(10))
    }

    fn quick(command: &str) -> ExecRequest {
        ExecRequest::new(command, Duration::from_secs(1))
    }

    /// Whether a process is still alive (a zombie counts as gone).
    fn alive(pid: i32) -> bool {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The state follows the parenthesised command name.
        match state.rsplit_once(')') {
            Some((_, rest)) => !rest.trim_start().starts_with(['Z', 'X']),
            None => false,
        }
    }

    /// The pids the command wrote to `pids`, one a line.
    fn pids(dir: &Path) -> Vec<i32> {
        let text = std::fs::read_to_string(dir.join("pids")).unwrap();
        text.lines().map(|line| line.trim().parse().unwrap()).collect()
    }

    async fn assert_all_gone(pids: &[i32]) {
        assert!(!pids.is_empty());
        // SIGKILL is asynchronous: give the kernel a moment to finish the processes.
        for _ in 0..50 {
            if !pids.iter().any(|pid| alive(*pid)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let left: Vec<_> = pids.iter().filter(|pid| alive(**pid)).collect();
        panic!("processes left behind: {left:?}");
    }

    #[tokio::test]
    async fn exit_codes_and_streams_are_reported_apart() {
        let (_dir, session) = session();
        let out = session.exec(request("echo out; echo err >&2; exit 3")).await.unwrap();
        assert_eq!(out.exit_code, Some(3));
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr, "err\n");
        assert_eq!((out.stdout_bytes, out.stderr_bytes), (4, 4));
        assert!(!out.truncated && !out.timed_out);
        assert_eq!(session.exec(request("true")).await.unwrap().exit_code, Some(0));
        assert_eq!(session.describe(), "local (unsandboxed)");
    }

    #[tokio::test]
    async fn commands_run_in_the_workspace_and_cwd_cannot_escape() {
        let (dir, session) = session();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let root = dir.path().canonicalize().unwrap();
        let out = session.exec(request("pwd")).await.unwrap();
        assert_eq!(out.stdout.trim(), root.to_str().unwrap());
        let mut sub = request("pwd");
        sub.cwd = Some("sub/../sub".into());
        assert_eq!(
            session.exec(sub).await.unwrap().stdout.trim(),
            root.join("sub").to_str().unwrap()
        );

        for cwd in ["..", "sub/../..", "/tmp"] {
            let mut req = request("pwd");
            req.cwd = Some(cwd.into());
            let err = session.exec(req).await.unwrap_err();
            assert!(
                matches!(&err, SandboxError::Spawn(m) if m.contains("outside the workspace")),
                "{cwd}: {err}"
            );
        }
        std::os::unix::fs::symlink("/", dir.path().join("root")).unwrap();
        let mut req = request("pwd");
        req.cwd = Some("root".into());
        assert!(matches!(session.exec(req).await.unwrap_err(), SandboxError::Spawn(m) if m.contains("outside")));
    }

    #[tokio::test]
    async fn the_environment_is_an_allow_list() {
        let dir = tempfile::tempdir().unwrap();
        let options = LocalOptions {
            env: vec![("FROM_CONFIG".into(), "yes".into())],
            ..LocalOptions::default()
        };
        let session = LocalSession::start(dir.path(), options).unwrap();
        let mut req = request("env | sort; echo HOME=$HOME");
        req.env = vec![("FROM_REQUEST".into(), "also".into())];
        let out = session.exec(req).await.unwrap();
        let names: BTreeSet<&str> = out
            .stdout
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, _)| k)
            .collect();
        let allowed = [
            "PATH",
            "HOME",
            "LANG",
            "CI",
            "PAGER",
            "GIT_PAGER",
            "GIT_TERMINAL_PROMPT",
            "FROM_CONFIG",
            "FROM_REQUEST",
            // Set by sh itself.
            "PWD",
            "OLDPWD",
            "SHLVL",
            "_",
        ];
        for name in &names {
            assert!(allowed.contains(name), "unexpected variable {name} in\n{}", out.stdout);
        }
        assert!(out.stdout.contains("FROM_CONFIG=yes\n") && out.stdout.contains("FROM_REQUEST=also\n"));
        assert!(out.stdout.contains("CI=true\n") && out.stdout.contains("GIT_TERMINAL_PROMPT=0\n"));
        let home = session.home().to_str().unwrap();
        assert!(out.stdout.contains(&format!("HOME={home}\n")));
        if let Some(real) = std::env::var_os("HOME") {
            assert_ne!(Path::new(home), Path::new(&real));
        }
        assert!(session.home().is_dir());
        session.stop().await.unwrap();
        assert!(!session.home().exists());
        assert_eq!(session.exec(request("true")).await.unwrap_err(), SandboxError::Stopped);
    }

    /// Runs `test` again, alone in a fresh test process with `var` set, and checks that it passed.
    /// Returns whether this is that fresh process, which does the real work.
    fn rerun_alone(test: &str, var: &str, value: &str) -> bool {
        if std::env::var_os(var).is_some() {
            return true;
        }
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([test, "--exact", "--test-threads=1"])
            .env(var, value)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success() && stdout.contains("1 passed"), "{stdout}");
        false
    }

    /// `set_var` is `unsafe` (and unsafe code is forbidden), so the secret is set for a fresh run.
    #[tokio::test]
    async fn host_secrets_are_not_inherited() {
        if !rerun_alone(
            "sandbox::local::tests::host_secrets_are_not_inherited",
            "PITCREW_TEST_SECRET",
            "x",
        ) {
            return;
        }
        let (_dir, session) = session();
        let out = session
            .exec(request("echo \"[$PITCREW_TEST_SECRET]\"; env"))
            .await
            .unwrap();
        assert!(out.stdout.starts_with("[]\n"), "{}", out.stdout);
        assert!(!out.stdout.contains("PITCREW_TEST_SECRET"));
    }

    /// A workspace with a `.git` directory.
    fn shared_workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.txt"), "a\n").unwrap();
        dir
    }

    const USER: SandboxUser = SandboxUser {
        uid: SANDBOX_UID,
        gid: SANDBOX_UID,
    };

    /// Only root can run commands as another user; elsewhere there is nothing to check.
    #[tokio::test]
    async fn as_root_commands_run_as_the_sandbox_user_with_no_groups_and_a_read_only_git_dir() {
        if !Uid::effective().is_root() {
            return;
        }
        assert_eq!(SandboxUser::for_policy(crate::config::LocalUser::Current), None);
        assert!(SandboxUser::for_policy(crate::config::LocalUser::Auto).is_some());
        let dir = shared_workspace();
        let options = LocalOptions {
            user: Some(USER),
            ..LocalOptions::default()
        };
        let session = LocalSession::start(dir.path(), options).unwrap();
        // What pitcrew's own tools write after the start stays writable by commands.
        std::fs::write(dir.path().join("src/by-pitcrew.txt"), "p\n").unwrap();
        let script = "id -u; id -g; grep '^Groups:' /proc/self/status; \
                      echo b >> src/a.txt; echo a=$?; echo p >> src/by-pitcrew.txt; echo p=$?; \
                      mkdir -p new/dir && touch new/dir/f; echo new=$?; touch \"$HOME/h\"; echo home=$?; \
                      echo x > .git/HEAD 2>/dev/null; echo git=$?; touch .git/new 2>/dev/null; echo gitnew=$?; \
                      cat /proc/$PPID/environ > /dev/null 2>&1; echo environ=$?; git status > /dev/null 2>&1; \
                      ls /root > /dev/null 2>&1; echo root=$?";
        let out = session.exec(request(script)).await.unwrap();
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines[..2], ["65532", "65532"], "{}\n{}", out.stdout, out.stderr);
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            ["Groups:"],
            "no supplementary groups"
        );
        assert_eq!(
            lines[3..],
            [
                "a=0",
                "p=0",
                "new=0",
                "home=0",
                "git=2",
                "gitnew=1",
                "environ=1",
                "root=2"
            ],
            "{}",
            out.stderr
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".git/HEAD")).unwrap(),
            "ref: refs/heads/main\n"
        );
        session.stop().await.unwrap();
    }

    #[tokio::test]
    async fn as_root_a_working_copy_the_sandbox_user_cannot_reach_is_refused_clearly() {
        if !Uid::effective().is_root() {
            return;
        }
        use std::os::unix::fs::PermissionsExt as _;
        let private = tempfile::tempdir().unwrap();
        std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::create_dir(private.path().join("copy")).unwrap();
        let options = LocalOptions {
            user: Some(USER),
            ..LocalOptions::default()
        };
        let err = LocalSession::start(&private.path().join("copy"), options).unwrap_err();
        assert!(
            matches!(&err, SandboxError::Backend(m) if m.contains("cannot reach the working copy") && m.contains("local_user")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_group() {
        let (dir, session) = session();
        let out = session
            .exec(quick("sleep 100 & echo $! > pids; echo $$ >> pids; sleep 100"))
            .await
            .unwrap();
        assert!(out.timed_out);
        assert_eq!(out.exit_code, None);
        assert!(out.duration < Duration::from_secs(5), "{:?}", out.duration);
        assert_all_gone(&pids(dir.path())).await;
    }

    #[tokio::test]
    async fn background_children_do_not_hold_exec() {
        let (dir, session) = session();
        let out = session
            .exec(request("sleep 100 & echo $! > pids; echo done"))
            .await
            .unwrap();
        // Had the child kept the pipes open, exec would have waited out the drain timeout.
        assert!(out.duration < DRAIN_TIMEOUT, "{:?}", out.duration);
        assert_eq!(
            (out.exit_code, out.stdout.as_str(), out.timed_out),
            (Some(0), "done\n", false)
        );
        assert_all_gone(&pids(dir.path())).await;
    }

    #[tokio::test]
    async fn a_burst_of_processes_leaves_nothing_behind() {
        let (dir, session) = session();
        let out = session
            .exec(quick("for i in $(seq 50); do sleep 30 & echo $! >> pids; done; wait"))
            .await
            .unwrap();
        assert!(out.timed_out);
        let pids = pids(dir.path());
        assert_eq!(pids.len(), 50);
        assert_all_gone(&pids).await;
    }

    /// Alone in its process, so that the peak memory it checks is its own.
    #[tokio::test]
    async fn huge_output_keeps_head_and_tail() {
        if !rerun_alone(
            "sandbox::local::tests::huge_output_keeps_head_and_tail",
            "PITCREW_TEST_ALONE",
            "1",
        ) {
            return;
        }
        let (_dir, session) = session();
        let mut req = request("printf start; head -c 50000000 /dev/zero | tr '\\0' a; printf end");
        req.output_limit = 1000;
        let out = session.exec(req).await.unwrap();
        assert_eq!(out.exit_code, Some(0));
        assert_eq!(out.stdout_bytes, 50_000_008);
        assert!(out.truncated);
        let expected = format!(
            "start{}\n[… 49,999,008 bytes omitted …]\n{}end",
            "a".repeat(495),
            "a".repeat(497)
        );
        assert_eq!(out.stdout, expected);
        assert_eq!(out.stderr_bytes, 0);
        // Peak resident memory of this test process stays far below the 50 MB written.
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let peak_kb: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        assert!(peak_kb < 40_000, "peak RSS {peak_kb} kB");
    }

    #[tokio::test]
    async fn binary_output_decodes() {
        let (_dir, session) = session();
        let out = session
            .exec(request("head -c 1000 /dev/urandom; printf 'a\\000b' >&2"))
            .await
            .unwrap();
        assert_eq!(out.stdout_bytes, 1000);
        assert!(!out.truncated);
        assert!(!out.stdout.contains('\0'));
        assert_eq!(out.stderr, "a\u{FFFD}b");
    }

    #[tokio::test]
    async fn dropping_exec_kills_the_command() {
        let (dir, session) = session();
        let cancel = tokio_util::sync::CancellationToken::new();
        let exec = session.exec(request("sleep 100 & echo $! > pids; echo $$ >> pids; sleep 100"));
        let trigger = cancel.clone();
        let wait_for_pids = async {
            while !dir.path().join("pids").exists() || pids(dir.path()).len() < 2 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            trigger.cancel();
        };
        let run = async {
            tokio::select! {
                out = exec => Some(out),
                () = cancel.cancelled() => None,
            }
        };
        let (result, ()) = tokio::join!(run, wait_for_pids);
        assert!(result.is_none());
        assert_all_gone(&pids(dir.path())).await;
        assert!(session.state().groups.is_empty());
    }

    #[tokio::test]
    async fn stop_kills_running_commands() {
        let (dir, session) = session();
        let exec = session.exec(request("sleep 100 & echo $! > pids; echo $$ >> pids; sleep 100"));
        let stop = async {
            while !dir.path().join("pids").exists() || pids(dir.path()).len() < 2 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            session.stop().await
        };
        let started = Instant::now();
        let (result, stopped) = tokio::join!(exec, stop);
        stopped.unwrap();
        assert_eq!(result.unwrap_err(), SandboxError::Stopped);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_all_gone(&pids(dir.path())).await;
    }
}
