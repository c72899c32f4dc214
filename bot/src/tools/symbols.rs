//! The code index's tools: `find_symbol` (where a name is defined), `find_references` (where a
//! symbol is used) and `outline` (a file's definitions as a tree) — read-only, answered from the
//! session's [`LiveIndex`](crate::index::live::LiveIndex), which is brought up to date with every
//! change before it answers. Their answers name files and line ranges for `read_file`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::files::{blocking, cut, plural};
use super::{BoxFuture, Tool, ToolContext, ToolError, parse_args};
use crate::index::SymbolKind;
use crate::index::live::{BUILD_WAIT, Completeness, LiveIndex};
use crate::index::lookup::{self, Resolution, Tier};

const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 200;
const DEFAULT_REFERENCES: usize = 100;
const MAX_REFERENCES: usize = 1_000;
/// Characters of a referencing line shown.
const MAX_LINE_CHARS: usize = 200;

/// The session's index, or what to tell the model when there is none.
fn index(ctx: &ToolContext) -> Result<Arc<LiveIndex>, ToolError> {
    ctx.index.clone().ok_or_else(|| {
        ToolError::respond("the code index is not available in this session; use grep and glob to find code")
    })
}

/// A line before the answer when the index is not complete.
fn completeness_note(completeness: &Completeness) -> String {
    match completeness {
        Completeness::Complete => String::new(),
        Completeness::Building { done, total } => format!(
            "[The index is still being built: {} of {} indexed so far; this answer may be missing definitions \
             in the rest. grep sees every file.]\n",
            plural(*done as u64, "file", "files"),
            plural(*total as u64, "file", "files")
        ),
        Completeness::Failed(why) => format!("[The index is incomplete ({why}); grep sees every file.]\n"),
    }
}

pub fn parse_kind(word: Option<&str>) -> Result<Option<SymbolKind>, ToolError> {
    let Some(word) = word.map(str::trim).filter(|w| !w.is_empty()) else {
        return Ok(None);
    };
    let word = word.to_ascii_lowercase().replace(['-', ' '], "_");
    let kinds = [
        SymbolKind::Function,
        SymbolKind::Method,
        SymbolKind::Constructor,
        SymbolKind::Class,
        SymbolKind::Struct,
        SymbolKind::Enum,
        SymbolKind::EnumMember,
        SymbolKind::Trait,
        SymbolKind::Interface,
        SymbolKind::TypeAlias,
        SymbolKind::Constant,
        SymbolKind::Static,
        SymbolKind::Variable,
        SymbolKind::Field,
        SymbolKind::Module,
        SymbolKind::Macro,
    ];
    let found = kinds.into_iter().find(|k| k.as_str() == word).or(match word.as_str() {
        "fn" | "func" | "def" => Some(SymbolKind::Function),
        "type" => Some(SymbolKind::TypeAlias),
        "const" => Some(SymbolKind::Constant),
        _ => None,
    });
    match found {
        Some(kind) => Ok(Some(kind)),
        None => Err(ToolError::respond(format!(
            "unknown kind `{word}`; use one of: {}",
            kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// `find_symbol`.
pub struct FindSymbol;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SymbolArgs {
    query: String,
    kind: Option<String>,
    path: Option<String>,
    offset: Option<usize>,
    limit: Option<usize>,
}

impl Tool for FindSymbol {
    fn name(&self) -> &'static str {
        "find_symbol"
    }

    fn description(&self) -> &'static str {
        "Find where a symbol is defined, from the code index (Rust, Python, TypeScript/TSX, JavaScript, Go, Java; \
         kept up to date with every edit). `query` is a name (`parse_config`), a qualified name (`Config::load`, \
         `Client.send`, `module.func`) or a prefix; matches are ranked exact, then qualified, then by prefix, then \
         fuzzy. Each match gives the file, the line range (for read_file's offset and limit), the kind, the type or \
         module it sits in, its signature line and the first line of its doc. `kind` narrows to one kind \
         (function, method, class, struct, enum, trait, interface, type_alias, constant, field, module, …); `path` \
         to a file or directory. Prefer this to grep for a definition; use grep for strings, config keys and error \
         messages."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "A name, a qualified name (`Type::method`, `Class.method`, `module.func`) or a prefix."},
                "kind": {"type": "string", "description": "Only definitions of this kind, e.g. `function`, `method`, `struct`, `class`, `interface`."},
                "path": {"type": "string", "description": "Only definitions in this file or below this directory."},
                "offset": {"type": "integer", "minimum": 0, "description": "Skip this many matches (to page). Default 0."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "At most this many matches. Default 20."}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let args: SymbolArgs = parse_args(self.name(), args)?;
            if args.query.trim().is_empty() {
                return Err(ToolError::respond("`query` is empty: give a name to look for"));
            }
            let kind = parse_kind(args.kind.as_deref())?;
            let index = index(ctx)?;
            let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
            let offset = args.offset.unwrap_or(0);
            let query = args.query.trim().to_owned();
            let path = args.path.map(|p| p.trim().trim_start_matches("./").to_owned());
            let (matches, completeness) = blocking(move || {
                Ok(index.query(BUILD_WAIT, |index| {
                    lookup::find_symbol(index, &query, kind, path.as_deref())
                }))
            })
            .await?;
            Ok(render_symbols(
                args.query.trim(),
                kind,
                &matches,
                &completeness,
                offset,
                limit,
            ))
        })
    }
}

