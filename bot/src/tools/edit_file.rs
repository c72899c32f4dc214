//! `edit_file`: exact string replacement in a file the model has read, keeping the file's line
//! endings; when the string is not there, it points at the most similar lines.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::files::{blocking, cut, io_error, numbered, plural};
use super::reads::{Fingerprint, modified};
use super::{BoxFuture, Tool, ToolContext, ToolError, parse_args};

/// Lines of context shown around an edit.
const CONTEXT: usize = 3;
/// Edited regions shown after a `replace_all`.
const MAX_REGIONS: usize = 3;
/// Lines of one edited region shown; the middle of a longer one is elided.
const MAX_REGION_LINES: usize = 40;
/// Line numbers listed when `old_string` is ambiguous.
const MAX_LISTED: usize = 100;
/// Lines of `old_string` compared when looking for the most similar region.
const PROBE_LINES: usize = 8;
/// Below this average similarity, nothing in the file is offered as "closest".
const MIN_SIMILARITY: f64 = 0.4;

/// `edit_file`: replaces exact text in a file.
pub struct EditFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    old_string: String,
    new_string: String,
    replace_all: Option<bool>,
}

impl Tool for EditFile {
    fn name(&self) -> &'static str {
        "edit_file"
    }

    fn description(&self) -> &'static str {
        "Edit a file by replacing exact text: old_string must appear in the file exactly as given, character for \
         character, including whitespace and indentation (copy it from read_file's output without the line \
         number and tab prefix). It must be unique in the file unless replace_all is true: include enough \
         surrounding lines to make it unique. The file must have been read with read_file in this run and not \
         changed since (read it again after other tools, such as bash, may have changed it). The file's line \
         endings (LF or CRLF) are kept. Returns the number of replacements and the edited lines with their new \
         line numbers; if old_string is not found, the error shows the most similar lines of the file. To create \
         a file or replace all of it, use write_file."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the workspace root."},
                "old_string": {"type": "string", "description": "The exact text to replace; not empty."},
                "new_string": {"type": "string", "description": "The text to put in its place; may be empty to delete."},
                "replace_all": {
                    "type": "boolean",
                    "description": "Replace every occurrence instead of requiring exactly one. Default false."
                }
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let Args {
                path,
                old_string,
                new_string,
                replace_all,
            } = parse_args(self.name(), args)?;
            if old_string.is_empty() {
                return Err(ToolError::respond(
                    "old_string is empty; to create a file or replace all of its content, use write_file",
                ));
            }
            if old_string == new_string {
                return Err(ToolError::respond(
                    "old_string and new_string are the same; the edit would change nothing",
                ));
            }
            let workspace = ctx.workspace.clone();
            let (path, bytes, current) = blocking(move || {
                let path = workspace.resolve_write(&path)?;
                let shown = workspace.display(&path);
                let meta = workspace.metadata(&path).map_err(|err| match err.kind() {
                    std::io::ErrorKind::NotFound => {
                        ToolError::respond(format!("`{shown}` does not exist; create it with write_file"))
                    }
                    _ => io_error(&shown, &err),
                })?;
                if !meta.is_file() {
                    return Err(ToolError::respond(format!("`{shown}` is not a regular file")));
                }
                let mut bytes = Vec::new();
                workspace
                    .open(&path)
                    .and_then(|mut file| std::io::Read::read_to_end(&mut file, &mut bytes))
                    .map_err(|err| io_error(&shown, &err))?;
                let current = Fingerprint::of_bytes(&bytes, meta.modified().ok());
                Ok((path, bytes, current))
            })
            .await?;
            let shown = ctx.workspace.display(&path);
            ctx.reads.check_unchanged(&path, &current, &shown)?;
            let text = String::from_utf8(bytes).map_err(|_| {
                ToolError::respond(format!(
                    "`{shown}` is not valid UTF-8 text, so edit_file cannot change it safely; use bash for binary \
                     or non-UTF-8 files"
                ))
            })?;

            let (message, fingerprint) = {
                let path = path.clone();
                let workspace = ctx.workspace.clone();
                blocking(move || {
                    let edit = apply(&text, &old_string, &new_string, replace_all.unwrap_or(false), &shown)?;
                    workspace
                        .write(&path, edit.content.as_bytes())
                        .map_err(|err| io_error(&shown, &err))?;
                    Ok((
                        edit.message,
                        Fingerprint::of_bytes(edit.content.as_bytes(), modified(&workspace, &path)),
                    ))
                })
                .await?
            };
            ctx.file_changed(&path);
            ctx.reads.record(path, fingerprint);
            Ok(message)
        })
    }
}

