//! Dependency chores against the real crates.io index and the real PyPI, opt-in and never in CI
//! (they need the network, and the registries move every day): for a small project, the versions
//! pitcrew proposes are compared with what Cargo's resolver locks for the edited manifest and what
//! pip's resolver installs on the project's lowest Python.
//!
//! ```sh
//! cargo nextest run -p pitcrew-tests --run-ignored only -E 'test(/chores_real/)'
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use pitcrew::chores::{Dependency, RegistryClient, Update, cargo, python, version};
use pitcrew::config::deps::{Policy, Registries};
use tempfile::TempDir;

fn policy() -> Policy {
    Policy {
        major: true,
        update_pinned: true,
        ..Policy::default()
    }
}

/// `program` with `args` in `dir` (the real registries' network allowed); its output.
fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    pitcrew_tests::chore_fixture::run(dir, program, args, &[])
}

#[test]
#[ignore = "needs the real crates.io and PyPI: --run-ignored only -E 'test(/chores_real/)'"]
fn cargo_locks_what_pitcrew_proposes_on_the_real_index() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = TempDir::new().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "").unwrap();
    // Pinned, bounded and open requirements on small, long-lived crates.
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n\
         itoa = \"=1.0.1\"\nmemchr = \">=2.4, <2.6\"\nsmallvec = \"=1.6.1\"\nryu = \"1.0.0\"\n",
    )
    .unwrap();
    let client = RegistryClient::new(Registries::default()).unwrap();
    let deps = cargo::scan(root).unwrap();
    let mut proposed: BTreeMap<String, Update> = BTreeMap::new();
    for dep in &deps {
        let releases = runtime.block_on(cargo::releases(&client, &dep.name)).unwrap();
        let updates = version::plan(dep, None, &releases, &policy());
        // The compatible update is the one to compare: a major would need the code to change.
        if let Some(update) = updates
            .into_iter()
            .find(|u| u.kind != pitcrew::chores::UpdateKind::Major)
        {
            proposed.insert(dep.name.clone(), update);
        }
    }
    assert!(
        proposed.contains_key("itoa") && proposed.contains_key("smallvec"),
        "{proposed:#?}"
    );
    assert!(
        !proposed.contains_key("ryu"),
        "its newest is inside `1.0.0`: {proposed:#?}"
    );
    for update in proposed.values() {
        cargo::apply(root, update).unwrap();
    }
    run(root, "cargo", &["generate-lockfile", "--quiet"]);
    let locked = cargo::locked(root).unwrap();
    for (name, update) in &proposed {
        assert_eq!(
            locked.get(name).map(Vec::as_slice),
            Some([update.to.clone()].as_slice()),
            "cargo locked another {name} than pitcrew proposed"
        );
    }
}

/// The version pip installs for `requirement` on Python `python`, from wheels only (what
/// `--python-version` needs).
fn pip_picks(requirement: &str, python: &str) -> String {
    let dir = TempDir::new().unwrap();
    let report = run(
        dir.path(),
        "python3",
        &[
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--ignore-installed",
            "--no-deps",
            "--only-binary=:all:",
            "--target",
            &dir.path().join("target").display().to_string(),
            "--python-version",
            python,
            "--report",
            "-",
            requirement,
        ],
    );
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    report["install"][0]["metadata"]["version"]
        .as_str()
        .unwrap_or_else(|| panic!("{report:#}"))
        .to_owned()
}

#[test]
#[ignore = "needs the real crates.io and PyPI: --run-ignored only -E 'test(/chores_real/)'"]
fn pip_installs_what_pitcrew_proposes_on_the_projects_python() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = TempDir::new().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("pyproject.toml"),
        "[project]\nname = \"probe\"\nversion = \"0.1\"\nrequires-python = \">=3.8\"\n",
    )
    .unwrap();
    // Their newest releases need a newer Python than 3.8; the marker line is judged on its own.
    std::fs::write(
        root.join("requirements.txt"),
        "pytest==7.0.0\ncoverage==6.0\nnumpy==1.22.0; python_version<\"3.9\"\nnumpy==1.26.0; python_version>=\"3.9\"\n",
    )
    .unwrap();
    let client = RegistryClient::new(Registries::default()).unwrap();
    let deps: Vec<Dependency> = python::scan(root).unwrap();
    let project = python::interpreter::project(root, "requirements.txt");
    for dep in &deps {
        let releases = runtime.block_on(python::releases(&client, &dep.name)).unwrap();
        let pythons = python::interpreter::for_requirement(project.as_ref(), dep.marker.as_deref());
        let planned = python::plan(
            dep,
            python::pin(&dep.requirement).as_deref(),
            &releases,
            &policy(),
            pythons.as_ref(),
        );
        let from = python::pin(&dep.requirement).unwrap();
        let lowest = if dep.marker.as_deref().is_some_and(|m| m.contains(">=\"3.9\"")) {
            "3.9"
        } else {
            "3.8"
        };
        // The newest of the same major, and the newest of all, that pip would install there.
        let major: u64 = from.split('.').next().unwrap().parse().unwrap();
        let same_major = pip_picks(&format!("{}>={from},<{}", dep.name, major + 1), lowest);
        let newest = pip_picks(&format!("{}>={from}", dep.name), lowest);
        let to: Vec<&str> = planned.updates.iter().map(|u| u.to.as_str()).collect();
        let mut expected = Vec::new();
        if same_major != from {
            expected.push(same_major.as_str());
        }
        if newest != same_major {
            expected.push(newest.as_str());
        }
        assert_eq!(to, expected, "{} {:?}: {:#?}", dep.name, dep.marker, planned);
    }
}
