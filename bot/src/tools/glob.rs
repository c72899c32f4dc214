//! `glob`: the files whose paths match a glob pattern, honouring .gitignore, in path order.

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::files::{blocking, stat, thousands, walker};
use super::{BoxFuture, Tool, ToolContext, ToolError, parse_args};

/// Paths listed; the rest are counted.
const MAX_RESULTS: usize = 500;

/// `glob`: finds files by name pattern.
pub struct Glob;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    path: Option<String>,
}

impl Tool for Glob {
    fn name(&self) -> &'static str {
        "glob"
    }

    fn description(&self) -> &'static str {
        "Find files by path pattern. A pattern without `/` matches file names at any depth (`*.rs`, \
         `Cargo.toml`, `test_*.py`); a pattern with `/` matches paths relative to the searched directory, where \
         `*` stays within one directory and `**` crosses any number (`src/**/*.ts`, `**/fixtures/*.json`). Also \
         supported: `?`, `[abc]` and `{a,b}`. Searches the workspace root or the directory given as path. Files \
         ignored by .gitignore and the .git directory are skipped; symlinks are listed but not followed. Returns \
         matching file paths relative to the workspace root, sorted, at most 500 (with a count of the rest). Use \
         grep to search file contents."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The glob, e.g. `*.rs` or `src/**/*.py`."},
                "path": {"type": "string", "description": "Directory to search. Default: the workspace root."}
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
            let Args { pattern, path } = parse_args(self.name(), args)?;
            let (matcher, by_name) = compile(&pattern)?;
            let workspace = ctx.workspace.clone();
            blocking(move || {
                let root = workspace.resolve_read(path.as_deref().unwrap_or("."))?;
                let (shown_root, meta) = stat(&workspace, &root)?;
                if !meta.is_dir() {
                    return Err(ToolError::respond(format!("`{shown_root}` is not a directory")));
                }
                let mut found = Vec::new();
                for entry in walker(&root).build() {
                    let Ok(entry) = entry else { continue };
                    if entry.depth() == 0 || entry.file_type().is_none_or(|t| t.is_dir()) {
                        continue;
                    }
                    // Only what the tree really holds (a directory swapped for a symlink while
                    // it was listed lists somewhere else).
                    if workspace.confirm(entry.path(), entry.ino(), false).is_none() {
                        continue;
                    }
                    let relative = entry.path().strip_prefix(&root).unwrap_or(entry.path());
                    let candidate = if by_name {
                        std::path::Path::new(entry.file_name())
                    } else {
                        relative
                    };
                    if matcher.is_match(candidate) {
                        found.push(workspace.display(entry.path()));
                    }
                }
                if found.is_empty() {
                    return Ok(format!("No files match `{pattern}` in `{shown_root}`."));
                }
                found.sort_unstable();
                let more = found.len().saturating_sub(MAX_RESULTS);
                found.truncate(MAX_RESULTS);
                if more > 0 {
                    found.push(format!(
                        "… {} more matching files not shown; use a narrower pattern or path",
                        thousands(more as u64)
                    ));
                }
                Ok(found.join("\n"))
            })
            .await
        })
    }
}

/// The matcher, and whether it applies to file names (no `/` in the pattern) rather than paths.
fn compile(pattern: &str) -> Result<(GlobMatcher, bool), ToolError> {
    let pattern = pattern.trim();
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    if pattern.is_empty() {
        return Err(ToolError::respond("the pattern is empty"));
    }
    if pattern.starts_with('/') {
        return Err(ToolError::respond(
            "the pattern is matched against paths relative to the searched directory; give the directory as \
             path and a relative pattern, e.g. path `src`, pattern `**/*.rs`",
        ));
    }
    let glob = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|err| ToolError::respond(format!("invalid glob `{pattern}`: {err}")))?;
    Ok((glob.compile_matcher(), !pattern.contains('/')))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use serde_json::json;

    use super::*;
    use crate::tools::test_support::{call, message, workspace_with};

    #[tokio::test]
    async fn matches_names_anywhere_and_paths_from_the_root() {
        let (dir, ctx) = workspace_with(&[
            ("src/main.rs", ""),
            ("src/a/b/deep.rs", ""),
            ("build.rs", ""),
            ("docs/x.md", ""),
            ("target/gen.rs", ""),
            (".git/x.rs", ""),
            (".cfg/h.rs", ""),
            (".gitignore", "/target\n"),
        ]);
        symlink("src/main.rs", dir.path().join("alias.rs")).unwrap();
        let glob = |pattern: &str, path: Option<&str>| {
            let args = match path {
                Some(path) => json!({"pattern": pattern, "path": path}),
                None => json!({"pattern": pattern}),
            };
            call(&Glob, &ctx, args)
        };
        assert_eq!(
            glob("*.rs", None).await.unwrap(),
            ".cfg/h.rs\nalias.rs\nbuild.rs\nsrc/a/b/deep.rs\nsrc/main.rs"
        );
        assert_eq!(glob("src/**/*.rs", None).await.unwrap(), "src/a/b/deep.rs\nsrc/main.rs");
        assert_eq!(glob("src/*.rs", None).await.unwrap(), "src/main.rs");
        assert_eq!(
            glob("**/*.rs", Some("src")).await.unwrap(),
            "src/a/b/deep.rs\nsrc/main.rs"
        );
        assert_eq!(glob("*.{md,rs}", Some("docs")).await.unwrap(), "docs/x.md");
        assert_eq!(glob("*.py", None).await.unwrap(), "No files match `*.py` in `.`.");
        assert!(message(glob("a[", None).await).starts_with("invalid glob `a[`"));
        assert!(message(glob("/abs/*.rs", None).await).contains("relative"));
        assert_eq!(
            message(glob("*", Some("build.rs")).await),
            "`build.rs` is not a directory"
        );
        assert!(message(glob("*", Some("..")).await).contains("outside the workspace"));
    }

    #[tokio::test]
    async fn results_are_capped() {
        let (dir, ctx) = workspace_with(&[]);
        for i in 0..620 {
            fs::write(dir.path().join(format!("f{i:04}.txt")), "").unwrap();
        }
        let out = call(&Glob, &ctx, json!({"pattern": "*.txt"})).await.unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 501);
        assert_eq!(lines[0], "f0000.txt");
        assert_eq!(lines[499], "f0499.txt");
        assert_eq!(
            lines[500],
            "… 120 more matching files not shown; use a narrower pattern or path"
        );
    }
}
