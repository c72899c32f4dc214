//! `pitcrew setup app`: the GitHub App created from a manifest (GitHub's App Manifest flow, as
//! Probot does it). A page on this machine submits the manifest to GitHub; GitHub shows the App's
//! settings, creates it and sends the browser back with a one-time code; pitcrew exchanges the code
//! for the App's id, private key and webhook secret and writes them to a new configuration file
//! (mode 0600). The secrets are never printed, logged or shown on a page.

pub mod manifest;

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use secrecy::ExposeSecret as _;
use tokio::sync::mpsc;
use url::Url;

use crate::github::{ClientOptions, CreatedApp, GithubError, create_app_from_manifest};
use crate::markup::escape;
use manifest::ManifestInput;

/// What `pitcrew setup app` was asked.
#[derive(Debug, Clone)]
pub struct SetupApp {
    /// The App's name on GitHub.
    pub name: String,
    /// The organization to own the App; `None`: the signed-in user.
    pub org: Option<String>,
    /// The server's public address (the webhook goes below it).
    pub public_url: Url,
    pub webhook_path: String,
    /// GitHub's web address: `https://github.com`, or a GitHub Enterprise Server's.
    pub github_url: Url,
    /// GitHub's API: `https://api.github.com`, or the server's `…/api/v3`.
    pub api_url: Url,
    /// The configuration file to write; it must not exist.
    pub out: PathBuf,
    /// Where this machine's page listens.
    pub listen: SocketAddr,
    /// How long to wait for the App to be created.
    pub timeout: Duration,
}

/// The API of the GitHub at `github_url`: api.github.com for github.com, else a GitHub Enterprise
/// Server's `/api/v3`.
pub fn api_url_for(github_url: &Url) -> Result<Url, url::ParseError> {
    if github_url
        .host_str()
        .is_some_and(|host| host.eq_ignore_ascii_case("github.com"))
    {
        Url::parse("https://api.github.com")
    } else {
        Url::parse(&format!("{}/api/v3", github_url.as_str().trim_end_matches('/')))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{0} exists already; name another file with --out (pitcrew setup never overwrites one)")]
    OutExists(PathBuf),
    #[error("listening on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
    #[error("no App was created within {0:?}; run `pitcrew setup app` again")]
    TimedOut(Duration),
    #[error("exchanging GitHub's code for the App's credentials: {0}")]
    Conversion(#[from] GithubError),
    #[error("GitHub created the App but sent no webhook secret; set one in the App's settings and in the file")]
    NoWebhookSecret,
    #[error("writing {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{0}")]
    Invalid(String),
}

/// What the flow produced: the App and where its configuration went.
#[derive(Debug)]
pub struct SetupOutcome {
    pub app: CreatedApp,
    pub out: PathBuf,
}

impl SetupOutcome {
    /// `https://github.com/apps/<slug>/installations/new`: where the App is installed.
    pub fn install_url(&self) -> String {
        format!("{}/installations/new", self.app.html_url.trim_end_matches('/'))
    }
}

/// What the local page's handlers share.
struct Flow {
    /// The form's target on GitHub, with the state.
    form_action: String,
    manifest: String,
    state: String,
    api_url: Url,
    out: PathBuf,
    /// `out`, created empty before the App is (so that a file that cannot be written is known
    /// before GitHub hands out a key that would be lost with it), written once.
    file: Mutex<Option<std::fs::File>>,
    public_url: Url,
    webhook_path: String,
    /// The result, once: the first callback with the right state ends the flow.
    done: Mutex<Option<mpsc::Sender<Result<SetupOutcome, SetupError>>>>,
}

/// Runs the flow: listens, tells `say` the page to open, waits for GitHub's callback, writes the
/// file. `say` gets lines for the terminal (never a secret).
pub async fn setup_app(request: SetupApp, say: &mut (dyn FnMut(&str) + Send)) -> Result<SetupOutcome, SetupError> {
    if let Some(problem) = crate::config::webhook_path_problem(&request.webhook_path) {
        return Err(SetupError::Invalid(format!(
            "--webhook-path {:?}: {problem}",
            request.webhook_path
        )));
    }
    let out = request.out.clone();
    let file = create_private(&out)?;
    let result = run_flow(request, file, say).await;
    if result.is_err() {
        // Created empty by this run and never completed: nothing of an App is in it.
        let _ = std::fs::remove_file(&out);
    }
    result
}

/// The flow proper, with `out` created and empty.
async fn run_flow(
    request: SetupApp,
    file: std::fs::File,
    say: &mut (dyn FnMut(&str) + Send),
) -> Result<SetupOutcome, SetupError> {
    let listener = tokio::net::TcpListener::bind(request.listen)
        .await
        .map_err(|source| SetupError::Listen {
            addr: request.listen,
            source,
        })?;
    let local = listener.local_addr().map_err(|source| SetupError::Listen {
        addr: request.listen,
        source,
    })?;
    let page = Url::parse(&format!("http://{local}/")).map_err(|e| SetupError::Invalid(e.to_string()))?;
    let redirect_url = page.join("callback").map_err(|e| SetupError::Invalid(e.to_string()))?;
    let state = random_hex(16)?;
    let manifest = manifest::manifest(&ManifestInput {
        name: &request.name,
        public_url: &request.public_url,
        webhook_path: &request.webhook_path,
        redirect_url: &redirect_url,
    });
    let new_app_path = match &request.org {
        Some(org) => format!("organizations/{org}/settings/apps/new"),
        None => "settings/apps/new".to_owned(),
    };
    let mut form_action = Url::parse(&format!("{}/", request.github_url.as_str().trim_end_matches('/')))
        .and_then(|base| base.join(&new_app_path))
        .map_err(|e| SetupError::Invalid(format!("--github-url: {e}")))?;
    form_action.query_pairs_mut().append_pair("state", &state);

    let (sender, mut results) = mpsc::channel(1);
    let flow = Arc::new(Flow {
        form_action: form_action.to_string(),
        manifest: manifest.to_string(),
        state,
        api_url: request.api_url.clone(),
        out: request.out.clone(),
        file: Mutex::new(Some(file)),
        public_url: request.public_url.clone(),
        webhook_path: request.webhook_path.clone(),
        done: Mutex::new(Some(sender)),
    });
    let app = Router::new()
        .route("/", get(start_page))
        .route("/callback", get(callback))
        .with_state(Arc::clone(&flow));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
    });
    say(&format!(
        "Open {page} in a browser on this machine to create the GitHub App \"{}\" on {}{}.",
        request.name,
        request.github_url.as_str().trim_end_matches('/'),
        request
            .org
            .as_deref()
            .map(|org| format!(" for the organization {org}"))
            .unwrap_or_default()
    ));
    say("(On a remote machine, forward the port first, e.g. `ssh -L PORT:127.0.0.1:PORT host`.)");
    let result = match tokio::time::timeout(request.timeout, results.recv()).await {
        Ok(Some(result)) => result,
        Ok(None) | Err(_) => Err(SetupError::TimedOut(request.timeout)),
    };
    // The graceful shutdown lets the answer to the callback finish.
    let _ = stop.send(());
    let _ = server.await;
    result
}

