//! What to do about an event: ignore it, answer a ping, or act for someone — run jobs, stop one, post
//! help — behind a permission gate the caller resolves with GitHub's collaborator permission API.

use serde::{Deserialize, Serialize};

use super::command::{Chore, Command, parse_commands};
use super::event::{
    Actor, AppRef, AuthorAssociation, CheckRun, CheckSuite, CommentEvent, Conclusion, Context, Event, IssueRef,
    PullAction, PullEvent, RepoRef, ReviewContext, WorkflowRun,
};
use super::subject::Subject;
use crate::config::command::{CommandKind, EnabledCommands, PackageName};
use crate::config::repo::ReviewSettings;
use crate::github::{CommentId, CommitSha, InstallationId, IssueNumber, Login};
use crate::report::dashboard;

/// The trigger settings of one installation or repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerConfig {
    /// The mention that addresses the bot, e.g. `@agent`.
    pub trigger: String,
    /// The App's bot account, e.g. `pitcrew[bot]`: its own comments are never commands, and assigning
    /// an issue to it asks for a fix.
    pub bot_login: String,
    /// Adding this label to an issue asks for a fix; `None` turns label triggers off.
    pub label: Option<String>,
    /// Assigning an issue to the bot asks for a fix.
    pub assign: bool,
    pub commands: EnabledCommands,
    /// A failed workflow run, check suite or check run starts a triage without being asked.
    pub ci_triage: bool,
    /// Which pull requests are reviewed as they open and change (`[review]`).
    pub review: ReviewSettings,
}

impl TriggerConfig {
    /// Every command on, no trigger label, CI failures triaged.
    pub fn new(trigger: impl Into<String>, bot_login: impl Into<String>) -> Self {
        TriggerConfig {
            trigger: trigger.into(),
            bot_login: bot_login.into(),
            label: None,
            assign: true,
            commands: EnabledCommands::default(),
            ci_triage: true,
            review: ReviewSettings::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    Fix,
    Review,
    Explain,
    /// pitcrew's section of a pull request's description, written or brought up to date.
    Describe,
    Triage,
    Chore(Chore),
    /// `ignore <package>` (`undo`: `unignore`): the dependency chore's ignore list changes.
    Ignore {
        package: PackageName,
        #[serde(default)]
        undo: bool,
    },
    /// `rebase` on a dependency pull request: its group made again on the default branch's head.
    Rebase,
    /// The `pitcrew config` check run of a pull request that changes `.github/pitcrew.toml`; no
    /// command asks for it: every pull request's new head gets one (which does nothing when the
    /// file is not among its changes).
    ConfigCheck,
}

impl JobKind {
    /// The command that asks for this job; `None` for the config check, which none does.
    pub fn command(&self) -> Option<CommandKind> {
        Some(match self {
            JobKind::Fix => CommandKind::Fix,
            JobKind::Review => CommandKind::Review,
            JobKind::Explain => CommandKind::Explain,
            JobKind::Describe => CommandKind::Describe,
            JobKind::Triage => CommandKind::Triage,
            JobKind::Chore(_) => CommandKind::Chore,
            JobKind::Ignore { undo: false, .. } => CommandKind::Ignore,
            JobKind::Ignore { undo: true, .. } => CommandKind::Unignore,
            JobKind::Rebase => CommandKind::Rebase,
            JobKind::ConfigCheck => return None,
        })
    }

    /// The job store's `kind` column: the command word (`config` for the config check).
    pub fn as_str(&self) -> &'static str {
        self.command().map_or("config", CommandKind::name)
    }
}

/// Who asked. `association` is `None` when the payload does not say (assignments, labels).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requester {
    pub login: Login,
    /// The account's numeric id, when the payload gave it.
    #[serde(default)]
    pub id: Option<u64>,
    pub association: Option<AuthorAssociation>,
}

/// Where the bot answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", from = "ReplyTargetWire")]
pub enum ReplyTarget {
    /// The issue or PR conversation; `comment_id` is the triggering comment (for a reaction).
    Issue {
        number: IssueNumber,
        comment_id: Option<CommentId>,
    },
    /// A review thread on a PR's diff. `comment_id` is the thread's first comment: GitHub's reply
    /// endpoint does not accept replies to replies.
    ReviewThread {
        pull_number: IssueNumber,
        comment_id: CommentId,
    },
    /// No conversation to answer in (a scheduled chore, a CI failure of a commit no pull request
    /// points at): the check run and the job's result are the report.
    Nowhere,
}

