//! GitHub's GraphQL API in the fake: `POST /graphql`, checked against GitHub's published schema
//! (`../shared/fixtures/github-graphql/schema.graphql`, parsed once per process by
//! `apollo-compiler`) and executed by `apollo-compiler`'s executor over a small graph of objects
//! built from the state.
//!
//! A request is checked as GitHub checks it before running anything ([`check_request`]): a JSON
//! body of `query`, `variables` and `operationName` only; a query that parses and validates
//! against the schema (unknown fields, arguments of the wrong type, unused or undeclared
//! variables…); the operation it names; variables of their declared types. A request that fails is
//! a *violation*, answered as GitHub answers it: 200 with `errors` and no `data`.
//!
//! The fake then answers the operations it supports (`review_threads.rs`: a repository's pull
//! request's review threads, resolving one) by executing the query over `Obj`s: each holds the
//! fields the fake serves for its type, and the executor keeps what the selection set asks for
//! (aliases, `__typename`, fragments included) and checks every value against the schema's types.
//! Connections are paged like GitHub's (`first`/`last` of at most 100, opaque cursors). A field the
//! schema has but the fake does not serve, a root field or mutation it does not implement, and
//! paging GitHub refuses are violations too, never a made-up answer; a lookup that finds nothing is
//! GitHub's `NOT_FOUND` error, which is not.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use apollo_compiler::executable::OperationType;
use apollo_compiler::request::coerce_variable_values;
use apollo_compiler::resolvers::{Execution, FieldError, ObjectValue, ResolveInfo, ResolvedValue};
use apollo_compiler::response::{JsonMap, JsonValue};
use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Schema};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::openapi::fixtures_root;
use super::review_threads;
use super::state::GithubState;

/// The one path of the API.
pub const PATH: &str = "/graphql";

/// GitHub's schema, relative to the fixtures directory.
const SCHEMA_FILE: &str = "github-graphql/schema.graphql";

/// GitHub's largest page of a connection.
const MAX_PAGE: i64 = 100;

/// The members of a request body GitHub reads.
const BODY_MEMBERS: [&str; 3] = ["query", "variables", "operationName"];

static SCHEMA: OnceLock<Result<Valid<Schema>, String>> = OnceLock::new();

