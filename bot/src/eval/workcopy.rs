//! A case's own working copy: a standalone clone of its repository at its commit, or a plain
//! directory copied and committed as the starting point; and the check's files written over it.

use std::path::Path;

use git2::{Oid, Repository, Signature, Time};

use crate::beneath::Beneath;

use super::case::{Case, RepoSource};

/// The largest file copied from a project or a check directory.
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Why a working copy could not be made; the message is for the report.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CopyError(String);

impl From<git2::Error> for CopyError {
    fn from(error: git2::Error) -> Self {
        CopyError(format!("git: {}", error.message()))
    }
}

/// Makes the working copy of `case` in `dest` (absent or empty) and returns its starting commit.
pub fn prepare(case: &Case, dest: &Path) -> Result<Oid, CopyError> {
    match &case.repo {
        RepoSource::Url(url) => clone_at(url, case.commit.as_deref(), dest),
        RepoSource::Path(path) => {
            let meta = std::fs::metadata(path)
                .map_err(|error| CopyError(format!("the repository {}: {error}", path.display())))?;
            if !meta.is_dir() {
                return Err(CopyError(format!(
                    "the repository {} is not a directory",
                    path.display()
                )));
            }
            if path.join(".git").exists() {
                let source = std::fs::canonicalize(path)
                    .map_err(|error| CopyError(format!("the repository {}: {error}", path.display())))?;
                clone_at(&source.display().to_string(), case.commit.as_deref(), dest)
            } else if let Some(commit) = &case.commit {
                Err(CopyError(format!(
                    "the case names commit {commit}, but {} is not a git repository",
                    path.display()
                )))
            } else {
                copy_and_commit(path, dest)
            }
        }
    }
}

/// A standalone clone (its own objects: nothing links back to the source) detached at `commit`.
fn clone_at(source: &str, commit: Option<&str>, dest: &Path) -> Result<Oid, CopyError> {
    let repo = git2::build::RepoBuilder::new().clone(source, dest)?;
    let revision = commit.unwrap_or("HEAD");
    let id = repo
        .revparse_single(revision)
        .and_then(|object| object.peel_to_commit())
        .map_err(|_| CopyError(format!("the repository has no commit {revision}")))?
        .id();
    repo.set_head_detached(id)?;
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))?;
    Ok(id)
}