/// A successful edit: the new content and the message for the model.
#[derive(Debug)]
struct Edit {
    content: String,
    message: String,
}

fn apply(text: &str, old: &str, new: &str, replace_all: bool, shown: &str) -> Result<Edit, ToolError> {
    let crlf = is_crlf(text);
    let (old, new) = variants(old, new, crlf)
        .into_iter()
        .find(|(old, _)| text.contains(old.as_str()))
        .ok_or_else(|| not_found(text, old, shown))?;

    let starts: Vec<usize> = text.match_indices(old.as_str()).map(|(i, _)| i).collect();
    let lines = LineIndex::new(text);
    if starts.len() > 1 && !replace_all {
        let numbers: Vec<String> = starts
            .iter()
            .take(MAX_LISTED)
            .map(|&i| lines.number(i).to_string())
            .collect();
        let more = starts.len().saturating_sub(MAX_LISTED);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        return Err(ToolError::respond(format!(
            "old_string occurs {} times in `{shown}`, at lines {}{more}; include more of the surrounding lines \
             to make it unique, or set replace_all to true to replace every occurrence",
            starts.len(),
            numbers.join(", ")
        )));
    }

    let mut content = String::with_capacity(text.len() + starts.len() * new.len());
    let mut placed = Vec::with_capacity(starts.len());
    let mut last = 0;
    for &start in &starts {
        content.push_str(&text[last..start]);
        placed.push(content.len());
        content.push_str(&new);
        last = start + old.len();
    }
    content.push_str(&text[last..]);
    if text.ends_with('\n') && !content.is_empty() && !content.ends_with('\n') {
        content.push_str(if crlf { "\r\n" } else { "\n" });
    }

    let index = LineIndex::new(&content);
    let regions: Vec<(usize, usize)> = placed
        .iter()
        .map(|&at| {
            let first = index.number(at);
            let last = if new.is_empty() {
                first
            } else {
                index.number(at + new.len() - 1)
            };
            (first, last)
        })
        .collect();
    let count = plural(starts.len() as u64, "occurrence", "occurrences");
    let message = format!(
        "Replaced {count} in `{shown}`. The edited lines now read:\n{}",
        show_regions(&content, &regions)
    );
    Ok(Edit { content, message })
}

/// More than half the line endings are CRLF.
fn is_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    crlf > 0 && crlf * 2 >= text.matches('\n').count()
}

/// The strings to try, in order: the model writes `\n`, so in a CRLF file its text is tried with CRLF
/// first; an LF file given CRLF text gets the LF form as a fallback.
fn variants(old: &str, new: &str, crlf: bool) -> Vec<(String, String)> {
    let lf = |s: &str| s.replace("\r\n", "\n");
    let as_crlf = |s: &str| lf(s).replace('\n', "\r\n");
    let given = (old.to_owned(), new.to_owned());
    if crlf {
        vec![(as_crlf(old), as_crlf(new)), given]
    } else if old.contains("\r\n") {
        vec![given, (lf(old), lf(new))]
    } else {
        vec![given]
    }
}

/// Byte offsets of line starts, for turning offsets into 1-based line numbers.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        LineIndex { starts }
    }

    fn number(&self, offset: usize) -> usize {
        self.starts.partition_point(|&start| start <= offset)
    }
}

