//! GitHub's App Manifest flow, as the fake plays it: the web form that takes a manifest
//! (`POST /settings/apps/new`, or `/organizations/{org}/settings/apps/new`) — checked as GitHub
//! checks it: required URLs, permissions of GitHub's `app-permissions` schema, events GitHub has —
//! and redirects the browser back with a one-time code, and `POST /app-manifests/{code}/conversions`
//! (in `apps.rs`), which trades the code for the App's id, key and webhook secret.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::openapi::Spec;
use super::state::{AppManifest, GithubState};

/// The organization the form's path names (`None`: the signed-in user's own App), when the path
/// is the form's; `None` when it is not the form.
pub(crate) fn form_owner(method: &str, path: &str) -> Option<Option<String>> {
    if method != "POST" {
        return None;
    }
    if path == "/settings/apps/new" {
        return Some(None);
    }
    let org = path
        .strip_prefix("/organizations/")?
        .strip_suffix("/settings/apps/new")?;
    (!org.is_empty() && !org.contains('/')).then(|| Some(org.to_owned()))
}

/// Answers the form: a redirect to the manifest's `redirect_url` with a code and the form's state,
/// or 422 with what is wrong (also recorded as a violation: pitcrew sent a manifest GitHub refuses).
pub(crate) fn serve_form(
    state: &mut GithubState,
    owner: Option<String>,
    query: Option<&str>,
    body: &[u8],
    violations: &mut Vec<String>,
) -> Response {
    let mut manifest_text = None;
    for (name, value) in url::form_urlencoded::parse(body) {
        if name == "manifest" {
            manifest_text = Some(value.into_owned());
        }
    }
    let form_state = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(name, _)| name == "state")
        .map(|(_, value)| value.into_owned());
    let manifest = match manifest_text.as_deref().map(serde_json::from_str::<Value>) {
        Some(Ok(manifest)) => manifest,
        Some(Err(e)) => return refuse(violations, &format!("the manifest is not JSON: {e}")),
        None => return refuse(violations, "the form has no `manifest` field"),
    };
    let problems = manifest_problems(&manifest);
    if !problems.is_empty() {
        return refuse(violations, &problems.join("; "));
    }
    let redirect = manifest["redirect_url"].as_str().unwrap_or_default();
    let Ok(mut location) = url::Url::parse(redirect) else {
        return refuse(violations, "redirect_url is not a URL");
    };
    let code = format!("manifest-code-{}", state.next_id());
    {
        let mut pairs = location.query_pairs_mut();
        pairs.append_pair("code", &code);
        if let Some(form_state) = &form_state {
            pairs.append_pair("state", form_state);
        }
    }
    state.app_manifests.push(AppManifest {
        code,
        owner,
        manifest,
        converted: false,
    });
    (StatusCode::FOUND, [(header::LOCATION, location.to_string())]).into_response()
}

fn refuse(violations: &mut Vec<String>, problem: &str) -> Response {
    violations.push(format!("POST /settings/apps/new: {problem}"));
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        format!("Invalid GitHub App manifest: {problem}\n"),
    )
        .into_response()
}

