//! The `pitcrew` command line: parses arguments, sets up logging and hands off to the library.
//! Nothing else lives here.
#![allow(clippy::print_stderr, reason = "the command line reports its errors on stderr")]

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use std::io::IsTerminal as _;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use pitcrew::agent::StopReason;
use pitcrew::config::{self, Config, ConfigErrors, LoadOptions};
use pitcrew::logging::{self, LogFormat};
use pitcrew::prompts::Prompts;
use pitcrew::run::RunOptions;
use pitcrew::run::progress::{Progress, render_text};
use pitcrew::secrets::StartupEnv;
use tokio_util::sync::CancellationToken;

/// A headless GitHub pull-request bot driving an LLM coding agent in a sandbox.
#[derive(Debug, Parser)]
#[command(name = "pitcrew", version, about, propagate_version = true)]
struct Cli {
    /// Configuration file [default: ./pitcrew.toml if it exists]; `pitcrew eval` takes several,
    /// one per configuration it compares
    #[arg(long, global = true, env = "PITCREW_CONFIG", value_name = "FILE")]
    config: Vec<PathBuf>,

    /// Override a setting, e.g. `--set model.name=gpt-4o` (repeatable); beats the file and the environment
    #[arg(long = "set", global = true, value_name = "KEY=VALUE")]
    set: Vec<String>,

    /// Log line format on stderr; the level comes from RUST_LOG (default info)
    #[arg(
        long,
        global = true,
        env = "PITCREW_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Pretty
    )]
    log_format: LogFormat,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a task on a local repository: a new branch, the agent, a commit and a summary
    Run(RunArgs),
    /// Review the current branch's commits against their base, as a pull request review would
    Review(ReviewArgs),
    /// Run the GitHub App server: webhooks in, jobs out, reports on GitHub
    Serve(ServeArgs),
    /// Run as a GitHub Actions step: the workflow's event through the same triggers and jobs
    Action,
    /// Triage a CI job log: the failing step's failures and why the job failed
    Triage(TriageArgs),
    /// Ask a checkout's code index what the agent's find_symbol, find_references and outline
    /// tools ask
    Index(IndexArgs),
    /// Measure how well the agent solves a suite of cases, and compare configurations and models
    Eval(EvalArgs),
    /// Inspect the configuration
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Set pitcrew up on GitHub
    #[command(subcommand)]
    Setup(SetupCommand),
    /// The dependency chore on a local checkout, without GitHub: the updates made on a new branch
    /// with the lockfiles refreshed and the tests run, or (--dry-run) the plan alone
    Chore(ChoreArgs),
    /// Check everything a server needs: the configuration, the GitHub App, the webhook secret, the
    /// public URL, Docker and the sandbox image, the model, the data directory and git
    Doctor(DoctorArgs),
}

