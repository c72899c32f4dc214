//! What a lockfile refresh changed, as a reviewer reads it: the packages `Cargo.lock` and
//! `package-lock.json` lock, each with where it comes from (a registry, or a git repository at a
//! commit), and the difference between two reads of them as changes of five kinds — updated inside
//! its range, a git dependency moved to another commit, replaced by an incompatible version (or a
//! new version locked beside the old one, both kept), new, removed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use semver::Version;
use serde::Deserialize;
use serde_json::Value;

use super::version;
use crate::config::deps::Ecosystem;

/// How far a lockfile refresh goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// Every locked version moves to the newest its range admits (`cargo update`, `npm update`):
    /// the compatible updates' pull request.
    Full,
    /// Only what the manifest edits need (`cargo update --workspace`, `npm install
    /// --package-lock-only`), the rest of the lockfile left as it is: the majors' pull request, so
    /// that it does not repeat the compatible one's refresh and both merge in either order.
    Minimal,
}

/// Where a locked package comes from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// A package registry (crates.io, a sparse index, npm's registry): told apart by version.
    Registry,
    /// A git repository (its URL without the query and the commit) at a commit.
    Git { repository: String, commit: String },
}

/// One package a lockfile locks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Locked {
    pub name: String,
    pub version: String,
    pub source: Source,
}

/// Every package an ecosystem's lockfiles lock, by lockfile scope: the directory, relative to the
/// repository root, of an npm `package-lock.json`; `""` for the workspace's one `Cargo.lock`.
pub type Snapshot = BTreeMap<String, Vec<Locked>>;

/// A lockfile that could not be read; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("could not read {file}: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file} is not a valid lockfile: {message}")]
    Invalid { file: String, message: String },
}

/// How one package's locking changed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeKind {
    /// A newer (or older) version its dependents' ranges already admitted.
    Updated { from: String, to: String },
    /// A git dependency locked at another commit (full SHAs; shown short).
    GitMoved {
        repository: String,
        from: String,
        to: String,
    },
    /// An incompatible version took the place of the old one (`rustix 0.38.8 → 1.1.6`): some
    /// dependent asked for the new major; not an update inside a range.
    Replaced { from: String, to: String },
    /// A version locked beside the ones still locked (`beside`): for Cargo always a new major
    /// (it unifies compatible versions), for npm possibly a second copy in another subtree.
    Alongside { version: String, beside: Vec<String> },
    /// A package the lockfile did not have.
    Added { version: String },
    /// A version no longer locked.
    Removed { version: String },
}

/// One row of a lockfile's change: a package and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Change {
    pub ecosystem: Ecosystem,
    /// The lockfile's scope (see [`Snapshot`]).
    pub scope: String,
    pub name: String,
    pub kind: ChangeKind,
}

/// How many characters of a commit SHA are shown.
const SHORT_SHA: usize = 7;

/// The first characters of a commit SHA, as people quote it.
pub fn short_sha(sha: &str) -> &str {
    sha.get(..SHORT_SHA).unwrap_or(sha)
}

impl Change {
    /// `1.0.0 -> 1.1.0 (lockfile)`, `git abc1234 -> def5678`, … for commit messages and the agent.
    pub fn describe(&self) -> String {
        match &self.kind {
            ChangeKind::Updated { from, to } => format!("{from} -> {to} (lockfile, in range)"),
            ChangeKind::GitMoved { repository, from, to } => {
                format!("git {} -> {} ({repository})", short_sha(from), short_sha(to))
            }
            ChangeKind::Replaced { from, to } => format!("{from} -> {to} (replaced: a new major)"),
            ChangeKind::Alongside { version, beside } => {
                format!("{version} (new, beside {})", beside.join(", "))
            }
            ChangeKind::Added { version } => format!("{version} (new)"),
            ChangeKind::Removed { version } => format!("{version} (removed)"),
        }
    }
}

/// The packages `Cargo.lock` at `root` locks from a registry or a git repository (workspace
/// members and path packages, which have no `source`, are left out). `None` without a lockfile.
pub fn read_cargo(root: &Path) -> Result<Option<Vec<Locked>>, LockError> {
    let Some(text) = read(root, "Cargo.lock")? else {
        return Ok(None);
    };
    parse_cargo(&text).map(Some).map_err(|message| LockError::Invalid {
        file: "Cargo.lock".into(),
        message,
    })
}

