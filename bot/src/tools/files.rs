//! Helpers the file tools share: running blocking filesystem work off the async threads, looking a
//! path up, walking a tree the way the model expects (honouring .gitignore, never entering `.git`),
//! and formatting numbered lines and counts.

use std::fs::Metadata;
use std::io;
use std::path::Path;

use ignore::WalkBuilder;

use super::{ToolError, Workspace};
use crate::workspace::is_git_dir;

/// Runs blocking filesystem work on tokio's blocking pool, so the file tools of one turn can run
/// concurrently without stalling the runtime.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| ToolError::respond(format!("the tool failed unexpectedly: {err}")))?
}

/// An I/O error as a message for the model, naming the path as it gave it.
pub(crate) fn io_error(shown: &str, err: &io::Error) -> ToolError {
    ToolError::respond(match err.kind() {
        io::ErrorKind::NotFound => format!("`{shown}` does not exist"),
        io::ErrorKind::PermissionDenied => format!("permission denied for `{shown}`"),
        _ => format!("`{shown}`: {err}"),
    })
}

/// A resolved path as the model sees it, and its metadata (looked up below the workspace's handle,
/// following no symlink); a path that cannot be looked up is an error for the model.
pub(crate) fn stat(workspace: &Workspace, path: &Path) -> Result<(String, Metadata), ToolError> {
    let shown = workspace.display(path);
    let meta = workspace.metadata(path).map_err(|err| io_error(&shown, &err))?;
    Ok((shown, meta))
}

/// A walker over `root`: .gitignore, .ignore and .git/info/exclude honoured even outside a git
/// repository, hidden files included, `.git` never entered, symlinks not followed, siblings in name
/// order.
pub(crate) fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        // The host user's global excludes say nothing about the repository under review.
        .git_global(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| !is_git_dir(entry.file_name()));
    builder
}

/// `1234567` → `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `1 line`, `2 lines`.
pub(crate) fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// Cuts `text` to `max` characters, saying how long it was.
pub(crate) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => {
            format!(
                "{} … [line cut: {} chars in total]",
                &text[..end],
                thousands(text.chars().count() as u64)
            )
        }
    }
}

/// One line as `read_file` shows it: the number right-aligned, a tab, the text.
pub(crate) fn numbered(number: u64, text: &str) -> String {
    format!("{number:>6}\t{text}")
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::{Map, Value, json};

    use super::*;
    use crate::tools::file_tools;
    use crate::tools::test_support::{call, workspace_with};

    /// A value the schema accepts for a property.
    fn sample(schema: &Value) -> Value {
        if let Some(first) = schema["enum"].as_array().and_then(|values| values.first()) {
            return first.clone();
        }
        match schema["type"].as_str().unwrap() {
            "string" => json!("x"),
            "integer" => schema.get("minimum").cloned().unwrap_or(json!(1)),
            "boolean" => json!(false),
            other => panic!("no sample for {other}"),
        }
    }

    /// The schema of every file tool says exactly what its argument struct accepts.
    #[tokio::test]
    async fn schemas_match_argument_structs() {
        let (_dir, ctx) = workspace_with(&[]);
        for tool in file_tools() {
            let name = tool.name();
            let schema = tool.parameters();
            assert_eq!(schema["type"], "object", "{name}");
            assert_eq!(schema["additionalProperties"], false, "{name}");
            let properties = schema["properties"].as_object().unwrap();
            let required: BTreeSet<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().map(|v| v.as_str().unwrap()).collect())
                .unwrap_or_default();
            assert!(
                required.iter().all(|r| properties.contains_key(*r)),
                "{name}: required names an unknown property"
            );
            assert!(
                properties.values().all(|p| p["description"].is_string()),
                "{name}: undocumented property"
            );

            // An unknown field is refused, and serde's message lists every field the struct accepts.
            let refused = call(tool.as_ref(), &ctx, json!({"bogus": 1}))
                .await
                .unwrap_err()
                .to_string();
            assert!(refused.contains("unknown field `bogus`"), "{name}: {refused}");
            let list = refused
                .split("expected ")
                .nth(1)
                .unwrap_or_else(|| panic!("{name}: {refused}"));
            let list = list.trim_start_matches("one of ").replace(" or ", ", ");
            let accepted: BTreeSet<&str> = list.split(", ").map(|field| field.trim_matches('`')).collect();
            let declared: BTreeSet<&str> = properties.keys().map(String::as_str).collect();
            assert_eq!(accepted, declared, "{name}: the struct and the schema disagree");

            // Each required field, left out, is named as missing.
            let all: Map<String, Value> = properties.iter().map(|(k, v)| (k.clone(), sample(v))).collect();
            for missing in &required {
                let mut args = all.clone();
                args.remove(*missing);
                let err = tool.call(&ctx, args).await.unwrap_err().to_string();
                assert!(err.contains(&format!("missing field `{missing}`")), "{name}: {err}");
            }
            // Only the required fields, and every field: both parse (whatever the call then says).
            let minimal: Map<String, Value> = all
                .iter()
                .filter(|(k, _)| required.contains(k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for args in [minimal, all] {
                if let Err(err) = tool.call(&ctx, args.clone()).await {
                    assert!(
                        !err.to_string().starts_with("invalid arguments"),
                        "{name} {args:?}: {err}"
                    );
                }
            }
        }
    }

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(plural(1, "line", "lines"), "1 line");
        assert_eq!(plural(2000, "line", "lines"), "2,000 lines");
    }

    #[test]
    fn long_text_is_cut() {
        assert_eq!(cut("héllo", 10), "héllo");
        assert_eq!(cut("héllo", 2), "hé … [line cut: 5 chars in total]");
        assert_eq!(numbered(7, "x"), "     7\tx");
    }
}
