//! The fake GitHub API seen by a plain HTTP client: check runs through their lifecycle, every kind
//! of description violation, App JWTs and installation tokens, reactions and comments, pull
//! requests and reviews, contents (registered and from a real git repository), fault injection,
//! waiting on state changes, and the drop check that fails a test with violations left. GitHub
//! Actions (workflow runs, jobs, logs behind a signed redirect, re-runs), every app's check runs of
//! a commit and the pull requests of a commit are driven through pitcrew's own client, and
//! validated by the full description the fake falls back to.

use std::panic::AssertUnwindSafe;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use pitcrew::github::{
    Auth, CheckConclusion, CheckStatus, ClientOptions, CommitPull, CommitSha, GithubClient, GithubError, NewCheckRun,
    RepoName, RunFilter,
};
use pitcrew_tests::fake_github::{
    ActionsJob, AuthKind, ExternalCheckRun, FakeGithub, Issue, JobRerun, LogDownload, Permission, Repo, Spec,
    WorkflowRun, sign_app_jwt,
};
use pitcrew_tests::git_server::GitServer;
use reqwest::header::HeaderMap;
use secrecy::SecretString;
use serde_json::{Value, json};

const REPO: &str = "acme/widgets";
const TOKEN: &str = "ghs_staticTestToken0123456789";
const HEAD_SHA: &str = "6dcb09b5b57875f334f61aebed695e2e4193db5e";
const BASE_SHA: &str = "e7fdf7640066d71ad16a86fbcbb9c6a10a18af4f";
const WAIT: Duration = Duration::from_secs(30);

struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Value,
    text: String,
}

impl Answer {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }
}

/// One request to the fake with `Authorization: <auth>` when given.
async fn call(fake: &FakeGithub, method: &str, path: &str, auth: Option<&str>, body: Option<Value>) -> Answer {
    call_with(fake, method, path, auth, body, &[]).await
}