/// The edited regions (1-based, inclusive) with context, merged where they touch.
fn show_regions(content: &str, regions: &[(usize, usize)]) -> String {
    let lines: Vec<&str> = content.lines().collect();
    if lines.is_empty() {
        return "(the file is now empty)".to_owned();
    }
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for &(first, last) in regions {
        let from = first.saturating_sub(CONTEXT).max(1);
        let to = (last + CONTEXT).min(lines.len());
        match merged.last_mut() {
            Some(previous) if from <= previous.1 + 1 => previous.1 = previous.1.max(to),
            _ => merged.push((from, to)),
        }
    }
    let mut out = Vec::new();
    for (i, &(from, to)) in merged.iter().take(MAX_REGIONS).enumerate() {
        if i > 0 {
            out.push("…".to_owned());
        }
        out.extend(numbered_range(&lines, from, to, MAX_REGION_LINES));
    }
    if merged.len() > MAX_REGIONS {
        out.push(format!(
            "… and {} more edited regions not shown",
            merged.len() - MAX_REGIONS
        ));
    }
    out.join("\n")
}

/// Lines `from..=to` (1-based) numbered; a longer range keeps its head and tail.
fn numbered_range(lines: &[&str], from: usize, to: usize, max: usize) -> Vec<String> {
    let show = |n: usize| numbered(n as u64, &cut(lines[n - 1], 500));
    if to + 1 - from <= max {
        return (from..=to).map(show).collect();
    }
    let half = max / 2;
    let mut out: Vec<String> = (from..from + half).map(show).collect();
    out.push(format!("… ({} lines not shown)", to + 1 - from - 2 * half));
    out.extend((to + 1 - half..=to).map(show));
    out
}

/// The error for text that is not in the file, pointing at the most similar lines.
fn not_found(text: &str, old: &str, shown: &str) -> ToolError {
    let mut message = format!("old_string was not found in `{shown}`.");
    if has_line_numbers(old) {
        message.push_str(
            " It seems to include the line numbers read_file shows (a number and a tab at the start of each \
             line); leave them out, old_string must be the file's text only.",
        );
    }
    let lines: Vec<&str> = text.lines().collect();
    match closest(&lines, old) {
        Some(found) if found.whitespace_only => {
            message.push_str(&format!(
                " Lines {}-{} match it except for whitespace: indentation and spacing must match exactly. They \
                 read:\n{}",
                found.start + 1,
                found.start + found.len,
                closest_snippet(&lines, &found)
            ));
        }
        Some(found) if found.score >= MIN_SIMILARITY => {
            message.push_str(&format!(
                " The most similar lines are {}-{}:\n{}\nWhitespace, indentation and every character must match \
                 exactly; if the file may have changed, read it again.",
                found.start + 1,
                found.start + found.len,
                closest_snippet(&lines, &found)
            ));
        }
        _ => message.push_str(" Nothing in the file resembles it; read the file again to see its current content."),
    }
    ToolError::respond(message)
}

/// Every non-blank line starts with digits and a tab, as read_file's output does.
fn has_line_numbers(old: &str) -> bool {
    let mut lines = old.lines().filter(|l| !l.trim().is_empty()).peekable();
    lines.peek().is_some()
        && lines.all(|line| {
            let rest = line.trim_start_matches(' ');
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            digits > 0 && rest[digits..].starts_with('\t')
        })
}

/// The region of the file most like the wanted text: 0-based first line, length in lines.
#[derive(Debug)]
struct Closest {
    start: usize,
    len: usize,
    /// Average similarity of the compared lines, 0 to 1.
    score: f64,
    /// Every line equal once trimmed.
    whitespace_only: bool,
}

