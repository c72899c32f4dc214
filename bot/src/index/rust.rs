//! Rust: items and where they stand (`impl`, trait, `mod`, function), `use` trees as imports,
//! `///` docs, and how a name is used (called, a type, a path segment).

use tree_sitter::Node;

use super::walk::{Context, ScopeKind, Walker, first_comment_line, is_field};
use super::{RefKind, SymbolKind};

pub(super) fn enter(w: &mut Walker<'_>, node: Node<'_>) {
    let kind = match node.kind() {
        "function_item" | "function_signature_item" => {
            if w.innermost() == Some(ScopeKind::Type) {
                SymbolKind::Method
            } else {
                SymbolKind::Function
            }
        }
        "struct_item" | "union_item" => SymbolKind::Struct,
        "enum_item" => SymbolKind::Enum,
        "enum_variant" => SymbolKind::EnumMember,
        "field_declaration" => SymbolKind::Field,
        "trait_item" => SymbolKind::Trait,
        "mod_item" => SymbolKind::Module,
        "type_item" | "associated_type" => SymbolKind::TypeAlias,
        "const_item" => SymbolKind::Constant,
        "static_item" => SymbolKind::Static,
        "macro_definition" => SymbolKind::Macro,
        "impl_item" => {
            let name = node.child_by_field_name("type").map(|t| type_name(w, t));
            w.open(node, name, ScopeKind::Type);
            return;
        }
        "use_declaration" => {
            w.context(node, Context::Import);
            if let Some(tree) = node.child_by_field_name("argument") {
                use_tree(w, tree, "", false, node);
            }
            return;
        }
        "extern_crate_declaration" => {
            w.context(node, Context::Import);
            if let Some(name) = node.child_by_field_name("name") {
                let alias = node.child_by_field_name("alias").map(|a| w.name_of(a));
                w.import(w.name_of(name), None, alias, node);
            }
            return;
        }
        "let_declaration" | "parameter" | "for_expression" => {
            if let Some(pattern) = node.child_by_field_name("pattern") {
                bind_pattern(w, pattern);
            }
            return;
        }
        "closure_parameters" => {
            let mut cursor = node.walk();
            let params: Vec<_> = node.named_children(&mut cursor).collect();
            for p in params {
                bind_pattern(w, p);
            }
            return;
        }
        _ => return,
    };
    let Some(name) = node.child_by_field_name("name") else {
        return;
    };
    let text = w.name_of(name);
    let text = text.strip_prefix("r#").map(str::to_owned).unwrap_or(text);
    let container = w.container();
    w.define_as(node, Some(name), text.clone(), kind, container);
    let scope = match kind {
        SymbolKind::Function | SymbolKind::Method if node.kind() == "function_item" => ScopeKind::Function,
        SymbolKind::Struct | SymbolKind::Enum | SymbolKind::EnumMember | SymbolKind::Trait => ScopeKind::Type,
        SymbolKind::Module if node.child_by_field_name("body").is_some() => ScopeKind::Module,
        _ => return,
    };
    w.open(node, Some(text), scope);
}

