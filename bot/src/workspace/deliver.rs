//! Where a job's commits go: the pull request's head branch (in the base repository, or in a fork
//! that allows maintainer edits), a new branch of the bot's own (`pitcrew/issue-<n>-<slug>`,
//! `pitcrew/partial-<job>`), or, when pushing is impossible, a patch the report posts instead.
//!
//! A fork is tried only when its pull request allows maintainer edits; a push the fork refuses
//! (the installation's token cannot write there, or a protection rule) falls back to the patch,
//! with the reason. In the base repository a refusal is an error: it means the app lacks access,
//! which the operator must fix.

use git2::{EmailCreateOptions, Sort};
use secrecy::SecretString;

use super::mirror::{RemoteRepo, valid_ref};
use super::push::{Oid, PushOutcome, push_with_lease};
use super::{LocalRepo, WorkspaceError, slug};

/// A pull request's head, as the forge describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullHead {
    /// The repository the pull request is against, `owner/name`.
    pub base_repo: String,
    /// The repository holding the head branch; `None` when the fork was deleted.
    pub head_repo: Option<RemoteRepo>,
    /// The head branch's name.
    pub head_ref: String,
    pub maintainer_can_modify: bool,
}

/// What delivering a job's commits did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The head branch now points at `commit`.
    Pushed { commit: Oid, rebased: bool, to_fork: bool },
    /// The job committed nothing.
    NothingToPush,
    /// The branch moved and the job's commits conflict with the change; nothing was pushed.
    Conflict { files: Vec<String>, remote_tip: Oid },
    /// An earlier attempt of this job already pushed `commit` there; nothing was pushed.
    AlreadyPushed { commit: Oid },
    /// The branch, moved to `remote_tip`, already has the job's changes; nothing was pushed.
    AlreadyApplied { remote_tip: Oid },
    /// Nothing could be pushed; `patch` (`git format-patch` form, for `git am`) holds the commits.
    Patch { patch: String, reason: String },
}

/// Pushes the copy's HEAD (commits on top of `start`, the head commit the job began from) to the
/// pull request's head branch, or makes the patch when that is not possible. Blocking.
pub fn deliver_to_pull_request(
    repo: &LocalRepo,
    pull: &PullHead,
    token: &SecretString,
    start: Oid,
) -> Result<Delivery, WorkspaceError> {
    if repo.head()? == start {
        return Ok(Delivery::NothingToPush);
    }
    let Some(head_repo) = &pull.head_repo else {
        return patch(repo, start, "the pull request's fork was deleted");
    };
    let to_fork = !head_repo.full_name.eq_ignore_ascii_case(&pull.base_repo);
    if to_fork && !pull.maintainer_can_modify {
        return patch(
            repo,
            start,
            "the pull request comes from a fork that does not allow edits from maintainers",
        );
    }
    match push_with_lease(repo, head_repo, token, &pull.head_ref, start) {
        Ok(PushOutcome::Pushed { commit, rebased }) => Ok(Delivery::Pushed {
            commit,
            rebased,
            to_fork,
        }),
        Ok(PushOutcome::NothingToPush) => Ok(Delivery::NothingToPush),
        Ok(PushOutcome::Conflict { files, remote_tip }) => Ok(Delivery::Conflict { files, remote_tip }),
        Ok(PushOutcome::AlreadyPushed { commit }) => Ok(Delivery::AlreadyPushed { commit }),
        Ok(PushOutcome::AlreadyApplied { remote_tip }) => Ok(Delivery::AlreadyApplied { remote_tip }),
        Err(WorkspaceError::Auth { .. } | WorkspaceError::PushRejected { .. }) if to_fork => patch(
            repo,
            start,
            &format!("the fork {} refused pitcrew's push", head_repo.full_name),
        ),
        Err(error) => Err(error),
    }
}

fn patch(repo: &LocalRepo, start: Oid, reason: &str) -> Result<Delivery, WorkspaceError> {
    Ok(Delivery::Patch {
        patch: format_patch(repo, start, repo.head()?)?,
        reason: reason.to_owned(),
    })
}

/// The commits in `from..to` as `git format-patch` output in one mbox, oldest first: what
/// `git am` applies, authorship and messages included.
pub fn format_patch(repo: &LocalRepo, from: Oid, to: Oid) -> Result<String, WorkspaceError> {
    let git = repo.raw();
    let mut walk = git.revwalk()?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE)?;
    walk.push(to)?;
    walk.hide(from)?;
    let commits = walk.collect::<Result<Vec<_>, _>>()?;
    let total = commits.len();
    let mut out = String::new();
    for (n, id) in commits.into_iter().enumerate() {
        let commit = git.find_commit(id)?;
        let mut options = EmailCreateOptions::new();
        if total > 1 {
            options.start_number(n + 1);
        }
        let email = git2::Email::from_commit(&commit, &mut options)?;
        out.push_str(&String::from_utf8_lossy(email.as_slice()));
    }
    Ok(out)
}

/// `pitcrew/issue-<n>-<slug>`: the branch a fix for issue `n` goes to.
pub fn issue_branch(number: u64, title: &str) -> String {
    format!("pitcrew/issue-{number}-{}", slug(title, 40))
}

/// `pitcrew/partial-<job>`: where the work of a job that could not finish is kept.
pub fn partial_branch(job: &str) -> String {
    format!("pitcrew/partial-{}", slug(job, 40))
}

/// Pushes the copy's HEAD to a branch of the bot's own (`pitcrew/…`) in `remote`, creating it, or
/// replacing it when it exists (the bot's own branch from an earlier run of the same task).
/// Returns whether an existing branch was replaced. Blocking.
pub fn push_bot_branch(
    repo: &LocalRepo,
    remote: &RemoteRepo,
    token: &SecretString,
    branch: &str,
) -> Result<bool, WorkspaceError> {
    let refname = format!("refs/heads/{branch}");
    if !branch.starts_with("pitcrew/") || !valid_ref(&refname) {
        return Err(WorkspaceError::InvalidRef { reference: refname });
    }
    super::push::force_push(repo, remote, token, &refname)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bot_branch_names() {
        assert_eq!(
            issue_branch(42, "Crash when the config file is empty!"),
            "pitcrew/issue-42-crash-when-the-config-file-is-empty"
        );
        assert_eq!(issue_branch(7, "???"), "pitcrew/issue-7-task");
        assert_eq!(partial_branch("1234"), "pitcrew/partial-1234");
    }
}
