//! TypeScript, TSX and JavaScript (one rule set: the TypeScript grammars extend JavaScript's):
//! functions and overload signatures, functions bound to names (`const f = () => …`, object
//! members, CommonJS `exports.f = function …`, `A.prototype.m = …`), classes and their members,
//! interfaces, type aliases, enums, namespaces, module-level constants; ES imports, re-exports,
//! `require` and `import()` as imports; JSDoc; and how a name is used.

use tree_sitter::Node;

use super::walk::{Context, ScopeKind, Walker, first_comment_line, is_field};
use super::{RefKind, SymbolKind};

pub(super) fn enter(w: &mut Walker<'_>, node: Node<'_>) {
    match node.kind() {
        "function_declaration" | "generator_function_declaration" | "function_signature" => {
            let name = match node.child_by_field_name("name") {
                Some(name) => {
                    w.define(node, name, SymbolKind::Function);
                    Some(w.name_of(name))
                }
                None => default_export(w, node, SymbolKind::Function),
            };
            if node.kind() != "function_signature" {
                w.open(node, name, ScopeKind::Function);
            }
        }
        "function_expression" | "function" | "generator_function" | "arrow_function" => {
            if let Some(own) = node.child_by_field_name("name") {
                w.bind(own);
            }
            let name = match value_name(w, node) {
                Some(name) => Some(name),
                None => default_export(w, node, SymbolKind::Function),
            };
            w.open(node, name, ScopeKind::Function);
        }
        "class_declaration" | "abstract_class_declaration" | "class" => {
            let name = match node.child_by_field_name("name") {
                Some(name) if node.kind() != "class" || value_name(w, node).is_none() => {
                    w.define(node, name, SymbolKind::Class);
                    Some(w.name_of(name))
                }
                Some(name) => {
                    w.bind(name);
                    value_name(w, node)
                }
                None => match value_name(w, node) {
                    Some(name) => Some(name),
                    None => default_export(w, node, SymbolKind::Class),
                },
            };
            w.open(node, name, ScopeKind::Type);
        }
        "method_definition" => {
            if let Some(name) = node.child_by_field_name("name") {
                let text = property_name(w, name);
                let kind = if text == "constructor" && w.innermost() == Some(ScopeKind::Type) {
                    SymbolKind::Constructor
                } else {
                    SymbolKind::Method
                };
                let container = w.container();
                w.define_as(node, Some(name), text.clone(), kind, container);
                w.open(node, Some(text), ScopeKind::Function);
            }
        }
        // Members of an interface, or of an object type a type alias names; an object type in a
        // parameter or a variable's annotation has no name to hang them on.
        "method_signature" | "abstract_method_signature" | "property_signature"
            if w.innermost() == Some(ScopeKind::Type) =>
        {
            let kind = if node.kind() == "property_signature" {
                SymbolKind::Field
            } else {
                SymbolKind::Method
            };
            define_member(w, node, "name", kind);
        }
        "public_field_definition" | "field_definition" => {
            let field = if node.kind() == "field_definition" {
                "property"
            } else {
                "name"
            };
            let kind = match node.child_by_field_name("value") {
                Some(v) if is_function(v) => SymbolKind::Method,
                _ => SymbolKind::Field,
            };
            define_member(w, node, field, kind);
        }
        "interface_declaration" => define_scope(w, node, SymbolKind::Interface, ScopeKind::Type),
        "type_alias_declaration" => define_scope(w, node, SymbolKind::TypeAlias, ScopeKind::Type),
        "enum_declaration" => define_scope(w, node, SymbolKind::Enum, ScopeKind::Type),
        "enum_body" => {
            let mut cursor = node.walk();
            let members: Vec<_> = node.named_children(&mut cursor).collect();
            for member in members {
                match member.kind() {
                    "property_identifier" => w.define(member, member, SymbolKind::EnumMember),
                    "enum_assignment" => define_member(w, member, "name", SymbolKind::EnumMember),
                    _ => {}
                }
            }
        }
        "internal_module" | "module" => {
            if let Some(name) = node.child_by_field_name("name") {
                let text = property_name(w, name);
                let container = w.container();
                w.define_as(node, Some(name), text.clone(), SymbolKind::Module, container);
                w.open(node, Some(text), ScopeKind::Module);
            }
        }
        "lexical_declaration" | "variable_declaration" => declaration(w, node),
        "object" => {
            // The members of `const api = { get() {…} }` are `api`'s methods.
            if let Some(parent) = node.parent()
                && parent.kind() == "variable_declarator"
                && is_field(parent, "value", node)
                && let Some(name) = parent.child_by_field_name("name")
                && name.kind() == "identifier"
            {
                let text = w.name_of(name);
                w.open(node, Some(text), ScopeKind::Type);
            }
        }
        "pair" => {
            if let (Some(key), Some(value)) = (node.child_by_field_name("key"), node.child_by_field_name("value"))
                && is_function(value)
                && matches!(key.kind(), "property_identifier" | "string")
            {
                let kind = if w.innermost() == Some(ScopeKind::Type) {
                    SymbolKind::Method
                } else {
                    SymbolKind::Function
                };
                let text = property_name(w, key);
                let container = w.container();
                w.define_as(node, Some(key), text, kind, container);
            }
        }
        "assignment_expression" => commonjs(w, node),
        "call_expression" => require(w, node),
        "import_statement" => {
            w.context(node, Context::Import);
            import_statement(w, node);
        }
        "export_statement" => {
            if let Some(source) = node.child_by_field_name("source") {
                w.context(node, Context::Import);
                reexport(w, node, source);
            }
        }
        "formal_parameters" => {
            let mut cursor = node.walk();
            let params: Vec<_> = node.named_children(&mut cursor).collect();
            for param in params {
                bind_parameter(w, param);
            }
        }
        "catch_clause" => {
            if let Some(p) = node.child_by_field_name("parameter") {
                bind_parameter(w, p);
            }
        }
        _ => {}
    }
}

