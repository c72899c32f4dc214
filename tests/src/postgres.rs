//! A throwaway PostgreSQL server per test, from Debian's packages (`postgresql-15`): a cluster copied
//! from a template made once per machine by `initdb`, started on a free loopback port, stopped and
//! deleted when the handle drops. A loud skip when the server's programs are missing, a failure when
//! `PITCREW_REQUIRE_POSTGRES=1` (CI sets it).
//!
//! `initdb` and `postgres` refuse to run as root: run as root, the tests run them as the `postgres`
//! user the Debian package creates.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The database every test server has (made by `initdb`); the stores under test use it.
pub const DATABASE: &str = "postgres";
/// The superuser the template cluster is made with (trust authentication on loopback only).
pub const USER: &str = "pitcrew";

/// What a test server is started with: nothing waits for the disk (a crash may lose or corrupt
/// the cluster, which a test throws away anyway).
const FAST: &str = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=16MB";

/// A benchmark's server: every commit durable, as in production (PostgreSQL's own defaults, said
/// explicitly).
const DURABLE: &str = "-c fsync=on -c synchronous_commit=on -c full_page_writes=on -c shared_buffers=128MB";

/// A running test server; dropping it stops the server and deletes its files.
pub struct Postgres {
    bin: PathBuf,
    /// Holds the cluster (`data`), its log and its socket directory.
    dir: tempfile::TempDir,
    port: u16,
    run_as: Option<&'static str>,
    stopped: bool,
    /// The certificate authority that signed the server's certificate, when it speaks TLS.
    ca: Option<PathBuf>,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres").field("port", &self.port).finish()
    }
}

impl Postgres {
    /// Starts a fresh server with an empty [`DATABASE`]; `None` (said on stderr) when PostgreSQL is
    /// not installed and not required. Fast and crash-unsafe: no commit waits for the disk.
    pub fn start() -> Option<Postgres> {
        Postgres::start_with(FAST, false)
    }

    /// Like [`Postgres::start`], but durable as a production server is (PostgreSQL's defaults:
    /// `fsync`, `synchronous_commit` and `full_page_writes` on, 128 MB of shared buffers), so a
    /// commit returns once its WAL is on the disk. For benchmarks; tests want [`Postgres::start`].
    pub fn start_durable() -> Option<Postgres> {
        Postgres::start_with(DURABLE, false)
    }

    /// [`Postgres::start`], the server also speaking TLS with a certificate for `127.0.0.1` signed
    /// by a certificate authority of its own ([`Postgres::ca_file`]); plain connections still work.
    pub fn start_with_tls() -> Option<Postgres> {
        Postgres::start_with(FAST, true)
    }

    #[expect(clippy::print_stderr, reason = "a skipped test must say so")]
    fn start_with(settings: &str, tls: bool) -> Option<Postgres> {
        let required = std::env::var_os("PITCREW_REQUIRE_POSTGRES").is_some_and(|v| v == "1");
        match Postgres::try_start(settings, tls) {
            Ok(postgres) => Some(postgres),
            Err(why) => {
                assert!(!required, "PITCREW_REQUIRE_POSTGRES=1, but {why}");
                eprintln!("SKIPPED: this test needs PostgreSQL: {why}");
                None
            }
        }
    }

    fn try_start(settings: &str, tls: bool) -> Result<Postgres, String> {
        let bin = server_bin().ok_or("PostgreSQL's server is not installed (apt-get install postgresql-15)")?;
        let run_as = if running_as_root() { Some("postgres") } else { None };
        let template = template(&bin, run_as)?;
        let dir = tempfile::Builder::new()
            .prefix("pitcrew-postgres-")
            .tempdir()
            .map_err(|e| format!("temporary directory: {e}"))?;
        if let Some(user) = run_as {
            run(Command::new("chown").arg(user).arg(dir.path()))?;
        }
        let data = dir.path().join("data");
        run(as_user(run_as, "cp").arg("-a").arg(&template).arg(&data))?;
        let ca = if tls {
            Some(make_certificates(dir.path(), &data, run_as)?)
        } else {
            None
        };
        let mut last = String::new();
        // A port found free can be taken before the server binds it: another one then.
        for _ in 0..5 {
            let port = free_port()?;
            let mut options = format!(
                "-p {port} -c listen_addresses=127.0.0.1 -k {} {settings} -c max_connections=300",
                dir.path().display()
            );
            if tls {
                options.push_str(" -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key");
            }
            let started = as_user(run_as, &bin.join("pg_ctl").to_string_lossy())
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(dir.path().join("log"))
                .arg("-o")
                .arg(&options)
                .args(["-w", "-t", "60", "start"])
                .output()
                .map_err(|e| format!("pg_ctl: {e}"))?;
            if started.status.success() {
                return Ok(Postgres {
                    bin,
                    dir,
                    port,
                    run_as,
                    stopped: false,
                    ca,
                });
            }
            last = format!(
                "pg_ctl start failed: {}{}\n{}",
                String::from_utf8_lossy(&started.stdout),
                String::from_utf8_lossy(&started.stderr),
                std::fs::read_to_string(dir.path().join("log")).unwrap_or_default()
            );
        }
        Err(last)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of [`DATABASE`] as the superuser.
    pub fn url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{DATABASE}", self.port)
    }

