//! `pitcrew chore` as a user runs it on a local checkout: real Cargo and npm registries of the
//! tests on 127.0.0.1 (sparse index, packument), the checkout's `.github/pitcrew.toml` policy. With
//! `--dry-run`, the plan printed as the pull requests' tables or as JSON and nothing in the checkout
//! changed; without, the updates made on a new branch by real `cargo` (the lockfile refresh and the
//! tests, in the local sandbox) and committed.
#![expect(clippy::unwrap_used, reason = "a failing test should panic")]

use std::path::Path;
use std::process::{Command, Output};

use pitcrew_tests::cargo_registry::CargoRegistry;
use pitcrew_tests::package_registry::PackageRegistry;

/// Runs `pitcrew ARGS` in `dir` with only what a user's shell has for the toolchain: `PATH`, `HOME`
/// and rustup's and Cargo's homes.
fn pitcrew(dir: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pitcrew"));
    command.args(args).current_dir(dir).env_clear();
    for name in ["PATH", "HOME", "RUSTUP_HOME", "CARGO_HOME", "RUSTUP_TOOLCHAIN"] {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn lib(version: &str) -> String {
    format!("pub const VERSION: &str = \"{version}\";\n")
}

/// Every file under `root`, with its bytes.
fn snapshot(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let name = path.strip_prefix(root).unwrap().display().to_string();
                files.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn chore_dry_run_plans_the_pull_requests_of_a_checkout_against_local_registries() {
    let cargo = CargoRegistry::start();
    for version in ["1.0.0", "1.1.0", "2.0.0"] {
        cargo.publish("calcutil", version, &lib(version), &[]).unwrap();
    }
    let packages = PackageRegistry::start();
    for version in ["1.0.0", "1.3.0"] {
        packages.npm_publish("leftpad-test", version, &[]).unwrap();
    }

    let checkout = tempfile::tempdir().unwrap();
    let root = checkout.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join(".github/workflows")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ncalcutil = \"~1.0.0\"\n",
    )
    .unwrap();
    std::fs::write(root.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        root.join("package.json"),
        "{\n  \"name\": \"app\",\n  \"version\": \"1.0.0\",\n  \"dependencies\": {\n    \"leftpad-test\": \"~1.0.0\"\n  }\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.join(".github/workflows/ci.yml"),
        "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n",
    )
    .unwrap();
    // Tilde requirements: the newer minors are outside them (manifest edits; what a requirement
    // already allows is a lockfile refresh, which a dry run does not make). The repository's
    // policy: majors too, in pull requests of their own.
    std::fs::write(root.join(".github/pitcrew.toml"), "[chores.deps]\nmajor = true\n").unwrap();
    let before = snapshot(root);

    let cargo_index = format!("chores.cargo_index={}", cargo.index_url());
    let npm = format!("chores.npm_registry={}", packages.npm_url());
    let repo = root.to_str().unwrap();
    let args = [
        "--set",
        &cargo_index,
        "--set",
        &npm,
        "chore",
        "--dry-run",
        "--repo",
        repo,
    ];
    let json_args: Vec<&str> = args.iter().copied().chain(["--json"]).collect();
    let out = pitcrew(root, &json_args);
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let scanned: Vec<(String, u64, u64)> = plan["ecosystems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["ecosystem"].as_str().unwrap().to_owned(),
                e["dependencies"].as_u64().unwrap(),
                e["updates"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        scanned,
        [
            ("cargo".to_owned(), 1, 2),
            ("npm".to_owned(), 1, 1),
            ("actions".to_owned(), 1, 0)
        ],
        "{plan}"
    );
    let actions = &plan["ecosystems"][2]["problems"][0];
    assert!(actions.as_str().unwrap().contains("GITHUB_TOKEN"), "{actions}");

    let pulls: Vec<(String, Vec<(String, String)>)> = plan["pulls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let updates = p["updates"]
                .as_array()
                .unwrap()
                .iter()
                .map(|u| {
                    (
                        u["name"].as_str().unwrap().to_owned(),
                        u["to"].as_str().unwrap().to_owned(),
                    )
                })
                .collect();
            (p["branch"].as_str().unwrap().to_owned(), updates)
        })
        .collect();
    assert_eq!(
        pulls,
        [
            (
                "pitcrew/deps-cargo".to_owned(),
                vec![("calcutil".to_owned(), "1.1.0".to_owned())]
            ),
            (
                "pitcrew/deps-cargo-major".to_owned(),
                vec![("calcutil".to_owned(), "2.0.0".to_owned())]
            ),
            (
                "pitcrew/deps-npm".to_owned(),
                vec![("leftpad-test".to_owned(), "1.3.0".to_owned())]
            ),
        ],
        "{plan}"
    );
    assert_eq!(
        plan["pulls"][1]["title"],
        "chore(deps): update calcutil to 2.0.0 (major)"
    );
    assert!(
        plan["pulls"][0]["table"]
            .as_str()
            .unwrap()
            .starts_with("| Package | Change | Kind | Where | Release notes |"),
        "{plan}"
    );

    // The same plan as text: each pull request's branch, title and table.
    let out = pitcrew(root, &args);
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{shown}\n{}", text(&out.stderr));
    assert!(
        shown.contains("pitcrew/deps-npm — chore(deps): update leftpad-test to 1.3.0"),
        "{shown}"
    );
    assert!(
        shown.contains("| `calcutil` | `1.0.0` → `2.0.0` | **major** |"),
        "{shown}"
    );
    assert!(shown.contains("Dry run: nothing was changed."), "{shown}");

    // Only the asked ecosystem.
    let only: Vec<&str> = args.iter().copied().chain(["--ecosystem", "npm", "--json"]).collect();
    let out = pitcrew(root, &only);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["ecosystems"].as_array().unwrap().len(), 1, "{plan}");
    assert_eq!(plan["pulls"].as_array().unwrap().len(), 1, "{plan}");

    assert_eq!(snapshot(root), before, "the dry run changed the checkout");

    // Applying needs a repository (the checkout here is a plain directory): refused, unchanged.
    let apply: Vec<&str> = args.iter().copied().filter(|a| *a != "--dry-run").collect();
    let out = pitcrew(root, &apply);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(snapshot(root), before, "a refused chore changed the checkout");

    // A broken policy is refused with its line.
    std::fs::write(root.join(".github/pitcrew.toml"), "[chores.deps]\nmajor = \"yes\"\n").unwrap();
    let out = pitcrew(root, &args);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(".github/pitcrew.toml:2:"),
        "{}",
        text(&out.stderr)
    );
}

