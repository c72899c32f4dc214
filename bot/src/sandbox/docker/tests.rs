//! Tests of the Docker backend against a real engine, on a `FROM scratch` image holding the host's
//! static busybox. Without an engine they are skipped, loudly; `PITCREW_REQUIRE_DOCKER=1` makes
//! that a failure (CI has an engine).

use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use bollard::query_parameters::{BuildImageOptionsBuilder, ListContainersOptionsBuilder};
use tokio_util::sync::CancellationToken;

use super::shell::{Prepared, Scan, shell_command};
use super::*;
use crate::sandbox::{ExecOutput, ExecRequest};
use tokio::time::Instant;

/// Built once per test run from the host's `/bin/busybox` (Debian's `busybox-static`).
const TEST_IMAGE: &str = "pitcrew-test-busybox:1";
const BUSYBOX: &str = "/bin/busybox";
/// A user that owns the workspace when the tests run as root, so that "runs as the owner" shows.
const OWNER: u32 = 4242;

/// The engine, or `None` (with a loud message) when there is none and none is required.
#[expect(clippy::print_stderr, reason = "a skipped test must say so")]
async fn engine() -> Option<DockerSandbox> {
    let required = std::env::var_os("PITCREW_REQUIRE_DOCKER").is_some_and(|v| v == "1");
    let why = match DockerSandbox::connect().await {
        Ok(sandbox) if Path::new(BUSYBOX).exists() => return Some(sandbox),
        Ok(_) => format!("{BUSYBOX} is missing (apt-get install busybox-static)"),
        Err(err) => err.to_string(),
    };
    assert!(!required, "PITCREW_REQUIRE_DOCKER=1, but: {why}");
    eprintln!("SKIPPED: this test needs a Docker engine: {why}");
    None
}

/// Builds the test image unless it exists; a file lock keeps parallel test processes from
/// building it at once.
async fn test_image(sandbox: &DockerSandbox) -> String {
    let lock_path = std::env::temp_dir().join("pitcrew-test-busybox.lock");
    let file = File::create(&lock_path).unwrap();
    let lock = tokio::task::spawn_blocking(move || {
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).map_err(|(_, errno)| errno)
    })
    .await
    .unwrap()
    .unwrap();
    let docker = sandbox.client();
    if docker.inspect_image(TEST_IMAGE).await.is_err() {
        let mut tar = tar::Builder::new(Vec::new());
        let dockerfile =
            b"FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n";
        let mut header = tar::Header::new_gnu();
        header.set_size(dockerfile.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, "Dockerfile", &dockerfile[..]).unwrap();
        tar.append_path_with_name(BUSYBOX, "busybox").unwrap();
        let context = tar.into_inner().unwrap();
        let options = BuildImageOptionsBuilder::default().t(TEST_IMAGE).rm(true).build();
        let mut build = docker.build_image(options, None, Some(bollard::body_full(context.into())));
        while let Some(step) = build.next().await {
            let step = step.unwrap();
            assert!(step.error_detail.is_none(), "building {TEST_IMAGE}: {step:?}");
        }
    }
    drop(lock);
    TEST_IMAGE.to_owned()
}

/// A job id no other test (or test process) uses.
fn job_id(test: &str) -> String {
    format!("test-{test}-{}-{:06x}", std::process::id(), fastrand::u32(..0xFF_FFFF))
}

/// A workspace with a `.git` directory, owned by `OWNER` when we are root.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    if nix::unistd::geteuid().is_root() {
        for path in [
            dir.path(),
            &dir.path().join(".git"),
            &dir.path().join(".git/HEAD"),
            &dir.path().join("sub"),
        ] {
            std::os::unix::fs::chown(path, Some(OWNER), Some(OWNER)).unwrap();
        }
    }
    dir
}

/// Who the sandbox runs as for a workspace made by `workspace()`: the fixed unprivileged user when
/// the tests run as root, else the workspace's owner (this process's user).
fn sandbox_user(dir: &Path) -> u32 {
    if nix::unistd::geteuid().is_root() {
        crate::sandbox::owner::SANDBOX_UID
    } else {
        std::fs::metadata(dir).unwrap().uid()
    }
}

/// The containers labelled with `job`.
async fn containers_of(sandbox: &DockerSandbox, job: &str) -> Vec<String> {
    let filters = HashMap::from([("label", vec![format!("{LABEL_JOB}={job}")])]);
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    let containers = sandbox.client().list_containers(Some(options)).await.unwrap();
    containers.into_iter().filter_map(|c| c.id).collect()
}

