//! Tests against real webhook payloads (`../shared/fixtures/webhooks/`): every example parses, the
//! interesting ones parse into the right events, and comment bodies substituted into real payloads
//! lead to the right decisions.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::*;
use crate::config::command::CommandKind;
use crate::github::{CommentId, CommitSha, InstallationId, IssueNumber, Login};
use crate::triggers::{ReplyTarget, Subject};

const WEBHOOKS: &str = "webhooks";

/// A fixture as (event name, payload). triagebot's recordings wrap the payload and name the event;
/// octokit's and octocrab's are plain payloads named by their folder.
fn load(relative: &str) -> (String, Value) {
    let path = crate::llm::fixture_path(&format!("{WEBHOOKS}/{relative}"));
    load_path(&path, relative.split('/').next().unwrap())
}

fn load_path(path: &Path, folder_event: &str) -> (String, Value) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let value: Value = serde_json::from_str(&text).unwrap();
    if value.get("kind").and_then(Value::as_str) == Some("Webhook") {
        let event = value["webhook_event"].as_str().unwrap().to_owned();
        return (event, value["payload"].clone());
    }
    (folder_event.to_owned(), value)
}

fn parse(relative: &str) -> Event {
    let (event, payload) = load(relative);
    Event::parse(&event, &payload).unwrap()
}

fn comment(event: Event) -> CommentEvent {
    match event {
        Event::Comment(comment) => *comment,
        other => panic!("not a comment: {other:?}"),
    }
}

fn cfg() -> TriggerConfig {
    TriggerConfig::new("@agent", "pitcrew[bot]")
}

/// The real PR comment delivery (triagebot) with `body` substituted.
fn pr_comment_saying(body: &str) -> (String, Value) {
    let (event, mut payload) = load("issue_comment/rust-lang-triagebot/07-webhook-issue111_comment_created.json");
    payload["comment"]["body"] = json!(body);
    (event, payload)
}

fn decide_on(event: &str, payload: &Value) -> Decision {
    decide(&Event::parse(event, payload).unwrap(), &cfg())
}

