//! The fake GitHub's world: repositories, permissions, issues and pull requests, comments,
//! reactions, reviews and review threads, check runs (the bot's own and other apps'), GitHub Actions workflow runs and
//! jobs with their logs, and issued tokens. Tests read it through `&GithubState` (in
//! [`FakeGithub::state`](super::FakeGithub::state) and `wait_until` predicates); it changes only
//! through the API and the fake's own methods.
//!
//! What a client writes through the API (comments, reviews, review comments, check runs,
//! reactions, issues and pull requests, created or changed, and review threads resolved) is an
//! *output*: the test should look at each. The public lookups below ([`GithubState::comments_on`],
//! [`GithubState::check_runs_named`], [`GithubState::pull_requests`],
//! [`GithubState::review_threads_on`]…) mark what they return as seen; [`GithubState::unseen_outputs`]
//! lists the outputs written (or changed) since they were last looked at. The fake's routes read
//! through the crate-private twins, which mark nothing.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::git::git_output;
use super::wire;

/// A repository the fake knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// `owner/name`.
    pub full_name: String,
    pub id: u64,
    pub default_branch: String,
    pub private: bool,
    /// Where clients clone from; tests point it at a local git server.
    pub clone_url: String,
    pub html_url: String,
    /// A local (bare) repository the fake reads branch heads and file contents from when they
    /// were not registered: e.g. [`GitServer::repo_path`](crate::git_server::GitServer::repo_path).
    pub git_dir: Option<PathBuf>,
}

impl Repo {
    /// `owner/name` with branch `main`, public, GitHub-style URLs.
    pub fn new(full_name: &str) -> Self {
        Repo {
            full_name: full_name.to_owned(),
            id: 0,
            default_branch: "main".to_owned(),
            private: false,
            clone_url: format!("https://github.com/{full_name}.git"),
            html_url: format!("https://github.com/{full_name}"),
            git_dir: None,
        }
    }

    pub fn default_branch(mut self, branch: &str) -> Self {
        self.default_branch = branch.to_owned();
        self
    }

    pub fn private(mut self, private: bool) -> Self {
        self.private = private;
        self
    }

    pub fn clone_url(mut self, url: &str) -> Self {
        self.clone_url = url.to_owned();
        self
    }

    pub fn html_url(mut self, url: &str) -> Self {
        self.html_url = url.to_owned();
        self
    }

    pub fn git_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.git_dir = Some(dir.into());
        self
    }

    pub fn owner(&self) -> &str {
        self.full_name
            .split_once('/')
            .map_or(self.full_name.as_str(), |(owner, _)| owner)
    }

    pub fn name(&self) -> &str {
        self.full_name
            .split_once('/')
            .map_or(self.full_name.as_str(), |(_, name)| name)
    }
}

/// A collaborator's permission, as `GET …/collaborators/{username}/permission` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    None,
    Read,
    Triage,
    Write,
    Maintain,
    Admin,
}

impl Permission {
    /// The legacy `permission` field: triage reads as `read`, maintain as `write`.
    pub fn legacy_name(self) -> &'static str {
        match self {
            Permission::None => "none",
            Permission::Read | Permission::Triage => "read",
            Permission::Write | Permission::Maintain => "write",
            Permission::Admin => "admin",
        }
    }

    /// The `role_name` field.
    pub fn role_name(self) -> &'static str {
        match self {
            Permission::None => "none",
            Permission::Read => "read",
            Permission::Triage => "triage",
            Permission::Write => "write",
            Permission::Maintain => "maintain",
            Permission::Admin => "admin",
        }
    }
}

/// An issue, or the issue side of a pull request (`pull` is then set). Issues and pull requests
/// share one number sequence per repository, as on GitHub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub number: u64,
    pub id: u64,
    pub title: String,
    pub body: Option<String>,
    /// `open` or `closed`.
    pub state: String,
    /// The author's login.
    pub user: String,
    pub labels: Vec<String>,
    pub assignees: Vec<String>,
    pub pull: Option<PullInfo>,
    pub created_at: String,
    pub updated_at: String,
}

