//! GitHub's REST API description (`../shared/fixtures/github-openapi/api.github.com.subset.json`):
//! loaded once per process, it routes request paths to operations and validates path and query
//! parameters and JSON request bodies with a small OpenAPI 3.0 schema validator.
//!
//! The subset holds the paths the bot used first, whole (every method of each). A path it does
//! not have is routed by the full description (`api.github.com.json`, 13 MB) instead, parsed on
//! the first such request only ([`Spec::route_github`]), so that requests the subset covers never
//! pay for it. A path no template of the full description fits either is found unknown from its
//! path templates alone, read off the file's text in a few milliseconds instead of the quarter
//! second a parse takes. The fallback is taken only when no subset template fits: a path the subset
//! routes to a parameter (`issues/{issue_number}` for `issues/events`) stays with the subset.
//!
//! The validator covers what GitHub's request schemas use: `$ref` into `#/components`, `type`
//! (integer is stricter than number), `nullable`, `enum`, `required`, `properties`,
//! `additionalProperties`, `items`, `oneOf`/`anyOf`/`allOf`, `minimum`/`maximum` (and their
//! exclusive forms), `minLength`/`maxLength`, `minItems`/`maxItems` and `format: date-time`. Like
//! JSON Schema, object and array keywords only apply to values of that kind, which is what makes
//! GitHub's type-less `anyOf` branches (the check-run update body) work.
//!
//! Like GitHub, the fake ignores members an object schema does not list (unless it says
//! `additionalProperties: false`); a client's own tests can ask for closed objects instead
//! ([`Spec::validate_request_closed`]), so that a misspelt or invented field is caught rather than
//! silently dropped.

use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;

/// The subset of GitHub's description, relative to the fixtures directory.
const SPEC_FILE: &str = "github-openapi/api.github.com.subset.json";

/// The whole description, for paths the subset lacks.
const FULL_SPEC_FILE: &str = "github-openapi/api.github.com.json";

/// Deepest schema nesting followed; GitHub's schemas are far shallower, so this only stops cycles.
const MAX_DEPTH: usize = 64;

/// The HTTP methods an OpenAPI path item may hold.
const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// Path parameters that may span several segments when they end the path: GitHub takes
/// `contents/docs/a.md` and `git/ref/heads/main` unescaped.
const MULTI_SEGMENT_PARAMS: [&str; 2] = ["path", "ref"];

/// The shared fixtures directory: `$PITCREW_FIXTURES`, else `../shared/fixtures` beside the
/// repository.
pub fn fixtures_root() -> PathBuf {
    std::env::var_os("PITCREW_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures"))
}

/// The description could not be read or parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GitHub OpenAPI description: {}", self.0)
    }
}

impl std::error::Error for SpecError {}

/// A parsed OpenAPI description with its path templates ready for matching.
#[derive(Debug)]
pub struct Spec {
    root: Value,
    templates: Vec<PathTemplate>,
}

#[derive(Debug)]
struct PathTemplate {
    template: String,
    segments: Vec<Segment>,
}

/// Which template segments are literals, compared so that an earlier literal wins.
type Score = Vec<bool>;

/// Path parameters by name, percent-decoded, in template order.
type Params = Vec<(String, String)>;

#[derive(Debug)]
enum Segment {
    Literal(String),
    Param(String),
}

/// The operation a request addresses.
#[derive(Debug, Clone)]
pub struct Operation<'a> {
    /// The path template, e.g. `/repos/{owner}/{repo}/issues/{issue_number}/comments`.
    pub template: &'a str,
    /// The method, uppercase.
    pub method: String,
    /// GitHub's operation id, e.g. `issues/create-comment`.
    pub operation_id: &'a str,
    /// The path parameters, percent-decoded, in template order.
    pub params: Vec<(String, String)>,
    /// The operation's documentation page, used as `documentation_url` in errors.
    pub docs_url: &'a str,
    path_item: &'a Value,
    operation: &'a Value,
}

impl Operation<'_> {
    /// The path parameter `name`, percent-decoded.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Why a request matches no operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteError {
    /// No path template matches.
    UnknownPath,
    /// A template matches but has no operation for this method.
    MethodNotAllowed { template: String, allowed: Vec<String> },
    /// The full description was needed and could not be loaded.
    Unavailable(SpecError),
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteError::UnknownPath => f.write_str("no such path in GitHub's REST API description"),
            RouteError::MethodNotAllowed { template, allowed } => {
                write!(f, "{template} has no such method (it has {})", allowed.join(", "))
            }
            RouteError::Unavailable(error) => error.fmt(f),
        }
    }
}

/// One schema violation, at a JSON path such as `$.output.annotations[3].annotation_level`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

static GITHUB: OnceLock<Result<Spec, SpecError>> = OnceLock::new();
static GITHUB_FULL: OnceLock<Result<Spec, SpecError>> = OnceLock::new();
/// The full description's path templates, when its text could be read that way.
static GITHUB_FULL_PATHS: OnceLock<Option<Vec<PathTemplate>>> = OnceLock::new();

