//! What pitcrew asks of GitHub for its App: the permissions and webhook events (one list, the one
//! the README documents and `pitcrew doctor` checks an installed App against), and the App
//! manifest `pitcrew setup app` submits.

use serde_json::{Value, json};
use url::Url;

use crate::triggers::HANDLED_EVENTS;

/// The App's repository permissions and their access, as GitHub names them. `actions: write` reads
/// failed jobs' logs and re-runs a flaky job; `workflows: write` lets a dependency chore push
/// changes to `.github/workflows/` (GitHub refuses an App's push touching them without it).
pub const PERMISSIONS: &[(&str, &str)] = &[
    ("actions", "write"),
    ("checks", "write"),
    ("contents", "write"),
    ("issues", "write"),
    ("metadata", "read"),
    ("pull_requests", "write"),
    ("workflows", "write"),
];

/// The webhook events the App subscribes to: every event the server handles.
pub fn events() -> &'static [&'static str] {
    HANDLED_EVENTS
}

/// What the manifest says beyond the lists.
#[derive(Debug, Clone)]
pub struct ManifestInput<'a> {
    /// The App's name on GitHub (unique there; its slug is made from it).
    pub name: &'a str,
    /// The server's public address: the App's homepage, and its webhook's base.
    pub public_url: &'a Url,
    /// `[server] webhook_path`.
    pub webhook_path: &'a str,
    /// Where GitHub sends the browser back with the code.
    pub redirect_url: &'a Url,
}

/// The webhook URL GitHub will deliver to: the public URL with the webhook path below its own path.
pub fn webhook_url(public_url: &Url, webhook_path: &str) -> String {
    format!("{}{}", public_url.as_str().trim_end_matches('/'), webhook_path)
}

/// The App manifest (GitHub's "Creating a GitHub App from a manifest").
pub fn manifest(input: &ManifestInput<'_>) -> Value {
    let permissions: serde_json::Map<String, Value> = PERMISSIONS
        .iter()
        .map(|(name, access)| ((*name).to_owned(), json!(access)))
        .collect();
    json!({
        "name": input.name,
        "url": input.public_url.as_str(),
        "description": "pitcrew: an LLM coding agent for pull requests, issues and CI failures.",
        "hook_attributes": {
            "url": webhook_url(input.public_url, input.webhook_path),
            "active": true,
        },
        "redirect_url": input.redirect_url.as_str(),
        "public": false,
        "default_permissions": permissions,
        "default_events": events(),
    })
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn the_manifest_names_the_webhook_below_the_public_url_and_every_handled_event() {
        let public = Url::parse("https://bots.example.com/pitcrew/").unwrap();
        let redirect = Url::parse("http://127.0.0.1:4567/callback").unwrap();
        let manifest = manifest(&ManifestInput {
            name: "acme-pitcrew",
            public_url: &public,
            webhook_path: "/api/github/webhooks",
            redirect_url: &redirect,
        });
        assert_eq!(
            manifest["hook_attributes"]["url"],
            "https://bots.example.com/pitcrew/api/github/webhooks"
        );
        assert_eq!(manifest["redirect_url"], "http://127.0.0.1:4567/callback");
        assert_eq!(manifest["default_permissions"]["pull_requests"], "write");
        assert_eq!(manifest["default_permissions"]["metadata"], "read");
        assert_eq!(
            manifest["default_events"].as_array().unwrap().len(),
            HANDLED_EVENTS.len()
        );
    }
}

#[cfg(test)]
mod readme {
    #![expect(clippy::unwrap_used, reason = "tests")]
    use super::*;

    /// `pull_requests` → `Pull requests`: the README's (and GitHub's settings page's) spelling.
    fn title(name: &str) -> String {
        let spaced = name.replace('_', " ");
        let mut chars = spaced.chars();
        chars
            .next()
            .map(|first| first.to_uppercase().chain(chars).collect())
            .unwrap_or_default()
    }

    #[test]
    fn the_readme_lists_the_permissions_and_events_the_manifest_asks_for() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
        let readme = readme.split_whitespace().collect::<Vec<_>>().join(" ");
        for (name, access) in PERMISSIONS {
            let listed = format!("*{}: {access}*", title(name));
            assert!(readme.contains(&listed), "the README does not list {listed}");
        }
        for event in events() {
            let listed = format!("*{}*", title(event));
            assert!(readme.contains(&listed), "the README does not list {listed}");
        }
    }
}