/// What a pull request has beyond its issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullInfo {
    pub head: PullHead,
    pub base: PullBase,
    pub maintainer_can_modify: bool,
    pub draft: bool,
    pub merged: bool,
    /// Logins and team slugs asked to review (`pulls/request-reviewers`).
    pub requested_reviewers: Vec<String>,
    pub requested_teams: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullHead {
    pub ref_name: String,
    pub sha: String,
    /// The repository the head branch lives in: the base repository, or a fork.
    pub repo_full_name: String,
    /// That repository's clone URL; `None` means the base repository's.
    pub clone_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullBase {
    pub ref_name: String,
    pub sha: String,
}

impl Issue {
    /// An open issue by `octocat` with no body.
    pub fn new(number: u64, title: &str) -> Self {
        let now = wire::now_rfc3339();
        Issue {
            number,
            id: 0,
            title: title.to_owned(),
            body: None,
            state: "open".to_owned(),
            user: "octocat".to_owned(),
            labels: Vec::new(),
            assignees: Vec::new(),
            pull: None,
            created_at: now.clone(),
            updated_at: now,
        }
    }

    /// An open pull request from branch `head_ref` of the same repository into `base_ref`.
    pub fn pull_request(number: u64, title: &str, head: (&str, &str), base: (&str, &str)) -> Self {
        let mut issue = Issue::new(number, title);
        issue.pull = Some(PullInfo {
            head: PullHead {
                ref_name: head.0.to_owned(),
                sha: head.1.to_owned(),
                repo_full_name: String::new(),
                clone_url: None,
            },
            base: PullBase {
                ref_name: base.0.to_owned(),
                sha: base.1.to_owned(),
            },
            maintainer_can_modify: false,
            draft: false,
            merged: false,
            requested_reviewers: Vec::new(),
            requested_teams: Vec::new(),
        });
        issue
    }

    pub fn body(mut self, body: &str) -> Self {
        self.body = Some(body.to_owned());
        self
    }

    pub fn user(mut self, login: &str) -> Self {
        self.user = login.to_owned();
        self
    }

    pub fn label(mut self, name: &str) -> Self {
        self.labels.push(name.to_owned());
        self
    }

    pub fn closed(mut self) -> Self {
        self.state = "closed".to_owned();
        self
    }

    /// The head branch lives in fork `full_name`, cloned from `clone_url`.
    pub fn from_fork(mut self, full_name: &str, clone_url: &str) -> Self {
        if let Some(pull) = &mut self.pull {
            pull.head.repo_full_name = full_name.to_owned();
            pull.head.clone_url = Some(clone_url.to_owned());
        }
        self
    }

    pub fn maintainer_can_modify(mut self, allowed: bool) -> Self {
        if let Some(pull) = &mut self.pull {
            pull.maintainer_can_modify = allowed;
        }
        self
    }

    pub fn draft(mut self, draft: bool) -> Self {
        if let Some(pull) = &mut self.pull {
            pull.draft = draft;
        }
        self
    }

    pub fn is_pull_request(&self) -> bool {
        self.pull.is_some()
    }
}

/// A comment on an issue or on a pull request's conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueComment {
    pub id: u64,
    pub repo: String,
    pub issue_number: u64,
    pub user: String,
    pub body: String,
    pub created_at: String,
    pub updated_at: String,
    /// Every body it had before the current one, oldest first.
    pub edits: Vec<String>,
}

/// A comment on a pull request's diff; a reply has `in_reply_to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewComment {
    pub id: u64,
    pub repo: String,
    pub pull_number: u64,
    /// The review it belongs to (GitHub makes one for a lone comment too).
    pub review_id: u64,
    pub in_reply_to: Option<u64>,
    pub user: String,
    pub body: String,
    pub path: String,
    pub line: Option<u64>,
    pub start_line: Option<u64>,
    pub side: Option<String>,
    pub commit_id: String,
    pub created_at: String,
    pub updated_at: String,
}

/// A review thread: a review comment that answers none (its root) and the replies to it, which
/// GitHub's GraphQL API lists as one `PullRequestReviewThread` that can be resolved. The fake keeps
/// one per root comment, made with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewThread {
    /// The root comment's id, which the thread shares: its node id is `PRRT_fake{root_comment}`.
    pub root_comment: u64,
    pub repo: String,
    pub pull_number: u64,
    pub path: String,
    /// Who resolved it, while it is resolved.
    pub resolved_by: Option<String>,
    /// The pull request's diff has moved on from the thread's line (GitHub then answers
    /// `isOutdated: true` and `line: null`). Only a test sets it.
    pub outdated: bool,
}

impl ReviewThread {
    /// The thread's GraphQL node id.
    pub fn node_id(&self) -> String {
        format!("PRRT_fake{}", self.root_comment)
    }

    /// The root comment of the thread whose node id is `node_id`, if it is one the fake hands out.
    pub(crate) fn root_of(node_id: &str) -> Option<u64> {
        node_id.strip_prefix("PRRT_fake")?.parse().ok()
    }

    pub fn is_resolved(&self) -> bool {
        self.resolved_by.is_some()
    }
}

/// A pull request review, as created (the request body is kept whole).
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    pub id: u64,
    pub repo: String,
    pub pull_number: u64,
    pub user: String,
    pub body: String,
    /// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED` or `PENDING`.
    pub state: String,
    pub commit_id: String,
    /// Ids of its inline comments, in request order.
    pub comment_ids: Vec<u64>,
    pub submitted_at: String,
    pub request: Value,
    /// The message it was dismissed with.
    pub dismissal: Option<String>,
}

/// What a reaction is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReactionTarget {
    IssueComment(u64),
    ReviewComment(u64),
    Issue { repo: String, number: u64 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaction {
    pub id: u64,
    pub target: ReactionTarget,
    pub user: String,
    /// `+1`, `-1`, `laugh`, `confused`, `heart`, `hooray`, `rocket` or `eyes`.
    pub content: String,
    pub created_at: String,
}

/// A check run and every request body that shaped it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRun {
    pub id: u64,
    pub repo: String,
    pub name: String,
    pub head_sha: String,
    /// `queued`, `in_progress` or `completed` (or what the client set).
    pub status: String,
    pub conclusion: Option<String>,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    pub details_url: Option<String>,
    pub external_id: Option<String>,
    /// The current `output` (title, summary, text), without annotations.
    pub output: Value,
    /// Every annotation sent, in order (GitHub appends them across updates).
    pub annotations: Vec<Value>,
    /// The create body, then each update body, verbatim.
    pub history: Vec<Value>,
}

