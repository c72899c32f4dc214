//! The Cargo ecosystem of dependency chores: the dependencies every `Cargo.toml` declares, the
//! versions `Cargo.lock` holds, releases from a Cargo registry's sparse index, requirement edits
//! that keep the manifest's formatting, and the `cargo update` that refreshes the lockfile against
//! a configured index.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

use semver::{Version, VersionReq};
use serde::Deserialize;
use toml_edit::{DocumentMut, Item, TableLike, Value};
use url::Url;

use super::{Dependency, RegistryClient, RegistryError, Release, Update, lock};
use crate::config::deps::Ecosystem;
use crate::shell;

/// How registry errors name the sparse index.
const REGISTRY: &str = "the Cargo index";

/// Directories never searched for manifests (besides hidden ones): build output and vendored
/// sources, whose manifests are not the project's to update.
const SKIPPED_DIRS: [&str; 2] = ["target", "vendor"];

/// The dependency tables of a manifest or a `[target.*]` table (the underscore spellings are
/// Cargo's deprecated aliases, still read).
const DEPENDENCY_TABLES: [&str; 5] = [
    "dependencies",
    "dev-dependencies",
    "dev_dependencies",
    "build-dependencies",
    "build_dependencies",
];

/// A manifest or the lockfile that could not be read or edited; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum CargoError {
    #[error("could not list {shown}: {source}")]
    List {
        /// The directory, relative to the root, or "the repository root".
        shown: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Lockfile(#[from] lock::LockError),
    #[error("could not read {manifest}: {source}")]
    Read {
        manifest: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{manifest} is not valid TOML: {}", source.to_string().trim_end())]
    Toml {
        manifest: String,
        #[source]
        source: toml_edit::TomlError,
    },
    #[error("{manifest}: not a path inside the repository")]
    Outside { manifest: String },
    #[error("the update of `{name}` is lockfile-only: it has no manifest to edit")]
    LockfileOnly { name: String },
    #[error("{manifest}: the update of `{name}` is not a Cargo update")]
    NotCargo { manifest: String, name: String },
    #[error("{manifest}: the update of `{name}` has no section or no new requirement")]
    Incomplete { manifest: String, name: String },
    #[error("{manifest}: no `{name}` dependency with a registry version in [{section}]")]
    NoEntry {
        manifest: String,
        name: String,
        section: String,
    },
    #[error(
        "{manifest} — outside the workspace (the root Cargo.toml excludes it: Cargo.lock does not lock it and the workspace's tests do not build it)"
    )]
    OutsideWorkspace { manifest: String },
    #[error("could not write {manifest}: {source}")]
    Write {
        manifest: String,
        #[source]
        source: std::io::Error,
    },
}

/// Every dependency of every `Cargo.toml` under `root` (skipping `target/`, `vendor/` and hidden
/// directories such as `.git/`; symlinks are not followed), in path order, then in document order.
///
/// Read: `[dependencies]`, `[dev-dependencies]`, `[build-dependencies]`, the same under
/// `[target.'cfg(..)']` (section `target.'cfg(..)'.dependencies`, the platform key as written) and
/// `[workspace.dependencies]` (section `workspace.dependencies`). Skipped: entries with a `path` or
/// `git` (even with a version: Cargo builds from the path or repository), `workspace = true`,
/// another `registry`, and entries without a version. A renamed dependency (`package = "x"`) is
/// listed by its registry name. A requirement of one `=` comparator is pinned.
pub fn scan(root: &Path) -> Result<Vec<Dependency>, CargoError> {
    let mut manifests = Vec::new();
    find_manifests(root, "", &mut manifests)?;
    let mut dependencies = Vec::new();
    for manifest in manifests {
        let mut document = read_manifest(root, &manifest)?;
        for_each_entry(&mut document, &mut |section, key, item| {
            if let Some(entry) = Entry::of(key, item) {
                dependencies.push(Dependency {
                    ecosystem: Ecosystem::Cargo,
                    pinned: is_pinned(&entry.requirement),
                    marker: None,
                    name: entry.name,
                    manifest: manifest.clone(),
                    section: section.to_owned(),
                    requirement: entry.requirement,
                });
            }
        });
    }
    Ok(dependencies)
}

/// The registry packages `Cargo.lock` at `root` locks: name → versions in ascending order, several
/// when a crate is locked twice. Workspace members, path and git packages are left out. An empty
/// map when there is no lockfile.
pub fn locked(root: &Path) -> Result<BTreeMap<String, Vec<String>>, CargoError> {
    let mut locked: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for package in lock::read_cargo(root)?.unwrap_or_default() {
        if package.source == lock::Source::Registry {
            locked.entry(package.name).or_default().push(package.version);
        }
    }
    for versions in locked.values_mut() {
        versions.sort_by(|a, b| match (Version::parse(a), Version::parse(b)) {
            (Ok(a), Ok(b)) => a.cmp(&b),
            _ => a.cmp(b),
        });
        versions.dedup();
    }
    Ok(locked)
}

