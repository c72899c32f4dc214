//! `describe`: the read-only agent writes pitcrew's section of a pull request's description — what
//! it does, its changes by area, its risks, how to test it — asked for (`@agent describe`) or as the
//! pull request opens (`[review] describe`). The section goes between pitcrew's markers in the
//! description as it is when the agent is done (read again just before writing), and the author's
//! text around it stays byte for byte ([`crate::report::describe`]).
//!
//! Asked for, the job reports like `explain`: a progress comment and a check run, whose last words
//! point at the description. Nobody asks for an automatic one, so it posts nothing but the
//! description: its job's result says what it did, and a failure goes to the log. Nothing is
//! committed or pushed.

use std::path::PathBuf;

use crate::agent::Outcome;
use crate::config::command::CommandKind;
use crate::config::repo::EffectiveSettings;
use crate::github::{PullRequest, PullUpdate};
use crate::jobs::Finish;
use crate::prompts::{PromptError, Template};
use crate::report::describe::{self, Placed};
use crate::report::{self, JobEnd, RequestedBy, StopCause, markdown};
use crate::session::AgentSession;
use crate::triggers::JobSource;

use super::live::Targets;
use super::review::{finish, push_pull_diff, quiet, run_read_only};
use super::session::Spent;
use super::{HandlerError, JobEnv, lease_pull_head, pull_context};

/// The pull request's diff is part of the agent's context up to this many bytes; it reads the rest
/// of the changes itself.
const MAX_CONTEXT_DIFF_BYTES: usize = 40 * 1024;

/// `@agent describe` on a pull request, or the description of one that opened.
pub async fn on_pull_request(env: &JobEnv) -> Result<(Finish, Spent), HandlerError> {
    let number = env.number()?;
    let pull = env.github.get_pull(&env.repo, number).await?;
    let repo_config = env.repo_config().await?;
    let settings = repo_config.apply(env.config());
    if let JobSource::PullRequest { action } = &env.request.source {
        if pull.state != "open" {
            return Ok(quiet(env, &format!("pull request #{number} is closed now: not described")).await);
        }
        let mut info = env.info();
        info.requested_by = RequestedBy::PullRequestEvent(action.clone());
        // No comment and no check run to keep up to date: the description is the report.
        let silent = Targets {
            github: env.github.clone(),
            repo: env.repo.clone(),
            check_run: None,
            comment: None,
            info,
            frame: None,
        };
        return describe(env, &pull, &settings, &silent).await;
    }
    let targets = super::start_reporting(env, Some(&pull.head.sha)).await?;
    let result = describe(env, &pull, &settings, &targets).await;
    super::closed_out(env, &targets, result).await
}

/// Runs the agent, writes its section into the description, and ends the job.
async fn describe(
    env: &JobEnv,
    pull: &PullRequest,
    settings: &EffectiveSettings,
    targets: &Targets,
) -> Result<(Finish, Spent), HandlerError> {
    let outcome = run_agent(env, pull, settings, targets).await?;
    let stopped = StopCause::from_stop(&outcome.stop)
        .or_else(|| env.control.is_cancelled().then_some(StopCause::Cancelled { by: None }));
    if let Some(cause) = stopped {
        tracing::warn!(?cause, "the agent stopped before the description was written");
        let end = JobEnd::Stopped { cause, saved: None };
        return Ok(finish(env, targets, end, outcome, &[], settings).await);
    }
    let text = outcome.summary.trim();
    if text.is_empty() {
        return Err(HandlerError::Other(
            "the agent finished without writing the description".into(),
        ));
    }
    // The author may have edited the description while the agent worked: the section goes into the
    // text as it is now.
    let now = env.github.get_pull(&env.repo, pull.number).await?;
    let footer = footer(pull, settings);
    let Some(written) = describe::write(&now.body, text, &footer, describe::LIMIT) else {
        return Err(HandlerError::Other(format!(
            "the pull request's description is too long ({} bytes) for a section of pitcrew's under GitHub's limit",
            markdown::thousands(now.body.len() as u64)
        )));
    };
    match written.placed {
        Placed::Replaced => tracing::info!("the description's section is replaced"),
        Placed::Appended => tracing::info!("the description gets its section after the author's text"),
        Placed::AppendedBesideUnpaired(why) => tracing::warn!(
            why,
            "the description's markers make no pair: a new section goes after the author's text"
        ),
    }
    if written.no_room {
        env.note(
            "The description's own text leaves too little room under GitHub's limit: the section only says so."
                .to_owned(),
        );
    }
    let change = PullUpdate {
        title: None,
        body: Some(&written.body),
        state: None,
    };
    env.github.update_pull(&env.repo, pull.number, &change).await?;
    let url = Some(now.html_url).filter(|url| !url.is_empty());
    Ok(finish(env, targets, JobEnd::Described { url }, outcome, &[], settings).await)
}

/// The agent's run over the pull request's head, with its diff from the merge base in its context.
async fn run_agent(
    env: &JobEnv,
    pull: &PullRequest,
    settings: &EffectiveSettings,
    targets: &Targets,
) -> Result<Outcome, HandlerError> {
    let mut context = pull_context(
        env,
        pull,
        "You are writing pitcrew's section of its description: change nothing. The checkout is the pull \
         request's head.",
    )?;
    let lease = lease_pull_head(env, pull).await?;
    // The lease's repository handle may not be held across an await: the diff is made first.
    let with_diff = push_pull_diff(env, lease.repo(), pull, &mut context, MAX_CONTEXT_DIFF_BYTES);
    let ran = match with_diff {
        Ok(()) => run(env, settings, targets, lease.path().to_owned(), context).await,
        Err(error) => Err(error),
    };
    lease.release().await;
    ran
}

async fn run(
    env: &JobEnv,
    settings: &EffectiveSettings,
    targets: &Targets,
    root: PathBuf,
    context: String,
) -> Result<Outcome, HandlerError> {
    let request = match env.request.instructions.as_deref().map(str::trim) {
        Some(focus) if !focus.is_empty() => format!(
            "Write pitcrew's section of this pull request's description. The person who asked wants it to \
             cover: {focus}"
        ),
        _ => "Write pitcrew's section of this pull request's description.".to_owned(),
    };
    let render = |session: &AgentSession| -> Result<String, PromptError> {
        env.services.prompts.render(
            Template::Describe,
            &[
                ("request", &request),
                ("context", &context),
                ("instructions", &session.instructions()),
            ],
        )
    };
    run_read_only(env, settings, targets, &root, Vec::new(), render).await
}

/// The line under the section: which commit it describes, and how to have it written again.
fn footer(pull: &PullRequest, settings: &EffectiveSettings) -> String {
    let again = if settings.triggers.commands.allows(CommandKind::Describe) {
        let command = format!("{} describe", settings.triggers.trigger);
        format!(" · {} writes it again", markdown::code_span(&command))
    } else {
        String::new()
    };
    format!(
        "<sub>Written by pitcrew for {}{again}</sub>",
        markdown::code_span(report::short_sha(pull.head.sha.as_str()))
    )
}
