//! The operations the fake GitHub answers, chosen by GitHub's operation id. Each reads or changes
//! the state and answers with GitHub's example object for that operation (from
//! `github-api-responses/openapi-examples/`), patched with the state's ids, numbers, bodies, URLs
//! and timestamps. An operation of the description that is not here answers `None`: the fake
//! then records it as a violation, so a test never silently gets a made-up answer.
//!
//! This file is the router: the App's own operations (`apps.rs`), then the repository's, by area:
//! `actions.rs` (every app's check runs of a commit, GitHub Actions), `apps.rs`, `repos.rs`, `git.rs`
//! (contents, tags), `checks.rs`, `issues.rs` (and issue comments), `reactions.rs` and `pulls.rs`
//! (and review comments, reviews). What an operation gets and gives is in `context.rs`. GraphQL's
//! one path is not routed here: `graphql.rs` serves it.

use super::context::{Ctx, Payload, Reply};
use super::state::{GithubState, OUTPUT_OPERATIONS, Repo};
use super::{actions, apps, checks, git, issues, pulls, reactions, repos};

/// An area's operations on one repository: its answer, or `None` when the operation is not its own.
type Area = fn(&mut GithubState, &Repo, &Ctx<'_>) -> Option<Reply>;

/// Answers the operation, or `None` when the fake does not implement it. A successful write of an
/// output (see [`OUTPUT_OPERATIONS`]) is recorded for the test to look at.
pub(crate) fn handle(state: &mut GithubState, ctx: &Ctx<'_>) -> Option<Reply> {
    let reply = answer(state, ctx)?;
    let written = OUTPUT_OPERATIONS
        .iter()
        .find(|operation| **operation == ctx.op.operation_id)
        .filter(|_| (200..300).contains(&reply.status));
    if let (Some(operation), Payload::Json(body)) = (written, &reply.payload)
        && let Some(id) = body["id"].as_u64()
    {
        state.wrote(id, operation);
    }
    Some(reply)
}

fn answer(state: &mut GithubState, ctx: &Ctx<'_>) -> Option<Reply> {
    if let Some(reply) = apps::handle_app(state, ctx) {
        return Some(reply);
    }
    let full_name = format!("{}/{}", ctx.param("owner"), ctx.param("repo"));
    let Some(repo) = state.repo(&full_name).cloned() else {
        // Unknown and inaccessible repositories look the same on GitHub.
        return Some(Reply::not_found(ctx));
    };
    let repo = &repo;
    // The areas own disjoint operations: their order decides nothing.
    let areas: [Area; 8] = [
        actions::handle,
        apps::handle,
        repos::handle,
        git::handle,
        checks::handle,
        issues::handle,
        reactions::handle,
        pulls::handle,
    ];
    areas.into_iter().find_map(|area| area(state, repo, ctx))
}
