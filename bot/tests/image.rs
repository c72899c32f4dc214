//! The Docker image of the root `Dockerfile`, as GitHub and a deployment run it: its base image made
//! on this machine from Debian's packages (no container registry is reachable here; see
//! `deploy/build-base-image.sh`), its `runtime-prebuilt` stage built around the binary under test,
//! then `pitcrew --version`, the image's user, git and certificates, `pitcrew action` on a
//! simulated `issue_comment` event with GitHub's mounts and variables, against the fake GitHub, and
//! `pitcrew serve` answering from outside its container and passing `deploy/compose`'s healthcheck.
//! The `builder` stage needs the Rust image from a registry, so it is not built here; `runtime`
//! differs from `runtime-prebuilt` only in where the binary comes from.
#![expect(clippy::unwrap_used, reason = "a failing test should panic")]

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use nix::fcntl::{Flock, FlockArg};
use pitcrew_tests::fake_github::{AuthKind, FakeGithub, Repo};
use pitcrew_tests::repo::TestRepo;
use pitcrew_tests::scenario::{Comment, comment_payload};

/// The Dockerfile's `FROM`: made here by the script when missing.
const BASE_IMAGE: &str = "debian:bookworm-slim";
/// The image under test; rebuilt by every test (from the build cache when nothing changed).
const IMAGE: &str = "pitcrew-image-test:latest";
/// The longest a container may take; a hang fails the test instead of holding the run.
const CONTAINER_DEADLINE: Duration = Duration::from_secs(180);
const GITHUB_TOKEN: &str = "ghs_image-test-token-5d1c";
const API_KEY: &str = "sk-image-test-key-93ab";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a command; stdout, or an error with what it printed.
fn run(command: &mut Command) -> Result<String, String> {
    let out = command.output().map_err(|e| format!("{command:?}: {e}"))?;
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        let tail: Vec<&str> = stdout.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Err(format!(
            "{command:?} exited with {}:\n{}\n{}",
            out.status,
            tail.join("\n"),
            stderr.trim()
        ))
    }
}

fn docker(args: &[&str]) -> Command {
    let mut command = Command::new("docker");
    command.args(args);
    command
}

/// The image built and this process holding the machine-wide image lock (tests in parallel
/// processes take turns: each retags the image), or `None`, said loudly, when there is no engine
/// or no base image and neither is required.
#[expect(clippy::print_stderr, reason = "a skipped test must say so")]
fn image() -> Option<Flock<File>> {
    let required = std::env::var_os("PITCREW_REQUIRE_DOCKER").is_some_and(|v| v == "1");
    let skip = |why: String| {
        assert!(!required, "PITCREW_REQUIRE_DOCKER=1, but {why}");
        eprintln!("SKIPPED: this test needs Docker: {why}");
    };
    if let Err(err) = run(&mut docker(&["version", "--format", "{{.Server.Version}}"])) {
        skip(format!("no Docker engine is reachable: {err}"));
        return None;
    }
    let lock_path = std::env::temp_dir().join("pitcrew-image-test.lock");
    let lock = Flock::lock(File::create(&lock_path).unwrap(), FlockArg::LockExclusive)
        .map_err(|(_, errno)| errno)
        .unwrap();
    // Built once per machine (the script keeps an existing tag): about half a minute of debootstrap.
    let script = repo_root().join("deploy/build-base-image.sh");
    if let Err(err) = run(Command::new("bash").arg(&script).arg(BASE_IMAGE)) {
        skip(format!(
            "the base image {BASE_IMAGE} is missing and could not be made: {err}"
        ));
        return None;
    }
    build();
    Some(lock)
}

