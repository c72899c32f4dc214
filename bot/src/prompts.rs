//! Prompt templates: markdown files in the repository's `prompts/` directory, embedded in the
//! binary at build time and overridable file by file from a directory at run time, with
//! `{{name}}` variables filled in by a strict renderer. Besides the job templates, the agent loop's
//! own messages and the blocks that describe a pull request or an issue are templates too.
//!
//! Templates must hold nothing volatile (dates, counters, ids): the system prompt is the start of
//! every request, and providers only reuse their prompt cache when that prefix is byte-identical.

use std::path::{Path, PathBuf};

/// A prompt template, one markdown file each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Template {
    /// The agent's system prompt.
    System,
    /// The first message of a job that changes code (`@agent fix …`, `pitcrew run`).
    Fix,
    /// The first message of a review job.
    Review,
    /// The first message of an `explain` job: a question to answer, nothing to change.
    Explain,
    /// The first message of a `describe` job: the pull request's description section to write.
    Describe,
    /// The first message of a CI-failure triage: find the root cause of the failures, read-only.
    Triage,
    /// The first message of a dependency chore whose update broke something.
    Chore,
    /// The system prompt of the `task` tool's research sub-agent.
    Subagent,
    /// The agent loop's note after a first answer without a tool call to a task that needs a change.
    NoteNudge,
    /// The agent loop's note when most of a budget is spent.
    NoteBudget,
    /// The agent loop's note before the last call, once a budget ran out.
    NoteGrace,
    /// The agent loop's note when the model keeps making the same calls.
    NoteRepetition,
    /// The request for a summary that replaces the older turns (compaction).
    Compact,
    /// Said in the summary request when the oldest turns had to be left out of it.
    CompactDropped,
    /// The message that replaces the summarised turns.
    CompactSummary,
    /// The `context` of a job on a pull request: what it is, who asked, what the job is there to do.
    ContextPullRequest,
    /// The pull request's description, after [`Template::ContextPullRequest`].
    ContextPullDescription,
    /// The review comment a request was made in, with its diff hunk.
    ContextReviewComment,
    /// The pull request's diff, for a job whose template has no diff of its own.
    ContextPullDiff,
    /// The `context` of a job on an issue.
    ContextIssue,
    /// The issue's text, after [`Template::ContextIssue`].
    ContextIssueBody,
    /// The `context` of a triage of a pull request's failed CI.
    ContextCiPullRequest,
    /// The `context` of a triage of a push's failed CI.
    ContextCiPush,
    /// The task of a fix round after CI failed on the commit the job pushed (the fix loop).
    CiRound,
}