async fn call_with(
    fake: &FakeGithub,
    method: &str,
    path: &str,
    auth: Option<&str>,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Answer {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let accept = headers
        .iter()
        .find(|(name, _)| *name == "accept")
        .map_or("application/vnd.github+json", |(_, value)| *value);
    let mut request = reqwest::Client::new()
        .request(method, format!("{}{path}", fake.url()))
        .header("accept", accept)
        .header("x-github-api-version", "2022-11-28");
    // An empty `user-agent` in `headers` means: send none.
    let user_agent = headers
        .iter()
        .find(|(name, _)| *name == "user-agent")
        .map_or("pitcrew-tests", |(_, v)| *v);
    if !user_agent.is_empty() {
        request = request.header("user-agent", user_agent);
    }
    if let Some(auth) = auth {
        request = request.header("authorization", auth);
    }
    for (name, value) in headers
        .iter()
        .filter(|(name, _)| !["accept", "user-agent"].contains(name))
    {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&body).unwrap());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Answer {
        status,
        headers,
        body,
        text,
    }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn fake() -> FakeGithub {
    let fake = FakeGithub::builder()
        .repo(Repo::new(REPO).clone_url("http://127.0.0.1:9/acme/widgets.git"))
        .permission(REPO, "alice", Permission::Write)
        .issue(REPO, Issue::new(1, "Crash on start").body("It crashes.").user("bob"))
        .issue(
            REPO,
            Issue::pull_request(2, "Fix the crash", ("fix-crash", HEAD_SHA), ("main", BASE_SHA)).user("alice"),
        )
        .branch(REPO, "main", BASE_SHA)
        .branch(REPO, "pitcrew/fix", HEAD_SHA)
        .start();
    fake.allow_token(TOKEN);
    fake
}

/// Fails when a response the fake gave breaks the schema GitHub's description gives for it.
fn assert_responses_match_the_description(fake: &FakeGithub) {
    let mut problems = Vec::new();
    for request in fake.requests() {
        // Raw and empty bodies have no JSON to check.
        let Ok((spec, operation)) = Spec::route_github(&request.method, &request.path) else {
            continue;
        };
        if request.response.is_null() {
            continue;
        }
        for error in spec.validate_response(&operation, request.status, &request.response) {
            problems.push(format!(
                "{} {} → {}: {error}",
                request.method, request.path, request.status
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn private_key() -> Vec<u8> {
    std::fs::read(FakeGithub::test_private_key_path()).unwrap()
}

/// Standard base64, ignoring the line breaks GitHub puts in.
fn base64_decode(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace() && *c != b'=') {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        };
        acc = (acc << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

#[tokio::test]
async fn a_check_run_lifecycle_is_accepted_and_kept_whole() {
    let fake = fake();
    let auth = bearer(TOKEN);
    let created = call(
        &fake,
        "POST",
        "/repos/acme/widgets/check-runs",
        Some(&auth),
        Some(json!({"name": "pitcrew", "head_sha": HEAD_SHA, "status": "queued",
            "output": {"title": "Queued", "summary": "Waiting for a worker."}})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let id = created.body["id"].as_u64().unwrap();
    assert_eq!(created.body["status"], "queued");
    assert_eq!(created.body["head_sha"], HEAD_SHA);
    assert_eq!(created.body["app"]["slug"], "pitcrew");
    assert_eq!(created.header("x-ratelimit-limit"), "5000");
    assert_eq!(created.header("x-ratelimit-remaining"), "4999");
    assert_eq!(created.header("x-ratelimit-used"), "1");
    assert!(created.header("x-ratelimit-reset").parse::<u64>().unwrap() > unix_now());
    assert!(!created.header("x-github-request-id").is_empty());

    let path = format!("/repos/acme/widgets/check-runs/{id}");
    let running = call(
        &fake,
        "PATCH",
        &path,
        Some(&auth),
        Some(json!({"status": "in_progress"})),
    )
    .await;
    assert_eq!(running.status, 200, "{}", running.text);
    let annotation = json!({"path": "src/lib.rs", "start_line": 3, "end_line": 4, "annotation_level": "failure",
        "message": "does not compile"});
    let done = call(
        &fake,
        "PATCH",
        &path,
        Some(&auth),
        Some(
            json!({"conclusion": "failure", "output": {"title": "1 error", "summary": "See the annotation.",
            "annotations": [annotation]}}),
        ),
    )
    .await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(done.body["status"], "completed");
    assert_eq!(done.body["output"]["annotations_count"], 1);

    let fetched = call(&fake, "GET", &path, Some(&auth), None).await;
    assert_eq!(fetched.body["conclusion"], "failure");
    assert_eq!(fetched.body["output"]["title"], "1 error");
    assert!(fetched.body["completed_at"].as_str().unwrap().ends_with('Z'));

    let runs = fake.check_runs();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run.status_history(), ["queued", "in_progress", "completed"]);
    assert_eq!(run.history.len(), 3);
    assert_eq!(run.history[0]["output"]["title"], "Queued");
    assert_eq!(run.history[2]["output"]["summary"], "See the annotation.");
    assert_eq!(run.annotations, [annotation]);
    assert_eq!(
        fake.requests_to("checks/update")
            .iter()
            .map(|r| r.status)
            .collect::<Vec<_>>(),
        [200, 200]
    );
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test]
async fn every_kind_of_violation_is_recorded_and_answered_like_github() {
    let fake = fake();
    let auth = bearer(TOKEN);
    let unknown = call(&fake, "GET", "/repos/acme/widgets/frobnicate", Some(&auth), None).await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["message"], "Not Found");
    let wrong_method = call(&fake, "PUT", "/repos/acme/widgets/issues/comments/1", Some(&auth), None).await;
    assert_eq!(wrong_method.status, 404);
    let missing = call(
        &fake,
        "POST",
        "/repos/acme/widgets/check-runs",
        Some(&auth),
        Some(json!({"name": "pitcrew"})),
    )
    .await;
    assert_eq!(missing.status, 422);
    assert!(
        missing.body["message"]
            .as_str()
            .unwrap()
            .starts_with("Invalid request.")
    );
    assert!(
        missing.body["documentation_url"]
            .as_str()
            .unwrap()
            .contains("docs.github.com")
    );
    let wrong_type = call(
        &fake,
        "POST",
        "/repos/acme/widgets/issues/1/comments",
        Some(&auth),
        Some(json!({"body": 42})),
    )
    .await;
    assert_eq!(wrong_type.status, 422);
    let bad_enum = call(
        &fake,
        "POST",
        "/repos/acme/widgets/check-runs",
        Some(&auth),
        Some(json!({"name": "pitcrew", "head_sha": HEAD_SHA, "output": {"title": "t", "summary": "s",
            "annotations": [{"path": "a.rs", "start_line": 1, "end_line": 1, "annotation_level": "fatal", "message": "m"}]}})),
    )
    .await;
    assert_eq!(bad_enum.status, 422);
    assert!(bad_enum.text.contains("annotation_level"), "{}", bad_enum.text);

    let anonymous_client = call_with(
        &fake,
        "GET",
        "/repos/acme/widgets",
        Some(&auth),
        None,
        &[("user-agent", "")],
    )
    .await;
    assert_eq!(anonymous_client.status, 403);
    assert!(
        anonymous_client.body["message"]
            .as_str()
            .unwrap()
            .contains("User-Agent")
    );

    let violations = fake.take_violations();
    assert_eq!(violations.len(), 6, "{violations:#?}");
    assert_eq!(
        violations[5],
        "GET /repos/acme/widgets: no User-Agent header (GitHub refuses such requests)"
    );
    assert_eq!(
        violations[0],
        "GET /repos/acme/widgets/frobnicate: no such path in GitHub's REST API description"
    );
    assert_eq!(
        violations[1],
        "PUT /repos/acme/widgets/issues/comments/1: /repos/{owner}/{repo}/issues/comments/{comment_id} has no such \
         method (it has GET, DELETE, PATCH)"
    );
    assert_eq!(
        violations[2],
        "POST /repos/acme/widgets/check-runs (checks/create): $: missing required property \"head_sha\""
    );
    assert_eq!(
        violations[3],
        "POST /repos/acme/widgets/issues/1/comments (issues/create-comment): $.body: expected string, found integer 42"
    );
    assert_eq!(
        violations[4],
        "POST /repos/acme/widgets/check-runs (checks/create): $.output.annotations[0].annotation_level: \"fatal\" is \
         not one of [\"notice\",\"warning\",\"failure\"]"
    );
    // Refused requests changed nothing.
    assert!(fake.check_runs().is_empty());
    assert!(fake.comments_on(REPO, 1).is_empty());
    let statuses: Vec<u16> = fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [404, 404, 422, 422, 422, 403]);
    assert!(fake.violations().is_empty());
}

#[tokio::test]
async fn an_app_jwt_is_accepted_and_bad_ones_are_refused() {
    let fake = fake();
    let app = call(&fake, "GET", "/app", Some(&bearer(&fake.app_jwt())), None).await;
    assert_eq!(app.status, 200, "{}", app.text);
    assert_eq!(app.body["id"], fake.app_id());
    assert_eq!(app.body["slug"], "pitcrew");
    // GitHub's documented example: iat a minute back, exp ten minutes ahead, iss as a string.
    let now = unix_now();
    let docs_style = sign_app_jwt(&private_key(), &json!(fake.app_id().to_string()), now - 60, now + 600).unwrap();
    assert_eq!(
        call(&fake, "GET", "/app", Some(&bearer(&docs_style)), None)
            .await
            .status,
        200
    );

    let refused = |jwt: String| {
        let fake = &fake;
        async move {
            let answer = call(fake, "GET", "/app", Some(&bearer(&jwt)), None).await;
            assert_eq!(answer.status, 401, "{}", answer.text);
            answer.body["message"].as_str().unwrap().to_owned()
        }
    };
    let key = private_key();
    let id = json!(fake.app_id());
    let expired = refused(sign_app_jwt(&key, &id, now - 700, now - 100).unwrap()).await;
    assert!(expired.contains("'exp'"), "{expired}");
    let wrong_iss = refused(sign_app_jwt(&key, &json!(fake.app_id() + 1), now - 60, now + 500).unwrap()).await;
    assert!(wrong_iss.contains("'iss'"), "{wrong_iss}");
    let too_long = refused(sign_app_jwt(&key, &id, now, now + 3600).unwrap()).await;
    assert!(too_long.contains("too far in the future"), "{too_long}");
    let future = refused(sign_app_jwt(&key, &id, now + 120, now + 300).unwrap()).await;
    assert!(future.contains("'iat'"), "{future}");
    // Not signed by the App's key: the claims of one token under the signature of another.
    let good = sign_app_jwt(&key, &id, now - 60, now + 500).unwrap();
    let other = sign_app_jwt(&key, &id, now - 30, now + 400).unwrap();
    let forged = format!(
        "{}.{}",
        good.rsplit_once('.').unwrap().0,
        other.rsplit_once('.').unwrap().1
    );
    assert_eq!(refused(forged).await, "A JSON web token could not be decoded");
    // HS256 keyed with the public key: the classic algorithm confusion.
    let public = std::fs::read(FakeGithub::test_public_key_path()).unwrap();
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(json!({"alg": "HS256", "typ": "JWT"}).to_string()),
        URL_SAFE_NO_PAD.encode(json!({"iat": now - 60, "exp": now + 500, "iss": fake.app_id()}).to_string())
    );
    let mac = ring::hmac::sign(
        &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &public),
        signing_input.as_bytes(),
    );
    let confused = format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(mac.as_ref()));
    assert_eq!(refused(confused).await, "A JSON web token could not be decoded");
    // A JWT goes only as `Bearer`, and a token is no JWT.
    let as_token = call(&fake, "GET", "/app", Some(&format!("token {}", fake.app_jwt())), None).await;
    assert_eq!(as_token.status, 401);
    assert_eq!(call(&fake, "GET", "/app", Some(&bearer(TOKEN)), None).await.status, 401);
    assert_eq!(call(&fake, "GET", "/app", None, None).await.status, 401);
    let kinds: Vec<AuthKind> = fake.requests().into_iter().map(|r| r.auth).collect();
    assert_eq!(kinds[..2], [AuthKind::AppJwt, AuthKind::AppJwt]);
    assert!(matches!(&kinds[2], AuthKind::Refused(reason) if reason.contains("'exp'")));
    assert_eq!(kinds.last(), Some(&AuthKind::None));
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test]
async fn an_installation_token_opens_the_repository_endpoints() {
    let fake = fake();
    let jwt = bearer(&fake.app_jwt());
    let installation = call(&fake, "GET", "/repos/acme/widgets/installation", Some(&jwt), None).await;
    assert_eq!(installation.status, 200, "{}", installation.text);
    assert_eq!(installation.body["id"], fake.installation_id());
    assert_eq!(installation.body["account"]["login"], "acme");

    let path = format!("/app/installations/{}/access_tokens", fake.installation_id());
    let issued = call(
        &fake,
        "POST",
        &path,
        Some(&jwt),
        Some(json!({"permissions": {"checks": "write"}})),
    )
    .await;
    assert_eq!(issued.status, 201, "{}", issued.text);
    let token = issued.body["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("ghs_") && token.len() == 40, "{token}");
    assert_eq!(issued.body["permissions"], json!({"checks": "write"}));
    let expires_at = issued.body["expires_at"].as_str().unwrap();
    assert_eq!(expires_at.len(), "2016-07-11T22:14:10Z".len(), "{expires_at}");
    assert!(expires_at.ends_with('Z'));
    let wrong_installation = call(&fake, "POST", "/app/installations/1/access_tokens", Some(&jwt), None).await;
    assert_eq!(wrong_installation.status, 404);
    assert_eq!(fake.token_requests(), 2);

    for auth in [bearer(&token), format!("token {token}")] {
        let repo = call(&fake, "GET", "/repos/acme/widgets", Some(&auth), None).await;
        assert_eq!(repo.status, 200, "{}", repo.text);
        assert_eq!(repo.body["full_name"], REPO);
        assert_eq!(repo.body["clone_url"], "http://127.0.0.1:9/acme/widgets.git");
        assert_eq!(repo.body["default_branch"], "main");
        assert_eq!(repo.body["owner"]["login"], "acme");
    }
    let last = fake.requests().pop().unwrap();
    assert_eq!(last.auth, AuthKind::InstallationToken);
    assert!(
        last.headers
            .iter()
            .all(|(name, value)| name != "authorization" && !value.contains(&token))
    );
    // The repository endpoints do not take the JWT.
    assert_eq!(
        call(&fake, "GET", "/repos/acme/widgets", Some(&jwt), None).await.status,
        401
    );

    fake.expire_installation_tokens();
    let expired = call(&fake, "GET", "/repos/acme/widgets", Some(&bearer(&token)), None).await;
    assert_eq!(expired.status, 401);
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test]
async fn requests_without_a_good_token_get_githubs_401() {
    let fake = fake();
    let none = call(&fake, "GET", "/repos/acme/widgets/issues/1", None, None).await;
    assert_eq!(none.status, 401);
    assert_eq!(none.body["message"], "Requires authentication");
    let bad = call(
        &fake,
        "GET",
        "/repos/acme/widgets/issues/1",
        Some("Bearer ghs_nope"),
        None,
    )
    .await;
    assert_eq!(bad.status, 401);
    assert_eq!(bad.body["message"], "Bad credentials");
    assert_eq!(bad.body["documentation_url"], "https://docs.github.com/rest");
    assert!(!bad.header("x-github-request-id").is_empty());
    // Rate limits need no authentication.
    let rate = call(&fake, "GET", "/rate_limit", None, None).await;
    assert_eq!(rate.status, 200);
    assert_eq!(rate.body["resources"]["core"]["limit"], 5000);
    let ok = call(
        &fake,
        "GET",
        "/repos/acme/widgets/issues/1",
        Some(&format!("token {TOKEN}")),
        None,
    )
    .await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.body["title"], "Crash on start");
    assert!(ok.body.get("pull_request").is_none());
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test]
async fn reactions_and_comment_edits_round_trip() {
    let fake = fake();
    let auth = bearer(TOKEN);
    let comment_id = fake.add_issue_comment(REPO, 2, "alice", "@agent fix this");
    let path = format!("/repos/acme/widgets/issues/comments/{comment_id}/reactions");
    let first = call(&fake, "POST", &path, Some(&auth), Some(json!({"content": "eyes"}))).await;
    assert_eq!(first.status, 201, "{}", first.text);
    assert_eq!(first.body["content"], "eyes");
    assert_eq!(first.body["user"]["login"], "pitcrew[bot]");
    assert_eq!(first.body["user"]["type"], "Bot");
    let again = call(&fake, "POST", &path, Some(&auth), Some(json!({"content": "eyes"}))).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body["id"], first.body["id"]);
    let listed = call(&fake, "GET", &path, Some(&auth), None).await;
    assert_eq!(listed.body.as_array().unwrap().len(), 1);

    let reply = call(
        &fake,
        "POST",
        "/repos/acme/widgets/issues/2/comments",
        Some(&auth),
        Some(json!({"body": "On it."})),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    let reply_id = reply.body["id"].as_u64().unwrap();
    assert_ne!(reply_id, comment_id);
    assert!(
        reply.body["html_url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/issues/2#issuecomment-{reply_id}"))
    );
    let edit_path = format!("/repos/acme/widgets/issues/comments/{reply_id}");
    let edited = call(
        &fake,
        "PATCH",
        &edit_path,
        Some(&auth),
        Some(json!({"body": "Done: 1 commit."})),
    )
    .await;
    assert_eq!(edited.status, 200);
    assert_eq!(
        call(&fake, "GET", &edit_path, Some(&auth), None).await.body["body"],
        "Done: 1 commit."
    );
    let comments = fake.comments_on(REPO, 2);
    assert_eq!(comments.len(), 2);
    assert_eq!(comments[1].edits, ["On it."]);
    assert_eq!(comments[1].user, "pitcrew[bot]");

    // Review comments: a reaction, and a reply in the thread.
    let review_comment = fake.add_review_comment(REPO, 2, "alice", "@agent rename this", "src/lib.rs", 10);
    let reaction_path = format!("/repos/acme/widgets/pulls/comments/{review_comment}/reactions");
    let reacted = call(
        &fake,
        "POST",
        &reaction_path,
        Some(&auth),
        Some(json!({"content": "+1"})),
    )
    .await;
    assert_eq!(reacted.status, 201);
    let thread_reply = call(
        &fake,
        "POST",
        &format!("/repos/acme/widgets/pulls/2/comments/{review_comment}/replies"),
        Some(&auth),
        Some(json!({"body": "Renamed."})),
    )
    .await;
    assert_eq!(thread_reply.status, 201, "{}", thread_reply.text);
    assert_eq!(thread_reply.body["in_reply_to_id"], review_comment);
    assert_eq!(thread_reply.body["path"], "src/lib.rs");
    let missing_parent = call(
        &fake,
        "POST",
        "/repos/acme/widgets/pulls/2/comments/999999/replies",
        Some(&auth),
        Some(json!({"body": "?"})),
    )
    .await;
    assert_eq!(missing_parent.status, 404);
    fake.state(|s| {
        assert_eq!(s.reactions_on_issue_comment(comment_id).len(), 1);
        assert_eq!(s.reactions_on_review_comment(review_comment)[0].content, "+1");
        assert_eq!(s.review_comments.len(), 2);
    });
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test]
async fn pull_requests_reviews_and_permissions() {
    let fake = fake();
    let auth = bearer(TOKEN);
    let permission = call(
        &fake,
        "GET",
        "/repos/acme/widgets/collaborators/alice/permission",
        Some(&auth),
        None,
    )
    .await;
    assert_eq!(permission.body["permission"], "write");
    assert_eq!(permission.body["user"]["login"], "alice");
    let nobody = call(
        &fake,
        "GET",
        "/repos/acme/widgets/collaborators/mallory/permission",
        Some(&auth),
        None,
    )
    .await;
    assert_eq!(nobody.body["permission"], "none");

    let pull = call(&fake, "GET", "/repos/acme/widgets/pulls/2", Some(&auth), None).await;
    assert_eq!(pull.status, 200);
    assert_eq!(pull.body["head"]["sha"], HEAD_SHA);
    assert_eq!(pull.body["head"]["ref"], "fix-crash");
    assert_eq!(pull.body["head"]["repo"]["full_name"], REPO);
    assert_eq!(pull.body["base"]["ref"], "main");
    assert_eq!(pull.body["user"]["login"], "alice");
    let as_issue = call(&fake, "GET", "/repos/acme/widgets/issues/2", Some(&auth), None).await;
    assert!(
        as_issue.body["pull_request"]["url"]
            .as_str()
            .unwrap()
            .ends_with("/pulls/2")
    );

    let created = call(
        &fake,
        "POST",
        "/repos/acme/widgets/pulls",
        Some(&auth),
        Some(json!({"title": "Bump deps", "head": "pitcrew/fix", "base": "main", "body": "Chore."})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.body["number"], 3);
    assert!(
        created.body["html_url"]
            .as_str()
            .unwrap()
            .ends_with("/acme/widgets/pull/3")
    );
    assert_eq!(created.body["head"]["sha"], HEAD_SHA);
    let duplicate = call(
        &fake,
        "POST",
        "/repos/acme/widgets/pulls",
        Some(&auth),
        Some(json!({"title": "Again", "head": "acme:pitcrew/fix", "base": "main"})),
    )
    .await;
    assert_eq!(duplicate.status, 422);
    let unknown_branch = call(
        &fake,
        "POST",
        "/repos/acme/widgets/pulls",
        Some(&auth),
        Some(json!({"title": "Nope", "head": "no-such-branch", "base": "main"})),
    )
    .await;
    assert_eq!(unknown_branch.status, 422);
    assert_eq!(unknown_branch.body["errors"][0]["field"], "head");

    let review = call(
        &fake,
        "POST",
        "/repos/acme/widgets/pulls/2/reviews",
        Some(&auth),
        Some(
            json!({"commit_id": HEAD_SHA, "body": "Two nits.", "event": "COMMENT", "comments": [
                {"path": "src/lib.rs", "line": 3, "side": "RIGHT", "body": "nit: name"},
                {"path": "src/main.rs", "start_line": 1, "line": 4, "body": "nit: order"}
            ]}),
        ),
    )
    .await;
    assert_eq!(review.status, 200, "{}", review.text);
    assert_eq!(review.body["state"], "COMMENTED");
    let reviews = fake.reviews();
    assert_eq!(reviews.len(), 1);
    assert_eq!(reviews[0].comment_ids.len(), 2);
    let inline = call(&fake, "GET", "/repos/acme/widgets/pulls/2/comments", Some(&auth), None).await;
    let inline = inline.body.as_array().unwrap().clone();
    assert_eq!(inline.len(), 2);
    assert_eq!(inline[1]["start_line"], 1);
    assert_eq!(inline[1]["pull_request_review_id"], reviews[0].id);
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test]
async fn contents_come_base64_encoded_from_registered_files_and_git() {
    let git = GitServer::start("unused");
    let readme = "# Widgets\n".repeat(20);
    git.create_repo("acme/gadgets", &[("README.md", &readme), ("docs/guide.md", "guide\n")])
        .unwrap();
    let fake = FakeGithub::builder()
        .repo(Repo::new(REPO))
        .repo(Repo::new("acme/gadgets").git_dir(git.repo_path("acme/gadgets")))
        .file(REPO, "main", ".github/pitcrew.toml", "[agent]\nmax_steps = 5\n")
        .file(REPO, "feature", ".github/pitcrew.toml", "[agent]\nmax_steps = 9\n")
        .token(TOKEN)
        .start();
    let auth = bearer(TOKEN);
    let config = call(
        &fake,
        "GET",
        "/repos/acme/widgets/contents/.github/pitcrew.toml",
        Some(&auth),
        None,
    )
    .await;
    assert_eq!(config.status, 200, "{}", config.text);
    assert_eq!(config.body["encoding"], "base64");
    assert_eq!(config.body["path"], ".github/pitcrew.toml");
    assert_eq!(config.body["name"], "pitcrew.toml");
    assert_eq!(
        base64_decode(config.body["content"].as_str().unwrap()),
        b"[agent]\nmax_steps = 5\n"
    );
    let feature = call(
        &fake,
        "GET",
        "/repos/acme/widgets/contents/.github/pitcrew.toml?ref=feature",
        Some(&auth),
        None,
    )
    .await;
    assert_eq!(
        base64_decode(feature.body["content"].as_str().unwrap()),
        b"[agent]\nmax_steps = 9\n"
    );
    let missing = call(&fake, "GET", "/repos/acme/widgets/contents/nope.txt", Some(&auth), None).await;
    assert_eq!(missing.status, 404);

    let from_git = call(
        &fake,
        "GET",
        "/repos/acme/gadgets/contents/README.md",
        Some(&auth),
        None,
    )
    .await;
    assert_eq!(from_git.status, 200, "{}", from_git.text);
    let content = from_git.body["content"].as_str().unwrap();
    assert!(
        content.lines().all(|line| line.len() <= 60),
        "GitHub breaks base64 into lines"
    );
    assert_eq!(base64_decode(content), readme.as_bytes());
    assert_eq!(from_git.body["size"], readme.len());
    let blob = git.rev_parse("acme/gadgets", "main:README.md").unwrap();
    assert_eq!(from_git.body["sha"], blob);
    let raw = call_with(
        &fake,
        "GET",
        "/repos/acme/gadgets/contents/docs/guide.md",
        Some(&auth),
        None,
        &[("accept", "application/vnd.github.raw+json")],
    )
    .await;
    assert_eq!(raw.text, "guide\n");
    let directory = call(&fake, "GET", "/repos/acme/gadgets/contents/docs", Some(&auth), None).await;
    assert_eq!(directory.status, 404);
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test]
async fn injected_faults_answer_instead_of_the_fake_and_then_stop() {
    let fake = fake();
    let auth = bearer(TOKEN);
    let create = json!({"name": "pitcrew", "head_sha": HEAD_SHA});
    fake.fail_next_rate_limited("POST", "/repos/{owner}/{repo}/check-runs", 1, Duration::from_secs(60));
    let limited = call(
        &fake,
        "POST",
        "/repos/acme/widgets/check-runs",
        Some(&auth),
        Some(create.clone()),
    )
    .await;
    assert_eq!(limited.status, 403);
    assert_eq!(limited.header("x-ratelimit-remaining"), "0");
    let reset: u64 = limited.header("x-ratelimit-reset").parse().unwrap();
    assert!(reset >= unix_now() + 50, "{reset}");
    assert!(
        limited.body["message"]
            .as_str()
            .unwrap()
            .starts_with("API rate limit exceeded")
    );
    assert!(fake.check_runs().is_empty(), "a refused request changes nothing");

    fake.fail_next_secondary_rate_limited("*", "/repos/acme/widgets/issues", 1, 429, Duration::from_secs(7));
    let secondary = call(&fake, "GET", "/repos/acme/widgets/issues/1", Some(&auth), None).await;
    assert_eq!(secondary.status, 429);
    assert_eq!(secondary.header("retry-after"), "7");
    assert!(!secondary.header("x-ratelimit-limit").is_empty());

    fake.fail_next_server_error("POST", "/repos/acme/widgets/check-runs", 2, 502);
    for _ in 0..2 {
        let failed = call(
            &fake,
            "POST",
            "/repos/acme/widgets/check-runs",
            Some(&auth),
            Some(create.clone()),
        )
        .await;
        assert_eq!(failed.status, 502);
    }
    fake.fail_next(
        "GET",
        "/rate_limit",
        1,
        503,
        &[("x-custom", "yes")],
        json!({"message": "custom"}),
    );
    let custom = call(&fake, "GET", "/rate_limit", None, None).await;
    assert_eq!((custom.status, custom.header("x-custom")), (503, "yes"));

    let served = call(
        &fake,
        "POST",
        "/repos/acme/widgets/check-runs",
        Some(&auth),
        Some(create),
    )
    .await;
    assert_eq!(served.status, 201);
    assert_eq!(fake.check_runs().len(), 1);
    let statuses: Vec<u16> = fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [403, 429, 502, 502, 503, 201]);
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test]
async fn wait_until_wakes_on_a_state_change() {
    let fake = fake();
    let auth = bearer(TOKEN);
    let (seen, answer) = tokio::join!(
        fake.wait_until(WAIT, |s| s.comments_on(REPO, 1).iter().any(|c| c.body == "hello")),
        call(
            &fake,
            "POST",
            "/repos/acme/widgets/issues/1/comments",
            Some(&auth),
            Some(json!({"body": "hello"}))
        ),
    );
    assert!(seen);
    assert_eq!(answer.status, 201);
    // Changes made through the fake's own methods wake waiters too.
    let (seen, ()) = tokio::join!(
        fake.wait_until(WAIT, |s| s.permission(REPO, "carol") == Permission::Admin),
        async { fake.set_permission(REPO, "carol", Permission::Admin) },
    );
    assert!(seen);
    assert!(
        !fake
            .wait_until(Duration::from_millis(20), |s| s.issue(REPO, 99).is_some())
            .await
    );
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test(start_paused = true)]
async fn wait_until_is_not_cut_short_by_paused_time() {
    let fake = fake();
    let auth = bearer(TOKEN);
    let (seen, answer) = tokio::join!(
        fake.wait_for_requests(WAIT, |requests| requests.iter().any(|r| r.status == 201)),
        call(
            &fake,
            "POST",
            "/repos/acme/widgets/issues/1/comments",
            Some(&auth),
            Some(json!({"body": "paused"}))
        ),
    );
    assert!(seen);
    assert_eq!(answer.status, 201);
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test]
async fn dropping_a_fake_with_violations_fails_the_test() {
    let fake = fake();
    let unknown = call(&fake, "GET", "/repos/acme/widgets/nonsense", Some(&bearer(TOKEN)), None).await;
    assert_eq!(unknown.status, 404);
    let panic = std::panic::catch_unwind(AssertUnwindSafe(move || drop(fake))).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("GET /repos/acme/widgets/nonsense"), "{message}");
    assert!(
        message.contains("1 request(s) broke GitHub's REST API description"),
        "{message}"
    );
}

#[tokio::test]
async fn unimplemented_operations_are_violations_not_silent_answers() {
    let fake = fake();
    let answer = call(
        &fake,
        "GET",
        "/repos/acme/widgets/git/ref/heads/main",
        Some(&bearer(TOKEN)),
        None,
    )
    .await;
    assert_eq!(answer.status, 501);
    let violations = fake.take_violations();
    assert_eq!(violations.len(), 1);
    assert!(
        violations[0].contains("(git/get-ref): the fake GitHub does not implement"),
        "{violations:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// GitHub Actions, every app's check runs, pull requests of a commit: through pitcrew's client

const RUN: u64 = 9_100_000_001;
const TEST_1: u64 = 9_200_000_001;
const LINT_1: u64 = 9_200_000_002;
const TEST_2: u64 = 9_200_000_003;
const OTHER_SHA: &str = "0123456789abcdef0123456789abcdef01234567";

fn client(fake: &FakeGithub) -> GithubClient {
    let url = url::Url::parse(&fake.url()).unwrap();
    GithubClient::new(&url, Auth::Token(SecretString::from(TOKEN)), ClientOptions::default()).unwrap()
}

fn repo_name() -> RepoName {
    REPO.parse().unwrap()
}

/// The test fake with a CI workflow run on pull request 2's head: attempt 1 failed `test` and
/// passed `lint`; attempt 2 re-ran `test`, which failed again. Another run is on another commit.
fn actions_fake() -> FakeGithub {
    let fake = fake();
    fake.add_workflow_run(
        REPO,
        WorkflowRun::new(RUN, "CI", HEAD_SHA)
            .head_branch("fix-crash")
            .pull_request(2)
            .conclusion("failure"),
    );
    fake.add_actions_job(
        REPO,
        ActionsJob::new(TEST_1, RUN, "test")
            .conclusion("failure")
            .step("Set up job", "success")
            .step("Run cargo test", "failure")
            .log("attempt one\n"),
    );
    fake.add_actions_job(
        REPO,
        ActionsJob::new(LINT_1, RUN, "lint")
            .step("Run cargo clippy", "success")
            .log("clean\n"),
    );
    fake.add_actions_job(
        REPO,
        ActionsJob::new(TEST_2, RUN, "test")
            .run_attempt(2)
            .conclusion("failure")
            .step("Run cargo test", "failure")
            .log("attempt two\nerror: test failed, to rerun pass `--lib`\n"),
    );
    let other = fake.add_workflow_run(REPO, WorkflowRun::new(0, "CI", OTHER_SHA));
    fake.add_actions_job(REPO, ActionsJob::new(0, other, "test"));
    fake
}

#[tokio::test]
async fn workflow_runs_and_jobs_of_every_attempt_are_listed_through_the_client() {
    let fake = actions_fake();
    let client = client(&fake);
    let runs = client.list_workflow_runs_for_sha(&repo_name(), HEAD_SHA).await.unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    assert_eq!((run.id, run.head_sha.as_str()), (RUN, HEAD_SHA));
    assert_eq!(run.name.as_deref(), Some("CI"));
    assert_eq!(run.head_branch.as_deref(), Some("fix-crash"));
    assert_eq!(run.event.as_deref(), Some("pull_request"));
    assert_eq!(
        (run.status.as_deref(), run.conclusion.as_deref()),
        (Some("completed"), Some("failure"))
    );
    assert_eq!(run.run_attempt, Some(2), "a job of attempt 2 makes the run's attempt 2");
    assert_eq!(run.pull_requests, [2]);
    assert_eq!(
        run.html_url.as_deref(),
        Some(format!("https://github.com/acme/widgets/actions/runs/{RUN}").as_str())
    );

    let latest = client
        .list_jobs_for_run(&repo_name(), RUN, RunFilter::Latest)
        .await
        .unwrap();
    let ids = |jobs: &[pitcrew::github::ActionsJob]| jobs.iter().map(|j| j.id).collect::<Vec<_>>();
    assert_eq!(ids(&latest), [TEST_2]);
    let job = &latest[0];
    assert_eq!((job.run_id, job.run_attempt, job.name.as_str()), (RUN, Some(2), "test"));
    assert_eq!(job.head_sha, HEAD_SHA);
    assert_eq!(job.conclusion.as_deref(), Some("failure"));
    assert_eq!(job.steps.len(), 1);
    assert_eq!(
        (
            job.steps[0].name.as_str(),
            job.steps[0].number,
            job.steps[0].conclusion.as_deref()
        ),
        ("Run cargo test", 1, Some("failure"))
    );
    assert_eq!(
        job.html_url.as_deref(),
        Some(format!("https://github.com/acme/widgets/actions/runs/{RUN}/job/{TEST_2}").as_str())
    );
    let all = client
        .list_jobs_for_run(&repo_name(), RUN, RunFilter::All)
        .await
        .unwrap();
    assert_eq!(ids(&all), [TEST_1, LINT_1, TEST_2]);
    assert_eq!(all[0].steps.len(), 2);

    let missing = client
        .list_jobs_for_run(&repo_name(), 77, RunFilter::All)
        .await
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing:?}");
    let queries: Vec<Option<String>> = fake
        .requests_to("actions/list-jobs-for-workflow-run")
        .into_iter()
        .map(|r| r.query)
        .collect();
    assert_eq!(queries[0].as_deref(), Some("filter=latest&per_page=100&page=1"));
    assert_eq!(queries[1].as_deref(), Some("filter=all&per_page=100&page=1"));
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test]
async fn check_runs_of_a_commit_are_the_bots_the_actions_jobs_and_other_apps() {
    let fake = actions_fake();
    let client = client(&fake);
    let new_run = |name: &str| NewCheckRun {
        name: name.to_owned(),
        head_sha: CommitSha(HEAD_SHA.to_owned()),
        status: CheckStatus::Completed,
        started_at: None,
        conclusion: Some(CheckConclusion::Neutral),
        completed_at: None,
        details_url: None,
        external_id: None,
        output: None,
    };
    // The bot's run, then its re-run, and a second check.
    let first = client
        .create_check_run(&repo_name(), &new_run("pitcrew"))
        .await
        .unwrap();
    let rerun = client
        .create_check_run(&repo_name(), &new_run("pitcrew"))
        .await
        .unwrap();
    let review = client
        .create_check_run(&repo_name(), &new_run("pitcrew-review"))
        .await
        .unwrap();
    let codecov = fake.add_external_check_run(
        REPO,
        ExternalCheckRun::new(0, "codecov/patch", HEAD_SHA, "codecov")
            .conclusion("failure")
            .output(
                "62% of diff hit",
                "Coverage dropped by 3%.",
                Some("src/lib.rs: 4 lines missed"),
            ),
    );
    fake.add_external_check_run(REPO, ExternalCheckRun::new(0, "codecov/patch", OTHER_SHA, "codecov"));

    let latest = client
        .list_check_runs_for_ref(&repo_name(), HEAD_SHA, None, RunFilter::Latest)
        .await
        .unwrap();
    let mut ids: Vec<u64> = latest.iter().map(|r| r.id).collect();
    ids.sort_unstable();
    let mut expected = vec![rerun.id.0, review.id.0, codecov, LINT_1, TEST_2];
    expected.sort_unstable();
    assert_eq!(ids, expected);
    let by_id = |id: u64| latest.iter().find(|r| r.id == id).unwrap();

    let ours = by_id(rerun.id.0);
    assert_eq!(
        ours.app.as_ref().map(|a| (a.id, a.slug.as_deref())),
        Some((fake.app_id(), Some("pitcrew")))
    );
    assert_eq!(
        (ours.name.as_str(), ours.conclusion.as_deref()),
        ("pitcrew", Some("neutral"))
    );

    let job = by_id(TEST_2);
    assert_eq!(
        job.app.as_ref().map(|a| (a.id, a.slug.as_deref())),
        Some((15368, Some("github-actions")))
    );
    assert_eq!(
        (job.name.as_str(), job.status.as_str(), job.conclusion.as_deref()),
        ("test", "completed", Some("failure"))
    );
    assert_eq!(job.head_sha, HEAD_SHA);
    let suite = job.check_suite_id.unwrap();
    assert_eq!(
        by_id(LINT_1).check_suite_id,
        Some(suite),
        "one workflow run, one check suite"
    );
    assert_ne!(ours.check_suite_id, Some(suite));
    assert!(job.details_url.as_deref().unwrap().ends_with(&format!("/job/{TEST_2}")));

    let external = by_id(codecov);
    assert_eq!(external.app.as_ref().unwrap().slug.as_deref(), Some("codecov"));
    assert_eq!(external.output.title.as_deref(), Some("62% of diff hit"));
    assert_eq!(external.output.summary.as_deref(), Some("Coverage dropped by 3%."));
    assert_eq!(external.output.text.as_deref(), Some("src/lib.rs: 4 lines missed"));

    let all = client
        .list_check_runs_for_ref(&repo_name(), HEAD_SHA, None, RunFilter::All)
        .await
        .unwrap();
    assert_eq!(all.len(), 7, "{all:#?}");
    assert!(all.iter().any(|r| r.id == first.id.0) && all.iter().any(|r| r.id == TEST_1));
    let tests = client
        .list_check_runs_for_ref(&repo_name(), HEAD_SHA, Some("test"), RunFilter::All)
        .await
        .unwrap();
    assert_eq!(tests.iter().map(|r| r.id).collect::<Vec<_>>(), [TEST_1, TEST_2]);
    // A branch name stands for its head commit.
    let by_branch = client
        .list_check_runs_for_ref(&repo_name(), "pitcrew/fix", Some("test"), RunFilter::Latest)
        .await
        .unwrap();
    assert_eq!(by_branch.iter().map(|r| r.id).collect::<Vec<_>>(), [TEST_2]);
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test]
async fn a_job_log_comes_through_the_signed_redirect_without_the_token() {
    let fake = actions_fake();
    let log = client(&fake)
        .download_job_log(&repo_name(), TEST_2, 1 << 20)
        .await
        .unwrap();
    assert_eq!(log.text, "attempt two\nerror: test failed, to rerun pass `--lib`\n");
    assert!(!log.truncated);
    assert_eq!(log.total_bytes, log.text.len() as u64);
    assert_eq!(
        fake.log_downloads(),
        [LogDownload {
            job_id: TEST_2,
            authorization: false,
            status: 200
        }]
    );
    let asked = fake.requests_to("actions/download-job-logs-for-workflow-run");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].status, 302);
    assert_eq!(asked[0].auth, AuthKind::StaticToken);
    fake.assert_no_violations();
}