impl CheckRun {
    /// The `status` each request left behind, in order: e.g. `["queued", "in_progress", "completed"]`.
    pub fn status_history(&self) -> Vec<String> {
        let mut status = "queued".to_owned();
        self.history
            .iter()
            .map(|body| {
                if let Some(s) = body["status"].as_str() {
                    s.clone_into(&mut status);
                }
                if body["conclusion"].is_string() {
                    "completed".clone_into(&mut status);
                }
                status.clone()
            })
            .collect()
    }
}

/// The GitHub Actions app: every Actions job is also a check run of this app, with the job's id.
pub const GITHUB_ACTIONS_APP_ID: u64 = 15368;
pub const GITHUB_ACTIONS_APP_SLUG: &str = "github-actions";

/// A GitHub Actions workflow run, as of its latest attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowRun {
    /// 0: assigned when added.
    pub id: u64,
    /// `owner/name`, set when added.
    pub repo: String,
    /// The workflow's name (`CI`).
    pub name: String,
    pub head_sha: String,
    pub head_branch: String,
    /// What triggered it: `push`, `pull_request`, …
    pub event: String,
    /// `queued`, `in_progress` or `completed`.
    pub status: String,
    pub conclusion: Option<String>,
    /// The latest attempt (1 for a run never re-run); adding a job of a later attempt raises it.
    pub run_attempt: u64,
    /// Numbers of the pull requests it ran for.
    pub pull_requests: Vec<u64>,
    /// The check suite its jobs' check runs belong to; 0: assigned when added.
    pub check_suite_id: u64,
    pub created_at: String,
}

impl WorkflowRun {
    /// A completed, successful first attempt of workflow `name` on `head_sha`, pushed to `main`.
    /// `id` 0 lets the fake choose.
    pub fn new(id: u64, name: &str, head_sha: &str) -> Self {
        WorkflowRun {
            id,
            repo: String::new(),
            name: name.to_owned(),
            head_sha: head_sha.to_owned(),
            head_branch: "main".to_owned(),
            event: "push".to_owned(),
            status: "completed".to_owned(),
            conclusion: Some("success".to_owned()),
            run_attempt: 1,
            pull_requests: Vec::new(),
            check_suite_id: 0,
            created_at: wire::now_rfc3339(),
        }
    }

    pub fn head_branch(mut self, branch: &str) -> Self {
        branch.clone_into(&mut self.head_branch);
        self
    }

    pub fn event(mut self, event: &str) -> Self {
        event.clone_into(&mut self.event);
        self
    }

    /// A status other than `completed` clears the conclusion.
    pub fn status(mut self, status: &str) -> Self {
        status.clone_into(&mut self.status);
        if status != "completed" {
            self.conclusion = None;
        }
        self
    }

    /// Completes the run with `conclusion` (`failure`, `success`, `cancelled`, …).
    pub fn conclusion(mut self, conclusion: &str) -> Self {
        "completed".clone_into(&mut self.status);
        self.conclusion = Some(conclusion.to_owned());
        self
    }

    pub fn run_attempt(mut self, attempt: u64) -> Self {
        self.run_attempt = attempt;
        self
    }

    /// The run is for pull request `number` (its event becomes `pull_request`).
    pub fn pull_request(mut self, number: u64) -> Self {
        self.pull_requests.push(number);
        "pull_request".clone_into(&mut self.event);
        self
    }
}

/// One step of an Actions job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobStep {
    pub name: String,
    /// 1-based, in order.
    pub number: u64,
    /// `queued`, `in_progress` or `completed`.
    pub status: String,
    pub conclusion: Option<String>,
}

/// A GitHub Actions job: one attempt of one job of a workflow run, with its log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionsJob {
    /// Also the id of the check run GitHub makes for it; 0: assigned when added.
    pub id: u64,
    /// `owner/name`, set when added.
    pub repo: String,
    pub run_id: u64,
    pub run_attempt: u64,
    pub name: String,
    /// `queued`, `in_progress` or `completed`.
    pub status: String,
    pub conclusion: Option<String>,
    /// Empty: the run's, when added.
    pub head_sha: String,
    /// The run's, when added.
    pub head_branch: String,
    pub workflow_name: String,
    pub steps: Vec<JobStep>,
    /// What `GET …/actions/jobs/{job_id}/logs` leads to.
    pub log: Vec<u8>,
    /// GitHub answers 410 for the log once it has expired (or was deleted).
    pub logs_expired: bool,
    pub started_at: String,
    pub completed_at: Option<String>,
}

impl ActionsJob {
    /// A completed, successful first attempt of job `name` of run `run_id`, with no steps and an
    /// empty log. `id` 0 lets the fake choose.
    pub fn new(id: u64, run_id: u64, name: &str) -> Self {
        let now = wire::now_rfc3339();
        ActionsJob {
            id,
            repo: String::new(),
            run_id,
            run_attempt: 1,
            name: name.to_owned(),
            status: "completed".to_owned(),
            conclusion: Some("success".to_owned()),
            head_sha: String::new(),
            head_branch: String::new(),
            workflow_name: String::new(),
            steps: Vec::new(),
            log: Vec::new(),
            logs_expired: false,
            started_at: now.clone(),
            completed_at: Some(now),
        }
    }

