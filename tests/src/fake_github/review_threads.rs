//! The fake GitHub's GraphQL objects: repositories, their pull requests and the pull requests'
//! review threads (a review comment and its replies, `in_reply_to` the root) with their comments,
//! built from the state for `graphql.rs` to execute queries over; and the `resolveReviewThread`
//! mutation.
//!
//! Node ids are stable and match the REST answers' `node_id`s: `R_fake{id}` for a repository,
//! `PR_fake{id}` for a pull request, `PRRC_fake{id}` for a review comment, and `PRRT_fake{root}`
//! for the thread of root comment `root`. As on GitHub, an App's bot is a `Bot` whose `login` has
//! no `[bot]` suffix.

use std::collections::BTreeMap;

use serde_json::Value;

use super::graphql::Obj;
use super::state::{GithubState, Issue, Repo, ReviewComment, ReviewThread};

/// What the API reports resolving as, among the outputs.
const RESOLVE_OPERATION: &str = "graphql resolveReviewThread";

/// The query root: `repository(owner:, name:)`, over every repository of the state.
pub(crate) fn query_root(state: &GithubState) -> Obj {
    let repos = state
        .repos
        .values()
        .map(|repo| (repo.full_name.clone(), repository(state, repo)))
        .collect();
    Obj::new("Query").lookup("repository", &["owner", "name"], repos, |values| {
        format!(
            "Could not resolve to a Repository with the name '{}'.",
            values.join("/")
        )
    })
}

fn repository(state: &GithubState, repo: &Repo) -> Obj {
    let pulls: BTreeMap<String, Obj> = state
        .issues
        .iter()
        .filter(|((on, _), issue)| *on == repo.full_name && issue.pull.is_some())
        .map(|((_, number), issue)| (number.to_string(), pull_request(state, repo, issue)))
        .collect();
    Obj::new("Repository")
        .leaf("id", format!("R_fake{}", repo.id))
        .leaf("databaseId", repo.id)
        .leaf("name", repo.name())
        .leaf("nameWithOwner", repo.full_name.as_str())
        .leaf("isPrivate", repo.private)
        .leaf("url", repo.html_url.as_str())
        .lookup("pullRequest", &["number"], pulls, |values| {
            format!(
                "Could not resolve to a PullRequest with the number of {}.",
                values.join("")
            )
        })
}

fn pull_request(state: &GithubState, repo: &Repo, issue: &Issue) -> Obj {
    let pull = issue.pull.as_ref();
    let state_name = match (issue.state.as_str(), pull.is_some_and(|p| p.merged)) {
        (_, true) => "MERGED",
        ("closed", false) => "CLOSED",
        _ => "OPEN",
    };
    let threads = state
        .threads_of(&repo.full_name, issue.number)
        .into_iter()
        .map(|thread| review_thread(state, repo, thread))
        .collect();
    Obj::new("PullRequest")
        .leaf("id", format!("PR_fake{}", issue.id))
        .leaf("databaseId", issue.id)
        .leaf("number", issue.number)
        .leaf("title", issue.title.as_str())
        .leaf("state", state_name)
        .leaf("isDraft", pull.is_some_and(|p| p.draft))
        .leaf("headRefName", pull.map(|p| p.head.ref_name.clone()))
        .leaf("headRefOid", pull.map(|p| p.head.sha.clone()))
        .leaf("baseRefName", pull.map(|p| p.base.ref_name.clone()))
        .leaf("url", format!("{}/pull/{}", repo.html_url, issue.number))
        .connection("reviewThreads", threads)
}