impl Template {
    pub const ALL: &'static [Template] = &[
        Template::System,
        Template::Fix,
        Template::Review,
        Template::Explain,
        Template::Describe,
        Template::Triage,
        Template::Chore,
        Template::Subagent,
        Template::NoteNudge,
        Template::NoteBudget,
        Template::NoteGrace,
        Template::NoteRepetition,
        Template::Compact,
        Template::CompactDropped,
        Template::CompactSummary,
        Template::ContextPullRequest,
        Template::ContextPullDescription,
        Template::ContextReviewComment,
        Template::ContextPullDiff,
        Template::ContextIssue,
        Template::ContextIssueBody,
        Template::ContextCiPullRequest,
        Template::ContextCiPush,
        Template::CiRound,
    ];

    /// The file name in `prompts/` and in an override directory.
    pub fn file_name(self) -> &'static str {
        match self {
            Template::System => "system.md",
            Template::Fix => "fix.md",
            Template::Review => "review.md",
            Template::Explain => "explain.md",
            Template::Describe => "describe.md",
            Template::Triage => "triage.md",
            Template::Chore => "chore.md",
            Template::Subagent => "subagent.md",
            Template::NoteNudge => "note-nudge.md",
            Template::NoteBudget => "note-budget.md",
            Template::NoteGrace => "note-grace.md",
            Template::NoteRepetition => "note-repetition.md",
            Template::Compact => "compact.md",
            Template::CompactDropped => "compact-dropped.md",
            Template::CompactSummary => "compact-summary.md",
            Template::ContextPullRequest => "context-pull-request.md",
            Template::ContextPullDescription => "context-pull-description.md",
            Template::ContextReviewComment => "context-review-comment.md",
            Template::ContextPullDiff => "context-pull-diff.md",
            Template::ContextIssue => "context-issue.md",
            Template::ContextIssueBody => "context-issue-body.md",
            Template::ContextCiPullRequest => "context-ci-pull-request.md",
            Template::ContextCiPush => "context-ci-push.md",
            Template::CiRound => "ci-round.md",
        }
    }

    /// The variables the template may use; rendering must supply each of them.
    pub fn variables(self) -> &'static [&'static str] {
        match self {
            // The path of the repository checkout inside the sandbox.
            Template::System => &["workspace"],
            // `context`: where the request came from (a PR, an issue, a local run); `instructions`: the
            // repository's own agent instructions (AGENTS.md …), or a line saying there are none.
            Template::Fix => &["task", "context", "instructions"],
            // `scope`: the whole pull request, or what changed since the last review, and which
            // chunk of files this run reviews; `files`: every changed file; `earlier`: findings
            // already on the pull request, and those to recheck.
            Template::Review => &[
                "request",
                "context",
                "scope",
                "files",
                "diff",
                "earlier",
                "instructions",
            ],
            // `question`: what was asked, or a line asking for an overview when nothing was.
            Template::Explain => &["question", "context", "instructions"],
            // `request`: what to write, with what the person who asked wants it to cover.
            Template::Describe => &["request", "context", "instructions"],
            Template::Triage => &["findings", "context", "instructions"],
            Template::Chore => &["updates", "failure", "instructions"],
            Template::Subagent | Template::NoteNudge | Template::Compact | Template::CompactDropped => &[],
            Template::NoteBudget => &["steps_left", "max_steps"],
            // `stop`: why the run stopped, as a sentence fragment ("the step budget is exhausted").
            Template::NoteGrace => &["stop"],
            // `tools`: the repeated tools, quoted and joined ("`grep` and `read_file`").
            Template::NoteRepetition => &["tools", "times"],
            Template::CompactSummary => &["summary"],
            // `asked`: who started the job and how; `role`: what the job is there to do.
            Template::ContextPullRequest => &["number", "repo", "title", "author", "head", "base", "asked", "role"],
            // `description`: the pull request's text, quoted.
            Template::ContextPullDescription => &["description"],
            // `at_line`: " at line N", or nothing for a comment on the whole file.
            Template::ContextReviewComment => &["path", "at_line", "diff_hunk"],
            Template::ContextPullDiff => &["diff"],
            Template::ContextIssue => &["number", "repo", "title", "author", "asked", "role"],
            // `body`: the issue's text, quoted.
            Template::ContextIssueBody => &["body"],
            Template::ContextCiPullRequest => &["sha", "number", "repo", "title", "author", "head", "base"],
            // `branch`: " (branch `NAME`)", or nothing when the push's branch is unknown.
            Template::ContextCiPush => &["sha", "repo", "branch"],
            Template::CiRound => &["sha", "round", "max_rounds", "task", "rounds", "findings"],
        }
    }

    /// Whether the template is a piece of a larger message rather than a whole one: the final line
    /// break of its file is not part of its text, so that pieces join without stray blank lines.
    fn is_piece(self) -> bool {
        !matches!(
            self,
            Template::System
                | Template::Fix
                | Template::Review
                | Template::Explain
                | Template::Describe
                | Template::Triage
                | Template::Chore
        )
    }

    fn embedded(self) -> &'static str {
        match self {
            Template::System => include_str!("../../prompts/system.md"),
            Template::Fix => include_str!("../../prompts/fix.md"),
            Template::Review => include_str!("../../prompts/review.md"),
            Template::Explain => include_str!("../../prompts/explain.md"),
            Template::Describe => include_str!("../../prompts/describe.md"),
            Template::Triage => include_str!("../../prompts/triage.md"),
            Template::Chore => include_str!("../../prompts/chore.md"),
            Template::Subagent => include_str!("../../prompts/subagent.md"),
            Template::NoteNudge => include_str!("../../prompts/note-nudge.md"),
            Template::NoteBudget => include_str!("../../prompts/note-budget.md"),
            Template::NoteGrace => include_str!("../../prompts/note-grace.md"),
            Template::NoteRepetition => include_str!("../../prompts/note-repetition.md"),
            Template::Compact => include_str!("../../prompts/compact.md"),
            Template::CompactDropped => include_str!("../../prompts/compact-dropped.md"),
            Template::CompactSummary => include_str!("../../prompts/compact-summary.md"),
            Template::ContextPullRequest => include_str!("../../prompts/context-pull-request.md"),
            Template::ContextPullDescription => include_str!("../../prompts/context-pull-description.md"),
            Template::ContextReviewComment => include_str!("../../prompts/context-review-comment.md"),
            Template::ContextPullDiff => include_str!("../../prompts/context-pull-diff.md"),
            Template::ContextIssue => include_str!("../../prompts/context-issue.md"),
            Template::ContextIssueBody => include_str!("../../prompts/context-issue-body.md"),
            Template::ContextCiPullRequest => include_str!("../../prompts/context-ci-pull-request.md"),
            Template::ContextCiPush => include_str!("../../prompts/context-ci-push.md"),
            Template::CiRound => include_str!("../../prompts/ci-round.md"),
        }
    }

    /// The template's text from its file's contents.
    fn text_of(self, file: &str) -> String {
        let text = if self.is_piece() {
            file.strip_suffix('\n').unwrap_or(file)
        } else {
            file
        };
        text.to_owned()
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    #[error("cannot read the prompt override directory {}: {source}", path.display())]
    ReadDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot read prompt template {}: {source}", path.display())]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("prompt template {origin}: {source}")]
    Template {
        /// The override file's path, or `<embedded>/system.md`.
        origin: String,
        #[source]
        source: RenderError,
    },
}

