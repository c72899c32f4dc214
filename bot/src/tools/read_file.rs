//! `read_file`: a window of a text file, with line numbers, streamed so a huge file costs no memory;
//! records what it read for `edit_file` and `write_file`.

use std::io::{BufRead, BufReader, Cursor, Read};
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::files::{blocking, cut, io_error, numbered, plural, stat, thousands};
use super::reads::ContentHasher;
use super::{BoxFuture, Tool, ToolContext, ToolError, Workspace, parse_args};

/// Lines shown when the model gives no limit.
const DEFAULT_LIMIT: u64 = 2000;
/// Characters of one line shown; the rest is cut with a marker.
const MAX_LINE_CHARS: usize = 2000;
/// Bytes of one line kept while streaming: enough for `MAX_LINE_CHARS` characters of any width.
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;
/// The whole answer stays under this many bytes, whatever the limit (the loop never shortens a
/// paginated result, so the tool must).
const MAX_OUTPUT_BYTES: usize = 64 * 1024;
/// Bytes looked at for a NUL to decide that a file is binary.
const BINARY_SNIFF: u64 = 8 * 1024;

/// `read_file`: shows lines of a file with their numbers.
pub struct ReadFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }

    fn description(&self) -> &'static str {
        "Read a text file of the workspace. Returns its lines numbered like `cat -n` (the line number, a tab, the \
         line), followed by a note of which lines were shown, the file's total line count, and the offset to \
         continue from. Reads up to 2000 lines (and about 64 KB) per call from `offset` (1-based, default 1); use \
         offset and limit to page through long files rather than reading them whole. Lines over 2000 characters \
         are cut. Binary files are refused. The path is relative to the workspace root (absolute paths inside it \
         work too, as do the paths of saved tool outputs). Read a file before changing it with edit_file or \
         write_file; they refuse files you have not read, or that changed since. The line numbers are for \
         orientation only: never copy them into edit_file's old_string. For directories use list_dir."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the workspace root."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to show, 1-based. Default 1."},
                "limit": {"type": "integer", "minimum": 1, "description": "Most lines to show. Default 2000."}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn paginated(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            let offset = args.offset.unwrap_or(1);
            let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
            if offset == 0 {
                return Err(ToolError::respond("offset is 1-based: the first line is offset 1"));
            }
            if limit == 0 {
                return Err(ToolError::respond("limit must be at least 1"));
            }
            let workspace = ctx.workspace.clone();
            let (output, fingerprint) = blocking(move || {
                let path = workspace.resolve_read(&args.path)?;
                read(&workspace, &path, offset, limit)
            })
            .await?;
            if let Some((path, fingerprint)) = fingerprint {
                ctx.reads.record(path, fingerprint);
            }
            output
        })
    }
}

type Recorded = Option<(std::path::PathBuf, super::Fingerprint)>;

/// Reads the window; the fingerprint is returned even when the answer is an error about the window
/// (offset past the end), since the file was read whole either way.
fn read(
    workspace: &Workspace,
    path: &Path,
    offset: u64,
    limit: u64,
) -> Result<(Result<String, ToolError>, Recorded), ToolError> {
    let (shown, meta) = stat(workspace, path)?;
    if meta.is_dir() {
        return Err(ToolError::respond(format!(
            "`{shown}` is a directory; use list_dir to see what it holds"
        )));
    }
    if !meta.is_file() {
        // A FIFO or a device would block or never end.
        return Err(ToolError::respond(format!("`{shown}` is not a regular file")));
    }
    let modified = meta.modified().ok();
    let mut file = workspace.open(path).map_err(|err| io_error(&shown, &err))?;

    let mut head = Vec::with_capacity(BINARY_SNIFF as usize);
    (&mut file)
        .take(BINARY_SNIFF)
        .read_to_end(&mut head)
        .map_err(|err| io_error(&shown, &err))?;
    if head.contains(&0) {
        return Err(ToolError::respond(format!(
            "`{shown}` is a binary file ({} bytes); read_file shows text files only",
            thousands(meta.len())
        )));
    }
    let mut reader = Cursor::new(head).chain(BufReader::with_capacity(64 * 1024, file));

    let mut hasher = ContentHasher::default();
    let mut window = Window::new(offset, limit);
    let mut line = Vec::new();
    let mut line_bytes = 0usize;
    let mut number = 1u64;
    loop {
        let chunk = reader.fill_buf().map_err(|err| io_error(&shown, &err))?;
        if chunk.is_empty() {
            break;
        }
        hasher.update(chunk);
        let len = chunk.len();
        let mut rest = chunk;
        while !rest.is_empty() {
            let (piece, ends_line) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..i], true),
                None => (rest, false),
            };
            if window.wants(number) && line.len() < MAX_LINE_BYTES {
                line.extend_from_slice(&piece[..piece.len().min(MAX_LINE_BYTES - line.len())]);
            }
            line_bytes += piece.len();
            rest = &rest[piece.len() + usize::from(ends_line)..];
            if ends_line {
                window.push(number, &line, line_bytes);
                number += 1;
                line.clear();
                line_bytes = 0;
            }
        }
        reader.consume(len);
    }
    if line_bytes > 0 {
        window.push(number, &line, line_bytes);
        number += 1;
    }
    let total = number - 1;
    let fingerprint = hasher.finish(modified);
    let recorded = Some((path.to_path_buf(), fingerprint));

    let answer = if fingerprint.len == 0 {
        Ok(format!("`{shown}` is empty (0 bytes)"))
    } else if offset > total {
        Err(ToolError::respond(format!(
            "offset {offset} is past the end of `{shown}`, which has {}",
            plural(total, "line", "lines")
        )))
    } else {
        Ok(window.finish(total))
    };
    Ok((answer, recorded))
}

