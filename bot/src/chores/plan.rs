//! One chore run's plan across ecosystems: what each ecosystem's manifests declare, what its
//! registry offers, and the updates the policy allows, split into the pull requests they go to;
//! and the per-ecosystem steps the job runs for a pull request (manifest edits, the lockfile
//! refresh command, the lockfile's changes).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use futures_util::stream::{self, StreamExt};
use jiff::{SignedDuration, Timestamp};

use super::{Dependency, RegistryClient, Release, Update, UpdateKind};
use super::{HeldBack, Hold, Planned};
use super::{actions, cargo, lock, npm, python};
use crate::config::deps::{Ecosystem, Policy, Registries};
use crate::config::duration::format_duration;
use crate::github::GithubClient;

/// Locked versions by package, per lockfile scope (the directory of an npm `package-lock.json`;
/// `""` for the repository's one lockfile).
type Locks = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// Registry requests in flight at once.
const CONCURRENT_LOOKUPS: usize = 8;

/// What one ecosystem of the repository needs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Found {
    /// Dependencies the manifests declare (ignored ones included).
    pub dependencies: usize,
    /// Manifest updates the policy allows, compatible ones first.
    pub updates: Vec<Update>,
    /// Whether the ecosystem has a lockfile the refresh may move.
    pub has_lockfile: bool,
    /// What could not be looked up, one sentence each (a registry down, a package gone).
    pub problems: Vec<String>,
    /// Releases not proposed: they need a newer Rust or Python than the project declares, or are
    /// younger than `min_release_age`.
    pub held_back: Vec<HeldBack>,
}

/// Scans `root` for `ecosystem`'s dependencies and plans their updates.
pub async fn find(
    ecosystem: Ecosystem,
    root: &Path,
    registry: &RegistryClient,
    github: &GithubClient,
    policy: &Policy,
) -> Found {
    let mut found = Found::default();
    let dependencies = match scan(ecosystem, root) {
        Ok(dependencies) => dependencies,
        Err(problem) => {
            found.problems.push(problem.to_string());
            return found;
        }
    };
    found.dependencies = dependencies.len();
    found.has_lockfile = has_lockfile(ecosystem, root, &dependencies);
    let locked = locked(ecosystem, root, &dependencies);
    let now = Timestamp::now();
    let wanted: Vec<&Dependency> = dependencies
        .iter()
        .filter(|d| !policy.for_package(ecosystem, &d.name).ignore)
        .collect();
    let names: BTreeSet<String> = wanted.iter().map(|d| d.name.clone()).collect();
    // A sparse index has no dates: with a `min_release_age`, Cargo's come from the registry's API
    // when its index names one (crates.io's does); a date that cannot be looked up makes the
    // crate's lookup fail rather than let a release of unknown age through.
    let cargo_api = match ecosystem {
        Ecosystem::Cargo if policy.min_release_age.is_some() && !names.is_empty() => {
            match cargo::registry_api(registry).await {
                Ok(api) => api,
                Err(problem) => {
                    found.problems.push(problem.to_string());
                    return found;
                }
            }
        }
        _ => None,
    };
    let lookups: Vec<(String, Result<Vec<Release>, String>)> = stream::iter(names.into_iter().map(|name| {
        let registry = registry.clone();
        let github = github.clone();
        let cargo_api = cargo_api.clone();
        async move {
            let releases = match ecosystem {
                Ecosystem::Cargo => cargo_releases(&registry, cargo_api.as_ref(), &name).await,
                Ecosystem::Npm => npm::releases(&registry, &name).await.map_err(|e| e.to_string()),
                Ecosystem::Python => python::releases(&registry, &name).await.map_err(|e| e.to_string()),
                Ecosystem::Actions => actions::releases(&github, &name).await.map_err(|e| e.to_string()),
            };
            (name, releases)
        }
    }))
    .buffer_unordered(CONCURRENT_LOOKUPS)
    .collect()
    .await;
    let releases: BTreeMap<String, Vec<Release>> = lookups
        .into_iter()
        .filter_map(|(name, result)| match result {
            Ok(releases) => Some((name, releases)),
            Err(problem) => {
                found.problems.push(problem);
                None
            }
        })
        .collect();
    // The `rust-version` each Cargo manifest's dependencies are held to.
    let mut rust_versions: BTreeMap<String, Option<String>> = BTreeMap::new();
    // The Pythons each Python manifest's project supports.
    let mut pythons: BTreeMap<String, Option<python::Pythons>> = BTreeMap::new();
    for dep in wanted {
        let Some(releases) = releases.get(&dep.name) else {
            continue;
        };
        let locked_version = match ecosystem {
            Ecosystem::Python => python_locked(&dependencies, dep),
            _ => locked_for(ecosystem, &locked, dep),
        };
        let locked_version = locked_version.as_deref();
        let rust = match ecosystem {
            Ecosystem::Cargo => rust_versions
                .entry(dep.manifest.clone())
                .or_insert_with(|| cargo::rust_version(root, &dep.manifest))
                .clone(),
            _ => None,
        };
        let limit = match ecosystem {
            Ecosystem::Python => {
                let project = pythons
                    .entry(dep.manifest.clone())
                    .or_insert_with(|| python::interpreter::project(root, &dep.manifest));
                python::interpreter::for_requirement(project.as_ref(), dep.marker.as_deref())
            }
            _ => None,
        };
        let plan = |releases: &[Release]| match ecosystem {
            Ecosystem::Cargo => super::version::plan_for_rust(dep, locked_version, releases, policy, rust.as_deref()),
            Ecosystem::Npm => Planned {
                updates: npm::plan(dep, locked_version, releases, policy),
                held_back: Vec::new(),
            },
            Ecosystem::Python => python::plan(dep, locked_version, releases, policy, limit.as_ref()),
            Ecosystem::Actions => Planned {
                updates: actions::plan(dep, locked_version, releases, policy),
                held_back: Vec::new(),
            },
        };
        let planned = match policy.min_release_age {
            Some(age) => old_enough(&dep.name, releases, age, now, plan),
            None => plan(releases),
        };
        for held in planned.held_back {
            if !found.held_back.contains(&held) {
                found.held_back.push(held);
            }
        }
        found.updates.extend(planned.updates);
    }
    // Compatible updates first, then majors; each in manifest order.
    found.updates.sort_by_key(|u| u.kind == UpdateKind::Major);
    found
}

