//! A unified diff (git's format, as `workspace::diff::unified_diff` and GitHub print it) as files:
//! each file's section of the text, the lines it adds (numbered in the new file), its counts, and
//! its patch id — what `git patch-id --stable` hashes: the changed lines without whitespace and
//! without line numbers, so the same change rebased onto another base keeps its id.

use std::collections::BTreeSet;

/// One file's part of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// The path after the change (before it, for a deleted file).
    pub path: String,
    /// The path before a rename or copy.
    pub old_path: Option<String>,
    /// The file's section of the diff, from its `diff --git` line.
    pub text: String,
    /// Lines of the new file this diff adds (`+` lines), 1-based.
    pub added: BTreeSet<u32>,
    /// Where in the new file lines were removed: the number of the line that now follows them.
    pub removed_at: BTreeSet<u32>,
    pub additions: u32,
    pub deletions: u32,
    pub binary: bool,
    pub deleted: bool,
}

impl FileDiff {
    /// The lines of the new file this diff added, or next to which it removed lines.
    pub fn touched(&self) -> BTreeSet<u32> {
        self.added.union(&self.removed_at).copied().collect()
    }

    /// Lines added and removed.
    pub fn changed_lines(&self) -> u32 {
        self.additions.saturating_add(self.deletions)
    }

    /// The change without its place: the added and removed lines, whitespace dropped, in order,
    /// hashed with the path. Two diffs with the same id make the same change to the same file.
    pub fn patch_id(&self) -> String {
        let mut context = ring::digest::Context::new(&ring::digest::SHA256);
        context.update(self.path.as_bytes());
        context.update(b"\0");
        let mut in_hunk = false;
        for line in self.text.lines() {
            if line.starts_with("@@") {
                in_hunk = true;
                continue;
            }
            if !in_hunk {
                // Binary files have no hunks: their header line says what changed.
                if line.starts_with("Binary files ") || line.starts_with("GIT binary patch") {
                    context.update(line.as_bytes());
                }
                continue;
            }
            let Some(sign) = line.chars().next().filter(|c| matches!(c, '+' | '-')) else {
                continue;
            };
            let body: String = line[1..].chars().filter(|c| !c.is_whitespace()).collect();
            let mut buffer = [0; 4];
            context.update(sign.encode_utf8(&mut buffer).as_bytes());
            context.update(body.as_bytes());
            context.update(b"\n");
        }
        hex::encode(&context.finish().as_ref()[..12])
    }
}

/// The files of a unified diff, in its order. Text before the first `diff --git` line is ignored.
pub fn split(diff: &str) -> Vec<FileDiff> {
    let mut files = Vec::new();
    let mut current: Option<Builder> = None;
    for line in diff.split_inclusive('\n') {
        if let Some(header) = line.strip_prefix("diff --git ") {
            if let Some(done) = current.take() {
                files.push(done.finish());
            }
            current = Some(Builder::new(header.trim_end()));
        }
        if let Some(file) = current.as_mut() {
            file.line(line);
        }
    }
    if let Some(done) = current.take() {
        files.push(done.finish());
    }
    files
}

/// A file section being read.
struct Builder {
    file: FileDiff,
    /// From `--- a/…` (the old path) and `+++ b/…` (the new one), when the section has them.
    old: Option<String>,
    new: Option<String>,
    /// The next line number of the new file inside a hunk; `None` outside hunks.
    next_new: Option<u32>,
}

impl Builder {
    fn new(header: &str) -> Builder {
        // `a/x b/x`: the new path after the last ` b/` (paths with unusual characters are quoted).
        let (old, new) = header_paths(header);
        Builder {
            file: FileDiff {
                path: new.unwrap_or_default(),
                old_path: old,
                text: String::new(),
                added: BTreeSet::new(),
                removed_at: BTreeSet::new(),
                additions: 0,
                deletions: 0,
                binary: false,
                deleted: false,
            },
            old: None,
            new: None,
            next_new: None,
        }
    }

    fn line(&mut self, line: &str) {
        self.file.text.push_str(line);
        let content = line.trim_end_matches(['\n', '\r']);
        if let Some(hunk) = content.strip_prefix("@@") {
            self.next_new = new_start(hunk);
            return;
        }
        match self.next_new {
            Some(next) => match content.chars().next() {
                Some('+') => {
                    self.file.added.insert(next);
                    self.file.additions += 1;
                    self.next_new = Some(next + 1);
                }
                Some('-') => {
                    self.file.deletions += 1;
                    self.file.removed_at.insert(next);
                }
                Some('\\') => {}
                // Context (an empty line is context whose leading space an editor dropped).
                _ => self.next_new = Some(next + 1),
            },
            None => {
                if let Some(path) = content.strip_prefix("--- ") {
                    self.old = strip_side(path, "a/");
                } else if let Some(path) = content.strip_prefix("+++ ") {
                    self.new = strip_side(path, "b/");
                } else if content.starts_with("deleted file mode") {
                    self.file.deleted = true;
                } else if content.starts_with("Binary files ") || content.starts_with("GIT binary patch") {
                    self.file.binary = true;
                }
            }
        }
    }

    fn finish(mut self) -> FileDiff {
        if let Some(new) = self.new.take() {
            self.file.path = new;
        } else if self.file.deleted
            && let Some(old) = &self.old
        {
            self.file.path = old.clone();
        }
        let old = self.old.take().or(self.file.old_path.take());
        self.file.old_path = old.filter(|old| *old != self.file.path);
        self.file
    }
}

/// `+c,d` of a hunk header `@@ -a,b +c,d @@`: the new file's first line.
fn new_start(hunk: &str) -> Option<u32> {
    let plus = hunk.split_whitespace().find(|part| part.starts_with('+'))?;
    let start = plus.trim_start_matches('+').split(',').next()?;
    start.parse().ok()
}