/// A reply target as stored, by this version or an earlier one (which wrote `Nowhere` as an
/// issue numbered 0).
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ReplyTargetWire {
    Issue {
        number: IssueNumber,
        comment_id: Option<CommentId>,
    },
    ReviewThread {
        pull_number: IssueNumber,
        comment_id: CommentId,
    },
    Nowhere,
}

impl From<ReplyTargetWire> for ReplyTarget {
    fn from(wire: ReplyTargetWire) -> Self {
        match wire {
            ReplyTargetWire::Issue {
                number: IssueNumber(0), ..
            }
            | ReplyTargetWire::Nowhere => ReplyTarget::Nowhere,
            ReplyTargetWire::Issue { number, comment_id } => ReplyTarget::Issue { number, comment_id },
            ReplyTargetWire::ReviewThread {
                pull_number,
                comment_id,
            } => ReplyTarget::ReviewThread {
                pull_number,
                comment_id,
            },
        }
    }
}

/// What started a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum JobSource {
    Comment {
        comment_id: CommentId,
    },
    ReviewComment {
        comment_id: CommentId,
    },
    Assigned,
    Labeled {
        label: String,
    },
    /// A workflow asked for it (the Action with an explicit `mode`), on this event.
    Workflow {
        event: String,
    },
    /// CI reported a failure: a `workflow_run`, `check_suite` or `check_run` that completed failing.
    Ci(CiFailure),
    /// The repository's `[chores.deps] schedule` fired (`schedule` is the cron expression), or the
    /// schedule of a `[[chores.deps.rules]]` group (`group`: only that group's pull request).
    Schedule {
        schedule: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
    },
    /// A box was ticked on the dependency dashboard.
    Dashboard,
    /// A pull request opened, was reopened or marked ready, or got new commits (`action`, as GitHub
    /// spells it), in a repository that reviews or describes pull requests without being asked.
    PullRequest {
        action: String,
    },
}

/// The failed CI that started a triage: what GitHub reported, by its own ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CiFailure {
    /// `workflow_run`, `check_suite` or `check_run`.
    pub event: String,
    /// The workflow run's, check suite's or check run's id.
    pub id: u64,
    /// The workflow's or check run's name, when the payload gave one.
    pub name: Option<String>,
    pub head_branch: Option<String>,
    /// Every pull request of this repository whose head is the commit (the job's `number` is the
    /// first); empty for a fork's pull request, which GitHub does not list here.
    pub pull_requests: Vec<IssueNumber>,
    pub html_url: Option<String>,
}

/// A job as the store keeps it (JSON in the job database) and a worker reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "JobRequestWire")]
pub struct JobRequest {
    pub kind: JobKind,
    pub repo: RepoRef,
    pub installation_id: Option<InstallationId>,
    /// The pull request, issue, commit or repository the job is about.
    pub subject: Subject,
    pub requested_by: Requester,
    pub reply_to: ReplyTarget,
    pub source: JobSource,
    pub instructions: Option<String>,
    /// The diff position of the review comment that asked, if one did.
    pub review_comment: Option<ReviewContext>,
    /// The PR head the request was made against, when the payload said.
    pub head_sha: Option<CommitSha>,
    /// The webhook delivery that asked (`X-GitHub-Delivery`).
    pub delivery_id: Option<String>,
}

/// A job request as stored, by this version (with `subject`) or an earlier one (with `number`,
/// 0 for none, and `is_pull_request`): jobs queued before an upgrade still run after it.
#[derive(Deserialize)]
struct JobRequestWire {
    kind: JobKind,
    repo: RepoRef,
    installation_id: Option<InstallationId>,
    #[serde(default)]
    subject: Option<Subject>,
    #[serde(default)]
    number: Option<u64>,
    #[serde(default)]
    is_pull_request: Option<bool>,
    requested_by: Requester,
    reply_to: ReplyTarget,
    source: JobSource,
    instructions: Option<String>,
    review_comment: Option<ReviewContext>,
    head_sha: Option<CommitSha>,
    delivery_id: Option<String>,
}

