//! Go: functions, methods (their receiver type as container), struct, interface and other type
//! declarations with their fields and methods, package-level constants and variables, imports,
//! the `//` comment block above a declaration, and how a name is used.

use tree_sitter::Node;

use super::walk::{Context, ScopeKind, Walker, first_comment_line, is_field};
use super::{RefKind, SymbolKind};

pub(super) fn enter(w: &mut Walker<'_>, node: Node<'_>) {
    match node.kind() {
        "function_declaration" => {
            if let Some(name) = node.child_by_field_name("name") {
                w.define(node, name, SymbolKind::Function);
                let text = w.name_of(name);
                w.open(node, Some(text), ScopeKind::Function);
            }
        }
        "method_declaration" => {
            if let Some(name) = node.child_by_field_name("name") {
                let receiver = node.child_by_field_name("receiver").and_then(|r| receiver_type(w, r));
                let text = w.name_of(name);
                w.define_as(node, Some(name), text.clone(), SymbolKind::Method, receiver.clone());
                let scope = match receiver {
                    Some(r) => format!("{r}.{text}"),
                    None => text,
                };
                w.open(node, Some(scope), ScopeKind::Function);
            }
        }
        "func_literal" => w.open(node, None, ScopeKind::Function),
        "type_spec" => {
            if let Some(name) = node.child_by_field_name("name") {
                let kind = match node.child_by_field_name("type").map(|t| t.kind()) {
                    Some("struct_type") => SymbolKind::Struct,
                    Some("interface_type") => SymbolKind::Interface,
                    _ => SymbolKind::TypeAlias,
                };
                w.define(node, name, kind);
                let text = w.name_of(name);
                w.open(node, Some(text), ScopeKind::Type);
            }
        }
        "type_alias" => {
            if let Some(name) = node.child_by_field_name("name") {
                w.define(node, name, SymbolKind::TypeAlias);
            }
        }
        // Fields of a named struct type (an anonymous struct's are not indexed).
        "field_declaration" if w.innermost() == Some(ScopeKind::Type) => {
            let names = names(node);
            if names.is_empty() {
                // An embedded field is named by its type: `struct{ *pkg.Reader }` has `Reader`.
                if let Some(name) = node.child_by_field_name("type").and_then(embedded_name) {
                    w.define(node, name, SymbolKind::Field);
                }
            }
            for name in names {
                w.define(node, name, SymbolKind::Field);
            }
        }
        "method_elem" if w.innermost() == Some(ScopeKind::Type) => {
            if let Some(name) = node.child_by_field_name("name") {
                w.define(node, name, SymbolKind::Method);
            }
        }
        "const_spec" | "var_spec" => {
            let kind = if node.kind() == "const_spec" {
                SymbolKind::Constant
            } else {
                SymbolKind::Variable
            };
            let local = w.in_function();
            for name in names(node) {
                if local {
                    w.bind(name);
                } else {
                    w.define(node, name, kind);
                }
            }
        }
        "short_var_declaration" | "range_clause" => {
            if let Some(left) = node.child_by_field_name("left") {
                let mut cursor = left.walk();
                let targets: Vec<_> = left
                    .named_children(&mut cursor)
                    .filter(|n| n.kind() == "identifier")
                    .collect();
                for target in targets {
                    w.bind(target);
                }
            }
        }
        "parameter_declaration" | "variadic_parameter_declaration" | "type_parameter_declaration" => {
            for name in names(node) {
                w.bind(name);
            }
        }
        "import_declaration" => w.context(node, Context::Import),
        "import_spec" => {
            if let Some(path) = node.child_by_field_name("path") {
                let path = w.name_of(path).trim_matches(|c| c == '"' || c == '`').to_owned();
                let alias = node.child_by_field_name("name").map(|n| w.name_of(n));
                w.import(path, None, alias, node);
            }
        }
        "package_clause" => w.context(node, Context::Quiet),
        _ => {}
    }
}

/// The named `name` children (`a, b int` has two).
fn names<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.children_by_field_name("name", &mut cursor)
        .filter(|n| n.is_named())
        .collect()
}

/// The type name node of an embedded field's type.
fn embedded_name(ty: Node<'_>) -> Option<Node<'_>> {
    match ty.kind() {
        "type_identifier" => Some(ty),
        "pointer_type" => ty.named_child(0).and_then(embedded_name),
        "qualified_type" => ty.child_by_field_name("name"),
        "generic_type" => ty.child_by_field_name("type").and_then(embedded_name),
        _ => None,
    }
}

/// The receiver's type name: `(p *Point)` → `Point`, `(l List[T])` → `List`.
fn receiver_type(w: &Walker<'_>, receiver: Node<'_>) -> Option<String> {
    let param = receiver.named_child(0)?;
    let mut ty = param.child_by_field_name("type")?;
    loop {
        match ty.kind() {
            "pointer_type" | "parenthesized_type" => ty = ty.named_child(0)?,
            "generic_type" => ty = ty.child_by_field_name("type")?,
            _ => return Some(w.name_of(ty)),
        }
    }
}

pub(super) fn reference<'t>(_w: &Walker<'_>, node: Node<'t>) -> Option<(RefKind, Option<Node<'t>>)> {
    let kind = node.kind();
    if !matches!(
        kind,
        "identifier" | "type_identifier" | "field_identifier" | "package_identifier"
    ) {
        return None;
    }
    let plain = if kind == "type_identifier" {
        RefKind::Type
    } else {
        RefKind::Other
    };
    let Some(parent) = node.parent() else {
        return Some((plain, None));
    };
    Some(match parent.kind() {
        "selector_expression" if is_field(parent, "field", node) => {
            (called(parent), parent.child_by_field_name("operand"))
        }
        "qualified_type" if is_field(parent, "name", node) => (RefKind::Type, parent.child_by_field_name("package")),
        "call_expression" => (called(node), None),
        _ => (plain, None),
    })
}

fn called(expr: Node<'_>) -> RefKind {
    match expr.parent() {
        Some(p) if p.kind() == "call_expression" && is_field(p, "function", expr) => RefKind::Call,
        _ => RefKind::Other,
    }
}

/// The first line of the `//` comment block right above the declaration (above its `type`,
/// `const` or `var` keyword when it is the only or first spec there).
pub(super) fn doc(w: &Walker<'_>, node: Node<'_>) -> Option<String> {
    let mut comments = w.comments_above(node, &[]);
    if comments.is_empty()
        && let Some(parent) = node.parent()
        && matches!(
            parent.kind(),
            "type_declaration" | "const_declaration" | "var_declaration"
        )
        && parent.start_position().row == node.start_position().row
    {
        comments = w.comments_above(parent, &[]);
    }
    first_comment_line(comments.iter().map(|c| w.text(*c)))
}
