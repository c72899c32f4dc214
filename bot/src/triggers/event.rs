//! Domain events: what a webhook delivery means, parsed once at the edge from the event name and the
//! payload, keeping only the fields the bot acts on. Everything nobody handles is `Event::Ignored`.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::json::{Field, FieldError, Node};
use crate::github::{CommentId, CommitSha, InstallationId, IssueNumber, Login, RepoName, RepoNameError};

/// The events pitcrew stores and acts on, by `X-GitHub-Event`: the webhook route answers every other
/// signed delivery 202 and drops it, and `ping` it answers at once. [`Event::parse`] reads a few more
/// (installation changes) that nothing acts on yet; storing one is a line here.
pub const HANDLED_EVENTS: &[&str] = &[
    "issue_comment",
    "pull_request_review_comment",
    "issues",
    "pull_request",
    "workflow_run",
    "check_run",
    "check_suite",
];

/// The handled events that report CI: one that completed failing starts a triage nobody asked for.
pub const CI_EVENTS: &[&str] = &["workflow_run", "check_run", "check_suite"];

/// A signed payload that does not have the shape its event promises.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{event} payload: {path}: {problem}")]
pub struct EventError {
    /// `event.action`, e.g. `issue_comment.created`.
    pub event: String,
    /// Where in the payload, e.g. `$.comment.user.login`.
    pub path: String,
    pub problem: String,
}

/// The repository an event happened in; also stored in job requests (as `owner` and `name`, the
/// shape earlier versions wrote).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RepoRefWire", into = "RepoRefWire")]
pub struct RepoRef {
    /// `owner/name`, checked against GitHub's rules when the payload was read.
    pub name: RepoName,
    pub clone_url: String,
    pub default_branch: String,
    pub private: bool,
}

#[derive(Serialize, Deserialize)]
struct RepoRefWire {
    owner: String,
    name: String,
    clone_url: String,
    default_branch: String,
    private: bool,
}

impl TryFrom<RepoRefWire> for RepoRef {
    type Error = RepoNameError;

    fn try_from(wire: RepoRefWire) -> Result<Self, Self::Error> {
        Ok(RepoRef {
            name: RepoName::new(&wire.owner, &wire.name)?,
            clone_url: wire.clone_url,
            default_branch: wire.default_branch,
            private: wire.private,
        })
    }
}

impl From<RepoRef> for RepoRefWire {
    fn from(repo: RepoRef) -> Self {
        RepoRefWire {
            owner: repo.name.owner().to_owned(),
            name: repo.name.name().to_owned(),
            clone_url: repo.clone_url,
            default_branch: repo.default_branch,
            private: repo.private,
        }
    }
}

/// The kind of GitHub account (`user.type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActorKind {
    User,
    Bot,
    Organization,
    Other(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub login: Login,
    /// The account's numeric id (for its `ID+login@users.noreply.github.com` commit address).
    pub id: Option<u64>,
    pub kind: ActorKind,
}

impl Actor {
    /// GitHub marks App accounts both ways: `type: Bot` and a login ending in `[bot]`.
    pub fn is_bot(&self) -> bool {
        self.kind == ActorKind::Bot || self.login.is_bot()
    }
}

/// A commenter's relation to the repository (`author_association`). OWNER, MEMBER and COLLABORATOR
/// are the only ones that can have write access; the permission API has the final word.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum AuthorAssociation {
    Owner,
    Member,
    Collaborator,
    Contributor,
    FirstTimeContributor,
    FirstTimer,
    Mannequin,
    None,
    Other(String),
}

impl AuthorAssociation {
    pub fn may_have_write_access(&self) -> bool {
        matches!(
            self,
            AuthorAssociation::Owner | AuthorAssociation::Member | AuthorAssociation::Collaborator
        )
    }

    pub fn as_str(&self) -> &str {
        match self {
            AuthorAssociation::Owner => "OWNER",
            AuthorAssociation::Member => "MEMBER",
            AuthorAssociation::Collaborator => "COLLABORATOR",
            AuthorAssociation::Contributor => "CONTRIBUTOR",
            AuthorAssociation::FirstTimeContributor => "FIRST_TIME_CONTRIBUTOR",
            AuthorAssociation::FirstTimer => "FIRST_TIMER",
            AuthorAssociation::Mannequin => "MANNEQUIN",
            AuthorAssociation::None => "NONE",
            AuthorAssociation::Other(other) => other,
        }
    }
}

