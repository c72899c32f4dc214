//! Getting started as a new user does: `pitcrew setup app` through GitHub's App Manifest flow
//! against the fake GitHub (its form checks the manifest as GitHub does, its conversion endpoint is
//! validated against GitHub's REST description), followed with an HTTP client as a browser would.
#![expect(clippy::unwrap_used, reason = "a failing test should panic")]

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use pitcrew_tests::fake_github::{FakeGithub, MANIFEST_WEBHOOK_SECRET};

/// The longest the flow may take; a hang fails the test instead of holding the run.
const DEADLINE: Duration = Duration::from_secs(120);

fn pitcrew(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pitcrew"));
    command.args(args).current_dir(dir).env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    command
}

/// The process's stdout lines as they come, on a thread of their own.
fn lines(stdout: ChildStdout) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

/// The first line holding `needle`, and every line before it.
fn wait_for_line(lines: &mpsc::Receiver<String>, needle: &str, seen: &mut Vec<String>) -> String {
    loop {
        let line = lines
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|e| panic!("no line with {needle:?} ({e}); so far: {seen:#?}"));
        seen.push(line.clone());
        if line.contains(needle) {
            return line;
        }
    }
}

/// The value of `attribute="…"` in the first tag that has it, unescaped.
fn attribute(html: &str, name: &str) -> String {
    let start = html
        .find(&format!("{name}=\""))
        .unwrap_or_else(|| panic!("no {name} in {html}"))
        + name.len()
        + 2;
    let end = start + html[start..].find('"').unwrap();
    html[start..end]
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

struct Exited {
    status: std::process::ExitStatus,
    stderr: String,
}

fn wait(mut child: Child) -> Exited {
    let (sender, receiver) = mpsc::channel();
    let mut stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        let _ = sender.send(text);
    });
    let stderr = receiver.recv_timeout(DEADLINE).unwrap_or_default();
    let status = child.wait().unwrap();
    Exited { status, stderr }
}

