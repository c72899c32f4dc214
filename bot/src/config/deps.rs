//! What the configuration knows of dependency chores: the ecosystems (the one vocabulary that a
//! repository's `[chores.deps] ecosystems`, branch names and reports spell them with), the update
//! policy a repository writes in `[chores.deps]`, and where the operator's `[chores]` registries
//! are, the public ones by default. `chores/` works with these; they live here so that the
//! configuration is read into typed values without depending on the chores themselves.

use serde::{Deserialize, Serialize};
use url::Url;

/// A package ecosystem pitcrew keeps current.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ecosystem {
    /// `Cargo.toml` and `Cargo.lock`, from a Cargo registry's sparse index.
    Cargo,
    /// `package.json` and `package-lock.json`, from the npm registry.
    Npm,
    /// `requirements*.txt` and `pyproject.toml`, from PyPI's JSON API.
    Python,
    /// `uses: owner/repo@ref` in `.github/workflows/*.yml`, from the action repository's tags.
    Actions,
}

impl Ecosystem {
    pub const ALL: [Ecosystem; 4] = [Ecosystem::Cargo, Ecosystem::Npm, Ecosystem::Python, Ecosystem::Actions];

    /// The name in configuration, branch names (`pitcrew/deps-cargo`) and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Ecosystem::Cargo => "cargo",
            Ecosystem::Npm => "npm",
            Ecosystem::Python => "python",
            Ecosystem::Actions => "actions",
        }
    }

    pub fn parse(word: &str) -> Option<Ecosystem> {
        Ecosystem::ALL.into_iter().find(|e| e.as_str() == word)
    }
}

/// What the repository allows (`[chores.deps]`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    /// Propose major updates (in a pull request of their own).
    pub major: bool,
    /// Package names never touched; a trailing `*` matches any suffix (`serde*`).
    pub ignore: Vec<String>,
    /// Move pinned requirements too.
    pub update_pinned: bool,
}

impl Policy {
    /// Whether `name` is on the ignore list.
    pub fn ignores(&self, name: &str) -> bool {
        self.ignore.iter().any(|pattern| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => pattern == name,
        })
    }
}

/// Where each ecosystem's registry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registries {
    /// A Cargo sparse index (`https://index.crates.io/`): `config.json` and one file per crate.
    pub cargo_index: Url,
    /// An npm registry (`https://registry.npmjs.org/`): `GET {base}{name}` is the package's metadata.
    pub npm: Url,
    /// A PyPI-compatible server (`https://pypi.org/`): `GET {base}pypi/{name}/json`.
    pub pypi: Url,
}

impl Default for Registries {
    fn default() -> Self {
        let url = |text: &str| Url::parse(text).unwrap_or_else(|_| unreachable!("a valid literal URL"));
        Registries {
            cargo_index: url("https://index.crates.io/"),
            npm: url("https://registry.npmjs.org/"),
            pypi: url("https://pypi.org/"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ignore_list_matches_names_and_prefixes() {
        let policy = Policy {
            ignore: vec!["serde*".into(), "tokio".into()],
            ..Policy::default()
        };
        assert!(policy.ignores("serde_json") && policy.ignores("serde") && policy.ignores("tokio"));
        assert!(!policy.ignores("tokio-util") && !policy.ignores("reqwest"));
    }

    #[test]
    fn ecosystems_round_trip() {
        for e in Ecosystem::ALL {
            assert_eq!(Ecosystem::parse(e.as_str()), Some(e));
        }
    }
}