/// Waits (a little) for the job's containers to be gone; false if some remain.
async fn gone(sandbox: &DockerSandbox, job: &str) -> bool {
    for _ in 0..100 {
        if containers_of(sandbox, job).await.is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Removes the job's containers when the test ends, even by a panic (from a thread of its own:
/// the test's runtime may be going away).
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let job = self.0.clone();
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let Ok(sandbox) = DockerSandbox::connect().await else {
                    return;
                };
                for id in containers_of(&sandbox, &job).await {
                    let _ = remove_container(sandbox.client(), &id).await;
                }
            });
        })
        .join();
    }
}

/// A started container for `test`, with its workspace and cleanup guard.
async fn start(
    sandbox: &DockerSandbox,
    test: &str,
    configure: impl FnOnce(&mut DockerSpec),
) -> (DockerSession, tempfile::TempDir, Cleanup) {
    let image = test_image(sandbox).await;
    let dir = workspace();
    let job = job_id(test);
    let cleanup = Cleanup(job.clone());
    let mut spec = DockerSpec::new(&job, image, dir.path());
    configure(&mut spec);
    let session = sandbox.start(spec).await.unwrap();
    (session, dir, cleanup)
}

fn request(command: &str) -> ExecRequest {
    ExecRequest::new(command, Duration::from_secs(20))
}

async fn run(session: &DockerSession, command: &str) -> ExecOutput {
    session.exec(request(command)).await.unwrap()
}

/// A port on every address of the host that accepts connections (and closes them at once).
async fn host_listener() -> u16 {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((connection, _)) = listener.accept().await {
            drop(connection);
        }
    });
    port
}

/// The address of the host on Docker's default bridge.
async fn bridge_gateway(sandbox: &DockerSandbox) -> String {
    let network = sandbox.client().inspect_network("bridge", None).await.unwrap();
    network
        .ipam
        .and_then(|ipam| ipam.config)
        .and_then(|configs| configs.into_iter().find_map(|config| config.gateway))
        .unwrap_or_else(|| "172.17.0.1".to_owned())
}

#[tokio::test]
async fn commands_run_in_a_persistent_shell() {
    let Some(sandbox) = engine().await else { return };
    let (session, dir, _cleanup) = start(&sandbox, "shell", |_| {}).await;
    assert_eq!(session.describe(), format!("docker {TEST_IMAGE} (network none)"));
    assert_eq!(session.workspace(), dir.path().canonicalize().unwrap());

    // Exit codes and streams, apart and exact.
    let out = run(&session, "echo out; echo err >&2; exit_code() { return 3; }; exit_code").await;
    assert_eq!(
        (out.exit_code, out.stdout.as_str(), out.stderr.as_str()),
        (Some(3), "out\n", "err\n")
    );
    assert_eq!((out.stdout_bytes, out.stderr_bytes), (4, 4));
    assert!(!out.truncated && !out.timed_out && !out.oom_killed);
    let out = run(&session, "printf 'no newline'").await;
    assert_eq!(
        (out.exit_code, out.stdout.as_str(), out.stderr.as_str()),
        (Some(0), "no newline", "")
    );
    let out = run(&session, "printf 'two\\n\\n'; false").await;
    assert_eq!((out.exit_code, out.stdout.as_str()), (Some(1), "two\n\n"));
    let out = run(&session, "echo \"it's\" '$HOME' \"$HOME\"").await;
    assert_eq!(out.stdout, "it's $HOME /tmp\n");

    // State persists like a terminal's.
    run(
        &session,
        "cd sub && export GREETING=hello && greet() { echo \"$GREETING from $(pwd)\"; }",
    )
    .await;
    let out = run(&session, "greet").await;
    assert_eq!(out.stdout, "hello from /workspace/sub\n");
    // Here-documents and comments work; shell options do not persist.
    assert_eq!(
        run(&session, "cat <<EOF\n$GREETING\nEOF\n# done").await.stdout,
        "hello\n"
    );
    run(&session, "set -eu").await;
    assert_eq!(run(&session, "false; echo \"still$UNSET\"").await.stdout, "still\n");
    // A command's stdin is /dev/null, never the session's commands.
    let out = run(&session, "cat; echo read:$?").await;
    assert_eq!(out.stdout, "read:0\n");
    // Redirecting the shell's own streams lasts for the command only.
    let out = run(&session, "exec >/tmp/elsewhere 2>&1; echo hidden").await;
    assert_eq!(out.stdout, "");
    assert_eq!(run(&session, "echo back").await.stdout, "back\n");

    // A syntax error fails the command, not the session.
    let out = run(&session, "if then fi (").await;
    assert_eq!(out.exit_code, Some(2), "{out:?}");
    assert!(out.stderr.contains("syntax error"), "{}", out.stderr);
    assert_eq!(run(&session, "pwd").await.stdout, "/workspace/sub\n");

    // A working directory for one call, in a subshell; escapes refused.
    let mut req = request("pwd; cd /; echo $ONE_CALL");
    req.cwd = Some("../sub/.".into());
    req.env = vec![("ONE_CALL".into(), "x y".into())];
    let err = session.exec(req.clone()).await.unwrap_err();
    assert!(
        matches!(&err, SandboxError::Spawn(m) if m.contains("outside the workspace")),
        "{err}"
    );
    req.cwd = Some("sub/.".into());
    let out = session.exec(req).await.unwrap();
    assert_eq!(out.stdout, "/workspace/sub\nx y\n");
    assert_eq!(
        run(&session, "pwd; echo \"[$ONE_CALL]\"").await.stdout,
        "/workspace/sub\n[]\n"
    );
    std::os::unix::fs::symlink("/", dir.path().join("root")).unwrap();
    let mut req = request("pwd");
    req.cwd = Some("root".into());
    assert!(matches!(session.exec(req).await.unwrap_err(), SandboxError::Spawn(m) if m.contains("outside")));

    // Binary output decodes; NULs are replaced.
    let out = run(&session, "head -c 1000 /dev/urandom; printf 'a\\000b' >&2").await;
    assert_eq!((out.stdout_bytes, out.stderr.as_str()), (1000, "a\u{FFFD}b"));
    assert!(!out.stdout.contains('\0'));

    // `exit` ends the shell: reported, and the next command gets a fresh one.
    let out = run(&session, "echo bye; exit 7").await;
    assert_eq!((out.exit_code, out.stdout.as_str()), (Some(7), "bye\n"));
    assert!(out.stderr.contains("the shell exited"), "{}", out.stderr);
    let out = run(&session, "pwd; echo \"[$GREETING]\"").await;
    assert_eq!(out.stdout, "/workspace\n[]\n");
    assert_eq!(out.stderr, "");

    session.stop().await.unwrap();
    assert_eq!(session.exec(request("true")).await.unwrap_err(), SandboxError::Stopped);
}

