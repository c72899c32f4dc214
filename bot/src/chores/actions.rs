//! GitHub Actions: the actions and reusable workflows a repository's workflows use
//! (`uses: owner/repo[/path]@ref`), their versions (the action repository's `vN`, `vN.M` and
//! `vN.M.P` tags), and edits of the workflow text that keep its formatting and comments.
//!
//! A reference is kept at the precision it is written with: `v4` moves to `v5` (a major, the
//! only kind of update a major tag can have), `v4.1.2` to `v4.2.0` or `v5.0.1`. A commit SHA is
//! pinned and stays; a branch (`main`) or another kind of tag is not a version and is skipped.

use std::collections::BTreeSet;
use std::ops::Range as Span;
use std::path::{Component, Path, PathBuf};

use super::{Dependency, Release, Update, UpdateKind};
use crate::config::deps::{Ecosystem, Policy};
use crate::github::{GithubClient, GithubError, RepoName};

/// Where workflows are, relative to the repository's root.
pub const WORKFLOWS_DIR: &str = ".github/workflows";

/// How many tags of an action's repository are read (GitHub lists them a hundred per page).
const MAX_TAGS: usize = 1000;

/// A workflow that could not be listed, read or edited; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum ActionsError {
    #[error("{WORKFLOWS_DIR}: could not list it: {0}")]
    List(#[source] std::io::Error),
    #[error("{manifest}: could not read it: {source}")]
    Read {
        manifest: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{manifest}: not a path inside the repository")]
    Outside { manifest: String },
    #[error("{manifest}: no `uses: {name}@{from}`")]
    NoUses {
        manifest: String,
        name: String,
        from: String,
    },
    #[error("{manifest}: could not write it: {source}")]
    Write {
        manifest: String,
        #[source]
        source: std::io::Error,
    },
}

/// Every action or reusable workflow of another repository that the workflows in
/// `.github/workflows/*.yml|*.yaml` use at a version tag or a commit SHA, once per workflow,
/// repository and reference (its section is the first job using it: `jobs.<id>`). Local actions
/// (`./…`), Docker images (`docker://…`) and branch references are skipped.
pub fn scan(root: &Path) -> Result<Vec<Dependency>, ActionsError> {
    let dir = root.join(WORKFLOWS_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ActionsError::List(e)),
    };
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(ActionsError::List)?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_file && (name.ends_with(".yml") || name.ends_with(".yaml")) {
            files.push((format!("{WORKFLOWS_DIR}/{name}"), entry.path()));
        }
    }
    files.sort();
    let mut deps = Vec::new();
    for (manifest, _) in files {
        let text = super::read_text(root, &manifest).map_err(|source| ActionsError::Read {
            manifest: manifest.clone(),
            source,
        })?;
        let mut seen = BTreeSet::new();
        let mut jobs = JobTracker::default();
        for line in text.lines() {
            jobs.read(line);
            let Some(uses) = parse_uses(line) else {
                continue;
            };
            let Some(reference) = Reference::parse(uses.reference) else {
                continue;
            };
            if !seen.insert((uses.repo.to_ascii_lowercase(), uses.reference.to_owned())) {
                continue;
            }
            deps.push(Dependency {
                ecosystem: Ecosystem::Actions,
                name: uses.repo,
                manifest: manifest.clone(),
                section: jobs.section(),
                requirement: uses.reference.to_owned(),
                pinned: reference == Reference::Sha,
                marker: None,
            });
        }
    }
    Ok(deps)
}

/// Which job of a workflow a line is in, from the indentation under the top-level `jobs:`.
#[derive(Debug, Default)]
struct JobTracker {
    in_jobs: bool,
    /// The indentation of the job ids, once seen.
    job_indent: Option<usize>,
    job: Option<String>,
}

impl JobTracker {
    fn read(&mut self, line: &str) {
        let content = line.trim_start();
        if content.is_empty() || content.starts_with('#') {
            return;
        }
        let indent = line.len() - content.len();
        if indent == 0 {
            self.in_jobs = content.split_once(':').is_some_and(|(key, _)| key.trim() == "jobs");
            self.job_indent = None;
            self.job = None;
            return;
        }
        if !self.in_jobs {
            return;
        }
        let indent_of_jobs = *self.job_indent.get_or_insert(indent);
        if indent == indent_of_jobs
            && let Some((key, _)) = content.split_once(':')
        {
            self.job = Some(key.trim().trim_matches(['"', '\'']).to_owned());
        }
    }

