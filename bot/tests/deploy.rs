//! The deployment files under `deploy/`: the Compose project as Compose itself reads it
//! (`docker compose config`, or `docker-compose config` where only version 1 is installed, with
//! `.env.example` as its environment file), its nginx configuration against the Compose file, and
//! the systemd unit (its sections and keys, the flags it passes the binary, and
//! `systemd-analyze verify` where the machine has it).
#![expect(clippy::unwrap_used, reason = "a failing test should panic")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

/// `[server] shutdown_grace`'s default (config.rs) and the time the worker pool then gives each
/// running job to stop (jobs/pool.rs `cancel_grace`): a stop must wait longer than both together.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(60);
const CANCEL_GRACE: Duration = Duration::from_secs(30);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn compose_dir() -> PathBuf {
    repo_root().join("deploy/compose")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The `NAME=value` lines of an environment file, comments and blank lines left out.
fn env_file(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (name, value) = line
                .split_once('=')
                .unwrap_or_else(|| panic!("not NAME=value: {line:?}"));
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

/// The variables a Compose file interpolates: every `${NAME…}` that is not the escape `$${`.
fn interpolated(compose: &str) -> Vec<String> {
    let bytes = compose.as_bytes();
    let mut names = Vec::new();
    let mut i = 0;
    while let Some(found) = compose[i..].find("${") {
        let at = i + found;
        i = at + 2;
        if at > 0 && bytes[at - 1] == b'$' {
            continue;
        }
        let name: String = compose[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The Compose command of this machine: the `docker compose` plugin, else docker-compose 1.x;
/// `None`, said loudly, when there is neither and `PITCREW_REQUIRE_DOCKER=1` does not demand one.
#[expect(clippy::print_stderr, reason = "a skipped test must say so")]
fn compose_command() -> Option<Command> {
    let answers = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .output()
            .is_ok_and(|out| out.status.success())
    };
    if answers("docker", &["compose", "version"]) {
        let mut command = Command::new("docker");
        command.arg("compose");
        return Some(command);
    }
    if answers("docker-compose", &["version"]) {
        return Some(Command::new("docker-compose"));
    }
    let why = "neither `docker compose` nor `docker-compose` is installed (apt-get install docker-compose)";
    let required = std::env::var_os("PITCREW_REQUIRE_DOCKER").is_some_and(|v| v == "1");
    assert!(!required, "PITCREW_REQUIRE_DOCKER=1, but {why}");
    eprintln!("SKIPPED: this test needs Compose: {why}");
    None
}

/// The Compose file as Compose resolves it, with `.env.example` as the environment and no
/// variable of it inherited from this process.
fn resolved_compose(mut command: Command, example: &BTreeMap<String, String>) -> Value {
    let dir = compose_dir();
    for name in example.keys() {
        command.env_remove(name);
    }
    let out = command
        .arg("--project-directory")
        .arg(&dir)
        .arg("-f")
        .arg(dir.join("docker-compose.yml"))
        .arg("--env-file")
        .arg(dir.join(".env.example"))
        .arg("config")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "compose config failed:\n{stderr}");
    assert!(
        !stderr.contains("is not set"),
        "a variable the file reads is missing from .env.example:\n{stderr}"
    );
    serde_saphyr::from_str(&stdout).unwrap_or_else(|e| panic!("{e}:\n{stdout}"))
}

/// A string field, or a number Compose printed bare (Compose 1 prints ports as numbers).
fn string(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => panic!("expected a string, got {other}"),
    }
}

/// A service's environment, as a map (`KEY: value`) or a list (`KEY=value`).
fn environment(service: &Value) -> BTreeMap<String, String> {
    match &service["environment"] {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), if v.is_null() { String::new() } else { string(v) }))
            .collect(),
        Value::Array(list) => list
            .iter()
            .map(|entry| {
                let entry = string(entry);
                let (k, v) = entry.split_once('=').unwrap_or((&entry, ""));
                (k.to_owned(), v.to_owned())
            })
            .collect(),
        other => panic!("no environment: {other}"),
    }
}