/// How many `sleep` processes the container has (the keep-alive is one), once what a killed command
/// left has gone: a killed process shows until docker-init reaps it, so this waits up to 5 s for the
/// count to come down to 1 before printing it.
const SLEEPS_LEFT: &str = "for _ in $(seq 100); do [ \"$(ps -o comm | grep -c sleep)\" = 1 ] && break; sleep 0.05; done; \
                           ps -o comm | grep -c sleep";

#[tokio::test]
async fn a_timeout_kills_the_command_not_the_session() {
    let Some(sandbox) = engine().await else { return };
    let (session, _dir, _cleanup) = start(&sandbox, "timeout", |_| {}).await;
    run(&session, "cd sub; export KEPT=yes").await;
    let mut req = ExecRequest::new("echo started; sleep 1000 & sleep 1000", Duration::from_secs(1));
    req.output_limit = 1024;
    let out = session.exec(req).await.unwrap();
    assert!(out.timed_out);
    assert_eq!(out.exit_code, None);
    assert_eq!(out.stdout, "started\n");
    assert!(out.duration < Duration::from_secs(4), "{:?}", out.duration);
    // The session goes on where it was, and nothing of the command is left.
    let out = run(&session, &format!("pwd; echo $KEPT; {SLEEPS_LEFT}")).await;
    assert_eq!(out.stdout, "/workspace/sub\nyes\n1\n", "{out:?}");

    // Background processes do not outlive their command, nor write into the next one's output.
    let out = run(&session, "(sleep 0.5; echo late) & echo now").await;
    assert_eq!(out.stdout, "now\n");
    tokio::time::sleep(Duration::from_millis(800)).await;
    let out = run(&session, &format!("echo next; {SLEEPS_LEFT}")).await;
    assert_eq!(out.stdout, "next\n1\n");

    // A loop of builtins runs in the shell itself: the shell is killed and replaced.
    let out = session
        .exec(ExecRequest::new("while :; do :; done", Duration::from_millis(500)))
        .await
        .unwrap();
    assert!(out.timed_out);
    assert!(out.stderr.contains("was killed"), "{}", out.stderr);
    assert_eq!(run(&session, "pwd; echo \"[$KEPT]\"").await.stdout, "/workspace\n[]\n");

    // The per-command mode times out too.
    let out = session
        .exec_per_command(ExecRequest::new("echo once; sleep 1000", Duration::from_millis(500)))
        .await
        .unwrap();
    assert!(out.timed_out);
    assert_eq!(out.stdout, "once\n");
    assert_eq!(run(&session, SLEEPS_LEFT).await.stdout, "1\n");
}