impl From<String> for AuthorAssociation {
    fn from(text: String) -> Self {
        match text.as_str() {
            "OWNER" => AuthorAssociation::Owner,
            "MEMBER" => AuthorAssociation::Member,
            "COLLABORATOR" => AuthorAssociation::Collaborator,
            "CONTRIBUTOR" => AuthorAssociation::Contributor,
            "FIRST_TIME_CONTRIBUTOR" => AuthorAssociation::FirstTimeContributor,
            "FIRST_TIMER" => AuthorAssociation::FirstTimer,
            "MANNEQUIN" => AuthorAssociation::Mannequin,
            "NONE" => AuthorAssociation::None,
            _ => AuthorAssociation::Other(text),
        }
    }
}

impl From<AuthorAssociation> for String {
    fn from(association: AuthorAssociation) -> Self {
        association.as_str().to_owned()
    }
}

impl fmt::Display for AuthorAssociation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What most events share: where, through which installation, and who did it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    pub repo: RepoRef,
    /// `installation.id`; absent on plain repository webhooks.
    pub installation_id: Option<InstallationId>,
    pub sender: Actor,
}

/// An issue or a pull request (GitHub numbers them in one sequence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueRef {
    pub number: IssueNumber,
    pub title: String,
    pub body: Option<String>,
    pub is_pull_request: bool,
    /// The PR head, when the payload has it (review comments do, issue comments on a PR do not).
    pub head_sha: Option<CommitSha>,
    pub head_ref: Option<String>,
}

/// Where on the diff a review comment sits; carried into the job so the agent sees the same lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewContext {
    pub path: String,
    /// `line`, or `original_line` when the comment is on an outdated diff (`line` is then null).
    pub line: Option<u64>,
    pub start_line: Option<u64>,
    /// `LEFT` (the old file) or `RIGHT` (the new one).
    pub side: Option<String>,
    pub diff_hunk: String,
    pub commit_id: CommitSha,
    /// The thread's first comment when this one is a reply.
    pub in_reply_to: Option<CommentId>,
}

/// A new comment on an issue or a pull request, or a new review comment on a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentEvent {
    pub ctx: Context,
    pub comment_id: CommentId,
    pub body: String,
    pub author: Actor,
    pub author_association: AuthorAssociation,
    pub issue: IssueRef,
    /// Present for `pull_request_review_comment`.
    pub review: Option<ReviewContext>,
}

/// What happened to a pull request, of what an automatic review reacts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullAction {
    Opened,
    Reopened,
    ReadyForReview,
    /// New commits (a push, or a force-push).
    Synchronize,
}

impl PullAction {
    /// As GitHub spells it in `action`.
    pub fn as_str(self) -> &'static str {
        match self {
            PullAction::Opened => "opened",
            PullAction::Reopened => "reopened",
            PullAction::ReadyForReview => "ready_for_review",
            PullAction::Synchronize => "synchronize",
        }
    }
}

/// The pull request of a `pull_request` event, as far as an automatic review needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullEvent {
    pub number: IssueNumber,
    pub title: String,
    pub body: Option<String>,
    pub draft: bool,
    /// Who opened it.
    pub author: Actor,
    pub head_sha: CommitSha,
    pub head_ref: String,
    pub base_ref: String,
    pub labels: Vec<String>,
    /// The head before a `synchronize`.
    pub before: Option<CommitSha>,
}

/// A check or workflow conclusion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conclusion {
    Success,
    Failure,
    Neutral,
    Cancelled,
    Skipped,
    TimedOut,
    ActionRequired,
    Stale,
    StartupFailure,
    Other(String),
}

impl Conclusion {
    /// A conclusion as GitHub spells it, in webhooks and in the REST API alike.
    pub fn parse(text: &str) -> Self {
        match text {
            "success" => Conclusion::Success,
            "failure" => Conclusion::Failure,
            "neutral" => Conclusion::Neutral,
            "cancelled" => Conclusion::Cancelled,
            "skipped" => Conclusion::Skipped,
            "timed_out" => Conclusion::TimedOut,
            "action_required" => Conclusion::ActionRequired,
            "stale" => Conclusion::Stale,
            "startup_failure" => Conclusion::StartupFailure,
            other => Conclusion::Other(other.to_owned()),
        }
    }

