//! A small project the end-to-end tests fix through the bot, and the webhook payloads that ask
//! for it: `calc.sh` whose `add` subtracts, a shell test suite printing libtest's format (run in
//! the busybox sandbox), a pull request #N that does not touch it, and deliveries built from real
//! recorded payloads pointed at the local repository: comments (triagebot's `issue_comment`) and
//! CI failures (octokit's `workflow_run` and `check_run` examples).

use serde_json::{Value, json};

use crate::fake_github::openapi::fixtures_root;
use crate::fake_github::{FakeGithub, Issue, Permission, Repo};
use crate::git_server::GitServer;

/// The code under test: `add` subtracts.
pub const CALC: &str = "add() {\n    echo $(($1 - $2))\n}\n";

/// The project's tests, in libtest's output format.
pub const TESTS: &str = r#"#!/bin/sh
. ./calc.sh
pass=0
fail=0
failed=""
check() {
    if [ "$2" = "$3" ]; then
        echo "test $1 ... ok"
        pass=$((pass + 1))
    else
        echo "test $1 ... FAILED"
        fail=$((fail + 1))
        failed="$failed $1"
    fi
}
echo
echo "running 2 tests"
check adds_two_numbers "$(add 2 3)" 5
check adds_zero "$(add 4 0)" 4
echo
if [ "$fail" -gt 0 ]; then
    echo "failures:"
    for name in $failed; do echo "    $name"; done
    echo
    echo "test result: FAILED. $pass passed; $fail failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s"
    exit 101
fi
echo "test result: ok. $pass passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s"
"#;

/// The repository's configuration: the test command.
pub const REPO_CONFIG: &str = "[agent]\ntest_command = \"sh run-tests.sh\"\n";

/// The pull request's commits.
#[derive(Debug, Clone)]
pub struct CalcPull {
    pub base_sha: String,
    pub head_sha: String,
    /// The pull request's branch (`docs`).
    pub branch: String,
}

/// Makes `repo` on the git server (`main` with the project and `repo_config` as its
/// `.github/pitcrew.toml`) and registers it with the fake GitHub; `alice` gets write access.
/// Returns `main`'s commit.
pub fn calc_repo(git: &GitServer, github: &FakeGithub, repo: &str, repo_config: &str) -> std::io::Result<String> {
    calc_repo_with_files(git, github, repo, repo_config, &[])
}

/// [`calc_repo`] with `files` on `main` besides the project's.
pub fn calc_repo_with_files(
    git: &GitServer,
    github: &FakeGithub,
    repo: &str,
    repo_config: &str,
    files: &[(&str, &str)],
) -> std::io::Result<String> {
    let mut all = vec![
        ("calc.sh", CALC),
        ("run-tests.sh", TESTS),
        (".github/pitcrew.toml", repo_config),
    ];
    all.extend_from_slice(files);
    let base_sha = git.create_repo(repo, &all)?;
    github.add_repo(
        Repo::new(repo)
            .default_branch("main")
            .clone_url(&git.url(repo))
            .git_dir(git.repo_path(repo)),
    );
    github.set_permission(repo, "alice", Permission::Write);
    Ok(base_sha)
}

/// Makes `repo` on the git server (`main` with the project) with pull request `number` on branch
/// `docs` (a README change), and registers both with the fake GitHub; `alice` gets write access.
pub fn calc_pull_request(git: &GitServer, github: &FakeGithub, repo: &str, number: u64) -> std::io::Result<CalcPull> {
    calc_pull_request_with(git, github, repo, number, REPO_CONFIG)
}

/// [`calc_pull_request`] with `repo_config` as the repository's configuration.
pub fn calc_pull_request_with(
    git: &GitServer,
    github: &FakeGithub,
    repo: &str,
    number: u64,
    repo_config: &str,
) -> std::io::Result<CalcPull> {
    calc_pull_request_with_files(git, github, repo, number, repo_config, &[])
}

