//! Dependency chores: find a repository's dependencies (Cargo, npm, Python, GitHub Actions), ask
//! their registries for newer versions, and decide by policy which updates to make: inside the
//! declared ranges (a lockfile refresh), newer compatible versions (a manifest edit), majors only
//! when asked and in a pull request of their own; a release younger than `min_release_age` waits
//! (`plan::find`), the newest old enough proposed instead.
//!
//! Each ecosystem module scans its manifests, plans updates from the releases its registry lists,
//! and applies them to the manifests' text (formatting and comments kept). Lockfiles are refreshed
//! and tests run in the sandbox by the chore job (`handlers::chore`).
//!
//! What the configuration reads for them, the ecosystems, the repository's update policy and the
//! registries' addresses, is defined in [`crate::config::deps`]; the cron schedules of
//! `[chores.deps] schedule` in [`crate::config::schedule`].

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::deps::Ecosystem;

pub mod actions;
pub mod cargo;
pub mod lock;
pub mod npm;
pub mod plan;
pub mod python;
pub mod registry;
pub mod version;

pub use registry::{RegistryClient, RegistryError};

/// How far a manifest update goes, smallest first. (A version inside the range the manifest
/// declares changes only the lockfile: [`lock::ChangeKind::Updated`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UpdateKind {
    Patch,
    Minor,
    /// A version the declared range's compatibility excludes (for `0.x`, a new minor).
    Major,
}

impl UpdateKind {
    pub fn as_str(self) -> &'static str {
        match self {
            UpdateKind::Patch => "patch",
            UpdateKind::Minor => "minor",
            UpdateKind::Major => "major",
        }
    }
}

/// A dependency as a manifest declares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    pub ecosystem: Ecosystem,
    /// The package's name in its registry (for Actions, `owner/repo`).
    pub name: String,
    /// The manifest, relative to the repository root with `/` separators.
    pub manifest: String,
    /// Where in the manifest: `dependencies`, `dev-dependencies`, `devDependencies`,
    /// `project.dependencies`, a workflow's job, ….
    pub section: String,
    /// The requirement as written: `1.2`, `^4.17.21`, `>=2.31,<3`, `v4`.
    pub requirement: String,
    /// The requirement names exactly one version (`=1.2.3`, `1.2.3` in npm, `==1.2.3`, a full
    /// commit SHA): by policy it stays unless pinned updates are asked for.
    pub pinned: bool,
    /// The environment marker the requirement holds under, as written after its `;`
    /// (`python_version < "3.9"`); Python only. Two requirements on one package under different
    /// markers are two dependencies.
    #[serde(default)]
    pub marker: Option<String>,
}

/// One release a registry lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Release {
    pub version: String,
    /// Yanked, deprecated or withdrawn: never proposed.
    pub yanked: bool,
    /// Where its release notes or changelog are, when the registry says.
    pub notes_url: Option<String>,
    /// The oldest Rust it declares it builds with (Cargo's `rust_version`, as written: `1.70`),
    /// when the registry says; `None` for other ecosystems.
    #[serde(default)]
    pub rust_version: Option<String>,
    /// The Pythons its files install on (PyPI's per-file `requires_python`, distinct, as written:
    /// `>=3.8`); empty when any file declares none, so that any Python installs it. Python only.
    #[serde(default)]
    pub requires_python: Vec<String>,
    /// When it was published, when the registry says: npm's `time`, PyPI's earliest file
    /// `upload_time_iso_8601`. A Cargo sparse index and a repository's tags say nothing (`None`):
    /// such a release is taken as old enough for `min_release_age`.
    #[serde(default)]
    pub published: Option<jiff::Timestamp>,
}

/// A change to make.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Update {
    pub ecosystem: Ecosystem,
    pub name: String,
    /// The manifest whose requirement changes; `None` for a lockfile-only update.
    pub manifest: Option<String>,
    pub section: Option<String>,
    /// The version before (the locked one when known, else the requirement's floor).
    pub from: String,
    pub to: String,
    pub kind: UpdateKind,
    /// The requirement to write (in the manifest's own style: `1.2` → `1.4`, `^1.2.3` → `^1.4.0`);
    /// `None` for a lockfile-only update.
    pub new_requirement: Option<String>,
    pub notes_url: Option<String>,
    /// The marker of the requirement that changes (see [`Dependency::marker`]).
    #[serde(default)]
    pub marker: Option<String>,
}

/// The updates planned for one dependency and the releases held back (for the project's
/// toolchain, or too young).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Planned {
    pub updates: Vec<Update>,
    pub held_back: Vec<HeldBack>,
}

/// Why a release that would have been proposed is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// It needs a newer Rust than Cargo's `rust-version`.
    Rust,
    /// It needs a newer Python than `requires-python` (or what else the project declares it with).
    Python,
    /// It is younger than the repository's `min_release_age`.
    Young,
}