/// Builds the `runtime-prebuilt` stage from a context holding only the binary under test.
fn build() {
    let context = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("image-context-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&context);
    std::fs::create_dir_all(&context).unwrap();
    let binary = context.join("pitcrew");
    // A hard link when the target directory allows one: the debug binary is tens of MiB.
    if std::fs::hard_link(env!("CARGO_BIN_EXE_pitcrew"), &binary).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_pitcrew"), &binary).unwrap();
    }
    let previous = run(&mut docker(&["image", "inspect", "--format", "{{.Id}}", IMAGE])).ok();
    let dockerfile = repo_root().join("Dockerfile");
    let built = run(&mut docker(&[
        "build",
        "--target",
        "runtime-prebuilt",
        "--build-arg",
        "PITCREW_BINARY=pitcrew",
        "-f",
        dockerfile.to_str().unwrap(),
        "-t",
        IMAGE,
        context.to_str().unwrap(),
    ]));
    std::fs::remove_dir_all(&context).unwrap();
    if let Err(err) = built {
        panic!("the Dockerfile's runtime-prebuilt stage did not build: {err}");
    }
    // The image of an older binary is removed with its own layers, up to the parent it shares with
    // the new one (the cached base stage, which stays).
    let current = run(&mut docker(&["image", "inspect", "--format", "{{.Id}}", IMAGE])).unwrap();
    if let Some(previous) = previous.filter(|previous| previous.trim() != current.trim()) {
        let _ = run(&mut docker(&["rmi", previous.trim()]));
    }
}

/// `docker run --rm` with `args`; a container still running at the deadline is killed and fails the
/// test.
fn container(name: &str, args: &[&str]) -> Output {
    let name = format!("pitcrew-image-test-{}-{name}", std::process::id());
    let child = docker(&["run", "--rm", "--name", &name])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    match finished.recv_timeout(CONTAINER_DEADLINE) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = run(&mut docker(&["rm", "-f", &name]));
            panic!("the container {name} ({args:?}) was still running after {CONTAINER_DEADLINE:?}");
        }
    }
}

