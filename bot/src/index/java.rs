//! Java: classes, records, interfaces, enums and annotation types (nested as `Outer.Inner`),
//! methods, constructors, fields, interface constants, enum constants and record components;
//! imports; Javadoc; and how a name is used.

use tree_sitter::Node;

use super::walk::{Context, ScopeKind, Walker, first_comment_line, is_field};
use super::{RefKind, SymbolKind};

pub(super) fn enter(w: &mut Walker<'_>, node: Node<'_>) {
    let kind = match node.kind() {
        "class_declaration" | "record_declaration" => SymbolKind::Class,
        "interface_declaration" | "annotation_type_declaration" => SymbolKind::Interface,
        "enum_declaration" => SymbolKind::Enum,
        "method_declaration" | "annotation_type_element_declaration" => SymbolKind::Method,
        "constructor_declaration" | "compact_constructor_declaration" => SymbolKind::Constructor,
        "enum_constant" => SymbolKind::EnumMember,
        "field_declaration" | "constant_declaration" => {
            let kind = if node.kind() == "field_declaration" {
                SymbolKind::Field
            } else {
                SymbolKind::Constant
            };
            // The first name is the declaration's (its modifiers, doc, type); a later one, perhaps
            // on a line of its own (`A = 0,\n B = 1;`), is its declarator's.
            for (i, name) in declarator_names(node).into_iter().enumerate() {
                let at = match name.parent() {
                    Some(declarator) if i > 0 => declarator,
                    _ => node,
                };
                w.define(at, name, kind);
            }
            return;
        }
        "local_variable_declaration" => {
            for name in declarator_names(node) {
                w.bind(name);
            }
            return;
        }
        "formal_parameter" | "spread_parameter" | "catch_formal_parameter" => {
            let name = node.child_by_field_name("name").or_else(|| {
                // A spread parameter's name is inside its declarator.
                let mut cursor = node.walk();
                let declarator = node
                    .named_children(&mut cursor)
                    .find(|c| c.kind() == "variable_declarator");
                declarator.and_then(|d| d.child_by_field_name("name"))
            });
            let record = node
                .parent()
                .and_then(|p| p.parent())
                .is_some_and(|g| g.kind() == "record_declaration");
            if let Some(name) = name {
                if record {
                    w.define(node, name, SymbolKind::Field);
                } else {
                    w.bind(name);
                }
            }
            return;
        }
        "inferred_parameters" => {
            let mut cursor = node.walk();
            let names: Vec<_> = node.named_children(&mut cursor).collect();
            for name in names {
                w.bind(name);
            }
            return;
        }
        "lambda_expression" => {
            if let Some(p) = node.child_by_field_name("parameters")
                && p.kind() == "identifier"
            {
                w.bind(p);
            }
            return;
        }
        "import_declaration" => {
            w.context(node, Context::Import);
            import(w, node);
            return;
        }
        "package_declaration" => {
            w.context(node, Context::Quiet);
            return;
        }
        _ => return,
    };
    let Some(name) = node.child_by_field_name("name") else {
        // A compact constructor is named by its record.
        return;
    };
    w.define(node, name, kind);
    let scope = match kind {
        SymbolKind::Class | SymbolKind::Interface | SymbolKind::Enum => ScopeKind::Type,
        SymbolKind::Method | SymbolKind::Constructor => ScopeKind::Function,
        _ => return,
    };
    let text = w.name_of(name);
    w.open(node, Some(text), scope);
}

fn declarator_names<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.children_by_field_name("declarator", &mut cursor)
        .filter_map(|d| d.child_by_field_name("name"))
        .collect()
}

/// `import a.b.C;` → `a.b` and `C`; `import a.b.*;` → `a.b` and `*`; `import static a.B.m;` →
/// `a.B` and `m`.
fn import(w: &mut Walker<'_>, node: Node<'_>) {
    let mut cursor = node.walk();
    let children: Vec<_> = node.named_children(&mut cursor).collect();
    let Some(path) = children
        .iter()
        .find(|c| matches!(c.kind(), "scoped_identifier" | "identifier"))
    else {
        return;
    };
    if children.iter().any(|c| c.kind() == "asterisk") {
        w.import(w.name_of(*path), Some("*".to_owned()), None, node);
        return;
    }
    match (path.child_by_field_name("scope"), path.child_by_field_name("name")) {
        (Some(scope), Some(name)) => w.import(w.name_of(scope), Some(w.name_of(name)), None, node),
        _ => w.import(w.name_of(*path), None, None, node),
    }
}

pub(super) fn reference<'t>(_w: &Walker<'_>, node: Node<'t>) -> Option<(RefKind, Option<Node<'t>>)> {
    let kind = node.kind();
    if !matches!(kind, "identifier" | "type_identifier") {
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
        "method_invocation" if is_field(parent, "name", node) => (RefKind::Call, parent.child_by_field_name("object")),
        "field_access" if is_field(parent, "field", node) => (RefKind::Other, parent.child_by_field_name("object")),
        "scoped_identifier" if is_field(parent, "name", node) => (plain, parent.child_by_field_name("scope")),
        // `Map.Entry`: the last name, qualified by what comes before it.
        "scoped_type_identifier" => {
            let qualifier = parent.named_child(0).filter(|q| q.id() != node.id());
            (RefKind::Type, qualifier)
        }
        "object_creation_expression" => (RefKind::Call, None),
        "generic_type"
            if parent
                .parent()
                .is_some_and(|g| g.kind() == "object_creation_expression") =>
        {
            (RefKind::Call, None)
        }
        "marker_annotation" | "annotation" => (RefKind::Type, None),
        _ => (plain, None),
    })
}

/// The first line of the Javadoc block (`/** … */`) right above the declaration.
pub(super) fn doc(w: &Walker<'_>, node: Node<'_>) -> Option<String> {
    let comments = w.comments_above(node, &[]);
    let last = comments.last()?;
    let text = w.text(*last);
    text.starts_with("/**").then(|| first_comment_line([text])).flatten()
}
