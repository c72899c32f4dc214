//! `pitcrew serve` as a process of its own, for tests that kill, freeze or restart it: started on a
//! free loopback port, ready once it says it listens, its log kept whole and waited on line by line.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;

/// How long a start may take (a cold binary, a database to migrate).
const START: Duration = Duration::from_secs(60);

/// A running `pitcrew serve`; killed when dropped.
pub struct ServeProcess {
    child: tokio::process::Child,
    url: String,
    log: Arc<Mutex<String>>,
    /// Counts the log's lines, so that waiting on the log waits on an event.
    lines: watch::Receiver<usize>,
}

impl std::fmt::Debug for ServeProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeProcess").field("url", &self.url).finish()
    }
}

impl ServeProcess {
    /// Starts `BINARY SETTINGS serve --listen 127.0.0.1:PORT` in `dir` (`SETTINGS` being `--set`
    /// flags) with a clean environment (`PATH`, `HOME`, `DOCKER_HOST` and `env` only); returns once
    /// it says it listens.
    ///
    /// # Panics
    /// When it cannot be started or does not say it listens within a minute.
    pub async fn start(binary: &Path, dir: &Path, settings: &[String], env: &[(&str, &str)]) -> ServeProcess {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .unwrap_or_else(|error| panic!("no free port: {error}"));
        let listen = format!("127.0.0.1:{port}");
        let mut command = tokio::process::Command::new(binary);
        command
            .args(settings)
            .args(["serve", "--listen", &listen])
            .current_dir(dir)
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        for name in ["PATH", "HOME", "DOCKER_HOST"] {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command.envs(env.iter().copied());
        let mut child = command
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", binary.display()));
        let stderr = child
            .stderr
            .take()
            .unwrap_or_else(|| panic!("the server's standard error is not piped"));
        let log = Arc::new(Mutex::new(String::new()));
        let (count, lines) = watch::channel(0usize);
        let kept = Arc::clone(&log);
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                {
                    let mut log = kept.lock().unwrap_or_else(PoisonError::into_inner);
                    log.push_str(&line);
                    log.push('\n');
                }
                count.send_modify(|n| *n += 1);
            }
        });
        let server = ServeProcess {
            child,
            url: format!("http://{listen}"),
            log,
            lines,
        };
        if !server.wait_for_log("pitcrew serve is listening", START).await {
            panic!("pitcrew serve did not start:\n{}", server.log());
        }
        server
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Everything it logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Waits until a line holding `needle` was logged (or was before); `false` after `timeout`.
    pub async fn wait_for_log(&self, needle: &str, timeout: Duration) -> bool {
        let mut lines = self.lines.clone();
        let found = async {
            loop {
                if self.log().contains(needle) {
                    return true;
                }
                if lines.changed().await.is_err() {
                    // The process closed its standard error: nothing more will come.
                    return self.log().contains(needle);
                }
            }
        };
        tokio::time::timeout(timeout, found).await.unwrap_or(false)
    }

    /// The process id, for signals.
    ///
    /// # Panics
    /// When the process has already been waited for.
    pub fn pid(&self) -> i32 {
        self.child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .unwrap_or_else(|| panic!("the server was already reaped"))
    }

    /// Sends `signal` (`"KILL"`, `"STOP"`, `"CONT"`, `"TERM"`).
    ///
    /// # Panics
    /// When `kill` fails.
    pub fn signal(&self, signal: &str) {
        let status = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap_or_else(|error| panic!("kill: {error}"));
        assert!(status.success(), "kill -{signal} failed");
    }

    /// SIGKILL, and waits for the process to be gone.
    pub async fn kill(&mut self) {
        self.signal("KILL");
        let _ = self.child.wait().await;
    }

    /// SIGTERM (a graceful stop), and waits for the exit; its status.
    pub async fn stop(mut self) -> std::process::ExitStatus {
        self.signal("TERM");
        self.child
            .wait()
            .await
            .unwrap_or_else(|error| panic!("waiting for pitcrew serve: {error}"))
    }
}
