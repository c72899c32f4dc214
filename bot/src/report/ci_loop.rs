//! The fix loop's timeline, as the check run and the progress comment show it: each round's commit,
//! what CI said about it, and what the round cost; while it waits, which commit it waits on; at the
//! end, how the loop ended (CI passed, still failing at the bound, a person took over, …).

use serde::{Deserialize, Serialize};

use super::markdown;
use super::short_sha;

/// One round: the agent's change, pushed, and what CI said of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// 1 for the job's first change.
    pub number: u32,
    /// The commit the round pushed.
    pub commit: String,
    /// What CI said of it; `None` while it runs.
    pub ci: Option<RoundCi>,
    /// What the round's agent cost, when the price is known.
    pub cost_usd: Option<f64>,
    /// The agent's time in the round.
    pub agent_ms: u64,
    /// How long the round waited for CI.
    pub waited_ms: u64,
}

/// What CI said of one round's commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RoundCi {
    /// Every check passed, or failed only in ways that are not the commit's (`excused`: the job
    /// and why, e.g. "fails on `main` too", "flaky after a re-run").
    Passed { excused: Vec<String> },
    /// These jobs failed because of the commit.
    Failed { jobs: Vec<String> },
    /// CI did not complete within the round's wait.
    TimedOut,
    /// No CI started on the commit.
    NotStarted,
    /// The wait ended for another reason (in words: "the branch moved to abc1234").
    Interrupted { why: String },
}

/// How the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoopEnd {
    /// CI passed on the last commit.
    Passed,
    /// CI still fails at the bound (`max_rounds`, or the job's budget: `why`).
    StillFailing { why: String },
    /// CI did not complete within `[ci_loop] wait_timeout`.
    TimedOut,
    /// No CI started on the commit; `token_hint`: pitcrew runs as an Action whose token's pushes
    /// start no workflows.
    NoCi { token_hint: bool },
    /// Someone else pushed to the branch (its new head).
    BranchMoved { head: String },
    /// The pull request was closed.
    Closed,
    /// Someone else pushed while this round worked: its change was replayed on top and pushed,
    /// and the loop stopped there.
    MovedDuringRound { round: u32 },
    /// A new request on the pull request (job id, who, the command) takes over.
    NewRequest { job: i64, by: String, command: String },
    /// A round could not deliver a fix (its report says why: no change, a regression, …).
    RoundFailed { why: String },
}

/// Every round so far, and the end once there is one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    pub rounds: Vec<Round>,
    pub end: Option<LoopEnd>,
    /// Whole rounds allowed.
    pub max_rounds: u32,
}

impl Timeline {
    /// The loop's end in one line, for the check run's title and the job's headline.
    pub fn headline(&self) -> Option<String> {
        let last = self.rounds.last()?;
        let commit = short_sha(&last.commit);
        let rounds = plural(self.rounds.len(), "round");
        Some(match self.end.as_ref()? {
            LoopEnd::Passed => format!("CI passed on {commit} after {rounds}"),
            LoopEnd::StillFailing { .. } => format!("CI still fails on {commit} after {rounds}"),
            LoopEnd::TimedOut => format!("CI did not finish on {commit} in time"),
            LoopEnd::NoCi { .. } => format!("No CI ran on {commit}"),
            LoopEnd::BranchMoved { head } => format!("Stopped waiting for CI: the branch moved to {}", short_sha(head)),
            LoopEnd::Closed => "Stopped waiting for CI: the pull request was closed".to_owned(),
            LoopEnd::MovedDuringRound { round } => {
                format!("Stopped after round {round}: someone else pushed to the branch meanwhile")
            }
            LoopEnd::NewRequest { .. } => "Stopped waiting for CI: a new request took over".to_owned(),
            LoopEnd::RoundFailed { .. } => format!(
                "CI still fails on {commit}; round {} pushed nothing",
                self.rounds.len() + 1
            ),
        })
    }

