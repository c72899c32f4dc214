//! The npm, Python and GitHub Actions ecosystems of dependency chores against real servers: a local
//! npm registry and PyPI ([`PackageRegistry`]) and the fake GitHub's tags. Each test scans a
//! fixture, reads the releases through pitcrew's clients, plans under several policies and applies
//! the edits, comparing the manifests' whole text; for npm, real `npm` locks the fixture before and
//! after (a minimal refresh, then the whole one), and `locked` and `lock::diff` read the change.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use pitcrew::chores::lock::{self, Refresh};
use pitcrew::chores::{Dependency, RegistryClient, Release, Update, UpdateKind, actions, npm, python};
use pitcrew::config::deps::{Ecosystem, Policy, Registries};
use pitcrew::github::{Auth, ClientOptions, GithubClient};
use pitcrew_tests::fake_github::{FakeGithub, Repo, Spec};
use pitcrew_tests::package_registry::PackageRegistry;
use secrecy::SecretString;
use tempfile::TempDir;
use url::Url;

fn policy(major: bool, update_pinned: bool) -> Policy {
    Policy {
        major,
        update_pinned,
        ..Policy::default()
    }
}

fn dependency(
    ecosystem: Ecosystem,
    manifest: &str,
    section: &str,
    name: &str,
    requirement: &str,
    pinned: bool,
) -> Dependency {
    Dependency {
        ecosystem,
        name: name.to_owned(),
        manifest: manifest.to_owned(),
        section: section.to_owned(),
        requirement: requirement.to_owned(),
        pinned,
        marker: None,
    }
}

/// A manifest edit `dep` → `to` of `kind`, writing `requirement`.
fn edit(dep: &Dependency, from: &str, to: &str, kind: UpdateKind, requirement: &str, notes: Option<&str>) -> Update {
    Update {
        ecosystem: dep.ecosystem,
        name: dep.name.clone(),
        manifest: Some(dep.manifest.clone()),
        section: Some(dep.section.clone()),
        from: from.to_owned(),
        to: to.to_owned(),
        kind,
        new_requirement: Some(requirement.to_owned()),
        notes_url: notes.map(str::to_owned),
        marker: dep.marker.clone(),
    }
}

/// A release of the test registries, which date every release long ago unless told otherwise.
fn release(version: &str, yanked: bool, notes: Option<&str>) -> Release {
    Release {
        version: version.to_owned(),
        yanked,
        notes_url: notes.map(str::to_owned),
        rust_version: None,
        requires_python: Vec::new(),
        published: Some("2020-01-01T00:00:00Z".parse().unwrap()),
    }
}

fn registry_client(registry: &PackageRegistry) -> RegistryClient {
    RegistryClient::new(Registries {
        npm: Url::parse(&registry.npm_url()).unwrap(),
        pypi: Url::parse(&registry.pypi_url()).unwrap(),
        ..Registries::default()
    })
    .unwrap()
}

// ---------------------------------------------------------------------------------------------
// npm

const PACKAGE_JSON: &str = r#"{
    "name": "fixture",
    "version": "1.0.0",
    "private": true,
    "dependencies": {
        "left-pad": "^1.1.0",
        "@acme/util": "~2.1.0",
        "colorful": "^4.0.0",
        "local-thing": "file:local-thing"
    },
    "devDependencies": {
        "pinned-dep": "1.0.0"
    },
    "peerDependencies": {
        "peer-only": "^3.0.0"
    }
}
"#;

/// Real `npm` with a cache and user configuration of its own, or `None` (said loudly) without it.
struct Npm {
    home: TempDir,
}

impl Npm {
    fn find() -> Option<Npm> {
        match Command::new("npm").arg("--version").output() {
            Ok(output) if output.status.success() => Some(Npm {
                home: TempDir::new().unwrap(),
            }),
            outcome => {
                println!("SKIPPED: this test needs npm, which is not installed here ({outcome:?})");
                None
            }
        }
    }

