//! What a request or a job is about: a pull request, an issue, a commit (a CI failure no pull
//! request of this repository points at), or the repository as a whole (a scheduled chore). One
//! value instead of a number where `0` meant "none" beside an `is_pull_request` flag.

use serde::{Deserialize, Serialize};

use crate::github::{CommitSha, IssueNumber};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Subject {
    PullRequest { number: IssueNumber },
    Issue { number: IssueNumber },
    Commit { sha: CommitSha },
    Repository,
}

impl Subject {
    /// An issue or a pull request by its number (GitHub numbers them in one sequence).
    pub fn issue_or_pull(number: IssueNumber, is_pull_request: bool) -> Subject {
        if is_pull_request {
            Subject::PullRequest { number }
        } else {
            Subject::Issue { number }
        }
    }

    /// The issue's or pull request's number; `None` for a commit or the repository.
    pub fn number(&self) -> Option<IssueNumber> {
        match self {
            Subject::PullRequest { number } | Subject::Issue { number } => Some(*number),
            Subject::Commit { .. } | Subject::Repository => None,
        }
    }

    /// The pull request's number, when the subject is one.
    pub fn pull_request(&self) -> Option<IssueNumber> {
        match self {
            Subject::PullRequest { number } => Some(*number),
            _ => None,
        }
    }

    pub fn is_pull_request(&self) -> bool {
        matches!(self, Subject::PullRequest { .. })
    }

    /// The serialisation key of work on this subject: at most one job runs per pull request, issue
    /// or commit at a time (`owner/name#42`, `owner/name@<sha>`, `owner/name`).
    pub fn key(&self, repo: &impl std::fmt::Display) -> String {
        match self {
            Subject::PullRequest { number } | Subject::Issue { number } => format!("{repo}#{number}"),
            Subject::Commit { sha } => format!("{repo}@{sha}"),
            Subject::Repository => repo.to_string(),
        }
    }
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subject::PullRequest { number } | Subject::Issue { number } => write!(f, "#{number}"),
            Subject::Commit { sha } => write!(f, "{}", sha.as_str().chars().take(12).collect::<String>()),
            Subject::Repository => f.write_str("the repository"),
        }
    }
}
