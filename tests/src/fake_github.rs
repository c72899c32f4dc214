//! A stateful fake of GitHub's REST API (and of the part of its GraphQL API pitcrew uses) for
//! end-to-end tests, served over real HTTP on `127.0.0.1`, that checks every request against
//! GitHub's own REST description (`../shared/fixtures/github-openapi/api.github.com.subset.json`)
//! or GraphQL schema (`../shared/fixtures/github-graphql/schema.graphql`).
//!
//! Each request is routed by the description: an unknown path, a method the path does not have,
//! a path or query parameter of the wrong type, or a JSON body that breaks the operation's
//! `requestBody` schema is recorded as a *violation* and answered as GitHub would (404 or 422,
//! GitHub's error shape, the JSON path of the problem in the message). So is a request without
//! `User-Agent` (GitHub answers those 403). An operation of the
//! description the fake does not implement is a violation too. [`FakeGithub::violations`] lists
//! them; dropping a fake that has any fails the test, so no test can forget to look.
//!
//! Authentication is GitHub's: `/app/...` (and `GET /repos/{o}/{r}/installation`) take an App JWT
//! (RS256, checked with the test App's public key, `iss` the App id, GitHub's time rules); the
//! repository endpoints take an installation token the fake issued or a token the test
//! registered ([`FakeGithub::allow_token`]), as `Bearer` or `token`. Anything else is a 401.
//!
//! Beyond the subset of the description the fake started with, requests are routed and validated
//! by GitHub's full description, loaded on the first request the subset does not cover: GitHub
//! Actions (workflow runs, jobs of every attempt, job re-runs, job logs), the pull requests of a
//! commit and a repository's tags. A job log download is answered as GitHub does, with a 302 to a
//! signed URL on storage (here `/_blobs/job-logs/…`, outside the API); a request there that carries
//! an `Authorization` header is a violation: the token would have left GitHub's API. Every Actions
//! job is also a check run of the `github-actions` app, listed with the bot's own and other apps'
//! check runs; a commit's check runs are held in check suites (one per workflow run, one per other
//! app), listed by `GET …/commits/{ref}/check-suites`. [`FakeGithub::push_branch`] is a push as
//! GitHub sees it: the open pull requests from the branch move to the new commit.
//!
//! `POST /graphql` is GitHub's GraphQL API (`graphql.rs`), with the repository endpoints'
//! authentication: every query is parsed and validated against GitHub's published schema, its
//! operation and variables checked, then executed over the state (`review_threads.rs`: a pull
//! request's review threads, with their comments and replies, and resolving one). A query the
//! schema refuses, variables of the wrong type, and a field, operation or paging the fake does not
//! serve are violations, answered as GitHub answers them (200 with `errors`); a lookup that finds
//! nothing is GitHub's `NOT_FOUND` error. GraphQL requests are recorded as operation
//! [`GRAPHQL_OPERATION`], with the GraphQL operation's name in
//! [`GithubRequest::graphql_operation`].
//!
//! Every response carries `x-ratelimit-limit`/`-remaining`/`-reset`/`-used`/`-resource` and an
//! `x-github-request-id`. [`FakeGithub::fail_next`] injects faults (rate limits, 5xx) for the next
//! requests that match a method and a path prefix or template. Every request is recorded
//! ([`FakeGithub::requests`]) without its credentials, and [`FakeGithub::wait_until`] waits for a
//! condition on the state, woken by each change (it works on paused tokio time too: its timeout
//! is measured on the wall clock).
//!
//! What a client writes (comments, reviews, review comments, check runs, reactions, issues and pull
//! requests, created or changed, review threads resolved) is an *output*; the lookups mark what
//! they return as seen, and [`FakeGithub::unseen_outputs`] lists the rest, so a test harness can
//! fail a test that left one unchecked.
//!
//! ```no_run
//! use pitcrew_tests::fake_github::{FakeGithub, Issue, Permission, Repo};
//!
//! let github = FakeGithub::builder()
//!     .repo(Repo::new("acme/widgets").clone_url("http://127.0.0.1:9/acme/widgets.git"))
//!     .permission("acme/widgets", "alice", Permission::Write)
//!     .issue("acme/widgets", Issue::pull_request(7, "Fix it", ("fix", "a1b2c3"), ("main", "d4e5f6")))
//!     .start();
//! let comment = github.add_issue_comment("acme/widgets", 7, "alice", "@agent fix this");
//! // Point pitcrew's `[github] api_url` at github.url(), sign JWTs with FakeGithub::test_private_key_path() …
//! # let _ = comment;
//! ```

mod actions;
mod apps;
mod auth;
mod checks;
mod context;
mod git;
pub mod graphql;
mod issues;
mod manifests;
pub mod openapi;
mod pulls;
mod reactions;
mod repos;
mod review_threads;
mod routes;
mod state;
pub(crate) mod wire;

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::Notify;

pub use self::apps::MANIFEST_WEBHOOK_SECRET;
use self::auth::{AppKey, Needs};
pub use self::auth::{AuthKind, MAX_JWT_AHEAD_SECS, MAX_JWT_LIFETIME_SECS, sign_app_jwt};
use self::context::{AppConfig, Ctx, Payload, RateLimit, Reply};
pub use self::openapi::{Operation, RouteError, SchemaError, Spec, SpecError};
pub use self::state::{
    ActionsJob, AppManifest, CheckRun, ExternalCheckRun, GITHUB_ACTIONS_APP_ID, GITHUB_ACTIONS_APP_SLUG, GithubState,
    Issue, IssueComment, IssuedToken, JobRerun, JobStep, LogDownload, Permission, PullBase, PullHead, PullInfo,
    Reaction, ReactionTarget, Repo, Review, ReviewComment, ReviewThread, WorkflowRun,
};
use crate::server_thread::ServerThread;