    /// Runs `script` with `sh` in `dir`, failing the test when it fails.
    fn run(&self, dir: &Path, script: &str) {
        let output = Command::new("sh")
            .arg("-c")
            .arg(format!("timeout 300 {script}"))
            .current_dir(dir)
            .env("npm_config_cache", self.home.path().join("cache"))
            .env("npm_config_userconfig", self.home.path().join("npmrc"))
            .env("npm_config_update_notifier", "false")
            .env("npm_config_loglevel", "warn")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "`{script}` failed ({}):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

fn locks(entries: &[(&str, &str)]) -> BTreeMap<String, Vec<String>> {
    entries
        .iter()
        .map(|(name, version)| ((*name).to_owned(), vec![(*version).to_owned()]))
        .collect()
}

#[tokio::test]
async fn npm_dependencies_are_planned_edited_and_relocked_by_real_npm() {
    let Some(npm_cli) = Npm::find() else {
        return;
    };
    let registry = PackageRegistry::start();
    for (name, version) in [
        ("left-pad", "1.1.0"),
        ("@acme/util", "2.1.0"),
        ("colorful", "4.0.0"),
        ("pinned-dep", "1.0.0"),
        ("peer-only", "3.0.0"),
    ] {
        registry.npm_publish(name, version, &[]).unwrap();
    }
    registry
        .npm_repository("@acme/util", "git+https://github.com/acme/util.git")
        .unwrap();
    let dir = TempDir::new().unwrap();
    let root = dir.path();
    std::fs::write(root.join("package.json"), PACKAGE_JSON).unwrap();
    std::fs::create_dir_all(root.join("local-thing")).unwrap();
    std::fs::write(
        root.join("local-thing/package.json"),
        "{\"name\": \"local-thing\", \"version\": \"0.1.0\"}\n",
    )
    .unwrap();
    let npm_url = Url::parse(&registry.npm_url()).unwrap();
    npm_cli.run(
        root,
        &format!("npm install --package-lock-only --ignore-scripts --no-audit --no-fund --registry {npm_url}"),
    );
    let initial = locks(&[
        ("@acme/util", "2.1.0"),
        ("colorful", "4.0.0"),
        ("left-pad", "1.1.0"),
        ("peer-only", "3.0.0"),
        ("pinned-dep", "1.0.0"),
    ]);
    assert_eq!(npm::locked(root).unwrap(), initial);

    // Newer versions: inside the ranges, compatible but excluded, deprecated, pre-release, majors.
    for (name, version, deps) in [
        ("left-pad", "1.2.0", &[][..]),
        ("left-pad", "2.0.0", &[]),
        ("@acme/util", "2.1.3", &[]),
        ("tiny", "1.0.0", &[]),
        ("@acme/util", "2.2.0", &[("tiny", "^1.0.0")]),
        ("@acme/util", "2.2.1", &[]),
        ("@acme/util", "2.3.0-beta.1", &[]),
        ("@acme/util", "3.0.0", &[]),
        ("colorful", "4.1.0", &[]),
        ("pinned-dep", "1.0.5", &[]),
    ] {
        registry.npm_publish(name, version, deps).unwrap();
    }
    registry.npm_deprecate("@acme/util", "2.2.1").unwrap();

    let deps = npm::scan(root).unwrap();
    let manifest = "package.json";
    let left_pad = dependency(Ecosystem::Npm, manifest, "dependencies", "left-pad", "^1.1.0", false);
    let util = dependency(Ecosystem::Npm, manifest, "dependencies", "@acme/util", "~2.1.0", false);
    let colorful = dependency(Ecosystem::Npm, manifest, "dependencies", "colorful", "^4.0.0", false);
    let pinned = dependency(Ecosystem::Npm, manifest, "devDependencies", "pinned-dep", "1.0.0", true);
    // Sorted by name within a section; `file:` and peer dependencies are not kept current.
    assert_eq!(deps, [util.clone(), colorful.clone(), left_pad.clone(), pinned.clone()]);

    let client = registry_client(&registry);
    let notes = Some("https://github.com/acme/util/releases");
    let util_releases = npm::releases(&client, "@acme/util").await.unwrap();
    assert_eq!(
        util_releases,
        [
            release("2.1.0", false, notes),
            release("2.1.3", false, notes),
            release("2.2.0", false, notes),
            release("2.2.1", true, notes),
            release("2.3.0-beta.1", false, notes),
            release("3.0.0", false, notes),
        ]
    );
    assert!(
        registry
            .requests()
            .iter()
            .any(|r| r.path == "/npm/@acme%2futil" && r.status == 200),
        "{:#?}",
        registry.requests()
    );
    let missing = npm::releases(&client, "no-such-package").await.unwrap_err();
    assert_eq!(missing.to_string(), "the npm registry has no package `no-such-package`");

    let locked = npm::locked(root).unwrap();
    let mut plans = BTreeMap::new();
    for dep in &deps {
        let releases = npm::releases(&client, &dep.name).await.unwrap();
        let lock = locked.get(&dep.name).and_then(|v| v.first()).map(String::as_str);
        for (label, policy) in [
            ("default", policy(false, false)),
            ("major", policy(true, false)),
            ("pinned", policy(false, true)),
        ] {
            plans.insert((dep.name.clone(), label), npm::plan(dep, lock, &releases, &policy));
        }
    }
    let plan = |name: &str, label: &str| plans[&(name.to_owned(), label)].clone();
    // Inside the range: left to the lockfile refresh.
    assert_eq!(plan("left-pad", "default"), []);
    assert_eq!(plan("colorful", "major"), []);
    assert_eq!(
        plan("left-pad", "major"),
        [edit(&left_pad, "1.1.0", "2.0.0", UpdateKind::Major, "^2.0.0", None)]
    );
    // 2.2.1 is deprecated, 2.3.0-beta.1 a pre-release: 2.2.0 is the newest compatible.
    let util_minor = edit(&util, "2.1.0", "2.2.0", UpdateKind::Minor, "~2.2.0", notes);
    assert_eq!(plan("@acme/util", "default"), std::slice::from_ref(&util_minor));
    assert_eq!(
        plan("@acme/util", "major"),
        [
            util_minor.clone(),
            edit(&util, "2.1.0", "3.0.0", UpdateKind::Major, "~3.0.0", notes)
        ]
    );
    assert_eq!(plan("pinned-dep", "major"), []);
    let pinned_patch = edit(&pinned, "1.0.0", "1.0.5", UpdateKind::Patch, "1.0.5", None);
    assert_eq!(plan("pinned-dep", "pinned"), std::slice::from_ref(&pinned_patch));

    let left_pad_major = plan("left-pad", "major").remove(0);
    for update in [&util_minor, &left_pad_major, &pinned_patch] {
        npm::apply(root, update).unwrap();
    }
    let edited = r#"{
    "name": "fixture",
    "version": "1.0.0",
    "private": true,
    "dependencies": {
        "left-pad": "^2.0.0",
        "@acme/util": "~2.2.0",
        "colorful": "^4.0.0",
        "local-thing": "file:local-thing"
    },
    "devDependencies": {
        "pinned-dep": "1.0.5"
    },
    "peerDependencies": {
        "peer-only": "^3.0.0"
    }
}
"#;
    assert_eq!(std::fs::read_to_string(root.join("package.json")).unwrap(), edited);

    // A minimal refresh (the majors' pull request's) takes the edits and `tiny` that @acme/util
    // 2.2.0 brings, and leaves `colorful` where it was locked although 4.1.0 is in range.
    let lockfile_before = std::fs::read_to_string(root.join("package-lock.json")).unwrap();
    let read = || lock::Snapshot::from([(String::new(), lock::read_npm(root, "").unwrap().unwrap())]);
    let before = read();
    npm_cli.run(root, &npm::lock_command(&npm_url, Refresh::Minimal));
    let rows: Vec<String> = lock::diff(Ecosystem::Npm, &before, &read())
        .iter()
        .map(|c| format!("{} {}", c.name, c.describe()))
        .collect();
    assert_eq!(
        rows,
        [
            "@acme/util 2.1.0 -> 2.2.0 (lockfile, in range)",
            "left-pad 1.1.0 -> 2.0.0 (replaced: a new major)",
            "pinned-dep 1.0.0 -> 1.0.5 (lockfile, in range)",
            "tiny 1.0.0 (new)",
        ]
    );
    std::fs::write(root.join("package-lock.json"), lockfile_before).unwrap();

    // The real lockfile refresh: the edits, the in-range `colorful` 4.1.0, and `tiny` that
    // @acme/util 2.2.0 brings; `package.json` untouched by it.
    npm_cli.run(root, &npm::lock_command(&npm_url, Refresh::Full));
    assert_eq!(
        npm::locked(root).unwrap(),
        locks(&[
            ("@acme/util", "2.2.0"),
            ("colorful", "4.1.0"),
            ("left-pad", "2.0.0"),
            ("peer-only", "3.0.0"),
            ("pinned-dep", "1.0.5"),
            ("tiny", "1.0.0"),
        ])
    );
    assert_eq!(std::fs::read_to_string(root.join("package.json")).unwrap(), edited);
    let lockfile: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("package-lock.json")).unwrap()).unwrap();
    let tarball = format!("{npm_url}@acme/util/-/util-2.2.0.tgz");
    assert_eq!(lockfile["packages"][""]["dependencies"]["@acme/util"], "~2.2.0");
    assert_eq!(
        lockfile["packages"]["node_modules/@acme/util"]["resolved"],
        tarball.as_str()
    );
    let integrity = lockfile["packages"]["node_modules/@acme/util"]["integrity"]
        .as_str()
        .unwrap();
    assert!(integrity.starts_with("sha512-"), "{integrity}");
}

