//! The dependency dashboard issue and the commands that change what it records: `ignore
//! <package>` on a dependency pull request and `unignore <package>`. The record lives in the
//! repository, not in pitcrew's store, so that it survives restarts and the Action's throwaway
//! store and anyone can see it: the body of one open issue the bot opened, whose first line is
//! [`text::MARKER`] (`report/dashboard.rs` writes and reads it). Who can change it: whoever passed
//! the permission gate to give the command, and whoever may edit the bot's issue on GitHub
//! (write access); an issue opened by anyone else, marker or not, is never read.

use crate::github::{GithubError, Issue, IssueNumber, PullRequest};
use crate::jobs::Finish;
use crate::report::dashboard::{self as text, Ledger};
use crate::triggers::{JobKind, PackageName};

use super::chore::BRANCH_PREFIX;
use super::record::Summary;
use super::session::Spent;
use super::{HandlerError, JobEnv};

/// The repository's dashboard issue, if the bot opened one: its number and body.
#[derive(Debug, Clone)]
pub(super) struct Dashboard {
    pub(super) number: IssueNumber,
    pub(super) body: String,
}

impl Dashboard {
    pub(super) fn ledger(&self) -> Ledger {
        Ledger::read(&self.body)
    }
}

/// The bot's open dashboard issue (the oldest, if someone made it open two).
pub(super) async fn find(env: &JobEnv) -> Result<Option<Dashboard>, HandlerError> {
    let bot = &env.config().github.bot_name;
    let issues = env.github.open_issues_by(&env.repo, bot).await?;
    Ok(issues
        .into_iter()
        .filter(|issue| is_dashboard(issue, bot))
        .min_by_key(|issue| issue.number.0)
        .map(|issue| Dashboard {
            number: issue.number,
            body: issue.body,
        }))
}

/// Whether `issue` is the bot's own dashboard: opened by the bot, and marked.
fn is_dashboard(issue: &Issue, bot: &str) -> bool {
    issue.user.login.eq_ignore_ascii_case(bot) && issue.body.trim_start().starts_with(text::MARKER)
}

/// Writes `body` into the dashboard, opening it when there is none; returns its number.
pub(super) async fn write(
    env: &JobEnv,
    dashboard: Option<&Dashboard>,
    body: &str,
) -> Result<IssueNumber, HandlerError> {
    match dashboard {
        Some(dashboard) if dashboard.body == body => Ok(dashboard.number),
        Some(dashboard) => {
            env.github.update_issue_body(&env.repo, dashboard.number, body).await?;
            Ok(dashboard.number)
        }
        None => Ok(env.github.create_issue(&env.repo, text::TITLE, body).await?.number),
    }
}

/// The open dependency pull request the command `name` was given on (from a `pitcrew/deps…`
/// branch of this repository), or the reply that it works there only, said and reported.
pub(super) async fn chore_pull(env: &JobEnv, name: &str) -> Result<PullRequest, HandlerError> {
    let pull = match env.request.subject.pull_request() {
        Some(number) => match env.github.get_pull(&env.repo, number).await {
            Ok(pull) => Some(pull),
            Err(GithubError::NotFound { .. }) => None,
            Err(error) => return Err(error.into()),
        },
        None => None,
    };
    match pull {
        Some(pull)
            if pull.state == "open" && pull.head.branch.starts_with(BRANCH_PREFIX) && !pull.is_cross_repository() =>
        {
            Ok(pull)
        }
        _ => {
            let words = format!(
                "`{name}` works on open dependency pull requests only (from a `{BRANCH_PREFIX}…` branch of this \
                 repository)."
            );
            env.reply(&words).await?;
            Err(HandlerError::Reported(words))
        }
    }
}

/// `ignore <package>` (on a dependency pull request) and `unignore <package>`: the dashboard's
/// record changes, and the person who asked is told what comes of it.
pub async fn ignore(env: &JobEnv) -> Result<(Finish, Spent), HandlerError> {
    let JobKind::Ignore { package, undo } = &env.request.kind else {
        return Err(HandlerError::Other("not an ignore command".into()));
    };
    let repo_config = env.repo_config().await?;
    let trigger = env.trigger(&repo_config);
    if !undo {
        let pull = chore_pull(env, "ignore").await?;
        // A name this pull request does not update is most likely words, not a package
        // (`@agent ignore this`): nothing is recorded.
        let listed = crate::report::chore::table_packages(&pull.body);
        if !listed.is_empty()
            && !listed
                .iter()
                .any(|name| name.eq_ignore_ascii_case(&package.to_string()))
        {
            let names: Vec<String> = listed.iter().map(|n| format!("`{n}`")).collect();
            let answer = format!(
                "`{package}` is not a package this pull request updates ({}), so nothing was ignored.",
                names.join(", ")
            );
            env.reply(&answer).await?;
            let headline = format!("{package} not ignored: not in this pull request");
            let summary = Summary {
                headline: headline.clone(),
                conclusion: crate::github::CheckConclusion::Neutral,
                commit: None,
                pull_request: None,
                summary: headline,
                report: answer,
                detail: None,
            };
            return Ok((super::succeeded(&summary), Spent::default()));
        }
    }
    let dashboard = find(env).await?;
    let mut ignored = dashboard
        .as_ref()
        .map(|d| d.ledger().still_ignored())
        .unwrap_or_default();
    let listed = ignored.contains(package);
    let answer = match (undo, listed) {
        (false, true) => format!("`{package}` was already ignored; nothing changed."),
        (true, false) => format!(
            "`{package}` is not on the dependency dashboard's ignore list, so nothing changed (a package in \
             `[chores.deps] ignore` is changed in `.github/pitcrew.toml`)."
        ),
        (false, false) => {
            ignored.push(package.clone());
            let number = record(env, dashboard.as_ref(), &ignored, &trigger).await?;
            format!(
                "I will not propose `{package}` again in this repository (recorded in #{number}, the dependency \
                 dashboard; `{trigger} unignore {package}` undoes it). The next dependency run updates this pull \
                 request without it, or closes it if nothing is left."
            )
        }
        (true, true) => {
            ignored.retain(|name| name != package);
            let number = record(env, dashboard.as_ref(), &ignored, &trigger).await?;
            format!("`{package}` is proposed again from the next dependency run on (recorded in #{number}).")
        }
    };
    env.reply(&answer).await?;
    let headline = if *undo {
        format!("{package} no longer ignored")
    } else {
        format!("{package} ignored")
    };
    let summary = Summary {
        headline: headline.clone(),
        conclusion: crate::github::CheckConclusion::Success,
        commit: None,
        pull_request: None,
        summary: headline,
        report: answer,
        detail: None,
    };
    Ok((super::succeeded(&summary), Spent::default()))
}

/// Writes the ignore list into the dashboard (the rest of its body kept); returns its number.
async fn record(
    env: &JobEnv,
    dashboard: Option<&Dashboard>,
    ignored: &[PackageName],
    trigger: &str,
) -> Result<IssueNumber, HandlerError> {
    let body = text::with_ignored(dashboard.map(|d| d.body.as_str()), ignored, trigger);
    write(env, dashboard, &body).await
}
