//! Diffs for reviews and reports: the unified diff between two commits (or a commit and the working
//! tree) in git's own format, per-file line counts, and [`DiffPositions`], which maps a line of a new
//! file to the `position` GitHub's review comments want. Positions are parsed from unified diff text,
//! so they work as well for a diff fetched from GitHub as for one made here.

use std::collections::HashMap;

use git2::{Delta, Diff, DiffFindOptions, DiffFormat, DiffOptions, Oid, Patch};

use super::{LocalRepo, WorkspaceError};

/// One file's share of a diff.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileStat {
    /// The path after the change (the old path for a deleted file).
    pub path: String,
    /// The path before a rename or copy.
    pub old_path: Option<String>,
    /// `added`, `modified`, `deleted`, `renamed`, `copied` or `typechange`.
    pub change: &'static str,
    pub additions: u32,
    pub deletions: u32,
    pub binary: bool,
}

/// The diff from commit `from` to commit `to`, or to the working tree (index and untracked files
/// included) when `to` is `None`, with renames found the way `git diff` finds them by default.
fn diff<'r>(repo: &'r LocalRepo, from: Oid, to: Option<Oid>) -> Result<Diff<'r>, WorkspaceError> {
    let repository = &repo.repo;
    let old_tree = repository.find_commit(from)?.tree()?;
    let mut options = DiffOptions::new();
    // git's defaults: three lines of context, and the indent heuristic (default since git 2.14) so
    // that hunk boundaries land where `git diff` puts them.
    options.context_lines(3).indent_heuristic(true);
    let mut diff = match to {
        Some(to) => {
            let new_tree = repository.find_commit(to)?.tree()?;
            repository.diff_tree_to_tree(Some(&old_tree), Some(&new_tree), Some(&mut options))?
        }
        None => {
            options
                .include_untracked(true)
                .recurse_untracked_dirs(true)
                .show_untracked_content(true);
            repository.diff_tree_to_workdir_with_index(Some(&old_tree), Some(&mut options))?
        }
    };
    let mut find = DiffFindOptions::new();
    find.renames(true).for_untracked(true);
    diff.find_similar(Some(&mut find))?;
    Ok(diff)
}

/// The unified diff between `from` and `to` (the working tree when `None`) as `git diff` prints it:
/// `diff --git` headers, three lines of context, `Binary files … differ` for binary files.
pub fn unified_diff(repo: &LocalRepo, from: Oid, to: Option<Oid>) -> Result<String, WorkspaceError> {
    let diff = diff(repo, from, to)?;
    let mut out = Vec::new();
    diff.print(DiffFormat::Patch, |_delta, _hunk, line| {
        // Headers, hunk headers, binary notices and "no newline" markers carry their whole text;
        // content lines need their origin (`+`, `-`, ` `) put back in front.
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin() as u8);
        }
        out.extend_from_slice(line.content());
        true
    })?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Per-file additions and deletions between `from` and `to` (the working tree when `None`).
pub fn file_stats(repo: &LocalRepo, from: Oid, to: Option<Oid>) -> Result<Vec<FileStat>, WorkspaceError> {
    let diff = diff(repo, from, to)?;
    let mut stats = Vec::new();
    for index in 0..diff.deltas().len() {
        // Building the patch loads the contents, which is also what decides whether a file is binary.
        let patch = Patch::from_diff(&diff, index)?;
        let (additions, deletions) = match &patch {
            Some(patch) => {
                let (_context, additions, deletions) = patch.line_stats()?;
                (additions, deletions)
            }
            None => (0, 0),
        };
        let delta = match &patch {
            Some(patch) => patch.delta(),
            None => match diff.get_delta(index) {
                Some(delta) => delta,
                None => continue,
            },
        };
        let change = match delta.status() {
            Delta::Added | Delta::Untracked => "added",
            Delta::Deleted => "deleted",
            Delta::Renamed => "renamed",
            Delta::Copied => "copied",
            Delta::Typechange => "typechange",
            _ => "modified",
        };
        let old = delta.old_file().path().map(|p| p.display().to_string());
        let new = delta.new_file().path().map(|p| p.display().to_string());
        let Some(path) = new.clone().or_else(|| old.clone()) else {
            continue;
        };
        let old_path = match delta.status() {
            Delta::Renamed | Delta::Copied => old,
            _ => None,
        };
        stats.push(FileStat {
            path,
            old_path,
            change,
            additions: u32::try_from(additions).unwrap_or(u32::MAX),
            deletions: u32::try_from(deletions).unwrap_or(u32::MAX),
            binary: delta.flags().is_binary(),
        });
    }
    Ok(stats)
}

