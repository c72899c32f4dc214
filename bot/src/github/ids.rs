//! Identifiers of GitHub objects as newtypes, so a comment id is never passed where an issue number
//! is expected: repositories, accounts' logins, installations, issues and pull requests, comments,
//! check runs, commits.

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

/// A GitHub account's login, checked against GitHub's rules: 1 to 39 ASCII letters, digits and
/// single hyphens, neither first nor last (`octocat`, `octo-org`); an App's bot account is such a
/// name followed by `[bot]` (`renovate[bot]`). Logins come from payloads and end up in API paths
/// (`/repos/o/r/collaborators/{login}/permission`): an empty or odd one must never get that far.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Login(String);

/// Why a string is not a GitHub login.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a GitHub login: {reason}")]
pub struct LoginError {
    pub input: String,
    pub reason: &'static str,
}

impl Login {
    /// The longest login GitHub allows (the `[bot]` suffix of an App's account aside).
    pub const MAX_LEN: usize = 39;

    pub fn parse(input: &str) -> Result<Self, LoginError> {
        let error = |reason| LoginError {
            input: input.to_owned(),
            reason,
        };
        let name = input.strip_suffix("[bot]").unwrap_or(input);
        if name.is_empty() {
            return Err(error("it is empty"));
        }
        if name.len() > Self::MAX_LEN {
            return Err(error("it is longer than 39 characters"));
        }
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(error("only ASCII letters, digits and `-` are allowed"));
        }
        if name.starts_with('-') || name.ends_with('-') {
            return Err(error("it must not begin or end with `-`"));
        }
        if name.contains("--") {
            return Err(error("it must not hold two `-` in a row"));
        }
        Ok(Login(input.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// An App's bot account (`name[bot]`).
    pub fn is_bot(&self) -> bool {
        self.0.ends_with("[bot]")
    }
}

impl FromStr for Login {
    type Err = LoginError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        Login::parse(input)
    }
}

impl fmt::Display for Login {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Login {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for Login {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Login {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Login::parse(&text).map_err(serde::de::Error::custom)
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

/// Why a string is not a commit id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a commit id: 40 (SHA-1) or 64 (SHA-256) hexadecimal digits expected")]
pub struct CommitShaError {
    pub input: String,
}

impl CommitSha {
    /// A commit id from outside (a payload): 40 or 64 hexadecimal digits, kept in lower case. It
    /// ends up in API paths, refs and `git` arguments: anything else never gets that far.
    pub fn parse(input: &str) -> Result<Self, CommitShaError> {
        if matches!(input.len(), 40 | 64) && input.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(CommitSha(input.to_ascii_lowercase()))
        } else {
            Err(CommitShaError {
                input: input.chars().take(80).collect(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CommitSha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_ids_are_forty_or_sixty_four_hex_digits() {
        let sha1 = "ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091";
        let parsed = |input: &str| CommitSha::parse(input).map(|sha| sha.to_string());
        assert_eq!(parsed(sha1).as_deref(), Ok(sha1));
        assert_eq!(parsed(&sha1.to_uppercase()).as_deref(), Ok(sha1));
        let sha256 = "a".repeat(64);
        assert_eq!(parsed(&sha256), Ok(sha256));
        for bad in [
            "",
            "abc123",
            &sha1[..39],
            &format!("{sha1}0"),
            "--upload-pack=evil-000000000000000000000",
            "g".repeat(40).as_str(),
        ] {
            assert!(CommitSha::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn logins_follow_githubs_rules() {
        let max = "a".repeat(39);
        for good in [
            "octocat",
            "octo-org",
            "a",
            "A1-b2-C3",
            max.as_str(),
            "renovate[bot]",
            "pitcrew[bot]",
            "github-actions[bot]",
        ] {
            assert_eq!(Login::parse(good).map(|l| l.to_string()).as_deref(), Ok(good), "{good}");
        }
        let long = "a".repeat(40);
        let cases = [
            ("", "it is empty"),
            ("[bot]", "it is empty"),
            ("a--b", "it must not hold two `-` in a row"),
            ("-x", "it must not begin or end with `-`"),
            ("x-", "it must not begin or end with `-`"),
            ("-", "it must not begin or end with `-`"),
            (long.as_str(), "it is longer than 39 characters"),
            ("a/b", "only ASCII letters, digits and `-` are allowed"),
            ("..", "only ASCII letters, digits and `-` are allowed"),
            ("a b", "only ASCII letters, digits and `-` are allowed"),
            ("a_b", "only ASCII letters, digits and `-` are allowed"),
            ("é", "only ASCII letters, digits and `-` are allowed"),
            ("x[bot][bot]", "only ASCII letters, digits and `-` are allowed"),
            ("bot]", "only ASCII letters, digits and `-` are allowed"),
        ];
        for (bad, reason) in cases {
            assert_eq!(
                Login::parse(bad),
                Err(LoginError {
                    input: bad.to_owned(),
                    reason
                }),
                "{bad:?}"
            );
        }
        assert!(Login::parse("renovate[bot]").is_ok_and(|l| l.is_bot()));
        assert!(serde_json::from_str::<Login>(r#""""#).is_err());
    }
}
