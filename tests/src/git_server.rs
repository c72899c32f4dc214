//! A real git smart-HTTP server for end-to-end tests: Debian's `git http-backend` run as CGI behind
//! an axum server, serving bare repositories from a temporary directory and requiring HTTP Basic
//! auth whose password is a configured token (any user name, as GitHub's `x-access-token:<token>`).
//!
//! Like the scripted model, the server runs on its own thread with its own tokio runtime, bound to
//! `127.0.0.1:0`; dropping the [`GitServer`] stops it and removes the repositories. Every request is
//! recorded ([`GitServer::requests`]) so tests can count fetches, and every push with the ref
//! updates it asked for ([`GitServer::pushes`]). Hooks ([`GitServer::on_push`]) hear of every ref
//! update that took: a client's push once `git http-backend` has applied it (a refused update, a
//! non-fast-forward or a lease that did not hold, is not heard of), and the server's own commits
//! ([`GitServer::commit`] and the like), as a forge's push events would. A push is an output the
//! test should look at: the
//! lookups ([`GitServer::pushes`], [`GitServer::requests`], and [`GitServer::rev_parse`] and
//! [`GitServer::show`] for the refs they read) mark pushes seen, and [`GitServer::unseen_pushes`]
//! lists the others.
//!
//! ```no_run
//! use pitcrew_tests::git_server::GitServer;
//!
//! let server = GitServer::start("ghs_secret");
//! let main = server.create_repo("acme/widgets", &[("README.md", "hi\n")])?;
//! let pr = server.create_pull_head("acme/widgets", 7, "main", &[("fix.txt", "fixed\n")], "fix")?;
//! // Clone server.url("acme/widgets") with user `x-access-token`, password `ghs_secret` …
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::server_thread::ServerThread;

/// The id git gives an absent ref in a push command.
const ZERO_ID: &str = "0000000000000000000000000000000000000000";

/// Where Debian's git installs the CGI program.
pub const HTTP_BACKEND: &str = "/usr/lib/git-core/git-http-backend";

/// A running git server. Dropping it shuts the server down and deletes its repositories.
#[derive(Debug)]
pub struct GitServer {
    // Declared first so the server stops before the repositories are deleted.
    server: ServerThread,
    shared: Arc<Shared>,
    root: tempfile::TempDir,
}

/// One request the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitRequest {
    pub method: String,
    /// The path, without the query string, e.g. `/acme/widgets.git/git-upload-pack`.
    pub path: String,
    pub query: Option<String>,
    /// Whether the request carried an `Authorization` header at all.
    pub has_authorization: bool,
    /// Whether that header held the configured token.
    pub authorized: bool,
    /// The status answered (a CGI failure is a 500).
    pub status: u16,
    /// When the request arrived (for timelines in benchmarks).
    pub received_at: Instant,
}

impl GitRequest {
    /// Whether this is the start of an authorized fetch or clone: the ref advertisement
    /// (`GET …/info/refs?service=git-upload-pack`), asked once per fetch whatever the protocol
    /// version (v2 then makes several POSTs, v0 one or more).
    pub fn is_fetch(&self) -> bool {
        self.authorized
            && self.status == 200
            && self.method == "GET"
            && self.path.ends_with("/info/refs")
            && self.query.as_deref() == Some("service=git-upload-pack")
    }
}

/// One push (`POST …/git-receive-pack`) the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Push {
    /// `owner/name`.
    pub repo: String,
    /// The ref updates the client asked for (the server may have refused some: a lease that did
    /// not hold). Empty when the request was compressed and could not be read.
    pub updates: Vec<RefUpdate>,
}

/// `old new name` of a push command; an all-zero id is an absent ref (created or deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefUpdate {
    pub old: String,
    pub new: String,
    pub name: String,
}

impl Push {
    fn touches(&self, repo: &str, reference: &str) -> bool {
        self.repo == repo
            && self
                .updates
                .iter()
                .any(|u| u.name == reference || u.name.strip_prefix("refs/heads/") == Some(reference))
    }
}

/// Decides whether a Basic-auth password is a valid token.
pub type TokenCheck = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Hears of the ref updates that took (see [`GitServer::on_push`]); called on the server's
/// thread or the test's, so it must be quick (hand the work to a thread of its own).
pub type PushHook = Arc<dyn Fn(&Push) + Send + Sync>;