#[tokio::test]
async fn a_log_longer_than_asked_for_keeps_its_tail_from_a_line_start() {
    let fake = actions_fake();
    let log: String = (0..5000)
        .map(|i| format!("2024-05-01T12:00:00Z test case_{i:04} ... ok\n"))
        .collect();
    let job = fake.add_actions_job(REPO, ActionsJob::new(0, RUN, "long").run_attempt(2).log(log.clone()));
    let got = client(&fake).download_job_log(&repo_name(), job, 4096).await.unwrap();
    let line = "2024-05-01T12:00:00Z test case_0000 ... ok\n".len();
    let kept = 4096 / line;
    assert_eq!(got.text, log[log.len() - kept * line..]);
    assert!(got.text.starts_with("2024-05-01T12:00:00Z test case_"));
    assert!(got.truncated);
    assert_eq!(got.total_bytes, log.len() as u64);
    fake.assert_no_violations();
}

#[tokio::test]
async fn expired_logs_are_a_410_and_their_signed_urls_stop_working() {
    let fake = actions_fake();
    let auth = bearer(TOKEN);
    // A URL signed before the log expired (read, not followed).
    let early = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{}/repos/acme/widgets/actions/jobs/{TEST_1}/logs", fake.url()))
        .header("authorization", &auth)
        .header("user-agent", "pitcrew-tests")
        .send()
        .await
        .unwrap();
    assert_eq!(early.status(), 302);
    let location = early.headers()["location"].to_str().unwrap().to_owned();
    let path = location.strip_prefix(&fake.url()).unwrap().to_owned();
    assert!(
        path.starts_with(&format!("/_blobs/job-logs/{TEST_1}?sig=")),
        "{location}"
    );

    fake.expire_job_logs(TEST_1);
    let error = client(&fake)
        .download_job_log(&repo_name(), TEST_1, 1000)
        .await
        .unwrap_err();
    assert!(matches!(error, GithubError::Status { status: 410, .. }), "{error:?}");
    let answer = fake.requests().last().unwrap().response.clone();
    assert_eq!(answer["message"], "Gone");
    assert!(
        answer["documentation_url"]
            .as_str()
            .unwrap()
            .starts_with("https://docs.github.com/")
    );

    let late = call(&fake, "GET", &path, None, None).await;
    assert_eq!(late.status, 404);
    let forged = call(
        &fake,
        "GET",
        &format!("/_blobs/job-logs/{LINT_1}?sig=forged"),
        None,
        None,
    )
    .await;
    assert_eq!(forged.status, 403);
    let statuses: Vec<u16> = fake.log_downloads().iter().map(|d| d.status).collect();
    assert_eq!(statuses, [404, 403]);
    let missing = client(&fake).download_job_log(&repo_name(), 5, 1000).await.unwrap_err();
    assert!(missing.is_not_found(), "{missing:?}");
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test]
async fn a_token_sent_on_to_log_storage_is_a_violation() {
    let fake = actions_fake();
    // reqwest's own redirect handling keeps the header on the same host and port.
    let response = reqwest::Client::new()
        .get(format!("{}/repos/acme/widgets/actions/jobs/{LINT_1}/logs", fake.url()))
        .header("authorization", bearer(TOKEN))
        .header("user-agent", "pitcrew-tests")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(response.text().await.unwrap(), "clean\n");
    assert_eq!(
        fake.log_downloads(),
        [LogDownload {
            job_id: LINT_1,
            authorization: true,
            status: 200
        }]
    );
    let violations = fake.take_violations();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(
        violations[0].starts_with(&format!(
            "GET /_blobs/job-logs/{LINT_1}: the request to the log storage carried an Authorization header"
        )),
        "{violations:?}"
    );
}

