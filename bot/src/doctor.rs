//! `pitcrew doctor`: every outside thing a server needs, checked once, each with what was found and,
//! when it fails, the fix in one line — the configuration, the GitHub App (its JWT, installations,
//! permissions and events), the webhook secret, the public URL, the Docker engine and the sandbox
//! image, the model (one token), the data directory and git. Nothing secret is printed: errors are
//! the clients' own, which never quote a key or a token.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, SandboxBackend};
use crate::github::{AppAuth, GithubError};
use crate::sandbox::docker::{DockerSandbox, ImagePresence};
use crate::setup::manifest;

/// How long a check that reaches out may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    /// Not checked: not configured, or a check it needs failed.
    Skip,
}

/// One check's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// What to do, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    fn pass(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Pass,
            detail: detail.into(),
            fix: None,
        }
    }

    fn fail(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn skip(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Skip,
            detail: detail.into(),
            fix: None,
        }
    }
}

/// Every check's name, in the order they run and print.
pub const CHECKS: &[&str] = &[
    "configuration",
    "GitHub App",
    "installations",
    "permissions and events",
    "webhook secret",
    "public URL",
    "Docker engine",
    "sandbox image",
    "model",
    "data directory",
    "git",
];

/// Runs every check. `config` is the loaded configuration, or the loader's problems in words.
pub async fn run(config: Result<&Config, String>) -> Vec<Check> {
    let mut checks = Vec::new();
    let config = match config {
        Ok(config) => {
            let from = config.file.as_deref().map_or_else(
                || "no file: environment and defaults".to_owned(),
                |f| f.display().to_string(),
            );
            checks.push(Check::pass("configuration", format!("loaded ({from})")));
            config
        }
        Err(problems) => {
            checks.push(Check::fail(
                "configuration",
                problems,
                "`pitcrew config check` lists every problem with where it was set",
            ));
            for name in &CHECKS[1..] {
                checks.push(Check::skip(name, "needs the configuration"));
            }
            return checks;
        }
    };
    checks.extend(github(config).await);
    checks.push(match &config.github.webhook_secret {
        Some(_) => Check::pass("webhook secret", "set"),
        None => Check::fail(
            "webhook secret",
            "not set: every delivery would be refused, since none can be verified",
            "set [github] webhook_secret (or WEBHOOK_SECRET) to the App's webhook secret",
        ),
    });
    checks.push(public_url(config).await);
    checks.extend(docker(config).await);
    checks.push(model(config).await);
    checks.push(data_dir(&config.server.data_dir));
    checks.push(git());
    checks
}

/// Whether every check passed or was skipped.
pub fn all_passed(checks: &[Check]) -> bool {
    checks.iter().all(|check| check.status != Status::Fail)
}

/// The checks as the terminal shows them: `✓ name  detail`, and the fix under a failure.
pub fn render(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for check in checks {
        let mark = match check.status {
            Status::Pass => '✓',
            Status::Fail => '✗',
            Status::Skip => '–',
        };
        out.push_str(&format!("{mark} {:width$}  {}\n", check.name, check.detail));
        if let Some(fix) = &check.fix {
            out.push_str(&format!("  {:width$}  fix: {fix}\n", ""));
        }
    }
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    if failed == 0 {
        out.push_str("Everything pitcrew needs is in place.\n");
    } else {
        out.push_str(&format!("{failed} of {} checks failed.\n", checks.len()));
    }
    out
}

/// The App: its JWT accepted (`GET /app`), where it is installed, what it may do and hears of.
async fn github(config: &Config) -> Vec<Check> {
    let skip_rest = |why: &str| -> Vec<Check> {
        ["installations", "permissions and events"]
            .into_iter()
            .map(|name| Check::skip(name, why))
            .collect()
    };
    if config.github.app.is_none() {
        let mut checks = vec![Check::fail(
            "GitHub App",
            "not configured: [github] app_id and a private key are not set",
            "`pitcrew setup app` creates the App and writes them; or set APP_ID and PRIVATE_KEY",
        )];
        checks.extend(skip_rest("needs the App"));
        return checks;
    }
    let auth = match crate::server::app::app_auth(config) {
        Ok(auth) => auth,
        Err(err) => {
            let mut checks = vec![Check::fail(
                "GitHub App",
                err.to_string(),
                "set [github] private_key_path to the App's key file, or its contents in private_key",
            )];
            checks.extend(skip_rest("needs the App"));
            return checks;
        }
    };
    let app = match tokio::time::timeout(CHECK_TIMEOUT, auth.app()).await {
        Ok(Ok(app)) => app,
        Ok(Err(err)) => {
            let fix = match &err {
                GithubError::Unauthorized { .. } => {
                    "the key is not this App's: download a new private key from the App's settings, or correct app_id"
                }
                _ => "check [github] api_url and that this machine reaches GitHub",
            };
            let mut checks = vec![Check::fail("GitHub App", err.to_string(), fix)];
            checks.extend(skip_rest("needs the App"));
            return checks;
        }
        Err(_) => {
            let mut checks = vec![Check::fail(
                "GitHub App",
                format!("GitHub did not answer within {}s", CHECK_TIMEOUT.as_secs()),
                "check [github] api_url and that this machine reaches GitHub",
            )];
            checks.extend(skip_rest("needs the App"));
            return checks;
        }
    };
    let slug = app.slug.clone().unwrap_or_else(|| app.id.to_string());
    let mut checks = vec![Check::pass(
        "GitHub App",
        format!("{slug} (id {}) accepted the JWT at {}", app.id, config.github.api_url),
    )];
    let page = app
        .html_url
        .clone()
        .unwrap_or_else(|| format!("https://github.com/apps/{slug}"));
    checks.push(installations(&auth, &page).await);
    checks.push(permissions(&app));
    checks
}