struct Shared {
    accepts: TokenCheck,
    root: PathBuf,
    requests: Mutex<Vec<GitRequest>>,
    /// Every push, with whether a lookup has returned it.
    pushes: Mutex<Vec<(Push, bool)>>,
    hooks: Mutex<Vec<PushHook>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn requests(&self) -> MutexGuard<'_, Vec<GitRequest>> {
        // A test that panicked while holding the lock leaves consistent data behind.
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn pushes(&self) -> MutexGuard<'_, Vec<(Push, bool)>> {
        self.pushes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells every hook of the updates of `push` that took, if any.
    fn announce(&self, push: &Push) {
        if push.updates.is_empty() {
            return;
        }
        // Called outside the lock: a hook may look at the server.
        let hooks = self.hooks.lock().unwrap_or_else(PoisonError::into_inner).clone();
        for hook in hooks {
            hook(push);
        }
    }

    /// Marks seen the pushes `which` selects.
    fn saw(&self, which: impl Fn(&Push) -> bool) {
        for (push, seen) in self.pushes().iter_mut() {
            if which(push) {
                *seen = true;
            }
        }
    }
}

impl GitServer {
    /// Starts a server whose repositories accept `token` as the Basic-auth password.
    ///
    /// # Panics
    /// When no socket, directory or runtime can be had (see [`GitServer::try_start`]).
    pub fn start(token: &str) -> Self {
        match Self::try_start(token) {
            Ok(server) => server,
            Err(error) => panic!("git server: could not start: {error}"),
        }
    }

    /// Starts a server, reporting failure to bind, make its directory or spawn.
    pub fn try_start(token: &str) -> io::Result<Self> {
        let token = token.to_owned();
        Self::try_start_with(Arc::new(move |given| given == token))
    }

    /// Starts a server whose repositories accept the passwords `accepts` approves, e.g. the
    /// installation tokens a fake GitHub issued ([`crate::fake_github::FakeGithub::token_check`]).
    ///
    /// # Panics
    /// When no socket, directory or runtime can be had.
    pub fn start_with(accepts: TokenCheck) -> Self {
        match Self::try_start_with(accepts) {
            Ok(server) => server,
            Err(error) => panic!("git server: could not start: {error}"),
        }
    }

