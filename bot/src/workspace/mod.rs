//! Git working copies: opening a repository, checking it is clean, making the run's branch,
//! committing what the agent changed (respecting `.gitignore` and a size limit for new files) and
//! listing the changes. Mirrors and per-job copies ([`mirror`]) and pushes with a lease ([`push`])
//! build on this.

pub mod deliver;
pub mod diff;
pub mod mirror;
pub mod pool;
pub mod push;
pub mod scope;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use git2::{BranchType, IndexAddOption, Oid, Repository, Signature, Status, StatusOptions};

/// Whether a file name is `.git` (any case), for walkers that must skip it: the tools' file walks
/// and the sandbox's walks of the working tree.
pub fn is_git_dir(name: &OsStr) -> bool {
    name.eq_ignore_ascii_case(".git")
}

#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{path} is not inside a git repository")]
    NotARepository { path: PathBuf },
    #[error("the repository at {path} has no working tree (it is bare)")]
    Bare { path: PathBuf },
    #[error(
        "the working tree has uncommitted changes ({}); commit or stash them first, so that pitcrew's commit holds \
         only its own work",
        .files.join(", ")
    )]
    Dirty { files: Vec<String> },
    #[error("the repository has no commit yet; make one first")]
    NoHead,
    #[error("the head has no history in common with `{base}`")]
    Unrelated { base: String },
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    #[error("the forge refused pitcrew's credentials for {repo}; check the app's installation and its access to it")]
    Auth { repo: String },
    #[error("{repo} refused pitcrew's push ({reason})")]
    PushRejected { repo: String, reason: String },
    #[error("{name:?} is not a repository name of the form owner/name")]
    InvalidRepoName { name: String },
    #[error("{reference:?} is not a full ref name (refs/…) that can be fetched")]
    InvalidRef { reference: String },
    #[error("{repo} has no {target} (was it fetched into the mirror?)")]
    TargetNotFound { repo: String, target: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

/// A file the run changed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChangedFile {
    pub path: String,
    /// `added`, `modified`, `deleted`, `renamed`.
    pub change: &'static str,
}

/// What committing did.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct CommitResult {
    /// `None` when nothing changed.
    pub commit: Option<String>,
    /// New files left out because they are larger than the limit.
    pub skipped_large: Vec<String>,
    /// Files that newly held a secret or a token shape: committed with it replaced by
    /// `[redacted]` ([`crate::redact::scrub_file`]).
    pub redacted: Vec<String>,
    /// Binary files that newly held a secret: left out of the commit.
    pub withheld: Vec<String>,
    /// New directories left out because they are git repositories of their own (`dir/`, holding
    /// a `.git`): a fixture repository a test made, a vendored checkout.
    pub skipped_repositories: Vec<String>,
}

/// The trailer that marks a job's commits (`Pitcrew-Job: <instance>-<job>`): a retried job finds
/// its own earlier push by it ([`push::push_with_lease`]).
pub const JOB_TRAILER: &str = "Pitcrew-Job";

/// The values of trailer `key` in a commit message's last paragraph (`Key: value` lines).
pub fn trailer_values<'a>(message: &'a str, key: &str) -> Vec<&'a str> {
    let last = message.trim_end().rsplit("\n\n").next().unwrap_or_default();
    last.lines()
        .filter_map(|line| line.split_once(": "))
        .filter(|(name, _)| name.eq_ignore_ascii_case(key))
        .map(|(_, value)| value.trim())
        .collect()
}

pub struct LocalRepo {
    repo: Repository,
    root: PathBuf,
}

impl LocalRepo {
    /// Opens the repository containing `path`.
    pub fn open(path: &Path) -> Result<Self, WorkspaceError> {
        let repo = Repository::discover(path).map_err(|_| WorkspaceError::NotARepository { path: path.to_owned() })?;
        let root = repo
            .workdir()
            .ok_or_else(|| WorkspaceError::Bare { path: path.to_owned() })?
            .to_owned();
        Ok(LocalRepo { repo, root })
    }