#[tokio::test]
async fn job_reruns_are_recorded() {
    let fake = actions_fake();
    client(&fake).rerun_job(&repo_name(), TEST_2).await.unwrap();
    let missing = client(&fake).rerun_job(&repo_name(), 42).await.unwrap_err();
    assert!(missing.is_not_found(), "{missing:?}");
    assert_eq!(
        fake.job_reruns(),
        [JobRerun {
            repo: REPO.to_owned(),
            job_id: TEST_2,
            body: Value::Null
        }]
    );
    let debug = call(
        &fake,
        "POST",
        &format!("/repos/acme/widgets/actions/jobs/{TEST_1}/rerun"),
        Some(&bearer(TOKEN)),
        Some(json!({"enable_debug_logging": true})),
    )
    .await;
    assert_eq!(debug.status, 201);
    assert_eq!(debug.body, json!({}));
    assert_eq!(fake.job_reruns()[1].body, json!({"enable_debug_logging": true}));
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test]
async fn pulls_of_a_commit_are_the_stored_ones_with_that_head() {
    let fake = fake();
    fake.add_issue(
        REPO,
        Issue::pull_request(3, "Older attempt", ("fix-crash-old", HEAD_SHA), ("release", BASE_SHA)).closed(),
    );
    fake.add_issue(
        REPO,
        Issue::pull_request(4, "Unrelated", ("other", OTHER_SHA), ("main", BASE_SHA)),
    );
    let pulls = client(&fake).pulls_for_commit(&repo_name(), HEAD_SHA).await.unwrap();
    assert_eq!(
        pulls,
        [
            CommitPull {
                number: 2,
                open: true,
                head_sha: HEAD_SHA.to_owned(),
                base_ref: "main".to_owned()
            },
            CommitPull {
                number: 3,
                open: false,
                head_sha: HEAD_SHA.to_owned(),
                base_ref: "release".to_owned()
            },
        ]
    );
    assert!(
        client(&fake)
            .pulls_for_commit(&repo_name(), BASE_SHA)
            .await
            .unwrap()
            .is_empty()
    );
    assert_responses_match_the_description(&fake);
    fake.assert_no_violations();
}