#[test]
fn the_image_runs_pitcrew_as_root_with_a_sandbox_user_git_and_certificates() {
    let Some(_lock) = image() else { return };

    let out = container("version", &["--network", "none", IMAGE, "--version"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        format!("pitcrew {}", env!("CARGO_PKG_VERSION"))
    );

    let out = container("help", &["--network", "none", IMAGE, "--help"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let help = text(&out.stdout);
    for command in ["run", "serve", "action"] {
        assert!(help.contains(command), "`{command}` is missing from the help:\n{help}");
    }

    // tini is PID 1: pitcrew's exit status must still be the container's, or a failed step would
    // pass. Outside a workflow, `action` is a configuration error (2).
    let out = container("no-workflow", &["--network", "none", IMAGE, "action"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("GITHUB_EVENT_NAME"), "{stderr}");

    let out = container(
        "user",
        &[
            "--network",
            "none",
            "--entrypoint",
            "sh",
            IMAGE,
            "-c",
            "id -u; id -g; pwd; stat -c '%a %u' .; id -u pitcrew-sandbox; id -g pitcrew-sandbox; \
             id -G pitcrew-sandbox; git --version; \
             test -s /etc/ssl/certs/ca-certificates.crt && echo certificates; \
             touch ./written && echo writable",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    // pitcrew is root (only root hands a working copy to the sandbox's user and takes it back);
    // the sandbox's user (65532, no other groups) cannot even enter the data directory.
    assert_eq!(
        lines[..7],
        ["0", "0", "/var/lib/pitcrew", "700 0", "65532", "65532", "65532"],
        "{lines:?}"
    );
    assert!(lines[7].starts_with("git version "), "{lines:?}");
    assert_eq!(lines[8..], ["certificates", "writable"], "{lines:?}");
}

#[test]
fn git_in_the_image_accepts_a_checkout_owned_by_the_runner() {
    let Some(_lock) = image() else { return };
    let checkout = TestRepo::new(&[("README.md", "# widgets\n")]).unwrap();
    let head = checkout.git(&["rev-parse", "HEAD"]).unwrap();
    // GitHub's runner user owns the checkout; the action runs as root: git calls that "dubious
    // ownership" unless the image trusts it.
    chown_to_runner(checkout.path());
    let mount = format!("{}:/github/workspace", checkout.path().display());
    let out = container(
        "git",
        &[
            "--network",
            "none",
            "--user",
            "0",
            "-v",
            &mount,
            "--workdir",
            "/github/workspace",
            "--entrypoint",
            "git",
            IMAGE,
            "rev-parse",
            "HEAD",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), head.trim());
}

/// Gives `path` to uid/gid 1001 (the hosted runner's user) when this process may; otherwise it
/// already belongs to a user other than the container's root.
fn chown_to_runner(path: &Path) {
    if nix::unistd::geteuid().is_root() {
        run(Command::new("chown").args(["-R", "1001:1001"]).arg(path)).unwrap();
    }
}

/// The inputs `action.yml` declares, with their defaults as the runner evaluates them.
fn declared_inputs() -> BTreeMap<String, String> {
    let yaml = std::fs::read_to_string(repo_root().join("action.yml")).unwrap();
    let mut inputs = BTreeMap::new();
    let mut section = "";
    let mut current: Option<String> = None;
    for line in yaml.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            section = line.trim_end_matches(':');
            current = None;
        } else if section == "inputs" {
            if let Some(name) = line.strip_prefix("  ").and_then(|l| l.strip_suffix(':'))
                && !name.starts_with(' ')
            {
                inputs.insert(name.to_owned(), String::new());
                current = Some(name.to_owned());
            } else if let (Some(name), Some(default)) = (&current, line.trim().strip_prefix("default:")) {
                let default = default.trim().trim_matches('"');
                let default = if default == "${{ github.token }}" {
                    GITHUB_TOKEN
                } else {
                    default
                };
                inputs.insert(name.clone(), default.to_owned());
            }
        }
    }
    inputs
}

#[test]
fn action_yml_declares_every_input_pitcrew_action_reads() {
    let inputs = declared_inputs();
    let names: Vec<&str> = inputs.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "api_key",
            "base_url",
            "config",
            "github_token",
            "max_cost_usd",
            "max_steps",
            "mode",
            "model",
            "prompt",
            "provider",
            "sandbox",
            "trigger"
        ]
    );
    assert_eq!(inputs["trigger"], "@agent");
    assert_eq!(inputs["mode"], "auto");
    assert_eq!(inputs["sandbox"], "auto");
    assert_eq!(inputs["github_token"], GITHUB_TOKEN);
    let yaml = std::fs::read_to_string(repo_root().join("action.yml")).unwrap();
    for output in ["conclusion", "commit_sha", "pr_number", "summary"] {
        assert!(
            yaml.contains(&format!("\n  {output}:\n")),
            "output {output} is not declared"
        );
    }
    // What image it runs (the release's, of this version) is `workflows.rs`'s test.
    assert!(yaml.contains("  using: docker\n"), "{yaml}");
}

/// The values of `name<<DELIMITER` and `name=value` entries in a `GITHUB_OUTPUT` file.
fn parse_outputs(file: &str) -> BTreeMap<String, String> {
    let mut outputs = BTreeMap::new();
    let mut lines = file.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delimiter)) = line.split_once("<<") {
            let value: Vec<&str> = lines.by_ref().take_while(|l| *l != delimiter).collect();
            outputs.insert(name.to_owned(), value.join("\n"));
        } else if let Some((name, value)) = line.split_once('=') {
            outputs.insert(name.to_owned(), value.to_owned());
        }
    }
    outputs
}