/// The packages of a `Cargo.lock`'s text; see [`read_cargo`].
pub fn parse_cargo(text: &str) -> Result<Vec<Locked>, String> {
    #[derive(Deserialize)]
    struct Lockfile {
        #[serde(default)]
        package: Vec<Package>,
    }
    #[derive(Deserialize)]
    struct Package {
        name: String,
        version: String,
        source: Option<String>,
    }
    let lockfile: Lockfile = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_owned())?;
    let mut out: Vec<Locked> = lockfile
        .package
        .into_iter()
        .filter_map(|package| {
            let source = package.source?;
            let source = if source.starts_with("registry+") || source.starts_with("sparse+") {
                Source::Registry
            } else {
                git_source(source.strip_prefix("git+")?)?
            };
            Some(Locked {
                name: package.name,
                version: package.version,
                source,
            })
        })
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// `https://host/repo?rev=…#<commit>` (Cargo) or `ssh://git@host/repo.git#<commit>` (npm) as a git
/// source; `None` without a commit.
fn git_source(url: &str) -> Option<Source> {
    let (location, commit) = url.rsplit_once('#')?;
    let repository = location.split_once('?').map_or(location, |(before, _)| before);
    (!commit.is_empty() && !repository.is_empty()).then(|| Source::Git {
        repository: repository.to_owned(),
        commit: commit.to_owned(),
    })
}

/// The packages `npm-shrinkwrap.json` or `package-lock.json` in directory `dir` (relative to
/// `root`, `""` for the root itself) locks; `None` without either.
pub fn read_npm(root: &Path, dir: &str) -> Result<Option<Vec<Locked>>, LockError> {
    for name in ["npm-shrinkwrap.json", "package-lock.json"] {
        let file = if dir.is_empty() {
            name.to_owned()
        } else {
            format!("{dir}/{name}")
        };
        if let Some(text) = read(root, &file)? {
            let json: Value = serde_json::from_str(&text).map_err(|e| LockError::Invalid {
                file,
                message: e.to_string(),
            })?;
            return Ok(Some(parse_npm(&json)));
        }
    }
    Ok(None)
}

