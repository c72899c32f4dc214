//! The Cargo ecosystem of dependency chores against a real local registry: a fixture crate locked
//! by real `cargo` at old versions, newer ones published (one yanked), then scan, the index's
//! releases, the plan under both policies, the major's manifest edit, and the real `cargo update`
//! of `lock_command` moving `Cargo.lock` (the whole refresh, and the minimal one after the major's
//! edit), read as changes by `lock::diff`, after which the fixture builds and tests offline against
//! the new versions.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use pitcrew::chores::lock::{self, ChangeKind, Refresh};
use pitcrew::chores::version::{plan, plan_for_rust};
use pitcrew::chores::{Dependency, HeldBack, Hold, RegistryClient, Release, Update, UpdateKind, cargo};
use pitcrew::config::deps::{Ecosystem, Policy, Registries};
use pitcrew_tests::cargo_registry::CargoRegistry;
use tempfile::TempDir;
use url::Url;

const MANIFEST: &str = r#"[package]
name = "fixture"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
# Arithmetic, kept current by pitcrew.
calcutil = "1.0"
fmtutil = { version = "~0.3.1", default-features = false } # formatting

[workspace]
"#;

const FIXTURE_LIB: &str = r#"/// The versions of its dependencies this crate was built with.
pub fn versions() -> String {
    format!("calcutil {} fmtutil {}", calcutil::VERSION, fmtutil::VERSION)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reports_the_versions_it_was_built_with() {
        println!("built with {}", super::versions());
    }
}
"#;

/// A published crate's `src/lib.rs`: it says its version.
fn crate_lib(version: &str) -> String {
    format!("/// This release.\npub const VERSION: &str = \"{version}\";\n")
}

/// Real `cargo` with a Cargo home and target directory of its own, online for the local registry.
struct CargoCli {
    home: TempDir,
    target: TempDir,
    /// The `--config` flags that put the local registry in crates.io's place.
    source: String,
}

impl CargoCli {
    fn new(registry: &CargoRegistry) -> CargoCli {
        CargoCli {
            home: TempDir::new().unwrap(),
            target: TempDir::new().unwrap(),
            source: format!(
                "--config 'source.crates-io.replace-with=\"test-registry\"' \
                 --config 'source.test-registry.registry=\"sparse+{}\"'",
                registry.index_url()
            ),
        }
    }

    /// Runs `script` with `sh` in `dir`; returns its output, stdout then stderr.
    fn run(&self, dir: &Path, script: &str) -> String {
        let output = Command::new("sh")
            .arg("-c")
            .arg(format!("timeout 300 {script}"))
            .current_dir(dir)
            .env("CARGO_HOME", self.home.path())
            .env("CARGO_TARGET_DIR", self.target.path())
            .env("CARGO_TERM_COLOR", "never")
            .env_remove("CARGO_NET_OFFLINE")
            .output()
            .unwrap_or_else(|e| panic!("running {script}: {e}"));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.status.success(), "{script} failed ({}):\n{text}", output.status);
        text
    }
}

fn versions(entries: &[(&str, &str)]) -> BTreeMap<String, Vec<String>> {
    entries
        .iter()
        .map(|(name, version)| (name.to_string(), vec![version.to_string()]))
        .collect()
}

fn dependency(name: &str, requirement: &str) -> Dependency {
    Dependency {
        ecosystem: Ecosystem::Cargo,
        name: name.into(),
        manifest: "Cargo.toml".into(),
        section: "dependencies".into(),
        requirement: requirement.into(),
        pinned: false,
        marker: None,
    }
}

fn release(version: &str, yanked: bool) -> Release {
    Release {
        version: version.into(),
        yanked,
        notes_url: None,
        rust_version: None,
        requires_python: Vec::new(),
        published: None,
    }
}

fn update(name: &str, from: &str, to: &str, kind: UpdateKind, new_requirement: Option<&str>) -> Update {
    let manifest_edit = new_requirement.is_some();
    Update {
        ecosystem: Ecosystem::Cargo,
        name: name.into(),
        manifest: manifest_edit.then(|| "Cargo.toml".into()),
        section: manifest_edit.then(|| "dependencies".into()),
        from: from.into(),
        to: to.into(),
        kind,
        new_requirement: new_requirement.map(Into::into),
        notes_url: None,
        marker: None,
    }
}

