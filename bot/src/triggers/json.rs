//! A cursor over a `serde_json::Value` that remembers where it is, so a signed but malformed payload is
//! reported as `$.comment.user.login: expected a string, found null` rather than a bare type error.

use serde_json::Value;

/// What was wrong, and where (a JSONPath-like `$.a.b[2].c`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    pub path: String,
    pub problem: String,
    /// The value has the right type but is an identifier GitHub's rules refuse (a login, a
    /// repository name): the delivery is authentic and ignored, not malformed.
    pub refused: bool,
}

pub(crate) type Field<T> = Result<T, FieldError>;

#[derive(Debug, Clone)]
pub(crate) struct Node<'a> {
    value: &'a Value,
    path: String,
}

impl<'a> Node<'a> {
    pub fn root(value: &'a Value) -> Self {
        Node {
            value,
            path: "$".to_owned(),
        }
    }

    fn child(&self, name: &str) -> Option<Node<'a>> {
        let value = self.value.get(name)?;
        Some(Node {
            value,
            path: format!("{}.{name}", self.path),
        })
    }

    fn error(&self, problem: String) -> FieldError {
        FieldError {
            path: self.path.clone(),
            problem,
            refused: false,
        }
    }

    fn missing(&self, name: &str) -> FieldError {
        FieldError {
            path: format!("{}.{name}", self.path),
            problem: "missing".to_owned(),
            refused: false,
        }
    }

    /// A string field read into a checked identifier; a value `parse` refuses is a refused field.
    pub fn parsed<T, E: std::fmt::Display>(&self, name: &str, parse: impl FnOnce(&str) -> Result<T, E>) -> Field<T> {
        let text = self.str(name)?;
        parse(text).map_err(|error| FieldError {
            path: format!("{}.{name}", self.path),
            problem: error.to_string(),
            refused: true,
        })
    }

    /// A field that must be present and not null.
    pub fn field(&self, name: &str) -> Field<Node<'a>> {
        match self.opt(name) {
            Some(node) => Ok(node),
            None if self.value.get(name).is_some() => Err(self.child_error(name, "expected a value, found null")),
            None => Err(self.missing(name)),
        }
    }

    /// A field that may be absent or null.
    pub fn opt(&self, name: &str) -> Option<Node<'a>> {
        self.child(name).filter(|node| !node.value.is_null())
    }

    fn child_error(&self, name: &str, problem: &str) -> FieldError {
        FieldError {
            path: format!("{}.{name}", self.path),
            problem: problem.to_owned(),
            refused: false,
        }
    }

    pub fn as_str(&self) -> Field<&'a str> {
        self.value
            .as_str()
            .ok_or_else(|| self.error(format!("expected a string, found {}", kind(self.value))))
    }

    pub fn as_u64(&self) -> Field<u64> {
        self.value
            .as_u64()
            .ok_or_else(|| self.error(format!("expected a non-negative integer, found {}", kind(self.value))))
    }

    pub fn as_bool(&self) -> Field<bool> {
        self.value
            .as_bool()
            .ok_or_else(|| self.error(format!("expected a boolean, found {}", kind(self.value))))
    }

    pub fn items(&self) -> Field<Vec<Node<'a>>> {
        let items = self
            .value
            .as_array()
            .ok_or_else(|| self.error(format!("expected an array, found {}", kind(self.value))))?;
        Ok(items
            .iter()
            .enumerate()
            .map(|(i, value)| Node {
                value,
                path: format!("{}[{i}]", self.path),
            })
            .collect())
    }

    pub fn str(&self, name: &str) -> Field<&'a str> {
        self.field(name)?.as_str()
    }

    pub fn string(&self, name: &str) -> Field<String> {
        self.str(name).map(str::to_owned)
    }

    pub fn u64(&self, name: &str) -> Field<u64> {
        self.field(name)?.as_u64()
    }

    pub fn bool(&self, name: &str) -> Field<bool> {
        self.field(name)?.as_bool()
    }

    /// Absent or null is `None`; present with the wrong type is still an error.
    pub fn opt_string(&self, name: &str) -> Field<Option<String>> {
        self.opt(name).map(|n| n.as_str().map(str::to_owned)).transpose()
    }

    pub fn opt_u64(&self, name: &str) -> Field<Option<u64>> {
        self.opt(name).map(|n| n.as_u64()).transpose()
    }

    pub fn opt_bool(&self, name: &str) -> Field<Option<bool>> {
        self.opt(name).map(|n| n.as_bool()).transpose()
    }

    /// Absent or null is an empty list.
    pub fn list(&self, name: &str) -> Field<Vec<Node<'a>>> {
        self.opt(name)
            .map(|n| n.items())
            .transpose()
            .map(Option::unwrap_or_default)
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
