//! Semver update planning: from a requirement as written, the locked version and a registry's
//! releases, which updates a policy allows and the requirement to write for each, in the
//! requirement's own style. Requirements use Cargo's syntax; the compatibility and kind rules are
//! semver's, for any ecosystem that follows it.

use semver::{Comparator, Op, Version, VersionReq};

use super::{Dependency, HeldBack, Hold, Planned, Release, Update, UpdateKind};
use crate::config::deps::Policy;

/// The updates for a semver dependency: `dep.requirement` as written (cargo syntax: `1.2`,
/// `^1.2.3`, `~1.2`, `=1.2.3`, `1.*`, `>=1, <3`, `*`), `locked` the version the lockfile has (if
/// any), `releases` the registry's list.
///
/// - Only releases newer than `from` count (`from`: `locked` when it parses, else the
///   requirement's floor); yanked ones never, prereleases only when the requirement names one.
/// - When the newest satisfies the requirement, nothing: the lockfile refresh takes it.
/// - When a newer version *compatible* with `from` (same major; for `0.x` the same minor; for
///   `0.0.x` the same patch) is excluded by the requirement (a tilde, an upper bound, an exact
///   pin), a Patch or Minor update to the newest compatible one.
/// - When the newest is incompatible with `from`, a Major update to it, only with `policy.major`,
///   as an update of its own (callers put majors in a pull request of their own). When both
///   exist, the compatible one comes first.
/// - A pinned dependency (`dep.pinned`) stays, majors included, unless `policy.update_pinned`;
///   an ignored one (`policy.ignores`) always stays. An unparsable requirement yields nothing.
///
/// The new requirement keeps the written style and precision: `1.2` → `1.4`, `1.2.3` → `1.4.0`,
/// `^1.2.3` → `^1.4.0`, `~1.2` → `~1.4`, `=1.2.3` → `=1.4.0`, `1.*` → `2.*` (a prerelease is
/// always written in full). A bounded range keeps its shape and its author's intent, with the
/// upper bound moved just past the new version at the precision it was written in (`>=2.4, <2.6`
/// → `>=2.4, <2.9` for 2.8.3, `<2` → `<3` for 2.0.1, `>=1, <=1.5.0` → `>=1, <=1.6.2`); any other
/// requirement of several comparators is replaced by a caret requirement on the new version in
/// full (`^1.6.2`).
pub fn plan(dep: &Dependency, locked: Option<&str>, releases: &[Release], policy: &Policy) -> Vec<Update> {
    plan_for_rust(dep, locked, releases, policy, None).updates
}

/// A Rust version as Cargo's `rust-version` writes it (`1.70` = `1.70.0`, `1` = `1.0.0`); `None`
/// for anything else.
pub fn rust_version(text: &str) -> Option<Version> {
    let parts: Vec<u64> = text
        .trim()
        .split('.')
        .map(|part| {
            (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse().ok())
                .flatten()
        })
        .collect::<Option<_>>()?;
    match parts.as_slice() {
        [major] => Some(Version::new(*major, 0, 0)),
        [major, minor] => Some(Version::new(*major, *minor, 0)),
        [major, minor, patch] => Some(Version::new(*major, *minor, *patch)),
        _ => None,
    }
}