    /// The libgit2 handle, for the workspace modules.
    pub(crate) fn raw(&self) -> &Repository {
        &self.repo
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `.git` directory.
    pub fn git_dir(&self) -> &Path {
        self.repo.path()
    }

    /// Fails when tracked files are modified or untracked files exist (ignored files are fine).
    pub fn ensure_clean(&self) -> Result<(), WorkspaceError> {
        let mut options = StatusOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false);
        let statuses = self.repo.statuses(Some(&mut options))?;
        let mut files: Vec<String> = statuses
            .iter()
            .filter(|e| e.status() != Status::CURRENT)
            .filter_map(|e| e.path().ok().map(str::to_owned))
            .collect();
        if files.is_empty() {
            return Ok(());
        }
        let more = files.len().saturating_sub(10);
        files.truncate(10);
        if more > 0 {
            files.push(format!("and {more} more"));
        }
        Err(WorkspaceError::Dirty { files })
    }

    /// Makes a working copy of `commit` in `dir` (absent or empty) that borrows this repository's
    /// objects (`objects/info/alternates`, like `git clone --shared`) and has its own working tree,
    /// index and refs: what runs there cannot change this repository's working tree or branches.
    pub fn detached_copy(&self, commit: Oid, dir: &Path) -> Result<LocalRepo, WorkspaceError> {
        let io = |path: &Path, source: std::io::Error| WorkspaceError::Io {
            context: path.display().to_string(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let repo = Repository::init(dir)?;
        let objects = std::fs::canonicalize(self.repo.path().join("objects")).map_err(|e| io(self.repo.path(), e))?;
        let alternates = repo.path().join("objects/info/alternates");
        std::fs::write(&alternates, format!("{}\n", objects.display())).map_err(|e| io(&alternates, e))?;
        // Reopen so that the object database sees the alternates.
        let repo = Repository::open(dir)?;
        repo.find_commit(commit)?;
        repo.set_head_detached(commit)?;
        repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))?;
        LocalRepo::open(dir)
    }

    /// The commit `revision` names (`main`, `origin/main`, a sha, `HEAD~2`), if any.
    pub fn resolve(&self, revision: &str) -> Option<Oid> {
        self.repo
            .revparse_single(revision)
            .ok()?
            .peel_to_commit()
            .ok()
            .map(|c| c.id())
    }

    pub fn head(&self) -> Result<Oid, WorkspaceError> {
        let head = self.repo.head().map_err(|_| WorkspaceError::NoHead)?;
        head.peel_to_commit()
            .map(|c| c.id())
            .map_err(|_| WorkspaceError::NoHead)
    }

    /// The checked-out branch's short name, if HEAD is on a branch.
    pub fn current_branch(&self) -> Option<String> {
        let head = self.repo.head().ok()?;
        head.is_branch()
            .then(|| head.shorthand().ok().map(str::to_owned))
            .flatten()
    }

    /// Creates `name` (or `name-2`, `name-3` … when taken) at HEAD and checks it out; returns its name.
    pub fn create_branch(&self, name: &str) -> Result<String, WorkspaceError> {
        let head = self.repo.find_commit(self.head()?)?;
        let mut candidate = name.to_owned();
        let mut n = 1;
        while self.repo.find_branch(&candidate, BranchType::Local).is_ok() {
            n += 1;
            candidate = format!("{name}-{n}");
        }
        let branch = self.repo.branch(&candidate, &head, false)?;
        let reference = branch.get().name()?;
        // The branch points at HEAD's commit, so the working tree and index stay as they are.
        self.repo.set_head(reference)?;
        Ok(candidate)
    }

    /// Stages every change (honouring `.gitignore`; new files over `max_new_file_bytes` are left out
    /// and reported) and commits it on HEAD. Nothing changed → no commit.
    ///
    /// A new directory that is a git repository of its own is left out and reported, as git leaves
    /// it: git commits one only as a submodule, and libgit2 refuses to stage it at all (`invalid
    /// path 'dir/'`), which would lose the whole commit.
    ///
    /// `trailers` (`Co-authored-by`, [`JOB_TRAILER`], …) end the message as one trailer block.
    /// `identity` is the author and committer (the bot's configured one); `None` uses the
    /// repository's configured user, so a local `pitcrew run` commits as the developer.
    pub fn commit_all(
        &self,
        message: &str,
        max_new_file_bytes: u64,
        trailers: &[(&str, &str)],
        identity: Option<&CommitIdentity>,
    ) -> Result<CommitResult, WorkspaceError> {
        self.commit_within(None, message, max_new_file_bytes, trailers, identity)
    }

