//! Bare mirrors of remote repositories, one per repository under `data_dir/mirrors/<owner>/<name>.git`,
//! fetched incrementally, and per-job working copies made from them without the network.
//!
//! Concurrent jobs on one repository share its mirror: an exclusive `flock` on a lock file beside it
//! serialises fetches, and a shared one is held while a job copy reads from it. The token reaches
//! libgit2 only through the credentials callback: never a URL, config, file or log. Job copies
//! borrow the mirror's objects through `objects/info/alternates` (like `git clone --shared`), so the
//! mirror must never be garbage-collected while copies exist; pitcrew never does.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{Cred, FetchOptions, Oid, RemoteCallbacks, Repository};
use nix::fcntl::{Flock, FlockArg};
use secrecy::{ExposeSecret, SecretString};
use url::Url;

use super::{LocalRepo, WorkspaceError};

/// A repository on the forge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRepo {
    /// The clone URL, without credentials (any given are dropped).
    pub url: Url,
    /// `owner/name`.
    pub full_name: String,
}

/// What a job copy checks out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A branch, checked out as a local branch of that name.
    Branch(String),
    /// A commit id (full hex), checked out detached.
    Commit(String),
    /// `refs/pull/N/head`, checked out detached; it must have been named in `prepare`'s `refs`.
    PullHead(u64),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Branch(name) => write!(f, "branch {name}"),
            Target::Commit(sha) => write!(f, "commit {sha}"),
            Target::PullHead(n) => write!(f, "pull request #{n}'s head"),
        }
    }
}

/// The mirrors under one data directory.
#[derive(Debug, Clone)]
pub struct MirrorCache {
    root: PathBuf,
}

/// A mirror brought up to date by [`MirrorCache::prepare`].
#[derive(Debug, Clone)]
pub struct Mirror {
    path: PathBuf,
    lock_path: PathBuf,
    remote: RemoteRepo,
}

impl MirrorCache {
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        MirrorCache {
            root: data_dir.into().join("mirrors"),
        }
    }

    /// Creates the mirror of `remote` on first use, then fetches every branch and the extra `refs`
    /// (e.g. `refs/pull/7/head`) into it, under the mirror's exclusive lock.
    pub async fn prepare(
        &self,
        remote: &RemoteRepo,
        token: &SecretString,
        refs: &[&str],
    ) -> Result<Mirror, WorkspaceError> {
        let (owner, name) = split_full_name(&remote.full_name)?;
        for reference in refs {
            if !valid_ref(reference) {
                return Err(WorkspaceError::InvalidRef {
                    reference: (*reference).to_owned(),
                });
            }
        }
        let mut url = remote.url.clone();
        // Credentials travel only through the callback.
        let _ = url.set_username("");
        let _ = url.set_password(None);
        let mirror = Mirror {
            path: self.root.join(owner).join(format!("{name}.git")),
            lock_path: self.root.join(owner).join(format!("{name}.git.lock")),
            remote: RemoteRepo {
                url,
                full_name: remote.full_name.clone(),
            },
        };
        let mut refspecs = vec!["+refs/heads/*:refs/heads/*".to_owned()];
        refspecs.extend(refs.iter().map(|r| format!("+{r}:{r}")));
        let token = token.clone();
        let job = mirror.clone();
        tokio::task::spawn_blocking(move || {
            let _lock = lock(&job.lock_path, FlockArg::LockExclusive)?;
            job.fetch(&token, &refspecs)
        })
        .await
        .map_err(|error| WorkspaceError::Io {
            context: "the mirror's fetch task".to_owned(),
            source: std::io::Error::other(error),
        })??;
        Ok(mirror)
    }

    /// The mirrors on disk, as they were last fetched (their remote URL is not recorded: the
    /// result is for housekeeping, not for fetching).
    pub fn existing(&self) -> Result<Vec<Mirror>, WorkspaceError> {
        let mut found = Vec::new();
        let owners = match std::fs::read_dir(&self.root) {
            Ok(owners) => owners,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
            Err(e) => return Err(io_error(&self.root, e)),
        };
        for owner in owners {
            let owner = owner.map_err(|e| io_error(&self.root, e))?;
            if !owner.file_type().map_err(|e| io_error(&self.root, e))?.is_dir() {
                continue;
            }
            for entry in std::fs::read_dir(owner.path()).map_err(|e| io_error(&owner.path(), e))? {
                let entry = entry.map_err(|e| io_error(&owner.path(), e))?;
                let file_name = entry.file_name();
                let Some(name) = file_name.to_str().and_then(|n| n.strip_suffix(".git")) else {
                    continue;
                };
                if !entry.file_type().map_err(|e| io_error(&entry.path(), e))?.is_dir() {
                    continue;
                }
                let full_name = format!("{}/{name}", owner.file_name().to_string_lossy());
                found.push(Mirror {
                    path: entry.path(),
                    lock_path: owner.path().join(format!("{name}.git.lock")),
                    remote: RemoteRepo {
                        url: Url::parse("file:///").map_err(|e| io_error(&self.root, std::io::Error::other(e)))?,
                        full_name,
                    },
                });
            }
        }
        found.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(found)
    }
}

