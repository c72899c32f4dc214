//! Python: the dependencies `requirements*.txt`, `constraints*.txt`, the files of a `requirements/`
//! directory and what they include, and `pyproject.toml` declare (PEP 508 strings in `[project]`
//! and PEP 735's `[dependency-groups]`, Poetry's tables), PEP 440 specifiers (the versions are in `pep440`), PyPI's JSON
//! API (a release whose files are all yanked is yanked), and edits of the manifests' text that keep
//! their formatting.
//! There is no lockfile: the `==` pins are what is "locked".

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Range as Span;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;
use url::Url;

use super::{Dependency, HeldBack, Hold, Planned, RegistryClient, RegistryError, Release, Update, UpdateKind};
use crate::config::deps::{Ecosystem, Policy};

pub mod interpreter;
mod pep440;

pub use interpreter::Pythons;
use pep440::Pep440;

const REGISTRY: &str = "PyPI";
/// The section of a requirements file's dependencies.
pub const REQUIREMENTS: &str = "requirements";

/// A manifest or a PyPI document that could not be read or edited; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum PythonError {
    #[error(transparent)]
    Walk(#[from] super::WalkError),
    #[error("{manifest}: could not read it: {source}")]
    Read {
        manifest: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{manifest}: not valid TOML: {source}")]
    Toml {
        manifest: String,
        #[source]
        source: toml_edit::TomlError,
    },
    #[error("{manifest}: not a path inside the repository")]
    Outside { manifest: String },
    #[error("{manifest}: there is no requirement on `{name}` in {section}")]
    NoRequirement {
        manifest: String,
        name: String,
        section: String,
    },
    #[error("{manifest}: could not write it: {source}")]
    Write {
        manifest: String,
        #[source]
        source: std::io::Error,
    },
    #[error("could not make its URL: {0}")]
    ProjectUrl(#[source] url::ParseError),
    #[error("not JSON: {0}")]
    Project(#[source] serde_json::Error),
    #[error("it has no `releases` object")]
    NoReleases,
}

// ---------------------------------------------------------------------------------------------
// Scanning

/// Every dependency with a version specifier in the `requirements*.txt` and `pyproject.toml`
/// files under `root` (not in hidden or ignored directories, `node_modules` or virtual
/// environments). Names are normalised (PEP 503). Skipped: options and includes (`-r`, `-e`, …),
/// URLs and paths, lines pinned with `--hash` (their hashes are the tool's that wrote them),
/// requirements without a specifier.
pub fn scan(root: &Path) -> Result<Vec<Dependency>, PythonError> {
    let mut deps = Vec::new();
    for (_, manifest) in manifests(root)? {
        let text = super::read_text(root, &manifest).map_err(|source| PythonError::Read {
            manifest: manifest.clone(),
            source,
        })?;
        let found = if manifest.ends_with(".txt") {
            requirements_entries(&text)
        } else {
            pyproject_entries(&text).map_err(|source| PythonError::Toml {
                manifest: manifest.clone(),
                source,
            })?
        };
        for entry in found {
            deps.push(Dependency {
                ecosystem: Ecosystem::Python,
                name: normalize(&entry.name),
                manifest: manifest.clone(),
                section: entry.section,
                pinned: entry.spec.is_pinned(),
                marker: entry.marker,
                requirement: entry.spec.text,
            });
        }
    }
    Ok(deps)
}

/// A name as PyPI compares names (PEP 503): lowercase, runs of `-`, `_` and `.` as one `-`.
pub fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The manifests under `root`, with their paths relative to it: `pyproject.toml`,
/// `requirements*.txt` and `constraints*.txt`, every `.txt` in a `requirements/` directory, and
/// every file a scanned requirements file includes (`-r`, `--requirement`, `-c`, `--constraint`)
/// that the walk saw (so never a hidden, ignored or outside file, nor one behind a symlink). A
/// virtual environment (it has `pyvenv.cfg`) holds installed packages, not the project's.
fn manifests(root: &Path) -> Result<Vec<(PathBuf, String)>, super::WalkError> {
    let every = super::manifest_files(
        root,
        |dir| dir.ends_with("node_modules") || dir.join("pyvenv.cfg").is_file(),
        |name| name == "pyproject.toml" || name.ends_with(".txt"),
    )?;
    let named = |relative: &str| {
        let mut parts = relative.rsplit('/');
        let name = parts.next().unwrap_or(relative);
        let in_requirements_dir = parts.next() == Some("requirements");
        name == "pyproject.toml"
            || (name.ends_with(".txt")
                && (name.starts_with("requirements") || name.starts_with("constraints") || in_requirements_dir))
    };
    let mut wanted: std::collections::BTreeSet<String> =
        every.iter().filter(|(_, r)| named(r)).map(|(_, r)| r.clone()).collect();
    // Follow includes until no new file turns up.
    let mut queue: Vec<String> = wanted.iter().filter(|r| r.ends_with(".txt")).cloned().collect();
    while let Some(relative) = queue.pop() {
        if !every.iter().any(|(_, r)| *r == relative) {
            continue;
        }
        let Ok(text) = super::read_text(root, &relative) else {
            continue;
        };
        for included in includes(&text) {
            let Some(target) = join_relative(&relative, &included) else {
                continue;
            };
            if every.iter().any(|(_, r)| *r == target) && wanted.insert(target.clone()) {
                queue.push(target);
            }
        }
    }
    Ok(every.into_iter().filter(|(_, r)| wanted.contains(r)).collect())
}

/// The files a requirements file includes: `-r x.txt`, `--requirement=x.txt`, `-c c.txt`,
/// `--constraint c.txt`.
fn includes(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = strip_comment(line).trim();
            let rest = ["--requirement", "--constraint", "-r", "-c"]
                .iter()
                .find_map(|option| line.strip_prefix(option))?;
            let target = rest.strip_prefix('=').unwrap_or(rest).trim();
            (!target.is_empty() && !target.contains("://")).then(|| target.to_owned())
        })
        .collect()
}

/// `target` (as a requirements file names it, relative to its own directory) as a path relative to
/// the root, `/`-separated; `None` when it is absolute or climbs out of the root.
fn join_relative(from: &str, target: &str) -> Option<String> {
    if target.starts_with('/') || target.contains('\\') {
        return None;
    }
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// One requirement found in a manifest.
#[derive(Debug)]
struct Entry {
    name: String,
    section: String,
    spec: Spec,
    marker: Option<String>,
}

/// The requirements of a requirements file, one per line.
fn requirements_entries(text: &str) -> Vec<Entry> {
    text.lines()
        .filter_map(requirement_line)
        .map(|requirement| Entry {
            name: requirement.name,
            section: REQUIREMENTS.to_owned(),
            spec: requirement.spec,
            marker: requirement.marker,
        })
        .collect()
}

/// The requirement on one line of a requirements file. Lines continued with `\` are left alone
/// (pip-compile writes them, with hashes a new version invalidates), as are options.
fn requirement_line(line: &str) -> Option<Requirement> {
    let content = strip_comment(line);
    let trimmed = content.trim();
    if trimmed.is_empty() || trimmed.starts_with('-') || trimmed.ends_with('\\') || content.contains(" --") {
        return None;
    }
    parse_pep508(content, Syntax::Pep440)
}

/// The line without its comment (a `#` at the start or after whitespace).
fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    let at = (0..bytes.len()).find(|&i| bytes[i] == b'#' && (i == 0 || bytes[i - 1].is_ascii_whitespace()));
    at.map_or(line, |i| &line[..i])
}

/// A PEP 508 requirement with a version specifier: `name[extras] spec ; marker`.
#[derive(Debug)]
struct Requirement {
    name: String,
    spec: Spec,
    /// Where the specifier is in the text parsed.
    spec_span: Span<usize>,
    /// The environment marker after `;`, trimmed.
    marker: Option<String>,
}

/// Which specifier language a manifest speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syntax {
    /// PEP 440: `==1.2`, `>=1,<2`, `~=1.4`.
    Pep440,
    /// Poetry: PEP 440's, and `^1.2`, `~1.2`, a bare `1.2.3`.
    Poetry,
}