#[tokio::test]
async fn output_is_capped_to_head_and_tail() {
    let Some(sandbox) = engine().await else { return };
    let (session, _dir, _cleanup) = start(&sandbox, "output", |_| {}).await;
    for per_command in [false, true] {
        let mut req = request("printf start; head -c 5000000 /dev/zero | tr '\\0' a; printf end; echo warn >&2");
        req.output_limit = 1000;
        let out = if per_command {
            session.exec_per_command(req).await.unwrap()
        } else {
            session.exec(req).await.unwrap()
        };
        assert_eq!(out.exit_code, Some(0));
        assert_eq!(out.stdout_bytes, 5_000_008);
        assert!(out.truncated);
        let expected = format!(
            "start{}\n[… 4,999,008 bytes omitted …]\n{}end",
            "a".repeat(495),
            "a".repeat(497)
        );
        assert_eq!(out.stdout, expected);
        assert_eq!(out.stderr, "warn\n");
    }
}

#[tokio::test]
async fn the_container_is_isolated() {
    let Some(sandbox) = engine().await else { return };
    let port = host_listener().await;
    let gateway = bridge_gateway(&sandbox).await;
    let (session, dir, _cleanup) = start(&sandbox, "isolation", |spec| {
        spec.env = vec![("FROM_CONFIG".into(), "yes".into())];
    })
    .await;

    // Network: loopback only, and the host is out of reach.
    let out = run(&session, "ls /sys/class/net").await;
    assert_eq!(out.stdout, "lo\n");
    let out = run(&session, &format!("nc -w 2 {gateway} {port} </dev/null; echo rc=$?")).await;
    assert!(out.stdout.ends_with("rc=1\n"), "{out:?}");

    // Environment: the allow-list, not the host's.
    let out = run(&session, "env | sort").await;
    let names: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, _)| k)
        .collect();
    let allowed = [
        "HOME",
        "LANG",
        "CI",
        "PAGER",
        "GIT_PAGER",
        "GIT_TERMINAL_PROMPT",
        "FROM_CONFIG",
        // From the image and the engine.
        "PATH",
        "HOSTNAME", // Set by sh itself.
        "PWD",
        "OLDPWD",
        "SHLVL",
        "_",
    ];
    for name in &names {
        assert!(allowed.contains(name), "unexpected variable {name} in\n{}", out.stdout);
    }
    assert!(
        out.stdout.contains("FROM_CONFIG=yes\nGIT_PAGER=cat\n"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("HOME=/tmp\n") && out.stdout.contains("CI=true\n"));
    // Variables of this (host) process are not there: the allow-list above holds none of them.
    assert!(std::env::vars().any(|(name, _)| !allowed.contains(&name.as_str())));
    let out = run(&session, "echo \"$PATH\"").await;
    assert_ne!(out.stdout.trim(), std::env::var("PATH").unwrap());

    // Files: `.git` is read-only, the rest is written as the workspace's owner.
    let out = run(&session, "echo x > .git/HEAD; echo rc=$?; touch .git/new; echo rc=$?").await;
    assert_eq!(out.stdout, "rc=1\nrc=1\n", "{out:?}");
    assert!(out.stderr.contains("Read-only file system"), "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".git/HEAD")).unwrap(),
        "ref: refs/heads/main\n"
    );
    let out = run(
        &session,
        "echo made > sub/made; id -u; touch /tmp/x && echo tmp ok; touch /x; echo rc=$?",
    )
    .await;
    let user = sandbox_user(dir.path());
    assert!(out.stdout.starts_with(&format!("{user}\ntmp ok\nrc=1\n")), "{out:?}");
    let made = dir.path().join("sub/made");
    assert_eq!(std::fs::read_to_string(&made).unwrap(), "made\n");
    assert_eq!(std::fs::metadata(&made).unwrap().uid(), user);

    // No capabilities, no privilege escalation, limits in place.
    let out = run(
        &session,
        "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; cat /sys/fs/cgroup/pids/pids.max",
    )
    .await;
    assert!(out.stdout.contains("CapEff:\t0000000000000000\n"), "{}", out.stdout);
    assert!(out.stdout.contains("NoNewPrivs:\t1\n"), "{}", out.stdout);
    let inspect = sandbox
        .client()
        .inspect_container(session.container(), None)
        .await
        .unwrap();
    let host = inspect.host_config.unwrap();
    assert_eq!((host.memory, host.memory_swap), (Some(4 << 30), Some(4 << 30)));
    assert_eq!((host.nano_cpus, host.pids_limit), (Some(2_000_000_000), Some(512)));
    assert_eq!(host.network_mode.as_deref(), Some("none"));
    let mounts = inspect.mounts.unwrap();
    let mounts: Vec<_> = mounts
        .iter()
        .map(|m| (m.destination.as_deref().unwrap(), m.rw.unwrap()))
        .collect();
    assert_eq!(mounts.len(), 2, "{mounts:?}");
    assert!(mounts.contains(&("/workspace", true)) && mounts.contains(&("/workspace/.git", false)));
    assert!(host.tmpfs.unwrap().contains_key("/tmp"));
}

