//! Which Pythons a requirement must install on: the project's declared minimum (`requires-python`,
//! Poetry's `python`, `python_requires` in `setup.cfg` or a literal one in `setup.py`, a
//! `.python-version`), narrowed by the requirement's environment marker (`python_version`,
//! `python_full_version`), and whether a release's files (PyPI's per-file `requires_python`)
//! install on them.

use std::path::Path;

use super::pep440::Pep440;
use super::{ClauseOp, Spec, Syntax};
use crate::beneath::Beneath;
use crate::chores::Release;

/// The most of a project file read for its Python declaration.
const MAX_FILE: u64 = 1 << 20;

/// The Pythons a requirement is installed on: from `floor` (inclusive) up to `ceiling`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pythons {
    floor: Option<Pep440>,
    /// The highest Python, exclusive unless the flag says inclusive.
    ceiling: Option<(Pep440, bool)>,
    /// What declared them, for the pull request: `>=3.8`, `>=3.9 (its marker)`.
    pub declared: String,
}

impl Pythons {
    /// Whether `release` has a file that installs on the lowest of these Pythons (on some Python
    /// below the ceiling, when there is no floor). A release that declares nothing, or a
    /// `requires_python` that is not a specifier (pip ignores those), installs anywhere.
    pub fn installs(&self, release: &Release) -> bool {
        if release.requires_python.is_empty() {
            return true;
        }
        release.requires_python.iter().any(|text| {
            let Ok(spec) = Spec::parse(text.trim().trim_end_matches(',').trim(), Syntax::Pep440) else {
                return true;
            };
            match (&self.floor, &self.ceiling) {
                (Some(floor), _) => spec.satisfies(floor),
                (None, Some((ceiling, inclusive))) => {
                    let lowest = spec.floor();
                    if *inclusive {
                        lowest <= *ceiling
                    } else {
                        lowest < *ceiling
                    }
                }
                (None, None) => true,
            }
        })
    }

    /// Whether these are any Pythons at all (a marker can exclude all the project's).
    fn is_empty(&self) -> bool {
        match (&self.floor, &self.ceiling) {
            (Some(floor), Some((ceiling, inclusive))) => {
                if *inclusive {
                    floor > ceiling
                } else {
                    floor >= ceiling
                }
            }
            _ => false,
        }
    }

    fn limits(&self) -> bool {
        self.floor.is_some() || self.ceiling.is_some()
    }

    fn from_spec(spec: &Spec, declared: String) -> Pythons {
        let floor = spec
            .clauses
            .iter()
            .any(|c| !matches!(c.op, ClauseOp::NotEqual | ClauseOp::Le | ClauseOp::Lt))
            .then(|| spec.floor());
        let ceiling = spec
            .clauses
            .iter()
            .filter_map(|c| match c.op {
                ClauseOp::Lt => Some((c.version.clone(), false)),
                ClauseOp::Le => Some((c.version.clone(), true)),
                _ => None,
            })
            .min_by(|a, b| a.0.cmp(&b.0));
        Pythons {
            floor,
            ceiling,
            declared,
        }
    }
}

/// The Pythons the requirement `marker` qualifies is installed on in a project supporting
/// `project`: the two ranges' intersection. A marker that excludes every Python the project
/// supports keeps its own range (a line for an old Python the project still lists); one whose
/// Python clauses cannot be read (`or`, `in`) narrows nothing. `None`: no limit known.
pub fn for_requirement(project: Option<&Pythons>, marker: Option<&str>) -> Option<Pythons> {
    let marked = marker.and_then(marker_pythons);
    match (project, marked) {
        (None, None) => None,
        (Some(project), None) => Some(project.clone()),
        (None, Some(marked)) => Some(marked),
        (Some(project), Some(marked)) => {
            let floor = match (&project.floor, &marked.floor) {
                (Some(a), Some(b)) => Some(a.max(b).clone()),
                (a, b) => a.clone().or_else(|| b.clone()),
            };
            let ceiling = match (&project.ceiling, &marked.ceiling) {
                (Some(a), Some(b)) => Some(if a.0 <= b.0 { a.clone() } else { b.clone() }),
                (a, b) => a.clone().or_else(|| b.clone()),
            };
            let both = Pythons {
                floor,
                ceiling,
                declared: format!("{}, under {}", project.declared, marked.declared),
            };
            Some(if both.is_empty() { marked } else { both })
        }
    }
}