/// A mount as (source or "" for an anonymous volume, target, read-only), from the short syntax
/// (`src:dst:ro`, `dst`) or the long one.
fn mounts(service: &Value) -> Vec<(String, String, bool)> {
    let Some(list) = service["volumes"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .map(|volume| match volume {
            Value::String(short) => {
                let parts: Vec<&str> = short.split(':').collect();
                match parts[..] {
                    [target] => (String::new(), target.to_owned(), false),
                    [source, target] => (source.to_owned(), target.to_owned(), false),
                    [source, target, mode] => {
                        (source.to_owned(), target.to_owned(), mode.split(',').any(|m| m == "ro"))
                    }
                    _ => panic!("unexpected volume {short:?}"),
                }
            }
            long => (
                long["source"].as_str().unwrap_or("").to_owned(),
                string(&long["target"]),
                long["read_only"].as_bool().unwrap_or(false),
            ),
        })
        .collect()
}

/// A duration as Compose prints it: "2m", "2m0s", "90s", "1h".
fn compose_duration(text: &str) -> Duration {
    let mut seconds = 0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: u64 = number.parse().unwrap_or_else(|_| panic!("duration {text:?}"));
        number.clear();
        seconds += n * match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => panic!("duration {text:?}"),
        };
    }
    assert!(number.is_empty(), "duration {text:?} without a unit");
    Duration::from_secs(seconds)
}

#[test]
fn env_example_lists_every_variable_the_compose_file_reads() {
    let compose = read(&compose_dir().join("docker-compose.yml"));
    let example = env_file(&read(&compose_dir().join(".env.example")));
    let mut read_by_compose = interpolated(&compose);
    read_by_compose.sort();
    let listed: Vec<String> = example.keys().cloned().collect();
    assert_eq!(
        read_by_compose, listed,
        "docker-compose.yml reads exactly what .env.example lists"
    );
    // The example's database URL is the example's own database, on the service's name.
    let url = &example["PITCREW_SERVER_DATABASE_URL"];
    let expected = format!(
        "postgres://{}:{}@postgres:5432/{}",
        example["POSTGRES_USER"], example["POSTGRES_PASSWORD"], example["POSTGRES_DB"]
    );
    assert_eq!(url, &expected);
}

#[test]
fn compose_resolves_postgres_replicas_behind_the_proxy() {
    let Some(command) = compose_command() else { return };
    let example = env_file(&read(&compose_dir().join(".env.example")));
    let config = resolved_compose(command, &example);
    let services = &config["services"];

    // PostgreSQL 15 on a named volume, healthy when pg_isready says so.
    let postgres = &services["postgres"];
    assert!(string(&postgres["image"]).starts_with("postgres:15"), "{postgres}");
    let probe = postgres["healthcheck"]["test"].to_string();
    assert!(probe.contains("pg_isready"), "{probe}");
    let data = mounts(postgres);
    let (volume, _, _) = data
        .iter()
        .find(|(_, target, _)| target == "/var/lib/postgresql/data")
        .unwrap_or_else(|| panic!("no volume for the database: {data:?}"));
    assert!(
        config["volumes"].get(volume).is_some(),
        "the database is on a named volume: {volume:?}"
    );
    assert_eq!(environment(postgres)["POSTGRES_PASSWORD"], example["POSTGRES_PASSWORD"]);

    let pitcrew = &services["pitcrew"];
    assert_eq!(pitcrew["command"], serde_json::json!(["serve"]));
    let env = environment(pitcrew);
    assert_eq!(env["PITCREW_SERVER_STORE"], "postgres");
    assert_eq!(
        env["PITCREW_SERVER_DATABASE_URL"],
        example["PITCREW_SERVER_DATABASE_URL"]
    );
    assert_eq!(env["PITCREW_GITHUB_APP_ID"], example["PITCREW_GITHUB_APP_ID"]);
    assert_eq!(env["PITCREW_SERVER_LISTEN"], "0.0.0.0:8080");
    // The App's key: a file secret, mounted read-only where the configuration looks for it.
    let secrets = pitcrew["secrets"].to_string();
    assert!(secrets.contains("github_app_key"), "{secrets}");
    assert_eq!(env["PITCREW_GITHUB_PRIVATE_KEY_PATH"], "/run/secrets/github_app_key");
    let key_file = string(&config["secrets"]["github_app_key"]["file"]);
    assert!(key_file.ends_with("/github-app.pem"), "{key_file}");
    let mounted = mounts(pitcrew);
    assert!(
        mounted
            .iter()
            .any(|(source, target, _)| source == "/var/run/docker.sock" && target == "/var/run/docker.sock"),
        "the Docker socket is mounted: {mounted:?}"
    );
    // Each replica's data directory is an anonymous volume: its own, and a volume the engine can
    // mount working copies from.
    let data_dir = &env["PITCREW_SERVER_DATA_DIR"];
    assert!(
        mounted
            .iter()
            .any(|(source, target, _)| source.is_empty() && target == data_dir),
        "{data_dir} is an anonymous volume: {mounted:?}"
    );
    // Replicas publish no port (a second one could not bind it); the proxy reaches them.
    assert!(pitcrew.get("ports").is_none(), "{pitcrew}");
    let probe = pitcrew["healthcheck"]["test"].to_string();
    assert!(
        probe.contains("/dev/tcp/127.0.0.1/8080") && probe.contains("/healthz"),
        "{probe}"
    );
    assert_eq!(pitcrew["depends_on"]["postgres"]["condition"], "service_healthy");
    assert_eq!(pitcrew["restart"], "unless-stopped");
    let stop = compose_duration(&string(&pitcrew["stop_grace_period"]));
    assert!(stop > SHUTDOWN_GRACE + CANCEL_GRACE, "{stop:?}");

    // The proxy publishes the one port GitHub delivers to, and reads the checked-in nginx.conf.
    let proxy = &services["proxy"];
    let ports = proxy["ports"].as_array().unwrap();
    assert_eq!(ports.len(), 1, "{ports:?}");
    let (published, target) = match &ports[0] {
        Value::String(short) => {
            let (published, target) = short.rsplit_once(':').unwrap();
            (published.to_owned(), target.to_owned())
        }
        long => (string(&long["published"]), string(&long["target"])),
    };
    assert_eq!(published, example["PROXY_PORT"]);
    assert_eq!(target, "80");
    let conf = mounts(proxy);
    assert!(
        conf.iter().any(
            |(source, target, read_only)| source.ends_with("/deploy/compose/nginx.conf")
                && target == "/etc/nginx/conf.d/default.conf"
                && *read_only
        ),
        "{conf:?}"
    );
}

