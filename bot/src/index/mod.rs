//! The code index's per-file extraction: what one source file defines (name, kind, enclosing scope,
//! lines, signature, the first line of its doc), the names it mentions and what it imports, read
//! from its tree-sitter syntax tree. Pure over bytes; the store (which files, caching by blob id,
//! freshness) and the agent's `find_symbol`, `find_references` and `outline` tools build on it.
//!
//! One walk over the tree per file (`walk.rs`) with a small rule set per grammar (`rust.rs`,
//! `python.rs`, `js.rs` for TypeScript, TSX and JavaScript, `go.rs`, `java.rs`). The grammars'
//! own `tags.scm` queries are not used: they name no enclosing scope, fold structs, enums and type
//! aliases into "class", and leave out fields, constants and enum members, so every language
//! would need its own queries and a second pass over the tree for the scopes anyway.
//!
//! References are the identifier nodes of the tree, so nothing inside a comment or a string
//! literal is one (an f-string's or template's `{code}` is code, and counts). They are names, not
//! resolved symbols: `find_references` answers by name, narrowed by kind and qualifier.

pub mod cache;
pub mod files;
mod go;
mod java;
mod js;
pub mod live;
pub mod lookup;
#[cfg(test)]
mod oracle;
mod python;
mod rust;
pub mod shelf;
pub mod store;
#[cfg(test)]
mod tests;
mod walk;

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// At most this many references are kept per file (a generated or minified file has hundreds of
/// thousands); [`FileSymbols::truncated`] says when some were left out.
pub const MAX_REFERENCES: usize = 20_000;
/// At most this many definitions are kept per file.
pub const MAX_DEFINITIONS: usize = 20_000;
/// At most this many imports are kept per file.
pub const MAX_IMPORTS: usize = 5_000;
/// Signatures, doc lines and qualifiers are cut to this many characters.
pub const MAX_TEXT: usize = 200;

/// A language the index reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Lang {
    #[serde(rename = "rust")]
    Rust,
    #[serde(rename = "python")]
    Python,
    #[serde(rename = "typescript")]
    TypeScript,
    /// TypeScript with JSX (`.tsx`): its own grammar, since `<T>x` casts and JSX collide.
    #[serde(rename = "tsx")]
    Tsx,
    /// JavaScript, JSX included.
    #[serde(rename = "javascript")]
    JavaScript,
    #[serde(rename = "go")]
    Go,
    #[serde(rename = "java")]
    Java,
}

impl Lang {
    pub const ALL: [Lang; 7] = [
        Lang::Rust,
        Lang::Python,
        Lang::TypeScript,
        Lang::Tsx,
        Lang::JavaScript,
        Lang::Go,
        Lang::Java,
    ];

    /// The language of a file, by its extension (any case); `None` for one the index does not read.
    pub fn of(path: impl AsRef<Path>) -> Option<Lang> {
        let ext = path.as_ref().extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "rs" => Lang::Rust,
            "py" | "pyi" => Lang::Python,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "js" | "mjs" | "cjs" | "jsx" => Lang::JavaScript,
            "go" => Lang::Go,
            "java" => Lang::Java,
            _ => return None,
        })
    }

    /// The name used in serialised form and in tool output.
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::TypeScript => "typescript",
            Lang::Tsx => "tsx",
            Lang::JavaScript => "javascript",
            Lang::Go => "go",
            Lang::Java => "java",
        }
    }

    fn grammar(self) -> tree_sitter::Language {
        match self {
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::Java => tree_sitter_java::LANGUAGE.into(),
        }
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a definition is. Each language maps its own constructs onto these (see the language files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymbolKind {
    /// A free function, a nested one, or a function value bound to a name (`const f = () => …`).
    Function,
    /// A function of a type: in an `impl`, trait, class, interface or object literal, or a Go
    /// function with a receiver.
    Method,
    /// Java's constructors and JavaScript's `constructor` (Python's `__init__` stays a method).
    Constructor,
    /// A class, a Java record, a TypeScript abstract class.
    Class,
    /// A Rust struct or union, a Go struct type.
    Struct,
    Enum,
    /// A variant of an enum (Rust variant, TypeScript member, Java constant).
    EnumMember,
    Trait,
    /// A TypeScript or Java interface, a Java annotation type, a Go interface type.
    Interface,
    /// A type alias, an associated type, and a Go type declaration that is neither struct nor
    /// interface (`type Celsius float64`).
    TypeAlias,
    /// A `const`, a module-level `UPPER_CASE` Python name, a module-level JavaScript `const`
    /// whose value is not a function, a Java interface constant.
    Constant,
    /// A Rust `static`.
    Static,
    /// A module-level variable that is not a constant.
    Variable,
    /// A struct, class or interface field; a Python class attribute.
    Field,
    /// A Rust `mod`, a TypeScript namespace or ambient module.
    Module,
    /// A `macro_rules!` macro.
    Macro,
}

impl SymbolKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SymbolKind::Function => "function",
            SymbolKind::Method => "method",
            SymbolKind::Constructor => "constructor",
            SymbolKind::Class => "class",
            SymbolKind::Struct => "struct",
            SymbolKind::Enum => "enum",
            SymbolKind::EnumMember => "enum_member",
            SymbolKind::Trait => "trait",
            SymbolKind::Interface => "interface",
            SymbolKind::TypeAlias => "type_alias",
            SymbolKind::Constant => "constant",
            SymbolKind::Static => "static",
            SymbolKind::Variable => "variable",
            SymbolKind::Field => "field",
            SymbolKind::Module => "module",
            SymbolKind::Macro => "macro",
        }
    }
}

