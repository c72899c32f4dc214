//! Questions the index answers: which definitions a query names (`find_symbol`: exact, qualified,
//! prefix, then fuzzy), where a symbol is used (`find_references`: narrowed to the occurrences that
//! resolve to a qualified symbol syntactically — its type or module as qualifier, `self`/`this` in
//! its type's methods, an import of its module — before falling back to the bare name), and a
//! file's shape (`outline`: its definitions as a tree by line range). Answers are data; the tools
//! and `pitcrew index` write them out.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::Serialize;

use super::store::{Def, File, Index, Ref};
use super::{RefKind, SymbolKind};

/// How a definition matched a query, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// The name as written; for a qualified query, the name in the named type or module.
    Exact,
    /// A qualified query's name, in another type or module.
    NameOnly,
    /// The name in another case.
    CaseInsensitive,
    Prefix,
    Fuzzy,
}

/// A definition that matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SymbolMatch {
    pub path: String,
    pub name: String,
    pub kind: SymbolKind,
    pub container: Option<String>,
    pub start_line: u32,
    pub end_line: u32,
    pub signature: String,
    pub doc: Option<String>,
    pub tier: Tier,
}

/// A query, split at its last `::` or `.`: `Type::method` → (`Type`, `method`).
fn split(query: &str) -> (Option<String>, &str) {
    let query = query.trim();
    let cut = query
        .rfind("::")
        .map(|at| (at, 2))
        .or_else(|| query.rfind('.').filter(|at| *at > 0).map(|at| (at, 1)));
    match cut {
        Some((at, len)) if at + len < query.len() => (Some(normalise(&query[..at])), &query[at + len..]),
        _ => (None, query),
    }
}

/// A path of scopes with `.` between them, whatever the language wrote.
fn normalise(scopes: &str) -> String {
    scopes.replace("::", ".").trim_matches('.').to_owned()
}

/// Whether the scope path `scopes` is `qualifier` or ends with it (`a.b.Type` ends with `Type` and
/// with `b.Type`).
fn ends_with_scope(scopes: &str, qualifier: &str) -> bool {
    let scopes = normalise(scopes);
    scopes == qualifier || scopes.ends_with(&format!(".{qualifier}"))
}

/// A file as a module path: `src/config/repo.rs` → `src.config.repo`, `pkg/__init__.py` → `pkg`,
/// `lib/index.ts` → `lib`.
fn module_of(path: &str) -> String {
    let stem = path.rsplit_once('.').map_or(path, |(stem, _)| stem);
    let stem = ["/mod", "/__init__", "/index", "/lib", "/main"]
        .iter()
        .find_map(|tail| stem.strip_suffix(tail))
        .unwrap_or(stem);
    stem.replace('/', ".")
}

/// The definitions `query` names, best first: within a tier, the closest names first (a prefix's
/// shortest completions, the fuzzy matches most like the query), types and functions before fields
/// and variables, then by path and line. `kind` and `path` (a file or directory prefix) narrow them.
pub fn find_symbol(index: &mut Index, query: &str, kind: Option<SymbolKind>, path: Option<&str>) -> Vec<SymbolMatch> {
    let (qualifier, name) = split(query);
    if name.is_empty() {
        return Vec::new();
    }
    let lower = name.to_lowercase();
    // Candidate names by tier: the exact name, other cases and prefixes from the sorted list, and
    // the fuzzy ones only when nothing better was found.
    let mut candidates: Vec<(u32, Tier)> = Vec::new();
    if let Some(id) = index.name_id(name) {
        candidates.push((id, Tier::Exact));
    }
    let exact = index.name_id(name);
    let names = index.defined_names();
    let start = names.partition_point(|(n, _)| n.as_ref() < lower.as_str());
    for (lowered, id) in &names[start..] {
        if !lowered.starts_with(lower.as_str()) {
            break;
        }
        if Some(*id) == exact {
            continue;
        }
        let tier = if lowered.as_ref() == lower {
            Tier::CaseInsensitive
        } else {
            Tier::Prefix
        };
        candidates.push((*id, tier));
    }
    let mut matches = collect(index, &candidates, qualifier.as_deref(), kind, path);
    if matches.is_empty() {
        // The closest names only: a near miss in a big tree is like thousands of names a little.
        let query = NearMiss::new(&lower);
        let mut near: Vec<(u64, u32)> = index
            .defined_names()
            .iter()
            .filter_map(|(lowered, id)| query.distance(lowered).map(|distance| (distance, *id)))
            .collect();
        near.sort_unstable();
        near.truncate(MAX_FUZZY_NAMES);
        let fuzzy: Vec<(u32, Tier)> = near.iter().map(|(_, id)| (*id, Tier::Fuzzy)).collect();
        matches = collect(index, &fuzzy, qualifier.as_deref(), kind, path);
    }
    // Within a tier, the closest names first: a prefix's shortest completions, the fuzzy matches
    // most like the query.
    let query = NearMiss::new(&lower);
    matches.sort_by_cached_key(|m| {
        let closeness = match m.tier {
            Tier::Prefix => m.name.len() as u64,
            Tier::Fuzzy => query.distance(&m.name.to_lowercase()).unwrap_or(u64::MAX),
            _ => 0,
        };
        (m.tier, closeness, kind_rank(m.kind), m.path.clone(), m.start_line)
    });
    matches
}

