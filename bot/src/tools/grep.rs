//! `grep`: regex search over the workspace with ripgrep's engine (`grep-regex`, `grep-searcher`,
//! `ignore`): .gitignore honoured, binary files skipped, output in path order and capped.

use std::io;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::files::{blocking, cut, plural, stat, thousands, walker};
use super::{BoxFuture, Tool, ToolContext, ToolError, Workspace, parse_args};

const DEFAULT_LIMIT: usize = 200;
const MAX_LIMIT: usize = 2000;
const MAX_CONTEXT: usize = 10;
/// Characters of a matching line shown (minified files have enormous lines).
const MAX_LINE_CHARS: usize = 500;

/// `grep`: searches file contents with a regular expression.
pub struct Grep;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Mode {
    #[default]
    Content,
    Files,
    Count,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    ignore_case: Option<bool>,
    context: Option<usize>,
    mode: Option<Mode>,
    limit: Option<usize>,
}

impl Tool for Grep {
    fn name(&self) -> &'static str {
        "grep"
    }

    fn description(&self) -> &'static str {
        "Search file contents with a regular expression (Rust regex syntax, as in ripgrep: escape literal \
         characters such as `(`, `.` and `{`; a match never spans lines). Searches the whole workspace or the \
         file or directory given as path; files ignored by .gitignore, the .git directory and binary files are \
         skipped. glob restricts the files searched, as in ripgrep's -g: `*.rs` matches file names at any depth, \
         `src/**/*.py` matches paths from the workspace root, and a leading `!` excludes. mode `content` (the \
         default) returns `path:line:text` for each matching line, with `path-line-text` for context lines and \
         `--` between separate groups; `files` returns only the paths of matching files; `count` returns \
         `path:count` per file. Results are in path order, with paths relative to the workspace root, and stop \
         after `limit` output lines (default 200), saying how many more there are. Prefer this to running grep \
         or rg with bash."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The regular expression to search for."},
                "path": {"type": "string", "description": "File or directory to search. Default: the workspace root."},
                "glob": {"type": "string", "description": "Only search files matching this glob, e.g. `*.rs` or `src/**/*.py`."},
                "ignore_case": {"type": "boolean", "description": "Match case-insensitively. Default false."},
                "context": {
                    "type": "integer", "minimum": 0, "maximum": MAX_CONTEXT,
                    "description": "Lines of context shown before and after each match (content mode). Default 0."
                },
                "mode": {
                    "type": "string", "enum": ["content", "files", "count"],
                    "description": "What to return: matching lines (default), file paths, or counts per file."
                },
                "limit": {
                    "type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                    "description": "Most output lines returned. Default 200."
                }
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
            if !(1..=MAX_LIMIT).contains(&limit) {
                return Err(ToolError::respond(format!("limit must be between 1 and {MAX_LIMIT}")));
            }
            let context = args.context.unwrap_or(0);
            if context > MAX_CONTEXT {
                return Err(ToolError::respond(format!("context must be at most {MAX_CONTEXT}")));
            }
            let matcher = RegexMatcherBuilder::new()
                .case_insensitive(args.ignore_case.unwrap_or(false))
                // Matches stay within a line, as in ripgrep without --multiline.
                .line_terminator(Some(b'\n'))
                .build(&args.pattern)
                .map_err(|err| ToolError::respond(format!("invalid regex `{}`: {err}", args.pattern)))?;
            let workspace = ctx.workspace.clone();
            let cancel = ctx.cancel.clone();
            blocking(move || {
                let search = Search {
                    workspace: &workspace,
                    cancel: &cancel,
                    matcher: &matcher,
                    mode: args.mode.unwrap_or_default(),
                    context,
                    limit,
                };
                search.run(&args.pattern, args.path.as_deref().unwrap_or("."), args.glob.as_deref())
            })
            .await
        })
    }
}

struct Search<'a> {
    workspace: &'a Workspace,
    /// Checked between files: a search of a large tree should not outlive the run.
    cancel: &'a CancellationToken,
    matcher: &'a RegexMatcher,
    mode: Mode,
    context: usize,
    limit: usize,
}

/// One line of output for a file.
enum Line {
    Match(u64, String),
    Context(u64, String),
    Break,
}

