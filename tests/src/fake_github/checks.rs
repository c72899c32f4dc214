//! The fake GitHub's check runs as the bot makes them: creating and updating a run (with GitHub's
//! rules on status, conclusion and annotations), reading it and its annotations.

use serde_json::{Value, json};

use super::apps::app_json;
use super::context::{Ctx, Reply, list};
use super::repos::user_id;
use super::state::{CheckRun, GithubState, Repo};
use super::wire::{self, example};

/// Answers the operations this file owns; `None` for the others.
pub(crate) fn handle(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Option<Reply> {
    let reply = match ctx.op.operation_id {
        "checks/create" => create_check_run(state, repo, ctx),
        "checks/get" => match state.check_runs.get(&ctx.number("check_run_id")) {
            Some(run) if run.repo == repo.full_name => Reply::json(200, check_run_json(run, repo, ctx)),
            _ => Reply::not_found(ctx),
        },
        "checks/update" => update_check_run(state, repo, ctx),
        "checks/list-annotations" => match state.check_runs.get(&ctx.number("check_run_id")) {
            Some(run) if run.repo == repo.full_name => list(run.annotations.clone(), ctx),
            _ => Reply::not_found(ctx),
        },
        _ => return None,
    };
    Some(reply)
}

pub(crate) fn check_run_json(run: &CheckRun, repo: &Repo, ctx: &Ctx<'_>) -> Value {
    let mut body = example("check-run");
    let api = ctx.api(&format!("/repos/{}", repo.full_name));
    body["id"] = json!(run.id);
    body["node_id"] = json!(format!("CR_fake{}", run.id));
    body["head_sha"] = json!(run.head_sha);
    body["external_id"] = json!(run.external_id.clone().unwrap_or_default());
    body["url"] = json!(format!("{api}/check-runs/{}", run.id));
    body["html_url"] = json!(format!("{}/runs/{}", repo.html_url, run.id));
    body["details_url"] = json!(
        run.details_url
            .clone()
            .unwrap_or_else(|| format!("{}/runs/{}", repo.html_url, run.id))
    );
    body["status"] = json!(run.status);
    body["conclusion"] = json!(run.conclusion);
    body["started_at"] = json!(run.started_at);
    body["completed_at"] = json!(run.completed_at);
    body["name"] = json!(run.name);
    body["check_suite"] = json!({"id": user_id(&format!("{}@{}", repo.full_name, run.head_sha))});
    body["output"] = json!({
        "title": run.output.get("title").cloned().unwrap_or(Value::Null),
        "summary": run.output.get("summary").cloned().unwrap_or(Value::Null),
        "text": run.output.get("text").cloned().unwrap_or(Value::Null),
        "annotations_count": run.annotations.len(),
        "annotations_url": format!("{api}/check-runs/{}/annotations", run.id),
    });
    let app = app_json(ctx);
    body["app"] = app;
    body["pull_requests"] = json!([]);
    body
}

/// The `output` fields that replace the stored ones, and the annotations that add to them.
fn apply_output(run: &mut CheckRun, output: &Value) {
    let Some(fields) = output.as_object() else {
        return;
    };
    let mut kept = serde_json::Map::new();
    for key in ["title", "summary", "text"] {
        if let Some(value) = fields.get(key) {
            kept.insert(key.to_owned(), value.clone());
        }
    }
    run.output = Value::Object(kept);
    if let Some(annotations) = fields.get("annotations").and_then(Value::as_array) {
        run.annotations.extend(annotations.iter().cloned());
    }
}

/// Status, conclusion and times from a create or update body, with GitHub's rules: a conclusion
/// completes the run; completing it stamps `completed_at`.
fn apply_check_fields(run: &mut CheckRun, body: &Value) {
    let text = |key: &str| body[key].as_str().map(str::to_owned);
    if let Some(name) = text("name") {
        run.name = name;
    }
    if let Some(status) = text("status") {
        run.status = status;
    }
    if let Some(url) = text("details_url") {
        run.details_url = Some(url);
    }
    if let Some(id) = text("external_id") {
        run.external_id = Some(id);
    }
    if let Some(started) = text("started_at") {
        run.started_at = Some(started);
    }
    if let Some(conclusion) = text("conclusion") {
        run.conclusion = Some(conclusion);
        "completed".clone_into(&mut run.status);
    }
    if let Some(completed) = text("completed_at") {
        run.completed_at = Some(completed);
    }
    if run.status == "completed" && run.completed_at.is_none() {
        run.completed_at = Some(wire::now_rfc3339());
    }
    apply_output(run, &body["output"]);
    run.history.push(body.clone());
}

/// GitHub's 422 when a run would be completed without a conclusion.
fn conclusion_missing(run: &CheckRun, ctx: &Ctx<'_>) -> Option<Reply> {
    (run.status == "completed" && run.conclusion.is_none()).then(|| {
        Reply::validation_failed(
            ctx,
            json!([{"resource": "CheckRun", "field": "conclusion", "code": "missing_field"}]),
        )
    })
}

fn create_check_run(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let mut run = CheckRun {
        id: 0,
        repo: repo.full_name.clone(),
        name: String::new(),
        head_sha: ctx.body["head_sha"].as_str().unwrap_or("").to_owned(),
        status: "queued".to_owned(),
        conclusion: None,
        started_at: Some(wire::now_rfc3339()),
        completed_at: None,
        details_url: None,
        external_id: None,
        output: json!({}),
        annotations: Vec::new(),
        history: Vec::new(),
    };
    apply_check_fields(&mut run, ctx.body);
    if let Some(reply) = conclusion_missing(&run, ctx) {
        return reply;
    }
    run.id = state.next_id();
    let json = check_run_json(&run, repo, ctx);
    state.check_runs.insert(run.id, run);
    Reply::json(201, json)
}

fn update_check_run(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let id = ctx.number("check_run_id");
    let Some(run) = state.check_runs.get(&id).filter(|r| r.repo == repo.full_name) else {
        return Reply::not_found(ctx);
    };
    let mut updated = run.clone();
    apply_check_fields(&mut updated, ctx.body);
    if let Some(reply) = conclusion_missing(&updated, ctx) {
        return reply;
    }
    let json = check_run_json(&updated, repo, ctx);
    state.check_runs.insert(id, updated);
    Reply::json(200, json)
}
