//! The request bodies and responses of the REST calls in `api.rs`, as serde sees them.
//!
//! Request bodies hold exactly the fields GitHub documents for each operation (the test suite's fake
//! GitHub checks them against the OpenAPI description); response structs keep only what the bot
//! reads and tolerate what GitHub may omit or send as `null`.

use std::time::SystemTime;

use serde::{Deserialize, Deserializer, Serialize};

use super::ids::{CheckRunId, CommentId, CommitSha, IssueNumber};

/// GitHub accepts at most this many check-run annotations per request.
pub const MAX_ANNOTATIONS_PER_REQUEST: usize = 50;

/// `null` read as the type's default (GitHub sends `"body": null` for an empty body, `"user": null`
/// for a deleted account).
fn null_default<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(deserializer: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct User {
    #[serde(default)]
    pub login: String,
    /// `User`, `Bot` or `Organization`.
    #[serde(default, rename = "type")]
    pub kind: String,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Repository {
    pub full_name: String,
    #[serde(default, deserialize_with = "null_default")]
    pub default_branch: String,
    #[serde(default)]
    pub private: bool,
    #[serde(default, deserialize_with = "null_default")]
    pub clone_url: String,
    #[serde(default, deserialize_with = "null_default")]
    pub html_url: String,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct PullRequest {
    pub number: IssueNumber,
    #[serde(default, deserialize_with = "null_default")]
    pub title: String,
    #[serde(default, deserialize_with = "null_default")]
    pub body: String,
    /// `open` or `closed`.
    #[serde(default, deserialize_with = "null_default")]
    pub state: String,
    #[serde(default, deserialize_with = "null_default")]
    pub draft: bool,
    #[serde(default, deserialize_with = "null_default")]
    pub user: User,
    pub head: PullRef,
    pub base: PullRef,
    #[serde(default, deserialize_with = "null_default")]
    pub maintainer_can_modify: bool,
    #[serde(default, deserialize_with = "null_default")]
    pub merged: bool,
    #[serde(default, deserialize_with = "null_default")]
    pub html_url: String,
}

impl PullRequest {
    /// Whether the head branch lives in another repository than the base (a fork, or a deleted one).
    pub fn is_cross_repository(&self) -> bool {
        match (&self.head.repo, &self.base.repo) {
            (Some(head), Some(base)) => head.full_name != base.full_name,
            _ => true,
        }
    }
}

/// One side of a pull request.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct PullRef {
    #[serde(rename = "ref")]
    pub branch: String,
    pub sha: CommitSha,
    /// `None` when the head's fork was deleted.
    #[serde(default)]
    pub repo: Option<PullRepo>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct PullRepo {
    pub full_name: String,
    #[serde(default, deserialize_with = "null_default")]
    pub clone_url: String,
    #[serde(default, deserialize_with = "null_default")]
    pub fork: bool,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Issue {
    pub number: IssueNumber,
    #[serde(default, deserialize_with = "null_default")]
    pub title: String,
    #[serde(default, deserialize_with = "null_default")]
    pub body: String,
    #[serde(default, deserialize_with = "null_default")]
    pub state: String,
    #[serde(default, deserialize_with = "null_default")]
    pub user: User,
    #[serde(default, deserialize_with = "null_default")]
    pub html_url: String,
    /// Present when the issue is a pull request.
    #[serde(default)]
    pub pull_request: Option<serde_json::Value>,
}

impl Issue {
    pub fn is_pull_request(&self) -> bool {
        self.pull_request.is_some()
    }
}

/// A user's role on a repository, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    Admin,
    Maintain,
    Write,
    Triage,
    Read,
    None,
}

impl Permission {
    /// Whether the user may push to the repository, and so may command the bot to.
    pub fn may_write(self) -> bool {
        matches!(self, Permission::Admin | Permission::Maintain | Permission::Write)
    }

    pub(super) fn from_name(name: &str) -> Option<Permission> {
        Some(match name {
            "admin" => Permission::Admin,
            "maintain" => Permission::Maintain,
            "write" => Permission::Write,
            "triage" => Permission::Triage,
            "read" => Permission::Read,
            "none" => Permission::None,
            _ => return None,
        })
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct PermissionResponse {
    #[serde(default, deserialize_with = "null_default")]
    pub permission: String,
    #[serde(default, deserialize_with = "null_default")]
    pub role_name: String,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct IssueComment {
    pub id: CommentId,
    #[serde(default, deserialize_with = "null_default")]
    pub body: String,
    #[serde(default, deserialize_with = "null_default")]
    pub html_url: String,
    #[serde(default, deserialize_with = "null_default")]
    pub user: User,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct ReviewComment {
    pub id: CommentId,
    #[serde(default, deserialize_with = "null_default")]
    pub body: String,
    #[serde(default, deserialize_with = "null_default")]
    pub path: String,
    #[serde(default, deserialize_with = "null_default")]
    pub html_url: String,
    #[serde(default, deserialize_with = "null_default")]
    pub user: User,
    /// The line on the current diff; `None` when the comment is outdated.
    #[serde(default)]
    pub line: Option<u64>,
    #[serde(default)]
    pub original_line: Option<u64>,
    /// The thread's first comment, for a reply.
    #[serde(default)]
    pub in_reply_to_id: Option<u64>,
    #[serde(default)]
    pub commit_id: Option<String>,
}

/// A reaction's content, as GitHub names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Reaction {
    #[serde(rename = "+1")]
    ThumbsUp,
    #[serde(rename = "-1")]
    ThumbsDown,
    #[serde(rename = "laugh")]
    Laugh,
    #[serde(rename = "confused")]
    Confused,
    #[serde(rename = "heart")]
    Heart,
    #[serde(rename = "hooray")]
    Hooray,
    #[serde(rename = "rocket")]
    Rocket,
    #[serde(rename = "eyes")]
    Eyes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Queued,
    InProgress,
    Completed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckConclusion {
    ActionRequired,
    Cancelled,
    Failure,
    Neutral,
    Success,
    Skipped,
    TimedOut,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnnotationLevel {
    Notice,
    Warning,
    Failure,
}

/// A note on lines of a file, shown in the Checks tab and the diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Annotation {
    pub path: String,
    pub start_line: u64,
    pub end_line: u64,
    /// Only on a single line (`start_line == end_line`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_column: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_column: Option<u64>,
    pub annotation_level: AnnotationLevel,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_details: Option<String>,
}

/// A check run's output. Any number of annotations: they are sent fifty per request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckRunOutput {
    pub title: String,
    pub summary: String,
    pub text: Option<String>,
    pub annotations: Vec<Annotation>,
}

#[derive(Debug, Serialize)]
pub(super) struct OutputBody<'a> {
    title: &'a str,
    summary: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "<[Annotation]>::is_empty")]
    annotations: &'a [Annotation],
}

impl CheckRunOutput {
    /// The output with one batch of annotations (the first, or a follow-up repeating the texts).
    pub(super) fn body<'a>(&'a self, annotations: &'a [Annotation]) -> OutputBody<'a> {
        OutputBody {
            title: &self.title,
            summary: &self.summary,
            text: self.text.as_deref(),
            annotations,
        }
    }

    pub(super) fn batches(&self) -> Vec<&[Annotation]> {
        if self.annotations.is_empty() {
            vec![&[]]
        } else {
            self.annotations.chunks(MAX_ANNOTATIONS_PER_REQUEST).collect()
        }
    }
}

/// A check run to create. A `Completed` status needs a conclusion (GitHub refuses it otherwise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCheckRun {
    pub name: String,
    pub head_sha: CommitSha,
    pub status: CheckStatus,
    pub started_at: Option<SystemTime>,
    pub conclusion: Option<CheckConclusion>,
    pub completed_at: Option<SystemTime>,
    pub details_url: Option<String>,
    pub external_id: Option<String>,
    pub output: Option<CheckRunOutput>,
}

#[derive(Debug, Serialize)]
pub(super) struct NewCheckRunBody<'a> {
    pub(super) name: &'a str,
    pub(super) head_sha: &'a str,
    pub(super) status: CheckStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) conclusion: Option<CheckConclusion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) completed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) details_url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) external_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) output: Option<OutputBody<'a>>,
}