/// What [`GithubRequest::operation`] says of a request to GraphQL's endpoint, for
/// [`FakeGithub::requests_to`].
pub const GRAPHQL_OPERATION: &str = "graphql";

/// Largest request body read.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// GitHub's primary limit for an installation.
const RATE_LIMIT: u64 = 5000;

/// Request headers worth keeping in the record; `authorization` never is.
const RECORDED_HEADERS: [&str; 5] = [
    "accept",
    "content-type",
    "user-agent",
    "x-github-api-version",
    "if-none-match",
];

/// A running fake. Dropping it stops the server, and fails the test when violations are left.
#[derive(Debug)]
pub struct FakeGithub {
    server: ServerThread,
    shared: Arc<Shared>,
}

/// One request the fake received, without credentials.
#[derive(Debug, Clone)]
pub struct GithubRequest {
    /// 1 for the first request, then counting up.
    pub sequence: u64,
    /// When the request arrived (for timelines in benchmarks).
    pub received_at: Instant,
    pub method: String,
    /// The path, without the query string.
    pub path: String,
    pub query: Option<String>,
    /// GitHub's operation id (`issues/create-comment`) when the path and method matched one;
    /// [`GRAPHQL_OPERATION`] for `/graphql`.
    pub operation: Option<String>,
    /// For a GraphQL request GitHub would run: its operation's name (`ReviewThreads`), or `query`
    /// or `mutation` for an anonymous one.
    pub graphql_operation: Option<String>,
    /// Selected headers (lowercase names): accept, content-type, user-agent, x-github-api-version.
    pub headers: Vec<(String, String)>,
    pub auth: AuthKind,
    /// The body as JSON; `Null` when empty or not JSON.
    pub body: Value,
    pub status: u16,
    /// The response body as JSON; `Null` when empty or not JSON.
    pub response: Value,
}

impl GithubRequest {
    /// The first value of header `name` (case-insensitive), among the recorded ones.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An injected failure: answers the next `remaining` matching requests instead of the fake.
#[derive(Debug, Clone)]
struct Fault {
    /// Uppercase method, or `*`.
    method: String,
    /// A path prefix (`/repos/acme/widgets/check-runs`) or a description template
    /// (`/repos/{owner}/{repo}/check-runs/{check_run_id}`).
    pattern: String,
    remaining: usize,
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Fault {
    fn matches(&self, method: &str, path: &str, template: Option<&str>) -> bool {
        let method_ok = self.method == "*" || self.method.eq_ignore_ascii_case(method);
        let path_ok = if self.pattern.contains('{') {
            template == Some(self.pattern.as_str())
        } else {
            path.starts_with(&self.pattern)
        };
        method_ok && path_ok && self.remaining > 0
    }
}

#[derive(Debug)]
struct Shared {
    app: AppKey,
    config: Mutex<AppConfig>,
    inner: Mutex<Inner>,
    changed: Notify,
    sequence: AtomicU64,
}

#[derive(Debug)]
struct Inner {
    state: GithubState,
    violations: Vec<String>,
    requests: Vec<GithubRequest>,
    faults: Vec<Fault>,
    rate_used: u64,
    rate_reset: u64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A test that panicked while holding the lock leaves consistent data behind.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn config(&self) -> AppConfig {
        self.config.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Applies `change` to the state and wakes every waiter.
    fn change<R>(&self, change: impl FnOnce(&mut GithubState) -> R) -> R {
        let result = change(&mut self.lock().state);
        self.changed.notify_waiters();
        result
    }
}

/// Builds a fake with its App and initial state.
#[derive(Debug)]
pub struct FakeGithubBuilder {
    app_id: u64,
    client_id: String,
    slug: String,
    installation_id: u64,
    account: Option<String>,
    public_key_pem: Option<Vec<u8>>,
    token_lifetime: Duration,
    app_settings: Option<(Value, Vec<String>)>,
    installed: bool,
    state: GithubState,
}

impl Default for FakeGithubBuilder {
    fn default() -> Self {
        FakeGithubBuilder {
            app_id: 12345,
            client_id: "Iv1.fakepitcrew0001".to_owned(),
            slug: "pitcrew".to_owned(),
            installation_id: 4242,
            account: None,
            public_key_pem: None,
            token_lifetime: Duration::from_secs(3600),
            app_settings: None,
            installed: true,
            state: GithubState::default(),
        }
    }
}

impl FakeGithubBuilder {
    /// The App's permissions (`{"contents": "write", …}`) and webhook events, as `GET /app`
    /// answers them.
    pub fn app_settings(mut self, permissions: Value, events: &[&str]) -> Self {
        self.app_settings = Some((permissions, events.iter().map(|e| (*e).to_owned()).collect()));
        self
    }

    /// The App installed nowhere: `GET /app/installations` lists none.
    pub fn not_installed(mut self) -> Self {
        self.installed = false;
        self
    }

    /// The App id JWTs must name in `iss` (default 12345).
    pub fn app_id(mut self, id: u64) -> Self {
        self.app_id = id;
        self
    }

    /// The App's client id, also accepted as `iss`.
    pub fn client_id(mut self, id: &str) -> Self {
        id.clone_into(&mut self.client_id);
        self
    }

    /// The App's slug (default `pitcrew`); its bot is `<slug>[bot]`.
    pub fn app_slug(mut self, slug: &str) -> Self {
        slug.clone_into(&mut self.slug);
        self
    }

    /// The one installation's id (default 4242).
    pub fn installation_id(mut self, id: u64) -> Self {
        self.installation_id = id;
        self
    }

    /// The installation's account (default: the owner of the first repository).
    pub fn account(mut self, login: &str) -> Self {
        self.account = Some(login.to_owned());
        self
    }

    /// The PEM public key JWTs are verified with (default: the test App's key).
    pub fn public_key_pem(mut self, pem: &[u8]) -> Self {
        self.public_key_pem = Some(pem.to_vec());
        self
    }