    pub fn run_attempt(mut self, attempt: u64) -> Self {
        self.run_attempt = attempt;
        self
    }

    /// A status other than `completed` clears the conclusion and the completion time.
    pub fn status(mut self, status: &str) -> Self {
        status.clone_into(&mut self.status);
        if status != "completed" {
            self.conclusion = None;
            self.completed_at = None;
        }
        self
    }

    /// Completes the job with `conclusion` (`failure`, `success`, `cancelled`, …).
    pub fn conclusion(mut self, conclusion: &str) -> Self {
        "completed".clone_into(&mut self.status);
        self.conclusion = Some(conclusion.to_owned());
        if self.completed_at.is_none() {
            self.completed_at = Some(wire::now_rfc3339());
        }
        self
    }

    /// The commit, when it is not the run's.
    pub fn head_sha(mut self, sha: &str) -> Self {
        sha.clone_into(&mut self.head_sha);
        self
    }

    /// A completed step with `conclusion` (`success`, `failure`, `skipped`, …), numbered next.
    pub fn step(mut self, name: &str, conclusion: &str) -> Self {
        self.steps.push(JobStep {
            name: name.to_owned(),
            number: self.steps.len() as u64 + 1,
            status: "completed".to_owned(),
            conclusion: Some(conclusion.to_owned()),
        });
        self
    }

    /// The job's log, as the runner wrote it.
    pub fn log(mut self, text: impl Into<Vec<u8>>) -> Self {
        self.log = text.into();
        self
    }
}

/// A check run another app (a CI service, a linter) made: listed with the bot's own and the
/// Actions jobs' in `GET …/commits/{ref}/check-runs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalCheckRun {
    /// 0: assigned when added.
    pub id: u64,
    /// `owner/name`, set when added.
    pub repo: String,
    pub name: String,
    pub head_sha: String,
    pub app_id: u64,
    pub app_slug: String,
    /// `queued`, `in_progress` or `completed`.
    pub status: String,
    pub conclusion: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub text: Option<String>,
    pub details_url: Option<String>,
}

impl ExternalCheckRun {
    /// A completed, successful run `name` on `head_sha` by app `app_slug` (its id derived from the
    /// slug unless set), without output. `id` 0 lets the fake choose.
    pub fn new(id: u64, name: &str, head_sha: &str, app_slug: &str) -> Self {
        ExternalCheckRun {
            id,
            repo: String::new(),
            name: name.to_owned(),
            head_sha: head_sha.to_owned(),
            app_id: wire::stable_id(app_slug),
            app_slug: app_slug.to_owned(),
            status: "completed".to_owned(),
            conclusion: Some("success".to_owned()),
            title: None,
            summary: None,
            text: None,
            details_url: None,
        }
    }

    pub fn app_id(mut self, id: u64) -> Self {
        self.app_id = id;
        self
    }

    /// A status other than `completed` clears the conclusion.
    pub fn status(mut self, status: &str) -> Self {
        status.clone_into(&mut self.status);
        if status != "completed" {
            self.conclusion = None;
        }
        self
    }

    pub fn conclusion(mut self, conclusion: &str) -> Self {
        "completed".clone_into(&mut self.status);
        self.conclusion = Some(conclusion.to_owned());
        self
    }

    /// The run's `output`: title, summary and text.
    pub fn output(mut self, title: &str, summary: &str, text: Option<&str>) -> Self {
        self.title = Some(title.to_owned());
        self.summary = Some(summary.to_owned());
        self.text = text.map(str::to_owned);
        self
    }

    pub fn details_url(mut self, url: &str) -> Self {
        self.details_url = Some(url.to_owned());
        self
    }
}

/// A `POST …/actions/jobs/{job_id}/rerun` the fake accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRerun {
    pub repo: String,
    pub job_id: u64,
    /// The request body (`enable_debug_logging`), `Null` when there was none.
    pub body: Value,
}

/// A fetch of a job log from the signed URL `GET …/actions/jobs/{job_id}/logs` redirected to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDownload {
    pub job_id: u64,
    /// Whether the request carried an `Authorization` header (a token sent off GitHub's API).
    pub authorization: bool,
    /// What the storage answered: 200, 403 for a signature it never issued for that job, 404.
    pub status: u16,
}

/// A token the fake accepts on repository endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedToken {
    pub token: String,
    /// The login requests with it act as.
    pub login: String,
    /// For installation tokens: the installation and when it stops working (Unix seconds).
    pub installation_id: Option<u64>,
    pub expires_at: Option<u64>,
    pub permissions: Value,
}

/// A manifest submitted to the App Manifest form, and the code it was answered with.
#[derive(Debug, Clone)]
pub struct AppManifest {
    pub code: String,
    /// The organization of the form's path; `None` for the user's own form.
    pub owner: Option<String>,
    pub manifest: Value,
    /// Whether the code was traded for the App's credentials (a code works once).
    pub converted: bool,
}