#[tokio::test]
async fn setup_runs_with_network_then_the_network_is_cut() {
    let Some(sandbox) = engine().await else { return };
    let port = host_listener().await;
    let gateway = bridge_gateway(&sandbox).await;
    let (session, dir, _cleanup) = start(&sandbox, "setup", |spec| {
        spec.setup = Some(format!("nc -w 5 {gateway} {port} </dev/null && echo reached > reached"));
        spec.setup_network = true;
    })
    .await;
    // The setup reached the host...
    assert_eq!(
        std::fs::read_to_string(dir.path().join("reached")).unwrap(),
        "reached\n"
    );
    assert_eq!(session.describe(), format!("docker {TEST_IMAGE} (network none)"));
    // ...and the commands cannot.
    assert_eq!(run(&session, "ls /sys/class/net").await.stdout, "lo\n");
    let out = run(&session, &format!("nc -w 2 {gateway} {port} </dev/null; echo rc=$?")).await;
    assert!(out.stdout.ends_with("rc=1\n"), "{out:?}");
    session.stop().await.unwrap();

    // A failing setup is an error with its output, and leaves no container.
    let image = test_image(&sandbox).await;
    let job = job_id("setup-fails");
    let _cleanup = Cleanup(job.clone());
    let mut spec = DockerSpec::new(&job, image, dir.path());
    spec.setup = Some("echo preparing; echo 'no such tool' >&2; exit 4".to_owned());
    let err = sandbox.start(spec).await.unwrap_err().to_string();
    assert!(err.contains("the sandbox setup script failed (exit code 4)"), "{err}");
    assert!(err.contains("preparing") && err.contains("no such tool"), "{err}");
    assert!(gone(&sandbox, &job).await);
}

#[tokio::test]
async fn memory_exhaustion_is_reported_as_oom() {
    let Some(sandbox) = engine().await else { return };
    let (session, _dir, _cleanup) = start(&sandbox, "oom", |spec| spec.memory_bytes = 64 << 20).await;
    let out = run(&session, "dd if=/dev/zero of=/dev/null bs=200M count=1").await;
    assert!(out.oom_killed, "{out:?}");
    assert_eq!(out.exit_code, Some(137), "{out:?}");
    // The session survives, and the next command is not blamed.
    let out = run(&session, "echo fine").await;
    assert_eq!((out.stdout.as_str(), out.oom_killed), ("fine\n", false));
    let out = session
        .exec_per_command(request("dd if=/dev/zero of=/dev/null bs=200M count=1"))
        .await
        .unwrap();
    assert!(out.oom_killed, "{out:?}");
    assert!(!run(&session, "true").await.oom_killed);
}

#[tokio::test]
async fn a_fork_bomb_is_contained() {
    let Some(sandbox) = engine().await else { return };
    let (session, _dir, _cleanup) = start(&sandbox, "forkbomb", |spec| spec.pids_limit = 64).await;
    run(&session, "cd sub").await;
    let bomb = ExecRequest::new("bomb() { bomb | bomb & }; bomb; sleep 3", Duration::from_secs(2));
    let out = session.exec(bomb).await.unwrap();
    assert!(out.duration < Duration::from_secs(10), "{:?}", out.duration);
    // Contained: the session works, can fork again, and nothing of the bomb is left. The bomb's
    // last processes go as docker-init reaps them, and until then a fork may still fail: look
    // again (for at most 5 s) until it has.
    let probe = "pwd; ls /proc | grep -c '^[0-9]'; cat /sys/fs/cgroup/pids/pids.max";
    // init, keep-alive, shell, ls, grep (and cat, maybe).
    let settled = |out: &ExecOutput| {
        let lines: Vec<&str> = out.stdout.lines().collect();
        lines.len() == 3 && lines[1].parse::<u32>().is_ok_and(|n| n <= 6)
    };
    let mut out = run(&session, probe).await;
    for _ in 0..100 {
        if settled(&out) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        out = run(&session, probe).await;
    }
    assert!(settled(&out), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!((lines[0], lines[2]), ("/workspace/sub", "64"), "{out:?}");

    // A timeout while the bomb holds every PID: the killer's `docker exec` still gets in. The
    // shell itself loops (builtins, no fork), so after the bomb it is killed and replaced too.
    let bomb = "bomb() { bomb | bomb & }; bomb; while :; do :; done";
    let out = session
        .exec(ExecRequest::new(bomb, Duration::from_secs(2)))
        .await
        .unwrap();
    assert!(out.timed_out, "{out:?}");
    assert!(out.stderr.contains("was killed"), "{}", out.stderr);
    let out = run(&session, "pwd; ls /proc | grep -c '^[0-9]'").await;
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "/workspace", "{out:?}");
    assert!(lines[1].parse::<u32>().unwrap() <= 6, "{out:?}");
}