fn define_member(w: &mut Walker<'_>, node: Node<'_>, field: &str, kind: SymbolKind) {
    if let Some(name) = node.child_by_field_name(field) {
        let text = property_name(w, name);
        let container = w.container();
        w.define_as(node, Some(name), text, kind, container);
    }
}

fn define_scope(w: &mut Walker<'_>, node: Node<'_>, kind: SymbolKind, scope: ScopeKind) {
    if let Some(name) = node.child_by_field_name("name") {
        w.define(node, name, kind);
        let text = w.name_of(name);
        w.open(node, Some(text), scope);
    }
}

/// `export default function () {}` and `export default class {}` are named `default`.
fn default_export(w: &mut Walker<'_>, node: Node<'_>, kind: SymbolKind) -> Option<String> {
    if node.parent()?.kind() != "export_statement" {
        return None;
    }
    let container = w.container();
    w.define_as(node, None, "default".to_owned(), kind, container);
    Some("default".to_owned())
}

fn is_function(node: Node<'_>) -> bool {
    matches!(
        node.kind(),
        "arrow_function" | "function_expression" | "function" | "generator_function"
    )
}

/// A property's name: a string key or module name without its quotes.
fn property_name(w: &Walker<'_>, node: Node<'_>) -> String {
    let text = w.name_of(node);
    if node.kind() == "string" {
        return text.trim_matches(|c| c == '"' || c == '\'' || c == '`').to_owned();
    }
    text
}

/// The name a function or class value is bound to where it stands: `const f = …`, `f: …`,
/// `x.f = …`, a class field `f = …`.
fn value_name(w: &Walker<'_>, node: Node<'_>) -> Option<String> {
    let parent = node.parent()?;
    let name = match parent.kind() {
        "variable_declarator" if is_field(parent, "value", node) => parent.child_by_field_name("name")?,
        "pair" if is_field(parent, "value", node) => parent.child_by_field_name("key")?,
        "assignment_expression" if is_field(parent, "right", node) => {
            let left = parent.child_by_field_name("left")?;
            match left.kind() {
                "member_expression" => left.child_by_field_name("property")?,
                _ => left,
            }
        }
        "public_field_definition" => parent.child_by_field_name("name")?,
        "field_definition" => parent.child_by_field_name("property")?,
        _ => return None,
    };
    matches!(
        name.kind(),
        "identifier" | "property_identifier" | "private_property_identifier" | "string"
    )
    .then(|| property_name(w, name))
}