    fn section(&self) -> String {
        match &self.job {
            Some(job) => format!("jobs.{job}"),
            None => "jobs".to_owned(),
        }
    }
}

/// A `uses:` line: the action's repository (`owner/repo`) and the reference, and where that is.
#[derive(Debug, PartialEq, Eq)]
struct Uses<'a> {
    repo: String,
    reference: &'a str,
    span: Span<usize>,
}

/// The `uses:` on `line` (a step's `- uses: …` or a job's `uses: …`), quoted or not, before any
/// comment; `None` for other lines, local actions and Docker images.
fn parse_uses(line: &str) -> Option<Uses<'_>> {
    let mut rest = line.trim_start();
    if let Some(item) = rest.strip_prefix('-') {
        rest = item.trim_start();
    }
    let after_key = rest.strip_prefix("uses:")?;
    let value = after_key.trim_start();
    let mut start = line.len() - value.len();
    let value = match value.chars().next() {
        Some(quote @ ('"' | '\'')) => {
            start += 1;
            let inner = &value[1..];
            &inner[..inner.find(quote)?]
        }
        _ => value.split(|c: char| c.is_whitespace()).next()?,
    };
    if value.starts_with("./") || value.starts_with("docker://") {
        return None;
    }
    let (action, reference) = value.rsplit_once('@')?;
    let mut segments = action.split('/');
    let (owner, repo) = (segments.next()?, segments.next()?);
    let valid = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if !valid(owner) || !valid(repo) || reference.is_empty() {
        return None;
    }
    let reference_start = start + action.len() + 1;
    Some(Uses {
        repo: format!("{owner}/{repo}"),
        reference,
        span: reference_start..reference_start + reference.len(),
    })
}

/// A reference worth keeping current.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reference {
    /// A full commit SHA: pinned.
    Sha,
    /// `vN`, `vN.M` or `vN.M.P`: the numbers as written.
    Version(Vec<u64>),
}

impl Reference {
    fn parse(text: &str) -> Option<Reference> {
        if text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Some(Reference::Sha);
        }
        let numbers: Vec<u64> = text
            .strip_prefix('v')?
            .split('.')
            .map(|part| {
                if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                    None
                } else {
                    part.parse().ok()
                }
            })
            .collect::<Option<_>>()?;
        (1..=3).contains(&numbers.len()).then_some(Reference::Version(numbers))
    }
}

/// Number `i` of a version (0 where not written).
fn number(version: &[u64], i: usize) -> u64 {
    version.get(i).copied().unwrap_or(0)
}

/// What a version must share to be compatible: the major, or for `v0.x` the minor.
fn compatibility(version: &[u64]) -> (u64, u64, u64) {
    match (number(version, 0), number(version, 1)) {
        (0, 0) => (0, 0, number(version, 2)),
        (0, minor) => (0, minor, 0),
        (major, _) => (major, 0, 0),
    }
}

fn padded(version: &[u64]) -> [u64; 3] {
    [number(version, 0), number(version, 1), number(version, 2)]
}

/// The versions of action repository `owner_repo`: its tags `vN`, `vN.M` and `vN.M.P` (at most
/// the first [`MAX_TAGS`] GitHub lists), oldest first, each with its release page.
pub async fn releases(github: &GithubClient, owner_repo: &str) -> Result<Vec<Release>, GithubError> {
    let repo: RepoName = owner_repo
        .parse()
        .map_err(|e: crate::github::RepoNameError| GithubError::InvalidInput {
            what: format!("the action repository `{owner_repo}`"),
            message: e.to_string(),
        })?;
    let tags = github.list_tags(&repo, MAX_TAGS).await?;
    Ok(releases_from_tags(&repo, tags))
}