/// The version of `dep` that `locked` holds: the highest of its crate's locked versions that the
/// requirement allows (a crate locked twice is usually locked at two majors for two dependents).
/// `None` when the crate is not locked or no locked version fits (a stale lockfile).
pub fn locked_version<'a>(locked: &'a BTreeMap<String, Vec<String>>, dep: &Dependency) -> Option<&'a str> {
    let requirement = VersionReq::parse(dep.requirement.trim()).ok()?;
    locked
        .get(&dep.name)?
        .iter()
        .filter_map(|text| Version::parse(text).ok().map(|version| (version, text)))
        .filter(|(version, _)| requirement.matches(version))
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, text)| text.as_str())
}

/// Where `name`'s file is in a sparse index, relative to its root: the lowercase name under `1/`,
/// `2/`, `3/{first letter}/` or `{ab}/{cd}/` by its length. `None` for a name no crate can have.
pub fn index_path(name: &str) -> Option<String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !valid {
        return None;
    }
    let name = name.to_ascii_lowercase();
    Some(match name.len() {
        1 => format!("1/{name}"),
        2 => format!("2/{name}"),
        3 => format!("3/{}/{name}", &name[..1]),
        _ => format!("{}/{}/{name}", &name[..2], &name[2..4]),
    })
}

/// The releases of `name` in the sparse index at `client.registries.cargo_index`, in the index's
/// order (publication order): one JSON object per line, of which `vers`, `yanked` and
/// `rust_version` (the release's declared minimum Rust; older entries lack it) are read. The
/// index has no release notes (a docs.rs page is not one), so `notes_url` is `None`. `Ok(empty)`
/// for a crate the index lacks, or a name no crate can have.
pub async fn releases(client: &RegistryClient, name: &str) -> Result<Vec<Release>, RegistryError> {
    let Some(path) = index_path(name) else {
        return Ok(Vec::new());
    };
    let url = Url::parse(&format!("{}{path}", index_root(&client.registries.cargo_index)))
        .map_err(|e| malformed(name, format!("the index URL does not take the crate's path: {e}")))?;
    let Some(text) = client.get(REGISTRY, name, url, "text/plain, */*").await? else {
        return Ok(Vec::new());
    };
    parse_index(name, &text)
}

/// Where the registry's web API is, as its index's `config.json` says (`api`: crates.io's is
/// `https://crates.io`); `None` when the index names none (a mirror, most private registries), and
/// then no release has a known date.
pub async fn registry_api(client: &RegistryClient) -> Result<Option<Url>, RegistryError> {
    let what = "config.json";
    let url = Url::parse(&format!("{}config.json", index_root(&client.registries.cargo_index)))
        .map_err(|e| malformed(what, format!("the index URL does not take `config.json`: {e}")))?;
    let Some(text) = client.get(REGISTRY, what, url, "application/json").await? else {
        return Ok(None);
    };
    let config: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| malformed(what, format!("the index's config.json: {e}")))?;
    match config.get("api").and_then(serde_json::Value::as_str) {
        Some(api) if !api.trim().is_empty() => {
            let mut text = api.trim().to_owned();
            if !text.ends_with('/') {
                text.push('/');
            }
            Url::parse(&text)
                .map(Some)
                .map_err(|e| malformed(what, format!("its `api` is not a URL: {e}")))
        }
        _ => Ok(None),
    }
}

/// The most pages of a crate's versions read from the API.
const MAX_VERSION_PAGES: usize = 20;

/// When each release of `name` was published, by the registry's API at `api` (`GET
/// api/v1/crates/{name}/versions`: `versions[].num` and `created_at`, following `meta.next_page`).
pub async fn release_dates(
    client: &RegistryClient,
    api: &Url,
    name: &str,
) -> Result<BTreeMap<String, jiff::Timestamp>, RegistryError> {
    #[derive(Deserialize)]
    struct Page {
        versions: Vec<Entry>,
        #[serde(default)]
        meta: Meta,
    }
    #[derive(Deserialize)]
    struct Entry {
        num: String,
        created_at: String,
    }
    #[derive(Deserialize, Default)]
    struct Meta {
        next_page: Option<String>,
    }
    if index_path(name).is_none() {
        return Ok(BTreeMap::new());
    }
    let first = api
        .join(&format!("api/v1/crates/{name}/versions"))
        .map_err(|e| malformed(name, format!("the API URL does not take the crate's path: {e}")))?;
    let mut url = first.clone();
    let mut dates = BTreeMap::new();
    for _ in 0..MAX_VERSION_PAGES {
        let Some(text) = client.get(REGISTRY, name, url.clone(), "application/json").await? else {
            return Ok(dates);
        };
        let page: Page = serde_json::from_str(&text).map_err(|e| malformed(name, format!("its versions: {e}")))?;
        for entry in page.versions {
            let published = entry
                .created_at
                .parse::<jiff::Timestamp>()
                .map_err(|e| malformed(name, format!("`{}` of {}: {e}", entry.created_at, entry.num)))?;
            dates.insert(entry.num, published);
        }
        // `?page=2&per_page=100`: a query on the same path, never another host.
        match page.meta.next_page.as_deref().and_then(|next| next.strip_prefix('?')) {
            Some(query) => {
                url = first.clone();
                url.set_query(Some(query));
            }
            None => return Ok(dates),
        }
    }
    Ok(dates)
}

