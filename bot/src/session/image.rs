//! Which container image a session runs in: the image its settings name (the operator's explicit
//! choice, else the repository's `[sandbox] image`: [`RepoConfig::apply`]), else the `image` of the
//! checkout's dev container, else the built-in default. `pitcrew run`, which has no default branch
//! to read the repository's configuration from, takes the image of the checkout's own.
//!
//! The choice reads the checkout through the tools' confined view ([`Workspace`]), so it is made
//! here, above the sandbox, which is handed only the image's name.

use std::path::Path;

use crate::config::repo::{EffectiveSettings, ImageSource, REPO_CONFIG_PATH, RepoConfig, RepoSandbox};
use crate::tools::Workspace;

/// The image for a session over `workspace` with `settings`: the settings' image, unless they fell
/// back to the default, in which case the checkout's dev container may still name one. Files are
/// read through the workspace's path rules (a hostile repository may make them symlinks
/// elsewhere); unreadable or malformed files are skipped with a warning, never fatal.
pub fn resolve(workspace: &Workspace, settings: &EffectiveSettings) -> (String, ImageSource) {
    match settings.image_source {
        ImageSource::Default => dev_container_or(workspace, &settings.image),
        _ => (settings.image.clone(), settings.image_source.clone()),
    }
}

/// The repository's configuration as far as the image goes, from the checkout's own
/// `.github/pitcrew.toml` under `root`: what a local run applies to the operator's (only the image:
/// everything else of a local run is the operator's). A file with problems still yields its image
/// if that one setting is valid (the problems are logged); an unreadable file names none.
pub fn checkout_config(root: &Path) -> RepoConfig {
    let image = Workspace::new(root)
        .ok()
        .and_then(|workspace| read(&workspace, REPO_CONFIG_PATH))
        .and_then(|text| repository_image(&text));
    RepoConfig {
        sandbox: RepoSandbox {
            image,
            ..RepoSandbox::default()
        },
        ..RepoConfig::default()
    }
}

/// The `[sandbox] image` of a repository's configuration. A file with problems still yields its
/// image if that one setting is valid (the problems are logged): this only picks a container image.
fn repository_image(text: &str) -> Option<String> {
    let (config, problems) = RepoConfig::parse_lenient(text);
    for problem in &problems {
        tracing::warn!(%problem, "problem in the repository's configuration");
    }
    config.sandbox.image
}

fn dev_container_or(workspace: &Workspace, default: &str) -> (String, ImageSource) {
    for path in [".devcontainer/devcontainer.json", ".devcontainer.json"] {
        if let Some(image) = read(workspace, path).and_then(|text| devcontainer_image(&text)) {
            return (image, ImageSource::DevContainer);
        }
    }
    (default.to_owned(), ImageSource::Default)
}

/// The largest configuration file read: a config file, not a data dump.
const MAX_CONFIG_BYTES: u64 = 256 * 1024;