// ---------------------------------------------------------------------------------------------
// Python

const REQUIREMENTS: &str = "# Runtime dependencies.
requests==2.31.0  # pinned for the API client
Django>=4.2,<5 ; python_version >= \"3.10\"
flask_login[sqlalchemy] ~= 0.6.2
-r requirements-dev.txt
-e git+https://github.com/acme/tool.git#egg=tool
";

const REQUIREMENTS_DEV: &str = "pytest>=7,<8\n";

const PYPROJECT: &str = r#"[project]
name = "fixture"
version = "0.1.0"
dependencies = [
    "httpx>=0.25,<0.27",  # HTTP client
    'attrs==23.1.0',
]

[project.optional-dependencies]
test = ["pytest-cov~=4.1"]
"#;

#[tokio::test]
async fn python_requirements_and_pyproject_are_planned_and_edited() {
    let registry = PackageRegistry::start();
    for (name, versions) in [
        ("requests", &["2.30.0", "2.31.0", "2.32.0", "2.32.3", "3.0.0rc1"][..]),
        ("Django", &["4.2.0", "4.2.11", "5.0.4", "5.1.0"]),
        ("Flask-Login", &["0.6.2", "0.6.3", "0.7.0"]),
        ("pytest", &["7.4.4", "8.1.1"]),
        ("httpx", &["0.25.0", "0.26.0", "0.27.0", "0.28.1"]),
        ("attrs", &["23.1.0", "23.2.0", "24.1.0"]),
        ("pytest-cov", &["4.1.0", "5.0.0"]),
    ] {
        for version in versions {
            registry
                .pypi_release(name, version, name == "requests" && *version == "2.32.0")
                .unwrap();
        }
    }
    registry
        .pypi_project_url("requests", "Homepage", "https://requests.test")
        .unwrap();
    registry
        .pypi_project_url("requests", "Changelog", "https://requests.test/changes")
        .unwrap();
    let dir = TempDir::new().unwrap();
    let root = dir.path();
    std::fs::write(root.join("requirements.txt"), REQUIREMENTS).unwrap();
    std::fs::write(root.join("requirements-dev.txt"), REQUIREMENTS_DEV).unwrap();
    std::fs::write(root.join("pyproject.toml"), PYPROJECT).unwrap();

    let py = |manifest: &str, section: &str, name: &str, requirement: &str, pinned: bool| {
        dependency(Ecosystem::Python, manifest, section, name, requirement, pinned)
    };
    let httpx = py("pyproject.toml", "project.dependencies", "httpx", ">=0.25,<0.27", false);
    let attrs = py("pyproject.toml", "project.dependencies", "attrs", "==23.1.0", true);
    let cov = py(
        "pyproject.toml",
        "project.optional-dependencies.test",
        "pytest-cov",
        "~=4.1",
        false,
    );
    let pytest = py("requirements-dev.txt", "requirements", "pytest", ">=7,<8", false);
    let requests = py("requirements.txt", "requirements", "requests", "==2.31.0", true);
    let django = Dependency {
        marker: Some("python_version >= \"3.10\"".into()),
        ..py("requirements.txt", "requirements", "django", ">=4.2,<5", false)
    };
    let flask_login = py("requirements.txt", "requirements", "flask-login", "~= 0.6.2", false);
    let deps = python::scan(root).unwrap();
    assert_eq!(
        deps,
        [
            httpx.clone(),
            attrs.clone(),
            cov.clone(),
            pytest.clone(),
            requests.clone(),
            django.clone(),
            flask_login.clone()
        ]
    );
    let locked = python::locked(root).unwrap();
    assert_eq!(locked, locks(&[("attrs", "23.1.0"), ("requests", "2.31.0")]));

    let client = registry_client(&registry);
    let changes = Some("https://requests.test/changes");
    assert_eq!(
        python::releases(&client, "requests").await.unwrap(),
        [
            release("2.30.0", false, changes),
            release("2.31.0", false, changes),
            release("2.32.0", true, changes),
            release("2.32.3", false, changes),
            release("3.0.0rc1", false, changes),
        ]
    );
    // Any spelling of a name asks for the normalised one.
    assert_eq!(
        python::releases(&client, "Flask_Login").await.unwrap(),
        [
            release("0.6.2", false, None),
            release("0.6.3", false, None),
            release("0.7.0", false, None)
        ]
    );
    assert!(registry.requests().iter().any(|r| r.path == "/pypi/flask-login/json"));
    assert_eq!(
        python::releases(&client, "no-such-project")
            .await
            .unwrap_err()
            .to_string(),
        "PyPI has no package `no-such-project`"
    );

    let mut plans = BTreeMap::new();
    for dep in &deps {
        let releases = python::releases(&client, &dep.name).await.unwrap();
        let lock = locked.get(&dep.name).and_then(|v| v.first()).map(String::as_str);
        for (label, policy) in [("default", policy(false, false)), ("all", policy(true, true))] {
            plans.insert(
                (dep.name.clone(), label),
                python::plan(dep, lock, &releases, &policy, None).updates,
            );
        }
    }
    let plan = |name: &str, label: &str| plans[&(name.to_owned(), label)].clone();
    // Every newer release here is inside its range, pinned, or a major.
    for dep in &deps {
        assert_eq!(plan(&dep.name, "default"), [], "{}", dep.name);
    }
    let expected = [
        (
            "httpx",
            vec![edit(
                &httpx,
                ">=0.25,<0.27",
                "0.28.1",
                UpdateKind::Major,
                ">=0.25,<0.29",
                None,
            )],
        ),
        (
            "attrs",
            vec![
                edit(&attrs, "23.1.0", "23.2.0", UpdateKind::Minor, "==23.2.0", None),
                edit(&attrs, "23.1.0", "24.1.0", UpdateKind::Major, "==24.1.0", None),
            ],
        ),
        (
            "pytest-cov",
            vec![edit(&cov, "~=4.1", "5.0.0", UpdateKind::Major, "~=5.0", None)],
        ),
        (
            "pytest",
            vec![edit(&pytest, ">=7,<8", "8.1.1", UpdateKind::Major, ">=7,<9", None)],
        ),
        // 2.32.0 is yanked, 3.0.0rc1 a pre-release.
        (
            "requests",
            vec![edit(
                &requests,
                "2.31.0",
                "2.32.3",
                UpdateKind::Minor,
                "==2.32.3",
                changes,
            )],
        ),
        (
            "django",
            vec![edit(&django, ">=4.2,<5", "5.1.0", UpdateKind::Major, ">=4.2,<6", None)],
        ),
        // 0.6.3 is inside `~= 0.6.2`; for 0.x a new minor is a major.
        (
            "flask-login",
            vec![edit(
                &flask_login,
                "~= 0.6.2",
                "0.7.0",
                UpdateKind::Major,
                "~= 0.7.0",
                None,
            )],
        ),
    ];
    for (name, updates) in &expected {
        assert_eq!(&plan(name, "all"), updates, "{name}");
    }

    // Apply each dependency's first update (attrs: the minor; its major would go in a PR of its own).
    for (_, updates) in &expected {
        python::apply(root, &updates[0]).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(root.join("requirements.txt")).unwrap(),
        "# Runtime dependencies.
requests==2.32.3  # pinned for the API client
Django>=4.2,<6 ; python_version >= \"3.10\"
flask_login[sqlalchemy] ~= 0.7.0
-r requirements-dev.txt
-e git+https://github.com/acme/tool.git#egg=tool
"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("requirements-dev.txt")).unwrap(),
        "pytest>=7,<9\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("pyproject.toml")).unwrap(),
        r#"[project]
name = "fixture"
version = "0.1.0"
dependencies = [
    "httpx>=0.25,<0.29",  # HTTP client
    'attrs==23.2.0',
]

[project.optional-dependencies]
test = ["pytest-cov~=5.0"]
"#
    );
    // The edited manifests read back as the new requirements.
    let rescanned: Vec<(String, String)> = python::scan(root)
        .unwrap()
        .into_iter()
        .map(|d| (d.name, d.requirement))
        .collect();
    assert_eq!(
        rescanned,
        [
            ("httpx", ">=0.25,<0.29"),
            ("attrs", "==23.2.0"),
            ("pytest-cov", "~=5.0"),
            ("pytest", ">=7,<9"),
            ("requests", "==2.32.3"),
            ("django", ">=4.2,<6"),
            ("flask-login", "~= 0.7.0"),
        ]
        .map(|(n, r)| (n.to_owned(), r.to_owned()))
    );
}

