//! The fake GitHub's issues (pull requests are issues too): the issue object, listing, creating,
//! updates, labels, assignees, and issue comments.

use serde_json::{Value, json};

use super::context::{Ctx, Reply, list};
use super::repos::{replace_in_strings, user_id, user_json};
use super::state::{GithubState, Issue, IssueComment, Repo};
use super::wire::{self, example, example_item};

/// Answers the operations this file owns; `None` for the others.
pub(crate) fn handle(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Option<Reply> {
    let reply = match ctx.op.operation_id {
        "issues/get" => match state.issue(&repo.full_name, ctx.number("issue_number")) {
            Some(issue) => Reply::json(200, issue_json(state, issue, repo, ctx)),
            None => Reply::not_found(ctx),
        },
        "issues/update" => update_issue(state, repo, ctx),
        "issues/create" => create_issue(state, repo, ctx),
        "issues/list-for-repo" => {
            // Pull requests are issues here too, as on GitHub; newest first.
            let wanted = ctx.query("state").unwrap_or("open");
            let creator = ctx.query("creator");
            let issues: Vec<Value> = state
                .issues
                .iter()
                .filter(|((r, _), issue)| {
                    *r == repo.full_name
                        && (wanted == "all" || issue.state == wanted)
                        && creator.is_none_or(|login| issue.user.eq_ignore_ascii_case(login))
                })
                .rev()
                .map(|(_, issue)| issue_json(state, issue, repo, ctx))
                .collect();
            list(issues, ctx)
        }
        "issues/list-comments" => {
            let number = ctx.number("issue_number");
            if state.issue(&repo.full_name, number).is_none() {
                return Some(Reply::not_found(ctx));
            }
            let comments = state
                .comments_of(&repo.full_name, number)
                .into_iter()
                .map(|c| issue_comment_json(c, repo, ctx))
                .collect();
            list(comments, ctx)
        }
        "issues/create-comment" => {
            let number = ctx.number("issue_number");
            if state.issue(&repo.full_name, number).is_none() {
                return Some(Reply::not_found(ctx));
            }
            let body = ctx.body["body"].as_str().unwrap_or("");
            let id = state.add_issue_comment(&repo.full_name, number, &ctx.login(), body);
            let comment = &state.issue_comments[&id];
            let mut reply = Reply::json(201, issue_comment_json(comment, repo, ctx));
            reply.headers.push((
                "location".to_owned(),
                ctx.api(&format!("/repos/{}/issues/comments/{id}", repo.full_name)),
            ));
            reply
        }
        "issues/get-comment" => match issue_comment(state, repo, ctx) {
            Some(comment) => Reply::json(200, issue_comment_json(comment, repo, ctx)),
            None => Reply::not_found(ctx),
        },
        "issues/update-comment" => {
            let Some(id) = issue_comment(state, repo, ctx).map(|c| c.id) else {
                return Some(Reply::not_found(ctx));
            };
            let Some(comment) = state.issue_comments.get_mut(&id) else {
                return Some(Reply::not_found(ctx));
            };
            let old = std::mem::replace(&mut comment.body, ctx.body["body"].as_str().unwrap_or("").to_owned());
            comment.edits.push(old);
            comment.updated_at = wire::now_rfc3339();
            Reply::json(200, issue_comment_json(comment, repo, ctx))
        }
        "issues/delete-comment" => match issue_comment(state, repo, ctx).map(|c| c.id) {
            Some(id) => {
                state.issue_comments.remove(&id);
                Reply::no_content()
            }
            None => Reply::not_found(ctx),
        },
        "issues/list-labels-on-issue"
        | "issues/add-labels"
        | "issues/set-labels"
        | "issues/remove-label"
        | "issues/remove-all-labels" => labels(state, repo, ctx),
        "issues/add-assignees" | "issues/remove-assignees" => assignees(state, repo, ctx),
        _ => return None,
    };
    Some(reply)
}

pub(crate) fn label_json(name: &str, repo: &Repo, ctx: &Ctx<'_>) -> Value {
    let mut label = example_item("label-items");
    label["id"] = json!(user_id(&format!("{}#{name}", repo.full_name)));
    label["name"] = json!(name);
    label["url"] = json!(ctx.api(&format!("/repos/{}/labels/{name}", repo.full_name)));
    label["description"] = Value::Null;
    label["default"] = json!(false);
    label
}

pub(crate) fn issue_json(state: &GithubState, issue: &Issue, repo: &Repo, ctx: &Ctx<'_>) -> Value {
    let mut body = example("issue");
    let api = ctx.api(&format!("/repos/{}", repo.full_name));
    replace_in_strings(&mut body, "https://api.github.com/repos/octocat/Hello-World", &api);
    let kind = if issue.pull.is_some() { "pull" } else { "issues" };
    body["id"] = json!(issue.id);
    body["node_id"] = json!(format!("I_fake{}", issue.id));
    body["number"] = json!(issue.number);
    body["url"] = json!(format!("{api}/issues/{}", issue.number));
    body["html_url"] = json!(format!("{}/{kind}/{}", repo.html_url, issue.number));
    body["comments_url"] = json!(format!("{api}/issues/{}/comments", issue.number));
    body["title"] = json!(issue.title);
    body["body"] = json!(issue.body);
    body["state"] = json!(issue.state);
    body["state_reason"] = Value::Null;
    body["user"] = user_json(&issue.user, ctx);
    body["labels"] = issue.labels.iter().map(|l| label_json(l, repo, ctx)).collect();
    body["assignees"] = issue.assignees.iter().map(|a| user_json(a, ctx)).collect();
    body["assignee"] = issue.assignees.first().map_or(Value::Null, |a| user_json(a, ctx));
    body["milestone"] = Value::Null;
    body["comments"] = json!(state.comments_of(&repo.full_name, issue.number).len());
    body["created_at"] = json!(issue.created_at);
    body["updated_at"] = json!(issue.updated_at);
    body["closed_at"] = if issue.state == "closed" {
        json!(issue.updated_at)
    } else {
        Value::Null
    };
    body["closed_by"] = Value::Null;
    body["author_association"] = json!(association(state, repo, &issue.user));
    if let Some(object) = body.as_object_mut() {
        if issue.pull.is_some() {
            let html = format!("{}/pull/{}", repo.html_url, issue.number);
            object.insert(
                "pull_request".to_owned(),
                json!({"url": format!("{api}/pulls/{}", issue.number), "html_url": html,
                    "diff_url": format!("{html}.diff"), "patch_url": format!("{html}.patch"), "merged_at": null}),
            );
        } else {
            object.remove("pull_request");
        }
    }
    body
}

pub(crate) fn association(state: &GithubState, repo: &Repo, login: &str) -> &'static str {
    if login == repo.owner() {
        "OWNER"
    } else if state.permission(&repo.full_name, login) >= super::state::Permission::Write {
        "COLLABORATOR"
    } else {
        "NONE"
    }
}