/// nginx.conf without its comments.
fn nginx_directives() -> String {
    read(&compose_dir().join("nginx.conf"))
        .lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_proxy_resolves_the_pitcrew_service_again_and_passes_the_webhook_and_healthz() {
    let conf = nginx_directives();
    // The Compose file's own names: the service, the port its replicas listen on, the proxy's port.
    let compose: Value = serde_saphyr::from_str(&read(&compose_dir().join("docker-compose.yml"))).unwrap();
    let services = compose["services"].as_object().unwrap();
    assert!(services.contains_key("pitcrew"), "{services:?}");
    let listen = string(&compose["services"]["pitcrew"]["environment"]["PITCREW_SERVER_LISTEN"]);
    let port = listen.rsplit_once(':').unwrap().1;
    let upstream = format!("set $pitcrew http://pitcrew:{port};");
    assert!(conf.contains(&upstream), "nginx.conf lacks {upstream:?}:\n{conf}");
    // Docker's DNS, asked again: a literal name in proxy_pass would be resolved once, at start, and
    // never find a replica added by `--scale`.
    assert!(conf.contains("resolver 127.0.0.11 valid=10s"), "{conf}");
    assert!(
        !conf.contains("proxy_pass http://"),
        "proxy_pass must go through the variable:\n{conf}"
    );
    for path in ["/webhook", "/healthz"] {
        let block = format!("location = {path} {{\nproxy_pass $pitcrew;\n}}");
        assert!(conf.contains(&block), "nginx.conf lacks {block:?}:\n{conf}");
    }
    let published = compose["services"]["proxy"]["ports"][0].as_str().unwrap();
    let target = published.rsplit_once(':').unwrap().1;
    assert!(conf.contains(&format!("listen {target};")), "{conf}");
    // GitHub's deliveries go up to 25 MB: nginx's default of 1 MiB would refuse most pushes' events.
    assert!(conf.contains("client_max_body_size 25m;"), "{conf}");
}

/// A unit file's sections and their `Key=Value` lines, in order; panics on any other line.
fn unit_sections(text: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut sections: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            sections.push((name.to_owned(), Vec::new()));
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("line {}: not Key=Value: {line:?}", n + 1));
        assert!(!line.ends_with('\\'), "line {}: no continuation lines", n + 1);
        let (_, entries) = sections
            .last_mut()
            .unwrap_or_else(|| panic!("line {}: a key before any section", n + 1));
        entries.push((key.trim().to_owned(), value.trim().to_owned()));
    }
    sections
}

