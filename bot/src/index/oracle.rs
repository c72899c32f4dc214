//! The extraction's recall against an independent indexer: Universal Ctags, run on real
//! third-party code already on the machine — crates of this workspace's lockfile in cargo's
//! registry sources, and samples of Python's and Go's standard libraries. Every definition ctags
//! tags (functions, methods, classes, structs, enums, traits, interfaces, variants, fields,
//! modules, macros, type aliases, constants, variables) must be among ours with the same name,
//! file and line, and of a kind that corresponds, unless it is one of the principled exceptions
//! listed with their reasons. Recall per language and kind is printed
//! (`cargo test -p pitcrew --lib index::oracle -- --nocapture`).
//!
//! TypeScript, JavaScript and Java are not compared: the machine holds no sizable tree of them in
//! a fixed place, and the Universal Ctags Debian ships (5.9) drops JavaScript destructuring as
//! "null tags". Their fixtures in `tests.rs` cover them.
//!
//! Skips, saying so, where ctags is not installed; `PITCREW_REQUIRE_CTAGS=1` (CI) makes that, or
//! a missing sample, a failure.

#![expect(clippy::unwrap_used, reason = "tests")]
#![expect(
    clippy::print_stderr,
    reason = "the recall report and the skip message are the test's output"
)]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::{Lang, SymbolKind, extract};

/// Crates of the workspace's lockfile and the directories of each to index (at the locked
/// version): sizable, varied, and written in different styles.
const CRATES: &[(&str, &[&str])] = &[
    ("git2", &["src"]),
    ("serde_core", &["src"]),
    ("hyper", &["src"]),
    ("tokio", &["src"]),
    ("clap_builder", &["src"]),
    ("toml_edit", &["src"]),
];

/// Packages of Python's standard library to index.
const PYTHON: &[&str] = &[
    "json",
    "http",
    "email",
    "asyncio",
    "concurrent",
    "importlib",
    "logging",
    "unittest",
    "xml",
];

/// The ctags kinds checked, per ctags language, and the kinds of ours each may be: every kind
/// ctags reports for these languages except Python's imports (`namespace`, `unknown`), which are
/// imports here, not definitions.
fn our_kinds(language: &str, kind: &str) -> Option<&'static [SymbolKind]> {
    use SymbolKind as K;
    Some(match (language, kind) {
        ("Rust", "function") => &[K::Function],
        ("Rust", "method") => &[K::Method],
        ("Rust", "struct") => &[K::Struct],
        ("Rust", "enum") => &[K::Enum],
        ("Rust", "interface") => &[K::Trait],
        ("Rust", "enumerator") => &[K::EnumMember],
        ("Rust", "field") => &[K::Field],
        ("Rust", "module") => &[K::Module],
        ("Rust", "macro") => &[K::Macro],
        ("Rust", "typedef") => &[K::TypeAlias],
        ("Rust", "variable") => &[K::Static],
        ("Python", "class") => &[K::Class],
        ("Python", "function") => &[K::Function],
        ("Python", "member") => &[K::Method],
        // Module-level names, and class attributes (ctags gives them the class as scope).
        ("Python", "variable") => &[K::Constant, K::Variable, K::Field],
        ("Go", "func") => &[K::Function, K::Method],
        ("Go", "struct") => &[K::Struct],
        ("Go", "interface") => &[K::Interface],
        ("Go", "type") | ("Go", "talias") => &[K::TypeAlias],
        ("Go", "const") => &[K::Constant],
        ("Go", "var") => &[K::Variable],
        ("Go", "member") => &[K::Field],
        ("Go", "methodSpec") => &[K::Method],
        _ => return None,
    })
}

/// What ctags reports that is not a definition we keep, by (language, kind, reason).
fn exception(tag: &Tag) -> Option<&'static str> {
    match (tag.language.as_str(), tag.kind.as_str()) {
        // `impl Foo` is a scope here (its methods' container), not a definition.
        ("Rust", "implementation") => Some("an impl block is a container"),
        // `const LOG: &'static str;` read as a variable named `str`.
        ("Rust", "variable") if after_lifetime(&tag.pattern, &tag.name) => {
            Some("ctags reads the type after a lifetime (`&'static str`) as a variable")
        }
        _ => None,
    }
}