    /// How long installation tokens live (default one hour).
    pub fn token_lifetime(mut self, lifetime: Duration) -> Self {
        self.token_lifetime = lifetime;
        self
    }

    pub fn repo(mut self, repo: Repo) -> Self {
        self.state.add_repo(repo);
        self
    }

    pub fn permission(mut self, repo: &str, login: &str, permission: Permission) -> Self {
        self.state
            .permissions
            .insert((repo.to_owned(), login.to_owned()), permission);
        self
    }

    /// An issue or pull request ([`Issue::pull_request`]).
    pub fn issue(mut self, repo: &str, issue: Issue) -> Self {
        self.state.add_issue(repo, issue);
        self
    }

    /// A file served by `GET /repos/{repo}/contents/{path}?ref={reference}` (the default branch
    /// when `ref` is absent).
    pub fn file(mut self, repo: &str, reference: &str, path: &str, content: impl Into<Vec<u8>>) -> Self {
        let key = (repo.to_owned(), reference.to_owned(), path.to_owned());
        self.state.files.insert(key, content.into());
        self
    }

    /// Branch `branch` of `repo` points at `sha` (for new pull requests).
    pub fn branch(mut self, repo: &str, branch: &str, sha: &str) -> Self {
        self.state
            .branches
            .insert((repo.to_owned(), branch.to_owned()), sha.to_owned());
        self
    }

    /// A GitHub Actions workflow run of `repo` (add its jobs with [`FakeGithubBuilder::actions_job`]).
    pub fn workflow_run(mut self, repo: &str, run: WorkflowRun) -> Self {
        self.state.add_workflow_run(repo, run);
        self
    }

    /// A job of a workflow run added before; see [`FakeGithub::add_actions_job`].
    pub fn actions_job(mut self, repo: &str, job: ActionsJob) -> Self {
        self.state.add_actions_job(repo, job);
        self
    }

    /// A check run of another app; see [`FakeGithub::add_external_check_run`].
    pub fn external_check_run(mut self, repo: &str, run: ExternalCheckRun) -> Self {
        self.state.add_external_check_run(repo, run);
        self
    }

    /// A static token accepted on repository endpoints, acting as the App's bot.
    pub fn token(mut self, token: &str) -> Self {
        let login = format!("{}[bot]", self.slug);
        self.state.tokens.push(static_token(token, &login));
        self
    }

    /// Starts the fake.
    ///
    /// # Panics
    /// When the description or key cannot be loaded or no socket can be had.
    pub fn start(self) -> FakeGithub {
        match self.try_start() {
            Ok(fake) => fake,
            Err(error) => panic!("fake GitHub: could not start: {error}"),
        }
    }

    /// Starts the fake, reporting failure to load the description or key, bind or spawn.
    pub fn try_start(self) -> io::Result<FakeGithub> {
        // Parse the 1.9 MB description before the first request, not during it.
        Spec::github().map_err(io::Error::other)?;
        let pem = match self.public_key_pem {
            Some(pem) => pem,
            None => std::fs::read(FakeGithub::test_public_key_path())?,
        };
        let key = crate::jwt::rsa_public_key(&pem).map_err(|e| io::Error::other(format!("App public key: {e}")))?;
        let account = self
            .account
            .or_else(|| self.state.repos.values().next().map(|r| r.owner().to_owned()))
            .unwrap_or_else(|| "octo-org".to_owned());
        let shared = Arc::new(Shared {
            app: AppKey {
                app_id: self.app_id,
                client_id: self.client_id.clone(),
                key,
            },
            config: Mutex::new(AppConfig {
                app_id: self.app_id,
                client_id: self.client_id,
                slug: self.slug,
                installation_id: self.installation_id,
                account,
                base_url: String::new(),
                token_lifetime: self.token_lifetime,
                app_settings: self.app_settings,
                installed: self.installed,
            }),
            inner: Mutex::new(Inner {
                state: self.state,
                violations: Vec::new(),
                requests: Vec::new(),
                faults: Vec::new(),
                rate_used: 0,
                rate_reset: wire::unix_now() + 3600,
            }),
            changed: Notify::new(),
            sequence: AtomicU64::new(0),
        });
        let app = Router::new().fallback(handle).with_state(Arc::clone(&shared));
        let server = ServerThread::start("fake-github", app, 0)?;
        shared.config.lock().unwrap_or_else(PoisonError::into_inner).base_url = format!("http://{}", server.addr());
        Ok(FakeGithub { server, shared })
    }
}

/// The fake's state for the crate's other fakes (the fake CI): their changes wake the fake's
/// waiters as the API's do. Holding one keeps the state, not the server.
#[derive(Debug, Clone)]
pub(crate) struct StateHandle {
    shared: Arc<Shared>,
}

impl StateHandle {
    /// Applies `change` to the state and wakes every waiter.
    pub(crate) fn change<R>(&self, change: impl FnOnce(&mut GithubState) -> R) -> R {
        self.shared.change(change)
    }

    pub(crate) fn read<R>(&self, read: impl FnOnce(&GithubState) -> R) -> R {
        read(&self.shared.lock().state)
    }
}

fn static_token(token: &str, login: &str) -> IssuedToken {
    IssuedToken {
        token: token.to_owned(),
        login: login.to_owned(),
        installation_id: None,
        expires_at: None,
        permissions: Value::Null,
    }
}

impl FakeGithub {
    /// Whether `token` is one this fake accepts right now (an unexpired installation token it
    /// issued, or an allowed static one): hand it to [`crate::git_server::GitServer::start_with`]
    /// so that git over HTTP takes the same tokens as the API.
    pub fn token_check(&self) -> crate::git_server::TokenCheck {
        let shared = Arc::clone(&self.shared);
        Arc::new(move |token: &str| {
            let inner = shared.inner.lock().unwrap_or_else(PoisonError::into_inner);
            let now = wire::unix_now();
            inner
                .state
                .tokens
                .iter()
                .any(|t| t.token == token && t.expires_at.is_none_or(|at| at > now))
        })
    }

