//! What a review leaves for the next one, in a hidden line of the pull request's review summary
//! comment: the head it reviewed (and that head's merge base with the base branch) and the
//! fingerprints of the findings it listed only in the summary (inline ones carry their own). Kept
//! on GitHub, not in the job store, so the Action's throwaway store and a server's alike find it;
//! only the bot's own comment is read (`handlers/review.rs`), and what is read is checked here.

use serde::{Deserialize, Serialize};

/// The first line of the bot's review summary comment on a pull request.
pub const SUMMARY_MARKER: &str = "<!-- pitcrew:review-summary -->";

const STATE_OPEN: &str = "<!-- pitcrew:review-state ";
const STATE_CLOSE: &str = " -->";

/// Summary-only fingerprints kept: the newest, past this the oldest are forgotten.
pub const MAX_KEPT_FINGERPRINTS: usize = 300;

/// The last review of a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewState {
    /// The head commit it reviewed.
    pub head: String,
    /// That head's merge base with the base branch: the old diff is `merge_base..head`.
    pub merge_base: String,
    /// Fingerprints of findings that were listed in a summary rather than posted inline.
    #[serde(default)]
    pub fingerprints: Vec<String>,
}

impl ReviewState {
    /// The hidden line that carries it.
    pub fn to_marker(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        // JSON of hex strings: nothing in it can end the HTML comment early.
        format!("{STATE_OPEN}{json}{STATE_CLOSE}")
    }

    /// The state in a summary comment's body; `None` when there is none or it is not well formed
    /// (commits as 40 or 64 hex digits, fingerprints as short hex).
    pub fn read(body: &str) -> Option<ReviewState> {
        let start = body.rfind(STATE_OPEN)? + STATE_OPEN.len();
        let end = body[start..].find(STATE_CLOSE)? + start;
        let state: ReviewState = serde_json::from_str(&body[start..end]).ok()?;
        let sha = |s: &str| matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit());
        let short =
            |s: &String| !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
        (sha(&state.head) && sha(&state.merge_base) && state.fingerprints.iter().all(short)).then_some(state)
    }

    /// Adds fingerprints, keeping the newest [`MAX_KEPT_FINGERPRINTS`].
    pub fn remember(&mut self, fingerprints: impl IntoIterator<Item = String>) {
        for fingerprint in fingerprints {
            if !self.fingerprints.contains(&fingerprint) {
                self.fingerprints.push(fingerprint);
            }
        }
        let excess = self.fingerprints.len().saturating_sub(MAX_KEPT_FINGERPRINTS);
        self.fingerprints.drain(..excess);
    }
}

/// `body` without its state line.
pub fn without_state(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    for line in body.split_inclusive('\n') {
        if !line.trim_start().starts_with(STATE_OPEN) {
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn the_state_survives_a_round_trip_through_a_comment_and_bad_ones_are_refused() {
        let mut state = ReviewState {
            head: "a".repeat(40),
            merge_base: "b".repeat(40),
            fingerprints: vec!["0123abcd-4567ef01".into()],
        };
        let body = format!("{SUMMARY_MARKER}\n## Review\n\ntext\n{}\n", state.to_marker());
        assert_eq!(ReviewState::read(&body), Some(state.clone()));
        assert_eq!(without_state(&body), format!("{SUMMARY_MARKER}\n## Review\n\ntext\n"));
        for bad in [
            body.replace(&"a".repeat(40), "not-a-sha"),
            body.replace("0123abcd-4567ef01", "<script>"),
            body.replace(" -->", ""),
            "no state here".to_owned(),
        ] {
            assert_eq!(ReviewState::read(&bad), None, "{bad}");
        }
        state.remember((0..MAX_KEPT_FINGERPRINTS + 5).map(|n| format!("{n:x}")));
        assert_eq!(state.fingerprints.len(), MAX_KEPT_FINGERPRINTS);
        assert_eq!(
            state.fingerprints.last().unwrap(),
            &format!("{:x}", MAX_KEPT_FINGERPRINTS + 4)
        );
    }
}
