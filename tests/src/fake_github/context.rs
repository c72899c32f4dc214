//! What an operation of the fake GitHub is given (the request's [`Ctx`]: operation, path, query,
//! body, caller, the App's configuration and the rate limit) and what it answers (a [`Reply`]), and
//! the paging of list answers, shared by every area's operations.

use std::time::Duration;

use serde_json::Value;

use super::auth::Caller;
use super::openapi::Operation;
use super::wire;

/// GitHub's page size when `per_page` is absent, and its largest.
const DEFAULT_PER_PAGE: usize = 30;

const MAX_PER_PAGE: usize = 100;

/// The App the fake plays and where it is served.
#[derive(Debug, Clone)]
pub(crate) struct AppConfig {
    pub app_id: u64,
    pub client_id: String,
    pub slug: String,
    pub installation_id: u64,
    /// The installation's account (an organization or user login).
    pub account: String,
    pub base_url: String,
    pub token_lifetime: Duration,
    /// What `GET /app` says the App may do and hears of; `None`: the fake's default permissions
    /// and GitHub's example's events.
    pub app_settings: Option<(Value, Vec<String>)>,
    /// Whether the App is installed anywhere (`GET /app/installations` lists its one installation).
    pub installed: bool,
}

impl AppConfig {
    pub fn bot_login(&self) -> String {
        format!("{}[bot]", self.slug)
    }
}

/// The primary rate limit as it stands for this request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RateLimit {
    pub limit: u64,
    pub used: u64,
    pub reset: u64,
}

impl RateLimit {
    pub fn remaining(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }
}

/// What one request brings to its operation.
pub(crate) struct Ctx<'a> {
    pub op: &'a Operation<'a>,
    pub path: &'a str,
    pub query: &'a [(String, String)],
    pub body: &'a Value,
    pub caller: &'a Caller,
    pub accept: &'a str,
    pub cfg: &'a AppConfig,
    pub rate: RateLimit,
}

impl Ctx<'_> {
    pub(crate) fn param(&self, name: &str) -> &str {
        self.op.param(name).unwrap_or("")
    }

    /// A numeric path parameter (the spec check already made sure it is one).
    pub(crate) fn number(&self, name: &str) -> u64 {
        self.param(name).parse().unwrap_or(0)
    }

    pub(crate) fn query(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub(crate) fn login(&self) -> String {
        self.caller.login(&self.cfg.bot_login())
    }

    pub(crate) fn api(&self, rest: &str) -> String {
        format!("{}{rest}", self.cfg.base_url)
    }
}

/// A response body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Payload {
    Json(Value),
    Raw { bytes: Vec<u8>, content_type: &'static str },
    Empty,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    pub status: u16,
    pub payload: Payload,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    pub fn json(status: u16, value: Value) -> Reply {
        Reply {
            status,
            payload: Payload::Json(value),
            headers: Vec::new(),
        }
    }

    pub(crate) fn no_content() -> Reply {
        Reply {
            status: 204,
            payload: Payload::Empty,
            headers: Vec::new(),
        }
    }

    pub fn error(status: u16, message: &str, docs_url: &str) -> Reply {
        Reply::json(status, wire::error_body(status, message, docs_url))
    }

    pub(crate) fn not_found(ctx: &Ctx<'_>) -> Reply {
        Reply::error(404, "Not Found", ctx.op.docs_url)
    }

    /// GitHub's 422 for a semantic problem: `{"message": "Validation Failed", "errors": [...]}`.
    pub(crate) fn validation_failed(ctx: &Ctx<'_>, errors: Value) -> Reply {
        let mut body = wire::error_body(422, "Validation Failed", ctx.op.docs_url);
        body["errors"] = errors;
        Reply::json(422, body)
    }
}

/// One page of `items` as `per_page`/`page` ask, with GitHub's `Link` header when there are more:
/// absolute URLs that keep the request's other query parameters (GitHub's do), `per_page` and
/// `page` last.
pub(crate) fn paginate(items: Vec<Value>, ctx: &Ctx<'_>) -> (Vec<Value>, Vec<(String, String)>) {
    let per_page = ctx
        .query("per_page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(DEFAULT_PER_PAGE)
        .clamp(1, MAX_PER_PAGE);
    let page = ctx
        .query("page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let mut links = Vec::new();
    let mut query: Vec<(String, String)> = ctx
        .query
        .iter()
        .filter(|(name, _)| name != "page" && name != "per_page")
        .cloned()
        .collect();
    query.push(("per_page".to_owned(), per_page.to_string()));
    let url = |n: usize| {
        let mut query = query.clone();
        query.push(("page".to_owned(), n.to_string()));
        format!("<{}?{}>", ctx.api(ctx.path), wire::encode_query(&query))
    };
    if page < last {
        links.push(format!("{}; rel=\"next\"", url(page + 1)));
        links.push(format!("{}; rel=\"last\"", url(last)));
    }
    if page > 1 {
        links.push(format!("{}; rel=\"prev\"", url(page - 1)));
        links.push(format!("{}; rel=\"first\"", url(1)));
    }
    let headers = if links.is_empty() {
        Vec::new()
    } else {
        vec![("link".to_owned(), links.join(", "))]
    };
    let page_items = items.into_iter().skip((page - 1) * per_page).take(per_page).collect();
    (page_items, headers)
}

pub(crate) fn list(items: Vec<Value>, ctx: &Ctx<'_>) -> Reply {
    let (page, headers) = paginate(items, ctx);
    Reply {
        headers,
        ..Reply::json(200, Value::Array(page))
    }
}