impl Search<'_> {
    fn run(&self, pattern: &str, path: &str, glob: Option<&str>) -> Result<String, ToolError> {
        let root = self.workspace.resolve_read(path)?;
        let (shown_root, _) = stat(self.workspace, &root)?;

        let mut walk = walker(&root);
        if let Some(glob) = glob {
            // Globs with a slash are anchored where .gitignore patterns would be: the workspace root
            // (or the searched directory when it lies outside, in a read root).
            let base = if root.starts_with(self.workspace.root()) {
                self.workspace.root()
            } else {
                &root
            };
            let mut overrides = OverrideBuilder::new(base);
            overrides
                .add(glob)
                .map_err(|err| ToolError::respond(format!("invalid glob `{glob}`: {err}")))?;
            let overrides = overrides
                .build()
                .map_err(|err| ToolError::respond(format!("invalid glob `{glob}`: {err}")))?;
            walk.overrides(overrides);
        }
        let context = if self.mode == Mode::Content { self.context } else { 0 };
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(context)
            .after_context(context)
            .binary_detection(BinaryDetection::quit(0))
            .build();

        let mut out: Vec<String> = Vec::new();
        // Matching lines and files past the limit, which are counted but not shown.
        let (mut hidden_lines, mut hidden_files) = (0u64, 0u64);
        let (mut total_lines, mut total_files) = (0u64, 0u64);
        for entry in walk.build() {
            if self.cancel.is_cancelled() {
                return Err(ToolError::respond("the search was cancelled"));
            }
            let Ok(entry) = entry else { continue };
            // Symlinks are never followed: one could lead outside the workspace.
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let room = self.limit.saturating_sub(out.len());
            let mut sink = Collect {
                keep: if self.mode == Mode::Content { room } else { 0 },
                ..Collect::new(self.mode)
            };
            // Opened below the workspace's handle, and only if it is the file the listing named.
            let Some(file) = self.workspace.confirm(entry.path(), entry.ino(), true) else {
                continue;
            };
            if searcher.search_file(self.matcher, &file, &mut sink).is_err() || sink.binary || sink.matches == 0 {
                continue;
            }
            total_lines += sink.matches;
            total_files += 1;
            let shown = self.workspace.display(entry.path());
            match self.mode {
                Mode::Content => {
                    if room == 0 {
                        hidden_lines += sink.matches;
                        hidden_files += 1;
                        continue;
                    }
                    if context > 0 && !out.is_empty() {
                        out.push("--".to_owned());
                    }
                    let mut shown_matches = 0;
                    for line in &sink.lines {
                        out.push(match line {
                            Line::Match(n, text) => {
                                shown_matches += 1;
                                format!("{shown}:{n}:{text}")
                            }
                            Line::Context(n, text) => format!("{shown}-{n}-{text}"),
                            Line::Break => "--".to_owned(),
                        });
                    }
                    if shown_matches < sink.matches {
                        hidden_lines += sink.matches - shown_matches;
                        hidden_files += 1;
                    }
                }
                Mode::Files | Mode::Count if room == 0 => {
                    hidden_lines += sink.matches;
                    hidden_files += 1;
                }
                Mode::Files => out.push(shown),
                Mode::Count => out.push(format!("{shown}:{}", sink.matches)),
            }
        }

        if out.is_empty() {
            let glob = glob.map(|g| format!(" (files matching `{g}`)")).unwrap_or_default();
            return Ok(format!("No matches for `{pattern}` in `{shown_root}`{glob}."));
        }
        if hidden_files > 0 {
            out.push(match self.mode {
                Mode::Content => format!(
                    "… {} more matching {} in {} not shown; narrow the pattern or path, or raise limit",
                    thousands(hidden_lines),
                    if hidden_lines == 1 { "line" } else { "lines" },
                    plural(hidden_files, "file", "files")
                ),
                Mode::Files | Mode::Count => format!(
                    "… {} more matching {} not shown; narrow the pattern or path, or raise limit",
                    thousands(hidden_files),
                    if hidden_files == 1 { "file" } else { "files" }
                ),
            });
        }
        if self.mode == Mode::Count {
            out.push(format!(
                "({} in {})",
                plural(total_lines, "matching line", "matching lines"),
                plural(total_files, "file", "files")
            ));
        }
        Ok(out.join("\n"))
    }
}

