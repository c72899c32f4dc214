//! A warm pool of working copies per repository, so that preparing a job costs what differs from
//! the last job on that repository rather than writing out the whole tree again.
//!
//! A job leases a copy: an idle one when there is one (moved to the job's commit by a forced
//! checkout that rewrites only the files that differ and removes everything untracked or ignored),
//! else a fresh one made from the mirror. Released copies are cleaned and kept, up to
//! [`PoolLimits::per_repo`] per repository and for at most [`PoolLimits::max_idle`]. Every lease
//! holds a shared lock on the mirror's `users` lock file, and mirror eviction takes it exclusively,
//! so a mirror whose objects a copy borrows is never deleted under it, in this process or another.
//!
//! Nothing a job did survives into the next lease: the working tree is reset and cleaned
//! (ignored files included, so one pull request's build output cannot feed the next job), local
//! branches and `.git/config` are rewritten, and hooks are removed. Copies left by an earlier
//! process are adopted at start-up and get the same treatment on their first lease.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use git2::build::CheckoutBuilder;
use git2::{BranchType, Repository};
use nix::fcntl::{Flock, FlockArg};

use super::mirror::{Mirror, MirrorCache, Target, io_error, lock, point_head_at};
use super::{LocalRepo, WorkspaceError};

/// How many idle copies to keep, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolLimits {
    /// Idle copies kept per repository; 0 turns the pool off (every job gets a fresh copy).
    pub per_repo: usize,
    /// An idle copy unused for longer is removed by [`WorkspacePool::evict`].
    pub max_idle: Duration,
}

impl Default for PoolLimits {
    fn default() -> Self {
        PoolLimits {
            per_repo: 2,
            max_idle: Duration::from_secs(6 * 3600),
        }
    }
}

/// The working copies under `data_dir/copies/<owner>/<name>/<n>`.
#[derive(Clone)]
pub struct WorkspacePool {
    inner: Arc<Inner>,
}

struct Inner {
    root: PathBuf,
    limits: PoolLimits,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Idle copies by repository full name, most recently returned last.
    idle: HashMap<String, Vec<Idle>>,
    /// Copies leased right now, by repository.
    leased: HashMap<String, usize>,
    next: u64,
}

struct Idle {
    path: PathBuf,
    since: Instant,
    /// Cleaned by a release in this process: its working tree is exactly its HEAD commit, so a
    /// lease need only rewrite the files that differ between that commit and the target.
    clean: bool,
}

/// What [`WorkspacePool::evict_mirrors`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Eviction {
    /// Repositories whose mirror was deleted.
    pub mirrors: Vec<String>,
    /// Idle copies deleted with them.
    pub copies: usize,
}