/// `const`/`let`/`var`: functions and classes bound to a name anywhere, other values only at
/// module level (in a function they are locals).
fn declaration(w: &mut Walker<'_>, node: Node<'_>) {
    let constant = node.child(0).is_some_and(|k| k.kind() == "const");
    let mut cursor = node.walk();
    let declarators: Vec<_> = node
        .named_children(&mut cursor)
        .filter(|d| d.kind() == "variable_declarator")
        .collect();
    for declarator in declarators {
        let Some(name) = declarator.child_by_field_name("name") else {
            continue;
        };
        if name.kind() != "identifier" {
            bind_pattern(w, name);
            continue;
        }
        let value = declarator.child_by_field_name("value");
        let kind = match value {
            Some(v) if is_function(v) => SymbolKind::Function,
            Some(v) if v.kind() == "class" => SymbolKind::Class,
            Some(v) if is_require(w, v) => {
                w.bind(name);
                continue;
            }
            _ if w.in_function() => {
                w.bind(name);
                continue;
            }
            _ if constant => SymbolKind::Constant,
            _ => SymbolKind::Variable,
        };
        w.define(declarator, name, kind);
    }
}

/// CommonJS and prototype assignments at module level: `exports.f = …`, `module.exports.f = …`,
/// `A.prototype.m = function …`, `A.f = function …`.
fn commonjs(w: &mut Walker<'_>, node: Node<'_>) {
    if w.in_function() || node.parent().is_none_or(|p| p.kind() != "expression_statement") {
        return;
    }
    let (Some(left), Some(right)) = (node.child_by_field_name("left"), node.child_by_field_name("right")) else {
        return;
    };
    if left.kind() != "member_expression" {
        return;
    }
    let (Some(object), Some(property)) = (left.child_by_field_name("object"), left.child_by_field_name("property"))
    else {
        return;
    };
    let object_text = w.text(object);
    let function = is_function(right);
    let (kind, container) = if object_text == "exports" || object_text == "module.exports" {
        let kind = if function {
            SymbolKind::Function
        } else if right.kind() == "class" {
            SymbolKind::Class
        } else {
            SymbolKind::Variable
        };
        (kind, None)
    } else if object.kind() == "member_expression"
        && object
            .child_by_field_name("property")
            .is_some_and(|p| w.text(p) == "prototype")
        && function
    {
        let class = object.child_by_field_name("object").map(|o| w.name_of(o));
        (SymbolKind::Method, class)
    } else if function && object.kind() == "identifier" && object_text != "module" {
        (SymbolKind::Function, Some(w.name_of(object)))
    } else {
        return;
    };
    let name = w.name_of(property);
    w.define_as(node, Some(property), name, kind, container);
}

fn is_require(w: &Walker<'_>, node: Node<'_>) -> bool {
    node.kind() == "call_expression"
        && node
            .child_by_field_name("function")
            .is_some_and(|f| f.kind() == "identifier" && w.text(f) == "require")
}