/// The Pythons a marker allows, from its `python_version` and `python_full_version` clauses
/// joined by `and`; `None` when it has none, or an `or`, parentheses or an operator that is not a
/// comparison.
fn marker_pythons(marker: &str) -> Option<Pythons> {
    let mut clauses = Vec::new();
    for atom in split_and(marker)? {
        if let Some(clause) = python_clause(atom)? {
            clauses.extend(clause);
        }
    }
    if clauses.is_empty() {
        return None;
    }
    let spec = Spec::parse(&clauses.join(","), Syntax::Pep440).ok()?;
    let pythons = Pythons::from_spec(&spec, marker.trim().to_owned());
    pythons.limits().then_some(pythons)
}

/// The marker's `and`-joined atoms; `None` for an `or` or parentheses (outside quotes).
fn split_and(marker: &str) -> Option<Vec<&str>> {
    let mut atoms = Vec::new();
    let mut quote: Option<char> = None;
    let mut start = 0;
    let bytes = marker.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '(' || c == ')' => return None,
            None => {
                let word_at = |word: &str| {
                    marker[i..].starts_with(word)
                        && (i == 0 || bytes[i - 1].is_ascii_whitespace())
                        && marker[i + word.len()..].starts_with(|c: char| c.is_ascii_whitespace())
                };
                if word_at("or") {
                    return None;
                }
                if word_at("and") {
                    atoms.push(&marker[start..i]);
                    i += 3;
                    start = i;
                    continue;
                }
            }
        }
        i += 1;
    }
    atoms.push(&marker[start..]);
    Some(atoms)
}

