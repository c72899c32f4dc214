//! Comment commands: finding `@agent …` mentions in a Markdown comment and parsing what follows.
//!
//! A mention counts only in prose: not inside fenced or indented code blocks, inline code, `>` quotes
//! (someone quoting an earlier command must not run it again) or HTML comments (issue templates).
//! The command's text is what follows the mention up to the next mention or the end of the comment,
//! raw, code blocks included: "@agent fix this:" followed by a pasted log keeps the log.

use std::fmt;
use std::ops::Range;

use crate::config::command::{CommandKind, PackageName};

/// What a mention asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `fix [instructions]`, and any free text. `None`: "fix this" (what the PR or issue says).
    Fix {
        instructions: Option<String>,
    },
    /// `review [focus]`.
    Review {
        instructions: Option<String>,
    },
    /// `explain [question]`.
    Explain {
        question: Option<String>,
    },
    /// `describe [focus]`: write pitcrew's section of the pull request's description.
    Describe {
        focus: Option<String>,
    },
    Triage,
    Help,
    Stop,
    Chore(Chore),
    /// `ignore <package>`: never propose the package again in this repository.
    Ignore {
        package: PackageName,
    },
    /// `unignore <package>`: propose it again.
    Unignore {
        package: PackageName,
    },
    /// `rebase`: recreate a dependency pull request on the default branch's head.
    Rebase,
}

impl Command {
    pub fn kind(&self) -> CommandKind {
        match self {
            Command::Fix { .. } => CommandKind::Fix,
            Command::Review { .. } => CommandKind::Review,
            Command::Explain { .. } => CommandKind::Explain,
            Command::Describe { .. } => CommandKind::Describe,
            Command::Triage => CommandKind::Triage,
            Command::Help => CommandKind::Help,
            Command::Stop => CommandKind::Stop,
            Command::Chore(_) => CommandKind::Chore,
            Command::Ignore { .. } => CommandKind::Ignore,
            Command::Unignore { .. } => CommandKind::Unignore,
            Command::Rebase => CommandKind::Rebase,
        }
    }