impl fmt::Display for SymbolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing a file defines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    pub name: String,
    pub kind: SymbolKind,
    /// The enclosing named scopes, outermost first, joined by `::` in Rust and `.` elsewhere: a
    /// Rust method's type (`impl Display for Foo` → `Foo`, generics dropped) or trait, `a::b` for
    /// `mod a { mod b { … } }`; a Python class path (`A.B`); the TypeScript class, interface or
    /// namespace; a Go method's receiver type (`*T` → `T`); Java's `Outer.Inner`. A function
    /// counts as a scope for what is defined inside it.
    pub container: Option<String>,
    /// The first line of the definition proper, 1-based: after its attributes, decorators,
    /// annotations and doc comment.
    pub start_line: u32,
    /// Its last line, 1-based.
    pub end_line: u32,
    /// The line where its name stands, trimmed (from the definition's start when that is on the
    /// same line), at most [`MAX_TEXT`] characters.
    pub signature: String,
    /// The first line of its documentation: a Rust `///` comment, a Python docstring, a JSDoc or
    /// Javadoc `/** … */` block, the Go `//` comment block just above.
    pub doc: Option<String>,
}

/// How a name is used where it is referenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefKind {
    /// Called: a function or method call, a macro invocation, `new T(…)`, a decorator, a JSX
    /// component.
    Call,
    /// Used as a type.
    Type,
    /// Named in an import (`use`, `import`, `from … import`, `require` is a call).
    Import,
    /// Anything else: read, written, a field, a path segment.
    Other,
}

impl RefKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RefKind::Call => "call",
            RefKind::Type => "type",
            RefKind::Import => "import",
            RefKind::Other => "other",
        }
    }
}

/// One occurrence of a name that is not its own definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    pub name: String,
    /// 1-based.
    pub line: u32,
    /// 1-based, in bytes from the start of the line.
    pub column: u32,
    pub kind: RefKind,
    /// What the name is reached through, as written (line breaks and the spaces after them
    /// dropped, at most [`MAX_TEXT`] characters, else none): `Type` of `Type::f`, `a::b` of
    /// `a::b::f`, the receiver of `x.f()` (`self`, `this`, `client`, `self.inner`), the module or
    /// package of `mod.f` and `pkg.T`.
    pub qualifier: Option<String>,
}

/// One imported name, or a whole module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Import {
    /// The module, package or path as written: `std::collections` of `use std::collections::HashMap`,
    /// `os.path` of `import os.path`, `..pkg` of `from ..pkg import x`, `./m` of
    /// `import {a} from "./m"`, `fmt` of Go's `import "fmt"`, `java.util` of `import java.util.List`.
    pub path: String,
    /// The name taken from it: `HashMap`, `x`, `a`, `List`; `*` for a glob; `default` for an
    /// ECMAScript default import; none when the whole module is imported.
    pub name: Option<String>,
    /// The local name it is bound to, when renamed (`as e`, `import * as ns`, Go's `str "strings"`,
    /// `const fs = require("fs")`).
    pub alias: Option<String>,
    /// 1-based.
    pub line: u32,
}

/// Everything the index keeps of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSymbols {
    pub lang: Lang,
    /// In source order (of their start).
    pub definitions: Vec<Definition>,
    /// In source order, at most [`MAX_REFERENCES`].
    pub references: Vec<Reference>,
    /// In source order.
    pub imports: Vec<Import>,
    /// Some definitions, references or imports were left out: a limit above was reached.
    #[serde(default)]
    pub truncated: bool,
}

/// Why a file could not be read at all. A file with syntax errors is not one: it yields what
/// parses.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The grammar does not fit the tree-sitter library linked in (an ABI version mismatch).
    #[error("the {lang} grammar cannot be loaded: {source}")]
    Grammar {
        lang: Lang,
        #[source]
        source: tree_sitter::LanguageError,
    },
    /// The parser returned no tree (it does so only when cancelled or without a language).
    #[error("the {lang} parser returned no syntax tree")]
    NoTree { lang: Lang },
}

/// Reads one file's definitions, references and imports.
///
/// Any bytes are accepted: text that is not UTF-8 is read lossily (names with invalid bytes get
/// U+FFFD), and a file with syntax errors still yields everything outside the broken parts.
pub fn extract(lang: Lang, source: &[u8]) -> Result<FileSymbols, IndexError> {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&lang.grammar())
        .map_err(|source| IndexError::Grammar { lang, source })?;
    let tree = parser.parse(source, None).ok_or(IndexError::NoTree { lang })?;
    Ok(walk::Walker::new(lang, source).run(&tree))
}