    /// [`LocalRepo::commit_all`] of only the `scope` paths (relative, `/` separators): the index
    /// is first reset to HEAD, so nothing else is committed, whatever was staged or `.gitignore`
    /// says. See [`scope`].
    pub fn commit_scoped(
        &self,
        scope: &std::collections::BTreeSet<String>,
        message: &str,
        max_new_file_bytes: u64,
        trailers: &[(&str, &str)],
        identity: Option<&CommitIdentity>,
    ) -> Result<CommitResult, WorkspaceError> {
        self.commit_within(Some(scope), message, max_new_file_bytes, trailers, identity)
    }

    fn commit_within(
        &self,
        scope: Option<&std::collections::BTreeSet<String>>,
        message: &str,
        max_new_file_bytes: u64,
        trailers: &[(&str, &str)],
        identity: Option<&CommitIdentity>,
    ) -> Result<CommitResult, WorkspaceError> {
        let mut index = self.repo.index()?;
        if scope.is_some() {
            // Written at once: libgit2 reloads an index whose file changed on disk (the status
            // lookups below would bring back what was staged).
            index.read_tree(&self.repo.find_commit(self.head()?)?.tree()?)?;
            index.write()?;
        }
        let outside = |path: &Path| scope.is_some_and(|scope| !path.to_str().is_some_and(|p| scope.contains(p)));
        // Submodules already in the index are tracked gitlinks: staged as git stages them.
        let gitlinks: std::collections::HashSet<Vec<u8>> = index
            .iter()
            .filter(|entry| entry.mode == 0o160_000)
            .map(|entry| entry.path)
            .collect();
        let mut skipped_large = Vec::new();
        let (mut redacted, mut withheld) = (Vec::new(), Vec::new());
        let mut skipped_repositories = Vec::new();
        let root = self.root.clone();
        let base = self.repo.find_commit(self.head()?)?.tree()?;
        let mut callback = |path: &Path, _spec: &[u8]| -> i32 {
            if outside(path) {
                return 1; // skip
            }
            let full = root.join(path);
            let shown = path.display().to_string();
            let bare_path = shown.trim_end_matches('/');
            if is_nested_repository(&full) && !gitlinks.contains(bare_path.as_bytes()) {
                skipped_repositories.push(format!("{bare_path}/"));
                return 1; // skip
            }
            let tracked = self
                .repo
                .status_file(path)
                .map(|s| !s.contains(Status::WT_NEW))
                .unwrap_or(true);
            let too_big = std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_file() && m.len() > max_new_file_bytes);
            if !tracked && too_big {
                skipped_large.push(shown);
                return 1; // skip
            }
            // No secret leaves in a committed file: the last line of defence after the sandbox.
            match crate::redact::scrub_file(&self.repo, Some(&base), &root, path) {
                crate::redact::FileScrub::Clean => 0,
                crate::redact::FileScrub::Redacted => {
                    redacted.push(path.display().to_string());
                    0
                }
                crate::redact::FileScrub::LeaveOut => {
                    withheld.push(path.display().to_string());
                    1
                }
            }
        };
        index.add_all(["*"].iter(), IndexAddOption::DEFAULT, Some(&mut callback))?;
        // A tracked file left out above keeps its committed version rather than being updated here.
        let mut keep_withheld = |path: &Path, _spec: &[u8]| -> i32 {
            i32::from(outside(path) || withheld.iter().any(|w| Path::new(w) == path))
        };
        index.update_all(["*"].iter(), Some(&mut keep_withheld))?;
        index.write()?;
        let tree_id = index.write_tree()?;
        let parent = self.repo.find_commit(self.head()?)?;
        if parent.tree_id() == tree_id {
            return Ok(CommitResult {
                commit: None,
                skipped_large,
                redacted,
                withheld,
                skipped_repositories,
            });
        }
        let tree = self.repo.find_tree(tree_id)?;
        let signature = match identity {
            Some(identity) => Signature::now(&identity.name, &identity.email)?,
            None => self.signature()?,
        };
        let mut message = crate::redact::redact(message.trim_end()).text.into_owned();
        if !trailers.is_empty() {
            message.push('\n');
            for (key, value) in trailers {
                message.push_str(&format!("\n{key}: {value}"));
            }
        }
        message.push('\n');
        let oid = self
            .repo
            .commit(Some("HEAD"), &signature, &signature, &message, &tree, &[&parent])?;
        Ok(CommitResult {
            commit: Some(oid.to_string()),
            skipped_large,
            redacted,
            withheld,
            skipped_repositories,
        })
    }

    /// The repository's configured identity, else pitcrew's own.
    fn signature(&self) -> Result<Signature<'static>, WorkspaceError> {
        match self.repo.signature() {
            Ok(signature) => Ok(signature.to_owned()),
            Err(_) => Ok(Signature::now("pitcrew", "pitcrew@users.noreply.github.com")?),
        }
    }

    /// Files that differ between commit `from` and the working tree (untracked files included).
    pub fn changed_files(&self, from: Oid) -> Result<Vec<ChangedFile>, WorkspaceError> {
        let tree = self.repo.find_commit(from)?.tree()?;
        let mut options = git2::DiffOptions::new();
        options.include_untracked(true).recurse_untracked_dirs(true);
        let mut diff = self
            .repo
            .diff_tree_to_workdir_with_index(Some(&tree), Some(&mut options))?;
        diff.find_similar(None)?;
        let mut files = Vec::new();
        for delta in diff.deltas() {
            let change = match delta.status() {
                git2::Delta::Added | git2::Delta::Untracked => "added",
                git2::Delta::Deleted => "deleted",
                git2::Delta::Renamed => "renamed",
                _ => "modified",
            };
            let path = delta.new_file().path().or_else(|| delta.old_file().path());
            if let Some(path) = path {
                files.push(ChangedFile {
                    path: path.display().to_string(),
                    change,
                });
            }
        }
        Ok(files)
    }
}

