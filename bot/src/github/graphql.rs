//! GitHub's GraphQL API, for what REST cannot do: a pull request's review threads with their
//! resolved state, and resolving one.
//!
//! Each operation is a `const` document with variables: nothing from outside is ever spliced into
//! a query's text. It goes to `/graphql` over the REST client's transport (`http.rs`: auth, retries,
//! error mapping), which sends a query again like a GET and a mutation only when it never
//! connected. GitHub answers 200 even when it refused the operation: an answer's `errors` become
//! [`GithubError::Graphql`] (or [`GithubError::RateLimited`] for `RATE_LIMITED`), whatever `data`
//! came with them. The answers are parsed here, at the edge, into [`ReviewThread`]s.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::client::GithubClient;
use super::error::{GithubError, GraphqlError};
use super::http::{Endpoint, Reply};
use super::ids::{CommentId, CommitSha, IssueNumber, Login, RepoName};
use super::time::parse_rfc3339;

/// One operation: its name (also in its text, so GitHub's logs and the fake name it) and text.
struct Operation {
    name: &'static str,
    /// A query reads only; a mutation writes.
    read_only: bool,
    text: &'static str,
}

/// A page of a pull request's review threads, each with its first hundred comments.
const REVIEW_THREADS: Operation = Operation {
    name: "ReviewThreads",
    read_only: true,
    text: "query ReviewThreads($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id
          isResolved
          isOutdated
          path
          line
          originalLine
          startLine
          comments(first: 100) {
            totalCount
            nodes {
              databaseId
              body
              author { __typename login }
              commit { oid }
              originalCommit { oid }
              createdAt
            }
          }
        }
      }
    }
  }
}",
};

const RESOLVE_REVIEW_THREAD: Operation = Operation {
    name: "ResolveReviewThread",
    read_only: false,
    text: "mutation ResolveReviewThread($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId}) {
    thread { id isResolved }
  }
}",
};

/// Pages of a hundred review threads read at most: 3,000 threads, far more than a pull request
/// has; the rest are left out with a warning.
const MAX_THREAD_PAGES: usize = 30;

/// A review thread of a pull request: a comment on its diff and the replies to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewThread {
    /// The thread's node id, what [`GithubClient::resolve_review_thread`] takes.
    pub id: String,
    pub resolved: bool,
    /// The diff has moved on since the thread's line was commented on.
    pub outdated: bool,
    pub path: String,
    /// The line in the pull request's current diff; `None` when the thread is outdated or on the
    /// whole file.
    pub line: Option<u64>,
    /// The line in the diff the first comment was made on.
    pub original_line: Option<u64>,
    /// The first line of a multi-line comment.
    pub start_line: Option<u64>,
    /// Oldest first; at most the first hundred.
    pub comments: Vec<ThreadComment>,
    /// The thread has more comments than `comments` holds.
    pub more_comments: bool,
}

/// One comment of a review thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadComment {
    /// The REST API's id of the review comment (what replies and reactions take).
    pub id: Option<CommentId>,
    pub body: String,
    /// The author as the REST API names it: an App's bot account as `name[bot]` (GraphQL calls it
    /// `name`). `None` for a deleted account, or a login pitcrew does not accept.
    pub author: Option<Login>,
    /// The commit the comment is on now, and the one it was made on.
    pub commit: Option<CommitSha>,
    pub original_commit: Option<CommitSha>,
    pub created_at: Option<SystemTime>,
}

impl ReviewThread {
    /// The comment that opened the thread.
    pub fn first_comment(&self) -> Option<&ThreadComment> {
        self.comments.first()
    }
}

// ---------------------------------------------------------------------------------------------
// The answers, as GitHub sends them

/// `{"data": …, "errors": […]}`.
#[derive(Deserialize)]
struct Answer {
    data: Option<serde_json::Value>,
    errors: Option<Vec<GraphqlError>>,
}