/// GitHub's published schema, parsed and validated on first use and shared by the whole process.
///
/// # Errors
/// When the file cannot be read or does not hold a schema.
pub fn schema() -> Result<&'static Valid<Schema>, String> {
    SCHEMA
        .get_or_init(|| {
            let path = fixtures_root().join(SCHEMA_FILE);
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            match Schema::parse_and_validate(text, SCHEMA_FILE) {
                Ok(schema) => Ok(schema),
                // GitHub's published schema defines two fields of `EnterpriseOwnerInfo` twice
                // (`repositoryDeployKeySetting…`); the parser keeps the first definition. That
                // alone is forgiven: anything else means the file is not GitHub's schema.
                Err(with_errors)
                    if with_errors
                        .errors
                        .iter()
                        .all(|d| d.to_json().message.starts_with("duplicate definitions for the ")) =>
                {
                    Ok(Valid::assume_valid(with_errors.partial))
                }
                Err(with_errors) => Err(format!("{}: {}", path.display(), with_errors.errors)),
            }
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A request GitHub would run: its document, valid against the schema, the operation it names and
/// its variables, coerced to their declared types.
#[derive(Debug)]
pub struct CheckedRequest {
    document: Valid<ExecutableDocument>,
    operation_name: Option<String>,
    variables: Valid<JsonMap>,
}

impl CheckedRequest {
    /// The operation's name, or `query`/`mutation` for an anonymous one.
    pub fn operation_label(&self) -> String {
        match self.operation() {
            Some(operation) => operation
                .name
                .as_ref()
                .map_or_else(|| operation.operation_type.to_string(), |name| name.to_string()),
            None => String::new(),
        }
    }

    /// Whether the operation is a mutation.
    pub fn is_mutation(&self) -> bool {
        self.operation()
            .is_some_and(|o| o.operation_type == OperationType::Mutation)
    }

    fn operation(&self) -> Option<&apollo_compiler::executable::Operation> {
        self.document
            .operations
            .get(self.operation_name.as_deref())
            .ok()
            .map(|node| &**node)
    }
}

/// Checks a `POST /graphql` body as GitHub does before it runs anything. `Err` holds GitHub-shaped
/// error objects (`message`, and `locations` where the query has them).
///
/// # Errors
/// When the body is not a GraphQL request, the query does not fit the schema, names no operation
/// it holds, or a variable is missing or of the wrong type.
pub fn check_request(body: &Value) -> Result<CheckedRequest, Vec<Value>> {
    let refuse = |message: String| vec![json!({ "message": message })];
    let schema = schema().map_err(|e| refuse(format!("the fake GitHub has no GraphQL schema: {e}")))?;
    let Some(object) = body.as_object() else {
        return Err(refuse("Problems parsing JSON".to_owned()));
    };
    if let Some(other) = object.keys().find(|k| !BODY_MEMBERS.contains(&k.as_str())) {
        return Err(refuse(format!(
            "a GraphQL request holds `query`, `variables` and `operationName`; GitHub does not read `{other}`"
        )));
    }
    let Some(query) = object.get("query").and_then(Value::as_str) else {
        return Err(refuse(
            "A query attribute must be specified and must be a string.".to_owned(),
        ));
    };
    let variables = match object.get("variables") {
        None | Some(Value::Null) => JsonMap::new(),
        Some(Value::Object(map)) => match JsonValue::from(Value::Object(map.clone())) {
            JsonValue::Object(map) => map,
            _ => JsonMap::new(),
        },
        Some(_) => return Err(refuse("Variables are invalid JSON.".to_owned())),
    };
    let operation_name = match object.get("operationName") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(name.clone()),
        Some(_) => return Err(refuse("`operationName` must be a string".to_owned())),
    };
    let document = ExecutableDocument::parse_and_validate(schema, query, "query.graphql").map_err(|invalid| {
        invalid
            .errors
            .iter()
            .map(|d| serde_json::to_value(d.to_json()).unwrap_or_else(|_| json!({"message": d.to_string()})))
            .collect::<Vec<Value>>()
    })?;
    let operation = document
        .operations
        .get(operation_name.as_deref())
        .map_err(|e| refuse(e.message().to_string()))?;
    let variables =
        coerce_variable_values(schema, operation, &variables).map_err(|e| refuse(e.message().to_string()))?;
    Ok(CheckedRequest {
        document,
        operation_name,
        variables,
    })
}

/// The messages of GitHub-shaped error objects, one line.
pub fn messages(errors: &[Value]) -> String {
    errors
        .iter()
        .map(|e| {
            let message = e["message"].as_str().unwrap_or("(no message)");
            match (e["locations"][0]["line"].as_u64(), e["locations"][0]["column"].as_u64()) {
                (Some(line), Some(column)) => format!("{message} (at {line}:{column})"),
                _ => message.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// What the fake answers a GraphQL request, the operation's label for the record, and what was
/// wrong with it.
pub(crate) struct Served {
    pub answer: Value,
    pub operation: Option<String>,
    pub violations: Vec<String>,
}

/// Checks and runs one request as `login`.
pub(crate) fn serve(state: &mut GithubState, login: &str, body: &Value) -> Served {
    let request = match check_request(body) {
        Ok(request) => request,
        Err(errors) => {
            return Served {
                violations: vec![format!("GitHub would refuse the request: {}", messages(&errors))],
                answer: json!({ "errors": errors }),
                operation: None,
            };
        }
    };
    let label = request.operation_label();
    let sink = Sink::default();
    let executed = match schema() {
        Err(error) => Err(error),
        Ok(schema) => {
            let execution = Execution::new(schema, &request.document)
                .operation_name(request.operation_name.as_deref())
                .map(|execution| execution.coerced_variable_values(&request.variables));
            match execution {
                Err(error) => Err(error.message().to_string()),
                Ok(execution) if request.is_mutation() => {
                    let root = Mutations {
                        state: RefCell::new(state),
                        login,
                        sink: &sink,
                    };
                    execution.execute_sync(&root).map_err(|e| e.message().to_string())
                }
                Ok(execution) => {
                    let root = Bound {
                        obj: Cow::Owned(review_threads::query_root(state)),
                        sink: &sink,
                    };
                    execution.execute_sync(&root).map_err(|e| e.message().to_string())
                }
            }
        }
    };
    let mut answer = match executed {
        Ok(response) => serde_json::to_value(&response).unwrap_or(Value::Null),
        Err(message) => {
            sink.violations.borrow_mut().push(format!("executing it: {message}"));
            json!({ "errors": [{ "message": message }] })
        }
    };
    let not_found = sink.not_found.take();
    let mut violations = sink.violations.take();
    let known: Vec<String> = violations.clone();
    // (`get_mut`, not indexing: that would add `"errors": null` to an answer without errors.)
    for error in answer
        .get_mut("errors")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let mut message = error["message"].as_str().unwrap_or_default().to_owned();
        // The executor prefixes what a resolver refused; GitHub's messages stand alone.
        if let Some(own) = message.strip_prefix("resolver error: ") {
            message = own.to_owned();
            error["message"] = json!(message);
        }
        if not_found.contains(&message) {
            // GitHub's errors name their kind in `type`, beside the spec's members.
            error["type"] = json!("NOT_FOUND");
        } else if !known.iter().any(|k| k.contains(&message)) {
            // The executor refused a value the fake gave: the fake's own bug.
            violations.push(format!("the fake's answer does not fit GitHub's schema: {message}"));
        }
    }
    Served {
        answer,
        operation: Some(label),
        violations,
    }
}

/// What went wrong while executing: violations (the field or paging the fake refuses) and the
/// messages of GitHub's `NOT_FOUND` errors.
#[derive(Debug, Default)]
struct Sink {
    violations: RefCell<Vec<String>>,
    not_found: RefCell<Vec<String>>,
}

impl Sink {
    fn violation(&self, message: String) -> FieldError {
        self.violations.borrow_mut().push(message.clone());
        FieldError { message }
    }

    fn not_found(&self, message: String) -> FieldError {
        self.not_found.borrow_mut().push(message.clone());
        FieldError { message }
    }
}

// ---------------------------------------------------------------------------------------------
// The object graph

/// One object of an answer: its GraphQL type and the fields the fake serves for it.
#[derive(Debug, Clone)]
pub(crate) struct Obj {
    type_name: String,
    fields: BTreeMap<&'static str, Field>,
}

#[derive(Debug, Clone)]
enum Field {
    /// A scalar, an enum value (its name) or null.
    Leaf(Value),
    Object(Obj),
    /// A list of objects (a connection page's `nodes` and `edges`).
    List(Vec<Obj>),
    /// A connection of these objects, paged as its arguments ask.
    Connection(Vec<Obj>),
    /// Objects found by their arguments (`repository(owner:, name:)`).
    Lookup(Lookup),
}

#[derive(Debug, Clone)]
struct Lookup {
    /// The arguments that make the key, in order.
    arguments: &'static [&'static str],
    /// By key: the arguments' values, lowercase, joined by `/`.
    found: BTreeMap<String, Obj>,
    /// GitHub's `NOT_FOUND` message, from the arguments' values.
    missing: fn(&[String]) -> String,
}

impl Obj {
    pub fn new(type_name: &str) -> Obj {
        Obj {
            type_name: type_name.to_owned(),
            fields: BTreeMap::new(),
        }
    }

    /// A scalar or enum field (`null` for a `None`).
    pub fn leaf(mut self, name: &'static str, value: impl Into<Value>) -> Obj {
        self.fields.insert(name, Field::Leaf(value.into()));
        self
    }

    /// An object field, `null` for `None`.
    pub fn object(mut self, name: &'static str, object: Option<Obj>) -> Obj {
        let field = object.map_or(Field::Leaf(Value::Null), Field::Object);
        self.fields.insert(name, field);
        self
    }

    /// A connection field (`reviewThreads`, `comments`) of `items`, in order.
    pub fn connection(mut self, name: &'static str, items: Vec<Obj>) -> Obj {
        self.fields.insert(name, Field::Connection(items));
        self
    }

    /// A field that finds one of `found` by the values of `arguments` (keys: those values,
    /// lowercase, joined by `/`), or answers `NOT_FOUND` with `missing`'s message.
    pub fn lookup(
        mut self,
        name: &'static str,
        arguments: &'static [&'static str],
        found: BTreeMap<String, Obj>,
        missing: fn(&[String]) -> String,
    ) -> Obj {
        let found = found.into_iter().map(|(k, v)| (k.to_lowercase(), v)).collect();
        self.fields.insert(
            name,
            Field::Lookup(Lookup {
                arguments,
                found,
                missing,
            }),
        );
        self
    }
}

/// An object being executed, with where its problems go.
struct Bound<'a> {
    obj: Cow<'a, Obj>,
    sink: &'a Sink,
}

/// `obj` as a field's value.
fn bind<'a>(obj: &'a Obj, sink: &'a Sink) -> ResolvedValue<'a> {
    ResolvedValue::object(Bound {
        obj: Cow::Borrowed(obj),
        sink,
    })
}

impl ObjectValue for Bound<'_> {
    fn type_name(&self) -> &str {
        &self.obj.type_name
    }

    fn resolve_field<'a>(&'a self, info: &'a ResolveInfo<'a>) -> Result<ResolvedValue<'a>, FieldError> {
        let name = info.field_name();
        let Some(field) = self.obj.fields.get(name) else {
            return Err(self.sink.violation(format!(
                "the fake GitHub does not serve `{}.{name}`",
                self.obj.type_name
            )));
        };
        let sink = self.sink;
        match field {
            Field::Leaf(value) => Ok(ResolvedValue::leaf(JsonValue::from(value.clone()))),
            Field::Object(obj) => Ok(bind(obj, sink)),
            Field::List(items) => Ok(ResolvedValue::list(items.iter().map(move |obj| bind(obj, sink)))),
            Field::Connection(items) => {
                let page = connection(items, info, self.sink)?;
                Ok(ResolvedValue::object(Bound {
                    obj: Cow::Owned(page),
                    sink: self.sink,
                }))
            }
            Field::Lookup(lookup) => {
                let values: Vec<String> = lookup
                    .arguments
                    .iter()
                    .map(|argument| match info.arguments().get(*argument) {
                        Some(JsonValue::String(text)) => text.as_str().to_owned(),
                        Some(other) => other.to_string(),
                        None => String::new(),
                    })
                    .collect();
                match lookup.found.get(&values.join("/").to_lowercase()) {
                    Some(obj) => Ok(bind(obj, sink)),
                    None => Err(self.sink.not_found((lookup.missing)(&values))),
                }
            }
        }
    }
}

