//! The fake GitHub's repositories and users: the repository and user objects every other area
//! embeds, the repository itself, and its collaborators' permissions.

use serde_json::{Value, json};

use super::context::{Ctx, Reply};
use super::state::{GithubState, Repo};
use super::wire::{self, example};

/// Answers the operations this file owns; `None` for the others.
pub(crate) fn handle(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Option<Reply> {
    let reply = match ctx.op.operation_id {
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
        _ => return None,
    };
    Some(reply)
}

/// A stable user id from the login, so the same user has the same id everywhere.
pub(crate) fn user_id(login: &str) -> u64 {
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

pub(crate) fn replace_in_strings(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::String(text) if text.contains(from) => *text = text.replace(from, to),
        Value::Array(items) => items.iter_mut().for_each(|v| replace_in_strings(v, from, to)),
        Value::Object(object) => object.values_mut().for_each(|v| replace_in_strings(v, from, to)),
        _ => {}
    }
}