fn malformed(name: &str, message: String) -> RegistryError {
    RegistryError::Malformed {
        registry: REGISTRY,
        package: name.to_owned(),
        message,
    }
}

/// The releases in `name`'s index file `text`, one JSON object a line.
fn parse_index(name: &str, text: &str) -> Result<Vec<Release>, RegistryError> {
    #[derive(Deserialize)]
    struct IndexLine {
        vers: String,
        #[serde(default)]
        yanked: bool,
        #[serde(default)]
        rust_version: Option<String>,
    }

    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(number, line)| {
            let entry: IndexLine =
                serde_json::from_str(line).map_err(|e| malformed(name, format!("line {}: {e}", number + 1)))?;
            Ok(Release {
                version: entry.vers,
                yanked: entry.yanked,
                notes_url: None,
                rust_version: entry.rust_version,
                requires_python: Vec::new(),
                published: None,
            })
        })
        .collect()
}

/// The `rust-version` that applies to the dependencies of `manifest` (relative to `root`): its
/// `[package] rust-version`, or with `rust-version.workspace = true` (and for a workspace root's
/// own `[workspace.dependencies]`) the `[workspace.package] rust-version` of the nearest
/// `Cargo.toml` with a `[workspace]` at or above it inside `root`. `None` when none is declared or
/// a manifest cannot be read.
pub fn rust_version(root: &Path, manifest: &str) -> Option<String> {
    let document = read_manifest(root, manifest).ok()?;
    let declared = document.get("package").and_then(|package| package.get("rust-version"));
    match declared {
        Some(item) if item.as_str().is_some() => return item.as_str().map(str::to_owned),
        Some(item) if item.get("workspace").and_then(Item::as_bool) != Some(true) => return None,
        None if document.get("package").is_some() => return None,
        _ => {}
    }
    let mut dir = manifest.rsplit_once('/').map_or("", |(dir, _)| dir);
    loop {
        let candidate = if dir.is_empty() {
            "Cargo.toml".to_owned()
        } else {
            format!("{dir}/Cargo.toml")
        };
        if let Ok(document) = read_manifest(root, &candidate)
            && let Some(workspace) = document.get("workspace")
        {
            return workspace
                .get("package")
                .and_then(|package| package.get("rust-version"))
                .and_then(Item::as_str)
                .map(str::to_owned);
        }
        if dir.is_empty() {
            return None;
        }
        dir = dir.rsplit_once('/').map_or("", |(parent, _)| parent);
    }
}

/// Writes `update.new_requirement` into the manifest it names, as the version of the `update.name`
/// entries of `update.section` (every one: a crate renamed twice in one table gets the new
/// requirement in both). Formatting, comments and the entry's form (`x = "1"`, an inline table,
/// a `[dependencies.x]` table, dotted keys) are kept. Errors name the manifest.
pub fn apply(root: &Path, update: &Update) -> Result<(), CargoError> {
    let name = &update.name;
    let Some(manifest) = update.manifest.as_deref() else {
        return Err(CargoError::LockfileOnly { name: name.clone() });
    };
    if update.ecosystem != Ecosystem::Cargo {
        return Err(CargoError::NotCargo {
            manifest: manifest.to_owned(),
            name: name.clone(),
        });
    }
    let (Some(section), Some(requirement)) = (update.section.as_deref(), update.new_requirement.as_deref()) else {
        return Err(CargoError::Incomplete {
            manifest: manifest.to_owned(),
            name: name.clone(),
        });
    };
    if outside_workspace(root, manifest) {
        return Err(CargoError::OutsideWorkspace {
            manifest: manifest.to_owned(),
        });
    }
    let mut document = read_manifest(root, manifest)?;
    let mut edited = 0;
    for_each_entry(&mut document, &mut |label, key, item| {
        if label == section
            && Entry::of(key, item).is_some_and(|entry| entry.name == *name)
            && set_version(item, requirement)
        {
            edited += 1;
        }
    });
    if edited == 0 {
        return Err(CargoError::NoEntry {
            manifest: manifest.to_owned(),
            name: name.clone(),
            section: section.to_owned(),
        });
    }
    fs::write(root.join(confined(manifest)?), document.to_string()).map_err(|source| CargoError::Write {
        manifest: manifest.to_owned(),
        source,
    })
}