fn parse_pep508(text: &str, syntax: Syntax) -> Option<Requirement> {
    let bytes = text.as_bytes();
    let mut i = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
    let name_start = i;
    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'-' | b'_' | b'.')) {
        i += 1;
    }
    if i == name_start || !bytes[name_start].is_ascii_alphanumeric() {
        return None;
    }
    let name = text[name_start..i].to_owned();
    let skip_ws = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    i = skip_ws(i);
    if bytes.get(i) == Some(&b'[') {
        i += text[i..].find(']')? + 1;
        i = skip_ws(i);
    }
    let end = text[i..].find(';').map_or(text.len(), |at| i + at);
    let mut spec_text = &text[i..end];
    let mut start = i;
    // A URL requirement (`name @ https://…`) has no version to keep current.
    if spec_text.trim_start().starts_with('@') {
        return None;
    }
    // The old form with parentheses: `name (>=1.0)`.
    if let Some(inner) = spec_text.trim().strip_prefix('(').and_then(|s| s.strip_suffix(')')) {
        start = i + spec_text.find('(')? + 1;
        spec_text = inner;
    }
    let lead = spec_text.len() - spec_text.trim_start().len();
    let spec_text = spec_text.trim();
    if spec_text.is_empty() {
        return None;
    }
    let spec = Spec::parse(spec_text, syntax).ok()?;
    let start = start + lead;
    let marker = text.get(end + 1..).map(str::trim).filter(|m| !m.is_empty());
    Some(Requirement {
        name,
        spec,
        spec_span: start..start + spec_text.len(),
        marker: marker.map(str::to_owned),
    })
}

/// The requirements of a `pyproject.toml`: `[project] dependencies`, every group of
/// `[project.optional-dependencies]`, and Poetry's `[tool.poetry.dependencies]`,
/// `[tool.poetry.dev-dependencies]` and `[tool.poetry.group.<g>.dependencies]` (version strings or
/// tables with a `version`; not `python`, git, path or URL entries).
fn pyproject_entries(text: &str) -> Result<Vec<Entry>, toml_edit::TomlError> {
    let doc = toml_edit::Document::parse(text)?;
    Ok(pyproject_strings(&doc)
        .into_iter()
        .filter_map(|found| {
            let requirement = match &found.key {
                Some(key) => Requirement {
                    name: key.clone(),
                    spec: Spec::parse(found.value.trim(), Syntax::Poetry).ok()?,
                    spec_span: 0..found.value.len(),
                    marker: found.marker.clone(),
                },
                None => parse_pep508(&found.value, Syntax::Pep440)?,
            };
            Some(Entry {
                name: requirement.name,
                section: found.section,
                spec: requirement.spec,
                marker: requirement.marker,
            })
        })
        .collect())
}

/// A requirement string of a `pyproject.toml` and where it is.
#[derive(Debug)]
struct Found {
    section: String,
    /// Poetry's dependency name (the key); `None` for a PEP 508 string, which names itself.
    key: Option<String>,
    /// The string's content.
    value: String,
    /// The string's span in the text, quotes included.
    span: Span<usize>,
    /// A Poetry table's `markers`; a PEP 508 string carries its own.
    marker: Option<String>,
}

fn pyproject_strings(doc: &toml_edit::Document<&str>) -> Vec<Found> {
    let mut found = Vec::new();
    let root = doc.as_table();
    let mut pep508 = |section: String, item: Option<&toml_edit::Item>| {
        let Some(array) = item.and_then(toml_edit::Item::as_array) else {
            return;
        };
        for value in array {
            if let (Some(content), Some(span)) = (value.as_str(), value.span()) {
                found.push(Found {
                    section: section.clone(),
                    key: None,
                    value: content.to_owned(),
                    span,
                    marker: None,
                });
            }
        }
    };
    let project = root.get("project");
    pep508(
        "project.dependencies".to_owned(),
        project.and_then(|p| p.get("dependencies")),
    );
    if let Some(groups) = project
        .and_then(|p| p.get("optional-dependencies"))
        .and_then(toml_edit::Item::as_table_like)
    {
        for (group, item) in groups.iter() {
            pep508(format!("project.optional-dependencies.{group}"), Some(item));
        }
    }
    // PEP 735: `[dependency-groups]`, arrays of PEP 508 strings (`{include-group = …}` tables
    // name other groups and are left alone).
    if let Some(groups) = root.get("dependency-groups").and_then(toml_edit::Item::as_table_like) {
        for (group, item) in groups.iter() {
            pep508(format!("dependency-groups.{group}"), Some(item));
        }
    }
    let poetry = root.get("tool").and_then(|t| t.get("poetry"));
    let mut tables: Vec<(String, &toml_edit::Item)> = Vec::new();
    for key in ["dependencies", "dev-dependencies"] {
        if let Some(item) = poetry.and_then(|p| p.get(key)) {
            tables.push((format!("tool.poetry.{key}"), item));
        }
    }
    if let Some(groups) = poetry
        .and_then(|p| p.get("group"))
        .and_then(toml_edit::Item::as_table_like)
    {
        for (group, item) in groups.iter() {
            if let Some(deps) = item.get("dependencies") {
                tables.push((format!("tool.poetry.group.{group}.dependencies"), deps));
            }
        }
    }
    for (section, item) in tables {
        let Some(table) = item.as_table_like() else {
            continue;
        };
        for (name, entry) in table.iter() {
            if name == "python" {
                continue;
            }
            let (value, marker) = match entry.as_table_like() {
                // Git, path and URL entries have no `version`.
                Some(fields) => (
                    fields.get("version").and_then(toml_edit::Item::as_value),
                    fields
                        .get("markers")
                        .and_then(toml_edit::Item::as_str)
                        .map(str::to_owned),
                ),
                None => (entry.as_value(), None),
            };
            if let Some((content, span)) = value.and_then(|v| Some((v.as_str()?, v.span()?))) {
                found.push(Found {
                    section: section.clone(),
                    key: Some(name.to_owned()),
                    value: content.to_owned(),
                    span,
                    marker,
                });
            }
        }
    }
    found
}

/// The `==` pins of the manifests under `root`: normalised name → pinned versions. Python has no
/// lockfile pitcrew reads; a pin is what an environment installs.
pub fn locked(root: &Path) -> Result<BTreeMap<String, Vec<String>>, PythonError> {
    let mut pins: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for dep in scan(root)? {
        let Ok(spec) = Spec::parse(&dep.requirement, Syntax::Poetry) else {
            continue;
        };
        if let Some(version) = spec.pin() {
            let list = pins.entry(dep.name).or_default();
            if !list.contains(&version) {
                list.push(version);
            }
        }
    }
    Ok(pins)
}

// ---------------------------------------------------------------------------------------------
// Lockfiles

/// The tool that keeps a Python project's lockfile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockTool {
    /// `uv.lock`
    Uv,
    /// `poetry.lock`
    Poetry,
}

/// A lockfile beside a `pyproject.toml`, which the chore refreshes (in the sandbox, with its tool)
/// after editing that manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    /// The project's directory, relative to the root (`""` for the root).
    pub dir: String,
    pub tool: LockTool,
}

impl Lock {
    fn join(&self, name: &str) -> String {
        if self.dir.is_empty() {
            name.to_owned()
        } else {
            format!("{}/{name}", self.dir)
        }
    }

    /// The lockfile, relative to the root.
    pub fn file(&self) -> String {
        self.join(match self.tool {
            LockTool::Uv => "uv.lock",
            LockTool::Poetry => "poetry.lock",
        })
    }

    /// The manifest it locks, relative to the root.
    pub fn manifest(&self) -> String {
        self.join("pyproject.toml")
    }

    /// What the refresh writes to stderr when it fails, so that the chore can tell which lockfile
    /// it was whatever the sandbox reports around it.
    pub fn failure_line(&self) -> String {
        format!("pitcrew: could not refresh {}", self.file())
    }

