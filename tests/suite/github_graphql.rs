//! GitHub's GraphQL API: pitcrew's client against the fake, which checks every query against
//! GitHub's published schema. A pull request's review threads with their comments and replies,
//! read page by page; resolving one, an output the test must look at; and what the fake refuses: a
//! query outside the schema, variables of the wrong type, fields and operations it does not serve,
//! paging GitHub refuses.

use pitcrew::github::{Auth, ClientOptions, CommentId, GithubClient, IssueNumber, RepoName};
use pitcrew_tests::fake_github::{FakeGithub, GRAPHQL_OPERATION, Issue, Repo};
use secrecy::SecretString;
use serde_json::{Value, json};

const REPO: &str = "acme/widgets";
const TOKEN: &str = "ghs_staticGraphqlToken0123456789";
const HEAD_SHA: &str = "6dcb09b5b57875f334f61aebed695e2e4193db5e";
const BASE_SHA: &str = "e7fdf7640066d71ad16a86fbcbb9c6a10a18af4f";
const BOT: &str = "pitcrew[bot]";

fn fake() -> FakeGithub {
    let fake = FakeGithub::builder()
        .repo(Repo::new(REPO))
        .issue(
            REPO,
            Issue::pull_request(7, "Fix the crash", ("fix-crash", HEAD_SHA), ("main", BASE_SHA)).user("alice"),
        )
        .issue(
            REPO,
            Issue::pull_request(8, "Another", ("other", HEAD_SHA), ("main", BASE_SHA)).user("alice"),
        )
        .start();
    fake.allow_token(TOKEN);
    fake
}

fn client(fake: &FakeGithub) -> GithubClient {
    let url = url::Url::parse(&fake.url()).unwrap();
    GithubClient::new(&url, Auth::Token(SecretString::from(TOKEN)), ClientOptions::default()).unwrap()
}

fn repo_name() -> RepoName {
    REPO.parse().unwrap()
}

/// One GraphQL request to the fake, as any HTTP client sends it: status and body.
async fn post(fake: &FakeGithub, method: &str, auth: bool, body: &Value) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = reqwest::Client::new()
        .request(method, format!("{}/graphql", fake.url()))
        .header("user-agent", "pitcrew-tests")
        .header("content-type", "application/json")
        .body(body.to_string());
    if auth {
        request = request.header("authorization", format!("bearer {TOKEN}"));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn query(fake: &FakeGithub, text: &str, variables: Value) -> Value {
    let (status, body) = post(fake, "POST", true, &json!({"query": text, "variables": variables})).await;
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test]
async fn review_threads_come_with_their_comments_and_replies() {
    let fake = fake();
    let finding = fake.add_review_comment(REPO, 7, BOT, "This can panic on empty input.", "src/lib.rs", 10);
    let answer = fake.add_review_reply(finding, "alice", "Fixed in the next commit.");
    let question = fake.add_review_comment(REPO, 7, "bob", "Why this name?", "README.md", 3);
    fake.update_review_thread(question, |thread| {
        thread.resolved_by = Some("bob".to_owned());
        thread.outdated = true;
    });
    fake.add_review_comment(REPO, 8, "bob", "Elsewhere.", "src/main.rs", 1);

    let threads = client(&fake)
        .review_threads(&repo_name(), IssueNumber(7))
        .await
        .unwrap();
    let in_the_fake = fake.review_threads(REPO, 7);
    let ids: Vec<&str> = threads.iter().map(|t| t.id.as_str()).collect();
    let node_ids: Vec<String> = in_the_fake.iter().map(|t| t.node_id()).collect();
    assert_eq!(ids, node_ids);
    assert_eq!(threads.len(), 2);

    let open = &threads[0];
    assert!(!open.resolved && !open.outdated && !open.more_comments);
    assert_eq!(
        (open.path.as_str(), open.line, open.original_line, open.start_line),
        ("src/lib.rs", Some(10), Some(10), None)
    );
    let comments: Vec<(Option<CommentId>, Option<&str>, &str)> = open
        .comments
        .iter()
        .map(|c| (c.id, c.author.as_ref().map(|a| a.as_str()), c.body.as_str()))
        .collect();
    assert_eq!(
        comments,
        [
            (Some(CommentId(finding)), Some(BOT), "This can panic on empty input."),
            (Some(CommentId(answer)), Some("alice"), "Fixed in the next commit."),
        ]
    );
    let first = open.first_comment().unwrap();
    assert_eq!(first.commit.as_ref().map(|c| c.as_str()), Some(HEAD_SHA));
    assert!(first.created_at.is_some());

    let settled = &threads[1];
    assert!(settled.resolved && settled.outdated);
    assert_eq!((settled.line, settled.original_line), (None, Some(3)));

    let requests = fake.requests_to(GRAPHQL_OPERATION);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].graphql_operation.as_deref(), Some("ReviewThreads"));
    assert_eq!(requests[0].path, "/graphql");
    assert_eq!(requests[0].status, 200);
    fake.assert_no_violations();
}

