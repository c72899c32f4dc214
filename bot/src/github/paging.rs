//! Paged lists: following GitHub's `Link: <…>; rel="next"` header to the end of a list, within a
//! stated bound per list, and never off the API's own scheme, host and port.
//!
//! GitHub documents the `Link` header as the way to page ("Using pagination in the REST API"): the
//! next URL keeps the request's query and may change it (cursor-based lists replace `page` with
//! `after`), so it is followed as given rather than rebuilt from a page number. A response without
//! a `Link` header but with a full page is read on by page number (some proxies drop the header).
//! The next URL comes from a response, so it is checked before the token goes with it: a
//! misconfigured or malicious `Link` must not send the credentials to another host.

use std::borrow::Cow;
use std::future::Future;

use reqwest::header::{HeaderMap, LINK};
use url::Url;

use super::error::GithubError;
use super::http::{Endpoint, Http};

/// How one list is read: page size and the most pages read before giving up on the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageLimit {
    pub per_page: usize,
    pub max_pages: usize,
}

impl PageLimit {
    /// `max_pages` pages of a hundred (GitHub's largest page).
    pub const fn hundreds(max_pages: usize) -> Self {
        PageLimit {
            per_page: 100,
            max_pages,
        }
    }

    /// The most items this bound lets through.
    pub fn max_items(self) -> usize {
        self.per_page * self.max_pages
    }
}

/// How far each paged list is read (pages of a hundred). Where GitHub itself stops, its limit;
/// elsewhere a bound far above what a repository has, so that a list is only cut short when
/// something is wrong (and then with a warning, or a line in the report that uses it).
pub(crate) mod limits {
    use super::PageLimit;

    /// GitHub lists at most 3,000 files of a pull request.
    pub const PULL_FILES: PageLimit = PageLimit::hundreds(30);
    /// Unbounded on GitHub: 10,000 repositories of one installation.
    pub const INSTALLATION_REPOSITORIES: PageLimit = PageLimit::hundreds(100);
    /// Unbounded on GitHub: 10,000 installations of the App.
    pub const INSTALLATIONS: PageLimit = PageLimit::hundreds(100);
    /// 3,000 comments in one conversation.
    pub const ISSUE_COMMENTS: PageLimit = PageLimit::hundreds(30);
    /// 3,000 review comments on one pull request.
    pub const REVIEW_COMMENTS: PageLimit = PageLimit::hundreds(30);
    /// 1,000 reviews of one pull request.
    pub const REVIEWS: PageLimit = PageLimit::hundreds(10);
    /// 10,000 open pull requests.
    pub const OPEN_PULLS: PageLimit = PageLimit::hundreds(100);
    /// GitHub's check-runs list covers the ref's 1,000 most recent check suites; 3,000 runs.
    pub const CHECK_RUNS: PageLimit = PageLimit::hundreds(30);
    /// GitHub returns at most 1,000 workflow runs when filtering by `head_sha`.
    pub const WORKFLOW_RUNS: PageLimit = PageLimit::hundreds(10);
    /// 1,000 jobs of one workflow run (a matrix has at most 256 per attempt).
    pub const RUN_JOBS: PageLimit = PageLimit::hundreds(10);
    /// 1,000 pull requests containing one commit.
    pub const COMMIT_PULLS: PageLimit = PageLimit::hundreds(10);
}

/// The items of a paged list, and whether GitHub had more than the list's bound let pitcrew read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing<T> {
    pub items: Vec<T>,
    /// The bound was reached with a next page still announced: `items` is not the whole list.
    pub truncated: bool,
}

