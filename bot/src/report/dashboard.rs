//! The dependency dashboard: the body of the one issue per repository where pitcrew lists its
//! dependency pull requests (open, waiting, failed) and the packages ignored with `@agent ignore`,
//! and reading back what that body records. The record is the checklist itself: each waiting
//! branch and each ignored package is a task-list line ending in a hidden marker
//! (`- [ ] … <!-- pitcrew:ignored:NAME -->`), and a box a maintainer ticked asks for that update on
//! the next run, or to propose the package again. Only the bot's own issue is read (the handler
//! checks its author), and only what parses as a package name or a chore branch counts.

use crate::config::command::PackageName;

use super::markdown;

/// The issue's title when pitcrew opens it (people may rename it: the marker identifies it).
pub const TITLE: &str = "Dependency dashboard";
/// The first line of the body: what makes an issue of the bot's its dashboard.
pub const MARKER: &str = "<!-- pitcrew:dependency-dashboard -->";
/// Where the ignored packages' section starts; everything after it is that section.
const IGNORED_SECTION: &str = "<!-- pitcrew:ignored-section -->";
const IGNORED: &str = "pitcrew:ignored:";
const PENDING: &str = "pitcrew:pending:";
/// The most failures listed: the issue's body has a size limit (65,536 characters) and the
/// ignored packages come after them.
const MAX_FAILED: usize = 50;

/// One checklist line read back: its name and whether its box is ticked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<T> {
    pub name: T,
    pub ticked: bool,
}

/// What a dashboard's body records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ledger {
    /// Packages never proposed (a ticked one: propose it again).
    pub ignored: Vec<Entry<PackageName>>,
    /// Chore branches that waited (a ticked one: make it on the next run whatever `max_open_prs`).
    pub pending: Vec<Entry<String>>,
}

impl Ledger {
    /// Reads the checklist lines of `body`; anything else in it is ignored.
    pub fn read(body: &str) -> Ledger {
        let mut ledger = Ledger::default();
        for line in body.lines() {
            let line = line.trim();
            let ticked = if line.starts_with("- [ ]") {
                false
            } else if line.starts_with("- [x]") || line.starts_with("- [X]") {
                true
            } else {
                continue;
            };
            let Some(marker) = hidden_marker(line) else {
                continue;
            };
            if let Some(name) = marker.strip_prefix(IGNORED).and_then(PackageName::parse) {
                if !ledger.ignored.iter().any(|e| e.name == name) {
                    ledger.ignored.push(Entry { name, ticked });
                }
            } else if let Some(branch) = marker.strip_prefix(PENDING).filter(|b| is_chore_branch(b)) {
                ledger.pending.push(Entry {
                    name: branch.to_owned(),
                    ticked,
                });
            }
        }
        ledger
    }

    /// The packages that stay ignored: listed, box not ticked.
    pub fn still_ignored(&self) -> Vec<PackageName> {
        self.ignored
            .iter()
            .filter(|e| !e.ticked)
            .map(|e| e.name.clone())
            .collect()
    }

    /// The waiting branches someone asked for.
    pub fn asked_for(&self) -> Vec<String> {
        self.pending
            .iter()
            .filter(|e| e.ticked)
            .map(|e| e.name.clone())
            .collect()
    }
}

/// Whether `body` is a dependency dashboard's (whose issue it is, the caller checks).
pub fn is_dashboard_body(body: &str) -> bool {
    body.trim_start().starts_with(MARKER)
}

/// Whether `after` has a box ticked that `before` did not: a package to propose again, a waiting
/// pull request to open.
pub fn newly_ticked(before: &str, after: &str) -> bool {
    let (before, after) = (Ledger::read(before), Ledger::read(after));
    let was = |name: &str| {
        before.ignored.iter().any(|e| e.ticked && e.name.as_str() == name)
            || before.pending.iter().any(|e| e.ticked && e.name == name)
    };
    after.ignored.iter().any(|e| e.ticked && !was(e.name.as_str()))
        || after.pending.iter().any(|e| e.ticked && !was(&e.name))
}

/// The text of the last `<!-- … -->` on a line, trimmed.
fn hidden_marker(line: &str) -> Option<&str> {
    let start = line.rfind("<!--")?;
    let rest = &line[start + 4..];
    let end = rest.find("-->")?;
    Some(rest[..end].trim())
}