/// The fuzzy tier holds the definitions of at most this many names, the closest.
const MAX_FUZZY_NAMES: usize = 100;

/// The definitions of `candidates`, each tier adjusted for the qualifier.
fn collect(
    index: &Index,
    candidates: &[(u32, Tier)],
    qualifier: Option<&str>,
    kind: Option<SymbolKind>,
    path: Option<&str>,
) -> Vec<SymbolMatch> {
    let mut out = Vec::new();
    for (id, tier) in candidates {
        for (file, def) in index.definitions_named(*id) {
            if kind.is_some_and(|k| k != def.kind) || path.is_some_and(|p| !under(&file.path, p)) {
                continue;
            }
            let tier = match qualifier {
                None => *tier,
                Some(qualifier) => {
                    let in_scope = index
                        .optional(def.container)
                        .is_some_and(|c| ends_with_scope(c, qualifier))
                        || ends_with_scope(&module_of(&file.path), qualifier);
                    match (tier, in_scope) {
                        (Tier::Exact, true) => Tier::Exact,
                        (Tier::Exact, false) => Tier::NameOnly,
                        (other, _) => *other,
                    }
                }
            };
            out.push(symbol_match(index, file, def, tier));
        }
    }
    out
}

fn symbol_match(index: &Index, file: &File, def: &Def, tier: Tier) -> SymbolMatch {
    SymbolMatch {
        path: file.path.clone(),
        name: index.name(def.name).to_owned(),
        kind: def.kind,
        container: index.optional(def.container).map(str::to_owned),
        start_line: def.start_line,
        end_line: def.end_line,
        signature: def.signature.to_string(),
        doc: def.doc.as_deref().map(str::to_owned),
        tier,
    }
}

/// Whether `path` is `prefix` or below it.
fn under(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_start_matches("./").trim_end_matches('/');
    prefix.is_empty() || path == prefix || path.starts_with(&format!("{prefix}/"))
}

/// Types, then functions, then the rest: what people mostly look for by name.
fn kind_rank(kind: SymbolKind) -> u8 {
    match kind {
        SymbolKind::Struct
        | SymbolKind::Class
        | SymbolKind::Enum
        | SymbolKind::Trait
        | SymbolKind::Interface
        | SymbolKind::TypeAlias => 0,
        SymbolKind::Function | SymbolKind::Method | SymbolKind::Constructor | SymbolKind::Macro => 1,
        SymbolKind::Module | SymbolKind::Constant | SymbolKind::Static => 2,
        SymbolKind::EnumMember | SymbolKind::Field | SymbolKind::Variable => 3,
    }
}

/// A (lowercased) query for near misses among hundreds of thousands of names.
struct NearMiss<'q> {
    text: &'q str,
    /// How often each ASCII byte occurs in it, when it is ASCII.
    counts: Option<[u8; 128]>,
}

impl<'q> NearMiss<'q> {
    fn new(text: &'q str) -> Self {
        let counts = text.is_ascii().then(|| {
            let mut counts = [0u8; 128];
            for b in text.bytes() {
                counts[usize::from(b)] = counts[usize::from(b)].saturating_add(1);
            }
            counts
        });
        NearMiss { text, counts }
    }