/// Everything the fake holds. Fields are public for reading; change it through [`super::FakeGithub`].
#[derive(Debug, Default)]
pub struct GithubState {
    /// The App Manifest form's submissions, in order.
    pub app_manifests: Vec<AppManifest>,
    pub repos: BTreeMap<String, Repo>,
    /// (repository, login) → permission; absent means [`Permission::None`].
    pub permissions: HashMap<(String, String), Permission>,
    /// (repository, number) → issue or pull request.
    pub issues: BTreeMap<(String, u64), Issue>,
    pub issue_comments: BTreeMap<u64, IssueComment>,
    pub review_comments: BTreeMap<u64, ReviewComment>,
    /// By root comment id.
    pub review_threads: BTreeMap<u64, ReviewThread>,
    pub reviews: BTreeMap<u64, Review>,
    pub reactions: Vec<Reaction>,
    /// The check runs the bot (the App) created.
    pub check_runs: BTreeMap<u64, CheckRun>,
    /// Check runs of other apps.
    pub external_check_runs: BTreeMap<u64, ExternalCheckRun>,
    pub workflow_runs: BTreeMap<u64, WorkflowRun>,
    /// Every attempt of every job, by id.
    pub actions_jobs: BTreeMap<u64, ActionsJob>,
    pub job_reruns: Vec<JobRerun>,
    pub log_downloads: Vec<LogDownload>,
    /// The signature of each log URL handed out → its job.
    pub(crate) log_signatures: HashMap<String, u64>,
    /// (repository, ref, path) → content, for `GET …/contents/{path}`.
    pub files: BTreeMap<(String, String, String), Vec<u8>>,
    /// (repository, branch) → head commit, for new pull requests.
    pub branches: BTreeMap<(String, String), String>,
    /// (repository, tag) → commit, for `GET …/tags` (GitHub Actions' versions).
    pub tags: BTreeMap<(String, String), String>,
    pub tokens: Vec<IssuedToken>,
    /// How many installation tokens were asked for (successfully or not).
    pub token_requests: usize,
    last_id: u64,
    /// Ids a test chose, which generated ids skip.
    chosen_ids: BTreeSet<u64>,
    /// The outputs written through the API: object id → the operation that last wrote it.
    written: BTreeMap<u64, &'static str>,
    /// The outputs a lookup returned since their last write (reads take `&self`).
    seen: RefCell<BTreeSet<u64>>,
    /// Review threads resolved through the API, by root comment (whose own output, a comment,
    /// shares the id: so they are kept apart): root → the operation.
    written_threads: BTreeMap<u64, &'static str>,
    seen_threads: RefCell<BTreeSet<u64>>,
}

/// The operations whose object (its `id` in the answer) is an output the test should look at.
pub(crate) const OUTPUT_OPERATIONS: [&str; 16] = [
    "issues/create",
    "issues/create-comment",
    "issues/update-comment",
    "issues/update",
    "pulls/create",
    "pulls/update",
    "pulls/create-review",
    "pulls/dismiss-review",
    "pulls/create-review-comment",
    "pulls/create-reply-for-review-comment",
    "pulls/update-review-comment",
    "checks/create",
    "checks/update",
    "reactions/create-for-issue",
    "reactions/create-for-issue-comment",
    "reactions/create-for-pull-request-review-comment",
];

impl GithubState {
    /// A fresh id; ids are unique across everything in the fake, as comment ids are on GitHub.
    pub(crate) fn next_id(&mut self) -> u64 {
        loop {
            self.last_id += 1;
            if !self.chosen_ids.contains(&self.last_id) {
                return self.last_id;
            }
        }
    }

    /// `id`, or a fresh one when it is 0. A chosen id is kept from the generated ones; a check-run
    /// id (jobs are check runs too) or workflow run id already taken is a test bug.
    fn claim_id(&mut self, id: u64, kind: &str, taken: bool) -> u64 {
        if id == 0 {
            return self.next_id();
        }
        assert!(!taken, "fake GitHub: {kind} id {id} is taken already");
        self.chosen_ids.insert(id);
        id
    }

    fn check_run_id_taken(&self, id: u64) -> bool {
        self.check_runs.contains_key(&id)
            || self.external_check_runs.contains_key(&id)
            || self.actions_jobs.contains_key(&id)
    }

    /// Adds a workflow run to `repo`; returns its id.
    pub(crate) fn add_workflow_run(&mut self, repo: &str, mut run: WorkflowRun) -> u64 {
        let taken = self.workflow_runs.contains_key(&run.id);
        run.id = self.claim_id(run.id, "workflow run", taken);
        repo.clone_into(&mut run.repo);
        if run.check_suite_id == 0 {
            run.check_suite_id = self.next_id();
        }
        let id = run.id;
        self.workflow_runs.insert(id, run);
        id
    }

    /// Adds a job to its run (which must be in `repo`), taking the run's commit, branch and name
    /// where the job has none, and raising the run's attempt to the job's; returns its id.
    pub(crate) fn add_actions_job(&mut self, repo: &str, mut job: ActionsJob) -> u64 {
        let taken = self.check_run_id_taken(job.id);
        let Some(run) = self.workflow_runs.get_mut(&job.run_id).filter(|run| run.repo == repo) else {
            panic!("fake GitHub: no workflow run {} in {repo}", job.run_id);
        };
        if job.head_sha.is_empty() {
            job.head_sha.clone_from(&run.head_sha);
        }
        job.head_branch.clone_from(&run.head_branch);
        job.workflow_name.clone_from(&run.name);
        run.run_attempt = run.run_attempt.max(job.run_attempt);
        job.id = self.claim_id(job.id, "check run (Actions job)", taken);
        repo.clone_into(&mut job.repo);
        let id = job.id;
        self.actions_jobs.insert(id, job);
        id
    }