/// A crate's releases, dated by the registry's API when `api` is known.
async fn cargo_releases(registry: &RegistryClient, api: Option<&url::Url>, name: &str) -> Result<Vec<Release>, String> {
    let mut releases = cargo::releases(registry, name).await.map_err(|e| e.to_string())?;
    if let Some(api) = api
        && !releases.is_empty()
    {
        let dates = cargo::release_dates(registry, api, name)
            .await
            .map_err(|e| e.to_string())?;
        for release in &mut releases {
            release.published = dates.get(release.version.trim()).copied();
        }
    }
    Ok(releases)
}

/// The plan `plan` makes from the releases at least `age` old at `now` (a release without a
/// known date counts as old enough), with a [`Hold::Young`] note for each update it would have
/// made from all of them that a younger release holds back: the newest release old enough is
/// proposed instead, if it still is an update.
fn old_enough(
    name: &str,
    releases: &[Release],
    age: std::time::Duration,
    now: Timestamp,
    plan: impl Fn(&[Release]) -> Planned,
) -> Planned {
    let Ok(age_signed) = SignedDuration::try_from(age) else {
        return plan(releases);
    };
    let until = |release: &Release| release.published.and_then(|p| p.checked_add(age_signed).ok());
    let young = |release: &Release| until(release).is_some_and(|until| until > now);
    if !releases.iter().any(young) {
        return plan(releases);
    }
    let old: Vec<Release> = releases.iter().filter(|r| !young(r)).cloned().collect();
    let mut planned = plan(&old);
    let eager = plan(releases);
    for update in &eager.updates {
        let Some(release) = releases.iter().find(|r| r.version == update.to && young(r)) else {
            continue;
        };
        let Some(until) = until(release) else {
            continue;
        };
        let major = update.kind == UpdateKind::Major;
        let instead = planned
            .updates
            .iter()
            .find(|u| (u.kind == UpdateKind::Major) == major && u.manifest == update.manifest)
            .map(|u| u.to.clone());
        planned.held_back.push(HeldBack {
            reason: Hold::Young,
            name: name.to_owned(),
            version: update.to.clone(),
            needs: until.strftime("%Y-%m-%d %H:%M UTC").to_string(),
            declared: format_duration(age),
            major,
            instead,
        });
    }
    planned
}

/// Where a dependency's locked versions are read: the workspace's `Cargo.lock`, the
/// `package-lock.json` beside each `package.json`, Python's `==` pins; Actions lock nothing.
fn locked(ecosystem: Ecosystem, root: &Path, dependencies: &[Dependency]) -> Locks {
    let mut out = BTreeMap::new();
    match ecosystem {
        Ecosystem::Cargo => {
            out.insert(String::new(), cargo::locked(root).unwrap_or_default());
        }
        Ecosystem::Python => {
            out.insert(String::new(), python::locked(root).unwrap_or_default());
        }
        Ecosystem::Npm => {
            for dir in manifest_dirs(dependencies) {
                out.insert(dir.clone(), npm::locked(&root.join(&dir)).unwrap_or_default());
            }
        }
        Ecosystem::Actions => {}
    }
    out
}