    /// Whether CI passed in the end.
    pub fn passed(&self) -> bool {
        matches!(self.end, Some(LoopEnd::Passed))
    }

    /// The line while a round waits for CI.
    pub fn waiting_line(&self) -> Option<String> {
        let last = self.rounds.last()?;
        Some(format!(
            "waiting for CI on {} (round {} of {})",
            short_sha(&last.commit),
            last.number,
            self.max_rounds.max(last.number)
        ))
    }

    /// The `### CI` section: a numbered line per round, the end, and the totals. `commit_url`
    /// makes a commit's link.
    pub fn render(&self, commit_url: &dyn Fn(&str) -> String) -> String {
        let mut out = String::from("### CI\n\n");
        for round in &self.rounds {
            let sha = short_sha(&round.commit);
            let ci = match &round.ci {
                None => "⏳ waiting for CI".to_owned(),
                Some(RoundCi::Passed { excused }) if excused.is_empty() => "✅ CI passed".to_owned(),
                Some(RoundCi::Passed { excused }) => format!(
                    "✅ CI passed but for failures that are not this change's: {}",
                    excused
                        .iter()
                        .map(|e| markdown::inline(e))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
                Some(RoundCi::Failed { jobs }) => format!(
                    "❌ CI failed ({}: {})",
                    plural(jobs.len(), "job"),
                    jobs.iter()
                        .map(|j| markdown::code_span(j))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Some(RoundCi::TimedOut) => "⌛ CI did not finish in time".to_owned(),
                Some(RoundCi::NotStarted) => "no CI started".to_owned(),
                Some(RoundCi::Interrupted { why }) => format!("stopped waiting: {}", markdown::inline(why)),
            };
            let mut figures = Vec::new();
            if let Some(cost) = round.cost_usd {
                figures.push(format!("${cost:.2}"));
            }
            figures.push(format!("agent {}", duration_words(round.agent_ms)));
            if round.waited_ms > 0 {
                figures.push(format!("CI {}", duration_words(round.waited_ms)));
            }
            out.push_str(&format!(
                "{}. Round {} pushed [{sha}]({}) → {ci} · {}\n",
                round.number,
                round.number,
                commit_url(&round.commit),
                figures.join(" · ")
            ));
        }
        if let Some(end) = &self.end {
            out.push('\n');
            out.push_str(&self.end_words(end));
            out.push('\n');
        }
        let cost: Option<f64> = self.rounds.iter().map(|r| r.cost_usd).sum();
        let agent: u64 = self.rounds.iter().map(|r| r.agent_ms).sum();
        let waited: u64 = self.rounds.iter().map(|r| r.waited_ms).sum();
        let cost = cost.map(|c| format!("${c:.2}, ")).unwrap_or_default();
        out.push_str(&format!(
            "\n<sub>In total: {cost}agent {}, waiting for CI {}.</sub>",
            duration_words(agent),
            duration_words(waited)
        ));
        out
    }

    fn end_words(&self, end: &LoopEnd) -> String {
        let rounds = plural(self.rounds.len(), "round");
        let commit = self.rounds.last().map(|r| short_sha(&r.commit)).unwrap_or("");
        match end {
            LoopEnd::Passed => format!("**CI passed on {commit} after {rounds}.**"),
            LoopEnd::StillFailing { why } => format!(
                "**CI still fails on {commit} after {rounds}**; I stopped there: {}. The failures are listed \
                 above and in the CI logs; ask again once you have looked.",
                markdown::inline(why)
            ),
            LoopEnd::TimedOut => format!(
                "**CI did not finish on {commit} within the wait** (`[ci_loop] wait_timeout`); I stopped waiting."
            ),
            LoopEnd::NoCi { token_hint: true } => format!(
                "**No CI started on {commit}.** Pushes made with a workflow's `GITHUB_TOKEN` do not start workflows: \
                 give the Action a GitHub App token (`actions/create-github-app-token`) or a fine-grained personal \
                 access token, so that pitcrew's pushes run CI."
            ),
            LoopEnd::NoCi { token_hint: false } => format!(
                "**No CI started on {commit}** within `[ci_loop] start_timeout`, so there is nothing to wait for."
            ),
            LoopEnd::BranchMoved { head } => format!(
                "**Someone else pushed to the branch ({})**, so I stopped: their commit wins.",
                short_sha(head)
            ),
            LoopEnd::Closed => "**The pull request was closed**, so I stopped.".to_owned(),
            LoopEnd::MovedDuringRound { round } => format!(
                "**Someone else pushed to the branch while round {round} worked**: its change went on top of \
                 theirs ({commit}), and I stopped there rather than keep changing work that is not only mine."
            ),
            LoopEnd::NewRequest { job, by, command } => format!(
                "**@{} asked for `{}` (job {job})**, so I stopped the loop and left the pull request to that.",
                super::login_text(by),
                markdown::inline(command)
            ),
            LoopEnd::RoundFailed { why } => format!(
                "**CI still fails on {commit}, and round {} pushed nothing**: {}",
                self.rounds.len() + 1,
                markdown::inline(why)
            ),
        }
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// `42s`, `3m 05s`, `1h 02m`.
fn duration_words(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m {:02}s", secs / 60, secs % 60),
        _ => format!("{}h {:02}m", secs / 3600, (secs % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(number: u32, commit: &str, ci: Option<RoundCi>) -> Round {
        Round {
            number,
            commit: commit.to_owned(),
            ci,
            cost_usd: Some(0.125),
            agent_ms: 65_000,
            waited_ms: 185_000,
        }
    }

    #[test]
    fn the_timeline_shows_every_round_the_end_and_the_totals() {
        let timeline = Timeline {
            rounds: vec![
                round(
                    1,
                    "abc1234567",
                    Some(RoundCi::Failed {
                        jobs: vec!["lint".into(), "test (windows)".into()],
                    }),
                ),
                round(2, "def5678901", Some(RoundCi::Passed { excused: Vec::new() })),
            ],
            end: Some(LoopEnd::Passed),
            max_rounds: 3,
        };
        assert_eq!(
            timeline.headline().as_deref(),
            Some("CI passed on def5678 after 2 rounds")
        );
        insta::assert_snapshot!(timeline.render(&|sha| format!("https://x/commit/{sha}")), @r"
        ### CI

        1. Round 1 pushed [abc1234](https://x/commit/abc1234567) → ❌ CI failed (2 jobs: `lint`, `test (windows)`) · $0.12 · agent 1m 05s · CI 3m 05s
        2. Round 2 pushed [def5678](https://x/commit/def5678901) → ✅ CI passed · $0.12 · agent 1m 05s · CI 3m 05s

        **CI passed on def5678 after 2 rounds.**

        <sub>In total: $0.25, agent 2m 10s, waiting for CI 6m 10s.</sub>
        ");
    }

    #[test]
    fn a_waiting_round_and_the_token_hint() {
        let mut timeline = Timeline {
            rounds: vec![round(1, "abc1234567", None)],
            end: None,
            max_rounds: 3,
        };
        assert_eq!(
            timeline.waiting_line().as_deref(),
            Some("waiting for CI on abc1234 (round 1 of 3)")
        );
        assert!(timeline.render(&|s| s.to_owned()).contains("⏳ waiting for CI"));
        timeline.end = Some(LoopEnd::MovedDuringRound { round: 2 });
        assert_eq!(
            timeline.headline().as_deref(),
            Some("Stopped after round 2: someone else pushed to the branch meanwhile")
        );
        assert!(
            timeline
                .render(&|s| s.to_owned())
                .contains("its change went on top of theirs (abc1234)")
        );
        timeline.end = Some(LoopEnd::NoCi { token_hint: true });
        let text = timeline.render(&|s| s.to_owned());
        assert!(text.contains("`GITHUB_TOKEN` do not start workflows"), "{text}");
        assert_eq!(timeline.headline().as_deref(), Some("No CI ran on abc1234"));
    }
}