    /// Adds another app's check run to `repo`; returns its id.
    pub(crate) fn add_external_check_run(&mut self, repo: &str, mut run: ExternalCheckRun) -> u64 {
        let taken = self.check_run_id_taken(run.id);
        run.id = self.claim_id(run.id, "check run", taken);
        repo.clone_into(&mut run.repo);
        let id = run.id;
        self.external_check_runs.insert(id, run);
        id
    }

    /// The jobs of run `run_id`, every attempt, oldest first.
    pub fn jobs_of_run(&self, run_id: u64) -> Vec<&ActionsJob> {
        self.actions_jobs.values().filter(|j| j.run_id == run_id).collect()
    }

    pub fn repo(&self, full_name: &str) -> Option<&Repo> {
        self.repos.get(full_name)
    }

    pub fn issue(&self, repo: &str, number: u64) -> Option<&Issue> {
        self.issues.get(&(repo.to_owned(), number))
    }

    pub fn permission(&self, repo: &str, login: &str) -> Permission {
        self.permissions
            .get(&(repo.to_owned(), login.to_owned()))
            .copied()
            .unwrap_or(Permission::None)
    }

    /// Comments on issue or pull request `number`, oldest first (marked seen).
    pub fn comments_on(&self, repo: &str, number: u64) -> Vec<&IssueComment> {
        self.saw(self.comments_of(repo, number), |c| c.id)
    }

    /// [`GithubState::comments_on`] for the fake's routes: marks nothing.
    pub(crate) fn comments_of(&self, repo: &str, number: u64) -> Vec<&IssueComment> {
        self.issue_comments
            .values()
            .filter(|c| c.repo == repo && c.issue_number == number)
            .collect()
    }

    /// Reactions on issue comment `id` (marked seen).
    pub fn reactions_on_issue_comment(&self, id: u64) -> Vec<&Reaction> {
        let reactions = self
            .reactions
            .iter()
            .filter(|r| r.target == ReactionTarget::IssueComment(id))
            .collect();
        self.saw(reactions, |r| r.id)
    }

    /// Reactions on review comment `id` (marked seen).
    pub fn reactions_on_review_comment(&self, id: u64) -> Vec<&Reaction> {
        let reactions = self
            .reactions
            .iter()
            .filter(|r| r.target == ReactionTarget::ReviewComment(id))
            .collect();
        self.saw(reactions, |r| r.id)
    }

    /// Reactions on issue or pull request `number` itself (marked seen).
    pub fn reactions_on_issue(&self, repo: &str, number: u64) -> Vec<&Reaction> {
        let reactions = self
            .reactions
            .iter()
            .filter(
                |r| matches!(&r.target, ReactionTarget::Issue { repo: on, number: n } if on == repo && *n == number),
            )
            .collect();
        self.saw(reactions, |r| r.id)
    }

    /// Check runs named `name` on `repo`, oldest first (marked seen).
    pub fn check_runs_named(&self, repo: &str, name: &str) -> Vec<&CheckRun> {
        let runs = self
            .check_runs
            .values()
            .filter(|c| c.repo == repo && c.name == name)
            .collect();
        self.saw(runs, |c| c.id)
    }

    /// Every check run of the bot, oldest first (marked seen).
    pub fn all_check_runs(&self) -> Vec<&CheckRun> {
        self.saw(self.check_runs.values().collect(), |c| c.id)
    }

    /// The pull requests of `repo`, by number (marked seen).
    pub fn pull_requests(&self, repo: &str) -> Vec<&Issue> {
        let pulls = self
            .issues
            .iter()
            .filter(|((on, _), issue)| on == repo && issue.pull.is_some())
            .map(|(_, issue)| issue)
            .collect();
        self.saw(pulls, |i| i.id)
    }

    /// Issue or pull request `number` of `repo` (marked seen).
    pub fn issue_seen(&self, repo: &str, number: u64) -> Option<&Issue> {
        let issue = self.issue(repo, number);
        if let Some(issue) = issue {
            self.seen.borrow_mut().insert(issue.id);
        }
        issue
    }

    /// Every review, oldest first, with their comments (marked seen).
    pub fn all_reviews(&self) -> Vec<&Review> {
        let reviews = self.saw(self.reviews.values().collect(), |r| r.id);
        let mut seen = self.seen.borrow_mut();
        for review in &reviews {
            seen.extend(review.comment_ids.iter().copied());
        }
        drop(seen);
        reviews
    }

    /// The review comments on pull request `number`, oldest first (marked seen).
    pub fn review_comments_on(&self, repo: &str, number: u64) -> Vec<&ReviewComment> {
        let comments = self
            .review_comments
            .values()
            .filter(|c| c.repo == repo && c.pull_number == number)
            .collect();
        self.saw(comments, |c| c.id)
    }

    /// The review threads of pull request `number`, oldest first (marked seen).
    pub fn review_threads_on(&self, repo: &str, number: u64) -> Vec<&ReviewThread> {
        let threads = self.threads_of(repo, number);
        self.seen_threads
            .borrow_mut()
            .extend(threads.iter().map(|t| t.root_comment));
        threads
    }