/// `pitcrew chore` applying on `root` against `registry`, in the local sandbox as the invoking
/// user (whose toolchain runs the refresh and the tests), with `extra` arguments.
fn apply_args(registry: &CargoRegistry, root: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "--set",
        &format!("chores.cargo_index={}", registry.index_url()),
        "--set",
        "sandbox.backend=local",
        "--set",
        "sandbox.local_user=self",
        "chore",
        "--repo",
        root.to_str().unwrap(),
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    args
}

/// A crate of the test registry's `calcutil` whose test checks the version it was built with.
fn cargo_checkout(registry: &CargoRegistry, test_version_prefix: &str) -> pitcrew_tests::repo::TestRepo {
    let cargo_config = format!(
        "[source.crates-io]\nreplace-with = \"test-registry\"\n\n[source.test-registry]\nregistry = \"sparse+{}\"\n",
        registry.index_url()
    );
    let lib = format!(
        "pub fn version() -> &'static str {{\n    calcutil::VERSION\n}}\n\n#[cfg(test)]\nmod tests {{\n    #[test]\n    \
         fn built_with_calcutil_1() {{\n        assert!(super::version().starts_with(\"{test_version_prefix}\"), \"{{}}\", \
         super::version());\n    }}\n}}\n"
    );
    let checkout = pitcrew_tests::repo::TestRepo::new(&[
        (
            "Cargo.toml",
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ncalcutil = \"~1.0.0\"\n",
        ),
        ("src/lib.rs", &lib),
        (".cargo/config.toml", &cargo_config),
        (".gitignore", "/target\n"),
    ])
    .unwrap();
    let out = Command::new("cargo")
        .args(["generate-lockfile"])
        .current_dir(checkout.path())
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    checkout.git(&["add", "-A"]).unwrap();
    checkout.git(&["commit", "-q", "-m", "lock"]).unwrap();
    checkout
}