/// The path of a `---`/`+++` line without its `a/`/`b/` side, `None` for `/dev/null`.
fn strip_side(path: &str, side: &str) -> Option<String> {
    let path = path.trim_end_matches('\t');
    if path == "/dev/null" {
        return None;
    }
    let path = unquote(path);
    Some(path.strip_prefix(side).map(str::to_owned).unwrap_or(path))
}

/// The old and new paths of a `diff --git a/x b/x` header.
fn header_paths(header: &str) -> (Option<String>, Option<String>) {
    if header.starts_with('"') {
        // Quoted: `"a/x y" "b/x y"`.
        let parts: Vec<&str> = header.split("\" \"").collect();
        if let [old, new] = parts.as_slice() {
            let old = unquote(&format!("{old}\""));
            let new = unquote(&format!("\"{new}"));
            return (
                old.strip_prefix("a/").map(str::to_owned),
                new.strip_prefix("b/").map(str::to_owned),
            );
        }
    }
    match header.rsplit_once(" b/") {
        Some((old, new)) => (old.strip_prefix("a/").map(str::to_owned), Some(new.to_owned())),
        None => (None, Some(header.to_owned())),
    }
}

/// A path as git writes it: C-quoted (`"caf\303\251.txt"`) when it has unusual characters.
fn unquote(text: &str) -> String {
    let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return text.to_owned();
    };
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.bytes().peekable();
    while let Some(byte) = chars.next() {
        if byte != b'\\' {
            bytes.push(byte);
            continue;
        }
        match chars.next() {
            Some(b'n') => bytes.push(b'\n'),
            Some(b't') => bytes.push(b'\t'),
            Some(digit @ b'0'..=b'7') => {
                let mut value = u32::from(digit - b'0');
                for _ in 0..2 {
                    if let Some(next @ b'0'..=b'7') = chars.peek().copied() {
                        value = value * 8 + u32::from(next - b'0');
                        chars.next();
                    }
                }
                bytes.push(u8::try_from(value).unwrap_or(b'?'));
            }
            Some(other) => bytes.push(other),
            None => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
index 1111111..2222222 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,4 +1,5 @@
 pub fn add(a: i32, b: i32) -> i32 {
-    a - b
+    a + b
+    // fixed
 }
 
@@ -10,3 +11,3 @@ fn other() {
 x
-y
+z
diff --git a/old name.txt b/new name.txt
similarity index 90%
rename from old name.txt
rename to new name.txt
--- a/old name.txt
+++ b/new name.txt
@@ -1 +1 @@
-hello
+hello world
diff --git a/gone.py b/gone.py
deleted file mode 100644
--- a/gone.py
+++ /dev/null
@@ -1,2 +0,0 @@
-print(1)
-print(2)
diff --git a/logo.png b/logo.png
new file mode 100644
Binary files /dev/null and b/logo.png differ
diff --git \"a/caf\\303\\251.txt\" \"b/caf\\303\\251.txt\"
new file mode 100644
--- /dev/null
+++ \"b/caf\\303\\251.txt\"
@@ -0,0 +1 @@
+bonjour
";

    #[test]
    fn files_with_their_added_lines_counts_and_kinds() {
        let files = split(DIFF);
        type Row<'a> = (&'a str, Option<&'a str>, Vec<u32>, u32, u32, bool, bool);
        let summary: Vec<Row<'_>> = files
            .iter()
            .map(|f| {
                (
                    f.path.as_str(),
                    f.old_path.as_deref(),
                    f.added.iter().copied().collect(),
                    f.additions,
                    f.deletions,
                    f.binary,
                    f.deleted,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("src/lib.rs", None, vec![2, 3, 12], 3, 2, false, false),
                ("new name.txt", Some("old name.txt"), vec![1], 1, 1, false, false),
                ("gone.py", None, vec![], 0, 2, false, true),
                ("logo.png", None, vec![], 0, 0, true, false),
                ("café.txt", None, vec![1], 1, 0, false, false),
            ]
        );
        assert!(files[0].text.starts_with("diff --git a/src/lib.rs") && files[0].text.ends_with("+z\n"));
        // `a - b` was removed before new line 2, `y` before new line 12.
        assert_eq!(files[0].removed_at.iter().copied().collect::<Vec<_>>(), [2, 12]);
        assert_eq!(files[0].touched().iter().copied().collect::<Vec<_>>(), [2, 3, 12]);
        assert_eq!(files.iter().map(|f| f.text.len()).sum::<usize>(), DIFF.len());
    }

    #[test]
    fn a_patch_id_ignores_where_the_change_sits_and_its_whitespace() {
        let at = |line: u32, indent: &str| {
            split(&format!(
                "diff --git a/a.rs b/a.rs\n--- a/a.rs\n+++ b/a.rs\n@@ -{line},3 +{line},3 @@\n ctx\n-{indent}old();\n+{indent}new();\n ctx\n"
            ))
            .remove(0)
        };
        assert_eq!(at(3, "    ").patch_id(), at(40, "\t").patch_id());
        let other = split(
            "diff --git a/a.rs b/a.rs\n--- a/a.rs\n+++ b/a.rs\n@@ -3,3 +3,3 @@\n ctx\n-old();\n+newer();\n ctx\n",
        )
        .remove(0);
        assert_ne!(at(3, "").patch_id(), other.patch_id());
        let elsewhere =
            split("diff --git a/b.rs b/b.rs\n--- a/b.rs\n+++ b/b.rs\n@@ -3,3 +3,3 @@\n ctx\n-old();\n+new();\n ctx\n")
                .remove(0);
        assert_ne!(at(3, "").patch_id(), elsewhere.patch_id(), "the path counts");
    }
}
