//! What a pull request review is made of, apart from the agent that writes it: the files of a diff
//! and their patch ids ([`diff`]), what part of a pull request a review covers — the whole, or only
//! what changed since the last reviewed commit ([`scope`]) —, which files it leaves out and why
//! ([`coverage`]), how a large diff is cut into chunks of related files ([`chunks`]), the stable
//! fingerprint that keeps a finding from being posted twice ([`fingerprint`]), and the state a
//! review leaves in its summary comment for the next one ([`state`]).
//!
//! Pure over diff text and git objects; the review job (`handlers/review.rs`) runs the agent, and
//! `report/review.rs` writes what is posted.

pub mod chunks;
pub mod coverage;
pub mod diff;
pub mod fingerprint;
pub mod scope;
pub mod state;

use serde::{Deserialize, Serialize};

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// A bug, a security hole or a broken contract: the pull request should not merge as it is.
    Blocking,
    /// Worth changing; the author decides.
    #[default]
    Suggestion,
    /// A small matter of taste or polish.
    Nit,
}

impl Severity {
    pub const ALL: [Severity; 3] = [Severity::Blocking, Severity::Suggestion, Severity::Nit];

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Blocking => "blocking",
            Severity::Suggestion => "suggestion",
            Severity::Nit => "nit",
        }
    }

    pub fn parse(word: &str) -> Option<Severity> {
        Severity::ALL
            .into_iter()
            .find(|s| s.as_str() == word.trim().to_ascii_lowercase())
    }
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    #[default]
    Bug,
    Security,
    Performance,
    Tests,
    Maintainability,
    Style,
}

impl Category {
    pub const ALL: [Category; 6] = [
        Category::Bug,
        Category::Security,
        Category::Performance,
        Category::Tests,
        Category::Maintainability,
        Category::Style,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Bug => "bug",
            Category::Security => "security",
            Category::Performance => "performance",
            Category::Tests => "tests",
            Category::Maintainability => "maintainability",
            Category::Style => "style",
        }
    }

    pub fn parse(word: &str) -> Option<Category> {
        Category::ALL
            .into_iter()
            .find(|c| c.as_str() == word.trim().to_ascii_lowercase())
    }
}
