//! `GET /`: a small page saying what answers at this address — pitcrew's version, the App it acts
//! as, how long it has been up and how many jobs wait or run. Anyone can read it, so it shows
//! nothing more: no secret, no repository, no job's subject.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::jobs::JobState;
use crate::markup::escape;

/// What the page shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The App's slug: its bot account's login without `[bot]`.
    pub app: String,
    pub uptime: Duration,
    /// Jobs by state; `None` when the store did not answer in time.
    pub jobs: Option<BTreeMap<JobState, u64>>,
    /// Where GitHub delivers (the path only: the host is the caller's).
    pub webhook_path: String,
}

/// The App's slug from its bot account's login (`pitcrew[bot]` → `pitcrew`).
pub fn app_slug(bot_login: &str) -> &str {
    bot_login.strip_suffix("[bot]").unwrap_or(bot_login)
}

impl Status {
    pub fn html(&self) -> String {
        let jobs = match &self.jobs {
            Some(jobs) => {
                let count = |state| jobs.get(&state).copied().unwrap_or(0);
                format!(
                    "{} queued, {} running",
                    count(JobState::Queued),
                    count(JobState::Running)
                )
            }
            None => "unknown (the job store did not answer)".to_owned(),
        };
        format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>pitcrew</title></head>\n<body>\n\
             <h1>pitcrew {version}</h1>\n<ul>\n\
             <li>GitHub App: {app}</li>\n\
             <li>Up for {uptime}</li>\n\
             <li>Jobs: {jobs}</li>\n\
             <li>Webhook deliveries: <code>POST {path}</code>; health: <a href=\"/healthz\">/healthz</a>; \
             metrics: <a href=\"/metrics\">/metrics</a></li>\n\
             <li>Documentation: the README of pitcrew's repository</li>\n\
             </ul>\n</body></html>\n",
            version = env!("CARGO_PKG_VERSION"),
            app = escape(&self.app),
            uptime = uptime(self.uptime),
            path = escape(&self.webhook_path),
        )
    }
}

/// "3 days 4 h 5 min", to the minute (seconds while under one).
fn uptime(up: Duration) -> String {
    let secs = up.as_secs();
    if secs < 60 {
        return format!("{secs} s");
    }
    let (days, hours, minutes) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60);
    let mut parts = Vec::new();
    if days > 0 {
        parts.push(format!("{days} day{}", if days == 1 { "" } else { "s" }));
    }
    if hours > 0 {
        parts.push(format!("{hours} h"));
    }
    if minutes > 0 {
        parts.push(format!("{minutes} min"));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_says_what_answers_and_escapes_what_it_shows() {
        let status = Status {
            app: app_slug("pit<crew>[bot]").to_owned(),
            uptime: Duration::from_secs(2 * 86_400 + 3 * 3600 + 4 * 60 + 5),
            jobs: Some(BTreeMap::from([(JobState::Queued, 3), (JobState::Running, 1)])),
            webhook_path: "/api/github/webhooks".to_owned(),
        };
        let page = status.html();
        assert!(
            page.contains(&format!("pitcrew {}", env!("CARGO_PKG_VERSION"))),
            "{page}"
        );
        assert!(page.contains("GitHub App: pit&lt;crew&gt;</li>"), "{page}");
        assert!(page.contains("Up for 2 days 3 h 4 min"), "{page}");
        assert!(page.contains("Jobs: 3 queued, 1 running"), "{page}");
        assert!(page.contains("POST /api/github/webhooks"), "{page}");
        let unknown = Status { jobs: None, ..status };
        assert!(unknown.html().contains("Jobs: unknown"));
        assert_eq!(uptime(Duration::from_secs(42)), "42 s");
        assert_eq!(uptime(Duration::from_secs(3600)), "1 h");
    }
}