#[tokio::test]
async fn cargo_chores_update_a_real_lockfile_and_manifest_against_a_local_registry() {
    let registry = CargoRegistry::start();
    let index = Url::parse(&registry.index_url()).unwrap();
    registry.publish("calcutil", "1.0.0", &crate_lib("1.0.0"), &[]).unwrap();
    registry.publish("fmtutil", "0.3.1", &crate_lib("0.3.1"), &[]).unwrap();

    let project = TempDir::new().unwrap();
    let root = project.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("Cargo.toml"), MANIFEST).unwrap();
    std::fs::write(root.join("src/lib.rs"), FIXTURE_LIB).unwrap();
    let cli = CargoCli::new(&registry);
    cli.run(root, &format!("cargo generate-lockfile {}", cli.source));
    let locked_at_first = cargo::locked(root).unwrap();
    assert_eq!(
        locked_at_first,
        versions(&[("calcutil", "1.0.0"), ("fmtutil", "0.3.1")])
    );

    // Newer releases; 1.2.0 is yanked, so neither the plan nor cargo may take it.
    registry.publish("calcutil", "1.0.1", &crate_lib("1.0.1"), &[]).unwrap();
    registry.publish("calcutil", "1.1.0", &crate_lib("1.1.0"), &[]).unwrap();
    registry.publish("calcutil", "1.2.0", &crate_lib("1.2.0"), &[]).unwrap();
    registry.yank("calcutil", "1.2.0").unwrap();
    let calcutil_2 = format!("{}pub use fmtutil::VERSION as FMTUTIL;\n", crate_lib("2.0.0"));
    registry
        .publish("calcutil", "2.0.0", &calcutil_2, &[("fmtutil", "^0.3.1")])
        .unwrap();
    registry.publish("fmtutil", "0.3.2", &crate_lib("0.3.2"), &[]).unwrap();
    registry.publish("fmtutil", "0.4.0", &crate_lib("0.4.0"), &[]).unwrap();

    let dependencies = cargo::scan(root).unwrap();
    assert_eq!(
        dependencies,
        [dependency("calcutil", "1.0"), dependency("fmtutil", "~0.3.1")]
    );

    let client = RegistryClient::new(Registries {
        cargo_index: index.clone(),
        ..Registries::default()
    })
    .unwrap();
    let calcutil_releases = cargo::releases(&client, "calcutil").await.unwrap();
    assert_eq!(
        calcutil_releases,
        [
            release("1.0.0", false),
            release("1.0.1", false),
            release("1.1.0", false),
            release("1.2.0", true),
            release("2.0.0", false),
        ]
    );
    let fmtutil_releases = cargo::releases(&client, "FmtUtil").await.unwrap();
    assert_eq!(
        fmtutil_releases,
        [
            release("0.3.1", false),
            release("0.3.2", false),
            release("0.4.0", false)
        ]
    );
    assert_eq!(cargo::releases(&client, "absent").await.unwrap(), []);

    // In-range releases are the lockfile's; the majors only when the policy asks.
    let majors = Policy {
        major: true,
        ..Policy::default()
    };
    let planned = |policy: &Policy| -> Vec<Update> {
        dependencies
            .iter()
            .zip([&calcutil_releases, &fmtutil_releases])
            .flat_map(|(dep, releases)| plan(dep, cargo::locked_version(&locked_at_first, dep), releases, policy))
            .collect()
    };
    assert_eq!(planned(&Policy::default()), []);
    let calcutil_major = update("calcutil", "1.0.0", "2.0.0", UpdateKind::Major, Some("2.0"));
    assert_eq!(
        planned(&majors),
        [
            calcutil_major.clone(),
            update("fmtutil", "0.3.1", "0.4.0", UpdateKind::Major, Some("~0.4.0")),
        ]
    );

    // The lockfile refresh alone takes the in-range releases, not the yanked one.
    let snapshot = || lock::Snapshot::from([(String::new(), lock::read_cargo(root).unwrap().unwrap())]);
    let first = snapshot();
    let first_lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap();
    cli.run(root, &cargo::lock_command(&index, Refresh::Full));
    let refreshed = cargo::locked(root).unwrap();
    assert_eq!(refreshed, versions(&[("calcutil", "1.1.0"), ("fmtutil", "0.3.2")]));
    let kinds = |before: &lock::Snapshot| -> Vec<(String, ChangeKind)> {
        lock::diff(Ecosystem::Cargo, before, &snapshot())
            .into_iter()
            .map(|c| (c.name, c.kind))
            .collect()
    };
    let updated = |name: &str, from: &str, to: &str| {
        (
            name.to_owned(),
            ChangeKind::Updated {
                from: from.into(),
                to: to.into(),
            },
        )
    };
    assert_eq!(
        kinds(&first),
        [
            updated("calcutil", "1.0.0", "1.1.0"),
            updated("fmtutil", "0.3.1", "0.3.2")
        ]
    );

    // The major's edit, then a minimal refresh: only what the edit needs moves.
    let refreshed_snapshot = snapshot();
    std::fs::write(root.join("Cargo.lock"), &first_lock).unwrap();
    cargo::apply(root, &calcutil_major).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("Cargo.toml")).unwrap(),
        MANIFEST.replace("calcutil = \"1.0\"", "calcutil = \"2.0\"")
    );
    cli.run(root, &cargo::lock_command(&index, Refresh::Minimal));
    assert_eq!(
        cargo::locked(root).unwrap(),
        versions(&[("calcutil", "2.0.0"), ("fmtutil", "0.3.1")])
    );
    assert_eq!(
        kinds(&first),
        [(
            "calcutil".to_owned(),
            ChangeKind::Replaced {
                from: "1.0.0".into(),
                to: "2.0.0".into()
            }
        )]
    );
    // A full one after it takes the in-range fmtutil too.
    cli.run(root, &cargo::lock_command(&index, Refresh::Full));
    let after_major = cargo::locked(root).unwrap();
    assert_eq!(after_major, versions(&[("calcutil", "2.0.0"), ("fmtutil", "0.3.2")]));
    assert_eq!(
        kinds(&refreshed_snapshot),
        [(
            "calcutil".to_owned(),
            ChangeKind::Replaced {
                from: "1.1.0".into(),
                to: "2.0.0".into()
            }
        )]
    );

    // The project builds and tests offline against what the lockfile now says.
    cli.run(root, &format!("cargo fetch {}", cli.source));
    let output = cli.run(root, &format!("cargo test --offline {} -- --nocapture", cli.source));
    assert!(output.contains("built with calcutil 2.0.0 fmtutil 0.3.2"), "{output}");

    // Cargo downloaded (and checked against the index's checksums) only what it built.
    let downloads: BTreeSet<String> = registry
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/download"))
        .map(|r| format!("{} {}", r.status, r.path))
        .collect();
    assert_eq!(
        downloads,
        BTreeSet::from([
            "200 /api/v1/crates/calcutil/2.0.0/download".to_owned(),
            "200 /api/v1/crates/fmtutil/0.3.2/download".to_owned(),
        ])
    );
    assert!(
        registry
            .requests()
            .iter()
            .any(|r| r.path == "/ca/lc/calcutil" && r.status == 200),
        "the index was read at its sparse path"
    );
}