/// Copies the project at `source` into `dest` and commits it, with a fixed author and date so the
/// same project always makes the same commit.
fn copy_and_commit(source: &Path, dest: &Path) -> Result<Oid, CopyError> {
    std::fs::create_dir_all(dest).map_err(|error| CopyError(format!("{}: {error}", dest.display())))?;
    copy_tree(source, dest)?;
    let repo = Repository::init(dest)?;
    let mut index = repo.index()?;
    index.add_all(["*"], git2::IndexAddOption::DEFAULT, None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let signature = Signature::new("pitcrew eval", "eval@pitcrew.invalid", &Time::new(0, 0))?;
    let id = repo.commit(
        Some("HEAD"),
        &signature,
        &signature,
        "The case's starting point",
        &tree,
        &[],
    )?;
    Ok(id)
}

/// Copies directories, regular files (with their permissions) and symlinks (as symlinks, never
/// followed) from `from` to `to`; a `.git` entry is left out.
fn copy_tree(from: &Path, to: &Path) -> Result<(), CopyError> {
    let io = |path: &Path, error: std::io::Error| CopyError(format!("{}: {error}", path.display()));
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .map_err(|e| io(from, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| io(from, e))?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        if entry.file_name() == ".git" {
            continue;
        }
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let meta = std::fs::symlink_metadata(&source).map_err(|e| io(&source, e))?;
        if meta.is_dir() {
            std::fs::create_dir(&target).map_err(|e| io(&target, e))?;
            copy_tree(&source, &target)?;
        } else if meta.is_symlink() {
            let link = std::fs::read_link(&source).map_err(|e| io(&source, e))?;
            std::os::unix::fs::symlink(link, &target).map_err(|e| io(&target, e))?;
        } else if meta.is_file() {
            if meta.len() > MAX_FILE_BYTES {
                return Err(CopyError(format!(
                    "{} is larger than {MAX_FILE_BYTES} bytes",
                    source.display()
                )));
            }
            std::fs::copy(&source, &target).map_err(|e| io(&source, e))?;
        }
    }
    Ok(())
}

/// Writes every regular file below `files` over the working copy at `root`, at the same relative
/// path, and returns those paths. The working copy is the agent's: its directories are walked without following a symlink
/// (one planted where a check file goes fails the copy instead of writing outside the copy).
pub fn overlay(files: &Path, root: &Path) -> Result<Vec<String>, CopyError> {
    let beneath = Beneath::open(root).map_err(|error| CopyError(format!("{}: {error}", root.display())))?;
    let mut written = Vec::new();
    let mut pending = vec![std::path::PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let dir = files.join(&relative);
        let entries = std::fs::read_dir(&dir).map_err(|error| CopyError(format!("{}: {error}", dir.display())))?;
        for entry in entries {
            let entry = entry.map_err(|error| CopyError(format!("{}: {error}", dir.display())))?;
            let path = entry.path();
            let meta =
                std::fs::symlink_metadata(&path).map_err(|error| CopyError(format!("{}: {error}", path.display())))?;
            let name = relative.join(entry.file_name());
            if meta.is_dir() {
                pending.push(name);
            } else if meta.is_file() {
                if meta.len() > MAX_FILE_BYTES {
                    return Err(CopyError(format!(
                        "{} is larger than {MAX_FILE_BYTES} bytes",
                        path.display()
                    )));
                }
                let content =
                    std::fs::read(&path).map_err(|error| CopyError(format!("{}: {error}", path.display())))?;
                beneath.write(&name, &content).map_err(|error| {
                    CopyError(format!(
                        "writing the check's file {} into the working copy: {error}",
                        name.display()
                    ))
                })?;
                written.push(name.display().to_string());
            }
        }
    }
    Ok(written)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::eval::case::parse;

    fn case(repo: &Path, commit: Option<&str>) -> Case {
        let commit = commit.map(|c| format!(", commit: '{c}'")).unwrap_or_default();
        let yaml = format!(
            "- {{id: c, repo: '{}'{commit}, task: t, check: {{run: x}}}}",
            repo.display()
        );
        parse(&yaml, Path::new("s.yaml"), Path::new("/")).unwrap().remove(0)
    }

    #[test]
    fn a_plain_directory_becomes_the_same_commit_every_time() {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join("src")).unwrap();
        std::fs::write(project.path().join("src/a.py"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink("src/a.py", project.path().join("link")).unwrap();
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let first = prepare(&case(project.path(), None), &one.path().join("w")).unwrap();
        let second = prepare(&case(project.path(), None), &two.path().join("w")).unwrap();
        assert_eq!(first, second);
        assert_eq!(
            std::fs::read_to_string(one.path().join("w/src/a.py")).unwrap(),
            "x = 1\n"
        );
        assert_eq!(
            std::fs::read_link(one.path().join("w/link")).unwrap(),
            Path::new("src/a.py")
        );
        let named = prepare(&case(project.path(), Some("abcd")), &one.path().join("x"))
            .unwrap_err()
            .to_string();
        assert!(named.contains("is not a git repository"), "{named}");
    }

    #[test]
    fn a_git_repository_is_cloned_standalone_at_the_commit() {
        let source = tempfile::tempdir().unwrap();
        let repo = Repository::init(source.path()).unwrap();
        let signature = Signature::now("t", "t@example.com").unwrap();
        let mut commits = Vec::new();
        for content in ["one\n", "two\n"] {
            std::fs::write(source.path().join("f"), content).unwrap();
            let mut index = repo.index().unwrap();
            index.add_path(Path::new("f")).unwrap();
            index.write().unwrap();
            let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
            let parents: Vec<_> = commits.iter().map(|id| repo.find_commit(*id).unwrap()).collect();
            let parents: Vec<_> = parents.iter().collect();
            commits.push(
                repo.commit(Some("HEAD"), &signature, &signature, content, &tree, &parents)
                    .unwrap(),
            );
        }
        let dest = tempfile::tempdir().unwrap();
        let first = commits[0].to_string();
        let id = prepare(&case(source.path(), Some(&first[..10])), &dest.path().join("w")).unwrap();
        assert_eq!(id, commits[0]);
        assert_eq!(std::fs::read_to_string(dest.path().join("w/f")).unwrap(), "one\n");
        assert!(!dest.path().join("w/.git/objects/info/alternates").exists());
    }

    #[test]
    fn check_files_never_follow_a_symlink_the_agent_planted() {
        let (root, outside, checks) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        std::fs::create_dir(checks.path().join("tests")).unwrap();
        std::fs::write(checks.path().join("tests/test_hidden.py"), "def test(): pass\n").unwrap();
        std::fs::write(checks.path().join("top.txt"), "top\n").unwrap();
        let mut written = overlay(checks.path(), root.path()).unwrap();
        written.sort();
        assert_eq!(written, ["tests/test_hidden.py", "top.txt"]);
        assert_eq!(
            std::fs::read_to_string(root.path().join("tests/test_hidden.py")).unwrap(),
            "def test(): pass\n"
        );

        // The agent replaced `tests` with a link out of the copy.
        std::fs::remove_dir_all(root.path().join("tests")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("tests")).unwrap();
        let err = overlay(checks.path(), root.path()).unwrap_err().to_string();
        assert!(
            err.starts_with("writing the check's file tests/test_hidden.py"),
            "{err}"
        );
        assert!(!outside.path().join("test_hidden.py").exists());
    }
}