    /// The conclusions worth triaging: the code (or its CI) broke, as opposed to a cancel or a skip.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            Conclusion::Failure | Conclusion::TimedOut | Conclusion::StartupFailure
        )
    }
}

/// The GitHub App that owns a check run or suite: lets the bot ignore its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppRef {
    pub id: u64,
    pub slug: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowRun {
    pub ctx: Context,
    pub id: u64,
    pub name: Option<String>,
    pub conclusion: Option<Conclusion>,
    pub head_sha: CommitSha,
    pub head_branch: Option<String>,
    /// PRs of this repository whose head is this run's commit.
    pub pull_requests: Vec<IssueNumber>,
    pub html_url: Option<String>,
    pub run_attempt: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRun {
    pub ctx: Context,
    pub id: u64,
    pub name: String,
    pub conclusion: Option<Conclusion>,
    pub head_sha: CommitSha,
    pub head_branch: Option<String>,
    pub check_suite_id: Option<u64>,
    pub app: Option<AppRef>,
    pub pull_requests: Vec<IssueNumber>,
    pub html_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckSuite {
    pub ctx: Context,
    pub id: u64,
    pub conclusion: Option<Conclusion>,
    pub head_sha: CommitSha,
    pub head_branch: Option<String>,
    pub app: Option<AppRef>,
    pub pull_requests: Vec<IssueNumber>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Sent when a hook is created; `repo` is absent for App-level hooks.
    Ping {
        zen: String,
        hook_id: u64,
        repo: Option<RepoRef>,
    },
    Comment(Box<CommentEvent>),
    IssueAssigned {
        ctx: Context,
        issue: IssueRef,
        assignee: Actor,
    },
    IssueLabeled {
        ctx: Context,
        issue: IssueRef,
        label: String,
    },
    /// An issue's body was edited (`issues.edited` with `changes.body`): on the bot's dependency
    /// dashboard, a ticked box asks for a chore run.
    IssueEdited {
        ctx: Context,
        issue: IssueRef,
        /// Who opened the issue.
        author: Actor,
        /// The body before the edit.
        before: String,
    },
    PullRequestClosed {
        ctx: Context,
        number: IssueNumber,
        merged: bool,
    },
    /// A pull request opened, reopened, marked ready for review or given new commits: an
    /// automatic review may be due.
    PullRequestChanged {
        ctx: Context,
        action: PullAction,
        pull: Box<PullEvent>,
    },
    WorkflowRunCompleted(Box<WorkflowRun>),
    CheckRunCompleted(Box<CheckRun>),
    CheckSuiteCompleted(Box<CheckSuite>),
    /// The App was installed, removed, suspended, or given other repositories.
    InstallationChanged {
        action: String,
        installation_id: InstallationId,
        account: Option<String>,
        repositories_added: Vec<String>,
        repositories_removed: Vec<String>,
    },
    /// Everything else, including edited and deleted comments: answered 202 and dropped.
    Ignored {
        reason: String,
    },
}

/// Reads a delivery's body as JSON, within the limits of every reader of a payload (serde_json's: 128
/// levels of nesting, numbers an `f64` holds). The webhook route refuses what this refuses, so the
/// dispatcher never meets a stored payload it cannot read.
pub fn read_payload(body: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice(body)
}

impl Event {
    pub fn from_json(event: &str, body: &[u8]) -> Result<Event, EventError> {
        let payload = read_payload(body).map_err(|err| EventError {
            event: event.to_owned(),
            path: "$".to_owned(),
            problem: format!("malformed JSON: {err}"),
        })?;
        Self::parse(event, &payload)
    }

    /// Parses `payload` as the `X-GitHub-Event: event` it was delivered as.
    pub fn parse(event: &str, payload: &Value) -> Result<Event, EventError> {
        let root = Node::root(payload);
        let action = root.opt_string("action").map_err(|err| located(event, err))?;
        let name = match &action {
            Some(action) => format!("{event}.{action}"),
            None => event.to_owned(),
        };
        match parse_known(event, action.as_deref(), &root, &name) {
            Ok(parsed) => Ok(parsed),
            // Logins and repository names go into API paths (the permission check) and replies: a
            // payload with an empty or malformed one is not acted on at all. Ignored rather than an
            // error: the delivery is authentic, GitHub (or whoever holds the secret) just sent
            // something pitcrew will not use.
            Err(err) if err.refused => {
                tracing::warn!(event = %name, path = %err.path, error = %err.problem,
                    "delivery ignored: a login or repository name in it is not valid");
                Ok(Event::Ignored {
                    reason: format!("{name}: {}: {}", err.path, err.problem),
                })
            }
            Err(err) => Err(located(&name, err)),
        }
    }

    /// The shared context, for events that have one.
    pub fn context(&self) -> Option<&Context> {
        match self {
            Event::Comment(comment) => Some(&comment.ctx),
            Event::IssueAssigned { ctx, .. }
            | Event::IssueLabeled { ctx, .. }
            | Event::IssueEdited { ctx, .. }
            | Event::PullRequestClosed { ctx, .. }
            | Event::PullRequestChanged { ctx, .. } => Some(ctx),
            Event::WorkflowRunCompleted(run) => Some(&run.ctx),
            Event::CheckRunCompleted(run) => Some(&run.ctx),
            Event::CheckSuiteCompleted(suite) => Some(&suite.ctx),
            Event::Ping { .. } | Event::InstallationChanged { .. } | Event::Ignored { .. } => None,
        }
    }
}

fn located(event: &str, err: FieldError) -> EventError {
    EventError {
        event: event.to_owned(),
        path: err.path,
        problem: err.problem,
    }
}

fn ignored(reason: String) -> Field<Event> {
    Ok(Event::Ignored { reason })
}

fn parse_known(event: &str, action: Option<&str>, root: &Node<'_>, name: &str) -> Field<Event> {
    match (event, action) {
        ("ping", _) => Ok(Event::Ping {
            zen: root.string("zen")?,
            hook_id: root.u64("hook_id")?,
            repo: root.opt("repository").map(|r| repo(&r)).transpose()?,
        }),
        ("issue_comment", Some("created")) => issue_comment(root),
        ("pull_request_review_comment", Some("created")) => review_comment(root),
        ("issue_comment" | "pull_request_review_comment", _) => {
            ignored(format!("{name}: only new comments are read, never edits or deletions"))
        }
        ("issues", Some("assigned")) => {
            let Some(assignee) = root.opt("assignee") else {
                return ignored(format!("{name} without an assignee"));
            };
            Ok(Event::IssueAssigned {
                ctx: context(root)?,
                issue: issue(&root.field("issue")?)?,
                assignee: actor(&assignee)?,
            })
        }
        ("issues", Some("labeled")) => {
            let Some(label) = root.opt("label") else {
                return ignored(format!("{name} without a label"));
            };
            Ok(Event::IssueLabeled {
                ctx: context(root)?,
                issue: issue(&root.field("issue")?)?,
                label: label.string("name")?,
            })
        }
        ("issues", Some("edited")) => {
            let Some(before) = root.opt("changes").and_then(|changes| changes.opt("body")) else {
                return ignored(format!("{name}: the body did not change"));
            };
            let node = root.field("issue")?;
            Ok(Event::IssueEdited {
                ctx: context(root)?,
                issue: issue(&node)?,
                author: actor(&node.field("user")?)?,
                before: before.opt_string("from")?.unwrap_or_default(),
            })
        }
        ("pull_request", Some("closed")) => {
            let pr = root.field("pull_request")?;
            Ok(Event::PullRequestClosed {
                ctx: context(root)?,
                number: IssueNumber(pr.u64("number")?),
                merged: pr.opt_bool("merged")?.unwrap_or(false),
            })
        }
        ("pull_request", Some(action @ ("opened" | "reopened" | "ready_for_review" | "synchronize"))) => {
            let action = match action {
                "opened" => PullAction::Opened,
                "reopened" => PullAction::Reopened,
                "ready_for_review" => PullAction::ReadyForReview,
                _ => PullAction::Synchronize,
            };
            Ok(Event::PullRequestChanged {
                ctx: context(root)?,
                action,
                pull: Box::new(pull_event(root)?),
            })
        }
        ("workflow_run", Some("completed")) => workflow_run(root).map(|run| Event::WorkflowRunCompleted(Box::new(run))),
        ("check_run", Some("completed")) => check_run(root).map(|run| Event::CheckRunCompleted(Box::new(run))),
        ("check_suite", Some("completed")) => {
            check_suite(root).map(|suite| Event::CheckSuiteCompleted(Box::new(suite)))
        }
        ("installation" | "installation_repositories", Some(action)) => installation(root, action),
        _ => ignored(format!("{name}: not an event pitcrew acts on")),
    }
}

fn repo(node: &Node<'_>) -> Field<RepoRef> {
    let owner = node.field("owner")?.parsed("login", Login::parse)?;
    Ok(RepoRef {
        name: node.parsed("name", |name| RepoName::new(owner.as_str(), name))?,
        clone_url: node.string("clone_url")?,
        default_branch: node.string("default_branch")?,
        private: node.bool("private")?,
    })
}

fn actor(node: &Node<'_>) -> Field<Actor> {
    let kind = match node.opt_string("type")?.as_deref() {
        Some("User") => ActorKind::User,
        Some("Bot") => ActorKind::Bot,
        Some("Organization") => ActorKind::Organization,
        Some(other) => ActorKind::Other(other.to_owned()),
        None => ActorKind::Other(String::new()),
    };
    Ok(Actor {
        login: node.parsed("login", Login::parse)?,
        id: node.opt_u64("id")?,
        kind,
    })
}

fn context(root: &Node<'_>) -> Field<Context> {
    Ok(Context {
        repo: repo(&root.field("repository")?)?,
        installation_id: root
            .opt("installation")
            .map(|i| i.u64("id").map(InstallationId))
            .transpose()?,
        sender: actor(&root.field("sender")?)?,
    })
}

fn issue(node: &Node<'_>) -> Field<IssueRef> {
    Ok(IssueRef {
        number: IssueNumber(node.u64("number")?),
        title: node.string("title")?,
        body: node.opt_string("body")?,
        // Issue payloads mark a PR by the presence of `issue.pull_request`.
        is_pull_request: node.opt("pull_request").is_some(),
        head_sha: None,
        head_ref: None,
    })
}

fn association(node: &Node<'_>) -> Field<AuthorAssociation> {
    Ok(node
        .opt_string("author_association")?
        .map_or(AuthorAssociation::None, AuthorAssociation::from))
}

fn issue_comment(root: &Node<'_>) -> Field<Event> {
    let comment = root.field("comment")?;
    Ok(Event::Comment(Box::new(CommentEvent {
        ctx: context(root)?,
        comment_id: CommentId(comment.u64("id")?),
        body: comment.opt_string("body")?.unwrap_or_default(),
        author: actor(&comment.field("user")?)?,
        author_association: association(&comment)?,
        issue: issue(&root.field("issue")?)?,
        review: None,
    })))
}

fn review_comment(root: &Node<'_>) -> Field<Event> {
    let comment = root.field("comment")?;
    let pr = root.field("pull_request")?;
    let head = pr.field("head")?;
    let issue = IssueRef {
        number: IssueNumber(pr.u64("number")?),
        title: pr.string("title")?,
        body: pr.opt_string("body")?,
        is_pull_request: true,
        head_sha: Some(head.parsed("sha", CommitSha::parse)?),
        head_ref: Some(head.string("ref")?),
    };
    let review = ReviewContext {
        path: comment.string("path")?,
        line: match comment.opt_u64("line")? {
            Some(line) => Some(line),
            None => comment.opt_u64("original_line")?,
        },
        start_line: comment.opt_u64("start_line")?,
        side: comment.opt_string("side")?,
        diff_hunk: comment.string("diff_hunk")?,
        commit_id: comment.parsed("commit_id", CommitSha::parse)?,
        in_reply_to: comment.opt_u64("in_reply_to_id")?.map(CommentId),
    };
    Ok(Event::Comment(Box::new(CommentEvent {
        ctx: context(root)?,
        comment_id: CommentId(comment.u64("id")?),
        body: comment.opt_string("body")?.unwrap_or_default(),
        author: actor(&comment.field("user")?)?,
        author_association: association(&comment)?,
        issue,
        review: Some(review),
    })))
}

fn pull_event(root: &Node<'_>) -> Field<PullEvent> {
    let pr = root.field("pull_request")?;
    let head = pr.field("head")?;
    let mut labels = Vec::new();
    if pr.opt("labels").is_some() {
        for label in pr.list("labels")? {
            labels.push(label.string("name")?);
        }
    }
    Ok(PullEvent {
        number: IssueNumber(pr.u64("number")?),
        title: pr.string("title")?,
        body: pr.opt_string("body")?,
        draft: pr.opt_bool("draft")?.unwrap_or(false),
        author: actor(&pr.field("user")?)?,
        head_sha: head.parsed("sha", CommitSha::parse)?,
        head_ref: head.string("ref")?,
        base_ref: pr.field("base")?.string("ref")?,
        labels,
        before: root.opt_string("before")?.and_then(|sha| CommitSha::parse(&sha).ok()),
    })
}

fn conclusion(node: &Node<'_>) -> Field<Option<Conclusion>> {
    Ok(node.opt_string("conclusion")?.as_deref().map(Conclusion::parse))
}

/// PR numbers from a `pull_requests` list. GitHub also lists PRs of *other* repositories whose head
/// branch has the same name (forks), so only those based in this repository are kept.
fn pull_numbers(list: &Node<'_>, repo_id: Option<u64>) -> Field<Vec<IssueNumber>> {
    let mut numbers = Vec::new();
    for pr in list.list("pull_requests")? {
        let base_repo = match pr.opt("base").and_then(|b| b.opt("repo")) {
            Some(repo) => repo.opt_u64("id")?,
            None => None,
        };
        if let (Some(base), Some(ours)) = (base_repo, repo_id)
            && base != ours
        {
            continue;
        }
        numbers.push(IssueNumber(pr.u64("number")?));
    }
    Ok(numbers)
}

fn repo_id(root: &Node<'_>) -> Field<Option<u64>> {
    root.field("repository")?.opt_u64("id")
}

fn app(node: &Node<'_>) -> Field<Option<AppRef>> {
    node.opt("app")
        .map(|app| {
            Ok(AppRef {
                id: app.u64("id")?,
                slug: app.opt_string("slug")?,
            })
        })
        .transpose()
}

fn workflow_run(root: &Node<'_>) -> Field<WorkflowRun> {
    let run = root.field("workflow_run")?;
    Ok(WorkflowRun {
        ctx: context(root)?,
        id: run.u64("id")?,
        name: run.opt_string("name")?,
        conclusion: conclusion(&run)?,
        head_sha: run.parsed("head_sha", CommitSha::parse)?,
        head_branch: run.opt_string("head_branch")?,
        pull_requests: pull_numbers(&run, repo_id(root)?)?,
        html_url: run.opt_string("html_url")?,
        run_attempt: run.opt_u64("run_attempt")?,
    })
}

fn check_run(root: &Node<'_>) -> Field<CheckRun> {
    let run = root.field("check_run")?;
    let suite = run.opt("check_suite");
    Ok(CheckRun {
        ctx: context(root)?,
        id: run.u64("id")?,
        name: run.string("name")?,
        conclusion: conclusion(&run)?,
        head_sha: run.parsed("head_sha", CommitSha::parse)?,
        head_branch: suite
            .as_ref()
            .map(|s| s.opt_string("head_branch"))
            .transpose()?
            .flatten(),
        check_suite_id: suite.as_ref().map(|s| s.opt_u64("id")).transpose()?.flatten(),
        app: app(&run)?,
        pull_requests: pull_numbers(&run, repo_id(root)?)?,
        html_url: run.opt_string("html_url")?,
    })
}

fn check_suite(root: &Node<'_>) -> Field<CheckSuite> {
    let suite = root.field("check_suite")?;
    Ok(CheckSuite {
        ctx: context(root)?,
        id: suite.u64("id")?,
        conclusion: conclusion(&suite)?,
        head_sha: suite.parsed("head_sha", CommitSha::parse)?,
        head_branch: suite.opt_string("head_branch")?,
        app: app(&suite)?,
        pull_requests: pull_numbers(&suite, repo_id(root)?)?,
    })
}

fn installation(root: &Node<'_>, action: &str) -> Field<Event> {
    let installation = root.field("installation")?;
    let names =
        |key: &str| -> Field<Vec<String>> { root.list(key)?.iter().map(|repo| repo.string("full_name")).collect() };
    let (added, removed) = match action {
        "created" => (names("repositories")?, Vec::new()),
        "deleted" => (Vec::new(), names("repositories")?),
        _ => (names("repositories_added")?, names("repositories_removed")?),
    };
    Ok(Event::InstallationChanged {
        action: action.to_owned(),
        installation_id: InstallationId(installation.u64("id")?),
        account: installation.opt("account").map(|a| a.string("login")).transpose()?,
        repositories_added: added,
        repositories_removed: removed,
    })
}
