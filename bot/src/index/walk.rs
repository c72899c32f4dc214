//! One walk over a syntax tree: the stack of scopes that names containers, the definitions,
//! references and imports the language rules report, the limits, and what every language shares —
//! a node's text, the signature line, the comments right above a declaration.
//!
//! The walk is a loop over a tree cursor, not a recursion: a minified file or a generated table
//! can nest thousands deep.

use std::borrow::Cow;
use std::collections::HashSet;

use tree_sitter::{Node, Tree};

use super::{
    Definition, FileSymbols, Import, Lang, MAX_DEFINITIONS, MAX_IMPORTS, MAX_REFERENCES, MAX_TEXT, RefKind, Reference,
    SymbolKind, go, java, js, python, rust,
};

/// What a scope on the stack is, for the rules that depend on where a definition stands (a
/// function in a type is a method; a variable in a function is a local, not indexed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ScopeKind {
    Module,
    Type,
    Function,
}

struct Scope {
    node: usize,
    /// `None` for an anonymous function: it still makes what is inside it local.
    name: Option<String>,
    kind: ScopeKind,
}

/// What the names inside a subtree are, whatever their own position says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Context {
    /// An import statement: every name in it is an import reference.
    Import,
    /// A type annotation (Python's `type` node): names read as values there are types.
    Type,
    /// No references at all (a package clause names the file's own package).
    Quiet,
}

pub(super) struct Walker<'s> {
    pub(super) lang: Lang,
    pub(super) src: &'s [u8],
    out: FileSymbols,
    scopes: Vec<Scope>,
    contexts: Vec<(usize, Context)>,
    /// Name nodes that are not references: definitions' names and local bindings.
    skip: HashSet<usize>,
}

impl<'s> Walker<'s> {
    pub(super) fn new(lang: Lang, src: &'s [u8]) -> Self {
        Walker {
            lang,
            src,
            out: FileSymbols {
                lang,
                definitions: Vec::new(),
                references: Vec::new(),
                imports: Vec::new(),
                truncated: false,
            },
            scopes: Vec::new(),
            contexts: Vec::new(),
            skip: HashSet::new(),
        }
    }