#[test]
fn the_action_step_ends_quietly_on_a_comment_without_the_trigger() {
    let Some(_lock) = image() else { return };
    // GitHub's layout: the checkout, the event, the file commands and HOME, each mounted from the
    // runner's temporary directory.
    let checkout = TestRepo::new(&[("README.md", "# widgets\n")]).unwrap();
    let sha = checkout.git(&["rev-parse", "HEAD"]).unwrap();
    let runner = tempfile::tempdir().unwrap();
    let (workflow, commands, home) = (
        runner.path().join("_github_workflow"),
        runner.path().join("_runner_file_commands"),
        runner.path().join("_github_home"),
    );
    for dir in [&workflow, &commands, &home] {
        std::fs::create_dir(dir).unwrap();
    }
    let comment = Comment {
        id: 9001,
        login: "alice",
        user_id: 501,
        association: "MEMBER",
        body: "Looks good to me, thanks! (cc @octocat)",
    };
    let event = comment_payload("acme/widgets", "https://github.com/acme/widgets.git", 7, &comment, None);
    std::fs::write(workflow.join("event.json"), serde_json::to_vec(&event).unwrap()).unwrap();
    std::fs::write(commands.join("set_output_1f2e"), "").unwrap();
    std::fs::write(commands.join("step_summary_1f2e"), "").unwrap();
    chown_to_runner(checkout.path());

    let mut env: Vec<String> = declared_inputs()
        .into_iter()
        .map(|(name, default)| {
            let value = match name.as_str() {
                "model" => "gpt-4.1",
                "api_key" => API_KEY,
                _ => &default,
            };
            format!("INPUT_{}={value}", name.to_uppercase())
        })
        .collect();
    env.extend(
        [
            "GITHUB_ACTIONS=true",
            "CI=true",
            "HOME=/github/home",
            "GITHUB_EVENT_NAME=issue_comment",
            "GITHUB_EVENT_PATH=/github/workflow/event.json",
            "GITHUB_REPOSITORY=acme/widgets",
            "GITHUB_REPOSITORY_OWNER=acme",
            "GITHUB_SERVER_URL=https://github.com",
            "GITHUB_WORKSPACE=/github/workspace",
            "GITHUB_REF=refs/heads/main",
            "GITHUB_OUTPUT=/github/file_commands/set_output_1f2e",
            "GITHUB_STEP_SUMMARY=/github/file_commands/step_summary_1f2e",
            // Passed untranslated: a path on the runner that is not mounted in the container.
            "RUNNER_TEMP=/home/runner/work/_temp",
            "GITHUB_RUN_ID=4242",
            "GITHUB_RUN_ATTEMPT=1",
        ]
        .map(str::to_owned),
    );
    env.push(format!("GITHUB_SHA={}", sha.trim()));
    // The comment mentions someone, so pitcrew reads the repository's .github/pitcrew.toml (it could
    // name another trigger) before deciding there is nothing to do.
    let github = FakeGithub::builder()
        .repo(Repo::new("acme/widgets"))
        .token(GITHUB_TOKEN)
        .start();
    env.push(format!("GITHUB_API_URL={}", github.url()));
    let mounts = [
        (home.as_path(), "/github/home"),
        (workflow.as_path(), "/github/workflow"),
        (commands.as_path(), "/github/file_commands"),
        (checkout.path(), "/github/workspace"),
    ]
    .map(|(host, container)| format!("{}:{container}", host.display()));

    // As GitHub runs it (the `action` target is this image as root); the host's network reaches the
    // fake GitHub on 127.0.0.1.
    let mut args: Vec<&str> = vec!["--network", "host", "--user", "0", "--workdir", "/github/workspace"];
    for var in &env {
        args.extend(["-e", var]);
    }
    for mount in &mounts {
        args.extend(["-v", mount]);
    }
    args.extend([IMAGE, "action"]);
    let out = container("action", &args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "exit {}:\n{stdout}\n{stderr}", out.status);

    let outputs = parse_outputs(&std::fs::read_to_string(commands.join("set_output_1f2e")).unwrap());
    assert_eq!(
        outputs.get("conclusion").map(String::as_str),
        Some("skipped"),
        "{outputs:?}"
    );
    let summary = std::fs::read_to_string(commands.join("step_summary_1f2e")).unwrap();
    assert_eq!(summary, "", "nothing to report, nothing in the step summary");
    // Quiet: on stdout only workflow commands (`::add-mask::` hides the secrets in later lines),
    // and neither secret anywhere else.
    for line in stdout.lines() {
        assert!(line.starts_with("::"), "unexpected output: {line:?}\n{stdout}");
    }
    for secret in [GITHUB_TOKEN, API_KEY] {
        let leaked = stdout
            .lines()
            .chain(stderr.lines())
            .any(|line| line.contains(secret) && !line.starts_with("::add-mask::"));
        assert!(!leaked, "a secret was printed:\n{stdout}\n{stderr}");
    }
    assert!(!stderr.to_lowercase().contains("error"), "{stderr}");
    // Nothing was posted: no reaction, no reply, no check run.
    let requests = github.requests();
    assert!(!requests.is_empty(), "the repository's configuration was not read");
    for request in &requests {
        assert_eq!(request.method, "GET", "{request:?}");
        assert_eq!(request.auth, AuthKind::StaticToken, "{request:?}");
    }
}