/// A release that would have been proposed but is held back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldBack {
    pub reason: Hold,
    pub name: String,
    pub version: String,
    /// What the release needs and what the project declares, as written: its `rust_version` and
    /// `rust-version`; its files' `requires_python` and the project's Pythons; for [`Hold::Young`],
    /// when it is old enough (`2026-12-05 10:00 UTC`) and the `min_release_age` (`3d`).
    pub needs: String,
    pub declared: String,
    /// Whether it was a major update (its note goes to the majors' pull request).
    pub major: bool,
    /// The older release proposed instead, if one fits.
    pub instead: Option<String>,
}

impl std::fmt::Display for HeldBack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.reason {
            Hold::Rust => write!(
                f,
                "`{}` {} needs Rust {}; this package declares rust-version {}",
                self.name, self.version, self.needs, self.declared
            )?,
            Hold::Python => write!(
                f,
                "`{}` {} needs Python {}; the requirement is for Python {}",
                self.name, self.version, self.needs, self.declared
            )?,
            Hold::Young => write!(
                f,
                "`{}` {} is younger than min_release_age {}; it waits until {}",
                self.name, self.version, self.declared, self.needs
            )?,
        }
        match &self.instead {
            Some(instead) => write!(f, " ({instead} is proposed instead)"),
            None => Ok(()),
        }
    }
}

/// The most of a manifest read.
const MAX_MANIFEST: u64 = 16 << 20;

/// The text of manifest `relative` (`/`-separated, below `root`), opened without following a
/// symlink anywhere on the way and only when it is a regular file: scans run again after the
/// sandbox has run, and it may have swapped a manifest for a symlink out of the checkout or a FIFO
/// that would block the read.
pub(crate) fn read_text(root: &Path, relative: &str) -> std::io::Result<String> {
    let bytes = crate::beneath::Beneath::open(root)?.read_regular(Path::new(relative), MAX_MANIFEST)?;
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Why the manifests under a directory could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("could not list {}: {source}", root.display())]
    List {
        root: PathBuf,
        #[source]
        source: ignore::Error,
    },
    #[error("{} is not under {}", path.display(), root.display())]
    Outside { path: PathBuf, root: PathBuf },
    #[error("{}: not UTF-8", path.display())]
    NotUtf8 { path: PathBuf },
}

/// The files under `root` whose name `wanted` accepts, with their paths relative to it (`/`
/// separators), in name order. Hidden and git-ignored directories are not entered, nor those
/// `skip_dir` names (installed packages: `node_modules`, a virtual environment); symlinks are not
/// followed.
pub(crate) fn manifest_files(
    root: &Path,
    skip_dir: impl Fn(&Path) -> bool + Send + Sync + 'static,
    wanted: impl Fn(&str) -> bool,
) -> Result<Vec<(PathBuf, String)>, WalkError> {
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .require_git(false)
        .git_global(false)
        .parents(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| !(entry.file_type().is_some_and(|t| t.is_dir()) && skip_dir(entry.path())))
        .build();
    let mut found = Vec::new();
    for entry in walker {
        let entry = entry.map_err(|source| WalkError::List {
            root: root.to_owned(),
            source,
        })?;
        let is_wanted = entry.file_name().to_str().is_some_and(&wanted);
        if !is_wanted || !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.into_path();
        let relative = path.strip_prefix(root).map_err(|_| WalkError::Outside {
            path: path.clone(),
            root: root.to_owned(),
        })?;
        let parts: Vec<&str> = relative
            .components()
            .map(|c| {
                c.as_os_str()
                    .to_str()
                    .ok_or_else(|| WalkError::NotUtf8 { path: path.clone() })
            })
            .collect::<Result<_, _>>()?;
        let relative = parts.join("/");
        found.push((path, relative));
    }
    Ok(found)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failing test should panic")]
mod tests {
    use super::*;

    #[test]
    fn manifests_are_read_only_as_regular_files_inside_the_checkout() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(outside.path().join("Cargo.toml"), "[package]\nname = \"secret\"\n").unwrap();
        std::fs::create_dir(root.join("app")).unwrap();
        std::fs::write(root.join("app/Cargo.toml"), "[package]\nname = \"app\"\n").unwrap();
        assert_eq!(
            read_text(root, "app/Cargo.toml").unwrap(),
            "[package]\nname = \"app\"\n"
        );
        // What a process in the sandbox can leave where a manifest was: a symlink out, a
        // directory swapped for one, a FIFO that would block a plain read.
        std::os::unix::fs::symlink(outside.path().join("Cargo.toml"), root.join("Cargo.toml")).unwrap();
        assert!(read_text(root, "Cargo.toml").is_err());
        std::os::unix::fs::symlink(outside.path(), root.join("lib")).unwrap();
        assert!(read_text(root, "lib/Cargo.toml").is_err());
        nix::unistd::mkfifo(
            &root.join("package.json"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        assert!(read_text(root, "package.json").is_err());
    }

    #[test]
    fn kinds_order_by_size() {
        assert!(UpdateKind::Patch < UpdateKind::Minor && UpdateKind::Minor < UpdateKind::Major);
    }
}
