//! Identifiers of GitHub objects as newtypes, so a comment id is never passed where an issue number
//! is expected: repositories, installations, issues and pull requests, comments, check runs, commits.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A repository, `owner/name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RepoName {
    owner: String,
    name: String,
}

/// Why a string is not an `owner/name` repository name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a repository name: {reason}; expected `owner/name`")]
pub struct RepoNameError {
    pub input: String,
    pub reason: &'static str,
}

impl RepoName {
    pub fn new(owner: &str, name: &str) -> Result<Self, RepoNameError> {
        let error = |reason| RepoNameError {
            input: format!("{owner}/{name}"),
            reason,
        };
        for part in [owner, name] {
            if part.is_empty() {
                return Err(error("the owner and the name must not be empty"));
            }
            if part == "." || part == ".." {
                return Err(error("`.` and `..` are not names"));
            }
            // GitHub allows letters, digits, `-`, `_` and `.`; anything else would change the
            // meaning of the API paths built from the name.
            if !part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            {
                return Err(error("only letters, digits, `-`, `_` and `.` are allowed"));
            }
        }
        Ok(RepoName {
            owner: owner.to_owned(),
            name: name.to_owned(),
        })
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl FromStr for RepoName {
    type Err = RepoNameError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let mut parts = input.split('/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(owner), Some(name), None) => RepoName::new(owner, name).map_err(|mut error| {
                error.input = input.to_owned();
                error
            }),
            _ => Err(RepoNameError {
                input: input.to_owned(),
                reason: "it needs exactly one `/`",
            }),
        }
    }
}

impl fmt::Display for RepoName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

impl Serialize for RepoName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RepoName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

macro_rules! number_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

number_id!(
    /// A GitHub App's installation on an account.
    InstallationId
);
number_id!(
    /// The number of an issue or a pull request (pull requests are issues), as in `#42`.
    IssueNumber
);
number_id!(
    /// An issue comment or a review comment (the two are numbered separately by GitHub).
    CommentId
);
number_id!(
    /// A check run.
    CheckRunId
);

/// A commit id, as GitHub spells it (40 hex digits).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CommitSha(pub String);

impl CommitSha {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CommitSha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
