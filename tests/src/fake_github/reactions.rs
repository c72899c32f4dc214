//! The fake GitHub's reactions, on issues, issue comments and review comments.

use serde_json::{Value, json};

use super::context::{Ctx, Reply, list};
use super::issues::issue_comment;
use super::pulls::review_comment;
use super::repos::user_json;
use super::state::{GithubState, Reaction, ReactionTarget, Repo};
use super::wire::{self, example};

/// Answers the operations this file owns; `None` for the others.
pub(crate) fn handle(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Option<Reply> {
    let reply = match ctx.op.operation_id {
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
        _ => return None,
    };
    Some(reply)
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