/// Whether `manifest` (relative to `root`) is a crate the repository's workspace leaves out: the
/// root `Cargo.toml` has a `[workspace]` whose `exclude` lists the manifest's directory or one
/// above it (`fuzz/` of most fuzzed crates). Such a crate is locked by no lockfile the chore
/// refreshes and built by none of its tests, so the chore does not edit it.
pub fn outside_workspace(root: &Path, manifest: &str) -> bool {
    let Some((dir, _)) = manifest.rsplit_once('/') else {
        return false;
    };
    let Ok(document) = read_manifest(root, "Cargo.toml") else {
        return false;
    };
    let Some(excluded) = document
        .get("workspace")
        .and_then(|workspace| workspace.get("exclude"))
        .and_then(Item::as_array)
    else {
        return false;
    };
    excluded.iter().filter_map(Value::as_str).any(|path| {
        let path = path.trim_start_matches("./").trim_end_matches('/');
        !path.is_empty() && (dir == path || dir.strip_prefix(path).is_some_and(|rest| rest.starts_with('/')))
    })
}

/// `cargo update`, or `cargo update --workspace` for a minimal refresh: the lockfile refresh
/// against the sources the project's own Cargo configuration names.
pub fn update_command(refresh: lock::Refresh) -> &'static str {
    match refresh {
        lock::Refresh::Full => "cargo update",
        lock::Refresh::Minimal => "cargo update --workspace",
    }
}

/// The shell command, run at the workspace root, that refreshes `Cargo.lock` against the sparse
/// index `index`, as far as `refresh` says: `cargo update`, or `cargo update --workspace` (only
/// what the edited manifests need). For crates.io's own index (sparse or git) that is all; for any
/// other the index replaces crates.io through `--config` flags, so the project's own Cargo
/// configuration stays untouched: `cargo update --config
/// 'source.crates-io.replace-with="pitcrew-registry"' --config
/// 'source.pitcrew-registry.registry="sparse+http://127.0.0.1:8080/"'`.
pub fn lock_command(index: &Url, refresh: lock::Refresh) -> String {
    let update = update_command(refresh);
    let root = index_root(index);
    if root == "https://index.crates.io/" || root == "https://github.com/rust-lang/crates.io-index/" {
        return update.to_owned();
    }
    let registry = Value::from(format!("sparse+{root}")).to_string();
    format!(
        "{update} --config {} --config {}",
        shell::quote("source.crates-io.replace-with=\"pitcrew-registry\""),
        shell::quote(&format!("source.pitcrew-registry.registry={}", registry.trim())),
    )
}

/// A registry dependency as an entry of a dependency table declares it.
struct Entry {
    /// The name in the registry (`package` when renamed, else the key).
    name: String,
    requirement: String,
}

impl Entry {
    /// The entry `key = item` when it is a registry dependency with a version, else `None`.
    fn of(key: &str, item: &Item) -> Option<Entry> {
        if let Some(requirement) = item.as_str() {
            return Some(Entry {
                name: key.to_owned(),
                requirement: requirement.to_owned(),
            });
        }
        let table = item.as_table_like()?;
        if ["path", "git", "workspace", "registry-index"]
            .iter()
            .any(|field| table.contains_key(field))
        {
            return None;
        }
        if table
            .get("registry")
            .is_some_and(|registry| registry.as_str() != Some("crates-io"))
        {
            return None;
        }
        let requirement = table.get("version")?.as_str()?.to_owned();
        let name = match table.get("package") {
            Some(package) => package.as_str()?.to_owned(),
            None => key.to_owned(),
        };
        Some(Entry { name, requirement })
    }
}

/// Whether a requirement names one version: a single `=` comparator.
fn is_pinned(requirement: &str) -> bool {
    VersionReq::parse(requirement.trim())
        .is_ok_and(|req| matches!(req.comparators.as_slice(), [c] if c.op == semver::Op::Exact))
}

/// Replaces the version of the entry `item` (a string, or a table's `version`), keeping the
/// whitespace and comments around the value. False when it has no string version.
fn set_version(item: &mut Item, requirement: &str) -> bool {
    let value = match item {
        Item::Value(value @ Value::String(_)) => value,
        _ => match item.as_table_like_mut().and_then(|table| table.get_mut("version")) {
            Some(Item::Value(value @ Value::String(_))) => value,
            _ => return false,
        },
    };
    let decor = value.decor().clone();
    *value = Value::from(requirement);
    *value.decor_mut() = decor;
    true
}