/// Changes to a check run; `None` fields are left as they are.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckRunUpdate {
    pub status: Option<CheckStatus>,
    pub conclusion: Option<CheckConclusion>,
    pub completed_at: Option<SystemTime>,
    pub details_url: Option<String>,
    pub output: Option<CheckRunOutput>,
}

#[derive(Debug, Default, Serialize)]
pub(super) struct CheckRunUpdateBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) status: Option<CheckStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) conclusion: Option<CheckConclusion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) completed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) details_url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) output: Option<OutputBody<'a>>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct CheckRun {
    pub id: CheckRunId,
    #[serde(default, deserialize_with = "null_default")]
    pub name: String,
    pub head_sha: CommitSha,
    #[serde(default, deserialize_with = "null_default")]
    pub status: String,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub html_url: String,
    #[serde(default)]
    pub external_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReviewEvent {
    Comment,
    RequestChanges,
    Approve,
}

/// Which version of the diff a review comment's line is in: `Left` the base, `Right` the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Side {
    Left,
    Right,
}

/// A comment on a line (or, with `start_line`, a range of lines) of a review's diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewCommentDraft {
    pub path: String,
    pub line: u64,
    pub side: Side,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_side: Option<Side>,
    pub body: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewReview {
    /// The reviewed commit; GitHub takes the head's newest when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit_id: Option<CommitSha>,
    pub body: String,
    pub event: ReviewEvent,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub comments: Vec<ReviewCommentDraft>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Review {
    pub id: u64,
    /// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED` or `PENDING`.
    #[serde(default, deserialize_with = "null_default")]
    pub state: String,
    #[serde(default, deserialize_with = "null_default")]
    pub html_url: String,
    #[serde(default, deserialize_with = "null_default")]
    pub user: User,
    #[serde(default, deserialize_with = "null_default")]
    pub body: String,
}

/// `PUT …/reviews/{id}/dismissals`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DismissalBody<'a> {
    pub message: &'a str,
    pub event: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewPull {
    pub title: String,
    pub body: String,
    /// The branch with the changes (`owner:branch` for another repository of the network).
    pub head: String,
    pub base: String,
    pub draft: bool,
}

/// Changes to a pull request; `None` fields are left as they are.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct PullUpdate<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<&'a str>,
    /// `open` or `closed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<&'a str>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct CreatedPull {
    pub number: IssueNumber,
    #[serde(default, deserialize_with = "null_default")]
    pub html_url: String,
}