/// The path templates of a description laid out as GitHub publishes it (two-space indentation:
/// `  "paths": {`, then each template alone at four spaces, `    "/repos/{owner}/{repo}": {`),
/// read without parsing the JSON. `None` when the text is laid out otherwise or a line of the
/// `paths` object at that depth is not a plain template: the parse must decide then.
fn scan_path_templates(text: &str) -> Option<Vec<String>> {
    // JSON strings hold no raw line breaks, so lines are structure; the `paths` object ends at
    // the first line that closes a member of the root.
    let start = text.find("\n  \"paths\": {\n")? + 1;
    let region = &text[start..];
    let region = &region[..region.find("\n  }")?];
    let mut templates = Vec::new();
    for line in region.lines().skip(1) {
        let Some(member) = line.strip_prefix("    ").filter(|m| !m.starts_with(' ')) else {
            continue;
        };
        if member == "}," || member == "}" {
            continue;
        }
        let template = member.strip_prefix("\"/")?.strip_suffix("\": {")?;
        if template.contains(['"', '\\']) {
            return None;
        }
        templates.push(format!("/{template}"));
    }
    (!templates.is_empty()).then_some(templates)
}

/// The full description's path templates, read once per process; `None` when they could not be.
fn full_path_templates() -> Option<&'static [PathTemplate]> {
    GITHUB_FULL_PATHS
        .get_or_init(|| {
            let text = std::fs::read_to_string(fixtures_root().join(FULL_SPEC_FILE)).ok()?;
            let templates = scan_path_templates(&text)?;
            Some(templates.iter().map(|t| PathTemplate::new(t)).collect())
        })
        .as_deref()
}