/// Reads `first` and the pages after it. `fetch` sends one page's request and returns its items
/// and the response headers.
pub(crate) async fn read_pages<T, F, Fut>(
    http: &Http,
    first: Endpoint,
    limit: PageLimit,
    mut fetch: F,
) -> Result<Listing<T>, GithubError>
where
    F: FnMut(Endpoint) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, HeaderMap), GithubError>>,
{
    let mut endpoint = first.query("per_page", limit.per_page.to_string()).query("page", "1");
    let mut items = Vec::new();
    let mut page = 1;
    loop {
        let (batch, headers) = fetch(endpoint.clone()).await?;
        let count = batch.len();
        items.extend(batch);
        let next = match next_link(&headers) {
            Some(link) => Some(next_endpoint(http, &endpoint, &link)?),
            None if count >= limit.per_page => Some(with_page(&endpoint, page + 1)),
            None => None,
        };
        // An empty page ends a list whatever its links say: nothing is lost, and a link that
        // points back at itself cannot loop.
        let Some(next) = next.filter(|_| count > 0) else {
            return Ok(Listing {
                items,
                truncated: false,
            });
        };
        if page >= limit.max_pages {
            return Ok(Listing { items, truncated: true });
        }
        endpoint = next;
        page += 1;
    }
}

/// The target of the `rel="next"` link, if any (RFC 8288: several headers or comma-separated
/// links, parameters in any order, `rel` quoted or not and possibly listing several relations).
pub(crate) fn next_link(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(LINK)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(|value| {
            let mut rest = value;
            while let Some(start) = rest.find('<') {
                let end = start + rest[start..].find('>')?;
                let target = &rest[start + 1..end];
                let after = &rest[end + 1..];
                let params_end = after.find('<').unwrap_or(after.len());
                let is_next = after[..params_end].split([';', ',']).any(|param| {
                    param.split_once('=').is_some_and(|(name, value)| {
                        name.trim().eq_ignore_ascii_case("rel")
                            && value
                                .trim()
                                .trim_matches('"')
                                .split_ascii_whitespace()
                                .any(|rel| rel.eq_ignore_ascii_case("next"))
                    })
                });
                if is_next {
                    return Some(target.trim().to_owned());
                }
                rest = &after[params_end..];
            }
            None
        })
}