/// A marker atom on the Python version as PEP 440 clauses on the full version: `Some(None)` for
/// an atom about something else (`sys_platform == "win32"`), `None` for one that cannot be read.
/// `python_version` is `X.Y`: `python_version > "3.8"` is `>=3.9`, `<= "3.8"` is `<3.9`, `==
/// "3.8"` is `==3.8.*`.
fn python_clause(atom: &str) -> Option<Option<Vec<String>>> {
    let atom = atom.trim();
    const OPS: [&str; 8] = ["===", "==", "!=", "<=", ">=", "~=", "<", ">"];
    let (at, op) = OPS
        .iter()
        .filter_map(|op| atom.find(op).map(|at| (at, *op)))
        .min_by_key(|(at, op)| (*at, usize::MAX - op.len()))?;
    let left = atom[..at].trim();
    let right = atom[at + op.len()..].trim();
    let unquote = |text: &str| -> Option<String> {
        let inner = text
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .or_else(|| text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')))?;
        Some(inner.trim().to_owned())
    };
    // `"3.9" <= python_version` reads as `python_version >= "3.9"`.
    let (variable, value, op) = match unquote(right) {
        Some(value) => (left, value, op),
        None => {
            let flipped = match op {
                "<" => ">",
                ">" => "<",
                "<=" => ">=",
                ">=" => "<=",
                other => other,
            };
            (right, unquote(left)?, flipped)
        }
    };
    match variable {
        "python_full_version" => Some(Some(vec![format!("{op}{value}")])),
        "python_version" => {
            let version = Pep440::parse(&value).ok()?;
            let next_minor = || format!("{}.{}", version.part(0), version.part(1) + 1);
            let short = format!("{}.{}", version.part(0), version.part(1));
            Some(Some(vec![match op {
                ">" => format!(">={}", next_minor()),
                "<=" => format!("<{}", next_minor()),
                "==" => format!("=={short}.*"),
                "!=" => format!("!={short}.*"),
                "<" | ">=" => format!("{op}{short}"),
                _ => return None,
            }]))
        }
        variable if variable.starts_with(|c: char| c.is_ascii_alphabetic()) => Some(None),
        _ => None,
    }
}

/// The Pythons the project of `manifest` (a path relative to `root`) declares it supports: the
/// declarations in the manifest's directory or, failing any, the nearest one above it, up to the
/// root; of several there, the lowest floor. Files are read without following symlinks.
pub fn project(root: &Path, manifest: &str) -> Option<Pythons> {
    let beneath = Beneath::open(root).ok()?;
    let mut dir = manifest.rsplit_once('/').map_or("", |(dir, _)| dir);
    loop {
        let found: Vec<Pythons> = declarations(&beneath, dir);
        if let Some(lowest) = found.into_iter().min_by(|a, b| a.floor.cmp(&b.floor)) {
            return Some(lowest);
        }
        if dir.is_empty() {
            return None;
        }
        dir = dir.rsplit_once('/').map_or("", |(parent, _)| parent);
    }
}

fn declarations(beneath: &Beneath, dir: &str) -> Vec<Pythons> {
    let read = |name: &str| -> Option<String> {
        let relative = if dir.is_empty() {
            name.to_owned()
        } else {
            format!("{dir}/{name}")
        };
        let bytes = beneath.read_regular(Path::new(&relative), MAX_FILE).ok()?;
        String::from_utf8(bytes).ok()
    };
    let mut found = Vec::new();
    let mut declared = |text: &str, syntax: Syntax, source: &str| {
        if let Some(spec) = poetry_alternatives(text, syntax) {
            let pythons = Pythons::from_spec(&spec, format!("{} ({source})", text.trim()));
            if pythons.floor.is_some() {
                found.push(pythons);
            }
        }
    };
    if let Some(text) = read("pyproject.toml")
        && let Ok(doc) = toml_edit::Document::parse(text.as_str())
    {
        let doc = doc.as_table();
        if let Some(spec) = doc
            .get("project")
            .and_then(|p| p.get("requires-python"))
            .and_then(toml_edit::Item::as_str)
        {
            declared(spec, Syntax::Pep440, "requires-python");
        }
        if let Some(spec) = doc
            .get("tool")
            .and_then(|t| t.get("poetry"))
            .and_then(|p| p.get("dependencies"))
            .and_then(|d| d.get("python"))
            .and_then(toml_edit::Item::as_str)
        {
            declared(spec, Syntax::Poetry, "Poetry's python");
        }
    }
    if let Some(text) = read("setup.cfg")
        && let Some(spec) = setup_cfg_python(&text)
    {
        declared(&spec, Syntax::Pep440, "setup.cfg python_requires");
    }
    if let Some(text) = read("setup.py")
        && let Some(spec) = setup_py_python(&text)
    {
        declared(&spec, Syntax::Pep440, "setup.py python_requires");
    }
    if let Some(text) = read(".python-version")
        && let Some(version) = python_version_file(&text)
    {
        declared(&format!(">={version}"), Syntax::Pep440, ".python-version");
    }
    found
}

/// A Poetry constraint with `||` alternatives reads as its lowest alternative (the one that sets
/// the floor); other specifiers as they are.
fn poetry_alternatives(text: &str, syntax: Syntax) -> Option<Spec> {
    text.split("||")
        .filter_map(|alternative| Spec::parse(alternative.trim(), syntax).ok())
        .min_by(|a, b| a.floor().cmp(&b.floor()))
}

/// `python_requires` in `setup.cfg`'s `[options]` section.
fn setup_cfg_python(text: &str) -> Option<String> {
    let mut in_options = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_options = line == "[options]";
            continue;
        }
        if !in_options {
            continue;
        }
        if let Some((key, value)) = line.split_once(['=', ':'])
            && key.trim() == "python_requires"
        {
            let value = value.trim();
            return (!value.is_empty()).then(|| value.to_owned());
        }
    }
    None
}