    /// The command as users type it: its word, and the chore after `chore`.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Chore(Chore::Deps) => "chore deps",
            other => other.kind().name(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Chore {
    /// Update dependencies.
    Deps,
}

/// A mention that reads like a command but is not a valid one. The text is posted back to the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("unknown command `{got}`; did you mean `{suggestion}`?")]
    UnknownCommand { got: String, suggestion: &'static str },
    #[error("`{command}` takes no arguments (got `{args}`)")]
    UnexpectedArguments { command: &'static str, args: String },
    #[error("`chore` needs the chore to run: `chore deps`")]
    MissingChore,
    #[error("unknown chore `{got}`; the chores are: `deps`")]
    UnknownChore { got: String },
    #[error("`{command}` needs the package's name: `{command} <package>`")]
    MissingPackage { command: &'static str },
    #[error("`{got}` is not a package name (`{command}` takes one name, exactly as the manifest spells it)")]
    BadPackage { command: &'static str, got: String },
}

/// The text after the command word: `line` is the rest of its line, `all` also the lines after.
struct Args<'a> {
    line: &'a str,
    all: &'a str,
}

/// How each command reads the text after its word.
fn parse_args(kind: CommandKind, args: &Args<'_>) -> Result<Command, ParseError> {
    match kind {
        CommandKind::Fix => Ok(Command::Fix {
            instructions: non_empty(args.all),
        }),
        CommandKind::Review => Ok(Command::Review {
            instructions: non_empty(args.all),
        }),
        CommandKind::Explain => Ok(Command::Explain {
            question: non_empty(args.all),
        }),
        CommandKind::Describe => Ok(Command::Describe {
            focus: non_empty(args.all),
        }),
        CommandKind::Triage => no_arguments(args, Command::Triage),
        CommandKind::Help => no_arguments(args, Command::Help),
        CommandKind::Stop => no_arguments(args, Command::Stop),
        CommandKind::Chore => chore(args),
        CommandKind::Ignore => package(CommandKind::Ignore, args).map(|package| Command::Ignore { package }),
        CommandKind::Unignore => package(CommandKind::Unignore, args).map(|package| Command::Unignore { package }),
        CommandKind::Rebase => no_arguments(args, Command::Rebase),
    }
}

/// Every command in `body` addressed to `trigger` (e.g. `@agent`), in order.
pub fn parse_commands(body: &str, trigger: &str) -> Vec<Result<Command, ParseError>> {
    if trigger.is_empty() {
        return Vec::new();
    }
    let mentions = find_mentions(body, trigger);
    mentions
        .iter()
        .enumerate()
        .map(|(i, mention)| {
            let end = mentions.get(i + 1).map_or(body.len(), |next| next.start);
            parse_one(&body[mention.end..end])
        })
        .collect()
}

fn parse_one(text: &str) -> Result<Command, ParseError> {
    // "@agent: fix it" and "@agent, fix it" read the same as "@agent fix it"; "Thanks @agent." is a
    // bare mention.
    let text = text.trim_start_matches([':', ',', '.', '!', '?']).trim();
    if text.is_empty() {
        return Ok(Command::Fix { instructions: None });
    }
    let word_end = text.find(char::is_whitespace).unwrap_or(text.len());
    let (word, after) = text.split_at(word_end);
    let bare = word.trim_end_matches(['.', '!', '?', ':', ',']).to_lowercase();
    let line = after.split('\n').next().unwrap_or("");
    let args = Args {
        line: line.trim(),
        all: after.trim(),
    };
    // A command word; everything else is free text for `fix`.
    if let Some(kind) = CommandKind::parse(&bare) {
        return parse_args(kind, &args);
    }
    if after.trim().is_empty()
        && let Some(suggestion) = did_you_mean(&bare)
    {
        return Err(ParseError::UnknownCommand {
            got: word.to_owned(),
            suggestion,
        });
    }
    Ok(Command::Fix {
        instructions: Some(text.to_owned()),
    })
}

fn non_empty(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// A no-argument command refuses text on its own line: "@agent stop the build from flaking" is
/// more likely a request than a stop. Lines after it are free (a note, a signature).
fn no_arguments(args: &Args<'_>, ok: Command) -> Result<Command, ParseError> {
    let extra = args
        .line
        .trim_matches(|c: char| c == '.' || c == '!' || c.is_whitespace());
    if extra.is_empty() {
        Ok(ok)
    } else {
        Err(ParseError::UnexpectedArguments {
            command: ok.name(),
            args: args.line.to_owned(),
        })
    }
}

fn chore(args: &Args<'_>) -> Result<Command, ParseError> {
    let mut words = args.line.split_whitespace();
    let Some(name) = words.next() else {
        return Err(ParseError::MissingChore);
    };
    match name.trim_end_matches(['.', '!']).to_lowercase().as_str() {
        "deps" | "dependencies" => match words.next() {
            None => Ok(Command::Chore(Chore::Deps)),
            Some(_) => Err(ParseError::UnexpectedArguments {
                command: Command::Chore(Chore::Deps).name(),
                args: args.line[name.len()..].trim().to_owned(),
            }),
        },
        _ => Err(ParseError::UnknownChore { got: name.to_owned() }),
    }
}

/// The one package name on the command's line (a trailing full stop aside).
fn package(kind: CommandKind, args: &Args<'_>) -> Result<PackageName, ParseError> {
    let command = kind.name();
    let mut words = args.line.split_whitespace();
    let Some(word) = words.next() else {
        return Err(ParseError::MissingPackage { command });
    };
    let name = word.trim_end_matches(['.', '!', ',']).trim_matches('`');
    match (PackageName::parse(name), words.next()) {
        (Some(name), None) => Ok(name),
        _ => Err(ParseError::BadPackage {
            command,
            got: args.line.to_owned(),
        }),
    }
}

/// A command word a single-word mention was probably meant to be: one edit away for short words, two
/// for longer ones (so "hi" is not taken for "fix", while "reveiw" is taken for "review").
fn did_you_mean(word: &str) -> Option<&'static str> {
    let budget = if word.chars().count() <= 4 { 1 } else { 2 };
    CommandKind::ALL
        .into_iter()
        // Optimal string alignment: Levenshtein plus adjacent transpositions ("stpo" → "stop" is 1).
        .map(|kind| (kind.name(), strsim::osa_distance(word, kind.name())))
        .filter(|(_, distance)| *distance <= budget)
        .min_by_key(|(_, distance)| *distance)
        .map(|(name, _)| name)
}

/// Byte ranges of the trigger's real mentions in `body`.
fn find_mentions(body: &str, trigger: &str) -> Vec<Range<usize>> {
    let mut mentions = Vec::new();
    let mut scanner = Scanner::default();
    let mut offset = 0;
    for raw in body.split_inclusive('\n') {
        let line = raw.trim_end_matches(['\n', '\r']);
        for range in scanner.prose(line) {
            for at in matches_in(&line[range.clone()], trigger) {
                let start = offset + range.start + at;
                mentions.push(start..start + trigger.len());
            }
        }
        offset += raw.len();
    }
    // A mention is matched with its neighbours in the whole line, not just inside one prose range.
    mentions.retain(|m| at_word_boundary(body, m));
    mentions
}

/// Positions of `trigger` in `text`, ASCII case-insensitively.
fn matches_in(text: &str, trigger: &str) -> Vec<usize> {
    let (hay, needle) = (text.as_bytes(), trigger.as_bytes());
    if needle.len() > hay.len() {
        return Vec::new();
    }
    (0..=hay.len() - needle.len())
        .filter(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
        .collect()
}

/// `@agent`, but not `@agents`, `@agent-x`, `email@agent.com`, the team `@agent/core` or `@agent's`.
fn at_word_boundary(body: &str, mention: &Range<usize>) -> bool {
    let before = body[..mention.start].chars().next_back();
    let mut after = body[mention.end..].chars();
    let next = after.next();
    let is_name_char = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let before_ok = before.is_none_or(|c| !(is_name_char(c) || matches!(c, '@' | '.' | '/' | '`')));
    let after_ok = match next {
        None => true,
        Some('/') => false,
        // A full stop ends a sentence; a dot followed by a letter is a domain (`@agent.com`).
        Some('.') => after.next().is_none_or(|c| !c.is_alphanumeric()),
        // "thanks to @agent's fix" talks about the bot; it does not ask it for anything.
        Some('\'' | '\u{2019}') => after.next().is_none_or(|c| !c.is_alphanumeric()),
        Some(c) => !is_name_char(c),
    };
    before_ok && after_ok
}

/// Markdown block state carried from line to line.
#[derive(Default)]
struct Scanner {
    /// The open code fence: its character and length.
    fence: Option<(char, usize)>,
    in_quote: bool,
    in_html_comment: bool,
    /// The previous line was paragraph text (an indented line then continues it, not a code block).
    in_paragraph: bool,
}

impl Scanner {
    /// The byte ranges of `line` that are prose, where a mention counts.
    fn prose(&mut self, line: &str) -> Vec<Range<usize>> {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[indent..];
        if let Some((ch, len)) = self.fence {
            let run = rest.chars().take_while(|&c| c == ch).count();
            if indent <= 3 && run >= len && rest[run * ch.len_utf8()..].trim().is_empty() {
                self.fence = None;
            }
            return Vec::new();
        }
        if rest.trim().is_empty() {
            self.in_quote = false;
            self.in_paragraph = false;
            return Vec::new();
        }
        if indent <= 3 {
            for ch in ['`', '~'] {
                let run = rest.chars().take_while(|&c| c == ch).count();
                if run >= 3 {
                    self.fence = Some((ch, run));
                    self.in_paragraph = false;
                    return Vec::new();
                }
            }
        }
        if (indent >= 4 || line.starts_with('\t')) && !self.in_paragraph && !self.in_html_comment {
            return Vec::new();
        }
        // A quote runs to the next blank line, lazily: GitHub renders an unprefixed line right after
        // a `>` line as part of the quote.
        if (indent <= 3 && rest.starts_with('>')) || self.in_quote {
            self.in_quote = true;
            return Vec::new();
        }
        self.in_paragraph = true;
        self.inline_prose(line)
    }

    /// Removes inline code spans and HTML comments from a prose line.
    fn inline_prose(&mut self, line: &str) -> Vec<Range<usize>> {
        let bytes = line.as_bytes();
        let mut ranges = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            if self.in_html_comment {
                match line[i..].find("-->") {
                    Some(end) => {
                        self.in_html_comment = false;
                        i += end + 3;
                        start = i;
                    }
                    None => return ranges,
                }
                continue;
            }
            if bytes[i..].starts_with(b"<!--") {
                ranges.push(start..i);
                self.in_html_comment = true;
                i += 4;
                continue;
            }
            if bytes[i] == b'`' {
                let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
                match closing_backticks(&bytes[i + run..], run) {
                    Some(close) => {
                        ranges.push(start..i);
                        i += run + close + run;
                        start = i;
                    }
                    // An unmatched run is literal text.
                    None => i += run,
                }
                continue;
            }
            i += 1;
        }
        ranges.push(start..bytes.len());
        ranges.retain(|r| !r.is_empty());
        ranges
    }
}

/// The offset of a run of exactly `len` backticks in `rest`, which closes a code span.
fn closing_backticks(rest: &[u8], len: usize) -> Option<usize> {
    let mut i = 0;
    while i < rest.len() {
        if rest[i] == b'`' {
            let run = rest[i..].iter().take_while(|&&b| b == b'`').count();
            if run == len {
                return Some(i);
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    /// One line per parsed command, for snapshots.
    fn show(body: &str) -> String {
        parse_commands(body, "@agent")
            .iter()
            .map(|result| match result {
                Ok(command) => format!("{command:?}"),
                Err(err) => format!("error: {err}"),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn each_command() {
        insta::assert_snapshot!(show("@agent fix the flaky test"), @r#"Fix { instructions: Some("the flaky test") }"#);
        insta::assert_snapshot!(show("@agent fix"), @"Fix { instructions: None }");
        insta::assert_snapshot!(show("@agent review"), @"Review { instructions: None }");
        insta::assert_snapshot!(show("@agent review focus on error handling"), @r#"Review { instructions: Some("focus on error handling") }"#);
        insta::assert_snapshot!(show("@agent explain why is this lock needed?"), @r#"Explain { question: Some("why is this lock needed?") }"#);
        insta::assert_snapshot!(show("@agent explain"), @"Explain { question: None }");
        insta::assert_snapshot!(show("@agent describe"), @"Describe { focus: None }");
        insta::assert_snapshot!(show("@agent describe the migration first"), @r#"Describe { focus: Some("the migration first") }"#);
        insta::assert_snapshot!(show("@agent triage"), @"Triage");
        insta::assert_snapshot!(show("@agent help"), @"Help");
        insta::assert_snapshot!(show("@agent stop"), @"Stop");
        insta::assert_snapshot!(show("@agent chore deps"), @"Chore(Deps)");
        insta::assert_snapshot!(show("@agent ignore tinydep"), @r#"Ignore { package: PackageName("tinydep") }"#);
        insta::assert_snapshot!(show("@agent ignore `@types/node`."), @r#"Ignore { package: PackageName("@types/node") }"#);
        insta::assert_snapshot!(show("@agent unignore serde_json"), @r#"Unignore { package: PackageName("serde_json") }"#);
        insta::assert_snapshot!(show("@agent rebase"), @"Rebase");
    }

    #[test]
    fn package_commands_take_exactly_one_name() {
        insta::assert_snapshot!(show("@agent ignore"), @"error: `ignore` needs the package's name: `ignore <package>`");
        insta::assert_snapshot!(show("@agent ignore tinydep otherdep"), @"error: `tinydep otherdep` is not a package name (`ignore` takes one name, exactly as the manifest spells it)");
        insta::assert_snapshot!(show("@agent unignore serde*"), @"error: `serde*` is not a package name (`unignore` takes one name, exactly as the manifest spells it)");
        insta::assert_snapshot!(show("@agent ignore ../x"), @"error: `../x` is not a package name (`ignore` takes one name, exactly as the manifest spells it)");
        insta::assert_snapshot!(show("@agent rebase now please"), @"error: `rebase` takes no arguments (got `now please`)");
        assert!(PackageName::parse(&"a".repeat(PackageName::MAX_CHARS + 1)).is_none());
    }

    #[test]
    fn free_text_and_empty_mentions_are_fix() {
        insta::assert_snapshot!(show("@agent please make the parser accept tabs"), @r#"Fix { instructions: Some("please make the parser accept tabs") }"#);
        insta::assert_snapshot!(show("@agent"), @"Fix { instructions: None }");
        insta::assert_snapshot!(show("Looks broken. @agent"), @"Fix { instructions: None }");
        insta::assert_snapshot!(show("@agent:   fix it"), @r#"Fix { instructions: Some("it") }"#);
        insta::assert_snapshot!(show("@agent, the CI is red"), @r#"Fix { instructions: Some("the CI is red") }"#);
    }

    #[test]
    fn trigger_is_case_insensitive_and_so_are_commands() {
        insta::assert_snapshot!(show("@Agent Review"), @"Review { instructions: None }");
        insta::assert_snapshot!(show("@AGENT STOP!"), @"Stop");
        insta::assert_snapshot!(show("@agent Fix: the typo"), @r#"Fix { instructions: Some("the typo") }"#);
    }

    #[test]
    fn trigger_needs_word_boundaries() {
        insta::assert_snapshot!(show("cc @agents, mail me at email@agent.com or ping @agent-bot"), @"");
        insta::assert_snapshot!(show("@agent_x @agent/core @agent.com x@agent"), @"");
        insta::assert_snapshot!(show("Hi @agent review"), @"Review { instructions: None }");
        insta::assert_snapshot!(show("Thanks @agent."), @"Fix { instructions: None }");
        insta::assert_snapshot!(show("thanks to @agent's fix and @AGENT\u{2019}s review"), @"");
    }

    #[test]
    fn instructions_keep_following_lines_and_code() {
        let body = "@agent fix the flaky test\nit times out on CI\n\n```\nthread 'x' panicked\n```";
        insta::assert_snapshot!(show(body), @r#"Fix { instructions: Some("the flaky test\nit times out on CI\n\n```\nthread 'x' panicked\n```") }"#);
        insta::assert_snapshot!(show("@agent\nplease fix the flaky test"), @r#"Fix { instructions: Some("please fix the flaky test") }"#);
        insta::assert_snapshot!(show("@agent explain\nwhy is the cache keyed by path?"), @r#"Explain { question: Some("why is the cache keyed by path?") }"#);
    }

    #[test]
    fn several_commands_split_at_each_mention() {
        let body = "@agent review\nthen\n@agent explain the retry loop @agent stop";
        insta::assert_snapshot!(show(body), @r#"
        Review { instructions: Some("then") }
        Explain { question: Some("the retry loop") }
        Stop
        "#);
    }

    #[test]
    fn mentions_in_code_quotes_and_comments_are_ignored() {
        insta::assert_snapshot!(show("```\n@agent fix\n```"), @"");
        insta::assert_snapshot!(show("~~~~rust\n@agent fix\n~~~\n@agent still in the fence\n~~~~"), @"");
        insta::assert_snapshot!(show("Run `@agent fix` to ask for a fix."), @"");
        insta::assert_snapshot!(show("Run ``@agent `fix` `` to ask."), @"");
        insta::assert_snapshot!(show("> @agent fix this\n> please"), @"");
        insta::assert_snapshot!(show("> quoted\n@agent lazily continued quote\n\n@agent stop"), @"Stop");
        insta::assert_snapshot!(show("Example:\n\n    @agent fix\n\nDone."), @"");
        insta::assert_snapshot!(show("<!-- @agent fix\nstill a comment @agent review -->"), @"");
        insta::assert_snapshot!(show("<!-- template --> @agent review"), @"Review { instructions: None }");
        insta::assert_snapshot!(show("```\n@agent fix\n```\n@agent review"), @"Review { instructions: None }");
    }

    #[test]
    fn unmatched_backticks_are_literal() {
        insta::assert_snapshot!(show("a ` tick @agent stop"), @"Stop");
    }

    #[test]
    fn an_indented_line_inside_a_paragraph_is_not_code() {
        insta::assert_snapshot!(show("Some context\n    @agent stop"), @"Stop");
    }

    #[test]
    fn mistakes_are_errors_with_hints() {
        insta::assert_snapshot!(show("@agent reveiw"), @"error: unknown command `reveiw`; did you mean `review`?");
        insta::assert_snapshot!(show("@agent stpo"), @"error: unknown command `stpo`; did you mean `stop`?");
        insta::assert_snapshot!(show("@agent descibe"), @"error: unknown command `descibe`; did you mean `describe`?");
        insta::assert_snapshot!(show("@agent stop the build from flaking"), @"error: `stop` takes no arguments (got `the build from flaking`)");
        insta::assert_snapshot!(show("@agent help\nthanks!"), @"Help");
        insta::assert_snapshot!(show("@agent chore"), @"error: `chore` needs the chore to run: `chore deps`");
        insta::assert_snapshot!(show("@agent chore lint"), @"error: unknown chore `lint`; the chores are: `deps`");
        insta::assert_snapshot!(show("@agent chore deps now"), @"error: `chore deps` takes no arguments (got `now`)");
        // Not close to any command: free text.
        insta::assert_snapshot!(show("@agent hi"), @r#"Fix { instructions: Some("hi") }"#);
    }

    #[test]
    fn crlf_bodies() {
        insta::assert_snapshot!(show("```\r\n@agent fix\r\n```\r\n@agent stop\r\n"), @"Stop");
    }

    #[test]
    fn non_ascii_text_around_mentions() {
        let parsed = parse_commands("Ça plante — @agent répare ça", "@agent");
        assert_eq!(
            parsed,
            vec![Ok(Command::Fix {
                instructions: Some("répare ça".to_owned())
            })]
        );
        assert!(parse_commands("é@agent fix", "@agent").is_empty());
    }

    #[test]
    fn a_custom_trigger() {
        let parsed = parse_commands("@PitCrew review", "@pitcrew");
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].as_ref().unwrap(), &Command::Review { instructions: None });
        assert!(parse_commands("@agent review", "@pitcrew").is_empty());
        assert!(parse_commands("@agent review", "").is_empty());
    }

    #[test]
    fn edit_distance_counts_transpositions_once() {
        assert_eq!(strsim::osa_distance("stpo", "stop"), 1);
        assert_eq!(strsim::osa_distance("reveiw", "review"), 1);
        assert_eq!(strsim::osa_distance("revieww", "review"), 1);
        assert_eq!(strsim::osa_distance("", "fix"), 3);
        assert_eq!(strsim::osa_distance("fix", "fix"), 0);
    }
}