/// [`plan`] for a package declaring `rust-version` `project_rust` (as written): a release whose
/// `rust_version` is newer is not proposed. When the newest compatible release or the major is
/// held back for it, the newest release of the same kind that fits is proposed instead (if it
/// still is an update), and the held-back one is listed. A release or a package without a
/// readable Rust version is not limited.
pub fn plan_for_rust(
    dep: &Dependency,
    locked: Option<&str>,
    releases: &[Release],
    policy: &Policy,
    project_rust: Option<&str>,
) -> Planned {
    let mut planned = Planned::default();
    let policy = policy.for_package(dep.ecosystem, &dep.name);
    if policy.ignore || (dep.pinned && !policy.update_pinned) {
        return planned;
    }
    let Ok(requirement) = VersionReq::parse(dep.requirement.trim()) else {
        return planned;
    };
    let (from, from_text) = match locked.and_then(|text| Version::parse(text.trim()).ok().map(|v| (v, text))) {
        Some((version, text)) => (version, text.trim().to_owned()),
        None => {
            let floor = floor(&requirement);
            let text = floor.to_string();
            (floor, text)
        }
    };
    let allow_prerelease = requirement.comparators.iter().any(|c| !c.pre.is_empty());
    let newer: Vec<(Version, &Release)> = releases
        .iter()
        .filter(|release| !release.yanked)
        .filter_map(|release| Version::parse(release.version.trim()).ok().map(|v| (v, release)))
        .filter(|(version, _)| allow_prerelease || version.pre.is_empty())
        .filter(|(version, _)| *version > from)
        .collect();
    let Some((newest, _)) = newer.iter().max_by(|a, b| a.0.cmp(&b.0)) else {
        return planned;
    };
    if requirement.matches(newest) {
        return planned;
    }
    let project = project_rust.and_then(|text| rust_version(text).map(|version| (version, text.trim())));
    // What a release needs beyond the project's Rust, as written; `None` when it fits.
    let too_new = |release: &Release| -> Option<String> {
        let (project, _) = project.as_ref()?;
        let needs = release.rust_version.as_deref()?;
        (rust_version(needs)? > *project).then(|| needs.trim().to_owned())
    };

    let style = Style::of(dep.requirement.trim(), &requirement);
    let update = |to: &Version, release: &Release| Update {
        ecosystem: dep.ecosystem,
        name: dep.name.clone(),
        manifest: Some(dep.manifest.clone()),
        section: Some(dep.section.clone()),
        from: from_text.clone(),
        to: release.version.trim().to_owned(),
        kind: kind(&from, to),
        new_requirement: Some(style.render(to)),
        notes_url: release.notes_url.clone(),
        marker: None,
    };
    // The newest of `candidates` and, when it needs a newer Rust, the newest that fits with the
    // note that it was held back.
    let mut choose = |candidates: Vec<&(Version, &Release)>, major: bool| -> Option<(Version, Release)> {
        let newest = candidates.iter().max_by(|a, b| a.0.cmp(&b.0))?;
        if requirement.matches(&newest.0) {
            return None;
        }
        let Some(needs) = too_new(newest.1) else {
            return Some((newest.0.clone(), newest.1.clone()));
        };
        let fitting = candidates
            .iter()
            .filter(|(version, release)| too_new(release).is_none() && !requirement.matches(version))
            .max_by(|a, b| a.0.cmp(&b.0));
        planned.held_back.push(HeldBack {
            reason: Hold::Rust,
            name: dep.name.clone(),
            version: newest.1.version.trim().to_owned(),
            needs,
            declared: project.as_ref().map(|(_, text)| (*text).to_owned()).unwrap_or_default(),
            major,
            instead: fitting.map(|(_, release)| release.version.trim().to_owned()),
        });
        fitting.map(|(version, release)| (version.clone(), (*release).clone()))
    };
    let compatible_ones: Vec<&(Version, &Release)> =
        newer.iter().filter(|(version, _)| compatible(&from, version)).collect();
    if let Some((version, release)) = choose(compatible_ones, false) {
        planned.updates.push(update(&version, &release));
    }
    if !compatible(&from, newest) && policy.major {
        let majors: Vec<&(Version, &Release)> = newer
            .iter()
            .filter(|(version, _)| !compatible(&from, version))
            .collect();
        if let Some((version, release)) = choose(majors, true) {
            planned.updates.push(update(&version, &release));
        }
    }
    planned
}

/// Whether `to` is semver-compatible with `from`: what a caret requirement on `from` allows.
pub fn compatible(from: &Version, to: &Version) -> bool {
    match (from.major, from.minor) {
        (0, 0) => to.major == 0 && to.minor == 0 && to.patch == from.patch,
        (0, minor) => to.major == 0 && to.minor == minor,
        (major, _) => to.major == major,
    }
}