impl WorkspacePool {
    /// Opens the pool, adopting the copies an earlier process left as idle ones (they are reset on
    /// their first lease).
    pub fn new(data_dir: &Path, limits: PoolLimits) -> Result<Self, WorkspaceError> {
        let root = data_dir.join("copies");
        std::fs::create_dir_all(&root).map_err(|e| io_error(&root, e))?;
        let mut state = State::default();
        for (full_name, path) in existing_copies(&root)? {
            if let Some(n) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.parse::<u64>().ok())
            {
                state.next = state.next.max(n + 1);
            }
            state.idle.entry(full_name).or_default().push(Idle {
                path,
                since: Instant::now(),
                clean: false,
            });
        }
        let pool = WorkspacePool {
            inner: Arc::new(Inner {
                root,
                limits,
                state: Mutex::new(state),
            }),
        };
        // Adopted copies beyond the limit are not worth keeping.
        pool.trim_all();
        Ok(pool)
    }

    /// A working copy of `mirror`'s repository at `target`, warm when an idle one exists.
    pub async fn lease(&self, mirror: &Mirror, target: Target) -> Result<Lease, WorkspaceError> {
        let full_name = mirror.remote().full_name.clone();
        let users_lock = mirror.users_lock_path();
        let candidate = self.take_idle(&full_name);
        let fresh_path = self.fresh_path(&full_name);
        let job_mirror = mirror.clone();
        let pool = self.clone();
        let name = full_name.clone();
        // What it logs is the caller's (a job's): in the caller's span, which a thread does not inherit.
        let span = tracing::Span::current();
        let result = tokio::task::spawn_blocking(move || -> Result<Lease, WorkspaceError> {
            let _span = span.enter();
            let users = lock(&users_lock, FlockArg::LockShared)?;
            // The fetch lock (shared) keeps a concurrent fetch from moving refs mid-checkout.
            let _fetch = lock(job_mirror.lock_path(), FlockArg::LockShared)?;
            if let Some((path, clean)) = candidate {
                match reuse(&job_mirror, &path, &target, clean) {
                    Ok(repo) => return Ok(Lease::new(pool, name, path, repo, users, true)),
                    Err(WorkspaceError::TargetNotFound { repo, target }) => {
                        // The copy is fine; the request is not.
                        pool.give_back(&name, path, clean);
                        return Err(WorkspaceError::TargetNotFound { repo, target });
                    }
                    Err(error) => {
                        tracing::warn!(copy = %path.display(), %error, "discarding a pooled working copy");
                        remove_copy(&path);
                    }
                }
            }
            match job_mirror.checkout_blocking(&fresh_path, &target) {
                Ok(repo) => Ok(Lease::new(pool, name, fresh_path, repo, users, false)),
                Err(error) => {
                    remove_copy(&fresh_path);
                    Err(error)
                }
            }
        })
        .await
        .map_err(|error| WorkspaceError::Io {
            context: "the lease task".to_owned(),
            source: std::io::Error::other(error),
        })?;
        if result.is_ok() {
            let mut state = self.state();
            *state.leased.entry(full_name).or_default() += 1;
        }
        result
    }

    /// Idle copies of `full_name` right now.
    pub fn idle(&self, full_name: &str) -> usize {
        self.state().idle.get(full_name).map_or(0, Vec::len)
    }

    /// Removes idle copies unused for longer than the limit; returns how many.
    pub fn evict(&self) -> usize {
        let max_idle = self.inner.limits.max_idle;
        let mut removed = Vec::new();
        {
            let mut state = self.state();
            for copies in state.idle.values_mut() {
                copies.retain(|idle| {
                    let keep = idle.since.elapsed() < max_idle;
                    if !keep {
                        removed.push(idle.path.clone());
                    }
                    keep
                });
            }
            state.idle.retain(|_, copies| !copies.is_empty());
        }
        for path in &removed {
            remove_copy(path);
        }
        removed.len()
    }

    /// Deletes the mirrors not fetched for longer than `max_idle` that no copy is using, with their
    /// idle copies. A mirror some lease holds (in any process) is skipped.
    pub async fn evict_mirrors(&self, cache: &MirrorCache, max_idle: Duration) -> Result<Eviction, WorkspaceError> {
        let pool = self.clone();
        let cache = cache.clone();
        tokio::task::spawn_blocking(move || pool.evict_mirrors_blocking(&cache, max_idle))
            .await
            .map_err(|error| WorkspaceError::Io {
                context: "the eviction task".to_owned(),
                source: std::io::Error::other(error),
            })?
    }

    fn evict_mirrors_blocking(&self, cache: &MirrorCache, max_idle: Duration) -> Result<Eviction, WorkspaceError> {
        let mut eviction = Eviction::default();
        for mirror in cache.existing()? {
            let full_name = mirror.remote().full_name.clone();
            if self.state().leased.get(&full_name).is_some_and(|n| *n > 0) {
                continue;
            }
            let last_fetch = mirror.last_fetch().unwrap_or(SystemTime::UNIX_EPOCH);
            if SystemTime::now().duration_since(last_fetch).unwrap_or_default() < max_idle {
                continue;
            }
            // Held shared by every lease of any process: skip the mirror rather than wait.
            let Ok(_users) = try_lock_exclusive(&mirror.users_lock_path()) else {
                continue;
            };
            let _fetch = lock(mirror.lock_path(), FlockArg::LockExclusive)?;
            let copies = self.state().idle.remove(&full_name).unwrap_or_default();
            for idle in &copies {
                remove_copy(&idle.path);
            }
            eviction.copies += copies.len();
            std::fs::remove_dir_all(mirror.path()).map_err(|e| io_error(mirror.path(), e))?;
            eviction.mirrors.push(full_name);
        }
        Ok(eviction)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is a plain list: a panic elsewhere cannot leave it half-updated.
        self.inner.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take_idle(&self, full_name: &str) -> Option<(PathBuf, bool)> {
        let mut state = self.state();
        let copies = state.idle.get_mut(full_name)?;
        let idle = copies.pop()?;
        Some((idle.path, idle.clean))
    }

    fn fresh_path(&self, full_name: &str) -> PathBuf {
        let mut state = self.state();
        let n = state.next;
        state.next += 1;
        self.inner.root.join(full_name).join(n.to_string())
    }

    /// Returns a copy to the idle list, or removes it when the repository has enough.
    fn give_back(&self, full_name: &str, path: PathBuf, clean: bool) {
        let surplus = {
            let mut state = self.state();
            let copies = state.idle.entry(full_name.to_owned()).or_default();
            copies.push(Idle {
                path,
                since: Instant::now(),
                clean,
            });
            let excess = copies.len().saturating_sub(self.inner.limits.per_repo);
            // The oldest go first.
            copies.drain(..excess).map(|idle| idle.path).collect::<Vec<_>>()
        };
        for path in surplus {
            remove_copy(&path);
        }
    }

    fn trim_all(&self) {
        let names: Vec<String> = self.state().idle.keys().cloned().collect();
        for name in names {
            let surplus = {
                let mut state = self.state();
                let Some(copies) = state.idle.get_mut(&name) else {
                    continue;
                };
                let excess = copies.len().saturating_sub(self.inner.limits.per_repo);
                copies.drain(..excess).map(|idle| idle.path).collect::<Vec<_>>()
            };
            for path in surplus {
                remove_copy(&path);
            }
        }
    }

    fn end_lease(&self, full_name: &str) {
        let mut state = self.state();
        if let Some(n) = state.leased.get_mut(full_name) {
            *n = n.saturating_sub(1);
        }
    }
}

