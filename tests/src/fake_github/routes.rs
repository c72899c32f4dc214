//! The operations the fake GitHub answers, chosen by GitHub's operation id. Each reads or changes
//! the state and answers with GitHub's example object for that operation (from
//! `github-api-responses/openapi-examples/`), patched with the state's ids, numbers, bodies, URLs
//! and timestamps. An operation of the description that is not here answers `None`: the fake
//! then records it as a violation, so a test never silently gets a made-up answer.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::actions;
use super::auth::Caller;
use super::openapi::Operation;
use super::state::{
    CheckRun, GithubState, Issue, IssueComment, PullBase, PullHead, PullInfo, Reaction, ReactionTarget, Repo, Review,
    ReviewComment,
};
use super::wire::{self, description_example, example, example_item};

/// GitHub's page size when `per_page` is absent, and its largest.
const DEFAULT_PER_PAGE: usize = 30;
const MAX_PER_PAGE: usize = 100;

/// The App the fake plays and where it is served.
#[derive(Debug, Clone)]
pub(crate) struct AppConfig {
    pub app_id: u64,
    pub client_id: String,
    pub slug: String,
    pub installation_id: u64,
    /// The installation's account (an organization or user login).
    pub account: String,
    pub base_url: String,
    pub token_lifetime: Duration,
}

impl AppConfig {
    pub fn bot_login(&self) -> String {
        format!("{}[bot]", self.slug)
    }
}

/// The primary rate limit as it stands for this request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RateLimit {
    pub limit: u64,
    pub used: u64,
    pub reset: u64,
}

impl RateLimit {
    pub fn remaining(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }
}

/// What one request brings to its operation.
pub(crate) struct Ctx<'a> {
    pub op: &'a Operation<'a>,
    pub path: &'a str,
    pub query: &'a [(String, String)],
    pub body: &'a Value,
    pub caller: &'a Caller,
    pub accept: &'a str,
    pub cfg: &'a AppConfig,
    pub rate: RateLimit,
}

impl Ctx<'_> {
    pub(crate) fn param(&self, name: &str) -> &str {
        self.op.param(name).unwrap_or("")
    }

    /// A numeric path parameter (the spec check already made sure it is one).
    pub(crate) fn number(&self, name: &str) -> u64 {
        self.param(name).parse().unwrap_or(0)
    }

    pub(crate) fn query(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn login(&self) -> String {
        self.caller.login(&self.cfg.bot_login())
    }

    pub(crate) fn api(&self, rest: &str) -> String {
        format!("{}{rest}", self.cfg.base_url)
    }
}

/// A response body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Payload {
    Json(Value),
    Raw { bytes: Vec<u8>, content_type: &'static str },
    Empty,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    pub status: u16,
    pub payload: Payload,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    pub fn json(status: u16, value: Value) -> Reply {
        Reply {
            status,
            payload: Payload::Json(value),
            headers: Vec::new(),
        }
    }

    fn no_content() -> Reply {
        Reply {
            status: 204,
            payload: Payload::Empty,
            headers: Vec::new(),
        }
    }

    pub fn error(status: u16, message: &str, docs_url: &str) -> Reply {
        Reply::json(status, wire::error_body(status, message, docs_url))
    }

    pub(crate) fn not_found(ctx: &Ctx<'_>) -> Reply {
        Reply::error(404, "Not Found", ctx.op.docs_url)
    }

    /// GitHub's 422 for a semantic problem: `{"message": "Validation Failed", "errors": [...]}`.
    fn validation_failed(ctx: &Ctx<'_>, errors: Value) -> Reply {
        let mut body = wire::error_body(422, "Validation Failed", ctx.op.docs_url);
        body["errors"] = errors;
        Reply::json(422, body)
    }
}