    /// The state, for the crate's other fakes.
    pub(crate) fn handle(&self) -> StateHandle {
        StateHandle {
            shared: Arc::clone(&self.shared),
        }
    }

    /// A fake with the default App and no repositories.
    ///
    /// # Panics
    /// See [`FakeGithubBuilder::start`].
    pub fn start() -> FakeGithub {
        FakeGithub::builder().start()
    }

    pub fn builder() -> FakeGithubBuilder {
        FakeGithubBuilder::default()
    }

    /// `http://127.0.0.1:PORT`: the API base URL (pitcrew's `[github] api_url`), no trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    pub fn app_id(&self) -> u64 {
        self.shared.app.app_id
    }

    pub fn installation_id(&self) -> u64 {
        self.shared.config().installation_id
    }

    /// The login the App's tokens act as: `<slug>[bot]`.
    pub fn bot_login(&self) -> String {
        self.shared.config().bot_login()
    }

    /// The test App's private key (PEM), whose public half the fake trusts by default.
    pub fn test_private_key_path() -> PathBuf {
        auth::test_private_key_path()
    }

    pub fn test_public_key_path() -> PathBuf {
        auth::test_public_key_path()
    }

    /// A JWT for this fake's App, signed with the test key: `iat` a minute ago, `exp` in nine
    /// minutes.
    ///
    /// # Panics
    /// When the test key cannot be read.
    pub fn app_jwt(&self) -> String {
        let now = wire::unix_now();
        let key = std::fs::read(Self::test_private_key_path())
            .unwrap_or_else(|e| panic!("{}: {e}", Self::test_private_key_path().display()));
        sign_app_jwt(&key, &json!(self.app_id()), now - 60, now + 540)
            .unwrap_or_else(|e| panic!("fake GitHub: signing a JWT: {e}"))
    }

    /// Accepts `token` on repository endpoints, acting as the App's bot.
    pub fn allow_token(&self, token: &str) {
        let login = self.bot_login();
        self.allow_token_as(token, &login);
    }

    /// Accepts `token` on repository endpoints, acting as user `login`.
    pub fn allow_token_as(&self, token: &str, login: &str) {
        self.shared.change(|s| s.tokens.push(static_token(token, login)));
    }

    /// Installation tokens issued from now on live `lifetime`.
    pub fn set_token_lifetime(&self, lifetime: Duration) {
        self.shared
            .config
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .token_lifetime = lifetime;
    }

    /// Makes every installation token issued so far expired, as if its hour had passed.
    pub fn expire_installation_tokens(&self) {
        let now = wire::unix_now();
        self.shared.change(|s| {
            for token in s.tokens.iter_mut().filter(|t| t.installation_id.is_some()) {
                token.expires_at = Some(now);
            }
        });
    }

    pub fn add_repo(&self, repo: Repo) {
        self.shared.change(|s| s.add_repo(repo));
    }

    /// Changes repository `full_name` (e.g. its `clone_url`).
    ///
    /// # Panics
    /// When there is no such repository.
    pub fn update_repo(&self, full_name: &str, update: impl FnOnce(&mut Repo)) {
        self.shared.change(|s| match s.repos.get_mut(full_name) {
            Some(repo) => update(repo),
            None => panic!("fake GitHub: no repository {full_name}"),
        });
    }

    pub fn set_permission(&self, repo: &str, login: &str, permission: Permission) {
        self.shared
            .change(|s| s.permissions.insert((repo.to_owned(), login.to_owned()), permission));
    }

    /// Adds (or replaces) an issue or pull request.
    pub fn add_issue(&self, repo: &str, issue: Issue) {
        self.shared.change(|s| s.add_issue(repo, issue));
    }

    /// Changes pull request or issue `number` (e.g. a new head commit).
    ///
    /// # Panics
    /// When there is no such issue.
    pub fn update_issue(&self, repo: &str, number: u64, update: impl FnOnce(&mut Issue)) {
        self.shared
            .change(|s| match s.issues.get_mut(&(repo.to_owned(), number)) {
                Some(issue) => update(issue),
                None => panic!("fake GitHub: no issue {repo}#{number}"),
            });
    }

    /// See [`FakeGithubBuilder::file`].
    pub fn add_file(&self, repo: &str, reference: &str, path: &str, content: impl Into<Vec<u8>>) {
        let key = (repo.to_owned(), reference.to_owned(), path.to_owned());
        self.shared.change(|s| s.files.insert(key, content.into()));
    }

    /// See [`FakeGithubBuilder::branch`].
    pub fn set_branch(&self, repo: &str, branch: &str, sha: &str) {
        self.shared
            .change(|s| s.branches.insert((repo.to_owned(), branch.to_owned()), sha.to_owned()));
    }

    /// A push moved branch `branch` of `repo` to `sha`, as GitHub sees it: the branch's registered
    /// head (if one is) and the head of every open pull request from that branch of `repo` move
    /// there. Returns those pull requests' numbers.
    pub fn push_branch(&self, repo: &str, branch: &str, sha: &str) -> Vec<u64> {
        self.shared.change(|s| s.branch_pushed(repo, branch, sha))
    }

    /// Tag `name` of `repo` points at `sha` (moved there when it exists, as major-version tags of
    /// actions such as `v4` move); listed by `GET /repos/{owner}/{repo}/tags`.
    pub fn add_tag(&self, repo: &str, name: &str, sha: &str) {
        self.shared
            .change(|s| s.tags.insert((repo.to_owned(), name.to_owned()), sha.to_owned()));
    }

    /// A comment by `user` on issue or pull request `number` (what a webhook would announce);
    /// returns its id.
    pub fn add_issue_comment(&self, repo: &str, number: u64, user: &str, body: &str) -> u64 {
        self.shared.change(|s| s.add_issue_comment(repo, number, user, body))
    }