fn random_hex(bytes: usize) -> Result<String, SetupError> {
    let mut buffer = vec![0u8; bytes];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut buffer)
        .map_err(|_| SetupError::Invalid("the system's random source failed".to_owned()))?;
    Ok(hex::encode(buffer))
}

/// Whether `a` and `b` are equal, in time that does not depend on where they differ.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn page(title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title></head>\n<body>\n<h1>{title}</h1>\n{body}\n</body></html>\n",
        title = escape(title)
    );
    let mut response = Html(html).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `GET /`: the form that carries the manifest to GitHub, submitted at once.
async fn start_page(State(flow): State<Arc<Flow>>) -> Response {
    let body = format!(
        "<p>GitHub shows the App's name, webhook, permissions and events; create it there and you are sent back here.</p>\n\
         <form id=\"manifest\" action=\"{action}\" method=\"post\">\n\
         <input type=\"hidden\" name=\"manifest\" value=\"{manifest}\">\n\
         <button type=\"submit\">Create the GitHub App on GitHub</button>\n</form>\n\
         <script>document.getElementById(\"manifest\").submit();</script>",
        action = escape(&flow.form_action),
        manifest = escape(&flow.manifest),
    );
    page("Create pitcrew's GitHub App", &body)
}

/// `GET /callback?code=…&state=…`: GitHub's redirect after the App was created.
async fn callback(State(flow): State<Arc<Flow>>, uri: Uri) -> Response {
    let mut code = None;
    let mut state = None;
    for (name, value) in url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()) {
        match name.as_ref() {
            "code" => code = Some(value.into_owned()),
            "state" => state = Some(value.into_owned()),
            _ => {}
        }
    }
    // Only the browser this flow sent to GitHub comes back with its state.
    let state_ok = state.is_some_and(|state| same_bytes(state.as_bytes(), flow.state.as_bytes()));
    let (Some(code), true) = (code.filter(|c| !c.is_empty()), state_ok) else {
        let mut response = page(
            "Not this flow's callback",
            "<p>This link does not carry the code and state GitHub sends back to this setup.</p>",
        );
        *response.status_mut() = StatusCode::BAD_REQUEST;
        return response;
    };
    let Some(sender) = flow.done.lock().unwrap_or_else(PoisonError::into_inner).take() else {
        let mut response = page("Already done", "<p>This setup has finished; see the terminal.</p>");
        *response.status_mut() = StatusCode::GONE;
        return response;
    };
    let result = finish(&flow, &code).await;
    let response = match &result {
        Ok(outcome) => {
            let install = outcome.install_url();
            page(
                "The GitHub App is created",
                &format!(
                    "<p>{name} (id {id}): its id, private key and webhook secret are in <code>{out}</code>.</p>\n\
                     <p>Next, <a href=\"{install}\">install it on your repositories</a>, then start the server \
                     (the terminal says how).</p>",
                    name = escape(&outcome.app.name),
                    id = outcome.app.id,
                    out = escape(&outcome.out.display().to_string()),
                    install = escape(&install),
                ),
            )
        }
        Err(err) => {
            let mut response = page(
                "The App could not be set up",
                &format!("<p>{}</p>", escape(&err.to_string())),
            );
            *response.status_mut() = StatusCode::BAD_GATEWAY;
            response
        }
    };
    let _ = sender.send(result).await;
    response
}