#[tokio::test]
async fn containers_are_removed_however_sessions_end() {
    let Some(sandbox) = engine().await else { return };

    // stop()
    let (session, _dir, cleanup) = start(&sandbox, "stop", |_| {}).await;
    assert_eq!(containers_of(&sandbox, &cleanup.0).await.len(), 1);
    session.stop().await.unwrap();
    session.stop().await.unwrap();
    assert!(gone(&sandbox, &cleanup.0).await);
    drop(session);

    // A command cancelled mid-way: killed, and the session goes on; then the session dropped.
    let (session, _dir, cleanup) = start(&sandbox, "cancel", |_| {}).await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        trigger.cancel();
    });
    tokio::select! {
        out = session.exec(request("sleep 1000 & sleep 1000")) => panic!("not cancelled: {out:?}"),
        () = cancel.cancelled() => {}
    }
    let out = run(&session, SLEEPS_LEFT).await;
    assert_eq!(out.stdout, "1\n", "{out:?}");
    let exec = session.exec(request("sleep 1000"));
    let _ = tokio::time::timeout(Duration::from_millis(300), exec).await;
    drop(session);
    assert!(gone(&sandbox, &cleanup.0).await);

    // A failing command does not leak the container either.
    let (session, _dir, cleanup) = start(&sandbox, "failure", |_| {}).await;
    assert_eq!(run(&session, "exit 1").await.exit_code, Some(1));
    session.stop().await.unwrap();
    assert!(gone(&sandbox, &cleanup.0).await);

    // stop() during a command ends it.
    let (session, _dir, cleanup) = start(&sandbox, "stop-running", |_| {}).await;
    let began = Instant::now();
    let stop = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        session.stop().await
    };
    let (result, stopped) = tokio::join!(session.exec(request("sleep 1000")), stop);
    stopped.unwrap();
    assert_eq!(result.unwrap_err(), SandboxError::Stopped);
    assert!(began.elapsed() < Duration::from_secs(10), "{:?}", began.elapsed());
    assert!(gone(&sandbox, &cleanup.0).await);

    // A crash: the session is never stopped nor dropped; start-up reaps the container, but not
    // those of jobs still alive.
    let (crashed, _dir, crashed_cleanup) = start(&sandbox, "crash", |_| {}).await;
    let (alive, _dir2, alive_cleanup) = start(&sandbox, "alive", |_| {}).await;
    std::mem::forget(crashed);
    // Other tests' containers come and go meanwhile: reap only this test's jobs (the keep set of a
    // real start-up is the job store's), with the same filter `reap_orphans` applies.
    let keep = HashSet::from([alive_cleanup.0.clone()]);
    let mine = |job: Option<&str>| job == Some(crashed_cleanup.0.as_str()) || job == Some(alive_cleanup.0.as_str());
    let removed = sandbox
        .reap_where(|job| mine(job) && job.is_none_or(|job| !keep.contains(job)))
        .await
        .unwrap();
    assert_eq!(removed, 1);
    assert!(gone(&sandbox, &crashed_cleanup.0).await);
    assert_eq!(run(&alive, "echo alive").await.stdout, "alive\n");
    alive.stop().await.unwrap();
    assert!(gone(&sandbox, &alive_cleanup.0).await);
}

#[tokio::test]
async fn engine_errors_are_clear() {
    let Some(sandbox) = engine().await else { return };
    let err = DockerSandbox::connect_to("unix:///nonexistent/docker.sock")
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot reach the Docker engine at unix:///nonexistent/docker.sock: "),
        "{err}"
    );
    let err = sandbox.ensure_image("pitcrew-test-missing:none").await.unwrap_err();
    assert!(
        err.to_string()
            .contains("image `pitcrew-test-missing:none` is not available locally and could not be pulled: "),
        "{err}"
    );
    let dir = workspace();
    let err = sandbox
        .start(DockerSpec::new("bad/id", TEST_IMAGE, dir.path()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("cannot name a container"), "{err}");

    // The container vanishing under a session is a backend error, not a hang.
    let (session, _dir, _cleanup) = start(&sandbox, "vanish", |_| {}).await;
    remove_container(sandbox.client(), session.container()).await.unwrap();
    let err = session.exec(request("true")).await.unwrap_err();
    assert!(matches!(err, SandboxError::Backend(_)), "{err}");
}