// ---------------------------------------------------------------------------------------------
// GitHub Actions

const TOKEN: &str = "ghs_chores_packages_token";
const PINNED_SHA: &str = "b4ffde65f46336ab88eb53be808477a3936bae11";

fn workflow() -> String {
    format!(
        r#"name: CI
on: [push, pull_request]

jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4  # the repository
      - name: Node
        uses: "actions/setup-node@v4.0.2"
        with:
          node-version: 20
      - uses: ./.github/actions/local
      - uses: docker://alpine:3.19
      - uses: actions/cache@main
  analyze:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: github/codeql-action/init@v3
      - uses: github/codeql-action/analyze@v3 # upload results
      - uses: actions/upload-artifact@{PINNED_SHA} # v4.3.1
  release:
    uses: octo-org/shared-workflows/.github/workflows/release.yml@v1.2
"#
    )
}

#[tokio::test]
async fn actions_are_planned_from_tags_and_edited_in_the_workflow() {
    let tags: [(&str, &[&str]); 5] = [
        (
            "actions/checkout",
            &["v3", "v4", "v4.1.1", "v4.2.0", "v5", "v5.0.0", "nightly"],
        ),
        ("actions/setup-node", &["v4", "v4.0.2", "v4.0.3", "v4.1.0", "v5.0.0"]),
        ("github/codeql-action", &["v2", "v3", "v3.25.0"]),
        ("actions/upload-artifact", &["v4", "v4.3.1", "v4.4.0"]),
        ("octo-org/shared-workflows", &["v1.2", "v1.2.5", "v1.3", "v2.0"]),
    ];
    let mut builder = FakeGithub::builder().token(TOKEN);
    for (repo, _) in &tags {
        builder = builder.repo(Repo::new(repo));
    }
    let github = builder.start();
    for (repo, names) in &tags {
        for (i, name) in names.iter().enumerate() {
            github.add_tag(repo, name, &format!("{:040x}", i + 1));
        }
    }
    let dir = TempDir::new().unwrap();
    let root = dir.path();
    let workflows = root.join(actions::WORKFLOWS_DIR);
    std::fs::create_dir_all(&workflows).unwrap();
    std::fs::write(workflows.join("ci.yml"), workflow()).unwrap();

    let manifest = ".github/workflows/ci.yml";
    let act = |section: &str, name: &str, requirement: &str, pinned: bool| {
        dependency(Ecosystem::Actions, manifest, section, name, requirement, pinned)
    };
    let checkout = act("jobs.build", "actions/checkout", "v4", false);
    let setup_node = act("jobs.build", "actions/setup-node", "v4.0.2", false);
    let codeql = act("jobs.analyze", "github/codeql-action", "v3", false);
    let upload = act("jobs.analyze", "actions/upload-artifact", PINNED_SHA, true);
    let shared = act("jobs.release", "octo-org/shared-workflows", "v1.2", false);
    let deps = actions::scan(root).unwrap();
    assert_eq!(
        deps,
        [
            checkout.clone(),
            setup_node.clone(),
            codeql.clone(),
            upload.clone(),
            shared.clone()
        ]
    );

    let url = Url::parse(&github.url()).unwrap();
    let client = GithubClient::new(&url, Auth::Token(SecretString::from(TOKEN)), ClientOptions::default()).unwrap();
    let notes = |repo: &str, tag: &str| format!("https://github.com/{repo}/releases/tag/{tag}");
    let checkout_releases = actions::releases(&client, "actions/checkout").await.unwrap();
    let listed: Vec<(String, Option<String>)> = checkout_releases
        .iter()
        .map(|r| (r.version.clone(), r.notes_url.clone()))
        .collect();
    assert_eq!(
        listed,
        ["v3", "v4", "v4.1.1", "v4.2.0", "v5", "v5.0.0"]
            .map(|tag| (tag.to_owned(), Some(notes("actions/checkout", tag))))
    );
    assert!(checkout_releases.iter().all(|r| !r.yanked));
    assert_eq!(
        actions::releases(&client, "not-a-repo").await.unwrap_err().to_string(),
        "the action repository `not-a-repo`: \"not-a-repo\" is not a repository name: it needs exactly one `/`; \
         expected `owner/name`"
    );

    let mut plans = BTreeMap::new();
    for dep in &deps {
        let releases = actions::releases(&client, &dep.name).await.unwrap();
        for (label, policy) in [("default", policy(false, false)), ("all", policy(true, true))] {
            plans.insert((dep.name.clone(), label), actions::plan(dep, None, &releases, &policy));
        }
    }
    let plan = |name: &str, label: &str| plans[&(name.to_owned(), label)].clone();
    let note = |repo: &str, tag: &str| Some(notes(repo, tag));
    let setup_node_minor = edit(
        &setup_node,
        "v4.0.2",
        "v4.1.0",
        UpdateKind::Minor,
        "v4.1.0",
        note("actions/setup-node", "v4.1.0").as_deref(),
    );
    let shared_minor = edit(
        &shared,
        "v1.2",
        "v1.3",
        UpdateKind::Minor,
        "v1.3",
        note("octo-org/shared-workflows", "v1.3").as_deref(),
    );
    let checkout_major = edit(
        &checkout,
        "v4",
        "v5",
        UpdateKind::Major,
        "v5",
        note("actions/checkout", "v5").as_deref(),
    );
    assert_eq!(plan("actions/checkout", "default"), []);
    assert_eq!(plan("actions/checkout", "all"), std::slice::from_ref(&checkout_major));
    assert_eq!(
        plan("actions/setup-node", "default"),
        std::slice::from_ref(&setup_node_minor)
    );
    assert_eq!(
        plan("actions/setup-node", "all"),
        [
            setup_node_minor.clone(),
            edit(
                &setup_node,
                "v4.0.2",
                "v5.0.0",
                UpdateKind::Major,
                "v5.0.0",
                note("actions/setup-node", "v5.0.0").as_deref()
            )
        ]
    );
    // `v3` is the newest major tag; a SHA stays pinned.
    assert_eq!(plan("github/codeql-action", "all"), []);
    assert_eq!(plan("actions/upload-artifact", "all"), []);
    assert_eq!(
        plan("octo-org/shared-workflows", "default"),
        std::slice::from_ref(&shared_minor)
    );

    for update in [&setup_node_minor, &shared_minor, &checkout_major] {
        actions::apply(root, update).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(workflows.join("ci.yml")).unwrap(),
        format!(
            r#"name: CI
on: [push, pull_request]

jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v5  # the repository
      - name: Node
        uses: "actions/setup-node@v4.1.0"
        with:
          node-version: 20
      - uses: ./.github/actions/local
      - uses: docker://alpine:3.19
      - uses: actions/cache@main
  analyze:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v5
      - uses: github/codeql-action/init@v3
      - uses: github/codeql-action/analyze@v3 # upload results
      - uses: actions/upload-artifact@{PINNED_SHA} # v4.3.1
  release:
    uses: octo-org/shared-workflows/.github/workflows/release.yml@v1.3
"#
        )
    );

    // What the fake answered for the tags is what GitHub's description promises.
    let tag_requests: Vec<_> = github
        .requests()
        .into_iter()
        .filter(|r| r.operation.as_deref() == Some("repos/list-tags"))
        .collect();
    assert_eq!(tag_requests.len(), 1 + deps.len(), "{tag_requests:#?}");
    for request in &tag_requests {
        assert_eq!(request.query.as_deref(), Some("per_page=100&page=1"));
        let (spec, operation) = Spec::route_github(&request.method, &request.path).unwrap();
        let problems = spec.validate_response(&operation, request.status, &request.response);
        assert!(problems.is_empty(), "{} → {problems:?}", request.path);
    }
}