async fn finish(flow: &Flow, code: &str) -> Result<SetupOutcome, SetupError> {
    let app = create_app_from_manifest(&flow.api_url, code, ClientOptions::default()).await?;
    let text = config_text(flow, &app)?;
    let file = flow.file.lock().unwrap_or_else(PoisonError::into_inner).take();
    let Some(mut file) = file else {
        return Err(SetupError::Invalid(
            "the configuration file was written already".to_owned(),
        ));
    };
    let written = file.write_all(text.as_bytes()).and_then(|()| file.sync_all());
    written.map_err(|source| SetupError::Write {
        path: flow.out.clone(),
        source,
    })?;
    Ok(SetupOutcome {
        app,
        out: flow.out.clone(),
    })
}

/// The configuration file for `app`: `[github]` and `[server]`, as `pitcrew serve` reads them.
fn config_text(flow: &Flow, app: &CreatedApp) -> Result<String, SetupError> {
    let secret = app.webhook_secret.as_ref().ok_or(SetupError::NoWebhookSecret)?;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# Written by `pitcrew setup app` for the GitHub App {} ({}).\n\
         # It holds the App's private key and webhook secret: keep it private (mode 0600).\n\
         # Add the model's settings ([model] name, provider) and start `pitcrew serve`.",
        app.name, app.html_url
    );
    text.push_str("\n[github]\n");
    let _ = writeln!(text, "app_id = {}", app.id);
    if flow.api_url.as_str().trim_end_matches('/') != "https://api.github.com" {
        let _ = writeln!(text, "api_url = {}", toml_string(flow.api_url.as_str()));
    }
    if !app.slug.is_empty() {
        let _ = writeln!(text, "bot_name = {}", toml_string(&format!("{}[bot]", app.slug)));
    }
    let _ = writeln!(text, "webhook_secret = {}", toml_string(secret.expose_secret()));
    let _ = writeln!(text, "private_key = {}", toml_string(app.pem.expose_secret()));
    text.push_str("\n[server]\n");
    let _ = writeln!(text, "public_url = {}", toml_string(flow.public_url.as_str()));
    if flow.webhook_path != crate::config::DEFAULT_WEBHOOK_PATH {
        let _ = writeln!(text, "webhook_path = {}", toml_string(&flow.webhook_path));
    }
    Ok(text)
}

/// A TOML basic string.
fn toml_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Creates `path` empty, readable by its owner only: never an existing file, never through a
/// symlink (`O_EXCL`).
fn create_private(path: &Path) -> Result<std::fs::File, SetupError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|source| match source.kind() {
            std::io::ErrorKind::AlreadyExists => SetupError::OutExists(path.to_owned()),
            _ => SetupError::Write {
                path: path.to_owned(),
                source,
            },
        })
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn toml_strings_round_trip_through_the_parser() {
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIE\"\\\t\u{1}x\n-----END RSA PRIVATE KEY-----\n";
        let text = format!("key = {}\n", toml_string(pem));
        let table: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(table["key"].as_str().unwrap(), pem);
    }

    #[test]
    fn the_api_is_found_from_the_web_address() {
        let api = |web: &str| api_url_for(&Url::parse(web).unwrap()).unwrap().to_string();
        assert_eq!(api("https://github.com"), "https://api.github.com/");
        assert_eq!(api("https://GitHub.com/"), "https://api.github.com/");
        assert_eq!(api("https://ghe.example.com/"), "https://ghe.example.com/api/v3");
    }
}