/// A branch a dependency chore pushes: `pitcrew/deps`, `pitcrew/deps-cargo-major`, ….
fn is_chore_branch(branch: &str) -> bool {
    branch.starts_with("pitcrew/deps")
        && branch.len() <= 100
        && branch
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-'))
}

/// The ignored packages' section: one box per package, ticking it proposes it again.
fn ignored_section(ignored: &[PackageName], trigger: &str) -> String {
    let mut out = format!("{IGNORED_SECTION}\n## Ignored\n\n");
    if ignored.is_empty() {
        out.push_str(&format!(
            "None. {} on a dependency pull request adds one.\n",
            markdown::code_span(&format!("{trigger} ignore <package>"))
        ));
        return out;
    }
    out.push_str(&format!(
        "Never proposed in this repository. Tick one to propose it again from the next run (or comment {}).\n\n",
        markdown::code_span(&format!("{trigger} unignore <package>"))
    ));
    for name in ignored {
        out.push_str(&format!(
            "- [ ] {} <!-- {IGNORED}{name} -->\n",
            markdown::code_span(name.as_str())
        ));
    }
    out
}

/// `body` (a dashboard's, or `None` for a new one) with its ignored section made `ignored`: the
/// rest of the body is kept as it is.
pub fn with_ignored(body: Option<&str>, ignored: &[PackageName], trigger: &str) -> String {
    let head = match body {
        Some(body) => match body.find(IGNORED_SECTION) {
            Some(at) => body[..at].to_owned(),
            None => format!("{}\n\n", body.trim_end()),
        },
        None => format!(
            "{MARKER}\nThe packages pitcrew's dependency chore leaves alone in this repository. Set `[chores.deps] \
             dashboard = true` in `.github/pitcrew.toml` for the whole picture here.\n\n"
        ),
    };
    format!("{head}{}", ignored_section(ignored, trigger))
}

/// What a dependency run came to, for the dashboard.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunState {
    /// The chore's open pull requests now: number, title, branch.
    pub open: Vec<(u64, String, String)>,
    /// Branches that wait for `max_open_prs`, with the limit.
    pub waiting: Vec<String>,
    pub max_open_prs: Option<u32>,
    /// Lookups and groups that failed, said as the run's report says them.
    pub failed: Vec<String>,
    pub ignored: Vec<PackageName>,
}