    /// A review comment by `user` on `path` line `line` of pull request `number`; returns its id.
    pub fn add_review_comment(&self, repo: &str, number: u64, user: &str, body: &str, path: &str, line: u64) -> u64 {
        self.shared
            .change(|s| s.add_review_comment(repo, number, None, None, user, body, path, Some(line)))
    }

    /// Adds a GitHub Actions workflow run to `repo`; returns its id (the run's own, or a fresh one
    /// when it is 0).
    ///
    /// # Panics
    /// When a workflow run with that id exists.
    pub fn add_workflow_run(&self, repo: &str, run: WorkflowRun) -> u64 {
        self.shared.change(|s| s.add_workflow_run(repo, run))
    }

    /// Adds a job (one attempt of it) to its workflow run, which must be in `repo`; returns its id,
    /// which is also the id of the check run GitHub Actions has for it. The job takes the run's
    /// commit when it has none, and raises the run's attempt to its own.
    ///
    /// # Panics
    /// When the run is not in `repo`, or a check run or job has that id already.
    pub fn add_actions_job(&self, repo: &str, job: ActionsJob) -> u64 {
        self.shared.change(|s| s.add_actions_job(repo, job))
    }

    /// Adds a check run made by another app (a CI service, a linter); returns its id.
    ///
    /// # Panics
    /// When a check run or job has that id already.
    pub fn add_external_check_run(&self, repo: &str, run: ExternalCheckRun) -> u64 {
        self.shared.change(|s| s.add_external_check_run(repo, run))
    }

    /// Makes job `job_id`'s log expired: its download answers 410, and URLs signed before stop
    /// working.
    ///
    /// # Panics
    /// When there is no such job.
    pub fn expire_job_logs(&self, job_id: u64) {
        self.shared.change(|s| match s.actions_jobs.get_mut(&job_id) {
            Some(job) => job.logs_expired = true,
            None => panic!("fake GitHub: no Actions job {job_id}"),
        });
    }

    /// Every job re-run asked for, in order.
    pub fn job_reruns(&self) -> Vec<JobRerun> {
        self.state(|s| s.job_reruns.clone())
    }

    /// Every fetch from the log storage, in order, with whether it carried an `Authorization`
    /// header.
    pub fn log_downloads(&self) -> Vec<LogDownload> {
        self.state(|s| s.log_downloads.clone())
    }

    /// Reads the state.
    pub fn state<R>(&self, read: impl FnOnce(&GithubState) -> R) -> R {
        read(&self.shared.lock().state)
    }

    /// Every check run, oldest first (marked seen).
    pub fn check_runs(&self) -> Vec<CheckRun> {
        self.state(|s| s.all_check_runs().into_iter().cloned().collect())
    }

    /// The comments on issue or pull request `number`, oldest first (marked seen).
    pub fn comments_on(&self, repo: &str, number: u64) -> Vec<IssueComment> {
        self.state(|s| s.comments_on(repo, number).into_iter().cloned().collect())
    }

    /// Every review, oldest first (marked seen, with their comments).
    pub fn reviews(&self) -> Vec<Review> {
        self.state(|s| s.all_reviews().into_iter().cloned().collect())
    }

    /// The pull requests of `repo`, by number (marked seen).
    pub fn pull_requests(&self, repo: &str) -> Vec<Issue> {
        self.state(|s| s.pull_requests(repo).into_iter().cloned().collect())
    }

    /// The review threads of pull request `number`, oldest first, with who resolved them (marked
    /// seen: resolving one through GraphQL is an output).
    pub fn review_threads(&self, repo: &str, number: u64) -> Vec<ReviewThread> {
        self.state(|s| s.review_threads_on(repo, number).into_iter().cloned().collect())
    }

    /// Changes the review thread of root comment `root_comment` as GitHub's users would (resolve
    /// it by hand, make it outdated); not an output.
    ///
    /// # Panics
    /// When there is no such thread.
    pub fn update_review_thread(&self, root_comment: u64, update: impl FnOnce(&mut ReviewThread)) {
        self.shared.change(|s| match s.review_threads.get_mut(&root_comment) {
            Some(thread) => update(thread),
            None => panic!("fake GitHub: no review thread of comment {root_comment}"),
        });
    }

    /// A reply by `user` to review comment `in_reply_to` (joining its thread); returns its id.
    ///
    /// # Panics
    /// When there is no such review comment.
    pub fn add_review_reply(&self, in_reply_to: u64, user: &str, body: &str) -> u64 {
        self.shared.change(|s| {
            let Some(parent) = s.review_comments.get(&in_reply_to).cloned() else {
                panic!("fake GitHub: no review comment {in_reply_to}");
            };
            let root = parent.in_reply_to.unwrap_or(parent.id);
            s.add_review_comment(
                &parent.repo,
                parent.pull_number,
                None,
                Some(root),
                user,
                body,
                &parent.path,
                parent.line,
            )
        })
    }

    /// The outputs the API wrote or changed that no lookup returned since (see [`GithubState`]):
    /// what a test left unchecked.
    pub fn unseen_outputs(&self) -> Vec<String> {
        self.state(GithubState::unseen_outputs)
    }

    /// How many installation tokens were asked for.
    pub fn token_requests(&self) -> usize {
        self.state(|s| s.token_requests)
    }

    /// Every request so far, in arrival order (what they wrote is then seen).
    pub fn requests(&self) -> Vec<GithubRequest> {
        let inner = self.shared.lock();
        inner.state.saw_answers(answers(&inner.requests));
        inner.requests.clone()
    }