fn releases_from_tags(repo: &RepoName, tags: Vec<String>) -> Vec<Release> {
    let mut versions: Vec<(([u64; 3], usize), Release)> = tags
        .into_iter()
        .filter_map(|tag| match Reference::parse(&tag) {
            Some(Reference::Version(numbers)) => Some(((padded(&numbers), numbers.len()), tag)),
            _ => None,
        })
        .map(|(key, tag)| {
            let notes_url = format!("https://github.com/{repo}/releases/tag/{tag}");
            let release = Release {
                version: tag,
                yanked: false,
                notes_url: Some(notes_url),
                rust_version: None,
                requires_python: Vec::new(),
                published: None,
            };
            (key, release)
        })
        .collect();
    versions.sort_by_key(|(key, _)| *key);
    versions.into_iter().map(|(_, release)| release).collect()
}

/// The updates `policy` allows for `dep`, among the tags written at the same precision as its
/// reference: the newest compatible one (same major) and, with `policy.major`, the newest of a
/// newer major as an update of its own. A SHA stays, even with `policy.update_pinned`: the tag list
/// has names, not the commits a pin would need. Workflows have no lockfile: `_locked` is unused.
pub fn plan(dep: &Dependency, _locked: Option<&str>, releases: &[Release], policy: &Policy) -> Vec<Update> {
    let policy = policy.for_package(dep.ecosystem, &dep.name);
    if policy.ignore {
        return Vec::new();
    }
    let Some(Reference::Version(current)) = Reference::parse(&dep.requirement) else {
        return Vec::new();
    };
    let newer: Vec<([u64; 3], &Release)> = releases
        .iter()
        .filter(|r| !r.yanked)
        .filter_map(|r| match Reference::parse(&r.version) {
            Some(Reference::Version(numbers)) if numbers.len() == current.len() => Some((padded(&numbers), r)),
            _ => None,
        })
        .filter(|(numbers, _)| *numbers > padded(&current))
        .collect();
    let update = |to: &[u64; 3], release: &Release| {
        let kind = if compatibility(&current) != compatibility(to) {
            UpdateKind::Major
        } else if number(&current, 1) != to[1] {
            UpdateKind::Minor
        } else {
            UpdateKind::Patch
        };
        Update {
            ecosystem: Ecosystem::Actions,
            name: dep.name.clone(),
            manifest: Some(dep.manifest.clone()),
            section: Some(dep.section.clone()),
            from: dep.requirement.clone(),
            to: release.version.clone(),
            kind,
            new_requirement: Some(release.version.clone()),
            notes_url: release.notes_url.clone(),
            marker: None,
        }
    };
    let mut updates = Vec::new();
    let compatible = newer
        .iter()
        .filter(|(numbers, _)| compatibility(numbers) == compatibility(&current))
        .max_by(|a, b| a.0.cmp(&b.0));
    if let Some((numbers, release)) = compatible {
        updates.push(update(numbers, release));
    }
    let newest = newer.iter().max_by(|a, b| a.0.cmp(&b.0));
    if let Some((numbers, release)) = newest
        && policy.major
        && compatibility(numbers) != compatibility(&current)
    {
        updates.push(update(numbers, release));
    }
    updates
}

/// Rewrites the reference of every `uses: {update.name}[/path]@{update.from}` in the workflow to
/// `update.new_requirement`, changing nothing else of the text (quotes and comments stay).
pub fn apply(root: &Path, update: &Update) -> Result<(), ActionsError> {
    let (Some(manifest), Some(reference)) = (&update.manifest, &update.new_requirement) else {
        return Ok(());
    };
    let relative = Path::new(manifest);
    if !relative.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(ActionsError::Outside {
            manifest: manifest.clone(),
        });
    }
    let path = root.join(relative);
    let text = super::read_text(root, manifest).map_err(|source| ActionsError::Read {
        manifest: manifest.clone(),
        source,
    })?;
    let mut edited = String::with_capacity(text.len());
    let mut changed = 0;
    for line in text.split_inclusive('\n') {
        match parse_uses(line) {
            Some(uses) if uses.repo.eq_ignore_ascii_case(&update.name) && uses.reference == update.from => {
                edited.push_str(&line[..uses.span.start]);
                edited.push_str(reference);
                edited.push_str(&line[uses.span.end..]);
                changed += 1;
            }
            _ => edited.push_str(line),
        }
    }
    if changed == 0 {
        return Err(ActionsError::NoUses {
            manifest: manifest.clone(),
            name: update.name.clone(),
            from: update.from.clone(),
        });
    }
    std::fs::write(&path, edited).map_err(|source| ActionsError::Write {
        manifest: manifest.clone(),
        source,
    })
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failing test should panic")]
mod tests {
    use super::*;