fn locked_for(ecosystem: Ecosystem, locked: &Locks, dep: &Dependency) -> Option<String> {
    let scope = match ecosystem {
        Ecosystem::Npm => parent(&dep.manifest),
        _ => String::new(),
    };
    let versions = locked.get(&scope)?;
    match ecosystem {
        Ecosystem::Cargo => cargo::locked_version(versions, dep).map(str::to_owned),
        _ => versions.get(&dep.name).and_then(|v| v.last().cloned()),
    }
}

/// The version a Python requirement stands at: its own pin, else the pin of another requirement on
/// the package under the same marker (a `requirements.txt` pinning what `pyproject.toml` bounds).
fn python_locked(dependencies: &[Dependency], dep: &Dependency) -> Option<String> {
    python::pin(&dep.requirement).or_else(|| {
        dependencies
            .iter()
            .filter(|other| other.name == dep.name && other.marker == dep.marker)
            .filter_map(|other| python::pin(&other.requirement))
            .next_back()
    })
}

/// The directory of a manifest path (`web/package.json` → `web`, `package.json` → ``).
fn parent(manifest: &str) -> String {
    manifest
        .rsplit_once('/')
        .map(|(dir, _)| dir.to_owned())
        .unwrap_or_default()
}

fn manifest_dirs(dependencies: &[Dependency]) -> BTreeSet<String> {
    dependencies.iter().map(|d| parent(&d.manifest)).collect()
}

fn has_lockfile(ecosystem: Ecosystem, root: &Path, dependencies: &[Dependency]) -> bool {
    match ecosystem {
        Ecosystem::Cargo => root.join("Cargo.lock").is_file(),
        Ecosystem::Npm => manifest_dirs(dependencies)
            .iter()
            .any(|dir| root.join(dir).join("package-lock.json").is_file()),
        // A Python lockfile (`uv.lock`, `poetry.lock`) is only brought in line with the edited
        // manifest, never moved by itself.
        Ecosystem::Python | Ecosystem::Actions => false,
    }
}