    /// The requests to operation `operation_id` (e.g. `checks/update`, or [`GRAPHQL_OPERATION`] for
    /// GraphQL's), in order (what they wrote through REST is then seen; a resolved review thread is
    /// seen through [`FakeGithub::review_threads`]).
    pub fn requests_to(&self, operation_id: &str) -> Vec<GithubRequest> {
        let inner = self.shared.lock();
        let requests: Vec<GithubRequest> = inner
            .requests
            .iter()
            .filter(|r| r.operation.as_deref() == Some(operation_id))
            .cloned()
            .collect();
        inner.state.saw_answers(answers(&requests));
        requests
    }

    /// Every violation so far: requests GitHub's description does not allow, or operations the
    /// fake does not implement.
    pub fn violations(&self) -> Vec<String> {
        self.shared.lock().violations.clone()
    }

    /// The violations so far, forgetting them (a test that provoked them on purpose calls this).
    pub fn take_violations(&self) -> Vec<String> {
        std::mem::take(&mut self.shared.lock().violations)
    }

    /// # Panics
    /// When there are violations, listing them.
    pub fn assert_no_violations(&self) {
        let violations = self.violations();
        if !violations.is_empty() {
            panic!("{}", describe_violations(&violations));
        }
    }

    /// Answers the next `n` requests matching `method` (or `*`) and `pattern` (a path prefix, or a
    /// template of the description such as `/repos/{owner}/{repo}/check-runs/{check_run_id}`)
    /// with `status`, `headers` (over the usual ones) and a JSON `body`, instead of serving them.
    /// The requests are still validated and recorded.
    pub fn fail_next(&self, method: &str, pattern: &str, n: usize, status: u16, headers: &[(&str, &str)], body: Value) {
        let fault = Fault {
            method: method.to_ascii_uppercase(),
            pattern: pattern.to_owned(),
            remaining: n,
            status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), (*v).to_owned()))
                .collect(),
            body,
        };
        self.shared.lock().faults.push(fault);
    }

    /// GitHub's primary rate limit: 403, `x-ratelimit-remaining: 0` and a reset `reset_in` ahead.
    pub fn fail_next_rate_limited(&self, method: &str, pattern: &str, n: usize, reset_in: Duration) {
        let reset = (wire::unix_now() + reset_in.as_secs()).to_string();
        let body = wire::error_body(
            403,
            &format!(
                "API rate limit exceeded for installation ID {}.",
                self.installation_id()
            ),
            "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
        );
        let limit = RATE_LIMIT.to_string();
        let headers = [
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-used", limit.as_str()),
            ("x-ratelimit-reset", reset.as_str()),
        ];
        self.fail_next(method, pattern, n, 403, &headers, body);
    }

    /// GitHub's secondary rate limit: `status` (403 or 429) with `retry-after`.
    pub fn fail_next_secondary_rate_limited(
        &self,
        method: &str,
        pattern: &str,
        n: usize,
        status: u16,
        retry_after: Duration,
    ) {
        let body = wire::error_body(
            status,
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out \
             to GitHub Support for help, please include the request ID.",
            "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
        );
        let retry = retry_after.as_secs().to_string();
        self.fail_next(method, pattern, n, status, &[("retry-after", retry.as_str())], body);
    }

    /// A server error (500, 502, 503…) in GitHub's shape.
    pub fn fail_next_server_error(&self, method: &str, pattern: &str, n: usize, status: u16) {
        let body = wire::error_body(status, "Server Error", "https://docs.github.com/rest");
        self.fail_next(method, pattern, n, status, &[], body);
    }

    /// Waits until `predicate` holds for the state, re-checking it after every change and every
    /// request; `false` when `timeout` (wall-clock time, so paused tokio time does not shorten
    /// it) passes first. The predicate runs under the fake's lock: it must not call the fake.
    pub async fn wait_until(&self, timeout: Duration, mut predicate: impl FnMut(&GithubState) -> bool) -> bool {
        self.wait(timeout, |inner| predicate(&inner.state)).await
    }

    /// Like [`FakeGithub::wait_until`], on the recorded requests.
    pub async fn wait_for_requests(
        &self,
        timeout: Duration,
        mut predicate: impl FnMut(&[GithubRequest]) -> bool,
    ) -> bool {
        self.wait(timeout, |inner| predicate(&inner.requests)).await
    }

    async fn wait(&self, timeout: Duration, mut predicate: impl FnMut(&Inner) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let alarm = Alarm::set(deadline);
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            // Registered before the check, so a change between the check and the await wakes us.
            notified.as_mut().enable();
            if predicate(&self.shared.lock()) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::select! {
                () = &mut notified => {}
                () = alarm.rang() => return predicate(&self.shared.lock()),
            }
        }
    }
}

impl Drop for FakeGithub {
    fn drop(&mut self) {
        let violations = self.violations();
        if !violations.is_empty() && !std::thread::panicking() {
            panic!("{}", describe_violations(&violations));
        }
    }
}

/// (operation, answer) of each request.
fn answers(requests: &[GithubRequest]) -> impl Iterator<Item = (&str, &Value)> {
    requests
        .iter()
        .filter_map(|r| r.operation.as_deref().map(|operation| (operation, &r.response)))
}

fn describe_violations(violations: &[String]) -> String {
    let mut text = format!(
        "fake GitHub: {} request(s) broke GitHub's REST API description (or its GraphQL schema):\n",
        violations.len()
    );
    for violation in violations {
        text.push_str("  - ");
        text.push_str(violation);
        text.push('\n');
    }
    text
}

/// A wall-clock alarm for async waits: a thread sleeps until the deadline and then wakes the
/// waiter; dropping the alarm ends the thread early.
pub(crate) struct Alarm {
    rang: Arc<Notify>,
    fired: Arc<AtomicBool>,
    cancelled: Arc<AtomicBool>,
    thread: std::thread::Thread,
}

