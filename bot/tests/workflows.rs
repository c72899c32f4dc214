//! The project's GitHub files as GitHub reads them: `action.yml` and `.github/workflows/*.yml` parse,
//! have the keys GitHub requires, pin every third-party action to a full commit SHA with its tag in
//! a comment (GitHub's hardening guide), grant each job only the permissions it needs, and hold shell
//! that parses; the release's version gate is run as its job runs it.
#![expect(clippy::unwrap_used, reason = "a failing test should panic")]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn yaml(path: &str) -> Value {
    serde_saphyr::from_str(&read(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every workflow file of the project.
fn workflows() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(repo_root().join(".github/workflows"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".yml") || name.ends_with(".yaml"))
        .map(|name| format!(".github/workflows/{name}"))
        .collect();
    files.sort();
    files
}

fn is_hex_sha(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// What is wrong with one `uses:` line, if anything: a local action (`./…`) and a Docker image
/// are not pinned by SHA; every other must be `owner/repo[/path]@<40 hex> # <tag>`.
fn pin_problem(line: &str) -> Option<String> {
    let rest = line.trim_start().trim_start_matches("- ").trim_start();
    let value = rest.strip_prefix("uses:")?.trim();
    let (reference, comment) = match value.split_once('#') {
        Some((reference, comment)) => (reference.trim(), Some(comment.trim())),
        None => (value, None),
    };
    if reference.starts_with("./") || reference.starts_with("docker://") {
        return None;
    }
    let Some((action, version)) = reference.split_once('@') else {
        return Some(format!("{reference}: no version"));
    };
    if action.split('/').count() < 2 {
        return Some(format!("{reference}: not owner/repo"));
    }
    if !is_hex_sha(version) {
        return Some(format!("{reference}: not pinned to a full commit SHA"));
    }
    match comment {
        Some(tag) if !tag.is_empty() && !tag.contains(' ') => None,
        _ => Some(format!("{reference}: no tag comment (`# v1.2.3`) after the SHA")),
    }
}

#[test]
fn the_pin_check_tells_pinned_from_unpinned() {
    let sha = "3d3c42e5aac5ba805825da76410c181273ba90b1";
    assert_eq!(
        pin_problem(&format!("      - uses: actions/checkout@{sha} # v7.0.1")),
        None
    );
    assert_eq!(
        pin_problem(&format!("        uses: github/codeql-action/init@{sha} # v3.1.0")),
        None
    );
    assert_eq!(pin_problem("      - uses: ./"), None);
    assert_eq!(pin_problem("      - uses: docker://alpine:3"), None);
    assert_eq!(pin_problem("      - run: echo uses: x"), None);
    assert!(pin_problem("      - uses: actions/checkout@v4").is_some());
    assert!(pin_problem(&format!("      - uses: actions/checkout@{}", &sha[..12])).is_some());
    assert!(pin_problem(&format!("      - uses: actions/checkout@{sha}")).is_some());
    assert!(pin_problem(&format!("      - uses: actions/checkout@{}", sha.to_uppercase())).is_some());
    assert!(pin_problem("      - uses: actions/checkout").is_some());
}

#[test]
fn every_third_party_action_is_pinned_to_a_commit_with_its_tag() {
    let mut problems = Vec::new();
    let mut pinned = 0;
    for file in workflows() {
        for (number, line) in read(&file).lines().enumerate() {
            if !line.trim_start().trim_start_matches("- ").starts_with("uses:") {
                continue;
            }
            match pin_problem(line) {
                Some(problem) => problems.push(format!("{file}:{}: {problem}", number + 1)),
                None => pinned += 1,
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(pinned >= 10, "only {pinned} `uses:` lines found");
}

/// A map's keys, for messages.
fn keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .map(|map| map.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

#[test]
fn every_workflow_has_what_github_requires_and_least_permissions() {
    let files = workflows();
    assert_eq!(files, [".github/workflows/ci.yml", ".github/workflows/release.yml"]);
    for file in &files {
        let workflow = yaml(file);
        assert!(workflow["name"].is_string(), "{file}: no name");
        assert!(workflow["on"].is_object(), "{file}: no `on`: {:?}", keys(&workflow));
        // Read-only unless a job asks for more.
        assert_eq!(
            workflow["permissions"],
            serde_json::json!({"contents": "read"}),
            "{file}"
        );
        let jobs = workflow["jobs"]
            .as_object()
            .unwrap_or_else(|| panic!("{file}: no jobs"));
        assert!(!jobs.is_empty(), "{file}: no jobs");
        for (name, job) in jobs {
            assert!(job["runs-on"].is_string(), "{file}: job {name}: no runs-on");
            let steps = job["steps"]
                .as_array()
                .unwrap_or_else(|| panic!("{file}: job {name}: no steps"));
            assert!(!steps.is_empty(), "{file}: job {name}: no steps");
            for step in steps {
                assert!(
                    step["uses"].is_string() != step["run"].is_string(),
                    "{file}: job {name}: a step needs exactly one of `uses` and `run`: {step}"
                );
            }
            for need in job["needs"].as_array().into_iter().flatten() {
                assert!(
                    jobs.contains_key(need.as_str().unwrap()),
                    "{file}: job {name} needs {need}"
                );
            }
            if let Some(needs) = job["needs"].as_str() {
                assert!(jobs.contains_key(needs), "{file}: job {name} needs {needs}");
            }
        }
    }
}

#[test]
fn ci_runs_what_the_ci_script_checks_on_pushes_and_pull_requests() {
    let ci = yaml(".github/workflows/ci.yml");
    assert_eq!(ci["on"]["push"]["branches"], serde_json::json!(["main"]));
    assert!(ci["on"].as_object().unwrap().contains_key("pull_request"));
    let steps = ci["jobs"]["ci"]["steps"].as_array().unwrap();
    let runs: Vec<&str> = steps.iter().filter_map(|s| s["run"].as_str()).collect();
    assert_eq!(runs, [".ci/run"]);
    assert!(repo_root().join(".ci/run").is_file());
    // The suite's reference data is checked out beside the project, where `scripts/test` looks.
    let paths: Vec<&str> = steps.iter().filter_map(|s| s["with"]["path"].as_str()).collect();
    assert_eq!(paths, ["pitcrew", "shared"]);
    assert!(read("scripts/test").contains("../shared/fixtures"));
}

#[test]
fn the_release_builds_both_platforms_from_targets_the_dockerfile_has() {
    let release = yaml(".github/workflows/release.yml");
    assert_eq!(
        release["on"]["push"]["tags"],
        serde_json::json!(["v[0-9]+.[0-9]+.[0-9]+"])
    );
    let jobs = &release["jobs"];
    let arches: Vec<&str> = jobs["build"]["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["arch"].as_str().unwrap())
        .collect();
    assert_eq!(arches, ["amd64", "arm64"]);
    let dockerfile = read("Dockerfile");
    let text = read(".github/workflows/release.yml");
    for target in ["static", "runtime-prebuilt"] {
        assert!(
            dockerfile.contains(&format!(" AS {target}\n")),
            "the Dockerfile has no stage {target}"
        );
        assert!(
            text.contains(&format!("--target {target} ")) || text.contains(&format!("target: {target}\n")),
            "the release does not build {target}"
        );
    }
    // Who may write what: packages for the jobs that push images, contents for the one that
    // publishes the release and moves the major tag; nothing else writes.
    for (name, job) in jobs.as_object().unwrap() {
        let permissions = &job["permissions"];
        let expected = match name.as_str() {
            "build" | "image" => serde_json::json!({"contents": "read", "packages": "write"}),
            "release" => serde_json::json!({"contents": "write"}),
            _ => Value::Null,
        };
        assert_eq!(permissions, &expected, "job {name}");
    }
    assert!(text.contains("SHA256SUMS"));
    assert!(text.contains("-t \"$IMAGE:$major\""));
    assert!(text.contains("gh release create \"$GITHUB_REF_NAME\" dist/* --verify-tag"));
    assert!(text.contains("git/refs/tags/$major\" -f sha=\"$GITHUB_SHA\" -F force=true"));
}

/// Every `run:` block of a file, with GitHub's `${{ … }}` expressions replaced as the runner would
/// leave a word.
fn run_blocks(file: &str) -> Vec<(String, String)> {
    let workflow = yaml(file);
    let mut blocks = Vec::new();
    for (name, job) in workflow["jobs"].as_object().unwrap() {
        for step in job["steps"].as_array().unwrap() {
            if let Some(run) = step["run"].as_str() {
                let mut script = String::new();
                let mut rest = run;
                while let Some(start) = rest.find("${{") {
                    script.push_str(&rest[..start]);
                    let end = rest[start..].find("}}").unwrap() + start + 2;
                    script.push_str("EXPR");
                    rest = &rest[end..];
                }
                script.push_str(rest);
                blocks.push((format!("{file}: job {name}"), script));
            }
        }
    }
    blocks
}

#[test]
fn every_run_block_is_shell_that_parses() {
    for file in workflows() {
        for (place, script) in run_blocks(&file) {
            let out = Command::new("bash").args(["-n", "-c", &script]).output().unwrap();
            assert!(
                out.status.success(),
                "{place}: {}\n{script}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Runs the release's version gate (the `check` job's script) in the repository as the runner
/// would, for the tag `tag` of `owner`: its outputs, or its error annotation.
fn release_gate(tag: &str, owner: &str) -> Result<String, String> {
    let release = yaml(".github/workflows/release.yml");
    let step = release["jobs"]["check"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["id"] == "version")
        .unwrap()
        .clone();
    let out_dir = tempfile::tempdir().unwrap();
    let outputs = out_dir.path().join("output");
    std::fs::write(&outputs, "").unwrap();
    let out = Command::new("bash")
        .args(["-e", "-c", step["run"].as_str().unwrap()])
        .current_dir(repo_root())
        .env("GITHUB_REF_NAME", tag)
        .env("GITHUB_OUTPUT", &outputs)
        .env("OWNER", owner)
        .env("IMAGE_NAME", release["env"]["IMAGE_NAME"].as_str().unwrap())
        .output()
        .unwrap();
    if out.status.success() {
        Ok(std::fs::read_to_string(&outputs).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

#[test]
fn the_action_runs_the_released_image_of_its_own_version() {
    let action = yaml("action.yml");
    assert_eq!(action["runs"]["using"], "docker");
    assert_eq!(action["runs"]["args"], serde_json::json!(["action"]));
    let image = action["runs"]["image"].as_str().unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(image, format!("docker://ghcr.io/pitcrew/pitcrew:{version}"));

    // The release refuses a tag that is not the crate's version, and an owner whose image
    // action.yml does not name (a fork must change action.yml first).
    let outputs = release_gate(&format!("v{version}"), "Pitcrew").unwrap();
    assert_eq!(outputs, format!("version={version}\nimage=ghcr.io/pitcrew/pitcrew\n"));
    let wrong_version = release_gate("v99.0.0", "pitcrew").unwrap_err();
    assert!(
        wrong_version.contains("the tag says 99.0.0, Cargo.toml says"),
        "{wrong_version}"
    );
    let fork = release_gate(&format!("v{version}"), "someone-else").unwrap_err();
    assert!(
        fork.contains(&format!(
            "action.yml must run docker://ghcr.io/someone-else/pitcrew:{version}"
        )),
        "{fork}"
    );
}

#[test]
fn the_release_moves_the_major_tag_with_requests_githubs_description_has() {
    use pitcrew_tests::fake_github::Spec;
    // What `gh api` sends for the release's last step (`-f` a string, `-F force=true` a boolean),
    // for the repository `acme/pitcrew` and the major tag `v0`.
    let sha = "3d3c42e5aac5ba805825da76410c181273ba90b1";
    let requests = [
        ("GET", "/repos/acme/pitcrew/git/ref/tags/v0", None),
        (
            "PATCH",
            "/repos/acme/pitcrew/git/refs/tags/v0",
            Some(serde_json::json!({"sha": sha, "force": true})),
        ),
        (
            "POST",
            "/repos/acme/pitcrew/git/refs",
            Some(serde_json::json!({"ref": "refs/tags/v0", "sha": sha})),
        ),
    ];
    let text = read(".github/workflows/release.yml");
    for (method, path, body) in requests {
        let (spec, operation) = Spec::route_github(method, path).unwrap();
        let bytes = body.map(|b| serde_json::to_vec(&b).unwrap());
        let errors = spec.validate_request_closed(&operation, &[], bytes.as_deref());
        assert!(errors.is_empty(), "{method} {path}: {errors:?}");
        let template = path
            .replace("acme/pitcrew", "$GITHUB_REPOSITORY")
            .replace("v0", "$major");
        assert!(
            text.contains(&template[1..]),
            "the release does not send {method} {template}"
        );
    }
}

/// zizmor, the static analyser for GitHub Actions (installed by `scripts/test`), on the project's
/// workflows and action: no finding (offline audits: unpinned actions, excessive permissions,
/// template injection, credentials left in checkouts, …).
#[test]
#[expect(clippy::print_stderr, reason = "a skipped test must say so")]
fn zizmor_finds_nothing_in_the_workflows_and_the_action() {
    let required = std::env::var_os("PITCREW_REQUIRE_ZIZMOR").is_some_and(|v| v == "1");
    let out = match Command::new("zizmor")
        .args(["--offline", "--no-progress", ".github/workflows/", "action.yml"])
        .current_dir(repo_root())
        .output()
    {
        Ok(out) => out,
        Err(error) => {
            assert!(!required, "PITCREW_REQUIRE_ZIZMOR=1, but zizmor could not run: {error}");
            eprintln!("SKIPPED: zizmor is not installed ({error}); `scripts/test --install-only` installs it");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "zizmor: {}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("No findings"), "{stdout}");
}