/// Whether `path` is a directory holding a git repository of its own: a `.git` directory, or a
/// `.git` file (a worktree's or an absorbed submodule's pointer), never followed through a symlink.
fn is_nested_repository(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) && std::fs::symlink_metadata(path.join(".git")).is_ok()
}

/// Who a commit is by: `Name <email>` in its author and committer headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitIdentity {
    pub name: String,
    pub email: String,
}

/// A branch-name-safe slug of a task: `fix the flaky test!` → `fix-the-flaky-test`.
pub fn slug(text: &str, max_len: usize) -> String {
    let mut slug = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
        if slug.len() >= max_len {
            break;
        }
    }
    let slug = slug.trim_end_matches('-').to_owned();
    if slug.is_empty() { "task".to_owned() } else { slug }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "-b", "main"]);
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        git(dir.path(), &["add", "."]);
        git(dir.path(), &["commit", "-q", "-m", "init"]);
        dir
    }

    #[test]
    fn branch_commit_and_changes() {
        let dir = repo();
        let repo = LocalRepo::open(dir.path()).unwrap();
        repo.ensure_clean().unwrap();
        let start = repo.head().unwrap();
        assert_eq!(repo.create_branch("pitcrew/fix").unwrap(), "pitcrew/fix");
        assert_eq!(repo.current_branch().as_deref(), Some("pitcrew/fix"));
        std::fs::write(dir.path().join("a.txt"), "two\n").unwrap();
        std::fs::write(dir.path().join("new.txt"), "new\n").unwrap();
        std::fs::create_dir(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join("target/out.bin"), "ignored").unwrap();
        std::fs::write(dir.path().join("huge.bin"), vec![b'x'; 2_000]).unwrap();
        assert!(matches!(repo.ensure_clean(), Err(WorkspaceError::Dirty { .. })));
        let changed = repo.changed_files(start).unwrap();
        let paths: Vec<_> = changed.iter().map(|c| (c.path.as_str(), c.change)).collect();
        assert_eq!(
            paths,
            [("a.txt", "modified"), ("huge.bin", "added"), ("new.txt", "added")]
        );

        let result = repo
            .commit_all(
                "pitcrew: fix\n\nbody",
                1_000,
                &[("Co-authored-by", "Ann <ann@example.com>")],
                None,
            )
            .unwrap();
        assert_eq!(result.skipped_large, ["huge.bin"]);
        let commit = repo
            .repo
            .find_commit(Oid::from_str(result.commit.as_deref().unwrap()).unwrap())
            .unwrap();
        assert_eq!(
            commit.message().unwrap(),
            "pitcrew: fix\n\nbody\n\nCo-authored-by: Ann <ann@example.com>\n"
        );
        let tree = commit.tree().unwrap();
        assert!(tree.get_path(Path::new("new.txt")).is_ok());
        assert!(tree.get_path(Path::new("huge.bin")).is_err());
        assert!(tree.get_path(Path::new("target/out.bin")).is_err());
        // Nothing left to commit but the skipped file: no commit.
        assert_eq!(repo.commit_all("again", 1_000, &[], None).unwrap().commit, None);
        // The branch name is taken: a numbered one is made.
        assert_eq!(repo.create_branch("pitcrew/fix").unwrap(), "pitcrew/fix-2");
    }

    #[test]
    fn commit_with_an_identity_is_by_that_identity() {
        let dir = repo();
        let repo = LocalRepo::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("a.txt"), "two\n").unwrap();
        let identity = CommitIdentity {
            name: "pitcrew[bot]".to_owned(),
            email: "pitcrew[bot]@users.noreply.github.com".to_owned(),
        };
        let result = repo
            .commit_all(
                "pitcrew: fix",
                1_000,
                &[("Co-authored-by", "Ann <ann@example.com>")],
                Some(&identity),
            )
            .unwrap();
        let commit = repo
            .repo
            .find_commit(Oid::from_str(result.commit.as_deref().unwrap()).unwrap())
            .unwrap();
        for signature in [commit.author(), commit.committer()] {
            assert_eq!(signature.name().unwrap(), "pitcrew[bot]");
            assert_eq!(signature.email().unwrap(), "pitcrew[bot]@users.noreply.github.com");
        }
        assert_eq!(
            commit.message().unwrap(),
            "pitcrew: fix\n\nCo-authored-by: Ann <ann@example.com>\n"
        );
    }

    /// The security issue's case: a directory with content and its own `.git` (a fixture
    /// repository the tests made, a vendored checkout) made libgit2 fail the whole commit with
    /// `invalid path: 'dir/'`, and the job's work was lost.
    #[test]
    fn nested_repositories_are_left_out_of_the_commit_and_reported() {
        let dir = repo();
        let repo = LocalRepo::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("a.txt"), "two\n").unwrap();
        // A repository with a commit of its own, at the top.
        let fixture = dir.path().join("fixture");
        std::fs::create_dir(&fixture).unwrap();
        git(&fixture, &["init", "-q", "-b", "main"]);
        std::fs::write(fixture.join("f.txt"), "fixture\n").unwrap();
        git(&fixture, &["add", "."]);
        git(&fixture, &["commit", "-q", "-m", "fixture"]);
        // One with content but no commit, inside a new directory that has files of its own too.
        let vendored = dir.path().join("vendor/lib");
        std::fs::create_dir_all(&vendored).unwrap();
        git(&vendored, &["init", "-q"]);
        std::fs::write(vendored.join("lib.rs"), "pub fn f() {}\n").unwrap();
        std::fs::write(dir.path().join("vendor/README"), "vendored code\n").unwrap();

        let result = repo.commit_all("pitcrew: fix", 1_000, &[], None).unwrap();
        let mut skipped = result.skipped_repositories.clone();
        skipped.sort();
        assert_eq!(skipped, ["fixture/", "vendor/lib/"]);
        let commit = repo
            .repo
            .find_commit(Oid::from_str(result.commit.as_deref().unwrap()).unwrap())
            .unwrap();
        let tree = commit.tree().unwrap();
        assert!(tree.get_path(Path::new("a.txt")).is_ok());
        assert!(tree.get_path(Path::new("vendor/README")).is_ok());
        assert!(tree.get_path(Path::new("fixture")).is_err());
        assert!(tree.get_path(Path::new("vendor/lib")).is_err());
        // The nested repositories are still there, untouched, and nothing else is left to commit.
        assert!(fixture.join("f.txt").is_file() && vendored.join("lib.rs").is_file());
        let again = repo.commit_all("again", 1_000, &[], None).unwrap();
        assert_eq!(again.commit, None);
        assert_eq!(again.skipped_repositories.len(), 2);
    }

    #[test]
    fn trailers_end_the_message_as_one_block_and_are_read_back() {
        let dir = repo();
        let repo = LocalRepo::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("a.txt"), "two\n").unwrap();
        let trailers = [("Co-authored-by", "Ann <ann@example.com>"), (JOB_TRAILER, "0a1b2c3d-7")];
        let result = repo
            .commit_all("pitcrew: fix\n\nbody\n", 1_000, &trailers, None)
            .unwrap();
        let commit = repo
            .repo
            .find_commit(Oid::from_str(result.commit.as_deref().unwrap()).unwrap())
            .unwrap();
        let message = commit.message().unwrap();
        assert_eq!(
            message,
            "pitcrew: fix\n\nbody\n\nCo-authored-by: Ann <ann@example.com>\nPitcrew-Job: 0a1b2c3d-7\n"
        );
        assert_eq!(trailer_values(message, JOB_TRAILER), ["0a1b2c3d-7"]);
        // Only the last paragraph holds trailers.
        assert_eq!(
            trailer_values("x\n\nPitcrew-Job: 1\n\nbody", JOB_TRAILER),
            Vec::<&str>::new()
        );
    }

    /// Real-shaped, made-up tokens (as in `redact`'s tests).
    const GHS: &str = "ghs_16C7e42F292c6912E7710c838347Ae178B4a";
    const GHP: &str = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789";
    const OPENAI: &str = "sk-proj-Ab3dEf6hIj9kLmN0pQrStUvWxYz_12-34";

    #[test]
    fn a_committed_file_holding_a_new_secret_is_redacted_or_left_out_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        // A token already in the repository is public: the commit must not rewrite it.
        std::fs::write(root.join("fixture.env"), format!("OLD={GHP}\n")).unwrap();
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        std::fs::write(root.join("tracked.bin"), [0xffu8, 0, 1]).unwrap();
        git(root, &["add", "."]);
        git(root, &["commit", "-q", "-m", "init"]);

        crate::redact::register(&secrecy::SecretString::from("the-model-key-for-the-commit-test"));
        std::fs::write(root.join("a.txt"), format!("one\ntoken {GHS}\n")).unwrap();
        std::fs::write(root.join("fixture.env"), format!("OLD={GHP}\nNEW=plain\n")).unwrap();
        std::fs::write(root.join("new.txt"), "key: the-model-key-for-the-commit-test\n").unwrap();
        let mut binary = vec![0xffu8, 0];
        binary.extend_from_slice(OPENAI.as_bytes());
        std::fs::write(root.join("blob.bin"), &binary).unwrap();
        std::fs::write(root.join("tracked.bin"), &binary).unwrap();

        let repo = LocalRepo::open(root).unwrap();
        let result = repo
            .commit_all(&format!("pitcrew: fix\n\nused {GHS}"), 1_000_000, &[], None)
            .unwrap();
        assert_eq!(result.redacted, ["a.txt", "new.txt"]);
        assert_eq!(result.withheld, ["blob.bin", "tracked.bin"]);
        let commit = repo
            .raw()
            .find_commit(Oid::from_str(result.commit.as_deref().unwrap()).unwrap())
            .unwrap();
        assert_eq!(commit.message().unwrap(), "pitcrew: fix\n\nused [redacted]\n");
        let tree = commit.tree().unwrap();
        let committed = |path: &str| {
            let entry = tree.get_path(Path::new(path)).unwrap();
            repo.raw().find_blob(entry.id()).unwrap().content().to_vec()
        };
        assert_eq!(committed("a.txt"), b"one\ntoken [redacted]\n");
        assert_eq!(committed("new.txt"), b"key: [redacted]\n");
        assert_eq!(committed("fixture.env"), format!("OLD={GHP}\nNEW=plain\n").as_bytes());
        assert_eq!(committed("tracked.bin"), [0xffu8, 0, 1], "the old version stays");
        assert!(tree.get_path(Path::new("blob.bin")).is_err());
        // The working tree holds what was committed: nothing to redact on the next commit.
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).unwrap(),
            "one\ntoken [redacted]\n"
        );
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("Fix the flaky test!", 40), "fix-the-flaky-test");
        assert_eq!(slug("  ??? ", 40), "task");
        assert_eq!(slug("Ünïcode and_more stuff", 12), "n-code-and-m");
    }
}