    /// [`GithubState::review_threads_on`] for the fake's routes: marks nothing.
    pub(crate) fn threads_of(&self, repo: &str, number: u64) -> Vec<&ReviewThread> {
        self.review_threads
            .values()
            .filter(|t| t.repo == repo && t.pull_number == number)
            .collect()
    }

    /// The comments of the thread rooted at `root`: the root, then the replies, oldest first.
    pub(crate) fn thread_comments(&self, root: u64) -> Vec<&ReviewComment> {
        self.review_comments
            .values()
            .filter(|c| c.id == root || c.in_reply_to == Some(root))
            .collect()
    }

    /// Resolves the thread rooted at `root` as `login` through the API (an output); `false` when
    /// there is no such thread.
    pub(crate) fn resolve_thread(&mut self, root: u64, login: &str, operation: &'static str) -> bool {
        let Some(thread) = self.review_threads.get_mut(&root) else {
            return false;
        };
        if thread.resolved_by.is_none() {
            thread.resolved_by = Some(login.to_owned());
        }
        self.written_threads.insert(root, operation);
        self.seen_threads.get_mut().remove(&root);
        true
    }

    /// Marks seen what request answers created or changed: a test that read those requests looked
    /// at their outputs.
    pub(crate) fn saw_answers<'r>(&self, answers: impl Iterator<Item = (&'r str, &'r Value)>) {
        let mut seen = self.seen.borrow_mut();
        for (operation, answer) in answers {
            if OUTPUT_OPERATIONS.contains(&operation)
                && let Some(id) = answer["id"].as_u64()
            {
                seen.insert(id);
            }
        }
    }

    /// Marks `items` seen; returns them.
    fn saw<'a, T>(&self, items: Vec<&'a T>, id: impl Fn(&T) -> u64) -> Vec<&'a T> {
        self.seen.borrow_mut().extend(items.iter().map(|item| id(item)));
        items
    }

    /// Records that `operation` wrote the object `id` (an output, unseen until looked up again).
    pub(crate) fn wrote(&mut self, id: u64, operation: &'static str) {
        self.written.insert(id, operation);
        self.seen.get_mut().remove(&id);
    }

    /// The outputs written or changed since a lookup last returned them, each described.
    pub fn unseen_outputs(&self) -> Vec<String> {
        let seen = self.seen.borrow();
        let seen_threads = self.seen_threads.borrow();
        let threads = self
            .written_threads
            .iter()
            .filter(|(root, _)| !seen_threads.contains(root))
            .map(|(root, operation)| match self.review_threads.get(root) {
                Some(t) => format!(
                    "{operation} → review thread {} on {}#{} {} (resolved by {})",
                    t.node_id(),
                    t.repo,
                    t.pull_number,
                    t.path,
                    t.resolved_by.as_deref().unwrap_or("nobody, since")
                ),
                None => format!("{operation} → review thread of comment {root} (since deleted)"),
            });
        self.written
            .iter()
            .filter(|(id, _)| !seen.contains(id))
            .map(|(id, operation)| format!("{operation} → {}", self.describe(*id)))
            .chain(threads)
            .collect()
    }

    /// What object `id` is, in a line.
    fn describe(&self, id: u64) -> String {
        let short = |text: &str| text.chars().take(160).collect::<String>();
        if let Some(c) = self.issue_comments.get(&id) {
            return format!(
                "comment {id} by {} on {}#{}: {:?}",
                c.user,
                c.repo,
                c.issue_number,
                short(&c.body)
            );
        }
        if let Some(c) = self.review_comments.get(&id) {
            return format!(
                "review comment {id} by {} on {}#{} {}: {:?}",
                c.user,
                c.repo,
                c.pull_number,
                c.path,
                short(&c.body)
            );
        }
        if let Some(r) = self.reviews.get(&id) {
            return format!(
                "review {id} ({}) by {} on {}#{}: {:?}",
                r.state,
                r.user,
                r.repo,
                r.pull_number,
                short(&r.body)
            );
        }
        if let Some(r) = self.check_runs.get(&id) {
            return format!(
                "check run {id} {:?} on {} ({}, {:?})",
                r.name, r.head_sha, r.status, r.conclusion
            );
        }
        if let Some(r) = self.reactions.iter().find(|r| r.id == id) {
            return format!("reaction {id} {:?} by {} on {:?}", r.content, r.user, r.target);
        }
        if let Some(((repo, number), i)) = self.issues.iter().find(|(_, i)| i.id == id) {
            let kind = if i.pull.is_some() { "pull request" } else { "issue" };
            return format!("{kind} {repo}#{number}: {:?}", short(&i.title));
        }
        format!("object {id} (since deleted)")
    }

    /// How many installation tokens were handed out.
    pub fn installation_tokens_issued(&self) -> usize {
        self.tokens.iter().filter(|t| t.installation_id.is_some()).count()
    }

    /// A branch's head commit: registered with the fake, else read from the repository's
    /// `git_dir`.
    pub(crate) fn branch_head(&self, repo: &str, branch: &str) -> Option<String> {
        if let Some(sha) = self.branches.get(&(repo.to_owned(), branch.to_owned())) {
            return Some(sha.clone());
        }
        let dir = self.repo(repo)?.git_dir.as_deref()?;
        git_output(
            dir,
            &[
                "rev-parse",
                "--verify",
                "-q",
                &format!("refs/heads/{branch}^{{commit}}"),
            ],
        )
        .map(|out| String::from_utf8_lossy(&out).trim().to_owned())
    }

    /// The open pull requests of `repo` from its own branch `branch`, by number.
    pub(crate) fn open_pulls_from(&self, repo: &str, branch: &str) -> Vec<u64> {
        self.issues
            .iter()
            .filter(|((on, _), issue)| on == repo && issue.state == "open")
            .filter(|(_, issue)| {
                issue
                    .pull
                    .as_ref()
                    .is_some_and(|p| p.head.ref_name == branch && p.head.repo_full_name == repo)
            })
            .map(|((_, number), _)| *number)
            .collect()
    }

    /// A push moved `branch` of `repo` to `sha`: its registered head (if one is) and the head of
    /// every open pull request from it move along, as on GitHub (not an output: the world did
    /// it). Returns those pull requests' numbers.
    pub(crate) fn branch_pushed(&mut self, repo: &str, branch: &str, sha: &str) -> Vec<u64> {
        if let Some(head) = self.branches.get_mut(&(repo.to_owned(), branch.to_owned())) {
            sha.clone_into(head);
        }
        let numbers = self.open_pulls_from(repo, branch);
        let now = wire::now_rfc3339();
        for number in &numbers {
            if let Some(issue) = self.issues.get_mut(&(repo.to_owned(), *number))
                && let Some(pull) = &mut issue.pull
            {
                sha.clone_into(&mut pull.head.sha);
                issue.updated_at.clone_from(&now);
            }
        }
        numbers
    }

    pub(crate) fn add_repo(&mut self, mut repo: Repo) {
        if repo.id == 0 {
            repo.id = self.next_id();
        }
        self.repos.insert(repo.full_name.clone(), repo);
    }

    pub(crate) fn add_issue(&mut self, repo: &str, mut issue: Issue) {
        if issue.id == 0 {
            issue.id = self.next_id();
        }
        if let Some(pull) = &mut issue.pull
            && pull.head.repo_full_name.is_empty()
        {
            repo.clone_into(&mut pull.head.repo_full_name);
        }
        self.issues.insert((repo.to_owned(), issue.number), issue);
    }

    /// The next free issue/pull request number of `repo`.
    pub(crate) fn next_number(&self, repo: &str) -> u64 {
        self.issues
            .keys()
            .filter(|(r, _)| r == repo)
            .map(|(_, n)| *n)
            .max()
            .unwrap_or(0)
            + 1
    }

    pub(crate) fn add_issue_comment(&mut self, repo: &str, number: u64, user: &str, body: &str) -> u64 {
        let id = self.next_id();
        let now = wire::now_rfc3339();
        self.issue_comments.insert(
            id,
            IssueComment {
                id,
                repo: repo.to_owned(),
                issue_number: number,
                user: user.to_owned(),
                body: body.to_owned(),
                created_at: now.clone(),
                updated_at: now,
                edits: Vec::new(),
            },
        );
        id
    }

    /// Adds a review comment (with its own one-comment review when `review_id` is `None`).
    #[expect(clippy::too_many_arguments, reason = "a review comment has that many parts")]
    pub(crate) fn add_review_comment(
        &mut self,
        repo: &str,
        pull_number: u64,
        review_id: Option<u64>,
        in_reply_to: Option<u64>,
        user: &str,
        body: &str,
        path: &str,
        line: Option<u64>,
    ) -> u64 {
        let review_id = review_id.unwrap_or_else(|| self.next_id());
        let id = self.next_id();
        let now = wire::now_rfc3339();
        let commit_id = self
            .issue(repo, pull_number)
            .and_then(|i| i.pull.as_ref())
            .map(|p| p.head.sha.clone())
            .unwrap_or_default();
        if in_reply_to.is_none() {
            self.review_threads.insert(
                id,
                ReviewThread {
                    root_comment: id,
                    repo: repo.to_owned(),
                    pull_number,
                    path: path.to_owned(),
                    resolved_by: None,
                    outdated: false,
                },
            );
        }
        self.review_comments.insert(
            id,
            ReviewComment {
                id,
                repo: repo.to_owned(),
                pull_number,
                review_id,
                in_reply_to,
                user: user.to_owned(),
                body: body.to_owned(),
                path: path.to_owned(),
                line,
                start_line: None,
                side: line.map(|_| "RIGHT".to_owned()),
                commit_id,
                created_at: now.clone(),
                updated_at: now,
            },
        );
        id
    }

    /// The token `token`, if it is known and not expired at `now` (Unix seconds).
    pub(crate) fn valid_token(&self, token: &str, now: u64) -> Option<&IssuedToken> {
        self.tokens
            .iter()
            .find(|t| t.token == token)
            .filter(|t| t.expires_at.is_none_or(|at| now < at))
    }

    pub(crate) fn issue_token(
        &mut self,
        installation_id: u64,
        login: &str,
        lifetime: Duration,
        permissions: Value,
    ) -> IssuedToken {
        let token = IssuedToken {
            token: format!("ghs_{}", wire::random_alnum(36)),
            login: login.to_owned(),
            installation_id: Some(installation_id),
            expires_at: Some(wire::unix_now().saturating_add(lifetime.as_secs())),
            permissions,
        };
        self.tokens.push(token.clone());
        token
    }
}