/// A manifest of one of the ecosystems that could not be read or edited.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error(transparent)]
    Cargo(#[from] cargo::CargoError),
    #[error(transparent)]
    Npm(#[from] npm::NpmError),
    #[error(transparent)]
    Python(#[from] python::PythonError),
    #[error(transparent)]
    Actions(#[from] actions::ActionsError),
}

/// Every dependency `ecosystem`'s manifests under `root` declare.
pub fn scan(ecosystem: Ecosystem, root: &Path) -> Result<Vec<Dependency>, ManifestError> {
    Ok(match ecosystem {
        Ecosystem::Cargo => cargo::scan(root)?,
        Ecosystem::Npm => npm::scan(root)?,
        Ecosystem::Python => python::scan(root)?,
        Ecosystem::Actions => actions::scan(root)?,
    })
}

/// Writes `update` into its manifest.
pub fn apply(root: &Path, update: &Update) -> Result<(), ManifestError> {
    match update.ecosystem {
        Ecosystem::Cargo => cargo::apply(root, update)?,
        Ecosystem::Npm => npm::apply(root, update)?,
        Ecosystem::Python => python::apply(root, update)?,
        Ecosystem::Actions => actions::apply(root, update)?,
    }
    Ok(())
}

/// The commands, each with the directory (relative to the root) it runs in, that refresh
/// `ecosystem`'s lockfiles inside the declared ranges, as far as `refresh` says; none for an
/// ecosystem without lockfiles.
pub fn lock_commands(
    ecosystem: Ecosystem,
    root: &Path,
    registries: &Registries,
    refresh: lock::Refresh,
) -> Vec<(String, String)> {
    match ecosystem {
        Ecosystem::Cargo if root.join("Cargo.lock").is_file() => {
            // A project that replaces crates.io itself (its own mirror) keeps it: Cargo refuses
            // two replacements of one source.
            let own_mirror = [".cargo/config.toml", ".cargo/config"]
                .iter()
                .any(|file| super::read_text(root, file).is_ok_and(|text| text.contains("replace-with")));
            let command = if own_mirror {
                cargo::update_command(refresh).to_owned()
            } else {
                cargo::lock_command(&registries.cargo_index, refresh)
            };
            vec![(String::new(), command)]
        }
        Ecosystem::Npm => {
            let Ok(dependencies) = npm::scan(root) else {
                return Vec::new();
            };
            manifest_dirs(&dependencies)
                .into_iter()
                .filter(|dir| root.join(dir).join("package-lock.json").is_file())
                .map(|dir| (dir, npm::lock_command(&registries.npm, refresh)))
                .collect()
        }
        Ecosystem::Python => python::locks(root)
            .into_iter()
            .map(|lock| (lock.dir.clone(), lock.command(root, &registries.pypi)))
            .collect(),
        Ecosystem::Cargo | Ecosystem::Actions => Vec::new(),
    }
}

/// Every package `ecosystem`'s lockfiles under `root` lock, for comparing before and after a
/// refresh ([`lock::diff`]): the workspace's `Cargo.lock`, the `package-lock.json` beside each
/// `package.json`; nothing for ecosystems without lockfiles. A lockfile that cannot be read counts
/// as absent.
pub fn snapshot(ecosystem: Ecosystem, root: &Path) -> lock::Snapshot {
    let mut out = lock::Snapshot::new();
    match ecosystem {
        Ecosystem::Cargo => {
            if let Ok(Some(packages)) = lock::read_cargo(root) {
                out.insert(String::new(), packages);
            }
        }
        Ecosystem::Npm => {
            for dir in manifest_dirs(&npm::scan(root).unwrap_or_default()) {
                if let Ok(Some(packages)) = lock::read_npm(root, &dir) {
                    out.insert(dir, packages);
                }
            }
        }
        Ecosystem::Python | Ecosystem::Actions => {}
    }
    out
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests")]

    use std::time::Duration;

    use super::*;

    fn dep(requirement: &str) -> Dependency {
        Dependency {
            ecosystem: Ecosystem::Npm,
            name: "left".into(),
            manifest: "package.json".into(),
            section: "dependencies".into(),
            requirement: requirement.into(),
            pinned: false,
            marker: None,
        }
    }

    /// Releases published the given number of days before `now` (`None`: no date known).
    fn releases(now: Timestamp, versions: &[(&str, Option<i64>)]) -> Vec<Release> {
        versions
            .iter()
            .map(|(version, days)| Release {
                version: (*version).into(),
                yanked: false,
                notes_url: None,
                rust_version: None,
                requires_python: Vec::new(),
                published: days.map(|d| now.checked_sub(SignedDuration::from_hours(24 * d)).unwrap()),
            })
            .collect()
    }

    #[test]
    fn a_release_younger_than_the_minimum_age_waits_and_the_newest_old_one_is_proposed() {
        let now: Timestamp = "2026-12-03T12:00:00Z".parse().unwrap();
        let policy = Policy {
            major: true,
            min_release_age: Some(Duration::from_secs(3 * 86_400)),
            ..Policy::default()
        };
        let dep = dep("~1.0.0");
        let all = releases(
            now,
            &[
                ("1.0.0", Some(400)),
                ("1.1.0", Some(10)),
                ("1.2.0", Some(1)),
                ("2.0.0", Some(2)),
            ],
        );
        let plan = |r: &[Release]| Planned {
            updates: npm::plan(&dep, Some("1.0.0"), r, &policy),
            held_back: Vec::new(),
        };
        let planned = old_enough("left", &all, Duration::from_secs(3 * 86_400), now, plan);
        let proposed: Vec<(&str, UpdateKind)> = planned.updates.iter().map(|u| (u.to.as_str(), u.kind)).collect();
        assert_eq!(proposed, [("1.1.0", UpdateKind::Minor)]);
        let held: Vec<String> = planned.held_back.iter().map(ToString::to_string).collect();
        assert_eq!(
            held,
            [
                "`left` 1.2.0 is younger than min_release_age 3d; it waits until 2026-12-05 12:00 UTC (1.1.0 is \
                 proposed instead)",
                "`left` 2.0.0 is younger than min_release_age 3d; it waits until 2026-12-04 12:00 UTC",
            ]
        );
        assert!(planned.held_back[1].major && !planned.held_back[0].major);

        // A release without a date is old enough; with nothing young, the plan is the plain one.
        let undated = releases(now, &[("1.0.0", None), ("1.2.0", None)]);
        let planned = old_enough("left", &undated, Duration::from_secs(3 * 86_400), now, plan);
        assert_eq!(planned.updates.len(), 1);
        assert_eq!((planned.updates[0].to.as_str(), planned.held_back.len()), ("1.2.0", 0));

        // Old enough exactly at the minimum age.
        let boundary = releases(now, &[("1.0.0", Some(400)), ("1.2.0", Some(3))]);
        let planned = old_enough("left", &boundary, Duration::from_secs(3 * 86_400), now, plan);
        assert_eq!((planned.updates[0].to.as_str(), planned.held_back.len()), ("1.2.0", 0));
    }
}