/// Calls `visit(section, key, item)` for every entry of every dependency table of `document`, in
/// document order.
fn for_each_entry(document: &mut DocumentMut, visit: &mut dyn FnMut(&str, &str, &mut Item)) {
    for (key, item) in document.as_table_mut().iter_mut() {
        let Some(table) = item.as_table_like_mut() else {
            continue;
        };
        match key.get() {
            kind if DEPENDENCY_TABLES.contains(&kind) => visit_table(kind, table, visit),
            "workspace" => {
                if let Some(dependencies) = table.get_mut("dependencies").and_then(Item::as_table_like_mut) {
                    visit_table("workspace.dependencies", dependencies, visit);
                }
            }
            "target" => {
                for (platform, item) in table.iter_mut() {
                    let Some(target) = item.as_table_like_mut() else {
                        continue;
                    };
                    let platform = platform.display_repr().into_owned();
                    for (kind, item) in target.iter_mut() {
                        let kind = kind.get().to_owned();
                        if let Some(dependencies) = item.as_table_like_mut()
                            && DEPENDENCY_TABLES.contains(&kind.as_str())
                        {
                            visit_table(&format!("target.{platform}.{kind}"), dependencies, visit);
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

fn visit_table(section: &str, table: &mut dyn TableLike, visit: &mut dyn FnMut(&str, &str, &mut Item)) {
    for (key, item) in table.iter_mut() {
        visit(section, key.get(), item);
    }
}

/// Collects the `/`-separated paths, relative to the root, of the manifests under `dir`.
fn find_manifests(dir: &Path, relative: &str, found: &mut Vec<String>) -> Result<(), CargoError> {
    let shown = if relative.is_empty() {
        "the repository root"
    } else {
        relative
    };
    let list_error = |source| CargoError::List {
        shown: shown.to_owned(),
        source,
    };
    let entries = fs::read_dir(dir).map_err(list_error)?;
    let mut entries = entries
        .map(|entry| entry.and_then(|entry| Ok((entry.file_name(), entry.file_type()?))))
        .collect::<Result<Vec<_>, _>>()
        .map_err(list_error)?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, file_type) in entries {
        // A name that is not UTF-8 is neither a manifest nor a directory a manifest could name.
        let Some(name) = name.to_str() else { continue };
        if file_type.is_dir() && !name.starts_with('.') && !SKIPPED_DIRS.contains(&name) {
            find_manifests(&dir.join(name), &format!("{relative}{name}/"), found)?;
        } else if file_type.is_file() && name == "Cargo.toml" {
            found.push(format!("{relative}{name}"));
        }
    }
    Ok(())
}

fn read_manifest(root: &Path, manifest: &str) -> Result<DocumentMut, CargoError> {
    confined(manifest)?;
    let text = super::read_text(root, manifest).map_err(|source| CargoError::Read {
        manifest: manifest.to_owned(),
        source,
    })?;
    text.parse::<DocumentMut>().map_err(|source| CargoError::Toml {
        manifest: manifest.to_owned(),
        source,
    })
}

/// `manifest` as a path inside the repository: relative, without `..`.
fn confined(manifest: &str) -> Result<PathBuf, CargoError> {
    let path = Path::new(manifest);
    if manifest.is_empty() || !path.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(CargoError::Outside {
            manifest: manifest.to_owned(),
        });
    }
    Ok(path.to_owned())
}

/// The index URL as text without a `sparse+` prefix and with a trailing `/`, so that crate paths
/// append to it.
fn index_root(index: &Url) -> String {
    let text = index.as_str();
    let text = text.strip_prefix("sparse+").unwrap_or(text);
    if text.ends_with('/') {
        text.to_owned()
    } else {
        format!("{text}/")
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failing test should panic")]
mod tests {
    use super::*;
    use crate::chores::UpdateKind;
    use crate::chores::lock::Refresh;

    fn write(root: &Path, files: &[(&str, &str)]) {
        for (path, text) in files {
            let path = root.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
    }

    /// The scan as `manifest [section] name requirement (pinned)` lines.
    fn scanned(root: &Path) -> Vec<String> {
        scan(root)
            .unwrap()
            .iter()
            .map(|d| {
                assert_eq!(d.ecosystem, Ecosystem::Cargo);
                let pinned = if d.pinned { " pinned" } else { "" };
                format!("{} [{}] {} {}{pinned}", d.manifest, d.section, d.name, d.requirement)
            })
            .collect()
    }

    const WORKSPACE: &str = r#"[workspace]
members = ["crates/*"]

[workspace.dependencies]
serde = { version = "1.0.200", features = ["derive"] }
local = { path = "crates/local" }
"#;

    const MEMBER: &str = r#"[package]
name = "app"
version = "0.1.0"

[dependencies]
anyhow = "1"            # errors
serde = { workspace = true }
json = { package = "serde_json", version = "~1.0.100" }
regex.version = "1.10"
exact = "=0.4.2"
sibling = { path = "../sibling", version = "0.1" }
forked = { git = "https://example.test/forked.git", version = "2" }
private = { version = "3", registry = "acme" }
public = { version = "4", registry = "crates-io" }
featureless = { features = ["x"] }

[dependencies.toml_edit]
version = "0.23"
default-features = false

[dev-dependencies]
insta = "1.40"

[build-dependencies]
cc = "1.1"

[target.'cfg(unix)'.dependencies]
nix = "0.30"

[target.x86_64-pc-windows-msvc.dev_dependencies]
windows = "0.58"
"#;

    #[test]
    fn scan_reads_every_dependency_table_and_skips_what_is_not_from_the_registry() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                ("Cargo.toml", WORKSPACE),
                ("crates/app/Cargo.toml", MEMBER),
                ("target/package/app/Cargo.toml", "[dependencies]\nstale = \"1\"\n"),
                ("vendor/dep/Cargo.toml", "[dependencies]\nvendored = \"1\"\n"),
                (".cargo/x/Cargo.toml", "[dependencies]\nhidden = \"1\"\n"),
                ("crates/app/Cargo.toml.orig", "[dependencies]\nbackup = \"1\"\n"),
            ],
        );
        assert_eq!(
            scanned(dir.path()),
            [
                "Cargo.toml [workspace.dependencies] serde 1.0.200",
                "crates/app/Cargo.toml [dependencies] anyhow 1",
                "crates/app/Cargo.toml [dependencies] serde_json ~1.0.100",
                "crates/app/Cargo.toml [dependencies] regex 1.10",
                "crates/app/Cargo.toml [dependencies] exact =0.4.2 pinned",
                "crates/app/Cargo.toml [dependencies] public 4",
                "crates/app/Cargo.toml [dependencies] toml_edit 0.23",
                "crates/app/Cargo.toml [dev-dependencies] insta 1.40",
                "crates/app/Cargo.toml [build-dependencies] cc 1.1",
                "crates/app/Cargo.toml [target.'cfg(unix)'.dependencies] nix 0.30",
                "crates/app/Cargo.toml [target.x86_64-pc-windows-msvc.dev_dependencies] windows 0.58",
            ]
        );
    }

    #[test]
    fn scan_names_the_manifest_it_cannot_read() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[("a/Cargo.toml", "[dependencies\nx = 1\n")]);
        let error = scan(dir.path()).unwrap_err().to_string();
        assert!(error.starts_with("a/Cargo.toml is not valid TOML: "), "{error}");
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(scan(empty.path()).unwrap(), []);
    }

    fn update(section: &str, name: &str, requirement: &str) -> Update {
        Update {
            ecosystem: Ecosystem::Cargo,
            name: name.into(),
            manifest: Some("crates/app/Cargo.toml".into()),
            section: Some(section.into()),
            from: "0.0.0".into(),
            to: "9.9.9".into(),
            kind: UpdateKind::Major,
            new_requirement: Some(requirement.into()),
            notes_url: None,
            marker: None,
        }
    }

    #[test]
    fn apply_changes_only_the_version_in_every_entry_form() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[("crates/app/Cargo.toml", MEMBER)]);
        for (section, name, requirement) in [
            ("dependencies", "anyhow", "2"),
            ("dependencies", "serde_json", "~1.1.0"),
            ("dependencies", "regex", "1.12"),
            ("dependencies", "toml_edit", "0.24"),
            ("target.'cfg(unix)'.dependencies", "nix", "0.31"),
            ("target.x86_64-pc-windows-msvc.dev_dependencies", "windows", "0.61"),
        ] {
            apply(dir.path(), &update(section, name, requirement)).unwrap();
        }
        let expected = MEMBER
            .replace(
                "anyhow = \"1\"            # errors",
                "anyhow = \"2\"            # errors",
            )
            .replace("version = \"~1.0.100\" }", "version = \"~1.1.0\" }")
            .replace("regex.version = \"1.10\"", "regex.version = \"1.12\"")
            .replace("version = \"0.23\"\n", "version = \"0.24\"\n")
            .replace("nix = \"0.30\"", "nix = \"0.31\"")
            .replace("windows = \"0.58\"", "windows = \"0.61\"");
        assert_eq!(
            fs::read_to_string(dir.path().join("crates/app/Cargo.toml")).unwrap(),
            expected
        );
    }

    #[test]
    fn apply_leaves_a_crate_the_workspace_excludes_alone() {
        let dir = tempfile::tempdir().unwrap();
        let fuzz = "[package]\nname = \"app-fuzz\"\n\n[dependencies]\nanyhow = \"1\"\n";
        write(
            dir.path(),
            &[
                (
                    "Cargo.toml",
                    "[workspace]\nmembers = [\"crates/*\"]\nexclude = [\"./fuzz/\", \"tools/old\"]\n",
                ),
                ("fuzz/Cargo.toml", fuzz),
                ("tools/old/x/Cargo.toml", fuzz),
                ("tools/older/Cargo.toml", fuzz),
                ("crates/app/Cargo.toml", MEMBER),
            ],
        );
        let mut excluded = update("dependencies", "anyhow", "2");
        excluded.manifest = Some("fuzz/Cargo.toml".into());
        assert_eq!(
            apply(dir.path(), &excluded).unwrap_err().to_string(),
            "fuzz/Cargo.toml — outside the workspace (the root Cargo.toml excludes it: Cargo.lock does not lock it and \
             the workspace's tests do not build it)"
        );
        assert_eq!(fs::read_to_string(dir.path().join("fuzz/Cargo.toml")).unwrap(), fuzz);
        assert!(outside_workspace(dir.path(), "tools/old/x/Cargo.toml"));
        assert!(!outside_workspace(dir.path(), "tools/older/Cargo.toml"));
        assert!(!outside_workspace(dir.path(), "Cargo.toml"));
        apply(dir.path(), &update("dependencies", "anyhow", "2")).unwrap();
    }

    #[test]
    fn apply_refuses_what_it_cannot_edit_and_names_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &[("crates/app/Cargo.toml", MEMBER)]);
        let error = |update: &Update| apply(dir.path(), update).unwrap_err().to_string();
        assert_eq!(
            error(&update("dependencies", "sibling", "0.2")),
            "crates/app/Cargo.toml: no `sibling` dependency with a registry version in [dependencies]"
        );
        assert_eq!(
            error(&update("dev-dependencies", "anyhow", "2")),
            "crates/app/Cargo.toml: no `anyhow` dependency with a registry version in [dev-dependencies]"
        );
        let mut outside = update("dependencies", "anyhow", "2");
        outside.manifest = Some("../elsewhere/Cargo.toml".into());
        assert_eq!(
            error(&outside),
            "../elsewhere/Cargo.toml: not a path inside the repository"
        );
        let mut missing = update("dependencies", "anyhow", "2");
        missing.manifest = Some("nowhere/Cargo.toml".into());
        assert!(error(&missing).starts_with("could not read nowhere/Cargo.toml: "));
        let lockfile_only = Update {
            manifest: None,
            ..update("dependencies", "anyhow", "2")
        };
        assert_eq!(
            error(&lockfile_only),
            "the update of `anyhow` is lockfile-only: it has no manifest to edit"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("crates/app/Cargo.toml")).unwrap(),
            MEMBER
        );
    }

    const LOCKFILE: &str = r#"version = 4