/// How far `from` → `to` goes: Major when incompatible, Minor when the minor moves, else Patch.
pub fn kind(from: &Version, to: &Version) -> UpdateKind {
    if !compatible(from, to) {
        UpdateKind::Major
    } else if from.major == to.major && from.minor == to.minor {
        UpdateKind::Patch
    } else {
        UpdateKind::Minor
    }
}

/// The lowest version `requirement` allows, as far as its lower bounds say (`0.0.0` without one).
pub fn floor(requirement: &VersionReq) -> Version {
    requirement
        .comparators
        .iter()
        .filter_map(lower_bound)
        .max()
        .unwrap_or(Version::new(0, 0, 0))
}

fn lower_bound(c: &Comparator) -> Option<Version> {
    let (minor, patch) = (c.minor.unwrap_or(0), c.patch.unwrap_or(0));
    match c.op {
        Op::Exact | Op::Caret | Op::Tilde | Op::Wildcard | Op::GreaterEq => {
            let mut version = Version::new(c.major, minor, patch);
            version.pre = c.pre.clone();
            Some(version)
        }
        Op::Greater => Some(match (c.minor, c.patch) {
            (Some(minor), Some(patch)) => Version::new(c.major, minor, patch + 1),
            (Some(minor), None) => Version::new(c.major, minor + 1, 0),
            (None, _) => Version::new(c.major + 1, 0, 0),
        }),
        _ => None,
    }
}

/// How a requirement is written, to write its successor the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Style {
    /// One comparator: its operator as written (`""` for a bare version) and how many of
    /// major.minor.patch it names.
    Single { operator: &'static str, parts: u8 },
    /// `1.*`, `1.2.x`: the parts before the wildcard and the wildcard's character.
    Wildcard { parts: u8, mark: char },
    /// Lower bounds (kept as written) and one upper bound `<` or `<=` naming `parts` of
    /// major.minor.patch, moved past the new version.
    Bounded {
        lower: Vec<String>,
        upper_inclusive: bool,
        parts: u8,
    },
    /// Anything else: replaced by a caret requirement on the full version.
    Range,
}

impl Style {
    fn of(text: &str, requirement: &VersionReq) -> Style {
        if let Some(bounded) = Style::bounded(requirement) {
            return bounded;
        }
        let [c] = requirement.comparators.as_slice() else {
            return Style::Range;
        };
        let parts = 1 + u8::from(c.minor.is_some()) + u8::from(c.patch.is_some());
        match c.op {
            Op::Exact => Style::Single { operator: "=", parts },
            Op::Tilde => Style::Single { operator: "~", parts },
            Op::Caret if text.starts_with('^') => Style::Single { operator: "^", parts },
            Op::Caret => Style::Single { operator: "", parts },
            Op::Wildcard => match text.chars().next_back() {
                Some(mark @ ('*' | 'x' | 'X')) => Style::Wildcard { parts, mark },
                _ => Style::Range,
            },
            _ => Style::Range,
        }
    }

    /// Lower bounds and exactly one upper bound (`<`, `<=`), none of them a prerelease.
    fn bounded(requirement: &VersionReq) -> Option<Style> {
        let (upper, lower): (Vec<&Comparator>, Vec<&Comparator>) = requirement
            .comparators
            .iter()
            .partition(|c| matches!(c.op, Op::Less | Op::LessEq));
        let [upper] = upper.as_slice() else {
            return None;
        };
        let plain = |c: &Comparator| c.pre.is_empty();
        if !plain(upper)
            || !lower
                .iter()
                .all(|c| plain(c) && matches!(c.op, Op::GreaterEq | Op::Greater))
        {
            return None;
        }
        Some(Style::Bounded {
            lower: lower.iter().map(|c| c.to_string()).collect(),
            upper_inclusive: upper.op == Op::LessEq,
            parts: 1 + u8::from(upper.minor.is_some()) + u8::from(upper.patch.is_some()),
        })
    }