    /// How far `name` is from the query when it is a near miss (lower is closer): a name close
    /// by Jaro-Winkler, or one holding the query's characters in order (for queries of three or
    /// more).
    fn distance(&self, name: &str) -> Option<u64> {
        let query = self.text;
        let contains = query.len() >= 3 && name.len() <= query.len() * 3 && subsequence(query, name);
        let may_be_similar = name.len().abs_diff(query.len()) <= 3 && self.may_be_similar(name);
        if !contains && !may_be_similar {
            return None;
        }
        let similarity = strsim::jaro_winkler(name, query);
        (contains || similarity >= SIMILAR).then_some(((1.0 - similarity) * 1e6) as u64)
    }

    /// Whether `name` can be [`SIMILAR`] at all, by the characters it shares with the query: a
    /// Jaro-Winkler similarity of 0.88 needs a Jaro similarity of 0.8 (the common-prefix bonus
    /// adds at most 0.4 of what is missing), so `m/|a| + m/|b| ≥ 1.4` for `m` matching
    /// characters, which are at most the characters the two share.
    fn may_be_similar(&self, name: &str) -> bool {
        let Some(mut left) = self.counts.filter(|_| name.is_ascii()) else {
            return true;
        };
        let mut shared = 0usize;
        for b in name.bytes() {
            let count = &mut left[usize::from(b)];
            if *count > 0 {
                *count -= 1;
                shared += 1;
            }
        }
        let (a, b) = (self.text.len().max(1) as f64, name.len().max(1) as f64);
        shared as f64 / a + shared as f64 / b >= 1.4 - 1e-9
    }
}

/// The Jaro-Winkler similarity of a near miss.
const SIMILAR: f64 = 0.88;

fn subsequence(needle: &str, haystack: &str) -> bool {
    let mut rest = haystack.chars();
    needle.chars().all(|c| rest.any(|h| h == c))
}

/// How the references of a qualified symbol were found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// The symbol was not qualified: every occurrence of the name.
    ByName,
    /// Only the occurrences that resolve to the qualified symbol syntactically.
    Narrowed,
    /// None resolved syntactically: every occurrence of the bare name.
    FellBack,
}

/// One use of a symbol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Use {
    pub line: u32,
    pub column: u32,
    pub kind: RefKind,
    pub qualifier: Option<String>,
}

/// A file's uses of a symbol, and its definitions of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileUses {
    pub path: String,
    /// Definitions of the name in this file (start lines).
    pub definitions: Vec<u32>,
    pub uses: Vec<Use>,
}

/// Where a symbol is used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct References {
    pub name: String,
    pub qualifier: Option<String>,
    pub resolution: Resolution,
    /// In path order.
    pub files: Vec<FileUses>,
    pub total: usize,
    /// When narrowed: the uses of the bare name left out, which did not resolve by their syntax
    /// (a receiver whose type only a type checker knows may still be the symbol's).
    pub unresolved: usize,
}

/// Where `symbol` (a name, or `Type::method`, `Class.method`, `module.func`) is used, by file,
/// narrowed to files under `path` when given.
pub fn find_references(index: &Index, symbol: &str, path: Option<&str>) -> References {
    let (qualifier, name) = split(symbol);
    let mut result = References {
        name: name.to_owned(),
        qualifier: qualifier.clone(),
        resolution: Resolution::ByName,
        files: Vec::new(),
        total: 0,
        unresolved: 0,
    };
    let Some(id) = index.name_id(name) else {
        return result;
    };
    let refs: Vec<(&File, &Ref)> = index
        .references_named(id)
        .into_iter()
        .filter(|(file, _)| path.is_none_or(|p| under(&file.path, p)))
        .collect();
    let chosen: Vec<(&File, &Ref)> = match &qualifier {
        None => refs,
        Some(qualifier) => {
            let narrowed: Vec<(&File, &Ref)> = refs
                .iter()
                .copied()
                .filter(|(file, r)| resolves_to(index, file, r, qualifier))
                .collect();
            if narrowed.is_empty() {
                result.resolution = Resolution::FellBack;
                refs
            } else {
                result.resolution = Resolution::Narrowed;
                result.unresolved = refs.len() - narrowed.len();
                narrowed
            }
        }
    };
    let mut by_file: BTreeMap<&str, FileUses> = BTreeMap::new();
    for (file, r) in &chosen {
        by_file
            .entry(file.path.as_str())
            .or_insert_with(|| FileUses {
                path: file.path.clone(),
                definitions: Vec::new(),
                uses: Vec::new(),
            })
            .uses
            .push(Use {
                line: r.line,
                column: r.column,
                kind: r.kind,
                qualifier: index.optional(r.qualifier).map(str::to_owned),
            });
    }
    for (file, def) in index.definitions_named(id) {
        if path.is_some_and(|p| !under(&file.path, p)) {
            continue;
        }
        let in_scope = qualifier.as_deref().is_none_or(|q| {
            index.optional(def.container).is_some_and(|c| ends_with_scope(c, q))
                || ends_with_scope(&module_of(&file.path), q)
        });
        if in_scope {
            by_file
                .entry(file.path.as_str())
                .or_insert_with(|| FileUses {
                    path: file.path.clone(),
                    definitions: Vec::new(),
                    uses: Vec::new(),
                })
                .definitions
                .push(def.start_line);
        }
    }
    for uses in by_file.values_mut() {
        uses.uses.sort_by_key(|u| (u.line, u.column));
        uses.definitions.sort_unstable();
    }
    result.total = chosen.len();
    result.files = by_file.into_values().collect();
    result
}