/// A problem with a template's `{{variables}}`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    #[error("line {line}: unknown template variable `{name}`; available: {available}")]
    UnknownVariable {
        name: String,
        line: usize,
        available: String,
    },

    #[error("line {line}: `{{{{` is not closed by `}}}}`")]
    Unclosed { line: usize },

    #[error("line {line}: {text:?} is not a variable name (letters, digits and `_`)")]
    BadName { text: String, line: usize },
}

/// The prompt templates in use: each from the override directory if present there, else embedded.
#[derive(Clone, Debug)]
pub struct Prompts {
    templates: std::collections::BTreeMap<Template, Loaded>,
}

#[derive(Clone, Debug)]
struct Loaded {
    text: String,
    /// The override file's path, or `<embedded>/NAME.md`.
    origin: String,
}

impl Prompts {
    /// The templates built into the binary.
    pub fn embedded() -> Self {
        Self {
            templates: Template::ALL.iter().map(|&t| (t, Loaded::embedded(t))).collect(),
        }
    }

    /// The embedded templates, with any file of the same name in `override_dir` taking its place.
    /// Overrides are checked for unknown variables now, so a typo fails at startup, not mid-job.
    pub fn load(override_dir: Option<&Path>) -> Result<Self, PromptError> {
        let Some(dir) = override_dir else {
            return Ok(Self::embedded());
        };
        let entries = std::fs::read_dir(dir).map_err(|source| PromptError::ReadDir {
            path: dir.to_owned(),
            source,
        })?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".md") && !Template::ALL.iter().any(|t| t.file_name() == name) {
                tracing::warn!(
                    file = %entry.path().display(),
                    "ignoring a prompt override that matches no template"
                );
            }
        }
        let templates = Template::ALL
            .iter()
            .map(|&t| Ok((t, Loaded::from_dir(dir, t)?)))
            .collect::<Result<_, PromptError>>()?;
        Ok(Self { templates })
    }

    /// The unrendered template text.
    pub fn source(&self, template: Template) -> &str {
        &self.get(template).text
    }

    /// Renders a template; every `{{name}}` in it must be among `vars`.
    pub fn render(&self, template: Template, vars: &[(&str, &str)]) -> Result<String, PromptError> {
        let loaded = self.get(template);
        render(&loaded.text, vars).map_err(|source| PromptError::Template {
            origin: loaded.origin.clone(),
            source,
        })
    }

    fn get(&self, template: Template) -> &Loaded {
        // Every template is loaded by both constructors.
        &self.templates[&template]
    }
}