[[package]]
name = "app"
version = "0.1.0"
dependencies = ["rand 0.8.5", "rand 0.9.1"]

[[package]]
name = "rand"
version = "0.9.1"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "00"

[[package]]
name = "rand"
version = "0.8.5"
source = "sparse+https://index.example.test/"

[[package]]
name = "forked"
version = "2.0.0"
source = "git+https://example.test/forked.git#0123456789abcdef0123456789abcdef01234567"
"#;

    fn map(entries: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        entries
            .iter()
            .map(|(name, versions)| (name.to_string(), versions.iter().map(|v| v.to_string()).collect()))
            .collect()
    }

    #[test]
    fn locked_reads_registry_packages_only_and_every_version_of_each() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(locked(dir.path()).unwrap(), BTreeMap::new());
        write(dir.path(), &[("Cargo.lock", LOCKFILE)]);
        let lock = locked(dir.path()).unwrap();
        assert_eq!(lock, map(&[("rand", &["0.8.5", "0.9.1"])]));
        let dep = |requirement: &str| Dependency {
            ecosystem: Ecosystem::Cargo,
            name: "rand".into(),
            manifest: "Cargo.toml".into(),
            section: "dependencies".into(),
            requirement: requirement.into(),
            pinned: false,
            marker: None,
        };
        assert_eq!(locked_version(&lock, &dep("0.8")), Some("0.8.5"));
        assert_eq!(locked_version(&lock, &dep(">=0.8")), Some("0.9.1"));
        assert_eq!(locked_version(&lock, &dep("1")), None);
        write(dir.path(), &[("Cargo.lock", "[[package]]\nname = 1\n")]);
        assert!(
            locked(dir.path())
                .unwrap_err()
                .to_string()
                .starts_with("Cargo.lock is not a valid lockfile: ")
        );
    }

    /// Index lines in the shape Cargo's registry-index format documents
    /// (https://doc.rust-lang.org/cargo/reference/registry-index.html): the first one without
    /// `rust_version`, as entries published before it existed are.
    const INDEX: &str = concat!(
        r#"{"name":"calc","vers":"1.0.0","deps":[],"cksum":"5f4e3a0c2f3b5a7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f","features":{},"yanked":false,"links":null}"#,
        "\n",
        r#"{"name":"calc","vers":"1.1.0","deps":[{"name":"rand","req":"^0.8","features":[],"optional":false,"default_features":true,"target":null,"kind":"normal","registry":null,"package":null}],"cksum":"0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9","features":{},"yanked":true,"links":null,"v":2,"features2":{},"rust_version":"1.70"}"#,
        "\n",
        r#"{"name":"calc","vers":"1.2.0","deps":[],"cksum":"1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a","features":{},"yanked":false,"links":null,"v":2,"rust_version":"1.80.1"}"#,
        "\n",
    );

    #[test]
    fn index_lines_give_versions_yanks_and_rust_versions() {
        let releases = parse_index("calc", INDEX).unwrap();
        let read: Vec<(&str, bool, Option<&str>)> = releases
            .iter()
            .map(|r| (r.version.as_str(), r.yanked, r.rust_version.as_deref()))
            .collect();
        assert_eq!(
            read,
            [
                ("1.0.0", false, None),
                ("1.1.0", true, Some("1.70")),
                ("1.2.0", false, Some("1.80.1"))
            ]
        );
        let error = parse_index("calc", "{\"vers\":\"1.0.0\"}\nnot json\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("line 2"), "{error}");
    }

    #[test]
    fn the_rust_version_is_the_package_s_or_the_workspace_s_it_inherits() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                (
                    "Cargo.toml",
                    "[workspace]\nmembers = [\"crates/*\"]\n\n[workspace.package]\nrust-version = \"1.70\"\n\n\
                     [workspace.dependencies]\nserde = \"1\"\n",
                ),
                (
                    "crates/inherits/Cargo.toml",
                    "[package]\nname = \"a\"\nrust-version.workspace = true\n",
                ),
                (
                    "crates/inline/Cargo.toml",
                    "[package]\nname = \"b\"\nrust-version = { workspace = true }\n",
                ),
                (
                    "crates/own/Cargo.toml",
                    "[package]\nname = \"c\"\nrust-version = \"1.65.0\"\n",
                ),
                ("crates/none/Cargo.toml", "[package]\nname = \"d\"\n"),
                ("alone/Cargo.toml", "[package]\nname = \"e\"\nrust-version = \"1.56\"\n"),
            ],
        );
        let rust = |manifest: &str| rust_version(dir.path(), manifest);
        assert_eq!(rust("Cargo.toml").as_deref(), Some("1.70"));
        assert_eq!(rust("crates/inherits/Cargo.toml").as_deref(), Some("1.70"));
        assert_eq!(rust("crates/inline/Cargo.toml").as_deref(), Some("1.70"));
        assert_eq!(rust("crates/own/Cargo.toml").as_deref(), Some("1.65.0"));
        assert_eq!(rust("crates/none/Cargo.toml"), None);
        assert_eq!(rust("alone/Cargo.toml").as_deref(), Some("1.56"));
        assert_eq!(rust("missing/Cargo.toml"), None);
    }

    #[test]
    fn index_paths_follow_the_sparse_layout() {
        assert_eq!(index_path("a").as_deref(), Some("1/a"));
        assert_eq!(index_path("xy").as_deref(), Some("2/xy"));
        assert_eq!(index_path("Syn").as_deref(), Some("3/s/syn"));
        assert_eq!(index_path("Serde_JSON").as_deref(), Some("se/rd/serde_json"));
        assert_eq!(index_path("../etc"), None);
        assert_eq!(index_path(""), None);
    }

    #[test]
    fn the_lock_command_replaces_crates_io_by_flags_only_for_another_index() {
        let url = |text: &str| Url::parse(text).unwrap();
        assert_eq!(
            lock_command(&url("https://index.crates.io/"), Refresh::Full),
            "cargo update"
        );
        assert_eq!(
            lock_command(&url("sparse+https://index.crates.io"), Refresh::Full),
            "cargo update"
        );
        assert_eq!(
            lock_command(&url("https://github.com/rust-lang/crates.io-index"), Refresh::Full),
            "cargo update"
        );
        assert_eq!(
            lock_command(&url("http://127.0.0.1:8080/index"), Refresh::Full),
            "cargo update --config 'source.crates-io.replace-with=\"pitcrew-registry\"' \
             --config 'source.pitcrew-registry.registry=\"sparse+http://127.0.0.1:8080/index/\"'"
        );
        assert_eq!(
            lock_command(&url("https://mirror.example.test/it's/"), Refresh::Full),
            "cargo update --config 'source.crates-io.replace-with=\"pitcrew-registry\"' \
             --config 'source.pitcrew-registry.registry=\"sparse+https://mirror.example.test/it'\\''s/\"'"
        );
        // The majors' refresh moves only what the edited manifests need.
        assert_eq!(
            lock_command(&url("https://index.crates.io/"), Refresh::Minimal),
            "cargo update --workspace"
        );
        assert!(
            lock_command(&url("http://127.0.0.1:8080/index"), Refresh::Minimal)
                .starts_with("cargo update --workspace --config 'source.crates-io.replace-with=")
        );
    }
}