/// A file changed by a pull request.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct PullFile {
    pub filename: String,
    /// `added`, `removed`, `modified`, `renamed`, `copied`, `changed` or `unchanged`.
    #[serde(default, deserialize_with = "null_default")]
    pub status: String,
    #[serde(default)]
    pub additions: u64,
    #[serde(default)]
    pub deletions: u64,
    /// Absent for binary files and very large diffs.
    #[serde(default)]
    pub patch: Option<String>,
    #[serde(default)]
    pub previous_filename: Option<String>,
}

/// A page of `GET /installation/repositories`.
#[derive(Debug, Deserialize)]
pub(super) struct InstallationRepositoryPage {
    #[serde(default)]
    pub(super) repositories: Vec<InstalledRepository>,
}

#[derive(Debug, Deserialize)]
pub(super) struct InstalledRepository {
    #[serde(flatten)]
    pub(super) repository: Repository,
    #[serde(default)]
    pub(super) archived: bool,
}

/// A tag of `GET /repos/{owner}/{repo}/tags`: only its name is read.
#[derive(Debug, Deserialize)]
pub(super) struct TagName {
    pub(super) name: String,
}

/// An app, as a check run names its maker.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AppSummary {
    pub id: u64,
    #[serde(default)]
    pub slug: Option<String>,
}

/// GitHub's `filter` of check runs and jobs: `Latest` keeps the newest attempt of each (what the
/// pull request page shows), `All` every attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunFilter {
    Latest,
    All,
}

impl RunFilter {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            RunFilter::Latest => "latest",
            RunFilter::All => "all",
        }
    }
}

/// A check run's texts, as listed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct CheckOutputSummary {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
}

/// A check run as listed for a commit (any app's).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CheckRunSummary {
    pub id: u64,
    pub name: String,
    pub head_sha: String,
    /// `queued`, `in_progress`, `completed` (and, for Actions, `waiting`, `requested`, `pending`).
    pub status: String,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub html_url: Option<String>,
    #[serde(default)]
    pub details_url: Option<String>,
    /// `None` when GitHub sends `null` (an app since deleted).
    #[serde(default)]
    pub app: Option<AppSummary>,
    #[serde(default, deserialize_with = "null_default")]
    pub output: CheckOutputSummary,
    /// From `check_suite.id`.
    #[serde(default, rename = "check_suite", deserialize_with = "suite_id")]
    pub check_suite_id: Option<u64>,
}

/// `check_suite: {"id": …}` (or `null`) read as the id.
fn suite_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    struct Suite {
        #[serde(default)]
        id: Option<u64>,
    }
    Ok(Option::<Suite>::deserialize(deserializer)?.and_then(|suite| suite.id))
}

#[derive(Debug, Deserialize)]
pub(super) struct CheckRunPage {
    #[serde(default)]
    pub(super) check_runs: Vec<CheckRunSummary>,
}