/// The description in `file` (relative to the fixtures directory), parsed once per process.
fn load_once(cell: &'static OnceLock<Result<Spec, SpecError>>, file: &str) -> Result<&'static Spec, SpecError> {
    cell.get_or_init(|| {
        let path = fixtures_root().join(file);
        let text = std::fs::read_to_string(&path).map_err(|e| SpecError(format!("{}: {e}", path.display())))?;
        let root = serde_json::from_str(&text).map_err(|e| SpecError(format!("{}: {e}", path.display())))?;
        Ok(Spec::from_value(root))
    })
    .as_ref()
    .map_err(Clone::clone)
}

impl Spec {
    /// The subset of GitHub's description the bot was first written against, parsed on first use
    /// and shared by the whole process.
    pub fn github() -> Result<&'static Spec, SpecError> {
        load_once(&GITHUB, SPEC_FILE)
    }

    /// GitHub's whole description (13 MB, a quarter of a second to parse in a debug build),
    /// parsed on first use and shared by the whole process.
    pub fn github_full() -> Result<&'static Spec, SpecError> {
        load_once(&GITHUB_FULL, FULL_SPEC_FILE)
    }

    /// Whether the full description has been parsed by this process (for tests of the laziness).
    pub fn github_full_loaded() -> bool {
        GITHUB_FULL.get().is_some()
    }

    /// The operation `method` on `path` addresses in GitHub's REST API, and the description it
    /// came from (validate the request with that one): the subset when one of its templates fits
    /// the path, else the full description, loaded now if it was not yet (unless none of its
    /// templates fits the path either).
    pub fn route_github(method: &str, path: &str) -> Result<(&'static Spec, Operation<'static>), RouteError> {
        let subset = Spec::github().map_err(RouteError::Unavailable)?;
        match subset.route(method, path) {
            Err(RouteError::UnknownPath) => {
                if let Some(templates) = full_path_templates() {
                    let segments: Vec<&str> = split_path(path).collect();
                    if !templates.iter().any(|t| t.matches(&segments).is_some()) {
                        return Err(RouteError::UnknownPath);
                    }
                }
                let full = Spec::github_full().map_err(RouteError::Unavailable)?;
                full.route(method, path).map(|operation| (full, operation))
            }
            routed => routed.map(|operation| (subset, operation)),
        }
    }

    /// A description from its JSON.
    pub fn from_value(root: Value) -> Spec {
        let templates = root["paths"]
            .as_object()
            .map(|paths| paths.keys().map(|template| PathTemplate::new(template)).collect())
            .unwrap_or_default();
        Spec { root, templates }
    }

    /// The whole description.
    pub fn root(&self) -> &Value {
        &self.root
    }

    /// The operation `method` on `path` (no query string) addresses. Literal segments win over
    /// parameters (`issues/comments/{comment_id}` over `issues/{issue_number}`).
    pub fn route(&self, method: &str, path: &str) -> Result<Operation<'_>, RouteError> {
        let segments: Vec<&str> = split_path(path).collect();
        let mut best: Option<(Score, &PathTemplate, Params)> = None;
        for template in &self.templates {
            let Some((score, params)) = template.matches(&segments) else {
                continue;
            };
            if best.as_ref().is_none_or(|(best_score, _, _)| score > *best_score) {
                best = Some((score, template, params));
            }
        }
        let Some((_, template, params)) = best else {
            return Err(RouteError::UnknownPath);
        };
        let path_item = &self.root["paths"][&template.template];
        let lower = method.to_ascii_lowercase();
        let Some(operation) = path_item.get(&lower).filter(|_| METHODS.contains(&lower.as_str())) else {
            let allowed = METHODS
                .iter()
                .filter(|m| path_item.get(**m).is_some())
                .map(|m| m.to_ascii_uppercase())
                .collect();
            return Err(RouteError::MethodNotAllowed {
                template: template.template.clone(),
                allowed,
            });
        };
        Ok(Operation {
            template: &template.template,
            method: lower.to_ascii_uppercase(),
            operation_id: operation["operationId"].as_str().unwrap_or(""),
            params,
            docs_url: operation["externalDocs"]["url"]
                .as_str()
                .unwrap_or("https://docs.github.com/rest"),
            path_item,
            operation,
        })
    }

    /// Everything wrong with a request to `operation`: its path and query parameters, then its
    /// body (`None` when the request had none).
    pub fn validate_request(
        &self,
        operation: &Operation<'_>,
        query: &[(String, String)],
        body: Option<&[u8]>,
    ) -> Vec<SchemaError> {
        self.request_errors(operation, query, body, false)
    }

    /// [`Spec::validate_request`], with every object schema that lists `properties` and says nothing
    /// of `additionalProperties` taking no other members (except inside `allOf`/`anyOf`/`oneOf`
    /// branches, which may each list only part of them).
    pub fn validate_request_closed(
        &self,
        operation: &Operation<'_>,
        query: &[(String, String)],
        body: Option<&[u8]>,
    ) -> Vec<SchemaError> {
        self.request_errors(operation, query, body, true)
    }

    /// `closed`: whether unlisted object members are errors (see [`Spec::validate_request_closed`]).
    fn request_errors(
        &self,
        operation: &Operation<'_>,
        query: &[(String, String)],
        body: Option<&[u8]>,
        closed: bool,
    ) -> Vec<SchemaError> {
        let mut errors = Vec::new();
        for parameter in self.parameters(operation) {
            let (Some(name), Some(location)) = (parameter["name"].as_str(), parameter["in"].as_str()) else {
                continue;
            };
            let raw = match location {
                "path" => operation.param(name),
                "query" => query.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()),
                _ => continue,
            };
            let label = format!("{location} parameter \"{name}\"");
            match raw {
                Some(raw) => self.check_parameter(&parameter["schema"], raw, &label, &mut errors),
                None if parameter["required"] == Value::Bool(true) => errors.push(SchemaError {
                    path: label,
                    message: "required but missing".to_owned(),
                }),
                None => {}
            }
        }
        let request_body = self.resolve(&operation.operation["requestBody"]);
        if request_body.is_null() {
            return errors;
        }
        let schema = &request_body["content"]["application/json"]["schema"];
        match body.filter(|b| !b.iter().all(u8::is_ascii_whitespace)) {
            None if request_body["required"] == Value::Bool(true) => errors.push(SchemaError {
                path: "$".to_owned(),
                message: "a JSON request body is required".to_owned(),
            }),
            None => {}
            Some(bytes) => match serde_json::from_slice::<Value>(bytes) {
                Ok(value) => self.check(schema, &value, "$", &mut errors, 0, closed),
                Err(error) => errors.push(SchemaError {
                    path: "$".to_owned(),
                    message: format!("the request body is not JSON: {error}"),
                }),
            },
        }
        errors
    }

    /// Everything wrong with a JSON response `body` of `status` to `operation`, by the schema the
    /// description gives for that status (nothing when it gives none): how the fake checks that
    /// its own answers look like GitHub's.
    pub fn validate_response(&self, operation: &Operation<'_>, status: u16, body: &Value) -> Vec<SchemaError> {
        let response = self.resolve(&operation.operation["responses"][status.to_string()]);
        let schema = &response["content"]["application/json"]["schema"];
        if schema.is_null() {
            return Vec::new();
        }
        self.validate(schema, body)
    }

    /// Checks `value` against `schema`; every violation found (object members in key order).
    pub fn validate(&self, schema: &Value, value: &Value) -> Vec<SchemaError> {
        let mut errors = Vec::new();
        self.check(schema, value, "$", &mut errors, 0, false);
        errors
    }

    /// The path item's and the operation's parameters, `$ref`s resolved.
    fn parameters<'s>(&'s self, operation: &Operation<'s>) -> Vec<&'s Value> {
        [operation.path_item, operation.operation]
            .into_iter()
            .filter_map(|holder| holder["parameters"].as_array())
            .flatten()
            .map(|p| self.resolve(p))
            .collect()
    }

    /// Follows `$ref`s (`#/components/...`) until a real schema; `Null` when one dangles.
    fn resolve<'s>(&'s self, mut schema: &'s Value) -> &'s Value {
        for _ in 0..MAX_DEPTH {
            let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
                return schema;
            };
            let Some(pointer) = reference.strip_prefix('#') else {
                return &Value::Null;
            };
            match self.root.pointer(pointer) {
                Some(target) => schema = target,
                None => return &Value::Null,
            }
        }
        &Value::Null
    }

    /// Parameters arrive as text: read them as the schema's type, then validate.
    fn check_parameter(&self, schema: &Value, raw: &str, label: &str, errors: &mut Vec<SchemaError>) {
        let schema = self.resolve(schema);
        let value = match schema["type"].as_str() {
            Some("integer") => raw.parse::<i64>().map(Value::from).ok(),
            Some("number") => raw
                .parse::<f64>()
                .ok()
                .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number)),
            Some("boolean") => raw.parse::<bool>().map(Value::Bool).ok(),
            // GitHub's array query parameters are comma-separated lists of strings.
            Some("array") => Some(Value::Array(
                raw.split(',').map(|s| Value::String(s.to_owned())).collect(),
            )),
            _ => Some(Value::String(raw.to_owned())),
        };
        let Some(value) = value else {
            errors.push(SchemaError {
                path: label.to_owned(),
                message: format!(
                    "expected {}, found {}",
                    schema["type"].as_str().unwrap_or("?"),
                    Value::from(raw)
                ),
            });
            return;
        };
        let mut found = Vec::new();
        self.check(schema, &value, "$", &mut found, 0, false);
        errors.extend(found.into_iter().map(|e| SchemaError {
            path: format!("{label}{}", e.path.trim_start_matches('$')),
            message: e.message,
        }));
    }

    fn check(
        &self,
        schema: &Value,
        value: &Value,
        path: &str,
        errors: &mut Vec<SchemaError>,
        depth: usize,
        closed: bool,
    ) {
        let mut error = |message: String| {
            errors.push(SchemaError {
                path: path.to_owned(),
                message,
            })
        };
        if depth > MAX_DEPTH {
            return error("schema nesting too deep (a $ref cycle?)".to_owned());
        }
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let target = self.resolve(schema);
            if target.is_null() {
                return error(format!("unresolvable $ref {reference}"));
            }
            return self.check(target, value, path, errors, depth + 1, closed);
        }
        let Some(schema) = schema.as_object() else {
            // `true`, `{}` and friends accept everything.
            return;
        };
        if value.is_null() && schema.get("nullable") == Some(&Value::Bool(true)) {
            return;
        }
        if let Some(expected) = schema.get("type").and_then(Value::as_str)
            && !type_matches(expected, value)
        {
            return error(format!("expected {expected}, found {}", describe(value)));
        }
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
            && !allowed.iter().any(|a| json_eq(a, value))
        {
            error(format!(
                "{} is not one of {}",
                compact(value),
                compact(&Value::Array(allowed.clone()))
            ));
        }
        match value {
            Value::String(text) => {
                let length = text.chars().count() as u64;
                if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                    && length > max
                {
                    error(format!("string of {length} characters is longer than maxLength {max}"));
                }
                if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                    && length < min
                {
                    error(format!("string of {length} characters is shorter than minLength {min}"));
                }
                if schema.get("format").and_then(Value::as_str) == Some("date-time") && !is_date_time(text) {
                    error(format!("{} is not an RFC 3339 date-time", compact(value)));
                }
            }
            Value::Number(number) => {
                let n = number.as_f64().unwrap_or(f64::NAN);
                let exclusive = |key: &str| schema.get(key) == Some(&Value::Bool(true));
                if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
                    && (n < min || (exclusive("exclusiveMinimum") && n == min))
                {
                    error(format!("{number} is less than the minimum {min}"));
                }
                if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
                    && (n > max || (exclusive("exclusiveMaximum") && n == max))
                {
                    error(format!("{number} is more than the maximum {max}"));
                }
            }
            Value::Array(items) => {
                let count = items.len() as u64;
                if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                    && count > max
                {
                    error(format!("{count} items, more than maxItems {max}"));
                }
                if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                    && count < min
                {
                    error(format!("{count} items, fewer than minItems {min}"));
                }
                if let Some(item_schema) = schema.get("items") {
                    for (i, item) in items.iter().enumerate() {
                        self.check(item_schema, item, &format!("{path}[{i}]"), errors, depth + 1, closed);
                    }
                }
            }
            Value::Object(object) => self.check_object(schema, object, path, errors, depth, closed),
            Value::Null | Value::Bool(_) => {}
        }
        // Branches are never closed: each may list only part of the members (GitHub's check-run
        // update branches list `status` alone), which the object itself has already checked.
        if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
            for branch in all {
                self.check(branch, value, path, errors, depth + 1, false);
            }
        }
        for (keyword, exactly_one) in [("anyOf", false), ("oneOf", true)] {
            let Some(branches) = schema.get(keyword).and_then(Value::as_array) else {
                continue;
            };
            let outcomes: Vec<Vec<SchemaError>> = branches
                .iter()
                .map(|branch| {
                    let mut found = Vec::new();
                    self.check(branch, value, path, &mut found, depth + 1, false);
                    found
                })
                .collect();
            let passed = outcomes.iter().filter(|o| o.is_empty()).count();
            if passed == 0 {
                let reasons: Vec<String> = outcomes
                    .iter()
                    .enumerate()
                    .map(|(i, o)| {
                        let listed: Vec<String> = o.iter().map(ToString::to_string).collect();
                        format!("#{}: {}", i + 1, listed.join(", "))
                    })
                    .collect();
                errors.push(SchemaError {
                    path: path.to_owned(),
                    message: format!("matches none of the {keyword} alternatives ({})", reasons.join("; ")),
                });
            } else if exactly_one && passed > 1 {
                errors.push(SchemaError {
                    path: path.to_owned(),
                    message: format!("matches {passed} of the oneOf alternatives, exactly one expected"),
                });
            }
        }
    }

    fn check_object(
        &self,
        schema: &serde_json::Map<String, Value>,
        object: &serde_json::Map<String, Value>,
        path: &str,
        errors: &mut Vec<SchemaError>,
        depth: usize,
        closed: bool,
    ) {
        for name in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
            if let Some(name) = name.as_str()
                && !object.contains_key(name)
            {
                errors.push(SchemaError {
                    path: path.to_owned(),
                    message: format!("missing required property \"{name}\""),
                });
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (name, item) in object {
            let item_path = child_path(path, name);
            match properties.and_then(|p| p.get(name)) {
                Some(property) => self.check(property, item, &item_path, errors, depth + 1, closed),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => errors.push(SchemaError {
                        path: path.to_owned(),
                        message: format!("unexpected property \"{name}\""),
                    }),
                    Some(extra @ Value::Object(_)) => self.check(extra, item, &item_path, errors, depth + 1, closed),
                    None if closed && properties.is_some() => errors.push(SchemaError {
                        path: path.to_owned(),
                        message: format!("undocumented property \"{name}\""),
                    }),
                    _ => {}
                },
            }
        }
    }
}

