//! What part of a pull request a review covers, given the last review's state: the whole pull
//! request the first time; after new commits, only what they changed (the diff from the last
//! reviewed head, kept to the pull request's own files and lines, so a merge of the base branch
//! brings nothing of the base's in); after a force-push, the files whose change differs by patch
//! id from what was reviewed — and nothing at all when the push only rebased the same changes.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use git2::Oid;

use super::diff::{FileDiff, split};
use super::state::ReviewState;
use crate::workspace::diff::unified_diff;
use crate::workspace::{LocalRepo, WorkspaceError};

/// Why there is nothing new to review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unchanged {
    /// The head is the one reviewed last.
    SameHead,
    /// A force-push rebased the reviewed changes (the same patch ids) onto another base.
    Rebased,
    /// The new commits changed none of the pull request's own files (a merge of the base branch).
    BaseOnly,
}

/// The part of the pull request a review covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every file: the first review, or the last one's commits are gone from the repository.
    Whole,
    /// The files that changed since `since` (the last reviewed head), each with the lines of the
    /// head that the change added (inline comments belong there).
    Since {
        since: String,
        files: BTreeMap<String, BTreeSet<u32>>,
        /// Every file the new commits changed (those of the pull request or not), with the lines of
        /// the head they added or removed lines next to: an earlier finding near them is rechecked.
        touched: BTreeMap<String, BTreeSet<u32>>,
        /// A force-push: `files` are those whose change differs from what was reviewed.
        rebased: bool,
    },
    Unchanged(Unchanged),
}

impl Scope {
    /// Whether this scope covers `path`.
    pub fn covers(&self, path: &str) -> bool {
        match self {
            Scope::Whole => true,
            Scope::Since { files, .. } => files.contains_key(path),
            Scope::Unchanged(_) => false,
        }
    }
}

/// The scope of a review of `head` (whose merge base with the base branch is `merge_base`; the
/// pull request's files are `pull_files`, the diff `merge_base..head`) after the review recorded in
/// `previous`.
pub fn scope(
    repo: &LocalRepo,
    previous: Option<&ReviewState>,
    head: Oid,
    pull_files: &[FileDiff],
) -> Result<Scope, WorkspaceError> {
    let Some(previous) = previous else {
        return Ok(Scope::Whole);
    };
    if previous.head == head.to_string() {
        return Ok(Scope::Unchanged(Unchanged::SameHead));
    }
    let raw = repo.raw();
    let known = |sha: &str| Oid::from_str(sha).ok().filter(|oid| raw.find_commit(*oid).is_ok());
    let Some(old_head) = known(&previous.head) else {
        return Ok(Scope::Whole);
    };
    if raw.graph_descendant_of(head, old_head)? {
        // New commits on top: what they changed, within the pull request's own changes.
        let since = split(&unified_diff(repo, old_head, Some(head))?);
        let touched: BTreeMap<String, BTreeSet<u32>> = since.iter().map(|f| (f.path.clone(), f.touched())).collect();
        let since: HashMap<&str, &FileDiff> = since.iter().map(|f| (f.path.as_str(), f)).collect();
        let mut files = BTreeMap::new();
        for file in pull_files {
            if let Some(new) = since.get(file.path.as_str()) {
                let lines: BTreeSet<u32> = new.added.intersection(&file.added).copied().collect();
                files.insert(file.path.clone(), lines);
            }
        }
        if files.is_empty() {
            return Ok(Scope::Unchanged(Unchanged::BaseOnly));
        }
        return Ok(Scope::Since {
            since: previous.head.clone(),
            files,
            touched,
            rebased: false,
        });
    }
    // A force-push: compare each file's change with what was reviewed.
    let Some(old_base) = known(&previous.merge_base) else {
        return Ok(Scope::Whole);
    };
    let reviewed: HashMap<String, String> = split(&unified_diff(repo, old_base, Some(old_head))?)
        .into_iter()
        .map(|f| (f.path.clone(), f.patch_id()))
        .collect();
    let files: BTreeMap<String, BTreeSet<u32>> = pull_files
        .iter()
        .filter(|f| reviewed.get(&f.path) != Some(&f.patch_id()))
        .map(|f| (f.path.clone(), f.added.clone()))
        .collect();
    if files.is_empty() {
        return Ok(Scope::Unchanged(Unchanged::Rebased));
    }
    Ok(Scope::Since {
        since: previous.head.clone(),
        touched: files.clone(),
        files,
        rebased: true,
    })
}

/// At most `max` bytes of the file at `path` in `commit`'s tree; `None` when it is no file there.
/// Read from git's objects, never through the working copy a sandbox could have changed.
pub fn file_at(repo: &LocalRepo, commit: Oid, path: &str, max: usize) -> Option<Vec<u8>> {
    let raw = repo.raw();
    let tree = raw.find_commit(commit).ok()?.tree().ok()?;
    let entry = tree.get_path(std::path::Path::new(path)).ok()?;
    let blob = entry.to_object(raw).ok()?.into_blob().ok()?;
    let content = blob.content();
    Some(content[..content.len().min(max)].to_vec())
}