/// Collects one file's results, keeping at most `keep` output lines but counting every match.
struct Collect {
    mode: Mode,
    keep: usize,
    lines: Vec<Line>,
    matches: u64,
    binary: bool,
}

impl Collect {
    fn new(mode: Mode) -> Self {
        Collect {
            mode,
            keep: 0,
            lines: Vec::new(),
            matches: 0,
            binary: false,
        }
    }

    fn push(&mut self, line: Line) {
        if self.lines.len() < self.keep {
            self.lines.push(line);
        }
    }
}

fn text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    cut(text.trim_end_matches(['\n', '\r']), MAX_LINE_CHARS)
}

impl Sink for Collect {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = found.line_number().unwrap_or(0);
        for (i, line) in found.lines().enumerate() {
            self.matches += 1;
            if self.mode == Mode::Content {
                self.push(Line::Match(first + i as u64, text(line)));
            }
        }
        // One match is enough to list a file.
        Ok(self.mode != Mode::Files)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        let number = context.line_number().unwrap_or(0);
        self.push(Line::Context(number, text(context.bytes())));
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        self.push(Line::Break);
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        // Whatever was found before the NUL is dropped too: a binary file is skipped whole.
        self.binary = true;
        Ok(false)
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

    const TREE: &[(&str, &str)] = &[
        ("src/main.rs", "fn main() {\n    helper();\n}\n"),
        ("src/lib.rs", "pub fn helper() {}\n// TODO: more\n"),
        ("src/deep/mod.rs", "// nothing\nfn Helper() {}\n"),
        ("README.md", "call helper() first\n"),
        (".hidden/conf.rs", "helper\n"),
        ("target/debug/gen.rs", "helper\n"),
        ("notes.log", "helper\n"),
        (".git/config", "helper\n"),
        (".gitignore", "target/\n*.log\n"),
        // Binary: a NUL byte.
        ("src/blob.bin", "helper\0\x01\x02"),
    ];

    async fn grep(ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        call(&Grep, ctx, args).await
    }

    #[tokio::test]
    async fn content_mode_in_path_order_honouring_ignores() {
        let (_dir, ctx) = workspace_with(TREE);
        // Not a git repository, yet .gitignore applies; hidden files are searched, .git and binaries not.
        let out = grep(&ctx, json!({"pattern": "helper"})).await.unwrap();
        assert_eq!(
            out,
            ".hidden/conf.rs:1:helper\nREADME.md:1:call helper() first\nsrc/lib.rs:1:pub fn helper() {}\n\
             src/main.rs:2:    helper();"
        );
        let out = grep(
            &ctx,
            json!({"pattern": "HELPER", "ignore_case": true, "path": "src/deep"}),
        )
        .await
        .unwrap();
        assert_eq!(out, "src/deep/mod.rs:2:fn Helper() {}");
        let out = grep(&ctx, json!({"pattern": "fn \\w+\\(", "glob": "*.rs", "path": "src"}))
            .await
            .unwrap();
        assert_eq!(
            out,
            "src/deep/mod.rs:2:fn Helper() {}\nsrc/lib.rs:1:pub fn helper() {}\nsrc/main.rs:1:fn main() {"
        );
        let out = grep(&ctx, json!({"pattern": "helper", "glob": "src/**/*.rs"}))
            .await
            .unwrap();
        assert_eq!(out, "src/lib.rs:1:pub fn helper() {}\nsrc/main.rs:2:    helper();");
        let out = grep(&ctx, json!({"pattern": "helper", "glob": "!*.rs"})).await.unwrap();
        assert_eq!(out, "README.md:1:call helper() first");
        let out = grep(&ctx, json!({"pattern": "helper", "path": "src/main.rs"}))
            .await
            .unwrap();
        assert_eq!(out, "src/main.rs:2:    helper();");
        let out = grep(&ctx, json!({"pattern": "absent"})).await.unwrap();
        assert_eq!(out, "No matches for `absent` in `.`.");
    }