/// A systemd time span: "120", "120s", "2min", "2min 30s".
fn systemd_duration(text: &str) -> Duration {
    let mut seconds = 0;
    for word in text.split_whitespace() {
        let split = word.find(|c: char| !c.is_ascii_digit()).unwrap_or(word.len());
        let (n, unit) = word.split_at(split);
        let n: u64 = n.parse().unwrap_or_else(|_| panic!("time span {text:?}"));
        seconds += n * match unit {
            "" | "s" | "sec" => 1,
            "m" | "min" => 60,
            "h" => 3600,
            _ => panic!("time span {text:?}"),
        };
    }
    Duration::from_secs(seconds)
}

#[test]
#[expect(clippy::print_stderr, reason = "a check left out must say so")]
fn the_systemd_unit_runs_one_hardened_replica_that_stops_gracefully() {
    let path = repo_root().join("deploy/systemd/pitcrew.service");
    let unit = read(&path);
    let sections = unit_sections(&unit);
    let names: Vec<&str> = sections.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["Unit", "Service", "Install"]);
    let section = |name: &str| -> BTreeMap<String, Vec<String>> {
        let mut keys: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (key, value) in &sections.iter().find(|(n, _)| n == name).unwrap().1 {
            keys.entry(key.clone()).or_default().push(value.clone());
        }
        keys
    };
    let one = |keys: &BTreeMap<String, Vec<String>>, key: &str| -> String {
        match keys.get(key).map(Vec::as_slice) {
            Some([value]) => value.clone(),
            other => panic!("{key}: expected one value, got {other:?}"),
        }
    };
    let service = section("Service");
    for (key, expected) in [
        ("User", "pitcrew"),
        ("SupplementaryGroups", "docker"),
        ("EnvironmentFile", "/etc/pitcrew/pitcrew.env"),
        ("StateDirectory", "pitcrew"),
        ("Restart", "on-failure"),
        ("KillSignal", "SIGTERM"),
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("PrivateTmp", "yes"),
    ] {
        assert_eq!(one(&service, key), expected, "{key}");
    }
    let stop = systemd_duration(&one(&service, "TimeoutStopSec"));
    assert!(stop > SHUTDOWN_GRACE + CANCEL_GRACE, "{stop:?}");
    assert_eq!(one(&section("Install"), "WantedBy"), "multi-user.target");
    let requires = one(&section("Unit"), "Requires");
    assert!(requires.contains("docker.service"), "{requires}");

    // The command line is one the binary takes: `serve` and each flag, as `serve --help` lists them.
    let exec = one(&service, "ExecStart");
    let words: Vec<&str> = exec.split_whitespace().collect();
    assert_eq!(words[..2], ["/usr/local/bin/pitcrew", "serve"], "{exec}");
    assert!(exec.contains("--config /etc/pitcrew/pitcrew.toml"), "{exec}");
    let help = Command::new(env!("CARGO_BIN_EXE_pitcrew"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(help.status.success(), "{}", text(&help.stderr));
    let help = text(&help.stdout);
    for flag in words.iter().filter(|w| w.starts_with("--")) {
        assert!(
            help.contains(&format!("{flag} <")),
            "`pitcrew serve` has no {flag}:\n{help}"
        );
    }

    // systemd's own reading, with the binary under test in ExecStart (verify requires it to exist).
    let verify = Command::new("systemd-analyze").arg("--version").output();
    if !verify.is_ok_and(|out| out.status.success()) {
        eprintln!("NOT CHECKED: systemd-analyze verify (systemd-analyze is not installed)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("pitcrew.service");
    std::fs::write(
        &copy,
        unit.replace(
            "/usr/local/bin/pitcrew ",
            &format!("{} ", env!("CARGO_BIN_EXE_pitcrew")),
        ),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&copy)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "systemd-analyze verify failed:\n{stderr}");
    // verify warns about unknown keys and bad values without failing: none may concern this unit.
    let about_unit: Vec<&str> = stderr.lines().filter(|l| l.contains("pitcrew.service")).collect();
    assert!(
        about_unit.is_empty(),
        "systemd-analyze verify:\n{}",
        about_unit.join("\n")
    );
}
