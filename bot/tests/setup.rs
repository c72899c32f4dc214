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
}