impl From<JobRequestWire> for JobRequest {
    fn from(wire: JobRequestWire) -> Self {
        let subject = match (wire.subject, wire.number) {
            (Some(subject), _) => subject,
            (None, Some(number)) if number != 0 => {
                Subject::issue_or_pull(IssueNumber(number), wire.is_pull_request.unwrap_or(false))
            }
            (None, _) => match (&wire.source, &wire.head_sha) {
                (JobSource::Ci(_), Some(sha)) => Subject::Commit { sha: sha.clone() },
                _ => Subject::Repository,
            },
        };
        JobRequest {
            kind: wire.kind,
            repo: wire.repo,
            installation_id: wire.installation_id,
            subject,
            requested_by: wire.requested_by,
            reply_to: wire.reply_to,
            source: wire.source,
            instructions: wire.instructions,
            review_comment: wire.review_comment,
            head_sha: wire.head_sha,
            delivery_id: wire.delivery_id,
        }
    }
}

impl JobRequest {
    /// The serialisation key: at most one job runs per PR, issue or commit at a time; one chore run
    /// per repository, whoever asked (and the dependency commands wait for it: they change its
    /// branches and its ignore list).
    pub fn key(&self) -> String {
        match &self.kind {
            JobKind::Chore(chore) => return chore_key(&self.repo, *chore),
            JobKind::Ignore { .. } | JobKind::Rebase => return chore_key(&self.repo, Chore::Deps),
            _ => {}
        }
        self.subject.key(&self.repo.name)
    }

    /// The CI failure this job looks at, if CI started it.
    pub fn ci(&self) -> Option<&CiFailure> {
        match &self.source {
            JobSource::Ci(ci) => Some(ci),
            _ => None,
        }
    }

    /// A fix asked for on an issue ends in a new pull request linked to it; on a PR it pushes to it.
    pub fn opens_pull_request(&self) -> bool {
        self.kind == JobKind::Fix && !self.subject.is_pull_request()
    }
}

/// The serialisation key of a repository's chore: `owner/name:deps`.
pub fn chore_key(repo: &RepoRef, chore: Chore) -> String {
    let name = match chore {
        Chore::Deps => "deps",
    };
    format!("{}:{name}", repo.name)
}

/// Whether the caller must ask GitHub before acting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionGate {
    /// The requester may have write access: check with the collaborator permission API.
    NeedsPermissionCheck,
    /// The requester cannot have write access (`author_association` says so): post the refusal and
    /// do nothing else, without spending an API call.
    Refuse,
    /// GitHub itself reported it (a CI failure): nobody asked, so there is nobody to check.
    Trusted,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Run(Box<JobRequest>),
    /// Cancel the queued or running job for `key`.
    Stop {
        key: String,
    },
    /// Post the command list.
    Help,
    /// A command that cannot be run; post `message` (it names the problem and, if it can, the fix).
    Invalid {
        message: String,
    },
}

/// Someone asked for something on a PR or issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub repo: RepoRef,
    pub installation_id: Option<InstallationId>,
    pub subject: Subject,
    pub requested_by: Requester,
    pub reply_to: ReplyTarget,
    pub permission: PermissionGate,
    /// In the order asked; never empty.
    pub actions: Vec<Action>,
    /// The jobs the event could have started and did not, each with why (the log says them): a
    /// pull request's review when reviews are off, say, while its config check runs.
    pub not_run: Vec<String>,
}

impl Request {
    pub fn key(&self) -> String {
        self.subject.key(&self.repo.name)
    }