/// The packages of a parsed `package-lock.json`: from `packages` (lockfile versions 2 and 3; the
/// root package, workspace folders and links left out) or the nested `dependencies` (version 1).
/// A package resolved from `git+…#<commit>` is a git package (version 1 writes that URL as its
/// version).
pub fn parse_npm(json: &Value) -> Vec<Locked> {
    let mut out = Vec::new();
    let mut add = |name: &str, entry: &Value| {
        let Some(version) = entry.get("version").and_then(Value::as_str) else {
            return;
        };
        let resolved = entry.get("resolved").and_then(Value::as_str).unwrap_or(version);
        let source = match resolved.strip_prefix("git+") {
            Some(url) => match git_source(url) {
                Some(source) => source,
                None => return,
            },
            None => Source::Registry,
        };
        out.push(Locked {
            name: name.to_owned(),
            version: version.to_owned(),
            source,
        });
    };
    if let Some(packages) = json.get("packages").and_then(Value::as_object) {
        for (key, entry) in packages {
            let Some(at) = key.rfind("node_modules/") else {
                continue;
            };
            if entry.get("link").and_then(Value::as_bool) != Some(true) {
                add(&key[at + "node_modules/".len()..], entry);
            }
        }
    } else if let Some(dependencies) = json.get("dependencies").and_then(Value::as_object) {
        let mut pending = vec![dependencies];
        while let Some(level) = pending.pop() {
            for (name, entry) in level {
                add(name, entry);
                if let Some(nested) = entry.get("dependencies").and_then(Value::as_object) {
                    pending.push(nested);
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The most of a lockfile read.
const MAX_LOCKFILE: u64 = 256 << 20;

/// The text of lockfile `file` (relative to `root`), opened below `root` without following a
/// symlink: the sandbox may have left one (or a FIFO) where the lockfile was. `None` when absent.
fn read(root: &Path, file: &str) -> Result<Option<String>, LockError> {
    let error = |source: std::io::Error| LockError::Read {
        file: file.to_owned(),
        source,
    };
    let beneath = crate::beneath::Beneath::open(root).map_err(error)?;
    match beneath.read_regular(Path::new(file), MAX_LOCKFILE) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|e| LockError::Invalid {
            file: file.to_owned(),
            message: format!("not UTF-8: {e}"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(error(source)),
    }
}

/// What changed between two snapshots of `ecosystem`'s lockfiles, sorted by scope, then name.
///
/// Per package name: a git repository locked at another commit is [`ChangeKind::GitMoved`]; of the
/// registry versions that went and came, each old one is paired with a new one compatible with it
/// ([`ChangeKind::Updated`]); what is left pairs up as [`ChangeKind::Replaced`] (lowest with
/// lowest), and the rest is [`ChangeKind::Alongside`] (versions still locked remain), or
/// [`ChangeKind::Added`] and [`ChangeKind::Removed`]. A scope only one side has is all added or
/// all removed.
pub fn diff(ecosystem: Ecosystem, before: &Snapshot, after: &Snapshot) -> Vec<Change> {
    let empty = Vec::new();
    let scopes: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut out = Vec::new();
    for scope in scopes {
        let old = before.get(scope).unwrap_or(&empty);
        let new = after.get(scope).unwrap_or(&empty);
        let names: BTreeSet<&str> = old.iter().chain(new).map(|p| p.name.as_str()).collect();
        for name in names {
            for kind in package_changes(name, old, new) {
                out.push(Change {
                    ecosystem,
                    scope: scope.clone(),
                    name: name.to_owned(),
                    kind,
                });
            }
        }
    }
    out
}

/// How `name`'s locked packages changed between `old` and `new`.
fn package_changes(name: &str, old: &[Locked], new: &[Locked]) -> Vec<ChangeKind> {
    let of = |side: &[Locked]| -> Vec<Locked> { side.iter().filter(|p| p.name == name).cloned().collect() };
    let (old, new) = (of(old), of(new));
    let mut changes = Vec::new();

    // Git packages, by repository.
    let git = |side: &[Locked]| -> BTreeMap<String, (String, String)> {
        side.iter()
            .filter_map(|p| match &p.source {
                Source::Git { repository, commit } => Some((repository.clone(), (commit.clone(), p.version.clone()))),
                Source::Registry => None,
            })
            .collect()
    };
    let (old_git, new_git) = (git(&old), git(&new));
    for (repository, (commit, version)) in &old_git {
        match new_git.get(repository) {
            Some((now, _)) if now != commit => changes.push(ChangeKind::GitMoved {
                repository: repository.clone(),
                from: commit.clone(),
                to: now.clone(),
            }),
            Some(_) => {}
            None => changes.push(ChangeKind::Removed {
                version: version.clone(),
            }),
        }
    }
    for (repository, (_, version)) in &new_git {
        if !old_git.contains_key(repository) {
            changes.push(ChangeKind::Added {
                version: version.clone(),
            });
        }
    }

    // Registry packages, by version.
    let registry = |side: &[Locked]| -> Vec<String> {
        let mut versions: Vec<String> = side
            .iter()
            .filter(|p| p.source == Source::Registry)
            .map(|p| p.version.clone())
            .collect();
        versions.sort_by_cached_key(|v| (Version::parse(v).ok(), v.clone()));
        versions.dedup();
        versions
    };
    let (old_versions, new_versions) = (registry(&old), registry(&new));
    let mut removed: Vec<&String> = old_versions.iter().filter(|v| !new_versions.contains(v)).collect();
    let mut added: Vec<&String> = new_versions.iter().filter(|v| !old_versions.contains(v)).collect();
    removed.retain(|from| {
        let Ok(from_version) = Version::parse(from) else {
            return true;
        };
        let compatible = added
            .iter()
            .position(|to| Version::parse(to).is_ok_and(|to_version| version::compatible(&from_version, &to_version)));
        match compatible {
            Some(index) => {
                changes.push(ChangeKind::Updated {
                    from: (*from).clone(),
                    to: added.remove(index).clone(),
                });
                false
            }
            None => true,
        }
    });
    let replaced = removed.len().min(added.len());
    for (from, to) in removed.drain(..replaced).zip(added.drain(..replaced)) {
        changes.push(ChangeKind::Replaced {
            from: from.clone(),
            to: to.clone(),
        });
    }
    let kept: Vec<String> = old_versions
        .iter()
        .filter(|v| new_versions.contains(v))
        .cloned()
        .collect();
    for version in added {
        changes.push(if kept.is_empty() {
            ChangeKind::Added {
                version: version.clone(),
            }
        } else {
            ChangeKind::Alongside {
                version: version.clone(),
                beside: kept.clone(),
            }
        });
    }
    for version in removed {
        changes.push(ChangeKind::Removed {
            version: version.clone(),
        });
    }
    changes
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failing test should panic")]
mod tests {
    use super::*;

    /// Real `Cargo.lock` pairs of astral-sh/uv (tests/fixtures/lockfiles/SOURCES.md).
    fn uv(commit: &str) -> (Snapshot, Snapshot) {
        let read = |text: &str| Snapshot::from([(String::new(), parse_cargo(text).unwrap())]);
        let (before, after) = match commit {
            "15663eab26" => (
                include_str!("../../../tests/fixtures/lockfiles/uv-15663eab26-before.Cargo.lock"),
                include_str!("../../../tests/fixtures/lockfiles/uv-15663eab26-after.Cargo.lock"),
            ),
            "680392f03f" => (
                include_str!("../../../tests/fixtures/lockfiles/uv-680392f03f-before.Cargo.lock"),
                include_str!("../../../tests/fixtures/lockfiles/uv-680392f03f-after.Cargo.lock"),
            ),
            _ => (
                include_str!("../../../tests/fixtures/lockfiles/uv-027db656aa-before.Cargo.lock"),
                include_str!("../../../tests/fixtures/lockfiles/uv-027db656aa-after.Cargo.lock"),
            ),
        };
        (read(before), read(after))
    }

    fn rows(changes: &[Change]) -> Vec<String> {
        changes.iter().map(|c| format!("{} {}", c.name, c.describe())).collect()
    }

    #[test]
    fn a_new_major_locked_beside_the_old_one_is_not_an_update_in_range() {
        // uv's reflink-copy 0.1.24 → 0.1.25 brought rustix 1.0 in beside 0.38.
        let (before, after) = uv("15663eab26");
        let changes = diff(Ecosystem::Cargo, &before, &after);
        insta::assert_snapshot!(rows(&changes).join("\n"), @r"
        linux-raw-sys 0.9.2 (new, beside 0.4.15)
        reflink-copy 0.1.24 -> 0.1.25 (lockfile, in range)
        rustix 1.0.1 (new, beside 0.38.44)
        ");
    }

    #[test]
    fn a_git_dependency_moved_to_another_commit_is_one_row_per_package() {
        let (before, after) = uv("680392f03f");
        let changes = diff(Ecosystem::Cargo, &before, &after);
        insta::assert_snapshot!(rows(&changes).join("\n"), @r"
        pubgrub git 73d6ecf -> 06ec5a5 (https://github.com/astral-sh/pubgrub)
        version-ranges git 73d6ecf -> 06ec5a5 (https://github.com/astral-sh/pubgrub)
        ");
        assert!(changes.iter().all(|c| matches!(
            &c.kind,
            ChangeKind::GitMoved { repository, .. } if repository == "https://github.com/astral-sh/pubgrub"
        )));
    }

    #[test]
    fn a_cargo_update_is_mostly_updates_in_range_and_says_what_else_it_did() {
        let (before, after) = uv("027db656aa");
        let changes = diff(Ecosystem::Cargo, &before, &after);
        // Five new majors (`windows` 0.58 → 0.59, `winnow` 0.6 → 0.7, …) came with it, and four
        // packages were new: none of them is an update in range.
        let replaced = changes
            .iter()
            .filter(|c| matches!(c.kind, ChangeKind::Replaced { .. }))
            .count();
        assert_eq!(replaced, 5);
        insta::assert_snapshot!(rows(&changes).join("\n"), @r"
        anstyle-wincon 3.0.6 -> 3.0.7 (lockfile, in range)
        bstr 1.11.1 -> 1.11.3 (lockfile, in range)
        bumpalo 3.16.0 -> 3.17.0 (lockfile, in range)
        cc 1.2.5 -> 1.2.11 (lockfile, in range)
        clap_complete 4.5.40 -> 4.5.44 (lockfile, in range)
        clap_complete_nushell 4.5.4 -> 4.5.5 (lockfile, in range)
        cmake 0.1.52 -> 0.1.53 (lockfile, in range)
        cpufeatures 0.2.16 -> 0.2.17 (lockfile, in range)
        crunchy 0.2.2 -> 0.2.3 (lockfile, in range)
        event-listener 5.3.1 -> 5.4.0 (lockfile, in range)
        futures-lite 2.5.0 -> 2.6.0 (lockfile, in range)
        getrandom 0.3.1 (new, beside 0.2.15)
        http-content-range 0.2.0 -> 0.2.1 (lockfile, in range)
        httparse 1.9.5 -> 1.10.0 (lockfile, in range)
        hyper 1.5.2 -> 1.6.0 (lockfile, in range)
        indicatif 0.17.9 -> 0.17.11 (lockfile, in range)
        ipnet 2.10.1 -> 2.11.0 (lockfile, in range)
        is-terminal 0.4.13 -> 0.4.15 (lockfile, in range)
        jiff 0.1.27 -> 0.1.28 (lockfile, in range)
        js-sys 0.3.76 -> 0.3.77 (lockfile, in range)
        linux-raw-sys 0.4.14 -> 0.4.15 (lockfile, in range)
        log 0.4.22 -> 0.4.25 (lockfile, in range)
        miniz_oxide 0.8.2 -> 0.8.3 (lockfile, in range)
        openssl-probe 0.1.5 -> 0.1.6 (lockfile, in range)
        pin-project 1.1.7 -> 1.1.8 (lockfile, in range)
        pin-project-internal 1.1.7 -> 1.1.8 (lockfile, in range)
        pin-project-lite 0.2.15 -> 0.2.16 (lockfile, in range)
        reflink-copy 0.1.20 -> 0.1.23 (lockfile, in range)
        rustls 0.23.20 -> 0.23.22 (lockfile, in range)
        rustls-pki-types 1.10.1 -> 1.11.0 (lockfile, in range)
        rustversion 1.0.19 (new)
        ryu 1.0.18 -> 1.0.19 (lockfile, in range)
        security-framework 3.1.0 -> 3.2.0 (lockfile, in range)
        security-framework-sys 2.13.0 -> 2.14.0 (lockfile, in range)
        semver 1.0.24 -> 1.0.25 (lockfile, in range)
        serde_json 1.0.137 -> 1.0.138 (lockfile, in range)
        simplecss 0.2.1 -> 0.2.2 (lockfile, in range)
        tempfile 3.15.0 -> 3.16.0 (lockfile, in range)
        test-log-macros 0.2.16 -> 0.2.17 (lockfile, in range)
        toml_edit 0.22.22 -> 0.22.23 (lockfile, in range)
        unicode-ident 1.0.14 -> 1.0.16 (lockfile, in range)
        uuid 1.11.0 -> 1.12.1 (lockfile, in range)
        valuable 0.1.0 -> 0.1.1 (lockfile, in range)
        wasi 0.13.3+wasi-0.2.2 (new, beside 0.11.0+wasi-snapshot-preview1)
        wasm-bindgen 0.2.99 -> 0.2.100 (lockfile, in range)
        wasm-bindgen-backend 0.2.99 -> 0.2.100 (lockfile, in range)
        wasm-bindgen-futures 0.4.49 -> 0.4.50 (lockfile, in range)
        wasm-bindgen-macro 0.2.99 -> 0.2.100 (lockfile, in range)
        wasm-bindgen-macro-support 0.2.99 -> 0.2.100 (lockfile, in range)
        wasm-bindgen-shared 0.2.99 -> 0.2.100 (lockfile, in range)
        web-sys 0.3.76 -> 0.3.77 (lockfile, in range)
        webpki-roots 0.26.7 -> 0.26.8 (lockfile, in range)
        windows 0.58.0 -> 0.59.0 (replaced: a new major)
        windows-core 0.58.0 -> 0.59.0 (replaced: a new major)
        windows-implement 0.58.0 -> 0.59.0 (replaced: a new major)
        windows-interface 0.58.0 -> 0.59.0 (replaced: a new major)
        winnow 0.6.20 -> 0.7.0 (replaced: a new major)
        wit-bindgen-rt 0.33.0 (new)
        xattr 1.3.1 -> 1.4.0 (lockfile, in range)
        ");
    }

    #[test]
    fn every_kind_from_hand_made_lockfiles() {
        let registry = |name: &str, version: &str| Locked {
            name: name.into(),
            version: version.into(),
            source: Source::Registry,
        };
        let git = |name: &str, commit: &str| Locked {
            name: name.into(),
            version: "0.1.0".into(),
            source: Source::Git {
                repository: "https://example.test/forked".into(),
                commit: commit.into(),
            },
        };
        let before = Snapshot::from([(
            String::new(),
            vec![
                registry("rand", "0.8.4"),
                registry("rand", "0.9.0"),
                registry("syn", "1.0.109"),
                registry("syn", "2.0.50"),
                registry("gone", "1.0.0"),
                registry("libc", "0.2.150"),
                registry("rustix", "0.38.8"),
                git("forked", "0123456789abcdef"),
            ],
        )]);
        let after = Snapshot::from([(
            String::new(),
            vec![
                registry("rand", "0.8.5"),
                registry("rand", "0.9.2"),
                registry("syn", "2.0.87"),
                registry("libc", "0.2.150"),
                registry("rustix", "1.1.6"),
                registry("new", "1.0.0"),
                git("forked", "fedcba9876543210"),
            ],
        )]);
        assert_eq!(
            rows(&diff(Ecosystem::Cargo, &before, &after)),
            [
                "forked git 0123456 -> fedcba9 (https://example.test/forked)",
                "gone 1.0.0 (removed)",
                "new 1.0.0 (new)",
                "rand 0.8.4 -> 0.8.5 (lockfile, in range)",
                "rand 0.9.0 -> 0.9.2 (lockfile, in range)",
                "rustix 0.38.8 -> 1.1.6 (replaced: a new major)",
                "syn 2.0.50 -> 2.0.87 (lockfile, in range)",
                "syn 1.0.109 (removed)",
            ]
        );
        assert_eq!(diff(Ecosystem::Cargo, &before, &before), []);
    }

    #[test]
    fn npm_lockfiles_of_every_version_give_registry_and_git_packages() {
        let v3 = serde_json::json!({
            "lockfileVersion": 3,
            "packages": {
                "": {"name": "app"},
                "node_modules/left-pad": {"version": "1.3.0", "resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz"},
                "node_modules/a/node_modules/left-pad": {"version": "1.1.0"},
                "node_modules/forked": {"version": "2.0.0", "resolved": "git+ssh://git@github.com/o/forked.git#89abcdef0123456789abcdef0123456789abcdef"},
                "node_modules/local": {"resolved": "packages/local", "link": true},
                "packages/local": {"version": "0.0.1"}
            }
        });
        let v1 = serde_json::json!({
            "lockfileVersion": 1,
            "dependencies": {
                "forked": {"version": "git+ssh://git@github.com/o/forked.git#0123456789abcdef0123456789abcdef01234567", "from": "forked@github:o/forked"},
                "a": {"version": "1.0.0", "dependencies": {"left-pad": {"version": "1.1.0"}}}
            }
        });
        let before = Snapshot::from([("web".to_owned(), parse_npm(&v1))]);
        let after = Snapshot::from([("web".to_owned(), parse_npm(&v3))]);
        let changes = diff(Ecosystem::Npm, &before, &after);
        assert!(
            changes
                .iter()
                .all(|c| c.scope == "web" && c.ecosystem == Ecosystem::Npm)
        );
        assert_eq!(
            rows(&changes),
            [
                "a 1.0.0 (removed)",
                "forked git 0123456 -> 89abcde (ssh://git@github.com/o/forked.git)",
                "left-pad 1.3.0 (new, beside 1.1.0)",
            ]
        );
    }

    #[test]
    fn unreadable_lockfiles_name_their_file() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_cargo(dir.path()).unwrap().is_none());
        assert!(read_npm(dir.path(), "web").unwrap().is_none());
        std::fs::write(dir.path().join("Cargo.lock"), "[[package]]\nname = 1\n").unwrap();
        let error = read_cargo(dir.path()).unwrap_err().to_string();
        assert!(error.starts_with("Cargo.lock is not a valid lockfile: "), "{error}");
        std::fs::create_dir(dir.path().join("web")).unwrap();
        std::fs::write(dir.path().join("web/package-lock.json"), "{").unwrap();
        let error = read_npm(dir.path(), "web").unwrap_err().to_string();
        assert!(
            error.starts_with("web/package-lock.json is not a valid lockfile: "),
            "{error}"
        );
    }

    #[test]
    fn a_lockfile_the_sandbox_swapped_for_a_symlink_or_a_fifo_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(
            outside.path().join("Cargo.lock"),
            "[[package]]\nname = \"secret\"\nversion = \"1.0.0\"\n",
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path().join("Cargo.lock"), dir.path().join("Cargo.lock")).unwrap();
        assert!(read_cargo(dir.path()).is_err());
        // A directory on the way swapped for a symlink is refused too.
        std::os::unix::fs::symlink(outside.path(), dir.path().join("web")).unwrap();
        std::fs::write(outside.path().join("package-lock.json"), "{\"packages\": {}}").unwrap();
        assert!(read_npm(dir.path(), "web").is_err());
        // A FIFO would block a plain read forever.
        std::fs::remove_file(dir.path().join("Cargo.lock")).unwrap();
        nix::unistd::mkfifo(
            &dir.path().join("Cargo.lock"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        assert!(read_cargo(dir.path()).is_err());
    }
}