/// [`calc_pull_request_with`] with `files` on `main` (and so in the pull request) besides the
/// project's.
pub fn calc_pull_request_with_files(
    git: &GitServer,
    github: &FakeGithub,
    repo: &str,
    number: u64,
    repo_config: &str,
    files: &[(&str, &str)],
) -> std::io::Result<CalcPull> {
    let base_sha = calc_repo_with_files(git, github, repo, repo_config, files)?;
    let head_sha = git.create_pull_head(
        repo,
        number,
        "main",
        &[("README.md", "calc: shell arithmetic\n")],
        "docs",
    )?;
    // A same-repository pull request: its head is also a branch.
    let status = std::process::Command::new("git")
        .args(["update-ref", "refs/heads/docs", &head_sha])
        .current_dir(git.repo_path(repo))
        .status()?;
    if !status.success() {
        return Err(std::io::Error::other("git update-ref failed"));
    }
    github.add_issue(
        repo,
        Issue::pull_request(number, "Document calc", ("docs", &head_sha), ("main", &base_sha)).user("bob"),
    );
    Ok(CalcPull {
        base_sha,
        head_sha,
        branch: "docs".to_owned(),
    })
}

/// Who comments, and what.
#[derive(Debug, Clone)]
pub struct Comment<'a> {
    pub id: u64,
    pub login: &'a str,
    pub user_id: u64,
    pub association: &'a str,
    pub body: &'a str,
}

/// The real pull-request comment delivery (triagebot's recording) rewritten to be `comment` on
/// pull request `number` of `repo` at `clone_url`; with `installation` for an App's delivery,
/// without it for an Actions event payload.
pub fn comment_payload(
    repo: &str,
    clone_url: &str,
    number: u64,
    comment: &Comment<'_>,
    installation: Option<u64>,
) -> Value {
    let path =
        fixtures_root().join("webhooks/issue_comment/rust-lang-triagebot/07-webhook-issue111_comment_created.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let recording: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut payload = recording["payload"].clone();
    let (owner, name) = repo.split_once('/').unwrap_or((repo, repo));
    payload["repository"]["full_name"] = json!(repo);
    payload["repository"]["name"] = json!(name);
    payload["repository"]["owner"]["login"] = json!(owner);
    payload["repository"]["clone_url"] = json!(clone_url);
    payload["repository"]["default_branch"] = json!("main");
    payload["issue"]["number"] = json!(number);
    payload["comment"]["id"] = json!(comment.id);
    payload["comment"]["body"] = json!(comment.body);
    payload["comment"]["user"]["login"] = json!(comment.login);
    payload["comment"]["user"]["id"] = json!(comment.user_id);
    payload["comment"]["author_association"] = json!(comment.association);
    payload["sender"]["login"] = json!(comment.login);
    match installation {
        Some(id) => payload["installation"] = json!({ "id": id }),
        None => {
            if let Some(object) = payload.as_object_mut() {
                object.remove("installation");
            }
        }
    }
    payload
}

/// A real example delivery of `event` (octokit's `file` under `webhooks/<event>/`) pointed at
/// `repo` at `clone_url`, with `installation` for an App's delivery.
pub(crate) fn example_payload(
    event: &str,
    file: &str,
    repo: &str,
    clone_url: &str,
    installation: Option<u64>,
) -> Value {
    let path = fixtures_root().join(format!("webhooks/{event}/{file}"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut payload: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (owner, name) = repo.split_once('/').unwrap_or((repo, repo));
    payload["repository"]["full_name"] = json!(repo);
    payload["repository"]["name"] = json!(name);
    payload["repository"]["owner"]["login"] = json!(owner);
    payload["repository"]["clone_url"] = json!(clone_url);
    payload["repository"]["default_branch"] = json!("main");
    match installation {
        Some(id) => payload["installation"] = json!({ "id": id }),
        None => {
            if let Some(object) = payload.as_object_mut() {
                object.remove("installation");
            }
        }
    }
    payload
}

/// An issue whose body was edited, by whom and from what.
pub struct IssueEdit<'a> {
    pub number: u64,
    /// Who opened the issue.
    pub author: &'a str,
    /// Who edited it.
    pub editor: &'a str,
    pub before: &'a str,
    pub after: &'a str,
}

/// GitHub's example `issues.edited` delivery (octokit's), made `edit` of issue `edit.number` of
/// `repo`.
pub fn issue_edited_payload(repo: &str, clone_url: &str, edit: &IssueEdit<'_>, installation: Option<u64>) -> Value {
    let mut payload = example_payload("issues", "edited.payload.json", repo, clone_url, installation);
    payload["issue"]["number"] = json!(edit.number);
    payload["issue"]["body"] = json!(edit.after);
    payload["issue"]["user"]["login"] = json!(edit.author);
    payload["issue"]["user"]["type"] = json!(if edit.author.ends_with("[bot]") { "Bot" } else { "User" });
    payload["changes"] = json!({ "body": { "from": edit.before } });
    payload["sender"]["login"] = json!(edit.editor);
    payload
}

/// GitHub's example `workflow_run.completed` delivery (octokit's), made a failure of run `run_id`
/// of workflow `CI` on `head_sha` for pull request `number` of `repo`.
pub fn workflow_run_payload(
    repo: &str,
    clone_url: &str,
    run_id: u64,
    head_sha: &str,
    number: u64,
    installation: Option<u64>,
) -> Value {
    let mut payload = example_payload(
        "workflow_run",
        "completed.with-pull-requests.payload.json",
        repo,
        clone_url,
        installation,
    );
    let repo_id = payload["repository"]["id"].clone();
    let run = &mut payload["workflow_run"];
    run["id"] = json!(run_id);
    run["name"] = json!("CI");
    run["conclusion"] = json!("failure");
    run["head_sha"] = json!(head_sha);
    run["pull_requests"][0]["number"] = json!(number);
    run["pull_requests"][0]["head"]["sha"] = json!(head_sha);
    run["pull_requests"][0]["base"]["repo"]["id"] = repo_id;
    payload
}

/// GitHub's example `check_run.completed` delivery (octokit's, a GitHub Actions job), made the
/// failure of job `job_id` named `name` on `head_sha` for pull request `number` of `repo`.
pub fn check_run_payload(
    repo: &str,
    clone_url: &str,
    job_id: u64,
    name: &str,
    head_sha: &str,
    number: u64,
    installation: Option<u64>,
) -> Value {
    let mut payload = example_payload("check_run", "completed.1.payload.json", repo, clone_url, installation);
    let repo_id = payload["repository"]["id"].clone();
    let run = &mut payload["check_run"];
    run["id"] = json!(job_id);
    run["name"] = json!(name);
    run["conclusion"] = json!("failure");
    run["head_sha"] = json!(head_sha);
    run["pull_requests"][0]["number"] = json!(number);
    run["pull_requests"][0]["base"]["repo"]["id"] = repo_id;
    payload
}

/// A pull request event: what happened to which pull request.
#[derive(Debug, Clone)]
pub struct PullEvent<'a> {
    /// `opened`, `reopened`, `ready_for_review` or `synchronize`.
    pub action: &'a str,
    pub number: u64,
    pub head_sha: &'a str,
    pub head_ref: &'a str,
    pub base_ref: &'a str,
    /// Who opened the pull request (`name[bot]` for a bot).
    pub author: &'a str,
    /// Who did it (pushed, opened).
    pub sender: &'a str,
    pub draft: bool,
    pub labels: &'a [&'a str],
    /// The head before a `synchronize`.
    pub before: Option<&'a str>,
}