async fn installations(auth: &AppAuth, app_page: &str) -> Check {
    let listed = match tokio::time::timeout(CHECK_TIMEOUT, auth.installations()).await {
        Ok(Ok(listed)) => listed,
        Ok(Err(err)) => {
            return Check::fail(
                "installations",
                err.to_string(),
                "check that this machine reaches GitHub's API",
            );
        }
        Err(_) => return Check::fail("installations", "GitHub did not answer", "check the network to GitHub"),
    };
    if listed.is_empty() {
        return Check::fail(
            "installations",
            "the App is installed nowhere: it receives no events",
            format!("install it on your repositories: {app_page}/installations/new"),
        );
    }
    let mut parts = Vec::new();
    for installation in &listed {
        let account = installation
            .account
            .as_ref()
            .and_then(|a| a.login.clone())
            .unwrap_or_else(|| installation.id.to_string());
        let count = match tokio::time::timeout(CHECK_TIMEOUT, auth.repository_count(installation.id)).await {
            Ok(Ok(1)) => "1 repository".to_owned(),
            Ok(Ok(n)) => format!("{n} repositories"),
            Ok(Err(err)) => {
                return Check::fail(
                    "installations",
                    format!("{account}: {err}"),
                    "the installation may be suspended: see its page in the account's settings",
                );
            }
            Err(_) => "repositories unknown (no answer)".to_owned(),
        };
        parts.push(format!("{account} ({count})"));
    }
    Check::pass("installations", parts.join(", "))
}

fn permissions(app: &crate::github::AppInfo) -> Check {
    let rank = |access: &str| match access {
        "read" => 1,
        "write" => 2,
        "admin" => 3,
        _ => 0,
    };
    let mut missing = Vec::new();
    for (name, access) in manifest::PERMISSIONS {
        let has = app.permissions.get(*name).map_or(0, |a| rank(a));
        if has < rank(access) {
            missing.push(format!("{name}: {access}"));
        }
    }
    let events: Vec<&str> = manifest::events()
        .iter()
        .copied()
        .filter(|event| !app.events.iter().any(|e| e == event))
        .collect();
    if missing.is_empty() && events.is_empty() {
        return Check::pass(
            "permissions and events",
            format!(
                "{} permissions, {} events as pitcrew needs",
                manifest::PERMISSIONS.len(),
                manifest::events().len()
            ),
        );
    }
    let mut detail = Vec::new();
    if !missing.is_empty() {
        detail.push(format!("missing permissions: {}", missing.join(", ")));
    }
    if !events.is_empty() {
        detail.push(format!("not subscribed to: {}", events.join(", ")));
    }
    Check::fail(
        "permissions and events",
        detail.join("; "),
        "add them in the App's settings (Permissions & events), then accept them on each installation",
    )
}

async fn public_url(config: &Config) -> Check {
    let Some(url) = &config.server.public_url else {
        return Check::skip("public URL", "[server] public_url not set");
    };
    let healthz = format!("{}/healthz", url.as_str().trim_end_matches('/'));
    let client = match reqwest::Client::builder().timeout(CHECK_TIMEOUT).build() {
        Ok(client) => client,
        Err(err) => return Check::fail("public URL", crate::net::describe(&err), "see the error"),
    };
    match client.get(&healthz).send().await {
        Ok(response) if response.status().is_success() => Check::pass("public URL", format!("{healthz} answered")),
        Ok(response) => Check::fail(
            "public URL",
            format!("{healthz} answered {}", response.status()),
            "point the proxy or port at `pitcrew serve` (its /healthz answers 200)",
        ),
        Err(err) => Check::fail(
            "public URL",
            format!("{healthz}: {}", crate::net::describe_with_hint(&err)),
            "start `pitcrew serve` and make the URL reach it from outside (DNS, proxy, firewall)",
        ),
    }
}

