//! Which container image a job runs in: the operator's explicit choice, else the repository's own
//! (`.github/pitcrew.toml`, then the dev container's `image`), else the built-in default.

use std::path::Path;

use serde::Deserialize;

use crate::tools::Workspace;

/// Where the image came from, for logs and the run summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// `[sandbox] image` set by the operator (file, environment or flag).
    Operator,
    /// `[sandbox] image` in the repository's `.github/pitcrew.toml`.
    RepositoryConfig,
    /// `image` in `.devcontainer/devcontainer.json` (or `.devcontainer.json`).
    DevContainer,
    Default,
}

#[derive(Deserialize)]
struct RepoConfig {
    sandbox: Option<RepoSandbox>,
}

#[derive(Deserialize)]
struct RepoSandbox {
    image: Option<String>,
}

/// The image for a job in `workspace`. `operator` is the configured image when the operator set it
/// explicitly; `default` is the built-in one. Files are read through the workspace's path rules (a
/// hostile repository may make them symlinks elsewhere); unreadable or malformed files are skipped
/// with a warning, never fatal.
pub fn resolve(workspace: &Workspace, operator: Option<&str>, default: &str) -> (String, ImageSource) {
    if let Some(image) = operator {
        return (image.to_owned(), ImageSource::Operator);
    }
    if let Some(image) = read(workspace, ".github/pitcrew.toml").and_then(|text| {
        toml::from_str::<RepoConfig>(&text)
            .map_err(|err| tracing::warn!(%err, "ignoring .github/pitcrew.toml: it is not valid TOML"))
            .ok()
            .and_then(|c| c.sandbox?.image)
    }) {
        return (image, ImageSource::RepositoryConfig);
    }
    for path in [".devcontainer/devcontainer.json", ".devcontainer.json"] {
        if let Some(image) = read(workspace, path).and_then(|text| devcontainer_image(&text)) {
            return (image, ImageSource::DevContainer);
        }
    }
    (default.to_owned(), ImageSource::Default)
}

fn read(workspace: &Workspace, path: &str) -> Option<String> {
    let resolved = workspace.resolve_read(path).ok()?;
    let metadata = std::fs::metadata(&resolved).ok()?;
    // A config file, not a data dump.
    if !metadata.is_file() || metadata.len() > 256 * 1024 {
        return None;
    }
    std::fs::read_to_string(Path::new(&resolved)).ok()
}

/// The `image` of a devcontainer.json, which is JSON with comments and trailing commas.
fn devcontainer_image(text: &str) -> Option<String> {
    let json = strip_jsonc(text);
    let value: serde_json::Value = serde_json::from_str(&json)
        .map_err(|err| tracing::warn!(%err, "ignoring devcontainer.json: it is not valid JSON"))
        .ok()?;
    value
        .get("image")?
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Removes `//` and `/* */` comments outside strings, and commas before `}` or `]`.
fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => while chars.next_if(|&c| c != '\n').is_some() {},
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            (',', _) => {
                let rest: String = chars.clone().collect();
                let next = strip_leading_comments(&rest);
                if !(next.starts_with('}') || next.starts_with(']')) {
                    out.push(',');
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// `rest` without leading whitespace and comments (to see what follows a comma).
fn strip_leading_comments(mut rest: &str) -> &str {
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("//") {
            rest = after.split_once('\n').map_or("", |(_, tail)| tail);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, tail)| tail);
        } else {
            return rest;
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn the_operator_then_the_repository_then_the_dev_container_then_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        assert_eq!(
            resolve(&workspace, None, "debian"),
            ("debian".to_owned(), ImageSource::Default)
        );

        std::fs::create_dir(dir.path().join(".devcontainer")).unwrap();
        std::fs::write(
            dir.path().join(".devcontainer/devcontainer.json"),
            "{\n  // the dev image\n  \"name\": \"x // not a comment\",\n  /* block */ \"image\": \"rust:1.95\",\n}\n",
        )
        .unwrap();
        assert_eq!(
            resolve(&workspace, None, "debian"),
            ("rust:1.95".to_owned(), ImageSource::DevContainer)
        );

        std::fs::create_dir(dir.path().join(".github")).unwrap();
        std::fs::write(
            dir.path().join(".github/pitcrew.toml"),
            "[sandbox]\nimage = \"python:3.12\"\n[other]\nx = 1\n",
        )
        .unwrap();
        assert_eq!(
            resolve(&workspace, None, "debian"),
            ("python:3.12".to_owned(), ImageSource::RepositoryConfig)
        );
        assert_eq!(
            resolve(&workspace, Some("ops:1"), "debian"),
            ("ops:1".to_owned(), ImageSource::Operator)
        );
    }

    #[test]
    fn malformed_or_hostile_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        std::fs::create_dir(dir.path().join(".github")).unwrap();
        std::fs::write(dir.path().join(".github/pitcrew.toml"), "[sandbox\nimage=").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join(".devcontainer.json")).unwrap();
        assert_eq!(
            resolve(&workspace, None, "debian"),
            ("debian".to_owned(), ImageSource::Default)
        );
        assert_eq!(
            devcontainer_image("{\"image\": \"a\", \"features\": {\"x\": [1, 2,],},}").as_deref(),
            Some("a")
        );
        assert_eq!(
            devcontainer_image("{\"build\": {\"dockerfile\": \"Dockerfile\"}}"),
            None
        );
    }
}