/// Title, body and state from an update body (issues and pull requests alike).
pub(crate) fn apply_issue_fields(issue: &mut Issue, body: &Value) {
    if let Some(title) = body["title"].as_str() {
        title.clone_into(&mut issue.title);
    }
    if body.get("body").is_some() {
        issue.body = body["body"].as_str().map(str::to_owned);
    }
    if let Some(state) = body["state"].as_str() {
        state.clone_into(&mut issue.state);
    }
    issue.updated_at = wire::now_rfc3339();
}

fn create_issue(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let number = state.next_number(&repo.full_name);
    let mut issue = Issue::new(number, ctx.body["title"].as_str().unwrap_or(""));
    issue.body = ctx.body["body"].as_str().map(str::to_owned);
    issue.user = ctx.login();
    state.add_issue(&repo.full_name, issue);
    let Some(issue) = state.issue(&repo.full_name, number).cloned() else {
        return Reply::not_found(ctx);
    };
    let mut reply = Reply::json(201, issue_json(state, &issue, repo, ctx));
    reply.headers.push((
        "location".to_owned(),
        ctx.api(&format!("/repos/{}/issues/{number}", repo.full_name)),
    ));
    reply
}

fn update_issue(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let key = (repo.full_name.clone(), ctx.number("issue_number"));
    let Some(issue) = state.issues.get_mut(&key) else {
        return Reply::not_found(ctx);
    };
    apply_issue_fields(issue, ctx.body);
    if let Some(labels) = ctx.body["labels"].as_array() {
        issue.labels = labels.iter().filter_map(label_name).collect();
    }
    if let Some(assignees) = ctx.body["assignees"].as_array() {
        issue.assignees = assignees.iter().filter_map(login_of).collect();
    }
    let issue = issue.clone();
    Reply::json(200, issue_json(state, &issue, repo, ctx))
}