    /// The shell command, run in the project's directory, that brings the lockfile in line with
    /// the edited manifest without moving anything else: `uv lock` (against the configured PyPI's
    /// simple index unless the project names its own), `poetry lock` (with `--no-update` where
    /// Poetry 1 needs it; Poetry reads its sources from the project). A tool the sandbox lacks is
    /// said; either way a failure ends with [`Lock::failure_line`].
    pub fn command(&self, root: &Path, pypi: &Url) -> String {
        let refresh = match self.tool {
            LockTool::Uv => {
                let own_index = read_beneath(root, &self.manifest())
                    .is_some_and(|text| text.contains("tool.uv.index") || text.contains("index-url"));
                let mut index = pypi.as_str().to_owned();
                if !index.ends_with('/') {
                    index.push('/');
                }
                index.push_str("simple");
                let lock = if own_index {
                    "uv lock".to_owned()
                } else {
                    format!("UV_DEFAULT_INDEX={} uv lock", crate::shell::quote(&index))
                };
                format!(
                    "if ! command -v uv >/dev/null 2>&1; then echo 'uv is not installed in the sandbox' >&2; false; \
                     else {lock}; fi"
                )
            }
            LockTool::Poetry => {
                "if ! command -v poetry >/dev/null 2>&1; then echo 'poetry is not installed in the sandbox' >&2; \
                 false; elif poetry lock --help 2>/dev/null | grep -q -e '--no-update'; then poetry lock --no-update; \
                 else poetry lock; fi"
                    .to_owned()
            }
        };
        format!(
            "{{ {refresh}; }} || {{ echo {} >&2; exit 1; }}",
            crate::shell::quote(&self.failure_line())
        )
    }
}

/// The lockfiles (`uv.lock`, `poetry.lock`) beside the `pyproject.toml` manifests under `root`;
/// only regular files count, never a symlink.
pub fn locks(root: &Path) -> Vec<Lock> {
    let Ok(every) = manifests(root) else {
        return Vec::new();
    };
    let Ok(beneath) = crate::beneath::Beneath::open(root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (_, manifest) in every {
        let Some(dir) = manifest
            .strip_suffix("pyproject.toml")
            .filter(|dir| dir.is_empty() || dir.ends_with('/'))
        else {
            continue;
        };
        for tool in [LockTool::Uv, LockTool::Poetry] {
            let lock = Lock {
                dir: dir.trim_end_matches('/').to_owned(),
                tool,
            };
            if beneath
                .metadata(Path::new(&lock.file()))
                .is_ok_and(|m| m.file_type().is_file())
            {
                out.push(lock);
            }
        }
    }
    out
}

/// The text of `relative` under `root`, opened without following a symlink; `None` when it is not
/// a readable regular file.
fn read_beneath(root: &Path, relative: &str) -> Option<String> {
    let beneath = crate::beneath::Beneath::open(root).ok()?;
    String::from_utf8(beneath.read_regular(Path::new(relative), 4 << 20).ok()?).ok()
}

// ---------------------------------------------------------------------------------------------
// Planning

/// The updates `policy` allows for `dep`, by the rules the npm and Cargo ecosystems follow: none
/// when the newest release is inside the specifier (an environment picks it up) or the dependency
/// is pinned (`==`) or ignored; else the newest compatible release (same major; for `0.x` the same
/// minor) the specifier excludes, and with `policy.major` the newest release of a newer major as
/// an update of its own. A version a `!=` clause excludes is never proposed.
///
/// `pythons` are the Pythons the requirement is installed on (the project's, narrowed by the
/// requirement's marker): a release none of whose files installs on them is never proposed; when
/// the newest of its kind is such a release, the newest that installs is proposed instead (if it
/// still is an update) and the held-back one listed. "From" is the version pinned (or `locked`),
/// else the requirement as written.
pub fn plan(
    dep: &Dependency,
    locked: Option<&str>,
    releases: &[Release],
    policy: &Policy,
    pythons: Option<&Pythons>,
) -> Planned {
    let mut planned = Planned::default();
    let policy = policy.for_package(dep.ecosystem, &dep.name);
    if policy.ignore || (dep.pinned && !policy.update_pinned) {
        return planned;
    }
    let Ok(spec) = Spec::parse(&dep.requirement, Syntax::Poetry) else {
        return planned;
    };
    let floor = spec.floor();
    let from = locked
        .and_then(|v| Pep440::parse(v).ok())
        .unwrap_or_else(|| floor.clone());
    let eligible: Vec<(Pep440, &Release)> = releases
        .iter()
        .filter(|r| !r.yanked)
        .filter_map(|r| Pep440::parse(&r.version).ok().map(|v| (v, r)))
        .filter(|(v, _)| !v.is_prerelease() && *v > from && !spec.excludes_explicitly(v))
        .collect();
    let Some((newest, _)) = eligible.iter().max_by(|a, b| a.0.cmp(&b.0)) else {
        return planned;
    };
    if spec.satisfies(newest) {
        return planned;
    }
    let from_text = match locked {
        Some(text) if Pep440::parse(text).is_ok() => text.to_owned(),
        _ => dep.requirement.trim().to_owned(),
    };
    let installs = |release: &Release| pythons.is_none_or(|p| p.installs(release));
    let update = |to: &Pep440, release: &Release| {
        spec.rewrite(to, &release.version).map(|requirement| Update {
            ecosystem: Ecosystem::Python,
            name: dep.name.clone(),
            manifest: Some(dep.manifest.clone()),
            section: Some(dep.section.clone()),
            from: from_text.clone(),
            to: release.version.clone(),
            kind: kind(&from, to),
            new_requirement: Some(requirement),
            notes_url: release.notes_url.clone(),
            marker: dep.marker.clone(),
        })
    };
    // The newest of `candidates` and, when none of its files installs on the Pythons, the newest
    // that does, with the note that it was held back.
    let mut choose = |candidates: Vec<&(Pep440, &Release)>, major: bool| -> Option<(Pep440, Release)> {
        let newest = candidates.iter().max_by(|a, b| a.0.cmp(&b.0))?;
        if installs(newest.1) {
            return Some((newest.0.clone(), newest.1.clone()));
        }
        let fitting = candidates
            .iter()
            .filter(|(_, release)| installs(release))
            .max_by(|a, b| a.0.cmp(&b.0));
        planned.held_back.push(HeldBack {
            reason: Hold::Python,
            name: dep.name.clone(),
            version: newest.1.version.clone(),
            needs: newest.1.requires_python.join(" or "),
            declared: pythons.map(|p| p.declared.clone()).unwrap_or_default(),
            major,
            instead: fitting.map(|(_, release)| release.version.clone()),
        });
        fitting.map(|(version, release)| (version.clone(), (*release).clone()))
    };
    let compatible: Vec<&(Pep440, &Release)> = eligible
        .iter()
        .filter(|(v, _)| v.compatibility() == floor.compatibility() && !spec.satisfies(v))
        .collect();
    if let Some((version, release)) = choose(compatible, false) {
        planned.updates.extend(update(&version, &release));
    }
    if policy.major && newest.compatibility() != floor.compatibility() {
        let majors: Vec<&(Pep440, &Release)> = eligible
            .iter()
            .filter(|(v, _)| v.compatibility() != floor.compatibility())
            .collect();
        if let Some((version, release)) = choose(majors, true) {
            planned.updates.extend(update(&version, &release));
        }
    }
    planned
}

/// The version a requirement pins (`==1.2.3`, Poetry's bare `1.2.3`), as written.
pub fn pin(requirement: &str) -> Option<String> {
    Spec::parse(requirement, Syntax::Poetry).ok()?.pin()
}

fn kind(from: &Pep440, to: &Pep440) -> UpdateKind {
    if from.compatibility() != to.compatibility() {
        UpdateKind::Major
    } else if (from.part(0), from.part(1)) != (to.part(0), to.part(1)) {
        UpdateKind::Minor
    } else {
        UpdateKind::Patch
    }
}

// ---------------------------------------------------------------------------------------------
// PyPI

/// The releases of `name` PyPI lists (`{pypi}pypi/{name}/json`), oldest first; versions that are
/// not PEP 440 are left out. A release whose files are all yanked (or that has none) is yanked.
/// The notes are the project's changelog or release-notes URL when it gives one.
pub async fn releases(client: &RegistryClient, name: &str) -> Result<Vec<Release>, RegistryError> {
    let normalized = normalize(name);
    let malformed = |message: String| RegistryError::Malformed {
        registry: REGISTRY,
        package: name.to_owned(),
        message,
    };
    if normalized.is_empty() || !normalized.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(malformed(format!("`{name}` is not a Python package name")));
    }
    let url = project_url(&client.registries.pypi, &normalized).map_err(|e| malformed(e.to_string()))?;
    let Some(body) = client.get(REGISTRY, name, url, "application/json").await? else {
        return Err(RegistryError::NotFound {
            registry: REGISTRY,
            package: name.to_owned(),
        });
    };
    parse_project(&body).map_err(|e| malformed(e.to_string()))
}