/// Slides the first lines of the wanted text over the file, scoring each position by the similarity of
/// trimmed lines (Dice coefficient of character bigrams); cheap enough for large files.
fn closest(lines: &[&str], old: &str) -> Option<Closest> {
    let want: Vec<&str> = old.lines().collect();
    if lines.is_empty() || want.iter().all(|l| l.trim().is_empty()) {
        return None;
    }
    let probe = want.len().min(PROBE_LINES);
    let file_grams: Vec<Vec<(char, char)>> = lines.iter().map(|l| bigrams(l.trim())).collect();
    let want_grams: Vec<Vec<(char, char)>> = want[..probe].iter().map(|l| bigrams(l.trim())).collect();
    let mut best: Option<(usize, f64)> = None;
    for start in 0..lines.len() {
        let total: f64 = (0..probe)
            .filter(|j| start + j < lines.len())
            .map(|j| {
                similarity(
                    lines[start + j].trim(),
                    want[j].trim(),
                    &file_grams[start + j],
                    &want_grams[j],
                )
            })
            .sum();
        let score = total / probe as f64;
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((start, score));
        }
    }
    let (start, score) = best?;
    let len = want.len().min(lines.len() - start);
    let whitespace_only =
        want.len() <= lines.len() - start && want.iter().zip(&lines[start..]).all(|(w, l)| w.trim() == l.trim());
    Some(Closest {
        start,
        len,
        score,
        whitespace_only,
    })
}

fn bigrams(text: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = text.chars().collect();
    let mut grams: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    grams.sort_unstable();
    grams.dedup();
    grams
}

