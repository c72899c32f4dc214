//! What can go wrong talking to GitHub, shaped for the callers that branch on it (not found, rate
//! limited, validation, a GraphQL answer's `errors`). Every message names the request
//! (`POST /repos/o/r/check-runs`, `POST /graphql (ReviewThreads)`); none ever holds a token, a JWT
//! or key material.

use std::fmt;
use std::time::SystemTime;

use serde::Deserialize;

use super::time::format_rfc3339;

#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    /// 401: the token is wrong, expired or revoked.
    #[error("{request}: GitHub rejected the credentials (401)")]
    Unauthorized { request: String },
    /// 403 that is not a rate limit: the token lacks a permission, or the action is not allowed.
    #[error("{request}: forbidden (403): {message}")]
    Forbidden { request: String, message: String },
    /// 404 (GitHub also answers 404 for what the token may not see).
    #[error("{what}: not found (404)")]
    NotFound { what: String },
    /// 422: GitHub understood the request but refused its content.
    #[error("{request}: GitHub refused the request (422): {message}{}", FieldErrors(errors))]
    Validation {
        request: String,
        message: String,
        errors: Vec<FieldError>,
    },
    /// A rate limit whose wait is longer than the client may wait, or that outlasted the attempts.
    #[error("{request}: rate limited by GitHub{}", reset_at.map(|at| format!(" until {}", format_rfc3339(at))).unwrap_or_default())]
    RateLimited {
        request: String,
        reset_at: Option<SystemTime>,
    },
    /// 5xx after the retries were spent.
    #[error("{request}: GitHub server error ({status})")]
    Server { request: String, status: u16 },
    /// Any other unsuccessful status (400, 409, 410, …).
    #[error("{request}: unexpected status {status}: {message}")]
    Status {
        request: String,
        status: u16,
        message: String,
    },
    /// A GraphQL answer with `errors` (GitHub answers 200 even then): the query was refused (it
    /// does not fit the schema, a variable has the wrong type) or part of it could not be answered
    /// (`NOT_FOUND`, `FORBIDDEN`). What `data` came with them is not used.
    #[error("{request}: GitHub's GraphQL API answered with errors: {}", GraphqlErrors(errors))]
    Graphql { request: String, errors: Vec<GraphqlError> },
    /// The request never got a response (connection refused, reset, timed out).
    #[error("{request}: {message}")]
    Transport { request: String, message: String },
    /// The response was not what GitHub documents.
    #[error("{what}: unexpected response: {message}")]
    Decode { what: String, message: String },
    /// A repository path asked of the contents API is not a regular file.
    #[error("{what}: is a {kind}, not a file")]
    NotAFile { what: String, kind: String },
    /// A file too large to fetch through the contents API.
    #[error("{what}: the file is {size} bytes, more than the {limit} bytes pitcrew reads")]
    FileTooLarge { what: String, size: u64, limit: u64 },
    /// The caller asked for something that cannot be expressed as a request.
    #[error("{what}: {message}")]
    InvalidInput { what: String, message: String },
    /// The App's JWT could not be signed.
    #[error("signing the GitHub App JWT: {message}")]
    Jwt { message: String },
    /// Not sent: the job this client writes for can no longer confirm it is its own (its lease went
    /// to another worker, or could not be confirmed) — see [`super::client::Fence`].
    #[error("{request}: not sent: {reason}")]
    Fenced { request: String, reason: String },
}

impl GithubError {
    /// Whether GitHub said the thing does not exist (or is hidden from the token): a 404, or a
    /// GraphQL answer whose every error is `NOT_FOUND`.
    pub fn is_not_found(&self) -> bool {
        match self {
            GithubError::NotFound { .. } => true,
            GithubError::Graphql { errors, .. } => {
                !errors.is_empty() && errors.iter().all(|e| e.kind.as_deref() == Some("NOT_FOUND"))
            }
            _ => false,
        }
    }
}

/// One entry of a GraphQL answer's `errors`: its message and, where GitHub gives one, its `type`
/// (`NOT_FOUND`, `FORBIDDEN`, `RATE_LIMITED`…).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct GraphqlError {
    #[serde(default)]
    pub message: String,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

impl fmt::Display for GraphqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Some(kind) => write!(f, "{} ({kind})", self.message),
            None => f.write_str(&self.message),
        }
    }
}

struct GraphqlErrors<'a>(&'a [GraphqlError]);

impl fmt::Display for GraphqlErrors<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            error.fmt(f)?;
        }
        Ok(())
    }
}

/// One entry of a 422 body's `errors` array. GitHub sends objects (`resource`, `field`, `code`,
/// `message`) or, on some endpoints, plain strings; a string becomes the `message`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldError {
    pub resource: Option<String>,
    pub field: Option<String>,
    pub code: Option<String>,
    pub message: Option<String>,
}

impl<'de> Deserialize<'de> for FieldError {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Text(String),
            Object {
                #[serde(default)]
                resource: Option<String>,
                #[serde(default)]
                field: Option<String>,
                #[serde(default)]
                code: Option<String>,
                #[serde(default)]
                message: Option<String>,
            },
            Other(serde_json::Value),
        }
        Ok(match Wire::deserialize(deserializer)? {
            Wire::Text(message) => FieldError {
                message: Some(message),
                ..FieldError::default()
            },
            Wire::Object {
                resource,
                field,
                code,
                message,
            } => FieldError {
                resource,
                field,
                code,
                message,
            },
            Wire::Other(value) => FieldError {
                message: Some(value.to_string()),
                ..FieldError::default()
            },
        })
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let location: Vec<&str> = [&self.resource, &self.field]
            .into_iter()
            .filter_map(|part| part.as_deref())
            .collect();
        if !location.is_empty() {
            write!(f, "{}: ", location.join("."))?;
        }
        match (&self.message, &self.code) {
            (Some(message), _) => f.write_str(message),
            (None, Some(code)) => f.write_str(code),
            (None, None) => f.write_str("invalid"),
        }
    }
}

struct FieldErrors<'a>(&'a [FieldError]);

impl fmt::Display for FieldErrors<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            f.write_str(if i == 0 { " (" } else { "; " })?;
            error.fmt(f)?;
        }
        if !self.0.is_empty() {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// GitHub's error body: `{"message": "...", "errors": [...], "documentation_url": "..."}`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub errors: Vec<FieldError>,
}

impl ErrorBody {
    /// The body's message, or the start of a non-JSON body (a proxy's HTML page, say).
    pub fn parse(text: &str) -> ErrorBody {
        match serde_json::from_str::<ErrorBody>(text) {
            Ok(body) => body,
            Err(_) => ErrorBody {
                message: text.trim().chars().take(200).collect(),
                errors: Vec::new(),
            },
        }
    }
}
