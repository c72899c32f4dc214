//! What the configuration knows of dependency chores: the ecosystems (the one vocabulary that a
//! repository's `[chores.deps] ecosystems`, branch names and reports spell them with), the update
//! policy a repository writes in `[chores.deps]`, and where the operator's `[chores]` registries
//! are, the public ones by default. `chores/` works with these; they live here so that the
//! configuration is read into typed values without depending on the chores themselves.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use url::Url;

use super::schedule::Schedule;

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

/// What the repository allows (`[chores.deps]`): the defaults of its top-level keys, refined per
/// package by its `[[chores.deps.rules]]`. Ask it with [`Policy::for_package`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    /// Propose major updates (in a pull request of their own).
    pub major: bool,
    /// Package name globs never touched (`*` matches any run of characters: `serde*`).
    pub ignore: Vec<String>,
    /// Move pinned requirements too.
    pub update_pinned: bool,
    /// The rules, in file order: a later match overrides what an earlier one set.
    pub rules: Vec<Rule>,
    /// Releases younger than this are not proposed yet (`None`: any age).
    pub min_release_age: Option<Duration>,
    /// Packages a maintainer ignored by command (`@agent ignore`): never proposed, whatever the
    /// rules say. Names as the command gave them, compared as the registry compares names.
    pub ignored_by_command: Vec<String>,
}

/// One `[[chores.deps.rules]]` table: the packages it matches and what it sets for them (`None`:
/// left as the defaults and earlier rules have it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rule {
    /// Package name globs; never empty.
    pub matches: Vec<String>,
    /// The ecosystems it applies to; `None`: every one.
    pub ecosystems: Option<BTreeSet<Ecosystem>>,
    pub ignore: Option<bool>,
    pub major: Option<bool>,
    pub update_pinned: Option<bool>,
    /// The named group whose pull request the matched packages' updates go to.
    pub group: Option<String>,
    /// When that group's pull request is made (only with `group`): its own cron schedule, in the
    /// repository's time zone; other runs leave the group alone.
    pub schedule: Option<Schedule>,
}

/// What the policy says of one package.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PackagePolicy {
    /// Never proposed.
    pub ignore: bool,
    /// Majors proposed (in the majors' pull request of its group).
    pub major: bool,
    /// A pinned requirement moves too.
    pub update_pinned: bool,
    /// Its updates go to the pull request of this named group (`pitcrew/deps-{group}`) rather
    /// than its ecosystem's.
    pub group: Option<String>,
}

impl Policy {
    /// The defaults with every matching rule applied in order.
    pub fn for_package(&self, ecosystem: Ecosystem, name: &str) -> PackagePolicy {
        let mut out = PackagePolicy {
            ignore: self.ignore.iter().any(|pattern| glob_matches(pattern, name)),
            major: self.major,
            update_pinned: self.update_pinned,
            group: None,
        };
        let applies = |rule: &&Rule| {
            rule.ecosystems.as_ref().is_none_or(|set| set.contains(&ecosystem))
                && rule.matches.iter().any(|pattern| glob_matches(pattern, name))
        };
        for rule in self.rules.iter().filter(applies) {
            if let Some(ignore) = rule.ignore {
                out.ignore = ignore;
            }
            if let Some(major) = rule.major {
                out.major = major;
            }
            if let Some(update_pinned) = rule.update_pinned {
                out.update_pinned = update_pinned;
            }
            if let Some(group) = &rule.group {
                out.group = Some(group.clone());
            }
        }
        if self
            .ignored_by_command
            .iter()
            .any(|ignored| same_package(ecosystem, ignored, name))
        {
            out.ignore = true;
        }
        out
    }
}

impl Policy {
    /// The named groups with a schedule of their own, and that schedule (every rule that gives
    /// one for a group gives the same: the configuration refuses two).
    pub fn group_schedules(&self) -> BTreeMap<String, Schedule> {
        self.rules
            .iter()
            .filter_map(|rule| Some((rule.group.clone()?, rule.schedule.clone()?)))
            .collect()
    }
}

/// Whether two spellings name one package: npm and Actions names are exact up to ASCII case
/// (GitHub's), Cargo's treat `-` and `_` alike, Python's compare as PEP 503 normalises them.
fn same_package(ecosystem: Ecosystem, a: &str, b: &str) -> bool {
    let fold = |name: &str| -> String {
        let mut out = String::with_capacity(name.len());
        for c in name.chars() {
            let c = c.to_ascii_lowercase();
            match (ecosystem, c) {
                (Ecosystem::Python, '-' | '_' | '.') => {
                    if !out.ends_with('-') {
                        out.push('-');
                    }
                }
                (Ecosystem::Cargo, '_') => out.push('-'),
                _ => out.push(c),
            }
        }
        out
    };
    fold(a) == fold(b)
}