    fn render(&self, version: &Version) -> String {
        let (major, minor, patch) = (version.major, version.minor, version.patch);
        if let Style::Bounded {
            lower,
            upper_inclusive,
            parts,
        } = self
            && version.pre.is_empty()
        {
            // Just past the new version at the bound's precision (`<2.9` for 2.8.3), or the new
            // version itself for an inclusive bound written in full.
            let upper = match (upper_inclusive, parts) {
                (false, 1) => format!("<{}", major + 1),
                (false, 2) => format!("<{major}.{}", minor + 1),
                (false, _) => format!("<{major}.{minor}.{}", patch + 1),
                (true, 1) => format!("<={major}"),
                (true, 2) => format!("<={major}.{minor}"),
                (true, _) => format!("<={major}.{minor}.{patch}"),
            };
            return lower.iter().cloned().chain([upper]).collect::<Vec<_>>().join(", ");
        }
        if !version.pre.is_empty() {
            return match self {
                Style::Single { operator, .. } => format!("{operator}{}", full(version)),
                _ => format!("^{}", full(version)),
            };
        }
        match self {
            Style::Single { operator, parts: 1 } => format!("{operator}{major}"),
            Style::Single { operator, parts: 2 } => format!("{operator}{major}.{minor}"),
            Style::Single { operator, .. } => format!("{operator}{major}.{minor}.{patch}"),
            Style::Wildcard { parts: 1, mark } => format!("{major}.{mark}"),
            Style::Wildcard { mark, .. } => format!("{major}.{minor}.{mark}"),
            Style::Bounded { .. } | Style::Range => format!("^{}", full(version)),
        }
    }
}