#[tokio::test]
async fn a_missing_pull_request_or_repository_is_not_found() {
    let fake = fake();
    let client = client(&fake);
    let error = client.review_threads(&repo_name(), IssueNumber(99)).await.unwrap_err();
    assert!(error.is_not_found(), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("Could not resolve to a PullRequest with the number of 99. (NOT_FOUND)"),
        "{error}"
    );
    let error = client
        .review_threads(&"acme/nothing".parse().unwrap(), IssueNumber(7))
        .await
        .unwrap_err();
    assert!(error.is_not_found(), "{error:?}");
    fake.assert_no_violations();
}

#[tokio::test]
async fn review_threads_are_read_page_by_page() {
    let fake = fake();
    let roots: Vec<u64> = (0..130)
        .map(|i| fake.add_review_comment(REPO, 7, "bob", &format!("Finding {i}."), "src/lib.rs", i + 1))
        .collect();
    let threads = client(&fake)
        .review_threads(&repo_name(), IssueNumber(7))
        .await
        .unwrap();
    let firsts: Vec<Option<CommentId>> = threads.iter().map(|t| t.first_comment().and_then(|c| c.id)).collect();
    let expected: Vec<Option<CommentId>> = roots.iter().map(|id| Some(CommentId(*id))).collect();
    assert_eq!(firsts, expected);
    let requests = fake.requests_to(GRAPHQL_OPERATION);
    assert_eq!(requests.len(), 2);
    let first_page = &requests[0].response["data"]["repository"]["pullRequest"]["reviewThreads"];
    assert_eq!(first_page["nodes"].as_array().unwrap().len(), 100);
    assert_eq!(first_page["pageInfo"]["hasNextPage"], true);
    assert_eq!(requests[0].body["variables"]["after"], Value::Null);
    assert_eq!(
        requests[1].body["variables"]["after"],
        first_page["pageInfo"]["endCursor"]
    );
    fake.assert_no_violations();
}

#[tokio::test]
async fn a_resolved_thread_is_an_output_the_test_sees() {
    let fake = fake();
    let finding = fake.add_review_comment(REPO, 7, BOT, "Unchecked index.", "src/lib.rs", 4);
    fake.add_review_comment(REPO, 7, "bob", "Typo.", "README.md", 1);
    let client = client(&fake);
    let threads = client.review_threads(&repo_name(), IssueNumber(7)).await.unwrap();
    let mine = threads
        .iter()
        .find(|t| {
            t.first_comment()
                .and_then(|c| c.author.as_ref())
                .is_some_and(|a| a.as_str() == BOT)
        })
        .unwrap();
    client.resolve_review_thread(&mine.id).await.unwrap();

    let unseen = fake.unseen_outputs();
    assert_eq!(unseen.len(), 1, "{unseen:?}");
    assert!(
        unseen[0].starts_with(&format!(
            "graphql resolveReviewThread → review thread PRRT_fake{finding} on"
        )),
        "{unseen:?}"
    );
    let resolved: Vec<(u64, Option<String>)> = fake
        .review_threads(REPO, 7)
        .into_iter()
        .map(|t| (t.root_comment, t.resolved_by))
        .collect();
    assert_eq!(resolved[0], (finding, Some(BOT.to_owned())));
    assert_eq!(resolved[1].1, None);
    assert!(fake.unseen_outputs().is_empty());

    // Resolving again is no error; the client reads the thread resolved.
    client.resolve_review_thread(&mine.id).await.unwrap();
    fake.review_threads(REPO, 7);
    let again = client.review_threads(&repo_name(), IssueNumber(7)).await.unwrap();
    assert!(again[0].resolved && !again[1].resolved);
    let mutations: Vec<Option<String>> = fake
        .requests_to(GRAPHQL_OPERATION)
        .into_iter()
        .map(|r| r.graphql_operation)
        .collect();
    assert_eq!(
        mutations,
        [
            Some("ReviewThreads".to_owned()),
            Some("ResolveReviewThread".to_owned()),
            Some("ResolveReviewThread".to_owned()),
            Some("ReviewThreads".to_owned()),
        ]
    );

    // A thread the fake never handed out is GitHub's NOT_FOUND, not a violation.
    let error = client.resolve_review_thread("PRRT_fake999999").await.unwrap_err();
    assert!(error.is_not_found(), "{error:?}");
    fake.assert_no_violations();
}

