//! `list_dir`: a directory as an indented tree, honouring .gitignore, not following symlinks.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::files::{blocking, stat, thousands, walker};
use super::{BoxFuture, Tool, ToolContext, ToolError, parse_args};

const DEFAULT_DEPTH: usize = 2;
const MAX_DEPTH: usize = 10;
/// Entries listed; the rest are counted.
const MAX_ENTRIES: usize = 500;
/// Entries counted past the cap before giving up on an exact count.
const MAX_COUNTED: usize = 100_000;

/// `list_dir`: shows what a directory holds.
pub struct ListDir;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: Option<String>,
    depth: Option<usize>,
}

impl Tool for ListDir {
    fn name(&self) -> &'static str {
        "list_dir"
    }

    fn description(&self) -> &'static str {
        "List a directory as a tree: one entry per line, indented two spaces per level, directories with a \
         trailing `/`, symlinks as `name -> target` (not followed), sorted by name. Lists the workspace root or \
         the directory given as path, `depth` levels deep (default 2, at most 10). Entries ignored by \
         .gitignore and the .git directory are left out. At most 500 entries are shown, with a count of the \
         rest. Use it to get oriented in a repository; use glob to find files by name and grep to search their \
         contents."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The directory. Default: the workspace root."},
                "depth": {
                    "type": "integer", "minimum": 1, "maximum": MAX_DEPTH,
                    "description": "Levels to descend. Default 2."
                }
            },
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let Args { path, depth } = parse_args(self.name(), args)?;
            let depth = depth.unwrap_or(DEFAULT_DEPTH);
            if !(1..=MAX_DEPTH).contains(&depth) {
                return Err(ToolError::respond(format!("depth must be between 1 and {MAX_DEPTH}")));
            }
            let workspace = ctx.workspace.clone();
            blocking(move || {
                let root = workspace.resolve_read(path.as_deref().unwrap_or("."))?;
                let (shown_root, meta) = stat(&workspace, &root)?;
                if !meta.is_dir() {
                    return Err(ToolError::respond(format!(
                        "`{shown_root}` is a file, not a directory; use read_file to read it"
                    )));
                }
                let mut lines = vec![format!("{}/", shown_root.trim_end_matches('/'))];
                let mut more = 0usize;
                for entry in walker(&root).max_depth(Some(depth)).build() {
                    let Ok(entry) = entry else { continue };
                    if entry.depth() == 0 {
                        continue;
                    }
                    // Only what the tree really holds (a directory swapped for a symlink while
                    // it was listed lists somewhere else).
                    if workspace.confirm(entry.path(), entry.ino(), false).is_none() {
                        continue;
                    }
                    if lines.len() > MAX_ENTRIES {
                        more += 1;
                        if more >= MAX_COUNTED {
                            break;
                        }
                        continue;
                    }
                    let indent = "  ".repeat(entry.depth());
                    let name = entry.file_name().to_string_lossy();
                    let kind = entry.file_type();
                    lines.push(if kind.is_some_and(|t| t.is_symlink()) {
                        let target = workspace
                            .read_link(entry.path())
                            .map(|t| t.display().to_string())
                            .unwrap_or_else(|_| "?".to_owned());
                        format!("{indent}{name} -> {target}")
                    } else if kind.is_some_and(|t| t.is_dir()) {
                        format!("{indent}{name}/")
                    } else {
                        format!("{indent}{name}")
                    });
                }
                if lines.len() == 1 {
                    return Ok(format!("`{shown_root}` is empty (or holds only ignored files)."));
                }
                if more > 0 {
                    let count = if more >= MAX_COUNTED {
                        format!("over {}", thousands(more as u64))
                    } else {
                        thousands(more as u64)
                    };
                    lines.push(format!(
                        "… {count} more entries not shown; list a subdirectory or use a smaller depth"
                    ));
                }
                Ok(lines.join("\n"))
            })
            .await
        })
    }
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
    async fn shows_a_tree() {
        let (dir, ctx) = workspace_with(&[
            ("src/main.rs", ""),
            ("src/tools/mod.rs", ""),
            ("src/tools/deep/x.rs", ""),
            ("Cargo.toml", ""),
            ("target/out", ""),
            (".git/HEAD", ""),
            (".github/ci.yml", ""),
            (".gitignore", "target/\n"),
        ]);
        fs::create_dir(dir.path().join("empty")).unwrap();
        symlink("/etc", dir.path().join("etc")).unwrap();

        let out = call(&ListDir, &ctx, json!({})).await.unwrap();
        assert_eq!(
            out,
            "./\n  .github/\n    ci.yml\n  .gitignore\n  Cargo.toml\n  empty/\n  etc -> /etc\n  src/\n    main.rs\n    tools/"
        );
        let out = call(&ListDir, &ctx, json!({"path": "src", "depth": 3})).await.unwrap();
        assert_eq!(out, "src/\n  main.rs\n  tools/\n    deep/\n      x.rs\n    mod.rs");
        let out = call(&ListDir, &ctx, json!({"path": "src/", "depth": 1})).await.unwrap();
        assert_eq!(out, "src/\n  main.rs\n  tools/");
        assert_eq!(
            call(&ListDir, &ctx, json!({"path": "empty"})).await.unwrap(),
            "`empty` is empty (or holds only ignored files)."
        );
        assert!(message(call(&ListDir, &ctx, json!({"path": "Cargo.toml"})).await).contains("use read_file"));
        assert!(message(call(&ListDir, &ctx, json!({"depth": 11})).await).contains("between 1 and 10"));
        assert!(message(call(&ListDir, &ctx, json!({"depth": 0})).await).contains("between 1 and 10"));
        assert!(message(call(&ListDir, &ctx, json!({"path": "etc"})).await).contains("outside the workspace"));
        assert!(message(call(&ListDir, &ctx, json!({"path": ".."})).await).contains("outside the workspace"));
    }

    #[tokio::test]
    async fn entries_are_capped() {
        let (dir, ctx) = workspace_with(&[]);
        for i in 0..30 {
            let sub = dir.path().join(format!("d{i:02}"));
            fs::create_dir(&sub).unwrap();
            for j in 0..20 {
                fs::write(sub.join(format!("f{j:02}")), "").unwrap();
            }
        }
        let out = call(&ListDir, &ctx, json!({})).await.unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 502);
        assert_eq!(lines[1], "  d00/");
        assert_eq!(lines[2], "    f00");
        assert_eq!(
            lines[501],
            "… 130 more entries not shown; list a subdirectory or use a smaller depth"
        );
    }
}