    pub(super) fn run(mut self, tree: &Tree) -> FileSymbols {
        let mut cursor = tree.walk();
        'walk: loop {
            let node = cursor.node();
            if self.enter(node) && cursor.goto_first_child() {
                continue;
            }
            loop {
                self.leave(cursor.node());
                if cursor.goto_next_sibling() {
                    continue 'walk;
                }
                if !cursor.goto_parent() {
                    break 'walk;
                }
            }
        }
        self.out
    }

    /// Whether to walk the node's children.
    fn enter(&mut self, node: Node<'_>) -> bool {
        if is_comment(node.kind()) {
            return false;
        }
        if !node.is_named() {
            return false;
        }
        match self.lang {
            Lang::Rust => rust::enter(self, node),
            Lang::Python => python::enter(self, node),
            Lang::TypeScript | Lang::Tsx | Lang::JavaScript => js::enter(self, node),
            Lang::Go => go::enter(self, node),
            Lang::Java => java::enter(self, node),
        }
        if node.child_count() == 0 {
            self.reference(node);
        }
        true
    }

    fn leave(&mut self, node: Node<'_>) {
        let id = node.id();
        if self.contexts.last().is_some_and(|(n, _)| *n == id) {
            self.contexts.pop();
        }
        if self.scopes.last().is_some_and(|s| s.node == id) {
            self.scopes.pop();
        }
    }

    fn reference(&mut self, node: Node<'_>) {
        if self.skip.remove(&node.id()) {
            return;
        }
        let found = match self.lang {
            Lang::Rust => rust::reference(self, node),
            Lang::Python => python::reference(self, node),
            Lang::TypeScript | Lang::Tsx | Lang::JavaScript => js::reference(self, node),
            Lang::Go => go::reference(self, node),
            Lang::Java => java::reference(self, node),
        };
        let Some((mut kind, qualifier)) = found else {
            return;
        };
        match self.contexts.last().map(|(_, c)| *c) {
            Some(Context::Quiet) => return,
            Some(Context::Import) => kind = RefKind::Import,
            Some(Context::Type) if kind == RefKind::Other => kind = RefKind::Type,
            _ => {}
        }
        if self.out.references.len() >= MAX_REFERENCES {
            self.out.truncated = true;
            return;
        }
        let at = node.start_position();
        let reference = Reference {
            name: self.name_of(node),
            line: line_number(at.row),
            column: u32::try_from(at.column.saturating_add(1)).unwrap_or(u32::MAX),
            kind,
            qualifier: qualifier.and_then(|q| self.qualifier(q)),
        };
        self.out.references.push(reference);
    }

    /// Opens a scope that lasts until the walk leaves `node` (at most one per node).
    pub(super) fn open(&mut self, node: Node<'_>, name: Option<String>, kind: ScopeKind) {
        self.scopes.push(Scope {
            node: node.id(),
            name,
            kind,
        });
    }

    /// Names inside `node` are read as `context` says.
    pub(super) fn context(&mut self, node: Node<'_>, context: Context) {
        self.contexts.push((node.id(), context));
    }

    /// The innermost scope's kind.
    pub(super) fn innermost(&self) -> Option<ScopeKind> {
        self.scopes.last().map(|s| s.kind)
    }

    /// Whether the walk is inside a function, named or not.
    pub(super) fn in_function(&self) -> bool {
        self.scopes.iter().any(|s| s.kind == ScopeKind::Function)
    }

    /// The enclosing named scopes, joined.
    pub(super) fn container(&self) -> Option<String> {
        let sep = if self.lang == Lang::Rust { "::" } else { "." };
        let mut out = String::new();
        for name in self.scopes.iter().filter_map(|s| s.name.as_deref()) {
            if !out.is_empty() {
                out.push_str(sep);
            }
            out.push_str(name);
        }
        (!out.is_empty()).then_some(out)
    }

    /// `name` is a binding (a parameter, a local), not a reference.
    pub(super) fn bind(&mut self, name: Node<'_>) {
        self.skip.insert(name.id());
    }

    /// A definition named by `name`, in the current container.
    pub(super) fn define(&mut self, node: Node<'_>, name: Node<'_>, kind: SymbolKind) {
        let text = self.name_of(name);
        let container = self.container();
        self.define_as(node, Some(name), text, kind, container);
    }

    /// A definition with its name and container given.
    pub(super) fn define_as(
        &mut self,
        node: Node<'_>,
        name_node: Option<Node<'_>>,
        name: String,
        kind: SymbolKind,
        container: Option<String>,
    ) {
        if let Some(n) = name_node {
            self.skip.insert(n.id());
        }
        if self.out.definitions.len() >= MAX_DEFINITIONS {
            self.out.truncated = true;
            return;
        }
        let start = declaration_start(node);
        let end = node.end_position();
        let end_row = if end.column == 0 && end.row > start {
            end.row - 1
        } else {
            end.row
        };
        let doc = match self.lang {
            Lang::Python => python::doc(self, node),
            Lang::Rust => rust::doc(self, node),
            Lang::Go => go::doc(self, node),
            Lang::TypeScript | Lang::Tsx | Lang::JavaScript => js::doc(self, node),
            Lang::Java => java::doc(self, node),
        };
        let definition = Definition {
            name,
            kind,
            container,
            start_line: line_number(start),
            end_line: line_number(end_row.max(start)),
            signature: self.signature(node, name_node),
            doc,
        };
        self.out.definitions.push(definition);
    }

    pub(super) fn import(&mut self, path: String, name: Option<String>, alias: Option<String>, at: Node<'_>) {
        if self.out.imports.len() >= MAX_IMPORTS {
            self.out.truncated = true;
            return;
        }
        self.out.imports.push(Import {
            path,
            name,
            alias,
            line: line_number(at.start_position().row),
        });
    }

    /// The node's text (lossy where it is not UTF-8).
    pub(super) fn text(&self, node: Node<'_>) -> Cow<'s, str> {
        let bytes = self.src.get(node.byte_range()).unwrap_or_default();
        String::from_utf8_lossy(bytes)
    }

    /// A name's text, at most [`MAX_TEXT`] characters.
    pub(super) fn name_of(&self, node: Node<'_>) -> String {
        if node.byte_range().len() > MAX_TEXT * 4 {
            let bytes = self.src.get(node.start_byte()..node.start_byte() + MAX_TEXT * 4);
            return cap(&String::from_utf8_lossy(bytes.unwrap_or_default()));
        }
        cap(&self.text(node))
    }

    /// A qualifier's text with line breaks (and the indentation after them) dropped; none when long.
    fn qualifier(&self, node: Node<'_>) -> Option<String> {
        if node.byte_range().len() > MAX_TEXT * 4 {
            return None;
        }
        let text = self.text(node);
        let mut out = String::with_capacity(text.len());
        let mut lines = text.lines();
        if let Some(first) = lines.next() {
            out.push_str(first.trim_end());
        }
        for line in lines {
            out.push_str(line.trim());
        }
        (out.chars().count() <= MAX_TEXT && !out.is_empty()).then_some(out)
    }

    /// The line of the name, from the line's start (or the definition's, on a very long line).
    fn signature(&self, node: Node<'_>, name: Option<Node<'_>>) -> String {
        let anchor = name.unwrap_or(node);
        let at = anchor.start_byte();
        let line_start = at.saturating_sub(anchor.start_position().column);
        let from = if at - line_start <= MAX_TEXT {
            line_start
        } else if node.start_byte() >= line_start && node.start_byte() <= at && at - node.start_byte() <= MAX_TEXT {
            node.start_byte()
        } else {
            at
        };
        // Never scan far: a minified line is megabytes long.
        let window = self
            .src
            .get(from..self.src.len().min(from + MAX_TEXT * 4))
            .unwrap_or_default();
        let line = window.split(|&b| b == b'\n').next().unwrap_or_default();
        cap(String::from_utf8_lossy(line).trim())
    }

    /// The comments right above `node`, first to last: each on a line of its own, with no blank
    /// line between them and the node. Siblings `between` accepts (attributes, decorators) may
    /// stand between.
    pub(super) fn comments_above<'t>(&self, node: Node<'t>, between: &[&str]) -> Vec<Node<'t>> {
        let mut out = Vec::new();
        let mut row = node.start_position().row;
        let mut sibling = node.prev_sibling();
        while let Some(s) = sibling {
            if between.contains(&s.kind()) {
                row = s.start_position().row;
            } else if is_comment(s.kind()) {
                let end = s.end_position();
                let end_row = if end.column == 0 && end.row > s.start_position().row {
                    end.row - 1
                } else {
                    end.row
                };
                if end_row + 1 < row || !self.starts_line(s) {
                    break;
                }
                out.push(s);
                row = s.start_position().row;
            } else {
                break;
            }
            sibling = s.prev_sibling();
        }
        out.reverse();
        out
    }

    /// Whether only white space stands before `node` on its line.
    fn starts_line(&self, node: Node<'_>) -> bool {
        let at = node.start_byte();
        let start = at.saturating_sub(node.start_position().column);
        self.src
            .get(start..at)
            .is_some_and(|b| b.iter().all(u8::is_ascii_whitespace))
    }
}

