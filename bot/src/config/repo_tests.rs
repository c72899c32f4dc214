//! Tests for `.github/pitcrew.toml`: parsing, every kind of problem with its position, and how the
//! file combines with the operator's configuration.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeMap;

use super::*;
use crate::config::LoadOptions;

/// Every problem's comment line, one per line.
fn problems(text: &str) -> String {
    RepoConfig::parse(text)
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The operator's configuration from built-in defaults and `--set` flags (a model name is required).
fn operator(flags: &[&str]) -> Config {
    let env = BTreeMap::from([("OPENAI_API_KEY".to_owned(), "sk-test".to_owned())]);
    let mut overrides = vec!["model.name=gpt-4.1".to_owned()];
    overrides.extend(flags.iter().map(|f| (*f).to_owned()));
    Config::load(LoadOptions {
        config_path: None,
        env: &env,
        overrides: &overrides,
    })
    .unwrap()
}

const FULL: &str = r#"
[model]
name = "claude-sonnet-4-5"

[agent]
max_steps = 40
max_cost_usd = 2.5
max_wall_time = "20m"
test_command = "cargo nextest run"

[sandbox]
image = "rust:1.90"
setup = "apt-get install -y protobuf-compiler"
setup_network = true

[triggers]
trigger = "@crew"
commands = ["fix", "review", "help", "stop", "fix"]
label = "pitcrew: fix"
assign = false
min_permission = "maintain"
allowed_users = ["alice", "bob-the-builder", "dependabot[bot]"]

[triage]
on_failure = false
auto_fix = true
rerun_flaky = true
comment = false

[ci_loop]
enabled = true
max_rounds = 2
wait_timeout = "20m"
ignore_apps = ["codecov"]

[review]
auto = true
bots = ["renovate[bot]"]
paths = ["src/", "*.rs"]
ignore_paths = ["vendor/**", "*.lock"]
max_comments = 5
event = "request_changes"
instructions = "We don't care about import order."
describe = true
"#;

#[test]
fn a_full_valid_file() {
    let config = RepoConfig::parse(FULL).unwrap();
    assert_eq!(
        config,
        RepoConfig {
            model: RepoModel {
                name: Some("claude-sonnet-4-5".into()),
            },
            agent: RepoAgent {
                max_steps: Some(40),
                max_cost_usd: Some(2.5),
                max_wall_time: Some(Duration::from_secs(20 * 60)),
                test_command: Some("cargo nextest run".into()),
            },
            sandbox: RepoSandbox {
                image: Some("rust:1.90".into()),
                setup: Some("apt-get install -y protobuf-compiler".into()),
                setup_network: Some(true),
            },
            triggers: RepoTriggers {
                trigger: Some("@crew".into()),
                commands: Some(BTreeSet::from([
                    CommandKind::Fix,
                    CommandKind::Review,
                    CommandKind::Help,
                    CommandKind::Stop,
                ])),
                label: Some("pitcrew: fix".into()),
                assign: Some(false),
                min_permission: Some(MinPermission::Maintain),
                allowed_users: Some(vec!["alice".into(), "bob-the-builder".into(), "dependabot[bot]".into()]),
            },
            triage: TriageSettings {
                on_failure: false,
                auto_fix: true,
                rerun_flaky: true,
                comment: false,
            },
            ci_loop: RepoCiLoop {
                enabled: Some(true),
                max_rounds: Some(2),
                wait_timeout: Some(Duration::from_secs(20 * 60)),
                ignore_apps: vec!["codecov".into()],
            },
            review: RepoReview {
                auto: Some(true),
                bots: vec!["renovate[bot]".into()],
                paths: vec!["src/".into(), "*.rs".into()],
                ignore_paths: vec!["vendor/**".into(), "*.lock".into()],
                max_comments: Some(5),
                event: Some(ReviewVerdict::RequestChanges),
                instructions: Some("We don't care about import order.".into()),
                describe: Some(true),
            },
            deps: DepsChore::default(),
        }
    );
}

#[test]
fn review_paths_read_like_gitignore() {
    let settings = RepoConfig::parse("[review]\npaths = [\"src/\", \"*.py\", \"lib/*.rs\"]\nignore_paths = [\"vendor/**\", \"*.lock\", \"/generated\"]\n")
        .unwrap()
        .review_settings(false);
    let excluded = |path: &str| settings.excluded(path);
    assert_eq!(excluded("src/main.rs"), None);
    assert_eq!(
        excluded("src/deep/mod.rs"),
        None,
        "a directory glob covers everything below it"
    );
    assert_eq!(
        excluded("tools/x.py"),
        None,
        "a glob without `/` matches a name in any directory"
    );
    assert_eq!(excluded("lib/a.rs"), None);
    assert_eq!(
        excluded("lib/sub/a.rs"),
        Some("outside [review] paths"),
        "`*` stays in one directory"
    );
    assert_eq!(excluded("README.md"), Some("outside [review] paths"));
    assert_eq!(excluded("src/vendor/x.rs"), None, "`vendor/**` is anchored at the root");
    assert_eq!(excluded("vendor/x/y.py"), Some("ignored by config"));
    assert_eq!(excluded("src/Cargo.lock"), Some("ignored by config"));
    assert_eq!(excluded("generated"), Some("ignored by config"));
    // Nothing said: every file, no bots, ten inline comments, comment reviews, the operator's auto.
    let defaults = RepoConfig::default().review_settings(true);
    assert!(defaults.auto && defaults.excluded("anything/at.all").is_none());
    assert_eq!((defaults.max_comments, defaults.event), (10, ReviewVerdict::Comment));
    assert!(!defaults.reviews_bot("renovate[bot]"));
    assert!(
        !RepoConfig::parse("[review]\nauto = false\n")
            .unwrap()
            .review_settings(true)
            .auto
    );
}

#[test]
fn bad_review_settings_are_located() {
    insta::assert_snapshot!(problems("[review]\nauto = \"yes\"\nevent = \"approve\"\nbots = [\"@renovate\"]\npaths = [\"src/[\"]\nmax_comments = 0\nevnt = \"comment\"\n"), @r#"
    .github/pitcrew.toml:2:8: `review.auto` must be a boolean (true or false), found string
    .github/pitcrew.toml:3:9: invalid `review.event` = "approve": pitcrew never approves; expected `comment` or `request_changes`
    .github/pitcrew.toml:4:9: invalid login "@renovate" in `review.bots`: expected a GitHub login (letters, digits and single hyphens, at most 39 characters); write it without the `@`
    .github/pitcrew.toml:5:10: invalid pattern "src/[" in `review.paths`: unclosed character class; missing ']'
    .github/pitcrew.toml:6:16: invalid `review.max_comments` = 0: must be at least 1
    .github/pitcrew.toml:7:1: unknown key `evnt` in [review]; did you mean `event`?; valid keys in [review]: auto, bots, paths, ignore_paths, max_comments, event, instructions, describe
    "#);
}

#[test]
fn an_empty_file_means_defaults() {
    assert_eq!(RepoConfig::parse("").unwrap(), RepoConfig::default());
    assert_eq!(
        RepoConfig::parse("# nothing yet\n\n[agent]\n").unwrap(),
        RepoConfig::default()
    );
    // Durations may also be whole seconds, and amounts whole numbers, as in the operator's file.
    let config = RepoConfig::parse("[agent]\nmax_wall_time = 90\nmax_cost_usd = 3\ncommands = []\n");
    assert!(config.is_err(), "commands belongs under [triggers]");
    let config =
        RepoConfig::parse("[agent]\nmax_wall_time = 90\nmax_cost_usd = 3\n[triggers]\ncommands = []\n").unwrap();
    assert_eq!(config.agent.max_wall_time, Some(Duration::from_secs(90)));
    assert_eq!(config.agent.max_cost_usd, Some(3.0));
    assert_eq!(config.triggers.commands, Some(BTreeSet::new()));
}

#[test]
fn every_listed_key_is_accepted() {
    for (section, keys) in SECTIONS {
        for key in *keys {
            let value = match *key {
                "max_steps" => "3",
                "max_cost_usd" => "1.5",
                "max_wall_time" => "\"5m\"",
                "setup_network" | "assign" | "on_failure" | "auto_fix" | "rerun_flaky" | "comment" | "major"
                | "update_pinned" | "dashboard" | "auto" | "describe" | "enabled" => "false",
                "max_rounds" => "2",
                "wait_timeout" => "\"10m\"",
                "ignore_apps" => "[\"codecov\"]",
                "bots" => "[\"renovate[bot]\"]",
                "paths" | "ignore_paths" => "[\"src/\"]",
                "max_comments" => "3",
                "event" => "\"request_changes\"",
                "schedule" => "\"0 6 * * 1\"",
                "timezone" => "\"Europe/Berlin\"",
                "ecosystems" => "[\"cargo\"]",
                "ignore" => "[\"serde*\"]",
                "group" => "\"all\"",
                "trigger" => "\"@bot\"",
                "commands" => "[\"fix\"]",
                "min_permission" => "\"admin\"",
                "allowed_users" | "assignees" => "[\"alice\"]",
                "labels" => "[\"dependencies\"]",
                "reviewers" => "[\"alice\", \"acme/platform\"]",
                "max_open_prs" => "2",
                "rules" => "[{ match = [\"aws-*\"], group = \"aws\" }]",
                "min_release_age" => "\"3 days\"",
                _ => "\"x\"",
            };
            let text = format!("[{section}]\n{key} = {value}\n");
            assert!(
                RepoConfig::parse(&text).is_ok(),
                "{text}: {:?}",
                RepoConfig::parse(&text)
            );
        }
    }
}

#[test]
fn a_problem_renders_as_a_comment_line() {
    let problem = RepoConfigProblem {
        line: 3,
        column: 1,
        message: "unknown key `max_step` in [agent]".into(),
    };
    insta::assert_snapshot!(problem, @".github/pitcrew.toml:3:1: unknown key `max_step` in [agent]");
}

#[test]
fn unknown_key_with_a_hint_and_the_valid_keys() {
    insta::assert_snapshot!(problems("[agent]\nmax_steps = 5\nmax_step = 10\n"), @".github/pitcrew.toml:3:1: unknown key `max_step` in [agent]; did you mean `max_steps`?; valid keys in [agent]: max_steps, max_cost_usd, max_wall_time, test_command");
}

#[test]
fn a_key_in_the_wrong_section_says_where_it_goes() {
    insta::assert_snapshot!(problems("[agent]\nimage = \"rust\"\n[sandbox]\ntemperature = 1\n"), @r#"
    .github/pitcrew.toml:2:1: unknown key `image` in [agent]; did you mean `image` under `[sandbox]`?; valid keys in [agent]: max_steps, max_cost_usd, max_wall_time, test_command
    .github/pitcrew.toml:4:1: unknown key `temperature` in [sandbox]; valid keys in [sandbox]: image, setup, setup_network
    "#);
}

#[test]
fn unknown_section_and_keys_outside_any_section() {
    insta::assert_snapshot!(problems("max_steps = 3\nbudget = 1\n[agnet]\nmax_steps = 3\n\n[chores.deps]\nschedule = \"0 6 * * 1\"\n"), @"
    .github/pitcrew.toml:1:1: `max_steps` is outside any section; did you mean `max_steps` under `[agent]`?
    .github/pitcrew.toml:2:1: `budget` is outside any section; settings go under a section header such as `[agent]`
    .github/pitcrew.toml:3:2: unknown section `[agnet]`; did you mean `[agent]`?; valid sections: model, agent, sandbox, triggers, triage, ci_loop, review, chores.deps
    ");
}

#[test]
fn a_section_that_is_not_a_table() {
    insta::assert_snapshot!(problems("agent = \"fast\"\n"), @".github/pitcrew.toml:1:1: `agent` must be a table (the `[agent]` section), found string");
}

#[test]
fn wrong_types() {
    insta::assert_snapshot!(problems("[agent]\nmax_steps = \"10\"\n[triage]\nauto_fix = \"yes\"\n[triggers]\ncommands = \"fix\"\nallowed_users = [\"alice\", 7]\n"), @r#"
    .github/pitcrew.toml:2:13: `agent.max_steps` must be a whole number, found string
    .github/pitcrew.toml:4:12: `triage.auto_fix` must be a boolean (true or false), found string
    .github/pitcrew.toml:6:12: `triggers.commands` must be an array of strings, found string
    .github/pitcrew.toml:7:27: `triggers.allowed_users` must hold only strings, found integer
    "#);
}

#[test]
fn bad_numbers_and_durations() {
    insta::assert_snapshot!(problems("[agent]\nmax_steps = 0\nmax_cost_usd = -1\nmax_wall_time = \"20 minutes\"\n"), @r#"
    .github/pitcrew.toml:2:13: invalid `agent.max_steps` = 0: must be at least 1
    .github/pitcrew.toml:3:16: invalid `agent.max_cost_usd` = -1: must be greater than zero
    .github/pitcrew.toml:4:17: invalid `agent.max_wall_time` = "20 minutes": write durations without spaces, like "20s", "20m" or "1h30m"
    "#);
    insta::assert_snapshot!(problems("[agent]\nmax_wall_time = \"0s\"\nmax_steps = 5_000_000_000\n"), @r#"
    .github/pitcrew.toml:2:17: invalid `agent.max_wall_time` = "0s": must be longer than zero
    .github/pitcrew.toml:3:13: invalid `agent.max_steps` = 5000000000: must be at most 4294967295
    "#);
}

#[test]
fn bad_trigger_word() {
    insta::assert_snapshot!(problems("[triggers]\ntrigger = \"agent\"\n"), @r#".github/pitcrew.toml:2:11: invalid `triggers.trigger` = "agent": must be `@` followed by a name without spaces, e.g. "@agent""#);
    insta::assert_snapshot!(problems("[triggers]\ntrigger = \"@my agent\"\n"), @r#".github/pitcrew.toml:2:11: invalid `triggers.trigger` = "@my agent": must be `@` followed by a name without spaces, e.g. "@agent""#);
}

#[test]
fn unknown_command_names_each_get_a_hint() {
    insta::assert_snapshot!(problems("[triggers]\ncommands = [\"fix\", \"reveiw\", \"deploy\"]\n"), @"
    .github/pitcrew.toml:2:20: unknown command `reveiw` in `triggers.commands`; did you mean `review`?; the commands are: fix, review, explain, describe, triage, help, stop, chore, ignore, unignore, rebase
    .github/pitcrew.toml:2:30: unknown command `deploy` in `triggers.commands`; the commands are: fix, review, explain, describe, triage, help, stop, chore, ignore, unignore, rebase
    ");
}

#[test]
fn bad_min_permission() {
    insta::assert_snapshot!(problems("[triggers]\nmin_permission = \"admn\"\n"), @r#".github/pitcrew.toml:2:18: invalid `triggers.min_permission` = "admn": expected one of `write`, `maintain`, `admin`; did you mean `admin`?"#);
    insta::assert_snapshot!(problems("[triggers]\nmin_permission = \"triage\"\n"), @r#".github/pitcrew.toml:2:18: invalid `triggers.min_permission` = "triage": expected one of `write`, `maintain`, `admin`"#);
}

#[test]
fn bad_logins_labels_and_empty_strings() {
    insta::assert_snapshot!(problems("[triggers]\nallowed_users = [\"@alice\", \"bob smith\"]\nlabel = \"\"\n[sandbox]\nimage = \"my image\"\nsetup = \"  \"\n[agent]\ntest_command = \"\"\n"), @r#"
    .github/pitcrew.toml:2:18: invalid login "@alice" in `triggers.allowed_users`: expected a GitHub login (letters, digits and single hyphens, at most 39 characters); write it without the `@`
    .github/pitcrew.toml:2:28: invalid login "bob smith" in `triggers.allowed_users`: expected a GitHub login (letters, digits and single hyphens, at most 39 characters)
    .github/pitcrew.toml:3:9: invalid `triggers.label` = "": must not be empty; leave it out for no trigger label
    .github/pitcrew.toml:5:9: invalid `sandbox.image` = "my image": must not contain whitespace
    .github/pitcrew.toml:6:9: invalid `sandbox.setup` = "  ": must not be empty; leave it out for no setup script
    .github/pitcrew.toml:8:16: invalid `agent.test_command` = "": must not be empty; leave it out to detect the project's test command
    "#);
    insta::assert_snapshot!(problems("[triggers]\nallowed_users = []\n"), @".github/pitcrew.toml:2:17: invalid `triggers.allowed_users`: must name at least one login; leave it out to let everyone with `min_permission` trigger");
}

#[test]
fn setup_network_needs_a_setup_script() {
    insta::assert_snapshot!(problems("[sandbox]\nsetup_network = true\n"), @".github/pitcrew.toml:2:17: `sandbox.setup_network` is set but there is no `sandbox.setup` script; it only opens the network while that script runs");
    // A rejected script has its own problem; the missing-script one would be noise.
    insta::assert_snapshot!(problems("[sandbox]\nsetup = \"\"\nsetup_network = true\n"), @r#".github/pitcrew.toml:2:9: invalid `sandbox.setup` = "": must not be empty; leave it out for no setup script"#);
    assert!(RepoConfig::parse("[sandbox]\nsetup_network = false\n").is_ok());
}

#[test]
fn a_syntax_error_is_one_problem_at_its_line() {
    insta::assert_snapshot!(problems("[agent]\nmax_steps = 5\n\n[sandbox\nimage = \"x\"\n"), @".github/pitcrew.toml:4:9: invalid TOML: unclosed table, expected `]`");
    insta::assert_snapshot!(problems("[agent]\nmax_steps = 5\nmax_steps = 6\n"), @".github/pitcrew.toml:3:1: invalid TOML: duplicate key");
}

#[test]
fn several_problems_at_once_in_file_order() {
    let text = "\
[triggers]
min_permission = \"root\"
commands = [\"fix\", \"stpo\"]

[agent]
max_step = 10
max_wall_time = \"1.5h\"

[modle]
name = \"x\"
";
    insta::assert_snapshot!(problems(text), @r#"
    .github/pitcrew.toml:2:18: invalid `triggers.min_permission` = "root": expected one of `write`, `maintain`, `admin`
    .github/pitcrew.toml:3:20: unknown command `stpo` in `triggers.commands`; did you mean `stop`?; the commands are: fix, review, explain, describe, triage, help, stop, chore, ignore, unignore, rebase
    .github/pitcrew.toml:6:1: unknown key `max_step` in [agent]; did you mean `max_steps`?; valid keys in [agent]: max_steps, max_cost_usd, max_wall_time, test_command
    .github/pitcrew.toml:7:17: invalid `agent.max_wall_time` = "1.5h": fractions are not supported (no fractions: write "1h30m" or "90m", not "1.5h")
    .github/pitcrew.toml:9:2: unknown section `[modle]`; did you mean `[model]`?; valid sections: model, agent, sandbox, triggers, triage, ci_loop, review, chores.deps
    "#);
}

#[test]
fn lenient_parsing_keeps_the_valid_settings() {
    let (config, problems) =
        RepoConfig::parse_lenient("[sandbox]\nimage = \"python:3.12\"\nimag = 1\n[other]\nx = 1\n");
    assert_eq!(config.sandbox.image.as_deref(), Some("python:3.12"));
    assert_eq!(problems.len(), 2);
    let (config, problems) = RepoConfig::parse_lenient("[sandbox\nimage = \"python:3.12\"");
    assert_eq!(config, RepoConfig::default());
    assert_eq!(problems.len(), 1);
}

#[test]
fn without_a_file_the_operator_decides_everything() {
    let settings = RepoConfig::default().apply(&operator(&["agent.max_cost_usd=4", "agent.trigger=@ops"]));
    assert_eq!(
        settings,
        EffectiveSettings {
            model_name: "gpt-4.1".into(),
            max_steps: 80,
            max_cost_usd: Some(4.0),
            max_wall_time: Duration::from_secs(30 * 60),
            test_command: None,
            image: "debian:bookworm-slim".into(),
            image_source: ImageSource::Default,
            setup: None,
            setup_network: false,
            triggers: TriggerSettings {
                trigger: "@ops".into(),
                commands: CommandKind::ALL.into_iter().collect(),
                label: None,
                assign: true,
                min_permission: MinPermission::Write,
                allowed_users: None,
                ci_triage: true,
                review: ReviewSettings::default(),
            },
            triage: TriageSettings::default(),
            review: ReviewSettings::default(),
            ci_loop: CiLoopSettings {
                enabled: None,
                max_rounds: 3,
                wait_timeout: Duration::from_secs(30 * 60),
                start_timeout: Duration::from_secs(5 * 60),
                poll_interval: Duration::from_secs(3 * 60),
                ignore_apps: Vec::new(),
            },
            notes: Vec::new(),
        }
    );
}

#[test]
fn the_ci_loop_is_bounded_by_the_operator() {
    let ops = operator(&["ci_loop.max_rounds=2", "ci_loop.wait_timeout=10m"]);
    let asked = RepoConfig::parse(
        "[ci_loop]\nmax_rounds = 5\nwait_timeout = \"1h\"\nignore_apps = [\"codecov\", \"Netlify\"]\n",
    )
    .unwrap();
    let settings = asked.apply(&ops).ci_loop;
    assert_eq!(
        (settings.enabled, settings.max_rounds, settings.wait_timeout),
        (None, 2, Duration::from_secs(600))
    );
    assert_eq!(settings.ignore_apps, ["codecov", "netlify"]);
    assert_eq!(asked.apply(&ops).notes.len(), 2);

    let off = operator(&["ci_loop.enabled=false"]);
    let wanted = RepoConfig::parse("[ci_loop]\nenabled = true\n").unwrap();
    let settings = wanted.apply(&off);
    assert_eq!(settings.ci_loop.enabled, Some(false));
    assert!(settings.notes[0].contains("not allowed"), "{:?}", settings.notes);

    let problems = RepoConfig::parse("[ci_loop]\nmax_rounds = 11\nignore_apps = [\"a b\"]\n").unwrap_err();
    let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
    assert!(messages[0].contains("at most 10"), "{messages:?}");
    assert!(messages[1].contains("invalid app"), "{messages:?}");
}

#[test]
fn the_repository_may_lower_budgets_but_never_raise_them() {
    let ops = operator(&["agent.max_steps=50", "agent.max_cost_usd=5", "agent.max_wall_time=30m"]);
    let lower = RepoConfig::parse("[agent]\nmax_steps = 20\nmax_cost_usd = 1.25\nmax_wall_time = \"10m\"\n").unwrap();
    let settings = lower.apply(&ops);
    assert_eq!(
        (settings.max_steps, settings.max_cost_usd, settings.max_wall_time),
        (20, Some(1.25), Duration::from_secs(600))
    );
    assert!(settings.notes.is_empty(), "{:?}", settings.notes);

    let higher = RepoConfig::parse("[agent]\nmax_steps = 500\nmax_cost_usd = 50\nmax_wall_time = \"2h\"\n").unwrap();
    let settings = higher.apply(&ops);
    assert_eq!(
        (settings.max_steps, settings.max_cost_usd, settings.max_wall_time),
        (50, Some(5.0), Duration::from_secs(1800))
    );
    insta::assert_snapshot!(settings.notes.join("\n"), @r#"
    `[agent] max_steps = 500` is above this server's limit of 50 steps; using 50.
    `[agent] max_cost_usd = 50` is above this server's limit of $5; using $5.
    `[agent] max_wall_time = "2h"` is above this server's limit of 30m; using 30m.
    "#);

    // With no cost limit on the server, the repository's own limit is the only one.
    let settings = higher.apply(&operator(&[]));
    assert_eq!(settings.max_cost_usd, Some(50.0));
}

#[test]
fn the_repository_chooses_model_image_setup_test_command_and_triggers() {
    let settings = RepoConfig::parse(FULL)
        .unwrap()
        .apply(&operator(&["sandbox.setup=make deps"]));
    assert_eq!(settings.model_name, "claude-sonnet-4-5");
    assert_eq!(settings.test_command.as_deref(), Some("cargo nextest run"));
    assert_eq!(
        (settings.image.as_str(), &settings.image_source),
        ("rust:1.90", &ImageSource::RepositoryConfig)
    );
    assert_eq!(settings.setup.as_deref(), Some("apt-get install -y protobuf-compiler"));
    let t = &settings.triggers;
    assert_eq!(t.trigger, "@crew");
    assert_eq!(
        (t.label.as_deref(), t.assign, t.min_permission),
        (Some("pitcrew: fix"), false, MinPermission::Maintain)
    );
    assert!(t.commands.allows(CommandKind::Review));
    assert!(!t.commands.allows(CommandKind::Explain));
    assert!(t.commands.allows(CommandKind::Stop));
    assert!(t.allows_user("Alice"));
    assert!(!t.allows_user("mallory"));
    assert!(settings.triage.auto_fix && settings.triage.rerun_flaky && !settings.triage.comment);
    assert!(!settings.triage.on_failure && !t.ci_triage);
    assert!(RepoConfig::default().trigger_settings("@agent", false).ci_triage);
}

#[test]
fn the_operators_explicit_image_beats_the_repositorys() {
    let repo = RepoConfig::parse("[sandbox]\nimage = \"python:3.12\"\n").unwrap();
    let settings = repo.apply(&operator(&["sandbox.image=ops:1"]));
    assert_eq!(
        (settings.image.as_str(), &settings.image_source),
        ("ops:1", &ImageSource::Operator)
    );
    insta::assert_snapshot!(settings.notes.join("\n"), @r#"`[sandbox] image = "python:3.12"` is not used: this server runs every job in `ops:1`."#);
    // The operator's built-in default does not.
    let settings = repo.apply(&operator(&[]));
    assert_eq!(
        (settings.image.as_str(), &settings.image_source),
        ("python:3.12", &ImageSource::RepositoryConfig)
    );
}

#[test]
fn setup_network_only_when_the_operator_allows_it() {
    let repo = RepoConfig::parse("[sandbox]\nsetup = \"pip install -e .\"\nsetup_network = true\n").unwrap();
    let denied = repo.apply(&operator(&[]));
    assert_eq!(
        (denied.setup.as_deref(), denied.setup_network),
        (Some("pip install -e ."), false)
    );
    insta::assert_snapshot!(denied.notes.join("\n"), @"`[sandbox] setup_network = true` is not allowed on this server; `setup` runs without network.");

    let allowed = repo.apply(&operator(&["sandbox.setup=true", "sandbox.setup_network=true"]));
    assert_eq!(
        (allowed.setup.as_deref(), allowed.setup_network),
        (Some("pip install -e ."), true)
    );
    assert!(allowed.notes.is_empty());
    let bridged = repo.apply(&operator(&["sandbox.network=bridge"]));
    assert!(bridged.setup_network);

    // A repository script does not inherit the network the operator granted its own script.
    let quiet = RepoConfig::parse("[sandbox]\nsetup = \"make\"\n").unwrap();
    let settings = quiet.apply(&operator(&["sandbox.setup=true", "sandbox.setup_network=true"]));
    assert_eq!(
        (settings.setup.as_deref(), settings.setup_network),
        (Some("make"), false)
    );
    // Without a repository script, the operator's runs as configured.
    let settings = RepoConfig::default().apply(&operator(&["sandbox.setup=true", "sandbox.setup_network=true"]));
    assert_eq!(
        (settings.setup.as_deref(), settings.setup_network),
        (Some("true"), true)
    );
}

#[test]
fn min_permission_reads_the_collaborator_api() {
    use crate::github::Permission;
    use MinPermission::{Admin, Maintain, Write};
    let cases = [
        (Permission::Admin, [true, true, true]),
        (Permission::Maintain, [true, true, false]),
        (Permission::Write, [true, false, false]),
        (Permission::Triage, [false, false, false]),
        (Permission::Read, [false, false, false]),
        (Permission::None, [false, false, false]),
    ];
    for (permission, expected) in cases {
        let got = [Write, Maintain, Admin].map(|min| min.allows(permission));
        assert_eq!(got, expected, "{permission:?}");
    }
}

#[test]
fn the_dependency_chore_section() {
    let config = RepoConfig::parse(
        "[chores.deps]\nschedule = \"0 6 * * 1\"\ntimezone = \"Europe/Berlin\"\necosystems = [\"cargo\", \"actions\"]\n\
         major = true\nignore = [\"serde*\", \"tokio\"]\ngroup = \"all\"\n",
    )
    .unwrap();
    let deps = &config.deps;
    assert_eq!(
        deps.schedule.as_ref().map(ToString::to_string).as_deref(),
        Some("0 6 * * 1")
    );
    assert_eq!(deps.timezone.as_deref(), Some("Europe/Berlin"));
    assert_eq!(deps.ecosystems, Some([Ecosystem::Cargo, Ecosystem::Actions].into()));
    assert_eq!(deps.group, DepsGrouping::All);
    let policy = deps.policy();
    assert!(policy.major && !policy.update_pinned && policy.for_package(Ecosystem::Cargo, "serde_json").ignore);
    assert_eq!(RepoConfig::default().deps.schedule, None);
    assert_eq!(
        (&deps.labels, &deps.reviewers, &deps.assignees, deps.max_open_prs),
        (&Vec::new(), &Vec::new(), &Vec::new(), None)
    );

    // What the pull requests get.
    let config = RepoConfig::parse(
        "[chores.deps]\nlabels = [\"dependencies\", \"bot\", \"dependencies\"]\nreviewers = [\"alice\", \"acme/platform-team\"]\n\
         assignees = [\"bob\"]\nmax_open_prs = 3\n",
    )
    .unwrap();
    let deps = &config.deps;
    assert_eq!(deps.labels, ["dependencies", "bot"]);
    assert_eq!(
        deps.reviewers,
        [Reviewer::User("alice".into()), Reviewer::Team("platform-team".into())]
    );
    assert_eq!(
        (deps.assignees.as_slice(), deps.max_open_prs),
        (["bob".to_owned()].as_slice(), Some(3))
    );
    insta::assert_snapshot!(problems("[chores.deps]\nlabels = [\"\", 1]\nreviewers = [\"@alice\", \"acme/\"]\nassignees = []\nmax_open_prs = 0\n"), @r#"
    .github/pitcrew.toml:2:11: `chores.deps.labels` holds an empty label
    .github/pitcrew.toml:2:15: `chores.deps.labels` must hold only strings, found integer
    .github/pitcrew.toml:3:14: invalid reviewer "@alice" in `chores.deps.reviewers`: expected a GitHub login or a team as `org/team-slug`
    .github/pitcrew.toml:3:24: invalid reviewer "acme/" in `chores.deps.reviewers`: expected a GitHub login or a team as `org/team-slug`
    .github/pitcrew.toml:4:13: invalid `chores.deps.assignees`: must name at least one login; leave it out to assign nobody
    .github/pitcrew.toml:5:16: invalid `chores.deps.max_open_prs` = 0: must be at least 1
    "#);

    insta::assert_snapshot!(problems("[chores.deps]\nschedule = \"0 6 * *\"\ntimezone = \"Mars/Base\"\necosystems = [\"crago\"]\ngroup = \"each\"\nmajr = true\n[chores.dpes]\nx = 1\n"), @r#"
    .github/pitcrew.toml:2:12: invalid `chores.deps.schedule` = "0 6 * *": `0 6 * *` has 4 fields; a schedule has five: minute hour day-of-month month day-of-week (e.g. `0 6 * * 1`)
    .github/pitcrew.toml:3:12: invalid `chores.deps.timezone` = "Mars/Base": unknown time zone `Mars/Base`; use an IANA name such as `UTC`, `Europe/Berlin` or `America/New_York`
    .github/pitcrew.toml:4:15: unknown ecosystem `crago` in `chores.deps.ecosystems`; did you mean `cargo`?; the ecosystems are: cargo, npm, python, actions
    .github/pitcrew.toml:5:9: invalid `chores.deps.group` = "each": expected `ecosystem` or `all`
    .github/pitcrew.toml:6:1: unknown key `majr` in [chores.deps]; did you mean `major`?; valid keys in [chores.deps]: schedule, timezone, ecosystems, major, ignore, group, update_pinned, labels, reviewers, assignees, max_open_prs, rules, min_release_age, dashboard
    .github/pitcrew.toml:7:9: unknown chore `[chores.dpes]`; did you mean `[chores.deps]`?; the chores are: deps
    "#);
}

#[test]
fn dependency_rules_refine_the_defaults_per_package() {
    let config = RepoConfig::parse(
        r#"
[chores.deps]
ignore = ["left-pad"]
min_release_age = "3 days"

[[chores.deps.rules]]
match = ["serde*", "tokio"]
ignore = true

[[chores.deps.rules]]
match = ["aws-*"]
ecosystems = ["cargo"]
group = "aws"
schedule = "0 5 * * sat"

[[chores.deps.rules]]
match = ["react*"]
major = true
update_pinned = true

[[chores.deps.rules]]
match = ["aws-sdk-*"]
group = "aws"
"#,
    )
    .unwrap();
    let deps = &config.deps;
    assert_eq!(deps.min_release_age, Some(Duration::from_secs(3 * 86_400)));
    assert_eq!(deps.rules.len(), 4);
    assert_eq!(
        deps.rules[1],
        Rule {
            matches: vec!["aws-*".into()],
            ecosystems: Some([Ecosystem::Cargo].into()),
            group: Some("aws".into()),
            schedule: Some(Schedule::parse("0 5 * * sat").unwrap()),
            ..Rule::default()
        }
    );
    let policy = deps.policy();
    // A group's schedule is given once and holds for every rule that names the group.
    let schedules: Vec<(String, String)> = policy
        .group_schedules()
        .into_iter()
        .map(|(group, schedule)| (group, schedule.to_string()))
        .collect();
    assert_eq!(schedules, [("aws".to_owned(), "0 5 * * sat".to_owned())]);
    assert!(policy.for_package(Ecosystem::Cargo, "serde_json").ignore);
    assert!(policy.for_package(Ecosystem::Npm, "left-pad").ignore);
    assert_eq!(
        policy.for_package(Ecosystem::Cargo, "aws-sdk-s3").group.as_deref(),
        Some("aws")
    );
    assert_eq!(policy.for_package(Ecosystem::Npm, "aws-sdk").group, None);
    let react = policy.for_package(Ecosystem::Npm, "react-dom");
    assert!(react.major && react.update_pinned && !react.ignore);
    assert_eq!(policy.min_release_age, Some(Duration::from_secs(3 * 86_400)));

    let ages = [
        ("\"12h\"", 12 * 3_600),
        ("\"2 weeks\"", 14 * 86_400),
        ("\"1 hour\"", 3_600),
        ("86400", 86_400),
    ];
    for (written, seconds) in ages {
        let config = RepoConfig::parse(&format!("[chores.deps]\nmin_release_age = {written}\n")).unwrap();
        assert_eq!(
            config.deps.min_release_age,
            Some(Duration::from_secs(seconds)),
            "{written}"
        );
    }
}

#[test]
fn bad_dependency_rules_are_located() {
    insta::assert_snapshot!(problems(r#"[chores.deps]
ignore = ["serde?"]
min_release_age = "3 dayz"

[[chores.deps.rules]]
match = []
ignore = true

[[chores.deps.rules]]
match = ["aws-*", "a b", 3]
grup = "aws"
major = "yes"

[[chores.deps.rules]]
ecosystems = ["crago"]
group = "cargo"

[[chores.deps.rules]]
match = ["x"]

[[chores.deps.rules]]
match = ["y"]
group = "Has Space"
"#), @r#"
    .github/pitcrew.toml:2:11: invalid pattern "serde?" in `chores.deps.ignore`: only `*` is a wildcard (it matches any run of characters)
    .github/pitcrew.toml:3:19: invalid `chores.deps.min_release_age` = "3 dayz": unknown unit `dayz`; write e.g. "3 days", "12 hours", "2 weeks", "30 minutes", or "12h"
    .github/pitcrew.toml:6:9: invalid `chores.deps.rules[0].match`: must name at least one package (`*` matches any run of characters)
    .github/pitcrew.toml:10:19: invalid pattern "a b" in `chores.deps.rules[1].match`: package names have no whitespace
    .github/pitcrew.toml:10:26: `chores.deps.rules[1].match` must hold only strings, found integer
    .github/pitcrew.toml:11:1: unknown key `grup` in a `[[chores.deps.rules]]` table; did you mean `group`?; valid keys: match, ecosystems, ignore, major, update_pinned, group, schedule
    .github/pitcrew.toml:12:9: `chores.deps.rules[1].major` must be a boolean (true or false), found string
    .github/pitcrew.toml:14:1: `chores.deps.rules[2]` has no `match`: list the package names it applies to, e.g. `match = ["serde*"]`
    .github/pitcrew.toml:15:15: unknown ecosystem `crago` in `chores.deps.rules[2].ecosystems`; did you mean `cargo`?; the ecosystems are: cargo, npm, python, actions
    .github/pitcrew.toml:16:9: invalid `chores.deps.rules[2].group` = "cargo": that name is taken by the branches of the ecosystems and of majors; choose another
    .github/pitcrew.toml:18:1: `chores.deps.rules[3]` sets nothing: give it at least one of `ignore`, `major`, `update_pinned`, `group`
    .github/pitcrew.toml:23:9: invalid `chores.deps.rules[4].group` = "Has Space": a group name is lowercase letters, digits and inner `-`, at most 40 characters (it names the branch `pitcrew/deps-<group>`)
    "#);
    insta::assert_snapshot!(problems("[chores.deps]\nrules = [1]\nmin_release_age = \"0 days\"\n"), @r#"
    .github/pitcrew.toml:2:10: `chores.deps.rules` must hold only tables (`[[chores.deps.rules]]`), found integer
    .github/pitcrew.toml:3:19: invalid `chores.deps.min_release_age` = "0 days": must be longer than zero
    "#);
    insta::assert_snapshot!(problems("[chores.deps]\n[[chores.deps.rules]]\nmatch = [\"a*\"]\nschedule = \"@daily\"\n\n[[chores.deps.rules]]\nmatch = [\"b*\"]\ngroup = \"b\"\nschedule = \"0 6 * *\"\n\n[[chores.deps.rules]]\nmatch = [\"c*\"]\ngroup = \"c\"\nschedule = \"@weekly\"\n\n[[chores.deps.rules]]\nmatch = [\"cc*\"]\ngroup = \"c\"\nschedule = \"@monthly\"\n"), @r#"
    .github/pitcrew.toml:4:12: `chores.deps.rules[0].schedule` needs a `group` in the same rule: the schedule is when that group's pull request is made (rules without a group apply on every run)
    .github/pitcrew.toml:9:12: invalid `chores.deps.rules[1].schedule` = "0 6 * *": `0 6 * *` has 4 fields; a schedule has five: minute hour day-of-month month day-of-week (e.g. `0 6 * * 1`)
    .github/pitcrew.toml:19:12: `chores.deps.rules[3].schedule` = "@monthly" differs from the schedule an earlier rule gives group `c` ("@weekly"): a group has one schedule
    "#);
    insta::assert_snapshot!(problems("[chores.deps]\nrules = \"none\"\n"), @r#"
    .github/pitcrew.toml:2:9: `chores.deps.rules` must be an array of tables (`[[chores.deps.rules]]`), found string
    "#);
}
