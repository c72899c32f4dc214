//! The fake GitHub's git data: file contents (registered with the fake, else read from the
//! repository's `git_dir`) and tags.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::context::{Ctx, Payload, Reply, list};
use super::state::{GithubState, Repo};
use super::wire::{self, description_example, example};

/// Answers the operations this file owns; `None` for the others.
pub(crate) fn handle(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Option<Reply> {
    let reply = match ctx.op.operation_id {
        "repos/get-content" => get_content(state, repo, ctx),
        "repos/list-tags" => list_tags(state, repo, ctx),
        _ => return None,
    };
    Some(reply)
}

pub(crate) fn git_output(git_dir: &Path, args: &[&str]) -> Option<Vec<u8>> {
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
