//! Pushing a job's commits to a branch on the forge, with a lease: only when the branch is still
//! where the job started, else after ONE clean in-memory rebase onto where it went; a conflicting
//! concurrent change pushes nothing and names the files instead.
//!
//! git2 has no `--force-with-lease`, so the lease is two checks: a credentialed `ls-remote` compares
//! the branch with the expected commit, and the push itself is a plain (non-forced) update of a
//! descendant of that commit, which the server refuses if the branch moved to anything else in
//! between. As with mirrors, the token reaches libgit2 only through the credentials callback, and the
//! remotes used are anonymous ones from the plain URL, so nothing is written to the job copy's config.
//!
//! A job retried after its process died may find its own earlier push on the branch (it started
//! again from the pull request's head as GitHub had it, which can lag): its commits carry the job's
//! [`JOB_TRAILER`], so the retry recognises them and pushes nothing. Likewise a replay that changes
//! nothing (the branch already holds the same tree) is not pushed: no empty commits.

use std::cell::{Cell, RefCell};

/// Commit ids in this API, re-exported so that callers need not depend on git2 themselves.
pub use git2::Oid;
use git2::build::CheckoutBuilder;
use git2::{Cred, Direction, FetchOptions, PushOptions, RemoteCallbacks, Repository, Sort};
use secrecy::{ExposeSecret, SecretString};

use super::mirror::{RemoteRepo, valid_ref};
use super::{JOB_TRAILER, LocalRepo, WorkspaceError, trailer_values};

/// What [`push_with_lease`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    /// The branch now points at `commit`; `rebased` when the job's commits were replayed onto a
    /// remote tip that had moved.
    Pushed { commit: Oid, rebased: bool },
    /// HEAD is the expected remote commit: the job committed nothing.
    NothingToPush,
    /// The branch moved and the job's commits do not replay cleanly onto `remote_tip`; nothing was
    /// pushed and the job copy is as it was.
    Conflict { files: Vec<String>, remote_tip: Oid },
    /// The branch already holds `commit`, pushed by an earlier attempt of the same job (its
    /// [`JOB_TRAILER`]); nothing was pushed.
    AlreadyPushed { commit: Oid },
    /// The branch moved to `remote_tip`, which already has every change of the job's commits (they
    /// replay to nothing); nothing was pushed.
    AlreadyApplied { remote_tip: Oid },
}

/// Pushes the job copy's HEAD to `refs/heads/<branch>` on `remote`, provided the branch is still at
/// `expected_remote` (the commit the job started from); see the module documentation.
///
/// Blocking (network and disk): call it from `spawn_blocking` or `block_in_place`. On a rebased push
/// the job copy's HEAD (and its branch, if any) moves to the pushed commit and the working tree
/// follows; `refs/remotes/origin/<branch>` records the fetched tip.
pub fn push_with_lease(
    repo: &LocalRepo,
    remote: &RemoteRepo,
    token: &SecretString,
    branch: &str,
    expected_remote: Oid,
) -> Result<PushOutcome, WorkspaceError> {
    let refname = format!("refs/heads/{branch}");
    if !valid_ref(&refname) {
        return Err(WorkspaceError::InvalidRef { reference: refname });
    }
    let head = repo.head()?;
    if head == expected_remote {
        return Ok(PushOutcome::NothingToPush);
    }
    let session = Session {
        git: &repo.repo,
        remote,
        token,
        refname: &refname,
    };
    let Some(remote_tip) = session.ls_remote()? else {
        return Err(WorkspaceError::TargetNotFound {
            repo: remote.full_name.clone(),
            target: format!("branch {branch}"),
        });
    };
    if remote_tip == expected_remote {
        session.push(head)?;
        return Ok(PushOutcome::Pushed {
            commit: head,
            rebased: false,
        });
    }

    // Someone else pushed meanwhile (or this job did, before a crash): fetch where the branch is now
    // and replay our commits onto it.
    let remote_tip = session.fetch(branch)?;
    if let Some(commit) = earlier_push(repo, expected_remote, head, remote_tip)? {
        return Ok(PushOutcome::AlreadyPushed { commit });
    }
    let rebased = match replay(repo, expected_remote, head, remote_tip)? {
        Replay::Clean(commit) if commit == remote_tip => return Ok(PushOutcome::AlreadyApplied { remote_tip }),
        Replay::Clean(commit) => commit,
        Replay::Conflict(files) => return Ok(PushOutcome::Conflict { files, remote_tip }),
    };
    session.push(rebased)?;
    move_head(&repo.repo, rebased)?;
    Ok(PushOutcome::Pushed {
        commit: rebased,
        rebased: true,
    })
}

