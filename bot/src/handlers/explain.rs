//! `explain [question]`: the read-only agent answers a question about a pull request, an issue or
//! the code, and the answer becomes the job's final progress comment (or its reply in the review
//! thread that asked). Nothing is committed or pushed.

use crate::agent::Outcome;
use crate::config::repo::EffectiveSettings;
use crate::github::{CommitSha, PullRequest};
use crate::jobs::Finish;
use crate::prompts::{PromptError, Template};
use crate::report::{JobEnd, StopCause};
use crate::session::AgentSession;
use crate::workspace::mirror::{RemoteRepo, Target};

use super::live::Targets;
use super::review::{finish, push_pull_diff, run_read_only};
use super::session::Spent;
use super::{HandlerError, JobEnv};
use super::{lease_pull_head, pull_context, push_block};

/// The pull request's diff is part of an explanation's context up to this many bytes; the agent
/// reads the rest of the code itself.
const MAX_CONTEXT_DIFF_BYTES: usize = 30 * 1024;

/// `@agent explain …` on a pull request or an issue.
pub async fn run(env: &JobEnv) -> Result<(Finish, Spent), HandlerError> {
    let repo_config = env.repo_config().await?;
    let settings = repo_config.apply(env.config());
    if let Some(number) = env.request.subject.pull_request() {
        let pull = env.github.get_pull(&env.repo, number).await?;
        let targets = super::start_reporting(env, Some(&pull.head.sha)).await?;
        match on_pull_request(env, &pull, &settings, &targets).await {
            Ok(done) => Ok(done),
            Err(error) => Err(super::report_failure(env, &targets, error).await),
        }
    } else {
        // An issue has no commit of its own: no check run, only the comment.
        let targets = super::start_reporting(env, None::<&CommitSha>).await?;
        match on_issue(env, &settings, &targets).await {
            Ok(done) => Ok(done),
            Err(error) => Err(super::report_failure(env, &targets, error).await),
        }
    }
}

async fn on_pull_request(
    env: &JobEnv,
    pull: &PullRequest,
    settings: &EffectiveSettings,
    targets: &Targets,
) -> Result<(Finish, Spent), HandlerError> {
    let mut context = pull_context(
        env,
        pull,
        "You are answering a question about it: change nothing. The checkout is the pull request's head.",
    )?;
    let lease = lease_pull_head(env, pull).await?;
    // The lease's repository handle may not be held across an await: the diff is made first.
    let with_diff = push_pull_diff(env, lease.repo(), pull, &mut context, MAX_CONTEXT_DIFF_BYTES);
    let answered = match with_diff {
        Ok(()) => answer(env, settings, targets, lease.path().to_owned(), context).await,
        Err(error) => Err(error),
    };
    lease.release().await;
    let outcome = answered?;
    end(env, targets, outcome, settings).await
}

async fn on_issue(
    env: &JobEnv,
    settings: &EffectiveSettings,
    targets: &Targets,
) -> Result<(Finish, Spent), HandlerError> {
    let issue = env.github.get_issue(&env.repo, env.number()?).await?;
    let token = env.github.token().await?;
    let remote = RemoteRepo {
        url: super::parse_clone_url(&env.request.repo.clone_url)?,
        full_name: env.repo.to_string(),
    };
    let default_branch = env.request.repo.default_branch.clone();
    let mut context = env.services.prompts.render(
        Template::ContextIssue,
        &[
            ("number", &issue.number.0.to_string()),
            ("repo", &env.repo.to_string()),
            ("title", &issue.title),
            ("author", &issue.user.login),
            (
                "asked",
                &format!("Asked by @{} in a comment.", env.request.requested_by.login),
            ),
            (
                "role",
                &format!(
                    "You are answering a question about it: change nothing. The checkout is the default branch \
                     `{default_branch}`."
                ),
            ),
        ],
    )?;
    if !issue.body.trim().is_empty() {
        let body = env.services.prompts.render(
            Template::ContextIssueBody,
            &[("body", &super::quote_capped(&issue.body))],
        )?;
        push_block(&mut context, &body);
    }
    let mirror = env.services.mirrors.prepare(&remote, &token, &[]).await?;
    let lease = env
        .services
        .pool
        .lease(&mirror, Target::Branch(default_branch.clone()))
        .await?;
    let answered = answer(env, settings, targets, lease.path().to_owned(), context).await;
    lease.release().await;
    end(env, targets, answered?, settings).await
}

/// The agent's answer, from the leased checkout.
async fn answer(
    env: &JobEnv,
    settings: &EffectiveSettings,
    targets: &Targets,
    root: std::path::PathBuf,
    context: String,
) -> Result<Outcome, HandlerError> {
    let question = env
        .request
        .instructions
        .clone()
        .filter(|text| !text.trim().is_empty())
        .unwrap_or_else(|| {
            if env.request.subject.is_pull_request() {
                "Explain what this pull request changes, how, and why it is done this way.".to_owned()
            } else {
                "Explain what this issue is about and which code it concerns.".to_owned()
            }
        });
    let render = |session: &AgentSession| -> Result<String, PromptError> {
        env.services.prompts.render(
            Template::Explain,
            &[
                ("question", question.trim()),
                ("context", &context),
                ("instructions", &session.instructions()),
            ],
        )
    };
    run_read_only(env, settings, targets, &root, Vec::new(), render).await
}

/// The answer as the final comment: the agent's last message when it finished, else why it stopped.
async fn end(
    env: &JobEnv,
    targets: &Targets,
    outcome: Outcome,
    settings: &EffectiveSettings,
) -> Result<(Finish, Spent), HandlerError> {
    let end = match StopCause::from_stop(&outcome.stop) {
        Some(cause) => JobEnd::Stopped { cause, saved: None },
        None => JobEnd::Answered,
    };
    Ok(finish(env, targets, end, outcome, &[], settings).await)
}