    /// The certificate authority of a server started with [`Postgres::start_with_tls`].
    pub fn ca_file(&self) -> Option<&Path> {
        self.ca.as_deref()
    }

    /// Runs SQL with `psql` (a test's set-up or inspection); its standard output, unaligned.
    pub fn psql(&self, sql: &str) -> Result<String, String> {
        let output = Command::new(self.bin.join("psql"))
            .args([
                "-X",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
                "-U",
                USER,
                "-d",
                DATABASE,
            ])
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-c")
            .arg(sql)
            .output()
            .map_err(|e| format!("psql: {e}"))?;
        checked(output, "psql").map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// Stops the server at once (as a crash would); dropping the handle afterwards deletes its files.
    pub fn stop(&mut self) {
        if !self.stopped {
            self.stopped = true;
            let _ = as_user(self.run_as, &self.bin.join("pg_ctl").to_string_lossy())
                .arg("-D")
                .arg(self.dir.path().join("data"))
                .args(["-m", "immediate", "-w", "stop"])
                .output();
        }
    }

    /// The server's log so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A certificate authority (returned: its certificate, outside the cluster) and the server's key
/// and certificate for `127.0.0.1` signed by it, in the cluster's directory `data` (the key readable
/// by the server's user alone, as PostgreSQL demands).
fn make_certificates(dir: &Path, data: &Path, run_as: Option<&str>) -> Result<PathBuf, String> {
    let openssl = |args: &[&str]| run(Command::new("openssl").args(args).current_dir(dir));
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=pitcrew test CA",
    ])?;
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ])?;
    std::fs::write(dir.join("server.ext"), "subjectAltName=IP:127.0.0.1\n").map_err(|e| format!("server.ext: {e}"))?;
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ])?;
    for file in ["server.crt", "server.key"] {
        std::fs::copy(dir.join(file), data.join(file)).map_err(|e| format!("{file}: {e}"))?;
        if let Some(user) = run_as {
            run(Command::new("chown").arg(user).arg(data.join(file)))?;
        }
        run(Command::new("chmod").arg("0600").arg(data.join(file)))?;
    }
    Ok(dir.join("ca.crt"))
}

/// The newest installed server's program directory (`/usr/lib/postgresql/<version>/bin`), or
/// `PITCREW_POSTGRES_BIN`.
fn server_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PITCREW_POSTGRES_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("initdb").exists() && bin.join("postgres").exists()).then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

fn as_user(user: Option<&str>, program: &str) -> Command {
    match user {
        Some(user) => {
            let mut command = Command::new("runuser");
            command.args(["-u", user, "--", program]);
            command
        }
        None => Command::new(program),
    }
}

fn run(command: &mut Command) -> Result<Output, String> {
    let name = format!("{:?}", command.get_program());
    let output = command.output().map_err(|e| format!("{name}: {e}"))?;
    checked(output, &name)
}

fn checked(output: Output, name: &str) -> Result<Output, String> {
    if output.status.success() {
        Ok(output)
    } else {
        Err(format!(
            "{name} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("free port: {e}"))?;
    listener
        .local_addr()
        .map(|address| address.port())
        .map_err(|e| format!("free port: {e}"))
}

/// The template cluster, made once per machine.
fn template(bin: &Path, run_as: Option<&str>) -> Result<PathBuf, String> {
    let version = bin
        .parent()
        .and_then(Path::file_name)
        .map_or_else(|| "pg".to_owned(), |v| v.to_string_lossy().into_owned());
    let root = std::env::temp_dir().join(format!("pitcrew-postgres-template-{version}"));
    let ready = root.join("data");
    if ready.join("PG_VERSION").exists() {
        return Ok(ready);
    }
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    // Tests that start together may each make one: the first rename wins, the others' copies go.
    let building = root.join(format!("building-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&building);
    std::fs::create_dir_all(&building).map_err(|e| format!("{}: {e}", building.display()))?;
    if let Some(user) = run_as {
        run(Command::new("chown").arg(user).arg(&root).arg(&building))?;
    }
    run(as_user(run_as, &bin.join("initdb").to_string_lossy())
        .arg("-D")
        .arg(&building)
        .args([
            "--auth=trust",
            "--username",
            USER,
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        ]))?;
    if std::fs::rename(&building, &ready).is_err() && ready.join("PG_VERSION").exists() {
        let _ = std::fs::remove_dir_all(&building);
    }
    if ready.join("PG_VERSION").exists() {
        Ok(ready)
    } else {
        Err(format!("the template cluster {} could not be made", ready.display()))
    }
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn a_server_starts_answers_and_is_gone_after_drop() {
        let Some(postgres) = Postgres::start() else {
            return;
        };
        assert_eq!(postgres.psql("SELECT 40 + 2").unwrap(), "42");
        let dir = postgres.dir.path().to_path_buf();
        let port = postgres.port();
        drop(postgres);
        assert!(!dir.exists());
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    }
}