/// `pitcrew run --sandbox docker` inside the image, on the host's engine through its socket (as in
/// the Action with `sandbox: docker`, or `pitcrew serve` in its container): the sandbox is another
/// container of the same engine, so it must mount the working copy by its host path, which pitcrew
/// finds from its own container's mounts. The agent's command runs in the sandbox and its file
/// lands in the repository on the host, committed.
#[test]
fn in_a_container_the_docker_sandbox_mounts_the_working_copy_by_its_host_path() {
    use pitcrew_tests::scripted_model::{Reply, Script, ScriptedModel};

    let Some(_lock) = image() else { return };
    let Some(sandbox_image) = pitcrew_tests::docker::test_image() else {
        return;
    };
    let repo = TestRepo::new(&[("README.md", "# widgets\n")]).unwrap();
    chown_to_runner(repo.path());
    let model = ScriptedModel::start(
        Script::new()
            .turn(Reply::new().tool_call(
                "bash",
                serde_json::json!({"command": "hostname > made-in-sandbox.txt && cat /workspace/README.md"}),
            ))
            .turn(Reply::text("Wrote the sandbox's host name.")),
    );
    let mount = format!("{}:/src/widgets", repo.path().display());
    let socket = "/var/run/docker.sock:/var/run/docker.sock";
    let base_url = model.openai_base_url();
    let image_flag = format!("sandbox.image={sandbox_image}");
    let out = container(
        "docker-sandbox",
        &[
            "--network",
            "host",
            "--user",
            "0",
            "-v",
            &mount,
            "-v",
            socket,
            "-e",
            "OPENAI_API_KEY=sk-unused",
            "--workdir",
            "/src/widgets",
            IMAGE,
            "--set",
            &image_flag,
            "run",
            "--json",
            "--in-place",
            "--model",
            "gpt-4o",
            "--base-url",
            &base_url,
            "--sandbox",
            "docker",
            "Record where commands run",
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "exit {}:\n{stdout}\n{stderr}", out.status);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["status"], "finished", "{stdout}");
    assert!(report["sandbox"].as_str().unwrap().starts_with("docker"), "{stdout}");
    // The file the sandbox wrote is in the repository on the host, named after the sandbox's own
    // container (not pitcrew's).
    // (The checkout belongs to the runner's user now: git on the host must be told it is safe.)
    let shown = Command::new("git")
        .args(["-c", "safe.directory=*", "show", "HEAD:made-in-sandbox.txt"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    let written = text(&shown.stdout);
    assert!(!written.trim().is_empty());
    assert!(stderr.contains("pitcrew runs in a container"), "{stderr}");
    let tool_result = model.requests()[1].body.to_string();
    assert!(
        tool_result.contains("# widgets"),
        "the sandbox saw the working copy: {tool_result}"
    );
}

/// A container started in the background, removed however the test ends.
struct Detached(String);

impl Drop for Detached {
    fn drop(&mut self) {
        let _ = run(&mut docker(&["rm", "-f", &self.0]));
    }
}

/// `pitcrew serve` in the image as `deploy/compose` runs it: the image's own PITCREW_SERVER_LISTEN
/// makes it reachable from outside its container (through a published port here, from the proxy
/// there; the default 127.0.0.1 would not be), and the Compose file's healthcheck, run in the
/// container as Docker runs it, passes on /healthz and fails on a path that does not answer 200.
#[test]
fn serve_in_the_image_answers_from_outside_and_passes_the_compose_healthcheck() {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};

    let Some(_lock) = image() else { return };
    let name = format!("pitcrew-image-test-{}-serve", std::process::id());
    let key = repo_root().join("tests/fixtures/github-app-test-key.pem");
    let key_mount = format!("{}:/run/secrets/github_app_key:ro", key.display());
    let mut args = vec!["run", "-d", "--name", &name, "-p", "127.0.0.1::8080", "-v", &key_mount];
    for var in [
        "PITCREW_GITHUB_APP_ID=1",
        "PITCREW_GITHUB_PRIVATE_KEY_PATH=/run/secrets/github_app_key",
        "PITCREW_GITHUB_WEBHOOK_SECRET=image-test-webhook-secret",
        // Addresses that refuse: the server starts without reaching GitHub or a model.
        "PITCREW_GITHUB_API_URL=http://127.0.0.1:9/",
        "PITCREW_MODEL_NAME=gpt-4.1",
        "PITCREW_MODEL_BASE_URL=http://127.0.0.1:9/v1",
        "PITCREW_SANDBOX_BACKEND=local",
    ] {
        args.extend(["-e", var]);
    }
    args.extend([IMAGE, "serve"]);
    run(&mut docker(&args)).unwrap();
    let _container = Detached(name.clone());

    // Ready when it says so in its log.
    let mut logs = docker(&["logs", "--follow", &name])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = logs.stderr.take().unwrap();
    let (line_tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    loop {
        match lines.recv_timeout(CONTAINER_DEADLINE) {
            Ok(line) if line.contains("pitcrew serve is listening") => {
                assert!(line.contains("0.0.0.0:8080"), "{line}");
                break;
            }
            Ok(line) => seen.push(line),
            Err(_) => panic!("`pitcrew serve` never listened:\n{}", seen.join("\n")),
        }
    }
    let _ = logs.kill();
    let _ = logs.wait();

    // The Compose file's healthcheck: `CMD` then the command, Compose's `$$` escape read as `$`.
    let compose = std::fs::read_to_string(repo_root().join("deploy/compose/docker-compose.yml")).unwrap();
    let compose: serde_json::Value = serde_saphyr::from_str(&compose).unwrap();
    let test: Vec<String> = compose["services"]["pitcrew"]["healthcheck"]["test"]
        .as_array()
        .unwrap()
        .iter()
        .map(|word| word.as_str().unwrap().replace("$$", "$"))
        .collect();
    assert_eq!(test[0], "CMD", "{test:?}");
    let probe = |command: &[String]| {
        let mut exec = docker(&["exec", &name]);
        exec.args(command);
        run(&mut exec)
    };
    if let Err(err) = probe(&test[1..]) {
        panic!("the Compose healthcheck failed in the image: {err}");
    }
    let elsewhere: Vec<String> = test[1..]
        .iter()
        .map(|w| w.replace("/healthz", "/no-such-path"))
        .collect();
    assert!(probe(&elsewhere).is_err(), "the healthcheck passes whatever the status");

    // From outside the container, through the published port.
    let published = run(&mut docker(&["port", &name, "8080/tcp"])).unwrap();
    let address = published.lines().next().unwrap().trim().to_owned();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    stream.set_read_timeout(Some(CONTAINER_DEADLINE)).unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200 "), "{response}");
}