/// The page of `items` a connection field's arguments ask for, as GitHub pages: `first` or `last`
/// (one of them, at most 100) from after the `after` cursor and before the `before` one; with
/// `totalCount`, `pageInfo`, `nodes` and `edges`, typed as the schema names them.
fn connection(items: &[Obj], info: &ResolveInfo<'_>, sink: &Sink) -> Result<Obj, FieldError> {
    let name = info.field_name();
    let arguments = info.arguments();
    let number = |argument: &str| arguments.get(argument).and_then(JsonValue::as_i64);
    let cursor = |argument: &str| -> Result<Option<usize>, FieldError> {
        match arguments.get(argument).and_then(JsonValue::as_str) {
            None => Ok(None),
            Some(text) => decode_cursor(text)
                .filter(|index| *index < items.len())
                .map(Some)
                .ok_or_else(|| sink.violation(format!("`{argument}` does not appear to be a valid cursor."))),
        }
    };
    if let Some((argument, _)) = arguments.iter().find(|(argument, value)| {
        !value.is_null() && !["first", "last", "after", "before"].contains(&argument.as_str())
    }) {
        return Err(sink.violation(format!(
            "the fake GitHub does not page `{name}` by `{}`",
            argument.as_str()
        )));
    }
    let (first, last) = (number("first"), number("last"));
    let count = match (first, last) {
        (None, None) => {
            return Err(sink.violation(format!(
                "You must provide a `first` or `last` value to properly paginate the `{name}` connection."
            )));
        }
        (Some(_), Some(_)) => {
            return Err(sink.violation(format!(
                "Passing both `first` and `last` to paginate the `{name}` connection is not supported."
            )));
        }
        (Some(n), None) | (None, Some(n)) => n,
    };
    let which = if first.is_some() { "first" } else { "last" };
    if count < 0 {
        return Err(sink.violation(format!(
            "`{which}` on the `{name}` connection cannot be less than zero."
        )));
    }
    if count > MAX_PAGE {
        return Err(sink.violation(format!(
            "Requesting {count} records on the `{name}` connection exceeds the `{which}` limit of {MAX_PAGE} records."
        )));
    }
    let count = usize::try_from(count).unwrap_or(0);
    let start = cursor("after")?.map_or(0, |index| index + 1);
    let end = cursor("before")?.unwrap_or(items.len()).max(start);
    let (start, end) = if first.is_some() {
        (start, end.min(start + count))
    } else {
        (end.saturating_sub(count).max(start), end)
    };
    let page = &items[start..end];
    let connection_type = info.field_definition().ty.inner_named_type().as_str().to_owned();
    let edge_type = info
        .schema()
        .get_object(&connection_type)
        .and_then(|object| object.fields.get("edges"))
        .map(|edges| edges.ty.inner_named_type().as_str().to_owned())
        .unwrap_or_default();
    let edges = page
        .iter()
        .enumerate()
        .map(|(i, node)| {
            Obj::new(&edge_type)
                .leaf("cursor", encode_cursor(start + i))
                .object("node", Some(node.clone()))
        })
        .collect();
    let page_info = Obj::new("PageInfo")
        .leaf("hasNextPage", end < items.len())
        .leaf("hasPreviousPage", start > 0)
        .leaf("startCursor", (!page.is_empty()).then(|| encode_cursor(start)))
        .leaf("endCursor", (!page.is_empty()).then(|| encode_cursor(end - 1)));
    let mut connection = Obj::new(&connection_type)
        .leaf("totalCount", items.len())
        .object("pageInfo", Some(page_info));
    connection.fields.insert("nodes", Field::List(page.to_vec()));
    connection.fields.insert("edges", Field::List(edges));
    Ok(connection)
}