#[tokio::test]
async fn requests_outside_the_subset_are_validated_by_the_full_description() {
    let fake = actions_fake();
    let auth = bearer(TOKEN);
    let bogus = call(
        &fake,
        "GET",
        &format!("/repos/acme/widgets/actions/runs/{RUN}/jobs?filter=bogus"),
        Some(&auth),
        None,
    )
    .await;
    assert_eq!(bogus.status, 422);
    let not_a_number = call(
        &fake,
        "GET",
        "/repos/acme/widgets/actions/jobs/seven/logs",
        Some(&auth),
        None,
    )
    .await;
    assert_eq!(not_a_number.status, 404);
    let bad_body = call(
        &fake,
        "POST",
        &format!("/repos/acme/widgets/actions/jobs/{TEST_1}/rerun"),
        Some(&auth),
        Some(json!({"enable_debug_logging": "yes"})),
    )
    .await;
    assert_eq!(bad_body.status, 422);
    let violations = fake.take_violations();
    assert_eq!(
        violations,
        [
            format!(
                "GET /repos/acme/widgets/actions/runs/{RUN}/jobs?filter=bogus (actions/list-jobs-for-workflow-run): query \
                 parameter \"filter\": \"bogus\" is not one of [\"latest\",\"all\"]"
            ),
            "GET /repos/acme/widgets/actions/jobs/seven/logs (actions/download-job-logs-for-workflow-run): path \
             parameter \"job_id\": expected integer, found \"seven\""
                .to_owned(),
            format!(
                "POST /repos/acme/widgets/actions/jobs/{TEST_1}/rerun (actions/re-run-job-for-workflow-run): \
                 $.enable_debug_logging: expected boolean, found string \"yes\""
            ),
        ]
    );
    assert!(fake.job_reruns().is_empty());
}