/// A kind of ours that differs from ctags's for a principled reason.
fn kind_exception(tag: &Tag, ours: &[SymbolKind]) -> Option<&'static str> {
    match (tag.language.as_str(), tag.kind.as_str()) {
        // ctags says `method` when it knows the impl; after a `where` clause or some generics it
        // loses it and scopes the method to the module or function around the impl.
        ("Rust", "function") if ours.contains(&SymbolKind::Method) => Some(
            "ctags lost the impl around a method (after a `where` clause, some generics) and calls it a function; the tree has it in the impl",
        ),
        _ => None,
    }
}

/// Whether `name` follows a lifetime in `line` (`'a name`, `'static name`).
fn after_lifetime(line: &str, name: &str) -> bool {
    line.match_indices('\'').any(|(at, _)| {
        let rest = &line[at + 1..];
        let ident = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let after = &rest[ident..];
        ident > 0
            && after
                .strip_prefix(' ')
                .and_then(|a| a.strip_prefix(name))
                .is_some_and(|a| !a.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
    })
}

#[derive(Debug)]
struct Tag {
    name: String,
    /// The line ctags found it on, as a search pattern.
    pattern: String,
    path: String,
    line: u32,
    kind: String,
    language: String,
}

fn ctags() -> Option<String> {
    let out = Command::new("ctags").arg("--version").output().ok()?;
    let version = String::from_utf8_lossy(&out.stdout).into_owned();
    version.contains("Universal Ctags").then_some(version)
}

fn required() -> bool {
    std::env::var("PITCREW_REQUIRE_CTAGS").is_ok_and(|v| v == "1")
}

/// The registry source directory of each crate at the version the lockfile holds.
fn crate_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let lock: toml::Value = toml::from_str(&std::fs::read_to_string(root.join("Cargo.lock")).unwrap()).unwrap();
    let packages = lock["package"].as_array().unwrap();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap();
    let registries: Vec<PathBuf> = std::fs::read_dir(cargo_home.join("registry/src"))
        .map(|dir| dir.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    let mut dirs = Vec::new();
    for (name, subdirs) in CRATES {
        let version = packages
            .iter()
            .find(|p| p["name"].as_str() == Some(name))
            .and_then(|p| p["version"].as_str())
            .unwrap_or_else(|| panic!("{name} is not in Cargo.lock: pick another crate for the oracle"));
        let found = registries
            .iter()
            .map(|r| r.join(format!("{name}-{version}")))
            .find(|d| d.is_dir());
        match found {
            Some(dir) => dirs.extend(subdirs.iter().map(|s| dir.join(s))),
            None => {
                assert!(!required(), "{name}-{version} is not in cargo's registry sources");
                eprintln!("ctags oracle: {name}-{version} is not in cargo's registry sources; left out");
            }
        }
    }
    dirs
}

fn python_dirs() -> Vec<PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"])
        .output();
    match out {
        Ok(out) if out.status.success() => {
            let stdlib = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            PYTHON.iter().map(|p| stdlib.join(p)).filter(|d| d.is_dir()).collect()
        }
        _ => {
            assert!(
                !required(),
                "python3 is needed for the oracle's standard-library sample"
            );
            eprintln!("ctags oracle: no python3; the Python sample is left out");
            Vec::new()
        }
    }
}

/// Packages of Go's standard library to index.
const GO: &[&str] = &[
    "net/http",
    "encoding/json",
    "go/ast",
    "go/parser",
    "strings",
    "sort",
    "fmt",
    "bufio",
];

fn go_dirs() -> Vec<PathBuf> {
    let out = Command::new("go").args(["env", "GOROOT"]).output();
    match out {
        Ok(out) if out.status.success() => {
            let root = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("src");
            GO.iter().map(|p| root.join(p)).filter(|d| d.is_dir()).collect()
        }
        _ => {
            assert!(!required(), "go is needed for the oracle's standard-library sample");
            eprintln!("ctags oracle: no go; the Go sample is left out");
            Vec::new()
        }
    }
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            files_under(&path, out);
        } else if kind.is_file() && matches!(Lang::of(&path), Some(Lang::Rust | Lang::Python | Lang::Go)) {
            out.push(path);
        }
    }
}