/// A label given as `"name"` or `{"name": …}`.
fn label_name(value: &Value) -> Option<String> {
    value.as_str().or_else(|| value["name"].as_str()).map(str::to_owned)
}

/// An assignee given as `"login"` or `{"login": …}`.
fn login_of(value: &Value) -> Option<String> {
    value.as_str().or_else(|| value["login"].as_str()).map(str::to_owned)
}

fn labels(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let key = (repo.full_name.clone(), ctx.number("issue_number"));
    let Some(issue) = state.issues.get_mut(&key) else {
        return Reply::not_found(ctx);
    };
    // The body is `{"labels": [...]}` or, for the older form, a bare array.
    let given: Vec<String> = ctx.body["labels"]
        .as_array()
        .or_else(|| ctx.body.as_array())
        .map(|labels| labels.iter().filter_map(label_name).collect())
        .unwrap_or_default();
    match ctx.op.operation_id {
        "issues/add-labels" => {
            for label in given {
                if !issue.labels.contains(&label) {
                    issue.labels.push(label);
                }
            }
        }
        "issues/set-labels" => issue.labels = given,
        "issues/remove-all-labels" => {
            issue.labels.clear();
            return Reply::no_content();
        }
        "issues/remove-label" => {
            let name = ctx.param("name");
            let before = issue.labels.len();
            issue.labels.retain(|l| l != name);
            if issue.labels.len() == before {
                return Reply::error(404, "Label does not exist", ctx.op.docs_url);
            }
        }
        _ => {}
    }
    let labels = issue.labels.iter().map(|l| label_json(l, repo, ctx)).collect();
    Reply::json(200, Value::Array(labels))
}

fn assignees(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let key = (repo.full_name.clone(), ctx.number("issue_number"));
    let Some(issue) = state.issues.get_mut(&key) else {
        return Reply::not_found(ctx);
    };
    let given: Vec<String> = ctx.body["assignees"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(login_of)
        .collect();
    if ctx.op.method == "POST" {
        for login in given {
            if !issue.assignees.contains(&login) {
                issue.assignees.push(login);
            }
        }
    } else {
        issue.assignees.retain(|a| !given.contains(a));
    }
    let status = if ctx.op.method == "POST" { 201 } else { 200 };
    let issue = issue.clone();
    Reply::json(status, issue_json(state, &issue, repo, ctx))
}

pub(crate) fn issue_comment<'s>(state: &'s GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Option<&'s IssueComment> {
    state
        .issue_comments
        .get(&ctx.number("comment_id"))
        .filter(|c| c.repo == repo.full_name)
}

fn issue_comment_json(comment: &IssueComment, repo: &Repo, ctx: &Ctx<'_>) -> Value {
    let mut body = example("issue-comment");
    let api = ctx.api(&format!("/repos/{}", repo.full_name));
    body["id"] = json!(comment.id);
    body["node_id"] = json!(format!("IC_fake{}", comment.id));
    body["url"] = json!(format!("{api}/issues/comments/{}", comment.id));
    body["html_url"] = json!(format!(
        "{}/issues/{}#issuecomment-{}",
        repo.html_url, comment.issue_number, comment.id
    ));
    body["issue_url"] = json!(format!("{api}/issues/{}", comment.issue_number));
    body["body"] = json!(comment.body);
    body["user"] = user_json(&comment.user, ctx);
    body["created_at"] = json!(comment.created_at);
    body["updated_at"] = json!(comment.updated_at);
    body
}