/// `python_requires="…"` in a `setup.py`, when it is a string literal (a computed one is not read).
fn setup_py_python(text: &str) -> Option<String> {
    let at = text.find("python_requires")?;
    let rest = text[at + "python_requires".len()..].trim_start();
    let rest = rest.strip_prefix('=')?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let inner = &rest[1..];
    let end = inner.find(quote)?;
    let value = inner[..end].trim();
    (!value.is_empty() && !value.contains(['\n', '{', '%'])).then(|| value.to_owned())
}

/// The CPython version a `.python-version` names first (`3.8.10`, `3.11`); other interpreters
/// (`pypy3.9-7.3`) and names of environments say nothing.
fn python_version_file(text: &str) -> Option<String> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))?;
    let parts: Vec<&str> = line.split('.').collect();
    let numeric = (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    numeric.then(|| line.to_owned())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failing test should panic")]
mod tests {
    use super::*;

    fn release(specs: &[&str]) -> Release {
        Release {
            version: "1.0".into(),
            yanked: false,
            notes_url: None,
            rust_version: None,
            requires_python: specs.iter().map(|s| (*s).to_owned()).collect(),
            published: None,
        }
    }

    fn pythons(spec: &str) -> Pythons {
        Pythons::from_spec(&Spec::parse(spec, Syntax::Pep440).unwrap(), spec.to_owned())
    }

    #[test]
    fn a_release_installs_when_a_file_admits_the_lowest_python() {
        let project = pythons(">=3.8");
        assert!(project.installs(&release(&[])));
        assert!(project.installs(&release(&[">=3.7"])));
        assert!(project.installs(&release(&[">=3.8"])));
        assert!(!project.installs(&release(&[">=3.9"])));
        // Strict: 3.8 is 3.8.0, which flake8's `>=3.8.1` refuses.
        assert!(!project.installs(&release(&[">=3.8.1"])));
        // Of several files, one that installs is enough; a spec pip would ignore admits.
        assert!(project.installs(&release(&[">=3.10", ">=3.6"])));
        assert!(project.installs(&release(&["3.8 and up"])));
        assert!(project.installs(&release(&[">=3.6,"])));
        assert!(project.installs(&release(&[">=2.7, !=3.0.*, !=3.1.*"])));
        assert!(!project.installs(&release(&[">=2.7, !=3.8.*"])));
    }

    #[test]
    fn markers_narrow_the_pythons() {
        let marked = |marker: &str| marker_pythons(marker);
        let floor = |p: Option<Pythons>| p.and_then(|p| p.floor).map(|f| f.to_string());
        assert_eq!(floor(marked(r#"python_version >= "3.9""#)), Some("3.9".into()));
        assert_eq!(floor(marked(r#"python_version > "3.8""#)), Some("3.9".into()));
        assert_eq!(floor(marked(r#"python_full_version >= '3.8.1'"#)), Some("3.8.1".into()));
        assert_eq!(floor(marked(r#"'3.10' <= python_version"#)), Some("3.10".into()));
        assert_eq!(
            floor(marked(r#"sys_platform == "linux" and python_version >= "3.11""#)),
            Some("3.11".into())
        );
        let below = marked(r#"python_version<"3.9""#).unwrap();
        assert_eq!(
            (below.floor.clone(), below.ceiling),
            (None, Some((Pep440::parse("3.9").unwrap(), false)))
        );
        let upto = marked(r#"python_version <= "3.8""#).unwrap();
        assert_eq!(upto.ceiling, Some((Pep440::parse("3.9").unwrap(), false)));
        // What cannot be read narrows nothing.
        assert_eq!(marked(r#"python_version < "3.9" or sys_platform == "win32""#), None);
        assert_eq!(marked(r#"sys_platform == "win32""#), None);
        assert_eq!(marked(r#"(python_version < "3.9")"#), None);
        assert_eq!(marked(r#"python_version in "3.8 3.9""#), None);
    }

    #[test]
    fn each_marker_line_is_judged_on_its_own_pythons() {
        let project = pythons(">=3.8");
        let old = for_requirement(Some(&project), Some(r#"python_version<"3.9""#)).unwrap();
        let new = for_requirement(Some(&project), Some(r#"python_version>="3.9""#)).unwrap();
        // numpy 1.25 needs 3.9: not for the old line, fine for the new one.
        assert!(!old.installs(&release(&[">=3.9"])));
        assert!(new.installs(&release(&[">=3.9"])));
        assert!(!new.installs(&release(&[">=3.10"])));
        // A marker below everything the project supports keeps its own range.
        let older = for_requirement(Some(&project), Some(r#"python_version<"3.7""#)).unwrap();
        assert!(older.installs(&release(&[">=3.6"])));
        assert!(!older.installs(&release(&[">=3.7"])));
        // With neither, nothing is limited.
        assert_eq!(for_requirement(None, Some("sys_platform == 'win32'")), None);
    }

    #[test]
    fn the_project_declares_its_python_in_the_usual_places() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let floor = |manifest: &str| project(root, manifest).and_then(|p| p.floor).map(|f| f.to_string());
        assert_eq!(floor("requirements.txt"), None);
        std::fs::write(root.join(".python-version"), "3.11.4\n").unwrap();
        assert_eq!(floor("requirements.txt"), Some("3.11.4".into()));
        std::fs::write(
            root.join("setup.py"),
            "from setuptools import setup\nsetup(name='x', python_requires = \">=3.9\")\n",
        )
        .unwrap();
        std::fs::write(
            root.join("setup.cfg"),
            "[metadata]\nname = x\n[options]\npython_requires = >=3.8\n",
        )
        .unwrap();
        // The lowest of the declarations in one directory.
        assert_eq!(floor("requirements.txt"), Some("3.8".into()));
        std::fs::create_dir(root.join("svc")).unwrap();
        std::fs::write(
            root.join("svc/pyproject.toml"),
            "[tool.poetry.dependencies]\npython = \"^3.10 || ^4.0\"\nrequests = \"^2.31\"\n",
        )
        .unwrap();
        assert_eq!(floor("svc/pyproject.toml"), Some("3.10".into()));
        assert_eq!(floor("svc/requirements/dev.txt"), Some("3.10".into()));
        std::fs::write(
            root.join("svc/pyproject.toml"),
            "[project]\nrequires-python = \">= 3.12\"\n",
        )
        .unwrap();
        assert_eq!(floor("svc/pyproject.toml"), Some("3.12".into()));
        // Not through a symlink planted in the checkout.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(
            outside.path().join("pyproject.toml"),
            "[project]\nrequires-python = \">=3.13\"\n",
        )
        .unwrap();
        std::fs::create_dir(root.join("linked")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("pyproject.toml"),
            root.join("linked/pyproject.toml"),
        )
        .unwrap();
        assert_eq!(floor("linked/requirements.txt"), Some("3.8".into()));
    }

    #[test]
    fn only_simple_declarations_are_read() {
        assert_eq!(
            setup_py_python("setup(python_requires='>=3.7, <4')"),
            Some(">=3.7, <4".into())
        );
        assert_eq!(setup_py_python("setup(python_requires=PYTHON_REQUIRES)"), None);
        assert_eq!(setup_cfg_python("[options]\npackages = find:\n"), None);
        assert_eq!(setup_cfg_python("[metadata]\npython_requires = >=3.6\n"), None);
        assert_eq!(python_version_file("# pyenv\n3.10\n"), Some("3.10".into()));
        assert_eq!(python_version_file("pypy3.9-7.3.11\n"), None);
        assert_eq!(python_version_file("myenv\n"), None);
    }
}