impl Alarm {
    pub(crate) fn set(deadline: Instant) -> Alarm {
        let rang = Arc::new(Notify::new());
        let fired = Arc::new(AtomicBool::new(false));
        let cancelled = Arc::new(AtomicBool::new(false));
        let (ring, fire, cancel) = (Arc::clone(&rang), Arc::clone(&fired), Arc::clone(&cancelled));
        let handle = std::thread::spawn(move || {
            loop {
                if cancel.load(Ordering::Acquire) {
                    return;
                }
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                std::thread::park_timeout(deadline - now);
            }
            fire.store(true, Ordering::Release);
            // `notify_one` keeps a permit when nobody waits yet, so the ring is not lost.
            ring.notify_one();
        });
        Alarm {
            rang,
            fired,
            cancelled,
            thread: handle.thread().clone(),
        }
    }

    pub(crate) async fn rang(&self) {
        if self.fired.load(Ordering::Acquire) {
            return;
        }
        self.rang.notified().await;
        // Keep the permit for the next select round.
        self.rang.notify_one();
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

/// The one handler: route and validate by the description, inject faults, authenticate, serve,
/// record.
async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let sequence = shared.sequence.fetch_add(1, Ordering::Relaxed) + 1;
    let received_at = Instant::now();
    let (parts, body) = request.into_parts();
    // A body that cannot be read (client gone, too large) counts as empty.
    let bytes = to_bytes(body, MAX_BODY).await.unwrap_or_default();
    let method = parts.method.as_str().to_owned();
    let path = parts.uri.path().to_owned();
    let raw_query = parts.uri.query().map(str::to_owned);
    let query = wire::parse_query(raw_query.as_deref());
    let header_text = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let authorization = header_text(header::AUTHORIZATION.as_str());
    let has_user_agent = parts.headers.contains_key(header::USER_AGENT);
    // Several `Accept` headers count as one list, as HTTP has it.
    let accept = parts
        .headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(", ");
    let body_json = serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null);
    let config = shared.config();
    let now = wire::unix_now();
    if let Some(rest) = path.strip_prefix(actions::LOG_BLOB_PREFIX) {
        return serve_log_blob(&shared, &method, rest, &query, authorization.is_some());
    }
    // GitHub's web form of the App Manifest flow (not the API): a browser posts it.
    if let Some(owner) = manifests::form_owner(&method, &path) {
        let mut inner = shared.lock();
        let mut violations = Vec::new();
        let response = manifests::serve_form(&mut inner.state, owner, raw_query.as_deref(), &bytes, &mut violations);
        inner.violations.extend(violations);
        drop(inner);
        shared.changed.notify_waiters();
        return response;
    }
    let recorded_headers: Vec<(String, String)> = RECORDED_HEADERS
        .iter()
        .filter_map(|name| header_text(name).map(|v| ((*name).to_owned(), v)))
        .collect();
    if path == graphql::PATH {
        let request = GithubRequest {
            sequence,
            received_at,
            method,
            path,
            query: raw_query,
            operation: Some(GRAPHQL_OPERATION.to_owned()),
            graphql_operation: None,
            headers: recorded_headers,
            auth: AuthKind::None,
            body: body_json,
            status: 0,
            response: Value::Null,
        };
        return serve_graphql(&shared, request, authorization.as_deref(), has_user_agent);
    }

    let route = Spec::route_github(&method, &path).map_err(|e| e.to_string());
    let summary = format!(
        "{method} {path}{}",
        raw_query.as_deref().map(|q| format!("?{q}")).unwrap_or_default()
    );

    let mut inner = shared.lock();
    let mut violations = Vec::new();
    let mut auth_kind = AuthKind::None;
    let operation_id = route.as_ref().ok().map(|(_, op)| op.operation_id.to_owned());
    let template = route.as_ref().ok().map(|(_, op)| op.template.to_owned());

    let reply = match &route {
        Err(reason) => {
            violations.push(format!("{summary}: {reason}"));
            Reply::error(404, "Not Found", "https://docs.github.com/rest")
        }
        Ok((spec, op)) => {
            let body = (!bytes.is_empty()).then_some(&bytes[..]);
            let errors = spec.validate_request(op, &query, body);
            let fault = inner
                .faults
                .iter_mut()
                .find(|f| f.matches(&method, &path, template.as_deref()));
            if !has_user_agent {
                violations.push(format!(
                    "{summary}: no User-Agent header (GitHub refuses such requests)"
                ));
                Reply::error(
                    403,
                    "Request forbidden by administrative rules. Please make sure your request has a User-Agent header \
                     (https://docs.github.com/en/rest/overview/resources-in-the-rest-api#user-agent-required). Check \
                     https://developer.github.com for other possible causes.",
                    "https://docs.github.com/rest",
                )
            } else if !errors.is_empty() {
                let listed: Vec<String> = errors.iter().map(ToString::to_string).collect();
                violations.push(format!("{summary} ({}): {}", op.operation_id, listed.join("; ")));
                // A bad path parameter names no resource (404); a bad body or query is a 422.
                if errors.iter().any(|e| e.path.starts_with("path parameter")) {
                    Reply::error(404, "Not Found", op.docs_url)
                } else {
                    Reply::error(422, &format!("Invalid request.\n\n{}", listed.join("\n")), op.docs_url)
                }
            } else if let Some(fault) = fault {
                fault.remaining -= 1;
                Reply {
                    status: fault.status,
                    payload: Payload::Json(fault.body.clone()),
                    headers: fault.headers.clone(),
                }
            } else {
                let needs = Needs::of(op.operation_id, op.template);
                let (kind, caller) = auth::authorize(needs, authorization.as_deref(), &shared.app, &inner.state, now);
                auth_kind = kind;
                match caller {
                    Err(message) => Reply::error(401, &message, "https://docs.github.com/rest"),
                    Ok(caller) => {
                        inner.rate_used += 1;
                        let ctx = Ctx {
                            op,
                            path: &path,
                            query: &query,
                            body: &body_json,
                            caller: &caller,
                            accept: &accept,
                            cfg: &config,
                            rate: RateLimit {
                                limit: RATE_LIMIT,
                                used: inner.rate_used,
                                reset: inner.rate_reset,
                            },
                        };
                        match routes::handle(&mut inner.state, &ctx) {
                            Some(reply) => reply,
                            None => {
                                violations.push(format!(
                                    "{summary} ({}): the fake GitHub does not implement this operation",
                                    op.operation_id
                                ));
                                Reply::error(501, "Not Implemented by the fake GitHub", op.docs_url)
                            }
                        }
                    }
                }
            }
        }
    };
    let request = GithubRequest {
        sequence,
        received_at,
        method,
        path,
        query: raw_query,
        operation: operation_id,
        graphql_operation: None,
        headers: recorded_headers,
        auth: auth_kind,
        body: body_json,
        status: 0,
        response: Value::Null,
    };
    finish(&shared, inner, request, &reply, violations)
}

