//! The comment commands, by kind: the one vocabulary that the command parser, a repository's
//! `[triggers] commands`, the job store and the reports spell commands with.

use std::collections::BTreeSet;

/// A comment command, without what follows its word. Types that carry more (the parser's command
/// with its instructions, a job with its chore) say which kind they are with a `kind()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommandKind {
    Fix,
    Review,
    Explain,
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
    pub const ALL: [CommandKind; 10] = [
        CommandKind::Fix,
        CommandKind::Review,
        CommandKind::Explain,
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