/// The whole dashboard after a run.
pub fn render(state: &RunState, trigger: &str) -> String {
    let mut out = format!(
        "{MARKER}\npitcrew's dependency chore keeps this issue current on every run. Tick a box to ask for it on \
         the next run.\n\n## Open pull requests\n\n"
    );
    if state.open.is_empty() {
        out.push_str("None.\n");
    }
    for (number, title, branch) in &state.open {
        out.push_str(&format!(
            "- #{number} {} ({})\n",
            markdown::inline(title),
            markdown::code_span(branch)
        ));
    }
    out.push_str("\n## Pending\n\n");
    if state.waiting.is_empty() {
        out.push_str("None.\n");
    } else {
        let why = match state.max_open_prs {
            Some(max) => format!(
                "waits: {max} chore pull request{} may be open at once (`max_open_prs`)",
                if max == 1 { "" } else { "s" }
            ),
            None => "waits".to_owned(),
        };
        out.push_str("Tick one to have it opened on the next run anyway.\n\n");
        for branch in &state.waiting {
            out.push_str(&format!(
                "- [ ] {} {why} <!-- {PENDING}{branch} -->\n",
                markdown::code_span(branch)
            ));
        }
    }
    out.push_str("\n## Failed\n\n");
    if state.failed.is_empty() {
        out.push_str("None.\n");
    }
    for problem in state.failed.iter().take(MAX_FAILED) {
        out.push_str(&format!("- {}\n", markdown::inline(problem)));
    }
    if state.failed.len() > MAX_FAILED {
        out.push_str(&format!(
            "- and {} more (the run's answer and its job record have them all)\n",
            state.failed.len() - MAX_FAILED
        ));
    }
    out.push('\n');
    out.push_str(&ignored_section(&state.ignored, trigger));
    out
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn name(text: &str) -> PackageName {
        PackageName::parse(text).unwrap()
    }

    #[test]
    fn a_new_record_lists_the_ignored_packages_and_reads_back() {
        let body = with_ignored(None, &[name("tinydep"), name("@types/node")], "@agent");
        insta::assert_snapshot!(body, @r"
        <!-- pitcrew:dependency-dashboard -->
        The packages pitcrew's dependency chore leaves alone in this repository. Set `[chores.deps] dashboard = true` in `.github/pitcrew.toml` for the whole picture here.

        <!-- pitcrew:ignored-section -->
        ## Ignored

        Never proposed in this repository. Tick one to propose it again from the next run (or comment `@agent unignore <package>`).

        - [ ] `tinydep` <!-- pitcrew:ignored:tinydep -->
        - [ ] `@types/node` <!-- pitcrew:ignored:@types/node -->
        ");
        let ledger = Ledger::read(&body);
        assert_eq!(ledger.still_ignored(), [name("tinydep"), name("@types/node")]);
        // The section is replaced, the rest kept.
        let again = with_ignored(Some(&body), &[], "@agent");
        assert!(again.starts_with(&body[..body.find(IGNORED_SECTION).unwrap()]));
        assert!(Ledger::read(&again).ignored.is_empty());
        assert_eq!(again.matches("## Ignored").count(), 1);
    }

    #[test]
    fn ticked_boxes_ask_and_hostile_lines_count_for_nothing() {
        let body = "- [x] `tinydep` <!-- pitcrew:ignored:tinydep -->\n\
                    - [ ] `otherdep` <!-- pitcrew:ignored:otherdep -->\n\
                    - [ ] evil <!-- pitcrew:ignored:../../x -->\n\
                    - [ ] `x` <!-- pitcrew:pending:main -->\n\
                    - [X] `pitcrew/deps-python-major` waits <!-- pitcrew:pending:pitcrew/deps-python-major -->\n\
                    `plain` <!-- pitcrew:ignored:plain -->\n";
        let ledger = Ledger::read(body);
        assert_eq!(ledger.still_ignored(), [name("otherdep")]);
        assert_eq!(ledger.ignored.len(), 2);
        assert_eq!(ledger.asked_for(), ["pitcrew/deps-python-major"]);
        assert_eq!(ledger.pending.len(), 1);
    }

    #[test]
    fn only_a_newly_ticked_box_is_a_request() {
        let body = with_ignored(None, &[name("tinydep")], "@agent");
        let ticked = body.replace("- [ ] `tinydep`", "- [x] `tinydep`");
        assert!(is_dashboard_body(&body) && !is_dashboard_body("Dependency dashboard"));
        assert!(newly_ticked(&body, &ticked));
        assert!(!newly_ticked(&ticked, &ticked));
        assert!(!newly_ticked(&ticked, &body));
        assert!(!newly_ticked(&body, &format!("{body}\nA note.")));
    }

    #[test]
    fn the_whole_dashboard() {
        let state = RunState {
            open: vec![(
                5,
                "chore(deps): update tinydep to 1.1.0".into(),
                "pitcrew/deps-python".into(),
            )],
            waiting: vec!["pitcrew/deps-python-major".into()],
            max_open_prs: Some(1),
            failed: vec!["cargo: calcutil: the registry could not be reached".into()],
            ignored: vec![name("otherdep")],
        };
        let body = render(&state, "@agent");
        insta::assert_snapshot!(body, @r"
        <!-- pitcrew:dependency-dashboard -->
        pitcrew's dependency chore keeps this issue current on every run. Tick a box to ask for it on the next run.

        ## Open pull requests

        - #5 chore(deps): update tinydep to 1.1.0 (`pitcrew/deps-python`)

        ## Pending

        Tick one to have it opened on the next run anyway.

        - [ ] `pitcrew/deps-python-major` waits: 1 chore pull request may be open at once (`max_open_prs`) <!-- pitcrew:pending:pitcrew/deps-python-major -->

        ## Failed

        - cargo: calcutil: the registry could not be reached

        <!-- pitcrew:ignored-section -->
        ## Ignored

        Never proposed in this repository. Tick one to propose it again from the next run (or comment `@agent unignore <package>`).

        - [ ] `otherdep` <!-- pitcrew:ignored:otherdep -->
        ");
        let ledger = Ledger::read(&body);
        assert_eq!(ledger.still_ignored(), [name("otherdep")]);
        assert_eq!(ledger.pending.len(), 1);
        assert!(ledger.asked_for().is_empty());

        let many = RunState {
            failed: (0..60).map(|i| format!("lookup {i} failed")).collect(),
            ..state
        };
        let body = render(&many, "@agent");
        assert!(body.contains("- lookup 49 failed\n- and 10 more"), "{body}");
        assert!(!body.contains("lookup 50 failed"));
    }
}