/// A check suite of a commit: one per app that checks it (GitHub Actions makes one per workflow
/// run).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckSuiteSummary {
    pub id: u64,
    #[serde(default)]
    pub head_sha: String,
    /// `queued`, `in_progress`, `completed` (also `requested`, `pending`, `waiting`); `None` when
    /// GitHub sends `null`.
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub app: Option<AppSummary>,
    /// How many check runs the suite has; a suite an app never used has none.
    #[serde(default)]
    pub latest_check_runs_count: Option<u64>,
}

#[derive(Deserialize)]
pub(super) struct CheckSuitePage {
    #[serde(default)]
    pub(super) check_suites: Vec<CheckSuiteSummary>,
}

/// A GitHub Actions workflow run (its latest attempt).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WorkflowRunSummary {
    pub id: u64,
    #[serde(default)]
    pub name: Option<String>,
    pub head_sha: String,
    #[serde(default)]
    pub head_branch: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub run_attempt: Option<u64>,
    #[serde(default)]
    pub html_url: Option<String>,
    /// What triggered it: `push`, `pull_request`, …
    #[serde(default)]
    pub event: Option<String>,
    /// The numbers of `pull_requests[]`: open pull requests whose head is the run's commit or
    /// branch, in the base repository only (a fork's pull request is not listed).
    #[serde(default, deserialize_with = "pull_numbers")]
    pub pull_requests: Vec<u64>,
}

/// `pull_requests: [{"number": …}, …]` (or `null`) read as the numbers.
fn pull_numbers<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u64>, D::Error> {
    #[derive(Deserialize)]
    struct Numbered {
        number: u64,
    }
    let pulls: Option<Vec<Numbered>> = Option::deserialize(deserializer)?;
    Ok(pulls.unwrap_or_default().into_iter().map(|p| p.number).collect())
}

#[derive(Debug, Deserialize)]
pub(super) struct WorkflowRunPage {
    #[serde(default)]
    pub(super) workflow_runs: Vec<WorkflowRunSummary>,
}

/// One attempt of one job of a workflow run.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ActionsJob {
    /// Also the id of the job's check run.
    pub id: u64,
    pub run_id: u64,
    #[serde(default)]
    pub run_attempt: Option<u64>,
    pub name: String,
    pub status: String,
    #[serde(default)]
    pub conclusion: Option<String>,
    pub head_sha: String,
    #[serde(default)]
    pub html_url: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub steps: Vec<ActionsStep>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ActionsStep {
    pub name: String,
    pub number: u64,
    pub status: String,
    #[serde(default)]
    pub conclusion: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct JobPage {
    #[serde(default)]
    pub(super) jobs: Vec<ActionsJob>,
}

/// A job's log, or its end when it is longer than asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLogText {
    /// The text kept, lossy UTF-8.
    pub text: String,
    /// Whether the start of the log was dropped.
    pub truncated: bool,
    /// The whole log's size.
    pub total_bytes: u64,
}

/// A pull request a commit belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitPull {
    pub number: u64,
    pub open: bool,
    pub head_sha: String,
    /// The branch it merges into.
    pub base_ref: String,
}

#[derive(Debug, Deserialize)]
pub(super) struct PullSimple {
    pub(super) number: u64,
    #[serde(default, deserialize_with = "null_default")]
    pub(super) state: String,
    pub(super) head: PullSimpleRef,
    pub(super) base: PullSimpleRef,
}

#[derive(Debug, Deserialize)]
pub(super) struct PullSimpleRef {
    #[serde(rename = "ref", default, deserialize_with = "null_default")]
    pub(super) branch: String,
    #[serde(default, deserialize_with = "null_default")]
    pub(super) sha: String,
}

/// What the contents API returns for a path (a directory is a JSON array instead).
#[derive(Debug, Deserialize)]
pub(crate) struct ContentEntry {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub size: u64,
    #[serde(default)]
    pub encoding: Option<String>,
    #[serde(default)]
    pub content: Option<String>,
}

#[derive(Debug, Serialize)]
pub(super) struct NewIssue<'a> {
    pub(super) title: &'a str,
    pub(super) body: &'a str,
}

#[derive(Debug, Serialize)]
pub(super) struct BodyOnly<'a> {
    pub(super) body: &'a str,
}

#[derive(Debug, Serialize)]
pub(super) struct LabelsBody<'a> {
    pub(super) labels: &'a [String],
}

#[derive(Debug, Serialize)]
pub(super) struct AssigneesBody<'a> {
    pub(super) assignees: &'a [String],
}

#[derive(Debug, Serialize)]
pub(super) struct ReviewersBody<'a> {
    pub(super) reviewers: &'a [String],
    pub(super) team_reviewers: &'a [String],
}

#[derive(Debug, Serialize)]
pub(super) struct ReactionBody {
    pub(super) content: Reaction,
}