/// GitHub's example `pull_request` delivery of `event.action` (octokit's), made `event` on
/// `repo` at `clone_url`.
pub fn pull_request_payload(repo: &str, clone_url: &str, event: &PullEvent<'_>, installation: Option<u64>) -> Value {
    let file = format!("{}.payload.json", event.action);
    let mut payload = example_payload("pull_request", &file, repo, clone_url, installation);
    let bot = |login: &str| if login.ends_with("[bot]") { "Bot" } else { "User" };
    let pr = &mut payload["pull_request"];
    pr["number"] = json!(event.number);
    pr["draft"] = json!(event.draft);
    pr["head"]["sha"] = json!(event.head_sha);
    pr["head"]["ref"] = json!(event.head_ref);
    pr["base"]["ref"] = json!(event.base_ref);
    pr["user"]["login"] = json!(event.author);
    pr["user"]["type"] = json!(bot(event.author));
    pr["labels"] = json!(
        event
            .labels
            .iter()
            .map(|name| json!({"name": name, "color": "ededed"}))
            .collect::<Vec<_>>()
    );
    payload["sender"]["login"] = json!(event.sender);
    payload["sender"]["type"] = json!(bot(event.sender));
    if let Some(before) = event.before {
        payload["before"] = json!(before);
        payload["after"] = json!(event.head_sha);
    }
    payload
}