/// The lines being shown.
struct Window {
    first: u64,
    /// One past the last line wanted.
    end: u64,
    out: String,
    /// The last line shown.
    last: u64,
    /// The byte budget ran out before `end`.
    full: bool,
}

impl Window {
    fn new(first: u64, limit: u64) -> Self {
        Window {
            first,
            end: first.saturating_add(limit),
            out: String::new(),
            last: 0,
            full: false,
        }
    }

    fn wants(&self, number: u64) -> bool {
        !self.full && number >= self.first && number < self.end
    }

    fn push(&mut self, number: u64, kept: &[u8], full_len: usize) {
        if !self.wants(number) {
            return;
        }
        let text = String::from_utf8_lossy(kept);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        let rendered = if kept.len() < full_len {
            // Only the head of the line was kept: its length is known in bytes.
            let end = text.char_indices().nth(MAX_LINE_CHARS).map_or(text.len(), |(i, _)| i);
            format!(
                "{} … [line cut: {} bytes in total]",
                &text[..end],
                thousands(full_len as u64)
            )
        } else {
            cut(text, MAX_LINE_CHARS)
        };
        let rendered = numbered(number, &rendered);
        // Always show at least one line, or the model could never get past this one.
        if self.last != 0 && self.out.len() + rendered.len() + 1 > MAX_OUTPUT_BYTES {
            self.full = true;
            return;
        }
        self.out.push_str(&rendered);
        self.out.push('\n');
        self.last = number;
    }