impl PathTemplate {
    fn new(template: &str) -> PathTemplate {
        PathTemplate {
            template: template.to_owned(),
            segments: split_path(template)
                .map(|s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(name) => Segment::Param(name.to_owned()),
                    None => Segment::Literal(s.to_owned()),
                })
                .collect(),
        }
    }

    /// Whether `segments` fit this template: a score (literal positions, compared so that an
    /// earlier literal wins) and the parameters.
    fn matches(&self, segments: &[&str]) -> Option<(Score, Params)> {
        let last = self.segments.len().checked_sub(1)?;
        let spans_rest =
            matches!(&self.segments[last], Segment::Param(p) if MULTI_SEGMENT_PARAMS.contains(&p.as_str()));
        let fits = segments.len() == self.segments.len() || (spans_rest && segments.len() > self.segments.len());
        if !fits {
            return None;
        }
        let mut score = Vec::with_capacity(self.segments.len());
        let mut params = Vec::new();
        for (i, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Literal(literal) => {
                    if segments[i] != literal {
                        return None;
                    }
                    score.push(true);
                }
                Segment::Param(name) => {
                    let raw = if i == last {
                        segments[i..].join("/")
                    } else {
                        segments[i].to_owned()
                    };
                    if raw.is_empty() {
                        return None;
                    }
                    params.push((name.clone(), percent_decode(&raw)));
                    score.push(false);
                }
            }
        }
        Some((score, params))
    }
}