/// The merge base of the pull request's base and head: where its own diff starts.
pub fn merge_base(repo: &LocalRepo, base: Oid, head: Oid) -> Result<Oid, WorkspaceError> {
    Ok(repo.raw().merge_base(base, head)?)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    fn commit(dir: &Path, files: &[(&str, &str)], message: &str) -> Oid {
        for (path, text) in files {
            std::fs::write(dir.join(path), text).unwrap();
        }
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", message]);
        Oid::from_str(&git(dir, &["rev-parse", "HEAD"])).unwrap()
    }

    fn pull(repo: &LocalRepo, base: Oid, head: Oid) -> (Oid, Vec<FileDiff>) {
        let mb = merge_base(repo, base, head).unwrap();
        (mb, split(&unified_diff(repo, mb, Some(head)).unwrap()))
    }

    fn numbered(n: usize, changed: &[(usize, &str)]) -> String {
        (1..=n)
            .map(|i| {
                changed
                    .iter()
                    .find(|(at, _)| *at == i)
                    .map_or(format!("line {i}\n"), |(_, text)| format!("{text}\n"))
            })
            .collect()
    }

    #[test]
    fn new_commits_a_merge_of_the_base_and_a_rebase_only_force_push() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q", "-b", "main"]);
        let base = commit(
            d,
            &[("a.txt", &numbered(30, &[])), ("b.txt", "b\n"), ("c.txt", "c\n")],
            "base",
        );
        git(d, &["checkout", "-q", "-b", "topic"]);
        let first = commit(
            d,
            &[("a.txt", &numbered(30, &[(5, "five")])), ("b.txt", "b2\n")],
            "first",
        );
        let repo = LocalRepo::open(d).unwrap();
        let (mb, files) = pull(&repo, base, first);
        assert_eq!(scope(&repo, None, first, &files).unwrap(), Scope::Whole);
        let reviewed = ReviewState {
            head: first.to_string(),
            merge_base: mb.to_string(),
            fingerprints: Vec::new(),
        };
        assert_eq!(
            scope(&repo, Some(&reviewed), first, &files).unwrap(),
            Scope::Unchanged(Unchanged::SameHead)
        );

        // One more commit: only its file and its line.
        let second = commit(
            d,
            &[("a.txt", &numbered(30, &[(5, "five"), (25, "twenty-five")]))],
            "second",
        );
        let (_, files) = pull(&repo, base, second);
        assert_eq!(
            scope(&repo, Some(&reviewed), second, &files).unwrap(),
            Scope::Since {
                since: first.to_string(),
                files: BTreeMap::from([("a.txt".to_owned(), BTreeSet::from([25]))]),
                touched: BTreeMap::from([("a.txt".to_owned(), BTreeSet::from([25]))]),
                rebased: false,
            }
        );

        // The base moves (c.txt) and is merged in: nothing of the pull request's own changed.
        git(d, &["checkout", "-q", "main"]);
        let moved = commit(d, &[("c.txt", "c2\n")], "base moves");
        git(d, &["checkout", "-q", "topic"]);
        git(d, &["merge", "-q", "--no-edit", "main"]);
        let merged = Oid::from_str(&git(d, &["rev-parse", "HEAD"])).unwrap();
        let after_second = ReviewState {
            head: second.to_string(),
            merge_base: mb.to_string(),
            fingerprints: Vec::new(),
        };
        let (_, files) = pull(&repo, moved, merged);
        assert_eq!(
            scope(&repo, Some(&after_second), merged, &files).unwrap(),
            Scope::Unchanged(Unchanged::BaseOnly)
        );

        // A force-push that rebases the same two commits onto the moved base: nothing new.
        git(d, &["checkout", "-q", "-b", "rebased", "main"]);
        git(d, &["cherry-pick", &first.to_string(), &second.to_string()]);
        let rebased = Oid::from_str(&git(d, &["rev-parse", "HEAD"])).unwrap();
        let (_, files) = pull(&repo, moved, rebased);
        assert_eq!(
            scope(&repo, Some(&after_second), rebased, &files).unwrap(),
            Scope::Unchanged(Unchanged::Rebased)
        );

        // A force-push that also changes b.txt again: b.txt alone, all of its added lines.
        let amended = commit(d, &[("b.txt", "b3\n")], "amend b");
        let (_, files) = pull(&repo, moved, amended);
        assert_eq!(
            scope(&repo, Some(&after_second), amended, &files).unwrap(),
            Scope::Since {
                since: second.to_string(),
                files: BTreeMap::from([("b.txt".to_owned(), BTreeSet::from([1]))]),
                touched: BTreeMap::from([("b.txt".to_owned(), BTreeSet::from([1]))]),
                rebased: true,
            }
        );

        // A state naming commits the repository does not have: the whole pull request.
        let lost = ReviewState {
            head: "f".repeat(40),
            merge_base: "e".repeat(40),
            fingerprints: Vec::new(),
        };
        assert_eq!(scope(&repo, Some(&lost), amended, &files).unwrap(), Scope::Whole);
    }
}