/// The request for `link` (relative to `current`'s URL or absolute), if it stays on the API: the
/// same scheme, host and port as the base URL, and under its path (a GitHub Enterprise Server's
/// `/api/v3`).
pub(crate) fn next_endpoint(http: &Http, current: &Endpoint, link: &str) -> Result<Endpoint, GithubError> {
    let refused = |message: String| GithubError::Decode {
        what: current.to_string(),
        message,
    };
    let url = http
        .url(current)
        .join(link)
        .map_err(|_| refused("the next page's link in the `Link` header is not a URL".to_owned()))?;
    let base = http.base();
    if url.scheme() != base.scheme()
        || url.host_str() != base.host_str()
        || url.port_or_known_default() != base.port_or_known_default()
    {
        return Err(refused(format!(
            "the `Link` header sends the next page to {}, not to the API at {}; not followed",
            origin(&url),
            origin(base)
        )));
    }
    let prefix: Vec<&str> = base
        .path_segments()
        .map(|s| s.filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let segments: Vec<&str> = url.path_segments().map(Iterator::collect).unwrap_or_default();
    let Some(rest) = segments.strip_prefix(prefix.as_slice()) else {
        return Err(refused(format!(
            "the `Link` header's next page is outside the API's path {}; not followed",
            base.path()
        )));
    };
    let segments = rest
        .iter()
        .map(|segment| percent_decode(segment))
        .collect::<Option<Vec<String>>>()
        .ok_or_else(|| refused("the next page's path is not percent-encoded UTF-8".to_owned()))?;
    Ok(Endpoint {
        method: current.method.clone(),
        segments,
        query: url
            .query_pairs()
            .map(|(name, value)| (Cow::Owned(name.into_owned()), value.into_owned()))
            .collect(),
        api: current.api,
    })
}

/// `current` asking for page `page` instead.
fn with_page(current: &Endpoint, page: usize) -> Endpoint {
    let mut next = current.clone();
    next.query.retain(|(name, _)| name != "page");
    next.query.push((Cow::Borrowed("page"), page.to_string()));
    next
}

/// `scheme://host:port`, what the host check compares (never the path or query of a link).
fn origin(url: &Url) -> String {
    format!(
        "{}://{}{}",
        url.scheme(),
        url.host_str().unwrap_or_default(),
        url.port().map(|p| format!(":{p}")).unwrap_or_default()
    )
}

/// `%xx` escapes decoded; `None` when one is broken or the result is not UTF-8.
fn percent_decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use reqwest::Method;
    use reqwest::header::HeaderValue;

    use super::*;
    use crate::github::http::ClientOptions;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(LINK, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn the_next_link_is_found_however_it_is_written() {
        let github = r#"<https://api.github.com/repositories/1300192/issues?page=2>; rel="prev", <https://api.github.com/repositories/1300192/issues?page=4>; rel="next", <https://api.github.com/repositories/1300192/issues?page=515>; rel="last", <https://api.github.com/repositories/1300192/issues?page=1>; rel="first""#;
        assert_eq!(
            next_link(&headers(&[github])).as_deref(),
            Some("https://api.github.com/repositories/1300192/issues?page=4")
        );
        assert_eq!(
            next_link(&headers(&["</x?page=2>;rel=next"])).as_deref(),
            Some("/x?page=2")
        );
        assert_eq!(
            next_link(&headers(&[
                r#"</a>; title="a, b"; rel="prev""#,
                r#"</b>; rel="next last""#
            ]))
            .as_deref(),
            Some("/b")
        );
        assert_eq!(next_link(&headers(&[r#"</a>; rel="last""#])), None);
        assert_eq!(next_link(&headers(&[r#"</a>; rel="nextish""#, "garbage"])), None);
        assert_eq!(next_link(&HeaderMap::new()), None);
    }

    #[test]
    fn a_next_link_becomes_a_request_only_on_the_apis_own_origin() {
        let http = Http::new(
            &Url::parse("https://ghe.example/api/v3").unwrap(),
            ClientOptions::default(),
        )
        .unwrap();
        let current = Endpoint::new(Method::GET, ["repos", "o", "r", "pulls"]).query("state", "open");
        let next = next_endpoint(
            &http,
            &current,
            "https://ghe.example/api/v3/repos/o/r/pulls?state=open&per_page=100&page=2&after=Y3Vyc29y%3D",
        )
        .unwrap();
        assert_eq!(next.to_string(), "GET /repos/o/r/pulls");
        let query: Vec<(String, String)> = next.query.iter().map(|(n, v)| (n.to_string(), v.clone())).collect();
        assert_eq!(
            query,
            [
                ("state", "open"),
                ("per_page", "100"),
                ("page", "2"),
                ("after", "Y3Vyc29y=")
            ]
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
        // Relative links are relative to the request; escapes survive the round trip.
        let relative = next_endpoint(
            &http,
            &current,
            "/api/v3/repos/o/r/commits/feature%2Fx/check-runs?page=3",
        )
        .unwrap();
        assert_eq!(
            relative.segments,
            ["repos", "o", "r", "commits", "feature/x", "check-runs"]
        );
        assert_eq!(
            http.url(&relative).as_str(),
            "https://ghe.example/api/v3/repos/o/r/commits/feature%2Fx/check-runs?page=3"
        );
        for (link, problem) in [
            (
                "https://evil.example/api/v3/repos/o/r/pulls?page=2",
                "sends the next page to https://evil.example, not to the API at https://ghe.example",
            ),
            (
                "http://ghe.example/api/v3/repos/o/r/pulls?page=2",
                "sends the next page to http://ghe.example",
            ),
            (
                "https://ghe.example:8443/api/v3/repos/o/r/pulls?page=2",
                "sends the next page to https://ghe.example:8443",
            ),
            ("//evil.example/api/v3/x", "sends the next page to https://evil.example"),
            ("https://ghe.example/login?page=2", "outside the API's path /api/v3"),
            ("https://ghe.example/api/v3/repos/%ff/r", "not percent-encoded UTF-8"),
        ] {
            let error = next_endpoint(&http, &current, link).unwrap_err();
            assert!(error.to_string().contains(problem), "{link}: {error}");
            assert!(
                error
                    .to_string()
                    .starts_with("GET /repos/o/r/pulls: unexpected response: "),
                "{error}"
            );
        }
    }
}