/// `find_references`.
pub struct FindReferences;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReferenceArgs {
    symbol: String,
    path: Option<String>,
    offset: Option<usize>,
    limit: Option<usize>,
}

impl Tool for FindReferences {
    fn name(&self) -> &'static str {
        "find_references"
    }

    fn description(&self) -> &'static str {
        "Find where a symbol is used, from the code index: every call, type use, import and other mention of the \
         name outside comments and strings, grouped by file, each with its line and the kind of use; the files \
         that define it are marked. For a qualified symbol (`Type::method`, `Class.method`, `module.func`) only the \
         uses that resolve to it by their syntax are shown — called through the type or module, through `self` or \
         `this` in the type's own methods, or through an import of the module — and the answer says when none did \
         and it fell back to every use of the bare name. `path` narrows to a file or directory. Names are matched, \
         not types resolved: for a common name, qualify it."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "symbol": {"type": "string", "description": "A name, or a qualified name (`Type::method`, `Class.method`, `module.func`)."},
                "path": {"type": "string", "description": "Only uses in this file or below this directory."},
                "offset": {"type": "integer", "minimum": 0, "description": "Skip this many uses (to page). Default 0."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_REFERENCES, "description": "At most this many uses. Default 100."}
            },
            "required": ["symbol"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let args: ReferenceArgs = parse_args(self.name(), args)?;
            if args.symbol.trim().is_empty() {
                return Err(ToolError::respond("`symbol` is empty: give the name to look for"));
            }
            let index = index(ctx)?;
            let limit = args.limit.unwrap_or(DEFAULT_REFERENCES).clamp(1, MAX_REFERENCES);
            let offset = args.offset.unwrap_or(0);
            let symbol = args.symbol.trim().to_owned();
            let path = args.path.map(|p| p.trim().trim_start_matches("./").to_owned());
            let workspace = ctx.workspace.clone();
            blocking(move || {
                let (found, completeness) = index.query(BUILD_WAIT, |index| {
                    lookup::find_references(index, &symbol, path.as_deref())
                });
                Ok(render_references(
                    &symbol,
                    &found,
                    &completeness,
                    &workspace,
                    offset,
                    limit,
                ))
            })
            .await
        })
    }
}

