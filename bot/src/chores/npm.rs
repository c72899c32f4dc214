//! npm: the dependencies `package.json` files declare, the updates their ranges allow (the range
//! syntax is in `range`), the registry's package metadata (a deprecated version counts as yanked),
//! the versions `package-lock.json` holds, and edits of `package.json`'s text that keep its
//! formatting.

use std::collections::BTreeMap;
use std::ops::Range as Span;
use std::path::{Component, Path, PathBuf};

use semver::Version;
use serde_json::Value;
use url::Url;

use super::{Dependency, RegistryClient, RegistryError, Release, Update, UpdateKind};
use crate::config::deps::{Ecosystem, Policy};

mod range;

use range::Range;

/// The sections of `package.json` kept current. `peerDependencies` is not among them: a peer range
/// is a promise to the package's own users, not a choice of version.
pub const SECTIONS: [&str; 3] = ["dependencies", "devDependencies", "optionalDependencies"];

const REGISTRY: &str = "the npm registry";
const MANIFEST: &str = "package.json";

/// A `package.json`, a lockfile or a registry document that could not be read or edited.
#[derive(Debug, thiserror::Error)]
pub enum NpmError {
    #[error(transparent)]
    Walk(#[from] super::WalkError),
    #[error("{file}: could not read it: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: not valid JSON: {source}")]
    Json {
        file: String,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Lock(#[from] super::lock::LockError),
    #[error("{manifest}: not a path inside the repository")]
    Outside { manifest: String },
    #[error("{manifest}: {source}")]
    Edit {
        manifest: String,
        #[source]
        source: EditError,
    },
    #[error("{file}: could not write it: {source}")]
    Write {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{name}` is not an npm package name")]
    PackageName { name: String },
    #[error("could not make its URL: {0}")]
    PackageUrl(#[source] url::ParseError),
    #[error("not JSON: {0}")]
    Packument(#[source] serde_json::Error),
    #[error("it has no `versions` object")]
    NoVersions,
}

/// Why a requirement could not be written into a `package.json`'s text.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("`{section}.{name}` is not a string")]
    NotAString { section: String, name: String },
    #[error("there is no `{section}.{name}`")]
    Missing { section: String, name: String },
    #[error("could not encode `{requirement}`: {source}")]
    Encode {
        requirement: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("not valid JSON at line {line}: {what}")]
    Syntax { line: usize, what: String },
}

/// Every dependency of every `package.json` under `root` (not in `node_modules`, hidden or ignored
/// directories), in the [`SECTIONS`] kept current, by name within a section. Requirements that are
/// not registry ranges are skipped: `file:`, `link:`, git and URL specs, `workspace:`, `npm:`
/// aliases, GitHub shorthands, dist-tags such as `latest`.
pub fn scan(root: &Path) -> Result<Vec<Dependency>, NpmError> {
    let mut deps = Vec::new();
    for (_, manifest) in manifests(root)? {
        let text = super::read_text(root, &manifest).map_err(|source| NpmError::Read {
            file: manifest.clone(),
            source,
        })?;
        let json: Value = serde_json::from_str(&text).map_err(|source| NpmError::Json {
            file: manifest.clone(),
            source,
        })?;
        for section in SECTIONS {
            let Some(entries) = json.get(section).and_then(Value::as_object) else {
                continue;
            };
            for (name, spec) in entries {
                let Some(spec) = spec.as_str() else {
                    continue;
                };
                if !is_registry_spec(spec) {
                    continue;
                }
                let Ok(range) = Range::parse(spec) else {
                    continue;
                };
                deps.push(Dependency {
                    ecosystem: Ecosystem::Npm,
                    name: name.clone(),
                    manifest: manifest.clone(),
                    section: section.to_owned(),
                    requirement: spec.to_owned(),
                    pinned: range.is_pinned(),
                    marker: None,
                });
            }
        }
    }
    Ok(deps)
}

/// `package.json` files under `root`, outside `node_modules`, with their paths relative to it.
fn manifests(root: &Path) -> Result<Vec<(PathBuf, String)>, super::WalkError> {
    super::manifest_files(root, |dir| dir.ends_with("node_modules"), |name| name == MANIFEST)
}

/// Whether `spec` names versions of the registry package itself (rather than a path, a URL, a git
/// repository, a workspace package, another package or a dist-tag: those parse as no range anyway).
fn is_registry_spec(spec: &str) -> bool {
    // `file:`, `link:`, `git+https:`, `github:`, `workspace:`, `npm:`, `http:`… all have a colon;
    // paths and GitHub shorthands (`owner/repo`) a slash. No range has either.
    !spec.contains(':') && !spec.contains('/') && !spec.trim_start().starts_with('.')
}

/// The updates `policy` allows for `dep`: none when the newest release is inside its range (the
/// lockfile refresh takes it) or the dependency is pinned or ignored; else the newest compatible
/// release its range excludes (a patch or minor edit of the requirement), and, with
/// `policy.major`, the newest release of a newer major, as an update of its own. Of `||`
/// alternatives, the highest is the one moved. `locked` is the version the lockfile has; one the
/// range does not admit (another copy of the package deeper in the tree) is not this dependency's.
pub fn plan(dep: &Dependency, locked: Option<&str>, releases: &[Release], policy: &Policy) -> Vec<Update> {
    let policy = policy.for_package(dep.ecosystem, &dep.name);
    if policy.ignore || (dep.pinned && !policy.update_pinned) {
        return Vec::new();
    }
    let Ok(range) = Range::parse(&dep.requirement) else {
        return Vec::new();
    };
    let floor = range.floor();
    let from = locked
        .and_then(|v| Version::parse(v).ok())
        .filter(|v| range.satisfies(v))
        .unwrap_or_else(|| floor.clone());
    let eligible: Vec<(Version, &Release)> = releases
        .iter()
        .filter(|r| !r.yanked)
        .filter_map(|r| Version::parse(&r.version).ok().map(|v| (v, r)))
        .filter(|(v, _)| v.pre.is_empty() && *v > from)
        .collect();
    let Some((newest, newest_release)) = eligible.iter().max_by(|a, b| a.0.cmp(&b.0)) else {
        return Vec::new();
    };
    if range.satisfies(newest) {
        return Vec::new();
    }
    let update = |to: &Version, release: &Release| {
        range.rewrite(&dep.requirement, to).map(|requirement| Update {
            ecosystem: Ecosystem::Npm,
            name: dep.name.clone(),
            manifest: Some(dep.manifest.clone()),
            section: Some(dep.section.clone()),
            from: from.to_string(),
            to: to.to_string(),
            kind: kind(&from, to),
            new_requirement: Some(requirement),
            notes_url: release.notes_url.clone(),
            marker: None,
        })
    };
    let mut updates = Vec::new();
    let compatible = eligible
        .iter()
        .filter(|(v, _)| compatibility(v) == compatibility(&floor) && !range.satisfies(v))
        .max_by(|a, b| a.0.cmp(&b.0));
    if let Some((version, release)) = compatible {
        updates.extend(update(version, release));
    }
    if policy.major && compatibility(newest) != compatibility(&floor) {
        updates.extend(update(newest, newest_release));
    }
    updates
}

/// What a release must share with another to be compatible with it: the major version, or for
/// `0.x` the minor, or for `0.0.x` the patch (npm's caret, Cargo's default).
fn compatibility(v: &Version) -> (u64, u64, u64) {
    match (v.major, v.minor) {
        (0, 0) => (0, 0, v.patch),
        (0, minor) => (0, minor, 0),
        (major, _) => (major, 0, 0),
    }
}

fn kind(from: &Version, to: &Version) -> UpdateKind {
    if compatibility(from) != compatibility(to) {
        UpdateKind::Major
    } else if (from.major, from.minor) != (to.major, to.minor) {
        UpdateKind::Minor
    } else {
        UpdateKind::Patch
    }
}

/// The versions of `name` the registry lists, oldest first (versions that are not semver are left
/// out). A deprecated version is yanked; the release notes are the GitHub repository's releases
/// page when the package names one.
pub async fn releases(client: &RegistryClient, name: &str) -> Result<Vec<Release>, RegistryError> {
    let malformed = |message: String| RegistryError::Malformed {
        registry: REGISTRY,
        package: name.to_owned(),
        message,
    };
    let url = package_url(&client.registries.npm, name).map_err(|e| malformed(e.to_string()))?;
    let Some(body) = client.get(REGISTRY, name, url, "application/json").await? else {
        return Err(RegistryError::NotFound {
            registry: REGISTRY,
            package: name.to_owned(),
        });
    };
    parse_packument(&body).map_err(|e| malformed(e.to_string()))
}

/// The releases in a registry's package document (a "packument").
fn parse_packument(body: &str) -> Result<Vec<Release>, NpmError> {
    let json: Value = serde_json::from_str(body).map_err(NpmError::Packument)?;
    let versions = json
        .get("versions")
        .and_then(Value::as_object)
        .ok_or(NpmError::NoVersions)?;
    let notes_url = json.get("repository").and_then(github_releases_url);
    // The full document's `time` maps each version to when it was published (the abbreviated
    // one npm installs from has no `time`).
    let times = json.get("time").and_then(Value::as_object);
    let mut releases: Vec<(Version, Release)> = versions
        .iter()
        .filter_map(|(version, meta)| {
            let parsed = Version::parse(version).ok()?;
            // `npm deprecate pkg@v ""` un-deprecates by writing an empty message.
            let yanked = match meta.get("deprecated") {
                Some(Value::String(message)) => !message.is_empty(),
                Some(Value::Bool(deprecated)) => *deprecated,
                _ => false,
            };
            let release = Release {
                version: version.clone(),
                yanked,
                notes_url: notes_url.clone(),
                rust_version: None,
                requires_python: Vec::new(),
                published: times.and_then(|t| t.get(version)?.as_str()?.parse::<jiff::Timestamp>().ok()),
            };
            Some((parsed, release))
        })
        .collect();
    releases.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(releases.into_iter().map(|(_, r)| r).collect())
}

/// `{base}{name}`, a scoped name's slash encoded (`@scope%2fpkg`) as registries expect.
fn package_url(base: &Url, name: &str) -> Result<Url, NpmError> {
    if name.is_empty() || name.starts_with('.') || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(NpmError::PackageName { name: name.to_owned() });
    }
    let mut encoded = String::new();
    for (i, byte) in name.bytes().enumerate() {
        match byte {
            b'@' if i == 0 => encoded.push('@'),
            b'/' => encoded.push_str("%2f"),
            b if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'!' | b'*' | b'(' | b')') => {
                encoded.push(char::from(b));
            }
            b => encoded.push_str(&format!("%{b:02X}")),
        }
    }
    let mut text = base.as_str().to_owned();
    if !text.ends_with('/') {
        text.push('/');
    }
    text.push_str(&encoded);
    Url::parse(&text).map_err(NpmError::PackageUrl)
}

/// `https://github.com/{owner}/{repo}/releases` for a `repository` field (a string or `{url}`)
/// naming a GitHub repository: `github:o/r`, `o/r`, `git+https://github.com/o/r.git`,
/// `git@github.com:o/r.git`, ….
fn github_releases_url(repository: &Value) -> Option<String> {
    let text = match repository {
        Value::String(text) => text.as_str(),
        Value::Object(fields) => fields.get("url")?.as_str()?,
        _ => return None,
    };
    let text = text.trim();
    let path = if let Some(rest) = text.strip_prefix("github:") {
        rest
    } else if let Some(at) = text.find("github.com") {
        text[at + "github.com".len()..].strip_prefix(['/', ':'])?
    } else if !text.contains(':') && text.matches('/').count() == 1 {
        text
    } else {
        return None;
    };
    let path = path.split(['#', '?']).next()?;
    let mut segments = path.split('/');
    let owner = segments.next()?;
    let repo = segments.next()?;
    let repo = repo.strip_suffix(".git").unwrap_or(repo);
    let valid = |part: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    (valid(owner) && valid(repo)).then(|| format!("https://github.com/{owner}/{repo}/releases"))
}

/// The versions `package-lock.json` (or `npm-shrinkwrap.json`) in `dir` holds: package name →
/// every version locked (several when the tree has a package twice), as [`super::lock::read_npm`]
/// reads them, semver versions only. An empty map when there is no lockfile.
pub fn locked(dir: &Path) -> Result<BTreeMap<String, Vec<String>>, NpmError> {
    let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for package in super::lock::read_npm(dir, "")?.unwrap_or_default() {
        if Version::parse(&package.version).is_ok() {
            let list = versions.entry(package.name).or_default();
            if !list.contains(&package.version) {
                list.push(package.version);
            }
        }
    }
    for list in versions.values_mut() {
        list.sort_by_cached_key(|v| Version::parse(v).ok());
    }
    Ok(versions)
}

/// The command that refreshes `package-lock.json` against `registry`, `package.json` left alone,
/// no install scripts run, no audit asked for. A full refresh is `npm update`: every locked
/// version moved to the newest its range (as edited) admits. A minimal one is `npm install
/// --package-lock-only`, which keeps every locked version its range still admits and moves only
/// what the manifest edits need.
pub fn lock_command(registry: &Url, refresh: super::lock::Refresh) -> String {
    let url = registry.as_str();
    let plain = url.chars().all(|c| {
        c.is_ascii_alphanumeric() || matches!(c, ':' | '/' | '.' | '_' | '~' | '%' | '@' | '+' | '=' | '-' | ',')
    });
    let url = if plain {
        url.to_owned()
    } else {
        crate::shell::quote(url)
    };
    let command = match refresh {
        super::lock::Refresh::Full => "update",
        super::lock::Refresh::Minimal => "install",
    };
    format!("npm {command} --package-lock-only --ignore-scripts --no-audit --no-fund --registry {url}")
}

/// Writes `update.new_requirement` as the value of `update.name` in its section of its
/// `package.json`, changing nothing else of the text. A lockfile-only update changes nothing here.
pub fn apply(root: &Path, update: &Update) -> Result<(), NpmError> {
    let (Some(manifest), Some(section), Some(requirement)) =
        (&update.manifest, &update.section, &update.new_requirement)
    else {
        return Ok(());
    };
    let path = manifest_path(root, manifest)?;
    let text = super::read_text(root, manifest).map_err(|source| NpmError::Read {
        file: manifest.clone(),
        source,
    })?;
    let edited = set_requirement(&text, section, &update.name, requirement).map_err(|source| NpmError::Edit {
        manifest: manifest.clone(),
        source,
    })?;
    std::fs::write(&path, edited).map_err(|source| NpmError::Write {
        file: manifest.clone(),
        source,
    })
}

/// `root/manifest`, refusing a manifest path that would leave `root`.
fn manifest_path(root: &Path, manifest: &str) -> Result<PathBuf, NpmError> {
    let relative = Path::new(manifest);
    if !relative.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(NpmError::Outside {
            manifest: manifest.to_owned(),
        });
    }
    Ok(root.join(relative))
}

/// `text` with the string value of `section.name` replaced by `requirement` (JSON-escaped).
fn set_requirement(text: &str, section: &str, name: &str, requirement: &str) -> Result<String, EditError> {
    let mut scanner = Scanner { text, pos: 0 };
    scanner.whitespace();
    let root = scanner.members()?;
    let mut spans = Vec::new();
    for (key, value) in &root {
        if key != section || !text[value.clone()].starts_with('{') {
            continue;
        }
        let mut inner = Scanner { text, pos: value.start };
        for (key, value) in inner.members()? {
            if key == name {
                if !text[value.clone()].starts_with('"') {
                    return Err(EditError::NotAString {
                        section: section.to_owned(),
                        name: name.to_owned(),
                    });
                }
                spans.push(value);
            }
        }
    }
    if spans.is_empty() {
        return Err(EditError::Missing {
            section: section.to_owned(),
            name: name.to_owned(),
        });
    }
    let literal = serde_json::to_string(requirement).map_err(|source| EditError::Encode {
        requirement: requirement.to_owned(),
        source,
    })?;
    let mut edited = text.to_owned();
    for span in spans.into_iter().rev() {
        edited.replace_range(span, &literal);
    }
    Ok(edited)
}

/// Just enough of a JSON reader to find where values are in the text.
struct Scanner<'a> {
    text: &'a str,
    pos: usize,
}

impl Scanner<'_> {
    fn error(&self, what: &str) -> EditError {
        let line = self.text[..self.pos.min(self.text.len())].matches('\n').count() + 1;
        EditError::Syntax {
            line,
            what: what.to_owned(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn whitespace(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), EditError> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected `{}`", char::from(byte))))
        }
    }

    /// The members of the object at the cursor: each key (decoded) and its value's span.
    fn members(&mut self) -> Result<Vec<(String, Span<usize>)>, EditError> {
        self.expect(b'{')?;
        let mut members = Vec::new();
        self.whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(members);
        }
        loop {
            self.whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a key"));
            }
            let key_span = self.string()?;
            let key: String = serde_json::from_str(&self.text[key_span]).map_err(|e| self.error(&e.to_string()))?;
            self.whitespace();
            self.expect(b':')?;
            self.whitespace();
            let value = self.value()?;
            members.push((key, value));
            self.whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(members);
                }
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    fn string(&mut self) -> Result<Span<usize>, EditError> {
        let start = self.pos;
        self.expect(b'"')?;
        loop {
            match self.peek() {
                Some(b'\\') => self.pos += 2,
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(start..self.pos);
                }
                Some(_) => self.pos += 1,
                None => return Err(self.error("a string does not end")),
            }
        }
    }

    fn value(&mut self) -> Result<Span<usize>, EditError> {
        let start = self.pos;
        match self.peek() {
            Some(b'"') => return self.string(),
            Some(b'{') => {
                self.members()?;
            }
            Some(b'[') => {
                self.pos += 1;
                self.whitespace();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                } else {
                    loop {
                        self.whitespace();
                        self.value()?;
                        self.whitespace();
                        match self.peek() {
                            Some(b',') => self.pos += 1,
                            Some(b']') => {
                                self.pos += 1;
                                break;
                            }
                            _ => return Err(self.error("expected `,` or `]`")),
                        }
                    }
                }
            }
            Some(_) => {
                while self
                    .peek()
                    .is_some_and(|b| !b.is_ascii_whitespace() && !matches!(b, b',' | b'}' | b']'))
                {
                    self.pos += 1;
                }
                if self.pos == start {
                    return Err(self.error("expected a value"));
                }
            }
            None => return Err(self.error("expected a value")),
        }
        Ok(start..self.pos)
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failing test should panic")]
mod tests {
    use super::*;
    use crate::chores::lock::Refresh;

    fn dep(requirement: &str) -> Dependency {
        Dependency {
            ecosystem: Ecosystem::Npm,
            name: "left-pad".into(),
            manifest: "package.json".into(),
            section: "dependencies".into(),
            requirement: requirement.into(),
            pinned: Range::parse(requirement).unwrap().is_pinned(),
            marker: None,
        }
    }

    fn releases(versions: &[&str]) -> Vec<Release> {
        versions
            .iter()
            .map(|version| {
                let (version, yanked) = match version.strip_suffix(" yanked") {
                    Some(version) => (version, true),
                    None => (*version, false),
                };
                Release {
                    version: version.into(),
                    yanked,
                    notes_url: Some(format!("https://example.test/{version}")),
                    rust_version: None,
                    requires_python: Vec::new(),
                    published: None,
                }
            })
            .collect()
    }

    fn planned(
        requirement: &str,
        locked: Option<&str>,
        versions: &[&str],
        policy: &Policy,
    ) -> Vec<(String, String, UpdateKind, String)> {
        plan(&dep(requirement), locked, &releases(versions), policy)
            .into_iter()
            .map(|u| (u.from, u.to, u.kind, u.new_requirement.unwrap()))
            .collect()
    }

    fn update(from: &str, to: &str, kind: UpdateKind, requirement: &str) -> (String, String, UpdateKind, String) {
        (from.into(), to.into(), kind, requirement.into())
    }

    #[test]
    fn plans_follow_the_policy() {
        let default = Policy::default();
        let major = Policy {
            major: true,
            ..Policy::default()
        };
        let pinned = Policy {
            update_pinned: true,
            major: true,
            ..Policy::default()
        };
        let all = [
            "1.2.3",
            "1.2.4",
            "1.3.0",
            "1.4.0-beta.1",
            "1.3.1 yanked",
            "2.0.0",
            "2.1.0",
            "3.0.0-rc.1",
        ];
        // Inside the range: the lockfile refresh takes it.
        assert!(planned("^1.2.3", Some("1.2.3"), &all[..4], &major).is_empty());
        // Compatible but excluded: a minor edit; the major only when asked, on its own.
        assert_eq!(
            planned("~1.2.3", Some("1.2.3"), &all, &default),
            [update("1.2.3", "1.3.0", UpdateKind::Minor, "~1.3.0")]
        );
        assert_eq!(
            planned("~1.2.3", None, &all, &major),
            [
                update("1.2.3", "1.3.0", UpdateKind::Minor, "~1.3.0"),
                update("1.2.3", "2.1.0", UpdateKind::Major, "~2.1.0")
            ]
        );
        assert!(planned("^1.2.3", Some("1.3.0"), &all, &default).is_empty());
        assert_eq!(
            planned("^1.2.3", Some("1.3.0"), &all, &major),
            [update("1.3.0", "2.1.0", UpdateKind::Major, "^2.1.0")]
        );
        // Patch level for 0.x.
        assert_eq!(
            planned("0.4.1", None, &["0.4.1", "0.4.2", "0.5.0"], &pinned),
            [
                update("0.4.1", "0.4.2", UpdateKind::Patch, "0.4.2"),
                update("0.4.1", "0.5.0", UpdateKind::Major, "0.5.0")
            ]
        );
        // Pinned stays pinned unless asked.
        assert!(planned("1.2.3", None, &all, &major).is_empty());
        assert_eq!(
            planned("1.2.3", None, &all, &pinned),
            [
                update("1.2.3", "1.3.0", UpdateKind::Minor, "1.3.0"),
                update("1.2.3", "2.1.0", UpdateKind::Major, "2.1.0")
            ]
        );
        // Ignored names, and nothing newer than the lockfile.
        let ignoring = Policy {
            ignore: vec!["left-*".into()],
            major: true,
            ..Policy::default()
        };
        assert!(planned("~1.2.3", None, &all, &ignoring).is_empty());
        assert!(planned("~2.1.0", Some("2.1.0"), &all, &major).is_empty());
        // A locked version outside the range is another copy's, not this dependency's.
        assert_eq!(
            planned("~1.2.3", Some("2.0.0"), &all, &default),
            [update("1.2.3", "1.3.0", UpdateKind::Minor, "~1.3.0")]
        );
        // `||`: the highest alternative moves.
        assert_eq!(
            planned("1.x || 2.0.x", Some("2.0.0"), &all, &default),
            [update("2.0.0", "2.1.0", UpdateKind::Minor, "1.x || 2.1.x")]
        );
        // Release notes come from the release planned.
        let updates = plan(&dep("~1.2.3"), None, &releases(&all), &default);
        assert_eq!(updates[0].notes_url.as_deref(), Some("https://example.test/1.3.0"));
        assert_eq!(
            (updates[0].manifest.as_deref(), updates[0].section.as_deref()),
            (Some("package.json"), Some("dependencies"))
        );
    }

    #[test]
    fn scan_reads_the_sections_kept_current_and_skips_what_is_no_range() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("package.json"),
            r#"{
  "name": "app",
  "dependencies": {"left-pad": "^1.3.0", "@scope/util": "~2.1.0", "local": "file:../local",
    "gitdep": "git+https://github.com/o/r.git", "shorthand": "o/r", "tagged": "latest",
    "ws": "workspace:*", "alias": "npm:other@^1", "exact": "4.17.21", "url": "https://x.test/a.tgz"},
  "devDependencies": {"jest": ">=29 <30"},
  "optionalDependencies": {"fsevents": "2.x"},
  "peerDependencies": {"react": "^18.0.0"}
}"#,
        )
        .unwrap();
        std::fs::create_dir_all(root.join("node_modules/left-pad")).unwrap();
        std::fs::write(
            root.join("node_modules/left-pad/package.json"),
            r#"{"dependencies": {"x": "1"}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(root.join(".cache")).unwrap();
        std::fs::write(root.join(".cache/package.json"), r#"{"dependencies": {"x": "1"}}"#).unwrap();
        std::fs::create_dir_all(root.join("packages/web")).unwrap();
        std::fs::write(
            root.join("packages/web/package.json"),
            r#"{"dependencies": {"react": "^18.2.0"}}"#,
        )
        .unwrap();
        let found: Vec<(String, String, String, String, bool)> = scan(root)
            .unwrap()
            .into_iter()
            .map(|d| (d.manifest, d.section, d.name, d.requirement, d.pinned))
            .collect();
        let row = |m: &str, s: &str, n: &str, r: &str, p: bool| (m.into(), s.into(), n.into(), r.into(), p);
        assert_eq!(
            found,
            [
                row("package.json", "dependencies", "@scope/util", "~2.1.0", false),
                row("package.json", "dependencies", "exact", "4.17.21", true),
                row("package.json", "dependencies", "left-pad", "^1.3.0", false),
                row("package.json", "devDependencies", "jest", ">=29 <30", false),
                row("package.json", "optionalDependencies", "fsevents", "2.x", false),
                row("packages/web/package.json", "dependencies", "react", "^18.2.0", false),
            ]
        );
    }

    #[test]
    fn apply_edits_only_the_value() {
        let dir = tempfile::tempdir().unwrap();
        let text = "{\n  \"name\": \"app\",\n  \"dependencies\": {\n    \"left-pad\":   \"~1.2.3\", // not JSON, but kept\n    \"b\": {\"nested\": [1, \"x\\\"\"]}\n  },\n  \"devDependencies\": {\"left-pad\": \"~1.2.3\"}\n}\n";
        let edited = set_requirement(text, "dependencies", "left-pad", "~1.3.0");
        // Comments are not JSON: the reader says where.
        assert_eq!(
            edited.unwrap_err().to_string(),
            "not valid JSON at line 4: expected a key"
        );
        let text = text.replace(" // not JSON, but kept", "");
        std::fs::write(dir.path().join("package.json"), &text).unwrap();
        let update = Update {
            ecosystem: Ecosystem::Npm,
            name: "left-pad".into(),
            manifest: Some("package.json".into()),
            section: Some("dependencies".into()),
            from: "1.2.3".into(),
            to: "1.3.0".into(),
            kind: UpdateKind::Minor,
            new_requirement: Some("~1.3.0".into()),
            notes_url: None,
            marker: None,
        };
        apply(dir.path(), &update).unwrap();
        let after = std::fs::read_to_string(dir.path().join("package.json")).unwrap();
        assert_eq!(after, text.replacen("\"~1.2.3\"", "\"~1.3.0\"", 1));
        let missing = Update {
            name: "right-pad".into(),
            ..update.clone()
        };
        assert_eq!(
            apply(dir.path(), &missing).unwrap_err().to_string(),
            "package.json: there is no `dependencies.right-pad`"
        );
        let outside = Update {
            manifest: Some("../package.json".into()),
            ..update
        };
        assert_eq!(
            apply(dir.path(), &outside).unwrap_err().to_string(),
            "../package.json: not a path inside the repository"
        );
    }

    #[test]
    fn locked_versions_from_every_lockfile_version() {
        let dir = tempfile::tempdir().unwrap();
        assert!(locked(dir.path()).unwrap().is_empty());
        let v3 = r#"{"lockfileVersion": 3, "packages": {
            "": {"name": "app", "dependencies": {"a": "^1"}},
            "node_modules/a": {"version": "1.2.0"},
            "node_modules/@s/b": {"version": "2.0.0"},
            "node_modules/@s/b/node_modules/a": {"version": "0.9.0"},
            "node_modules/linked": {"resolved": "packages/linked", "link": true},
            "packages/linked": {"version": "0.0.1"}}}"#;
        std::fs::write(dir.path().join("package-lock.json"), v3).unwrap();
        let expected = BTreeMap::from([
            ("@s/b".to_owned(), vec!["2.0.0".to_owned()]),
            ("a".to_owned(), vec!["0.9.0".to_owned(), "1.2.0".to_owned()]),
        ]);
        assert_eq!(locked(dir.path()).unwrap(), expected);
        let v1 = r#"{"lockfileVersion": 1, "dependencies": {
            "a": {"version": "1.2.0", "dependencies": {"c": {"version": "3.1.0"}}},
            "g": {"version": "git+https://github.com/o/g.git#abc"}}}"#;
        std::fs::write(dir.path().join("package-lock.json"), v1).unwrap();
        let expected = BTreeMap::from([
            ("a".to_owned(), vec!["1.2.0".to_owned()]),
            ("c".to_owned(), vec!["3.1.0".to_owned()]),
        ]);
        assert_eq!(locked(dir.path()).unwrap(), expected);
        std::fs::write(dir.path().join("package-lock.json"), "{").unwrap();
        assert!(
            locked(dir.path())
                .unwrap_err()
                .to_string()
                .ends_with("package-lock.json is not a valid lockfile: EOF while parsing an object at line 1 column 1")
        );
    }

    #[test]
    fn packuments_urls_and_commands() {
        let body = r#"{"name": "x", "repository": {"type": "git", "url": "git+https://github.com/acme/x.git"},
            "versions": {"1.0.0": {}, "1.1.0": {"deprecated": "broken"}, "1.0.1": {"deprecated": ""}, "junk": {}}}"#;
        let got = parse_packument(body).unwrap();
        let notes = Some("https://github.com/acme/x/releases".to_owned());
        assert_eq!(
            got,
            [
                Release {
                    version: "1.0.0".into(),
                    yanked: false,
                    notes_url: notes.clone(),
                    rust_version: None,
                    requires_python: Vec::new(),
                    published: None,
                },
                Release {
                    version: "1.0.1".into(),
                    yanked: false,
                    notes_url: notes.clone(),
                    rust_version: None,
                    requires_python: Vec::new(),
                    published: None,
                },
                Release {
                    version: "1.1.0".into(),
                    yanked: true,
                    notes_url: notes,
                    rust_version: None,
                    requires_python: Vec::new(),
                    published: None,
                },
            ]
        );
        assert_eq!(
            parse_packument("{}").unwrap_err().to_string(),
            "it has no `versions` object"
        );
        let timed = r#"{"versions": {"1.0.0": {}, "1.1.0": {}, "1.2.0": {}},
            "time": {"created": "2020-01-01T00:00:00.000Z", "1.0.0": "2020-01-02T03:04:05.678Z", "1.1.0": "yesterday"}}"#;
        let published: Vec<Option<String>> = parse_packument(timed)
            .unwrap()
            .iter()
            .map(|r| r.published.map(|t| t.to_string()))
            .collect();
        assert_eq!(published, [Some("2020-01-02T03:04:05.678Z".to_owned()), None, None]);
        for (repository, expected) in [
            (serde_json::json!("github:o/r"), Some("https://github.com/o/r/releases")),
            (serde_json::json!("o/r"), Some("https://github.com/o/r/releases")),
            (
                serde_json::json!({"url": "git@github.com:o/r.git"}),
                Some("https://github.com/o/r/releases"),
            ),
            (
                serde_json::json!({"url": "https://github.com/o/r/tree/main/pkg"}),
                Some("https://github.com/o/r/releases"),
            ),
            (serde_json::json!("gitlab:o/r"), None),
            (serde_json::json!({"url": "https://gitlab.com/o/r"}), None),
        ] {
            assert_eq!(github_releases_url(&repository).as_deref(), expected, "{repository}");
        }
        let base = Url::parse("http://127.0.0.1:4873/npm").unwrap();
        assert_eq!(
            package_url(&base, "@scope/pkg").unwrap().as_str(),
            "http://127.0.0.1:4873/npm/@scope%2fpkg"
        );
        assert_eq!(
            package_url(&base, "left-pad").unwrap().as_str(),
            "http://127.0.0.1:4873/npm/left-pad"
        );
        assert!(package_url(&base, "bad name").is_err());
        assert_eq!(
            lock_command(&Url::parse("http://127.0.0.1:4873/").unwrap(), Refresh::Full),
            "npm update --package-lock-only --ignore-scripts --no-audit --no-fund --registry http://127.0.0.1:4873/"
        );
        assert_eq!(
            lock_command(&Url::parse("https://r.test/npm/?a=1&b=2").unwrap(), Refresh::Full),
            "npm update --package-lock-only --ignore-scripts --no-audit --no-fund --registry 'https://r.test/npm/?a=1&b=2'"
        );
        assert_eq!(
            lock_command(&Url::parse("http://127.0.0.1:4873/").unwrap(), Refresh::Minimal),
            "npm install --package-lock-only --ignore-scripts --no-audit --no-fund --registry http://127.0.0.1:4873/"
        );
    }
}