#[derive(Debug, clap::Args)]
struct ChoreArgs {
    /// The checkout whose manifests are scanned (its working tree) and whose
    /// .github/pitcrew.toml gives the policy
    #[arg(long, default_value = ".", value_name = "PATH")]
    repo: PathBuf,
    /// Only this ecosystem: cargo, npm, python or actions (repeatable) [default: those the
    /// repository enables]
    #[arg(long = "ecosystem", value_name = "NAME")]
    ecosystems: Vec<String>,
    /// Scan and plan only, changing nothing: the pull requests a chore run would open, each with
    /// its table
    #[arg(long)]
    dry_run: bool,
    /// Print one JSON object instead of the tables
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct DoctorArgs {
    /// Print one JSON object (`ok`, `checks`) instead of the list
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum SetupCommand {
    /// Create the GitHub App from a manifest (its permissions, events and webhook filled in) and
    /// write its id, private key and webhook secret to a new configuration file
    App(SetupAppArgs),
}

#[derive(Debug, clap::Args)]
struct SetupAppArgs {
    /// The server's public address, as GitHub will reach it (the webhook goes below it), e.g.
    /// https://pitcrew.example.com
    #[arg(long, value_name = "URL")]
    public_url: String,
    /// The organization to own the App [default: your account]
    #[arg(long, value_name = "ORG")]
    org: Option<String>,
    /// The App's name on GitHub (unique there)
    #[arg(long, default_value = "pitcrew", value_name = "NAME")]
    name: String,
    /// GitHub's address, or a GitHub Enterprise Server's
    #[arg(long, default_value = "https://github.com", value_name = "URL")]
    github_url: String,
    /// GitHub's API [default: api.github.com for github.com, else the server's /api/v3]
    #[arg(long, value_name = "URL")]
    api_url: Option<String>,
    /// The webhook's path below the public URL (sets server.webhook_path)
    #[arg(long, default_value = config::DEFAULT_WEBHOOK_PATH, value_name = "PATH")]
    webhook_path: String,
    /// The configuration file to write (it must not exist)
    #[arg(long, default_value = "pitcrew.toml", value_name = "FILE")]
    out: PathBuf,
    /// Where the local page listens [default: a free port on 127.0.0.1]
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    listen: std::net::SocketAddr,
    /// How long to wait for the App to be created, in minutes
    #[arg(long, default_value_t = 30, value_name = "MINUTES")]
    timeout_minutes: u64,
}

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct EvalArgs {
    #[command(subcommand)]
    command: Option<EvalCommand>,
    /// Suites to run: YAML case files, or directories of them
    #[arg(value_name = "SUITE", required = true)]
    suites: Vec<PathBuf>,
    /// Run the cases with this model (repeatable: each one is a configuration compared side by
    /// side with the others, under every --config)
    #[arg(long = "model", value_name = "NAME")]
    models: Vec<String>,
    /// Case runs at once, each with its own working copy and sandbox
    #[arg(long, default_value_t = 2, value_name = "N")]
    concurrency: usize,
    /// Runs of each case per configuration (models are not deterministic)
    #[arg(long, default_value_t = 1, value_name = "K")]
    repeat: u32,
    /// Where results.jsonl, report.md, its charts and the trajectories go
    #[arg(long, default_value = "eval-out", value_name = "DIR")]
    out: PathBuf,
    /// Exit with status 1 when a configuration passes fewer than this share of its case runs
    /// (0 to 1; errors count as not passed)
    #[arg(long, value_name = "R")]
    min_pass_rate: Option<f64>,
    /// Record every model exchange under DIR
    #[arg(long, value_name = "DIR", conflicts_with = "replay")]
    record: Option<PathBuf>,
    /// Answer from the recordings under DIR instead of a model: free and deterministic
    #[arg(long, value_name = "DIR")]
    replay: Option<PathBuf>,
    /// Where commands run: docker or local (sets sandbox.backend)
    #[arg(long, value_name = "BACKEND")]
    sandbox: Option<String>,
}

#[derive(Debug, Subcommand)]
enum EvalCommand {
    /// Prove the suites' cases: with its reference patch a case's check must flip from failing to
    /// passing
    CheckCases {
        #[arg(value_name = "SUITE", required = true)]
        suites: Vec<PathBuf>,
        /// Where commands run: docker or local (sets sandbox.backend)
        #[arg(long, value_name = "BACKEND")]
        sandbox: Option<String>,
    },
    /// Propose cases from a repository's history: commits whose new tests fail before them and
    /// pass after
    Mine {
        /// The repository
        #[arg(long, default_value = ".", value_name = "PATH")]
        repo: PathBuf,
        /// Only commits from this date on (YYYY-MM-DD)
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// Propose at most this many cases
        #[arg(long, default_value_t = 20, value_name = "N")]
        max: usize,
        /// The suite directory to write (cases.yaml, checks/, references/)
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The command that runs the tests [default: the repository's [agent] test_command]
        #[arg(long, value_name = "COMMAND")]
        test_command: Option<String>,
        /// How long the tests may run on one commit, in seconds
        #[arg(long, default_value_t = 600, value_name = "SECS")]
        timeout: u64,
        /// Where commands run: docker or local (sets sandbox.backend)
        #[arg(long, value_name = "BACKEND")]
        sandbox: Option<String>,
    },
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Address to listen on (sets server.listen)
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Where the job database, mirrors and working copies live (sets server.data_dir)
    #[arg(long, value_name = "PATH")]
    data_dir: Option<PathBuf>,
}

/// The model, budget and sandbox flags of the commands that run the agent locally.
#[derive(Debug, clap::Args)]
struct AgentArgs {
    /// Model name (sets model.name)
    #[arg(long)]
    model: Option<String>,
    /// Provider: openai or anthropic (sets model.provider)
    #[arg(long)]
    provider: Option<String>,
    /// API base URL, e.g. a local OpenAI-compatible server (sets model.base_url)
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Step budget (sets agent.max_steps)
    #[arg(long, value_name = "N")]
    max_steps: Option<u32>,
    /// Cost budget in US dollars (sets agent.max_cost_usd)
    #[arg(long, value_name = "USD")]
    max_cost_usd: Option<f64>,
    /// Where commands run: docker (an isolated container) or local (this machine, unsandboxed)
    /// (sets sandbox.backend)
    #[arg(long, value_name = "BACKEND")]
    sandbox: Option<String>,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// What to do, in plain words (`-` reads it from stdin)
    task: String,
    /// The repository to work in
    #[arg(long, default_value = ".", value_name = "PATH")]
    repo: PathBuf,
    #[command(flatten)]
    agent: AgentArgs,
    /// Work on the current branch instead of a new pitcrew/<slug> branch
    #[arg(long)]
    in_place: bool,
    /// Print one JSON object with the result instead of the text summary
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct ReviewArgs {
    /// The repository whose current branch is reviewed (its committed changes)
    #[arg(long, default_value = ".", value_name = "PATH")]
    repo: PathBuf,
    /// What to compare with (a branch, a remote branch, a commit) [default: the default branch:
    /// origin/HEAD, origin/main, origin/master, main or master]
    #[arg(long, value_name = "REF")]
    base: Option<String>,
    /// Exit with status 1 when a finding of this severity or a worse one exists
    #[arg(long, value_enum, value_name = "SEVERITY")]
    fail_on: Option<FailOn>,
    /// Print one JSON object with the findings instead of the text
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    agent: AgentArgs,
}

/// The severity `--fail-on` names.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum FailOn {
    Blocking,
    Suggestion,
    Nit,
}

impl FailOn {
    fn severity(self) -> pitcrew::review::Severity {
        match self {
            FailOn::Blocking => pitcrew::review::Severity::Blocking,
            FailOn::Suggestion => pitcrew::review::Severity::Suggestion,
            FailOn::Nit => pitcrew::review::Severity::Nit,
        }
    }
}

#[derive(Debug, clap::Args)]
struct TriageArgs {
    /// The job log, as GitHub Actions serves it or as a runner printed it
    #[arg(long, value_name = "FILE")]
    log: PathBuf,
    /// Print one JSON object with the analysis instead of the text summary
    #[arg(long)]
    json: bool,
    /// A checkout of the repository the job ran on: paths in the findings are made relative to it
    /// (runner and container prefixes removed) and each finding shows the line it points at
    #[arg(long, value_name = "PATH")]
    repo: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct IndexArgs {
    /// The checkout to index
    #[arg(long, default_value = ".", value_name = "PATH")]
    repo: PathBuf,
    /// Print JSON instead of the text the agent's tools answer with
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    query: IndexCommand,
}

#[derive(Debug, Subcommand)]
enum IndexCommand {
    /// Where a symbol is defined: a name, `Type::method`, `Class.method`, `module.func` or a prefix
    Symbols {
        query: String,
        /// Only definitions of this kind (function, method, class, struct, enum, trait, interface,
        /// type_alias, constant, field, module, …)
        #[arg(long)]
        kind: Option<String>,
        /// Only definitions in this file or below this directory
        #[arg(long, value_name = "PATH")]
        path: Option<String>,
        /// At most this many matches
        #[arg(long, default_value_t = 20, value_name = "N")]
        limit: usize,
    },
    /// Where a symbol is used, by file
    Refs {
        symbol: String,
        /// Only uses in this file or below this directory
        #[arg(long, value_name = "PATH")]
        path: Option<String>,
        /// At most this many uses
        #[arg(long, default_value_t = 100, value_name = "N")]
        limit: usize,
    },
    /// A file's definitions as a tree, with line ranges
    Outline {
        /// The file, relative to the checkout
        file: String,
    },
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Load and validate the configuration, then print it with secrets redacted
    Check,
    /// Print the JSON Schema of `pitcrew.toml` (with --repo: of a repository's
    /// `.github/pitcrew.toml`), for editors that check TOML against one
    Schema {
        /// The repository's file instead of the operator's
        #[arg(long)]
        repo: bool,
    },
}

/// Exit status for a configuration that does not load (clap uses the same for bad arguments).
const EXIT_BAD_CONFIG: u8 = 2;

/// Exit status of a run that stopped before finishing (budget, stuck, model or tool failure).
const EXIT_RUN_STOPPED: u8 = 1;
/// Exit status when a run could not start (not a repository, uncommitted changes, …).
const EXIT_RUN_SETUP: u8 = 3;
/// Exit status after Ctrl-C, as shells report SIGINT.
const EXIT_CANCELLED: u8 = 130;

/// Plain, not `#[tokio::main]`: the secrets leave the environment before any thread exists, and
/// each command builds its runtime afterwards.
fn main() -> ExitCode {
    let config_secrets: Vec<String> = config::secret_env_vars().collect();
    let env = pitcrew::secrets::take_from_environment(&config_secrets);
    let mut cli = Cli::parse();
    logging::init(cli.log_format);
    if cli.config.len() > 1 && !matches!(cli.command, Command::Eval(EvalArgs { command: None, .. })) {
        eprintln!(
            "error: --config is given {} times; only `pitcrew eval` compares configurations",
            cli.config.len()
        );
        return ExitCode::from(EXIT_BAD_CONFIG);
    }
    for warning in &env.warnings {
        tracing::warn!("{warning}");
    }
    match cli.command {
        Command::Run(ref args) => {
            cli.set.extend(agent_overrides(&args.agent));
            match load_config(&cli, &env) {
                Ok(config) => run(config, args),
                Err(errors) => {
                    report(&errors);
                    ExitCode::from(EXIT_BAD_CONFIG)
                }
            }
        }
        Command::Review(ref args) => {
            cli.set.extend(agent_overrides(&args.agent));
            match load_config(&cli, &env) {
                Ok(config) => review(config, args),
                Err(errors) => {
                    report(&errors);
                    ExitCode::from(EXIT_BAD_CONFIG)
                }
            }
        }
        Command::Serve(ref args) => {
            if let Some(listen) = &args.listen {
                cli.set.push(format!("server.listen={listen}"));
            }
            if let Some(dir) = &args.data_dir {
                cli.set.push(format!("server.data_dir={}", dir.display()));
            }
            match load_config(&cli, &env) {
                Ok(config) => serve(config),
                Err(errors) => {
                    report(&errors);
                    ExitCode::from(EXIT_BAD_CONFIG)
                }
            }
        }
        Command::Action => action(&env),
        Command::Triage(ref args) => triage(args),
        Command::Index(ref args) => index(args),
        Command::Eval(ref args) => eval(&cli, args, &env),
        Command::Config(ConfigCommand::Schema { repo }) => {
            let schema = if repo {
                config::json_schema::repo_schema()
            } else {
                config::json_schema::operator_schema()
            };
            print!("{}", config::json_schema::file_text(&schema));
            ExitCode::SUCCESS
        }
        Command::Setup(SetupCommand::App(ref args)) => setup_app(args),
        Command::Doctor(ref args) => doctor(&cli, args, &env),
        Command::Chore(ref args) => chore(&cli, args, &env),
        Command::Config(ConfigCommand::Check) => match load_config(&cli, &env) {
            Ok(config) => {
                print!("{}", config.render_redacted());
                ExitCode::SUCCESS
            }
            Err(errors) => {
                report(&errors);
                ExitCode::from(EXIT_BAD_CONFIG)
            }
        },
    }
}

/// `pitcrew chore [--dry-run]`: 0 when the plan was made (lookups that failed are in it) or the
/// updates were committed with the tests passing; 1 when they were made but the tests fail or
/// nothing could be committed; 2 for bad arguments or configuration (the repository's included); 3
/// when the checkout cannot be used (not a repository, uncommitted changes).
#[allow(clippy::print_stdout, reason = "the plan is the command's output")]
fn chore(cli: &Cli, args: &ChoreArgs, env: &StartupEnv) -> ExitCode {
    use pitcrew::run::chore::{ChoreError, ChoreOptions, apply, dry_run, render, render_applied};
    let mut ecosystems = Vec::new();
    for name in &args.ecosystems {
        match config::deps::Ecosystem::parse(name) {
            Some(ecosystem) => ecosystems.push(ecosystem),
            None => {
                eprintln!("error: --ecosystem {name:?}: expected cargo, npm, python or actions");
                return ExitCode::from(EXIT_BAD_CONFIG);
            }
        }
    }
    let config = match load_config_without_model(cli, &cli.set, env) {
        Ok(config) => config,
        Err(errors) => {
            report(&errors);
            return ExitCode::from(EXIT_BAD_CONFIG);
        }
    };
    let options = ChoreOptions {
        repo: args.repo.clone(),
        ecosystems,
        github_token: env
            .vars()
            .get("GITHUB_TOKEN")
            .filter(|t| !t.is_empty())
            .map(|t| secrecy::SecretString::from(t.clone())),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: starting the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let shown = if args.dry_run {
        runtime.block_on(dry_run(&config, &options)).map(|plan| {
            let text = render(&plan);
            (serde_json::to_string(&plan), text, ExitCode::SUCCESS)
        })
    } else {
        runtime
            .block_on(apply(&config, &Prompts::embedded(), &options))
            .map(|applied| {
                let failing = applied.tests.as_ref().is_some_and(|t| t.status == "failing");
                let code = if applied.error.is_some() || failing {
                    ExitCode::from(EXIT_RUN_STOPPED)
                } else {
                    ExitCode::SUCCESS
                };
                let text = render_applied(&applied);
                (serde_json::to_string(&applied), text, code)
            })
    };
    match shown {
        Ok((json, text, code)) => {
            if !args.json {
                print!("{text}");
                return code;
            }
            match json {
                Ok(json) => {
                    println!("{json}");
                    code
                }
                Err(err) => {
                    eprintln!("error: {err}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(err @ ChoreError::RepoConfig(_)) => {
            eprintln!("error: {err}");
            ExitCode::from(EXIT_BAD_CONFIG)
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(EXIT_RUN_SETUP)
        }
    }
}

/// `pitcrew doctor`: 0 only when no check failed, else 1.
#[allow(clippy::print_stdout, reason = "the checks are the command's output")]
fn doctor(cli: &Cli, args: &DoctorArgs, env: &StartupEnv) -> ExitCode {
    let loaded = load_config(cli, env).map_err(|errors| {
        let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
        match all.split_first() {
            Some((first, [])) => first.clone(),
            Some((first, rest)) => format!("{first} (and {} more)", rest.len()),
            None => "the configuration did not load".to_owned(),
        }
    });
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: starting the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let checks = runtime.block_on(pitcrew::doctor::run(loaded.as_ref().map_err(Clone::clone)));
    let ok = pitcrew::doctor::all_passed(&checks);
    if args.json {
        println!("{}", serde_json::json!({"ok": ok, "checks": checks}));
    } else {
        print!("{}", pitcrew::doctor::render(&checks));
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// `pitcrew setup app`: 0 when the App was created and its file written; 2 for bad arguments; 1
/// when the flow failed or timed out.
#[allow(clippy::print_stdout, reason = "the flow talks to the person running it")]
fn setup_app(args: &SetupAppArgs) -> ExitCode {
    use pitcrew::setup::{SetupApp, api_url_for, setup_app};
    let parse = |flag: &str, text: &str| {
        url::Url::parse(text.trim())
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
            .ok_or_else(|| format!("{flag} {text:?} is not an http(s) URL"))
    };
    let urls = (|| {
        let public_url = parse("--public-url", &args.public_url)?;
        let github_url = parse("--github-url", &args.github_url)?;
        let api_url = match &args.api_url {
            Some(text) => parse("--api-url", text)?,
            None => api_url_for(&github_url).map_err(|e| format!("--github-url: {e}"))?,
        };
        Ok::<_, String>((public_url, github_url, api_url))
    })();
    let (public_url, github_url, api_url) = match urls {
        Ok(urls) => urls,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(EXIT_BAD_CONFIG);
        }
    };
    let request = SetupApp {
        name: args.name.clone(),
        org: args.org.clone(),
        public_url,
        webhook_path: args.webhook_path.clone(),
        github_url,
        api_url,
        out: args.out.clone(),
        listen: args.listen,
        timeout: std::time::Duration::from_secs(args.timeout_minutes.saturating_mul(60)),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: starting the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let mut say = |line: &str| {
        println!("{line}");
        let _ = std::io::stdout().flush();
    };
    match runtime.block_on(setup_app(request, &mut say)) {
        Ok(outcome) => {
            println!(
                "Created the GitHub App {} (id {}){}.",
                outcome.app.name,
                outcome.app.id,
                outcome
                    .app
                    .owner
                    .as_deref()
                    .map(|o| format!(", owned by {o}"))
                    .unwrap_or_default()
            );
            println!(
                "Wrote its id, private key and webhook secret to {} (mode 0600).",
                outcome.out.display()
            );
            println!("Next:");
            println!("  1. Install it on your repositories: {}", outcome.install_url());
            println!(
                "  2. Add the model's settings to {} ([model] name, provider; the API key in its variable)",
                outcome.out.display()
            );
            println!(
                "  3. Check everything: pitcrew doctor --config {}",
                outcome.out.display()
            );
            println!(
                "  4. Start the server: pitcrew serve --config {}",
                outcome.out.display()
            );
            ExitCode::SUCCESS
        }
        Err(err @ (pitcrew::setup::SetupError::OutExists(_) | pitcrew::setup::SetupError::Invalid(_))) => {
            eprintln!("error: {err}");
            ExitCode::from(EXIT_BAD_CONFIG)
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn load_config(cli: &Cli, env: &StartupEnv) -> Result<Config, ConfigErrors> {
    load_config_file(cli.config.first().cloned(), &cli.set, env)
}

fn load_config_file(path: Option<PathBuf>, set: &[String], env: &StartupEnv) -> Result<Config, ConfigErrors> {
    let path = path.or_else(config::discover_config_file);
    let config = Config::load(LoadOptions {
        config_path: path.as_deref(),
        env: env.vars(),
        overrides: set,
    })?;
    forget_api_key_var(&config);
    Ok(config)
}

/// The configuration of a command that runs no model (`eval check-cases`, `eval mine`): when the
/// model's settings are all that is missing, a placeholder model stands in for them.
fn load_config_without_model(cli: &Cli, set: &[String], env: &StartupEnv) -> Result<Config, ConfigErrors> {
    match load_config_file(cli.config.first().cloned(), set, env) {
        Err(errors)
            if errors.iter().all(|e| {
                matches!(
                    e,
                    config::ConfigError::Missing { section: "model", .. } | config::ConfigError::MissingApiKey { .. }
                )
            }) =>
        {
            let mut placeholder = vec![
                "model.name=none".to_owned(),
                "model.base_url=http://127.0.0.1:9/v1".to_owned(),
            ];
            placeholder.extend(set.iter().filter(|s| !s.starts_with("model.")).cloned());
            load_config_file(cli.config.first().cloned(), &placeholder, env)
        }
        other => other,
    }
}

/// `pitcrew eval`: exit 0 when every case ran (and every configuration reached --min-pass-rate);
/// 1 below it; 2 for bad arguments, configuration or suites; 3 when the suite could not run; 130
/// after Ctrl-C (the report of what finished is written).
fn eval(cli: &Cli, args: &EvalArgs, env: &StartupEnv) -> ExitCode {
    use pitcrew::eval::command;
    let cancel = CancellationToken::new();
    let sandbox = |backend: &Option<String>| {
        let mut set = cli.set.clone();
        set.extend(backend.iter().map(|b| format!("sandbox.backend={b}")));
        set
    };
    // The configuration of a subcommand that runs no model; its problems are reported here.
    let model_free = |backend: &Option<String>| match load_config_without_model(cli, &sandbox(backend), env) {
        Ok(config) => Some(config),
        Err(errors) => {
            report(&errors);
            None
        }
    };
    let code = match &args.command {
        Some(EvalCommand::CheckCases {
            suites,
            sandbox: backend,
        }) => {
            let Some(config) = model_free(backend) else {
                return ExitCode::from(EXIT_BAD_CONFIG);
            };
            block_on_cancellable(&cancel, command::check_cases(suites, config, cancel.clone()))
        }
        Some(EvalCommand::Mine {
            repo,
            since,
            max,
            out,
            test_command,
            timeout,
            sandbox: backend,
        }) => {
            let Some(config) = model_free(backend) else {
                return ExitCode::from(EXIT_BAD_CONFIG);
            };
            let since = match since.as_deref().map(str::parse::<jiff::civil::Date>).transpose() {
                Ok(since) => since,
                Err(err) => {
                    eprintln!("error: --since: {err} (a date is YYYY-MM-DD)");
                    return ExitCode::from(EXIT_BAD_CONFIG);
                }
            };
            let options = pitcrew::eval::mine::MineOptions {
                repo: repo.clone(),
                since,
                max: *max,
                out: out.clone(),
                test_command: test_command.clone(),
                timeout: std::time::Duration::from_secs((*timeout).max(1)),
                config,
                prompts: Prompts::embedded(),
                cancel: cancel.clone(),
            };
            block_on_cancellable(&cancel, command::mine(options))
        }
        None => {
            let set = sandbox(&args.sandbox);
            let configs: Vec<Option<PathBuf>> = if cli.config.is_empty() {
                vec![None]
            } else {
                cli.config.iter().cloned().map(Some).collect()
            };
            let models: Vec<Option<&String>> = if args.models.is_empty() {
                vec![None]
            } else {
                args.models.iter().map(Some).collect()
            };
            let mut variants = Vec::new();
            for path in &configs {
                for model in &models {
                    let mut set = set.clone();
                    set.extend(model.map(|m| format!("model.name={m}")));
                    let loaded = if args.replay.is_some() {
                        load_config_replaying(path.clone(), &set, env)
                    } else {
                        load_config_file(path.clone(), &set, env)
                    };
                    let config = match loaded {
                        Ok(config) => config,
                        Err(errors) => {
                            report(&errors);
                            return ExitCode::from(EXIT_BAD_CONFIG);
                        }
                    };
                    let label =
                        command::variant_label(path.as_deref(), configs.len() > 1, model.map(String::as_str), &config);
                    variants.push(pitcrew::eval::run::Variant { label, config });
                }
            }
            let options = command::RunCommand {
                suites: args.suites.clone(),
                variants,
                repeat: args.repeat,
                concurrency: args.concurrency,
                out: args.out.clone(),
                record: args.record.clone(),
                replay: args.replay.clone(),
                min_pass_rate: args.min_pass_rate,
                cancel: cancel.clone(),
            };
            block_on_cancellable(&cancel, command::run(options))
        }
    };
    match code {
        Ok(code) => ExitCode::from(code),
        Err(code) => code,
    }
}

/// A configuration for a replay: the recording answers, so a missing API key does not matter.
fn load_config_replaying(path: Option<PathBuf>, set: &[String], env: &StartupEnv) -> Result<Config, ConfigErrors> {
    match load_config_file(path.clone(), set, env) {
        Err(errors)
            if errors
                .iter()
                .all(|e| matches!(e, config::ConfigError::MissingApiKey { .. })) =>
        {
            let mut local = set.to_vec();
            local.push("model.base_url=http://127.0.0.1:9/v1".to_owned());
            load_config_file(path, &local, env)
        }
        other => other,
    }
}

/// The key's variable may have any name (`model.api_key_env`): known only now, still before any
/// thread, it leaves the environment too.
fn forget_api_key_var(config: &Config) {
    if let Err(err) = pitcrew::secrets::remove_named(&config.model.api_key_env) {
        tracing::warn!("{err}");
    }
}

/// One `error:` line per problem, for humans; no Debug dumps or backtraces.
fn report(errors: &ConfigErrors) {
    let mut stderr = std::io::stderr().lock();
    for e in errors {
        let _ = writeln!(stderr, "error: {e}");
    }
}

/// The agent flags as `--set` overrides, which beat the file and the environment.
fn agent_overrides(args: &AgentArgs) -> Vec<String> {
    let mut set = Vec::new();
    let mut push = |key: &str, value: Option<String>| {
        if let Some(value) = value {
            set.push(format!("{key}={value}"));
        }
    };
    push("model.provider", args.provider.clone());
    push("model.name", args.model.clone());
    push("model.base_url", args.base_url.clone());
    push("agent.max_steps", args.max_steps.map(|n| n.to_string()));
    push("agent.max_cost_usd", args.max_cost_usd.map(|n| n.to_string()));
    push("sandbox.backend", args.sandbox.clone());
    set
}

/// Runs `work` on a new runtime, cancelling `cancel` at the first Ctrl-C and exiting at the second;
/// `Err` (the exit status) when no runtime can be had.
fn block_on_cancellable<T>(cancel: &CancellationToken, work: impl Future<Output = T>) -> Result<T, ExitCode> {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: could not start the async runtime: {err}");
            return Err(ExitCode::from(EXIT_RUN_SETUP));
        }
    };
    Ok(runtime.block_on(async {
        let watcher = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\npitcrew: cancelling (Ctrl-C again to force)…");
                watcher.cancel();
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(i32::from(EXIT_CANCELLED));
                }
            }
        });
        work.await
    }))
}

/// `pitcrew review`: exit 0 when the review ran and found nothing at `--fail-on`; 1 when it found
/// something there, or stopped before it finished; 2 for bad arguments or configuration; 3 when it
/// could not start (not a repository, no base).
fn review(config: Config, args: &ReviewArgs) -> ExitCode {
    let cancel = CancellationToken::new();
    let progress = Arc::new(Progress::new(!args.json && std::io::stderr().is_terminal()));
    let options = pitcrew::run::review::ReviewOptions {
        repo: args.repo.clone(),
        base: args.base.clone(),
        config,
        prompts: Prompts::embedded(),
        events: progress,
        model: None,
        cancel: cancel.clone(),
    };
    let result = match block_on_cancellable(&cancel, pitcrew::run::review::review(options)) {
        Ok(result) => result,
        Err(code) => return code,
    };
    let review = match result {
        Ok(review) => review,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::from(EXIT_RUN_SETUP);
        }
    };
    if args.json {
        match serde_json::to_string_pretty(&review) {
            Ok(json) => println!("{json}"),
            Err(err) => {
                eprintln!("error: could not encode the review: {err}");
                return ExitCode::from(EXIT_RUN_STOPPED);
            }
        }
    } else {
        print!("{}", pitcrew::run::review::render_text(&review));
    }
    let reached = args.fail_on.is_some_and(|fail_on| review.reaches(fail_on.severity()));
    if reached || review.status != "finished" {
        ExitCode::from(EXIT_RUN_STOPPED)
    } else {
        ExitCode::SUCCESS
    }
}

/// `pitcrew action`: exit 0 when the job succeeded or there was nothing to do, 1 when the job
/// failed or was stopped, 2 for bad inputs or configuration, 3 when it could not start.
fn action(env: &StartupEnv) -> ExitCode {
    let env = env.vars();
    let mut action_env = match pitcrew::action::ActionEnv::from_env(env) {
        Ok(action_env) => action_env,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::from(EXIT_BAD_CONFIG);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: could not start the async runtime: {err}");
            return ExitCode::from(EXIT_RUN_SETUP);
        }
    };
    // `sandbox: auto` is decided first: the data directory depends on it.
    if let Some(decided) = runtime.block_on(action_env.resolve_sandbox()) {
        tracing::info!("{decided}");
    }
    let config = match pitcrew::action::load_config(&action_env, env) {
        Ok(config) => {
            forget_api_key_var(&config);
            config
        }
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::from(EXIT_BAD_CONFIG);
        }
    };
    let prompts = match Prompts::load(None) {
        Ok(prompts) => prompts,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::from(EXIT_BAD_CONFIG);
        }
    };
    match runtime.block_on(pitcrew::action::run(action_env, config, prompts)) {
        Ok(outcome) if outcome.success() => ExitCode::SUCCESS,
        Ok(outcome) => {
            eprintln!("error: the job did not succeed ({outcome:?}); see its check run and comment");
            ExitCode::from(EXIT_RUN_STOPPED)
        }
        Err(pitcrew::action::ActionError::Environment(err)) => {
            eprintln!("error: {err}");
            ExitCode::from(EXIT_BAD_CONFIG)
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(EXIT_RUN_SETUP)
        }
    }
}

/// `pitcrew index`: exit 0 when the index found something, 1 when it found nothing, 2 when the
/// question or the checkout is wrong.
fn index(args: &IndexArgs) -> ExitCode {
    use pitcrew::run::index::IndexQuery;
    let query = match &args.query {
        IndexCommand::Symbols {
            query,
            kind,
            path,
            limit,
        } => match pitcrew::tools::symbols::parse_kind(kind.as_deref()) {
            Ok(kind) => IndexQuery::Symbols {
                query: query.clone(),
                kind,
                path: path.clone(),
                limit: (*limit).max(1),
            },
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::from(EXIT_BAD_CONFIG);
            }
        },
        IndexCommand::Refs { symbol, path, limit } => IndexQuery::References {
            symbol: symbol.clone(),
            path: path.clone(),
            limit: (*limit).max(1),
        },
        IndexCommand::Outline { file } => IndexQuery::Outline { file: file.clone() },
    };
    match pitcrew::run::index::answer(&args.repo, &query, args.json) {
        Ok(answer) => {
            // A closed pipe (`| head`) ends the output, not the program with a panic.
            let _ = writeln!(std::io::stdout(), "{}", answer.text);
            if answer.found {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_RUN_STOPPED)
            }
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(EXIT_BAD_CONFIG)
        }
    }
}

/// `pitcrew triage`: exit 0 when the analysis ran, whatever it found; 2 when the log cannot be
/// read.
fn triage(args: &TriageArgs) -> ExitCode {
    let bytes = match std::fs::read(&args.log) {
        Ok(bytes) => bytes,
        Err(err) => {
            eprintln!("error: could not read the log {}: {err}", args.log.display());
            return ExitCode::from(EXIT_BAD_CONFIG);
        }
    };
    if let Some(repo) = &args.repo
        && !repo.is_dir()
    {
        eprintln!("error: --repo {} is not a directory", repo.display());
        return ExitCode::from(EXIT_BAD_CONFIG);
    }
    // Logs hold whatever the job printed; a stray invalid byte should not stop the triage.
    let mut analysis = pitcrew::triage::analyse(&String::from_utf8_lossy(&bytes));
    // The line each finding points at, read from the checkout.
    let mut sources = Vec::new();
    if let Some(repo) = &args.repo {
        pitcrew::triage::paths::resolve(&mut analysis.findings, repo);
        for finding in &analysis.findings {
            if let (Some(file), Some(line)) = (&finding.file, finding.line)
                && let Some(source) = pitcrew::triage::paths::source_line(repo, file, line)
            {
                sources.push((file.clone(), line, source));
            }
        }
    }
    if args.json {
        let mut value = match serde_json::to_value(&analysis) {
            Ok(value) => value,
            Err(err) => {
                eprintln!("error: could not encode the analysis: {err}");
                return ExitCode::from(EXIT_RUN_STOPPED);
            }
        };
        if args.repo.is_some() {
            value["sources"] = sources
                .iter()
                .map(|(file, line, source)| serde_json::json!({ "file": file, "line": line, "source": source }))
                .collect();
        }
        match serde_json::to_string_pretty(&value) {
            Ok(json) => println!("{json}"),
            Err(err) => {
                eprintln!("error: could not encode the analysis: {err}");
                return ExitCode::from(EXIT_RUN_STOPPED);
            }
        }
    } else {
        print!("{}", analysis.render_text());
        if !sources.is_empty() {
            println!("source lines:");
            for (file, line, source) in &sources {
                println!("  {file}:{line}: {}", source.trim());
            }
        }
    }
    ExitCode::SUCCESS
}

fn serve(config: Config) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: could not start the async runtime: {err}");
            return ExitCode::from(EXIT_RUN_SETUP);
        }
    };
    match runtime.block_on(pitcrew::serve::run(config, pitcrew::serve::ServeOptions::default())) {
        Ok(report) => {
            tracing::info!(?report, "pitcrew serve stopped");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(EXIT_RUN_SETUP)
        }
    }
}