    #[tokio::test]
    async fn context_lines_and_breaks() {
        let text: String = (1..=20)
            .map(|i| {
                if i == 5 || i == 15 {
                    "hit\n".to_owned()
                } else {
                    format!("{i}\n")
                }
            })
            .collect();
        let (_dir, ctx) = workspace_with(&[("a.txt", &text), ("b.txt", "x\nhit\n")]);
        let out = grep(&ctx, json!({"pattern": "hit", "context": 1})).await.unwrap();
        assert_eq!(
            out,
            "a.txt-4-4\na.txt:5:hit\na.txt-6-6\n--\na.txt-14-14\na.txt:15:hit\na.txt-16-16\n--\nb.txt-1-x\nb.txt:2:hit"
        );
        assert!(message(grep(&ctx, json!({"pattern": "hit", "context": 11})).await).contains("at most 10"));
    }

    #[tokio::test]
    async fn files_and_count_modes() {
        let (dir, ctx) = workspace_with(TREE);
        let out = grep(&ctx, json!({"pattern": "helper", "mode": "files"})).await.unwrap();
        assert_eq!(out, ".hidden/conf.rs\nREADME.md\nsrc/lib.rs\nsrc/main.rs");
        fs::write(dir.path().join("src/many.rs"), "helper\nhelper helper\nhelper\n").unwrap();
        let out = grep(&ctx, json!({"pattern": "helper", "mode": "count", "path": "src"}))
            .await
            .unwrap();
        assert_eq!(
            out,
            "src/lib.rs:1\nsrc/main.rs:1\nsrc/many.rs:3\n(5 matching lines in 3 files)"
        );
        let out = grep(&ctx, json!({"pattern": "helper", "mode": "files", "limit": 2}))
            .await
            .unwrap();
        assert_eq!(
            out,
            ".hidden/conf.rs\nREADME.md\n… 3 more matching files not shown; narrow the pattern or path, or raise limit"
        );
        assert!(
            message(grep(&ctx, json!({"pattern": "x", "mode": "lines"})).await).contains("unknown variant `lines`")
        );
    }

    #[tokio::test]
    async fn output_is_capped_with_a_count_of_the_rest() {
        let text: String = (0..150).map(|i| format!("match {i}\n")).collect();
        let (dir, ctx) = workspace_with(&[("a.txt", &text), ("b.txt", &text), ("c.txt", &text)]);
        let out = grep(&ctx, json!({"pattern": "match"})).await.unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 201);
        assert_eq!(lines[199], "b.txt:50:match 49");
        assert_eq!(
            lines[200],
            "… 250 more matching lines in 2 files not shown; narrow the pattern or path, or raise limit"
        );
        let out = grep(&ctx, json!({"pattern": "match", "limit": 1})).await.unwrap();
        assert_eq!(
            out,
            "a.txt:1:match 0\n… 449 more matching lines in 3 files not shown; narrow the pattern or path, or raise limit"
        );
        fs::write(dir.path().join("wide.txt"), format!("needle{}\n", "x".repeat(10_000))).unwrap();
        let out = grep(&ctx, json!({"pattern": "needle"})).await.unwrap();
        assert!(out.ends_with("x … [line cut: 10,006 chars in total]"), "{out}");
    }

    #[tokio::test]
    async fn errors_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        fs::create_dir(&root).unwrap();
        fs::write(dir.path().join("secret.txt"), "password\n").unwrap();
        symlink(dir.path().join("secret.txt"), root.join("link.txt")).unwrap();
        symlink(dir.path(), root.join("parent")).unwrap();
        let ctx = context(&root);
        let invalid = message(grep(&ctx, json!({"pattern": "fn ("})).await);
        assert!(invalid.starts_with("invalid regex `fn (`: "), "{invalid}");
        assert!(invalid.contains("unclosed group"), "{invalid}");
        assert!(message(grep(&ctx, json!({"pattern": "a", "path": ".."})).await).contains("outside the workspace"));
        assert!(message(grep(&ctx, json!({"pattern": "a", "path": "parent"})).await).contains("outside the workspace"));
        assert!(message(grep(&ctx, json!({"pattern": "a", "glob": "[z"})).await).starts_with("invalid glob `[z`"));
        assert_eq!(
            message(grep(&ctx, json!({"pattern": "a", "path": "nope"})).await),
            "`nope` does not exist"
        );
        // Symlinks in the tree are not followed.
        assert_eq!(
            grep(&ctx, json!({"pattern": "password"})).await.unwrap(),
            "No matches for `password` in `.`."
        );
        assert!(message(grep(&ctx, json!({"path": "."})).await).contains("missing field `pattern`"));
    }
}