#[test]
fn chore_makes_the_updates_on_a_new_branch_refreshes_the_lockfile_runs_the_tests_and_commits() {
    let registry = CargoRegistry::start();
    registry.publish("calcutil", "1.0.0", &lib("1.0.0"), &[]).unwrap();
    let checkout = cargo_checkout(&registry, "1.");
    let root = checkout.path();
    let git = |args: &[&str]| checkout.git(args).unwrap().trim().to_owned();
    let start = git(&["rev-parse", "HEAD"]);
    let main = git(&["branch", "--show-current"]);
    registry.publish("calcutil", "1.1.0", &lib("1.1.0"), &[]).unwrap();

    let args = apply_args(&registry, root, &["--json"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = pitcrew(root, &args);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let applied: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(applied["branch"], "pitcrew/deps", "{applied}");
    assert_eq!(applied["title"], "chore(deps): update calcutil to 1.1.0", "{applied}");
    assert_eq!(applied["tests"]["status"], "passed", "{applied}");
    assert_eq!(applied["tests"]["passed"], 1, "{applied}");
    assert_eq!(applied["error"], serde_json::Value::Null, "{applied}");

    // The commit on the new branch: the manifest's requirement and the lockfile, nothing the tests
    // left; the branch it started from is untouched.
    let commit = applied["commit"].as_str().unwrap();
    assert_eq!(git(&["rev-parse", "HEAD"]), commit);
    assert_eq!(git(&["branch", "--show-current"]), "pitcrew/deps");
    assert_eq!(git(&["rev-parse", &main]), start);
    let files = git(&["diff", "--name-only", &start, commit]);
    assert_eq!(files.lines().collect::<Vec<_>>(), ["Cargo.lock", "Cargo.toml"]);
    assert!(checkout.read("Cargo.toml").unwrap().contains("calcutil = \"~1.1.0\""));
    assert!(
        checkout
            .read("Cargo.lock")
            .unwrap()
            .contains("name = \"calcutil\"\nversion = \"1.1.0\""),
        "{}",
        checkout.read("Cargo.lock").unwrap()
    );
    assert!(git(&["status", "--porcelain"]).is_empty());

    // A dirty checkout is refused, as `pitcrew run` refuses one.
    checkout.write("src/lib.rs", "// edited\n").unwrap();
    let out = pitcrew(root, &args);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
}

#[test]
fn chore_says_when_the_updated_tests_fail_and_still_commits_the_branch() {
    let registry = CargoRegistry::start();
    registry.publish("calcutil", "1.0.0", &lib("1.0.0"), &[]).unwrap();
    // The project's test holds calcutil to 1.0: the update breaks it.
    let checkout = cargo_checkout(&registry, "1.0.");
    let root = checkout.path();
    registry.publish("calcutil", "1.1.0", &lib("1.1.0"), &[]).unwrap();
    let args = apply_args(&registry, root, &[]);
    let out = pitcrew(root, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let shown = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{shown}\n{}", text(&out.stderr));
    assert!(
        shown.contains("On the new branch pitcrew/deps: chore(deps): update calcutil to 1.1.0"),
        "{shown}"
    );
    assert!(
        shown.contains("Tests: failing: tests::built_with_calcutil_1"),
        "{shown}"
    );
    assert!(shown.contains("Committed "), "{shown}");
}