#[test]
fn references_split_into_name_and_tag() {
    assert_eq!(split_reference("busybox"), ("busybox", Some("latest")));
    assert_eq!(split_reference("busybox:1.36"), ("busybox", Some("1.36")));
    assert_eq!(
        split_reference("localhost:5000/a/b"),
        ("localhost:5000/a/b", Some("latest"))
    );
    assert_eq!(
        split_reference("localhost:5000/a/b:x"),
        ("localhost:5000/a/b", Some("x"))
    );
    assert_eq!(split_reference("a@sha256:00"), ("a@sha256:00", None));
}

#[test]
fn markers_are_found_across_frames() {
    let nonce = "pitcrew-0123";
    let mut scan = Scan::new(nonce, 1000);
    for frame in ["out\n", "more\n\npitc", "rew-0", "123 0 5", "\n"] {
        scan.push(frame.as_bytes());
    }
    assert_eq!(scan.status.as_deref(), Some("0 5"));
    assert_eq!(scan.capture.into_text(), "out\nmore\n");
    // A near miss is output.
    let mut scan = Scan::new(nonce, 1000);
    scan.push(b"a\npitcrew-01x\n\npitcrew-0123\n");
    assert_eq!(scan.status.as_deref(), Some(""));
    assert_eq!(scan.capture.into_text(), "a\npitcrew-01x\n");
    // Without its marker (the stream ended), everything is output.
    let mut scan = Scan::new(nonce, 1000);
    scan.push(b"x\npitcrew-01");
    scan.flush();
    assert_eq!(scan.capture.into_text(), "x\npitcrew-01");
}

#[test]
fn commands_are_quoted_for_the_shell() {
    let prepared = Prepared {
        command: "echo 'a' \"b\" $c".to_owned(),
        cwd: Some("/workspace/it's".to_owned()),
        env: vec![("A".into(), "1 2".into())],
    };
    let script = shell_command("N", &prepared);
    assert!(
        script.starts_with(
            "{ ( cd '/workspace/it'\\''s' || exit 1; export A='1 2'; command eval 'echo '\\''a'\\'' \"b\" $c' )\n}"
        ),
        "{script}"
    );
    assert!(script.ends_with("__pitcrew_end N \"$__pitcrew_rc\"\n"));
    let env = container_env(&[("CI".into(), "false".into())]);
    assert_eq!(env.last().map(String::as_str), Some("CI=false"));
    assert_eq!(env.iter().filter(|v| v.starts_with("CI=")).count(), 1, "{env:?}");
    assert!(check_env(&[("1A".into(), String::new())]).is_err());
}

#[tokio::test]
async fn the_sandbox_never_runs_as_root_and_the_tree_goes_back_to_its_owner() {
    let Some(sandbox) = engine().await else { return };
    let (session, dir, _cleanup) = start(&sandbox, "owner", |_| {}).await;
    let out = run(
        &session,
        "id -u; id -g; echo made > sub/made; mkdir -p new/deeper && echo x > new/deeper/f",
    )
    .await;
    let user = sandbox_user(dir.path());
    assert_ne!(user, 0);
    let group = if nix::unistd::geteuid().is_root() {
        crate::sandbox::owner::SANDBOX_GID
    } else {
        nix::unistd::getegid().as_raw()
    };
    assert_eq!(out.stdout, format!("{user}\n{group}\n"), "{out:?}");
    if nix::unistd::geteuid().is_root() {
        // pitcrew (root here) is not the sandbox's user, and `.git` was never handed over.
        assert_ne!(user, nix::unistd::geteuid().as_raw());
        assert_eq!(std::fs::metadata(dir.path().join(".git/HEAD")).unwrap().uid(), OWNER);
    }
    session.stop().await.unwrap();
    if nix::unistd::geteuid().is_root() {
        for path in [
            "",
            "sub",
            "sub/made",
            "new",
            "new/deeper",
            "new/deeper/f",
            ".git",
            ".git/HEAD",
        ] {
            let meta = std::fs::symlink_metadata(dir.path().join(path)).unwrap();
            assert_eq!((meta.uid(), meta.gid()), (OWNER, OWNER), "{path}");
        }
    }
}