fn run_ctags(files: &[PathBuf]) -> Vec<Tag> {
    let list = tempfile::NamedTempFile::new().unwrap();
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    std::fs::write(list.path(), names.join("\n")).unwrap();
    let out = Command::new("ctags")
        .args([
            "--output-format=json",
            "--fields=+nKl",
            "--languages=Rust,Python,Go",
            "-f",
            "-",
            "-L",
        ])
        .arg(list.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ctags failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut tags = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["_type"] != "tag" {
            continue;
        }
        tags.push(Tag {
            name: v["name"].as_str().unwrap().to_owned(),
            pattern: v["pattern"].as_str().unwrap_or_default().to_owned(),
            path: v["path"].as_str().unwrap().to_owned(),
            line: u32::try_from(v["line"].as_u64().unwrap()).unwrap(),
            kind: v["kind"].as_str().unwrap_or("?").to_owned(),
            language: v["language"].as_str().unwrap_or("?").to_owned(),
        });
    }
    tags
}

#[test]
fn recall_against_universal_ctags() {
    let Some(version) = ctags() else {
        assert!(
            !required(),
            "PITCREW_REQUIRE_CTAGS=1 but Universal Ctags (`ctags`) is not installed"
        );
        eprintln!("ctags oracle: SKIPPED, Universal Ctags is not installed (apt-get install universal-ctags)");
        return;
    };
    let mut dirs = crate_dirs();
    dirs.extend(python_dirs());
    dirs.extend(go_dirs());
    let mut files = Vec::new();
    for dir in &dirs {
        files_under(dir, &mut files);
    }
    files.sort();
    assert!(!files.is_empty() || !required(), "no sample files found");
    if files.is_empty() {
        eprintln!("ctags oracle: SKIPPED, no sample files found");
        return;
    }

    let started = Instant::now();
    let mut ours: HashMap<(String, u32, String), Vec<SymbolKind>> = HashMap::new();
    let mut defined = 0;
    let mut bytes = 0;
    for file in &files {
        let source = std::fs::read(file).unwrap();
        bytes += source.len();
        let lang = Lang::of(file).unwrap();
        let symbols = extract(lang, &source).unwrap();
        assert!(!symbols.truncated, "{} hit a limit", file.display());
        defined += symbols.definitions.len();
        for d in symbols.definitions {
            ours.entry((file.display().to_string(), d.start_line, d.name))
                .or_default()
                .push(d.kind);
        }
    }
    let ours_took = started.elapsed();
    let started = Instant::now();
    let tags = run_ctags(&files);
    let ctags_took = started.elapsed();

    // (language, kind) → (found, total)
    let mut recall: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    let mut missing = Vec::new();
    let mut excepted: BTreeMap<&str, usize> = BTreeMap::new();
    let mut other_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for tag in &tags {
        if let Some(reason) = exception(tag) {
            *excepted.entry(reason).or_default() += 1;
            continue;
        }
        let Some(allowed) = our_kinds(&tag.language, &tag.kind) else {
            continue;
        };
        let entry = recall.entry((tag.language.clone(), tag.kind.clone())).or_default();
        entry.1 += 1;
        match ours.get(&(tag.path.clone(), tag.line, tag.name.clone())) {
            Some(kinds) if kinds.iter().any(|k| allowed.contains(k)) => entry.0 += 1,
            Some(kinds) if let Some(reason) = kind_exception(tag, kinds) => {
                entry.0 += 1;
                *other_kind.entry(reason).or_default() += 1;
            }
            Some(kinds) => missing.push(format!(
                "{} {} {}:{} (ours: {kinds:?})",
                tag.kind, tag.name, tag.path, tag.line
            )),
            None => missing.push(format!("{} {} {}:{}", tag.kind, tag.name, tag.path, tag.line)),
        }
    }

    eprintln!(
        "ctags oracle: {} files, {} KiB, {} directories; ours {ours_took:.2?}, ctags {ctags_took:.2?}; {}",
        files.len(),
        bytes / 1024,
        dirs.len(),
        version.lines().next().unwrap_or_default()
    );
    for ((language, kind), (found, total)) in &recall {
        let percent = 100.0 * *found as f64 / (*total).max(1) as f64;
        eprintln!("  {language:<7} {kind:<12} {found:>5}/{total:<5} {percent:6.2}%");
    }
    for (reason, count) in &excepted {
        eprintln!("  not compared: {count} tags, {reason}");
    }
    for (reason, count) in &other_kind {
        eprintln!("  found, of another kind: {count} tags, {reason}");
    }
    let compared: usize = recall.values().map(|(_, total)| total).sum();
    eprintln!("  ours: {defined} definitions; ctags's {compared} compared");
    let report: Vec<&str> = missing.iter().take(60).map(String::as_str).collect();
    assert!(
        missing.is_empty(),
        "{} definitions ctags finds are missing or of another kind:\n{}",
        missing.len(),
        report.join("\n")
    );
}
