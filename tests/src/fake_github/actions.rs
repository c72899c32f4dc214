//! The fake GitHub's check runs of a commit as every app sees them (the bot's own, other apps',
//! and one per GitHub Actions job), the check suites that hold them (one per workflow run, one per
//! other app and commit), and GitHub Actions itself: workflow runs, their jobs (every
//! attempt), job re-runs and job logs. GitHub serves a job log by redirecting to a short-lived
//! signed URL on its storage; the fake's storage is `/_blobs/job-logs/{job_id}?sig=…` on its own
//! address, outside the API (and so outside the description's validation).
//!
//! These operations are not in the description subset: they are routed by the full description,
//! and their example objects (`workflow-run`, `job`, `check-suite`) come from it too.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::apps::app_json;
use super::checks::check_run_json;
use super::context::{Ctx, Payload, Reply, paginate};
use super::repos::{replace_in_strings, repo_json, user_json};
use super::state::{
    ActionsJob, CheckRun, ExternalCheckRun, GITHUB_ACTIONS_APP_ID, GITHUB_ACTIONS_APP_SLUG, GithubState, JobRerun,
    LogDownload, Repo, WorkflowRun,
};
use super::wire::{self, description_example};

/// The path prefix of the fake's log storage.
pub(crate) const LOG_BLOB_PREFIX: &str = "/_blobs/job-logs/";