fn act(decision: Decision) -> Request {
    match decision {
        Decision::Act(request) => *request,
        other => panic!("not an act: {other:?}"),
    }
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

#[test]
fn every_example_of_every_event_parses() {
    let root = crate::llm::fixture_path(WEBHOOKS);
    let mut parsed = 0;
    let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
    for folder in std::fs::read_dir(&root).unwrap() {
        let folder = folder.unwrap().path();
        let name = folder.file_name().unwrap().to_str().unwrap().to_owned();
        if !folder.is_dir() || name == "payload-schemas" {
            continue;
        }
        let mut files = Vec::new();
        files_under(&folder, &mut files);
        for file in files {
            let (event, payload) = load_path(&file, &name);
            let result = Event::parse(&event, &payload);
            let parsed_event = result.unwrap_or_else(|err| panic!("{}: {err}", file.display()));
            let kind = match parsed_event {
                Event::Ping { .. } => "ping",
                Event::Comment(_) => "comment",
                Event::IssueAssigned { .. } => "assigned",
                Event::IssueLabeled { .. } => "labeled",
                Event::IssueEdited { .. } => "edited",
                Event::PullRequestClosed { .. } => "closed",
                Event::PullRequestChanged { .. } => "pull_request",
                Event::WorkflowRunCompleted(_) => "workflow_run",
                Event::CheckRunCompleted(_) => "check_run",
                Event::CheckSuiteCompleted(_) => "check_suite",
                Event::InstallationChanged { .. } => "installation",
                Event::Ignored { .. } => "ignored",
            };
            *kinds.entry(kind).or_default() += 1;
            // Deciding never panics either.
            let _ = decide(
                &Event::parse(&event, &payload).unwrap(),
                &TriggerConfig {
                    label: Some("bug".to_owned()),
                    ..cfg()
                },
            );
            parsed += 1;
        }
    }
    assert_eq!(parsed, 136, "the fixture set changed: {kinds:?}");
    insta::assert_snapshot!(format!("{kinds:?}"), @r#"{"assigned": 3, "check_run": 3, "check_suite": 3, "closed": 4, "comment": 9, "ignored": 81, "installation": 11, "labeled": 3, "ping": 4, "pull_request": 13, "workflow_run": 2}"#);
}

#[test]
fn a_comment_on_a_pull_request() {
    let c = comment(parse(
        "issue_comment/rust-lang-triagebot/07-webhook-issue111_comment_created.json",
    ));
    assert!(c.issue.is_pull_request);
    assert_eq!(c.issue.number, IssueNumber(111));
    assert_eq!(c.comment_id, CommentId(1459205742));
    assert_eq!(c.body, "a custom message\n\ncc @octocat");
    assert_eq!(c.author.login.as_str(), "ehuss");
    assert_eq!(c.author.kind, ActorKind::User);
    assert_eq!(c.author_association, AuthorAssociation::Owner);
    assert_eq!(c.ctx.repo.name.to_string(), "ehuss/triagebot-test");
    assert_eq!(c.ctx.repo.default_branch, "main");
    assert_eq!(c.ctx.repo.clone_url, "https://github.com/ehuss/triagebot-test.git");
    assert_eq!(c.ctx.installation_id, None);
    assert_eq!(c.review, None);
    assert_eq!(c.issue.head_sha, None);
}

#[test]
fn a_comment_on_an_issue() {
    let c = comment(parse("issue_comment/created.with-installation.payload.json"));
    assert!(!c.issue.is_pull_request);
    assert_eq!(c.issue.number, IssueNumber(1));
    assert_eq!(c.body, "You are totally right! I'll get this fixed right away.");
    assert_eq!(c.ctx.installation_id, Some(InstallationId(1)));
    assert_eq!(c.ctx.repo.name.to_string(), "Codertocat/Hello-World");
    assert!(!c.ctx.repo.private);
}

#[test]
fn a_review_comment_carries_its_diff_position() {
    let c = comment(parse("pull_request_review_comment/created.payload.json"));
    assert!(c.issue.is_pull_request);
    assert_eq!(c.issue.number, IssueNumber(2));
    assert_eq!(
        c.issue.head_sha.as_ref().map(CommitSha::as_str),
        Some("ec26c3e57ca3a959ca5aad62de7213c562f8c821")
    );
    assert_eq!(c.issue.head_ref.as_deref(), Some("changes"));
    assert_eq!(
        c.review,
        Some(ReviewContext {
            path: "README.md".to_owned(),
            line: Some(265),
            start_line: None,
            side: Some("RIGHT".to_owned()),
            diff_hunk: "@@ -1 +1 @@\n-# Hello-World".to_owned(),
            commit_id: CommitSha("ec26c3e57ca3a959ca5aad62de7213c562f8c821".to_owned()),
            in_reply_to: None,
        })
    );
}

#[test]
fn an_outdated_review_comment_falls_back_to_original_line() {
    let (event, mut payload) = load("pull_request_review_comment/created.payload.json");
    payload["comment"]["line"] = Value::Null;
    payload["comment"]["original_line"] = json!(12);
    payload["comment"]["in_reply_to_id"] = json!(42);
    let c = comment(Event::parse(&event, &payload).unwrap());
    let review = c.review.unwrap();
    assert_eq!(review.line, Some(12));
    assert_eq!(review.in_reply_to, Some(CommentId(42)));
}

#[test]
fn edited_and_deleted_comments_are_ignored() {
    for file in [
        "issue_comment/edited.payload.json",
        "issue_comment/deleted.payload.json",
        "issue_comment/octocrab/issue_comment_edited_webhook_event.json",
        "issue_comment/octocrab/issue_comment_deleted_webhook_event.json",
        "pull_request_review_comment/edited.payload.json",
        "pull_request_review_comment/deleted.payload.json",
    ] {
        let (event, mut payload) = load(file);
        // Even a command in the edited text runs nothing.
        payload["comment"]["body"] = json!("@agent fix");
        let parsed = Event::parse(&event, &payload).unwrap();
        assert!(matches!(parsed, Event::Ignored { .. }), "{file}: {parsed:?}");
        assert!(matches!(decide(&parsed, &cfg()), Decision::Ignore { .. }), "{file}");
    }
    let Event::Ignored { reason } = parse("issue_comment/edited.payload.json") else {
        panic!()
    };
    assert_eq!(
        reason,
        "issue_comment.edited: only new comments are read, never edits or deletions"
    );
}

#[test]
fn a_bot_comment_is_ignored() {
    // octocrab's recording: a comment by the App `gagbo-test-app[bot]` (type Bot).
    let (event, mut payload) = load("issue_comment/octocrab/issue_comment_created_webhook_event.json");
    payload["comment"]["body"] = json!("@agent fix the flaky test");
    let Decision::Ignore { reason } = decide_on(&event, &payload) else {
        panic!("a bot's comment was acted on")
    };
    assert_eq!(reason, "comment by the bot account gagbo-test-app[bot]");

    // The bot itself, even if GitHub called it a User, and a `[bot]` login typed User.
    for login in ["pitcrew[bot]", "PitCrew", "renovate[bot]"] {
        let (event, mut payload) = pr_comment_saying("@agent fix");
        payload["comment"]["user"]["login"] = json!(login);
        payload["sender"]["login"] = json!(login);
        assert!(
            matches!(decide_on(&event, &payload), Decision::Ignore { .. }),
            "{login}"
        );
    }
}

#[test]
fn fix_with_instructions_on_a_pull_request() {
    let (event, payload) = pr_comment_saying("@agent fix the flaky test");
    let request = act(decide_on(&event, &payload).with_delivery("d-1"));
    assert_eq!(request.permission, PermissionGate::NeedsPermissionCheck);
    assert_eq!(request.key(), "ehuss/triagebot-test#111");
    assert_eq!(request.actions.len(), 1);
    let Action::Run(job) = &request.actions[0] else {
        panic!("{:?}", request.actions)
    };
    assert_eq!(job.kind, JobKind::Fix);
    assert_eq!(job.instructions.as_deref(), Some("the flaky test"));
    assert!(job.subject.is_pull_request());
    assert!(!job.opens_pull_request());
    assert_eq!(job.key(), "ehuss/triagebot-test#111");
    assert_eq!(job.delivery_id.as_deref(), Some("d-1"));
    assert_eq!(
        job.reply_to,
        ReplyTarget::Issue {
            number: IssueNumber(111),
            comment_id: Some(CommentId(1459205742))
        }
    );
    assert_eq!(
        job.requested_by,
        Requester {
            login: Login::parse("ehuss").unwrap(),
            id: Some(43_198),
            association: Some(AuthorAssociation::Owner)
        }
    );
}

#[test]
fn the_stored_job_request_json() {
    let (event, payload) = pr_comment_saying("@agent fix the flaky test");
    let decision = decide_on(&event, &payload).with_delivery("72d3162e-cc78-11e3-81ab-4c9367dc0958");
    let job = decision.jobs()[0].clone();
    let text = serde_json::to_string_pretty(&job).unwrap();
    insta::assert_snapshot!(text, @r#"
    {
      "kind": "fix",
      "repo": {
        "owner": "ehuss",
        "name": "triagebot-test",
        "clone_url": "https://github.com/ehuss/triagebot-test.git",
        "default_branch": "main",
        "private": false
      },
      "installation_id": null,
      "subject": {
        "type": "pull_request",
        "number": 111
      },
      "requested_by": {
        "login": "ehuss",
        "id": 43198,
        "association": "OWNER"
      },
      "reply_to": {
        "type": "issue",
        "number": 111,
        "comment_id": 1459205742
      },
      "source": {
        "type": "comment",
        "comment_id": 1459205742
      },
      "instructions": "the flaky test",
      "review_comment": null,
      "head_sha": null,
      "delivery_id": "72d3162e-cc78-11e3-81ab-4c9367dc0958"
    }
    "#);
    let back: JobRequest = serde_json::from_str(&text).unwrap();
    assert_eq!(back, job);
    let chore = JobRequest {
        kind: JobKind::Chore(Chore::Deps),
        ..job
    };
    let json = serde_json::to_value(&chore).unwrap();
    assert_eq!(json["kind"], json!({"chore": "deps"}));
    assert_eq!(serde_json::from_value::<JobRequest>(json).unwrap(), chore);
}

#[test]
fn a_mention_in_a_code_block_is_ignored() {
    let (event, payload) = pr_comment_saying("To ask for a fix, write:\n\n```\n@agent fix\n```\n\n> @agent stop");
    let Decision::Ignore { reason } = decide_on(&event, &payload) else {
        panic!("acted on a quoted example")
    };
    assert_eq!(reason, "comment 1459205742 does not mention @agent");
}

#[test]
fn a_commenter_without_write_association_is_refused() {
    let mut refusals = Vec::new();
    for association in ["NONE", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR"] {
        let (event, mut payload) = pr_comment_saying("@agent fix the flaky test");
        payload["comment"]["author_association"] = json!(association);
        let request = act(decide_on(&event, &payload));
        assert_eq!(request.permission, PermissionGate::Refuse, "{association}");
        refusals.push(request.refusal_message());
    }
    refusals.dedup();
    insta::assert_snapshot!(refusals.join("\n"), @"Sorry @ehuss, only people with write access to ehuss/triagebot-test can ask me to do things here.");
    for association in ["OWNER", "MEMBER", "COLLABORATOR"] {
        let (event, mut payload) = pr_comment_saying("@agent fix");
        payload["comment"]["author_association"] = json!(association);
        assert_eq!(
            act(decide_on(&event, &payload)).permission,
            PermissionGate::NeedsPermissionCheck,
            "{association}"
        );
    }
}

#[test]
fn stop_and_help() {
    let (event, payload) = pr_comment_saying("@agent stop");
    let request = act(decide_on(&event, &payload));
    assert_eq!(
        request.actions,
        vec![Action::Stop {
            key: "ehuss/triagebot-test#111".to_owned()
        }]
    );
    assert_eq!(request.requested_by.login.as_str(), "ehuss");

    let (event, payload) = pr_comment_saying("@agent help");
    let request = act(decide_on(&event, &payload));
    assert_eq!(request.actions, vec![Action::Help]);
}

#[test]
fn disabled_misplaced_and_mistyped_commands_are_invalid() {
    let config = TriggerConfig {
        commands: CommandKind::ALL
            .into_iter()
            .filter(|kind| *kind != CommandKind::Explain)
            .collect(),
        ..cfg()
    };
    let (event, payload) = pr_comment_saying("@agent explain the cache\n@agent reveiw");
    let request = act(decide(&Event::parse(&event, &payload).unwrap(), &config));
    let messages: Vec<_> = request
        .actions
        .iter()
        .map(|a| match a {
            Action::Invalid { message } => message.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        messages,
        [
            "`explain` is turned off in this repository.",
            "unknown command `reveiw`; did you mean `review`?"
        ]
    );

    // `review` on a plain issue.
    let (event, mut payload) = load("issue_comment/created.payload.json");
    payload["comment"]["body"] = json!("@agent review");
    let request = act(decide_on(&event, &payload));
    assert_eq!(
        request.actions,
        vec![Action::Invalid {
            message: "`review` works on pull requests only.".to_owned()
        }]
    );
}

#[test]
fn describe_is_a_job_on_the_pull_request_behind_the_same_gate_as_the_others() {
    let (event, payload) = pr_comment_saying("@agent describe the migration first");
    let request = act(decide_on(&event, &payload));
    assert_eq!(request.permission, PermissionGate::NeedsPermissionCheck);
    let [Action::Run(job)] = request.actions.as_slice() else {
        panic!("{:?}", request.actions);
    };
    assert_eq!(job.kind, JobKind::Describe);
    assert_eq!(job.kind.as_str(), "describe");
    assert_eq!(
        job.subject,
        Subject::PullRequest {
            number: IssueNumber(111)
        }
    );
    assert_eq!(job.instructions.as_deref(), Some("the migration first"));
    assert_eq!(
        job.reply_to,
        ReplyTarget::Issue {
            number: IssueNumber(111),
            comment_id: Some(CommentId(1459205742))
        }
    );
    assert_eq!(job.key(), "ehuss/triagebot-test#111");
    // Stored and read back, it is the same job.
    let back: JobRequest = serde_json::from_value(serde_json::to_value(job.as_ref()).unwrap()).unwrap();
    assert_eq!(&back, job.as_ref());

    // Someone without write access is refused, as for any command.
    let (event, mut payload) = pr_comment_saying("@agent describe");
    payload["comment"]["author_association"] = json!("CONTRIBUTOR");
    assert_eq!(act(decide_on(&event, &payload)).permission, PermissionGate::Refuse);

    // `[triggers] commands` turns it off, and it works on pull requests only.
    let config = TriggerConfig {
        commands: [CommandKind::Fix, CommandKind::Review].into_iter().collect(),
        ..cfg()
    };
    let (event, payload) = pr_comment_saying("@agent describe");
    let request = act(decide(&Event::parse(&event, &payload).unwrap(), &config));
    assert_eq!(
        request.actions,
        vec![Action::Invalid {
            message: "`describe` is turned off in this repository.".to_owned()
        }]
    );
    let (event, mut payload) = load("issue_comment/created.payload.json");
    payload["comment"]["body"] = json!("@agent describe");
    let request = act(decide_on(&event, &payload));
    assert_eq!(
        request.actions,
        vec![Action::Invalid {
            message: "`describe` works on pull requests only.".to_owned()
        }]
    );
}

#[test]
fn dependency_commands_queue_behind_the_repositorys_chore() {
    let (event, payload) = pr_comment_saying("@agent ignore tinydep\n@agent rebase\n@agent unignore otherdep");
    let request = act(decide_on(&event, &payload));
    assert_eq!(request.permission, PermissionGate::NeedsPermissionCheck);
    let jobs: Vec<&JobRequest> = request
        .actions
        .iter()
        .map(|action| match action {
            Action::Run(job) => job.as_ref(),
            other => panic!("not a job: {other:?}"),
        })
        .collect();
    let chore_key = chore_key(&jobs[0].repo, Chore::Deps);
    assert!(jobs.iter().all(|job| job.key() == chore_key), "{jobs:#?}");
    let kinds: Vec<&str> = jobs.iter().map(|job| job.kind.as_str()).collect();
    assert_eq!(kinds, ["ignore", "rebase", "unignore"]);
    let json = serde_json::to_value(jobs[0]).unwrap();
    assert_eq!(json["kind"], json!({"ignore": {"package": "tinydep", "undo": false}}));
    assert_eq!(&serde_json::from_value::<JobRequest>(json).unwrap(), jobs[0]);

    // `ignore` and `rebase` need a pull request; `unignore` works on the dashboard issue too.
    let (event, mut payload) = load("issue_comment/created.payload.json");
    payload["comment"]["body"] = json!("@agent ignore tinydep\n@agent rebase\n@agent unignore tinydep");
    let request = act(decide_on(&event, &payload));
    assert_eq!(
        request.actions[..2],
        [
            Action::Invalid {
                message: "`ignore` works on pull requests only.".to_owned()
            },
            Action::Invalid {
                message: "`rebase` works on pull requests only.".to_owned()
            }
        ]
    );
    assert!(matches!(&request.actions[2], Action::Run(job) if job.kind.as_str() == "unignore"));
}

#[test]
fn a_box_ticked_on_the_bots_dependency_dashboard_asks_for_the_chore() {
    let before = crate::report::dashboard::with_ignored(None, &[PackageName::parse("tinydep").unwrap()], "@agent");
    let after = before.replace("- [ ]", "- [x]");
    let edited = |author: &str, sender: &str, before: &str, after: &str| {
        let (_, mut payload) = load("issues/edited.payload.json");
        payload["issue"]["user"]["login"] = json!(author);
        payload["issue"]["body"] = json!(after);
        payload["changes"] = json!({"body": {"from": before}});
        payload["sender"]["login"] = json!(sender);
        decide_on("issues", &payload)
    };
    let request = act(edited("pitcrew[bot]", "alice", &before, &after));
    assert_eq!(request.permission, PermissionGate::NeedsPermissionCheck);
    assert_eq!(request.requested_by.login.as_str(), "alice");
    let [Action::Run(job)] = request.actions.as_slice() else {
        panic!("{:?}", request.actions)
    };
    assert_eq!(job.kind, JobKind::Chore(Chore::Deps));
    assert_eq!(job.source, JobSource::Dashboard);

    // Someone else's issue with the same text, an untick, an edit by the bot: nothing.
    for decision in [
        edited("mallory", "mallory", &before, &after),
        edited("pitcrew[bot]", "alice", &after, &before),
        edited("pitcrew[bot]", "pitcrew[bot]", &before, &after),
    ] {
        assert!(matches!(decision, Decision::Ignore { .. }), "{decision:?}");
    }
    // An edit of the title only is not read.
    let (_, payload) = load("issues/edited.payload.json");
    assert!(matches!(decide_on("issues", &payload), Decision::Ignore { .. }));
}

#[test]
fn several_commands_in_one_comment() {
    let (event, payload) = pr_comment_saying("@agent review\n\n@agent explain why the lock?\n\n@agent review");
    let request = act(decide_on(&event, &payload));
    let kinds: Vec<_> = request
        .actions
        .iter()
        .map(|a| match a {
            Action::Run(job) => (job.kind.as_str(), job.instructions.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(kinds, [("review", None), ("explain", Some("why the lock?".to_owned()))]);
}

#[test]
fn fix_from_a_review_comment_carries_the_diff_context() {
    let (event, mut payload) = load("pull_request_review_comment/created.payload.json");
    payload["comment"]["body"] = json!("@agent fix use a named constant here");
    let request = act(decide_on(&event, &payload));
    assert_eq!(
        request.reply_to,
        ReplyTarget::ReviewThread {
            pull_number: IssueNumber(2),
            comment_id: CommentId(284312630)
        }
    );
    let jobs: Vec<_> = Decision::Act(Box::new(request)).jobs().into_iter().cloned().collect();
    let job = &jobs[0];
    assert_eq!(job.instructions.as_deref(), Some("use a named constant here"));
    assert_eq!(
        job.head_sha.as_ref().map(CommitSha::as_str),
        Some("ec26c3e57ca3a959ca5aad62de7213c562f8c821")
    );
    assert_eq!(job.installation_id, Some(InstallationId(1)));
    assert_eq!(
        job.source,
        JobSource::ReviewComment {
            comment_id: CommentId(284312630)
        }
    );
    let review = job.review_comment.as_ref().unwrap();
    assert_eq!((review.path.as_str(), review.line), ("README.md", Some(265)));
    assert_eq!(review.diff_hunk, "@@ -1 +1 @@\n-# Hello-World");

    // A reply in a thread answers in the same thread (GitHub takes replies to the first comment only).
    payload["comment"]["in_reply_to_id"] = json!(1000);
    let request = act(decide_on(&event, &payload));
    assert_eq!(
        request.reply_to,
        ReplyTarget::ReviewThread {
            pull_number: IssueNumber(2),
            comment_id: CommentId(1000)
        }
    );
}

#[test]
fn an_issue_assigned_to_the_bot_asks_for_a_fix_in_a_new_pr() {
    let Event::IssueAssigned { assignee, issue, .. } = parse("issues/assigned.payload.json") else {
        panic!()
    };
    assert_eq!(assignee.login.as_str(), "Codertocat");
    assert_eq!(issue.number, IssueNumber(1));
    assert!(!issue.is_pull_request);

    let (event, payload) = load("issues/assigned.with-installation.payload.json");
    let Decision::Ignore { reason } = decide_on(&event, &payload) else {
        panic!("acted on an assignment to someone else")
    };
    assert_eq!(reason, "issue #1 assigned to Codertocat, not to the bot");

    for login in ["pitcrew[bot]", "PitCrew[bot]", "pitcrew"] {
        let (event, mut payload) = load("issues/assigned.with-installation.payload.json");
        payload["assignee"]["login"] = json!(login);
        let request = act(decide_on(&event, &payload));
        assert_eq!(request.permission, PermissionGate::NeedsPermissionCheck);
        assert_eq!(
            request.requested_by,
            Requester {
                login: Login::parse("Codertocat").unwrap(),
                id: Some(21_031_067),
                association: None
            }
        );
        let [Action::Run(job)] = request.actions.as_slice() else {
            panic!("{:?}", request.actions)
        };
        assert_eq!(job.kind, JobKind::Fix);
        assert!(job.opens_pull_request(), "{login}");
        assert_eq!(job.source, JobSource::Assigned);
        assert_eq!(job.installation_id, Some(InstallationId(1)));
        assert_eq!(
            job.reply_to,
            ReplyTarget::Issue {
                number: IssueNumber(1),
                comment_id: None
            }
        );
        assert_eq!(
            job.instructions.as_deref(),
            Some("Spelling error in the README file\n\nIt looks like you accidently spelled 'commit' with two 't's.")
        );
    }
}

#[test]
fn an_issue_labeled_with_the_trigger_label_asks_for_a_fix() {
    let Event::IssueLabeled { label, issue, .. } = parse("issues/labeled.payload.json") else {
        panic!()
    };
    assert_eq!((label.as_str(), issue.number), ("bug", IssueNumber(1)));

    let (event, payload) = load("issues/octocrab/issues_labeled_webhook_event.json");
    let parsed = Event::parse(&event, &payload).unwrap();
    let with_label = |label: Option<&str>| {
        decide(
            &parsed,
            &TriggerConfig {
                label: label.map(str::to_owned),
                ..cfg()
            },
        )
    };
    let request = act(with_label(Some("Enhancement")));
    let [Action::Run(job)] = request.actions.as_slice() else {
        panic!()
    };
    assert_eq!(
        job.source,
        JobSource::Labeled {
            label: "enhancement".to_owned()
        }
    );
    assert!(job.opens_pull_request());
    assert_eq!(job.installation_id, Some(InstallationId(7777777)));
    assert!(matches!(with_label(Some("bug")), Decision::Ignore { .. }));
    assert!(matches!(with_label(None), Decision::Ignore { .. }));
}

#[test]
fn a_failed_workflow_run() {
    let (event, mut payload) = load("workflow_run/completed.with-pull-requests.payload.json");
    payload["workflow_run"]["conclusion"] = json!("failure");
    let Event::WorkflowRunCompleted(run) = Event::parse(&event, &payload).unwrap() else {
        panic!()
    };
    assert_eq!(run.id, 289782451);
    assert_eq!(run.conclusion, Some(Conclusion::Failure));
    assert!(run.conclusion.as_ref().unwrap().is_failure());
    assert_eq!(run.head_sha.as_str(), "3484a3fb816e0859fd6e1cea078d76385ff50625");
    assert_eq!(run.head_branch.as_deref(), Some("master"));
    assert_eq!(run.run_attempt, Some(1));
    assert_eq!(run.ctx.repo.name.to_string(), "octo-org/octo-repo");
    // The example lists PR #2 of Codertocat/Hello-World (another repository, as GitHub does for
    // forks with the same branch name): not this repository's PR #2.
    assert_eq!(run.pull_requests, Vec::<IssueNumber>::new());

    let repo_id = payload["repository"]["id"].clone();
    payload["workflow_run"]["pull_requests"][0]["base"]["repo"]["id"] = repo_id;
    let Event::WorkflowRunCompleted(run) = Event::parse(&event, &payload).unwrap() else {
        panic!()
    };
    assert_eq!(run.pull_requests, vec![IssueNumber(2)]);

    let Event::WorkflowRunCompleted(run) = parse("workflow_run/completed.payload.json") else {
        panic!()
    };
    assert!(!run.conclusion.unwrap().is_failure());
    assert!(matches!(
        parse("workflow_run/requested.payload.json"),
        Event::Ignored { .. }
    ));
}

#[test]
fn a_completed_check_run_names_its_app() {
    let Event::CheckRunCompleted(run) = parse("check_run/completed.1.payload.json") else {
        panic!()
    };
    assert_eq!(run.id, 128620228);
    assert_eq!(run.name, "Octocoders-linter");
    assert_eq!(run.conclusion, Some(Conclusion::Failure));
    assert_eq!(
        run.app,
        Some(AppRef {
            id: 29310,
            slug: Some("github-actions".to_owned())
        })
    );
    assert_eq!(run.pull_requests, vec![IssueNumber(2)]);
    assert_eq!(run.head_branch.as_deref(), Some("changes"));
    assert_eq!(run.check_suite_id, Some(118578147));
    assert!(matches!(parse("check_run/created.payload.json"), Event::Ignored { .. }));

    let Event::CheckSuiteCompleted(suite) = parse("check_suite/completed.payload.json") else {
        panic!()
    };
    assert_eq!(
        (suite.id, suite.pull_requests.as_slice()),
        (118578147, &[IssueNumber(2)][..])
    );
    assert_eq!(suite.conclusion, Some(Conclusion::Success));
    assert_eq!(suite.app.unwrap().id, 29310);
}

#[test]
fn ping_is_answered() {
    let event = parse("ping/payload.json");
    let Event::Ping { zen, hook_id, repo } = &event else {
        panic!()
    };
    assert_eq!(
        (zen.as_str(), *hook_id),
        ("Anything added dilutes everything else.", 109948940)
    );
    assert_eq!(repo.as_ref().unwrap().name.to_string(), "Octocoders/Hello-World");
    assert_eq!(
        decide(&event, &cfg()),
        Decision::Pong {
            zen: "Anything added dilutes everything else.".to_owned()
        }
    );
    // An App's ping has no repository.
    let Event::Ping { repo, .. } = parse("ping/octocrab/ping_webhook_event.json") else {
        panic!()
    };
    assert_eq!(repo, None);
}

#[test]
fn installation_changes() {
    let Event::InstallationChanged {
        action,
        installation_id,
        account,
        repositories_added,
        ..
    } = parse("installation_repositories/added.payload.json")
    else {
        panic!()
    };
    assert_eq!(action, "added");
    assert!(installation_id.0 > 0);
    assert!(account.is_some());
    assert!(!repositories_added.is_empty());
}

#[test]
fn malformed_signed_payloads_name_the_event_and_the_field() {
    let (event, mut payload) = pr_comment_saying("@agent fix");
    payload["comment"]["user"].as_object_mut().unwrap().remove("login");
    insta::assert_snapshot!(
        Event::parse(&event, &payload).unwrap_err(),
        @"issue_comment.created payload: $.comment.user.login: missing"
    );

    let (event, mut payload) = pr_comment_saying("@agent fix");
    payload["comment"]["id"] = json!("1459205742");
    insta::assert_snapshot!(
        Event::parse(&event, &payload).unwrap_err(),
        @"issue_comment.created payload: $.comment.id: expected a non-negative integer, found a string"
    );

    let (event, mut payload) = load("workflow_run/completed.with-pull-requests.payload.json");
    payload["workflow_run"]["pull_requests"][0]
        .as_object_mut()
        .unwrap()
        .remove("number");
    payload["workflow_run"]["pull_requests"][0]["base"]["repo"]["id"] = payload["repository"]["id"].clone();
    insta::assert_snapshot!(
        Event::parse(&event, &payload).unwrap_err(),
        @"workflow_run.completed payload: $.workflow_run.pull_requests[0].number: missing"
    );

    let (event, mut payload) = load("issues/assigned.payload.json");
    payload["repository"] = Value::Null;
    insta::assert_snapshot!(
        Event::parse(&event, &payload).unwrap_err(),
        @"issues.assigned payload: $.repository: expected a value, found null"
    );

    insta::assert_snapshot!(
        Event::parse("issue_comment", &json!({"action": 3})).unwrap_err(),
        @"issue_comment payload: $.action: expected a string, found a number"
    );
    insta::assert_snapshot!(
        Event::from_json("ping", b"{").unwrap_err(),
        @"ping payload: $: malformed JSON: EOF while parsing an object at line 1 column 1"
    );
}

#[test]
fn unknown_events_are_ignored() {
    let event = Event::parse("star", &json!({"action": "created"})).unwrap();
    assert_eq!(
        event,
        Event::Ignored {
            reason: "star.created: not an event pitcrew acts on".to_owned()
        }
    );
    assert!(matches!(decide(&event, &cfg()), Decision::Ignore { .. }));
}

/// Storing an event the parser does not turn into anything would only fill the job store: each
/// handled event has real examples that parse into an event the triggers decide on.
#[test]
fn every_handled_event_has_examples_that_parse_into_a_domain_event() {
    for event in HANDLED_EVENTS {
        let folder = crate::llm::fixture_path(&format!("{WEBHOOKS}/{event}"));
        assert!(folder.is_dir(), "no examples of `{event}` in {}", folder.display());
        let mut files = Vec::new();
        files_under(&folder, &mut files);
        let parsed = files
            .iter()
            .map(|file| load_path(file, event))
            .filter(|(name, _)| name == event)
            .map(|(name, payload)| Event::parse(&name, &payload).unwrap())
            .filter(|parsed| !matches!(parsed, Event::Ignored { .. }))
            .count();
        assert!(
            parsed > 0,
            "no example of `{event}` parses into an event pitcrew acts on"
        );
    }
    for event in CI_EVENTS {
        assert!(HANDLED_EVENTS.contains(event), "the CI event `{event}` is not handled");
    }
}

fn triage_job(decision: Decision) -> (PermissionGate, JobRequest) {
    let request = act(decision);
    let [Action::Run(job)] = request.actions.as_slice() else {
        panic!("not one job: {:?}", request.actions)
    };
    (request.permission, job.as_ref().clone())
}

#[test]
fn a_failed_check_run_asks_for_a_triage_of_its_commit_on_its_pull_request() {
    let (event, payload) = load("check_run/completed.1.payload.json");
    let (gate, job) = triage_job(decide_on(&event, &payload));
    assert_eq!(gate, PermissionGate::Trusted);
    assert_eq!(
        (job.kind.clone(), job.subject.clone()),
        (JobKind::Triage, Subject::PullRequest { number: IssueNumber(2) })
    );
    assert_eq!(
        job.head_sha.as_ref().map(CommitSha::as_str),
        Some("ec26c3e57ca3a959ca5aad62de7213c562f8c821")
    );
    assert_eq!(job.key(), "Codertocat/Hello-World#2");
    assert_eq!(job.requested_by.login.as_str(), "Codertocat");
    let ci = job.ci().unwrap();
    assert_eq!(
        (
            ci.event.as_str(),
            ci.id,
            ci.name.as_deref(),
            ci.pull_requests.as_slice()
        ),
        ("check_run", 128620228, Some("Octocoders-linter"), &[IssueNumber(2)][..])
    );
    // The request survives the job store's JSON.
    let stored: JobRequest = serde_json::from_value(serde_json::to_value(&job).unwrap()).unwrap();
    assert_eq!(stored, job);
}

#[test]
fn a_failed_suite_or_workflow_run_asks_for_a_triage_and_passing_ones_do_not() {
    let (event, mut payload) = load("check_suite/completed.payload.json");
    assert!(matches!(decide_on(&event, &payload), Decision::Ignore { .. }));
    payload["check_suite"]["conclusion"] = json!("timed_out");
    let (_, job) = triage_job(decide_on(&event, &payload));
    assert_eq!(
        (job.ci().unwrap().event.as_str(), job.subject.number()),
        ("check_suite", Some(IssueNumber(2)))
    );

    let (event, mut payload) = load("workflow_run/completed.with-pull-requests.payload.json");
    assert!(matches!(decide_on(&event, &payload), Decision::Ignore { .. }));
    payload["workflow_run"]["conclusion"] = json!("failure");
    // The example's PR is another repository's: the triage is keyed by the commit, with no PR.
    let (_, job) = triage_job(decide_on(&event, &payload));
    assert_eq!(
        job.subject,
        Subject::Commit {
            sha: CommitSha("3484a3fb816e0859fd6e1cea078d76385ff50625".into())
        }
    );
    assert_eq!(job.reply_to, ReplyTarget::Nowhere);
    assert_eq!(job.key(), "octo-org/octo-repo@3484a3fb816e0859fd6e1cea078d76385ff50625");
    // GitHub's example names its run with an empty string: no name.
    assert_eq!(job.ci().unwrap().name, None);
}

#[test]
fn the_bots_own_checks_and_a_repository_that_turned_triage_off_start_nothing() {
    let (event, mut payload) = load("check_run/completed.1.payload.json");
    payload["check_run"]["name"] = json!("pitcrew triage");
    assert!(matches!(decide_on(&event, &payload), Decision::Ignore { reason } if reason.contains("bot's own")));

    let (event, mut payload) = load("check_run/completed.1.payload.json");
    payload["check_run"]["app"]["slug"] = json!("pitcrew");
    assert!(matches!(decide_on(&event, &payload), Decision::Ignore { reason } if reason.contains("bot's own")));

    let (event, mut payload) = load("check_suite/completed.payload.json");
    payload["check_suite"]["conclusion"] = json!("failure");
    payload["check_suite"]["app"]["slug"] = json!("pitcrew");
    assert!(matches!(decide_on(&event, &payload), Decision::Ignore { reason } if reason.contains("bot's own")));

    let (event, payload) = load("check_run/completed.1.payload.json");
    let off = TriggerConfig {
        ci_triage: false,
        ..cfg()
    };
    let decision = decide(&Event::parse(&event, &payload).unwrap(), &off);
    assert!(matches!(decision, Decision::Ignore { reason } if reason.contains("triage is off")));

    // A cancelled run is not a failure.
    let (event, mut payload) = load("check_run/completed.1.payload.json");
    payload["check_run"]["conclusion"] = json!("cancelled");
    assert!(matches!(decide_on(&event, &payload), Decision::Ignore { reason } if reason.contains("cancelled")));
}

#[test]
fn a_comment_whose_author_login_is_malformed_is_ignored() {
    // Regression: an empty author login made pitcrew call `…/collaborators//permission`.
    for login in ["", "a--b", "-x", "x-", "a/b", "..", &"a".repeat(40)] {
        let (event, mut payload) = pr_comment_saying("@agent fix the tests");
        payload["comment"]["user"]["login"] = json!(login);
        match Event::parse(&event, &payload).unwrap() {
            Event::Ignored { reason } => {
                assert!(
                    reason.starts_with("issue_comment.created: $.comment.user.login: ")
                        && reason.contains("is not a GitHub login"),
                    "{login:?}: {reason}"
                );
            }
            other => panic!("{login:?} was not ignored: {other:?}"),
        }
        assert!(
            matches!(decide_on(&event, &payload), Decision::Ignore { .. }),
            "{login:?}"
        );
    }
    let (event, mut payload) = pr_comment_saying("@agent fix the tests");
    payload["sender"]["login"] = json!("");
    assert!(matches!(
        Event::parse(&event, &payload).unwrap(),
        Event::Ignored { reason } if reason.contains("$.sender.login")
    ));
    // Bot accounts are logins too.
    for login in ["renovate[bot]", "pitcrew[bot]", "octo-cat"] {
        let (event, mut payload) = pr_comment_saying("@agent fix the tests");
        payload["comment"]["user"]["login"] = json!(login);
        assert_eq!(
            comment(Event::parse(&event, &payload).unwrap()).author.login.as_str(),
            login
        );
    }
}

#[test]
fn a_delivery_whose_repository_name_is_malformed_is_ignored() {
    // The repository's owner and name go into every API path the job builds.
    for (path, value) in [
        ("name", json!("a b")),
        ("name", json!("..")),
        ("owner", json!({"login": "a/b"})),
    ] {
        let (event, mut payload) = pr_comment_saying("@agent fix the tests");
        payload["repository"][path] = value.clone();
        match Event::parse(&event, &payload).unwrap() {
            Event::Ignored { reason } => assert!(reason.contains("$.repository."), "{value}: {reason}"),
            other => panic!("{value} was not ignored: {other:?}"),
        }
    }
    // A name of the wrong type is a malformed payload, not an ignored one.
    let (event, mut payload) = pr_comment_saying("@agent fix the tests");
    payload["repository"]["name"] = json!(7);
    let error = Event::parse(&event, &payload).unwrap_err();
    assert_eq!(error.path, "$.repository.name");
}

#[test]
fn a_delivery_whose_commit_id_is_malformed_is_ignored() {
    // A commit id goes into API paths, refs and `git` arguments.
    for bad in ["abc123", "--upload-pack=touch /tmp/pwned", "HEAD", "refs/heads/main"] {
        let (event, mut payload) = load("workflow_run/completed.with-pull-requests.payload.json");
        payload["workflow_run"]["head_sha"] = json!(bad);
        match Event::parse(&event, &payload).unwrap() {
            Event::Ignored { reason } => assert!(reason.contains("$.workflow_run.head_sha"), "{bad}: {reason}"),
            other => panic!("{bad} was not ignored: {other:?}"),
        }
    }
}

/// Job requests queued by an earlier version (a `number`, 0 for none, and `is_pull_request`; a reply
/// target "issue 0") still run after an upgrade, as what they were about.
#[test]
fn job_requests_stored_by_an_earlier_version_keep_their_subject() {
    let stored = |number: u64, is_pull_request: bool, source: Value, head_sha: Value| {
        json!({
            "kind": "triage",
            "repo": {"owner": "o", "name": "r", "clone_url": "https://github.com/o/r.git",
                     "default_branch": "main", "private": false},
            "installation_id": 7,
            "number": number,
            "is_pull_request": is_pull_request,
            "requested_by": {"login": "alice", "id": 1, "association": null},
            "reply_to": {"type": "issue", "number": number, "comment_id": null},
            "source": source,
            "instructions": null,
            "review_comment": null,
            "head_sha": head_sha,
            "delivery_id": "d1"
        })
    };
    let read = |value: Value| serde_json::from_value::<JobRequest>(value).unwrap();
    let comment = json!({"type": "comment", "comment_id": 5});
    let pull = read(stored(12, true, comment.clone(), Value::Null));
    assert_eq!(
        pull.subject,
        Subject::PullRequest {
            number: IssueNumber(12)
        }
    );
    assert_eq!(
        pull.reply_to,
        ReplyTarget::Issue {
            number: IssueNumber(12),
            comment_id: None
        }
    );
    assert_eq!(pull.key(), "o/r#12");
    let issue = read(stored(3, false, comment, Value::Null));
    assert_eq!(issue.subject, Subject::Issue { number: IssueNumber(3) });
    let ci = json!({"type": "ci", "event": "workflow_run", "id": 9, "name": null, "head_branch": "main",
                    "pull_requests": [], "html_url": null});
    let commit = read(stored(0, false, ci, json!("abc123")));
    assert_eq!(
        commit.subject,
        Subject::Commit {
            sha: CommitSha("abc123".into())
        }
    );
    assert_eq!(commit.reply_to, ReplyTarget::Nowhere);
    assert_eq!(commit.key(), "o/r@abc123");
    let mut chore = stored(
        0,
        false,
        json!({"type": "schedule", "schedule": "0 5 * * 1"}),
        Value::Null,
    );
    chore["kind"] = json!({"chore": "deps"});
    let chore = read(chore);
    assert_eq!(chore.subject, Subject::Repository);
    assert_eq!(chore.key(), "o/r:deps");
    // What this version writes reads back the same.
    for request in [pull, issue, commit, chore] {
        let again = read(serde_json::to_value(&request).unwrap());
        assert_eq!(again, request);
    }
}

/// The configuration of a repository that reviews every pull request.
fn reviewing() -> TriggerConfig {
    let mut cfg = cfg();
    cfg.review.auto = true;
    cfg
}

#[test]
fn pull_requests_that_open_or_change_are_reviewed_when_the_repository_says_so() {
    for fixture in [
        "pull_request/opened.payload.json",
        "pull_request/reopened.payload.json",
        "pull_request/ready_for_review.payload.json",
        "pull_request/synchronize.payload.json",
    ] {
        let (event, payload) = load(fixture);
        let parsed = Event::parse(&event, &payload).unwrap();
        let Event::PullRequestChanged { pull, action, .. } = &parsed else {
            panic!("{fixture}: {parsed:?}");
        };
        assert_eq!(pull.number.0, payload["pull_request"]["number"].as_u64().unwrap());
        assert_eq!(
            pull.head_sha.as_str(),
            payload["pull_request"]["head"]["sha"].as_str().unwrap()
        );
        assert_eq!(
            fixture
                .trim_start_matches("pull_request/")
                .trim_end_matches(".payload.json"),
            action.as_str()
        );
        // Off unless the repository (or the operator) turns it on; a new head gets its config
        // check all the same, silently.
        assert!(
            not_automatic(&parsed, &cfg()).contains("automatic reviews are off"),
            "{fixture}"
        );
        if *action == PullAction::ReadyForReview {
            assert!(
                matches!(decide(&parsed, &cfg()), Decision::Ignore { ref reason } if reason.contains("automatic reviews are off")),
                "{fixture}"
            );
        } else {
            assert_eq!(
                run_kinds(decide(&parsed, &cfg())),
                [(JobKind::ConfigCheck, ReplyTarget::Nowhere)],
                "{fixture}"
            );
            // Why the review did not start goes with the decision, for the log.
            let not_run = act(decide(&parsed, &cfg())).not_run;
            assert!(
                not_run.len() == 1 && not_run[0].contains("automatic reviews are off"),
                "{fixture}: {not_run:?}"
            );
        }
        let request = act(decide(&parsed, &reviewing()));
        assert_eq!(request.permission, PermissionGate::Trusted, "nobody asked: {fixture}");
        let jobs: Vec<&Action> = request
            .actions
            .iter()
            .filter(|action| !matches!(action, Action::Run(job) if job.kind == JobKind::ConfigCheck))
            .collect();
        let [Action::Run(job)] = jobs.as_slice() else {
            panic!("{fixture}: {jobs:?}");
        };
        assert_eq!(job.kind, JobKind::Review);
        assert_eq!(job.subject, Subject::PullRequest { number: pull.number });
        assert_eq!(job.head_sha.as_ref(), Some(&pull.head_sha));
        assert_eq!(
            job.source,
            JobSource::PullRequest {
                action: action.as_str().to_owned()
            }
        );
        assert_eq!(
            job.reply_to,
            ReplyTarget::Issue {
                number: pull.number,
                comment_id: None
            }
        );
    }
}

/// Why the pull request of `parsed` gets no automatic review or description under `cfg`; panics
/// when it gets one.
fn not_automatic(parsed: &Event, cfg: &TriggerConfig) -> String {
    let Event::PullRequestChanged { pull, action, .. } = parsed else {
        panic!("{parsed:?}");
    };
    let (kinds, not_run) = decide::automatic_kinds(*action, pull, cfg);
    assert!(kinds.is_empty(), "{kinds:?}");
    not_run.join("; ")
}

#[test]
fn drafts_bots_and_the_skip_label_are_not_reviewed_without_being_asked() {
    let (event, payload) = load("pull_request/opened.payload.json");
    let reason = |payload: &Value, cfg: &TriggerConfig| {
        let parsed = Event::parse(&event, payload).unwrap();
        // Only the config check runs.
        assert_eq!(
            run_kinds(decide(&parsed, cfg)),
            [(JobKind::ConfigCheck, ReplyTarget::Nowhere)]
        );
        not_automatic(&parsed, cfg)
    };
    let mut draft = payload.clone();
    draft["pull_request"]["draft"] = json!(true);
    assert!(reason(&draft, &reviewing()).contains("is a draft"));

    let mut by_bot = payload.clone();
    by_bot["pull_request"]["user"]["login"] = json!("renovate[bot]");
    by_bot["pull_request"]["user"]["type"] = json!("Bot");
    assert!(reason(&by_bot, &reviewing()).contains("`[review] bots` does not list"));
    let mut listed = reviewing();
    listed.review.bots = vec!["Renovate[bot]".into()];
    assert_eq!(
        run_kinds(decide(&Event::parse(&event, &by_bot).unwrap(), &listed)),
        [
            (JobKind::ConfigCheck, ReplyTarget::Nowhere),
            (
                JobKind::Review,
                ReplyTarget::Issue {
                    number: IssueNumber(2),
                    comment_id: None
                }
            )
        ]
    );
    // The bot's own pull requests (its fixes, its dependency updates) are bots' too.
    let mut own = payload.clone();
    own["pull_request"]["user"]["login"] = json!("pitcrew");
    assert!(reason(&own, &reviewing()).contains("bot account"));

    let mut labelled = payload.clone();
    labelled["pull_request"]["labels"] = json!([{"name": "pitcrew:skip-review", "color": "ededed"}]);
    assert!(reason(&labelled, &reviewing()).contains("labelled `pitcrew:skip-review`"));

    let mut off = reviewing();
    off.commands = [CommandKind::Fix].into_iter().collect();
    assert!(reason(&payload, &off).contains("`review` is turned off"));
}

/// The configuration of a repository that describes pull requests as they open.
fn describing() -> TriggerConfig {
    let mut cfg = cfg();
    cfg.review.describe = true;
    cfg
}

/// The kinds of the jobs `decision` runs, and their reply targets.
fn run_kinds(decision: Decision) -> Vec<(JobKind, ReplyTarget)> {
    act(decision)
        .actions
        .into_iter()
        .map(|action| match action {
            Action::Run(job) => (job.kind, job.reply_to),
            other => panic!("not a run: {other:?}"),
        })
        .collect()
}

#[test]
fn an_opened_pull_request_is_described_when_the_repository_says_so() {
    let (event, payload) = load("pull_request/opened.payload.json");
    let parsed = Event::parse(&event, &payload).unwrap();
    let Event::PullRequestChanged { pull, .. } = &parsed else {
        panic!("{parsed:?}");
    };
    let number = pull.number;
    let request = act(decide(&parsed, &describing()));
    assert_eq!(request.permission, PermissionGate::Trusted, "nobody asked");
    let [Action::Run(check), Action::Run(job)] = request.actions.as_slice() else {
        panic!("{:?}", request.actions);
    };
    // The config check first, on the same key: quick, and silent.
    assert_eq!(check.kind, JobKind::ConfigCheck);
    assert_eq!(check.key(), job.key());
    assert_eq!(check.head_sha.as_ref(), Some(&pull.head_sha));
    assert_eq!(check.reply_to, ReplyTarget::Nowhere);
    assert_eq!(job.kind, JobKind::Describe);
    assert_eq!(job.subject, Subject::PullRequest { number });
    assert_eq!(job.head_sha.as_ref(), Some(&pull.head_sha));
    assert_eq!(
        job.source,
        JobSource::PullRequest {
            action: "opened".to_owned()
        }
    );
    // Nobody asked, so nothing is said on the conversation.
    assert_eq!(job.reply_to, ReplyTarget::Nowhere);

    // With automatic reviews too: two jobs on the pull request's key, the description first; the
    // review answers on the pull request as before.
    let mut both = describing();
    both.review.auto = true;
    let request = act(decide(&parsed, &both));
    let jobs: Vec<&JobRequest> = request
        .actions
        .iter()
        .map(|action| match action {
            Action::Run(job) => job.as_ref(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        jobs.iter().map(|job| job.kind.clone()).collect::<Vec<_>>(),
        [JobKind::ConfigCheck, JobKind::Describe, JobKind::Review]
    );
    assert_eq!(jobs[1].key(), jobs[2].key());
    assert_eq!(
        jobs[2].reply_to,
        ReplyTarget::Issue {
            number,
            comment_id: None
        }
    );

    // A draft is described (its description is read while it is one), not reviewed.
    let mut draft = payload;
    draft["pull_request"]["draft"] = json!(true);
    let draft = Event::parse(&event, &draft).unwrap();
    assert_eq!(
        run_kinds(decide(&draft, &both)),
        [
            (JobKind::ConfigCheck, ReplyTarget::Nowhere),
            (JobKind::Describe, ReplyTarget::Nowhere)
        ]
    );

    // Only as it opens: not when it is reopened, marked ready or pushed to.
    for fixture in [
        "pull_request/reopened.payload.json",
        "pull_request/ready_for_review.payload.json",
        "pull_request/synchronize.payload.json",
    ] {
        let (event, payload) = load(fixture);
        let parsed = Event::parse(&event, &payload).unwrap();
        assert!(
            not_automatic(&parsed, &describing()).contains("automatic reviews are off"),
            "{fixture}"
        );
        assert_eq!(
            run_kinds(decide(&parsed, &both))
                .into_iter()
                .map(|(kind, _)| kind)
                .filter(|kind| *kind != JobKind::ConfigCheck)
                .collect::<Vec<_>>(),
            [JobKind::Review],
            "{fixture}"
        );
    }
}

#[test]
fn bots_the_skip_label_and_a_turned_off_command_are_not_described() {
    let (event, payload) = load("pull_request/opened.payload.json");
    let reason = |payload: &Value, cfg: &TriggerConfig| not_automatic(&Event::parse(&event, payload).unwrap(), cfg);
    let mut by_bot = payload.clone();
    by_bot["pull_request"]["user"]["login"] = json!("renovate[bot]");
    by_bot["pull_request"]["user"]["type"] = json!("Bot");
    assert!(reason(&by_bot, &describing()).contains("`[review] bots` does not list"));
    let mut listed = describing();
    listed.review.bots = vec!["renovate[bot]".into()];
    assert_eq!(
        run_kinds(decide(&Event::parse(&event, &by_bot).unwrap(), &listed)),
        [
            (JobKind::ConfigCheck, ReplyTarget::Nowhere),
            (JobKind::Describe, ReplyTarget::Nowhere)
        ]
    );

    let mut labelled = payload.clone();
    labelled["pull_request"]["labels"] = json!([{"name": "pitcrew:skip-review", "color": "ededed"}]);
    assert!(reason(&labelled, &describing()).contains("labelled `pitcrew:skip-review`"));

    let mut off = describing();
    off.commands = [CommandKind::Review].into_iter().collect();
    assert_eq!(reason(&payload, &off), "`describe` is turned off");
    // With reviews on, the review still runs.
    off.review.auto = true;
    assert_eq!(
        run_kinds(decide(&Event::parse(&event, &payload).unwrap(), &off))
            .into_iter()
            .map(|(kind, _)| kind)
            .collect::<Vec<_>>(),
        [JobKind::ConfigCheck, JobKind::Review]
    );
    // Both off for a draft: each reason is given.
    let mut draft = payload;
    draft["pull_request"]["draft"] = json!(true);
    off.commands = [CommandKind::Fix].into_iter().collect();
    assert_eq!(
        reason(&draft, &off),
        "`describe` is turned off; pull request #2 is a draft: it is reviewed once it is ready"
    );
}