async fn docker(config: &Config) -> Vec<Check> {
    if config.sandbox.backend != SandboxBackend::Docker {
        return vec![
            Check::skip("Docker engine", "sandbox.backend = local"),
            Check::skip("sandbox image", "sandbox.backend = local"),
        ];
    }
    let host = config.sandbox.docker_host.as_deref();
    let connected = tokio::time::timeout(CHECK_TIMEOUT, DockerSandbox::connect_configured(host)).await;
    let engine = match connected {
        Ok(Ok(engine)) => engine,
        Ok(Err(err)) => {
            return vec![
                Check::fail(
                    "Docker engine",
                    err.to_string(),
                    "start Docker (or set [sandbox] docker_host to where it listens)",
                ),
                Check::skip("sandbox image", "needs the engine"),
            ];
        }
        Err(_) => {
            return vec![
                Check::fail(
                    "Docker engine",
                    "no answer",
                    "start Docker (or set [sandbox] docker_host to where it listens)",
                ),
                Check::skip("sandbox image", "needs the engine"),
            ];
        }
    };
    let version = engine
        .client()
        .version()
        .await
        .ok()
        .and_then(|v| v.version)
        .unwrap_or_else(|| "version unknown".to_owned());
    let image = &config.sandbox.image;
    let image_check = match engine.image_presence(image).await {
        Ok(ImagePresence::Present) => Check::pass("sandbox image", format!("{image} is on the engine")),
        Ok(ImagePresence::Pullable) => Check::pass("sandbox image", format!("{image} will be pulled on first use")),
        Ok(ImagePresence::Missing(why)) => Check::fail(
            "sandbox image",
            format!("{image} is not on the engine and cannot be pulled: {why}"),
            "build or load it (`docker build`, `docker load`), or set [sandbox] image to one the engine has",
        ),
        Err(err) => Check::fail("sandbox image", err.to_string(), "see the engine's error"),
    };
    vec![Check::pass("Docker engine", format!("Docker {version}")), image_check]
}

/// One request of one output token; the answer's text is not kept.
async fn model(config: &Config) -> Check {
    let mut settings = config.model.settings();
    settings.retry.max_retries = 0;
    let name = settings.model.clone();
    let base = settings.base_url.to_string();
    let model = match crate::llm::connect(settings) {
        Ok(model) => model,
        Err(err) => return Check::fail("model", err.to_string(), "check [model]"),
    };
    let request = crate::llm::Request {
        system: "Answer with one word.".to_owned(),
        messages: vec![crate::llm::Message::user("ping")],
        tools: Vec::new(),
        max_output_tokens: Some(1),
        temperature: None,
    };
    let started = Instant::now();
    let cancel = CancellationToken::new();
    match tokio::time::timeout(CHECK_TIMEOUT, model.complete(request, cancel.clone())).await {
        Ok(Ok(_)) => Check::pass(
            "model",
            format!("{name} at {base} answered in {} ms", started.elapsed().as_millis()),
        ),
        Ok(Err(err)) => Check::fail(
            "model",
            format!("{name} at {base}: {err}"),
            format!(
                "check [model] base_url and name, and the key in ${}",
                config.model.api_key_env
            ),
        ),
        Err(_) => {
            cancel.cancel();
            Check::fail(
                "model",
                format!("{name} at {base}: no answer within {}s", CHECK_TIMEOUT.as_secs()),
                "check [model] base_url and that this machine reaches it",
            )
        }
    }
}

/// The data directory exists (or can be made) and takes a file.
fn data_dir(dir: &Path) -> Check {
    let probe = dir.join(format!(".pitcrew-doctor-{}", std::process::id()));
    let result = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&probe, b"ok"))
        .and_then(|()| std::fs::remove_file(&probe));
    match result {
        Ok(()) => Check::pass("data directory", format!("{} is writable", dir.display())),
        Err(err) => Check::fail(
            "data directory",
            format!("{}: {err}", dir.display()),
            "make it a directory this user can write, or set [server] data_dir",
        ),
    }
}

/// git, which the sandbox's commands and the test runners use (pitcrew itself links libgit2).
fn git() -> Check {
    match std::process::Command::new("git").arg("--version").output() {
        Ok(out) if out.status.success() => Check::pass("git", String::from_utf8_lossy(&out.stdout).trim().to_owned()),
        Ok(out) => Check::fail(
            "git",
            format!("`git --version` exited with {}", out.status),
            "reinstall git",
        ),
        Err(err) => Check::fail("git", format!("git: {err}"), "install git (e.g. `apt-get install git`)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_prints_its_fix_and_the_count() {
        let checks = vec![
            Check::pass("git", "git version 2.47.3"),
            Check::fail("webhook secret", "not set", "set it"),
            Check::skip("public URL", "[server] public_url not set"),
        ];
        insta::assert_snapshot!(render(&checks), @r"
        ✓ git             git version 2.47.3
        ✗ webhook secret  not set
                          fix: set it
        – public URL      [server] public_url not set
        1 of 3 checks failed.
        ");
        assert!(!all_passed(&checks));
        assert!(all_passed(&checks[..1]));
    }
}
