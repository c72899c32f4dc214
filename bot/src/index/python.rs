//! Python: classes, functions and methods (`async def` and decorated ones alike), module
//! constants and variables, class attributes, `import`/`from … import` as imports, docstrings,
//! and how a name is used.

use tree_sitter::Node;

use super::walk::{Context, ScopeKind, Walker, first_text_line, is_field};
use super::{RefKind, SymbolKind};

pub(super) fn enter(w: &mut Walker<'_>, node: Node<'_>) {
    match node.kind() {
        "class_definition" => {
            if let Some(name) = node.child_by_field_name("name") {
                w.define(node, name, SymbolKind::Class);
                let text = w.name_of(name);
                w.open(node, Some(text), ScopeKind::Type);
            }
        }
        "function_definition" => {
            if let Some(name) = node.child_by_field_name("name") {
                let kind = if w.innermost() == Some(ScopeKind::Type) {
                    SymbolKind::Method
                } else {
                    SymbolKind::Function
                };
                w.define(node, name, kind);
                let text = w.name_of(name);
                w.open(node, Some(text), ScopeKind::Function);
            }
        }
        "lambda" => w.open(node, None, ScopeKind::Function),
        "assignment" => assignment(w, node),
        "import_statement" => {
            w.context(node, Context::Import);
            let mut cursor = node.walk();
            let names: Vec<_> = node.children_by_field_name("name", &mut cursor).collect();
            for name in names {
                let (path, alias) = match name.kind() {
                    "aliased_import" => (
                        name.child_by_field_name("name").map(|n| w.name_of(n)),
                        name.child_by_field_name("alias").map(|a| w.name_of(a)),
                    ),
                    _ => (Some(w.name_of(name)), None),
                };
                if let Some(path) = path {
                    w.import(path, None, alias, node);
                }
            }
        }
        "import_from_statement" | "future_import_statement" => {
            w.context(node, Context::Import);
            let path = match node.child_by_field_name("module_name") {
                Some(module) => w.name_of(module),
                None => "__future__".to_owned(),
            };
            let mut cursor = node.walk();
            let names: Vec<_> = node.children_by_field_name("name", &mut cursor).collect();
            for name in names {
                let (name, alias) = match name.kind() {
                    "aliased_import" => (
                        name.child_by_field_name("name").map(|n| w.name_of(n)),
                        name.child_by_field_name("alias").map(|a| w.name_of(a)),
                    ),
                    _ => (Some(w.name_of(name)), None),
                };
                w.import(path.clone(), name, alias, node);
            }
            let mut cursor = node.walk();
            if node.children(&mut cursor).any(|c| c.kind() == "wildcard_import") {
                w.import(path, Some("*".to_owned()), None, node);
            }
        }
        "type" => w.context(node, Context::Type),
        "parameters" | "lambda_parameters" => {
            let mut cursor = node.walk();
            let params: Vec<_> = node.named_children(&mut cursor).collect();
            for param in params {
                let name = match param.kind() {
                    "identifier" => Some(param),
                    "default_parameter" | "typed_default_parameter" => param.child_by_field_name("name"),
                    "typed_parameter" | "list_splat_pattern" | "dictionary_splat_pattern" => param.named_child(0),
                    _ => None,
                };
                match name {
                    Some(n) if n.kind() == "identifier" => w.bind(n),
                    Some(n) if matches!(n.kind(), "list_splat_pattern" | "dictionary_splat_pattern") => {
                        if let Some(inner) = n.named_child(0) {
                            w.bind(inner);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// A module-level name (a constant when it is `UPPER_CASE`) or a class attribute; assignments in
/// functions are locals.
fn assignment(w: &mut Walker<'_>, node: Node<'_>) {
    let statement = node
        .parent()
        .is_some_and(|p| matches!(p.kind(), "expression_statement" | "assignment"));
    if !statement {
        return;
    }
    // `f = lambda …` is a function wherever it stands, as a `def` would be.
    let lambda = node.child_by_field_name("right").is_some_and(|r| r.kind() == "lambda");
    let kind = match (w.innermost(), lambda) {
        (Some(ScopeKind::Type), true) => Some(SymbolKind::Method),
        (_, true) => Some(SymbolKind::Function),
        (None, false) => None,
        (Some(ScopeKind::Type), false) => Some(SymbolKind::Field),
        (Some(_), false) => return,
    };
    let Some(left) = node.child_by_field_name("left") else {
        return;
    };
    let targets: Vec<Node<'_>> = match left.kind() {
        "identifier" => vec![left],
        "pattern_list" | "tuple_pattern" | "list_pattern" => {
            let mut cursor = left.walk();
            left.named_children(&mut cursor)
                .filter(|n| n.kind() == "identifier")
                .collect()
        }
        _ => return,
    };
    for target in targets {
        let name = w.name_of(target);
        let kind = kind.unwrap_or_else(|| {
            let constant = name.chars().any(|c| c.is_ascii_uppercase())
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if constant {
                SymbolKind::Constant
            } else {
                SymbolKind::Variable
            }
        });
        w.define(node, target, kind);
    }
}

pub(super) fn reference<'t>(w: &Walker<'_>, node: Node<'t>) -> Option<(RefKind, Option<Node<'t>>)> {
    if node.kind() != "identifier" || w.text(node) == "self" {
        return None;
    }
    let Some(parent) = node.parent() else {
        return Some((RefKind::Other, None));
    };
    Some(match parent.kind() {
        "attribute" if is_field(parent, "attribute", node) => (called(parent), parent.child_by_field_name("object")),
        "call" | "decorator" => (called(node), None),
        // `class A(Base, metaclass=Meta)`: the bases are types.
        "argument_list" if parent.parent().is_some_and(|c| c.kind() == "class_definition") => (RefKind::Type, None),
        _ => (RefKind::Other, None),
    })
}

/// `Call` when `expr` is what a call calls or a decorator names.
fn called(expr: Node<'_>) -> RefKind {
    match expr.parent() {
        Some(p) if p.kind() == "call" && is_field(p, "function", expr) => RefKind::Call,
        Some(p) if p.kind() == "decorator" => RefKind::Call,
        _ => RefKind::Other,
    }
}

/// The first line of a class's or function's docstring.
pub(super) fn doc(w: &Walker<'_>, node: Node<'_>) -> Option<String> {
    let body = node.child_by_field_name("body")?;
    let first = body.named_child(0)?;
    if first.kind() != "expression_statement" {
        return None;
    }
    let string = first.named_child(0)?;
    if string.kind() != "string" {
        return None;
    }
    let mut cursor = string.walk();
    let content: String = string
        .named_children(&mut cursor)
        .filter(|c| c.kind() == "string_content")
        .map(|c| w.text(c).into_owned())
        .collect();
    first_text_line(&content)
}