/// `require("m")` and `import("m")`, with the names a declaration binds from them.
fn require(w: &mut Walker<'_>, node: Node<'_>) {
    let Some(function) = node.child_by_field_name("function") else {
        return;
    };
    if !(function.kind() == "import" || is_require(w, node)) {
        return;
    }
    let Some(path) = node
        .child_by_field_name("arguments")
        .and_then(|a| a.named_child(0))
        .filter(|s| s.kind() == "string")
        .map(|s| string_value(w, s))
    else {
        return;
    };
    let target = node
        .parent()
        .filter(|p| p.kind() == "variable_declarator" && is_field(*p, "value", node))
        .and_then(|p| p.child_by_field_name("name"));
    match target {
        Some(name) if name.kind() == "identifier" => {
            let alias = w.name_of(name);
            w.import(path, None, Some(alias), node);
        }
        Some(pattern) if pattern.kind() == "object_pattern" => {
            let mut cursor = pattern.walk();
            let items: Vec<_> = pattern.named_children(&mut cursor).collect();
            for item in items {
                match item.kind() {
                    "shorthand_property_identifier_pattern" => {
                        let name = w.name_of(item);
                        w.import(path.clone(), Some(name), None, node);
                    }
                    "pair_pattern" => {
                        let name = item.child_by_field_name("key").map(|k| property_name(w, k));
                        let alias = item
                            .child_by_field_name("value")
                            .filter(|v| v.kind() == "identifier")
                            .map(|v| w.name_of(v));
                        w.import(path.clone(), name, alias, node);
                    }
                    _ => {}
                }
            }
        }
        _ => w.import(path, None, None, node),
    }
}

fn string_value(w: &Walker<'_>, node: Node<'_>) -> String {
    property_name(w, node)
}

fn import_statement(w: &mut Walker<'_>, node: Node<'_>) {
    let mut cursor = node.walk();
    let children: Vec<_> = node.named_children(&mut cursor).collect();
    let source = node.child_by_field_name("source").map(|s| string_value(w, s));
    let mut any = false;
    for child in children {
        match child.kind() {
            "import_clause" => {
                if let Some(path) = &source {
                    any |= import_clause(w, child, path, node);
                }
            }
            "import_require_clause" => {
                let path = child.child_by_field_name("source").map(|s| string_value(w, s));
                let alias = child
                    .named_child(0)
                    .filter(|n| n.kind() == "identifier")
                    .map(|n| w.name_of(n));
                if let Some(path) = path {
                    w.import(path, None, alias, node);
                    any = true;
                }
            }
            _ => {}
        }
    }
    if !any && let Some(path) = source {
        w.import(path, None, None, node);
    }
}

fn import_clause(w: &mut Walker<'_>, clause: Node<'_>, path: &str, at: Node<'_>) -> bool {
    let mut any = false;
    let mut cursor = clause.walk();
    let parts: Vec<_> = clause.named_children(&mut cursor).collect();
    for part in parts {
        match part.kind() {
            "identifier" => {
                let alias = w.name_of(part);
                w.import(path.to_owned(), Some("default".to_owned()), Some(alias), at);
                any = true;
            }
            "namespace_import" => {
                let alias = part.named_child(0).map(|n| w.name_of(n));
                w.import(path.to_owned(), Some("*".to_owned()), alias, at);
                any = true;
            }
            "named_imports" => {
                let mut inner = part.walk();
                let specifiers: Vec<_> = part
                    .named_children(&mut inner)
                    .filter(|s| s.kind() == "import_specifier")
                    .collect();
                for spec in specifiers {
                    let name = spec.child_by_field_name("name").map(|n| property_name(w, n));
                    let alias = spec.child_by_field_name("alias").map(|a| w.name_of(a));
                    w.import(path.to_owned(), name, alias, at);
                    any = true;
                }
            }
            _ => {}
        }
    }
    any
}

/// `export { a as b } from "m"`, `export * from "m"`, `export * as ns from "m"`.
fn reexport(w: &mut Walker<'_>, node: Node<'_>, source: Node<'_>) {
    let path = string_value(w, source);
    let mut cursor = node.walk();
    let children: Vec<_> = node.children(&mut cursor).collect();
    let mut any = false;
    for child in children {
        match child.kind() {
            "export_clause" => {
                let mut inner = child.walk();
                let specifiers: Vec<_> = child
                    .named_children(&mut inner)
                    .filter(|s| s.kind() == "export_specifier")
                    .collect();
                for spec in specifiers {
                    let name = spec.child_by_field_name("name").map(|n| property_name(w, n));
                    let alias = spec.child_by_field_name("alias").map(|a| w.name_of(a));
                    w.import(path.clone(), name, alias, node);
                    any = true;
                }
            }
            "namespace_export" => {
                let alias = child.named_child(0).map(|n| w.name_of(n));
                w.import(path.clone(), Some("*".to_owned()), alias, node);
                any = true;
            }
            "*" => {
                w.import(path.clone(), Some("*".to_owned()), None, node);
                any = true;
            }
            _ => {}
        }
    }
    if !any {
        w.import(path, None, None, node);
    }
}