impl Loaded {
    fn embedded(template: Template) -> Self {
        Self {
            text: template.text_of(template.embedded()),
            origin: embedded_origin(template),
        }
    }

    fn from_dir(dir: &Path, template: Template) -> Result<Self, PromptError> {
        let path = dir.join(template.file_name());
        let loaded = if path.is_file() {
            let text = std::fs::read_to_string(&path).map_err(|source| PromptError::ReadFile {
                path: path.clone(),
                source,
            })?;
            Self {
                text: template.text_of(&text),
                origin: path.display().to_string(),
            }
        } else {
            Self::embedded(template)
        };
        check(&loaded.text, template.variables()).map_err(|source| PromptError::Template {
            origin: loaded.origin.clone(),
            source,
        })?;
        Ok(loaded)
    }
}

fn embedded_origin(template: Template) -> String {
    format!("<embedded>/{}", template.file_name())
}

/// Replaces each `{{name}}` (spaces inside the braces allowed) with its value from `vars`.
/// Values are inserted verbatim and not scanned again.
pub fn render(template: &str, vars: &[(&str, &str)]) -> Result<String, RenderError> {
    let mut out = String::with_capacity(template.len());
    walk(template, |piece| {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Variable { name, line } => {
                let Some((_, value)) = vars.iter().find(|(n, _)| *n == name) else {
                    return Err(RenderError::UnknownVariable {
                        name: name.to_owned(),
                        line,
                        available: available(vars.iter().map(|(n, _)| *n)),
                    });
                };
                out.push_str(value);
            }
        }
        Ok(())
    })?;
    Ok(out)
}

/// Checks that a template only uses `allowed` variables, without rendering it.
fn check(template: &str, allowed: &[&str]) -> Result<(), RenderError> {
    walk(template, |piece| match piece {
        Piece::Variable { name, line } if !allowed.contains(&name) => Err(RenderError::UnknownVariable {
            name: name.to_owned(),
            line,
            available: available(allowed.iter().copied()),
        }),
        _ => Ok(()),
    })
}

fn available<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.map(|n| format!("`{n}`")).collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