/// Whether the reference `r` in `file` resolves to a member of `qualifier` syntactically: through
/// the qualifier itself (`Type::f`, `a.b.Type::f`, `module.f`), through `self`/`this`/`cls`/`Self`
/// inside a definition of that type, or through what the file imports from that module (an alias,
/// or the name itself imported).
fn resolves_to(index: &Index, file: &File, r: &Ref, qualifier: &str) -> bool {
    let last = qualifier.rsplit('.').next().unwrap_or(qualifier);
    match index.optional(r.qualifier) {
        Some(written) => {
            let written = normalise(written);
            if ends_with_scope(&written, qualifier) || written == last {
                return true;
            }
            if matches!(written.as_str(), "self" | "this" | "cls" | "Self") {
                return enclosing_container(index, file, r.line).is_some_and(|c| ends_with_scope(&c, qualifier));
            }
            // `m.f` where the file imported the module as `m`.
            file.imports.iter().any(|import| {
                let local = import
                    .alias
                    .as_deref()
                    .or(import.name.as_deref())
                    .unwrap_or_else(|| import.path.rsplit(['.', '/', ':']).next().unwrap_or(&import.path));
                local == written && (ends_with_scope(&import_target(import), qualifier))
            })
        }
        // A bare `f` in a file that imported `f` from the module, or, in Java (where a method
        // calls its class's others without `this`), in the type's own methods.
        None => {
            let name = index.name(r.name);
            file.imports.iter().any(|import| {
                import.name.as_deref() == Some(name)
                    && ends_with_scope(&normalise(&module_path(&import.path)), qualifier)
            }) || (file.lang == super::Lang::Java
                && enclosing_container(index, file, r.line).is_some_and(|c| ends_with_scope(&c, qualifier)))
        }
    }
}

/// An import's module as a scope path: `./lib/api` → `lib.api`, `std::io` → `std.io`.
fn module_path(path: &str) -> String {
    path.trim_start_matches("./")
        .trim_start_matches("../")
        .replace('/', ".")
}

/// What an import binds: the module, or the module's item.
fn import_target(import: &super::Import) -> String {
    let module = normalise(&module_path(&import.path));
    match import.name.as_deref() {
        Some(name) if name != "*" && name != "default" => format!("{module}.{name}"),
        _ => module,
    }
}

/// The container of the innermost definition around `line` in `file` (a method's type).
fn enclosing_container(index: &Index, file: &File, line: u32) -> Option<String> {
    file.defs
        .iter()
        .filter(|d| d.start_line <= line && line <= d.end_line && d.container != u32::MAX)
        .min_by_key(|d| d.end_line - d.start_line)
        .and_then(|d| index.optional(d.container))
        .map(str::to_owned)
}

/// One definition of a file's outline, with its depth in the tree of line ranges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutlineItem {
    pub depth: usize,
    pub name: String,
    pub kind: SymbolKind,
    /// The type or module it belongs to (a Rust method's type, whose `impl` is not a definition).
    pub container: Option<String>,
    pub start_line: u32,
    pub end_line: u32,
    pub signature: String,
}