/// Pushes HEAD to `refname`, replacing whatever is there (only for the bot's own branches), unless
/// the branch already holds HEAD's tree; returns whether the branch existed. Blocking.
pub(super) fn force_push(
    repo: &LocalRepo,
    remote: &RemoteRepo,
    token: &SecretString,
    refname: &str,
) -> Result<bool, WorkspaceError> {
    let session = Session {
        git: &repo.repo,
        remote,
        token,
        refname,
    };
    let remote_head = session.ls_remote()?;
    // A branch that already holds this very tree (a re-run that found nothing new) is left as it
    // is: a new commit of the same content would only churn the pull request.
    if let Some(theirs) = remote_head
        && same_tree(&repo.repo, theirs, repo.head()?)
    {
        return Ok(true);
    }
    session.push_refspec(format!("+{}:{refname}", repo.head()?))?;
    Ok(remote_head.is_some())
}

/// Whether commits `a` and `b` (when both are here) hold the same tree.
fn same_tree(git: &Repository, a: Oid, b: Oid) -> bool {
    match (git.find_commit(a), git.find_commit(b)) {
        (Ok(a), Ok(b)) => a.tree_id() == b.tree_id(),
        _ => false,
    }
}

/// The pieces every network step needs.
struct Session<'a> {
    git: &'a Repository,
    remote: &'a RemoteRepo,
    token: &'a SecretString,
    refname: &'a str,
}

impl Session<'_> {
    /// Where the branch is on the remote now (`None`: it does not exist).
    fn ls_remote(&self) -> Result<Option<Oid>, WorkspaceError> {
        let attempts = Cell::new(0);
        let mut remote = self.git.remote_anonymous(self.remote.url.as_str())?;
        let result = remote
            .connect_auth(Direction::Fetch, Some(callbacks(self.token, &attempts)), None)
            .and_then(|connection| {
                Ok(connection
                    .list()?
                    .iter()
                    .find(|head| head.name() == self.refname)
                    .map(|head| head.oid()))
            });
        result.map_err(|error| self.classify(error, &attempts))
    }

    /// Fetches the branch into `refs/remotes/origin/<branch>`; returns its tip.
    fn fetch(&self, branch: &str) -> Result<Oid, WorkspaceError> {
        let attempts = Cell::new(0);
        let tracking = format!("refs/remotes/origin/{branch}");
        let mut options = FetchOptions::new();
        options
            .remote_callbacks(callbacks(self.token, &attempts))
            .download_tags(git2::AutotagOption::None);
        let mut remote = self.git.remote_anonymous(self.remote.url.as_str())?;
        remote
            .fetch(&[format!("+{}:{tracking}", self.refname)], Some(&mut options), None)
            .map_err(|error| self.classify(error, &attempts))?;
        Ok(self.git.refname_to_id(&tracking)?)
    }

    /// A plain (non-forced) push of `commit` to the branch, checking the server's per-ref answer.
    fn push(&self, commit: Oid) -> Result<(), WorkspaceError> {
        self.push_refspec(format!("{commit}:{}", self.refname))
    }

    fn push_refspec(&self, refspec: String) -> Result<(), WorkspaceError> {
        let attempts = Cell::new(0);
        let refused: RefCell<Option<String>> = RefCell::new(None);
        let mut callbacks = callbacks(self.token, &attempts);
        callbacks.push_update_reference(|reference, status| {
            if let Some(status) = status {
                *refused.borrow_mut() = Some(format!("{reference}: {status}"));
            }
            Ok(())
        });
        let mut options = PushOptions::new();
        options.remote_callbacks(callbacks);
        let mut remote = self.git.remote_anonymous(self.remote.url.as_str())?;
        let result = remote.push(&[refspec], Some(&mut options));
        drop(options);
        result.map_err(|error| self.classify(error, &attempts))?;
        match refused.into_inner() {
            Some(reason) => Err(WorkspaceError::PushRejected {
                repo: self.remote.full_name.clone(),
                reason,
            }),
            None => Ok(()),
        }
    }

    /// A refused token becomes [`WorkspaceError::Auth`]; anything else stays a git error.
    fn classify(&self, error: git2::Error, attempts: &Cell<u32>) -> WorkspaceError {
        if attempts.get() > 1 || error.message().contains("401") {
            WorkspaceError::Auth {
                repo: self.remote.full_name.clone(),
            }
        } else if error.message().contains("non-fastforwardable") {
            // libgit2's own check: the remote tip is not an ancestor of what we push.
            WorkspaceError::PushRejected {
                repo: self.remote.full_name.clone(),
                reason: format!("{}: the branch moved", self.refname),
            }
        } else {
            error.into()
        }
    }
}

