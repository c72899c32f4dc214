//! What a handler writes in its job's history ([`JobRecord`]), and the summary a job ends with
//! ([`Summary`]: the store's result, and the Action's outputs).
//!
//! The shapes are the ones pitcrew has always written, so a server upgraded while a job waits for
//! its retry still finds what the earlier attempt recorded (the test below pins them).

use serde::{Deserialize, Serialize};

use crate::config::deps::Ecosystem;
use crate::github::{CheckConclusion, CheckRunId};
use crate::jobs::Record;
use crate::triage::{Class, Finding};

use super::live::ProgressComment;

/// One entry a handler appends to its job's history; the store adds its own
/// ([`crate::jobs::Lifecycle`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum JobRecord {
    /// The handler took the job.
    Started {
        /// The job's kind, as stored.
        kind: String,
    },
    /// The job's progress comment is posted, and its check run created when it has one: a retry
    /// after a crash reports there instead of starting new ones.
    Reporting {
        check_run: Option<CheckRunId>,
        check_run_url: Option<String>,
        comment: ProgressComment,
    },
    /// What the tests said before the agent changed anything.
    TestsBefore { summary: String },
    /// The review posted on the pull request.
    ReviewPosted { review: u64, inline_comments: usize },
    /// What a dependency chore found on the base commit.
    ChorePlan {
        base: String,
        ecosystems: Vec<EcosystemPlan>,
        problems: Vec<String>,
    },
    /// The fix loop pushed a round's commit and waits for its CI: a retry after the process
    /// stopped waits again instead of starting over.
    CiWaiting(CiWaiting),
    /// What CI said of a round's commit (the round, complete).
    CiRound { round: crate::report::ci_loop::Round },
    /// The job's end in one line, as its report says it. (The store's own `finished` entry, of the
    /// same kind, carries the state instead.)
    Finished { headline: String },
    /// A failed job's summary; a job that succeeds keeps it as its result instead.
    Result(Summary),
}

impl Record for JobRecord {}

/// A round of the fix loop that waits for CI, with what a retry needs to go on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CiWaiting {
    pub round: crate::report::ci_loop::Round,
    /// The pull request's head before the job's first change (changed files count from it).
    pub start: String,
    /// The round agent's final message.
    pub summary: String,
    /// The pull request whose CI the loop waits on.
    #[serde(default)]
    pub pull: u64,
    /// The pull request the job opened (a fix of an issue), its delivery.
    #[serde(default)]
    pub opened: Option<u64>,
    pub usage: crate::llm::Usage,
    pub steps: u32,
    pub tool_calls: u32,
    /// The files changed since `start`, by path.
    pub changed: Vec<String>,
}

/// One ecosystem of a [`JobRecord::ChorePlan`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EcosystemPlan {
    pub ecosystem: Ecosystem,
    /// Dependencies its manifests declare.
    pub dependencies: usize,
    /// Updates the policy picked.
    pub updates: usize,
}

/// How a job ended, for the store's result and the Action's outputs (`conclusion`, `commit_sha`,
/// `pr_number`, `summary`, and the final comment's markdown for the step summary).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub headline: String,
    /// The check run's conclusion.
    pub conclusion: CheckConclusion,
    /// The commit pushed.
    pub commit: Option<String>,
    /// The pull request opened (a chore's first).
    pub pull_request: Option<u64>,
    pub summary: String,
    /// The final comment's markdown.
    pub report: String,
    /// What a chore or a triage adds, under its own key.
    #[serde(flatten)]
    pub detail: Option<Detail>,
}

/// A [`Summary`]'s part for one kind of job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Detail {
    Chore(ChoreDetail),
    Triage(TriageDetail),
}

/// What a dependency chore did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChoreDetail {
    pub base: String,
    pub pull_requests: Vec<ChorePullRequest>,
    /// Earlier runs' pull requests closed as no longer needed.
    pub closed: Vec<u64>,
    pub problems: Vec<String>,
}

/// A pull request a chore opened, or updated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChorePullRequest {
    pub number: u64,
    pub title: String,
    pub updated: bool,
}

/// What a triage found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriageDetail {
    pub head_sha: String,
    pub jobs: Vec<TriagedJob>,
    /// The fix job it started.
    pub fix_job: Option<u64>,
    pub actions: Vec<String>,
}