/// The definitions of the file at `path`, in line order, each nested in the definitions whose line
/// range holds it; `None` when the index does not hold the file.
pub fn outline(index: &Index, path: &str) -> Option<Vec<OutlineItem>> {
    let file = index.file(path.trim_start_matches("./"))?;
    let mut defs: Vec<&Def> = file.defs.iter().collect();
    defs.sort_by(|a, b| {
        a.start_line
            .cmp(&b.start_line)
            .then_with(|| b.end_line.cmp(&a.end_line))
            .then(Ordering::Equal)
    });
    let mut open: Vec<u32> = Vec::new();
    let mut out = Vec::with_capacity(defs.len());
    for def in defs {
        while open.last().is_some_and(|end| *end < def.start_line) {
            open.pop();
        }
        // A definition on the same lines as the one open (a field and its struct on one line)
        // nests only when it is strictly inside.
        out.push(OutlineItem {
            depth: open.len(),
            name: index.name(def.name).to_owned(),
            kind: def.kind,
            container: index.optional(def.container).map(str::to_owned),
            start_line: def.start_line,
            end_line: def.end_line,
            signature: def.signature.to_string(),
        });
        open.push(def.end_line);
    }
    Some(out)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::index::{Lang, extract};

    fn index(files: &[(&str, &str)]) -> Index {
        let mut index = Index::new();
        for (path, source) in files {
            let symbols = extract(Lang::of(path).unwrap(), source.as_bytes()).unwrap();
            index.insert(path, source.len() as u64, 0, "blob", symbols);
        }
        index
    }

    /// `path:line name (tier)` per match.
    fn found(index: &mut Index, query: &str, kind: Option<SymbolKind>, path: Option<&str>) -> Vec<String> {
        find_symbol(index, query, kind, path)
            .into_iter()
            .map(|m| format!("{}:{} {} {:?}", m.path, m.start_line, m.name, m.tier))
            .collect()
    }

    /// `path:line:column kind` per use, and the resolution.
    fn uses(index: &Index, symbol: &str) -> (Vec<String>, Resolution, usize) {
        let refs = find_references(index, symbol, None);
        let lines = refs
            .files
            .iter()
            .flat_map(|f| {
                f.uses
                    .iter()
                    .map(move |u| format!("{}:{} {}", f.path, u.line, u.kind.as_str()))
            })
            .collect();
        (lines, refs.resolution, refs.unresolved)
    }

    const RUST: &str = "\
pub struct Config;
impl Config {
    pub fn load() -> Config { Config }
    pub fn loader(&self) {}
}
pub struct Other;
impl Other {
    pub fn load() -> Other { Other }
}
pub fn configure() {}
";

    #[test]
    fn near_misses_are_the_closest_names_only() {
        // Three hundred names like the typo `proces_12`, and the one it misspells.
        let mut source = String::new();
        for n in 0..300 {
            source.push_str(&format!("def process_{n}():\n    pass\n"));
        }
        let mut index = index(&[("m.py", &source)]);
        let matches = find_symbol(&mut index, "proces_12", None, None);
        assert_eq!(matches.len(), MAX_FUZZY_NAMES);
        assert!(matches.iter().all(|m| m.tier == Tier::Fuzzy));
        assert_eq!(matches[0].name, "process_12");
        // The bound that spares most names Jaro-Winkler never leaves out a similar one.
        let query = NearMiss::new("proces_12");
        for n in 0..300 {
            let name = format!("process_{n}");
            let similar = strsim::jaro_winkler(&name, "proces_12") >= SIMILAR;
            assert!(!similar || query.may_be_similar(&name), "{name}");
        }
        assert!(!query.may_be_similar("unrelated"));
    }

    #[test]
    fn symbols_rank_exact_then_qualified_then_case_then_prefix_then_fuzzy() {
        let mut index = index(&[
            ("src/config.rs", RUST),
            ("src/main.rs", "fn main() { let c = Config::load(); }\n"),
        ]);
        assert_eq!(
            found(&mut index, "Config::load", None, None),
            [
                "src/config.rs:3 load Exact",
                "src/config.rs:8 load NameOnly",
                "src/config.rs:4 loader Prefix"
            ]
        );
        assert_eq!(
            found(&mut index, "Other.load", None, None),
            [
                "src/config.rs:8 load Exact",
                "src/config.rs:3 load NameOnly",
                "src/config.rs:4 loader Prefix"
            ]
        );
        // A module path qualifies too: the file's module.
        assert_eq!(
            found(&mut index, "config::configure", None, None),
            ["src/config.rs:10 configure Exact"]
        );
        assert_eq!(
            found(&mut index, "config", None, None),
            [
                "src/config.rs:1 Config CaseInsensitive",
                "src/config.rs:10 configure Prefix"
            ]
        );
        // Shortest completions first.
        assert_eq!(
            found(&mut index, "loa", None, None),
            [
                "src/config.rs:3 load Prefix",
                "src/config.rs:8 load Prefix",
                "src/config.rs:4 loader Prefix"
            ]
        );
        // A misspelling: the closest name first.
        assert_eq!(
            found(&mut index, "lodaer", None, None)[0],
            "src/config.rs:4 loader Fuzzy"
        );
        assert_eq!(
            found(&mut index, "load", Some(SymbolKind::Struct), None),
            Vec::<String>::new()
        );
        assert_eq!(
            found(&mut index, "Config", Some(SymbolKind::Struct), Some("src")),
            ["src/config.rs:1 Config Exact"]
        );
        assert_eq!(found(&mut index, "Config", None, Some("lib")), Vec::<String>::new());
        assert!(found(&mut index, "", None, None).is_empty());
    }

    #[test]
    fn references_of_a_qualified_symbol_are_narrowed_by_syntax_per_language() {
        let index = index(&[
            ("src/config.rs", RUST),
            (
                "src/main.rs",
                "use crate::config::Config;\nfn main() {\n    let c = Config::load();\n    let o = Other::load();\n    \
                 c.loader();\n}\n",
            ),
            (
                "app/store.py",
                "class Store:\n    def save(self):\n        self.flush()\n\n    def flush(self):\n        pass\n\n\n\
                 def flush():\n    pass\n",
            ),
            (
                "app/use.py",
                "import app.store as st\nfrom app.store import flush\n\nst.flush()\nflush()\nx.flush()\n",
            ),
            (
                "src/Main.java",
                "class Main {\n    void run() { helper(); }\n    void helper() {}\n}\nclass Other {\n    void go() { helper(); }\n}\n",
            ),
            (
                "web/a.ts",
                "import { render } from './view';\nrender();\nother.render();\n",
            ),
            ("web/view.ts", "export function render(): void {}\n"),
        ]);
        // Rust: through the type's path; the other type's `load` is left out.
        assert_eq!(
            uses(&index, "Config::load"),
            (vec!["src/main.rs:3 call".to_owned()], Resolution::Narrowed, 1)
        );
        // Python: `self.` in the class's methods, and the module imported under an alias.
        assert_eq!(
            uses(&index, "Store.flush"),
            (vec!["app/store.py:3 call".to_owned()], Resolution::Narrowed, 4)
        );
        assert_eq!(
            uses(&index, "app.store.flush"),
            (
                vec![
                    "app/use.py:2 import".to_owned(),
                    "app/use.py:4 call".to_owned(),
                    "app/use.py:5 call".to_owned()
                ],
                Resolution::Narrowed,
                2
            )
        );
        // Java calls its own methods bare; another class's bare call is not this one.
        assert_eq!(
            uses(&index, "Main.helper"),
            (vec!["src/Main.java:2 call".to_owned()], Resolution::Narrowed, 1)
        );
        // TypeScript: the name imported from the module.
        assert_eq!(
            uses(&index, "view.render"),
            (
                vec!["web/a.ts:1 import".to_owned(), "web/a.ts:2 call".to_owned()],
                Resolution::Narrowed,
                1
            )
        );
        // Nothing resolves: every use of the bare name, said so.
        let (all, resolution, _) = uses(&index, "Nowhere::loader");
        assert_eq!(
            (all, resolution),
            (vec!["src/main.rs:5 call".to_owned()], Resolution::FellBack)
        );
        // Unqualified: every use by name.
        assert_eq!(uses(&index, "loader").1, Resolution::ByName);
    }

    #[test]
    fn outlines_nest_by_line_range() {
        let index = index(&[("src/config.rs", RUST)]);
        let items: Vec<String> = outline(&index, "./src/config.rs")
            .unwrap()
            .iter()
            .map(|i| {
                let container = i.container.as_ref().map(|c| format!(" in {c}")).unwrap_or_default();
                format!("{}{} {}{container}", "  ".repeat(i.depth), i.kind.as_str(), i.name)
            })
            .collect();
        assert_eq!(
            items,
            [
                "struct Config",
                "method load in Config",
                "method loader in Config",
                "struct Other",
                "method load in Other",
                "function configure"
            ]
        );
        assert!(outline(&index, "src/missing.rs").is_none());
    }
}