/// The type an `impl` is for, as a method's container: its last path segment without generics
/// or references (`impl<T> fmt::Debug for &'a foo::Bar<T>` → `Bar`).
fn type_name(w: &Walker<'_>, node: Node<'_>) -> String {
    match node.kind() {
        "type_identifier" | "primitive_type" => w.name_of(node),
        "generic_type" | "reference_type" | "pointer_type" => match node.child_by_field_name("type") {
            Some(inner) => type_name(w, inner),
            None => squeeze(&w.name_of(node)),
        },
        "scoped_type_identifier" => match node.child_by_field_name("name") {
            Some(name) => w.name_of(name),
            None => squeeze(&w.name_of(node)),
        },
        _ => squeeze(&w.name_of(node)),
    }
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The imports of one `use` tree, below `prefix` (the path of the lists it is in).
fn use_tree(w: &mut Walker<'_>, node: Node<'_>, prefix: &str, in_list: bool, at: Node<'_>) {
    let join = |path: &str| {
        if prefix.is_empty() {
            path.to_owned()
        } else if path.is_empty() {
            prefix.to_owned()
        } else {
            format!("{prefix}::{path}")
        }
    };
    match node.kind() {
        "scoped_use_list" => {
            let path = node
                .child_by_field_name("path")
                .map(|p| squeeze(&w.name_of(p)))
                .unwrap_or_default();
            let inner = join(&path);
            if let Some(list) = node.child_by_field_name("list") {
                use_tree(w, list, &inner, true, at);
            }
        }
        "use_list" => {
            let mut cursor = node.walk();
            let items: Vec<_> = node.named_children(&mut cursor).collect();
            for item in items {
                use_tree(w, item, prefix, true, at);
            }
        }
        "use_wildcard" => {
            let path = node.named_child(0).map(|p| squeeze(&w.name_of(p))).unwrap_or_default();
            w.import(join(&path), Some("*".to_owned()), None, at);
        }
        "use_as_clause" => {
            let alias = node.child_by_field_name("alias").map(|a| w.name_of(a));
            if let Some(path) = node.child_by_field_name("path") {
                let (path, name) = split_path(w, path, in_list);
                w.import(join(&path), name, alias, at);
            }
        }
        "scoped_identifier" | "identifier" | "crate" | "self" | "super" | "metavariable" => {
            let (path, name) = split_path(w, node, in_list);
            w.import(join(&path), name, None, at);
        }
        _ => {}
    }
}

/// `a::b::c` → (`a::b`, `c`). A lone name is the whole path at the top of a tree (`use serde;`)
/// and a name below the list's prefix inside one; `self` names the prefix itself.
fn split_path(w: &Walker<'_>, node: Node<'_>, in_list: bool) -> (String, Option<String>) {
    if node.kind() == "scoped_identifier" {
        let path = node
            .child_by_field_name("path")
            .map(|p| squeeze(&w.name_of(p)))
            .unwrap_or_default();
        let name = node.child_by_field_name("name").map(|n| w.name_of(n));
        return match name.as_deref() {
            Some("self") | None => (path, None),
            Some(_) => (path, name),
        };
    }
    let text = w.name_of(node);
    match (in_list, text.as_str()) {
        (true, "self") => (String::new(), None),
        (true, _) => (String::new(), Some(text)),
        (false, _) => (text, None),
    }
}

/// The names a pattern binds are not references.
fn bind_pattern(w: &mut Walker<'_>, pattern: Node<'_>) {
    match pattern.kind() {
        "identifier" => w.bind(pattern),
        "mut_pattern" | "ref_pattern" => {
            if let Some(inner) = pattern.named_child(
                u32::try_from(pattern.named_child_count())
                    .unwrap_or(1)
                    .saturating_sub(1),
            ) {
                bind_pattern(w, inner);
            }
        }
        "parameter" => {
            if let Some(p) = pattern.child_by_field_name("pattern") {
                bind_pattern(w, p);
            }
        }
        "tuple_pattern" => {
            let mut cursor = pattern.walk();
            let items: Vec<_> = pattern.named_children(&mut cursor).collect();
            for item in items {
                bind_pattern(w, item);
            }
        }
        _ => {}
    }
}

pub(super) fn reference<'t>(_w: &Walker<'_>, node: Node<'t>) -> Option<(RefKind, Option<Node<'t>>)> {
    let kind = node.kind();
    if !matches!(
        kind,
        "identifier" | "type_identifier" | "field_identifier" | "shorthand_field_identifier"
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
        // `'a` names a lifetime, not an item.
        "lifetime" => return None,
        "field_expression" if is_field(parent, "field", node) => {
            (called(parent, RefKind::Other), parent.child_by_field_name("value"))
        }
        "scoped_identifier" | "scoped_type_identifier" if is_field(parent, "name", node) => {
            (called(parent, plain), parent.child_by_field_name("path"))
        }
        "call_expression" | "generic_function" | "macro_invocation" => (called(node, plain), None),
        _ => (plain, None),
    })
}

/// `Call` when `expr` is what a call, a turbofish call or a macro invocation calls.
fn called(expr: Node<'_>, otherwise: RefKind) -> RefKind {
    let Some(parent) = expr.parent() else {
        return otherwise;
    };
    match parent.kind() {
        "call_expression" if is_field(parent, "function", expr) => RefKind::Call,
        "macro_invocation" if is_field(parent, "macro", expr) => RefKind::Call,
        "generic_function" if is_field(parent, "function", expr) => called(parent, otherwise),
        _ => otherwise,
    }
}

/// The first line of the `///` or `/** */` doc comments above an item (attributes may stand
/// between).
pub(super) fn doc(w: &Walker<'_>, node: Node<'_>) -> Option<String> {
    let comments = w.comments_above(node, &["attribute_item"]);
    let docs = comments.iter().map(|c| w.text(*c)).filter(|t| {
        (t.starts_with("///") && !t.starts_with("////")) || (t.starts_with("/**") && !t.starts_with("/***"))
    });
    first_comment_line(docs)
}