/// Thread `thread` of pull request `repo`, with its comments (none, for a thread whose root is
/// gone).
fn review_thread(state: &GithubState, repo: &Repo, thread: &ReviewThread) -> Obj {
    let comments = state.thread_comments(thread.root_comment);
    let root = comments.first().copied();
    let line = root.and_then(|c| c.line);
    let start_line = root.and_then(|c| c.start_line);
    let side = root.and_then(|c| c.side.clone()).unwrap_or_else(|| "RIGHT".to_owned());
    // An outdated thread has no line in the current diff.
    let current = |line: Option<u64>| line.filter(|_| !thread.outdated);
    let mut objects = Vec::with_capacity(comments.len());
    let root_object = root.map(|c| review_comment(repo, c, thread, None));
    for comment in &comments {
        let reply_to = (comment.in_reply_to.is_some()).then(|| root_object.clone()).flatten();
        objects.push(review_comment(repo, comment, thread, reply_to));
    }
    Obj::new("PullRequestReviewThread")
        .leaf("id", thread.node_id())
        .leaf("isResolved", thread.is_resolved())
        .leaf("isCollapsed", thread.is_resolved())
        .leaf("isOutdated", thread.outdated)
        .leaf("path", thread.path.as_str())
        .leaf("line", current(line))
        .leaf("originalLine", line)
        .leaf("startLine", current(start_line))
        .leaf("originalStartLine", start_line)
        .leaf("diffSide", side.as_str())
        .leaf("startDiffSide", start_line.map(|_| side.clone()))
        .leaf("subjectType", if line.is_some() { "LINE" } else { "FILE" })
        // `resolvedBy` is a `User`: GitHub has no answer there for an App's bot.
        .object(
            "resolvedBy",
            thread
                .resolved_by
                .as_deref()
                .filter(|login| !login.ends_with("[bot]"))
                .map(|login| Obj::new("User").leaf("login", login)),
        )
        .connection("comments", objects)
}

fn review_comment(repo: &Repo, comment: &ReviewComment, thread: &ReviewThread, reply_to: Option<Obj>) -> Obj {
    let commit = (!comment.commit_id.is_empty()).then(|| Obj::new("Commit").leaf("oid", comment.commit_id.as_str()));
    Obj::new("PullRequestReviewComment")
        .leaf("id", format!("PRRC_fake{}", comment.id))
        .leaf("databaseId", comment.id)
        .leaf("body", comment.body.as_str())
        .object("author", Some(actor(&comment.user)))
        .leaf("path", comment.path.as_str())
        .leaf("line", comment.line.filter(|_| !thread.outdated))
        .leaf("originalLine", comment.line)
        .leaf("createdAt", comment.created_at.as_str())
        .leaf("updatedAt", comment.updated_at.as_str())
        .leaf(
            "url",
            format!(
                "{}/pull/{}#discussion_r{}",
                repo.html_url, comment.pull_number, comment.id
            ),
        )
        .object("commit", commit.clone())
        .object("originalCommit", commit)
        .object("replyTo", reply_to)
}

/// A comment's author: a `Bot` for an App's account (`name[bot]`, which GraphQL calls `name`),
/// else a `User`.
fn actor(login: &str) -> Obj {
    match login.strip_suffix("[bot]") {
        Some(name) => Obj::new("Bot")
            .leaf("login", name)
            .leaf("id", format!("BOT_fake{name}")),
        None => Obj::new("User")
            .leaf("login", login)
            .leaf("id", format!("U_fake{login}")),
    }
}

/// `resolveReviewThread(input: {threadId, clientMutationId})` as `login`: resolves the thread
/// (already resolved stays so) and answers its payload; `Err` is GitHub's `NOT_FOUND` message.
pub(crate) fn resolve(state: &mut GithubState, login: &str, input: &Value) -> Result<Obj, String> {
    let node_id = input["threadId"].as_str().unwrap_or_default();
    let not_found = || format!("Could not resolve to a node with the global id of '{node_id}'");
    let root = ReviewThread::root_of(node_id).ok_or_else(not_found)?;
    if !state.resolve_thread(root, login, RESOLVE_OPERATION) {
        return Err(not_found());
    }
    let thread = state.review_threads.get(&root).cloned().ok_or_else(not_found)?;
    let repo = state.repo(&thread.repo).cloned().ok_or_else(not_found)?;
    Ok(Obj::new("ResolveReviewThreadPayload")
        .leaf("clientMutationId", input["clientMutationId"].clone())
        .object("thread", Some(review_thread(state, &repo, &thread))))
}