enum Piece<'a> {
    Text(&'a str),
    Variable { name: &'a str, line: usize },
}

fn walk<'a>(template: &'a str, mut visit: impl FnMut(Piece<'a>) -> Result<(), RenderError>) -> Result<(), RenderError> {
    let line_at = |offset: usize| template[..offset].matches('\n').count() + 1;
    let mut rest = template;
    let mut consumed = 0;
    while let Some(open) = rest.find("{{") {
        visit(Piece::Text(&rest[..open]))?;
        let after_open = &rest[open + 2..];
        let line = line_at(consumed + open);
        let Some(close) = after_open.find("}}") else {
            return Err(RenderError::Unclosed { line });
        };
        let raw = &after_open[..close];
        let name = raw.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(RenderError::BadName {
                text: raw.to_owned(),
                line,
            });
        }
        visit(Piece::Variable { name, line })?;
        let advance = open + 2 + close + 2;
        consumed += advance;
        rest = &rest[advance..];
    }
    visit(Piece::Text(rest))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("pitcrew-prompts-{}-{tag}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn embedded_system_prompt_renders() {
        let prompts = Prompts::load(None).unwrap();
        let text = prompts
            .render(Template::System, &[("workspace", "/workspace")])
            .unwrap();
        assert!(text.contains("checkout of the repository at `/workspace`"), "{text}");
        assert!(!text.contains("{{"));
    }

    #[test]
    fn embedded_templates_use_only_their_declared_variables() {
        for t in Template::ALL {
            check(t.embedded(), t.variables()).unwrap();
        }
    }

    #[test]
    fn a_file_in_the_override_dir_wins() {
        let dir = TempDir::new("override");
        std::fs::write(dir.0.join("system.md"), "Custom prompt in {{ workspace }}.\n").unwrap();
        let prompts = Prompts::load(Some(&dir.0)).unwrap();
        assert_eq!(
            prompts.render(Template::System, &[("workspace", "/w")]).unwrap(),
            "Custom prompt in /w.\n"
        );
    }

    #[test]
    fn an_override_dir_without_the_file_falls_back_to_embedded() {
        let dir = TempDir::new("fallback");
        let prompts = Prompts::load(Some(&dir.0)).unwrap();
        for &t in Template::ALL {
            assert_eq!(prompts.source(t), Prompts::embedded().source(t));
        }
    }

    #[test]
    fn a_piece_loses_the_final_line_break_of_its_file() {
        let dir = TempDir::new("piece");
        std::fs::write(dir.0.join("note-nudge.md"), "Look first.\n").unwrap();
        std::fs::write(dir.0.join("fix.md"), "{{task}}\n").unwrap();
        let prompts = Prompts::load(Some(&dir.0)).unwrap();
        assert_eq!(prompts.source(Template::NoteNudge), "Look first.");
        assert_eq!(prompts.source(Template::Fix), "{{task}}\n");
        assert!(!Prompts::embedded().source(Template::Compact).ends_with('\n'));
    }

    #[test]
    fn an_override_with_an_unknown_variable_fails_at_load() {
        let dir = TempDir::new("typo");
        std::fs::write(dir.0.join("system.md"), "line one\nIn {{workspce}}.\n").unwrap();
        let err = Prompts::load(Some(&dir.0)).unwrap_err().to_string();
        let path = dir.0.join("system.md");
        assert_eq!(
            err,
            format!(
                "prompt template {}: line 2: unknown template variable `workspce`; available: `workspace`",
                path.display()
            )
        );
    }

    #[test]
    fn a_missing_override_dir_is_an_error() {
        let err = Prompts::load(Some(Path::new("/nonexistent/prompts"))).unwrap_err();
        assert!(matches!(err, PromptError::ReadDir { .. }), "{err}");
    }

    #[test]
    fn a_missing_variable_is_named() {
        let err = Prompts::embedded().render(Template::System, &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "prompt template <embedded>/system.md: line 1: unknown template variable `workspace`; available: none"
        );
    }

    #[test]
    fn renderer_edge_cases() {
        assert_eq!(render("a {b} c", &[]).unwrap(), "a {b} c");
        assert_eq!(render("{{x}}{{x}}", &[("x", "{{y}}")]).unwrap(), "{{y}}{{y}}");
        assert_eq!(render("x {{ open", &[]).unwrap_err(), RenderError::Unclosed { line: 1 });
        assert_eq!(
            render("\n{{a b}}", &[]).unwrap_err(),
            RenderError::BadName {
                text: "a b".into(),
                line: 2
            }
        );
        assert_eq!(
            render("{{}}", &[]).unwrap_err(),
            RenderError::BadName {
                text: String::new(),
                line: 1
            }
        );
    }
}