/// The lines of a file by number (read through the workspace's path rules), empty when it cannot
/// be read.
fn file_lines(workspace: &super::Workspace, path: &str) -> BTreeMap<u32, String> {
    let Ok(resolved) = workspace.resolve_read(path) else {
        return BTreeMap::new();
    };
    let mut bytes = Vec::new();
    if workspace
        .open(&resolved)
        .and_then(|mut file| std::io::Read::read_to_end(&mut file, &mut bytes))
        .is_err()
    {
        return BTreeMap::new();
    }
    String::from_utf8_lossy(&bytes)
        .lines()
        .enumerate()
        .map(|(n, line)| (u32::try_from(n + 1).unwrap_or(u32::MAX), line.to_owned()))
        .collect()
}

/// `outline`.
pub struct Outline;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutlineArgs {
    path: String,
}

impl Tool for Outline {
    fn name(&self) -> &'static str {
        "outline"
    }

    fn description(&self) -> &'static str {
        "List a file's definitions as a tree (types with their methods and fields, modules with what they hold), \
         each with its line range and signature, from the code index: a cheap way to see the shape of a big file \
         before reading the right range with read_file."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the repository root."}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, args: Map<String, Value>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let args: OutlineArgs = parse_args(self.name(), args)?;
            let resolved = ctx.workspace.resolve_read(&args.path)?;
            let shown = ctx.workspace.display(&resolved);
            let index = index(ctx)?;
            let path = shown.clone();
            let (items, completeness) =
                blocking(move || Ok(index.query(BUILD_WAIT, |index| lookup::outline(index, &path)))).await?;
            render_outline(&shown, items.as_deref(), &completeness).map_err(ToolError::respond)
        })
    }
}

/// `find_symbol`'s answer: `matches` (all of them, best first) from `offset`, at most `limit`.
pub fn render_symbols(
    query: &str,
    kind: Option<SymbolKind>,
    matches: &[lookup::SymbolMatch],
    completeness: &Completeness,
    offset: usize,
    limit: usize,
) -> String {
    let mut out = completeness_note(completeness);
    if matches.is_empty() {
        out.push_str(&format!(
            "No definition matches `{}`{}. Try a shorter prefix, another spelling, or grep.",
            query,
            kind.map(|k| format!(" of kind {}", k.as_str())).unwrap_or_default()
        ));
        return out;
    }
    let total = matches.len();
    let shown: Vec<_> = matches.iter().skip(offset).take(limit).collect();
    if shown.is_empty() {
        return format!("{out}{total} matches; none at offset {offset}.");
    }
    let best = match shown[0].tier {
        Tier::Exact => "exact",
        Tier::NameOnly => "the name, in another type or module",
        Tier::CaseInsensitive => "the name in another case",
        Tier::Prefix => "by prefix",
        Tier::Fuzzy => "fuzzy: no exact or prefix match",
    };
    out.push_str(&format!(
        "{} for `{}` (best: {best}){}:\n",
        plural(total as u64, "definition", "definitions"),
        query,
        if total > shown.len() {
            format!(", showing {}–{}", offset + 1, offset + shown.len())
        } else {
            String::new()
        }
    ));
    for m in &shown {
        let container = m.container.as_ref().map(|c| format!(" in {c}")).unwrap_or_default();
        out.push_str(&format!(
            "{}:{}-{}  {} {}{container}\n    {}\n",
            m.path,
            m.start_line,
            m.end_line,
            m.kind.as_str(),
            m.name,
            cut(&m.signature, MAX_LINE_CHARS)
        ));
        if let Some(doc) = &m.doc {
            out.push_str(&format!("    // {}\n", cut(doc, MAX_LINE_CHARS)));
        }
    }
    if total > offset + shown.len() {
        out.push_str(&format!(
            "… {} more (offset {} for the next page)\n",
            total - offset - shown.len(),
            offset + shown.len()
        ));
    }
    out.trim_end().to_owned()
}