    const SHA: &str = "8e5e7e5ab8b370d6c329ec480221332ada57f0ab";

    #[test]
    fn uses_lines_are_read_with_their_reference_span() {
        let line = "      - uses: actions/checkout@v4 # pinned by policy";
        let uses = parse_uses(line).unwrap();
        assert_eq!((uses.repo.as_str(), uses.reference), ("actions/checkout", "v4"));
        assert_eq!(&line[uses.span], "v4");
        let line = "    uses: 'octo-org/workflows/.github/workflows/ci.yml@v1.2'";
        let uses = parse_uses(line).unwrap();
        assert_eq!((uses.repo.as_str(), &line[uses.span]), ("octo-org/workflows", "v1.2"));
        for other in [
            "      - uses: ./.github/actions/local",
            "      - uses: docker://alpine:3.19",
            "      - run: echo uses: a/b@v1",
            "      - uses: actions",
            "      - uses: a/b@",
        ] {
            assert_eq!(parse_uses(other), None, "{other}");
        }
    }

    #[test]
    fn references_are_versions_shas_or_nothing() {
        assert_eq!(Reference::parse("v4"), Some(Reference::Version(vec![4])));
        assert_eq!(Reference::parse("v4.1.2"), Some(Reference::Version(vec![4, 1, 2])));
        assert_eq!(Reference::parse(SHA), Some(Reference::Sha));
        for other in ["main", "4", "v4.1.2.3", "v4-beta", "v", "v4.", "release/v1", &SHA[..39]] {
            assert_eq!(Reference::parse(other), None, "{other}");
        }
    }

    #[test]
    fn scan_finds_each_action_once_per_workflow_with_its_job() {
        let dir = tempfile::tempdir().unwrap();
        let workflows = dir.path().join(WORKFLOWS_DIR);
        std::fs::create_dir_all(&workflows).unwrap();
        std::fs::write(
            workflows.join("ci.yml"),
            "name: CI\non: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      \
             - uses: actions/setup-node@v4.0.2 # node\n      - uses: ./local\n  test:\n    steps:\n      - uses: actions/checkout@v4\n      \
             - uses: \"github/codeql-action/init@v3\"\n      - uses: github/codeql-action/analyze@v3\n      - uses: actions/cache@main\n  \
             pinned:\n    steps:\n      - uses: actions/upload-artifact@{SHA}\n"
                .replace("{SHA}", SHA),
        )
        .unwrap();
        std::fs::write(
            workflows.join("release.yaml"),
            "jobs:\n  call:\n    uses: octo-org/shared/.github/workflows/r.yml@v1\n",
        )
        .unwrap();
        std::fs::write(workflows.join("notes.txt"), "uses: a/b@v1\n").unwrap();
        let found: Vec<String> = scan(dir.path())
            .unwrap()
            .into_iter()
            .map(|d| format!("{} {} {} {} {}", d.manifest, d.section, d.name, d.requirement, d.pinned))
            .collect();
        assert_eq!(
            found,
            [
                ".github/workflows/ci.yml jobs.build actions/checkout v4 false",
                ".github/workflows/ci.yml jobs.build actions/setup-node v4.0.2 false",
                ".github/workflows/ci.yml jobs.test github/codeql-action v3 false",
                format!(".github/workflows/ci.yml jobs.pinned actions/upload-artifact {SHA} true").as_str(),
                ".github/workflows/release.yaml jobs.call octo-org/shared v1 false",
            ]
        );
        assert!(scan(tempfile::tempdir().unwrap().path()).unwrap().is_empty());
    }