/// Records a served request with its answer and violations, and renders the answer.
fn finish(
    shared: &Shared,
    mut inner: MutexGuard<'_, Inner>,
    mut request: GithubRequest,
    reply: &Reply,
    violations: Vec<String>,
) -> Response {
    inner.faults.retain(|f| f.remaining > 0);
    let rate = RateLimit {
        limit: RATE_LIMIT,
        used: inner.rate_used,
        reset: inner.rate_reset,
    };
    let response = render(reply, rate, request.sequence);
    inner.violations.extend(violations);
    request.status = reply.status;
    request.response = match &reply.payload {
        Payload::Json(value) => value.clone(),
        Payload::Raw { .. } | Payload::Empty => Value::Null,
    };
    inner.requests.push(request);
    drop(inner);
    shared.changed.notify_waiters();
    response
}

/// `POST /graphql`: checked against GitHub's GraphQL schema and answered by `graphql.rs`, with the
/// repository endpoints' authentication; faults apply as to any path.
fn serve_graphql(
    shared: &Shared,
    mut request: GithubRequest,
    authorization: Option<&str>,
    has_user_agent: bool,
) -> Response {
    const DOCS: &str = "https://docs.github.com/graphql";
    let summary = format!("{} {}", request.method, request.path);
    let mut inner = shared.lock();
    let mut violations = Vec::new();
    let fault = inner
        .faults
        .iter_mut()
        .find(|f| f.matches(&request.method, &request.path, None));
    let reply = if request.method != "POST" {
        violations.push(format!("{summary}: GitHub's GraphQL API takes POST only"));
        Reply::error(404, "Not Found", DOCS)
    } else if !has_user_agent {
        violations.push(format!(
            "{summary}: no User-Agent header (GitHub refuses such requests)"
        ));
        Reply::error(403, "Request forbidden by administrative rules.", DOCS)
    } else if let Some(fault) = fault {
        fault.remaining -= 1;
        Reply {
            status: fault.status,
            payload: Payload::Json(fault.body.clone()),
            headers: fault.headers.clone(),
        }
    } else {
        let (kind, caller) = auth::authorize(Needs::Token, authorization, &shared.app, &inner.state, wire::unix_now());
        request.auth = kind;
        match caller {
            Err(message) => Reply::error(401, &message, DOCS),
            Ok(caller) => {
                inner.rate_used += 1;
                let login = caller.login(&shared.config().bot_login());
                let served = graphql::serve(&mut inner.state, &login, &request.body);
                let named = match &served.operation {
                    Some(label) => format!("{summary} ({label})"),
                    None => summary,
                };
                violations.extend(served.violations.iter().map(|v| format!("{named}: {v}")));
                request.graphql_operation = served.operation;
                let mut reply = Reply::json(200, served.answer);
                reply
                    .headers
                    .push(("x-ratelimit-resource".to_owned(), "graphql".to_owned()));
                reply
            }
        }
    };
    finish(shared, inner, request, &reply, violations)
}

/// The fake's log storage (not GitHub's API: neither validated by the description nor recorded as
/// a request); an `Authorization` header there is a violation.
fn serve_log_blob(
    shared: &Shared,
    method: &str,
    rest: &str,
    query: &[(String, String)],
    authorization: bool,
) -> Response {
    let (status, body) = {
        let mut inner = shared.lock();
        if authorization {
            inner.violations.push(format!(
                "{method} {}{rest}: the request to the log storage carried an Authorization header (a GitHub \
                 token sent off GitHub's API)",
                actions::LOG_BLOB_PREFIX
            ));
        }
        actions::serve_log(&mut inner.state, method, rest, query, authorization)
    };
    shared.changed.notify_waiters();
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The HTTP response for `reply`, with GitHub's rate-limit and request-id headers.
fn render(reply: &Reply, rate: RateLimit, sequence: u64) -> Response {
    let (body, content_type) = match &reply.payload {
        Payload::Json(value) => (Body::from(value.to_string()), Some("application/json; charset=utf-8")),
        Payload::Raw { bytes, content_type } => (Body::from(bytes.clone()), Some(*content_type)),
        Payload::Empty => (Body::empty(), None),
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut headers: Vec<(String, String)> = vec![
        ("x-ratelimit-limit".to_owned(), rate.limit.to_string()),
        ("x-ratelimit-remaining".to_owned(), rate.remaining().to_string()),
        ("x-ratelimit-reset".to_owned(), rate.reset.to_string()),
        ("x-ratelimit-used".to_owned(), rate.used.to_string()),
        ("x-ratelimit-resource".to_owned(), "core".to_owned()),
        ("x-github-request-id".to_owned(), wire::request_id(sequence)),
        ("x-github-api-version-selected".to_owned(), "2022-11-28".to_owned()),
    ];
    if let Some(content_type) = content_type {
        headers.push(("content-type".to_owned(), content_type.to_owned()));
    }
    // Injected and per-operation headers win over the defaults.
    headers.extend(reply.headers.iter().cloned());
    let map = response.headers_mut();
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            map.insert(name, value);
        }
    }
    response
}
