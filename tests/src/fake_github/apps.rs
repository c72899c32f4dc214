//! The fake GitHub's App operations: the App itself, its installation, installation tokens, the
//! rate limit, and the repositories the installation reaches.

use serde_json::{Value, json};

use super::context::{Ctx, RateLimit, Reply, paginate};
use super::repos::{repo_json, user_json};
use super::state::{GithubState, Repo};
use super::wire::{self, example};

/// Answers the App's own operations, which name no repository; `None` for the others.
pub(crate) fn handle_app(state: &mut GithubState, ctx: &Ctx<'_>) -> Option<Reply> {
    match ctx.op.operation_id {
        "rate-limit/get" => return Some(Reply::json(200, rate_limit_json(ctx.rate))),
        "apps/get-authenticated" => return Some(Reply::json(200, app_json(ctx))),
        "apps/list-installations" => {
            let listed: Vec<Value> = if ctx.cfg.installed {
                vec![installation_json(ctx)]
            } else {
                Vec::new()
            };
            return Some(Reply::json(200, Value::Array(listed)));
        }
        "apps/get-installation" => {
            return Some(if ctx.number("installation_id") == ctx.cfg.installation_id {
                Reply::json(200, installation_json(ctx))
            } else {
                Reply::not_found(ctx)
            });
        }
        "apps/create-installation-access-token" => return Some(create_token(state, ctx)),
        "apps/create-from-manifest" => return Some(convert_manifest(state, ctx)),
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
    None
}

/// Answers the App's operations on a repository (the router has found it); `None` for the others.
/// The one installation reaches every repository of the fake.
pub(crate) fn handle(_state: &mut GithubState, _repo: &Repo, ctx: &Ctx<'_>) -> Option<Reply> {
    let reply = match ctx.op.operation_id {
        "apps/get-repo-installation" => Reply::json(200, installation_json(ctx)),
        _ => return None,
    };
    Some(reply)
}

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

/// The secret the fake gives the App a manifest created, for tests to sign deliveries with.
pub const MANIFEST_WEBHOOK_SECRET: &str = "whsec-fake-manifest-3c9e";

/// `POST /app-manifests/{code}/conversions`: the App of a manifest the form took, once per code.
/// It is the fake's own App (its id, and the test key, whose public half the fake trusts), named
/// and owned as the manifest and form said.
fn convert_manifest(state: &mut GithubState, ctx: &Ctx<'_>) -> Reply {
    let code = ctx.param("code");
    let Some(submitted) = state.app_manifests.iter_mut().find(|m| m.code == code && !m.converted) else {
        return Reply::not_found(ctx);
    };
    submitted.converted = true;
    let name = submitted.manifest["name"].as_str().unwrap_or("app").to_owned();
    let slug: String = name
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let owner = submitted.owner.clone().unwrap_or_else(|| ctx.cfg.account.clone());
    let pem = std::fs::read_to_string(super::auth::test_private_key_path()).unwrap_or_default();
    let mut body = wire::description_example("integration-from-manifest");
    body["id"] = json!(ctx.cfg.app_id);
    body["slug"] = json!(slug);
    body["name"] = json!(name);
    body["client_id"] = json!(ctx.cfg.client_id);
    body["html_url"] = json!(format!("https://github.com/apps/{slug}"));
    body["owner"] = user_json(&owner, ctx);
    body["permissions"] = submitted.manifest["default_permissions"].clone();
    body["events"] = submitted.manifest["default_events"].clone();
    body["pem"] = json!(pem);
    body["webhook_secret"] = json!(MANIFEST_WEBHOOK_SECRET);
    body["client_secret"] = json!("fake-client-secret-91d0");
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
    if let Some((permissions, events)) = &ctx.cfg.app_settings {
        body["permissions"] = permissions.clone();
        body["events"] = json!(events);
    }
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