    /// [`GitServer::start_with`], reporting failure.
    pub fn try_start_with(accepts: TokenCheck) -> io::Result<Self> {
        let root = tempfile::tempdir()?;
        let shared = Arc::new(Shared {
            accepts,
            root: root.path().to_owned(),
            requests: Mutex::new(Vec::new()),
            pushes: Mutex::new(Vec::new()),
            hooks: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(handle).with_state(Arc::clone(&shared));
        let server = ServerThread::start("git-server", app, 2)?;
        Ok(Self { server, shared, root })
    }

    /// `http://127.0.0.1:PORT/owner/name.git`: the repository's clone URL, without credentials.
    pub fn url(&self, full_name: &str) -> String {
        format!("http://{}/{full_name}.git", self.server.addr())
    }

    /// The bare repository on disk.
    pub fn repo_path(&self, full_name: &str) -> PathBuf {
        self.root.path().join(format!("{full_name}.git"))
    }

    /// Calls `hook` from now on with every push's ref updates that took: a client's once git
    /// has applied them (refused ones left out; a push all of whose updates were refused is not
    /// heard of), and the commits this server makes itself ([`GitServer::commit`],
    /// [`GitServer::create_pull_head`]). Not [`GitServer::create_repo`]'s first commit.
    pub fn on_push(&self, hook: PushHook) {
        self.shared
            .hooks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(hook);
    }

    /// Every request received so far, in arrival order (every push is then seen).
    pub fn requests(&self) -> Vec<GitRequest> {
        self.shared.saw(|_| true);
        self.shared.requests().clone()
    }

    /// Every push received so far, in arrival order (marked seen).
    pub fn pushes(&self) -> Vec<Push> {
        self.shared.saw(|_| true);
        self.shared.pushes().iter().map(|(push, _)| push.clone()).collect()
    }

    /// The pushes no lookup has returned: what a test left unchecked.
    pub fn unseen_pushes(&self) -> Vec<Push> {
        self.shared
            .pushes()
            .iter()
            .filter(|(_, seen)| !seen)
            .map(|(push, _)| push.clone())
            .collect()
    }

    /// How many authorized fetches (see [`GitRequest::is_fetch`]) hit `full_name` so far.
    pub fn fetch_count(&self, full_name: &str) -> usize {
        let prefix = format!("/{full_name}.git/");
        self.shared
            .requests()
            .iter()
            .filter(|r| r.is_fetch() && r.path.starts_with(&prefix))
            .count()
    }

    /// Creates bare repository `owner/name.git` whose branch `main` holds one commit of `files`
    /// (path, content); returns that commit's id.
    pub fn create_repo(&self, full_name: &str, files: &[(&str, &str)]) -> io::Result<String> {
        let bare = self.repo_path(full_name);
        std::fs::create_dir_all(&bare)?;
        git(&bare, &["init", "-q", "--bare", "-b", "main"])?;
        let work = tempfile::tempdir()?;
        git(work.path(), &["init", "-q", "-b", "main"])?;
        commit_files(work.path(), files, "initial commit")?;
        push(work.path(), &bare, "refs/heads/main")
    }

    /// Creates bare repository `owner/name.git` with no commit and no ref at all: a fetch or
    /// push to it sees a server that advertises no refs (a repository just made on the forge).
    pub fn create_empty_repo(&self, full_name: &str) -> io::Result<()> {
        let bare = self.repo_path(full_name);
        std::fs::create_dir_all(&bare)?;
        git(&bare, &["init", "-q", "--bare", "-b", "main"])?;
        Ok(())
    }

    /// Adds a commit of `files` on top of `branch` (made from `main` when it does not exist yet);
    /// returns its id.
    pub fn commit(&self, full_name: &str, branch: &str, files: &[(&str, &str)], message: &str) -> io::Result<String> {
        let base = if self.has_ref(full_name, &format!("refs/heads/{branch}")) {
            branch
        } else {
            "main"
        };
        self.commit_onto(full_name, base, &format!("refs/heads/{branch}"), files, message)
    }

    /// Makes `refs/pull/N/head`: a commit of `files` on top of branch `base`; returns its id.
    pub fn create_pull_head(
        &self,
        full_name: &str,
        number: u64,
        base: &str,
        files: &[(&str, &str)],
        message: &str,
    ) -> io::Result<String> {
        self.commit_onto(full_name, base, &format!("refs/pull/{number}/head"), files, message)
    }

    /// The id `reference` points at, if it exists (the pushes to it are then seen).
    pub fn rev_parse(&self, full_name: &str, reference: &str) -> Option<String> {
        self.shared.saw(|push| push.touches(full_name, reference));
        self.resolve(full_name, reference)
    }

    /// The text of `path` at `reference` (a branch or ref name), if both exist (the pushes to
    /// the ref are then seen).
    pub fn show(&self, full_name: &str, reference: &str, path: &str) -> Option<String> {
        self.shared.saw(|push| push.touches(full_name, reference));
        git(&self.repo_path(full_name), &["show", &format!("{reference}:{path}")]).ok()
    }

    /// Whether `theirs` merges into `ours` (two branch or ref names) without a conflict, by real
    /// git's `merge-tree`: `Ok` with the merged tree's id, or `Err` with git's account of the
    /// conflicts (the pushes to both refs are then seen).
    ///
    /// # Errors
    /// The conflicting files and git's messages, or why git could not run.
    pub fn merge_tree(&self, full_name: &str, ours: &str, theirs: &str) -> Result<String, String> {
        self.shared
            .saw(|push| push.touches(full_name, ours) || push.touches(full_name, theirs));
        let output = Command::new("git")
            .args(["merge-tree", "--write-tree", "--messages", ours, theirs])
            .current_dir(self.repo_path(full_name))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("git merge-tree: {e}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if output.status.success() {
            Ok(stdout)
        } else {
            Err(format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr)))
        }
    }

    fn resolve(&self, full_name: &str, reference: &str) -> Option<String> {
        git(&self.repo_path(full_name), &["rev-parse", "--verify", "-q", reference])
            .ok()
            .map(|out| out.trim().to_owned())
    }

    fn has_ref(&self, full_name: &str, reference: &str) -> bool {
        self.resolve(full_name, reference).is_some()
    }