    /// The short, polite answer to someone without write access.
    pub fn refusal_message(&self) -> String {
        format!(
            "Sorry @{}, only people with write access to {} can ask me to do things here.",
            self.requested_by.login, self.repo.name
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing to do (still answered 2xx); `reason` is for the log.
    Ignore {
        reason: String,
    },
    Pong {
        zen: String,
    },
    Act(Box<Request>),
}

impl Decision {
    /// Records the delivery that asked in every job request.
    pub fn with_delivery(mut self, delivery_id: &str) -> Self {
        if let Decision::Act(request) = &mut self {
            for action in &mut request.actions {
                if let Action::Run(job) = action {
                    job.delivery_id = Some(delivery_id.to_owned());
                }
            }
        }
        self
    }

    /// The job requests in this decision.
    pub fn jobs(&self) -> Vec<&JobRequest> {
        match self {
            Decision::Act(request) => request
                .actions
                .iter()
                .filter_map(|action| match action {
                    Action::Run(job) => Some(job.as_ref()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// Decides what `event` asks for.
pub fn decide(event: &Event, cfg: &TriggerConfig) -> Decision {
    match event {
        Event::Ping { zen, .. } => Decision::Pong { zen: zen.clone() },
        Event::Comment(comment) => decide_comment(comment, cfg),
        Event::IssueAssigned { ctx, issue, assignee } => {
            if !is_self(assignee.login.as_str(), &cfg.bot_login) {
                return ignore(format!(
                    "issue #{} assigned to {}, not to the bot",
                    issue.number, assignee.login
                ));
            }
            if !cfg.assign {
                return ignore("assignment triggers are off in this repository".to_owned());
            }
            issue_fix(ctx, issue, JobSource::Assigned, cfg)
        }
        Event::IssueLabeled { ctx, issue, label } => match &cfg.label {
            Some(wanted) if wanted.eq_ignore_ascii_case(label) => {
                let source = JobSource::Labeled { label: label.clone() };
                issue_fix(ctx, issue, source, cfg)
            }
            Some(_) => ignore(format!("label `{label}` is not the trigger label")),
            None => ignore("no trigger label is configured".to_owned()),
        },
        Event::IssueEdited {
            ctx,
            issue,
            author,
            before,
        } => dashboard_ticked(ctx, issue, author, before, cfg),
        Event::PullRequestClosed { number, .. } => ignore(format!("pull request #{number} closed")),
        Event::PullRequestChanged { ctx, action, pull } => pull_changed(ctx, *action, pull, cfg),
        Event::WorkflowRunCompleted(run) => ci_failure(&run.ctx, workflow_failure(run), cfg),
        Event::CheckRunCompleted(run) => ci_failure(&run.ctx, check_run_failure(run, cfg), cfg),
        Event::CheckSuiteCompleted(suite) => ci_failure(&suite.ctx, check_suite_failure(suite, cfg), cfg),
        Event::InstallationChanged { action, .. } => ignore(format!("installation {action}")),
        Event::Ignored { reason } => ignore(reason.clone()),
    }
}

fn ignore(reason: String) -> Decision {
    Decision::Ignore { reason }
}

/// `login` is the bot itself, with or without the `[bot]` suffix.
fn is_self(login: &str, bot_login: &str) -> bool {
    let bare = |s: &str| {
        let lower = s.trim().to_ascii_lowercase();
        lower.strip_suffix("[bot]").map(str::to_owned).unwrap_or(lower)
    };
    !bot_login.trim().is_empty() && bare(login) == bare(bot_login)
}

fn is_bot(actor: &Actor, cfg: &TriggerConfig) -> bool {
    actor.is_bot() || is_self(actor.login.as_str(), &cfg.bot_login)
}

fn decide_comment(comment: &CommentEvent, cfg: &TriggerConfig) -> Decision {
    // Bots never command the bot: its own replies quote commands, and two bots answering each other
    // would loop.
    if is_bot(&comment.author, cfg) || is_bot(&comment.ctx.sender, cfg) {
        return ignore(format!("comment by the bot account {}", comment.author.login));
    }
    let commands = parse_commands(&comment.body, &cfg.trigger);
    if commands.is_empty() {
        return ignore(format!(
            "comment {} does not mention {}",
            comment.comment_id, cfg.trigger
        ));
    }
    let issue = &comment.issue;
    let (reply_to, source) = match &comment.review {
        Some(review) => (
            ReplyTarget::ReviewThread {
                pull_number: issue.number,
                comment_id: review.in_reply_to.unwrap_or(comment.comment_id),
            },
            JobSource::ReviewComment {
                comment_id: comment.comment_id,
            },
        ),
        None => (
            ReplyTarget::Issue {
                number: issue.number,
                comment_id: Some(comment.comment_id),
            },
            JobSource::Comment {
                comment_id: comment.comment_id,
            },
        ),
    };
    let mut request = Request {
        repo: comment.ctx.repo.clone(),
        installation_id: comment.ctx.installation_id,
        subject: Subject::issue_or_pull(issue.number, issue.is_pull_request),
        requested_by: Requester {
            login: comment.author.login.clone(),
            id: comment.author.id,
            association: Some(comment.author_association.clone()),
        },
        reply_to: reply_to.clone(),
        permission: gate(&comment.author_association),
        actions: Vec::new(),
        not_run: Vec::new(),
    };
    for parsed in commands {
        let action = match parsed {
            Err(err) => Action::Invalid {
                message: err.to_string(),
            },
            Ok(Command::Help) => Action::Help,
            Ok(Command::Stop) => Action::Stop { key: request.key() },
            Ok(command) => {
                let (kind, instructions) = match command {
                    Command::Fix { instructions } => (JobKind::Fix, instructions),
                    Command::Review { instructions } => (JobKind::Review, instructions),
                    Command::Explain { question } => (JobKind::Explain, question),
                    Command::Describe { focus } => (JobKind::Describe, focus),
                    Command::Triage => (JobKind::Triage, None),
                    Command::Chore(chore) => (JobKind::Chore(chore), None),
                    Command::Ignore { package } => (JobKind::Ignore { package, undo: false }, None),
                    Command::Unignore { package } => (JobKind::Ignore { package, undo: true }, None),
                    Command::Rebase => (JobKind::Rebase, None),
                    Command::Help | Command::Stop => continue,
                };
                job_action(
                    JobRequest {
                        kind,
                        repo: comment.ctx.repo.clone(),
                        installation_id: comment.ctx.installation_id,
                        subject: request.subject.clone(),
                        requested_by: request.requested_by.clone(),
                        reply_to: reply_to.clone(),
                        source: source.clone(),
                        instructions,
                        review_comment: comment.review.clone(),
                        head_sha: issue.head_sha.clone(),
                        delivery_id: None,
                    },
                    cfg,
                )
            }
        };
        // "@agent fix" twice in one comment is one fix.
        if !request.actions.contains(&action) {
            request.actions.push(action);
        }
    }
    Decision::Act(Box::new(request))
}

/// The job, or why it cannot run here.
fn job_action(job: JobRequest, cfg: &TriggerConfig) -> Action {
    if job.kind.command().is_some_and(|command| !cfg.commands.allows(command)) {
        return Action::Invalid {
            message: format!("`{}` is turned off in this repository.", job.kind.as_str()),
        };
    }
    let on_pulls_only = matches!(
        job.kind,
        JobKind::Review
            | JobKind::Describe
            | JobKind::Triage
            | JobKind::Rebase
            | JobKind::Ignore { undo: false, .. }
            | JobKind::ConfigCheck
    );
    if on_pulls_only && !job.subject.is_pull_request() {
        return Action::Invalid {
            message: format!("`{}` works on pull requests only.", job.kind.as_str()),
        };
    }
    Action::Run(Box::new(job))
}

fn gate(association: &AuthorAssociation) -> PermissionGate {
    if association.may_have_write_access() {
        PermissionGate::NeedsPermissionCheck
    } else {
        PermissionGate::Refuse
    }
}

/// An edit of the bot's own dependency dashboard that ticked a box asks for a chore run now (the
/// run reads the boxes, `report/dashboard.rs`); any other edit, or anyone else's issue, asks for
/// nothing. The editor's permission is checked with GitHub, as for a command.
fn dashboard_ticked(ctx: &Context, issue: &IssueRef, author: &Actor, before: &str, cfg: &TriggerConfig) -> Decision {
    if is_bot(&ctx.sender, cfg) {
        return ignore(format!(
            "issue #{} edited by the bot account {}",
            issue.number, ctx.sender.login
        ));
    }
    let body = issue.body.as_deref().unwrap_or_default();
    if issue.is_pull_request || !is_self(author.login.as_str(), &cfg.bot_login) || !dashboard::is_dashboard_body(body) {
        return ignore(format!("issue #{} is not the bot's dependency dashboard", issue.number));
    }
    if !dashboard::newly_ticked(before, body) {
        return ignore(format!(
            "the dependency dashboard #{} was edited, no box ticked",
            issue.number
        ));
    }
    if !cfg.commands.allows(CommandKind::Chore) {
        return ignore("`chore` is turned off".to_owned());
    }
    let reply_to = ReplyTarget::Issue {
        number: issue.number,
        comment_id: None,
    };
    let chore = JobSpec::new(JobKind::Chore(Chore::Deps), JobSource::Dashboard);
    // The payload has no association for the editor: always ask GitHub.
    let permission = PermissionGate::NeedsPermissionCheck;
    sender_request(
        ctx,
        Subject::Issue { number: issue.number },
        reply_to,
        permission,
        vec![chore],
    )
}

/// The label that keeps a pull request from being reviewed without being asked.
pub const SKIP_REVIEW_LABEL: &str = "pitcrew:skip-review";

/// A pull request that opened or changed, in a repository that looks at pull requests without
/// being asked: a review of its head with `[review] auto` (not of a draft: it is reviewed once it
/// is ready), and, as it opens, its description's section with `[review] describe` (a draft's
/// too: its description is read while it is a draft). Neither for a bot's pull request (unless
/// `[review] bots` names it) nor for one labelled [`SKIP_REVIEW_LABEL`]. Both jobs are on the
/// pull request's key, so they run one after the other, the description first (it is quick, and
/// the review's readers see it). Nobody asked, so nobody's permission is checked; the jobs run
/// with the repository's budgets like any other.
///
/// Before them, each new head (opened, reopened, pushed) gets the config check, whoever wrote it
/// and however it is labelled: it checks `.github/pitcrew.toml` when the pull request changes it
/// and does nothing otherwise.
fn pull_changed(ctx: &Context, action: PullAction, pull: &PullEvent, cfg: &TriggerConfig) -> Decision {
    let number = pull.number;
    let mut kinds = Vec::new();
    if action != PullAction::ReadyForReview {
        kinds.push(JobKind::ConfigCheck);
    }
    let (automatic, not_run) = automatic_kinds(action, pull, cfg);
    kinds.extend(automatic);
    if kinds.is_empty() {
        return ignore(not_run.join("; "));
    }
    let reply_to = ReplyTarget::Issue {
        number,
        comment_id: None,
    };
    let source = JobSource::PullRequest {
        action: action.as_str().to_owned(),
    };
    let jobs = kinds
        .into_iter()
        .map(|kind| JobSpec {
            // The description and the config check are written without a word on the
            // conversation: nobody asked for them, and a failure goes to the log.
            reply_to: matches!(kind, JobKind::Describe | JobKind::ConfigCheck).then_some(ReplyTarget::Nowhere),
            head_sha: Some(pull.head_sha.clone()),
            ..JobSpec::new(kind, source.clone())
        })
        .collect();
    // GitHub reported it; the jobs are the repository's own choice.
    let mut decision = sender_request(
        ctx,
        Subject::PullRequest { number },
        reply_to,
        PermissionGate::Trusted,
        jobs,
    );
    if let Decision::Act(request) = &mut decision {
        request.not_run = not_run;
    }
    decision
}

/// The description and the review a pull request gets without being asked, and why each that
/// does not run does not.
pub(crate) fn automatic_kinds(
    action: PullAction,
    pull: &PullEvent,
    cfg: &TriggerConfig,
) -> (Vec<JobKind>, Vec<String>) {
    let number = pull.number;
    let mut kinds = Vec::new();
    let mut not_run = Vec::new();
    let describe = cfg.review.describe && action == PullAction::Opened;
    if !cfg.review.auto && !describe {
        not_run.push(format!(
            "pull request #{number} {}: automatic reviews are off",
            action.as_str()
        ));
        return (kinds, not_run);
    }
    if is_bot(&pull.author, cfg) && !cfg.review.reviews_bot(pull.author.login.as_str()) {
        not_run.push(format!(
            "pull request #{number} is by the bot account {}, which `[review] bots` does not list",
            pull.author.login
        ));
        return (kinds, not_run);
    }
    if pull.labels.iter().any(|l| l.eq_ignore_ascii_case(SKIP_REVIEW_LABEL)) {
        not_run.push(format!("pull request #{number} is labelled `{SKIP_REVIEW_LABEL}`"));
        return (kinds, not_run);
    }
    if describe {
        if cfg.commands.allows(CommandKind::Describe) {
            kinds.push(JobKind::Describe);
        } else {
            not_run.push("`describe` is turned off".to_owned());
        }
    }
    if cfg.review.auto {
        if pull.draft {
            not_run.push(format!(
                "pull request #{number} is a draft: it is reviewed once it is ready"
            ));
        } else if cfg.commands.allows(CommandKind::Review) {
            kinds.push(JobKind::Review);
        } else {
            not_run.push("`review` is turned off".to_owned());
        }
    }
    (kinds, not_run)
}

/// A job an event asks for on its own, to run for the event's sender.
struct JobSpec {
    kind: JobKind,
    source: JobSource,
    instructions: Option<String>,
    head_sha: Option<CommitSha>,
    /// Where it answers, when not where the request does.
    reply_to: Option<ReplyTarget>,
}

impl JobSpec {
    fn new(kind: JobKind, source: JobSource) -> Self {
        JobSpec {
            kind,
            source,
            instructions: None,
            head_sha: None,
            reply_to: None,
        }
    }
}

/// What an event asks for on its own (an edit, an assignment, a label, a pull request that changed,
/// a CI failure): `jobs` about `subject` for the event's sender, answered at `reply_to`, behind
/// `permission`.
fn sender_request(
    ctx: &Context,
    subject: Subject,
    reply_to: ReplyTarget,
    permission: PermissionGate,
    jobs: Vec<JobSpec>,
) -> Decision {
    let requested_by = Requester {
        login: ctx.sender.login.clone(),
        id: ctx.sender.id,
        association: None,
    };
    let actions = jobs
        .into_iter()
        .map(|spec| {
            Action::Run(Box::new(JobRequest {
                kind: spec.kind,
                repo: ctx.repo.clone(),
                installation_id: ctx.installation_id,
                subject: subject.clone(),
                requested_by: requested_by.clone(),
                reply_to: spec.reply_to.unwrap_or_else(|| reply_to.clone()),
                source: spec.source,
                instructions: spec.instructions,
                review_comment: None,
                head_sha: spec.head_sha,
                delivery_id: None,
            }))
        })
        .collect();
    Decision::Act(Box::new(Request {
        repo: ctx.repo.clone(),
        installation_id: ctx.installation_id,
        subject,
        requested_by,
        reply_to,
        permission,
        actions,
        not_run: Vec::new(),
    }))
}

/// An assigned or labelled issue: a fix that ends in a new pull request.
fn issue_fix(ctx: &Context, issue: &IssueRef, source: JobSource, cfg: &TriggerConfig) -> Decision {
    if is_bot(&ctx.sender, cfg) {
        return ignore(format!(
            "issue #{} changed by the bot account {}",
            issue.number, ctx.sender.login
        ));
    }
    if issue.is_pull_request {
        return ignore(format!("#{} is a pull request, not an issue", issue.number));
    }
    if !cfg.commands.allows(CommandKind::Fix) {
        return ignore("`fix` is turned off".to_owned());
    }
    let instructions = match issue.body.as_deref().map(str::trim) {
        Some(body) if !body.is_empty() => format!("{}\n\n{body}", issue.title),
        _ => issue.title.clone(),
    };
    let reply_to = ReplyTarget::Issue {
        number: issue.number,
        comment_id: None,
    };
    let fix = JobSpec {
        instructions: Some(instructions),
        ..JobSpec::new(JobKind::Fix, source)
    };
    // Assigning and labelling take only triage access, and the payload has no association for the
    // sender: always ask GitHub.
    let permission = PermissionGate::NeedsPermissionCheck;
    sender_request(
        ctx,
        Subject::Issue { number: issue.number },
        reply_to,
        permission,
        vec![fix],
    )
}

/// What a completed CI event reports, or why it is not worth a triage.
type CiReport = Result<(CiFailure, CommitSha), String>;

fn failed(conclusion: Option<&Conclusion>) -> bool {
    conclusion.is_some_and(Conclusion::is_failure)
}

fn conclusion_text(conclusion: Option<&Conclusion>) -> String {
    conclusion.map_or_else(|| "no conclusion".to_owned(), |c| format!("{c:?}").to_ascii_lowercase())
}

fn workflow_failure(run: &WorkflowRun) -> CiReport {
    if !failed(run.conclusion.as_ref()) {
        return Err(format!(
            "workflow run {} completed with {}",
            run.id,
            conclusion_text(run.conclusion.as_ref())
        ));
    }
    let failure = CiFailure {
        event: "workflow_run".into(),
        id: run.id,
        name: run.name.clone().filter(|name| !name.trim().is_empty()),
        head_branch: run.head_branch.clone(),
        pull_requests: run.pull_requests.clone(),
        html_url: run.html_url.clone(),
    };
    Ok((failure, run.head_sha.clone()))
}

/// The bot's own check runs and suites (`pitcrew`, `pitcrew triage`) must not start a triage of
/// themselves: recognised by the App's slug, and by name for a check run made with a plain token
/// (the Action's `GITHUB_TOKEN`, whose app is GitHub Actions).
fn is_own_app(app: Option<&AppRef>, cfg: &TriggerConfig) -> bool {
    app.and_then(|a| a.slug.as_deref())
        .is_some_and(|slug| is_self(slug, &cfg.bot_login))
}

fn check_run_failure(run: &CheckRun, cfg: &TriggerConfig) -> CiReport {
    if is_own_app(run.app.as_ref(), cfg) || run.name == "pitcrew" || run.name.starts_with("pitcrew ") {
        return Err(format!("check run {} is the bot's own", run.id));
    }
    if !failed(run.conclusion.as_ref()) {
        return Err(format!(
            "check run {} completed with {}",
            run.id,
            conclusion_text(run.conclusion.as_ref())
        ));
    }
    let failure = CiFailure {
        event: "check_run".into(),
        id: run.id,
        name: Some(run.name.clone()),
        head_branch: run.head_branch.clone(),
        pull_requests: run.pull_requests.clone(),
        html_url: run.html_url.clone(),
    };
    Ok((failure, run.head_sha.clone()))
}

fn check_suite_failure(suite: &CheckSuite, cfg: &TriggerConfig) -> CiReport {
    if is_own_app(suite.app.as_ref(), cfg) {
        return Err(format!("check suite {} is the bot's own", suite.id));
    }
    if !failed(suite.conclusion.as_ref()) {
        return Err(format!(
            "check suite {} completed with {}",
            suite.id,
            conclusion_text(suite.conclusion.as_ref())
        ));
    }
    let failure = CiFailure {
        event: "check_suite".into(),
        id: suite.id,
        name: suite.app.as_ref().and_then(|a| a.slug.clone()),
        head_branch: suite.head_branch.clone(),
        pull_requests: suite.pull_requests.clone(),
        html_url: None,
    };
    Ok((failure, suite.head_sha.clone()))
}

/// A failing CI event: a triage of its commit, on its first pull request when it names one.
fn ci_failure(ctx: &Context, report: CiReport, cfg: &TriggerConfig) -> Decision {
    let (failure, head_sha) = match report {
        Ok(found) => found,
        Err(reason) => return ignore(reason),
    };
    if !cfg.ci_triage {
        return ignore(format!(
            "{} {} failed: CI triage is off in this repository",
            failure.event, failure.id
        ));
    }
    let (subject, reply_to) = match failure.pull_requests.first().copied() {
        Some(number) => (
            Subject::PullRequest { number },
            ReplyTarget::Issue {
                number,
                comment_id: None,
            },
        ),
        None => (Subject::Commit { sha: head_sha.clone() }, ReplyTarget::Nowhere),
    };
    let triage = JobSpec {
        head_sha: Some(head_sha),
        ..JobSpec::new(JobKind::Triage, JobSource::Ci(failure))
    };
    sender_request(ctx, subject, reply_to, PermissionGate::Trusted, vec![triage])
}