fn encode_cursor(index: usize) -> String {
    STANDARD.encode(format!("cursor:v2:{index}"))
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    let bytes = STANDARD.decode(cursor).ok()?;
    String::from_utf8(bytes).ok()?.strip_prefix("cursor:v2:")?.parse().ok()
}

// ---------------------------------------------------------------------------------------------
// Mutations

/// The mutation root: each field changes the state, then answers from it.
struct Mutations<'s> {
    state: RefCell<&'s mut GithubState>,
    login: &'s str,
    sink: &'s Sink,
}

impl ObjectValue for Mutations<'_> {
    fn type_name(&self) -> &str {
        "Mutation"
    }

    fn resolve_field<'a>(&'a self, info: &'a ResolveInfo<'a>) -> Result<ResolvedValue<'a>, FieldError> {
        let name = info.field_name();
        let input = serde_json::to_value(info.arguments().get("input")).unwrap_or(Value::Null);
        let mut state = self.state.borrow_mut();
        let answer = match name {
            "resolveReviewThread" => review_threads::resolve(&mut state, self.login, &input),
            _ => {
                return Err(self
                    .sink
                    .violation(format!("the fake GitHub does not implement the mutation `{name}`")));
            }
        };
        match answer {
            Ok(payload) => Ok(ResolvedValue::object(Bound {
                obj: Cow::Owned(payload),
                sink: self.sink,
            })),
            Err(message) => Err(self.sink.not_found(message)),
        }
    }
}