#[test]
fn setup_app_creates_the_app_from_a_manifest_and_writes_a_private_config() {
    let fake = FakeGithub::start();
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("pitcrew.toml");
    let mut child = pitcrew(
        dir.path(),
        &[
            "setup",
            "app",
            "--public-url",
            "https://bots.example.com/pitcrew/",
            "--org",
            "acme",
            "--name",
            "Acme pitcrew",
            "--github-url",
            &fake.url(),
            "--api-url",
            &fake.url(),
            "--webhook-path",
            "/api/github/webhooks",
            "--out",
            out_file.to_str().unwrap(),
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let stdout = lines(child.stdout.take().unwrap());
    let mut seen = Vec::new();
    let open = wait_for_line(&stdout, "Open http://127.0.0.1:", &mut seen);
    let page_url = open.split_whitespace().nth(1).unwrap().to_owned();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(DEADLINE)
        .build()
        .unwrap();
    let (callback, forged, done) = runtime.block_on(async {
        // The browser opens the page: a form that posts the manifest to GitHub.
        let page = client.get(&page_url).send().await.unwrap();
        assert_eq!(page.status(), 200);
        let html = page.text().await.unwrap();
        let action = attribute(&html, "action");
        assert!(
            action.starts_with(&format!("{}/organizations/acme/settings/apps/new?state=", fake.url())),
            "{action}"
        );
        let manifest = attribute(&html, "value");
        // GitHub's form creates the App and redirects back with a code and the state.
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("manifest", &manifest)
            .finish();
        let created = client
            .post(&action)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 302, "{}", created.text().await.unwrap());
        let callback = created.headers()["location"].to_str().unwrap().to_owned();
        // Someone else's link to the callback, without the state, does not end the flow.
        let forged_url = callback.split("&state=").next().unwrap().to_owned() + "&state=forged";
        let forged = client.get(&forged_url).send().await.unwrap().status();
        let done = client.get(&callback).send().await.unwrap();
        let status = done.status();
        (callback, forged, (status, done.text().await.unwrap()))
    });
    assert!(callback.starts_with(&page_url), "{callback} is not below {page_url}");
    assert_eq!(forged, 400);
    assert_eq!(done.0, 200, "{}", done.1);
    assert!(
        done.1
            .contains("https://github.com/apps/acme-pitcrew/installations/new"),
        "{}",
        done.1
    );

    let exited = wait(child);
    let printed: Vec<String> = seen.into_iter().chain(stdout.try_iter()).collect();
    let printed = printed.join("\n");
    assert!(exited.status.success(), "{printed}\n{}", exited.stderr);
    assert!(
        printed.contains("Install it on your repositories: https://github.com/apps/acme-pitcrew/installations/new"),
        "{printed}"
    );
    assert!(
        printed.contains(&format!("pitcrew serve --config {}", out_file.display())),
        "{printed}"
    );

    // What GitHub was asked for: the webhook below the public URL, pitcrew's permissions and events.
    let submitted = fake.state(|state| state.app_manifests.clone());
    assert_eq!(submitted.len(), 1);
    assert_eq!(submitted[0].owner.as_deref(), Some("acme"));
    assert!(submitted[0].converted);
    let manifest = &submitted[0].manifest;
    assert_eq!(
        manifest["hook_attributes"]["url"],
        "https://bots.example.com/pitcrew/api/github/webhooks"
    );
    let permissions: Vec<(String, String)> = manifest["default_permissions"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, access)| (name.clone(), access.as_str().unwrap().to_owned()))
        .collect();
    let expected: Vec<(String, String)> = pitcrew::setup::manifest::PERMISSIONS
        .iter()
        .map(|(n, a)| ((*n).to_owned(), (*a).to_owned()))
        .collect();
    assert_eq!(permissions, expected);
    assert_eq!(
        manifest["default_events"],
        serde_json::json!(pitcrew::triggers::HANDLED_EVENTS)
    );
    fake.assert_no_violations();

    // The file: the owner's alone, the secrets in it and nowhere else, and a configuration that loads.
    let mode = std::fs::metadata(&out_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let written = std::fs::read_to_string(&out_file).unwrap();
    let key = std::fs::read_to_string(FakeGithub::test_private_key_path()).unwrap();
    let table: toml::Table = toml::from_str(&written).unwrap();
    assert_eq!(table["github"]["app_id"].as_integer(), Some(fake.app_id() as i64));
    assert_eq!(table["github"]["private_key"].as_str(), Some(key.as_str()));
    assert_eq!(
        table["github"]["webhook_secret"].as_str(),
        Some(MANIFEST_WEBHOOK_SECRET)
    );
    assert_eq!(table["github"]["bot_name"].as_str(), Some("acme-pitcrew[bot]"));
    assert_eq!(
        table["server"]["public_url"].as_str(),
        Some("https://bots.example.com/pitcrew/")
    );
    assert_eq!(table["server"]["webhook_path"].as_str(), Some("/api/github/webhooks"));
    let key_line = key.lines().nth(1).unwrap();
    for secret in [MANIFEST_WEBHOOK_SECRET, key_line] {
        assert!(
            !printed.contains(secret) && !exited.stderr.contains(secret),
            "a secret was printed"
        );
        assert!(!done.1.contains(secret), "a secret was shown on the page");
    }
    let check = pitcrew(
        dir.path(),
        &[
            "--config",
            out_file.to_str().unwrap(),
            "config",
            "check",
            "--set",
            "model.name=local",
            "--set",
            "model.base_url=http://127.0.0.1:9/v1",
        ],
    )
    .output()
    .unwrap();
    let rendered = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    assert!(rendered.contains(&format!("app_id = {}", fake.app_id())), "{rendered}");

    // Never over an existing file.
    let again = pitcrew(
        dir.path(),
        &[
            "setup",
            "app",
            "--public-url",
            "https://bots.example.com",
            "--out",
            out_file.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists already"));
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), written);
}

#[test]
fn setup_app_refuses_what_github_would_and_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| pitcrew(dir.path(), args).output().unwrap();
    let out = run(&["setup", "app", "--public-url", "not a url"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--public-url"), "{out:?}");
    let out = run(&[
        "setup",
        "app",
        "--public-url",
        "https://x.example",
        "--webhook-path",
        "/healthz",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--webhook-path"),
        "{out:?}"
    );
    assert!(!dir.path().join("pitcrew.toml").exists());
    // A file that cannot be written is found out before GitHub is asked for an App (whose key
    // would be lost with it): no page is offered.
    let out = run(&[
        "setup",
        "app",
        "--public-url",
        "https://x.example",
        "--out",
        "/nonexistent-pitcrew-dir/pitcrew.toml",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("/nonexistent-pitcrew-dir/pitcrew.toml"),
        "{out:?}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Open http"), "{out:?}");
    // A flow that ends without an App leaves no file behind (the next run may use the name).
    let out = run(&[
        "setup",
        "app",
        "--public-url",
        "https://x.example",
        "--timeout-minutes",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no App was created"),
        "{out:?}"
    );
    assert!(!dir.path().join("pitcrew.toml").exists());
}

/// What `pitcrew doctor` checks against: the fake GitHub with an App as `setup app` makes it, a
/// scripted model, a server answering `/healthz`, the Docker engine with the test image (or the
/// local backend without an engine), a data directory and git.
struct DoctorWorld {
    fake: FakeGithub,
    model: pitcrew_tests::scripted_model::ScriptedModel,
    healthz: pitcrew_tests::server_thread::ServerThread,
    dir: tempfile::TempDir,
    image: Option<&'static str>,
}

impl DoctorWorld {
    fn start() -> DoctorWorld {
        let permissions: serde_json::Map<String, serde_json::Value> = pitcrew::setup::manifest::PERMISSIONS
            .iter()
            .map(|(n, a)| ((*n).to_owned(), serde_json::json!(a)))
            .collect();
        let fake = FakeGithub::builder()
            .app_settings(
                serde_json::Value::Object(permissions),
                pitcrew::triggers::HANDLED_EVENTS,
            )
            .repo(pitcrew_tests::fake_github::Repo::new("octo-org/widgets"))
            .start();
        let model = pitcrew_tests::scripted_model::ScriptedModel::start(pitcrew_tests::scripted_model::Script::new());
        let app = axum::Router::new().route("/healthz", axum::routing::get(|| async { "ok" }));
        let healthz = pitcrew_tests::server_thread::ServerThread::start("healthz", app, 0).unwrap();
        DoctorWorld {
            fake,
            model,
            healthz,
            dir: tempfile::tempdir().unwrap(),
            image: pitcrew_tests::docker::test_image(),
        }
    }

    /// The configuration under which every check passes, with `change` applied to its text.
    fn config(&self, change: impl FnOnce(String) -> String) -> std::path::PathBuf {
        let sandbox = match self.image {
            Some(image) => format!("backend = \"docker\"\nimage = \"{image}\"\n"),
            None => "backend = \"local\"\n".to_owned(),
        };
        let text = format!(
            "[model]\nprovider = \"openai\"\nname = \"doctor-model\"\nbase_url = \"{model}\"\n\n\
             [github]\napi_url = \"{github}\"\napp_id = {app_id}\nprivate_key_path = \"{key}\"\n\
             webhook_secret = \"whsec-doctor-7f2a\"\n\n\
             [server]\npublic_url = \"http://{healthz}/\"\ndata_dir = \"{data}\"\n\n[sandbox]\n{sandbox}",
            model = self.model.openai_base_url(),
            github = self.fake.url(),
            app_id = self.fake.app_id(),
            key = FakeGithub::test_private_key_path().display(),
            healthz = self.healthz.addr(),
            data = self.dir.path().join("data").display(),
        );
        let path = self.dir.path().join(format!("doctor-{}.toml", fastrand::u64(..)));
        std::fs::write(&path, change(text)).unwrap();
        path
    }

    /// `pitcrew doctor --json` under `config` (with `path` as PATH, when given): its exit code and
    /// each check's status by name.
    fn doctor(&self, config: &Path, path: Option<&str>) -> (Option<i32>, Vec<(String, String)>, String) {
        // One token per run: the model answers each doctor's request.
        self.model.push(pitcrew_tests::scripted_model::Reply::text("pong"));
        let mut command = pitcrew(
            self.dir.path(),
            &["--config", config.to_str().unwrap(), "doctor", "--json"],
        );
        if let Some(path) = path {
            command.env("PATH", path);
        }
        let out = command.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let report: serde_json::Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{e}: {stdout} {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(report["ok"], out.status.success(), "{stdout}");
        let checks = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_owned(),
                    c["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        (out.status.code(), checks, stdout)
    }
}

/// One check broken on purpose: its name, the change to the good configuration, the PATH to run
/// with, and the checks that need it (skipped).
type BrokenCase<'a> = (
    &'a str,
    Box<dyn FnOnce(String) -> String + 'a>,
    Option<&'a str>,
    &'a [&'a str],
);

#[test]
fn doctor_passes_when_everything_is_in_place_and_names_each_failure_with_its_fix() {
    let world = DoctorWorld::start();
    let good = world.config(|text| text);
    let (code, checks, stdout) = world.doctor(&good, None);
    assert_eq!(code, Some(0), "{stdout}");
    let names: Vec<&str> = checks.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, pitcrew::doctor::CHECKS);
    for (name, status) in &checks {
        let expected = if world.image.is_none() && (name == "Docker engine" || name == "sandbox image") {
            "skip"
        } else {
            "pass"
        };
        assert_eq!(status, expected, "{name}: {stdout}");
    }
    assert!(stdout.contains("octo-org (1 repository)"), "{stdout}");
    assert!(!stdout.contains("whsec-doctor-7f2a"), "the webhook secret was printed");
    // The model was asked for one token, and nothing else.
    let asked = world.model.last_request().unwrap();
    assert_eq!(
        asked.body["max_tokens"]
            .as_u64()
            .or(asked.body["max_completion_tokens"].as_u64()),
        Some(1),
        "{}",
        asked.body
    );

    // Each check failing in turn: that check fails (with a fix), the checks that need it are
    // skipped, the rest still pass, and the exit status is 1.
    let healthz = world.healthz.addr().to_string();
    let model_url = world.model.openai_base_url();
    let blocker = world.dir.path().join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let blocked = blocker.join("data").display().to_string();
    let data = world.dir.path().join("data").display().to_string();
    let mut cases: Vec<BrokenCase<'_>> = vec![
        (
            "configuration",
            Box::new(|t: String| t.replace("[server]", "[server]\nlisten_on = 1")),
            None,
            &[],
        ),
        (
            "GitHub App",
            Box::new(|t: String| t.replace(&format!("app_id = {}", world.fake.app_id()), "app_id = 777")),
            None,
            &["installations", "permissions and events"],
        ),
        (
            "webhook secret",
            Box::new(|t: String| t.replace("webhook_secret = \"whsec-doctor-7f2a\"\n", "")),
            None,
            &[],
        ),
        (
            "public URL",
            Box::new(move |t: String| t.replace(&healthz, "127.0.0.1:9")),
            None,
            &[],
        ),
        (
            "model",
            Box::new(move |t: String| t.replace(&model_url, "http://127.0.0.1:9/v1")),
            None,
            &[],
        ),
        (
            "data directory",
            Box::new(move |t: String| t.replace(&data, &blocked)),
            None,
            &[],
        ),
        ("git", Box::new(|t: String| t), Some("/nonexistent"), &[]),
    ];
    if world.image.is_some() {
        cases.push((
            "Docker engine",
            Box::new(|t: String| {
                t.replace(
                    "[sandbox]\n",
                    "[sandbox]\ndocker_host = \"unix:///nonexistent/docker.sock\"\n",
                )
            }),
            None,
            &["sandbox image"],
        ));
        cases.push((
            "sandbox image",
            Box::new(|t: String| {
                t.replace(
                    &format!("image = \"{}\"", world.image.unwrap()),
                    "image = \"pitcrew-doctor-absent:1\"",
                )
            }),
            None,
            &[],
        ));
    }
    for (failing, change, path, needing) in cases {
        let config = world.config(change);
        let (code, checks, stdout) = world.doctor(&config, path);
        assert_eq!(code, Some(1), "{failing}: {stdout}");
        for (name, status) in &checks {
            let expected = if *name == failing {
                "fail"
            } else if failing == "configuration"
                || needing.contains(&name.as_str())
                || (world.image.is_none() && (name == "Docker engine" || name == "sandbox image"))
            {
                "skip"
            } else {
                "pass"
            };
            assert_eq!(status, expected, "with {failing} broken, {name}: {stdout}");
        }
        let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let broken = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == failing)
            .unwrap();
        assert!(broken["fix"].as_str().is_some_and(|f| !f.is_empty()), "{broken}");
    }

    // Installed nowhere: said, with the link that installs it; the rest still passes.
    let permissions: serde_json::Map<String, serde_json::Value> = pitcrew::setup::manifest::PERMISSIONS
        .iter()
        .map(|(n, a)| ((*n).to_owned(), serde_json::json!(a)))
        .collect();
    let nowhere = FakeGithub::builder()
        .app_settings(
            serde_json::Value::Object(permissions),
            pitcrew::triggers::HANDLED_EVENTS,
        )
        .not_installed()
        .start();
    let config = world.config(|t| t.replace(&world.fake.url(), &nowhere.url()));
    let (code, checks, stdout) = world.doctor(&config, None);
    assert_eq!(code, Some(1), "{stdout}");
    let failed: Vec<&str> = checks
        .iter()
        .filter(|(_, s)| s == "fail")
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(failed, ["installations"], "{stdout}");
    assert!(stdout.contains("/installations/new"), "{stdout}");

    // The App's settings lacking what pitcrew needs: named, with where to add them.
    let bare = FakeGithub::start();
    let config = world.config(|t| t.replace(&world.fake.url(), &bare.url()));
    let (code, checks, stdout) = world.doctor(&config, None);
    assert_eq!(code, Some(1));
    assert!(
        checks.contains(&("permissions and events".to_owned(), "fail".to_owned())),
        "{stdout}"
    );
    assert!(
        stdout.contains("actions: write") && stdout.contains("workflows: write"),
        "{stdout}"
    );
    assert!(stdout.contains("not subscribed to: issue_comment"), "{stdout}");

    // The text form: a mark per check and the fix under a failure.
    let out = pitcrew(world.dir.path(), &["--config", config.to_str().unwrap(), "doctor"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("✗ permissions and events"), "{text}");
    assert!(text.contains("fix: add them in the App's settings"), "{text}");
    assert!(text.contains("✓ git"), "{text}");
}
