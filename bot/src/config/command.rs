//! The comment commands, by kind: the one vocabulary that the command parser, a repository's
//! `[triggers] commands`, the job store and the reports spell commands with; and the package name
//! the dependency commands (`ignore <package>`) take.

use std::collections::BTreeSet;
use std::fmt;

/// A comment command, without what follows its word. Types that carry more (the parser's command
/// with its instructions, a job with its chore) say which kind they are with a `kind()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommandKind {
    Fix,
    Review,
    Explain,
    /// `describe` on a pull request: write pitcrew's section of its description.
    Describe,
    Triage,
    Help,
    Stop,
    Chore,
    /// `ignore <package>` on a dependency pull request: never propose that package again here.
    Ignore,
    /// `unignore <package>`: propose it again.
    Unignore,
    /// `rebase` on a dependency pull request: recreate it on the default branch's head now.
    Rebase,
}

impl CommandKind {
    /// Every command, in the order messages list them (and "did you mean" prefers among equals).
    pub const ALL: [CommandKind; 11] = [
        CommandKind::Fix,
        CommandKind::Review,
        CommandKind::Explain,
        CommandKind::Describe,
        CommandKind::Triage,
        CommandKind::Help,
        CommandKind::Stop,
        CommandKind::Chore,
        CommandKind::Ignore,
        CommandKind::Unignore,
        CommandKind::Rebase,
    ];

    /// The command word: as users type it after the trigger, as `[triggers] commands` lists it, and
    /// as the job store and the reports name a job.
    pub fn name(self) -> &'static str {
        match self {
            CommandKind::Fix => "fix",
            CommandKind::Review => "review",
            CommandKind::Explain => "explain",
            CommandKind::Describe => "describe",
            CommandKind::Triage => "triage",
            CommandKind::Help => "help",
            CommandKind::Stop => "stop",
            CommandKind::Chore => "chore",
            CommandKind::Ignore => "ignore",
            CommandKind::Unignore => "unignore",
            CommandKind::Rebase => "rebase",
        }
    }

    /// The command whose word is exactly `word`.
    pub fn parse(word: &str) -> Option<CommandKind> {
        CommandKind::ALL.into_iter().find(|kind| kind.name() == word)
    }
}

/// A package name as a command gives it: one word of letters, digits and `-_.@/+` (npm's scoped
/// `@scope/name` included), at most 214 characters (npm's limit, the longest of the ecosystems).
/// Exact: a pattern (`serde*`) is for `[chores.deps] ignore`, where a review sees it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PackageName(String);

impl PackageName {
    pub const MAX_CHARS: usize = 214;

    pub fn parse(text: &str) -> Option<PackageName> {
        let ok = !text.is_empty()
            && text.len() <= Self::MAX_CHARS
            && text
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '@')
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@' | '/' | '+'));
        ok.then(|| PackageName(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for PackageName {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        PackageName::parse(&text).ok_or_else(|| format!("not a package name: {text:?}"))
    }
}

impl From<PackageName> for String {
    fn from(name: PackageName) -> Self {
        name.0
    }
}

impl fmt::Display for PackageName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The commands a repository allows: those its `[triggers] commands` lists, all of them when it
/// lists none, and `help` and `stop` always — they start no job, and stopping a running one must
/// never be switched off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnabledCommands(BTreeSet<CommandKind>);

impl EnabledCommands {
    pub fn allows(&self, command: CommandKind) -> bool {
        matches!(command, CommandKind::Help | CommandKind::Stop) || self.0.contains(&command)
    }
}

/// Every command on.
impl Default for EnabledCommands {
    fn default() -> Self {
        CommandKind::ALL.into_iter().collect()
    }
}

impl FromIterator<CommandKind> for EnabledCommands {
    fn from_iter<I: IntoIterator<Item = CommandKind>>(iter: I) -> Self {
        EnabledCommands(iter.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_names_its_command() {
        for kind in CommandKind::ALL {
            assert_eq!(CommandKind::parse(kind.name()), Some(kind));
        }
        assert_eq!(CommandKind::parse("Fix"), None);
        assert_eq!(CommandKind::parse("chore deps"), None);
    }

    #[test]
    fn help_and_stop_cannot_be_turned_off() {
        let none: EnabledCommands = std::iter::empty().collect();
        let on: Vec<_> = CommandKind::ALL.into_iter().filter(|kind| none.allows(*kind)).collect();
        assert_eq!(on, [CommandKind::Help, CommandKind::Stop]);
        assert!(
            CommandKind::ALL
                .into_iter()
                .all(|kind| EnabledCommands::default().allows(kind))
        );
    }
}