#[tokio::test]
async fn requests_the_subset_covers_leave_the_full_description_unloaded() {
    // nextest runs each test in a process of its own, where nothing else loaded it; `cargo test`
    // shares one process between tests.
    let alone = std::env::var("NEXTEST_EXECUTION_MODE").as_deref() == Ok("process-per-test");
    let fake = fake();
    let answer = call(&fake, "GET", "/repos/acme/widgets/issues/1", Some(&bearer(TOKEN)), None).await;
    assert_eq!(answer.status, 200);
    if alone {
        assert!(!Spec::github_full_loaded());
    } else {
        println!("not run by nextest: another test may have loaded the full description");
    }
    let answer = call(
        &fake,
        "GET",
        "/repos/acme/widgets/commits/abc/pulls",
        Some(&bearer(TOKEN)),
        None,
    )
    .await;
    assert_eq!(answer.status, 200);
    assert!(Spec::github_full_loaded());
}

// ---------------------------------------------------------------------------------------------
// Paged lists: the fake's `Link` headers, followed by pitcrew's client

#[tokio::test]
async fn an_installation_with_1001_repositories_is_read_to_the_end_through_link_headers() {
    // Regression: paged lists stopped at ten pages of a hundred, so the 1,001st repository of an
    // installation was never scheduled.
    let mut builder = FakeGithub::builder();
    for i in 0..1_001 {
        builder = builder.repo(Repo::new(&format!("acme/repo-{i:04}")));
    }
    let fake = builder.start();
    fake.allow_token(TOKEN);
    let listing = client(&fake).installation_repositories().await.unwrap();
    assert!(!listing.truncated);
    let names: Vec<&str> = listing.items.iter().map(|r| r.full_name.as_str()).collect();
    let expected: Vec<String> = (0..1_001).map(|i| format!("acme/repo-{i:04}")).collect();
    assert_eq!(names, expected);
    let queries: Vec<Option<String>> = fake
        .requests_to("apps/list-repos-accessible-to-installation")
        .into_iter()
        .map(|r| r.query)
        .collect();
    let expected: Vec<Option<String>> = (1..=11).map(|page| Some(format!("per_page=100&page={page}"))).collect();
    assert_eq!(queries, expected);
    fake.assert_no_violations();
}