fn split_path(path: &str) -> impl Iterator<Item = &str> {
    path.trim_matches('/').split('/')
}

/// `%XX` sequences decoded (and `+` kept: it is a plus in a path); bad UTF-8 is replaced.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn child_path(path: &str, name: &str) -> String {
    let plain = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        format!("{path}.{name}")
    } else {
        format!("{path}[{}]", Value::from(name))
    }
}

fn type_matches(expected: &str, value: &Value) -> bool {
    match expected {
        "string" => value.is_string(),
        // JSON Schema counts 3.0 as an integer; serde_json keeps it as a float.
        "integer" => value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

fn describe(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".to_owned(),
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => return "an array".to_owned(),
        Value::Object(_) => return "an object".to_owned(),
    };
    format!("{kind} {}", compact(value))
}

/// The value as compact JSON, cut short when long.
fn compact(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 120 {
        format!("{}…", text.chars().take(120).collect::<String>())
    } else {
        text
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`, with numeric ranges checked.
fn is_date_time(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = text.get(range)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (Some(_year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) = (
        digits(0..4),
        digits(5..7),
        digits(8..10),
        digits(11..13),
        digits(14..16),
        digits(17..19),
    ) else {
        return false;
    };
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') || !matches!(b.get(10), Some(b'T' | b't')) {
        return false;
    }
    if b.get(13) != Some(&b':') || b.get(16) != Some(&b':') {
        return false;
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        rest = &fraction[digits..];
    }
    match rest.as_bytes() {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()),
        _ => false,
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec() -> &'static Spec {
        Spec::github().unwrap()
    }

    fn body_errors(method: &str, path: &str, body: &Value) -> Vec<String> {
        let spec = spec();
        let operation = spec.route(method, path).unwrap();
        let bytes = serde_json::to_vec(body).unwrap();
        spec.validate_request(&operation, &[], Some(&bytes))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    const CHECK_RUN: &str = "/repos/acme/widgets/check-runs/7";

    #[test]
    fn routes_to_operations_with_literals_before_parameters() {
        let spec = spec();
        let op = spec.route("post", "/repos/acme/widgets/issues/12/comments").unwrap();
        assert_eq!(op.operation_id, "issues/create-comment");
        assert_eq!(op.param("owner"), Some("acme"));
        assert_eq!(op.param("issue_number"), Some("12"));
        let op = spec.route("PATCH", "/repos/acme/widgets/issues/comments/99").unwrap();
        assert_eq!(op.operation_id, "issues/update-comment");
        assert_eq!(op.param("comment_id"), Some("99"));
        let op = spec
            .route("GET", "/repos/acme/widgets/contents/docs/guide%20one.md")
            .unwrap();
        assert_eq!(op.operation_id, "repos/get-content");
        assert_eq!(op.param("path"), Some("docs/guide one.md"));
        let op = spec
            .route("GET", "/repos/acme/widgets/git/ref/heads/feature/x")
            .unwrap();
        assert_eq!(op.param("ref"), Some("heads/feature/x"));
        assert!(op.docs_url.starts_with("https://docs.github.com/"));
    }

    #[test]
    fn unknown_paths_and_methods_are_refused() {
        let spec = spec();
        assert_eq!(
            spec.route("GET", "/repos/acme/widgets/nope").unwrap_err(),
            RouteError::UnknownPath
        );
        // Only `path` and `ref` may span segments: an issue number may not swallow the rest.
        assert_eq!(
            spec.route("GET", "/repos/acme/widgets/issues/1/comments/2/x")
                .unwrap_err(),
            RouteError::UnknownPath
        );
        let error = spec.route("PUT", "/repos/acme/widgets/check-runs/7").unwrap_err();
        let RouteError::MethodNotAllowed { template, allowed } = &error else {
            panic!("{error:?}");
        };
        assert_eq!(template, "/repos/{owner}/{repo}/check-runs/{check_run_id}");
        assert_eq!(allowed, &["GET", "PATCH"]);
    }

    #[test]
    fn path_and_query_parameters_are_typed() {
        let spec = spec();
        let op = spec.route("GET", "/repos/acme/widgets/issues/seven").unwrap();
        let errors = spec.validate_request(&op, &[], None);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(
            errors[0].to_string(),
            "path parameter \"issue_number\": expected integer, found \"seven\""
        );
        let op = spec.route("GET", "/repos/acme/widgets/issues/7/comments").unwrap();
        let query = [("per_page".to_owned(), "many".to_owned())];
        let errors = spec.validate_request(&op, &query, None);
        assert_eq!(errors[0].path, "query parameter \"per_page\"");
    }

    #[test]
    fn check_run_update_any_of_needs_a_conclusion_when_completed() {
        let ok = json!({"status": "completed", "conclusion": "success", "output": {"summary": "fine"}});
        assert_eq!(body_errors("PATCH", CHECK_RUN, &ok), Vec::<String>::new());
        assert_eq!(
            body_errors("PATCH", CHECK_RUN, &json!({"status": "in_progress"})),
            Vec::<String>::new()
        );
        // No status at all: the second branch holds, since its `properties` ignore absent keys.
        assert_eq!(
            body_errors("PATCH", CHECK_RUN, &json!({"name": "x"})),
            Vec::<String>::new()
        );
        let errors = body_errors("PATCH", CHECK_RUN, &json!({"status": "completed"}));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("$: matches none of the anyOf alternatives"),
            "{errors:?}"
        );
        assert!(
            errors[0].contains("missing required property \"conclusion\""),
            "{errors:?}"
        );
    }

    #[test]
    fn closed_objects_refuse_undocumented_members_but_open_ones_ignore_them() {
        let spec = spec();
        let op = spec.route("PATCH", CHECK_RUN).unwrap();
        let closed = |body: &Value| -> Vec<String> {
            let bytes = serde_json::to_vec(body).unwrap();
            spec.validate_request_closed(&op, &[], Some(&bytes))
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        let extra = json!({"status": "completed", "conclusion": "success", "colour": "red",
                           "output": {"title": "t", "summary": "s", "sumary": "typo"}});
        assert_eq!(body_errors("PATCH", CHECK_RUN, &extra), Vec::<String>::new());
        assert_eq!(
            closed(&extra),
            [
                "$: undocumented property \"colour\"",
                "$.output: undocumented property \"sumary\""
            ]
        );
        // The `anyOf` branches list `status` alone; the members the object lists stay allowed.
        let ok = json!({"status": "completed", "conclusion": "success", "output": {"title": "t", "summary": "s"}});
        assert_eq!(closed(&ok), Vec::<String>::new());
    }

    #[test]
    fn nested_enum_errors_carry_the_json_path() {
        let annotation = |level: &str| json!({"path": "src/lib.rs", "start_line": 1, "end_line": 1, "annotation_level": level, "message": "m"});
        let body = json!({
            "status": "in_progress",
            "output": {"title": "t", "summary": "s", "annotations": [
                annotation("notice"), annotation("warning"), annotation("failure"), annotation("fatal")
            ]}
        });
        assert_eq!(
            body_errors("PATCH", CHECK_RUN, &body),
            [r#"$.output.annotations[3].annotation_level: "fatal" is not one of ["notice","warning","failure"]"#]
        );
    }

    #[test]
    fn required_properties_types_and_limits() {
        let create = "/repos/acme/widgets/check-runs";
        let errors = body_errors("POST", create, &json!({"name": "pitcrew"}));
        assert_eq!(errors, ["$: missing required property \"head_sha\""]);
        let errors = body_errors(
            "POST",
            create,
            &json!({"name": "pitcrew", "head_sha": "abc", "output": {"title": "t", "summary": "s",
                "annotations": [{"path": "a", "start_line": "3", "end_line": 3.5, "annotation_level": "notice", "message": "m"}]}}),
        );
        assert_eq!(
            errors,
            [
                "$.output.annotations[0].end_line: expected integer, found number 3.5",
                "$.output.annotations[0].start_line: expected integer, found string \"3\"",
            ]
        );
        let long = "x".repeat(65536);
        let errors = body_errors(
            "POST",
            create,
            &json!({"name": "n", "head_sha": "a", "output": {"title": "t", "summary": long}}),
        );
        assert_eq!(
            errors,
            ["$.output.summary: string of 65536 characters is longer than maxLength 65535"]
        );
        let errors = body_errors(
            "POST",
            create,
            &json!({"name": "n", "head_sha": "a", "started_at": "yesterday"}),
        );
        assert_eq!(errors, ["$.started_at: \"yesterday\" is not an RFC 3339 date-time"]);
        let errors = body_errors("POST", "/repos/acme/widgets/issues/1/comments", &json!({}));
        assert_eq!(errors, ["$: missing required property \"body\""]);
    }

    #[test]
    fn review_comments_array_items_are_validated() {
        let path = "/repos/acme/widgets/pulls/3/reviews";
        let good = json!({"commit_id": "abc", "body": "LGTM", "event": "COMMENT",
            "comments": [{"path": "src/a.rs", "line": 3, "side": "RIGHT", "body": "nit"}]});
        assert_eq!(body_errors("POST", path, &good), Vec::<String>::new());
        let bad = json!({"event": "SHIP_IT", "comments": [{"path": "src/a.rs", "line": 3}, {"body": "x", "path": 4}]});
        assert_eq!(
            body_errors("POST", path, &bad),
            [
                "$.comments[0]: missing required property \"body\"",
                "$.comments[1].path: expected string, found integer 4",
                r#"$.event: "SHIP_IT" is not one of ["APPROVE","REQUEST_CHANGES","COMMENT"]"#,
            ]
        );
    }

    #[test]
    fn one_of_nullable_and_refs_on_the_real_spec() {
        let issue = "/repos/acme/widgets/issues/4";
        // `title` is `oneOf [string, integer]`, nullable; `labels[]` items are `oneOf [string, object]`.
        let ok = json!({"title": null, "body": null, "labels": ["bug", {"name": "p1"}], "milestone": 3});
        assert_eq!(body_errors("PATCH", issue, &ok), Vec::<String>::new());
        let errors = body_errors("PATCH", issue, &json!({"title": true, "state": null}));
        assert_eq!(errors.len(), 2, "{errors:?}");
        // Object members are checked in key order.
        assert_eq!(errors[0], "$.state: expected string, found null");
        assert_eq!(
            errors[1],
            "$.title: matches none of the oneOf alternatives (#1: $.title: expected string, found boolean true; \
             #2: $.title: expected integer, found boolean true)"
        );
        // `permissions` is a `$ref` to `#/components/schemas/app-permissions`, whose values are enums.
        let tokens = "/app/installations/1/access_tokens";
        assert_eq!(
            body_errors("POST", tokens, &json!({"permissions": {"checks": "write"}})),
            Vec::<String>::new()
        );
        let errors = body_errors("POST", tokens, &json!({"permissions": {"checks": "everything"}}));
        assert_eq!(
            errors,
            [r#"$.permissions.checks: "everything" is not one of ["read","write"]"#]
        );
    }

    #[test]
    fn one_of_matching_twice_and_all_of_are_errors() {
        let spec = spec();
        let schema = json!({"oneOf": [{"type": "number"}, {"type": "integer"}]});
        let errors: Vec<String> = spec
            .validate(&schema, &json!(3))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errors, ["$: matches 2 of the oneOf alternatives, exactly one expected"]);
        assert!(spec.validate(&schema, &json!(3.5)).is_empty());
        let schema = json!({"allOf": [{"$ref": "#/components/schemas/simple-user"}, {"required": ["extra"]}]});
        let errors: Vec<String> = spec
            .validate(&schema, &json!({"login": 5}))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            errors.contains(&"$.login: expected string, found integer 5".to_owned()),
            "{errors:?}"
        );
        assert!(
            errors.contains(&"$: missing required property \"extra\"".to_owned()),
            "{errors:?}"
        );
        let strict = json!({"type": "object", "properties": {"a": {"type": "integer", "minimum": 1, "maximum": 3}},
            "additionalProperties": false});
        let errors: Vec<String> = spec
            .validate(&strict, &json!({"a": 0, "b weird": 1}))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            [
                "$.a: 0 is less than the minimum 1",
                "$: unexpected property \"b weird\""
            ]
        );
        let typed = json!({"type": "object", "additionalProperties": {"type": "string"}});
        let errors: Vec<String> = spec
            .validate(&typed, &json!({"b weird": 1}))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errors, [r#"$["b weird"]: expected string, found integer 1"#]);
    }

    #[test]
    fn missing_and_malformed_bodies() {
        let spec = spec();
        let op = spec
            .route("POST", "/repos/acme/widgets/issues/comments/5/reactions")
            .unwrap();
        let errors = spec.validate_request(&op, &[], None);
        assert_eq!(errors[0].to_string(), "$: a JSON request body is required");
        let errors = spec.validate_request(&op, &[], Some(b"{nope"));
        assert!(
            errors[0].message.starts_with("the request body is not JSON"),
            "{errors:?}"
        );
        let op = spec.route("POST", "/repos/acme/widgets/pulls/5/reviews").unwrap();
        assert!(
            spec.validate_request(&op, &[], None).is_empty(),
            "the review body is optional"
        );
    }

    #[test]
    fn paths_outside_the_subset_are_routed_by_the_full_description() {
        let (spec, op) = Spec::route_github("GET", "/repos/acme/widgets/issues/1").unwrap();
        assert!(std::ptr::eq(spec, spec_subset()), "the subset routes what it has");
        assert_eq!(op.operation_id, "issues/get");
        let (spec, op) = Spec::route_github("GET", "/repos/acme/widgets/actions/runs/5/jobs").unwrap();
        assert!(std::ptr::eq(spec, Spec::github_full().unwrap()));
        assert_eq!(op.operation_id, "actions/list-jobs-for-workflow-run");
        assert_eq!(op.param("run_id"), Some("5"));
        let query = [("filter".to_owned(), "bogus".to_owned())];
        let errors: Vec<String> = spec
            .validate_request(&op, &query, None)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            [r#"query parameter "filter": "bogus" is not one of ["latest","all"]"#]
        );
        assert_eq!(
            Spec::route_github("GET", "/repos/acme/widgets/frobnicate").unwrap_err(),
            RouteError::UnknownPath
        );
        let error = Spec::route_github("DELETE", "/repos/acme/widgets/actions/jobs/5/rerun").unwrap_err();
        assert_eq!(
            error.to_string(),
            "/repos/{owner}/{repo}/actions/jobs/{job_id}/rerun has no such method (it has POST)"
        );
    }

    fn spec_subset() -> &'static Spec {
        Spec::github().unwrap()
    }

    #[test]
    fn the_full_descriptions_templates_are_read_off_its_text() {
        let text = std::fs::read_to_string(fixtures_root().join(FULL_SPEC_FILE)).unwrap();
        let scanned = scan_path_templates(&text).unwrap();
        let parsed: Vec<String> = Spec::github_full().unwrap().root()["paths"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(scanned.len(), 811);
        let mut sorted = scanned;
        sorted.sort();
        let mut parsed_sorted = parsed;
        parsed_sorted.sort();
        assert_eq!(sorted, parsed_sorted);
        // Another layout is left to the parser.
        let compact = serde_json::to_string(&json!({"paths": {"/a": {"get": {}}}})).unwrap();
        assert_eq!(scan_path_templates(&compact), None);
        let pretty = serde_json::to_string_pretty(
            &json!({"openapi": "3.0.3", "paths": {"/a/{b}": {"get": {}}, "/c": {"put": {}}}}),
        )
        .unwrap();
        assert_eq!(
            scan_path_templates(&pretty),
            Some(vec!["/a/{b}".to_owned(), "/c".to_owned()])
        );
        let odd = pretty.replace("\"/c\": {", "\"c\": {");
        assert_eq!(scan_path_templates(&odd), None, "a member that is not a template");
    }

    #[test]
    fn date_times() {
        for good in [
            "2024-01-31T23:59:59Z",
            "2024-01-31T23:59:59.123+02:00",
            "2024-01-31t00:00:00z",
        ] {
            assert!(is_date_time(good), "{good}");
        }
        for bad in [
            "2024-01-31",
            "2024-13-01T00:00:00Z",
            "2024-01-31T24:00:00Z",
            "2024-01-31T00:00:00",
            "2024-01-31T00:00:00.Z",
        ] {
            assert!(!is_date_time(bad), "{bad}");
        }
    }
}