/// The zombie-leader helper (`testdata/zombie_leader.c`), compiled static for the `FROM scratch`
/// image with the host's gcc and glibc's `libc.a` (libc6-dev), as a repository could commit it.
fn zombie_leader(into: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/sandbox/docker/testdata/zombie_leader.c");
    let output = std::process::Command::new("gcc")
        .args(["-static", "-O2", "-pthread", "-o"])
        .arg(into)
        .arg(&source)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "compiling the helper: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// One line per process of the helper: its state and how many threads it has.
const HELPER_CENSUS: &str = "for p in /proc/[0-9]*; do read -r l <\"$p/stat\" 2>/dev/null || continue; \
    case $l in *'(helper)'*) s=${l##*) }; n=0; for t in \"$p\"/task/[0-9]*; do n=$((n+1)); done; \
    echo \"helper ${s%% *} $n\";; esac; done";

#[tokio::test]
async fn a_process_whose_leader_is_a_zombie_does_not_outlive_its_command() {
    let Some(sandbox) = engine().await else { return };
    let (session, dir, _cleanup) = start(&sandbox, "zombie", |_| {}).await;
    zombie_leader(&dir.path().join("helper"));
    // Started as a repository's test script would start it: in the background, flipping a
    // directory of the checkout with a symlink to the container's root.
    let out = run(
        &session,
        "mkdir d && ln -s / d.swap && { ./helper d d.swap & } && echo started",
    )
    .await;
    assert_eq!(out.stdout, "started\n", "{out:?}");
    // Whatever is left of it is a dead zombie: a leader with no thread running on.
    let out = run(&session, HELPER_CENSUS).await;
    assert!(out.stdout.lines().all(|line| line == "helper Z 1"), "{out:?}");
    // The same through a per-command `docker exec` (the mode of `setup`).
    let out = session
        .exec_per_command(request("{ ./helper & } && echo started"))
        .await
        .unwrap();
    assert_eq!(out.stdout, "started\n", "{out:?}");
    let out = run(&session, HELPER_CENSUS).await;
    assert!(out.stdout.lines().all(|line| line == "helper Z 1"), "{out:?}");
    session.stop().await.unwrap();
}

#[tokio::test]
async fn a_quiesced_sandbox_runs_nothing_until_the_next_command() {
    let Some(sandbox) = engine().await else { return };
    let (session, dir, _cleanup) = start(&sandbox, "freeze", |_| {}).await;
    // A command can hide what it leaves running from the sweep (here by redefining the shell's own
    // sweep): only the freeze keeps it from racing the host.
    let out = run(
        &session,
        "__pitcrew_sweep() { :; }; { while :; do echo x >> ticks; done & } ; echo left",
    )
    .await;
    assert_eq!(out.stdout, "left\n", "{out:?}");
    // The loop has written before the freeze (else there would be no file to watch).
    let out = run(&session, "until [ -s ticks ]; do :; done; echo ticking").await;
    assert_eq!(out.stdout, "ticking\n", "{out:?}");
    session.quiesce().await.unwrap();
    session.quiesce().await.unwrap();
    let paused = |inspect: bollard::models::ContainerInspectResponse| inspect.state.and_then(|s| s.paused);
    let inspect = sandbox
        .client()
        .inspect_container(session.container(), None)
        .await
        .unwrap();
    assert_eq!(paused(inspect), Some(true));
    let ticks = std::fs::metadata(dir.path().join("ticks")).unwrap().len();
    for _ in 0..20 {
        tokio::task::yield_now().await;
        assert_eq!(std::fs::metadata(dir.path().join("ticks")).unwrap().len(), ticks);
    }
    // The next command thaws it.
    assert_eq!(run(&session, "echo after").await.stdout, "after\n");
    let inspect = sandbox
        .client()
        .inspect_container(session.container(), None)
        .await
        .unwrap();
    assert_eq!(paused(inspect), Some(false));
    // Stopping a quiesced sandbox removes it.
    session.quiesce().await.unwrap();
    session.stop().await.unwrap();
    assert!(gone(&sandbox, &session_job(&session)).await);
}

fn session_job(session: &DockerSession) -> String {
    session.container().trim_start_matches("pitcrew-").to_owned()
}

#[tokio::test]
async fn a_command_that_fills_the_working_copy_past_the_disk_limit_is_stopped() {
    let Some(sandbox) = engine().await else { return };
    let (session, dir, _cleanup) = start(&sandbox, "disk", |spec| spec.disk_bytes = 16 << 20).await;
    // Some 20 MB a second, for ever: the limit, not the timeout, must end it.
    let err = session
        .exec(request(
            "while :; do head -c 1048576 /dev/zero >> big; sleep 0.05; done",
        ))
        .await
        .unwrap_err();
    let SandboxError::Backend(message) = &err else {
        panic!("{err:?}")
    };
    assert!(message.contains("past the sandbox's disk limit"), "{message}");
    assert!(message.contains("the limit is 16MiB"), "{message}");
    // Nothing writes any more, and the session still runs commands (the job decides to end).
    let size = std::fs::metadata(dir.path().join("big")).unwrap().len();
    assert!(size > 16 << 20, "{size}");
    let out = run(&session, "wc -c < big").await;
    assert_eq!(out.stdout.trim(), size.to_string());
    session.stop().await.unwrap();
}