fn run(config: Config, args: &RunArgs) -> ExitCode {
    let task = if args.task == "-" {
        let mut text = String::new();
        if let Err(err) = std::io::Read::read_to_string(&mut std::io::stdin(), &mut text) {
            eprintln!("error: could not read the task from stdin: {err}");
            return ExitCode::from(EXIT_BAD_CONFIG);
        }
        text
    } else {
        args.task.clone()
    };
    if task.trim().is_empty() {
        eprintln!("error: the task is empty: say what pitcrew should do");
        return ExitCode::from(EXIT_BAD_CONFIG);
    }
    let cancel = CancellationToken::new();
    let progress = Arc::new(Progress::new(!args.json && std::io::stderr().is_terminal()));
    let options = RunOptions {
        repo: args.repo.clone(),
        task,
        in_place: args.in_place,
        config,
        prompts: Prompts::embedded(),
        events: progress,
        model: None,
        cancel: cancel.clone(),
    };
    let result = match block_on_cancellable(&cancel, pitcrew::run::run(options)) {
        Ok(result) => result,
        Err(code) => return code,
    };
    let report = match result {
        Ok(report) => report,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::from(EXIT_RUN_SETUP);
        }
    };
    if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(json) => println!("{json}"),
            Err(err) => {
                eprintln!("error: could not encode the report: {err}");
                return ExitCode::from(EXIT_RUN_STOPPED);
            }
        }
    } else {
        print!("{}", render_text(&report));
    }
    match report.stop {
        // The agent finished but its change could not be committed: the report says why.
        _ if report.error.is_some() => ExitCode::from(EXIT_RUN_STOPPED),
        StopReason::Finished => ExitCode::SUCCESS,
        StopReason::Cancelled => ExitCode::from(EXIT_CANCELLED),
        _ => ExitCode::from(EXIT_RUN_STOPPED),
    }
}
