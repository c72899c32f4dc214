//! `write_file`: creates a file or replaces one the model has read, never through a symlink and never
//! inside `.git`.

use std::io;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::files::{blocking, io_error, plural, thousands};
use super::reads::{Fingerprint, modified};
use super::{BoxFuture, Tool, ToolContext, ToolError, parse_args};

/// `write_file`: writes a whole file.
pub struct WriteFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    content: String,
}

impl Tool for WriteFile {
    fn name(&self) -> &'static str {
        "write_file"
    }

    fn description(&self) -> &'static str {
        "Write a whole file: create a new one (missing parent directories are created) or replace an existing \
         one entirely. To change part of an existing file use edit_file instead, which is safer and cheaper. An \
         existing file can only be replaced after you read it with read_file in this run, and not if it changed \
         since. The path is relative to the workspace root; files inside .git cannot be written. Returns whether \
         the file was created or overwritten, with its size in bytes and lines."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the workspace root."},
                "content": {"type": "string", "description": "The complete new content of the file."}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let Args { path, content } = parse_args(self.name(), args)?;
            let workspace = ctx.workspace.clone();
            let (path, existing) = blocking(move || {
                let path = workspace.resolve_write(&path)?;
                let shown = workspace.display(&path);
                let existing = match workspace.metadata(&path) {
                    Ok(meta) if meta.is_dir() => {
                        return Err(ToolError::respond(format!(
                            "`{shown}` is a directory; give the path of a file"
                        )));
                    }
                    Ok(meta) if !meta.is_file() => {
                        return Err(ToolError::respond(format!("`{shown}` is not a regular file")));
                    }
                    Ok(meta) => {
                        let current = workspace
                            .open(&path)
                            .and_then(Fingerprint::of_file)
                            .map_err(|err| io_error(&shown, &err))?;
                        Some((meta.len(), current))
                    }
                    Err(err) if err.kind() == io::ErrorKind::NotFound => None,
                    Err(err) => return Err(io_error(&shown, &err)),
                };
                Ok((path, existing))
            })
            .await?;
            let shown = ctx.workspace.display(&path);
            if let Some((_, current)) = &existing {
                ctx.reads.check_unchanged(&path, current, &shown)?;
            }

            let fingerprint = {
                let path = path.clone();
                let shown = shown.clone();
                let content = content.clone();
                let workspace = ctx.workspace.clone();
                blocking(move || {
                    workspace
                        .write(&path, content.as_bytes())
                        .map_err(|err| io_error(&shown, &err))?;
                    Ok(Fingerprint::of_bytes(content.as_bytes(), modified(&workspace, &path)))
                })
                .await?
            };
            ctx.file_changed(&path);
            ctx.reads.record(path, fingerprint);

            let size = format!(
                "{}, {}",
                plural(content.len() as u64, "byte", "bytes"),
                plural(content.lines().count() as u64, "line", "lines")
            );
            Ok(match existing {
                None => format!("Created `{shown}` ({size})."),
                Some((old, _)) => format!("Overwrote `{shown}` ({size}; it had {} bytes).", thousands(old)),
            })
        })
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::fs;
    use std::os::unix::fs::{PermissionsExt, symlink};

    use serde_json::json;

    use super::*;
    use crate::tools::ReadFile;
    use crate::tools::test_support::{call, context, message, workspace_with};

    #[tokio::test]
    async fn creates_files_and_parent_directories() {
        let (dir, ctx) = workspace_with(&[]);
        let out = call(
            &WriteFile,
            &ctx,
            json!({"path": "a/b/new.txt", "content": "one\ntwo\n"}),
        )
        .await
        .unwrap();
        assert_eq!(out, "Created `a/b/new.txt` (8 bytes, 2 lines).");
        assert_eq!(
            fs::read_to_string(dir.path().join("a/b/new.txt")).unwrap(),
            "one\ntwo\n"
        );
        // What it wrote counts as seen: it may be written again without a read.
        let out = call(&WriteFile, &ctx, json!({"path": "a/b/new.txt", "content": "x"}))
            .await
            .unwrap();
        assert_eq!(out, "Overwrote `a/b/new.txt` (1 byte, 1 line; it had 8 bytes).");
    }

    #[tokio::test]
    async fn overwriting_needs_a_fresh_read() {
        let (dir, ctx) = workspace_with(&[("f.sh", "old\n")]);
        let path = dir.path().join("f.sh");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();

        let refused = message(call(&WriteFile, &ctx, json!({"path": "f.sh", "content": "new\n"})).await);
        assert!(
            refused.starts_with("`f.sh` has not been read in this run; read it first"),
            "{refused}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), "old\n");

        call(&ReadFile, &ctx, json!({"path": "f.sh"})).await.unwrap();
        fs::write(&path, "changed by someone else\n").unwrap();
        let refused = message(call(&WriteFile, &ctx, json!({"path": "f.sh", "content": "new\n"})).await);
        assert!(refused.starts_with("`f.sh` changed since you read it"), "{refused}");

        call(&ReadFile, &ctx, json!({"path": "f.sh"})).await.unwrap();
        let out = call(&WriteFile, &ctx, json!({"path": "f.sh", "content": "new\n"}))
            .await
            .unwrap();
        assert_eq!(out, "Overwrote `f.sh` (4 bytes, 1 line; it had 24 bytes).");
        assert_eq!(fs::read_to_string(&path).unwrap(), "new\n");
        // Overwriting in place keeps the mode.
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o755);
    }

    #[tokio::test]
    async fn refuses_paths_it_must_not_write() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::create_dir_all(root.join("src")).unwrap();
        symlink("/etc/passwd", root.join("passwd")).unwrap();
        symlink(dir.path(), root.join("parent")).unwrap();
        symlink("/nonexistent/pitcrew", root.join("dangling")).unwrap();
        let ctx = context(&root);
        let write = |path: &str| call(&WriteFile, &ctx, json!({"path": path, "content": "x"}));

        assert_eq!(message(write("../evil").await), "`../evil` is outside the workspace");
        assert_eq!(
            message(write("/tmp/evil").await),
            "`/tmp/evil` is outside the workspace"
        );
        assert_eq!(
            message(write("passwd").await),
            "`passwd` is a symlink to /etc/passwd, outside the workspace"
        );
        assert!(message(write("parent/evil").await).contains("outside the workspace"));
        assert_eq!(
            message(write("dangling").await),
            "`dangling` is a symlink to /nonexistent/pitcrew, which does not exist"
        );
        assert_eq!(
            message(write(".git/hooks/pre-commit").await),
            "`.git/hooks/pre-commit` is inside .git, which pitcrew manages; it cannot be written"
        );
        assert_eq!(
            message(write("src").await),
            "`src` is a directory; give the path of a file"
        );
        assert!(!dir.path().join("evil").exists());
        assert!(!root.join(".git/hooks").exists());
    }

    #[tokio::test]
    async fn arguments_are_checked() {
        let (_dir, ctx) = workspace_with(&[]);
        let missing = message(call(&WriteFile, &ctx, json!({"path": "a"})).await);
        assert_eq!(missing, "invalid arguments for `write_file`: missing field `content`");
        let extra = message(call(&WriteFile, &ctx, json!({"path": "a", "content": "", "mode": "x"})).await);
        assert!(extra.contains("unknown field `mode`"), "{extra}");
    }
}
