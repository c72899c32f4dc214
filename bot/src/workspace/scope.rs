//! What a job meant to change in a working tree, told apart from what running the project left
//! behind: a [`TreeState`] records every file that differs from HEAD (with its content's hash),
//! so two of them taken around a step say which files that step changed; caches, installed
//! packages and virtual environments are never part of one, whatever `.gitignore` says. A job
//! commits the union of its steps' files with [`super::LocalRepo::commit_scoped`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use git2::{ObjectType, Oid, Status, StatusOptions};

use super::{LocalRepo, WorkspaceError};

/// Directory names whose contents are never meant to be committed: Python's byte-code and
/// pytest's cache, installed npm packages.
const JUNK_DIRS: [&str; 3] = ["__pycache__", ".pytest_cache", "node_modules"];
/// Files that mark their directory as not the project's: a virtual environment's `pyvenv.cfg`, the
/// cache-directory tag (<https://bford.info/cachedir/>) of `target/`, `.mypy_cache`, ….
const JUNK_MARKERS: [&str; 2] = ["pyvenv.cfg", "CACHEDIR.TAG"];

/// What differs from HEAD in a working tree, by path (relative, `/` separators): the content's
/// blob hash, `None` for a deleted file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeState(BTreeMap<String, Option<Oid>>);

impl TreeState {
    /// The paths that differ from HEAD.
    pub fn paths(&self) -> BTreeSet<String> {
        self.0.keys().cloned().collect()
    }

    /// The paths whose state differs between `earlier` and this one: what a step between the two
    /// changed (a file it put back as HEAD has it included).
    pub fn since(&self, earlier: &TreeState) -> BTreeSet<String> {
        let paths: BTreeSet<&String> = self.0.keys().chain(earlier.0.keys()).collect();
        paths
            .into_iter()
            .filter(|path| self.0.get(*path) != earlier.0.get(*path))
            .cloned()
            .collect()
    }
}

impl LocalRepo {
    /// Every file of the working tree that differs from HEAD (untracked ones included, ignored
    /// ones not), except what [`is_junk`] says is not the project's. A symlink is hashed as its
    /// target's name, as git stores it; nothing else but regular files is read.
    pub fn tree_state(&self) -> Result<TreeState, WorkspaceError> {
        let mut options = StatusOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .exclude_submodules(true);
        let statuses = self.repo.statuses(Some(&mut options))?;
        let mut markers = HashMap::new();
        let mut state = BTreeMap::new();
        for entry in statuses.iter() {
            let Ok(path) = entry.path() else { continue };
            if is_junk(&self.root, path, &mut markers) {
                continue;
            }
            let deleted = entry.status().intersects(Status::WT_DELETED)
                || (entry.status().intersects(Status::INDEX_DELETED) && !entry.status().intersects(Status::WT_NEW));
            let hash = if deleted { None } else { hash(&self.root.join(path)) };
            state.insert(path.to_owned(), hash);
        }
        Ok(TreeState(state))
    }
}

/// The blob hash of the file at `path`: a symlink's target name, a regular file's content; `None`
/// for anything else or what cannot be read (it then counts as changed whenever it was not).
fn hash(path: &Path) -> Option<Oid> {
    let metadata = std::fs::symlink_metadata(path).ok()?;
    if metadata.file_type().is_symlink() {
        let target = std::fs::read_link(path).ok()?;
        return Oid::hash_object(ObjectType::Blob, target.as_os_str().as_encoded_bytes()).ok();
    }
    if !metadata.is_file() {
        return None;
    }
    Oid::hash_file(ObjectType::Blob, path).ok()
}

/// Whether `path` (relative to `root`) is under a directory that is never the project's to
/// commit: one of [`JUNK_DIRS`], or one below the root holding a [`JUNK_MARKERS`] file.
/// `markers` caches the directories already looked at.
fn is_junk(root: &Path, path: &str, markers: &mut HashMap<String, bool>) -> bool {
    let parts: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    if parts.iter().any(|part| JUNK_DIRS.contains(part)) {
        return true;
    }
    // Every directory below the root down to the file's own (a marker at the root would make the
    // whole repository junk: it is the project's, whatever it holds).
    (1..parts.len()).any(|depth| {
        let dir = parts[..depth].join("/");
        *markers.entry(dir.clone()).or_insert_with(|| {
            JUNK_MARKERS
                .iter()
                .any(|marker| std::fs::symlink_metadata(root.join(&dir).join(marker)).is_ok())
        })
    })
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failing test should panic")]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn only_the_scoped_files_are_committed_and_junk_never_enters_a_state() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        git(root, &["config", "user.name", "t"]);
        git(root, &["config", "user.email", "t@example.test"]);
        write(root, "Cargo.lock", "old\n");
        write(root, "src/lib.rs", "pub fn f() {}\n");
        write(root, "notes.txt", "kept\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "base"]);
        let repo = LocalRepo::open(root).unwrap();
        assert_eq!(repo.tree_state().unwrap(), TreeState::default());

        // The chore's step: the lockfile.
        write(root, "Cargo.lock", "new\n");
        let chore = repo.tree_state().unwrap();
        assert_eq!(chore.paths(), BTreeSet::from(["Cargo.lock".to_owned()]));

        // The tests: byte-code, caches, a virtual environment, a target directory, and a tracked
        // file a test rewrote; none of it is meant.
        write(root, "tests/__pycache__/test_x.cpython-312.pyc", "\0");
        write(root, ".pytest_cache/v/cache/lastfailed", "{}");
        write(root, "web/node_modules/left-pad/index.js", "");
        write(root, "venv/pyvenv.cfg", "home = /usr\n");
        write(root, "venv/lib/site.py", "");
        write(
            root,
            "target/CACHEDIR.TAG",
            "Signature: 8a477f597d28d172789f06886806bc55\n",
        );
        write(root, "target/debug/app", "");
        write(root, "notes.txt", "rewritten by a test\n");
        let before_agent = repo.tree_state().unwrap();
        assert_eq!(
            before_agent.paths(),
            BTreeSet::from(["Cargo.lock".to_owned(), "notes.txt".to_owned()])
        );

        // The agent: edits the code, adds a file, deletes one, and its own test run leaves more
        // byte-code.
        write(root, "src/lib.rs", "pub fn g() {}\n");
        write(root, "src/new.rs", "pub fn h() {}\n");
        write(root, "src/__pycache__/x.pyc", "\0");
        std::fs::remove_file(root.join("Cargo.lock")).unwrap();
        let after_agent = repo.tree_state().unwrap();
        let agent = after_agent.since(&before_agent);
        assert_eq!(
            agent,
            BTreeSet::from([
                "Cargo.lock".to_owned(),
                "src/lib.rs".to_owned(),
                "src/new.rs".to_owned()
            ])
        );
        // Something staged by hand is not committed either.
        git(root, &["add", "-f", "target/debug/app"]);

        let scope: BTreeSet<String> = chore.paths().union(&agent).cloned().collect();
        let result = repo.commit_scoped(&scope, "chore", 1 << 20, &[], None).unwrap();
        assert!(result.commit.is_some());
        let output = std::process::Command::new("git")
            .args(["show", "--name-status", "--format=", "HEAD"])
            .current_dir(root)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "D\tCargo.lock\nM\tsrc/lib.rs\nA\tsrc/new.rs\n"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("notes.txt")).unwrap(),
            "rewritten by a test\n"
        );
    }
}