/// Answers the operation, or `None` when the fake does not implement it.
pub(crate) fn handle(state: &mut GithubState, ctx: &Ctx<'_>) -> Option<Reply> {
    match ctx.op.operation_id {
        "rate-limit/get" => return Some(Reply::json(200, rate_limit_json(ctx.rate))),
        "apps/get-authenticated" => return Some(Reply::json(200, app_json(ctx))),
        "apps/list-installations" => return Some(Reply::json(200, json!([installation_json(ctx)]))),
        "apps/get-installation" => {
            return Some(if ctx.number("installation_id") == ctx.cfg.installation_id {
                Reply::json(200, installation_json(ctx))
            } else {
                Reply::not_found(ctx)
            });
        }
        "apps/create-installation-access-token" => return Some(create_token(state, ctx)),
        // The one installation reaches every repository of the fake.
        "apps/list-repos-accessible-to-installation" => {
            let repos: Vec<Value> = state.repos.values().map(|repo| repo_json(repo, ctx)).collect();
            let total = repos.len();
            let (page, headers) = paginate(repos, ctx);
            return Some(Reply {
                headers,
                ..Reply::json(
                    200,
                    json!({"total_count": total, "repositories": page, "repository_selection": "all"}),
                )
            });
        }
        _ => {}
    }
    let full_name = format!("{}/{}", ctx.param("owner"), ctx.param("repo"));
    let Some(repo) = state.repo(&full_name).cloned() else {
        // Unknown and inaccessible repositories look the same on GitHub.
        return Some(Reply::not_found(ctx));
    };
    let repo = &repo;
    // Check-run listings (every app's) and GitHub Actions.
    if let Some(reply) = actions::handle(state, repo, ctx) {
        return Some(reply);
    }
    let reply = match ctx.op.operation_id {
        "apps/get-repo-installation" => Reply::json(200, installation_json(ctx)),
        "repos/get" => Reply::json(200, repo_json(repo, ctx)),
        "repos/get-collaborator-permission-level" => {
            let login = ctx.param("username");
            let permission = state.permission(&repo.full_name, login);
            let mut body = example("repository-collaborator-permission-response-if-user-has-admin-permissions");
            body["permission"] = json!(permission.legacy_name());
            body["role_name"] = json!(permission.role_name());
            body["user"] = user_json(login, ctx);
            // The collaborator schema wants the role on the user too, as GitHub sends it.
            body["user"]["role_name"] = json!(permission.role_name());
            Reply::json(200, body)
        }
        "repos/check-collaborator" => {
            if state.permission(&repo.full_name, ctx.param("username")) > super::state::Permission::None {
                Reply::no_content()
            } else {
                Reply::not_found(ctx)
            }
        }
        "repos/get-content" => get_content(state, repo, ctx),
        "repos/list-tags" => list_tags(state, repo, ctx),
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
        "issues/get" => match state.issue(&repo.full_name, ctx.number("issue_number")) {
            Some(issue) => Reply::json(200, issue_json(state, issue, repo, ctx)),
            None => Reply::not_found(ctx),
        },
        "issues/update" => update_issue(state, repo, ctx),
        "issues/list-comments" => {
            let number = ctx.number("issue_number");
            if state.issue(&repo.full_name, number).is_none() {
                return Some(Reply::not_found(ctx));
            }
            let comments = state
                .comments_on(&repo.full_name, number)
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
        "reactions/create-for-issue-comment" => match issue_comment(state, repo, ctx) {
            Some(comment) => {
                let target = ReactionTarget::IssueComment(comment.id);
                create_reaction(state, target, ctx)
            }
            None => Reply::not_found(ctx),
        },
        "reactions/list-for-issue-comment" => match issue_comment(state, repo, ctx) {
            Some(comment) => list_reactions(state, &ReactionTarget::IssueComment(comment.id), ctx),
            None => Reply::not_found(ctx),
        },
        "reactions/delete-for-issue-comment"
        | "reactions/delete-for-pull-request-comment"
        | "reactions/delete-for-issue" => {
            let id = ctx.number("reaction_id");
            let before = state.reactions.len();
            state.reactions.retain(|r| r.id != id);
            if state.reactions.len() < before {
                Reply::no_content()
            } else {
                Reply::not_found(ctx)
            }
        }
        "reactions/create-for-pull-request-review-comment" => match review_comment(state, repo, ctx) {
            Some(comment) => {
                let target = ReactionTarget::ReviewComment(comment.id);
                create_reaction(state, target, ctx)
            }
            None => Reply::not_found(ctx),
        },
        "reactions/list-for-pull-request-review-comment" => match review_comment(state, repo, ctx) {
            Some(comment) => list_reactions(state, &ReactionTarget::ReviewComment(comment.id), ctx),
            None => Reply::not_found(ctx),
        },
        "reactions/create-for-issue" | "reactions/list-for-issue" => {
            let number = ctx.number("issue_number");
            if state.issue(&repo.full_name, number).is_none() {
                return Some(Reply::not_found(ctx));
            }
            let target = ReactionTarget::Issue {
                repo: repo.full_name.clone(),
                number,
            };
            if ctx.op.method == "POST" {
                create_reaction(state, target, ctx)
            } else {
                list_reactions(state, &target, ctx)
            }
        }
        "pulls/get" => match pull(state, repo, ctx.number("pull_number")) {
            Some(issue) => Reply::json(200, pull_json(state, issue, repo, ctx)),
            None => Reply::not_found(ctx),
        },
        "pulls/list" => {
            let wanted_state = ctx.query("state").unwrap_or("open");
            let pulls: Vec<Value> = state
                .issues
                .iter()
                .filter(|((r, _), issue)| *r == repo.full_name && issue.pull.is_some())
                .filter(|(_, issue)| wanted_state == "all" || issue.state == wanted_state)
                .filter(|(_, issue)| {
                    ctx.query("head").is_none_or(|head| {
                        issue.pull.as_ref().is_some_and(|p| {
                            let owner = p.head.repo_full_name.split('/').next().unwrap_or("");
                            head == format!("{owner}:{}", p.head.ref_name)
                        })
                    })
                })
                .filter(|(_, issue)| {
                    ctx.query("base")
                        .is_none_or(|base| issue.pull.as_ref().is_some_and(|p| p.base.ref_name == base))
                })
                .rev()
                .map(|(_, issue)| pull_json(state, issue, repo, ctx))
                .collect();
            list(pulls, ctx)
        }
        "pulls/create" => create_pull(state, repo, ctx),
        "repos/list-pull-requests-associated-with-commit" => {
            // The pull requests whose head is the commit, newest first.
            let sha = ctx.param("commit_sha");
            let pulls: Vec<Value> = state
                .issues
                .iter()
                .filter(|((r, _), issue)| {
                    *r == repo.full_name && issue.pull.as_ref().is_some_and(|p| p.head.sha == sha)
                })
                .rev()
                .map(|(_, issue)| pull_json(state, issue, repo, ctx))
                .collect();
            list(pulls, ctx)
        }
        "pulls/update" => {
            let number = ctx.number("pull_number");
            let Some(issue) = state
                .issues
                .get_mut(&(repo.full_name.clone(), number))
                .filter(|i| i.pull.is_some())
            else {
                return Some(Reply::not_found(ctx));
            };
            apply_issue_fields(issue, ctx.body);
            if let (Some(base), Some(pull)) = (ctx.body["base"].as_str(), issue.pull.as_mut()) {
                base.clone_into(&mut pull.base.ref_name);
            }
            if let (Some(allowed), Some(pull)) = (ctx.body["maintainer_can_modify"].as_bool(), issue.pull.as_mut()) {
                pull.maintainer_can_modify = allowed;
            }
            let issue = issue.clone();
            Reply::json(200, pull_json(state, &issue, repo, ctx))
        }
        "pulls/list-review-comments" => {
            let number = ctx.number("pull_number");
            if pull(state, repo, number).is_none() {
                return Some(Reply::not_found(ctx));
            }
            let comments = state
                .review_comments
                .values()
                .filter(|c| c.repo == repo.full_name && c.pull_number == number)
                .map(|c| review_comment_json(c, repo, ctx))
                .collect();
            list(comments, ctx)
        }
        "pulls/create-review-comment" => create_review_comment(state, repo, ctx),
        "pulls/create-reply-for-review-comment" => {
            let number = ctx.number("pull_number");
            let parent = state
                .review_comments
                .get(&ctx.number("comment_id"))
                .filter(|c| c.repo == repo.full_name && c.pull_number == number)
                .cloned();
            let Some(parent) = parent else {
                return Some(Reply::not_found(ctx));
            };
            // Replies join the thread's root, as on GitHub.
            let root = parent.in_reply_to.unwrap_or(parent.id);
            let body = ctx.body["body"].as_str().unwrap_or("");
            let id = state.add_review_comment(
                &repo.full_name,
                number,
                None,
                Some(root),
                &ctx.login(),
                body,
                &parent.path,
                parent.line,
            );
            Reply::json(201, review_comment_json(&state.review_comments[&id], repo, ctx))
        }
        "pulls/get-review-comment" => match review_comment(state, repo, ctx) {
            Some(comment) => Reply::json(200, review_comment_json(comment, repo, ctx)),
            None => Reply::not_found(ctx),
        },
        "pulls/update-review-comment" => {
            let Some(id) = review_comment(state, repo, ctx).map(|c| c.id) else {
                return Some(Reply::not_found(ctx));
            };
            let Some(comment) = state.review_comments.get_mut(&id) else {
                return Some(Reply::not_found(ctx));
            };
            ctx.body["body"].as_str().unwrap_or("").clone_into(&mut comment.body);
            comment.updated_at = wire::now_rfc3339();
            Reply::json(200, review_comment_json(comment, repo, ctx))
        }
        "pulls/create-review" => create_review(state, repo, ctx),
        "pulls/list-reviews" => {
            let number = ctx.number("pull_number");
            if pull(state, repo, number).is_none() {
                return Some(Reply::not_found(ctx));
            }
            let reviews = state
                .reviews
                .values()
                .filter(|r| r.repo == repo.full_name && r.pull_number == number)
                .map(|r| review_json(r, repo, ctx))
                .collect();
            list(reviews, ctx)
        }
        "pulls/get-review" => match state.reviews.get(&ctx.number("review_id")) {
            Some(review) if review.repo == repo.full_name && review.pull_number == ctx.number("pull_number") => {
                Reply::json(200, review_json(review, repo, ctx))
            }
            _ => Reply::not_found(ctx),
        },
        _ => return None,
    };
    Some(reply)
}

// ---------------------------------------------------------------------------------------------
// Apps and tokens

fn create_token(state: &mut GithubState, ctx: &Ctx<'_>) -> Reply {
    state.token_requests += 1;
    if ctx.number("installation_id") != ctx.cfg.installation_id {
        return Reply::not_found(ctx);
    }
    let mut permissions = default_permissions();
    if let Some(asked) = ctx.body["permissions"].as_object() {
        permissions = Value::Object(asked.clone());
    }
    let token = state.issue_token(
        ctx.cfg.installation_id,
        &ctx.cfg.bot_login(),
        ctx.cfg.token_lifetime,
        permissions.clone(),
    );
    let mut body = example("installation-token");
    body["token"] = json!(token.token);
    body["expires_at"] = json!(wire::rfc3339(token.expires_at.unwrap_or(0)));
    body["permissions"] = permissions;
    let asked_repos = ctx.body["repositories"].as_array().filter(|r| !r.is_empty());
    let repositories: Vec<Value> = state
        .repos
        .values()
        .filter(|r| asked_repos.is_none_or(|names| names.iter().any(|n| n.as_str() == Some(r.name()))))
        .map(|r| repo_json(r, ctx))
        .collect();
    body["repository_selection"] = json!(if asked_repos.is_some() { "selected" } else { "all" });
    body["repositories"] = json!(repositories);
    Reply::json(201, body)
}

fn default_permissions() -> Value {
    json!({"checks": "write", "contents": "write", "issues": "write", "metadata": "read", "pull_requests": "write"})
}

pub(crate) fn app_json(ctx: &Ctx<'_>) -> Value {
    let mut body = example("integration");
    body["id"] = json!(ctx.cfg.app_id);
    body["slug"] = json!(ctx.cfg.slug);
    body["client_id"] = json!(ctx.cfg.client_id);
    body["name"] = json!(ctx.cfg.slug);
    body["html_url"] = json!(format!("https://github.com/apps/{}", ctx.cfg.slug));
    body["owner"] = user_json(&ctx.cfg.account, ctx);
    body["permissions"] = default_permissions();
    body
}

fn installation_json(ctx: &Ctx<'_>) -> Value {
    let mut body = example("installation");
    let id = ctx.cfg.installation_id;
    body["id"] = json!(id);
    body["app_id"] = json!(ctx.cfg.app_id);
    body["client_id"] = json!(ctx.cfg.client_id);
    body["app_slug"] = json!(ctx.cfg.slug);
    body["account"] = user_json(&ctx.cfg.account, ctx);
    body["access_tokens_url"] = json!(ctx.api(&format!("/app/installations/{id}/access_tokens")));
    body["repositories_url"] = json!(ctx.api("/installation/repositories"));
    body["permissions"] = default_permissions();
    body["suspended_at"] = Value::Null;
    body["suspended_by"] = Value::Null;
    body
}

fn rate_limit_json(rate: RateLimit) -> Value {
    let mut body = example("rate-limit-overview");
    let core = json!({"limit": rate.limit, "used": rate.used, "remaining": rate.remaining(), "reset": rate.reset});
    body["resources"]["core"] = core.clone();
    body["rate"] = core;
    body
}

// ---------------------------------------------------------------------------------------------
// Users and repositories

/// A stable user id from the login, so the same user has the same id everywhere.
fn user_id(login: &str) -> u64 {
    wire::stable_id(login)
}

pub(crate) fn user_json(login: &str, ctx: &Ctx<'_>) -> Value {
    let mut user = example("issue-comment")["user"].clone();
    replace_in_strings(
        &mut user,
        "https://api.github.com/users/octocat",
        &ctx.api(&format!("/users/{login}")),
    );
    replace_in_strings(
        &mut user,
        "https://github.com/octocat",
        &format!("https://github.com/{login}"),
    );
    user["login"] = json!(login);
    user["id"] = json!(user_id(login));
    user["node_id"] = json!(format!("U_fake{}", user_id(login)));
    user["type"] = json!(if login.ends_with("[bot]") { "Bot" } else { "User" });
    user
}

pub(crate) fn repo_json(repo: &Repo, ctx: &Ctx<'_>) -> Value {
    let mut body = example("full-repository-default-response");
    for key in ["parent", "source", "template_repository", "organization"] {
        if let Some(object) = body.as_object_mut() {
            object.remove(key);
        }
    }
    let api = ctx.api(&format!("/repos/{}", repo.full_name));
    replace_in_strings(&mut body, "https://api.github.com/repos/octocat/Hello-World", &api);
    replace_in_strings(
        &mut body,
        "github.com/octocat/Hello-World",
        &format!("github.com/{}", repo.full_name),
    );
    replace_in_strings(
        &mut body,
        "github.com:octocat/Hello-World",
        &format!("github.com:{}", repo.full_name),
    );
    body["id"] = json!(repo.id);
    body["node_id"] = json!(format!("R_fake{}", repo.id));
    body["name"] = json!(repo.name());
    body["full_name"] = json!(repo.full_name);
    body["owner"] = user_json(repo.owner(), ctx);
    body["private"] = json!(repo.private);
    body["visibility"] = json!(if repo.private { "private" } else { "public" });
    body["fork"] = json!(false);
    body["html_url"] = json!(repo.html_url);
    body["clone_url"] = json!(repo.clone_url);
    body["default_branch"] = json!(repo.default_branch);
    // Required by the schema, absent from GitHub's example; GitHub sends null for no language.
    body["language"] = Value::Null;
    body
}

/// The repository object of a pull request's head: the base repository or a fork of it.
fn head_repo_json(state: &GithubState, head: &PullHead, base: &Repo, ctx: &Ctx<'_>) -> Value {
    if head.repo_full_name == base.full_name {
        return repo_json(base, ctx);
    }
    let fork = state.repo(&head.repo_full_name).cloned().unwrap_or_else(|| {
        let mut fork = Repo::new(&head.repo_full_name);
        fork.id = user_id(&head.repo_full_name);
        fork
    });
    let mut body = repo_json(&fork, ctx);
    body["fork"] = json!(true);
    if let Some(url) = &head.clone_url {
        body["clone_url"] = json!(url);
    }
    body
}

pub(crate) fn replace_in_strings(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::String(text) if text.contains(from) => *text = text.replace(from, to),
        Value::Array(items) => items.iter_mut().for_each(|v| replace_in_strings(v, from, to)),
        Value::Object(object) => object.values_mut().for_each(|v| replace_in_strings(v, from, to)),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Lists

/// One page of `items` as `per_page`/`page` ask, with GitHub's `Link` header when there are more:
/// absolute URLs that keep the request's other query parameters (GitHub's do), `per_page` and
/// `page` last.
pub(crate) fn paginate(items: Vec<Value>, ctx: &Ctx<'_>) -> (Vec<Value>, Vec<(String, String)>) {
    let per_page = ctx
        .query("per_page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(DEFAULT_PER_PAGE)
        .clamp(1, MAX_PER_PAGE);
    let page = ctx
        .query("page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let mut links = Vec::new();
    let mut query: Vec<(String, String)> = ctx
        .query
        .iter()
        .filter(|(name, _)| name != "page" && name != "per_page")
        .cloned()
        .collect();
    query.push(("per_page".to_owned(), per_page.to_string()));
    let url = |n: usize| {
        let mut query = query.clone();
        query.push(("page".to_owned(), n.to_string()));
        format!("<{}?{}>", ctx.api(ctx.path), wire::encode_query(&query))
    };
    if page < last {
        links.push(format!("{}; rel=\"next\"", url(page + 1)));
        links.push(format!("{}; rel=\"last\"", url(last)));
    }
    if page > 1 {
        links.push(format!("{}; rel=\"prev\"", url(page - 1)));
        links.push(format!("{}; rel=\"first\"", url(1)));
    }
    let headers = if links.is_empty() {
        Vec::new()
    } else {
        vec![("link".to_owned(), links.join(", "))]
    };
    let page_items = items.into_iter().skip((page - 1) * per_page).take(per_page).collect();
    (page_items, headers)
}

fn list(items: Vec<Value>, ctx: &Ctx<'_>) -> Reply {
    let (page, headers) = paginate(items, ctx);
    Reply {
        headers,
        ..Reply::json(200, Value::Array(page))
    }
}

// ---------------------------------------------------------------------------------------------
// Issues, pull requests, labels

fn pull<'s>(state: &'s GithubState, repo: &Repo, number: u64) -> Option<&'s Issue> {
    state.issue(&repo.full_name, number).filter(|i| i.pull.is_some())
}

fn label_json(name: &str, repo: &Repo, ctx: &Ctx<'_>) -> Value {
    let mut label = example_item("label-items");
    label["id"] = json!(user_id(&format!("{}#{name}", repo.full_name)));
    label["name"] = json!(name);
    label["url"] = json!(ctx.api(&format!("/repos/{}/labels/{name}", repo.full_name)));
    label["description"] = Value::Null;
    label["default"] = json!(false);
    label
}

fn issue_json(state: &GithubState, issue: &Issue, repo: &Repo, ctx: &Ctx<'_>) -> Value {
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
    body["comments"] = json!(state.comments_on(&repo.full_name, issue.number).len());
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

fn association(state: &GithubState, repo: &Repo, login: &str) -> &'static str {
    if login == repo.owner() {
        "OWNER"
    } else if state.permission(&repo.full_name, login) >= super::state::Permission::Write {
        "COLLABORATOR"
    } else {
        "NONE"
    }
}

fn pull_json(state: &GithubState, issue: &Issue, repo: &Repo, ctx: &Ctx<'_>) -> Value {
    let mut body = example("pull-request");
    let Some(pull) = &issue.pull else {
        return issue_json(state, issue, repo, ctx);
    };
    let api = ctx.api(&format!("/repos/{}", repo.full_name));
    let n = issue.number;
    replace_in_strings(&mut body, "https://api.github.com/repos/octocat/Hello-World", &api);
    replace_in_strings(&mut body, "https://github.com/octocat/Hello-World", &repo.html_url);
    replace_in_strings(&mut body, "/1347", &format!("/{n}"));
    body["id"] = json!(issue.id);
    body["node_id"] = json!(format!("PR_fake{}", issue.id));
    body["number"] = json!(n);
    body["state"] = json!(issue.state);
    body["title"] = json!(issue.title);
    body["body"] = json!(issue.body);
    body["user"] = user_json(&issue.user, ctx);
    body["labels"] = issue.labels.iter().map(|l| label_json(l, repo, ctx)).collect();
    body["assignees"] = issue.assignees.iter().map(|a| user_json(a, ctx)).collect();
    body["assignee"] = issue.assignees.first().map_or(Value::Null, |a| user_json(a, ctx));
    body["milestone"] = Value::Null;
    body["requested_reviewers"] = json!([]);
    body["requested_teams"] = json!([]);
    body["created_at"] = json!(issue.created_at);
    body["updated_at"] = json!(issue.updated_at);
    body["closed_at"] = if issue.state == "closed" {
        json!(issue.updated_at)
    } else {
        Value::Null
    };
    body["merged_at"] = Value::Null;
    body["merged"] = json!(pull.merged);
    body["merged_by"] = Value::Null;
    body["merge_commit_sha"] = Value::Null;
    body["draft"] = json!(pull.draft);
    body["maintainer_can_modify"] = json!(pull.maintainer_can_modify);
    body["author_association"] = json!(association(state, repo, &issue.user));
    body["comments"] = json!(state.comments_on(&repo.full_name, n).len());
    body["review_comments"] = json!(
        state
            .review_comments
            .values()
            .filter(|c| c.repo == repo.full_name && c.pull_number == n)
            .count()
    );
    let head_owner = pull.head.repo_full_name.split('/').next().unwrap_or("");
    body["head"] = json!({
        "label": format!("{head_owner}:{}", pull.head.ref_name),
        "ref": pull.head.ref_name,
        "sha": pull.head.sha,
        "user": user_json(head_owner, ctx),
        "repo": head_repo_json(state, &pull.head, repo, ctx),
    });
    body["base"] = json!({
        "label": format!("{}:{}", repo.owner(), pull.base.ref_name),
        "ref": pull.base.ref_name,
        "sha": pull.base.sha,
        "user": user_json(repo.owner(), ctx),
        "repo": repo_json(repo, ctx),
    });
    body["_links"]["statuses"]["href"] = json!(format!("{api}/statuses/{}", pull.head.sha));
    body
}

/// Title, body and state from an update body (issues and pull requests alike).
fn apply_issue_fields(issue: &mut Issue, body: &Value) {
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

/// A head ref's commit: registered with the fake, else read from the repository's `git_dir`.
fn branch_sha(state: &GithubState, repo_full_name: &str, branch: &str) -> Option<String> {
    if let Some(sha) = state.branches.get(&(repo_full_name.to_owned(), branch.to_owned())) {
        return Some(sha.clone());
    }
    let dir = state.repo(repo_full_name)?.git_dir.as_deref()?;
    git_output(
        dir,
        &[
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/heads/{branch}^{{commit}}"),
        ],
    )
    .map(|out| String::from_utf8_lossy(&out).trim().to_owned())
}

fn git_output(git_dir: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let output = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output.status.success().then_some(output.stdout)
}

fn create_pull(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let head_spec = ctx.body["head"].as_str().unwrap_or("");
    let base_ref = ctx.body["base"].as_str().unwrap_or("");
    // `owner:branch` names a fork's branch; a bare branch is the base repository's.
    let (head_repo, head_ref) = match head_spec.split_once(':') {
        Some((owner, branch)) if owner != repo.owner() => {
            let fork = state
                .repos
                .values()
                .find(|r| r.owner() == owner && r.name() == repo.name())
                .map_or_else(|| format!("{owner}/{}", repo.name()), |r| r.full_name.clone());
            (fork, branch.to_owned())
        }
        Some((_, branch)) => (repo.full_name.clone(), branch.to_owned()),
        None => (repo.full_name.clone(), head_spec.to_owned()),
    };
    let invalid = |field: &str| {
        Reply::validation_failed(
            ctx,
            json!([{"resource": "PullRequest", "field": field, "code": "invalid"}]),
        )
    };
    let Some(head_sha) = branch_sha(state, &head_repo, &head_ref) else {
        return invalid("head");
    };
    let Some(base_sha) = branch_sha(state, &repo.full_name, base_ref) else {
        return invalid("base");
    };
    let duplicate = state.issues.iter().any(|((r, _), issue)| {
        *r == repo.full_name
            && issue.state == "open"
            && issue.pull.as_ref().is_some_and(|p| {
                p.head.repo_full_name == head_repo && p.head.ref_name == head_ref && p.base.ref_name == base_ref
            })
    });
    if duplicate {
        let owner = head_repo.split('/').next().unwrap_or("");
        let message = format!("A pull request already exists for {owner}:{head_ref}.");
        return Reply::validation_failed(
            ctx,
            json!([{"resource": "PullRequest", "code": "custom", "message": message}]),
        );
    }
    let number = state.next_number(&repo.full_name);
    let mut issue = Issue::new(number, ctx.body["title"].as_str().unwrap_or(""));
    issue.body = ctx.body["body"].as_str().map(str::to_owned);
    issue.user = ctx.login();
    issue.pull = Some(PullInfo {
        head: PullHead {
            ref_name: head_ref,
            sha: head_sha,
            clone_url: state.repo(&head_repo).map(|r| r.clone_url.clone()),
            repo_full_name: head_repo,
        },
        base: PullBase {
            ref_name: base_ref.to_owned(),
            sha: base_sha,
        },
        maintainer_can_modify: ctx.body["maintainer_can_modify"].as_bool().unwrap_or(true),
        draft: ctx.body["draft"].as_bool().unwrap_or(false),
        merged: false,
    });
    state.add_issue(&repo.full_name, issue);
    let Some(issue) = state.issue(&repo.full_name, number).cloned() else {
        return Reply::not_found(ctx);
    };
    let mut reply = Reply::json(201, pull_json(state, &issue, repo, ctx));
    reply.headers.push((
        "location".to_owned(),
        ctx.api(&format!("/repos/{}/pulls/{number}", repo.full_name)),
    ));
    reply
}

// ---------------------------------------------------------------------------------------------
// Comments, reviews, reactions

fn issue_comment<'s>(state: &'s GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Option<&'s IssueComment> {
    state
        .issue_comments
        .get(&ctx.number("comment_id"))
        .filter(|c| c.repo == repo.full_name)
}

fn review_comment<'s>(state: &'s GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Option<&'s ReviewComment> {
    state
        .review_comments
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

fn review_comment_json(comment: &ReviewComment, repo: &Repo, ctx: &Ctx<'_>) -> Value {
    let mut body = example("pull-request-review-comment");
    let api = ctx.api(&format!("/repos/{}", repo.full_name));
    let n = comment.pull_number;
    replace_in_strings(&mut body, "https://api.github.com/repos/octocat/Hello-World", &api);
    replace_in_strings(&mut body, "https://github.com/octocat/Hello-World", &repo.html_url);
    body["id"] = json!(comment.id);
    body["node_id"] = json!(format!("PRRC_fake{}", comment.id));
    body["url"] = json!(format!("{api}/pulls/comments/{}", comment.id));
    body["html_url"] = json!(format!("{}/pull/{n}#discussion_r{}", repo.html_url, comment.id));
    body["pull_request_url"] = json!(format!("{api}/pulls/{n}"));
    body["pull_request_review_id"] = json!(comment.review_id);
    body["body"] = json!(comment.body);
    body["path"] = json!(comment.path);
    body["line"] = json!(comment.line);
    body["original_line"] = json!(comment.line);
    body["start_line"] = json!(comment.start_line);
    body["original_start_line"] = json!(comment.start_line);
    body["side"] = json!(comment.side);
    body["commit_id"] = json!(comment.commit_id);
    body["original_commit_id"] = json!(comment.commit_id);
    body["user"] = user_json(&comment.user, ctx);
    body["created_at"] = json!(comment.created_at);
    body["updated_at"] = json!(comment.updated_at);
    if let Some(object) = body.as_object_mut() {
        match comment.in_reply_to {
            Some(parent) => {
                object.insert("in_reply_to_id".to_owned(), json!(parent));
            }
            None => {
                object.remove("in_reply_to_id");
            }
        }
    }
    body["_links"] = json!({
        "self": {"href": format!("{api}/pulls/comments/{}", comment.id)},
        "html": {"href": format!("{}/pull/{n}#discussion_r{}", repo.html_url, comment.id)},
        "pull_request": {"href": format!("{api}/pulls/{n}")},
    });
    body
}

fn review_json(review: &Review, repo: &Repo, ctx: &Ctx<'_>) -> Value {
    let mut body = example("pull-request-review");
    let api = ctx.api(&format!("/repos/{}", repo.full_name));
    let n = review.pull_number;
    body["id"] = json!(review.id);
    body["node_id"] = json!(format!("PRR_fake{}", review.id));
    body["user"] = user_json(&review.user, ctx);
    body["body"] = json!(review.body);
    body["state"] = json!(review.state);
    body["html_url"] = json!(format!("{}/pull/{n}#pullrequestreview-{}", repo.html_url, review.id));
    body["pull_request_url"] = json!(format!("{api}/pulls/{n}"));
    body["commit_id"] = json!(review.commit_id);
    body["author_association"] = json!("NONE");
    body["_links"] = json!({
        "html": {"href": format!("{}/pull/{n}#pullrequestreview-{}", repo.html_url, review.id)},
        "pull_request": {"href": format!("{api}/pulls/{n}")},
    });
    if let Some(object) = body.as_object_mut() {
        if review.state == "PENDING" {
            object.remove("submitted_at");
        } else {
            object.insert("submitted_at".to_owned(), json!(review.submitted_at));
        }
    }
    body
}

fn create_review_comment(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let number = ctx.number("pull_number");
    if pull(state, repo, number).is_none() {
        return Reply::not_found(ctx);
    }
    let body = ctx.body["body"].as_str().unwrap_or("");
    // The deprecated `in_reply_to` form makes a reply too.
    if let Some(parent) = ctx.body["in_reply_to"].as_u64() {
        let Some(parent) = state
            .review_comments
            .get(&parent)
            .filter(|c| c.repo == repo.full_name)
            .cloned()
        else {
            return Reply::not_found(ctx);
        };
        let root = parent.in_reply_to.unwrap_or(parent.id);
        let id = state.add_review_comment(
            &repo.full_name,
            number,
            None,
            Some(root),
            &ctx.login(),
            body,
            &parent.path,
            parent.line,
        );
        return Reply::json(201, review_comment_json(&state.review_comments[&id], repo, ctx));
    }
    let path = ctx.body["path"].as_str().unwrap_or("");
    let line = ctx.body["line"].as_u64().or_else(|| ctx.body["position"].as_u64());
    let id = state.add_review_comment(&repo.full_name, number, None, None, &ctx.login(), body, path, line);
    if let Some(comment) = state.review_comments.get_mut(&id) {
        comment.start_line = ctx.body["start_line"].as_u64();
        if let Some(side) = ctx.body["side"].as_str() {
            comment.side = Some(side.to_owned());
        }
        if let Some(commit) = ctx.body["commit_id"].as_str() {
            commit.clone_into(&mut comment.commit_id);
        }
    }
    Reply::json(201, review_comment_json(&state.review_comments[&id], repo, ctx))
}

fn create_review(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let number = ctx.number("pull_number");
    let Some(head_sha) = pull(state, repo, number)
        .and_then(|i| i.pull.as_ref())
        .map(|p| p.head.sha.clone())
    else {
        return Reply::not_found(ctx);
    };
    let event = ctx.body["event"].as_str();
    let body = ctx.body["body"].as_str().unwrap_or("");
    // GitHub refuses a review that requests changes or comments without saying anything.
    let comments = ctx.body["comments"].as_array().cloned().unwrap_or_default();
    if event == Some("REQUEST_CHANGES") && body.is_empty() {
        return Reply::validation_failed(ctx, json!(["Body is required for REQUEST_CHANGES"]));
    }
    if event == Some("COMMENT") && body.is_empty() && comments.is_empty() {
        return Reply::validation_failed(ctx, json!(["Body is required for COMMENT"]));
    }
    let state_name = match event {
        Some("APPROVE") => "APPROVED",
        Some("REQUEST_CHANGES") => "CHANGES_REQUESTED",
        Some("COMMENT") => "COMMENTED",
        _ => "PENDING",
    };
    let commit_id = ctx.body["commit_id"].as_str().map_or(head_sha, str::to_owned);
    let review_id = state.next_id();
    let login = ctx.login();
    let mut comment_ids = Vec::with_capacity(comments.len());
    for comment in &comments {
        let line = comment["line"].as_u64().or_else(|| comment["position"].as_u64());
        let id = state.add_review_comment(
            &repo.full_name,
            number,
            Some(review_id),
            None,
            &login,
            comment["body"].as_str().unwrap_or(""),
            comment["path"].as_str().unwrap_or(""),
            line,
        );
        if let Some(stored) = state.review_comments.get_mut(&id) {
            stored.start_line = comment["start_line"].as_u64();
            if let Some(side) = comment["side"].as_str() {
                stored.side = Some(side.to_owned());
            }
            commit_id.clone_into(&mut stored.commit_id);
        }
        comment_ids.push(id);
    }
    let review = Review {
        id: review_id,
        repo: repo.full_name.clone(),
        pull_number: number,
        user: login,
        body: body.to_owned(),
        state: state_name.to_owned(),
        commit_id,
        comment_ids,
        submitted_at: wire::now_rfc3339(),
        request: ctx.body.clone(),
    };
    let json = review_json(&review, repo, ctx);
    state.reviews.insert(review_id, review);
    Reply::json(200, json)
}

fn reaction_json(reaction: &Reaction, ctx: &Ctx<'_>) -> Value {
    let mut body = example("reaction");
    body["id"] = json!(reaction.id);
    body["node_id"] = json!(format!("REA_fake{}", reaction.id));
    body["user"] = user_json(&reaction.user, ctx);
    body["content"] = json!(reaction.content);
    body["created_at"] = json!(reaction.created_at);
    body
}

/// 201 with a new reaction, or 200 with the one this user already left with that content.
fn create_reaction(state: &mut GithubState, target: ReactionTarget, ctx: &Ctx<'_>) -> Reply {
    let content = ctx.body["content"].as_str().unwrap_or("").to_owned();
    let login = ctx.login();
    if let Some(existing) = state
        .reactions
        .iter()
        .find(|r| r.target == target && r.user == login && r.content == content)
    {
        return Reply::json(200, reaction_json(existing, ctx));
    }
    let reaction = Reaction {
        id: state.next_id(),
        target,
        user: login,
        content,
        created_at: wire::now_rfc3339(),
    };
    let json = reaction_json(&reaction, ctx);
    state.reactions.push(reaction);
    Reply::json(201, json)
}

fn list_reactions(state: &GithubState, target: &ReactionTarget, ctx: &Ctx<'_>) -> Reply {
    let reactions = state
        .reactions
        .iter()
        .filter(|r| r.target == *target)
        .filter(|r| ctx.query("content").is_none_or(|c| r.content == c))
        .map(|r| reaction_json(r, ctx))
        .collect();
    list(reactions, ctx)
}

// ---------------------------------------------------------------------------------------------
// Check runs

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

// ---------------------------------------------------------------------------------------------
// Tags

/// `GET …/tags`: the repository's tags by name, last first (the order is GitHub's own business;
/// callers sort), paged.
fn list_tags(state: &GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let api = ctx.api(&format!("/repos/{}", repo.full_name));
    let tags = state
        .tags
        .iter()
        .filter(|((r, _), _)| *r == repo.full_name)
        .rev()
        .map(|((_, name), sha)| {
            let mut tag = example_item_of(description_example("tag-items"));
            tag["name"] = json!(name);
            tag["commit"] = json!({"sha": sha, "url": format!("{api}/commits/{sha}")});
            tag["zipball_url"] = json!(format!("{api}/zipball/refs/tags/{name}"));
            tag["tarball_url"] = json!(format!("{api}/tarball/refs/tags/{name}"));
            tag["node_id"] = json!(format!(
                "REF_fake{}",
                wire::stable_id(&format!("{}@{name}", repo.full_name))
            ));
            tag
        })
        .collect();
    list(tags, ctx)
}

/// The first element of an example list from the full description.
fn example_item_of(examples: Value) -> Value {
    match examples {
        Value::Array(mut items) if !items.is_empty() => items.swap_remove(0),
        other => other,
    }
}

// ---------------------------------------------------------------------------------------------
// Contents

fn get_content(state: &GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let path = ctx.param("path").trim_matches('/');
    let reference = ctx.query("ref").unwrap_or(&repo.default_branch);
    let registered = state
        .files
        .get(&(repo.full_name.clone(), reference.to_owned(), path.to_owned()))
        .map(|bytes| (bytes.clone(), wire::fake_sha(bytes)));
    let from_git = || {
        let dir = repo.git_dir.as_deref()?;
        let spec = format!("{reference}:{path}");
        let kind = git_output(dir, &["cat-file", "-t", &spec])?;
        if kind.trim_ascii() != b"blob" {
            return None;
        }
        let bytes = git_output(dir, &["cat-file", "blob", &spec])?;
        let sha = git_output(dir, &["rev-parse", &spec])?;
        Some((bytes, String::from_utf8_lossy(&sha).trim().to_owned()))
    };
    let Some((bytes, sha)) = registered.or_else(from_git) else {
        return Reply::not_found(ctx);
    };
    if ctx.accept.contains("vnd.github.raw") {
        return Reply {
            status: 200,
            payload: Payload::Raw {
                bytes,
                content_type: "application/vnd.github.raw; charset=utf-8",
            },
            headers: Vec::new(),
        };
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    let api = ctx.api(&format!("/repos/{}", repo.full_name));
    let self_url = format!("{api}/contents/{path}?ref={reference}");
    let html_url = format!("{}/blob/{reference}/{path}", repo.html_url);
    let git_url = format!("{api}/git/blobs/{sha}");
    let mut body = example("content-file-response-if-content-is-a-file");
    body["type"] = json!("file");
    body["encoding"] = json!("base64");
    body["size"] = json!(bytes.len());
    body["name"] = json!(name);
    body["path"] = json!(path);
    body["content"] = json!(wire::contents_base64(&bytes));
    body["sha"] = json!(sha);
    body["url"] = json!(self_url);
    body["git_url"] = json!(git_url);
    body["html_url"] = json!(html_url);
    body["download_url"] = json!(format!(
        "https://raw.githubusercontent.com/{}/{reference}/{path}",
        repo.full_name
    ));
    body["_links"] = json!({"git": git_url, "self": self_url, "html": html_url});
    Reply::json(200, body)
}