/// A working copy a job holds. [`Lease::release`] cleans it and returns it to the pool; dropping
/// a lease without releasing it deletes the copy.
pub struct Lease {
    pool: WorkspacePool,
    full_name: String,
    path: PathBuf,
    repo: Option<LocalRepo>,
    warm: bool,
    _users: Flock<File>,
}

impl Lease {
    fn new(
        pool: WorkspacePool,
        full_name: String,
        path: PathBuf,
        repo: LocalRepo,
        users: Flock<File>,
        warm: bool,
    ) -> Self {
        Lease {
            pool,
            full_name,
            path,
            repo: Some(repo),
            warm,
            _users: users,
        }
    }

    pub fn repo(&self) -> &LocalRepo {
        // Only `release` takes the repository, and it consumes the lease.
        self.repo
            .as_ref()
            .unwrap_or_else(|| unreachable!("a lease keeps its repository until released"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the copy came from the pool (false: made fresh from the mirror).
    pub fn was_warm(&self) -> bool {
        self.warm
    }

    /// Cleans the copy (every change, untracked and ignored file undone) and returns it to the pool;
    /// a copy that cannot be cleaned, or one the pool has no room for, is deleted.
    pub async fn release(mut self) {
        let Some(repo) = self.repo.take() else {
            return;
        };
        let path = self.path.clone();
        let limits = self.pool.inner.limits;
        let cleaned = tokio::task::spawn_blocking(move || {
            let result = if limits.per_repo == 0 {
                Err(WorkspaceError::Io {
                    context: "the pool is off".to_owned(),
                    source: std::io::Error::other("no copies are kept"),
                })
            } else {
                clean(repo.raw())
            };
            drop(repo);
            result
        })
        .await;
        match cleaned {
            Ok(Ok(())) => self.pool.give_back(&self.full_name, self.path.clone(), true),
            Ok(Err(error)) => {
                if limits.per_repo > 0 {
                    tracing::warn!(copy = %path.display(), %error, "could not clean a working copy; removing it");
                }
                remove_copy(&path);
            }
            Err(_) => remove_copy(&path),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.repo.take().is_some() {
            remove_copy(&self.path);
        }
        self.pool.end_lease(&self.full_name);
    }
}

/// Moves an idle copy to `target`, after checking that it really is a copy of this mirror. A
/// `clean` copy has only the files that differ between its HEAD and the target rewritten (no walk
/// of the whole tree); any other is forced to the target and cleaned of everything else.
fn reuse(mirror: &Mirror, path: &Path, target: &Target, clean: bool) -> Result<LocalRepo, WorkspaceError> {
    let source = Repository::open_bare(mirror.path())?;
    let commit = mirror.resolve(&source, target)?;
    let objects = std::fs::canonicalize(mirror.path().join("objects")).map_err(|e| io_error(mirror.path(), e))?;
    let alternates = path.join(".git/objects/info/alternates");
    let borrowed = std::fs::read_to_string(&alternates).map_err(|e| io_error(&alternates, e))?;
    if borrowed.trim_end() != objects.to_string_lossy() {
        return Err(io_error(
            &alternates,
            std::io::Error::other("the copy borrows another mirror's objects"),
        ));
    }
    reset_git_dir(mirror, path)?;
    let repo = Repository::open(path)?;
    mirror.sync_remote_branches(&source, &repo)?;
    let target_commit = repo.find_commit(commit)?;
    let mut checkout = CheckoutBuilder::new();
    checkout.force();
    if clean {
        let current = repo.head()?.peel_to_tree()?;
        let diff = repo.diff_tree_to_tree(Some(&current), Some(&target_commit.tree()?), None)?;
        let mut paths = Vec::new();
        for delta in diff.deltas() {
            for file in [delta.old_file(), delta.new_file()] {
                if let Some(path) = file.path() {
                    paths.push(path.to_owned());
                }
            }
        }
        if !paths.is_empty() {
            // Exact paths, not patterns: a file named `*` must not match everything.
            checkout.disable_pathspec_match(true);
            for path in &paths {
                checkout.path(path);
            }
            repo.checkout_tree(target_commit.as_object(), Some(&mut checkout))?;
        }
    } else {
        checkout.remove_untracked(true).remove_ignored(true);
        repo.checkout_tree(target_commit.as_object(), Some(&mut checkout))?;
    }
    // Detached first, so that any branch (even the one HEAD is on) can be deleted or moved.
    repo.set_head_detached(commit)?;
    let branches: Vec<String> = repo
        .branches(Some(BranchType::Local))?
        .filter_map(Result::ok)
        .filter_map(|(branch, _)| branch.name().ok().flatten().map(str::to_owned))
        .collect();
    for name in branches {
        repo.find_branch(&name, BranchType::Local)?.delete()?;
    }
    point_head_at(&repo, target, commit)?;
    drop(target_commit);
    drop(repo);
    LocalRepo::open(path)
}

/// Rewrites `.git/config` to what a fresh copy has and removes hooks, so nothing a job changed in
/// the git directory (a local sandbox can) carries over.
fn reset_git_dir(mirror: &Mirror, path: &Path) -> Result<(), WorkspaceError> {
    let git_dir = path.join(".git");
    let config = git_dir.join("config");
    let text = format!(
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n\
         [remote \"origin\"]\n\turl = {}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
        mirror.remote().url
    );
    std::fs::write(&config, text).map_err(|e| io_error(&config, e))?;
    let hooks = git_dir.join("hooks");
    match std::fs::remove_dir_all(&hooks) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error(&hooks, e)),
    }
    Ok(())
}

/// `git reset --hard && git clean -ffdx`: the copy back at its HEAD commit with nothing else.
fn clean(repo: &Repository) -> Result<(), WorkspaceError> {
    let head = repo.head()?.peel_to_commit()?;
    let mut checkout = CheckoutBuilder::new();
    checkout.force();
    repo.reset(head.as_object(), git2::ResetType::Hard, Some(&mut checkout))?;
    // libgit2's reset leaves untracked and ignored files; remove them, whole directories at once.
    let root = repo
        .workdir()
        .ok_or_else(|| git2::Error::from_str("a working copy has a working tree"))?
        .to_owned();
    let mut options = git2::StatusOptions::new();
    options
        .include_untracked(true)
        .include_ignored(true)
        .recurse_untracked_dirs(false)
        .recurse_ignored_dirs(false)
        .exclude_submodules(true);
    let leftovers: Vec<PathBuf> = repo
        .statuses(Some(&mut options))?
        .iter()
        .filter(|entry| entry.status().intersects(git2::Status::WT_NEW | git2::Status::IGNORED))
        .filter_map(|entry| entry.path().ok().map(|p| root.join(p.trim_end_matches('/'))))
        .collect();
    for path in leftovers {
        // Never follow a symlink out of the copy: remove the link itself.
        let meta = std::fs::symlink_metadata(&path).map_err(|e| io_error(&path, e))?;
        let removed = if meta.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|e| io_error(&path, e))?;
    }
    Ok(())
}

fn remove_copy(path: &Path) {
    if let Err(error) = std::fs::remove_dir_all(path)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(copy = %path.display(), %error, "could not remove a working copy");
    }
}

fn try_lock_exclusive(path: &Path) -> Result<Flock<File>, WorkspaceError> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| io_error(path, e))?;
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, errno)| io_error(path, errno.into()))
}

/// `(owner/name, path)` of every copy directory under `root`.
fn existing_copies(root: &Path) -> Result<Vec<(String, PathBuf)>, WorkspaceError> {
    let mut found = Vec::new();
    for owner in read_dirs(root)? {
        for name in read_dirs(&owner)? {
            for copy in read_dirs(&name)? {
                let full_name = format!(
                    "{}/{}",
                    owner.file_name().unwrap_or_default().to_string_lossy(),
                    name.file_name().unwrap_or_default().to_string_lossy()
                );
                found.push((full_name, copy));
            }
        }
    }
    Ok(found)
}

fn read_dirs(dir: &Path) -> Result<Vec<PathBuf>, WorkspaceError> {
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io_error(dir, e))? {
        let entry = entry.map_err(|e| io_error(dir, e))?;
        if entry.file_type().map_err(|e| io_error(dir, e))?.is_dir() {
            dirs.push(entry.path());
        }
    }
    dirs.sort();
    Ok(dirs)
}