#[tokio::test]
async fn cargo_chores_hold_back_releases_that_need_a_newer_rust_than_the_package() {
    let registry = CargoRegistry::start();
    for (version, rust) in [
        ("1.0.0", None),
        ("1.1.0", Some("1.70")),
        ("1.2.0", Some("1.80")),
        ("2.0.0", Some("1.85")),
    ] {
        match rust {
            Some(rust) => registry.publish_with_rust_version("msrvutil", version, &crate_lib(version), &[], rust),
            None => registry.publish("msrvutil", version, &crate_lib(version), &[]),
        }
        .unwrap();
    }
    let project = TempDir::new().unwrap();
    let root = project.path();
    std::fs::create_dir_all(root.join("crates/app")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nmembers = [\"crates/app\"]\n\n[workspace.package]\nrust-version = \"1.70\"\n",
    )
    .unwrap();
    std::fs::write(
        root.join("crates/app/Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nrust-version.workspace = true\n\n\
         [dependencies]\nmsrvutil = \"~1.0\"\n",
    )
    .unwrap();

    let client = RegistryClient::new(Registries {
        cargo_index: Url::parse(&registry.index_url()).unwrap(),
        ..Registries::default()
    })
    .unwrap();
    let releases = cargo::releases(&client, "msrvutil").await.unwrap();
    let rust_versions: Vec<Option<&str>> = releases.iter().map(|r| r.rust_version.as_deref()).collect();
    assert_eq!(rust_versions, [None, Some("1.70"), Some("1.80"), Some("1.85")]);

    let [dep] = cargo::scan(root).unwrap().try_into().unwrap();
    let declared = cargo::rust_version(root, &dep.manifest);
    assert_eq!(declared.as_deref(), Some("1.70"));
    let majors = Policy {
        major: true,
        ..Policy::default()
    };
    let planned = plan_for_rust(&dep, Some("1.0.0"), &releases, &majors, declared.as_deref());
    let to: Vec<(&str, UpdateKind, Option<&str>)> = planned
        .updates
        .iter()
        .map(|u| (u.to.as_str(), u.kind, u.new_requirement.as_deref()))
        .collect();
    assert_eq!(to, [("1.1.0", UpdateKind::Minor, Some("~1.1"))]);
    assert_eq!(
        planned.held_back,
        [
            HeldBack {
                reason: Hold::Rust,
                name: "msrvutil".into(),
                version: "1.2.0".into(),
                needs: "1.80".into(),
                declared: "1.70".into(),
                major: false,
                instead: Some("1.1.0".into()),
            },
            HeldBack {
                reason: Hold::Rust,
                name: "msrvutil".into(),
                version: "2.0.0".into(),
                needs: "1.85".into(),
                declared: "1.70".into(),
                major: true,
                instead: None,
            },
        ]
    );
    // Without the package's rust-version, the newest are proposed as before.
    let unlimited: Vec<String> = plan(&dep, Some("1.0.0"), &releases, &majors)
        .into_iter()
        .map(|u| u.to)
        .collect();
    assert_eq!(unlimited, ["1.2.0", "2.0.0"]);
}

#[tokio::test]
async fn cargo_releases_are_dated_by_the_registrys_api_for_min_release_age() {
    let registry = CargoRegistry::start();
    for version in ["1.0.0", "1.1.0", "1.2.0"] {
        registry
            .publish("datedutil", version, &crate_lib(version), &[])
            .unwrap();
    }
    // 1.2.0 is a day old: younger than the repository's three days.
    let yesterday = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(24);
    registry
        .set_published("datedutil", "1.2.0", &yesterday.to_string())
        .unwrap();
    let project = TempDir::new().unwrap();
    let root = project.path();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n[dependencies]\ndatedutil = \"=1.0.0\"\n",
    )
    .unwrap();
    let client = RegistryClient::new(Registries {
        cargo_index: Url::parse(&registry.index_url()).unwrap(),
        ..Registries::default()
    })
    .unwrap();
    let api = cargo::registry_api(&client)
        .await
        .unwrap()
        .expect("the index names its API");
    let dates = cargo::release_dates(&client, &api, "datedutil").await.unwrap();
    assert_eq!(dates.len(), 3);
    assert_eq!(dates["1.2.0"].as_second(), yesterday.as_second());
    assert!(dates["1.0.0"] < dates["1.2.0"]);

    let github = pitcrew::github::GithubClient::new(
        &Url::parse("http://127.0.0.1:9/").unwrap(),
        pitcrew::github::Auth::Token(secrecy::SecretString::from("unused")),
        pitcrew::github::ClientOptions::default(),
    )
    .unwrap();
    let policy = Policy {
        update_pinned: true,
        min_release_age: Some(std::time::Duration::from_secs(3 * 86_400)),
        ..Policy::default()
    };
    let found = pitcrew::chores::plan::find(Ecosystem::Cargo, root, &client, &github, &policy).await;
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    let to: Vec<&str> = found.updates.iter().map(|u| u.to.as_str()).collect();
    assert_eq!(to, ["1.1.0"], "{found:#?}");
    let held: Vec<(Hold, &str, Option<&str>)> = found
        .held_back
        .iter()
        .map(|h| (h.reason, h.version.as_str(), h.instead.as_deref()))
        .collect();
    assert_eq!(held, [(Hold::Young, "1.2.0", Some("1.1.0"))]);
    assert!(
        registry
            .requests()
            .iter()
            .any(|r| r.path == "/api/v1/crates/datedutil/versions")
    );

    // Without the limit the API is not asked: the index is enough.
    let before = registry.requests().len();
    let found = pitcrew::chores::plan::find(
        Ecosystem::Cargo,
        root,
        &client,
        &github,
        &Policy {
            update_pinned: true,
            ..Policy::default()
        },
    )
    .await;
    assert_eq!(
        found.updates.iter().map(|u| u.to.as_str()).collect::<Vec<_>>(),
        ["1.2.0"]
    );
    assert!(
        registry.requests()[before..]
            .iter()
            .all(|r| !r.path.starts_with("/api/"))
    );
}
