//! The `pitcrew` command line: parses arguments, sets up logging and hands off to the library.
//! Nothing else lives here.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use pitcrew::config::{self, Config, ConfigErrors, LoadOptions};
use pitcrew::logging::{self, LogFormat};

/// A headless GitHub pull-request bot driving an LLM coding agent in a sandbox.
#[derive(Debug, Parser)]
#[command(name = "pitcrew", version, about, propagate_version = true)]
struct Cli {
    /// Configuration file [default: ./pitcrew.toml if it exists]
    #[arg(long, global = true, env = "PITCREW_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,

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
    /// Inspect the configuration
    #[command(subcommand)]
    Config(ConfigCommand),
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Load and validate the configuration, then print it with secrets redacted
    Check,
}

/// Exit status for a configuration that does not load (clap uses the same for bad arguments).
const EXIT_BAD_CONFIG: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.log_format);
    match cli.command {
        Command::Config(ConfigCommand::Check) => match load_config(&cli) {
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

fn load_config(cli: &Cli) -> Result<Config, ConfigErrors> {
    // Variables that are not valid Unicode cannot be settings; skipping them beats panicking.
    let env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let path = cli.config.clone().or_else(config::discover_config_file);
    Config::load(LoadOptions {
        config_path: path.as_deref(),
        env: &env,
        overrides: &cli.set,
    })
}

/// One `error:` line per problem, for humans; no Debug dumps or backtraces.
fn report(errors: &ConfigErrors) {
    let mut stderr = std::io::stderr().lock();
    for e in errors {
        let _ = writeln!(stderr, "error: {e}");
    }
}