#[derive(Deserialize)]
struct RepositoryData {
    repository: Option<RepositoryNode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RepositoryNode {
    pull_request: Option<PullRequestNode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PullRequestNode {
    review_threads: Connection<ThreadNode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Connection<T> {
    page_info: Option<PageInfo>,
    total_count: Option<u64>,
    /// GitHub's lists of nodes may hold `null` for what the token may not see.
    nodes: Option<Vec<Option<T>>>,
}

impl<T> Connection<T> {
    fn into_nodes(self) -> (Vec<T>, Option<PageInfo>, Option<u64>) {
        let nodes = self.nodes.unwrap_or_default().into_iter().flatten().collect();
        (nodes, self.page_info, self.total_count)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageInfo {
    has_next_page: bool,
    end_cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ThreadNode {
    id: String,
    is_resolved: bool,
    is_outdated: bool,
    path: String,
    line: Option<u64>,
    original_line: Option<u64>,
    start_line: Option<u64>,
    comments: Connection<CommentNode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CommentNode {
    database_id: Option<u64>,
    #[serde(default)]
    body: String,
    author: Option<ActorNode>,
    commit: Option<CommitNode>,
    original_commit: Option<CommitNode>,
    created_at: Option<String>,
}

#[derive(Deserialize)]
struct ActorNode {
    #[serde(rename = "__typename")]
    typename: String,
    login: String,
}

#[derive(Deserialize)]
struct CommitNode {
    oid: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResolveData {
    resolve_review_thread: Option<ResolvePayload>,
}

#[derive(Deserialize)]
struct ResolvePayload {
    thread: Option<ResolvedThread>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResolvedThread {
    is_resolved: bool,
}

impl ThreadNode {
    fn into_thread(self) -> ReviewThread {
        let (nodes, page, total) = self.comments.into_nodes();
        let comments: Vec<ThreadComment> = nodes.into_iter().map(ThreadComment::from).collect();
        let more_comments = total.unwrap_or(0) > comments.len() as u64 || page.is_some_and(|page| page.has_next_page);
        ReviewThread {
            id: self.id,
            resolved: self.is_resolved,
            outdated: self.is_outdated,
            path: self.path,
            line: self.line,
            original_line: self.original_line,
            start_line: self.start_line,
            comments,
            more_comments,
        }
    }
}

impl From<CommentNode> for ThreadComment {
    fn from(node: CommentNode) -> Self {
        let author = node.author.and_then(|actor| {
            // GraphQL names an App's bot `name`; REST, webhooks and `Login` say `name[bot]`.
            let login = if actor.typename == "Bot" && !actor.login.ends_with("[bot]") {
                format!("{}[bot]", actor.login)
            } else {
                actor.login
            };
            Login::parse(&login).ok()
        });
        let sha = |commit: Option<CommitNode>| commit.and_then(|c| CommitSha::parse(&c.oid).ok());
        ThreadComment {
            id: node.database_id.map(CommentId),
            body: node.body,
            author,
            commit: sha(node.commit),
            original_commit: sha(node.original_commit),
            created_at: node.created_at.as_deref().and_then(parse_rfc3339),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The calls

impl GithubClient {
    /// Every review thread of pull request `pull`, oldest first, each with its first hundred
    /// comments (`more_comments` says when it has more), as far as 3,000 threads.
    pub async fn review_threads(&self, repo: &RepoName, pull: IssueNumber) -> Result<Vec<ReviewThread>, GithubError> {
        let mut threads = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_THREAD_PAGES {
            let variables = json!({
                "owner": repo.owner(),
                "name": repo.name(),
                "number": pull.0,
                "after": after,
            });
            let data: RepositoryData = self.graphql(&REVIEW_THREADS, variables).await?;
            let request = request_name(&REVIEW_THREADS);
            // GitHub answers a missing repository or pull request with a NOT_FOUND error, which
            // `graphql` has returned already; `null` without one is not what it documents.
            let connection = data
                .repository
                .and_then(|r| r.pull_request)
                .ok_or_else(|| GithubError::NotFound {
                    what: format!("{request}: {repo}#{pull}"),
                })?
                .review_threads;
            let (nodes, page, _) = connection.into_nodes();
            let count = nodes.len();
            threads.extend(nodes.into_iter().map(ThreadNode::into_thread));
            match page {
                Some(PageInfo {
                    has_next_page: true,
                    end_cursor: Some(cursor),
                }) if count > 0 => after = Some(cursor),
                _ => return Ok(threads),
            }
        }
        tracing::warn!(%repo, pull = pull.0, read = threads.len(),
            "the pull request has more review threads than pitcrew reads; the rest are left out");
        Ok(threads)
    }

    /// Resolves review thread `thread_id` (a [`ReviewThread::id`]). Resolving a resolved thread
    /// is not an error.
    pub async fn resolve_review_thread(&self, thread_id: &str) -> Result<(), GithubError> {
        let data: ResolveData = self
            .graphql(&RESOLVE_REVIEW_THREAD, json!({ "threadId": thread_id }))
            .await?;
        let resolved = data
            .resolve_review_thread
            .and_then(|payload| payload.thread)
            .is_some_and(|thread| thread.is_resolved);
        if !resolved {
            return Err(GithubError::Decode {
                what: request_name(&RESOLVE_REVIEW_THREAD),
                message: "the answer does not show the thread resolved".to_owned(),
            });
        }
        Ok(())
    }

    /// Sends `operation` with `variables` and decodes its `data`.
    async fn graphql<T: DeserializeOwned>(
        &self,
        operation: &Operation,
        variables: serde_json::Value,
    ) -> Result<T, GithubError> {
        let endpoint = Endpoint::graphql(operation.read_only);
        let body = json!({
            "query": operation.text,
            "operationName": operation.name,
            "variables": variables,
        });
        let reply = self.send(&endpoint, Some(&body)).await?;
        decode_answer(&reply, &request_name(operation), self.http.options.clock.now())
    }
}

/// `POST /graphql (ReviewThreads)`: how errors name the request.
fn request_name(operation: &Operation) -> String {
    format!("POST /graphql ({})", operation.name)
}

/// The `data` of a GraphQL answer, or its `errors`. `now` dates a rate limit's reset.
fn decode_answer<T: DeserializeOwned>(reply: &Reply, request: &str, now: SystemTime) -> Result<T, GithubError> {
    let decode = |message: String| GithubError::Decode {
        what: request.to_owned(),
        message,
    };
    let answer: Answer = serde_json::from_slice(&reply.body).map_err(|err| decode(err.to_string()))?;
    let errors = answer.errors.unwrap_or_default();
    if errors.iter().any(|e| e.kind.as_deref() == Some("RATE_LIMITED")) {
        // GraphQL's primary limit is a 200 with this error and `x-ratelimit-reset`.
        let reset = reply
            .headers
            .get("x-ratelimit-reset")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|secs| UNIX_EPOCH + Duration::from_secs(secs));
        return Err(GithubError::RateLimited {
            request: request.to_owned(),
            reset_at: reset.filter(|at| *at > now),
        });
    }
    if !errors.is_empty() {
        return Err(GithubError::Graphql {
            request: request.to_owned(),
            errors,
        });
    }
    let data = answer
        .data
        .ok_or_else(|| decode("the answer has neither data nor errors".to_owned()))?;
    serde_json::from_value(data).map_err(|err| decode(format!("data: {err}")))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use reqwest::StatusCode;
    use reqwest::header::{HeaderMap, HeaderValue};

    use super::*;

    fn reply(body: serde_json::Value) -> Reply {
        Reply {
            status: StatusCode::OK,
            headers: HeaderMap::new(),
            body: body.to_string().into(),
        }
    }

    fn threads(body: serde_json::Value) -> Result<RepositoryData, GithubError> {
        decode_answer(&reply(body), "POST /graphql (ReviewThreads)", UNIX_EPOCH)
    }

    #[test]
    fn a_page_of_threads_is_parsed_with_bots_named_as_rest_names_them() {
        let sha = "a".repeat(40);
        let data = threads(json!({"data": {"repository": {"pullRequest": {"reviewThreads": {
            "pageInfo": {"hasNextPage": false, "endCursor": "Y3Vyc29yOjE="},
            "nodes": [
                {
                    "id": "PRRT_kwDOAbc", "isResolved": false, "isOutdated": true, "path": "src/lib.rs",
                    "line": null, "originalLine": 12, "startLine": null,
                    "comments": {"totalCount": 2, "nodes": [
                        {"databaseId": 101, "body": "Rename this.", "author": {"__typename": "Bot", "login": "pitcrew"},
                         "commit": {"oid": sha}, "originalCommit": {"oid": sha}, "createdAt": "2024-03-01T10:00:00Z"},
                        {"databaseId": 102, "body": "Done.", "author": {"__typename": "User", "login": "alice"},
                         "commit": null, "originalCommit": null, "createdAt": "2024-03-01T11:00:00Z"}
                    ]}
                },
                null,
                {
                    "id": "PRRT_kwDOAbd", "isResolved": true, "isOutdated": false, "path": "README.md",
                    "line": 3, "originalLine": 3, "startLine": 1,
                    "comments": {"totalCount": 150, "nodes": [
                        {"databaseId": null, "body": "", "author": null, "commit": null, "originalCommit": null,
                         "createdAt": "garbage"}
                    ]}
                }
            ]
        }}}}}))
        .unwrap();
        let connection = data.repository.unwrap().pull_request.unwrap().review_threads;
        let threads: Vec<ReviewThread> = connection
            .into_nodes()
            .0
            .into_iter()
            .map(ThreadNode::into_thread)
            .collect();
        assert_eq!(threads.len(), 2);
        let first = &threads[0];
        assert_eq!(
            (
                first.id.as_str(),
                first.resolved,
                first.outdated,
                first.line,
                first.original_line
            ),
            ("PRRT_kwDOAbc", false, true, None, Some(12))
        );
        assert!(!first.more_comments);
        let opening = first.first_comment().unwrap();
        assert_eq!(opening.id, Some(CommentId(101)));
        assert_eq!(opening.author.as_ref().map(Login::as_str), Some("pitcrew[bot]"));
        assert!(opening.author.as_ref().unwrap().is_bot());
        assert_eq!(opening.commit.as_ref().map(CommitSha::as_str), Some(sha.as_str()));
        assert_eq!(opening.created_at, parse_rfc3339("2024-03-01T10:00:00Z"));
        assert_eq!(first.comments[1].author.as_ref().map(Login::as_str), Some("alice"));
        let second = &threads[1];
        assert!(second.resolved && second.more_comments);
        assert_eq!((second.line, second.start_line), (Some(3), Some(1)));
        let ghost = &second.comments[0];
        assert_eq!((ghost.id, &ghost.author, ghost.created_at), (None, &None, None));
    }

    #[test]
    fn errors_in_a_200_answer_are_errors_with_their_messages() {
        let error = threads(json!({
            "data": {"repository": {"pullRequest": null}},
            "errors": [{"type": "NOT_FOUND", "path": ["repository", "pullRequest"],
                        "locations": [{"line": 3, "column": 5}],
                        "message": "Could not resolve to a PullRequest with the number of 99."}]
        }))
        .err()
        .unwrap();
        assert!(error.is_not_found(), "{error:?}");
        assert_eq!(
            error.to_string(),
            "POST /graphql (ReviewThreads): GitHub's GraphQL API answered with errors: Could not resolve to a \
             PullRequest with the number of 99. (NOT_FOUND)"
        );
        // A query the schema refuses: no `data` at all, no `type`.
        let error = threads(json!({"errors": [
            {"message": "Field 'bogus' doesn't exist on type 'PullRequestReviewThread'",
             "extensions": {"code": "undefinedField"}},
            {"message": "Variable $number of type Int! was provided invalid value"}
        ]}))
        .err()
        .unwrap();
        assert!(!error.is_not_found());
        let GithubError::Graphql { errors, .. } = &error else {
            panic!("{error:?}")
        };
        assert_eq!(errors.len(), 2);
        assert!(error.to_string().ends_with(
            "Field 'bogus' doesn't exist on type 'PullRequestReviewThread'; Variable $number of type Int! was \
             provided invalid value"
        ));
        // Neither data nor errors, and data of the wrong shape, are not GitHub's answers.
        for body in [
            json!({}),
            json!({"data": {"repository": {"pullRequest": {"reviewThreads": 3}}}}),
        ] {
            let error = threads(body).err().unwrap();
            assert!(matches!(error, GithubError::Decode { .. }), "{error:?}");
        }
    }

    #[test]
    fn graphqls_rate_limit_is_a_rate_limit_until_the_reset() {
        let mut reply = reply(
            json!({"errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded for installation ID 1."}]}),
        );
        reply
            .headers
            .insert("x-ratelimit-reset", HeaderValue::from_static("1700000060"));
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let error = decode_answer::<RepositoryData>(&reply, "POST /graphql (ReviewThreads)", now)
            .err()
            .unwrap();
        let GithubError::RateLimited { reset_at, .. } = error else {
            panic!("{error:?}")
        };
        assert_eq!(reset_at, Some(UNIX_EPOCH + Duration::from_secs(1_700_000_060)));
    }
}