#[tokio::test]
async fn the_fakes_next_links_keep_the_query_and_pitcrew_follows_them() {
    let fake = actions_fake();
    for n in 0..250 {
        fake.add_actions_job(REPO, ActionsJob::new(0, RUN, &format!("extra {n}")));
    }
    let jobs = client(&fake)
        .list_jobs_for_run(&repo_name(), RUN, RunFilter::All)
        .await
        .unwrap();
    assert_eq!(jobs.len(), 253);
    let requests = fake.requests_to("actions/list-jobs-for-workflow-run");
    let queries: Vec<&str> = requests.iter().map(|r| r.query.as_deref().unwrap()).collect();
    // The filter is GitHub's to keep in the link, and the fake keeps it as GitHub does.
    assert_eq!(
        queries,
        [
            "filter=all&per_page=100&page=1",
            "filter=all&per_page=100&page=2",
            "filter=all&per_page=100&page=3"
        ]
    );
    fake.assert_no_violations();
}

#[tokio::test]
async fn a_link_header_to_another_host_is_refused_before_the_token_goes_there() {
    let fake = fake();
    // Another server, on another host name: had the client followed the link, it would be recorded.
    let elsewhere = FakeGithub::builder().start();
    let elsewhere_url = elsewhere.url().replace("127.0.0.1", "localhost");
    let page = call(&fake, "GET", "/installation/repositories", Some(&bearer(TOKEN)), None)
        .await
        .body;
    assert_eq!(page["repositories"].as_array().unwrap().len(), 1);
    let link = format!("<{elsewhere_url}/installation/repositories?per_page=100&page=2>; rel=\"next\"");
    fake.fail_next("GET", "/installation/repositories", 1, 200, &[("link", &link)], page);
    let error = client(&fake).installation_repositories().await.unwrap_err();
    assert!(matches!(error, GithubError::Decode { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "GET /installation/repositories: unexpected response: the `Link` header sends the next page to \
             {elsewhere_url}, not to the API at {}; not followed",
            fake.url()
        )
    );
    assert!(elsewhere.requests().is_empty(), "the token went to {elsewhere_url}");
    fake.assert_no_violations();
}