#[tokio::test]
async fn the_answer_holds_what_the_query_selects_under_its_aliases() {
    let fake = fake();
    let finding = fake.add_review_comment(REPO, 7, BOT, "Unchecked index.", "src/lib.rs", 4);
    fake.add_review_reply(finding, "alice", "Checked now.");
    let body = query(
        &fake,
        "query Threads($n: Int!) {
          repository(owner: \"ACME\", name: \"widgets\") {
            pr: pullRequest(number: $n) {
              __typename
              threads: reviewThreads(first: 1) {
                totalCount
                nodes {
                  id
                  ... on PullRequestReviewThread { isResolved }
                  comments(last: 1) { edges { node { author { __typename login } replyTo { databaseId } } } }
                }
              }
            }
          }
        }",
        json!({"n": 7}),
    )
    .await;
    assert_eq!(
        body,
        json!({"data": {"repository": {"pr": {
            "__typename": "PullRequest",
            "threads": {
                "totalCount": 1,
                "nodes": [{
                    "id": format!("PRRT_fake{finding}"),
                    "isResolved": false,
                    "comments": {"edges": [{"node": {
                        "author": {"__typename": "User", "login": "alice"},
                        "replyTo": {"databaseId": finding},
                    }}]},
                }],
            },
        }}}})
    );
    fake.assert_no_violations();
}

#[tokio::test]
async fn queries_github_would_refuse_are_violations() {
    let fake = fake();
    fake.add_review_comment(REPO, 7, BOT, "Unchecked index.", "src/lib.rs", 4);
    let threads = |selection: &str| {
        format!(
            "query Q($n: Int!) {{ repository(owner: \"acme\", name: \"widgets\") {{ \
             pullRequest(number: $n) {{ {selection} }} }} }}"
        )
    };
    // A field the schema does not have: refused before anything runs, as GitHub does.
    let body = query(
        &fake,
        &threads("reviewThreads(first: 5) { nodes { id bogus } }"),
        json!({"n": 7}),
    )
    .await;
    assert!(body.get("data").is_none(), "{body}");
    assert!(
        body["errors"][0]["message"].as_str().unwrap().contains("bogus"),
        "{body}"
    );
    let violations = fake.take_violations();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        violations[0].starts_with(
            "POST /graphql: GitHub would refuse the request: type `PullRequestReviewThread` does not have a \
             field `bogus`"
        ),
        "{violations:?}"
    );

    // A variable of the wrong type, and a declared variable left out.
    query(&fake, &threads("id"), json!({"n": "seven"})).await;
    query(&fake, &threads("id"), json!({})).await;
    let violations = fake.take_violations();
    assert_eq!(violations.len(), 2, "{violations:?}");
    assert!(
        violations[0].ends_with("could not coerce variable n: \"seven\" to type Int"),
        "{violations:?}"
    );
    assert!(
        violations[1].ends_with("missing value for non-null variable 'n'"),
        "{violations:?}"
    );

    // What the schema has but the fake does not serve, and paging GitHub refuses.
    for (selection, problem) in [
        (
            "reviewThreads(first: 5) { nodes { viewerCanReply } }",
            "does not serve `PullRequestReviewThread.viewerCanReply`",
        ),
        (
            "reviewThreads { totalCount }",
            "You must provide a `first` or `last` value to properly paginate the `reviewThreads` connection.",
        ),
        (
            "reviewThreads(first: 101) { totalCount }",
            "Requesting 101 records on the `reviewThreads` connection exceeds the `first` limit of 100 records.",
        ),
        (
            "reviewThreads(first: 1, after: \"bm90IGEgY3Vyc29y\") { totalCount }",
            "`after` does not appear to be a valid cursor.",
        ),
    ] {
        let body = query(&fake, &threads(selection), json!({"n": 7})).await;
        assert!(
            body["errors"][0]["message"].as_str().unwrap().contains(problem),
            "{body}"
        );
        let violations = fake.take_violations();
        assert_eq!(violations.len(), 1, "{selection}: {violations:?}");
        assert!(
            violations[0].starts_with("POST /graphql (Q): ") && violations[0].contains(problem),
            "{violations:?}"
        );
    }

    // Root fields and mutations the fake does not implement.
    query(&fake, "{ viewer { login } }", json!({})).await;
    query(
        &fake,
        "mutation { unresolveReviewThread(input: {threadId: \"PRRT_fake1\"}) { clientMutationId } }",
        json!({}),
    )
    .await;
    let violations = fake.take_violations();
    assert_eq!(violations.len(), 2, "{violations:?}");
    assert!(
        violations[0].contains("does not serve `Query.viewer`"),
        "{violations:?}"
    );
    assert!(
        violations[1].contains("does not implement the mutation `unresolveReviewThread`"),
        "{violations:?}"
    );

    // Not GraphQL at all, and GraphQL by GET.
    let (status, body) = post(&fake, "POST", true, &json!({"query": "{ __typename }", "extra": 1})).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = post(&fake, "GET", true, &json!({"query": "{ __typename }"})).await;
    assert_eq!(status, 404);
    assert_eq!(fake.take_violations().len(), 2);

    // No credentials: GitHub's 401, which a test may provoke.
    let (status, body) = post(&fake, "POST", false, &json!({"query": "{ __typename }"})).await;
    assert_eq!(status, 401, "{body}");
    fake.assert_no_violations();
}