    fn commit_onto(
        &self,
        full_name: &str,
        base_branch: &str,
        destination: &str,
        files: &[(&str, &str)],
        message: &str,
    ) -> io::Result<String> {
        let bare = self.repo_path(full_name);
        let work = tempfile::tempdir()?;
        let bare_arg = bare.to_string_lossy();
        let work_arg = work.path().to_string_lossy();
        git(
            work.path(),
            &["clone", "-q", "--branch", base_branch, &bare_arg, &work_arg],
        )?;
        commit_files(work.path(), files, message)?;
        let old = self
            .resolve(full_name, destination)
            .unwrap_or_else(|| ZERO_ID.to_owned());
        let new = push(work.path(), &bare, destination)?;
        self.shared.announce(&Push {
            repo: full_name.to_owned(),
            updates: vec![RefUpdate {
                old,
                new: new.clone(),
                name: destination.to_owned(),
            }],
        });
        Ok(new)
    }
}

/// Writes `files` into the work tree at `dir` and commits them.
fn commit_files(dir: &Path, files: &[(&str, &str)], message: &str) -> io::Result<()> {
    for (path, content) in files {
        let full = dir.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(full, content)?;
    }
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-q", "--allow-empty", "-m", message])?;
    Ok(())
}

/// Pushes HEAD of the work tree at `dir` to `destination` in `bare`; returns the commit id.
fn push(dir: &Path, bare: &Path, destination: &str) -> io::Result<String> {
    let bare_arg = bare.to_string_lossy();
    git(dir, &["push", "-q", "-f", &bare_arg, &format!("HEAD:{destination}")])?;
    Ok(git(dir, &["rev-parse", "HEAD"])?.trim().to_owned())
}