/// Answers the operations this file owns; `None` for the others.
pub(crate) fn handle(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Option<Reply> {
    Some(match ctx.op.operation_id {
        "checks/list-for-ref" => list_check_runs_for_ref(state, repo, ctx),
        "checks/list-suites-for-ref" => list_suites_for_ref(state, repo, ctx),
        "checks/get-suite" => {
            let id = ctx.number("check_suite_id");
            let mut shas: Vec<&str> = state
                .workflow_runs
                .values()
                .filter(|r| r.repo == repo.full_name)
                .map(|r| r.head_sha.as_str())
                .chain(
                    state
                        .check_runs
                        .values()
                        .filter(|r| r.repo == repo.full_name)
                        .map(|r| r.head_sha.as_str()),
                )
                .chain(
                    state
                        .external_check_runs
                        .values()
                        .filter(|r| r.repo == repo.full_name)
                        .map(|r| r.head_sha.as_str()),
                )
                .collect();
            shas.sort_unstable();
            shas.dedup();
            let found = shas
                .into_iter()
                .flat_map(|sha| suites_of(state, repo, sha, ctx))
                .find(|suite| suite.id == id);
            match found {
                Some(suite) => Reply::json(200, suite.json),
                None => Reply::not_found(ctx),
            }
        }
        "actions/list-workflow-runs-for-repo" => list_workflow_runs(state, repo, ctx),
        "actions/list-jobs-for-workflow-run" => list_jobs(state, repo, ctx),
        "actions/download-job-logs-for-workflow-run" => redirect_to_log(state, repo, ctx),
        "actions/re-run-job-for-workflow-run" => {
            let id = ctx.number("job_id");
            if state.actions_jobs.get(&id).is_none_or(|j| j.repo != repo.full_name) {
                return Some(Reply::not_found(ctx));
            }
            state.job_reruns.push(JobRerun {
                repo: repo.full_name.clone(),
                job_id: id,
                body: ctx.body.clone(),
            });
            Reply::json(201, json!({}))
        }
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Check runs of a commit

/// One check run of a listing, whichever app made it.
struct Listed {
    id: u64,
    app_id: u64,
    suite_id: u64,
    name: String,
    status: String,
    json: Value,
}

/// `GET …/commits/{ref}/check-runs`: the bot's runs, the Actions jobs' and other apps', filtered
/// by `check_name`, `status` and `app_id`; `filter=latest` (the default) keeps the newest run of
/// each name in each check suite, as a re-run replaces the run it re-ran; oldest first.
fn list_check_runs_for_ref(state: &GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let reference = ctx.param("ref");
    // A branch name stands for its head commit.
    let sha = state
        .branches
        .get(&(repo.full_name.clone(), reference.to_owned()))
        .map_or(reference, String::as_str);
    let mut listed = Vec::new();
    for run in state
        .check_runs
        .values()
        .filter(|r| r.repo == repo.full_name && r.head_sha == sha)
    {
        let json = check_run_json(run, repo, ctx);
        listed.push(Listed {
            id: run.id,
            app_id: ctx.cfg.app_id,
            suite_id: json["check_suite"]["id"].as_u64().unwrap_or(0),
            name: run.name.clone(),
            status: run.status.clone(),
            json,
        });
    }
    for job in state
        .actions_jobs
        .values()
        .filter(|j| j.repo == repo.full_name && j.head_sha == sha)
    {
        let suite_id = state.workflow_runs.get(&job.run_id).map_or(0, |r| r.check_suite_id);
        listed.push(Listed {
            id: job.id,
            app_id: GITHUB_ACTIONS_APP_ID,
            suite_id,
            name: job.name.clone(),
            status: job.status.clone(),
            json: job_check_run_json(job, suite_id, repo, ctx),
        });
    }
    for run in state
        .external_check_runs
        .values()
        .filter(|r| r.repo == repo.full_name && r.head_sha == sha)
    {
        let json = external_check_run_json(run, repo, ctx);
        listed.push(Listed {
            id: run.id,
            app_id: run.app_id,
            suite_id: json["check_suite"]["id"].as_u64().unwrap_or(0),
            name: run.name.clone(),
            status: run.status.clone(),
            json,
        });
    }
    let app_id = ctx.query("app_id").and_then(|id| id.parse::<u64>().ok());
    listed.retain(|l| {
        ctx.query("check_name").is_none_or(|name| l.name == name)
            && ctx.query("status").is_none_or(|status| l.status == status)
            && app_id.is_none_or(|id| l.app_id == id)
    });
    if ctx.query("filter") != Some("all") {
        let mut newest: BTreeMap<(u64, u64, &str), u64> = BTreeMap::new();
        for l in &listed {
            let id = newest.entry((l.app_id, l.suite_id, l.name.as_str())).or_insert(l.id);
            *id = (*id).max(l.id);
        }
        let keep: Vec<u64> = newest.into_values().collect();
        listed.retain(|l| keep.contains(&l.id));
    }
    listed.sort_by_key(|l| l.id);
    let total = listed.len();
    let (page, headers) = paginate(listed.into_iter().map(|l| l.json).collect(), ctx);
    Reply {
        headers,
        ..Reply::json(200, json!({"total_count": total, "check_runs": page}))
    }
}

// ---------------------------------------------------------------------------------------------
// Check suites of a commit

/// One check suite of a commit, whichever app's.
struct Suite {
    id: u64,
    app_id: u64,
    /// The names of its check runs.
    names: Vec<String>,
    json: Value,
}

/// A suite's conclusion from its runs': the worst one (a failure outweighs everything).
fn fold_conclusions<'a>(conclusions: impl Iterator<Item = Option<&'a str>>) -> Option<String> {
    const WORST_FIRST: [&str; 9] = [
        "failure",
        "startup_failure",
        "timed_out",
        "cancelled",
        "action_required",
        "stale",
        "neutral",
        "skipped",
        "success",
    ];
    let conclusions: Vec<&str> = conclusions.flatten().collect();
    WORST_FIRST
        .iter()
        .find(|c| conclusions.contains(c))
        .map(|c| (*c).to_owned())
}

/// The check suites on `sha`: one per workflow run (GitHub Actions'), one for the bot's own check
/// runs, one per other app with check runs; by id.
fn suites_of(state: &GithubState, repo: &Repo, sha: &str, ctx: &Ctx<'_>) -> Vec<Suite> {
    let mut suites = Vec::new();
    let pulls_of = |branch: &str| -> Vec<u64> { state.open_pulls_from(&repo.full_name, branch) };
    // Some branch for a suite that has none of its own: a workflow run's on that commit.
    let branch_of_sha = state
        .workflow_runs
        .values()
        .find(|r| r.repo == repo.full_name && r.head_sha == sha)
        .map(|r| r.head_branch.clone());
    for run in state
        .workflow_runs
        .values()
        .filter(|r| r.repo == repo.full_name && r.head_sha == sha)
    {
        let jobs = state.jobs_of_run(run.id);
        let latest = jobs.iter().map(|j| j.run_attempt).max().unwrap_or(1);
        let names: Vec<String> = jobs
            .iter()
            .filter(|j| j.run_attempt == latest)
            .map(|j| j.name.clone())
            .collect();
        let app = other_app_json(
            GITHUB_ACTIONS_APP_ID,
            GITHUB_ACTIONS_APP_SLUG,
            "GitHub Actions",
            "github",
            ctx,
        );
        let mut json = check_suite_json(
            state,
            repo,
            ctx,
            SuiteFields {
                id: run.check_suite_id,
                sha,
                branch: Some(&run.head_branch),
                status: &run.status,
                conclusion: run.conclusion.as_deref(),
                pulls: &run.pull_requests,
                runs: names.len(),
                app,
            },
        );
        json["created_at"] = json!(run.created_at);
        json["updated_at"] = json!(run.created_at);
        suites.push(Suite {
            id: run.check_suite_id,
            app_id: GITHUB_ACTIONS_APP_ID,
            names,
            json,
        });
    }
    let own: Vec<&CheckRun> = state
        .check_runs
        .values()
        .filter(|r| r.repo == repo.full_name && r.head_sha == sha)
        .collect();
    if !own.is_empty() {
        // The id the bot's check runs name as their suite.
        let id = check_run_json(own[0], repo, ctx)["check_suite"]["id"]
            .as_u64()
            .unwrap_or(0);
        let completed = own.iter().all(|r| r.status == "completed");
        let pulls = branch_of_sha.as_deref().map(pulls_of).unwrap_or_default();
        let json = check_suite_json(
            state,
            repo,
            ctx,
            SuiteFields {
                id,
                sha,
                branch: branch_of_sha.as_deref(),
                status: if completed { "completed" } else { "in_progress" },
                conclusion: if completed {
                    fold_conclusions(own.iter().map(|r| r.conclusion.as_deref()))
                } else {
                    None
                }
                .as_deref(),
                pulls: &pulls,
                runs: own.len(),
                app: app_json(ctx),
            },
        );
        suites.push(Suite {
            id,
            app_id: ctx.cfg.app_id,
            names: own.iter().map(|r| r.name.clone()).collect(),
            json,
        });
    }
    let mut by_app: BTreeMap<(u64, &str), Vec<&ExternalCheckRun>> = BTreeMap::new();
    for run in state
        .external_check_runs
        .values()
        .filter(|r| r.repo == repo.full_name && r.head_sha == sha)
    {
        by_app.entry((run.app_id, run.app_slug.as_str())).or_default().push(run);
    }
    for ((app_id, slug), runs) in by_app {
        let id = wire::stable_id(&format!("{}@{sha}@{slug}", repo.full_name));
        let completed = runs.iter().all(|r| r.status == "completed");
        let pulls = branch_of_sha.as_deref().map(pulls_of).unwrap_or_default();
        let json = check_suite_json(
            state,
            repo,
            ctx,
            SuiteFields {
                id,
                sha,
                branch: branch_of_sha.as_deref(),
                status: if completed { "completed" } else { "in_progress" },
                conclusion: if completed {
                    fold_conclusions(runs.iter().map(|r| r.conclusion.as_deref()))
                } else {
                    None
                }
                .as_deref(),
                pulls: &pulls,
                runs: runs.len(),
                app: other_app_json(app_id, slug, slug, repo.owner(), ctx),
            },
        );
        suites.push(Suite {
            id,
            app_id,
            names: runs.iter().map(|r| r.name.clone()).collect(),
            json,
        });
    }
    suites.sort_by_key(|s| s.id);
    suites
}

/// What a check suite object is made of.
struct SuiteFields<'a> {
    id: u64,
    sha: &'a str,
    branch: Option<&'a str>,
    status: &'a str,
    conclusion: Option<&'a str>,
    pulls: &'a [u64],
    runs: usize,
    app: Value,
}

fn check_suite_json(state: &GithubState, repo: &Repo, ctx: &Ctx<'_>, suite: SuiteFields<'_>) -> Value {
    let mut body = description_example("check-suite");
    let repo_api = ctx.api(&format!("/repos/{}", repo.full_name));
    let url = format!("{repo_api}/check-suites/{}", suite.id);
    body["id"] = json!(suite.id);
    body["node_id"] = json!(format!("CS_fake{}", suite.id));
    body["head_branch"] = json!(suite.branch);
    body["head_sha"] = json!(suite.sha);
    body["before"] = Value::Null;
    body["after"] = json!(suite.sha);
    body["status"] = json!(suite.status);
    body["conclusion"] = json!(suite.conclusion);
    body["url"] = json!(url);
    body["check_runs_url"] = json!(format!("{url}/check-runs"));
    body["latest_check_runs_count"] = json!(suite.runs);
    body["app"] = suite.app;
    body["head_commit"]["id"] = json!(suite.sha);
    body["head_commit"]["tree_id"] = json!(suite.sha);
    body["repository"] = repo_json(repo, ctx);
    // Their head and base as a workflow run lists them.
    let run = WorkflowRun::new(0, "", suite.sha).head_branch(suite.branch.unwrap_or(""));
    body["pull_requests"] = suite
        .pulls
        .iter()
        .map(|n| pull_minimal_json(state, *n, &run, repo, ctx))
        .collect();
    let now = wire::now_rfc3339();
    body["created_at"] = json!(now);
    body["updated_at"] = json!(now);
    body
}

/// `GET …/commits/{ref}/check-suites`: every app's suites on the commit (a branch name stands for
/// its head), filtered by `app_id` and `check_name` (suites with a run of that name), by id.
fn list_suites_for_ref(state: &GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let reference = ctx.param("ref");
    let sha = state
        .branch_head(&repo.full_name, reference)
        .unwrap_or_else(|| reference.to_owned());
    let app_id = ctx.query("app_id").and_then(|id| id.parse::<u64>().ok());
    let suites: Vec<Value> = suites_of(state, repo, &sha, ctx)
        .into_iter()
        .filter(|s| app_id.is_none_or(|id| s.app_id == id))
        .filter(|s| {
            ctx.query("check_name")
                .is_none_or(|name| s.names.iter().any(|n| n == name))
        })
        .map(|s| s.json)
        .collect();
    let total = suites.len();
    let (page, headers) = paginate(suites, ctx);
    Reply {
        headers,
        ..Reply::json(200, json!({"total_count": total, "check_suites": page}))
    }
}

/// App `slug`'s object, shaped like the bot's own.
fn other_app_json(id: u64, slug: &str, name: &str, owner: &str, ctx: &Ctx<'_>) -> Value {
    let mut app = app_json(ctx);
    app["id"] = json!(id);
    app["slug"] = json!(slug);
    app["node_id"] = json!(format!("A_fake{id}"));
    app["client_id"] = json!(format!("Iv1.fake{id}"));
    app["name"] = json!(name);
    app["owner"] = user_json(owner, ctx);
    app["html_url"] = json!(format!("https://github.com/apps/{slug}"));
    app["external_url"] = json!(format!("https://github.com/apps/{slug}"));
    app
}

/// A check run for the state's fields, through the same builder as the bot's own.
fn check_run_like(
    id: u64,
    name: &str,
    head_sha: &str,
    status: &str,
    conclusion: Option<&str>,
    details_url: Option<String>,
) -> CheckRun {
    CheckRun {
        id,
        repo: String::new(),
        name: name.to_owned(),
        head_sha: head_sha.to_owned(),
        status: status.to_owned(),
        conclusion: conclusion.map(str::to_owned),
        started_at: Some(wire::now_rfc3339()),
        completed_at: (status == "completed").then(wire::now_rfc3339),
        details_url,
        external_id: None,
        output: json!({}),
        annotations: Vec::new(),
        history: Vec::new(),
    }
}

/// The check run GitHub Actions keeps for `job`: same id, name and outcome, no output texts.
fn job_check_run_json(job: &ActionsJob, suite_id: u64, repo: &Repo, ctx: &Ctx<'_>) -> Value {
    let url = job_html_url(job, repo);
    let mut run = check_run_like(
        job.id,
        &job.name,
        &job.head_sha,
        &job.status,
        job.conclusion.as_deref(),
        Some(url.clone()),
    );
    run.started_at = Some(job.started_at.clone());
    run.completed_at.clone_from(&job.completed_at);
    let mut body = check_run_json(&run, repo, ctx);
    body["html_url"] = json!(url);
    body["check_suite"] = json!({"id": suite_id});
    body["app"] = other_app_json(
        GITHUB_ACTIONS_APP_ID,
        GITHUB_ACTIONS_APP_SLUG,
        "GitHub Actions",
        "github",
        ctx,
    );
    body
}

fn external_check_run_json(run: &ExternalCheckRun, repo: &Repo, ctx: &Ctx<'_>) -> Value {
    let mut like = check_run_like(
        run.id,
        &run.name,
        &run.head_sha,
        &run.status,
        run.conclusion.as_deref(),
        run.details_url.clone(),
    );
    let mut output = serde_json::Map::new();
    for (key, value) in [("title", &run.title), ("summary", &run.summary), ("text", &run.text)] {
        if let Some(value) = value {
            output.insert(key.to_owned(), json!(value));
        }
    }
    like.output = Value::Object(output);
    let mut body = check_run_json(&like, repo, ctx);
    let suite = wire::stable_id(&format!("{}@{}@{}", repo.full_name, run.head_sha, run.app_slug));
    body["check_suite"] = json!({"id": suite});
    body["app"] = other_app_json(run.app_id, &run.app_slug, &run.app_slug, repo.owner(), ctx);
    body
}

// ---------------------------------------------------------------------------------------------
// Workflow runs and jobs

fn run_html_url(run_id: u64, repo: &Repo) -> String {
    format!("{}/actions/runs/{run_id}", repo.html_url)
}

fn job_html_url(job: &ActionsJob, repo: &Repo) -> String {
    format!("{}/job/{}", run_html_url(job.run_id, repo), job.id)
}

/// `GET …/actions/runs`, newest first, filtered by `head_sha`, `branch`, `event`, `status` (a
/// status or a conclusion) and `check_suite_id`.
fn list_workflow_runs(state: &GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let suite = ctx.query("check_suite_id").and_then(|id| id.parse::<u64>().ok());
    let runs: Vec<Value> = state
        .workflow_runs
        .values()
        .rev()
        .filter(|r| r.repo == repo.full_name)
        .filter(|r| ctx.query("head_sha").is_none_or(|sha| r.head_sha == sha))
        .filter(|r| ctx.query("branch").is_none_or(|branch| r.head_branch == branch))
        .filter(|r| ctx.query("event").is_none_or(|event| r.event == event))
        .filter(|r| {
            ctx.query("status")
                .is_none_or(|s| r.status == s || r.conclusion.as_deref() == Some(s))
        })
        .filter(|r| suite.is_none_or(|id| r.check_suite_id == id))
        .map(|r| workflow_run_json(state, r, repo, ctx))
        .collect();
    let total = runs.len();
    let (page, headers) = paginate(runs, ctx);
    Reply {
        headers,
        ..Reply::json(200, json!({"total_count": total, "workflow_runs": page}))
    }
}

fn workflow_run_json(state: &GithubState, run: &WorkflowRun, repo: &Repo, ctx: &Ctx<'_>) -> Value {
    let mut body = description_example("workflow-run");
    let repo_api = ctx.api(&format!("/repos/{}", repo.full_name));
    replace_in_strings(&mut body, "https://api.github.com/repos/octo-org/octo-repo", &repo_api);
    replace_in_strings(&mut body, "https://github.com/octo-org/octo-repo", &repo.html_url);
    let api = format!("{repo_api}/actions/runs/{}", run.id);
    let workflow_id = wire::stable_id(&format!("{}:{}", repo.full_name, run.name));
    body["id"] = json!(run.id);
    body["node_id"] = json!(format!("WFR_fake{}", run.id));
    body["name"] = json!(run.name);
    body["display_title"] = json!(run.name);
    body["check_suite_id"] = json!(run.check_suite_id);
    body["check_suite_node_id"] = json!(format!("CS_fake{}", run.check_suite_id));
    body["check_suite_url"] = json!(format!("{repo_api}/check-suites/{}", run.check_suite_id));
    body["head_branch"] = json!(run.head_branch);
    body["head_sha"] = json!(run.head_sha);
    body["run_number"] = json!(run.id % 10_000);
    body["run_attempt"] = json!(run.run_attempt);
    body["event"] = json!(run.event);
    body["status"] = json!(run.status);
    body["conclusion"] = json!(run.conclusion);
    body["workflow_id"] = json!(workflow_id);
    body["url"] = json!(api);
    body["html_url"] = json!(run_html_url(run.id, repo));
    body["created_at"] = json!(run.created_at);
    body["updated_at"] = json!(run.created_at);
    body["run_started_at"] = json!(run.created_at);
    body["jobs_url"] = json!(format!("{api}/jobs"));
    body["logs_url"] = json!(format!("{api}/logs"));
    body["artifacts_url"] = json!(format!("{api}/artifacts"));
    body["cancel_url"] = json!(format!("{api}/cancel"));
    body["rerun_url"] = json!(format!("{api}/rerun"));
    body["previous_attempt_url"] = if run.run_attempt > 1 {
        json!(format!("{api}/attempts/{}", run.run_attempt - 1))
    } else {
        Value::Null
    };
    body["workflow_url"] = json!(format!("{repo_api}/actions/workflows/{workflow_id}"));
    body["head_commit"]["id"] = json!(run.head_sha);
    body["actor"] = user_json("octocat", ctx);
    body["triggering_actor"] = user_json("octocat", ctx);
    body["repository"] = repo_json(repo, ctx);
    body["head_repository"] = repo_json(repo, ctx);
    body["pull_requests"] = if ctx.query("exclude_pull_requests") == Some("true") {
        json!([])
    } else {
        run.pull_requests
            .iter()
            .map(|n| pull_minimal_json(state, *n, run, repo, ctx))
            .collect()
    };
    body
}

/// A pull request as a workflow run lists it: its stored head and base, or the run's head when
/// the fake does not hold it.
fn pull_minimal_json(state: &GithubState, number: u64, run: &WorkflowRun, repo: &Repo, ctx: &Ctx<'_>) -> Value {
    let repo_api = ctx.api(&format!("/repos/{}", repo.full_name));
    let side = |reference: &str, sha: &str| json!({"ref": reference, "sha": sha, "repo": {"id": repo.id, "url": repo_api, "name": repo.name()}});
    let issue = state.issue(&repo.full_name, number);
    let (head, base) = match issue.and_then(|i| i.pull.as_ref()) {
        Some(pull) => (
            side(&pull.head.ref_name, &pull.head.sha),
            side(&pull.base.ref_name, &pull.base.sha),
        ),
        None => (side(&run.head_branch, &run.head_sha), side(&repo.default_branch, "")),
    };
    json!({
        "id": issue.map_or_else(|| wire::stable_id(&format!("{}#{number}", repo.full_name)), |i| i.id),
        "number": number,
        "url": format!("{repo_api}/pulls/{number}"),
        "head": head,
        "base": base,
    })
}

/// `GET …/actions/runs/{run_id}/jobs`: `filter=latest` (the default) lists the jobs of the run's
/// highest attempt, `all` every attempt's; oldest first.
fn list_jobs(state: &GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let run_id = ctx.number("run_id");
    if state
        .workflow_runs
        .get(&run_id)
        .is_none_or(|r| r.repo != repo.full_name)
    {
        return Reply::not_found(ctx);
    }
    let jobs = state.jobs_of_run(run_id);
    let latest = jobs.iter().map(|j| j.run_attempt).max().unwrap_or(1);
    let all = ctx.query("filter") == Some("all");
    let listed: Vec<Value> = jobs
        .into_iter()
        .filter(|j| all || j.run_attempt == latest)
        .map(|j| job_json(j, repo, ctx))
        .collect();
    let total = listed.len();
    let (page, headers) = paginate(listed, ctx);
    Reply {
        headers,
        ..Reply::json(200, json!({"total_count": total, "jobs": page}))
    }
}

fn job_json(job: &ActionsJob, repo: &Repo, ctx: &Ctx<'_>) -> Value {
    let mut body = description_example("job");
    let repo_api = ctx.api(&format!("/repos/{}", repo.full_name));
    body["id"] = json!(job.id);
    body["node_id"] = json!(format!("CR_fake{}", job.id));
    body["run_id"] = json!(job.run_id);
    body["run_url"] = json!(format!("{repo_api}/actions/runs/{}", job.run_id));
    body["run_attempt"] = json!(job.run_attempt);
    body["head_sha"] = json!(job.head_sha);
    body["head_branch"] = json!(job.head_branch);
    body["workflow_name"] = json!(job.workflow_name);
    body["url"] = json!(format!("{repo_api}/actions/jobs/{}", job.id));
    body["html_url"] = json!(job_html_url(job, repo));
    body["check_run_url"] = json!(format!("{repo_api}/check-runs/{}", job.id));
    body["status"] = json!(job.status);
    body["conclusion"] = json!(job.conclusion);
    body["name"] = json!(job.name);
    body["created_at"] = json!(job.started_at);
    body["started_at"] = json!(job.started_at);
    body["completed_at"] = json!(job.completed_at);
    body["labels"] = json!(["ubuntu-latest"]);
    body["runner_name"] = json!("GitHub Actions 2");
    body["runner_group_name"] = json!("GitHub Actions");
    body["steps"] = job
        .steps
        .iter()
        .map(|step| {
            json!({
                "name": step.name,
                "number": step.number,
                "status": step.status,
                "conclusion": step.conclusion,
                "started_at": job.started_at,
                "completed_at": if step.status == "completed" { json!(job.completed_at) } else { Value::Null },
            })
        })
        .collect();
    body
}

// ---------------------------------------------------------------------------------------------
// Job logs

/// `GET …/actions/jobs/{job_id}/logs`: 302 to a freshly signed storage URL, or 410 once the log
/// has expired.
fn redirect_to_log(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let id = ctx.number("job_id");
    let Some(job) = state.actions_jobs.get(&id).filter(|j| j.repo == repo.full_name) else {
        return Reply::not_found(ctx);
    };
    if job.logs_expired {
        return Reply::error(410, "Gone", ctx.op.docs_url);
    }
    let signature = wire::random_alnum(43);
    state.log_signatures.insert(signature.clone(), id);
    Reply {
        status: 302,
        payload: Payload::Empty,
        headers: vec![(
            "location".to_owned(),
            format!("{}{LOG_BLOB_PREFIX}{id}?sig={signature}", ctx.cfg.base_url),
        )],
    }
}

/// What the fake's log storage answers a request for `rest` (what follows [`LOG_BLOB_PREFIX`]),
/// recorded as a [`LogDownload`]: the log as `text/plain`, 403 for a signature the API never
/// handed out for that job, 404 for a job (or log) that is gone, 405 for anything but GET.
pub(crate) fn serve_log(
    state: &mut GithubState,
    method: &str,
    rest: &str,
    query: &[(String, String)],
    authorization: bool,
) -> (u16, Vec<u8>) {
    let job_id = rest.parse::<u64>().unwrap_or(0);
    let signature = query.iter().find(|(name, _)| name == "sig").map(|(_, v)| v.as_str());
    let signed = signature.is_some_and(|sig| state.log_signatures.get(sig) == Some(&job_id));
    let (status, body) = match state.actions_jobs.get(&job_id) {
        _ if method != "GET" => (405, b"only GET is allowed".to_vec()),
        _ if !signed => (403, b"the signature does not match".to_vec()),
        Some(job) if !job.logs_expired => (200, job.log.clone()),
        _ => (404, b"the log does not exist".to_vec()),
    };
    state.log_downloads.push(LogDownload {
        job_id,
        authorization,
        status,
    });
    (status, body)
}