/// `major.minor.patch[-pre]`, without build metadata (requirements cannot name it).
fn full(version: &Version) -> String {
    let mut text = format!("{}.{}.{}", version.major, version.minor, version.patch);
    if !version.pre.is_empty() {
        text.push('-');
        text.push_str(version.pre.as_str());
    }
    text
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failing test should panic")]
mod tests {
    use super::*;
    use crate::config::deps::Ecosystem;

    fn dep(requirement: &str) -> Dependency {
        Dependency {
            ecosystem: Ecosystem::Cargo,
            name: "calc".into(),
            manifest: "Cargo.toml".into(),
            section: "dependencies".into(),
            requirement: requirement.into(),
            pinned: requirement.trim_start().starts_with('='),
            marker: None,
        }
    }

    fn releases(versions: &[&str]) -> Vec<Release> {
        versions
            .iter()
            .map(|v| match v.strip_suffix(" (yanked)") {
                Some(v) => Release {
                    version: v.into(),
                    yanked: true,
                    notes_url: None,
                    rust_version: None,
                    requires_python: Vec::new(),
                    published: None,
                },
                None => Release {
                    version: (*v).into(),
                    yanked: false,
                    notes_url: Some(format!("https://example.test/calc/{v}")),
                    rust_version: None,
                    requires_python: Vec::new(),
                    published: None,
                },
            })
            .collect()
    }

    const MAJOR: Policy = Policy {
        major: true,
        ignore: Vec::new(),
        update_pinned: false,
        rules: Vec::new(),
        min_release_age: None,
        ignored_by_command: Vec::new(),
    };

    /// An update as `kind from→to requirement`.
    fn line(u: &Update) -> String {
        format!(
            "{} {}→{} {}",
            u.kind.as_str(),
            u.from,
            u.to,
            u.new_requirement.as_deref().unwrap_or("-")
        )
    }

    /// The plan as `kind from→to requirement` lines.
    fn brief(requirement: &str, locked: Option<&str>, versions: &[&str], policy: &Policy) -> Vec<String> {
        plan(&dep(requirement), locked, &releases(versions), policy)
            .iter()
            .map(line)
            .collect()
    }

    #[test]
    fn a_newest_release_inside_the_range_is_left_to_the_lockfile() {
        let versions = ["1.0.0", "1.0.1", "1.1.0"];
        assert!(brief("1.0", Some("1.0.0"), &versions, &MAJOR).is_empty());
        assert!(brief("~0.3.1", Some("0.3.1"), &["0.3.1", "0.3.2"], &MAJOR).is_empty());
        assert!(brief("*", Some("1.0.0"), &["7.0.0"], &MAJOR).is_empty());
        assert!(brief(">=1.2", None, &["9.0.0"], &MAJOR).is_empty());
    }

    #[test]
    fn a_major_is_proposed_only_when_the_policy_asks_and_alone() {
        let versions = ["1.0.0", "1.0.1", "1.1.0", "2.0.0"];
        assert!(brief("1.0", Some("1.0.0"), &versions, &Policy::default()).is_empty());
        assert_eq!(
            brief("1.0", Some("1.0.0"), &versions, &MAJOR),
            ["major 1.0.0→2.0.0 2.0"]
        );
        assert_eq!(
            brief("~0.3.1", Some("0.3.1"), &["0.3.2", "0.4.0"], &MAJOR),
            ["major 0.3.1→0.4.0 ~0.4.0"]
        );
        assert_eq!(
            brief("^1.2.3", Some("1.2.9"), &["2.1.0"], &MAJOR),
            ["major 1.2.9→2.1.0 ^2.1.0"]
        );
        assert_eq!(brief("1.2.3", None, &["2.0.0"], &MAJOR), ["major 1.2.3→2.0.0 2.0.0"]);
        assert_eq!(brief("1", None, &["3.1.4"], &MAJOR), ["major 1.0.0→3.1.4 3"]);
        assert_eq!(brief("1.*", None, &["2.5.0"], &MAJOR), ["major 1.0.0→2.5.0 2.*"]);
        assert_eq!(brief("1.2.x", None, &["2.5.0"], &MAJOR), ["major 1.2.0→2.5.0 2.5.x"]);
    }

    #[test]
    fn an_excluded_compatible_release_is_a_minor_or_patch_in_the_written_style() {
        let update = plan(
            &dep("~1.2"),
            Some("1.2.3"),
            &releases(&["1.2.5", "1.4.1", "1.5.0 (yanked)"]),
            &MAJOR,
        );
        assert_eq!(
            update,
            [Update {
                ecosystem: Ecosystem::Cargo,
                name: "calc".into(),
                manifest: Some("Cargo.toml".into()),
                section: Some("dependencies".into()),
                from: "1.2.3".into(),
                to: "1.4.1".into(),
                kind: UpdateKind::Minor,
                new_requirement: Some("~1.4".into()),
                notes_url: Some("https://example.test/calc/1.4.1".into()),
                marker: None,
            }]
        );
        assert_eq!(
            brief("~1.2.3", None, &["1.2.9", "1.3.0"], &MAJOR),
            ["minor 1.2.3→1.3.0 ~1.3.0"]
        );
        // A bounded range keeps its bound, moved past the new version at its precision.
        assert_eq!(
            brief(">=1, <1.5", Some("1.4.0"), &["1.6.2"], &MAJOR),
            ["minor 1.4.0→1.6.2 >=1, <1.7"]
        );
        assert_eq!(
            brief(">=2.4, <2.6", Some("2.5.0"), &["2.8.3"], &MAJOR),
            ["minor 2.5.0→2.8.3 >=2.4, <2.9"]
        );
        assert_eq!(
            brief(">=1, <=1.5.0", Some("1.4.0"), &["1.6.2"], &MAJOR),
            ["minor 1.4.0→1.6.2 >=1, <=1.6.2"]
        );
        assert_eq!(brief("<2", Some("1.9.0"), &["2.0.1"], &MAJOR), ["major 1.9.0→2.0.1 <3"]);
        // Two upper bounds, a prerelease: no shape to keep.
        assert_eq!(
            brief(">=1, <1.5, <=1.4", Some("1.3.0"), &["1.6.2"], &MAJOR),
            ["minor 1.3.0→1.6.2 ^1.6.2"]
        );
        assert_eq!(brief("~0.3.1", Some("0.3.1"), &["0.3.4"], &MAJOR), Vec::<String>::new());
    }

    #[test]
    fn compatibility_narrows_below_one() {
        assert_eq!(
            brief("=0.3.1", Some("0.3.1"), &["0.3.4"], &Policy::default()),
            Vec::<String>::new()
        );
        let pinned = Policy {
            update_pinned: true,
            ..Policy::default()
        };
        assert_eq!(
            brief("=0.3.1", Some("0.3.1"), &["0.3.4", "0.4.0"], &pinned),
            ["patch 0.3.1→0.3.4 =0.3.4"]
        );
        assert_eq!(brief("0.0.3", None, &["0.0.4"], &MAJOR), ["major 0.0.3→0.0.4 0.0.4"]);
        assert_eq!(
            brief("0.3", Some("0.3.1"), &["0.3.4", "0.4.0"], &MAJOR),
            ["major 0.3.1→0.4.0 0.4"]
        );
    }

    #[test]
    fn pinned_requirements_stay_unless_asked_and_then_compatible_comes_first() {
        let versions = ["1.2.3", "1.4.0", "2.0.0"];
        assert!(brief("=1.2.3", Some("1.2.3"), &versions, &MAJOR).is_empty());
        let both = Policy {
            major: true,
            update_pinned: true,
            ..Policy::default()
        };
        assert_eq!(
            brief("=1.2.3", Some("1.2.3"), &versions, &both),
            ["minor 1.2.3→1.4.0 =1.4.0", "major 1.2.3→2.0.0 =2.0.0"]
        );
    }

    #[test]
    fn yanked_releases_prereleases_and_ignored_names_are_never_proposed() {
        let everything = Policy {
            major: true,
            update_pinned: true,
            ..Policy::default()
        };
        assert!(
            brief(
                "=1.0.0",
                Some("1.0.0"),
                &["1.0.1 (yanked)", "2.0.0 (yanked)"],
                &everything
            )
            .is_empty()
        );
        assert!(brief("1.0", Some("1.0.0"), &["2.0.0 (yanked)", "3.0.0-rc.1"], &MAJOR).is_empty());
        let pinned = Policy {
            update_pinned: true,
            ..Policy::default()
        };
        assert_eq!(
            brief("=1.0.0-beta.1", None, &["1.0.0-beta.3", "0.9.0"], &pinned),
            ["patch 1.0.0-beta.1→1.0.0-beta.3 =1.0.0-beta.3"]
        );
        let ignoring = Policy {
            major: true,
            ignore: vec!["calc*".into()],
            update_pinned: false,
            ..Policy::default()
        };
        assert!(brief("1.0", None, &["2.0.0"], &ignoring).is_empty());
    }

    #[test]
    fn nothing_newer_than_the_locked_version_or_an_unreadable_requirement_plans_nothing() {
        assert!(brief("~1.2", Some("1.9.0"), &["1.4.0"], &MAJOR).is_empty());
        assert!(brief("one point two", None, &["2.0.0"], &MAJOR).is_empty());
        // An unreadable locked version falls back on the requirement's floor.
        assert_eq!(
            brief("~1.2", Some("garbage"), &["1.3.0"], &MAJOR),
            ["minor 1.2.0→1.3.0 ~1.3"]
        );
    }

    /// Releases as `version@rust_version` (`1.2.0@1.80`; a bare version declares none).
    fn with_rust(versions: &[&str]) -> Vec<Release> {
        versions
            .iter()
            .map(|v| {
                let (version, rust) = match v.split_once('@') {
                    Some((version, rust)) => (version, Some(rust.to_owned())),
                    None => (*v, None),
                };
                Release {
                    version: version.into(),
                    yanked: false,
                    notes_url: None,
                    rust_version: rust,
                    requires_python: Vec::new(),
                    published: None,
                }
            })
            .collect()
    }

    /// The plan for a package declaring `rust`, as update lines then held-back notes.
    fn brief_rust(requirement: &str, locked: &str, versions: &[&str], rust: Option<&str>) -> Vec<String> {
        let planned = plan_for_rust(&dep(requirement), Some(locked), &with_rust(versions), &MAJOR, rust);
        let updates = planned.updates.iter().map(line);
        let held = planned
            .held_back
            .iter()
            .map(|h| format!("held{} {h}", if h.major { " major" } else { "" }));
        updates.chain(held).collect()
    }

    #[test]
    fn a_release_needing_a_newer_rust_is_held_back_for_the_newest_that_fits() {
        let versions = [
            "1.0.0@1.56",
            "1.4.0@1.70",
            "1.5.0@1.70.0",
            "1.6.0@1.80",
            "2.0.0@1.70",
            "3.0.0@1.85",
        ];
        assert_eq!(
            brief_rust("~1.0", "1.0.0", &versions, Some("1.70")),
            [
                "minor 1.0.0→1.5.0 ~1.5",
                "major 1.0.0→2.0.0 ~2.0",
                "held `calc` 1.6.0 needs Rust 1.80; this package declares rust-version 1.70 (1.5.0 is proposed instead)",
                "held major `calc` 3.0.0 needs Rust 1.85; this package declares rust-version 1.70 (2.0.0 is proposed instead)",
            ]
        );
        // `1.80` = `1.80.0`: a release needing exactly the declared Rust fits.
        assert_eq!(
            brief_rust("~1.0", "1.0.0", &versions[..4], Some("1.80.0")),
            ["minor 1.0.0→1.6.0 ~1.6"]
        );
        // Without a declared rust-version (or one Cargo would not read), nothing is limited.
        assert_eq!(
            brief_rust("~1.0", "1.0.0", &versions[..4], None),
            ["minor 1.0.0→1.6.0 ~1.6"]
        );
        assert_eq!(
            brief_rust("~1.0", "1.0.0", &versions[..4], Some("stable")),
            ["minor 1.0.0→1.6.0 ~1.6"]
        );
        // A release without a rust_version fits; nothing that fits: held back, nothing proposed.
        assert_eq!(
            brief_rust("1.0", "1.0.0", &["1.1.0", "2.0.0@1.90"], Some("1.70")),
            ["held major `calc` 2.0.0 needs Rust 1.90; this package declares rust-version 1.70"]
        );
        // What fits is already in the range: left to the lockfile, the newer one still said.
        assert_eq!(
            brief_rust("~1.4", "1.4.0", &["1.4.2@1.70", "1.5.0@1.80"], Some("1.70")),
            ["held `calc` 1.5.0 needs Rust 1.80; this package declares rust-version 1.70"]
        );
    }

    #[test]
    fn rust_versions_read_as_cargo_reads_them() {
        assert_eq!(rust_version("1.70"), Some(Version::new(1, 70, 0)));
        assert_eq!(rust_version(" 1.70.1 "), Some(Version::new(1, 70, 1)));
        assert_eq!(rust_version("1"), Some(Version::new(1, 0, 0)));
        assert!(rust_version("1.70") == rust_version("1.70.0"));
        assert_eq!(rust_version("1.70.0-nightly"), None);
        assert_eq!(rust_version("1..0"), None);
        assert_eq!(rust_version(""), None);
    }

    #[test]
    fn the_floor_is_the_highest_lower_bound() {
        let floor_of = |text: &str| floor(&VersionReq::parse(text).unwrap()).to_string();
        assert_eq!(floor_of(">=1.2, <3"), "1.2.0");
        assert_eq!(floor_of(">1.2"), "1.3.0");
        assert_eq!(floor_of(">1.2.3"), "1.2.4");
        assert_eq!(floor_of("<3"), "0.0.0");
        assert_eq!(floor_of("=1.0.0-beta.1"), "1.0.0-beta.1");
    }
}