/// `find_references`' answer: the uses in `found` from `offset`, at most `limit`, each with its
/// line read from `workspace`.
pub fn render_references(
    symbol: &str,
    found: &lookup::References,
    completeness: &Completeness,
    workspace: &super::Workspace,
    offset: usize,
    limit: usize,
) -> String {
    let mut out = completeness_note(completeness);
    let qualified = found.qualifier.as_ref().map(|q| format!("{q}.{}", found.name));
    let how = match (&found.resolution, &qualified) {
        (Resolution::Narrowed, Some(q)) => {
            format!(" (narrowed to the uses that resolve to `{q}` by their syntax)")
        }
        (Resolution::FellBack, Some(q)) => format!(
            " (none resolved to `{q}` by its syntax: every use of the bare name `{}` is shown)",
            found.name
        ),
        _ => String::new(),
    };
    if found.files.is_empty() {
        out.push_str(&format!("No use or definition of `{symbol}` in the index{how}."));
        return out;
    }
    out.push_str(&format!(
        "{} of `{symbol}` in {}{how}:\n",
        plural(found.total as u64, "use", "uses"),
        plural(found.files.len() as u64, "file", "files")
    ));
    let mut skipped = 0;
    let mut shown = 0;
    for file in &found.files {
        let lines = file_lines(workspace, &file.path);
        let defines = if file.definitions.is_empty() {
            String::new()
        } else {
            format!(
                "  (defines it at line{} {})",
                if file.definitions.len() == 1 { "" } else { "s" },
                file.definitions
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let mut header_written = false;
        for u in &file.uses {
            if skipped < offset {
                skipped += 1;
                continue;
            }
            if shown >= limit {
                break;
            }
            if !header_written {
                out.push_str(&format!("{}{defines}\n", file.path));
                header_written = true;
            }
            let text = lines
                .get(&u.line)
                .map(|t| cut(t.trim(), MAX_LINE_CHARS))
                .unwrap_or_default();
            out.push_str(&format!("  {}:{} {:<6} {text}\n", u.line, u.column, u.kind.as_str()));
            shown += 1;
        }
        if file.uses.is_empty() && skipped >= offset && shown < limit {
            out.push_str(&format!("{}{defines}\n", file.path));
        }
    }
    if found.total > offset + shown {
        out.push_str(&format!(
            "… {} more (offset {} for the next page)\n",
            found.total - offset - shown,
            offset + shown
        ));
    }
    if found.unresolved > 0 {
        out.push_str(&format!(
            "{} of the bare name `{}` did not resolve by their syntax and are left out (a receiver whose type \
             the index cannot know may still be this symbol's); find_references `{}` lists every use.\n",
            plural(found.unresolved as u64, "other use", "other uses"),
            found.name,
            found.name
        ));
    }
    out.trim_end().to_owned()
}

/// `outline`'s answer for the file shown as `shown`; an error when the index does not hold it.
pub fn render_outline(
    shown: &str,
    items: Option<&[lookup::OutlineItem]>,
    completeness: &Completeness,
) -> Result<String, String> {
    let mut out = completeness_note(completeness);
    let Some(items) = items else {
        return Err(format!(
            "`{shown}` is not in the code index (not a file of an indexed language — Rust, Python, \
                 TypeScript/TSX, JavaScript, Go, Java —, ignored, generated, too large, or missing); read it with \
                 read_file"
        ));
    };
    if items.is_empty() {
        out.push_str(&format!("`{shown}` defines nothing the index knows of."));
        return Ok(out);
    }
    out.push_str(&format!(
        "{shown}: {}\n",
        plural(items.len() as u64, "definition", "definitions")
    ));
    for item in items {
        let lines = if item.start_line == item.end_line {
            item.start_line.to_string()
        } else {
            format!("{}-{}", item.start_line, item.end_line)
        };
        // At the top, the type a method belongs to (a Rust `impl` is not a definition of its own);
        // nested, the enclosing line says it.
        let container = match (&item.container, item.depth) {
            (Some(container), 0) => format!(" in {container}"),
            _ => String::new(),
        };
        out.push_str(&format!(
            "{}{} {}{container}  {lines}  {}\n",
            "  ".repeat(item.depth),
            item.kind.as_str(),
            item.name,
            cut(&item.signature, MAX_LINE_CHARS)
        ));
    }
    Ok(out.trim_end().to_owned())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::sandbox::local::{LocalOptions, LocalSession};
    use crate::tools::test_support::{self, call, message};
    use crate::tools::{Bash, EditFile, ReadFile, WriteFile};

    const LIB: &str = "\
//! A small crate.

/// Reads the configuration.
pub fn parse_config(text: &str) -> Config {
    Config::new(text)
}

pub struct Config {
    pub name: String,
}

impl Config {
    /// Makes one.
    pub fn new(name: &str) -> Config {
        Config { name: name.to_owned() }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}
";

    const MAIN: &str = "\
use crate::parse_config;

fn main() {
    // parse_config is named in this comment, which is not a use.
    let config = parse_config(\"x\");
    println!(\"{}\", config.name());
}
";

    /// A workspace with the files, a sandbox that runs commands, and the index over it, built.
    fn context(files: &[(&str, &str)]) -> (tempfile::TempDir, ToolContext) {
        let (dir, mut ctx) = test_support::workspace_with(files);
        ctx.sandbox = Arc::new(LocalSession::start(dir.path(), LocalOptions::default()).unwrap());
        ctx.index = Some(LiveIndex::start(dir.path(), None, None));
        (dir, ctx)
    }

    #[tokio::test]
    async fn find_symbol_references_and_outline_answer_from_the_code() {
        let (_dir, ctx) = context(&[("src/lib.rs", LIB), ("src/main.rs", MAIN)]);
        let found = call(&FindSymbol, &ctx, json!({"query": "Config::new"})).await.unwrap();
        insta::assert_snapshot!(found, @r"
        1 definition for `Config::new` (best: exact):
        src/lib.rs:14-16  method new in Config
            pub fn new(name: &str) -> Config {
            // Makes one.
        ");
        let prefix = call(&FindSymbol, &ctx, json!({"query": "parse_c", "kind": "fn"}))
            .await
            .unwrap();
        insta::assert_snapshot!(prefix, @r"
        1 definition for `parse_c` (best: by prefix):
        src/lib.rs:4-6  function parse_config
            pub fn parse_config(text: &str) -> Config {
            // Reads the configuration.
        ");
        let uses = call(&FindReferences, &ctx, json!({"symbol": "parse_config"}))
            .await
            .unwrap();
        insta::assert_snapshot!(uses, @r#"
        2 uses of `parse_config` in 2 files:
        src/lib.rs  (defines it at line 4)
        src/main.rs
          1:12 import use crate::parse_config;
          5:18 call   let config = parse_config("x");
        "#);
        let outline = call(&Outline, &ctx, json!({"path": "src/lib.rs"})).await.unwrap();
        insta::assert_snapshot!(outline, @"
        src/lib.rs: 5 definitions
        function parse_config  4-6  pub fn parse_config(text: &str) -> Config {
        struct Config  8-10  pub struct Config {
          field name  9  pub name: String,
        method new in Config  14-16  pub fn new(name: &str) -> Config {
        method name in Config  18-20  pub fn name(&self) -> &str {
        ");
        let unknown = message(call(&FindSymbol, &ctx, json!({"query": "x", "kind": "gadget"})).await);
        assert!(
            unknown.starts_with("unknown kind `gadget`; use one of: function, method"),
            "{unknown}"
        );
        let missing = message(call(&Outline, &ctx, json!({"path": "README.md"})).await);
        assert!(missing.contains("is not in the code index"), "{missing}");
    }

    #[tokio::test]
    async fn an_edit_a_file_written_by_a_command_and_a_deleted_file_show_in_the_next_query() {
        let (_dir, ctx) = context(&[("src/lib.rs", LIB), ("src/main.rs", MAIN)]);
        let before = call(&FindSymbol, &ctx, json!({"query": "parse_config"})).await.unwrap();
        assert!(before.contains("src/lib.rs:4-6  function parse_config"), "{before}");

        // edit_file renames the function: the old name is gone, the new one found at once.
        call(&ReadFile, &ctx, json!({"path": "src/lib.rs"})).await.unwrap();
        call(
            &EditFile,
            &ctx,
            json!({"path": "src/lib.rs", "old_string": "pub fn parse_config(", "new_string": "pub fn load_config("}),
        )
        .await
        .unwrap();
        let renamed = call(&FindSymbol, &ctx, json!({"query": "load_config"})).await.unwrap();
        assert!(
            renamed.starts_with("1 definition for `load_config` (best: exact):\nsrc/lib.rs:4-6"),
            "{renamed}"
        );
        let old = call(&FindSymbol, &ctx, json!({"query": "parse_config", "kind": "function"}))
            .await
            .unwrap();
        assert!(!old.contains("src/lib.rs"), "the old definition is gone: {old}");

        // A file a command writes, and one write_file writes, are both in the next answer.
        call(
            &Bash,
            &ctx,
            json!({"command": "mkdir -p tools && printf 'def generated_helper():\\n    return 1\\n' > tools/gen.py"}),
        )
        .await
        .unwrap();
        call(
            &WriteFile,
            &ctx,
            json!({"path": "web/app.ts", "content": "export function render(): void {}\n"}),
        )
        .await
        .unwrap();
        let generated = call(&FindSymbol, &ctx, json!({"query": "generated_helper"}))
            .await
            .unwrap();
        assert!(
            generated.contains("tools/gen.py:1-2  function generated_helper"),
            "{generated}"
        );
        let rendered = call(&FindSymbol, &ctx, json!({"query": "render"})).await.unwrap();
        assert!(rendered.contains("web/app.ts:1-1  function render"), "{rendered}");

        // A command that deletes a file takes its symbols with it.
        call(&Bash, &ctx, json!({"command": "rm src/main.rs && rm tools/gen.py"}))
            .await
            .unwrap();
        let gone = call(&FindReferences, &ctx, json!({"symbol": "load_config"}))
            .await
            .unwrap();
        assert!(!gone.contains("src/main.rs"), "{gone}");
        let outline = message(call(&Outline, &ctx, json!({"path": "tools/gen.py"})).await);
        assert!(outline.contains("is not in the code index"), "{outline}");
        let none = call(&FindSymbol, &ctx, json!({"query": "generated_helper"}))
            .await
            .unwrap();
        assert!(none.starts_with("No definition matches"), "{none}");
    }

    #[tokio::test]
    async fn a_command_that_rewrites_a_file_keeping_its_size_and_time_is_still_seen() {
        let (dir, ctx) = context(&[("src/lib.rs", "pub fn alpha() {}\n")]);
        let first = call(&FindSymbol, &ctx, json!({"query": "alpha"})).await.unwrap();
        assert!(first.contains("function alpha"), "{first}");
        // Same length, and the old modification time put back: only the ctime tells.
        call(
            &Bash,
            &ctx,
            json!({"command": "t=$(stat -c %y src/lib.rs) && printf 'pub fn gamma() {}\\n' > src/lib.rs && touch -d \"$t\" src/lib.rs"}),
        )
        .await
        .unwrap();
        assert_eq!(std::fs::metadata(dir.path().join("src/lib.rs")).unwrap().len(), 18);
        let second = call(&FindSymbol, &ctx, json!({"query": "gamma"})).await.unwrap();
        assert!(second.contains("src/lib.rs:1-1  function gamma"), "{second}");
    }
}