fn project_url(base: &Url, normalized: &str) -> Result<Url, PythonError> {
    let mut text = base.as_str().to_owned();
    if !text.ends_with('/') {
        text.push('/');
    }
    text.push_str(&format!("pypi/{normalized}/json"));
    Url::parse(&text).map_err(PythonError::ProjectUrl)
}

fn parse_project(body: &str) -> Result<Vec<Release>, PythonError> {
    let json: Value = serde_json::from_str(body).map_err(PythonError::Project)?;
    let releases = json
        .get("releases")
        .and_then(Value::as_object)
        .ok_or(PythonError::NoReleases)?;
    let notes_url = json
        .pointer("/info/project_urls")
        .and_then(Value::as_object)
        .and_then(|urls| {
            urls.iter().find_map(|(label, url)| {
                let label = label.to_ascii_lowercase().replace(['-', '_'], " ");
                let is_notes = [
                    "changelog",
                    "change log",
                    "changes",
                    "release notes",
                    "releases",
                    "history",
                    "news",
                    "what's new",
                ]
                .iter()
                .any(|word| label.contains(word));
                is_notes.then(|| url.as_str().map(str::to_owned)).flatten()
            })
        });
    let mut found: Vec<(Pep440, Release)> = releases
        .iter()
        .filter_map(|(version, files)| {
            let parsed = Pep440::parse(version).ok()?;
            let files = files.as_array().map(Vec::as_slice).unwrap_or_default();
            let yanked = files
                .iter()
                .all(|file| file.get("yanked").and_then(Value::as_bool) == Some(true));
            Some((
                parsed,
                Release {
                    version: version.clone(),
                    yanked,
                    notes_url: notes_url.clone(),
                    rust_version: None,
                    requires_python: requires_python(files),
                    published: uploaded(files),
                },
            ))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found.into_iter().map(|(_, r)| r).collect())
}

/// When a release was published: its earliest file's `upload_time_iso_8601`; `None` when no
/// file says.
fn uploaded(files: &[Value]) -> Option<jiff::Timestamp> {
    files
        .iter()
        .filter_map(|file| {
            file.get("upload_time_iso_8601")?
                .as_str()?
                .parse::<jiff::Timestamp>()
                .ok()
        })
        .min()
}

/// The distinct `requires_python` of a release's files that are not yanked (all of them when all
/// are); none when one of those declares nothing, since that file installs on any Python.
fn requires_python(files: &[Value]) -> Vec<String> {
    let live: Vec<&Value> = files
        .iter()
        .filter(|file| file.get("yanked").and_then(Value::as_bool) != Some(true))
        .collect();
    let considered: Vec<&Value> = if live.is_empty() { files.iter().collect() } else { live };
    let mut specs: Vec<String> = Vec::new();
    for file in considered {
        match file.get("requires_python").and_then(Value::as_str).map(str::trim) {
            Some(spec) if !spec.is_empty() => {
                if !specs.iter().any(|s| s == spec) {
                    specs.push(spec.to_owned());
                }
            }
            _ => return Vec::new(),
        }
    }
    specs
}

// ---------------------------------------------------------------------------------------------
// Applying

/// Writes `update.new_requirement` as the specifier of `update.name` in its manifest, keeping the
/// rest of the text (name, extras, markers, comments, quotes). When the manifest lists the name
/// more than once in that section, only the requirements whose floor or pin is `update.from` are
/// changed. A lockfile-only update changes nothing here.
pub fn apply(root: &Path, update: &Update) -> Result<(), PythonError> {
    let (Some(manifest), Some(section), Some(requirement)) =
        (&update.manifest, &update.section, &update.new_requirement)
    else {
        return Ok(());
    };
    let relative = Path::new(manifest);
    if !relative.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(PythonError::Outside {
            manifest: manifest.clone(),
        });
    }
    let path = root.join(relative);
    let text = super::read_text(root, manifest).map_err(|source| PythonError::Read {
        manifest: manifest.clone(),
        source,
    })?;
    let edits = if manifest.ends_with(".txt") {
        requirements_edits(&text, update, requirement)
    } else {
        pyproject_edits(&text, section, update, requirement).map_err(|source| PythonError::Toml {
            manifest: manifest.clone(),
            source,
        })?
    };
    if edits.is_empty() {
        return Err(PythonError::NoRequirement {
            manifest: manifest.clone(),
            name: update.name.clone(),
            section: section.clone(),
        });
    }
    let mut edited = text;
    for (span, new) in edits.into_iter().rev() {
        edited.replace_range(span, &new);
    }
    std::fs::write(&path, edited).map_err(|source| PythonError::Write {
        manifest: manifest.clone(),
        source,
    })
}

/// The edits (in order) of the requirements `update` is about, out of `candidates`: (span in the
/// text, replacement text, the specifier there, its marker). With several, those under the
/// update's marker whose text, floor or pin is `update.from` (failing any, whatever the marker).
fn choose(candidates: Vec<(Span<usize>, String, Spec, Option<String>)>, update: &Update) -> Vec<(Span<usize>, String)> {
    let from = Pep440::parse(&update.from).ok();
    let stands_at = |spec: &Spec| {
        spec.text.trim() == update.from
            || from.as_ref().is_some_and(|from| spec.floor() == *from)
            || spec.pin().is_some_and(|pin| pin == update.from)
    };
    let mut matching: Vec<bool> = candidates
        .iter()
        .map(|(_, _, spec, marker)| *marker == update.marker && stands_at(spec))
        .collect();
    if !matching.contains(&true) {
        matching = candidates.iter().map(|(_, _, spec, _)| stands_at(spec)).collect();
    }
    let narrowed = candidates.len() > 1 && matching.contains(&true);
    candidates
        .into_iter()
        .zip(matching)
        .filter(|(_, matches)| !narrowed || *matches)
        .map(|((span, new, _, _), _)| (span, new))
        .collect()
}

fn requirements_edits(text: &str, update: &Update, requirement: &str) -> Vec<(Span<usize>, String)> {
    let mut candidates = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if let Some(found) = requirement_line(line)
            && normalize(&found.name) == update.name
        {
            let span = offset + found.spec_span.start..offset + found.spec_span.end;
            candidates.push((span, requirement.to_owned(), found.spec, found.marker));
        }
        offset += line.len();
    }
    choose(candidates, update)
}

fn pyproject_edits(
    text: &str,
    section: &str,
    update: &Update,
    requirement: &str,
) -> Result<Vec<(Span<usize>, String)>, toml_edit::TomlError> {
    let doc = toml_edit::Document::parse(text)?;
    let mut candidates = Vec::new();
    for found in pyproject_strings(&doc) {
        if found.section != section {
            continue;
        }
        let (name, spec, spec_span, marker) = match &found.key {
            Some(key) => match Spec::parse(found.value.trim(), Syntax::Poetry) {
                Ok(spec) => {
                    let lead = found.value.len() - found.value.trim_start().len();
                    (
                        key.clone(),
                        spec,
                        lead..lead + found.value.trim().len(),
                        found.marker.clone(),
                    )
                }
                Err(_) => continue,
            },
            None => match parse_pep508(&found.value, Syntax::Pep440) {
                Some(r) => (r.name, r.spec, r.spec_span, r.marker),
                None => continue,
            },
        };
        if normalize(&name) != update.name {
            continue;
        }
        let mut content = found.value.clone();
        content.replace_range(spec_span, requirement);
        let literal = toml_string(&text[found.span.clone()], &content);
        candidates.push((found.span, literal, spec, marker));
    }
    Ok(choose(candidates, update))
}