fn http_url(value: &Value) -> bool {
    value
        .as_str()
        .and_then(|text| url::Url::parse(text).ok())
        .is_some_and(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
}

/// What GitHub would refuse in a manifest.
pub(crate) fn manifest_problems(manifest: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(object) = manifest.as_object() else {
        return vec!["the manifest is not an object".to_owned()];
    };
    const KNOWN: &[&str] = &[
        "name",
        "url",
        "hook_attributes",
        "redirect_url",
        "callback_urls",
        "setup_url",
        "description",
        "public",
        "default_events",
        "default_permissions",
        "request_oauth_on_install",
        "setup_on_update",
    ];
    for key in object.keys() {
        if !KNOWN.contains(&key.as_str()) {
            problems.push(format!("unknown key {key}"));
        }
    }
    match manifest["name"].as_str() {
        Some(name) if !name.is_empty() && name.chars().count() <= 34 => {}
        _ => problems.push("name must be a string of 1 to 34 characters".to_owned()),
    }
    if !http_url(&manifest["url"]) {
        problems.push("url must be an http(s) URL".to_owned());
    }
    if !http_url(&manifest["redirect_url"]) {
        problems.push("redirect_url must be an http(s) URL".to_owned());
    }
    if !http_url(&manifest["hook_attributes"]["url"]) {
        problems.push("hook_attributes.url must be an http(s) URL".to_owned());
    }
    if !manifest["public"].is_null() && !manifest["public"].is_boolean() {
        problems.push("public must be a boolean".to_owned());
    }
    let Ok(spec) = Spec::github_full() else {
        problems.push("the fake could not load GitHub's description".to_owned());
        return problems;
    };
    let schema = serde_json::json!({"$ref": "#/components/schemas/app-permissions"});
    let permission_schema = &spec.root()["components"]["schemas"]["app-permissions"]["properties"];
    match manifest["default_permissions"].as_object() {
        Some(permissions) => {
            for name in permissions.keys() {
                if permission_schema.get(name).is_none() {
                    problems.push(format!("default_permissions: GitHub has no permission {name}"));
                }
            }
            for error in spec.validate(&schema, &manifest["default_permissions"]) {
                problems.push(format!("default_permissions: {error}"));
            }
        }
        None => problems.push("default_permissions must be an object".to_owned()),
    }
    let events = webhook_events(spec);
    match manifest["default_events"].as_array() {
        Some(listed) => {
            for event in listed {
                match event.as_str() {
                    Some(name) if events.iter().any(|known| known == name) => {}
                    _ => problems.push(format!("default_events: GitHub has no event {event}")),
                }
            }
        }
        None => problems.push("default_events must be an array".to_owned()),
    }
    problems
}

/// The webhook events GitHub's description has (`x-webhooks`' operation ids, `check-run/completed`
/// → `check_run`).
fn webhook_events(spec: &Spec) -> Vec<String> {
    let mut events: Vec<String> = spec.root()["x-webhooks"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(_, hook)| hook["post"]["operationId"].as_str())
        .map(|id| id.split('/').next().unwrap_or(id).replace('-', "_"))
        .collect();
    events.sort();
    events.dedup();
    events
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn the_events_come_from_githubs_description() {
        let events = webhook_events(Spec::github_full().unwrap());
        for event in [
            "issue_comment",
            "pull_request_review_comment",
            "check_suite",
            "workflow_run",
        ] {
            assert!(events.iter().any(|e| e == event), "{event} missing from {events:?}");
        }
        assert!(!events.iter().any(|e| e == "issue_comments"));
    }

    #[test]
    fn a_manifest_github_would_refuse_is_refused() {
        let good = serde_json::json!({
            "name": "pitcrew", "url": "https://x.example", "redirect_url": "http://127.0.0.1:1/callback",
            "hook_attributes": {"url": "https://x.example/webhook"},
            "default_permissions": {"contents": "write", "metadata": "read"},
            "default_events": ["issues"],
        });
        assert_eq!(manifest_problems(&good), Vec::<String>::new());
        let mut bad = good;
        bad["default_permissions"]["pull_request"] = "write".into();
        bad["default_permissions"]["contents"] = "admin".into();
        bad["default_events"] = serde_json::json!(["issue"]);
        bad["hook_attributes"]["url"] = "/webhook".into();
        let problems = manifest_problems(&bad);
        assert_eq!(problems.len(), 4, "{problems:#?}");
    }

    #[test]
    fn only_the_forms_paths_are_the_form() {
        assert_eq!(form_owner("POST", "/settings/apps/new"), Some(None));
        assert_eq!(
            form_owner("POST", "/organizations/acme/settings/apps/new"),
            Some(Some("acme".to_owned()))
        );
        assert_eq!(form_owner("GET", "/settings/apps/new"), None);
        assert_eq!(form_owner("POST", "/organizations//settings/apps/new"), None);
        assert_eq!(form_owner("POST", "/app-manifests/x/conversions"), None);
    }
}
