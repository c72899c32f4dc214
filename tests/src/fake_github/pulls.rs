//! The fake GitHub's pull requests: the pull request object, listing, creating and updating them,
//! the pull requests of a commit, review comments and their threads, and reviews.

use serde_json::{Value, json};

use super::context::{Ctx, Reply, list};
use super::issues::{apply_issue_fields, association, issue_json, label_json};
use super::repos::{replace_in_strings, repo_json, user_id, user_json};
use super::state::{GithubState, Issue, PullBase, PullHead, PullInfo, Repo, Review, ReviewComment};
use super::wire::{self, example};

/// Answers the operations this file owns; `None` for the others.
pub(crate) fn handle(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Option<Reply> {
    let reply = match ctx.op.operation_id {
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
        "pulls/list-files" => match pull(state, repo, ctx.number("pull_number")) {
            Some(issue) => list(pull_files(issue, repo), ctx),
            None => Reply::not_found(ctx),
        },
        "pulls/request-reviewers" => request_reviewers(state, repo, ctx),
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
        "pulls/dismiss-review" => {
            let (number, id) = (ctx.number("pull_number"), ctx.number("review_id"));
            let Some(review) = state
                .reviews
                .get_mut(&id)
                .filter(|r| r.repo == repo.full_name && r.pull_number == number)
            else {
                return Some(Reply::not_found(ctx));
            };
            // GitHub dismisses only a submitted review that requested changes or approved.
            if !matches!(review.state.as_str(), "CHANGES_REQUESTED" | "APPROVED") {
                return Some(Reply::error(
                    422,
                    "Can not dismiss a commented or pending pull request review",
                    ctx.op.docs_url,
                ));
            }
            "DISMISSED".clone_into(&mut review.state);
            review.dismissal = ctx.body["message"].as_str().map(str::to_owned);
            let review = review.clone();
            Reply::json(200, review_json(&review, repo, ctx))
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

fn pull<'s>(state: &'s GithubState, repo: &Repo, number: u64) -> Option<&'s Issue> {
    state.issue(&repo.full_name, number).filter(|i| i.pull.is_some())
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
    body["requested_reviewers"] = pull
        .requested_reviewers
        .iter()
        .map(|login| user_json(login, ctx))
        .collect();
    let team_example = example("pull-request")["requested_teams"][0].clone();
    body["requested_teams"] = pull
        .requested_teams
        .iter()
        .map(|slug| {
            let mut team = team_example.clone();
            team["slug"] = json!(slug);
            team["name"] = json!(slug);
            team["html_url"] = json!(format!("https://github.com/orgs/{}/teams/{slug}", repo.owner()));
            team
        })
        .collect();
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
    body["comments"] = json!(state.comments_of(&repo.full_name, n).len());
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

/// Asks the logins of `reviewers` and the team slugs of `team_reviewers`; the author cannot be
/// asked to review their own pull request (422, as on GitHub).
fn request_reviewers(state: &mut GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Reply {
    let key = (repo.full_name.clone(), ctx.number("pull_number"));
    let Some(issue) = state.issues.get_mut(&key) else {
        return Reply::not_found(ctx);
    };
    let author = issue.user.clone();
    let Some(pull) = issue.pull.as_mut() else {
        return Reply::not_found(ctx);
    };
    let names = |field: &str| -> Vec<String> {
        ctx.body[field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let users = names("reviewers");
    if users.iter().any(|u| u.eq_ignore_ascii_case(&author)) {
        return Reply::validation_failed(
            ctx,
            json!([{"resource": "PullRequest", "code": "custom", "message": "Review cannot be requested from pull request author."}]),
        );
    }
    for user in users {
        if !pull.requested_reviewers.contains(&user) {
            pull.requested_reviewers.push(user);
        }
    }
    for team in names("team_reviewers") {
        if !pull.requested_teams.contains(&team) {
            pull.requested_teams.push(team);
        }
    }
    let issue = issue.clone();
    Reply::json(201, pull_json(state, &issue, repo, ctx))
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
    let Some(head_sha) = state.branch_head(&head_repo, &head_ref) else {
        return invalid("head");
    };
    let Some(base_sha) = state.branch_head(&repo.full_name, base_ref) else {
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
        requested_reviewers: Vec::new(),
        requested_teams: Vec::new(),
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

pub(crate) fn review_comment<'s>(state: &'s GithubState, repo: &Repo, ctx: &Ctx<'_>) -> Option<&'s ReviewComment> {
    state
        .review_comments
        .get(&ctx.number("comment_id"))
        .filter(|c| c.repo == repo.full_name)
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
        dismissal: None,
    };
    let json = review_json(&review, repo, ctx);
    state.reviews.insert(review_id, review);
    Reply::json(200, json)
}

/// The files a pull request changes, from the repository's git directory: what its head changed
/// since its merge base with the base (`git diff base...head`), renames found, with line counts.
fn pull_files(issue: &Issue, repo: &Repo) -> Vec<Value> {
    let (Some(pull), Some(dir)) = (&issue.pull, repo.git_dir.as_deref()) else {
        return Vec::new();
    };
    let range = format!("{}...{}", pull.base.sha, pull.head.sha);
    let text = |args: &[&str]| {
        super::git::git_output(dir, args)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    };
    let statuses = text(&["diff", "--name-status", "-M", &range]);
    let counts = text(&["diff", "--numstat", "-M", &range]);
    let mut files = Vec::new();
    for (line, numbers) in statuses.lines().zip(counts.lines()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let mut numbers = numbers.split('\t');
        let additions: u64 = numbers.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        let deletions: u64 = numbers.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        let code = fields.first().copied().unwrap_or("M");
        let (status, previous, name) = match (code.chars().next(), fields.as_slice()) {
            (Some('R'), [_, from, to]) => ("renamed", Some(*from), *to),
            (Some('A'), [_, name]) => ("added", None, *name),
            (Some('D'), [_, name]) => ("removed", None, *name),
            (_, [_, name, ..]) => ("modified", None, *name),
            _ => continue,
        };
        let mut entry = wire::example_item("diff-entry-items");
        entry["filename"] = json!(name);
        entry["status"] = json!(status);
        entry["additions"] = json!(additions);
        entry["deletions"] = json!(deletions);
        entry["changes"] = json!(additions + deletions);
        match previous {
            Some(from) => entry["previous_filename"] = json!(from),
            None => {
                if let Some(object) = entry.as_object_mut() {
                    object.remove("previous_filename");
                }
            }
        }
        files.push(entry);
    }
    files
}