    fn finish(mut self, total: u64) -> String {
        let (first, last) = (self.first, self.last);
        if last < total {
            let why = if self.full {
                "; output limit of about 64 KB reached"
            } else {
                ""
            };
            self.out.push_str(&format!(
                "(lines {first}-{last} of {}{why}; call again with offset={} for more)",
                thousands(total),
                last + 1
            ));
        } else {
            self.out
                .push_str(&format!("(lines {first}-{last} of {}; end of file)", thousands(total)));
        }
        self.out
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use serde_json::json;

    use super::*;
    use crate::tools::test_support::{call, context, message, workspace_with};

    async fn read(ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        call(&ReadFile, ctx, args).await
    }

    #[tokio::test]
    async fn shows_numbered_lines_and_where_to_continue() {
        let text: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        let (_dir, ctx) = workspace_with(&[("a.txt", &text)]);

        let all = read(&ctx, json!({"path": "a.txt"})).await.unwrap();
        assert!(all.starts_with("     1\tline 1\n     2\tline 2\n"), "{all}");
        assert!(
            all.ends_with("    12\tline 12\n(lines 1-12 of 12; end of file)"),
            "{all}"
        );

        let window = read(&ctx, json!({"path": "a.txt", "offset": 3, "limit": 2}))
            .await
            .unwrap();
        assert_eq!(
            window,
            "     3\tline 3\n     4\tline 4\n(lines 3-4 of 12; call again with offset=5 for more)"
        );

        let last = read(&ctx, json!({"path": "./a.txt", "offset": 12})).await.unwrap();
        assert_eq!(last, "    12\tline 12\n(lines 12-12 of 12; end of file)");

        assert_eq!(
            message(read(&ctx, json!({"path": "a.txt", "offset": 13})).await),
            "offset 13 is past the end of `a.txt`, which has 12 lines"
        );
        assert!(message(read(&ctx, json!({"path": "a.txt", "offset": 0})).await).contains("1-based"));
        assert!(message(read(&ctx, json!({"path": "a.txt", "limit": 0})).await).contains("at least 1"));
        assert!(ctx.reads.get(&ctx.workspace.root().join("a.txt")).is_some());
    }

    #[tokio::test]
    async fn default_limit_is_2000_lines() {
        let text: String = (1..=5234).map(|i| format!("{i}\n")).collect();
        let (_dir, ctx) = workspace_with(&[("long.txt", &text)]);
        let out = read(&ctx, json!({"path": "long.txt"})).await.unwrap();
        assert_eq!(out.lines().count(), 2001);
        assert!(
            out.ends_with("  2000\t2000\n(lines 1-2000 of 5,234; call again with offset=2001 for more)"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn output_stays_under_the_byte_budget() {
        let line = "x".repeat(1000);
        let text: String = (0..500).map(|_| format!("{line}\n")).collect();
        let (_dir, ctx) = workspace_with(&[("wide.txt", &text)]);
        let out = read(&ctx, json!({"path": "wide.txt"})).await.unwrap();
        assert!(out.len() <= MAX_OUTPUT_BYTES + 200, "{}", out.len());
        let last = out.lines().last().unwrap();
        assert!(last.starts_with("(lines 1-6"), "{last}");
        assert!(
            last.contains("of 500; output limit of about 64 KB reached; call again with offset=6"),
            "{last}"
        );
    }

    #[tokio::test]
    async fn huge_lines_are_cut() {
        let huge = "é".repeat(1_000_000);
        let (dir, ctx) = workspace_with(&[("min.js", &format!("short\n{huge}\nafter"))]);
        let out = read(&ctx, json!({"path": "min.js"})).await.unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "     1\tshort");
        assert!(lines[1].starts_with("     2\téé"));
        assert!(
            lines[1].ends_with("é … [line cut: 2,000,000 bytes in total]"),
            "{}",
            &lines[1][lines[1].len() - 60..]
        );
        assert_eq!(lines[1].chars().filter(|&c| c == 'é').count(), MAX_LINE_CHARS);
        assert_eq!(lines[2], "     3\tafter");
        assert_eq!(lines[3], "(lines 1-3 of 3; end of file)");

        fs::write(dir.path().join("medium.txt"), "a".repeat(2500)).unwrap();
        let out = read(&ctx, json!({"path": "medium.txt"})).await.unwrap();
        assert!(
            out.contains(&format!("{} … [line cut: 2,500 chars in total]\n", "a".repeat(2000))),
            "{out}"
        );
    }

    #[tokio::test]
    async fn odd_files() {
        let (dir, ctx) = workspace_with(&[
            ("empty", ""),
            ("crlf.txt", "one\r\ntwo\r\n"),
            ("no_newline.txt", "a\nb"),
        ]);
        let root = dir.path();
        fs::write(root.join("blob.bin"), [1u8, 2, 0, 3]).unwrap();
        fs::write(root.join("latin1.txt"), b"caf\xe9\n").unwrap();
        fs::create_dir(root.join("dir")).unwrap();

        assert_eq!(
            read(&ctx, json!({"path": "empty"})).await.unwrap(),
            "`empty` is empty (0 bytes)"
        );
        assert!(ctx.reads.get(&ctx.workspace.root().join("empty")).is_some());
        assert_eq!(
            message(read(&ctx, json!({"path": "blob.bin"})).await),
            "`blob.bin` is a binary file (4 bytes); read_file shows text files only"
        );
        assert_eq!(
            read(&ctx, json!({"path": "crlf.txt"})).await.unwrap(),
            "     1\tone\n     2\ttwo\n(lines 1-2 of 2; end of file)"
        );
        assert_eq!(
            read(&ctx, json!({"path": "latin1.txt"})).await.unwrap(),
            "     1\tcaf\u{fffd}\n(lines 1-1 of 1; end of file)"
        );
        assert!(
            read(&ctx, json!({"path": "no_newline.txt"}))
                .await
                .unwrap()
                .ends_with("(lines 1-2 of 2; end of file)")
        );
        assert_eq!(
            message(read(&ctx, json!({"path": "dir"})).await),
            "`dir` is a directory; use list_dir to see what it holds"
        );
        assert_eq!(
            message(read(&ctx, json!({"path": "missing.txt"})).await),
            "`missing.txt` does not exist"
        );
    }

    #[tokio::test]
    async fn paths_outside_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        fs::create_dir(&root).unwrap();
        fs::write(dir.path().join("secret"), "s").unwrap();
        symlink("/etc/passwd", root.join("passwd")).unwrap();
        symlink(dir.path(), root.join("parent")).unwrap();
        symlink("self", root.join("self")).unwrap();
        let ctx = context(&root);

        assert_eq!(
            message(read(&ctx, json!({"path": "../secret"})).await),
            "`../secret` is outside the workspace"
        );
        assert_eq!(
            message(read(&ctx, json!({"path": "/etc/passwd"})).await),
            "`/etc/passwd` is outside the workspace"
        );
        assert_eq!(
            message(read(&ctx, json!({"path": "passwd"})).await),
            "`passwd` is a symlink to /etc/passwd, outside the workspace"
        );
        assert!(message(read(&ctx, json!({"path": "parent/secret"})).await).contains("outside the workspace"));
        assert!(message(read(&ctx, json!({"path": "self"})).await).contains("symlink loop"));
        assert_eq!(message(read(&ctx, json!({"path": ""})).await), "the path is empty");
    }

    #[tokio::test]
    async fn read_roots_are_readable() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        let run = dir.path().join("run");
        fs::create_dir(&root).unwrap();
        fs::create_dir(&run).unwrap();
        fs::write(run.join("call_1.txt"), "saved output\n").unwrap();
        let mut ctx = context(&root);
        ctx.workspace = ctx.workspace.clone().with_read_root(&run).unwrap();
        let saved = run.canonicalize().unwrap().join("call_1.txt");
        let out = read(&ctx, json!({"path": saved.to_str().unwrap()})).await.unwrap();
        assert_eq!(out, "     1\tsaved output\n(lines 1-1 of 1; end of file)");
    }
}