fn similarity(a: &str, b: &str, a_grams: &[(char, char)], b_grams: &[(char, char)]) -> f64 {
    if a == b {
        return 1.0;
    }
    if a_grams.is_empty() || b_grams.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a_grams.len() && j < b_grams.len() {
        match a_grams[i].cmp(&b_grams[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * common as f64 / (a_grams.len() + b_grams.len()) as f64
}

fn closest_snippet(lines: &[&str], found: &Closest) -> String {
    let from = found.start.saturating_sub(2) + 1;
    let to = (found.start + found.len + 2).min(lines.len());
    numbered_range(lines, from, to, 24).join("\n")
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use serde_json::json;

    use super::*;
    use crate::tools::ReadFile;
    use crate::tools::test_support::{call, message, workspace_with};

    /// A workspace holding `name` with `content`, already read.
    async fn with_file(name: &str, content: &str) -> (tempfile::TempDir, ToolContext) {
        let (dir, ctx) = workspace_with(&[(name, content)]);
        call(&ReadFile, &ctx, json!({"path": name})).await.unwrap();
        (dir, ctx)
    }

    async fn edit(ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        call(&EditFile, ctx, args).await
    }

    fn numbered_file(lines: usize) -> String {
        (1..=lines).map(|i| format!("line {i}\n")).collect()
    }

    #[tokio::test]
    async fn replaces_one_occurrence_and_shows_the_region() {
        let (dir, ctx) = with_file("a.txt", &numbered_file(20)).await;
        let out = edit(
            &ctx,
            json!({"path": "a.txt", "old_string": "line 10\n", "new_string": "ten\nTEN\n"}),
        )
        .await
        .unwrap();
        assert_eq!(
            out,
            "Replaced 1 occurrence in `a.txt`. The edited lines now read:\n     7\tline 7\n     8\tline 8\n     \
             9\tline 9\n    10\tten\n    11\tTEN\n    12\tline 11\n    13\tline 12\n    14\tline 13"
        );
        let text = fs::read_to_string(dir.path().join("a.txt")).unwrap();
        assert!(text.contains("line 9\nten\nTEN\nline 11\n"));
        // The tool's own write counts as read: a second edit needs no read_file.
        edit(&ctx, json!({"path": "a.txt", "old_string": "TEN", "new_string": "10"}))
            .await
            .unwrap();
        assert!(
            fs::read_to_string(dir.path().join("a.txt"))
                .unwrap()
                .contains("ten\n10\nline 11\n")
        );
    }

    #[tokio::test]
    async fn ambiguous_text_lists_every_line() {
        let (dir, ctx) = with_file("a.rs", "let x = 1;\nfoo();\nlet y = 2;\nfoo();\n\nfoo();\n").await;
        let refused = message(
            edit(
                &ctx,
                json!({"path": "a.rs", "old_string": "foo();", "new_string": "bar();"}),
            )
            .await,
        );
        assert_eq!(
            refused,
            "old_string occurs 3 times in `a.rs`, at lines 2, 4, 6; include more of the surrounding lines to make \
             it unique, or set replace_all to true to replace every occurrence"
        );
        let out = edit(
            &ctx,
            json!({"path": "a.rs", "old_string": "foo();", "new_string": "bar();", "replace_all": true}),
        )
        .await
        .unwrap();
        assert!(out.starts_with("Replaced 3 occurrences in `a.rs`."), "{out}");
        assert_eq!(
            fs::read_to_string(dir.path().join("a.rs")).unwrap(),
            "let x = 1;\nbar();\nlet y = 2;\nbar();\n\nbar();\n"
        );
    }

    #[tokio::test]
    async fn missing_text_shows_the_closest_lines() {
        let source = "fn main() {\n    let total = compute(1, 2);\n    println!(\"{total}\");\n}\n\nfn compute(a: u32, b: u32) -> u32 {\n    a + b\n}\n";
        let (_dir, ctx) = with_file("main.rs", source).await;

        let refused = message(
            edit(&ctx, json!({"path": "main.rs", "old_string": "fn compute(a: u32, b: u64) -> u32 {\n    a + b", "new_string": "x"}))
                .await,
        );
        assert!(
            refused.starts_with("old_string was not found in `main.rs`. The most similar lines are 6-7:\n"),
            "{refused}"
        );
        assert!(
            refused.contains("     6\tfn compute(a: u32, b: u32) -> u32 {\n     7\t    a + b\n"),
            "{refused}"
        );
        assert!(
            refused.contains("Whitespace, indentation and every character must match exactly"),
            "{refused}"
        );

        let refused = message(
            edit(&ctx, json!({"path": "main.rs", "old_string": "  let total = compute(1, 2);\n  println!(\"{total}\");", "new_string": "x"}))
                .await,
        );
        assert!(
            refused.contains("Lines 2-3 match it except for whitespace"),
            "{refused}"
        );
        assert!(refused.contains("     2\t    let total = compute(1, 2);"), "{refused}");

        let refused = message(
            edit(
                &ctx,
                json!({"path": "main.rs", "old_string": "     7\t    a + b", "new_string": "a - b"}),
            )
            .await,
        );
        assert!(
            refused.contains("include the line numbers read_file shows"),
            "{refused}"
        );

        let refused = message(
            edit(
                &ctx,
                json!({"path": "main.rs", "old_string": "zzzzqqqq xxxx", "new_string": "y"}),
            )
            .await,
        );
        assert!(refused.ends_with("Nothing in the file resembles it; read the file again to see its current content."));
    }

    #[tokio::test]
    async fn needs_a_fresh_read() {
        let (dir, ctx) = workspace_with(&[("a.txt", "hello\n")]);
        let args = json!({"path": "a.txt", "old_string": "hello", "new_string": "bye"});
        assert!(message(edit(&ctx, args.clone()).await).contains("has not been read in this run"));
        call(&ReadFile, &ctx, json!({"path": "a.txt"})).await.unwrap();
        fs::write(dir.path().join("a.txt"), "hello world\n").unwrap();
        assert!(message(edit(&ctx, args.clone()).await).starts_with("`a.txt` changed since you read it"));
        assert_eq!(fs::read_to_string(dir.path().join("a.txt")).unwrap(), "hello world\n");
        call(&ReadFile, &ctx, json!({"path": "a.txt"})).await.unwrap();
        edit(&ctx, args).await.unwrap();
        assert_eq!(fs::read_to_string(dir.path().join("a.txt")).unwrap(), "bye world\n");
    }

    #[tokio::test]
    async fn line_endings_are_kept() {
        let (dir, ctx) = with_file("win.txt", "one\r\ntwo\r\nthree\r\n").await;
        let out = edit(
            &ctx,
            json!({"path": "win.txt", "old_string": "one\ntwo\n", "new_string": "uno\ndos\ntres\n"}),
        )
        .await
        .unwrap();
        assert!(
            out.contains("     1\tuno\n     2\tdos\n     3\ttres\n     4\tthree"),
            "{out}"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("win.txt")).unwrap(),
            "uno\r\ndos\r\ntres\r\nthree\r\n"
        );

        // Removing the last line's text keeps the file ending in a newline.
        let (dir, ctx) = with_file("unix.txt", "a\nb\n").await;
        edit(
            &ctx,
            json!({"path": "unix.txt", "old_string": "b\n", "new_string": "c"}),
        )
        .await
        .unwrap();
        assert_eq!(fs::read_to_string(dir.path().join("unix.txt")).unwrap(), "a\nc\n");
        let (dir, ctx) = with_file("bare.txt", "a\nb").await;
        edit(&ctx, json!({"path": "bare.txt", "old_string": "b", "new_string": "c"}))
            .await
            .unwrap();
        assert_eq!(fs::read_to_string(dir.path().join("bare.txt")).unwrap(), "a\nc");
    }

    #[tokio::test]
    async fn bad_requests_are_refused() {
        let (dir, ctx) = with_file("a.txt", "text\n").await;
        let root = ctx.workspace.root().to_path_buf();
        assert!(
            message(edit(&ctx, json!({"path": "a.txt", "old_string": "", "new_string": "x"})).await)
                .contains("use write_file")
        );
        assert!(
            message(edit(&ctx, json!({"path": "a.txt", "old_string": "t", "new_string": "t"})).await)
                .contains("the same")
        );
        assert_eq!(
            message(edit(&ctx, json!({"path": "nope.txt", "old_string": "a", "new_string": "b"})).await),
            "`nope.txt` does not exist; create it with write_file"
        );
        fs::write(root.join("bin"), b"\xff\xfe\n").unwrap();
        call(&ReadFile, &ctx, json!({"path": "bin"})).await.unwrap();
        assert!(
            message(edit(&ctx, json!({"path": "bin", "old_string": "a", "new_string": "b"})).await)
                .contains("not valid UTF-8")
        );
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::write(root.join(".git/config"), "[core]\n").unwrap();
        call(&ReadFile, &ctx, json!({"path": ".git/config"})).await.unwrap();
        assert!(
            message(
                edit(
                    &ctx,
                    json!({"path": ".git/config", "old_string": "core", "new_string": "x"})
                )
                .await
            )
            .contains("inside .git")
        );
        symlink("/etc/passwd", root.join("passwd")).unwrap();
        assert!(
            message(edit(&ctx, json!({"path": "passwd", "old_string": "root", "new_string": "x"})).await)
                .contains("outside the workspace")
        );
        let missing = message(edit(&ctx, json!({"path": "a.txt", "old_string": "x"})).await);
        assert_eq!(missing, "invalid arguments for `edit_file`: missing field `new_string`");
        assert_eq!(fs::read_to_string(dir.path().join("a.txt")).unwrap(), "text\n");
    }

    #[test]
    fn closest_region_handles_large_files_quickly() {
        let text: String = (0..50_000)
            .map(|i| format!("    let value_{i} = compute({i});\n"))
            .collect();
        let lines: Vec<&str> = text.lines().collect();
        let started = std::time::Instant::now();
        let found = closest(
            &lines,
            "let value_41234 = compute(4123);\nlet value_41235 = compute(41235);",
        )
        .unwrap();
        assert_eq!(found.start, 41234);
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
}