/// Credentials from the token, offered once: libgit2 asks again for as long as the server says 401.
fn callbacks<'a>(token: &'a SecretString, attempts: &'a Cell<u32>) -> RemoteCallbacks<'a> {
    let mut callbacks = RemoteCallbacks::new();
    callbacks.credentials(move |_url, _user, _allowed| {
        attempts.set(attempts.get() + 1);
        if attempts.get() > 1 {
            return Err(git2::Error::from_str("the token was rejected"));
        }
        Cred::userpass_plaintext("x-access-token", token.expose_secret())
    });
    callbacks
}

enum Replay {
    Clean(Oid),
    Conflict(Vec<String>),
}

/// Replays the commits in `base..head` onto `onto`, in memory: the job copy is untouched until the
/// result has been pushed, so a conflict needs no abort.
fn replay(repo: &LocalRepo, base: Oid, head: Oid, onto: Oid) -> Result<Replay, WorkspaceError> {
    let git = &repo.repo;
    let commits = range(git, base, head)?;
    let committer = repo.signature()?;
    let mut tip = git.find_commit(onto)?;
    for id in commits {
        let commit = git.find_commit(id)?;
        if commit.parent_count() > 1 {
            return Err(git2::Error::from_str("pitcrew does not rebase merge commits").into());
        }
        let mut index = git.cherrypick_commit(&commit, &tip, 0, None)?;
        if index.has_conflicts() {
            let mut files = Vec::new();
            for conflict in index.conflicts()? {
                let conflict = conflict?;
                let entry = conflict.our.or(conflict.their).or(conflict.ancestor);
                if let Some(entry) = entry {
                    files.push(String::from_utf8_lossy(&entry.path).into_owned());
                }
            }
            files.sort();
            files.dedup();
            return Ok(Replay::Conflict(files));
        }
        let tree = git.find_tree(index.write_tree_to(git)?)?;
        if tree.id() == tip.tree_id() {
            // Already on the branch: `git rebase` drops such a commit too, rather than push an empty one.
            continue;
        }
        let message = commit.message_raw().unwrap_or("pitcrew");
        let id = git.commit(None, &commit.author(), &committer, message, &tree, &[&tip])?;
        tip = git.find_commit(id)?;
    }
    Ok(Replay::Clean(tip.id()))
}

/// How far back the branch's history is searched for an earlier push of the job: a retry follows
/// its crash closely, so its commit is near the tip.
const EARLIER_PUSH_SEARCH: usize = 200;

/// The commit on the remote branch (`base..remote_tip`, the newest first) that an earlier attempt
/// of this job pushed: one carrying a [`JOB_TRAILER`] value of the commits in `base..head`.
fn earlier_push(repo: &LocalRepo, base: Oid, head: Oid, remote_tip: Oid) -> Result<Option<Oid>, WorkspaceError> {
    let git = &repo.repo;
    let mut ours = std::collections::HashSet::new();
    for id in range(git, base, head)? {
        let commit = git.find_commit(id)?;
        let message = commit.message_raw().unwrap_or_default();
        ours.extend(trailer_values(message, JOB_TRAILER).into_iter().map(str::to_owned));
    }
    if ours.is_empty() {
        return Ok(None);
    }
    let mut walk = git.revwalk()?;
    walk.set_sorting(Sort::TOPOLOGICAL)?;
    walk.push(remote_tip)?;
    walk.hide(base)?;
    for id in walk.take(EARLIER_PUSH_SEARCH) {
        let id = id?;
        let commit = git.find_commit(id)?;
        let message = commit.message_raw().unwrap_or_default();
        if trailer_values(message, JOB_TRAILER)
            .iter()
            .any(|value| ours.contains(*value))
        {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// The commits in `base..head`, oldest first.
fn range(git: &Repository, base: Oid, head: Oid) -> Result<Vec<Oid>, WorkspaceError> {
    let mut walk = git.revwalk()?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE)?;
    walk.push(head)?;
    walk.hide(base)?;
    Ok(walk.collect::<Result<Vec<_>, _>>()?)
}

/// Moves HEAD (and its branch) to `commit`, updating the working tree without overwriting changes.
fn move_head(git: &Repository, commit: Oid) -> Result<(), WorkspaceError> {
    let object = git.find_object(commit, None)?;
    git.checkout_tree(&object, Some(CheckoutBuilder::new().safe()))?;
    let head = git.head()?;
    if head.is_branch() {
        let name = head.name()?.to_owned();
        git.reference(&name, commit, true, "pitcrew: rebased onto the remote branch")?;
    } else {
        git.set_head_detached(commit)?;
    }
    Ok(())
}