impl Mirror {
    /// The bare repository on disk.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn remote(&self) -> &RemoteRepo {
        &self.remote
    }

    /// The lock file that serialises fetches (exclusive) against checkouts (shared).
    pub(super) fn lock_path(&self) -> &Path {
        &self.lock_path
    }

    /// When the mirror was last fetched into (libgit2 rewrites `FETCH_HEAD` on every fetch).
    pub fn last_fetch(&self) -> Option<std::time::SystemTime> {
        std::fs::metadata(self.path.join("FETCH_HEAD"))
            .or_else(|_| std::fs::metadata(&self.path))
            .and_then(|meta| meta.modified())
            .ok()
    }

    /// Runs under the exclusive lock: opens (or makes) the bare repository and fetches.
    fn fetch(&self, token: &SecretString, refspecs: &[String]) -> Result<(), WorkspaceError> {
        let repo = match Repository::open_bare(&self.path) {
            Ok(repo) => repo,
            Err(_) => Repository::init_bare(&self.path)?,
        };
        let mut attempts = 0_u32;
        let mut callbacks = RemoteCallbacks::new();
        callbacks.credentials(|_url, _user, _allowed| {
            attempts += 1;
            // libgit2 asks again for as long as the server says 401: one rejection is final.
            if attempts > 1 {
                return Err(git2::Error::from_str("the token was rejected"));
            }
            Cred::userpass_plaintext("x-access-token", token.expose_secret())
        });
        let mut options = FetchOptions::new();
        options
            .remote_callbacks(callbacks)
            .prune(git2::FetchPrune::On)
            .download_tags(git2::AutotagOption::None);
        // An anonymous remote: nothing about it is written to the mirror's config.
        let mut remote = repo.remote_anonymous(self.remote.url.as_str())?;
        let result = remote.fetch(refspecs, Some(&mut options), None);
        drop(options);
        if let Err(error) = result {
            if attempts > 1 || error.message().contains("401") {
                return Err(WorkspaceError::Auth {
                    repo: self.remote.full_name.clone(),
                });
            }
            return Err(error.into());
        }
        // HEAD follows the remote's default branch, so a plain `git log` in the mirror makes sense.
        if let Ok(default) = remote.default_branch()
            && let Ok(default) = default.as_str()
        {
            let _ = repo.set_head(default);
        }
        Ok(())
    }

    /// Makes a working copy of `target` in `job_dir` (absent or empty) from the mirror alone: its
    /// objects come through alternates, its `origin` is the remote's plain URL.
    pub async fn checkout(&self, job_dir: &Path, target: Target) -> Result<LocalRepo, WorkspaceError> {
        let mirror = self.clone();
        let job_dir = job_dir.to_owned();
        tokio::task::spawn_blocking(move || {
            let _lock = lock(&mirror.lock_path, FlockArg::LockShared)?;
            mirror.checkout_blocking(&job_dir, &target)
        })
        .await
        .map_err(|error| WorkspaceError::Io {
            context: "the checkout task".to_owned(),
            source: std::io::Error::other(error),
        })?
    }

    /// [`Mirror::checkout`] without taking the lock: the caller holds it.
    pub(super) fn checkout_blocking(&self, job_dir: &Path, target: &Target) -> Result<LocalRepo, WorkspaceError> {
        let source = Repository::open_bare(&self.path)?;
        let commit = self.resolve(&source, target)?;

        std::fs::create_dir_all(job_dir).map_err(|source| io_error(job_dir, source))?;
        // A leftover copy would be re-initialised in place, mixing two jobs' state.
        let leftover = std::fs::read_dir(job_dir)
            .map_err(|source| io_error(job_dir, source))?
            .next()
            .is_some();
        if leftover {
            let error = std::io::Error::new(std::io::ErrorKind::AlreadyExists, "the job directory is not empty");
            return Err(io_error(job_dir, error));
        }
        let repo = Repository::init(job_dir)?;
        let alternates = repo.path().join("objects/info/alternates");
        let objects = std::fs::canonicalize(self.path.join("objects")).map_err(|e| io_error(&self.path, e))?;
        std::fs::write(&alternates, format!("{}\n", objects.display())).map_err(|e| io_error(&alternates, e))?;
        // Reopen so that the object database sees the alternates.
        let repo = Repository::open(job_dir)?;
        repo.remote("origin", self.remote.url.as_str())?;
        self.sync_remote_branches(&source, &repo)?;
        point_head_at(&repo, target, commit)?;
        repo.checkout_head(Some(CheckoutBuilder::new().force()))?;
        LocalRepo::open(job_dir)
    }

    /// The commit `target` names in the mirror.
    pub(super) fn resolve(&self, source: &Repository, target: &Target) -> Result<Oid, WorkspaceError> {
        let not_found = || WorkspaceError::TargetNotFound {
            repo: self.remote.full_name.clone(),
            target: target.to_string(),
        };
        Ok(match target {
            Target::Branch(name) => source.refname_to_id(&format!("refs/heads/{name}")),
            Target::PullHead(n) => source.refname_to_id(&format!("refs/pull/{n}/head")),
            Target::Commit(sha) => Oid::from_str(sha),
        }
        .and_then(|oid| source.find_commit(oid))
        .map_err(|_| not_found())?
        .id())
    }

    /// Makes the copy's `refs/remotes/origin/*` what the mirror's branches are, as a fresh clone
    /// would have them (stale ones removed).
    pub(super) fn sync_remote_branches(&self, source: &Repository, repo: &Repository) -> Result<(), WorkspaceError> {
        let mut current = std::collections::HashSet::new();
        for reference in source.references_glob("refs/heads/*")? {
            let reference = reference?;
            if let (Ok(name), Some(oid)) = (reference.name(), reference.target()) {
                let remote_name = name.replacen("refs/heads/", "refs/remotes/origin/", 1);
                repo.reference(&remote_name, oid, true, "pitcrew: from mirror")?;
                current.insert(remote_name);
            }
        }
        for reference in repo.references_glob("refs/remotes/origin/*")? {
            let mut reference = reference?;
            if reference.name().is_ok_and(|name| !current.contains(name)) {
                reference.delete()?;
            }
        }
        Ok(())
    }

    /// The lock file held (shared) by every copy made from this mirror while a job uses it, so that
    /// eviction never deletes a mirror whose objects a copy borrows.
    pub(super) fn users_lock_path(&self) -> PathBuf {
        self.lock_path.with_extension("users")
    }
}