/// Where each line of each new file sits in its file's diff, in the terms of GitHub's (legacy)
/// review-comment `position`: 1 is the line just below the file's first `@@` header, and counting
/// runs on through later hunks, each later `@@` header taking a position of its own.
///
/// Only added and context lines have a position: those are the lines a review comment can be put on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffPositions {
    files: HashMap<String, HashMap<u32, u32>>,
}

/// Hunk-parsing state for one file.
struct Hunk {
    /// Lines of the old and new side still to come in the current hunk.
    old_left: u32,
    new_left: u32,
    /// The new file's line number of the next added or context line.
    new_line: u32,
}

impl DiffPositions {
    /// Parses a unified diff of one or more files (`git diff`'s output, or a pull request's diff from
    /// GitHub). Lines it does not understand outside hunks are skipped.
    pub fn from_unified(text: &str) -> Self {
        let mut positions = DiffPositions::default();
        let mut path: Option<String> = None;
        // `None` until the file's first hunk header; then the position of the last line read.
        let mut position: Option<u32> = None;
        let mut hunk: Option<Hunk> = None;
        for line in text.lines() {
            if let Some(current) = hunk.as_mut().filter(|h| h.old_left > 0 || h.new_left > 0) {
                // Inside a hunk the counts in its header, not the line's look, say what a line is: a
                // deleted line can read `--- a/x`, an added one `++ …`.
                position = position.map(|p| p + 1);
                match line.as_bytes().first() {
                    Some(b'+') => {
                        positions.record(path.as_deref(), current.new_line, position);
                        current.new_line += 1;
                        current.new_left = current.new_left.saturating_sub(1);
                    }
                    Some(b'-') => current.old_left = current.old_left.saturating_sub(1),
                    Some(b'\\') => {}
                    // A context line; some tools strip the lone space of an empty one.
                    _ => {
                        positions.record(path.as_deref(), current.new_line, position);
                        current.new_line += 1;
                        current.new_left = current.new_left.saturating_sub(1);
                        current.old_left = current.old_left.saturating_sub(1);
                    }
                }
                continue;
            }
            if line.starts_with("diff ") {
                path = None;
                position = None;
                hunk = None;
            } else if let Some(rest) = line.strip_prefix("+++ ") {
                if let Some(new_path) = header_path(rest) {
                    path = Some(new_path);
                }
            } else if let Some(rest) = line.strip_prefix("--- ") {
                // The old path stands in until `+++` names the new one (it stays for a deleted file).
                path = header_path(rest);
            } else if line.starts_with("@@") {
                if let Some((new_start, old_len, new_len)) = parse_hunk_header(line) {
                    // The first header is position 0; later ones take a position like any line.
                    position = Some(position.map_or(0, |p| p + 1));
                    hunk = Some(Hunk {
                        old_left: old_len,
                        new_left: new_len,
                        new_line: new_start,
                    });
                }
            } else if line.starts_with('\\') {
                // "\ No newline at end of file" after a hunk's last line is still a line of the patch.
                position = position.map(|p| p + 1);
            }
        }
        positions
    }

    fn record(&mut self, path: Option<&str>, new_line: u32, position: Option<u32>) {
        if let (Some(path), Some(position)) = (path, position) {
            self.files
                .entry(path.to_owned())
                .or_default()
                .insert(new_line, position);
        }
    }

    /// The diff position of line `new_line` (1-based) of the new version of `path`, if it is shown.
    pub fn position(&self, path: &str, new_line: u32) -> Option<u32> {
        self.files.get(path)?.get(&new_line).copied()
    }

    /// Whether a review comment can go on line `new_line` of the new `path`: it is an added or context
    /// line inside one of the file's hunks.
    pub fn is_commentable(&self, path: &str, new_line: u32) -> bool {
        self.position(path, new_line).is_some()
    }
}