/// Whether `name` matches `pattern`, where each `*` matches any run of characters (none
/// included) and everything else matches itself.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        // No `*`: the whole name.
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Why a text is not a package glob, as a sentence fragment.
pub fn glob_problem(pattern: &str) -> Option<&'static str> {
    if pattern.trim().is_empty() {
        Some("an empty pattern matches no package")
    } else if pattern.chars().any(char::is_whitespace) {
        Some("package names have no whitespace")
    } else if pattern.contains(['?', '[', ']', '{', '}', '!']) {
        Some("only `*` is a wildcard (it matches any run of characters)")
    } else if pattern.contains("**") {
        Some("write one `*`: it already matches any run of characters")
    } else {
        None
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
    fn the_ignore_list_matches_names_and_globs() {
        let policy = Policy {
            ignore: vec!["serde*".into(), "tokio".into(), "*-sys".into()],
            ..Policy::default()
        };
        let ignored = |name: &str| policy.for_package(Ecosystem::Cargo, name).ignore;
        assert!(ignored("serde_json") && ignored("serde") && ignored("tokio") && ignored("openssl-sys"));
        assert!(!ignored("tokio-util") && !ignored("reqwest") && !ignored("sys"));
    }

    #[test]
    fn a_package_ignored_by_command_stays_ignored_whatever_the_rules_say() {
        let policy = Policy {
            rules: vec![Rule {
                matches: vec!["*".into()],
                ignore: Some(false),
                ..Rule::default()
            }],
            ignored_by_command: vec!["Django".into(), "serde_json".into()],
            ..Policy::default()
        };
        assert!(policy.for_package(Ecosystem::Python, "django").ignore);
        assert!(policy.for_package(Ecosystem::Cargo, "serde-json").ignore);
        assert!(!policy.for_package(Ecosystem::Npm, "serde-json").ignore);
        assert!(!policy.for_package(Ecosystem::Python, "flask").ignore);
    }

    #[test]
    fn globs_match_a_star_anywhere() {
        assert!(glob_matches("aws-*-sdk", "aws-s3-sdk") && glob_matches("aws-*-sdk", "aws--sdk"));
        assert!(!glob_matches("aws-*-sdk", "aws-sdk") && !glob_matches("aws-*-sdk", "aws-s3-sdk-x"));
        assert!(glob_matches("*", "anything") && glob_matches("@types/*", "@types/node"));
        assert!(glob_matches("a*b*c", "abc") && glob_matches("a*b*c", "axxbyyc") && !glob_matches("a*b*c", "acb"));
        assert!(!glob_matches("ab*ba", "aba"), "the prefix and suffix may not overlap");
        assert_eq!(
            glob_problem("serde?"),
            Some("only `*` is a wildcard (it matches any run of characters)")
        );
        assert_eq!(glob_problem("react*"), None);
    }

    #[test]
    fn later_rules_override_earlier_ones_and_the_defaults() {
        let policy = Policy {
            major: false,
            ignore: vec!["left-pad".into()],
            rules: vec![
                Rule {
                    matches: vec!["react*".into()],
                    major: Some(true),
                    group: Some("react".into()),
                    ..Rule::default()
                },
                Rule {
                    matches: vec!["react-dom".into(), "left-pad".into()],
                    ecosystems: Some([Ecosystem::Npm].into()),
                    major: Some(false),
                    ignore: Some(false),
                    ..Rule::default()
                },
                Rule {
                    matches: vec!["react-native".into()],
                    ignore: Some(true),
                    update_pinned: Some(true),
                    ..Rule::default()
                },
            ],
            ..Policy::default()
        };
        let react = policy.for_package(Ecosystem::Npm, "react");
        assert_eq!(
            react,
            PackagePolicy {
                ignore: false,
                major: true,
                update_pinned: false,
                group: Some("react".into()),
            }
        );
        let dom = policy.for_package(Ecosystem::Npm, "react-dom");
        assert!(!dom.major && dom.group.as_deref() == Some("react"));
        // The second rule is npm's only: a crate of the name keeps the first rule's major.
        assert!(policy.for_package(Ecosystem::Cargo, "react-dom").major);
        assert!(!policy.for_package(Ecosystem::Npm, "left-pad").ignore);
        assert!(policy.for_package(Ecosystem::Python, "left-pad").ignore);
        let native = policy.for_package(Ecosystem::Npm, "react-native");
        assert!(native.ignore && native.update_pinned && native.major);
        assert_eq!(policy.for_package(Ecosystem::Npm, "vue"), PackagePolicy::default());
    }

    #[test]
    fn ecosystems_round_trip() {
        for e in Ecosystem::ALL {
            assert_eq!(Ecosystem::parse(e.as_str()), Some(e));
        }
    }
}