fn read(workspace: &Workspace, path: &str) -> Option<String> {
    use std::io::Read as _;
    let resolved = workspace.resolve_read(path).ok()?;
    // Opened beneath the workspace's handle, following no symlink: a tree changed since the
    // resolution fails here instead of reading elsewhere; the checks are on what was opened.
    let file = workspace.open(&resolved).ok()?;
    let metadata = file.metadata().ok()?;
    if !metadata.is_file() || metadata.len() > MAX_CONFIG_BYTES {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_CONFIG_BYTES).read_to_string(&mut text).ok()?;
    Some(text)
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
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::{Config, LoadOptions};

    fn operator(overrides: &[&str]) -> Config {
        let env = BTreeMap::from([("OPENAI_API_KEY".to_owned(), "sk-test".to_owned())]);
        let mut overrides: Vec<String> = overrides.iter().map(|s| (*s).to_owned()).collect();
        overrides.push("model.name=gpt-4.1".to_owned());
        Config::load(LoadOptions {
            config_path: None,
            env: &env,
            overrides: &overrides,
        })
        .unwrap()
    }

    /// The image of a local run in `dir` (the checkout's own configuration applied).
    fn local_run(dir: &Path, overrides: &[&str]) -> (String, ImageSource) {
        let workspace = Workspace::new(dir).unwrap();
        resolve(&workspace, &checkout_config(dir).apply(&operator(overrides)))
    }

    #[test]
    fn the_operator_then_the_repository_then_the_dev_container_then_the_default() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            local_run(dir.path(), &[]),
            ("debian:bookworm-slim".to_owned(), ImageSource::Default)
        );

        std::fs::create_dir(dir.path().join(".devcontainer")).unwrap();
        std::fs::write(
            dir.path().join(".devcontainer/devcontainer.json"),
            "{\n  // the dev image\n  \"name\": \"x // not a comment\",\n  /* block */ \"image\": \"rust:1.95\",\n}\n",
        )
        .unwrap();
        assert_eq!(
            local_run(dir.path(), &[]),
            ("rust:1.95".to_owned(), ImageSource::DevContainer)
        );

        std::fs::create_dir(dir.path().join(".github")).unwrap();
        std::fs::write(
            dir.path().join(".github/pitcrew.toml"),
            "[sandbox]\nimage = \"python:3.12\"\n[other]\nx = 1\n",
        )
        .unwrap();
        assert_eq!(
            local_run(dir.path(), &[]),
            ("python:3.12".to_owned(), ImageSource::RepositoryConfig)
        );
        assert_eq!(
            local_run(dir.path(), &["sandbox.image=ops:1"]),
            ("ops:1".to_owned(), ImageSource::Operator)
        );
    }

    #[test]
    fn malformed_or_hostile_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".github")).unwrap();
        std::fs::write(dir.path().join(".github/pitcrew.toml"), "[sandbox\nimage=").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join(".devcontainer.json")).unwrap();
        // A FIFO never blocks the choice (nothing writes to it), and it is not a file.
        std::fs::create_dir(dir.path().join(".devcontainer")).unwrap();
        nix::unistd::mkfifo(
            &dir.path().join(".devcontainer/devcontainer.json"),
            nix::sys::stat::Mode::S_IRWXU,
        )
        .unwrap();
        assert_eq!(
            local_run(dir.path(), &[]),
            ("debian:bookworm-slim".to_owned(), ImageSource::Default)
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

    #[test]
    fn a_bad_image_setting_falls_through_to_the_dev_container() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".github")).unwrap();
        std::fs::write(dir.path().join(".github/pitcrew.toml"), "[sandbox]\nimage = 3\n").unwrap();
        std::fs::write(dir.path().join(".devcontainer.json"), "{\"image\": \"node:22\"}").unwrap();
        assert_eq!(
            local_run(dir.path(), &[]),
            ("node:22".to_owned(), ImageSource::DevContainer)
        );
    }

    #[test]
    fn decided_settings_fall_back_to_the_dev_container_only_from_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        std::fs::write(dir.path().join(".devcontainer.json"), "{\"image\": \"node:22\"}").unwrap();
        // The checkout's own `.github/pitcrew.toml` is not read: the settings came from the default branch.
        std::fs::create_dir(dir.path().join(".github")).unwrap();
        std::fs::write(
            dir.path().join(".github/pitcrew.toml"),
            "[sandbox]\nimage = \"evil:1\"\n",
        )
        .unwrap();
        let operator = operator(&[]);

        let settings = RepoConfig::default().apply(&operator);
        assert_eq!(
            resolve(&workspace, &settings),
            ("node:22".to_owned(), ImageSource::DevContainer)
        );
        let settings = RepoConfig::parse("[sandbox]\nimage = \"rust:1.90\"\n")
            .unwrap()
            .apply(&operator);
        assert_eq!(
            resolve(&workspace, &settings),
            ("rust:1.90".to_owned(), ImageSource::RepositoryConfig)
        );
    }
}