    fn dep(requirement: &str) -> Dependency {
        Dependency {
            ecosystem: Ecosystem::Actions,
            name: "actions/checkout".into(),
            manifest: ".github/workflows/ci.yml".into(),
            section: "jobs.build".into(),
            requirement: requirement.into(),
            pinned: Reference::parse(requirement) == Some(Reference::Sha),
            marker: None,
        }
    }

    fn planned(requirement: &str, policy: &Policy) -> Vec<(String, String, UpdateKind)> {
        let repo: RepoName = "actions/checkout".parse().unwrap();
        let tags = [
            "v3", "v3.6.0", "v4", "v4.1", "v4.1.2", "v4.2.0", "v4.2", "v5", "v5.0.1", "v5.0", "main", "v6-beta",
        ];
        let releases = releases_from_tags(&repo, tags.iter().map(|t| (*t).to_owned()).collect());
        plan(&dep(requirement), None, &releases, policy)
            .into_iter()
            .map(|u| (u.from, u.new_requirement.unwrap(), u.kind))
            .collect()
    }

    #[test]
    fn plans_keep_the_precision_written() {
        let default = Policy::default();
        let major = Policy {
            major: true,
            ..Policy::default()
        };
        let row = |from: &str, to: &str, kind| (from.to_owned(), to.to_owned(), kind);
        assert!(planned("v4", &default).is_empty());
        assert_eq!(planned("v4", &major), [row("v4", "v5", UpdateKind::Major)]);
        assert_eq!(
            planned("v4.1.2", &default),
            [row("v4.1.2", "v4.2.0", UpdateKind::Minor)]
        );
        assert_eq!(
            planned("v4.1.2", &major),
            [
                row("v4.1.2", "v4.2.0", UpdateKind::Minor),
                row("v4.1.2", "v5.0.1", UpdateKind::Major)
            ]
        );
        assert_eq!(planned("v4.1", &default), [row("v4.1", "v4.2", UpdateKind::Minor)]);
        assert!(planned("v5", &major).is_empty());
        let everything = Policy {
            major: true,
            update_pinned: true,
            ..Policy::default()
        };
        assert!(planned(SHA, &everything).is_empty());
        let ignoring = Policy {
            ignore: vec!["actions/*".into()],
            major: true,
            ..Policy::default()
        };
        assert!(planned("v4", &ignoring).is_empty());
    }

    #[test]
    fn release_pages_and_order() {
        let repo: RepoName = "o/r".parse().unwrap();
        let releases = releases_from_tags(
            &repo,
            vec!["v2".into(), "v1.10.0".into(), "v1.9.0".into(), "nightly".into()],
        );
        let versions: Vec<&str> = releases.iter().map(|r| r.version.as_str()).collect();
        assert_eq!(versions, ["v1.9.0", "v1.10.0", "v2"]);
        assert_eq!(
            releases[2].notes_url.as_deref(),
            Some("https://github.com/o/r/releases/tag/v2")
        );
    }

    #[test]
    fn apply_rewrites_every_use_and_keeps_comments() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(WORKFLOWS_DIR)).unwrap();
        let text = "jobs:\n  a:\n    steps:\n      - uses: github/codeql-action/init@v3 # scan\n      - uses: 'github/codeql-action/analyze@v3'\n      - uses: github/codeql-action/upload@v2\n";
        let manifest = ".github/workflows/ci.yml";
        std::fs::write(dir.path().join(manifest), text).unwrap();
        let update = Update {
            ecosystem: Ecosystem::Actions,
            name: "github/codeql-action".into(),
            manifest: Some(manifest.into()),
            section: Some("jobs.a".into()),
            from: "v3".into(),
            to: "v4".into(),
            kind: UpdateKind::Major,
            new_requirement: Some("v4".into()),
            notes_url: None,
            marker: None,
        };
        apply(dir.path(), &update).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(manifest)).unwrap(),
            "jobs:\n  a:\n    steps:\n      - uses: github/codeql-action/init@v4 # scan\n      - uses: 'github/codeql-action/analyze@v4'\n      - uses: github/codeql-action/upload@v2\n"
        );
        assert_eq!(
            apply(dir.path(), &update).unwrap_err().to_string(),
            ".github/workflows/ci.yml: no `uses: github/codeql-action@v3`"
        );
    }
}