/// The first line with words in C-style comments (`///`, `//`, `/** … */`), markers and the
/// leading `*` of block lines dropped.
pub(super) fn first_comment_line<'a>(comments: impl IntoIterator<Item = Cow<'a, str>>) -> Option<String> {
    for comment in comments {
        for line in comment.lines() {
            let mut line = line.trim();
            for marker in ["///", "//!", "//", "/**", "/*!", "/*"] {
                if let Some(rest) = line.strip_prefix(marker) {
                    line = rest;
                    break;
                }
            }
            line = line.strip_suffix("*/").unwrap_or(line).trim();
            line = line.trim_start_matches('*').trim();
            if !line.is_empty() {
                return Some(cap(line));
            }
        }
    }
    None
}

/// The first line of a docstring's or comment's text that has words in it.
pub(super) fn first_text_line(text: &str) -> Option<String> {
    text.lines().map(str::trim).find(|l| !l.is_empty()).map(cap)
}

/// At most [`MAX_TEXT`] characters.
pub(super) fn cap(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT) {
        Some((cut, _)) => text[..cut].trim_end().to_owned(),
        None => text.to_owned(),
    }
}

pub(super) fn is_comment(kind: &str) -> bool {
    matches!(kind, "comment" | "line_comment" | "block_comment" | "html_comment")
}

/// Whether `child` is `parent`'s child in `field`.
pub(super) fn is_field(parent: Node<'_>, field: &str, child: Node<'_>) -> bool {
    parent.child_by_field_name(field).is_some_and(|n| n.id() == child.id())
}

/// The row where a declaration proper starts: after the decorators, annotations and attributes
/// some grammars make part of it.
fn declaration_start(node: Node<'_>) -> usize {
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match child.kind() {
            "decorator" | "annotation" | "marker_annotation" | "attribute_item" => continue,
            kind if is_comment(kind) => continue,
            "modifiers" => {
                let mut inner = child.walk();
                let first = child
                    .children(&mut inner)
                    .find(|m| !matches!(m.kind(), "annotation" | "marker_annotation") && !is_comment(m.kind()));
                match first {
                    Some(m) => return m.start_position().row,
                    None => continue,
                }
            }
            _ => return child.start_position().row,
        }
    }
    node.start_position().row
}

fn line_number(row: usize) -> u32 {
    u32::try_from(row.saturating_add(1)).unwrap_or(u32::MAX)
}