/// The path in a `--- a/x` or `+++ b/x` line (without the marker); `None` for `/dev/null`. Quoted
/// paths (git quotes names with unusual characters) are unescaped.
fn header_path(rest: &str) -> Option<String> {
    // Some diff tools follow the name with a tab and a timestamp.
    let rest = if rest.starts_with('"') {
        rest
    } else {
        rest.split('\t').next().unwrap_or(rest)
    };
    let name = if rest.starts_with('"') {
        unquote(rest)?
    } else {
        rest.to_owned()
    };
    if name == "/dev/null" {
        return None;
    }
    let stripped = name
        .strip_prefix("a/")
        .or_else(|| name.strip_prefix("b/"))
        .map(str::to_owned);
    Some(stripped.unwrap_or(name))
}

/// Undoes git's C-style quoting of a path: `"a\tb"`, `"caf\303\251"`.
fn unquote(quoted: &str) -> Option<String> {
    let inner = quoted.strip_prefix('"')?;
    let inner = &inner[..inner.rfind('"')?];
    let mut bytes = Vec::new();
    let mut chars = inner.bytes().peekable();
    while let Some(b) = chars.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        match chars.next()? {
            b'n' => bytes.push(b'\n'),
            b't' => bytes.push(b'\t'),
            b'r' => bytes.push(b'\r'),
            b'a' => bytes.push(0x07),
            b'b' => bytes.push(0x08),
            b'f' => bytes.push(0x0c),
            b'v' => bytes.push(0x0b),
            d @ b'0'..=b'7' => {
                let mut value = u32::from(d - b'0');
                for _ in 0..2 {
                    if let Some(&next @ b'0'..=b'7') = chars.peek() {
                        value = value * 8 + u32::from(next - b'0');
                        chars.next();
                    }
                }
                bytes.push(u8::try_from(value).ok()?);
            }
            other => bytes.push(other),
        }
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// `@@ -a,b +c,d @@ …` → `(c, b, d)`; a missing length means 1.
fn parse_hunk_header(line: &str) -> Option<(u32, u32, u32)> {
    let mut parts = line.strip_prefix("@@ ")?.split(' ');
    let old = parts.next()?.strip_prefix('-')?;
    let new = parts.next()?.strip_prefix('+')?;
    let range = |r: &str| -> Option<(u32, u32)> {
        match r.split_once(',') {
            Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (_, old_len) = range(old)?;
    let (new_start, new_len) = range(new)?;
    Some((new_start, old_len, new_len))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let output = Command::new("git")
            .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// `git diff` with settings a user's configuration could change pinned to git's defaults.
    fn git_diff(dir: &Path, args: &[&str]) -> String {
        let mut all = vec![
            "-c",
            "diff.noprefix=false",
            "-c",
            "diff.mnemonicPrefix=false",
            "-c",
            "diff.algorithm=myers",
            "-c",
            "diff.indentHeuristic=true",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "-M",
        ];
        all.extend_from_slice(args);
        git(dir, &all)
    }

    fn commit(dir: &Path) -> Oid {
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", "change"]);
        Oid::from_str(git(dir, &["rev-parse", "HEAD"]).trim()).unwrap()
    }

    /// A repository whose second commit modifies, adds, deletes, renames and binary-edits a file each.
    fn two_commits() -> (tempfile::TempDir, Oid, Oid) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join("modified.txt"), "one\ntwo\nthree\nfour\nfive\n").unwrap();
        std::fs::write(root.join("deleted.txt"), "gone\n").unwrap();
        std::fs::write(root.join("old_name.txt"), "a\nb\nc\nd\ne\nf\ng\nh\n").unwrap();
        std::fs::write(root.join("image.bin"), [0u8, 1, 2, 3, 0, 5]).unwrap();
        let from = commit(root);
        std::fs::write(root.join("modified.txt"), "one\ntwo\nTHREE\nfour\nfive\nsix\n").unwrap();
        std::fs::write(root.join("added.txt"), "new\nfile\n").unwrap();
        std::fs::remove_file(root.join("deleted.txt")).unwrap();
        std::fs::rename(root.join("old_name.txt"), root.join("new_name.txt")).unwrap();
        std::fs::write(root.join("new_name.txt"), "a\nb\nc\nd\ne\nf\ng\nH\n").unwrap();
        std::fs::write(root.join("image.bin"), [0u8, 1, 2, 3, 0, 6]).unwrap();
        let to = commit(root);
        (dir, from, to)
    }

    #[test]
    fn unified_diff_matches_git_between_commits() {
        let (dir, from, to) = two_commits();
        let repo = LocalRepo::open(dir.path()).unwrap();
        let ours = unified_diff(&repo, from, Some(to)).unwrap();
        let theirs = git_diff(dir.path(), &[&from.to_string(), &to.to_string()]);
        assert_eq!(ours, theirs);
        // The git comparison is the strong check; these make sure every kind of change is in it.
        assert!(ours.contains("diff --git a/modified.txt b/modified.txt\n"));
        assert!(ours.contains("-three\n+THREE\n"));
        assert!(ours.contains("new file mode 100644\n"));
        assert!(ours.contains("deleted file mode 100644\n"));
        assert!(ours.contains("rename from old_name.txt\nrename to new_name.txt\n"));
        assert!(ours.contains("Binary files a/image.bin and b/image.bin differ\n"));
    }

    #[test]
    fn unified_diff_exact_text_for_a_small_change() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join("x.txt"), "1\n2\n3\n4\n5\n").unwrap();
        let from = commit(root);
        std::fs::write(root.join("x.txt"), "1\n2\nthree\n4\n5\n").unwrap();
        let to = commit(root);
        let repo = LocalRepo::open(root).unwrap();
        let ours = unified_diff(&repo, from, Some(to)).unwrap();
        let blob = |commit: Oid| git(root, &["rev-parse", "--short=7", &format!("{commit}:x.txt")]);
        let ids = [blob(from), blob(to)].map(|id| id.trim().to_owned());
        let expected = format!(
            "diff --git a/x.txt b/x.txt\nindex {}..{} 100644\n--- a/x.txt\n+++ b/x.txt\n@@ -1,5 +1,5 @@\n 1\n 2\n-3\n+three\n 4\n 5\n",
            ids[0], ids[1]
        );
        assert_eq!(ours, expected);
        assert_eq!(ours, git_diff(root, &[&from.to_string(), &to.to_string()]));
    }

    #[test]
    fn unified_diff_to_the_working_tree_includes_untracked_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        let from = commit(root);
        std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::write(root.join("untracked.txt"), "fresh\n").unwrap();
        let repo = LocalRepo::open(root).unwrap();
        let ours = unified_diff(&repo, from, None).unwrap();
        assert!(ours.contains("diff --git a/a.txt b/a.txt\n"), "{ours}");
        assert!(ours.contains(" one\n+two\n"), "{ours}");
        assert!(
            ours.contains("diff --git a/untracked.txt b/untracked.txt\nnew file mode 100644\n"),
            "{ours}"
        );
        assert!(ours.contains("+++ b/untracked.txt\n@@ -0,0 +1 @@\n+fresh\n"), "{ours}");
        // What `git diff` shows once the untracked file is made known to it (`add -N`).
        git(root, &["add", "-N", "untracked.txt"]);
        assert_eq!(ours, git_diff(root, &[&from.to_string()]));
    }

    #[test]
    fn stats_per_file() {
        let (dir, from, to) = two_commits();
        let repo = LocalRepo::open(dir.path()).unwrap();
        let stats = file_stats(&repo, from, Some(to)).unwrap();
        let stat = |path: &str, old_path: Option<&str>, change, additions, deletions, binary| FileStat {
            path: path.to_owned(),
            old_path: old_path.map(str::to_owned),
            change,
            additions,
            deletions,
            binary,
        };
        assert_eq!(
            stats,
            [
                stat("added.txt", None, "added", 2, 0, false),
                stat("deleted.txt", None, "deleted", 0, 1, false),
                stat("image.bin", None, "modified", 0, 0, true),
                stat("modified.txt", None, "modified", 2, 1, false),
                stat("new_name.txt", Some("old_name.txt"), "renamed", 1, 1, false),
            ]
        );
        // The same counts as `git diff --numstat` (which shows `-` for a binary file).
        let numstat = git(
            dir.path(),
            &["diff", "--numstat", "-M", &from.to_string(), &to.to_string()],
        );
        let ours: Vec<String> = stats
            .iter()
            .map(|s| {
                let path = match &s.old_path {
                    Some(old) => format!("{old} => {}", s.path),
                    None => s.path.clone(),
                };
                if s.binary {
                    format!("-\t-\t{path}")
                } else {
                    format!("{}\t{}\t{path}", s.additions, s.deletions)
                }
            })
            .collect();
        assert_eq!(ours, numstat.lines().collect::<Vec<_>>());
    }

    #[test]
    fn positions_on_a_two_hunk_diff() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        let old: Vec<String> = (1..=20).map(|n| format!("line {n}")).collect();
        std::fs::write(root.join("f.txt"), old.join("\n") + "\n").unwrap();
        let from = commit(root);
        let mut new = old;
        new[1] = "line 2 changed".to_owned(); // line 2 modified
        new.insert(16, "inserted".to_owned()); // a new line 17, between old 16 and 17
        std::fs::write(root.join("f.txt"), new.join("\n") + "\n").unwrap();
        let to = commit(root);
        let repo = LocalRepo::open(root).unwrap();
        let text = unified_diff(&repo, from, Some(to)).unwrap();
        let patch = text.split_once("+++ b/f.txt\n").unwrap().1;
        assert_eq!(
            patch,
            "@@ -1,5 +1,5 @@\n line 1\n-line 2\n+line 2 changed\n line 3\n line 4\n line 5\n\
             @@ -14,6 +14,7 @@ line 13\n line 14\n line 15\n line 16\n+inserted\n line 17\n line 18\n line 19\n"
        );
        let positions = DiffPositions::from_unified(&text);
        // First hunk: position 1 is new line 1; the deleted line takes position 2 but no new line.
        assert_eq!(positions.position("f.txt", 1), Some(1));
        assert_eq!(positions.position("f.txt", 2), Some(3));
        assert_eq!(positions.position("f.txt", 3), Some(4));
        assert_eq!(positions.position("f.txt", 5), Some(6));
        // The second `@@` header is position 7; its first line, new line 14, is position 8.
        assert_eq!(positions.position("f.txt", 14), Some(8));
        assert_eq!(positions.position("f.txt", 17), Some(11));
        assert!(positions.is_commentable("f.txt", 17));
        assert_eq!(positions.position("f.txt", 20), Some(14));
        // Lines outside the hunks, past the end, in other files: none.
        for line in [6, 13, 21, 0] {
            assert_eq!(positions.position("f.txt", line), None, "line {line}");
        }
        assert_eq!(positions.position("other.txt", 1), None);
    }

    #[test]
    fn positions_skip_deleted_lines_and_files() {
        let diff = "\
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 1111111..0000000
--- a/gone.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-first
-second
diff --git a/keep.txt b/keep.txt
index 2222222..3333333 100644
--- a/keep.txt
+++ b/keep.txt
@@ -1,3 +1,2 @@
 a
--- looks like a header
 c
\\ No newline at end of file
diff --git \"a/sp\\303\\251cial.txt\" \"b/sp\\303\\251cial.txt\"
--- \"a/sp\\303\\251cial.txt\"
+++ \"b/sp\\303\\251cial.txt\"
@@ -1 +1 @@
-x
+y
";
        let positions = DiffPositions::from_unified(diff);
        assert!(!positions.is_commentable("gone.txt", 1));
        assert_eq!(positions.position("keep.txt", 1), Some(1));
        // `--- looks like a header` is a deleted line: it takes position 2 and no new line.
        assert_eq!(positions.position("keep.txt", 2), Some(3));
        assert_eq!(positions.position("keep.txt", 3), None);
        assert_eq!(positions.position("spécial.txt", 1), Some(2));
    }

    #[test]
    fn hunk_headers() {
        assert_eq!(parse_hunk_header("@@ -1,5 +1,6 @@ fn main"), Some((1, 5, 6)));
        assert_eq!(parse_hunk_header("@@ -0,0 +1 @@"), Some((1, 0, 1)));
        assert_eq!(parse_hunk_header("@@ garbage @@"), None);
    }
}