/// `content` as a TOML string in the quoting `original` uses (literal `'…'` when it can be).
fn toml_string(original: &str, content: &str) -> String {
    let literal = original.starts_with('\'') && !original.starts_with("'''");
    if literal && !content.contains('\'') && !content.contains('\n') {
        return format!("'{content}'");
    }
    let mut out = String::from("\"");
    for c in content.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// ---------------------------------------------------------------------------------------------
// Specifiers

/// Why a text is not a version specifier.
#[derive(Debug, thiserror::Error)]
enum SpecError {
    #[error("`{0}` is not a version specifier: a clause without an operator")]
    NoOperator(String),
    #[error("`{0}` is not a version specifier: `.*` only follows `==` and `!=`")]
    Wildcard(String),
    #[error("`{0}` is not a version specifier: {1}")]
    Version(String, #[source] pep440::VersionError),
    #[error("`{0}` is not a version specifier: `~=` needs at least two release numbers")]
    Compatible(String),
}

/// A version specifier as written: comma-separated clauses, all of which must hold.
#[derive(Debug, Clone)]
struct Spec {
    /// The specifier's text.
    text: String,
    clauses: Vec<Clause>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClauseOp {
    /// `~=`
    Compatible,
    /// `==` (with `.*`: a prefix match)
    Equal,
    NotEqual,
    Le,
    Ge,
    Lt,
    Gt,
    /// `===`: the same string.
    Arbitrary,
    /// Poetry's `^`.
    Caret,
    /// Poetry's `~`.
    Tilde,
    /// Poetry's bare version: `==`.
    Bare,
}

#[derive(Debug, Clone)]
struct Clause {
    op: ClauseOp,
    version: Pep440,
    /// `==1.2.*`
    wildcard: bool,
    /// How many release numbers are written.
    precision: usize,
    /// Where the version is in the specifier's text (the operator and `.*` are outside).
    span: Span<usize>,
}

impl Spec {
    fn parse(text: &str, syntax: Syntax) -> Result<Spec, SpecError> {
        let mut clauses = Vec::new();
        let mut offset = 0;
        for piece in text.split(',') {
            let lead = piece.len() - piece.trim_start().len();
            let body = piece.trim();
            let mut ops = vec![
                ("===", ClauseOp::Arbitrary),
                ("~=", ClauseOp::Compatible),
                ("==", ClauseOp::Equal),
                ("!=", ClauseOp::NotEqual),
                ("<=", ClauseOp::Le),
                (">=", ClauseOp::Ge),
                ("<", ClauseOp::Lt),
                (">", ClauseOp::Gt),
            ];
            if syntax == Syntax::Poetry {
                ops.extend([("^", ClauseOp::Caret), ("~", ClauseOp::Tilde), ("=", ClauseOp::Equal)]);
            }
            let (op, op_len) = ops
                .iter()
                .find(|(prefix, _)| body.starts_with(prefix))
                .map(|(prefix, op)| (*op, prefix.len()))
                .or((syntax == Syntax::Poetry).then_some((ClauseOp::Bare, 0)))
                .ok_or_else(|| SpecError::NoOperator(text.to_owned()))?;
            let after_op = &body[op_len..];
            let version_lead = after_op.len() - after_op.trim_start().len();
            let version_text = after_op.trim();
            let (version_text, wildcard) = match version_text.strip_suffix(".*") {
                Some(prefix) if matches!(op, ClauseOp::Equal | ClauseOp::NotEqual) => (prefix, true),
                Some(_) => return Err(SpecError::Wildcard(text.to_owned())),
                None => (version_text, false),
            };
            let version = Pep440::parse(version_text).map_err(|e| SpecError::Version(text.to_owned(), e))?;
            if op == ClauseOp::Compatible && version.release.len() < 2 {
                return Err(SpecError::Compatible(text.to_owned()));
            }
            let start = offset + lead + op_len + version_lead;
            clauses.push(Clause {
                op,
                precision: version.release.len(),
                version,
                wildcard,
                span: start..start + version_text.len(),
            });
            offset += piece.len() + 1;
        }
        Ok(Spec {
            text: text.to_owned(),
            clauses,
        })
    }

    /// Whether the specifier names one version (`==1.2.3`, `===1.2.3`, Poetry's bare `1.2.3`).
    fn is_pinned(&self) -> bool {
        self.pin().is_some()
    }

    /// The version a lone `==`/`===`/bare clause names.
    fn pin(&self) -> Option<String> {
        match self.clauses.as_slice() {
            [clause]
                if matches!(clause.op, ClauseOp::Equal | ClauseOp::Arbitrary | ClauseOp::Bare) && !clause.wildcard =>
            {
                Some(self.text[clause.span.clone()].to_owned())
            }
            _ => None,
        }
    }

    fn satisfies(&self, v: &Pep440) -> bool {
        self.clauses.iter().all(|c| c.admits(v))
    }

    /// Whether a `!=` clause rules `v` out: the author's choice, never overridden.
    fn excludes_explicitly(&self, v: &Pep440) -> bool {
        self.clauses.iter().any(|c| c.op == ClauseOp::NotEqual && !c.admits(v))
    }

    /// The lowest version admitted by the lower bounds (`0` without any).
    fn floor(&self) -> Pep440 {
        self.clauses
            .iter()
            .filter(|c| !matches!(c.op, ClauseOp::NotEqual | ClauseOp::Le | ClauseOp::Lt))
            .map(|c| c.version.clone())
            .max()
            .unwrap_or(Pep440::zero())
    }

    /// The specifier's text changed so that it admits `to` (written `to_text` by the registry), in
    /// the style written: `==1.2.3` → `==1.4.0`, `~=1.4` → `~=2.1`, `==1.2.*` → `==1.4.*`,
    /// `^1.2` → `^2.1`; an upper bound is raised at the precision it is written with (`>=1.2,<2` →
    /// `>=1.2,<3`, as Dependabot does), `<=1.5` becomes `<=` the new version. Lower bounds and `!=`
    /// stay. `None` when no such edit admits `to`.
    fn rewrite(&self, to: &Pep440, to_text: &str) -> Option<String> {
        let mut edited = self.text.clone();
        for clause in self.clauses.iter().rev() {
            if clause.admits(to) {
                continue;
            }
            let new = match clause.op {
                ClauseOp::Equal | ClauseOp::Arbitrary | ClauseOp::Bare | ClauseOp::Le if !clause.wildcard => {
                    to_text.to_owned()
                }
                ClauseOp::Equal | ClauseOp::Compatible | ClauseOp::Caret | ClauseOp::Tilde => {
                    join(&to.prefix(clause.precision))
                }
                ClauseOp::Lt => join(&raised(&clause.version.prefix(clause.precision), to)),
                // Lower bounds and exclusions stay (`.*` follows only `==` and `!=`).
                ClauseOp::NotEqual
                | ClauseOp::Ge
                | ClauseOp::Gt
                | ClauseOp::Le
                | ClauseOp::Arbitrary
                | ClauseOp::Bare => {
                    return None;
                }
            };
            edited.replace_range(clause.span.clone(), &new);
        }
        let spec = Spec::parse(&edited, Syntax::Poetry).ok()?;
        spec.satisfies(to).then_some(edited)
    }
}

/// Release numbers as text: `1.4.0`.
fn join(numbers: &[u64]) -> String {
    let parts: Vec<String> = numbers.iter().map(u64::to_string).collect();
    parts.join(".")
}

/// An exclusive upper bound written `bound` raised just above `to` at the level it is written at:
/// `<2` → `<3`, `<1.5` → `<1.8`, `<1.2.4` → `<1.7.3`.
fn raised(bound: &[u64], to: &Pep440) -> Vec<u64> {
    let level = (0..bound.len()).rev().find(|&i| bound[i] != 0).unwrap_or(0);
    (0..bound.len().max(1))
        .map(|i| match i.cmp(&level) {
            Ordering::Less => to.part(i),
            Ordering::Equal => to.part(i) + 1,
            Ordering::Greater => 0,
        })
        .collect()
}

impl Clause {
    fn admits(&self, v: &Pep440) -> bool {
        let bound = &self.version;
        match self.op {
            ClauseOp::Equal | ClauseOp::Bare if self.wildcard => {
                v.epoch == bound.epoch && v.prefix(self.precision) == bound.prefix(self.precision)
            }
            ClauseOp::NotEqual if self.wildcard => {
                !(v.epoch == bound.epoch && v.prefix(self.precision) == bound.prefix(self.precision))
            }
            // A version without a local label matches any local label of itself.
            ClauseOp::Equal | ClauseOp::Bare => {
                let mut v = v.clone();
                if bound.local.is_none() {
                    v.local = None;
                }
                &v == bound
            }
            ClauseOp::NotEqual => v != bound,
            ClauseOp::Arbitrary => v.to_string() == bound.to_string(),
            ClauseOp::Le => v <= bound,
            ClauseOp::Ge => v >= bound,
            ClauseOp::Lt => v < bound,
            // `>1.2` does not admit `1.2.post1`.
            ClauseOp::Gt => v > bound && !(v.post.is_some() && bound.post.is_none() && v.release_cmp(bound).is_eq()),
            ClauseOp::Compatible => {
                let prefix = self.precision - 1;
                v >= bound && v.epoch == bound.epoch && v.prefix(prefix) == bound.prefix(prefix)
            }
            ClauseOp::Caret => {
                let precision = self.precision.max(1);
                let first = (0..precision).find(|&i| bound.part(i) != 0).unwrap_or(precision - 1);
                v >= bound && v.prefix(first) == bound.prefix(first) && v.part(first) == bound.part(first)
            }
            ClauseOp::Tilde => {
                let fixed = if self.precision >= 2 { 2 } else { 1 };
                v >= bound && v.prefix(fixed) == bound.prefix(fixed)
            }
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failing test should panic")]
mod tests {
    use super::*;

    fn p(text: &str) -> Pep440 {
        Pep440::parse(text).unwrap()
    }

    fn admits(spec: &str, version: &str) -> bool {
        Spec::parse(spec, Syntax::Poetry).unwrap().satisfies(&p(version))
    }

    #[test]
    fn specifiers_admit_what_pip_and_poetry_admit() {
        let cases = [
            ("==1.2.3", "1.2.3", true),
            ("==1.2.3", "1.2.3+local", true),
            ("==1.2.3", "1.2.4", false),
            ("==1.2.*", "1.2.9", true),
            ("==1.2.*", "1.3.0", false),
            ("!=1.2.*", "1.3.0", true),
            ("~=1.4", "1.9", true),
            ("~=1.4", "2.0", false),
            ("~=1.4.2", "1.4.9", true),
            ("~=1.4.2", "1.5.0", false),
            (">=1.2,<2", "1.9.9", true),
            (">=1.2, <2", "2.0", false),
            (">= 1.2 , != 1.5", "1.5.0", false),
            (">1.2", "1.2.post1", false),
            (">1.2", "1.2.1", true),
            ("<=1.5", "1.5.1", false),
            ("===1.0", "1.0", true),
            ("^1.2", "1.9", true),
            ("^1.2", "2.0", false),
            ("^0.2.3", "0.2.9", true),
            ("^0.2.3", "0.3.0", false),
            ("^0.0.3", "0.0.4", false),
            ("~1.2", "1.2.9", true),
            ("~1.2", "1.3", false),
            ("~1", "1.9", true),
            ("1.2.3", "1.2.3", true),
            ("1.2.3", "1.2.4", false),
        ];
        for (spec, version, expected) in cases {
            assert_eq!(admits(spec, version), expected, "{spec} admits {version}");
        }
        assert!(Spec::parse("~=1", Syntax::Pep440).is_err());
        assert!(Spec::parse("^1.2", Syntax::Pep440).is_err());
        assert!(Spec::parse(">=1.*", Syntax::Pep440).is_err());
    }

    #[test]
    fn rewrites_keep_the_written_style() {
        let rewrite = |spec: &str, to: &str| Spec::parse(spec, Syntax::Poetry).unwrap().rewrite(&p(to), to);
        for (spec, to, expected) in [
            ("==1.2.3", "1.4.0", "==1.4.0"),
            ("== 1.2.3", "1.4.0", "== 1.4.0"),
            ("==1.2.*", "1.4.0", "==1.4.*"),
            ("~=1.4", "2.1.3", "~=2.1"),
            ("~=1.4.2", "1.6.0", "~=1.6.0"),
            (">=1.2,<2", "2.3.0", ">=1.2,<3"),
            (">=1.2, <1.5", "1.7.2", ">=1.2, <1.8"),
            (">=1.0.0,<1.2.4", "1.7.2", ">=1.0.0,<1.7.3"),
            ("<=1.5", "1.7.2", "<=1.7.2"),
            ("^1.2", "2.1.0", "^2.1"),
            ("~1.2.3", "1.4.0", "~1.4.0"),
            ("1.2.3", "1.4", "1.4"),
        ] {
            assert_eq!(rewrite(spec, to).as_deref(), Some(expected), "{spec} to {to}");
        }
        assert_eq!(rewrite(">=3,<4", "2.5"), None);
    }

    fn dep(requirement: &str) -> Dependency {
        Dependency {
            ecosystem: Ecosystem::Python,
            name: "requests".into(),
            manifest: "requirements.txt".into(),
            section: REQUIREMENTS.into(),
            requirement: requirement.into(),
            pinned: Spec::parse(requirement, Syntax::Poetry).unwrap().is_pinned(),
            marker: None,
        }
    }

    fn planned(requirement: &str, versions: &[&str], policy: &Policy) -> Vec<(String, String, UpdateKind, String)> {
        let releases: Vec<Release> = versions
            .iter()
            .map(|v| Release {
                version: v.trim_end_matches(" yanked").into(),
                yanked: v.ends_with(" yanked"),
                notes_url: None,
                rust_version: None,
                requires_python: Vec::new(),
                published: None,
            })
            .collect();
        let locked = Spec::parse(requirement, Syntax::Poetry).unwrap().pin();
        plan(&dep(requirement), locked.as_deref(), &releases, policy, None)
            .updates
            .into_iter()
            .map(|u| (u.from, u.to, u.kind, u.new_requirement.unwrap()))
            .collect()
    }

    fn update(from: &str, to: &str, kind: UpdateKind, requirement: &str) -> (String, String, UpdateKind, String) {
        (from.into(), to.into(), kind, requirement.into())
    }

    #[test]
    fn plans_follow_the_policy() {
        let all = [
            "2.30.0",
            "2.31.0",
            "2.32.0rc1",
            "2.32.3",
            "2.33.0 yanked",
            "3.0.0",
            "3.1.0.dev1",
        ];
        let default = Policy::default();
        let major = Policy {
            major: true,
            ..Policy::default()
        };
        let pinned = Policy {
            major: true,
            update_pinned: true,
            ..Policy::default()
        };
        assert!(planned(">=2.30", &all, &major).is_empty());
        assert!(planned("~=2.30", &all, &default).is_empty());
        assert_eq!(
            planned("~=2.30", &all, &major),
            // An unpinned requirement is "from" as it was written.
            [update("~=2.30", "3.0.0", UpdateKind::Major, "~=3.0")]
        );
        assert_eq!(
            planned(">=2.30,<2.32", &all, &major),
            [
                update(">=2.30,<2.32", "2.32.3", UpdateKind::Minor, ">=2.30,<2.33"),
                // The bound keeps the level it is written at.
                update(">=2.30,<2.32", "3.0.0", UpdateKind::Major, ">=2.30,<3.1")
            ]
        );
        assert!(planned("==2.31.0", &all, &major).is_empty());
        assert_eq!(
            planned("==2.31.0", &all, &pinned),
            [
                update("2.31.0", "2.32.3", UpdateKind::Minor, "==2.32.3"),
                update("2.31.0", "3.0.0", UpdateKind::Major, "==3.0.0")
            ]
        );
        // A `!=` exclusion is the author's: never proposed.
        assert_eq!(
            planned(">=2.30,<2.31,!=2.32.3", &all, &default),
            [update(
                ">=2.30,<2.31,!=2.32.3",
                "2.31.0",
                UpdateKind::Minor,
                ">=2.30,<2.32,!=2.32.3"
            )]
        );
    }

    #[test]
    fn requirement_directories_includes_constraints_and_dependency_groups_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("requirements/base.txt", "requests>=2.30\n");
        write(
            "requirements/dev.txt",
            "-r base.txt\n--constraint=../ci/pins.txt\npytest>=7\n",
        );
        write("ci/pins.txt", "urllib3==2.0.7\n");
        write("constraints.txt", "idna==3.4\n");
        write("docs/notes.txt", "nothing==1.0\n");
        // An include that climbs out of the checkout, or into a hidden directory, is not followed.
        write(
            "requirements/evil.txt",
            "-r ../../outside.txt\n-r ../.secret/keys.txt\n",
        );
        write(".secret/keys.txt", "secret==1.0\n");
        write(
            "pyproject.toml",
            "[project]\nname = \"app\"\n\n[dependency-groups]\ntest = [\"pytest-cov>=4\", {include-group = \"lint\"}]\n\
             lint = [\"ruff==0.4.1\"]\n",
        );
        let found: Vec<String> = scan(root)
            .unwrap()
            .into_iter()
            .map(|d| format!("{} {} {} {}", d.manifest, d.section, d.name, d.requirement))
            .collect();
        assert_eq!(
            found,
            [
                "ci/pins.txt requirements urllib3 ==2.0.7",
                "constraints.txt requirements idna ==3.4",
                "pyproject.toml dependency-groups.test pytest-cov >=4",
                "pyproject.toml dependency-groups.lint ruff ==0.4.1",
                "requirements/base.txt requirements requests >=2.30",
                "requirements/dev.txt requirements pytest >=7",
            ]
        );
        // A dependency group's requirement is rewritten in place.
        apply(
            root,
            &Update {
                ecosystem: Ecosystem::Python,
                name: "ruff".into(),
                manifest: Some("pyproject.toml".into()),
                section: Some("dependency-groups.lint".into()),
                from: "0.4.1".into(),
                to: "0.5.0".into(),
                kind: UpdateKind::Minor,
                new_requirement: Some("==0.5.0".into()),
                notes_url: None,
                marker: None,
            },
        )
        .unwrap();
        let pyproject = std::fs::read_to_string(root.join("pyproject.toml")).unwrap();
        assert!(pyproject.contains("lint = [\"ruff==0.5.0\"]"), "{pyproject}");
    }

    #[test]
    fn requirements_lines_and_pyproject_arrays_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("requirements.txt"),
            "# pinned for the API\nrequests==2.31.0  # keep\nDjango>=4.2,<5 ; python_version >= \"3.10\"\n\
             Flask_Login[extras] ~= 0.6\n-r requirements-dev.txt\n-e git+https://github.com/o/r.git#egg=r\n\
             pkg @ https://example.test/pkg.whl\n./local/pkg\nhashed==1.0 --hash=sha256:abc\nunversioned\n\
             wrapped==1.0 \\\n    --hash=sha256:abc\nold (>=1.0)\n",
        )
        .unwrap();
        std::fs::write(root.join("requirements-dev.txt"), "pytest>=7\n").unwrap();
        std::fs::write(
            root.join("pyproject.toml"),
            "[project]\nname = \"app\"\ndependencies = [\n  \"httpx>=0.25,<0.27\",  # client\n  'attrs==23.1.0',\n  \"nover\",\n]\n\
             [project.optional-dependencies]\ntest = [\"pytest-cov~=4.1\"]\n\
             [tool.poetry.dependencies]\npython = \"^3.10\"\nrich = \"^13.3\"\nclick = { version = \"8.1.3\", extras = [\"x\"] }\n\
             local = { path = \"../local\" }\n[tool.poetry.group.dev.dependencies]\nruff = \"~0.1.5\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("venv")).unwrap();
        std::fs::write(root.join("venv/pyvenv.cfg"), "home = /usr\n").unwrap();
        std::fs::write(root.join("venv/requirements.txt"), "nope==1\n").unwrap();
        let found: Vec<String> = scan(root)
            .unwrap()
            .into_iter()
            .map(|d| format!("{} {} {} {} {}", d.manifest, d.section, d.name, d.requirement, d.pinned))
            .collect();
        assert_eq!(
            found,
            [
                "pyproject.toml project.dependencies httpx >=0.25,<0.27 false",
                "pyproject.toml project.dependencies attrs ==23.1.0 true",
                "pyproject.toml project.optional-dependencies.test pytest-cov ~=4.1 false",
                "pyproject.toml tool.poetry.dependencies rich ^13.3 false",
                "pyproject.toml tool.poetry.dependencies click 8.1.3 true",
                "pyproject.toml tool.poetry.group.dev.dependencies ruff ~0.1.5 false",
                "requirements-dev.txt requirements pytest >=7 false",
                "requirements.txt requirements requests ==2.31.0 true",
                "requirements.txt requirements django >=4.2,<5 false",
                "requirements.txt requirements flask-login ~= 0.6 false",
                "requirements.txt requirements old >=1.0 false",
            ]
        );
        let pins = locked(root).unwrap();
        assert_eq!(
            pins,
            BTreeMap::from([
                ("attrs".to_owned(), vec!["23.1.0".to_owned()]),
                ("click".to_owned(), vec!["8.1.3".to_owned()]),
                ("requests".to_owned(), vec!["2.31.0".to_owned()]),
            ])
        );
    }

    fn manifest_update(manifest: &str, section: &str, name: &str, from: &str, requirement: &str) -> Update {
        Update {
            ecosystem: Ecosystem::Python,
            name: name.into(),
            manifest: Some(manifest.into()),
            section: Some(section.into()),
            from: from.into(),
            to: String::new(),
            kind: UpdateKind::Minor,
            new_requirement: Some(requirement.into()),
            notes_url: None,
            marker: None,
        }
    }

    #[test]
    fn apply_changes_only_the_specifier() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let requirements = "numpy==1.21.0 ; python_version < \"3.8\"\nnumpy==1.26.0 ; python_version >= \"3.8\"  # new\nDjango >=4.2,<5\n";
        std::fs::write(root.join("requirements.txt"), requirements).unwrap();
        apply(
            root,
            &Update {
                marker: Some("python_version >= \"3.8\"".into()),
                ..manifest_update("requirements.txt", REQUIREMENTS, "numpy", "1.26.0", "==1.26.4")
            },
        )
        .unwrap();
        apply(
            root,
            &manifest_update("requirements.txt", REQUIREMENTS, "django", "4.2", ">=4.2,<6"),
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("requirements.txt")).unwrap(),
            "numpy==1.21.0 ; python_version < \"3.8\"\nnumpy==1.26.4 ; python_version >= \"3.8\"  # new\nDjango >=4.2,<6\n"
        );
        let pyproject = "[project]\ndependencies = [\n  \"httpx[http2] >=0.25,<0.27 ; os_name != 'nt'\",  # client\n  'attrs==23.1.0',\n]\n\n[tool.poetry.dependencies]\nclick = { version = \"8.1.3\", extras = [\"x\"] }  # cli\n";
        std::fs::write(root.join("pyproject.toml"), pyproject).unwrap();
        apply(
            root,
            &manifest_update(
                "pyproject.toml",
                "project.dependencies",
                "httpx",
                "0.25",
                ">=0.25,<0.28",
            ),
        )
        .unwrap();
        apply(
            root,
            &manifest_update("pyproject.toml", "project.dependencies", "attrs", "23.1.0", "==23.2.0"),
        )
        .unwrap();
        apply(
            root,
            &manifest_update("pyproject.toml", "tool.poetry.dependencies", "click", "8.1.3", "8.1.7"),
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("pyproject.toml")).unwrap(),
            pyproject
                .replace("<0.27", "<0.28")
                .replace("'attrs==23.1.0'", "'attrs==23.2.0'")
                .replace("\"8.1.3\"", "\"8.1.7\"")
        );
        assert_eq!(
            apply(
                root,
                &manifest_update("pyproject.toml", "project.dependencies", "rich", "13.0", "^14")
            )
            .unwrap_err()
            .to_string(),
            "pyproject.toml: there is no requirement on `rich` in project.dependencies"
        );
    }

    #[test]
    fn pypi_documents_give_releases_yanks_and_notes() {
        let body = r#"{"info": {"name": "Demo", "project_urls": {"Homepage": "https://demo.test", "Release Notes": "https://demo.test/changes"}},
            "releases": {"1.0": [{"yanked": false}], "1.1": [{"yanked": true}, {"yanked": true}], "1.2": [{"yanked": true}, {"yanked": false}],
                         "0.9": [], "junk-version": [{}]}}"#;
        let got: Vec<(String, bool)> = parse_project(body)
            .unwrap()
            .into_iter()
            .map(|r| (r.version, r.yanked))
            .collect();
        assert_eq!(
            got,
            [
                ("0.9".into(), true),
                ("1.0".into(), false),
                ("1.1".into(), true),
                ("1.2".into(), false)
            ]
        );
        assert_eq!(
            parse_project(body).unwrap()[0].notes_url.as_deref(),
            Some("https://demo.test/changes")
        );
        assert_eq!(
            parse_project("{}").unwrap_err().to_string(),
            "it has no `releases` object"
        );
        // A release's date is its earliest file's upload.
        let timed = r#"{"releases": {"1.0": [{"upload_time_iso_8601": "2024-05-02T10:00:00.123456Z"},
            {"upload_time_iso_8601": "2024-05-01T09:30:00.000000Z"}], "1.1": [{"upload_time": "2024-06-01T00:00:00"}]}}"#;
        let published: Vec<Option<String>> = parse_project(timed)
            .unwrap()
            .iter()
            .map(|r| r.published.map(|t| t.to_string()))
            .collect();
        assert_eq!(published, [Some("2024-05-01T09:30:00Z".to_owned()), None]);
        let base = Url::parse("http://127.0.0.1:1/simple-mirror").unwrap();
        assert_eq!(
            project_url(&base, "flask-login").unwrap().as_str(),
            "http://127.0.0.1:1/simple-mirror/pypi/flask-login/json"
        );
        assert_eq!(normalize("Flask__Login.ext"), "flask-login-ext");
    }
    #[test]
    fn each_marker_line_is_a_requirement_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("requirements.txt"),
            "numpy==1.24.4; python_version<\"3.9\"\nnumpy==1.26.4 ; python_version>=\"3.9\"  # new\n",
        )
        .unwrap();
        std::fs::write(
            root.join("pyproject.toml"),
            "[tool.poetry.dependencies]\npython = \"^3.8\"\ntomli = { version = \"^2.0\", markers = \"python_version < '3.11'\" }\n",
        )
        .unwrap();
        let found: Vec<(String, String, Option<String>)> = scan(root)
            .unwrap()
            .into_iter()
            .map(|d| (d.name, d.requirement, d.marker))
            .collect();
        assert_eq!(
            found,
            [
                ("tomli".into(), "^2.0".into(), Some("python_version < '3.11'".into())),
                ("numpy".into(), "==1.24.4".into(), Some("python_version<\"3.9\"".into())),
                (
                    "numpy".into(),
                    "==1.26.4".into(),
                    Some("python_version>=\"3.9\"".into())
                ),
            ]
        );
        // Each line's update edits that line only, even when both stood at one version.
        std::fs::write(
            root.join("requirements.txt"),
            "numpy>=1.24; python_version<\"3.9\"\nnumpy>=1.24; python_version>=\"3.9\"\n",
        )
        .unwrap();
        apply(
            root,
            &Update {
                marker: Some("python_version>=\"3.9\"".into()),
                ..manifest_update("requirements.txt", REQUIREMENTS, "numpy", ">=1.24", ">=1.26")
            },
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("requirements.txt")).unwrap(),
            "numpy>=1.24; python_version<\"3.9\"\nnumpy>=1.26; python_version>=\"3.9\"\n"
        );
    }

    #[test]
    fn pypi_files_say_which_pythons_a_release_installs_on() {
        let body = r#"{"releases": {
            "1.0": [{"requires_python": ">=3.8", "yanked": false}, {"requires_python": ">=3.8", "yanked": false}],
            "1.1": [{"requires_python": ">=3.9", "yanked": false}, {"requires_python": null, "yanked": false}],
            "1.2": [{"requires_python": ">=3.10", "yanked": false}, {"requires_python": ">=3.6", "yanked": true}],
            "1.3": [{"requires_python": " ", "yanked": false}],
            "1.4": [{"requires_python": ">=3.11", "yanked": true}]
        }}"#;
        let got: Vec<(String, Vec<String>)> = parse_project(body)
            .unwrap()
            .into_iter()
            .map(|r| (r.version, r.requires_python))
            .collect();
        let specs = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            got,
            [
                ("1.0".into(), specs(&[">=3.8"])),
                // A file that declares nothing installs anywhere.
                ("1.1".into(), specs(&[])),
                // A yanked file does not count while another is live.
                ("1.2".into(), specs(&[">=3.10"])),
                ("1.3".into(), specs(&[])),
                ("1.4".into(), specs(&[">=3.11"])),
            ]
        );
    }

    #[test]
    fn releases_that_do_not_install_on_the_pythons_are_held_back() {
        let release = |version: &str, python: &str| Release {
            version: version.into(),
            yanked: false,
            notes_url: None,
            rust_version: None,
            requires_python: vec![python.into()],
            published: None,
        };
        let releases = [
            release("7.4.0", ">=3.7"),
            release("8.3.5", ">=3.8"),
            release("8.4.2", ">=3.9"),
            release("9.0.0", ">=3.10"),
        ];
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("pyproject.toml"),
            "[project]\nrequires-python = \">=3.8\"\n",
        )
        .unwrap();
        let pythons = interpreter::project(dir.path(), "requirements.txt");
        let policy = Policy {
            major: true,
            update_pinned: true,
            ..Policy::default()
        };
        let planned = plan(&dep("==7.4.0"), Some("7.4.0"), &releases, &policy, pythons.as_ref());
        let to: Vec<&str> = planned.updates.iter().map(|u| u.to.as_str()).collect();
        assert_eq!(to, ["8.3.5"]);
        let held: Vec<String> = planned.held_back.iter().map(ToString::to_string).collect();
        assert_eq!(
            held,
            [
                "`requests` 9.0.0 needs Python >=3.10; the requirement is for Python >=3.8 (requires-python) (8.3.5 \
                 is proposed instead)"
            ]
        );
        // Without a declared Python nothing is held back.
        let unlimited = plan(&dep("==7.4.0"), Some("7.4.0"), &releases, &policy, None);
        assert_eq!(
            unlimited.updates.iter().map(|u| u.to.as_str()).collect::<Vec<_>>(),
            ["9.0.0"]
        );
        assert!(unlimited.held_back.is_empty());
    }
    #[test]
    fn lockfiles_beside_pyproject_are_found_and_refreshed_by_their_tool() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("pyproject.toml"), "[project]\ndependencies = [\"a==1\"]\n").unwrap();
        std::fs::write(root.join("uv.lock"), "version = 1\n").unwrap();
        std::fs::create_dir(root.join("svc")).unwrap();
        std::fs::write(
            root.join("svc/pyproject.toml"),
            "[tool.poetry.dependencies]\nb = \"^1\"\n[[tool.uv.index]]\nurl = \"https://mirror.test/simple\"\n",
        )
        .unwrap();
        std::fs::write(root.join("svc/poetry.lock"), "# poetry\n").unwrap();
        // A lockfile that is a symlink is not one pitcrew refreshes or puts back.
        std::fs::create_dir(root.join("linked")).unwrap();
        std::fs::write(root.join("linked/pyproject.toml"), "[project]\n").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join("linked/uv.lock")).unwrap();
        let found = locks(root);
        assert_eq!(
            found,
            [
                Lock {
                    dir: String::new(),
                    tool: LockTool::Uv
                },
                Lock {
                    dir: "svc".into(),
                    tool: LockTool::Poetry
                },
            ]
        );
        assert_eq!(
            (found[1].file(), found[1].manifest()),
            ("svc/poetry.lock".into(), "svc/pyproject.toml".into())
        );
        let pypi = Url::parse("http://127.0.0.1:9/mirror/").unwrap();
        let uv = found[0].command(root, &pypi);
        assert!(
            uv.contains("UV_DEFAULT_INDEX='http://127.0.0.1:9/mirror/simple' uv lock"),
            "{uv}"
        );
        assert!(
            uv.ends_with("|| { echo 'pitcrew: could not refresh uv.lock' >&2; exit 1; }"),
            "{uv}"
        );
        let poetry = found[1].command(root, &pypi);
        assert!(
            poetry.contains("poetry lock --no-update") && !poetry.contains("UV_DEFAULT_INDEX"),
            "{poetry}"
        );
        // A project naming its own index keeps it.
        std::fs::write(root.join("svc/uv.lock"), "version = 1\n").unwrap();
        let own = Lock {
            dir: "svc".into(),
            tool: LockTool::Uv,
        };
        assert!(own.command(root, &pypi).contains("else uv lock; fi"));
    }
}