/// Runs git in `dir` with a fixed identity; returns stdout, or an error with stderr.
fn git(dir: &Path, args: &[&str]) -> io::Result<String> {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()?;
    if !output.status.success() {
        return Err(io::Error::other(format!(
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Checks Basic auth, then hands the request to `git http-backend`.
async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let received_at = Instant::now();
    let method = request.method().as_str().to_owned();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().map(str::to_owned);
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let user = authorization
        .as_deref()
        .and_then(basic_credentials)
        .filter(|(_, password)| (shared.accepts)(password))
        .map(|(user, _)| user);
    let response = match &user {
        None => plain(StatusCode::UNAUTHORIZED, "authentication required\n", true),
        Some(user) => match run_backend(&shared, user, request).await {
            Ok(response) => response,
            Err(error) => plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("git server: http-backend failed: {error}\n"),
                false,
            ),
        },
    };
    shared.requests().push(GitRequest {
        method,
        path,
        query,
        has_authorization: authorization.is_some(),
        authorized: user.is_some(),
        status: response.status().as_u16(),
        received_at,
    });
    response
}

fn plain(status: StatusCode, text: &str, challenge: bool) -> Response {
    let mut response = Response::new(Body::from(text.to_owned()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    if challenge {
        headers.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"git\""),
        );
    }
    response
}

/// Runs the CGI program: streams the request body to its stdin, parses its headers, streams the
/// rest of its stdout back as the response body.
async fn run_backend(shared: &Arc<Shared>, user: &str, request: Request) -> io::Result<Response> {
    let root = &shared.root;
    // A push: its commands are read off the body as it streams to the backend.
    let push_to = (request.method() == axum::http::Method::POST)
        .then(|| request.uri().path().strip_suffix(".git/git-receive-pack"))
        .flatten()
        .map(|repo| repo.trim_start_matches('/').to_owned());
    let is_push = push_to.is_some();
    let compressed = request.headers().contains_key(header::CONTENT_ENCODING);
    let headers = request.headers();
    let header = |name: HeaderName| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let mut command = tokio::process::Command::new(HTTP_BACKEND);
    command
        .env_clear()
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", request.method().as_str())
        .env("PATH_INFO", request.uri().path())
        .env("QUERY_STRING", request.uri().query().unwrap_or(""))
        .env("REMOTE_USER", user)
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("GATEWAY_INTERFACE", "CGI/1.1")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    if let Some(value) = header(header::CONTENT_TYPE) {
        command.env("CONTENT_TYPE", value);
    }
    if let Some(value) = header(header::CONTENT_LENGTH) {
        command.env("CONTENT_LENGTH", value);
    }
    if let Some(value) = header(header::CONTENT_ENCODING) {
        command.env("HTTP_CONTENT_ENCODING", value);
    }
    if let Some(value) = header(HeaderName::from_static("git-protocol")) {
        command.env("GIT_PROTOCOL", value);
    }
    let mut child = command.spawn()?;
    let mut stdin = child.stdin.take().ok_or_else(|| io::Error::other("no stdin"))?;
    let stdout = child.stdout.take().ok_or_else(|| io::Error::other("no stdout"))?;
    let mut body = request.into_body().into_data_stream();
    let recorder = Arc::clone(shared);
    // The push's commands, for the hooks once the backend is done.
    let (asked, asked_for) = tokio::sync::oneshot::channel::<Push>();
    tokio::spawn(async move {
        // The commands come first, before the pack: recorded as soon as they are in, so before
        // the backend can answer.
        let mut commands = push_to.map(|repo| (repo, Vec::new()));
        let mut recorded = None;
        if compressed && let Some((repo, _)) = commands.take() {
            recorder.pushes().push((
                Push {
                    repo,
                    updates: Vec::new(),
                },
                false,
            ));
        }
        while let Some(Ok(chunk)) = body.next().await {
            if let Some((_, head)) = &mut commands {
                head.extend_from_slice(&chunk);
                if let Some(updates) = push_commands(head)
                    && let Some((repo, _)) = commands.take()
                {
                    let push = Push { repo, updates };
                    recorder.pushes().push((push.clone(), false));
                    recorded = Some(push);
                }
            }
            if stdin.write_all(&chunk).await.is_err() {
                break;
            }
        }
        if let Some((repo, head)) = commands {
            let updates = push_commands(&head).unwrap_or_default();
            let push = Push { repo, updates };
            recorder.pushes().push((push.clone(), false));
            recorded = Some(push);
        }
        if let Some(push) = recorded {
            // Nobody listens when the response was dropped.
            let _ = asked.send(push);
        }
        // Dropping stdin closes it: the backend sees the end of the body.
    });

    let mut reader = BufReader::new(stdout);
    let mut response = Response::new(Body::empty());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return Err(io::Error::other("the CGI response ended inside its headers"));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(io::Error::other(format!("bad CGI header line {line:?}")));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split_whitespace().next().unwrap_or("500");
            *response.status_mut() = code
                .parse::<u16>()
                .ok()
                .and_then(|c| StatusCode::from_u16(c).ok())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        } else if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            response.headers_mut().append(name, value);
        }
    }
    // The child is reaped by a task of its own, which then tells the hooks of the push's updates
    // that took: also when the client hangs up as soon as it has read the backend's report (a
    // body dropped before its end is never polled again). A body read to its end ends only once
    // the hooks have heard, so a client that reads it all sees their effects.
    let (heard, hooks_heard) = tokio::sync::oneshot::channel::<()>();
    let announce = is_push.then(|| (Arc::clone(shared), asked_for));
    tokio::spawn(async move {
        let _ = child.wait().await;
        if let Some((shared, asked_for)) = announce
            && let Ok(push) = asked_for.await
        {
            announce_applied(shared, push).await;
        }
        let _ = heard.send(());
    });
    let stream = futures_util::stream::unfold(
        (reader, Some(hooks_heard)),
        |(mut reader, mut hooks_heard)| async move {
            let mut buf = vec![0; 64 * 1024];
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => {
                    if let Some(hooks_heard) = hooks_heard.take() {
                        let _ = hooks_heard.await;
                    }
                    None
                }
                Ok(n) => {
                    buf.truncate(n);
                    Some((Ok::<_, io::Error>(Bytes::from(buf)), (reader, hooks_heard)))
                }
            }
        },
    );
    *response.body_mut() = Body::from_stream(stream);
    Ok(response)
}

/// Tells the hooks of the updates of `push` that took: those whose ref now holds what they asked
/// (a refused update left the ref where it was). A later push to the same ref racing this check
/// hides the update.
async fn announce_applied(shared: Arc<Shared>, push: Push) {
    if shared.hooks.lock().unwrap_or_else(PoisonError::into_inner).is_empty() {
        return;
    }
    let checked = tokio::task::spawn_blocking(move || {
        let bare = shared.root.join(format!("{}.git", push.repo));
        let updates = push
            .updates
            .iter()
            .filter(|update| {
                let now = git(&bare, &["rev-parse", "--verify", "-q", &update.name])
                    .map(|out| out.trim().to_owned())
                    .unwrap_or_else(|_| ZERO_ID.to_owned());
                now == update.new
            })
            .cloned()
            .collect();
        shared.announce(&Push {
            repo: push.repo.clone(),
            updates,
        });
    });
    // A panicking hook is the test's to report; the push itself is done.
    let _ = checked.await;
}