fn bind_parameter(w: &mut Walker<'_>, param: Node<'_>) {
    match param.kind() {
        "identifier" => w.bind(param),
        "required_parameter" | "optional_parameter" => {
            if let Some(p) = param.child_by_field_name("pattern") {
                bind_pattern(w, p);
            }
        }
        _ => bind_pattern(w, param),
    }
}

fn bind_pattern(w: &mut Walker<'_>, pattern: Node<'_>) {
    match pattern.kind() {
        "identifier" | "shorthand_property_identifier_pattern" => w.bind(pattern),
        "assignment_pattern" => {
            if let Some(left) = pattern.child_by_field_name("left") {
                bind_pattern(w, left);
            }
        }
        "pair_pattern" => {
            if let Some(value) = pattern.child_by_field_name("value") {
                bind_pattern(w, value);
            }
        }
        "object_pattern" | "array_pattern" | "rest_pattern" => {
            let mut cursor = pattern.walk();
            let items: Vec<_> = pattern.named_children(&mut cursor).collect();
            for item in items {
                bind_pattern(w, item);
            }
        }
        _ => {}
    }
}

pub(super) fn reference<'t>(w: &Walker<'_>, node: Node<'t>) -> Option<(RefKind, Option<Node<'t>>)> {
    let kind = node.kind();
    if !matches!(
        kind,
        "identifier"
            | "property_identifier"
            | "shorthand_property_identifier"
            | "private_property_identifier"
            | "type_identifier"
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
        "member_expression" if is_field(parent, "property", node) => {
            (called(parent), parent.child_by_field_name("object"))
        }
        "nested_type_identifier" if is_field(parent, "name", node) => {
            (RefKind::Type, parent.child_by_field_name("module"))
        }
        "call_expression" | "new_expression" | "decorator" => (called(node), None),
        // `class A extends B`: JavaScript's heritage is an expression, TypeScript's a clause.
        "class_heritage" | "extends_clause" => (RefKind::Type, None),
        // `<Button/>` uses a component; `<div>` is not a name in the program.
        "jsx_opening_element" | "jsx_self_closing_element" => {
            if w.text(node).starts_with(|c: char| c.is_ascii_uppercase()) {
                (RefKind::Call, None)
            } else {
                return None;
            }
        }
        "jsx_closing_element" => return None,
        _ => (plain, None),
    })
}

/// `Call` when `expr` is what a call, `new` or a decorator calls.
fn called(expr: Node<'_>) -> RefKind {
    match expr.parent() {
        Some(p) if p.kind() == "call_expression" && is_field(p, "function", expr) => RefKind::Call,
        Some(p) if p.kind() == "new_expression" && is_field(p, "constructor", expr) => RefKind::Call,
        Some(p) if p.kind() == "decorator" => RefKind::Call,
        _ => RefKind::Other,
    }
}

/// The first line of the JSDoc block (`/** … */`) right above the declaration, or above the
/// statement it is part of (`export …`, `const …`).
pub(super) fn doc(w: &Walker<'_>, node: Node<'_>) -> Option<String> {
    let mut statement = node;
    while let Some(parent) = statement.parent() {
        let wraps = match parent.kind() {
            "export_statement" | "ambient_declaration" | "expression_statement" => true,
            // The first declarator of `const a = …, b = …` only.
            "lexical_declaration" | "variable_declaration" => parent
                .named_children(&mut parent.walk())
                .next()
                .is_some_and(|d| d.id() == statement.id()),
            _ => false,
        };
        if !wraps {
            break;
        }
        statement = parent;
    }
    let comments = w.comments_above(statement, &["decorator"]);
    let last = comments.last()?;
    let text = w.text(*last);
    text.starts_with("/**").then(|| first_comment_line([text])).flatten()
}