/// One failed CI job of a [`TriageDetail`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriagedJob {
    pub name: String,
    pub class: Class,
    pub confidence: f32,
    pub findings: Vec<Finding>,
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests")]

    use serde_json::json;

    use super::*;
    use crate::github::CommentId;
    use crate::jobs::{JobEvent, JobId};

    /// A stored row, as the handlers wrote it before their records were typed.
    fn row(kind: &str, data: &str) -> JobEvent {
        JobEvent {
            job_id: JobId(7),
            seq: 1,
            at: 1_700_000_000_000,
            kind: kind.to_owned(),
            data: serde_json::from_str(data).unwrap(),
        }
    }

    /// Reads the row, and writes the record back to the same columns.
    fn read(event: &JobEvent) -> JobRecord {
        let record: JobRecord = event.record().unwrap();
        let (kind, data) = record.to_row().unwrap();
        assert_eq!((kind.as_str(), &data), (event.kind.as_str(), &event.data));
        record
    }

    #[test]
    fn rows_written_before_the_records_were_typed_read_and_write_back_the_same() {
        assert_eq!(
            read(&row("started", r#"{"kind":"fix"}"#)),
            JobRecord::Started { kind: "fix".into() }
        );
        assert_eq!(
            read(&row(
                "reporting",
                r#"{"check_run":4001,"check_run_url":"https://github.test/acme/calc/runs/4001","comment":{"id":9001,"kind":"issue"}}"#
            )),
            JobRecord::Reporting {
                check_run: Some(CheckRunId(4001)),
                check_run_url: Some("https://github.test/acme/calc/runs/4001".into()),
                comment: ProgressComment::Issue(CommentId(9001)),
            }
        );
        assert_eq!(
            read(&row(
                "reporting",
                r#"{"check_run":null,"check_run_url":null,"comment":{"id":12,"kind":"review"}}"#
            )),
            JobRecord::Reporting {
                check_run: None,
                check_run_url: None,
                comment: ProgressComment::Review(CommentId(12)),
            }
        );
        assert_eq!(
            read(&row("tests_before", r#"{"summary":"3 passed, 1 failed"}"#)),
            JobRecord::TestsBefore {
                summary: "3 passed, 1 failed".into()
            }
        );
        assert_eq!(
            read(&row("review_posted", r#"{"inline_comments":2,"review":80}"#)),
            JobRecord::ReviewPosted {
                review: 80,
                inline_comments: 2
            }
        );
        assert_eq!(
            read(&row(
                "chore_plan",
                r#"{"base":"4b825dc642cb6eb9a060e54bf8d69288fbee4904","ecosystems":[{"dependencies":3,"ecosystem":"cargo","updates":1},{"dependencies":0,"ecosystem":"npm","updates":0}],"problems":["npm: could not reach the registry"]}"#
            )),
            JobRecord::ChorePlan {
                base: "4b825dc642cb6eb9a060e54bf8d69288fbee4904".into(),
                ecosystems: vec![
                    EcosystemPlan {
                        ecosystem: Ecosystem::Cargo,
                        dependencies: 3,
                        updates: 1
                    },
                    EcosystemPlan {
                        ecosystem: Ecosystem::Npm,
                        dependencies: 0,
                        updates: 0
                    },
                ],
                problems: vec!["npm: could not reach the registry".into()],
            }
        );
        assert_eq!(
            read(&row("finished", r#"{"headline":"Pushed abc1234 to docs"}"#)),
            JobRecord::Finished {
                headline: "Pushed abc1234 to docs".into()
            }
        );
    }

    #[test]
    fn result_rows_and_job_results_of_every_kind_read_and_write_back_the_same() {
        let fix = r#"{"commit":null,"conclusion":"failure","headline":"Not pushed: the change broke tests that passed before","pull_request":null,"report":"**pitcrew** stopped","summary":"Tried."}"#;
        let JobRecord::Result(summary) = read(&row("result", fix)) else {
            panic!("not a result");
        };
        assert_eq!(summary.conclusion, CheckConclusion::Failure);
        assert_eq!(summary.detail, None);

        let pushed = r#"{"commit":"0123456789abcdef0123456789abcdef01234567","conclusion":"success","headline":"Pushed 0123456 to docs","pull_request":null,"report":"done","summary":"Fixed."}"#;
        let JobRecord::Result(summary) = read(&row("result", pushed)) else {
            panic!("not a result");
        };
        assert_eq!(
            summary.commit.as_deref(),
            Some("0123456789abcdef0123456789abcdef01234567")
        );

        let chore = r#"{"chore":{"base":"abc","closed":[7],"problems":["`pitcrew/deps-npm`: the lockfile refresh failed"],"pull_requests":[{"number":12,"title":"Update cargo dependencies","updated":false}]},"commit":null,"conclusion":"success","headline":"1 dependency pull request","pull_request":12,"report":"Opened #12","summary":"1 dependency pull request"}"#;
        let JobRecord::Result(summary) = read(&row("result", chore)) else {
            panic!("not a result");
        };
        assert_eq!(
            summary.detail,
            Some(Detail::Chore(ChoreDetail {
                base: "abc".into(),
                pull_requests: vec![ChorePullRequest {
                    number: 12,
                    title: "Update cargo dependencies".into(),
                    updated: false
                }],
                closed: vec![7],
                problems: vec!["`pitcrew/deps-npm`: the lockfile refresh failed".into()],
            }))
        );

        // A triage's summary is its job's result, never a `result` row; the same shape either way.
        let triage = json!({
            "commit": null,
            "conclusion": "neutral",
            "headline": "1 failed job: code",
            "pull_request": 5,
            "report": "the report",
            "summary": "the root cause",
            "triage": {
                "actions": ["Started a fix (job 3)."],
                "fix_job": 3,
                "head_sha": "feed",
                "jobs": [{
                    "class": "code",
                    "confidence": 0.9_f32,
                    "findings": [],
                    "name": "CI / test",
                }],
            },
        });
        let summary: Summary = serde_json::from_value(triage.clone()).unwrap();
        let Some(Detail::Triage(detail)) = &summary.detail else {
            panic!("no triage: {summary:?}");
        };
        assert_eq!((detail.fix_job, detail.jobs[0].class), (Some(3), Class::Code));
        assert_eq!(serde_json::to_value(&summary).unwrap(), triage);
    }

    #[test]
    fn the_stores_own_entries_are_not_read_as_the_handlers() {
        let finished = row("finished", r#"{"attempt":1,"error":null,"state":"succeeded"}"#);
        assert_eq!(finished.record::<JobRecord>(), None);
        let claimed = row("claimed", r#"{"attempt":1,"worker":"w1"}"#);
        assert_eq!(claimed.record::<JobRecord>(), None);
        // And the other way round.
        let headline = row("finished", r#"{"headline":"done"}"#);
        assert_eq!(headline.record::<crate::jobs::Lifecycle>(), None);
        assert_eq!(
            finished.record::<crate::jobs::Lifecycle>(),
            Some(crate::jobs::Lifecycle::Finished {
                state: crate::jobs::JobState::Succeeded,
                attempt: Some(1),
                error: None
            })
        );
    }
}