/// The ref updates at the start of a receive-pack request (pkt-lines up to the first flush), or
/// `None` while the flush has not arrived.
fn push_commands(head: &[u8]) -> Option<Vec<RefUpdate>> {
    let mut updates = Vec::new();
    let mut rest = head;
    loop {
        let length = usize::from_str_radix(std::str::from_utf8(rest.get(..4)?).ok()?, 16).ok()?;
        if length == 0 {
            return Some(updates);
        }
        let line = rest.get(4..length)?;
        rest = &rest[length..];
        let line = line.split(|b| *b == 0).next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let mut words = line.trim_end().split(' ');
        if let (Some(old), Some(new), Some(name)) = (words.next(), words.next(), words.next()) {
            updates.push(RefUpdate {
                old: old.to_owned(),
                new: new.to_owned(),
                name: name.to_owned(),
            });
        }
    }
}

/// `Basic base64(user:password)` → (user, password).
fn basic_credentials(value: &str) -> Option<(String, String)> {
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(base64_decode(encoded.trim())?).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

/// Standard base64 with padding; `None` on any other character.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in text.bytes().filter(|&c| c != b'=') {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn decodes_basic_credentials() {
        // base64("x-access-token:s3cret") computed with coreutils.
        assert_eq!(
            basic_credentials("Basic eC1hY2Nlc3MtdG9rZW46czNjcmV0").unwrap(),
            ("x-access-token".to_owned(), "s3cret".to_owned())
        );
        assert_eq!(basic_credentials("Bearer abc"), None);
    }

    #[test]
    fn serves_clones_to_the_real_git_client_with_the_token_only() {
        let server = GitServer::start("tok");
        let head = server.create_repo("acme/demo", &[("a.txt", "one\n")]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("clone");
        let authed = server.url("acme/demo").replace("http://", "http://x-access-token:tok@");
        git(dir.path(), &["clone", "-q", &authed, &dest.to_string_lossy()]).unwrap();
        assert_eq!(git(&dest, &["rev-parse", "HEAD"]).unwrap().trim(), head);
        let wrong = server
            .url("acme/demo")
            .replace("http://", "http://x-access-token:nope@");
        let failed = Command::new("git")
            .args(["clone", "-q", &wrong, &dir.path().join("no").to_string_lossy()])
            .env("GIT_TERMINAL_PROMPT", "0")
            .output()
            .unwrap();
        assert!(!failed.status.success());
        assert!(server.requests().iter().any(|r| r.status == 401 && r.has_authorization));
        assert_eq!(server.fetch_count("acme/demo"), 1);
    }

    #[test]
    fn records_each_push_with_its_ref_updates_until_a_lookup_sees_it() {
        let server = GitServer::start("tok");
        let main = server.create_repo("acme/demo", &[("a.txt", "one\n")]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("clone");
        let authed = server.url("acme/demo").replace("http://", "http://x-access-token:tok@");
        git(dir.path(), &["clone", "-q", &authed, &dest.to_string_lossy()]).unwrap();
        commit_files(&dest, &[("a.txt", "two\n")], "two").unwrap();
        let new = git(&dest, &["rev-parse", "HEAD"]).unwrap().trim().to_owned();
        git(&dest, &["push", "-q", "origin", "HEAD:refs/heads/fix", "HEAD:main"]).unwrap();
        let unseen = server.unseen_pushes();
        assert_eq!(unseen.len(), 1, "{unseen:#?}");
        let mut updates = unseen[0].updates.clone();
        updates.sort_by(|a, b| a.name.cmp(&b.name));
        let zero = "0".repeat(40);
        assert_eq!(
            updates,
            [
                RefUpdate {
                    old: zero,
                    new: new.clone(),
                    name: "refs/heads/fix".to_owned()
                },
                RefUpdate {
                    old: main,
                    new,
                    name: "refs/heads/main".to_owned()
                },
            ]
        );
        // Reading one of its refs is looking at the push.
        assert_eq!(server.show("acme/demo", "fix", "a.txt").as_deref(), Some("two\n"));
        assert!(server.unseen_pushes().is_empty());
        assert_eq!(server.pushes().len(), 1);
    }
}