/// Puts HEAD on `target`: a local branch of that name at `commit` tracking `origin`, or detached.
pub(super) fn point_head_at(repo: &Repository, target: &Target, commit: Oid) -> Result<(), WorkspaceError> {
    match target {
        Target::Branch(name) => {
            let branch = repo.branch(name, &repo.find_commit(commit)?, true)?;
            let refname = branch.get().name()?.to_owned();
            let mut config = repo.config()?;
            config.set_str(&format!("branch.{name}.remote"), "origin")?;
            config.set_str(&format!("branch.{name}.merge"), &format!("refs/heads/{name}"))?;
            repo.set_head(&refname)?;
        }
        Target::Commit(_) | Target::PullHead(_) => repo.set_head_detached(commit)?,
    }
    Ok(())
}

pub(super) fn io_error(path: &Path, source: std::io::Error) -> WorkspaceError {
    WorkspaceError::Io {
        context: path.display().to_string(),
        source,
    }
}

/// Takes `kind` of lock on the file at `path`, creating it; blocks until granted.
pub(super) fn lock(path: &Path, kind: FlockArg) -> Result<Flock<File>, WorkspaceError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
    }
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| io_error(path, e))?;
    Flock::lock(file, kind).map_err(|(_, errno)| io_error(path, std::io::Error::from(errno)))
}

/// `owner/name` → (owner, name), refusing anything that could escape the mirrors directory.
fn split_full_name(full_name: &str) -> Result<(&str, &str), WorkspaceError> {
    let invalid = || WorkspaceError::InvalidRepoName {
        name: full_name.to_owned(),
    };
    let (owner, name) = full_name.split_once('/').ok_or_else(invalid)?;
    let segment_ok = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if segment_ok(owner) && segment_ok(name) {
        Ok((owner, name))
    } else {
        Err(invalid())
    }
}

/// A full ref name safe to put in a refspec: `refs/…`, no wildcards, colons or spaces.
pub(super) fn valid_ref(reference: &str) -> bool {
    reference.starts_with("refs/")
        && git2::Reference::is_valid_name(reference)
        && !reference.contains(['*', ':', ' ', '^', '~'])
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn repository_names_stay_inside_the_cache() {
        assert_eq!(split_full_name("acme/widgets").unwrap(), ("acme", "widgets"));
        for bad in ["acme", "../x", "acme/..", "a/b/c", "acme/.git", "/abs", "acme/"] {
            assert!(split_full_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_plain_full_refs_are_fetched() {
        assert!(valid_ref("refs/pull/7/head"));
        assert!(!valid_ref("refs/heads/*"));
        assert!(!valid_ref("main"));
        assert!(!valid_ref("refs/a:refs/b"));
    }
}
